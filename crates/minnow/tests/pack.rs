//! A slow close packs every tree into the low end of its segments (`BTree::pack`: each page
//! above its segment's lowest free page moves down, one mini-transaction per page) before the
//! free tail of the system tablespace is cut, so that the free pages random inserts and a
//! large removal leave *between* live pages leave the file too; and a power cut at any step
//! of that close loses nothing.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::{all_rows, crash_config};
use minnow::backend::{Backend, CrashSim, SyncBackend};
use minnow::inspect::{Internals, SYSTEM_SPACE_ID, SYSTEM_TABLESPACE};
use minnow::{ColumnDef, ColumnType, Config, Database, TableDef, Value};
use minnow_io::SplitMix64;

const PAGE: u64 = 4096;
const ROWS: u64 = 9000;

fn def() -> TableDef {
    TableDef::new("t")
        .column(ColumnDef::new("id", ColumnType::U64))
        .column(ColumnDef::new("pad", ColumnType::Var(400)))
        .primary_key(&["id"])
}

fn row(id: u64) -> Vec<Value> {
    vec![
        Value::UInt(id),
        Value::Bytes(vec![id as u8; 150 + id as usize % 100]),
    ]
}

/// The rows a run keeps: one in three.
fn kept(id: u64) -> bool {
    id.is_multiple_of(3)
}

/// No background purge (deterministic runs), a slow shutdown, a pool and a log that hold
/// the whole run.
fn config(backend: &Arc<dyn Backend>) -> Config {
    Config {
        buffer_pool_size: 16 << 20,
        log_file_size: 16 << 20,
        doublewrite_pages: Config::default().doublewrite_pages,
        purge_threads: 0,
        fast_shutdown: 0,
        ..crash_config(Arc::clone(backend))
    }
}

fn file_pages(dir: &Path) -> u64 {
    std::fs::metadata(dir.join(SYSTEM_TABLESPACE))
        .unwrap()
        .len()
        / PAGE
}

/// Row-by-row inserts in a seeded random order (one row first, so that the table is not
/// empty and the rest take the ordinary insert path, splitting leaves all over the file),
/// then two rows in three removed in one transaction, purged.
fn load_and_remove(db: &Database) {
    let t = db.create_table(def()).unwrap();
    let mut ids: Vec<u64> = (0..ROWS).collect();
    SplitMix64(0x9AC4).shuffle(&mut ids);
    for chunk in ids.chunks(200) {
        let mut tx = db.begin().unwrap();
        for &id in chunk {
            tx.insert(&t, &row(id)).unwrap();
        }
        tx.commit().unwrap();
    }
    let mut tx = db.begin().unwrap();
    for &id in ids.iter().filter(|&&id| !kept(id)) {
        assert!(tx.delete(&t, &[Value::UInt(id)]).unwrap());
    }
    tx.commit().unwrap();
    db.purge().unwrap();
}

fn assert_kept(db: &Database) {
    let want: Vec<Vec<Value>> = (0..ROWS).filter(|&id| kept(id)).map(row).collect();
    assert_eq!(all_rows(&db.table("t").unwrap()), want);
    db.check().unwrap();
}

#[test]
fn a_slow_close_packs_the_trees_and_cuts_the_free_pages_between_them() {
    let dir = tempfile::tempdir().unwrap();
    let backend: Arc<dyn Backend> = Arc::new(SyncBackend::new());
    let db = Database::create(dir.path(), config(&backend)).unwrap();
    load_and_remove(&db);
    let usage =
        minnow_btree::space::space_usage(db.buffer_pool().unwrap(), SYSTEM_SPACE_ID).unwrap();
    let extent = u64::from(usage.extent_pages);
    let in_use = u64::from(usage.free_limit - usage.free_pages);
    assert!(
        u64::from(usage.free_pages) >= 2 * extent,
        "the removal left free pages between live ones: {usage:?}"
    );
    db.close().unwrap();
    let len = file_pages(dir.path());
    // Packed, the file holds its pages in use (fewer after the close: the undo is purged)
    // and at most the partly used last extents of the table's and the undo's segments.
    assert!(
        len <= in_use + 2 * extent,
        "{len} pages in the file for {in_use} in use before the close ({usage:?})"
    );
    let db = Database::open(dir.path(), config(&backend)).unwrap();
    assert_kept(&db);
    db.close().unwrap();
}

/// A database on a crash simulator after [`load_and_remove`], every page flushed.
fn crash_run() -> (tempfile::TempDir, Arc<CrashSim>, Arc<dyn Backend>, Database) {
    common::crash_db(config, load_and_remove)
}

/// Cuts the power at seeded points spread over the whole close (the pack's moves, the
/// shrink, the final flush and checkpoint, the cut): `MINNOW_CRASH_SEEDS=N` tries N points
/// (default 8).
#[test]
fn a_power_cut_at_any_step_of_a_packing_close_loses_nothing() {
    let close_ops = {
        let (_dir, sim, _, db) = crash_run();
        let before = sim.ops();
        db.close().unwrap();
        sim.ops() - before
    };
    assert!(close_ops > 8, "{close_ops} operations");
    for seed in minnow_io::campaign_seeds(8) {
        let mut rng = SplitMix64(seed ^ 0x9AC4_C105);
        let at = 1 + rng.below(close_ops - 1);
        let (dir, sim, backend, db) = crash_run();
        sim.arm(at);
        assert!(
            db.close().is_err(),
            "the device died at {at} of {close_ops}"
        );
        let report = sim.power_cut(seed).unwrap();
        let db = Database::open(dir.path(), config(&backend))
            .unwrap_or_else(|e| panic!("open after a cut at {at}: {e}\n{report}"));
        assert_kept(&db);
        // The next clean close packs and cuts what the cut one left.
        db.close().unwrap();
        let db = Database::open(dir.path(), config(&backend)).unwrap();
        assert_kept(&db);
        db.close().unwrap();
    }
}
