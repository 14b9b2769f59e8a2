//! Two batches in flight: a flusher's pair of segments.
//!
//! [`Doublewrite::flush_batch`] runs a batch's four steps one after the other on the calling
//! thread: copies written, copies synced, pages written in place, data files synced. The next
//! batch's copies wait for all of it, although they touch another file. A [`SegmentPair`] lets
//! a flusher overlap them, as MariaDB's page cleaner does with the two slots of its doublewrite
//! buffer (`buf_dblwr_t::slots`, since 10.5): while batch *n* is written in place and its data
//! files synced (on another thread, [`Half::write_in_place`]), batch *n + 1* is gathered and
//! its copies written and synced to the pair's other segment ([`Half::write_copies`]).
//!
//! ```text
//!   segment 2p:   [copies n  sync][in place n  data sync]          [copies n+2 sync][in place n+2 ...
//!   segment 2p+1:                 [copies n+1  sync]  (waits for n) [in place n+1  data sync]
//! ```
//!
//! What crash safety needs still holds batch by batch, and the types hold it:
//!
//! - a page's redo is durable before any copy of it is written: the caller's job, before
//!   [`Half::write_copies`] (the write-ahead rule, as for `flush_batch`);
//! - a batch's copies are durable before any of its pages is written in place:
//!   [`Half::write_in_place`] takes the [`CopiedBatch`] that only a completed
//!   [`Half::write_copies`] returns;
//! - a segment is overwritten only after its previous batch's in-place writes are synced: a
//!   segment between the two steps is marked poisoned and refuses [`Half::write_copies`]
//!   (its `CopiedBatch` names it, and a batch given to the wrong segment is refused);
//! - the caller marks a batch's pages clean, and so lets the checkpoint pass them, only after
//!   [`Half::write_in_place`] returned `Ok`.
//!
//! A power cut with both batches in flight leaves both segments durable with their copies
//! (each batch's copies were synced before any of its pages went in place), so recovery,
//! which reads every segment file and takes the newest valid copy of each page, repairs the
//! pages of both. The two batches hold different pages: the buffer pool's flush marks a page
//! until its batch is synced, so a page is never in two batches in flight.
//!
//! Pair `p` is segments `2p` and `2p + 1`; a flusher `f` uses pair `f % (segments / 2)`.
//! [`SegmentPair`] holds both segments' mutexes for as long as it lives, always the lower
//! index first, so two flushers that share a pair take turns, pair against pair, and a
//! flusher that uses one segment alone ([`Doublewrite::flush_batch`]) waits for the pair
//! holder.

use std::sync::MutexGuard;

use minnow_page::PageId;

use crate::buffer::{Copied, Segment};
use crate::{DblwrError, Doublewrite, SpaceResolver};

/// A flusher's two segments, held together (see the module docs): take the two
/// [`Half`]s with [`SegmentPair::halves`].
#[derive(Debug)]
pub struct SegmentPair<'d> {
    dblwr: &'d Doublewrite,
    first: MutexGuard<'d, Segment>,
    second: MutexGuard<'d, Segment>,
}

/// One segment of a [`SegmentPair`]: it has a batch's copies written, then that batch
/// written in place, and only then the next batch's copies. A `&mut Half` may be sent to
/// another thread for the in-place step while the other half takes the next batch.
#[derive(Debug)]
pub struct Half<'a> {
    dblwr: &'a Doublewrite,
    seg: &'a mut Segment,
}

/// A batch whose copies are durable in a [`Half`]'s segment, to be written in place through
/// the same half ([`Half::write_in_place`]).
#[derive(Debug)]
pub struct CopiedBatch(Copied);

impl Doublewrite {
    /// The pair of segments of flusher `flusher` (a page cleaner's index; the pool's user
    /// threads use the index after the last cleaner), locked for the caller: segments `2p`
    /// and `2p + 1` for `p = flusher % (segments / 2)`. `None` with fewer than two segments
    /// (then [`Doublewrite::flush_batch`] is the way).
    pub fn pair(&self, flusher: usize) -> Option<SegmentPair<'_>> {
        let pairs = self.segments.len() / 2;
        if pairs == 0 {
            return None;
        }
        let p = flusher % pairs;
        let first = crate::buffer::lock(self.segments.get(2 * p)?);
        let second = crate::buffer::lock(self.segments.get(2 * p + 1)?);
        Some(SegmentPair {
            dblwr: self,
            first,
            second,
        })
    }
}

impl<'d> SegmentPair<'d> {
    /// The two segments, each usable on its own (one on this thread, one on another).
    pub fn halves(&mut self) -> [Half<'_>; 2] {
        [
            Half {
                dblwr: self.dblwr,
                seg: &mut self.first,
            },
            Half {
                dblwr: self.dblwr,
                seg: &mut self.second,
            },
        ]
    }
}

impl Half<'_> {
    /// The segment's index.
    pub fn segment(&self) -> usize {
        self.seg.index
    }

    /// Checks `pages` (at most [`Doublewrite::pages_per_batch`]; more is an error, as one
    /// half holds one batch), copies and stamps them into the segment's buffer (pages of
    /// compressed tablespaces compressed to their blocks, `cached[i]` reused for `pages[i]`
    /// where given), writes header and copies to the segment file in one write and syncs
    /// it: steps 1 and 2 of `flush_batch`, with its rules for the pages. The caller's buffers
    /// are free when it returns. Until [`Half::write_in_place`] completes the batch, the
    /// segment refuses another ([`DblwrError::Poisoned`]).
    pub fn write_copies(
        &mut self,
        pages: &[(PageId, &[u8])],
        cached: &[Option<&[u8]>],
        spaces: &dyn SpaceResolver,
    ) -> Result<CopiedBatch, DblwrError> {
        let capacity = self.dblwr.pages_per_batch();
        if pages.len() > capacity {
            return Err(DblwrError::Config {
                reason: format!(
                    "a batch of {} pages given to one segment of {capacity}",
                    pages.len()
                ),
            });
        }
        self.dblwr
            .write_copies(self.seg, pages, cached, spaces)
            .map(CopiedBatch)
    }

    /// Writes `batch` (copied to this half by [`Half::write_copies`]) in place and syncs
    /// the data files: steps 3 and 4 of `flush_batch`. When it returns `Ok`, every page of
    /// the batch is durable in place and the segment takes the next batch; an error leaves
    /// the segment poisoned (its pages are in doubt until recovery).
    pub fn write_in_place(&mut self, batch: CopiedBatch) -> Result<(), DblwrError> {
        self.dblwr.write_in_place(self.seg, batch.0)
    }
}
