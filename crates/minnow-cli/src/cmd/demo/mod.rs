//! `minnow demo`: the storage layers minnow has today, end to end, on real files.
//!
//! The demo is what the README's first command runs. In a fresh directory (a temporary one
//! unless `--dir` is given) it:
//!
//! 1. creates a tablespace (page 0 carries the FSP header whose flags give the page size) and
//!    writes pages (typed BLOB: their bodies are opaque bytes, there is no B-tree yet) in batches through the chosen IO backend, each page stamped with its
//!    checksum just before it goes to the file, then syncs;
//! 2. creates a redo log and commits mini-transaction groups from several threads with
//!    `flush_log_at_trx_commit = 1`, showing how group commit lets one sync serve many
//!    commits, then reopens the log the way crash recovery does and counts what came back;
//! 3. reopens the tablespace and reads every page back, verifying each checksum;
//! 4. damages one byte of one page in a copy of the file and shows `verify` naming that page;
//! 5. creates a database with sysbench's `sbtest` table through the embedded API, loads rows,
//!    runs point selects, ranges and secondary-index scans, checks every index, closes and
//!    reopens it ([`tables`]);
//! 6. prints the inspector's summary of the database's system tablespace: real B-tree pages.
//!
//! Times are wall-clock times of this one run on this machine's disk, printed to show where the
//! time goes, not a benchmark (the Criterion benches in `benches/` are).

pub mod tables;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use minnow_io::{
    AlignedBuf, Backend, FlushMethod, OpenOptions, SyncBackend, Tablespace, UringBackend,
};
use minnow_page::checksum::{ChecksumAlgorithm, ChecksumPolicy};
use minnow_page::fil::FilHeader;
use minnow_page::{PageId, PageSize, PageType};
use minnow_redo::record::encode_group;
use minnow_redo::{FlushAtCommit, Log, Record};
use serde::Serialize;

use crate::cli::{ReadOpts, Status};
use crate::cmd::inspector::{inspect, verify};
use crate::output::CliError;
use crate::report;

/// Options of `minnow demo`.
#[derive(Debug, Clone)]
pub struct DemoOpts {
    /// Where to put the files; a temporary directory (removed afterwards) if `None`.
    pub dir: Option<PathBuf>,
    /// Pages in the demo tablespace.
    pub pages: u32,
    /// Page size.
    pub page_size: PageSize,
    /// Checksum algorithm to write with.
    pub checksum: ChecksumAlgorithm,
    /// `sync` or `io_uring`.
    pub backend: String,
    /// How written pages are made durable.
    pub flush_method: FlushMethod,
    /// Threads committing to the redo log.
    pub commit_threads: usize,
    /// Commits per thread.
    pub commits: usize,
    /// Rows in the demo's sbtest table.
    pub rows: u64,
}

/// What the demo measured.
#[derive(Debug, Serialize)]
pub struct DemoReport {
    /// The directory used.
    pub dir: String,
    /// The tablespace file.
    pub tablespace: String,
    /// IO backend.
    pub backend: String,
    /// Flush method.
    pub flush_method: String,
    /// Page size in bytes.
    pub page_size: usize,
    /// Pages written (page 0 included).
    pub pages: u32,
    /// Seconds to write the pages (without the sync).
    pub write_secs: f64,
    /// Seconds for the final sync.
    pub sync_secs: f64,
    /// Seconds to read back and verify every page.
    pub read_verify_secs: f64,
    /// Pages that failed verification on read-back (0 unless the disk lies).
    pub read_back_failures: u64,
    /// Durable commits made.
    pub commits: u64,
    /// Syncs those commits needed.
    pub log_syncs: u64,
    /// Seconds the commits took.
    pub commit_secs: f64,
    /// Groups recovery found when the log was reopened.
    pub recovered_groups: u64,
    /// The page that was damaged in the copy, and whether verify caught it.
    pub damaged_page: u32,
    /// True if verify reported exactly the damaged page.
    pub damage_detected: bool,
    /// The table step.
    pub tables: tables::TablesReport,
}

