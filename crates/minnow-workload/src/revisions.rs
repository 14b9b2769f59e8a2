//! Covering indexes on cold data (seed 004, "Where covering indexes rock"; experiment E8).
//!
//! Wikipedia's `revision` table is clustered on (`rev_page`, `rev_id`): a page's revisions sit
//! together, and one user's revisions are scattered over the whole table. Listing 10,000
//! revisions of one user through an index on (`rev_user`, `rev_timestamp`) then needs one
//! clustered leaf per row for any column the index lacks: 10,000 random 16 KiB reads on cold
//! data (21.73 s in the article), while an index that also holds the wanted columns answers from
//! about 100 index pages (2.30 s).
//!
//! ## The table
//!
//! `revision(rev_page U32, rev_id U32, rev_user U32, rev_timestamp U64, rev_len U32,
//! rev_comment VARCHAR(255))`, primary key (`rev_page`, `rev_id`), indexes
//! [`BY_USER`] (`rev_user`, `rev_timestamp`) and [`BY_USER_COVERING`] (`rev_user`,
//! `rev_timestamp`, `rev_len`). Rows are generated in primary key order ([`row`]): ten
//! revisions per page, timestamps random (so one user's revisions in time order jump around the
//! clustered index, as an editor's do on Wikipedia), comments of 40-200 bytes, users drawn from
//! 100,000 others except that every `rows / user_revisions`-th row belongs to [`TARGET_USER`],
//! so that user's revisions are spread evenly over the clustered index.
//!
//! ## The query
//!
//! `SELECT rev_timestamp, rev_len FROM revision WHERE rev_user = ?` for [`TARGET_USER`]:
//! through [`BY_USER`] it is not covering (each entry's primary key is looked up for
//! `rev_len`); through [`BY_USER_COVERING`] it is. [`run_cold`] opens the database afresh (an
//! empty buffer pool; with `O_DIRECT` the OS cache does not help either), runs one plan, and
//! reports the time and the pages the buffer pool read.

use std::path::Path;
use std::time::Instant;

use minnow::inspect::Internals;
use minnow::{ColumnDef, ColumnType, Config, Database, IndexDef, Scan, TableDef, Value};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::WorkloadError;

/// The table's name.
pub const TABLE: &str = "revision";
/// The index on (`rev_user`, `rev_timestamp`).
pub const BY_USER: &str = "user_timestamp";
/// The index on (`rev_user`, `rev_timestamp`, `rev_len`): covering for the query.
pub const BY_USER_COVERING: &str = "user_timestamp_len";
/// The user whose revisions the query lists.
pub const TARGET_USER: u64 = 42;
/// Revisions per wiki page.
pub const REVS_PER_PAGE: u64 = 10;

/// The `revision` table.
pub fn table_def() -> TableDef {
    TableDef::new(TABLE)
        .column(ColumnDef::new("rev_page", ColumnType::U32))
        .column(ColumnDef::new("rev_id", ColumnType::U32))
        .column(ColumnDef::new("rev_user", ColumnType::U32))
        .column(ColumnDef::new("rev_timestamp", ColumnType::U64))
        .column(ColumnDef::new("rev_len", ColumnType::U32))
        .column(ColumnDef::new("rev_comment", ColumnType::Var(255)))
        .primary_key(&["rev_page", "rev_id"])
        .index(IndexDef::new(BY_USER, &["rev_user", "rev_timestamp"]))
        .index(IndexDef::new(
            BY_USER_COVERING,
            &["rev_user", "rev_timestamp", "rev_len"],
        ))
}

