//! # minnow-buf: the buffer pool and mini-transactions
//!
//! The buffer pool is the engine's cache of pages and the only way to their bytes. Disk is
//! a thousand times slower than memory, so every page the engine touches is first brought
//! into a **frame** of the pool and used there; changed (**dirty**) pages are written back
//! later, in the background, in batches. What makes this hard is doing it safely under
//! concurrency and crashes. The pieces, each in its own module:
//!
//! | module | what it teaches |
//! |---|---|
//! | `frame` (private) | frames in one memory map; the control block; pin vs latch; the seqlock version |
//! | [`guard`] | RAII page guards: the only way to page bytes; optimistic reads |
//! | `instance` | sharding: page hash, LRU, free list and flush list per instance |
//! | `hash` | the page hash; why a shared lock stops scaling; the lock-free (seqlock) lookup |
//! | `lru` | midpoint insertion, and why a table scan does not flush the cache |
//! | `pool` | the hit path (no lock, no shared write), reading in, eviction, `PoolExhausted` |
//! | [`flush`] | the flush list, the WAL rule, batches through the doublewrite buffer, checkpoints |
//! | `cleaner` | page cleaner threads and adaptive flushing (dirty %, checkpoint age, io_capacity) |
//! | [`mtr`] | mini-transactions: latch, change, log, commit |
//! | `recovery` | doublewrite first, then redo apply, then flush and checkpoint |
//! | `readahead` | linear read-ahead of the next extent |
//! | [`dump`] | `ib_buffer_pool`: warm restart |
//! | [`load`] | reading the dump back: many reads at once, in page order, into free frames only |
//! | [`stats`], [`config`] | counters, striped per thread; the `innodb_*` knobs |
//! | `zip` (private) | compressed pages: the zip cache in borrowed frames, the IO-bound rule, the fit check at commit ([`mtr`]) |
//!
//! ```
//! use std::sync::Arc;
//! use minnow_buf::{BufConfig, BufferPool, DirectWriter, SpaceMap};
//! use minnow_io::{Backend, FlushMethod, OpenOptions, SyncBackend, Tablespace};
//! use minnow_page::{PageId, PageSize, checksum::ChecksumAlgorithm};
//! use minnow_redo::{FlushAtCommit, Log};
//!
//! let dir = tempfile::tempdir()?;
//! let backend: Arc<dyn Backend> = Arc::new(SyncBackend::new());
//! let space = Tablespace::create(&*backend, &dir.path().join("t.ibd"), 1, PageSize::K4,
//!                                ChecksumAlgorithm::Crc32, FlushMethod::Fsync, 8)?;
//! let spaces = Arc::new(SpaceMap::new());
//! spaces.insert(Arc::new(space));
//! let log_file = backend.open(&dir.path().join("redo"),
//!                             &OpenOptions::new(FlushMethod::Fsync).create(true))?;
//! let log = Arc::new(Log::create(log_file, 1 << 20)?);
//! let pool = BufferPool::open(BufConfig::with_frames(64, PageSize::K4), spaces, log,
//!                             Arc::new(DirectWriter))?;
//!
//! let mut mtr = pool.mtr()?;
//! let page = mtr.new_page(PageId::new(1, 3))?;
//! mtr.write(page, 100, b"hello")?;
//! let end = mtr.commit()?;
//! pool.commit_durable(end, FlushAtCommit::Sync)?;
//!
//! let guard = pool.get_read(PageId::new(1, 3))?;
//! assert_eq!(&guard[100..105], b"hello");
//! assert_eq!(guard.lsn(), end);
//! drop(guard);
//! pool.shutdown()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Tracing
//!
//! With the crate feature `trace`, the pool emits structured `tracing` events (level
//! TRACE, target `minnow`), each named after what happened: `page_read` (space, page),
//! `page_evict` (space, page), `page_write` (space, page, lsn), `doublewrite_batch`
//! (segment, pages), `mtr_commit` (start, end, pages changed, records) and `checkpoint`
//! (lsn); `minnow-btree` adds `split` and `merge` through the same macro,
//! [`trace_event!`]. Without the feature the macro expands to nothing: not a branch, not a
//! load, so the default build pays exactly zero (which is why it is a compile-time switch
//! rather than a run-time one). With it and no subscriber installed, each event costs what
//! `tracing` costs a disabled callsite: one relaxed load of its cached interest and a
//! branch. `minnow`'s `trace` feature turns it on in both crates; its example `trace_run`
//! records a short run.

