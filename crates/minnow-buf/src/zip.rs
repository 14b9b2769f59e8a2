//! Compressed pages in the buffer pool: the zip cache.
//!
//! A page of a compressed tablespace ([`minnow_io::Tablespace::create_compressed`]) exists in
//! two forms: the **block** (1-8 KiB, what the file holds) and the **logical page** (16 KiB,
//! what the B-tree reads and changes). InnoDB's buffer pool can hold a compressed page in
//! either or both (innodb-facts.md §10): the uncompressed frame is needed to use the page, the
//! compressed block makes the page cheap to bring back without IO. minnow does the same:
//!
//! ```text
//!   frames (16 KiB each)                       zip cache (frames lent to it, cut into blocks)
//!  +------+------+------+------+------+        +------+------+------+------+
//!  | p 7  | p 12 | free | p 40 | lent |──────► | 8K   | 8K   |  ... blocks of p 7, p 12,
//!  +------+------+------+------+------+        | p 7  | p 99 |      p 99 (compressed only)
//!      uncompressed copies                     +------+------+
//! ```
//!
//! - **Both copies**: a page read from disk keeps the block it was read as; a change keeps the
//!   block its mini-transaction's fit check produced (so the flush writes that block with a
//!   fresh FIL header instead of compressing again, [`minnow_io::Tablespace::block_for`]).
//! - **Compressed only**: when the frame is evicted, the block stays. A later read of the page
//!   inflates the block into a frame (a few to a few dozen microseconds) instead of reading the
//!   disk (a hundred microseconds or more): a *zip hit*.
//! - **Neither**: the block is evicted from the zip cache too.
//!
//! ## Where the memory comes from, and the IO-bound rule
//!
//! The zip cache owns no memory of its own: it **borrows whole frames** from the pool (taken
//! like a frame for a new page: from the free list, or by evicting the coldest clean page) and
//! cuts each into blocks of one size (16 KiB frame = two 8 KiB blocks, four 4 KiB blocks...).
//! So the pool's memory stays the configured size, and the question InnoDB answers in
//! `buf_LRU_evict_from_unzip_LRU` becomes: when a block needs room, take another frame from
//! the pool (that is, **evict an uncompressed copy** to keep more compressed ones), or evict
//! the oldest block (keep the uncompressed copies)? InnoDB's answer, kept here: if the workload
//! is **IO-bound** (decompressions are fewer than 50 times the page reads from disk, its
//! `BUF_LRU_IO_TO_UNZIP_FACTOR`), more compressed pages in memory save IO, so frames are lent;
//! otherwise decompression is the bottleneck: the cache recycles its own blocks, and each block
//! it keeps and each zip hit first give a borrowed frame back (emptied of its oldest blocks),
//! so the pool regains frames for uncompressed copies until the working set fits in them. The rates are counts halved every 4,096 events, so
//! they follow the recent workload; before any read (a load) nothing says decompression is the
//! bottleneck, so the cache grows and the flushes write the blocks the commits compressed. At
//! most three quarters of the frames are lent: the B-tree still needs frames for the pages it
//! works on.
//!
//! Correctness never depends on the cache: a block is kept only while it is the compressed
//! form of the page's current body (a change replaces it at commit, recovery's redo apply
//! drops it), and a page whose block was evicted is compressed again when it is written.
//!
//! Blocks live inside the lent frames: a lent frame is latched exclusively by the cache for as
//! long as it is lent (no page-hash entry, on no list), which is what makes handing out its
//! bytes under the cache's mutex sound.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};

use minnow_page::PageId;
use parking_lot::Mutex;

use crate::pool::Shared;

/// InnoDB's `BUF_LRU_IO_TO_UNZIP_FACTOR`: a page read from disk costs about as much as 50
/// decompressions.
const IO_TO_UNZIP_FACTOR: u64 = 50;
/// The rates are halved once this many events were counted.
const DECAY_AT: u64 = 4096;

