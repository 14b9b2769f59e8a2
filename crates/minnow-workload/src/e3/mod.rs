//! Table compression in an IO-bound workload (seed 002; experiment E3).
//!
//! The article compressed a web application's busiest table (6 GB) into 8 KiB pages with the
//! buffer pool at about 1/8 of the data: the table shrank 73 %, the server went from 30 % user
//! CPU / 30 % iowait to 87 % user / 3 % iowait, and queries that fetch rows in an order
//! unrelated to the primary key (a filesort over a join) became much slower. This module runs
//! the same comparison on minnow: one table, loaded once per [`Layout`] (uncompressed, 8 KiB
//! zlib level 6, optionally 8 KiB LZ4), each in its own data directory, then read cold with
//! a buffer pool of 1/8 of the **uncompressed** table's on-disk size.
//!
//! ## The data
//!
//! The `articles` table of [`crate::textgen`]: `id` (BIGINT primary key, 1..=rows), `title`
//! (3-9 words), `body` (40-160 words in sentences, about 700 bytes), `author` ("First Last"
//! from 48 × 48 names), `email` (`first.last<n>@domain`, 8 domains), `posted` (a DATE in
//! 2005-2014) and `votes` (0-999, small values likelier). Words are drawn from a 4,096-word
//! English-like vocabulary (the 120 commonest English words, then made-up words built from
//! syllables) by Zipf's law (probability of rank `r` proportional to `1/r`): short strings
//! repeated often with a skewed distribution and a long tail of rare ones, as in real text,
//! so the table compresses the way a table of prose does; neither random bytes (which do not
//! compress) nor zeros (which compress absurdly well). About 20 rows fit a 16 KiB page.
//!
//! ## Preparing ([`prepare`])
//!
//! Creates a database in an empty directory, creates `articles` (with
//! [`minnow::TableDef::compressed`] for a compressed layout) and bulk-loads it with
//! [`minnow::Table::load`], then closes the database cleanly (every page on disk, no
//! `ib_buffer_pool` dump). **On-disk size of the table**, [`Prepared::table_bytes`]: for a
//! compressed layout, the size of its shared compressed tablespace file (`zip8k_zlib-6.ibd`,
//! which holds this table's indexes and nothing else); for the uncompressed layout, how much
//! `ibdata1` grew from just after `create_table` to after the load and close (the table's
//! segments: leaf and non-leaf pages, with the free pages of their last extents, as an
//! `.ibd` file's size counts them). Both are file sizes, so both count allocated space, not
//! only filled pages.
//!
//! ## The reads ([`run`])
//!
//! Each run opens the database afresh (a cold pool: `buffer_pool_dump_at_shutdown` off, so no
//! dump is loaded; `flush_method = O_DIRECT`, so the OS page cache holds nothing either) with
//! the given pool size, then `threads` threads run one [`Workload`] for `warmup` (not counted)
//! and then for `duration` or until `max_queries` queries in all:
//!
//! - [`Workload::Point`]: `SELECT * WHERE id = ?`, `id` uniform over the table.
//! - [`Workload::Range`]: `SELECT * WHERE id >= ? LIMIT n`, the start uniform, `n` uniform in
//!   `range_min..=range_max` (10-100 by default).
//! - [`Workload::Filesort`]: the article's case. One query fetches `filesort_rows` rows by
//!   primary key: the ids `start, start + s, start + 2s, ...` (every `s`-th article, `s` =
//!   `filesort_stride`, as one category's members would be), **in the order of a hash of the
//!   id** (a ranking unrelated to the key, as `ORDER BY ranking.total` after a filesort),
//!   each by a point `get`. The default span (`filesort_rows × s` = `rows / 4`) is twice the
//!   1/8 pool, so a query cannot keep its pages cached and comes back to evicted ones.
//! - [`Workload::KeyOrder`]: the same queries with the ids in key order (the plan without the
//!   filesort), for contrast: each page is fetched once per query, its rows one after another.
//!
//! ## What is measured, per run ([`RunReport`])
//!
//! Over the measured window only: queries and rows per second; the process's user and system
//! CPU seconds (`utime`, `stime` of `/proc/self/stat`, in the kernel's 10 ms ticks); for the
//! reader threads, the seconds on a CPU, waiting for a CPU and **blocked** (from each
//! thread's `/proc/thread-self/schedstat`: blocked = window − on CPU − waiting for a CPU;
//! a reader blocks on its own `pread` or on another reader's read of the same page, so this
//! is the readers' IO wait); the system-wide split of CPU time into user, system, iowait and
//! idle from `/proc/stat` (what `vmstat` and the article show, but every process on the
//! machine counts in it). The per-process `delayacct_blkio_ticks` of `/proc/self/stat` would
//! be the natural IO-wait figure, but it stays 0 unless the kernel's task delay accounting is
//! on (`kernel.task_delayacct`), so it is not used. Then the buffer pool's reads (on demand
//! and read-ahead) and fixes that hit or missed, the bytes the process read from storage
//! (`read_bytes` of `/proc/self/io`), and for a compressed layout the zip cache's hits
//! (a block inflated from memory) and misses (a block read from disk), the decompressions
//! and their mean time (the tablespace's [`minnow::ZipStats`]: wall time, so with more
//! readers than cores it includes time a reader was preempted mid-inflate), the payload
//! ratio of the pages inflated, and the frames lent to the zip cache at the end.
//!
//! ```
//! use std::time::Duration;
//! use minnow_workload::e3::{self, E3Config, Layout, Workload};
//!
//! let parent = tempfile::tempdir()?;
//! let cfg = E3Config {
//!     rows: 2_000,
//!     duration: Duration::from_millis(50),
//!     max_queries: Some(50),
//!     ..E3Config::default()
//! };
//! let plain = e3::prepare(&parent.path().join("plain"), Layout::Uncompressed, &cfg)?;
//! let zip = e3::prepare(&parent.path().join("zip"), Layout::Zlib6, &cfg)?;
//! assert!(zip.table_bytes < plain.table_bytes);
//! let pool = cfg.pool_bytes(plain.table_bytes);
//! let r = e3::run(&parent.path().join("zip"), Layout::Zlib6, Workload::Point, &cfg, pool)?;
//! assert!(r.queries > 0 && r.rows == r.queries);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use minnow::FlushMethod;
use minnow::{Compression, Config, Database, KeyBlockSize, Scan, Value};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::{WorkloadError, procfs, textgen};

