//! Bulk build: trees built bottom-up from sorted records must pass `check()`, hold exactly
//! the input, fill their leaves to the fill factor, take later inserts and deletes like any
//! tree, survive a restart, and reject unsorted input with a typed error.

mod common;

use common::{Env, SPACE, layout, row, value_of};
use minnow_btree::record::{Column, ColumnType, RecordLayout, Value};
use minnow_btree::tree::{BulkBuilder, BulkOptions, DEFAULT_FILL_FACTOR};
use minnow_btree::{BTree, ScanRange, TreeError};
use minnow_buf::{BufConfig, BufferPool};
use minnow_page::PageSize;
use minnow_redo::FlushAtCommit;

fn scratch(dir: &std::path::Path, page: PageSize, frames: usize) -> BufferPool {
    BufferPool::create_scratch(dir, BufConfig::with_frames(frames, page), 1).unwrap()
}

fn value(k: i64) -> Vec<u8> {
    (0..(k as usize % 97 + 20))
        .map(|i| (k as u8) ^ (i as u8))
        .collect()
}

fn build(pool: &BufferPool, n: i64, fill: f64) -> BTree {
    let mut b = BulkBuilder::new(
        pool,
        SPACE,
        9,
        layout(),
        BulkOptions::default().fill_factor(fill),
    )
    .unwrap();
    for k in 0..n {
        b.push_values(&row(k * 3 - 1000, &value(k))).unwrap();
    }
    assert_eq!(b.records(), n as u64);
    let (tree, end) = b.finish().unwrap();
    pool.commit_durable(end, FlushAtCommit::Sync).unwrap();
    tree
}

fn contents(pool: &BufferPool, tree: &BTree) -> Vec<(i64, Vec<u8>)> {
    tree.scan(pool, ScanRange::all())
        .unwrap()
        .map(|e| value_of(&e.unwrap().values))
        .collect()
}

fn expected(n: i64) -> Vec<(i64, Vec<u8>)> {
    (0..n).map(|k| (k * 3 - 1000, value(k))).collect()
}

#[test]
fn fill_factors_and_page_sizes() {
    for page in [PageSize::K4, PageSize::K16] {
        for fill in [1.0, DEFAULT_FILL_FACTOR, 0.75, 0.5, 0.3] {
            let dir = tempfile::tempdir().unwrap();
            let pool = scratch(dir.path(), page, 256);
            let n = 3000;
            let tree = build(&pool, n, fill);
            let stats = tree
                .check(&pool)
                .unwrap_or_else(|e| panic!("{page:?} fill {fill}: {e}"));
            assert_eq!(stats.records, n as u64);
            assert_eq!(contents(&pool, &tree), expected(n), "{page:?} fill {fill}");
            // Every leaf but the last is filled to the fill factor (within one record of at
            // most 146 bytes and the directory slots, which the fill factor counts and
            // `leaf_fill` does not), never past it.
            let cap = (page.bytes() - 120 - 12) as f64;
            let slack = (146.0 + 2.0 * (page.bytes() as f64 / 40.0 / 4.0)) / cap;
            let leaves = &stats.leaf_fill[..stats.leaf_fill.len() - 1];
            for (i, f) in leaves.iter().enumerate() {
                assert!(
                    *f <= fill + 1e-9 && *f >= fill - slack,
                    "{page:?} fill {fill}: leaf {i} is {f:.3} full"
                );
            }
            for k in [-1000i64, 2, 7997] {
                let got = tree.get(&pool, &[Value::Int(k)]).unwrap().unwrap();
                assert_eq!(value_of(&got.values), (k, value((k + 1000) / 3)));
            }
        }
    }
}

