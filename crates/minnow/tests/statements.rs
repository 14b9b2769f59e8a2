//! The statements an application reaches for beyond insert/get/update/delete by primary key:
//! `get_by` through a unique secondary index, `update_columns`, `insert_returning_id` inside
//! a transaction, durability per transaction (`commit_with`) and `Database::sync`.
//!
//! The `get_by` cases run without the purge thread, so the delete-marked entries that a
//! unique index keeps for old versions are all still there when the reads meet them; the
//! status counters show which entries were decided from their leaf alone and which needed
//! the clustered record. The durability cases run on the crash simulator with the log
//! flusher's interval at its maximum (2700 s), so nothing syncs the log behind the test's
//! back: what survives the power cut is exactly what the commits' levels promised.

use std::sync::Arc;
use std::time::Duration;

use minnow::backend::{Backend, CrashSim, SyncBackend};
use minnow::{
    AutoIncLockMode, ColumnDef, ColumnType, Config, Database, Durability, Error, FlushAtCommit,
    IndexDef, IoBackend, TableDef, Value,
};

fn books_def() -> TableDef {
    TableDef::new("books")
        .column(ColumnDef::new("id", ColumnType::U64))
        .column(ColumnDef::new("isbn", ColumnType::Var(13)))
        .column(ColumnDef::new("author", ColumnType::Var(20)))
        .column(ColumnDef::new("stock", ColumnType::U32))
        .primary_key(&["id"])
        .index(IndexDef::unique("by_isbn", &["isbn"]))
        .index(IndexDef::new("by_author", &["author"]))
}

fn book(id: u64, isbn: &str, author: &str, stock: u64) -> Vec<Value> {
    vec![
        Value::UInt(id),
        Value::text(isbn),
        Value::text(author),
        Value::UInt(stock),
    ]
}

fn isbn(s: &str) -> [Value; 1] {
    [Value::text(s)]
}

/// A database without a purge thread (old entries stay) and a short lock wait timeout.
fn fresh() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        purge_threads: 0,
        lock_wait_timeout: Duration::from_millis(50),
        ..Config::default()
    };
    let db = Database::create(dir.path(), config).unwrap();
    db.create_table(books_def()).unwrap();
    (dir, db)
}

/// (clustered reads, clustered reads avoided) of secondary-index reads so far.
fn sec_reads(db: &Database) -> (u64, u64) {
    let rows = db.status().unwrap().rows;
    (rows.sec_cluster_reads, rows.sec_cluster_reads_avoided)
}

/// Runs statement `f` until it gets its lock: the 50 ms lock wait timeout of [`fresh`] may
/// end a wait before the holder does, and the statement then waits again.
fn until_granted<T>(mut f: impl FnMut() -> minnow::Result<T>) -> T {
    loop {
        match f() {
            Ok(v) => return v,
            Err(Error::LockWaitTimeout { .. }) => continue,
            Err(e) => panic!("{e}"),
        }
    }
}

// ---- get_by ----

