//! Purge: removing what no reader can need any more.
//!
//! ## Why anything is left to remove
//!
//! Under MVCC a write never destroys the old version of a row, because a reader with an
//! older snapshot may still need it (see `minnow_mvcc`'s crate docs):
//!
//! - a **delete** only sets the clustered record's delete mark and writes delete-mark undo;
//! - an **update** keeps the old version in update undo, and if it changes a secondary
//!   index's columns it only delete-marks the old entry (and inserts the new one);
//! - every committed transaction with such undo joins the **history list** (in TRX_SYS), in
//!   commit order.
//!
//! Left alone, delete-marked records, old secondary entries and undo pages pile up for ever:
//! deleted rows never free their pages, B-tree pages never merge, the undo stream only
//! grows. **Purge** is the garbage collector that removes them once nobody can look.
//!
//! ## Why purge waits for the oldest read view
//!
//! "Nobody can look" is decided by read views. A reader's view sees a transaction's changes
//! if it committed before the view was taken. So purge takes the **oldest open view** (a
//! fresh one if none is open; [`minnow_mvcc::TrxSys::purge_view`]): whatever that view sees,
//! every open view and every future one sees too. A committed log whose commit number is
//! below the view's `low_limit_no` (InnoDB's rule) was committed before the oldest view was
//! taken: no reader will ever ask for the versions it holds. A log committed later may hold
//! the version the oldest reader sees, so purge stops at the first such log and waits. One
//! transaction that keeps a view open for an hour therefore holds back purge of everything
//! committed in that hour: the history list grows, and so does the work of every reader that
//! must walk back through the versions piled up in front of it (seed 004, "Open transactions
//! are bad"; experiment E9).
//!
//! ```text
//!  history list (commit order)     oldest view V: low_limit_no = 40
//!  ┌────────┬────────┬────────┬────────┐
//!  │ no 31  │ no 35  │ no 42  │ no 47  │
//!  └────────┴────────┴────────┴────────┘
//!   purged now ──────┘ └── wait: V may need the versions they replaced
//! ```
//!
//! ## What purging one log does
//!
//! For each undo record of the log (newest first; each is independent), holding the row's
//! lock (as a writer would: purge waits for the transaction that holds it, so it never sees
//! a row half-way through a statement, and its checks below hold until it acts) and its
//! table's metadata lock (so no DDL changes the trees meanwhile). Writers of other rows run
//! beside it:
//!
//! 1. **Secondary entries** of the old version the record leads back to (an update record
//!    holds it whole; a delete-mark record holds the key, and the version is the one the
//!    delete wrote, the clustered record or, after a re-insert, rebuilt from the newer undo,
//!    with the old system columns): an entry is removed if it
//!    is delete-marked and no version of the row that some view may still need has it. The
//!    versions checked are the clustered record as it is now and the older ones rebuilt from
//!    undo, walking back only while the purge view cannot see the writer of the version in
//!    hand (InnoDB's `row_purge_poss_sec` and `row_vers_old_has_index_entry`); behind a
//!    writer the purge view sees, nobody needs anything.
//! 2. **A delete-mark record**: if the clustered record is still delete-marked and still
//!    carries this transaction's id and this undo record's roll pointer, it is removed
//!    physically (with its off-page columns' pages, and merging pages as any delete does).
//!    If a later transaction changed the row since (it re-inserted the key), the later
//!    transaction's purge will deal with it.
//! 3. The log leaves the history list in one mtr ([`minnow_mvcc::TrxSys::finish_purge`]),
//!    then the dead head of the undo stream goes back to the undo segment
//!    ([`minnow_mvcc::TrxSys::trim`]), where appends find it again.
//!
//! Every step checks the state it acts on, so purging a record twice changes nothing the
//! second time: a power cut in the middle of a log leaves it at the head of the history list,
//! and the next purge (after `open`) does it again, correctly.
//!
//! ## Readers and purge
//!
//! Readers never wait for purge beyond page latches. A read through a secondary entry that
//! purge has just removed the clustered record of finds no row, which is what its view would
//! have decided anyway (it sees the delete). A walk back through versions without a view
//! (rollback's check of older versions) stops at a writer the last purge view sees, since
//! that writer's undo may already be gone ([`minnow_mvcc::TrxSys::undo_may_be_gone`]).
//!
//! ## Threads
//!
//! `Config::purge_threads` is 0 (no background purge: only [`Database::purge`] purges) or 1
//! (a background thread purges in batches of [`BATCH_LOGS`] logs, sleeping
//! [`IDLE_WAIT`] when there is nothing it may purge). More threads are refused: purge walks
//! the history in commit order, one log after another, so a second thread could only wait
//! for its turn. A row lock purge waits for longer than the lock wait timeout ends the batch
//! early; the log stays at the head of the history and the next batch does it again. [`Database::purge`] may run beside the thread; the two take
//! turns.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use minnow_btree::TreeError;
use minnow_btree::record::Value;
use minnow_mvcc::{LockMode, ReadView, RollPtr, TrxLocks, UndoAddr, UndoKind, UndoRecord};

