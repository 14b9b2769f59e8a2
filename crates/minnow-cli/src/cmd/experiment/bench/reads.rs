//! `minnow bench reads2007`: the 2007 read micro-benchmark (experiment E2) on a clustered and
//! a heap table.
//!
//! ```text
//! minnow bench reads2007 [--organisation clustered|heap|both] [--rows 100000]
//!     [--threads 1,4,16] [--queries READ_PK_POINT,READ_FTS,...] [--time 1] [--warmup 0.2]
//!     [--dir DIR] [--set name=value ...] [--csv | --json]
//! ```
//!
//! The command creates a database (as `minnow bench oltp` does: `--dir`, or a temporary
//! directory under the current one), loads the "normal" table in each organisation asked for
//! with a progress bar on stderr (on a terminal), then runs each of the 13 queries
//! ([`minnow_workload::reads2007`]) at each thread count for `--time` seconds after
//! `--warmup` seconds, and prints queries per second per organisation, query and thread
//! count, with the clustered/heap ratio when both ran. The buffer pool defaults to 1 GiB here
//! (the article's benchmark was CPU-bound: every index page cached) unless `--set
//! buffer_pool_size=...` says otherwise. Ctrl-C stops after the current point and prints what
//! was measured.
//!
//! Output: a text table by default; `--csv` one row per point
//! (`organisation,query,threads,queries,rows,seconds,qps`); `--json` one document with the
//! settings, the loads and the points.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use clap::Args;
use minnow::{Config, Database};
use minnow_workload::reads2007::{self, Loaded, Organisation, Point, Query, SweepConfig};
use serde::Serialize;

use super::csv_out;
use super::progress::Bar;
use super::{install_ctrlc, scratch_dir, usage, workload_err};
use crate::cli::Status;
use crate::output::CliError;
use crate::report::emit_json;

/// The flags of `minnow bench reads2007`.
#[derive(Debug, Args)]
pub struct ReadsArgs {
    /// clustered, heap or both.
    #[arg(long, default_value = "both")]
    pub organisation: String,
    /// Rows in the table (the article: 1,000,000).
    #[arg(long, default_value_t = 100_000)]
    pub rows: u64,
    /// Thread counts, comma-separated (the article: 1,4,16,64,128,256).
    #[arg(long, default_value = "1,4,16")]
    pub threads: String,
    /// Queries, comma-separated article names (default: all 13).
    #[arg(long)]
    pub queries: Option<String>,
    /// Measured seconds per point (the article: 60, best of 3).
    #[arg(long, default_value_t = 1.0)]
    pub time: f64,
    /// Warm-up seconds before each point (the article: 180).
    #[arg(long, default_value_t = 0.2)]
    pub warmup: f64,
    /// Data directory to create the database in (must not hold one; kept afterwards).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// A Config knob as name=value, by its InnoDB name (repeatable).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// Seed of the data and of the query parameters.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// CSV output: one row per point.
    #[arg(long)]
    pub csv: bool,
}

#[derive(Debug, Serialize)]
struct ReadsReport {
    workload: &'static str,
    settings: SweepConfig,
    knobs: Vec<String>,
    data_dir: String,
    loads: Vec<Loaded>,
    points: Vec<Point>,
    interrupted: bool,
}

fn secs(s: f64, what: &str) -> Result<Duration, CliError> {
    Duration::try_from_secs_f64(s).map_err(|_| usage(format!("--{what} {s}: not a duration")))
}

