//! The 2007 read micro-benchmark (seed 001, experiment E2): the "normal" table and its 13
//! queries, on a clustered table and on a MyISAM-like heap table.
//!
//! In January 2007 Percona's PHPTestSuite ran 13 SELECTs against InnoDB, MyISAM and Falcon at
//! 1 to 256 threads, on a CPU-bound 1M-row table, to test the myth that MyISAM reads faster.
//! InnoDB's clustered primary key was 6-9% faster on point lookups, 25-30% faster on covering
//! ("NO_DATA") index reads and 2-26x faster on primary key ranges at high thread counts, where
//! MyISAM's `pread` of every row into the OS cache scaled badly. This module rebuilds the
//! benchmark on minnow: the same table, the same 13 queries, two organisations
//! ([`Organisation`]): minnow's clustered [`minnow::Table`] (InnoDB's) and
//! [`minnow_heap::HeapTable`] (MyISAM's: rows in a heap file read with `pread`, every index
//! pointing at a row id).
//!
//! ## The table
//!
//! ```sql
//! CREATE TABLE normal (
//!   id int(10) UNSIGNED NOT NULL AUTO_INCREMENT, name varchar(64) NOT NULL,
//!   email varchar(64) NOT NULL, password varchar(64) NOT NULL, dob date DEFAULT NULL,
//!   address varchar(128) NOT NULL, city varchar(64) NOT NULL,
//!   state_id tinyint(3) UNSIGNED NOT NULL, zip varchar(8) NOT NULL,
//!   country_id smallint(5) UNSIGNED NOT NULL,
//!   PRIMARY KEY (id), UNIQUE KEY email (email), KEY country_id (country_id, state_id, city))
//! ```
//!
//! [`table_def`] is that table in minnow's types. `id` is given explicitly (1..=rows, in
//! order) rather than generated, so both organisations hold identical rows (the heap table has
//! no AUTO_INCREMENT; a load with explicit ids is what the clustered table's would be).
//!
//! ## The data
//!
//! The article does not give PHPTestSuite's generator, so ours is stated here. Row `id` is a
//! pure function of the seed and `id` ([`row`]):
//!
//! | column | values |
//! |---|---|
//! | `name` | two capitalised pseudo-words of 3-12 letters each, joined by a space (7-25 bytes) |
//! | `email` | `u{id}.{word}@{word}.com`: unique by construction |
//! | `password` | 32 lowercase hex digits (an MD5's width) |
//! | `dob` | uniform over 1940-01-01 ..= 2005-12-28; NULL for 2% of rows |
//! | `address` | a house number, a word and `Street`/`Road`/`Avenue`: 16-60 bytes |
//! | `city` | one of 200 names (`city` + a pseudo-word), uniform |
//! | `state_id` | uniform in 0..[`STATES`] |
//! | `zip` | 5 decimal digits |
//! | `country_id` | uniform in 1..=`rows / ROWS_PER_COUNTRY` (at least 1), so a country holds about [`ROWS_PER_COUNTRY`] rows |
//!
//! A country therefore holds ~100 rows, and a (country, state) pair ~5.
//!
//! ## The 13 queries
//!
//! Parameters are drawn uniformly per query: an id in 1..=rows, a country in its range, a
//! first state in 0..`STATES - KEY_RANGE_STATES`. minnow has no SQL; each query is the
//! access the MySQL optimiser chose, through minnow's API, with aggregates computed by the
//! caller. "covering" says whether the access reads only the index, per organisation.
//!
//! | query | SQL | access | covering (clustered / heap) |
//! |---|---|---|---|
//! | `READ_PK_POINT` | `SELECT name WHERE id = ?` | get by primary key | - / no (`pread`) |
//! | `READ_KEY_POINT` | `SELECT name WHERE country_id = ?` | index `country_id`, prefix `[c]` | no / no |
//! | `READ_KEY_POINT_LIMIT` | ... `LIMIT 5` | same, 5 rows | no / no |
//! | `READ_KEY_POINT_NO_DATA` | `SELECT state_id WHERE country_id = ?` | same | yes / yes |
//! | `READ_KEY_POINT_NO_DATA_LIMIT` | ... `LIMIT 5` | same, 5 rows | yes / yes |
//! | `READ_PK_POINT_INDEX` | `SELECT id WHERE id = ?` | primary key range `[id, id]` | - / yes |
//! | `READ_PK_RANGE` | `SELECT min(dob) WHERE id BETWEEN ? AND ?+99` | primary key range, `dob` | - / no |
//! | `READ_PK_RANGE_INDEX` | `SELECT count(id) WHERE id BETWEEN ? AND ?+99` | primary key range, `id` | - / yes |
//! | `READ_KEY_RANGE` | `SELECT name WHERE country_id = ? AND state_id BETWEEN ? AND ?+9` | index, prefixes `[c, s]..[c, s+9]` | no / no |
//! | `READ_KEY_RANGE_LIMIT` | ... `LIMIT 50` | same, 50 rows | no / no |
//! | `READ_KEY_RANGE_NO_DATA` | `SELECT city WHERE ...` | same, `city` | yes / yes |
//! | `READ_KEY_RANGE_NO_DATA_LIMIT` | ... `LIMIT 50` | same, 50 rows | yes / yes |
//! | `READ_FTS` | `SELECT min(dob)` | clustered: the primary key's leaves; heap: the heap file read sequentially | - / - |
//!
//! The primary key range is [`PK_RANGE`] ids wide (the article does not say; sysbench's
//! default range size) and the key range [`KEY_RANGE_STATES`] states.
//!
//! ## Running
//!
//! [`prepare`] creates and loads the table in one organisation; [`run_point`] runs one query
//! on N threads for a fixed time and returns queries per second; [`sweep`] runs every
//! requested query at every requested thread count. The article ran each point 60 s after a
//! 180 s warm-up and kept the best of three runs; [`SweepConfig`] holds ours.

