//! The running log: appending mini-transactions, group commit, checkpoints.
//!
//! ## Appending
//!
//! A mini-transaction (mtr) ends by handing its records, encoded as one group, to
//! [`Log::append`]. Under one short mutex the group is copied into the in-memory **log buffer**
//! and receives its LSN range; nothing touches the disk yet. Appending is the only serialised
//! step of a commit, and it is a `memcpy`.
//!
//! ## Group commit
//!
//! Making a commit durable means writing the log buffer up to its end LSN and syncing the file,
//! and a sync costs 100-300 µs on this machine's disk whatever it carries. So
//! [`Log::write_up_to`] elects a **leader**: the first thread to arrive while no write is in
//! progress becomes the leader, writes *everything* appended so far (not just its own commit)
//! with one write and one sync, and publishes the new durable LSN. Threads that arrive while a
//! leader is busy wait on a condition variable; when it finishes, all of them wake, those whose
//! LSN is now durable return without any IO, and one of the rest becomes the next leader. (A
//! plain mutex would wake the waiters one at a time, each stuck behind the *next* leader's
//! sync even though the previous one already covered it.) Under load, one sync serves many
//! commits; [`LogStats`] counts how many.
//!
//! ## Durability at commit (`flush_log_at_trx_commit`)
//!
//! | value | at commit | survives a process crash | survives a power cut |
//! |---|---|---|---|
//! | 1 | write and sync | yes | yes |
//! | 2 | write to the OS | yes | up to ~1 s lost |
//! | 0 | nothing | up to ~1 s lost | up to ~1 s lost |
//!
//! With 0 and 2 a background flusher ([`Log::spawn_flusher`]) writes and syncs about once per
//! interval. [`Log::commit`] returns a [`Durability`] that says which guarantee the commit got.
//!
//! ## Space and checkpoints
//!
//! The file is circular, and redo not yet covered by a checkpoint is never overwritten. Every
//! mtr reserves the room its group may take before it latches a page ([`Log::reserve`]) and
//! appends into it ([`Log::append_reserved`]), so that writers that start at once cannot
//! together overrun the checkpoint; a reservation that does not fit asks for a checkpoint and
//! waits. The `space` module (`log/space.rs`) explains reservations, the async and sync marks
//! and the checkpoint each request asks for ([`Log::flush_target`]).
//! ## The file grows as it is used
//!
//! [`Log::create`] does not preallocate the whole data area (a six-row database need not own a
//! 100 MiB file): it allocates the header and the first 1/32 of the capacity, and a write that
//! reaches beyond the allocated end first allocates the next 1/32 (as InnoDB 8.0.30 creates
//! its redo files of capacity/32 as they are needed). After the first lap the file has its
//! full size and stays so. A write beyond the old end is made durable by the same
//! `fdatasync` as any other (it syncs the size and extents needed to read the data back), and
//! recovery reads the part of the data area beyond the end of a short file as zeroes: never
//! a valid block, so the log ends there.
//!
//! ## The file shrinks when it is idle
//!
//! A long transaction or a load grows the file to its full capacity, and it would keep that
//! size for ever. [`Log::shrink`] (called at a clean close, after the final checkpoint) gives
//! it back: when the checkpoint is at the end of the log, no byte of the file is needed for
//! recovery, so it truncates the file to its 4 KiB header. The next write lands at the front of
//! the data area, because the log first **jumps to the next lap**: it writes a checkpoint at
//! the first data byte of the block that starts the next lap of the circular area (position 0
//! of the data area) and continues from there. LSNs only move forward, so every page stays
//! older than the log; the skipped LSNs carry no redo. In order, each step durable before the
//! next:
//!
//! 1. the checkpoint at the next lap's start (a cut before it is durable leaves the previous
//!    checkpoint, at the old end: nothing to replay either way);
//! 2. the truncate and a sync (a cut before the sync may leave the old length and bytes: the
//!    block at the checkpoint then carries an older lap's LSN, which ends the log there, and
//!    the other old blocks are older laps' leftovers).
//!
//! After that the file grows again a step at a time as the log is used, as after `create`
//! (even a small database's log gives its first step, 1/32 of the capacity, back at each close:
//! the price is a checkpoint write and two syncs at close, and one `fallocate` at the first
//! write after the next open).
//!
//! A failed sync **poisons** the log: the kernel may have dropped the dirty pages it could not
//! write, so nothing after that can be trusted to be durable, and every later append or write
//! returns [`LogError::Poisoned`] until the database is reopened.

