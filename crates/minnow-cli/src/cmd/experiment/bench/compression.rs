//! `minnow bench compression`: experiment E3, the same text-like table compressed (8 KiB
//! blocks, zlib level 6; optionally LZ4) and uncompressed, read cold with the buffer pool at
//! 1/8 of the uncompressed table ([`minnow_workload::e3`]).
//!
//! ```text
//! minnow bench compression [--rows 300000] [--layouts uncompressed,zlib6_8k,lz4_8k]
//!     [--workloads point,range,filesort,key_order] [--threads 4] [--secs 30]
//!     [--warmup-secs 0] [--max-queries N] [--rounds 1] [--range-min 10] [--range-max 100]
//!     [--filesort-rows N] [--filesort-stride 4] [--pool-divisor 8] [--pool-bytes N]
//!     [--dir DIR] [--set name=value ...] [--csv | --json]
//! ```
//!
//! Loads the `articles` table once per layout, each in its own subdirectory of the data
//! directory (named after the layout), with `flush_method=O_DIRECT` unless `--set` says
//! otherwise. The buffer pool for the reads is the uncompressed table's on-disk size divided
//! by `--pool-divisor` (or `--pool-bytes`), the same for every layout; the uncompressed
//! table is loaded for the sizing even when `--layouts` leaves it out and `--pool-bytes` is
//! not given. Then, `--rounds` times, for each workload, each layout in turn (so the layouts
//! of one workload run back to back) opens its database cold and runs the workload.
//!
//! Text prints the load of each layout (on-disk bytes and ratio), a line per run and, at the
//! end, the median of the rounds per workload and layout with its ratio to the uncompressed
//! table; `--csv` prints one row per run; `--json` the loads and every run.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use minnow::Config;
use minnow::FlushMethod;
use minnow_workload::e3::{self, E3Config, Layout, Prepared, RunReport, Workload};
use minnow_workload::spread::Spread;
use serde::Serialize;

use super::csv_out;
use super::{scratch_dir, usage, workload_err};
use crate::cli::Status;
use crate::output::CliError;
use crate::report::emit_json;

/// The flags of `minnow bench compression`.
#[derive(Debug, Args)]
pub struct CompressionArgs {
    /// Rows of `articles` (about 20 to a 16 KiB page).
    #[arg(long, default_value_t = 300_000)]
    pub rows: u64,
    /// Layouts, comma-separated: uncompressed, zlib6_8k, lz4_8k, zlib6_4k.
    #[arg(long, default_value = "uncompressed,zlib6_8k")]
    pub layouts: String,
    /// Workloads, comma-separated: point, range, filesort, key_order.
    #[arg(long, default_value = "point,range,filesort,key_order")]
    pub workloads: String,
    /// Reader threads.
    #[arg(long, default_value_t = 4)]
    pub threads: usize,
    /// Seconds of the measured window of each run.
    #[arg(long, default_value_t = 30.0)]
    pub secs: f64,
    /// Seconds of reads before the window (not counted).
    #[arg(long, default_value_t = 0.0)]
    pub warmup_secs: f64,
    /// End a window early after this many queries.
    #[arg(long)]
    pub max_queries: Option<u64>,
    /// Rounds (each runs every workload on every layout).
    #[arg(long, default_value_t = 1)]
    pub rounds: usize,
    /// Fewest rows of a range scan.
    #[arg(long, default_value_t = 10)]
    pub range_min: u64,
    /// Most rows of a range scan.
    #[arg(long, default_value_t = 100)]
    pub range_max: u64,
    /// Rows per filesort query (0: rows / 16).
    #[arg(long, default_value_t = 0)]
    pub filesort_rows: u64,
    /// Every how many ids a filesort query takes one.
    #[arg(long, default_value_t = 4)]
    pub filesort_stride: u64,
    /// The buffer pool is the uncompressed table's size divided by this.
    #[arg(long, default_value_t = 8)]
    pub pool_divisor: u64,
    /// The buffer pool in bytes (overrides --pool-divisor).
    #[arg(long)]
    pub pool_bytes: Option<usize>,
    /// The rows' seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Data directory to create the databases in (one subdirectory per layout; must not
    /// hold them; kept afterwards).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// A Config knob as name=value, by its InnoDB name (repeatable); the pool size comes
    /// from --pool-divisor or --pool-bytes.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// CSV output: one row per run.
    #[arg(long)]
    pub csv: bool,
}

#[derive(Debug, Serialize)]
struct CompressionReport {
    workload: &'static str,
    rows: u64,
    threads: usize,
    secs: f64,
    warmup_secs: f64,
    flush_method: String,
    pool_bytes: usize,
    filesort_rows: u64,
    filesort_stride: u64,
    loads: Vec<Prepared>,
    runs: Vec<RunReport>,
}

