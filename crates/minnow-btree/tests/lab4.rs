//! Lab 4: a B+tree leaf (docs/labs/04-btree-leaf.md).
//!
//! First the search on one page (`node::search`, `node::search_before`: a binary search over
//! the sparse page directory, then a walk of one group of the record list), on pages built
//! in memory; then whole trees whose leaves split (`plan_split`, `split`): ascending,
//! descending and shuffled loads, and records so large that only a few fit a page.

mod common;

use common::{Env, Rng, SPACE, layout, row, value_of};
use minnow_btree::node::{self, Cursor, NodeError};
use minnow_btree::record::{Column, ColumnType, RecordLayout, Value};
use minnow_btree::{BTree, ScanRange};

/// A secondary index on a u32 key and a short value: about 20 bytes a record.
fn leaf_layout() -> RecordLayout {
    RecordLayout::secondary(vec![
        Column::new(ColumnType::U32),
        Column::nullable(ColumnType::Var(200)),
    ])
    .unwrap()
}

/// An empty leaf page of `size` bytes.
fn fresh(size: usize) -> Vec<u8> {
    let mut page = vec![0u8; size];
    node::init(&mut page, 7, 0).unwrap();
    page
}

fn put(page: &mut Vec<u8>, l: &RecordLayout, k: u32) {
    let rec = l
        .encode(&[Value::UInt(u64::from(k)), Value::Bytes(vec![b'v'; 6])])
        .unwrap();
    node::insert(page, l, &rec).unwrap();
}

fn key(l: &RecordLayout, k: u32) -> minnow_btree::record::SearchKey {
    l.search_key(&[Value::UInt(u64::from(k))]).unwrap()
}

/// `v` in an order a Fisher-Yates shuffle driven by `seed` gives.
fn shuffled<T>(mut v: Vec<T>, seed: u64) -> Vec<T> {
    let mut rng = Rng(seed);
    for i in (1..v.len()).rev() {
        v.swap(i, rng.below(i as u64 + 1) as usize);
    }
    v
}

/// The key of the user record at `c`, `None` for the infimum and the supremum.
fn key_at(page: &[u8], l: &RecordLayout, c: Cursor) -> Option<u32> {
    if !c.is_user() {
        return None;
    }
    match l.decode(page, c.origin()).unwrap().first() {
        Some(Value::UInt(k)) => Some(*k as u32),
        other => panic!("unexpected record {other:?}"),
    }
}

/// (the key at the cursor, the key at `up`, exact) of `search(k)`.
fn found(page: &[u8], l: &RecordLayout, k: u32) -> (Option<u32>, Option<u32>, bool) {
    let r = node::search(page, l, &key(l, k)).unwrap();
    (key_at(page, l, r.cursor), key_at(page, l, r.up), r.exact)
}

#[test]
fn an_empty_page_searches_between_infimum_and_supremum() {
    let l = leaf_layout();
    let page = fresh(4096);
    let r = node::search(&page, &l, &key(&l, 5)).unwrap();
    assert!(
        r.cursor.is_infimum(),
        "nothing is <= 5: insert after the infimum"
    );
    assert!(r.up.is_supremum());
    assert!(!r.exact);
}

#[test]
fn a_page_of_one_group_finds_each_key() {
    let l = leaf_layout();
    let mut page = fresh(4096);
    for k in [10, 30, 20] {
        put(&mut page, &l, k);
    }
    assert_eq!(found(&page, &l, 10), (Some(10), Some(20), true));
    assert_eq!(found(&page, &l, 20), (Some(20), Some(30), true));
    assert_eq!(found(&page, &l, 30), (Some(30), None, true));
    assert_eq!(found(&page, &l, 5), (None, Some(10), false));
    assert_eq!(found(&page, &l, 25), (Some(20), Some(30), false));
    assert_eq!(found(&page, &l, 99), (Some(30), None, false));
}

#[test]
fn many_directory_groups_find_every_key_and_every_gap() {
    let l = leaf_layout();
    let mut page = fresh(16384);
    for k in (1..=300).map(|k| k * 2) {
        put(&mut page, &l, k);
    }
    let h = minnow_page::index::IndexHeader::read(&page).unwrap();
    assert!(h.n_dir_slots > 60, "{} slots", h.n_dir_slots);
    for k in 0..=602u32 {
        let (at, up, exact) = found(&page, &l, k);
        let below = if k % 2 == 0 { k } else { k - 1 };
        let want_at = (below >= 2).then_some(below.min(600));
        let want_up = (below + 2 <= 600).then_some(below + 2);
        assert_eq!(
            (at, up, exact),
            (want_at, want_up, k % 2 == 0 && (2..=600).contains(&k)),
            "key {k}"
        );
    }
}

#[test]
fn shuffled_inserts_are_found_and_the_page_checks() {
    let l = leaf_layout();
    let mut page = fresh(16384);
    let keys: Vec<u32> = shuffled((0..400).collect(), 0x1ab4);
    for &k in &keys {
        put(&mut page, &l, k);
    }
    node::check(&page, &l).unwrap();
    let order: Vec<u32> = node::records(&page)
        .map(|c| key_at(&page, &l, c.unwrap()).unwrap())
        .collect();
    assert_eq!(order, (0..400).collect::<Vec<_>>());
    for k in 0..400 {
        assert_eq!(found(&page, &l, k).0, Some(k), "key {k}");
    }
}