use crate::block::{BLOCK_SIZE, DATA_END, HEADER_SIZE, Lsn};
use crate::format::{self, BlockHeader, Checkpoint, DATA_AREA, FileHeader, growth_step};
use minnow_io::{AlignedBuf, FileIo, IoError};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

mod space;

pub use space::Reservation;

/// `innodb_flush_log_at_trx_commit`: what a commit waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FlushAtCommit {
    /// 0: nothing; the background flusher writes and syncs about once per interval.
    Lazy,
    /// 1: write and sync the log before the commit returns (the default).
    #[default]
    Sync,
    /// 2: write the log to the OS at commit; sync about once per interval.
    Write,
}

impl FlushAtCommit {
    /// From the numeric setting (0, 1, 2).
    pub fn from_setting(v: u8) -> Option<FlushAtCommit> {
        match v {
            0 => Some(FlushAtCommit::Lazy),
            1 => Some(FlushAtCommit::Sync),
            2 => Some(FlushAtCommit::Write),
            _ => None,
        }
    }

    /// The numeric setting.
    pub fn setting(self) -> u8 {
        match self {
            FlushAtCommit::Lazy => 0,
            FlushAtCommit::Sync => 1,
            FlushAtCommit::Write => 2,
        }
    }
}

/// The guarantee a commit got when it returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Durability {
    /// The commit's redo is synced: it survives a power cut.
    Synced,
    /// The commit's redo is written to the OS: it survives a crash of this process, not a
    /// power cut.
    Written,
    /// The commit's redo is only in memory: a crash may lose it.
    Buffered,
}

/// Errors of the running log.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// File IO failed.
    #[error(transparent)]
    Io(#[from] IoError),
    /// The log's fixed structures are damaged.
    #[error("{path}: {source}")]
    Format {
        /// The log file.
        path: std::path::PathBuf,
        /// What is wrong.
        source: format::FormatError,
    },
    /// An append would overwrite redo not yet covered by a checkpoint.
    #[error(
        "redo log full: {needed} bytes needed, {available} free before the checkpoint at LSN {checkpoint}"
    )]
    LogFull {
        /// Bytes the append needed.
        needed: u64,
        /// Bytes free.
        available: u64,
        /// The current checkpoint.
        checkpoint: Lsn,
    },
    /// A previous sync failed; nothing more is accepted until the database is reopened.
    #[error("redo log is poisoned by an earlier failed sync; reopen the database")]
    Poisoned,
    /// A course lab's function is not written yet: only a lab's starter code returns this
    /// (docs/labs/); the engine itself never does.
    #[error(transparent)]
    NotWritten(#[from] minnow_page::lab::NotWritten),
    /// A checkpoint was asked for beyond what is durable.
    #[error("checkpoint at LSN {requested} is beyond the durable LSN {flushed}")]
    CheckpointAhead {
        /// The requested checkpoint.
        requested: Lsn,
        /// The durable LSN.
        flushed: Lsn,
    },
}

/// Counters of the log, for status and the group-commit bench.
#[derive(Debug, Default)]
pub struct LogStats {
    /// Groups appended.
    pub appends: AtomicU64,
    /// Bytes appended (group bytes, without block overhead).
    pub bytes: AtomicU64,
    /// Write calls issued by leaders.
    pub writes: AtomicU64,
    /// Syncs issued.
    pub syncs: AtomicU64,
    /// Commits that asked for a sync (flush_log_at_trx_commit = 1).
    pub sync_commits: AtomicU64,
    /// Checkpoints written.
    pub checkpoints: AtomicU64,
    /// [`Log::reserve`] (and [`Log::free_check`]) calls that found no room for their margin
    /// beside what is used and reserved, and waited for a checkpoint or for reservations to
    /// come back: writers held back by the log, not by a lock or the disk.
    pub space_waits: AtomicU64,
    /// Nanoseconds those calls waited, summed over threads (from the first time each found
    /// the log full to its return).
    pub space_wait_ns: AtomicU64,
}

impl LogStats {
    fn bump(counter: &AtomicU64, by: u64) {
        counter.fetch_add(by, Ordering::Relaxed);
    }

