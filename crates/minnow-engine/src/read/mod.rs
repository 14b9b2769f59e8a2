//! Consistent reads: which writers a snapshot sees, and the version of a clustered record it
//! sees, rebuilt from undo when the record is newer. The `minnow` crate's reads (point
//! reads, scans, counts, reads through a secondary index) decide visibility here; the step
//! back to an older version is the one rollback and purge share (the `row` module).

use minnow_btree::record::Value;
use minnow_mvcc::OpenView;

use crate::engine::Engine;
use crate::entry::TableEntry;
use crate::error::Result;
use crate::history::{Older, VersionWalk, sys_of};
// Shared with rollback (the `row` module).
use crate::row::step_back;

// ---- Consistent reads ----

/// Which writers' changes a read sees.
#[derive(Debug, Clone)]
pub enum Snapshot {
    /// A read view (a transaction's, or one taken for a single statement), registered with
    /// the transaction system while the snapshot lives, so purge keeps what it needs.
    View(OpenView),
}

impl Snapshot {
    /// True if this snapshot sees the changes of transaction `trx`.
    #[inline]
    pub fn sees(&self, trx: u64) -> bool {
        match self {
            Snapshot::View(v) => v.changes_visible(trx),
        }
    }

    /// Every transaction id below this one is seen (the view's up limit): what
    /// [`Snapshot::sees_page`] compares with, and the inline test of a count's walk.
    #[inline]
    pub fn up_limit(&self) -> u64 {
        match self {
            Snapshot::View(v) => v.up_limit(),
        }
    }

    /// True if every change on a secondary leaf whose `PAGE_MAX_TRX_ID` is `max_trx_id` is
    /// visible (the page shortcut of secondary-index reads).
    #[inline]
    pub fn sees_page(&self, max_trx_id: u64) -> bool {
        match self {
            Snapshot::View(v) => v.sees_page(max_trx_id),
        }
    }
}

/// The version of a clustered record that `snap` sees: the record itself, or one rebuilt
/// from undo by following roll pointers; `None` if no version is visible or the visible one
/// is delete-marked.
pub fn visible(
    inner: &Engine,
    t: &TableEntry,
    snap: &Snapshot,
    mut values: Vec<Value>,
    mut deleted: bool,
) -> Result<Option<Vec<Value>>> {
    let mut walk = VersionWalk::default();
    loop {
        let (trx, ptr) = sys_of(&t.meta, &values)?;
        if snap.sees(trx) {
            return Ok((!deleted).then_some(values));
        }
        walk.step(&t.meta, ptr)?;
        match step_back(inner, t, ptr, &values)? {
            Older::Version { rec, values: v } => (values, deleted) = (v, rec.old_deleted),
            Older::Inserted | Older::NoUndo | Older::Foreign { .. } => return Ok(None),
        }
    }
}
