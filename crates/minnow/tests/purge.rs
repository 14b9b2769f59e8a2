//! Purge: delete-marked records, old secondary entries and undo are removed once no read view
//! needs them, never before; undo pages are reused so a steady workload keeps the file's size
//! bounded; a power cut during purge leaves a database that opens, checks and purges again.
//!
//! `MINNOW_CRASH_SEEDS=N` runs N crash seeds (default 12), `MINNOW_CRASH_SEED_START=S` starts
//! at S.

mod common;

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Model, Op, Rng, all_rows, model_rows, seeds, table_def};
use minnow::PageSize;
use minnow::backend::{Backend, CrashSim, SyncBackend};
use minnow::inspect::Internals;
use minnow::{
    ColumnDef, ColumnType, Config, Database, Error, IndexDef, Scan, TableDef, Transaction, Value,
};

fn config(purge_threads: usize) -> Config {
    Config {
        page_size: PageSize::K4,
        buffer_pool_size: 256 * 4096,
        purge_threads,
        buffer_pool_dump_at_shutdown: false,
        // Commits need not be durable here: no crash in these tests.
        flush_log_at_trx_commit: minnow::FlushAtCommit::Lazy,
        ..Config::default()
    }
}

/// `p(id U64 PK, city Var(16), n I64)` with `by_city(city)`.
fn people(db: &Database) -> minnow::Table {
    db.create_table(
        TableDef::new("p")
            .column(ColumnDef::new("id", ColumnType::U64))
            .column(ColumnDef::new("city", ColumnType::Var(16)))
            .column(ColumnDef::new("n", ColumnType::I64))
            .primary_key(&["id"])
            .index(IndexDef::new("by_city", &["city"])),
    )
    .unwrap()
}

fn person(id: u64, city: &str, n: i64) -> Vec<Value> {
    vec![Value::UInt(id), Value::text(city), Value::Int(n)]
}

fn city(id: u64, round: u64) -> String {
    format!("c{}", (id + round) % 7)
}

type Rows = BTreeMap<u64, Vec<Value>>;

/// Everything `tx` sees, by primary key and through `by_city` (fetching each row).
fn seen(tx: &mut Transaction, t: &minnow::Table) -> (Rows, Rows) {
    let pk = tx
        .scan(t, Scan::all())
        .unwrap()
        .map(|r| {
            let r = r.unwrap();
            (id_of(&r), r)
        })
        .collect();
    let sec = tx
        .scan_index(t, "by_city", Scan::all())
        .unwrap()
        .map(|r| {
            let r = r.unwrap();
            (id_of(&r), r)
        })
        .collect();
    (pk, sec)
}

fn id_of(r: &[Value]) -> u64 {
    match r.first() {
        Some(Value::UInt(id)) => *id,
        other => panic!("id {other:?}"),
    }
}

