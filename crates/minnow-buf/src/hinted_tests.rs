//! Tests of the hinted fix ([`crate::BufferPool::get_read_hinted`]): a right hint skips the
//! page hash, and every wrong one (another page's frame, a free frame, an exclusively latched
//! frame, a frame number past the pool) still gives the page asked for, leaving nothing
//! pinned.

use std::cell::Cell;
use std::sync::atomic::Ordering;

use crate::pool::{Mode, Shared};

use crate::tests::{
    assert_all_idle, cfg, cold_readers, create_pages, env, evicting_pool, open, pid,
};

thread_local! {
    /// What the hinted fix does on this thread between its first look at the frame's page
    /// id and its pin (tests only: the window in which an evictor can take the frame).
    static RACE: Cell<Option<fn(&Shared)>> = const { Cell::new(None) };
}

/// Called by the hinted fix between its first look at the frame and its pin.
pub(crate) fn between_look_and_pin(s: &Shared) {
    if let Some(f) = RACE.with(Cell::take) {
        f(s);
    }
}

/// Fixes pages 2..=40 one after another: in a pool of 8 frames, page 1 is evicted and its
/// frame holds another page after.
fn evict_page_one(s: &Shared) {
    for no in 2..=40 {
        let f = s.fix(pid(no), Mode::Shared).unwrap();
        let c = s.ctl(f);
        c.unlock_s();
        c.unpin();
    }
}

/// A pool of 8 frames over 40 clean test pages, and the frame page 1 is in.
fn page_one_in_small_pool() -> (crate::tests::Env, crate::BufferPool, u32) {
    let e = env(41, 8 << 20);
    let pool = open(&e, cfg(8));
    create_pages(&pool, 40);
    pool.flush_all().unwrap();
    let old = pool.get_read(pid(1)).unwrap().frame();
    (e, pool, old)
}

/// The race a stress test can hardly hit: the frame is taken for another page right after
/// the hinted fix saw the right page id in it, before its pin. The check under the latch
/// catches it and the page comes from the ordinary fix.
#[test]
fn a_frame_taken_between_the_look_and_the_pin() {
    let (_e, pool, old) = page_one_in_small_pool();
    RACE.with(|r| r.set(Some(evict_page_one)));
    let g = pool.get_read_hinted(pid(1), old).unwrap();
    assert!(RACE.with(Cell::get).is_none(), "the race ran");
    assert_eq!(g.page_id(), pid(1));
    assert_eq!(&g[100..104], &1u32.to_be_bytes());
    drop(g);
    assert_all_idle(&pool);
}

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
        assert!(pool.shared.fix_hinted(pid(2), f2, Mode::Shared).is_none());
        let g = pool.get_read_hinted(pid(1), f2).unwrap();
        assert_eq!(&g[100..104], &1u32.to_be_bytes());
        drop(w);
    }
    assert_all_idle(&pool);
}

#[test]
fn a_hint_from_before_an_eviction_still_finds_the_page() {
    let (_e, pool, old) = page_one_in_small_pool();
    for no in 2..=40 {
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

/// `prefetch_bytes` of any slice (empty, unaligned, straddling lines, at the end of an
/// allocation) reads and changes nothing.
#[test]
fn prefetch_bytes_changes_nothing() {
    let v: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
    let copy = v.clone();
    for (from, to) in [
        (0, 0),
        (0, 1),
        (3, 70),
        (63, 65),
        (1, 1000),
        (999, 1000),
        (1000, 1000),
    ] {
        crate::prefetch_bytes(&v[from..to]);
    }
    crate::prefetch_bytes(&[]);
    assert_eq!(v, copy);
}

/// The layout counter: an mtr that latches a page in place leaves it as it was (changes
/// included: the mtr promises they move no record), an ordinary exclusive latch moves it,
/// and so does an eviction and read-in, even back into the same frame.
#[test]
fn only_an_in_place_latch_keeps_the_layout() {
    let (_e, pool, old) = page_one_in_small_pool();
    let layout = |pool: &crate::BufferPool| {
        let g = pool.get_read(pid(1)).unwrap();
        (g.frame(), g.layout())
    };
    let (f, l) = layout(&pool);
    assert_eq!(f, old);
    // In place, through the hint and without: the bytes change, the layout does not.
    let mut m = pool.mtr().unwrap();
    let h = m.get_write_in_place_hinted(pid(1), f).unwrap();
    assert_eq!((m.frame(h), m.layout(h)), (Some(f), Some(l)));
    m.write(h, 200, &[9, 9]).unwrap();
    m.commit().unwrap();
    let mut m = pool.mtr().unwrap();
    let h = m.get_write_in_place(pid(1)).unwrap();
    m.write(h, 202, &[8]).unwrap();
    m.commit().unwrap();
    assert_eq!(layout(&pool), (f, l));
    assert_eq!(&pool.get_read(pid(1)).unwrap()[200..203], &[9, 9, 8]);
    // A wrong hint still gives the page, latched in place.
    let mut m = pool.mtr().unwrap();
    let h = m.get_write_in_place_hinted(pid(1), f ^ 1).unwrap();
    assert_eq!(m.frame(h), Some(f));
    drop(m);
    assert_eq!(layout(&pool), (f, l));
    // An ordinary latch moves it, changed or not.
    let mut m = pool.mtr().unwrap();
    m.get_write(pid(1)).unwrap();
    drop(m);
    let (_, l2) = layout(&pool);
    assert!(l2 > l);
    // Evicted and read back: a new layout wherever the page lands.
    pool.flush_all().unwrap();
    evict_page_one(&pool.shared);
    let (f3, l3) = layout(&pool);
    assert!(f3 != f || l3 > l2, "{f3} {l3}");
    assert_all_idle(&pool);
}
