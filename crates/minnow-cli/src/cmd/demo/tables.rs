//! The demo's table step: sysbench's `sbtest` table through the embedded API.
//!
//! `sbtest` is the table the seed articles' OLTP runs used: `id` primary key, `k` with a
//! secondary index, `c CHAR(120)`, `pad CHAR(60)`. The demo creates it in a fresh database,
//! loads rows in key order, runs point selects, 10-row primary-key ranges and secondary-index
//! scans (covering and not), checks every index against its table, closes the database and
//! opens it again (a clean open replays nothing).

use std::ops::Bound;
use std::path::Path;
use std::time::Instant;

use minnow::{
    ColumnDef, ColumnType, Config, Database, FlushAtCommit, IndexDef, Scan, TableDef, Value,
};
use serde::Serialize;

/// What the table step measured.
#[derive(Debug, Serialize)]
pub struct TablesReport {
    /// Rows loaded.
    pub rows: u64,
    /// Seconds to load them (flush_log_at_trx_commit = 2, then one sync at close).
    pub load_secs: f64,
    /// Point selects by primary key.
    pub point_selects: u64,
    /// Seconds for them.
    pub point_secs: f64,
    /// 10-row primary-key range scans.
    pub ranges: u64,
    /// Seconds for them.
    pub range_secs: f64,
    /// Rows returned by a covering scan of the secondary index (k, id).
    pub covering_rows: u64,
    /// True if that scan was answered from the index alone.
    pub covering: bool,
    /// Rows returned by the same scan asking for `c` (fetches each row).
    pub fetching_rows: u64,
    /// Indexes `Database::check` verified.
    pub checked_indexes: usize,
    /// Redo groups replayed when the database was opened again (0 after a clean close).
    pub reopen_redo_groups: u64,
    /// The system tablespace, for the inspector.
    pub tablespace: String,
}

fn text(seed: u64, len: usize) -> Vec<u8> {
    // sysbench fills c and pad with groups of digits separated by dashes.
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|i| {
            if i % 12 == 11 {
                b'-'
            } else {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                b'0' + (x % 10) as u8
            }
        })
        .collect()
}

fn k_of(id: u64, rows: u64) -> u64 {
    id.wrapping_mul(2_654_435_761) % rows.max(1)
}

/// Runs the table step in `dir` with `rows` rows.
pub fn run(dir: &Path, rows: u64) -> Result<TablesReport, String> {
    let err = |e: minnow::Error| e.to_string();
    let db_dir = dir.join("db");
    if db_dir.exists() {
        std::fs::remove_dir_all(&db_dir).map_err(|e| format!("{}: {e}", db_dir.display()))?;
    }
    let config = Config {
        flush_log_at_trx_commit: FlushAtCommit::Write,
        ..Config::default()
    };
    let db = Database::create(&db_dir, config.clone()).map_err(err)?;
    let table = db
        .create_table(
            TableDef::new("sbtest1")
                .column(ColumnDef::new("id", ColumnType::U32))
                .column(ColumnDef::new("k", ColumnType::U32))
                .column(ColumnDef::new("c", ColumnType::Fixed(120)))
                .column(ColumnDef::new("pad", ColumnType::Fixed(60)))
                .primary_key(&["id"])
                .index(IndexDef::new("k_1", &["k"])),
        )
        .map_err(err)?;

    let started = Instant::now();
    for id in 1..=rows {
        table
            .insert(&[
                Value::UInt(id),
                Value::UInt(k_of(id, rows)),
                Value::Bytes(text(id, 120)),
                Value::Bytes(text(id ^ 0xFFFF, 60)),
            ])
            .map_err(err)?;
    }
    let load_secs = started.elapsed().as_secs_f64();

    let point_selects = rows.min(10_000);
    let started = Instant::now();
    for i in 0..point_selects {
        let id = 1 + i.wrapping_mul(7919) % rows;
        if table.get(&[Value::UInt(id)]).map_err(err)?.is_none() {
            return Err(format!("row {id} is missing"));
        }
    }
    let point_secs = started.elapsed().as_secs_f64();

    let ranges = rows.min(1_000);
    let started = Instant::now();
    for i in 0..ranges {
        let from = 1 + i.wrapping_mul(104_729) % rows;
        let got = table
            .scan(Scan::range(Bound::Included(vec![Value::UInt(from)]), Bound::Unbounded).limit(10))
            .map_err(err)?
            .count();
        if got != 10.min((rows - from + 1) as usize) {
            return Err(format!("range from {from} returned {got} rows"));
        }
    }
    let range_secs = started.elapsed().as_secs_f64();

    let lo = Bound::Included(vec![Value::UInt(0)]);
    let hi = Bound::Excluded(vec![Value::UInt(rows.min(100))]);
    let covering_scan = table
        .scan_index(
            "k_1",
            Scan::range(lo.clone(), hi.clone()).columns(&["k", "id"]),
        )
        .map_err(err)?;
    let covering = covering_scan.is_covering();
    let covering_rows = covering_scan.count() as u64;
    let fetching_rows = table
        .scan_index("k_1", Scan::range(lo, hi).columns(&["c"]))
        .map_err(err)?
        .count() as u64;

    let checked_indexes = db.check().map_err(err)?.indexes;
    drop(table);
    db.close().map_err(err)?;
    let db = Database::open(&db_dir, config).map_err(err)?;
    let reopen_redo_groups = db.open_report().redo_groups;
    db.close().map_err(err)?;

    Ok(TablesReport {
        rows,
        load_secs,
        point_selects,
        point_secs,
        ranges,
        range_secs,
        covering_rows,
        covering,
        fetching_rows,
        checked_indexes,
        reopen_redo_groups,
        tablespace: db_dir
            .join(minnow::inspect::SYSTEM_TABLESPACE)
            .display()
            .to_string(),
    })
}