/// A reader with an old snapshot keeps reading it (by primary key and through the secondary
/// index) while purge runs; purge removes only what is older; when the reader is gone,
/// purge empties the history list and no delete-marked record or entry is left.
#[test]
fn purge_waits_for_the_oldest_view_then_removes_everything() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config(0)).unwrap();
    let t = people(&db);
    for id in 0..600u64 {
        t.insert(&person(id, &city(id, 0), 0)).unwrap();
    }
    // Some history the reader does not need: deletes committed before its view.
    for id in (0..600u64).step_by(10) {
        t.delete(&[Value::UInt(id)]).unwrap();
    }
    let before_view = db.status().unwrap().transactions.history_len;
    assert_eq!(before_view, 60);

    let mut reader = db.begin().unwrap();
    let (old_pk, old_sec) = seen(&mut reader, &t);
    assert_eq!(old_pk.len(), 540);
    assert_eq!(old_sec, old_pk);

    // After the view: updates that move rows between cities, and deletes.
    for id in (1..600u64).filter(|i| i % 10 != 0) {
        if id % 3 == 0 {
            t.delete(&[Value::UInt(id)]).unwrap();
        } else {
            t.update(&person(id, &city(id, 1), 1)).unwrap();
        }
    }
    let history = db.status().unwrap().transactions.history_len;
    assert_eq!(history, 60 + 540);

    let r = db.purge().unwrap();
    // Only the logs committed before the reader's view.
    assert_eq!(r.logs, 60, "{r:?}");
    assert_eq!(r.clustered_removed, 60, "{r:?}");
    assert_eq!(r.history_len, 540);
    let st = db.status().unwrap().transactions;
    assert_eq!(st.open_views, 1);
    assert!(st.oldest_view_age >= 540, "{st:?}");
    // The reader still sees its snapshot, through both indexes.
    let (pk, sec) = seen(&mut reader, &t);
    assert_eq!(pk, old_pk);
    assert_eq!(sec, old_pk);
    let gets = (0..600u64)
        .filter(|&id| reader.get(&t, &[Value::UInt(id)]).unwrap().is_some())
        .count();
    assert_eq!(gets, 540);
    assert_eq!(
        db.purge().unwrap().logs,
        0,
        "the reader still needs the rest"
    );
    db.check().unwrap();

    drop(reader);
    let r = db.purge().unwrap();
    assert_eq!(r.logs, 540, "{r:?}");
    assert_eq!(r.history_len, 0);
    // 180 deletes after the view; every update moved a row's entry to another city.
    assert_eq!(r.clustered_removed, 180, "{r:?}");
    assert!(r.secondary_removed >= 540, "{r:?}");
    let report = db.check().unwrap();
    assert_eq!(report.delete_marked, 0, "{report:?}");
    assert_eq!(report.history_len, 0);
    assert_eq!(report.rows["p"], 360);
    let st = db.status().unwrap().transactions;
    assert_eq!(st.history_len, 0);
    assert_eq!(st.purge_logs, 600);
    assert!(st.undo_pages_freed > 0, "{st:?}");
    // What is left is what a fresh reader sees, by both indexes.
    let mut now = db.begin().unwrap();
    let (pk, sec) = seen(&mut now, &t);
    assert_eq!(pk.len(), 360);
    assert_eq!(sec, pk);
    drop(now);
    drop(t);
    db.close().unwrap();
    let db = Database::open(dir.path(), config(0)).unwrap();
    assert_eq!(db.check().unwrap().rows["p"], 360);
}

/// A secondary entry that an old version still has is kept, even when the update that
/// delete-marked it is purged, until the version's last reader is gone.
#[test]
fn an_entry_an_old_version_has_is_kept_for_its_reader() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config(0)).unwrap();
    let t = people(&db);
    t.insert(&person(1, "oslo", 0)).unwrap();
    t.update(&person(1, "bern", 1)).unwrap(); // oslo delete-marked
    let mut reader = db.begin().unwrap(); // sees bern
    assert_eq!(seen(&mut reader, &t).1[&1], person(1, "bern", 1));
    t.update(&person(1, "oslo", 2)).unwrap(); // oslo un-marked, bern marked
    t.update(&person(1, "rome", 3)).unwrap(); // oslo marked again
    // Only the first update's log is purgeable. Its old entry oslo is delete-marked, but the
    // version the third transaction wrote has it and the reader's view cannot see past that
    // writer, so it is kept; bern, delete-marked too, is what the reader reads.
    let r = db.purge().unwrap();
    assert_eq!(r.logs, 1);
    let bern = Bound::Included(vec![Value::text("bern")]);
    let by_bern: Vec<_> = reader
        .scan_index(&t, "by_city", Scan::range(bern.clone(), bern.clone()))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(by_bern, [person(1, "bern", 1)]);
    drop(reader);
    let r = db.purge().unwrap();
    assert_eq!(r.logs, 2);
    let report = db.check().unwrap();
    assert_eq!(report.delete_marked, 0);
    let rome = Bound::Included(vec![Value::text("rome")]);
    let now: Vec<_> = t
        .scan_index("by_city", Scan::range(rome.clone(), rome))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(now, [person(1, "rome", 3)]);
    assert!(
        t.scan_index("by_city", Scan::range(bern.clone(), bern))
            .unwrap()
            .next()
            .is_none()
    );
}

/// Rows deleted and re-inserted under the same key before purge: purge leaves the new row.
#[test]
fn purge_never_removes_a_reinserted_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config(0)).unwrap();
    let t = people(&db);
    for id in 0..50u64 {
        t.insert(&person(id, "a", 0)).unwrap();
    }
    for id in 0..50u64 {
        t.delete(&[Value::UInt(id)]).unwrap();
        if id % 2 == 0 {
            t.insert(&person(id, if id % 4 == 0 { "a" } else { "b" }, 1))
                .unwrap();
        }
    }
    db.purge().unwrap();
    let report = db.check().unwrap();
    assert_eq!(report.rows["p"], 25);
    assert_eq!(report.delete_marked, 0);
    for id in (0..50u64).step_by(2) {
        let want = person(id, if id % 4 == 0 { "a" } else { "b" }, 1);
        assert_eq!(t.get(&[Value::UInt(id)]).unwrap(), Some(want));
    }
}

