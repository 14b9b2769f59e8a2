//! Buffer pool hit path: page fixes per second (a fix = page-hash lookup, pin, shared latch,
//! LRU touch, unlatch, unpin), with 1 and 2 threads.
//!
//! The pool (1024 frames of 16 KiB, one instance, no page cleaner) holds all 512 pages the
//! bench touches, so every fix is a hit. The single-thread case walks the pages round robin;
//! the two-thread case (`iter_custom`) runs two threads that each do `iters` fixes, on
//! different pages (`two_threads/disjoint`) or on the same pages (`two_threads/shared`, where
//! both threads pin and latch the same frames), and reports the wall time: with
//! `Throughput::Elements(2)` Criterion's element rate is total fixes per second.
//!
//! Run: `cargo bench --bench buffer_pool`.

use std::hint::black_box;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use minnow_buf::{BufConfig, BufferPool};
use minnow_page::{PageId, PageSize};

const PAGES: u32 = 512;

fn pool(dir: &std::path::Path) -> BufferPool {
    let cfg = BufConfig {
        page_cleaners: 0,
        read_ahead_threshold: 0,
        ..BufConfig::with_frames(1024, PageSize::K16)
    };
    let pool = BufferPool::create_scratch(dir, cfg, PAGES + 1).expect("scratch pool");
    for no in 1..=PAGES {
        drop(pool.get_read(PageId::new(1, no)).expect("warm"));
    }
    pool
}

fn fix_loop(pool: &BufferPool, iters: u64, offset: u32) {
    for i in 0..iters {
        let id = PageId::new(1, 1 + (offset + i as u32) % PAGES);
        let g = pool.get_read(id).expect("hit");
        black_box(g[100]);
    }
}

fn two_threads(pool: &BufferPool, iters: u64, disjoint: bool) -> Duration {
    let barrier = Barrier::new(3);
    std::thread::scope(|s| {
        for t in 0..2u32 {
            let (pool, barrier) = (pool, &barrier);
            s.spawn(move || {
                barrier.wait();
                if disjoint {
                    // Thread 0 uses pages 1..=256, thread 1 pages 257..=512.
                    for i in 0..iters {
                        let no = 1 + t * (PAGES / 2) + (i as u32) % (PAGES / 2);
                        black_box(pool.get_read(PageId::new(1, no)).expect("hit")[100]);
                    }
                } else {
                    fix_loop(pool, iters, 0);
                }
                barrier.wait();
            });
        }
        barrier.wait();
        let start = Instant::now();
        barrier.wait();
        start.elapsed()
    })
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let pool = pool(dir.path());
    let mut g = c.benchmark_group("buffer_pool_fix");
    g.throughput(Throughput::Elements(1));
    g.bench_function("one_thread", |b| {
        let mut i = 0u32;
        b.iter(|| {
            i = i.wrapping_add(1);
            let g = pool.get_read(PageId::new(1, 1 + i % PAGES)).expect("hit");
            black_box(g[100]);
        })
    });
    g.throughput(Throughput::Elements(2));
    g.bench_function("two_threads/disjoint", |b| {
        b.iter_custom(|iters| two_threads(&pool, iters, true))
    });
    g.bench_function("two_threads/shared", |b| {
        b.iter_custom(|iters| two_threads(&pool, iters, false))
    });
    g.finish();
    let st = pool.stats();
    eprintln!("pool stats after the bench: {st:?}");
    assert_eq!(st.misses, 0, "every fix must be a hit: {st:?}");
}

criterion_group!(benches, bench);
criterion_main!(benches);
