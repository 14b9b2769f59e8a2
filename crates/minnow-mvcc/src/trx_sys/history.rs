//! The history lists and giving undo space back: [`TrxSys::history_head`] and
//! [`TrxSys::finish_purge`] for purge, [`TrxSys::trim`] freeing the dead heads of the undo
//! streams, [`TrxSys::history`] for tools, and [`TrxSys::check`], which verifies every
//! rollback segment's stream and list.
//!
//! Each rollback segment keeps its own history list, in commit-number (`trx_no`) order
//! because a commit takes its number under the segment's mutex. Purge must still see the
//! committed logs in one global `trx_no` order, as InnoDB's purge does by keeping the
//! segments in a min-heap keyed by the `trx_no` of their oldest log: here
//! [`TrxSys::history_head`] reads the oldest log of every segment's list and returns the
//! one with the smallest `trx_no`. The segments are few (at most 128) and their first
//! logs' pages are hot in the buffer pool, so a scan is as good as a heap and keeps no
//! second copy of the lists' heads to keep in step.
//! Every walk along on-disk links here is bounded (a length from the page, a
//! [`CycleGuard`]), so a corrupt file is an error, never a loop.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;

use minnow_btree::space;
use minnow_buf::BufferPool;
use minnow_page::PageId;
use minnow_page::walk::CycleGuard;
use minnow_redo::Lsn;
use parking_lot::MutexGuard;

use super::page::{addr_bytes, rseg};
use super::rseg::{Rseg, Tail};
use super::{TrxSys, UndoLog};
use crate::error::{MvccError, Result};
use crate::undo::record::{FILLER, HEADER_KIND, LogHeader, LogState, UndoAddr, hdr};
use crate::undo::{self, StreamPos, UNDO_DATA, UNDO_NEXT};

/// What [`TrxSys::check`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UndoCheck {
    /// The undo pages of every rollback segment's stream, FIRST to LAST, rseg 0 first.
    pub pages: Vec<u32>,
    /// The rollback segments' header pages, rseg 0 first.
    pub rseg_pages: Vec<u32>,
    /// Logs in the history lists, all segments.
    pub history_len: u64,
}

impl TrxSys {
    /// Verifies the undo store, segment by segment: reads every undo page of each stream from
    /// FIRST (so a damaged page is a checksum error naming it) and checks its header, that
    /// the chain ends at LAST after PAGES pages, and walks the history list: as long as its
    /// length, every log in it committed with update records and on the segment's stream.
    /// No page may be on two segments' streams. Returns the pages and the history length.
    pub fn check(&self, pool: &BufferPool) -> Result<UndoCheck> {
        let mut out = UndoCheck::default();
        let mut seen = BTreeSet::new();
        for r in &self.rsegs {
            let (pages, hist_len) = r.check(pool)?;
            if let Some(p) = pages.iter().find(|p| !seen.insert(**p)) {
                return Err(MvccError::CorruptTrxSys {
                    page: r.page,
                    what: format!(
                        "undo page {p} of rollback segment {} is on another segment's stream too",
                        r.id
                    ),
                });
            }
            out.pages.extend(pages);
            out.rseg_pages.push(r.page.page_no);
            out.history_len += hist_len;
        }
        Ok(out)
    }

    /// The oldest committed log purge has not taken yet: of the first logs of every rollback
    /// segment's history list, the one with the smallest commit number. Its header's address
    /// and the header, which must be a committed log with update records. A purged log there
    /// means a list came back to a log purge already took off it (a cycle in a corrupt file):
    /// an error, so that purge does not go round forever.
    pub fn history_head(&self, pool: &BufferPool) -> Result<Option<(UndoAddr, LogHeader)>> {
        let mut best: Option<(UndoAddr, LogHeader)> = None;
        for r in &self.rsegs {
            let first = r.tail.lock().hist_first;
            let Some(a) = first else {
                continue;
            };
            let h = undo::read_header(pool, r.space(), a)?;
            check_in_history(r.page, a, &h)?;
            if best.as_ref().is_none_or(|(_, b)| h.trx_no < b.trx_no) {
                best = Some((a, h));
            }
        }
        Ok(best)
    }

    /// Takes the log whose header is at `at`, the first of its rollback segment's history
    /// list, off the list once purge has removed what its records describe: one mtr marks its
    /// header purged and moves the list's first and length in the segment's header page, so
    /// the history list length falls. Does nothing if `at` is no segment's first log any
    /// more.
    pub fn finish_purge(&self, pool: &BufferPool, at: UndoAddr) -> Result<Option<Lsn>> {
        for r in &self.rsegs {
            let tail = r.tail.lock();
            if tail.hist_first == Some(at) {
                return r.finish_purge(pool, tail, at);
            }
        }
        Ok(None)
    }