#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod cleaner;
pub mod config;
pub mod dump;
mod error;
pub mod flush;
mod frame;
pub mod guard;
mod hash;
mod instance;
pub mod load;
mod lru;
pub mod mtr;
mod pool;
pub mod racy;
mod readahead;
mod recovery;
mod space;
pub mod spread;
pub mod stats;
mod zip;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use minnow_page::{PageId, PageSize};
use minnow_redo::{Durability, FlushAtCommit, Log, LogError, Lsn};
use parking_lot::Mutex;

pub use config::{BufConfig, Clock, FlushNeighbors};
pub use error::BufError;
pub use flush::{DirectWriter, PageImage, PageWriter};
pub use frame::prefetch_line;
pub use guard::{OptimisticRead, PageReadGuard, PageWriteGuard};
pub use load::LoadReport;
pub use mtr::{Mtr, PageHandle};
pub use racy::{RacyPage, Seen};
pub use recovery::{DoublewriteRecovery, RecoveryProgress, RecoveryProgressHook, RecoveryReport};
pub use space::SpaceMap;
pub use spread::{SpreadLatch, SpreadReadGuard, SpreadWriteGuard};
pub use stats::BufferPoolStats;
pub use zip::ZipCacheStats;

#[cfg(feature = "trace")]
#[doc(hidden)]
pub use tracing as __tracing;

/// Starts loading the cache lines of `bytes` into the caches, without waiting for them: a
/// caller that walks memory in an order the processor cannot guess (an arena of records
/// visited in key order, say) names the bytes it will read a few steps ahead, so that their
/// cache misses overlap with the work in between instead of stalling it one after the
/// other. Only a hint: it reads and changes nothing the program can see, and does nothing
/// except on x86-64.
#[inline]
pub fn prefetch_bytes(bytes: &[u8]) {
    let start = bytes.as_ptr();
    // From the line holding the first byte to the one holding the last.
    let mut at = start.wrapping_sub(start as usize % frame::LINE);
    let end = start.wrapping_add(bytes.len());
    while at < end {
        frame::prefetch_line(at);
        at = at.wrapping_add(frame::LINE);
    }
}

/// Emits a structured `tracing` event named `$name` (level TRACE, target `minnow`) with the
/// given fields, when the calling crate is built with its `trace` feature; expands to
/// nothing otherwise (see the crate docs, "Tracing").
///
/// ```
/// let (space, page) = (0u32, 7u32);
/// minnow_buf::trace_event!("page_read", space, page);
/// ```
#[macro_export]
macro_rules! trace_event {
    ($name:literal $(, $($fields:tt)*)?) => {
        #[cfg(feature = "trace")]
        $crate::__tracing::event!(
            name: $name,
            target: "minnow",
            $crate::__tracing::Level::TRACE,
            $($($fields)*)?
        );
    };
}

use pool::{Mode, Shared};

/// How long [`BufferPool::mtr`] waits for log space, from its first wait, before giving up
/// with `LogFull`.
const FREE_CHECK_TIMEOUT: Duration = Duration::from_secs(30);

/// The buffer pool. See the crate docs.
pub struct BufferPool {
    shared: Arc<Shared>,
    cleaners: Mutex<Vec<JoinHandle<()>>>,
    loader: Mutex<Option<JoinHandle<Result<LoadReport, BufError>>>>,
    last_load: Mutex<Option<LoadReport>>,
}

impl std::fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferPool")
            .field("frames", &self.shared.ctl.len())
            .field("instances", &self.shared.instances.len())
            .field("page_size", &self.shared.cfg.page_size)
            .finish()
    }
}

