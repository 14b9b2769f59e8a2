//! The plain backend: one system call per IO.
//!
//! [`SyncBackend`] reads with `pread(2)` and writes with `pwrite(2)` (through
//! [`std::os::unix::fs::FileExt`], which also retries short transfers and `EINTR`), and syncs
//! with real `fdatasync(2)` / `fsync(2)`. The positional calls take the offset as an argument,
//! so many threads can share one descriptor without fighting over a file position. A batch is
//! just a loop: N requests cost N system calls, each waiting for its own IO. Compare
//! [`crate::UringBackend`].

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::file::{allocate_file, check_direct, open_file};
use crate::{Backend, FileIo, FlushMethod, IoError, IoOp, OpenOptions};

/// Blocking `pread`/`pwrite` and real syncs.
#[derive(Debug, Clone, Copy, Default)]
pub struct SyncBackend;

impl SyncBackend {
    /// The backend (it has no state).
    pub const fn new() -> SyncBackend {
        SyncBackend
    }
}

impl Backend for SyncBackend {
    fn open(&self, path: &Path, opts: &OpenOptions) -> Result<Arc<dyn FileIo>, IoError> {
        Ok(Arc::new(OsFile::open(path, opts)?))
    }

    fn name(&self) -> &'static str {
        "sync"
    }
}

/// A real file descriptor with the flush-method bookkeeping both OS backends share.
#[derive(Debug)]
pub(crate) struct OsFile {
    pub(crate) file: File,
    pub(crate) path: PathBuf,
    pub(crate) method: FlushMethod,
    /// Set when the length changed by `allocate`: an `O_DSYNC` file then still needs a real
    /// sync to make the new length durable.
    meta_dirty: AtomicBool,
}

impl OsFile {
    pub(crate) fn open(path: &Path, opts: &OpenOptions) -> Result<OsFile, IoError> {
        Ok(OsFile {
            file: open_file(path, opts)?,
            path: path.to_path_buf(),
            method: opts.flush_method,
            meta_dirty: AtomicBool::new(false),
        })
    }

    pub(crate) fn sync_data(&self) -> Result<(), IoError> {
        let needed = match self.method {
            FlushMethod::Fsync | FlushMethod::ODirect => true,
            FlushMethod::ODsync => self.meta_dirty.swap(false, Ordering::AcqRel),
        };
        if needed {
            self.file
                .sync_data()
                .map_err(|e| IoError::file(IoOp::Sync, &self.path, e))?;
        }
        Ok(())
    }

    pub(crate) fn sync_all(&self) -> Result<(), IoError> {
        self.meta_dirty.store(false, Ordering::Release);
        self.file
            .sync_all()
            .map_err(|e| IoError::file(IoOp::Sync, &self.path, e))
    }

    pub(crate) fn len(&self) -> Result<u64, IoError> {
        self.file
            .metadata()
            .map(|m| m.len())
            .map_err(|e| IoError::file(IoOp::Stat, &self.path, e))
    }

    pub(crate) fn allocate(&self, len: u64) -> Result<(), IoError> {
        if allocate_file(&self.file, &self.path, len)? {
            self.meta_dirty.store(true, Ordering::Release);
        }
        Ok(())
    }

    pub(crate) fn truncate(&self, len: u64) -> Result<(), IoError> {
        if len >= self.len()? {
            return Ok(());
        }
        self.file
            .set_len(len)
            .map_err(|e| IoError::file(IoOp::Truncate, &self.path, e))?;
        self.meta_dirty.store(true, Ordering::Release);
        Ok(())
    }
}

impl FileIo for OsFile {
    fn path(&self) -> &Path {
        &self.path
    }

    fn flush_method(&self) -> FlushMethod {
        self.method
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), IoError> {
        let addr = buf.as_ptr() as usize;
        check_direct(&self.path, self.method, IoOp::Read, addr, buf.len(), offset)?;
        self.file
            .read_exact_at(buf, offset)
            .map_err(|e| IoError::io(IoOp::Read, &self.path, offset, buf.len(), e))
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> Result<(), IoError> {
        let addr = buf.as_ptr() as usize;
        check_direct(
            &self.path,
            self.method,
            IoOp::Write,
            addr,
            buf.len(),
            offset,
        )?;
        self.file
            .write_all_at(buf, offset)
            .map_err(|e| IoError::io(IoOp::Write, &self.path, offset, buf.len(), e))
    }

    fn sync_data(&self) -> Result<(), IoError> {
        OsFile::sync_data(self)
    }

    fn sync_all(&self) -> Result<(), IoError> {
        OsFile::sync_all(self)
    }

    fn len(&self) -> Result<u64, IoError> {
        OsFile::len(self)
    }

    fn allocate(&self, len: u64) -> Result<(), IoError> {
        OsFile::allocate(self, len)
    }

    fn truncate(&self, len: u64) -> Result<(), IoError> {
        OsFile::truncate(self, len)
    }
}
