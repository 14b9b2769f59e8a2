//! A forward range scan whose start is a key the hash index knows begins on that key's leaf
//! without a descent (`BTree::guessed_leaf`); every other start descends, and a guess that
//! no longer verifies costs only the descent. Every scan is checked against the keys stored.

mod common;

use std::ops::Bound;

use common::{row, setup, value, warm};
use minnow_ahi::AhiConfig;
use minnow_btree::record::Value;
use minnow_btree::tree::descents;
use minnow_btree::{ScanRange, Visit};

/// Even keys 0, 2, ..., 2 * (N - 1) are stored at first.
const N: u64 = 2000;
const LAST: u64 = 2 * (N - 1);

/// The keys of a forward scan of at most `n` records from `start`, read in place
/// (`visit_in`), and the descents it took.
fn visit(s: &common::Setup, start: Bound<u64>, n: usize) -> (Vec<u64>, u64) {
    let start = start.map(|k| vec![Value::UInt(k)]);
    let mut cursor = s
        .tree
        .cursor(ScanRange::new(start, Bound::Unbounded).limit(n))
        .unwrap();
    let before = descents();
    let mut keys = Vec::new();
    let more = cursor
        .visit_in(&s.pool, |rec| -> Result<Visit, minnow_btree::TreeError> {
            match rec.value(0)? {
                Value::UInt(k) => keys.push(k),
                other => panic!("key {other:?}"),
            }
            Ok(Visit::Next)
        })
        .unwrap();
    assert!(!more);
    (keys, descents() - before)
}

/// The same scan through the owned reads (`RangeScan`'s iterator).
fn owned(s: &common::Setup, start: Bound<u64>, n: usize) -> (Vec<u64>, u64) {
    let start = start.map(|k| vec![Value::UInt(k)]);
    let before = descents();
    let keys = s
        .tree
        .scan(&s.pool, ScanRange::new(start, Bound::Unbounded).limit(n))
        .unwrap()
        .map(|e| match e.unwrap().values[0] {
            Value::UInt(k) => k,
            ref other => panic!("key {other:?}"),
        })
        .collect();
    (keys, descents() - before)
}

/// The `n` stored keys from `from` on (`stored(k)` says whether `k` is stored).
fn expected(from: u64, n: usize, max: u64, stored: impl Fn(u64) -> bool) -> Vec<u64> {
    (from..=max).filter(|&k| stored(k)).take(n).collect()
}

fn loaded() -> common::Setup {
    let s = setup(AhiConfig::default());
    for k in (0..N).map(|k| 2 * k) {
        s.tree.insert(&s.pool, &row(k, &value(k, 0))).unwrap();
    }
    warm(&s, (0..N).map(|k| 2 * k), 3, |k| Some(value(k, 0)));
    assert!(s.ahi.stats().pages_hashed > 0);
    s
}

#[test]
fn a_scan_from_a_hashed_key_starts_without_a_descent() {
    let s = loaded();
    let even = |k: u64| k.is_multiple_of(2);
    for k in (0..N).map(|k| 2 * k) {
        let hits = s.ahi.stats().hits;
        // Included: the range starts at the key; it may run on into the next leaves.
        let (keys, d) = visit(&s, Bound::Included(k), 10);
        assert_eq!(keys, expected(k, 10, LAST, even), "from {k}");
        assert_eq!(d, 0, "from {k}");
        // Excluded: right after it.
        let (keys, d) = owned(&s, Bound::Excluded(k), 10);
        assert_eq!(keys, expected(k + 1, 10, LAST, even), "after {k}");
        assert_eq!(d, 0, "after {k}");
        assert_eq!(s.ahi.stats().hits - hits, 2, "from {k}");
    }
    // A key that is not stored has no entry: the scan descends, and is right.
    let (keys, d) = visit(&s, Bound::Included(7), 3);
    assert_eq!((keys, d), (vec![8, 10, 12], 1));
    // So do a scan from the start and one past the last key.
    assert_eq!(visit(&s, Bound::Unbounded, 2), (vec![0, 2], 1));
    assert_eq!(visit(&s, Bound::Excluded(LAST), 2), (vec![], 0));
}

#[test]
fn a_stale_guess_descends_and_the_scan_stays_right() {
    let s = loaded();
    // Odd keys into every leaf: each page changes (its LSN moves, records move), so every
    // entry the warm-up made is stale.
    for k in (0..N).map(|k| 2 * k + 1) {
        s.tree.insert(&s.pool, &row(k, &value(k, 1))).unwrap();
    }
    let all = |_: u64| true;
    for k in (0..N).map(|k| 2 * k).step_by(7) {
        let (keys, d) = visit(&s, Bound::Included(k), 10);
        assert_eq!(keys, expected(k, 10, LAST + 1, all), "from {k}");
        assert!(d <= 1, "from {k}: {d} descents");
        let (keys, _) = owned(&s, Bound::Excluded(k), 4);
        assert_eq!(keys, expected(k + 1, 4, LAST + 1, all), "after {k}");
    }
    assert!(s.ahi.stats().misses > 0);
}