/// Runs `minnow bench reads2007`.
pub fn run(a: &ReadsArgs, json: bool, out: &mut dyn Write) -> Result<Status, CliError> {
    if json && a.csv {
        return Err(usage("--json and --csv cannot be used together"));
    }
    let orgs: Vec<Organisation> = match a.organisation.trim() {
        "both" => Organisation::ALL.to_vec(),
        one => vec![one.parse().map_err(workload_err)?],
    };
    let threads = super::args::thread_list(&a.threads)?;
    let queries: Vec<Query> = match &a.queries {
        None => Query::ALL.to_vec(),
        Some(q) => q
            .split(',')
            .map(|q| q.parse::<Query>().map_err(workload_err))
            .collect::<Result<_, _>>()?,
    };
    let cfg = SweepConfig {
        rows: a.rows,
        queries,
        threads,
        warmup: secs(a.warmup, "warmup")?,
        duration: secs(a.time, "time")?,
        seed: a.seed,
    };
    let config = super::args::knob_config(
        Config {
            buffer_pool_size: 1 << 30,
            ..Config::default()
        },
        &a.set,
    )?;
    let (_temp, dir) = scratch_dir(&a.dir)?;
    let db = Database::create(&dir, config)
        .map_err(|e| CliError::Database(format!("{}: {e}", dir.display())))?;
    let stop = Arc::new(AtomicBool::new(false));
    install_ctrlc(&stop);
    if !json && !a.csv {
        writeln!(
            out,
            "minnow bench reads2007: {} rows, threads {:?}, {:.1} s per point, data in {}",
            cfg.rows,
            cfg.threads,
            cfg.duration.as_secs_f64(),
            dir.display()
        )?;
    }
    if a.csv {
        csv_out::header(out, Point::CSV_HEADER)?;
    }
    let mut loads = Vec::new();
    let mut tables = Vec::new();
    for &org in &orgs {
        let bar = Bar::new(cfg.rows, "rows");
        let started = std::time::Instant::now();
        let (t, loaded) = reads2007::prepare(&db, &dir, org, cfg.rows, cfg.seed, &mut |n| {
            let rate = n as f64 / started.elapsed().as_secs_f64().max(1e-9);
            let what = format!("loading {} ({})", reads2007::TABLE, org.name());
            bar.set(what, n, format!("{rate:.0} rows/s"));
        })
        .map_err(workload_err)?;
        bar.finish();
        let _ = writeln!(
            std::io::stderr(),
            "loaded {} rows ({}) in {:.2} s ({:.0} rows/s)",
            loaded.rows,
            org.name(),
            loaded.seconds,
            loaded.rows_per_sec
        );
        loads.push(loaded);
        tables.push((org, t));
    }
    let mut points = Vec::new();
    let all_points = cfg.queries.len() * cfg.threads.len() * tables.len();
    let bar = Bar::new(all_points as u64, "points");
    // Query by query, both organisations back to back, so their ratio comes from one stretch
    // of this machine's (noisy) time.
    'outer: for &q in &cfg.queries {
        for &n in &cfg.threads {
            for (org, t) in &tables {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    break 'outer;
                }
                let p = reads2007::run_point(t, *org, q, n, &cfg, &stop).map_err(workload_err)?;
                if a.csv {
                    csv_out::row(out, p.csv_record())?;
                    out.flush()?;
                }
                let last = format!(
                    "{} {} x{}: {:.0} q/s",
                    org.name(),
                    p.query,
                    p.threads,
                    p.qps
                );
                points.push(p);
                bar.set("measuring".into(), points.len() as u64, last);
            }
        }
    }
    bar.finish();
    let interrupted = stop.load(std::sync::atomic::Ordering::Relaxed);
    drop(tables);
    db.close()
        .map_err(|e| CliError::Database(format!("{}: close: {e}", dir.display())))?;
    let report = ReadsReport {
        workload: "reads2007",
        settings: cfg,
        knobs: a.set.clone(),
        data_dir: dir.display().to_string(),
        loads,
        points,
        interrupted,
    };
    if json {
        emit_json(out, &report)?;
    } else if !a.csv {
        print_table(&report, out)?;
    }
    Ok(Status::Clean)
}

fn print_table(r: &ReadsReport, out: &mut dyn Write) -> std::io::Result<()> {
    if r.interrupted {
        writeln!(out, "interrupted: the table covers what ran until Ctrl-C")?;
    }
    writeln!(
        out,
        "{:<30} {:>7} {:>14} {:>14} {:>17}",
        "query", "threads", "clustered q/s", "heap q/s", "clustered/heap"
    )?;
    let qps = |org: Organisation, q: &str, t: usize| {
        r.points
            .iter()
            .find(|p| p.organisation == org && p.query == q && p.threads == t)
            .map(|p| p.qps)
    };
    for q in &r.settings.queries {
        for &t in &r.settings.threads {
            let c = qps(Organisation::Clustered, q.name(), t);
            let h = qps(Organisation::Heap, q.name(), t);
            if c.is_none() && h.is_none() {
                continue;
            }
            let show = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.0}"));
            let ratio = match (c, h) {
                (Some(c), Some(h)) if h > 0.0 => format!("{:.2}", c / h),
                _ => "-".to_owned(),
            };
            writeln!(
                out,
                "{:<30} {:>7} {:>14} {:>14} {:>17}",
                q.name(),
                t,
                show(c),
                show(h),
                ratio
            )?;
        }
    }
    Ok(())
}
