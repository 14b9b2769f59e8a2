//! What the hash's upkeep costs a write load, and when it builds: a page counts only the
//! lookups that saw it unchanged, a page changed between lookups is never rebuilt, a stale
//! build is dropped whole by the first lookup that trips on it, and a page whose builds go
//! to waste needs ever more unchanged lookups before the next one.

mod common;

use std::collections::BTreeMap;

use common::{SPACE, get, row, setup, value, warm};
use minnow_ahi::{AhiConfig, PAGE_BUILD_LIMIT};
use minnow_page::PageId;

const KEYS: u64 = 3000;

/// A tree of `KEYS` keys whose pages are all hashed, and its model.
fn hashed() -> (common::Setup, BTreeMap<u64, Vec<u8>>) {
    let s = setup(AhiConfig::default());
    let mut m = BTreeMap::new();
    for k in 0..KEYS {
        s.tree.insert(&s.pool, &row(k, &value(k, 0))).unwrap();
        m.insert(k, value(k, 0));
    }
    warm(&s, 0..KEYS, 3, |k| m.get(&k).cloned());
    assert_eq!(s.ahi.stats().entries, KEYS);
    (s, m)
}

/// Keys in a fixed order that jumps between pages (a stride coprime with `KEYS`).
fn scattered() -> impl Iterator<Item = u64> {
    (0..KEYS).map(|i| (i * 1237 + 11) % KEYS)
}

/// InnoDB's heuristic, exactly: once the index is ready, an unchanged page is hashed at its
/// `n_recs / PAGE_BUILD_LIMIT + 1`-th lookup, not one before; the lookups until then
/// descend (each probe a miss), and from the next one on the hash answers.
#[test]
fn a_page_is_built_at_its_threshold_and_not_before() {
    let s = setup(AhiConfig::default());
    for k in 0..KEYS {
        s.tree.insert(&s.pool, &row(k, &value(k, 0))).unwrap();
    }
    let expect = |k: u64| Some(value(k, 0));
    // The index becomes ready on keys of the first pages only.
    warm(&s, 0..200, 2, expect);
    assert!(s.ahi.recommendation(common::INDEX).unwrap().ready());
    let k = KEYS - 1;
    let start = s.ahi.stats();
    let mut looked = 0;
    let built = loop {
        looked += 1;
        assert!(looked <= 1000, "never built");
        assert_eq!(get(&s, k), expect(k));
        let now = s.ahi.stats();
        if now.pages_built > start.pages_built {
            break now;
        }
        // Not yet built: every lookup of it so far probed and missed.
        assert_eq!(now.hits, start.hits);
        assert_eq!(now.misses - start.misses, looked);
    };
    assert_eq!(built.pages_built, start.pages_built + 1);
    // The build hashed the last page: one entry per record (the keys are unique).
    let n_recs = (built.entries - start.entries) as usize;
    assert!(n_recs > PAGE_BUILD_LIMIT, "n_recs {n_recs}");
    assert_eq!(
        looked as usize,
        n_recs / PAGE_BUILD_LIMIT + 1,
        "n_recs {n_recs}"
    );
    assert_eq!(get(&s, k), expect(k));
    let after = s.ahi.stats();
    assert_eq!(
        (after.hits, after.pages_built),
        (built.hits + 1, built.pages_built)
    );
}

