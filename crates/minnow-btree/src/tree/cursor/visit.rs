//! Visiting a range in place: [`RangeCursor::visit_in`] hands each record of the range to a
//! closure as a [`LeafRecord`] on its shared-latched leaf, instead of decoding it into an owned
//! [`crate::Entry`] as [`RangeCursor::next_in`] does.
//!
//! Nothing is copied or decoded unless the closure reads it, so a 10-record range costs the
//! descent, ten record-header walks and whatever the closure reads. The walk is the cursor's
//! own (the same bounds, directions, sibling checks and restore after a change), so the two
//! ways of reading share every rule of the module above; they do not share buffered records,
//! so one cursor should be driven by one of them.
//!
//! ## Pausing: how a caller leaves the latch
//!
//! The closure runs under the leaf's latch. When it needs something the latch forbids (an
//! older version of the record from undo, a lock, another tree), it copies what it needs out
//! of the record and returns [`Visit::Pause`]: the visit releases the leaf at once, remembering
//! the record as the last one visited, and returns to the caller, who does the work and calls
//! `visit_in` again to continue right after that record (or, if the leaf changed meanwhile,
//! after its key, found by a search from the root).

use minnow_buf::BufferPool;

use super::RangeCursor;
use crate::tree::{LeafRecord, TreeError};

/// What a [`RangeCursor::visit_in`] closure wants after a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visit {
    /// Go on with the next record of the range.
    Next,
    /// End the scan: no later visit hands out another record.
    Stop,
    /// Release the latch and return (`visit_in` returns `true`); the next call continues
    /// after this record.
    Pause,
}

impl RangeCursor {
    /// Hands the records of the range, in the scan's order, to `f` in place: each as a
    /// [`LeafRecord`] whose fields are slices of its shared-latched leaf. Stops at the end of
    /// the range, after [`ScanRange::limit`](super::ScanRange::limit) records, or when `f`
    /// returns [`Visit::Stop`] (then `false`: the scan is over), or when `f` returns
    /// [`Visit::Pause`] (then `true`: call again to continue). An error from `f` or from the
    /// walk ends the scan. Delete-marked records are handed out too
    /// ([`LeafRecord::deleted`]). [`ScanRange::batch`](super::ScanRange::batch) plays no part:
    /// nothing is decoded ahead.
    ///
    /// `f` runs under the leaf's latch, so it must be short and must not latch pages, wait
    /// for locks, or do anything else that could wait for a thread that needs this leaf (a
    /// writer of it, or of its right neighbour, which a move to it latches). Reading off-page
    /// fields is allowed (overflow pages come after the leaf in the latch order).
    ///
    /// Records already buffered by [`RangeCursor::next_in`] are not visited: drive one cursor
    /// with one of the two.
    pub fn visit_in<E: From<TreeError>>(
        &mut self,
        pool: &BufferPool,
        mut f: impl FnMut(&LeafRecord<'_>) -> Result<Visit, E>,
    ) -> Result<bool, E> {
        let r = self.visit_leaves(pool, &mut f);
        if r.is_err() {
            self.done = true;
        }
        r
    }

    fn visit_leaves<E: From<TreeError>>(
        &mut self,
        pool: &BufferPool,
        f: &mut impl FnMut(&LeafRecord<'_>) -> Result<Visit, E>,
    ) -> Result<bool, E> {
        loop {
            if self.done || self.remaining == Some(0) {
                self.done = true;
                return Ok(false);
            }
            let Some((g, at)) = self.next_leaf(pool)? else {
                self.done = true;
                return Ok(false);
            };
            let no = g.page_id().page_no;
            let mut paused = false;
            let (last, stopped) = self.walk_leaf(&g, at, |s, page, c| -> Result<bool, E> {
                let rec = LeafRecord::read(&s.tree, pool, page, no, c.origin())?;
                s.decoded += 1;
                let v = f(&rec)?;
                if let Some(n) = s.remaining.as_mut() {
                    *n -= 1;
                    if *n == 0 {
                        s.done = true;
                    }
                }
                match v {
                    Visit::Next => Ok(s.done),
                    Visit::Stop => {
                        s.done = true;
                        Ok(true)
                    }
                    Visit::Pause => {
                        paused = true;
                        Ok(true)
                    }
                }
            })?;
            if self.done {
                // Nothing will be read from here again: no position to remember.
                return Ok(false);
            }
            self.leave(&g, last, stopped)?;
            if paused {
                return Ok(true);
            }
        }
    }
}
