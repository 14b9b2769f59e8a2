//! Deletes: the optimistic one-page delete, and the pessimistic delete that merges
//! under-full pages with a sibling, removes node pointers and lowers the root.

use minnow_buf::{BufferPool, Mtr};
use minnow_redo::Lsn;

use super::descend::{Intent, Latched, Level, PessimisticLeaf};
use super::page::{NIL, capacity, child_of, fits_records, move_records, next, set_next, set_prev};
use super::{BTree, TreeError};
use crate::node::{self, Cursor};
use crate::record::SearchKey;

impl BTree {
    /// The delete if the leaf stays at least the merge threshold full
    /// ([`BTree::merge_fill`]; or is the root); `None`
    /// if it would need a merge (nothing was changed).
    pub(crate) fn delete_optimistic(
        &self,
        pool: &BufferPool,
        key: &SearchKey,
        trx_id: u64,
    ) -> Result<Option<Lsn>, TreeError> {
        let mut mtr = pool.mtr()?;
        let Some(h) = self.leaf_for_write(pool, &mut mtr, key)? else {
            return Ok(None);
        };
        let page = mtr.page(h);
        let found = node::search(page, &self.leaf, key)?;
        if !found.exact {
            return Err(self.not_found(key.clone()));
        }
        let is_root = mtr.page_id(h).is_some_and(|id| id.page_no == self.root);
        if !is_root {
            let (x, d) = self.leaf.size_of(page, found.cursor.origin())?;
            let used = node::used_bytes(page)?.saturating_sub(x + d);
            if (used as f64) < self.merge_fill * capacity(page.len()) as f64 {
                return Ok(None);
            }
        }
        self.free_external(&mut mtr, h, found.cursor.origin())?;
        node::raise_max_trx_id(&mut (&mut mtr, h), trx_id)?;
        node::delete(&mut (&mut mtr, h), &self.leaf, found.cursor)?;
        Ok(Some(mtr.commit()?))
    }

    /// The delete with exclusive latches from the root down (let go above a safe page: see
    /// the `descend` module), merging as needed (unless `merge` is false: a compressed tree
    /// whose merged page did not compress deletes without): one mtr.
    pub(crate) fn delete_pessimistic(
        &self,
        pool: &BufferPool,
        key: &SearchKey,
        trx_id: u64,
        merge: bool,
    ) -> Result<Lsn, TreeError> {
        let PessimisticLeaf {
            mut mtr,
            path,
            last,
            leaf: h,
            found,
        } = self.latch_leaf(pool, key, Intent::Delete)?;
        if !found.exact {
            return Err(self.not_found(key.clone()));
        }
        self.free_external(&mut mtr, h, found.cursor.origin())?;
        // Before a merge, which carries it to the page that takes the records.
        node::raise_max_trx_id(&mut (&mut mtr, h), trx_id)?;
        node::delete(&mut (&mut mtr, h), &self.leaf, found.cursor)?;
        if merge {
            self.rebalance(&mut mtr, &path, last)?;
        }
        Ok(mtr.commit()?)
    }

