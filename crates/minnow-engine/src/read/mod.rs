//! Consistent reads: the read path under the `minnow` crate's `Table` and `Transaction`
//! reads, which are thin wrappers over the functions here (the API types, the keys an
//! application gives and the owned rows it gets stay there).
//!
//! ```text
//!   get        point reads by primary key, in place under the leaf latch    latest, in_snapshot
//!   by_index   point reads through a unique secondary index                 unique
//!   scan       streaming scans of the primary key or a secondary index      primary, secondary
//!   scan_with  range reads in place, each row handed to a closure           scan_with
//!   count      the rows a snapshot sees, from the narrowest index           count
//!      │
//!   this module: which writers a snapshot sees (Snapshot), the version of a clustered
//!   record it sees (visible: rebuilt from undo when the record is newer, by the step back
//!   rollback and purge share, the `row` module), and every read's validation against DDL
//!   (validated, current: a read racing a drop or a load)
//! ```
//!
//! Each read takes the engine and the table's entry (`&Arc<TableEntry>`, the one the
//! caller's handle holds) and runs [`validated`]: on the entry if it is still the table's,
//! on the current one if a load replaced it, and ends with [`Error::TableChanged`] if DDL
//! dropped it meanwhile. An autocommit read is admitted (`innodb_thread_concurrency`) and
//! counted in the row counters here too, so the wrappers add nothing on the hot path.
//!
//! The locking reads (`get_for_update`, `scan_for_update`, `get_by_for_update`) are not
//! here: they take row locks and read the latest version, as writes do, and live with the
//! row writes ([`crate::write`]).

use std::sync::Arc;

use minnow_btree::record::Value;
use minnow_mvcc::OpenView;

use crate::engine::Engine;
use crate::entry::{EntryState, TableEntry};
use crate::error::{Error, Result};
use crate::history::{Older, RowHistory, VersionWalk, sys_of, walk};
// Shared with rollback (the `row` module).
use crate::row::step_back;

pub mod by_index;
pub mod count;
pub mod get;
pub mod scan;
pub mod scan_with;

// ---- Consistent reads ----

/// Which writers' changes a read sees.
#[derive(Debug, Clone)]
pub enum Snapshot {
    /// A read view (a transaction's, or one taken for a single statement), registered with
    /// the transaction system while the snapshot lives, so purge keeps what it needs.
    View(OpenView),
}

impl Snapshot {
    /// The snapshot of a statement outside a transaction: the shared statement read view
    /// (see `TrxSys::statement_view`).
    pub fn statement(inner: &Engine) -> Snapshot {
        Snapshot::View(inner.trx_sys().statement_view())
    }

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

/// The version chain of the row of table `t` with primary key `key`, newest first (see
/// [`crate::history::walk`]), validated against DDL; `None` if the table holds no record
/// with that key. Writes nothing and takes no lock.
pub fn row_history(
    inner: &Engine,
    t: &Arc<TableEntry>,
    key: &[Value],
) -> Result<Option<RowHistory>> {
    validated(inner, t, |t| {
        let Some(e) = get::newest_record(inner, t, key)? else {
            return Ok(None);
        };
        let trx_sys = inner.trx_sys();
        let history = walk(
            &**inner.pool(),
            trx_sys.page().space,
            &t.meta,
            t.clustered.layout(),
            e.values,
            e.deleted,
            &|id| trx_sys.is_active(id),
        )?;
        Ok(Some(history))
    })
}

// ---- Reads racing DDL ----

/// [`Error::TableChanged`] for the table of entry `t`.
pub fn changed(t: &TableEntry) -> Error {
    Error::TableChanged {
        table: t.meta.name().to_owned(),
    }
}

/// The entry of `t`'s table as the database holds it now. A table of the same name with
/// another clustered index is another table (this one was dropped and the name used again;
/// index ids are never reused, and `load` and `create_index` keep the id):
/// [`Error::TableChanged`], as when the name is gone.
pub fn current(inner: &Engine, t: &TableEntry) -> Result<Arc<TableEntry>> {
    inner.check_open()?;
    let now = inner.tables().read().get(t.meta.name()).cloned();
    match now {
        Some(now) if now.clustered.index_id() == t.clustered.index_id() => Ok(now),
        _ => Err(changed(t)),
    }
}

/// Runs read `f` on entry `t`, or on the table's current one if a bulk load replaced it,
/// and validates the read after it is done (the `ddl` module docs, "Reads racing a drop"):
/// if DDL dropped the entry meanwhile, the answer (or the error: a page that belongs to
/// another index) is [`Error::TableChanged`]; if a load replaced it, the read runs again on
/// the new entry.
#[inline]
pub fn validated<T>(
    inner: &Engine,
    t: &Arc<TableEntry>,
    mut f: impl FnMut(&Arc<TableEntry>) -> Result<T>,
) -> Result<T> {
    let mut fresh: Option<Arc<TableEntry>> = None;
    loop {
        let t = fresh.as_ref().unwrap_or(t);
        let r = (t.state() == EntryState::Live).then(|| f(t));
        match (t.state(), r) {
            (EntryState::Live, Some(r)) => return r,
            (EntryState::Dropped, _) => return Err(changed(t)),
            _ => fresh = Some(current(inner, t)?),
        }
    }
}
