//! Hot rows: many writers updating the same few rows, in random order, so they queue on row
//! locks and deadlock.
//!
//! Disjoint keys ([`crate::writers`]) show what the engine costs when nobody waits; this
//! workload shows the other end: what a lock queue and the deadlock detector cost when
//! everybody does. [`run`] creates a fresh database with the `load_test` table of experiment
//! E7 ([`crate::parallel_load::table_def`] with explicit keys) holding `hot` rows (ids
//! `1..=hot`, `k = 0`), and has `threads` threads repeat one transaction each:
//!
//! ```text
//! BEGIN
//! for each of rows_per_trx distinct hot ids, in random order:
//!     SELECT * FROM load_test WHERE id = ? FOR UPDATE   -- Transaction::get_for_update
//!     UPDATE load_test SET k = k + 1 WHERE id = ?       -- Transaction::update
//! COMMIT
//! ```
//!
//! Two transactions that lock two shared rows in opposite orders deadlock; the engine picks a
//! victim and rolls it back ([`minnow::Error::Deadlock`]), and the worker retries the same
//! transaction, as an application must. A lock wait timeout
//! ([`minnow::Error::LockWaitTimeout`], only the statement rolled back) is answered with a
//! ROLLBACK and a retry too. A unit of the run is one *committed* transaction, its latency
//! covering every attempt.
//!
//! Reported ([`HotRowsResult`]): commits per second; deadlock victims and lock wait timeouts
//! the workers saw, per second; the row lock manager's own counters over the run
//! ([`minnow::Database::lock_stats`]: waits and deadlocks); the latency of the locking reads
//! (mean, p95, p99: an uncontended one costs a B-tree lookup, a queued one also the wait, so
//! this is the lock queue's cost as a client sees it); and the transactions' latency.
//!
//! The run then checks that no update was lost: the sum of `k` over the hot rows must equal
//! `rows_per_trx` times the commits ([`WorkloadError::Verify`] if not).

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use minnow::{Config, Database, Error, Table, Transaction, Value};
use rand::seq::index;
use serde::Serialize;

use crate::WorkloadError;
use crate::oltp::Latency;
use crate::parallel_load::{KeyMode, table_def};
use crate::timed::{self, WorkerStats};

/// The settings of one hot-row run.
#[derive(Debug, Clone, Serialize)]
pub struct HotRowsConfig {
    /// Writer threads.
    pub threads: usize,
    /// Hot rows (ids `1..=hot`).
    pub hot: u64,
    /// Distinct hot rows each transaction locks and updates.
    pub rows_per_trx: usize,
    /// How long the threads write.
    pub time: Duration,
    /// Seed of the threads' random streams.
    pub seed: u64,
}

impl Default for HotRowsConfig {
    fn default() -> HotRowsConfig {
        HotRowsConfig {
            threads: 8,
            hot: 4,
            rows_per_trx: 2,
            time: Duration::from_secs(10),
            seed: 0,
        }
    }
}

impl HotRowsConfig {
    /// Checks the settings; the error names the first bad one.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        let bad = |setting: &'static str, reason: &str| {
            Err(WorkloadError::Setting {
                setting,
                reason: reason.to_owned(),
            })
        };
        if self.threads == 0 {
            return bad("threads", "must be at least 1");
        }
        if self.hot == 0 || self.hot > 1 << 20 {
            return bad("hot", "must be in 1..=1048576");
        }
        if self.rows_per_trx == 0 || self.rows_per_trx as u64 > self.hot {
            return bad("rows_per_trx", "must be in 1..=hot");
        }
        Ok(())
    }
}

/// What one hot-row run measured.
#[derive(Debug, Clone, Serialize)]
pub struct HotRowsResult {
    /// Writer threads.
    pub threads: usize,
    /// Hot rows.
    pub hot: u64,
    /// Rows each transaction updates.
    pub rows_per_trx: usize,
    /// Wall seconds of the run.
    pub seconds: f64,
    /// Transactions committed.
    pub commits: u64,
    /// Commits per second.
    pub commits_per_sec: f64,
    /// Deadlock victims among the workers' attempts (each attempt retried).
    pub deadlocks: u64,
    /// Deadlock victims per second.
    pub deadlocks_per_sec: f64,
    /// Lock wait timeouts the workers met (each attempt rolled back and retried).
    pub lock_wait_timeouts: u64,
    /// Row lock requests that had to wait, by the lock manager's count.
    pub lock_waits: u64,
    /// Lock waits per second.
    pub lock_waits_per_sec: f64,
    /// Deadlocks by the lock manager's count (equals `deadlocks` unless something else ran).
    pub engine_deadlocks: u64,
    /// Latency of the locking reads (`get_for_update`), including any wait in the queue.
    pub lock_latency: Latency,
    /// Latency of a committed transaction, over all its attempts.
    pub latency: Latency,
    /// Commits per thread.
    pub per_thread: Vec<u64>,
    /// True when the stop flag ended the run early.
    pub interrupted: bool,
}

