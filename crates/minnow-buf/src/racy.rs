//! Reading a page in place without latching it: the seqlock reader that optimistic descents
//! are built on.
//!
//! ## Why not just take the shared latch
//!
//! A shared latch is a reader count in the frame's control block: taking it and letting it
//! go are two atomic writes, and so is the pin beside it. Every point read walks through the
//! root and the pages just below it, so every reader writes the *same few cache lines*: on
//! two cores each such line moves back and forth between them, for pages nobody changes.
//! Optimistic lock coupling (Leis et al., "The ART of practical synchronization", 2016;
//! LeanStore's optimistic latches) reads those pages without writing anything.
//!
//! ## The protocol
//!
//! Each control block carries a version counter that is odd while the frame is exclusively
//! latched and bumped at every exclusive acquire and release (the `frame` module). Every
//! change of a frame's bytes, and every change of *which page* a frame holds (eviction, a
//! read into a reused frame, a discard), happens under that exclusive latch. So:
//!
//! ```text
//!  f = page hash walk (no pin)       a candidate frame, maybe already stale
//!  v = version(f)                    odd: a writer is in, give up
//!  page_id(f) == wanted ?            no: give up
//!  read the bytes in place           any value, even torn: used only to compute a result
//!  version(f) == v ?                 no: the result is thrown away, try again
//! ```
//!
//! "The same even version before and after" means no exclusive latch was taken in between:
//! the frame held the wanted page the whole time and its bytes did not change, so the result
//! is what a reader under a shared latch would have computed. A reader chains such reads
//! level by level and re-validates the parent after it has read the child's version (see
//! `minnow_btree`'s `tree::olc` module).
//!
//! ## Why no pin
//!
//! A pin keeps a frame from being reused; here the version does that job after the fact. The
//! frame memory itself never goes away while the pool lives (one anonymous map, unmapped when
//! the pool drops, and a [`RacyPage`] borrows the pool), so reading a frame that was evicted
//! meanwhile reads *some* bytes of the map, which the version check then rejects.
//!
//! ## Reading bytes a writer may be writing
//!
//! In Rust's memory model a `&[u8]` promises that nothing writes those bytes while it lives,
//! so a [`RacyPage`] never creates one: it keeps a raw pointer and reads one byte at a time
//! with [`std::ptr::read_volatile`], the documented seqlock reader's way (as
//! [`crate::OptimisticRead`]'s copy). A volatile byte read cannot be torn and is never
//! invented, merged or repeated by the compiler; a concurrent write can only make the value
//! *stale or inconsistent with its neighbours*, which is exactly what the version check
//! catches. Every read is bounds-checked against the page (an offset outside it answers
//! `None`), so a torn offset can never reach outside the frame, and callers bound every loop
//! by sizes clamped to the page: garbage costs a failed validation, never a panic or a hang.

use std::cmp::Ordering;
use std::marker::PhantomData;
use std::sync::atomic::{Ordering as Mem, fence};

use minnow_page::PageId;

use crate::BufferPool;

/// The bytes of one page, read in place with volatile loads and no latch: values may be torn
/// by a concurrent writer until the caller's version check says otherwise (see the module
/// docs). Every accessor is bounds-checked and answers `None` outside the page.
#[derive(Clone, Copy)]
pub struct RacyPage<'a> {
    base: *const u8,
    len: usize,
    _bytes: PhantomData<&'a [u8]>,
}

impl<'a> From<&'a [u8]> for RacyPage<'a> {
    /// A racy view of bytes nobody writes (tests of code that reads racy pages).
    fn from(bytes: &'a [u8]) -> RacyPage<'a> {
        RacyPage {
            base: bytes.as_ptr(),
            len: bytes.len(),
            _bytes: PhantomData,
        }
    }
}

impl std::fmt::Debug for RacyPage<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RacyPage").field("len", &self.len).finish()
    }
}

