//! Walks over links read from disk end on a corrupt file: sibling links that loop under
//! forward and backward scans, an overflow chain that loops, and allocator lists that lie.
//! Each case is crafted by writing page bytes through a mini-transaction (so the pages stay
//! valid and only the links are wrong) and must give [`TreeError::Corrupt`] naming a page.
//! Each operation runs in a thread with a time limit, so a walk that loops fails the test
//! instead of hanging it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use minnow_btree::record::{Column, ColumnType, RecordLayout, Value};
use minnow_btree::space::{self, check_space};
use minnow_btree::{BTree, ScanRange, TreeError};
use minnow_buf::{BufConfig, BufferPool};
use minnow_io::SplitMix64;
use minnow_page::{PageId, PageSize, PageType, bytes, fil, fsp, walk};

const SPACE: u32 = 1;
const INDEX: u64 = 7;

/// Runs `f` in a thread; fails the test if it has not returned within 60 seconds.
fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    walk::within(Duration::from_secs(60), f)
        .unwrap_or_else(|| panic!("{what} did not end within 60 s: it loops"))
}

/// Key, a VARCHAR(300) value and a nullable BLOB.
fn layout() -> RecordLayout {
    RecordLayout::clustered(
        vec![Column::new(ColumnType::U32)],
        vec![
            Column::new(ColumnType::Var(300)),
            Column::nullable(ColumnType::Blob),
        ],
    )
    .unwrap()
}

fn row(k: u32, blob: Option<Vec<u8>>) -> Vec<Value> {
    vec![
        Value::UInt(k.into()),
        Value::trx_id(1),
        Value::roll_ptr(1 << 55),
        Value::Bytes(vec![k as u8; 200]),
        blob.map_or(Value::Null, Value::Bytes),
    ]
}

/// A pool and a tree of `n` rows on 4 KiB pages (about 15 rows a leaf).
fn tree(n: u32) -> (tempfile::TempDir, Arc<BufferPool>, BTree) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = BufConfig::with_frames(256, PageSize::K4);
    let pool = Arc::new(BufferPool::create_scratch(dir.path(), cfg, SPACE).unwrap());
    let (tree, _) = BTree::create(&pool, SPACE, INDEX, layout()).unwrap();
    for k in 0..n {
        tree.insert(&pool, &row(k, None)).unwrap();
    }
    (dir, pool, tree)
}

/// Writes `data` at `at` of page `no` in one mini-transaction.
fn poke(pool: &BufferPool, no: u32, at: usize, data: &[u8]) {
    let mut mtr = pool.mtr().unwrap();
    let h = mtr.get_write(PageId::new(SPACE, no)).unwrap();
    mtr.write(h, at, data).unwrap();
    mtr.commit().unwrap();
}

fn read_u32(pool: &BufferPool, no: u32, at: usize) -> u32 {
    bytes::read_u32(&pool.get_read(PageId::new(SPACE, no)).unwrap(), at).unwrap()
}

/// The leaves of the tree, left to right, found by reading every page of the space.
fn leaves(pool: &BufferPool) -> Vec<u32> {
    let size = pool.spaces().get(SPACE).unwrap().size_in_pages();
    let mut first = None;
    let mut n = 0;
    for no in 0..size {
        let g = pool.get_read(PageId::new(SPACE, no)).unwrap();
        if fil::page_type(&g).ok() == Some(PageType::Index)
            && minnow_btree::node::level(&g).ok() == Some(0)
        {
            n += 1;
            if bytes::read_u32(&g, fil::PREV).unwrap() == fil::FIL_NULL {
                first = Some(no);
            }
        }
    }
    let mut out = vec![first.unwrap()];
    while out.len() < n {
        out.push(read_u32(pool, *out.last().unwrap(), fil::NEXT));
    }
    assert_eq!(
        read_u32(pool, *out.last().unwrap(), fil::NEXT),
        fil::FIL_NULL
    );
    out
}

/// Runs a scan to its end (without keeping the rows) in a thread; the error it ended with.
fn scan_error(pool: &Arc<BufferPool>, tree: &BTree, range: ScanRange) -> TreeError {
    let (pool, tree) = (pool.clone(), tree.clone());
    within("the scan", move || {
        let mut rows = 0u64;
        for e in tree.scan(&pool, range).unwrap() {
            match e {
                Ok(_) => rows += 1,
                Err(e) => return e,
            }
        }
        panic!("the scan ended after {rows} rows without an error")
    })
}

fn assert_corrupt(e: &TreeError, pages: &[u32], says: &str) {
    match e {
        TreeError::Corrupt { page, what } => {
            assert!(
                page.space == SPACE && pages.contains(&page.page_no),
                "names page {page}, expected one of {pages:?}: {what}"
            );
            assert!(what.contains(says), "{what}");
        }
        other => panic!("expected Corrupt, got {other}"),
    }
}

