//! Buffer pool warm-up after a restart (seed 000's appendix and seed 002; experiment E11).
//!
//! A server restarted with an empty buffer pool answers its first queries from disk, one
//! random read per miss, until its working set is back in memory: on a large server the
//! articles report an IO-bound first hour. InnoDB's answer (5.6 on) is to write the ids of
//! the hottest pages to `ib_buffer_pool` at shutdown and read them back at startup
//! (`innodb_buffer_pool_dump_at_shutdown`, `_load_at_startup`, `_dump_pct`); minnow does the
//! same (`minnow_buf`'s `load` module: background readers issue the listed pages' reads many
//! at a time, sorted by page number, into free frames).
//!
//! ## The workload
//!
//! One table `warm(id U64 primary key, k U32, pad VARCHAR(200))` of `rows` rows (about 90 to
//! a 16 KiB page), larger than the buffer pool. [`WarmupConfig::hot_rows`] rows, spread evenly
//! over the table (so each sits on its own leaf page when the table has more than about 90
//! rows per hot row), form the hot set; `threads` threads run primary-key point reads of which
//! `hot_pct` percent pick a hot row and the rest any row. The hot set is meant to fit in the
//! pool; the rest of the table does not, so the steady state still misses now and then.
//!
//! ## What [`run`] does
//!
//! 1. Creates the database in `dir` and loads the table, then closes it (no dump).
//! 2. Opens it (no dump to load yet), runs the reads for `warm_time` and takes the mean
//!    throughput of the second half of that run's intervals as the steady state; closes it,
//!    which writes `ib_buffer_pool` (`buffer_pool_dump_pct` of the LRU list, from its head).
//! 3. **Cold restart**: opens it with `buffer_pool_dump_at_shutdown = false` (so nothing is
//!    loaded, and the dump file is left as it is), runs the reads for `measure_time`.
//! 4. **Warm restart**: opens it with the dump on (the background load starts inside
//!    `Database::open`), runs the same reads for `measure_time`, then waits for the load and
//!    counts the pages it read.
//!
//! Each restart reports throughput per `interval` and the time from the start of its reads to
//! the end of the first interval at or above 90% of the steady state ([`Restart::time_to_90`];
//! `None` if it never got there). Use `flush_method = O_DIRECT` (the CLI and the bench do):
//! with fsync the OS page cache keeps the table after the first phase and hides the IO.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use minnow::inspect::Internals;
use minnow::{ColumnDef, ColumnType, Config, Database, TableDef, Value};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::WorkloadError;

/// The table's name.
pub const TABLE: &str = "warm";

/// The share of the steady state a restart must reach for [`Restart::time_to_90`].
pub const TARGET_SHARE: f64 = 0.9;

/// The workload's settings.
#[derive(Debug, Clone)]
pub struct WarmupConfig {
    /// Rows in the table.
    pub rows: u64,
    /// Rows in the hot set, spread evenly over the table.
    pub hot_rows: u64,
    /// Percentage (0..=100) of reads that go to the hot set.
    pub hot_pct: u32,
    /// Reader threads.
    pub threads: usize,
    /// Length of one reporting interval.
    pub interval: Duration,
    /// How long the first run reads before the restart (its second half is the steady state).
    pub warm_time: Duration,
    /// How long each restart reads.
    pub measure_time: Duration,
    /// Seed of the data and of the readers' random streams.
    pub seed: u64,
}

impl Default for WarmupConfig {
    fn default() -> WarmupConfig {
        WarmupConfig {
            rows: 1_000_000,
            hot_rows: 2_000,
            hot_pct: 99,
            threads: 4,
            interval: Duration::from_millis(100),
            warm_time: Duration::from_secs(10),
            measure_time: Duration::from_secs(5),
            seed: 0,
        }
    }
}

impl WarmupConfig {
    fn validate(&self) -> Result<(), WorkloadError> {
        let bad = |setting: &'static str, reason: &str| {
            Err(WorkloadError::Setting {
                setting,
                reason: reason.to_string(),
            })
        };
        if self.rows == 0 {
            return bad("rows", "must be at least 1");
        }
        if self.hot_rows == 0 || self.hot_rows > self.rows {
            return bad("hot_rows", "must be 1..=rows");
        }
        if self.hot_pct > 100 {
            return bad("hot_pct", "must be 0..=100");
        }
        if self.threads == 0 || self.threads > 1024 {
            return bad("threads", "must be 1..=1024");
        }
        if self.interval.is_zero() {
            return bad("interval", "must be longer than zero");
        }
        if self.warm_time < self.interval * 2 || self.measure_time < self.interval {
            return bad(
                "time",
                "the warm time must span two intervals and the measure time one",
            );
        }
        Ok(())
    }

    /// The id of hot row `i` (0-based): hot rows are spread evenly over the table.
    pub fn hot_id(&self, i: u64) -> u64 {
        let stride = (self.rows / self.hot_rows.max(1)).max(1);
        1 + (i % self.hot_rows.max(1)) * stride + stride / 2
    }
}

