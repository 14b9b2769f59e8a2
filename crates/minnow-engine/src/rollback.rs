//! Undoing a transaction: a statement back to its savepoint, a whole transaction, or one
//! found active at open. Each undo record is undone idempotently, then popped from the log
//! in its own mini-transaction.
//!
//! A statement starts at a **savepoint** (the undo number of its first record); if it fails
//! halfway, its records are undone newest first and it leaves no trace. A transaction's
//! rollback undoes all its records; `open` rolls back every transaction it finds active
//! (`recover_rollback`). Undoing a record is idempotent (it acts only if the clustered
//! record's roll pointer still points at that undo record), and each undone record is then
//! popped from the log in its own mini-transaction, so a crash during a rollback just means
//! the rollback runs again at the next open. The secondary entries are put right *before*
//! the clustered record (whose restored roll pointer marks the record as undone):
//!
//! - the new row's entry, if it differs from the old row's, is removed, or only
//!   delete-marked if some older version of the row still has it;
//! - the old row's entry is un-marked (or stays delete-marked if the old row was deleted).
//!
//! The writes this undoes are the [`crate::write`] module's (its docs, "What a write
//! does"); the steps both share are [`crate::row`]'s.

use minnow_btree::TreeError;
use minnow_btree::record::Value;
use minnow_mvcc::{RollPtr, UndoKind, UndoLog, UndoRecord};

use crate::engine::Engine;
use crate::entry::TableEntry;
use crate::error::{Result, from_tree};
use crate::history::{Older, VersionWalk, older_in_log, sys_of, version_before};
use crate::row::{clustered_record, key_of_undo, remove_record, sec, step_back, table_of};
use crate::schema::PRIMARY;

/// Rolls back a transaction found active at open; returns the records undone.
pub(crate) fn recover_rollback(inner: &Engine, mut log: UndoLog) -> Result<u64> {
    let n = rollback_log(inner, &mut log, 0)?;
    let end = inner.trx_sys().finish_rollback(inner.pool(), &log)?;
    inner
        .pool()
        .commit_durable(end, minnow_redo::FlushAtCommit::Sync)?;
    Ok(n)
}

/// Undoes every record of `log` from `savepoint` on, newest first, popping each; returns
/// the records undone. The caller holds the quiesce latch shared (each undone record takes
/// its table's metadata lock).
pub fn rollback_log(inner: &Engine, log: &mut UndoLog, savepoint: u64) -> Result<u64> {
    let mut n = 0;
    let mut below = u64::MAX;
    while let Some((ptr, rec)) = inner.trx_sys().last_record(inner.pool(), log, savepoint)? {
        let at = minnow_mvcc::UndoAddr {
            page: ptr.page,
            offset: ptr.offset,
        };
        older_in_log(log.trx_id, at, &rec, &mut below)?;
        undo_record(inner, &rec, ptr, log.trx_id)?;
        inner.trx_sys().pop(inner.pool(), log, &rec)?;
        n += 1;
    }
    Ok(n)
}

// ---- Undoing one record ----

