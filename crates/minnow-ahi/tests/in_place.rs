//! A change of a record in place (a row delete's delete mark, `BTree::change_leaf_record`)
//! finds its record through the hash, like a lookup, and keeps the leaf's entries good: the
//! leaf is latched in place, so its frame's layout counter stays. Every answer is checked
//! against a model; a change that moves records (an insert) still ends the entries, and the
//! next mark descends and marks the right record.

mod common;

use std::collections::BTreeMap;

use common::{Rng, row, setup, tagged, value, warm};
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

/// The race the in-place latch must survive: a marker flips the delete marks of stable keys
/// through the hash (each flip reads the mark under the latch and writes its opposite), a
/// writer inserts, grows, shrinks and deletes the keys between them (moving records, splitting
/// and merging the hashed leaves), and readers look up the stable keys. Every lookup finds
/// its key's own record, every flip finds its record, and at the end every mark is what the
/// marker's model says and the tree checks. `MINNOW_STRESS_OPS` sets the writer's operations
/// (default 3000; the marker and each reader do as many).
#[test]
fn marks_through_the_hash_race_writers_that_move_records() {
    let ops: u64 = std::env::var("MINNOW_STRESS_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    const N: u64 = 4000;
    let s = setup(AhiConfig::default());
    // Stable keys are even; the writer owns the odd ones.
    for k in (0..N).step_by(2) {
        s.tree.insert(&s.pool, &row(k, &tagged(k, 0))).unwrap();
    }
    warm(&s, (0..N).step_by(2), 3, |k| Some(tagged(k, 0)));
    let warmed = s.ahi.stats();
    let (marks, odd) = std::thread::scope(|sc| {
        let s = &s;
        let marker = sc.spawn(move || {
            let mut rng = Rng(7);
            let mut marks = BTreeMap::new();
            for i in 0..ops {
                let k = rng.below(N / 2) * 2;
                let flipped = s
                    .tree
                    .change_leaf_record(&s.pool, &[Value::UInt(k)], |mtr, slot| {
                        let now = slot.sys(&s.tree, mtr)?.unwrap().deleted;
                        s.tree.stamp_in(mtr, slot, 9, 1 << 55 | i, Some(!now))?;
                        Ok::<_, minnow_btree::TreeError>(!now)
                    })
                    .unwrap()
                    .unwrap();
                let (mark, _) = flipped.unwrap_or_else(|| panic!("stable key {k} not found"));
                marks.insert(k, mark);
            }
            marks
        });
        let writer = sc.spawn(move || {
            let mut rng = Rng(11);
            let mut model = BTreeMap::new();
            for i in 0..ops {
                let k = rng.below(N / 2) * 2 + 1;
                match (model.contains_key(&k), rng.below(3)) {
                    (false, _) => {
                        s.tree.insert(&s.pool, &row(k, &tagged(k, i))).unwrap();
                        model.insert(k, tagged(k, i));
                    }
                    (true, 0) => {
                        s.tree.update(&s.pool, &row(k, &tagged(k, i))).unwrap();
                        model.insert(k, tagged(k, i));
                    }
                    (true, _) => {
                        s.tree.delete(&s.pool, &[Value::UInt(k)]).unwrap();
                        model.remove(&k);
                    }
                }
            }
            model
        });
        for r in 0..2u64 {
            sc.spawn(move || {
                let mut rng = Rng(100 + r);
                for _ in 0..ops {
                    let k = rng.below(N / 2) * 2;
                    let e = s
                        .tree
                        .get(&s.pool, &[Value::UInt(k)])
                        .unwrap()
                        .unwrap_or_else(|| panic!("stable key {k} not found"));
                    assert_eq!(e.values[0], Value::UInt(k));
                    match &e.values[3] {
                        Value::Bytes(b) => assert_eq!(b, &tagged(k, 0), "key {k}"),
                        other => panic!("value {other:?}"),
                    }
                }
            });
        }
        (marker.join().unwrap(), writer.join().unwrap())
    });
    let raced = s.ahi.stats();
    assert!(
        raced.hits > warmed.hits,
        "marks and lookups used the hash: {raced:?}"
    );
    s.tree.check(&s.pool).unwrap();
    for k in 0..N {
        let got = read(&s, k);
        if k % 2 == 0 {
            let mark = marks.get(&k).copied().unwrap_or(false);
            assert_eq!(got, Some((mark, tagged(k, 0))), "key {k}");
        } else {
            assert_eq!(got, odd.get(&k).map(|v| (false, v.clone())), "key {k}");
        }
    }
}
