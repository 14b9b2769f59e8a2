//! A workload made to be killed: bank transfers with a journal, whose every acknowledged
//! commit can be checked after a `SIGKILL`.
//!
//! The simulated power cuts of the crash campaigns test recovery against every way a write
//! can be torn; they cannot test what only a real process death shows: threads stopped in the
//! middle of anything, file descriptors closed by the kernel, a `LOCK` left behind, the page
//! cache keeping what was written but not synced. This module is the workload both the
//! real-kill test (`tests/kill.rs` in the workspace root) and `minnow bench recovery` run in a
//! child process before killing it.
//!
//! ## The workload
//!
//! `accounts` (id, balance; a secondary index on the balance, so every transfer also moves
//! secondary entries) starts with [`OPENING`] in each of `accounts` rows. Each writer thread
//! `t` runs transactions numbered `seq = 0, 1, 2, ...`; transaction `seq`:
//!
//! 1. moves a random amount between two random accounts (`get_for_update` both, `update`
//!    both);
//! 2. inserts journal row `(t, seq)` with the transfer and `pad` bytes of filler (a secondary
//!    index on the source account);
//! 3. deletes journal row `(t, seq - keep)` once `seq >= keep`;
//! 4. commits, and only then reports `ACK t seq` through the caller's sink.
//!
//! Deadlock victims and lock-wait timeouts roll back and retry the same `seq`. A separate
//! thread reports `AGE checkpoint_age capacity` every few milliseconds, so a parent can kill
//! while the log is nearly full.
//!
//! ## What must hold after the kill ([`verify`])
//!
//! With `flush_log_at_trx_commit = 1` an acknowledged commit is durable. For each thread, let
//! `last` be its highest acknowledged `seq` (none if it never committed):
//!
//! - the journal's highest row of the thread, `top`, is `last` or `last + 1` (the one commit
//!   that may have been in flight): nothing acknowledged lost, nothing never committed seen;
//! - the thread's journal rows are exactly `max(0, top - keep + 1) ..= top`: every delete went
//!   with its insert (each transaction all or nothing);
//! - the balances add up to `accounts * OPENING` (no transfer half done);
//! - `Database::check` passes (every tree, every secondary index against its table).

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use minnow::{
    ColumnDef, ColumnType, Config, Database, Error, FlushAtCommit, IndexDef, Isolation, Scan,
    TableDef, Value,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Every account's opening balance.
pub const OPENING: i64 = 1_000_000;

/// The shape of the workload.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Accounts (rows of `accounts`).
    pub accounts: u64,
    /// Writer threads.
    pub threads: u64,
    /// Journal rows each thread keeps (older ones are deleted by later transactions).
    pub keep: u64,
    /// Filler bytes per journal row (redo volume per transaction).
    pub pad: usize,
}

impl Default for Shape {
    fn default() -> Shape {
        Shape {
            accounts: 200,
            threads: 3,
            keep: 50,
            pad: 300,
        }
    }
}

/// A configuration for the killed process: every commit durable, lock waits short (a
/// thread's partner may be in a deadlock retry), the rest as the caller chose.
pub fn config(base: Config) -> Config {
    Config {
        flush_log_at_trx_commit: FlushAtCommit::Sync,
        lock_wait_timeout: Duration::from_millis(500),
        ..base
    }
}

fn accounts_def() -> TableDef {
    TableDef::new("accounts")
        .column(ColumnDef::new("id", ColumnType::U64))
        .column(ColumnDef::new("balance", ColumnType::I64))
        .primary_key(&["id"])
        .index(IndexDef::new("by_balance", &["balance"]))
}

fn journal_def() -> TableDef {
    TableDef::new("journal")
        .column(ColumnDef::new("thread", ColumnType::U64))
        .column(ColumnDef::new("seq", ColumnType::U64))
        .column(ColumnDef::new("src", ColumnType::U64))
        .column(ColumnDef::new("dst", ColumnType::U64))
        .column(ColumnDef::new("amount", ColumnType::I64))
        .column(ColumnDef::new("pad", ColumnType::Var(4000)))
        .primary_key(&["thread", "seq"])
        .index(IndexDef::new("by_src", &["src"]))
}

/// Creates the two tables and loads the opening balances (`Table::load`, bottom-up).
pub fn prepare(db: &Database, shape: &Shape) -> Result<(), Error> {
    let accounts = db.create_table(accounts_def())?;
    db.create_table(journal_def())?;
    accounts.load((0..shape.accounts).map(|id| [Value::UInt(id), Value::Int(OPENING)]))?;
    Ok(())
}

