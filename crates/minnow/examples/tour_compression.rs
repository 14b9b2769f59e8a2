//! The tour's compression experiment (`docs/tour/09-compression.md`): the same rows in a
//! compressed and an uncompressed table, what compression failures cost while loading, and
//! the zip cache bringing a page back without IO.
//!
//! ```sh
//! cargo run -q -p minnow --example tour_compression                  # in a temporary directory
//! cargo run -q -p minnow --example tour_compression -- --keep DIR    # leave the databases in DIR
//! ```
//!
//! 1. [`ROWS`] rows of generated notes (words drawn by a fixed PRNG, so they compress about
//!    3:1) go into table `notes` twice: compressed (`KEY_BLOCK_SIZE=4`, zlib level 6) in
//!    database `zip`, uncompressed in database `plain`. Both are closed and the files
//!    compared: the compressed tablespace against what the plain table added to `ibdata1`.
//! 2. The load's compression counters: compressions, compression failures, the splits they
//!    caused and the padding the index earned (per index, InnoDB's `INNODB_CMP_PER_INDEX`).
//! 3. `zip` is reopened with a 1 MiB buffer pool (64 frames, fewer than the table's pages)
//!    and read twice end to end: the first pass reads every block from disk, the second finds
//!    pages whose frames were evicted still in the zip cache (zip hits: inflated, not read).
//!
//! With `--keep DIR` (DIR must not exist yet) the two databases are left in `DIR/zip` and
//! `DIR/plain` for `minnow inspect`, `minnow tree` and `minnow status`.
//!
//! The output is the same on every run and machine: one thread, a fixed PRNG, and no page
//! cleaner or purge thread whose timing could change what the buffer pool holds.

use std::error::Error;
use std::path::{Path, PathBuf};

use minnow::{
    ColumnDef, ColumnType, Compression, Config, Database, FlushAtCommit, KeyBlockSize, Scan,
    TableDef, Value, ZipAlgorithm, ZlibLevel,
};

/// Rows loaded into each table.
const ROWS: u64 = 6000;

/// Words the notes are made of.
const WORDS: [&str; 16] = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    "kilo", "lima", "mike", "november", "oscar", "papa",
];

/// A fixed xorshift PRNG: the same notes on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn table_def(compressed: bool) -> TableDef {
    let def = TableDef::new("notes")
        .column(ColumnDef::new("id", ColumnType::U64))
        .column(ColumnDef::new("body", ColumnType::Var(300)))
        .primary_key(&["id"]);
    if compressed {
        def.compressed(compression())
    } else {
        def
    }
}

/// `KEY_BLOCK_SIZE=4`, zlib at InnoDB's default level 6.
fn compression() -> Compression {
    Compression::new(KeyBlockSize::K4, ZipAlgorithm::Zlib(ZlibLevel::DEFAULT))
}

fn config() -> Config {
    Config {
        buffer_pool_dump_at_shutdown: false,
        // No fsync per insert: the experiment is about pages, not durability.
        flush_log_at_trx_commit: FlushAtCommit::Write,
        log_file_size: 8 << 20,
        // No background threads: which pages are flushed, purged and evicted when depends
        // only on this program, so the zip cache's counters are the same on every run.
        page_cleaners: 0,
        purge_threads: 0,
        ..Config::default()
    }
}

/// Note `id`: 20 words.
fn note(rng: &mut Rng, id: u64) -> String {
    let mut s = format!("{id:05}:");
    for _ in 0..20 {
        s.push(' ');
        s.push_str(WORDS[(rng.next() % 16) as usize]);
    }
    s
}

/// Loads [`ROWS`] notes into a new database in `dir` and closes it; for the compressed table,
/// returns the report of step 2 (what the load's compressions cost).
fn load(dir: &Path, compressed: bool) -> Result<Vec<String>, Box<dyn Error>> {
    let db = Database::create(dir, config())?;
    let t = db.create_table(table_def(compressed))?;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for id in 0..ROWS {
        t.insert(&[Value::UInt(id), Value::text(&note(&mut rng, id))])?;
        // What the purge thread would do, at fixed points: undo pages are reused instead of
        // growing `ibdata1`, whose growth step 1 counts as the plain table's size.
        if id % 100 == 99 {
            db.purge()?;
        }
    }
    let mut report = Vec::new();
    if compressed {
        let z = &db.status()?.compression.tablespaces[0];
        report.push(format!(
            "  {}: {} compressions, {} failed ({:.1} %)",
            z.file,
            z.stats.compress_ops,
            z.stats.compress_failures,
            100.0 * z.stats.compress_failures as f64 / z.stats.compress_ops.max(1) as f64,
        ));
        let mut failures = 0;
        let mut splits = 0;
        for (index, s) in t.compression_stats() {
            report.push(format!(
                "  index {index}: {} operations compressed, {} failures, {} splits after a \
                 failure, padding {} bytes",
                s.ops, s.failures, s.zip_splits, s.pad_bytes
            ));
            failures += s.failures;
            splits += s.zip_splits;
        }
        // Every failure was answered by reorganizing or splitting the page, then retrying:
        // all rows are there.
        assert!(
            failures > 0,
            "no compression failure: the rows fit too well"
        );
        assert!(
            splits > 0 && splits <= failures,
            "{splits} splits, {failures} failures"
        );
        assert_eq!(t.scan(Scan::all())?.count(), ROWS as usize);
    }
    drop(t);
    db.close()?;
    Ok(report)
}

