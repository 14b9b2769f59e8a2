//! # minnow-zip: page compression
//!
//! **What this crate is.** It compresses one logical page into a smaller block and restores it
//! exactly: the codec, the on-disk block format and the counters of compressed tables. The
//! rest of the engine uses it in three places: `minnow_io::Tablespace` stores the pages of a
//! compressed tablespace as blocks (reads inflate, writes compress); the buffer pool checks at
//! every mini-transaction commit that a changed page still compresses into its block, keeps
//! blocks in its zip cache and writes them with a fresh header ([`format::reheader`]); and
//! `minnow_btree::tree::zip` splits a page that stops compressing. `minnow::TableDef::compressed`
//! is how a user asks for it; docs/EXPERIMENTS.md (E3) measures it.
//!
//! ## KEY_BLOCK_SIZE: a logical page in a smaller block
//!
//! InnoDB's `ROW_FORMAT=COMPRESSED` keeps the page size everything above the file layer works
//! with (the *logical* page, 16 KiB by default) and stores each page on disk in a smaller
//! **compressed block** of 1, 2, 4, 8 or 16 KiB, chosen per table as `KEY_BLOCK_SIZE`
//! ([`KeyBlockSize`]; 8 KiB when not given). Reads and writes move only the block, so a table
//! whose pages compress 2:1 into 8 KiB blocks needs half the disk and half the read bandwidth,
//! and the CPU pays for inflating each page it reads (seed 002 saw an IO-bound server become
//! CPU-bound this way).
//!
//! ```text
//!  logical page (16 KiB)                    compressed block (KEY_BLOCK_SIZE, e.g. 8 KiB)
//!  +--------+------------------+-------+    +--------+--------+---------+---------+-------+
//!  | FIL    | body (records,   | FIL   | -> | FIL    | zip    | payload | zero    | FIL   |
//!  | header | directory)       |trailer|    | header | header | (body,  | padding |trailer|
//!  |   38 B |  16,338 bytes    |   8 B |    |verbatim|  20 B  | zlib or |         |verbatim
//!  +--------+------------------+-------+    +--------+--------+--LZ4)--+---------+-------+
//! ```
//!
//! The FIL header stays uncompressed, as in InnoDB, so the page number, LSN, page type and
//! space id of a block can be read without inflating it; so does the 8-byte FIL trailer, so
//! that the compressed payload depends on the page body alone and stamping a new LSN and
//! checksum at write time never changes whether a page fits ([`format::reheader`]).
//! [`minnow_page::fil::FilHeader::read`] works on a block as on a page. The zip header
//! ([`ZipHeader`]) makes the block self-describing: algorithm, level, block size, logical page
//! size, payload length and a CRC-32C over everything but the padding. docs/FORMAT.md has every byte.
//!
//! ## Why a page can fail to compress, and what InnoDB does then
//!
//! Whether a page fits its block depends on its content, not on its size: a 16 KiB page of
//! repetitive text deflates to 3-5 KiB, one full of random bytes (encrypted or already
//! compressed values, UUIDs, hashes) does not shrink at all. With a 16 KiB page and an 8 KiB
//! block, the page must compress at least 2:1 (a little more, for the headers); with a 1 KiB
//! block, 16:1. When it does not, InnoDB calls it a **compression failure**: the B-tree splits
//! the page into two half-full pages and compresses each (`btr_page_split_and_insert` after
//! `page_zip_compress` returns false). Failures are expensive (a wasted compression, then a
//! split and two more), so InnoDB counts them per index and, above
//! `innodb_compression_failure_threshold_pct` (5 %), leaves padding free in new pages, up to
//! `innodb_compression_pad_pct_max` (50 %). That is why [`Codec::compress_into`] returns
//! [`Outcome::DoesNotFit`] as an ordinary outcome, not an error: it is the caller's signal to
//! split. minnow's B-tree does the same (`minnow_btree::tree::zip`), after first trying a
//! reorganize (a page's deleted records are bytes that compress too).
//!
//! What this crate does **not** reproduce: InnoDB's compressed page keeps an uncompressed
//! modification log and dense directory at the end of the block so that small changes can be
//! appended without recompressing (innodb-facts.md §10), and it compresses the records rather
//! than the raw page. Here a block is the whole page body compressed at once, so every
//! mini-transaction that changes a page of a compressed table compresses it again (the fit
//! check); the block it makes is kept and written later without compressing a second time.
//!
//! ## Use
//!
//! ```
//! use minnow_zip::{Algorithm, Codec, KeyBlockSize, Outcome, ZipConfig, ZipStats};
//!
//! // A 16 KiB page of text-like content.
//! let mut page = vec![0u8; 16384];
//! for (i, b) in page.iter_mut().enumerate().skip(38) {
//!     *b = b"the quick brown fox jumps over the lazy dog "[i % 44];
//! }
//! let mut codec = Codec::new(ZipConfig::new(KeyBlockSize::K8, Algorithm::default()));
//! let mut stats = ZipStats::default();
//! let mut block = vec![0u8; KeyBlockSize::K8.bytes()];
//! let outcome = codec.compress_into(&page, &mut block, &mut stats)?;
//! assert!(matches!(outcome, Outcome::Fits { .. }));
//!
//! let mut restored = vec![0u8; 16384];
//! codec.decompress_into(&block, &mut restored, &mut stats)?;
//! assert_eq!(restored, page);
//! assert_eq!((stats.compress_ops, stats.decompress_ops), (1, 1));
//! # Ok::<(), minnow_zip::ZipError>(())
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

