//! The core of the pool: finding a page, reading it in, making room.
//!
//! ## Fixing a page (the hit path)
//!
//! ```text
//!  fix(page):  instance = hash(page) % instances
//!              page hash, lock-free ──found, version unchanged──► pinned ──► latch S or X
//!                │ writer in, or not found                                   │ still that page?
//!                ▼                                                           ▼ yes: LRU touch
//!              page hash (shared lock) --found--> pin frame, unlock ──►┘
//!                     └─not found──► read_in
//! ```
//!
//! No lock is taken at all on a hit, and no cache line is written that another thread
//! fixing another page would write too: the page-hash lookup is a seqlock read that pins
//! the frame ([`crate::hash`]: why a shared lock's reader count stops scaling, and why an
//! evictor still sees the pin), the pin and the latch are the frame's own, the hit counter is
//! this thread's stripe ([`crate::stats`]), and the LRU touch of a page already made young
//! only reads ([`crate::lru`]). Only when a writer is in the page hash (a page being read
//! in or evicted in the same instance) does the lookup fall back to the shared lock. Either
//! way a pinned frame cannot be reused: eviction checks pins under the exclusive lock.
//!
//! Threads fixing the *same* page still share its control block (pin count, latch): that is
//! inherent, and the reason InnoDB's B-tree root is the hottest line in the engine.
//!
//! ## Reading a page in
//!
//! Under the page hash's exclusive lock: look again (another thread may have read it), take a
//! frame — from the free list, or by evicting a clean, unpinned page from the LRU tail whose
//! latch can be taken without waiting — latch it exclusively, and publish it in the hash.
//! Then, without any instance lock, read the page from its tablespace (which verifies the
//! checksum). Other threads that want the page meanwhile find it in the hash, pin it and wait
//! on its latch. A page that fails verification is removed again and the error, naming the
//! page, goes to the caller: a corrupt page is never handed out.
//!
//! If no clean page can be evicted, the thread writes dirty pages from the LRU tail itself
//! (a small batch) and tries again; if every frame is pinned it gives up with
//! [`BufError::PoolExhausted`] instead of waiting forever.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use minnow_io::Tablespace;
use minnow_page::PageId;
use minnow_redo::Log;

use crate::cleaner::CleanerState;
use crate::config::BufConfig;
use crate::flush::PageWriter;
use crate::frame::{Ctl, Frames, NO_PAGE};
use crate::hash::{HashWrite, fold};
use crate::instance::Instance;
use crate::readahead::ReadAhead;
use crate::stats::Counter;
use crate::zip::ZipCache;
use crate::{BufError, SpaceMap};

/// Latch mode of a fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Shared,
    Exclusive,
    /// Exclusive, for a holder that changes bytes only in place: the frame's layout counter
    /// stays (see the private `frame` module).
    ExclusiveInPlace,
}

impl Mode {
    fn lock(self, c: &Ctl) {
        match self {
            Mode::Shared => c.lock_s(),
            Mode::Exclusive => c.lock_x(),
            Mode::ExclusiveInPlace => c.lock_x_in_place(),
        }
    }

    fn try_lock(self, c: &Ctl) -> bool {
        match self {
            Mode::Shared => c.try_lock_s(),
            Mode::Exclusive => c.try_lock_x(),
            Mode::ExclusiveInPlace => c.try_lock_x_in_place(),
        }
    }

    fn unlock(self, c: &Ctl) {
        match self {
            Mode::Shared => c.unlock_s(),
            Mode::Exclusive | Mode::ExclusiveInPlace => c.unlock_x(),
        }
    }
}

