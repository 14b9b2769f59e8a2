//! Transactions: the isolation anomalies (one test each, showing what each level prevents
//! and what snapshot isolation allows), row locks (waits, timeouts, deadlocks, a concurrent
//! bank), rollback by call, by drop and by a failed statement, and
//! secondary-index reads under old snapshots. (The crash campaign with multi-statement
//! transactions in flight is in `crash.rs`, beside the statements' campaigns.)

mod common;

use std::ops::Bound;
use std::time::Duration;

use common::all_rows;
use minnow::{
    ColumnDef, ColumnType, Config, Database, Error, IndexDef, Isolation, Scan, TableDef,
    Transaction, Value,
};

fn accounts(db: &Database) -> minnow::Table {
    let t = db
        .create_table(
            TableDef::new("acct")
                .column(ColumnDef::new("id", ColumnType::U64))
                .column(ColumnDef::new("owner", ColumnType::Var(16)))
                .column(ColumnDef::new("balance", ColumnType::I64))
                .primary_key(&["id"])
                .index(IndexDef::new("by_owner", &["owner"])),
        )
        .unwrap();
    for (id, owner, bal) in [(1u64, "ada", 100i64), (2, "bob", 100), (3, "cy", 100)] {
        t.insert(&[Value::UInt(id), Value::text(owner), Value::Int(bal)])
            .unwrap();
    }
    t
}

fn row(id: u64, owner: &str, bal: i64) -> Vec<Value> {
    vec![Value::UInt(id), Value::text(owner), Value::Int(bal)]
}

fn balance(tx: &mut Transaction, t: &minnow::Table, id: u64) -> Option<i64> {
    match tx.get(t, &[Value::UInt(id)]).unwrap()?.get(2) {
        Some(Value::Int(b)) => Some(*b),
        other => panic!("balance {other:?}"),
    }
}

fn count(tx: &mut Transaction, t: &minnow::Table) -> usize {
    tx.scan(t, Scan::all()).unwrap().count()
}

fn fresh() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), Config::default()).unwrap();
    (dir, db)
}

fn short_waits() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        lock_wait_timeout: Duration::from_millis(100),
        ..Config::default()
    };
    let db = Database::create(dir.path(), config).unwrap();
    (dir, db)
}

#[test]
fn a_transaction_refuses_another_databases_table() {
    let (dir_a, a) = fresh();
    let (dir_b, b) = fresh();
    let ta = accounts(&a);
    let tb = accounts(&b);
    let foreign = |r: Result<(), Error>, what: &str| match r {
        Err(Error::ForeignTable {
            table,
            table_db,
            trx_db,
        }) => {
            assert_eq!(table, "acct");
            assert_eq!(table_db, dir_b.path());
            assert_eq!(trx_db, dir_a.path());
        }
        other => panic!("{what}: {other:?}"),
    };
    let mut tx = a.begin().unwrap();
    foreign(tx.insert(&tb, &row(9, "eve", 1)), "insert");
    foreign(tx.update(&tb, &row(1, "ada", 0)), "update");
    foreign(tx.delete(&tb, &[Value::UInt(2)]).map(drop), "delete");
    foreign(tx.get(&tb, &[Value::UInt(1)]).map(drop), "get");
    foreign(
        tx.get_for_update(&tb, &[Value::UInt(1)]).map(drop),
        "get_for_update",
    );
    foreign(tx.scan(&tb, Scan::all()).map(drop), "scan");
    foreign(
        tx.scan_index(&tb, "by_owner", Scan::all()).map(drop),
        "scan_index",
    );
    let msg = tx.insert(&tb, &row(9, "eve", 1)).unwrap_err().to_string();
    assert!(msg.contains("belongs to the database in"), "{msg}");
    // The transaction goes on with its own database's table, and neither database changed
    // by the refused statements.
    tx.update(&ta, &row(1, "ada", 50)).unwrap();
    tx.commit().unwrap();
    assert_eq!(ta.get(&[Value::UInt(1)]).unwrap(), Some(row(1, "ada", 50)));
    assert_eq!(tb.get(&[Value::UInt(1)]).unwrap(), Some(row(1, "ada", 100)));
    assert_eq!(a.check().unwrap().rows["acct"], 3);
    assert_eq!(b.check().unwrap().rows["acct"], 3);
}

