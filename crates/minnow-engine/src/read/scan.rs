//! Streaming scans: [`Scan`] (what to read) and [`Rows`] (the iterator), and the
//! [`Table`] methods that start them.
//!
//! A scan reads one leaf at a time and holds no latch between rows. Each row it returns, and
//! its end, is validated against DDL after it was read (`minnow-engine`'s `ddl` module
//! docs, "Reads racing a drop"): a scan whose table was dropped or replaced under it ends with
//! [`Error::TableChanged`] rather than return what it found on pages the table gave back.

use std::ops::Bound;
use std::sync::Arc;

use minnow_btree::record::Value;
use minnow_btree::{Entry, RangeCursor, ScanRange};

use super::Table;
use crate::db::Database;
use crate::error::{Error, Result, from_tree};
use crate::schema::PRIMARY;
use crate::status::RowOp;
use crate::trx::{self, Snapshot};
use minnow_engine::TableEntry;
use minnow_engine::entry::EntryState;

/// What a scan returns: key bounds, a limit, a projection and a direction.
///
/// Bounds are keys or key **prefixes**: for [`Table::scan`] the leading primary key columns,
/// for [`Table::scan_index`] the leading index columns (followed, if wanted, by leading
/// primary key columns). A prefix bound stands for every key that starts with it:
/// `Included([5])` as a lower bound starts at the first key beginning with 5, as an upper
/// bound ends after the last one; `Excluded([5])` leaves all of them out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scan {
    /// Lower bound.
    pub start: Bound<Vec<Value>>,
    /// Upper bound.
    pub end: Bound<Vec<Value>>,
    /// The most rows to return.
    pub limit: Option<usize>,
    /// The columns to return, by name, in this order (`None`: every column in table order).
    pub columns: Option<Vec<String>>,
    /// Descending key order (from `end` down to `start`; the limit counts from the top).
    pub reverse: bool,
}

impl Scan {
    /// Every row, every column.
    pub fn all() -> Scan {
        Scan {
            start: Bound::Unbounded,
            end: Bound::Unbounded,
            limit: None,
            columns: None,
            reverse: false,
        }
    }

    /// Rows with keys in `start..end`.
    pub fn range(start: Bound<Vec<Value>>, end: Bound<Vec<Value>>) -> Scan {
        Scan {
            start,
            end,
            ..Scan::all()
        }
    }

    /// At most `n` rows.
    pub fn limit(mut self, n: usize) -> Scan {
        self.limit = Some(n);
        self
    }

    /// Only these columns, in this order.
    pub fn columns(mut self, cols: &[&str]) -> Scan {
        self.columns = Some(cols.iter().map(|c| (*c).to_owned()).collect());
        self
    }

    /// In descending key order.
    pub fn reverse(mut self) -> Scan {
        self.reverse = true;
        self
    }
}

/// A streaming scan ([`Table::scan`], [`Table::scan_index`]): an iterator of projected
/// rows. It holds no latch between rows (it reads one leaf at a time), so a thread may
/// write while it scans; rows changed meanwhile may or may not be seen. A scan whose table
/// is dropped, or replaced by `drop_index`, `create_index` or a load, while it runs ends with
/// [`Error::TableChanged`] (take a new handle and scan again). It owns a clone of its
/// database (no lifetime: it may outlive the [`Table`] it came from); once the database is
/// closed its next row is [`Error::Closed`].
pub struct Rows {
    db: Database,
    t: Arc<TableEntry>,
    /// The B-tree scan's position (it reads through the pool of `db` on each step).
    cursor: RangeCursor,
    /// Which versions the scan sees.
    snap: Snapshot,
    /// Rows still to return (`None`: no limit).
    left: Option<usize>,
    /// The stored clustered fields a non-covering secondary scan fetches.
    fetch: Vec<usize>,
    /// `None`: a clustered scan; `Some(i)`: secondary index `i`.
    index: Option<usize>,
    /// Positions of the requested columns in the row.
    proj: Vec<usize>,
    /// Whether the secondary entry holds every requested column.
    covering: bool,
    done: bool,
    /// The statement's admission ticket: one per row, released when the scan is dropped.
    admitted: minnow_engine::admission::Ticket<'static>,
}

impl std::fmt::Debug for Rows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rows")
            .field("table", &self.t.meta.name())
            .field("index", &self.index)
            .field("covering", &self.covering)
            .finish()
    }
}

impl Rows {
    /// True if this secondary-index scan answers from the index alone (every requested
    /// column is an index or primary key column); false if it fetches each row from the
    /// clustered index. A primary key scan is always covering.
    pub fn is_covering(&self) -> bool {
        self.covering
    }

