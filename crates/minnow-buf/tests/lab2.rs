//! Lab 2 (the midpoint LRU): the graded tests, smallest first, through the buffer pool's
//! public API (`BufferPool::lru` shows the list, a manual `Clock` stands in for time).
//! docs/labs/02-lru.md is the handout; `cargo xtask lab grade 2` runs these.

use std::sync::Arc;
use std::time::Duration;

use minnow_buf::{BufConfig, BufferPool, Clock, DirectWriter, SpaceMap};
use minnow_io::{Backend, FlushMethod, OpenOptions, SyncBackend, Tablespace};
use minnow_page::checksum::ChecksumAlgorithm;
use minnow_page::{PageId, PageSize};
use minnow_redo::Log;

/// A tablespace of 64 written pages (1..=63) and a log, in a temporary directory.
struct Env {
    _dir: tempfile::TempDir,
    spaces: Arc<SpaceMap>,
    log: Arc<Log>,
}

fn env() -> Env {
    let backend = SyncBackend::new();
    let dir = tempfile::tempdir().unwrap();
    let space = Tablespace::create(
        &backend,
        &dir.path().join("t1.ibd"),
        1,
        PageSize::K4,
        ChecksumAlgorithm::Crc32,
        FlushMethod::Fsync,
        64,
    )
    .unwrap();
    let spaces = Arc::new(SpaceMap::new());
    spaces.insert(Arc::new(space));
    let file = backend
        .open(
            &dir.path().join("redo"),
            &OpenOptions::new(FlushMethod::Fsync).create(true),
        )
        .unwrap();
    let log = Arc::new(Log::create(file, 4 << 20).unwrap());
    let e = Env {
        _dir: dir,
        spaces,
        log,
    };
    // Write the pages once, so that later pools read them from disk.
    let pool = open(&e, 64, Clock::manual(), Duration::from_millis(1000));
    for no in 1..64 {
        let mut m = pool.mtr().unwrap();
        let h = m.new_page(pid(no)).unwrap();
        m.write(h, 100, &no.to_be_bytes()).unwrap();
        m.commit().unwrap();
    }
    pool.flush_all().unwrap();
    e
}

/// A fresh pool of one instance of `frames` frames over the env's files.
fn open(e: &Env, frames: usize, clock: Clock, old_blocks_time: Duration) -> BufferPool {
    let cfg = BufConfig {
        page_cleaners: 0,
        read_ahead_threshold: 0,
        instances: 1,
        clock,
        old_blocks_time,
        ..BufConfig::with_frames(frames, PageSize::K4)
    };
    BufferPool::open(
        cfg,
        Arc::clone(&e.spaces),
        Arc::clone(&e.log),
        Arc::new(DirectWriter),
    )
    .unwrap()
}

fn pid(n: u32) -> PageId {
    PageId::new(1, n)
}

fn read(pool: &BufferPool, no: u32) {
    drop(pool.get_read(pid(no)).unwrap());
}

/// The LRU list from the head: (page number, is old).
fn lru(pool: &BufferPool) -> Vec<(u32, bool)> {
    pool.lru(0)
        .into_iter()
        .map(|(p, o)| (p.page_no, o))
        .collect()
}

fn is_old(pool: &BufferPool, no: u32) -> bool {
    lru(pool)
        .iter()
        .find(|&&(p, _)| p == no)
        .is_some_and(|&(_, old)| old)
}

/// The old pages form the tail of the list: no young page after an old one.
fn assert_old_is_a_suffix(list: &[(u32, bool)]) {
    let first_old = list.iter().position(|&(_, o)| o).unwrap_or(list.len());
    assert!(
        list[first_old..].iter().all(|&(_, o)| o),
        "a young page after the midpoint: {list:?}"
    );
}

#[test]
fn the_first_page_read_is_old() {
    let e = env();
    let pool = open(&e, 32, Clock::manual(), Duration::from_millis(1000));
    read(&pool, 1);
    assert_eq!(lru(&pool), vec![(1, true)]);
}

#[test]
fn pages_read_from_disk_enter_at_the_midpoint_not_the_head() {
    let e = env();
    let pool = open(&e, 32, Clock::manual(), Duration::from_millis(1000));
    for no in 1..=10 {
        read(&pool, no);
        let list = lru(&pool);
        assert!(is_old(&pool, no), "page {no} just read is young: {list:?}");
        if no > 2 {
            assert_ne!(list[0].0, no, "page {no} went to the head: {list:?}");
        }
        assert_old_is_a_suffix(&list);
    }
    assert_eq!(lru(&pool).len(), 10);
}

