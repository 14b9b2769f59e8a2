//! Model-based tests: random operations on one INDEX page, mirrored on a `BTreeMap`.
//!
//! After every step the page must pass `node::check`, iterate to exactly the model's rows, and
//! answer searches as the model does.

use std::collections::BTreeMap;

use minnow_btree::node::{self, Cursor, NodeError};
use minnow_btree::record::{Column, ColumnType, RecordLayout, Value};
use proptest::prelude::*;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Row {
    value: Option<Vec<u8>>,
    small: Option<u16>,
    trx: u64,
    deleted: bool,
}

#[derive(Debug, Clone)]
enum Op {
    Insert {
        key: i32,
        len: usize,
        null: bool,
        small: Option<u16>,
    },
    Delete(usize),
    Mark(usize, bool),
    Reorganize,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (-3000i32..3000, 0usize..300, any::<bool>(), any::<Option<u16>>())
            .prop_map(|(key, len, null, small)| Op::Insert { key, len, null, small }),
        2 => any::<usize>().prop_map(Op::Delete),
        1 => (any::<usize>(), any::<bool>()).prop_map(|(i, on)| Op::Mark(i, on)),
        1 => Just(Op::Reorganize),
    ]
}

fn layout() -> RecordLayout {
    RecordLayout::clustered(
        vec![Column::new(ColumnType::I32)],
        vec![
            Column::nullable(ColumnType::Var(400)),
            Column::nullable(ColumnType::U16),
        ],
    )
    .unwrap()
}

fn values(key: i32, row: &Row) -> Vec<Value> {
    vec![
        Value::Int(i64::from(key)),
        Value::trx_id(row.trx),
        Value::roll_ptr(row.trx | 1 << 55),
        row.value.clone().map_or(Value::Null, Value::Bytes),
        row.small.map_or(Value::Null, |s| Value::UInt(u64::from(s))),
    ]
}

fn search(page: &[u8], l: &RecordLayout, key: i32) -> node::SearchResult {
    let k = l.search_key(&[Value::Int(i64::from(key))]).unwrap();
    node::search(page, l, &k).unwrap()
}

fn verify(page: &[u8], l: &RecordLayout, model: &BTreeMap<i32, Row>, probes: &[i32]) {
    node::check(page, l).unwrap();
    let mut rows = Vec::new();
    for c in node::records(page) {
        let c = c.unwrap();
        let deleted = node::header_at(page, c).unwrap().deleted();
        rows.push((l.decode(page, c.origin()).unwrap(), deleted));
    }
    let want: Vec<_> = model
        .iter()
        .map(|(k, r)| (values(*k, r), r.deleted))
        .collect();
    assert_eq!(rows, want);
    assert_eq!(node::n_recs(page).unwrap(), model.len());
    for &p in probes {
        let r = search(page, l, p);
        assert_eq!(r.exact, model.contains_key(&p), "probe {p}");
        match model.range(..=p).next_back() {
            None => assert!(r.cursor.is_infimum()),
            Some((k, _)) => assert_eq!(
                l.decode(page, r.cursor.origin()).unwrap()[0],
                Value::Int(i64::from(*k))
            ),
        }
        match model.range(p + 1..).next() {
            None => assert!(r.up.is_supremum()),
            Some((k, _)) => assert_eq!(
                l.decode(page, r.up.origin()).unwrap()[0],
                Value::Int(i64::from(*k))
            ),
        }
    }
}

/// Runs `ops`; returns whether some insert found the page full.
fn run(page_size: usize, ops: Vec<Op>) -> bool {
    let l = layout();
    let mut page = vec![0u8; page_size];
    node::init(&mut page, 1, 0).unwrap();
    let mut model: BTreeMap<i32, Row> = BTreeMap::new();
    let mut full_seen = false;
    for (step, op) in ops.into_iter().enumerate() {
        match op {
            Op::Insert {
                key,
                len,
                null,
                small,
            } => {
                let row = Row {
                    value: (!null).then(|| vec![(key & 0xFF) as u8; len]),
                    small,
                    trx: step as u64,
                    deleted: false,
                };
                let rec = l.encode(&values(key, &row)).unwrap();
                let before = page.clone();
                let could = node::fits(&page, &l, rec.len()).unwrap()
                    || node::fits_after_reorganize(&page, rec.len()).unwrap();
                match node::insert(&mut page, &l, &rec) {
                    Ok(c) => {
                        assert!(!model.contains_key(&key));
                        assert!(could);
                        assert_eq!(l.decode(&page, c.origin()).unwrap(), values(key, &row));
                        model.insert(key, row);
                    }
                    Err(NodeError::Duplicate { .. }) => {
                        assert!(model.contains_key(&key));
                        assert_eq!(page, before);
                    }
                    Err(NodeError::PageFull { .. }) => {
                        assert!(!could);
                        assert_eq!(page, before);
                        full_seen = true;
                    }
                    Err(e) => panic!("insert: {e}"),
                }
            }
            Op::Delete(i) => {
                let Some(&key) = model.keys().nth(i % model.len().max(1)) else {
                    continue;
                };
                let r = search(&page, &l, key);
                assert!(r.exact);
                let prev = node::delete(&mut page, &l, r.cursor).unwrap();
                model.remove(&key);
                match model.range(..key).next_back() {
                    None => assert_eq!(prev, Cursor::INFIMUM),
                    Some((k, _)) => assert_eq!(
                        l.decode(&page, prev.origin()).unwrap()[0],
                        Value::Int(i64::from(*k))
                    ),
                }
            }
            Op::Mark(i, on) => {
                let Some(&key) = model.keys().nth(i % model.len().max(1)) else {
                    continue;
                };
                let r = search(&page, &l, key);
                node::set_delete_mark(&mut page, r.cursor, on).unwrap();
                if let Some(row) = model.get_mut(&key) {
                    row.deleted = on;
                }
            }
            Op::Reorganize => {
                node::reorganize(&mut page, &l).unwrap();
                assert_eq!(node::free_space(&page).unwrap(), {
                    let h = minnow_page::index::IndexHeader::read(&page).unwrap();
                    assert_eq!((h.garbage, h.free, h.last_insert), (0, 0, 0));
                    page_size - 8 - 2 * usize::from(h.n_dir_slots) - usize::from(h.heap_top)
                });
            }
        }
        let probes: Vec<i32> = model
            .keys()
            .take(3)
            .flat_map(|k| [k - 1, *k, k + 1])
            .chain([-5000, 0, 5000, step as i32 - 100])
            .collect();
        verify(&page, &l, &model, &probes);
    }
    full_seen
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_ops_on_a_4k_page_match_the_model(ops in prop::collection::vec(op(), 1..400)) {
        run(4096, ops);
    }

    #[test]
    fn random_ops_on_a_16k_page_match_the_model(ops in prop::collection::vec(op(), 1..600)) {
        run(16384, ops);
    }
}

#[test]
fn a_4k_page_fills_and_then_refuses() {
    // Deterministic run that certainly hits a full page, then keeps deleting and inserting.
    let mut ops = Vec::new();
    for i in 0..200 {
        ops.push(Op::Insert {
            key: (i * 7919) % 3000 - 1500,
            len: 120,
            null: false,
            small: Some(i as u16),
        });
        if i % 5 == 4 {
            ops.push(Op::Delete(i as usize * 31));
        }
    }
    ops.push(Op::Reorganize);
    assert!(run(4096, ops));
}