use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use minnow::{ColumnDef, ColumnType, Database, IndexDef, Scan, Table, TableDef, Value};
use minnow_heap::HeapTable;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::WorkloadError;

/// The table's name (the heap table's file is `normal.MYD` beside the database).
pub const TABLE: &str = "normal";
/// The unique index on `email`.
pub const EMAIL_INDEX: &str = "email";
/// The index on (`country_id`, `state_id`, `city`).
pub const COUNTRY_INDEX: &str = "country_id";
/// Rows per country, on average.
pub const ROWS_PER_COUNTRY: u64 = 100;
/// `state_id` takes values 0..STATES.
pub const STATES: u64 = 20;
/// Ids per primary key range query.
pub const PK_RANGE: u64 = 100;
/// States per key range query.
pub const KEY_RANGE_STATES: u64 = 10;
/// Thread counts the article ran.
pub const ARTICLE_THREADS: [usize; 6] = [1, 4, 16, 64, 128, 256];

/// How the table is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Organisation {
    /// minnow's clustered table: rows in the primary key's B+tree (InnoDB's organisation).
    Clustered,
    /// The MyISAM-like heap table ([`minnow_heap`]).
    Heap,
}

impl Organisation {
    /// Both, clustered first.
    pub const ALL: [Organisation; 2] = [Organisation::Clustered, Organisation::Heap];

    /// The name used on command lines.
    pub fn name(self) -> &'static str {
        match self {
            Organisation::Clustered => "clustered",
            Organisation::Heap => "heap",
        }
    }
}

impl std::str::FromStr for Organisation {
    type Err = WorkloadError;

    fn from_str(s: &str) -> Result<Organisation, WorkloadError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "clustered" | "innodb" => Ok(Organisation::Clustered),
            "heap" | "myisam" => Ok(Organisation::Heap),
            other => Err(WorkloadError::Setting {
                setting: "organisation",
                reason: format!("`{other}` is not clustered or heap"),
            }),
        }
    }
}

