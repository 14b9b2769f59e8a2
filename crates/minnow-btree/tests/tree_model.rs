//! Model-based test of the B+tree: random inserts, deletes, updates, delete-marks, point
//! lookups and range scans (bounds and limits) on a tree of 4 KiB pages in a 24-frame pool
//! (pages are evicted and flushed all the time), mirrored on a `BTreeMap`. After every batch
//! `check()` passes and a full scan equals the model; `Reopen` shuts the pool down cleanly,
//! recovers it and checks again.

mod common;

use std::collections::BTreeMap;
use std::ops::Bound;

use common::{Env, SPACE, layout, row, value_of};
use minnow_btree::record::Value;
use minnow_btree::{BTree, ScanRange, TreeError};
use minnow_buf::BufferPool;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Insert(i64, usize),
    Delete(i64),
    Update(i64, usize),
    Mark(i64, bool),
    Get(i64),
    Scan(Bound<i64>, Bound<i64>, Option<usize>, bool),
    Reopen,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Row {
    value: Vec<u8>,
    deleted: bool,
}

const KEYS: i64 = 1500;

fn bound() -> impl Strategy<Value = Bound<i64>> {
    prop_oneof![
        Just(Bound::Unbounded),
        (0..KEYS).prop_map(Bound::Included),
        (0..KEYS).prop_map(Bound::Excluded),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => (0..KEYS, 0usize..120).prop_map(|(k, l)| Op::Insert(k, l)),
        5 => (0..KEYS).prop_map(Op::Delete),
        2 => (0..KEYS, 0usize..160).prop_map(|(k, l)| Op::Update(k, l)),
        1 => (0..KEYS, any::<bool>()).prop_map(|(k, m)| Op::Mark(k, m)),
        2 => (0..KEYS).prop_map(Op::Get),
        2 => (bound(), bound(), proptest::option::of(0usize..50), any::<bool>())
            .prop_map(|(s, e, l, r)| Op::Scan(s, e, l, r)),
    ]
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    // Long runs with an occasional reopen.
    proptest::collection::vec(prop_oneof![50 => op(), 1 => Just(Op::Reopen)], 200..1500)
}

fn value(k: i64, len: usize, salt: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (k as u8).wrapping_add(i as u8).wrapping_add(salt))
        .collect()
}

fn key(k: i64) -> Vec<Value> {
    vec![Value::Int(k)]
}

fn to_bound(b: Bound<i64>) -> Bound<Vec<Value>> {
    match b {
        Bound::Included(k) => Bound::Included(key(k)),
        Bound::Excluded(k) => Bound::Excluded(key(k)),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn scan(tree: &BTree, pool: &BufferPool, range: ScanRange) -> Vec<(i64, Row)> {
    tree.scan(pool, range)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let (k, v) = value_of(&e.values);
            (
                k,
                Row {
                    value: v,
                    deleted: e.deleted,
                },
            )
        })
        .collect()
}

fn verify(tree: &BTree, pool: &BufferPool, model: &BTreeMap<i64, Row>) {
    let stats = tree.check(pool).unwrap();
    assert_eq!(stats.records, model.len() as u64);
    let all = scan(tree, pool, ScanRange::all());
    let want: Vec<(i64, Row)> = model.iter().map(|(k, r)| (*k, r.clone())).collect();
    assert_eq!(all, want);
}

