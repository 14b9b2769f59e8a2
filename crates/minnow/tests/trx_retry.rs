//! `Database::transaction`: commit on success, a retry after a deadlock or a lock wait
//! timeout, a bounded number of them, and no retry of any other error.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use minnow::{
    ColumnDef, ColumnType, Config, Database, Error, Isolation, MIN_LOG_FILE_SIZE,
    TRANSACTION_RETRIES, TableDef, TransactionOptions, Value,
};

fn config(lock_wait_timeout: Duration) -> Config {
    Config {
        buffer_pool_size: 8 << 20,
        log_file_size: 16 * MIN_LOG_FILE_SIZE,
        lock_wait_timeout,
        // No purge thread: its row locks would show in `lock_stats().held`.
        purge_threads: 0,
        ..Config::default()
    }
}

fn setup(lock_wait_timeout: Duration) -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config(lock_wait_timeout)).unwrap();
    let t = db
        .create_table(
            TableDef::new("acct")
                .column(ColumnDef::new("id", ColumnType::U64))
                .column(ColumnDef::new("v", ColumnType::I64))
                .primary_key(&["id"]),
        )
        .unwrap();
    for id in 1..=2 {
        t.insert(&row(id, 0)).unwrap();
    }
    (dir, db)
}

fn row(id: u64, v: i64) -> Vec<Value> {
    vec![Value::UInt(id), Value::Int(v)]
}

#[test]
fn a_deadlock_victim_runs_again_and_both_commit() {
    // Long enough that the waits end in the deadlock, never in a timeout.
    let (_dir, db) = setup(Duration::from_secs(60));
    let both_locked_one = Arc::new(Barrier::new(2));
    let runs: Vec<Arc<AtomicU32>> = (0..2).map(|_| Arc::default()).collect();
    let threads: Vec<_> = [(1u64, 2u64), (2, 1)]
        .into_iter()
        .enumerate()
        .map(|(n, (first, second))| {
            let (db, barrier, runs) = (
                db.clone(),
                Arc::clone(&both_locked_one),
                Arc::clone(&runs[n]),
            );
            std::thread::spawn(move || {
                let t = db.table("acct").unwrap();
                db.transaction(|tx| {
                    let run = runs.fetch_add(1, Ordering::SeqCst) + 1;
                    tx.update(&t, &row(first, n as i64 + 10))?;
                    if run == 1 {
                        // Each holds one row and then asks for the other's: a cycle.
                        barrier.wait();
                    }
                    tx.update(&t, &row(second, n as i64 + 10))?;
                    Ok(run)
                })
            })
        })
        .collect();
    let mut finished_on: Vec<u32> = threads
        .into_iter()
        .map(|t| t.join().unwrap().unwrap())
        .collect();
    finished_on.sort();
    assert_eq!(
        finished_on,
        [1, 2],
        "one thread ran once, the deadlock victim twice"
    );
    assert_eq!(db.lock_stats().unwrap().deadlocks, 1);
    // The transaction that committed last wrote both rows.
    let t = db.table("acct").unwrap();
    let a = t.get(&[Value::UInt(1)]).unwrap().unwrap();
    let b = t.get(&[Value::UInt(2)]).unwrap().unwrap();
    assert_eq!(a[1], b[1]);
    db.check().unwrap();
}

#[test]
fn lock_wait_timeouts_are_retried_a_bounded_number_of_times() {
    let (_dir, db) = setup(Duration::from_millis(20));
    let t = db.table("acct").unwrap();
    // Holds row 1 for the whole test.
    let mut holder = db.begin().unwrap();
    holder.update(&t, &row(1, 99)).unwrap();
    let runs = AtomicU32::new(0);
    let r = db.transaction_with(Isolation::ReadCommitted, |tx| {
        runs.fetch_add(1, Ordering::SeqCst);
        tx.update(&t, &row(2, 5))?;
        tx.update(&t, &row(1, 5))
    });
    assert!(matches!(r, Err(Error::LockWaitTimeout { .. })), "{r:?}");
    assert!(r.unwrap_err().is_retryable());
    assert_eq!(runs.load(Ordering::SeqCst), 1 + TRANSACTION_RETRIES);
    holder.rollback().unwrap();
    // Every run was rolled back, row 2 included.
    assert_eq!(t.get(&[Value::UInt(2)]).unwrap(), Some(row(2, 0)));
    assert_eq!(t.get(&[Value::UInt(1)]).unwrap(), Some(row(1, 0)));
}

#[test]
fn the_retry_limit_is_the_callers() {
    let (_dir, db) = setup(Duration::from_millis(5));
    let t = db.table("acct").unwrap();
    let mut holder = db.begin().unwrap();
    holder.update(&t, &row(1, 99)).unwrap();
    for limit in [0, 1, 6] {
        let runs = AtomicU32::new(0);
        let opts = TransactionOptions::default().retries(limit);
        let r = db.transaction_with(opts, |tx| {
            runs.fetch_add(1, Ordering::SeqCst);
            tx.update(&t, &row(1, 5))
        });
        assert!(matches!(r, Err(Error::LockWaitTimeout { .. })), "{r:?}");
        assert_eq!(runs.load(Ordering::SeqCst), 1 + limit, "retries({limit})");
    }
    holder.rollback().unwrap();
    // With the row free, the first run commits.
    let opts = TransactionOptions::from(Isolation::ReadCommitted).retries(0);
    db.transaction_with(opts, |tx| tx.update(&t, &row(1, 7)))
        .unwrap();
    assert_eq!(t.get(&[Value::UInt(1)]).unwrap(), Some(row(1, 7)));
}

#[test]
fn other_errors_are_returned_at_once_and_roll_back() {
    let (_dir, db) = setup(Duration::from_secs(60));
    let t = db.table("acct").unwrap();
    let runs = AtomicU32::new(0);
    let r: minnow::Result<()> = db.transaction(|tx| {
        runs.fetch_add(1, Ordering::SeqCst);
        tx.insert(&t, &row(3, 3))?;
        tx.insert(&t, &row(1, 1)) // a duplicate key
    });
    let e = r.unwrap_err();
    assert!(matches!(e, Error::DuplicateKey { .. }), "{e}");
    assert!(!e.is_retryable());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(t.get(&[Value::UInt(3)]).unwrap(), None);
    assert_eq!(db.lock_stats().unwrap().held, 0, "the transaction ended");
    // The closure's own error type comes back as it is, once.
    let runs = AtomicU32::new(0);
    let r: minnow::Result<()> = db.transaction(|_| {
        runs.fetch_add(1, Ordering::SeqCst);
        Err(Error::TransactionEnded)
    });
    assert!(matches!(r, Err(Error::TransactionEnded)));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn a_successful_closure_commits_and_returns_its_value() {
    let (_dir, db) = setup(Duration::from_secs(60));
    let t = db.table("acct").unwrap();
    let total = db
        .transaction(|tx| {
            tx.update(&t, &row(1, 40))?;
            tx.update(&t, &row(2, 2))?;
            let mut sum = 0;
            for r in tx.scan(&t, minnow::Scan::all())? {
                if let Value::Int(v) = r?[1] {
                    sum += v;
                }
            }
            Ok(sum)
        })
        .unwrap();
    assert_eq!(total, 42);
    assert_eq!(t.get(&[Value::UInt(1)]).unwrap(), Some(row(1, 40)));
    assert_eq!(db.lock_stats().unwrap().held, 0);
}