/// The 13 queries, named as in the article.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[allow(clippy::enum_variant_names)]
pub enum Query {
    /// `SELECT name FROM normal WHERE id = ?`
    #[serde(rename = "READ_PK_POINT")]
    PkPoint,
    /// `SELECT name FROM normal WHERE country_id = ?`
    #[serde(rename = "READ_KEY_POINT")]
    KeyPoint,
    /// `SELECT name FROM normal WHERE country_id = ? LIMIT 5`
    #[serde(rename = "READ_KEY_POINT_LIMIT")]
    KeyPointLimit,
    /// `SELECT state_id FROM normal WHERE country_id = ?`
    #[serde(rename = "READ_KEY_POINT_NO_DATA")]
    KeyPointNoData,
    /// `SELECT state_id FROM normal WHERE country_id = ? LIMIT 5`
    #[serde(rename = "READ_KEY_POINT_NO_DATA_LIMIT")]
    KeyPointNoDataLimit,
    /// `SELECT id FROM normal WHERE id = ?`
    #[serde(rename = "READ_PK_POINT_INDEX")]
    PkPointIndex,
    /// `SELECT min(dob) FROM normal WHERE id BETWEEN ? AND ?`
    #[serde(rename = "READ_PK_RANGE")]
    PkRange,
    /// `SELECT count(id) FROM normal WHERE id BETWEEN ? AND ?`
    #[serde(rename = "READ_PK_RANGE_INDEX")]
    PkRangeIndex,
    /// `SELECT name FROM normal WHERE country_id = ? AND state_id BETWEEN ? AND ?`
    #[serde(rename = "READ_KEY_RANGE")]
    KeyRange,
    /// The same with `LIMIT 50`.
    #[serde(rename = "READ_KEY_RANGE_LIMIT")]
    KeyRangeLimit,
    /// `SELECT city FROM normal WHERE country_id = ? AND state_id BETWEEN ? AND ?`
    #[serde(rename = "READ_KEY_RANGE_NO_DATA")]
    KeyRangeNoData,
    /// The same with `LIMIT 50`.
    #[serde(rename = "READ_KEY_RANGE_NO_DATA_LIMIT")]
    KeyRangeNoDataLimit,
    /// `SELECT min(dob) FROM normal` (a full table scan).
    #[serde(rename = "READ_FTS")]
    Fts,
}

impl Query {
    /// The 13 queries in the article's order.
    pub const ALL: [Query; 13] = [
        Query::PkPoint,
        Query::KeyPoint,
        Query::KeyPointLimit,
        Query::KeyPointNoData,
        Query::KeyPointNoDataLimit,
        Query::PkPointIndex,
        Query::PkRange,
        Query::PkRangeIndex,
        Query::KeyRange,
        Query::KeyRangeLimit,
        Query::KeyRangeNoData,
        Query::KeyRangeNoDataLimit,
        Query::Fts,
    ];

    /// The article's name (`READ_PK_POINT`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Query::PkPoint => "READ_PK_POINT",
            Query::KeyPoint => "READ_KEY_POINT",
            Query::KeyPointLimit => "READ_KEY_POINT_LIMIT",
            Query::KeyPointNoData => "READ_KEY_POINT_NO_DATA",
            Query::KeyPointNoDataLimit => "READ_KEY_POINT_NO_DATA_LIMIT",
            Query::PkPointIndex => "READ_PK_POINT_INDEX",
            Query::PkRange => "READ_PK_RANGE",
            Query::PkRangeIndex => "READ_PK_RANGE_INDEX",
            Query::KeyRange => "READ_KEY_RANGE",
            Query::KeyRangeLimit => "READ_KEY_RANGE_LIMIT",
            Query::KeyRangeNoData => "READ_KEY_RANGE_NO_DATA",
            Query::KeyRangeNoDataLimit => "READ_KEY_RANGE_NO_DATA_LIMIT",
            Query::Fts => "READ_FTS",
        }
    }
}

impl std::str::FromStr for Query {
    type Err = WorkloadError;

    /// Parses a query name, with or without the `READ_` prefix, in any case.
    fn from_str(s: &str) -> Result<Query, WorkloadError> {
        let up = s.trim().to_ascii_uppercase().replace('-', "_");
        let up = if up.starts_with("READ_") {
            up
        } else {
            format!("READ_{up}")
        };
        Query::ALL
            .into_iter()
            .find(|q| q.name() == up)
            .ok_or_else(|| WorkloadError::Setting {
                setting: "queries",
                reason: format!("unknown query `{s}`"),
            })
    }
}

/// The "normal" table in minnow's types.
pub fn table_def() -> TableDef {
    TableDef::new(TABLE)
        .column(ColumnDef::new("id", ColumnType::U32))
        .column(ColumnDef::new("name", ColumnType::Var(64)))
        .column(ColumnDef::new("email", ColumnType::Var(64)))
        .column(ColumnDef::new("password", ColumnType::Var(64)))
        .column(ColumnDef::nullable("dob", ColumnType::Date))
        .column(ColumnDef::new("address", ColumnType::Var(128)))
        .column(ColumnDef::new("city", ColumnType::Var(64)))
        .column(ColumnDef::new("state_id", ColumnType::U8))
        .column(ColumnDef::new("zip", ColumnType::Var(8)))
        .column(ColumnDef::new("country_id", ColumnType::U16))
        .primary_key(&["id"])
        .index(IndexDef::unique(EMAIL_INDEX, &["email"]))
        .index(IndexDef::new(
            COUNTRY_INDEX,
            &["country_id", "state_id", "city"],
        ))
}

