//! What a bulk load in one transaction writes to disk: `trx_load [KEYS] [LOG_MIB]` creates a
//! table `kv (key BINARY(24) PRIMARY KEY, value BINARY(150))` in a temporary directory, inserts
//! KEYS (default 1,000,000) random keys in one `begin()`..`commit()` (the redb benchmark's
//! shape), and prints the time per key, the bytes the process handed to write calls (`wchar` of
//! `/proc/self/io`, Linux only) per key and as a multiple of the table file's final size, and
//! where they went (redo, page flushes, doublewrite). LOG_MIB sets `log_file_size` (default:
//! the configuration's default, sized from the pool). The buffer pool is 1 GiB, as compare/'s
//! default cache.
use std::time::Instant;

use minnow::inspect::Internals;
use minnow::{ColumnDef, ColumnType, Config, Database, FlushAtCommit, TableDef, Value};

/// A counter of `/proc/self/io` (0 where unknown): `wchar` is the bytes handed to write
/// calls, `write_bytes` what the kernel accounts as written to storage (which, with large
/// page-cache folios, counts a whole folio for a 16 KiB write into it).
fn proc_io(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Bytes handed to write calls so far.
fn write_bytes() -> u64 {
    proc_io("wchar")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let keys: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let log_mib: Option<u64> = args.next().and_then(|a| a.parse().ok());
    let dir = tempfile::tempdir_in(std::env::var_os("TRX_LOAD_DIR").unwrap_or(".".into()))?;
    let mut config = Config {
        buffer_pool_size: 1 << 30,
        flush_log_at_trx_commit: FlushAtCommit::Sync,
        buffer_pool_dump_at_shutdown: false,
        ..Config::default()
    };
    if let Some(m) = log_mib {
        config.log_file_size = m << 20;
    }
    let log_size = config.redo_capacity();
    let db = Database::create(dir.path(), config)?;
    let t = db.create_table(
        TableDef::new("kv")
            .column(ColumnDef::new("key", ColumnType::Fixed(24)))
            .column(ColumnDef::new("value", ColumnType::Fixed(150)))
            .primary_key(&["key"]),
    )?;
    let pool = db.buffer_pool()?;
    let log = pool.log().ok_or("no redo log")?;
    let redo0 = log.stats().bytes.load(std::sync::atomic::Ordering::Relaxed);
    let flushed0 = pool.stats().flush_list_flushed + pool.stats().lru_flushed;
    let w0 = write_bytes();
    let s0 = proc_io("write_bytes");
    let start = Instant::now();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut tx = db.begin()?;
    for _ in 0..keys {
        let mut key = [0u8; 24];
        for c in key.chunks_mut(8) {
            c.copy_from_slice(&next().to_le_bytes());
        }
        let mut value = vec![0u8; 150];
        for c in value.chunks_mut(8) {
            let v = next().to_le_bytes();
            c.copy_from_slice(&v[..c.len()]);
        }
        tx.insert(&t, &[Value::Bytes(key.to_vec()), Value::Bytes(value)])?;
    }
    tx.commit()?;
    let load = start.elapsed();
    let w_load = write_bytes() - w0;
    let s = pool.stats();
    let pages = s.flush_list_flushed + s.lru_flushed - flushed0;
    let redo = log.stats().bytes.load(std::sync::atomic::Ordering::Relaxed) - redo0;
    let checkpoints = log
        .stats()
        .checkpoints
        .load(std::sync::atomic::Ordering::Relaxed);
    drop(t);
    db.close()?;
    let w_all = write_bytes() - w0;
    let storage = proc_io("write_bytes") - s0;
    let table = std::fs::read_dir(dir.path())?
        .filter_map(|e| e.ok())
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.ends_with(".ibd") || n == "ibdata1"
        })
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum::<u64>();
    let files = std::fs::read_dir(dir.path())?
        .filter_map(|e| e.ok())
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum::<u64>();
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    println!("keys {keys}, log_file_size {:.0} MiB", mib(log_size));
    println!(
        "load: {:.2} us/key, {:.1} s",
        load.as_secs_f64() * 1e6 / keys as f64,
        load.as_secs_f64()
    );
    println!(
        "written during the load: {:.1} MiB ({:.0} B/key); to close: {:.1} MiB ({:.0} B/key)",
        mib(w_load),
        w_load as f64 / keys as f64,
        mib(w_all),
        w_all as f64 / keys as f64
    );
    println!(
        "write_bytes (kernel accounting) to close: {:.1} MiB",
        mib(storage)
    );
    println!(
        "table files (ibdata1, .ibd) {:.1} MiB; written to close / table = {:.2}x; all files {:.1} MiB",
        mib(table),
        w_all as f64 / table.max(1) as f64,
        mib(files)
    );
    println!(
        "during the load: redo {:.1} MiB ({:.0} B/key), {pages} pages flushed ({:.1} MiB), {checkpoints} checkpoints",
        mib(redo),
        redo as f64 / keys as f64,
        mib(pages * 16384)
    );
    Ok(())
}
