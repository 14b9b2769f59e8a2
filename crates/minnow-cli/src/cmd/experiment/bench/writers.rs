//! `minnow bench writers` and `minnow bench hot-rows`: concurrent writers with nothing to
//! share ([`minnow_workload::writers`]) and with everything to share
//! ([`minnow_workload::hot_rows`]).
//!
//! ```text
//! minnow bench writers [--threads 1,2,4,8] [--op update|insert] [--rows-per-trx 4] \
//!     [--keys-per-thread 10000] [--secs 10] [--flush-log-at-trx-commit 0|1|2] \
//!     [--set name=value ...] [--csv | --json]
//! minnow bench hot-rows [--threads 8] [--hot 4] [--rows-per-trx 2] [--secs 10] \
//!     [--flush-log-at-trx-commit 0|1|2] [--set name=value ...] [--csv | --json]
//! ```
//!
//! Each thread count runs on a fresh database in a temporary directory under the current one
//! (so on its file system, not a tmpfs `/tmp`), removed afterwards.
//!
//! `writers` prints, per thread count, transactions and rows per second, the ratio of the
//! transactions per second to the first thread count's (`x first`: with `--threads 1,2,...`
//! the scaling over one thread), commit latency percentiles, CPU seconds and the row lock
//! waits and deadlocks (deadlocks stay 0 on disjoint keys; waits only where purge, which
//! locks each row it cleans, meets a writer). `hot-rows` prints commits, deadlock victims and
//! lock waits per second, lock wait timeouts, the locking reads' latency (mean, p95, p99,
//! queueing included) and the transactions' p95 over their retries.
//!
//! Output: a table by default; `--csv` one row per thread count after a header; `--json`
//! one document (settings, knobs, runs).

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::Args;
use minnow::Config;
use minnow_workload::hot_rows::{self, HotRowsConfig};
use minnow_workload::writers::{self, WriteOp, WritersConfig, WritersResult};
use serde::Serialize;

use super::args::{KnobArgs, ratio, thread_list};
use super::csv_out;
use super::{install_ctrlc, scratch_dir, usage, workload_err};
use crate::cli::Status;
use crate::output::CliError;
use crate::report::emit_json;

/// The flags both commands share.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Seconds per thread count.
    #[arg(long, default_value_t = 10)]
    pub secs: u64,
    /// Seed of the threads' random streams.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Knobs.
    #[command(flatten)]
    pub knobs: KnobArgs,
    /// CSV output: a header, then one row per thread count.
    #[arg(long)]
    pub csv: bool,
}

/// The flags of `minnow bench writers`.
#[derive(Debug, Args)]
pub struct WritersArgs {
    /// Thread counts, comma-separated; each runs on a fresh database.
    #[arg(long, default_value = "1,2,4,8")]
    pub threads: String,
    /// What each transaction does: `update` preloaded rows of the thread's range, or
    /// `insert` new ids at its end.
    #[arg(long, default_value = "update")]
    pub op: String,
    /// Rows each transaction writes.
    #[arg(long, default_value_t = 4)]
    pub rows_per_trx: usize,
    /// Rows preloaded into each thread's key range.
    #[arg(long, default_value_t = 10_000)]
    pub keys_per_thread: u64,
    /// Duration, seed, knobs and output.
    #[command(flatten)]
    pub run: RunArgs,
}

/// The flags of `minnow bench hot-rows`.
#[derive(Debug, Args)]
pub struct HotRowsArgs {
    /// Thread counts, comma-separated; each runs on a fresh database.
    #[arg(long, default_value = "8")]
    pub threads: String,
    /// Hot rows every thread updates.
    #[arg(long, default_value_t = 4)]
    pub hot: u64,
    /// Distinct hot rows each transaction locks and updates, in random order.
    #[arg(long, default_value_t = 2)]
    pub rows_per_trx: usize,
    /// Duration, seed, knobs and output.
    #[command(flatten)]
    pub run: RunArgs,
}

/// One writers run with its ratio to the first.
#[derive(Debug, Serialize)]
struct WritersRow {
    #[serde(flatten)]
    result: WritersResult,
    /// Transactions per second over the first thread count's.
    scaling: f64,
}

/// Everything `--json` prints.
#[derive(Debug, Serialize)]
struct Report<S, R> {
    workload: &'static str,
    settings: S,
    knobs: Vec<String>,
    runs: Vec<R>,
}

