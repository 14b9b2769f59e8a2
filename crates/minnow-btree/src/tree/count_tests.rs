//! The count against a row-by-row model, and the clustered leaves' `PAGE_MAX_TRX_ID` bound
//! (`node::cover_trx_id`) through every write that moves or stamps a record, for pages that
//! start with it unknown (0, as pages written before it was kept) too.

use std::collections::BTreeMap;

use minnow_buf::{BufConfig, BufferPool};
use minnow_io::SplitMix64 as Rng;
use minnow_page::PageSize;

use super::BTree;
use crate::node;
use crate::record::{Column, ColumnType, RecordLayout, Value};
use crate::tree::Parallel;

/// Key `u64`, a variable value: about 20 rows to a 4 KiB leaf at 150 bytes.
fn tree(dir: &std::path::Path) -> (BufferPool, BTree) {
    let cfg = BufConfig::with_frames(512, PageSize::K4);
    let pool = BufferPool::create_scratch(dir, cfg, 1).unwrap();
    let layout = RecordLayout::clustered(
        vec![Column::new(ColumnType::U64)],
        vec![Column::nullable(ColumnType::Var(400))],
    )
    .unwrap();
    let (tree, _) = BTree::create(&pool, 1, 7, layout).unwrap();
    (pool, tree)
}

fn row(k: u64, trx: u64, len: usize) -> Vec<Value> {
    vec![
        Value::UInt(k),
        Value::trx_id(trx),
        Value::roll_ptr(1 << 55),
        Value::Bytes(vec![b'v'; len]),
    ]
}

/// Key -> (writer, delete-marked), the row-by-row reference.
type Model = BTreeMap<u64, (u64, bool)>;

/// Counts as readers seeing writers below a few limits and compares with the model; the
/// tree's check (which tests every known bound against its records) must pass too.
/// The parallel count on 2 to 5 threads must come out as the serial one does (every field,
/// the undecided records in key order) whenever the tree is cut at all.
fn check_counts(pool: &BufferPool, tree: &BTree, model: &Model) -> crate::TreeStats {
    let stats = tree.check(pool).unwrap();
    for below in [1, 5, 40, 150, 301, u64::MAX] {
        let c = tree.count_visible(pool, below, &|t| t < below).unwrap();
        let visible = model.values().filter(|(t, d)| *t < below && !d).count();
        let unseen = model.values().filter(|(t, _)| *t >= below).count();
        assert_eq!(c.visible, visible as u64, "reader below {below}");
        assert_eq!(c.unresolved.len(), unseen, "reader below {below}");
        assert_eq!(c.leaves, stats.pages_per_level[0] as u64);
        assert_eq!(c.ranges, 1);
        for threads in 2..=5 {
            let par = Parallel {
                threads,
                min_leaves: 0,
            };
            let p = tree
                .count_visible_parallel(pool, below, &|t| t < below, par)
                .unwrap();
            let ctx = format!("reader below {below}, {threads} threads");
            assert_eq!(p.visible, c.visible, "{ctx}");
            assert_eq!(p.unresolved, c.unresolved, "{ctx}");
            assert_eq!(p.leaves, c.leaves, "{ctx}");
            assert_eq!(p.whole_leaves, c.whole_leaves, "{ctx}");
            // A leaf a range boundary cuts is walked, not counted from its header.
            assert!(p.header_leaves <= c.header_leaves, "{ctx}");
            assert_eq!(p.max_trx_id, c.max_trx_id, "{ctx}");
            if stats.pages_per_level[0] > 1 {
                assert!(p.ranges > 1, "{ctx}: {} leaves not cut", c.leaves);
            }
        }
    }
    stats
}

