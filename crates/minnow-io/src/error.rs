//! Errors of file IO and tablespaces.
//!
//! Every error says *where* it happened: the file, the operation, the byte offset or the page
//! number. An error without a place is useless in a crash test that runs thousands of seeds, and
//! for a student reading a failure it is the difference between "EIO" and "write of 16384 bytes
//! at offset 49152 in t1.ibd: Input/output error".
//!
//! Damage on disk is never a panic: a page whose checksum fails is [`IoError::Corrupt`] (with
//! the stored and computed checksums, from [`minnow_page::checksum::Corruption`]), a file that
//! cannot be a tablespace is [`IoError::BadTablespace`] with the reason.

use std::fmt;
use std::io;
use std::path::PathBuf;

use minnow_page::checksum::Corruption;

/// The operation that failed, for error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IoOp {
    /// Opening or creating a file.
    Open,
    /// Reading bytes.
    Read,
    /// Writing bytes.
    Write,
    /// `fdatasync` or `fsync`.
    Sync,
    /// Preallocating or extending a file.
    Allocate,
    /// Reading file metadata (its length).
    Stat,
    /// Shrinking a file (`ftruncate`).
    Truncate,
}

impl fmt::Display for IoOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IoOp::Open => "open",
            IoOp::Read => "read",
            IoOp::Write => "write",
            IoOp::Sync => "sync",
            IoOp::Allocate => "allocate",
            IoOp::Stat => "stat",
            IoOp::Truncate => "truncate",
        })
    }
}

/// Everything that can go wrong in minnow-io.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    /// A read or write of a byte range failed (a short read at the end of the file is
    /// `source.kind() == UnexpectedEof`).
    #[error("{op} of {len} bytes at offset {offset} in {}: {source}", path.display())]
    Io {
        /// Read or write.
        op: IoOp,
        /// The file.
        path: PathBuf,
        /// Byte offset of the request.
        offset: u64,
        /// Length of the request in bytes.
        len: usize,
        /// What the operating system said.
        source: io::Error,
    },
    /// An operation on a whole file failed (open, sync, allocate, stat).
    #[error("{op} {}: {source}", path.display())]
    File {
        /// The operation.
        op: IoOp,
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        source: io::Error,
    },
    /// A request on an `O_DIRECT` file whose buffer address, offset or length is not aligned
    /// (the kernel would answer EINVAL; we say why).
    #[error(
        "O_DIRECT {op} of {len} bytes at offset {offset} in {} (buffer at {addr:#x}) is not \
         aligned to {align} bytes: use AlignedBuf",
        path.display()
    )]
    Misaligned {
        /// Read or write.
        op: IoOp,
        /// The file.
        path: PathBuf,
        /// Byte offset of the request.
        offset: u64,
        /// Length of the request.
        len: usize,
        /// Address of the buffer.
        addr: usize,
        /// The alignment required.
        align: usize,
    },
    /// A page failed verification: torn write, bit rot, or not a page at all.
    #[error("corrupt page {page_no} in {}: {corruption}", path.display())]
    Corrupt {
        /// The tablespace file.
        path: PathBuf,
        /// The page number that was read.
        page_no: u32,
        /// What is wrong, with stored and computed checksums or LSN words.
        #[source]
        corruption: Corruption,
    },
    /// A page passed its checksum but carries another page's number: a misdirected write.
    #[error("page {page_no} in {} carries page number {stored} (misdirected write)", path.display())]
    Misdirected {
        /// The tablespace file.
        path: PathBuf,
        /// The page number that was read.
        page_no: u32,
        /// The page number stored in its FIL header.
        stored: u32,
    },
    /// The kernel refused to set up an io_uring (ENOSYS: too old or not built in; EPERM:
    /// `kernel.io_uring_disabled` or a seccomp filter, as in many containers).
    #[error("io_uring is unavailable on this system: {source}")]
    UringUnavailable {
        /// The error from `io_uring_setup`.
        source: io::Error,
    },
    /// The file cannot be a tablespace: bad FSP flags, too short, size not a whole number of
    /// pages, or page 0 is not an FSP header.
    #[error("{} is not a valid tablespace: {reason}", path.display())]
    BadTablespace {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A page number at or beyond the end of the tablespace.
    #[error("page {page_no} is beyond the end of {} ({size_in_pages} pages)", path.display())]
    PageOutOfRange {
        /// The file.
        path: PathBuf,
        /// The page number asked for.
        page_no: u32,
        /// The size of the tablespace in pages.
        size_in_pages: u32,
    },
    /// A page buffer whose length is not the tablespace's page size.
    #[error("{}: page buffer is {actual} bytes, the page size is {expected}", path.display())]
    BufferSize {
        /// The file.
        path: PathBuf,
        /// The page size.
        expected: usize,
        /// The buffer's length.
        actual: usize,
    },
    /// An [`crate::AlignedBuf`] length that is zero or not a multiple of 512.
    #[error("aligned buffer length {len} is not a non-zero multiple of 512")]
    BadBufferLen {
        /// The length asked for.
        len: usize,
    },
    /// A compressed block that cannot be restored: torn, bit rot, or not a block at all. The
    /// reason names what the block format check found (magic, checksum, stream, length).
    #[error("damaged compressed block {page_no} in {}: {source}", path.display())]
    ZipDamaged {
        /// The tablespace file.
        path: PathBuf,
        /// The page number that was read.
        page_no: u32,
        /// What the block check found.
        #[source]
        source: minnow_zip::ZipError,
    },
    /// A page of a compressed tablespace whose body does not compress into its block. The
    /// engine checks every change at mini-transaction commit and splits the page instead, so
    /// this is reached only by a page changed outside that path.
    #[error(
        "page {page_no} of {} does not compress into its {block}-byte block (room for {capacity} payload bytes)",
        path.display()
    )]
    DoesNotFit {
        /// The tablespace file.
        path: PathBuf,
        /// The page number.
        page_no: u32,
        /// The block size.
        block: usize,
        /// The payload bytes the block has room for.
        capacity: usize,
    },
    /// The (simulated) device lost power: handles opened before the cut are dead.
    #[error("{}: the device is gone (power cut); reopen the file", path.display())]
    DeviceGone {
        /// The file.
        path: PathBuf,
    },
}

impl IoError {
    /// A failed read or write of `len` bytes at `offset`.
    pub fn io(
        op: IoOp,
        path: impl Into<PathBuf>,
        offset: u64,
        len: usize,
        source: io::Error,
    ) -> Self {
        IoError::Io {
            op,
            path: path.into(),
            offset,
            len,
            source,
        }
    }

    /// A failed whole-file operation.
    pub fn file(op: IoOp, path: impl Into<PathBuf>, source: io::Error) -> Self {
        IoError::File {
            op,
            path: path.into(),
            source,
        }
    }

    /// The operating system's error kind, for the variants that wrap one.
    pub fn io_kind(&self) -> Option<io::ErrorKind> {
        match self {
            IoError::Io { source, .. }
            | IoError::File { source, .. }
            | IoError::UringUnavailable { source } => Some(source.kind()),
            _ => None,
        }
    }

    /// The raw OS error number (errno), for the variants that wrap one.
    pub fn raw_os_error(&self) -> Option<i32> {
        match self {
            IoError::Io { source, .. }
            | IoError::File { source, .. }
            | IoError::UringUnavailable { source } => source.raw_os_error(),
            _ => None,
        }
    }
}
