//! Handles that fit Rust: a cloneable `Database`, `Table`, `Transaction` and `Rows` that own
//! a clone and borrow nothing, reads through `&Transaction`, what `close` means with other
//! handles alive, and `open_or_create`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

use minnow::{
    ColumnDef, ColumnType, Config, Database, Error, MIN_LOG_FILE_SIZE, Rows, Scan, Table, TableDef,
    Transaction, Value,
};

fn config() -> Config {
    Config {
        buffer_pool_size: 8 << 20,
        log_file_size: 16 * MIN_LOG_FILE_SIZE,
        ..Config::default()
    }
}

fn def() -> TableDef {
    TableDef::new("t")
        .column(ColumnDef::new("id", ColumnType::U64))
        .column(ColumnDef::new("v", ColumnType::I64))
        .primary_key(&["id"])
}

fn row(id: u64, v: i64) -> Vec<Value> {
    vec![Value::UInt(id), Value::Int(v)]
}

fn closed(r: minnow::Result<impl std::fmt::Debug>, dir: &std::path::Path) {
    match r {
        Err(Error::Closed { path }) => assert_eq!(path, dir),
        other => panic!("expected Error::Closed, got {other:?}"),
    }
}

/// One struct owns the database, a table and an open transaction: no lifetimes.
struct App {
    db: Database,
    t: Table,
    tx: Option<Transaction>,
}

#[test]
fn one_struct_owns_the_database_its_tables_and_a_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config()).unwrap();
    let t = db.create_table(def()).unwrap();
    let mut app = App {
        tx: Some(db.begin().unwrap()),
        db,
        t,
    };
    let tx = app.tx.as_mut().unwrap();
    tx.insert(&app.t, &row(1, 10)).unwrap();
    // Reads take `&self`: a read feeds a write of the same transaction without a borrow
    // conflict, and two reads hold the transaction shared at once.
    let (a, b) = (&*tx, &*tx);
    assert_eq!(a.get(&app.t, &[Value::UInt(1)]).unwrap(), Some(row(1, 10)));
    assert_eq!(b.count(&app.t).unwrap(), 1);
    let seen = tx.get(&app.t, &[Value::UInt(1)]).unwrap().unwrap();
    let Value::Int(v) = seen[1] else {
        panic!("{seen:?}")
    };
    tx.update(&app.t, &row(1, v + 1)).unwrap();
    app.tx.take().unwrap().commit().unwrap();
    // A clone is the same database; a table handle outlives the `Database` it came from.
    let other = app.db.clone();
    drop(app.db);
    assert_eq!(app.t.get(&[Value::UInt(1)]).unwrap(), Some(row(1, 11)));
    assert_eq!(other.table("t").unwrap().count().unwrap(), 1);
    other.close().unwrap();
}

#[test]
fn a_transaction_reads_from_several_threads_through_a_shared_reference() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config()).unwrap();
    let t = db.create_table(def()).unwrap();
    for i in 0..20 {
        t.insert(&row(i, 0)).unwrap();
    }
    let tx = db.begin().unwrap();
    assert_eq!(tx.count(&t).unwrap(), 20);
    // Committed after the snapshot: no reader of `tx` sees it.
    t.insert(&row(99, 0)).unwrap();
    std::thread::scope(|s| {
        for i in 0..4 {
            let (tx, t) = (&tx, &t);
            s.spawn(move || {
                assert_eq!(tx.get(t, &[Value::UInt(i)]).unwrap(), Some(row(i, 0)));
                assert_eq!(tx.get(t, &[Value::UInt(99)]).unwrap(), None);
                assert_eq!(tx.scan(t, Scan::all()).unwrap().count(), 20);
            });
        }
    });
    tx.commit().unwrap();
}

#[test]
fn rows_outlive_the_table_handle_they_came_from() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config()).unwrap();
    db.create_table(def()).unwrap();
    db.table("t").unwrap().insert(&row(1, 1)).unwrap();
    // The table handle is a temporary; the scan owns what it needs.
    let rows: Rows = db.table("t").unwrap().scan(Scan::all()).unwrap();
    let tx = db.begin().unwrap();
    let in_tx: Rows = tx.scan(&db.table("t").unwrap(), Scan::all()).unwrap();
    drop(tx);
    assert_eq!(
        rows.collect::<minnow::Result<Vec<_>>>().unwrap(),
        [row(1, 1)]
    );
    assert_eq!(
        in_tx.collect::<minnow::Result<Vec<_>>>().unwrap(),
        [row(1, 1)]
    );
}

#[test]
fn close_closes_the_database_for_every_handle() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config()).unwrap();
    let t = db.create_table(def()).unwrap();
    for i in 0..300 {
        t.insert(&row(i, 1)).unwrap();
    }
    let clone = db.clone();
    let mut scan = t.scan(Scan::all()).unwrap();
    assert_eq!(scan.next().unwrap().unwrap(), row(0, 1));
    // An open transaction with an uncommitted change.
    let mut open = db.begin().unwrap();
    open.update(&t, &row(7, -7)).unwrap();
    db.close().unwrap();
    assert!(clone.is_closed());
    closed(clone.table("t"), dir.path());
    closed(t.get(&[Value::UInt(1)]), dir.path());
    closed(t.insert(&row(1000, 0)), dir.path());
    closed(clone.begin(), dir.path());
    closed(open.get(&t, &[Value::UInt(7)]), dir.path());
    closed(open.update(&t, &row(8, -8)), dir.path());
    closed(scan.next().unwrap(), dir.path());
    assert!(scan.next().is_none(), "a scan ends after its error");
    // The directory's LOCK went with close, although handles are still alive.
    let db = Database::open(dir.path(), config()).unwrap();
    assert_eq!(
        db.open_report().rolled_back,
        1,
        "the open transaction, as after a crash"
    );
    let t2 = db.table("t").unwrap();
    assert_eq!(t2.get(&[Value::UInt(7)]).unwrap(), Some(row(7, 1)));
    assert_eq!(t2.count().unwrap(), 300);
    // The old handles' drops (a rollback among them) touch nothing of the new open.
    drop((open, t, clone, scan));
    assert_eq!(t2.get(&[Value::UInt(7)]).unwrap(), Some(row(7, 1)));
    db.check().unwrap();
    // Closing a closed database does nothing.
    let again = db.clone();
    db.close().unwrap();
    again.close().unwrap();
}