/// The table.
pub fn table_def() -> TableDef {
    TableDef::new(TABLE)
        .column(ColumnDef::new("id", ColumnType::U64))
        .column(ColumnDef::new("k", ColumnType::U32))
        .column(ColumnDef::new("pad", ColumnType::Var(200)))
        .primary_key(&["id"])
}

fn row(id: u64) -> Vec<Value> {
    let fill = b'a' + (id % 26) as u8;
    vec![
        Value::UInt(id),
        Value::UInt(id.wrapping_mul(2_654_435_761) % 1_000_003),
        Value::Bytes(vec![fill; 150]),
    ]
}

/// Creates the table in `db` and loads `rows` rows (ids 1..=rows); returns rows per second.
pub fn prepare(db: &Database, rows: u64) -> Result<f64, WorkloadError> {
    if rows == 0 {
        return Err(WorkloadError::Setting {
            setting: "rows",
            reason: "must be at least 1".into(),
        });
    }
    let started = Instant::now();
    let t = db.create_table(table_def())?;
    t.load((1..=rows).map(row))?;
    Ok(rows as f64 / started.elapsed().as_secs_f64().max(1e-9))
}

/// One reporting interval of a read run.
#[derive(Debug, Clone, Serialize)]
pub struct Interval {
    /// Seconds from the start of the reads to the end of this interval.
    pub t: f64,
    /// Point reads per second in this interval.
    pub reads_per_sec: f64,
    /// Page fixes that missed the pool (reads on demand) in this interval.
    pub misses: u64,
    /// Pages read from disk in this interval: on demand, by read-ahead and by the dump load.
    pub pages_read: u64,
}

/// Runs the point reads on an open database for `time`, reporting every `cfg.interval`.
pub fn read_for(
    db: &Database,
    cfg: &WarmupConfig,
    time: Duration,
    salt: u64,
) -> Result<Vec<Interval>, WorkloadError> {
    cfg.validate()?;
    let t = db.table(TABLE)?;
    let pool = db.buffer_pool()?;
    let counters: Vec<AtomicU64> = (0..cfg.threads).map(|_| AtomicU64::new(0)).collect();
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let workers: Vec<_> = counters
            .iter()
            .enumerate()
            .map(|(w, done)| {
                let (t, stop) = (&t, &stop);
                s.spawn(move || -> Result<(), WorkloadError> {
                    let mut rng = SmallRng::seed_from_u64(
                        cfg.seed ^ salt.rotate_left(32) ^ (w as u64).wrapping_mul(0x9E37_79B9),
                    );
                    let mut key = vec![Value::UInt(0)];
                    while !stop.load(Ordering::Relaxed) {
                        let id = if rng.random_range(0..100u32) < cfg.hot_pct {
                            cfg.hot_id(rng.random_range(0..cfg.hot_rows))
                        } else {
                            rng.random_range(1..=cfg.rows)
                        };
                        key[0] = Value::UInt(id);
                        if t.get(&key)?.is_none() {
                            return Err(WorkloadError::Schema {
                                table: TABLE.into(),
                                reason: format!("row {id} is missing"),
                            });
                        }
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(())
                })
            })
            .collect();
        let total = || {
            counters
                .iter()
                .map(|c| c.load(Ordering::Relaxed))
                .sum::<u64>()
        };
        let started = Instant::now();
        let mut intervals = Vec::new();
        let (mut last_ops, mut last_stats, mut last_t) = (0, pool.stats(), 0.0);
        let mut next = cfg.interval;
        while next <= time {
            let now = started.elapsed();
            if let Some(wait) = next.checked_sub(now) {
                std::thread::sleep(wait);
            }
            // A worker that failed stops counting; stop sampling and report its error.
            if workers.iter().any(|w| w.is_finished()) {
                break;
            }
            let (ops, stats, now) = (total(), pool.stats(), started.elapsed().as_secs_f64());
            intervals.push(Interval {
                t: now,
                reads_per_sec: (ops - last_ops) as f64 / (now - last_t).max(1e-9),
                misses: stats.misses.saturating_sub(last_stats.misses),
                pages_read: (stats.reads + stats.read_ahead)
                    .saturating_sub(last_stats.reads + last_stats.read_ahead),
            });
            (last_ops, last_stats, last_t) = (ops, stats, now);
            next += cfg.interval;
        }
        stop.store(true, Ordering::Relaxed);
        for w in workers {
            w.join().unwrap_or(Err(WorkloadError::WorkerPanicked))?;
        }
        Ok(intervals)
    })
}

