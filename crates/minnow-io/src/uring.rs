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
//! ## A pool of rings: one per concurrent submitter
//!
//! A *ring* is one such submission/completion queue pair (one `io_uring_setup`: a file
//! descriptor and two small shared-memory regions, about 24 KiB at 256 entries). Completions
//! arrive in the ring they were submitted to, and a submitter that waits with
//! `io_uring_enter(.., min_complete = n)` waits for *any* n completions of that ring. So two
//! threads cannot usefully share a ring at the same time: the second would either wait behind the
//! first one's completions or reap them by mistake. With one ring behind a mutex held across the
//! wait, page cleaners took turns, each waiting for the others' batches: with 8 doublewrite
//! flushers of 128 pages, the 2 MiB segment write took 22 ms instead of 1 (7.6 ms with a ring
//! each; what remains is the disk, shared by eight, see `benches/doublewrite.rs`).
//!
//! The backend therefore keeps a small pool of rings ([`UringBackend::with_rings`]; default
//! [`UringBackend::DEFAULT_RINGS`]). A batch takes a free ring out of the pool (a mutex held only
//! to pop it from a list), submits and reaps *its own* requests on it with no lock held, and puts
//! it back. If every ring is busy, the submitter sleeps on a condition variable until one comes
//! back: it waits for a *ring*, never for another submitter's IOs through a lock. The number of
//! rings is the number of batches that can be in flight at once, the analogue of InnoDB's
//! `innodb_write_io_threads` / `innodb_read_io_threads` (default 4 each). InnoDB needs threads
//! because its IO threads reap completions for everyone; here each submitter reaps its own, so
//! a ring is just a queue a submitter borrows, and rings are cheap enough to have one per
//! page cleaner. All rings are set up by the constructor, and if any cannot be,
//! [`UringBackend::with_rings`] fails with [`IoError::UringUnavailable`] (on kernels before 5.12
//! ring memory counts against `RLIMIT_MEMLOCK`, often 64 KiB there: ask for fewer rings). Syncs
//! are plain `fdatasync`/`fsync` calls (one syscall either way) and need no ring.

use std::collections::VecDeque;
use std::fmt;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use io_uring::{IoUring, Probe, opcode, types};

use crate::file::check_direct;
use crate::sync::OsFile;
use crate::{Backend, FileIo, FlushMethod, IoError, IoOp, IoRequest, OpenOptions};

/// The largest transfer put in one submission entry (a multiple of every alignment).
const MAX_CHUNK: usize = 1 << 30;

/// Files whose reads and writes go through a shared pool of io_uring rings, one ring per batch
/// in flight (see the [module docs](self)).
pub struct UringBackend {
    pool: Arc<RingPool>,
}

/// The rings of one backend. A ring is either in `free` or owned by exactly one [`Lease`].
struct RingPool {
    free: Mutex<Vec<IoUring>>,
    /// Signalled each time a ring goes back into `free`.
    returned: Condvar,
    /// How many rings the pool holds in all.
    rings: usize,
    /// How many entries may be in flight at once in one ring (the smallest submission queue).
    capacity: usize,
}

impl RingPool {
    /// Takes a free ring, sleeping until one is returned if all are in use. The mutex is held
    /// only while a ring is popped from the list, never while anyone waits for IO.
    fn lease(&self) -> Lease<'_> {
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(ring) = free.pop() {
                return Lease {
                    pool: self,
                    ring: Some(ring),
                    in_flight: 0,
                };
            }
            free = self
                .returned
                .wait(free)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// One ring, borrowed from the pool for one batch; dropping it puts the ring back.
struct Lease<'a> {
    pool: &'a RingPool,
    /// Always `Some` until dropped.
    ring: Option<IoUring>,
    /// Entries submitted on this ring whose completions have not been reaped.
    in_flight: usize,
}

impl Lease<'_> {
    fn ring(&mut self) -> &mut IoUring {
        match self.ring.as_mut() {
            Some(ring) => ring,
            None => unreachable!("a lease holds its ring until dropped"),
        }
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if self.in_flight > 0 {
            // Only reachable by unwinding out of the middle of a batch (a bug): the kernel still
            // holds pointers into buffers the unwinding is about to free, and the ring holds
            // completions the next user would take for its own. Neither can be made safe.
            eprintln!(
                "minnow-io: io_uring batch abandoned with {} requests in flight; aborting",
                self.in_flight
            );
            std::process::abort();
        }
        if let Some(ring) = self.ring.take() {
            self.pool
                .free
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(ring);
            self.pool.returned.notify_one();
        }
    }
}