/// The table's name (`articles`, from [`crate::textgen`]).
pub const TABLE: &str = textgen::TABLE;

/// How the table is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// 16 KiB pages in `ibdata1`.
    Uncompressed,
    /// `KEY_BLOCK_SIZE=8`, zlib level 6 (InnoDB's defaults), in `zip8k_zlib-6.ibd`.
    #[serde(rename = "zlib6_8k")]
    Zlib6,
    /// `KEY_BLOCK_SIZE=8`, LZ4, in `zip8k_lz4.ibd`.
    #[serde(rename = "lz4_8k")]
    Lz4,
    /// `KEY_BLOCK_SIZE=4`, zlib level 6, in `zip4k_zlib-6.ibd`: the text-like pages compress
    /// to about a fifth of a page, so most fit a quarter-page block.
    #[serde(rename = "zlib6_4k")]
    Zlib6K4,
}

impl Layout {
    /// Every layout.
    pub const ALL: [Layout; 4] = [
        Layout::Uncompressed,
        Layout::Zlib6,
        Layout::Lz4,
        Layout::Zlib6K4,
    ];

    /// The name used in reports and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Uncompressed => "uncompressed",
            Layout::Zlib6 => "zlib6_8k",
            Layout::Lz4 => "lz4_8k",
            Layout::Zlib6K4 => "zlib6_4k",
        }
    }

    /// The layout called `s` ([`Layout::name`], or `plain`, `zlib`, `lz4`).
    pub fn parse(s: &str) -> Option<Layout> {
        match s.trim().to_ascii_lowercase().as_str() {
            "uncompressed" | "plain" | "none" => Some(Layout::Uncompressed),
            "zlib6_8k" | "zlib" | "zlib6" | "zlib-6" => Some(Layout::Zlib6),
            "lz4_8k" | "lz4" => Some(Layout::Lz4),
            "zlib6_4k" | "zlib4k" => Some(Layout::Zlib6K4),
            _ => None,
        }
    }

    /// The table's compression setting (`None` for the uncompressed layout).
    pub fn compression(self) -> Result<Option<Compression>, WorkloadError> {
        Ok(match self {
            Layout::Uncompressed => None,
            Layout::Zlib6 => Some(Compression::zlib(KeyBlockSize::K8, 6)?),
            Layout::Lz4 => Some(Compression::lz4(KeyBlockSize::K8)),
            Layout::Zlib6K4 => Some(Compression::zlib(KeyBlockSize::K4, 6)?),
        })
    }
}