#[test]
fn get_by_finds_the_live_row_among_delete_marked_entries() {
    let (_d, db) = fresh();
    let t = db.table("books").unwrap();
    let pk = |id: u64| [Value::UInt(id)];
    t.insert(&book(1, "A", "ann", 1)).unwrap();
    t.insert(&book(2, "B", "bob", 2)).unwrap();
    // Row 1's key changes twice (A -> C -> A: the A entry is marked, then un-marked), then
    // the row is deleted (A marked again) and row 3 takes A.
    let set_isbn = |id: u64, to: &str| {
        let r = t.update_columns(pk(id), &[("isbn", Value::text(to))]);
        assert!(r.unwrap(), "row {id} exists");
    };
    set_isbn(1, "C");
    assert_eq!(t.get_by("by_isbn", isbn("A")).unwrap(), None);
    assert_eq!(
        t.get_by("by_isbn", isbn("C")).unwrap(),
        Some(book(1, "C", "ann", 1))
    );
    set_isbn(1, "A");
    assert_eq!(
        t.get_by("by_isbn", isbn("A")).unwrap(),
        Some(book(1, "A", "ann", 1))
    );
    assert_eq!(t.get_by("by_isbn", isbn("C")).unwrap(), None);
    assert!(t.delete(pk(1)).unwrap());
    assert_eq!(t.get_by("by_isbn", isbn("A")).unwrap(), None);
    t.insert(&book(3, "A", "cy", 3)).unwrap();
    assert_eq!(
        t.get_by("by_isbn", isbn("A")).unwrap(),
        Some(book(3, "A", "cy", 3))
    );

    // Two delete-marked entries and a live one with key D, in primary key order: row 4
    // (deleted), row 5 (moved on to E), row 6 (live).
    t.insert(&book(4, "D", "dee", 4)).unwrap();
    assert!(t.delete(pk(4)).unwrap());
    t.insert(&book(5, "D", "eve", 5)).unwrap();
    set_isbn(5, "E");
    t.insert(&book(6, "D", "fay", 6)).unwrap();

    // Every writer has committed, so every leaf is seen: the two marked entries are skipped
    // from the leaf alone, and only the live one reads its row.
    let before = sec_reads(&db);
    assert_eq!(
        t.get_by("by_isbn", isbn("D")).unwrap(),
        Some(book(6, "D", "fay", 6))
    );
    let after = sec_reads(&db);
    assert_eq!((after.0 - before.0, after.1 - before.1), (1, 2));
    // Asking only for the primary key is answered from the entry: no clustered read.
    assert_eq!(
        t.get_by_columns("by_isbn", isbn("D"), &["stock", "id", "isbn"])
            .unwrap(),
        Some(vec![Value::UInt(6), Value::UInt(6), Value::text("D")])
    );
    assert_eq!(
        t.get_by_columns("by_isbn", isbn("D"), &["id", "isbn"])
            .unwrap(),
        Some(vec![Value::UInt(6), Value::text("D")])
    );
    let last = sec_reads(&db);
    assert_eq!((last.0 - after.0, last.1 - after.1), (1, 5));
    assert_eq!(
        t.get_by("by_isbn", isbn("E")).unwrap(),
        Some(book(5, "E", "eve", 5))
    );
    assert_eq!(t.get_by("by_isbn", isbn("Z")).unwrap(), None);
    db.check().unwrap();

    // Once purged, the marked entries are gone and the answers stay.
    db.purge().unwrap();
    let before = sec_reads(&db);
    assert_eq!(
        t.get_by("by_isbn", isbn("D")).unwrap(),
        Some(book(6, "D", "fay", 6))
    );
    let after = sec_reads(&db);
    assert_eq!((after.0 - before.0, after.1 - before.1), (1, 0));
    assert_eq!(
        t.get_by("by_isbn", isbn("A")).unwrap(),
        Some(book(3, "A", "cy", 3))
    );
    db.check().unwrap();
}

