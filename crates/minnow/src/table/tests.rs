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
}

type Hook = Box<dyn Fn(Point) + Send>;

/// The installed hook and the one thread it runs for (other tests run in parallel threads).
static HOOK: Mutex<Option<(ThreadId, Hook)>> = Mutex::new(None);

/// Runs the installed hook if it was installed for this thread.
pub(super) fn hook(point: Point) {
    let guard = HOOK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((thread, f)) = guard.as_ref()
        && *thread == std::thread::current().id()
    {
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

/// Runs `t.get([1])` in another thread, pauses it at `point`, runs `during` meanwhile, lets
/// it go on and returns what it read.
fn get_pausing_at(
    t: &crate::Table<'_>,
    point: Point,
    during: impl FnOnce(),
) -> crate::Result<Option<Vec<Value>>> {
    let (paused_tx, paused_rx) = mpsc::channel::<()>();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        let reader = s.spawn(move || {
            let go_rx = Mutex::new(go_rx);
            let paused_tx = Mutex::new(paused_tx);
            install(Box::new(move |p| {
                if p == point {
                    paused_tx.lock().unwrap().send(()).unwrap();
                    go_rx.lock().unwrap().recv().unwrap();
                }
            }));
            let row = t.get(&[Value::UInt(1)]);
            uninstall();
            row
        });
        paused_rx.recv().unwrap();
        during();
        go_tx.send(()).unwrap();
        reader.join().unwrap()
    })
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
