//! `minnow status DIR`: the engine's counters, minnow's `SHOW ENGINE INNODB STATUS`.
//!
//! A running database is another process, so the tool cannot call `Database::status()`. It
//! reads the **status file** instead: with `Config::status_file` set, the engine rewrites
//! `DIR/minnow_status.json` at that interval (atomically, by rename) with the snapshot's JSON
//! (see the `minnow::status` module docs). The tool only reads that file, so it can never
//! block or damage the engine.
//!
//! What it prints depends on what it finds:
//!
//! - **live**: a status file refreshed recently (its `taken_at_unix_ms` is at most three
//!   intervals plus two seconds old): every section of the snapshot, printed generically, so a
//!   section the engine adds later (transactions, the adaptive hash index) appears without a
//!   change here;
//! - **stopped**: no status file (the database is closed, or runs without one), or one that
//!   stopped being refreshed (its process died: said as a note): what the files say at rest.
//!   The redo log's newest checkpoint and the end of its last complete mini-transaction
//!   (read as `minnow log` reads them), the redo between them (what recovery would replay: 0
//!   after a clean close), the system tablespace's size in pages, each shared compressed
//!   tablespace (`zip8k_zlib-6.ibd`, ...: its blocks, block size and algorithm), the
//!   doublewrite segments and the buffer pool dump.
//!
//! Exit 0 when the report is complete, 1 when something is wrong (an unreadable status file, a
//! damaged log), 2 when DIR is not a minnow database.

use std::io::Write;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::Value;

use crate::cli::Status;
use crate::output::CliError;
use crate::report::{self, Outcome};
use crate::space::Space;

/// How much older than three refresh intervals a status file may be and still count as live.
pub const STALE_GRACE_MS: u64 = 2000;

/// A status file that parsed.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The whole object, as the engine wrote it.
    pub json: Value,
    /// When it was taken (ms since the Unix epoch).
    pub taken_at_ms: u64,
    /// How long ago that was, when it was read.
    pub age_ms: u64,
    /// The engine's refresh interval.
    pub interval_ms: u64,
    /// The engine's process id.
    pub pid: u64,
}

impl Snapshot {
    /// True if the engine is still refreshing the file.
    pub fn is_live(&self) -> bool {
        self.age_ms <= self.interval_ms.saturating_mul(3) + STALE_GRACE_MS
    }

