//! Experiment E11: buffer pool warm-up after a restart (seed 000's appendix, seed 002).
//!
//! A restarted server reads its working set back one miss at a time; InnoDB writes the ids of
//! its hottest pages to `ib_buffer_pool` at shutdown and reads them back at startup. This bench
//! loads a table larger than the buffer pool ([`minnow_workload::warmup`]), reads it with a
//! skewed point-read load (a hot set that fits in the pool) to a steady state, closes it, and
//! restarts it without and with the dump load, with `O_DIRECT` so the OS cache does not keep
//! the table across restarts (fsync with a note where the file system refuses O_DIRECT).
//!
//! ## What it prints
//!
//! - Criterion group `e11` with `open_cold` and `open_warm`: how long `Database::open` plus
//!   the first `MINNOW_E11_PROBE` hot-set reads take on a cold pool, without and with the
//!   dump load (each iteration reopens the database).
//! - Then one full run: the steady state, each restart's throughput per interval and the time
//!   to reach 90% of the steady state.
//!
//! ## Knobs (environment variables)
//!
//! | variable | default | what |
//! |---|---|---|
//! | `MINNOW_E11_ROWS` | 200000 | rows in the table (about 90 to a 16 KiB page) |
//! | `MINNOW_E11_HOT_ROWS` | 1000 | rows in the hot set, one leaf page each |
//! | `MINNOW_E11_POOL_MB` | 16 | buffer pool size in MiB |
//! | `MINNOW_E11_DUMP_PCT` | 100 | `innodb_buffer_pool_dump_pct` |
//! | `MINNOW_E11_THREADS` | 4 | reader threads |
//! | `MINNOW_E11_SECS` | 2 | seconds of reads after each restart (twice that before it) |
//! | `MINNOW_E11_PROBE` | 2000 | hot-set reads timed by the Criterion group |
//! | `MINNOW_BENCH_DIR` | the temp dir | where the database goes (use a real disk, not tmpfs) |
//!
//! `cargo test --bench e11_warmup` (CI) runs it once on a 20,000-row table.

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use minnow::FlushMethod;
use minnow::inspect::Internals;
use minnow::{Config, Database, Value};
use minnow_workload::warmup::{self, WarmupConfig};

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

/// Opens the database and reads `probe` hot rows; returns the time both took.
fn open_and_probe(
    dir: &std::path::Path,
    config: &Config,
    cfg: &WarmupConfig,
    probe: u64,
) -> Duration {
    let started = Instant::now();
    let db = Database::open(dir, config.clone()).unwrap_or_else(|e| panic!("open: {e}"));
    {
        let t = db
            .table(warmup::TABLE)
            .unwrap_or_else(|e| panic!("table: {e}"));
        for i in 0..probe {
            let key = [Value::UInt(cfg.hot_id(i.wrapping_mul(7_919)))];
            let row = t.get(&key).unwrap_or_else(|e| panic!("get: {e}"));
            assert!(row.is_some(), "hot row {i} missing");
        }
    }
    let took = started.elapsed();
    db.buffer_pool()
        .and_then(|p| p.wait_for_load().map_err(minnow::Error::from))
        .unwrap_or_else(|e| panic!("load: {e}"));
    db.close().unwrap_or_else(|e| panic!("close: {e}"));
    took
}

fn e11(c: &mut Criterion) {
    let test_mode = common::test_mode();
    let (rows, hot_rows, pool_mb, dump_pct, threads, secs, probe) = if test_mode {
        (20_000, 100, 2, 100, 2, 1, 100)
    } else {
        (
            env_u64("MINNOW_E11_ROWS", 200_000).max(100),
            env_u64("MINNOW_E11_HOT_ROWS", 1_000).max(1),
            env_u64("MINNOW_E11_POOL_MB", 16).max(1),
            env_u64("MINNOW_E11_DUMP_PCT", 100).clamp(1, 100) as u32,
            env_u64("MINNOW_E11_THREADS", 4).max(1) as usize,
            env_u64("MINNOW_E11_SECS", 2).max(1),
            env_u64("MINNOW_E11_PROBE", 2_000).max(1),
        )
    };
    let cfg = WarmupConfig {
        rows,
        hot_rows,
        threads,
        interval: Duration::from_millis(if test_mode { 100 } else { 50 }),
        warm_time: Duration::from_secs(2 * secs),
        measure_time: Duration::from_secs(secs),
        ..WarmupConfig::default()
    };
    let mut config = Config {
        flush_method: FlushMethod::ODirect,
        buffer_pool_size: (pool_mb as usize) << 20,
        buffer_pool_dump_pct: dump_pct,
        ..Config::default()
    };
    let dir = bench_dir();
    if let Err(e) = Database::create(dir.path().join("probe"), config.clone()) {
        eprintln!(
            "e11: note: O_DIRECT refused here ({e}); using fsync, so the OS cache may serve reads"
        );
        config.flush_method = FlushMethod::Fsync;
    }
    let data = dir.path().join("data");
    let r = warmup::run(&data, config.clone(), &cfg).unwrap_or_else(|e| panic!("e11: {e}"));
    eprintln!(
        "e11: {rows} rows ({} data pages), {hot_rows} hot rows, pool {} frames, dump_pct {dump_pct}, {:?}: steady state {:.0} reads/s, dump lists {} pages",
        r.data_pages, r.pool_frames, config.flush_method, r.steady_reads_per_sec, r.dumped_pages
    );
    for x in [&r.cold, &r.warm] {
        let curve: Vec<String> = x
            .intervals
            .iter()
            .map(|i| {
                format!(
                    "{:.0}%",
                    100.0 * i.reads_per_sec / r.steady_reads_per_sec.max(1e-9)
                )
            })
            .collect();
        eprintln!(
            "e11: {} restart: {} pages loaded, 90% after {}; per {:?}: {}",
            if x.load { "warm" } else { "cold" },
            x.pages_loaded,
            x.time_to_90.map_or("never".into(), |t| format!("{t:.2} s")),
            cfg.interval,
            curve.join(" ")
        );
    }

    let mut g = c.benchmark_group("e11");
    g.sample_size(10);
    g.warm_up_time(Duration::from_millis(if test_mode { 1 } else { 200 }));
    g.measurement_time(Duration::from_secs(if test_mode { 1 } else { 5 }));
    for (name, load) in [("open_cold", false), ("open_warm", true)] {
        let cfg = &cfg;
        let config = Config {
            buffer_pool_dump_at_shutdown: load,
            ..config.clone()
        };
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| open_and_probe(&data, &config, cfg, probe))
                    .sum()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, e11);
criterion_main!(benches);
