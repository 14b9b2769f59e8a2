//! Experiment E8: covering indexes on cold data (seed 004, "Where covering indexes rock").
//!
//! The article listed 10,000 revisions of one Wikipedia user through an index on
//! (`rev_user`, `rev_timestamp`) of the `revision` table, clustered on (`rev_page`, `rev_id`):
//! a clustered page read per row on cold data (10,000 random 16 KiB reads, 200 MB, 21.73 s),
//! against about 100 page reads (2 MB, 2.30 s) through an index that covers the query. This
//! bench loads the same shape of table ([`minnow_workload::revisions`]), closes it, and runs
//! each plan on a freshly opened database with `O_DIRECT` and no buffer pool dump load (a cold
//! buffer pool that neither the previous run's pages nor the OS cache help; fsync with a note
//! where the file system refuses O_DIRECT).
//!
//! ## What it prints
//!
//! - Criterion group `e8` with `non_covering` and `covering`: the query's time on a cold pool
//!   (each iteration reopens the database; only the query is timed).
//! - Then `ROUNDS` cold runs of each plan, alternating, with the pages read and the bytes they
//!   amount to, and the medians and ratios to hold against the article's 21.73 s / 2.30 s
//!   (9.4×) and 10,000 / ~100 pages.
//!
//! ## Knobs (environment variables)
//!
//! | variable | default | what |
//! |---|---|---|
//! | `MINNOW_E8_ROWS` | 100000 | rows in `revision` (about 190 bytes each) |
//! | `MINNOW_E8_USER_REVS` | 1000 | revisions of the listed user (the article: 10,000) |
//! | `MINNOW_E8_ROUNDS` | 3 | cold runs per plan |
//! | `MINNOW_BENCH_DIR` | the temp dir | where the database goes (use a real disk, not tmpfs) |
//!
//! `cargo test --bench e8_covering` (CI) runs it once on a 5,000-row table.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use minnow::FlushMethod;
use minnow::{Config, Database};
use minnow_workload::revisions::{self, ColdRun, Plan};

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .replace('_', "")
            .parse()
            .unwrap_or_else(|e| panic!("{name}={v}: {e}")),
        Err(_) => default,
    }
}

fn bench_dir() -> tempfile::TempDir {
    match std::env::var_os("MINNOW_BENCH_DIR").map(PathBuf::from) {
        Some(dir) => tempfile::tempdir_in(dir),
        None => tempfile::tempdir(),
    }
    .unwrap_or_else(|e| panic!("cannot create a bench directory: {e}"))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn e8(c: &mut Criterion) {
    let test_mode = common::test_mode();
    let (rows, user_revs, rounds) = if test_mode {
        (5_000, 100, 1)
    } else {
        (
            env_u64("MINNOW_E8_ROWS", 100_000).max(100),
            env_u64("MINNOW_E8_USER_REVS", 1_000).max(1),
            env_u64("MINNOW_E8_ROUNDS", 3).max(1) as usize,
        )
    };
    let dir = bench_dir();
    let mut config = Config {
        flush_method: FlushMethod::ODirect,
        ..Config::default()
    };
    let db = match Database::create(dir.path(), config.clone()) {
        Ok(db) => db,
        Err(e) => {
            eprintln!(
                "e8: note: O_DIRECT refused here ({e}); using fsync, so the OS cache may serve reads"
            );
            config.flush_method = FlushMethod::Fsync;
            let _ = std::fs::remove_dir_all(dir.path());
            std::fs::create_dir_all(dir.path()).unwrap_or_else(|e| panic!("{e}"));
            Database::create(dir.path(), config.clone()).unwrap_or_else(|e| panic!("create: {e}"))
        }
    };
    let rate =
        revisions::prepare(&db, rows, user_revs, 0).unwrap_or_else(|e| panic!("prepare: {e}"));
    db.close().unwrap_or_else(|e| panic!("close: {e}"));
    eprintln!("e8: loaded {rows} rows ({user_revs} of the listed user) at {rate:.0} rows/s");

    let mut g = c.benchmark_group("e8");
    g.sample_size(10);
    g.warm_up_time(Duration::from_millis(if test_mode { 1 } else { 200 }));
    g.measurement_time(Duration::from_secs(if test_mode { 1 } else { 5 }));
    for plan in Plan::ALL {
        g.bench_function(plan.name(), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        let r = revisions::run_cold(dir.path(), config.clone(), plan)
                            .unwrap_or_else(|e| panic!("{}: {e}", plan.name()));
                        Duration::from_secs_f64(r.seconds)
                    })
                    .sum()
            })
        });
    }
    g.finish();

    let mut runs: Vec<ColdRun> = Vec::new();
    for _ in 0..rounds {
        for plan in Plan::ALL {
            let r = revisions::run_cold(dir.path(), config.clone(), plan)
                .unwrap_or_else(|e| panic!("{}: {e}", plan.name()));
            eprintln!(
                "e8: {:<13} {} rows in {:8.2} ms, {} pages read + {} read ahead ({:.1} MiB)",
                plan.name(),
                r.rows,
                r.seconds * 1e3,
                r.pages_read,
                r.read_ahead,
                r.bytes_read as f64 / (1 << 20) as f64
            );
            runs.push(r);
        }
    }
    let of = |p: Plan, f: &dyn Fn(&ColdRun) -> f64| {
        median(runs.iter().filter(|r| r.plan == p).map(f).collect())
    };
    let (nt, ct) = (
        of(Plan::NonCovering, &|r| r.seconds),
        of(Plan::Covering, &|r| r.seconds),
    );
    let pages = |r: &ColdRun| (r.pages_read + r.read_ahead) as f64;
    let (np, cp) = (of(Plan::NonCovering, &pages), of(Plan::Covering, &pages));
    eprintln!(
        "e8: medians ({:?}): non-covering {:.2} ms / {np} pages, covering {:.2} ms / {cp} pages: time ratio {:.1}x, pages ratio {:.1}x (article: 21.73 s / 2.30 s = 9.4x; ~10,000 / ~100 pages)",
        config.flush_method,
        nt * 1e3,
        ct * 1e3,
        nt / ct.max(1e-12),
        np / cp.max(1.0)
    );
}

criterion_group!(benches, e8);
criterion_main!(benches);