#[test]
fn counts_match_the_model_through_inserts_updates_stamps_marks_and_merges() {
    let dir = tempfile::tempdir().unwrap();
    let (pool, tree) = tree(dir.path());
    let mut model = Model::new();
    let mut rng = Rng(0x5EED_C0DE);
    for step in 0..3000u32 {
        let k = rng.below(1200);
        let trx = 1 + rng.below(300);
        let len = 40 + rng.below(160) as usize;
        match (model.get(&k).copied(), rng.below(5)) {
            (None, _) => {
                tree.insert(&pool, &row(k, trx, len)).unwrap();
                model.insert(k, (trx, false));
            }
            // A new version: in place, by delete and insert on the leaf, or with a split.
            (Some((_, d)), 0) => {
                tree.update(&pool, &row(k, trx, len)).unwrap();
                model.insert(k, (trx, d));
            }
            // A delete or its rollback: the writer stamped in place with the mark.
            (Some(_), 1) => {
                let mark = rng.below(2) == 0;
                tree.stamp_marked(&pool, &[Value::UInt(k)], trx, 1 << 55, Some(mark))
                    .unwrap();
                model.insert(k, (trx, mark));
            }
            (Some((t, _)), 2) => {
                let mark = rng.below(2) == 0;
                tree.set_delete_mark(&pool, &[Value::UInt(k)], mark)
                    .unwrap();
                model.insert(k, (t, mark));
            }
            // Purge: the record goes, merges follow.
            (Some(_), _) => {
                tree.delete(&pool, &[Value::UInt(k)]).unwrap();
                model.remove(&k);
            }
        }
        if step % 500 == 499 {
            let stats = check_counts(&pool, &tree, &model);
            assert_eq!(stats.unbounded_leaves, 0, "every leaf keeps its bound");
        }
    }
    let stats = check_counts(&pool, &tree, &model);
    assert!(stats.pages_per_level[0] > 20, "{stats:?}");
    // A reader that sees every writer trusts every leaf: no writer read.
    let all = tree.count_visible(&pool, u64::MAX, &|_| true).unwrap();
    assert_eq!(all.whole_leaves, all.leaves);
    // One that sees none of them trusts none.
    let none = tree.count_visible(&pool, 1, &|_| false).unwrap();
    assert_eq!(none.whole_leaves, 0);
}

/// Sets the `PAGE_MAX_TRX_ID` of every leaf holding a record written by `trx` to 0, as a page
/// written before clustered leaves kept it; returns how many.
fn forget_bounds(pool: &BufferPool, tree: &BTree, trx: u64) -> usize {
    let (_, pages) = tree.walk_checked(pool).unwrap();
    let mut n = 0;
    for &no in &pages[0] {
        let mut mtr = pool.mtr().unwrap();
        let h = mtr.get_write(tree.id(no)).unwrap();
        let page = mtr.page(h);
        let has = node::records(page).any(|c| {
            let c = c.unwrap();
            node::record_trx_id(page, &tree.leaf, c.origin()).unwrap() == Some(trx)
        });
        if has {
            mtr.write(h, node::MAX_TRX_ID, &0u64.to_be_bytes()).unwrap();
            n += 1;
        }
        mtr.commit().unwrap();
    }
    n
}

#[test]
fn unknown_bounds_are_walked_and_never_carried_into_a_known_page() {
    let dir = tempfile::tempdir().unwrap();
    let (pool, tree) = tree(dir.path());
    let mut model = Model::new();
    // Keys below 1000 written by transaction 1, the rest by 9: the left leaves' bound is 1.
    for k in 0..2000u64 {
        let trx = if k < 1000 { 1 } else { 9 };
        tree.insert(&pool, &row(k, trx, 150)).unwrap();
        model.insert(k, (trx, k % 7 == 0));
        if k % 7 == 0 {
            tree.set_delete_mark(&pool, &[Value::UInt(k)], true)
                .unwrap();
        }
    }
    let unknown = forget_bounds(&pool, &tree, 9);
    assert!(unknown > 20, "{unknown} leaves");
    let stats = check_counts(&pool, &tree, &model);
    assert_eq!(stats.unbounded_leaves, unknown);
    // A reader that sees everything still walks the unknown leaves record by record.
    let c = tree.count_visible(&pool, u64::MAX, &|_| true).unwrap();
    assert_eq!(c.whole_leaves, c.leaves - unknown as u64);
    // Writing a record on an unknown leaf computes its bound from the records there.
    tree.update(&pool, &row(1500, 3, 150)).unwrap();
    model.insert(1500, (3, false));
    let stats = check_counts(&pool, &tree, &model);
    assert_eq!(stats.unbounded_leaves, unknown - 1);
    // Emptying the middle merges known leaves (bound 1) with unknown ones (records by 9):
    // the page that takes the records must not keep 1.
    let leaves = stats.pages_per_level[0];
    for k in (900..1100).filter(|k| k % 10 != 0) {
        tree.delete(&pool, &[Value::UInt(k)]).unwrap();
        model.remove(&k);
    }
    let stats = check_counts(&pool, &tree, &model);
    assert!(stats.pages_per_level[0] < leaves - 3, "{stats:?}");
}

