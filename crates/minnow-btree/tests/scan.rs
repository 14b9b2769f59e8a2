//! Range scans against a model: forward and backward, inclusive, exclusive and open bounds,
//! bounds that are prefixes of a two-column key, limits; and scans that keep going while the
//! tree changes under them (the cursor holds no latch between calls, so the test inserts and
//! deletes between two `next` calls, forcing position restores in both directions).

mod common;

use std::collections::BTreeSet;
use std::ops::Bound;

use minnow_btree::record::{Column, ColumnType, RecordLayout, Value};
use minnow_btree::tree::{BulkBuilder, BulkOptions};
use minnow_btree::{BTree, ScanRange, TreeError};
use minnow_buf::{BufConfig, BufferPool};
use minnow_io::SplitMix64 as Rng;
use minnow_page::PageSize;

type Key = (i64, i64);

/// Key `(a I64, b I64)`, one VARCHAR(200) value.
fn layout() -> RecordLayout {
    RecordLayout::clustered(
        vec![Column::new(ColumnType::I64), Column::new(ColumnType::I64)],
        vec![Column::new(ColumnType::Var(200))],
    )
    .unwrap()
}

fn row((a, b): Key) -> Vec<Value> {
    vec![
        Value::Int(a),
        Value::Int(b),
        Value::trx_id(1),
        Value::roll_ptr(1 << 55),
        Value::Bytes(vec![(a ^ b) as u8; 40 + (b as usize % 50)]),
    ]
}

fn key_of(values: &[Value]) -> Key {
    match (&values[0], &values[1]) {
        (Value::Int(a), Value::Int(b)) => (*a, *b),
        other => panic!("unexpected key {other:?}"),
    }
}

fn pool(dir: &std::path::Path) -> BufferPool {
    BufferPool::create_scratch(dir, BufConfig::with_frames(48, PageSize::K4), 1).unwrap()
}

/// Every third `b` for each `a` in 0..30: 30 groups of 20 keys, several leaves per group.
fn keys() -> BTreeSet<Key> {
    (0..30)
        .flat_map(|a| (0..20).map(move |j| (a, j * 3)))
        .collect()
}

fn build(pool: &BufferPool, keys: &BTreeSet<Key>) -> BTree {
    let mut b = BulkBuilder::new(pool, 1, 3, layout(), BulkOptions::default()).unwrap();
    for &k in keys {
        b.push_values(&row(k)).unwrap();
    }
    b.finish().unwrap().0
}