mod codec;
pub mod format;
mod settings;
mod stats;

pub use codec::{Codec, Compressed, Outcome};
pub use format::ZipHeader;
pub use settings::{Algorithm, KeyBlockSize, ZipConfig, ZlibLevel};
pub use stats::ZipStats;

/// Which codec a block was compressed with, as named in errors.
pub type AlgorithmName = &'static str;

/// Everything that can go wrong compressing or decompressing a page. A page that does not fit
/// its block is not an error: see [`Outcome::DoesNotFit`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ZipError {
    /// A zlib level outside 1-9.
    #[error("zlib level {level} is not supported (expected 1 to 9)")]
    BadLevel {
        /// The level that was given.
        level: u8,
    },
    /// The logical page is not 4, 8, 16, 32 or 64 KiB.
    #[error("a {bytes}-byte buffer is not a logical page (expected 4, 8, 16, 32 or 64 KiB)")]
    BadPageSize {
        /// Its length.
        bytes: usize,
    },
    /// The block buffer is not 1, 2, 4, 8 or 16 KiB (or not the size the settings ask for).
    #[error("a {actual}-byte buffer is not a compressed block (expected {expected} bytes)")]
    BadBlockSize {
        /// What was expected (the configured block size, or "1, 2, 4, 8 or 16 KiB").
        expected: String,
        /// Its length.
        actual: usize,
    },
    /// The block would be larger than the logical page it holds.
    #[error(
        "a {block}-byte block cannot hold a {page}-byte page: the block must be smaller or equal"
    )]
    BlockLargerThanPage {
        /// Block size in bytes.
        block: usize,
        /// Logical page size in bytes.
        page: usize,
    },
    /// The block does not carry minnow's zip magic: not a compressed block, or damaged.
    #[error(
        "not a compressed block: magic at byte {offset} is {actual:#010x}, expected {expected:#010x}"
    )]
    BadMagic {
        /// Offset of the magic.
        offset: usize,
        /// [`format::MAGIC`].
        expected: u32,
        /// What the block holds.
        actual: u32,
    },
    /// A block format version this build does not read.
    #[error("compressed block format version {actual} is not supported (expected {expected})")]
    BadVersion {
        /// [`format::VERSION`].
        expected: u8,
        /// What the block says.
        actual: u8,
    },
    /// An algorithm number that is neither zlib (1) nor LZ4 (2).
    #[error("unknown compression algorithm {actual} (expected 1 = zlib or 2 = lz4)")]
    UnknownAlgorithm {
        /// What the block says.
        actual: u8,
    },
    /// A zlib block with a level outside 1-9, or an LZ4 block with a level other than 0.
    #[error("{algorithm} block records level {actual}, expected {expected}")]
    BadRecordedLevel {
        /// The block's algorithm.
        algorithm: AlgorithmName,
        /// The allowed levels.
        expected: &'static str,
        /// What the block says.
        actual: u8,
    },
    /// The block size the header records is not the block's length.
    #[error(
        "header records a {recorded}-byte block (ssize {ssize}), but the block is {actual} bytes"
    )]
    BlockSizeMismatch {
        /// The header's shift size.
        ssize: u8,
        /// `512 << ssize`, or 0 if the shift size is not one of 1-5.
        recorded: usize,
        /// The block's length.
        actual: usize,
    },
    /// The logical page size the header records is not a page size, or is smaller than the block.
    #[error("header records a logical page of {recorded} bytes: {reason}")]
    BadLogicalSize {
        /// What the header says.
        recorded: u32,
        /// Why it cannot be right.
        reason: &'static str,
    },
    /// The output buffer is not the logical page size the block records.
    #[error("block holds a {expected}-byte page, but the output buffer is {actual} bytes")]
    OutputSizeMismatch {
        /// The recorded logical page size.
        expected: usize,
        /// The buffer's length.
        actual: usize,
    },
    /// The payload length runs past the end of the block.
    #[error(
        "payload of {payload_len} bytes does not fit the {capacity} bytes a {block}-byte block has after its headers"
    )]
    PayloadTooLong {
        /// The header's payload length.
        payload_len: u32,
        /// Bytes available for the payload.
        capacity: usize,
        /// The block's length.
        block: usize,
    },
    /// The stored CRC-32C does not match the block's bytes.
    #[error(
        "compressed block checksum mismatch: stored CRC-32C {stored:#010x}, computed {computed:#010x}"
    )]
    Checksum {
        /// The header's CRC-32C.
        stored: u32,
        /// The CRC-32C of the block as read.
        computed: u32,
    },
    /// A byte of padding after the payload is not zero.
    #[error("padding byte at offset {offset} is {value:#04x}, expected 0")]
    NonZeroPadding {
        /// Offset in the block.
        offset: usize,
        /// The byte found.
        value: u8,
    },
    /// The payload is not a valid stream for its algorithm.
    #[error("{algorithm} payload is corrupt: {reason}")]
    CorruptPayload {
        /// The block's algorithm.
        algorithm: AlgorithmName,
        /// What the decoder reported.
        reason: String,
    },
    /// The payload inflated to a different length than the page body it should restore.
    #[error(
        "{algorithm} payload inflated to {actual} bytes, expected {expected} (logical page minus its FIL header)"
    )]
    LengthMismatch {
        /// The block's algorithm.
        algorithm: AlgorithmName,
        /// The page body's length.
        expected: usize,
        /// What the payload produced (for "more than": `expected + 1`).
        actual: usize,
    },
    /// The zlib stream ended before the payload did.
    #[error("zlib stream ends after {consumed} of the payload's {payload_len} bytes")]
    TrailingPayload {
        /// Bytes the stream used.
        consumed: usize,
        /// The header's payload length.
        payload_len: usize,
    },
    /// The compressor reported a state it should never be in (a bug in this crate or the codec).
    #[error("{algorithm} compressor failed: {reason}")]
    Compressor {
        /// The algorithm.
        algorithm: AlgorithmName,
        /// What happened.
        reason: String,
    },
    /// A header field lies outside the buffer (the block is shorter than its headers).
    #[error(transparent)]
    Page(#[from] minnow_page::PageError),
}

#[cfg(test)]
mod tests;
