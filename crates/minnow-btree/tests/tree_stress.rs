//! Concurrency stress: threads insert, delete, look up and scan at once, on key ranges of their
//! own and on one range they all share; then `check()` must pass and the tree must hold
//! exactly what the threads' operations imply.
//!
//! - Own ranges: only thread `t` touches keys `t * 100_000 ..`, so its private model is exact,
//!   and every scan or lookup of its range, made while the other threads split and merge the
//!   pages around it, must return exactly that model.
//! - The shared range: all threads insert and delete the same keys (value a function of the
//!   key). An insert succeeds only on an absent key and a delete only on a present one, so per
//!   key the successes alternate and the key is present at the end iff the threads' successful
//!   inserts outnumber their successful deletes (by exactly one).
//!
//! `MINNOW_STRESS_OPS` sets the operations per thread (default 8000).

mod common;

use std::collections::BTreeMap;
use std::ops::Bound;

use common::{Env, Rng, SPACE, layout, row, value_of};
use minnow_btree::record::Value;
use minnow_btree::{BTree, ScanRange, TreeError};
use minnow_buf::BufferPool;

const THREADS: i64 = 6;
const OWN: i64 = 1500;
const SHARED_BASE: i64 = 50_000;
const SHARED: i64 = 400;

fn own_value(key: i64, n: u64) -> Vec<u8> {
    let len = (key as u64 ^ n) % 200;
    (0..len)
        .map(|i| (key as u8).wrapping_add(i as u8))
        .collect()
}

fn shared_value(key: i64) -> Vec<u8> {
    vec![key as u8; (key % 60) as usize]
}

fn scan(tree: &BTree, pool: &BufferPool, lo: i64, hi: i64) -> Vec<(i64, Vec<u8>)> {
    let range = ScanRange::new(
        Bound::Included(vec![Value::Int(lo)]),
        Bound::Excluded(vec![Value::Int(hi)]),
    );
    tree.scan(pool, range)
        .unwrap()
        .map(|e| value_of(&e.unwrap().values))
        .collect()
}

/// What one thread did: its own range's final contents and, per shared key, successful
/// inserts minus successful deletes.
struct Done {
    own: BTreeMap<i64, Vec<u8>>,
    shared: BTreeMap<i64, i64>,
    scans: u64,
}

fn worker(t: i64, tree: &BTree, pool: &BufferPool, ops: u64) -> Done {
    let mut rng = Rng(0xABCD ^ t as u64);
    let base = t * 100_000;
    let mut own = BTreeMap::new();
    let mut shared = BTreeMap::new();
    let mut scans = 0;
    for n in 0..ops {
        match rng.below(20) {
            0..=6 => {
                let k = base + rng.below(OWN as u64) as i64;
                let v = own_value(k, n);
                match tree.insert(pool, &row(k, &v)) {
                    Ok(_) => assert!(own.insert(k, v).is_none()),
                    Err(TreeError::Duplicate { .. }) => assert!(own.contains_key(&k)),
                    Err(e) => panic!("thread {t}: insert {k}: {e}"),
                }
            }
            7..=10 => {
                let k = base + rng.below(OWN as u64) as i64;
                match tree.delete(pool, &[Value::Int(k)]) {
                    Ok(_) => assert!(own.remove(&k).is_some()),
                    Err(TreeError::NotFound { .. }) => assert!(!own.contains_key(&k)),
                    Err(e) => panic!("thread {t}: delete {k}: {e}"),
                }
            }
            11..=12 => {
                let k = base + rng.below(OWN as u64) as i64;
                let got = tree
                    .get(pool, &[Value::Int(k)])
                    .unwrap()
                    .map(|e| value_of(&e.values).1);
                assert_eq!(got.as_ref(), own.get(&k), "thread {t}: get {k}");
            }
            13..=14 => {
                let lo = base + rng.below(OWN as u64) as i64;
                let hi = lo + rng.below(400) as i64;
                let want: Vec<_> = own.range(lo..hi).map(|(k, v)| (*k, v.clone())).collect();
                assert_eq!(
                    scan(tree, pool, lo, hi),
                    want,
                    "thread {t}: scan {lo}..{hi}"
                );
                scans += 1;
            }
            15..=16 => {
                let k = SHARED_BASE + rng.below(SHARED as u64) as i64;
                match tree.insert(pool, &row(k, &shared_value(k))) {
                    Ok(_) => *shared.entry(k).or_insert(0) += 1,
                    Err(TreeError::Duplicate { .. }) => {}
                    Err(e) => panic!("thread {t}: shared insert {k}: {e}"),
                }
            }
            17..=18 => {
                let k = SHARED_BASE + rng.below(SHARED as u64) as i64;
                match tree.delete(pool, &[Value::Int(k)]) {
                    Ok(_) => *shared.entry(k).or_insert(0) -= 1,
                    Err(TreeError::NotFound { .. }) => {}
                    Err(e) => panic!("thread {t}: shared delete {k}: {e}"),
                }
            }
            _ => {
                // A scan across every range: sorted, and the shared keys carry their values.
                let all = scan(tree, pool, 0, i64::MAX);
                assert!(
                    all.windows(2).all(|w| w[0].0 < w[1].0),
                    "thread {t}: unsorted scan"
                );
                for (k, v) in &all {
                    if (SHARED_BASE..SHARED_BASE + SHARED).contains(k) {
                        assert_eq!(*v, shared_value(*k));
                    }
                }
                scans += 1;
            }
        }
    }
    Done { own, shared, scans }
}

