//! `minnow bench parallel-load`: experiment E7, parallel multi-row inserts under
//! auto-increment lock modes 0, 1, 2 and with explicit keys
//! ([`minnow_workload::parallel_load`]).
//!
//! ```text
//! minnow bench parallel-load [--rows 20000] [--threads 1,2,4,8] [--rows-per-statement 100]
//!     [--keys autoinc0,autoinc1,autoinc2,explicit] [--flush-log-at-trx-commit 0]
//!     [--set name=value ...] [--csv | --json]
//! ```
//!
//! Each (key mode, thread count) pair loads a fresh database in a temporary directory under
//! the current one (so on its file system) and prints rows per second, the process's CPU
//! seconds, the AUTO-INC lock's waits and grants, and two ratios: rows per second over the
//! same key mode's at the first thread count (does this mode scale?) and over the first load
//! of the run (autoinc0 at one thread by default: the article's one client, so the column
//! reads as the article's 1 -> 1.21 -> 2.99 shape, which the text output prints below the
//! table).

use std::io::Write;

use clap::Args;
use minnow::Config;
use minnow_workload::parallel_load::{self, KeyMode, LoadResult};
use serde::Serialize;

use super::args::{KnobArgs, ratio, thread_list};
use super::csv_out;
use super::{scratch_dir, usage, workload_err};
use crate::cli::Status;
use crate::output::CliError;
use crate::report::emit_json;

/// The flags of `minnow bench parallel-load`.
#[derive(Debug, Args)]
pub struct LoadArgs {
    /// Rows per load.
    #[arg(long, default_value_t = 20_000)]
    pub rows: u64,
    /// Thread counts, comma-separated.
    #[arg(long, default_value = "1,2,4")]
    pub threads: String,
    /// Rows per INSERT statement.
    #[arg(long, default_value_t = 100)]
    pub rows_per_statement: usize,
    /// Key modes, comma-separated: autoinc0, autoinc1, autoinc2, explicit.
    #[arg(long, default_value = "autoinc0,autoinc1,autoinc2,explicit")]
    pub keys: String,
    /// Knobs (`--flush-log-at-trx-commit 0` for the CPU-bound run).
    #[command(flatten)]
    pub knobs: KnobArgs,
    /// CSV output: one row per load.
    #[arg(long)]
    pub csv: bool,
}

/// The article's numbers, printed under the text table for comparison.
const ARTICLE: &str = "seed 004 (13M rows): 1 client 7,200 rows/s; threads with AUTO_INCREMENT (traditional AUTO-INC lock) 8,700 (x1.21); threads with explicit keys 21,500 (x2.99)";

/// One load with its ratios.
#[derive(Debug, Serialize)]
struct LoadRow {
    #[serde(flatten)]
    result: LoadResult,
    /// Rows per second over the same key mode's at the first thread count.
    scaling: f64,
    /// Rows per second over the first load's (the first key mode at the first thread count:
    /// autoinc0 at 1 thread by default, the article's one client).
    vs_first_run: f64,
}

/// Runs `minnow bench parallel-load`.
pub fn run(a: &LoadArgs, json: bool, out: &mut dyn Write) -> Result<Status, CliError> {
    if json && a.csv {
        return Err(usage("--json and --csv cannot be used together"));
    }
    let config = a.knobs.config(Config::default())?;
    let threads = thread_list(&a.threads)?;
    let keys: Vec<KeyMode> = a
        .keys
        .split(',')
        .map(|k| k.parse::<KeyMode>().map_err(workload_err))
        .collect::<Result<_, _>>()?;
    if a.csv {
        csv_out::header(
            out,
            "keys,threads,rows,seconds,rows_per_sec,cpu_seconds,lock_waits,lock_grants,scaling,vs_first_run",
        )?;
    } else if !json {
        writeln!(
            out,
            "{:<10} {:>7} {:>12} {:>10} {:>11} {:>11} {:>9} {:>9}",
            "keys",
            "threads",
            "rows/s",
            "cpu s",
            "lock waits",
            "lock grants",
            "x mode 1st",
            "x run 1st"
        )?;
    }
    let mut results: Vec<LoadRow> = Vec::new();
    for &n in &threads {
        for &k in &keys {
            let (_temp, dir) = scratch_dir(&None)?;
            let r = parallel_load::run(&dir, config.clone(), k, n, a.rows, a.rows_per_statement)
                .map_err(workload_err)?;
            let first_of_mode = results.iter().find(|p| p.result.keys == r.keys);
            let scaling = ratio(
                r.rows_per_sec,
                first_of_mode.map_or(r.rows_per_sec, |p| p.result.rows_per_sec),
            );
            let vs_first_run = ratio(
                r.rows_per_sec,
                results
                    .first()
                    .map_or(r.rows_per_sec, |p| p.result.rows_per_sec),
            );
            let cpu = r
                .cpu_seconds
                .map_or_else(String::new, |c| format!("{c:.3}"));
            if a.csv {
                csv_out::row(
                    out,
                    [
                        r.keys.to_string(),
                        r.threads.to_string(),
                        r.rows.to_string(),
                        format!("{:.4}", r.seconds),
                        format!("{:.1}", r.rows_per_sec),
                        cpu.clone(),
                        r.lock_waits.to_string(),
                        r.lock_grants.to_string(),
                        format!("{scaling:.3}"),
                        format!("{vs_first_run:.3}"),
                    ],
                )?;
            } else if !json {
                writeln!(
                    out,
                    "{:<10} {:>7} {:>12.0} {:>10} {:>11} {:>11} {scaling:>9.2} {vs_first_run:>9.2}",
                    r.keys, r.threads, r.rows_per_sec, cpu, r.lock_waits, r.lock_grants
                )?;
            }
            out.flush()?;
            results.push(LoadRow {
                result: r,
                scaling,
                vs_first_run,
            });
        }
    }
    if json {
        emit_json(out, &results)?;
    } else if !a.csv {
        writeln!(out, "{ARTICLE}")?;
    }
    Ok(Status::Clean)
}
