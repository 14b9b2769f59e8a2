//! Which latches a pessimistic descent keeps: a safe node page lets go of the root.

use minnow_buf::{BufConfig, BufferPool};
use minnow_page::{PageId, PageSize};

use super::BTree;
use super::descend::Intent;
use crate::node;
use crate::record::{Column, ColumnType, RecordLayout, SearchKey, Value};

/// A 120-byte key part, so node pointers are long (about 28 to a 4 KiB page) and a tree of
/// a thousand rows is three levels high.
fn layout() -> RecordLayout {
    RecordLayout::clustered(
        vec![
            Column::new(ColumnType::I64),
            Column::new(ColumnType::Fixed(120)),
        ],
        vec![Column::nullable(ColumnType::Var(200))],
    )
    .unwrap()
}

fn row(k: i64) -> Vec<Value> {
    vec![
        Value::Int(k),
        Value::Bytes(vec![k as u8; 120]),
        Value::trx_id(1),
        Value::roll_ptr(1 << 55),
        Value::Bytes(vec![7; 200]),
    ]
}

fn key(tree: &BTree, k: i64) -> SearchKey {
    tree.key(&[Value::Int(k), Value::Bytes(vec![k as u8; 120])])
        .unwrap()
}

const ROWS: i64 = 1000;

fn tree(dir: &std::path::Path) -> (BufferPool, BTree) {
    tree_with(dir, None)
}

/// A tree of [`ROWS`] rows, three levels high, in a tablespace compressed as `zip` says.
fn tree_with(dir: &std::path::Path, zip: Option<minnow_zip::ZipConfig>) -> (BufferPool, BTree) {
    let cfg = BufConfig::with_frames(256, PageSize::K4);
    let pool = BufferPool::create_scratch_with(dir, cfg, 1, zip).unwrap();
    let (tree, _) = BTree::create(&pool, 1, 42, layout()).unwrap();
    for k in 0..ROWS {
        tree.insert(&pool, &row(k)).unwrap();
    }
    assert_eq!(tree.check(&pool).unwrap().height, 3);
    (pool, tree)
}

/// True if page `no` is X-latched right now (its seqlock version is odd).
fn x_latched(pool: &BufferPool, tree: &BTree, no: u32) -> bool {
    pool.optimistic(PageId::new(tree.space(), no)).is_none()
}

#[test]
fn a_safe_node_page_releases_the_root_and_an_unsafe_one_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let (pool, tree) = tree(dir.path());
    let root = tree.root();
    // Sequential inserts split at the insert point: every level-1 page but the last is full,
    // so it would split if a leaf below it split (unsafe for an insert) but stays far above
    // the merge threshold if a leaf below it merged (safe for a delete).
    let first = key(&tree, 5);
    let leaf = tree.latch_leaf(&pool, &first, Intent::Insert).unwrap();
    assert_eq!(leaf.path.len(), 3, "insert keeps the root");
    assert_eq!(leaf.path[0].page.no, root);
    assert!(x_latched(&pool, &tree, root));
    drop(leaf);
    assert!(!x_latched(&pool, &tree, root), "a dropped mtr lets go");

    let leaf = tree.latch_leaf(&pool, &first, Intent::Delete).unwrap();
    assert_eq!(leaf.path.len(), 2, "delete starts at the level-1 page");
    let top = &leaf.path[0];
    assert_eq!(top.level, 1);
    assert!(top.left.is_none() && top.right.is_none() && top.right2.is_none());
    assert!(
        !x_latched(&pool, &tree, root),
        "the root is free for others"
    );
    assert!(x_latched(&pool, &tree, top.page.no));
    assert!(x_latched(&pool, &tree, leaf.path[1].page.no));
    assert_eq!(
        leaf.mtr.page_id(leaf.path[1].page.h).map(|p| p.page_no),
        Some(leaf.path[1].page.no)
    );
    // A reader descends to a leaf under another level-1 page meanwhile.
    let far = tree.get(
        &pool,
        &[
            Value::Int(ROWS - 1),
            Value::Bytes(vec![(ROWS - 1) as u8; 120]),
        ],
    );
    assert_eq!(far.unwrap().unwrap().values, row(ROWS - 1));
    drop(leaf);

    // The last level-1 page has room for another node pointer: safe for an insert.
    let last = key(&tree, ROWS - 1);
    let leaf = tree.latch_leaf(&pool, &last, Intent::Insert).unwrap();
    let top = leaf.path[0].page;
    assert!(node::fits(leaf.mtr.page(top.h), &tree.node, tree.node.max_record_len()).unwrap());
    assert_eq!(leaf.path.len(), 2);
    assert!(!x_latched(&pool, &tree, root));
    drop(leaf);

    // The compression splits keep everything.
    let leaf = tree.latch_leaf(&pool, &last, Intent::Keep).unwrap();
    assert_eq!(leaf.path.len(), 3);
    assert!(x_latched(&pool, &tree, root));
    drop(leaf);
    tree.check(&pool).unwrap();
}

/// Splits and merges under a safe level-1 page, with the root released: the tree stays
/// sound and its height does not change.
#[test]
fn splits_and_merges_below_a_safe_page_leave_a_sound_tree() {
    let dir = tempfile::tempdir().unwrap();
    let (pool, tree) = tree(dir.path());
    // Deletes from the left: leaves merge under the first level-1 page, whose node pointers
    // go one by one while it stays safe.
    for k in 0..300 {
        tree.delete(&pool, &[Value::Int(k), Value::Bytes(vec![k as u8; 120])])
            .unwrap();
    }
    let stats = tree.check(&pool).unwrap();
    assert_eq!(stats.records, (ROWS - 300) as u64);
    // Inserts back in: leaves split under level-1 pages with room.
    for k in (0..300).rev() {
        tree.insert(&pool, &row(k)).unwrap();
    }
    let stats = tree.check(&pool).unwrap();
    assert_eq!(stats.records, ROWS as u64);
    assert_eq!(stats.height, 3);
}

/// A compressed tree's padding rises (another thread's failures) between the descent that
/// judged a node page safe and the split below it: the safe page still takes the separator
/// (the padding is only a hint to split early; a page that then does not compress fails the
/// commit, which the compression retry handles), instead of needing its released parent.
#[test]
fn a_safe_page_takes_the_separator_when_the_padding_rose_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let zip = minnow_zip::ZipConfig::new(
        minnow_zip::KeyBlockSize::K2,
        minnow_zip::Algorithm::default(),
    );
    let (pool, tree) = tree_with(dir.path(), Some(zip));
    let state = tree.zip.clone().unwrap();
    assert_eq!(state.pad(), 0);
    let new = key(&tree, ROWS);
    let mut leaf = tree.latch_leaf(&pool, &new, Intent::Insert).unwrap();
    assert_eq!(leaf.path.len(), 2, "the last level-1 page is safe");
    // Now no page has room by the padding: the leaf splits, the separator goes up.
    state.set_pad(4096);
    let rec = tree.layout().encode(&row(ROWS)).unwrap();
    tree.insert_into(&mut leaf.mtr, &leaf.path, leaf.last, &rec)
        .unwrap();
    leaf.mtr.commit().unwrap();
    state.set_pad(0);
    let stats = tree.check(&pool).unwrap();
    assert_eq!(stats.records, ROWS as u64 + 1);
    assert_eq!(
        tree.get(
            &pool,
            &[Value::Int(ROWS), Value::Bytes(vec![ROWS as u8; 120])]
        )
        .unwrap()
        .unwrap()
        .values,
        row(ROWS)
    );
}
