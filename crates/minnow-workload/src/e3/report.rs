//! What one E3 run reports: the buffer pool's, the zip cache's and the tablespace's counters
//! sampled at both ends of the measured window, with the process's and its reader threads' CPU
//! times (from [`crate::procfs`]), turned into one [`RunReport`].

use std::time::{Duration, Instant};

use minnow::Database;
use minnow::inspect::Internals;
use serde::Serialize;

use super::{Layout, Workload};
use crate::{WorkloadError, procfs};

/// The counters of every compressed tablespace in `status`, added up.
pub(super) fn zip_space_stats(status: &minnow::Status) -> minnow::ZipStats {
    let mut sum = minnow::ZipStats::default();
    for s in &status.compression.tablespaces {
        sum.add(&s.stats);
    }
    sum
}

pub(super) fn per_op_us(time: Duration, ops: u64) -> f64 {
    if ops == 0 {
        0.0
    } else {
        time.as_secs_f64() * 1e6 / ops as f64
    }
}

/// CPU and wait time over a measured window.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct CpuTimes {
    /// The process's user CPU seconds (`/proc/self/stat` `utime`, 10 ms ticks).
    pub user_s: f64,
    /// The process's system CPU seconds (`stime`).
    pub sys_s: f64,
    /// Reader threads' seconds on a CPU, added up (`schedstat`).
    pub readers_cpu_s: f64,
    /// Reader threads' seconds runnable but waiting for a CPU, added up.
    pub readers_runq_s: f64,
    /// Reader threads' seconds blocked (window − on CPU − waiting for a CPU, added up): their
    /// IO wait.
    pub readers_blocked_s: f64,
    /// System-wide share of CPU time in user mode (`/proc/stat`, `user + nice`), percent.
    pub system_user_pct: f64,
    /// System-wide share in kernel mode (`system + irq + softirq`), percent.
    pub system_sys_pct: f64,
    /// System-wide share idle with IO outstanding (`iowait`), percent.
    pub system_iowait_pct: f64,
    /// System-wide share idle (`idle`), percent.
    pub system_idle_pct: f64,
}

/// One run of one workload on one layout (see the module docs).
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// The layout.
    pub layout: Layout,
    /// The workload.
    pub workload: Workload,
    /// Reader threads.
    pub threads: usize,
    /// The buffer pool in bytes.
    pub pool_bytes: usize,
    /// Seconds of the measured window.
    pub seconds: f64,
    /// Queries finished in the window.
    pub queries: u64,
    /// Rows read in the window (a filesort query's rows count as they are fetched).
    pub rows: u64,
    /// Queries per second.
    pub qps: f64,
    /// Rows per second.
    pub rows_per_sec: f64,
    /// CPU and wait times.
    pub cpu: CpuTimes,
    /// Pages the buffer pool read on demand. For a compressed table this counts the pages
    /// inflated from the zip cache too; its disk reads on demand are `zip_misses`.
    pub pages_read: u64,
    /// Pages read-ahead brought in (from disk, for either layout).
    pub read_ahead: u64,
    /// Page fixes served from the pool.
    pub pool_hits: u64,
    /// Page fixes that had to read (or inflate) the page.
    pub pool_misses: u64,
    /// Bytes the process read from storage (`read_bytes` of `/proc/self/io`; `None` without it).
    pub read_bytes: Option<u64>,
    /// Compressed pages inflated from a block cached in memory (no IO).
    pub zip_hits: u64,
    /// Compressed pages read from disk.
    pub zip_misses: u64,
    /// Decompressions.
    pub decompress_ops: u64,
    /// Mean microseconds per decompression (inflate and verify, from the tablespace's
    /// [`minnow::ZipStats`]).
    pub decompress_us: f64,
    /// Payload bytes over logical bytes of the pages inflated in the window
    /// (`decompress_bytes_in / decompress_bytes_out`): how small the stored pages' compressed
    /// data is, as gzip-ing the `.ibd` measured it in the article (0 without decompressions).
    pub payload_ratio: f64,
    /// Frames lent to the zip cache at the end of the window.
    pub frames_lent: u64,
    /// Compressed blocks cached at the end of the window.
    pub zip_blocks: u64,
    /// Whether the zip cache judged the workload IO-bound at the end.
    pub io_bound: bool,
}

