//! Purge's work: a batch of logs, one log, one undo record, one row (the module docs of
//! [`crate::purge`] explain it), and the background thread.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use minnow_btree::TreeError;
use minnow_btree::record::Value;
use minnow_mvcc::{LockMode, ReadView, RollPtr, TrxLocks, UndoAddr, UndoKind, UndoRecord};

use super::PurgeReport;
use crate::engine::Engine;
use crate::entry::TableEntry;
use crate::error::{Error, Result, from_tree};
use crate::history::{VersionWalk, holds_whole, older_in_log, sys_of, version_before, version_of};
use crate::row::{key_of_undo, remove_record, row_lock_key, sec, table_of};
use crate::schema::PRIMARY;

/// Logs the background thread purges before it looks for a newer purge view.
pub const BATCH_LOGS: usize = 32;
/// The lock manager's name for purge: a transaction id no transaction gets (ids fit in 48
/// bits). Purge holds one row lock at a time, so it is never part of a deadlock.
const PURGE_LOCKER: u64 = u64::MAX;
/// How long the background thread sleeps when it finds nothing to purge.
pub const IDLE_WAIT: Duration = Duration::from_millis(10);

/// Purges now, on this thread, until the history list holds only logs that some open read
/// view may still need (all of it if no view is open), then gives the dead head of the undo
/// stream back to the undo segment (`Database::purge`, and a slow shutdown's full purge).
/// Safe beside the background thread: the two take turns.
pub fn all(inner: &Engine) -> Result<PurgeReport> {
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
        remove_record(inner, t, key, None, || {
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