#[test]
fn get_by_in_an_old_read_view_finds_the_row_by_its_old_key() {
    let (_d, db) = fresh();
    let t = db.table("books").unwrap();
    t.insert(&book(1, "A", "ann", 1)).unwrap();
    let old = db.begin().unwrap();
    assert_eq!(
        old.get_by(&t, "by_isbn", isbn("A")).unwrap(),
        Some(book(1, "A", "ann", 1))
    );
    // Committed after the old view was taken: A moves to B and back, the row is deleted,
    // and a new row takes A.
    t.update_columns(
        &[Value::UInt(1)],
        &[("isbn", Value::text("B")), ("stock", Value::UInt(9))],
    )
    .unwrap();
    assert_eq!(old.get_by(&t, "by_isbn", isbn("B")).unwrap(), None);
    t.update_columns(&[Value::UInt(1)], &[("isbn", Value::text("A"))])
        .unwrap();
    t.delete(&[Value::UInt(1)]).unwrap();
    t.insert(&book(2, "A", "bob", 2)).unwrap();
    // The old view sees row 1 as it was (rebuilt from undo), not row 2.
    assert_eq!(
        old.get_by(&t, "by_isbn", isbn("A")).unwrap(),
        Some(book(1, "A", "ann", 1))
    );
    assert_eq!(
        old.get_by_columns(&t, "by_isbn", isbn("A"), &["id"])
            .unwrap(),
        Some(vec![Value::UInt(1)])
    );
    assert_eq!(old.get_by(&t, "by_isbn", isbn("B")).unwrap(), None);
    old.commit().unwrap();
    assert_eq!(
        t.get_by("by_isbn", isbn("A")).unwrap(),
        Some(book(2, "A", "bob", 2))
    );

    // An uncommitted change: its writer sees it, others do not.
    let mut writer = db.begin().unwrap();
    assert!(
        writer
            .update_columns(&t, &[Value::UInt(2)], &[("isbn", Value::text("Z"))])
            .unwrap()
    );
    assert_eq!(
        writer.get_by(&t, "by_isbn", isbn("Z")).unwrap(),
        Some(book(2, "Z", "bob", 2))
    );
    assert_eq!(writer.get_by(&t, "by_isbn", isbn("A")).unwrap(), None);
    assert_eq!(
        t.get_by("by_isbn", isbn("A")).unwrap(),
        Some(book(2, "A", "bob", 2))
    );
    assert_eq!(t.get_by("by_isbn", isbn("Z")).unwrap(), None);
    writer.rollback().unwrap();
    assert_eq!(
        t.get_by("by_isbn", isbn("A")).unwrap(),
        Some(book(2, "A", "bob", 2))
    );
    assert_eq!(t.get_by("by_isbn", isbn("Z")).unwrap(), None);
    db.check().unwrap();
}

#[test]
fn get_by_refuses_what_cannot_name_one_row() {
    let (_d, db) = fresh();
    let t = db.table("books").unwrap();
    t.insert(&book(1, "A", "ann", 1)).unwrap();
    let e = t.get_by("by_author", &[Value::text("ann")]).unwrap_err();
    assert!(
        matches!(&e, Error::NotUniqueKey { index, .. } if index == "by_author"),
        "{e}"
    );
    let e = t.get_by("nope", isbn("A")).unwrap_err();
    assert!(
        matches!(&e, Error::NoSuchIndex { index, .. } if index == "nope"),
        "{e}"
    );
    let e = t
        .get_by("by_isbn", &[Value::text("A"), Value::UInt(1)])
        .unwrap_err();
    assert!(
        matches!(&e, Error::TypeMismatch { reason, .. } if reason.contains("by_isbn")),
        "{e}"
    );
    let e = t.get_by("by_isbn", &[Value::Int(-1)]).unwrap_err();
    assert!(
        matches!(&e, Error::TypeMismatch { column, reason, .. }
            if column == "isbn" && reason.contains("by_isbn")),
        "{e}"
    );
    let e = t
        .get_by("by_isbn", &[Value::text("fourteen chars")])
        .unwrap_err();
    assert!(matches!(&e, Error::TypeMismatch { .. }), "{e}");
    let e = t.get_by("by_isbn", &[Value::Null]).unwrap_err();
    assert!(
        matches!(&e, Error::TypeMismatch { .. }),
        "a NOT NULL column: {e}"
    );
    // Where the column may be NULL, any number of rows may have NULL: no one row to find.
    let u = db
        .create_table(
            TableDef::new("users")
                .column(ColumnDef::new("id", ColumnType::U64))
                .column(ColumnDef::nullable("email", ColumnType::Var(20)))
                .primary_key(&["id"])
                .index(IndexDef::unique("by_email", &["email"])),
        )
        .unwrap();
    u.insert(&[Value::UInt(1), Value::Null]).unwrap();
    u.insert(&[Value::UInt(2), Value::Null]).unwrap();
    let e = u.get_by("by_email", &[Value::Null]).unwrap_err();
    assert!(
        matches!(&e, Error::NotUniqueKey { index, .. } if index == "by_email"),
        "{e}"
    );
    let e = t
        .get_by_columns("by_isbn", isbn("A"), &["price"])
        .unwrap_err();
    assert!(matches!(&e, Error::NoSuchColumn { .. }), "{e}");
}

