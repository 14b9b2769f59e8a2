//! Page relocation: packing a tree into the low end of its segments, so that the extents
//! at the end of the tablespace empty and can be cut off the file.
//!
//! Random inserts split pages into new ones wherever the allocator finds room (often the end
//! of the file), and removals and merges free pages wherever they happen to sit: after a
//! large removal a tree holds its live pages spread over the whole file with free pages
//! between them, and the file cannot shrink, since only free extents *at its end* can be cut
//! (`crate::space::shrink_tail`). [`BTree::pack`] moves each non-root page whose number is
//! above the lowest free page of its segment down into that free page, as InnoDB's
//! tablespace defragmentation and SQLite's incremental vacuum relocate pages: the upper
//! extents of the segment empty, go back to the space, and a shrink can take them.
//!
//! **One move is one mini-transaction** ([`BTree::relocate`]), latching top-down and left to
//! right as every structure change does (docs/ARCHITECTURE.md's latch order: tree pages,
//! then the allocator's pages): the path from the root to the page's parent, then the
//! page's left sibling, the page and its right sibling. In it the new page is allocated
//! (the lowest free page of the segment) and formatted, the records move over (with the
//! page's `PAGE_MAX_TRX_ID`, as a split carries it), both siblings' links and the parent's
//! node pointer are rewritten to the new number, and the old page is freed (its adaptive
//! hash entries go with it: [`SearchHook::page_freed`](super::SearchHook::page_freed)). The
//! mtr's redo makes the move atomic: recovery sees the tree before it or after it, never
//! half moved. The root never moves (the dictionary names it), nor does a compressed tree's
//! page (its compressed image would have to be rebuilt).
//!
//! A move is safe under concurrent use of the tree (the latches are those of a merge), but
//! it is meant for a quiet tree: the engine packs its trees during a slow shutdown, after
//! purge, when nothing else runs.

use minnow_buf::BufferPool;

use super::page::{NIL, child_of, init_index_page, move_records, next, prev, set_next, set_prev};
use super::{BTree, TreeError};
use crate::node::{self, Cursor};
use crate::space;

/// What [`BTree::relocate`] did with a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Relocation {
    /// The page's new number, if it moved.
    pub to: Option<u32>,
    /// True if it stayed because its segment has no free page below it (in its partly used
    /// extents): no lower page of the segment can move either.
    pub settled: bool,
}

impl BTree {
    /// Moves the non-root pages of the tree that sit above the lowest free page of their
    /// segment down into it ([`BTree::relocate`]), level by level, leaves first, the highest
    /// page of a level first: each move fills the lowest hole with the highest page, so the
    /// fewest pages move, and a level is done when its highest page not yet looked at has
    /// no free page below it. When it returns, no page of a level lies above its segment's
    /// lowest free page (in its partly used extents). Returns how many pages moved; 0 for a
    /// compressed tree.
    pub fn pack(&self, pool: &BufferPool) -> Result<usize, TreeError> {
        if self.zip.is_some() {
            return Ok(0);
        }
        let root_level = {
            let g = pool.get_read(self.id(self.root))?;
            self.root_level(&g)?
        };
        let mut moved = 0;
        for level in 0..root_level {
            let mut pages = self.pages_at(pool, level)?;
            pages.sort_unstable_by(|a, b| b.cmp(a));
            for no in pages {
                let r = self.relocate(pool, no, level)?;
                if r.settled {
                    break;
                }
                moved += usize::from(r.to.is_some());
            }
        }
        Ok(moved)
    }

    /// The page numbers of `level` (below the root's), walking it left to right from its
    /// leftmost page under shared latches.
    fn pages_at(&self, pool: &BufferPool, level: u16) -> Result<Vec<u32>, TreeError> {
        let mut no = self.leftmost_at(pool, level)?;
        let mut pages = Vec::new();
        // A page seen twice means the links loop: stop there rather than walk forever.
        let mut seen = std::collections::HashSet::new();
        while no != NIL {
            if !seen.insert(no) {
                return Err(self.corrupt(no, "a level's sibling links form a cycle"));
            }
            pages.push(no);
            let id = self.id(no);
            let g = pool.get_read(id)?;
            super::page::validate(&g, id, self.index_id, Some(level))?;
            no = next(&g).map_err(|e| self.corrupt(no, e.to_string()))?;
        }
        Ok(pages)
    }

    /// The leftmost page at `level` (below the root's level), by shared latch coupling.
    fn leftmost_at(&self, pool: &BufferPool, level: u16) -> Result<u32, TreeError> {
        let mut g = pool.get_read(self.id(self.root))?;
        let mut at = self.root_level(&g)?;
        let mut no = self.root;
        while at > level {
            let (_, child) = self.child_for(no, &g, None)?;
            let id = self.id(child);
            let c = pool.get_read(id)?;
            super::page::validate(&c, id, self.index_id, Some(at - 1))?;
            g = c;
            no = child;
            at -= 1;
        }
        Ok(no)
    }

