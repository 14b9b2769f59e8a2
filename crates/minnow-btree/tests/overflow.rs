//! Overflow pages at the tree level: rows with long BLOB and VARCHAR columns around the
//! off-page thresholds, on 4 KiB and 16 KiB pages, inserted, read, updated across the
//! threshold, deleted, reopened, and checked; the overflow pages all go back to the
//! allocator.

mod common;

use minnow_btree::record::{Column, ColumnType, RecordLayout, Value};
use minnow_btree::tree::overflow::{max_record_len, part_capacity};
use minnow_btree::tree::space_usage;
use minnow_btree::{BTree, ScanRange, TreeError};
use minnow_buf::{BufConfig, BufferPool};
use minnow_page::PageSize;
use minnow_redo::FlushAtCommit;

/// Key, a nullable BLOB, a nullable VARCHAR(3000).
fn layout() -> RecordLayout {
    RecordLayout::clustered(
        vec![Column::new(ColumnType::U32)],
        vec![
            Column::nullable(ColumnType::Blob),
            Column::nullable(ColumnType::Var(3000)),
        ],
    )
    .unwrap()
}

fn bytes(seed: u32, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(31).wrapping_add(seed) as u8)
        .collect()
}

fn row(k: u32, blob: Option<usize>, var: Option<usize>) -> Vec<Value> {
    let v = |len: Option<usize>, s: u32| len.map_or(Value::Null, |n| Value::Bytes(bytes(s, n)));
    vec![
        Value::UInt(k.into()),
        Value::trx_id(1),
        Value::roll_ptr(1 << 55),
        v(blob, k),
        v(var, k ^ 0x55),
    ]
}

/// Lengths around every threshold of a page size.
fn sizes(page: PageSize) -> Vec<usize> {
    let half = max_record_len(page.bytes());
    let part = part_capacity(page.bytes());
    vec![
        0,
        1,
        40,
        41,
        half - 40,
        half - 30,
        half,
        half + 1,
        part,
        part + 1,
        3 * part + 7,
        16383,
        16384,
        200_000,
    ]
}

fn run(page: PageSize, frames: usize) {
    let dir = tempfile::tempdir().unwrap();
    let pool =
        BufferPool::create_scratch(dir.path(), BufConfig::with_frames(frames, page), 1).unwrap();
    let (tree, _) = BTree::create(&pool, 1, 9, layout()).unwrap();
    let sizes = sizes(page);
    let mut rows = Vec::new();
    for (k, &n) in sizes.iter().enumerate() {
        let k = k as u32;
        let var = if k.is_multiple_of(3) {
            Some(n.min(3000))
        } else {
            None
        };
        let r = row(k, Some(n), var);
        let end = tree.insert(&pool, &r).unwrap();
        pool.commit_durable(end, FlushAtCommit::Lazy).unwrap();
        assert_eq!(tree.get(&pool, &r[..1]).unwrap().unwrap().values, r);
        rows.push(r);
    }
    let stats = tree.check(&pool).unwrap();
    assert!(!stats.overflow_pages.is_empty());
    let pages = stats.overflow_pages.len();

    // A scan that fetches nothing off-page gets NULL for off-page fields only.
    let lean: Vec<_> = tree
        .scan(&pool, ScanRange::all().fetch(vec![]))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let full: Vec<_> = tree
        .scan(&pool, ScanRange::all())
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for ((l, f), r) in lean.iter().zip(&full).zip(&rows) {
        assert_eq!(&f.values, r);
        for (a, b) in l.values.iter().zip(&f.values) {
            assert!(a == b || *a == Value::Null);
        }
    }
    assert!(lean.iter().zip(&full).any(|(l, f)| l != f));

    // Grow and shrink across the threshold.
    for (k, r) in rows.iter_mut().enumerate() {
        let n = sizes[sizes.len() - 1 - k];
        let new = row(k as u32 + 1000, Some(n), Some(n.min(3000)));
        r[3] = new[3].clone();
        r[4] = new[4].clone();
        tree.update(&pool, r).unwrap();
        assert_eq!(&tree.get(&pool, &r[..1]).unwrap().unwrap().values, r);
    }
    let stats = tree.check(&pool).unwrap();
    assert!(stats.overflow_pages.len() >= pages / 2);

    // Every chain is freed with its record.
    let before = space_usage(&pool, 1).unwrap();
    for r in &rows {
        tree.delete(&pool, &r[..1]).unwrap();
    }
    let stats = tree.check(&pool).unwrap();
    assert_eq!((stats.records, stats.overflow_pages.len()), (0, 0));
    let after = space_usage(&pool, 1).unwrap();
    assert_eq!(after.free_limit, before.free_limit);
    // All pages but page 0, the INODE page and the root are free again.
    assert_eq!(after.free_pages + 3, after.free_limit);
    let report = minnow_btree::space::check_space(&pool, 1).unwrap();
    tree.check_space(&pool, &report).unwrap();
}

#[test]
fn blob_rows_on_4k_pages() {
    run(PageSize::K4, 256);
}

#[test]
fn blob_rows_on_16k_pages() {
    run(PageSize::K16, 128);
}

