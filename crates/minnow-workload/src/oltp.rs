//! sysbench's OLTP workloads on `sbtest` tables.
//!
//! sysbench 1.0's `oltp_*.lua` scripts are the load most InnoDB articles measure with. This
//! module runs the same statements through minnow's embedded API, with the same knobs and
//! defaults ([`OltpConfig`]), and reports what sysbench reports: per interval tps, qps, reads
//! and writes per second and the 95th percentile latency ([`IntervalReport`]); at the end the
//! totals and latency percentiles from an HDR histogram ([`Summary`]).
//!
//! ## The tables
//!
//! `sbtest1` .. `sbtestN`, each with sysbench's columns: `id` (the primary key, 1..=table_size),
//! `k` (an integer with the secondary index `k_1`), `c` CHAR(120) and `pad` CHAR(60). `c` is
//! ten groups of 11 digits joined by `-` (119 characters), `pad` five such groups (59), both
//! padded with a space to their CHAR width, as MySQL stores CHAR. `k` is a random value in
//! 1..=table_size. [`prepare`] creates the tables and bulk-loads them with
//! [`minnow::Table::load`] (rows arrive in key order, so the trees are built bottom-up); the
//! data is a pure function of [`OltpConfig::seed`], the table number and the row id
//! ([`row`]), so two runs prepare identical tables.
//!
//! ## One event ("transaction")
//!
//! Each event picks, per statement, a table uniformly and ids from the configured
//! distribution ([`RandType`]), and runs, in sysbench's order:
//!
//! | statement | sysbench's SQL | minnow |
//! |---|---|---|
//! | point select ×`point_selects` | `SELECT c FROM sbtest WHERE id=?` | [`minnow::Table::get`] |
//! | simple range ×`simple_ranges` | `SELECT c ... WHERE id BETWEEN ? AND ?` | a primary key scan of `range_size` ids, column `c` |
//! | sum range ×`sum_ranges` | `SELECT SUM(k) ...` | the scan of `k`, summed here |
//! | order range ×`order_ranges` | `SELECT c ... ORDER BY c` | the scan of `c`, sorted here |
//! | distinct range ×`distinct_ranges` | `SELECT DISTINCT c ... ORDER BY c` | sorted and deduplicated here |
//! | index update ×`index_updates` | `UPDATE ... SET k=k+1 WHERE id=?` | `get`, then [`minnow::Table::update`] with `k+1` |
//! | non-index update ×`non_index_updates` | `UPDATE ... SET c=? WHERE id=?` | `get`, then `update` with a new `c` |
//! | delete-insert ×`delete_inserts` | `DELETE ... WHERE id=?` then `INSERT (id, k, c, pad)` | [`minnow::Table::delete`], [`minnow::Table::insert`] |
//!
//! minnow has no SQL, so the aggregates of the range statements are computed by this module
//! over the rows the scan returns, as a client would. Each range statement counts as one
//! read, each update, delete or insert as one write, as sysbench counts queries. An update of
//! a row that is not there changes nothing and still counts (MySQL reports 0 rows affected).
//!
//! ## Transactions (`skip_trx`)
//!
//! By default (`skip_trx = false`, as sysbench's `--skip-trx=off`) each event is one
//! transaction: BEGIN ([`minnow::Database::begin`], REPEATABLE READ, InnoDB's default), the
//! statements, COMMIT. Its reads (point selects, ranges) go through the transaction's snapshot
//! ([`minnow::Transaction::get`], [`minnow::Transaction::scan`]); an update reads the row with
//! a locking current read ([`minnow::Transaction::get_for_update`], what InnoDB's `UPDATE`
//! does), so concurrent `k=k+1` updates are never lost; delete-insert deletes and re-inserts
//! the id inside the transaction, so other transactions never see it missing. BEGIN, COMMIT
//! and ROLLBACK count as sysbench's "other" queries ([`Summary::other`]).
//!
//! Errors sysbench ignores by default (`--mysql-ignore-errors`: 1213 deadlock, 1205 lock wait
//! timeout) restart the event as sysbench does: a deadlock has already rolled the transaction
//! back ([`minnow::Error::Deadlock`]); after a lock wait timeout (only the statement was rolled
//! back) the event issues ROLLBACK. Then the event begins again, and its latency covers every
//! attempt. Each such error is counted ([`Summary::ignored`], per kind; per interval in
//! [`IntervalReport::errors_per_sec`]). So, per run: `other = 2 x events + deadlocks + 2 x
//! lock_wait_timeouts` (plus one ROLLBACK per duplicate key, which cannot happen here: the
//! deleted id stays locked until its re-insert commits). The statements of the failed
//! attempts count in `reads` and `writes`, as sysbench counts every query it ran. sysbench's
//! "reconnects" counter has no counterpart: minnow is embedded, there is no connection to
//! lose.
//!
//! With `skip_trx = true` (`--skip-trx=on`) no BEGIN or COMMIT is issued: each statement is
//! its own (autocommit) transaction, a sysbench transaction is the *sequence* of statements,
//! not an atomic unit, and an update's read and write are two statements (a concurrent
//! update of the same row between them can be lost, as it can in sysbench with
//! `--skip-trx=on`). An insert that hits a duplicate key (another thread re-inserted the id
//! first) is counted in [`Summary::ignored_errors`] and the event goes on, and `other` is 0.
//! E1's recorded numbers were taken in this mode.
//!
//! ## Stopping
//!
//! A run ends when its time is up, when `events` events have started, or when the stop flag
//! passed to [`run`] is set (a Ctrl-C handler sets it); workers check it between events, so
//! every event in the summary ran to its end.

