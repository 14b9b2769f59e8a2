//! Purge's report and its counters since open ([`PurgeCounters`], shared by the purge
//! thread, `Database::purge` and the status snapshot). Purge itself (removing delete-marked
//! records, old secondary entries and committed undo no read view needs) runs in the
//! `minnow` crate's `purge` module, whose docs explain it.

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Condvar, Mutex};

/// What a purge did (one `Database::purge` call; the totals since open are in the
/// status's transactions section, [`crate::status::TransactionStatus`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PurgeReport {
    /// Undo logs taken off the history list.
    pub logs: u64,
    /// Undo records purged.
    pub records: u64,
    /// Delete-marked clustered records removed.
    pub clustered_removed: u64,
    /// Delete-marked secondary entries removed.
    pub secondary_removed: u64,
    /// Undo pages given back to the undo segment.
    pub undo_pages_freed: u64,
    /// The history list length afterwards.
    pub history_len: u64,
}

/// Purge's counters since open and the background thread's controls (shared with the thread
/// and the status file).
#[derive(Debug, Default)]
pub struct PurgeCounters {
    /// Undo logs taken off the history list.
    pub logs: AtomicU64,
    /// Undo records purged.
    pub records: AtomicU64,
    /// Delete-marked clustered records removed.
    pub clustered_removed: AtomicU64,
    /// Delete-marked secondary entries removed.
    pub secondary_removed: AtomicU64,
    /// Batches that purged at least one log or freed a page.
    pub batches: AtomicU64,
    /// Errors that stopped the background thread (0 or 1).
    pub errors: AtomicU64,
    /// 1 while the background thread runs.
    pub running: AtomicU64,
    /// The error that stopped the background thread, if one did.
    pub last_error: Mutex<Option<String>>,
    /// One purger at a time (the thread and `Database::purge` take turns): it guards the
    /// head of the history list, which a batch reads, purges and trims. Held for a whole
    /// batch, so it sits above everything purge takes (row locks, the quiesce latch, a
    /// metadata lock, page latches: docs/ARCHITECTURE.md, "The latch order", row 3b). No
    /// statement takes it, so it serialises purgers only, never readers or writers.
    pub turn: Mutex<()>,
    /// Set to stop the background thread.
    pub stop: Mutex<bool>,
    /// Wakes the background thread (to stop it) while it waits for work.
    pub wake: Condvar,
    /// The background thread, while it runs.
    pub thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl PurgeCounters {
    /// Adds one batch's report to the totals.
    pub fn add(&self, r: &PurgeReport) {
        self.logs.fetch_add(r.logs, Ordering::Relaxed);
        self.records.fetch_add(r.records, Ordering::Relaxed);
        self.clustered_removed
            .fetch_add(r.clustered_removed, Ordering::Relaxed);
        self.secondary_removed
            .fetch_add(r.secondary_removed, Ordering::Relaxed);
        if r.logs > 0 || r.undo_pages_freed > 0 {
            self.batches.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Stops the background thread, if any, and waits for it.
    pub fn stop(&self) {
        *self.stop.lock() = true;
        self.wake.notify_all();
        if let Some(t) = self.thread.lock().take() {
            let _ = t.join();
        }
    }
}
