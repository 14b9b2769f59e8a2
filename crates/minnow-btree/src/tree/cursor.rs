//! Range scans, forward and backward: a cursor that walks the leaves through their sibling
//! links.
//!
//! ## Starting: one descent, one binary search
//!
//! A scan starts with one descent from the root, choosing on every level the child that holds
//! the first record it wants, and then one binary search on the leaf ([`node::search`] or
//! [`node::search_before`]) to land right before that record. Nothing before the start is
//! read, decoded or copied, and a scan with a limit decodes only as many records as it may
//! return: a 10-row scan costs about one point lookup plus ten decodes, whatever the leaf
//! holds.
//!
//! A forward scan whose start bound is a full key can skip the descent and the search: if the
//! tree's search hook (the adaptive hash index, [`super::SearchHook`]) guesses where the
//! record with that key lies and the guess verifies (as a point lookup's does: the same frame
//! with the same layout, a leaf of this index, the key equal), the range starts *on* that
//! record (an included bound) or right after it (an excluded one). A range read from an
//! existing key, which is what a key-value range read is, then costs the hash probe instead of
//! a root-to-leaf walk and a leaf search; any other start descends.
//!
//! ## Batches: a limit that skipped records may stretch
//!
//! A caller above the tree often has a limit the tree cannot apply: a table scan's limit
//! counts *visible* rows, and the tree does not know which versions a read view sees or that
//! a delete-marked record will be skipped. Such a caller passes its limit as a **batch**
//! ([`ScanRange::batch`]) instead: the scan decodes that many records (across a leaf
//! boundary if need be) and, only if the caller asks for more, a batch twice as big, and so
//! on (1x, 2x, 4x, ...). A visit that fills its batch stops inside the leaf and remembers the
//! last record it took; the next visit latches the leaf again and, if its LSN is unchanged,
//! continues right after (or, going backward, right before) that record, otherwise it
//! restores from the root as below. A scan that skips nothing decodes exactly its limit `l`;
//! one that skips `s` records decodes fewer than `3l + 2s`. [`ScanRange::fields`] cuts the work per record the other
//! way: fields not asked for are stepped over in the record header, never decoded or copied.
//!
//! ## Bounds are key prefixes
//!
//! A bound may have fewer values than the index key: it then stands for every key that starts
//! with those values. `Included([5])` on a key `(a, b)` starts at the first `(5, _)` and, as
//! an upper bound, ends after the last `(5, _)`; `Excluded([5])` skips all of them. Records are
//! compared with a bound on the bound's fields only ([`crate::record::RecordLayout::compare`]
//! stops there), and the descent finds the first record of a prefix with InnoDB's
//! "strictly less" search mode ([`node::search_before`]), so a prefix works the same on every
//! index, clustered or secondary, at any length up to the full key.
//!
//! ## Between two calls of `next`: no latch, a remembered position
//!
//! The cursor never keeps a latch between two calls of `next` (a caller that scans and writes
//! in one thread would otherwise deadlock with itself). It copies the records it will return
//! from one leaf under a shared latch and remembers where it was: the leaf's page number, its
//! LSN and both sibling links. To continue, it checks that the leaf is unchanged (same LSN);
//! if so its links are still right and the cursor moves to the sibling. If the LSN changed (an
//! insert, a split, a merge, or the page was freed, which rewrites it), the cursor searches
//! again from the root for the last key it returned: InnoDB's "restore the persistent
//! cursor".
//!
//! ## Moving right, and moving left without deadlocking
//!
//! Every thread that holds two latches on one level took them left to right (writers latch
//! siblings left to right, readers couple rightwards). Moving **right** follows that order:
//! latch the remembered leaf, check its LSN, latch its right sibling, release the leaf.
//!
//! Moving **left** cannot latch the left sibling while holding the leaf: a writer holding the
//! left sibling and waiting for the leaf would deadlock with it. So a backward step holds
//! nothing when it starts. It latches the remembered left sibling first, then, still holding
//! it, the leaf it came from (left to right again); if the leaf's LSN is unchanged and the
//! left page's `NEXT` still points at the leaf, the left page is the true left neighbour and
//! nothing moved between them, so the leaf is released and the left page read from its last
//! record down. Otherwise both are released and the cursor searches from the root for the last
//! record below the last key it returned. This is what InnoDB's
//! `btr_pcur_move_backward_from_page` does (release, then latch the left page before the
//! current one).
//!
//! ## A corrupt sibling list ends the scan with an error
//!
//! Sibling links come from the file, so a scan checks them as it follows them (see
//! [`minnow_page::walk`]). Stepping right from an unchanged leaf, the right sibling must be a
//! leaf of this index whose `PREV` names the leaf the scan came from; stepping left, the left
//! page's `NEXT` must name the unchanged leaf. While the scan holds the unchanged leaf's latch
//! no split or merge can be rewriting those links, so a mismatch is corruption
//! ([`TreeError::Corrupt`] naming the page), not a race. Links that agree but form a ring
//! (two corrupt pages pointing at each other both ways) are caught by a
//! [`CycleGuard`] over the leaves stepped to since the last descent: each step costs one
//! comparison, and a ring ends the scan with an error after a few times its length.

