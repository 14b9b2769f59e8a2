//! The tour's doublewrite experiment (`docs/tour/05-doublewrite.md`): cut the power while
//! pages are being written in place, and watch recovery with the doublewrite buffer on, then
//! off.
//!
//! ```sh
//! cargo run -p minnow --example tour_torn_page
//! ```
//!
//! Each run builds a small database in a temporary directory on a [`CrashSim`] (a backend that
//! passes IO through to real files and remembers what was not synced yet), then:
//!
//! 1. loads 600 rows and checkpoints, so the files are clean;
//! 2. updates every row: each statement's redo is synced (`flush_log_at_trx_commit = 1`), the
//!    changed pages are only dirty in the buffer pool;
//! 3. flushes the dirty pages, with the device set to die just before the data file's sync: the
//!    doublewrite copy is written and synced, the in-place writes are issued, nothing after;
//! 4. cuts the power: each unsynced in-place write is kept, lost or **torn** (some 512-byte
//!    or 4 KiB chunks new, the rest old), as a seed decides, and says what each torn write
//!    left: a page that fails its checksum, or (when the changed bytes all fell in chunks of
//!    one version) the new or the old page whole;
//! 5. opens the database again with an ordinary backend and prints what recovery did.
//!
//! Step 1-4 repeat with the next seed until the cut tears at least one page. The seeds are
//! fixed and no background thread runs (no page cleaner, no purge), so the output is the
//! same on every run and every machine (the temporary directory is printed as `DIR`).

use std::error::Error;
use std::path::Path;
use std::sync::Arc;

use minnow::DoublewriteMode;
use minnow::backend::{CrashSim, Fate, SyncBackend};
use minnow::inspect::Internals;
use minnow::{ColumnDef, ColumnType, Config, Database, IoBackend, TableDef, Value};
use minnow_page::checksum::{self, ChecksumAlgorithm, ChecksumPolicy, Verdict};

const ROWS: u64 = 600;

fn config(doublewrite: DoublewriteMode, io_backend: IoBackend) -> Config {
    Config {
        doublewrite,
        io_backend,
        // No background flushing: every page write in this program is one we asked for.
        page_cleaners: 0,
        // No purge thread: it would change undo pages and write redo at its own pace, so
        // the dirty pages, the torn page's bytes and the redo count would differ per run.
        purge_threads: 0,
        buffer_pool_dump_at_shutdown: false,
        read_ahead_threshold: 0,
        log_file_size: 4 << 20,
        ..Config::default()
    }
}

fn table() -> TableDef {
    TableDef::new("t")
        .column(ColumnDef::new("id", ColumnType::U64))
        .column(ColumnDef::new("v", ColumnType::Var(200)))
        .primary_key(&["id"])
}

fn value(id: u64, version: u8) -> Value {
    Value::Bytes(vec![b'a' + version; 100 + (id % 7) as usize])
}

/// What one crash left: the torn pages of `ibdata1` (page number, chunk size, chunks that
/// persisted, chunks, what the page now is) and how many dirty pages the flush was writing.
struct Crash {
    seed: u64,
    torn: Vec<(u64, usize, usize, usize, Left)>,
    /// Pages whose in-place write was kept whole, and lost whole.
    kept: Vec<u64>,
    lost: Vec<u64>,
    dirty_pages: usize,
}

/// What a torn write left in the file: a mix of chunks usually fails the checksum, but when
/// every byte the write changed fell in chunks of one version, the page is that version whole.
#[derive(Clone, Copy)]
enum Left {
    /// The checksum fails: neither version.
    Mix,
    /// A valid page, byte for byte the one the write carried.
    New,
    /// A valid page, the one the write was replacing.
    Old,
}

/// What a torn write left at page `page` of `after`, given `written`, the file as it was with
/// every in-place write complete.
fn left(after: &[u8], written: &[u8], page: u64, page_size: usize) -> Left {
    let at = page as usize * page_size;
    let (Some(now), Some(new)) = (
        after.get(at..at + page_size),
        written.get(at..at + page_size),
    ) else {
        return Left::Mix;
    };
    match checksum::verify(now, ChecksumPolicy::new(ChecksumAlgorithm::Crc32)) {
        Ok(Verdict::Valid(_)) if now == new => Left::New,
        Ok(Verdict::Valid(_)) => Left::Old,
        _ => Left::Mix,
    }
}

