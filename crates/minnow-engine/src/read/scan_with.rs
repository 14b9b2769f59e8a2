//! Range reads in place: [`Table::scan_with`] and [`crate::Transaction::scan_with`] hand each
//! row of a primary-key range to a closure as a [`RowView`] on its latched leaf, the way
//! [`Table::get_with`] hands one.
//!
//! [`Table::scan`] returns owned rows: every row it yields is decoded into a `Vec<Value>`, a
//! heap buffer per byte column. A caller that only looks at the rows (sums a column, copies
//! the bytes somewhere, compares them) pays for buffers it throws away. `scan_with` walks the
//! same range with the B-tree's in-place visit ([`minnow_btree::RangeCursor::visit_in`]):
//!
//! ```text
//!   scan_with(range, f) ── descent to the first leaf (shared latch coupling)
//!        │
//!        └── per record, under the leaf latch:
//!              DB_TRX_ID read as a number ── seen by the view? ── no ─► copy the record,
//!                    │ yes                                               release the latch,
//!              delete-marked? ── yes: skip                               rebuild the version
//!                    │ no                                                from undo, f(owned
//!              f(&RowView on the page)                                   view), continue
//! ```
//!
//! Whether a record is the version the reader sees is decided in place exactly as a point
//! read decides it (the `get` module): a record written by a transaction the snapshot sees is
//! its own visible version. Only the others leave the latch, to be rebuilt from undo (which
//! reads other pages) as an owned row; the closure cannot tell the two apart, except by
//! speed. Nothing but the columns the closure reads is decoded.
//!
//! Rows are validated against DDL under the latch, before the closure sees them
//! (`minnow-engine`'s `ddl` module docs, "Reads racing a drop": a page freed by a drop was changed under its latch
//! after the drop's flag was set, so a reader holding the latch that finds the flag clear
//! reads a page the table still owns). A scan whose table is dropped or replaced under it ends
//! with [`Error::TableChanged`] after the rows it handed out; one replaced by a load before
//! its first row starts again on the new table.

use minnow_btree::record::Value;
use minnow_btree::{ScanRange, TreeError, Visit};

use super::Table;
use super::get::RowView;
use super::scan::{Scan, pk_bounds};
use crate::error::{Error, Result, from_tree};
use crate::schema::PRIMARY;
use crate::status::RowOp;
use crate::trx::{self, Snapshot};
use minnow_engine::entry::EntryState;

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
        let snap = Snapshot::View(self.db.inner()?.trx_sys().statement_view());
        self.scan_with_in(&snap, &scan, f)
    }

    /// [`Table::scan_with`] as `snap` sees the table.
    pub(crate) fn scan_with_in(
        &self,
        snap: &Snapshot,
        scan: &Scan,
        mut f: impl FnMut(&RowView<'_>) -> Result<bool>,
    ) -> Result<u64> {
        let mut admitted = self.db.admit();
        admitted.row();
        let mut handed = 0;
        let r = self.read(|t| {
            if handed > 0 {
                // Replaced after rows went out: starting again would hand them out twice.
                return Err(t.changed());
            }
            t.scan_with_entry(snap, scan, &mut f, &mut admitted, &mut handed)
        });
        self.db.count_rows(RowOp::Read, handed);
        r.map(|()| handed)
    }

    /// [`Table::scan_with_in`] on this handle's entry; `handed` counts the rows `f` got.
    fn scan_with_entry(
        &self,
        snap: &Snapshot,
        scan: &Scan,
        f: &mut impl FnMut(&RowView<'_>) -> Result<bool>,
        admitted: &mut minnow_engine::admission::Ticket<'_>,
        handed: &mut u64,
    ) -> Result<()> {
        let inner = self.db.inner()?;
        let meta = &self.t.meta;
        let (start, end) = pk_bounds(meta, scan)?;
        let mut range = ScanRange::new(start, end);
        range.reverse = scan.reverse;
        let mut cursor = self
            .t
            .clustered
            .cursor(range)
            .map_err(|e| from_tree(e, self.name(), PRIMARY))?;
        let limit = scan.limit.unwrap_or(usize::MAX) as u64;
        let mut go = limit > 0;
        // A record too new for the view, copied out to be rebuilt after the latch is gone.
        let mut older: Option<(Vec<Value>, bool)> = None;
        let mut wait = false;
        while go {
            let more = cursor.visit_in(inner.pool(), |rec| -> Result<Visit, Failed> {
                if self.t.state() != EntryState::Live {
                    return Err(Failed::Row(self.changed()));
                }
                let trx = rec.trx_id()?.unwrap_or(u64::MAX);
                if !snap.sees(trx) {
                    let n = self.t.clustered.layout().fields().len();
                    let values = (0..n)
                        .map(|i| rec.value(i))
                        .collect::<std::result::Result<_, _>>()?;
                    older = Some((values, rec.deleted()));
                    return Ok(Visit::Pause);
                }
                if rec.deleted() {
                    return Ok(Visit::Next);
                }
                *handed += 1;
                go = f(&RowView::on_page(meta, rec)).map_err(Failed::Row)? && *handed < limit;
                if !go {
                    return Ok(Visit::Stop);
                }
                if !admitted.try_row() {
                    // Out of admission tickets: enter again off the latch, which may wait.
                    wait = true;
                    return Ok(Visit::Pause);
                }
                Ok(Visit::Next)
            });
            let more = more.map_err(|e| match e {
                Failed::Tree(e) => from_tree(e, self.name(), PRIMARY),
                Failed::Row(e) => e,
            })?;
            if std::mem::take(&mut wait) {
                admitted.row();
            }
            if let Some((values, deleted)) = older.take()
                && let Some(v) = trx::visible(inner, &self.t, snap, values, deleted)?
            {
                if self.t.state() != EntryState::Live {
                    return Err(self.changed());
                }
                *handed += 1;
                go = f(&RowView::owned(meta, &meta.row_of(v)?))? && *handed < limit;
                admitted.row();
            }
            go &= more;
        }
        // The end is an answer too: one reached through a page a drop freed is not.
        if self.t.state() != EntryState::Live {
            return Err(self.changed());
        }
        Ok(())
    }
}

/// Why a visit stopped with an error: the B-tree's (named with the table when it comes
/// back) or one of the scan's own.
enum Failed {
    Tree(TreeError),
    Row(Error),
}

impl From<TreeError> for Failed {
    fn from(e: TreeError) -> Failed {
        Failed::Tree(e)
    }
}

#[cfg(test)]
mod tests;
