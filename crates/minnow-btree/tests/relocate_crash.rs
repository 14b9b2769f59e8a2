//! Page relocation ([`BTree::pack`]): the tree packs into the low end of its segments, the
//! end of the space empties, and a power cut at any write or sync of a pack loses nothing.
//!
//! A tree is filled row by row in random key order (splits put pages all over the space),
//! two thirds of its records are deleted (merges free pages in the middle), and that state
//! is made durable. Then `pack` runs with the power cut after a random number of writes and
//! syncs (while the page cleaner flushes moved pages through the doublewrite buffer). After
//! recovery the tree must pass `check()` and `check_space()` (its pages are exactly its
//! segments' pages) and hold exactly the records it held before the pack, however many moves
//! were made; a second pack then finishes the job, after which no page of the tree lies
//! above its segment's lowest free page, and the space's free tail can be taken.
//!
//! `MINNOW_CRASH_SEEDS=N` runs N seeds (default 12), `MINNOW_CRASH_SEED_START=S` starts at S.

mod common;
mod crash_common;

use std::sync::Arc;

use common::{SPACE, layout, row, value_of};
use minnow_btree::space::{check_space, shrink_tail};
use minnow_btree::{BTree, ScanRange};
use minnow_buf::BufferPool;
use minnow_io::{Backend, CrashSim, SplitMix64 as Rng, SyncBackend};
use minnow_redo::FlushAtCommit;

const RECORDS: i64 = 3000;

fn value(k: i64) -> Vec<u8> {
    (0..(k as usize % 151 + 250))
        .map(|i| (k as u8) ^ (i as u8))
        .collect()
}

/// Fills a new tree in a seeded random order, deletes two thirds of it, makes that durable;
/// returns the tree and the records left, in key order.
fn fill(pool: &BufferPool, seed: u64) -> (BTree, Vec<(i64, Vec<u8>)>) {
    let (tree, _) = BTree::create(pool, SPACE, 5, layout()).unwrap();
    let mut keys: Vec<i64> = (0..RECORDS).collect();
    Rng(seed ^ 0x5E10_CA7E).shuffle(&mut keys);
    let mut end = None;
    for &k in &keys {
        end = Some(tree.insert(pool, &row(k, &value(k))).unwrap());
    }
    for &k in keys.iter().filter(|&&k| k % 3 != 0) {
        end = Some(tree.delete(pool, &row(k, b"")[..1]).unwrap());
    }
    pool.commit_durable(end.unwrap(), FlushAtCommit::Sync)
        .unwrap();
    pool.flush_all().unwrap();
    let left = (0..RECORDS)
        .filter(|k| k % 3 == 0)
        .map(|k| (k, value(k)))
        .collect();
    (tree, left)
}

fn contents(tree: &BTree, pool: &BufferPool) -> Vec<(i64, Vec<u8>)> {
    tree.scan(pool, ScanRange::all())
        .unwrap()
        .map(|e| value_of(&e.unwrap().values))
        .collect()
}

/// The tree is sound, owns exactly its segments' pages, and holds `want`.
fn verify(tree: &BTree, pool: &BufferPool, want: &[(i64, Vec<u8>)], what: &str) {
    let report = check_space(pool, SPACE).unwrap_or_else(|e| panic!("{what}: space: {e}"));
    let stats = tree
        .check_space(pool, &report)
        .unwrap_or_else(|e| panic!("{what}: tree: {e}"));
    assert_eq!(stats.records, want.len() as u64, "{what}");
    assert_eq!(contents(tree, pool), want, "{what}");
}

#[test]
fn pack_moves_pages_down_and_the_tail_empties() {
    let dir = tempfile::tempdir().unwrap();
    let backend = SyncBackend::new();
    let (data, redo) = (dir.path().join("t1.ibd"), dir.path().join("redo"));
    let pool = crash_common::create(&backend, dir.path(), &data, &redo, 4 << 20);
    let (tree, left) = fill(&pool, 1);
    let before = check_space(&pool, SPACE).unwrap().usage.size;
    let moved = tree.pack(&pool).unwrap();
    assert!(moved > 0, "random inserts and deletes left pages to move");
    verify(&tree, &pool, &left, "after pack");
    assert_eq!(
        tree.pack(&pool).unwrap(),
        0,
        "a packed tree has nothing to move"
    );
    let after = shrink_tail(&pool, SPACE).unwrap();
    assert!(
        after < before,
        "the packed tree's old tail leaves the space: {after} of {before} pages"
    );
    verify(&tree, &pool, &left, "after shrink");
    // The tree and the space take more work.
    for k in RECORDS..RECORDS + 500 {
        tree.insert(&pool, &row(k, &value(k))).unwrap();
    }
    tree.check(&pool).unwrap();
}

fn run_seed(seed: u64) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let sim = Arc::new(CrashSim::new(Arc::new(SyncBackend::new())));
    let backend: Arc<dyn Backend> = sim.clone();
    let (data, redo) = (dir.path().join("t1.ibd"), dir.path().join("redo"));
    let mut rng = Rng(seed ^ 0x9AC4_0000);
    let (root, left, finished) = {
        let pool = crash_common::create(&*backend, dir.path(), &data, &redo, 4 << 20);
        let (tree, left) = fill(&pool, seed);
        sim.arm(1 + rng.below(1500));
        let finished = tree.pack(&pool).is_ok() && pool.flush_all().is_ok();
        let root = tree.root();
        drop(pool);
        (root, left, finished)
    };
    let report = sim.power_cut(seed).unwrap();
    let what = format!("seed {seed}\n{report}");
    let pool = crash_common::recover(&*backend, dir.path(), &data, &redo, &what);
    let tree =
        BTree::open(&pool, SPACE, root, layout()).unwrap_or_else(|e| panic!("{what}: open: {e}"));
    verify(&tree, &pool, &left, &format!("{what}: after recovery"));
    tree.pack(&pool)
        .unwrap_or_else(|e| panic!("{what}: second pack: {e}"));
    assert_eq!(tree.pack(&pool).unwrap(), 0, "{what}: packed twice");
    shrink_tail(&pool, SPACE).unwrap();
    verify(&tree, &pool, &left, &format!("{what}: packed and shrunk"));
    tree.insert(&pool, &row(-1, b"after")).unwrap();
    tree.check(&pool).unwrap();
    finished
}

#[test]
fn pack_crash_campaign() {
    let (mut seeds, mut finished) = (0u64, 0u64);
    for seed in minnow_io::campaign_seeds(12) {
        seeds += 1;
        finished += u64::from(run_seed(seed));
    }
    eprintln!("pack crash campaign: {seeds} seeds, {finished} packs finished before the cut");
    assert!(seeds > 0);
}
