//! MVCC under sysbench (issue 5): `update_index` and `read_write` with one transaction per
//! event (BEGIN, statements, COMMIT; `skip_trx` off, sysbench's default) at 1, 2, 4 and 8
//! threads.
//!
//! Each event of [`minnow_workload::oltp`] runs in a REPEATABLE READ transaction: reads
//! through its snapshot, updates with a locking read then the write, delete-inserts inside
//! the transaction; deadlocks and lock wait timeouts roll the event back and restart it, and
//! are counted. Settings: `flush_log_at_trx_commit=1` (every commit durable, InnoDB's
//! default), a buffer pool that holds the table, sysbench's `special` id distribution.
//!
//! ## What it prints
//!
//! - Criterion groups `mvcc/<mode>/<threads>`: time per event on one prepared database per
//!   mode (each sample runs a batch of events on that many threads).
//! - Then the **sweep**: for each mode and thread count, a fresh database and a run of `SECS`
//!   seconds; per run tps, 95th percentile latency, ignored errors per second (deadlocks,
//!   lock wait timeouts), the redo syncs per transaction, and what the run left in the
//!   history: the history list length (`Status::transactions.history_len`, committed update
//!   logs purge has not removed yet) as its maximum over the run and its value when the
//!   workers stop, the undo pages likewise, and the undo logs purge removed during the run
//!   (the background purge thread runs, `purge_threads = 1`, the default). A sampler thread
//!   takes a `Database::status()` snapshot every [`SAMPLE_EVERY`] (relaxed atomic loads, about
//!   a microsecond each: twenty a second, so it does not perturb the workers). Written
//!   also to `<criterion dir>/mvcc_oltp/results.json`.
//!
//! ## Knobs (environment variables)
//!
//! | variable | default | what |
//! |---|---|---|
//! | `MINNOW_MVCC_ROWS` | 10000 | rows per table |
//! | `MINNOW_MVCC_TABLES` | 1 | `sbtest` tables |
//! | `MINNOW_MVCC_THREADS` | 1,2,4,8 | thread counts of the sweep (and of the Criterion groups) |
//! | `MINNOW_MVCC_MODES` | update_index,read_write | sysbench scripts |
//! | `MINNOW_MVCC_SECS` | 3 | seconds per run of the sweep (and Criterion's measurement time) |
//! | `MINNOW_MVCC_COMMIT` | 1 | `flush_log_at_trx_commit` (0, 1 or 2) |
//! | `MINNOW_MVCC_CRITERION` | 1 | 0 skips the Criterion groups |
//! | `MINNOW_MVCC_PURGE` | 1 | `purge_threads`: 1 purges in the background, 0 never during the run (the history then grows; the A/B for what purge costs) |
//! | `MINNOW_BENCH_DIR` | the temp dir | where the databases go (use a real disk, not tmpfs) |
//!
//! Long runs with interval reports: `minnow bench oltp --mode update_index --threads 4
//! --time 60 --report-interval 5` (transactions are its default too).
//!
//! `cargo test --bench mvcc_oltp` (CI) runs each Criterion bench once and the
//! sweep for 0.2 s per run on a tiny table.

mod common;
use common::{bench_dir, criterion_dir, env_num, env_str};

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use minnow::FlushAtCommit;
use minnow::{Config, Database};
use minnow_workload::oltp::{self, Mode, OltpConfig, Summary};

#[derive(Debug, Clone)]
struct Settings {
    rows: u64,
    tables: usize,
    threads: Vec<usize>,
    modes: Vec<Mode>,
    secs: f64,
    commit: FlushAtCommit,
    purge_threads: usize,
    criterion: bool,
}

