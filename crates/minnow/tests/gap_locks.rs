//! Next-key locking: locking reads that keep inserts out of what they read under REPEATABLE
//! READ (ranges, missing keys, writes by key of missing rows), record locks only under READ
//! COMMITTED, and gap locks that follow their gap when purge or a rollback removes the record
//! they sit on.
//!
//! A wait that must happen is shown by its lock wait timeout (100 ms), a wait that must not
//! by the statement succeeding.

use std::ops::Bound;
use std::time::Duration;

use minnow::{
    ColumnDef, ColumnType, Config, Database, Error, Isolation, Scan, Table, TableDef, Value,
};

/// A database with `t(k U64 PRIMARY KEY, v I64)` holding rows `keys` (`v` = `k`).
fn create(config: Config, keys: impl IntoIterator<Item = u64>) -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config).unwrap();
    let t = db
        .create_table(
            TableDef::new("t")
                .column(ColumnDef::new("k", ColumnType::U64))
                .column(ColumnDef::new("v", ColumnType::I64))
                .primary_key(&["k"]),
        )
        .unwrap();
    for k in keys {
        t.insert(&row(k)).unwrap();
    }
    (dir, db)
}

/// Rows 10, 20, 30, lock waits of 100 ms, background purge off.
fn setup() -> (tempfile::TempDir, Database) {
    let config = Config {
        lock_wait_timeout: Duration::from_millis(100),
        purge_threads: 0,
        ..Config::default()
    };
    create(config, [10, 20, 30])
}

fn row(k: u64) -> Vec<Value> {
    vec![Value::UInt(k), Value::Int(k as i64)]
}

fn key(k: u64) -> Vec<Value> {
    vec![Value::UInt(k)]
}

/// Inserts `k` in a transaction of its own: `Ok` if it went in, else the error.
fn insert(db: &Database, t: &Table, k: u64) -> minnow::Result<()> {
    let mut tx = db.begin().unwrap();
    tx.insert(t, &row(k))?;
    tx.commit().map(|_| ())
}

fn waits(r: minnow::Result<()>) -> bool {
    match r {
        Err(Error::LockWaitTimeout { .. }) => true,
        Ok(()) => false,
        Err(e) => panic!("{e}"),
    }
}

fn range(lo: u64, hi: u64) -> Scan {
    Scan::range(Bound::Included(key(lo)), Bound::Excluded(key(hi)))
}

#[test]
fn a_locking_range_read_keeps_inserts_out_until_it_ends() {
    let (_d, db) = setup();
    let t = db.table("t").unwrap();
    let mut tx = db.begin().unwrap();
    assert_eq!(tx.scan_for_update(&t, range(15, 25)).unwrap(), [row(20)]);
    // (10, 20] and (20, 30] are locked: 30 is the first record past the range.
    for k in [11, 19, 21, 25, 29] {
        assert!(waits(insert(&db, &t, k)), "{k} went into a locked gap");
    }
    // Before 10's gap ends and after 30: free.
    insert(&db, &t, 5).unwrap();
    insert(&db, &t, 35).unwrap();
    // The records read are locked too, and so is the one past the range.
    assert!(waits(t.update(&row(20)).map(|_| ())));
    assert!(waits(t.update(&row(30)).map(|_| ())));
    t.update(&row(10)).unwrap();
    // Reading again finds no phantom.
    assert_eq!(tx.scan_for_update(&t, range(15, 25)).unwrap(), [row(20)]);
    tx.commit().unwrap();
    insert(&db, &t, 25).unwrap();
    assert_eq!(db.lock_stats().unwrap().held, 0);
}

#[test]
fn a_locking_read_to_the_end_locks_the_gap_after_the_last_record() {
    let (_d, db) = setup();
    let t = db.table("t").unwrap();
    let mut tx = db.begin().unwrap();
    let all = Scan::range(Bound::Excluded(key(10)), Bound::Unbounded);
    assert_eq!(tx.scan_for_update(&t, all).unwrap(), [row(20), row(30)]);
    assert!(waits(insert(&db, &t, 99)));
    tx.rollback().unwrap();
    insert(&db, &t, 99).unwrap();
}

