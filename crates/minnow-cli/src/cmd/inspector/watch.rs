//! `minnow watch DIR`: the counters of a running database as rates, one line per interval,
//! as `vmstat` prints them.
//!
//! Each line is the difference between two status-file snapshots (see [`super::status`])
//! divided by the time between them: pages read and written per second, the buffer pool hit
//! rate over the interval, rows read / inserted / updated / deleted per second, redo bytes per
//! second, the checkpoint age and dirty pages at the end of the interval, and doublewrite
//! batches per second. Between lines the tool waits `--interval-ms`, then for a snapshot newer
//! than the last one (the engine refreshes the file at its own interval, so the effective
//! interval is the longer of the two). `--count N` stops after N lines (tests use it); without
//! it `watch` runs until interrupted. `--json` prints one JSON object per line (JSON Lines).
//!
//! What to look for while a workload runs: reads/s falling and the hit rate rising as the
//! pool warms up; dirty pages and the checkpoint age climbing until the page cleaners'
//! adaptive flushing catches up (written/s rises with them); doublewrite batches following the
//! page writes.
//!
//! Exit 0 after `--count` lines; 2 if DIR has no live status file (the database is not
//! running, or runs without `Config::status_file`) or the file stops being refreshed.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::cli::Status;
use crate::cmd::inspector::status::{STALE_GRACE_MS, Snapshot, read_snapshot};
use crate::output::CliError;

/// Default time between lines.
pub const DEFAULT_INTERVAL_MS: u64 = 1000;

/// One line: rates over one interval.
#[derive(Debug, Serialize)]
pub struct Sample {
    /// Seconds covered (between the two snapshots).
    pub seconds: f64,
    /// Pages read from disk per second (on demand and read-ahead).
    pub reads_per_s: f64,
    /// Pages written per second (flush list and LRU tail).
    pub writes_per_s: f64,
    /// Hits over all fixes in the interval (1.0 if nothing was fixed).
    pub hit_rate: f64,
    /// Rows read per second.
    pub rows_read_per_s: f64,
    /// Rows inserted per second.
    pub rows_inserted_per_s: f64,
    /// Rows updated per second.
    pub rows_updated_per_s: f64,
    /// Rows deleted per second.
    pub rows_deleted_per_s: f64,
    /// Redo bytes per second (LSN growth).
    pub lsn_per_s: f64,
    /// Checkpoint age at the end of the interval, bytes.
    pub checkpoint_age: f64,
    /// Dirty pages at the end of the interval.
    pub dirty: f64,
    /// Doublewrite batches per second.
    pub dblwr_batches_per_s: f64,
}

fn sample(a: &Snapshot, b: &Snapshot) -> Sample {
    let secs = (b.taken_at_ms.saturating_sub(a.taken_at_ms) as f64 / 1000.0).max(1e-3);
    let rate = |p: &str| (b.num(p) - a.num(p)).max(0.0) / secs;
    let hits = b.num("/buffer_pool/hits") - a.num("/buffer_pool/hits");
    let misses = b.num("/buffer_pool/misses") - a.num("/buffer_pool/misses");
    Sample {
        seconds: secs,
        reads_per_s: rate("/buffer_pool/reads") + rate("/buffer_pool/read_ahead"),
        writes_per_s: rate("/buffer_pool/writes"),
        hit_rate: if hits + misses > 0.0 {
            hits / (hits + misses)
        } else {
            1.0
        },
        rows_read_per_s: rate("/rows/read"),
        rows_inserted_per_s: rate("/rows/inserted"),
        rows_updated_per_s: rate("/rows/updated"),
        rows_deleted_per_s: rate("/rows/deleted"),
        lsn_per_s: rate("/redo/current_lsn"),
        checkpoint_age: b.num("/redo/checkpoint_age"),
        dirty: b.num("/buffer_pool/dirty"),
        dblwr_batches_per_s: rate("/doublewrite/batches"),
    }
}

/// A live snapshot, or the error that ends `watch`.
fn live(dir: &Path) -> Result<Snapshot, CliError> {
    match read_snapshot(dir) {
        Ok(Some(s)) if s.is_live() => Ok(s),
        Ok(Some(s)) => Err(CliError::Usage(format!(
            "{}: {} is {:.1} s old: the database is not running",
            dir.display(),
            minnow::STATUS_FILE,
            s.age_ms as f64 / 1000.0
        ))),
        Ok(None) => Err(CliError::Usage(format!(
            "{}: no {}: the database is not running, or runs without Config::status_file \
             (`minnow status` shows a stopped database)",
            dir.display(),
            minnow::STATUS_FILE
        ))),
        Err(e) => Err(CliError::Usage(e)),
    }
}

/// Waits for a snapshot taken after `after_ms`.
fn next(dir: &Path, after_ms: u64, interval_ms: u64) -> Result<Snapshot, CliError> {
    let deadline =
        Instant::now() + Duration::from_millis(interval_ms.saturating_mul(3) + STALE_GRACE_MS);
    loop {
        let s = live(dir)?;
        if s.taken_at_ms > after_ms {
            return Ok(s);
        }
        if Instant::now() > deadline {
            return Err(CliError::Usage(format!(
                "{}: {} stopped being refreshed",
                dir.display(),
                minnow::STATUS_FILE
            )));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

const HEADER: &str = "   secs   reads/s  writes/s   hit%    rows r/s   ins/s   upd/s   del/s   redo B/s   ckpt age   dirty  dblwr b/s";

/// Runs `minnow watch`.
pub fn run(
    dir: &Path,
    interval_ms: u64,
    count: Option<u64>,
    json: bool,
    out: &mut dyn Write,
) -> Result<Status, CliError> {
    let mut prev = live(dir)?;
    let mut printed = 0u64;
    while count.is_none_or(|c| printed < c) {
        std::thread::sleep(Duration::from_millis(interval_ms));
        let cur = next(dir, prev.taken_at_ms, prev.interval_ms)?;
        let s = sample(&prev, &cur);
        if json {
            serde_json::to_writer(&mut *out, &s).map_err(std::io::Error::other)?;
            writeln!(out)?;
        } else {
            if printed.is_multiple_of(20) {
                writeln!(out, "{HEADER}")?;
            }
            writeln!(
                out,
                "{:>7.2} {:>9.0} {:>9.0} {:>6.2} {:>11.0} {:>7.0} {:>7.0} {:>7.0} {:>10.0} {:>10.0} {:>7.0} {:>10.1}",
                s.seconds,
                s.reads_per_s,
                s.writes_per_s,
                s.hit_rate * 100.0,
                s.rows_read_per_s,
                s.rows_inserted_per_s,
                s.rows_updated_per_s,
                s.rows_deleted_per_s,
                s.lsn_per_s,
                s.checkpoint_age,
                s.dirty,
                s.dblwr_batches_per_s
            )?;
        }
        out.flush()?;
        printed += 1;
        prev = cur;
    }
    Ok(Status::Clean)
}
