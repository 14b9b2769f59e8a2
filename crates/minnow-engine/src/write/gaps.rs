//! Next-key locking on the clustered index: what makes a locking read phantom-free under
//! REPEATABLE READ, as InnoDB's.
//!
//! A row lock stops others from changing a row; it does not stop them from creating one. A
//! locking read of a range (`Transaction::scan_for_update`) or of a missing key
//! (`Transaction::get_for_update`) must also keep new rows out of what it read until it
//! ends, or reading again would find a phantom. So locks cover gaps too
//! (`minnow_mvcc::lock`): the gap before a record is locked by a lock on that record, and
//! the gap after the last record by a lock on the index's supremum.
//!
//! ```text
//!   records:           10          20          30          supremum
//!   scan_for_update 15..25:  reads 20, then 30 (the first record past the range), and takes
//!                            next-key locks on both: (10, 20] and (20, 30] are locked
//!   insert 25: its successor is 30; it asks for an insert intention on 30, which waits for
//!              the scan's next-key lock there: no phantom until the scan's transaction ends
//!   get_for_update 12 (no such row): a gap lock on 20, its successor: nobody inserts 12
//! ```
//!
//! Under READ COMMITTED none of this happens: the lock manager turns next-key requests into
//! record locks and drops gap requests (`LockManager::begin_read_committed`); inserts still
//! ask for their insert intention.
//!
//! ## The gap latch
//!
//! Keys are hashed in the lock table, so the record *after* a key is found in the B-tree, and
//! that answer must still hold when the lock is taken: InnoDB keeps the page latched across
//! both. minnow's B-tree calls latch pages only inside themselves, so the database has a
//! **gap latch** (`TableEntry::gaps`, a [`GapLatch`] every table's entry shares): 256
//! mutexes, and the one a step takes is picked by the lock key (index id and key) of the
//! record at the **right end of the gap** it works on (the record after the key, or the
//! supremum). Every step that finds a neighbour and locks by it
//! takes that stripe:
//!
//! - an insert of a new record: find its successor `n` (in the same descent as the duplicate
//!   check: `BTree::probe_insert`), latch `n`'s stripe, check `n` is still the successor (by
//!   the LSNs of the leaves the probe read; only if one moved, by probing again), check the
//!   insert intention on `n`, insert the record (into the probed leaf if it has not changed,
//!   without a second descent), and let it inherit `n`'s gap locks
//!   (`LockManager::record_inserted`);
//! - a locking read's step: find the next record `n`, latch `n`'s stripe, check it is still the
//!   next record, lock it, and read it again (a delete or update by the row's holder, which
//!   takes no gap latch, may have changed it before the lock);
//! - a removal of record `r` (purge of a delete-marked record, the rollback of an insert):
//!   latch `r`'s stripe, remove it and pass its locks to its successor as gap locks
//!   (`LockManager::record_removed`).
//!
//! Whatever changes which record ends a gap latches that record's stripe: an insert into the
//! gap before `n` latches `n`'s, the removal of `n` latches `n`'s. So while a step holds `n`'s
//! stripe, `n` stays the end of its gap, and the lookup, the lock and the insert act as one.
//! Inserts into different gaps (different threads' key ranges) take different stripes and
//! run side by side; inserts into one gap (appends at the end of a table all end at the
//! supremum) take turns, as InnoDB's appends take turns on the last leaf's latch.
//!
//! Nothing waits for a row lock while holding a stripe, and no step holds two: a step that
//! would wait lets the stripe go, waits (as any row lock wait, with the statement's latches
//! let go too), and then runs again from the start, since the neighbours may have changed
//! meanwhile.
//!
//! The latch is one for the whole database, not one per table: a step works on one table's
//! gap and never holds a stripe while it works on another table, so two tables' steps that
//! hash to the same stripe only take turns, as two gaps of one table do. A latch per table
//! (64 stripes, each alone on its cache line) cost 4 KiB of every table's 7.5 KiB in the
//! table cache, for tables never written as much as for busy ones (seed 004's complaint
//! about InnoDB's dictionary memory; EXPERIMENTS.md, "Dictionary memory per table").

