//! `minnow bench`: run a benchmark workload on a fresh database, for long runs of the
//! experiments in `docs/EXPERIMENTS.md`.
//!
//! ```text
//! minnow bench reads2007 [--organisation clustered|heap|both] [--rows N] [--threads 1,4,16] \
//!     [--csv | --json]                  (experiment E2; see the `reads` module)
//! minnow bench covering [--rows N] [--user-revisions N] [--rounds N] [--csv | --json]
//!                                       (experiment E8; see the `covering` module)
//! minnow bench compression [--rows N] [--layouts uncompressed,zlib6_8k] [--secs 30] [--csv | --json]
//!                                       (experiment E3; see the `compression` module)
//! minnow bench recovery [--redo-mb 10,20,40] [--log-mb 48] [--pool-mb 128] [--json]
//!                                       (recovery time per MiB of redo; see `recovery`)
//! minnow bench warmup [--rows N] [--hot-rows N] [--hot-pct 99] [--threads 4] [--csv | --json]
//!                                       (experiment E11; see the `warmup` module)
//! minnow bench parallel-load [--rows N] [--threads 1,2,4] [--keys autoinc0,...] [--csv | --json]
//!                                       (experiment E7; see the `load` module)
//! minnow bench writers [--threads 1,2,4,8] [--op update|insert] [--rows-per-trx 4] [--secs 10] \
//!     [--flush-log-at-trx-commit 0] [--csv | --json]
//!                                       (writer scaling on disjoint keys; see `writers`)
//! minnow bench hot-rows [--threads 8] [--hot 4] [--rows-per-trx 2] [--secs 10] [--csv | --json]
//!                                       (lock queues and deadlocks on hot rows; `writers`)
//! minnow bench oltp --mode update_index --tables 1 --table-size 10000 --threads 4 --time 10 \
//!     [--events N] [--dir DIR] [--set doublewrite=off --set flush_log_at_trx_commit=0 ...] \
//!     [--report-interval 1] [--csv | --json]
//! minnow bench oltp --mode write_only,read_write --threads 1,2,4,8 --time 10 [--csv | --json]
//!                                       (a sweep, one line per run; see `oltp_sweep`)
//! ```
//!
//! The command creates a database (in `--dir`, which must not hold one and is kept; by
//! default a temporary directory under the *current* directory, so on a real file system
//! rather than a tmpfs `/tmp`, removed afterwards), prepares the `sbtest` tables with a
//! progress bar on stderr, runs the workload ([`minnow_workload::oltp`]) and prints a report
//! line per interval (with the pages the pool flushed per second) and a summary with latency
//! percentiles and an IO section: pages flushed, doublewrite batches and pages (mean batch
//! size), and per file class (data files, doublewrite segments, redo log) the bytes, writes
//! and syncs and the seconds spent in them, also divided per page written in place: the
//! figures experiment E1 explains doublewrite's cost with (counted by a pass-through backend
//! around the configured one, [`minnow_workload::io_count`]). The article's write-heavy mix is
//! `--point-selects 1 --range-size 1 --index-updates 10` (sysbench 1.0 spells the flags with
//! underscores; `oltp-` prefixes were 0.4's).
//!
//! `--set name=value` sets any [`minnow::Config`] knob by its field or InnoDB name
//! ([`minnow::KNOBS`] lists them: `buffer_pool_size`, `flush_log_at_trx_commit`,
//! `doublewrite`, `flush_method`, `page_cleaners`, `io_capacity`, ...; the `innodb_` prefix is
//! optional; `--set help` prints them with their defaults). An unknown name or bad value is a
//! usage error (exit 2).
//!
//! Each event is one transaction by default (BEGIN, its statements, COMMIT, as sysbench
//! with `--skip-trx=off`): reads see the transaction's snapshot, updates read the row with a
//! locking read, and deadlocks and lock wait timeouts roll the event back and restart it, as
//! sysbench does with the errors it ignores; the report counts them (ignored errors per
//! second per interval, totals per kind in the summary). `--skip-trx on` runs every statement
//! as its own transaction (no BEGIN/COMMIT), as E1's recorded runs did.
//!
//! Ctrl-C stops the workers between events; the summary then covers what ran so far and
//! says it was interrupted.
//!
//! `--load-only` stops after the prepare: it flushes every dirty page and reports the load
//! (rows per second, load and flush time, pages flushed): experiment E5's bulk load with
//! `--set checksum_algorithm=...`.
//!
//! Output: text by default; `--json` prints one document at the end (settings, prepare,
//! intervals, summary); `--csv` prints one row per interval as it ends, then the summary as
//! `metric,value` rows after a blank line.