#[test]
fn dirty_write_waits_for_the_row_lock() {
    let (_d, db) = short_waits();
    let t = accounts(&db);
    let mut t1 = db.begin().unwrap();
    let mut t2 = db.begin().unwrap();
    t1.update(&t, &row(1, "ada", 50)).unwrap();
    // t2 waits for t1's lock on row 1; t1 does not finish, so the wait times out, naming t1.
    let e = t2.update(&t, &row(1, "ada", 70)).unwrap_err();
    assert!(
        matches!(&e, Error::LockWaitTimeout { holders, .. } if holders == &[t1.id()]),
        "{e}"
    );
    // Autocommit statements meet the same rule, and the failed statement left nothing.
    assert!(matches!(
        t.delete(&[Value::UInt(1)]),
        Err(Error::LockWaitTimeout { .. })
    ));
    // A timeout rolls back only the statement: t2 goes on once t1 has committed.
    t1.commit().unwrap();
    t2.update(&t, &row(1, "ada", 70)).unwrap();
    t2.commit().unwrap();
    assert_eq!(t.get(&[Value::UInt(1)]).unwrap(), Some(row(1, "ada", 70)));
    db.check().unwrap();
}

#[test]
fn a_waiting_writer_goes_on_when_the_holder_commits() {
    let (_d, db) = fresh();
    let t = accounts(&db);
    let mut t1 = db.begin().unwrap();
    t1.update(&t, &row(1, "ada", 50)).unwrap();
    std::thread::scope(|s| {
        let waiter = s.spawn(|| {
            let mut t2 = db.begin().unwrap();
            // Waits for t1, then updates the committed row.
            t2.update(&t, &row(1, "ada", 70)).unwrap();
            t2.commit().unwrap();
        });
        // t2 is queued behind t1's lock (the write lock is free meanwhile: this read and
        // the commit below get through).
        while db.lock_stats().unwrap().waiting == 0 {
            std::thread::yield_now();
        }
        assert_eq!(t.get(&[Value::UInt(1)]).unwrap(), Some(row(1, "ada", 100)));
        t1.commit().unwrap();
        waiter.join().unwrap();
    });
    assert_eq!(t.get(&[Value::UInt(1)]).unwrap(), Some(row(1, "ada", 70)));
    assert_eq!(db.lock_stats().unwrap().held, 0);
    db.check().unwrap();
}

#[test]
fn a_deadlock_rolls_back_the_younger_transaction() {
    let (_d, db) = fresh();
    let t = accounts(&db);
    let mut older = db.begin().unwrap();
    let mut younger = db.begin().unwrap();
    older.update(&t, &row(1, "ada", 1)).unwrap();
    younger.update(&t, &row(2, "bob", 2)).unwrap();
    assert!(older.id() < younger.id());
    std::thread::scope(|s| {
        let waiting = s.spawn(|| {
            // Waits for the younger one's row 2 ...
            older.update(&t, &row(2, "bob", 11)).unwrap();
            older.commit().unwrap();
        });
        while db.lock_stats().unwrap().waiting == 0 {
            std::thread::yield_now();
        }
        // ... and the younger one closes the cycle: it is the victim, rolled back whole.
        let e = younger.update(&t, &row(1, "ada", 22)).unwrap_err();
        assert!(
            matches!(&e, Error::Deadlock { cycle, .. } if cycle.len() == 2),
            "{e}"
        );
        assert!(matches!(
            younger.get(&t, &[Value::UInt(2)]),
            Err(Error::TransactionEnded)
        ));
        waiting.join().unwrap();
    });
    // The older one's changes stand; none of the younger one's do.
    assert_eq!(t.get(&[Value::UInt(1)]).unwrap(), Some(row(1, "ada", 1)));
    assert_eq!(t.get(&[Value::UInt(2)]).unwrap(), Some(row(2, "bob", 11)));
    assert_eq!(db.lock_stats().unwrap().deadlocks, 1);
    db.check().unwrap();
}