#[test]
fn get_by_for_update_locks_the_row_and_the_key() {
    let (_d, db) = fresh();
    let t = db.table("books").unwrap();
    t.insert(&book(1, "A", "ann", 5)).unwrap();
    let mut tx = db.begin().unwrap();
    assert_eq!(
        tx.get_by_for_update(&t, "by_isbn", isbn("A")).unwrap(),
        Some(book(1, "A", "ann", 5))
    );
    assert_eq!(
        tx.get_by_for_update(&t, "by_isbn", isbn("Q")).unwrap(),
        None
    );
    // The row cannot change, nor a missing key be taken, until tx ends.
    let e = t
        .update_columns(&[Value::UInt(1)], &[("stock", Value::UInt(0))])
        .unwrap_err();
    assert!(matches!(e, Error::LockWaitTimeout { .. }), "{e}");
    let e = t.insert(&book(2, "Q", "bob", 1)).unwrap_err();
    assert!(matches!(e, Error::LockWaitTimeout { .. }), "{e}");
    // Another row may not take the key either; it may take any other.
    t.insert(&book(3, "R", "cy", 1)).unwrap();
    let e = t
        .update_columns(&[Value::UInt(3)], &[("isbn", Value::text("Q"))])
        .unwrap_err();
    assert!(matches!(e, Error::LockWaitTimeout { .. }), "{e}");
    t.update_columns(&[Value::UInt(3)], &[("isbn", Value::text("S"))])
        .unwrap();
    // Its own reads go on: the latest version, with its own changes.
    assert!(
        tx.update_columns(&t, &[Value::UInt(1)], &[("stock", Value::UInt(4))])
            .unwrap()
    );
    assert_eq!(
        tx.get_by_for_update(&t, "by_isbn", isbn("A")).unwrap(),
        Some(book(1, "A", "ann", 4))
    );
    let e = tx
        .get_by_for_update(&t, "by_author", &[Value::text("ann")])
        .unwrap_err();
    assert!(matches!(e, Error::NotUniqueKey { .. }), "{e}");
    tx.commit().unwrap();
    t.insert(&book(2, "Q", "bob", 1)).unwrap();
    assert_eq!(
        t.get_by("by_isbn", isbn("A")).unwrap(),
        Some(book(1, "A", "ann", 4))
    );
    db.check().unwrap();
}

#[test]
fn get_by_for_update_waits_for_an_uncommitted_delete_of_its_row() {
    let (_d, db) = fresh();
    let t = db.table("books").unwrap();
    t.insert(&book(1, "A", "ann", 5)).unwrap();
    let mut deleter = db.begin().unwrap();
    assert!(deleter.delete(&t, &[Value::UInt(1)]).unwrap());
    std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let t = db.table("books").unwrap();
            let mut tx = db.begin().unwrap();
            let row = until_granted(|| tx.get_by_for_update(&t, "by_isbn", isbn("A")));
            tx.commit().unwrap();
            row
        });
        while db.lock_stats().unwrap().waiting == 0 {
            std::thread::yield_now();
        }
        // The delete is undone: the entry is live again, and the row is the answer.
        deleter.rollback().unwrap();
        assert_eq!(reader.join().unwrap(), Some(book(1, "A", "ann", 5)));
    });
    // Deleted for real, the key finds nothing.
    assert!(t.delete(&[Value::UInt(1)]).unwrap());
    let mut tx = db.begin().unwrap();
    assert_eq!(
        tx.get_by_for_update(&t, "by_isbn", isbn("A")).unwrap(),
        None
    );
    tx.commit().unwrap();
    db.check().unwrap();
}

