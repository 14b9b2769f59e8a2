//! The crash campaign for the embedded API: power cuts during random statements on a table
//! with a secondary and a unique index, then `Database::open`.
//!
//! Every file sits on a [`CrashSim`] passed in as [`IoBackend::Custom`]. Each seed:
//!
//! 1. create the database and the table (durable before the simulator is armed) and load a
//!    few rows;
//! 2. arm the simulator to die after a random number of writes/syncs, then run random
//!    inserts, updates and deletes (`flush_log_at_trx_commit = 1`, a 24-frame pool, a page
//!    cleaner, doublewrite on) until the first error;
//! 3. cut the power (the seed decides which unsynced writes survive, whole or torn);
//! 4. open (doublewrite repair, redo, secondary-index repair) and require: the table holds
//!    exactly the rows after every acknowledged statement, or after those plus the one in
//!    flight (each statement all or nothing), and `check()` passes (every B-tree valid,
//!    every secondary index equal to what its rows call for).
//!
//! Every fourth seed first runs a `CREATE TABLE` under the armed simulator (every eighth
//! dies within its first few IOs, so inside it): once
//! acknowledged it must be there after the crash; unacknowledged, it may be there (whole and
//! empty) or not at all, and `check()` must pass either way.
//!
//! The same campaign runs with both tables **compressed** (4 KiB pages; `t` in 1 KiB zlib
//! blocks, `t2` in 2 KiB LZ4 blocks, so its shared tablespace file is created under the armed
//! simulator): compression failures split pages while the power is cut, torn blocks are
//! repaired from the doublewrite buffer, and the guarantees are the same.
//!
//! A third campaign cuts the power under **multi-statement transactions** (1 to 6 statements
//! each, a quarter rolled back): after recovery the table is exactly the committed
//! transactions (the one committing may or may not have made it), whatever was in flight is
//! rolled back at open, and `check()` passes.
//!
//! `MINNOW_CRASH_SEEDS=N` runs N seeds (default 200; a quarter of that, at least 10, for the
//! compressed campaign; 60 for the transactions' campaign), `MINNOW_CRASH_SEED_START=S`
//! starts at S.

mod common;

use std::sync::Arc;

use common::{Model, Op, Rng, all_rows, model_rows, seeds, table_def};
use minnow::backend::{Backend, CrashSim, SyncBackend};
use minnow::{
    ColumnDef, ColumnType, Compression, Config, Database, IndexDef, KeyBlockSize, TableDef,
    ZipAlgorithm,
};

fn second_table() -> TableDef {
    TableDef::new("t2")
        .column(ColumnDef::new("k", ColumnType::Var(16)))
        .column(ColumnDef::nullable("v", ColumnType::I64))
        .primary_key(&["k"])
        .index(IndexDef::unique("by_v", &["v"]))
}

fn config(backend: Arc<dyn Backend>) -> Config {
    Config {
        buffer_pool_size: 24 * 4096,
        log_file_size: 256 << 10,
        ..common::crash_config(backend)
    }
}

struct Outcome {
    acked: usize,
    inflight: bool,
    repairs: u64,
    groups: u64,
    created: Option<bool>,
}

/// The two tables' compression in the compressed campaign.
fn zip() -> (Compression, Compression) {
    (
        Compression::new(KeyBlockSize::K1, ZipAlgorithm::default()),
        Compression::lz4(KeyBlockSize::K2),
    )
}

