//! `minnow bench oltp` over several scripts and thread counts: one line per run.
//!
//! ```text
//! minnow bench oltp --mode write_only,read_write --threads 1,2,4,8 --time 10 \
//!     [--table-size 10000] [--set name=value ...] [--csv | --json]
//! ```
//!
//! When `--mode` or `--threads` lists more than one value, `minnow bench oltp` runs every
//! (script, thread count) pair in turn, scripts outermost, each on a **fresh** database
//! prepared the same way (same seed, so identical tables), so no run inherits another's
//! buffer pool, history or page splits. With `--dir DIR` run `MODE-Nt` gets the directory
//! `DIR/MODE-Nt` (kept); otherwise a temporary directory under the current one (removed).
//! There are no interval reports; each run prints one line: tps, qps, latency (mean, p95,
//! p99), ignored errors per second and `x first`, the tps over the same script's first
//! thread count (with `--threads 1,...`, the scaling over one thread). `--csv` prints the
//! same as rows after a header; `--json` one document with each run's full summary and IO.
//! Ctrl-C ends the current run early and skips the rest.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use minnow::{Config, Database};
use minnow_workload::io_stats::IoSnapshot;
use minnow_workload::oltp::{self, Mode, OltpConfig, Summary};
use serde::Serialize;

use super::args::ratio;
use super::csv_out;
use super::{Format, OltpArgs, note, scratch_dir, workload_err};
use crate::cli::Status;
use crate::output::CliError;
use crate::report::emit_json;

/// One run of the sweep.
#[derive(Debug, Serialize)]
struct SweepRun {
    mode: Mode,
    threads: usize,
    data_dir: String,
    prepare_rows: u64,
    prepare_seconds: f64,
    summary: Summary,
    io: IoSnapshot,
    /// tps over the same script's first thread count.
    scaling: f64,
    check: Option<String>,
}

/// Everything `--json` prints.
#[derive(Debug, Serialize)]
struct SweepReport<'a> {
    workload: &'static str,
    settings: &'a OltpConfig,
    modes: &'a [Mode],
    threads: &'a [usize],
    knobs: &'a [String],
    note: String,
    runs: Vec<SweepRun>,
}

/// Runs every (mode, thread count) pair of the sweep; `base` holds the other settings.
pub fn run(
    a: &OltpArgs,
    base: &OltpConfig,
    modes: &[Mode],
    threads: &[usize],
    config: &Config,
    format: Format,
    out: &mut dyn Write,
) -> Result<Status, CliError> {
    if a.load_only {
        return Err(super::usage(
            "--load-only loads once: give one --mode and one --threads",
        ));
    }
    // The sweep has no interval reports; its settings say so.
    let base = &OltpConfig {
        report_interval: None,
        ..base.clone()
    };
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    super::install_ctrlc(&stop);
    match format {
        Format::Text => {
            writeln!(
                out,
                "minnow bench oltp: {} on {} table(s) x {} rows, threads {}, {} per run, a fresh database per run",
                modes.iter().map(|m| m.name()).collect::<Vec<_>>().join(","),
                base.tables,
                base.table_size,
                threads
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
                match (base.time, base.events) {
                    (Some(t), _) => format!("{} s", t.as_secs()),
                    (None, Some(e)) => format!("{e} events"),
                    (None, None) => String::new(),
                }
            )?;
            writeln!(out, "note: {}", note(base.skip_trx))?;
            writeln!(
                out,
                "{:<16} {:>7} {:>10} {:>11} {:>8} {:>8} {:>8} {:>8} {:>7}",
                "mode", "threads", "tps", "qps", "avg ms", "p95 ms", "p99 ms", "err/s", "x first"
            )?;
        }
        Format::Csv => csv_out::header(
            out,
            "mode,threads,seconds,events,tps,qps,lat_avg_ms,lat_p95_ms,lat_p99_ms,errors_per_s,deadlocks,lock_wait_timeouts,scaling",
        )?,
        Format::Json => {}
    }
    out.flush()?;
    let mut runs: Vec<SweepRun> = Vec::new();
    'modes: for &mode in modes {
        for &n in threads {
            if stop.load(Ordering::Relaxed) {
                break 'modes;
            }
            let cfg = OltpConfig {
                mode,
                threads: n,
                report_interval: None,
                ..base.clone()
            };
            let mut r = one_run(a, &cfg, config, &stop)?;
            let first = runs.iter().find(|p| p.mode == mode);
            r.scaling = ratio(
                r.summary.tps,
                first.map_or(r.summary.tps, |p| p.summary.tps),
            );
            print_row(&r, format, out)?;
            runs.push(r);
        }
    }
    if format == Format::Json {
        emit_json(
            out,
            &SweepReport {
                workload: "oltp sweep",
                settings: base,
                modes,
                threads,
                knobs: &a.set,
                note: note(base.skip_trx),
                runs,
            },
        )?;
    }
    Ok(Status::Clean)
}