    /// [`LogStats::bump`] of a counter only the append mutex's holder writes (the caller
    /// holds it): a load and a store, no locked read-modify-write, so an append costs no
    /// atomic instruction beyond the mutex's own.
    fn bump_held(counter: &AtomicU64, by: u64) {
        counter.store(
            counter.load(Ordering::Relaxed).wrapping_add(by),
            Ordering::Relaxed,
        );
    }
}

/// A checkpoint requester: called with an LSN the log would like the checkpoint to reach.
pub type CheckpointRequester = Box<dyn Fn(Lsn) + Send + Sync>;

struct AppendState {
    /// Next data position.
    lsn: Lsn,
    /// Block start LSN of `buf[0]`.
    buf_start: Lsn,
    /// Whole blocks from `buf_start`; the last may be partly filled. Headers carry the block
    /// LSN and first-group offset; data length, flushed LSN and CRC are set when written.
    buf: Vec<u8>,
}

impl AppendState {
    /// Makes sure the block starting at `block` exists in the buffer.
    fn ensure_block(&mut self, block: Lsn) -> usize {
        let index = ((block.0 - self.buf_start.0) / BLOCK_SIZE as u64) as usize;
        while self.buf.len() < (index + 1) * BLOCK_SIZE {
            let lsn =
                Lsn(self.buf_start.0 + (self.buf.len() / BLOCK_SIZE) as u64 * BLOCK_SIZE as u64);
            self.buf.extend_from_slice(&[0u8; BLOCK_SIZE]);
            let at = self.buf.len() - BLOCK_SIZE;
            self.buf[at..at + 8].copy_from_slice(&lsn.0.to_be_bytes());
        }
        index * BLOCK_SIZE
    }
}

/// The redo log of one database.
pub struct Log {
    file: Arc<dyn FileIo>,
    capacity: u64,
    /// Bytes of the file allocated so far (header included); only a write leader grows it.
    allocated: AtomicU64,
    /// The largest checkpoint LSN asked of the requester without waiting (see `reserve`).
    asked: AtomicU64,
    append: Mutex<AppendState>,
    /// Signalled when a checkpoint frees space, or a reservation comes back while a writer
    /// waits for one.
    space: Condvar,
    /// True while a group-commit leader writes and syncs.
    leader: Mutex<bool>,
    /// Signalled when a leader finishes.
    leader_done: Condvar,
    /// A mirror of the append state's LSN, stored under its mutex, so that status readers
    /// get the current LSN without taking the mutex every appender needs.
    current: AtomicU64,
    written: AtomicU64,
    flushed: AtomicU64,
    checkpoint_lsn: AtomicU64,
    checkpoint: Mutex<u64>,
    poisoned: AtomicBool,
    requester: Mutex<Option<CheckpointRequester>>,
    stats: LogStats,
    shutdown: (Mutex<bool>, Condvar),
    /// Log space reserved by mtrs between their start and their append (`space`).
    reserved: space::Reserved,
}

