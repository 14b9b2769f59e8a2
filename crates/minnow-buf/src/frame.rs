//! Frames and control blocks.
//!
//! A **frame** is a page-sized slot of memory in the buffer pool; all frames live in one
//! page-aligned anonymous memory map ([`Frames`]), so frame `f` starts at `f * page_size` and
//! can be handed to `O_DIRECT` IO as is. A **control block** ([`Ctl`], InnoDB's `buf_block_t`)
//! describes what a frame currently holds and who is using it:
//!
//! ```text
//!  Ctl (48 bytes)                                  frame (page_size bytes, in the map)
//!  +-----------+--------------------------------+  +----------------------------------+
//!  | latch     | 8  shared/exclusive rw-latch   |  | FIL header | body ... | trailer   |
//!  | page_id   | 8  (space, page_no) or NONE    |  +----------------------------------+
//!  | oldest    | 8  oldest_modification (0=clean)
//!  | layout    | 8  layout counter              |
//!  | pin       | 4  pin count + FLUSHING bit    |
//!  | version   | 4  seqlock counter             |
//!  | accessed  | 4  first access (ms), 0 = never|
//!  | young     | 4  freed-clock stamp           |
//!  +-----------+--------------------------------+
//! ```
//!
//! ## Pin versus latch
//!
//! They answer different questions. A **pin** (an atomic count) says "this frame must keep
//! holding this page": a pinned frame is never evicted or reused, but its bytes may change. A
//! **latch** (a reader-writer lock) says "nobody else changes (S) or reads (X) these bytes while I
//! look": it protects the *contents*. A thread that found a page in the page hash pins it
//! first (so it cannot vanish), then waits for the latch. The page's newest LSN is the FIL
//! header's LSN field inside the frame, so the control block need not store it.
//!
//! ## The version counter (optimistic reads)
//!
//! `version` is a seqlock: it is odd while an exclusive latch is held and is bumped at every
//! exclusive acquire and release. A reader that copies bytes without any latch, then finds
//! the same even version before and after, knows no writer touched them in between
//! ([`crate::OptimisticRead`] copies that way; [`crate::BufferPool::read_optimistic`] reads in
//! place, without even a pin: the B-tree's optimistic descents, see [`crate::racy`]).
//!
//! ## The layout counter (where records lie)
//!
//! `layout` says whether the frame's records may have *moved* since someone looked: it is
//! raised at every exclusive latch, as `version` is, except by a holder that promises to
//! change bytes only in place ([`Ctl::lock_x_in_place`]: a delete mark, the system columns,
//! a header field; no record inserted, removed or moved, no page reorganized). So while a
//! frame keeps the same page and the same `layout`, every record's origin on it still holds
//! that record. InnoDB's adaptive hash index stays exact by being told of every record
//! insert and delete; minnow's remembers `(frame, layout)` with each entry and checks it
//! instead, so a writer that only marks a record leaves the leaf's entries valid, and any
//! other writer, eviction or read-in ends them all without a word. Read it under the frame's
//! latch (shared or exclusive): it changes only under the exclusive one. It never goes back,
//! so a value names one state of one frame; a user compares the frame too (each frame also
//! starts at its own index times 2^40, so two frames' values meet only after 2^40 latches).

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use memmap2::MmapMut;
use minnow_page::PageId;
use parking_lot::RawRwLock;
use parking_lot::lock_api::RawRwLock as _;

use crate::BufError;

/// `page_id` of a frame that holds no page.
pub(crate) const NO_PAGE: u64 = u64::MAX;
/// No frame (end of a list or hash chain).
pub(crate) const NIL: u32 = u32::MAX;
/// The bit of [`Ctl::pin`] set while a page cleaner writes the frame.
pub(crate) const FLUSHING: u32 = 1 << 31;

/// The control block of one frame. See the module docs.
pub(crate) struct Ctl {
    latch: RawRwLock,
    /// The page held, packed with [`PageId::to_u64`], or [`NO_PAGE`]. Changed only with the
    /// instance's page-hash write lock held and the frame latched exclusively.
    pub page_id: AtomicU64,
    /// `oldest_modification`: start LSN of the first change not yet written, 0 when clean.
    pub oldest: AtomicU64,
    /// The layout counter (see the module docs): raised at every exclusive latch but an
    /// in-place one ([`Ctl::lock_x_in_place`]).
    pub layout: AtomicU64,
    /// Pin count in the low 31 bits, [`FLUSHING`] in the top bit.
    pub pin: AtomicU32,
    /// The seqlock counter.
    pub version: AtomicU32,
    /// Time of the first access since the page was read (ms, [`crate::Clock`]); 0 = never.
    pub accessed: AtomicU32,
    /// The instance's freed (eviction) clock when the page was last made young; 0 = never.
    pub young: AtomicU32,
}