// ---- update_columns ----

#[test]
fn update_columns_changes_only_the_named_columns_and_keeps_indexes_consistent() {
    let (_d, db) = fresh();
    let t = db.table("books").unwrap();
    t.insert(&book(1, "A", "ann", 5)).unwrap();
    t.insert(&book(2, "B", "bob", 7)).unwrap();
    let one = [Value::UInt(1)];
    let d = t
        .update_columns(
            &one,
            &[("stock", Value::UInt(4)), ("author", Value::text("amy"))],
        )
        .unwrap();
    assert!(d);
    assert_eq!(t.get(&one).unwrap(), Some(book(1, "A", "amy", 4)));
    // The non-unique index moved with the change.
    let amy = std::ops::Bound::Included(vec![Value::text("amy")]);
    let by_amy: Vec<_> = t
        .scan_index(
            "by_author",
            minnow::Scan::range(amy.clone(), amy).columns(&["id"]),
        )
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(by_amy, [vec![Value::UInt(1)]]);
    // A unique key taken by another row: nothing changes.
    let e = t
        .update_columns(
            &one,
            &[("stock", Value::UInt(0)), ("isbn", Value::text("B"))],
        )
        .unwrap_err();
    assert!(
        matches!(&e, Error::DuplicateKey { index, .. } if index == "by_isbn"),
        "{e}"
    );
    assert_eq!(t.get(&one).unwrap(), Some(book(1, "A", "amy", 4)));
    // A missing row, and the typed refusals, which write nothing.
    assert!(
        !t.update_columns(&[Value::UInt(9)], &[("stock", Value::UInt(1))])
            .unwrap()
    );
    let e = t
        .update_columns(&one, &[("price", Value::UInt(1))])
        .unwrap_err();
    assert!(
        matches!(&e, Error::NoSuchColumn { column, .. } if column == "price"),
        "{e}"
    );
    let e = t
        .update_columns(&one, &[("id", Value::UInt(3))])
        .unwrap_err();
    assert!(
        matches!(&e, Error::PrimaryKeyUpdate { column, .. } if column == "id"),
        "{e}"
    );
    let e = t
        .update_columns(
            &one,
            &[("stock", Value::UInt(3)), ("author", Value::Int(1))],
        )
        .unwrap_err();
    assert!(
        matches!(&e, Error::TypeMismatch { column, .. } if column == "author"),
        "{e}"
    );
    let e = t
        .update_columns(&one, &[("stock", Value::UInt(1 << 40))])
        .unwrap_err();
    assert!(
        matches!(&e, Error::TypeMismatch { column, .. } if column == "stock"),
        "{e}"
    );
    assert_eq!(t.get(&one).unwrap(), Some(book(1, "A", "amy", 4)));
    // Setting what is there already writes nothing, and says the row exists.
    let writes = db.status().unwrap().rows.updated;
    assert!(
        t.update_columns(&one, &[("stock", Value::UInt(4))])
            .unwrap()
    );
    assert_eq!(db.status().unwrap().rows.updated, writes + 1);
    db.check().unwrap();
}