#[test]
fn an_insert_waits_for_an_uncommitted_insert_of_the_same_key() {
    let (_d, db) = short_waits();
    let t = db
        .create_table(
            TableDef::new("u")
                .column(ColumnDef::new("id", ColumnType::U64))
                .column(ColumnDef::new("owner", ColumnType::Var(16)))
                .column(ColumnDef::new("balance", ColumnType::I64))
                .primary_key(&["id"])
                .index(IndexDef::unique("one_per_owner", &["owner"])),
        )
        .unwrap();
    let mut t1 = db.begin().unwrap();
    t1.insert(&t, &row(9, "eve", 1)).unwrap();
    // Same primary key: waits, then times out while t1 is undecided.
    assert!(matches!(
        t.insert(&row(9, "zed", 2)),
        Err(Error::LockWaitTimeout { .. })
    ));
    // Same unique owner, other key: waits on the unique key's lock.
    assert!(matches!(
        t.insert(&row(10, "eve", 2)),
        Err(Error::LockWaitTimeout { .. })
    ));
    t1.rollback().unwrap();
    // Rolled back: both keys are free.
    t.insert(&row(9, "zed", 2)).unwrap();
    t.insert(&row(10, "eve", 2)).unwrap();
    // A delete in flight keeps its unique key taken until the deleter ends (it may roll
    // back): the insert waits for the deleted row's lock.
    let mut t3 = db.begin().unwrap();
    assert!(t3.delete(&t, &[Value::UInt(10)]).unwrap());
    assert!(matches!(
        t.insert(&row(11, "eve", 3)),
        Err(Error::LockWaitTimeout { .. })
    ));
    t3.commit().unwrap();
    t.insert(&row(11, "eve", 3)).unwrap();
    db.check().unwrap();
}

/// Threads move money between accounts in transactions for a while. A transfer first locks
/// both accounts (an update of each account's row in a `latch` table, in random order, so
/// deadlocks happen and their victims retry), then reads the balances at READ COMMITTED,
/// which sees the latest committed values since every writer of an account holds its latch
/// row, then writes them. Every snapshot taken meanwhile sees the same total, and so does the
/// database after a reopen.
#[test]
fn bank_transfers_keep_the_total() {
    const ACCOUNTS: u64 = 8;
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        flush_log_at_trx_commit: minnow::FlushAtCommit::Lazy,
        ..Config::default()
    };
    let db = Database::create(dir.path(), config.clone()).unwrap();
    let def = |name: &str| {
        TableDef::new(name)
            .column(ColumnDef::new("id", ColumnType::U64))
            .column(ColumnDef::new("n", ColumnType::I64))
            .primary_key(&["id"])
    };
    let bank = db.create_table(def("bank")).unwrap();
    let latch = db.create_table(def("latch")).unwrap();
    for id in 0..ACCOUNTS {
        bank.insert(&[Value::UInt(id), Value::Int(100)]).unwrap();
        latch.insert(&[Value::UInt(id), Value::Int(0)]).unwrap();
    }
    fn total(tx: &mut Transaction, t: &minnow::Table) -> i64 {
        tx.scan(t, Scan::all())
            .unwrap()
            .map(|r| match r.unwrap().get(1) {
                Some(Value::Int(b)) => *b,
                other => panic!("balance {other:?}"),
            })
            .sum()
    }
    let deadlocks = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for seed in 0..3u64 {
            let (db, bank, latch, deadlocks) = (&db, &bank, &latch, &deadlocks);
            s.spawn(move || {
                let mut x = seed * 7919 + 3;
                let mut done = 0;
                while done < 40 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let a = x % ACCOUNTS;
                    let b = (a + 1 + (x >> 8) % (ACCOUNTS - 1)) % ACCOUNTS;
                    let mut tx = db.begin_with(Isolation::ReadCommitted).unwrap();
                    let r = (|| {
                        for id in [a, b] {
                            tx.update(latch, &[Value::UInt(id), Value::Int(x as i64)])?;
                        }
                        for (id, delta) in [(a, -1), (b, 1)] {
                            let bal = match tx.get(bank, &[Value::UInt(id)])?.as_deref() {
                                Some([_, Value::Int(v)]) => *v,
                                other => panic!("account {id}: {other:?}"),
                            };
                            tx.update(bank, &[Value::UInt(id), Value::Int(bal + delta)])?;
                        }
                        Ok::<_, Error>(())
                    })();
                    match r {
                        Ok(()) => {
                            tx.commit().unwrap();
                            done += 1;
                        }
                        // The victim's transaction is rolled back already: try again.
                        Err(Error::Deadlock { .. }) => {
                            deadlocks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
            });
        }
        // A reader takes snapshots while the transfers run.
        for _ in 0..20 {
            let mut snap = db.begin().unwrap();
            assert_eq!(total(&mut snap, &bank), 100 * ACCOUNTS as i64);
            std::thread::yield_now();
        }
    });
    let mut snap = db.begin().unwrap();
    assert_eq!(total(&mut snap, &bank), 100 * ACCOUNTS as i64);
    drop(snap);
    db.check().unwrap();
    // Purge's background thread locks the row it purges, one at a time: purge here first (it
    // takes purge's turn, so the thread's batch ends), so that the counts are what the
    // transactions left, not a purge lock caught in passing.
    db.purge().unwrap();
    let stats = db.lock_stats().unwrap();
    assert_eq!((stats.held, stats.waiting), (0, 0));
    assert!(stats.deadlocks >= deadlocks.load(std::sync::atomic::Ordering::Relaxed));
    db.close().unwrap();
    let db = Database::open(dir.path(), config).unwrap();
    let bank = db.table("bank").unwrap();
    let mut snap = db.begin().unwrap();
    assert_eq!(total(&mut snap, &bank), 100 * ACCOUNTS as i64);
}

