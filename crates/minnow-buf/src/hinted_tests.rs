//! Tests of the hinted fix ([`crate::BufferPool::get_read_hinted`]): a right hint skips the
//! page hash, and every wrong one (another page's frame, a free frame, an exclusively latched
//! frame, a frame number past the pool) still gives the page asked for, leaving nothing
//! pinned.

use std::sync::atomic::Ordering;

use crate::tests::{
    assert_all_idle, cfg, cold_readers, create_pages, env, evicting_pool, open, pid,
};

#[test]
fn any_hint_gives_the_page_asked_for() {
    let e = env(32, 8 << 20);
    let pool = open(&e, cfg(8));
    create_pages(&pool, 3);
    let frame = |no: u32| pool.get_read(pid(no)).unwrap().frame();
    let (f1, f2) = (frame(1), frame(2));
    assert_ne!(f1, f2);
    let probes =
        |p: &crate::BufferPool| p.shared.instances[0].hash.probes[0].load(Ordering::Relaxed);
    let before = probes(&pool);
    {
        let g = pool.get_read_hinted(pid(1), f1).unwrap();
        assert_eq!((g.page_id(), g.frame()), (pid(1), f1));
        assert_eq!(&g[100..104], &1u32.to_be_bytes());
    }
    assert_eq!(
        probes(&pool),
        before,
        "a right hint does not look in the page hash"
    );
    // Prefetches of any frame and range read and change nothing.
    for hint in [f1, f2, u32::MAX, pool.shared.ctl.len() as u32] {
        pool.prefetch_hinted(hint, 4000, 1 << 20);
        pool.prefetch_hinted(hint, usize::MAX - 10, usize::MAX);
    }
    for hint in [f2, u32::MAX, pool.shared.ctl.len() as u32, 7] {
        let g = pool.get_read_hinted(pid(1), hint).unwrap();
        assert_eq!((g.page_id(), g.frame()), (pid(1), f1), "hint {hint}");
        assert_eq!(&g[100..104], &1u32.to_be_bytes());
    }
    // The right frame, exclusively latched by a writer: the hinted fix does not wait there,
    // it goes the normal way (shown here by the other page, whose fix does not block).
    {
        let w = pool.get_write(pid(2)).unwrap();
        assert!(pool.shared.fix_hinted(pid(2), f2).is_none());
        let g = pool.get_read_hinted(pid(1), f2).unwrap();
        assert_eq!(&g[100..104], &1u32.to_be_bytes());
        drop(w);
    }
    assert_all_idle(&pool);
}

#[test]
fn a_hint_from_before_an_eviction_still_finds_the_page() {
    const PAGES: u32 = 40;
    let e = env(PAGES + 1, 8 << 20);
    let pool = open(&e, cfg(8));
    create_pages(&pool, PAGES);
    pool.flush_all().unwrap();
    let old = pool.get_read(pid(1)).unwrap().frame();
    for no in 2..=PAGES {
        drop(pool.get_read(pid(no)).unwrap());
    }
    assert!(!pool.contains(pid(1)), "evicted");
    // The old frame now holds another page (or none).
    let g = pool.get_read_hinted(pid(1), old).unwrap();
    assert_eq!(g.page_id(), pid(1));
    assert_eq!(&g[100..104], &1u32.to_be_bytes());
    drop(g);
    assert_all_idle(&pool);
}

/// Readers fix pages through the frames they last saw them in while other threads read
/// cold pages, all through a pool far too small for them (the readers' pages alone do not
/// fit), so the readers' pages are evicted and their frames reused for other pages all the
/// time: the hints go stale under the readers.
/// Every page holds its own number at offset 100, so a hinted fix that returned another
/// page's frame would show a wrong number.
#[test]
fn stale_hints_under_constant_eviction() {
    const HOT: u32 = 24;
    const PAGES: u32 = 64;
    let (_e, pool) = evicting_pool(PAGES);
    let before = pool.stats();
    let iters = 50_000u32;
    let frames = pool.shared.ctl.len() as u32;
    std::thread::scope(|s| {
        for t in 0..2u32 {
            let pool = &pool;
            s.spawn(move || {
                let mut hint = [0u32; HOT as usize + 1];
                let mut moved = 0u32;
                for i in 0..iters {
                    let no = 1 + (i.wrapping_mul(7) + t) % HOT;
                    // Now and then a made-up hint: any frame, or none at all.
                    let h = match i % 16 {
                        0 => i % frames,
                        1 => u32::MAX,
                        _ => hint[no as usize],
                    };
                    let g = pool.get_read_hinted(pid(no), h).unwrap();
                    assert_eq!(g.page_id(), pid(no));
                    assert_eq!(&g[100..104], &no.to_be_bytes(), "hinted fix of {no}");
                    moved += u32::from(g.frame() != hint[no as usize]);
                    hint[no as usize] = g.frame();
                }
                assert!(moved > 1000, "the pages moved between frames: {moved}");
            });
        }
        cold_readers(s, &pool, HOT + 1..=PAGES, iters / 2);
    });
    let st = pool.stats();
    assert!(st.evictions - before.evictions > 1000, "{st:?}");
    assert_all_idle(&pool);
}