#[test]
fn the_old_sublist_keeps_old_blocks_pct_of_the_list() {
    let e = env();
    let pool = open(&e, 64, Clock::manual(), Duration::from_millis(1000));
    for no in 1..=40 {
        read(&pool, no);
        let list = lru(&pool);
        let old = list.iter().filter(|&&(_, o)| o).count();
        let expected = if list.len() < 2 {
            list.len()
        } else {
            (list.len() * 37 / 100).max(1)
        };
        assert_eq!(old, expected, "{} pages: {list:?}", list.len());
    }
    assert_eq!(pool.stats().old_pages, 14);
}

#[test]
fn a_second_access_within_old_blocks_time_leaves_the_page_old() {
    let e = env();
    let clock = Clock::manual();
    let pool = open(&e, 32, clock.clone(), Duration::from_millis(1000));
    for no in 1..=8 {
        read(&pool, no);
    }
    clock.advance(Duration::from_millis(999));
    read(&pool, 8);
    assert!(is_old(&pool, 8), "{:?}", lru(&pool));
    let st = pool.stats();
    assert_eq!((st.young, st.not_young), (0, 1), "{st:?}");
}

#[test]
fn a_second_access_after_old_blocks_time_makes_the_page_young() {
    let e = env();
    let clock = Clock::manual();
    let pool = open(&e, 32, clock.clone(), Duration::from_millis(1000));
    for no in 1..=8 {
        read(&pool, no);
    }
    clock.advance(Duration::from_millis(1000));
    read(&pool, 8);
    let list = lru(&pool);
    assert_eq!(list[0], (8, false), "{list:?}");
    assert_old_is_a_suffix(&list);
    assert_eq!(pool.stats().young, 1);
}

#[test]
fn old_blocks_time_counts_from_the_first_access() {
    let e = env();
    let clock = Clock::manual();
    let pool = open(&e, 32, clock.clone(), Duration::from_millis(1000));
    for no in 1..=8 {
        read(&pool, no);
    }
    clock.advance(Duration::from_millis(600));
    read(&pool, 8);
    assert!(
        is_old(&pool, 8),
        "600 ms after the first access: {:?}",
        lru(&pool)
    );
    assert_eq!(pool.stats().young, 0);
    clock.advance(Duration::from_millis(600));
    read(&pool, 8);
    assert_eq!(lru(&pool)[0], (8, false), "1200 ms after the first access");
    assert_eq!(pool.stats().young, 1);
}

#[test]
fn old_blocks_time_zero_promotes_on_the_second_access() {
    let e = env();
    let pool = open(&e, 32, Clock::manual(), Duration::ZERO);
    for no in 1..=8 {
        read(&pool, no);
    }
    read(&pool, 3);
    assert_eq!(lru(&pool)[0], (3, false));
}

#[test]
fn a_young_page_moves_again_only_after_evictions() {
    let e = env();
    let clock = Clock::manual();
    let pool = open(&e, 24, clock.clone(), Duration::from_millis(1000));
    for no in 1..=16 {
        read(&pool, no);
    }
    clock.advance(Duration::from_millis(1000));
    for no in 1..=16 {
        read(&pool, no);
    }
    let young = pool.stats().young;
    assert_eq!(young, 16);
    assert_eq!(lru(&pool)[0].0, 16);
    // Page 12 was made young a moment ago: touching it again must not take the LRU mutex.
    read(&pool, 12);
    assert_eq!(
        lru(&pool)[0].0,
        16,
        "a young page moved without any eviction"
    );
    assert_eq!(pool.stats().young, young);
    // Fill the pool and evict: once young_len / 4 pages were evicted, page 12 may move again.
    for no in 17..=31 {
        read(&pool, no);
    }
    assert!(pool.stats().evictions >= 6, "{:?}", pool.stats());
    assert!(pool.contains(pid(12)));
    read(&pool, 12);
    assert_eq!(lru(&pool)[0], (12, false), "{:?}", lru(&pool));
    assert_eq!(pool.stats().young, young + 1);
}

#[test]
fn a_scan_does_not_evict_the_hot_pages() {
    let e = env();
    let clock = Clock::manual();
    let pool = open(&e, 16, clock.clone(), Duration::from_millis(1000));
    let hot = 1..=4;
    for no in hot.clone() {
        read(&pool, no);
    }
    clock.advance(Duration::from_millis(2000));
    for no in hot.clone() {
        read(&pool, no);
    }
    // A scan of three times the pool, each page touched three times within a millisecond.
    for no in 5..=52 {
        for _ in 0..3 {
            read(&pool, no);
        }
    }
    for no in hot {
        assert!(
            pool.contains(pid(no)),
            "hot page {no} was evicted by a scan"
        );
    }
    assert!(pool.stats().not_young >= 48, "{:?}", pool.stats());
}
