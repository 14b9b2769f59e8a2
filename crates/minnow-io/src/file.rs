//! The IO interface: files, requests, backends and flush methods.
//!
//! ## Where written bytes live
//!
//! A `write(2)` that returns has put the bytes somewhere, but not necessarily on the disk:
//!
//! ```text
//!  your buffer --write--> page cache (RAM) --writeback--> disk write cache --flush--> media
//!                         lost on power cut              lost on power cut           durable
//! ```
//!
//! Only a *sync* (`fdatasync`, `fsync`) makes the kernel write the page cache back *and* tell
//! the disk to flush its cache. Until then a power cut may lose the write entirely, keep it, or
//! keep only part of it (see [`crate::crash`]). A storage engine is correct only if everything it
//! relies on after a crash was synced first: the redo log before the commit returns, the
//! doublewrite area before the pages in place.
//!
//! ## Flush methods (`innodb_flush_method`)
//!
//! - [`FlushMethod::Fsync`]: buffered writes through the page cache, then `fdatasync`. Writes
//!   are cheap (a memory copy) and the sync pays for them all at once. Reads may be served from
//!   the page cache, so data ends up cached twice: once in the kernel, once in the buffer pool.
//! - [`FlushMethod::ODirect`]: `O_DIRECT` skips the page cache (no double caching, no copy) but
//!   needs aligned buffers ([`crate::AlignedBuf`]) and still needs `fdatasync` to flush the
//!   disk's own cache and any metadata (the file size). InnoDB's recommended setting on Linux.
//! - [`FlushMethod::ODsync`]: `O_DSYNC` makes *every* write durable before it returns, as if each
//!   were followed by `fdatasync`. A sync is then a no-op, except after the file was extended
//!   by [`FileIo::allocate`], whose new length must still be made durable.
//!
//! ## Batches
//!
//! [`FileIo::submit`] takes many reads and writes at once. A backend that can (io_uring) hands
//! them all to the kernel in one system call and waits once; the others loop. Requests in one
//! batch may complete in any order, so overlapping writes in one batch are a caller bug.

use std::fmt::{self, Debug};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;

use crate::{IoError, IoOp};

/// How writes are made durable, as `innodb_flush_method`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FlushMethod {
    /// Buffered writes, made durable by `fdatasync` (`fsync` in InnoDB's name).
    #[default]
    Fsync,
    /// `O_DIRECT`: writes bypass the page cache; durable after `fdatasync`. Buffers, offsets and
    /// lengths must be 512-byte aligned.
    ODirect,
    /// `O_DSYNC`: every write is durable when it returns.
    ODsync,
}

impl FlushMethod {
    /// Every flush method.
    pub const ALL: [FlushMethod; 3] = [
        FlushMethod::Fsync,
        FlushMethod::ODirect,
        FlushMethod::ODsync,
    ];

    /// The name `innodb_flush_method` uses: `fsync`, `O_DIRECT` or `O_DSYNC`.
    pub const fn name(self) -> &'static str {
        match self {
            FlushMethod::Fsync => "fsync",
            FlushMethod::ODirect => "O_DIRECT",
            FlushMethod::ODsync => "O_DSYNC",
        }
    }

    /// The extra `open(2)` flags this method needs.
    pub const fn open_flags(self) -> i32 {
        match self {
            FlushMethod::Fsync => 0,
            FlushMethod::ODirect => libc::O_DIRECT,
            FlushMethod::ODsync => libc::O_DSYNC,
        }
    }

    /// True when every write is durable on return (`O_DSYNC`).
    pub const fn writes_are_durable(self) -> bool {
        matches!(self, FlushMethod::ODsync)
    }
}

impl fmt::Display for FlushMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown flush method name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown flush method {0:?} (expected fsync, O_DIRECT or O_DSYNC)")]
pub struct ParseFlushMethodError(pub String);

impl FromStr for FlushMethod {
    type Err = ParseFlushMethodError;

    /// Parses `fsync`, `O_DIRECT` or `O_DSYNC`, ignoring case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FlushMethod::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| ParseFlushMethodError(s.to_string()))
    }
}

/// How to open a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OpenOptions {
    /// Create the file if it does not exist (not allowed together with `read_only`).
    pub create: bool,
    /// Open for reading only; writes fail.
    pub read_only: bool,
    /// How writes become durable.
    pub flush_method: FlushMethod,
}

impl OpenOptions {
    /// Read-write, no create, with `flush_method`.
    pub const fn new(flush_method: FlushMethod) -> OpenOptions {
        OpenOptions {
            create: false,
            read_only: false,
            flush_method,
        }
    }

    /// The same options with `create` set.
    pub const fn create(self, create: bool) -> OpenOptions {
        OpenOptions { create, ..self }
    }

    /// The same options with `read_only` set.
    pub const fn read_only(self, read_only: bool) -> OpenOptions {
        OpenOptions { read_only, ..self }
    }
}

