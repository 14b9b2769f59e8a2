//! Streaming scans: [`Scan`] (what to read), [`Rows`] (the iterator) and the [`Table`]
//! methods that start them. The scan itself (the cursor over one leaf at a time, the
//! visibility of each record, the clustered read a secondary entry may need, the validation
//! against DDL) is the engine's (`minnow-engine`'s `read::scan` module). A [`Rows`] adds the
//! database handle that keeps the database open while it lives.

use std::ops::Bound;

use minnow_btree::record::Value;
use minnow_engine::read::scan::{self, Cursor, ScanArgs};

use super::Table;
use crate::db::Database;
use crate::error::Result;
use crate::trx::Snapshot;

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

    /// What the engine's scans read of this one (borrowed).
    pub(crate) fn args(&self) -> ScanArgs<'_> {
        ScanArgs {
            start: &self.start,
            end: &self.end,
            limit: self.limit,
            columns: self.columns.as_deref(),
            reverse: self.reverse,
        }
    }
}

/// A streaming scan ([`Table::scan`], [`Table::scan_index`]): an iterator of projected
/// rows. It holds no latch between rows (it reads one leaf at a time), so a thread may
/// write while it scans; rows changed meanwhile may or may not be seen. A scan whose table
/// is dropped, or replaced by `drop_index`, `create_index` or a load, while it runs ends with
/// [`crate::Error::TableChanged`] (take a new handle and scan again). It owns a clone of its
/// database (no lifetime: it may outlive the [`Table`] it came from); once the database is
/// closed its next row is [`crate::Error::Closed`].
pub struct Rows {
    db: Database,
    cursor: Cursor,
}

impl std::fmt::Debug for Rows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.cursor.fmt(f)
    }
}

impl Rows {
    fn new(db: Database, cursor: Cursor) -> Rows {
        Rows { db, cursor }
    }

    /// True if this secondary-index scan answers from the index alone (every requested
    /// column is an index or primary key column); false if it fetches each row from the
    /// clustered index. A primary key scan is always covering.
    pub fn is_covering(&self) -> bool {
        self.cursor.is_covering()
    }

    /// Records the B-tree scan decoded so far (returned, skipped as invisible, or
    /// buffered to return next).
    #[cfg(test)]
    pub(crate) fn decoded(&self) -> u64 {
        self.cursor.decoded()
    }
}

impl Iterator for Rows {
    type Item = Result<Vec<Value>>;

    fn next(&mut self) -> Option<Self::Item> {
        self.cursor.next_in(self.db.engine_unchecked())
    }
}

impl Table {
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
        let snap = Snapshot::statement(self.db.inner()?);
        self.scan_in(snap, scan)
    }

    /// [`Table::scan`] as `snap` sees the table.
    pub(crate) fn scan_in(&self, snap: Snapshot, scan: Scan) -> Result<Rows> {
        let cursor = scan::primary(self.db.engine()?, &self.t, snap, scan.args())?;
        Ok(Rows::new(self.db.clone(), cursor))
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
        let snap = Snapshot::statement(self.db.inner()?);
        self.scan_index_in(snap, index, scan)
    }

    /// [`Table::scan_index`] as `snap` sees the table.
    pub(crate) fn scan_index_in(&self, snap: Snapshot, index: &str, scan: Scan) -> Result<Rows> {
        let cursor = scan::secondary(self.db.engine()?, &self.t, snap, index, scan.args())?;
        Ok(Rows::new(self.db.clone(), cursor))
    }
}

#[cfg(test)]
mod tests;
