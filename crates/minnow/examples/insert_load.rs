//! Transactional inserts as an application writes them, for timing and instruction counts:
//! `insert_load N BATCH` inserts N rows of random 24-byte keys and 150-byte values (redb's
//! benchmark shape) through `begin()`, `Transaction::insert` and `commit()`, BATCH rows per
//! transaction (BATCH = N: one transaction); an optional third argument sets the redo log's
//! size in MiB (default: the configuration's). Prints µs per key: wall clock, CPU time of the
//! inserting thread, and CPU time of the whole process (page cleaner and log writer
//! included). Run under callgrind with two values of N and subtract to get the
//! instructions of one insert.
use std::time::Instant;

use minnow::{ColumnDef, ColumnType, Config, Database, TableDef, Value};

fn arg(i: usize, default: u64) -> u64 {
    std::env::args()
        .nth(i)
        .and_then(|a| a.parse().ok())
        .unwrap_or(default)
}

/// User plus system CPU seconds so far of this process (`what` = "self") or of the calling
/// thread ("thread-self").
fn cpu_seconds(what: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{what}/stat")).unwrap_or_default();
    // Fields 14 and 15 (utime, stime) in clock ticks, counted after the `(comm)` field.
    let rest = stat.rsplit(')').next().unwrap_or_default();
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|s| s.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n = arg(1, 100_000);
    let batch = arg(2, n).max(1);
    let dir = tempfile::tempdir()?;
    let mut config = Config {
        buffer_pool_size: 1 << 30,
        buffer_pool_dump_at_shutdown: false,
        ..Config::default()
    };
    if let Some(mib) = std::env::args().nth(3).and_then(|a| a.parse::<u64>().ok()) {
        config.log_file_size = mib << 20;
    }
    let db = Database::create(dir.path(), config)?;
    let t = db.create_table(
        TableDef::new("t")
            .column(ColumnDef::new("key", ColumnType::Fixed(24)))
            .column(ColumnDef::new("value", ColumnType::Fixed(150)))
            .primary_key(&["key"]),
    )?;
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let value = vec![7u8; 150];
    let (start, cpu0, main0) = (
        Instant::now(),
        cpu_seconds("self"),
        cpu_seconds("thread-self"),
    );
    let mut done = 0;
    while done < n {
        let mut trx = db.begin()?;
        for _ in 0..batch.min(n - done) {
            let mut key = [0u8; 24];
            for c in key.chunks_mut(8) {
                c.copy_from_slice(&next().to_be_bytes());
            }
            trx.insert(
                &t,
                &[Value::Bytes(key.to_vec()), Value::Bytes(value.clone())],
            )?;
            done += 1;
        }
        trx.commit()?;
    }
    let wall = start.elapsed().as_secs_f64();
    println!(
        "{n} keys, {batch} per transaction: {:.2} µs/key wall, {:.2} µs/key CPU of the \
         inserting thread, {:.2} µs/key CPU of the process",
        wall * 1e6 / n as f64,
        (cpu_seconds("thread-self") - main0) * 1e6 / n as f64,
        (cpu_seconds("self") - cpu0) * 1e6 / n as f64
    );
    Ok(())
}
