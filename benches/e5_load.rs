//! Experiment E5, second half: a single-thread bulk load with page checksums `none`,
//! `crc32` and `innodb`.
//!
//! The seed article (004, "On checksums") found that disabling checksums made a
//! single-thread data load 7% faster (InnoDB computed two formulas per page then). This bench
//! loads sysbench's `sbtest1` ([`minnow_workload::oltp::prepare`]'s rows) into a fresh
//! database whose pages are written with each algorithm, then flushes every dirty page, so
//! every page of the table is checksummed at least once; the buffer pool is smaller than
//! the table, so pages are also written (and some read back and verified) during the load.
//! Two ways to load:
//!
//! - `load`: [`minnow::Table::load`], the bottom-up bulk build (what `prepare` uses);
//! - `insert`: one autocommit `INSERT` per row in key order, `flush_log_at_trx_commit=0`
//!   (the article's load was a stream of inserts).
//!
//! ## What it prints
//!
//! - Criterion groups `e5_load/<way>/<algorithm>`: the time of one load + flush of
//!   `MINNOW_E5_CRITERION_ROWS` rows in a fresh database.
//! - Then the **same-run comparison**: `ROUNDS` rounds, each loading `ROWS` rows once per
//!   algorithm (order reversed every other round); per run rows/s, the process's CPU time
//!   (all threads, from `/proc/self/stat`: on a shared host, CPU time is steadier than wall
//!   time) and pages flushed; at the end the median rows/s and rows per CPU second per
//!   algorithm and their ratios to `crc32` (minnow's default) and to `none`. Written also to `<criterion dir>/e5_load/results.json`.
//!
//! ## Knobs (environment variables)
//!
//! | variable | default | what |
//! |---|---|---|
//! | `MINNOW_E5_ROWS` | 100000 | rows per load in the comparison |
//! | `MINNOW_E5_CRITERION_ROWS` | 10000 | rows per load in the Criterion groups |
//! | `MINNOW_E5_ROUNDS` | 3 | rounds of the comparison |
//! | `MINNOW_E5_POOL_MB` | 8 | buffer pool MiB (smaller than the table) |
//! | `MINNOW_E5_WAYS` | load,insert | which loads |
//! | `MINNOW_BENCH_DIR` | the temp dir | where the databases go (use a real disk, not tmpfs) |
//!
//! Long loads from the command line: `minnow bench oltp --load-only --table-size 1000000
//! --set checksum_algorithm=innodb` (the `load` way).
//!
//! `cargo test --bench e5_load` (CI) runs each Criterion bench once and one round
//! of the comparison on a tiny table.

mod common;
use common::{bench_dir, criterion_dir, env_num, median};

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use minnow::ChecksumAlgorithm;
use minnow::FlushAtCommit;
use minnow::inspect::Internals;
use minnow::{Config, Database};
use minnow_workload::oltp::{self, OltpConfig};

const ALGORITHMS: [ChecksumAlgorithm; 3] = [
    ChecksumAlgorithm::None,
    ChecksumAlgorithm::Crc32,
    ChecksumAlgorithm::Innodb,
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Way {
    Load,
    Insert,
}

impl Way {
    fn name(self) -> &'static str {
        match self {
            Way::Load => "load",
            Way::Insert => "insert",
        }
    }
}

#[derive(Debug, Clone)]
struct Settings {
    rows: u64,
    criterion_rows: u64,
    rounds: usize,
    pool_mb: usize,
    ways: Vec<Way>,
}