    /// Records the B-tree scan decoded so far (returned, skipped as invisible, or
    /// buffered to return next).
    #[cfg(test)]
    pub(crate) fn decoded(&self) -> u64 {
        self.cursor.decoded()
    }

    /// [`Error::TableChanged`] if DDL dropped or replaced the scan's table entry since the
    /// scan began: what it read since may come from pages the table no longer owns.
    fn stale(&self) -> Option<Error> {
        (self.t.state() != EntryState::Live).then(|| Error::TableChanged {
            table: self.t.meta.name().to_owned(),
        })
    }

    fn row(&mut self, e: Entry) -> Result<Option<Vec<Value>>> {
        let Entry {
            values,
            deleted,
            page_max_trx_id,
        } = e;
        let inner = self.db.inner()?;
        let meta = &self.t.meta;
        let Some(i) = self.index else {
            let Some(v) = trx::visible(inner, &self.t, &self.snap, values, deleted)? else {
                return Ok(None);
            };
            return Ok(Some(self.project(meta.row_of(v)?)));
        };
        let s = &meta.secondary[i];
        // Secondary entries carry no transaction id, but their leaf carries PAGE_MAX_TRX_ID:
        // if the view sees every transaction up to it, every change on the leaf is visible
        // and the entries are the truth as they are (InnoDB's `lock_sec_rec_cons_read_sees`).
        // A delete-marked one then belongs to no version the view sees, and a covering read
        // needs nothing from the clustered index.
        if self.snap.sees_page(page_max_trx_id) && (deleted || self.covering) {
            self.db.count_rows(RowOp::SecClusterReadAvoided, 1);
            if deleted {
                return Ok(None);
            }
            return Ok(Some(super::by_index::from_entry(
                meta, s, &values, &self.proj,
            )));
        }
        self.db.count_rows(RowOp::SecClusterRead, 1);
        // Otherwise (the leaf may hold a change the view cannot see, or the scan needs
        // other columns) the clustered record decides: its visible version must exist and
        // have exactly this entry (a delete-marked entry may be the one an old version has,
        // an unmarked one may belong to a version the view cannot see).
        let pk = values.get(s.cols.len()..).unwrap_or_default();
        let e = self
            .t
            .clustered
            .get_fields(inner.pool(), pk, &self.fetch)
            .map_err(|e| from_tree(e, meta.name(), PRIMARY))?;
        let Some(e) = e else {
            return Ok(None);
        };
        let Some(v) = trx::visible(inner, &self.t, &self.snap, e.values, e.deleted)? else {
            return Ok(None);
        };
        let row = meta.row_of(v)?;
        if !meta.has_secondary_entry(s, &row, &values) {
            return Ok(None);
        }
        Ok(Some(self.project(row)))
    }

    /// The projected columns of a whole row, moved rather than copied when the projection
    /// is every column in table order (a scan without `columns`): no value is cloned and
    /// the row's buffers are handed on as they are.
    fn project(&self, row: Vec<Value>) -> Vec<Value> {
        if self.proj.len() == row.len() && self.proj.iter().enumerate().all(|(i, &c)| i == c) {
            return row;
        }
        self.proj.iter().map(|&c| row[c].clone()).collect()
    }
}

