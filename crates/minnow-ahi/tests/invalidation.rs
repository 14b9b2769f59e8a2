//! The hash never answers wrong: pages that change, split, merge, lose and regain records,
//! entries planted stale or corrupt on purpose, a memory limit, a dropped index and a hash
//! switched off and on. Every lookup is checked against the truth.

mod common;

use std::collections::BTreeMap;

use common::{INDEX, SPACE, get, row, setup, value, warm};
use minnow_ahi::{AhiConfig, ENTRY_BYTES, Slot};
use minnow_btree::record::Value;
use minnow_page::PageId;

fn load(s: &common::Setup, keys: impl Iterator<Item = u64>, g: u64) -> BTreeMap<u64, Vec<u8>> {
    let mut m = BTreeMap::new();
    for k in keys {
        s.tree.insert(&s.pool, &row(k, &value(k, g))).unwrap();
        m.insert(k, value(k, g));
    }
    m
}

fn check_all(s: &common::Setup, model: &BTreeMap<u64, Vec<u8>>, upto: u64) {
    for k in 0..upto {
        assert_eq!(get(s, k), model.get(&k).cloned(), "key {k}");
    }
}

#[test]
fn warmed_pages_answer_every_lookup_without_a_descent() {
    let s = setup(AhiConfig::default());
    let m = load(&s, 0..3000, 0);
    warm(&s, 0..3000, 3, |k| m.get(&k).cloned());
    let before = s.ahi.stats();
    assert!(before.pages_hashed > 0);
    assert_eq!(before.entries, 3000);
    warm(&s, 0..3000, 1, |k| m.get(&k).cloned());
    let after = s.ahi.stats();
    assert_eq!(after.hits - before.hits, 3000);
    assert_eq!(after.lookups - before.lookups, 3000);
    assert_eq!(after.misses, before.misses);
    assert_eq!(after.descents_avoided, after.hits);
    assert!(after.memory_bytes >= 3000 * ENTRY_BYTES as u64);
    // Every entry names the frame its page is in (the pool is big enough to keep them all),
    // which the lookups fix the page through.
    for e in s.ahi.entries() {
        let frame = s
            .pool
            .get_read(PageId::new(SPACE, e.page_no))
            .unwrap()
            .frame();
        assert_eq!(e.frame, frame, "{e:?}");
    }
    // A key that is not there: a probe that misses, then a descent that finds nothing.
    assert_eq!(get(&s, 1_000_000), None);
}

#[test]
fn updates_splits_merges_and_reinserts_stay_right() {
    let s = setup(AhiConfig::default());
    // Even keys first, so the odd ones later split every hashed page.
    let mut m = load(&s, (0..4000).step_by(2), 0);
    warm(&s, 0..4000, 3, |k| m.get(&k).cloned());
    assert!(s.ahi.stats().pages_hashed > 10);

    // Updates: same size in place, other sizes by delete and insert on the page.
    for k in (0..4000).step_by(6) {
        s.tree.update(&s.pool, &row(k, &value(k, 1))).unwrap();
        m.insert(k, value(k, 1));
    }
    check_all(&s, &m, 4000);

    // Splits.
    m.extend(load(&s, (1..4000).step_by(2), 2));
    check_all(&s, &m, 4000);
    warm(&s, 0..4000, 2, |k| m.get(&k).cloned());
    let built = s.ahi.stats().pages_built;

    // Merges: delete four keys in five.
    for k in 0..4000 {
        if k % 5 != 0 {
            s.tree.delete(&s.pool, &[Value::UInt(k)]).unwrap();
            m.remove(&k);
        }
    }
    check_all(&s, &m, 4000);
    warm(&s, 0..4000, 2, |k| m.get(&k).cloned());

    // Delete-marks are reported as they are now, not as they were when hashed.
    s.tree
        .set_delete_mark(&s.pool, &[Value::UInt(5)], true)
        .unwrap();
    let e = s.tree.get(&s.pool, &[Value::UInt(5)]).unwrap().unwrap();
    assert!(e.deleted);
    s.tree
        .set_delete_mark(&s.pool, &[Value::UInt(5)], false)
        .unwrap();

    // Reinserts with new values.
    m.extend(load(&s, (0..4000).filter(|k| k % 5 != 0), 3));
    check_all(&s, &m, 4000);
    warm(&s, 0..4000, 3, |k| m.get(&k).cloned());
    let st = s.ahi.stats();
    assert!(st.pages_built > built, "changed pages were hashed again");
    let before = st.hits;
    warm(&s, 0..4000, 1, |k| m.get(&k).cloned());
    assert_eq!(
        s.ahi.stats().hits - before,
        4000,
        "all answered by the hash again"
    );
    s.tree.check(&s.pool).unwrap();
}

