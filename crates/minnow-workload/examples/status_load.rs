//! The cost of `Database::status` with many open transactions holding row locks
//! (`minnow_workload::status_load`; seed 004, "Performance of status commands").
//!
//! ```text
//! cargo build --release -p minnow-workload --example status_load
//! target/release/examples/status_load [OPEN=0,100,1000,10000] [THREADS=2] [--dir DIR]
//! ```
//!
//! One CSV line per count of open transactions (3 row locks each): nanoseconds per snapshot
//! (median, lowest and highest of 5 rounds of 20,000), and with THREADS writers running for
//! 2 s each way, their updates per second alone and beside a 1 kHz status poller, and the
//! poller's snapshot times. `flush_log_at_trx_commit` is 0 (the writers are CPU-bound).
//!
//! Wall times on a shared machine are noisy; the instruction count of one snapshot is not:
//!
//! ```text
//! valgrind --tool=callgrind --toggle-collect='*measured*' \
//!     target/release/examples/status_load --count OPEN CALLS
//! ```
//!
//! opens OPEN transactions (3 row locks each) and takes CALLS snapshots inside `measured`;
//! callgrind's total divided by CALLS is one snapshot's instructions.

use minnow::{Config, Database, FlushAtCommit};
use minnow_workload::status_load::{self, StatusLoadConfig};

/// Takes `calls` snapshots (the region callgrind counts).
#[inline(never)]
fn measured(db: &Database, calls: u64) -> Result<u64, minnow::Error> {
    let mut active = 0;
    for _ in 0..calls {
        active += std::hint::black_box(db.status()?).transactions.active;
    }
    Ok(active)
}

/// `--count OPEN CALLS`: see the module docs.
fn count(open: usize, calls: u64, dir: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    let db = Database::create(
        dir,
        Config {
            flush_log_at_trx_commit: FlushAtCommit::Lazy,
            purge_threads: 0,
            ..Config::default()
        },
    )?;
    let (table, _) = status_load::prepare(&db, open, 3, 1)?;
    let txs = status_load::open_transactions(&db, &table, open, 3)?;
    // One snapshot outside the counted region: it may drop a stale cached view.
    db.status()?;
    let active = measured(&db, calls)?;
    println!(
        "{open} open transactions: {} active per snapshot",
        active / calls.max(1)
    );
    for tx in txs {
        tx.rollback()?;
    }
    db.close()?;
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--count") {
        let open = args.get(1).map_or(Ok(0), |s| s.parse())?;
        let calls = args.get(2).map_or(Ok(1000), |s| s.parse())?;
        let dir = tempfile::tempdir_in(".")?;
        return count(open, calls, dir.path());
    }
    let open: Vec<usize> = args
        .first()
        .map_or("0,100,1000,10000", String::as_str)
        .split(',')
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    let threads: usize = args.get(1).map_or(Ok(2), |s| s.parse())?;
    let parent = args
        .iter()
        .position(|a| a == "--dir")
        .and_then(|i| args.get(i + 1))
        .map_or_else(|| std::path::PathBuf::from("."), std::path::PathBuf::from);
    let dir = tempfile::tempdir_in(parent)?;
    let db = Database::create(
        dir.path(),
        Config {
            flush_log_at_trx_commit: FlushAtCommit::Lazy,
            ..Config::default()
        },
    )?;
    let cfg = StatusLoadConfig {
        open,
        locks_per_trx: 3,
        calls: 20_000,
        rounds: 5,
        threads,
        millis: 2_000,
        writer_rows: 10_000,
    };
    println!(
        "open,active,ns_median,ns_min,ns_max,writers,writer_ops_alone,writer_ops_polled,\
         polled_snapshots,polled_median_ns,polled_max_ns"
    );
    status_load::run(&db, &cfg, &mut |p| {
        println!(
            "{},{},{:.0},{:.0},{:.0},{threads},{:.0},{:.0},{},{:.0},{:.0}",
            p.open,
            p.active,
            p.ns_per_status.median,
            p.ns_per_status.min,
            p.ns_per_status.max,
            p.writer_ops_alone,
            p.writer_ops_polled,
            p.polled_snapshots,
            p.polled_median_ns,
            p.polled_max_ns
        );
    })?;
    db.close()?;
    Ok(())
}