/// A lent frame cut into blocks of one size.
struct Slab {
    frame: u32,
    block: usize,
    /// Bit `i` set: slot `i` holds a block.
    used: u64,
    slots: usize,
}

impl Slab {
    fn free_slot(&self) -> Option<usize> {
        (0..self.slots).find(|i| self.used & (1 << i) == 0)
    }
}

/// Where a page's block lives.
#[derive(Clone, Copy)]
struct Entry {
    slab: usize,
    slot: usize,
    tick: u64,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<u64, Entry>,
    /// tick → page, oldest first: the cache's LRU order.
    order: BTreeMap<u64, u64>,
    tick: u64,
    slabs: Vec<Option<Slab>>,
    /// Per block size, the slabs that may have a free slot (every slab with one is listed;
    /// entries that filled up or were given back are dropped when met): finding a slot does
    /// not scan every lent frame.
    with_room: HashMap<usize, Vec<usize>>,
    /// Indexes of `slabs` that hold no slab (frames given back), for reuse.
    vacant: Vec<usize>,
    /// Slabs held (frames lent).
    lent: usize,
    /// Decayed counts for the IO-bound rule.
    io: u64,
    unzip: u64,
    /// The frame of the next instance to borrow from (round robin).
    next_instance: usize,
}

/// Counters of the zip cache (all only grow, except the gauges `blocks`, `block_bytes` and
/// `frames_lent`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ZipCacheStats {
    /// Blocks held now.
    pub blocks: u64,
    /// Bytes of the blocks held now.
    pub block_bytes: u64,
    /// Frames lent to the cache now.
    pub frames_lent: u64,
    /// Reads of a compressed page served by inflating its cached block (no IO).
    pub zip_hits: u64,
    /// Reads of a compressed page that went to disk.
    pub zip_misses: u64,
    /// Blocks evicted to make room for others.
    pub blocks_evicted: u64,
    /// Frames borrowed from the pool (each evicted a page or took a free frame).
    pub frames_borrowed: u64,
    /// Frames given back to the pool.
    pub frames_returned: u64,
    /// Flushes of a compressed page that wrote its cached block without compressing.
    pub writes_from_cache: u64,
    /// True if the last decision found the workload IO-bound (frames are lent).
    pub io_bound: bool,
}

/// The zip cache. See the module docs.
#[derive(Default)]
pub(crate) struct ZipCache {
    inner: Mutex<Inner>,
    zip_hits: AtomicU64,
    zip_misses: AtomicU64,
    blocks_evicted: AtomicU64,
    frames_borrowed: AtomicU64,
    frames_returned: AtomicU64,
    writes_from_cache: AtomicU64,
}

impl Inner {
    fn io_bound(&self) -> bool {
        self.unzip <= self.io * IO_TO_UNZIP_FACTOR
    }

    fn count(&mut self, io: u64, unzip: u64) {
        self.io += io;
        self.unzip += unzip;
        if self.io + self.unzip >= DECAY_AT {
            self.io /= 2;
            self.unzip /= 2;
        }
    }

    fn lent(&self) -> usize {
        self.lent
    }

    /// Takes `frame` as a new slab of `block`-byte slots.
    fn add_slab(&mut self, frame: u32, block: usize, slots: usize) {
        let slab = Slab {
            frame,
            block,
            used: 0,
            slots,
        };
        let i = match self.vacant.pop() {
            Some(i) => {
                if let Some(s) = self.slabs.get_mut(i) {
                    *s = Some(slab);
                }
                i
            }
            None => {
                self.slabs.push(Some(slab));
                self.slabs.len() - 1
            }
        };
        self.lent += 1;
        self.with_room.entry(block).or_default().push(i);
    }

    /// Forgets slab `i` (its frame goes back to the pool); returns its frame.
    fn drop_slab(&mut self, i: usize) -> Option<u32> {
        let frame = self.slabs.get_mut(i)?.take()?.frame;
        self.vacant.push(i);
        self.lent -= 1;
        Some(frame)
    }

