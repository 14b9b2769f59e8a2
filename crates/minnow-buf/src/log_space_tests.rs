//! Log space under concurrent writers: the reservation every mtr takes at its start
//! (`BufferPool::mtr`, `Log::reserve`) must cover what the mtrs between their start and their
//! append write, however many start at once.

use std::sync::Barrier;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use super::tests::{cfg, create_pages, env, open, pid};
use super::*;

/// Sixteen writers on a 1 MiB log, each mtr writing nearly its whole margin (four 4 KiB
/// pages' worth of redo) after all sixteen have started: before reservations, all passed the
/// free check together with room for one or two, and the appends then failed with
/// `LogFull`. A barrier between the start and the changes makes every round start sixteen
/// mtrs at once, whatever the scheduler does; the pages are each thread's own, so no thread
/// waits for another's latch while the others wait at the barrier.
#[test]
fn sixteen_writers_on_a_tiny_log_never_find_it_full() {
    const THREADS: u32 = 16;
    const PAGES: u32 = 4;
    const ROUNDS: u32 = 40;
    for cleaners in [0, 1] {
        let e = env(THREADS * PAGES + 8, 1 << 20);
        let pool = open(
            &e,
            BufConfig {
                page_cleaners: cleaners,
                ..cfg((THREADS * PAGES) as usize + 32)
            },
        );
        create_pages(&pool, THREADS * PAGES);
        let started = Barrier::new(THREADS as usize);
        // Failures are counted, not unwrapped: a thread that panicked would leave the others
        // waiting at the barrier for ever.
        let failed = AtomicU64::new(0);
        let (pool, started, failed) = (&pool, &started, &failed);
        std::thread::scope(|s| {
            for t in 0..THREADS {
                s.spawn(move || {
                    for round in 0..ROUNDS {
                        let m = pool.mtr();
                        started.wait();
                        let done = m.and_then(|mut m| {
                            for p in 0..PAGES {
                                let h = m.get_write(pid(1 + t * PAGES + p))?;
                                m.write(h, 200, &[round as u8; 3800])?;
                            }
                            m.commit()
                        });
                        if let Err(e) = done {
                            eprintln!("thread {t}, round {round}: {e}");
                            failed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(failed.load(Ordering::Relaxed), 0, "mtrs failed");
        let laps = (e.log.current_lsn().0 - Lsn::FIRST.0) / e.log.capacity();
        assert!(laps >= 6, "{laps} laps of the log");
        for t in 0..THREADS * PAGES {
            let g = pool.get_read(pid(1 + t)).unwrap();
            assert_eq!(g[200], (ROUNDS - 1) as u8);
        }
        pool.shutdown().unwrap();
    }
}

/// An mtr that writes more than its reservation takes the rest from log space no one has
/// reserved; one bigger than the whole log fails with `LogFull` at commit, is undone (its
/// pages as they were), poisons nothing, and the next mtr goes on as usual.
#[test]
fn an_mtr_bigger_than_its_reservation() {
    const PAGES: u32 = 300;
    let e = env(PAGES + 8, 1 << 20);
    let pool = open(&e, cfg(PAGES as usize + 32));
    create_pages(&pool, PAGES);
    let write_pages = |n: u32, byte: u8| -> Result<Lsn, BufError> {
        let mut m = pool.mtr()?;
        for p in 1..=n {
            let h = m.get_write(pid(p))?;
            m.write(h, 200, &[byte; 3800])?;
        }
        m.commit()
    };
    // Forty pages: ten times the four pages' worth reserved, a sixth of the log.
    let start = e.log.current_lsn();
    let end = write_pages(40, 1).unwrap();
    assert!(end.0 - start.0 > 10 * 4 * 3800);
    // Three hundred pages: more than the log holds.
    let err = write_pages(PAGES, 2).unwrap_err();
    assert!(
        matches!(err, BufError::Log(LogError::LogFull { .. })),
        "{err}"
    );
    assert_eq!(e.log.current_lsn(), end);
    assert_eq!(e.log.reserved(), 0);
    for p in 1..=PAGES {
        let g = pool.get_read(pid(p)).unwrap();
        assert_eq!(g[200], if p <= 40 { 1 } else { 0 }, "page {p}");
    }
    assert!(!e.log.is_poisoned());
    write_pages(4, 3).unwrap();
    assert_eq!(pool.get_read(pid(4)).unwrap()[200], 3);
    pool.shutdown().unwrap();
}

/// A thread that starts an mtr while it has one open holds a reservation and latches, so
/// the inner mtr must not wait for room: with every byte reservations may take reserved, it
/// still starts at once and appends into the sixteenth of the log kept unreserved.
#[test]
fn a_nested_mtr_never_waits_for_a_reservation() {
    let e = env(16, 1 << 20);
    let pool = open(&e, cfg(32));
    create_pages(&pool, 2);
    pool.flush_all().unwrap();
    let mut outer = pool.mtr().unwrap();
    let h = outer.get_write(pid(1)).unwrap();
    outer.write(h, 200, b"outer").unwrap();
    // Every other byte reservations may take, taken (as by writers in flight).
    let mut held = Vec::new();
    while let Ok(r) = e.log.reserve(16 << 10, Duration::ZERO) {
        held.push(r);
    }
    assert!(held.len() > 40, "{}", held.len());
    let mut inner = pool.mtr().unwrap();
    let h = inner.get_write(pid(2)).unwrap();
    inner.write(h, 200, b"inner").unwrap();
    inner.commit().unwrap();
    outer.commit().unwrap();
    drop(held);
    assert_eq!(e.log.reserved(), 0);
    assert_eq!(&pool.get_read(pid(2)).unwrap()[200..205], b"inner");
    pool.shutdown().unwrap();
}