/// One read workload (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Workload {
    /// Point selects by a uniformly random primary key.
    Point,
    /// Short range scans from a random key.
    Range,
    /// Rows of a stretch of one "category" fetched by primary key in hash order.
    Filesort,
    /// The same rows fetched in key order.
    KeyOrder,
}

impl Workload {
    /// Every workload.
    pub const ALL: [Workload; 4] = [
        Workload::Point,
        Workload::Range,
        Workload::Filesort,
        Workload::KeyOrder,
    ];

    /// The name used in reports and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Point => "point",
            Workload::Range => "range",
            Workload::Filesort => "filesort",
            Workload::KeyOrder => "key_order",
        }
    }

    /// The workload called `s` ([`Workload::name`]; `key-order` is accepted too).
    pub fn parse(s: &str) -> Option<Workload> {
        match s.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "point" => Some(Workload::Point),
            "range" => Some(Workload::Range),
            "filesort" => Some(Workload::Filesort),
            "key_order" | "keyorder" => Some(Workload::KeyOrder),
            _ => None,
        }
    }
}

/// The experiment's settings.
#[derive(Debug, Clone)]
pub struct E3Config {
    /// Rows of `articles`.
    pub rows: u64,
    /// The generator's seed (rows) and the readers' (keys).
    pub seed: u64,
    /// Reader threads.
    pub threads: usize,
    /// Reads before the measured window (not counted).
    pub warmup: Duration,
    /// Length of the measured window.
    pub duration: Duration,
    /// Stop the window early after this many queries in all (`None`: run for `duration`).
    pub max_queries: Option<u64>,
    /// Fewest rows of a range scan.
    pub range_min: u64,
    /// Most rows of a range scan.
    pub range_max: u64,
    /// Rows a filesort (or key-order) query fetches; 0: `rows / 16`, at least 1.
    pub filesort_rows: u64,
    /// Distance between the ids of one filesort query (every `s`-th article).
    pub filesort_stride: u64,
    /// The buffer pool is the uncompressed table's on-disk size divided by this.
    pub pool_divisor: u64,
    /// A buffer pool size that overrides `pool_divisor` (bytes).
    pub buffer_pool_size: Option<usize>,
    /// Every other setting of the database (default: `O_DIRECT`, no buffer pool dump).
    pub base: Config,
}

impl Default for E3Config {
    fn default() -> E3Config {
        E3Config {
            rows: 300_000,
            seed: 1,
            threads: 4,
            warmup: Duration::ZERO,
            duration: Duration::from_secs(30),
            max_queries: None,
            range_min: 10,
            range_max: 100,
            filesort_rows: 0,
            filesort_stride: 4,
            pool_divisor: 8,
            buffer_pool_size: None,
            base: Config {
                flush_method: FlushMethod::ODirect,
                buffer_pool_dump_at_shutdown: false,
                ..Config::default()
            },
        }
    }
}

