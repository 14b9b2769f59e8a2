//! Errors of the buffer pool.
//!
//! A damaged page is never handed out: it is [`BufError::Corrupt`], naming the file, the page
//! and what is wrong (stored and computed checksums). A failed write or sync of a data file or
//! of the log **poisons** the pool: the kernel may have dropped the pages it could not write, so
//! nothing after it can be promised durable, and every later commit is [`BufError::Poisoned`]
//! until the database is reopened.

use std::path::PathBuf;

use minnow_io::IoError;
use minnow_page::PageId;
use minnow_page::checksum::Corruption;
use minnow_redo::LogError;
use minnow_redo::record::RecordError;

/// Everything that can go wrong in the buffer pool.
#[derive(Debug, thiserror::Error)]
pub enum BufError {
    /// A page failed its checksum (torn write, bit rot) and could not be repaired.
    #[error("corrupt page {page} ({}, page {page_no}): {corruption}", path.display())]
    Corrupt {
        /// The page.
        page: PageId,
        /// The tablespace file.
        path: PathBuf,
        /// Its page number.
        page_no: u32,
        /// What is wrong.
        corruption: Corruption,
    },
    /// File IO failed (including misdirected writes and pages past the end of a file).
    #[error(transparent)]
    Io(IoError),
    /// The doublewrite buffer failed: an IO error, a poisoned segment, or at recovery torn
    /// pages it could not repair (`DblwrError::TornPages` names them).
    #[error(transparent)]
    Doublewrite(#[from] minnow_dblwr::DblwrError),
    /// The redo log failed.
    #[error(transparent)]
    Log(#[from] LogError),
    /// A mini-transaction changed a page of a compressed tablespace so that its body no longer
    /// compresses into its block: InnoDB's **compression failure**. The mtr is rolled back
    /// (dropped) and the page unchanged; the B-tree answers by splitting the page.
    #[error(
        "page {page} does not compress into its {block}-byte block (room for {capacity} payload bytes): compression failure"
    )]
    CompressionFailure {
        /// The page.
        page: PageId,
        /// The block size.
        block: usize,
        /// The payload bytes the block has room for.
        capacity: usize,
    },
    /// Every frame of the instance stayed pinned or latched while a fix waited for one (two
    /// seconds): no page could be evicted. The pool is too small for the pages its threads
    /// hold at once.
    #[error("buffer pool instance {instance} exhausted: all {frames} frames are pinned or latched")]
    PoolExhausted {
        /// The instance.
        instance: usize,
        /// Its frame count.
        frames: usize,
    },
    /// An earlier data-file or log write or sync failed; reopen the database.
    #[error("buffer pool is poisoned by an earlier failed write or sync; reopen the database")]
    Poisoned,
    /// A page of a tablespace the [`crate::SpaceMap`] does not know.
    #[error("unknown tablespace {space}")]
    UnknownSpace {
        /// The space id.
        space: u32,
    },
    /// A change that does not fit in the page.
    #[error("change of {len} bytes at offset {offset} does not fit a {page_size}-byte page")]
    OutOfPage {
        /// Offset of the change.
        offset: usize,
        /// Its length.
        len: usize,
        /// The page size.
        page_size: usize,
    },
    /// [`crate::Mtr::release`] was asked to let go early of a page the mtr changed (or
    /// created): its latch must be kept to commit, or another thread could see, and change,
    /// a page whose change is not logged yet.
    #[error("mtr cannot release page {page} before commit: it changed the page")]
    ReleaseChanged {
        /// The page.
        page: PageId,
    },
    /// A redo record could not be applied.
    #[error("redo record for page {page}: {source}")]
    Record {
        /// The page.
        page: PageId,
        /// What is wrong.
        source: RecordError,
    },
    /// A course lab's function is not written yet: only a lab's starter code returns this
    /// (docs/labs/); the engine itself never does.
    #[error(transparent)]
    NotWritten(#[from] minnow_page::lab::NotWritten),
    /// The redo log could not be recovered (no valid checkpoint, corruption in the middle
    /// of the log, a malformed group).
    #[error(transparent)]
    Redo(minnow_redo::RecoveryError),
    /// Recovery failed for a reason other than a page.
    #[error("recovery failed: {0}")]
    Recovery(String),
    /// The operation needs the redo log, which is not attached yet (during recovery).
    #[error("the redo log is not attached")]
    NoLog,
    /// A bad configuration value.
    #[error("bad buffer pool configuration: {reason}")]
    Config {
        /// What is wrong.
        reason: String,
    },
    /// A tablespace may not be cut shorter now: the pool still runs, holds a dirty page,
    /// or its log is not checkpointed at its end ([`crate::BufferPool::cut_space`]).
    #[error("tablespace {space} cannot be cut to {pages} pages: {reason}")]
    CutRefused {
        /// The tablespace.
        space: u32,
        /// The length asked for, in pages.
        pages: u32,
        /// Why not.
        reason: String,
    },
    /// The `ib_buffer_pool` dump file is damaged.
    #[error("{}: {reason}", path.display())]
    Dump {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

impl BufError {
    /// Maps an IO error for `page`, turning a checksum failure into [`BufError::Corrupt`].
    pub(crate) fn from_io(page: PageId, e: IoError) -> BufError {
        match e {
            IoError::Corrupt {
                path,
                page_no,
                corruption,
            } => BufError::Corrupt {
                page,
                path,
                page_no,
                corruption,
            },
            IoError::DoesNotFit {
                block, capacity, ..
            } => BufError::CompressionFailure {
                page,
                block,
                capacity,
            },
            other => BufError::Io(other),
        }
    }
}

impl From<IoError> for BufError {
    fn from(e: IoError) -> Self {
        BufError::Io(e)
    }
}