fn list<T>(s: &str, what: &str, parse: fn(&str) -> Option<T>) -> Result<Vec<T>, CliError> {
    s.split(',')
        .filter(|x| !x.trim().is_empty())
        .map(|x| parse(x).ok_or_else(|| usage(format!("unknown {what} `{x}`"))))
        .collect()
}

fn secs(s: f64, flag: &str) -> Result<Duration, CliError> {
    Duration::try_from_secs_f64(s).map_err(|e| usage(format!("{flag} {s}: {e}")))
}

const CSV_HEADER: &str = "round,layout,workload,threads,pool_bytes,seconds,queries,rows,qps,rows_per_sec,user_s,sys_s,readers_cpu_s,readers_runq_s,readers_blocked_s,system_user_pct,system_sys_pct,system_iowait_pct,system_idle_pct,pages_read,read_ahead,pool_hits,pool_misses,read_bytes,zip_hits,zip_misses,decompress_ops,decompress_us,payload_ratio,frames_lent,zip_blocks,io_bound";

fn csv_row(round: usize, r: &RunReport) -> Vec<String> {
    let c = &r.cpu;
    vec![
        round.to_string(),
        r.layout.name().to_string(),
        r.workload.name().to_string(),
        r.threads.to_string(),
        r.pool_bytes.to_string(),
        format!("{:.3}", r.seconds),
        r.queries.to_string(),
        r.rows.to_string(),
        format!("{:.1}", r.qps),
        format!("{:.1}", r.rows_per_sec),
        format!("{:.2}", c.user_s),
        format!("{:.2}", c.sys_s),
        format!("{:.2}", c.readers_cpu_s),
        format!("{:.2}", c.readers_runq_s),
        format!("{:.2}", c.readers_blocked_s),
        format!("{:.1}", c.system_user_pct),
        format!("{:.1}", c.system_sys_pct),
        format!("{:.1}", c.system_iowait_pct),
        format!("{:.1}", c.system_idle_pct),
        r.pages_read.to_string(),
        r.read_ahead.to_string(),
        r.pool_hits.to_string(),
        r.pool_misses.to_string(),
        r.read_bytes.map_or_else(String::new, |b| b.to_string()),
        r.zip_hits.to_string(),
        r.zip_misses.to_string(),
        r.decompress_ops.to_string(),
        format!("{:.2}", r.decompress_us),
        format!("{:.4}", r.payload_ratio),
        r.frames_lent.to_string(),
        r.zip_blocks.to_string(),
        r.io_bound.to_string(),
    ]
}

fn text_row(round: usize, r: &RunReport) -> String {
    let c = &r.cpu;
    let mut line = format!(
        "{:<12} {:<9} round {round}: {:>9.1} qps {:>10.1} rows/s | user {:.1}s sys {:.1}s | readers: cpu {:.1}s runq {:.1}s blocked {:.1}s | system us {:.0}% sy {:.0}% wa {:.0}% id {:.0}% | {} pages read",
        r.layout.name(),
        r.workload.name(),
        r.qps,
        r.rows_per_sec,
        c.user_s,
        c.sys_s,
        c.readers_cpu_s,
        c.readers_runq_s,
        c.readers_blocked_s,
        c.system_user_pct,
        c.system_sys_pct,
        c.system_iowait_pct,
        c.system_idle_pct,
        r.pages_read + r.read_ahead
    );
    if r.layout != Layout::Uncompressed {
        line.push_str(&format!(
            " | zip hits {} misses {}, {} inflates at {:.1} µs, {} frames lent",
            r.zip_hits, r.zip_misses, r.decompress_ops, r.decompress_us, r.frames_lent
        ));
    }
    line
}

fn median(v: Vec<f64>) -> f64 {
    Spread::of(&v).map_or(0.0, |s| s.median)
}