use std::ops::Bound;

use minnow_btree::Entry;
use minnow_btree::record::Value;
use minnow_btree::tree::{InsertProbe, LeafHint};
use minnow_mvcc::{LockKey, LockMode, LockType, TrxLocks};

use crate::error::{Error, Result};
use crate::{Engine, TableEntry};

use super::*;

// Shared with rollback and purge (the engine's `row` module).
use crate::row::{first_in, pk_of_entry, successor_key};

/// The transaction's locks (it becomes a writer, with an id, if it was not one).
pub(super) fn locks_of<'a>(inner: &Engine, trx: &'a mut TrxState) -> Result<&'a mut TrxLocks> {
    trx.writer(inner)?;
    trx.locks.as_mut().ok_or(Error::TransactionEnded)
}

/// The lock key of the record that ends the gap `probe` found (its successor), or the
/// index's supremum.
fn gap_end(t: &TableEntry, probe: &InsertProbe) -> Result<LockKey> {
    match &probe.successor {
        Some(k) => Ok(stored_lock_key(t.meta.index_id, k.fields())),
        None => Ok(LockKey::supremum(t.meta.index_id)),
    }
}

/// Inserts the new clustered record of primary key `pk` by running `insert` (which writes the
/// undo record and the record, given the leaf hint), after the insert intention on its
/// successor: if another transaction locks the gap, this waits (the latch let go) and looks
/// again. The new record inherits the gap locks of its successor (granted since the check, or
/// the inserter's own).
///
/// `found` is the probe the caller made (one descent, [`super::rows::probe`]). Under the
/// stripe its answer is checked by the LSNs of the pages it read, without a descent
/// ([`InsertProbe::still_valid`]); only if one moved does the probe run again, and if the
/// successor changed the step starts over with the new one's stripe.
pub(super) fn insert_into_gap<T>(
    inner: &Engine,
    t: &TableEntry,
    trx: &mut TrxState,
    w: &mut WriteGuard<'_>,
    pk: &[Value],
    mut found: InsertProbe,
    insert: impl FnOnce(&mut TrxState, &LeafHint) -> Result<T>,
) -> Result<T> {
    let me = row_lock_key(t, pk)?;
    loop {
        let next = gap_end(t, &found)?;
        let gaps = t.gaps.latch(&next);
        if !found.still_valid(&t.clustered, inner.pool()) {
            found = super::rows::probe(inner, t, pk)?;
            if gap_end(t, &found)? != next {
                continue; // the gap changed before the latch: look again
            }
        }
        if locks_of(inner, trx)?.try_lock_as(&next, LockType::InsertIntention) {
            let out = insert(trx, found.hint())?;
            inner.locks().record_inserted(&me, &next);
            drop(gaps);
            return Ok(out);
        }
        drop(gaps);
        lock_as(inner, t, trx, w, &next, LockType::InsertIntention)?;
        found = super::rows::probe(inner, t, pk)?;
    }
}

/// Under REPEATABLE READ, locks the gap where the row `pk`, which has no live row (a locking
/// read or a write by key found none), would go, so that no other transaction inserts it
/// until this one ends: the gap before `pk`'s delete-marked record if it has one, else the
/// gap before its successor (a gap lock, which never waits). Under READ COMMITTED nothing.
pub(super) fn lock_absent(
    inner: &Engine,
    t: &TableEntry,
    trx: &mut TrxState,
    pk: &[Value],
) -> Result<()> {
    let locks = locks_of(inner, trx)?;
    if locks.skips_gap_locks() {
        return Ok(());
    }
    let end = || -> Result<LockKey> {
        let exact = Bound::Included(pk.to_vec());
        match first_in(inner, t, (exact.clone(), exact), Some(Vec::new()))? {
            Some(_) => row_lock_key(t, pk),
            None => successor_key(inner, t, pk),
        }
    };
    let (key, _gaps) = loop {
        let key = end()?;
        let gaps = t.gaps.latch(&key);
        if end()? == key {
            break (key, gaps);
        }
    };
    let locks = locks_of(inner, trx)?;
    // A gap-only request is granted at once: the answer is always yes.
    let granted = locks.try_lock_as(&key, LockType::Gap(LockMode::Exclusive));
    debug_assert!(granted, "a gap lock never waits");
    Ok(())
}