#[test]
fn dirty_read_is_prevented_at_both_levels() {
    let (_d, db) = fresh();
    let t = accounts(&db);
    let mut w = db.begin().unwrap();
    w.update(&t, &row(1, "ada", 0)).unwrap();
    w.insert(&t, &row(4, "dan", 1)).unwrap();
    w.delete(&t, &[Value::UInt(2)]).unwrap();
    // The writer sees its own changes.
    assert_eq!(balance(&mut w, &t, 1), Some(0));
    assert_eq!(count(&mut w, &t), 3);
    for iso in [Isolation::ReadCommitted, Isolation::RepeatableRead] {
        let mut r = db.begin_with(iso).unwrap();
        assert_eq!(balance(&mut r, &t, 1), Some(100));
        assert_eq!(balance(&mut r, &t, 4), None);
        assert_eq!(balance(&mut r, &t, 2), Some(100));
        assert_eq!(count(&mut r, &t), 3);
        r.commit().unwrap();
    }
    // Autocommit reads see the latest committed state.
    assert_eq!(t.get(&[Value::UInt(1)]).unwrap(), Some(row(1, "ada", 100)));
    assert_eq!(t.get(&[Value::UInt(4)]).unwrap(), None);
    assert_eq!(all_rows(&t).len(), 3);
    w.rollback().unwrap();
    assert_eq!(all_rows(&t).len(), 3);
    db.check().unwrap();
}

#[test]
fn fuzzy_read_is_prevented_by_repeatable_read_only() {
    let (_d, db) = fresh();
    let t = accounts(&db);
    let mut rr = db.begin_with(Isolation::RepeatableRead).unwrap();
    let mut rc = db.begin_with(Isolation::ReadCommitted).unwrap();
    assert_eq!(balance(&mut rr, &t, 1), Some(100));
    assert_eq!(balance(&mut rc, &t, 1), Some(100));
    t.update(&row(1, "ada", 1)).unwrap();
    assert_eq!(balance(&mut rr, &t, 1), Some(100), "repeatable read");
    assert_eq!(
        balance(&mut rc, &t, 1),
        Some(1),
        "read committed sees the new value"
    );
}

