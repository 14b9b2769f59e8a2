//! The tree's crash campaign: inserts and deletes committed at `flush_log_at_trx_commit = 1`,
//! a power cut after a random number of writes and syncs, recovery, then the tree must pass
//! `check()` and hold exactly the acknowledged operations (or those plus the one in flight).
//!
//! Everything (tablespace, redo log, doublewrite segments) sits on a [`CrashSim`]. The pool
//! has 24 frames of 4 KiB and a page cleaner, so pages are written back (through the
//! doublewrite buffer) while the workload runs, and torn writes happen; the doublewrite buffer
//! repairs them. Splits, root raises, merges and root lowers each happen many times per seed,
//! and each is one mtr: after recovery, a half-done one would fail `check()`.
//!
//! The same campaign runs on a **compressed** tablespace (4 KiB pages in 1 KiB blocks): there
//! every change is also checked to compress, pages that stop compressing are split, the
//! doublewrite buffer writes blocks in place and repairs torn blocks, and recovery must give
//! the same guarantees.
//!
//! `MINNOW_CRASH_SEEDS=N` runs N seeds (default 200; a quarter of that, at least 10, for the
//! compressed campaign), `MINNOW_CRASH_SEED_START=S` starts at S.

mod common;
mod crash_common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::{SPACE, layout, row, value_of};
use minnow_btree::record::Value;
use minnow_btree::{BTree, ScanRange};
use minnow_io::{Backend, CrashSim, SyncBackend};
use minnow_redo::FlushAtCommit;
use minnow_zip::{Algorithm, KeyBlockSize, ZipConfig};

const OPS: u64 = 500;
const KEYS: u64 = 600;

use minnow_io::SplitMix64 as Rng;

type Model = BTreeMap<i64, Vec<u8>>;

/// One operation of the workload, chosen from the model's state: mostly inserts while the
/// tree is small, then a mix, with bursts of deletes so pages merge.
fn next_op(rng: &mut Rng, model: &Model, k: u64) -> (i64, Option<Vec<u8>>) {
    let key = rng.below(KEYS) as i64;
    let delete_phase = (k / 150) % 2 == 1;
    let want_delete = if delete_phase {
        rng.below(4) != 0
    } else {
        rng.below(4) == 0
    };
    if want_delete && !model.is_empty() {
        // Delete the first key at or after `key` (wrapping), so deletes always hit.
        let k = model
            .range(key..)
            .next()
            .or(model.iter().next())
            .map(|(k, _)| *k);
        if let Some(k) = k {
            return (k, None);
        }
    }
    if model.contains_key(&key) {
        return (key, None);
    }
    let len = rng.below(90) as usize;
    (
        key,
        Some((0..len).map(|i| (key as u8) ^ (i as u8)).collect()),
    )
}

fn apply(model: &mut Model, (key, value): &(i64, Option<Vec<u8>>)) {
    match value {
        Some(v) => {
            model.insert(*key, v.clone());
        }
        None => {
            model.remove(key);
        }
    }
}

#[derive(Debug)]
struct Outcome {
    acked: u64,
    inflight: bool,
    height: u16,
    /// Compression failures the workload met before the cut (0 on a plain tablespace).
    zip_failures: u64,
}