fn int(v: Option<&Value>) -> Option<i64> {
    match v? {
        Value::Int(i) => Some(*i),
        Value::UInt(u) => i64::try_from(*u).ok(),
        _ => None,
    }
}

/// One transaction of thread `t`. `Ok(false)`: rolled back by a deadlock or lock wait
/// timeout, to be retried.
fn transaction(
    db: &Database,
    (accounts, journal): (&minnow::Table, &minnow::Table),
    shape: &Shape,
    (t, seq): (u64, u64),
    rng: &mut SmallRng,
) -> Result<bool, Error> {
    let src = rng.random_range(0..shape.accounts);
    let dst = (src + rng.random_range(1..shape.accounts)) % shape.accounts;
    let amount = rng.random_range(1..1000);
    let mut tx = db.begin_with(Isolation::RepeatableRead)?;
    let body = (|| {
        for (id, delta) in [(src, -amount), (dst, amount)] {
            let row = tx
                .get_for_update(accounts, &[Value::UInt(id)])?
                .ok_or(Error::Corrupt {
                    what: format!("account {id} is missing"),
                })?;
            let balance = int(row.get(1)).ok_or(Error::Corrupt {
                what: format!("account {id} has no integer balance"),
            })?;
            tx.update(accounts, &[Value::UInt(id), Value::Int(balance + delta)])?;
        }
        let pad = vec![b'a' + (seq % 26) as u8; shape.pad];
        tx.insert(
            journal,
            &[
                Value::UInt(t),
                Value::UInt(seq),
                Value::UInt(src),
                Value::UInt(dst),
                Value::Int(amount),
                Value::Bytes(pad),
            ],
        )?;
        if seq >= shape.keep {
            tx.delete(journal, &[Value::UInt(t), Value::UInt(seq - shape.keep)])?;
        }
        Ok(())
    })();
    match body {
        Ok(()) => {
            tx.commit()?;
            Ok(true)
        }
        Err(Error::Deadlock { .. } | Error::LockWaitTimeout { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// The highest `seq` thread `t` has in the journal.
fn last_seq(journal: &minnow::Table, t: u64) -> Result<Option<u64>, Error> {
    let key = vec![Value::UInt(t)];
    let mut last = None;
    for row in journal.scan(Scan::range(
        Bound::Included(key.clone()),
        Bound::Included(key),
    ))? {
        last = int(row?.get(1)).map(|s| s as u64);
    }
    Ok(last)
}

/// Runs the writer threads (and the checkpoint-age reporter) until `stop` is set or a
/// statement fails; each thread's numbering goes on after its last journal row; `report` receives `ACK t seq` after each acknowledged commit and
/// `AGE age capacity` lines. Returns the first error, if any.
pub fn run(
    db: &Database,
    shape: &Shape,
    seed: u64,
    stop: &AtomicBool,
    report: &(dyn Fn(String) + Sync),
) -> Result<(), Error> {
    let accounts = db.table("accounts")?;
    let journal = db.table("journal")?;
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                if let Ok(st) = db.status() {
                    report(format!(
                        "AGE {} {}",
                        st.redo.checkpoint_age, st.redo.capacity
                    ));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        let writers: Vec<_> = (0..shape.threads)
            .map(|t| {
                let (accounts, journal) = (&accounts, &journal);
                s.spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(seed ^ (t << 32));
                    // Go on after the journal's last row of this thread (a database a killed
                    // writer left behind is written to again).
                    let mut seq = last_seq(journal, t)?.map_or(0, |s| s + 1);
                    while !stop.load(Ordering::Relaxed) {
                        match transaction(db, (accounts, journal), shape, (t, seq), &mut rng) {
                            Ok(true) => {
                                report(format!("ACK {t} {seq}"));
                                seq += 1;
                            }
                            Ok(false) => {}
                            Err(e) => {
                                stop.store(true, Ordering::Relaxed);
                                return Err(e);
                            }
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        let mut first = Ok(());
        for w in writers {
            let r = w.join().unwrap_or_else(|_| {
                Err(Error::Corrupt {
                    what: "a writer thread panicked".into(),
                })
            });
            if first.is_ok() {
                first = r;
            }
        }
        stop.store(true, Ordering::Relaxed);
        first
    })
}

/// Reads the `ACK` lines of a killed writer's output: each thread's highest acknowledged
/// `seq`.
pub fn acknowledged<'a>(lines: impl IntoIterator<Item = &'a str>) -> BTreeMap<u64, u64> {
    let mut last = BTreeMap::new();
    for line in lines {
        let mut words = line.split_whitespace();
        if words.next() != Some("ACK") {
            continue;
        }
        if let (Some(Ok(t)), Some(Ok(seq))) = (
            words.next().map(str::parse::<u64>),
            words.next().map(str::parse::<u64>),
        ) {
            let e = last.entry(t).or_insert(seq);
            *e = (*e).max(seq);
        }
    }
    last
}

/// What [`verify`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verified {
    /// Transactions acknowledged before the kill, over all threads.
    pub acknowledged: u64,
    /// Threads whose in-flight commit turned out durable (its journal row is there).
    pub in_flight_kept: u64,
}

/// Checks the database after the kill against the acknowledged commits (see the module
/// docs). `Err` says what does not hold.
pub fn verify(
    db: &Database,
    shape: &Shape,
    acked: &BTreeMap<u64, u64>,
) -> Result<Verified, String> {
    let e = |e: Error| e.to_string();
    let accounts = db.table("accounts").map_err(e)?;
    let journal = db.table("journal").map_err(e)?;
    let mut sum = 0i64;
    for row in accounts.scan(Scan::all()).map_err(e)? {
        let row = row.map_err(e)?;
        sum += int(row.get(1)).ok_or("a balance that is not an integer")?;
    }
    let total = OPENING * shape.accounts as i64;
    if sum != total {
        return Err(format!(
            "the balances add up to {sum}, not {total}: a transfer half done"
        ));
    }
    let mut out = Verified::default();
    for t in 0..shape.threads {
        let lo = vec![Value::UInt(t)];
        let rows: Vec<u64> = journal
            .scan(Scan::range(
                Bound::Included(lo.clone()),
                Bound::Included(lo),
            ))
            .map_err(e)?
            .map(|r| {
                r.map_err(e)
                    .and_then(|r| {
                        int(r.get(1)).ok_or_else(|| "a seq that is not an integer".into())
                    })
                    .map(|s| s as u64)
            })
            .collect::<Result<_, String>>()?;
        let last = acked.get(&t).copied();
        out.acknowledged += last.map_or(0, |l| l + 1);
        let top = rows.last().copied();
        // The journal ends at the last acknowledged seq, or at the next one (the commit that
        // was in flight when the process died reached the log).
        let next = last.map_or(0, |l| l + 1);
        if top == Some(next) {
            out.in_flight_kept += 1;
        } else if top != last {
            return Err(format!(
                "thread {t}: last acknowledged seq {last:?}, but the journal ends at {top:?}"
            ));
        }
        if let Some(top) = top {
            let first = (top + 1).saturating_sub(shape.keep);
            let expected: Vec<u64> = (first..=top).collect();
            if rows != expected {
                return Err(format!(
                    "thread {t}: journal rows {rows:?}, expected {first}..={top} (a delete \
                     without its insert or the other way round)"
                ));
            }
        }
    }
    db.check().map_err(|e| format!("check: {e}"))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acknowledged_takes_each_threads_highest_seq_and_ignores_other_lines() {
        let lines = [
            "running 1 test",
            "ACK 0 0",
            "AGE 100 200",
            "ACK 1 0",
            "ACK 0 1",
            "ACK 0",
        ];
        let got = acknowledged(lines);
        assert_eq!(got, BTreeMap::from([(0, 1), (1, 0)]));
    }

    #[test]
    fn a_workload_run_in_process_verifies() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path(), config(Config::default())).unwrap();
        let shape = Shape {
            accounts: 20,
            threads: 2,
            keep: 5,
            pad: 10,
        };
        prepare(&db, &shape).unwrap();
        let stop = AtomicBool::new(false);
        let lines = std::sync::Mutex::new(Vec::new());
        let report = |l: String| {
            let mut v = lines.lock().unwrap();
            if v.iter().filter(|l: &&String| l.starts_with("ACK")).count() >= 40 {
                stop.store(true, Ordering::Relaxed);
            }
            v.push(l);
        };
        run(&db, &shape, 1, &stop, &report).unwrap();
        let lines = lines.into_inner().unwrap();
        let acked = acknowledged(lines.iter().map(String::as_str));
        let v = verify(&db, &shape, &acked).unwrap();
        assert!(v.acknowledged >= 40, "{v:?}");
        assert_eq!(v.in_flight_kept, 0, "a clean stop has nothing in flight");
        db.close().unwrap();
    }
}