    /// Gives the dead heads of the undo streams back to the undo segment, every rollback
    /// segment in turn: walks a stream's entries from HEAD; while every entry starting in its
    /// first page is dead (a filler, a record, the header of a log that is committed without
    /// update records, rolled back or purged), the pages up to where the next entry starts
    /// are freed and FIRST and HEAD move there, one mtr per step. The header of an active log
    /// or of a log still in the history stops it, and so does the last page (where appends
    /// go). Returns the pages freed.
    pub fn trim(&self, pool: &BufferPool) -> Result<u64> {
        let mut freed = 0;
        for r in &self.rsegs {
            freed += r.trim(pool)?;
        }
        self.mirror.pages_freed.fetch_add(freed, Ordering::Relaxed);
        Ok(freed)
    }

    /// At a slow shutdown, after a full purge and [`TrxSys::trim`]: moves each idle
    /// stream (a single page, no active transaction in its segment, an empty history list,
    /// so every entry on the page is dead) to the lowest free page of the undo segment's
    /// extents, when that page is lower than the stream's. The streams' last pages are the
    /// only undo pages trimming keeps, and the last large transaction left them at the end
    /// of the file; moved down, they no longer pin the extents there, which go back to the
    /// space once empty (and `minnow_btree::space::shrink_tail` can take them off the file).
    /// Each move is one mtr: the new page formatted empty, FIRST and LAST at it, HEAD at its
    /// data start, PAGES 1, the old page freed. Returns how many streams moved.
    pub fn rehome(&self, pool: &BufferPool) -> Result<u64> {
        let mut moved = 0;
        for r in &self.rsegs {
            moved += u64::from(r.rehome(pool)?);
        }
        Ok(moved)
    }

    /// Reads the header of `log` from its page, as it is there: while the log is active, its
    /// LAST and N_RECS may be those of an older record ([`crate::undo::chain`]; `log` itself
    /// has the newest).
    pub fn header(&self, pool: &BufferPool, log: &UndoLog) -> Result<LogHeader> {
        undo::read_header(pool, self.page.space, log.header)
    }

    /// The history lists, merged oldest first (by commit number): (header address, header) of
    /// every committed log with update records.
    pub fn history(&self, pool: &BufferPool) -> Result<Vec<(UndoAddr, LogHeader)>> {
        let mut out = Vec::new();
        for r in &self.rsegs {
            out.extend(r.history(pool)?);
        }
        out.sort_by_key(|(_, h)| h.trx_no);
        Ok(out)
    }
}

/// Checks that the log at `a` may be on the history list of the segment whose header page is
/// `page`: committed, with update records.
fn check_in_history(page: PageId, a: UndoAddr, h: &LogHeader) -> Result<()> {
    if h.state == LogState::Committed && h.update {
        return Ok(());
    }
    Err(MvccError::CorruptTrxSys {
        page,
        what: format!(
            "the history list reaches the log of transaction {} at {}:{}, which is {:?} \
             (update {}): not a log purge may still need (a cycle back to a purged log?)",
            h.trx_id, a.page, a.offset, h.state, h.update
        ),
    })
}

impl Rseg {
    /// Verifies this segment's stream and history list (see [`TrxSys::check`]): its pages and
    /// history length.
    fn check(&self, pool: &BufferPool) -> Result<(Vec<u32>, u64)> {
        let t = self.tail.lock().clone();
        let bad = |what: String| MvccError::CorruptTrxSys {
            page: self.page,
            what,
        };
        let limit = minnow_btree::space::space_usage(pool, self.space())?.size;
        let mut pages = Vec::new();
        let mut page = t.first_page;
        while page != 0 {
            pages.push(page);
            if pages.len() as u64 > u64::from(limit) {
                return Err(bad("the undo page chain has a cycle".into()));
            }
            let id = PageId::new(self.space(), page);
            let g = pool.get_read(id)?;
            let (next, free) = undo::page_fields(&g, id)?;
            if page == t.first_page && usize::from(t.head) > free {
                return Err(bad(format!(
                    "HEAD {} is past the first undo page's FREE {free}",
                    t.head
                )));
            }
            page = next;
        }
        if pages.last() != Some(&t.last_page) || pages.len() as u64 != t.n_pages {
            return Err(bad(format!(
                "the undo chain from page {} has {} pages ending at {:?}; the segment header says {} pages \
                 ending at {}",
                t.first_page,
                pages.len(),
                pages.last(),
                t.n_pages,
                t.last_page
            )));
        }
        let history = self.history(pool)?;
        if history.len() as u64 != t.hist_len {
            return Err(bad(format!(
                "the history list holds {} logs, its length says {}",
                history.len(),
                t.hist_len
            )));
        }
        let on_chain: BTreeSet<u32> = pages.iter().copied().collect();
        for (a, h) in &history {
            if h.state != LogState::Committed || !h.update || !on_chain.contains(&a.page) {
                return Err(bad(format!(
                    "history log of transaction {} at {}:{} is {:?} (update {}), on a page {} \
                     the undo stream",
                    h.trx_id,
                    a.page,
                    a.offset,
                    h.state,
                    h.update,
                    if on_chain.contains(&a.page) {
                        "in"
                    } else {
                        "not in"
                    }
                )));
            }
        }
        Ok((pages, t.hist_len))
    }

