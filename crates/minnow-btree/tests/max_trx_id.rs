//! `PAGE_MAX_TRX_ID` on secondary-index leaves: the `_trx` writes raise it on the leaf they
//! change (and only there), splits and merges carry it to the pages that take the records,
//! a bulk build stamps every leaf it builds, and the value survives a power cut through redo;
//! on clustered leaves (where it bounds the records' `DB_TRX_ID`s) it survives one too.

mod common;
mod crash_common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::{Env, SPACE};
use minnow_btree::record::{Column, ColumnType, RecordLayout, Value};
use minnow_btree::tree::{BulkBuilder, BulkOptions};
use minnow_btree::{BTree, ScanRange, node};
use minnow_io::{Backend, CrashSim, SyncBackend};
use minnow_page::PageId;
use minnow_redo::FlushAtCommit;

/// A secondary index on (k, pad): about 25 entries per 4 KiB leaf.
fn layout() -> RecordLayout {
    RecordLayout::secondary(vec![
        Column::new(ColumnType::I64),
        Column::new(ColumnType::Var(200)),
    ])
    .unwrap()
}

fn entry(k: i64) -> Vec<Value> {
    vec![Value::Int(k), Value::Bytes(vec![b'p'; 140])]
}

fn key_of(values: &[Value]) -> i64 {
    match values.first() {
        Some(Value::Int(k)) => *k,
        other => panic!("unexpected entry {other:?}"),
    }
}

/// Every entry's key and the `PAGE_MAX_TRX_ID` of the leaf it was read from.
fn page_max(pool: &minnow_buf::BufferPool, tree: &BTree) -> BTreeMap<i64, u64> {
    tree.scan(pool, ScanRange::all())
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (key_of(&e.values), e.page_max_trx_id)
        })
        .collect()
}

fn leaves(pool: &minnow_buf::BufferPool, tree: &BTree) -> usize {
    tree.check(pool).unwrap().pages_per_level[0]
}

#[test]
fn raise_never_lowers_and_writes_only_when_it_raises() {
    let mut page = minnow_btree::CountingPage::new(vec![0u8; 4096]);
    node::init(&mut page, 7, 0).unwrap();
    let calls = page.calls;
    assert_eq!(node::max_trx_id(&page.page).unwrap(), 0);
    assert!(!node::raise_max_trx_id(&mut page, 0).unwrap());
    assert!(node::raise_max_trx_id(&mut page, 40).unwrap());
    assert!(!node::raise_max_trx_id(&mut page, 39).unwrap());
    assert!(!node::raise_max_trx_id(&mut page, 40).unwrap());
    assert_eq!(node::max_trx_id(&page.page).unwrap(), 40);
    assert_eq!(page.calls, calls + 1, "one write, for the one raise");
    // The field sits at InnoDB's offset, where minnow-page's header decoder reads it.
    assert_eq!(node::MAX_TRX_ID, 56);
    let h = minnow_page::index::IndexHeader::read(&page.page).unwrap();
    assert_eq!(h.max_trx_id, 40);
}

#[test]
fn writes_raise_their_leaf_only_and_splits_carry_it() {
    let env = Env::new(256);
    let pool = env.create();
    let (tree, _) = BTree::create(&pool, SPACE, 9, layout()).unwrap();
    // Plain inserts (no transaction) leave 0.
    tree.insert(&pool, &entry(-1)).unwrap();
    assert_eq!(page_max(&pool, &tree)[&-1], 0);
    // 2000 entries by transaction 3: the root leaf splits, then its halves, many times.
    for k in 0..2000 {
        tree.insert_trx(&pool, &entry(k), 3).unwrap();
    }
    assert!(leaves(&pool, &tree) > 50);
    let m = page_max(&pool, &tree);
    // Every page made by a split got the value of the page it split from.
    assert!(m.values().all(|&x| x == 3), "{m:?}");
    // One insert far right by transaction 9 raises the last leaf only.
    tree.insert_trx(&pool, &entry(1_000_000), 9).unwrap();
    // One un-mark of an entry in the middle by transaction 11 raises its leaf only.
    tree.set_delete_mark_trx(&pool, &entry(1000), true, 11)
        .unwrap();
    let m = page_max(&pool, &tree);
    assert_eq!(m[&1_000_000], 9);
    assert_eq!(m[&1000], 11);
    assert_eq!(m[&0], 3);
    let elevens = m.values().filter(|&&x| x == 11).count();
    assert!(elevens > 1 && elevens < 40, "one leaf's entries: {elevens}");
    // Splitting the raised leaf keeps the raise on both halves.
    for k in 0..200 {
        tree.insert_trx(&pool, &entry(1000 * 1000 + 1 + k), 0)
            .unwrap();
    }
    let m = page_max(&pool, &tree);
    assert!(m.range(1_000_000..).all(|(_, &x)| x == 9), "{m:?}");
    tree.check(&pool).unwrap();
}