impl BufferPool {
    /// Opens a pool over the tablespaces of `spaces`, logging to `log` (freshly created or
    /// already recovered), writing pages through `writer` (the doublewrite buffer, or
    /// [`DirectWriter`]). Installs the log's checkpoint requester, starts the page cleaners
    /// and, if `dump_dir` holds an `ib_buffer_pool`, the background load.
    pub fn open(
        cfg: BufConfig,
        spaces: Arc<SpaceMap>,
        log: Arc<Log>,
        writer: Arc<dyn PageWriter>,
    ) -> Result<BufferPool, BufError> {
        let shared = Arc::new(Shared::new(cfg, spaces, writer)?);
        BufferPool::start(shared, log)
    }

    fn start(shared: Arc<Shared>, log: Arc<Log>) -> Result<BufferPool, BufError> {
        let _ = shared.log.set(Arc::clone(&log));
        let weak = Arc::downgrade(&shared);
        log.set_checkpoint_requester(Box::new(move |target: Lsn| {
            if let Some(s) = weak.upgrade() {
                if s.cfg.page_cleaners > 0 {
                    s.cleaner.request(target.0);
                } else {
                    // No cleaner: flush here (a reservation is waited for before any latch is held).
                    let _ = s.flush_until(Some(target.0), s.cfg.page_cleaners);
                }
            }
        }));
        let cleaners = cleaner::spawn(&shared)?;
        let pool = BufferPool {
            shared,
            cleaners: Mutex::new(cleaners),
            loader: Mutex::new(None),
            last_load: Mutex::new(None),
        };
        pool.start_load();
        Ok(pool)
    }

    /// A throwaway pool for benches and examples: creates tablespace 1 with `pages` pages
    /// (every page from 1 on initialised by an mtr, then flushed) and a 64 MiB redo log in
    /// `dir`, on the plain `pread`/`pwrite` backend, pages written directly (no doublewrite).
    pub fn create_scratch(
        dir: &std::path::Path,
        cfg: BufConfig,
        pages: u32,
    ) -> Result<BufferPool, BufError> {
        BufferPool::create_scratch_with(dir, cfg, pages, None)
    }

    /// [`BufferPool::create_scratch`] whose tablespace 1 is compressed with `zip` (see
    /// `minnow_io::Tablespace::create_compressed`), or plain with `None`.
    pub fn create_scratch_with(
        dir: &std::path::Path,
        cfg: BufConfig,
        pages: u32,
        zip: Option<minnow_zip::ZipConfig>,
    ) -> Result<BufferPool, BufError> {
        use minnow_io::{Backend, FlushMethod, OpenOptions, SyncBackend, Tablespace};
        let backend = SyncBackend::new();
        let path = dir.join("scratch.ibd");
        let checksum = minnow_page::checksum::ChecksumAlgorithm::Crc32;
        let space = Tablespace::create_with_zip(
            &backend,
            &path,
            1,
            cfg.page_size,
            zip,
            checksum,
            FlushMethod::Fsync,
            pages.max(1),
        )?;
        let spaces = Arc::new(SpaceMap::new());
        spaces.insert(Arc::new(space));
        let file = backend.open(
            &dir.join("scratch.redo"),
            &OpenOptions::new(FlushMethod::Fsync).create(true),
        )?;
        let log = Arc::new(Log::create(file, 64 << 20)?);
        let pool = BufferPool::open(cfg, spaces, log, Arc::new(DirectWriter))?;
        for no in 1..pages {
            let mut mtr = pool.mtr()?;
            mtr.new_page(PageId::new(1, no))?;
            mtr.commit()?;
        }
        pool.flush_all()?;
        Ok(pool)
    }