    /// Takes the first log of this segment's history list, at `at`, off it (see
    /// [`TrxSys::finish_purge`]); `tail` is the held lock.
    fn finish_purge(
        &self,
        pool: &BufferPool,
        mut tail: MutexGuard<'_, Tail>,
        at: UndoAddr,
    ) -> Result<Option<Lsn>> {
        let h = undo::read_header(pool, self.space(), at)?;
        check_in_history(self.page, at, &h)?;
        let mut t = tail.clone();
        let mut mtr = pool.mtr()?;
        let s = mtr.get_write(self.page)?;
        let id = PageId::new(self.space(), at.page);
        let lh = mtr.get_write(id)?;
        mtr.write(lh, usize::from(at.offset) + hdr::STATE, &[4])?;
        t.hist_first = h.history_next;
        t.hist_len = t.hist_len.saturating_sub(1);
        if t.hist_first.is_none() {
            t.hist_last = None;
            t.hist_len = 0;
            mtr.write(s, rseg::HIST_LAST, &addr_bytes(None))?;
        }
        mtr.write(s, rseg::HIST_FIRST, &addr_bytes(t.hist_first))?;
        mtr.write(s, rseg::HIST_LEN, &t.hist_len.to_be_bytes())?;
        let end = mtr.commit()?;
        self.publish(&mut tail, t);
        Ok(Some(end))
    }

    /// Trims this segment's undo stream (see [`TrxSys::trim`]); returns the pages freed.
    fn trim(&self, pool: &BufferPool) -> Result<u64> {
        let mut tail = self.tail.lock();
        let mut freed = 0u64;
        loop {
            let t = tail.clone();
            if t.first_page == t.last_page {
                break;
            }
            let Some((to_page, to_off, dead)) = self.dead_head(pool, &t)? else {
                break;
            };
            if dead.is_empty() {
                break;
            }
            let mut next = t.clone();
            let mut mtr = pool.mtr()?;
            let s = mtr.get_write(self.page)?;
            for &p in &dead {
                space::free_in(&mut mtr, self.seg, p)?;
            }
            next.first_page = to_page;
            next.head = to_off;
            next.n_pages = next.n_pages.saturating_sub(dead.len() as u64);
            mtr.write(s, rseg::FIRST, &to_page.to_be_bytes())?;
            mtr.write(s, rseg::HEAD, &to_off.to_be_bytes())?;
            mtr.write(s, rseg::PAGES, &(next.n_pages as u32).to_be_bytes())?;
            mtr.commit()?;
            freed += dead.len() as u64;
            self.publish(&mut tail, next);
        }
        Ok(freed)
    }

    /// Moves this segment's stream down if it is idle (see [`TrxSys::rehome`]).
    fn rehome(&self, pool: &BufferPool) -> Result<bool> {
        let mut tail = self.tail.lock();
        let t = tail.clone();
        let idle = t.first_page == t.last_page
            && t.hist_len == 0
            && t.free_slots.len() == usize::from(self.n_slots);
        if !idle {
            return Ok(false);
        }
        let mut mtr = pool.mtr()?;
        let s = mtr.get_write(self.page)?;
        let low = space::lowest_free_in(&mut mtr, self.seg)?;
        let Some(low) = low.filter(|&p| p < t.last_page) else {
            mtr.commit()?;
            return Ok(false);
        };
        let n = space::allocate_in(&mut mtr, self.seg, Some(low))?;
        crate::undo::init_undo_page(&mut mtr, n)?;
        let no = mtr.page_id(n).map_or(0, |id| id.page_no);
        space::free_in(&mut mtr, self.seg, t.last_page)?;
        let head = UNDO_DATA as u16;
        mtr.write(s, rseg::FIRST, &no.to_be_bytes())?;
        mtr.write(s, rseg::LAST, &no.to_be_bytes())?;
        mtr.write(s, rseg::HEAD, &head.to_be_bytes())?;
        mtr.write(s, rseg::PAGES, &1u32.to_be_bytes())?;
        mtr.commit()?;
        let next = Tail {
            first_page: no,
            last_page: no,
            head,
            n_pages: 1,
            ..t
        };
        self.publish(&mut tail, next);
        Ok(true)
    }

