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
//!
//! ## Cold means no dump load
//!
//! A database closed with the default settings leaves `ib_buffer_pool` (the page ids of its
//! most recently used pages) behind, and the next open reads those pages back in the
//! background (`innodb_buffer_pool_load_at_startup`). A "cold" run that loaded it would count
//! the previous run's pages among its own reads and find some of its own already cached. So
//! [`run_cold`] opens with `buffer_pool_dump_at_shutdown = false` (minnow's one knob for
//! `innodb_buffer_pool_dump_at_shutdown` and `_load_at_startup`), as a user measuring cold
//! reads would: nothing is loaded and nothing is dumped.
//!
//! ## Where the pages go
//!
//! Every page the query brings in stays resident unless the pool runs out of frames, so
//! [`run_cold`] also classifies the pages that became resident during the query
//! ([`ColdRun::breakdown`]): B-tree pages by index id and level (0 = leaf), other pages by
//! their type. With fewer pages read than the pool holds, the breakdown adds up to the
//! pages read.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::time::Instant;

use minnow::inspect::Internals;
use minnow::{ColumnDef, ColumnType, Config, Database, IndexDef, Scan, TableDef, Value};
use minnow_buf::BufferPool;
use minnow_page::PageId;
use minnow_page::fil::{PageType, page_type};
use minnow_page::index::IndexHeader;
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
    /// The pages that became resident during the query, by kind (see the module docs).
    pub breakdown: Vec<PageKind>,
    /// Pages a buffer pool dump load read in the background (0: the run was cold).
    pub dump_pages_loaded: u64,
}

/// How many of the pages a query brought in are of one kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PageKind {
    /// `index <id> level <n>` for a B-tree page (level 0: leaf), else the page type's name.
    pub kind: String,
    /// Pages of that kind.
    pub pages: u64,
}

/// The pages resident in `pool` now, in every instance.
fn resident(pool: &BufferPool) -> HashSet<PageId> {
    (0..pool.config().instances)
        .flat_map(|i| pool.lru(i))
        .map(|(id, _)| id)
        .collect()
}

/// Classifies the pages resident in `pool` that are not in `before` (reading each from the
/// pool: they are cached, so this reads nothing from disk).
fn classify(pool: &BufferPool, before: &HashSet<PageId>) -> Result<Vec<PageKind>, WorkloadError> {
    let mut kinds: BTreeMap<String, u64> = BTreeMap::new();
    for id in resident(pool).difference(before) {
        let page = match pool.get_read(*id) {
            Ok(g) => g,
            // Evicted meanwhile: not counted.
            Err(_) => continue,
        };
        let kind = match page_type(&page) {
            Ok(PageType::Index) => match IndexHeader::read(&page) {
                Ok(h) => format!("index {} level {}", h.index_id, h.level),
                Err(_) => "INDEX (unreadable header)".to_string(),
            },
            Ok(t) => t.name().to_string(),
            Err(_) => "unreadable".to_string(),
        };
        *kinds.entry(kind).or_default() += 1;
    }
    Ok(kinds
        .into_iter()
        .map(|(kind, pages)| PageKind { kind, pages })
        .collect())
}

/// Opens the database in `dir` afresh with `config` but without the buffer pool dump load (a
/// cold buffer pool; see the module docs), runs the query with `plan`, classifies the pages
/// it brought in, and closes the database (without writing a dump).
pub fn run_cold(dir: &Path, config: Config, plan: Plan) -> Result<ColdRun, WorkloadError> {
    let page = config.page_size.bytes() as u64;
    let config = Config {
        buffer_pool_dump_at_shutdown: false,
        ..config
    };
    let db = Database::open(dir, config)?;
    let t = db.table(TABLE)?;
    let was_resident = resident(db.buffer_pool()?);
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
    let breakdown = classify(db.buffer_pool()?, &was_resident)?;
    let dump_pages_loaded = db
        .buffer_pool()?
        .wait_for_load()
        .map_err(minnow::Error::from)? as u64;
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
        breakdown,
        dump_pages_loaded,
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
        // Cold means cold: the dump that `prepare`'s close left was not loaded...
        assert_eq!((nc.dump_pages_loaded, c.dump_pages_loaded), (0, 0));
        // ...so every page the
        // covering plan read is one the breakdown finds (the pool holds them all), and most
        // of them are B-tree pages.
        let classified: u64 = c.breakdown.iter().map(|k| k.pages).sum();
        assert_eq!(classified, c.pages_read + c.read_ahead, "{c:?}");
        assert!(
            c.breakdown.iter().any(|k| k.kind.ends_with("level 0")),
            "{c:?}"
        );
        // A second cold run after a first one reads the same pages (no dump carried them).
        let again = run_cold(dir.path(), Config::default(), Plan::Covering).unwrap();
        assert_eq!(again.pages_read, c.pages_read, "{again:?} vs {c:?}");
        let other = tempfile::tempdir().unwrap();
        let db = Database::create(other.path(), Config::default()).unwrap();
        assert!(prepare(&db, 10, 11, 0).is_err());
    }
}