fn file_len(p: &Path) -> Result<u64, Box<dyn Error>> {
    Ok(std::fs::metadata(p)?.len())
}

fn run(dir: &Path) -> Result<(), Box<dyn Error>> {
    let (zip_dir, plain_dir, empty_dir) = (dir.join("zip"), dir.join("plain"), dir.join("empty"));
    println!(
        "step 1: {ROWS} notes, compressed ({}) and not; the files after a clean close",
        compression()
    );
    let cost = load(&zip_dir, true)?;
    load(&plain_dir, false)?;
    // A database with the table but no rows: what ibdata1 holds without them.
    let db = Database::create(&empty_dir, config())?;
    db.create_table(table_def(false))?;
    db.close()?;

    let zip_file = zip_dir.join(compression().file_name());
    let zip_bytes = file_len(&zip_file)?;
    let plain_bytes = file_len(&plain_dir.join(minnow::inspect::SYSTEM_TABLESPACE))?
        - file_len(&empty_dir.join(minnow::inspect::SYSTEM_TABLESPACE))?;
    println!(
        "  zip/{}: {zip_bytes} bytes ({} blocks of 4096)",
        compression().file_name(),
        zip_bytes / 4096
    );
    println!(
        "  plain/ibdata1 grew by {plain_bytes} bytes for the same rows ({} pages of 16384)",
        plain_bytes / 16384
    );
    println!(
        "  the compressed table takes {:.0} % of the space",
        100.0 * zip_bytes as f64 / plain_bytes as f64
    );
    assert!(zip_bytes < plain_bytes, "{zip_bytes} >= {plain_bytes}");
    std::fs::remove_dir_all(&empty_dir)?;
    println!("step 2: what loading {ROWS} rows into the compressed table cost");
    for line in cost {
        println!("{line}");
    }

    println!("step 3: reopen zip with a 1 MiB buffer pool (64 frames) and read every row twice");
    let db = Database::open(
        &zip_dir,
        Config {
            buffer_pool_size: 1 << 20,
            buffer_pool_instances: 1,
            ..config()
        },
    )?;
    let t = db.table("notes")?;
    for pass in 1..=2 {
        let before = db.status()?;
        let rows = t.scan(Scan::all())?.count();
        assert_eq!(rows, ROWS as usize);
        let after = db.status()?;
        let (c0, c1) = (&before.compression.cache, &after.compression.cache);
        let (z0, z1) = (
            &before.compression.tablespaces[0].stats,
            &after.compression.tablespaces[0].stats,
        );
        println!(
            "  pass {pass}: {rows} rows; {} pages inflated; zip cache: {} misses (block read \
             from disk), {} hits (block found in memory)",
            z1.decompress_ops - z0.decompress_ops,
            c1.zip_misses - c0.zip_misses,
            c1.zip_hits - c0.zip_hits
        );
        if pass == 2 {
            assert!(
                c1.zip_hits > c0.zip_hits,
                "no page came back from the zip cache"
            );
            println!(
                "  zip cache: {} blocks ({} bytes) in {} frames lent by the pool; io_bound={}",
                c1.blocks, c1.block_bytes, c1.frames_lent, c1.io_bound
            );
        }
    }
    drop(t);
    db.close()?;
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let keep: Option<PathBuf> = match args.as_slice() {
        [] => None,
        [flag, dir] if flag == "--keep" => Some(PathBuf::from(dir)),
        _ => return Err("usage: tour_compression [--keep DIR]".into()),
    };
    match keep {
        Some(dir) => {
            if dir.exists() {
                return Err(
                    format!("{} exists; --keep wants a new directory", dir.display()).into(),
                );
            }
            run(&dir)?;
            println!(
                "left in {}: try `minnow inspect {}/zip/{}`",
                dir.display(),
                dir.display(),
                compression().file_name()
            );
        }
        None => {
            let tmp = tempfile::tempdir()?;
            run(tmp.path())?;
        }
    }
    Ok(())
}