#[test]
fn update_columns_waits_for_the_rows_lock_and_writes_over_the_latest_version() {
    let (_d, db) = fresh();
    let t = db.table("books").unwrap();
    t.insert(&book(1, "A", "ann", 5)).unwrap();
    let one = [Value::UInt(1)];
    // A holder that changed the row and has not committed.
    let mut holder = db.begin().unwrap();
    assert!(
        holder
            .update_columns(&t, &one, &[("stock", Value::UInt(10))])
            .unwrap()
    );
    // A statement that cannot get the lock times out, changing nothing.
    let e = t
        .update_columns(&one, &[("isbn", Value::text("X"))])
        .unwrap_err();
    assert!(matches!(e, Error::LockWaitTimeout { .. }), "{e}");
    assert_eq!(t.get_by("by_isbn", isbn("X")).unwrap(), None);
    std::thread::scope(|s| {
        let waiter = s.spawn(|| {
            let t = db.table("books").unwrap();
            until_granted(|| t.update_columns(&one, &[("isbn", Value::text("X"))]))
        });
        while db.lock_stats().unwrap().waiting == 0 {
            std::thread::yield_now();
        }
        holder.commit().unwrap();
        assert!(waiter.join().unwrap());
    });
    // The waiter wrote its column over the holder's committed stock, not over the 5 it
    // could have read before.
    assert_eq!(t.get(&one).unwrap(), Some(book(1, "X", "ann", 10)));
    assert_eq!(
        t.get_by("by_isbn", isbn("X")).unwrap(),
        Some(book(1, "X", "ann", 10))
    );
    assert_eq!(t.get_by("by_isbn", isbn("A")).unwrap(), None);
    db.check().unwrap();
}

#[test]
fn update_columns_in_a_transaction_reads_past_its_snapshot() {
    let (_d, db) = fresh();
    let t = db.table("books").unwrap();
    t.insert(&book(1, "A", "ann", 5)).unwrap();
    let one = [Value::UInt(1)];
    let mut tx = db.begin().unwrap();
    assert_eq!(tx.get(&t, &one).unwrap(), Some(book(1, "A", "ann", 5)));
    // Committed after the transaction's view: a whole-row update built from the snapshot
    // would put the 5 back.
    t.update_columns(&one, &[("stock", Value::UInt(4))])
        .unwrap();
    assert!(
        tx.update_columns(&t, &one, &[("author", Value::text("amy"))])
            .unwrap()
    );
    assert!(
        !tx.update_columns(&t, &[Value::UInt(2)], &[("stock", Value::UInt(1))])
            .unwrap()
    );
    tx.commit().unwrap();
    assert_eq!(t.get(&one).unwrap(), Some(book(1, "A", "amy", 4)));
    db.check().unwrap();
}

// ---- insert_returning_id ----

#[test]
fn insert_returning_id_inside_a_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        autoinc_lock_mode: AutoIncLockMode::Consecutive,
        ..Config::default()
    };
    let db = Database::create(dir.path(), config).unwrap();
    let orders = db
        .create_table(
            TableDef::new("orders")
                .column(ColumnDef::new("id", ColumnType::U64).auto_increment())
                .column(ColumnDef::new("book", ColumnType::U64))
                .primary_key(&["id"]),
        )
        .unwrap();
    let mut tx = db.begin().unwrap();
    let a = tx
        .insert_returning_id(&orders, &[Value::Null, Value::UInt(7)])
        .unwrap();
    assert_eq!((a.rows, a.id()), (1, Some(1)));
    let b = tx
        .insert_returning_id(&orders, &[Value::UInt(0), Value::UInt(8)])
        .unwrap();
    assert_eq!(b.id(), Some(2));
    let own = tx
        .insert_returning_id(&orders, &[Value::UInt(10), Value::UInt(9)])
        .unwrap();
    assert_eq!((own.id(), own.generated.len()), (None, 0));
    // The transaction sees its rows under the ids it was told.
    assert_eq!(
        tx.get(&orders, &[Value::UInt(2)]).unwrap(),
        Some(vec![Value::UInt(2), Value::UInt(8)])
    );
    assert_eq!(tx.commit().unwrap(), Durability::Synced);
    // A rolled-back insert's id is not given back.
    let mut tx = db.begin().unwrap();
    let lost = tx
        .insert_returning_id(&orders, &[Value::Null, Value::UInt(1)])
        .unwrap();
    assert_eq!(lost.id(), Some(11));
    tx.rollback().unwrap();
    let next = orders
        .insert_returning_id(&[Value::Null, Value::UInt(1)])
        .unwrap();
    assert_eq!(next.id(), Some(12));
    assert_eq!(orders.count().unwrap(), 4);
    db.check().unwrap();
}