impl Settings {
    fn from_env() -> Settings {
        let test_mode = common::test_mode();
        let threads = env_str("MINNOW_MVCC_THREADS", "1,2,4,8")
            .split(',')
            .map(|t| {
                t.trim()
                    .parse::<usize>()
                    .unwrap_or_else(|e| panic!("MINNOW_MVCC_THREADS: {t}: {e}"))
                    .max(1)
            })
            .collect();
        let modes = env_str("MINNOW_MVCC_MODES", "update_index,read_write")
            .split(',')
            .map(|m| {
                m.parse::<Mode>()
                    .unwrap_or_else(|e| panic!("MINNOW_MVCC_MODES: {e}"))
            })
            .collect();
        let commit = match env_num("MINNOW_MVCC_COMMIT", 1u8) {
            0 => FlushAtCommit::Lazy,
            1 => FlushAtCommit::Sync,
            2 => FlushAtCommit::Write,
            n => panic!("MINNOW_MVCC_COMMIT={n}: expected 0, 1 or 2"),
        };
        let s = Settings {
            rows: env_num("MINNOW_MVCC_ROWS", 10_000u64).max(100),
            tables: env_num("MINNOW_MVCC_TABLES", 1usize).max(1),
            threads,
            modes,
            secs: env_num("MINNOW_MVCC_SECS", 3.0f64).max(0.1),
            commit,
            purge_threads: env_num("MINNOW_MVCC_PURGE", 1usize),
            criterion: env_num("MINNOW_MVCC_CRITERION", 1u8) != 0,
        };
        if test_mode {
            Settings {
                rows: s.rows.min(1_000),
                secs: 0.2,
                ..s
            }
        } else {
            s
        }
    }

    fn oltp(&self, mode: Mode, threads: usize) -> OltpConfig {
        OltpConfig {
            mode,
            tables: self.tables,
            table_size: self.rows,
            threads,
            time: Some(Duration::from_secs_f64(self.secs)),
            events: None,
            skip_trx: false,
            ..OltpConfig::default()
        }
    }

    fn config(&self) -> Config {
        Config {
            flush_log_at_trx_commit: self.commit,
            // The table fits: about 1 KiB per row with its index, at least 64 MiB.
            buffer_pool_size: ((self.rows as usize * self.tables) << 10).max(64 << 20),
            purge_threads: self.purge_threads,
            ..Config::default()
        }
    }
}

fn prepared(s: &Settings, dir: &tempfile::TempDir) -> Database {
    let db = Database::create(dir.path(), s.config()).unwrap_or_else(|e| panic!("create: {e}"));
    oltp::prepare(&db, &s.oltp(Mode::ReadWrite, 1), &mut |_| {})
        .unwrap_or_else(|e| panic!("prepare: {e}"));
    db
}

fn criterion_groups(c: &mut Criterion, s: &Settings) {
    for &mode in &s.modes {
        let dir = bench_dir();
        let db = prepared(s, &dir);
        let stop = AtomicBool::new(false);
        let mut g = c.benchmark_group(format!("mvcc/{mode}"));
        g.sample_size(10);
        g.warm_up_time(Duration::from_secs(1));
        g.measurement_time(Duration::from_secs_f64(s.secs));
        g.throughput(Throughput::Elements(1));
        for &threads in &s.threads {
            g.bench_function(BenchmarkId::from_parameter(threads), |b| {
                b.iter_custom(|iters| {
                    let cfg = OltpConfig {
                        time: None,
                        events: Some(iters),
                        ..s.oltp(mode, threads)
                    };
                    oltp::run(&db, &cfg, &stop, &mut |_| {})
                        .unwrap_or_else(|e| panic!("run: {e}"))
                        .elapsed
                })
            });
        }
        g.finish();
        db.close().unwrap_or_else(|e| panic!("close: {e}"));
    }
}

/// How often the sampler thread takes a status snapshot during a sweep run.
const SAMPLE_EVERY: Duration = Duration::from_millis(50);

/// What a run left in the history, from `Status::transactions`.
#[derive(Debug, Default, Clone, Copy)]
struct History {
    /// Largest history list length sampled during the run.
    max_len: u64,
    /// History list length when the workers stopped.
    end_len: u64,
    /// Largest number of undo pages sampled during the run.
    max_undo_pages: u64,
    /// Undo pages when the workers stopped.
    end_undo_pages: u64,
    /// Undo logs purge removed during the run.
    purged_logs: u64,
    /// Snapshots taken.
    samples: u64,
}

struct Run {
    summary: Summary,
    redo_syncs: u64,
    history: History,
}