use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use minnow::{
    ColumnDef, ColumnType, Database, Error, IndexDef, Scan, Table, TableDef, Transaction, Value,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::WorkloadError;

/// Width of the `c` column (CHAR(120)).
pub const C_LEN: usize = 120;
/// Width of the `pad` column (CHAR(60)).
pub const PAD_LEN: usize = 60;
/// The name of the secondary index on `k` (sysbench's `k_1`).
pub const K_INDEX: &str = "k_1";

/// Which sysbench script to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// `oltp_read_only`: point selects and (with `range_selects`) the four range kinds.
    ReadOnly,
    /// `oltp_write_only`: index updates, non-index updates and delete-inserts.
    WriteOnly,
    /// `oltp_read_write`: the reads of read-only, then the writes of write-only.
    ReadWrite,
    /// `oltp_update_index`: `index_updates` index updates per event.
    UpdateIndex,
    /// `oltp_update_non_index`: `non_index_updates` non-index updates per event.
    UpdateNonIndex,
    /// `oltp_point_select`: one point select per event (sysbench forces `point_selects=1`).
    PointSelect,
}

impl Mode {
    /// Every mode, in the order the docs list them.
    pub const ALL: [Mode; 6] = [
        Mode::ReadOnly,
        Mode::WriteOnly,
        Mode::ReadWrite,
        Mode::UpdateIndex,
        Mode::UpdateNonIndex,
        Mode::PointSelect,
    ];

    /// The name used on command lines (`read_only`, `update_index`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Mode::ReadOnly => "read_only",
            Mode::WriteOnly => "write_only",
            Mode::ReadWrite => "read_write",
            Mode::UpdateIndex => "update_index",
            Mode::UpdateNonIndex => "update_non_index",
            Mode::PointSelect => "point_select",
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Mode {
    type Err = WorkloadError;

    /// Parses a mode name, with or without sysbench's `oltp_` prefix.
    fn from_str(s: &str) -> Result<Mode, WorkloadError> {
        let s = s.trim().to_ascii_lowercase().replace('-', "_");
        let s = s.strip_prefix("oltp_").unwrap_or(&s);
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| WorkloadError::Setting {
                setting: "mode",
                reason: format!(
                    "unknown mode `{s}` (expected one of: {})",
                    Mode::ALL.map(Mode::name).join(", ")
                ),
            })
    }
}

/// sysbench's `--rand-type`: how ids are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RandType {
    /// Every id equally likely.
    Uniform,
    /// sysbench 1.0's default: `rand_spec_pct` percent of the ids (the lowest) get
    /// `rand_spec_res` percent of the draws (1% and 75% by default), the rest uniform over the
    /// others.
    Special,
}

impl std::str::FromStr for RandType {
    type Err = WorkloadError;

    fn from_str(s: &str) -> Result<RandType, WorkloadError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "uniform" => Ok(RandType::Uniform),
            "special" => Ok(RandType::Special),
            other => Err(WorkloadError::Setting {
                setting: "rand_type",
                reason: format!(
                    "`{other}` is not uniform or special (gaussian, pareto and zipfian are not implemented)"
                ),
            }),
        }
    }
}

/// The knobs of sysbench's OLTP scripts; [`Default`] gives sysbench 1.0's defaults.
#[derive(Debug, Clone, Serialize)]
pub struct OltpConfig {
    /// Which script.
    pub mode: Mode,
    /// `--tables`: number of `sbtest` tables (default 1).
    pub tables: usize,
    /// `--table-size`: rows per table (default 10,000).
    pub table_size: u64,
    /// `--threads` (default 1).
    pub threads: usize,
    /// `--time`: run for this long; `None` for no time limit (default 10 s). At least one of
    /// `time` and `events` must be set.
    pub time: Option<Duration>,
    /// `--events`: stop after this many events in all (default `None`: no limit).
    pub events: Option<u64>,
    /// `--point-selects` (default 10).
    pub point_selects: u32,
    /// `--simple-ranges` (default 1).
    pub simple_ranges: u32,
    /// `--sum-ranges` (default 1).
    pub sum_ranges: u32,
    /// `--order-ranges` (default 1).
    pub order_ranges: u32,
    /// `--distinct-ranges` (default 1).
    pub distinct_ranges: u32,
    /// `--range-size`: ids per range statement (default 100).
    pub range_size: u64,
    /// `--range-selects`: run the range statements in read modes at all (default true).
    pub range_selects: bool,
    /// `--index-updates` (default 1).
    pub index_updates: u32,
    /// `--non-index-updates` (default 1).
    pub non_index_updates: u32,
    /// `--delete-inserts` (default 1).
    pub delete_inserts: u32,
    /// `--skip-trx`: run the statements without BEGIN/COMMIT, each its own transaction
    /// (default false: one transaction per event, see the module docs).
    pub skip_trx: bool,
    /// `--rand-type` (default special, as sysbench 1.0).
    pub rand_type: RandType,
    /// `--rand-spec-pct` (default 1).
    pub rand_spec_pct: u32,
    /// `--rand-spec-res` (default 75).
    pub rand_spec_res: u32,
    /// Seed of the data and of the workers' random streams (sysbench's `--rand-seed`,
    /// default 0).
    pub seed: u64,
    /// `--report-interval`: how often the report callback runs; `None` for never (default).
    pub report_interval: Option<Duration>,
}