#[test]
fn planted_stale_and_corrupt_entries_never_answer_and_get_repaired() {
    let s = setup(AhiConfig::default());
    let m = load(&s, 0..3000, 0);
    warm(&s, 0..3000, 3, |k| m.get(&k).cloned());
    let entries = s.ahi.entries();
    let real = entries[0];
    // Where a page is now: its frame and that frame's layout counter.
    let now = |no: u32| {
        let g = s.pool.get_read(PageId::new(SPACE, no)).unwrap();
        (g.frame(), g.layout())
    };
    let other_page = entries
        .iter()
        .find(|e| e.page_no != real.page_no)
        .unwrap()
        .page_no;
    let plants = [
        // The right page, frame and layout, another record's offset.
        Slot {
            origin: entries
                .iter()
                .find(|e| e.page_no == real.page_no && e.origin != real.origin)
                .unwrap()
                .origin,
            ..real
        },
        // Offsets that are no record at all.
        Slot { origin: 0, ..real },
        Slot { origin: 99, ..real },
        Slot {
            origin: 112,
            ..real
        },
        Slot {
            origin: real.origin + 1,
            ..real
        },
        Slot {
            origin: 4095,
            ..real
        },
        Slot {
            origin: 1 << 20,
            ..real
        },
        // Another leaf of the index, where it is now.
        Slot {
            page_no: other_page,
            frame: now(other_page).0,
            layout: now(other_page).1,
            ..real
        },
        // A page that is not a leaf of this index (page 0: the FSP header), where it is.
        Slot {
            page_no: 0,
            frame: now(0).0,
            layout: now(0).1,
            ..real
        },
        // The tree's root, whatever its level.
        Slot {
            page_no: s.tree.root(),
            frame: now(s.tree.root()).0,
            layout: now(s.tree.root()).1,
            ..real
        },
        // A page far beyond the end of the file.
        Slot {
            page_no: 900_000,
            ..real
        },
        // An old layout.
        Slot {
            layout: real.layout.saturating_sub(1),
            ..real
        },
        // Frames that do not hold the page (the lookup fixes it the normal way).
        Slot {
            frame: real.frame ^ 1,
            ..real
        },
        Slot {
            frame: u32::MAX,
            ..real
        },
        // Another index's entry under this key's fold.
        Slot {
            index_id: INDEX + 1,
            ..real
        },
    ];
    for (i, plant) in plants.iter().enumerate() {
        for k in [7u64, 1500, 2999] {
            let key = s.tree.key(&[Value::UInt(k)]).unwrap();
            s.ahi.plant(INDEX, &key, 1, *plant);
            assert_eq!(get(&s, k), m.get(&k).cloned(), "plant {i} key {k}");
            // Repaired (or, for a foreign index id, ignored and overwritten): the next lookup hits.
            let before = s.ahi.stats().hits;
            assert_eq!(get(&s, k), m.get(&k).cloned(), "plant {i} key {k}, again");
            assert_eq!(s.ahi.stats().hits, before + 1, "plant {i} key {k} repaired");
        }
    }
    // A planted entry for a key that does not exist is dropped by the descent that follows.
    let ghost = s.tree.key(&[Value::UInt(5000)]).unwrap();
    s.ahi.plant(INDEX, &ghost, 1, real);
    let n = s.ahi.stats().entries;
    assert_eq!(get(&s, 5000), None);
    assert_eq!(s.ahi.stats().entries, n - 1);
}

#[test]
fn the_memory_limit_bounds_the_entries() {
    let s = setup(AhiConfig {
        max_memory: 100 * ENTRY_BYTES,
        ..AhiConfig::default()
    });
    let m = load(&s, 0..3000, 0);
    warm(&s, 0..3000, 4, |k| m.get(&k).cloned());
    let st = s.ahi.stats();
    assert!(st.entries <= 100 && st.entries > 0, "{st:?}");
    assert!(st.refused > 0);
    assert_eq!(st.memory_limit, 100 * ENTRY_BYTES as u64);
    assert!(st.hits > 0);
}

#[test]
fn dropping_the_index_removes_its_entries_and_stops_the_probes() {
    let s = setup(AhiConfig::default());
    let m = load(&s, 0..2000, 0);
    warm(&s, 0..2000, 3, |k| m.get(&k).cloned());
    assert!(s.ahi.stats().entries > 0);
    s.ahi.drop_index(INDEX);
    let st = s.ahi.stats();
    assert_eq!((st.entries, st.pages_hashed, st.pages_tracked), (0, 0, 0));
    assert!(s.ahi.entries().is_empty());
    warm(&s, 0..2000, 2, |k| m.get(&k).cloned());
    let after = s.ahi.stats();
    assert_eq!((after.lookups, after.entries), (st.lookups, 0));
}

#[test]
fn switching_off_empties_the_hash_and_on_relearns() {
    let s = setup(AhiConfig::default());
    let m = load(&s, 0..2000, 0);
    warm(&s, 0..2000, 3, |k| m.get(&k).cloned());
    s.ahi.set_enabled(false);
    let off = s.ahi.stats();
    assert!(!off.enabled);
    assert_eq!((off.entries, off.pages_hashed), (0, 0));
    warm(&s, 0..2000, 2, |k| m.get(&k).cloned());
    assert_eq!(s.ahi.stats().lookups, off.lookups);
    assert_eq!(s.ahi.recommendation(INDEX).unwrap().potential, 0);
    s.ahi.set_enabled(true);
    warm(&s, 0..2000, 3, |k| m.get(&k).cloned());
    let on = s.ahi.stats();
    assert!(on.hits > off.hits && on.entries > 0);
}

#[test]
fn pages_freed_by_merges_take_their_entries_with_them() {
    let s = setup(AhiConfig::default());
    let m = load(&s, 0..3000, 0);
    warm(&s, 0..3000, 3, |k| m.get(&k).cloned());
    assert_eq!(s.ahi.stats().entries, 3000);
    for k in 0..2990 {
        s.tree.delete(&s.pool, &[Value::UInt(k)]).unwrap();
    }
    let st = s.ahi.stats();
    // Only the few surviving pages keep (stale) entries until they are hashed again.
    assert!(st.entries < 300, "{st:?}");
    for k in 2990..3000 {
        assert_eq!(get(&s, k), m.get(&k).cloned());
    }
}