#[test]
fn read_skew_is_prevented_by_repeatable_read_only() {
    let (_d, db) = fresh();
    let t = accounts(&db);
    for (iso, consistent) in [
        (Isolation::RepeatableRead, true),
        (Isolation::ReadCommitted, false),
    ] {
        let mut r = db.begin_with(iso).unwrap();
        let a = balance(&mut r, &t, 1).unwrap();
        // A transfer of 10 from 1 to 2 commits between the two reads.
        let mut w = db.begin().unwrap();
        let (b1, b2) = (
            balance(&mut w, &t, 1).unwrap(),
            balance(&mut w, &t, 2).unwrap(),
        );
        w.update(&t, &row(1, "ada", b1 - 10)).unwrap();
        w.update(&t, &row(2, "bob", b2 + 10)).unwrap();
        w.commit().unwrap();
        let b = balance(&mut r, &t, 2).unwrap();
        assert_eq!(a + b == 200, consistent, "{iso:?}: {a} + {b}");
        r.commit().unwrap();
    }
}

#[test]
fn phantoms_are_prevented_for_snapshot_reads() {
    let (_d, db) = fresh();
    let t = accounts(&db);
    let mut rr = db.begin_with(Isolation::RepeatableRead).unwrap();
    let mut rc = db.begin_with(Isolation::ReadCommitted).unwrap();
    assert_eq!(count(&mut rr, &t), 3);
    assert_eq!(count(&mut rc, &t), 3);
    t.insert(&row(10, "eve", 5)).unwrap();
    t.delete(&[Value::UInt(3)]).unwrap();
    assert_eq!(count(&mut rr, &t), 3, "no phantom under repeatable read");
    let ids: Vec<_> = rr
        .scan(&t, Scan::all().columns(&["id"]))
        .unwrap()
        .collect::<minnow::Result<_>>()
        .unwrap();
    assert_eq!(ids, [[Value::UInt(1)], [Value::UInt(2)], [Value::UInt(3)]]);
    assert_eq!(count(&mut rc, &t), 3, "read committed: one in, one out");
    let mut ids = rc.scan(&t, Scan::all().columns(&["id"])).unwrap();
    assert_eq!(ids.nth(2).unwrap().unwrap(), [Value::UInt(10)]);
}

#[test]
fn write_skew_is_allowed_under_snapshot_isolation() {
    // The rule: the two doctors on call may not both go off call. Each transaction checks
    // the rule on its snapshot and takes a different doctor off: both commit, and the rule
    // is broken. Snapshot isolation (InnoDB's REPEATABLE READ without locking reads) allows
    // this; only SERIALIZABLE or a locking read would prevent it.
    let (_d, db) = fresh();
    let t = accounts(&db);
    let on_call = |tx: &mut Transaction| {
        [1, 2]
            .into_iter()
            .filter(|&id| balance(tx, &t, id).unwrap() > 0)
            .count()
    };
    let mut a = db.begin().unwrap();
    let mut b = db.begin().unwrap();
    assert_eq!(on_call(&mut a), 2);
    assert_eq!(on_call(&mut b), 2);
    a.update(&t, &row(1, "ada", 0)).unwrap();
    b.update(&t, &row(2, "bob", 0)).unwrap();
    a.commit().unwrap();
    b.commit().unwrap();
    let mut after = db.begin().unwrap();
    assert_eq!(on_call(&mut after), 0, "write skew happened");
}

#[test]
fn lost_update_happens_without_locking_reads() {
    // Two increments read 100 on their snapshots; the second writer waits for nothing (the
    // first committed already) and overwrites: InnoDB's REPEATABLE READ does the same.
    let (_d, db) = fresh();
    let t = accounts(&db);
    let mut a = db.begin().unwrap();
    let mut b = db.begin().unwrap();
    let va = balance(&mut a, &t, 1).unwrap();
    let vb = balance(&mut b, &t, 1).unwrap();
    a.update(&t, &row(1, "ada", va + 1)).unwrap();
    a.commit().unwrap();
    b.update(&t, &row(1, "ada", vb + 1)).unwrap();
    b.commit().unwrap();
    assert_eq!(t.get(&[Value::UInt(1)]).unwrap(), Some(row(1, "ada", 101)));
}

