//! Inserts: the optimistic one-page insert, and the pessimistic insert that splits pages,
//! posts separators to parents and raises the root.

use minnow_buf::{BufferPool, Mtr, PageHandle};
use minnow_redo::Lsn;

use super::descend::{Intent, Latched, Level, MAX_LEVEL, PessimisticLeaf};
use super::overflow::Prepared;
use super::page::{
    fits_records, init_index_page, move_records, next, node_ptr, set_next, set_prev,
};
use super::probe::LeafHint;
use super::{BTree, TreeError};
use crate::node::{self, Cursor, NodeError, SplitAt};
use crate::record::{INFO_MIN_REC, RecordBuf, SearchKey};

impl BTree {
    fn duplicate(&self, key: &SearchKey) -> TreeError {
        TreeError::Duplicate {
            index_id: self.index_id,
            key: key.clone(),
        }
    }

    /// The insert if it fits the leaf; `None` if the leaf must split (nothing was changed).
    pub(crate) fn insert_optimistic(
        &self,
        pool: &BufferPool,
        p: &Prepared,
        key: &SearchKey,
        trx_id: u64,
        hint: Option<&LeafHint>,
    ) -> Result<Option<Lsn>, TreeError> {
        let rec = &p.rec;
        let mut mtr = pool.mtr_with_room(p.room())?;
        let hinted = match hint {
            Some(hint) => self.latch_hinted(&mut mtr, hint, key)?,
            None => None,
        };
        let h = match hinted {
            Some(h) => h,
            None => match self.leaf_for_write(pool, &mut mtr, key)? {
                Some(h) => h,
                None => return Ok(None),
            },
        };
        let page = mtr.page(h);
        if node::search(page, &self.leaf, key)?.exact {
            return Err(self.duplicate(key));
        }
        if !node::fits(page, &self.leaf, rec.len())?
            && !node::fits_after_reorganize(page, rec.len())?
        {
            return Ok(None);
        }
        if !self.zip_room(page, rec.len())? {
            return Ok(None);
        }
        let rec = &self.store_external(&mut mtr, p)?;
        // Before the insert: a failed insert drops the mtr, which undoes the raise too.
        node::raise_max_trx_id(&mut (&mut mtr, h), trx_id)?;
        self.cover_rec(&mut mtr, h, rec)?;
        match node::insert(&mut (&mut mtr, h), &self.leaf, rec) {
            Ok(_) => Ok(Some(mtr.commit()?)),
            Err(NodeError::PageFull { .. }) => Ok(None),
            Err(NodeError::Duplicate { .. }) => Err(self.duplicate(key)),
            Err(e) => Err(e.into()),
        }
    }

    /// The insert with exclusive latches from the root down (let go above a safe page: see
    /// the `descend` module), splitting as needed: one mtr.
    pub(crate) fn insert_pessimistic(
        &self,
        pool: &BufferPool,
        p: &Prepared,
        key: &SearchKey,
        trx_id: u64,
    ) -> Result<Lsn, TreeError> {
        let PessimisticLeaf {
            mut mtr,
            path,
            last,
            leaf,
            found,
        } = self.latch_leaf_with_room(pool, key, Intent::Insert, p.room())?;
        if found.exact {
            return Err(self.duplicate(key));
        }
        // Raised on the leaf before it splits: the split copies it to the new page, so
        // whichever half takes the record carries the writer's id.
        node::raise_max_trx_id(&mut (&mut mtr, leaf), trx_id)?;
        let rec = self.store_external(&mut mtr, p)?;
        self.cover_rec(&mut mtr, leaf, &rec)?;
        self.insert_into(&mut mtr, &path, last, &rec)?;
        Ok(self.commit_splits(mtr, &path)?)
    }