/// How long a fix keeps making room before it gives up with `PoolExhausted`. The frames it
/// waits for are pinned by other threads' fixes or by a flush batch in flight, and both let
/// go on their own; only a pool too small for the pages pinned at once stays full. The bound
/// is wall time, not a count of tries (it was 500 tries of 200 µs): on a machine busy enough
/// to keep the page cleaner off a CPU for a tenth of a second, a count turned a short wait
/// into an error.
const ROOM_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Everything the pool's threads share.
pub(crate) struct Shared {
    pub cfg: BufConfig,
    pub frames: Frames,
    pub ctl: Box<[Ctl]>,
    pub instances: Box<[Instance]>,
    pub per_instance: u32,
    pub spaces: Arc<SpaceMap>,
    pub writer: Arc<dyn PageWriter>,
    pub log: OnceLock<Arc<Log>>,
    pub poisoned: AtomicBool,
    /// Set at shutdown: background work (the dump load) stops.
    pub stopping: AtomicBool,
    /// Held shared by an mtr commit from its log append to its flush-list insertion, and
    /// exclusively by the checkpoint while it reads the oldest modification: a checkpoint can
    /// never skip a change that is in the log but not yet on a flush list. A
    /// [`SpreadLatch`](crate::SpreadLatch): every mtr commit takes it, so its shared holds
    /// write only the committing thread's own counter.
    pub gate: crate::SpreadLatch,
    pub epoch: Instant,
    pub cleaner: CleanerState,
    pub readahead: ReadAhead,
    /// Compressed copies of pages of compressed tablespaces ([`crate::zip`]).
    pub zip: ZipCache,
}

impl Shared {
    pub(crate) fn new(
        cfg: BufConfig,
        spaces: Arc<SpaceMap>,
        writer: Arc<dyn PageWriter>,
    ) -> Result<Shared, BufError> {
        cfg.validate()?;
        let per = cfg.frames_per_instance() as u32;
        let total = per as usize * cfg.instances;
        let frames = Frames::new(total, cfg.page_size.bytes())?;
        let ctl: Box<[Ctl]> = (0..total).map(|i| Ctl::new(i as u32)).collect();
        let instances: Box<[Instance]> = (0..cfg.instances)
            .map(|i| Instance::new(i as u32 * per, per, cfg.old_blocks_pct))
            .collect();
        Ok(Shared {
            readahead: ReadAhead::new(cfg.instances),
            cfg,
            frames,
            ctl,
            instances,
            per_instance: per,
            spaces,
            writer,
            log: OnceLock::new(),
            poisoned: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
            gate: crate::SpreadLatch::new(),
            epoch: Instant::now(),
            cleaner: CleanerState::default(),
            zip: ZipCache::default(),
        })
    }

    #[inline]
    pub(crate) fn ctl(&self, f: u32) -> &Ctl {
        &self.ctl[f as usize]
    }

    /// The instance a page belongs to.
    #[inline]
    pub(crate) fn instance_of(&self, id: PageId) -> usize {
        if self.instances.len() == 1 {
            return 0;
        }
        let key = PageId::new(id.space, id.page_no >> 6).to_u64();
        (fold(key) % self.instances.len() as u64) as usize
    }

    /// The instance owning frame `f`.
    #[inline]
    pub(crate) fn instance_of_frame(&self, f: u32) -> usize {
        (f / self.per_instance) as usize
    }

    pub(crate) fn now_ms(&self) -> u32 {
        self.cfg.clock.now_ms(self.epoch)
    }

    pub(crate) fn poison(&self) {
        self.poisoned.store(true, Ordering::Release);
    }

    pub(crate) fn is_poisoned(&self) -> bool {
        self.poisoned.load(Ordering::Acquire) || self.log.get().is_some_and(|l| l.is_poisoned())
    }

    pub(crate) fn space(&self, space: u32) -> Result<Arc<Tablespace>, BufError> {
        self.spaces
            .get(space)
            .ok_or(BufError::UnknownSpace { space })
    }

    /// Finds `id` in its instance's hash and pins it: lock-free if no writer interferes
    /// ([`crate::hash`]), else under the hash's shared lock.
    #[inline]
    pub(crate) fn lookup_pin(&self, ii: usize, key: u64) -> Option<u32> {
        let inst = &self.instances[ii];
        let found = inst.hash.lookup_optimistic(
            key,
            |l| self.ctl(inst.base + l).page_id.load(Ordering::Acquire),
            |l| self.ctl(inst.base + l).pin(),
            |l| self.ctl(inst.base + l).unpin(),
        );
        if let Some(l) = found {
            return Some(inst.base + l);
        }
        let h = inst.hash.read();
        let f = h
            .lookup(key, |l| {
                self.ctl(inst.base + l).page_id.load(Ordering::Acquire)
            })
            .map(|l| inst.base + l)?;
        self.ctl(f).pin();
        Some(f)
    }