/// Row `k` (0-based, in primary key order) of a table of `rows` rows in which
/// [`TARGET_USER`] has `user_revisions` revisions.
pub fn row(seed: u64, rows: u64, user_revisions: u64, k: u64) -> Vec<Value> {
    let mut rng = SmallRng::seed_from_u64(seed ^ k.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let stride = (rows / user_revisions.max(1)).max(1);
    let user = if k % stride == stride / 2 && k / stride < user_revisions {
        TARGET_USER
    } else {
        1_000 + rng.random_range(0..100_000u64)
    };
    let comment: Vec<u8> = (0..rng.random_range(40..=200usize))
        .map(|_| b'a' + rng.random_range(0..26u8))
        .collect();
    vec![
        Value::UInt(k / REVS_PER_PAGE + 1),
        Value::UInt(k + 1),
        Value::UInt(user),
        // Edit times unrelated to the page: a user's revisions in time order visit the
        // clustered index in random order, as on Wikipedia.
        Value::UInt(20_050_101_000_000 + rng.random_range(0..1_000_000_000u64)),
        Value::UInt(rng.random_range(100..100_000u64)),
        Value::Bytes(comment),
    ]
}

/// Creates the table in `db` and loads `rows` rows; returns rows per second.
pub fn prepare(
    db: &Database,
    rows: u64,
    user_revisions: u64,
    seed: u64,
) -> Result<f64, WorkloadError> {
    if rows == 0 || rows > u64::from(u32::MAX) || user_revisions > rows {
        return Err(WorkloadError::Setting {
            setting: "rows",
            reason: "need 1..=4294967295 rows and no more user revisions than rows".into(),
        });
    }
    let started = Instant::now();
    let t = db.create_table(table_def())?;
    t.load((0..rows).map(|k| row(seed, rows, user_revisions, k)))?;
    Ok(rows as f64 / started.elapsed().as_secs_f64().max(1e-9))
}

/// Which index the query uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Plan {
    /// [`BY_USER`], then the clustered index for `rev_len`.
    NonCovering,
    /// [`BY_USER_COVERING`] alone.
    Covering,
}

impl Plan {
    /// Both plans.
    pub const ALL: [Plan; 2] = [Plan::NonCovering, Plan::Covering];

    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Plan::NonCovering => "non_covering",
            Plan::Covering => "covering",
        }
    }
}

/// One cold run of one plan.
#[derive(Debug, Clone, Serialize)]
pub struct ColdRun {
    /// The plan.
    pub plan: Plan,
    /// Whether the scan answered from the index alone.
    pub covering: bool,
    /// Rows returned.
    pub rows: u64,
    /// Seconds the query took (the open is not counted).
    pub seconds: f64,
    /// Pages the buffer pool read from disk during the query (synchronous reads).
    pub pages_read: u64,
    /// Pages linear read-ahead brought in during the query.
    pub read_ahead: u64,
    /// Bytes those pages amount to.
    pub bytes_read: u64,
}

/// Opens the database in `dir` afresh with `config` (a cold buffer pool), runs the query with
/// `plan`, and closes it.
pub fn run_cold(dir: &Path, config: Config, plan: Plan) -> Result<ColdRun, WorkloadError> {
    let page = config.page_size.bytes() as u64;
    let db = Database::open(dir, config)?;
    let t = db.table(TABLE)?;
    let before = db.buffer_pool()?.stats();
    let started = Instant::now();
    let user = vec![Value::UInt(TARGET_USER)];
    let index = match plan {
        Plan::NonCovering => BY_USER,
        Plan::Covering => BY_USER_COVERING,
    };
    let scan = Scan::range(
        std::ops::Bound::Included(user.clone()),
        std::ops::Bound::Included(user),
    )
    .columns(&["rev_timestamp", "rev_len"]);
    let found = t.scan_index(index, scan)?;
    let covering = found.is_covering();
    let mut rows = 0u64;
    for r in found {
        r?;
        rows += 1;
    }
    let seconds = started.elapsed().as_secs_f64();
    let after = db.buffer_pool()?.stats();
    drop(t);
    db.close()?;
    let pages_read = after.reads.saturating_sub(before.reads);
    let read_ahead = after.read_ahead.saturating_sub(before.read_ahead);
    Ok(ColdRun {
        plan,
        covering,
        rows,
        seconds,
        pages_read,
        read_ahead,
        bytes_read: (pages_read + read_ahead) * page,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cold_runs_of_both_plans() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path(), Config::default()).unwrap();
        prepare(&db, 20_000, 200, 1).unwrap();
        db.close().unwrap();
        let nc = run_cold(dir.path(), Config::default(), Plan::NonCovering).unwrap();
        let c = run_cold(dir.path(), Config::default(), Plan::Covering).unwrap();
        assert_eq!((nc.rows, c.rows), (200, 200));
        assert!(!nc.covering && c.covering);
        // The non-covering plan touches a clustered leaf per row (rows are spread over
        // every leaf); the covering one a few index pages.
        assert!(nc.pages_read + nc.read_ahead > 100, "{nc:?}");
        assert!(c.pages_read + c.read_ahead < 20, "{c:?}");
        let other = tempfile::tempdir().unwrap();
        let db = Database::create(other.path(), Config::default()).unwrap();
        assert!(prepare(&db, 10, 11, 0).is_err());
    }
}
