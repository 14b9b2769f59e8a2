//! The hook one B-tree holds: guesses for its lookups, learning from its descents, and the
//! page builds that learning triggers.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use minnow_btree::node;
use minnow_btree::record::{RecordLayout, SearchKey};
use minnow_btree::tree::{Descent, Guess, SearchHook};

use crate::fold::{fold, fold_adjacent};
use crate::hash::{Hashed, PageInfo, Shared, Slot};
use crate::info::SearchInfo;

/// A page is hashed once more than `n_recs / PAGE_BUILD_LIMIT` descents that the hash could
/// have served ended on it with the page unchanged (InnoDB's `BTR_SEARCH_PAGE_BUILD_LIMIT`),
/// times `2^level` for a page whose builds were wasted (see [`MAX_LEVEL`]).
pub const PAGE_BUILD_LIMIT: usize = 16;

/// The most a page's build threshold backs off: `2^MAX_LEVEL` times the base, about
/// `n_recs / 4` unchanged descents. A build (folding, inserting and later removing `n_recs`
/// entries) costs about as much as that many descents, so after them building never costs
/// more than twice what the hash could have saved (the ski-rental bound), and a page whose
/// writer went quiet is hashed again soon.
pub const MAX_LEVEL: u8 = 2;

/// The fold of the first `n` fields of the record at `origin` (`None` if it does not
/// decode), equal to the fold of a search key with the same field bytes
/// ([`IndexHook::key_fold`]). Where those fields are fixed-width and NOT NULL
/// ([`RecordLayout::fixed_key_ends`]) they are slices at fixed offsets from the origin and
/// are folded without walking the record's extra bytes: a page build folds every record,
/// so the walk was most of its cost for such keys.
pub(crate) fn record_fold(
    layout: &RecordLayout,
    index_id: u64,
    page: &[u8],
    origin: usize,
    n: usize,
) -> Option<u64> {
    if let Some(ends) = layout.fixed_key_ends().get(..n) {
        let len = ends.last().copied().unwrap_or(0);
        let prefix = page.get(origin..origin.checked_add(len)?)?;
        return fold_adjacent(index_id, prefix, ends);
    }
    walk_fold(layout, index_id, page, origin, n)
}

/// [`record_fold`] through the record walk: any layout.
pub(crate) fn walk_fold(
    layout: &RecordLayout,
    index_id: u64,
    page: &[u8],
    origin: usize,
    n: usize,
) -> Option<u64> {
    // Folded straight from the walk: no list of fields per record.
    let mut bad = false;
    let fields = layout.walk(page, origin).take(n);
    let f = fold(
        index_id,
        fields.map_while(|r| r.map_err(|_| bad = true).ok()),
    );
    (!bad).then_some(f)
}

/// What the adaptive hash index keeps per index.
#[derive(Debug)]
pub(crate) struct IndexState {
    pub index_id: u64,
    pub space: u32,
    pub layout: RecordLayout,
    pub info: SearchInfo,
    /// Set when the index is dropped: no more guesses, no more entries.
    pub dead: AtomicBool,
}

/// The [`SearchHook`] of one index (see the crate docs). Made by [`crate::Ahi::hook`].
#[derive(Debug)]
pub struct IndexHook {
    pub(crate) shared: Arc<Shared>,
    pub(crate) state: Arc<IndexState>,
}

impl IndexHook {
    fn live(&self) -> bool {
        self.shared.enabled.load(Ordering::Relaxed) && !self.state.dead.load(Ordering::Relaxed)
    }

    fn key_fold(&self, key: &SearchKey, n: usize) -> u64 {
        fold(
            self.state.index_id,
            key.fields().iter().take(n).map(|f| f.as_deref()),
        )
    }

    /// Where descent `d`'s page is, as an entry says it: every entry of one build is this
    /// slot with its own record's origin.
    fn page_slot(&self, d: &Descent<'_>, origin: u32) -> Slot {
        Slot {
            index_id: self.state.index_id,
            space: self.state.space,
            page_no: d.page_no,
            origin,
            layout: d.layout,
            frame: d.frame,
        }
    }

    /// The entries of a page's records for an `n`-field prefix, as `(fold, origin)`: the
    /// rightmost record of each run of equal folds (see [`crate::info`] for why the
    /// rightmost). `None` if the page does not decode.
    fn page_entries(&self, page: &[u8], n: usize) -> Option<Vec<(u64, u32)>> {
        let st = &self.state;
        let mut out = Vec::with_capacity(node::n_recs(page).ok()?);
        let mut pending: Option<(u64, u32)> = None;
        for c in node::records(page) {
            let origin = c.ok()?.origin();
            let f = record_fold(&st.layout, st.index_id, page, origin, n)?;
            if let Some((pf, po)) = pending
                && pf != f
            {
                out.push((pf, po));
            }
            pending = Some((f, u32::try_from(origin).ok()?));
        }
        out.extend(pending);
        Some(out)
    }