fn run_seed(seed: u64, zip: Option<ZipConfig>) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let sim = Arc::new(CrashSim::new(Arc::new(SyncBackend::new())));
    let backend: Arc<dyn Backend> = sim.clone();
    let data = dir.path().join("t1.ibd");
    let redo = dir.path().join("redo");
    let mut rng = Rng(seed ^ 0x7EE5_0000);
    let mut acked_model = Model::new();
    let mut attempted_model = None;
    let (root, acked, zip_failures) = {
        let pool = crash_common::create_with(&*backend, dir.path(), (&data, &redo), 256 << 10, zip);
        let (tree, end) = BTree::create(&pool, SPACE, 5, layout()).unwrap();
        pool.commit_durable(end, FlushAtCommit::Sync).unwrap();
        pool.flush_all().unwrap();
        sim.arm(1 + rng.below(1500));
        let mut acked = 0u64;
        for k in 1..=OPS {
            let op = next_op(&mut rng, &acked_model, k);
            let r = match &op {
                (key, Some(v)) => tree.insert(&pool, &row(*key, v)),
                (key, None) => tree.delete(&pool, &[Value::Int(*key)]),
            };
            let Ok(end) = r else { break };
            let mut after = acked_model.clone();
            apply(&mut after, &op);
            if pool.commit_durable(end, FlushAtCommit::Sync).is_err() {
                attempted_model = Some(after);
                break;
            }
            acked_model = after;
            acked = k;
        }
        let root = tree.root();
        let failures = tree.zip_stats().map_or(0, |z| z.failures);
        drop(pool);
        (root, acked, failures)
    };
    let report = sim.power_cut(seed).unwrap();

    let pool = crash_common::recover(
        &*backend,
        dir.path(),
        &data,
        &redo,
        &format!(
            "seed {seed}
{report}"
        ),
    );
    let tree = BTree::open(&pool, SPACE, root, layout())
        .unwrap_or_else(|e| panic!("seed {seed}: open: {e}\n{report}"));
    // The allocator agrees with the tree: every tree page is allocated to its segment, and
    // no page is both used and free (the splits and merges allocated and freed pages in the
    // same mtrs as their tree changes).
    let space = minnow_btree::space::check_space(&pool, SPACE)
        .unwrap_or_else(|e| panic!("seed {seed}: space check after recovery: {e}\n{report}"));
    let stats = tree
        .check_space(&pool, &space)
        .unwrap_or_else(|e| panic!("seed {seed}: check after recovery: {e}\n{report}"));
    assert!(
        space.loose_pages.is_empty(),
        "seed {seed}: leaked pages {:?}",
        space.loose_pages
    );
    let actual: Model = tree
        .scan(&pool, ScanRange::all())
        .unwrap()
        .map(|e| value_of(&e.unwrap().values))
        .collect();
    assert_eq!(stats.records, actual.len() as u64);
    let outcome = if actual == acked_model {
        Outcome {
            acked,
            inflight: false,
            height: stats.height,
            zip_failures,
        }
    } else if attempted_model.as_ref() == Some(&actual) {
        Outcome {
            acked,
            inflight: true,
            height: stats.height,
            zip_failures,
        }
    } else {
        let missing: Vec<_> = acked_model
            .keys()
            .filter(|k| !actual.contains_key(k))
            .take(5)
            .collect();
        let extra: Vec<_> = actual
            .keys()
            .filter(|k| !acked_model.contains_key(k))
            .take(5)
            .collect();
        panic!(
            "seed {seed}: recovered tree matches neither {acked} acknowledged ops nor one more: \
             missing {missing:?}, extra {extra:?}\n{report}"
        );
    };
    // The recovered tree takes more work.
    for k in 0..50 {
        let key = 10_000 + k;
        tree.insert(&pool, &row(key, b"after"))
            .unwrap_or_else(|e| panic!("seed {seed}: insert {k} after recovery: {e}"));
    }
    let space = minnow_btree::space::check_space(&pool, SPACE).unwrap();
    tree.check_space(&pool, &space).unwrap();
    outcome
}

fn seeds(default: u64) -> std::ops::Range<u64> {
    minnow_io::campaign_seeds(default)
}

#[test]
fn tree_crash_campaign() {
    let (mut verified, mut inflight, mut acked_total, mut tall) = (0u64, 0u64, 0u64, 0u64);
    for seed in seeds(200) {
        let o = run_seed(seed, None);
        verified += 1;
        inflight += u64::from(o.inflight);
        acked_total += o.acked;
        tall += u64::from(o.height >= 2);
    }
    eprintln!(
        "tree crash campaign: {verified} seeds verified, {inflight} kept their in-flight op, \
         {acked_total} acknowledged ops checked, {tall} recovered trees of two or more levels"
    );
    assert!(verified > 0 && acked_total > 0 && tall > 0);
}

#[test]
fn compressed_tree_crash_campaign() {
    let zip = ZipConfig::new(KeyBlockSize::K1, Algorithm::default());
    let n = (seeds(200).count() as u64 / 4).max(10);
    let start = seeds(200).start;
    let (mut verified, mut acked_total, mut failures, mut tall) = (0u64, 0u64, 0u64, 0u64);
    for seed in start..start + n {
        let o = run_seed(seed, Some(zip));
        verified += 1;
        acked_total += o.acked;
        failures += o.zip_failures;
        tall += u64::from(o.height >= 2);
    }
    eprintln!(
        "compressed tree crash campaign: {verified} seeds verified, {acked_total} acknowledged \
         ops checked, {failures} compression failures split before the cuts, {tall} recovered \
         trees of two or more levels"
    );
    assert!(verified > 0 && acked_total > 0 && tall > 0);
    assert!(failures > 0, "the workload never met a compression failure");
}
