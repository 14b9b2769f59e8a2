//! Range scans: a cursor that walks the leaves through their sibling links.
//!
//! The cursor never keeps a latch between two calls of `next` (a caller that scans and
//! writes in one thread would otherwise deadlock with itself). Instead it copies the
//! qualifying records of one leaf under a shared latch and remembers where it was: the leaf's
//! page number, its LSN and its right sibling. To continue, it latches that leaf again; if the
//! LSN is unchanged nothing on it moved, so its `NEXT` link is still right and the cursor
//! couples to the right sibling (latch it, then release the leaf). If the LSN changed (an
//! insert, a split, a merge, or the page was freed, which rewrites it), the cursor searches
//! again from the root for the last key it returned and skips what it has seen: InnoDB's
//! "restore the persistent cursor".

use std::collections::VecDeque;
use std::ops::Bound;

use minnow_buf::{BufferPool, PageReadGuard};
use minnow_redo::Lsn;

use super::page::{NIL, validate};
use super::{BTree, Entry, TreeError};
use crate::node;
use crate::record::{SearchKey, Value};

/// What a range scan returns: keys within `start..end` (each bound inclusive, exclusive or
/// open; bounds are full keys), in ascending order, at most `limit` of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanRange {
    /// The lower bound.
    pub start: Bound<Vec<Value>>,
    /// The upper bound.
    pub end: Bound<Vec<Value>>,
    /// The most records to return (`None`: all).
    pub limit: Option<usize>,
    /// The off-page fields to fetch, by stored field index (`None`: all); see
    /// [`crate::tree::overflow`].
    pub fetch: Option<Vec<usize>>,
}

impl ScanRange {
    /// Every record.
    pub fn all() -> ScanRange {
        ScanRange {
            start: Bound::Unbounded,
            end: Bound::Unbounded,
            limit: None,
            fetch: None,
        }
    }

    /// Records with keys within the bounds.
    pub fn new(start: Bound<Vec<Value>>, end: Bound<Vec<Value>>) -> ScanRange {
        ScanRange {
            start,
            end,
            limit: None,
            fetch: None,
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
}

/// Where the cursor stopped: the leaf it read last, as it was.
#[derive(Debug, Clone, Copy)]
struct Pos {
    page: u32,
    lsn: Lsn,
    next: u32,
}

/// A forward range scan ([`BTree::scan`]): an iterator of [`Entry`] (delete-marked records
/// included, flagged). After an error it ends.
pub struct RangeScan<'p> {
    tree: BTree,
    pool: &'p BufferPool,
    start: Bound<SearchKey>,
    end: Bound<SearchKey>,
    remaining: Option<usize>,
    fetch: Option<Vec<usize>>,
    buf: VecDeque<Entry>,
    last: Option<SearchKey>,
    pos: Option<Pos>,
    started: bool,
    done: bool,
}

impl std::fmt::Debug for RangeScan<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RangeScan")
            .field("index_id", &self.tree.index_id)
            .field("buffered", &self.buf.len())
            .field("done", &self.done)
            .finish()
    }
}

fn map_bound(tree: &BTree, b: Bound<Vec<Value>>) -> Result<Bound<SearchKey>, TreeError> {
    Ok(match b {
        Bound::Included(k) => Bound::Included(tree.key(&k)?),
        Bound::Excluded(k) => Bound::Excluded(tree.key(&k)?),
        Bound::Unbounded => Bound::Unbounded,
    })
}

impl<'p> RangeScan<'p> {
    pub(crate) fn new(
        tree: BTree,
        pool: &'p BufferPool,
        range: ScanRange,
    ) -> Result<RangeScan<'p>, TreeError> {
        let start = map_bound(&tree, range.start)?;
        let end = map_bound(&tree, range.end)?;
        Ok(RangeScan {
            tree,
            pool,
            start,
            end,
            remaining: range.limit,
            fetch: range.fetch,
            buf: VecDeque::new(),
            last: None,
            pos: None,
            started: false,
            done: false,
        })
    }

    fn start_key(&self) -> Option<&SearchKey> {
        match &self.start {
            Bound::Included(k) | Bound::Excluded(k) => Some(k),
            Bound::Unbounded => None,
        }
    }

    /// The next leaf to read: the first one, the right sibling of the last one, or (if the
    /// last one changed) the leaf found by searching for the last key returned.
    fn next_leaf(&mut self) -> Result<Option<PageReadGuard<'p>>, TreeError> {
        let tree = &self.tree;
        if !self.started {
            self.started = true;
            return Ok(Some(tree.leaf_for_read(self.pool, self.start_key())?));
        }
        let Some(p) = self.pos else {
            return Ok(None);
        };
        if p.next == NIL {
            return Ok(None);
        }
        let id = tree.id(p.page);
        let cur = self.pool.get_read(id)?;
        if validate(&cur, id, tree.index_id, Some(0)).is_ok() && cur.lsn() == p.lsn {
            let nid = tree.id(p.next);
            let g = self.pool.get_read(nid)?;
            validate(&g, nid, tree.index_id, Some(0))?;
            drop(cur);
            return Ok(Some(g));
        }
        drop(cur);
        let key = self.last.as_ref().or(self.start_key());
        Ok(Some(tree.leaf_for_read(self.pool, key)?))
    }

    /// Copies the qualifying records of the next leaf into the buffer.
    fn fill(&mut self) -> Result<(), TreeError> {
        let Some(g) = self.next_leaf()? else {
            self.done = true;
            return Ok(());
        };
        let layout = &self.tree.leaf;
        for c in node::records(&g) {
            let c = c?;
            let key = layout.key_of(&g, c.origin())?;
            if self.last.as_ref().is_some_and(|l| key <= *l) {
                continue;
            }
            let before_start = match &self.start {
                Bound::Included(s) => key < *s,
                Bound::Excluded(s) => key <= *s,
                Bound::Unbounded => false,
            };
            if before_start {
                continue;
            }
            let past_end = match &self.end {
                Bound::Included(e) => key > *e,
                Bound::Excluded(e) => key >= *e,
                Bound::Unbounded => false,
            };
            if past_end {
                self.done = true;
                break;
            }
            self.buf.push_back(Entry {
                values: (self.tree).decode_leaf(
                    self.pool,
                    &g,
                    c.origin(),
                    self.fetch.as_deref(),
                )?,
                deleted: node::header_at(&g, c)?.deleted(),
            });
            self.last = Some(key);
        }
        let next = super::page::next(&g)
            .map_err(|e| self.tree.corrupt(g.page_id().page_no, e.to_string()))?;
        self.pos = Some(Pos {
            page: g.page_id().page_no,
            lsn: g.lsn(),
            next,
        });
        Ok(())
    }
}

impl Iterator for RangeScan<'_> {
    type Item = Result<Entry, TreeError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.remaining == Some(0) {
                return None;
            }
            if let Some(e) = self.buf.pop_front() {
                if let Some(r) = self.remaining.as_mut() {
                    *r -= 1;
                }
                return Some(Ok(e));
            }
            if self.done {
                return None;
            }
            if let Err(e) = self.fill() {
                self.done = true;
                return Some(Err(e));
            }
        }
    }
}