    /// Hashes the page of `d` with an `n`-field prefix, replacing its old entries: the new
    /// ones overwrite the old under the same folds (the records mostly stayed), and only old
    /// folds the page no longer yields are removed.
    fn build(&self, d: &Descent<'_>, n: usize, pi: &mut PageInfo) {
        let sh = &self.shared;
        let old = pi.hashed.take();
        if old.is_some() {
            sh.pages_hashed.fetch_sub(1, Ordering::Relaxed);
        }
        let mut folds = match self.page_entries(d.page, n) {
            Some(entries) => sh.insert(self.page_slot(d, 0), &entries),
            None => Vec::new(),
        };
        if let Some(old) = old {
            // A rebuild: the old folds the page no longer yields go (one sort here, not on
            // every first build).
            folds.sort_unstable();
            let gone = old
                .folds
                .into_iter()
                .filter(|f| folds.binary_search(f).is_err())
                .collect();
            sh.remove_page(gone, self.state.space, d.page_no);
        }
        if folds.is_empty() {
            return;
        }
        sh.pages_built.fetch_add(1, Ordering::Relaxed);
        sh.pages_hashed.fetch_add(1, Ordering::Relaxed);
        pi.hashed = Some(Hashed {
            n_fields: n as u16,
            layout: d.layout,
            folds,
        });
    }

    /// A guess failed before descent `d`. If its page changed since the guess's layout and
    /// the page's hash was built at that layout, the whole build is stale: its entries go now, in
    /// one batch, and the page is unhashed until it has been stable long enough to earn a
    /// new build (the lazy drop). Otherwise only this entry goes, and only if it still says
    /// what the guess said.
    fn forget_failed(&self, d: &Descent<'_>, g: &Guess) {
        let st = &self.state;
        if d.guess_page_changed
            && let Some(shard) = self.shared.page_shard(st.space, g.page_no)
        {
            let mut pages = shard.lock();
            if let Some(pi) = pages.get_mut(&(st.space, g.page_no))
                && pi.index_id == st.index_id
                && pi.hashed.as_ref().is_some_and(|h| h.layout == g.layout)
                && let Some(h) = pi.hashed.take()
            {
                self.shared.pages_dropped.fetch_add(1, Ordering::Relaxed);
                self.shared.pages_hashed.fetch_sub(1, Ordering::Relaxed);
                let n = h.folds.len();
                // The failing probe marked one entry itself.
                let used = self
                    .shared
                    .remove_page(h.folds, st.space, g.page_no)
                    .saturating_sub(1);
                // Paid off if it answered at least a quarter of its keys: a build and its
                // drop cost about as much as that many descents.
                pi.level = if used >= n.div_ceil(4) {
                    pi.level.saturating_sub(1)
                } else {
                    (pi.level + 1).min(MAX_LEVEL)
                };
                return;
            }
        }
        self.shared.remove_if(g.token, |s| {
            (s.space, s.page_no, s.origin, s.layout)
                == (st.space, g.page_no, g.origin as u32, g.layout)
        });
    }
}

impl SearchHook for IndexHook {
    #[inline]
    fn guess(&self, key: &SearchKey) -> Option<Guess> {
        if !self.live() {
            return None;
        }
        let r = self.state.info.get();
        let n = usize::from(r.n_fields);
        if !r.ready() || key.len() < n {
            return None;
        }
        let f = self.key_fold(key, n);
        let part = self.shared.part(f)?;
        let slot = part.table.probe(f);
        // The slot's index id is not checked here: the tree verifies the page itself, and a
        // foreign entry under this fold (a collision, or damage) gets repaired that way.
        match slot {
            Some(s) if s.space == self.state.space => Some(Guess {
                page_no: s.page_no,
                origin: s.origin as usize,
                layout: s.layout,
                frame: s.frame,
                token: f,
            }),
            _ => {
                self.shared.misses.bump();
                None
            }
        }
    }

    fn verified(&self, _guess: &Guess, hit: bool) {
        let c = if hit {
            &self.shared.hits
        } else {
            &self.shared.misses
        };
        c.bump();
    }