#[test]
fn dropping_the_last_handle_closes_and_lets_go_of_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config()).unwrap();
    let t = db.create_table(def()).unwrap();
    drop(db);
    // The table handle keeps the database open.
    t.insert(&row(1, 1)).unwrap();
    assert!(matches!(
        Database::open(dir.path(), config()),
        Err(Error::Locked(_))
    ));
    drop(t);
    let db = Database::open(dir.path(), config()).unwrap();
    assert_eq!(db.open_report().redo_groups, 0, "a clean close");
    assert_eq!(db.table("t").unwrap().count().unwrap(), 1);
}

#[test]
fn a_statement_waiting_for_a_row_lock_at_close_fails_without_writing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config()).unwrap();
    let t = db.create_table(def()).unwrap();
    t.insert(&row(1, 1)).unwrap();
    let mut holder = db.begin().unwrap();
    holder.update(&t, &row(1, 2)).unwrap();
    let waiter = {
        let t = t.clone();
        std::thread::spawn(move || t.update(&row(1, 3)))
    };
    while db.lock_stats().unwrap().waiting == 0 {
        std::thread::yield_now();
    }
    db.clone().close().unwrap();
    // The holder's drop lets its locks go (in memory only): the waiter is granted the lock,
    // finds the database closed and returns without a write.
    drop(holder);
    closed(waiter.join().unwrap(), dir.path());
    let db = Database::open(dir.path(), config()).unwrap();
    // The holder, and the waiter's own autocommit transaction if it had begun its undo log.
    assert!(db.open_report().rolled_back >= 1);
    assert_eq!(
        db.table("t").unwrap().get(&[Value::UInt(1)]).unwrap(),
        Some(row(1, 1))
    );
    db.check().unwrap();
}

#[test]
fn close_beside_a_writer_keeps_every_acknowledged_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config()).unwrap();
    let t = db.create_table(def()).unwrap();
    let acked = Arc::new(AtomicU64::new(0));
    let writer = {
        let (t, acked) = (t.clone(), Arc::clone(&acked));
        std::thread::spawn(move || {
            for i in 0.. {
                if let Err(e) = t.insert(&row(i, 0)) {
                    return e;
                }
                acked.store(i + 1, Ordering::SeqCst);
            }
            unreachable!()
        })
    };
    while acked.load(Ordering::SeqCst) < 50 {
        std::thread::yield_now();
    }
    db.close().unwrap();
    assert!(matches!(writer.join().unwrap(), Error::Closed { .. }));
    let n = acked.load(Ordering::SeqCst);
    let db = Database::open(dir.path(), config()).unwrap();
    let t = db.table("t").unwrap();
    let rows = t.count().unwrap();
    // Every acknowledged row is there; at most the one in flight at close besides.
    assert!(rows == n || rows == n + 1, "{rows} rows, {n} acknowledged");
    for i in 0..n {
        assert!(t.get(&[Value::UInt(i)]).unwrap().is_some(), "row {i}");
    }
    db.check().unwrap();
}

#[test]
fn open_or_create_creates_opens_and_refuses_a_foreign_directory() {
    let dir = tempfile::tempdir().unwrap();
    // Missing: created.
    let path = dir.path().join("a/b");
    let db = Database::open_or_create(&path, config()).unwrap();
    db.create_table(def()).unwrap().insert(&row(1, 1)).unwrap();
    db.close().unwrap();
    // Holds a database: opened.
    let db = Database::open_or_create(&path, config()).unwrap();
    assert_eq!(db.table("t").unwrap().count().unwrap(), 1);
    db.close().unwrap();
    // Empty: created.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let db = Database::open_or_create(&empty, config()).unwrap();
    assert_eq!(db.tables().unwrap(), Vec::<String>::new());
    drop(db);
    // Other files and no ibdata1: refused, untouched.
    let foreign = dir.path().join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), b"mine").unwrap();
    match Database::open_or_create(&foreign, config()) {
        Err(Error::Directory { path, reason }) => {
            assert_eq!(path, foreign);
            assert!(reason.contains("notes.txt"), "{reason}");
        }
        other => panic!("expected Error::Directory, got {other:?}"),
    }
    let names: Vec<_> = std::fs::read_dir(&foreign)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["notes.txt"]);
}

#[test]
fn two_threads_share_one_database_through_clones() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config()).unwrap();
    db.create_table(def()).unwrap();
    let start = Arc::new(Barrier::new(2));
    let threads: Vec<_> = (0..2u64)
        .map(|n| {
            let (db, start) = (db.clone(), Arc::clone(&start));
            std::thread::spawn(move || {
                let t = db.table("t").unwrap();
                start.wait();
                for i in 0..100 {
                    t.insert(&row(n * 1000 + i, 0)).unwrap();
                }
            })
        })
        .collect();
    for th in threads {
        th.join().unwrap();
    }
    assert_eq!(db.table("t").unwrap().count().unwrap(), 200);
    db.close().unwrap();
}
