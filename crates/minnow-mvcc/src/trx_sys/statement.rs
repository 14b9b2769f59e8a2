//! Statement views, reused while nothing changed.
//!
//! A statement outside a transaction (an autocommit scan, or a point read whose record's
//! writer may still be active) reads through a view of its own. Building one takes the `ids`
//! mutex that every writer's begin and commit also take, copies the active list twice (the
//! view and its registered copy) and registers it, and the view's end takes the mutex again.
//! With no writer beginning or ending in between, every such view is the same photograph.
//!
//! So the transaction system keeps the **last statement view** it built, with the **view
//! epoch** it was built at. The epoch is a counter every change of what a view is made of
//! moves forward, under the `ids` mutex, in the same critical section as the change: an id
//! or a commit number handed out, a transaction leaving the active set. A statement reads
//! the epoch (one atomic load, a cache line writers write only when they begin or commit)
//! and, if the cached view was built at that epoch, shares it: a clone of the registered
//! view, no walk of the active set, nothing registered anew. Otherwise it builds a view as
//! before and caches that one.
//!
//! ## Why a reused view sees every acknowledged commit
//!
//! A commit is acknowledged after its transaction left the active set, which moved the epoch
//! past every value read before. A statement that starts after the acknowledgement reads that
//! epoch or a later one (acquire, against the release of the move), so a view cached at an
//! earlier epoch is not taken: the statement builds a fresh view, which sees the commit. A
//! view cached at the epoch read was built under the mutex after the last change, from the
//! same active set, next id and committing set as a view built now: the same view.
//!
//! ## Purge
//!
//! The cached view is registered like any open view, so purge keeps what a statement using
//! it needs. While its epoch is current it is exactly the view purge would take if no view
//! were open, so it holds nothing back. Once stale it would: [`TrxSys::purge_view`] drops a
//! stale cached view first (statements still reading through it keep their own clones, and
//! with them the registration). Status output does not count the cached view while no
//! statement holds it.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{OpenView, TrxSys};

/// The last statement view and the epoch it was built at.
#[derive(Debug)]
pub(super) struct Cached {
    epoch: u64,
    view: OpenView,
}

impl TrxSys {
    /// A read view for one statement outside a transaction (no creator): the one the last
    /// statement used if no transaction began or ended since (one atomic load, no mutex
    /// writers take), else a new one, which the next statements share. Registered like
    /// [`TrxSys::open_view`]'s while it lives.
    pub fn statement_view(&self) -> OpenView {
        let epoch = self.view_epoch.load(Ordering::Acquire);
        if let Some(c) = self.statement.lock().as_ref()
            && c.epoch == epoch
        {
            return c.view.clone();
        }
        let (view, epoch) = self.open_view_at(0);
        let replaced = {
            let mut slot = self.statement.lock();
            if slot.as_ref().is_none_or(|c| c.epoch < epoch) {
                slot.replace(Cached {
                    epoch,
                    view: view.clone(),
                })
            } else {
                None
            }
        };
        // Outside the slot's mutex: the last clone of a view unregisters it, under `ids`.
        drop(replaced);
        view
    }

    /// Drops the cached statement view if it is stale (a transaction began or ended since it
    /// was built), so that it no longer holds purge back.
    pub(super) fn drop_stale_statement_view(&self) {
        let stale = {
            let mut slot = self.statement.lock();
            let epoch = self.view_epoch.load(Ordering::Acquire);
            if slot.as_ref().is_some_and(|c| c.epoch != epoch) {
                slot.take()
            } else {
                None
            }
        };
        drop(stale);
    }

    /// True if a statement view is cached and no statement holds a clone of it.
    pub(super) fn statement_view_unused(&self) -> bool {
        self.statement
            .lock()
            .as_ref()
            .is_some_and(|c| Arc::strong_count(&c.view._guard) == 1)
    }
}

#[cfg(test)]
mod tests {
    use minnow_buf::{BufConfig, BufferPool};
    use minnow_page::PageSize;

    use super::super::TrxSys;

    /// A scratch pool and a transaction system with two rollback segments.
    fn setup() -> (tempfile::TempDir, BufferPool, TrxSys) {
        let dir = tempfile::tempdir().unwrap();
        let config = BufConfig::with_frames(64, PageSize::K4);
        let pool = BufferPool::create_scratch(dir.path(), config, 1).unwrap();
        let (sys, _) = TrxSys::create(&pool, 1, 2).unwrap();
        (dir, pool, sys)
    }

    #[test]
    fn a_statement_view_is_reused_until_a_transaction_begins_or_ends() {
        let (_dir, pool, sys) = setup();
        let a = sys.statement_view();
        let b = sys.statement_view();
        // The same registration: nothing was built for the second statement.
        assert!(std::sync::Arc::ptr_eq(&a._guard, &b._guard));
        assert_eq!(sys.status().open_views, 1, "one view, shared");
        drop((a, b));
        assert_eq!(sys.status().open_views, 0, "the cache alone is no reader");

        // A writer begins: a new view, which sees it as active.
        let w = sys.assign_id(&pool).unwrap();
        let c = sys.statement_view();
        assert!(!c.changes_visible(w));
        assert_eq!(c.active_ids(), [w]);
        let mut log = sys.begin_log(&pool, w).unwrap();
        sys.append(
            &pool,
            &mut log,
            crate::undo::tests::rec(crate::UndoKind::Insert, 1, 10),
        )
        .unwrap();
        assert!(std::sync::Arc::ptr_eq(
            &c._guard,
            &sys.statement_view()._guard
        ));
        // It commits: the next statement sees it, while the open one keeps its view.
        sys.commit(&pool, &log).unwrap();
        let d = sys.statement_view();
        assert!(d.changes_visible(w));
        assert!(!c.changes_visible(w));
        // Purge's view is the oldest open one: `c`, still held, not the newer cache.
        assert_eq!(sys.purge_view().low_limit(), c.low_limit());
        drop(c);
        drop(d);
        // Held by nobody but the cache, which is current: purge is not held back.
        assert!(sys.purge_view().changes_visible(w));
        let st = sys.status();
        assert_eq!((st.open_views, st.oldest_view_low_limit), (0, None));
    }

    #[test]
    fn a_stale_cached_view_does_not_hold_purge_back() {
        let (_dir, pool, sys) = setup();
        drop(sys.statement_view());
        // A transaction begins and ends after the cached view was built.
        let w = sys.assign_id(&pool).unwrap();
        sys.forget(w);
        let purge = sys.purge_view();
        assert!(purge.changes_visible(w), "purge went past the stale cache");
        assert_eq!(sys.status().open_views, 0);
    }
}