impl Settings {
    fn from_env() -> Settings {
        let test_mode = common::test_mode();
        let ways = std::env::var("MINNOW_E5_WAYS")
            .unwrap_or_else(|_| "load,insert".to_owned())
            .split(',')
            .map(|w| match w.trim() {
                "load" => Way::Load,
                "insert" => Way::Insert,
                other => panic!("MINNOW_E5_WAYS: `{other}` is not load or insert"),
            })
            .collect();
        let s = Settings {
            rows: env_num("MINNOW_E5_ROWS", 100_000u64).max(100),
            criterion_rows: env_num("MINNOW_E5_CRITERION_ROWS", 10_000u64).max(100),
            rounds: env_num("MINNOW_E5_ROUNDS", 3usize).max(1),
            pool_mb: env_num("MINNOW_E5_POOL_MB", 8usize).max(1),
            ways,
        };
        if test_mode {
            Settings {
                rows: s.rows.min(2_000),
                criterion_rows: s.criterion_rows.min(1_000),
                rounds: 1,
                ..s
            }
        } else {
            s
        }
    }

    fn config(&self, algorithm: ChecksumAlgorithm) -> Config {
        Config {
            checksum_algorithm: algorithm,
            buffer_pool_size: self.pool_mb << 20,
            flush_log_at_trx_commit: FlushAtCommit::Lazy,
            ..Config::default()
        }
    }
}

struct LoadResult {
    elapsed: Duration,
    /// CPU time of the whole process (all threads, user + system) during the load, seconds;
    /// `None` where `/proc/self/stat` does not exist.
    cpu_s: Option<f64>,
    pages_flushed: u64,
}

/// User + system CPU time of this process so far, in seconds, from `/proc/self/stat`
/// (fields 14 and 15, in clock ticks of `USER_HZ`, which is 100 on Linux).
fn process_cpu_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces: count fields after its closing paren.
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) as f64 / 100.0)
}

/// Creates a database, loads `rows` rows of `sbtest1` the given way and flushes every dirty
/// page; times the load and the flush (not the create or the close).
fn load_once(s: &Settings, algorithm: ChecksumAlgorithm, way: Way, rows: u64) -> LoadResult {
    let dir = bench_dir();
    let db =
        Database::create(dir.path(), s.config(algorithm)).unwrap_or_else(|e| panic!("create: {e}"));
    let cfg = OltpConfig {
        tables: 1,
        table_size: rows,
        ..OltpConfig::default()
    };
    let flushed = |db: &Database| {
        let st = db.buffer_pool().unwrap_or_else(|e| panic!("{e}")).stats();
        st.lru_flushed + st.flush_list_flushed
    };
    let before = flushed(&db);
    let cpu0 = process_cpu_s();
    let t0 = Instant::now();
    match way {
        Way::Load => {
            oltp::prepare(&db, &cfg, &mut |_| {}).unwrap_or_else(|e| panic!("load: {e}"));
        }
        Way::Insert => {
            let t = db
                .create_table(oltp::table_def(1))
                .unwrap_or_else(|e| panic!("create table: {e}"));
            for id in 1..=rows {
                t.insert(&oltp::row(cfg.seed, 1, id, rows))
                    .unwrap_or_else(|e| panic!("insert: {e}"));
            }
        }
    }
    db.buffer_pool()
        .unwrap_or_else(|e| panic!("{e}"))
        .flush_all()
        .unwrap_or_else(|e| panic!("flush: {e}"));
    let elapsed = t0.elapsed();
    let cpu_s = process_cpu_s().zip(cpu0).map(|(b, a)| b - a);
    let pages_flushed = flushed(&db) - before;
    db.close().unwrap_or_else(|e| panic!("close: {e}"));
    LoadResult {
        elapsed,
        cpu_s,
        pages_flushed,
    }
}

fn criterion_groups(c: &mut Criterion, s: &Settings) {
    for &way in &s.ways {
        let mut g = c.benchmark_group(format!("e5_load/{}", way.name()));
        g.sample_size(10);
        g.warm_up_time(Duration::from_millis(500));
        g.measurement_time(Duration::from_secs(3));
        for algorithm in ALGORITHMS {
            g.bench_function(algorithm.name(), |b| {
                b.iter_custom(|iters| {
                    (0..iters)
                        .map(|_| load_once(s, algorithm, way, s.criterion_rows).elapsed)
                        .sum()
                })
            });
        }
        g.finish();
    }
}