fn one_run(s: &Settings, mode: Mode, threads: usize) -> Run {
    let dir = bench_dir();
    let db = prepared(s, &dir);
    let first = db.status().unwrap_or_else(|e| panic!("{e}"));
    let stop = AtomicBool::new(false);
    let done = AtomicBool::new(false);
    let (summary, mut history) = std::thread::scope(|scope| {
        let sampler = scope.spawn(|| {
            let mut h = History::default();
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(SAMPLE_EVERY);
                let t = db.status().unwrap_or_else(|e| panic!("{e}")).transactions;
                h.max_len = h.max_len.max(t.history_len);
                h.max_undo_pages = h.max_undo_pages.max(t.undo_pages);
                h.samples += 1;
            }
            h
        });
        let summary = oltp::run(&db, &s.oltp(mode, threads), &stop, &mut |_| {});
        done.store(true, Ordering::Relaxed);
        let history = sampler
            .join()
            .unwrap_or_else(|_| panic!("sampler panicked"));
        (summary.unwrap_or_else(|e| panic!("run: {e}")), history)
    });
    let status = db.status().unwrap_or_else(|e| panic!("{e}"));
    let t = &status.transactions;
    history.end_len = t.history_len;
    history.end_undo_pages = t.undo_pages;
    history.max_len = history.max_len.max(t.history_len);
    history.max_undo_pages = history.max_undo_pages.max(t.undo_pages);
    history.purged_logs = t.purge_logs - first.transactions.purge_logs;
    db.check().unwrap_or_else(|e| panic!("check: {e}"));
    db.close().unwrap_or_else(|e| panic!("close: {e}"));
    Run {
        summary,
        redo_syncs: status.redo.syncs - first.redo.syncs,
        history,
    }
}

fn sweep(s: &Settings) {
    let mut json = Vec::new();
    eprintln!(
        "mvcc sweep: {} table(s) x {} rows, {} s per run, flush_log_at_trx_commit={:?}, one transaction per event",
        s.tables, s.rows, s.secs, s.commit
    );
    eprintln!(
        "mode          threads      tps   p95_ms  err/s  deadlocks  timeouts  redo_syncs/trx  history_max  history_end  undo_pages_max  undo_pages_end  purged_logs"
    );
    for &mode in &s.modes {
        for &threads in &s.threads {
            let r = one_run(s, mode, threads);
            let m = &r.summary;
            let syncs_per = r.redo_syncs as f64 / m.events.max(1) as f64;
            let h = &r.history;
            eprintln!(
                "{:<13} {threads:>7} {:>8.0} {:>8.3} {:>6.1} {:>10} {:>9} {:>15.3} {:>12} {:>12} {:>15} {:>15} {:>12}",
                mode.name(),
                m.tps,
                m.latency.p95_ms,
                m.errors_per_sec,
                m.ignored.deadlocks,
                m.ignored.lock_wait_timeouts,
                syncs_per,
                h.max_len,
                h.end_len,
                h.max_undo_pages,
                h.end_undo_pages,
                h.purged_logs,
            );
            json.push(format!(
                "    {{\"mode\": \"{mode}\", \"threads\": {threads}, \"tps\": {:.2}, \"p95_ms\": {:.4}, \"events\": {}, \"errors_per_sec\": {:.3}, \"deadlocks\": {}, \"lock_wait_timeouts\": {}, \"redo_syncs\": {}, \"history_list_length_max\": {}, \"history_list_length_end\": {}, \"undo_pages_max\": {}, \"undo_pages_end\": {}, \"purged_logs\": {}, \"status_samples\": {}}}",
                m.tps,
                m.latency.p95_ms,
                m.events,
                m.errors_per_sec,
                m.ignored.deadlocks,
                m.ignored.lock_wait_timeouts,
                r.redo_syncs,
                h.max_len,
                h.end_len,
                h.max_undo_pages,
                h.end_undo_pages,
                h.purged_logs,
                h.samples,
            ));
        }
    }
    let out = criterion_dir().join("mvcc_oltp");
    let path = out.join("results.json");
    let doc = format!(
        "{{\n  \"rows\": {}, \"tables\": {}, \"secs\": {}, \"flush_log_at_trx_commit\": \"{:?}\",\n  \"runs\": [\n{}\n  ]\n}}\n",
        s.rows,
        s.tables,
        s.secs,
        s.commit,
        json.join(",\n")
    );
    match std::fs::create_dir_all(&out).and_then(|()| std::fs::write(&path, doc)) {
        Ok(()) => eprintln!("mvcc: written to {}", path.display()),
        Err(e) => eprintln!("mvcc: cannot write {}: {e}", path.display()),
    }
}

fn mvcc(c: &mut Criterion) {
    let s = Settings::from_env();
    if s.criterion {
        criterion_groups(c, &s);
    }
    sweep(&s);
}

criterion_group!(benches, mvcc);
criterion_main!(benches);
