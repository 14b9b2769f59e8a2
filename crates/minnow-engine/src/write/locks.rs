//! Row locks as the writes take them: the lock key of an index key, and taking it (waiting
//! with the statement's latches let go, so the holder can finish).

use std::sync::atomic::Ordering;

use minnow_btree::record::Value;
use minnow_mvcc::{LockKey, LockMode, LockType};

use crate::error::{Error, Result};
use crate::history::sys_of;
use crate::{Engine, TableEntry};

use super::*;

// Shared with rollback and purge (the engine's `row` module).
pub(crate) use crate::row::{lock_key, row_lock_key};

pub(super) fn conflict(
    inner: &Engine,
    t: &TableEntry,
    me: u64,
    values: &[Value],
    key: &[Value],
) -> Result<()> {
    let (w, _) = sys_of(&t.meta, values)?;
    conflict_with(inner, t, me, w, key)
}

/// [`conflict`] for a record last written by transaction `w`.
pub(super) fn conflict_with(
    inner: &Engine,
    t: &TableEntry,
    me: u64,
    w: u64,
    key: &[Value],
) -> Result<()> {
    if w != me && w != 0 && inner.trx_sys().is_active(w) {
        return Err(Error::WriteConflict {
            table: t.meta.name().to_owned(),
            key: key.to_vec(),
            holder: w,
        });
    }
    Ok(())
}

// ---- Row locks ----

/// The lock key of a key given as the index stores its fields (what a B-tree search key
/// holds): the same bytes [`lock_key`] builds from values.
pub(super) fn stored_lock_key(index_id: u64, fields: &[Option<Vec<u8>>]) -> LockKey {
    LockKey::of_stored(index_id, fields)
}

/// Takes `ty` on `key` for the transaction, waiting (with the statement's latches let go,
/// see [`WriteGuard::unlocked`]) while another transaction holds a lock it must wait for.
/// After a wait the table may have changed under the statement: a table dropped or reloaded
/// meanwhile is [`Error::TableChanged`]. The key is borrowed: the common case, granted at
/// once, copies it only into the lock table; a wait takes a copy of its own.
pub(super) fn lock_as(
    inner: &Engine,
    t: &TableEntry,
    trx: &mut TrxState,
    w: &mut WriteGuard<'_>,
    key: &LockKey,
    ty: LockType,
) -> Result<()> {
    let locks = locks_of(inner, trx)?;
    if locks.try_lock_as(key, ty) {
        return Ok(());
    }
    trx.waits += 1;
    let locks = trx.locks.as_mut().ok_or(Error::TransactionEnded)?;
    let granted = w.unlocked(|| locks.lock_as(key.clone(), ty));
    // Closed while this statement waited: it changes nothing more, not even to roll back.
    inner.check_open()?;
    granted?;
    if t.dropped.load(Ordering::Acquire) || t.superseded.load(Ordering::Acquire) {
        return Err(Error::TableChanged {
            table: t.meta.name().to_owned(),
        });
    }
    Ok(())
}

/// Takes `key` exclusively (a record lock) for the transaction, waiting as [`lock_as`] does.
pub(super) fn lock(
    inner: &Engine,
    t: &TableEntry,
    trx: &mut TrxState,
    w: &mut WriteGuard<'_>,
    key: &LockKey,
) -> Result<()> {
    lock_as(inner, t, trx, w, key, LockType::Record(LockMode::Exclusive))
}

/// Locks the row with primary key `pk`.
pub(super) fn lock_row(
    inner: &Engine,
    t: &TableEntry,
    trx: &mut TrxState,
    w: &mut WriteGuard<'_>,
    pk: &[Value],
) -> Result<()> {
    lock(inner, t, trx, w, &row_lock_key(t, pk)?)
}