fn secs(s: u64) -> Result<Duration, CliError> {
    if s == 0 {
        return Err(usage("--secs must be at least 1"));
    }
    Ok(Duration::from_secs(s))
}

/// What both commands set up the same way: the output format, the thread counts, the
/// configuration and the Ctrl-C flag.
struct Sweep {
    json: bool,
    csv: bool,
    threads: Vec<usize>,
    config: Config,
    stop: Arc<AtomicBool>,
}

impl Sweep {
    fn new(json: bool, threads: &str, run: &RunArgs) -> Result<Sweep, CliError> {
        let csv = run.csv;
        if json && csv {
            return Err(usage("--json and --csv cannot be used together"));
        }
        let sweep = Sweep {
            json,
            csv,
            threads: thread_list(threads)?,
            config: run.knobs.config(Config::default())?,
            stop: Arc::new(AtomicBool::new(false)),
        };
        install_ctrlc(&sweep.stop);
        Ok(sweep)
    }

    /// Runs `one` for each thread count, on a fresh directory each (removed afterwards),
    /// until the counts run out or Ctrl-C; returns what each run returned.
    fn each<R>(
        &self,
        mut one: impl FnMut(usize, &Path) -> Result<R, CliError>,
    ) -> Result<Vec<R>, CliError> {
        let mut runs = Vec::with_capacity(self.threads.len());
        for &n in &self.threads {
            if self.stop.load(Ordering::Relaxed) {
                break;
            }
            let (_temp, dir) = scratch_dir(&None)?;
            runs.push(one(n, &dir)?);
        }
        Ok(runs)
    }
}

/// Runs `minnow bench writers`.
pub fn run_writers(a: &WritersArgs, json: bool, out: &mut dyn Write) -> Result<Status, CliError> {
    let sw = Sweep::new(json, &a.threads, &a.run)?;
    let (json, csv, config) = (sw.json, sw.csv, &sw.config);
    let mut cfg = WritersConfig {
        threads: 1,
        rows_per_trx: a.rows_per_trx,
        op: a.op.parse::<WriteOp>().map_err(workload_err)?,
        keys_per_thread: a.keys_per_thread,
        time: secs(a.run.secs)?,
        seed: a.run.seed,
    };
    cfg.validate().map_err(workload_err)?;
    if csv {
        csv_out::header(
            out,
            "threads,op,rows_per_trx,seconds,transactions,rows,tps,rows_per_sec,scaling,lat_avg_ms,lat_p50_ms,lat_p95_ms,lat_p99_ms,cpu_seconds,lock_waits,deadlocks",
        )?;
    } else if !json {
        writeln!(
            out,
            "minnow bench writers: {} of {} row(s) per transaction on disjoint keys, flush_log_at_trx_commit={}, {} s per thread count",
            cfg.op.name(),
            cfg.rows_per_trx,
            config.flush_log_at_trx_commit.setting(),
            a.run.secs
        )?;
        writeln!(
            out,
            "{:>7} {:>10} {:>11} {:>8} {:>8} {:>8} {:>8} {:>7} {:>10} {:>9}",
            "threads",
            "tx/s",
            "rows/s",
            "x first",
            "avg ms",
            "p95 ms",
            "p99 ms",
            "cpu s",
            "lock waits",
            "deadlocks"
        )?;
    }
    out.flush()?;
    let mut first_tps = None;
    let runs = sw.each(|n, dir| {
        cfg.threads = n;
        let r = writers::run(dir, config.clone(), &cfg, &sw.stop).map_err(workload_err)?;
        let scaling = ratio(r.tps, *first_tps.get_or_insert(r.tps));
        let l = &r.latency;
        let cpu = r
            .cpu_seconds
            .map_or_else(String::new, |c| format!("{c:.2}"));
        if csv {
            csv_out::row(
                out,
                [
                    r.threads.to_string(),
                    r.op.name().to_string(),
                    r.rows_per_trx.to_string(),
                    format!("{:.3}", r.seconds),
                    r.transactions.to_string(),
                    r.rows.to_string(),
                    format!("{:.1}", r.tps),
                    format!("{:.1}", r.rows_per_sec),
                    format!("{scaling:.3}"),
                    format!("{:.3}", l.avg_ms),
                    format!("{:.3}", l.p50_ms),
                    format!("{:.3}", l.p95_ms),
                    format!("{:.3}", l.p99_ms),
                    cpu.clone(),
                    r.lock_waits.to_string(),
                    r.deadlocks.to_string(),
                ],
            )?;
        } else if !json {
            writeln!(
                out,
                "{:>7} {:>10.1} {:>11.1} {:>8.2} {:>8.3} {:>8.3} {:>8.3} {:>7} {:>10} {:>9}",
                r.threads,
                r.tps,
                r.rows_per_sec,
                scaling,
                l.avg_ms,
                l.p95_ms,
                l.p99_ms,
                cpu,
                r.lock_waits,
                r.deadlocks
            )?;
        }
        out.flush()?;
        Ok(WritersRow { result: r, scaling })
    })?;
    if json {
        emit_json(
            out,
            &Report {
                workload: "writers",
                settings: cfg,
                knobs: a.run.knobs.describe(),
                runs,
            },
        )?;
    }
    Ok(Status::Clean)
}