#[test]
fn key_columns_never_go_off_page_and_too_large_rows_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let page = PageSize::K4;
    let pool = BufferPool::create_scratch(dir.path(), BufConfig::with_frames(32, page), 1).unwrap();
    // A key that alone is bigger than half a page.
    let l = RecordLayout::clustered(
        vec![Column::new(ColumnType::Var(3000))],
        vec![Column::new(ColumnType::Blob)],
    )
    .unwrap();
    let (tree, _) = BTree::create(&pool, 1, 9, l).unwrap();
    let r = vec![
        Value::Bytes(vec![1; 2500]),
        Value::trx_id(1),
        Value::roll_ptr(1 << 55),
        Value::Bytes(vec![2; 10]),
    ];
    assert!(matches!(
        tree.insert(&pool, &r),
        Err(TreeError::RowTooLarge { .. })
    ));
    // More overflow pages than a quarter of a 32-frame pool.
    let r = vec![
        Value::Bytes(vec![1; 10]),
        Value::trx_id(1),
        Value::roll_ptr(1 << 55),
        Value::Bytes(vec![2; 9 * 4096]),
    ];
    assert!(matches!(
        tree.insert(&pool, &r),
        Err(TreeError::RowTooLarge { .. })
    ));
    tree.check(&pool).unwrap();
    // BLOB keys are refused by the layout.
    assert!(RecordLayout::secondary(vec![Column::new(ColumnType::Text)]).is_err());
}

#[test]
fn off_page_rows_survive_a_clean_reopen() {
    let env = common::Env::new(128);
    let rows: Vec<_> = (0..20u32)
        .map(|k| row(k, Some(k as usize * 997), Some(2000)))
        .collect();
    let root = {
        let pool = env.create();
        let (tree, _) = BTree::create(&pool, common::SPACE, 3, layout()).unwrap();
        for r in &rows {
            let end = tree.insert(&pool, r).unwrap();
            pool.commit_durable(end, FlushAtCommit::Sync).unwrap();
        }
        let root = tree.root();
        pool.shutdown().unwrap();
        root
    };
    let pool = env.reopen();
    let tree = BTree::open(&pool, common::SPACE, root, layout()).unwrap();
    tree.check(&pool).unwrap();
    for r in &rows {
        assert_eq!(&tree.get(&pool, &r[..1]).unwrap().unwrap().values, r);
    }
}

#[test]
fn a_stamp_in_place_changes_the_system_columns_and_mark_only() {
    let dir = tempfile::tempdir().unwrap();
    let page = PageSize::K4;
    let pool = BufferPool::create_scratch(dir.path(), BufConfig::with_frames(64, page), 1).unwrap();
    let (tree, _) = BTree::create(&pool, 1, 9, layout()).unwrap();
    // An inline row and one whose BLOB lives on overflow pages.
    for k in 0..2u32 {
        tree.insert(&pool, &row(k, Some(40 + k as usize * 9000), Some(20)))
            .unwrap();
    }
    let pages = space_usage(&pool, 1).unwrap();
    let chains = tree.check(&pool).unwrap().overflow_pages;
    assert!(!chains.is_empty());
    for k in 0..2u32 {
        let key = [Value::UInt(k.into())];
        tree.stamp_marked(&pool, &key, 77, 0x12_3456, Some(true))
            .unwrap();
        let e = tree.get(&pool, &key).unwrap().unwrap();
        assert!(e.deleted);
        let mut want = row(k, Some(40 + k as usize * 9000), Some(20));
        want[1] = Value::trx_id(77);
        want[2] = Value::roll_ptr(0x12_3456);
        assert_eq!(e.values, want, "only DB_TRX_ID and DB_ROLL_PTR changed");
        // Clearing the mark keeps the stamp; `None` keeps the mark.
        tree.stamp_marked(&pool, &key, 78, 5, Some(false)).unwrap();
        tree.stamp_marked(&pool, &key, 79, 6, None).unwrap();
        let e = tree.get(&pool, &key).unwrap().unwrap();
        assert!(!e.deleted);
        assert_eq!(e.values[1], Value::trx_id(79));
        assert_eq!(e.values[2], Value::roll_ptr(6));
    }
    // The off-page BLOB stayed where it was: no page was allocated or freed.
    assert_eq!(space_usage(&pool, 1).unwrap(), pages);
    assert_eq!(tree.check(&pool).unwrap().overflow_pages, chains);
    assert!(matches!(
        tree.stamp_marked(&pool, &[Value::UInt(9)], 1, 1, Some(true)),
        Err(TreeError::NotFound { .. })
    ));
    tree.check(&pool).unwrap();
    // A secondary index has no system columns to stamp.
    let sec = RecordLayout::secondary(vec![Column::new(ColumnType::U32)]).unwrap();
    let (s, _) = BTree::create(&pool, 1, 10, sec).unwrap();
    s.insert(&pool, &[Value::UInt(1)]).unwrap();
    assert!(
        s.stamp_marked(&pool, &[Value::UInt(1)], 1, 1, Some(true))
            .is_err()
    );
}