fn file_len(dir: &std::path::Path) -> u64 {
    std::fs::metadata(dir.join(minnow::inspect::SYSTEM_TABLESPACE))
        .unwrap()
        .len()
}

/// Updating the same 1,000 rows again and again with purge running keeps the data file's
/// size bounded: undo pages freed by purge are reused by the next rounds.
#[test]
fn undo_space_is_reused_and_the_file_stops_growing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config(0)).unwrap();
    let t = people(&db);
    for id in 0..1000u64 {
        t.insert(&person(id, &city(id, 0), 0)).unwrap();
    }
    let mut sizes = Vec::new();
    let mut undo = Vec::new();
    for round in 1..=16u64 {
        for id in 0..1000u64 {
            t.update(&person(id, &city(id, round), round as i64))
                .unwrap();
        }
        db.purge().unwrap();
        db.buffer_pool().unwrap().flush_all().unwrap();
        sizes.push(file_len(dir.path()));
        undo.push(db.status().unwrap().transactions.undo_pages);
    }
    let st = db.status().unwrap().transactions;
    assert_eq!(st.history_len, 0);
    assert!(st.undo_pages_freed > 100, "{st:?}");
    // After 8 rounds and after 16: the same file (each rollback segment's undo stream is
    // its last page, where appends go, and a few more at most, again after each purge).
    assert_eq!(sizes[7], sizes[15], "file sizes by round: {sizes:?}");
    let floor = config(0).rollback_segments as u64;
    assert!(undo[15] <= floor + 4, "undo pages by round: {undo:?}");
    let report = db.check().unwrap();
    assert_eq!(report.delete_marked, 0);
    assert_eq!(report.rows["p"], 1000);
}

/// With `purge_threads = 1` nothing needs to call purge: the background thread empties the
/// history, and a reader running beside it keeps its snapshot.
#[test]
fn the_background_thread_purges_while_a_reader_reads() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config(1)).unwrap();
    assert!(db.status().unwrap().transactions.purge_running);
    let t = people(&db);
    for id in 0..300u64 {
        t.insert(&person(id, &city(id, 0), 0)).unwrap();
    }
    let mut reader = db.begin().unwrap();
    let (old, _) = seen(&mut reader, &t);
    std::thread::scope(|s| {
        s.spawn(|| {
            for round in 1..=5u64 {
                for id in 0..300u64 {
                    if (id + round) % 5 == 0 {
                        let _ = t.delete(&[Value::UInt(id)]).unwrap();
                    } else if t.get(&[Value::UInt(id)]).unwrap().is_some() {
                        t.update(&person(id, &city(id, round), round as i64))
                            .unwrap();
                    } else {
                        t.insert(&person(id, &city(id, round), round as i64))
                            .unwrap();
                    }
                }
            }
        });
        for _ in 0..5 {
            let (pk, sec) = seen(&mut reader, &t);
            assert_eq!(pk, old);
            assert_eq!(sec, old);
        }
    });
    assert!(db.status().unwrap().transactions.history_len > 0);
    drop(reader);
    let deadline = Instant::now() + Duration::from_secs(60);
    while db.status().unwrap().transactions.history_len > 0 {
        assert!(Instant::now() < deadline, "purge did not catch up");
        std::thread::sleep(Duration::from_millis(5));
    }
    let report = db.check().unwrap();
    assert_eq!(report.delete_marked, 0, "{report:?}");
    let st = db.status().unwrap().transactions;
    assert!(st.purge_records > 0 && st.purge_errors == 0, "{st:?}");
}

