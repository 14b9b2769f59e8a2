//! A change of a record in place (a row delete's delete mark, `BTree::change_leaf_record`)
//! finds its record through the hash, like a lookup, and keeps the leaf's entries good: the
//! leaf is latched in place, so its frame's layout counter stays. Every answer is checked
//! against a model; a change that moves records (an insert) still ends the entries, and the
//! next mark descends and marks the right record.

mod common;

use std::collections::BTreeMap;

use common::{row, setup, value, warm};
use minnow_ahi::AhiConfig;
use minnow_btree::record::Value;
use minnow_btree::tree::descents;

const KEYS: u64 = 3000;

/// Marks `k` deleted in place (`Some(true)`), as a row delete does: `None` if no record has
/// the key.
fn mark(s: &common::Setup, k: u64) -> Option<()> {
    let r = s
        .tree
        .change_leaf_record(&s.pool, &[Value::UInt(k)], |mtr, slot| {
            s.tree.stamp_in(mtr, slot, 7, 1 << 55 | k, Some(true))
        })
        .unwrap();
    r.unwrap().map(|_| ())
}

/// The record of `k`: (delete-marked, value), from a lookup.
fn read(s: &common::Setup, k: u64) -> Option<(bool, Vec<u8>)> {
    let e = s.tree.get(&s.pool, &[Value::UInt(k)]).unwrap()?;
    match &e.values[3] {
        Value::Bytes(b) => Some((e.deleted, b.clone())),
        other => panic!("value {other:?}"),
    }
}

/// A tree of `KEYS` keys whose pages are all hashed, and its model (key → deleted, value).
fn hashed() -> (common::Setup, BTreeMap<u64, (bool, Vec<u8>)>) {
    let s = setup(AhiConfig::default());
    let mut m = BTreeMap::new();
    for k in 0..KEYS {
        s.tree.insert(&s.pool, &row(k, &value(k, 0))).unwrap();
        m.insert(k, (false, value(k, 0)));
    }
    warm(&s, 0..KEYS, 3, |k| Some(value(k, 0)));
    assert_eq!(s.ahi.stats().entries, KEYS);
    (s, m)
}

#[test]
fn delete_marks_find_their_records_through_the_hash_and_keep_its_entries() {
    let (s, mut m) = hashed();
    let before = s.ahi.stats();
    let d0 = descents();
    // Every third key, in an order that jumps between pages: one hash probe each, no descent.
    let marked: Vec<u64> = (0..KEYS)
        .map(|i| (i * 1237 + 11) % KEYS)
        .step_by(3)
        .collect();
    for &k in &marked {
        assert_eq!(mark(&s, k), Some(()), "key {k}");
        m.get_mut(&k).unwrap().0 = true;
    }
    assert_eq!(descents() - d0, 0, "every mark came from the hash");
    let after = s.ahi.stats();
    assert_eq!(after.hits - before.hits, marked.len() as u64);
    // The entries survived the marks: every lookup is a hit and sees the marks.
    assert_eq!(after.entries, KEYS);
    assert_eq!(after.pages_dropped, before.pages_dropped);
    let d1 = descents();
    for k in 0..KEYS {
        assert_eq!(read(&s, k).as_ref(), m.get(&k), "key {k}");
    }
    assert_eq!(descents() - d1, 0, "no lookup descended");
    assert_eq!(s.ahi.stats().hits - after.hits, KEYS);
    // A key that is not stored: nothing marked, the model unchanged.
    assert_eq!(mark(&s, KEYS + 5), None);
    for k in 0..KEYS {
        assert_eq!(read(&s, k).as_ref(), m.get(&k), "key {k}");
    }
}

#[test]
fn after_records_move_a_mark_descends_and_marks_the_right_record() {
    let (s, mut m) = hashed();
    // New keys between the old ones move records on every leaf (and split some): every
    // entry the warm-up made is stale.
    for k in KEYS..KEYS + 600 {
        let key = (k - KEYS) * 5 + KEYS; // past the old keys: appended, then split
        s.tree.insert(&s.pool, &row(key, &value(key, 1))).unwrap();
        m.insert(key, (false, value(key, 1)));
    }
    let updated: Vec<u64> = (0..KEYS).step_by(11).collect();
    for &k in &updated {
        // An update that grows the record may move it: the page's entries go stale.
        let v = vec![k as u8; 60];
        s.tree.update(&s.pool, &row(k, &v)).unwrap();
        m.insert(k, (false, v));
    }
    for &k in updated.iter().step_by(2) {
        assert_eq!(mark(&s, k), Some(()), "key {k}");
        m.get_mut(&k).unwrap().0 = true;
    }
    for k in m.keys().copied().collect::<Vec<_>>() {
        assert_eq!(read(&s, k).as_ref(), m.get(&k), "key {k}");
    }
}