fn run_seed(seed: u64, compressed: bool) -> Outcome {
    let (main_def, second_def) = if compressed {
        let (a, b) = zip();
        (table_def().compressed(a), second_table().compressed(b))
    } else {
        (table_def(), second_table())
    };
    let dir = tempfile::tempdir().unwrap();
    let sim = Arc::new(CrashSim::new(Arc::new(SyncBackend::new())));
    let backend: Arc<dyn Backend> = sim.clone();
    let mut rng = Rng(seed ^ 0x5EED_0000);
    let mut acked = Model::new();
    let mut inflight: Option<Model> = None;
    let mut n_acked = 0;
    let mut t2 = None;
    {
        let db = Database::create(dir.path(), config(Arc::clone(&backend))).unwrap();
        let t = db.create_table(main_def).unwrap();
        for _ in 0..40 {
            let op = Op::random(&mut rng, &acked, 300);
            op.run(&t).unwrap();
            op.apply(&mut acked);
        }
        // Every eighth seed dies within the first few IOs, i.e. inside the CREATE TABLE.
        let ops = if seed.is_multiple_of(8) {
            1 + rng.below(4)
        } else {
            1 + rng.below(400)
        };
        sim.arm(ops);
        // Every fourth seed starts with a CREATE TABLE under the armed simulator.
        if seed.is_multiple_of(4) {
            t2 = Some(db.create_table(second_def).is_ok());
            if t2 == Some(false) {
                inflight = Some(acked.clone());
            }
        }
        for _ in 0..if t2 == Some(false) { 0 } else { 400 } {
            let op = Op::random(&mut rng, &acked, 300);
            let mut after = acked.clone();
            op.apply(&mut after);
            if op.run(&t).is_err() {
                inflight = Some(after);
                break;
            }
            acked = after;
            n_acked += 1;
        }
        assert!(
            sim.is_dead() || inflight.is_none(),
            "seed {seed}: a statement failed without a crash"
        );
    }
    let report = sim.power_cut(seed).unwrap();
    let db = Database::open(dir.path(), config(backend))
        .unwrap_or_else(|e| panic!("seed {seed}: open after the crash failed: {e}\n{report}"));
    match (t2, db.table("t2")) {
        (Some(true), Ok(t)) => assert!(all_rows(&t).is_empty()),
        (Some(true), Err(e)) => panic!("seed {seed}: acknowledged CREATE TABLE lost: {e}"),
        (None, Ok(_)) => panic!("seed {seed}: a table nobody created"),
        _ => {}
    }
    let t = db.table("t").unwrap();
    let rows = all_rows(&t);
    let inflight_kept = if rows == model_rows(&acked) {
        false
    } else if inflight.as_ref().is_some_and(|m| rows == model_rows(m)) {
        true
    } else {
        panic!(
            "seed {seed}: recovered rows match neither {n_acked} acknowledged statements nor \
             those plus the one in flight ({} rows, model {})\n{report}",
            rows.len(),
            acked.len()
        );
    };
    db.check()
        .unwrap_or_else(|e| panic!("seed {seed}: check after recovery: {e}\n{report}"));
    let open = db.open_report().clone();
    db.close().unwrap();
    Outcome {
        acked: n_acked,
        inflight: inflight_kept,
        repairs: open.undo_records_applied,
        groups: open.redo_groups,
        created: t2,
    }
}

#[test]
fn crash_campaign_statements_are_atomic_and_durable() {
    let (mut n, mut acked, mut inflight, mut repairs, mut replayed) = (0, 0, 0, 0, 0);
    let (mut created, mut cut_creates) = (0, 0);
    for seed in seeds(200) {
        let o = run_seed(seed, false);
        n += 1;
        acked += o.acked;
        inflight += usize::from(o.inflight);
        repairs += o.repairs;
        replayed += usize::from(o.groups > 0);
        created += usize::from(o.created == Some(true));
        cut_creates += usize::from(o.created == Some(false));
    }
    eprintln!(
        "{n} seeds verified: {acked} acknowledged statements checked, {inflight} kept their \
         in-flight statement, {replayed} replayed redo, {repairs} undo records rolled back, \
         {created} CREATE TABLE acknowledged and {cut_creates} cut by the crash"
    );
    assert!(
        n == 0 || replayed > 0,
        "no seed needed redo: the campaign is too gentle"
    );
}

