//! What `minnow bench oltp` reports after a run: the JSON document, the CSV summary rows and
//! sysbench's text summary, with the IO section experiment E1 reads (pages flushed, bytes and
//! syncs per file class and per flushed page, doublewrite batches; see `minnow_workload::io_count`).

use std::io::Write;

use minnow_workload::io_stats::IoSnapshot;
use minnow_workload::oltp::{IntervalReport, OltpConfig, Summary};
use serde::Serialize;

use super::csv_out;
use minnow_workload::io_count::{IoCounts, PerPage};

/// Everything `--json` prints.
#[derive(Debug, Serialize)]
pub(super) struct OltpReport {
    pub(super) workload: &'static str,
    pub(super) settings: OltpConfig,
    pub(super) knobs: Vec<String>,
    pub(super) data_dir: String,
    pub(super) data_dir_kept: bool,
    pub(super) note: String,
    pub(super) prepare: PrepareReport,
    pub(super) intervals: Vec<IntervalReport>,
    /// Pages flushed per second in each interval, beside `intervals`.
    pub(super) interval_pages_flushed_per_s: Vec<f64>,
    /// The redo log's checkpoint age and the writers' waits for log space in each interval,
    /// beside `intervals`.
    pub(super) interval_log: Vec<IntervalLog>,
    pub(super) summary: Summary,
    pub(super) io: IoSnapshot,
    /// Writes and syncs per file class during the timed run.
    pub(super) files: IoCounts,
    /// `files` per page written to the data files.
    pub(super) per_flushed_page: PerPage,
    pub(super) doublewrite: DoublewriteRun,
    pub(super) page_size: usize,
    pub(super) check: Option<String>,
}

/// The redo log in one interval: how full it was at the interval's end and how long writers
/// waited for room in it (a full log holds every writer until the page cleaner's checkpoint
/// frees space, which is how flushing speed becomes throughput under
/// `flush_log_at_trx_commit=0`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub(super) struct IntervalLog {
    /// Current LSN minus checkpoint LSN at the interval's end, in bytes.
    pub(super) checkpoint_age: u64,
    /// The same as a share of the log's capacity, in per cent.
    pub(super) checkpoint_age_pct: f64,
    /// Times writers found the log full and waited for a checkpoint, in the interval.
    pub(super) log_waits: u64,
    /// Milliseconds writers spent in those waits in the interval, summed over threads (16
    /// threads all waiting through a 1 s interval read 16,000).
    pub(super) log_wait_ms: f64,
}

impl IntervalLog {
    /// The log now, with the waits since `last` (the previous interval's `(waits, wait_ns)`,
    /// moved on to now). All zero for a database without a redo log section.
    pub(super) fn take(redo: &minnow::RedoStatus, last: &mut (u64, u64)) -> IntervalLog {
        let waits = redo.space_waits.saturating_sub(last.0);
        let wait_ns = redo.space_wait_ns.saturating_sub(last.1);
        *last = (redo.space_waits, redo.space_wait_ns);
        IntervalLog {
            checkpoint_age: redo.checkpoint_age,
            checkpoint_age_pct: if redo.capacity > 0 {
                redo.checkpoint_age as f64 * 100.0 / redo.capacity as f64
            } else {
                0.0
            },
            log_waits: waits,
            log_wait_ms: wait_ns as f64 / 1e6,
        }
    }
}

/// What `--load-only` and the run report of the prepare.
#[derive(Debug, Serialize)]
pub(super) struct PrepareReport {
    pub(super) rows: u64,
    pub(super) seconds: f64,
    pub(super) rows_per_sec: f64,
}

/// The doublewrite buffer during the timed run (zero with `doublewrite=off`).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub(super) struct DoublewriteRun {
    /// Batches completed.
    pub(super) batches: u64,
    /// Page copies written to the segments.
    pub(super) pages: u64,
    /// Pages per batch (0 without batches).
    pub(super) mean_batch_pages: f64,
}

