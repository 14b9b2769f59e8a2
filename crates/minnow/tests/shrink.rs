//! A clean close gives the unused extents at the end of the system tablespace back to the
//! file system (`minnow_btree::space::shrink_tail`, then `BufferPool::cut_space` after the
//! final checkpoint), the file stays that short across a reopen (no doublewrite copy of a
//! page beyond the cut is written back), and a power cut at any step of the cut loses
//! nothing.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::{all_rows, crash_config};
use minnow::backend::{Backend, CrashSim, SyncBackend};
use minnow::inspect::Internals;
use minnow::{ColumnDef, ColumnType, Config, Database, TableDef, Value};

const PAGE: u64 = 4096;
const ROWS: u64 = 1200;
const KEEP: u64 = 100;

fn def() -> TableDef {
    TableDef::new("t")
        .column(ColumnDef::new("id", ColumnType::U64))
        .column(ColumnDef::new("pad", ColumnType::Var(1000)))
        .primary_key(&["id"])
}

fn row(id: u64) -> Vec<Value> {
    vec![Value::UInt(id), Value::Bytes(vec![id as u8; 900])]
}

/// No background purge (the runs are deterministic); a slow shutdown (a full purge, the
/// idle undo streams moved down) unless `fast`. A pool and a log that hold the whole run,
/// so that nothing is flushed before the close, and whole doublewrite batches (a fast
/// test: few syncs).
fn config_with(backend: &Arc<dyn Backend>, fast: bool) -> Config {
    Config {
        buffer_pool_size: 16 << 20,
        log_file_size: 16 << 20,
        doublewrite_pages: Config::default().doublewrite_pages,
        purge_threads: 0,
        fast_shutdown: u8::from(fast),
        ..crash_config(Arc::clone(backend))
    }
}

fn config(backend: &Arc<dyn Backend>) -> Config {
    config_with(backend, false)
}

/// `ibdata1`'s length and page 0's `SIZE`, both in pages.
fn sizes(dir: &Path) -> (u64, u64) {
    let bytes = std::fs::read(dir.join(minnow::inspect::SYSTEM_TABLESPACE)).unwrap();
    let size = u32::from_be_bytes(bytes[46..50].try_into().unwrap());
    (bytes.len() as u64 / PAGE, u64::from(size))
}

/// Loads `ROWS` rows and removes all but `KEEP` of them in one transaction: the removal's
/// undo (whole old rows) is written last, at the end of the file. Nothing is purged yet.
fn load_and_remove_unpurged(db: &Database) {
    let t = db.create_table(def()).unwrap();
    let mut tx = db.begin().unwrap();
    for id in 0..ROWS {
        tx.insert(&t, &row(id)).unwrap();
    }
    tx.commit().unwrap();
    let mut tx = db.begin().unwrap();
    for id in KEEP..ROWS {
        assert!(tx.delete(&t, &[Value::UInt(id)]).unwrap());
    }
    tx.commit().unwrap();
}

/// [`load_and_remove_unpurged`], then a purge: the removal's undo is free but for the last
/// page of its stream.
fn load_and_remove(db: &Database) {
    load_and_remove_unpurged(db);
    let r = db.purge().unwrap();
    assert_eq!(r.clustered_removed, ROWS - KEEP);
}

fn assert_kept(db: &Database) {
    let want: Vec<Vec<Value>> = (0..KEEP).map(row).collect();
    assert_eq!(all_rows(&db.table("t").unwrap()), want);
    db.check().unwrap();
}