#[test]
fn threads_insert_delete_and_scan() {
    stress(None, 8000);
}

/// The same threads on a compressed tablespace (4 KiB pages in 1 KiB blocks): every change
/// is also checked to compress, and pages that stop compressing are reorganized or split
/// while the other threads descend, scan and change the tree.
#[test]
fn threads_insert_delete_and_scan_on_a_compressed_tree() {
    let zip = minnow_zip::ZipConfig::new(
        minnow_zip::KeyBlockSize::K1,
        minnow_zip::Algorithm::default(),
    );
    stress(Some(zip), 3000);
}

fn stress(zip: Option<minnow_zip::ZipConfig>, default_ops: u64) {
    let ops = common::env_count("MINNOW_STRESS_OPS", default_ops);
    let env = Env::new(96);
    let pool = env.create_with(zip);
    let (tree, _) = BTree::create(&pool, SPACE, 11, layout()).unwrap();
    let done: Vec<Done> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (tree, pool) = (&tree, &pool);
                s.spawn(move || worker(t, tree, pool, ops))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let stats = tree.check(&pool).unwrap();
    let mut want: BTreeMap<i64, Vec<u8>> = BTreeMap::new();
    let mut net: BTreeMap<i64, i64> = BTreeMap::new();
    for d in &done {
        want.extend(d.own.iter().map(|(k, v)| (*k, v.clone())));
        for (k, n) in &d.shared {
            *net.entry(*k).or_insert(0) += n;
        }
    }
    for (k, n) in net {
        assert!(n == 0 || n == 1, "shared key {k}: net {n}");
        if n == 1 {
            want.insert(k, shared_value(k));
        }
    }
    let all = scan(&tree, &pool, 0, i64::MAX);
    let want: Vec<_> = want.into_iter().collect();
    assert_eq!(all.len(), want.len());
    assert_eq!(all, want);
    assert_eq!(stats.records, want.len() as u64);
    let scans: u64 = done.iter().map(|d| d.scans).sum();
    eprintln!(
        "stress: {THREADS} threads x {ops} ops, {scans} scans; tree of {} records, height {}, {:?} pages per level",
        stats.records, stats.height, stats.pages_per_level
    );
    assert!(stats.height >= 2);
    if zip.is_some() {
        let z = tree.zip_stats().unwrap();
        eprintln!("stress on a compressed tree: {z:?}");
        assert!(z.failures > 0 && z.zip_splits > 0, "{z:?}");
    }
    pool.shutdown().unwrap();
}