fn comparison(s: &Settings) {
    let mut json = Vec::new();
    let mut summary = Vec::new();
    for &way in &s.ways {
        let mut rates: Vec<Vec<f64>> = vec![Vec::new(); ALGORITHMS.len()];
        let mut cpu_rates: Vec<Vec<f64>> = vec![Vec::new(); ALGORITHMS.len()];
        for round in 0..s.rounds {
            let mut order: Vec<usize> = (0..ALGORITHMS.len()).collect();
            if round % 2 == 1 {
                order.reverse();
            }
            for i in order {
                let a = ALGORITHMS[i];
                let r = load_once(s, a, way, s.rows);
                let rate = s.rows as f64 / r.elapsed.as_secs_f64();
                let cpu_rate = r.cpu_s.map(|c| s.rows as f64 / c.max(0.01));
                eprintln!(
                    "e5_load round {round} {} {}: {} rows in {:.3} s ({rate:.0} rows/s), CPU {} s ({} rows per CPU second), {} pages flushed",
                    way.name(),
                    a.name(),
                    s.rows,
                    r.elapsed.as_secs_f64(),
                    r.cpu_s
                        .map_or_else(|| "unknown".to_owned(), |c| format!("{c:.2}")),
                    cpu_rate.map_or_else(|| "unknown".to_owned(), |c| format!("{c:.0}")),
                    r.pages_flushed
                );
                json.push(format!(
                    "    {{\"round\": {round}, \"way\": \"{}\", \"algorithm\": \"{}\", \"rows\": {}, \"secs\": {:.4}, \"cpu_secs\": {}, \"rows_per_sec\": {rate:.1}, \"pages_flushed\": {}}}",
                    way.name(),
                    a.name(),
                    s.rows,
                    r.elapsed.as_secs_f64(),
                    r.cpu_s.map_or_else(|| "null".to_owned(), |c| format!("{c:.3}")),
                    r.pages_flushed
                ));
                rates[i].push(rate);
                if let Some(c) = cpu_rate {
                    cpu_rates[i].push(c);
                }
            }
        }
        let med: Vec<f64> = rates.into_iter().map(median).collect();
        let cpu: Vec<f64> = cpu_rates.into_iter().map(median).collect();
        let (none, crc) = (med[0], med[1]);
        for ((a, m), c) in ALGORITHMS.iter().zip(&med).zip(&cpu) {
            eprintln!(
                "e5_load summary {} {}: {m:.0} rows/s (median of {}), x{:.3} of crc32, x{:.3} of none; {c:.0} rows per CPU second, x{:.3} of crc32, x{:.3} of none",
                way.name(),
                a.name(),
                s.rounds,
                m / crc,
                m / none,
                c / cpu[1],
                c / cpu[0]
            );
            summary.push(format!(
                "    {{\"way\": \"{}\", \"algorithm\": \"{}\", \"median_rows_per_sec\": {m:.1}}}",
                way.name(),
                a.name()
            ));
        }
    }
    let out = criterion_dir().join("e5_load");
    let path = out.join("results.json");
    let doc = format!(
        "{{\n  \"rows\": {}, \"rounds\": {}, \"pool_mb\": {},\n  \"summary\": [\n{}\n  ],\n  \"runs\": [\n{}\n  ]\n}}\n",
        s.rows,
        s.rounds,
        s.pool_mb,
        summary.join(",\n"),
        json.join(",\n")
    );
    match std::fs::create_dir_all(&out).and_then(|()| std::fs::write(&path, doc)) {
        Ok(()) => eprintln!("e5_load: written to {}", path.display()),
        Err(e) => eprintln!("e5_load: cannot write {}: {e}", path.display()),
    }
}

fn e5(c: &mut Criterion) {
    let s = Settings::from_env();
    criterion_groups(c, &s);
    comparison(&s);
}

criterion_group!(benches, e5);
criterion_main!(benches);