    fn touch(&mut self, key: u64) {
        self.tick += 1;
        let tick = self.tick;
        if let Some(e) = self.entries.get_mut(&key) {
            self.order.remove(&e.tick);
            e.tick = tick;
            self.order.insert(tick, key);
        }
    }

    /// Removes `key`'s entry and frees its slot. Returns the slab index it was in.
    fn remove(&mut self, key: u64) -> Option<usize> {
        let e = self.entries.remove(&key)?;
        self.order.remove(&e.tick);
        if let Some(Some(s)) = self.slabs.get_mut(e.slab) {
            let was_full = s.free_slot().is_none();
            s.used &= !(1 << e.slot);
            if was_full {
                self.with_room.entry(s.block).or_default().push(e.slab);
            }
        }
        Some(e.slab)
    }

    /// The oldest entry whose blocks are `block` bytes.
    fn oldest_of_size(&self, block: usize) -> Option<u64> {
        self.order.values().copied().find(|key| {
            self.entries
                .get(key)
                .and_then(|e| self.slabs.get(e.slab))
                .and_then(Option::as_ref)
                .is_some_and(|s| s.block == block)
        })
    }

    fn slot_for(&mut self, block: usize) -> Option<(usize, usize)> {
        let Inner {
            with_room, slabs, ..
        } = self;
        let list = with_room.get_mut(&block)?;
        while let Some(&i) = list.last() {
            if let Some(Some(s)) = slabs.get(i)
                && s.block == block
                && let Some(slot) = s.free_slot()
            {
                return Some((i, slot));
            }
            list.pop();
        }
        None
    }
}

impl ZipCache {
    /// A copy of `id`'s cached block, if any; `used` marks it as just used (a read does, a
    /// flush copying it to write it does not).
    pub(crate) fn get(&self, shared: &Shared, id: PageId, used: bool) -> Option<Vec<u8>> {
        let key = id.to_u64();
        let mut inner = self.inner.lock();
        let e = *inner.entries.get(&key)?;
        let slab = inner.slabs.get(e.slab)?.as_ref()?;
        let (frame, block) = (slab.frame, slab.block);
        // SAFETY: a lent frame is latched exclusively by the cache for as long as it is lent
        // (see `borrow_frame`), and its bytes are touched only under `inner`, held here.
        let bytes = unsafe { shared.frames.slice(frame) };
        let out = bytes.get(e.slot * block..(e.slot + 1) * block)?.to_vec();
        if used {
            inner.touch(key);
        }
        Some(out)
    }