/// One attempt at the transaction; the caller retries after a deadlock or a timeout.
fn attempt(db: &Database, t: &Table, ids: &[u64], st: &mut WorkerStats) -> Result<(), Error> {
    let mut tx: Transaction = db.begin()?;
    for &id in ids {
        let t0 = Instant::now();
        let row = tx.get_for_update(t, &[Value::UInt(id)]);
        st.record_step(t0);
        let Some(mut row) = row? else {
            return Err(Error::RowNotFound {
                table: t.def().name.clone(),
                key: vec![Value::UInt(id)],
            });
        };
        if let Some(Value::UInt(k)) = row.get_mut(1) {
            *k += 1;
        }
        tx.update(t, &row)?;
    }
    tx.commit()?;
    Ok(())
}

/// Creates a database in `dir` with `config`, loads the hot rows and runs the writers for
/// `cfg.time` (or until `stop` is set).
pub fn run(
    dir: &Path,
    config: Config,
    cfg: &HotRowsConfig,
    stop: &AtomicBool,
) -> Result<HotRowsResult, WorkloadError> {
    cfg.validate()?;
    let db = Database::create(dir, config)?;
    let t = db.create_table(table_def(KeyMode::Explicit))?;
    t.load((1..=cfg.hot).map(|id| {
        vec![
            Value::UInt(id),
            Value::UInt(0),
            Value::Bytes(vec![b'p'; 60]),
        ]
    }))?;
    let locks0 = db.lock_stats()?;
    let r = timed::run(cfg.threads, cfg.time, cfg.seed, stop, |_, rng, st| {
        let ids: Vec<u64> = index::sample(rng, cfg.hot as usize, cfg.rows_per_trx)
            .into_iter()
            .map(|i| i as u64 + 1)
            .collect();
        loop {
            match attempt(&db, &t, &ids, st) {
                Ok(()) => return Ok(cfg.rows_per_trx as u64),
                // The engine has rolled the transaction back already.
                Err(Error::Deadlock { .. }) => st.deadlocks += 1,
                // Only the statement was rolled back; dropping the transaction rolled back
                // the rest.
                Err(Error::LockWaitTimeout { .. }) => st.lock_wait_timeouts += 1,
                Err(e) => return Err(e.into()),
            }
        }
    })?;
    let locks = db.lock_stats()?;
    let mut sum = 0u64;
    for id in 1..=cfg.hot {
        if let Some(Value::UInt(k)) = t.get(&[Value::UInt(id)])?.and_then(|r| r.get(1).cloned()) {
            sum += k;
        }
    }
    let want = r.total.units * cfg.rows_per_trx as u64;
    if sum != want {
        return Err(WorkloadError::Verify(format!(
            "hot rows: the k columns sum to {sum} after {} commits of {} increments: expected {want} (lost or extra updates)",
            r.total.units, cfg.rows_per_trx
        )));
    }
    drop(t);
    db.close()?;
    let secs = r.elapsed;
    let lock_waits = locks.waits.saturating_sub(locks0.waits);
    Ok(HotRowsResult {
        threads: cfg.threads,
        hot: cfg.hot,
        rows_per_trx: cfg.rows_per_trx,
        seconds: secs.as_secs_f64(),
        commits: r.total.units,
        commits_per_sec: r.units_per_sec(),
        deadlocks: r.total.deadlocks,
        deadlocks_per_sec: crate::oltp::per_sec(r.total.deadlocks, secs),
        lock_wait_timeouts: r.total.lock_wait_timeouts,
        lock_waits,
        lock_waits_per_sec: crate::oltp::per_sec(lock_waits, secs),
        engine_deadlocks: locks.deadlocks.saturating_sub(locks0.deadlocks),
        lock_latency: r.step_latency(),
        latency: r.latency(),
        per_thread: r.units_per_thread.clone(),
        interrupted: r.interrupted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eight_writers_on_two_hot_rows_lose_no_update() {
        let dir = tempfile::tempdir().unwrap();
        let config = Config {
            flush_log_at_trx_commit: minnow::FlushAtCommit::Lazy,
            ..Config::default()
        };
        let cfg = HotRowsConfig {
            threads: 8,
            hot: 2,
            rows_per_trx: 2,
            time: Duration::from_millis(300),
            seed: 3,
        };
        // run() itself fails if the sum of k is not rows_per_trx x commits.
        let r = run(dir.path(), config, &cfg, &AtomicBool::new(false)).unwrap();
        assert!(r.commits > 0, "{r:?}");
        assert_eq!(r.per_thread.iter().sum::<u64>(), r.commits);
        assert_eq!(r.lock_wait_timeouts, 0);
        // Every victim the workers saw is a deadlock the lock manager found.
        assert_eq!(r.deadlocks, r.engine_deadlocks);
        assert!(r.lock_latency.max_ms >= r.lock_latency.p50_ms);
    }

    #[test]
    fn bad_settings_are_refused() {
        let cfg = HotRowsConfig {
            hot: 2,
            rows_per_trx: 3,
            ..HotRowsConfig::default()
        };
        assert!(
            cfg.validate()
                .unwrap_err()
                .to_string()
                .contains("rows_per_trx")
        );
        assert!(HotRowsConfig::default().validate().is_ok());
    }
}
