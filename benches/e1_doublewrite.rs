//! Experiment E1: the doublewrite buffer on and off under a write-heavy OLTP load.
//!
//! The article ran sysbench's OLTP with writes dominating, `innodb_flush_log_at_trx_commit=0`
//! and O_DIRECT, and found turning doublewrite off gave more than +50% on spinning disks and
//! little on SSD. The reference on this project's machine kind: MariaDB 10.11, sysbench
//! `oltp_update_index`, 11,194 tps with doublewrite on against 13,328 off (84%). minnow's
//! target: on keeps at least 95% of off's throughput.
//!
//! This bench runs [`minnow_workload::oltp`] in `update_index` mode (sysbench's
//! `oltp_update_index`: one `UPDATE sbtest1 SET k=k+1 WHERE id=?` per event) on one `sbtest`
//! table, with `flush_log_at_trx_commit=0`, O_DIRECT (if the file system refuses it, the bench
//! says so and uses fsync), and doublewrite on, then off.
//!
//! ## What it prints
//!
//! - Criterion groups `e1/update_index/dblwr_on` and `.../dblwr_off`: the time per event on
//!   one prepared database per setting (each sample runs a batch of events on `THREADS`
//!   threads; the throughput is events per second).
//! - Then the **same-run comparison**: `ROUNDS` rounds, each preparing a fresh database per
//!   setting and running the load for `SECS` seconds, on then off (the order alternates per
//!   round, so drift on a shared host hits both). Per round it prints tps, the 95th percentile
//!   latency, the pages the buffer pool flushed and the bytes the process wrote
//!   (`/proc/self/io`: data files, doublewrite segments and redo together); at the end the
//!   median tps of each setting and the ratio on / off, the number to hold against the 95%
//!   target and InnoDB's 84%. The figures are also written to
//!   `<criterion dir>/e1_doublewrite/results.json`.
//!
//! The host shares its cores with other processes, so absolute tps move from run to run;
//! the ratio of rounds run back to back is the figure to read.
//!
//! ## Knobs (environment variables)
//!
//! | variable | default | what |
//! |---|---|---|
//! | `MINNOW_E1_ROWS` | 10000 | rows in `sbtest1` |
//! | `MINNOW_E1_THREADS` | 2 | worker threads |
//! | `MINNOW_E1_SECS` | 3 | seconds per setting and round (and Criterion's measurement time) |
//! | `MINNOW_E1_ROUNDS` | 3 | rounds of the same-run comparison |
//! | `MINNOW_E1_POOL_MB` | 64 | buffer pool MiB (the article's data fitted in the pool) |
//! | `MINNOW_E1_LOG_MB` | 8 | redo log MiB: a small log makes checkpoints drive the flushing, as the article's 32M..512M logs did at its scale |
//! | `MINNOW_BENCH_DIR` | the temp dir | where the databases go (use a real disk, not tmpfs) |
//!
//! `cargo bench --bench e1_doublewrite -- --test` (CI) runs each Criterion bench once and the
//! comparison for one short round on a tiny table.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use minnow::dblwr::DoublewriteMode;
use minnow::io::FlushMethod;
use minnow::redo::FlushAtCommit;
use minnow::{Config, Database};
use minnow_workload::io_stats::IoSnapshot;
use minnow_workload::oltp::{self, Mode, OltpConfig};

/// The bench's settings, from the environment.
#[derive(Debug, Clone, Copy)]
struct Settings {
    rows: u64,
    threads: usize,
    secs: f64,
    rounds: usize,
    pool_mb: usize,
    log_mb: u64,
}

fn env_num<T: std::str::FromStr>(name: &str, default: T) -> T
where
    T::Err: std::fmt::Display,
{
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .replace('_', "")
            .parse()
            .unwrap_or_else(|e| panic!("{name}={v}: {e}")),
        Err(_) => default,
    }
}

impl Settings {
    fn from_env() -> Settings {
        let test_mode = std::env::args().any(|a| a == "--test");
        let s = Settings {
            rows: env_num("MINNOW_E1_ROWS", 10_000u64).max(100),
            threads: env_num("MINNOW_E1_THREADS", 2usize).max(1),
            secs: env_num("MINNOW_E1_SECS", 3.0f64).max(0.1),
            rounds: env_num("MINNOW_E1_ROUNDS", 3usize).max(1),
            pool_mb: env_num("MINNOW_E1_POOL_MB", 64usize).max(1),
            log_mb: env_num("MINNOW_E1_LOG_MB", 8u64).max(1),
        };
        if test_mode {
            // One quick pass: CI runs every bench this way.
            Settings {
                rows: s.rows.min(1_000),
                secs: 0.2,
                rounds: 1,
                ..s
            }
        } else {
            s
        }
    }

