//! Errors of the doublewrite buffer and of torn-page repair.

use std::path::PathBuf;

use minnow_io::IoError;
use minnow_page::{PageError, PageId};

use crate::DoublewriteMode;

/// Everything that can go wrong writing batches or recovering from segment files. Every variant
/// says where: the file, the segment, the page.
#[derive(Debug, thiserror::Error)]
pub enum DblwrError {
    /// A file operation failed (the error names the file, operation and offset).
    #[error(transparent)]
    Io(#[from] IoError),
    /// A configuration value is out of range.
    #[error("invalid doublewrite configuration: {reason}")]
    Config {
        /// What is wrong.
        reason: String,
    },
    /// A segment index at or beyond the number of segments.
    #[error("segment {segment} does not exist (there are {segments})")]
    NoSuchSegment {
        /// The index asked for.
        segment: usize,
        /// The number of segments.
        segments: usize,
    },
    /// A page of a batch names a tablespace the resolver does not know.
    #[error("page {page}: tablespace {} is not open", page.space)]
    UnknownSpace {
        /// The page.
        page: PageId,
    },
    /// A page buffer, or a tablespace, whose page size is not the doublewrite buffer's.
    #[error("page {page}: {what} is {actual} bytes, the doublewrite page size is {expected}")]
    PageSize {
        /// The page.
        page: PageId,
        /// What has the wrong size ("the buffer", "the tablespace's page size").
        what: &'static str,
        /// The doublewrite page size.
        expected: usize,
        /// The size found.
        actual: usize,
    },
    /// A page buffer whose FIL header names another page than the one it is written as.
    #[error("page {page}: the buffer's FIL header names page {stored} (caller bug)")]
    Misdirected {
        /// The page it is written as.
        page: PageId,
        /// The (space id, page number) in its FIL header.
        stored: PageId,
    },
    /// The same page twice in one batch (two writes to one offset in one submission).
    #[error("page {page} appears twice in one batch")]
    DuplicatePage {
        /// The page.
        page: PageId,
    },
    /// A page number at or beyond the end of its tablespace.
    #[error("page {page} is beyond the end of {} ({size_in_pages} pages)", path.display())]
    PageOutOfRange {
        /// The page.
        page: PageId,
        /// The tablespace file.
        path: PathBuf,
        /// Its size in pages.
        size_in_pages: u32,
    },
    /// A page could not be stamped (it is not a page of a supported size).
    #[error("page {page}: cannot stamp its checksum: {source}")]
    Stamp {
        /// The page.
        page: PageId,
        /// What the page crate said.
        source: PageError,
    },
    /// An earlier batch on this segment failed after its copies were durable; overwriting the
    /// segment could destroy the only intact copy of a page whose in-place write is in doubt.
    #[error(
        "segment {segment} ({}) is poisoned by a failed batch; restart and recover",
        path.display()
    )]
    Poisoned {
        /// The segment.
        segment: usize,
        /// Its file (or the data directory in mode off).
        path: PathBuf,
    },
    /// A segment file whose header checks out but cannot be used: unknown format version or
    /// flags, a count beyond its capacity, a page size other than the engine's. Recovery stops
    /// rather than skip a batch that may hold the only intact copy of a page.
    #[error("doublewrite segment {} ({segment}): {reason}", path.display())]
    BadSegment {
        /// The file.
        path: PathBuf,
        /// The segment index (from the file name).
        segment: usize,
        /// What is wrong.
        reason: String,
    },
    /// Only a course lab's starter code returns this: a function of lab 6 (the doublewrite
    /// decision at recovery) that the student has not written yet. docs/labs/ has the handout.
    #[error(transparent)]
    NotWritten(#[from] minnow_page::lab::NotWritten),
    /// Torn pages that recovery could not repair: no valid copy exists (detect_only, or copies
    /// damaged) or the mode forbids writing (detect_only). Repairs of other pages, if any, were
    /// made and synced before this error was returned.
    #[error(
        "{} torn page(s) cannot be repaired (doublewrite {mode}): {}",
        pages.len(),
        list(pages)
    )]
    TornPages {
        /// Every such page, in order.
        pages: Vec<PageId>,
        /// The mode recovery ran in.
        mode: DoublewriteMode,
    },
}

fn list(pages: &[PageId]) -> String {
    const SHOWN: usize = 16;
    let mut s: Vec<String> = pages.iter().take(SHOWN).map(PageId::to_string).collect();
    if pages.len() > SHOWN {
        s.push(format!("and {} more", pages.len() - SHOWN));
    }
    s.join(", ")
}