impl E3Config {
    fn validate(&self) -> Result<(), WorkloadError> {
        let bad = |setting: &'static str, reason: &str| {
            Err(WorkloadError::Setting {
                setting,
                reason: reason.to_owned(),
            })
        };
        if self.rows < 2 {
            return bad("rows", "need at least 2 rows");
        }
        if self.threads == 0 || self.threads > 1024 {
            return bad("threads", "must be 1..=1024");
        }
        if self.range_min == 0 || self.range_min > self.range_max {
            return bad("range_rows", "need 1 <= range_min <= range_max");
        }
        if self.filesort_stride == 0 {
            return bad("filesort_stride", "must be at least 1");
        }
        if self.pool_divisor == 0 {
            return bad("pool_divisor", "must be at least 1");
        }
        if self.duration.is_zero() && self.max_queries.is_none() {
            return bad("duration", "need a duration or a query count");
        }
        Ok(())
    }

    /// Rows one filesort query fetches ([`E3Config::filesort_rows`], or its default).
    pub fn filesort_len(&self) -> u64 {
        let n = if self.filesort_rows == 0 {
            self.rows / 16
        } else {
            self.filesort_rows
        };
        n.clamp(1, (self.rows / self.filesort_stride.max(1)).max(1))
    }

    /// The buffer pool for a table of `uncompressed_bytes` on disk: `buffer_pool_size` if
    /// set, else `uncompressed_bytes / pool_divisor`, at least 4 MiB (with 128 frames, four
    /// readers in key order, whose reads trigger linear read-ahead, have exhausted the pool).
    pub fn pool_bytes(&self, uncompressed_bytes: u64) -> usize {
        self.buffer_pool_size.unwrap_or_else(|| {
            let b = uncompressed_bytes / self.pool_divisor.max(1);
            usize::try_from(b).unwrap_or(usize::MAX).max(4 << 20)
        })
    }
}

/// What [`prepare`] built.
#[derive(Debug, Clone, Serialize)]
pub struct Prepared {
    /// The layout.
    pub layout: Layout,
    /// Rows loaded.
    pub rows: u64,
    /// Seconds the load took (`create_table` to the end of `Table::load`; the close that
    /// flushes the pages is not counted).
    pub load_seconds: f64,
    /// Seconds the close took (flushing every page, compressing those of a compressed layout
    /// that the load left uncompressed in the pool).
    pub close_seconds: f64,
    /// The file that holds the table (`ibdata1` or the compressed tablespace's file).
    pub table_file: String,
    /// The table's on-disk size in bytes (see the module docs for how it is measured).
    pub table_bytes: u64,
    /// `ibdata1`'s size after the load.
    pub ibdata1_bytes: u64,
    /// The compressed tablespace's pages (blocks) after the load (0 for uncompressed).
    pub zip_pages: u64,
    /// Compressions during the load (the close's flushes are not counted).
    pub compress_ops: u64,
    /// Compressions that did not fit their block (each split a page).
    pub compress_failures: u64,
    /// Mean microseconds per compression.
    pub compress_us: f64,
}

fn file_len(path: &Path) -> Result<u64, WorkloadError> {
    std::fs::metadata(path)
        .map(|m| m.len())
        .map_err(|e| WorkloadError::Setting {
            setting: "dir",
            reason: format!("{}: {e}", path.display()),
        })
}

/// Creates a database in `dir` (which must not hold one), loads `cfg.rows` rows of `articles`
/// stored as `layout`, and closes it.
pub fn prepare(dir: &Path, layout: Layout, cfg: &E3Config) -> Result<Prepared, WorkloadError> {
    cfg.validate()?;
    std::fs::create_dir_all(dir).map_err(|e| WorkloadError::Setting {
        setting: "dir",
        reason: format!("{}: {e}", dir.display()),
    })?;
    let config = Config {
        buffer_pool_dump_at_shutdown: false,
        ..cfg.base.clone()
    };
    let db = Database::create(dir, config)?;
    let mut def = textgen::table_def();
    let compression = layout.compression()?;
    if let Some(c) = compression {
        def = def.compressed(c);
    }
    let ibdata1 = dir.join(minnow::inspect::SYSTEM_TABLESPACE);
    let started = Instant::now();
    let t = db.create_table(def)?;
    let ibdata1_before = file_len(&ibdata1)?;
    t.load((0..cfg.rows).map(|k| textgen::row(cfg.seed, k)))?;
    let load_seconds = started.elapsed().as_secs_f64();
    drop(t);
    let load_zip = zip_space_stats(&db.status()?);
    let started = Instant::now();
    db.close()?;
    let close_seconds = started.elapsed().as_secs_f64();
    let ibdata1_bytes = file_len(&ibdata1)?;
    let (table_file, table_bytes, zip_pages) = match compression {
        None => (
            minnow::inspect::SYSTEM_TABLESPACE.to_owned(),
            ibdata1_bytes.saturating_sub(ibdata1_before),
            0,
        ),
        Some(c) => {
            let name = c.file_name();
            let bytes = file_len(&dir.join(&name))?;
            let block = c.block_size.bytes() as u64;
            (name, bytes, bytes / block.max(1))
        }
    };
    let zip = load_zip;
    Ok(Prepared {
        layout,
        rows: cfg.rows,
        load_seconds,
        close_seconds,
        table_file,
        table_bytes,
        ibdata1_bytes,
        zip_pages,
        compress_ops: zip.compress_ops,
        compress_failures: zip.compress_failures,
        compress_us: per_op_us(zip.compress_time, zip.compress_ops),
    })
}

