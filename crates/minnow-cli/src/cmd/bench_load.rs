//! `minnow bench parallel-load`: experiment E7, parallel multi-row inserts under
//! auto-increment lock modes 0, 1, 2 and with explicit keys
//! ([`minnow_workload::parallel_load`]).
//!
//! ```text
//! minnow bench parallel-load [--rows 20000] [--threads 1,2,4] [--rows-per-statement 100]
//!     [--keys autoinc0,autoinc1,autoinc2,explicit] [--set name=value ...] [--csv | --json]
//! ```
//!
//! Each (key mode, thread count) pair loads a fresh database in a temporary directory under
//! the current one (so on its file system) and prints rows per second, the process's CPU
//! seconds and the AUTO-INC lock's waits and grants.

use std::io::Write;

use clap::Args;
use minnow::Config;
use minnow_workload::knobs;
use minnow_workload::parallel_load::{self, KeyMode, LoadResult};

use super::bench::{scratch_dir, usage, workload_err};
use crate::cli::Status;
use crate::output::{CliError, emit_json};

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
    /// A Config knob as name=value, by its InnoDB name (repeatable).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// CSV output: one row per load.
    #[arg(long)]
    pub csv: bool,
}

/// Runs `minnow bench parallel-load`.
pub fn run(a: &LoadArgs, json: bool, out: &mut dyn Write) -> Result<Status, CliError> {
    if json && a.csv {
        return Err(usage("--json and --csv cannot be used together"));
    }
    let mut config = Config::default();
    for s in &a.set {
        knobs::apply_setting(&mut config, s).map_err(|e| usage(format!("--set {s}: {e}")))?;
    }
    config
        .validate()
        .map_err(|e| usage(format!("--set: {e}")))?;
    let threads: Vec<usize> = a
        .threads
        .split(',')
        .map(|t| {
            t.trim()
                .parse::<usize>()
                .ok()
                .filter(|&n| (1..=1024).contains(&n))
                .ok_or_else(|| usage(format!("--threads: `{t}` is not a count in 1..=1024")))
        })
        .collect::<Result<_, _>>()?;
    let keys: Vec<KeyMode> = a
        .keys
        .split(',')
        .map(|k| k.parse::<KeyMode>().map_err(workload_err))
        .collect::<Result<_, _>>()?;
    if a.csv {
        writeln!(
            out,
            "keys,threads,rows,seconds,rows_per_sec,cpu_seconds,lock_waits,lock_grants"
        )?;
    } else if !json {
        writeln!(
            out,
            "{:<10} {:>7} {:>12} {:>10} {:>11} {:>11}",
            "keys", "threads", "rows/s", "cpu s", "lock waits", "lock grants"
        )?;
    }
    let mut results: Vec<LoadResult> = Vec::new();
    for &n in &threads {
        for &k in &keys {
            let (_temp, dir) = scratch_dir(&None)?;
            let r = parallel_load::run(&dir, config.clone(), k, n, a.rows, a.rows_per_statement)
                .map_err(workload_err)?;
            let cpu = r
                .cpu_seconds
                .map_or_else(String::new, |c| format!("{c:.3}"));
            if a.csv {
                writeln!(
                    out,
                    "{},{},{},{:.4},{:.1},{cpu},{},{}",
                    r.keys,
                    r.threads,
                    r.rows,
                    r.seconds,
                    r.rows_per_sec,
                    r.lock_waits,
                    r.lock_grants
                )?;
            } else if !json {
                writeln!(
                    out,
                    "{:<10} {:>7} {:>12.0} {:>10} {:>11} {:>11}",
                    r.keys, r.threads, r.rows_per_sec, cpu, r.lock_waits, r.lock_grants
                )?;
            }
            out.flush()?;
            results.push(r);
        }
    }
    if json {
        emit_json(out, &results)?;
    }
    Ok(Status::Clean)
}