/// Countries in a table of `rows` rows.
pub fn countries(rows: u64) -> u64 {
    (rows / ROWS_PER_COUNTRY).max(1)
}

fn word(rng: &mut SmallRng, min: usize, max: usize) -> String {
    const SYLLABLES: [&str; 16] = [
        "ka", "lo", "mi", "ren", "sa", "to", "vel", "an", "dor", "is", "ne", "ul", "bre", "th",
        "or", "y",
    ];
    let want = rng.random_range(min..=max);
    let mut s = String::with_capacity(want + 3);
    while s.len() < want {
        s.push_str(SYLLABLES[rng.random_range(0..SYLLABLES.len())]);
    }
    s.truncate(want);
    s
}

fn capitalised(mut s: String) -> String {
    if let Some(f) = s.get_mut(..1) {
        f.make_ascii_uppercase();
    }
    s
}

/// Row `id` (1-based) of a table of `rows` rows, for `seed`: see the module docs' table.
pub fn row(seed: u64, rows: u64, id: u64) -> Vec<Value> {
    let mut rng = SmallRng::seed_from_u64(seed ^ id.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let name = format!(
        "{} {}",
        capitalised(word(&mut rng, 3, 12)),
        capitalised(word(&mut rng, 3, 12))
    );
    let email = format!(
        "u{id}.{}@{}.com",
        word(&mut rng, 3, 10),
        word(&mut rng, 4, 10)
    );
    let password: String = (0..32)
        .map(|_| char::from(b"0123456789abcdef"[rng.random_range(0..16)]))
        .collect();
    let dob = if rng.random_range(0..100) < 2 {
        Value::Null
    } else {
        let y = rng.random_range(1940..=2005u16);
        let m = rng.random_range(1..=12u8);
        let d = rng.random_range(1..=28u8);
        Value::date(y, m, d).unwrap_or(Value::Null)
    };
    let street = ["Street", "Road", "Avenue"][rng.random_range(0..3)];
    let address = format!(
        "{} {} {street}",
        rng.random_range(1..10_000u32),
        capitalised(word(&mut rng, 6, 40))
    );
    let mut city_rng = SmallRng::seed_from_u64(seed ^ rng.random_range(0..200u64));
    let city = format!("city {}", word(&mut city_rng, 4, 14));
    let state = rng.random_range(0..STATES);
    let zip = format!("{:05}", rng.random_range(0..100_000u32));
    let country = rng.random_range(1..=countries(rows));
    vec![
        Value::UInt(id),
        Value::Bytes(name.into_bytes()),
        Value::Bytes(email.into_bytes()),
        Value::Bytes(password.into_bytes()),
        dob,
        Value::Bytes(address.into_bytes()),
        Value::Bytes(city.into_bytes()),
        Value::UInt(state),
        Value::Bytes(zip.into_bytes()),
        Value::UInt(country),
    ]
}

/// The "normal" table in one organisation.
#[derive(Debug)]
pub enum NormalTable<'db> {
    /// minnow's clustered table.
    Clustered(Table),
    /// The heap table (boxed: it is much larger than a table handle).
    Heap(Box<HeapTable<'db>>),
}

/// What [`prepare`] did.
#[derive(Debug, Clone, Serialize)]
pub struct Loaded {
    /// The organisation.
    pub organisation: Organisation,
    /// Rows loaded.
    pub rows: u64,
    /// Wall time of the load, seconds.
    pub seconds: f64,
    /// Rows per second.
    pub rows_per_sec: f64,
}

/// The heap file of the table in database directory `dir`.
pub fn heap_path(dir: &std::path::Path) -> std::path::PathBuf {
    dir.join(format!("{TABLE}.MYD"))
}

/// Creates the table in organisation `org` and loads `rows` rows (the heap's file goes in
/// `dir`, the database's directory), calling `progress(rows done)` every 10,000 rows.
pub fn prepare<'db>(
    db: &'db Database,
    dir: &std::path::Path,
    org: Organisation,
    rows: u64,
    seed: u64,
    progress: &mut dyn FnMut(u64),
) -> Result<(NormalTable<'db>, Loaded), WorkloadError> {
    if rows == 0 || rows > u64::from(u32::MAX) {
        return Err(WorkloadError::Setting {
            setting: "rows",
            reason: "must be in 1..=4294967295".into(),
        });
    }
    let started = Instant::now();
    let generated = (1..=rows).map(|id| {
        if id % 10_000 == 0 {
            progress(id);
        }
        row(seed, rows, id)
    });
    let table = match org {
        Organisation::Clustered => {
            let t = db.create_table(table_def())?;
            t.load(generated)?;
            NormalTable::Clustered(t)
        }
        Organisation::Heap => {
            let t = HeapTable::create(db, heap_path(dir), table_def()).map_err(heap_err)?;
            t.load(generated).map_err(heap_err)?;
            NormalTable::Heap(Box::new(t))
        }
    };
    progress(rows);
    let seconds = started.elapsed().as_secs_f64();
    Ok((
        table,
        Loaded {
            organisation: org,
            rows,
            seconds,
            rows_per_sec: rows as f64 / seconds.max(1e-9),
        },
    ))
}

