//! # minnow-redo: the redo log
//!
//! **Write-ahead logging** is the rule that makes a storage engine crash-safe: before a changed
//! page may be written to its data file, a description of the change (a *redo record*) must be
//! durable in the log. Pages can then be written lazily, in any order, or be half-written when
//! the power goes: after a crash, replaying the log from the last checkpoint brings every page
//! up to date.
//!
//! ```text
//!   mtr commit ──► log buffer ──(group commit: one write + one sync for many commits)──► log file
//!                       │
//!                       └─ pages join the flush list ─► page cleaner writes pages, never
//!                                                        before their redo is durable
//!   checkpoint = oldest unflushed change; the log before it can be reused
//! ```
//!
//! - [`block`]: LSNs and the 512-byte blocks the log is written in;
//! - [`record`]: physical redo records and the group that makes a mini-transaction atomic;
//! - [`format`](mod@format): the file header, the two checkpoint slots, the block frame;
//! - [`log`]: the running log: append, group commit, `flush_log_at_trx_commit`, checkpoints,
//!   back-pressure (the reservations every mtr takes before it latches a page), poisoning
//!   after a failed sync;
//! - [`recover`]: finding the end of the log after a crash, telling a torn tail from damage,
//!   and handing complete groups to the caller to replay;
//! - [`scan`]: the read-only walk both recovery and `minnow log` make: each block's state,
//!   where the log ends and why, leftovers and damage after the end, the complete groups.
//!
//! The buffer pool (the crate above) owns mini-transactions and applies recovered groups to
//! pages; this crate knows nothing about pages beyond their ids and bytes.

#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod block;
pub mod format;
pub mod log;
pub mod record;
pub mod recover;
pub mod scan;

pub use block::Lsn;
pub use log::{Durability, FlushAtCommit, Log, LogError, LogStats, Reservation};
pub use record::Record;
pub use recover::{Recovered, RecoveryError, RecoverySink};
pub use scan::{Group, LogScan, ScanError};

#[cfg(test)]
mod scan_tests;
#[cfg(test)]
mod space_tests;
#[cfg(test)]
mod tests;