    /// Fixes page `id` with a shared latch (reading it if it is not cached).
    pub fn get_read(&self, id: PageId) -> Result<PageReadGuard<'_>, BufError> {
        let frame = self.shared.fix(id, Mode::Shared)?;
        Ok(PageReadGuard {
            shared: &self.shared,
            frame,
            id,
        })
    }

    /// [`BufferPool::get_read`] for a caller that remembers which frame held page `id`
    /// ([`PageReadGuard::frame`]), as the adaptive hash index does: the frame is pinned and
    /// latched directly, skipping the page-hash lookup (one dependent cache miss fewer on a
    /// large pool). Any hint is safe, even a stale or made-up one: the frame's page id is
    /// checked again *under its shared latch* (a frame changes pages only while exclusively
    /// latched), and if the frame holds another page, or is exclusively latched at that
    /// moment, the page is fixed the normal way. A pin taken on a frame that an evictor had
    /// already judged unpinned is harmless: the evictor latches it exclusively first, so the
    /// hinted fix finds the latch taken or the page id changed, and lets go.
    pub fn get_read_hinted(&self, id: PageId, hint: u32) -> Result<PageReadGuard<'_>, BufError> {
        match self.shared.fix_hinted(id, hint, Mode::Shared) {
            Some(frame) => Ok(PageReadGuard {
                shared: &self.shared,
                frame,
                id,
            }),
            None => self.get_read(id),
        }
    }

    /// Starts loading, without waiting for it, what a read of the page in frame `hint`
    /// ([`PageReadGuard::frame`]) is about to touch: the frame's control block, the page's
    /// first 128 bytes (the FIL and index page headers) and its bytes `from..to` (a record,
    /// say). The caller then fixes the page ([`BufferPool::get_read_hinted`]) while these
    /// loads are in flight, so that the cache misses overlap instead of coming one after the
    /// other (the pin's atomic instruction keeps later loads from starting early). Only a
    /// hint: it reads and changes nothing, any `hint` is allowed, and it does nothing except
    /// on x86-64.
    #[inline]
    pub fn prefetch_hinted(&self, hint: u32, from: usize, to: usize) {
        let s = &*self.shared;
        if let Some(c) = s.ctl.get(hint as usize) {
            let at: *const frame::Ctl = c;
            frame::prefetch_line(at);
            // A 48-byte block may straddle two lines.
            frame::prefetch_line(
                at.cast::<u8>()
                    .wrapping_add(std::mem::size_of::<frame::Ctl>() - 1),
            );
        }
        s.frames.prefetch(hint, 0, 128);
        s.frames.prefetch(hint, from, to);
    }

    /// Fixes page `id` with an exclusive latch, for reading while excluding everybody else.
    /// Changes need an [`Mtr`] ([`Mtr::get_write`]).
    pub fn get_write(&self, id: PageId) -> Result<PageWriteGuard<'_>, BufError> {
        let frame = self.shared.fix(id, Mode::Exclusive)?;
        Ok(PageWriteGuard {
            shared: &self.shared,
            frame,
            id,
        })
    }

    /// A latch-free view of page `id` if it is cached and not being written right now
    /// (`None` otherwise: take a read guard). See [`OptimisticRead`].
    pub fn optimistic(&self, id: PageId) -> Option<OptimisticRead<'_>> {
        let s = &*self.shared;
        let frame = s.lookup_pin(s.instance_of(id), id.to_u64())?;
        let c = s.ctl(frame);
        let version = c.version.load(Ordering::Acquire);
        if version % 2 == 1 || c.page_id.load(Ordering::Acquire) != id.to_u64() {
            c.unpin();
            return None;
        }
        Some(OptimisticRead {
            shared: s,
            frame,
            id,
            version,
        })
    }

    /// True if page `id` is cached (no pin, no statistics).
    pub fn contains(&self, id: PageId) -> bool {
        self.shared.contains(id)
    }

    /// Starts a mini-transaction, first reserving log room for it (`Log::reserve`, before
    /// any latch is held): four pages' worth of redo, or a quarter of a smaller log. The mtr
    /// holds the reservation until its commit appends into it (or it is dropped), so that
    /// mtrs started at once never overrun the checkpoint together. An mtr that writes more
    /// than that takes the rest from log space no one has reserved (see `minnow_redo`'s
    /// `log::space`); if even that is short, its commit fails with `LogFull` and the mtr is
    /// undone. An mtr started while this thread has another open never waits: it takes the
    /// reservation if it is there at once, and appends without one otherwise.
    pub fn mtr(&self) -> Result<Mtr<'_>, BufError> {
        self.mtr_with_room(0)
    }

    /// [`BufferPool::mtr`] for an mtr known to write `extra` bytes of redo more than the usual
    /// margin (a record's overflow chains, written in the mtr that inserts it): the
    /// reservation covers them too, taken before any latch as every reservation is, so that
    /// other writers cannot take that room between the wait for it and the append.
    pub fn mtr_with_room(&self, extra: u64) -> Result<Mtr<'_>, BufError> {
        let s = &*self.shared;
        let log = s.log()?;
        let margin = (4 * s.cfg.page_size.bytes() as u64)
            .min(log.capacity() / 4)
            .saturating_add(extra);
        if mtr::open_on_thread() > 0 {
            // A nested mtr: the thread holds a reservation and latches, so it must not wait.
            if s.is_poisoned() {
                return Err(BufError::Poisoned);
            }
            if log.is_poisoned() {
                return Err(LogError::Poisoned.into());
            }
            return Ok(Mtr::new(self, log.try_reserve(margin)));
        }
        // The deadline is set at the first wait, so that the common case reads no clock.
        let mut deadline = None;
        loop {
            if s.is_poisoned() {
                return Err(BufError::Poisoned);
            }
            match log.reserve(margin, Duration::from_millis(50)) {
                Ok(room) => return Ok(Mtr::new(self, Some(room))),
                Err(LogError::LogFull { .. })
                    if Instant::now()
                        < *deadline.get_or_insert_with(|| Instant::now() + FREE_CHECK_TIMEOUT) =>
                {
                    continue;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Makes a transaction's commit at `end` (its last mtr's end LSN) as durable as
    /// `policy` asks (`flush_log_at_trx_commit`). A failed log write or sync poisons the pool.
    pub fn commit_durable(&self, end: Lsn, policy: FlushAtCommit) -> Result<Durability, BufError> {
        let log = self.shared.log()?;
        log.commit(end, policy).map_err(|e| {
            if log.is_poisoned() {
                self.shared.poison();
            }
            BufError::Log(e)
        })
    }

    /// Writes every dirty page and moves the checkpoint as far as it goes.
    pub fn flush_all(&self) -> Result<(), BufError> {
        self.shared.flush_until(None, self.shared.cfg.page_cleaners)
    }

    /// Advances the checkpoint to the oldest dirty page (no flushing); returns it.
    pub fn checkpoint(&self) -> Result<Lsn, BufError> {
        self.shared.advance_checkpoint()
    }

    /// The smallest `oldest_modification` of any dirty page.
    pub fn oldest_modification(&self) -> Option<Lsn> {
        self.shared.oldest_modification().map(Lsn)
    }

    /// The dirty pages of every instance in flush-list order: (oldest_modification, page).
    pub fn flush_list(&self) -> Vec<(Lsn, PageId)> {
        let s = &*self.shared;
        let mut out: Vec<(Lsn, PageId)> = s
            .instances
            .iter()
            .flat_map(|i| {
                i.flush
                    .lock()
                    .iter()
                    .filter_map(|&(lsn, f)| s.ctl(f).page().map(|p| (Lsn(lsn), p)))
                    .collect::<Vec<_>>()
            })
            .collect();
        out.sort();
        out
    }

    /// The pages of instance `i`'s LRU list from the head, each with `true` if it is in the
    /// old sublist (for inspection tools and tests).
    pub fn lru(&self, i: usize) -> Vec<(PageId, bool)> {
        let s = &*self.shared;
        let Some(inst) = s.instances.get(i) else {
            return Vec::new();
        };
        let lists = inst.lists.lock();
        lists
            .head_first()
            .filter_map(|l| {
                let old = lists.place(l) == lru::Place::Old;
                s.ctl(inst.base + l).page().map(|p| (p, old))
            })
            .collect()
    }

    /// True once a write or sync of a data file or the log failed.
    pub fn is_poisoned(&self) -> bool {
        self.shared.is_poisoned()
    }

    /// The counters.
    pub fn stats(&self) -> BufferPoolStats {
        let mut t = BufferPoolStats::default();
        for i in self.shared.instances.iter() {
            t.add(&i.stats);
            t.free_frames += u64::from(i.free_len.load(Ordering::Relaxed));
            t.lru_pages += u64::from(i.lru_len.load(Ordering::Relaxed));
            t.old_pages += u64::from(i.old_len.load(Ordering::Relaxed));
        }
        t.frames = self.shared.ctl.len() as u64;
        t
    }

    /// The zip cache's counters (compressed pages kept in memory; see the `zip` module docs:
    /// blocks held, frames lent, zip hits and misses, the IO-bound verdict).
    pub fn zip_cache_stats(&self) -> ZipCacheStats {
        self.shared.zip.stats()
    }

    /// The doublewrite buffer's counters, if the pool writes through one (None with
    /// doublewrite off).
    pub fn doublewrite_stats(&self) -> Option<minnow_dblwr::StatsSnapshot> {
        self.shared.writer.doublewrite_stats()
    }

    /// The settings.
    pub fn config(&self) -> &BufConfig {
        &self.shared.cfg
    }

    /// The tablespaces.
    pub fn spaces(&self) -> &Arc<SpaceMap> {
        &self.shared.spaces
    }

    /// The redo log.
    pub fn log(&self) -> Option<&Arc<Log>> {
        self.shared.log.get()
    }

    /// What the pool's bookkeeping costs per frame.
    pub fn memory_report(&self) -> MemoryReport {
        let s = &*self.shared;
        let buckets = s
            .instances
            .iter()
            .map(|i| i.hash.read().bucket_count())
            .sum();
        MemoryReport::new(s.ctl.len(), s.cfg.page_size, buckets)
    }

    /// Stops the background threads, writes every dirty page, checkpoints at the end of the
    /// log, gives the redo log file's high-water size back ([`Log::shrink`]) and writes the
    /// `ib_buffer_pool` dump (if `dump_dir` is set). Takes `&self` so that an owner sharing
    /// the pool (an `Arc`) can shut it down while others still hold it; the caller must see
    /// to it that nothing changes a page afterwards (no page cleaner is left to write it).
    pub fn shutdown(&self) -> Result<(), BufError> {
        self.stop_threads();
        self.flush_all()?;
        self.shrink_log()?;
        self.dump()?;
        Ok(())
    }

    /// After [`BufferPool::shutdown`]: cuts the file of tablespace `space` to `pages` pages,
    /// the size its allocator now records (`minnow_btree::space::shrink_tail` lowered it
    /// before the shutdown). Returns whether the file was longer.
    ///
    /// The order makes a power cut at any point harmless. The allocator's change is in the
    /// redo log and in the flushed page 0, behind the final checkpoint, so recovery never
    /// undoes it and never replays a change to a page beyond the cut. Then the writer drops
    /// its doublewrite copies ([`PageWriter::forget_copies`]): every page is durable in
    /// place, and a copy of a page beyond the cut would otherwise be written back at the
    /// next start, growing the file again. Only then is the file cut and synced. Cut off
    /// before the cut, the file is merely longer than its allocator says: nothing reads the
    /// pages beyond, and the next clean close cuts it.
    ///
    /// Refused ([`BufError::CutRefused`]) unless the pool is shut down, holds no dirty page
    /// and its log is checkpointed at its end.
    pub fn cut_space(&self, space: u32, pages: u32) -> Result<bool, BufError> {
        let refuse = |reason: &str| BufError::CutRefused {
            space,
            pages,
            reason: reason.to_owned(),
        };
        if !self.shared.stopping.load(Ordering::Acquire) {
            return Err(refuse("the pool is still running (shut it down first)"));
        }
        if self.oldest_modification().is_some() {
            return Err(refuse("the pool still holds a dirty page"));
        }
        if let Some(log) = self.log()
            && log.checkpoint_lsn() < log.current_lsn()
        {
            return Err(refuse("the log is not checkpointed at its end"));
        }
        let file = self
            .shared
            .spaces
            .get(space)
            .ok_or(BufError::UnknownSpace { space })?;
        if pages >= file.size_in_pages() {
            return Ok(false);
        }
        self.shared.writer.forget_copies()?;
        Ok(file.truncate_to(pages)?)
    }

    /// After the final flush: makes the log durable to its end, checkpoints there (redo
    /// appended without a sync, by mtrs that did not commit, may still lie past the
    /// checkpoint) and shrinks the file, which needs no byte for recovery now.
    fn shrink_log(&self) -> Result<(), BufError> {
        let Some(log) = self.log() else {
            return Ok(());
        };
        if log.checkpoint_lsn() < log.current_lsn() {
            log.write_up_to(log.current_lsn(), true)?;
            self.shared.advance_checkpoint()?;
        }
        if let Err(e) = log.shrink() {
            self.shared.poison();
            return Err(e.into());
        }
        Ok(())
    }

    fn stop_threads(&self) {
        self.shared.stopping.store(true, Ordering::Release);
        self.shared.cleaner.shutdown();
        for h in self.cleaners.lock().drain(..) {
            let _ = h.join();
        }
        // A load that failed (a damaged dump) has nothing to hand back at close.
        let _ = self.join_loader();
    }
}

impl Drop for BufferPool {
    fn drop(&mut self) {
        self.stop_threads();
    }
}

/// Per-frame bookkeeping of the pool, measured with `size_of` (experiment E6).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryReport {
    /// Frames.
    pub frames: usize,
    /// Bytes per frame (the page size).
    pub page_size: usize,
    /// The control block: latch, page id, oldest modification, pin, version, access time,
    /// young stamp.
    pub control_block: usize,
    /// LRU links (two `u32`) and the sublist byte.
    pub lru_links: usize,
    /// The free list's `u32` slot.
    pub free_list: usize,
    /// Page hash: the chain link plus this frame's share of the bucket array.
    pub page_hash: f64,
    /// Everything above, per frame.
    pub per_frame: f64,
    /// A flush-list entry, per *dirty* frame (the `(u64, u32)` key, before B-tree node
    /// overhead).
    pub flush_list_entry: usize,
    /// Bookkeeping bytes for all frames.
    pub total_bytes: f64,
    /// Bookkeeping as a share of the frames' bytes, in percent.
    pub overhead_pct: f64,
}

