//! The hook one B-tree holds: guesses for its lookups, learning from its descents, and the
//! page builds that learning triggers.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use minnow_btree::node;
use minnow_btree::record::{RecordLayout, SearchKey};
use minnow_btree::tree::{Descent, Guess, SearchHook};

use crate::fold::fold;
use crate::hash::{Hashed, PageInfo, Shared, Slot};
use crate::info::SearchInfo;

/// A page is hashed once more than `n_recs / PAGE_BUILD_LIMIT` descents that the hash could
/// have served ended on it (InnoDB's `BTR_SEARCH_PAGE_BUILD_LIMIT`).
pub const PAGE_BUILD_LIMIT: usize = 16;

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

    /// The entries of a page's records for an `n`-field prefix: the rightmost record of
    /// each run of equal folds (see [`crate::info`] for why the rightmost). `None` if the
    /// page does not decode.
    fn page_entries(&self, d: &Descent<'_>, n: usize) -> Option<Vec<(u64, Slot)>> {
        let st = &self.state;
        let slot = |origin: usize| Slot {
            index_id: st.index_id,
            space: st.space,
            page_no: d.page_no,
            origin: origin as u32,
            lsn: d.lsn,
        };
        let mut out = Vec::with_capacity(node::n_recs(d.page).ok()?);
        let mut pending: Option<(u64, usize)> = None;
        for c in node::records(d.page) {
            let origin = c.ok()?.origin();
            let fields = st
                .layout
                .walk(d.page, origin)
                .take(n)
                .collect::<Result<Vec<_>, _>>()
                .ok()?;
            let f = fold(st.index_id, fields.into_iter());
            if let Some((pf, po)) = pending
                && pf != f
            {
                out.push((pf, slot(po)));
            }
            pending = Some((f, origin));
        }
        if let Some((pf, po)) = pending {
            out.push((pf, slot(po)));
        }
        Some(out)
    }

    /// Hashes the page of `d` with an `n`-field prefix, replacing its old entries.
    fn build(&self, d: &Descent<'_>, n: usize, pi: &mut PageInfo) {
        let sh = &self.shared;
        if let Some(old) = pi.hashed.take() {
            sh.pages_hashed.fetch_sub(1, Ordering::Relaxed);
            sh.remove_page(old.folds, self.state.space, d.page_no);
        }
        let Some(entries) = self.page_entries(d, n) else {
            return;
        };
        let folds = sh.insert(entries);
        sh.pages_built.fetch_add(1, Ordering::Relaxed);
        sh.pages_hashed.fetch_add(1, Ordering::Relaxed);
        pi.hashed = Some(Hashed {
            n_fields: n as u16,
            lsn: d.lsn,
            folds,
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
        part.lookups.fetch_add(1, Ordering::Relaxed);
        let slot = part.map.read().get(&f).copied();
        // The slot's index id is not checked here: the tree verifies the page itself, and a
        // foreign entry under this fold (a collision, or damage) gets repaired that way.
        match slot {
            Some(s) if s.space == self.state.space => Some(Guess {
                page_no: s.page_no,
                origin: s.origin as usize,
                lsn: s.lsn,
                token: f,
            }),
            _ => {
                part.misses.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    fn verified(&self, guess: &Guess, hit: bool) {
        if let Some(part) = self.shared.part(guess.token) {
            let c = if hit { &part.hits } else { &part.misses };
            c.fetch_add(1, Ordering::Relaxed);
        }
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
        if let Some(g) = d.failed_guess {
            let stale = Slot {
                index_id: st.index_id,
                space: st.space,
                page_no: g.page_no,
                origin: g.origin as u32,
                lsn: g.lsn,
            };
            let same_prefix = n > 0 && self.key_fold(d.key, n) == g.token;
            match &mut pi.hashed {
                // Repair in place (InnoDB's btr_search_update_hash_ref): the key is here now.
                Some(h) if d.found.exact && same_prefix && usize::from(h.n_fields) == n => {
                    let fresh = Slot {
                        page_no: d.page_no,
                        origin: d.found.cursor.origin() as u32,
                        lsn: d.lsn,
                        ..stale
                    };
                    if !self.shared.insert(vec![(g.token, fresh)]).is_empty()
                        && !h.folds.contains(&g.token)
                    {
                        h.folds.push(g.token);
                    }
                }
                _ => self.shared.remove_if(g.token, |s| {
                    (s.page_no, s.origin, s.lsn) == (stale.page_no, stale.origin, stale.lsn)
                }),
            }
        }
        if n == 0 {
            return;
        }
        if usize::from(pi.n_fields) == n {
            pi.helps = pi.helps.saturating_add(1);
        } else {
            pi.helps = 1;
            pi.n_fields = n as u16;
        }
        let n_recs = node::n_recs(d.page).unwrap_or(0);
        let stale = pi
            .hashed
            .as_ref()
            .is_none_or(|h| usize::from(h.n_fields) != n || h.lsn != d.lsn);
        if r.ready() && stale && pi.helps as usize > n_recs / PAGE_BUILD_LIMIT {
            pi.helps = 0;
            self.build(d, n, pi);
        }
    }

    fn page_freed(&self, page_no: u32) {
        self.shared.drop_page(self.state.space, page_no);
    }
}
