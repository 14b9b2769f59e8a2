//! Descents from the root to a leaf, in the three ways the tree needs.
//!
//! - [`BTree::leaf_for_read`]: first optimistically (the `olc` module: node pages read in
//!   place without latches, versions validated, only the leaf latched), else shared latch
//!   coupling. Hold the parent's shared latch, latch the child shared, release the parent. A
//!   reader holds at most two latches, for an instant.
//! - [`BTree::leaf_for_write`] (optimistic): the same coupling down to level 1, then the leaf
//!   is latched *exclusively* through the caller's mtr. If the root is itself the leaf, it is
//!   read shared first (to learn that), released, then latched exclusively and checked again:
//!   a root raise in between sends the caller round again.
//! - [`BTree::latch_path`] (pessimistic): exclusive latches from the root down, held by the
//!   mtr until it commits. On each level below the root it latches, left to right: the left
//!   sibling if it has the same parent (a merge partner), the path page, its right sibling
//!   (whose `PREV` a split or merge rewrites) and, when the right sibling has the same parent,
//!   the right sibling's right sibling (a merge of the right sibling into this page rewrites
//!   its `PREV`). A level is finished before the next one starts, which keeps the global
//!   latch order top-down, left to right. A node page that is **safe** for the operation's
//!   [`Intent`] (it can take the index's longest node pointer without a split, for an insert;
//!   it stays above the merge threshold without it, for a delete) cannot pass a change
//!   upwards: the mtr releases every latch above it and its left sibling
//!   ([`minnow_buf::Mtr::release`]; none of them was changed), does not latch its right
//!   siblings, and the path returned starts at it. The tree module's docs say why this is
//!   sound without an index latch.

use minnow_buf::{BufferPool, Mtr, PageHandle, PageReadGuard};
use minnow_page::PageId;

use super::page::{NIL, capacity, child_of, next, prev, validate};
use super::{BTree, TreeError};
use crate::node::{self, Cursor};
use crate::record::SearchKey;

thread_local! {
    /// Descents from the root this thread has started (see [`descents`]).
    static DESCENTS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many descents from the root (shared, optimistic or pessimistic, in any tree) the
/// calling thread has started so far. Tests compare two readings to prove how many times an
/// operation walked down a tree; a hinted insert or a probe's re-check by page number walks
/// none.
pub fn descents() -> u64 {
    DESCENTS.with(|d| d.get())
}

/// Counts one descent for [`descents`].
pub(crate) fn count_descent() {
    DESCENTS.with(|d| d.set(d.get() + 1));
}

/// More levels than this is taken as a corrupt root (a 4 KiB-page tree of 2^32 records is
/// far lower).
pub(crate) const MAX_LEVEL: u16 = 32;

/// What a pessimistic descent is for, which decides the ancestors it may let go of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Intent {
    /// An insert (or an update that grew a record): a node page is safe if it can take the
    /// largest node pointer of the index without splitting.
    Insert,
    /// A delete: a node page is safe if it stays at least the merge threshold
    /// ([`BTree::merge_fill`]) full after losing the largest node pointer of the index, and
    /// keeps at least two records.
    Delete,
    /// Keep every latch to commit (the compression splits, which cut a page at any level).
    Keep,
}

/// A page X-latched by an mtr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Latched {
    /// Page number.
    pub no: u32,
    /// The mtr's handle.
    pub h: PageHandle,
}

/// One level of a pessimistically latched path.
#[derive(Debug, Clone)]
pub(crate) struct Level {
    /// The B-tree level.
    pub level: u16,
    /// The page on the path.
    pub page: Latched,
    /// Its left sibling, if that has the same parent (`None` on a safe page: see
    /// [`Intent`]).
    pub left: Option<Latched>,
    /// Its right sibling (any parent; `None` on a safe page).
    pub right: Option<Latched>,
    /// True if the right sibling has the same parent.
    pub right_same_parent: bool,
    /// The right sibling's right sibling, latched when the right sibling has the same parent
    /// (a merge of it into the page rewrites its `PREV`).
    pub right2: Option<Latched>,
}

impl BTree {
    pub(crate) fn corrupt(&self, page_no: u32, what: impl Into<String>) -> TreeError {
        TreeError::Corrupt {
            page: self.id(page_no),
            what: what.into(),
        }
    }

    /// The node pointer to follow on node page `page` (page `no`) for `key` (`None`: the
    /// leftmost), and its child page number.
    pub(crate) fn child_for(
        &self,
        no: u32,
        page: &[u8],
        key: Option<&SearchKey>,
    ) -> Result<(Cursor, u32), TreeError> {
        let c = match key {
            Some(k) => node::search(page, &self.node, k)?.cursor,
            None => node::next(page, Cursor::INFIMUM)?,
        };
        if !c.is_user() {
            return Err(self.corrupt(no, "node page has no pointer for the key"));
        }
        Ok((c, child_of(&self.node, page, c.origin())?))
    }

    pub(super) fn root_level(&self, page: &[u8]) -> Result<u16, TreeError> {
        let level = validate(page, self.id(self.root), self.index_id, None)?;
        if level > MAX_LEVEL {
            return Err(self.corrupt(self.root, format!("root at level {level}")));
        }
        Ok(level)
    }

