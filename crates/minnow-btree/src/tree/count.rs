//! Counting records without decoding them: one walk along the leaf level.
//!
//! `SELECT COUNT(*)` in InnoDB (`row_scan_index_for_mysql` over the smallest index) reads every
//! leaf record, because MVCC means no page header can say how many rows a given reader sees:
//! `PAGE_N_RECS` counts delete-marked records and records written by transactions the reader
//! must not see. What it can skip is the *decoding*. A record is counted from two facts that
//! sit at fixed places:
//!
//! - its **delete mark**, one bit in the 5-byte record header just below the origin;
//! - **who wrote it**: on a clustered leaf the record's own `DB_TRX_ID` (at a fixed offset from
//!   the origin when every primary-key column is fixed-width, otherwise found by walking the
//!   key's lengths); on a secondary leaf nothing per record, but the page's `PAGE_MAX_TRX_ID`
//!   bounds every writer of every record on it.
//!
//! Clustered leaves keep `PAGE_MAX_TRX_ID` as well, as a bound on their records' `DB_TRX_ID`s
//! with 0 meaning "unknown" ([`crate::node::cover_trx_id`]). So on either kind of index a leaf
//! whose bound the reader sees (below its up limit, and not an unknown 0 on a clustered leaf)
//! is counted from its delete marks alone, without reading a writer: after a load or once
//! the writers have committed, that is every leaf. The per-record tests below are for the
//! other leaves (their writers read as above).
//!
//! A trusted leaf whose page says that none of its records is delete-marked (the
//! [`node::NO_DELETE_MARKS`] flag, kept by every write that marks a record or moves records,
//! see `node`) needs not even the delete marks: its count is `PAGE_N_RECS`, read from the
//! header, and none of its records is visited. After a load, or once a table's inserts and
//! updates have committed with no delete since, that is every leaf, and a count reads one
//! cache line of each leaf instead of every record's header (InnoDB has no such flag; it
//! walks the records of the smallest index).
//!
//! So the walk asks the caller two questions, both about transaction ids: does the reader see
//! a page whose `PAGE_MAX_TRX_ID` is `m` (a whole leaf), and does it see a record written by
//! `t` (clustered leaves)? Where the answer is yes the record counts unless delete-marked.
//! Where it is no, the record's newest version is not the one the reader sees, and only the
//! caller can rebuild the older one (from undo, or through the clustered index for a secondary
//! entry): the walk decodes exactly those records and hands them back in
//! [`Counted::unresolved`], to be decided after every latch is released.
//!
//! The walk descends once to the leftmost leaf and then couples rightwards along the `NEXT`
//! links (latch the right sibling, then let go of the leaf: the order every reader and writer
//! of one level follows, see the `cursor` module), so it holds at most two shared latches and
//! never sees a page between two halves of a split. Each sibling's `PREV` must name the page
//! the walk came from, and a [`CycleGuard`] stops a ring of corrupt links: a damaged leaf level
//! ends the count with [`TreeError::Corrupt`], never a wrong number or an endless loop. (A leaf
//! counted from its header is not walked, so damage inside its record list is found by the
//! readers that walk it and by `check`, not by the count.)
//!
//! That walk is one part of a more general one, [`BTree::count_range`]: the records with keys
//! in `[lo, hi)`, from a descent to `lo` to the first record at or past `hi`. The parallel
//! count (`count_par`, [`BTree::count_visible_parallel`]) cuts the leaf level into such ranges
//! and walks them on several threads; the serial count is the one range with no bounds.

use minnow_buf::BufferPool;
use minnow_page::walk::CycleGuard;
use minnow_page::{bytes, fil};

use super::page::{NIL, validate};
use super::{BTree, Entry, TreeError};
use crate::node;
use crate::record::SearchKey;
use crate::record::{HEADER_SIZE, INFO_DELETED};

/// The outcome of [`BTree::count_visible`].
#[derive(Debug, Default)]
pub struct Counted {
    /// Records the reader sees as they are and that are not delete-marked.
    pub visible: u64,
    /// Records whose newest version the reader may not see, decoded (every field, off-page
    /// ones left as [`crate::record::Value::Null`]) for the caller to decide.
    pub unresolved: Vec<Entry>,
    /// Leaves walked.
    pub leaves: u64,
    /// Of them, leaves counted from their delete marks alone or from their header, their
    /// `PAGE_MAX_TRX_ID` saying that the reader sees every writer on them (no record's writer
    /// read).
    pub whole_leaves: u64,
    /// The largest transaction id behind the records counted in `visible` (or skipped as
    /// delete-marked): a clustered record's `DB_TRX_ID`, a trusted secondary leaf's
    /// `PAGE_MAX_TRX_ID`. A reader that sees every transaction up to it sees those records
    /// exactly as this count did (what lets a caller reuse the count).
    pub max_trx_id: u64,
    /// Of the whole leaves, leaves counted from `PAGE_N_RECS` alone: trusted and flagged as
    /// holding no delete-marked record ([`node::NO_DELETE_MARKS`]), so no record was visited.
    pub header_leaves: u64,
    /// Key ranges the leaf level was cut into, each walked on its own
    /// ([`BTree::count_visible_parallel`]); 1 for the serial walk.
    pub ranges: u64,
}