impl Ctl {
    /// The control block of frame `index` (its layout counter starts at `index << 40`).
    pub(crate) fn new(index: u32) -> Ctl {
        Ctl {
            latch: RawRwLock::INIT,
            page_id: AtomicU64::new(NO_PAGE),
            oldest: AtomicU64::new(0),
            layout: AtomicU64::new(u64::from(index) << 40),
            pin: AtomicU32::new(0),
            version: AtomicU32::new(0),
            accessed: AtomicU32::new(0),
            young: AtomicU32::new(0),
        }
    }

    /// The page held, if any.
    pub(crate) fn page(&self) -> Option<PageId> {
        match self.page_id.load(Ordering::Acquire) {
            NO_PAGE => None,
            v => Some(PageId::from_u64(v)),
        }
    }

    /// Pins the frame. `SeqCst`, because the page hash's lock-free lookup relies on
    /// evictors seeing the pin or the lookup seeing their version change ([`crate::hash`]).
    #[inline]
    pub(crate) fn pin(&self) {
        self.pin.fetch_add(1, Ordering::SeqCst);
    }

    /// Unpins the frame.
    #[inline]
    pub(crate) fn unpin(&self) {
        self.pin.fetch_sub(1, Ordering::AcqRel);
    }

    /// Pins (not counting the FLUSHING bit): what tests check is left after a workload.
    #[cfg(test)]
    pub(crate) fn pins(&self) -> u32 {
        self.pin.load(Ordering::Acquire) & !FLUSHING
    }

    #[inline]
    pub(crate) fn lock_s(&self) {
        self.latch.lock_shared();
    }

    #[inline]
    pub(crate) fn try_lock_s(&self) -> bool {
        self.latch.try_lock_shared()
    }

    /// Releases a shared latch. The caller must hold one (guards guarantee it).
    #[inline]
    pub(crate) fn unlock_s(&self) {
        // SAFETY: every caller acquired a shared latch with `lock_s`/`try_lock_s` on this
        // control block and releases it exactly once (guards release in `Drop`).
        unsafe { self.latch.unlock_shared() }
    }

    #[inline]
    pub(crate) fn lock_x(&self) {
        self.lock_x_in_place();
        self.moved();
    }

    #[inline]
    pub(crate) fn try_lock_x(&self) -> bool {
        let locked = self.try_lock_x_in_place();
        if locked {
            self.moved();
        }
        locked
    }

    /// An exclusive latch whose holder changes bytes only in place (see the module docs):
    /// the layout counter stays.
    #[inline]
    pub(crate) fn lock_x_in_place(&self) {
        self.latch.lock_exclusive();
        self.version.fetch_add(1, Ordering::AcqRel);
    }

    /// [`Ctl::lock_x_in_place`] if the latch is free.
    #[inline]
    pub(crate) fn try_lock_x_in_place(&self) -> bool {
        if self.latch.try_lock_exclusive() {
            self.version.fetch_add(1, Ordering::AcqRel);
            true
        } else {
            false
        }
    }

    /// The layout counter (see the module docs); read it under the frame's latch.
    #[inline]
    pub(crate) fn layout(&self) -> u64 {
        self.layout.load(Ordering::Relaxed)
    }

    /// Raises the layout counter; the exclusive latch is held, so no reader is looking.
    #[inline]
    fn moved(&self) {
        self.layout.fetch_add(1, Ordering::Relaxed);
    }

    /// Releases an exclusive latch, making the version even again (a new value).
    #[inline]
    pub(crate) fn unlock_x(&self) {
        self.version.fetch_add(1, Ordering::AcqRel);
        // SAFETY: every caller holds the exclusive latch (taken by `lock_x`/`try_lock_x`) and
        // releases it exactly once.
        unsafe { self.latch.unlock_exclusive() }
    }
}

/// A cache line's bytes (for [`Frames::prefetch`]).
pub(crate) const LINE: usize = 64;

