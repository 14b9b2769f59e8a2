//! # minnow-mvcc: transactions, undo and read views
//!
//! Multi-version concurrency control lets readers read without waiting for writers: a writer
//! changes the row in place, but first writes the **old version** to the undo store, and
//! each reader decides, from the id of the transaction that wrote a version, whether that
//! version is one it may see. If not, it walks back to an older version.
//!
//! ## Versions over time
//!
//! Every clustered record carries `DB_TRX_ID`, the transaction that wrote it, and
//! `DB_ROLL_PTR`, a [`RollPtr`] to the undo record that holds the version before it. Three
//! transactions change account 1:
//!
//! ```text
//!   time ───────────────────────────────────────────────────────────────►
//!   T5  insert (1, 100)  commit
//!   T7                          update to (1, 80) ....................... commit
//!   T9 (reader)                              begin, read: sees 100   read: still 100
//!
//!   clustered record now       undo store
//!   ┌────────────────────┐     ┌──────────────────────────────┐    ┌──────────────────┐
//!   │ 1 | T7 | ptr ──────┼────►│ update undo: old (1, 100),   │───►│ insert undo (T5) │
//!   │ balance 80         │     │ old trx T5, old ptr ─────────┼───►│ key 1            │
//!   └────────────────────┘     └──────────────────────────────┘    └──────────────────┘
//! ```
//!
//! T9's [`ReadView`] was taken while T7 was active, so T7's version is invisible to it; T9
//! follows the roll pointer and rebuilds `(1, 100)`, written by T5, which it sees. A version
//! whose undo record is an *insert* has nothing older: a reader that cannot see it finds no
//! row. A delete only sets the record's delete mark (and writes undo), so older readers still
//! find the row; physically removing it is purge's job.
//!
//! ## Isolation levels
//!
//! REPEATABLE READ (the default) takes one view at the transaction's first consistent read
//! and keeps it: every read sees the same snapshot. READ COMMITTED takes a fresh view per
//! statement. What each prevents is documented on the `minnow` API.
//!
//! ## Rollback
//!
//! The same undo records undo a transaction: newest first, an insert is removed, an update
//! or delete-mark gets its old values back, but only if the record's roll pointer still
//! points at that undo record, so undoing twice (a crash during rollback) changes nothing
//! the second time. A statement that fails halfway rolls back to its **savepoint**, the
//! undo number it started at. At startup, every transaction whose log is still active is
//! rolled back before the database is used.
//!
//! ## The pieces
//!
//! - [`trx_sys`]: transaction ids that survive a crash, the TRX_SYS page, the rollback
//!   segments (each with its own header page, undo stream, slots, history list and lock),
//!   undo logs, commit, read view registration, the purge view, trimming the undo streams.
//! - [`undo`]: undo pages, an undo stream, the undo record format, and [`PageSource`], through
//!   which both the engine (its buffer pool) and read-only tools (the files) read them.
//! - [`read_view`]: InnoDB's visibility rule.
//! - [`roll_ptr`]: the 56-bit roll pointer.
//! - [`lock`]: row locks for writers and locking reads: record, gap, next-key and
//!   insert-intention locks (InnoDB's rules), their inheritance when records come and go,
//!   queues, deadlock detection, lock wait timeouts.
//!
//! This crate knows pages and bytes, not tables: what a record's fields mean, and how
//! secondary indexes follow a clustered change, is the `minnow` crate's part.
//!
//! ## Purge
//!
//! Old versions cannot stay for ever. Every consistent read registers its view
//! ([`OpenView`]); [`TrxSys::purge_view`] is the oldest one, and a committed log whose commit
//! number is below its `low_limit_no` holds nothing any reader can ask for. The `minnow`
//! crate's purge (which knows what the records mean) removes what such a log describes and
//! takes it off its history list ([`TrxSys::finish_purge`]); the next log is always the one
//! with the smallest commit number over every rollback segment's list
//! ([`TrxSys::history_head`]). [`TrxSys::trim`] then gives the dead heads of the undo streams
//! back to the undo segment, where appends reuse them.
//!
//! The `minnow-engine` crate's row writes take the row locks of [`lock`] for every row and
//! unique key a writer changes.

#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]
#![deny(unsafe_code)]

pub mod error;
pub mod lock;
pub mod read_view;
pub mod roll_ptr;
pub mod trx_sys;
pub mod undo;

pub use error::{MvccError, Result};
pub use lock::{LockError, LockKey, LockManager, LockMode, LockStats, LockType, TrxLocks};
pub use read_view::ReadView;
pub use roll_ptr::{INSERT_FLAG, RollPtr, trx_id_from_field};
pub use trx_sys::{
    NewRecord, OpenView, SysPage, TrxStatus, TrxSys, UndoCheck, UndoLog, UndoTail, active_logs,
};
pub use undo::PageSource;
pub use undo::record::{LogHeader, LogState, UndoAddr, UndoFields, UndoKind, UndoRecord};
