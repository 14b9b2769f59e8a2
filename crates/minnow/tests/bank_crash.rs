//! Bank transfers through a power cut.
//!
//! Three threads move money between accounts in transactions of one to four transfers (each
//! transfer locks both accounts, updates both balances and records itself in a `ledger`
//! table; deadlock victims retry) on the crash simulator, which cuts the power after a
//! random number of IO operations. The database is then opened again, which rolls back every
//! transaction that was in flight, and must show:
//!
//! - the exact total of all balances (no transfer half done);
//! - every transfer whose commit was acknowledged (`commit()` returned `Ok`, with
//!   `flush_log_at_trx_commit = 1`), in the ledger, and no transfer that never reached its
//!   commit; a commit in flight when the power went (it returned an error) may be either way;
//! - balances that are exactly the opening balances plus the ledger's transfers (each
//!   transfer all or nothing);
//! - no lock held, and `check()` passing.
//!
//! Besides the threads' transactions, one more transfer (between two accounts of its own)
//! is left uncommitted across the crash; the threads' commits make its redo durable, so
//! nearly every seed has at least one transaction for `open` to roll back.
//!
//! `MINNOW_CRASH_SEEDS=N` runs N seeds (default 8), `MINNOW_CRASH_SEED_START=S` starts at S.
//! The threads' interleaving is up to the scheduler, so a seed fixes the power-cut point and
//! the transfers chosen but not the exact history; a failure prints the seed and the crash
//! report.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use common::{Rng, seeds};
use minnow::backend::{Backend, CrashSim, SyncBackend};
use minnow::{ColumnDef, ColumnType, Config, Database, Error, Isolation, Scan, TableDef, Value};

/// Accounts the threads use; two more belong to a transaction left open across the crash.
const ACCOUNTS: u64 = 6;
const ALL_ACCOUNTS: u64 = ACCOUNTS + 2;
const OPENING: i64 = 1000;
const THREADS: u64 = 3;

fn config(backend: Arc<dyn Backend>) -> Config {
    Config {
        // Acknowledged means durable.
        flush_log_at_trx_commit: minnow::FlushAtCommit::Sync,
        // A thread that stops when the power goes leaves its locks behind: the others' waits
        // for them end soon.
        lock_wait_timeout: Duration::from_millis(200),
        ..common::crash_config(backend)
    }
}

fn two_columns(name: &str) -> TableDef {
    TableDef::new(name)
        .column(ColumnDef::new("id", ColumnType::U64))
        .column(ColumnDef::new("n", ColumnType::I64))
        .primary_key(&["id"])
}

/// A transfer: `amount` from account `from` to account `to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Transfer {
    id: u64,
    from: u64,
    to: u64,
    amount: i64,
}

fn ledger_def() -> TableDef {
    TableDef::new("ledger")
        .column(ColumnDef::new("id", ColumnType::U64))
        .column(ColumnDef::new("src", ColumnType::U64))
        .column(ColumnDef::new("dst", ColumnType::U64))
        .column(ColumnDef::new("amount", ColumnType::I64))
        .primary_key(&["id"])
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        Value::UInt(u) => *u as i64,
        other => panic!("not an integer: {other:?}"),
    }
}

/// What the threads saw: transfers acknowledged, and those whose commit failed.
#[derive(Debug, Default)]
struct Outcomes {
    acknowledged: BTreeSet<u64>,
    in_commit: BTreeSet<u64>,
}