/// A bound: no values, `a` alone (a prefix) or `(a, b)`.
#[derive(Debug, Clone, Copy)]
enum B {
    Open,
    In(&'static [i64]),
    Ex(&'static [i64]),
}

fn leak(v: Vec<i64>) -> &'static [i64] {
    Box::leak(v.into_boxed_slice())
}

fn random_bound(rng: &mut Rng) -> B {
    let vals = match rng.below(3) {
        0 => vec![rng.below(32) as i64 - 1],
        _ => vec![rng.below(32) as i64 - 1, rng.below(62) as i64 - 1],
    };
    match rng.below(5) {
        0 => B::Open,
        1 | 2 => B::In(leak(vals)),
        _ => B::Ex(leak(vals)),
    }
}

fn to_bound(b: B) -> Bound<Vec<Value>> {
    let v = |s: &[i64]| s.iter().map(|&x| Value::Int(x)).collect();
    match b {
        B::Open => Bound::Unbounded,
        B::In(s) => Bound::Included(v(s)),
        B::Ex(s) => Bound::Excluded(v(s)),
    }
}

/// The key's prefix of the bound's length, compared with the bound.
fn cmp(k: Key, s: &[i64]) -> std::cmp::Ordering {
    let kv = [k.0, k.1];
    kv[..s.len()].cmp(s)
}

fn in_range(k: Key, start: B, end: B) -> bool {
    use std::cmp::Ordering::*;
    let lo = match start {
        B::Open => true,
        B::In(s) => cmp(k, s) != Less,
        B::Ex(s) => cmp(k, s) == Greater,
    };
    let hi = match end {
        B::Open => true,
        B::In(e) => cmp(k, e) != Greater,
        B::Ex(e) => cmp(k, e) == Less,
    };
    lo && hi
}

fn collect(tree: &BTree, pool: &BufferPool, range: ScanRange) -> Vec<Key> {
    tree.scan(pool, range)
        .unwrap()
        .map(|e| key_of(&e.unwrap().values))
        .collect()
}

#[test]
fn bounds_prefixes_limits_both_directions() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path());
    let model = keys();
    let tree = build(&pool, &model);
    assert!(tree.check(&pool).unwrap().height >= 2);
    let mut rng = Rng(0x5CA1);
    for round in 0..600 {
        let (start, end) = (random_bound(&mut rng), random_bound(&mut rng));
        let limit = (rng.below(3) == 0).then(|| rng.below(40) as usize);
        let reverse = rng.below(2) == 0;
        // Small batches stop inside leaves and continue there on the next visit.
        let batch = (rng.below(2) == 0).then(|| 1 + rng.below(5) as usize);
        let mut range = ScanRange::new(to_bound(start), to_bound(end));
        if let Some(l) = limit {
            range = range.limit(l);
        }
        if reverse {
            range = range.reverse();
        }
        range.batch = batch;
        let got = collect(&tree, &pool, range);
        let matching = model.iter().copied().filter(|&k| in_range(k, start, end));
        let want: Vec<Key> = if reverse {
            matching.rev().take(limit.unwrap_or(usize::MAX)).collect()
        } else {
            matching.take(limit.unwrap_or(usize::MAX)).collect()
        };
        assert_eq!(
            got, want,
            "round {round}: {start:?}..{end:?} limit {limit:?} batch {batch:?} reverse {reverse}"
        );
    }
}

#[test]
fn prefix_examples() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path());
    let tree = build(&pool, &keys());
    let a = |x: i64| vec![Value::Int(x)];
    // Everything with a = 7, both ways.
    let seven = ScanRange::new(Bound::Included(a(7)), Bound::Included(a(7)));
    let fwd = collect(&tree, &pool, seven.clone());
    assert_eq!(fwd, (0..20).map(|j| (7, j * 3)).collect::<Vec<_>>());
    let mut back = collect(&tree, &pool, seven.reverse());
    back.reverse();
    assert_eq!(back, fwd);
    // After every a = 7 and before every a = 9: exactly a = 8.
    let eight = collect(
        &tree,
        &pool,
        ScanRange::new(Bound::Excluded(a(7)), Bound::Excluded(a(9))),
    );
    assert_eq!(eight, (0..20).map(|j| (8, j * 3)).collect::<Vec<_>>());
    // The last three keys below a = 3, newest first.
    let top = collect(
        &tree,
        &pool,
        ScanRange::new(Bound::Unbounded, Bound::Excluded(a(3)))
            .reverse()
            .limit(3),
    );
    assert_eq!(top, [(2, 57), (2, 54), (2, 51)]);
    // A bound longer than the key is an error.
    let long = vec![Value::Int(1), Value::Int(2), Value::Int(3)];
    assert!(matches!(
        tree.scan(
            &pool,
            ScanRange::new(Bound::Included(long), Bound::Unbounded)
        ),
        Err(TreeError::BadKey { .. })
    ));
}

