//! The plain backend: one system call per IO.
//!
//! [`SyncBackend`] reads with `pread(2)` and writes with `pwrite(2)` (through
//! [`std::os::unix::fs::FileExt`], which also retries short transfers and `EINTR`), and syncs
//! with real `fdatasync(2)` / `fsync(2)`. The positional calls take the offset as an argument,
//! so many threads can share one descriptor without fighting over a file position. A batch is
//! a loop: N requests cost N system calls, each waiting for its own IO. Compare
//! [`crate::UringBackend`], which hands the kernel a whole batch at once.
//!
//! ## Write threads: InnoDB's "simulated AIO"
//!
//! A `pwrite` on an `O_DIRECT` file returns when the device has the bytes: about 0.2 ms for a
//! 16 KiB page on the virtio disk here, most of it waiting. One thread writing a flush batch
//! of 64 pages therefore keeps one write outstanding at a time and spends ~13 ms where the
//! device could take several writes at once (it reaches its IOPS ceiling near queue depth 8).
//! InnoDB without native AIO answers this with `innodb_write_io_threads` (default 4): a pool
//! of threads, each issuing blocking writes, so that several are in flight together.
//!
//! [`SyncBackend::with_write_threads`] does the same for a batch of writes given to
//! [`FileIo::submit`]: the batch is cut into up to `n` runs of consecutive requests (callers
//! submit pages in page order, so each run stays in ascending offsets), `n - 1` of them go to
//! scoped threads started for the batch and the caller writes the first itself; `submit`
//! returns when every run has ended, with the first error if any. Requests of one batch may
//! complete in any order, as [`FileIo::submit`] always allowed, so nothing above changes: the
//! sync that makes the batch durable is still the caller's, after `submit` returns. A batch
//! with any read in it, or with a single write, runs on the caller's thread as before. The
//! threads are started per batch rather than kept in a pool: a start costs tens of
//! microseconds against the milliseconds a flush batch waits on the device, and it keeps the
//! borrowed buffers of the batch safe without `unsafe` lifetime tricks.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::file::{allocate_file, check_direct, open_file};
use crate::{Backend, FileIo, FlushMethod, IoError, IoOp, IoRequest, OpenOptions};

/// Blocking `pread`/`pwrite` and real syncs; a batch of writes runs on up to
/// [`SyncBackend::write_threads`] threads (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct SyncBackend {
    write_threads: usize,
}

impl Default for SyncBackend {
    fn default() -> SyncBackend {
        SyncBackend::new()
    }
}

impl SyncBackend {
    /// The backend with one write thread: every batch is a loop on the caller's thread.
    pub const fn new() -> SyncBackend {
        SyncBackend { write_threads: 1 }
    }

    /// The backend whose files write a batch of writes on up to `threads` threads at once
    /// (`innodb_write_io_threads`; 0 counts as 1).
    pub const fn with_write_threads(threads: usize) -> SyncBackend {
        SyncBackend {
            write_threads: if threads == 0 { 1 } else { threads },
        }
    }

    /// How many writes of one batch may be in flight at once.
    pub const fn write_threads(&self) -> usize {
        self.write_threads
    }
}

impl Backend for SyncBackend {
    fn open(&self, path: &Path, opts: &OpenOptions) -> Result<Arc<dyn FileIo>, IoError> {
        let mut file = OsFile::open(path, opts)?;
        file.write_threads = self.write_threads;
        Ok(Arc::new(file))
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
    /// Writes of one [`FileIo::submit`] batch that may be in flight at once (1: a loop).
    write_threads: usize,
}

impl OsFile {
    pub(crate) fn open(path: &Path, opts: &OpenOptions) -> Result<OsFile, IoError> {
        Ok(OsFile {
            file: open_file(path, opts)?,
            path: path.to_path_buf(),
            method: opts.flush_method,
            meta_dirty: AtomicBool::new(false),
            write_threads: 1,
        })
    }