/// Runs `minnow demo`.
pub fn run(opts: &DemoOpts, json: bool, out: &mut dyn Write) -> Result<Status, CliError> {
    let temp;
    let dir = match &opts.dir {
        Some(d) => {
            std::fs::create_dir_all(d)
                .map_err(|e| CliError::Demo(format!("{}: {e}", d.display())))?;
            d.clone()
        }
        None => {
            temp = tempfile::Builder::new()
                .prefix("minnow-demo-")
                .tempdir()
                .map_err(|e| CliError::Demo(format!("cannot create a temporary directory: {e}")))?;
            temp.path().to_path_buf()
        }
    };
    let report = demo(&dir, opts).map_err(CliError::Demo)?;
    let tables_ok = report.tables.covering && report.tables.reopen_redo_groups == 0;
    let status = if report.damage_detected && report.read_back_failures == 0 && tables_ok {
        Status::Clean
    } else {
        Status::Corrupt
    };
    if json {
        report::emit_json(out, &report)?;
        return Ok(status);
    }
    print_text(&report, out)?;
    writeln!(
        out,
        "\n== 6. what the inspector sees: minnow inspect {}\n",
        report.tables.tablespace
    )?;
    let read = ReadOpts {
        page_size: None,
        checksum: ChecksumPolicy::default(),
    };
    let inspected = inspect::run(
        Path::new(&report.tables.tablespace),
        &read,
        512,
        false,
        false,
        out,
    )?;
    Ok(status.max(inspected))
}

fn backend(name: &str) -> Result<Arc<dyn Backend>, String> {
    match name {
        "sync" => Ok(Arc::new(SyncBackend::new())),
        "io_uring" => UringBackend::new()
            .map(|b| Arc::new(b) as Arc<dyn Backend>)
            .map_err(|e| e.to_string()),
        other => Err(format!(
            "unknown backend {other:?} (expected sync or io_uring)"
        )),
    }
}

/// Fills a page body with bytes that look like data (a repeating, varying pattern).
fn fill_page(page: &mut [u8], space_id: u32, page_no: u32, lsn: u64) -> Result<(), String> {
    let mut h = FilHeader::new(space_id, page_no, PageType::Blob);
    h.lsn = lsn;
    h.write(page).map_err(|e| e.to_string())?;
    let end = page.len().saturating_sub(8);
    for (i, b) in page.iter_mut().enumerate().take(end).skip(38) {
        *b = (i as u32 ^ page_no.wrapping_mul(0x9E37)).to_le_bytes()[0] & 0x7F;
    }
    Ok(())
}