#[test]
fn scans_survive_changes_between_calls() {
    for reverse in [false, true] {
        for seed in 0..9u64 {
            let dir = tempfile::tempdir().unwrap();
            let pool = pool(dir.path());
            let mut model = keys();
            let tree = build(&pool, &model);
            let initial = model.clone();
            let mut deleted = BTreeSet::new();
            let mut rng = Rng(seed * 77 + u64::from(reverse));
            let mut range = ScanRange::all();
            if reverse {
                range = range.reverse();
            }
            // Batches of 1 and 2 stop inside a leaf, which then changes before the scan
            // comes back to it: the restore must continue after the last key returned.
            if seed % 3 != 0 {
                range = range.batch((seed % 3) as usize);
            }
            let scan = tree.scan(&pool, range).unwrap();
            let mut got = Vec::new();
            for e in scan {
                got.push(key_of(&e.unwrap().values));
                // Change the tree: inserts (between existing keys, so pages split) and
                // deletes (so pages merge), anywhere.
                for _ in 0..rng.below(6) {
                    let k = (rng.below(30) as i64, rng.below(60) as i64);
                    if model.contains(&k) {
                        tree.delete(&pool, &[Value::Int(k.0), Value::Int(k.1)])
                            .unwrap();
                        model.remove(&k);
                        deleted.insert(k);
                    } else {
                        tree.insert(&pool, &row(k)).unwrap();
                        model.insert(k);
                    }
                }
            }
            // Strictly monotonic, in the scan's direction.
            for w in got.windows(2) {
                assert!(
                    if reverse { w[0] > w[1] } else { w[0] < w[1] },
                    "seed {seed} reverse {reverse}: {:?} then {:?}",
                    w[0],
                    w[1]
                );
            }
            // Every key that was there from start to end (never deleted) was seen.
            let seen: BTreeSet<Key> = got.iter().copied().collect();
            for k in initial.difference(&deleted) {
                assert!(
                    seen.contains(k),
                    "seed {seed} reverse {reverse}: {k:?} missed"
                );
            }
            tree.check(&pool).unwrap();
        }
    }
}

#[test]
fn a_limit_or_a_batch_decodes_only_what_it_returns() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path());
    let tree = build(&pool, &keys());
    let from = |a: i64| Bound::Included(vec![Value::Int(a)]);
    for reverse in [false, true] {
        let mut range = ScanRange::new(from(3), Bound::Included(vec![Value::Int(20)])).limit(10);
        if reverse {
            range = range.reverse();
        }
        let mut scan = tree.scan(&pool, range).unwrap();
        let first = scan.next().unwrap().unwrap();
        // The limit caps every leaf visit: ten records in all, not the rest of a leaf.
        assert!(scan.decoded() <= 10, "reverse {reverse}");
        let mut n = 1;
        for e in scan.by_ref() {
            e.unwrap();
            n += 1;
        }
        assert_eq!((n, scan.decoded()), (10, 10), "reverse {reverse}");
        assert_eq!(
            key_of(&first.values),
            if reverse { (20, 57) } else { (3, 0) }
        );
    }
    // Without a limit, a batch grows: 3, then 6, then 12 records.
    let mut scan = tree.scan(&pool, ScanRange::all().batch(3)).unwrap();
    let got: Vec<Key> = scan
        .by_ref()
        .take(4)
        .map(|e| key_of(&e.unwrap().values))
        .collect();
    assert_eq!(got, [(0, 0), (0, 3), (0, 6), (0, 9)]);
    assert_eq!(scan.decoded(), 9);
    assert_eq!(scan.count(), keys().len() - 4);
}

#[test]
fn fields_decodes_only_the_fields_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path());
    let tree = build(&pool, &keys());
    let range = ScanRange::new(Bound::Included(vec![Value::Int(4)]), Bound::Unbounded)
        .limit(3)
        .fields(vec![1, 4]);
    let got: Vec<Vec<Value>> = tree
        .scan(&pool, range)
        .unwrap()
        .map(|e| e.unwrap().values)
        .collect();
    let want: Vec<Vec<Value>> = [(4, 0), (4, 3), (4, 6)]
        .into_iter()
        .map(|k| {
            let mut r = row(k);
            for i in [0, 2, 3] {
                r[i] = Value::Null;
            }
            r
        })
        .collect();
    assert_eq!(got, want);
}