    fn descended(&self, d: &Descent<'_>) {
        if !self.live() {
            return;
        }
        let st = &self.state;
        // Only descents that found their key teach the statistics: a lookup of an absent
        // key could not have been served by any prefix, and says nothing about which one.
        let r = if d.found.exact {
            st.info
                .update(d.key.len(), d.found.low_match, d.found.up_match)
        } else {
            st.info.get()
        };
        if let Some(g) = d.failed_guess {
            self.forget_failed(d, g);
        }
        // Until the index is ready no page is built, so nothing per page is worth counting
        // (and no page lock is taken).
        if !r.ready() {
            return;
        }
        let n = usize::from(r.n_fields);
        let Some(shard) = self.shared.page_shard(st.space, d.page_no) else {
            return;
        };
        let mut pages = shard.lock();
        // Checked under the shard lock: a drop's sweep passes every shard after setting it.
        if st.dead.load(Ordering::Relaxed) {
            return;
        }
        let pi = pages.entry((st.space, d.page_no)).or_insert_with(|| {
            self.shared.pages_tracked.fetch_add(1, Ordering::Relaxed);
            PageInfo::new(st.index_id)
        });
        if pi.index_id != st.index_id {
            // The page was freed and now belongs to another index.
            if let Some(old) = pi.hashed.take() {
                self.shared.pages_hashed.fetch_sub(1, Ordering::Relaxed);
                self.shared.remove_page(old.folds, st.space, d.page_no);
            }
            *pi = PageInfo::new(st.index_id);
        }
        let current = pi
            .hashed
            .as_ref()
            .is_some_and(|h| usize::from(h.n_fields) == n && h.layout == d.layout);
        if current {
            // Hashed as it is now, yet this key needed a descent: its entry was missing or
            // wrong. Repair it in place (InnoDB's btr_search_update_hash_ref).
            if let (true, Some(g), Some(h)) = (d.found.exact, d.failed_guess, pi.hashed.as_mut())
                && self.key_fold(d.key, n) == g.token
            {
                let origin = d.found.cursor.origin() as u32;
                let fresh = self.page_slot(d, origin);
                if !self.shared.insert(fresh, &[(g.token, origin)]).is_empty()
                    && !h.folds.contains(&g.token)
                {
                    h.folds.push(g.token);
                }
            }
            return;
        }
        // `helps` counts the descents that saw the page at one layout: exactly the lookups a
        // build at the first of them would have answered. A page whose records move between
        // lookups (inserts, purge, an update that moves rows) starts again at every change
        // and is never built; its stale build, if any, waits for its first failed guess to
        // be dropped. Changes in place (delete marks) keep the layout and the count.
        if usize::from(pi.n_fields) != n || pi.seen_layout != d.layout {
            pi.helps = 0;
            pi.n_fields = n as u16;
            pi.seen_layout = d.layout;
        }
        pi.helps = pi.helps.saturating_add(1);
        let n_recs = node::n_recs(d.page).unwrap_or(0);
        let limit = (n_recs / PAGE_BUILD_LIMIT + 1) << pi.level;
        if pi.helps as usize >= limit {
            pi.helps = 0;
            self.build(d, n, pi);
        }
    }

    fn page_freed(&self, page_no: u32) {
        self.shared.drop_page(self.state.space, page_no);
    }
}

#[cfg(test)]
mod tests {
    use minnow_btree::record::{Column, ColumnType, RecordLayout, Value};

    use super::{record_fold, walk_fold};
    use crate::fold::fold;

    /// A record folded from its fixed offsets folds exactly as through the walk and as the
    /// search key with its values, for every prefix (within the fixed-width fields and
    /// beyond them, where it walks); a record cut short folds to `None` either way.
    #[test]
    fn fixed_offset_fold_equals_the_walk_and_the_search_key() {
        let layout = RecordLayout::clustered(
            vec![
                Column::new(ColumnType::U64),
                Column::new(ColumnType::Fixed(11)),
                Column::new(ColumnType::Var(20)),
            ],
            vec![Column::new(ColumnType::Var(30))],
        )
        .unwrap();
        assert_eq!(layout.fixed_key_ends(), &[8, 19]);
        for k in 0..50u64 {
            let key = vec![
                Value::UInt(k * 0x0101_0101),
                Value::Bytes((0..11).map(|i| (k as u8).wrapping_mul(i)).collect()),
                Value::Bytes(vec![b'v'; (k % 7) as usize]),
            ];
            let mut values = key.clone();
            values.extend([
                Value::trx_id(5),
                Value::roll_ptr(1 << 55),
                Value::Bytes(b"x".to_vec()),
            ]);
            let rec = layout.encode(&values).unwrap();
            let mut page = vec![0u8; 16];
            page.extend_from_slice(rec.as_bytes());
            let origin = 16 + rec.extra();
            for n in 0..=3 {
                let by_walk = walk_fold(&layout, 9, &page, origin, n);
                assert!(by_walk.is_some());
                assert_eq!(record_fold(&layout, 9, &page, origin, n), by_walk, "n {n}");
                let sk = layout.search_key(&key[..n]).unwrap();
                let by_key = fold(9, sk.fields().iter().map(|f| f.as_deref()));
                assert_eq!(by_walk, Some(by_key), "n {n}");
            }
            // Cut inside the second key field: no fold from fixed offsets.
            let cut = &page[..origin + 12];
            assert_eq!(record_fold(&layout, 9, cut, origin, 2), None);
        }
    }
}
