//! Row locks: which writer may change a record now, who may insert into a gap, who waits, and
//! who gives way.
//!
//! MVCC lets a reader go without locks: it reads the version its read view sees, rebuilt from
//! undo if a writer has moved on. Two *writers* of one row cannot both go ahead, though: the
//! second would overwrite a change the first may still roll back (a "dirty write"), or base its
//! new value on one that is about to change (a "lost update"). So every writer takes a lock on
//! each record it changes and keeps it until its transaction ends (strict two-phase locking).
//! A locking read of a range must also keep *new* rows out of it until it ends, or reading it
//! again would find a phantom: that is what gap locks are for.
//!
//! ## What is locked
//!
//! A lock names a [`LockKey`]: an index id and the key's encoded bytes (the primary key for a
//! clustered record, the unique columns for a unique secondary entry), or the index's
//! [`LockKey::supremum`], which stands after its last record. The record need not exist: an
//! insert locks the key it is about to create, so a second transaction inserting the same key
//! waits and then sees the first one's outcome. Locks live in a hash table in memory only;
//! after a crash no transaction is left to hold them (recovery rolls back every transaction
//! that had not committed).
//!
//! ## Record, gap and next-key locks
//!
//! A lock on key K covers K's record, the gap before K (between K and the record before it),
//! or both ([`LockType`], InnoDB's precise modes):
//!
//! ```text
//!   index:   ... 10 ........ 20 ........ 30 ........ supremum
//!                   (10, 20)    (20, 30)   (30, +inf)
//!   Record(X) on 20:  20 only              Gap(X) on 30:      (20, 30) only
//!   NextKey(X) on 20: (10, 20] both        NextKey on supremum: (30, +inf): only a gap
//!   InsertIntention on 30: "I want to insert 25 into (20, 30)"
//! ```
//!
//! The hash table does not know which key comes before which: the caller walks the index and
//! names the successor of the gap it means. A locking range read takes next-key locks on every
//! record it reads and on the first record past the range (or the supremum); an insert of 25
//! asks for an insert intention on 30, its successor.
//!
//! ## Who waits for whom
//!
//! InnoDB's `lock_rec_has_to_wait`: a request waits for another transaction's lock on the same
//! key (granted, or asked for earlier) when, rows = requested, columns = the other lock:
//!
//! ```text
//!                    Record S  Record X  NextKey S  NextKey X  Gap S/X  InsertIntention
//!   Record S            -        wait       -         wait        -           -
//!   Record X           wait      wait      wait       wait        -           -
//!   NextKey S           -        wait       -         wait        -           -
//!   NextKey X          wait      wait      wait       wait        -           -
//!   Gap S/X             -         -         -          -          -           -
//!   InsertIntention     -         -        wait       wait       wait         -
//! ```
//!
//! Record parts conflict as shared and exclusive do; gap requests never wait (conflicting gap
//! locks coexist: they all mean "nobody inserts here"); an insert intention waits for any gap
//! or next-key lock of another transaction on its successor; nothing waits for an insert
//! intention, so inserters of different keys into one gap do not block each other. On the
//! supremum every lock is a gap lock. A transaction's own locks never block it.
//!
//! Under READ COMMITTED ([`LockManager::begin_read_committed`]) a transaction takes no gap
//! locks: next-key requests lock the record only, gap requests lock nothing. Its insert
//! intentions are still checked.
//!
//! ## Queues
//!
//! ```text
//!   one queue per key:   granted: [T5 NextKey X, T6 Gap S]
//!                        waiting: T9 Record S -> T7 InsertIntention -> T8 Record X
//! ```
//!
//! A transaction's locks on one key merge into one entry (the stronger mode of each part); a
//! transaction that already holds what it asks for gets it again at once. A request is granted
//! at once only if it waits for no other holder *and* no request queued before it, so a stream
//! of shared requests cannot starve an exclusive one. A transaction that already holds the key
//! (an upgrade, S to X, or gap to record) waits only for the other holders and goes to the
//! front of the queue. When a holder releases, every waiter that no longer waits for a holder
//! or a request ahead of it is granted (InnoDB's `lock_rec_grant`). A granted insert intention
//! leaves nothing behind: it was a check, and the inserter then locks its new record.
//!
//! ## Inheritance
//!
//! When a record is removed (purge, the rollback of an insert) or inserted, the gaps around it
//! change; [`LockManager::record_removed`] and [`LockManager::record_inserted`] move gap locks
//! to where the gaps now are, as InnoDB's `lock_rec_inherit_to_gap` does (see `inherit.rs`).
//!
//! ## Deadlocks
//!
//! A waiting transaction waits *for* the transactions that block it: the holders and the
//! requests ahead of it it must wait for. These edges form the wait-for graph, kept exact
//! as queues change. A transaction waits for one lock at a time, so a cycle closes when
//! someone starts waiting (then the graph is searched from the requester) or, rarely, when a
//! waiting transaction is *given* a gap lock by inheritance that a queued insert intention
//! must wait for (then the graph is searched from that queue's waiters). In a cycle, the
//! **youngest** transaction (the largest id, the one likely to have done the least work) is
//! the victim: if that is the requester, its request fails at once with
//! [`LockError::Deadlock`]; otherwise the victim's wait ends with that error. The victim's
//! caller must roll its transaction back, which releases its locks and lets the others go.
//! (InnoDB weighs transactions by the rows they changed and locked; the youngest is a simpler
//! stand-in with the same intent.) Two transactions that locked one gap and then both insert
//! into it are the classic case: each insert intention waits for the other's gap lock.
//!
//! ## What a long transaction costs the table
//!
//! A writer locks every row it changes, so a transaction that deletes 500,000 rows makes
//! 500,000 entries, each at a scattered place of a table far larger than the CPU's caches.
//! Two things keep that cheap. An entry is the key and, for the usual single holder with
//! nobody waiting, that holding alone (`queue::Slot`): 64 bytes, one cache line, written once;
//! a second holder or a waiter makes the key a full queue. And a transaction that ends
//! holding many keys, a good share of all the table holds, lets go of them in one pass over
//! the table in memory order instead of one probe per key, each a cache miss
//! ([`TrxLocks::release_all`]). InnoDB avoids most of those entries (see below); with them,
//! this keeps their cost near a cache miss per row.
//!
//! ## Timeouts
//!
//! A wait longer than the lock wait timeout (InnoDB's `innodb_lock_wait_timeout`) ends with
//! [`LockError::Timeout`], naming the key and the transactions that held it.
//!
//! ## What is not here
//!
//! No table or intention (IS/IX) locks: DDL is serialised by the database separately. No
//! implicit locks: a writer locks every record it changes explicitly (InnoDB's record written
//! by an active transaction is locked by its `DB_TRX_ID` alone, and an explicit lock is made
//! only when another transaction asks for it; that needs every locking path to read the
//! record before it asks the table). No page-level lock bitmaps: keys are hashed, so a B-tree
//! page split or merge moves no locks.
//!
//! ## Latch order
//!
//! One shard of the lock table (two, in shard order, for inheritance), then the wait-for
//! graph, then a waiter's state. The list of inherited locks is taken under the shards, after
//! the graph is let go, or alone. No path takes them in another order.