    /// If the path page at index `i` is under-full, merges it with a sibling under the same
    /// parent (into the left one if they fit, else the right one into it), then rebalances the
    /// parent; at the root, lowers it while it has a single child. A page at index 0 that is
    /// not the root was judged safe by the descent (it stays full enough, so nothing is done
    /// to it): its parent is no longer latched.
    fn rebalance(&self, mtr: &mut Mtr<'_>, path: &[Level], i: usize) -> Result<(), TreeError> {
        let Some(lvl) = path.get(i) else {
            return Err(self.corrupt_path());
        };
        if i == 0 && lvl.page.no == self.root {
            return self.lower_root(mtr, path);
        }
        let n = lvl.page;
        let layout = self.layout_at(lvl.level);
        if node::fill_factor(mtr.page(n.h))? >= self.merge_fill {
            return Ok(());
        }
        let Some(up) = i.checked_sub(1).and_then(|j| path.get(j)) else {
            return Err(self.corrupt(
                n.no,
                "a page judged safe must merge, but its parent was released",
            ));
        };
        let left = match lvl.left {
            Some(l) if self.can_merge(mtr, l, n)? => Some(l),
            _ => None,
        };
        if let Some(l) = left {
            // n's records join its left sibling; n leaves the level and the parent.
            minnow_buf::trace_event!("merge", index = self.index_id, into = l.no, freed = n.no);
            move_records(mtr, n.h, l.h, layout, Cursor::INFIMUM)?;
            let r_no = next(mtr.page(n.h)).map_err(|e| self.corrupt(n.no, e.to_string()))?;
            set_next(mtr, l.h, r_no)?;
            if let Some(r) = lvl.right {
                set_prev(mtr, r.h, l.no)?;
            }
            self.remove_child(mtr, up.page, n.no)?;
            self.free_page(mtr, n.no, lvl.level)?;
            return self.rebalance(mtr, path, i - 1);
        }
        let right = match (lvl.right_same_parent, lvl.right) {
            (true, Some(r)) if self.can_merge(mtr, n, r)? => Some(r),
            _ => None,
        };
        if let Some(r) = right {
            // The right sibling's records join n; the right sibling goes.
            minnow_buf::trace_event!("merge", index = self.index_id, into = n.no, freed = r.no);
            let r2_no = next(mtr.page(r.h)).map_err(|e| self.corrupt(r.no, e.to_string()))?;
            if lvl.right2.map(|x| x.no) != (r2_no != NIL).then_some(r2_no) {
                return Err(self.corrupt(r.no, "right sibling's right sibling not latched"));
            }
            move_records(mtr, r.h, n.h, layout, Cursor::INFIMUM)?;
            set_next(mtr, n.h, r2_no)?;
            if let Some(r2) = lvl.right2 {
                set_prev(mtr, r2.h, n.no)?;
            }
            self.remove_child(mtr, up.page, r.no)?;
            self.free_page(mtr, r.no, lvl.level)?;
            return self.rebalance(mtr, path, i - 1);
        }
        Ok(())
    }

    /// True if the records of `a` and `b` fit together in one page.
    fn can_merge(&self, mtr: &Mtr<'_>, a: Latched, b: Latched) -> Result<bool, TreeError> {
        let (pa, pb) = (mtr.page(a.h), mtr.page(b.h));
        let bytes = node::used_bytes(pa)? + node::used_bytes(pb)?;
        let count = node::n_recs(pa)? + node::n_recs(pb)?;
        Ok(fits_records(self.split_len(pa.len()), bytes, count))
    }

    /// Deletes the node pointer to `child` from `parent`. It is never the parent's first
    /// pointer (merges only remove the right page of a pair under one parent).
    fn remove_child(
        &self,
        mtr: &mut Mtr<'_>,
        parent: Latched,
        child: u32,
    ) -> Result<(), TreeError> {
        let page = mtr.page(parent.h);
        let mut found = None;
        for (k, c) in node::records(page).enumerate() {
            let c = c?;
            if child_of(&self.node, page, c.origin())? == child {
                found = Some((k, c));
                break;
            }
        }
        match found {
            Some((k, c)) if k > 0 => {
                node::delete(&mut (&mut *mtr, parent.h), &self.node, c)?;
                Ok(())
            }
            Some(_) => Err(self.corrupt(parent.no, "merge would remove the first node pointer")),
            None => Err(self.corrupt(parent.no, format!("no node pointer to page {child}"))),
        }
    }

    /// Root lower: while the root is a node page with a single child, the child's records move
    /// up into the root (re-initialised one level lower) and the child is freed.
    fn lower_root(&self, mtr: &mut Mtr<'_>, path: &[Level]) -> Result<(), TreeError> {
        let root = path
            .first()
            .map(|l| l.page)
            .ok_or_else(|| self.corrupt_path())?;
        loop {
            let page = mtr.page(root.h);
            let level = node::level(page)?;
            if level == 0 || node::n_recs(page)? != 1 {
                return Ok(());
            }
            let first = node::next(page, Cursor::INFIMUM)?;
            let child = child_of(&self.node, page, first.origin())?;
            let id = self.id(child);
            let ch = mtr.get_write(id)?;
            super::page::validate(mtr.page(ch), id, self.index_id, Some(level - 1))?;
            let cp = mtr.page(ch);
            let links = (super::page::prev(cp).unwrap_or(0), next(cp).unwrap_or(0));
            if links != (NIL, NIL) {
                return Err(self.corrupt(child, "the root's only child has siblings"));
            }
            node::init(&mut (&mut *mtr, root.h), self.index_id, level - 1)?;
            move_records(mtr, ch, root.h, self.layout_at(level - 1), Cursor::INFIMUM)?;
            self.keep_seg_headers(mtr, root.h)?;
            self.free_page(mtr, child, level - 1)?;
        }
    }
}
