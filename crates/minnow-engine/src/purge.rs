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
//! `Config::purge_threads` is 0 (no background purge: only `Database::purge` purges) or 1
//! (a background thread purges in batches of [`BATCH_LOGS`] logs, sleeping
//! [`IDLE_WAIT`] when there is nothing it may purge). More threads are refused: purge walks
//! the history in commit order, one log after another, so a second thread could only wait
//! for its turn. A row lock purge waits for longer than the lock wait timeout ends the batch
//! early; the log stays at the head of the history and the next batch does it again.
//! `Database::purge` may run beside the thread; the two take turns.
//!
//! The report of one purge and the counters since open ([`PurgeCounters`], shared by the
//! purge thread, `Database::purge` and the status snapshot) are here too.

mod run;

pub(crate) use run::start;
pub use run::{BATCH_LOGS, IDLE_WAIT, all};

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