/// Runs a batch of transfers as one transaction. `Err` if the power went (or anything else
/// failed) before the commit was acknowledged.
fn transfer(
    db: &Database,
    tables: (&minnow::Table, &minnow::Table, &minnow::Table),
    batch: &[Transfer],
    outcomes: &Mutex<Outcomes>,
) -> Result<(), Error> {
    let (bank, latch, ledger) = tables;
    loop {
        let mut tx = db.begin_with(Isolation::ReadCommitted)?;
        let r = (|| {
            for t in batch {
                // Lock both accounts (their latch rows) first, in the transfer's order, so
                // that the balances read below are the latest ones and deadlocks happen.
                for id in [t.from, t.to] {
                    tx.update(latch, &[Value::UInt(id), Value::Int(t.id as i64)])?;
                }
                for (id, delta) in [(t.from, -t.amount), (t.to, t.amount)] {
                    let row = tx.get(bank, &[Value::UInt(id)])?;
                    let bal = int(&row.expect("every account exists")[1]);
                    tx.update(bank, &[Value::UInt(id), Value::Int(bal + delta)])?;
                }
                tx.insert(
                    ledger,
                    &[
                        Value::UInt(t.id),
                        Value::UInt(t.from),
                        Value::UInt(t.to),
                        Value::Int(t.amount),
                    ],
                )?;
            }
            Ok(())
        })();
        match r {
            Ok(()) => {}
            // Rolled back already: try again.
            Err(Error::Deadlock { .. }) => continue,
            Err(e) => {
                // The power is going: no rollback either (it would fail, or half happen).
                std::mem::forget(tx);
                return Err(e);
            }
        }
        let ids = batch.iter().map(|t| t.id);
        return match tx.commit() {
            Ok(_) => {
                outcomes.lock().unwrap().acknowledged.extend(ids);
                Ok(())
            }
            Err(e) => {
                outcomes.lock().unwrap().in_commit.extend(ids);
                Err(e)
            }
        };
    }
}

