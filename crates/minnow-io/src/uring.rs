//! The io_uring backend: many IOs, one system call, one wait.
//!
//! With `pread`/`pwrite` every IO is a system call that blocks until that one IO is done, so a
//! page cleaner writing 128 pages waits for 128 round trips one after the other, even though the
//! disk could work on many at once (it has queues inside; see limits.md A.2: 17 k IOPS at queue
//! depth 1, 42 k at depth 8).
//!
//! io_uring (Linux 5.1+) is a pair of ring buffers shared between the process and the kernel:
//!
//! ```text
//!   process                         kernel
//!   ------- push SQEs --> [ submission queue ] --> starts every IO at once
//!   <------ reap CQEs --- [ completion queue ] <-- one entry per finished IO
//! ```
//!
//! We write one *submission queue entry* per request (opcode, fd, buffer, length, offset, and a
//! `user_data` tag), then a single `io_uring_enter` call submits them all and waits until all
//! their *completion queue entries* have arrived. N IOs cost one system call and one wait, and
//! the device sees queue depth N.
//!
//! Things a correct loop must handle (and this one does):
//! - a *short* transfer (the result is fewer bytes than asked): resubmit the rest;
//! - `-EINTR` / `-EAGAIN` as a result: resubmit the same request;
//! - a batch bigger than the ring: submit it in rounds of at most the ring's size;
//! - an error in one request: stop submitting, but *wait for every request already in flight*
//!   before returning, because the kernel is still reading or writing those buffers.
//!
//! If the kernel refuses to create a ring (too old: `ENOSYS`; forbidden by
//! `kernel.io_uring_disabled` or a container's seccomp filter: `EPERM`), [`UringBackend::new`]
//! returns [`IoError::UringUnavailable`]: nothing silently falls back to another backend.
//!
//! One ring per backend, behind a mutex: threads that submit at the same moment take turns.
//! That is simple and enough for a page cleaner and a log writer; a ring per thread would scale
//! further. Syncs are plain `fdatasync`/`fsync` calls (one syscall either way).

use std::collections::VecDeque;
use std::fmt;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use io_uring::{IoUring, Probe, opcode, types};

use crate::file::check_direct;
use crate::sync::OsFile;
use crate::{Backend, FileIo, FlushMethod, IoError, IoOp, IoRequest, OpenOptions};

/// The largest transfer put in one submission entry (a multiple of every alignment).
const MAX_CHUNK: usize = 1 << 30;

/// Files whose reads and writes go through one shared io_uring.
pub struct UringBackend {
    ring: Arc<Ring>,
}

struct Ring {
    uring: Mutex<IoUring>,
    /// How many entries may be in flight at once (the submission queue's size).
    capacity: usize,
}

impl fmt::Debug for UringBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UringBackend")
            .field("entries", &self.ring.capacity)
            .finish()
    }
}

impl UringBackend {
    /// The default ring size: 256 entries.
    pub const DEFAULT_ENTRIES: u32 = 256;

    /// A backend with a ring of [`Self::DEFAULT_ENTRIES`] entries.
    pub fn new() -> Result<UringBackend, IoError> {
        Self::with_entries(Self::DEFAULT_ENTRIES)
    }

    /// A backend with a ring of `entries` entries (rounded up to a power of two by the kernel;
    /// larger batches are submitted in rounds). Fails with [`IoError::UringUnavailable`] if
    /// the kernel cannot set up a ring or lacks `IORING_OP_READ`/`WRITE` (Linux 5.6+).
    pub fn with_entries(entries: u32) -> Result<UringBackend, IoError> {
        let mut uring =
            IoUring::new(entries.max(1)).map_err(|source| IoError::UringUnavailable { source })?;
        let mut probe = Probe::new();
        uring
            .submitter()
            .register_probe(&mut probe)
            .map_err(|source| IoError::UringUnavailable { source })?;
        if !probe.is_supported(opcode::Read::CODE) || !probe.is_supported(opcode::Write::CODE) {
            return Err(IoError::UringUnavailable {
                source: io::Error::new(
                    io::ErrorKind::Unsupported,
                    "the kernel lacks IORING_OP_READ/IORING_OP_WRITE (Linux 5.6+)",
                ),
            });
        }
        let capacity = uring.submission().capacity().max(1);
        Ok(UringBackend {
            ring: Arc::new(Ring {
                uring: Mutex::new(uring),
                capacity,
            }),
        })
    }

    /// How many entries the ring holds: the most IOs in flight at once.
    pub fn entries(&self) -> usize {
        self.ring.capacity
    }
}

impl Backend for UringBackend {
    fn open(&self, path: &Path, opts: &OpenOptions) -> Result<Arc<dyn FileIo>, IoError> {
        Ok(Arc::new(UringFile {
            os: OsFile::open(path, opts)?,
            ring: Arc::clone(&self.ring),
        }))
    }

    fn name(&self) -> &'static str {
        "io_uring"
    }
}

