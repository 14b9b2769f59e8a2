use minnow_buf::{BufConfig, BufferPool};
use minnow_page::PageSize;
use minnow_redo::FlushAtCommit;

use super::*;
use crate::BTree;
use crate::record::{Column, ColumnType, RecordLayout, Value};

const SPACE: u32 = 1;
/// Pages per extent at 4 KiB.
const EXT: u32 = 256;

fn pool(dir: &std::path::Path) -> BufferPool {
    BufferPool::create_scratch(dir, BufConfig::with_frames(256, PageSize::K4), 1).unwrap()
}

pub(super) fn alloc_n(pool: &BufferPool, seg: FsegHeader, n: usize) -> Vec<u32> {
    let mut out = Vec::new();
    for _ in 0..n {
        let mut mtr = pool.mtr().unwrap();
        let h = allocate_in(&mut mtr, seg, None).unwrap();
        out.push(mtr.page_id(h).unwrap().page_no);
        mtr.commit().unwrap();
    }
    out
}

fn new_segment(pool: &BufferPool) -> Segment {
    let mut mtr = pool.mtr().unwrap();
    let s = create_segment(&mut mtr, SPACE).unwrap();
    mtr.commit().unwrap();
    s
}

fn free_pages(pool: &BufferPool, seg: FsegHeader, pages: &[u32]) {
    for &p in pages {
        let mut mtr = pool.mtr().unwrap();
        free_in(&mut mtr, seg, p).unwrap();
        mtr.commit().unwrap();
    }
}

#[test]
fn geometry_matches_innodb() {
    for (size, ext, xdes) in [
        (4096, 256, 88),
        (8192, 128, 56),
        (16384, 64, 40),
        (32768, 64, 40),
        (65536, 64, 40),
    ] {
        let g = Geometry::of(size).unwrap();
        assert_eq!((g.extent, g.xdes_size()), (ext, xdes), "page size {size}");
        // The XDES array of one group fits its page.
        let per_page = (g.group() / g.extent) as usize;
        assert!(XDES_ARR + per_page * g.xdes_size() <= size);
        let last = g.group() - 1;
        let a = g.xdes_addr(last);
        assert_eq!(g.extent_at(a.page, a.at()), Some(g.extent_start(last)));
    }
    assert_eq!(fseg::inodes_per_page(16384), 85);
    assert!(Geometry::of(1000).is_none());
}

#[test]
fn segment_takes_fragments_then_extents_in_ascending_order() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path());
    let seg = new_segment(&pool);
    // Page 0 is FSP_HDR, page 1 the INODE page: fragments start at 2.
    assert_eq!(seg.header.page, 1);
    let pages = alloc_n(&pool, seg.header, 40);
    let frags: Vec<u32> = (2..2 + FRAG_SLOTS as u32).collect();
    assert_eq!(pages[..FRAG_SLOTS], frags[..]);
    // Then a whole extent of its own, filled from its first page on.
    let ext: Vec<u32> = (EXT..EXT + 8).collect();
    assert_eq!(pages[FRAG_SLOTS..], ext[..]);
    let r = check_space(&pool, SPACE).unwrap();
    let s = &r.segments[&seg.id];
    assert_eq!(
        (s.fragments.len(), s.extents.clone()),
        (FRAG_SLOTS, vec![EXT])
    );
    assert_eq!(s.pages.len(), 40);
    assert_eq!(r.inode_pages, vec![1]);
    assert_eq!(r.descriptor_pages, vec![0]);
    assert!(r.loose_pages.is_empty());
    assert_eq!(r.usage.free_limit, 2 * EXT);
    assert_eq!(r.usage.size, 2 * EXT);
    // A hint inside the segment's extent is honoured.
    let mut mtr = pool.mtr().unwrap();
    let h = allocate_in(&mut mtr, seg.header, Some(EXT + 100)).unwrap();
    assert_eq!(mtr.page_id(h).unwrap().page_no, EXT + 100);
    mtr.commit().unwrap();
    check_space(&pool, SPACE).unwrap();
}