/// Prepares a fresh database for `cfg` and runs it.
fn one_run(
    a: &OltpArgs,
    cfg: &OltpConfig,
    config: &Config,
    stop: &AtomicBool,
) -> Result<SweepRun, CliError> {
    let (_temp, dir) = match &a.dir {
        Some(d) => (None, d.join(format!("{}-{}t", cfg.mode, cfg.threads))),
        None => scratch_dir(&None)?,
    };
    let db = Database::create(&dir, config.clone())
        .map_err(|e| CliError::Database(format!("{}: {e}", dir.display())))?;
    let prepared = oltp::prepare(&db, cfg, &mut |_| {}).map_err(workload_err)?;
    let before = IoSnapshot::take(&db).map_err(workload_err)?;
    let summary = oltp::run(&db, cfg, stop, &mut |_| {}).map_err(workload_err)?;
    let io = IoSnapshot::take(&db).map_err(workload_err)?.since(&before);
    let check = if a.check {
        Some(super::check_db(&db)?)
    } else {
        None
    };
    db.close()
        .map_err(|e| CliError::Database(format!("{}: close: {e}", dir.display())))?;
    Ok(SweepRun {
        mode: cfg.mode,
        threads: cfg.threads,
        data_dir: dir.display().to_string(),
        prepare_rows: prepared.total_rows,
        prepare_seconds: prepared.elapsed.as_secs_f64(),
        summary,
        io,
        scaling: 1.0,
        check,
    })
}

fn print_row(r: &SweepRun, format: Format, out: &mut dyn Write) -> std::io::Result<()> {
    let s = &r.summary;
    let l = &s.latency;
    match format {
        Format::Text => writeln!(
            out,
            "{:<16} {:>7} {:>10.2} {:>11.2} {:>8.3} {:>8.3} {:>8.3} {:>8.2} {:>7.2}{}",
            s.mode.name(),
            s.threads,
            s.tps,
            s.qps,
            l.avg_ms,
            l.p95_ms,
            l.p99_ms,
            s.errors_per_sec,
            r.scaling,
            r.check
                .as_deref()
                .map_or_else(String::new, |c| format!("  check {c}"))
        )?,
        Format::Csv => csv_out::row(
            out,
            [
                s.mode.name().to_string(),
                s.threads.to_string(),
                format!("{:.3}", s.elapsed.as_secs_f64()),
                s.events.to_string(),
                format!("{:.2}", s.tps),
                format!("{:.2}", s.qps),
                format!("{:.3}", l.avg_ms),
                format!("{:.3}", l.p95_ms),
                format!("{:.3}", l.p99_ms),
                format!("{:.2}", s.errors_per_sec),
                s.ignored.deadlocks.to_string(),
                s.ignored.lock_wait_timeouts.to_string(),
                format!("{:.3}", r.scaling),
            ],
        )?,
        Format::Json => {}
    }
    out.flush()
}
