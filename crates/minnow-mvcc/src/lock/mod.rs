//! Row locks: which writer may change a record now, who waits, and who gives way.
//!
//! MVCC lets a reader go without locks: it reads the version its read view sees, rebuilt from
//! undo if a writer has moved on. Two *writers* of one row cannot both go ahead, though: the
//! second would overwrite a change the first may still roll back (a "dirty write"), or base its
//! new value on one that is about to change (a "lost update"). So every writer takes a lock on
//! each record it changes and keeps it until its transaction ends (strict two-phase locking).
//!
//! ## What is locked
//!
//! A lock names a [`LockKey`]: an index id and the key's encoded bytes (the primary key for a
//! clustered record, the unique columns for a unique secondary entry). The record need not
//! exist: an insert locks the key it is about to create, so a second transaction inserting the
//! same key waits and then sees the first one's outcome. Locks live in a hash table in memory
//! only; after a crash no transaction is left to hold them (recovery rolls back every
//! transaction that had not committed).
//!
//! ## Modes and queues
//!
//! ```text
//!              held S   held X          one queue per key:
//!   want S       ok      wait             granted: [T5 X]
//!   want X      wait     wait             waiting: T9 X -> T7 S -> T8 S   (first come, first served)
//! ```
//!
//! A transaction that already holds a lock at least as strong gets it again at once. A request
//! is granted at once only if it is compatible with every other holder *and* nobody waits
//! ahead of it, so a stream of shared requests cannot starve an exclusive one. An upgrade (S
//! held, X wanted) waits only for the other holders and goes to the front of the queue. When
//! a holder releases, waiters at the front are granted for as long as they are compatible.
//!
//! ## Deadlocks
//!
//! A waiting transaction waits *for* the transactions that block it: the incompatible holders
//! and the incompatible waiters ahead of it. These edges form the wait-for graph, kept exact
//! as queues change. A transaction waits for one lock at a time, so a cycle can only close when
//! someone starts waiting; that is when the graph is searched. If the new edges close a cycle,
//! the **youngest** transaction in it (the largest id, the one likely to have done the least
//! work) is the victim: if that is the requester, its request fails at once with
//! [`LockError::Deadlock`]; otherwise the victim's wait ends with that error. The victim's
//! caller must roll its transaction back, which releases its locks and lets the others go.
//! (InnoDB weighs transactions by the rows they changed and locked; the youngest is a simpler
//! stand-in with the same intent.)
//!
//! ## Timeouts
//!
//! A wait longer than the lock wait timeout (InnoDB's `innodb_lock_wait_timeout`) ends with
//! [`LockError::Timeout`], naming the key and the transactions that held it.
//!
//! ## What is not here
//!
//! No gap or next-key locks: a locking read of a range does not stop another transaction from
//! inserting into it (phantoms are possible for writers; snapshot reads never see them). No
//! table or intention locks: DDL is serialised by the database separately.
//!
//! ## Latch order
//!
//! One shard of the lock table, then the wait-for graph, then a waiter's state; the per-
//! transaction lists are taken last and alone. No path takes them in another order.

mod graph;
mod key;
mod manager;
mod queue;
#[cfg(test)]
mod tests;

use std::time::Duration;

pub use key::LockKey;
pub use manager::{LockManager, TrxLocks};

/// A transaction id, as the lock manager sees it.
pub type TrxId = u64;

/// How strong a lock is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LockMode {
    /// Shared: others may hold shared locks on the key too.
    Shared,
    /// Exclusive: nobody else holds any lock on the key.
    Exclusive,
}

impl LockMode {
    /// True if two transactions may hold `self` and `other` on one key at once.
    pub fn compatible(self, other: LockMode) -> bool {
        self == LockMode::Shared && other == LockMode::Shared
    }

    /// True if holding `self` makes a request for `want` unnecessary.
    fn covers(self, want: LockMode) -> bool {
        self == LockMode::Exclusive || want == LockMode::Shared
    }
}

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
    /// Locks held now (one per transaction and key).
    pub held: u64,
}
