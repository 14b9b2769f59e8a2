//! `BTree::count_visible`: records counted from their delete mark and writer alone, the rest
//! handed back decoded, on clustered trees with fixed- and variable-width keys and on a
//! secondary tree trusted or not through `PAGE_MAX_TRX_ID`; checked against a full scan.

use minnow_btree::record::{Column, ColumnType, RecordLayout, Value};
use minnow_btree::{BTree, ScanRange};
use minnow_buf::{BufConfig, BufferPool};
use minnow_page::PageSize;

const SPACE: u32 = 1;

fn pool(dir: &std::path::Path) -> BufferPool {
    BufferPool::create_scratch(dir, BufConfig::with_frames(512, PageSize::K4), SPACE).unwrap()
}

/// The writer of row `k`: ids 1..=9 by key, so a reader that sees ids below 6 sees about half.
fn writer(k: u64) -> u64 {
    1 + k % 9
}

fn trx_of(values: &[Value], field: usize) -> u64 {
    match &values[field] {
        Value::Bytes(b) => b.iter().fold(0, |a, &x| (a << 8) | u64::from(x)),
        other => panic!("DB_TRX_ID is {other:?}"),
    }
}

/// What a full scan says `count_visible` must find: (seen and not deleted, not seen).
fn by_scan(pool: &BufferPool, tree: &BTree, field: usize, sees: u64) -> (u64, u64) {
    let (mut visible, mut unseen) = (0, 0);
    for e in tree.scan(pool, ScanRange::all()).unwrap() {
        let e = e.unwrap();
        if trx_of(&e.values, field) < sees {
            visible += u64::from(!e.deleted);
        } else {
            unseen += 1;
        }
    }
    (visible, unseen)
}

/// Builds a clustered tree of 2,000 rows with `key(k)` as primary key, delete-marks every
/// seventh, then counts it as readers that see writers below 1, 6 and 10.
fn check_clustered(key_col: ColumnType, key: impl Fn(u64) -> Value) {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path());
    let layout = RecordLayout::clustered(
        vec![Column::new(key_col)],
        vec![Column::nullable(ColumnType::Var(100))],
    )
    .unwrap();
    let (tree, _) = BTree::create(&pool, SPACE, 7, layout).unwrap();
    for k in 0..2000u64 {
        let row = [
            key(k),
            Value::trx_id(writer(k)),
            Value::roll_ptr(1 << 55),
            Value::Bytes(vec![b'v'; (k % 90) as usize]),
        ];
        tree.insert(&pool, &row).unwrap();
    }
    for k in (0..2000u64).step_by(7) {
        tree.set_delete_mark(&pool, &[key(k)], true).unwrap();
    }
    // The same readers told "every writer below `sees`" up front (the inline test), or
    // nothing up front and asked about each writer.
    let readers = [1, 6, 10]
        .into_iter()
        .flat_map(|sees| [(sees, sees), (sees, 0)]);
    for (sees, below) in readers {
        let c = tree.count_visible(&pool, below, &|t| t < sees).unwrap();
        let (visible, unseen) = by_scan(&pool, &tree, 1, sees);
        assert_eq!(c.visible, visible, "reader seeing ids below {sees}");
        assert_eq!(
            c.unresolved.len() as u64,
            unseen,
            "reader seeing ids below {sees}"
        );
        assert!(c.leaves > 10, "{} leaves", c.leaves);
        for e in &c.unresolved {
            assert!(trx_of(&e.values, 1) >= sees);
            assert_eq!(e.values.len(), 4, "every field decoded");
        }
    }
    let all = tree.count_visible(&pool, u64::MAX, &|_| true).unwrap();
    assert_eq!(all.visible, 2000 - 2000u64.div_ceil(7));
}

#[test]
fn clustered_records_count_by_their_writer_with_a_fixed_width_key() {
    check_clustered(ColumnType::U64, Value::UInt);
}

#[test]
fn clustered_records_count_by_their_writer_with_a_variable_width_key() {
    check_clustered(ColumnType::Var(40), |k| {
        Value::Bytes(format!("key-{k:0width$}", width = (k % 13) as usize).into_bytes())
    });
}

#[test]
fn secondary_leaves_count_as_a_whole_when_their_max_trx_id_is_seen() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path());
    let layout = RecordLayout::secondary(vec![
        Column::new(ColumnType::U32),
        Column::new(ColumnType::U64),
    ])
    .unwrap();
    let (tree, _) = BTree::create(&pool, SPACE, 8, layout).unwrap();
    let entry = |k: u64| [Value::UInt(k % 50), Value::UInt(k)];
    // Written by transaction 3, then transaction 8 delete-marks a few on some leaves.
    for k in 0..3000u64 {
        tree.insert_trx(&pool, &entry(k), 3).unwrap();
    }
    for k in (0..3000u64).filter(|k| k % 50 == 4) {
        tree.set_delete_mark_trx(&pool, &entry(k), true, 8).unwrap();
    }
    let marked = 3000 / 50;
    // A reader that sees everything trusts every leaf.
    let c = tree
        .count_visible(&pool, 9, &|_| panic!("asked about a record"))
        .unwrap();
    assert_eq!((c.visible, c.unresolved.len()), (3000 - marked, 0));
    // One that does not see 8: the leaves 8 changed come back whole, the rest count.
    let c = tree.count_visible(&pool, 8, &|_| true).unwrap();
    let touched: u64 = c.unresolved.iter().map(|e| u64::from(e.deleted)).sum();
    assert_eq!(
        touched, marked,
        "every delete-marked entry is on a leaf 8 changed"
    );
    assert!(c.unresolved.iter().all(|e| e.page_max_trx_id == 8));
    assert!(c.visible > 0 && c.visible < 3000 - marked, "{}", c.visible);
    assert_eq!(c.visible + c.unresolved.len() as u64, 3000);
}
