//! Point lookups by primary key on a cached `slap` table, with the adaptive hash index on or
//! off: the program to run under `valgrind --tool=callgrind` for E4's instruction counts.
//!
//! ```text
//! cargo build --release -p minnow-workload --example ahi_point
//! valgrind --tool=callgrind --toggle-collect='*measured*' \
//!     target/release/examples/ahi_point on 200000 100000
//! valgrind --tool=callgrind --toggle-collect='*measured*' \
//!     target/release/examples/ahi_point off 200000 100000
//! ```
//!
//! Arguments: `on`/`off`, table rows, lookups measured. The load and a warm-up of the same
//! lookups run first; only `measured` is counted, so instructions ÷ lookups is the cost of
//! one `Table::get`.

use minnow::{Config, Database, FlushAtCommit, Value};
use minnow_workload::slap::{self, SlapConfig};

#[inline(never)]
fn measured(t: &minnow::Table, n: u64, rows: u64) -> u64 {
    lookups(t, n, rows)
}

#[inline(never)]
fn warm_up(t: &minnow::Table, n: u64, rows: u64) -> u64 {
    lookups(t, n, rows)
}

fn lookups(t: &minnow::Table, n: u64, rows: u64) -> u64 {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut found = 0;
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        found += u64::from(t.get(&[Value::UInt(x % rows)]).ok().flatten().is_some());
    }
    found
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let on = args.get(1).map_or("on", String::as_str) == "on";
    let rows: u64 = args.get(2).and_then(|v| v.parse().ok()).unwrap_or(200_000);
    let n: u64 = args.get(3).and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let dir = tempfile::tempdir()?;
    let db = Database::create(
        dir.path(),
        Config {
            buffer_pool_size: 256 << 20,
            flush_log_at_trx_commit: FlushAtCommit::Lazy,
            adaptive_hash_index: on,
            ..Config::default()
        },
    )?;
    slap::prepare(
        &db,
        &SlapConfig {
            rows,
            working_set: rows,
        },
    )?;
    let t = db.table(slap::TABLE)?;
    // Warm-up: every page cached and, with the hash on, hashed.
    for _ in 0..3 {
        warm_up(&t, rows, rows);
    }
    let start = std::time::Instant::now();
    let found = measured(&t, n, rows);
    let el = start.elapsed();
    let s = db.ahi_stats()?;
    println!(
        "ahi {}: {n} lookups ({found} found) in {:.3} s, {:.3} us/lookup; ahi hits {} misses {} entries {} memory {} KiB",
        if on { "on" } else { "off" },
        el.as_secs_f64(),
        el.as_secs_f64() * 1e6 / n as f64,
        s.hits,
        s.misses,
        s.entries,
        s.memory_bytes >> 10
    );
    Ok(())
}