fn run(ops: Vec<Op>) {
    let env = Env::new(24);
    let mut pool = env.create();
    let (tree, _) = BTree::create(&pool, SPACE, 7, layout()).unwrap();
    let mut model: BTreeMap<i64, Row> = BTreeMap::new();
    for (n, op) in ops.into_iter().enumerate() {
        let salt = n as u8;
        match op {
            Op::Insert(k, len) => {
                let v = value(k, len, salt);
                let r = tree.insert(&pool, &row(k, &v));
                match model.entry(k) {
                    std::collections::btree_map::Entry::Occupied(_) => {
                        assert!(matches!(r, Err(TreeError::Duplicate { .. })), "{r:?}");
                    }
                    std::collections::btree_map::Entry::Vacant(slot) => {
                        r.unwrap();
                        slot.insert(Row {
                            value: v,
                            deleted: false,
                        });
                    }
                }
            }
            Op::Delete(k) => {
                let r = tree.delete(&pool, &key(k));
                if model.remove(&k).is_some() {
                    r.unwrap();
                } else {
                    assert!(matches!(r, Err(TreeError::NotFound { .. })), "{r:?}");
                }
            }
            Op::Update(k, len) => {
                let v = value(k, len, salt);
                let r = tree.update(&pool, &row(k, &v));
                match model.get_mut(&k) {
                    Some(row) => {
                        r.unwrap();
                        row.value = v;
                    }
                    None => assert!(matches!(r, Err(TreeError::NotFound { .. })), "{r:?}"),
                }
            }
            Op::Mark(k, on) => {
                let r = tree.set_delete_mark(&pool, &key(k), on);
                match model.get_mut(&k) {
                    Some(row) => {
                        r.unwrap();
                        row.deleted = on;
                    }
                    None => assert!(matches!(r, Err(TreeError::NotFound { .. })), "{r:?}"),
                }
            }
            Op::Get(k) => {
                let got = tree.get(&pool, &key(k)).unwrap().map(|e| {
                    let (_, v) = value_of(&e.values);
                    Row {
                        value: v,
                        deleted: e.deleted,
                    }
                });
                assert_eq!(got.as_ref(), model.get(&k), "get {k}");
            }
            Op::Scan(s, e, limit, reverse) => {
                let inverted = match (s, e) {
                    (
                        Bound::Included(a) | Bound::Excluded(a),
                        Bound::Included(b) | Bound::Excluded(b),
                    ) => a > b,
                    _ => false,
                } || matches!((s, e), (Bound::Excluded(a), Bound::Excluded(b)) if a == b);
                let mut range = ScanRange::new(to_bound(s), to_bound(e));
                if let Some(l) = limit {
                    range = range.limit(l);
                }
                if reverse {
                    range = range.reverse();
                }
                let got = scan(&tree, &pool, range);
                let want: Vec<(i64, Row)> = if inverted {
                    Vec::new()
                } else if reverse {
                    model
                        .range((s, e))
                        .rev()
                        .take(limit.unwrap_or(usize::MAX))
                        .map(|(k, r)| (*k, r.clone()))
                        .collect()
                } else {
                    model
                        .range((s, e))
                        .take(limit.unwrap_or(usize::MAX))
                        .map(|(k, r)| (*k, r.clone()))
                        .collect()
                };
                assert_eq!(
                    got, want,
                    "scan {s:?}..{e:?} limit {limit:?} reverse {reverse}"
                );
            }
            Op::Reopen => {
                verify(&tree, &pool, &model);
                pool.shutdown().unwrap();
                pool = env.reopen();
                let reopened = BTree::open(&pool, SPACE, tree.root(), layout()).unwrap();
                assert_eq!(reopened.index_id(), 7);
            }
        }
        if n % 100 == 99 {
            verify(&tree, &pool, &model);
        }
    }
    verify(&tree, &pool, &model);
    pool.shutdown().unwrap();
    let pool = env.reopen();
    verify(&tree, &pool, &model);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn tree_matches_model(ops in ops()) {
        run(ops);
    }
}

#[test]
fn grow_tall_then_shrink_to_a_leaf() {
    let env = Env::new(32);
    let pool = env.create();
    let (tree, _) = BTree::create(&pool, SPACE, 9, layout()).unwrap();
    let mut model = BTreeMap::new();
    // Pseudo-random order, values long enough for a tree of three or more levels.
    let n = 6000i64;
    for i in 0..n {
        let k = (i * 7919) % n;
        let v = value(k, 120, 3);
        tree.insert(&pool, &row(k, &v)).unwrap();
        model.insert(
            k,
            Row {
                value: v,
                deleted: false,
            },
        );
    }
    let stats = tree.check(&pool).unwrap();
    assert!(stats.height >= 3, "height {}", stats.height);
    verify(&tree, &pool, &model);
    let before = minnow_btree::tree::space_usage(&pool, SPACE).unwrap();
    for i in 0..n {
        let k = (i * 4001) % n;
        tree.delete(&pool, &key(k)).unwrap();
        model.remove(&k);
        if i % 1000 == 999 {
            verify(&tree, &pool, &model);
        }
    }
    let stats = tree.check(&pool).unwrap();
    assert_eq!((stats.height, stats.records), (1, 0));
    // Every page but the root went back to the allocator (page 0 and the INODE page holding
    // the tree's two segments stay in use too), and into no other segment.
    let after = minnow_btree::tree::space_usage(&pool, SPACE).unwrap();
    assert_eq!(after.free_limit, before.free_limit);
    assert_eq!(after.free_pages, after.free_limit - 3);
    let report = minnow_btree::space::check_space(&pool, SPACE).unwrap();
    tree.check_space(&pool, &report).unwrap();
    // And is reused: the next inserts do not grow the file.
    for k in 0..2000 {
        tree.insert(&pool, &row(k, &value(k, 40, 1))).unwrap();
    }
    tree.check(&pool).unwrap();
    assert_eq!(
        minnow_btree::tree::space_usage(&pool, SPACE)
            .unwrap()
            .free_limit,
        before.free_limit
    );
    pool.shutdown().unwrap();
}
