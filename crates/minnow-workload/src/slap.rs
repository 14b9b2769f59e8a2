//! mysqlslap-style read queries over a cached table with a small working set: the workload
//! of experiment E4 (seed article 003, "Impact from adaptive hash index and
//! innodb_thread_concurrency in MySQL 5.7.5").
//!
//! The table is `slap(id BIGINT UNSIGNED PRIMARY KEY, k BIGINT UNSIGNED, c VARCHAR(120),
//! pad VARCHAR(60), KEY k_1 (k))` with `k = id`, so the secondary index orders rows as the
//! primary key does. Three queries, each in three shapes:
//!
//! | query | what | point | range |
//! |---|---|---|---|
//! | q1 | by primary key | `WHERE id = ?` | `WHERE id >= ? LIMIT n` |
//! | q4 | non-covering secondary: every row fetched by primary key | `WHERE k = ?` | `WHERE k >= ? LIMIT n` |
//! | q5 | covering secondary (`SELECT id, k`) | `WHERE k = ?` | `WHERE k >= ? LIMIT n` |
//!
//! The start key of each query is drawn uniformly from the first `working_set` keys, so the
//! pages touched stay cached and the same few keys are searched again and again: the case an
//! adaptive hash index is for. q4 with `LIMIT 1000` does 1001 index searches per query (one
//! for the range start, one primary-key lookup per row).

use std::time::{Duration, Instant};

use minnow::{ColumnDef, ColumnType, Database, IndexDef, Scan, TableDef, Value};

use crate::WorkloadError;

/// The table's name.
pub const TABLE: &str = "slap";

/// One of the article's queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Query {
    /// By primary key.
    Q1,
    /// Through the secondary index, fetching each row by primary key.
    Q4,
    /// Through the secondary index alone (covering).
    Q5,
}

impl Query {
    /// All three, in the article's order.
    pub const ALL: [Query; 3] = [Query::Q1, Query::Q4, Query::Q5];

    /// `q1`, `q4`, `q5`.
    pub fn name(self) -> &'static str {
        match self {
            Query::Q1 => "q1",
            Query::Q4 => "q4",
            Query::Q5 => "q5",
        }
    }
}

/// A point query or a range of up to `n` rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shape {
    /// One row by equality.
    Point,
    /// `>= start LIMIT n`.
    Range(usize),
}

impl Shape {
    /// The article's three shapes: point, `LIMIT 10`, `LIMIT 1000`.
    pub const ALL: [Shape; 3] = [Shape::Point, Shape::Range(10), Shape::Range(1000)];

    /// `point`, `range10`, `range1000`.
    pub fn name(self) -> String {
        match self {
            Shape::Point => "point".into(),
            Shape::Range(n) => format!("range{n}"),
        }
    }

    /// Rows one query returns.
    pub fn rows(self) -> usize {
        match self {
            Shape::Point => 1,
            Shape::Range(n) => n,
        }
    }
}

/// The table and the key distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlapConfig {
    /// Rows in the table.
    pub rows: u64,
    /// Start keys are drawn from `0..working_set`.
    pub working_set: u64,
}

impl Default for SlapConfig {
    /// 100,000 rows, a working set of 100 start keys.
    fn default() -> SlapConfig {
        SlapConfig {
            rows: 100_000,
            working_set: 100,
        }
    }
}

fn row(id: u64) -> Vec<Value> {
    let c = format!(
        "{id:020}-{:0>99}",
        id.wrapping_mul(0x9E37_79B9_7F4A_7C15) % 1_000_000_007
    );
    vec![
        Value::UInt(id),
        Value::UInt(id),
        Value::Bytes(c.into_bytes()),
        Value::Bytes(vec![b'p'; 59]),
    ]
}

/// Creates and loads the table (bottom-up, in key order).
pub fn prepare(db: &Database, cfg: &SlapConfig) -> Result<(), WorkloadError> {
    if cfg.rows == 0 || cfg.working_set == 0 {
        return Err(WorkloadError::Setting {
            setting: "rows",
            reason: "rows and working_set must be at least 1".into(),
        });
    }
    let t = db.create_table(
        TableDef::new(TABLE)
            .column(ColumnDef::new("id", ColumnType::U64))
            .column(ColumnDef::new("k", ColumnType::U64))
            .column(ColumnDef::new("c", ColumnType::Var(120)))
            .column(ColumnDef::new("pad", ColumnType::Var(60)))
            .primary_key(&["id"])
            .index(IndexDef::new("k_1", &["k"])),
    )?;
    t.load((0..cfg.rows).map(row))?;
    Ok(())
}

