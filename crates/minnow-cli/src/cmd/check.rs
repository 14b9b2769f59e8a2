//! `minnow check DIR`: open a stopped minnow database and verify it.
//!
//! Opening runs recovery if the database was not closed cleanly (doublewrite repair, redo,
//! the secondary-index repair), exactly as an application's `Database::open` would; then
//! `Database::check` verifies every B-tree (page invariants, key order, levels, sibling links,
//! parent bounds) and that every secondary index holds exactly one entry per row of its
//! table. Exit status: 0 all good, 1 a problem was found (corruption, named), 2 the
//! directory could not be opened as a minnow database.
//!
//! It opens the files for writing, so it takes the directory's `LOCK` like any opener: on a
//! database another handle has open (another process, or a live application) it refuses
//! with exit 2, naming the holder's pid, and changes nothing. The read-only commands
//! (`verify`, `inspect`, `page`, `tree`, `log`, `dblwr`, `history`, `status`, `watch`) take no
//! lock and are safe on a live database.

use std::io::Write;
use std::path::Path;

use minnow::{Config, Database, Error};
use serde::Serialize;

use crate::cli::Status;
use crate::output::CliError;
use crate::report;

/// What `minnow check` found.
#[derive(Debug, Serialize)]
pub struct CheckOutput {
    /// The directory.
    pub dir: String,
    /// True if every check passed.
    pub ok: bool,
    /// Redo groups replayed when the database was opened (0 after a clean close).
    pub redo_groups_replayed: u64,
    /// Pages restored from the doublewrite buffer while opening.
    pub pages_repaired: usize,
    /// Transactions that had not committed and were rolled back while opening.
    pub transactions_rolled_back: u64,
    /// Indexes verified (the dictionary's included).
    pub indexes: usize,
    /// Rows per table.
    pub rows: std::collections::BTreeMap<String, u64>,
    /// The problem found, if any.
    pub problem: Option<String>,
}

/// Runs `minnow check`.
pub fn run(dir: &Path, json: bool, out: &mut dyn Write) -> Result<Status, CliError> {
    // Recovery's progress on stderr (as InnoDB prints it to its error log); only when there
    // is redo to replay, and at most about once a second.
    let progress = minnow::RecoveryProgressHook::new(|p: &minnow::RecoveryProgress| {
        if p.to > p.from {
            eprintln!(
                "recovery: {:.1} % of {} bytes of redo applied, {} batches, {} pages read{}",
                p.percent(),
                p.to.0 - p.from.0,
                p.batches,
                p.pages_read,
                if p.done { ", done" } else { "" }
            );
        }
    });
    let config = Config {
        recovery_progress: Some(progress),
        ..Config::default()
    };
    let db = Database::open(dir, config).map_err(|e| CliError::Database(e.to_string()))?;
    let opened = db.open_report().clone();
    let (report, problem) = match db.check() {
        Ok(r) => (Some(r), None),
        Err(e @ (Error::Corrupt { .. } | Error::CorruptPage { .. } | Error::Undo(_))) => {
            (None, Some(e.to_string()))
        }
        Err(e) => return Err(CliError::Database(e.to_string())),
    };
    db.close().map_err(|e| CliError::Database(e.to_string()))?;
    let result = CheckOutput {
        dir: dir.display().to_string(),
        ok: problem.is_none(),
        redo_groups_replayed: opened.redo_groups,
        pages_repaired: opened.pages_repaired,
        transactions_rolled_back: opened.rolled_back,
        indexes: report.as_ref().map_or(0, |r| r.indexes),
        rows: report.map(|r| r.rows).unwrap_or_default(),
        problem,
    };
    if json {
        report::emit_json(out, &result)?;
    } else {
        writeln!(out, "{}:", result.dir)?;
        writeln!(
            out,
            "  opened: {} redo groups replayed, {} pages restored from the doublewrite buffer, \
             {} uncommitted transactions rolled back",
            result.redo_groups_replayed, result.pages_repaired, result.transactions_rolled_back
        )?;
        for (table, rows) in &result.rows {
            writeln!(out, "  table {table}: {rows} rows")?;
        }
        match &result.problem {
            None => writeln!(
                out,
                "  OK: {} B-trees verified (every table's indexes against its rows, and the dictionary)",
                result.indexes
            )?,
            Some(p) => writeln!(out, "  PROBLEM: {p}")?,
        }
    }
    Ok(if result.ok {
        Status::Clean
    } else {
        Status::Corrupt
    })
}