/// The steady state of a run: the mean throughput of the second half of its intervals.
pub fn steady_state(intervals: &[Interval]) -> f64 {
    let tail = &intervals[intervals.len() / 2..];
    if tail.is_empty() {
        return 0.0;
    }
    tail.iter().map(|i| i.reads_per_sec).sum::<f64>() / tail.len() as f64
}

/// The end of the first interval at or above `share` of `steady`, in seconds from the start.
pub fn time_to(intervals: &[Interval], steady: f64, share: f64) -> Option<f64> {
    intervals
        .iter()
        .find(|i| i.reads_per_sec >= share * steady)
        .map(|i| i.t)
}

/// One restart, with or without the dump load.
#[derive(Debug, Clone, Serialize)]
pub struct Restart {
    /// Whether `ib_buffer_pool` was loaded at open.
    pub load: bool,
    /// Seconds `Database::open` took (the load runs in the background and is not included).
    pub open_seconds: f64,
    /// Pages the dump load read (0 without it). The load takes only free frames, so pages
    /// the queries read first are skipped: on a busy machine the readers can fill the pool
    /// before the load's threads run, and this is 0 even with the dump.
    pub pages_loaded: u64,
    /// Distinct pages the dump listed (0 without the load).
    pub pages_listed: u64,
    /// Listed pages the load skipped because a query had already read them.
    pub pages_resident: u64,
    /// Throughput per interval from the start of the reads.
    pub intervals: Vec<Interval>,
    /// Seconds from the start of the reads to the end of the first interval at or above 90%
    /// of the steady state; `None` if no interval got there.
    pub time_to_90: Option<f64>,
    /// Mean throughput over the whole measured time.
    pub mean_reads_per_sec: f64,
}

/// What [`run`] measured.
#[derive(Debug, Clone, Serialize)]
pub struct WarmupResult {
    /// Rows in the table.
    pub rows: u64,
    /// Rows in the hot set.
    pub hot_rows: u64,
    /// Pages in the data file (`ibdata1`) after loading: the table and the dictionary.
    pub data_pages: u64,
    /// Frames in the buffer pool.
    pub pool_frames: u64,
    /// Pages listed in `ib_buffer_pool` after the first run.
    pub dumped_pages: u64,
    /// Rows per second of the initial load.
    pub load_rows_per_sec: f64,
    /// The first run's intervals (a cold start with no dump, then the steady state).
    pub first_run: Vec<Interval>,
    /// Mean reads per second over the second half of the first run.
    pub steady_reads_per_sec: f64,
    /// The restart without the dump load.
    pub cold: Restart,
    /// The restart with it.
    pub warm: Restart,
}

fn restart(
    dir: &Path,
    config: &Config,
    cfg: &WarmupConfig,
    load: bool,
    steady: f64,
) -> Result<Restart, WorkloadError> {
    let config = Config {
        buffer_pool_dump_at_shutdown: load,
        ..config.clone()
    };
    let started = Instant::now();
    let db = Database::open(dir, config)?;
    let open_seconds = started.elapsed().as_secs_f64();
    let intervals = read_for(&db, cfg, cfg.measure_time, u64::from(load) + 2)?;
    let pool = db.buffer_pool()?;
    let pages_loaded = pool.wait_for_load().map_err(minnow::Error::from)?;
    // `None` without the load: this pool (opened just now) ran none.
    let report = pool.load_report();
    db.close()?;
    let secs = intervals.last().map_or(0.0, |i| i.t);
    let mean = if secs > 0.0 {
        intervals.iter().map(|i| i.reads_per_sec).sum::<f64>() / intervals.len() as f64
    } else {
        0.0
    };
    Ok(Restart {
        load,
        open_seconds,
        pages_loaded: pages_loaded as u64,
        pages_listed: report.map_or(0, |r| r.listed as u64),
        pages_resident: report.map_or(0, |r| r.resident as u64),
        time_to_90: time_to(&intervals, steady, TARGET_SHARE),
        intervals,
        mean_reads_per_sec: mean,
    })
}