fn demo(dir: &Path, opts: &DemoOpts) -> Result<DemoReport, String> {
    let backend = backend(&opts.backend)?;
    let size = opts.page_size;
    let pages = opts.pages.max(2);
    let path = dir.join("demo.ibd");
    if path.exists() {
        std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    }

    // 1. Create and write.
    let space = Tablespace::create(
        &*backend,
        &path,
        1,
        size,
        opts.checksum,
        opts.flush_method,
        pages,
    )
    .map_err(|e| e.to_string())?;
    const BATCH: u32 = 64;
    let mut bufs: Vec<AlignedBuf> = (0..BATCH).map(|_| AlignedBuf::page(size)).collect();
    let started = Instant::now();
    let mut page_no = 1;
    while page_no < pages {
        let n = BATCH.min(pages - page_no);
        let mut batch = Vec::with_capacity(n as usize);
        for (i, buf) in bufs.iter_mut().take(n as usize).enumerate() {
            let p = page_no + i as u32;
            fill_page(buf, 1, p, 1000 + u64::from(p))?;
            batch.push((p, &mut buf[..]));
        }
        space.write_pages(&mut batch).map_err(|e| e.to_string())?;
        page_no += n;
    }
    let write_secs = started.elapsed().as_secs_f64();
    let started = Instant::now();
    space.sync().map_err(|e| e.to_string())?;
    let sync_secs = started.elapsed().as_secs_f64();
    drop(space);

    // 2. The redo log: group commit from several threads, then recovery.
    let log_path = dir.join("redo.log");
    if log_path.exists() {
        std::fs::remove_file(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    }
    let log_file = backend
        .open(
            &log_path,
            &OpenOptions::new(FlushMethod::Fsync).create(true),
        )
        .map_err(|e| e.to_string())?;
    let log = Log::create(log_file, 64 << 20).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for t in 0..opts.commit_threads {
            let (log, failures) = (&log, &failures);
            s.spawn(move || {
                for i in 0..opts.commits {
                    let group = encode_group(&[Record::Write {
                        page: PageId::new(1, (1 + (t * 7 + i) as u32 % (pages - 1)).max(1)),
                        offset: 200,
                        data: (i as u64).to_be_bytes().to_vec(),
                    }]);
                    let result = log
                        .append(&group)
                        .and_then(|(_, end)| log.commit(end, FlushAtCommit::Sync));
                    if let Err(e) = result {
                        if let Ok(mut f) = failures.lock() {
                            f.push(e.to_string());
                        }
                        return;
                    }
                }
            });
        }
    });
    if let Some(first) = failures.lock().ok().and_then(|f| f.first().cloned()) {
        return Err(first);
    }
    let commit_secs = started.elapsed().as_secs_f64();
    let stats = log.stats();
    let commits = stats
        .sync_commits
        .load(std::sync::atomic::Ordering::Relaxed);
    let log_syncs = stats.syncs.load(std::sync::atomic::Ordering::Relaxed);
    drop(log);
    let log_file = backend
        .open(&log_path, &OpenOptions::new(FlushMethod::Fsync))
        .map_err(|e| e.to_string())?;
    let (_, recovered) = Log::recover(log_file, |_| Ok(())).map_err(|e| e.to_string())?;

    // 3. Read back and verify every page.
    let space = Tablespace::open(
        &*backend,
        &path,
        &OpenOptions::new(opts.flush_method),
        ChecksumPolicy::new(opts.checksum),
    )
    .map_err(|e| e.to_string())?;
    let started = Instant::now();
    let mut read_back_failures = 0;
    let mut buf = AlignedBuf::page(size);
    for p in 0..pages {
        if space.read_page(p, &mut buf).is_err() {
            read_back_failures += 1;
        }
    }
    let read_verify_secs = started.elapsed().as_secs_f64();
    drop(space);

    // 4. Damage a copy and let verify find it.
    let damaged_page = (pages / 2).max(1);
    let copy = dir.join("demo-damaged.ibd");
    std::fs::copy(&path, &copy).map_err(|e| format!("{}: {e}", copy.display()))?;
    let mut bytes = std::fs::read(&copy).map_err(|e| format!("{}: {e}", copy.display()))?;
    let at = damaged_page as usize * size.bytes() + size.bytes() / 2;
    if let Some(b) = bytes.get_mut(at) {
        *b ^= 0x20;
    }
    std::fs::write(&copy, &bytes).map_err(|e| format!("{}: {e}", copy.display()))?;
    let read = ReadOpts {
        page_size: None,
        checksum: ChecksumPolicy::new(opts.checksum),
    };
    let found = verify::verify_file(&copy, &read).map_err(|e| e.to_string())?;
    let corrupt: Vec<u64> = found.corrupt_pages.iter().map(|c| c.page).collect();
    let damage_detected = corrupt == vec![u64::from(damaged_page)];

    // 5. Tables through the embedded API.
    let tables = tables::run(dir, opts.rows)?;

    Ok(DemoReport {
        dir: dir.display().to_string(),
        tablespace: path.display().to_string(),
        backend: backend.name().to_string(),
        flush_method: opts.flush_method.to_string(),
        page_size: size.bytes(),
        pages,
        write_secs,
        sync_secs,
        read_verify_secs,
        read_back_failures,
        commits,
        log_syncs,
        commit_secs,
        recovered_groups: recovered.groups,
        damaged_page,
        damage_detected,
        tables,
    })
}