use crate::db::Database;
use crate::error::{Error, Result, from_tree};
use crate::history::{VersionWalk, holds_whole, older_in_log, sys_of, version_before, version_of};
use crate::schema::PRIMARY;
use crate::trx::{key_of_undo, row_lock_key, sec, table_of};
use minnow_engine::{Engine, TableEntry};

pub use minnow_engine::purge::PurgeReport;

/// Logs the background thread purges before it looks for a newer purge view.
pub const BATCH_LOGS: usize = 32;
/// The lock manager's name for purge: a transaction id no transaction gets (ids fit in 48
/// bits). Purge holds one row lock at a time, so it is never part of a deadlock.
const PURGE_LOCKER: u64 = u64::MAX;
/// How long the background thread sleeps when it finds nothing to purge.
pub const IDLE_WAIT: Duration = Duration::from_millis(10);

impl Database {
    /// Purges now, on this thread, until the history list holds only logs that some open
    /// read view may still need (all of it if no view is open), then gives the dead head of
    /// the undo stream back to the undo segment. See the `purge` module docs. With
    /// `purge_threads = 1` a background thread does this continuously; this call is for
    /// `purge_threads = 0`, tests and benchmarks, and is safe beside the thread.
    pub fn purge(&self) -> Result<PurgeReport> {
        all(self.inner()?)
    }
}

/// [`Database::purge`] on the engine itself (also a slow shutdown's full purge).
pub(crate) fn all(inner: &Engine) -> Result<PurgeReport> {
    let mut total = PurgeReport::default();
    loop {
        let (r, more) = batch(inner, BATCH_LOGS)?;
        total.logs += r.logs;
        total.records += r.records;
        total.clustered_removed += r.clustered_removed;
        total.secondary_removed += r.secondary_removed;
        total.undo_pages_freed += r.undo_pages_freed;
        total.history_len = r.history_len;
        if !more {
            return Ok(total);
        }
    }
}

/// Starts the background purge thread if the configuration asks for one. It holds only a
/// weak reference to the database between batches, so it never keeps it alive.
pub(crate) fn start(inner: &Arc<Engine>) -> Result<()> {
    if inner.config().purge_threads == 0 {
        return Ok(());
    }
    let weak: Weak<Engine> = Arc::downgrade(inner);
    let counters = Arc::clone(inner.purge());
    counters.running.store(1, Ordering::Relaxed);
    let thread = std::thread::Builder::new()
        .name("minnow-purge".into())
        .spawn(move || {
            loop {
                if *counters.stop.lock() {
                    break;
                }
                let more = {
                    let Some(inner) = weak.upgrade() else {
                        break;
                    };
                    match batch(&inner, BATCH_LOGS) {
                        Ok((_, more)) => more,
                        Err(e) => {
                            counters.errors.fetch_add(1, Ordering::Relaxed);
                            *counters.last_error.lock() = Some(e.to_string());
                            break;
                        }
                    }
                };
                if !more {
                    let mut stop = counters.stop.lock();
                    if !*stop {
                        counters.wake.wait_for(&mut stop, IDLE_WAIT);
                    }
                }
            }
            counters.running.store(0, Ordering::Relaxed);
        })
        .map_err(|source| Error::Thread {
            thread: "purge",
            source,
        })?;
    *inner.purge().thread.lock() = Some(thread);
    Ok(())
}