/// Creates the database in `dir` (which must not hold one) with `config`, loads the table,
/// reads it to a steady state, and restarts it without and with the buffer pool dump load.
/// `config.buffer_pool_dump_at_shutdown` is set per step (see the module docs).
pub fn run(dir: &Path, config: Config, cfg: &WarmupConfig) -> Result<WarmupResult, WorkloadError> {
    cfg.validate()?;
    let no_dump = Config {
        buffer_pool_dump_at_shutdown: false,
        ..config.clone()
    };
    let db = Database::create(dir, no_dump)?;
    let load_rate = prepare(&db, cfg.rows)?;
    db.close()?;
    let page = config.page_size.bytes() as u64;
    let data_pages = std::fs::metadata(dir.join("ibdata1")).map_or(0, |m| m.len() / page);
    let _ = std::fs::remove_file(dir.join(minnow_buf::dump::DUMP_FILE));

    let with_dump = Config {
        buffer_pool_dump_at_shutdown: true,
        ..config.clone()
    };
    let db = Database::open(dir, with_dump)?;
    let pool_frames = db.buffer_pool()?.stats().frames;
    let first_run = read_for(&db, cfg, cfg.warm_time, 1)?;
    let steady = steady_state(&first_run);
    db.close()?;
    let dump = std::fs::read_to_string(dir.join(minnow_buf::dump::DUMP_FILE)).unwrap_or_default();
    let dumped_pages = dump.lines().count().saturating_sub(2) as u64;

    let cold = restart(dir, &config, cfg, false, steady)?;
    let warm = restart(dir, &config, cfg, true, steady)?;
    Ok(WarmupResult {
        rows: cfg.rows,
        hot_rows: cfg.hot_rows,
        data_pages,
        pool_frames,
        dumped_pages,
        load_rows_per_sec: load_rate,
        first_run,
        steady_reads_per_sec: steady,
        cold,
        warm,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> WarmupConfig {
        WarmupConfig {
            rows: 30_000,
            hot_rows: 100,
            hot_pct: 95,
            threads: 2,
            interval: Duration::from_millis(20),
            warm_time: Duration::from_millis(200),
            measure_time: Duration::from_millis(100),
            seed: 7,
        }
    }

    #[test]
    fn restarts_with_and_without_the_dump() {
        let dir = tempfile::tempdir().unwrap();
        let config = Config {
            buffer_pool_size: 2 << 20,
            ..Config::default()
        };
        let cfg = small();
        let r = run(dir.path(), config, &cfg).unwrap();
        assert!(r.data_pages > r.pool_frames, "{r:?}");
        assert!(r.dumped_pages > 0 && r.dumped_pages <= r.pool_frames);
        assert_eq!(r.first_run.len(), 10);
        assert!(r.steady_reads_per_sec > 0.0);
        assert!(!r.cold.load && r.warm.load);
        assert_eq!((r.cold.pages_loaded, r.cold.pages_listed), (0, 0));
        // The warm restart's load ran over the whole dump; how many pages it read rather
        // than found resident depends on who the scheduler ran first, so only the sum is
        // fixed.
        assert_eq!(r.warm.pages_listed, r.dumped_pages, "{:?}", r.warm);
        assert!(r.warm.pages_loaded + r.warm.pages_resident <= r.warm.pages_listed);
        // With no queries racing it, a load reads the dump's pages into the free frames.
        let db = Database::open(
            dir.path(),
            Config {
                buffer_pool_size: 2 << 20,
                ..Config::default()
            },
        )
        .unwrap();
        let pool = db.buffer_pool().unwrap();
        assert!(
            pool.wait_for_load().unwrap() > 0,
            "{:?}",
            pool.load_report()
        );
        db.close().unwrap();
        for x in [&r.cold, &r.warm] {
            assert_eq!(x.intervals.len(), 5);
            assert!(x.intervals.iter().all(|i| i.reads_per_sec > 0.0));
        }
        // The cold restart had to read its hot set back on demand.
        assert!(r.cold.intervals.iter().map(|i| i.misses).sum::<u64>() > 0);
    }

    #[test]
    fn helpers_and_bad_settings() {
        let cfg = small();
        assert_eq!(cfg.hot_id(0), 151);
        assert!(cfg.hot_id(cfg.hot_rows - 1) <= cfg.rows);
        let iv = |t, r| Interval {
            t,
            reads_per_sec: r,
            misses: 0,
            pages_read: 0,
        };
        let intervals = [iv(0.1, 10.0), iv(0.2, 50.0), iv(0.3, 95.0), iv(0.4, 100.0)];
        assert_eq!(steady_state(&intervals), 97.5);
        assert_eq!(time_to(&intervals, 100.0, 0.9), Some(0.3));
        assert_eq!(time_to(&intervals, 1000.0, 0.9), None);
        assert_eq!(steady_state(&[]), 0.0);
        let dir = tempfile::tempdir().unwrap();
        for bad in [
            WarmupConfig {
                hot_rows: 0,
                ..small()
            },
            WarmupConfig {
                hot_pct: 101,
                ..small()
            },
            WarmupConfig {
                threads: 0,
                ..small()
            },
            WarmupConfig {
                warm_time: Duration::from_millis(20),
                ..small()
            },
        ] {
            assert!(matches!(
                run(dir.path(), Config::default(), &bad),
                Err(WorkloadError::Setting { .. })
            ));
        }
    }
}