/// How [`BTree::count_leaf`] counted a leaf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Leaf {
    /// Its `PAGE_N_RECS`: trusted, and no record delete-marked.
    FromHeader,
    /// Trusted whole: every record's delete mark read, no writer.
    Trusted,
    /// Record by record, each writer read.
    Walked,
}

impl BTree {
    /// Counts the leaf records a reader sees without decoding them; see the module docs.
    /// The reader sees every transaction id below `seen_below` (a read view's up limit): a
    /// secondary leaf whose `PAGE_MAX_TRX_ID` is below it holds only changes the reader sees,
    /// and a clustered record whose `DB_TRX_ID` is below it is its visible version.
    /// `sees_trx(t)` answers for the writers of clustered records at or above it.
    pub fn count_visible(
        &self,
        pool: &BufferPool,
        seen_below: u64,
        sees_trx: &dyn Fn(u64) -> bool,
    ) -> Result<Counted, TreeError> {
        let mut out = Counted {
            ranges: 1,
            ..Counted::default()
        };
        self.count_range(pool, None, None, seen_below, sees_trx, &mut out)?;
        Ok(out)
    }

    /// Adds to `out` the records with keys in `[lo, hi)` (`None`: unbounded on that side),
    /// counted as [`BTree::count_visible`] counts them: one descent to the leaf where `lo`
    /// belongs, then the coupled walk rightwards up to the first record at or past `hi`.
    /// The bounds are keys, not pages, so ranges that meet at a key count every record once
    /// however splits and merges move records between leaves meanwhile (see the `count_par`
    /// module). A leaf a range starts in when `lo` is set is the one the range before it
    /// ended in, so it is left out of `out.leaves`: the parts of a level add up to its leaves.
    pub(crate) fn count_range(
        &self,
        pool: &BufferPool,
        lo: Option<&SearchKey>,
        hi: Option<&SearchKey>,
        seen_below: u64,
        sees_trx: &dyn Fn(u64) -> bool,
        out: &mut Counted,
    ) -> Result<(), TreeError> {
        let mut g = self.leaf_for_read(pool, lo)?;
        let mut after = match lo {
            Some(k) => node::search_before(&g, &self.leaf, k)?.cursor.origin(),
            None => node::INFIMUM,
        };
        let mut tally = lo.is_none();
        let mut guard = CycleGuard::new();
        loop {
            let no = g.page_id().page_no;
            let stop = match hi {
                Some(k) => self.first_at_or_past(&g, k)?,
                None => node::SUPREMUM,
            };
            let how = self.count_leaf(pool, &g, after, stop, seen_below, sees_trx, out)?;
            if tally {
                out.leaves += 1;
                out.whole_leaves += u64::from(how != Leaf::Walked);
                out.header_leaves += u64::from(how == Leaf::FromHeader);
            }
            if stop != node::SUPREMUM {
                return Ok(()); // a record at or past `hi`: the range ends on this leaf
            }
            (after, tally) = (node::INFIMUM, true);
            let bad = |e: minnow_page::PageError| self.corrupt(no, e.to_string());
            let next = super::page::next(&g).map_err(bad)?;
            if next == NIL {
                return Ok(());
            }
            if next == no {
                return Err(self.corrupt(no, "the leaf's NEXT names the leaf itself"));
            }
            let right = pool.get_read(self.id(next))?;
            validate(&right, self.id(next), self.index_id, Some(0))?;
            let back = super::page::prev(&right).map_err(|e| self.corrupt(next, e.to_string()))?;
            if back != no {
                return Err(self.corrupt(
                    next,
                    format!("leaf reached from leaf {no} has PREV {back}, expected {no}"),
                ));
            }
            if !guard.step(next) {
                return Err(self.corrupt(
                    next,
                    "the leaf level's sibling links form a cycle through this page \
                     (a count came back to it)",
                ));
            }
            g = right; // the left leaf's latch goes only now: coupling
        }
    }