/// A file whose reads and writes go through the backend's ring.
struct UringFile {
    os: OsFile,
    ring: Arc<Ring>,
}

impl fmt::Debug for UringFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UringFile")
            .field("path", &self.os.path)
            .field("method", &self.os.method)
            .finish()
    }
}

/// One request in progress: where its remaining bytes are.
struct Op {
    write: bool,
    /// The next byte to transfer (into the caller's buffer, which outlives the batch).
    ptr: *mut u8,
    /// Bytes still to transfer.
    remaining: usize,
    /// File offset of the next byte.
    offset: u64,
    /// The request as given, for error messages.
    start: u64,
    len: usize,
}

impl Op {
    fn entry(&self, fd: types::Fd, tag: u64) -> io_uring::squeue::Entry {
        let len = u32::try_from(self.remaining.min(MAX_CHUNK)).unwrap_or(MAX_CHUNK as u32);
        let entry = if self.write {
            opcode::Write::new(fd, self.ptr.cast_const(), len)
                .offset(self.offset)
                .build()
        } else {
            opcode::Read::new(fd, self.ptr, len)
                .offset(self.offset)
                .build()
        };
        entry.user_data(tag)
    }

    fn error(&self, path: &Path, source: io::Error) -> IoError {
        let op = if self.write { IoOp::Write } else { IoOp::Read };
        IoError::io(op, path, self.start, self.len, source)
    }
}

impl UringFile {
    fn run(&self, batch: &mut [IoRequest<'_>]) -> Result<(), IoError> {
        let path = self.os.path.as_path();
        for r in batch.iter() {
            check_direct(path, self.os.method, r.op(), r.addr(), r.len(), r.offset())?;
        }
        let mut ops: Vec<Op> = batch
            .iter_mut()
            .filter(|r| !r.is_empty())
            .map(|r| match r {
                IoRequest::Read { offset, buf } => Op {
                    write: false,
                    ptr: buf.as_mut_ptr(),
                    remaining: buf.len(),
                    offset: *offset,
                    start: *offset,
                    len: buf.len(),
                },
                IoRequest::Write { offset, buf } => Op {
                    write: true,
                    ptr: buf.as_ptr().cast_mut(),
                    remaining: buf.len(),
                    offset: *offset,
                    start: *offset,
                    len: buf.len(),
                },
            })
            .collect();
        if ops.is_empty() {
            return Ok(());
        }
        let fd = types::Fd(self.os.file.as_raw_fd());
        let mut queue: VecDeque<usize> = (0..ops.len()).collect();
        let mut in_flight = 0usize;
        let mut failure: Option<IoError> = None;
        let mut ring = self
            .ring
            .uring
            .lock()
            .unwrap_or_else(PoisonError::into_inner);

        loop {
            if failure.is_none() {
                let mut sq = ring.submission();
                while in_flight < self.ring.capacity && !sq.is_full() {
                    let Some(&i) = queue.front() else { break };
                    let Some(op) = ops.get(i) else { break };
                    let entry = op.entry(fd, i as u64);
                    // SAFETY: the entry points into a buffer of the caller's batch, which stays
                    // borrowed (and unmoved) until this function returns, and we do not return
                    // while any entry is still in flight (the loop below waits for all). The fd
                    // belongs to `self.os.file`, open for as long as `&self` lives.
                    if unsafe { sq.push(&entry) }.is_err() {
                        break;
                    }
                    queue.pop_front();
                    in_flight += 1;
                }
            }
            if in_flight == 0 {
                break;
            }
            if let Err(e) = ring.submit_and_wait(in_flight) {
                match e.raw_os_error() {
                    Some(libc::EINTR | libc::EAGAIN | libc::EBUSY | libc::ENOMEM) => {}
                    _ => {
                        // The kernel may hold pointers into the caller's buffers and we cannot
                        // know when it lets go; returning would be unsound. With a valid ring
                        // io_uring_enter fails only with the transient errors above.
                        eprintln!("minnow-io: io_uring_enter failed with {e} during IO; aborting");
                        std::process::abort();
                    }
                }
            }
            for cqe in ring.completion() {
                in_flight = in_flight.saturating_sub(1);
                let i = cqe.user_data() as usize;
                let Some(op) = ops.get_mut(i) else { continue };
                let res = cqe.result();
                if res < 0 {
                    if matches!(-res, libc::EINTR | libc::EAGAIN) {
                        queue.push_back(i);
                    } else if failure.is_none() {
                        failure = Some(op.error(path, io::Error::from_raw_os_error(-res)));
                    }
                } else if res == 0 {
                    if failure.is_none() {
                        let source = if op.write {
                            io::Error::new(io::ErrorKind::WriteZero, "write returned 0 bytes")
                        } else {
                            io::Error::new(io::ErrorKind::UnexpectedEof, "read past end of file")
                        };
                        failure = Some(op.error(path, source));
                    }
                } else {
                    let n = (res as usize).min(op.remaining);
                    op.remaining -= n;
                    op.offset += n as u64;
                    // SAFETY: `n <= remaining`, so the pointer stays within (or one past the end
                    // of) the request's buffer.
                    op.ptr = unsafe { op.ptr.add(n) };
                    if op.remaining > 0 {
                        queue.push_back(i);
                    }
                }
            }
        }
        failure.map_or(Ok(()), Err)
    }
}

impl FileIo for UringFile {
    fn path(&self) -> &Path {
        &self.os.path
    }

