//! One rollback segment in memory: its header page, its undo stream's tail, its slots and
//! history list, behind its own mutex.
//!
//! Every rollback segment is a complete undo store of its own: a header page (layout in
//! [`super::page`]), one undo stream of pages chained FIRST to LAST, the slots of the
//! transactions writing into it and the history list of its committed update logs. Two
//! transactions of different segments never take the same segment mutex or X-latch the same
//! page to begin a log, append a record or commit. What they still share: the id counter's
//! short mutex (an id at the first write, a commit number at commit; its mark on the TRX_SYS
//! page is written once every 256 numbers), and allocating or freeing an undo page, in the
//! undo segment's space management (its INODE entry and the space header), as every B-tree
//! page allocation does.
//!
//! Within one segment, the transactions that write into it interleave on its stream, as
//! minnow's single stream did before rollback segments: a log header, then its records, each
//! chained backwards from the header's `last`, with other transactions' entries in between.
//! The mutex serialises the segment's appends and header-page writes, and a commit takes its
//! commit number while holding it, so each segment's history list is in commit-number order.

use std::sync::atomic::{AtomicU64, Ordering};

use minnow_btree::space::{self, FsegHeader};
use minnow_buf::{Mtr, PageHandle};
use minnow_page::{PageId, PageType, fil};
use parking_lot::Mutex;

use super::page::{RsegPage, rseg};
use crate::error::{MvccError, Result};
use crate::undo::record::{LOG_HEADER_LEN, UndoAddr};
use crate::undo::{UNDO_DATA, UNDO_FREE, UNDO_NEXT, data_end, held_fields, init_undo_page};

/// Where appended bytes may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
    /// In one page (a log header): a new page if they do not fit.
    Whole,
    /// The start of a record: at least its first 8 bytes in the current page.
    Start,
    /// Right after the previous bytes (the next piece of a long record).
    Continue,
}

/// A segment's header fields as they are now (a copy is changed inside an mtr and installed
/// with [`Rseg::publish`] once the mtr has committed).
#[derive(Debug, Clone)]
pub(super) struct Tail {
    pub(super) first_page: u32,
    pub(super) head: u16,
    pub(super) n_pages: u64,
    pub(super) last_page: u32,
    pub(super) free_slots: Vec<u16>,
    pub(super) hist_first: Option<UndoAddr>,
    pub(super) hist_last: Option<UndoAddr>,
    pub(super) hist_len: u64,
}

impl Tail {
    /// The tail a decoded header page describes.
    pub(super) fn from_page(r: &RsegPage) -> Tail {
        Tail {
            first_page: r.first_page,
            head: r.head,
            n_pages: u64::from(r.n_pages),
            last_page: r.last_page,
            free_slots: r.free_slots(),
            hist_first: r.hist_first,
            hist_last: r.hist_last,
            hist_len: r.hist_len,
        }
    }

    /// A copy for a change that leaves the free slots alone (an undo record appended to the
    /// stream): the slot list stays behind, so the copy allocates nothing. Install it with
    /// [`Rseg::publish_stream`].
    pub(super) fn stream_copy(&self) -> Tail {
        Tail {
            free_slots: Vec::new(),
            ..*self
        }
    }
}

/// A rollback segment.
#[derive(Debug)]
pub(super) struct Rseg {
    /// Its index in the TRX_SYS directory.
    pub(super) id: u8,
    /// Its header page.
    pub(super) page: PageId,
    /// The undo segment its pages are allocated in.
    pub(super) seg: FsegHeader,
    /// Its slot count.
    pub(super) n_slots: u16,
    /// The header fields, and the lock on everything the segment writes.
    pub(super) tail: Mutex<Tail>,
    /// Mirrors of the history length and stream pages, for status without the lock.
    history_len: AtomicU64,
    undo_pages: AtomicU64,
}

impl Rseg {
    /// The segment `id` whose header page is `page`, with header fields `tail`.
    pub(super) fn new(id: u8, page: PageId, seg: FsegHeader, n_slots: u16, tail: Tail) -> Rseg {
        Rseg {
            id,
            page,
            seg,
            n_slots,
            history_len: AtomicU64::new(tail.hist_len),
            undo_pages: AtomicU64::new(tail.n_pages),
            tail: Mutex::new(tail),
        }
    }

