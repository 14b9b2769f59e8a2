//! [`BTree::check`]: every invariant of the whole tree, for tests and `minnow check`.
//!
//! The walk is depth-first from the root, left to right, copying each page under a shared
//! latch (so it expects no concurrent structural changes: run it on a quiet tree). For every
//! page it checks: type INDEX, the tree's index id, the level its parent implies, the node
//! page's own invariants ([`crate::node::check`]), no page reached twice, and that every key
//! lies within the bounds its ancestors' node pointers give (`[key_i, key_{i+1})`). Inner pages
//! must be non-empty and start with their separator's key; exactly the first record of the
//! leftmost page of each non-leaf level carries `MIN_REC`. Across pages, keys strictly
//! increase along each level, and the `PREV`/`NEXT` links of each level form exactly the
//! left-to-right order of the walk, `FIL_NULL` at both ends. Record counts are summed from the
//! headers, which the page check ties to the record lists.
//!
//! Every off-page field of a leaf record is followed down its overflow chain
//! ([`crate::tree::overflow`]): each page must be of type BLOB with its own page number,
//! part lengths must add up to the reference's length, the chain must end exactly there, and
//! no overflow page may be reached twice (each belongs to one field of one record).
//!
//! A clustered leaf's `PAGE_MAX_TRX_ID`, unless 0 (unknown), must be at least every record's
//! `DB_TRX_ID` ([`crate::node::cover_trx_id`]); the leaves still unknown are counted.

use std::collections::HashSet;

use minnow_buf::BufferPool;

use super::descend::MAX_LEVEL;
use super::page::{NIL, child_of, next, prev, validate};
use super::{BTree, TreeError};
use crate::node;
use crate::record::{INFO_MIN_REC, SearchKey};

/// What [`BTree::check`] found in a valid tree.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TreeStats {
    /// Levels (1 for a tree that is a single leaf).
    pub height: u16,
    /// Pages per level, leaves first.
    pub pages_per_level: Vec<usize>,
    /// User records in the leaves (delete-marked included).
    pub records: u64,
    /// Fill factor of each leaf, left to right ([`crate::node::fill_factor`]).
    pub leaf_fill: Vec<f64>,
    /// The overflow pages of every off-page field, in walk order (each once).
    pub overflow_pages: Vec<u32>,
    /// Clustered leaves whose `PAGE_MAX_TRX_ID` is 0 (unknown: written before the field was
    /// kept there; see [`crate::node::cover_trx_id`]). Every other clustered leaf's bound is
    /// checked against its records.
    pub unbounded_leaves: usize,
}

/// One page as the walk met it.
struct Seen {
    no: u32,
    prev: u32,
    next: u32,
}

struct Walk<'a> {
    tree: &'a BTree,
    pool: &'a BufferPool,
    visited: HashSet<u32>,
    /// Pages per level in walk order, and the last key seen on each level.
    levels: Vec<Vec<Seen>>,
    last_key: Vec<Option<SearchKey>>,
    overflow: HashSet<u32>,
    stats: TreeStats,
}

impl BTree {
    /// Checks every invariant of the tree (see the module docs); the error names the first
    /// page found wrong. Never panics, whatever the bytes.
    pub fn check(&self, pool: &BufferPool) -> Result<TreeStats, TreeError> {
        Ok(self.walk_checked(pool)?.0)
    }

    /// [`BTree::check`], also returning the page numbers of each level (leaves first), left
    /// to right.
    pub(crate) fn walk_checked(
        &self,
        pool: &BufferPool,
    ) -> Result<(TreeStats, Vec<Vec<u32>>), TreeError> {
        let root = {
            let id = self.id(self.root);
            let g = pool.get_read(id)?;
            validate(&g, id, self.index_id, None)?
        };
        if root > MAX_LEVEL {
            return Err(self.corrupt(self.root, format!("root at level {root}")));
        }
        let n = usize::from(root) + 1;
        let mut w = Walk {
            tree: self,
            pool,
            visited: HashSet::new(),
            levels: (0..n).map(|_| Vec::new()).collect(),
            last_key: vec![None; n],
            overflow: HashSet::new(),
            stats: TreeStats {
                height: root + 1,
                ..TreeStats::default()
            },
        };
        w.visit(self.root, root, None, None, true, None)?;
        for (level, pages) in w.levels.iter().enumerate() {
            for (k, p) in pages.iter().enumerate() {
                let want_prev = k
                    .checked_sub(1)
                    .and_then(|j| pages.get(j))
                    .map_or(NIL, |s| s.no);
                let want_next = pages.get(k + 1).map_or(NIL, |s| s.no);
                if p.prev != want_prev || p.next != want_next {
                    return Err(self.corrupt(
                        p.no,
                        format!(
                            "level {level} links prev {} next {}, expected {want_prev} {want_next}",
                            p.prev, p.next
                        ),
                    ));
                }
            }
        }
        w.stats.pages_per_level = w.levels.iter().map(Vec::len).collect();
        let pages = w
            .levels
            .iter()
            .map(|l| l.iter().map(|s| s.no).collect())
            .collect();
        Ok((w.stats, pages))
    }
}

