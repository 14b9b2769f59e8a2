//! Range reads in place: [`Table::scan_with`] and [`crate::Transaction::scan_with`] hand each
//! row of a primary-key range to a closure as a [`RowView`] on its latched leaf, the way
//! [`Table::get_with`] hands one. The walk is the engine's (`minnow-engine`'s
//! `read::scan_with` module: the in-place visit, the versions rebuilt from undo off the
//! latch, the validation against DDL under the latch).

use minnow_engine::read::scan_with;

use super::Table;
use super::get::RowView;
use super::scan::Scan;
use crate::error::Result;
use crate::trx::Snapshot;

impl Table {
    /// Runs `f` on each row of a primary-key range, in key order (or descending with
    /// [`Scan::reverse`]), read in place: `f` gets a [`RowView`] whose byte columns are
    /// slices of the page and returns whether to go on (`false` ends the scan). Returns the
    /// number of rows `f` got. The rows are those [`Table::scan`] returns (the same
    /// consistent read), at most [`Scan::limit`] of them; [`Scan::columns`] plays no part:
    /// the view reads any column by its position in the table, and only the columns it
    /// reads are decoded.
    ///
    /// `f` runs while the row's leaf page is latched (shared): keep it short, and do not
    /// call into the database from it (no reads, writes or transactions: a write to the
    /// same leaf, or to the next one, would wait for this latch forever). Reading the view's
    /// columns, and copying or folding them into the caller's own state, is all it should
    /// do. Nothing of the row outlives the call.
    ///
    /// ```
    /// use std::ops::Bound;
    /// use minnow::{ColumnDef, ColumnType, Config, Database, Scan, TableDef, Value};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Database::create(dir.path(), Config::default())?;
    /// let t = db.create_table(
    ///     TableDef::new("kv")
    ///         .column(ColumnDef::new("k", ColumnType::U64))
    ///         .column(ColumnDef::new("v", ColumnType::Var(100)))
    ///         .primary_key(&["k"]),
    /// )?;
    /// for k in 0..10u64 {
    ///     t.insert(&[Value::UInt(k), Value::text(&"x".repeat(k as usize))])?;
    /// }
    /// // The total length of `v` over keys 3, 4 and 5, read without copying a value.
    /// let mut total = 0;
    /// let from = Bound::Included(vec![Value::UInt(3)]);
    /// let rows = t.scan_with(Scan::range(from, Bound::Unbounded).limit(3), |row| {
    ///     total += row.bytes(1)?.map_or(0, |b| b.len());
    ///     Ok(true)
    /// })?;
    /// assert_eq!((rows, total), (3, 3 + 4 + 5));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn scan_with(
        &self,
        scan: Scan,
        f: impl FnMut(&RowView<'_>) -> Result<bool>,
    ) -> Result<u64> {
        let snap = Snapshot::statement(self.db.inner()?);
        self.scan_with_in(&snap, &scan, f)
    }

    /// [`Table::scan_with`] as `snap` sees the table.
    pub(crate) fn scan_with_in(
        &self,
        snap: &Snapshot,
        scan: &Scan,
        f: impl FnMut(&RowView<'_>) -> Result<bool>,
    ) -> Result<u64> {
        scan_with::scan_with(self.db.inner()?, &self.t, snap, scan.args(), f)
    }
}

#[cfg(test)]
mod tests;