/// One request of a batch for [`FileIo::submit`].
pub enum IoRequest<'a> {
    /// Fill `buf` from the file at `offset` (all of it, or the batch fails).
    Read {
        /// Byte offset in the file.
        offset: u64,
        /// Where the bytes go.
        buf: &'a mut [u8],
    },
    /// Write all of `buf` at `offset`.
    Write {
        /// Byte offset in the file.
        offset: u64,
        /// The bytes.
        buf: &'a [u8],
    },
}

impl Debug for IoRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.is_write() { "Write" } else { "Read" };
        f.debug_struct(kind)
            .field("offset", &self.offset())
            .field("len", &self.len())
            .finish()
    }
}

impl IoRequest<'_> {
    /// The byte offset.
    pub fn offset(&self) -> u64 {
        match self {
            IoRequest::Read { offset, .. } | IoRequest::Write { offset, .. } => *offset,
        }
    }

    /// The length in bytes.
    pub fn len(&self) -> usize {
        match self {
            IoRequest::Read { buf, .. } => buf.len(),
            IoRequest::Write { buf, .. } => buf.len(),
        }
    }

    /// True for a zero-length request.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True for a write.
    pub fn is_write(&self) -> bool {
        matches!(self, IoRequest::Write { .. })
    }

    /// Read or write, for error messages.
    pub fn op(&self) -> IoOp {
        if self.is_write() {
            IoOp::Write
        } else {
            IoOp::Read
        }
    }

    /// Address of the buffer, for alignment checks.
    pub fn addr(&self) -> usize {
        match self {
            IoRequest::Read { buf, .. } => buf.as_ptr() as usize,
            IoRequest::Write { buf, .. } => buf.as_ptr() as usize,
        }
    }
}

/// An open file. All methods take `&self`: one handle is shared by many threads, and requests
/// at different offsets may run concurrently.
pub trait FileIo: Send + Sync + Debug {
    /// The path the file was opened with.
    fn path(&self) -> &Path;

    /// The flush method the file was opened with.
    fn flush_method(&self) -> FlushMethod;

    /// Fills all of `buf` from `offset`. Reading past the end of the file is an error whose kind
    /// is `UnexpectedEof`.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), IoError>;

    /// Writes all of `buf` at `offset`, extending the file if needed. Durable on return only
    /// with [`FlushMethod::ODsync`]; otherwise after [`FileIo::sync_data`].
    fn write_at(&self, buf: &[u8], offset: u64) -> Result<(), IoError>;

    /// Runs a batch of reads and writes and returns when all are complete. On error some
    /// requests may have completed and others not. The default runs them one by one.
    fn submit(&self, batch: &mut [IoRequest<'_>]) -> Result<(), IoError> {
        for request in batch.iter_mut() {
            match request {
                IoRequest::Read { offset, buf } => self.read_at(buf, *offset)?,
                IoRequest::Write { offset, buf } => self.write_at(buf, *offset)?,
            }
        }
        Ok(())
    }

    /// Makes every completed write, and the file length, durable (`fdatasync`).
    fn sync_data(&self) -> Result<(), IoError>;

    /// Like [`FileIo::sync_data`], and also all other metadata (`fsync`).
    fn sync_all(&self) -> Result<(), IoError>;

    /// The current length of the file in bytes.
    fn len(&self) -> Result<u64, IoError>;

    /// True when the file is empty.
    fn is_empty(&self) -> Result<bool, IoError> {
        Ok(self.len()? == 0)
    }

    /// Extends the file to at least `len` bytes, reserving the blocks (`fallocate`) so later
    /// writes cannot fail for lack of space; new bytes read as zeros. Never shrinks. The new
    /// length is durable only after a sync.
    fn allocate(&self, len: u64) -> Result<(), IoError>;

    /// Shrinks the file to `len` bytes (`ftruncate`); never grows it (a `len` at or beyond
    /// the end does nothing). The new length is durable only after a sync: a power cut
    /// before it may bring back the old length with the old bytes.
    fn truncate(&self, len: u64) -> Result<(), IoError>;
}

/// A way of doing file IO. Backends are shared (`Arc<dyn Backend>`) by everything that opens
/// files; wrappers ([`crate::CrashSim`], [`crate::LatencyModel`]) take another backend.
pub trait Backend: Send + Sync + Debug {
    /// Opens (or creates) the file at `path`.
    fn open(&self, path: &Path, opts: &OpenOptions) -> Result<Arc<dyn FileIo>, IoError>;

    /// A short name for reports: `sync`, `io_uring`, `crash_sim(...)`.
    fn name(&self) -> &'static str;
}

/// The sector size: the alignment `O_DIRECT` requests are checked against.
pub const SECTOR: usize = 512;

/// Opens a real file with the flags `opts` asks for (shared by the OS-backed backends).
pub(crate) fn open_file(path: &Path, opts: &OpenOptions) -> Result<File, IoError> {
    if opts.create && opts.read_only {
        return Err(IoError::file(
            IoOp::Open,
            path,
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "cannot create a file opened read-only",
            ),
        ));
    }
    std::fs::OpenOptions::new()
        .read(true)
        .write(!opts.read_only)
        .create(opts.create)
        .custom_flags(opts.flush_method.open_flags())
        .open(path)
        .map_err(|e| IoError::file(IoOp::Open, path, e))
}

