//! [`shrink_tail`]: the unused extents at the end of a space leave it, and only those.

use minnow_buf::{BufConfig, BufferPool};
use minnow_page::{PageSize, fsp as fsph};

use super::fsp::Fsp;
use super::tests::alloc_n;
use super::*;

const SPACE: u32 = 1;
/// Pages per extent at 16 KiB (64 pages: the fewest, so the fewest allocations to fill one).
const EXT: u32 = 64;
/// Pages per descriptor group at 16 KiB.
const GROUP: u32 = 16384;

fn pool(dir: &std::path::Path) -> BufferPool {
    BufferPool::create_scratch(dir, BufConfig::with_frames(256, PageSize::K16), 1).unwrap()
}

fn free_range(pool: &BufferPool, seg: FsegHeader, pages: std::ops::Range<u32>) {
    for p in pages {
        let mut mtr = pool.mtr().unwrap();
        free_in(&mut mtr, seg, p).unwrap();
        mtr.commit().unwrap();
    }
}

#[test]
fn only_the_free_extents_at_the_end_leave_and_the_space_grows_again() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path());
    let mut mtr = pool.mtr().unwrap();
    let seg = create_segment(&mut mtr, SPACE).unwrap();
    mtr.commit().unwrap();
    // 32 fragment pages in extent 0, then extents 1, 2 and 3 whole.
    let pages = alloc_n(&pool, seg.header, FRAG_SLOTS + 3 * EXT as usize);
    assert_eq!(pages.last(), Some(&(4 * EXT - 1)));
    assert_eq!(space_usage(&pool, SPACE).unwrap().size, 4 * EXT);
    // A free extent in the middle stays: the last one is in use.
    free_range(&pool, seg.header, 2 * EXT..3 * EXT);
    assert_eq!(shrink_tail(&pool, SPACE).unwrap(), 4 * EXT);
    assert_eq!(space_usage(&pool, SPACE).unwrap().free_extents, 1);
    // With the last one free too, both leave; extent 1 (in use) stops it.
    free_range(&pool, seg.header, 3 * EXT..4 * EXT);
    assert_eq!(shrink_tail(&pool, SPACE).unwrap(), 2 * EXT);
    let r = check_space(&pool, SPACE).unwrap();
    assert_eq!((r.usage.size, r.usage.free_limit), (2 * EXT, 2 * EXT));
    assert_eq!(r.usage.free_extents, 0);
    assert_eq!(r.segments[&seg.id].extents, vec![EXT]);
    // Nothing left to take: a second call changes nothing.
    assert_eq!(shrink_tail(&pool, SPACE).unwrap(), 2 * EXT);
    // The space grows again from the new end, describing the extents afresh.
    let again = alloc_n(&pool, seg.header, 2 * EXT as usize);
    assert_eq!(again.first(), Some(&(2 * EXT)));
    assert_eq!(again.last(), Some(&(4 * EXT - 1)));
    let r = check_space(&pool, SPACE).unwrap();
    assert_eq!(r.usage.size, 4 * EXT);
    assert_eq!(r.segments[&seg.id].extents, vec![EXT, 2 * EXT, 3 * EXT]);
}

/// Grows the space by whole extents (taken and given straight back) until its free limit
/// is past `limit`.
fn grow_past(pool: &BufferPool, limit: u32) {
    let mut mtr = pool.mtr().unwrap();
    let mut f = Fsp::open(&mut mtr, SPACE).unwrap();
    let mut taken = Vec::new();
    while f.hdr(fsph::FREE_LIMIT).unwrap() <= limit {
        taken.push(f.alloc_extent().unwrap());
    }
    for start in taken {
        f.free_extent(start).unwrap();
    }
    mtr.commit().unwrap();
}

#[test]
fn a_descriptor_groups_xdes_page_leaves_with_its_last_extent() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path());
    // Past the second descriptor group's first two extents: its XDES page is in use.
    grow_past(&pool, GROUP + EXT);
    let r = check_space(&pool, SPACE).unwrap();
    assert_eq!(r.usage.free_limit, GROUP + 2 * EXT);
    assert_eq!(
        r.usage.free_frag_extents, 2,
        "extent 0 and the XDES page's extent"
    );
    // Everything but extent 0 (page 0) leaves, the XDES page at GROUP with its extent.
    assert_eq!(shrink_tail(&pool, SPACE).unwrap(), EXT);
    let r = check_space(&pool, SPACE).unwrap();
    assert_eq!((r.usage.size, r.usage.free_limit), (EXT, EXT));
    assert_eq!(r.usage.free_frag_extents, 1);
    assert_eq!(r.usage.frag_n_used, 1, "page 0 only");
    // Growing again formats the XDES page anew (its extent is a fragment extent, so the
    // space grows one more extent to hand out a whole one).
    grow_past(&pool, GROUP);
    let r = check_space(&pool, SPACE).unwrap();
    assert_eq!(r.usage.free_limit, GROUP + 2 * EXT);
    assert_eq!(r.usage.frag_n_used, 2);
}

#[test]
fn one_step_takes_at_most_its_share() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path());
    grow_past(&pool, 4 * EXT);
    let mut mtr = pool.mtr().unwrap();
    assert_eq!(shrink_tail_step(&mut mtr, SPACE, 2).unwrap(), 2);
    mtr.commit().unwrap();
    let r = check_space(&pool, SPACE).unwrap();
    assert_eq!((r.usage.size, r.usage.free_limit), (3 * EXT, 3 * EXT));
    assert_eq!(r.usage.free_extents, 2);
}