/// Summary rows shared by the text and CSV outputs.
pub(super) fn summary_rows(r: &OltpReport) -> Vec<(&'static str, String)> {
    let s = &r.summary;
    let l = &s.latency;
    let data_bytes = r.io.pages_flushed.saturating_mul(r.page_size as u64);
    let mut rows = vec![
        ("mode", s.mode.to_string()),
        ("threads", s.threads.to_string()),
        ("elapsed_s", format!("{:.3}", s.elapsed.as_secs_f64())),
        ("interrupted", s.interrupted.to_string()),
        ("events", s.events.to_string()),
        ("tps", format!("{:.2}", s.tps)),
        ("queries", s.queries.to_string()),
        ("qps", format!("{:.2}", s.qps)),
        ("reads", s.reads.to_string()),
        ("writes", s.writes.to_string()),
        ("other", s.other.to_string()),
        ("ignored_errors", s.ignored_errors.to_string()),
        ("errors_per_s", format!("{:.2}", s.errors_per_sec)),
        ("deadlocks", s.ignored.deadlocks.to_string()),
        (
            "lock_wait_timeouts",
            s.ignored.lock_wait_timeouts.to_string(),
        ),
        ("duplicate_keys", s.ignored.duplicate_keys.to_string()),
        ("skip_trx", s.skip_trx.to_string()),
        ("lat_min_ms", format!("{:.3}", l.min_ms)),
        ("lat_avg_ms", format!("{:.3}", l.avg_ms)),
        ("lat_p50_ms", format!("{:.3}", l.p50_ms)),
        ("lat_p95_ms", format!("{:.3}", l.p95_ms)),
        ("lat_p99_ms", format!("{:.3}", l.p99_ms)),
        ("lat_p999_ms", format!("{:.3}", l.p999_ms)),
        ("lat_max_ms", format!("{:.3}", l.max_ms)),
        ("pages_flushed", r.io.pages_flushed.to_string()),
        (
            "log_space_waits",
            r.interval_log
                .iter()
                .map(|l| l.log_waits)
                .sum::<u64>()
                .to_string(),
        ),
        (
            "log_space_wait_s",
            format!(
                "{:.3}",
                r.interval_log.iter().map(|l| l.log_wait_ms).sum::<f64>() / 1e3
            ),
        ),
        ("data_bytes_flushed", data_bytes.to_string()),
        ("redo_bytes", r.io.redo_lsn.to_string()),
        (
            "process_write_bytes",
            r.io.process_write_bytes
                .map_or_else(|| "unknown".to_owned(), |b| b.to_string()),
        ),
    ];
    let secs = s.elapsed.as_secs_f64();
    let per_s = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
    let f = &r.files;
    let p = &r.per_flushed_page;
    let d = &r.doublewrite;
    rows.extend([
        (
            "pages_flushed_per_s",
            format!("{:.1}", per_s(r.io.pages_flushed)),
        ),
        ("pages_written_in_place", p.pages.to_string()),
        ("pages_written_per_s", format!("{:.1}", per_s(p.pages))),
        ("dblwr_batches", d.batches.to_string()),
        ("dblwr_pages", d.pages.to_string()),
        (
            "dblwr_mean_batch_pages",
            format!("{:.2}", d.mean_batch_pages),
        ),
        ("data_write_bytes", f.data.write_bytes.to_string()),
        ("data_writes", f.data.writes.to_string()),
        ("data_syncs", f.data.syncs.to_string()),
        ("data_write_s", secs_of(f.data.write_ns)),
        ("data_sync_s", secs_of(f.data.sync_ns)),
        ("dblwr_write_bytes", f.doublewrite.write_bytes.to_string()),
        ("dblwr_writes", f.doublewrite.writes.to_string()),
        ("dblwr_syncs", f.doublewrite.syncs.to_string()),
        ("dblwr_write_s", secs_of(f.doublewrite.write_ns)),
        ("dblwr_sync_s", secs_of(f.doublewrite.sync_ns)),
        ("redo_write_bytes", f.redo.write_bytes.to_string()),
        ("redo_writes", f.redo.writes.to_string()),
        ("redo_syncs", f.redo.syncs.to_string()),
        ("redo_write_s", secs_of(f.redo.write_ns)),
        ("redo_sync_s", secs_of(f.redo.sync_ns)),
        ("syncs_per_s", format!("{:.1}", per_s(f.syncs()))),
        (
            "data_bytes_per_flushed_page",
            format!("{:.0}", p.data_bytes),
        ),
        (
            "dblwr_bytes_per_flushed_page",
            format!("{:.0}", p.doublewrite_bytes),
        ),
        (
            "redo_bytes_per_flushed_page",
            format!("{:.0}", p.redo_bytes),
        ),
        ("syncs_per_flushed_page", format!("{:.4}", p.syncs)),
        (
            "data_syncs_per_flushed_page",
            format!("{:.4}", p.data_syncs),
        ),
        (
            "dblwr_syncs_per_flushed_page",
            format!("{:.4}", p.doublewrite_syncs),
        ),
    ]);
    rows
}

/// Nanoseconds as seconds, for the reports.
fn secs_of(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e9)
}

pub(super) fn print_csv_summary(r: &OltpReport, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out)?;
    csv_out::metrics(out, summary_rows(r))
}