/// Everything sampled at both ends of the window.
pub(super) struct Sample {
    at: Instant,
    pool: minnow_buf::BufferPoolStats,
    zip: minnow::ZipStats,
    zip_cache: minnow::ZipCacheStats,
    stat: Option<(u64, u64)>,
    io: Option<u64>,
    system: Option<[u64; 5]>,
    readers: Vec<(u64, u64)>,
}

pub(super) fn sample(db: &Database, tids: &[String]) -> Result<Sample, WorkloadError> {
    let pool = db.buffer_pool()?.stats();
    let zip = zip_space_stats(&db.status()?);
    let zip_cache = db.buffer_pool()?.zip_cache_stats();
    Ok(Sample {
        at: Instant::now(),
        pool,
        zip,
        zip_cache,
        stat: procfs::process_ticks(),
        io: procfs::io_counter("read_bytes"),
        system: procfs::system_ticks(),
        readers: tids
            .iter()
            .map(|t| procfs::schedstat(t).unwrap_or((0, 0)))
            .collect(),
    })
}

pub(super) fn report(
    layout: Layout,
    workload: Workload,
    threads: usize,
    pool_bytes: usize,
    (queries, rows): (u64, u64),
    a: &Sample,
    b: &Sample,
) -> RunReport {
    let seconds = b.at.duration_since(a.at).as_secs_f64().max(1e-9);
    let mut cpu = CpuTimes::default();
    if let (Some(x), Some(y)) = (a.stat, b.stat) {
        cpu.user_s = y.0.saturating_sub(x.0) as f64 / procfs::USER_HZ;
        cpu.sys_s = y.1.saturating_sub(x.1) as f64 / procfs::USER_HZ;
    }
    for (x, y) in a.readers.iter().zip(&b.readers) {
        let on = y.0.saturating_sub(x.0) as f64 / 1e9;
        let runq = y.1.saturating_sub(x.1) as f64 / 1e9;
        cpu.readers_cpu_s += on;
        cpu.readers_runq_s += runq;
        cpu.readers_blocked_s += (seconds - on - runq).max(0.0);
    }
    if let (Some(x), Some(y)) = (a.system, b.system) {
        let d = |i: usize| y[i].saturating_sub(x[i]) as f64;
        let all = d(4).max(1.0);
        cpu.system_user_pct = 100.0 * d(0) / all;
        cpu.system_sys_pct = 100.0 * d(1) / all;
        cpu.system_idle_pct = 100.0 * d(2) / all;
        cpu.system_iowait_pct = 100.0 * d(3) / all;
    }
    let (pa, pb) = (&a.pool, &b.pool);
    let zip_ops = b.zip.decompress_ops.saturating_sub(a.zip.decompress_ops);
    let zip_time = b.zip.decompress_time.saturating_sub(a.zip.decompress_time);
    let (ca, cb) = (&a.zip_cache, &b.zip_cache);
    RunReport {
        layout,
        workload,
        threads,
        pool_bytes,
        seconds,
        queries,
        rows,
        qps: queries as f64 / seconds,
        rows_per_sec: rows as f64 / seconds,
        cpu,
        pages_read: pb.reads.saturating_sub(pa.reads),
        read_ahead: pb.read_ahead.saturating_sub(pa.read_ahead),
        pool_hits: pb.hits.saturating_sub(pa.hits),
        pool_misses: pb.misses.saturating_sub(pa.misses),
        read_bytes: match (a.io, b.io) {
            (Some(x), Some(y)) => Some(y.saturating_sub(x)),
            _ => None,
        },
        zip_hits: cb.zip_hits.saturating_sub(ca.zip_hits),
        zip_misses: cb.zip_misses.saturating_sub(ca.zip_misses),
        decompress_ops: zip_ops,
        decompress_us: per_op_us(zip_time, zip_ops),
        payload_ratio: {
            let inp = b
                .zip
                .decompress_bytes_in
                .saturating_sub(a.zip.decompress_bytes_in);
            let out = b
                .zip
                .decompress_bytes_out
                .saturating_sub(a.zip.decompress_bytes_out);
            if out == 0 {
                0.0
            } else {
                inp as f64 / out as f64
            }
        },
        frames_lent: cb.frames_lent,
        zip_blocks: cb.blocks,
        io_bound: cb.io_bound,
    }
}
