//! Writer scaling: small write transactions on disjoint keys, at a thread count.
//!
//! The question this answers: when `n` threads write rows no other thread touches, do they
//! get `n` times the work done? Nothing in the workload makes them wait for each other (no
//! shared row, no shared key range), so any shortfall is the engine's: a database-wide lock,
//! a contended latch, the redo log's mutex or its group commit.
//!
//! [`run`] creates a fresh database with the `load_test` table of experiment E7
//! ([`crate::parallel_load::table_def`] with explicit keys: `id BIGINT UNSIGNED` primary key,
//! `k INT UNSIGNED`, `pad VARCHAR(100)`) and bulk-loads `keys_per_thread` rows into each
//! thread's own id range: thread `w` owns the ids `w * 2^32 + 1 ..`, so ranges never meet.
//! Then each thread repeats, for the configured time, one transaction of `rows_per_trx` rows
//! ([`WriteOp`]):
//!
//! - `update`: BEGIN, [`minnow::Transaction::update`] of `rows_per_trx` distinct rows drawn
//!   uniformly from the thread's preloaded ones (a new `k`), COMMIT;
//! - `insert`: BEGIN, [`minnow::Transaction::insert`] of the thread's next `rows_per_trx`
//!   ids (appending to its range), COMMIT.
//!
//! Commits follow the configured `flush_log_at_trx_commit`: with the default (1) each commit
//! waits for its redo to be synced, which group commit can share between threads; with 0 the
//! run is CPU-bound, the case where a serialising lock shows most plainly.
//!
//! The result ([`WritersResult`]) has transactions and rows per second, commit latency
//! percentiles, the process's CPU seconds, and the row lock manager's waits and deadlocks
//! during the run ([`minnow::Database::lock_stats`]). The writers never wait for each other
//! on disjoint keys, so deadlocks stay 0; lock waits need not, where a background task that
//! takes row locks (purge, cleaning a row the writers just updated) meets a writer on a row,
//! and the count shows how often.
//! After the run the table is checked ([`minnow::Database::check`]) and its row count must
//! be the preload plus every inserted row.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use minnow::{Config, Database, Value};
use rand::Rng;
use rand::seq::index;
use serde::Serialize;

use crate::WorkloadError;
use crate::oltp::Latency;
use crate::parallel_load::{KeyMode, TABLE, table_def};
use crate::procfs;
use crate::timed;

/// The distance between two threads' id ranges.
pub const RANGE: u64 = 1 << 32;

/// What each transaction writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WriteOp {
    /// Updates of preloaded rows of the thread's range.
    Update,
    /// Inserts of new ids at the end of the thread's range.
    Insert,
}

impl WriteOp {
    /// `update` or `insert`.
    pub fn name(self) -> &'static str {
        match self {
            WriteOp::Update => "update",
            WriteOp::Insert => "insert",
        }
    }
}

impl std::str::FromStr for WriteOp {
    type Err = WorkloadError;

    fn from_str(s: &str) -> Result<WriteOp, WorkloadError> {
        match s.trim() {
            "update" => Ok(WriteOp::Update),
            "insert" => Ok(WriteOp::Insert),
            other => Err(WorkloadError::Setting {
                setting: "op",
                reason: format!("`{other}` is not update or insert"),
            }),
        }
    }
}

/// The settings of one writer-scaling run.
#[derive(Debug, Clone, Serialize)]
pub struct WritersConfig {
    /// Writer threads.
    pub threads: usize,
    /// Rows each transaction writes.
    pub rows_per_trx: usize,
    /// What the transactions write.
    pub op: WriteOp,
    /// Rows preloaded into each thread's range (the rows `update` picks from).
    pub keys_per_thread: u64,
    /// How long the threads write.
    pub time: Duration,
    /// Seed of the threads' random streams.
    pub seed: u64,
}

impl Default for WritersConfig {
    fn default() -> WritersConfig {
        WritersConfig {
            threads: 1,
            rows_per_trx: 4,
            op: WriteOp::Update,
            keys_per_thread: 10_000,
            time: Duration::from_secs(10),
            seed: 0,
        }
    }
}