/// One seed; returns (transfers acknowledged, transactions rolled back at open).
fn run_seed(seed: u64) -> (usize, usize) {
    let dir = tempfile::tempdir().unwrap();
    let sim = Arc::new(CrashSim::new(Arc::new(SyncBackend::new())));
    let report;
    let backend: Arc<dyn Backend> = sim.clone();
    let mut rng = Rng(seed ^ 0xBA_4C00);
    let outcomes = Mutex::new(Outcomes::default());
    let mut planned = BTreeMap::new();
    {
        let db = Database::create(dir.path(), config(Arc::clone(&backend))).unwrap();
        let bank = db.create_table(two_columns("bank")).unwrap();
        let latch = db.create_table(two_columns("latch")).unwrap();
        let ledger = db.create_table(ledger_def()).unwrap();
        for id in 0..ALL_ACCOUNTS {
            bank.insert(&[Value::UInt(id), Value::Int(OPENING)])
                .unwrap();
            latch.insert(&[Value::UInt(id), Value::Int(0)]).unwrap();
        }
        // Each thread's transactions (batches of 1 to 4 transfers), planned from the seed.
        let mut id = 0;
        let per_thread: Vec<Vec<Vec<Transfer>>> = (0..THREADS)
            .map(|_| {
                (0..80)
                    .map(|_| {
                        (0..1 + rng.below(4))
                            .map(|_| {
                                let from = rng.below(ACCOUNTS);
                                let to = (from + 1 + rng.below(ACCOUNTS - 1)) % ACCOUNTS;
                                id += 1;
                                Transfer {
                                    id,
                                    from,
                                    to,
                                    amount: 1 + rng.below(50) as i64,
                                }
                            })
                            .collect()
                    })
                    .collect()
            })
            .collect();
        for t in per_thread.iter().flatten().flatten() {
            planned.insert(t.id, *t);
        }
        // A transfer between the two extra accounts that never commits: the threads' commits
        // make its redo durable, so after the crash, open must roll it back.
        let open_transfer = Transfer {
            id: id + 1,
            from: ACCOUNTS,
            to: ACCOUNTS + 1,
            amount: 7,
        };
        planned.insert(open_transfer.id, open_transfer);
        let mut open_tx = db.begin().unwrap();
        sim.arm(1 + rng.below(500));
        std::thread::scope(|s| {
            s.spawn(|| {
                // As `transfer`, without the commit; what happens when the power goes does
                // not matter (its outcome is checked after the crash).
                let t = open_transfer;
                let _ = (|| {
                    for (id, delta) in [(t.from, -t.amount), (t.to, t.amount)] {
                        let row = open_tx.get(&bank, &[Value::UInt(id)])?;
                        let bal = int(&row.expect("every account exists")[1]);
                        open_tx.update(&bank, &[Value::UInt(id), Value::Int(bal + delta)])?;
                    }
                    let row = vec![
                        Value::UInt(t.id),
                        Value::UInt(t.from),
                        Value::UInt(t.to),
                        Value::Int(t.amount),
                    ];
                    open_tx.insert(&ledger, &row)
                })();
            });
            for list in &per_thread {
                let (db, bank, latch, ledger, outcomes) = (&db, &bank, &latch, &ledger, &outcomes);
                s.spawn(move || {
                    for batch in list {
                        if transfer(db, (bank, latch, ledger), batch, outcomes).is_err() {
                            break;
                        }
                    }
                });
            }
        });
        // The power is gone: no rollback or close either.
        std::mem::forget(open_tx);
        // The power goes with the database still open; what closing it tries to write then
        // fails (the device is gone), and close lets the directory's LOCK go (for every
        // handle: the forgotten transaction's clone of the database too).
        report = sim.power_cut(seed).unwrap();
        let _ = db.close();
    }
    let outcomes = outcomes.into_inner().unwrap();
    let db = Database::open(dir.path(), config(backend))
        .unwrap_or_else(|e| panic!("seed {seed}: open after the crash failed: {e}\n{report}"));
    let fail = |what: String| -> ! { panic!("seed {seed}: {what}\n{report}") };
    let bank = db.table("bank").unwrap();
    let ledger = db.table("ledger").unwrap();
    let balances: Vec<i64> = bank
        .scan(Scan::all())
        .unwrap()
        .map(|r| int(&r.unwrap()[1]))
        .collect();
    if balances.len() != ALL_ACCOUNTS as usize {
        fail(format!("{} accounts", balances.len()));
    }
    let total: i64 = balances.iter().sum();
    if total != OPENING * ALL_ACCOUNTS as i64 {
        fail(format!("total {total}, balances {balances:?}"));
    }
    let mut expected = vec![OPENING; ALL_ACCOUNTS as usize];
    let mut logged = BTreeSet::new();
    for r in ledger.scan(Scan::all()).unwrap() {
        let r = r.unwrap();
        let t = Transfer {
            id: int(&r[0]) as u64,
            from: int(&r[1]) as u64,
            to: int(&r[2]) as u64,
            amount: int(&r[3]),
        };
        if planned.get(&t.id) != Some(&t) {
            fail(format!("ledger row {t:?} was never planned"));
        }
        expected[t.from as usize] -= t.amount;
        expected[t.to as usize] += t.amount;
        logged.insert(t.id);
    }
    if balances != expected {
        fail(format!(
            "balances {balances:?} are not the ledger's {expected:?}"
        ));
    }
    if let Some(lost) = outcomes.acknowledged.difference(&logged).next() {
        fail(format!("acknowledged transfer {lost} is lost"));
    }
    if let Some(extra) = logged
        .iter()
        .find(|id| !outcomes.acknowledged.contains(id) && !outcomes.in_commit.contains(id))
    {
        fail(format!(
            "transfer {extra} never reached its commit but is there"
        ));
    }
    db.check()
        .unwrap_or_else(|e| fail(format!("check after recovery: {e}")));
    // Purge's background thread locks the row it purges, one at a time: purge here first (it
    // takes purge's turn, so the thread's batch ends), so that the counts are what the
    // transactions left, not a purge lock caught in passing.
    db.purge().unwrap();
    let stats = db.lock_stats().unwrap();
    assert_eq!((stats.held, stats.waiting), (0, 0));
    let rolled_back = db.open_report().rolled_back;
    eprintln!(
        "seed {seed}: {} acknowledged, {} in commit, {} logged, {rolled_back} rolled back",
        outcomes.acknowledged.len(),
        outcomes.in_commit.len(),
        logged.len()
    );
    db.close().unwrap();
    (outcomes.acknowledged.len(), rolled_back as usize)
}

#[test]
fn bank_transfers_survive_a_power_cut() {
    let (mut n, mut acked, mut rolled_back) = (0, 0, 0);
    for seed in seeds(8) {
        let (a, r) = run_seed(seed);
        n += 1;
        acked += a;
        rolled_back += r;
    }
    eprintln!(
        "{n} seeds, {acked} acknowledged transfers, {rolled_back} transactions rolled back at open"
    );
    assert!(
        n == 0 || rolled_back > 0,
        "no seed rolled back a transaction at open"
    );
}