#[test]
fn merges_carry_the_max_trx_id() {
    let env = Env::new(256);
    let pool = env.create();
    let (tree, _) = BTree::create(&pool, SPACE, 9, layout()).unwrap();
    for k in 0..2000 {
        tree.insert_trx(&pool, &entry(k), 3).unwrap();
    }
    tree.set_delete_mark_trx(&pool, &entry(1000), true, 7)
        .unwrap();
    let before = leaves(&pool, &tree);
    // Empty the neighbourhood of 1000 with plain deletes (they raise nothing): its leaf
    // falls under the merge threshold and merges with a sibling whose value is 3.
    for k in (700..1300).filter(|&k| k != 1000) {
        tree.delete(&pool, &entry(k)).unwrap();
    }
    assert!(leaves(&pool, &tree) < before - 10);
    let m = page_max(&pool, &tree);
    assert_eq!(m[&1000], 7, "the merged page carries the raise");
    // A delete by a transaction raises the page it deletes from (before any merge).
    tree.delete_trx(&pool, &entry(1), 13).unwrap();
    assert_eq!(page_max(&pool, &tree)[&0], 13);
    // Emptying to one page lowers the root: the last leaf keeps the largest value it met.
    for k in (0..2000).filter(|&k| k != 1000 && !(700..1300).contains(&k) && k != 1) {
        tree.delete(&pool, &entry(k)).unwrap();
    }
    assert_eq!(tree.check(&pool).unwrap().height, 1);
    assert_eq!(page_max(&pool, &tree)[&1000], 13);
}

#[test]
fn bulk_build_stamps_every_leaf_and_no_node_page() {
    let env = Env::new(256);
    let pool = env.create();
    let mut b = BulkBuilder::new(
        &pool,
        SPACE,
        9,
        layout(),
        BulkOptions::default().max_trx_id(42),
    )
    .unwrap();
    for k in 0..3000 {
        b.push_values(&entry(k)).unwrap();
    }
    let (tree, end) = b.finish().unwrap();
    pool.commit_durable(end, FlushAtCommit::Sync).unwrap();
    let stats = tree.check(&pool).unwrap();
    assert!(stats.height >= 2);
    let m = page_max(&pool, &tree);
    assert_eq!(m.len(), 3000);
    assert!(m.values().all(|&x| x == 42));
    let root = pool.get_read(PageId::new(SPACE, tree.root())).unwrap();
    assert_eq!(node::max_trx_id(&root).unwrap(), 0, "node pages carry none");
    drop(root);
    // A one-page build stamps the root leaf.
    let (small, _) = BTree::bulk_build(
        &pool,
        SPACE,
        10,
        layout(),
        BulkOptions::default().max_trx_id(5),
        (0..3).map(|k| layout().encode(&entry(k)).unwrap()),
    )
    .unwrap();
    assert!(page_max(&pool, &small).values().all(|&x| x == 5));
}