    /// The update that did not fit its page: delete, then insert with splits, in one mtr.
    pub(crate) fn update_pessimistic(
        &self,
        pool: &BufferPool,
        p: &Prepared,
        key: &SearchKey,
        mark: Option<bool>,
    ) -> Result<Lsn, TreeError> {
        let PessimisticLeaf {
            mut mtr,
            path,
            last,
            leaf: h,
            found,
        } = self.latch_leaf_with_room(pool, key, Intent::Insert, p.room())?;
        if !found.exact {
            return Err(self.not_found(key.clone()));
        }
        let info = super::with_mark(node::header_at(mtr.page(h), found.cursor)?.info_bits, mark);
        self.free_external(&mut mtr, h, found.cursor.origin())?;
        let rec = &self.store_external(&mut mtr, p)?;
        // Before the split: it carries the leaf's bound to whichever page takes the record.
        self.cover_rec(&mut mtr, h, rec)?;
        node::delete(&mut (&mut mtr, h), &self.leaf, found.cursor)?;
        let mut new = rec.clone();
        new.set_info_bits(info);
        self.insert_into(&mut mtr, &path, last, &new)?;
        Ok(self.commit_splits(mtr, &path)?)
    }

    pub(crate) fn handle(&self, path: &[Level], i: usize) -> Result<PageHandle, TreeError> {
        path.get(i)
            .map(|l| l.page.h)
            .ok_or_else(|| self.corrupt_path())
    }

    /// Inserts `rec` into the path page at index `i` (0 is the topmost latched page: the root,
    /// or a safe page whose ancestors were released), splitting it (and its ancestors,
    /// recursively) if it is full. Only the root splits at index 0 (upwards: the root raise);
    /// a safe page that must split after all is an error, as its parent is no longer latched.
    pub(crate) fn insert_into(
        &self,
        mtr: &mut Mtr<'_>,
        path: &[Level],
        i: usize,
        rec: &RecordBuf,
    ) -> Result<(), TreeError> {
        let Some(lvl) = path.get(i) else {
            return Err(self.corrupt_path());
        };
        let layout = self.layout_at(lvl.level);
        let page = mtr.page(lvl.page.h);
        // A safe page (index 0, not the root) was judged to have room with the compression
        // padding of that moment; another thread may have raised the padding since. The
        // padding only makes pages split before they fail to compress, so the safe page
        // ignores it: if the page does not compress after all, the commit fails and
        // `zip_retry` splits it in an mtr of its own.
        let safe = i == 0 && lvl.page.no != self.root;
        let room = safe || self.zip_room(page, rec.len())?;
        if room
            && (node::fits(page, layout, rec.len())?
                || node::fits_after_reorganize(page, rec.len())?)
        {
            match node::insert(&mut (&mut *mtr, lvl.page.h), layout, rec) {
                Ok(_) => return Ok(()),
                Err(NodeError::PageFull { .. }) => {}
                Err(NodeError::Duplicate { .. }) => {
                    let key = layout.key_of(rec.as_bytes(), rec.extra())?;
                    return Err(self.duplicate(&key));
                }
                Err(e) => return Err(e.into()),
            }
        }
        // Plan before a root raise: the raise rebuilds the page and forgets the insert
        // direction, which the plan needs to split sequential loads at the insert point.
        let plan = self.plan_split(mtr.page(lvl.page.h), lvl.level, rec)?;
        if i == 0 {
            if lvl.page.no != self.root {
                return Err(self.corrupt(
                    lvl.page.no,
                    "a page judged safe must split, but its parent was released",
                ));
            }
            let child = self.root_raise(mtr, lvl.page, lvl.level)?;
            let sep = self.split(mtr, child, None, lvl.level, rec, plan)?;
            node::insert(&mut (&mut *mtr, lvl.page.h), &self.node, &sep)?;
            return Ok(());
        }
        let sep = self.split(mtr, lvl.page, lvl.right, lvl.level, rec, plan)?;
        self.insert_into(mtr, path, i - 1, &sep)
    }

    pub(crate) fn corrupt_path(&self) -> TreeError {
        TreeError::Corrupt {
            page: self.id(self.root),
            what: "latched path shorter than expected".into(),
        }
    }