impl Default for OltpConfig {
    fn default() -> OltpConfig {
        OltpConfig {
            mode: Mode::ReadWrite,
            tables: 1,
            table_size: 10_000,
            threads: 1,
            time: Some(Duration::from_secs(10)),
            events: None,
            point_selects: 10,
            simple_ranges: 1,
            sum_ranges: 1,
            order_ranges: 1,
            distinct_ranges: 1,
            range_size: 100,
            range_selects: true,
            index_updates: 1,
            non_index_updates: 1,
            delete_inserts: 1,
            skip_trx: false,
            rand_type: RandType::Special,
            rand_spec_pct: 1,
            rand_spec_res: 75,
            seed: 0,
            report_interval: None,
        }
    }
}

impl OltpConfig {
    /// Checks the settings; the error names the first bad one.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        let bad = |setting: &'static str, reason: &str| {
            Err(WorkloadError::Setting {
                setting,
                reason: reason.to_owned(),
            })
        };
        if self.tables == 0 {
            return bad("tables", "must be at least 1");
        }
        if self.table_size == 0 || self.table_size > u64::from(u32::MAX) {
            return bad(
                "table_size",
                "must be in 1..=4294967295 (ids are INT UNSIGNED)",
            );
        }
        if self.threads == 0 {
            return bad("threads", "must be at least 1");
        }
        if self.time.is_none() && self.events.is_none() {
            return bad("time", "a run needs a time limit, an event limit or both");
        }
        if self.range_size == 0 {
            return bad("range_size", "must be at least 1");
        }
        if self.rand_spec_pct == 0 || self.rand_spec_pct > 100 {
            return bad("rand_spec_pct", "must be in 1..=100");
        }
        if self.rand_spec_res > 100 {
            return bad("rand_spec_res", "must be in 0..=100");
        }
        Ok(())
    }

    /// How many statements of each kind one event runs in this mode.
    pub fn statements(&self) -> Statements {
        let ranges = |n: u32| if self.range_selects { n } else { 0 };
        let reads = Statements {
            point_selects: self.point_selects,
            simple_ranges: ranges(self.simple_ranges),
            sum_ranges: ranges(self.sum_ranges),
            order_ranges: ranges(self.order_ranges),
            distinct_ranges: ranges(self.distinct_ranges),
            ..Statements::default()
        };
        let writes = Statements {
            index_updates: self.index_updates,
            non_index_updates: self.non_index_updates,
            delete_inserts: self.delete_inserts,
            ..Statements::default()
        };
        match self.mode {
            Mode::ReadOnly => reads,
            Mode::WriteOnly => writes,
            Mode::ReadWrite => Statements {
                index_updates: writes.index_updates,
                non_index_updates: writes.non_index_updates,
                delete_inserts: writes.delete_inserts,
                ..reads
            },
            Mode::UpdateIndex => Statements {
                index_updates: self.index_updates,
                ..Statements::default()
            },
            Mode::UpdateNonIndex => Statements {
                non_index_updates: self.non_index_updates,
                ..Statements::default()
            },
            Mode::PointSelect => Statements {
                point_selects: 1,
                ..Statements::default()
            },
        }
    }
}

/// The statements of one event, by kind (see the module docs' table).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Statements {
    /// Point selects.
    pub point_selects: u32,
    /// Simple ranges.
    pub simple_ranges: u32,
    /// SUM ranges.
    pub sum_ranges: u32,
    /// ORDER BY ranges.
    pub order_ranges: u32,
    /// DISTINCT ranges.
    pub distinct_ranges: u32,
    /// Index updates.
    pub index_updates: u32,
    /// Non-index updates.
    pub non_index_updates: u32,
    /// Delete-inserts (each one delete and one insert).
    pub delete_inserts: u32,
}

impl Statements {
    /// Read queries per event.
    pub fn reads(&self) -> u64 {
        u64::from(self.point_selects)
            + u64::from(self.simple_ranges)
            + u64::from(self.sum_ranges)
            + u64::from(self.order_ranges)
            + u64::from(self.distinct_ranges)
    }

    /// Write queries per event (a delete-insert is two).
    pub fn writes(&self) -> u64 {
        u64::from(self.index_updates)
            + u64::from(self.non_index_updates)
            + 2 * u64::from(self.delete_inserts)
    }
}

/// The name of table `n` (1-based): `sbtest1`, `sbtest2`, ...
pub fn table_name(n: usize) -> String {
    format!("sbtest{n}")
}

/// The definition of an `sbtest` table.
pub fn table_def(n: usize) -> TableDef {
    TableDef::new(table_name(n))
        .column(ColumnDef::new("id", ColumnType::U32))
        .column(ColumnDef::new("k", ColumnType::U32))
        .column(ColumnDef::new("c", ColumnType::Fixed(C_LEN as u16)))
        .column(ColumnDef::new("pad", ColumnType::Fixed(PAD_LEN as u16)))
        .primary_key(&["id"])
        .index(IndexDef::new(K_INDEX, &["k"]))
}

