//! `minnow bench warmup`: experiment E11, throughput after a restart with and without the
//! buffer pool dump load ([`minnow_workload::warmup`]).
//!
//! ```text
//! minnow bench warmup [--rows 1000000] [--hot-rows 2000] [--hot-pct 99] [--threads 4]
//!     [--interval-ms 100] [--warm-secs 10] [--measure-secs 5] [--dir DIR] [--hdd]
//!     [--set name=value ...] [--csv | --json]
//! ```
//!
//! Creates the database (with `flush_method=O_DIRECT` unless `--set` says otherwise, so the
//! OS cache does not keep the table across the restarts), loads the `warm` table, reads it to a
//! steady state, then restarts it twice: without loading `ib_buffer_pool` (`cold`) and with
//! it (`warm`). Size the pool with `--set buffer_pool_size=...` so the table does not fit and
//! the hot set does; `--set buffer_pool_dump_pct=...` sets how much of the LRU list is dumped.
//! `--hdd` puts every file of the database behind `minnow-io`'s latency model of a 7200 rpm
//! disk (each IO sleeps for its modelled seek, rotation and transfer, one head for all
//! files): the numbers are then *emulated*, and the output says so.
//!
//! Text prints each restart's throughput per interval as a bar next to the steady state,
//! and the time to reach 90% of it; `--csv` prints one row per interval
//! (`phase,t,reads_per_sec,misses,pages_read`, phases `first`, `cold`, `warm`); `--json` the
//! whole result.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use minnow::backend::{Backend, DiskProfile, LatencyModel};
use minnow::{Config, FlushMethod, IoBackend};
use minnow_workload::warmup::{self, Interval, Restart, WarmupConfig};
use serde::Serialize;

use super::csv_out;
use super::{scratch_dir, usage, workload_err};
use crate::cli::Status;
use crate::output::CliError;
use crate::report::emit_json;

/// The flags of `minnow bench warmup`.
#[derive(Debug, Args)]
pub struct WarmupArgs {
    /// Rows in the table (about 90 to a 16 KiB page).
    #[arg(long, default_value_t = 1_000_000)]
    pub rows: u64,
    /// Rows in the hot set, spread evenly over the table (about one leaf page each).
    #[arg(long, default_value_t = 2_000)]
    pub hot_rows: u64,
    /// Percentage of reads that go to the hot set (the rest pick any row).
    #[arg(long, default_value_t = 99)]
    pub hot_pct: u32,
    /// Reader threads.
    #[arg(long, default_value_t = 4)]
    pub threads: usize,
    /// Milliseconds per reporting interval.
    #[arg(long, default_value_t = 100)]
    pub interval_ms: u64,
    /// Seconds of reads before the restart (the second half is the steady state).
    #[arg(long, default_value_t = 10)]
    pub warm_secs: u64,
    /// Seconds of reads after each restart.
    #[arg(long, default_value_t = 5)]
    pub measure_secs: u64,
    /// Seed of the readers' random streams.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Data directory to create the database in (must not hold one; kept afterwards).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// A Config knob as name=value, by its InnoDB name (repeatable).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// Emulate a 7200 rpm disk (minnow-io's latency model, sleeping) under every file.
    #[arg(long)]
    pub hdd: bool,
    /// CSV output: one row per interval.
    #[arg(long)]
    pub csv: bool,
}

#[derive(Debug, Serialize)]
struct WarmupReport {
    workload: &'static str,
    flush_method: String,
    /// The emulated disk's label, if `--hdd`.
    disk: Option<String>,
    buffer_pool_size: usize,
    buffer_pool_dump_pct: u32,
    hot_pct: u32,
    threads: usize,
    interval_ms: u64,
    #[serde(flatten)]
    result: warmup::WarmupResult,
}

fn csv_rows(out: &mut dyn Write, phase: &str, intervals: &[Interval]) -> std::io::Result<()> {
    for i in intervals {
        csv_out::row(
            out,
            [
                phase.to_string(),
                format!("{:.3}", i.t),
                format!("{:.1}", i.reads_per_sec),
                i.misses.to_string(),
                i.pages_read.to_string(),
            ],
        )?;
    }
    Ok(())
}