#[test]
fn a_locking_read_returns_what_a_scan_would() {
    let (_d, db) = setup();
    let t = db.table("t").unwrap();
    t.delete(key(20)).unwrap();
    let mut tx = db.begin().unwrap();
    // The delete-marked 20 is locked but not returned; columns, limit and order as scan's.
    assert_eq!(
        tx.scan_for_update(&t, Scan::all()).unwrap(),
        [row(10), row(30)]
    );
    assert_eq!(
        tx.scan_for_update(&t, Scan::all().columns(&["v"]).reverse().limit(1))
            .unwrap(),
        [[Value::Int(30)]]
    );
    assert_eq!(
        tx.scan_for_update(&t, Scan::all().limit(1)).unwrap(),
        [row(10)]
    );
    // Its own writes are what it reads.
    tx.insert(&t, &row(15)).unwrap();
    tx.delete(&t, key(10)).unwrap();
    assert_eq!(tx.scan_for_update(&t, range(0, 20)).unwrap(), [row(15)]);
    assert!(waits(insert(&db, &t, 20)), "the delete-marked 20 is locked");
    tx.commit().unwrap();
}

#[test]
fn a_locking_read_waits_for_a_writer_then_reads_the_latest_row() {
    let (_d, db) = setup();
    let t = db.table("t").unwrap();
    let mut w = db.begin().unwrap();
    w.update(&t, &[Value::UInt(20), Value::Int(-1)]).unwrap();
    let mut r = db.begin().unwrap();
    assert!(matches!(
        r.scan_for_update(&t, Scan::all()),
        Err(Error::LockWaitTimeout { .. })
    ));
    w.commit().unwrap();
    let rows = r.scan_for_update(&t, Scan::all()).unwrap();
    assert_eq!(rows[1], [Value::UInt(20), Value::Int(-1)]);
    r.commit().unwrap();
}

#[test]
fn read_committed_locking_reads_lock_rows_only() {
    let (_d, db) = setup();
    let t = db.table("t").unwrap();
    let mut tx = db.begin_with(Isolation::ReadCommitted).unwrap();
    assert_eq!(tx.scan_for_update(&t, range(15, 25)).unwrap(), [row(20)]);
    assert_eq!(tx.get_for_update(&t, key(12)).unwrap(), None);
    insert(&db, &t, 25).unwrap();
    insert(&db, &t, 11).unwrap();
    // The rows read are locked; the one past the range is not.
    assert!(waits(t.update(&row(20)).map(|_| ())));
    t.update(&row(25)).unwrap();
    assert_eq!(
        tx.scan_for_update(&t, range(15, 26)).unwrap(),
        [row(20), row(25)]
    );
    tx.commit().unwrap();
}

#[test]
fn a_missing_row_read_or_written_by_key_locks_its_gap() {
    let (_d, db) = setup();
    let t = db.table("t").unwrap();
    t.delete(key(30)).unwrap();
    let mut tx = db.begin().unwrap();
    // No row 15: the gap (10, 20) is locked, through a gap lock on 20.
    assert_eq!(tx.get_for_update(&t, key(15)).unwrap(), None);
    // An update or delete of a missing row locks its gap too: (20, 30], through the
    // delete-marked 30, and (30, end) through the supremum.
    assert!(matches!(
        tx.update(&t, &row(25)),
        Err(Error::RowNotFound { .. })
    ));
    assert!(!tx.delete(&t, key(40)).unwrap());
    for k in [12, 19, 22, 41] {
        assert!(waits(insert(&db, &t, k)), "{k} went into a locked gap");
    }
    // A gap lock covers the gap only: 20 itself may change.
    t.update(&row(20)).unwrap();
    insert(&db, &t, 5).unwrap();
    tx.commit().unwrap();
    for k in [12, 19, 22, 41] {
        insert(&db, &t, k).unwrap();
    }
}

/// Purge removes the delete-marked record a gap lock sits on: the lock moves to the next
/// record, so the gap, now wider, stays locked.
#[test]
fn purge_passes_gap_locks_to_the_next_record() {
    let (_d, db) = setup();
    let t = db.table("t").unwrap();
    t.delete(key(20)).unwrap();
    let mut tx = db.begin().unwrap();
    // No row 15: a gap lock on the delete-marked 20.
    assert_eq!(tx.get_for_update(&t, key(15)).unwrap(), None);
    assert_eq!(db.purge().unwrap().clustered_removed, 1);
    // 12's next record is now 30, which carries the lock.
    assert!(waits(insert(&db, &t, 12)));
    insert(&db, &t, 35).unwrap();
    tx.commit().unwrap();
    insert(&db, &t, 12).unwrap();
    assert_eq!(db.lock_stats().unwrap().held, 0);
}