    /// Root raise: the root's records move to a new page one level down, and the root becomes
    /// a node page one level up with a single (MIN_REC) pointer to it. Returns the new child.
    pub(crate) fn root_raise(
        &self,
        mtr: &mut Mtr<'_>,
        root: Latched,
        level: u16,
    ) -> Result<Latched, TreeError> {
        if level >= MAX_LEVEL {
            return Err(TreeError::Corrupt {
                page: self.id(root.no),
                what: format!("root raise above level {MAX_LEVEL}"),
            });
        }
        let c = self.alloc_page(mtr, level, None)?;
        let c_no = mtr.page_id(c).map_or(0, |id| id.page_no);
        init_index_page(mtr, c, self.index_id, level)?;
        let layout = self.layout_at(level);
        move_records(mtr, root.h, c, layout, Cursor::INFIMUM)?;
        node::init(&mut (&mut *mtr, root.h), self.index_id, level + 1)?;
        self.keep_seg_headers(mtr, root.h)?;
        let first = node::next(mtr.page(c), Cursor::INFIMUM)?;
        if !first.is_user() {
            return Err(TreeError::Corrupt {
                page: self.id(root.no),
                what: "root raise of an empty root".into(),
            });
        }
        let mut ptr = node_ptr(layout, &self.node, mtr.page(c), first.origin(), c_no)?;
        ptr.set_info_bits(INFO_MIN_REC);
        node::insert(&mut (&mut *mtr, root.h), &self.node, &ptr)?;
        Ok(Latched { no: c_no, h: c })
    }

    /// Where a split of `page` (at `level`) to make room for `rec` cuts: from
    /// [`node::split_point`], checked to fit (see `choose_split`).
    fn plan_split(&self, page: &[u8], level: u16, rec: &RecordBuf) -> Result<Plan, TreeError> {
        // lab 4 begin: plan_split
        // lab 4 starter: let _ = (page, level, rec); Err(node::NodeError::from(minnow_page::lab::NotWritten::new(4, "plan_split")).into())
        let layout = self.layout_at(level);
        let key = layout.key_of(rec.as_bytes(), rec.extra())?;
        let after = node::search(page, layout, &key)?.cursor;
        let sp = node::split_point(page, layout, after, rec.len())?;
        let mut items: Vec<(Option<Cursor>, usize)> = Vec::new();
        if after.is_infimum() {
            items.push((None, rec.len()));
        }
        for c in node::records(page) {
            let c = c?;
            let (x, d) = layout.size_of(page, c.origin())?;
            items.push((Some(c), x + d));
            if c == after {
                items.push((None, rec.len()));
            }
        }
        let candidate = match sp.at {
            SplitAt::Record(c) => items.iter().position(|(x, _)| *x == Some(c)),
            SplitAt::NewRecord => items.iter().position(|(x, _)| x.is_none()),
        };
        let idx = choose_split(&items, candidate, self.split_len(page.len()))
            .or_else(|| choose_split(&items, candidate, page.len()))
            .ok_or(NodeError::PageFull {
                needed: rec.len(),
                available: 0,
            })?;
        let new_pos = items.iter().position(|(x, _)| x.is_none()).unwrap_or(0);
        Ok(Plan { idx, new_pos })
        // lab 4 end
    }

    /// Splits page `n` (whose right sibling, if any, is `right`) at level `level` as `plan`
    /// says, to make room for `rec`: a new page to its right takes the records from the split
    /// point on, `rec` goes to its side. Returns the node pointer to the new page, for the
    /// parent.
    fn split(
        &self,
        mtr: &mut Mtr<'_>,
        n: Latched,
        right: Option<Latched>,
        level: u16,
        rec: &RecordBuf,
        plan: Plan,
    ) -> Result<RecordBuf, TreeError> {
        minnow_buf::trace_event!("split", index = self.index_id, page = n.no, level);
        // lab 4 begin: split
        // lab 4 starter: let _ = (mtr, n, right, level, rec, plan); Err(node::NodeError::from(minnow_page::lab::NotWritten::new(4, "split")).into())
        let layout = self.layout_at(level);
        let page = mtr.page(n.h);
        let Plan { idx, new_pos } = plan;
        // The split index counts the new record; the first old record to move is the k-th.
        let k = idx - usize::from(new_pos < idx);
        let first_moved = match node::records(page).nth(k) {
            Some(c) => c?,
            None => Cursor::SUPREMUM,
        };
        let (m, m_no) = self.split_off(mtr, n, right, level, first_moved)?;
        let target = if new_pos >= idx { m } else { n.h };
        node::insert(&mut (&mut *mtr, target), layout, rec)?;
        self.first_ptr(mtr, m, m_no, level)
        // lab 4 end
    }