/// sysbench's `c`/`pad` text: `groups` groups of 11 random digits joined by `-`, padded with
/// spaces to `width` (CHAR semantics).
pub fn digit_groups(rng: &mut impl Rng, groups: usize, width: usize) -> Vec<u8> {
    let mut s = Vec::with_capacity(width);
    for g in 0..groups {
        if g > 0 {
            s.push(b'-');
        }
        for _ in 0..11 {
            s.push(b'0' + rng.random_range(0..10u8));
        }
    }
    s.resize(width, b' ');
    s
}

fn c_value(rng: &mut impl Rng) -> Vec<u8> {
    digit_groups(rng, 10, C_LEN)
}

fn pad_value(rng: &mut impl Rng) -> Vec<u8> {
    digit_groups(rng, 5, PAD_LEN)
}

/// The row `id` of table `table` as [`prepare`] loads it: a pure function of the seed, the
/// table number, the id and the table size.
pub fn row(seed: u64, table: usize, id: u64, table_size: u64) -> Vec<Value> {
    let mut rng = SmallRng::seed_from_u64(
        seed ^ (table as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
            ^ id.wrapping_mul(0xD1B5_4A32_D192_ED03),
    );
    let k = rng.random_range(1..=table_size.max(1));
    vec![
        Value::UInt(id),
        Value::UInt(k),
        Value::Bytes(c_value(&mut rng)),
        Value::Bytes(pad_value(&mut rng)),
    ]
}

/// How far [`prepare`] has come, passed to its progress callback.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Progress {
    /// The table being loaded (1-based).
    pub table: usize,
    /// Tables in all.
    pub tables: usize,
    /// Rows of this table loaded so far.
    pub rows: u64,
    /// Rows of all tables loaded so far.
    pub total_rows: u64,
    /// Rows to load in all.
    pub all_rows: u64,
    /// Time since `prepare` started.
    pub elapsed: Duration,
}

impl Progress {
    /// Rows per second so far, over all tables.
    pub fn rows_per_sec(&self) -> f64 {
        per_sec(self.total_rows, self.elapsed)
    }
}

/// Rows between two progress callbacks.
pub const PROGRESS_EVERY: u64 = 10_000;

/// Creates `sbtest1..=sbtestN` and bulk-loads `table_size` rows into each, calling `progress`
/// every [`PROGRESS_EVERY`] rows and at the end of each table. A table that exists already is
/// [`minnow::Error::TableExists`]. Returns the final progress.
pub fn prepare(
    db: &Database,
    cfg: &OltpConfig,
    progress: &mut dyn FnMut(Progress),
) -> Result<Progress, WorkloadError> {
    cfg.validate()?;
    let start = Instant::now();
    let all_rows = cfg.table_size.saturating_mul(cfg.tables as u64);
    let mut last = Progress {
        table: 1,
        tables: cfg.tables,
        rows: 0,
        total_rows: 0,
        all_rows,
        elapsed: Duration::ZERO,
    };
    for n in 1..=cfg.tables {
        let table = db.create_table(table_def(n))?;
        let done_before = last.total_rows;
        let rows = (1..=cfg.table_size).map(|id| {
            if id % PROGRESS_EVERY == 0 {
                progress(Progress {
                    table: n,
                    tables: cfg.tables,
                    rows: id,
                    total_rows: done_before + id,
                    all_rows,
                    elapsed: start.elapsed(),
                });
            }
            row(cfg.seed, n, id, cfg.table_size)
        });
        table.load(rows)?;
        last = Progress {
            table: n,
            tables: cfg.tables,
            rows: cfg.table_size,
            total_rows: done_before + cfg.table_size,
            all_rows,
            elapsed: start.elapsed(),
        };
        progress(last);
    }
    Ok(last)
}

/// What happened during one report interval, passed to [`run`]'s report callback.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct IntervalReport {
    /// Time since the run started, at the end of this interval.
    pub elapsed: Duration,
    /// Length of this interval (the last one may be short).
    pub interval: Duration,
    /// Worker threads.
    pub threads: usize,
    /// Events completed in this interval.
    pub events: u64,
    /// Events per second (sysbench's tps).
    pub tps: f64,
    /// Queries per second (reads + writes + other).
    pub qps: f64,
    /// Read queries per second.
    pub reads_per_sec: f64,
    /// Write queries per second.
    pub writes_per_sec: f64,
    /// Other queries per second (BEGIN, COMMIT, ROLLBACK; 0 with `skip_trx`).
    pub other_per_sec: f64,
    /// Ignored errors per second (deadlocks, lock wait timeouts, duplicate keys).
    pub errors_per_sec: f64,
    /// 95th percentile event latency in this interval, in milliseconds (0 with no events).
    pub p95_ms: f64,
}

/// Latency percentiles of a whole run, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Latency {
    /// Fastest event.
    pub min_ms: f64,
    /// Mean.
    pub avg_ms: f64,
    /// Median.
    pub p50_ms: f64,
    /// 95th percentile (sysbench's headline figure).
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// 99.9th percentile.
    pub p999_ms: f64,
    /// Slowest event.
    pub max_ms: f64,
}