/// Purges up to `max_logs` logs with one purge view, then trims the undo stream. Returns
/// what it did and whether it stopped at `max_logs` (more may be purgeable).
fn batch(inner: &Engine, max_logs: usize) -> Result<(PurgeReport, bool)> {
    let _turn = inner.purge().turn.lock();
    let trx_sys = inner.trx_sys();
    let pool = inner.pool();
    let view = trx_sys.purge_view();
    let mut r = PurgeReport::default();
    let mut more = false;
    loop {
        if r.logs as usize >= max_logs {
            more = true;
            break;
        }
        let Some((at, h)) = trx_sys.history_head(pool)? else {
            break;
        };
        if h.trx_no >= view.low_limit_no() {
            break;
        }
        if !purge_log(inner, &view, h.trx_id, h.last, &mut r)? {
            // A row lock held too long: the log stays at the head, the next batch does it
            // again (purging a record twice changes nothing).
            break;
        }
        // Under the quiesce latch, as `Database::check` reads the history and the undo
        // segment under it exclusively.
        let _q = inner.write_latch()?;
        trx_sys.finish_purge(pool, at)?;
        r.logs += 1;
    }
    r.undo_pages_freed = {
        let _q = inner.write_latch()?;
        trx_sys.trim(pool)?
    };
    r.history_len = trx_sys.status().history_len;
    inner.purge().add(&r);
    if r.logs > 0 || r.undo_pages_freed > 0 {
        minnow_buf::trace_event!(
            "purge",
            logs = r.logs,
            records = r.records,
            clustered_removed = r.clustered_removed,
            secondary_removed = r.secondary_removed,
            undo_pages_freed = r.undo_pages_freed,
            history_len = r.history_len
        );
    }
    Ok((r, more))
}

/// Purges every record of the log of transaction `trx_id` whose newest record is `last`;
/// false if a row lock wait timed out first (the log is left for the next batch).
fn purge_log(
    inner: &Engine,
    view: &ReadView,
    trx_id: u64,
    mut next: Option<UndoAddr>,
    r: &mut PurgeReport,
) -> Result<bool> {
    let mut below = u64::MAX;
    let mut locks = inner.locks().begin_background(PURGE_LOCKER);
    while let Some(at) = next {
        let probe = RollPtr {
            insert: false,
            rseg: 0,
            page: at.page,
            offset: at.offset,
        };
        let rec = inner.trx_sys().read(inner.pool(), probe)?;
        older_in_log(trx_id, at, &rec, &mut below)?;
        let ptr = RollPtr {
            insert: rec.kind == UndoKind::Insert,
            ..probe
        };
        let done = purge_record(inner, view, trx_id, ptr, &rec, r, &mut locks);
        locks.release_all();
        if !done? {
            return Ok(false);
        }
        r.records += 1;
        next = rec.prev;
    }
    Ok(true)
}

/// Purges one undo record, holding its row's lock; false if the lock wait timed out.
/// Idempotent.
///
/// The row lock comes first, taken holding nothing else (as a writer's wait): while purge
/// holds it no writer is half-way through changing the row (between reading the record and
/// writing it, or between finding an entry delete-marked and clearing the mark), so the
/// checks below hold until purge acts. Then the quiesce latch and the table's metadata lock,
/// shared, as a write statement takes them.
fn purge_record(
    inner: &Engine,
    view: &ReadView,
    trx_id: u64,
    ptr: RollPtr,
    rec: &UndoRecord,
    r: &mut PurgeReport,
    locks: &mut TrxLocks,
) -> Result<bool> {
    if rec.kind == UndoKind::Insert {
        // Insert undo serves rollback only; nothing in the indexes to remove.
        return Ok(true);
    }
    // A table dropped since has nothing left to purge.
    let Some(first) = table_of(inner, rec.index_id) else {
        return Ok(true);
    };
    let key = key_of_undo(&first, rec)?;
    if locks
        .lock(row_lock_key(&first, &key)?, LockMode::Exclusive)
        .is_err()
    {
        // Timed out (purge is never in a deadlock: it holds no other lock).
        return Ok(false);
    }
    let _q = inner.write_latch()?;
    let mdl = Arc::clone(&first.mdl);
    let _mdl = mdl.read();
    // Under the metadata lock the table's entry cannot change: the current one.
    let Some(t) = table_of(inner, rec.index_id) else {
        return Ok(true);
    };
    purge_row(inner, view, (trx_id, ptr), rec, r, &t, &key)?;
    Ok(true)
}