/// Opens the table prepared earlier in organisation `org`.
pub fn open<'db>(
    db: &'db Database,
    dir: &std::path::Path,
    org: Organisation,
) -> Result<NormalTable<'db>, WorkloadError> {
    Ok(match org {
        Organisation::Clustered => NormalTable::Clustered(db.table(TABLE)?),
        Organisation::Heap => NormalTable::Heap(Box::new(
            HeapTable::open(db, heap_path(dir)).map_err(heap_err)?,
        )),
    })
}

fn heap_err(e: minnow_heap::HeapError) -> WorkloadError {
    match e {
        minnow_heap::HeapError::Engine(e) => WorkloadError::Engine(e),
        other => WorkloadError::Heap(Box::new(other)),
    }
}

fn inclusive(lo: Vec<Value>, hi: Vec<Value>) -> Scan {
    Scan::range(Bound::Included(lo), Bound::Included(hi))
}

/// Feeds the rows of `it` to `f` until it ends (true) or `abort` is set (false; checked every
/// 256 rows, so a long scan stops soon after a measurement ends).
fn drain<E>(
    it: impl Iterator<Item = Result<Vec<Value>, E>>,
    abort: &AtomicBool,
    f: &mut dyn FnMut(Vec<Value>),
    err: impl Fn(E) -> WorkloadError,
) -> Result<bool, WorkloadError> {
    for (i, r) in it.enumerate() {
        if i % 256 == 255 && abort.load(Ordering::Relaxed) {
            return Ok(false);
        }
        f(r.map_err(&err)?);
    }
    Ok(true)
}