    /// Allocates and formats the header page and first undo page of segment `id` inside
    /// `mtr` (at database creation); returns the segment.
    pub(super) fn create(mtr: &mut Mtr<'_>, seg: FsegHeader, id: u8) -> Result<Rseg> {
        let h = space::allocate_in(mtr, seg, None)?;
        let u = space::allocate_in(mtr, seg, None)?;
        let page = mtr.page_id(h).unwrap_or(PageId::new(seg.space, 0));
        let first = mtr.page_id(u).map_or(0, |id| id.page_no);
        let n_slots = super::page::slots_per_page(mtr.page(h).len());
        mtr.write(h, fil::PAGE_TYPE, &PageType::Sys.to_u16().to_be_bytes())?;
        mtr.write(h, rseg::ID, &u16::from(id).to_be_bytes())?;
        mtr.write(h, rseg::FIRST, &first.to_be_bytes())?;
        mtr.write(h, rseg::LAST, &first.to_be_bytes())?;
        mtr.write(h, rseg::HEAD, &(UNDO_DATA as u16).to_be_bytes())?;
        mtr.write(h, rseg::PAGES, &1u32.to_be_bytes())?;
        mtr.write(h, rseg::N_SLOTS, &n_slots.to_be_bytes())?;
        init_undo_page(mtr, u)?;
        let tail = Tail {
            first_page: first,
            head: UNDO_DATA as u16,
            n_pages: 1,
            last_page: first,
            free_slots: (0..n_slots).rev().collect(),
            hist_first: None,
            hist_last: None,
            hist_len: 0,
        };
        Ok(Rseg::new(id, page, seg, n_slots, tail))
    }

    /// The tablespace.
    pub(super) fn space(&self) -> u32 {
        self.page.space
    }

    /// The offset of slot `slot` in the header page.
    pub(super) fn slot_at(slot: u16) -> usize {
        rseg::SLOTS + 6 * usize::from(slot)
    }

    /// History length and stream pages now, from the mirrors (no lock).
    pub(super) fn counters(&self) -> (u64, u64) {
        (
            self.history_len.load(Ordering::Relaxed),
            self.undo_pages.load(Ordering::Relaxed),
        )
    }

    /// [`Rseg::publish`] of a [`Tail::stream_copy`]: the free slots stay those of `tail`.
    pub(super) fn publish_stream(&self, tail: &mut Tail, mut t: Tail) {
        t.free_slots = std::mem::take(&mut tail.free_slots);
        self.publish(tail, t);
    }

    /// Installs `t` as the tail and mirrors its counters for status.
    pub(super) fn publish(&self, tail: &mut Tail, t: Tail) {
        self.history_len.store(t.hist_len, Ordering::Relaxed);
        self.undo_pages.store(t.n_pages, Ordering::Relaxed);
        *tail = t;
    }

    /// Appends `data` to the segment's undo stream inside `mtr` and returns where it starts.
    /// With [`Place::Whole`] the bytes never straddle pages (log headers); with
    /// [`Place::Continue`] they follow the previous bytes directly (the next piece of a long
    /// record).
    pub(super) fn append_bytes(
        &self,
        mtr: &mut Mtr<'_>,
        tail: &mut Tail,
        data: &[u8],
        place: Place,
    ) -> Result<UndoAddr> {
        let space = self.space();
        let mut h = mtr.get_write(PageId::new(space, tail.last_page))?;
        let (_, mut free) = held_fields(mtr, h, PageId::new(space, tail.last_page))?;
        let end = data_end(mtr.page(h).len());
        let first = match place {
            Place::Whole => data.len(),
            Place::Start => data.len().min(8),
            Place::Continue => 1,
        };
        if end - free < first {
            h = self.next_page(mtr, tail, h)?;
            free = UNDO_DATA;
        }
        let start = UndoAddr {
            page: tail.last_page,
            offset: free as u16,
        };
        let mut rest = data;
        loop {
            let n = rest.len().min(end - free);
            let (now, later) = rest.split_at(n);
            mtr.write(h, free, now)?;
            free += n;
            mtr.write(h, UNDO_FREE, &(free as u16).to_be_bytes())?;
            rest = later;
            if rest.is_empty() {
                return Ok(start);
            }
            h = self.next_page(mtr, tail, h)?;
            free = UNDO_DATA;
        }
    }

    /// Allocates a new undo page, links it after `h` and makes it the stream's last page.
    fn next_page(&self, mtr: &mut Mtr<'_>, tail: &mut Tail, h: PageHandle) -> Result<PageHandle> {
        let s = mtr.get_write(self.page)?;
        let n = space::allocate_in(mtr, self.seg, None)?;
        init_undo_page(mtr, n)?;
        let no = mtr.page_id(n).map_or(0, |id| id.page_no);
        mtr.write(h, UNDO_NEXT, &no.to_be_bytes())?;
        mtr.write(s, rseg::LAST, &no.to_be_bytes())?;
        tail.n_pages += 1;
        mtr.write(s, rseg::PAGES, &(tail.n_pages as u32).to_be_bytes())?;
        tail.last_page = no;
        Ok(n)
    }

    /// X-latches the page of the log header at `at` in `mtr`: the handle and the header's
    /// offset, checked to lie inside the page.
    pub(super) fn header_handle(
        &self,
        mtr: &mut Mtr<'_>,
        at: UndoAddr,
    ) -> Result<(PageHandle, usize)> {
        let id = PageId::new(self.space(), at.page);
        let h = mtr.get_write(id)?;
        held_fields(mtr, h, id)?;
        let off = usize::from(at.offset);
        if off + LOG_HEADER_LEN > data_end(mtr.page(h).len()) {
            return Err(MvccError::CorruptUndo {
                page: id,
                offset: off,
                expected: "a log header inside the page".into(),
                found: "one past its end".into(),
            });
        }
        Ok((h, off))
    }
}