impl Latency {
    /// The percentiles of a histogram of microseconds (all zero when it is empty).
    pub fn of(h: &Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency::default();
        }
        Latency {
            min_ms: ms(h.min()),
            avg_ms: h.mean() / 1000.0,
            p50_ms: ms(h.value_at_quantile(0.50)),
            p95_ms: ms(h.value_at_quantile(0.95)),
            p99_ms: ms(h.value_at_quantile(0.99)),
            p999_ms: ms(h.value_at_quantile(0.999)),
            max_ms: ms(h.max()),
        }
    }
}

/// The totals of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// The script.
    pub mode: Mode,
    /// Worker threads.
    pub threads: usize,
    /// Time from the start to the last worker's end.
    pub elapsed: Duration,
    /// Events completed (sysbench's "transactions").
    pub events: u64,
    /// Queries in all: `reads + writes + other`.
    pub queries: u64,
    /// Read queries.
    pub reads: u64,
    /// Write queries.
    pub writes: u64,
    /// Other queries: BEGIN, COMMIT and ROLLBACK (0 with `skip_trx`).
    pub other: u64,
    /// Errors ignored as sysbench ignores them: the sum of [`Summary::ignored`]'s counts.
    pub ignored_errors: u64,
    /// The ignored errors by kind.
    pub ignored: IgnoredErrors,
    /// Ignored errors per second.
    pub errors_per_sec: f64,
    /// Events per second.
    pub tps: f64,
    /// Queries per second.
    pub qps: f64,
    /// Event latency.
    pub latency: Latency,
    /// Events completed by each thread (sysbench's "threads fairness").
    pub events_per_thread: Vec<u64>,
    /// True when the stop flag ended the run before its time or event limit.
    pub interrupted: bool,
    /// The run's `skip_trx`: true when statements ran without BEGIN/COMMIT.
    pub skip_trx: bool,
}

/// The errors a run ignored, by kind (sysbench's "ignored errors", split).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct IgnoredErrors {
    /// Deadlocks (MySQL error 1213): the transaction was rolled back and the event restarted.
    pub deadlocks: u64,
    /// Lock wait timeouts (1205): the event rolled back and restarted.
    pub lock_wait_timeouts: u64,
    /// Duplicate keys of delete-inserts (1062). With `skip_trx` the event goes on; in a
    /// transaction it would roll back and restart (it cannot happen there, see the module
    /// docs).
    pub duplicate_keys: u64,
}

impl IgnoredErrors {
    /// All of them.
    pub fn total(&self) -> u64 {
        self.deadlocks + self.lock_wait_timeouts + self.duplicate_keys
    }

    fn add(&mut self, o: &IgnoredErrors) {
        self.deadlocks += o.deadlocks;
        self.lock_wait_timeouts += o.lock_wait_timeouts;
        self.duplicate_keys += o.duplicate_keys;
    }
}

/// Counters of one worker, shared with the reporter.
struct Counters {
    events: u64,
    reads: u64,
    writes: u64,
    other: u64,
    ignored: IgnoredErrors,
    hist: Histogram<u64>,
}

impl Counters {
    fn new() -> Result<Counters, WorkloadError> {
        Ok(Counters {
            events: 0,
            reads: 0,
            writes: 0,
            other: 0,
            ignored: IgnoredErrors::default(),
            hist: new_hist()?,
        })
    }

    fn add(&mut self, o: &Counters) {
        self.events += o.events;
        self.reads += o.reads;
        self.writes += o.writes;
        self.other += o.other;
        self.ignored.add(&o.ignored);
        // Same bounds on both sides, values already clamped: cannot fail.
        let _ = self.hist.add(&o.hist);
    }

    fn reset(&mut self) {
        self.events = 0;
        self.reads = 0;
        self.writes = 0;
        self.other = 0;
        self.ignored = IgnoredErrors::default();
        self.hist.reset();
    }
}

/// Latencies are recorded in microseconds, up to an hour, with 3 significant digits.
pub(crate) const HIST_MAX_US: u64 = 3_600_000_000;

pub(crate) fn new_hist() -> Result<Histogram<u64>, WorkloadError> {
    Histogram::new_with_bounds(1, HIST_MAX_US, 3).map_err(|e| WorkloadError::Setting {
        setting: "histogram",
        reason: e.to_string(),
    })
}

/// One worker's shared state: the interval counters (reset at each report) and its total.
struct Slot {
    interval: Counters,
    total_events: u64,
}

