//! Running the benchmark: one measured [`Point`] (a query at a thread count on one
//! organisation, after a warm-up, as the article's best-of-three 60 s runs), and a [`sweep`]
//! over queries and thread counts that reports each point as it finishes.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand::rngs::SmallRng;
use serde::Serialize;

use super::{NormalTable, Organisation, Query};
use crate::WorkloadError;

/// One measured point: a query at a thread count on one organisation.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// The organisation.
    pub organisation: Organisation,
    /// The query (its article name).
    pub query: &'static str,
    /// Threads.
    pub threads: usize,
    /// Queries completed in the measured time.
    pub queries: u64,
    /// Rows the queries produced.
    pub rows: u64,
    /// Measured seconds.
    pub seconds: f64,
    /// Queries per second.
    pub qps: f64,
}

impl Point {
    /// The header of the result file the sweeps write (`minnow bench reads2007 --csv`,
    /// `benches/e2_reads.rs`): the columns of [`Point::csv_record`].
    pub const CSV_HEADER: &'static str = "organisation,query,threads,queries,rows,seconds,qps";

    /// This point as a CSV record: seconds to the millisecond, queries per second to a tenth.
    pub fn csv_record(&self) -> [String; 7] {
        [
            self.organisation.name().to_owned(),
            self.query.to_owned(),
            self.threads.to_string(),
            self.queries.to_string(),
            self.rows.to_string(),
            format!("{:.3}", self.seconds),
            format!("{:.1}", self.qps),
        ]
    }
}

/// How long each point runs, and which points.
#[derive(Debug, Clone, Serialize)]
pub struct SweepConfig {
    /// Rows in the table (the queries' parameter ranges depend on it).
    pub rows: u64,
    /// Queries to run (default all 13).
    pub queries: Vec<Query>,
    /// Thread counts (default 1, 4, 16; the article's are [`ARTICLE_THREADS`](super::ARTICLE_THREADS)).
    pub threads: Vec<usize>,
    /// Warm-up before each point's measurement (the article: 180 s).
    pub warmup: Duration,
    /// Measured time per point (the article: 60 s, best of three).
    pub duration: Duration,
    /// Seed of the workers' parameter streams.
    pub seed: u64,
}

impl Default for SweepConfig {
    fn default() -> SweepConfig {
        SweepConfig {
            rows: 100_000,
            queries: Query::ALL.to_vec(),
            threads: vec![1, 4, 16],
            warmup: Duration::from_millis(200),
            duration: Duration::from_secs(1),
            seed: 0,
        }
    }
}

/// Runs query `q` on `threads` threads: `warmup`, then `duration` measured. Stops early
/// (reporting what it measured) when `stop` is set.
pub fn run_point(
    table: &NormalTable<'_>,
    org: Organisation,
    q: Query,
    threads: usize,
    cfg: &SweepConfig,
    stop: &AtomicBool,
) -> Result<Point, WorkloadError> {
    if threads == 0 || threads > 1024 {
        return Err(WorkloadError::Setting {
            setting: "threads",
            reason: "must be in 1..=1024".into(),
        });
    }
    let measuring = AtomicBool::new(false);
    let finished = AtomicBool::new(false);
    let queries = AtomicU64::new(0);
    let rows_out = AtomicU64::new(0);
    let mut seconds = 0.0;
    let results: Vec<Result<(), WorkloadError>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|w| {
                let (measuring, finished, queries, rows_out) =
                    (&measuring, &finished, &queries, &rows_out);
                s.spawn(move || -> Result<(), WorkloadError> {
                    let mut rng =
                        SmallRng::seed_from_u64(cfg.seed ^ ((w as u64 + 1) * 0x2545_F491));
                    while !finished.load(Ordering::Relaxed) && !stop.load(Ordering::Relaxed) {
                        let Some(n) = table.run_query_until(q, cfg.rows, &mut rng, finished)?
                        else {
                            break;
                        };
                        if measuring.load(Ordering::Relaxed) {
                            queries.fetch_add(1, Ordering::Relaxed);
                            rows_out.fetch_add(n, Ordering::Relaxed);
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        let sleep = |d: Duration| {
            let until = Instant::now() + d;
            while Instant::now() < until && !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(5).min(d));
            }
        };
        sleep(cfg.warmup);
        measuring.store(true, Ordering::Relaxed);
        let started = Instant::now();
        sleep(cfg.duration);
        measuring.store(false, Ordering::Relaxed);
        seconds = started.elapsed().as_secs_f64();
        finished.store(true, Ordering::Relaxed);
        workers
            .into_iter()
            .map(|h| h.join().unwrap_or(Err(WorkloadError::WorkerPanicked)))
            .collect()
    });
    results.into_iter().collect::<Result<Vec<()>, _>>()?;
    let queries = queries.load(Ordering::Relaxed);
    Ok(Point {
        organisation: org,
        query: q.name(),
        threads,
        queries,
        rows: rows_out.load(Ordering::Relaxed),
        seconds,
        qps: queries as f64 / seconds.max(1e-9),
    })
}

/// Every query of `cfg` at every thread count of `cfg` on one table, calling `each` after
/// each point.
pub fn sweep(
    table: &NormalTable<'_>,
    org: Organisation,
    cfg: &SweepConfig,
    stop: &AtomicBool,
    each: &mut dyn FnMut(&Point),
) -> Result<Vec<Point>, WorkloadError> {
    let mut out = Vec::new();
    for &q in &cfg.queries {
        for &t in &cfg.threads {
            if stop.load(Ordering::Relaxed) {
                return Ok(out);
            }
            let p = run_point(table, org, q, t, cfg, stop)?;
            each(&p);
            out.push(p);
        }
    }
    Ok(out)
}