impl std::fmt::Debug for Log {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Log")
            .field("path", &self.file.path())
            .field("capacity", &self.capacity)
            .field("flushed", &self.flushed_lsn())
            .field("checkpoint", &self.checkpoint_lsn())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Log {
    /// Creates a new, empty log file of `capacity` data bytes (rounded up to whole blocks) and
    /// syncs it.
    pub fn create(file: Arc<dyn FileIo>, capacity: u64) -> Result<Log, LogError> {
        let capacity = capacity
            .max(64 * BLOCK_SIZE as u64)
            .div_ceil(BLOCK_SIZE as u64)
            * BLOCK_SIZE as u64;
        let header = FileHeader {
            capacity,
            start_lsn: crate::block::START_LSN,
            creator: format!("minnow {}", env!("CARGO_PKG_VERSION")),
        };
        let allocated = DATA_AREA + growth_step(capacity);
        file.allocate(allocated)?;
        let mut head = aligned(DATA_AREA as usize)?;
        head[..BLOCK_SIZE].copy_from_slice(&header.encode());
        let first = Checkpoint {
            no: 0,
            lsn: Lsn::FIRST,
        };
        head[BLOCK_SIZE..2 * BLOCK_SIZE].copy_from_slice(&first.encode());
        file.write_at(&head, 0)?;
        file.sync_all()?;
        Ok(Log::resume(
            file,
            capacity,
            first,
            Lsn::FIRST,
            None,
            allocated,
        ))
    }

    /// A log positioned after recovery: appends continue at `end`, and `tail` holds the bytes
    /// of the block containing `end` (up to `end`), which the next write rewrites. The file
    /// is `allocated` bytes long.
    pub(crate) fn resume(
        file: Arc<dyn FileIo>,
        capacity: u64,
        checkpoint: Checkpoint,
        end: Lsn,
        tail: Option<[u8; BLOCK_SIZE]>,
        allocated: u64,
    ) -> Log {
        let block = end.block_start();
        let mut state = AppendState {
            lsn: end,
            buf_start: block,
            buf: Vec::with_capacity(1 << 20),
        };
        let at = state.ensure_block(block);
        if let Some(t) = tail {
            let keep = end.offset_in_block();
            state.buf[at + HEADER_SIZE..at + keep].copy_from_slice(&t[HEADER_SIZE..keep]);
            // Keep the first-group mark only if that group is still inside the block.
            let first = BlockHeader::read(&t).first_group;
            if usize::from(first) < keep {
                state.buf[at + 10..at + 12].copy_from_slice(&first.to_be_bytes());
            }
        }
        Log {
            file,
            capacity,
            allocated: AtomicU64::new(allocated),
            asked: AtomicU64::new(0),
            append: Mutex::new(state),
            space: Condvar::new(),
            leader: Mutex::new(false),
            leader_done: Condvar::new(),
            current: AtomicU64::new(end.0),
            written: AtomicU64::new(end.0),
            flushed: AtomicU64::new(end.0),
            checkpoint_lsn: AtomicU64::new(checkpoint.lsn.0),
            checkpoint: Mutex::new(checkpoint.no),
            poisoned: AtomicBool::new(false),
            requester: Mutex::new(None),
            stats: LogStats::default(),
            shutdown: (Mutex::new(false), Condvar::new()),
            reserved: space::Reserved::default(),
        }
    }

    /// Data-area bytes of the circular file.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// The LSN the next append will start at.
    pub fn current_lsn(&self) -> Lsn {
        lock(&self.append).lsn
    }

    /// The LSN the next append will start at, read without the append mutex (a relaxed
    /// load of a mirror stored under it): may lag an append in flight, never runs ahead.
    /// For status readers, which must not queue behind appenders.
    pub fn current_lsn_relaxed(&self) -> Lsn {
        Lsn(self.current.load(Ordering::Relaxed))
    }

    /// Everything below this LSN has been written to the OS.
    pub fn written_lsn(&self) -> Lsn {
        Lsn(self.written.load(Ordering::Acquire))
    }

    /// Everything below this LSN is durable.
    pub fn flushed_lsn(&self) -> Lsn {
        Lsn(self.flushed.load(Ordering::Acquire))
    }

    /// The last checkpoint.
    pub fn checkpoint_lsn(&self) -> Lsn {
        Lsn(self.checkpoint_lsn.load(Ordering::Acquire))
    }

    /// The log's counters.
    pub fn stats(&self) -> &LogStats {
        &self.stats
    }

    /// True once a sync has failed.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned.load(Ordering::Acquire)
    }

    /// Installs the function the log calls when it needs the checkpoint to advance.
    pub fn set_checkpoint_requester(&self, requester: CheckpointRequester) {
        *lock(&self.requester) = Some(requester);
    }

    fn check_poison(&self) -> Result<(), LogError> {
        if self.is_poisoned() {
            Err(LogError::Poisoned)
        } else {
            Ok(())
        }
    }

    /// Appends one encoded group (see [`crate::record::encode_group`]) and returns its LSN
    /// range `[start, end)`.
    ///
    /// The append takes no reservation of its own, so it fits only in space no writer has
    /// reserved; an mtr appends with [`Log::append_reserved`].
    pub fn append(&self, group: &[u8]) -> Result<(Lsn, Lsn), LogError> {
        self.append_within(group, 0)
    }

    /// [`Log::append`] into the space `reservation` holds (and, for a group bigger than that,
    /// space no one has reserved: see the `space` module); gives the reservation back
    /// whether the append succeeds or not. Fails with [`LogError::LogFull`], appending
    /// nothing, if the group does not fit.
    pub fn append_reserved(
        &self,
        group: &[u8],
        reservation: Reservation<'_>,
    ) -> Result<(Lsn, Lsn), LogError> {
        let result = self.append_within(group, reservation.bytes());
        reservation.release();
        result
    }