fn lock(m: &Mutex<Slot>) -> MutexGuard<'_, Slot> {
    // A worker that panicked poisons its slot; its counters are still the best we have.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub(crate) fn per_sec(n: u64, d: Duration) -> f64 {
    let s = d.as_secs_f64();
    if s > 0.0 { n as f64 / s } else { 0.0 }
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// Runs the workload on tables [`prepare`] made: `cfg.threads` workers until the time or
/// event limit, or until `stop` is set. `report` runs on the calling thread every
/// `cfg.report_interval`. The first engine error a worker meets (other than the ones sysbench
/// ignores) stops all workers and is returned.
pub fn run(
    db: &Database,
    cfg: &OltpConfig,
    stop: &AtomicBool,
    report: &mut dyn FnMut(&IntervalReport),
) -> Result<Summary, WorkloadError> {
    cfg.validate()?;
    let tables: Vec<Table> = (1..=cfg.tables)
        .map(|n| db.table(&table_name(n)))
        .collect::<Result<_, _>>()?;
    for t in &tables {
        check_schema(t)?;
    }
    let stmts = cfg.statements();
    let slots: Vec<Arc<Mutex<Slot>>> = (0..cfg.threads)
        .map(|_| {
            Ok(Arc::new(Mutex::new(Slot {
                interval: Counters::new()?,
                total_events: 0,
            })))
        })
        .collect::<Result<_, WorkloadError>>()?;
    let started = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    let failed = AtomicBool::new(false);
    let start = Instant::now();
    let deadline = cfg.time.map(|t| start + t);
    let mut total = Counters::new()?;
    let mut last_report = start;

    let worker_results = std::thread::scope(|s| {
        let handles: Vec<_> = slots
            .iter()
            .enumerate()
            .map(|(i, slot)| {
                let w = Worker {
                    db,
                    tables: &tables,
                    cfg,
                    stmts,
                    rng: SmallRng::seed_from_u64(
                        cfg.seed
                            .wrapping_add(1)
                            .wrapping_mul(0x2545_F491_4F6C_DD1D)
                            .wrapping_add(i as u64),
                    ),
                };
                let slot = Arc::clone(slot);
                let (started, done, failed) = (&started, &done, &failed);
                s.spawn(move || {
                    let r = w.run(&slot, stop, started, done, deadline);
                    if r.is_err() {
                        failed.store(true, Ordering::SeqCst);
                        done.store(true, Ordering::SeqCst);
                    }
                    r
                })
            })
            .collect();

        // The reporter: this thread, waking at each interval until every worker has ended.
        while !handles.iter().all(|h| h.is_finished()) {
            let next = match cfg.report_interval {
                Some(iv) => last_report + iv,
                None => Instant::now() + Duration::from_millis(50),
            };
            let mut wake = next.min(Instant::now() + Duration::from_millis(20));
            if let Some(d) = deadline {
                wake = wake.min(d.max(Instant::now()));
            }
            std::thread::sleep(wake.saturating_duration_since(Instant::now()));
            if stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() >= d) {
                done.store(true, Ordering::SeqCst);
            }
            if let Some(iv) = cfg.report_interval {
                let now = Instant::now();
                if now >= last_report + iv {
                    let r = take_interval(&slots, &mut total, now - start, now - last_report, cfg)?;
                    report(&r);
                    last_report = now;
                }
            }
        }
        let results: Vec<_> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or(Err(WorkloadError::WorkerPanicked)))
            .collect();
        Ok::<_, WorkloadError>(results)
    })?;
    let elapsed = start.elapsed();
    for r in worker_results {
        r?;
    }
    // What the last report did not see: a final, possibly short, interval.
    let now = Instant::now();
    let tail = take_interval(&slots, &mut total, elapsed, now - last_report, cfg)?;
    if cfg.report_interval.is_some() && tail.events > 0 {
        report(&tail);
    }
    let events_per_thread: Vec<u64> = slots.iter().map(|s| lock(s).total_events).collect();
    let latency = Latency::of(&total.hist);
    let limit_reached = cfg.events.is_some_and(|n| total.events >= n)
        || deadline.is_some_and(|d| Instant::now() >= d);
    let queries = total.reads + total.writes + total.other;
    Ok(Summary {
        mode: cfg.mode,
        threads: cfg.threads,
        elapsed,
        events: total.events,
        queries,
        reads: total.reads,
        writes: total.writes,
        other: total.other,
        ignored_errors: total.ignored.total(),
        ignored: total.ignored,
        errors_per_sec: per_sec(total.ignored.total(), elapsed),
        tps: per_sec(total.events, elapsed),
        qps: per_sec(queries, elapsed),
        latency,
        events_per_thread,
        interrupted: stop.load(Ordering::Relaxed) && !limit_reached,
        skip_trx: cfg.skip_trx,
    })
}

/// Moves every worker's interval counters into `total` and returns the interval's report.
fn take_interval(
    slots: &[Arc<Mutex<Slot>>],
    total: &mut Counters,
    elapsed: Duration,
    interval: Duration,
    cfg: &OltpConfig,
) -> Result<IntervalReport, WorkloadError> {
    let mut iv = Counters::new()?;
    for s in slots {
        let mut g = lock(s);
        iv.add(&g.interval);
        g.interval.reset();
    }
    total.add(&iv);
    let queries = iv.reads + iv.writes + iv.other;
    Ok(IntervalReport {
        elapsed,
        interval,
        threads: cfg.threads,
        events: iv.events,
        tps: per_sec(iv.events, interval),
        qps: per_sec(queries, interval),
        reads_per_sec: per_sec(iv.reads, interval),
        writes_per_sec: per_sec(iv.writes, interval),
        other_per_sec: per_sec(iv.other, interval),
        errors_per_sec: per_sec(iv.ignored.total(), interval),
        p95_ms: if iv.hist.is_empty() {
            0.0
        } else {
            ms(iv.hist.value_at_quantile(0.95))
        },
    })
}