/// Runs `minnow bench compression`.
pub fn run(a: &CompressionArgs, json: bool, out: &mut dyn Write) -> Result<Status, CliError> {
    if json && a.csv {
        return Err(usage("--json and --csv cannot be used together"));
    }
    let layouts = list(&a.layouts, "layout", Layout::parse)?;
    let workloads = list(&a.workloads, "workload", Workload::parse)?;
    if layouts.is_empty() || workloads.is_empty() {
        return Err(usage("need at least one layout and one workload"));
    }
    let base = super::args::knob_config(
        Config {
            flush_method: FlushMethod::ODirect,
            buffer_pool_dump_at_shutdown: false,
            ..Config::default()
        },
        &a.set,
    )?;
    let cfg = E3Config {
        rows: a.rows,
        seed: a.seed,
        threads: a.threads,
        warmup: secs(a.warmup_secs, "--warmup-secs")?,
        duration: secs(a.secs, "--secs")?,
        max_queries: a.max_queries,
        range_min: a.range_min,
        range_max: a.range_max,
        filesort_rows: a.filesort_rows,
        filesort_stride: a.filesort_stride,
        pool_divisor: a.pool_divisor,
        buffer_pool_size: a.pool_bytes,
        base: base.clone(),
    };
    let (_temp, dir) = scratch_dir(&a.dir)?;
    let mut to_load = layouts.clone();
    if a.pool_bytes.is_none() && !to_load.contains(&Layout::Uncompressed) {
        to_load.insert(0, Layout::Uncompressed);
    }
    let mut loads = Vec::new();
    for &layout in &to_load {
        let p = e3::prepare(&dir.join(layout.name()), layout, &cfg).map_err(workload_err)?;
        loads.push(p);
    }
    let plain = loads
        .iter()
        .find(|p| p.layout == Layout::Uncompressed)
        .map(|p| p.table_bytes);
    let pool = cfg.pool_bytes(plain.unwrap_or(0));
    if a.csv {
        csv_out::header(out, CSV_HEADER)?;
    } else if !json {
        writeln!(
            out,
            "minnow bench compression: {} rows of articles, {} threads, {} s per run, buffer pool {} bytes, flush_method {:?}, filesort {} rows every {}th id",
            a.rows,
            a.threads,
            a.secs,
            pool,
            base.flush_method,
            cfg.filesort_len(),
            cfg.filesort_stride
        )?;
        for p in &loads {
            let ratio = plain.map_or(String::new(), |u| {
                format!(" ({:.3} of uncompressed)", p.table_bytes as f64 / u as f64)
            });
            writeln!(
                out,
                "load {:<12}: {} bytes in {}{ratio}; loaded in {:.1} s, closed in {:.1} s; {} compressions ({} failed, {:.1} µs each)",
                p.layout.name(),
                p.table_bytes,
                p.table_file,
                p.load_seconds,
                p.close_seconds,
                p.compress_ops,
                p.compress_failures,
                p.compress_us
            )?;
        }
    }
    let mut runs = Vec::new();
    for round in 0..a.rounds.max(1) {
        for &w in &workloads {
            for &layout in &layouts {
                let r = e3::run(&dir.join(layout.name()), layout, w, &cfg, pool)
                    .map_err(workload_err)?;
                if a.csv {
                    csv_out::row(out, csv_row(round, &r))?;
                } else if !json {
                    writeln!(out, "{}", text_row(round, &r))?;
                }
                out.flush()?;
                runs.push(r);
            }
        }
    }
    if json {
        emit_json(
            out,
            &CompressionReport {
                workload: "compression",
                rows: a.rows,
                threads: a.threads,
                secs: a.secs,
                warmup_secs: a.warmup_secs,
                flush_method: format!("{:?}", base.flush_method),
                pool_bytes: pool,
                filesort_rows: cfg.filesort_len(),
                filesort_stride: cfg.filesort_stride,
                loads,
                runs,
            },
        )?;
    } else if !a.csv {
        writeln!(out, "median over {} round(s):", a.rounds.max(1))?;
        let mut by: BTreeMap<(usize, usize), Vec<&RunReport>> = BTreeMap::new();
        for r in &runs {
            let wi = workloads.iter().position(|&w| w == r.workload).unwrap_or(0);
            let li = layouts.iter().position(|&l| l == r.layout).unwrap_or(0);
            by.entry((wi, li)).or_default().push(r);
        }
        for (wi, &w) in workloads.iter().enumerate() {
            let base_qps = by
                .get(&(
                    wi,
                    layouts
                        .iter()
                        .position(|&l| l == Layout::Uncompressed)
                        .unwrap_or(usize::MAX),
                ))
                .map(|v| median(v.iter().map(|r| r.qps).collect()));
            for (li, &l) in layouts.iter().enumerate() {
                let Some(v) = by.get(&(wi, li)) else { continue };
                let m = |f: fn(&RunReport) -> f64| median(v.iter().map(|r| f(r)).collect());
                let qps = m(|r| r.qps);
                let ratio =
                    base_qps.map_or(String::new(), |b| format!(" ({:.2}x)", qps / b.max(1e-9)));
                writeln!(
                    out,
                    "  {:<9} {:<12} {:>9.1} qps{ratio}, user {:.1} s, readers blocked {:.1} s, {:.0} pages read",
                    w.name(),
                    l.name(),
                    qps,
                    m(|r| r.cpu.user_s),
                    m(|r| r.cpu.readers_blocked_s),
                    m(|r| (r.pages_read + r.read_ahead) as f64)
                )?;
            }
        }
    }
    Ok(Status::Clean)
}