/// Creates a tree with `layout` on a pool over a crash-simulating device, flushes it, lets
/// `work` write it (each change made durable through redo alone), then cuts the power and
/// recovers. Returns the reopened tree, its pool, the directory holding their files, and the
/// leaves' `PAGE_MAX_TRX_ID` by key as `work` left them.
fn after_power_cut(
    layout: fn() -> RecordLayout,
    work: impl FnOnce(&minnow_buf::BufferPool, &BTree),
) -> (
    tempfile::TempDir,
    minnow_buf::BufferPool,
    BTree,
    BTreeMap<i64, u64>,
) {
    let dir = tempfile::tempdir().unwrap();
    let sim = Arc::new(CrashSim::new(Arc::new(SyncBackend::new())));
    let backend: Arc<dyn Backend> = sim.clone();
    let data = dir.path().join("t1.ibd");
    let redo = dir.path().join("redo");
    let (root, want) = {
        let pool = crash_common::create(&*backend, dir.path(), &data, &redo, 1 << 20);
        let (tree, end) = BTree::create(&pool, SPACE, 9, layout()).unwrap();
        pool.commit_durable(end, FlushAtCommit::Sync).unwrap();
        pool.flush_all().unwrap();
        // From here on only the redo log's synced writes are sure to reach the disk.
        work(&pool, &tree);
        let want = page_max(&pool, &tree);
        // The device dies now: no page write that has not happened yet ever will.
        sim.arm(0);
        let root = tree.root();
        drop(pool);
        (root, want)
    };
    let report = sim.power_cut(1).unwrap();
    let pool = crash_common::recover(&*backend, dir.path(), &data, &redo, &report.to_string());
    let tree = BTree::open(&pool, SPACE, root, layout()).unwrap();
    (dir, pool, tree, want)
}

#[test]
fn the_max_trx_id_survives_a_power_cut_through_redo() {
    let (_dir, pool, tree, want) = after_power_cut(layout, |pool, tree| {
        for k in 0..600 {
            let end = tree
                .insert_trx(pool, &entry(k), 100 + k as u64 / 100)
                .unwrap();
            pool.commit_durable(end, FlushAtCommit::Sync).unwrap();
        }
        let end = tree
            .set_delete_mark_trx(pool, &entry(10), true, 900)
            .unwrap();
        pool.commit_durable(end, FlushAtCommit::Sync).unwrap();
    });
    tree.check(&pool).unwrap();
    let got = page_max(&pool, &tree);
    assert_eq!(got, want);
    assert_eq!(got[&10], 900);
    assert_eq!(got[&599], 105);
}

/// Clustered leaves keep `PAGE_MAX_TRX_ID` as a bound on their records' `DB_TRX_ID`s (0
/// meaning unknown there): the bounds written by inserts, splits and an in-place stamp come
/// back from redo after a power cut, and a count trusts every leaf again.
#[test]
fn a_clustered_leafs_bound_survives_a_power_cut_through_redo() {
    let row = |k: i64, trx: u64| {
        let mut r = common::row(k, &[b'c'; 120]);
        r[1] = Value::trx_id(trx);
        r
    };
    let (_dir, pool, tree, want) = after_power_cut(common::layout, |pool, tree| {
        for k in 0..300 {
            let end = tree.insert(pool, &row(k, 100 + k as u64 / 50)).unwrap();
            pool.commit_durable(end, FlushAtCommit::Sync).unwrap();
        }
        let end = tree
            .stamp_marked(pool, &[Value::Int(10)], 900, 1 << 55, Some(true))
            .unwrap();
        pool.commit_durable(end, FlushAtCommit::Sync).unwrap();
        assert_eq!(tree.check(pool).unwrap().unbounded_leaves, 0);
    });
    let stats = tree.check(&pool).unwrap();
    assert!(stats.pages_per_level[0] > 5, "{stats:?}");
    assert_eq!(stats.unbounded_leaves, 0);
    let got = page_max(&pool, &tree);
    assert_eq!(got, want);
    assert_eq!(got[&10], 900);
    assert_eq!(got[&299], 105);
    let c = tree.count_visible(&pool, 1000, &|_| true).unwrap();
    assert_eq!((c.visible, c.whole_leaves), (299, c.leaves));
}
