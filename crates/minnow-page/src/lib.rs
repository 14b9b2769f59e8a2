//! # minnow-page: the page frame
//!
//! A storage engine reads and writes its files in fixed-size **pages**: 16 KiB by default, the
//! unit of caching, of IO and of crash safety. This crate knows what every page has in common,
//! whatever it holds, and nothing more:
//!
//! - [`fil`]: the 38-byte FIL header and 8-byte FIL trailer at InnoDB's offsets (page number,
//!   sibling pointers, LSN, page type, space id) and InnoDB's page type numbers;
//! - [`fsp`]: page 0's file space header, whose flags record the page size, so that tools
//!   (ours and InnoDB's) can read a tablespace without being told how it was created;
//! - [`checksum`]: the four checksum algorithms InnoDB and MariaDB write (`crc32`, legacy
//!   `innodb`, `none`, `full_crc32`), byte for byte, and verification in InnoDB's order;
//! - [`index`]: the INDEX page header, decoded for inspection;
//! - [`bytes`]: checked big-endian field access: parsing a page never panics, whatever the bytes;
//! - [`lab`]: the error a course lab's starter code returns until the student writes it;
//! - [`walk`]: [`walk::CycleGuard`], which bounds every walk over links read from disk, so a
//!   corrupt file's cycle is an error, never a hang.
//!
//! ```text
//!  0            38                                             N-8      N
//!  +------------+----------------------------------------------+--------+
//!  | FIL header |  body (owned by the page type: B-tree node,   | FIL    |
//!  |  38 bytes  |  undo log, extent descriptors, ...)          | trailer|
//!  +------------+----------------------------------------------+--------+
//! ```
//!
//! Everything here is pure: functions over byte slices. Files, buffers and caching live in the
//! crates above (`minnow-io`, then the buffer pool). docs/FORMAT.md describes every byte.
//!
//! ```
//! use minnow_page::{checksum, fil::FilHeader, PageSize, PageType};
//! use minnow_page::checksum::{ChecksumAlgorithm, ChecksumPolicy, Matched, Verdict};
//!
//! let mut page = vec![0u8; PageSize::K16.bytes()];
//! let mut header = FilHeader::new(5, 3, PageType::Index);
//! header.lsn = 0x1234;
//! header.write(&mut page)?;
//! checksum::stamp(&mut page, ChecksumAlgorithm::Crc32)?;
//! assert_eq!(&page[0..4], &[0x79, 0x10, 0x4c, 0xa5]); // innodb-facts.md's test vector
//! let verdict = checksum::verify(&page, ChecksumPolicy::new(ChecksumAlgorithm::Crc32));
//! assert_eq!(verdict, Ok(Verdict::Valid(Matched::Crc32)));
//! # Ok::<(), minnow_page::PageError>(())
//! ```

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

pub mod bytes;
pub mod checksum;
pub mod crc;
pub mod fil;
pub mod fsp;
mod id;
pub mod index;
pub mod lab;
mod size;
pub mod walk;

pub use fil::PageType;
pub use id::PageId;
pub use size::PageSize;

/// Errors from decoding or encoding page fields.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PageError {
    /// A field lies (partly) outside the buffer.
    #[error("{len}-byte field at offset {offset} is outside the {available}-byte buffer")]
    OutOfBounds {
        /// Offset of the field.
        offset: usize,
        /// Length of the field.
        len: usize,
        /// Length of the buffer.
        available: usize,
    },
    /// A buffer or setting is not one of the supported page sizes.
    #[error("{bytes} bytes is not a page size minnow supports (4, 8, 16, 32 or 64 KiB)")]
    BadPageSize {
        /// The size that was given.
        bytes: usize,
    },
    /// The FSP flags of page 0 make no sense.
    #[error("FSP flags {flags:#x} are invalid: {reason}")]
    BadFspFlags {
        /// The flags word.
        flags: u32,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// An unknown checksum algorithm name.
    #[error(
        "unknown checksum algorithm {name:?} (expected crc32, innodb, none or full_crc32, \
         optionally prefixed with strict_)"
    )]
    UnknownAlgorithm {
        /// The name that was given.
        name: String,
    },
    /// A course lab's function is not written yet: only a lab's starter code returns this
    /// (see [`lab`]); the engine itself never does.
    #[error(transparent)]
    NotWritten(#[from] lab::NotWritten),
}