/// Runs `minnow bench hot-rows`.
pub fn run_hot_rows(a: &HotRowsArgs, json: bool, out: &mut dyn Write) -> Result<Status, CliError> {
    let sw = Sweep::new(json, &a.threads, &a.run)?;
    let (json, csv, config) = (sw.json, sw.csv, &sw.config);
    let mut cfg = HotRowsConfig {
        threads: 1,
        hot: a.hot,
        rows_per_trx: a.rows_per_trx,
        time: secs(a.run.secs)?,
        seed: a.run.seed,
    };
    cfg.validate().map_err(workload_err)?;
    if csv {
        csv_out::header(
            out,
            "threads,hot,rows_per_trx,seconds,commits,commits_per_sec,deadlocks,deadlocks_per_sec,lock_wait_timeouts,lock_waits,lock_waits_per_sec,lock_avg_ms,lock_p95_ms,lock_p99_ms,trx_p95_ms",
        )?;
    } else if !json {
        writeln!(
            out,
            "minnow bench hot-rows: {} distinct row(s) of {} hot per transaction, locked in random order, deadlock victims retried, flush_log_at_trx_commit={}, {} s per thread count",
            cfg.rows_per_trx,
            cfg.hot,
            config.flush_log_at_trx_commit.setting(),
            a.run.secs
        )?;
        writeln!(
            out,
            "{:>7} {:>10} {:>11} {:>12} {:>8} {:>11} {:>11} {:>11} {:>10}",
            "threads",
            "commits/s",
            "deadlocks/s",
            "lock waits/s",
            "timeouts",
            "lock avg ms",
            "lock p95 ms",
            "lock p99 ms",
            "trx p95 ms"
        )?;
    }
    out.flush()?;
    let runs = sw.each(|n, dir| {
        cfg.threads = n;
        let r = hot_rows::run(dir, config.clone(), &cfg, &sw.stop).map_err(workload_err)?;
        let l = &r.lock_latency;
        if csv {
            csv_out::row(
                out,
                [
                    r.threads.to_string(),
                    r.hot.to_string(),
                    r.rows_per_trx.to_string(),
                    format!("{:.3}", r.seconds),
                    r.commits.to_string(),
                    format!("{:.1}", r.commits_per_sec),
                    r.deadlocks.to_string(),
                    format!("{:.1}", r.deadlocks_per_sec),
                    r.lock_wait_timeouts.to_string(),
                    r.lock_waits.to_string(),
                    format!("{:.1}", r.lock_waits_per_sec),
                    format!("{:.3}", l.avg_ms),
                    format!("{:.3}", l.p95_ms),
                    format!("{:.3}", l.p99_ms),
                    format!("{:.3}", r.latency.p95_ms),
                ],
            )?;
        } else if !json {
            writeln!(
                out,
                "{:>7} {:>10.1} {:>11.1} {:>12.1} {:>8} {:>11.3} {:>11.3} {:>11.3} {:>10.3}",
                r.threads,
                r.commits_per_sec,
                r.deadlocks_per_sec,
                r.lock_waits_per_sec,
                r.lock_wait_timeouts,
                l.avg_ms,
                l.p95_ms,
                l.p99_ms,
                r.latency.p95_ms
            )?;
        }
        out.flush()?;
        Ok(r)
    })?;
    if json {
        emit_json(
            out,
            &Report {
                workload: "hot-rows",
                settings: cfg,
                knobs: a.run.knobs.describe(),
                runs,
            },
        )?;
    }
    Ok(Status::Clean)
}