    /// Moves page `no` (at `level`, not the root) to the lowest free page of its segment if
    /// that lies below it, in one mtr (see the module docs). A page that is not where a
    /// descent by its first key leads (the tree changed since the caller learned its number),
    /// whose links changed meanwhile, or that is empty, is left as it is.
    pub fn relocate(
        &self,
        pool: &BufferPool,
        no: u32,
        level: u16,
    ) -> Result<Relocation, TreeError> {
        let id = self.id(no);
        // The key and the left sibling, under a shared latch: the mtr latches left to right.
        let (key, left_no, right_no) = {
            let g = pool.get_read(id)?;
            super::page::validate(&g, id, self.index_id, Some(level))?;
            let links = (prev(&g), next(&g));
            let (Ok(l), Ok(r)) = links else {
                return Err(self.corrupt(no, "unreadable sibling links"));
            };
            let first = node::next(&g, Cursor::INFIMUM)?;
            if no == self.root || !first.is_user() || self.zip.is_some() {
                return Ok(Relocation::default());
            }
            (self.layout_at(level).key_of(&g, first.origin())?, l, r)
        };
        let stay = Relocation::default();
        let mut mtr = pool.mtr()?;
        // The parent, by X-latch coupling from the root (nothing above it changes).
        let rh = mtr.get_write(self.id(self.root))?;
        let mut at = self.root_level(mtr.page(rh))?;
        if at <= level {
            return Ok(stay);
        }
        let (mut parent, mut parent_no) = (rh, self.root);
        while at > level + 1 {
            let (_, child) = self.child_for(parent_no, mtr.page(parent), Some(&key))?;
            let c = mtr.get_write(self.id(child))?;
            super::page::validate(mtr.page(c), self.id(child), self.index_id, Some(at - 1))?;
            mtr.release(parent)?;
            (parent, parent_no) = (c, child);
            at -= 1;
        }
        let (ptr, child) = self.child_for(parent_no, mtr.page(parent), Some(&key))?;
        if child != no {
            return Ok(stay);
        }
        let left = (left_no != NIL)
            .then(|| mtr.get_write(self.id(left_no)))
            .transpose()?;
        let p = mtr.get_write(id)?;
        super::page::validate(mtr.page(p), id, self.index_id, Some(level))?;
        let links = (prev(mtr.page(p)), next(mtr.page(p)));
        if links != (Ok(left_no), Ok(right_no)) {
            return Ok(stay);
        }
        if let Some(l) = left {
            super::page::validate(mtr.page(l), self.id(left_no), self.index_id, Some(level))?;
            if next(mtr.page(l)).ok() != Some(no) {
                return Err(self.corrupt(left_no, "left sibling does not link to its right"));
            }
        }
        let right = (right_no != NIL)
            .then(|| mtr.get_write(self.id(right_no)))
            .transpose()?;
        if let Some(r) = right {
            super::page::validate(mtr.page(r), self.id(right_no), self.index_id, Some(level))?;
            if prev(mtr.page(r)).ok() != Some(no) {
                return Err(self.corrupt(right_no, "right sibling does not link to its left"));
            }
        }
        // The allocator's pages come last (after every tree page), as in a split.
        let seg = self.segs.of_level(level).header;
        let low = match space::lowest_free_in(&mut mtr, seg)? {
            Some(low) if low < no => low,
            _ => {
                return Ok(Relocation {
                    to: None,
                    settled: true,
                });
            }
        };
        let q = self.alloc_page(&mut mtr, level, Some(low))?;
        let q_no = mtr.page_id(q).map_or(NIL, |i| i.page_no);
        if q_no != low {
            return Err(self.corrupt(q_no, "the segment's lowest free page was not allocated"));
        }
        init_index_page(&mut mtr, q, self.index_id, level)?;
        set_prev(&mut mtr, q, left_no)?;
        set_next(&mut mtr, q, right_no)?;
        move_records(&mut mtr, p, q, self.layout_at(level), Cursor::INFIMUM)?;
        if let Some(l) = left {
            set_next(&mut mtr, l, q_no)?;
        }
        if let Some(r) = right {
            set_prev(&mut mtr, r, q_no)?;
        }
        // The parent's node pointer: its child page number is the record's last 4 bytes.
        let page = mtr.page(parent);
        let (_, data) = self.node.size_of(page, ptr.origin())?;
        let field = (ptr.origin() + data)
            .checked_sub(4)
            .filter(|_| child_of(&self.node, page, ptr.origin()).ok() == Some(no))
            .filter(|&f| minnow_page::bytes::read_u32(page, f).ok() == Some(no))
            .ok_or_else(|| self.corrupt(parent_no, "node pointer's child field not found"))?;
        mtr.write(parent, field, &q_no.to_be_bytes())?;
        minnow_buf::trace_event!("relocate", index = self.index_id, from = no, to = q_no);
        self.free_page(&mut mtr, no, level)?;
        mtr.commit()?;
        Ok(Relocation {
            to: Some(q_no),
            settled: false,
        })
    }
}