pub mod ahi;
pub mod args;
pub mod compression;
pub mod covering;
pub(crate) mod csv_out;
pub mod load;
mod oltp_report;
pub mod oltp_sweep;
pub(crate) mod progress;
pub mod reads;
pub mod recovery;
pub mod warmup;
pub mod writers;

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::{Args, Subcommand};
use minnow::inspect::Internals;
use minnow::{Config, Database};
use minnow_workload::WorkloadError;
use minnow_workload::io_stats::IoSnapshot;
use minnow_workload::oltp::{self, Mode, OltpConfig, RandType};
use serde::Serialize;

use crate::cli::Status;
use crate::output::CliError;
use crate::report::emit_json;
use minnow_workload::io_count::{self, PerPage};
use oltp_report::{
    DoublewriteRun, IntervalLog, OltpReport, PrepareReport, print_csv_summary, print_text_summary,
};
use progress::Bar;

/// The workloads `minnow bench` runs.
#[derive(Debug, Subcommand)]
pub enum Workload {
    /// sysbench-style OLTP on sbtest tables (read_only, write_only, read_write, update_index,
    /// update_non_index, point_select), one transaction per event unless `--skip-trx on`.
    Oltp(OltpArgs),
    /// The 2007 read micro-benchmark (experiment E2): the "normal" table's 13 queries at a
    /// thread sweep, on a clustered table and a MyISAM-like heap table.
    Reads2007(reads::ReadsArgs),
    /// Experiment E4: q1/q4/q5 point and range queries over a cached table, base / noahi /
    /// itc (adaptive hash index, thread concurrency), printed as the article's normalised
    /// table (see `bench::ahi`).
    Ahi(ahi::AhiArgs),
    /// Experiment E8: one user's revisions on a cold buffer pool through a covering and a
    /// non-covering index.
    Covering(covering::CoveringArgs),
    /// Experiment E7: parallel inserts under auto-increment lock modes 0, 1, 2 and with
    /// explicit keys.
    ParallelLoad(load::LoadArgs),
    /// Experiment E11: throughput after a restart, with and without loading the buffer pool
    /// dump (`ib_buffer_pool`), on a table larger than the pool.
    Warmup(warmup::WarmupArgs),
    /// Experiment E3: the same text-like table compressed and uncompressed, read cold with
    /// the buffer pool at 1/8 of the uncompressed table (point, range, filesort, key order).
    #[command(alias = "e3")]
    Compression(compression::CompressionArgs),
    /// Crash recovery: a writer killed with N MiB of redo behind the checkpoint, then the
    /// time `open` takes to recover (see `bench::recovery`).
    Recovery(recovery::RecoveryArgs),
    /// Writer scaling: small transactions on disjoint keys at each thread count, tx/s and
    /// rows/s against the first thread count, commit latency (see `bench::writers`).
    Writers(writers::WritersArgs),
    /// Writers updating a few hot rows in random order: commits, deadlocks and lock waits per
    /// second, locking-read latency (see `bench::writers`).
    HotRows(writers::HotRowsArgs),
    /// The child process of `bench recovery` (not for direct use).
    #[command(hide = true)]
    RecoveryWriter(recovery::WriterArgs),
}

