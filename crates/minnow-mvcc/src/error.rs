//! Errors of the transaction system and the undo store.

use minnow_btree::TreeError;
use minnow_buf::BufError;
use minnow_page::PageId;

/// What went wrong in the transaction system or the undo store.
#[derive(Debug, thiserror::Error)]
pub enum MvccError {
    /// The buffer pool failed (IO, corrupt page, pool exhausted, poisoned).
    #[error(transparent)]
    Buf(#[from] BufError),
    /// Space management (allocating undo pages) failed.
    #[error(transparent)]
    Tree(#[from] TreeError),
    /// An undo page or undo record does not decode: names the page, the byte offset, what
    /// was expected and what was found.
    #[error("corrupt undo at page {page} offset {offset}: expected {expected}, found {found}")]
    CorruptUndo {
        /// The page.
        page: PageId,
        /// The byte offset in the page.
        offset: usize,
        /// What the decoder expected.
        expected: String,
        /// What it found.
        found: String,
    },
    /// A page source other than the buffer pool (a tool reading the data file) could not
    /// read a page, or the page failed its checksum.
    #[error("page {page}: {what}")]
    Unreadable {
        /// The page.
        page: PageId,
        /// What went wrong.
        what: String,
    },
    /// The TRX_SYS page or a rollback segment header page does not decode, or what they
    /// say does not hold (a history list or undo chain that disagrees with them).
    #[error(
        "corrupt transaction system page {page} (TRX_SYS or a rollback segment header): {what}"
    )]
    CorruptTrxSys {
        /// The page.
        page: PageId,
        /// What is wrong.
        what: String,
    },
    /// Every undo slot of every rollback segment is taken: too many writing transactions at once.
    #[error("all {slots} undo slots are in use: too many concurrent writing transactions")]
    TooManyTransactions {
        /// The number of slots.
        slots: usize,
    },
    /// A rollback segment count outside 1..=128 at create.
    #[error("{requested} rollback segments: expected 1..=128")]
    RollbackSegments {
        /// The count asked for.
        requested: usize,
    },
    /// Only a course lab's starter code returns this: a function of lab 5 (MVCC visibility)
    /// that the student has not written yet. docs/labs/ has the handout.
    #[error(transparent)]
    NotWritten(#[from] minnow_page::lab::NotWritten),
    /// The extra change a [`crate::trx_sys::TrxSys::commit_with`] was to make in the commit
    /// mtr could not be made there: nothing was committed, the transaction is still active.
    #[error("the commit's extra change could not be made: {what}")]
    CommitRefused {
        /// What could not be done.
        what: String,
    },
    /// An undo record too large to encode (a field over 4 GiB, more than 65535 fields).
    #[error("undo record too large: {what}")]
    RecordTooLarge {
        /// Which limit.
        what: String,
    },
}

/// The result type of this crate.
pub type Result<T, E = MvccError> = std::result::Result<T, E>;
