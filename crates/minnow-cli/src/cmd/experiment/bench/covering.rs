//! `minnow bench covering`: experiment E8, one user's revisions on a cold buffer pool through
//! a covering and a non-covering index ([`minnow_workload::revisions`]).
//!
//! ```text
//! minnow bench covering [--rows 100000] [--user-revisions 1000] [--rounds 3] [--dir DIR]
//!     [--set name=value ...] [--csv | --json]
//! ```
//!
//! Creates the database (with `flush_method=O_DIRECT` unless `--set` says otherwise, so the
//! OS cache does not serve the cold reads), loads the `revision` table, closes it, then runs
//! each plan `--rounds` times, alternating, each on a freshly opened database that loads no
//! buffer pool dump ([`revisions::run_cold`]), and prints the time and the pages read per run,
//! with the pages the query brought in by kind (B-tree index id and level, or page type).

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use minnow::FlushMethod;
use minnow::{Config, Database};
use minnow_workload::revisions::{self, ColdRun, Plan};
use serde::Serialize;

use super::csv_out;
use super::{scratch_dir, usage, workload_err};
use crate::cli::Status;
use crate::output::CliError;
use crate::report::emit_json;

/// The flags of `minnow bench covering`.
#[derive(Debug, Args)]
pub struct CoveringArgs {
    /// Rows in the revision table.
    #[arg(long, default_value_t = 100_000)]
    pub rows: u64,
    /// Revisions of the listed user (the article: 10,000).
    #[arg(long, default_value_t = 1_000)]
    pub user_revisions: u64,
    /// Cold runs per plan.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Data directory to create the database in (must not hold one; kept afterwards).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// A Config knob as name=value, by its InnoDB name (repeatable).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// CSV output: one row per run.
    #[arg(long)]
    pub csv: bool,
}

#[derive(Debug, Serialize)]
struct CoveringReport {
    workload: &'static str,
    rows: u64,
    user_revisions: u64,
    flush_method: String,
    load_rows_per_sec: f64,
    runs: Vec<ColdRun>,
}

/// Runs `minnow bench covering`.
pub fn run(a: &CoveringArgs, json: bool, out: &mut dyn Write) -> Result<Status, CliError> {
    if json && a.csv {
        return Err(usage("--json and --csv cannot be used together"));
    }
    let config = super::args::knob_config(
        Config {
            flush_method: FlushMethod::ODirect,
            ..Config::default()
        },
        &a.set,
    )?;
    let (_temp, dir) = scratch_dir(&a.dir)?;
    let db = Database::create(&dir, config.clone())
        .map_err(|e| CliError::Database(format!("{}: {e}", dir.display())))?;
    let rate = revisions::prepare(&db, a.rows, a.user_revisions, 0).map_err(workload_err)?;
    db.close()
        .map_err(|e| CliError::Database(format!("{}: close: {e}", dir.display())))?;
    if a.csv {
        csv_out::header(
            out,
            "plan,round,rows,seconds,pages_read,read_ahead,bytes_read",
        )?;
    } else if !json {
        writeln!(
            out,
            "minnow bench covering: {} rows, {} revisions of user {}, loaded at {rate:.0} rows/s, flush_method {:?}",
            a.rows,
            a.user_revisions,
            revisions::TARGET_USER,
            config.flush_method
        )?;
    }
    let mut runs = Vec::new();
    for round in 0..a.rounds.max(1) {
        for plan in Plan::ALL {
            let r = revisions::run_cold(&dir, config.clone(), plan).map_err(workload_err)?;
            if a.csv {
                csv_out::row(
                    out,
                    [
                        plan.name().to_string(),
                        round.to_string(),
                        r.rows.to_string(),
                        format!("{:.6}", r.seconds),
                        r.pages_read.to_string(),
                        r.read_ahead.to_string(),
                        r.bytes_read.to_string(),
                    ],
                )?;
            } else if !json {
                writeln!(
                    out,
                    "{:<13} round {round}: {} rows in {:.2} ms, {} pages read + {} read ahead ({} bytes)",
                    plan.name(),
                    r.rows,
                    r.seconds * 1e3,
                    r.pages_read,
                    r.read_ahead,
                    r.bytes_read
                )?;
                let kinds: Vec<String> = r
                    .breakdown
                    .iter()
                    .map(|k| format!("{} {}", k.pages, k.kind))
                    .collect();
                writeln!(out, "    brought in: {}", kinds.join(", "))?;
            }
            runs.push(r);
        }
    }
    if json {
        emit_json(
            out,
            &CoveringReport {
                workload: "covering",
                rows: a.rows,
                user_revisions: a.user_revisions,
                flush_method: format!("{:?}", config.flush_method),
                load_rows_per_sec: rate,
                runs,
            },
        )?;
    }
    Ok(Status::Clean)
}