#[test]
fn more_than_one_purge_thread_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    match Database::create(dir.path(), config(2)) {
        Err(Error::Config { knob, reason }) => {
            assert_eq!(knob, "innodb_purge_threads");
            assert!(reason.contains("commit order"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

// ---- A power-cut campaign with purge running ----

fn crash_config(backend: Arc<dyn Backend>) -> Config {
    Config {
        purge_threads: 0,
        ..common::crash_config(backend)
    }
}

/// One seed: transactions (some rolled back) with purge called every few commits, sometimes
/// while a reader holds an old view, under an armed simulator. After the power cut the table
/// is the committed state, `check()` passes (history list and undo segment included), and a
/// full purge afterwards empties the history and leaves no delete-marked record.
fn run_seed(seed: u64) -> (usize, u64) {
    let dir = tempfile::tempdir().unwrap();
    let sim = Arc::new(CrashSim::new(Arc::new(SyncBackend::new())));
    let report;
    let backend: Arc<dyn Backend> = sim.clone();
    let mut rng = Rng(seed ^ 0x9E12_0000);
    let mut committed = Model::new();
    let mut in_commit: Option<Model> = None;
    let mut n = 0;
    let mut purged = 0;
    {
        let db = Database::create(dir.path(), crash_config(Arc::clone(&backend))).unwrap();
        let t = db.create_table(table_def()).unwrap();
        for _ in 0..40 {
            let op = Op::random(&mut rng, &committed, 150);
            op.run(&t).unwrap();
            op.apply(&mut committed);
        }
        sim.arm(1 + rng.below(900));
        let mut reader: Option<(Transaction, Vec<Vec<Value>>)> = None;
        'outer: for i in 0..400 {
            if i % 7 == 0 {
                match db.purge() {
                    Ok(r) => purged += r.records,
                    Err(_) => break,
                }
            }
            if rng.below(10) == 0 {
                // Open or close an old view; while it is open purge must keep its versions.
                reader = match reader.take() {
                    Some((r, rows)) => {
                        match r.scan(&t, Scan::all()) {
                            Ok(scan) => match scan.collect::<minnow::Result<Vec<_>>>() {
                                Ok(got) => assert_eq!(got, rows, "seed {seed}: snapshot changed"),
                                Err(_) => break,
                            },
                            Err(_) => break,
                        }
                        None
                    }
                    None => {
                        let r = db.begin().unwrap();
                        match r.scan(&t, Scan::all()).and_then(|s| s.collect()) {
                            Ok(rows) => Some((r, rows)),
                            Err(_) => break,
                        }
                    }
                };
            }
            let mut tx = db.begin().unwrap();
            let mut mine = committed.clone();
            for _ in 0..1 + rng.below(5) {
                let op = Op::random(&mut rng, &mine, 150);
                if op.run_in(&mut tx, &t).is_err() {
                    std::mem::forget(tx);
                    break 'outer;
                }
                op.apply(&mut mine);
            }
            if rng.below(5) == 0 {
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
        std::mem::forget(reader);
        // The power goes with the database still open; what closing it tries to write then
        // fails (the device is gone), and close lets the directory's LOCK go (for every
        // handle: the forgotten transaction's clone of the database too).
        report = sim.power_cut(seed).unwrap();
        let _ = db.close();
    }
    let db = Database::open(dir.path(), crash_config(backend))
        .unwrap_or_else(|e| panic!("seed {seed}: open after the crash failed: {e}\n{report}"));
    let t = db.table("t").unwrap();
    let rows = all_rows(&t);
    if rows != model_rows(&committed) && !in_commit.as_ref().is_some_and(|m| rows == model_rows(m))
    {
        panic!("seed {seed}: recovered rows match no committed state\n{report}");
    }
    db.check()
        .unwrap_or_else(|e| panic!("seed {seed}: check after recovery: {e}\n{report}"));
    db.purge()
        .unwrap_or_else(|e| panic!("seed {seed}: purge after recovery: {e}\n{report}"));
    let after = db
        .check()
        .unwrap_or_else(|e| panic!("seed {seed}: check after purge: {e}\n{report}"));
    assert_eq!(after.history_len, 0, "seed {seed}");
    assert_eq!(after.delete_marked, 0, "seed {seed}: {after:?}");
    assert_eq!(all_rows(&t), rows, "seed {seed}: purge changed the rows");
    drop(t);
    db.close().unwrap();
    (n, purged)
}

#[test]
fn crash_campaign_with_purge_running() {
    let (mut runs, mut commits, mut purged) = (0, 0, 0);
    for seed in seeds(12) {
        let (n, p) = run_seed(seed);
        runs += 1;
        commits += n;
        purged += p;
    }
    eprintln!("{runs} seeds, {commits} committed transactions, {purged} undo records purged");
    assert!(purged > 0, "no seed purged anything before its power cut");
}