#[test]
fn locking_reads_prevent_the_lost_update() {
    // The same two increments through get_for_update: the second waits for the first's lock,
    // then reads the committed 101, not its snapshot's 100.
    let (_d, db) = short_waits();
    let t = accounts(&db);
    let mut b = db.begin().unwrap();
    assert_eq!(balance(&mut b, &t, 1), Some(100)); // b's snapshot: 100
    let mut a = db.begin().unwrap();
    let va = a.get_for_update(&t, &[Value::UInt(1)]).unwrap().unwrap();
    assert_eq!(va, row(1, "ada", 100));
    // a holds the lock: b's locking read times out (only the statement fails).
    assert!(matches!(
        b.get_for_update(&t, &[Value::UInt(1)]),
        Err(Error::LockWaitTimeout { .. })
    ));
    a.update(&t, &row(1, "ada", 101)).unwrap();
    a.commit().unwrap();
    let vb = b.get_for_update(&t, &[Value::UInt(1)]).unwrap().unwrap();
    assert_eq!(vb, row(1, "ada", 101), "a current read, not the snapshot");
    assert_eq!(
        balance(&mut b, &t, 1),
        Some(100),
        "the snapshot is unchanged"
    );
    b.update(&t, &row(1, "ada", 102)).unwrap();
    assert_eq!(b.get_for_update(&t, &[Value::UInt(9)]).unwrap(), None);
    b.commit().unwrap();
    assert_eq!(t.get(&[Value::UInt(1)]).unwrap(), Some(row(1, "ada", 102)));
}

#[test]
fn rollback_by_call_drop_and_failed_statement_leaves_no_trace() {
    let (_d, db) = fresh();
    let t = accounts(&db);
    let before = all_rows(&t);
    let mut tx = db.begin().unwrap();
    tx.update(&t, &row(1, "zed", 1)).unwrap();
    tx.delete(&t, &[Value::UInt(2)]).unwrap();
    tx.insert(&t, &row(2, "bob2", 7)).unwrap(); // over its own delete-marked row
    tx.insert(&t, &row(9, "ivy", 9)).unwrap();
    tx.update(&t, &row(9, "ivy", 10)).unwrap();
    tx.rollback().unwrap();
    assert_eq!(all_rows(&t), before);
    db.check().unwrap();
    {
        let mut tx = db.begin().unwrap();
        tx.delete(&t, &[Value::UInt(1)]).unwrap();
        tx.insert(&t, &row(20, "x", 1)).unwrap();
    } // dropped: rolled back
    assert_eq!(all_rows(&t), before);
    let by_owner: Vec<_> = t
        .scan_index("by_owner", Scan::all().columns(&["owner"]))
        .unwrap()
        .collect::<minnow::Result<_>>()
        .unwrap();
    assert_eq!(
        by_owner,
        [
            [Value::text("ada")],
            [Value::text("bob")],
            [Value::text("cy")]
        ]
    );
    db.check().unwrap();

    // A failed statement inside a transaction rolls back to its start; the rest stays.
    let mut tx = db.begin().unwrap();
    tx.insert(&t, &row(30, "amy", 1)).unwrap();
    assert!(matches!(
        tx.insert(&t, &row(1, "dup", 0)),
        Err(Error::DuplicateKey { .. })
    ));
    assert!(matches!(
        tx.update(&t, &row(77, "no", 0)),
        Err(Error::RowNotFound { .. })
    ));
    tx.commit().unwrap();
    assert_eq!(t.get(&[Value::UInt(30)]).unwrap(), Some(row(30, "amy", 1)));
    assert_eq!(all_rows(&t).len(), 4);
    db.check().unwrap();
    // A used-up transaction handle cannot be reused by accident: commit consumes it.
    let tx = db.begin().unwrap();
    assert!(tx.commit().is_ok());
}