use std::collections::VecDeque;
use std::ops::Bound;

use minnow_buf::{BufferPool, PageReadGuard};
use minnow_page::walk::CycleGuard;
use minnow_redo::Lsn;

use super::descend::MAX_LEVEL;
use super::page::{NIL, child_of, validate};
use super::{BTree, Entry, TreeError};
use crate::node::{self, Cursor};
use crate::record::{SearchKey, Value};

mod owned;
mod visit;
pub use visit::Visit;

/// What a range scan returns: keys within `start..end` (each bound inclusive, exclusive or
/// open; a bound may be a prefix of the key, see the module docs), in ascending order (or
/// descending with [`ScanRange::reverse`]), at most `limit` of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanRange {
    /// The lower bound (a key or a key prefix).
    pub start: Bound<Vec<Value>>,
    /// The upper bound (a key or a key prefix).
    pub end: Bound<Vec<Value>>,
    /// The most records to return (`None`: all).
    pub limit: Option<usize>,
    /// Descending order: from `end` down to `start`.
    pub reverse: bool,
    /// The off-page fields to fetch, by stored field index (`None`: all); see
    /// [`crate::tree::overflow`].
    pub fetch: Option<Vec<usize>>,
    /// The stored fields to decode, by index (`None`: all); the others come back as
    /// [`Value::Null`] without being read, on the page or off it.
    pub fields: Option<Vec<usize>>,
    /// How many records the caller expects to want (`None`: all of them): the scan decodes
    /// this many, and a batch twice as big each time the caller wants more than it has read.
    /// Unlike `limit` it is no bound: a caller that skips some records (invisible versions)
    /// keeps reading, a few more records at a time (see the module docs).
    pub batch: Option<usize>,
}

impl ScanRange {
    /// Every record.
    pub fn all() -> ScanRange {
        ScanRange {
            start: Bound::Unbounded,
            end: Bound::Unbounded,
            limit: None,
            reverse: false,
            fetch: None,
            fields: None,
            batch: None,
        }
    }

    /// Records with keys within the bounds.
    pub fn new(start: Bound<Vec<Value>>, end: Bound<Vec<Value>>) -> ScanRange {
        ScanRange {
            start,
            end,
            ..ScanRange::all()
        }
    }

    /// The same range, at most `limit` records.
    pub fn limit(mut self, limit: usize) -> ScanRange {
        self.limit = Some(limit);
        self
    }

    /// The same range, fetching only these off-page fields (the others come back as
    /// [`Value::Null`]; fields stored on the page always come back).
    pub fn fetch(mut self, fields: Vec<usize>) -> ScanRange {
        self.fetch = Some(fields);
        self
    }

    /// The same range, decoding only these stored fields (see [`ScanRange::fields`]).
    pub fn fields(mut self, fields: Vec<usize>) -> ScanRange {
        self.fields = Some(fields);
        self
    }

    /// The same range, read `n` records at a time at first (see [`ScanRange::batch`]).
    pub fn batch(mut self, n: usize) -> ScanRange {
        self.batch = Some(n);
        self
    }

    /// The same range in descending key order (the limit counts from the top).
    pub fn reverse(mut self) -> ScanRange {
        self.reverse = true;
        self
    }
}