    /// The first record of the leaf at or past `key` (the supremum if none is). Most leaves
    /// of a range lie wholly below its end: that is decided from the leaf's last record
    /// (found from the directory's last slot, a walk of at most one group) with one key
    /// comparison; only the leaf that holds the end is searched. (A search on every leaf
    /// cost about 20 instructions a record.)
    fn first_at_or_past(&self, page: &[u8], key: &SearchKey) -> Result<usize, TreeError> {
        let n_slots = usize::from(node::Hdr::read(page)?.n_slots);
        let mut last = node::slot(page, n_slots.saturating_sub(2))?;
        for _ in 0..=node::DIR_SLOT_MAX_N_OWNED {
            let next = node::next_of(page, last)?;
            if next == node::SUPREMUM {
                if last == node::INFIMUM
                    || self.leaf.compare(key, page, last, 0)?.0 == std::cmp::Ordering::Greater
                {
                    return Ok(node::SUPREMUM); // every record is below the key
                }
                return Ok(node::search_before(page, &self.leaf, key)?.up.origin());
            }
            last = next;
        }
        Err(self.corrupt_rec(page, last, "the last directory group owns too many records"))
    }

    /// Adds one leaf's records to `out`: its header alone (a trusted leaf flagged
    /// [`node::NO_DELETE_MARKS`], counted whole), or one of three loops, each with its test
    /// inline (a trusted leaf needs only the delete marks; a clustered leaf whose
    /// `DB_TRX_ID` sits at a fixed offset reads it there; any other leaf walks each record's
    /// fields to find what it needs). Only the records after `after` and before `stop` (the
    /// infimum and the supremum for the whole leaf) count. Says how the leaf was counted.
    #[allow(clippy::too_many_arguments)] // one walk's state, passed down its hot loop
    fn count_leaf(
        &self,
        pool: &BufferPool,
        page: &[u8],
        after: usize,
        stop: usize,
        seen_below: u64,
        sees_trx: &dyn Fn(u64) -> bool,
        out: &mut Counted,
    ) -> Result<Leaf, TreeError> {
        let max_trx_id = node::max_trx_id(page)?;
        let trx_field = self.leaf.trx_id_field();
        // 0 on a clustered leaf means "unknown" (`node::cover_trx_id`), on a secondary leaf
        // "changed by no transaction".
        if max_trx_id < seen_below && (max_trx_id != 0 || trx_field.is_none()) {
            // A leaf whose every writer the reader sees: its records are the truth.
            out.max_trx_id = out.max_trx_id.max(max_trx_id);
            if after == node::INFIMUM && stop == node::SUPREMUM && node::no_delete_marks(page)? {
                // The whole leaf, none of its records delete-marked: all of them count,
                // and the header says how many (no record visited).
                out.visible += node::n_recs(page)? as u64;
                return Ok(Leaf::FromHeader);
            }
            // Only the delete marks are read.
            warm(page);
            let mut live = 0;
            self.each_record(page, after, stop, |_, deleted| {
                live += u64::from(!deleted);
                Ok(())
            })?;
            out.visible += live;
            return Ok(Leaf::Trusted);
        }
        warm(page);
        let Some(trx_field) = trx_field else {
            self.each_record(page, after, stop, |at, deleted| {
                out.unresolved
                    .push(self.unresolved(pool, page, at, deleted)?);
                Ok(())
            })?;
            return Ok(Leaf::Walked);
        };
        let (mut live, mut max) = (0u64, out.max_trx_id);
        let mut count = |trx: u64, at: usize, deleted: bool| -> Result<(), TreeError> {
            if trx < seen_below || sees_trx(trx) {
                max = max.max(trx);
                live += u64::from(!deleted);
            } else {
                out.unresolved
                    .push(self.unresolved(pool, page, at, deleted)?);
            }
            Ok(())
        };
        match self.leaf.fixed_offset(trx_field) {
            Some(off) => self.each_record(page, after, stop, |at, deleted| {
                let trx = bytes::slice(page, at + off, 6)
                    .ok()
                    .and_then(node::trx_id_of);
                let trx = trx.ok_or_else(|| self.no_trx_id(page, at))?;
                count(trx, at, deleted)
            })?,
            None => self.each_record(page, after, stop, |at, deleted| {
                let trx = self.trx_id_at(page, at, trx_field)?;
                count(trx, at, deleted)
            })?,
        }
        out.visible += live;
        out.max_trx_id = max;
        Ok(Leaf::Walked)
    }