    /// The frame that holds `id` right now, found without lock or pin: a candidate that the
    /// caller must validate with the frame's version and page id ([`crate::racy`]).
    #[inline]
    pub(crate) fn find_unpinned(&self, id: PageId) -> Option<u32> {
        let inst = &self.instances[self.instance_of(id)];
        inst.hash
            .find_unpinned(id.to_u64(), |l| {
                self.ctl(inst.base + l).page_id.load(Ordering::Acquire)
            })
            .map(|l| inst.base + l)
    }

    /// Is `id` in the pool? (No pin, no statistics.)
    pub(crate) fn contains(&self, id: PageId) -> bool {
        let inst = &self.instances[self.instance_of(id)];
        let key = id.to_u64();
        inst.hash
            .read()
            .lookup(key, |l| {
                self.ctl(inst.base + l).page_id.load(Ordering::Acquire)
            })
            .is_some()
    }

    /// Pins and latches page `id`, reading it if needed. Returns the frame.
    pub(crate) fn fix(&self, id: PageId, mode: Mode) -> Result<u32, BufError> {
        let key = id.to_u64();
        let ii = self.instance_of(id);
        loop {
            let f = match self.lookup_pin(ii, key) {
                Some(f) => {
                    self.instances[ii].stats.bump(Counter::Hits);
                    f
                }
                None => {
                    self.instances[ii].stats.bump(Counter::Misses);
                    self.read_in(ii, id)?
                }
            };
            let c = self.ctl(f);
            mode.lock(c);
            if c.page_id.load(Ordering::Acquire) != key {
                // The read failed in another thread and the frame was given up: retry.
                mode.unlock(c);
                c.unpin();
                continue;
            }
            if let Err(e) = self.touch(ii, f, id) {
                mode.unlock(c);
                c.unpin();
                return Err(e);
            }
            return Ok(f);
        }
    }

    /// Pins and latches page `id` (`mode`) through `hint`, the frame that held it when the
    /// caller last saw it, without the page-hash lookup; `None` if the frame no longer holds
    /// the page or its latch is taken right now (the caller then fixes the page the normal
    /// way). See [`crate::BufferPool::get_read_hinted`] for why this is sound.
    #[inline]
    pub(crate) fn fix_hinted(&self, id: PageId, hint: u32, mode: Mode) -> Option<u32> {
        let key = id.to_u64();
        let c = self.ctl.get(hint as usize)?;
        // A cheap first look, so that a stale hint does not pin someone else's frame.
        if c.page_id.load(Ordering::Acquire) != key {
            return None;
        }
        #[cfg(test)]
        crate::hinted_tests::between_look_and_pin(self);
        c.pin();
        if !mode.try_lock(c) {
            c.unpin();
            return None;
        }
        // The page id changes only under the frame's exclusive latch: with the latch held,
        // this answer stays true until the guard drops.
        if c.page_id.load(Ordering::Acquire) != key {
            mode.unlock(c);
            c.unpin();
            return None;
        }
        let ii = self.instance_of_frame(hint);
        self.instances[ii].stats.bump(Counter::Hits);
        if self.touch(ii, hint, id).is_err() {
            mode.unlock(c);
            c.unpin();
            return None;
        }
        Some(hint)
    }