/// The flags of `minnow bench oltp` (sysbench's names and defaults).
#[derive(Debug, Args)]
pub struct OltpArgs {
    /// The script: read_only, write_only, read_write, update_index, update_non_index or
    /// point_select (an `oltp_` prefix is accepted); a comma-separated list runs each in
    /// turn (see `bench::oltp_sweep`).
    #[arg(long, default_value = "read_write")]
    pub mode: String,
    /// Number of sbtest tables.
    #[arg(long, default_value_t = 1)]
    pub tables: usize,
    /// Rows per table.
    #[arg(long, default_value_t = 10_000)]
    pub table_size: u64,
    /// Worker threads; a comma-separated list (`1,2,4,8`) runs each count in turn on a fresh
    /// database, one summary line per run (see `bench::oltp_sweep`).
    #[arg(long, default_value = "1")]
    pub threads: String,
    /// Seconds to run (0: no time limit; then --events must be set).
    #[arg(long, default_value_t = 10)]
    pub time: u64,
    /// Stop after this many events in all (0: no limit).
    #[arg(long, default_value_t = 0)]
    pub events: u64,
    /// Data directory to create the database in (must not hold one; kept afterwards).
    /// Default: a temporary directory under the current directory, removed afterwards.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// A Config knob as name=value, by its InnoDB name (repeatable): buffer_pool_size,
    /// buffer_pool_instances, page_size, flush_log_at_trx_commit, log_file_size, doublewrite,
    /// doublewrite_pages, flush_method, io_backend, page_cleaners, checksum_algorithm,
    /// old_blocks_pct, old_blocks_time, io_capacity, flush_neighbors, max_dirty_pages_pct,
    /// max_dirty_pages_pct_lwm, read_ahead_threshold, buffer_pool_dump_at_shutdown,
    /// buffer_pool_dump_pct, autoinc_lock_mode, adaptive_hash_index,
    /// adaptive_hash_index_parts, adaptive_hash_index_max_memory, thread_concurrency,
    /// concurrency_tickets, status_file (ms; for `minnow watch DIR`).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// Seconds between interval reports (0: none).
    #[arg(long, default_value_t = 1)]
    pub report_interval: u64,
    /// CSV output: one row per interval, then the summary as metric,value rows.
    #[arg(long)]
    pub csv: bool,
    /// Point selects per event.
    #[arg(long, default_value_t = 10)]
    pub point_selects: u32,
    /// Simple range selects per event.
    #[arg(long, default_value_t = 1)]
    pub simple_ranges: u32,
    /// SUM() range selects per event.
    #[arg(long, default_value_t = 1)]
    pub sum_ranges: u32,
    /// ORDER BY range selects per event.
    #[arg(long, default_value_t = 1)]
    pub order_ranges: u32,
    /// DISTINCT range selects per event.
    #[arg(long, default_value_t = 1)]
    pub distinct_ranges: u32,
    /// Ids per range select.
    #[arg(long, default_value_t = 100)]
    pub range_size: u64,
    /// Run the range selects at all (on/off).
    #[arg(long, default_value = "on", value_parser = on_off, action = clap::ArgAction::Set)]
    pub range_selects: bool,
    /// Index updates per event.
    #[arg(long, default_value_t = 1)]
    pub index_updates: u32,
    /// Non-index updates per event.
    #[arg(long, default_value_t = 1)]
    pub non_index_updates: u32,
    /// Delete-insert pairs per event.
    #[arg(long, default_value_t = 1)]
    pub delete_inserts: u32,
    /// Skip BEGIN/COMMIT (on/off): `on` runs every statement as its own transaction; `off`
    /// (the default, as sysbench's) one transaction per event, restarted after a deadlock or
    /// lock wait timeout.
    #[arg(long, default_value = "off", value_parser = on_off, action = clap::ArgAction::Set)]
    pub skip_trx: bool,
    /// Id distribution: special (sysbench 1.0's default) or uniform.
    #[arg(long, default_value = "special")]
    pub rand_type: String,
    /// Percentage of ids that are "special" (hot).
    #[arg(long, default_value_t = 1)]
    pub rand_spec_pct: u32,
    /// Percentage of draws that go to the special ids.
    #[arg(long, default_value_t = 75)]
    pub rand_spec_res: u32,
    /// Seed of the data and of the workers' random streams.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Run Database::check() after the run and report it.
    #[arg(long)]
    pub check: bool,
    /// Only load: prepare the tables, flush every dirty page to the data files and report
    /// the load's rows per second, without running the workload (experiment E5's bulk load;
    /// pick the page checksum with `--set checksum_algorithm=none|crc32|innodb|full_crc32`).
    #[arg(long)]
    pub load_only: bool,
}

