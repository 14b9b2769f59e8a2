//! Experiment E2: the 2007 read micro-benchmark, clustered (InnoDB-like) against heap
//! (MyISAM-like) organisation.
//!
//! The article (seed 001) ran 13 SELECTs on a 1M-row "normal" table at 1 to 256 threads,
//! CPU-bound: InnoDB's clustered primary key was 6-9% faster than MyISAM on point lookups,
//! 25-30% faster on covering reads and 2-26x faster on primary key ranges at high thread
//! counts. This bench loads the same table ([`minnow_workload::reads2007`]) twice in one
//! database, as a clustered [`minnow::Table`] and as a [`minnow_heap::HeapTable`] (rows read
//! with `pread` from a heap file, every index pointing at a row id), with a buffer pool that
//! holds everything (the heap file sits in the OS page cache, as MyISAM's did).
//!
//! ## What it prints
//!
//! - Criterion groups `e2/<QUERY>` with `clustered` and `heap`: the time of one query on one
//!   thread.
//! - Then the **thread sweep**: every query at every thread count in `MINNOW_E2_THREADS`,
//!   both organisations back to back per point, queries per second and the clustered/heap
//!   ratio; written as CSV to `<criterion dir>/e2_reads/results.csv`
//!   (`organisation,query,threads,queries,rows,seconds,qps`), which `minnow plot` draws.
//!
//! ## Knobs (environment variables)
//!
//! | variable | default | what |
//! |---|---|---|
//! | `MINNOW_E2_ROWS` | 20000 | rows in the table (the article: 1,000,000) |
//! | `MINNOW_E2_THREADS` | 1,4 | thread counts of the sweep (the article: 1,4,16,64,128,256) |
//! | `MINNOW_E2_SECS` | 0.5 | measured seconds per sweep point (and Criterion's measurement time) |
//! | `MINNOW_E2_POOL_MB` | 256 | buffer pool MiB |
//! | `MINNOW_BENCH_DIR` | the temp dir | where the database goes (use a real disk, not tmpfs) |
//!
//! `cargo test --bench e2_reads` (CI) runs each query once per organisation and a
//! one-thread sweep of a few milliseconds per point on a 1,000-row table.

mod common;
use common::{criterion_dir, write_csv};

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use minnow::{Config, Database};
use minnow_workload::reads2007::{self, NormalTable, Organisation, Query, SweepConfig};
use rand::SeedableRng;
use rand::rngs::SmallRng;

#[derive(Debug, Clone)]
struct Settings {
    rows: u64,
    threads: Vec<usize>,
    secs: f64,
    pool_mb: usize,
    test_mode: bool,
}

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

impl Settings {
    fn from_env() -> Settings {
        let num = |name: &str, default: &str| -> f64 {
            let v = env_or(name, default);
            v.trim()
                .replace('_', "")
                .parse()
                .unwrap_or_else(|e| panic!("{name}={v}: {e}"))
        };
        let threads = env_or("MINNOW_E2_THREADS", "1,4")
            .split(',')
            .map(|t| {
                t.trim()
                    .parse::<usize>()
                    .unwrap_or_else(|e| panic!("MINNOW_E2_THREADS: {t}: {e}"))
                    .max(1)
            })
            .collect();
        let s = Settings {
            rows: (num("MINNOW_E2_ROWS", "20000") as u64).max(100),
            threads,
            secs: num("MINNOW_E2_SECS", "0.5").max(0.01),
            pool_mb: (num("MINNOW_E2_POOL_MB", "256") as usize).max(8),
            test_mode: common::test_mode(),
        };
        if s.test_mode {
            Settings {
                rows: s.rows.min(1_000),
                threads: vec![1],
                secs: 0.01,
                ..s
            }
        } else {
            s
        }
    }
}

fn bench_dir() -> tempfile::TempDir {
    match std::env::var_os("MINNOW_BENCH_DIR") {
        Some(dir) => tempfile::tempdir_in(dir),
        None => tempfile::tempdir(),
    }
    .unwrap_or_else(|e| panic!("cannot create a bench directory: {e}"))
}

fn load<'db>(db: &'db Database, dir: &Path, s: &Settings) -> Vec<(Organisation, NormalTable<'db>)> {
    Organisation::ALL
        .into_iter()
        .map(|org| {
            let (t, l) = reads2007::prepare(db, dir, org, s.rows, 0, &mut |_| {})
                .unwrap_or_else(|e| panic!("prepare {}: {e}", org.name()));
            eprintln!(
                "e2: loaded {} rows ({}) at {:.0} rows/s",
                l.rows,
                org.name(),
                l.rows_per_sec
            );
            (org, t)
        })
        .collect()
}

fn criterion_groups(c: &mut Criterion, s: &Settings, tables: &[(Organisation, NormalTable<'_>)]) {
    for q in Query::ALL {
        let mut g = c.benchmark_group(format!("e2/{}", q.name()));
        g.sample_size(10);
        g.warm_up_time(Duration::from_millis(if s.test_mode { 10 } else { 300 }));
        g.measurement_time(Duration::from_secs_f64(s.secs.max(0.2)));
        for (org, t) in tables {
            g.bench_function(org.name(), |b| {
                let mut rng = SmallRng::seed_from_u64(7);
                b.iter_custom(|iters| {
                    let started = Instant::now();
                    for _ in 0..iters {
                        t.run_query(q, s.rows, &mut rng)
                            .unwrap_or_else(|e| panic!("{}: {e}", q.name()));
                    }
                    started.elapsed()
                })
            });
        }
        g.finish();
    }
}

fn sweep(s: &Settings, tables: &[(Organisation, NormalTable<'_>)]) {
    let cfg = SweepConfig {
        rows: s.rows,
        queries: Query::ALL.to_vec(),
        threads: s.threads.clone(),
        warmup: Duration::from_secs_f64(s.secs / 5.0),
        duration: Duration::from_secs_f64(s.secs),
        seed: 0,
    };
    let stop = AtomicBool::new(false);
    let mut rows = Vec::new();
    eprintln!(
        "e2: sweep, {} rows, {:.2} s per point\n{:<30} {:>7} {:>14} {:>14} {:>15}",
        s.rows, s.secs, "query", "threads", "clustered q/s", "heap q/s", "clustered/heap"
    );
    for q in Query::ALL {
        for &n in &s.threads {
            let mut qps = Vec::new();
            for (org, t) in tables {
                let p = reads2007::run_point(t, *org, q, n, &cfg, &stop)
                    .unwrap_or_else(|e| panic!("{}: {e}", q.name()));
                rows.push(p.csv_record().to_vec());
                qps.push(p.qps);
            }
            eprintln!(
                "{:<30} {:>7} {:>14.0} {:>14.0} {:>15.2}",
                q.name(),
                n,
                qps[0],
                qps[1],
                qps[0] / qps[1].max(1e-9)
            );
        }
    }
    let path = criterion_dir().join("e2_reads").join("results.csv");
    write_csv("e2", &path, reads2007::Point::CSV_HEADER, &rows);
}

fn e2(c: &mut Criterion) {
    let s = Settings::from_env();
    let dir = bench_dir();
    let db = Database::create(
        dir.path(),
        Config {
            buffer_pool_size: s.pool_mb << 20,
            ..Config::default()
        },
    )
    .unwrap_or_else(|e| panic!("create: {e}"));
    let tables = load(&db, dir.path(), &s);
    criterion_groups(c, &s, &tables);
    sweep(&s, &tables);
    drop(tables);
    db.close().unwrap_or_else(|e| panic!("close: {e}"));
}

criterion_group!(benches, e2);
criterion_main!(benches);