#[test]
fn a_page_changed_between_lookups_is_never_rebuilt() {
    let (s, mut m) = hashed();
    let before = s.ahi.stats();
    // Read-modify-write of every key, as an update load or a bulk delete does: each lookup
    // finds its page changed since the previous one.
    for k in scattered() {
        assert_eq!(get(&s, k), m.get(&k).cloned(), "key {k}");
        s.tree.update(&s.pool, &row(k, &value(k, 1))).unwrap();
        m.insert(k, value(k, 1));
    }
    let after = s.ahi.stats();
    assert_eq!(
        after.pages_built, before.pages_built,
        "no rebuilds: {after:?}"
    );
    // Each page's build went whole at the first lookup that tripped on it.
    assert_eq!(after.pages_dropped, before.pages_hashed);
    assert_eq!((after.pages_hashed, after.entries), (0, 0));
    // Once the writes stop, lookups earn the pages a build again.
    warm(&s, 0..KEYS, 1, |k| m.get(&k).cloned());
    let rebuilt = s.ahi.stats();
    assert!(rebuilt.pages_built > after.pages_built);
    assert_eq!(rebuilt.entries, KEYS);
    warm(&s, 0..KEYS, 1, |k| m.get(&k).cloned());
    assert_eq!(s.ahi.stats().hits - rebuilt.hits, KEYS, "all from the hash");
}

#[test]
fn stale_entries_never_answer_and_go_with_their_page() {
    let (s, mut m) = hashed();
    // Every page changes; nothing is looked up meanwhile, so every entry is stale.
    for k in 0..KEYS {
        s.tree.update(&s.pool, &row(k, &value(k, 2))).unwrap();
        m.insert(k, value(k, 2));
    }
    let before = s.ahi.stats();
    assert_eq!(before.entries, KEYS);
    for k in scattered() {
        assert_eq!(get(&s, k), m.get(&k).cloned(), "key {k}");
    }
    let after = s.ahi.stats();
    // One failed probe per page dropped its whole build; then the lookups that saw the page
    // unchanged built it again, so that every entry now names its page's current frame and
    // layout.
    assert_eq!(after.pages_dropped, before.pages_hashed);
    assert!(after.pages_built > before.pages_built);
    assert_eq!(after.entries, KEYS);
    for e in s.ahi.entries() {
        let g = s.pool.get_read(PageId::new(SPACE, e.page_no)).unwrap();
        assert_eq!((e.frame, e.layout), (g.frame(), g.layout()), "{e:?}");
    }
}

#[test]
fn a_page_whose_builds_go_to_waste_backs_off() {
    let (s, mut m) = hashed();
    let k = 1500;
    // Change key k's page and trip on it: its whole build goes (every key was used, so
    // the page keeps its base threshold). The size of the drop is the page's record count.
    s.tree.update(&s.pool, &row(k, &value(k, 3))).unwrap();
    m.insert(k, value(k, 3));
    let before = s.ahi.stats();
    assert_eq!(get(&s, k), m.get(&k).cloned());
    let dropped = s.ahi.stats();
    assert_eq!(dropped.pages_dropped, before.pages_dropped + 1);
    let n_recs = (before.entries - dropped.entries) as usize;
    let base = n_recs / PAGE_BUILD_LIMIT + 1;
    // Cycles of lookups of one key and a write to its page: each build answers one key of
    // the page before the write makes it stale, so the threshold doubles after each one.
    // With 2x the base lookups per cycle the page is built at thresholds 1x and 2x, and
    // never again (4x).
    let mut builds = Vec::new();
    for g in 4..14u64 {
        let b = s.ahi.stats().pages_built;
        for _ in 0..2 * base {
            assert_eq!(get(&s, k), m.get(&k).cloned());
        }
        builds.push(s.ahi.stats().pages_built - b);
        s.tree.update(&s.pool, &row(k, &value(k, g))).unwrap();
        m.insert(k, value(k, g));
        assert_eq!(get(&s, k), m.get(&k).cloned());
    }
    assert_eq!(builds, [1, 1, 0, 0, 0, 0, 0, 0, 0, 0], "n_recs {n_recs}");
    // A build that answers its keys brings the threshold back down: with every key looked
    // up, the page is hashed again and stays useful.
    let again = s.ahi.stats().pages_built;
    warm(&s, 0..KEYS, 2, |k| m.get(&k).cloned());
    assert!(s.ahi.stats().pages_built > again);
}