    /// The number at `pointer` (`/buffer_pool/reads`), 0 if absent.
    pub fn num(&self, pointer: &str) -> f64 {
        self.json
            .pointer(pointer)
            .and_then(Value::as_f64)
            .unwrap_or(0.0)
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Reads `DIR/minnow_status.json`: `Ok(None)` if there is none, `Err(reason)` if it is not a
/// minnow status file.
pub fn read_snapshot(dir: &Path) -> Result<Option<Snapshot>, String> {
    let path = dir.join(minnow::STATUS_FILE);
    let bytes = match std::fs::read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let json: Value =
        serde_json::from_slice(&bytes).map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
    if json.get("format").and_then(Value::as_str) != Some(minnow::status::STATUS_FORMAT) {
        return Err(format!(
            "{}: not a minnow status file (no \"format\": \"{}\")",
            path.display(),
            minnow::status::STATUS_FORMAT
        ));
    }
    let field = |k: &str| json.get(k).and_then(Value::as_u64).unwrap_or(0);
    let taken_at_ms = field("taken_at_unix_ms");
    Ok(Some(Snapshot {
        taken_at_ms,
        age_ms: now_ms().saturating_sub(taken_at_ms),
        interval_ms: field("interval_ms"),
        pid: field("pid"),
        json,
    }))
}

/// The system tablespace at rest.
#[derive(Debug, Serialize)]
pub struct SpaceFacts {
    /// The file.
    pub file: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// The page size.
    pub page_size: usize,
    /// Whole pages.
    pub pages: u64,
}

/// A shared compressed tablespace (`zip8k_zlib-6.ibd`, ...) at rest.
#[derive(Debug, Serialize)]
pub struct ZipSpaceFacts {
    /// The file.
    pub file: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// `KEY_BLOCK_SIZE` in KiB: the size of each page's block in the file.
    pub key_block_size: usize,
    /// The algorithm as the engine names it (`zlib-6`, `lz4`).
    pub algorithm: String,
    /// The logical page size the blocks inflate to.
    pub page_size: usize,
    /// Whole blocks (pages).
    pub pages: u64,
}

/// The redo log at rest.
#[derive(Debug, Serialize)]
pub struct RedoFacts {
    /// Data bytes of the circular log.
    pub capacity: Option<u64>,
    /// The newest valid checkpoint's LSN.
    pub checkpoint_lsn: Option<u64>,
    /// The end of the last complete mini-transaction group.
    pub end_lsn: Option<u64>,
    /// `end_lsn - checkpoint_lsn`: the redo recovery would replay.
    pub checkpoint_age: Option<u64>,
    /// Mini-transaction groups after the checkpoint.
    pub groups_to_replay: u64,
    /// True when nothing is left to replay: the database was closed cleanly.
    pub clean_shutdown: bool,
}

/// The TRX_SYS page at rest.
#[derive(Debug, Serialize)]
pub struct TrxSysFacts {
    /// History list length: committed update undo logs purge has not finished with.
    pub history_len: u64,
    /// Undo pages in the undo streams of all rollback segments.
    pub undo_pages: u64,
}

/// What the files of a stopped database say.
#[derive(Debug, Serialize)]
pub struct StoppedFacts {
    /// `ibdata1`.
    pub tablespace: Option<SpaceFacts>,
    /// The shared compressed tablespaces (`zip*.ibd`), by file name.
    pub compressed_tablespaces: Vec<ZipSpaceFacts>,
    /// The TRX_SYS page (as last written to the file: after a crash, redo may change it).
    pub transactions: Option<TrxSysFacts>,
    /// `ib_logfile0`.
    pub redo: Option<RedoFacts>,
    /// Doublewrite segment files (`dblwr.N`).
    pub doublewrite_segments: usize,
    /// Pages listed in the `ib_buffer_pool` dump, if there is one.
    pub buffer_pool_dump_pages: Option<usize>,
}

/// The report.
#[derive(Debug, Serialize)]
pub struct StatusReport {
    /// The database directory.
    pub dir: String,
    /// `live` (from the status file) or `stopped` (from the files at rest).
    pub source: &'static str,
    /// The outcome: true when nothing is wrong.
    #[serde(flatten)]
    pub outcome: Outcome,
    /// The engine's snapshot, as written to the status file (live only).
    pub live: Option<Value>,
    /// How old the snapshot was when read, in ms (live only).
    pub age_ms: Option<u64>,
    /// The files at rest (stopped only).
    pub stopped: Option<StoppedFacts>,
    /// Things worth knowing that are not problems (a stale status file).
    pub notes: Vec<String>,
    /// What is wrong.
    pub problems: Vec<String>,
}

/// Runs `minnow status`.
pub fn run(dir: &Path, json: bool, out: &mut dyn Write) -> Result<Status, CliError> {
    let name = dir.display().to_string();
    if !dir.is_dir() {
        return Err(CliError::Usage(format!("{name}: not a directory")));
    }
    let mut report = StatusReport {
        dir: name.clone(),
        source: "stopped",
        outcome: Outcome::default(),
        live: None,
        age_ms: None,
        stopped: None,
        notes: Vec::new(),
        problems: Vec::new(),
    };
    match read_snapshot(dir) {
        Ok(Some(s)) if s.is_live() => {
            report.source = "live";
            report.age_ms = Some(s.age_ms);
            report.live = Some(s.json);
        }
        Ok(Some(s)) => report.notes.push(format!(
            "{} was last refreshed {:.1} s ago by process {} (interval {} ms): that process \
             stopped without closing the database; showing the files at rest",
            minnow::STATUS_FILE,
            s.age_ms as f64 / 1000.0,
            s.pid,
            s.interval_ms
        )),
        Ok(None) => {}
        Err(e) => report.problems.push(e),
    }
    if report.live.is_none() {
        if !dir.join(minnow::inspect::SYSTEM_TABLESPACE).exists() {
            return Err(CliError::Usage(format!(
                "{name}: no {} and no live {}: not a minnow database",
                minnow::inspect::SYSTEM_TABLESPACE,
                minnow::STATUS_FILE
            )));
        }
        report.stopped = Some(stopped_facts(dir, &mut report.problems)?);
    }
    let status = if report.problems.is_empty() {
        Status::Clean
    } else {
        Status::Corrupt
    };
    report.outcome = Outcome::of(status);
    report::emit(out, json, &report, print_text)?;
    Ok(status)
}

fn stopped_facts(dir: &Path, problems: &mut Vec<String>) -> Result<StoppedFacts, CliError> {
    let (tablespace, transactions) =
        match Space::open(&dir.join(minnow::inspect::SYSTEM_TABLESPACE), None) {
            Ok(s) => (
                Some(SpaceFacts {
                    file: s.name(),
                    bytes: s.len(),
                    page_size: s.page_size().bytes(),
                    pages: s.pages(),
                }),
                trx_sys_facts(&s, problems),
            ),
            Err(e) => {
                problems.push(e.to_string());
                (None, None)
            }
        };
    let compressed_tablespaces = zip_facts(dir, problems);
    let redo = if dir.join(minnow::inspect::REDO_LOG).exists() {
        let (log, _) = crate::cmd::inspector::log::read(dir, 0)?;
        problems.extend(log.problems.iter().map(|p| format!("redo log: {p}")));
        let checkpoint = log
            .checkpoints
            .iter()
            .find(|c| c.newest && c.valid)
            .map(|c| c.lsn);
        let age = checkpoint.zip(log.end).map(|(c, e)| e.saturating_sub(c));
        Some(RedoFacts {
            capacity: log.header.as_ref().map(|h| h.capacity),
            checkpoint_lsn: checkpoint,
            end_lsn: log.end,
            checkpoint_age: age,
            groups_to_replay: log.summary.groups,
            clean_shutdown: log.summary.groups == 0 && log.problems.is_empty(),
        })
    } else {
        problems.push(format!("no {}", minnow::inspect::REDO_LOG));
        None
    };
    let doublewrite_segments = (0..)
        .take_while(|&i| minnow_dblwr::segment_path(dir, i).exists())
        .count();
    let buffer_pool_dump_pages = std::fs::read_to_string(dir.join("ib_buffer_pool"))
        .ok()
        .map(|t| t.lines().filter(|l| !l.trim().is_empty()).count());
    Ok(StoppedFacts {
        tablespace,
        compressed_tablespaces,
        transactions,
        redo,
        doublewrite_segments,
        buffer_pool_dump_pages,
    })
}

/// Every shared compressed tablespace of `dir`: the files whose names
/// [`minnow::Compression::from_file_name`] accepts, sorted by name. A file that does not open
/// as a compressed tablespace is a problem.
fn zip_facts(dir: &Path, problems: &mut Vec<String>) -> Vec<ZipSpaceFacts> {
    let mut names: Vec<String> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| minnow::Compression::from_file_name(n).is_some())
            .collect(),
        Err(e) => {
            problems.push(format!("{}: cannot list: {e}", dir.display()));
            return Vec::new();
        }
    };
    names.sort();
    let mut out = Vec::new();
    for name in names {
        match Space::open(&dir.join(&name), None) {
            Ok(s) => match s.zip() {
                Some(z) => out.push(ZipSpaceFacts {
                    file: s.name(),
                    bytes: s.len(),
                    key_block_size: z.block_size.kib(),
                    algorithm: z.algorithm.to_string(),
                    page_size: s.page_size().bytes(),
                    pages: s.pages(),
                }),
                None => problems.push(format!(
                    "{}: named like a compressed tablespace but its block 0 has no zip header",
                    s.name()
                )),
            },
            Err(e) => problems.push(e.to_string()),
        }
    }
    out
}