#[test]
fn empty_extent_goes_back_and_is_reused_by_another_segment() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path());
    let a = new_segment(&pool);
    let pages = alloc_n(&pool, a.header, FRAG_SLOTS + EXT as usize);
    let r = check_space(&pool, SPACE).unwrap();
    assert_eq!(r.segments[&a.id].extents, vec![EXT]);
    assert_eq!(r.usage.free_extents, 0);
    let limit = r.usage.free_limit;
    // Free the whole extent: it goes back to the space's FREE list.
    free_pages(&pool, a.header, &pages[FRAG_SLOTS..]);
    let r = check_space(&pool, SPACE).unwrap();
    assert!(r.segments[&a.id].extents.is_empty());
    assert_eq!(r.usage.free_extents, 1);
    // Another segment that outgrows its fragments takes that extent: the space does not grow.
    let b = new_segment(&pool);
    let got = alloc_n(&pool, b.header, FRAG_SLOTS + 3);
    assert_eq!(got[FRAG_SLOTS..], [EXT, EXT + 1, EXT + 2]);
    let r = check_space(&pool, SPACE).unwrap();
    assert_eq!(r.usage.free_limit, limit);
    assert_eq!(r.segments[&b.id].extents, vec![EXT]);
}

#[test]
fn full_extent_becomes_not_full_and_fragment_pages_go_back() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path());
    let a = new_segment(&pool);
    let pages = alloc_n(&pool, a.header, FRAG_SLOTS + EXT as usize + 1);
    check_space(&pool, SPACE).unwrap();
    // One page of the full extent, one fragment page.
    free_pages(&pool, a.header, &[EXT + 5, pages[3]]);
    let r = check_space(&pool, SPACE).unwrap();
    assert_eq!(r.segments[&a.id].pages.len(), pages.len() - 2);
    // Freeing it again, or from the wrong segment, is an error.
    let b = new_segment(&pool);
    let mut mtr = pool.mtr().unwrap();
    assert!(free_in(&mut mtr, a.header, EXT + 5).is_err());
    drop(mtr);
    let mut mtr = pool.mtr().unwrap();
    assert!(free_in(&mut mtr, b.header, EXT + 6).is_err());
    drop(mtr);
    check_space(&pool, SPACE).unwrap();
}

#[test]
fn loose_pages_from_allocate_and_free() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path());
    let mut got = Vec::new();
    for _ in 0..3 {
        let mut mtr = pool.mtr().unwrap();
        let h = allocate(&mut mtr, SPACE).unwrap();
        got.push(mtr.page_id(h).unwrap().page_no);
        mtr.commit().unwrap();
    }
    assert_eq!(got, [1, 2, 3]);
    let r = check_space(&pool, SPACE).unwrap();
    assert_eq!(r.loose_pages.iter().copied().collect::<Vec<_>>(), got);
    assert_eq!(r.usage.frag_n_used, 4);
    let mut mtr = pool.mtr().unwrap();
    free(&mut mtr, SPACE, 2).unwrap();
    mtr.commit().unwrap();
    let r = check_space(&pool, SPACE).unwrap();
    assert_eq!(r.loose_pages.len(), 2);
    // `free` also finds a segment's page on its own.
    let s = new_segment(&pool);
    let p = alloc_n(&pool, s.header, 1)[0];
    let mut mtr = pool.mtr().unwrap();
    free(&mut mtr, SPACE, p).unwrap();
    mtr.commit().unwrap();
    let r = check_space(&pool, SPACE).unwrap();
    assert!(r.segments[&s.id].pages.is_empty());
    let mut mtr = pool.mtr().unwrap();
    assert!(free(&mut mtr, SPACE, 0).is_err());
}