    /// Runs `batch` in order on this thread.
    fn run_in_order(&self, batch: &mut [IoRequest<'_>]) -> Result<(), IoError> {
        for request in batch.iter_mut() {
            match request {
                IoRequest::Read { offset, buf } => self.read_at(buf, *offset)?,
                IoRequest::Write { offset, buf } => self.write_at(buf, *offset)?,
            }
        }
        Ok(())
    }

    /// Runs a batch of writes on up to `threads` threads (this one included), one run of
    /// consecutive requests each; returns when all have ended, with the first error.
    fn write_in_parallel(
        &self,
        batch: &mut [IoRequest<'_>],
        threads: usize,
    ) -> Result<(), IoError> {
        let per = batch.len().div_ceil(threads.max(1)).max(1);
        std::thread::scope(|s| {
            let mut runs = batch.chunks_mut(per);
            let first = runs.next();
            let others: Vec<_> = runs
                .map(|run| s.spawn(move || self.run_in_order(run)))
                .collect();
            let mut result = first.map_or(Ok(()), |run| self.run_in_order(run));
            for h in others {
                let r = h
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                if result.is_ok() {
                    result = r;
                }
            }
            result
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

    /// A batch of two or more writes and no reads runs on up to `write_threads` threads
    /// (see the module docs); anything else in order on this thread.
    fn submit(&self, batch: &mut [IoRequest<'_>]) -> Result<(), IoError> {
        let writes = batch.iter().filter(|r| r.is_write()).count();
        let threads = self.write_threads.min(writes);
        if threads <= 1 || writes != batch.len() {
            return self.run_in_order(batch);
        }
        self.write_in_parallel(batch, threads)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AlignedBuf;

    fn open(backend: &SyncBackend, path: &Path, method: FlushMethod) -> Arc<dyn FileIo> {
        backend
            .open(path, &OpenOptions::new(method).create(true))
            .unwrap()
    }

    #[test]
    fn write_threads_count_at_least_one() {
        assert_eq!(SyncBackend::new().write_threads(), 1);
        assert_eq!(SyncBackend::default().write_threads(), 1);
        assert_eq!(SyncBackend::with_write_threads(0).write_threads(), 1);
        assert_eq!(SyncBackend::with_write_threads(4).write_threads(), 4);
    }

    /// 37 writes over 4 threads (runs of 10, 10, 10 and 7), under O_DIRECT as the page
    /// cleaner issues them: every one lands where it was aimed.
    #[test]
    fn a_batch_of_writes_on_write_threads_lands_whole() {
        let dir = tempfile::tempdir().unwrap();
        for (method, threads) in [(FlushMethod::ODirect, 4), (FlushMethod::Fsync, 64)] {
            let f = open(
                &SyncBackend::with_write_threads(threads),
                &dir.path().join(format!("f-{method}")),
                method,
            );
            let bufs: Vec<AlignedBuf> = (0..37u8)
                .map(|i| {
                    let mut b = AlignedBuf::new(4096).unwrap();
                    b.fill(i.wrapping_mul(7).wrapping_add(1));
                    b
                })
                .collect();
            // Out of offset order, as nothing requires them sorted.
            let mut batch: Vec<IoRequest<'_>> = bufs
                .iter()
                .enumerate()
                .map(|(i, b)| IoRequest::Write {
                    offset: ((i * 11) % 37) as u64 * 4096,
                    buf: b,
                })
                .collect();
            f.submit(&mut batch).unwrap();
            f.sync_data().unwrap();
            assert_eq!(f.len().unwrap(), 37 * 4096);
            let mut back = AlignedBuf::new(4096).unwrap();
            for (i, b) in bufs.iter().enumerate() {
                f.read_at(&mut back, ((i * 11) % 37) as u64 * 4096).unwrap();
                assert_eq!(&back[..], &b[..], "{method}: write {i}");
            }
        }
    }

    /// A request that fails (misaligned under O_DIRECT) in one thread's run is the batch's
    /// error, whichever thread ran it; the other runs still complete.
    #[test]
    fn a_failed_write_on_a_write_thread_is_the_batch_error() {
        let dir = tempfile::tempdir().unwrap();
        let f = open(
            &SyncBackend::with_write_threads(3),
            &dir.path().join("f"),
            FlushMethod::ODirect,
        );
        let good = AlignedBuf::new(4096).unwrap();
        let mut batch = vec![
            IoRequest::Write {
                offset: 0,
                buf: &good,
            },
            IoRequest::Write {
                offset: 4096,
                buf: &good,
            },
            IoRequest::Write {
                offset: 8192,
                buf: &good,
            },
            IoRequest::Write {
                offset: 12_288 + 7,
                buf: &good,
            },
            IoRequest::Write {
                offset: 16_384,
                buf: &good,
            },
        ];
        let e = f.submit(&mut batch).unwrap_err();
        assert!(
            matches!(e, IoError::Misaligned { offset, .. } if offset == 12_288 + 7),
            "{e}"
        );
        // Runs of two: the first two and the last went through.
        assert_eq!(f.len().unwrap(), 16_384 + 4096);
    }

    /// A batch with a read in it runs in order on the caller's thread, so a read after a
    /// write of the same bytes sees them.
    #[test]
    fn a_batch_with_a_read_runs_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let f = open(
            &SyncBackend::with_write_threads(4),
            &dir.path().join("f"),
            FlushMethod::Fsync,
        );
        let one = [1u8; 512];
        let two = [2u8; 512];
        let mut back = [0u8; 512];
        let mut batch = vec![
            IoRequest::Write {
                offset: 0,
                buf: &one,
            },
            IoRequest::Write {
                offset: 0,
                buf: &two,
            },
            IoRequest::Read {
                offset: 0,
                buf: &mut back,
            },
        ];
        f.submit(&mut batch).unwrap();
        drop(batch);
        assert_eq!(back, two);
    }
}