#[test]
fn secondary_index_reads_see_the_snapshot_version() {
    let (_d, db) = fresh();
    let t = accounts(&db);
    let mut old = db.begin().unwrap();
    assert_eq!(count(&mut old, &t), 3);
    // Move ada to a new owner name and delete cy, committed.
    t.update(&row(1, "zoe", 100)).unwrap();
    t.delete(&[Value::UInt(3)]).unwrap();
    fn owners(tx: &mut Transaction, t: &minnow::Table, cols: &[&str]) -> Vec<Vec<Value>> {
        tx.scan_index(t, "by_owner", Scan::all().columns(cols))
            .unwrap()
            .collect::<minnow::Result<_>>()
            .unwrap()
    }
    // The old snapshot reads the old entries (covering and not), the new one the new.
    assert_eq!(
        owners(&mut old, &t, &["owner"]),
        [
            [Value::text("ada")],
            [Value::text("bob")],
            [Value::text("cy")]
        ]
    );
    assert_eq!(
        owners(&mut old, &t, &["balance", "id"]),
        [
            [Value::Int(100), Value::UInt(1)],
            [Value::Int(100), Value::UInt(2)],
            [Value::Int(100), Value::UInt(3)]
        ]
    );
    let mut new = db.begin().unwrap();
    assert_eq!(
        owners(&mut new, &t, &["owner"]),
        [[Value::text("bob")], [Value::text("zoe")]]
    );
    let zoe = Bound::Included(vec![Value::text("zoe")]);
    let got: Vec<_> = t
        .scan_index("by_owner", Scan::range(zoe.clone(), zoe).columns(&["id"]))
        .unwrap()
        .collect::<minnow::Result<_>>()
        .unwrap();
    assert_eq!(got, [[Value::UInt(1)]]);
    db.check().unwrap();
}

#[test]
fn transactions_survive_reopen_and_ids_are_not_reused() {
    let dir = tempfile::tempdir().unwrap();
    let first_id;
    {
        let db = Database::create(dir.path(), Config::default()).unwrap();
        let t = accounts(&db);
        let mut tx = db.begin().unwrap();
        tx.update(&t, &row(1, "ada", 1)).unwrap();
        first_id = tx.id();
        tx.commit().unwrap();
        let mut open = db.begin().unwrap();
        open.update(&t, &row(2, "bob", 2)).unwrap();
        std::mem::forget(open); // never committed, never rolled back: like a crash
        db.close().unwrap();
    }
    let db = Database::open(dir.path(), Config::default()).unwrap();
    assert_eq!(db.open_report().rolled_back, 1);
    let t = db.table("acct").unwrap();
    assert_eq!(t.get(&[Value::UInt(1)]).unwrap(), Some(row(1, "ada", 1)));
    assert_eq!(t.get(&[Value::UInt(2)]).unwrap(), Some(row(2, "bob", 100)));
    let mut tx = db.begin().unwrap();
    tx.update(&t, &row(3, "cy", 3)).unwrap();
    assert!(tx.id() > first_id);
    tx.commit().unwrap();
    db.check().unwrap();
}

/// A transaction that only reads gets no id, writes no undo, takes no lock and leaves no
/// history, at either level (InnoDB's read-only transactions): its reads cost the writers
/// nothing but a registered read view, which is gone once it ends.
#[test]
fn a_read_only_transaction_takes_no_id_no_undo_and_no_lock() {
    let (_dir, db) = fresh();
    let t = accounts(&db);
    db.purge().unwrap();
    let before = db.status().unwrap().transactions;
    for level in [Isolation::RepeatableRead, Isolation::ReadCommitted] {
        let mut tx = db.begin_with(level).unwrap();
        assert_eq!(balance(&mut tx, &t, 1), Some(100));
        assert_eq!(count(&mut tx, &t), 3);
        let owners: Vec<_> = tx
            .scan_index(&t, "by_owner", Scan::all())
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(owners.len(), 3);
        let during = db.status().unwrap().transactions;
        assert_eq!(during.active, 0, "a reader is not an active writer");
        assert_eq!(db.lock_stats().unwrap().held, 0, "a reader holds no lock");
        tx.commit().unwrap();
    }
    let after = db.status().unwrap().transactions;
    assert_eq!(after.next_trx_id, before.next_trx_id, "no id handed out");
    assert_eq!(after.undo_pages, before.undo_pages, "no undo written");
    assert_eq!(after.history_len, before.history_len, "no history left");
    assert_eq!(after.open_views, 0, "the views went with the transactions");
}

