//! Range reads in place ([`scan_with`], under the `minnow` crate's `Table::scan_with` and
//! `Transaction::scan_with`): each row of a primary-key range handed to a closure as a
//! [`RowView`] on its latched leaf, the way a point read ([`super::get::with_view`]) hands
//! one.
//!
//! A streaming scan ([`super::scan`]) returns owned rows: every row it yields is decoded into a `Vec<Value>`, a
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
//! read decides it (the [`super::get`] module): a record written by a transaction the snapshot sees is
//! its own visible version. Only the others leave the latch, to be rebuilt from undo (which
//! reads other pages) as an owned row; the closure cannot tell the two apart, except by
//! speed. Nothing but the columns the closure reads is decoded.
//!
//! Rows are validated against DDL under the latch, before the closure sees them
//! (the `ddl` module docs, "Reads racing a drop": a page freed by a drop was changed under
//! its latch after the drop's flag was set, so a reader holding the latch that finds the flag clear
//! reads a page the table still owns). A scan whose table is dropped or replaced under it ends
//! with [`crate::Error::TableChanged`] after the rows it handed out; one replaced by a load before
//! its first row starts again on the new table.

use std::sync::Arc;

use minnow_btree::record::Value;
use minnow_btree::{ScanRange, TreeError, Visit};

use super::get::RowView;
use super::scan::{ScanArgs, pk_bounds};
use super::{Snapshot, changed, validated, visible};
use crate::admission::Ticket;
use crate::engine::Engine;
use crate::entry::{EntryState, TableEntry};
use crate::error::{Error, Result, from_tree};
use crate::schema::PRIMARY;
use crate::status::RowOp;

/// Runs `f` on each row of the primary-key range of `scan` in table `t` that `snap` sees,
/// in place (see the module docs), until `f` returns false or the scan's limit; validated
/// against DDL, admitted and counted a row at a time. Returns how many rows `f` got.
pub fn scan_with(
    inner: &Engine,
    t: &Arc<TableEntry>,
    snap: &Snapshot,
    scan: ScanArgs<'_>,
    mut f: impl FnMut(&RowView<'_>) -> Result<bool>,
) -> Result<u64> {
    let mut admitted = inner.admission().enter();
    admitted.row();
    let mut handed = 0;
    let r = validated(inner, t, |t| {
        if handed > 0 {
            // Replaced after rows went out: starting again would hand them out twice.
            return Err(changed(t));
        }
        scan_with_entry(inner, t, snap, scan, &mut f, &mut admitted, &mut handed)
    });
    inner.rows().bump(RowOp::Read, handed);
    r.map(|()| handed)
}

/// [`scan_with`] on entry `t`; `handed` counts the rows `f` got.
fn scan_with_entry(
    inner: &Engine,
    t: &TableEntry,
    snap: &Snapshot,
    scan: ScanArgs<'_>,
    f: &mut impl FnMut(&RowView<'_>) -> Result<bool>,
    admitted: &mut Ticket<'_>,
    handed: &mut u64,
) -> Result<()> {
    let meta = &t.meta;
    let (start, end) = pk_bounds(meta, scan)?;
    let mut range = ScanRange::new(start, end);
    range.reverse = scan.reverse;
    let mut cursor = t
        .clustered
        .cursor(range)
        .map_err(|e| from_tree(e, meta.name(), PRIMARY))?;
    let limit = scan.limit.unwrap_or(usize::MAX) as u64;
    let mut go = limit > 0;
    // A record too new for the view, copied out to be rebuilt after the latch is gone.
    let mut older: Option<(Vec<Value>, bool)> = None;
    let mut wait = false;
    while go {
        let more = cursor.visit_in(inner.pool(), |rec| -> Result<Visit, Failed> {
            if t.state() != EntryState::Live {
                return Err(Failed::Row(changed(t)));
            }
            let trx = rec.trx_id()?.unwrap_or(u64::MAX);
            if !snap.sees(trx) {
                let n = t.clustered.layout().fields().len();
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
            Failed::Tree(e) => from_tree(e, meta.name(), PRIMARY),
            Failed::Row(e) => e,
        })?;
        if std::mem::take(&mut wait) {
            admitted.row();
        }
        if let Some((values, deleted)) = older.take()
            && let Some(v) = visible(inner, t, snap, values, deleted)?
        {
            if t.state() != EntryState::Live {
                return Err(changed(t));
            }
            *handed += 1;
            go = f(&RowView::owned(meta, &meta.row_of(v)?))? && *handed < limit;
            admitted.row();
        }
        go &= more;
    }
    // The end is an answer too: one reached through a page a drop freed is not.
    if t.state() != EntryState::Live {
        return Err(changed(t));
    }
    Ok(())
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
