//! Page guards: the only way to page bytes.
//!
//! A guard is a pin plus a latch, both released when the guard is dropped (RAII, as BusTub's
//! page guards). [`PageReadGuard`] holds the latch shared: many readers at once, no writer.
//! [`PageWriteGuard`] holds it exclusively: it also derefs to `[u8]` for reading, but the
//! bytes can only be *changed* through a mini-transaction ([`crate::Mtr`]), which logs every
//! change — a write that bypassed the redo log would be lost (or worse, half-present) after
//! a crash.
//!
//! [`OptimisticRead`] holds only a pin and a version number: it copies bytes without any
//! latch and then asks whether a writer intervened (the seqlock in the private `frame` module).
//! It pins, which writes the frame's control block: the B-tree's optimistic descents use
//! [`crate::BufferPool::read_optimistic`] instead, which reads in place and writes nothing
//! ([`crate::racy`]); tests use this one to see whether a page is latched.

use std::ops::Deref;
use std::sync::atomic::{Ordering, fence};

use minnow_page::PageId;
use minnow_redo::Lsn;

use crate::pool::Shared;

/// A pinned, shared-latched page. Derefs to the page's bytes.
pub struct PageReadGuard<'a> {
    pub(crate) shared: &'a Shared,
    pub(crate) frame: u32,
    pub(crate) id: PageId,
}

/// A pinned, exclusively latched page. Derefs to the page's bytes; changes go through an
/// [`crate::Mtr`].
pub struct PageWriteGuard<'a> {
    pub(crate) shared: &'a Shared,
    pub(crate) frame: u32,
    pub(crate) id: PageId,
}

fn page_lsn(bytes: &[u8]) -> Lsn {
    Lsn(minnow_page::fil::page_lsn(bytes).unwrap_or(0))
}

impl PageReadGuard<'_> {
    /// The page's id.
    pub fn page_id(&self) -> PageId {
        self.id
    }

    /// The page's LSN (FIL header bytes 16..24): the end LSN of its last change.
    pub fn lsn(&self) -> Lsn {
        page_lsn(self)
    }

    /// The frame holding the page: a hint for [`crate::BufferPool::get_read_hinted`], good
    /// until the page is evicted (and harmless after).
    pub fn frame(&self) -> u32 {
        self.frame
    }

    /// The frame's layout counter: while the same frame holds the page with the same value,
    /// every record on it lies where it lay (writers since changed bytes only in place; see
    /// [`crate::Mtr::get_write_in_place`]). What the adaptive hash index checks a guess by.
    pub fn layout(&self) -> u64 {
        self.shared.ctl(self.frame).layout()
    }
}

impl Deref for PageReadGuard<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the guard holds a shared latch on the frame for its whole life, so no
        // writer changes the bytes while this borrow (tied to the guard) exists.
        unsafe { self.shared.frames.slice(self.frame) }
    }
}

impl Drop for PageReadGuard<'_> {
    fn drop(&mut self) {
        let c = self.shared.ctl(self.frame);
        c.unlock_s();
        c.unpin();
    }
}

impl PageWriteGuard<'_> {
    /// The page's id.
    pub fn page_id(&self) -> PageId {
        self.id
    }

    /// The page's LSN (FIL header bytes 16..24).
    pub fn lsn(&self) -> Lsn {
        page_lsn(self)
    }

    /// The bytes, mutable: for the mtr only.
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: the guard holds the exclusive latch for its whole life and `&mut self`
        // makes this the only borrow of the bytes.
        unsafe { self.shared.frames.slice_mut(self.frame) }
    }

    /// Frees the frame instead of keeping the page (an mtr that created the page rolled
    /// back).
    pub(crate) fn discard(self) {
        let (shared, frame) = (self.shared, self.frame);
        std::mem::forget(self);
        shared.discard(frame);
    }
}

impl Deref for PageWriteGuard<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the guard holds the exclusive latch; shared borrows of it only read.
        unsafe { self.shared.frames.slice(self.frame) }
    }
}

impl Drop for PageWriteGuard<'_> {
    fn drop(&mut self) {
        let c = self.shared.ctl(self.frame);
        c.unlock_x();
        c.unpin();
    }
}

/// A latch-free view of a cached page: a pin and the version seen when it was taken.
pub struct OptimisticRead<'a> {
    pub(crate) shared: &'a Shared,
    pub(crate) frame: u32,
    pub(crate) id: PageId,
    pub(crate) version: u32,
}

impl OptimisticRead<'_> {
    /// The page's id.
    pub fn page_id(&self) -> PageId {
        self.id
    }

    /// Copies `out.len()` bytes from `offset` and returns true only if no writer held or took
    /// the page's exclusive latch since this view was taken (so the copy is consistent).
    /// False means: retry, or take a real latch.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> bool {
        if !self.shared.frames.copy_racy(self.frame, offset, out) {
            return false;
        }
        self.validate()
    }

    /// True while no exclusive latch was taken on the page since the view was taken.
    pub fn validate(&self) -> bool {
        fence(Ordering::Acquire);
        let c = self.shared.ctl(self.frame);
        c.version.load(Ordering::Acquire) == self.version
            && c.page_id.load(Ordering::Acquire) == self.id.to_u64()
    }
}

impl Drop for OptimisticRead<'_> {
    fn drop(&mut self) {
        self.shared.ctl(self.frame).unpin();
    }
}
