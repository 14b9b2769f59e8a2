//! Lock inheritance: keeping gaps locked when records come and go.
//!
//! A gap lock names the record after the gap, so the gap changes when a neighbour does:
//!
//! ```text
//!   records:     10        20        30            T1 holds a gap lock on 20: (10, 20)
//!   purge removes 20:  10 ---------- 30            the gap is now (10, 30): 30 must carry
//!                                                  T1's lock, or 15 could be inserted
//!   insert 15:        10    15    20    30         (10, 20) split in two: 15 must carry
//!                                                  T1's lock too, or 12 could be inserted
//! ```
//!
//! [`LockManager::record_removed`] (InnoDB's `lock_rec_inherit_to_gap`, called when purge
//! removes a delete-marked record or a rollback removes an inserted one) gives the successor a
//! gap lock for every lock on the removed record, granted or waiting, except insert
//! intentions and the exclusive locks of READ COMMITTED transactions. The removed key keeps
//! its own locks: they lock the key, which an insert of the same key must still respect.
//! [`LockManager::insert_undone`] is the same for the rollback of an insert, without the
//! inserter's own lock on its record.
//!
//! [`LockManager::record_inserted`] (`lock_rec_inherit_to_gap_if_gap_lock`) gives a new record
//! a gap lock for every lock on its successor that covers the successor's gap: gap and
//! next-key locks, not record-only locks, not insert intentions. The inserter checked its
//! insert intention first, so these are locks granted since, or its own.
//!
//! The caller calls these while it holds what keeps the index from changing there (the page
//! latch), so no insert can slip into the gap between the change and the inheritance.
//!
//! An inherited lock belongs to a transaction that did not ask for it, so it is not in that
//! transaction's [`TrxLocks`](super::TrxLocks) list: the manager lists it, and the
//! transaction's `release_all` releases it with the rest. The two shards involved are latched
//! together (in shard order, as InnoDB latches two page shards), so a transaction cannot let
//! go of the lock it passes on before the inherited one is listed.

use std::sync::atomic::Ordering;

use super::manager::LockManager;
use super::mode::{Holding, Parts};
use super::queue::Slot;
use super::{LockKey, LockMode, TrxId};

impl LockManager {
    /// The record `removed` is gone from its index (purged, or its insert rolled back) and
    /// `successor` (the next record, or the index's supremum) now closes the gap it leaves:
    /// every transaction with a lock on `removed` gets a gap lock of the same strength on
    /// `successor` (see the module docs for the exceptions).
    pub fn record_removed(&self, removed: &LockKey, successor: &LockKey) {
        self.inherit(removed, successor, Holding::inherited_on_removal, None);
    }

    /// The rollback of `inserter`'s insert removed the record `removed`: as
    /// [`LockManager::record_removed`], except that the inserter's own lock on the record is
    /// not passed on. It stands for what InnoDB keeps implicit (a fresh record is locked by
    /// the id of the transaction that wrote it, not by a lock object), and InnoDB's rollback
    /// has no explicit lock there to pass on.
    pub fn insert_undone(&self, removed: &LockKey, successor: &LockKey, inserter: TrxId) {
        self.inherit(
            removed,
            successor,
            Holding::inherited_on_removal,
            Some(inserter),
        );
    }

    /// The record `inserted` was put into the gap before `successor`: every transaction whose
    /// lock on `successor` covers that gap gets a gap lock of the same strength on
    /// `inserted`.
    pub fn record_inserted(&self, inserted: &LockKey, successor: &LockKey) {
        self.inherit(successor, inserted, Holding::inherited_on_insert, None);
    }

    /// Gives a gap lock on `to` to every holder or waiter on `from` (but `skip`) for which
    /// `gap_of` says so.
    fn inherit(
        &self,
        from: &LockKey,
        to: &LockKey,
        gap_of: fn(Holding) -> Option<LockMode>,
        skip: Option<TrxId>,
    ) {
        if from == to {
            return;
        }
        let (a, b) = (Self::shard_no(from), Self::shard_no(to));
        let mut first = self.shard_at(a.min(b)).lock();
        let mut second = (a != b).then(|| self.shard_at(a.max(b)).lock());
        let from_table = match second.as_deref() {
            Some(t) if a > b => t,
            _ => &*first,
        };
        let Some(q) = from_table.get(from) else {
            return;
        };
        let gifts: Vec<Holding> = q
            .granted()
            .copied()
            .chain(
                q.waiting()
                    .filter(|w| !w.is_victim())
                    .map(|w| w.as_holding()),
            )
            .filter(|h| Some(h.trx) != skip)
            .filter_map(|h| {
                gap_of(h).map(|m| Holding {
                    parts: Parts {
                        gap: Some(m),
                        ..Parts::default()
                    },
                    ..h
                })
            })
            .collect();
        if gifts.is_empty() {
            return;
        }
        let to_table = match second.as_deref_mut() {
            Some(t) if b > a => t,
            _ => &mut *first,
        };
        let q = to_table
            .entry(to.clone())
            .or_insert_with(Slot::empty)
            .queue();
        let mut new: Vec<TrxId> = Vec::new();
        for g in gifts {
            if q.granted.grant(g) {
                new.push(g.trx);
            }
        }
        if !q.waiting.is_empty() {
            // A queued insert intention now waits for the new gap locks too, and their owners
            // may be waiting themselves: that can close a cycle no request closed.
            let mut graph = self.graph.lock();
            let victims = graph.refresh_and_break(q);
            self.deadlocks.fetch_add(victims, Ordering::Relaxed);
            #[cfg(test)]
            graph.check("inherit");
        }
        if !new.is_empty() {
            self.held.fetch_add(new.len() as u64, Ordering::Relaxed);
            let mut lists = self.inherited.lock();
            for t in new {
                lists.entry(t).or_default().push(to.clone());
                self.inherited_keys.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Releases the locks `trx` inherited, until none is left (releasing one cannot make new
    /// ones: inheritance copies only from keys `trx` still holds, and lists the copy before
    /// the shard of the original is let go).
    #[inline]
    pub(super) fn release_inherited(&self, trx: TrxId) {
        // The count is raised under the shard latch of a key `trx` held; `trx` released that
        // key under the same latch before coming here, so a zero means none of its own (the
        // common case, checked inline at every commit).
        if self.inherited_keys.load(Ordering::Relaxed) > 0 {
            self.release_inherited_slow(trx);
        }
    }

    #[cold]
    fn release_inherited_slow(&self, trx: TrxId) {
        while self.inherited_keys.load(Ordering::Relaxed) > 0 {
            let Some(keys) = self.inherited.lock().remove(&trx) else {
                break;
            };
            self.inherited_keys
                .fetch_sub(keys.len() as u64, Ordering::Relaxed);
            for key in &keys {
                self.release(trx, key);
            }
        }
    }
}