#[test]
fn compressed_crash_campaign_statements_are_atomic_and_durable() {
    let n = (seeds(200).count() as u64 / 4).max(10);
    let start = seeds(200).start;
    let (mut verified, mut acked, mut replayed, mut cut_creates) = (0, 0, 0, 0);
    for seed in start..start + n {
        let o = run_seed(seed, true);
        verified += 1;
        acked += o.acked;
        replayed += usize::from(o.groups > 0);
        cut_creates += usize::from(o.created == Some(false));
    }
    eprintln!(
        "compressed tables: {verified} seeds verified, {acked} acknowledged statements checked, \
         {replayed} replayed redo, {cut_creates} CREATE TABLE (with a new compressed file) cut"
    );
    assert!(
        replayed > 0,
        "no seed needed redo: the campaign is too gentle"
    );
}

// ---- Multi-statement transactions in flight ----

/// One seed: transactions of 1..=6 statements, some rolled back, under an armed simulator;
/// after the power cut the table is exactly the committed state (the last commit in flight
/// may or may not have made it), and `check()` passes.
///
/// The background purge thread runs (the default), so it too meets the power cuts.
fn run_transaction_seed(seed: u64) -> (usize, u64) {
    let dir = tempfile::tempdir().unwrap();
    let sim = Arc::new(CrashSim::new(Arc::new(SyncBackend::new())));
    let report;
    let backend: Arc<dyn Backend> = sim.clone();
    let mut rng = Rng(seed ^ 0x7A11_0000);
    let mut committed = Model::new();
    let mut in_commit: Option<Model> = None;
    let mut n = 0;
    {
        let db = Database::create(dir.path(), common::crash_config(Arc::clone(&backend))).unwrap();
        let t = db.create_table(table_def()).unwrap();
        for _ in 0..30 {
            let op = Op::random(&mut rng, &committed, 200);
            op.run(&t).unwrap();
            op.apply(&mut committed);
        }
        sim.arm(1 + rng.below(600));
        'outer: for _ in 0..300 {
            let mut tx = db.begin().unwrap();
            let mut mine = committed.clone();
            for _ in 0..1 + rng.below(6) {
                let op = Op::random(&mut rng, &mine, 200);
                if op.run_in(&mut tx, &t).is_err() {
                    std::mem::forget(tx); // the power is going: no rollback either
                    break 'outer;
                }
                op.apply(&mut mine);
            }
            if rng.below(4) == 0 {
                if tx.rollback().is_err() {
                    break;
                }
                continue;
            }
            match tx.commit() {
                Ok(_) => {
                    committed = mine;
                    n += 1;
                }
                Err(_) => {
                    in_commit = Some(mine);
                    break;
                }
            }
        }
        assert!(
            sim.is_dead() || in_commit.is_none(),
            "seed {seed}: a failure without a crash"
        );
        // The power goes with the database still open; what closing it tries to write then
        // fails (the device is gone), and close lets the directory's LOCK go (for every
        // handle: the forgotten transaction's clone of the database too).
        report = sim.power_cut(seed).unwrap();
        let _ = db.close();
    }
    let db = Database::open(dir.path(), common::crash_config(backend))
        .unwrap_or_else(|e| panic!("seed {seed}: open after the crash failed: {e}\n{report}"));
    let t = db.table("t").unwrap();
    let rows = all_rows(&t);
    if rows != model_rows(&committed) && !in_commit.as_ref().is_some_and(|m| rows == model_rows(m))
    {
        panic!(
            "seed {seed}: recovered {} rows match neither the {n} committed transactions nor \
             those plus the one committing\n{report}",
            rows.len()
        );
    }
    db.check()
        .unwrap_or_else(|e| panic!("seed {seed}: check after recovery: {e}\n{report}"));
    let undone = db.open_report().undo_records_applied;
    db.close().unwrap();
    (n, undone)
}

#[test]
fn crash_campaign_uncommitted_transactions_leave_no_trace() {
    let (mut seeds_run, mut commits, mut undone) = (0, 0, 0);
    for seed in seeds(60) {
        let (n, u) = run_transaction_seed(seed);
        seeds_run += 1;
        commits += n;
        undone += u;
    }
    eprintln!(
        "{seeds_run} seeds, {commits} committed transactions, {undone} undo records rolled back at open"
    );
    assert!(undone > 0, "no seed cut a transaction in flight");
}
