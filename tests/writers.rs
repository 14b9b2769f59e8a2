//! Many writers at once, checked by invariants.
//!
//! Nothing database-wide serialises writers of different rows, so these tests run several
//! writer threads in one process and check what must hold whatever the interleaving:
//!
//! - **bank transfers with a journal** ([`minnow_workload::killer`]'s workload: `get_for_update`
//!   two accounts, update both, insert a journal row, delete an old one, commit; deadlock
//!   victims retry) on four threads, with **snapshot readers** beside them that sum every
//!   balance inside a REPEATABLE READ transaction, through the clustered index and through
//!   the covering secondary index, and must find the opening total every time (a transfer
//!   seen half done, or a balance seen twice or not at all, breaks it); purge runs in the
//!   background throughout. Afterwards every committed transfer is in the journal, the
//!   journal holds exactly each thread's last rows and `check()` passes.
//! - **DDL beside writers**: while writers insert and delete in one table, another thread
//!   creates and drops tables and creates and drops an index on the writers' table (the
//!   metadata lock makes DDL wait for running statements, and statements for DDL); then every
//!   row is where the writers' own bookkeeping says and `check()` passes.
//!
//! `MINNOW_WRITERS_COMMITS=N` runs the bank test to N commits (default 3,000); the seed is
//! fixed, but thread interleavings are the machine's, so a longer run explores more of them.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use minnow::{
    ColumnDef, ColumnType, Config, Database, Error, FlushAtCommit, IndexDef, Isolation, Scan,
    TableDef, Value,
};
use minnow_workload::killer::{self, Shape};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        Value::UInt(u) => i64::try_from(*u).unwrap(),
        other => panic!("not an integer: {other:?}"),
    }
}

/// Sums every balance in one REPEATABLE READ snapshot, through the clustered index and
/// through the covering `by_balance` index; both must be `total`.
fn audit(db: &Database, total: i64, accounts: u64) {
    let t = db.table("accounts").unwrap();
    let trx = db.begin_with(Isolation::RepeatableRead).unwrap();
    let rows: Vec<Vec<Value>> = trx
        .scan(&t, Scan::all())
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows.len() as u64, accounts, "accounts seen in one snapshot");
    let sum: i64 = rows.iter().map(|r| int(&r[1])).sum();
    assert_eq!(sum, total, "balances in one snapshot (clustered)");
    let by_index: i64 = trx
        .scan_index(&t, "by_balance", Scan::all().columns(&["balance"]))
        .unwrap()
        .map(|r| int(&r.unwrap()[0]))
        .sum();
    assert_eq!(by_index, total, "balances in one snapshot (secondary)");
    trx.commit().unwrap();
}

#[test]
fn bank_transfers_on_four_threads_with_snapshot_readers() {
    let dir = tempfile::tempdir().unwrap();
    let shape = Shape {
        accounts: 48,
        threads: 4,
        keep: 16,
        pad: 64,
    };
    // Lazy commits: this test is about interleavings, not durability (the kill test is).
    let config = Config {
        flush_log_at_trx_commit: FlushAtCommit::Lazy,
        buffer_pool_size: 16 << 20,
        ..killer::config(Config::default())
    };
    let db = Database::create(dir.path(), config).unwrap();
    killer::prepare(&db, &shape).unwrap();
    let total = killer::OPENING * shape.accounts as i64;
    let want = env_u64("MINNOW_WRITERS_COMMITS", 3_000);
    let stop = AtomicBool::new(false);
    let commits = AtomicU64::new(0);
    let acked = Mutex::new(BTreeMap::<u64, u64>::new());
    let audits = AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    audit(&db, total, shape.accounts);
                    audits.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        let report = |line: String| {
            let mut w = line.split_whitespace();
            if w.next() != Some("ACK") {
                return;
            }
            let t: u64 = w.next().unwrap().parse().unwrap();
            let seq: u64 = w.next().unwrap().parse().unwrap();
            acked.lock().unwrap().insert(t, seq);
            if commits.fetch_add(1, Ordering::Relaxed) + 1 >= want {
                stop.store(true, Ordering::Relaxed);
            }
        };
        killer::run(&db, &shape, 7, &stop, &report).unwrap();
    });
    assert!(commits.load(Ordering::Relaxed) >= want);
    assert!(audits.load(Ordering::Relaxed) > 0);
    let acked = acked.into_inner().unwrap();
    assert_eq!(acked.len() as u64, shape.threads, "every thread committed");
    let v = killer::verify(&db, &shape, &acked).unwrap();
    // In one process nothing is in flight: the journal ends exactly at each thread's last
    // acknowledged commit.
    assert_eq!(v.in_flight_kept, 0, "{v:?}");
    db.purge().unwrap();
    db.check().unwrap();
    let stats = db.lock_stats().unwrap();
    assert_eq!(stats.held, 0, "{stats:?}");
    db.close().unwrap();
}