    /// A record whose newest version the reader may not see, decoded for the caller.
    fn unresolved(
        &self,
        pool: &BufferPool,
        page: &[u8],
        at: usize,
        deleted: bool,
    ) -> Result<Entry, TreeError> {
        Ok(Entry {
            values: self.decode_leaf(pool, page, at, Some(&[]))?,
            deleted,
            page_max_trx_id: node::max_trx_id(page)?,
        })
    }

    /// Calls `f(origin, delete-marked)` on every user record of the leaf after the record at
    /// `after` and before the one at `stop` (which must be on the list: a record, or the
    /// infimum and the supremum), in list order. The
    /// checks of [`node::step`] (every next pointer inside the record area, the list ending at
    /// the supremum after at most `PAGE_N_HEAP` records), but each record's 5 header bytes are
    /// read once, for both its delete mark and the step to the next: the count's inner loop,
    /// kept to a few instructions a record.
    #[inline(always)]
    fn each_record(
        &self,
        page: &[u8],
        after: usize,
        stop: usize,
        mut f: impl FnMut(usize, bool) -> Result<(), TreeError>,
    ) -> Result<(), TreeError> {
        let header = |at: usize| -> Option<[u8; HEADER_SIZE]> {
            page.get(at.checked_sub(HEADER_SIZE)?..at)?.try_into().ok()
        };
        let mut left = node::Hdr::read(page).map_or(0, |h| usize::from(h.n_heap));
        let mut at = after;
        let mut h = header(at).ok_or_else(|| self.corrupt_rec(page, at, "no start record"))?;
        loop {
            let rel = u16::from_be_bytes([h[3], h[4]]);
            let next = usize::from((at as u16).wrapping_add(rel));
            if rel == 0 || !(node::INFIMUM..page.len()).contains(&next) {
                return Err(self.corrupt_rec(page, at, "next pointer outside the record area"));
            }
            // One test a record: a `stop` that is not on the list (only on a corrupt page,
            // as it was found on this latched page) walks on into the supremum, whose next
            // pointer of 0 ends the walk with an error above.
            if next == stop {
                return Ok(());
            }
            if left == 0 {
                return Err(self.corrupt_rec(
                    page,
                    next,
                    "the record list has more records than the heap",
                ));
            }
            left -= 1;
            at = next;
            h = header(at).ok_or_else(|| self.corrupt_rec(page, at, "header outside the page"))?;
            f(at, h[0] & INFO_DELETED != 0)?;
        }
    }

    fn no_trx_id(&self, page: &[u8], origin: usize) -> TreeError {
        self.corrupt_rec(page, origin, "DB_TRX_ID missing or not 6 bytes")
    }

    /// The `DB_TRX_ID` (field `field`) of the clustered record at `origin`, found by walking
    /// the key fields (a key with a variable-width or nullable field).
    fn trx_id_at(&self, page: &[u8], origin: usize, field: usize) -> Result<u64, TreeError> {
        let bytes = self
            .leaf
            .walk(page, origin)
            .nth(field)
            .transpose()?
            .flatten();
        bytes
            .and_then(node::trx_id_of)
            .ok_or_else(|| self.no_trx_id(page, origin))
    }

    fn corrupt_rec(&self, page: &[u8], origin: usize, what: &str) -> TreeError {
        let no = bytes::read_u32(page, fil::PAGE_NO).unwrap_or(0);
        self.corrupt(no, format!("record at offset {origin}: {what}"))
    }
}

/// Reads one byte of every 64-byte line of the record heap, in address order. The record list
/// visits records in key order, which after random inserts is a random walk over the page:
/// each step would wait for a cache miss that depends on the step before. These loads depend
/// on nothing, so the processor keeps many of them in flight (and its prefetcher streams the
/// rest); the walk that follows finds the page in cache. On a 1M-row table loaded in random
/// order this took a count from 48-66 ms to 40-45 ms (the rest was instructions: about 94 a
/// record under callgrind with the generic record step and closures, 77 with the loops of
/// [`BTree::count_leaf`], this warm-up about 9 of them on 190-byte records).
fn warm(page: &[u8]) {
    let top = node::Hdr::read(page).map_or(page.len(), |h| usize::from(h.heap_top));
    let heap = page.get(..top.min(page.len())).unwrap_or(page);
    let mut acc = 0u8;
    for line in heap.chunks(64) {
        acc ^= line.first().copied().unwrap_or(0);
    }
    std::hint::black_box(acc);
}

#[cfg(test)]
#[path = "count_tests.rs"]
mod tests;