/// Starts loading the cache line holding `p` into every cache level, without waiting for it:
/// for a caller that knows the addresses of several upcoming misses before it needs the
/// first, so that they overlap (the buffer pool's hinted fix, the adaptive hash index's
/// page builds). Any address is allowed, even a dangling one: a prefetch reads nothing the
/// program can see and never faults. Does nothing except on x86-64.
#[inline(always)]
pub fn prefetch_line<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: `_mm_prefetch` needs SSE, which every x86-64 processor has (it is in the
        // target's baseline), and a prefetch of any address, even an unmapped one, reads
        // nothing and cannot fault (Intel SDM, PREFETCHh). Tested by
        // `frames_are_page_aligned_and_independent` and the hinted reads' tests.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Asks the kernel to back the frames' map with transparent huge pages (2 MiB on x86-64)
/// where it offers them on request (`/sys/kernel/mm/transparent_hugepage/enabled` set to
/// `madvise`, the default of most distributions; with `always` they come anyway). A point
/// read of a large pool touches a few random pages: with 4 KiB pages each of them costs a
/// TLB miss and a page-table walk (the processor's TLB covers a few megabytes of them), with
/// 2 MiB pages a gigabyte pool needs 512 entries. InnoDB's `large_pages` does the same with
/// explicit huge pages. Only advice: where the kernel has no huge pages or refuses, the map
/// stays as it is, so the error is dropped on purpose.
fn advise_huge_pages(map: &MmapMut) {
    #[cfg(target_os = "linux")]
    let _ = map.advise(memmap2::Advice::HugePage);
    #[cfg(not(target_os = "linux"))]
    let _ = map;
}

/// All frames: one page-aligned anonymous memory map.
pub(crate) struct Frames {
    _map: MmapMut,
    base: NonNull<u8>,
    page: usize,
    count: usize,
}

// SAFETY: `Frames` owns its map; the raw base pointer only aliases that map, which lives as long
// as `Frames`. Access to each frame's bytes is synchronised by its control block's latch (the
// only way to get a slice is through a guard, or with the frame exclusively latched; latch-free
// readers use volatile loads through raw pointers and never form a slice: `crate::racy`).
unsafe impl Send for Frames {}
// SAFETY: see `Send`: shared access hands out no bytes without a latch.
unsafe impl Sync for Frames {}

impl Frames {
    pub(crate) fn new(count: usize, page: usize) -> Result<Frames, BufError> {
        let len = count.checked_mul(page).ok_or_else(|| BufError::Config {
            reason: "pool size overflows".into(),
        })?;
        let mut map = MmapMut::map_anon(len).map_err(|e| BufError::Config {
            reason: format!("cannot map {len} bytes for the buffer pool: {e}"),
        })?;
        let base = NonNull::new(map.as_mut_ptr()).ok_or_else(|| BufError::Config {
            reason: "anonymous map returned a null pointer".into(),
        })?;
        advise_huge_pages(&map);
        Ok(Frames {
            _map: map,
            base,
            page,
            count,
        })
    }

    /// Start of frame `f` (inside the map; never dereferenced here).
    #[inline]
    /// Bytes per frame.
    pub(crate) fn page_bytes(&self) -> usize {
        self.page
    }

    pub(crate) fn ptr(&self, f: u32) -> *mut u8 {
        debug_assert!((f as usize) < self.count);
        // SAFETY: `f < count` (frame indices come from the pool's own ranges), so the offset
        // stays within the mapping of `count * page` bytes.
        unsafe { self.base.as_ptr().add(f as usize * self.page) }
    }

    /// Asks the processor to start loading the cache lines of bytes `from..to` of frame `f`
    /// (clamped to the page), without waiting for them: a hint that reads nothing and cannot
    /// fault. Out-of-range frames are ignored. A no-op except on x86-64.
    #[inline]
    pub(crate) fn prefetch(&self, f: u32, from: usize, to: usize) {
        if f as usize >= self.count {
            return;
        }
        let base = self.ptr(f);
        let mut at = from & !(LINE - 1);
        while at < to.min(self.page) {
            prefetch_line(base.wrapping_add(at));
            at += LINE;
        }
    }

    /// The bytes of frame `f`.
    ///
    /// # Safety
    /// The caller holds a latch on frame `f` (shared for reading only) for as long as the
    /// slice lives, and does not create a mutable slice unless the latch is exclusive.
    #[inline]
    pub(crate) unsafe fn slice(&self, f: u32) -> &[u8] {
        // SAFETY: the pointer is valid for `page` bytes (see `ptr`); the caller's latch excludes
        // writers for the slice's lifetime.
        unsafe { std::slice::from_raw_parts(self.ptr(f), self.page) }
    }

    /// The bytes of frame `f`, mutable.
    ///
    /// # Safety
    /// The caller holds the exclusive latch on frame `f` for as long as the slice lives and
    /// creates no other slice of the frame meanwhile.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn slice_mut(&self, f: u32) -> &mut [u8] {
        // SAFETY: valid for `page` bytes; the exclusive latch makes this the only access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr(f), self.page) }
    }

    /// Copies `out.len()` bytes at `offset` of frame `f` with volatile reads, without a
    /// latch: the bytes may be torn by a concurrent writer, which the caller detects with the
    /// version counter. Returns false if the range is outside the page.
    pub(crate) fn copy_racy(&self, f: u32, offset: usize, out: &mut [u8]) -> bool {
        let Some(end) = offset.checked_add(out.len()) else {
            return false;
        };
        if end > self.page {
            return false;
        }
        let src = self.ptr(f);
        for (i, b) in out.iter_mut().enumerate() {
            // SAFETY: `offset + i < page`, inside the frame. A volatile read of a `u8` cannot
            // observe a torn value; a concurrent write may make the *copy* inconsistent, which
            // the seqlock validation rejects (the documented seqlock pattern).
            *b = unsafe { std::ptr::read_volatile(src.add(offset + i)) };
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where the kernel hands out transparent huge pages on request (`madvise` mode), the
    /// frames' map asked for them: the kernel reports the map eligible (`THPeligible: 1` in
    /// `/proc/self/smaps`), which a map without the advice is not in that mode. Whether
    /// huge pages are really there depends on free memory, so that is not asserted.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_frames_ask_for_huge_pages() {
        let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .unwrap_or_default();
        if !mode.contains("[madvise]") {
            return;
        }
        let frames = Frames::new(1024, 16 << 10).unwrap();
        let base = frames.ptr(0) as usize;
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut inside = false;
        let mut eligible = None;
        for line in smaps.lines() {
            let range = line
                .split_whitespace()
                .next()
                .and_then(|r| r.split_once('-'));
            if let Some((lo, hi)) = range
                && let (Ok(lo), Ok(hi)) =
                    (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
            {
                inside = lo <= base && base < hi;
            } else if inside && let Some(v) = line.strip_prefix("THPeligible:") {
                eligible = Some(v.trim().to_string());
            }
        }
        assert_eq!(eligible.as_deref(), Some("1"), "mode {mode}");
    }

    #[test]
    fn frames_are_page_aligned_and_independent() {
        let frames = Frames::new(4, 4096).unwrap();
        assert_eq!(frames.ptr(0) as usize % 4096, 0);
        // SAFETY: no other thread touches these frames; one mutable slice at a time.
        unsafe {
            frames.slice_mut(1).fill(7);
            assert!(frames.slice(0).iter().all(|&b| b == 0));
            assert!(frames.slice(1).iter().all(|&b| b == 7));
        }
        // Prefetches change nothing, in range or not.
        frames.prefetch(1, 0, 8192);
        frames.prefetch(4, 0, 64);
        frames.prefetch(u32::MAX, 4000, 100);
        prefetch_line(std::ptr::null::<u8>());
        // SAFETY: as above.
        unsafe { assert!(frames.slice(1).iter().all(|&b| b == 7)) };
        let mut out = [0u8; 3];
        assert!(frames.copy_racy(1, 4093, &mut out));
        assert_eq!(out, [7, 7, 7]);
        assert!(!frames.copy_racy(1, 4094, &mut out));
    }

    #[test]
    fn latch_bumps_version_and_excludes() {
        let c = Ctl::new(0);
        c.lock_s();
        assert!(!c.try_lock_x());
        assert!(c.try_lock_s());
        c.unlock_s();
        c.unlock_s();
        let v0 = c.version.load(Ordering::Acquire);
        c.lock_x();
        assert_eq!(c.version.load(Ordering::Acquire) % 2, 1);
        assert!(!c.try_lock_s());
        c.unlock_x();
        assert_eq!(c.version.load(Ordering::Acquire), v0 + 2);
        c.pin();
        c.pin.fetch_or(FLUSHING, Ordering::AcqRel);
        assert_eq!(c.pins(), 1);
        assert_eq!(std::mem::size_of::<Ctl>(), 48);
    }

    #[test]
    fn only_an_exclusive_latch_that_is_not_in_place_moves_the_layout() {
        let c = Ctl::new(3);
        let l0 = c.layout.load(Ordering::Relaxed);
        assert_eq!(l0, 3 << 40, "each frame starts in its own range");
        c.lock_s();
        c.unlock_s();
        c.lock_x_in_place();
        c.unlock_x();
        assert!(c.try_lock_x_in_place());
        c.unlock_x();
        assert_eq!(
            c.layout.load(Ordering::Relaxed),
            l0,
            "in place: records stay"
        );
        c.lock_x();
        c.unlock_x();
        assert_eq!(c.layout.load(Ordering::Relaxed), l0 + 1);
        assert!(c.try_lock_x());
        c.unlock_x();
        assert_eq!(c.layout.load(Ordering::Relaxed), l0 + 2);
        // A failed try changes nothing.
        c.lock_s();
        assert!(!c.try_lock_x());
        c.unlock_s();
        assert_eq!(c.layout.load(Ordering::Relaxed), l0 + 2);
    }
}