impl NormalTable<'_> {
    /// Rows a scan returns, folded by `f`; false if `abort` cut it short.
    fn scan(
        &self,
        index: Option<&str>,
        scan: Scan,
        abort: &AtomicBool,
        f: &mut dyn FnMut(Vec<Value>),
    ) -> Result<bool, WorkloadError> {
        let engine = |e: minnow::Error| WorkloadError::Engine(e);
        match (self, index) {
            (NormalTable::Clustered(t), None) => drain(t.scan(scan)?, abort, f, engine),
            (NormalTable::Clustered(t), Some(i)) => drain(t.scan_index(i, scan)?, abort, f, engine),
            (NormalTable::Heap(t), None) => {
                drain(t.scan(scan).map_err(heap_err)?, abort, f, heap_err)
            }
            (NormalTable::Heap(t), Some(i)) => {
                drain(t.scan_index(i, scan).map_err(heap_err)?, abort, f, heap_err)
            }
        }
    }

    /// Runs query `q` once with parameters drawn from `rng` over a table of `rows` rows;
    /// returns the rows it produced (1 for an aggregate or a found point row).
    pub fn run_query(&self, q: Query, rows: u64, rng: &mut SmallRng) -> Result<u64, WorkloadError> {
        Ok(self
            .run_query_until(q, rows, rng, &AtomicBool::new(false))?
            .unwrap_or(0))
    }

    /// [`NormalTable::run_query`] that gives up (returning `None`) once `abort` is set, so
    /// a full scan does not hold a measurement past its end.
    pub fn run_query_until(
        &self,
        q: Query,
        rows: u64,
        rng: &mut SmallRng,
        abort: &AtomicBool,
    ) -> Result<Option<u64>, WorkloadError> {
        let id = rng.random_range(1..=rows);
        let country = rng.random_range(1..=countries(rows));
        let state = rng.random_range(0..=STATES - KEY_RANGE_STATES);
        let c = vec![Value::UInt(country)];
        let key_range = || {
            inclusive(
                vec![Value::UInt(country), Value::UInt(state)],
                vec![
                    Value::UInt(country),
                    Value::UInt(state + KEY_RANGE_STATES - 1),
                ],
            )
        };
        let pk_range = || inclusive(vec![Value::UInt(id)], vec![Value::UInt(id + PK_RANGE - 1)]);
        let mut n = 0u64;
        let mut done = true;
        let mut count = |_: Vec<Value>| n += 1;
        match q {
            Query::PkPoint => {
                let found = match self {
                    NormalTable::Clustered(t) => t.get(&[Value::UInt(id)])?,
                    NormalTable::Heap(t) => t.get(&[Value::UInt(id)]).map_err(heap_err)?,
                };
                n = u64::from(found.and_then(|r| r.into_iter().nth(1)).is_some());
            }
            Query::PkPointIndex => {
                let k = vec![Value::UInt(id)];
                done &= self.scan(
                    None,
                    inclusive(k.clone(), k).columns(&["id"]),
                    abort,
                    &mut count,
                )?;
            }
            Query::KeyPoint => {
                done &= self.scan(
                    Some(COUNTRY_INDEX),
                    inclusive(c.clone(), c).columns(&["name"]),
                    abort,
                    &mut count,
                )?
            }
            Query::KeyPointLimit => {
                done &= self.scan(
                    Some(COUNTRY_INDEX),
                    inclusive(c.clone(), c).columns(&["name"]).limit(5),
                    abort,
                    &mut count,
                )?
            }
            Query::KeyPointNoData => {
                done &= self.scan(
                    Some(COUNTRY_INDEX),
                    inclusive(c.clone(), c).columns(&["state_id"]),
                    abort,
                    &mut count,
                )?
            }
            Query::KeyPointNoDataLimit => {
                done &= self.scan(
                    Some(COUNTRY_INDEX),
                    inclusive(c.clone(), c).columns(&["state_id"]).limit(5),
                    abort,
                    &mut count,
                )?
            }
            Query::KeyRange => {
                done &= self.scan(
                    Some(COUNTRY_INDEX),
                    key_range().columns(&["name"]),
                    abort,
                    &mut count,
                )?
            }
            Query::KeyRangeLimit => {
                done &= self.scan(
                    Some(COUNTRY_INDEX),
                    key_range().columns(&["name"]).limit(50),
                    abort,
                    &mut count,
                )?
            }
            Query::KeyRangeNoData => {
                done &= self.scan(
                    Some(COUNTRY_INDEX),
                    key_range().columns(&["city"]),
                    abort,
                    &mut count,
                )?
            }
            Query::KeyRangeNoDataLimit => {
                done &= self.scan(
                    Some(COUNTRY_INDEX),
                    key_range().columns(&["city"]).limit(50),
                    abort,
                    &mut count,
                )?
            }
            Query::PkRangeIndex => {
                done &= self.scan(None, pk_range().columns(&["id"]), abort, &mut count)?
            }
            Query::PkRange => {
                let mut min: Option<Value> = None;
                done = self.scan(None, pk_range().columns(&["dob"]), abort, &mut |r| {
                    fold_min(&mut min, r)
                })?;
                n = u64::from(min.is_some());
            }
            Query::Fts => {
                let mut min: Option<Value> = None;
                let mut f = |r| fold_min(&mut min, r);
                done = match self {
                    NormalTable::Clustered(t) => drain(
                        t.scan(Scan::all().columns(&["dob"]))?,
                        abort,
                        &mut f,
                        WorkloadError::Engine,
                    )?,
                    NormalTable::Heap(t) => drain(
                        t.full_scan(Some(&["dob"])).map_err(heap_err)?,
                        abort,
                        &mut f,
                        heap_err,
                    )?,
                };
                n = u64::from(min.is_some());
            }
        }
        Ok(done.then_some(n))
    }
}

/// `min()` over a one-column row, ignoring NULL as SQL does.
fn fold_min(min: &mut Option<Value>, row: Vec<Value>) {
    if let Some(Value::Date(d)) = row.into_iter().next() {
        match min {
            Some(Value::Date(m)) if *m <= d => {}
            _ => *min = Some(Value::Date(d)),
        }
    }
}

mod sweep;
pub use sweep::{Point, SweepConfig, run_point, sweep};

#[cfg(test)]
mod tests;
