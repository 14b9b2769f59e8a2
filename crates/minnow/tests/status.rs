//! `Database::status` and the status file: the counters move with the work done, and the
//! file appears while the database runs and goes away at close.

use std::time::Duration;

use minnow::inspect::Internals;
use minnow::{ColumnDef, ColumnType, Config, Database, STATUS_FILE, Scan, TableDef, Value};

fn table(db: &Database) -> minnow::Table {
    db.create_table(
        TableDef::new("t")
            .column(ColumnDef::new("id", ColumnType::U64))
            .column(ColumnDef::new("v", ColumnType::Var(16)))
            .primary_key(&["id"]),
    )
    .unwrap()
}

#[test]
fn counters_follow_the_work() {
    let dir = tempfile::tempdir().unwrap();
    // No background purge: its mtrs would move the LSNs and dirty pages under the asserts.
    let config = Config {
        purge_threads: 0,
        ..Config::default()
    };
    let db = Database::create(dir.path(), config).unwrap();
    let before = db.status().unwrap();
    let t = table(&db);
    for i in 0..50u64 {
        t.insert(&[Value::UInt(i), Value::text("x")]).unwrap();
    }
    assert!(t.get(&[Value::UInt(3)]).unwrap().is_some());
    assert!(t.get(&[Value::UInt(999)]).unwrap().is_none());
    assert_eq!(t.scan(Scan::all().limit(10)).unwrap().count(), 10);
    t.update(&[Value::UInt(4), Value::text("y")]).unwrap();
    t.delete(&[Value::UInt(5)]).unwrap();
    let s = db.status().unwrap();
    assert_eq!(s.rows.inserted, 50);
    assert_eq!(s.rows.read, 11, "one get that found its row, ten scanned");
    assert_eq!(s.rows.updated, 1);
    assert_eq!(s.rows.deleted, 1);
    // Every statement appended redo and (flush_log_at_trx_commit = 1) synced it.
    assert!(s.redo.current_lsn > before.redo.current_lsn);
    assert_eq!(s.redo.flushed_lsn, s.redo.current_lsn);
    assert!(s.redo.mtr_commits >= 52);
    assert_eq!(
        s.redo.checkpoint_age,
        s.redo.current_lsn - s.redo.checkpoint_lsn
    );
    assert!(s.redo.checkpoint_age < s.redo.capacity);
    let b = &s.buffer_pool;
    assert_eq!(b.frames, (64 << 20) / 16384);
    assert_eq!(b.young + b.old, b.lru);
    assert_eq!(
        b.lru + b.free,
        b.frames,
        "every frame is free or on the LRU"
    );
    assert!(b.hits > 0 && b.hit_rate > 0.0 && b.hit_rate <= 1.0);
    assert!(b.dirty > 0, "the inserts dirtied pages nobody flushed yet");
    assert!(s.not_built.is_empty());
    let x = &s.transactions;
    assert_eq!((x.active, x.open_views, x.history_len), (0, 0, 2), "{x:?}");
    assert!(
        x.next_trx_id > 52 && x.undo_pages >= 1 && !x.purge_running,
        "{x:?}"
    );
    // The point get went through the adaptive hash index's probe (on by default).
    assert!(s.adaptive_hash_index.enabled);
    assert!(s.adaptive_hash_index.memory_limit > 0);
    // Flushing writes the dirty pages through the doublewrite buffer.
    db.buffer_pool().unwrap().flush_all().unwrap();
    let f = db.status().unwrap();
    assert_eq!(f.buffer_pool.dirty, 0);
    assert!(f.buffer_pool.writes >= b.dirty);
    let d = f.doublewrite.expect("doublewrite is on by default");
    assert!(d.batches >= 1 && d.pages >= b.dirty);
    // Purge takes the update's and the delete's logs off the history list.
    db.purge().unwrap();
    let x = db.status().unwrap().transactions;
    assert_eq!(
        (x.history_len, x.purge_logs, x.purge_records),
        (0, 2, 2),
        "{x:?}"
    );
    assert_eq!(x.purge_clustered_removed, 1, "{x:?}");
    db.close().unwrap();
}

#[test]
fn transactional_writes_are_counted_like_autocommit_ones() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        purge_threads: 0,
        ..Config::default()
    };
    let db = Database::create(dir.path(), config).unwrap();
    let t = table(&db);
    let mut tx = db.begin().unwrap();
    for i in 0..5u64 {
        tx.insert(&t, &[Value::UInt(i), Value::text("x")]).unwrap();
    }
    tx.update(&t, &[Value::UInt(1), Value::text("y")]).unwrap();
    assert!(
        tx.update_columns(&t, &[Value::UInt(2)], &[("v", Value::text("z"))])
            .unwrap()
    );
    assert!(
        !tx.update_columns(&t, &[Value::UInt(9)], &[("v", Value::text("z"))])
            .unwrap()
    );
    assert!(tx.delete(&t, &[Value::UInt(3)]).unwrap());
    assert!(!tx.delete(&t, &[Value::UInt(9)]).unwrap());
    tx.commit().unwrap();
    let s = db.status().unwrap();
    assert_eq!(s.rows.inserted, 5);
    assert_eq!(
        s.rows.updated, 2,
        "a row update and a column update; a missing row is none"
    );
    assert_eq!(s.rows.deleted, 1, "a missing row deletes nothing");
}