#[test]
fn a_clean_close_cuts_the_free_tail_and_the_file_stays_cut() {
    let dir = tempfile::tempdir().unwrap();
    let backend: Arc<dyn Backend> = Arc::new(SyncBackend::new());
    let db = Database::create(dir.path(), config(&backend)).unwrap();
    load_and_remove(&db);
    db.buffer_pool().unwrap().flush_all().unwrap();
    let (before, _) = sizes(dir.path());
    db.close().unwrap();
    // The file grows lazily, as pages are first written: it may end before SIZE, never
    // after it.
    let (len, size) = sizes(dir.path());
    assert!(
        len <= size,
        "the file ends at or before SIZE: {len} > {size} pages"
    );
    assert!(
        len + 256 <= before,
        "at least one 1 MiB extent left the file: {before} -> {len} pages"
    );
    // The reopen writes no doublewrite copy back beyond the end, and the cut is stable.
    let db = Database::open(dir.path(), config(&backend)).unwrap();
    assert_kept(&db);
    assert_eq!(sizes(dir.path()), (len, size));
    // The space grows again from its new end.
    let t = db.table("t").unwrap();
    let mut tx = db.begin().unwrap();
    for id in ROWS..2 * ROWS {
        tx.insert(&t, &row(id)).unwrap();
    }
    tx.commit().unwrap();
    drop(t);
    db.check().unwrap();
    db.close().unwrap();
    let db = Database::open(dir.path(), config(&backend)).unwrap();
    assert_eq!(
        all_rows(&db.table("t").unwrap()).len(),
        (KEEP + ROWS) as usize
    );
    db.check().unwrap();
    db.close().unwrap();
}

/// How many operations before the end of the close the device dies, counted back: the
/// cut is the close's last six (the two doublewrite headers emptied, each synced, then the
/// file cut and synced). By default two of them (the cut's last sync lost; the second
/// header not yet written); `MINNOW_SHRINK_ALL_CUTS=1` tries all six and the two before.
fn cut_points() -> Vec<u64> {
    if std::env::var_os("MINNOW_SHRINK_ALL_CUTS").is_some() {
        (1..=8).collect()
    } else {
        vec![1, 4]
    }
}

/// A database on a crash simulator after [`load_and_remove`], every page flushed: what is
/// left for the close is the slow shutdown and the cut.
fn crash_run() -> (tempfile::TempDir, Arc<CrashSim>, Arc<dyn Backend>, Database) {
    common::crash_db(config, load_and_remove)
}

#[test]
fn a_power_cut_at_any_step_of_the_cut_loses_nothing() {
    // A twin run counts the close's operations: the runs are deterministic (no background
    // purge, one page cleaner with nothing left to do after the flush).
    let close_ops = {
        let (_dir, sim, _, db) = crash_run();
        let before = sim.ops();
        db.close().unwrap();
        sim.ops() - before
    };
    let points = cut_points();
    assert!(
        points.iter().all(|&b| b < close_ops),
        "{close_ops} operations"
    );
    for back in points {
        let (dir, sim, backend, db) = crash_run();
        // Dies `back` operations before the end of the close.
        sim.arm(close_ops - back);
        let closed = db.close();
        assert!(closed.is_err(), "the device died {back} operations early");
        let report = sim.power_cut(back).unwrap();
        let db = Database::open(dir.path(), config(&backend))
            .unwrap_or_else(|e| panic!("open after a cut {back} ops early: {e}\n{report}"));
        assert_kept(&db);
        // The next clean close finishes the cut.
        db.close().unwrap();
        let (len, size) = sizes(dir.path());
        assert!(
            len <= size,
            "{back} ops early: a clean close after it cuts the file"
        );
        let db = Database::open(dir.path(), config(&backend)).unwrap();
        assert_kept(&db);
        db.close().unwrap();
    }
}

#[test]
fn a_slow_shutdown_purges_and_cuts_what_a_fast_one_leaves() {
    let mut lens = Vec::new();
    for fast in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let backend: Arc<dyn Backend> = Arc::new(SyncBackend::new());
        let db = Database::create(dir.path(), config_with(&backend, fast)).unwrap();
        load_and_remove_unpurged(&db);
        db.close().unwrap();
        let (len, size) = sizes(dir.path());
        assert!(len <= size);
        lens.push(len);
        // What the fast close left is purged after the reopen; the slow one left nothing.
        let db = Database::open(dir.path(), config_with(&backend, fast)).unwrap();
        let r = db.purge().unwrap();
        let want = if fast { ROWS - KEEP } else { 0 };
        assert_eq!(r.clustered_removed, want, "fast shutdown {fast}");
        assert_kept(&db);
        db.close().unwrap();
    }
    assert!(
        lens[1] + 256 <= lens[0],
        "the slow close leaves at least one 1 MiB extent less: {lens:?} pages"
    );
}