fn on_off(s: &str) -> Result<bool, String> {
    match s.to_ascii_lowercase().as_str() {
        "on" | "1" | "true" => Ok(true),
        "off" | "0" | "false" => Ok(false),
        _ => Err(format!("`{s}` is not on or off")),
    }
}

/// Runs `workload`, printing text, JSON (`json`) or CSV.
pub fn run(workload: &Workload, json: bool, out: &mut dyn Write) -> Result<Status, CliError> {
    match workload {
        Workload::Oltp(args) => run_oltp(args, json, out),
        Workload::Reads2007(args) => reads::run(args, json, out),
        Workload::Ahi(args) => ahi::run(args, json, out),
        Workload::Covering(args) => covering::run(args, json, out),
        Workload::ParallelLoad(args) => load::run(args, json, out),
        Workload::Warmup(args) => warmup::run(args, json, out),
        Workload::Compression(args) => compression::run(args, json, out),
        Workload::Recovery(args) => recovery::run(args, json, out),
        Workload::RecoveryWriter(args) => recovery::run_writer(args),
        Workload::Writers(args) => writers::run_writers(args, json, out),
        Workload::HotRows(args) => writers::run_hot_rows(args, json, out),
    }
}

/// The output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Text,
    Json,
    Csv,
}

/// What a "transaction" of the report is, per `skip_trx`.
pub(crate) fn note(skip_trx: bool) -> String {
    if skip_trx {
        "--skip-trx on: each statement is its own transaction, no BEGIN/COMMIT is issued, and a transaction in this report is one event's sequence of statements".to_owned()
    } else {
        "one transaction per event (BEGIN, statements, COMMIT; REPEATABLE READ; updates read with a locking read); deadlocks and lock wait timeouts roll the event back and restart it, counted as ignored errors; the history list length is in the database's status (`minnow status DIR`, `minnow watch DIR`) while the run goes on".to_owned()
    }
}

pub(crate) fn usage(msg: impl std::fmt::Display) -> CliError {
    CliError::Bench(msg.to_string())
}

pub(crate) fn workload_err(e: WorkloadError) -> CliError {
    CliError::Bench(e.to_string())
}