/// Where to land on a page: the cursor is the last record before the wanted one.
#[derive(Debug, Clone, Copy)]
enum Seek<'k> {
    /// Before every record.
    First,
    /// At the last record.
    Last,
    /// At the last record below the key (prefix).
    Before(&'k SearchKey),
    /// At the last record at or below the key (prefix).
    AtOrBefore(&'k SearchKey),
}

/// Where a walk of a leaf starts (forward; a backward walk ends its collection at the
/// cursor either way).
#[derive(Debug, Clone, Copy)]
enum At {
    /// With the record after this one (the infimum: with the first).
    After(Cursor),
    /// With this record: one a hash guess found, whose key is the start bound's.
    On(Cursor),
}

/// Where the cursor stopped: the leaf it read last, as it was.
#[derive(Debug, Clone, Copy)]
struct Pos {
    page: u32,
    lsn: Lsn,
    prev: u32,
    next: u32,
    /// The last record taken, if the leaf may hold more records to return (the batch was
    /// full): the next visit continues after (forward) or before (backward) it.
    at: Option<Cursor>,
}

/// A range scan ([`BTree::scan`]): an iterator of [`Entry`] (delete-marked records included,
/// flagged). After an error it ends. It is a [`RangeCursor`] and the pool it reads through.
pub struct RangeScan<'p> {
    cursor: RangeCursor,
    pool: &'p BufferPool,
}

impl std::fmt::Debug for RangeScan<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.cursor.fmt(f)
    }
}

impl<'p> RangeScan<'p> {
    pub(crate) fn new(
        tree: BTree,
        pool: &'p BufferPool,
        range: ScanRange,
    ) -> Result<RangeScan<'p>, TreeError> {
        Ok(RangeScan {
            cursor: RangeCursor::new(tree, range)?,
            pool,
        })
    }

    /// Records decoded so far (see [`RangeCursor::decoded`]).
    pub fn decoded(&self) -> u64 {
        self.cursor.decoded()
    }

    /// The scan's position without the pool, for a caller that keeps the pool elsewhere (an
    /// owner of the pool's `Arc` whose scan must not borrow it).
    pub fn into_cursor(self) -> RangeCursor {
        self.cursor
    }
}

/// A range scan's position and bounds, not tied to a pool: [`RangeCursor::next_in`] reads
/// through the pool given on each call, which must be the pool of the tree the scan was
/// opened on ([`BTree::cursor`]). Holds no latch and no pin between calls. A [`RangeScan`]
/// is one of these and a borrowed pool.
pub struct RangeCursor {
    tree: BTree,
    start: Bound<SearchKey>,
    end: Bound<SearchKey>,
    reverse: bool,
    remaining: Option<usize>,
    fetch: Option<Vec<usize>>,
    /// Which stored fields to decode (`None`: all).
    fields: Option<Vec<bool>>,
    /// The size of the batch being read.
    batch: usize,
    /// What is left of it (a batch may span leaves).
    budget: usize,
    /// Records decoded so far.
    decoded: u64,
    buf: VecDeque<Entry>,
    /// The key of the last record buffered (where to restore from).
    last: Option<SearchKey>,
    pos: Option<Pos>,
    /// The leaves (page, LSN) stepped to through sibling links since the last descent.
    guard: CycleGuard<(u32, Lsn)>,
    started: bool,
    done: bool,
}

impl std::fmt::Debug for RangeCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RangeScan")
            .field("index_id", &self.tree.index_id)
            .field("reverse", &self.reverse)
            .field("buffered", &self.buf.len())
            .field("decoded", &self.decoded)
            .field("done", &self.done)
            .finish()
    }
}

fn map_bound(tree: &BTree, b: Bound<Vec<Value>>) -> Result<Bound<SearchKey>, TreeError> {
    let key = |k: Vec<Value>| -> Result<SearchKey, TreeError> {
        let need = tree.leaf.n_key();
        if k.len() > need {
            return Err(TreeError::BadKey {
                index_id: tree.index_id,
                need,
                got: k.len(),
            });
        }
        Ok(tree.leaf.search_key(&k)?)
    };
    Ok(match b {
        Bound::Included(k) => Bound::Included(key(k)?),
        Bound::Excluded(k) => Bound::Excluded(key(k)?),
        Bound::Unbounded => Bound::Unbounded,
    })
}

impl BTree {
    /// The cursor position `seek` asks for on `page` (a node page or a leaf).
    fn seek_on(&self, page: &[u8], level: u16, seek: Seek<'_>) -> Result<Cursor, TreeError> {
        let layout = self.layout_at(level);
        Ok(match seek {
            Seek::First => Cursor::INFIMUM,
            Seek::Last => {
                let mut last = Cursor::INFIMUM;
                for c in node::records(page) {
                    last = c?;
                }
                last
            }
            Seek::Before(k) => node::search_before(page, layout, k)?.cursor,
            Seek::AtOrBefore(k) => node::search(page, layout, k)?.cursor,
        })
    }