    /// The first half of a split: a new page to the right of `n` (linked between `n` and
    /// `right`) takes `n`'s records from `first_moved` on. Returns the new page.
    pub(crate) fn split_off(
        &self,
        mtr: &mut Mtr<'_>,
        n: Latched,
        right: Option<Latched>,
        level: u16,
        first_moved: Cursor,
    ) -> Result<(PageHandle, u32), TreeError> {
        let layout = self.layout_at(level);
        let r_no = next(mtr.page(n.h)).map_err(|e| self.corrupt(n.no, e.to_string()))?;
        if right.map(|r| r.no) != (r_no != super::page::NIL).then_some(r_no) {
            return Err(self.corrupt(n.no, "right sibling not latched for a split"));
        }
        let m = self.alloc_page(mtr, level, n.no.checked_add(1))?;
        let m_no = mtr.page_id(m).map_or(0, |id| id.page_no);
        init_index_page(mtr, m, self.index_id, level)?;
        set_prev(mtr, m, n.no)?;
        set_next(mtr, m, r_no)?;
        set_next(mtr, n.h, m_no)?;
        if let Some(r) = right {
            set_prev(mtr, r.h, m_no)?;
        }
        move_records(mtr, n.h, m, layout, first_moved)?;
        Ok((m, m_no))
    }

    /// The node pointer to page `m` (number `m_no`, at `level`): its first record's key.
    pub(crate) fn first_ptr(
        &self,
        mtr: &Mtr<'_>,
        m: PageHandle,
        m_no: u32,
        level: u16,
    ) -> Result<RecordBuf, TreeError> {
        let first = node::next(mtr.page(m), Cursor::INFIMUM)?;
        if !first.is_user() {
            return Err(self.corrupt(m_no, "split left the new page empty"));
        }
        node_ptr(
            self.layout_at(level),
            &self.node,
            mtr.page(m),
            first.origin(),
            m_no,
        )
    }
}

/// A split decision: the index (in key order, the new record included) of the first record
/// of the new right page, and the new record's index.
#[derive(Debug, Clone, Copy)]
struct Plan {
    idx: usize,
    new_pos: usize,
}

/// Where to split `items` (sizes in key order, the new record included): `candidate` (from
/// [`node::split_point`]) if both halves fit a page, else the feasible index that balances
/// bytes best. Both halves must be non-empty. `None` if no split fits (records too large).
fn choose_split(
    items: &[(Option<Cursor>, usize)],
    candidate: Option<usize>,
    page_len: usize,
) -> Option<usize> {
    let total: usize = items.iter().map(|(_, l)| l).sum();
    let mut prefix = Vec::with_capacity(items.len() + 1);
    let mut acc = 0;
    prefix.push(0);
    for (_, l) in items {
        acc += l;
        prefix.push(acc);
    }
    let count = items.len();
    let feasible = |i: usize| {
        let left = prefix.get(i).copied().unwrap_or(total);
        i >= 1
            && i < count
            && fits_records(page_len, left, i)
            && fits_records(page_len, total - left, count - i)
    };
    if let Some(c) = candidate.filter(|&c| feasible(c)) {
        return Some(c);
    }
    (1..count)
        .filter(|&i| feasible(i))
        .min_by_key(|&i| (2 * prefix.get(i).copied().unwrap_or(0)).abs_diff(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choose_split_prefers_the_candidate_and_falls_back_to_the_middle() {
        let items: Vec<(Option<Cursor>, usize)> = (0..10).map(|_| (None, 300)).collect();
        assert_eq!(choose_split(&items, Some(9), 4096), Some(9));
        // Nine records of 300 bytes do not fit with one: the left would be too full.
        let big: Vec<(Option<Cursor>, usize)> = (0..20).map(|_| (None, 300)).collect();
        assert_eq!(choose_split(&big, Some(19), 4096), Some(10));
        assert_eq!(choose_split(&big[..1], Some(0), 4096), None);
    }
}