impl MemoryReport {
    fn new(frames: usize, page: PageSize, buckets: usize) -> MemoryReport {
        let control_block = std::mem::size_of::<frame::Ctl>();
        let lru_links = 2 * std::mem::size_of::<u32>() + std::mem::size_of::<lru::Place>();
        let free_list = std::mem::size_of::<u32>();
        let page_hash = std::mem::size_of::<u32>() as f64
            + (buckets * std::mem::size_of::<u32>()) as f64 / frames.max(1) as f64;
        let per_frame = control_block as f64 + lru_links as f64 + free_list as f64 + page_hash;
        let total_bytes = per_frame * frames as f64;
        MemoryReport {
            frames,
            page_size: page.bytes(),
            control_block,
            lru_links,
            free_list,
            page_hash,
            per_frame,
            flush_list_entry: std::mem::size_of::<(u64, u32)>(),
            total_bytes,
            overhead_pct: total_bytes * 100.0 / (frames * page.bytes()).max(1) as f64,
        }
    }

    /// The report for a pool of `pool_bytes` of `page` pages in `instances` instances,
    /// without building it (e.g. 16 GiB of 16 KiB pages).
    pub fn estimate(pool_bytes: usize, page: PageSize, instances: usize) -> MemoryReport {
        let instances = instances.max(1);
        let per = pool_bytes / page.bytes() / instances;
        let buckets = per.next_power_of_two().max(2) * instances;
        MemoryReport::new(per * instances, page, buckets)
    }
}

#[cfg(test)]
mod hinted_tests;
#[cfg(test)]
mod load_tests;
#[cfg(test)]
mod log_space_tests;
#[cfg(test)]
mod tests;