    /// Appends `group`, counting `own` of the reserved bytes as this append's.
    fn append_within(&self, group: &[u8], own: u64) -> Result<(Lsn, Lsn), LogError> {
        self.check_poison()?;
        let mut st = lock(&self.append);
        let start = st.lsn;
        let end = start.advance(group.len() as u64);
        if !self.fits(start, end, own) {
            return Err(LogError::LogFull {
                needed: group.len() as u64,
                available: self.capacity.saturating_sub(self.used(start)),
                checkpoint: self.checkpoint_lsn(),
            });
        }
        let mut at = start;
        let mut rest = group;
        let mut first = true;
        loop {
            let block = at.block_start();
            let base = st.ensure_block(block);
            let off = at.offset_in_block();
            if first {
                let mark = u16::from_be_bytes([st.buf[base + 10], st.buf[base + 11]]);
                if mark == 0 {
                    st.buf[base + 10..base + 12].copy_from_slice(&(off as u16).to_be_bytes());
                }
                first = false;
            }
            if rest.is_empty() {
                break;
            }
            let n = rest.len().min(DATA_END - off);
            st.buf[base + off..base + off + n].copy_from_slice(&rest[..n]);
            rest = &rest[n..];
            at = at.advance(n as u64);
        }
        // The block the end falls in exists, so a write up to `end` has a block to write.
        st.ensure_block(end.block_start());
        st.lsn = end;
        self.current.store(end.0, Ordering::Relaxed);
        LogStats::bump_held(&self.stats.appends, 1);
        LogStats::bump_held(&self.stats.bytes, group.len() as u64);
        drop(st);
        Ok((start, end))
    }

