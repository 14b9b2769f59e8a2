//! `minnow bench recovery`: how long crash recovery takes for a given amount of redo.
//!
//! ```text
//! minnow bench recovery [--redo-mb 10,20,40] [--log-mb 48] [--pool-mb 128] [--threads 2]
//!     [--pad 1000] [--accounts 1000] [--dir DIR] [--json]
//! ```
//!
//! For each redo size: a fresh database (in `--dir`/`redo-N`, or a temporary directory under
//! the current one) with a `--log-mb` redo log; a child process (this binary, `bench
//! recovery-writer`) runs [`minnow_workload::killer`]'s transfers-with-a-journal workload with
//! no page cleaner (so the checkpoint stays put and the redo piles up) and
//! `flush_log_at_trx_commit=2` (every commit written to the OS, so it survives the kill), and
//! says `READY` (on stderr) once the checkpoint age has reached the size; it is then killed with
//! `SIGKILL`. The bench opens the database, which recovers, and reports: the redo replayed,
//! the time `open` took, the redo applied per second, groups, pages changed, pages read,
//! batches and the most memory parsed redo took. Progress lines go to stderr as recovery
//! reports them. The journal grows without deletes, so the redo touches ever more pages, most
//! of them new (a page whose first change initialises it needs no read); with many
//! `--accounts` and a small `--pool-mb` the transfers' pages must be read back as well.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use clap::Args;
use minnow::{Config, Database, FlushAtCommit};
use minnow::{RecoveryProgress, RecoveryProgressHook};
use minnow_workload::killer::{self, Shape};
use serde::Serialize;

use super::scratch_dir;
use crate::cli::Status;
use crate::output::CliError;
use crate::report::emit_json;

/// The flags of `minnow bench recovery`.
#[derive(Debug, Args)]
pub struct RecoveryArgs {
    /// Redo to leave behind the checkpoint before the kill, MiB (comma-separated sizes).
    #[arg(long, value_delimiter = ',', default_values_t = vec![10u64, 20, 40])]
    pub redo_mb: Vec<u64>,
    /// The redo log's size, MiB (`innodb_log_file_size`); each redo size must stay below
    /// 85 % of it.
    #[arg(long, default_value_t = 48)]
    pub log_mb: u64,
    /// The buffer pool of the recovering open, MiB.
    #[arg(long, default_value_t = 128)]
    pub pool_mb: usize,
    /// Writer threads in the child.
    #[arg(long, default_value_t = 2)]
    pub threads: u64,
    /// Filler bytes per journal row.
    #[arg(long, default_value_t = 1000)]
    pub pad: usize,
    /// Accounts: with many, the transfers change pages spread over a table written before
    /// the writer started, which recovery must read (with a pool smaller than the table).
    #[arg(long, default_value_t = 1000)]
    pub accounts: u64,
    /// Where to create the databases (`DIR/redo-N`, kept); default a temporary directory
    /// under the current one, removed afterwards.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// The hidden child of `minnow bench recovery`.
#[derive(Debug, Args)]
pub struct WriterArgs {
    /// The database (created by the parent).
    #[arg(long)]
    pub dir: PathBuf,
    /// Say READY once the checkpoint age reaches this many MiB.
    #[arg(long)]
    pub redo_mb: u64,
    /// Writer threads.
    #[arg(long)]
    pub threads: u64,
    /// Filler bytes per journal row.
    #[arg(long)]
    pub pad: usize,
    /// Accounts.
    #[arg(long)]
    pub accounts: u64,
}

fn shape(threads: u64, pad: usize, accounts: u64) -> Shape {
    Shape {
        accounts,
        threads,
        // No deletes: the journal grows and the redo reaches new pages.
        keep: u64::MAX / 2,
        pad,
    }
}

fn writer_config(log_mb: u64) -> Config {
    Config {
        flush_log_at_trx_commit: FlushAtCommit::Write,
        page_cleaners: 0,
        buffer_pool_size: 1 << 30,
        log_file_size: log_mb << 20,
        purge_threads: 0,
        ..killer::config(Config::default())
    }
}

/// Runs the child: the workload until killed, `READY` on stdout once enough redo is behind
/// the checkpoint.
pub fn run_writer(args: &WriterArgs) -> Result<Status, CliError> {
    let err = |e: minnow::Error| CliError::Bench(e.to_string());
    // (The log keeps the size it was created with; the one configured here is not used.)
    let db = Database::open(&args.dir, writer_config(48)).map_err(err)?;
    let target = args.redo_mb << 20;
    let stop = AtomicBool::new(false);
    let ready = AtomicBool::new(false);
    let report = |line: String| {
        if let Some(age) = line.strip_prefix("AGE ").and_then(|r| r.split(' ').next())
            && age.parse::<u64>().is_ok_and(|a| a >= target)
            && !ready.swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            // On stderr: the CLI's main thread holds stdout locked for its whole run.
            eprintln!("READY {age}");
        }
    };
    killer::run(
        &db,
        &shape(args.threads, args.pad, args.accounts),
        1,
        &stop,
        &report,
    )
    .map_err(err)?;
    Err(CliError::Bench(
        "the writer stopped before it was killed".into(),
    ))
}