/// The ids one filesort (or key-order) query fetches from `start`, in the order it fetches
/// them.
pub fn filesort_ids(cfg: &E3Config, start: u64, hash_order: bool) -> Vec<u64> {
    let n = cfg.filesort_len();
    let s = cfg.filesort_stride.max(1);
    let mut ids: Vec<u64> = (0..n)
        .map(|i| start + i * s)
        .filter(|&id| id <= cfg.rows)
        .collect();
    if hash_order {
        let seed = cfg.seed;
        ids.sort_by_key(|&id| mix(id ^ seed.rotate_left(17)));
    }
    ids
}

/// SplitMix64's finaliser: the "ranking" the filesort orders by.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

const WARMING: u8 = 0;
const MEASURING: u8 = 1;
const STOPPED: u8 = 2;

/// Opens the database in `dir` (prepared by [`prepare`] as `layout`) cold, with a buffer pool
/// of `pool_bytes`, runs `workload` on `cfg.threads` threads for `cfg.warmup` and then the
/// measured window, and closes it.
pub fn run(
    dir: &Path,
    layout: Layout,
    workload: Workload,
    cfg: &E3Config,
    pool_bytes: usize,
) -> Result<RunReport, WorkloadError> {
    cfg.validate()?;
    let config = Config {
        buffer_pool_size: pool_bytes,
        buffer_pool_dump_at_shutdown: false,
        ..cfg.base.clone()
    };
    let db = Database::open(dir, config)?;
    let t = db.table(TABLE)?;
    if t.compression() != layout.compression()? {
        return Err(WorkloadError::Schema {
            table: TABLE.into(),
            reason: format!("not stored as {}", layout.name()),
        });
    }
    let phase = AtomicU8::new(WARMING);
    let queries = AtomicU64::new(0);
    let rows = AtomicU64::new(0);
    let tids = Mutex::new(Vec::new());
    let result = std::thread::scope(|s| -> Result<RunReport, WorkloadError> {
        let workers: Vec<_> = (0..cfg.threads)
            .map(|w| {
                let (t, phase, queries, rows, tids) = (&t, &phase, &queries, &rows, &tids);
                s.spawn(move || -> Result<(), WorkloadError> {
                    if let (Some(id), Ok(mut v)) = (procfs::thread_id(), tids.lock()) {
                        v.push(id);
                    }
                    let mut rng = SmallRng::seed_from_u64(
                        cfg.seed ^ (w as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                    );
                    reader(t, workload, cfg, &mut rng, phase, queries, rows)
                })
            })
            .collect();
        // Wait for every reader to register, then warm up.
        let started = Instant::now();
        while tids.lock().map_or(0, |v| v.len()) < cfg.threads
            && started.elapsed() < Duration::from_secs(5)
            && !workers.iter().any(|w| w.is_finished())
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        let ids: Vec<String> = tids.lock().map(|v| v.clone()).unwrap_or_default();
        sleep_unless_finished(&workers, cfg.warmup);
        let a = sample(&db, &ids)?;
        let base = (
            queries.load(Ordering::Relaxed),
            rows.load(Ordering::Relaxed),
        );
        phase.store(MEASURING, Ordering::Relaxed);
        let window = Instant::now();
        loop {
            std::thread::sleep(Duration::from_millis(5));
            let done = queries.load(Ordering::Relaxed).saturating_sub(base.0);
            if window.elapsed() >= cfg.duration && !cfg.duration.is_zero()
                || cfg.max_queries.is_some_and(|m| done >= m)
                || workers.iter().any(|w| w.is_finished())
            {
                break;
            }
        }
        // Sample while the readers still run (a reader that has returned has no schedstat).
        let b = sample(&db, &ids);
        let counted = (
            queries.load(Ordering::Relaxed).saturating_sub(base.0),
            rows.load(Ordering::Relaxed).saturating_sub(base.1),
        );
        phase.store(STOPPED, Ordering::Relaxed);
        let b = b?;
        for w in workers {
            w.join().unwrap_or(Err(WorkloadError::WorkerPanicked))?;
        }
        Ok(report(
            layout,
            workload,
            cfg.threads,
            pool_bytes,
            counted,
            &a,
            &b,
        ))
    });
    drop(t);
    db.close()?;
    result
}

fn sleep_unless_finished<T>(workers: &[std::thread::ScopedJoinHandle<'_, T>], time: Duration) {
    let until = Instant::now() + time;
    while Instant::now() < until && !workers.iter().any(|w| w.is_finished()) {
        std::thread::sleep(Duration::from_millis(5).min(until - Instant::now()));
    }
}

fn missing(id: u64) -> WorkloadError {
    WorkloadError::Schema {
        table: TABLE.into(),
        reason: format!("row {id} is missing"),
    }
}

/// One reader: runs `workload` until the phase is [`STOPPED`].
fn reader(
    t: &minnow::Table,
    workload: Workload,
    cfg: &E3Config,
    rng: &mut SmallRng,
    phase: &AtomicU8,
    queries: &AtomicU64,
    rows: &AtomicU64,
) -> Result<(), WorkloadError> {
    let mut key = vec![Value::UInt(0)];
    let span = cfg.filesort_len() * cfg.filesort_stride.max(1);
    while phase.load(Ordering::Relaxed) != STOPPED {
        match workload {
            Workload::Point => {
                let id = rng.random_range(1..=cfg.rows);
                key[0] = Value::UInt(id);
                if t.get(&key)?.is_none() {
                    return Err(missing(id));
                }
                rows.fetch_add(1, Ordering::Relaxed);
            }
            Workload::Range => {
                let start = rng.random_range(1..=cfg.rows);
                let n = rng.random_range(cfg.range_min..=cfg.range_max);
                let scan = Scan::range(
                    std::ops::Bound::Included(vec![Value::UInt(start)]),
                    std::ops::Bound::Unbounded,
                )
                .limit(usize::try_from(n).unwrap_or(usize::MAX));
                let mut got = 0u64;
                for r in t.scan(scan)? {
                    r?;
                    got += 1;
                }
                let want = n.min(cfg.rows + 1 - start);
                if got != want {
                    return Err(WorkloadError::Schema {
                        table: TABLE.into(),
                        reason: format!("range from {start}: {got} rows, expected {want}"),
                    });
                }
                rows.fetch_add(got, Ordering::Relaxed);
            }
            Workload::Filesort | Workload::KeyOrder => {
                let last = cfg.rows.saturating_sub(span).max(1);
                let start = rng.random_range(1..=last);
                let ids = filesort_ids(cfg, start, workload == Workload::Filesort);
                for id in ids {
                    if phase.load(Ordering::Relaxed) == STOPPED {
                        return Ok(());
                    }
                    key[0] = Value::UInt(id);
                    if t.get(&key)?.is_none() {
                        return Err(missing(id));
                    }
                    rows.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        queries.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

mod report;
pub use report::{CpuTimes, RunReport};
use report::{per_op_us, report, sample, zip_space_stats};
#[cfg(test)]
mod tests;
