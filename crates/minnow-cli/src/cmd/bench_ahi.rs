//! `minnow bench ahi`: experiment E4, the adaptive hash index and thread concurrency matrix
//! of seed article 003, printed as the article prints it.
//!
//! ```text
//! minnow bench ahi [--rows 1000000] [--working-set 100] [--threads 1,2,4,8]
//!     [--queries 2000] [--warmup 500] [--dir DIR] [--set name=value ...] [--json]
//! ```
//!
//! One database is created and loaded ([`minnow_workload::slap`]); then for each thread count,
//! query (q1, q4, q5) and shape (point, LIMIT 10, LIMIT 1000) the three configurations run one
//! after another in the same process: `base` (adaptive hash index on, no concurrency limit),
//! `noahi` (hash off) and `itc` (hash on, `thread_concurrency = 32`, `concurrency_tickets =
//! 500`), switched at runtime, each after a warm-up. The table gives base's mean response
//! time and, as the article does, each other configuration's response time divided by
//! base's (above 1: slower than base). `--queries` is per thread and per cell, divided by 10
//! for LIMIT 1000 ranges.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use minnow::{Config, Database};
use minnow_workload::slap::{self, Query, Setup, Shape, SlapConfig};
use serde::Serialize;

use crate::cli::Status;
use crate::output::CliError;
use crate::report::emit_json;

/// The flags of `minnow bench ahi`.
#[derive(Debug, Args)]
pub struct AhiArgs {
    /// Rows in the table.
    #[arg(long, default_value_t = 1_000_000)]
    pub rows: u64,
    /// Start keys are drawn from the first this many keys.
    #[arg(long, default_value_t = 100)]
    pub working_set: u64,
    /// Thread counts, comma-separated.
    #[arg(long, default_value = "1,2,4,8", value_delimiter = ',')]
    pub threads: Vec<usize>,
    /// Queries per thread per measured cell (a tenth of it for LIMIT 1000).
    #[arg(long, default_value_t = 2000)]
    pub queries: u64,
    /// Warm-up queries per thread before each cell (a tenth of it for LIMIT 1000).
    #[arg(long, default_value_t = 500)]
    pub warmup: u64,
    /// Only these queries (q1,q4,q5).
    #[arg(long, default_value = "q1,q4,q5", value_delimiter = ',')]
    pub query: Vec<String>,
    /// Data directory to create the database in (must not hold one; kept afterwards).
    /// Default: a temporary directory under the current directory, removed afterwards.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// A Config knob as name=value, by its InnoDB name (repeatable; see `bench oltp`).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
}

/// One cell of the matrix.
#[derive(Debug, Serialize)]
struct Cell {
    threads: usize,
    query: &'static str,
    shape: String,
    base_us: f64,
    noahi_us: f64,
    itc_us: f64,
    noahi_over_base: f64,
    itc_over_base: f64,
    base_qps: f64,
    noahi_qps: f64,
}

fn bench_err(e: impl std::fmt::Display) -> CliError {
    CliError::Bench(e.to_string())
}

/// Runs the matrix and prints it.
pub fn run(a: &AhiArgs, json: bool, out: &mut dyn Write) -> Result<Status, CliError> {
    let config = super::bench_args::knob_config(
        Config {
            buffer_pool_size: 512 << 20,
            flush_log_at_trx_commit: minnow::FlushAtCommit::Lazy,
            ..Config::default()
        },
        &a.set,
    )?;
    let queries: Vec<Query> = a
        .query
        .iter()
        .map(|q| match q.as_str() {
            "q1" => Ok(Query::Q1),
            "q4" => Ok(Query::Q4),
            "q5" => Ok(Query::Q5),
            other => Err(bench_err(format!("--query {other}: expected q1, q4 or q5"))),
        })
        .collect::<Result<_, _>>()?;
    if a.threads.contains(&0) {
        return Err(bench_err("--threads: every count must be at least 1"));
    }
    let (_temp, dir) = match &a.dir {
        Some(d) => (None, d.clone()),
        None => {
            let cwd = std::env::current_dir().map_err(bench_err)?;
            let t = tempfile::Builder::new()
                .prefix("minnow-bench-ahi-")
                .tempdir_in(cwd)
                .map_err(bench_err)?;
            let p = t.path().to_path_buf();
            (Some(t), p)
        }
    };
    let db = Database::create(&dir, config)
        .map_err(|e| CliError::Database(format!("{}: {e}", dir.display())))?;
    let cfg = SlapConfig {
        rows: a.rows,
        working_set: a.working_set,
    };
    if !json {
        writeln!(
            out,
            "minnow bench ahi: {} rows, working set {}, {} queries/thread/cell; loading...",
            a.rows, a.working_set, a.queries
        )?;
    }
    slap::prepare(&db, &cfg).map_err(bench_err)?;
    let mut cells = Vec::new();
    if !json {
        writeln!(
            out,
            "{:>7} {:>5} {:>9} {:>10} {:>11} {:>9}",
            "threads", "query", "shape", "base us", "noahi/base", "itc/base"
        )?;
    }
    for &threads in &a.threads {
        for &q in &queries {
            for shape in Shape::ALL {
                let scale = if shape.rows() >= 1000 { 10 } else { 1 };
                let (n, w) = ((a.queries / scale).max(1), a.warmup / scale);
                let m = |setup| {
                    slap::measure(&db, &cfg, setup, q, shape, threads, w, n).map_err(bench_err)
                };
                let (base, noahi, itc) = (m(Setup::Base)?, m(Setup::NoAhi)?, m(Setup::Itc)?);
                let c = Cell {
                    threads,
                    query: q.name(),
                    shape: shape.name(),
                    base_us: base.response_us(),
                    noahi_us: noahi.response_us(),
                    itc_us: itc.response_us(),
                    noahi_over_base: noahi.response_us() / base.response_us(),
                    itc_over_base: itc.response_us() / base.response_us(),
                    base_qps: base.qps(),
                    noahi_qps: noahi.qps(),
                };
                if !json {
                    writeln!(
                        out,
                        "{:>7} {:>5} {:>9} {:>10.2} {:>11.3} {:>9.3}",
                        c.threads, c.query, c.shape, c.base_us, c.noahi_over_base, c.itc_over_base
                    )?;
                }
                cells.push(c);
            }
        }
    }
    Setup::Base.apply(&db).map_err(bench_err)?;
    let ahi = db.ahi_stats().map_err(bench_err)?;
    if json {
        #[derive(Serialize)]
        struct Report<'a> {
            rows: u64,
            working_set: u64,
            cells: &'a [Cell],
            ahi_entries: u64,
            ahi_memory_bytes: u64,
            ahi_hits: u64,
            ahi_misses: u64,
        }
        emit_json(
            out,
            &Report {
                rows: a.rows,
                working_set: a.working_set,
                cells: &cells,
                ahi_entries: ahi.entries,
                ahi_memory_bytes: ahi.memory_bytes,
                ahi_hits: ahi.hits,
                ahi_misses: ahi.misses,
            },
        )?;
    } else {
        writeln!(
            out,
            "adaptive hash index: {} entries, {} pages hashed, {} KiB, {} hits, {} misses",
            ahi.entries,
            ahi.pages_hashed,
            ahi.memory_bytes >> 10,
            ahi.hits,
            ahi.misses
        )?;
    }
    db.close().map_err(bench_err)?;
    Ok(Status::Clean)
}