/// The rows of the primary key range `start..end` (normalised bounds), latest committed
/// versions (or the transaction's own), projected on `proj`, at most `limit` of them: a
/// locking read. Each record read gets an exclusive next-key lock, and so does the first
/// record past the range (or the supremum), so under REPEATABLE READ no other transaction can
/// change, delete, or insert a row into the range until this one ends. Delete-marked records
/// are locked but not returned. Under READ COMMITTED the records read get record locks only,
/// and nothing past the range is locked.
pub(super) fn scan_for_update(
    inner: &Engine,
    t: &TableEntry,
    trx: &mut TrxState,
    w: &mut WriteGuard<'_>,
    (start, end): (Bound<Vec<Value>>, Bound<Vec<Value>>),
    proj: &[usize],
    limit: Option<usize>,
) -> Result<Vec<Vec<Value>>> {
    let nk = LockType::NextKey(LockMode::Exclusive);
    // Only the projected columns' off-page fields are read.
    let fetch = Some(t.meta.stored_fields(proj));
    let mut from = start;
    let mut rows = Vec::new();
    // The next record from `from` on (within the range, else the first past it) and its
    // lock key.
    let next = |from: &Bound<Vec<Value>>| -> Result<(Option<Entry>, bool, LockKey)> {
        let (entry, past) = match first_in(inner, t, (from.clone(), end.clone()), fetch.clone())? {
            Some(e) => (Some(e), false),
            None => {
                let rest = (from.clone(), Bound::Unbounded);
                (first_in(inner, t, rest, Some(Vec::new()))?, true)
            }
        };
        let key = match &entry {
            Some(e) => row_lock_key(t, &pk_of_entry(t, e))?,
            None => LockKey::supremum(t.meta.index_id),
        };
        Ok((entry, past, key))
    };
    while limit.is_none_or(|n| rows.len() < n) {
        let (_, _, guess) = next(&from)?;
        let gaps = t.gaps.latch(&guess);
        let (entry, past, key) = next(&from)?;
        if key != guess {
            continue; // the gap changed before the latch: look again
        }
        let locks = locks_of(inner, trx)?;
        if past && locks.skips_gap_locks() {
            break;
        }
        if !locks.try_lock_as(&key, nk) {
            drop(gaps);
            lock_as(inner, t, trx, w, &key, nk)?;
            // The record may have changed or gone while this waited: read again.
            continue;
        }
        let Some(e) = entry.filter(|_| !past) else {
            break;
        };
        let pk = pk_of_entry(t, &e);
        // The record as it is now that it is locked: it was read before the lock, and a
        // writer that held the row then (a delete or an update takes no gap latch) may have
        // changed it and committed in between. Under the gap latch it is still there.
        let exact = Bound::Included(pk.clone());
        let Some(e) = first_in(inner, t, (exact.clone(), exact), fetch.clone())? else {
            return Err(Error::Corrupt {
                what: format!(
                    "table `{}`: record {pk:?} vanished under the gap latch",
                    t.meta.name()
                ),
            });
        };
        drop(gaps);
        // Holding the lock, the record is this transaction's or committed.
        conflict(inner, t, trx.id, &e.values, &pk)?;
        if !e.deleted {
            let row = t.meta.row_of(e.values)?;
            rows.push(proj.iter().filter_map(|&c| row.get(c).cloned()).collect());
        }
        from = Bound::Excluded(pk);
    }
    Ok(rows)
}
