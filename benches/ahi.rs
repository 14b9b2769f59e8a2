//! Experiment E4: the adaptive hash index (and thread concurrency) on cached point and range
//! queries, seed article 003.
//!
//! A `slap` table ([`minnow_workload::slap`]) of `MINNOW_BENCH_ROWS` rows (default 20,000, so
//! CI's `cargo test --bench ahi` pass is quick; the E4 figures in
//! `docs/EXPERIMENTS.md` use 1,000,000 through `minnow bench ahi`), start keys from a working
//! set of 100. Single thread, Criterion-timed, one group per query and shape, each with the
//! configurations `base` (hash on), `noahi` (hash off) and `itc` (hash on,
//! `thread_concurrency = 32`, `concurrency_tickets = 500`), switched at runtime and warmed
//! up before timing:
//!
//! | bench | what |
//! |---|---|
//! | `ahi/q1_point/{base,noahi,itc}` | `Table::get` by primary key: the target, hash on at least 1.5x the lookups/s of off |
//! | `ahi/q4_range1000/{...}` | a 1000-row non-covering secondary range (1001 index searches): the article's 1.75x |
//! | `ahi/{q1,q4,q5}_{point,range10,range1000}/...` | the rest of the matrix |
//!
//! The multi-thread part of the matrix (2 to 8 threads here) is `minnow bench ahi`, which
//! prints the article's normalised table.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use minnow::{Config, Database, FlushAtCommit};
use minnow_workload::slap::{self, Query, Setup, Shape, SlapConfig};

fn rows() -> u64 {
    std::env::var("MINNOW_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000)
        .max(2000)
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = Database::create(
        dir.path(),
        Config {
            buffer_pool_size: 512 << 20,
            flush_log_at_trx_commit: FlushAtCommit::Lazy,
            ..Config::default()
        },
    )
    .expect("create");
    let cfg = SlapConfig {
        rows: rows(),
        working_set: 100,
    };
    slap::prepare(&db, &cfg).expect("prepare");
    let t = db.table(slap::TABLE).expect("table");
    for q in Query::ALL {
        for shape in Shape::ALL {
            let mut g = c.benchmark_group(format!("ahi/{}_{}", q.name(), shape.name()));
            for setup in Setup::ALL {
                setup.apply(&db).expect("setup");
                // Warm-up: with the hash on, enough searches for it to learn and hash the
                // working set's pages: 2,000 rows' worth of queries, and every start key of
                // the working set at least twice (a 1000-row range makes up to 1001 index
                // searches, so it needs far fewer queries than a point lookup).
                let warm_up = (2000 / shape.rows() as u64).max(2 * cfg.working_set);
                for i in 0..warm_up {
                    slap::query(&t, q, shape, i % cfg.working_set).expect("warm-up");
                }
                let mut x = 0x2545_F491_4F6C_DD1Du64;
                g.bench_function(BenchmarkId::from_parameter(setup.name()), |b| {
                    b.iter(|| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        black_box(slap::query(&t, q, shape, x % cfg.working_set).expect("query"))
                    })
                });
            }
            g.finish();
        }
    }
    Setup::Base.apply(&db).expect("setup");
    let s = db.ahi_stats().expect("stats");
    eprintln!(
        "ahi: {} entries, {} pages hashed, {} KiB, {} hits, {} misses",
        s.entries,
        s.pages_hashed,
        s.memory_bytes >> 10,
        s.hits,
        s.misses
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