    /// Counts a read of a compressed page: from the cache (`hit`) or from disk. A hit while
    /// the workload is decompression-bound gives a borrowed frame back (see the module docs).
    pub(crate) fn count_read(&self, shared: &Shared, hit: bool) {
        let mut inner = self.inner.lock();
        if hit {
            inner.count(0, 1);
            self.zip_hits.fetch_add(1, Ordering::Relaxed);
            if !inner.io_bound() && inner.lent() > 1 {
                self.release_oldest(shared, &mut inner);
            }
        } else {
            inner.count(1, 1);
            self.zip_misses.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts a page read from disk of an uncompressed tablespace (it is IO all the same).
    pub(crate) fn count_plain_read(&self) {
        self.inner.lock().count(1, 0);
    }

    /// Counts a flush that wrote a cached block.
    pub(crate) fn count_write_from_cache(&self) {
        self.writes_from_cache.fetch_add(1, Ordering::Relaxed);
    }

    /// Forgets `id`'s block (its page changed without a fit check: recovery's redo apply, a
    /// page created afresh).
    pub(crate) fn invalidate(&self, id: PageId) {
        let mut inner = self.inner.lock();
        if !inner.entries.is_empty() {
            inner.remove(id.to_u64());
        }
    }

    /// Keeps `block` as `id`'s compressed form, making room as the IO-bound rule says (see
    /// the module docs). Never waits for IO: if no room can be made, the block is not kept.
    pub(crate) fn put(&self, shared: &Shared, id: PageId, block: &[u8]) {
        let key = id.to_u64();
        let size = block.len();
        if size == 0 || size >= shared.frames.page_bytes() {
            return;
        }
        let mut inner = self.inner.lock();
        inner.remove(key);
        if !inner.io_bound() && inner.lent() > 1 {
            // Decompression-bound: shrink by a frame per block kept, oldest blocks first, so
            // the pool gets its frames back for uncompressed copies.
            self.release_oldest(shared, &mut inner);
        }
        let max_lent = shared.ctl.len() * 3 / 4;
        let (slab, slot) = loop {
            if let Some(found) = inner.slot_for(size) {
                break found;
            }
            let grow = inner.io_bound() || inner.oldest_of_size(size).is_none();
            if grow
                && inner.lent() < max_lent
                && let Some(frame) = self.borrow_frame(shared, &mut inner)
            {
                let slots = (shared.frames.page_bytes() / size).min(64);
                inner.add_slab(frame, size, slots);
                continue;
            }
            let Some(victim) = inner.oldest_of_size(size) else {
                return;
            };
            let freed = inner.remove(victim);
            self.blocks_evicted.fetch_add(1, Ordering::Relaxed);
            if !inner.io_bound()
                && let Some(i) = freed
            {
                // Decompression-bound: a frame whose blocks have all gone goes back.
                self.return_if_empty(shared, &mut inner, i);
            }
        };
        let Some(Some(s)) = inner.slabs.get_mut(slab) else {
            return;
        };
        s.used |= 1 << slot;
        let frame = s.frame;
        // SAFETY: as in `get`: the lent frame is the cache's, and `inner` is held.
        let bytes = unsafe { shared.frames.slice_mut(frame) };
        if let Some(dst) = bytes.get_mut(slot * size..(slot + 1) * size) {
            dst.copy_from_slice(block);
        }
        inner.tick += 1;
        let tick = inner.tick;
        inner.entries.insert(key, Entry { slab, slot, tick });
        inner.order.insert(tick, key);
    }

    /// Takes a frame from an instance (free list or the coldest clean page) and keeps it
    /// latched exclusively: it is the cache's until returned.
    fn borrow_frame(&self, shared: &Shared, inner: &mut Inner) -> Option<u32> {
        let n = shared.instances.len();
        for k in 0..n {
            let ii = (inner.next_instance + k) % n;
            let inst = &shared.instances[ii];
            let mut h = inst.hash.write();
            if let Some(f) = shared.take_frame(ii, &mut h) {
                inner.next_instance = (ii + 1) % n;
                self.frames_borrowed.fetch_add(1, Ordering::Relaxed);
                return Some(f);
            }
        }
        None
    }

    /// Gives slab `i`'s frame back to its instance's free list if none of its slots is used.
    fn return_if_empty(&self, shared: &Shared, inner: &mut Inner, i: usize) {
        if !matches!(inner.slabs.get(i), Some(Some(s)) if s.used == 0) {
            return;
        }
        let Some(frame) = inner.drop_slab(i) else {
            return;
        };
        shared.give_back_frame(frame);
        self.frames_returned.fetch_add(1, Ordering::Relaxed);
    }

    /// Empties the slab holding the oldest block and gives its frame back to the pool; for a
    /// pool that has run out of frames. True if a frame went back.
    pub(crate) fn release_one(&self, shared: &Shared) -> bool {
        let mut inner = self.inner.lock();
        self.release_oldest(shared, &mut inner)
    }

    /// [`ZipCache::release_one`] with the cache's lock held.
    fn release_oldest(&self, shared: &Shared, inner: &mut Inner) -> bool {
        let Some(&oldest) = inner.order.values().next() else {
            // Lent frames with no blocks at all (cannot stay so for long, but be sure).
            let empty = inner
                .slabs
                .iter()
                .position(|s| s.as_ref().is_some_and(|s| s.used == 0));
            return match empty {
                Some(i) => {
                    self.return_if_empty(shared, inner, i);
                    true
                }
                None => false,
            };
        };
        let Some(slab) = inner.entries.get(&oldest).map(|e| e.slab) else {
            return false;
        };
        let keys: Vec<u64> = inner
            .entries
            .iter()
            .filter(|(_, e)| e.slab == slab)
            .map(|(k, _)| *k)
            .collect();
        for k in keys {
            inner.remove(k);
            self.blocks_evicted.fetch_add(1, Ordering::Relaxed);
        }
        self.return_if_empty(shared, inner, slab);
        true
    }

    /// The counters.
    pub(crate) fn stats(&self) -> ZipCacheStats {
        let inner = self.inner.lock();
        let block_bytes = inner
            .entries
            .values()
            .filter_map(|e| inner.slabs.get(e.slab).and_then(Option::as_ref))
            .map(|s| s.block as u64)
            .sum();
        ZipCacheStats {
            blocks: inner.entries.len() as u64,
            block_bytes,
            frames_lent: inner.lent() as u64,
            zip_hits: self.zip_hits.load(Ordering::Relaxed),
            zip_misses: self.zip_misses.load(Ordering::Relaxed),
            blocks_evicted: self.blocks_evicted.load(Ordering::Relaxed),
            frames_borrowed: self.frames_borrowed.load(Ordering::Relaxed),
            frames_returned: self.frames_returned.load(Ordering::Relaxed),
            writes_from_cache: self.writes_from_cache.load(Ordering::Relaxed),
            io_bound: inner.io_bound(),
        }
    }
}

#[cfg(test)]
mod tests {
    use minnow_page::{PageId, PageSize};
    use minnow_zip::{Algorithm, KeyBlockSize, ZipConfig};

    use crate::{BufConfig, BufError, BufferPool};

    const WORDS: &[u8] = b"the buffer pool keeps compressed pages in borrowed frames ";

    /// A pool of `frames` 16 KiB frames over a compressed tablespace of 8 KiB blocks holding
    /// `pages` pages of text (written through mtrs, flushed), so every read after this misses.
    /// No page cleaner: its free-frame upkeep evicts pages at moments the scheduler picks, and
    /// whether the decayed IO/decompression ratio crosses its factor before the working set
    /// settles depended on them (one run in three failed on a loaded machine); without it,
    /// every run makes the same moves.
    fn pool_with_text(dir: &std::path::Path, frames: usize, pages: u32) -> BufferPool {
        let cfg = BufConfig {
            read_ahead_threshold: 0,
            page_cleaners: 0,
            ..BufConfig::with_frames(frames, PageSize::K16)
        };
        let zip = ZipConfig::new(KeyBlockSize::K8, Algorithm::default());
        let pool = BufferPool::create_scratch_with(dir, cfg, pages, Some(zip)).unwrap();
        for no in 1..pages {
            let mut mtr = pool.mtr().unwrap();
            let h = mtr.get_write(PageId::new(1, no)).unwrap();
            let body: Vec<u8> = (0..8000)
                .map(|i| WORDS[(i + no as usize) % WORDS.len()])
                .collect();
            mtr.write(h, 100, &body).unwrap();
            mtr.commit().unwrap();
        }
        pool.flush_all().unwrap();
        pool
    }

    fn read_all(pool: &BufferPool, pages: u32) {
        for no in 1..pages {
            let g = pool.get_read(PageId::new(1, no)).unwrap();
            assert_eq!(g[100], WORDS[no as usize % WORDS.len()], "page {no}");
        }
    }

    #[test]
    fn an_io_bound_scan_borrows_frames_and_rereads_hit_the_compressed_copies() {
        let dir = tempfile::tempdir().unwrap();
        // 200 pages through 64 frames: IO-bound. Then 80 of them twice: more than the
        // frames left for pages, fewer than the blocks the borrowed frames hold.
        let pool = pool_with_text(dir.path(), 64, 200);
        let start = pool.zip_cache_stats();
        read_all(&pool, 200);
        read_all(&pool, 80);
        read_all(&pool, 80);
        let s = pool.zip_cache_stats();
        assert!(s.frames_borrowed > 0, "{s:?}");
        assert!(
            s.frames_lent > 0 && s.frames_lent <= 48,
            "at most 3/4 lent: {s:?}"
        );
        assert!(s.zip_misses > start.zip_misses, "{s:?}");
        // Pages whose frame was evicted came back from their compressed copy, without IO.
        assert!(s.zip_hits > 0, "{s:?}");
        assert!(s.blocks > 0 && s.block_bytes == s.blocks * 8192, "{s:?}");
        // Flushes wrote the blocks the fit checks had made.
        assert!(s.writes_from_cache >= 199, "{s:?}");
        pool.shutdown().unwrap();
    }

    #[test]
    fn a_page_that_stops_compressing_fails_its_commit_and_is_restored() {
        let dir = tempfile::tempdir().unwrap();
        let pool = pool_with_text(dir.path(), 32, 4);
        let id = PageId::new(1, 2);
        let before = pool.get_read(id).unwrap().to_vec();
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let noise: Vec<u8> = (0..12_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let mut mtr = pool.mtr().unwrap();
        let h = mtr.get_write(id).unwrap();
        mtr.write(h, 200, &noise).unwrap();
        match mtr.commit() {
            Err(BufError::CompressionFailure {
                page,
                block,
                capacity,
            }) => {
                assert_eq!((page, block), (id, 8192));
                assert!(capacity < 8192);
            }
            other => panic!("expected a compression failure, got {other:?}"),
        }
        assert_eq!(pool.get_read(id).unwrap().to_vec(), before);
        let zs = pool.spaces().get(1).unwrap().zip_stats().unwrap();
        assert!(zs.compress_failures >= 1, "{zs:?}");
        pool.shutdown().unwrap();
    }

    #[test]
    fn a_pool_out_of_frames_takes_them_back_from_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let pool = pool_with_text(dir.path(), 16, 60);
        read_all(&pool, 60);
        assert!(pool.zip_cache_stats().frames_lent > 0);
        // Pin as many pages as possible: the cache must give frames back rather than let
        // the pool run dry.
        let guards: Vec<_> = (1..14)
            .map(|no| pool.get_read(PageId::new(1, no)).unwrap())
            .collect();
        let s = pool.zip_cache_stats();
        assert!(s.frames_returned > 0 || s.frames_lent <= 3, "{s:?}");
        drop(guards);
        pool.shutdown().unwrap();
    }

    #[test]
    fn a_decompression_bound_workload_gives_frames_back() {
        let dir = tempfile::tempdir().unwrap();
        let pool = pool_with_text(dir.path(), 64, 120);
        read_all(&pool, 120);
        let lent = pool.zip_cache_stats().frames_lent;
        assert!(lent > 8, "an IO-bound start borrows frames: {lent}");
        // Now a working set the cache serves: once decompressions outnumber disk reads 50 to
        // 1 (InnoDB's factor) the workload is not IO-bound, and the cache shrinks as it keeps
        // blocks until the working set fits in frames again.
        for _ in 0..400 {
            read_all(&pool, 40);
        }
        let s = pool.zip_cache_stats();
        assert!(!s.io_bound, "{s:?}");
        assert!(s.frames_returned > 0 && s.frames_lent < lent, "{s:?}");
        read_all(&pool, 120);
        pool.shutdown().unwrap();
    }
}
