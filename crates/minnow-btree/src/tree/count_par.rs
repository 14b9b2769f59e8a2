//! A parallel count: the leaf level cut into key ranges, each range counted on its own thread.
//!
//! The count of `count` is one walk along the leaf level, and on a large table that walk is
//! bound by memory: each record's next pointer is a load that waits for the one before. InnoDB
//! 8.0 answers `SELECT COUNT(*)` with its parallel reader (`innodb_parallel_read_threads`,
//! default 4): it cuts the index into ranges from the node pointers of its upper levels and
//! scans each range on a worker thread. [`BTree::count_visible_parallel`] does the same:
//!
//! 1. **Plan.** From the root down, level by level, read the node pages and sum their
//!    `PAGE_N_RECS` until a level has enough node pointers (level 1, where there is one per
//!    leaf, or [`DEEP_ENOUGH`] of them higher up). A tree whose level 1 has fewer pointers
//!    than the caller's `min_leaves` is counted by the serial walk: for a few hundred leaves
//!    the threads cost more than they save. Otherwise the keys of evenly spaced node
//!    pointers of that level become the boundaries of [`RANGES_PER_THREAD`] ranges a thread.
//! 2. **Count.** Each range `[lo, hi)` is counted by [`BTree::count_range`]: a descent to the
//!    leaf where `lo` belongs, then the same latch-coupled walk as the serial count, up to the
//!    first record at or past `hi`. Threads (a `std::thread::scope`, the calling thread one of
//!    them) take ranges from a shared counter until none is left, so a slow range does not
//!    hold up a whole share. Every range asks the same two questions of the same read view.
//! 3. **Sum.** The ranges' outcomes add up in key order into one [`Counted`].
//!
//! **Why it counts each record once while writers split and merge leaves.** The planning
//! reads node pages one at a time, without coupling, so a page it reads may have been split,
//! merged or freed since its parent named it: a page that is no longer a node page of this
//! index at that level is skipped, and the boundary keys are sorted and deduplicated. That
//! makes them *some* increasing keys, which is all the count needs: the ranges are defined by
//! keys, not by pages, so they split the key space exactly whatever the tree looks like when
//! each is walked. Within a range the walk is the serial walk (the descent couples from the
//! root, the leaf level is walked by coupling; a split or merge either happened before the
//! walk reached a page or waits for its latch), so it sees every record of its key range that
//! exists throughout the walk, once. The records that may appear or vanish meanwhile are the
//! writes of transactions the read view does not see (decided from undo as in the serial
//! count), and purge removes only records that no view sees: the count of the view is exact,
//! as the serial count's is.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use minnow_buf::BufferPool;

use super::count::Counted;
use super::page::{child_of, validate};
use super::{BTree, TreeError};
use crate::node;
use crate::record::{INFO_MIN_REC, SearchKey};

/// Ranges planned per thread: threads take ranges from a shared counter, so a few per thread
/// even out ranges of unequal cost (leaves with records to decide, leaves not in memory).
const RANGES_PER_THREAD: usize = 16;

/// The planning stops descending at a level with this many node pointers: there is a range
/// boundary for every thread there already, and it reads no more than this many node pages.
const DEEP_ENOUGH: usize = 4096;

/// How [`BTree::count_visible_parallel`] cuts the walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parallel {
    /// Threads that count at once, the calling thread included; 1 (or 0) is the serial walk.
    pub threads: usize,
    /// A tree with fewer leaves than this is counted by the serial walk.
    pub min_leaves: usize,
}