/// Steps 1-4 in `dir` with one seed.
fn crash(dir: &Path, mode: DoublewriteMode, seed: u64) -> Result<Crash, Box<dyn Error>> {
    let sim = Arc::new(CrashSim::new(Arc::new(SyncBackend::new())));
    let db = Database::create(dir, config(mode, IoBackend::Custom(sim.clone())))?;
    let t = db.create_table(table())?;
    for id in 0..ROWS {
        t.insert(&[Value::UInt(id), value(id, 0)])?;
    }
    // 1. Everything written, synced and checkpointed.
    db.buffer_pool()?.flush_all()?;
    // 2. Every row changes; each transaction's redo is synced before `commit` returns.
    for id in 0..ROWS {
        let mut tx = db.begin()?;
        tx.update(&t, &[Value::UInt(id), value(id, 1)])?;
        let durability = tx.commit()?;
        if durability != minnow::Durability::Synced {
            return Err("flush_log_at_trx_commit = 1 should sync every statement".into());
        }
    }
    let dirty_pages = db.buffer_pool()?.flush_list().len();
    // 3. A flush is: (doublewrite only) write the batch to the segment file, sync it; then
    //    one write per page in place; then sync the data file. Die just before that sync.
    let segment_ops = if mode == DoublewriteMode::Off { 0 } else { 2 };
    sim.arm(segment_ops + dirty_pages as u64);
    let flushed = db.buffer_pool()?.flush_all();
    if flushed.is_ok() || !sim.is_dead() {
        return Err("the device was meant to die before the data file's sync".into());
    }
    drop(t);
    drop(db); // its final flush fails too: the device is dead
    // 4. The power cut. The simulator passed every write through, so the file holds each
    //    page as the flush wrote it until the cut puts back what was not durable.
    let path = dir.join(minnow::inspect::SYSTEM_TABLESPACE);
    let written = std::fs::read(&path)?;
    let report = sim.power_cut(seed)?;
    let after = std::fs::read(&path)?;
    let ibdata = report
        .file(&path)
        .ok_or("the simulator does not know ibdata1")?;
    let page_size = Config::default().page_size.bytes() as u64;
    let torn = ibdata
        .writes
        .iter()
        .filter_map(|w| match w.fate {
            Fate::Torn {
                granularity,
                persisted,
                chunks,
            } => {
                let page = w.offset / page_size;
                let left = left(&after, &written, page, page_size as usize);
                Some((page, granularity, persisted, chunks, left))
            }
            _ => None,
        })
        .collect();
    let pages = |fate: Fate| -> Vec<u64> {
        ibdata
            .writes
            .iter()
            .filter(|w| w.fate == fate)
            .map(|w| w.offset / page_size)
            .collect()
    };
    Ok(Crash {
        seed,
        torn,
        kept: pages(Fate::Kept),
        lost: pages(Fate::Lost),
        dirty_pages,
    })
}

/// Steps 1-5 for one doublewrite mode.
fn run(mode: DoublewriteMode) -> Result<(), Box<dyn Error>> {
    println!("== innodb_doublewrite = {mode:?}");
    let mut seed = 0;
    let (tmp, crash) = loop {
        let tmp = tempfile::tempdir()?;
        let crash = crash(tmp.path(), mode, seed)?;
        if !crash.torn.is_empty() {
            break (tmp, crash);
        }
        seed += 1;
        if seed == 100 {
            return Err("no seed in 0..100 tore a page".into());
        }
    };
    println!(
        "power cut (seed {}) while {} dirty pages were written in place",
        crash.seed, crash.dirty_pages
    );
    println!(
        "  pages written whole: {:?}; pages not written at all: {:?}",
        crash.kept, crash.lost
    );
    for (page, granularity, persisted, chunks, left) in &crash.torn {
        let left = match left {
            Left::Mix => "its checksum fails",
            Left::New => "yet it is the new page whole (every changed byte was in a new chunk)",
            Left::Old => "yet it is the old page whole (no changed byte was in a new chunk)",
        };
        println!(
            "  page {page} is TORN: {persisted} of its {chunks} chunks of {granularity} bytes \
             are new, the rest are old: {left}"
        );
    }
    match Database::open(tmp.path(), config(mode, IoBackend::Sync)) {
        Ok(db) => {
            let r = db.open_report();
            println!(
                "open: restored {} page(s) from the doublewrite buffer, then replayed {} redo \
                 groups into {} pages",
                r.pages_repaired, r.redo_groups, r.pages_applied
            );
            let check = db.check()?;
            let t = db.table("t")?;
            let mut updated = 0;
            for id in 0..ROWS {
                if t.get(&[Value::UInt(id)])?.map(|row| row[1] == value(id, 1)) == Some(true) {
                    updated += 1;
                }
            }
            println!(
                "check: every B-tree valid, {} rows; {updated} of {ROWS} rows carry their update",
                check.rows["t"]
            );
            db.close()?;
        }
        Err(e) => {
            // The temporary directory's name differs on every run: print it as `DIR`.
            let e = e
                .to_string()
                .replace(&tmp.path().display().to_string(), "DIR");
            println!("open FAILED: {e}");
            println!("  the redo log holds every update, but redo records are edits of an intact");
            println!("  page: nothing can rebuild a page that is half old and half new");
        }
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    run(DoublewriteMode::On)?;
    println!();
    run(DoublewriteMode::Off)?;
    Ok(())
}
