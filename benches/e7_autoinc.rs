//! Experiment E7: parallel inserts and the auto-increment lock (seed 004, "INSERT speed,
//! paramy, auto-inc").
//!
//! The article loaded 13M rows: 7,200 rows/s from one client, 8,700 rows/s with the statements
//! spread over worker threads (the table-level AUTO-INC lock serialised them), 21,500 rows/s
//! without AUTO_INCREMENT. This bench runs [`minnow_workload::parallel_load`]: `THREADS`
//! threads inserting multi-row statements into a fresh table, with `id` AUTO_INCREMENT under
//! `innodb_autoinc_lock_mode` 0, 1 and 2, and with explicit keys.
//!
//! ## What it prints
//!
//! - Criterion groups `e7/<keys>/<threads>`: time per statement of `ROWS_PER_STMT` rows.
//! - Then one load of `ROWS` rows per key mode and thread count: rows per second, the CPU
//!   seconds the process used, and the AUTO-INC lock's waits and grants.
//!
//! ## Knobs (environment variables)
//!
//! | variable | default | what |
//! |---|---|---|
//! | `MINNOW_E7_ROWS` | 20000 | rows per load of the comparison |
//! | `MINNOW_E7_THREADS` | 1,2,4 | thread counts |
//! | `MINNOW_E7_ROWS_PER_STMT` | 100 | rows per INSERT statement |
//! | `MINNOW_BENCH_DIR` | the temp dir | where the databases go (use a real disk, not tmpfs) |
//!
//! `cargo test --bench e7_autoinc` (CI) runs everything once at 1,000 rows.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use minnow::Config;
use minnow_workload::parallel_load::{self, KeyMode};

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

fn bench_dir() -> tempfile::TempDir {
    match std::env::var_os("MINNOW_BENCH_DIR").map(PathBuf::from) {
        Some(dir) => tempfile::tempdir_in(dir),
        None => tempfile::tempdir(),
    }
    .unwrap_or_else(|e| panic!("cannot create a bench directory: {e}"))
}

fn e7(c: &mut Criterion) {
    let test_mode = common::test_mode();
    let num = |name: &str, default: &str| -> u64 {
        let v = env_or(name, default);
        v.trim()
            .replace('_', "")
            .parse()
            .unwrap_or_else(|e| panic!("{name}={v}: {e}"))
    };
    let rows = if test_mode {
        1_000
    } else {
        num("MINNOW_E7_ROWS", "20000").max(1)
    };
    let per_stmt = num("MINNOW_E7_ROWS_PER_STMT", "100").max(1) as usize;
    let threads: Vec<usize> = env_or("MINNOW_E7_THREADS", "1,2,4")
        .split(',')
        .map(|t| {
            t.trim()
                .parse::<usize>()
                .unwrap_or_else(|e| panic!("MINNOW_E7_THREADS: {t}: {e}"))
                .max(1)
        })
        .collect();
    for keys in KeyMode::ALL {
        let mut g = c.benchmark_group(format!("e7/{}", keys.name()));
        g.sample_size(10);
        g.warm_up_time(Duration::from_millis(if test_mode { 1 } else { 300 }));
        g.measurement_time(Duration::from_secs(if test_mode { 1 } else { 3 }));
        g.throughput(Throughput::Elements(per_stmt as u64));
        for &n in &threads {
            g.bench_function(format!("{n}"), |b| {
                b.iter_custom(|iters| {
                    let dir = bench_dir();
                    let stmts = iters.max(n as u64);
                    let r = parallel_load::run(
                        dir.path(),
                        Config::default(),
                        keys,
                        n,
                        stmts * per_stmt as u64,
                        per_stmt,
                    )
                    .unwrap_or_else(|e| panic!("{}: {e}", keys.name()));
                    Duration::from_secs_f64(r.seconds * iters as f64 / stmts as f64)
                })
            });
        }
        g.finish();
    }
    eprintln!(
        "e7: {rows} rows per load, {per_stmt} rows per statement\n{:<10} {:>7} {:>12} {:>10} {:>11} {:>11}",
        "keys", "threads", "rows/s", "cpu s", "lock waits", "lock grants"
    );
    for &n in &threads {
        for keys in KeyMode::ALL {
            let dir = bench_dir();
            let r = parallel_load::run(dir.path(), Config::default(), keys, n, rows, per_stmt)
                .unwrap_or_else(|e| panic!("{}: {e}", keys.name()));
            eprintln!(
                "{:<10} {:>7} {:>12.0} {:>10} {:>11} {:>11}",
                r.keys,
                r.threads,
                r.rows_per_sec,
                r.cpu_seconds
                    .map_or_else(|| "-".to_owned(), |c| format!("{c:.2}")),
                r.lock_waits,
                r.lock_grants
            );
        }
    }
}

criterion_group!(benches, e7);
criterion_main!(benches);