impl Walk<'_> {
    /// Checks page `no` at `level`, whose keys must lie in `[low, high)` (`None`: unbounded)
    /// and, for an inner page, whose first key must equal `first`.
    fn visit(
        &mut self,
        no: u32,
        level: u16,
        low: Option<&SearchKey>,
        high: Option<&SearchKey>,
        leftmost: bool,
        first: Option<&SearchKey>,
    ) -> Result<(), TreeError> {
        let t = self.tree;
        let bad = |what: String| t.corrupt(no, what);
        if !self.visited.insert(no) {
            return Err(bad("page reached twice".into()));
        }
        let id = t.id(no);
        let page = self.pool.get_read(id)?.to_vec();
        validate(&page, id, t.index_id, Some(level))?;
        let layout = t.layout_at(level);
        node::check(&page, layout).map_err(|e| bad(e.to_string()))?;
        let links = (
            prev(&page).map_err(|e| bad(e.to_string()))?,
            next(&page).map_err(|e| bad(e.to_string()))?,
        );
        let slot = self
            .levels
            .get_mut(usize::from(level))
            .ok_or_else(|| bad("level out of range".into()))?;
        slot.push(Seen {
            no,
            prev: links.0,
            next: links.1,
        });
        let mut recs = Vec::new();
        for c in node::records(&page) {
            let c = c?;
            let min = node::header_at(&page, c)?.info_bits & INFO_MIN_REC != 0;
            recs.push((c, layout.key_of(&page, c.origin())?, min));
        }
        if level > 0 && recs.is_empty() {
            return Err(bad("node page without node pointers".into()));
        }
        for (k, (_, key, min)) in recs.iter().enumerate() {
            let want_min = level > 0 && leftmost && k == 0;
            if *min != want_min {
                return Err(bad(format!(
                    "record {k}: MIN_REC is {min}, expected {want_min}"
                )));
            }
            if !min && low.is_some_and(|l| key < l) {
                return Err(bad(format!("record {k} is below its parent's separator")));
            }
            if !min && high.is_some_and(|h| key >= h) {
                return Err(bad(format!("record {k} is not below the next separator")));
            }
            let last = self
                .last_key
                .get_mut(usize::from(level))
                .ok_or_else(|| bad("level out of range".into()))?;
            if !min && last.as_ref().is_some_and(|l| key <= l) {
                return Err(bad(format!(
                    "record {k} is not above the previous page's keys"
                )));
            }
            if !min {
                *last = Some(key.clone());
            }
        }
        if let (Some(f), Some((_, key, false))) = (first, recs.first())
            && key != f
        {
            return Err(bad("first key differs from the parent's separator".into()));
        }
        if level == 0 {
            if t.leaf.trx_id_field().is_some() {
                let bound = node::max_trx_id(&page)?;
                if bound == 0 {
                    self.stats.unbounded_leaves += 1;
                } else {
                    let newest = node::exact_max_trx_id(&page, layout)?;
                    if newest > bound {
                        return Err(bad(format!(
                            "PAGE_MAX_TRX_ID {bound} is below a record's DB_TRX_ID {newest}"
                        )));
                    }
                }
                for (c, _, _) in &recs {
                    t.check_externals(
                        self.pool,
                        &page,
                        no,
                        c.origin(),
                        &mut self.overflow,
                        &mut self.stats.overflow_pages,
                    )?;
                }
            }
            self.stats.records += node::n_recs(&page)? as u64;
            self.stats.leaf_fill.push(node::fill_factor(&page)?);
            return Ok(());
        }
        for (k, (c, key, min)) in recs.iter().enumerate() {
            let child = child_of(&t.node, &page, c.origin())?;
            let child_low = if *min { low } else { Some(key) };
            let child_high = recs.get(k + 1).map(|(_, hk, _)| hk).or(high);
            let child_first = if *min || level == 1 { None } else { Some(key) };
            self.visit(
                child,
                level - 1,
                child_low,
                child_high,
                leftmost && k == 0,
                child_first,
            )?;
        }
        Ok(())
    }
}