/// [`purge_record`]'s work on row `key` of table `t`, under the row lock and the table's
/// metadata lock.
/// `(trx_id, ptr)` are the purged transaction and the undo record's roll pointer.
fn purge_row(
    inner: &Engine,
    view: &ReadView,
    (trx_id, ptr): (u64, RollPtr),
    rec: &UndoRecord,
    r: &mut PurgeReport,
    t: &TableEntry,
    key: &[Value],
) -> Result<()> {
    let meta = &t.meta;
    let pool = inner.pool();
    let layout = t.clustered.layout();
    let old_row = if meta.secondary.is_empty() {
        Vec::new()
    } else if holds_whole(layout, rec) {
        meta.row_of(version_of(meta, layout, rec)?)?
    } else {
        // A delete-mark record holding the key alone.
        match written_by(inner, t, key, (trx_id, ptr))? {
            Some(newer) => meta.row_of(version_before(meta, layout, rec, &newer)?)?,
            // The version is gone: an earlier pass of this record removed the row, after
            // its entries (purge is idempotent).
            None => return Ok(()),
        }
    };
    for (i, s) in meta.secondary.iter().enumerate() {
        let (tree, name) = sec(t, i)?;
        let entry = meta.secondary_values(s, &old_row);
        match tree
            .get(pool, &entry)
            .map_err(|e| from_tree(e, meta.name(), name))?
        {
            Some(e) if e.deleted => {}
            _ => continue,
        }
        if needed(inner, t, view, i, &entry, key)? {
            continue;
        }
        match tree.delete(pool, &entry) {
            Ok(_) => r.secondary_removed += 1,
            Err(TreeError::NotFound { .. }) => {}
            Err(e) => return Err(from_tree(e, meta.name(), name)),
        }
    }
    if rec.kind != UndoKind::DeleteMark {
        return Ok(());
    }
    let Some(cur) = t
        .clustered
        .get(pool, key)
        .map_err(|e| from_tree(e, meta.name(), PRIMARY))?
    else {
        return Ok(());
    };
    // Only the delete this record describes, if nothing changed the row since.
    if cur.deleted && sys_of(&t.meta, &cur.values)? == (trx_id, ptr) {
        crate::trx::remove_record(inner, t, key, None, || {
            t.clustered
                .delete(pool, key)
                .map_err(|e| from_tree(e, meta.name(), PRIMARY))
        })?;
        r.clustered_removed += 1;
    }
    Ok(())
}

/// The version of row `key` that transaction `trx_id` wrote with roll pointer `ptr` (the one
/// a purged undo record leads back from): the clustered record, or an older version rebuilt
/// from undo if a later writer changed the row since (an insert over the delete-marked
/// record; that writer committed after `trx_id`, so purge has not freed its undo). `None` if
/// the row or the version is gone.
fn written_by(
    inner: &Engine,
    t: &TableEntry,
    key: &[Value],
    (trx_id, ptr): (u64, RollPtr),
) -> Result<Option<Vec<Value>>> {
    let Some(cur) = t
        .clustered
        .get(inner.pool(), key)
        .map_err(|e| from_tree(e, t.meta.name(), PRIMARY))?
    else {
        return Ok(None);
    };
    let mut values = cur.values;
    let mut walk = VersionWalk::default();
    loop {
        let (writer, at) = sys_of(&t.meta, &values)?;
        if (writer, at) == (trx_id, ptr) {
            return Ok(Some(values));
        }
        if !at.has_undo() || at.insert {
            return Ok(None);
        }
        walk.step(&t.meta, at)?;
        let rec = inner.trx_sys().read(inner.pool(), at)?;
        values = version_before(&t.meta, t.clustered.layout(), &rec, &values)?;
    }
}

/// True if some version of row `key` that a view may still need has `entry` in secondary
/// index `i`: the clustered record now, then older versions while the purge view cannot see
/// the writer of the version in hand.
fn needed(
    inner: &Engine,
    t: &TableEntry,
    view: &ReadView,
    i: usize,
    entry: &[Value],
    key: &[Value],
) -> Result<bool> {
    let meta = &t.meta;
    let Some(s) = meta.secondary.get(i) else {
        return Ok(false);
    };
    let Some(cur) = t
        .clustered
        .get(inner.pool(), key)
        .map_err(|e| from_tree(e, meta.name(), PRIMARY))?
    else {
        return Ok(false);
    };
    let (mut values, mut deleted) = (cur.values, cur.deleted);
    let mut walk = VersionWalk::default();
    loop {
        if !deleted {
            let row = meta.row_of(values.clone())?;
            if meta.secondary_values(s, &row) == entry {
                return Ok(true);
            }
        }
        let (writer, ptr) = sys_of(&t.meta, &values)?;
        if view.changes_visible(writer) || !ptr.has_undo() || ptr.insert {
            return Ok(false);
        }
        walk.step(&t.meta, ptr)?;
        let rec = inner.trx_sys().read(inner.pool(), ptr)?;
        values = version_before(&t.meta, t.clustered.layout(), &rec, &values)?;
        deleted = rec.old_deleted;
    }
}
