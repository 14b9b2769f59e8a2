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

use std::time::{Duration, Instant};

use minnow::{ColumnDef, ColumnType, Database, IndexDef, TableDef, Value};
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

mod run;
#[cfg(test)]
mod tests;

pub(crate) use run::{HIST_MAX_US, new_hist, per_sec};
pub use run::{IgnoredErrors, IntervalReport, Latency, Summary, run};