    fn oltp(&self) -> OltpConfig {
        OltpConfig {
            mode: Mode::UpdateIndex,
            tables: 1,
            table_size: self.rows,
            threads: self.threads,
            time: Some(Duration::from_secs_f64(self.secs)),
            events: None,
            ..OltpConfig::default()
        }
    }

    fn config(&self, doublewrite: DoublewriteMode, flush_method: FlushMethod) -> Config {
        Config {
            doublewrite,
            flush_method,
            flush_log_at_trx_commit: FlushAtCommit::Lazy,
            buffer_pool_size: self.pool_mb << 20,
            log_file_size: self.log_mb << 20,
            ..Config::default()
        }
    }
}

fn bench_parent() -> Option<PathBuf> {
    std::env::var_os("MINNOW_BENCH_DIR").map(PathBuf::from)
}

fn bench_dir() -> tempfile::TempDir {
    match bench_parent() {
        Some(dir) => tempfile::tempdir_in(dir),
        None => tempfile::tempdir(),
    }
    .unwrap_or_else(|e| panic!("cannot create a bench directory: {e}"))
}

/// O_DIRECT if a database can be created with it here, else fsync (with a note).
fn flush_method(s: &Settings) -> FlushMethod {
    let dir = bench_dir();
    match Database::create(
        dir.path(),
        s.config(DoublewriteMode::On, FlushMethod::ODirect),
    ) {
        Ok(db) => {
            db.close().unwrap_or_else(|e| panic!("close: {e}"));
            FlushMethod::ODirect
        }
        Err(e) => {
            eprintln!(
                "e1: note: O_DIRECT is not available in {} ({e}); using fsync (buffered writes)",
                dir.path().display()
            );
            FlushMethod::Fsync
        }
    }
}

/// A fresh database with `sbtest1` loaded.
fn prepared(path: &Path, s: &Settings, mode: DoublewriteMode, fm: FlushMethod) -> Database {
    let db = Database::create(path, s.config(mode, fm)).unwrap_or_else(|e| panic!("create: {e}"));
    oltp::prepare(&db, &s.oltp(), &mut |_| {}).unwrap_or_else(|e| panic!("prepare: {e}"));
    db
}

fn name(mode: DoublewriteMode) -> &'static str {
    match mode {
        DoublewriteMode::On => "dblwr_on",
        DoublewriteMode::Off => "dblwr_off",
        DoublewriteMode::DetectOnly => "dblwr_detect_only",
    }
}

/// Criterion: time per event, on one prepared database per setting.
fn criterion_groups(c: &mut Criterion, s: &Settings, fm: FlushMethod) {
    let mut g = c.benchmark_group("e1/update_index");
    g.sample_size(10);
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs_f64(s.secs));
    g.throughput(Throughput::Elements(1));
    for mode in [DoublewriteMode::On, DoublewriteMode::Off] {
        let dir = bench_dir();
        let db = prepared(dir.path(), s, mode, fm);
        let stop = AtomicBool::new(false);
        g.bench_function(name(mode), |b| {
            b.iter_custom(|iters| {
                let cfg = OltpConfig {
                    time: None,
                    events: Some(iters),
                    ..s.oltp()
                };
                oltp::run(&db, &cfg, &stop, &mut |_| {})
                    .unwrap_or_else(|e| panic!("run: {e}"))
                    .elapsed
            })
        });
        db.close().unwrap_or_else(|e| panic!("close: {e}"));
    }
    g.finish();
}

/// One timed run of one setting in a fresh database.
#[derive(Debug, Clone, Copy)]
struct RoundResult {
    tps: f64,
    p95_ms: f64,
    events: u64,
    pages_flushed: u64,
    redo_bytes: u64,
    write_bytes: Option<u64>,
}

fn one_round(s: &Settings, mode: DoublewriteMode, fm: FlushMethod) -> RoundResult {
    let dir = bench_dir();
    let db = prepared(dir.path(), s, mode, fm);
    let before = IoSnapshot::take(&db).unwrap_or_else(|e| panic!("{e}"));
    let stop = AtomicBool::new(false);
    let sum = oltp::run(&db, &s.oltp(), &stop, &mut |_| {}).unwrap_or_else(|e| panic!("run: {e}"));
    let io = IoSnapshot::take(&db)
        .unwrap_or_else(|e| panic!("{e}"))
        .since(&before);
    db.check().unwrap_or_else(|e| panic!("check: {e}"));
    db.close().unwrap_or_else(|e| panic!("close: {e}"));
    RoundResult {
        tps: sum.tps,
        p95_ms: sum.latency.p95_ms,
        events: sum.events,
        pages_flushed: io.pages_flushed,
        redo_bytes: io.redo_lsn,
        write_bytes: io.process_write_bytes,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn criterion_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return PathBuf::from(home);
    }
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(t) => PathBuf::from(t).join("criterion"),
        None => PathBuf::from("target/criterion"),
    }
}

