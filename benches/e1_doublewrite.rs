//! Experiment E1: the doublewrite buffer on and off under a write-heavy OLTP load, and the
//! article's variations (detect-only, page cleaners, flush neighbours, a spinning disk,
//! ext4 `data=journal`).
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
//! says so and uses fsync), **`skip_trx` on** (each statement its own transaction, no
//! BEGIN/COMMIT: how E1's recorded numbers were taken, kept so they stay reproducible; the
//! transactional sweep is `benches/mvcc_oltp.rs`).
//!
//! ## What it prints
//!
//! - Criterion groups `e1/update_index/dblwr_on` and `.../dblwr_off`: the time per event on
//!   one prepared database per setting (each sample runs a batch of events on `THREADS`
//!   threads; the throughput is events per second).
//! - Then the **same-run comparison** of the variants in `MINNOW_E1_VARIANTS` (default
//!   `doublewrite=on,doublewrite=off`): `ROUNDS` rounds, each preparing a fresh database per
//!   variant and running the load for `SECS` seconds, the variants back to back (the order
//!   is reversed every other round, so drift on a shared host hits all). Per round and
//!   variant it prints tps, the 95th percentile latency, pages flushed per second, doublewrite
//!   batches and pages, fsyncs (every `sync_data`/`sync_all` of every file: redo, doublewrite
//!   segments, data, counted by `minnow_workload::io_count`), the bytes the process wrote; at the
//!   end the medians per variant and each one's tps ratio to the first variant. The figures
//!   are also written to `<criterion dir>/e1_doublewrite/results.json`.
//!
//! ## Variants
//!
//! A variant is a `+`-joined list of items, each either a `Config` knob as
//! `minnow bench oltp --set` takes it (`doublewrite=detect_only`, `page_cleaners=4`,
//! `buffer_pool_instances=4`, `flush_neighbors=1`, `flush_method=fsync`, ...) or one of:
//!
//! - `disk=hdd`: every file goes through [`minnow::backend::LatencyModel`] with the 7200 rpm
//!   profile, sleeping for each IO's modelled cost (**emulated**, and labelled so);
//! - `fs=journal`: the database goes under `MINNOW_E1_JOURNAL_DIR`, which must be an ext4 file
//!   system mounted `data=journal` (the bench does not mount anything: see docs/EXPERIMENTS.md
//!   for the loop-mount commands; without the variable the variant fails with that message).
//!
//! Knobs not given keep the bench's settings above. Note that minnow's page cleaners each own
//! whole buffer pool instances, so `page_cleaners=N` flushes in parallel only with
//! `buffer_pool_instances` >= N.
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
//! | `MINNOW_E1_SECS` | 3 | seconds per variant and round (and Criterion's measurement time) |
//! | `MINNOW_E1_ROUNDS` | 3 | rounds of the same-run comparison |
//! | `MINNOW_E1_POOL_MB` | 64 | buffer pool MiB (the article's data fitted in the pool) |
//! | `MINNOW_E1_LOG_MB` | 8 | redo log MiB: a small log makes checkpoints drive the flushing, as the article's 32M..512M logs did at its scale |
//! | `MINNOW_E1_VARIANTS` | `doublewrite=on,doublewrite=off` | the variants compared (see above) |
//! | `MINNOW_E1_CRITERION` | 1 | 0 skips the Criterion groups (long variant sweeps) |
//! | `MINNOW_E1_JOURNAL_DIR` | unset | an ext4 `data=journal` mount, for `fs=journal` |
//! | `MINNOW_BENCH_DIR` | the temp dir | where the databases go (use a real disk, not tmpfs) |
//!
//! `cargo test --bench e1_doublewrite` (CI) runs each Criterion bench once and the
//! comparison for one short round on a tiny table.

mod common;
use common::{bench_dir, bench_dir_in, bench_parent, criterion_dir, env_num, median};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use minnow::DoublewriteMode;
use minnow::FlushAtCommit;
use minnow::{Config, Database, IoBackend};
use minnow_io::{Backend, DiskProfile, FlushMethod, LatencyModel};
use minnow_workload::io_count::{Counting, Tally};
use minnow_workload::io_stats::IoSnapshot;
use minnow_workload::oltp::{self, Mode, OltpConfig};

