//! The cost of a status snapshot ([`minnow::Database::status`]) while many transactions are
//! open and hold row locks (seed 004, "Performance of status commands": InnoDB's `SHOW
//! INNODB STATUS` spent 0.3 s walking structures for two rarely read counters, and `SHOW
//! GLOBAL STATUS` walked every thread's variables; experiment E10 measured minnow's snapshot
//! against busy threads, this against open transactions and locks).
//!
//! [`run`] loads one table, then for each count `n` of [`StatusLoadConfig::open`]:
//!
//! 1. begins `n` transactions, each updating `locks_per_trx` rows of its own (so each holds
//!    that many exclusive row locks and an undo log), and leaves them open;
//! 2. takes `calls` snapshots in a row, `rounds` times: the time per snapshot (median and
//!    range of the rounds), and checks that the snapshot counts the `n` transactions and
//!    their locks;
//! 3. if `threads > 0`, starts that many writers (autocommit updates of rows no open
//!    transaction holds) for `millis` twice: alone, then beside a poller that takes a
//!    snapshot every millisecond (as a monitor would) and times each one; reports the writers'
//!    updates per second both ways and the poller's snapshot times;
//! 4. rolls the `n` transactions back.
//!
//! A snapshot that walked the transactions or the lock table would grow with `n`; one that
//! took a latch writers take would show in the writers' rate beside the poller.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use minnow::{ColumnDef, ColumnType, Database, Table, TableDef, Transaction, Value};
use serde::Serialize;

use crate::WorkloadError;
use crate::spread::Spread;

/// The table's name.
pub const TABLE: &str = "status_load";

/// The settings of a run.
#[derive(Debug, Clone)]
pub struct StatusLoadConfig {
    /// Open transactions to measure with, in order (each count on its own, the previous
    /// ones rolled back).
    pub open: Vec<usize>,
    /// Rows each open transaction updates (and so locks).
    pub locks_per_trx: usize,
    /// Snapshots per round.
    pub calls: u64,
    /// Rounds of `calls` snapshots.
    pub rounds: usize,
    /// Writer threads for step 3 (0: skip it).
    pub threads: usize,
    /// Milliseconds each half of step 3 runs.
    pub millis: u64,
    /// Rows the writers of step 3 update (after the ones the open transactions lock).
    pub writer_rows: u64,
}

/// One count's figures.
#[derive(Debug, Clone, Serialize)]
pub struct StatusPoint {
    /// Open transactions.
    pub open: usize,
    /// Active transactions the snapshot reported.
    pub active: u64,
    /// Nanoseconds per snapshot, taken back to back with nothing else running.
    pub ns_per_status: Spread,
    /// Writers' updates per second alone (step 3; 0 when skipped).
    pub writer_ops_alone: f64,
    /// Writers' updates per second beside the 1 kHz poller.
    pub writer_ops_polled: f64,
    /// The poller's snapshots: how many, and the median and slowest in nanoseconds.
    pub polled_snapshots: u64,
    /// The median snapshot the poller took, in nanoseconds.
    pub polled_median_ns: f64,
    /// The slowest snapshot the poller took, in nanoseconds.
    pub polled_max_ns: f64,
}

fn table_def() -> TableDef {
    TableDef::new(TABLE)
        .column(ColumnDef::new("id", ColumnType::U64))
        .column(ColumnDef::new("v", ColumnType::U64))
        .primary_key(&["id"])
}

/// Runs the steps of the module docs on `db` (a fresh database), reporting each count through
/// `progress` as it ends.
pub fn run(
    db: &Database,
    cfg: &StatusLoadConfig,
    progress: &mut dyn FnMut(&StatusPoint),
) -> Result<Vec<StatusPoint>, WorkloadError> {
    if cfg.calls == 0 || cfg.rounds == 0 || cfg.locks_per_trx == 0 || cfg.writer_rows == 0 {
        return Err(WorkloadError::Setting {
            setting: "calls, rounds, locks_per_trx, writer_rows",
            reason: "must each be at least 1".into(),
        });
    }
    let most = cfg.open.iter().copied().max().unwrap_or(0);
    let (table, locked) = prepare(db, most, cfg.locks_per_trx, cfg.writer_rows)?;
    let mut out = Vec::new();
    for &n in &cfg.open {
        let open = open_transactions(db, &table, n, cfg.locks_per_trx)?;
        let st = db.status()?;
        // The open transactions, plus none or a background one of purge's.
        if st.transactions.active < n as u64 {
            return Err(WorkloadError::Verify(format!(
                "status counts {} active transactions with {n} open",
                st.transactions.active
            )));
        }
        let mut rounds = Vec::new();
        for _ in 0..cfg.rounds {
            let t = Instant::now();
            for _ in 0..cfg.calls {
                std::hint::black_box(db.status()?);
            }
            rounds.push(t.elapsed().as_nanos() as f64 / cfg.calls as f64);
        }
        let ns_per_status = Spread::of(&rounds).ok_or_else(|| WorkloadError::Setting {
            setting: "rounds",
            reason: "no round ran".into(),
        })?;
        let mut point = StatusPoint {
            open: n,
            active: st.transactions.active,
            ns_per_status,
            writer_ops_alone: 0.0,
            writer_ops_polled: 0.0,
            polled_snapshots: 0,
            polled_median_ns: 0.0,
            polled_max_ns: 0.0,
        };
        if cfg.threads > 0 {
            let first = locked;
            point.writer_ops_alone = writers(db, cfg, first, None)?;
            let mut times = Vec::new();
            point.writer_ops_polled = writers(db, cfg, first, Some(&mut times))?;
            point.polled_snapshots = times.len() as u64;
            let s = Spread::of(&times);
            point.polled_median_ns = s.map_or(0.0, |s| s.median);
            point.polled_max_ns = s.map_or(0.0, |s| s.max);
        }
        for tx in open {
            tx.rollback()?;
        }
        progress(&point);
        out.push(point);
    }
    Ok(out)
}