    /// Walks the entries that start in the stream's first page. `None` if one of them is
    /// needed; else where the next entry starts (page, offset) and the pages before it.
    fn dead_head(&self, pool: &BufferPool, t: &Tail) -> Result<Option<(u32, u16, Vec<u32>)>> {
        let space = self.space();
        let (mut page, mut off) = (t.first_page, usize::from(t.head));
        let mut pages = vec![page];
        let corrupt = |page: u32, offset: usize, expected: &str, found| {
            undo::bad_stream(space, page, offset, expected, found)
        };
        let fields = |page: u32| undo::stream_page(pool, space, page);
        let (mut next, mut free) = fields(page)?;
        // Pages may give no bytes (FREE at the data start), so an entry's length does not
        // bound the steps: a NEXT that comes back to a page already stepped over is a cycle.
        let mut guard = CycleGuard::new();
        guard.step(page);
        let mut step_to = |page: u32, from: u32| -> Result<(u32, usize)> {
            if !guard.step(page) {
                return Err(corrupt(
                    from,
                    UNDO_NEXT,
                    "a NEXT page not stepped over before",
                    format!("{page} (the undo page chain has a cycle)"),
                ));
            }
            fields(page)
        };
        loop {
            if page != t.first_page {
                // The last entry continued past the first page: the next one starts here.
                pages.pop();
                return Ok(Some((page, off as u16, pages)));
            }
            if off >= free {
                if page == t.last_page || next == 0 {
                    return Ok(None);
                }
                return Ok(Some((next, UNDO_DATA as u16, pages)));
            }
            let at = UndoAddr {
                page,
                offset: off as u16,
            };
            let (len, [kind, state, ty]) = undo::entry_head(pool, space, at)?;
            if kind == HEADER_KIND {
                // Active, or committed with update records and not yet purged: needed.
                if state == 1 || (state == 2 && ty == 2) {
                    return Ok(None);
                }
            } else if kind != FILLER && !(1..=3).contains(&kind) {
                return Err(corrupt(
                    page,
                    off + 4,
                    "an entry kind 0 to 4",
                    kind.to_string(),
                ));
            }
            // Step over the entry, page by page.
            let mut pos = StreamPos {
                page,
                off,
                next,
                free,
            };
            undo::step_over(&mut pos, len, space, t.last_page, |from, to| {
                let f = step_to(to, from)?;
                pages.push(to);
                Ok(f)
            })?;
            StreamPos {
                page,
                off,
                next,
                free,
            } = pos;
            if page != t.first_page && off >= free && page != t.last_page && next != 0 {
                // Ended exactly at the end of a later page: that page is dead too.
                let to = next;
                (next, free) = step_to(to, page)?;
                page = to;
                off = UNDO_DATA;
                pages.push(page);
            }
        }
    }

    /// This segment's history list, oldest first.
    fn history(&self, pool: &BufferPool) -> Result<Vec<(UndoAddr, LogHeader)>> {
        let (mut at, len) = {
            let t = self.tail.lock();
            (t.hist_first, t.hist_len)
        };
        let mut out = Vec::new();
        let mut guard = CycleGuard::new();
        while let Some(a) = at {
            if out.len() as u64 >= len {
                return Err(MvccError::CorruptTrxSys {
                    page: self.page,
                    what: format!("the history list is longer than its length {len}"),
                });
            }
            if !guard.step(a) {
                return Err(MvccError::CorruptTrxSys {
                    page: self.page,
                    what: format!(
                        "the history list comes back to the log at {}:{} (a cycle)",
                        a.page, a.offset
                    ),
                });
            }
            let h = undo::read_header(pool, self.space(), a)?;
            at = h.history_next;
            out.push((a, h));
        }
        Ok(out)
    }
}