fn items_def(name: &str) -> TableDef {
    TableDef::new(name)
        .column(ColumnDef::new("id", ColumnType::U64))
        .column(ColumnDef::new("owner", ColumnType::U64))
        .column(ColumnDef::new("v", ColumnType::I64))
        .primary_key(&["id"])
        .index(IndexDef::new("by_owner", &["owner", "v"]))
}

#[test]
fn ddl_runs_beside_writers_of_another_and_the_same_table() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), Config::default()).unwrap();
    db.create_table(items_def("items")).unwrap();
    const THREADS: u64 = 3;
    const ROUNDS: u64 = 300;
    let done = AtomicU64::new(0);
    let finals: Vec<BTreeMap<u64, i64>> = std::thread::scope(|s| {
        let writers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (db, done) = (&db, &done);
                s.spawn(move || {
                    // This thread's own ids: t, t + THREADS, ...; what it left, by id.
                    let mut mine = BTreeMap::new();
                    for i in 0..ROUNDS {
                        let id = t + THREADS * (i % 40);
                        let table = db.table("items").unwrap();
                        let v = i as i64;
                        let row = [Value::UInt(id), Value::UInt(t), Value::Int(v)];
                        let delete = i % 3 == 0 && mine.contains_key(&id);
                        let r = if delete {
                            table
                                .delete(&[Value::UInt(id)])
                                .map(|d| assert!(d, "row {id} was there"))
                        } else if mine.contains_key(&id) {
                            table.update(&row).map(drop)
                        } else {
                            table.insert(&row).map(drop)
                        };
                        match r {
                            Ok(()) if delete => drop(mine.remove(&id)),
                            Ok(()) => drop(mine.insert(id, v)),
                            // The handle was taken before an index was created or dropped:
                            // the statement did nothing; do it again on a fresh handle.
                            Err(Error::TableChanged { .. }) => continue,
                            Err(e) => panic!("thread {t} round {i}: {e}"),
                        }
                    }
                    done.fetch_add(1, Ordering::Relaxed);
                    mine
                })
            })
            .collect();
        let mut n = 0u64;
        while done.load(Ordering::Relaxed) < THREADS || n < 4 {
            let side = format!("side_{n}");
            db.create_table(items_def(&side)).unwrap();
            db.table(&side)
                .unwrap()
                .insert(&[Value::UInt(n), Value::UInt(0), Value::Int(0)])
                .unwrap();
            db.create_index("items", IndexDef::new("by_v", &["v"]))
                .unwrap();
            db.drop_index("items", "by_v").unwrap();
            db.drop_table(&side).unwrap();
            n += 1;
        }
        writers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let table = db.table("items").unwrap();
    let rows: BTreeMap<u64, (u64, i64)> = table
        .scan(Scan::all())
        .unwrap()
        .map(|r| {
            let r = r.unwrap();
            (int(&r[0]) as u64, (int(&r[1]) as u64, int(&r[2])))
        })
        .collect();
    let mut want = BTreeMap::new();
    for (t, mine) in finals.iter().enumerate() {
        for (id, v) in mine {
            want.insert(*id, (t as u64, *v));
        }
    }
    assert_eq!(rows, want);
    assert_eq!(db.tables().unwrap(), ["items"]);
    db.purge().unwrap();
    db.check().unwrap();
    db.close().unwrap();
}