impl fmt::Debug for UringBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UringBackend")
            .field("rings", &self.pool.rings)
            .field("entries", &self.pool.capacity)
            .finish()
    }
}

impl UringBackend {
    /// The default ring size: 256 entries.
    pub const DEFAULT_ENTRIES: u32 = 256;

    /// The default number of rings: 8, so that up to eight submitters (page cleaners, the log
    /// writer, readers) never wait for one another. InnoDB's `innodb_write_io_threads` and
    /// `innodb_read_io_threads` default to 4 each, 8 in all.
    pub const DEFAULT_RINGS: usize = 8;

    /// A backend with [`Self::DEFAULT_RINGS`] rings of [`Self::DEFAULT_ENTRIES`] entries.
    pub fn new() -> Result<UringBackend, IoError> {
        Self::with_rings(Self::DEFAULT_RINGS, Self::DEFAULT_ENTRIES)
    }

    /// A backend with [`Self::DEFAULT_RINGS`] rings of `entries` entries each.
    pub fn with_entries(entries: u32) -> Result<UringBackend, IoError> {
        Self::with_rings(Self::DEFAULT_RINGS, entries)
    }

    /// A backend with `rings` rings (at least 1): up to `rings` batches are in flight at once,
    /// further submitters wait until a ring is free. Each ring has `entries` entries (rounded
    /// up to a power of two by the kernel; larger batches are submitted in rounds). Fails with
    /// [`IoError::UringUnavailable`] if the kernel cannot set up a ring or lacks
    /// `IORING_OP_READ`/`WRITE` (Linux 5.6+).
    pub fn with_rings(rings: usize, entries: u32) -> Result<UringBackend, IoError> {
        let rings = rings.max(1);
        let mut free = Vec::with_capacity(rings);
        let mut capacity = usize::MAX;
        for _ in 0..rings {
            let mut ring = new_ring(entries)?;
            capacity = capacity.min(ring.submission().capacity().max(1));
            free.push(ring);
        }
        Ok(UringBackend {
            pool: Arc::new(RingPool {
                free: Mutex::new(free),
                returned: Condvar::new(),
                rings,
                capacity,
            }),
        })
    }

    /// How many entries one ring holds: the most IOs of one batch in flight at once.
    pub fn entries(&self) -> usize {
        self.pool.capacity
    }

    /// How many rings the backend has: the most batches in flight at once.
    pub fn rings(&self) -> usize {
        self.pool.rings
    }
}

/// Sets up one ring and checks that it supports the opcodes we use.
fn new_ring(entries: u32) -> Result<IoUring, IoError> {
    let uring =
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
    Ok(uring)
}

impl Backend for UringBackend {
    fn open(&self, path: &Path, opts: &OpenOptions) -> Result<Arc<dyn FileIo>, IoError> {
        Ok(Arc::new(UringFile {
            os: OsFile::open(path, opts)?,
            pool: Arc::clone(&self.pool),
        }))
    }

    fn name(&self) -> &'static str {
        "io_uring"
    }
}

/// A file whose reads and writes go through the backend's rings.
struct UringFile {
    os: OsFile,
    pool: Arc<RingPool>,
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
        let mut failure: Option<IoError> = None;
        let capacity = self.pool.capacity;
        // Ours alone until dropped: nobody else submits to it or reaps from it, and no lock is
        // held while we wait for its completions.
        let mut lease = self.pool.lease();

