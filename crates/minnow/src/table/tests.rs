//! Interleavings of an autocommit read with a concurrent rollback, made deterministic by a
//! hook the read calls at fixed points (compiled into test builds only).

use std::sync::Mutex;
use std::sync::mpsc;
use std::thread::ThreadId;

use minnow_btree::record::Value;

use crate::{ColumnDef, ColumnType, Config, Database, TableDef};

/// Where in `Table::get` the hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Point {
    /// The fast path has read the bound of ended transactions, not the record yet.
    FastGetBoundTaken,
    /// The fast path has read the record and let its latch go, and not yet decided whether
    /// the record's writer committed.
    FastGetRead,
    /// A write statement holds its latches (the quiesce latch and the table's metadata lock,
    /// shared) and has not started its work.
    StatementLatched,
}

type Hook = std::sync::Arc<dyn Fn(Point) + Send + Sync>;

/// The installed hook and the one thread it runs for (other tests run in parallel threads).
static HOOK: Mutex<Option<(ThreadId, Hook)>> = Mutex::new(None);

/// Runs the installed hook if it was installed for this thread (not holding `HOOK` while it
/// runs: other threads pass their hook points meanwhile).
pub(super) fn hook(point: Point) {
    let f = {
        let guard = HOOK
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match guard.as_ref() {
            Some((thread, f)) if *thread == std::thread::current().id() => Some(f.clone()),
            _ => None,
        }
    };
    if let Some(f) = f {
        f(point);
    }
}

fn install(f: Hook) {
    *HOOK.lock().unwrap() = Some((std::thread::current().id(), f));
}

fn uninstall() {
    *HOOK.lock().unwrap() = None;
}

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
    // One hook slot (`HOOK`), so the tests that pause take turns: a test-only lock, held by
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