fn rate(n: f64, secs: f64) -> String {
    if secs <= 0.0 {
        return "-".into();
    }
    let r = n / secs;
    if r >= 10_000.0 {
        format!("{:.0}k", r / 1000.0)
    } else {
        format!("{r:.0}")
    }
}

fn print_text(r: &DemoReport, out: &mut dyn Write) -> std::io::Result<()> {
    let mib = f64::from(r.pages) * r.page_size as f64 / f64::from(1 << 20);
    writeln!(out, "minnow demo in {}", r.dir)?;
    writeln!(
        out,
        "backend {}, flush method {}, {} KiB pages",
        r.backend,
        r.flush_method,
        r.page_size / 1024
    )?;
    writeln!(
        out,
        "\n== 1. create a tablespace and write {} pages ({mib:.1} MiB)",
        r.pages
    )?;
    writeln!(
        out,
        "wrote in {:.3} s ({} pages/s, {:.0} MB/s), then one sync in {:.1} ms",
        r.write_secs,
        rate(f64::from(r.pages), r.write_secs),
        mib * 1.048_576 / r.write_secs.max(1e-9),
        r.sync_secs * 1000.0
    )?;
    writeln!(
        out,
        "\n== 2. redo log: durable commits from several threads (group commit)"
    )?;
    writeln!(
        out,
        "{} commits with flush_log_at_trx_commit=1 in {:.3} s ({} commits/s) needed {} syncs: \
         {:.1} commits per sync",
        r.commits,
        r.commit_secs,
        rate(r.commits as f64, r.commit_secs),
        r.log_syncs,
        r.commits as f64 / (r.log_syncs.max(1)) as f64
    )?;
    writeln!(
        out,
        "reopening the log as crash recovery does found {} complete mini-transaction groups",
        r.recovered_groups
    )?;
    writeln!(out, "\n== 3. read back every page and verify its checksum")?;
    writeln!(
        out,
        "{} pages in {:.3} s ({} pages/s), {} failed",
        r.pages,
        r.read_verify_secs,
        rate(f64::from(r.pages), r.read_verify_secs),
        r.read_back_failures
    )?;
    writeln!(
        out,
        "\n== 4. flip one bit of page {} in a copy, then verify the copy",
        r.damaged_page
    )?;
    writeln!(
        out,
        "{}",
        if r.damage_detected {
            format!(
                "verify reported page {} and nothing else: damage found",
                r.damaged_page
            )
        } else {
            "verify did NOT report exactly the damaged page".to_string()
        }
    )?;
    let t = &r.tables;
    let us = |secs: f64, n: u64| secs * 1e6 / (n.max(1)) as f64;
    writeln!(
        out,
        "\n== 5. tables: sysbench's sbtest1 (id PK, k with index k_1, c CHAR(120), pad CHAR(60))"
    )?;
    writeln!(
        out,
        "loaded {} rows in key order in {:.2} s ({} rows/s, flush_log_at_trx_commit=2)",
        t.rows,
        t.load_secs,
        rate(t.rows as f64, t.load_secs)
    )?;
    writeln!(
        out,
        "{} point selects by id: {:.1} us each; {} ranges of 10 rows: {:.1} us each",
        t.point_selects,
        us(t.point_secs, t.point_selects),
        t.ranges,
        us(t.range_secs, t.ranges)
    )?;
    writeln!(
        out,
        "scan of k_1 for k < 100: {} rows from the index alone (covering: {}), {} rows when \
         asking for c (one primary-key lookup per row)",
        t.covering_rows, t.covering, t.fetching_rows
    )?;
    writeln!(
        out,
        "check(): {} indexes agree with their tables; closed and reopened: {} redo groups replayed",
        t.checked_indexes, t.reopen_redo_groups
    )?;
    Ok(())
}

/// Used by the CLI: the default number of pages (64 MiB of 16 KiB pages).
pub const DEFAULT_PAGES: u32 = 4096;