    /// The LRU's reaction to an access (see [`crate::lru`]): the first access stamps the
    /// time; a later one makes an old page young once `old_blocks_time` has passed since, and
    /// moves a young page again only once `young_len / 4` pages were evicted since it moved.
    ///
    /// Only a course lab's starter returns an error (this is lab 2's decision, docs/labs/).
    /// The `Result` costs the hit path nothing measurable: the reference never builds an
    /// `Err`, so the caller's check is one never-taken branch beside the pin and latch atomics.
    pub(crate) fn touch(&self, ii: usize, f: u32, id: PageId) -> Result<(), BufError> {
        let c = self.ctl(f);
        let first = c.accessed.load(Ordering::Relaxed);
        if first == 0 {
            let now = self.now_ms();
            if c.accessed
                .compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                self.note_first_access(id);
            }
            return Ok(());
        }
        // lab 2 begin: touch
        // lab 2 starter: let _ = (ii, first); Err(minnow_page::lab::NotWritten::new(2, "touch").into())
        let inst = &self.instances[ii];
        let stamp = c.young.load(Ordering::Relaxed);
        if stamp == 0 {
            // Read the clock only here: on the common young-page hit it is not needed.
            let now = self.now_ms();
            let old_ms = self.cfg.old_blocks_time.as_millis() as u32;
            if now.wrapping_sub(first) < old_ms {
                inst.stats.bump(Counter::NotYoung);
                return Ok(());
            }
        } else {
            // Made young before: move again only after young_len / 4 evictions.
            let clock = inst.freed_clock.load(Ordering::Relaxed);
            let young_len = inst
                .lru_len
                .load(Ordering::Relaxed)
                .saturating_sub(inst.old_len.load(Ordering::Relaxed));
            if clock.wrapping_sub(stamp) < young_len / 4 {
                return Ok(());
            }
        }
        let mut lists = inst.lists.lock();
        let local = f - inst.base;
        if lists.place(local) == crate::lru::Place::Out {
            return Ok(());
        }
        lists.make_young(local);
        inst.publish(&lists);
        drop(lists);
        let clock = inst.freed_clock.load(Ordering::Relaxed);
        c.young.store(clock.max(1), Ordering::Relaxed);
        inst.stats.bump(Counter::Young);
        Ok(())
        // lab 2 end
    }

    /// Takes a frame for a new page under the instance's exclusive hash lock: free list first,
    /// then a clean, unpinned, unlatched page from the LRU tail. The frame comes back latched
    /// exclusively, holding no page.
    pub(crate) fn take_frame(&self, ii: usize, hash: &mut HashWrite<'_>) -> Option<u32> {
        let inst = &self.instances[ii];
        let mut lists = inst.lists.lock();
        let mut skipped = Vec::new();
        let mut got = None;
        while let Some(l) = lists.free.pop() {
            let c = self.ctl(inst.base + l);
            if c.pin.load(Ordering::SeqCst) == 0 && c.try_lock_x() {
                if c.pin.load(Ordering::SeqCst) == 0 {
                    got = Some(inst.base + l);
                    break;
                }
                c.unlock_x();
            }
            skipped.push(l);
        }
        lists.free.extend(skipped);
        if got.is_none() {
            let victim = lists.tail_first().find(|&l| {
                let c = self.ctl(inst.base + l);
                let idle = |c: &Ctl| {
                    c.pin.load(Ordering::SeqCst) == 0 && c.oldest.load(Ordering::Acquire) == 0
                };
                if !idle(c) || !c.try_lock_x() {
                    return false;
                }
                if idle(c) {
                    true
                } else {
                    c.unlock_x();
                    false
                }
            });
            if let Some(l) = victim {
                let c = self.ctl(inst.base + l);
                lists.remove(l);
                let old = c.page_id.swap(NO_PAGE, Ordering::AcqRel);
                if old != NO_PAGE {
                    hash.remove(old, l);
                }
                inst.freed_clock.fetch_add(1, Ordering::Relaxed);
                inst.stats.bump(Counter::Evictions);
                crate::trace_event!(
                    "page_evict",
                    space = PageId::from_u64(old).space,
                    page = PageId::from_u64(old).page_no
                );
                got = Some(inst.base + l);
            }
        }
        inst.publish(&lists);
        if let Some(f) = got {
            let c = self.ctl(f);
            c.accessed.store(0, Ordering::Relaxed);
            c.young.store(0, Ordering::Relaxed);
        }
        got
    }

    /// Gets a frame for `id` and publishes it in the hash, latched exclusively and pinned;
    /// or, if the page turned up meanwhile, `Err(frame)` with that frame pinned only.
    fn claim_frame(&self, ii: usize, id: PageId) -> Result<Result<u32, u32>, BufError> {
        let key = id.to_u64();
        let inst = &self.instances[ii];
        let mut waiting_since = None;
        loop {
            {
                let mut h = inst.hash.write();
                if let Some(l) = h.lookup(key, |l| {
                    self.ctl(inst.base + l).page_id.load(Ordering::Acquire)
                }) {
                    let f = inst.base + l;
                    self.ctl(f).pin();
                    return Ok(Err(f));
                }
                if let Some(f) = self.take_frame(ii, &mut h) {
                    let c = self.ctl(f);
                    c.page_id.store(key, Ordering::Release);
                    c.pin();
                    h.insert(key, f - inst.base);
                    return Ok(Ok(f));
                }
            }
            self.make_room(ii, &mut waiting_since)?;
        }
    }

    /// No frame could be taken: write dirty pages from the LRU tail, take a frame back from
    /// the zip cache, or wait a little for pins to go; give up once `waiting_since` is
    /// [`ROOM_WAIT`] ago.
    fn make_room(&self, ii: usize, waiting_since: &mut Option<Instant>) -> Result<(), BufError> {
        if self.is_poisoned() {
            return Err(BufError::Poisoned);
        }
        if self.flush_lru_tail(ii, self.cfg.doublewrite_pages.min(8))? > 0 {
            return Ok(());
        }
        if self.zip.release_one(self) {
            return Ok(());
        }
        let since = *waiting_since.get_or_insert_with(Instant::now);
        if since.elapsed() > ROOM_WAIT {
            let inst = &self.instances[ii];
            return Err(BufError::PoolExhausted {
                instance: ii,
                frames: inst.n as usize,
            });
        }
        self.cleaner.wake();
        std::thread::sleep(std::time::Duration::from_micros(200));
        Ok(())
    }

    /// Gives a frame the zip cache had borrowed (latched exclusively, holding no page) back
    /// to its instance's free list.
    pub(crate) fn give_back_frame(&self, f: u32) {
        let ii = self.instance_of_frame(f);
        let inst = &self.instances[ii];
        {
            let mut lists = inst.lists.lock();
            lists.free.push(f - inst.base);
            inst.publish(&lists);
        }
        self.ctl(f).unlock_x();
    }

    /// Reads page `id` of a compressed tablespace into `bytes` (frame `f`, latched X): from
    /// its cached block if the zip cache has one (no IO, no checksum to check: the block was
    /// made in memory and its CRC-32C is still checked by the inflate), else from disk, keeping
    /// the block read.
    fn read_zip(&self, space: &Tablespace, id: PageId, bytes: &mut [u8]) -> Result<(), BufError> {
        if let Some(block) = self.zip.get(self, id, true) {
            space
                .restore_block(id.page_no, &block, bytes)
                .map_err(|e| BufError::from_io(id, e))?;
            let stored = minnow_page::bytes::read_u32(bytes, minnow_page::fil::PAGE_NO).ok();
            if stored != Some(id.page_no) {
                return Err(BufError::from_io(
                    id,
                    minnow_io::IoError::Misdirected {
                        path: space.path().to_path_buf(),
                        page_no: id.page_no,
                        stored: stored.unwrap_or(u32::MAX),
                    },
                ));
            }
            self.zip.count_read(self, true);
            return Ok(());
        }
        let mut block = minnow_io::AlignedBuf::new(space.physical_page_bytes())?;
        space
            .read_block(id.page_no, &mut block)
            .map_err(|e| BufError::from_io(id, e))?;
        self.zip.count_read(self, false);
        let verdict = space
            .decode_block(id.page_no, &block, bytes)
            .map_err(|e| BufError::from_io(id, e))?;
        if verdict != minnow_page::checksum::Verdict::Empty {
            self.zip.put(self, id, &block);
        }
        Ok(())
    }

    /// Reads page `id` into a new frame; returns the frame pinned (not latched).
    fn read_in(&self, ii: usize, id: PageId) -> Result<u32, BufError> {
        let space = self.space(id.space)?;
        let f = match self.claim_frame(ii, id)? {
            Ok(f) => f,
            Err(found) => return Ok(found),
        };
        // SAFETY: `claim_frame` returned the frame latched exclusively by this thread.
        let bytes = unsafe { self.frames.slice_mut(f) };
        let read = if space.zip().is_some() {
            self.read_zip(&space, id, bytes)
        } else {
            if self.spaces.has_compressed() {
                self.zip.count_plain_read();
            }
            space
                .read_page(id.page_no, bytes)
                .map(|_| ())
                .map_err(|e| BufError::from_io(id, e))
        };
        match read {
            Ok(()) => {
                if let Err(e) = self.publish_read(ii, f) {
                    self.discard(f);
                    return Err(e);
                }
                self.instances[ii].stats.bump(Counter::Reads);
                crate::trace_event!("page_read", space = id.space, page = id.page_no);
                self.ctl(f).unlock_x();
                Ok(f)
            }
            Err(e) => {
                self.discard(f);
                Err(e)
            }
        }
    }

    /// Puts a frame whose page was just read at the head of the old sublist. On an error
    /// (only a lab starter's) the frame is not on the list; the caller discards it.
    pub(crate) fn publish_read(&self, ii: usize, f: u32) -> Result<(), BufError> {
        let inst = &self.instances[ii];
        let mut lists = inst.lists.lock();
        let inserted = lists.insert_old(f - inst.base);
        inst.publish(&lists);
        inserted
    }

    /// Gives up frame `f` (latched exclusively and pinned once by the caller): removes its
    /// page from the hash and the LRU, frees the frame, releases latch and pin.
    pub(crate) fn discard(&self, f: u32) {
        let ii = self.instance_of_frame(f);
        let inst = &self.instances[ii];
        let c = self.ctl(f);
        {
            let mut h = inst.hash.write();
            let old = c.page_id.swap(NO_PAGE, Ordering::AcqRel);
            if old != NO_PAGE {
                h.remove(old, f - inst.base);
            }
            let mut lists = inst.lists.lock();
            lists.remove(f - inst.base);
            lists.free.push(f - inst.base);
            inst.publish(&lists);
        }
        c.unlock_x();
        c.unpin();
    }

    /// Pins and latches (X) page `id` for re-initialisation without reading it: a cached
    /// page is used as is; otherwise a zeroed frame is made (the file is extended to hold the
    /// page). Returns the frame and whether it was created.
    pub(crate) fn create(&self, id: PageId) -> Result<(u32, bool), BufError> {
        let space = self.space(id.space)?;
        let ii = self.instance_of(id);
        let key = id.to_u64();
        loop {
            if let Some(f) = self.lookup_pin(ii, key) {
                let c = self.ctl(f);
                c.lock_x();
                if c.page_id.load(Ordering::Acquire) == key {
                    if let Err(e) = self.touch(ii, f, id) {
                        c.unlock_x();
                        c.unpin();
                        return Err(e);
                    }
                    return Ok((f, false));
                }
                c.unlock_x();
                c.unpin();
                continue;
            }
            let f = match self.claim_frame(ii, id)? {
                Ok(f) => f,
                Err(found) => {
                    self.ctl(found).unpin();
                    continue;
                }
            };
            if id.page_no >= space.size_in_pages()
                && let Err(e) = space.extend_to(id.page_no.saturating_add(1))
            {
                self.discard(f);
                return Err(BufError::from_io(id, e));
            }
            // SAFETY: `claim_frame` returned the frame latched exclusively by this thread.
            unsafe { self.frames.slice_mut(f) }.fill(0);
            if space.zip().is_some() {
                self.zip.invalidate(id);
            }
            if let Err(e) = self.publish_read(ii, f) {
                self.discard(f);
                return Err(e);
            }
            return Ok((f, true));
        }
    }

    /// The redo log, once attached.
    pub(crate) fn log(&self) -> Result<&Arc<Log>, BufError> {
        self.log.get().ok_or(BufError::NoLog)
    }
}
