//! 10-entry range reads, for timing and instruction counts (callgrind), the shape of redb's
//! benchmark: `range_loop ROWS SCANS` loads ROWS random 24-byte keys with 150-byte values
//! (batches of 10 000 rows, one transaction each), then runs SCANS scans of 10 rows, each
//! through [`Table::scan`](minnow::Table::scan) from a random key, and prints the time per
//! scan. For instructions per scan run it under callgrind with two values of SCANS and
//! subtract.
use std::ops::Bound;
use std::time::Instant;

use minnow::{ColumnDef, ColumnType, Config, Database, Scan, TableDef, Value};

/// The next number of a xorshift generator (fixed seed: the same keys every run).
fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// A random 24-byte key.
fn key(x: &mut u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(24);
    for _ in 0..3 {
        k.extend_from_slice(&next(x).to_be_bytes());
    }
    k
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let arg = |i: usize, d: u64| {
        std::env::args()
            .nth(i)
            .and_then(|a| a.parse().ok())
            .unwrap_or(d)
    };
    let (rows, scans) = (arg(1, 200_000), arg(2, 100_000));
    let dir = tempfile::tempdir()?;
    let config = Config {
        flush_log_at_trx_commit: minnow::FlushAtCommit::Lazy,
        buffer_pool_dump_at_shutdown: false,
        ..Config::default()
    };
    let db = Database::create(dir.path(), config)?;
    let t = db.create_table(
        TableDef::new("t")
            .column(ColumnDef::new("k", ColumnType::Fixed(24)))
            .column(ColumnDef::new("v", ColumnType::Var(150)))
            .primary_key(&["k"]),
    )?;
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let value = vec![7u8; 150];
    let load = Instant::now();
    let mut done = 0;
    while done < rows {
        let mut tx = db.begin()?;
        for _ in 0..(rows - done).min(10_000) {
            tx.insert(
                &t,
                &[Value::Bytes(key(&mut x)), Value::Bytes(value.clone())],
            )?;
        }
        tx.commit()?;
        done += (rows - done).min(10_000);
    }
    let load = load.elapsed();
    let mut y = 0x2545_F491_4F6C_DD1Du64;
    let mut seen = 0usize;
    let start = Instant::now();
    for _ in 0..scans {
        let from = Bound::Included(vec![Value::Bytes(key(&mut y))]);
        for r in t.scan(Scan::range(from, Bound::Unbounded).limit(10))? {
            seen += usize::from(r?.len() == 2);
        }
    }
    let took = start.elapsed();
    println!(
        "rows {rows} load {:.2} s, {scans} scans of 10: {:.3} us/scan ({seen} rows)",
        load.as_secs_f64(),
        took.as_secs_f64() * 1e6 / scans.max(1) as f64
    );
    Ok(())
}