/// Undoes one undo record of transaction `me` (idempotent: acts only if the record's roll
/// pointer still points at it). The secondary leaves it changes get `me` as their
/// `PAGE_MAX_TRX_ID`, as every change on a transaction's behalf does.
fn undo_record(inner: &Engine, rec: &UndoRecord, ptr: RollPtr, me: u64) -> Result<()> {
    // A table dropped since has nothing left to undo.
    let Some(first) = table_of(inner, rec.index_id) else {
        return Ok(());
    };
    // The table's metadata lock, shared, so no DDL changes its trees under the undo. A
    // statement rolling back to its savepoint holds it already (hence recursive: a DDL
    // statement waiting for it must not block the holder's second hold).
    let mdl = std::sync::Arc::clone(&first.mdl);
    let _mdl = mdl.read_recursive();
    // Under it the table's entry cannot change: the current one (an index created between
    // the look-up and the lock counts).
    let Some(t) = table_of(inner, rec.index_id) else {
        return Ok(());
    };
    let meta = &t.meta;
    let pool = inner.pool();
    let key = key_of_undo(&t, rec)?;
    let Some(cur) = clustered_record(inner, &t, &key)? else {
        return Ok(());
    };
    let (_, cur_ptr) = sys_of(&t.meta, &cur.values)?;
    if cur_ptr != ptr {
        return Ok(());
    }
    let new_row = meta.row_of(cur.values.clone())?;
    match rec.kind {
        UndoKind::Insert => {
            for (i, s) in meta.secondary.iter().enumerate() {
                let (tree, name) = sec(&t, i)?;
                match tree.delete_trx(pool, &meta.secondary_values(s, &new_row), me) {
                    Ok(_) | Err(TreeError::NotFound { .. }) => {}
                    Err(e) => return Err(from_tree(e, meta.name(), name)),
                }
            }
            remove_record(inner, &t, &key, Some(me), || {
                t.clustered
                    .delete(pool, &key)
                    .map_err(|e| from_tree(e, meta.name(), PRIMARY))
            })?;
        }
        UndoKind::Update | UndoKind::DeleteMark => {
            // `cur` is the version `rec` leads back from (its roll pointer is `ptr`).
            let old_values = version_before(&t.meta, t.clustered.layout(), rec, &cur.values)?;
            let old_row = meta.row_of(old_values.clone())?;
            for (i, s) in meta.secondary.iter().enumerate() {
                let (tree, name) = sec(&t, i)?;
                let e_old = meta.secondary_values(s, &old_row);
                let e_new = meta.secondary_values(s, &new_row);
                if e_new != e_old {
                    let exists = tree
                        .get(pool, &e_new)
                        .map_err(|e| from_tree(e, meta.name(), name))?
                        .is_some();
                    if exists {
                        if older_version_has(inner, &t, &old_values, i, &e_new)? {
                            tree.set_delete_mark_trx(pool, &e_new, true, me)
                                .map_err(|e| from_tree(e, meta.name(), name))?;
                        } else {
                            tree.delete_trx(pool, &e_new, me)
                                .map_err(|e| from_tree(e, meta.name(), name))?;
                        }
                    }
                }
                match tree
                    .get(pool, &e_old)
                    .map_err(|e| from_tree(e, meta.name(), name))?
                {
                    Some(e) if e.deleted != rec.old_deleted => {
                        tree.set_delete_mark_trx(pool, &e_old, rec.old_deleted, me)
                            .map_err(|e| from_tree(e, meta.name(), name))?;
                    }
                    Some(_) => {}
                    None if !rec.old_deleted => {
                        tree.insert_trx(pool, &e_old, me)
                            .map_err(|e| from_tree(e, meta.name(), name))?;
                    }
                    None => {}
                }
            }
            let done = match rec.kind {
                // A delete-mark changed no field: only the mark and the system columns go
                // back, in place (off-page fields are not written again).
                UndoKind::DeleteMark => t.clustered.stamp_marked(
                    pool,
                    &key,
                    rec.old_trx_id,
                    rec.old_roll_ptr.to_u64(),
                    Some(rec.old_deleted),
                ),
                _ => t
                    .clustered
                    .update_marked(pool, &old_values, Some(rec.old_deleted)),
            };
            done.map_err(|e| from_tree(e, meta.name(), PRIMARY))?;
        }
    }
    Ok(())
}

/// True if a version of the row older than `newer` (clustered values, system columns
/// included) has `entry` in secondary index `i`. Versions behind a writer every reader sees
/// are needed by no one and their undo may be purged already: the walk stops there.
fn older_version_has(
    inner: &Engine,
    t: &TableEntry,
    newer: &[Value],
    i: usize,
    entry: &[Value],
) -> Result<bool> {
    let Some(s) = t.meta.secondary.get(i) else {
        return Ok(false);
    };
    let mut walk = VersionWalk::default();
    let mut newer = std::borrow::Cow::Borrowed(newer);
    loop {
        let (writer, ptr) = sys_of(&t.meta, &newer)?;
        if inner.trx_sys().undo_may_be_gone(writer) {
            return Ok(false);
        }
        walk.step(&t.meta, ptr)?;
        let Older::Version { rec, values } = step_back(inner, t, ptr, &newer)? else {
            return Ok(false);
        };
        let row = t.meta.row_of(values.clone())?;
        if !rec.old_deleted && t.meta.secondary_values(s, &row) == entry {
            return Ok(true);
        }
        newer = std::borrow::Cow::Owned(values);
    }
}
