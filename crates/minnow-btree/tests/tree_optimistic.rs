//! Optimistic descents racing writers: point reads whose node pages are read without
//! latches (the `olc` module) while other threads split, merge, raise and lower the same
//! tree, in a pool small enough that pages are evicted and read back all the time.
//!
//! Every fifth key is an anchor: inserted first, never changed, spread over the whole key
//! range so that the writers' splits and merges move it between pages. A reader must find
//! every anchor with its exact value, and any other key it finds must carry a value that
//! names its own key (no torn or misplaced record). At the end the readers must have taken
//! the optimistic path, and the tree must check.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use common::{Env, Rng, SPACE, tall_key as key, tall_layout as layout, tall_row as row};
use minnow_btree::record::Value;
use minnow_btree::tree::optimistic_stats;
use minnow_btree::{BTree, TreeError};

const KEYS: i64 = 3000;
const WRITERS: i64 = 2;
const READERS: usize = 2;

fn is_anchor(k: i64) -> bool {
    k % 5 == 0
}

/// A value naming its key: `len` bytes of `k ^ salt`, the salt first.
fn value(k: i64, salt: u8, len: usize) -> Vec<u8> {
    let mut v = vec![salt];
    v.resize(len.max(1), (k as u8) ^ salt);
    v
}

fn read_value(tree: &BTree, pool: &minnow_buf::BufferPool, k: i64) -> Option<Vec<u8>> {
    let e = tree.get(pool, &key(k)).unwrap()?;
    match (&e.values[0], e.values.last()) {
        (Value::Int(got), Some(Value::Bytes(v))) => {
            assert_eq!(*got, k, "asked for {k}, found {got}");
            Some(v.clone())
        }
        other => panic!("unexpected row {other:?}"),
    }
}

/// Writer `t`: inserts, updates and deletes its own non-anchor keys (`k % WRITERS == t`),
/// then deletes all of them (merges, root lowers), then grows again.
fn write(t: i64, tree: &BTree, pool: &minnow_buf::BufferPool, ops: u64) {
    let mut rng = Rng(0x0C1C ^ t as u64);
    let mut own = BTreeMap::new();
    let pick = |rng: &mut Rng| loop {
        let k = rng.below(KEYS as u64) as i64;
        if k % WRITERS == t && !is_anchor(k) {
            return k;
        }
    };
    for round in 0..2 {
        for n in 0..ops {
            let k = pick(&mut rng);
            let v = value(k, (n as u8) | 1, 1 + rng.below(300) as usize);
            match rng.below(10) {
                0..6 => match tree.insert(pool, &row(k, &v)) {
                    Ok(_) => assert!(own.insert(k, v).is_none()),
                    Err(TreeError::Duplicate { .. }) => assert!(own.contains_key(&k)),
                    Err(e) => panic!("writer {t}: insert {k}: {e}"),
                },
                6..8 => match tree.update(pool, &row(k, &v)) {
                    Ok(_) => assert!(own.insert(k, v).is_some()),
                    Err(TreeError::NotFound { .. }) => assert!(!own.contains_key(&k)),
                    Err(e) => panic!("writer {t}: update {k}: {e}"),
                },
                _ => match tree.delete(pool, &key(k)) {
                    Ok(_) => assert!(own.remove(&k).is_some()),
                    Err(TreeError::NotFound { .. }) => assert!(!own.contains_key(&k)),
                    Err(e) => panic!("writer {t}: delete {k}: {e}"),
                },
            }
        }
        if round == 0 {
            for k in std::mem::take(&mut own).into_keys() {
                tree.delete(pool, &key(k)).unwrap();
            }
        }
    }
}

#[test]
fn optimistic_reads_race_splits_merges_and_eviction() {
    let ops = common::env_count("MINNOW_CONCURRENT_OPS", 2500);
    let env = Env::new(96);
    let pool = env.create();
    let (tree, _) = BTree::create(&pool, SPACE, 9, layout()).unwrap();
    for k in (0..KEYS).filter(|&k| is_anchor(k)) {
        tree.insert(&pool, &row(k, &value(k, 0, 20))).unwrap();
    }
    let stop = AtomicBool::new(false);
    let stats = std::thread::scope(|s| {
        let readers: Vec<_> = (0..READERS)
            .map(|r| {
                let (tree, pool, stop) = (&tree, &pool, &stop);
                s.spawn(move || {
                    let mut rng = Rng(0x5EED ^ r as u64);
                    let before = optimistic_stats();
                    let mut reads = 0u64;
                    while !stop.load(Ordering::Acquire) || reads < 1000 {
                        let k = rng.below(KEYS as u64) as i64;
                        let got = read_value(tree, pool, k);
                        if is_anchor(k) {
                            assert_eq!(got, Some(value(k, 0, 20)), "reader {r}: anchor {k}");
                        } else if let Some(v) = got {
                            assert_eq!(v, value(k, v[0], v.len()), "reader {r}: key {k}");
                        }
                        reads += 1;
                    }
                    let after = optimistic_stats();
                    (
                        after.done - before.done,
                        after.retries - before.retries,
                        after.fallbacks - before.fallbacks,
                    )
                })
            })
            .collect();
        let writers: Vec<_> = (0..WRITERS)
            .map(|t| {
                let (tree, pool) = (&tree, &pool);
                s.spawn(move || write(t, tree, pool, ops))
            })
            .collect();
        for w in writers {
            if let Err(e) = w.join() {
                stop.store(true, Ordering::Release);
                std::panic::resume_unwind(e);
            }
        }
        stop.store(true, Ordering::Release);
        readers
            .into_iter()
            .map(|r| r.join().unwrap())
            .collect::<Vec<_>>()
    });
    let done: u64 = stats.iter().map(|s| s.0).sum();
    assert!(done > 0, "the readers descended optimistically: {stats:?}");
    eprintln!("optimistic descents (done, retries, fallbacks) per reader: {stats:?}");
    tree.check(&pool).unwrap();
    for k in (0..KEYS).filter(|&k| is_anchor(k)) {
        assert_eq!(read_value(&tree, &pool, k), Some(value(k, 0, 20)));
    }
}