    /// Makes the log written (and, with `sync`, durable) at least up to `lsn`, as group commit:
    /// one leader writes everything appended so far; followers find their work done.
    pub fn write_up_to(&self, lsn: Lsn, sync: bool) -> Result<(), LogError> {
        let done = |log: &Log| {
            if sync {
                log.flushed_lsn() >= lsn
            } else {
                log.written_lsn() >= lsn
            }
        };
        {
            let mut busy = lock(&self.leader);
            loop {
                if done(self) {
                    return Ok(());
                }
                self.check_poison()?;
                if !*busy {
                    break;
                }
                busy = self
                    .leader_done
                    .wait(busy)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            *busy = true;
        }
        // Whatever happens below, the next thread may lead once this one is done.
        let _leadership = Leadership(self);
        let written = self.written_lsn();
        let flushed = self.flushed_lsn();
        // Snapshot every block from the one holding `written` to the one holding the end.
        let (from, end, mut out) = {
            let st = lock(&self.append);
            let from = written.block_start().max(st.buf_start);
            let end = st.lsn;
            let first = ((from.0 - st.buf_start.0) / BLOCK_SIZE as u64) as usize * BLOCK_SIZE;
            let last = ((end.block_start().0 - st.buf_start.0) / BLOCK_SIZE as u64 + 1) as usize
                * BLOCK_SIZE;
            let mut out = aligned(last - first)?;
            out.copy_from_slice(&st.buf[first..last]);
            (from, end, out)
        };
        let blocks = out.len() / BLOCK_SIZE;
        for i in 0..blocks {
            let block_lsn = Lsn(from.0 + (i * BLOCK_SIZE) as u64);
            let b: &mut [u8; BLOCK_SIZE] =
                match (&mut out[i * BLOCK_SIZE..(i + 1) * BLOCK_SIZE]).try_into() {
                    Ok(b) => b,
                    Err(_) => continue,
                };
            let mut h = BlockHeader::read(b);
            h.data_len = if block_lsn == end.block_start() {
                end.offset_in_block() as u16
            } else {
                DATA_END as u16
            };
            h.flushed_lsn = flushed;
            h.write(b);
            format::seal(b);
        }
        // Write, splitting where the circular area wraps.
        let mut done_blocks = 0;
        while done_blocks < blocks {
            let block_lsn = from.0 + (done_blocks * BLOCK_SIZE) as u64;
            let pos = block_lsn % self.capacity;
            let room = ((self.capacity - pos) / BLOCK_SIZE as u64) as usize;
            let n = room.min(blocks - done_blocks);
            let bytes = &out[done_blocks * BLOCK_SIZE..(done_blocks + n) * BLOCK_SIZE];
            self.grow_to(DATA_AREA + pos + bytes.len() as u64)?;
            if let Err(e) = self.file.write_at(bytes, DATA_AREA + pos) {
                self.poisoned.store(true, Ordering::Release);
                return Err(e.into());
            }
            LogStats::bump(&self.stats.writes, 1);
            done_blocks += n;
        }
        self.written.store(end.0, Ordering::Release);
        if sync {
            if let Err(e) = self.file.sync_data() {
                self.poisoned.store(true, Ordering::Release);
                return Err(e.into());
            }
            LogStats::bump(&self.stats.syncs, 1);
            self.flushed.store(end.0, Ordering::Release);
        }
        // Drop whole blocks that are written and will never be rewritten.
        let mut st = lock(&self.append);
        let keep_from = end.block_start();
        if keep_from > st.buf_start {
            let drop_bytes = ((keep_from.0 - st.buf_start.0) as usize).min(st.buf.len());
            st.buf.drain(..drop_bytes);
            st.buf_start = keep_from;
        }
        Ok(())
    }

    /// Allocates the file up to at least `end` bytes, a growth step at a time (never beyond
    /// the data area). Called by the write leader only. A failed allocation (a full disk)
    /// loses nothing: the write is not attempted and its callers get the error.
    fn grow_to(&self, end: u64) -> Result<(), LogError> {
        let have = self.allocated.load(Ordering::Acquire);
        if end <= have {
            return Ok(());
        }
        let step = growth_step(self.capacity);
        let full = DATA_AREA + self.capacity;
        let want = (end - DATA_AREA).div_ceil(step).saturating_mul(step);
        let new = (DATA_AREA + want).min(full).max(end);
        self.file.allocate(new)?;
        self.allocated.store(new, Ordering::Release);
        Ok(())
    }

    /// Bytes of the file allocated so far (header included): at most 4096 + capacity.
    pub fn allocated(&self) -> u64 {
        self.allocated.load(Ordering::Acquire)
    }

    /// Makes a commit whose redo ends at `end` as durable as `policy` asks, and says what it
    /// got.
    pub fn commit(&self, end: Lsn, policy: FlushAtCommit) -> Result<Durability, LogError> {
        match policy {
            FlushAtCommit::Sync => {
                LogStats::bump(&self.stats.sync_commits, 1);
                self.write_up_to(end, true)?;
                Ok(Durability::Synced)
            }
            FlushAtCommit::Write => {
                self.write_up_to(end, false)?;
                Ok(if self.flushed_lsn() >= end {
                    Durability::Synced
                } else {
                    Durability::Written
                })
            }
            FlushAtCommit::Lazy => {
                self.check_poison()?;
                Ok(if self.flushed_lsn() >= end {
                    Durability::Synced
                } else if self.written_lsn() >= end {
                    Durability::Written
                } else {
                    Durability::Buffered
                })
            }
        }
    }

    /// Records a checkpoint at `lsn`: the caller guarantees every page change before `lsn` is
    /// in the data files. The redo must be durable up to `lsn`. Frees log space.
    pub fn checkpoint(&self, lsn: Lsn) -> Result<(), LogError> {
        self.check_poison()?;
        let flushed = self.flushed_lsn();
        if lsn > flushed {
            return Err(LogError::CheckpointAhead {
                requested: lsn,
                flushed,
            });
        }
        let mut no = lock(&self.checkpoint);
        if lsn <= self.checkpoint_lsn() {
            return Ok(());
        }
        self.write_checkpoint(&mut no, lsn)?;
        drop(no);
        let _st = lock(&self.append);
        self.space.notify_all();
        Ok(())
    }

    /// Writes checkpoint number `*no + 1` at `lsn` into its slot, syncs it, and makes it the
    /// current one. The caller holds the checkpoint mutex (`no`).
    fn write_checkpoint(&self, no: &mut u64, lsn: Lsn) -> Result<(), LogError> {
        let next = Checkpoint { no: *no + 1, lsn };
        let mut block = aligned(BLOCK_SIZE)?;
        block.copy_from_slice(&next.encode());
        let slot = (next.no % 2) as usize;
        let res = self
            .file
            .write_at(&block, format::checkpoint_offset(slot))
            .and_then(|()| self.file.sync_data());
        if let Err(e) = res {
            self.poisoned.store(true, Ordering::Release);
            return Err(e.into());
        }
        *no = next.no;
        self.checkpoint_lsn.store(lsn.0, Ordering::Release);
        LogStats::bump(&self.stats.checkpoints, 1);
        Ok(())
    }

    /// Gives the file's high-water size back (see "The file shrinks when it is idle" in the
    /// module docs): when the checkpoint is at the end of the log (nothing to replay) and the
    /// file is longer than its header, moves the end of the log to the start of the next lap (the LSN whose block is the first of the data area) with a
    /// checkpoint there, and truncates the file to its header. Returns the bytes given back
    /// (0 when there was nothing to do, or redo after the checkpoint still needs the file).
    /// Call it when no one appends (a clean close); appends that race with it wait.
    pub fn shrink(&self) -> Result<u64, LogError> {
        self.check_poison()?;
        let before = self.allocated();
        if before <= DATA_AREA {
            return Ok(0);
        }
        // No write may run while the end moves: take the leadership, then the append state.
        {
            let mut busy = lock(&self.leader);
            while *busy {
                busy = self
                    .leader_done
                    .wait(busy)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            *busy = true;
        }
        let _leadership = Leadership(self);
        let mut st = lock(&self.append);
        let mut no = lock(&self.checkpoint);
        let end = st.lsn;
        if self.checkpoint_lsn() != end || self.flushed_lsn() != end {
            return Ok(0);
        }
        // Step 1: a checkpoint at the first data byte of the next lap. Recovery from it finds
        // an older lap's block (or none) at the front of the data area and ends the log at
        // once; until the truncate below is durable, the rest of the file is leftovers.
        let end_block = end.block_start().0;
        let lap = (end_block / self.capacity + 1).saturating_mul(self.capacity);
        let next = Lsn(lap + HEADER_SIZE as u64);
        self.write_checkpoint(&mut no, next)?;
        st.lsn = next;
        st.buf_start = next.block_start();
        st.buf.clear();
        st.ensure_block(next.block_start());
        self.current.store(next.0, Ordering::Relaxed);
        self.written.store(next.0, Ordering::Release);
        self.flushed.store(next.0, Ordering::Release);
        self.space.notify_all();
        // Step 2: the truncate to the header, made durable. A cut before the sync leaves the
        // file long or short: both read the same from the new checkpoint.
        let res = self
            .file
            .truncate(DATA_AREA)
            .and_then(|()| self.file.sync_all());
        if let Err(e) = res {
            self.poisoned.store(true, Ordering::Release);
            return Err(e.into());
        }
        self.allocated.store(DATA_AREA, Ordering::Release);
        Ok(before - DATA_AREA)
    }

    /// Starts the background flusher that writes and syncs the log every `interval`
    /// (`innodb_flush_log_at_timeout`). It stops when [`Log::shutdown`] is called.
    pub fn spawn_flusher(
        self: &Arc<Self>,
        interval: Duration,
    ) -> std::io::Result<std::thread::JoinHandle<()>> {
        let log = Arc::clone(self);
        std::thread::Builder::new()
            .name("minnow-log-flusher".into())
            .spawn(move || {
                loop {
                    let (stop, cv) = &log.shutdown;
                    let guard = lock(stop);
                    // The flag is checked before waiting, not only after: a shutdown that
                    // came before this thread first took the lock sent its wake-up to no one
                    // and must not leave it asleep for a whole interval (its join waits).
                    let (guard, _) = cv
                        .wait_timeout_while(guard, interval, |stop| !*stop)
                        .unwrap_or_else(PoisonError::into_inner);
                    if *guard {
                        break;
                    }
                    drop(guard);
                    if log.write_up_to(log.current_lsn(), true).is_err() {
                        break;
                    }
                }
            })
    }

    /// Stops the background flusher (if any) and makes everything appended durable.
    pub fn shutdown(&self) -> Result<(), LogError> {
        let (stop, cv) = &self.shutdown;
        *lock(stop) = true;
        cv.notify_all();
        self.write_up_to(self.current_lsn(), true)
    }

    /// The file under the log.
    pub fn file(&self) -> &Arc<dyn FileIo> {
        &self.file
    }
}

/// Ends a group-commit leadership on drop, waking every waiter.
struct Leadership<'a>(&'a Log);

impl Drop for Leadership<'_> {
    fn drop(&mut self) {
        *lock(&self.0.leader) = false;
        self.0.leader_done.notify_all();
    }
}

fn aligned(len: usize) -> Result<AlignedBuf, LogError> {
    AlignedBuf::new(len).map_err(LogError::from)
}
