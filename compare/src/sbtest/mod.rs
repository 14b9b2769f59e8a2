//! The table-shaped workload: sysbench's `sbtest` table with its secondary index `k_1`.
//!
//! ```sql
//! CREATE TABLE sbtest (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(120), pad CHAR(60));
//! CREATE INDEX k_1 ON sbtest (k);
//! ```
//!
//! The key-value peers have no secondary index, so this runs on minnow, SQLite (the index is
//! SQL's) and redb with a hand-maintained index table `(k, id) -> ()`, kept in the same write
//! transaction as the row. Each read is its own read transaction (sysbench's autocommit
//! statements); each write is durable when it returns.
//!
//! Phases: load (one write batch), point selects by id, ranges of 10 and 100 by id, selects
//! by `k` through the index (with `c`, so the row is fetched), index updates
//! (`UPDATE sbtest SET k = k + 1 WHERE id = ?`, durable each), inserts (durable each).

mod minnow;
mod redb;
mod sqlite;

use std::path::Path;
use std::time::Instant;

pub use self::minnow::MinnowSb;
pub use self::redb::RedbSb;
pub use self::sqlite::SqliteSb;
use crate::rng::Rng;
use crate::{Result, mismatch};

/// Length of `c` (sysbench: CHAR(120)).
pub const C_LEN: usize = 120;
/// Length of `pad` (sysbench: CHAR(60)).
pub const PAD_LEN: usize = 60;

/// One row of `sbtest`.
#[derive(Debug, Clone)]
pub struct SbRow {
    /// Primary key, 1-based.
    pub id: u32,
    /// The indexed column.
    pub k: u32,
    /// 120 bytes of digit groups.
    pub c: [u8; C_LEN],
    /// 60 bytes of digit groups.
    pub pad: [u8; PAD_LEN],
}

/// An engine that can hold `sbtest` with its index.
pub trait SbEngine {
    /// The engine's name, as the column header.
    fn name(&self) -> &'static str;

    /// Inserts every row as one write batch and makes it durable.
    fn load(&mut self, rows: &[SbRow]) -> Result<()>;

    /// `SELECT c FROM sbtest WHERE id = ?`: copies `c` into `out`; `false` if no row.
    fn point(&mut self, id: u32, out: &mut Vec<u8>) -> Result<bool>;

    /// `SELECT id, c FROM sbtest WHERE id BETWEEN ? AND ?` in id order; returns how many.
    fn range(&mut self, lo: u32, hi: u32, visit: &mut dyn FnMut(u32, &[u8])) -> Result<usize>;

    /// `SELECT id, c FROM sbtest WHERE k = ?` through `k_1`, in id order; returns how many.
    fn by_k(&mut self, k: u32, visit: &mut dyn FnMut(u32, &[u8])) -> Result<usize>;

    /// `UPDATE sbtest SET k = k + 1 WHERE id = ?`, durable; `false` if no row.
    fn update_k(&mut self, id: u32) -> Result<bool>;

    /// `INSERT INTO sbtest VALUES (...)`, durable.
    fn insert(&mut self, row: &SbRow) -> Result<()>;

    /// One line: durability, and what the load's write batch is.
    fn notes(&self) -> String;
}

/// The sizes of the sbtest phases.
#[derive(Debug, Clone)]
pub struct SbSizes {
    /// Rows loaded.
    pub rows: usize,
    /// Point selects.
    pub points: usize,
    /// Ranges of 10.
    pub ranges10: usize,
    /// Ranges of 100.
    pub ranges100: usize,
    /// Selects by `k`.
    pub by_k: usize,
    /// Durable index updates.
    pub updates: usize,
    /// Durable inserts.
    pub inserts: usize,
}

impl Default for SbSizes {
    fn default() -> SbSizes {
        SbSizes {
            rows: 100_000,
            points: 100_000,
            ranges10: 20_000,
            ranges100: 5_000,
            by_k: 50_000,
            updates: 1_000,
            inserts: 1_000,
        }
    }
}

impl SbSizes {
    /// A handful of each (the smoke test).
    pub fn tiny() -> SbSizes {
        SbSizes {
            rows: 1_000,
            points: 200,
            ranges10: 50,
            ranges100: 20,
            by_k: 100,
            updates: 10,
            inserts: 10,
        }
    }
}

fn digits(rng: &mut Rng, out: &mut [u8]) {
    for (i, b) in out.iter_mut().enumerate() {
        *b = if i % 12 == 11 {
            b'-'
        } else {
            b'0' + rng.below(10) as u8
        };
    }
}

/// Row `id` of a table of `rows` rows (`k` uniform in `1..=rows`, as sysbench's prepare).
pub fn make_row(rng: &mut Rng, id: u32, rows: usize) -> SbRow {
    let mut c = [0; C_LEN];
    let mut pad = [0; PAD_LEN];
    digits(rng, &mut c);
    digits(rng, &mut pad);
    SbRow {
        id,
        k: rng.below(rows as u64) as u32 + 1,
        c,
        pad,
    }
}

/// The rows of the table, generated once.
pub fn make_rows(s: &SbSizes, seed: u64) -> Vec<SbRow> {
    let mut rng = Rng::new(seed);
    (1..=s.rows as u32)
        .map(|id| make_row(&mut rng, id, s.rows))
        .collect()
}