/// REPEATABLE READ takes its snapshot at the transaction's first consistent read, not at
/// `begin` (InnoDB's `START TRANSACTION` without `WITH CONSISTENT SNAPSHOT`): a commit
/// between `begin` and the first read is seen, one after it is not. A transaction that only
/// writes and reads with locks (the shape of `minnow bench writers`) opens no view at all.
#[test]
fn the_snapshot_is_taken_at_the_first_consistent_read() {
    let (_dir, db) = fresh();
    let t = accounts(&db);
    let mut reader = db.begin().unwrap();
    let mut writer = db.begin().unwrap();
    writer.update(&t, &row(1, "ada", 150)).unwrap();
    assert_eq!(
        writer
            .get_for_update(&t, &[Value::UInt(2)])
            .unwrap()
            .map(|r| r[2].clone()),
        Some(Value::Int(100))
    );
    assert_eq!(
        db.status().unwrap().transactions.open_views,
        0,
        "a writer without consistent reads opens no view"
    );
    writer.commit().unwrap();
    // Committed after the reader's begin, before its first read: seen.
    assert_eq!(balance(&mut reader, &t, 1), Some(150));
    assert_eq!(
        db.status().unwrap().transactions.open_views,
        1,
        "the first read opened the view"
    );
    t.update(&row(1, "ada", 175)).unwrap();
    // Committed after the first read: not seen by this transaction, seen by a new one.
    assert_eq!(balance(&mut reader, &t, 1), Some(150));
    reader.commit().unwrap();
    let mut later = db.begin().unwrap();
    assert_eq!(balance(&mut later, &t, 1), Some(175));
}

/// The number of rollback segments TRX_SYS page 3 of a closed database names.
fn stored_rollback_segments(dir: &std::path::Path) -> usize {
    let bytes = std::fs::read(dir.join(minnow::inspect::SYSTEM_TABLESPACE)).unwrap();
    let size = Config::default().page_size.bytes();
    let no = minnow::inspect::TRX_SYS_PAGE as usize;
    let page = &bytes[no * size..(no + 1) * size];
    let id = minnow_page::PageId::new(
        minnow::inspect::SYSTEM_SPACE_ID,
        minnow::inspect::TRX_SYS_PAGE,
    );
    minnow_mvcc::SysPage::read(page, id).unwrap().rsegs.len()
}

#[test]
fn rollback_segments_are_range_checked_and_fixed_at_create() {
    for n in [0, 129] {
        let dir = tempfile::tempdir().unwrap();
        let config = Config {
            rollback_segments: n,
            ..Config::default()
        };
        match Database::create(dir.path(), config) {
            Err(Error::Config { knob, .. }) => assert_eq!(knob, "innodb_rollback_segments"),
            other => panic!(
                "{n} segments: expected a config error, got {:?}",
                other.err()
            ),
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(
        dir.path(),
        Config {
            rollback_segments: 3,
            ..Config::default()
        },
    )
    .unwrap();
    let t = accounts(&db);
    drop(t);
    db.close().unwrap();
    assert_eq!(stored_rollback_segments(dir.path()), 3);
    // Opened with another number, the database keeps the three it was made with; writers
    // spread over them all, and check() verifies every one.
    let db = Database::open(
        dir.path(),
        Config {
            rollback_segments: 7,
            ..Config::default()
        },
    )
    .unwrap();
    let t = db.table("acct").unwrap();
    let mut open = Vec::new();
    for round in 0..6i64 {
        let mut tx = db.begin().unwrap();
        tx.update(&t, &row(1 + (round as u64 % 3), "x", round))
            .unwrap();
        if round < 3 {
            tx.commit().unwrap();
        } else {
            open.push(tx);
        }
    }
    drop(open);
    db.check().unwrap();
    drop(t);
    db.close().unwrap();
    assert_eq!(stored_rollback_segments(dir.path()), 3);
}