/// The history list length and undo pages, summed over the rollback segments the TRX_SYS
/// page names, if it and their header pages read as minnow's.
fn trx_sys_facts(s: &Space, problems: &mut Vec<String>) -> Option<TrxSysFacts> {
    use minnow_mvcc::trx_sys::{RsegPage, SysPage};
    let read = |no: u32, problems: &mut Vec<String>| {
        let mut buf = vec![0u8; s.page_size().bytes()];
        match s.read_page(u64::from(no), &mut buf) {
            Ok(_) => Some(buf),
            Err(e) => {
                problems.push(format!(
                    "page {no} (TRX_SYS or a rollback segment header): {e}"
                ));
                None
            }
        }
    };
    let page = |no: u32| minnow_page::PageId::new(minnow::inspect::SYSTEM_SPACE_ID, no);
    let buf = read(minnow::inspect::TRX_SYS_PAGE, problems)?;
    let sp = SysPage::read(&buf, page(minnow::inspect::TRX_SYS_PAGE))
        .map_err(|e| problems.push(e.to_string()))
        .ok()?;
    let mut facts = TrxSysFacts {
        history_len: 0,
        undo_pages: 0,
    };
    for (i, &no) in sp.rsegs.iter().enumerate() {
        let buf = read(no, problems)?;
        let r = RsegPage::read(&buf, page(no), i as u16)
            .map_err(|e| problems.push(e.to_string()))
            .ok()?;
        facts.history_len += r.hist_len;
        facts.undo_pages += u64::from(r.n_pages);
    }
    Some(facts)
}