impl BTree {
    /// [`BTree::count_visible`] on `par.threads` threads, each counting ranges of the leaf
    /// level cut at keys of the upper levels' node pointers; see the module docs. The same
    /// answer as the serial count: the records in [`Counted::unresolved`] come in key order
    /// too. The first error of any range ends the count.
    pub fn count_visible_parallel(
        &self,
        pool: &BufferPool,
        seen_below: u64,
        sees_trx: &(dyn Fn(u64) -> bool + Sync),
        par: Parallel,
    ) -> Result<Counted, TreeError> {
        let bounds = if par.threads > 1 {
            self.count_bounds(pool, par.threads * RANGES_PER_THREAD, par.min_leaves)?
        } else {
            Vec::new()
        };
        if bounds.is_empty() {
            return self.count_visible(pool, seen_below, sees_trx);
        }
        let ranges = bounds.len() + 1;
        let (next, failed) = (AtomicUsize::new(0), AtomicBool::new(false));
        let work = || {
            let mut done = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= ranges || failed.load(Ordering::Relaxed) {
                    return done;
                }
                let lo = i.checked_sub(1).and_then(|j| bounds.get(j));
                let mut c = Counted::default();
                let r = self.count_range(pool, lo, bounds.get(i), seen_below, sees_trx, &mut c);
                failed.fetch_or(r.is_err(), Ordering::Relaxed);
                done.push((i, r.map(|()| c)));
            }
        };
        let mut parts = std::thread::scope(|s| {
            let helpers: Vec<_> = (1..par.threads.min(ranges))
                .map(|_| s.spawn(work))
                .collect();
            let mut parts = work();
            for h in helpers {
                match h.join() {
                    Ok(more) => parts.extend(more),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
            parts
        });
        parts.sort_by_key(|(i, _)| *i);
        let mut out = Counted {
            ranges: parts.len() as u64,
            ..Counted::default()
        };
        for (_, part) in parts {
            let part = part?;
            out.visible += part.visible;
            out.unresolved.extend(part.unresolved);
            out.leaves += part.leaves;
            out.whole_leaves += part.whole_leaves;
            out.header_leaves += part.header_leaves;
            out.max_trx_id = out.max_trx_id.max(part.max_trx_id);
        }
        Ok(out)
    }

    /// Up to `parts - 1` increasing keys that cut the leaf level into about equal ranges, from
    /// the node pointers of the lowest level with enough of them (see the module docs); none
    /// for a tree that is one leaf or has fewer than `min_leaves` leaves.
    pub(crate) fn count_bounds(
        &self,
        pool: &BufferPool,
        parts: usize,
        min_leaves: usize,
    ) -> Result<Vec<SearchKey>, TreeError> {
        let mut level = {
            let root = pool.get_read(self.id(self.root))?;
            validate(&root, self.id(self.root), self.index_id, None)?
        };
        let mut pages = vec![self.root];
        while level > 0 {
            // (page, its node pointers) for the pages still at this level.
            let mut sized = Vec::with_capacity(pages.len());
            for &no in &pages {
                let g = pool.get_read(self.id(no))?;
                if validate(&g, self.id(no), self.index_id, Some(level)).is_err() {
                    continue; // changed since its parent named it: a plan is only a hint
                }
                sized.push((no, usize::from(node::Hdr::read(&g)?.n_recs)));
            }
            let pointers: usize = sized.iter().map(|&(_, n)| n).sum();
            if level == 1 && pointers < min_leaves {
                return Ok(Vec::new());
            }
            if level == 1 || pointers >= DEEP_ENOUGH {
                return self.keys_at(pool, &sized, level, pointers, parts);
            }
            pages = self.children(pool, &sized, level)?;
            level -= 1;
        }
        Ok(Vec::new())
    }

    /// The child page numbers of the node pages `sized` at `level`, in key order.
    fn children(
        &self,
        pool: &BufferPool,
        sized: &[(u32, usize)],
        level: u16,
    ) -> Result<Vec<u32>, TreeError> {
        let mut out = Vec::new();
        for &(no, _) in sized {
            let g = pool.get_read(self.id(no))?;
            if validate(&g, self.id(no), self.index_id, Some(level)).is_err() {
                continue; // changed since it was sized: a plan is only a hint
            }
            for c in node::records(&g) {
                out.push(child_of(&self.node, &g, c?.origin())?);
            }
        }
        Ok(out)
    }

    /// The keys of the node pointers at positions `total * j / parts` (`j` from 1) of the
    /// pages `sized` at `level`, taken left to right, sorted and without repeats.
    fn keys_at(
        &self,
        pool: &BufferPool,
        sized: &[(u32, usize)],
        level: u16,
        total: usize,
        parts: usize,
    ) -> Result<Vec<SearchKey>, TreeError> {
        let parts = parts.min(total).max(1);
        let mut wanted = (1..parts).map(|j| total * j / parts).peekable();
        let mut keys = Vec::new();
        let mut first = 0; // position of the page's first pointer
        for &(no, n) in sized {
            let end = first + n;
            if wanted.peek().is_some_and(|&w| w < end) {
                let g = pool.get_read(self.id(no))?;
                if validate(&g, self.id(no), self.index_id, Some(level)).is_ok() {
                    for (i, c) in node::records(&g).enumerate() {
                        let origin = c?.origin();
                        if wanted.peek() != Some(&(first + i)) {
                            continue;
                        }
                        wanted.next();
                        let min_rec = node::header_at(&g, node::Cursor::at(origin))?.info_bits
                            & INFO_MIN_REC
                            != 0;
                        if !min_rec {
                            keys.push(self.node.key_of(&g, origin)?);
                        }
                    }
                }
            }
            // A page changed since it was sized may have taken its positions with it.
            while wanted.peek().is_some_and(|&w| w < end) {
                wanted.next();
            }
            first = end;
        }
        keys.sort();
        keys.dedup();
        Ok(keys)
    }
}