        loop {
            if failure.is_none() {
                let mut in_flight = lease.in_flight;
                let mut sq = lease.ring().submission();
                while in_flight < capacity && !sq.is_full() {
                    let Some(&i) = queue.front() else { break };
                    let Some(op) = ops.get(i) else { break };
                    let entry = op.entry(fd, i as u64);
                    // SAFETY: the entry points into a buffer of the caller's batch, which stays
                    // borrowed (and unmoved) until this function returns, and we do not return
                    // while any entry is still in flight (the loop below waits for all; the
                    // lease aborts if it is dropped with entries in flight). The fd belongs to
                    // `self.os.file`, open for as long as `&self` lives.
                    if unsafe { sq.push(&entry) }.is_err() {
                        break;
                    }
                    queue.pop_front();
                    in_flight += 1;
                }
                drop(sq);
                lease.in_flight = in_flight;
            }
            if lease.in_flight == 0 {
                break;
            }
            let want = lease.in_flight;
            if let Err(e) = lease.ring().submit_and_wait(want) {
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
            let mut reaped = 0usize;
            for cqe in lease.ring().completion() {
                reaped += 1;
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
            lease.in_flight = lease.in_flight.saturating_sub(reaped);
        }
        drop(lease);
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

    fn truncate(&self, len: u64) -> Result<(), IoError> {
        self.os.truncate(len)
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

    /// Fills `pages` pages of 4 KiB with bytes that name the writer, the round and the page.
    fn pattern(tag: u8, round: u8, pages: usize) -> AlignedBuf {
        let mut data = AlignedBuf::pages(PageSize::K4, pages);
        for (i, chunk) in data.chunks_mut(4096).enumerate() {
            for (j, b) in chunk.iter_mut().enumerate() {
                *b = tag
                    .wrapping_mul(31)
                    .wrapping_add(round.wrapping_mul(7))
                    .wrapping_add(i as u8)
                    .wrapping_add((j / 512) as u8);
            }
        }
        data
    }

    /// Writes `data` as one batch of 4 KiB pages at `base`, in reverse order, then reads it back
    /// as one batch and compares.
    fn batch_round_trip(f: &dyn FileIo, data: &AlignedBuf, base: u64) {
        let page = 4096;
        let mut reqs: Vec<IoRequest<'_>> = data
            .chunks(page)
            .enumerate()
            .rev()
            .map(|(i, buf)| IoRequest::Write {
                offset: base + (i * page) as u64,
                buf,
            })
            .collect();
        f.submit(&mut reqs).unwrap();
        let mut back = AlignedBuf::pages(PageSize::K4, data.len() / page);
        let mut reqs: Vec<IoRequest<'_>> = back
            .chunks_mut(page)
            .enumerate()
            .map(|(i, buf)| IoRequest::Read {
                offset: base + (i * page) as u64,
                buf,
            })
            .collect();
        f.submit(&mut reqs).unwrap();
        assert!(
            back == *data,
            "{}: pages at {base} differ",
            f.path().display()
        );
    }

    #[test]
    fn concurrent_submitters_to_different_files_and_one_shared_file() {
        let dir = tempfile::tempdir().unwrap();
        // Fewer rings than threads (some wait for a ring), batches bigger than a ring (rounds).
        let b = UringBackend::with_rings(3, 16).unwrap();
        assert_eq!((b.rings(), b.entries()), (3, 16));
        let threads = 6u8;
        let pages = 40;
        let shared = b
            .open(
                &dir.path().join("shared"),
                &OpenOptions::new(FlushMethod::ODirect).create(true),
            )
            .unwrap();
        std::thread::scope(|s| {
            for t in 0..threads {
                let (b, shared, dir) = (&b, &shared, dir.path());
                s.spawn(move || {
                    let own = b
                        .open(
                            &dir.join(format!("own-{t}")),
                            &OpenOptions::new(FlushMethod::ODirect).create(true),
                        )
                        .unwrap();
                    let shared_base = u64::from(t) * (pages as u64) * 4096;
                    for round in 0..20u8 {
                        batch_round_trip(&*own, &pattern(t, round, pages), 0);
                        let data = pattern(t.wrapping_add(100), round, pages);
                        batch_round_trip(&**shared, &data, shared_base);
                    }
                });
            }
        });
        // Every thread's last round is intact, in its own file and in its slice of the shared one.
        for t in 0..threads {
            let own = b
                .open(
                    &dir.path().join(format!("own-{t}")),
                    &OpenOptions::new(FlushMethod::Fsync),
                )
                .unwrap();
            let mut back = AlignedBuf::pages(PageSize::K4, pages);
            own.read_at(&mut back, 0).unwrap();
            assert!(back[..] == pattern(t, 19, pages)[..], "own-{t}");
            let base = u64::from(t) * (pages as u64) * 4096;
            shared.read_at(&mut back, base).unwrap();
            assert!(
                back[..] == pattern(t.wrapping_add(100), 19, pages)[..],
                "shared {t}"
            );
        }
        assert_eq!(
            shared.len().unwrap(),
            u64::from(threads) * pages as u64 * 4096
        );
        // Every ring is back in the pool.
        assert_eq!(b.pool.free.lock().unwrap().len(), 3);
    }

    /// A FIFO opened read-write: a read through the ring blocks until someone writes to it,
    /// which lets a test hold one submitter in the kernel for as long as it likes.
    fn fifo(dir: &Path) -> std::path::PathBuf {
        let path = dir.join("fifo");
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `c` is a NUL-terminated path that lives across the call.
        let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
        assert_eq!(rc, 0, "mkfifo: {}", io::Error::last_os_error());
        path
    }

    /// Waits until `n` rings are lent out (the blocked reader has taken its ring).
    fn wait_for_leases(b: &UringBackend, n: usize) {
        for _ in 0..2000 {
            if b.rings() - b.pool.free.lock().unwrap().len() == n {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        panic!("{n} rings were never lent out");
    }

    /// Runs `body` while one of `rings` rings is held by a read blocked on a FIFO. `body` gets
    /// a regular file opened through it, and `wake`, which releases the blocked
    /// read; the read is released when `body` returns or panics, so the test always ends.
    fn with_a_blocked_ring(rings: usize, body: impl FnOnce(&dyn FileIo, &dyn Fn())) {
        let dir = tempfile::tempdir().unwrap();
        let b = UringBackend::with_rings(rings, 8).unwrap();
        let fifo_path = fifo(dir.path());
        let opts = OpenOptions::new(FlushMethod::Fsync);
        let pipe = b.open(&fifo_path, &opts).unwrap();
        let file = b.open(&dir.path().join("f"), &opts.create(true)).unwrap();
        let woken = std::cell::Cell::new(false);
        let wake = || {
            if !woken.replace(true) {
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&fifo_path)
                    .and_then(|mut w| std::io::Write::write_all(&mut w, b"wake"))
                    .unwrap();
            }
        };
        struct WakeOnDrop<'a>(&'a dyn Fn());
        impl Drop for WakeOnDrop<'_> {
            fn drop(&mut self) {
                (self.0)();
            }
        }
        std::thread::scope(|s| {
            let blocked = s.spawn(|| {
                let mut buf = [0u8; 4];
                pipe.read_at(&mut buf, 0).unwrap();
                buf
            });
            wait_for_leases(&b, 1);
            let guard = WakeOnDrop(&wake);
            body(&*file, &wake);
            drop(guard);
            assert_eq!(&blocked.join().unwrap(), b"wake");
        });
        assert_eq!(b.pool.free.lock().unwrap().len(), rings);
    }

    #[test]
    fn a_submitter_waiting_for_its_io_does_not_hold_up_the_others() {
        with_a_blocked_ring(2, |file, wake| {
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::scope(|s| {
                // With one ring behind a lock held while waiting, this would wait for the FIFO.
                let other = s.spawn(move || {
                    batch_round_trip(file, &pattern(1, 1, 20), 0);
                    tx.send(()).unwrap();
                });
                let done = rx.recv_timeout(std::time::Duration::from_secs(20));
                wake();
                assert!(done.is_ok(), "a batch waited for another submitter's IO");
                other.join().unwrap();
            });
        });
    }

    #[test]
    fn when_every_ring_is_busy_a_submitter_waits_for_one() {
        with_a_blocked_ring(1, |file, wake| {
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::scope(|s| {
                let waiter = s.spawn(move || {
                    file.write_at(&[9u8; 100], 0).unwrap();
                    tx.send(()).unwrap();
                });
                let early = rx.recv_timeout(std::time::Duration::from_millis(200));
                wake();
                assert!(early.is_err(), "the only ring was used twice at once");
                rx.recv_timeout(std::time::Duration::from_secs(20))
                    .expect("the waiting submitter never got the ring back");
                waiter.join().unwrap();
            });
            let mut back = [0u8; 100];
            file.read_at(&mut back, 0).unwrap();
            assert_eq!(back, [9u8; 100]);
        });
    }
}