fn text_restart(out: &mut dyn Write, r: &Restart, steady: f64) -> std::io::Result<()> {
    let name = if r.load { "warm" } else { "cold" };
    writeln!(
        out,
        "{name} restart ({} the dump): open {:.1} ms, {} of {} listed pages loaded ({} already read by the queries), mean {:.0} reads/s, 90% of steady state after {}",
        if r.load { "loading" } else { "without" },
        r.open_seconds * 1e3,
        r.pages_loaded,
        r.pages_listed,
        r.pages_resident,
        r.mean_reads_per_sec,
        r.time_to_90
            .map_or("never (within the run)".to_string(), |t| format!(
                "{t:.2} s"
            ))
    )?;
    for i in &r.intervals {
        let share = i.reads_per_sec / steady.max(1e-9);
        let bar = "#".repeat((share * 40.0).round().clamp(0.0, 60.0) as usize);
        writeln!(
            out,
            "  {:6.2} s {:>10.0} reads/s {:>4.0}% {:>6} misses  {bar}",
            i.t,
            i.reads_per_sec,
            share * 100.0,
            i.misses
        )?;
    }
    Ok(())
}

/// Runs `minnow bench warmup`.
pub fn run(a: &WarmupArgs, json: bool, out: &mut dyn Write) -> Result<Status, CliError> {
    if json && a.csv {
        return Err(usage("--json and --csv cannot be used together"));
    }
    if a.hdd && a.csv {
        return Err(usage(
            "--hdd prints text or JSON, which carry the emulated disk's label",
        ));
    }
    let config = super::args::knob_config(
        Config {
            flush_method: FlushMethod::ODirect,
            ..Config::default()
        },
        &a.set,
    )?;
    let mut config = config;
    let model = if a.hdd {
        let inner = config
            .backend()
            .map_err(|e| CliError::Database(e.to_string()))?;
        let m = Arc::new(LatencyModel::new(inner, DiskProfile::spinning_disk(), true));
        config.io_backend = IoBackend::Custom(Arc::clone(&m) as Arc<dyn Backend>);
        Some(m)
    } else {
        None
    };
    let disk = model.as_ref().map(|m| m.label());
    let cfg = WarmupConfig {
        rows: a.rows,
        hot_rows: a.hot_rows,
        hot_pct: a.hot_pct,
        threads: a.threads,
        interval: Duration::from_millis(a.interval_ms),
        warm_time: Duration::from_secs(a.warm_secs),
        measure_time: Duration::from_secs(a.measure_secs),
        seed: a.seed,
    };
    let (_temp, dir) = scratch_dir(&a.dir)?;
    let r = warmup::run(&dir, config.clone(), &cfg).map_err(workload_err)?;
    if a.csv {
        csv_out::header(out, "phase,t,reads_per_sec,misses,pages_read")?;
        csv_rows(out, "first", &r.first_run)?;
        csv_rows(out, "cold", &r.cold.intervals)?;
        csv_rows(out, "warm", &r.warm.intervals)?;
    } else if json {
        emit_json(
            out,
            &WarmupReport {
                workload: "warmup",
                flush_method: format!("{:?}", config.flush_method),
                disk,
                buffer_pool_size: config.buffer_pool_size,
                buffer_pool_dump_pct: config.buffer_pool_dump_pct,
                hot_pct: a.hot_pct,
                threads: a.threads,
                interval_ms: a.interval_ms,
                result: r,
            },
        )?;
    } else {
        writeln!(
            out,
            "minnow bench warmup: {} rows ({} data pages, loaded at {:.0} rows/s), {} hot rows at {}%, pool {} frames, {} threads, flush_method {:?}",
            r.rows,
            r.data_pages,
            r.load_rows_per_sec,
            r.hot_rows,
            a.hot_pct,
            r.pool_frames,
            a.threads,
            config.flush_method
        )?;
        writeln!(
            out,
            "steady state before the restart: {:.0} reads/s; ib_buffer_pool lists {} pages (dump_pct {})",
            r.steady_reads_per_sec, r.dumped_pages, config.buffer_pool_dump_pct
        )?;
        if let Some(d) = &disk {
            writeln!(out, "EMULATED: {d}")?;
        }
        text_restart(out, &r.cold, r.steady_reads_per_sec)?;
        text_restart(out, &r.warm, r.steady_reads_per_sec)?;
    }
    Ok(Status::Clean)
}