/// Runs one query with start key `start`; returns the rows it read.
pub fn query(
    t: &minnow::Table,
    q: Query,
    shape: Shape,
    start: u64,
) -> Result<usize, WorkloadError> {
    let key = vec![Value::UInt(start)];
    if let (Query::Q1, Shape::Point) = (q, shape) {
        return Ok(usize::from(t.get(&key)?.is_some()));
    }
    let scan = match shape {
        Shape::Point => Scan::range(
            std::ops::Bound::Included(key.clone()),
            std::ops::Bound::Included(key),
        ),
        Shape::Range(n) => {
            Scan::range(std::ops::Bound::Included(key), std::ops::Bound::Unbounded).limit(n)
        }
    };
    let rows = match q {
        Query::Q1 => t.scan(scan)?,
        Query::Q4 => t.scan_index("k_1", scan)?,
        Query::Q5 => t.scan_index("k_1", scan.columns(&["id", "k"]))?,
    };
    let mut n = 0;
    for r in rows {
        r?;
        n += 1;
    }
    Ok(n)
}

/// What one run measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlapResult {
    /// Client threads.
    pub threads: usize,
    /// Queries run (all threads).
    pub queries: u64,
    /// Rows read (all threads).
    pub rows: u64,
    /// Wall time of the run.
    pub elapsed: Duration,
}

impl SlapResult {
    /// Queries per second.
    pub fn qps(&self) -> f64 {
        self.queries as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Mean response time in microseconds: wall time × threads ÷ queries (mysqlslap's
    /// per-client time).
    pub fn response_us(&self) -> f64 {
        self.elapsed.as_secs_f64() * 1e6 * self.threads as f64 / (self.queries.max(1) as f64)
    }
}

/// Runs `per_thread` queries on each of `threads` threads, start keys from a per-thread
/// generator seeded with `seed`.
pub fn run(
    db: &Database,
    cfg: &SlapConfig,
    q: Query,
    shape: Shape,
    threads: usize,
    per_thread: u64,
    seed: u64,
) -> Result<SlapResult, WorkloadError> {
    if threads == 0 {
        return Err(WorkloadError::Setting {
            setting: "threads",
            reason: "must be at least 1".into(),
        });
    }
    let start = Instant::now();
    let results: Vec<Result<u64, WorkloadError>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|i| {
                s.spawn(move || -> Result<u64, WorkloadError> {
                    let t = db.table(TABLE)?;
                    let mut x = seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                    let mut rows = 0u64;
                    for _ in 0..per_thread {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        rows += query(&t, q, shape, x % cfg.working_set)? as u64;
                    }
                    Ok(rows)
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap_or(Err(WorkloadError::WorkerPanicked)))
            .collect()
    });
    let elapsed = start.elapsed();
    let mut rows = 0;
    for r in results {
        rows += r?;
    }
    Ok(SlapResult {
        threads,
        queries: per_thread * threads as u64,
        rows,
        elapsed,
    })
}

/// The article's three configurations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Setup {
    /// Adaptive hash index on, no concurrency limit.
    Base,
    /// Adaptive hash index off.
    NoAhi,
    /// Adaptive hash index on, `thread_concurrency = 32`, `concurrency_tickets = 500`.
    Itc,
}

impl Setup {
    /// All three, in the article's order.
    pub const ALL: [Setup; 3] = [Setup::Base, Setup::NoAhi, Setup::Itc];

    /// `base`, `noahi`, `itc`.
    pub fn name(self) -> &'static str {
        match self {
            Setup::Base => "base",
            Setup::NoAhi => "noahi",
            Setup::Itc => "itc",
        }
    }

    /// Switches `db` to this configuration at runtime.
    pub fn apply(self, db: &Database) -> Result<(), WorkloadError> {
        db.set_adaptive_hash_index(self != Setup::NoAhi)?;
        match self {
            Setup::Itc => db.set_thread_concurrency(32, 500)?,
            _ => db.set_thread_concurrency(0, 5000)?,
        }
        Ok(())
    }
}

/// One cell of the matrix: the same query, shape and threads under `setup`, after a warm-up
/// of `warmup` queries per thread (which, with the hash on, lets it learn).
#[allow(clippy::too_many_arguments)]
pub fn measure(
    db: &Database,
    cfg: &SlapConfig,
    setup: Setup,
    q: Query,
    shape: Shape,
    threads: usize,
    warmup: u64,
    per_thread: u64,
) -> Result<SlapResult, WorkloadError> {
    setup.apply(db)?;
    run(db, cfg, q, shape, threads, warmup, 7)?;
    run(db, cfg, q, shape, threads, per_thread, 11)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_query_and_shape_returns_its_rows() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path(), minnow::Config::default()).unwrap();
        let cfg = SlapConfig {
            rows: 3000,
            working_set: 10,
        };
        prepare(&db, &cfg).unwrap();
        let t = db.table(TABLE).unwrap();
        for q in Query::ALL {
            for shape in Shape::ALL {
                assert_eq!(
                    query(&t, q, shape, 5).unwrap(),
                    shape.rows(),
                    "{q:?} {shape:?}"
                );
            }
        }
        for setup in Setup::ALL {
            let r = measure(&db, &cfg, setup, Query::Q4, Shape::Range(10), 2, 50, 50).unwrap();
            assert_eq!((r.queries, r.rows), (100, 1000));
            assert!(r.qps() > 0.0 && r.response_us() > 0.0);
        }
        assert!(db.ahi_stats().unwrap().hits > 0);
        assert!(db.admission_stats().unwrap().entries > 0);
    }
}