/// Checks that an `O_DIRECT` request is sector-aligned in address, offset and length.
pub(crate) fn check_direct(
    path: &Path,
    method: FlushMethod,
    op: IoOp,
    addr: usize,
    len: usize,
    offset: u64,
) -> Result<(), IoError> {
    if method != FlushMethod::ODirect {
        return Ok(());
    }
    let aligned = addr.is_multiple_of(SECTOR)
        && len.is_multiple_of(SECTOR)
        && offset.is_multiple_of(SECTOR as u64);
    if aligned {
        Ok(())
    } else {
        Err(IoError::Misaligned {
            op,
            path: path.to_path_buf(),
            offset,
            len,
            addr,
            align: SECTOR,
        })
    }
}

/// Extends `file` to at least `len` bytes with `fallocate(2)`, or with `ftruncate` (a sparse
/// extension) on file systems that cannot preallocate. Returns true if the length changed.
pub(crate) fn allocate_file(file: &File, path: &Path, len: u64) -> Result<bool, IoError> {
    let current = file
        .metadata()
        .map_err(|e| IoError::file(IoOp::Stat, path, e))?
        .len();
    if len <= current {
        return Ok(false);
    }
    let err = |e| IoError::file(IoOp::Allocate, path, e);
    let offset = libc::off_t::try_from(current)
        .map_err(|_| err(io::Error::from_raw_os_error(libc::EFBIG)))?;
    let extra = libc::off_t::try_from(len - current)
        .map_err(|_| err(io::Error::from_raw_os_error(libc::EFBIG)))?;
    loop {
        // SAFETY: `fallocate` only reads its integer arguments; the descriptor belongs to `file`,
        // which is open for the duration of the call.
        let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, offset, extra) };
        if rc == 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EOPNOTSUPP) => {
                file.set_len(len).map_err(err)?;
                return Ok(true);
            }
            _ => return Err(err(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flush_method_names_round_trip() {
        for m in FlushMethod::ALL {
            assert_eq!(m.name().parse::<FlushMethod>().unwrap(), m);
            assert_eq!(m.to_string(), m.name());
        }
        assert_eq!(
            "o_direct".parse::<FlushMethod>().unwrap(),
            FlushMethod::ODirect
        );
        assert_eq!(
            " FSYNC ".parse::<FlushMethod>().unwrap(),
            FlushMethod::Fsync
        );
        let err = "O_DIRECT_NO_FSYNC".parse::<FlushMethod>().unwrap_err();
        assert!(err.to_string().contains("O_DIRECT_NO_FSYNC"));
        assert_eq!(FlushMethod::default(), FlushMethod::Fsync);
        assert!(FlushMethod::ODsync.writes_are_durable());
        assert!(!FlushMethod::ODirect.writes_are_durable());
    }

    #[test]
    fn options_and_requests() {
        let o = OpenOptions::new(FlushMethod::ODsync).create(true);
        assert!(o.create && !o.read_only);
        assert_eq!(o.flush_method, FlushMethod::ODsync);
        let mut data = [0u8; 8];
        let r = IoRequest::Read {
            offset: 4,
            buf: &mut data,
        };
        assert_eq!(
            (r.offset(), r.len(), r.is_write(), r.op()),
            (4, 8, false, IoOp::Read)
        );
        let w = IoRequest::Write {
            offset: 9,
            buf: &[],
        };
        assert!(w.is_empty() && w.is_write());
        assert_eq!(format!("{w:?}"), "Write { offset: 9, len: 0 }");
    }

    #[test]
    fn create_read_only_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let opts = OpenOptions::new(FlushMethod::Fsync)
            .create(true)
            .read_only(true);
        let err = open_file(&dir.path().join("x"), &opts).unwrap_err();
        assert_eq!(err.io_kind(), Some(io::ErrorKind::InvalidInput));
    }

    #[test]
    fn direct_alignment_is_checked_only_for_o_direct() {
        let p = Path::new("f");
        assert!(check_direct(p, FlushMethod::Fsync, IoOp::Read, 1, 3, 5).is_ok());
        assert!(check_direct(p, FlushMethod::ODirect, IoOp::Read, 4096, 512, 1024).is_ok());
        for (addr, len, off) in [(1, 512, 0), (4096, 100, 0), (4096, 512, 7)] {
            let e = check_direct(p, FlushMethod::ODirect, IoOp::Write, addr, len, off).unwrap_err();
            assert!(matches!(e, IoError::Misaligned { align: 512, .. }), "{e}");
        }
    }
}