impl RacyPage<'_> {
    /// The page's size in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a page of no bytes.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Byte `at`, `None` outside the page.
    #[inline]
    pub fn u8(&self, at: usize) -> Option<u8> {
        if at >= self.len {
            return None;
        }
        // SAFETY: `at < len`, and `base..base + len` is memory that stays mapped for `'a`
        // (a frame of the pool's map, or a borrowed slice). A volatile `u8` load is never
        // torn; a writer racing it makes the value stale, which the caller's seqlock
        // validation rejects before the value is used (see the module docs). No reference to
        // the bytes is created.
        Some(unsafe { std::ptr::read_volatile(self.base.add(at)) })
    }

    /// The big-endian `u16` at `at`.
    #[inline]
    pub fn u16(&self, at: usize) -> Option<u16> {
        Some(u16::from_be_bytes([
            self.u8(at)?,
            self.u8(at.checked_add(1)?)?,
        ]))
    }

    /// The big-endian `u32` at `at`.
    #[inline]
    pub fn u32(&self, at: usize) -> Option<u32> {
        Some((u32::from(self.u16(at)?) << 16) | u32::from(self.u16(at.checked_add(2)?)?))
    }

    /// The big-endian `u64` at `at`.
    #[inline]
    pub fn u64(&self, at: usize) -> Option<u64> {
        Some((u64::from(self.u32(at)?) << 32) | u64::from(self.u32(at.checked_add(4)?)?))
    }

    /// `key` compared with the page's `key.len()` bytes at `at` (the order of `key` relative
    /// to them), stopping at the first byte that differs; `None` if they do not fit the page.
    #[inline]
    pub fn compare(&self, at: usize, key: &[u8]) -> Option<Ordering> {
        let end = at.checked_add(key.len())?;
        if end > self.len {
            return None;
        }
        for (i, k) in key.iter().enumerate() {
            match k.cmp(&self.u8(at + i)?) {
                Ordering::Equal => {}
                other => return Some(other),
            }
        }
        Some(Ordering::Equal)
    }
}

/// What an optimistic read saw: the frame, the page and the version, for re-validating later
/// ([`BufferPool::unchanged`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    frame: u32,
    key: u64,
    version: u32,
}

impl Seen {
    /// The frame that held the page.
    pub fn frame(&self) -> u32 {
        self.frame
    }
}

impl BufferPool {
    /// Runs `f` over page `id` in place, without pin or latch (see the module docs), if the
    /// page is cached and not exclusively latched right now. Returns `f`'s answer and what
    /// was seen only if no writer touched the page while `f` ran: anything else (not cached,
    /// being written, written meanwhile, evicted meanwhile, `f` answered `None`) is `None`,
    /// and the caller retries or takes a latch. Writes no shared memory.
    ///
    /// `f` may see torn values: it must stay in bounds (a [`RacyPage`] enforces that), keep
    /// its loops bounded by the page's size, and not act on what it read before this returns.
    #[inline]
    pub fn read_optimistic<R>(
        &self,
        id: PageId,
        f: impl FnOnce(RacyPage<'_>) -> Option<R>,
    ) -> Option<(R, Seen)> {
        let s = &*self.shared;
        let key = id.to_u64();
        let frame = s.find_unpinned(id)?;
        let c = s.ctl(frame);
        let version = c.version.load(Mem::Acquire);
        if version % 2 == 1 || c.page_id.load(Mem::Acquire) != key {
            return None;
        }
        let page = RacyPage {
            base: s.frames.ptr(frame),
            len: s.frames.page_bytes(),
            _bytes: PhantomData,
        };
        let r = f(page)?;
        let seen = Seen {
            frame,
            key,
            version,
        };
        self.unchanged(&seen).then_some((r, seen))
    }

    /// True if the page of `seen` is still in its frame and no exclusive latch was taken on
    /// it since it was seen: what was read then is still what the page says now.
    #[inline]
    pub fn unchanged(&self, seen: &Seen) -> bool {
        // Orders the caller's reads of the page before the version load (the seqlock
        // reader's closing fence).
        fence(Mem::Acquire);
        let Some(c) = self.shared.ctl.get(seen.frame as usize) else {
            return false;
        };
        c.version.load(Mem::Relaxed) == seen.version && c.page_id.load(Mem::Relaxed) == seen.key
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn racy_page_reads_are_bounded() {
        let bytes = [1u8, 2, 3, 4, 5, 6, 7, 8, 9];
        let p = RacyPage::from(&bytes[..]);
        assert_eq!(p.len(), 9);
        assert!(!p.is_empty());
        assert_eq!(p.u8(8), Some(9));
        assert_eq!(p.u8(9), None);
        assert_eq!(p.u16(7), Some(0x0809));
        assert_eq!(p.u16(8), None);
        assert_eq!(p.u32(0), Some(0x0102_0304));
        assert_eq!(p.u64(1), Some(0x0203_0405_0607_0809));
        assert_eq!(p.u64(2), None);
        assert_eq!(p.u16(usize::MAX), None);
        assert_eq!(p.compare(2, &[3, 4]), Some(Ordering::Equal));
        assert_eq!(p.compare(2, &[3, 5]), Some(Ordering::Greater));
        assert_eq!(p.compare(2, &[2, 9]), Some(Ordering::Less));
        assert_eq!(p.compare(8, &[9, 9]), None);
        assert_eq!(p.compare(usize::MAX, &[1]), None);
        assert_eq!(format!("{p:?}"), "RacyPage { len: 9 }");
    }
}