impl WritersConfig {
    /// Checks the settings; the error names the first bad one.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        let bad = |setting: &'static str, reason: &str| {
            Err(WorkloadError::Setting {
                setting,
                reason: reason.to_owned(),
            })
        };
        if self.threads == 0 || self.threads as u64 >= RANGE {
            return bad("threads", "must be at least 1");
        }
        if self.rows_per_trx == 0 {
            return bad("rows_per_trx", "must be at least 1");
        }
        if self.keys_per_thread < self.rows_per_trx as u64 || self.keys_per_thread >= RANGE / 2 {
            return bad(
                "keys_per_thread",
                "must be at least rows_per_trx and below 2^31",
            );
        }
        Ok(())
    }
}

/// What one writer-scaling run measured.
#[derive(Debug, Clone, Serialize)]
pub struct WritersResult {
    /// Writer threads.
    pub threads: usize,
    /// What the transactions wrote.
    pub op: WriteOp,
    /// Rows per transaction.
    pub rows_per_trx: usize,
    /// Wall seconds of the writing (not the preload).
    pub seconds: f64,
    /// Transactions committed.
    pub transactions: u64,
    /// Rows written.
    pub rows: u64,
    /// Transactions per second.
    pub tps: f64,
    /// Rows per second.
    pub rows_per_sec: f64,
    /// Transaction latency (BEGIN to the end of COMMIT).
    pub latency: Latency,
    /// Transactions per thread.
    pub per_thread: Vec<u64>,
    /// CPU seconds the process used while writing (user + system), where known.
    pub cpu_seconds: Option<f64>,
    /// Row lock waits during the run (none between the writers, whose keys are disjoint;
    /// any are a background task's, such as purge's, meeting a writer on a row).
    pub lock_waits: u64,
    /// Deadlocks during the run (0 expected: no writer waits for another).
    pub deadlocks: u64,
    /// True when the stop flag ended the run early.
    pub interrupted: bool,
}

/// The id of the `n`-th row (0-based) of thread `w`'s range.
fn id(w: usize, n: u64) -> u64 {
    w as u64 * RANGE + n + 1
}

fn row(id: u64, k: u64) -> Vec<Value> {
    vec![
        Value::UInt(id),
        Value::UInt(k % (1 << 31)),
        Value::Bytes(vec![b'p'; 60]),
    ]
}

