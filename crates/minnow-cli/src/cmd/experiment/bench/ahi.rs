//! `minnow bench ahi`: experiment E4, the adaptive hash index and thread concurrency matrix
//! of seed article 003, printed as the article prints it.
//!
//! ```text
//! minnow bench ahi [--rows 1000000] [--working-set 100] [--threads 1,2,4,8]
//!     [--queries 2000] [--warmup 500] [--rounds 3] [--dir DIR] [--set name=value ...] [--json]
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
//!
//! ## Rounds, rotation and spread
//!
//! On a shared machine one run of a cell says little: the same cell read 0.40 once and 1.91
//! the next time. So each cell runs `--rounds` times (default 3), and round `r` runs the three
//! configurations in an order rotated by `r` (base, noahi, itc; then noahi, itc, base; ...),
//! so that none of them always runs first, on a cold cache, or last, after the others warmed
//! it. Each round gives its own ratios (the two configurations of a ratio ran moments apart);
//! the table prints their median and, in brackets, the lowest and highest.
//!
//! A cell where the hash plays no part should read 1.0. The bench does not guess which cells
//! those are: it counts the hash's hits during base's runs, and marks a cell whose base runs
//! made no hit (`-` in the `hash` column). Such a cell's noahi/base spread should contain 1.0;
//! the last line says how many do.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use minnow::{Config, Database};
use minnow_workload::slap::{self, Query, Setup, Shape, SlapConfig};
use minnow_workload::spread::Spread;
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
    /// Rounds per cell, the configurations' order rotated each round (at least 1).
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
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

/// One round of a cell: the three configurations' mean response times, in microseconds.
#[derive(Debug, Clone, Copy, Serialize)]
struct Round {
    base_us: f64,
    noahi_us: f64,
    itc_us: f64,
}

/// One cell of the matrix, over its rounds.
#[derive(Debug, Serialize)]
struct Cell {
    threads: usize,
    query: &'static str,
    shape: String,
    rounds: Vec<Round>,
    /// Median of base's response times.
    base_us: f64,
    noahi_over_base: Spread,
    itc_over_base: Spread,
    /// Hash hits during base's runs (0: the hash plays no part, the ratios should be 1).
    base_hash_hits: u64,
}

/// The order of the three configurations in round `r`: base, noahi, itc rotated by `r`.
fn rotation(r: usize) -> [Setup; 3] {
    let mut order = Setup::ALL;
    order.rotate_left(r % Setup::ALL.len());
    order
}

fn bench_err(e: impl std::fmt::Display) -> CliError {
    CliError::Bench(e.to_string())
}

/// Runs the matrix and prints it.
pub fn run(a: &AhiArgs, json: bool, out: &mut dyn Write) -> Result<Status, CliError> {
    let config = super::args::knob_config(
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
    if a.rounds == 0 {
        return Err(bench_err("--rounds: at least 1"));
    }
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
            "{:>7} {:>5} {:>9} {:>10} {:>21} {:>21} {:>4}",
            "threads", "query", "shape", "base us", "noahi/base", "itc/base", "hash"
        )?;
    }
    for &threads in &a.threads {
        for &q in &queries {
            for shape in Shape::ALL {
                let c = cell(&db, &cfg, a, threads, q, shape)?;
                if !json {
                    writeln!(
                        out,
                        "{:>7} {:>5} {:>9} {:>10.2} {:>21} {:>21} {:>4}",
                        c.threads,
                        c.query,
                        c.shape,
                        c.base_us,
                        c.noahi_over_base.to_string(),
                        c.itc_over_base.to_string(),
                        if c.base_hash_hits == 0 { "-" } else { "used" }
                    )?;
                }
                cells.push(c);
            }
        }
    }
    let unused: Vec<&Cell> = cells.iter().filter(|c| c.base_hash_hits == 0).collect();
    let at_one = unused
        .iter()
        .filter(|c| c.noahi_over_base.contains(1.0))
        .count();
    Setup::Base.apply(&db).map_err(bench_err)?;
    let ahi = db.ahi_stats().map_err(bench_err)?;
    if json {
        #[derive(Serialize)]
        struct Report<'a> {
            rows: u64,
            working_set: u64,
            rounds: usize,
            cells: &'a [Cell],
            cells_without_hash: usize,
            cells_without_hash_at_one: usize,
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
                rounds: a.rounds,
                cells: &cells,
                cells_without_hash: unused.len(),
                cells_without_hash_at_one: at_one,
                ahi_entries: ahi.entries,
                ahi_memory_bytes: ahi.memory_bytes,
                ahi_hits: ahi.hits,
                ahi_misses: ahi.misses,
            },
        )?;
    } else {
        writeln!(
            out,
            "cells where base made no hash hit: {}, of which {} have 1.0 within their \
             noahi/base range",
            unused.len(),
            at_one
        )?;
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

/// Measures one cell: `a.rounds` rounds, each running the three configurations in the order
/// [`rotation`] gives, each after its warm-up.
fn cell(
    db: &Database,
    cfg: &SlapConfig,
    a: &AhiArgs,
    threads: usize,
    q: Query,
    shape: Shape,
) -> Result<Cell, CliError> {
    let scale = if shape.rows() >= 1000 { 10 } else { 1 };
    let (n, w) = ((a.queries / scale).max(1), a.warmup / scale);
    let mut rounds = Vec::with_capacity(a.rounds);
    let mut base_hash_hits = 0;
    for r in 0..a.rounds {
        let mut round = Round {
            base_us: 0.0,
            noahi_us: 0.0,
            itc_us: 0.0,
        };
        for setup in rotation(r) {
            let hits_before = db.ahi_stats().map_err(bench_err)?.hits;
            let result =
                slap::measure(db, cfg, setup, q, shape, threads, w, n).map_err(bench_err)?;
            let us = result.response_us();
            match setup {
                Setup::Base => {
                    // (saturating: switching the hash off and on may reset its counters)
                    let hits = db.ahi_stats().map_err(bench_err)?.hits;
                    base_hash_hits += hits.saturating_sub(hits_before);
                    round.base_us = us;
                }
                Setup::NoAhi => round.noahi_us = us,
                Setup::Itc => round.itc_us = us,
            }
        }
        rounds.push(round);
    }
    let ratio = |f: fn(&Round) -> f64| {
        let v: Vec<f64> = rounds.iter().map(|r| f(r) / r.base_us).collect();
        Spread::of(&v).ok_or_else(|| bench_err("no rounds"))
    };
    let base: Vec<f64> = rounds.iter().map(|r| r.base_us).collect();
    Ok(Cell {
        threads,
        query: q.name(),
        shape: shape.name(),
        base_us: Spread::of(&base).map_or(0.0, |s| s.median),
        noahi_over_base: ratio(|r| r.noahi_us)?,
        itc_over_base: ratio(|r| r.itc_us)?,
        base_hash_hits,
        rounds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_configuration_leads_one_round_in_three() {
        let firsts: Vec<Setup> = (0..3).map(|r| rotation(r)[0]).collect();
        assert_eq!(firsts, [Setup::Base, Setup::NoAhi, Setup::Itc]);
        for r in 0..3 {
            let mut order = rotation(r).to_vec();
            order.sort_by_key(|s| *s as u8);
            assert_eq!(order, [Setup::Base, Setup::NoAhi, Setup::Itc]);
        }
    }
}