/// Checks that `t` has the columns and index of an `sbtest` table, in order.
fn check_schema(t: &Table) -> Result<(), WorkloadError> {
    let want = table_def(1);
    let def = t.def();
    let names = |d: &TableDef| -> Vec<(String, ColumnType)> {
        d.columns.iter().map(|c| (c.name.clone(), c.ty)).collect()
    };
    let has_k = def
        .indexes
        .iter()
        .any(|i| i.name == K_INDEX && i.columns == ["k"]);
    if names(def) != names(&want) || def.primary_key != ["id"] || !has_k {
        return Err(WorkloadError::Schema {
            table: def.name.clone(),
            reason: "not an sbtest table (expected id, k, c CHAR(120), pad CHAR(60) and index k_1)"
                .into(),
        });
    }
    Ok(())
}

/// One worker thread's state.
struct Worker<'a, 'db> {
    db: &'db Database,
    tables: &'a [Table],
    cfg: &'a OltpConfig,
    stmts: Statements,
    rng: SmallRng,
}

/// What one event did, over all its attempts.
#[derive(Default)]
struct EventCount {
    reads: u64,
    writes: u64,
    other: u64,
    ignored: IgnoredErrors,
    /// Given up (the run stopped while it was being retried): not counted as an event.
    abandoned: bool,
}

/// Where an event's statements run: each on its own, or in one transaction.
enum Session<'t> {
    /// `skip_trx`: autocommit statements.
    Auto,
    /// Inside a transaction.
    Trx(&'t mut Transaction),
}