#[test]
fn empty_and_single_record() {
    let dir = tempfile::tempdir().unwrap();
    let pool = scratch(dir.path(), PageSize::K4, 64);
    let empty = build(&pool, 0, DEFAULT_FILL_FACTOR);
    let s = empty.check(&pool).unwrap();
    assert_eq!((s.records, s.height), (0, 1));
    let one = build(&pool, 1, DEFAULT_FILL_FACTOR);
    let s = one.check(&pool).unwrap();
    assert_eq!((s.records, s.height), (1, 1));
    assert_eq!(contents(&pool, &one), expected(1));
    // The built trees work as ordinary trees afterwards.
    one.insert(&pool, &row(5, b"five")).unwrap();
    empty.insert(&pool, &row(5, b"five")).unwrap();
    assert_eq!(empty.check(&pool).unwrap().records, 1);
    assert_eq!(one.check(&pool).unwrap().records, 2);
}

#[test]
fn many_levels_with_two_records_a_page() {
    // A tiny fill factor: every page takes its minimum of two records, so a 2,000-record
    // tree is 11 levels high.
    let dir = tempfile::tempdir().unwrap();
    let pool = scratch(dir.path(), PageSize::K4, 4096);
    let n = 2000;
    let tree = build(&pool, n, 0.01);
    let stats = tree.check(&pool).unwrap();
    assert_eq!(stats.records, n as u64);
    assert_eq!(stats.height, 11);
    assert_eq!(stats.pages_per_level[0], 1000);
    assert_eq!(contents(&pool, &tree), expected(n));
    // Inserts between the keys split pages; deletes merge them; the tree stays valid.
    for k in 0..400i64 {
        tree.insert(&pool, &row(k * 3 - 999, b"between")).unwrap();
    }
    for k in 0..600i64 {
        tree.delete(&pool, &[Value::Int(k * 3 - 1000)]).unwrap();
    }
    let stats = tree.check(&pool).unwrap();
    assert_eq!(stats.records, (n - 600 + 400) as u64);
}

#[test]
fn out_of_order_and_duplicates_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let pool = scratch(dir.path(), PageSize::K4, 64);
    let mut b = BulkBuilder::new(&pool, SPACE, 9, layout(), BulkOptions::default()).unwrap();
    // Across a page boundary too: 200 records fill several 4 KiB leaves.
    for k in 0..200 {
        b.push_values(&row(k, &[7; 100])).unwrap();
    }
    match b.push_values(&row(199, b"again")) {
        Err(TreeError::Duplicate { index_id: 9, key }) => {
            assert_eq!(key, layout().search_key(&[Value::Int(199)]).unwrap());
        }
        other => panic!("expected a duplicate, got {other:?}"),
    }
    match b.push_values(&row(3, b"late")) {
        Err(TreeError::OutOfOrder {
            index_id: 9,
            key,
            previous,
        }) => {
            let l = layout();
            assert_eq!(key, l.search_key(&[Value::Int(3)]).unwrap());
            assert_eq!(previous, l.search_key(&[Value::Int(199)]).unwrap());
        }
        other => panic!("expected out of order, got {other:?}"),
    }
    // The first record of a new leaf is checked against the previous leaf's last.
    let mut b = BulkBuilder::new(&pool, SPACE, 10, layout(), BulkOptions::default()).unwrap();
    let mut k = 0;
    let err = loop {
        // Each record takes a fresh leaf once the first is full; at some point a fresh leaf
        // starts with a record smaller than the previous leaf's last.
        let r = if k == 60 {
            b.push_values(&row(10, b"x"))
        } else {
            b.push_values(&row(k * 10, &[1; 150]))
        };
        if let Err(e) = r {
            break e;
        }
        k += 1;
    };
    assert!(matches!(err, TreeError::OutOfOrder { .. }), "{err}");
    for bad in [0.0, -1.0, 1.5, f64::NAN] {
        let r = BulkBuilder::new(
            &pool,
            SPACE,
            9,
            layout(),
            BulkOptions::default().fill_factor(bad),
        );
        assert!(matches!(r, Err(TreeError::BadFillFactor { .. })));
    }
    // An encoded record too big for a page is an error, not a panic.
    let mut b = BulkBuilder::new(&pool, SPACE, 11, big_layout(), BulkOptions::default()).unwrap();
    let huge = |k: i64| {
        vec![
            Value::Int(k),
            Value::trx_id(1),
            Value::roll_ptr(1 << 55),
            Value::Bytes(vec![k as u8; 3000]),
        ]
    };
    assert!(matches!(
        b.push(&big_layout().encode(&huge(1)).unwrap()),
        Err(TreeError::Node(
            minnow_btree::node::NodeError::RecordTooBig { .. }
        ))
    ));
    // From values, its long column goes to overflow pages, as an insert's does.
    let mut b = BulkBuilder::new(&pool, SPACE, 12, big_layout(), BulkOptions::default()).unwrap();
    for k in 0..5 {
        b.push_values(&huge(k)).unwrap();
    }
    let (tree, _) = b.finish().unwrap();
    let stats = tree.check(&pool).unwrap();
    assert_eq!((stats.records, stats.overflow_pages.len()), (5, 5));
    assert_eq!(
        tree.get(&pool, &[Value::Int(3)]).unwrap().unwrap().values,
        huge(3)
    );
}