#[test]
fn forward_scan_ends_at_a_next_link_that_goes_back() {
    let (_d, pool, tree) = tree(100);
    let l = leaves(&pool);
    assert!(l.len() >= 4, "{l:?}");
    // Leaf 2 links forward to leaf 0 again, whose PREV is FIL_NULL.
    poke(&pool, l[2], fil::NEXT, &l[0].to_be_bytes());
    let e = scan_error(&pool, &tree, ScanRange::all());
    assert_corrupt(&e, &[l[0]], &format!("PREV {}", fil::FIL_NULL));
}

#[test]
fn forward_scan_ends_in_a_ring_of_leaves_whose_links_agree() {
    let (_d, pool, tree) = tree(100);
    let l = leaves(&pool);
    // Leaves 0, 1, 2 form a ring linked both ways: every PREV agrees with the NEXT before it.
    poke(&pool, l[2], fil::NEXT, &l[0].to_be_bytes());
    poke(&pool, l[0], fil::PREV, &l[2].to_be_bytes());
    let e = scan_error(&pool, &tree, ScanRange::all());
    assert_corrupt(&e, &l[..3], "cycle");
}

/// Runs a count in a thread; the error it ended with.
fn count_error(pool: &Arc<BufferPool>, tree: &BTree) -> TreeError {
    let (pool, tree) = (pool.clone(), tree.clone());
    within("the count", move || {
        match tree.count_visible(&pool, u64::MAX, &|_| true) {
            Ok(c) => panic!("the count ended with {} rows and no error", c.visible),
            Err(e) => e,
        }
    })
}

#[test]
fn count_ends_at_a_next_link_that_goes_back() {
    let (_d, pool, tree) = tree(100);
    let l = leaves(&pool);
    assert_eq!(
        tree.count_visible(&pool, u64::MAX, &|_| true)
            .unwrap()
            .visible,
        100
    );
    poke(&pool, l[2], fil::NEXT, &l[0].to_be_bytes());
    assert_corrupt(
        &count_error(&pool, &tree),
        &[l[0]],
        &format!("PREV {}", fil::FIL_NULL),
    );
}

#[test]
fn count_ends_in_a_ring_of_leaves_whose_links_agree() {
    let (_d, pool, tree) = tree(100);
    let l = leaves(&pool);
    poke(&pool, l[2], fil::NEXT, &l[0].to_be_bytes());
    poke(&pool, l[0], fil::PREV, &l[2].to_be_bytes());
    assert_corrupt(&count_error(&pool, &tree), &l[..3], "cycle");
}

#[test]
fn pack_ends_in_a_ring_of_leaves_whose_links_agree() {
    let (_d, pool, tree) = tree(100);
    let l = leaves(&pool);
    poke(&pool, l[2], fil::NEXT, &l[0].to_be_bytes());
    poke(&pool, l[0], fil::PREV, &l[2].to_be_bytes());
    let e = within("pack", move || tree.pack(&pool).unwrap_err());
    assert_corrupt(&e, &l[..3], "cycle");
}

#[test]
fn count_ends_at_a_record_list_that_loops_inside_a_leaf() {
    let (_d, pool, tree) = tree(100);
    let l = leaves(&pool);
    // The first record of the second leaf links back to the infimum: the list never reaches
    // the supremum.
    let inf_next = {
        let g = pool.get_read(PageId::new(SPACE, l[1])).unwrap();
        bytes::read_u16(&g, 99 - 2).unwrap()
    };
    let first = usize::from(99u16.wrapping_add(inf_next));
    let back = 99u16.wrapping_sub(first as u16);
    poke(&pool, l[1], first - 2, &back.to_be_bytes());
    // A leaf flagged as holding no delete-marked record is counted from its header, its list
    // not walked: take the flag off (the top byte of PAGE_MAX_TRX_ID) so the count walks it.
    poke(&pool, l[1], minnow_btree::node::MAX_TRX_ID, &[0]);
    assert_corrupt(
        &count_error(&pool, &tree),
        &[l[1]],
        "more records than the heap",
    );
}

#[test]
fn backward_scan_ends_in_a_ring_of_leaves_whose_links_agree() {
    let (_d, pool, tree) = tree(100);
    let l = leaves(&pool);
    let n = l.len();
    // The last three leaves form a ring linked both ways.
    poke(&pool, l[n - 3], fil::PREV, &l[n - 1].to_be_bytes());
    poke(&pool, l[n - 1], fil::NEXT, &l[n - 3].to_be_bytes());
    let e = scan_error(&pool, &tree, ScanRange::all().reverse());
    assert_corrupt(&e, &l[n - 3..], "cycle");
}

#[test]
fn backward_scan_ends_at_a_prev_link_that_goes_forward() {
    let (_d, pool, tree) = tree(100);
    let l = leaves(&pool);
    let n = l.len();
    // The last leaf's PREV names itself.
    poke(&pool, l[n - 1], fil::PREV, &l[n - 1].to_be_bytes());
    let e = scan_error(&pool, &tree, ScanRange::all().reverse());
    assert_corrupt(&e, &[l[n - 1]], "PREV names the leaf itself");
}

