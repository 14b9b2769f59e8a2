//! Typed errors of the embedded API.
//!
//! Every failure is a variant that says what went wrong and where: a table or column that does
//! not exist, a value of the wrong type, a duplicate key (naming the table, the index and the
//! key), a damaged page (naming the file, the page and both checksums), an IO failure, a
//! poisoned database (an earlier write or sync failed: reopen it), or a bad [`crate::Config`].

use std::path::PathBuf;

use minnow_btree::TreeError;
use minnow_btree::record::{Key, Value};
use minnow_buf::BufError;
use minnow_page::PageId;
use minnow_page::checksum::Corruption;

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in the embedded API. New variants may come in any release
/// (`#[non_exhaustive]`): a `match` needs a `_` arm. [`Error::is_retryable`] says which
/// ones a transaction may simply run again after.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A [`crate::Config`] knob has a value that cannot be used.
    #[error("bad configuration: {knob}: {reason}")]
    Config {
        /// The knob, by its `innodb_*` name.
        knob: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// `Database::create` on a directory that already holds a database, or `open` on one
    /// that does not.
    #[error("{}: {reason}", path.display())]
    Directory {
        /// The data directory.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The data directory is open in another handle (another process, or this one): only
    /// one may open a directory at a time (see `minnow_io::dirlock`). Also a `LOCK` file that
    /// cannot be created or locked (a read-only directory, a `LOCK` that is a directory).
    #[error(transparent)]
    Locked(#[from] minnow_io::DirLockError),
    /// No table of that name.
    #[error("no such table `{table}`")]
    NoSuchTable {
        /// The name asked for.
        table: String,
    },
    /// `create_table` with a name that exists.
    #[error("table `{table}` already exists")]
    TableExists {
        /// The table.
        table: String,
    },
    /// No column of that name in the table.
    #[error("no such column `{column}` in table `{table}`")]
    NoSuchColumn {
        /// The table.
        table: String,
        /// The name asked for.
        column: String,
    },
    /// No secondary index of that name on the table.
    #[error("no such index `{index}` on table `{table}`")]
    NoSuchIndex {
        /// The table.
        table: String,
        /// The name asked for.
        index: String,
    },
    /// `drop_index` of the primary key: a table's rows live in its clustered index, which
    /// goes only with the table (`drop_table`).
    #[error("cannot drop the PRIMARY index of table `{table}`; drop the table instead")]
    DropPrimary {
        /// The table.
        table: String,
    },
    /// A `Table` handle taken before a `drop_table` or `drop_index` of its table:
    /// take a new one with `Database::table`.
    #[error("table `{table}` was dropped or changed after this handle was taken")]
    TableChanged {
        /// The table.
        table: String,
    },
    /// A `Table` handle of one database passed to a `Transaction` of
    /// another: its rows live in the other database's pages, which this transaction's undo
    /// log, locks and commit do not cover. Nothing was read or written.
    #[error(
        "table `{table}` belongs to the database in {}, not to this transaction's database in {}",
        table_db.display(),
        trx_db.display()
    )]
    ForeignTable {
        /// The table.
        table: String,
        /// The data directory of the database the handle belongs to.
        table_db: PathBuf,
        /// The data directory of the transaction's database.
        trx_db: PathBuf,
    },
    /// A table definition that cannot be created.
    #[error("bad definition of table `{table}`: {reason}")]
    BadDefinition {
        /// The table.
        table: String,
        /// What is wrong.
        reason: String,
    },
    /// A value that does not fit its column (type, range, length, NULL in a NOT NULL column),
    /// or a row or key with the wrong number of values.
    #[error("type mismatch in table `{table}`, column `{column}`: {reason}")]
    TypeMismatch {
        /// The table.
        table: String,
        /// The column (empty when the number of values is wrong).
        column: String,
        /// What is wrong.
        reason: String,
    },
    /// A typed row (`row`) that does not fit the table: a value that does not
    /// convert to its field's type, a field whose column the table lacks, a NOT NULL column
    /// the type has no field for (`field` is empty then), an update without a primary key
    /// column.
    #[error("{}", row_type(ty, field, column, table, reason))]
    RowType {
        /// The table.
        table: String,
        /// The Rust type, without its module path (`Book`, `(u64, String)`).
        ty: String,
        /// The type's field (a position for a tuple; empty when the type has none for the
        /// column).
        field: String,
        /// The column.
        column: String,
        /// What is wrong (for a value, expected against found).
        reason: String,
    },
    /// An insert or update would give two rows the same primary key, or the same key of a
    /// unique secondary index.
    #[error("duplicate key {} in index `{index}` of table `{table}`", Key(key))]
    DuplicateKey {
        /// The table.
        table: String,
        /// The index (`PRIMARY` for the primary key).
        index: String,
        /// The key's values.
        key: Vec<Value>,
    },
    /// A row (or index entry) that cannot be stored: larger than about half a page even with
    /// its long columns on overflow pages (key columns never move), or with more off-page
    /// bytes than one mini-transaction may write (see the crate docs, "Column types and large
    /// rows").
    #[error(
        "a record of {len} bytes in index `{index}` of table `{table}` exceeds the {max}-byte maximum{reason}"
    )]
    RowTooLarge {
        /// The table.
        table: String,
        /// The index.
        index: String,
        /// The record's size in bytes.
        len: usize,
        /// The limit: the largest record the page size allows, or the most off-page bytes
        /// the buffer pool and redo log allow.
        max: usize,
        /// Which limit, when it is not the page size (empty otherwise, else `": ..."`).
        reason: String,
    },
    /// A row asked for an auto-increment value and the AUTO_INCREMENT column's type has
    /// none left (MySQL's error 1467).
    #[error(
        "AUTO_INCREMENT column `{column}` of table `{table}` has used up its range (largest value {max})"
    )]
    AutoIncrementExhausted {
        /// The table.
        table: String,
        /// The AUTO_INCREMENT column.
        column: String,
        /// The column type's largest value.
        max: u64,
    },
    /// `update` of a row that does not exist.
    #[error("no row with primary key {} in table `{table}`", Key(key))]
    RowNotFound {
        /// The table.
        table: String,
        /// The primary key.
        key: Vec<Value>,
    },
    /// A page failed its checksum and could not be repaired.
    #[error("corrupt page {page} ({}, page {page_no}): {corruption}", path.display())]
    CorruptPage {
        /// The page.
        page: PageId,
        /// The file.
        path: PathBuf,
        /// Its page number in the file.
        page_no: u32,
        /// Stored and computed checksums, LSNs.
        corruption: Corruption,
    },
    /// A structure is damaged: a B-tree page, a dictionary record, or an index that does
    /// not agree with its table (`Database::check`).
    #[error("corruption: {what}")]
    Corrupt {
        /// What is wrong, and where.
        what: String,
    },
    /// `Table::load` of a table that already has rows.
    #[error("table `{table}` is not empty: load needs an empty table")]
    TableNotEmpty {
        /// The table.
        table: String,
    },
    /// `Table::load` got rows out of primary key order.
    #[error(
        "rows out of order for load into table `{table}`: key {} after {}",
        Key(key),
        Key(previous)
    )]
    Unsorted {
        /// The table.
        table: String,
        /// The primary key that arrived out of order.
        key: Vec<Value>,
        /// The primary key before it.
        previous: Vec<Value>,
    },
    /// A writer found the row it changes, or a unique key it needs, last changed by another
    /// transaction that has not committed, although it holds the row's lock. Writers take
    /// row locks before they touch a row, so this is a consistency check that should never
    /// fire; the statement is rolled back.
    #[error(
        "table `{table}`: row {} is being changed by uncommitted transaction {holder}",
        Key(key)
    )]
    WriteConflict {
        /// The table.
        table: String,
        /// The row's primary key.
        key: Vec<Value>,
        /// The transaction that changed it.
        holder: u64,
    },
    /// Waiting for a row lock would have closed a cycle of waits, and this transaction was
    /// chosen to give way (the youngest in the cycle). Its whole transaction has been rolled
    /// back (an autocommit statement, or a `Transaction`, which is now ended).
    #[error("deadlock: transaction {trx} rolled back (waiting for {key}; cycle {cycle:?})")]
    Deadlock {
        /// The transaction rolled back.
        trx: u64,
        /// The lock it waited for (index id and encoded key).
        key: String,
        /// The transactions in the cycle.
        cycle: Vec<u64>,
    },
    /// A change left a page of a compressed table that does not compress into its
    /// `KEY_BLOCK_SIZE` block (a **compression failure** the B-tree could not answer by
    /// splitting the page). The statement's mini-transaction was undone, so nothing changed;
    /// a larger block size, or rows that compress better, avoid it.
    #[error(
        "table `{table}`, index `{index}`: page {page} does not compress into its {block}-byte block"
    )]
    DoesNotCompress {
        /// The table (empty when the failure was not traced to one, as for a change made
        /// outside any table's B-tree).
        table: String,
        /// The index (empty likewise).
        index: String,
        /// The page.
        page: PageId,
        /// The block size in bytes.
        block: usize,
    },
    /// A row lock stayed held by another transaction for longer than `lock_wait_timeout`. As
    /// in InnoDB, only the statement is rolled back; the transaction may go on or roll back.
    #[error(
        "lock wait timeout: transaction {trx} waited {waited:?} for {key}, held by {holders:?}"
    )]
    LockWaitTimeout {
        /// The waiting transaction.
        trx: u64,
        /// The lock it waited for (index id and encoded key).
        key: String,
        /// How long it waited.
        waited: std::time::Duration,
        /// The transactions that held it.
        holders: Vec<u64>,
    },
    /// A `Transaction` used after `commit` or `rollback`, or after a failed commit.
    #[error("the transaction has already ended")]
    TransactionEnded,
    /// `Table::get_by` through an index that cannot name at most one row: one that
    /// is not unique, or a key with a NULL in it (a unique index lets any number of rows have
    /// NULL there). A scan of the index (`Table::scan_index`) finds such rows.
    #[error("index `{index}` of table `{table}` cannot find one row by key: {reason}")]
    NotUniqueKey {
        /// The table.
        table: String,
        /// The index.
        index: String,
        /// Why not.
        reason: String,
    },
    /// `Table::update_columns` naming a primary key column: a row's key is where
    /// it lives in the clustered index, so InnoDB changes it by a delete and an insert; do
    /// that (`Table::delete`, `Table::insert`) in one transaction.
    #[error("cannot update primary key column `{column}` of table `{table}` in place")]
    PrimaryKeyUpdate {
        /// The table.
        table: String,
        /// The primary key column named.
        column: String,
    },
    /// The undo store or the transaction system failed (a corrupt undo page names the page,
    /// offset, what was expected and what was found).
    #[error(transparent)]
    Undo(minnow_mvcc::MvccError),
    /// An earlier write or sync failed; nothing more can be made durable. Reopen the database.
    #[error("the database is poisoned by an earlier failed write or sync; reopen it")]
    Poisoned,
    /// File IO failed.
    #[error(transparent)]
    Io(#[from] minnow_io::IoError),
    /// A background thread (purge, the log flusher) could not be started.
    #[error("cannot start the {thread} thread: {source}")]
    Thread {
        /// Which thread.
        thread: &'static str,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// Another failure of the storage layers (redo log, doublewrite buffer, recovery, a
    /// buffer pool whose frames are all pinned).
    #[error(transparent)]
    Storage(BufError),
    /// A call of the async handle (`AsyncDatabase`, feature `tokio`) whose blocking task did
    /// not finish: it panicked, or the runtime shut down before it ran. The statement may
    /// or may not have happened, as after a crash of that one call.
    #[error("the blocking task of an async call did not finish: {reason}")]
    TaskFailed {
        /// What the runtime said.
        reason: String,
    },
    /// The database was closed (`Database::close`, through this handle or another
    /// of the same database): every call through any of its handles (clones, tables,
    /// transactions, scans) fails with this. Open it again with `Database::open`.
    #[error("the database in {} is closed", path.display())]
    Closed {
        /// The data directory.
        path: PathBuf,
    },
    /// `AsyncDatabase::close` (feature `tokio`) while other handles (clones, open scans)
    /// still use the database: it stays open, and the last handle dropped closes it.
    #[error("cannot close the database: {handles} other handle(s) still use it")]
    InUse {
        /// How many other handles there are.
        handles: usize,
    },
}

impl Error {
    /// True for the errors after which running the same transaction again may succeed: a
    /// deadlock ([`Error::Deadlock`], whose transaction has been rolled back) and a lock
    /// wait timeout ([`Error::LockWaitTimeout`]); both come from other transactions holding
    /// locks, not from what this one asked. `Database::transaction` retries on
    /// them. Every other error would come back the same (a duplicate key, a bad value, a
    /// closed or poisoned database) and is not retryable.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Deadlock { .. } | Error::LockWaitTimeout { .. })
    }
}