fn run_oltp(a: &OltpArgs, json: bool, out: &mut dyn Write) -> Result<Status, CliError> {
    let format = match (json, a.csv) {
        (true, true) => return Err(usage("--json and --csv cannot be used together")),
        (true, false) => Format::Json,
        (false, true) => Format::Csv,
        (false, false) => Format::Text,
    };
    let modes: Vec<Mode> = a
        .mode
        .split(',')
        .map(|m| m.parse::<Mode>().map_err(workload_err))
        .collect::<Result<_, _>>()?;
    let threads = args::thread_list(&a.threads)?;
    let (Some(&mode), Some(&first_threads)) = (modes.first(), threads.first()) else {
        return Err(usage("--mode and --threads need at least one value"));
    };
    let cfg = OltpConfig {
        mode,
        tables: a.tables,
        table_size: a.table_size,
        threads: first_threads,
        time: (a.time > 0).then(|| Duration::from_secs(a.time)),
        events: (a.events > 0).then_some(a.events),
        point_selects: a.point_selects,
        simple_ranges: a.simple_ranges,
        sum_ranges: a.sum_ranges,
        order_ranges: a.order_ranges,
        distinct_ranges: a.distinct_ranges,
        range_size: a.range_size,
        range_selects: a.range_selects,
        index_updates: a.index_updates,
        non_index_updates: a.non_index_updates,
        delete_inserts: a.delete_inserts,
        skip_trx: a.skip_trx,
        rand_type: a.rand_type.parse::<RandType>().map_err(workload_err)?,
        rand_spec_pct: a.rand_spec_pct,
        rand_spec_res: a.rand_spec_res,
        seed: a.seed,
        report_interval: (a.report_interval > 0).then(|| Duration::from_secs(a.report_interval)),
    };
    cfg.validate().map_err(workload_err)?;
    let mut config = args::knob_config(Config::default(), &a.set)?;
    if modes.len() > 1 || threads.len() > 1 {
        return oltp_sweep::run(a, &cfg, &modes, &threads, &config, format, out);
    }
    let (io_backend, tally) = io_count::Counting::wrap(&config)
        .map_err(|e| CliError::Database(format!("io_backend: {e}")))?;
    config.io_backend = io_backend;

    let (_temp, dir) = scratch_dir(&a.dir)?;
    let kept = a.dir.is_some();
    let page_size = config.page_size.bytes();
    let db = Database::create(&dir, config)
        .map_err(|e| CliError::Database(format!("{}: {e}", dir.display())))?;

    let stop = Arc::new(AtomicBool::new(false));
    install_ctrlc(&stop);

    if format == Format::Text {
        writeln!(
            out,
            "minnow bench oltp: {} on {} table(s) x {} rows, {} thread(s), data in {}{}",
            cfg.mode,
            cfg.tables,
            cfg.table_size,
            cfg.threads,
            dir.display(),
            if kept { "" } else { " (temporary)" }
        )?;
        writeln!(out, "note: {}", note(cfg.skip_trx))?;
        out.flush()?;
    }

    // Prepare, with a progress bar on stderr.
    let bar = Bar::new(cfg.table_size.saturating_mul(cfg.tables as u64), "rows");
    let prepared = oltp::prepare(&db, &cfg, &mut |p| {
        let table = format!("loading sbtest{}/{}", p.table, p.tables);
        bar.set(
            table,
            p.total_rows,
            format!("{:.0} rows/s", p.rows_per_sec()),
        );
    })
    .map_err(workload_err)?;
    bar.finish();
    let _ = writeln!(
        std::io::stderr(),
        "loaded {} table(s), {} rows in {:.2} s ({:.0} rows/s)",
        prepared.tables,
        prepared.total_rows,
        prepared.elapsed.as_secs_f64(),
        prepared.rows_per_sec()
    );
    let prepare = PrepareReport {
        rows: prepared.total_rows,
        seconds: prepared.elapsed.as_secs_f64(),
        rows_per_sec: prepared.rows_per_sec(),
    };
    if format == Format::Text {
        writeln!(
            out,
            "prepared {} rows in {:.2} s ({:.0} rows/s)",
            prepare.rows, prepare.seconds, prepare.rows_per_sec
        )?;
    }
    if a.load_only {
        let status = finish_load_only(&db, &dir, &config_checksum(&a.set), prepare, format, out)?;
        db.close()
            .map_err(|e| CliError::Database(format!("{}: close: {e}", dir.display())))?;
        return Ok(status);
    }
    if format == Format::Csv {
        csv_out::header(
            out,
            "time_s,threads,tps,qps,reads_per_s,writes_per_s,other_per_s,p95_ms,errors_per_s,pages_flushed_per_s,checkpoint_age_bytes,checkpoint_age_pct,log_waits,log_wait_ms",
        )?;
    }
    out.flush()?;

    let before = IoSnapshot::take(&db).map_err(workload_err)?;
    let files_before = tally.snapshot();
    let dblwr_before = dblwr_counts(&db)?;
    let mut intervals = Vec::new();
    let mut interval_flushed = Vec::new();
    let mut last = (before.pages_flushed, std::time::Duration::ZERO);
    let mut interval_log = Vec::new();
    let mut last_waits = redo_status(&db).map_or((0, 0), |r| (r.space_waits, r.space_wait_ns));
    let mut write_err = None;
    let summary = oltp::run(&db, &cfg, &stop, &mut |r| {
        // Pages the buffer pool flushed since the last report, per second.
        let flushed = IoSnapshot::take(&db).map_or(last.0, |s| s.pages_flushed);
        let span = r.elapsed.saturating_sub(last.1).as_secs_f64();
        let flushed_per_s = if span > 0.0 {
            flushed.saturating_sub(last.0) as f64 / span
        } else {
            0.0
        };
        last = (flushed, r.elapsed);
        interval_flushed.push(flushed_per_s);
        let log = redo_status(&db)
            .map(|redo| IntervalLog::take(&redo, &mut last_waits))
            .unwrap_or_default();
        interval_log.push(log);
        let res = match format {
            Format::Text => writeln!(
                out,
                "[ {:.0}s ] thds: {} tps: {:.2} qps: {:.2} (r/w/o: {:.2}/{:.2}/{:.2}) lat (ms,95%): {:.2} err/s: {:.2} flushed/s: {:.0} ckpt age: {:.1}% log wait ms: {:.0}",
                r.elapsed.as_secs_f64(),
                r.threads,
                r.tps,
                r.qps,
                r.reads_per_sec,
                r.writes_per_sec,
                r.other_per_sec,
                r.p95_ms,
                r.errors_per_sec,
                flushed_per_s,
                log.checkpoint_age_pct,
                log.log_wait_ms
            ),
            Format::Csv => csv_out::row(
                out,
                [
                    format!("{:.3}", r.elapsed.as_secs_f64()),
                    r.threads.to_string(),
                    format!("{:.2}", r.tps),
                    format!("{:.2}", r.qps),
                    format!("{:.2}", r.reads_per_sec),
                    format!("{:.2}", r.writes_per_sec),
                    format!("{:.2}", r.other_per_sec),
                    format!("{:.3}", r.p95_ms),
                    format!("{:.2}", r.errors_per_sec),
                    format!("{flushed_per_s:.1}"),
                    log.checkpoint_age.to_string(),
                    format!("{:.2}", log.checkpoint_age_pct),
                    log.log_waits.to_string(),
                    format!("{:.1}", log.log_wait_ms),
                ],
            ),
            Format::Json => Ok(()),
        }
        .and_then(|()| out.flush());
        if let Err(e) = res {
            write_err.get_or_insert(e);
        }
        intervals.push(*r);
    })
    .map_err(workload_err)?;
    if let Some(e) = write_err {
        return Err(e.into());
    }
    let io = IoSnapshot::take(&db).map_err(workload_err)?.since(&before);
    let files = tally.snapshot().since(&files_before);
    let dblwr_after = dblwr_counts(&db)?;
    let (batches, pages) = (
        dblwr_after.0.saturating_sub(dblwr_before.0),
        dblwr_after.1.saturating_sub(dblwr_before.1),
    );
    let doublewrite = DoublewriteRun {
        batches,
        pages,
        mean_batch_pages: if batches > 0 {
            pages as f64 / batches as f64
        } else {
            0.0
        },
    };
    let check = if a.check { Some(check_db(&db)?) } else { None };
    db.close()
        .map_err(|e| CliError::Database(format!("{}: close: {e}", dir.display())))?;

    let note = note(cfg.skip_trx);
    let report = OltpReport {
        workload: "oltp",
        settings: cfg,
        knobs: a.set.clone(),
        data_dir: dir.display().to_string(),
        data_dir_kept: kept,
        note,
        prepare,
        intervals,
        interval_pages_flushed_per_s: interval_flushed,
        interval_log,
        summary,
        io,
        per_flushed_page: PerPage::of(&files, page_size),
        files,
        doublewrite,
        page_size,
        check,
    };
    match format {
        Format::Json => emit_json(out, &report)?,
        Format::Csv => print_csv_summary(&report, out)?,
        Format::Text => print_text_summary(&report, out)?,
    }
    Ok(Status::Clean)
}