/// A JSON value for humans: floats with 4 decimals, strings bare.
fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) if n.is_f64() => format!("{:.4}", n.as_f64().unwrap_or(0.0)),
        Value::Array(a) => a.iter().map(show).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "?".to_string(), |v| v.to_string())
}

fn print_text(r: &StatusReport, out: &mut dyn Write) -> Result<(), CliError> {
    if let Some(live) = &r.live {
        let top = |k: &str| live.get(k).map(show).unwrap_or_default();
        writeln!(
            out,
            "{}: live (process {}, snapshot {} ms old, refreshed every {} ms)",
            r.dir,
            top("pid"),
            opt(r.age_ms),
            top("interval_ms")
        )?;
        writeln!(
            out,
            "uptime {:.1} s",
            live.get("uptime_ms").and_then(Value::as_f64).unwrap_or(0.0) / 1000.0
        )?;
        if let Some(obj) = live.as_object() {
            // Every object is a section, printed in the engine's order.
            for (section, fields) in obj {
                let Some(fields) = fields.as_object() else {
                    continue;
                };
                writeln!(out, "\n{}", section.to_uppercase().replace('_', " "))?;
                for (k, v) in fields {
                    writeln!(out, "  {k:<16} {}", show(v))?;
                }
            }
        }
        let not_built = top("not_built");
        if !not_built.is_empty() {
            writeln!(out, "\nnot built yet: {not_built}")?;
        }
    }
    if let Some(s) = &r.stopped {
        writeln!(out, "{}: stopped (read from the files at rest)", r.dir)?;
        if let Some(t) = &s.tablespace {
            writeln!(
                out,
                "  tablespace       {}: {} pages of {} bytes ({} bytes)",
                t.file, t.pages, t.page_size, t.bytes
            )?;
        }
        for z in &s.compressed_tablespaces {
            writeln!(
                out,
                "  compressed       {}: {} pages in {}-byte blocks (KEY_BLOCK_SIZE={}, {}, \
                 {}-byte pages) ({} bytes)",
                z.file,
                z.pages,
                z.key_block_size * 1024,
                z.key_block_size,
                z.algorithm,
                z.page_size,
                z.bytes
            )?;
        }
        if let Some(l) = &s.redo {
            writeln!(out, "  redo capacity    {}", opt(l.capacity))?;
            writeln!(out, "  checkpoint LSN   {}", opt(l.checkpoint_lsn))?;
            writeln!(out, "  end LSN          {}", opt(l.end_lsn))?;
            writeln!(
                out,
                "  to replay        {} bytes in {} mini-transactions ({})",
                opt(l.checkpoint_age),
                l.groups_to_replay,
                if l.clean_shutdown {
                    "closed cleanly"
                } else {
                    "recovery will replay them at the next open"
                }
            )?;
        }
        if let Some(x) = &s.transactions {
            writeln!(
                out,
                "  history list     {} undo logs not purged",
                x.history_len
            )?;
            writeln!(out, "  undo pages       {}", x.undo_pages)?;
        }
        writeln!(
            out,
            "  doublewrite      {} segment files",
            s.doublewrite_segments
        )?;
        match s.buffer_pool_dump_pages {
            Some(n) => writeln!(out, "  buffer pool dump {n} pages")?,
            None => writeln!(out, "  buffer pool dump none")?,
        }
    }
    for n in &r.notes {
        writeln!(out, "note: {n}")?;
    }
    for p in &r.problems {
        writeln!(out, "problem: {p}")?;
    }
    Ok(())
}