/// Creates the table with rows for `most` transactions of `locks_per_trx` rows each, then
/// `writer_rows` for the writers. Returns the table and the first of the writers' rows.
pub fn prepare(
    db: &Database,
    most: usize,
    locks_per_trx: usize,
    writer_rows: u64,
) -> Result<(Table, u64), WorkloadError> {
    let table = db.create_table(table_def())?;
    let locked = (most * locks_per_trx) as u64;
    table.insert_many((0..locked + writer_rows).map(|i| vec![Value::UInt(i), Value::UInt(0)]))?;
    Ok((table, locked))
}

/// Begins `n` transactions, each updating (and so locking) `locks_per_trx` rows of its own.
pub fn open_transactions(
    db: &Database,
    table: &Table,
    n: usize,
    locks_per_trx: usize,
) -> Result<Vec<Transaction>, WorkloadError> {
    let mut open = Vec::with_capacity(n);
    for t in 0..n {
        let mut tx = db.begin()?;
        for r in 0..locks_per_trx {
            let id = (t * locks_per_trx + r) as u64;
            tx.update(table, &[Value::UInt(id), Value::UInt(1)])?;
        }
        open.push(tx);
    }
    Ok(open)
}

/// Runs `cfg.threads` writers over the rows from `first` for `cfg.millis`; with `poll`, this
/// thread takes a snapshot every millisecond meanwhile and records how long each took.
/// Returns the writers' updates per second.
fn writers(
    db: &Database,
    cfg: &StatusLoadConfig,
    first: u64,
    poll: Option<&mut Vec<f64>>,
) -> Result<f64, WorkloadError> {
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let per = cfg.writer_rows / cfg.threads as u64;
    let started = Instant::now();
    let handles: Vec<_> = (0..cfg.threads as u64)
        .map(|w| {
            let (db, stop, done) = (db.clone(), Arc::clone(&stop), Arc::clone(&done));
            std::thread::spawn(move || -> Result<(), WorkloadError> {
                let table = db.table(TABLE)?;
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let id = first + w * per + i % per.max(1);
                    table.update(&[Value::UInt(id), Value::UInt(i)])?;
                    done.fetch_add(1, Ordering::Relaxed);
                    i += 1;
                }
                Ok(())
            })
        })
        .collect();
    let run_for = Duration::from_millis(cfg.millis);
    let mut result: Result<(), WorkloadError> = Ok(());
    match poll {
        Some(times) => {
            while started.elapsed() < run_for {
                let t = Instant::now();
                if let Err(e) = db.status() {
                    result = Err(e.into());
                    break;
                }
                times.push(t.elapsed().as_nanos() as f64);
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        None => std::thread::sleep(run_for),
    }
    stop.store(true, Ordering::Relaxed);
    let secs = started.elapsed().as_secs_f64();
    for h in handles {
        h.join().map_err(|_| WorkloadError::WorkerPanicked)??;
    }
    result?;
    Ok(done.load(Ordering::Relaxed) as f64 / secs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use minnow::Config;

    #[test]
    fn snapshots_count_the_open_transactions() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(
            dir.path(),
            Config {
                buffer_pool_size: 4 << 20,
                flush_log_at_trx_commit: minnow::FlushAtCommit::Lazy,
                ..Config::default()
            },
        )
        .unwrap();
        let cfg = StatusLoadConfig {
            open: vec![0, 5],
            locks_per_trx: 2,
            calls: 10,
            rounds: 3,
            threads: 1,
            millis: 10,
            writer_rows: 100,
        };
        let points = run(&db, &cfg, &mut |_| {}).unwrap();
        assert_eq!(points.len(), 2);
        assert!(points.get(1).unwrap().active >= 5);
        assert!(points.iter().all(|p| p.writer_ops_alone > 0.0));
        assert_eq!(db.status().unwrap().transactions.active, 0);
        db.check().unwrap();
    }
}
