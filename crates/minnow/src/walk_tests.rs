//! Walks along undo links end on a corrupt undo store: a cycle of roll pointers under a
//! consistent read, and a cycle in a transaction's own undo log under its rollback and under
//! purge. The bad
//! link is written into the undo page through the buffer pool's mini-transactions (so the
//! page stays valid), and the walk runs in a thread with a time limit, so a walk that loops
//! fails the test instead of hanging it.

use std::time::Duration;

use minnow_mvcc::RollPtr;
use minnow_page::{PageId, walk};

use crate::{ColumnDef, ColumnType, Config, Database, Error, TableDef, Transaction, Value};

/// Offsets in an undo record (see `minnow_mvcc::undo::record`).
const OLD_TRX_ID: usize = 22;
const OLD_ROLL_PTR: usize = 28;
const PREV: usize = 35;

/// Runs `f` in a thread; fails the test if it has not returned within 60 seconds.
fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    walk::within(Duration::from_secs(60), f)
        .unwrap_or_else(|| panic!("{what} did not end within 60 s: it loops"))
}

/// A database that lives as long as the test process (a walk that loops keeps using it
/// after the test gave up on it), with one table `t (id, v)` holding row 1.
fn setup() -> (tempfile::TempDir, &'static Database) {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        purge_threads: 0,
        ..Config::default()
    };
    let db: &'static Database = Box::leak(Box::new(Database::create(dir.path(), config).unwrap()));
    let def = TableDef::new("t")
        .column(ColumnDef::new("id", ColumnType::U64))
        .column(ColumnDef::new("v", ColumnType::I64))
        .primary_key(&["id"]);
    db.create_table(def).unwrap().insert(&row(100)).unwrap();
    (dir, db)
}

fn row(v: i64) -> Vec<Value> {
    vec![Value::UInt(1), Value::Int(v)]
}

/// Writes `data` at byte `at` of the undo record at `ptr`, in one mini-transaction.
fn poke(db: &Database, ptr: RollPtr, at: usize, data: &[u8]) {
    let inner = db.inner().unwrap();
    let id = PageId::new(inner.trx_sys().page().space, ptr.page);
    let mut mtr = inner.pool().mtr().unwrap();
    let h = mtr.get_write(id).unwrap();
    mtr.write(h, usize::from(ptr.offset) + at, data).unwrap();
    mtr.commit().unwrap();
}

fn assert_corrupt(e: Error, says: &str) {
    match e {
        Error::Corrupt { what } => assert!(what.contains(says), "{what}"),
        other => panic!("expected Corrupt, got {other}"),
    }
}

#[test]
fn a_consistent_read_through_a_cycle_of_roll_pointers_ends() {
    let (_dir, db) = setup();
    let t = db.table("t").unwrap();
    let reader = db.begin().unwrap();
    assert_eq!(reader.get(&t, &[Value::UInt(1)]).unwrap(), Some(row(100)));
    t.update(&row(80)).unwrap();
    t.update(&row(70)).unwrap();
    // The chain: the record (70) -> undo (80, T2) -> undo (100, the inserter) -> insert.
    let h = t.history(&[Value::UInt(1)]).unwrap().unwrap();
    let (newest, older) = (h.versions[0].roll_ptr, h.versions[1].roll_ptr);
    let t2 = h.versions[1].trx_id;
    // The older undo record now says the version before it was also written by T2 (which
    // the reader does not see) and leads back to the newer undo record.
    poke(db, older, OLD_TRX_ID, &t2.to_be_bytes()[2..]);
    poke(db, older, OLD_ROLL_PTR, &newest.to_u64().to_be_bytes()[1..]);
    let e = within("the consistent read", move || {
        reader.get(&t, &[Value::UInt(1)]).unwrap_err()
    });
    assert_corrupt(e, "cycle");
}

/// A transaction that updated row 1 twice, whose first undo record now chains back to its
/// second: its log's `prev` chain loops.
fn looping_log(db: &'static Database) -> Transaction {
    let t = db.table("t").unwrap();
    let mut tx = db.begin().unwrap();
    tx.update(&t, &row(80)).unwrap();
    tx.update(&t, &row(70)).unwrap();
    let h = t.history(&[Value::UInt(1)]).unwrap().unwrap();
    let (newest, older) = (h.versions[0].roll_ptr, h.versions[1].roll_ptr);
    let prev = [&newest.page.to_be_bytes()[..], &newest.offset.to_be_bytes()].concat();
    poke(db, older, PREV, &prev);
    tx
}

#[test]
fn a_rollback_through_a_cycle_in_its_undo_log_ends() {
    let (_dir, db) = setup();
    let tx = looping_log(db);
    let e = within("the rollback", move || tx.rollback().unwrap_err());
    assert_corrupt(e, "undo number");
}

#[test]
fn purging_a_log_whose_records_loop_ends() {
    let (_dir, db) = setup();
    looping_log(db).commit().unwrap();
    // Purge walks the committed log newest record first.
    let e = within("the purge", move || db.purge().unwrap_err());
    assert_corrupt(e, "undo number");
}