#[test]
fn a_corrupt_record_list_on_a_leaf_counted_whole_is_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let (pool, tree) = tree(dir.path());
    for k in 0..200u64 {
        tree.insert(&pool, &row(k, 1, 150)).unwrap();
    }
    let ok = tree.count_visible(&pool, u64::MAX, &|_| true).unwrap();
    assert_eq!((ok.visible, ok.whole_leaves), (200, ok.leaves));
    let (_, pages) = tree.walk_checked(&pool).unwrap();
    let leaf = pages[0][1];
    // The infimum's next pointer (the 2 bytes below its origin) points past the page, and
    // the page no longer says it has no delete-marked record (a page that says so is counted
    // from its header: see the test below), so its records are walked.
    let mut mtr = pool.mtr().unwrap();
    let h = mtr.get_write(tree.id(leaf)).unwrap();
    node::set_no_delete_marks(&mut (&mut mtr, h), false).unwrap();
    mtr.write(h, node::INFIMUM - 2, &0x7FFFu16.to_be_bytes())
        .unwrap();
    mtr.commit().unwrap();
    match tree.count_visible(&pool, u64::MAX, &|_| true) {
        Err(super::TreeError::Corrupt { page, what }) => {
            assert_eq!(page.page_no, leaf);
            assert!(what.contains("next pointer outside"), "{what}");
        }
        other => panic!("expected a corrupt page, got {other:?}"),
    }
}

/// A trusted leaf with no delete-marked record is counted from `PAGE_N_RECS`; marking a
/// record takes its leaf off that path (and only its leaf), and the flag comes back when the
/// leaf is rebuilt without marks. The counts match the model throughout, on one thread and on
/// several (`check_counts`), and the tree's check tests every flag against its records.
#[test]
fn leaves_without_delete_marks_are_counted_from_their_header() {
    let dir = tempfile::tempdir().unwrap();
    let (pool, tree) = tree(dir.path());
    let mut model = Model::new();
    for k in 0..1500u64 {
        tree.insert(&pool, &row(k, 1 + k % 3, 150)).unwrap();
        model.insert(k, (1 + k % 3, false));
    }
    check_counts(&pool, &tree, &model);
    let all = tree.count_visible(&pool, u64::MAX, &|_| true).unwrap();
    assert!(all.leaves > 50, "{all:?}");
    assert_eq!((all.visible, all.header_leaves), (1500, all.leaves));
    // A reader that does not see every writer on a leaf still decides record by record.
    let some = tree.count_visible(&pool, 3, &|t| t < 3).unwrap();
    assert_eq!(some.header_leaves, 0);
    // Delete-mark every 100th record: their leaves count from their delete marks.
    for k in (0..1500u64).step_by(100) {
        tree.set_delete_mark(&pool, &[Value::UInt(k)], true)
            .unwrap();
        model.insert(k, (1 + k % 3, true));
    }
    check_counts(&pool, &tree, &model);
    let marked = tree.count_visible(&pool, u64::MAX, &|_| true).unwrap();
    assert_eq!(marked.visible, 1500 - 15);
    assert_eq!(marked.whole_leaves, marked.leaves);
    assert!(
        marked.header_leaves + 15 >= marked.leaves && marked.header_leaves < marked.leaves,
        "{marked:?}"
    );
    // Stamping a mark (the delete path of a transaction) takes a leaf off the path too.
    tree.stamp_marked(&pool, &[Value::UInt(750)], 2, 1 << 55, Some(true))
        .unwrap();
    model.insert(750, (2, true));
    check_counts(&pool, &tree, &model);
    // Purge removes the marked records; a leaf keeps "unknown" until it is rebuilt, and a
    // rebuild (here: merges of emptied leaves) sets the flag from the records it writes.
    for k in (0..1500u64).filter(|k| k % 100 == 0 || k % 50 == 0 || (600..900).contains(k)) {
        tree.delete(&pool, &[Value::UInt(k)]).unwrap();
        model.remove(&k);
    }
    let stats = check_counts(&pool, &tree, &model);
    let after = tree.count_visible(&pool, u64::MAX, &|_| true).unwrap();
    assert_eq!(after.visible, model.len() as u64);
    assert_eq!(after.leaves, stats.pages_per_level[0] as u64);
    assert!(after.header_leaves > 0, "{after:?}");
}