impl From<BufError> for Error {
    fn from(e: BufError) -> Error {
        match e {
            BufError::Corrupt {
                page,
                path,
                page_no,
                corruption,
            } => Error::CorruptPage {
                page,
                path,
                page_no,
                corruption,
            },
            BufError::CompressionFailure { page, block, .. } => Error::DoesNotCompress {
                table: String::new(),
                index: String::new(),
                page,
                block,
            },
            BufError::Io(e) => Error::Io(e),
            BufError::Poisoned => Error::Poisoned,
            BufError::Log(minnow_redo::LogError::Poisoned) => Error::Poisoned,
            other => Error::Storage(other),
        }
    }
}

impl From<minnow_mvcc::LockError> for Error {
    fn from(e: minnow_mvcc::LockError) -> Error {
        match e {
            minnow_mvcc::LockError::Deadlock { trx, key, cycle } => Error::Deadlock {
                trx,
                key: key.to_string(),
                cycle,
            },
            minnow_mvcc::LockError::Timeout {
                trx,
                key,
                waited,
                holders,
            } => Error::LockWaitTimeout {
                trx,
                key: key.to_string(),
                waited,
                holders,
            },
        }
    }
}

impl From<minnow_mvcc::MvccError> for Error {
    fn from(e: minnow_mvcc::MvccError) -> Error {
        match e {
            minnow_mvcc::MvccError::Buf(b) => Error::from(b),
            minnow_mvcc::MvccError::Tree(t) => from_tree(t, "TRX_SYS", "undo segment"),
            other => Error::Undo(other),
        }
    }
}

