//! [`Transaction`], the API of a transaction: its isolation level, its reads and writes, its
//! commit and rollback, each a thin wrapper over the engine.
//!
//! What a write does (undo first, then the clustered record, then the secondary entries),
//! the row and gap locks it takes, a statement's rollback and the bulk insert into an empty
//! table are the engine's `write` module (`minnow_engine::write`, whose module docs teach
//! them); the consistent reads and their visibility check are its `read` module. A
//! [`Transaction`] holds the engine's per-transaction state (`write::TrxState`) behind a
//! mutex, its read view, and a clone of the [`crate::Database`] that keeps the engine open.

mod transaction;
mod typed;

pub(crate) use minnow_engine::read::Snapshot;
pub use transaction::Transaction;

/// The isolation level of a [`Transaction`].
///
/// | anomaly | READ COMMITTED | REPEATABLE READ |
/// |---|---|---|
/// | dirty write | prevented (row locks) | prevented (row locks) |
/// | dirty read | prevented | prevented |
/// | lost update | possible | possible (as InnoDB: a write waits for the row's lock, then acts on the latest committed row); prevented by reading with [`Transaction::get_for_update`] |
/// | fuzzy (non-repeatable) read | possible | prevented |
/// | read skew | possible | prevented |
/// | phantom (consistent reads) | possible | prevented |
/// | phantom (locking reads: [`Transaction::scan_for_update`], [`Transaction::get_for_update`] of a missing row) | possible (record locks only) | prevented (next-key and gap locks: an insert into a range read waits until the reader ends) |
/// | write skew | possible | possible (snapshot isolation allows it; as InnoDB, plain reads take no locks); prevented by reading with the locking reads |
///
/// More levels may come (SERIALIZABLE): the enum is `#[non_exhaustive]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Isolation {
    /// A new read view for every statement: each read sees what was committed when it
    /// started.
    ReadCommitted,
    /// One read view, taken at the transaction's first consistent read, for all its reads
    /// (the default, as InnoDB's).
    #[default]
    RepeatableRead,
}