/// The redo log's section of the status, if the status can be taken.
fn redo_status(db: &Database) -> Option<minnow::RedoStatus> {
    db.status().ok().map(|s| s.redo)
}

/// The doublewrite buffer's batches and page copies so far (zeros when it is off).
fn dblwr_counts(db: &Database) -> Result<(u64, u64), CliError> {
    let st = db
        .status()
        .map_err(|e| CliError::Database(format!("status: {e}")))?;
    Ok(st.doublewrite.map_or((0, 0), |d| (d.batches, d.pages)))
}

/// `--check`: [`Database::check`] after a run, as the line the reports print.
pub(crate) fn check_db(db: &Database) -> Result<String, CliError> {
    let r = db
        .check()
        .map_err(|e| CliError::Database(format!("check after the run: {e}")))?;
    Ok(format!(
        "ok: {} table(s), {} index(es) checked",
        r.tables, r.indexes
    ))
}

/// The checksum algorithm the `--set` list asks for (the last one given), or the default's.
fn config_checksum(set: &[String]) -> String {
    let mut c = Config::default();
    for s in set {
        // Already validated by the caller.
        let _ = c.apply(s);
    }
    c.checksum_algorithm.name().to_owned()
}

/// What `--load-only` reports.
#[derive(Debug, Serialize)]
struct LoadReport {
    workload: &'static str,
    checksum_algorithm: String,
    rows: u64,
    load_seconds: f64,
    flush_seconds: f64,
    rows_per_sec: f64,
    pages_flushed: u64,
}