impl Iterator for Rows {
    type Item = Result<Vec<Value>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.left == Some(0) {
            return None;
        }
        self.admitted.row();
        loop {
            let pool = match self.db.inner() {
                Ok(inner) => inner.pool(),
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            };
            let Some(next) = self.cursor.next_in(pool) else {
                // The end is an answer too: one reached through a page a drop freed is not.
                self.done = true;
                return self.stale().map(Err);
            };
            let r = match next {
                Ok(e) => self.row(e),
                Err(e) => {
                    let index = match self.index {
                        None => PRIMARY,
                        Some(i) => self.t.meta.secondary[i].name.as_str(),
                    };
                    Err(from_tree(e, self.t.meta.name(), index))
                }
            };
            // Validated after the read (`minnow-engine`'s `ddl` module docs, "Reads racing a
            // drop"): a row or an error from a page the table no longer owns is a changed table.
            if !matches!(r, Ok(None))
                && let Some(e) = self.stale()
            {
                self.done = true;
                return Some(Err(e));
            }
            match r {
                Ok(Some(row)) => {
                    if let Some(n) = self.left.as_mut() {
                        *n -= 1;
                    }
                    self.db.count_rows(RowOp::Read, 1);
                    return Some(Ok(row));
                }
                Ok(None) => continue,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
    }
}

/// A bound over the leading `k.len()` columns of `cols`, normalised: read from the caller's
/// bound and copied once (the copy the B-tree's range takes), not cloned and then normalised
/// into a second copy.
fn prefix_bound(
    meta: &crate::schema::TableMeta,
    cols: &[usize],
    b: &Bound<Vec<Value>>,
) -> Result<Bound<Vec<Value>>> {
    let norm = |k: &[Value]| -> Result<Vec<Value>> {
        let cols = cols.get(..k.len()).unwrap_or(cols);
        Ok(meta.normalise_key_cow(cols, k)?.into_owned())
    };
    Ok(match b {
        Bound::Included(k) => Bound::Included(norm(k)?),
        Bound::Excluded(k) => Bound::Excluded(norm(k)?),
        Bound::Unbounded => Bound::Unbounded,
    })
}

/// What a locking range read over the primary key of `t` needs from `scan`
/// (`Transaction::scan_for_update`): its bounds, normalised, and the positions of its
/// columns.
pub(crate) type LockingPlan = (Bounds, Vec<usize>);

/// A scan's lower and upper bound.
pub(crate) type Bounds = (Bound<Vec<Value>>, Bound<Vec<Value>>);

/// See [`LockingPlan`].
pub(crate) fn locking_plan(t: &TableEntry, scan: &Scan) -> Result<LockingPlan> {
    Ok((
        pk_bounds(&t.meta, scan)?,
        projection(&t.meta, &scan.columns)?,
    ))
}

/// The bounds of `scan` over the primary key of `meta`, normalised.
pub(super) fn pk_bounds(meta: &crate::schema::TableMeta, scan: &Scan) -> Result<Bounds> {
    let b = |b: &Bound<Vec<Value>>| prefix_bound(meta, &meta.pk, b);
    Ok((b(&scan.start)?, b(&scan.end)?))
}

/// The positions of the columns `cols` names (`None`: every column in table order).
fn projection(meta: &crate::schema::TableMeta, cols: &Option<Vec<String>>) -> Result<Vec<usize>> {
    let def = &meta.def;
    match cols {
        None => Ok((0..def.columns.len()).collect()),
        Some(names) => names
            .iter()
            .map(|n| {
                def.column_index(n).ok_or_else(|| Error::NoSuchColumn {
                    table: def.name.clone(),
                    column: n.clone(),
                })
            })
            .collect(),
    }
}

impl Table {
    fn projection(&self, cols: &Option<Vec<String>>) -> Result<Vec<usize>> {
        projection(&self.t.meta, cols)
    }

    /// A streaming scan over the primary key, in key order.
    ///
    /// ```
    /// use std::ops::Bound;
    /// use minnow::{ColumnDef, ColumnType, Config, Database, Scan, TableDef, Value};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Database::create(dir.path(), Config::default())?;
    /// let t = db.create_table(TableDef::new("t")
    ///     .column(ColumnDef::new("id", ColumnType::U32))
    ///     .column(ColumnDef::new("v", ColumnType::I64))
    ///     .primary_key(&["id"]))?;
    /// for i in 0..10u64 {
    ///     t.insert(&[Value::UInt(i), Value::Int(-(i as i64))])?;
    /// }
    /// let scan = Scan::range(Bound::Included(vec![Value::UInt(3)]), Bound::Unbounded)
    ///     .limit(2)
    ///     .columns(&["v"]);
    /// let rows: Vec<_> = t.scan(scan)?.collect::<Result<_, _>>()?;
    /// assert_eq!(rows, [vec![Value::Int(-3)], vec![Value::Int(-4)]]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn scan(&self, scan: Scan) -> Result<Rows> {
        let snap = Snapshot::View(self.db.inner()?.trx_sys().statement_view());
        self.scan_in(snap, scan)
    }

    /// [`Table::scan`] as `snap` sees the table.
    pub(crate) fn scan_in(&self, snap: Snapshot, scan: Scan) -> Result<Rows> {
        self.read(|t| t.scan_entry(snap.clone(), scan.clone()))
    }

    /// [`Table::scan_in`] on this handle's entry (the scan validates each row).
    fn scan_entry(&self, snap: Snapshot, scan: Scan) -> Result<Rows> {
        let mut admitted = self.db.admit_owned();
        admitted.row();
        let meta = &self.t.meta;
        let proj = self.projection(&scan.columns)?;
        let b = |b: &Bound<Vec<Value>>| prefix_bound(meta, &meta.pk, b);
        let wanted = meta.stored_fields(&proj);
        let mut range = ScanRange::new(b(&scan.start)?, b(&scan.end)?);
        if scan.columns.is_some() {
            // Only the requested columns are decoded, and the system columns the
            // visibility check reads (an older version comes whole from undo).
            let npk = meta.pk.len();
            range = range.fields(wanted.iter().copied().chain([npk, npk + 1]).collect());
        }
        range = range.fetch(wanted);
        // The limit counts visible rows, so it is applied here, not by the B-tree (which
        // would count delete-marked records and invisible versions); the B-tree only reads
        // as many records as the limit at first, and more, lazily, if some are skipped.
        range.batch = scan.limit;
        range.reverse = scan.reverse;
        let cursor = self
            .t
            .clustered
            .cursor(range)
            .map_err(|e| from_tree(e, self.name(), PRIMARY))?;
        Ok(Rows {
            db: self.db.clone(),
            t: Arc::clone(&self.t),
            cursor,
            snap,
            left: scan.limit,
            fetch: Vec::new(),
            index: None,
            proj,
            covering: true,
            done: false,
            admitted,
        })
    }

