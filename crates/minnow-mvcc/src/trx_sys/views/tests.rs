//! Views taken without the `ids` mutex: sharing per epoch, registration, the two orders of
//! a reader's registration and purge's pass, many views from one thread, status counts, and
//! readers holding views while writers commit and purge runs.

use std::sync::atomic::{AtomicBool, Ordering};

use minnow_buf::{BufConfig, BufferPool};
use minnow_page::PageSize;

use super::super::{TrxSys, UndoLog};
use super::{PROBES, SLOTS};
use crate::UndoKind;
use crate::undo::tests::rec;

/// A scratch pool and a transaction system with two rollback segments.
fn setup() -> (tempfile::TempDir, BufferPool, TrxSys) {
    let dir = tempfile::tempdir().unwrap();
    let config = BufConfig::with_frames(256, PageSize::K4);
    let pool = BufferPool::create_scratch(dir.path(), config, 1).unwrap();
    let (sys, _) = TrxSys::create(&pool, 1, 2).unwrap();
    (dir, pool, sys)
}

/// A writer with one update undo record (so that its commit joins the history list).
fn writer(pool: &BufferPool, sys: &TrxSys) -> UndoLog {
    let w = sys.assign_id(pool).unwrap();
    let mut log = sys.begin_log(pool, w).unwrap();
    sys.append(pool, &mut log, rec(UndoKind::Update, 1, 10))
        .unwrap();
    log
}

#[test]
fn views_of_one_epoch_are_one_photograph_until_a_transaction_begins_or_ends() {
    let (_dir, pool, sys) = setup();
    let a = sys.statement_view();
    let b = sys.open_view(0);
    assert_eq!(a.view(), b.view());
    let st = sys.status();
    assert_eq!(st.open_views, 2, "each reader is registered");
    assert_eq!(st.oldest_view_low_limit, Some(a.low_limit()));
    drop((a, b));
    let st = sys.status();
    assert_eq!((st.open_views, st.oldest_view_low_limit), (0, None));

    // A writer begins: a new view, which sees it as active.
    let log = writer(&pool, &sys);
    let w = log.trx_id;
    let c = sys.statement_view();
    assert!(!c.changes_visible(w));
    assert_eq!(c.active_ids(), [w]);
    // Its own view (the creator's) sees its changes; the registered copy does not.
    let mine = sys.open_view(w);
    assert!(mine.changes_visible(w));
    drop(mine);
    // It commits: the next view sees it, while the open one keeps its own.
    sys.commit(&pool, &log).unwrap();
    let d = sys.statement_view();
    assert!(d.changes_visible(w));
    assert!(!c.changes_visible(w));
    // Purge's view is the oldest open one: `c`, still held.
    let p = sys.purge_view();
    assert_eq!(p.low_limit(), c.low_limit());
    assert!(!p.changes_visible(w));
    drop(c);
    drop(d);
    assert!(
        sys.purge_view().changes_visible(w),
        "nothing holds purge back"
    );
    let st = sys.status();
    assert_eq!((st.open_views, st.oldest_view_low_limit), (0, None));
}

#[test]
fn a_reader_registered_before_purge_passes_holds_purge_back() {
    let (_dir, pool, sys) = setup();
    // The reader takes its view and registers it...
    let (view, epoch) = sys.epoch_view();
    let reg = sys.views.try_register(epoch, view.low_limit());
    assert!(reg.is_some(), "no purge ran: the view stands");
    // ...then a writer commits and purge passes: purge sees the registration.
    let log = writer(&pool, &sys);
    sys.commit(&pool, &log).unwrap();
    let p = sys.purge_view();
    assert!(
        !p.changes_visible(log.trx_id),
        "purge stays behind the reader"
    );
    assert_eq!(p.low_limit_no(), view.low_limit_no());
    assert_eq!(p, view, "the purge view is the reader's");
    drop(reg);
    assert!(sys.purge_view().changes_visible(log.trx_id));
}