impl From<minnow_dblwr::DblwrError> for Error {
    fn from(e: minnow_dblwr::DblwrError) -> Error {
        Error::from(BufError::from(e))
    }
}

impl From<minnow_redo::LogError> for Error {
    fn from(e: minnow_redo::LogError) -> Error {
        Error::from(BufError::from(e))
    }
}

/// The message of [`Error::RowType`]: `Book.stock (column `stock` of table `books`): ...`.
fn row_type(ty: &str, field: &str, column: &str, table: &str, reason: &str) -> String {
    if field.is_empty() {
        format!("{ty} (column `{column}` of table `{table}`): {reason}")
    } else {
        format!("{ty}.{field} (column `{column}` of table `{table}`): {reason}")
    }
}

/// Maps a tree error that is not a duplicate or a missing key (those are handled where they
/// happen, with the table's names).
pub fn from_tree(e: TreeError, table: &str, index: &str) -> Error {
    match e {
        TreeError::Buf(BufError::CompressionFailure { page, block, .. }) => {
            Error::DoesNotCompress {
                table: table.to_owned(),
                index: index.to_owned(),
                page,
                block,
            }
        }
        TreeError::DoesNotCompress { page, block, .. } => Error::DoesNotCompress {
            table: table.to_owned(),
            index: index.to_owned(),
            page,
            block,
        },
        TreeError::Buf(b) => Error::from(b),
        TreeError::Node(minnow_btree::node::NodeError::RecordTooBig { len, max }) => {
            Error::RowTooLarge {
                table: table.to_owned(),
                index: index.to_owned(),
                len,
                max,
                reason: String::new(),
            }
        }
        TreeError::RowTooLarge { len, max, what, .. } => Error::RowTooLarge {
            table: table.to_owned(),
            index: index.to_owned(),
            len,
            max,
            reason: format!(": {what}"),
        },
        TreeError::Record(r) => Error::TypeMismatch {
            table: table.to_owned(),
            column: String::new(),
            reason: format!("index `{index}`: {r}"),
        },
        other => Error::Corrupt {
            what: format!("table `{table}`, index `{index}`: {other}"),
        },
    }
}