/// The phases of [`run`], with the unit of their figure.
pub fn phase_names(s: &SbSizes) -> Vec<String> {
    vec![
        format!("sbtest load ({} rows, 1 transaction), µs/row", s.rows),
        format!("point select by id ({}), µs", s.points),
        format!("range of 10 by id ({}), µs", s.ranges10),
        format!("range of 100 by id ({}), µs", s.ranges100),
        format!("select by k through k_1 ({}), µs", s.by_k),
        format!("index update k=k+1 ({}, durable each), ms", s.updates),
        format!("insert ({}, durable each), ms", s.inserts),
    ]
}

fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01B3);
    }
    h
}

/// Runs the phases on `e` (an empty database); one figure per [`phase_names`] entry, and a
/// digest of everything read (equal across engines when they agree).
pub fn run(
    e: &mut dyn SbEngine,
    rows: &[SbRow],
    s: &SbSizes,
    seed: u64,
) -> Result<(Vec<f64>, u64)> {
    let n = rows.len() as u64;
    let mut figs = Vec::new();
    let mut digest = 0xCBF2_9CE4_8422_2325u64;
    let mut rng = Rng::new(seed ^ 0x5B7E57);
    let per =
        |t: Instant, ops: usize, scale: f64| t.elapsed().as_secs_f64() * scale / ops.max(1) as f64;

    let t = Instant::now();
    e.load(rows)?;
    figs.push(per(t, rows.len(), 1e6));

    let ids: Vec<u32> = (0..s.points).map(|_| rng.below(n) as u32 + 1).collect();
    let mut out = Vec::new();
    let t = Instant::now();
    for &id in &ids {
        if !e.point(id, &mut out)? || out != rows[id as usize - 1].c {
            return Err(mismatch(format!("{}: wrong c for id {id}", e.name())));
        }
    }
    figs.push(per(t, s.points, 1e6));

    for (count, len) in [(s.ranges10, 10u32), (s.ranges100, 100)] {
        let los: Vec<u32> = (0..count)
            .map(|_| rng.below(n - len as u64 + 1) as u32 + 1)
            .collect();
        let t = Instant::now();
        for &lo in &los {
            let mut next = lo;
            let mut ok = true;
            let seen = e.range(lo, lo + len - 1, &mut |id, c| {
                ok &= id == next && c == rows[id as usize - 1].c;
                next += 1;
                digest = fnv(digest, &id.to_le_bytes());
            })?;
            if !ok || seen != len as usize {
                return Err(mismatch(format!("{}: range from {lo} wrong", e.name())));
            }
        }
        figs.push(per(t, count, 1e6));
    }

    let ks: Vec<u32> = (0..s.by_k).map(|_| rng.below(n) as u32 + 1).collect();
    let t = Instant::now();
    let mut found = 0;
    for &k in &ks {
        let mut ok = true;
        found += e.by_k(k, &mut |id, c| {
            let row = &rows[id as usize - 1];
            ok &= row.k == k && c == row.c;
            digest = fnv(digest, &id.to_le_bytes());
        })?;
        if !ok {
            return Err(mismatch(format!("{}: select by k={k} wrong", e.name())));
        }
    }
    figs.push(per(t, s.by_k, 1e6));
    digest = fnv(digest, &(found as u64).to_le_bytes());

    let ids: Vec<u32> = (0..s.updates).map(|_| rng.below(n) as u32 + 1).collect();
    let t = Instant::now();
    for &id in &ids {
        if !e.update_k(id)? {
            return Err(mismatch(format!("{}: no row {id} to update", e.name())));
        }
    }
    figs.push(per(t, s.updates, 1e3));

    let new: Vec<SbRow> = (0..s.inserts)
        .map(|i| make_row(&mut rng, (rows.len() + 1 + i) as u32, rows.len()))
        .collect();
    let t = Instant::now();
    for row in &new {
        e.insert(row)?;
    }
    figs.push(per(t, s.inserts, 1e3));

    // The writes must be visible: the last insert, and the k of the first updated row
    // through the index.
    if let Some(last) = new.last()
        && (!e.point(last.id, &mut out)? || out != last.c)
    {
        return Err(mismatch(format!(
            "{}: inserted row {} missing",
            e.name(),
            last.id
        )));
    }
    if let Some(&id) = ids.first() {
        let bumps = ids.iter().filter(|&&x| x == id).count() as u32;
        let k = rows[id as usize - 1].k + bumps;
        let mut hit = false;
        e.by_k(k, &mut |got, _| hit |= got == id)?;
        if !hit {
            return Err(mismatch(format!(
                "{}: k_1 lacks the updated row {id}",
                e.name()
            )));
        }
        digest = fnv(digest, &k.to_le_bytes());
    }
    Ok((figs, digest))
}

/// The sbtest engines, in column order.
pub fn engines(root: &Path, run: usize, cache: usize) -> Result<Vec<Box<dyn SbEngine>>> {
    let dir = |name: &str| crate::kv::fresh_dir(root, &format!("run{run}-sbtest-{name}"));
    Ok(vec![
        Box::new(MinnowSb::create(&dir("minnow")?, cache)?),
        Box::new(SqliteSb::create(&dir("sqlite")?, cache)?),
        Box::new(RedbSb::create(&dir("redb")?, cache)?),
    ])
}