// ---- Durability per transaction, and sync ----

/// On the crash simulator, with nothing that would sync the log behind the test's back: no
/// page cleaner, no purge, and the background flusher (when one runs) at its longest
/// interval.
fn crash_config(backend: Arc<dyn Backend>, policy: FlushAtCommit) -> Config {
    Config {
        io_backend: IoBackend::Custom(backend),
        flush_log_at_trx_commit: policy,
        flush_log_at_timeout: Duration::from_secs(2700),
        page_cleaners: 0,
        purge_threads: 0,
        ..Config::default()
    }
}

/// Creates a database with table `t(id)` on a fresh crash simulator, synced.
fn crash_db(policy: FlushAtCommit) -> (tempfile::TempDir, Arc<CrashSim>, Database) {
    let dir = tempfile::tempdir().unwrap();
    let sim = Arc::new(CrashSim::new(Arc::new(SyncBackend::new())));
    let backend: Arc<dyn Backend> = sim.clone();
    let db = Database::create(dir.path(), crash_config(backend, policy)).unwrap();
    db.create_table(
        TableDef::new("t")
            .column(ColumnDef::new("id", ColumnType::U64))
            .primary_key(&["id"]),
    )
    .unwrap();
    db.sync().unwrap();
    (dir, sim, db)
}

/// Commits a transaction inserting `id` at `level` (`None`: plain `commit`).
fn commit_one(db: &Database, id: u64, level: Option<FlushAtCommit>) -> Durability {
    let t = db.table("t").unwrap();
    let mut tx = db.begin().unwrap();
    tx.insert(&t, &[Value::UInt(id)]).unwrap();
    match level {
        Some(level) => tx.commit_with(level).unwrap(),
        None => tx.commit().unwrap(),
    }
}

/// Cuts the power (the database is dropped after it, so its shutdown writes nothing),
/// reopens, and returns the ids the table holds.
fn after_power_cut(
    dir: &tempfile::TempDir,
    sim: Arc<CrashSim>,
    db: Database,
    policy: FlushAtCommit,
    seed: u64,
) -> Vec<u64> {
    sim.power_cut(seed).unwrap();
    drop(db);
    let db = Database::open(dir.path(), crash_config(sim, policy)).unwrap();
    let t = db.table("t").unwrap();
    let ids = t
        .scan(minnow::Scan::all())
        .unwrap()
        .map(|r| match r.unwrap()[..] {
            [Value::UInt(id)] => id,
            ref other => panic!("unexpected row {other:?}"),
        })
        .collect();
    db.check().unwrap();
    db.close().unwrap();
    ids
}

#[test]
fn commit_with_lazy_under_a_syncing_database_loses_only_itself_in_a_power_cut() {
    for seed in 0..3 {
        let (dir, sim, db) = crash_db(FlushAtCommit::Sync);
        assert_eq!(commit_one(&db, 1, None), Durability::Synced);
        assert_eq!(
            commit_one(&db, 2, Some(FlushAtCommit::Lazy)),
            Durability::Buffered
        );
        // Nothing has written its redo, let alone synced it.
        assert_eq!(sim.unsynced_writes(), 0);
        let ids = after_power_cut(&dir, sim, db, FlushAtCommit::Sync, seed);
        assert_eq!(
            ids,
            [1],
            "seed {seed}: the synced commit stays, the lazy one is gone"
        );
    }
}