#[derive(Debug, Serialize)]
struct Row {
    redo_mib: f64,
    open_secs: f64,
    mib_per_sec: f64,
    groups: u64,
    pages_applied: u64,
    pages_read: u64,
    batches: u64,
    peak_batch_mib: f64,
}

fn one(exe: &Path, dir: &Path, args: &RecoveryArgs, redo_mb: u64) -> Result<Row, CliError> {
    let bench = |m: String| CliError::Bench(m);
    let db = Database::create(dir, writer_config(args.log_mb))
        .map_err(|e| bench(format!("create {}: {e}", dir.display())))?;
    killer::prepare(&db, &shape(args.threads, args.pad, args.accounts))
        .map_err(|e| bench(e.to_string()))?;
    db.close().map_err(|e| bench(e.to_string()))?;
    let mut child = Command::new(exe)
        .args(["bench", "recovery-writer", "--dir"])
        .arg(dir)
        .args(["--redo-mb", &redo_mb.to_string()])
        .args(["--threads", &args.threads.to_string()])
        .args(["--pad", &args.pad.to_string()])
        .args(["--accounts", &args.accounts.to_string()])
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| bench(format!("cannot start the writer: {e}")))?;
    let out = child
        .stderr
        .take()
        .ok_or_else(|| bench("the writer has no stderr".into()))?;
    let ready = BufReader::new(out)
        .lines()
        .map_while(Result::ok)
        .any(|l| l.starts_with("READY"));
    child
        .kill()
        .map_err(|e| bench(format!("cannot kill the writer: {e}")))?;
    let _ = child.wait();
    if !ready {
        return Err(bench(
            "the writer ended before the redo reached its size".into(),
        ));
    }
    let hook = RecoveryProgressHook::new(|p: &RecoveryProgress| {
        eprintln!(
            "  recovery: {:5.1} % of the redo applied, {} batches, {} pages read{}",
            p.percent(),
            p.batches,
            p.pages_read,
            if p.done { ", done" } else { "" }
        );
    });
    let config = Config {
        buffer_pool_size: args.pool_mb << 20,
        recovery_progress: Some(hook),
        ..Config::default()
    };
    let start = Instant::now();
    let db = Database::open(dir, config).map_err(|e| bench(format!("recovery: {e}")))?;
    let secs = start.elapsed().as_secs_f64();
    let r = db.open_report().clone();
    db.close().map_err(|e| bench(e.to_string()))?;
    let mib = r.redo_bytes as f64 / f64::from(1 << 20);
    Ok(Row {
        redo_mib: mib,
        open_secs: secs,
        mib_per_sec: mib / secs.max(1e-9),
        groups: r.redo_groups,
        pages_applied: r.pages_applied,
        pages_read: r.redo_pages_read,
        batches: r.redo_batches,
        peak_batch_mib: r.redo_peak_batch_bytes as f64 / f64::from(1 << 20),
    })
}

/// Runs `minnow bench recovery`.
pub fn run(args: &RecoveryArgs, json: bool, out: &mut dyn Write) -> Result<Status, CliError> {
    for &mb in &args.redo_mb {
        if mb == 0 || mb * 100 > args.log_mb * 85 {
            return Err(CliError::Usage(format!(
                "--redo-mb {mb} must be above 0 and below 85 % of --log-mb {}",
                args.log_mb
            )));
        }
    }
    let exe = std::env::current_exe()
        .map_err(|e| CliError::Bench(format!("cannot find this binary: {e}")))?;
    let (_tmp, root) = scratch_dir(&args.dir)?;
    let mut rows = Vec::new();
    for &mb in &args.redo_mb {
        let dir = root.join(format!("redo-{mb}"));
        let row = one(&exe, &dir, args, mb)?;
        if !json {
            writeln!(
                out,
                "redo {:7.1} MiB: open {:6.2} s, {:6.1} MiB/s, {} groups, {} page changes, \
                 {} pages read, {} batches, peak {:.1} MiB parsed",
                row.redo_mib,
                row.open_secs,
                row.mib_per_sec,
                row.groups,
                row.pages_applied,
                row.pages_read,
                row.batches,
                row.peak_batch_mib
            )?;
        }
        rows.push(row);
        if args.dir.is_none() {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    if json {
        emit_json(out, &rows)?;
    }
    Ok(Status::Clean)
}
