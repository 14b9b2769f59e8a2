//! Property test: random inserts, updates, deletes, delete-marks, lookups, warm-up rounds,
//! planted garbage entries and on/off switches against a `BTreeMap` model. Every lookup must
//! agree with the model, whatever the hash holds.

mod common;

use std::collections::BTreeMap;

use common::{INDEX, get, row, setup, value};
use minnow_ahi::{AhiConfig, Slot};
use minnow_btree::record::Value;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Insert(u64, u8),
    Update(u64, u8),
    Delete(u64),
    Get(u64),
    /// Look every key in 0..KEYS up, three times (makes pages hashed).
    Warm,
    /// Plant an entry for key `.0` pointing at page `.1`, offset `.2`, with `.3` added to
    /// the LSN of the first real entry.
    Plant(u64, u32, u32, u64),
    Switch(bool),
}

const KEYS: u64 = 1500;

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..KEYS, any::<u8>()).prop_map(|(k, g)| Op::Insert(k, g)),
        2 => (0..KEYS, any::<u8>()).prop_map(|(k, g)| Op::Update(k, g)),
        3 => (0..KEYS).prop_map(Op::Delete),
        3 => (0..KEYS).prop_map(Op::Get),
        1 => Just(Op::Warm),
        2 => (0..KEYS, 0u32..40, 0u32..4200, 0u64..2).prop_map(|(k, p, o, l)| Op::Plant(k, p, o, l)),
        1 => any::<bool>().prop_map(Op::Switch),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn lookups_agree_with_the_model(ops in proptest::collection::vec(op(), 1..120)) {
        let s = setup(AhiConfig::default());
        let mut m: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
        // A base of keys so that the tree has several levels from the start.
        for k in (0..KEYS).step_by(2) {
            s.tree.insert(&s.pool, &row(k, &value(k, 0))).unwrap();
            m.insert(k, value(k, 0));
        }
        for op in ops {
            match op {
                Op::Insert(k, g) => {
                    let r = s.tree.insert(&s.pool, &row(k, &value(k, g.into())));
                    prop_assert_eq!(r.is_ok(), !m.contains_key(&k));
                    m.entry(k).or_insert_with(|| value(k, g.into()));
                }
                Op::Update(k, g) => {
                    let r = s.tree.update(&s.pool, &row(k, &value(k, g.into())));
                    prop_assert_eq!(r.is_ok(), m.contains_key(&k));
                    if let Some(v) = m.get_mut(&k) {
                        *v = value(k, g.into());
                    }
                }
                Op::Delete(k) => {
                    let r = s.tree.delete(&s.pool, &[Value::UInt(k)]);
                    prop_assert_eq!(r.is_ok(), m.remove(&k).is_some());
                }
                Op::Get(k) => prop_assert_eq!(get(&s, k), m.get(&k).cloned()),
                Op::Warm => {
                    for _ in 0..3 {
                        for k in 0..KEYS {
                            prop_assert_eq!(get(&s, k), m.get(&k).cloned());
                        }
                    }
                }
                Op::Plant(k, page_no, origin, dl) => {
                    // A real entry's frame and layout (give or take `dl`), any page and origin.
                    let (frame, layout) = s
                        .ahi
                        .entries()
                        .first()
                        .map_or((page_no, 0), |e| (e.frame, e.layout + dl));
                    let key = s.tree.key(&[Value::UInt(k)]).unwrap();
                    let space = common::SPACE;
                    let slot = Slot { index_id: INDEX, space, page_no, origin, layout, frame };
                    s.ahi.plant(INDEX, &key, 1, slot);
                    prop_assert_eq!(get(&s, k), m.get(&k).cloned());
                }
                Op::Switch(on) => s.ahi.set_enabled(on),
            }
        }
        for k in 0..KEYS {
            prop_assert_eq!(get(&s, k), m.get(&k).cloned());
        }
        s.tree.check(&s.pool).unwrap();
    }
}