#[test]
fn no_doublewrite_section_when_off() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        doublewrite: minnow::DoublewriteMode::Off,
        ..Config::default()
    };
    let db = Database::create(dir.path(), config).unwrap();
    let s = db.status().unwrap();
    assert!(s.doublewrite.is_none());
    assert!(!s.to_json(None).contains("doublewrite"));
}

#[test]
fn status_file_lives_while_the_database_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(STATUS_FILE);
    let config = Config {
        status_file: Some(Duration::from_millis(20)),
        ..Config::default()
    };
    let db = Database::create(dir.path(), config.clone()).unwrap();
    let first = std::fs::read_to_string(&path).unwrap();
    assert!(first.contains("\"format\": \"minnow-status\""), "{first}");
    assert!(first.contains("\"interval_ms\": 20"), "{first}");
    let t = table(&db);
    t.insert(&[Value::UInt(1), Value::text("x")]).unwrap();
    // The thread rewrites the file: wait (bounded) until a snapshot counts the insert.
    let mut seen = false;
    for _ in 0..500 {
        let now = std::fs::read_to_string(&path).unwrap_or_default();
        if now.contains("\"inserted\": 1") {
            seen = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(seen, "the status file never showed the insert");
    db.close().unwrap();
    assert!(!path.exists(), "close removes the status file");
    // Reopening starts it again.
    let db = Database::open(dir.path(), config).unwrap();
    assert!(path.exists());
    drop(db);
    assert!(!path.exists(), "drop removes it too");
}

#[test]
fn a_too_short_interval_is_refused() {
    let config = Config {
        status_file: Some(Duration::from_millis(1)),
        ..Config::default()
    };
    let err = config.validate().unwrap_err().to_string();
    assert!(err.contains("innodb_status_file"), "{err}");
}

/// The TRANSACTIONS section with many transactions open, each holding row locks, and one
/// waiting: counted exactly (the counts are counters kept where transactions and locks come
/// and go, not a walk), and back to zero once they end.
#[test]
fn open_transactions_and_their_locks_are_counted() {
    const OPEN: u64 = 25;
    const LOCKS: u64 = 3;
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        purge_threads: 0,
        lock_wait_timeout: Duration::from_secs(600),
        ..Config::default()
    };
    let db = Database::create(dir.path(), config).unwrap();
    let t = table(&db);
    for i in 0..OPEN * LOCKS {
        t.insert(&[Value::UInt(i), Value::text("x")]).unwrap();
    }
    let mut open = Vec::new();
    for n in 0..OPEN {
        let mut tx = db.begin().unwrap();
        for k in 0..LOCKS {
            tx.update(&t, &[Value::UInt(n * LOCKS + k), Value::text("y")])
                .unwrap();
        }
        open.push(tx);
    }
    let s = db.status().unwrap().transactions;
    assert_eq!((s.active, s.row_locks), (OPEN, OPEN * LOCKS), "{s:?}");
    assert_eq!((s.lock_waiting, s.lock_waits, s.deadlocks), (0, 0, 0));
    let json = db.status().unwrap().to_json(None);
    assert!(
        json.contains(&format!("\"row_locks\": {}", OPEN * LOCKS)),
        "{json}"
    );

    // One more transaction waits for the first one's row.
    let waiter = {
        let (db, t) = (db.clone(), t.clone());
        std::thread::spawn(move || {
            let mut tx = db.begin().unwrap();
            tx.update(&t, &[Value::UInt(0), Value::text("z")]).unwrap();
            tx.commit().unwrap();
        })
    };
    // Polled, not timed: the waiter shows up as waiting once it has queued.
    while db.status().unwrap().transactions.lock_waiting == 0 {
        assert!(!waiter.is_finished(), "the waiter did not wait");
        std::thread::sleep(Duration::from_millis(1));
    }
    let s = db.status().unwrap().transactions;
    assert_eq!((s.active, s.lock_waiting, s.lock_waits), (OPEN + 1, 1, 1));
    for (n, tx) in open.into_iter().enumerate() {
        if n % 2 == 0 {
            tx.commit().unwrap();
        } else {
            tx.rollback().unwrap();
        }
    }
    waiter.join().unwrap();
    let s = db.status().unwrap().transactions;
    assert_eq!((s.active, s.row_locks, s.lock_waiting), (0, 0, 0), "{s:?}");
    assert_eq!((s.lock_waits, s.deadlocks, s.lock_timeouts), (1, 0, 0));
    db.check().unwrap();
}