    /// A streaming scan over secondary index `index`, in index order (ties in primary key
    /// order). Covering when every requested column is an index or primary key column;
    /// otherwise each row is fetched from the clustered index.
    ///
    /// ```
    /// use std::ops::Bound;
    /// use minnow::{ColumnDef, ColumnType, Config, Database, IndexDef, Scan, TableDef, Value};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Database::create(dir.path(), Config::default())?;
    /// let t = db.create_table(TableDef::new("t")
    ///     .column(ColumnDef::new("id", ColumnType::U32))
    ///     .column(ColumnDef::new("city", ColumnType::Var(20)))
    ///     .column(ColumnDef::new("note", ColumnType::Var(20)))
    ///     .primary_key(&["id"])
    ///     .index(IndexDef::new("by_city", &["city"])))?;
    /// for (id, city) in [(1u64, "oslo"), (2, "bern"), (3, "oslo")] {
    ///     t.insert(&[Value::UInt(id), Value::Bytes(city.into()), Value::Bytes(b"n".to_vec())])?;
    /// }
    /// let oslo = Bound::Included(vec![Value::Bytes(b"oslo".to_vec())]);
    /// let ids = t.scan_index("by_city", Scan::range(oslo.clone(), oslo).columns(&["id"]))?;
    /// assert!(ids.is_covering());
    /// let ids: Vec<_> = ids.collect::<Result<_, _>>()?;
    /// assert_eq!(ids, [vec![Value::UInt(1)], vec![Value::UInt(3)]]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn scan_index(&self, index: &str, scan: Scan) -> Result<Rows> {
        let snap = Snapshot::View(self.db.inner()?.trx_sys().statement_view());
        self.scan_index_in(snap, index, scan)
    }

    /// [`Table::scan_index`] as `snap` sees the table.
    pub(crate) fn scan_index_in(&self, snap: Snapshot, index: &str, scan: Scan) -> Result<Rows> {
        self.read(|t| t.scan_index_entry(snap.clone(), index, scan.clone()))
    }

    /// [`Table::scan_index_in`] on this handle's entry (the scan validates each row).
    fn scan_index_entry(&self, snap: Snapshot, index: &str, scan: Scan) -> Result<Rows> {
        let mut admitted = self.db.admit_owned();
        admitted.row();
        let meta = &self.t.meta;
        let i = meta
            .secondary
            .iter()
            .position(|s| s.name == index)
            .ok_or_else(|| Error::NoSuchIndex {
                table: self.name().to_owned(),
                index: index.to_owned(),
            })?;
        let s = &meta.secondary[i];
        let proj = self.projection(&scan.columns)?;
        let covering = proj
            .iter()
            .all(|c| s.cols.contains(c) || meta.pk.contains(c));
        // A fetched row is compared with the entry, so the index columns come too.
        let proj_and_key: Vec<usize> = proj.iter().chain(&s.cols).copied().collect();
        // Bounds are prefixes of (index columns, primary key columns).
        let cols: Vec<usize> = s.cols.iter().chain(meta.pk.iter()).copied().collect();
        let start = prefix_bound(meta, &cols, &scan.start)?;
        let end = prefix_bound(meta, &cols, &scan.end)?;
        let mut range = ScanRange::new(start, end);
        // The limit counts visible rows, so it is applied here, not by the B-tree (which
        // would count delete-marked records and invisible versions), which reads as many
        // entries as the limit at first and more, lazily, if some are skipped.
        range.batch = scan.limit;
        range.reverse = scan.reverse;
        let cursor = self.t.secondary[i]
            .cursor(range)
            .map_err(|e| from_tree(e, self.name(), index))?;
        Ok(Rows {
            db: self.db.clone(),
            t: Arc::clone(&self.t),
            cursor,
            snap,
            left: scan.limit,
            fetch: meta.stored_fields(&proj_and_key),
            index: Some(i),
            proj,
            covering,
            done: false,
            admitted,
        })
    }
}

#[cfg(test)]
mod tests;
