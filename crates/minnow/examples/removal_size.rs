//! The removal phase of the peer comparison (docs/COMPARE.md) alone, without the other
//! engines: the size of the database after half its keys are removed, and the time the
//! removal takes.
//!
//! ```sh
//! cargo run --release -p minnow --example removal_size -- 1000000 [MERGE_THRESHOLD]
//! ```
//!
//! As compare/'s key-value workload with `--keys BULK`: BULK rows of redb's shape (24-byte
//! random keys, 150-byte values) inserted in random key order in one transaction, then 1,000
//! transactions of one row and 100 of 1,000 rows, every commit durable; then the first half
//! of the keys (in the order they were made, so in random key order) removed in one
//! transaction; then a close with a slow shutdown (`fast_shutdown=0`: purge runs to the end,
//! the free tail is cut) and the directory's size. The keys come from a fixed seed (not
//! compare/'s generator: the same shape, not the same bytes). The config is compare/'s: the
//! defaults with a 1 GiB buffer pool and `fast_shutdown=0`; MERGE_THRESHOLD, if given, sets
//! `merge_threshold`. Prints the removal's time per key (wall clock, and this thread's time
//! on a CPU, the steadier figure on a shared machine), the sizes closed before and after the
//! removals, the wall time of the close after the removals (its purge, merges included),
//! and what `Database::check` finds left of the removals after the close.

use minnow::{ColumnDef, ColumnType, Config, Database, TableDef, Value};
use minnow_io::SplitMix64;

const KEY: usize = 24;
const VALUE: usize = 150;

fn bytes(rng: &mut SplitMix64, n: usize) -> Vec<u8> {
    let mut b = Vec::with_capacity(n + 8);
    while b.len() < n {
        b.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    b.truncate(n);
    b
}

fn dir_size(dir: &std::path::Path) -> std::io::Result<u64> {
    let mut total = 0;
    for e in std::fs::read_dir(dir)? {
        let m = e?.metadata()?;
        if m.is_file() {
            total += m.len();
        }
    }
    Ok(total)
}

/// Nanoseconds this thread has run on a CPU (Linux's `/proc/thread-self/schedstat`).
fn on_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

fn mib(b: u64) -> f64 {
    b as f64 / (1u64 << 20) as f64
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let bulk: usize = args
        .next()
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(1_000_000);
    let mut config = Config {
        buffer_pool_size: 1 << 30,
        fast_shutdown: 0,
        ..Config::default()
    };
    if let Some(m) = args.next() {
        config.set("merge_threshold", &m)?;
    }
    let (individual, batches, batch) = (1_000usize, 100usize, 1_000usize);
    let total = bulk + individual + batches * batch;
    let mut rng = SplitMix64(42);
    let keys: Vec<Vec<u8>> = (0..total).map(|_| bytes(&mut rng, KEY)).collect();
    let row = |i: usize, rng: &mut SplitMix64| {
        [
            Value::Bytes(keys[i].clone()),
            Value::Bytes(bytes(rng, VALUE)),
        ]
    };
    let dir = tempfile::tempdir()?;
    let db = Database::create(dir.path(), config.clone())?;
    let t = db.create_table(
        TableDef::new("kv")
            .column(ColumnDef::new("key", ColumnType::Fixed(KEY as u16)))
            .column(ColumnDef::new("value", ColumnType::Fixed(VALUE as u16)))
            .primary_key(&["key"]),
    )?;
    let mut insert = |from: usize, to: usize| -> Result<(), Box<dyn std::error::Error>> {
        let mut tx = db.begin()?;
        for i in from..to {
            tx.insert(&t, &row(i, &mut rng))?;
        }
        tx.commit()?;
        Ok(())
    };
    insert(0, bulk)?;
    for i in bulk..bulk + individual {
        insert(i, i + 1)?;
    }
    for b in 0..batches {
        let at = bulk + individual + b * batch;
        insert(at, at + batch)?;
    }
    drop(t);
    db.close()?;
    let loaded = dir_size(dir.path())?;

    let db = Database::open(dir.path(), config.clone())?;
    let t = db.table("kv")?;
    let half = total / 2;
    let (cpu0, wall0) = (on_cpu_ns(), std::time::Instant::now());
    let mut tx = db.begin()?;
    let mut removed = 0usize;
    for k in &keys[..half] {
        removed += usize::from(tx.delete(&t, &[Value::Bytes(k.clone())])?);
    }
    tx.commit()?;
    let (wall, cpu) = (wall0.elapsed(), on_cpu_ns().zip(cpu0).map(|(b, a)| b - a));
    assert_eq!(removed, half, "every removal finds its row");
    drop(t);
    // The slow shutdown's purge removes the delete-marked rows (and merges pages).
    let close0 = std::time::Instant::now();
    db.close()?;
    let close = close0.elapsed();
    let after = dir_size(dir.path())?;

    let db = Database::open(dir.path(), config)?;
    let report = db.check()?;
    db.close()?;

    let per = |ns: u128| ns as f64 / 1e3 / half as f64;
    println!("{total} keys loaded, {half} removed in one transaction");
    println!(
        "  removal: {:.2} µs/key wall, {} µs/key on CPU (this thread)",
        per(wall.as_nanos()),
        cpu.map_or("unknown".to_owned(), |c| format!(
            "{:.2}",
            per(u128::from(c))
        ))
    );
    println!(
        "  close after the removals (purge to the end, fast_shutdown=0): {:.1} s wall",
        close.as_secs_f64()
    );
    println!(
        "  size closed: {:.1} MiB loaded, {:.1} MiB after the removals ({} rows left)",
        mib(loaded),
        mib(after),
        report.rows.get("kv").copied().unwrap_or(0)
    );
    println!(
        "  after the removals: {} delete-marked records, {} undo pages, history {}",
        report.delete_marked, report.undo_pages, report.history_len
    );
    Ok(())
}