/// Creates a database in `dir` with `config`, preloads every thread's range, and runs the
/// writers for `cfg.time` (or until `stop` is set).
pub fn run(
    dir: &Path,
    config: Config,
    cfg: &WritersConfig,
    stop: &AtomicBool,
) -> Result<WritersResult, WorkloadError> {
    cfg.validate()?;
    let db = Database::create(dir, config)?;
    let t = db.create_table(table_def(KeyMode::Explicit))?;
    let preload =
        (0..cfg.threads).flat_map(|w| (0..cfg.keys_per_thread).map(move |n| row(id(w, n), n)));
    t.load(preload)?;
    // The load replaced the table's entry: a handle taken now statements use as it is,
    // where the one from before the load would look the table up in the dictionary at
    // every statement (a shared lock and a shared reference count), which is not what
    // this bench measures.
    let t = db.table(TABLE)?;
    // Each thread's next insert position, past its preloaded rows.
    let next: Vec<std::sync::atomic::AtomicU64> = (0..cfg.threads)
        .map(|_| std::sync::atomic::AtomicU64::new(cfg.keys_per_thread))
        .collect();
    let locks0 = db.lock_stats()?;
    let cpu0 = procfs::cpu_seconds();
    let r = timed::run(cfg.threads, cfg.time, cfg.seed, stop, |w, rng, _st| {
        let mut tx = db.begin()?;
        match cfg.op {
            WriteOp::Update => {
                let picks = index::sample(rng, cfg.keys_per_thread as usize, cfg.rows_per_trx);
                for n in picks {
                    let k: u64 = rng.random();
                    tx.update(&t, &row(id(w, n as u64), k))?;
                }
            }
            WriteOp::Insert => {
                // Only thread w touches next[w]: a relaxed counter is enough.
                let first = next[w].fetch_add(
                    cfg.rows_per_trx as u64,
                    std::sync::atomic::Ordering::Relaxed,
                );
                for n in first..first + cfg.rows_per_trx as u64 {
                    tx.insert(&t, &row(id(w, n), n))?;
                }
            }
        }
        tx.commit()?;
        Ok(cfg.rows_per_trx as u64)
    })?;
    let cpu = match (cpu0, procfs::cpu_seconds()) {
        (Some(a), Some(b)) => Some(b - a),
        _ => None,
    };
    let locks = db.lock_stats()?;
    let report = db.check()?;
    let expected = cfg.keys_per_thread * cfg.threads as u64
        + match cfg.op {
            WriteOp::Update => 0,
            WriteOp::Insert => r.total.rows,
        };
    let found = report.rows.get(TABLE).copied().unwrap_or(0);
    if found != expected {
        return Err(WorkloadError::Verify(format!(
            "table `{TABLE}` holds {found} rows after the run, expected {expected}"
        )));
    }
    drop(t);
    db.close()?;
    Ok(WritersResult {
        threads: cfg.threads,
        op: cfg.op,
        rows_per_trx: cfg.rows_per_trx,
        seconds: r.elapsed.as_secs_f64(),
        transactions: r.total.units,
        rows: r.total.rows,
        tps: r.units_per_sec(),
        rows_per_sec: r.rows_per_sec(),
        latency: r.latency(),
        per_thread: r.units_per_thread.clone(),
        cpu_seconds: cpu,
        lock_waits: locks.waits.saturating_sub(locks0.waits),
        deadlocks: locks.deadlocks.saturating_sub(locks0.deadlocks),
        interrupted: r.interrupted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick(threads: usize, op: WriteOp) -> WritersResult {
        let dir = tempfile::tempdir().unwrap();
        let config = Config {
            flush_log_at_trx_commit: minnow::FlushAtCommit::Lazy,
            ..Config::default()
        };
        let cfg = WritersConfig {
            threads,
            op,
            rows_per_trx: 3,
            keys_per_thread: 50,
            time: Duration::from_millis(150),
            seed: 1,
        };
        run(dir.path(), config, &cfg, &AtomicBool::new(false)).unwrap()
    }

    #[test]
    fn updates_on_disjoint_keys_never_deadlock() {
        let r = quick(2, WriteOp::Update);
        assert!(
            r.transactions > 0 && r.per_thread.iter().all(|&n| n > 0),
            "{r:?}"
        );
        assert_eq!(r.rows, 3 * r.transactions);
        // Lock waits may come from purge meeting a writer on a row; deadlocks cannot.
        assert_eq!(r.deadlocks, 0);
        assert!(r.latency.p95_ms >= r.latency.p50_ms);
    }

    #[test]
    fn inserts_append_to_each_threads_range() {
        // run() itself checks the final row count against the preload plus the inserts.
        let r = quick(3, WriteOp::Insert);
        assert_eq!(r.per_thread.len(), 3);
        assert_eq!(r.rows, 3 * r.transactions);
        assert!(!r.interrupted);
    }

    #[test]
    fn bad_settings_are_refused() {
        let bad = |cfg: WritersConfig| cfg.validate().unwrap_err().to_string();
        assert!(
            bad(WritersConfig {
                threads: 0,
                ..WritersConfig::default()
            })
            .contains("threads")
        );
        assert!(
            bad(WritersConfig {
                rows_per_trx: 20,
                keys_per_thread: 10,
                ..WritersConfig::default()
            })
            .contains("keys_per_thread")
        );
        assert_eq!("insert".parse::<WriteOp>().unwrap(), WriteOp::Insert);
        assert!("upsert".parse::<WriteOp>().is_err());
    }
}