fn big_layout() -> RecordLayout {
    RecordLayout::clustered(
        vec![Column::new(ColumnType::I64)],
        vec![Column::new(ColumnType::Var(4000))],
    )
    .unwrap()
}

#[test]
fn restart_survives() {
    let env = Env::new(64);
    let n = 5000;
    let root = {
        let pool = env.create();
        let tree = build(&pool, n, DEFAULT_FILL_FACTOR);
        // No clean shutdown: the pages exist only as redo (and whatever the pool wrote).
        let root = tree.root();
        drop(pool);
        root
    };
    let pool = env.reopen();
    let tree = BTree::open(&pool, SPACE, root, layout()).unwrap();
    assert_eq!(tree.check(&pool).unwrap().records, n as u64);
    assert_eq!(contents(&pool, &tree), expected(n));
}

#[test]
fn bulk_build_from_an_iterator() {
    let dir = tempfile::tempdir().unwrap();
    let pool = scratch(dir.path(), PageSize::K16, 64);
    let l = layout();
    let recs = (0..1000i64).map(|k| l.encode(&row(k, &value(k))).unwrap());
    let (tree, end) =
        BTree::bulk_build(&pool, SPACE, 12, l.clone(), BulkOptions::default(), recs).unwrap();
    pool.commit_durable(end, FlushAtCommit::Sync).unwrap();
    assert_eq!(tree.check(&pool).unwrap().records, 1000);
}

#[test]
fn built_pages_belong_to_the_tree_segments() {
    let dir = tempfile::tempdir().unwrap();
    let pool = scratch(dir.path(), PageSize::K4, 256);
    let mut b = BulkBuilder::new(&pool, SPACE, 9, layout(), BulkOptions::default()).unwrap();
    for k in 0..2000i64 {
        b.push_values(&row(k * 3 - 1000, &value(k))).unwrap();
    }
    let (tree, _) = b.finish().unwrap();
    let stats = tree.check(&pool).unwrap();
    assert_eq!((stats.records, stats.height), (2000, 2));
    let report = minnow_btree::space::check_space(&pool, SPACE).unwrap();
    tree.check_space(&pool, &report).unwrap();
    let reopened = BTree::open(&pool, SPACE, tree.root(), layout()).unwrap();
    assert_eq!(contents(&pool, &reopened), expected(2000));
    // A single-leaf build lands in the root page too, and freeing the tree gives every
    // page back.
    let mut b = BulkBuilder::new(&pool, SPACE, 10, layout(), BulkOptions::default()).unwrap();
    b.push_values(&row(4, b"four")).unwrap();
    let (one, _) = b.finish().unwrap();
    assert_eq!(one.check(&pool).unwrap().records, 1);
    let report = minnow_btree::space::check_space(&pool, SPACE).unwrap();
    one.check_space(&pool, &report).unwrap();
    tree.free_all(&pool).unwrap();
    one.free_all(&pool).unwrap();
}