/// The bench's settings, from the environment.
#[derive(Debug, Clone)]
struct Settings {
    rows: u64,
    threads: usize,
    secs: f64,
    rounds: usize,
    pool_mb: usize,
    log_mb: u64,
    variants: Vec<String>,
    criterion: bool,
}

impl Settings {
    fn from_env() -> Settings {
        let test_mode = common::test_mode();
        let variants = std::env::var("MINNOW_E1_VARIANTS")
            .unwrap_or_else(|_| "doublewrite=on,doublewrite=off".to_owned())
            .split(',')
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
            .collect();
        let s = Settings {
            rows: env_num("MINNOW_E1_ROWS", 10_000u64).max(100),
            threads: env_num("MINNOW_E1_THREADS", 2usize).max(1),
            secs: env_num("MINNOW_E1_SECS", 3.0f64).max(0.1),
            rounds: env_num("MINNOW_E1_ROUNDS", 3usize).max(1),
            pool_mb: env_num("MINNOW_E1_POOL_MB", 64usize).max(1),
            log_mb: env_num("MINNOW_E1_LOG_MB", 8u64).max(1),
            variants,
            criterion: env_num("MINNOW_E1_CRITERION", 1u8) != 0,
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
            // How E1's recorded numbers were taken: no BEGIN/COMMIT.
            skip_trx: true,
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

/// O_DIRECT if a database can be created with it in `parent`, else fsync (with a note).
fn flush_method_in(s: &Settings, parent: Option<PathBuf>) -> FlushMethod {
    let dir = bench_dir_in(parent);
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
fn prepared_with(path: &Path, s: &Settings, config: Config) -> Database {
    let db = Database::create(path, config).unwrap_or_else(|e| panic!("create: {e}"));
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
        let db = prepared_with(dir.path(), s, s.config(mode, fm));
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

// ---- Variants ----

/// One variant, parsed.
struct Variant {
    label: String,
    config: Config,
    /// Where its databases go.
    parent: Option<PathBuf>,
    /// The emulated disk, if any.
    model: Option<Arc<LatencyModel>>,
    /// Writes and syncs per file class (the bench reads the syncs of all files).
    tally: Arc<Tally>,
}

fn variant(s: &Settings, label: &str, default_fm: FlushMethod) -> Variant {
    let mut config = s.config(DoublewriteMode::On, default_fm);
    let mut parent = bench_parent();
    let mut hdd = false;
    let mut fm_given = false;
    for item in label.split('+').map(str::trim) {
        match item {
            "disk=hdd" => hdd = true,
            "fs=journal" => {
                parent = Some(std::env::var_os("MINNOW_E1_JOURNAL_DIR").map(PathBuf::from).unwrap_or_else(|| {
                    panic!("variant {label}: fs=journal needs MINNOW_E1_JOURNAL_DIR, an ext4 file system mounted data=journal (see docs/EXPERIMENTS.md, E1)")
                }));
            }
            knob => {
                fm_given |= knob.to_ascii_lowercase().contains("flush_method");
                config
                    .apply(knob)
                    .unwrap_or_else(|e| panic!("variant {label}: {e}"));
            }
        }
    }
    if !fm_given && parent != bench_parent() {
        config.flush_method = flush_method_in(s, parent.clone());
    }
    let mut inner = config
        .backend()
        .unwrap_or_else(|e| panic!("variant {label}: {e}"));
    let mut model = None;
    if hdd {
        let m = Arc::new(LatencyModel::new(inner, DiskProfile::spinning_disk(), true));
        inner = Arc::clone(&m) as Arc<dyn Backend>;
        model = Some(m);
    }
    let (counting, tally) = Counting::around(inner);
    config.io_backend = IoBackend::Custom(counting);
    config
        .validate()
        .unwrap_or_else(|e| panic!("variant {label}: {e}"));
    Variant {
        label: label.to_owned(),
        config,
        parent,
        model,
        tally,
    }
}

/// One timed run of one variant in a fresh database.
#[derive(Debug, Clone, Copy)]
struct RoundResult {
    tps: f64,
    p95_ms: f64,
    events: u64,
    secs: f64,
    pages_flushed: u64,
    dblwr_batches: u64,
    dblwr_pages: u64,
    syncs: u64,
    redo_bytes: u64,
    write_bytes: Option<u64>,
    /// Emulated disk busy time, seconds (emulated variants only).
    disk_busy_s: Option<f64>,
}

fn one_round(s: &Settings, v: &Variant) -> RoundResult {
    let dir = bench_dir_in(v.parent.clone());
    let db = prepared_with(dir.path(), s, v.config.clone());
    let before = IoSnapshot::take(&db).unwrap_or_else(|e| panic!("{e}"));
    let st0 = db.status().unwrap_or_else(|e| panic!("{e}"));
    let syncs0 = v.tally.snapshot().syncs();
    let busy0 = v.model.as_ref().map(|m| m.stats().busy_ns);
    let stop = AtomicBool::new(false);
    let sum = oltp::run(&db, &s.oltp(), &stop, &mut |_| {}).unwrap_or_else(|e| panic!("run: {e}"));
    let io = IoSnapshot::take(&db)
        .unwrap_or_else(|e| panic!("{e}"))
        .since(&before);
    let st1 = db.status().unwrap_or_else(|e| panic!("{e}"));
    let syncs = v.tally.snapshot().syncs() - syncs0;
    let disk_busy_s = v
        .model
        .as_ref()
        .zip(busy0)
        .map(|(m, b)| (m.stats().busy_ns - b) as f64 / 1e9);
    let (b0, b1) = (
        st0.doublewrite.unwrap_or_default(),
        st1.doublewrite.unwrap_or_default(),
    );
    db.check().unwrap_or_else(|e| panic!("check: {e}"));
    db.close().unwrap_or_else(|e| panic!("close: {e}"));
    RoundResult {
        tps: sum.tps,
        p95_ms: sum.latency.p95_ms,
        events: sum.events,
        secs: sum.elapsed.as_secs_f64(),
        pages_flushed: io.pages_flushed,
        dblwr_batches: b1.batches - b0.batches,
        dblwr_pages: b1.pages - b0.pages,
        syncs,
        redo_bytes: io.redo_lsn,
        write_bytes: io.process_write_bytes,
        disk_busy_s,
    }
}

/// The same-run comparison: rounds of every variant back to back.
fn comparison(s: &Settings, fm: FlushMethod) {
    let variants: Vec<Variant> = s.variants.iter().map(|l| variant(s, l, fm)).collect();
    let mut results: Vec<Vec<RoundResult>> = vec![Vec::new(); variants.len()];
    let mut json = Vec::new();
    for round in 0..s.rounds {
        let mut order: Vec<usize> = (0..variants.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for i in order {
            let v = &variants[i];
            let r = one_round(s, v);
            let per_s = |n: u64| n as f64 / r.secs.max(1e-9);
            let wb = r
                .write_bytes
                .map_or_else(|| "unknown".to_owned(), |b| b.to_string());
            let label = match &v.model {
                Some(m) => format!("{} [{}]", v.label, m.label()),
                None => v.label.clone(),
            };
            eprintln!(
                "e1 round {round} {label} ({}): {:.0} tps, p95 {:.3} ms, {} events, {:.0} pages flushed/s, dblwr {} batches {} pages, {:.1} fsyncs/s, redo {} bytes, process wrote {wb} bytes{}",
                v.config.flush_method,
                r.tps,
                r.p95_ms,
                r.events,
                per_s(r.pages_flushed),
                r.dblwr_batches,
                r.dblwr_pages,
                per_s(r.syncs),
                r.redo_bytes,
                r.disk_busy_s
                    .map_or_else(String::new, |b| format!(", emulated disk busy {b:.2} s")),
            );
            json.push(format!(
                "    {{\"round\": {round}, \"variant\": \"{}\", \"emulated\": {}, \"flush_method\": \"{}\", \"tps\": {:.2}, \"p95_ms\": {:.4}, \"events\": {}, \"secs\": {:.3}, \"pages_flushed\": {}, \"dblwr_batches\": {}, \"dblwr_pages\": {}, \"fsyncs\": {}, \"redo_bytes\": {}, \"process_write_bytes\": {}, \"emulated_disk_busy_s\": {}}}",
                v.label,
                v.model.is_some(),
                v.config.flush_method,
                r.tps,
                r.p95_ms,
                r.events,
                r.secs,
                r.pages_flushed,
                r.dblwr_batches,
                r.dblwr_pages,
                r.syncs,
                r.redo_bytes,
                r.write_bytes.map_or_else(|| "null".to_owned(), |b| b.to_string()),
                r.disk_busy_s.map_or_else(|| "null".to_owned(), |b| format!("{b:.3}")),
            ));
            results[i].push(r);
        }
    }
    let base = median(results[0].iter().map(|r| r.tps).collect());
    let mut summary = Vec::new();
    for (v, rs) in variants.iter().zip(&results) {
        let med = |f: &dyn Fn(&RoundResult) -> f64| median(rs.iter().map(f).collect());
        let tps = med(&|r| r.tps);
        let line = format!(
            "{}{}: {tps:.0} tps (x{:.3} of {}), p95 {:.3} ms, {:.0} pages flushed/s, {:.1} dblwr batches/s, {:.0} dblwr pages/s, {:.1} fsyncs/s, {:.0} bytes written per event",
            v.label,
            if v.model.is_some() {
                " (emulated disk)"
            } else {
                ""
            },
            if base > 0.0 { tps / base } else { 0.0 },
            variants[0].label,
            med(&|r| r.p95_ms),
            med(&|r| r.pages_flushed as f64 / r.secs),
            med(&|r| r.dblwr_batches as f64 / r.secs),
            med(&|r| r.dblwr_pages as f64 / r.secs),
            med(&|r| r.syncs as f64 / r.secs),
            med(&|r| r
                .write_bytes
                .map_or(f64::NAN, |b| b as f64 / r.events.max(1) as f64)),
        );
        eprintln!("e1 summary: {line}");
        summary.push(format!(
            "    {{\"variant\": \"{}\", \"median_tps\": {tps:.2}, \"ratio\": {:.4}}}",
            v.label,
            if base > 0.0 { tps / base } else { 0.0 }
        ));
    }
    eprintln!(
        "e1: update_index, {} rows, {} threads, {} s x {} rounds, flush_log_at_trx_commit=0, skip_trx on (target: doublewrite on >= 0.95 of off; MariaDB 10.11 on this machine kind: 0.84)",
        s.rows, s.threads, s.secs, s.rounds
    );
    let out = criterion_dir().join("e1_doublewrite");
    let path = out.join("results.json");
    let doc = format!(
        "{{\n  \"rows\": {}, \"threads\": {}, \"secs\": {}, \"rounds\": {},\n  \"summary\": [\n{}\n  ],\n  \"runs\": [\n{}\n  ]\n}}\n",
        s.rows,
        s.threads,
        s.secs,
        s.rounds,
        summary.join(",\n"),
        json.join(",\n")
    );
    match std::fs::create_dir_all(&out).and_then(|()| std::fs::write(&path, doc)) {
        Ok(()) => eprintln!("e1: written to {}", path.display()),
        Err(e) => eprintln!("e1: cannot write {}: {e}", path.display()),
    }
}

fn e1(c: &mut Criterion) {
    let s = Settings::from_env();
    let fm = flush_method_in(&s, bench_parent());
    if s.criterion {
        criterion_groups(c, &s, fm);
    }
    comparison(&s, fm);
}

criterion_group!(benches, e1);
criterion_main!(benches);