#[test]
fn free_segment_gives_everything_back_in_steps() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path());
    let keep = new_segment(&pool);
    alloc_n(&pool, keep.header, 2);
    let a = new_segment(&pool);
    alloc_n(&pool, a.header, FRAG_SLOTS + 3 * EXT as usize - 10);
    let before = check_space(&pool, SPACE).unwrap();
    assert_eq!(before.segments[&a.id].extents.len(), 3);
    // One extent per mtr: each step leaves a smaller but consistent segment; the step that
    // gives back the last extent also frees the fragments and the inode.
    for _ in 0..2 {
        let mut mtr = pool.mtr().unwrap();
        assert!(!free_segment_step(&mut mtr, a, 1).unwrap());
        mtr.commit().unwrap();
        check_space(&pool, SPACE).unwrap();
    }
    let mut mtr = pool.mtr().unwrap();
    assert!(free_segment_step(&mut mtr, a, 1).unwrap());
    mtr.commit().unwrap();
    let r = check_space(&pool, SPACE).unwrap();
    assert!(!r.segments.contains_key(&a.id));
    assert_eq!(r.usage.free_extents, 3);
    assert_eq!(r.usage.free_limit, before.usage.free_limit);
    // Again: already gone, nothing to do.
    free_segment(&pool, a).unwrap();
    // The last segment of an INODE page takes the page with it.
    free_segment(&pool, keep).unwrap();
    let r = check_space(&pool, SPACE).unwrap();
    assert!(r.segments.is_empty() && r.inode_pages.is_empty());
    assert_eq!(r.usage.free_pages, r.usage.free_limit - 1);
}

fn layout() -> RecordLayout {
    RecordLayout::clustered(
        vec![Column::new(ColumnType::U64)],
        vec![Column::new(ColumnType::Var(100))],
    )
    .unwrap()
}

fn row(k: u64) -> Vec<Value> {
    vec![
        Value::UInt(k),
        Value::trx_id(1),
        Value::roll_ptr(1 << 55),
        Value::Bytes(vec![b'x'; 60]),
    ]
}

fn load(pool: &BufferPool, n: u64) -> BTree {
    let (tree, _) = BTree::create(pool, SPACE, 7, layout()).unwrap();
    for k in 0..n {
        tree.insert(pool, &row(k)).unwrap();
    }
    tree
}

#[test]
fn tree_pages_live_in_its_segments_and_drop_gives_them_back() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path());
    let tree = load(&pool, 20_000);
    let r = check_space(&pool, SPACE).unwrap();
    let stats = tree.check_space(&pool, &r).unwrap();
    assert!(stats.height >= 2);
    let leaf = &r.segments[&tree.segments().leaf.id];
    assert!(leaf.extents.len() >= 2, "{leaf:?}");
    // Sequential inserts put the leaves of one extent in ascending page order.
    let (_, levels) = tree.walk_checked(&pool).unwrap();
    let in_ext: Vec<u32> = levels[0]
        .iter()
        .copied()
        .filter(|&p| p / EXT == leaf.extents[0] / EXT)
        .collect();
    assert!(in_ext.windows(2).all(|w| w[0] < w[1]), "{in_ext:?}");
    // Deleting rows merges pages, which go back to the segments.
    for k in 0..15_000 {
        tree.delete(&pool, &[Value::UInt(k)]).unwrap();
    }
    let r = check_space(&pool, SPACE).unwrap();
    tree.check_space(&pool, &r).unwrap();
    let end = tree.free_all(&pool).unwrap();
    pool.commit_durable(end, FlushAtCommit::Lazy).unwrap();
    let r = check_space(&pool, SPACE).unwrap();
    assert!(r.segments.is_empty());
    assert_eq!(r.usage.free_pages, r.usage.free_limit - 1);
}

#[test]
fn file_does_not_grow_after_drop_and_recreate() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path());
    let file = dir.path().join("scratch.ibd");
    let mut tree = load(&pool, 20_000);
    pool.flush_all().unwrap();
    let size = std::fs::metadata(&file).unwrap().len();
    let limit = space_usage(&pool, SPACE).unwrap().free_limit;
    let root = tree.root();
    for _ in 0..3 {
        tree.free_all(&pool).unwrap();
        // Freeing a freed tree again finds nothing to do (a restarted drop).
        tree.free_all(&pool).unwrap();
        tree = load(&pool, 20_000);
        let r = check_space(&pool, SPACE).unwrap();
        tree.check_space(&pool, &r).unwrap();
        pool.flush_all().unwrap();
        assert_eq!(std::fs::metadata(&file).unwrap().len(), size);
        assert_eq!(r.usage.free_limit, limit);
        // The root page of a dropped tree is reused too.
        assert_eq!(tree.root(), root);
    }
}