    /// The leaf that holds `key` (`None`: the leftmost leaf), shared-latched: reached by an
    /// optimistic descent (the `olc` module) where the key allows, else (and after failed
    /// attempts) by shared latch coupling from the root.
    pub(crate) fn leaf_for_read<'p>(
        &self,
        pool: &'p BufferPool,
        key: Option<&SearchKey>,
    ) -> Result<PageReadGuard<'p>, TreeError> {
        count_descent();
        if let Some(k) = key
            && let Some(leaf) = self.leaf_optimistic(pool, k)?
        {
            return Ok(leaf);
        }
        let mut g = pool.get_read(self.id(self.root))?;
        let mut level = self.root_level(&g)?;
        while level > 0 {
            let (_, child) = self.child_for(g.page_id().page_no, &g, key)?;
            let id = self.id(child);
            let c = pool.get_read(id)?;
            validate(&c, id, self.index_id, Some(level - 1))?;
            g = c; // the parent's latch is released only now: coupling
            level -= 1;
        }
        Ok(g)
    }

    /// Optimistic writer descent: shared coupling to level 1, the leaf latched exclusively
    /// by `mtr`. `None` if the root turned out not to be a leaf after all (retry).
    pub(crate) fn leaf_for_write(
        &self,
        pool: &BufferPool,
        mtr: &mut Mtr<'_>,
        key: &SearchKey,
    ) -> Result<Option<PageHandle>, TreeError> {
        self.leaf_for_write_as(pool, mtr, key, false)
    }

    /// [`BTree::leaf_for_write`] with the leaf latched in place (`in_place`,
    /// [`Mtr::get_write_in_place`]) for a caller that changes its records only in place.
    pub(crate) fn leaf_for_write_as(
        &self,
        pool: &BufferPool,
        mtr: &mut Mtr<'_>,
        key: &SearchKey,
        in_place: bool,
    ) -> Result<Option<PageHandle>, TreeError> {
        count_descent();
        let latch = |mtr: &mut Mtr<'_>, id| match in_place {
            true => mtr.get_write_in_place(id),
            false => mtr.get_write(id),
        };
        let rid = self.id(self.root);
        let mut g = pool.get_read(rid)?;
        let mut level = self.root_level(&g)?;
        if level == 0 {
            drop(g);
            let h = latch(mtr, rid)?;
            let level = self.root_level(mtr.page(h))?;
            return Ok((level == 0).then_some(h));
        }
        loop {
            let (_, child) = self.child_for(g.page_id().page_no, &g, Some(key))?;
            let id = self.id(child);
            if level == 1 {
                let h = latch(mtr, id)?;
                drop(g);
                validate(mtr.page(h), id, self.index_id, Some(0))?;
                return Ok(Some(h));
            }
            let c = pool.get_read(id)?;
            validate(&c, id, self.index_id, Some(level - 1))?;
            g = c;
            level -= 1;
        }
    }

    fn latch(&self, mtr: &mut Mtr<'_>, no: u32, level: u16) -> Result<Latched, TreeError> {
        let id: PageId = self.id(no);
        let h = mtr.get_write(id)?;
        validate(mtr.page(h), id, self.index_id, Some(level))?;
        Ok(Latched { no, h })
    }

    /// The start of every pessimistic operation: a new mtr, the X-latched path for `key`
    /// ([`BTree::latch_path`] for `intent`), the leaf's index in it and handle, and where
    /// `key` falls on the leaf.
    pub(crate) fn latch_leaf<'p>(
        &self,
        pool: &'p BufferPool,
        key: &SearchKey,
        intent: Intent,
    ) -> Result<PessimisticLeaf<'p>, TreeError> {
        self.latch_leaf_with_room(pool, key, intent, 0)
    }

    /// [`BTree::latch_leaf`] with an mtr that reserves `room` bytes of redo beyond the usual
    /// margin (a prepared record's overflow chains:
    /// [`Prepared::room`](super::overflow::Prepared::room)).
    pub(crate) fn latch_leaf_with_room<'p>(
        &self,
        pool: &'p BufferPool,
        key: &SearchKey,
        intent: Intent,
        room: u64,
    ) -> Result<PessimisticLeaf<'p>, TreeError> {
        let mut mtr = pool.mtr_with_room(room)?;
        let path = self.latch_path(&mut mtr, key, intent)?;
        let last = path.len().saturating_sub(1);
        let leaf = self.handle(&path, last)?;
        let found = node::search(mtr.page(leaf), &self.leaf, key)?;
        Ok(PessimisticLeaf {
            mtr,
            path,
            last,
            leaf,
            found,
        })
    }

    /// True if node page `page` cannot split or merge, whatever the operation `intent`
    /// does below it (see [`Intent`]). Leaves are never judged: the operation itself decides
    /// there.
    fn is_safe(&self, page: &[u8], intent: Intent) -> Result<bool, TreeError> {
        let max = self.node.max_record_len();
        match intent {
            Intent::Keep => Ok(false),
            Intent::Insert => Ok(self.zip_room(page, max)?
                && (node::fits(page, &self.node, max)? || node::fits_after_reorganize(page, max)?)),
            Intent::Delete => {
                let left = node::used_bytes(page)?.saturating_sub(max);
                Ok(node::n_recs(page)? > 2
                    && left as f64 >= self.merge_fill * capacity(page.len()) as f64)
            }
        }
    }

    /// Releases every latch of `path` (pages the descent only looked at) and `also`.
    fn release_all(
        &self,
        mtr: &mut Mtr<'_>,
        path: &mut Vec<Level>,
        also: Option<Latched>,
    ) -> Result<(), TreeError> {
        for l in path.drain(..) {
            let pages = [l.left, Some(l.page), l.right, l.right2];
            for p in pages.into_iter().flatten() {
                mtr.release(p.h)?;
            }
        }
        if let Some(p) = also {
            mtr.release(p.h)?;
        }
        Ok(())
    }

    /// Pessimistic descent for `key`: the path from the topmost page the operation may change
    /// (the root, unless a safe page let go of it: index 0) to the leaf, with the siblings
    /// each level may need, all X-latched by `mtr`. A node page that is safe for `intent`
    /// ([`BTree::is_safe`]) releases every latch above it and its left sibling, and its right
    /// siblings are not latched at all. See the module docs.
    pub(crate) fn latch_path(
        &self,
        mtr: &mut Mtr<'_>,
        key: &SearchKey,
        intent: Intent,
    ) -> Result<Vec<Level>, TreeError> {
        count_descent();
        let h = mtr.get_write(self.id(self.root))?;
        let root = Latched { no: self.root, h };
        let mut level = self.root_level(mtr.page(root.h))?;
        let mut path = vec![Level {
            level,
            page: root,
            left: None,
            right: None,
            right_same_parent: false,
            right2: None,
        }];
        while level > 0 {
            let parent = path.last().map_or(root, |l| l.page);
            let ppage = mtr.page(parent.h);
            let (c, child) = self.child_for(parent.no, ppage, Some(key))?;
            let (left_no, right_no) = self.neighbours(ppage, c)?;
            level -= 1;
            let left = left_no.map(|no| self.latch(mtr, no, level)).transpose()?;
            let page = self.latch(mtr, child, level)?;
            let page_prev =
                prev(mtr.page(page.h)).map_err(|e| self.corrupt(child, e.to_string()))?;
            if let Some(l) = left {
                let l_next = next(mtr.page(l.h)).map_err(|e| self.corrupt(l.no, e.to_string()))?;
                if l_next != child || page_prev != l.no {
                    return Err(self.corrupt(child, "sibling links disagree with the parent"));
                }
            }
            if level > 0 && self.is_safe(mtr.page(page.h), intent)? {
                // Nothing above `page` changes, and `page` neither splits nor merges: only
                // it and what lies below stay latched.
                self.release_all(mtr, &mut path, left)?;
                path.push(Level {
                    level,
                    page,
                    left: None,
                    right: None,
                    right_same_parent: false,
                    right2: None,
                });
                continue;
            }
            let rno = next(mtr.page(page.h)).map_err(|e| self.corrupt(child, e.to_string()))?;
            let right = (rno != NIL)
                .then(|| self.latch(mtr, rno, level))
                .transpose()?;
            let right_same_parent = match right_no {
                Some(r) if r == rno => true,
                Some(_) => {
                    return Err(self.corrupt(child, "right sibling is not the parent's next child"));
                }
                None => false,
            };
            let mut right2 = None;
            if let (true, Some(r)) = (right_same_parent, right) {
                let r2 = next(mtr.page(r.h)).map_err(|e| self.corrupt(r.no, e.to_string()))?;
                if r2 != NIL {
                    right2 = Some(self.latch(mtr, r2, level)?);
                }
            }
            path.push(Level {
                level,
                page,
                left,
                right,
                right_same_parent,
                right2,
            });
        }
        Ok(path)
    }

    /// The children of the node pointers just before and just after `c` on node page `page`.
    fn neighbours(&self, page: &[u8], c: Cursor) -> Result<(Option<u32>, Option<u32>), TreeError> {
        let mut before = None;
        let mut prev_c = None;
        for r in node::records(page) {
            let r = r?;
            if r == c {
                before = prev_c;
                break;
            }
            prev_c = Some(r);
        }
        let left = before
            .map(|b| child_of(&self.node, page, b.origin()))
            .transpose()?;
        let after = node::next(page, c)?;
        let right = after
            .is_user()
            .then(|| child_of(&self.node, page, after.origin()))
            .transpose()?;
        Ok((left, right))
    }
}

/// What [`BTree::latch_leaf`] hands a pessimistic operation.
pub(crate) struct PessimisticLeaf<'p> {
    /// The operation's mtr, holding every latch of `path`.
    pub mtr: Mtr<'p>,
    /// Root (index 0) to leaf.
    pub path: Vec<Level>,
    /// The leaf's index in `path`.
    pub last: usize,
    /// The leaf.
    pub leaf: PageHandle,
    /// Where the key falls on the leaf.
    pub found: node::SearchResult,
}
