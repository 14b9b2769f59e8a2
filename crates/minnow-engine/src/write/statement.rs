//! A write statement on one table, as every write runs: the table's **current** entry, the
//! statement's latches held for its duration ([`WriteGuard`]: the quiesce latch, then the
//! table's metadata lock, both shared), and another transaction's bulk insert claim (the
//! [`super::bulk`] module) waited for with no latch held. An autocommit statement is a
//! transaction of its own: [`autocommit`] commits it, or rolls it back, when it ends; the
//! one-row autocommit writes ([`insert_one`], [`update_one`], [`keyed_one`]) are the
//! `minnow` crate's `Table::insert`, `update` and `delete` under their admission, row
//! counters and durability.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use minnow_btree::record::Value;
use minnow_redo::Lsn;

use crate::autoinc::AutoInc;
use crate::engine::Engine;
use crate::entry::{EntryState, TableEntry};
use crate::error::{Error, Result};
use crate::read;

use super::{TrxState, WriteGuard, bulk, insert, update};

/// The entry `t` as the database holds it now, checked live: [`Error::TableChanged`] if DDL
/// dropped it (for statements holding its metadata lock, under which it cannot change).
pub(crate) fn entry_now(inner: &Engine, t: &Arc<TableEntry>) -> Result<Arc<TableEntry>> {
    if t.dropped.load(Ordering::Acquire) {
        return Err(read::changed(t));
    }
    read::current(inner, t)
}

/// Runs write statement `f` on the current entry of `t`'s table for transaction `me` (0:
/// not yet known, as an autocommit statement's), holding a [`WriteGuard`] for its
/// duration. While another transaction claims the table for a bulk insert, the statement
/// waits for the claim to end, with no latch held, up to `lock_wait_timeout`
/// ([`Error::LockWaitTimeout`]).
pub fn statement<T>(
    inner: &Engine,
    t: &Arc<TableEntry>,
    me: u64,
    f: impl FnOnce(&Engine, &Arc<TableEntry>, &mut WriteGuard<'_>) -> Result<T>,
) -> Result<T> {
    if t.dropped.load(Ordering::Acquire) {
        return Err(read::changed(t));
    }
    // When the statement began waiting for a claim: read only if it waits (no clock read
    // per statement in the common case).
    let mut start = None;
    // Every entry of the table shares one metadata lock and one claim, so this handle's
    // are the table's.
    let mut w = loop {
        let w = WriteGuard::new(inner, &t.mdl, &t.claim)?;
        // Read under the metadata lock, which a claim is made under exclusively.
        let owner = t.claim.owner();
        if owner == 0 || owner == me {
            break w;
        }
        drop(w);
        let timeout = inner.locks().wait_timeout();
        let since = *start.get_or_insert_with(std::time::Instant::now);
        let holder = t.claim.wait(me, since, timeout);
        if holder != 0 {
            return Err(bulk::claim_timeout(
                t.meta.name(),
                me,
                holder,
                since.elapsed(),
            ));
        }
    };
    // Under it the entry cannot change: this handle's if it is still the table's (no
    // look-up, the common case), else the current one.
    let fresh;
    let t = match t.state() {
        EntryState::Live => t,
        _ => {
            fresh = entry_now(inner, t)?;
            &fresh
        }
    };
    #[cfg(feature = "test-hooks")]
    crate::hooks::hook(crate::hooks::Point::StatementLatched);
    let r = f(inner, t, &mut w);
    // After the statement's changes and before its transaction can commit (`count`).
    t.counted.changed();
    r
}

/// Ends an autocommit statement: commit if it succeeded (returning its value and the
/// commit's redo end), roll back (already done to the statement's start) and end the
/// transaction if it failed.
pub fn autocommit<T>(inner: &Engine, mut st: TrxState, r: Result<T>) -> Result<(T, Lsn)> {
    match r {
        Ok(v) => {
            let end = st.commit(inner)?.unwrap_or(st.end);
            Ok((v, end))
        }
        // A statement that found the database closed after a lock wait changes nothing
        // more: the next open's recovery rolls its transaction back.
        Err(e @ Error::Closed { .. }) => Err(e),
        Err(e) => {
            st.rollback(inner)?;
            Err(e)
        }
    }
}

/// One row of an insert statement into `t`'s table, as one autocommit transaction; returns
/// its redo end. `autoinc` is the table's counter when the statement began: an entry with
/// another one (DDL replaced the table meanwhile) is [`Error::TableChanged`]. The row gets
/// its auto-increment value from `reserved`, else from the counter (see
/// [`TableEntry::prepare_row`]).
pub fn insert_one(
    inner: &Engine,
    t: &Arc<TableEntry>,
    row: &[Value],
    autoinc: &Option<Arc<AutoInc>>,
    reserved: &mut Range<u128>,
    generated: &mut Vec<u64>,
) -> Result<Lsn> {
    // The entry as it is now: an index created since the caller's handle was made counts.
    statement(inner, t, 0, |inner, t, w| {
        let same = match (autoinc, &t.autoinc) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        if !same {
            return Err(Error::TableChanged {
                table: t.meta.name().to_owned(),
            });
        }
        let row = t.prepare_row(inner, row, reserved, generated)?;
        let mut st = TrxState::default();
        let r = st.statement(inner, |st| insert(inner, t, st, w, &row));
        Ok(autocommit(inner, st, r)?.1)
    })
}

/// Replaces the row with the same primary key as `row` in `t`'s table, as one autocommit
/// transaction (see [`update`]); returns its redo end.
pub fn update_one(inner: &Engine, t: &Arc<TableEntry>, row: &[Value]) -> Result<Lsn> {
    statement(inner, t, 0, |inner, t, w| {
        let row = t.meta.normalise_row(row)?;
        let mut st = TrxState::default();
        let r = st.statement(inner, |st| update(inner, t, st, w, &row));
        Ok(autocommit(inner, st, r)?.1)
    })
}

/// An autocommit statement on the row with primary key `key` (normalised here) of `t`'s
/// table that may find no row: `change` run as the statement of a transaction of its own.
/// Returns whether it found the row, and its redo end.
pub fn keyed_one(
    inner: &Engine,
    t: &Arc<TableEntry>,
    key: &[Value],
    change: impl FnOnce(
        &Engine,
        &TableEntry,
        &mut TrxState,
        &mut WriteGuard<'_>,
        &[Value],
    ) -> Result<bool>,
) -> Result<(bool, Lsn)> {
    statement(inner, t, 0, |inner, t, w| {
        let key = t.meta.normalise_key_cow(&t.meta.pk, key)?;
        let mut st = TrxState::default();
        let r = st.statement(inner, |st| change(inner, t, st, w, &key));
        autocommit(inner, st, r)
    })
}