#[test]
fn a_reader_registering_after_purge_passed_its_view_takes_a_fresh_one() {
    let (_dir, pool, sys) = setup();
    // The reader takes its view but has not registered it yet...
    let (view, epoch) = sys.epoch_view();
    // ...a writer commits and purge passes, seeing no reader: it goes past the view.
    let log = writer(&pool, &sys);
    sys.commit(&pool, &log).unwrap();
    let p = sys.purge_view();
    assert!(p.changes_visible(log.trx_id), "purge saw no reader");
    assert!(!view.changes_visible(log.trx_id));
    // The reader's check finds purge's floor past its epoch: it must not use the view.
    assert!(sys.views.try_register(epoch, view.low_limit()).is_none());
    assert_eq!(
        sys.status().open_views,
        0,
        "the refused registration was undone"
    );
    // open_view's retry: a view of the current epoch, which sees the commit.
    let fresh = sys.open_view(0);
    assert!(fresh.changes_visible(log.trx_id));
    assert_eq!(sys.status().open_views, 1);
    assert!(sys.views.floor.load(Ordering::SeqCst) > epoch);
}

#[test]
fn one_thread_holding_more_views_than_its_slots_overflows_and_counts_them_all() {
    let (_dir, pool, sys) = setup();
    let first = sys.open_view(0);
    let log = writer(&pool, &sys);
    let held: Vec<_> = (0..PROBES * 3).map(|_| sys.open_view(0)).collect();
    let st = sys.status();
    assert_eq!(st.open_views, 1 + held.len() as u64);
    assert_eq!(st.oldest_view_low_limit, Some(first.low_limit()));
    sys.commit(&pool, &log).unwrap();
    // The oldest is in a slot; drop it: the oldest is now among the overflowed ones.
    drop(first);
    let p = sys.purge_view();
    assert!(
        !p.changes_visible(log.trx_id),
        "an overflowed view holds purge back"
    );
    drop(held);
    assert_eq!(sys.status().open_views, 0);
    assert!(sys.purge_view().changes_visible(log.trx_id));
    const { assert!(SLOTS > PROBES) };
}

#[test]
fn views_built_are_dropped_once_no_reader_can_use_them() {
    let (_dir, pool, sys) = setup();
    for _ in 0..3 * super::BUILT_KEPT {
        let log = writer(&pool, &sys);
        drop(sys.open_view(0));
        sys.commit(&pool, &log).unwrap();
    }
    assert!(sys.ids.lock().built.len() <= super::BUILT_KEPT + 1);
    sys.purge_view();
    assert_eq!(
        sys.ids.lock().built.len(),
        1,
        "only the current view is left"
    );
}

/// Readers on four threads take and hold views while a writer commits and purge runs: each
/// reader checks that purge's view never sees a change its own view does not (what purge
/// removes, the reader would miss). Fixed seeds: each reader's hold pattern is derived from
/// its number.
#[test]
fn readers_holding_views_while_writers_commit_and_purge_runs_are_never_passed() {
    let (_dir, pool, sys) = setup();
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        for r in 0..4u64 {
            let (sys, stop) = (&sys, &stop);
            s.spawn(move || {
                let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ r;
                let mut held = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    held.push(sys.open_view(0));
                    if held.len() > (seed % 6) as usize {
                        held.remove((seed % held.len() as u64) as usize);
                    }
                    // Every pass of purge either saw these registrations or ran before
                    // them: its limit sees no change a held view does not.
                    let limit = sys.purge_limit.lock().clone();
                    for v in &held {
                        assert!(limit.low_limit_no() <= v.low_limit_no());
                        assert!(limit.low_limit() <= v.low_limit());
                        for &id in v.active_ids() {
                            assert!(!limit.changes_visible(id), "purge passed a reader");
                        }
                    }
                }
            });
        }
        let mut committed = Vec::new();
        for i in 0..300 {
            let log = writer(&pool, &sys);
            let v = sys.open_view(0);
            sys.commit(&pool, &log).unwrap();
            committed.push(log.trx_id);
            if i % 7 == 0 {
                let p = sys.purge_view();
                // Every view still open was registered before this pass or refused: none
                // sees less than purge's view.
                assert!(p.low_limit_no() <= v.low_limit_no());
                assert!(
                    !p.changes_visible(log.trx_id),
                    "`v` is open and does not see it"
                );
            }
            drop(v);
        }
        stop.store(true, Ordering::Relaxed);
    });
    let st = sys.status();
    assert_eq!((st.open_views, st.oldest_view_low_limit), (0, None));
}
