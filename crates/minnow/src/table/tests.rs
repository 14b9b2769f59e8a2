//! Interleavings of an autocommit read with a concurrent rollback, made deterministic by a
//! hook the read calls at fixed points (the engine's `hooks` module, compiled into test
//! builds only: its `test-hooks` feature).

use std::sync::Mutex;
use std::sync::mpsc;

use minnow_btree::record::Value;
use minnow_engine::hooks::{Point, install, uninstall};

use crate::{ColumnDef, ColumnType, Config, Database, TableDef};

/// A database with table `t` (id, v) holding the row (1, 100).
fn one_row() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), Config::default()).unwrap();
    let t = db
        .create_table(
            TableDef::new("t")
                .column(ColumnDef::new("id", ColumnType::U64))
                .column(ColumnDef::new("v", ColumnType::I64))
                .primary_key(&["id"]),
        )
        .unwrap();
    t.insert(&[Value::UInt(1), Value::Int(100)]).unwrap();
    (dir, db)
}

/// Runs `op` in another thread, pauses it at `point`, runs `during` meanwhile, lets it go on
/// and returns what it returned.
fn run_pausing_at<R: Send>(
    point: Point,
    op: impl FnOnce() -> R + Send,
    during: impl FnOnce(),
) -> R {
    // One hook slot (the engine's), so the tests that pause take turns: a test-only lock, held by
    // the test thread around one paused operation, never by the engine.
    static TURN: Mutex<()> = Mutex::new(());
    let _turn = TURN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (paused_tx, paused_rx) = mpsc::channel::<()>();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        let paused = s.spawn(move || {
            let go_rx = Mutex::new(go_rx);
            let paused_tx = Mutex::new(paused_tx);
            install(std::sync::Arc::new(move |p| {
                if p == point {
                    paused_tx.lock().unwrap().send(()).unwrap();
                    go_rx.lock().unwrap().recv().unwrap();
                }
            }));
            let r = op();
            uninstall();
            r
        });
        paused_rx.recv().unwrap();
        during();
        go_tx.send(()).unwrap();
        paused.join().unwrap()
    })
}

/// Runs `t.get([1])` in another thread, pauses it at `point`, runs `during` meanwhile, lets
/// it go on and returns what it read.
fn get_pausing_at(
    t: &crate::Table,
    point: Point,
    during: impl FnOnce(),
) -> crate::Result<Option<Vec<Value>>> {
    run_pausing_at(point, || t.get(&[Value::UInt(1)]), during)
}

/// A writer updates a row, an autocommit `get` reads the uncommitted record, the writer
/// rolls back before the read decides whether the record's writer committed. The read must
/// return the committed value: the bound it decides with was taken before the record was
/// read, when the writer was still active.
#[test]
fn a_rollback_between_the_read_and_the_commit_test_is_not_a_dirty_read() {
    let (_dir, db) = one_row();
    let t = db.table("t").unwrap();
    let mut tx = db.begin().unwrap();
    tx.update(&t, &[Value::UInt(1), Value::Int(-1)]).unwrap();
    // The reader holds the uncommitted record and no latch: roll the writer back then.
    let got = get_pausing_at(&t, Point::FastGetRead, || tx.rollback().unwrap());
    assert_eq!(
        got.unwrap(),
        Some(vec![Value::UInt(1), Value::Int(100)]),
        "the read returned a value that was never committed"
    );
    // And after the rollback the fast path sees the restored row.
    assert_eq!(
        t.get(&[Value::UInt(1)]).unwrap(),
        Some(vec![Value::UInt(1), Value::Int(100)])
    );
    drop(t);
    db.close().unwrap();
}

/// No transaction is active when the read takes its bound; a writer then begins, updates the
/// row and is still active when the read looks at the record. The bound (the next id, not
/// "infinity") keeps the uncommitted record out.
#[test]
fn a_writer_that_starts_after_the_bound_is_not_read_as_committed() {
    let (_dir, db) = one_row();
    let t = db.table("t").unwrap();
    let mut tx = None;
    let got = get_pausing_at(&t, Point::FastGetBoundTaken, || {
        let mut w = db.begin().unwrap();
        w.update(&t, &[Value::UInt(1), Value::Int(-1)]).unwrap();
        tx = Some(w);
    });
    assert_eq!(got.unwrap(), Some(vec![Value::UInt(1), Value::Int(100)]));
    tx.unwrap().rollback().unwrap();
    drop(t);
    db.close().unwrap();
}

/// A write statement paused while it holds its latches (the state a statement is in for its
/// whole run) does not keep writers of other rows out, in its table or another, nor
/// transactions from beginning, writing and committing: nothing database-wide serialises
/// writers. (With one writer mutex each of these would wait for the paused statement for
/// ever, and the test would hang.)
#[test]
fn a_statement_in_progress_does_not_hold_up_writers_of_other_rows() {
    let (_dir, db) = one_row();
    let t = db.table("t").unwrap();
    let other = db
        .create_table(
            TableDef::new("other")
                .column(ColumnDef::new("id", ColumnType::U64))
                .primary_key(&["id"]),
        )
        .unwrap();
    let paused = run_pausing_at(
        Point::StatementLatched,
        || t.update(&[Value::UInt(1), Value::Int(7)]),
        || {
            t.insert(&[Value::UInt(2), Value::Int(2)]).unwrap();
            t.update(&[Value::UInt(2), Value::Int(3)]).unwrap();
            other.insert(&[Value::UInt(1)]).unwrap();
            let mut tx = db.begin().unwrap();
            tx.insert(&t, &[Value::UInt(3), Value::Int(3)]).unwrap();
            assert!(tx.delete(&t, &[Value::UInt(2)]).unwrap());
            tx.commit().unwrap();
        },
    );
    paused.unwrap();
    assert_eq!(
        t.get(&[Value::UInt(1)]).unwrap(),
        Some(vec![Value::UInt(1), Value::Int(7)])
    );
    assert_eq!(t.get(&[Value::UInt(2)]).unwrap(), None);
    assert_eq!(
        t.get(&[Value::UInt(3)]).unwrap(),
        Some(vec![Value::UInt(3), Value::Int(3)])
    );
    drop((t, other));
    db.check().unwrap();
    db.close().unwrap();
}