#[cfg(test)]
mod gap_tests;
mod graph;
mod inherit;
mod key;
mod manager;
mod mode;
mod queue;
#[cfg(test)]
mod tests;
mod trx;

use std::time::Duration;

pub use key::{LockKey, StoredFields};
pub use manager::LockManager;
pub use mode::{LockMode, LockType};
pub use trx::TrxLocks;

/// A transaction id, as the lock manager sees it.
pub type TrxId = u64;

/// Why a lock was not granted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LockError {
    /// Waiting would close a cycle of waits and this transaction was chosen to give way. Roll
    /// the transaction back (that releases its locks) and retry it if you like.
    #[error(
        "deadlock: transaction {trx} was chosen as the victim while waiting for {key} (cycle {cycle:?})"
    )]
    Deadlock {
        /// The victim (the caller's transaction).
        trx: TrxId,
        /// The key it wanted.
        key: LockKey,
        /// The transactions in the cycle, starting with the one that closed it.
        cycle: Vec<TrxId>,
    },
    /// The wait lasted longer than the lock wait timeout.
    #[error(
        "lock wait timeout: transaction {trx} waited {waited:?} for {key}, held by {holders:?}"
    )]
    Timeout {
        /// The caller's transaction.
        trx: TrxId,
        /// The key it wanted.
        key: LockKey,
        /// How long it waited.
        waited: Duration,
        /// The transactions holding the key when the wait ended.
        holders: Vec<TrxId>,
    },
}

/// Counters of a [`LockManager`], cheap to read at any time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LockStats {
    /// Requests that had to wait.
    pub waits: u64,
    /// Deadlocks found (each makes one victim).
    pub deadlocks: u64,
    /// Waits that ended in a timeout.
    pub timeouts: u64,
    /// Transactions waiting now.
    pub waiting: u64,
    /// Locks held now by transactions (one per transaction and key, inherited ones included;
    /// a background task's, see [`LockManager::begin_background`], are not counted).
    pub held: u64,
}