/// The same-run comparison: rounds of on and off back to back.
fn comparison(s: &Settings, fm: FlushMethod) {
    let mut on = Vec::new();
    let mut off = Vec::new();
    let mut json = Vec::new();
    for round in 0..s.rounds {
        let order = if round % 2 == 0 {
            [DoublewriteMode::On, DoublewriteMode::Off]
        } else {
            [DoublewriteMode::Off, DoublewriteMode::On]
        };
        for mode in order {
            let r = one_round(s, mode, fm);
            let data = r.pages_flushed * s.config(mode, fm).page_size.bytes() as u64;
            let wb = r
                .write_bytes
                .map_or_else(|| "unknown".to_owned(), |b| b.to_string());
            eprintln!(
                "e1 round {round} {}: {:.0} tps, p95 {:.3} ms, {} events, {} pages flushed ({data} bytes), redo {} bytes, process wrote {wb} bytes (rest, doublewrite and redo rewrites: {})",
                name(mode),
                r.tps,
                r.p95_ms,
                r.events,
                r.pages_flushed,
                r.redo_bytes,
                r.write_bytes.map_or_else(
                    || "unknown".to_owned(),
                    |b| (b as i64 - data as i64 - r.redo_bytes as i64).to_string()
                ),
            );
            json.push(format!(
                "    {{\"round\": {round}, \"setting\": \"{}\", \"tps\": {:.2}, \"p95_ms\": {:.4}, \"events\": {}, \"pages_flushed\": {}, \"data_bytes\": {data}, \"redo_bytes\": {}, \"process_write_bytes\": {}}}",
                name(mode),
                r.tps,
                r.p95_ms,
                r.events,
                r.pages_flushed,
                r.redo_bytes,
                r.write_bytes.map_or_else(|| "null".to_owned(), |b| b.to_string())
            ));
            match mode {
                DoublewriteMode::On => on.push(r),
                _ => off.push(r),
            }
        }
    }
    let tps = |v: &[RoundResult]| median(v.iter().map(|r| r.tps).collect());
    let per_event = |v: &[RoundResult]| {
        let events: u64 = v.iter().map(|r| r.events).sum();
        let bytes: Option<u64> = v.iter().map(|r| r.write_bytes).sum();
        let pages: u64 = v.iter().map(|r| r.pages_flushed).sum();
        (
            bytes.map(|b| b as f64 / events.max(1) as f64),
            pages as f64 / events.max(1) as f64,
        )
    };
    let (on_tps, off_tps) = (tps(&on), tps(&off));
    let ratio = if off_tps > 0.0 { on_tps / off_tps } else { 0.0 };
    let ((on_b, on_p), (off_b, off_p)) = (per_event(&on), per_event(&off));
    let fmt_b = |b: Option<f64>| b.map_or_else(|| "unknown".to_owned(), |b| format!("{b:.0}"));
    eprintln!(
        "e1 summary: update_index, {} rows, {} threads, {} s x {} rounds, flush_log_at_trx_commit=0, {}: \
         dblwr on {on_tps:.0} tps, off {off_tps:.0} tps (medians) -> on/off {ratio:.3} \
         (target >= 0.95; MariaDB 10.11 on this machine kind: 0.84); written per event: on {} bytes \
         ({on_p:.3} pages flushed), off {} bytes ({off_p:.3} pages flushed)",
        s.rows,
        s.threads,
        s.secs,
        s.rounds,
        fm,
        fmt_b(on_b),
        fmt_b(off_b),
    );
    let out = criterion_dir().join("e1_doublewrite");
    let path = out.join("results.json");
    let doc = format!(
        "{{\n  \"rows\": {}, \"threads\": {}, \"secs\": {}, \"rounds\": {}, \"flush_method\": \"{fm}\",\n  \"on_tps\": {on_tps:.2}, \"off_tps\": {off_tps:.2}, \"ratio\": {ratio:.4},\n  \"runs\": [\n{}\n  ]\n}}\n",
        s.rows,
        s.threads,
        s.secs,
        s.rounds,
        json.join(",\n")
    );
    match std::fs::create_dir_all(&out).and_then(|()| std::fs::write(&path, doc)) {
        Ok(()) => eprintln!("e1: written to {}", path.display()),
        Err(e) => eprintln!("e1: cannot write {}: {e}", path.display()),
    }
}

fn e1(c: &mut Criterion) {
    let s = Settings::from_env();
    let fm = flush_method(&s);
    criterion_groups(c, &s, fm);
    comparison(&s, fm);
}

criterion_group!(benches, e1);
criterion_main!(benches);