/// The cut: boundaries from level 1 (one pointer per leaf) of a two-level tree, each range
/// about as long as the others; a tree below `min_leaves` leaves, or one leaf, is not cut.
#[test]
fn the_leaf_level_is_cut_into_even_ranges_at_node_pointer_keys() {
    let dir = tempfile::tempdir().unwrap();
    let (pool, tree) = tree(dir.path());
    let one = tree.count_visible_parallel(
        &pool,
        9,
        &|_| true,
        Parallel {
            threads: 4,
            min_leaves: 0,
        },
    );
    assert_eq!(one.unwrap().ranges, 1, "a root leaf is not cut");
    for k in 0..3000u64 {
        tree.insert(&pool, &row(k, 1, 150)).unwrap();
    }
    let stats = tree.check(&pool).unwrap();
    let leaves = stats.pages_per_level[0];
    assert!(leaves > 100, "{stats:?}");
    let bounds = tree.count_bounds(&pool, 8, 0).unwrap();
    assert_eq!(bounds.len(), 7);
    assert!(bounds.windows(2).all(|w| w[0] < w[1]));
    assert!(tree.count_bounds(&pool, 8, leaves + 1).unwrap().is_empty());
    assert_eq!(tree.count_bounds(&pool, 8, leaves).unwrap().len(), 7);
    // Each range holds about an eighth of the rows (keys are dense, leaves about equal).
    let mut lo = None;
    for hi in bounds.iter().map(Some).chain([None]) {
        let mut c = super::Counted::default();
        tree.count_range(&pool, lo, hi, 9, &|_| true, &mut c)
            .unwrap();
        assert!(
            (250..500).contains(&c.visible),
            "{} rows in a range",
            c.visible
        );
        lo = hi;
    }
    // Ranges cut anywhere (mid-leaf, at either end, past the end) count exactly their keys.
    let cuts = [0u64, 7, 777, 778, 1001, 2999, 5000];
    for w in cuts.windows(2) {
        let key = |k: u64| tree.leaf.search_key(&[Value::UInt(k)]).unwrap();
        let (lo, hi) = (key(w[0]), key(w[1]));
        let mut c = super::Counted::default();
        tree.count_range(&pool, Some(&lo), Some(&hi), 9, &|_| true, &mut c)
            .unwrap();
        assert_eq!(c.visible, w[1].min(3000) - w[0], "keys {w:?}");
    }
    let par = Parallel {
        threads: 3,
        min_leaves: 0,
    };
    let c = tree
        .count_visible_parallel(&pool, 9, &|_| true, par)
        .unwrap();
    assert_eq!((c.visible, c.leaves, c.ranges), (3000, leaves as u64, 48));
}

/// Writers split and merge leaves under a parallel count: the records its reader sees stay
/// put (committed before the view, not purged), so each count must find exactly them, while
/// the unseen writer's records come and go (handed back undecided, never more than exist).
/// Repeat with `MINNOW_COUNT_RACE_ROUNDS` for a longer campaign.
#[test]
fn a_parallel_count_racing_splits_and_merges_counts_each_seen_record_once() {
    let dir = tempfile::tempdir().unwrap();
    let (pool, tree) = tree(dir.path());
    const SEEN: u64 = 1500;
    for k in 0..SEEN {
        // Seen rows on even keys, some delete-marked; the writer uses odd keys.
        tree.insert(&pool, &row(2 * k, 1, 60)).unwrap();
        if k % 5 == 0 {
            tree.set_delete_mark(&pool, &[Value::UInt(2 * k)], true)
                .unwrap();
        }
    }
    let live = SEEN - SEEN.div_ceil(5);
    let rounds: u64 = std::env::var("MINNOW_COUNT_RACE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let mut present = std::collections::BTreeSet::new();
    for round in 0..rounds {
        let done = std::sync::atomic::AtomicBool::new(false);
        present = std::thread::scope(|s| {
            let writer = s.spawn(|| {
                let mut rng = Rng(0xC0DE_0000 + round);
                let mut present = std::mem::take(&mut present);
                let mut ops = 0u32;
                while ops < 5 || !done.load(std::sync::atomic::Ordering::Relaxed) {
                    // Bursts of long rows into one stretch of keys split leaves; deleting
                    // them again merges leaves.
                    let at = rng.below(SEEN - 40);
                    for k in at..at + 40 {
                        let key = 2 * k + 1;
                        if present.insert(key) {
                            tree.insert(&pool, &row(key, 99, 300)).unwrap();
                        } else {
                            tree.delete(&pool, &[Value::UInt(key)]).unwrap();
                            present.remove(&key);
                        }
                    }
                    ops += 1;
                }
                present
            });
            // Stops the writer however this closure ends: a failed assertion must not leave
            // the scope waiting for it forever.
            let _stop = Stop(&done);
            for threads in [2, 3, 4].into_iter().cycle().take(12) {
                let par = Parallel {
                    threads,
                    min_leaves: 0,
                };
                let c = tree
                    .count_visible_parallel(&pool, 50, &|t| t < 50, par)
                    .unwrap();
                assert_eq!(c.visible, live, "round {round}, {threads} threads");
                assert!(
                    c.unresolved
                        .iter()
                        .all(|e| e.values[1] == Value::trx_id(99))
                );
                assert!(c.unresolved.len() as u64 <= SEEN);
            }
            drop(_stop);
            let left = writer.join().unwrap();
            let c = tree.count_visible(&pool, 50, &|t| t < 50).unwrap();
            assert_eq!((c.visible, c.unresolved.len()), (live, left.len()));
            left
        });
    }
    tree.check(&pool).unwrap();
}

/// Sets its flag when dropped, on a panic too.
struct Stop<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for Stop<'_> {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}