#[test]
fn reading_an_overflow_chain_that_loops_ends() {
    let (_d, pool, tree) = tree(10);
    let blob: Vec<u8> = (0..12_000u32).map(|i| i as u8).collect();
    tree.insert(&pool, &row(1000, Some(blob.clone()))).unwrap();
    let chain = tree.check(&pool).unwrap().overflow_pages;
    assert_eq!(chain.len(), 3, "{chain:?}");
    // Every page carries one byte and the last links back to the first; the reference says
    // 3 GB, so the parts never run out before the walk comes round again.
    for (i, &p) in chain.iter().enumerate() {
        let next = chain[(i + 1) % chain.len()];
        poke(
            &pool,
            p,
            fil::HEADER_SIZE,
            &[&1u32.to_be_bytes()[..], &next.to_be_bytes()].concat(),
        );
    }
    let leaf = *leaves(&pool).last().unwrap();
    let page = pool.get_read(PageId::new(SPACE, leaf)).unwrap().to_vec();
    let reference = [
        SPACE.to_be_bytes(),
        chain[0].to_be_bytes(),
        38u32.to_be_bytes(),
    ]
    .concat();
    let at = page
        .windows(reference.len())
        .position(|w| w == reference)
        .expect("the leaf holds the reference");
    poke(&pool, leaf, at + 12, &3_000_000_000u64.to_be_bytes());
    let (p, t) = (pool.clone(), tree.clone());
    let e = within("reading the value", move || {
        t.get(&p, &[Value::UInt(1000)]).unwrap_err()
    });
    assert_corrupt(&e, &chain, "cycle");
}

#[test]
fn space_check_finds_a_cycle_in_the_free_frag_list() {
    let (_d, pool, _tree) = tree(10);
    let base = fsp::FSP_HEADER + fsp::FREE_FRAG;
    let first = read_u32(&pool, 0, base + 4);
    let off = bytes::read_u16(&pool.get_read(PageId::new(SPACE, 0)).unwrap(), base + 8).unwrap();
    // The first node's NEXT names the node itself.
    let node = [&first.to_be_bytes()[..], &off.to_be_bytes()].concat();
    poke(&pool, first, usize::from(off) + 6, &node);
    let p = pool.clone();
    let e = within("the space check", move || {
        check_space(&p, SPACE).unwrap_err()
    });
    assert_corrupt(&e, &[0], "repeated");
}

#[test]
fn freeing_a_segment_whose_list_has_a_length_but_no_nodes_ends() {
    let (_d, pool, tree) = tree(100);
    let leaf = tree.segments().leaf;
    // The leaf segment has only fragment pages; its FULL list now claims one extent.
    let full = usize::from(leaf.header.offset) + 44;
    assert_eq!(read_u32(&pool, leaf.header.page, full), 0);
    poke(&pool, leaf.header.page, full, &1u32.to_be_bytes());
    let p = pool.clone();
    let e = within("freeing the segment", move || {
        space::free_segment(&p, leaf).unwrap_err()
    });
    assert_corrupt(&e, &[leaf.header.page], "no first node");
}

/// The sibling checks are no false alarm: forward and backward scans of a sound tree, while
/// two writers split and merge its leaves, end without an error and in key order.
#[test]
fn scans_of_a_sound_tree_under_concurrent_writers_report_no_corruption() {
    let (_d, pool, tree) = tree(3000);
    let writers_done = Arc::new(AtomicUsize::new(0));
    let mut writers = Vec::new();
    for w in 0..2u64 {
        let (pool, tree, done) = (pool.clone(), tree.clone(), writers_done.clone());
        writers.push(std::thread::spawn(move || {
            let mut rng = SplitMix64(77 + w);
            for i in 0..40_000 {
                let k = rng.below(6000) as u32;
                // Duplicates and missing keys are expected: only the structure matters.
                let _ = if i % 2 == 0 {
                    tree.insert(&pool, &row(k, None))
                } else {
                    tree.delete(&pool, &[Value::UInt(k.into())])
                };
            }
            done.fetch_add(1, Ordering::Release);
        }));
    }
    let mut readers = Vec::new();
    for reverse in [false, true] {
        let (pool, tree, done) = (pool.clone(), tree.clone(), writers_done.clone());
        readers.push(std::thread::spawn(move || {
            let mut scans = 0;
            while scans == 0 || done.load(Ordering::Acquire) < 2 {
                let range = if reverse {
                    ScanRange::all().reverse()
                } else {
                    ScanRange::all()
                };
                let mut last = None;
                for e in tree.scan(&pool, range).unwrap() {
                    let e = e.unwrap_or_else(|e| panic!("scan (reverse {reverse}): {e}"));
                    let Value::UInt(key) = e.values[0] else {
                        panic!("key {:?}", e.values[0]);
                    };
                    if let Some(l) = last.replace(key) {
                        let ordered = if reverse { key < l } else { key > l };
                        assert!(ordered, "{l} then {key}");
                    }
                }
                scans += 1;
            }
        }));
    }
    for t in writers.into_iter().chain(readers) {
        t.join().unwrap();
    }
}