pub(super) fn print_text_summary(r: &OltpReport, out: &mut dyn Write) -> std::io::Result<()> {
    let s = &r.summary;
    let l = &s.latency;
    let secs = s.elapsed.as_secs_f64();
    if s.interrupted {
        writeln!(
            out,
            "\ninterrupted: the summary covers what ran until Ctrl-C"
        )?;
    }
    writeln!(out, "\nSQL statistics:")?;
    writeln!(out, "    queries performed:")?;
    writeln!(out, "        read:                            {}", s.reads)?;
    writeln!(out, "        write:                           {}", s.writes)?;
    writeln!(
        out,
        "        other:                           {}{}",
        s.other,
        if s.skip_trx {
            " (--skip-trx on: no BEGIN/COMMIT)"
        } else {
            " (BEGIN, COMMIT, ROLLBACK)"
        }
    )?;
    writeln!(
        out,
        "        total:                           {}",
        s.queries
    )?;
    writeln!(
        out,
        "    transactions:                        {} ({:.2} per sec.)",
        s.events, s.tps
    )?;
    writeln!(
        out,
        "    queries:                             {} ({:.2} per sec.)",
        s.queries, s.qps
    )?;
    writeln!(
        out,
        "    ignored errors:                      {} ({:.2} per sec.; deadlocks {}, lock wait timeouts {}, duplicate keys {})",
        s.ignored_errors,
        s.errors_per_sec,
        s.ignored.deadlocks,
        s.ignored.lock_wait_timeouts,
        s.ignored.duplicate_keys
    )?;
    writeln!(
        out,
        "    reconnects:                          none (embedded: no connection)"
    )?;
    writeln!(out, "\nGeneral statistics:")?;
    writeln!(out, "    total time:                          {secs:.4}s")?;
    writeln!(out, "    total number of events:              {}", s.events)?;
    writeln!(out, "\nLatency (ms):")?;
    for (name, v) in [
        ("min", l.min_ms),
        ("avg", l.avg_ms),
        ("50th percentile", l.p50_ms),
        ("95th percentile", l.p95_ms),
        ("99th percentile", l.p99_ms),
        ("99.9th percentile", l.p999_ms),
        ("max", l.max_ms),
    ] {
        writeln!(out, "         {name:<32}{v:>10.2}")?;
    }
    writeln!(out, "\nThreads fairness:")?;
    let n = s.events_per_thread.len().max(1) as f64;
    let mean = s.events_per_thread.iter().sum::<u64>() as f64 / n;
    let var = s
        .events_per_thread
        .iter()
        .map(|&e| (e as f64 - mean).powi(2))
        .sum::<f64>()
        / n;
    writeln!(
        out,
        "    events (avg/stddev):           {mean:.4}/{:.2}",
        var.sqrt()
    )?;
    writeln!(out, "\nIO:")?;
    writeln!(
        out,
        "    pages flushed:                       {} ({} bytes)",
        r.io.pages_flushed,
        r.io.pages_flushed.saturating_mul(r.page_size as u64)
    )?;
    writeln!(
        out,
        "    redo generated:                      {} bytes",
        r.io.redo_lsn
    )?;
    match r.io.process_write_bytes {
        Some(b) => writeln!(
            out,
            "    process write_bytes:                 {b} (data + doublewrite + redo)"
        )?,
        None => writeln!(
            out,
            "    process write_bytes:                 unknown (no /proc/self/io)"
        )?,
    }
    let d = &r.doublewrite;
    writeln!(
        out,
        "    pages flushed per second:            {:.1}",
        r.io.pages_flushed as f64 / secs.max(f64::MIN_POSITIVE)
    )?;
    writeln!(
        out,
        "    doublewrite:                         {} batches, {} pages ({:.2} pages a batch)",
        d.batches, d.pages, d.mean_batch_pages
    )?;
    for (name, c) in [
        ("data files", &r.files.data),
        ("doublewrite", &r.files.doublewrite),
        ("redo log", &r.files.redo),
    ] {
        writeln!(
            out,
            "    {name:<12} {:>14} bytes in {:>9} writes ({:.2} s), {:>7} syncs ({:.2} s)",
            c.write_bytes,
            c.writes,
            c.write_ns as f64 / 1e9,
            c.syncs,
            c.sync_ns as f64 / 1e9
        )?;
    }
    let p = &r.per_flushed_page;
    writeln!(
        out,
        "    per page written in place ({}):  {:.0} data + {:.0} doublewrite + {:.0} redo bytes, {:.4} syncs ({:.4} data, {:.4} doublewrite)",
        p.pages,
        p.data_bytes,
        p.doublewrite_bytes,
        p.redo_bytes,
        p.syncs,
        p.data_syncs,
        p.doublewrite_syncs
    )?;
    if let Some(c) = &r.check {
        writeln!(out, "\ncheck: {c}")?;
    }
    Ok(())
}