    fn flush_method(&self) -> FlushMethod {
        self.os.method
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), IoError> {
        self.run(&mut [IoRequest::Read { offset, buf }])
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> Result<(), IoError> {
        self.run(&mut [IoRequest::Write { offset, buf }])
    }

    fn submit(&self, batch: &mut [IoRequest<'_>]) -> Result<(), IoError> {
        self.run(batch)
    }

    fn sync_data(&self) -> Result<(), IoError> {
        self.os.sync_data()
    }

    fn sync_all(&self) -> Result<(), IoError> {
        self.os.sync_all()
    }

    fn len(&self) -> Result<u64, IoError> {
        self.os.len()
    }

    fn allocate(&self, len: u64) -> Result<(), IoError> {
        self.os.allocate(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AlignedBuf;
    use minnow_page::PageSize;

    fn backend() -> UringBackend {
        // io_uring works on the machines this project builds on (limits.md A.2); a failure
        // here is a real failure, not a skip.
        UringBackend::with_entries(16).unwrap()
    }

    #[test]
    fn batch_larger_than_the_ring_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let b = backend();
        assert_eq!(b.entries(), 16);
        for method in FlushMethod::ALL {
            let path = dir.path().join(format!("f-{method}"));
            let f = b
                .open(&path, &OpenOptions::new(method).create(true))
                .unwrap();
            let page = PageSize::K4.bytes();
            let n = 150;
            let mut data = AlignedBuf::pages(PageSize::K4, n);
            for (i, chunk) in data.chunks_mut(page).enumerate() {
                chunk.fill((i % 251) as u8 + 1);
            }
            let mut reqs: Vec<IoRequest<'_>> = data
                .chunks(page)
                .enumerate()
                .rev()
                .map(|(i, buf)| IoRequest::Write {
                    offset: (i * page) as u64,
                    buf,
                })
                .collect();
            f.submit(&mut reqs).unwrap();
            f.sync_data().unwrap();
            assert_eq!(f.len().unwrap(), (n * page) as u64);
            let mut back = AlignedBuf::pages(PageSize::K4, n);
            let mut reqs: Vec<IoRequest<'_>> = back
                .chunks_mut(page)
                .enumerate()
                .map(|(i, buf)| IoRequest::Read {
                    offset: (i * page) as u64,
                    buf,
                })
                .collect();
            f.submit(&mut reqs).unwrap();
            assert!(back == data, "{method}: pages differ after the round trip");
        }
    }

    #[test]
    fn read_past_end_is_eof_and_in_flight_requests_finish() {
        let dir = tempfile::tempdir().unwrap();
        let b = backend();
        let f = b
            .open(
                &dir.path().join("f"),
                &OpenOptions::new(FlushMethod::Fsync).create(true),
            )
            .unwrap();
        f.write_at(&[7u8; 1000], 0).unwrap();
        let (mut a, mut c) = ([0u8; 100], [0u8; 100]);
        let mut batch = [
            IoRequest::Read {
                offset: 0,
                buf: &mut a,
            },
            IoRequest::Read {
                offset: 950,
                buf: &mut c,
            },
        ];
        let err = f.submit(&mut batch).unwrap_err();
        assert_eq!(err.io_kind(), Some(io::ErrorKind::UnexpectedEof), "{err}");
        assert!(
            matches!(
                err,
                IoError::Io {
                    offset: 950,
                    len: 100,
                    ..
                }
            ),
            "{err}"
        );
        assert_eq!(a, [7u8; 100]);
        // The short read delivered what there was before failing.
        assert_eq!(&c[..50], &[7u8; 50][..]);
        // The ring is still usable afterwards; empty requests are fine.
        f.submit(&mut [IoRequest::Write {
            offset: 0,
            buf: &[],
        }])
        .unwrap();
        let mut one = [0u8; 1];
        f.read_at(&mut one, 999).unwrap();
        assert_eq!(one, [7]);
    }

    #[test]
    fn o_direct_rejects_unaligned_buffers_before_submitting() {
        let dir = tempfile::tempdir().unwrap();
        let b = backend();
        let f = b
            .open(
                &dir.path().join("f"),
                &OpenOptions::new(FlushMethod::ODirect).create(true),
            )
            .unwrap();
        let buf = AlignedBuf::new(1024).unwrap();
        let err = f.write_at(&buf[1..513], 0).unwrap_err();
        assert!(matches!(err, IoError::Misaligned { .. }), "{err}");
        f.write_at(&buf[..512], 512).unwrap();
        assert_eq!(f.len().unwrap(), 1024);
    }
}