impl Session<'_> {
    fn get(&mut self, t: &Table, key: &[Value]) -> Result<Option<Vec<Value>>, Error> {
        match self {
            Session::Auto => t.get(key),
            Session::Trx(tx) => tx.get(t, key),
        }
    }

    /// The read of an UPDATE: a locking current read in a transaction.
    fn get_for_update(&mut self, t: &Table, key: &[Value]) -> Result<Option<Vec<Value>>, Error> {
        match self {
            Session::Auto => t.get(key),
            Session::Trx(tx) => tx.get_for_update(t, key),
        }
    }

    fn scan(&mut self, t: &Table, scan: Scan) -> Result<Vec<Vec<Value>>, Error> {
        match self {
            Session::Auto => t.scan(scan)?.collect(),
            Session::Trx(tx) => tx.scan(t, scan)?.collect(),
        }
    }

    /// An UPDATE of a row that is not there (a concurrent delete has just removed it)
    /// changes nothing (0 rows affected), as in MySQL.
    fn update(&mut self, t: &Table, row: &[Value]) -> Result<(), Error> {
        let r = match self {
            Session::Auto => t.update(row).map(|_| ()),
            Session::Trx(tx) => tx.update(t, row),
        };
        match r {
            Ok(()) | Err(Error::RowNotFound { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    fn delete(&mut self, t: &Table, key: &[Value]) -> Result<(), Error> {
        match self {
            Session::Auto => t.delete(key).map(|_| ()),
            Session::Trx(tx) => tx.delete(t, key).map(|_| ()),
        }
    }

    fn insert(&mut self, t: &Table, row: &[Value]) -> Result<(), Error> {
        match self {
            Session::Auto => t.insert(row).map(|_| ()),
            Session::Trx(tx) => tx.insert(t, row),
        }
    }
}

impl<'a, 'db> Worker<'a, 'db> {
    fn run(
        mut self,
        slot: &Mutex<Slot>,
        stop: &AtomicBool,
        started: &AtomicU64,
        done: &AtomicBool,
        deadline: Option<Instant>,
    ) -> Result<(), WorkloadError> {
        let stopping = || {
            done.load(Ordering::Relaxed)
                || stop.load(Ordering::Relaxed)
                || deadline.is_some_and(|d| Instant::now() >= d)
        };
        loop {
            if stopping() {
                return Ok(());
            }
            if let Some(limit) = self.cfg.events
                && started.fetch_add(1, Ordering::Relaxed) >= limit
            {
                return Ok(());
            }
            let t0 = Instant::now();
            let c = self.event(&stopping)?;
            let us = (t0.elapsed().as_micros() as u64).clamp(1, HIST_MAX_US);
            let mut g = lock(slot);
            g.interval.reads += c.reads;
            g.interval.writes += c.writes;
            g.interval.other += c.other;
            g.interval.ignored.add(&c.ignored);
            if !c.abandoned {
                g.interval.events += 1;
                g.total_events += 1;
                // Clamped to the histogram's bounds: cannot fail.
                let _ = g.interval.hist.record(us);
            }
        }
    }

    fn table(&mut self) -> &'a Table {
        let tables = self.tables;
        &tables[self.rng.random_range(0..tables.len())]
    }

    fn id(&mut self) -> u64 {
        let n = self.cfg.table_size;
        match self.cfg.rand_type {
            RandType::Uniform => self.rng.random_range(1..=n),
            RandType::Special => {
                let hot = (n * u64::from(self.cfg.rand_spec_pct) / 100).max(1);
                let to_hot = self.rng.random_range(0..100u32) < self.cfg.rand_spec_res || hot >= n;
                if to_hot {
                    self.rng.random_range(1..=hot)
                } else {
                    self.rng.random_range(hot + 1..=n)
                }
            }
        }
    }

    /// The first id of a range statement: ranges stay inside 1..=table_size.
    fn range_start(&mut self) -> u64 {
        let id = self.id();
        id.min(
            self.cfg
                .table_size
                .saturating_sub(self.cfg.range_size - 1)
                .max(1),
        )
    }

    fn range(&mut self, s: &mut Session<'_>, column: &str) -> Result<Vec<Vec<Value>>, Error> {
        let start = self.range_start();
        let end = start + self.cfg.range_size - 1;
        let t = self.table();
        s.scan(
            t,
            Scan::range(
                Bound::Included(vec![Value::UInt(start)]),
                Bound::Included(vec![Value::UInt(end)]),
            )
            .columns(&[column]),
        )
    }

    /// One event: its statements, alone or in a transaction retried after the errors
    /// sysbench ignores (see the module docs).
    fn event(&mut self, stopping: &dyn Fn() -> bool) -> Result<EventCount, WorkloadError> {
        let mut c = EventCount::default();
        if self.cfg.skip_trx {
            self.statements(&mut Session::Auto, &mut c)?;
            return Ok(c);
        }
        loop {
            let mut tx = self.db.begin()?;
            c.other += 1; // BEGIN
            let r = self.statements(&mut Session::Trx(&mut tx), &mut c);
            let err = match r {
                Ok(()) => {
                    tx.commit()?;
                    c.other += 1; // COMMIT
                    return Ok(c);
                }
                Err(e) => e,
            };
            match err {
                // The engine has rolled the whole transaction back.
                Error::Deadlock { .. } => c.ignored.deadlocks += 1,
                Error::LockWaitTimeout { .. } => {
                    c.ignored.lock_wait_timeouts += 1;
                    tx.rollback()?;
                    c.other += 1; // ROLLBACK
                }
                Error::DuplicateKey { .. } => {
                    c.ignored.duplicate_keys += 1;
                    tx.rollback()?;
                    c.other += 1;
                }
                e => return Err(e.into()),
            }
            if stopping() {
                c.abandoned = true;
                return Ok(c);
            }
        }
    }

    /// The event's statements, counted into `c` as each one completes. With `skip_trx` a
    /// delete-insert's duplicate key is counted and the event goes on; in a transaction every
    /// error ends the attempt.
    fn statements(&mut self, s: &mut Session<'_>, c: &mut EventCount) -> Result<(), Error> {
        let st = self.stmts;
        for _ in 0..st.point_selects {
            let id = self.id();
            let t = self.table();
            std::hint::black_box(s.get(t, &[Value::UInt(id)])?);
            c.reads += 1;
        }
        for _ in 0..st.simple_ranges {
            std::hint::black_box(self.range(s, "c")?);
            c.reads += 1;
        }
        for _ in 0..st.sum_ranges {
            let rows = self.range(s, "k")?;
            let sum: u64 = rows
                .iter()
                .filter_map(|r| match r.first() {
                    Some(Value::UInt(k)) => Some(*k),
                    _ => None,
                })
                .sum();
            std::hint::black_box(sum);
            c.reads += 1;
        }
        for _ in 0..st.order_ranges {
            let mut cs = c_values(self.range(s, "c")?);
            cs.sort_unstable();
            std::hint::black_box(cs);
            c.reads += 1;
        }
        for _ in 0..st.distinct_ranges {
            let mut cs = c_values(self.range(s, "c")?);
            cs.sort_unstable();
            cs.dedup();
            std::hint::black_box(cs);
            c.reads += 1;
        }
        for _ in 0..st.index_updates {
            let id = self.id();
            let t = self.table();
            if let Some(mut row) = s.get_for_update(t, &[Value::UInt(id)])? {
                if let Some(Value::UInt(k)) = row.get_mut(1) {
                    *k = (*k + 1) % (u64::from(u32::MAX) + 1);
                }
                s.update(t, &row)?;
            }
            c.writes += 1;
        }
        for _ in 0..st.non_index_updates {
            let id = self.id();
            let t = self.table();
            let new_c = c_value(&mut self.rng);
            if let Some(mut row) = s.get_for_update(t, &[Value::UInt(id)])? {
                if let Some(v) = row.get_mut(2) {
                    *v = Value::Bytes(new_c);
                }
                s.update(t, &row)?;
            }
            c.writes += 1;
        }
        for _ in 0..st.delete_inserts {
            let id = self.id();
            let t = self.table();
            s.delete(t, &[Value::UInt(id)])?;
            c.writes += 1;
            let k = self.rng.random_range(1..=self.cfg.table_size);
            let row = [
                Value::UInt(id),
                Value::UInt(k),
                Value::Bytes(c_value(&mut self.rng)),
                Value::Bytes(pad_value(&mut self.rng)),
            ];
            match s.insert(t, &row) {
                Ok(()) => {}
                Err(Error::DuplicateKey { .. }) if matches!(s, Session::Auto) => {
                    c.ignored.duplicate_keys += 1
                }
                Err(e) => return Err(e),
            }
            c.writes += 1;
        }
        Ok(())
    }
}

/// The `c` values of rows scanned with the projection `["c"]`.
fn c_values(rows: Vec<Vec<Value>>) -> Vec<Vec<u8>> {
    rows.into_iter()
        .filter_map(|r| match r.into_iter().next() {
            Some(Value::Bytes(b)) => Some(b),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests;