/// `--load-only`: flushes every dirty page after the prepare and reports the whole load.
fn finish_load_only(
    db: &Database,
    dir: &std::path::Path,
    checksum: &str,
    prepare: PrepareReport,
    format: Format,
    out: &mut dyn Write,
) -> Result<Status, CliError> {
    let t0 = std::time::Instant::now();
    db.buffer_pool()
        .and_then(|p| p.flush_all().map_err(Into::into))
        .map_err(|e| CliError::Database(format!("{}: flush: {e}", dir.display())))?;
    let flush_seconds = t0.elapsed().as_secs_f64();
    let io = IoSnapshot::take(db).map_err(workload_err)?;
    let total = prepare.seconds + flush_seconds;
    let r = LoadReport {
        workload: "oltp --load-only",
        checksum_algorithm: checksum.to_owned(),
        rows: prepare.rows,
        load_seconds: prepare.seconds,
        flush_seconds,
        rows_per_sec: if total > 0.0 {
            prepare.rows as f64 / total
        } else {
            0.0
        },
        pages_flushed: io.pages_flushed,
    };
    match format {
        Format::Json => emit_json(out, &r)?,
        Format::Csv => csv_out::metrics(
            out,
            [
                ("checksum_algorithm", r.checksum_algorithm.clone()),
                ("rows", r.rows.to_string()),
                ("load_s", format!("{:.4}", r.load_seconds)),
                ("flush_s", format!("{:.4}", r.flush_seconds)),
                ("rows_per_s", format!("{:.1}", r.rows_per_sec)),
                ("pages_flushed", r.pages_flushed.to_string()),
            ],
        )?,
        Format::Text => writeln!(
            out,
            "load only, checksum {}: {} rows loaded in {:.3} s and flushed in {:.3} s: {:.0} rows/s; {} pages flushed since open",
            r.checksum_algorithm,
            r.rows,
            r.load_seconds,
            r.flush_seconds,
            r.rows_per_sec,
            r.pages_flushed
        )?,
    }
    Ok(Status::Clean)
}

/// The data directory: the one given (kept), or a temporary one on the file system of the
/// current directory (removed when the returned guard drops).
pub(crate) fn scratch_dir(
    given: &Option<std::path::PathBuf>,
) -> Result<(Option<tempfile::TempDir>, std::path::PathBuf), CliError> {
    match given {
        Some(d) => Ok((None, d.clone())),
        None => {
            let t = tempfile::Builder::new()
                .prefix("minnow-bench-")
                .tempdir_in(
                    std::env::current_dir()
                        .map_err(|e| CliError::Bench(format!("no current directory: {e}")))?,
                )
                .map_err(|e| {
                    CliError::Bench(format!("cannot create a data directory here: {e}"))
                })?;
            let p = t.path().to_path_buf();
            Ok((Some(t), p))
        }
    }
}

pub(crate) fn install_ctrlc(stop: &Arc<AtomicBool>) {
    let flag = Arc::clone(stop);
    // Only one handler per process: a second `minnow bench` in the same process (tests) keeps
    // the first, which is fine for a command-line tool that runs one command.
    let _ = ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::SeqCst) {
            // A second Ctrl-C: the user does not want to wait for the current events.
            std::process::exit(130);
        }
        let _ = writeln!(
            std::io::stderr(),
            "\nminnow bench: stopping after the current events (Ctrl-C again to quit at once)"
        );
    });
}