    /// Shared latch coupling from the root to the leaf `seek` lands on; returns the leaf and
    /// the position on it.
    fn seek_leaf<'p>(
        &self,
        pool: &'p BufferPool,
        seek: Seek<'_>,
    ) -> Result<(PageReadGuard<'p>, Cursor), TreeError> {
        super::descend::count_descent();
        let rid = self.id(self.root);
        let mut g = pool.get_read(rid)?;
        let mut level = validate(&g, rid, self.index_id, None)?;
        if level > MAX_LEVEL {
            return Err(self.corrupt(self.root, format!("root at level {level}")));
        }
        while level > 0 {
            let no = g.page_id().page_no;
            let mut c = self.seek_on(&g, level, seek)?;
            if c.is_infimum() {
                c = node::next(&g, c)?;
            }
            if !c.is_user() {
                return Err(self.corrupt(no, "node page has no pointer for the key"));
            }
            let child = child_of(&self.node, &g, c.origin())?;
            let id = self.id(child);
            let next = pool.get_read(id)?;
            validate(&next, id, self.index_id, Some(level - 1))?;
            g = next; // the parent's latch is released only now: coupling
            level -= 1;
        }
        let c = self.seek_on(&g, 0, seek)?;
        Ok((g, c))
    }
}

impl RangeCursor {
    pub(crate) fn new(tree: BTree, range: ScanRange) -> Result<RangeCursor, TreeError> {
        let start = map_bound(&tree, range.start)?;
        let end = map_bound(&tree, range.end)?;
        let fields = range.fields.map(|f| {
            let mut mask = vec![false; tree.leaf.fields().len()];
            for i in f {
                if let Some(m) = mask.get_mut(i) {
                    *m = true;
                }
            }
            mask
        });
        Ok(RangeCursor {
            tree,
            start,
            end,
            reverse: range.reverse,
            remaining: range.limit,
            fetch: range.fetch,
            fields,
            batch: range.batch.map_or(usize::MAX, |n| n.max(1)),
            budget: range.batch.map_or(usize::MAX, |n| n.max(1)),
            decoded: 0,
            buf: VecDeque::new(),
            last: None,
            pos: None,
            guard: CycleGuard::new(),
            started: false,
            done: range.limit == Some(0),
        })
    }

