//! [`BulkClaim`]: a transaction's exclusive claim on an empty table whose inserts it
//! buffers in memory and builds bottom-up at commit (the [`crate::write`] module's `bulk`
//! module has the design; this is the shared state every entry of a table carries).
//!
//! The claim is a table-level lock taken without any shared write on the ordinary write
//! path: a write statement on the table reads [`BulkClaim::owner`] (a load from a cache
//! line only claims and their ends write) under the table's metadata lock, held shared;
//! the claimer sets it under that lock held exclusively, after checking that the table is
//! empty and that nobody holds, waits for, or is about to wait for a row lock in it
//! ([`BulkClaim::pending`], counted only on the lock-wait path). So a statement that found
//! the table unclaimed finishes before any claim, and none starts writing while one lasts.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::entry::TableEntry;
use crate::error::{Error, Result};

/// The claim on one table (shared by every entry of the table, as its metadata lock is).
#[derive(Debug, Default)]
pub struct BulkClaim {
    /// The claiming transaction's id, 0 when unclaimed.
    owner: AtomicU64,
    /// Write statements on the table that let their latches go for a lock wait and have not
    /// come back yet: a claim waits until none is (see the module docs).
    pending: AtomicU64,
    /// Woken when a claim ends.
    ended: Condvar,
    /// The condition variable's mutex. It guards no data (the owner is an atomic): it only
    /// orders a waiter's check of `owner` before its sleep against `release`'s notify, so no
    /// wake-up is lost. Taken only by a statement waiting for another transaction's claim
    /// (holding no latch, as a row lock wait does) and by the claim's end; nothing else is
    /// taken under it, so it is a leaf of the latch order. Writers of an unclaimed table never
    /// touch it.
    lock: Mutex<()>,
}

impl BulkClaim {
    /// The claiming transaction, 0 if none.
    pub fn owner(&self) -> u64 {
        self.owner.load(Ordering::Acquire)
    }

    /// Statements of the table waiting for a row lock with their latches let go.
    pub fn pending(&self) -> u64 {
        self.pending.load(Ordering::Acquire)
    }

    /// Counts a statement that lets its latches go for a lock wait (before it does).
    pub fn wait_begins(&self) {
        self.pending.fetch_add(1, Ordering::AcqRel);
    }

    /// Uncounts it (after the wait, whatever its outcome).
    pub fn wait_ends(&self) {
        self.pending.fetch_sub(1, Ordering::AcqRel);
    }

    /// Claims the table for transaction `trx`; the caller holds the table's metadata lock
    /// exclusively and has checked that the claim is free and the table empty.
    pub fn claim(&self, trx: u64) {
        self.owner.store(trx, Ordering::Release);
    }

    /// Ends the claim of `trx` (nothing if it does not hold it) and wakes every waiter.
    pub fn release(&self, trx: u64) {
        if self
            .owner
            .compare_exchange(trx, 0, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            let _g = self.lock.lock();
            self.ended.notify_all();
        }
    }

    /// Waits, holding no latch, until no transaction but `me` claims the table or `timeout`
    /// has passed since `start`; returns the claimer still in the way (0 if none).
    pub fn wait(&self, me: u64, start: Instant, timeout: Duration) -> u64 {
        let deadline = start + timeout;
        let mut g = self.lock.lock();
        loop {
            let owner = self.owner();
            if owner == 0 || owner == me {
                return 0;
            }
            if self.ended.wait_until(&mut g, deadline).timed_out() {
                let owner = self.owner();
                return if owner == me { 0 } else { owner };
            }
        }
    }
}

/// The error of a statement that waited `waited` for transaction `holder`'s claim on
/// `table` (a DDL statement refused at once has waited zero).
pub(crate) fn claim_timeout(table: &str, me: u64, holder: u64, waited: Duration) -> Error {
    Error::LockWaitTimeout {
        trx: me,
        key: format!("table `{table}` (claimed by a bulk insert)"),
        waited,
        holders: vec![holder],
    }
}

/// [`claim_timeout`] at once if another transaction claims table `t`: DDL calls it holding
/// the table's metadata lock exclusively.
pub(crate) fn refuse_claimed(t: &TableEntry) -> Result<()> {
    match t.claim.owner() {
        0 => Ok(()),
        holder => Err(claim_timeout(t.meta.name(), 0, holder, Duration::ZERO)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waiter_goes_on_when_the_claim_ends_and_times_out_while_it_lasts() {
        let c = std::sync::Arc::new(BulkClaim::default());
        assert_eq!(c.wait(0, Instant::now(), Duration::ZERO), 0, "unclaimed");
        c.claim(7);
        assert_eq!(c.owner(), 7);
        // The claimer itself never waits; another times out naming it.
        assert_eq!(c.wait(7, Instant::now(), Duration::ZERO), 0);
        assert_eq!(c.wait(9, Instant::now(), Duration::from_millis(5)), 7);
        // Only the holder ends it.
        c.release(9);
        assert_eq!(c.owner(), 7);
        let waiter = {
            let c = std::sync::Arc::clone(&c);
            std::thread::spawn(move || c.wait(9, Instant::now(), Duration::from_secs(60)))
        };
        c.release(7);
        assert_eq!(waiter.join().unwrap(), 0);
        assert_eq!(c.owner(), 0);
        c.wait_begins();
        assert_eq!(c.pending(), 1);
        c.wait_ends();
        assert_eq!(c.pending(), 0);
    }
}