#[test]
fn search_before_stops_before_an_equal_key() {
    let l = leaf_layout();
    let mut page = fresh(16384);
    for k in (0..100).map(|k| k * 3) {
        put(&mut page, &l, k);
    }
    for k in [0u32, 3, 150, 297] {
        let r = node::search_before(&page, &l, &key(&l, k)).unwrap();
        let want = k.checked_sub(3);
        assert_eq!(key_at(&page, &l, r.cursor), want, "strictly below {k}");
        assert_eq!(key_at(&page, &l, r.up), Some(k), "the first >= {k}");
        assert!(!r.exact);
    }
}

#[test]
fn a_bad_directory_is_a_typed_error_not_a_hang() {
    let l = leaf_layout();
    let mut page = fresh(4096);
    for k in 0..40 {
        put(&mut page, &l, k);
    }
    let n_slots = minnow_page::index::PAGE_HEADER;
    for bad in [0u16, 1, 0xffff] {
        let mut p = page.clone();
        p[n_slots..n_slots + 2].copy_from_slice(&bad.to_be_bytes());
        let e = node::search(&p, &l, &key(&l, 7)).unwrap_err();
        assert!(matches!(e, NodeError::Corrupt { .. }), "{bad} slots: {e:?}");
    }
    // The slot before the supremum's pointed back at the first record: the walk from it
    // never meets the record its group should end at within a group's length.
    let mut p = page.clone();
    let n = usize::from(
        minnow_page::index::IndexHeader::read(&p)
            .unwrap()
            .n_dir_slots,
    );
    let at = p.len() - 8 - 2 * (n - 1);
    let first_user = node::next(&p, Cursor::INFIMUM).unwrap().origin() as u16;
    p[at..at + 2].copy_from_slice(&first_user.to_be_bytes());
    let e = node::search(&p, &l, &key(&l, 39)).unwrap_err();
    assert!(matches!(e, NodeError::Corrupt { .. }), "{e:?}");
}

/// Inserts `keys` into a new tree with `value_len`-byte values; checks the tree and that a
/// scan returns every key in order with its value.
fn load(keys: &[i64], value_len: usize) -> minnow_btree::tree::TreeStats {
    let env = Env::new(64);
    let pool = env.create();
    let (tree, _) = BTree::create(&pool, SPACE, 3, layout()).unwrap();
    for &k in keys {
        tree.insert(&pool, &row(k, &vec![k as u8; value_len]))
            .unwrap();
    }
    let stats = tree.check(&pool).unwrap();
    let got: Vec<(i64, Vec<u8>)> = tree
        .scan(&pool, ScanRange::all())
        .unwrap()
        .map(|e| value_of(&e.unwrap().values))
        .collect();
    let mut want: Vec<i64> = keys.to_vec();
    want.sort_unstable();
    assert_eq!(got.len(), want.len());
    for ((k, v), w) in got.iter().zip(&want) {
        assert_eq!((*k, v.len(), v.first()), (*w, value_len, Some(&(*w as u8))));
    }
    for &k in keys.iter().step_by(97) {
        assert!(
            tree.get(&pool, &[Value::Int(k)]).unwrap().is_some(),
            "get {k}"
        );
    }
    pool.shutdown().unwrap();
    stats
}

#[test]
fn ascending_inserts_split_leaves_and_keep_key_order() {
    let keys: Vec<i64> = (0..3000).collect();
    let stats = load(&keys, 30);
    assert_eq!(stats.records, 3000);
    assert!(stats.height >= 2, "the root split");
    // A sequential load splits at the insert point: the leaves it leaves behind are full.
    let (_, full) = stats.leaf_fill.split_last().unwrap();
    assert!(full.iter().all(|&f| f > 0.85), "{full:?}");
}

#[test]
fn descending_inserts_split_leaves_and_keep_key_order() {
    let keys: Vec<i64> = (0..3000).rev().collect();
    let stats = load(&keys, 30);
    assert_eq!(stats.records, 3000);
    assert!(stats.height >= 2);
}

#[test]
fn shuffled_inserts_split_leaves_and_keep_key_order() {
    let keys: Vec<i64> = shuffled((0..3000).collect(), 0x5eed);
    let stats = load(&keys, 30);
    assert_eq!(stats.records, 3000);
    let mean = stats.leaf_fill.iter().sum::<f64>() / stats.leaf_fill.len() as f64;
    assert!(
        mean > 0.5,
        "random splits cut near the middle: mean fill {mean}"
    );
}

#[test]
fn large_records_split_so_both_halves_fit() {
    // 400-byte values on 4 KiB pages: eight or nine records a leaf.
    let keys: Vec<i64> = shuffled((0..300).collect(), 0x400);
    let stats = load(&keys, 400);
    assert_eq!(stats.records, 300);
    assert!(
        stats.pages_per_level[0] >= 300 / 9,
        "{:?}",
        stats.pages_per_level
    );
}

#[test]
fn a_clustered_layout_with_a_signed_key_orders_negative_keys_first() {
    let keys: Vec<i64> = (-500..500).rev().collect();
    let stats = load(&keys, 20);
    assert_eq!(stats.records, 1000);
}