    /// Where the scan starts (or restarts, if nothing was returned yet).
    fn first_seek(&self) -> Seek<'_> {
        if self.reverse {
            match &self.end {
                Bound::Included(k) => Seek::AtOrBefore(k),
                Bound::Excluded(k) => Seek::Before(k),
                Bound::Unbounded => Seek::Last,
            }
        } else {
            match &self.start {
                Bound::Included(k) => Seek::Before(k),
                Bound::Excluded(k) => Seek::AtOrBefore(k),
                Bound::Unbounded => Seek::First,
            }
        }
    }

    /// Where to restore after the leaf changed: right after (forward) or right before
    /// (backward) the last key returned.
    fn restore_seek(&self) -> Seek<'_> {
        match &self.last {
            Some(k) if self.reverse => Seek::Before(k),
            Some(k) => Seek::AtOrBefore(k),
            None => self.first_seek(),
        }
    }

    /// Checks a sibling reached through a link from the unchanged leaf `from` (see the module
    /// docs): a leaf of this index whose link back (`PREV` going right, `NEXT` going left)
    /// names `from`, and not a leaf this walk has stepped to before.
    fn check_sibling(&mut self, g: &PageReadGuard<'_>, from: u32) -> Result<(), TreeError> {
        let no = g.page_id().page_no;
        validate(g, self.tree.id(no), self.tree.index_id, Some(0))?;
        let (link, back) = if self.reverse {
            ("NEXT", super::page::next(g))
        } else {
            ("PREV", super::page::prev(g))
        };
        let back = back.map_err(|e| self.tree.corrupt(no, e.to_string()))?;
        if back != from {
            return Err(self.tree.corrupt(
                no,
                format!("leaf reached from leaf {from} has {link} {back}, expected {from}"),
            ));
        }
        if !self.guard.step((no, g.lsn())) {
            return Err(self.tree.corrupt(
                no,
                format!(
                    "the leaf level's sibling links form a cycle through this page \
                     (a {} scan came back to it)",
                    if self.reverse { "backward" } else { "forward" }
                ),
            ));
        }
        Ok(())
    }

    /// The next leaf to read and the position on it: the first one, a sibling of the last
    /// one, or (if the last one changed) where a search for the last key lands.
    fn next_leaf<'p>(
        &mut self,
        pool: &'p BufferPool,
    ) -> Result<Option<(PageReadGuard<'p>, At)>, TreeError> {
        if !self.started {
            return self.first_leaf(pool);
        }
        Ok(self.next_leaf_after(pool)?.map(|(g, c)| (g, At::After(c))))
    }

    /// [`RangeCursor::next_leaf`] for the first leaf: a forward scan from a full key that the
    /// hash index knows starts on the leaf holding that key, on the record itself (no descent
    /// and no search of the leaf: see `BTree::guessed_leaf`); every other scan descends.
    fn first_leaf<'p>(
        &mut self,
        pool: &'p BufferPool,
    ) -> Result<Option<(PageReadGuard<'p>, At)>, TreeError> {
        self.started = true;
        let seek = self.first_seek();
        if !self.reverse
            && let Seek::Before(k) | Seek::AtOrBefore(k) = seek
            && let Some((g, c)) = self.tree.guessed_leaf(pool, k)
        {
            // The record's key equals the start bound's: an included bound starts on it, an
            // excluded one right after it.
            let at = match seek {
                Seek::Before(_) => At::On(c),
                _ => At::After(c),
            };
            return Ok(Some((g, at)));
        }
        let (g, c) = self.tree.seek_leaf(pool, seek)?;
        Ok(Some((g, At::After(c))))
    }

    /// The leaf after the first one and the position on it (see [`RangeCursor::next_leaf`]).
    fn next_leaf_after<'p>(
        &mut self,
        pool: &'p BufferPool,
    ) -> Result<Option<(PageReadGuard<'p>, Cursor)>, TreeError> {
        let Some(p) = self.pos else {
            return Ok(None);
        };
        let unchanged = |g: &PageReadGuard<'_>, tree: &BTree| {
            validate(g, tree.id(p.page), tree.index_id, Some(0)).is_ok() && g.lsn() == p.lsn
        };
        if let Some(at) = p.at {
            // The last visit stopped inside the leaf: continue there if it is unchanged.
            let g = pool.get_read(self.tree.id(p.page))?;
            if unchanged(&g, &self.tree) {
                let c = if self.reverse { before(&g, at)? } else { at };
                return Ok(Some((g, c)));
            }
            drop(g);
            self.guard.reset();
            return Ok(Some(self.tree.seek_leaf(pool, self.restore_seek())?));
        }
        let (name, link) = if self.reverse {
            ("PREV", p.prev)
        } else {
            ("NEXT", p.next)
        };
        if link == p.page {
            return Err(self
                .tree
                .corrupt(p.page, format!("the leaf's {name} names the leaf itself")));
        }
        if self.reverse {
            if p.prev == NIL {
                return Ok(None);
            }
            // Left page first, then the page we came from: left to right, as every thread
            // that holds two leaves latches them. If the page we came from is unchanged, its
            // PREV is still the left page and nobody can be relinking the two: the left page
            // must link back to it.
            let left = pool.get_read(self.tree.id(p.prev))?;
            let cur = pool.get_read(self.tree.id(p.page))?;
            if unchanged(&cur, &self.tree) {
                self.check_sibling(&left, p.page)?;
                drop(cur);
                let c = self.tree.seek_on(&left, 0, Seek::Last)?;
                return Ok(Some((left, c)));
            }
            drop(cur);
            drop(left);
        } else {
            if p.next == NIL {
                return Ok(None);
            }
            let cur = pool.get_read(self.tree.id(p.page))?;
            if unchanged(&cur, &self.tree) {
                let g = pool.get_read(self.tree.id(p.next))?;
                self.check_sibling(&g, p.page)?;
                drop(cur);
                return Ok(Some((g, Cursor::INFIMUM)));
            }
        }
        // A descent from the root: the sibling walk starts anew.
        self.guard.reset();
        Ok(Some(self.tree.seek_leaf(pool, self.restore_seek())?))
    }

    /// True if a record is below the start bound (compared on the bound's fields).
    fn before_start(&self, page: &[u8], origin: usize) -> Result<bool, TreeError> {
        let layout = &self.tree.leaf;
        Ok(match &self.start {
            Bound::Included(s) => {
                layout.compare(s, page, origin, 0)?.0 == std::cmp::Ordering::Greater
            }
            Bound::Excluded(s) => layout.compare(s, page, origin, 0)?.0 != std::cmp::Ordering::Less,
            Bound::Unbounded => false,
        })
    }

    /// True if a record is above the end bound (compared on the bound's fields).
    fn after_end(&self, page: &[u8], origin: usize) -> Result<bool, TreeError> {
        let layout = &self.tree.leaf;
        Ok(match &self.end {
            Bound::Included(e) => layout.compare(e, page, origin, 0)?.0 == std::cmp::Ordering::Less,
            Bound::Excluded(e) => {
                layout.compare(e, page, origin, 0)?.0 != std::cmp::Ordering::Greater
            }
            Bound::Unbounded => false,
        })
    }

    /// Records decoded so far (each record this scan returned or holds to return next, or
    /// handed to a [`RangeCursor::visit_in`] closure, and no other): what a limit or a batch
    /// saves is visible here.
    pub fn decoded(&self) -> u64 {
        self.decoded
    }

    /// Walks the records of the range on the latched leaf `g` from the position `at` it was
    /// reached with, in the scan's direction, calling `per` on each until it returns true
    /// (the leaf may hold more: a later visit continues after that record) or the range or
    /// the leaf ends (the range's end sets `done`). Returns the last record `per` got and
    /// whether `per` stopped the walk.
    fn walk_leaf<E: From<TreeError>>(
        &mut self,
        g: &[u8],
        at: At,
        mut per: impl FnMut(&mut Self, &[u8], Cursor) -> Result<bool, E>,
    ) -> Result<(Option<Cursor>, bool), E> {
        let mut last = None;
        let (on, at) = match at {
            At::On(c) => (Some(c), c),
            At::After(c) => (None, c),
        };
        if self.reverse {
            // Records link forwards only: collect the origins up to the position, then walk
            // them backwards.
            let mut origins = Vec::new();
            if !at.is_infimum() {
                for c in node::records(g) {
                    let c = c.map_err(TreeError::from)?;
                    origins.push(c);
                    if c == at {
                        break;
                    }
                }
            }
            for &c in origins.iter().rev() {
                if self.after_end(g, c.origin())? {
                    continue;
                }
                if self.before_start(g, c.origin())? {
                    self.done = true;
                    break;
                }
                last = Some(c);
                if per(self, g, c)? {
                    return Ok((last, true));
                }
            }
        } else {
            // A walk that starts on a record starts on one whose key is the start bound's.
            let mut started = on.is_some() || matches!(self.start, Bound::Unbounded);
            for c in on.map(Ok).into_iter().chain(node::records_after(g, at)) {
                let c = c.map_err(TreeError::from)?;
                if !started {
                    if self.before_start(g, c.origin())? {
                        continue;
                    }
                    started = true;
                }
                if self.after_end(g, c.origin())? {
                    self.done = true;
                    break;
                }
                last = Some(c);
                if per(self, g, c)? {
                    return Ok((last, true));
                }
            }
        }
        Ok((last, false))
    }

    /// Remembers where a visit of the latched leaf `g` left it: the key of `last` (the last
    /// record taken, where a search restores from) and the leaf's page, LSN and links; `full`
    /// if the visit stopped inside the leaf, after `last`.
    fn leave(
        &mut self,
        g: &PageReadGuard<'_>,
        last: Option<Cursor>,
        full: bool,
    ) -> Result<(), TreeError> {
        if let Some(c) = last {
            self.last = Some(self.tree.leaf.key_of(g, c.origin())?);
        }
        let no = g.page_id().page_no;
        let bad = |e: minnow_page::PageError| self.tree.corrupt(no, e.to_string());
        self.pos = Some(Pos {
            page: no,
            lsn: g.lsn(),
            prev: super::page::prev(g).map_err(bad)?,
            next: super::page::next(g).map_err(bad)?,
            at: if full { last } else { None },
        });
        Ok(())
    }
}

/// The record before `c` on `page` (the infimum if `c` is the first): where a backward
/// visit that stopped at `c` continues.
fn before(page: &[u8], c: Cursor) -> Result<Cursor, TreeError> {
    let mut prev = Cursor::INFIMUM;
    for r in node::records(page) {
        let r = r?;
        if r == c {
            return Ok(prev);
        }
        prev = r;
    }
    // `c` is gone although the leaf is unchanged: only a corrupt page does that.
    Err(TreeError::Node(node::NodeError::BadCursor {
        at: c.origin(),
        what: "a scan's last record is not on its unchanged leaf",
    }))
}