#[test]
fn a_synced_commit_or_sync_makes_earlier_lazy_commits_durable() {
    let (dir, sim, db) = crash_db(FlushAtCommit::Sync);
    assert_eq!(
        commit_one(&db, 1, Some(FlushAtCommit::Lazy)),
        Durability::Buffered
    );
    // A sync covers every commit before it.
    assert_eq!(commit_one(&db, 2, None), Durability::Synced);
    assert_eq!(
        commit_one(&db, 3, Some(FlushAtCommit::Write)),
        Durability::Written
    );
    assert_eq!(
        commit_one(&db, 4, Some(FlushAtCommit::Lazy)),
        Durability::Buffered
    );
    let lsn = db.sync().unwrap();
    assert!(db.status().unwrap().redo.flushed_lsn >= lsn);
    assert_eq!(sim.unsynced_writes(), 0);
    assert_eq!(
        commit_one(&db, 5, Some(FlushAtCommit::Lazy)),
        Durability::Buffered
    );
    let ids = after_power_cut(&dir, sim, db, FlushAtCommit::Sync, 11);
    assert_eq!(ids, [1, 2, 3, 4]);
}

#[test]
fn commit_with_sync_under_a_lazy_database_survives_a_power_cut() {
    for seed in 0..3 {
        let (dir, sim, db) = crash_db(FlushAtCommit::Lazy);
        assert_eq!(
            commit_one(&db, 1, Some(FlushAtCommit::Sync)),
            Durability::Synced
        );
        assert_eq!(sim.unsynced_writes(), 0);
        // The database's own level for the next one: lost in the cut.
        assert_eq!(commit_one(&db, 2, None), Durability::Buffered);
        let ids = after_power_cut(&dir, sim, db, FlushAtCommit::Lazy, seed);
        assert_eq!(ids, [1], "seed {seed}");
    }
}

#[test]
fn sync_makes_lazy_autocommit_statements_durable() {
    let (dir, sim, db) = crash_db(FlushAtCommit::Lazy);
    let t = db.table("t").unwrap();
    for id in 1..=20 {
        t.insert(&[Value::UInt(id)]).unwrap();
    }
    let before = db.status().unwrap().redo;
    assert!(before.flushed_lsn < before.current_lsn);
    let lsn = db.sync().unwrap();
    assert_eq!(lsn, before.current_lsn);
    assert!(db.status().unwrap().redo.flushed_lsn >= lsn);
    // Nothing new to sync: the same answer.
    assert_eq!(db.sync().unwrap(), lsn);
    t.insert(&[Value::UInt(21)]).unwrap();
    drop(t);
    let ids = after_power_cut(&dir, sim, db, FlushAtCommit::Lazy, 5);
    assert_eq!(ids, (1..=20).collect::<Vec<_>>());
}

#[test]
fn a_lazy_commit_under_a_syncing_database_is_synced_by_the_flusher_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Arc::new(CrashSim::new(Arc::new(SyncBackend::new())));
    let backend: Arc<dyn Backend> = sim.clone();
    let config = Config {
        flush_log_at_timeout: Duration::from_millis(10),
        ..crash_config(Arc::clone(&backend), FlushAtCommit::Sync)
    };
    let db = Database::create(dir.path(), config.clone()).unwrap();
    db.create_table(
        TableDef::new("t")
            .column(ColumnDef::new("id", ColumnType::U64))
            .primary_key(&["id"]),
    )
    .unwrap();
    commit_one(&db, 1, Some(FlushAtCommit::Lazy));
    let committed = db.status().unwrap().redo.current_lsn;
    // Nothing else runs: only the flusher can sync it. (A bound against a hang, not a
    // timing claim: the interval is 10 ms.)
    let start = std::time::Instant::now();
    while db.status().unwrap().redo.flushed_lsn < committed {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the lazy commit was never synced"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(sim.unsynced_writes(), 0);
    sim.power_cut(3).unwrap();
    drop(db);
    let db = Database::open(dir.path(), config).unwrap();
    assert_eq!(
        db.table("t").unwrap().get(&[Value::UInt(1)]).unwrap(),
        Some(vec![Value::UInt(1)])
    );
    db.close().unwrap();
}