/// A rollback removes an inserted record a gap lock sits on: as purge, the lock moves on.
#[test]
fn the_rollback_of_an_insert_passes_gap_locks_to_the_next_record() {
    let (_d, db) = setup();
    let t = db.table("t").unwrap();
    let mut ins = db.begin().unwrap();
    ins.insert(&t, &row(25)).unwrap();
    let mut tx = db.begin().unwrap();
    // No row 22: a gap lock on the uncommitted 25, its next record.
    assert_eq!(tx.get_for_update(&t, key(22)).unwrap(), None);
    ins.rollback().unwrap();
    assert!(waits(insert(&db, &t, 27)));
    tx.commit().unwrap();
    insert(&db, &t, 27).unwrap();
    assert_eq!(db.lock_stats().unwrap().held, 0);
}

/// Threads run transactions that read a random range for update, write outside it (inserts
/// and deletes, so records come and go and background purge removes them), read the range
/// again and commit or roll back. Whatever the interleaving, the second locking read returns
/// exactly the first one's rows, and so does a snapshot read of the range: no phantom, no
/// lost row. Deadlocks roll a transaction back, timeouts end it; both only cost a round.
#[test]
fn concurrent_locking_reads_see_no_phantoms() {
    // `MINNOW_GAP_ROUNDS=N` for a longer campaign.
    let rounds: u64 = std::env::var("MINNOW_GAP_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    let config = Config {
        lock_wait_timeout: Duration::from_secs(5),
        purge_threads: 1,
        ..Config::default()
    };
    let (_dir, db) = create(config, (0..60u64).step_by(3));
    let t = db.table("t").unwrap();
    let checked = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for seed in 1..=3u64 {
            let (db, t, checked) = (&db, &t, &checked);
            s.spawn(move || {
                let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
                let mut rnd = move |n: u64| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x % n
                };
                for _ in 0..rounds {
                    let lo = rnd(50);
                    let hi = lo + 1 + rnd(10);
                    let mut tx = db.begin().unwrap();
                    let r = (|| -> minnow::Result<()> {
                        let first = tx.scan_for_update(t, range(lo, hi))?;
                        for _ in 0..4 {
                            // Let the others run between statements.
                            std::thread::yield_now();
                            // A key outside the range (its locks are this transaction's own).
                            let k = (hi + rnd(60)) % 70;
                            let k = if (lo..hi).contains(&k) { hi } else { k };
                            if rnd(2) == 0 {
                                match tx.insert(t, &row(k)) {
                                    Err(Error::DuplicateKey { .. }) => {}
                                    r => r?,
                                }
                            } else {
                                tx.delete(t, key(k))?;
                            }
                        }
                        let again = tx.scan_for_update(t, range(lo, hi))?;
                        assert_eq!(first, again, "phantom in {lo}..{hi}");
                        let snap: Vec<_> =
                            tx.scan(t, range(lo, hi))?.collect::<minnow::Result<_>>()?;
                        assert_eq!(first, snap, "snapshot of {lo}..{hi}");
                        checked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        Ok(())
                    })();
                    match r {
                        Ok(()) if rnd(3) == 0 => tx.rollback().unwrap(),
                        Ok(()) => drop(tx.commit().unwrap()),
                        Err(Error::Deadlock { .. } | Error::LockWaitTimeout { .. }) => drop(tx),
                        Err(e) => panic!("{e}"),
                    }
                }
            });
        }
    });
    assert!(checked.into_inner() > 0);
    assert_eq!(db.lock_stats().unwrap().held, 0);
    db.check().unwrap();
}

/// Off-page columns come back whole when asked for, and are not read when not.
#[test]
fn a_locking_read_returns_off_page_columns() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), Config::default()).unwrap();
    let t = db
        .create_table(
            TableDef::new("lob")
                .column(ColumnDef::new("k", ColumnType::U64))
                .column(ColumnDef::new("b", ColumnType::Blob))
                .primary_key(&["k"]),
        )
        .unwrap();
    let blob = |k: u64| Value::Bytes(vec![k as u8; 20_000]);
    for k in 1..=3u64 {
        t.insert(&[Value::UInt(k), blob(k)]).unwrap();
    }
    let mut tx = db.begin().unwrap();
    let rows = tx.scan_for_update(&t, Scan::all()).unwrap();
    let want: Vec<Vec<Value>> = (1..=3).map(|k| vec![Value::UInt(k), blob(k)]).collect();
    assert_eq!(rows, want);
    let keys = tx.scan_for_update(&t, Scan::all().columns(&["k"])).unwrap();
    assert_eq!(keys, [[Value::UInt(1)], [Value::UInt(2)], [Value::UInt(3)]]);
    tx.commit().unwrap();
}
