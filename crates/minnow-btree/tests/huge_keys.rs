//! Keys so long that a page holds only two records (about 1,500 bytes on the 4 KiB pages
//! here, as 6,000 bytes are on 16 KiB pages), in ascending, descending and random order, in
//! a clustered index and a secondary one: every insert keeps the tree valid (`check()`), the
//! tree stays logarithmically shallow, and deleting everything again merges it back.
//!
//! Two things broke here once. The leftmost node pointer of a level (MIN_REC) keeps the key
//! its child had at the root raise that made it; once that child splits off the records from
//! that key on, the next pointer has the very same key, and moving the two together (a split
//! or merge of the node page) was refused as a duplicate. And a descending split of a node
//! page holding two pointers left one pointer on the right page for good, so every further
//! split added a level.

mod common;

use common::{Env, SPACE};
use minnow_btree::BTree;
use minnow_btree::record::{Column, ColumnType, RecordLayout, Value};

/// Rows per run.
const N: u64 = 160;

/// A key of `len` bytes that sorts by `i`.
fn key(i: u64, len: usize) -> Vec<u8> {
    let mut k = format!("{i:010}").into_bytes();
    k.resize(len, b'k');
    k
}

fn shuffled(n: u64, seed: u64) -> Vec<u64> {
    let mut keys: Vec<u64> = (0..n).collect();
    minnow_io::SplitMix64(seed).shuffle(&mut keys);
    keys
}

/// The orders each test loads: ascending, descending and two random ones.
fn orders() -> Vec<(&'static str, Vec<u64>)> {
    vec![
        ("ascending", (0..N).collect()),
        ("descending", (0..N).rev().collect()),
        ("random 1", shuffled(N, 1)),
        ("random 2", shuffled(N, 2)),
    ]
}

/// Loads `order` into a new tree of `layout` (rows from `row`), checking the tree after every
/// insert; then scans, checks the height, and deletes every row in another order.
fn load_check_and_empty(
    what: &str,
    layout: RecordLayout,
    order: &[u64],
    row: impl Fn(u64) -> Vec<Value>,
    key_of: impl Fn(u64) -> Vec<Value>,
) {
    let env = Env::new(256);
    let pool = env.create();
    let (tree, _) = BTree::create(&pool, SPACE, 3, layout).unwrap();
    for (n, &i) in order.iter().enumerate() {
        tree.insert(&pool, &row(i))
            .unwrap_or_else(|e| panic!("{what}: insert #{n} (row {i}): {e}"));
        let stats = tree
            .check(&pool)
            .unwrap_or_else(|e| panic!("{what}: check after insert #{n} (row {i}): {e}"));
        assert_eq!(stats.records, n as u64 + 1, "{what}");
    }
    let stats = tree.check(&pool).unwrap();
    // Two records a page at worst: at least a third of a page's worth of fan-out per level
    // on average, so the height stays near log2 of the leaves.
    let leaves = stats.leaf_fill.len() as f64;
    let bound = 2.0 * leaves.log2().ceil() + 2.0;
    assert!(
        f64::from(stats.height) <= bound,
        "{what}: height {} for {leaves} leaves",
        stats.height
    );
    let scanned: Vec<Vec<Value>> = tree
        .scan(&pool, minnow_btree::ScanRange::all())
        .unwrap()
        .map(|e| e.unwrap().values)
        .collect();
    let mut want: Vec<u64> = order.to_vec();
    want.sort_unstable();
    assert_eq!(scanned.len(), want.len(), "{what}");
    for (got, &i) in scanned.iter().zip(&want) {
        assert_eq!(got.first(), row(i).first(), "{what}");
    }
    // Empty it again, in yet another order: pages merge and the root lowers.
    for (n, i) in shuffled(N, 99).into_iter().enumerate() {
        tree.delete(&pool, &key_of(i))
            .unwrap_or_else(|e| panic!("{what}: delete #{n} (row {i}): {e}"));
        tree.check(&pool)
            .unwrap_or_else(|e| panic!("{what}: check after delete #{n} (row {i}): {e}"));
    }
    assert_eq!(tree.check(&pool).unwrap().records, 0, "{what}");
    pool.shutdown().unwrap();
}

#[test]
fn clustered_keys_of_two_to_a_page_in_every_order() {
    for len in [1_300, 1_500, 1_900] {
        let layout =
            RecordLayout::clustered(vec![Column::new(ColumnType::Var(2_000))], vec![]).unwrap();
        for (name, order) in orders() {
            load_check_and_empty(
                &format!("{len}-byte keys, {name}"),
                layout.clone(),
                &order,
                |i| {
                    vec![
                        Value::Bytes(key(i, len)),
                        Value::trx_id(1),
                        Value::roll_ptr(1 << 55),
                    ]
                },
                |i| vec![Value::Bytes(key(i, len))],
            );
        }
    }
}

#[test]
fn secondary_entries_of_two_to_a_page_in_every_order() {
    // A secondary entry: the indexed column, then the primary key.
    let layout = RecordLayout::secondary(vec![
        Column::new(ColumnType::Var(2_000)),
        Column::new(ColumnType::U64),
    ])
    .unwrap();
    for (name, order) in orders() {
        load_check_and_empty(
            &format!("1350-byte entries, {name}"),
            layout.clone(),
            &order,
            |i| vec![Value::Bytes(key(i, 1_350)), Value::UInt(i)],
            |i| vec![Value::Bytes(key(i, 1_350)), Value::UInt(i)],
        );
    }
}
