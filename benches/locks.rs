//! Row locks: what an uncontended lock costs (issue 5's target: acquire and release under
//! 200 ns), and what a handful of threads locking disjoint rows cost each other.
//!
//! Each iteration is a whole transaction's worth of locking: a fresh `TrxLocks`, one (or ten)
//! exclusive locks on primary keys of one index, and `release_all` as at commit.
//!
//! Run: `cargo bench --bench locks`; results are in docs/EXPERIMENTS.md ("Row locks").

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use minnow_mvcc::lock::{LockKey, LockManager, LockMode};

fn key(k: u64) -> LockKey {
    LockKey::new(7, &k.to_be_bytes())
}

fn uncontended(c: &mut Criterion) {
    let m = LockManager::new(Duration::from_secs(1));
    let mut trx = 0u64;
    let mut g = c.benchmark_group("locks/uncontended");
    g.bench_function("1 key", |b| {
        b.iter(|| {
            trx += 1;
            let mut t = m.begin(trx);
            t.lock(key(trx % 1000), LockMode::Exclusive)
                .expect("uncontended");
            t.release_all();
        })
    });
    g.bench_function("10 keys", |b| {
        b.iter(|| {
            trx += 1;
            let mut t = m.begin(trx);
            for i in 0..10 {
                t.lock(key(trx * 10 + i), LockMode::Exclusive)
                    .expect("uncontended");
            }
            t.release_all();
        })
    });
    g.bench_function("1 key, shared with a holder", |b| {
        let mut holder = m.begin(u64::MAX);
        holder.lock(key(1 << 40), LockMode::Shared).expect("first");
        b.iter(|| {
            trx += 1;
            let mut t = m.begin(trx);
            t.lock(key(1 << 40), LockMode::Shared).expect("compatible");
            t.release_all();
        })
    });
    g.finish();
}

/// Threads lock disjoint keys: they share only the lock table's shards.
fn disjoint_threads(c: &mut Criterion) {
    let mut g = c.benchmark_group("locks/disjoint");
    for threads in [1u64, 2, 4] {
        g.bench_with_input(BenchmarkId::from_parameter(threads), &threads, |b, &n| {
            b.iter_custom(|iters| {
                let m = LockManager::new(Duration::from_secs(1));
                let start = Instant::now();
                let hs: Vec<_> = (0..n)
                    .map(|t| {
                        let m = Arc::clone(&m);
                        thread::spawn(move || {
                            for i in 0..iters {
                                let mut l = m.begin(i * n + t);
                                l.lock(key((t << 32) | (i % 4096)), LockMode::Exclusive)
                                    .expect("disjoint");
                                l.release_all();
                            }
                        })
                    })
                    .collect();
                for h in hs {
                    h.join().expect("thread");
                }
                // Every thread did `iters` locks side by side: the time of one, as each saw it.
                start.elapsed()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, uncontended, disjoint_threads);
criterion_main!(benches);
