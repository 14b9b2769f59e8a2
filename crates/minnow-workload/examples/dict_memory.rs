//! The table cache's memory per table, and whether it comes back after the tables are dropped
//! (seed 004, "Wasting InnoDB memory"): `minnow_workload::dict_memory` run under a counting
//! global allocator, so every byte the process holds is counted and nothing is estimated.
//!
//! ```text
//! cargo build --release -p minnow-workload --example dict_memory
//! target/release/examples/dict_memory 1,10000,100000 [--no-secondary] [--sync] [--dir DIR]
//! ```
//!
//! Each count runs on two fresh databases in a temporary directory under the current one (or
//! under `--dir`), removed afterwards. `flush_log_at_trx_commit` is 0 unless `--sync` (each
//! `create_table` then syncs the redo log, as a durable DDL statement does). One line per
//! phase: live heap bytes and blocks per table beyond the baseline, the phase's time per table
//! and the tables listed; then the file's pages.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, Ordering};

use minnow::{Config, FlushAtCommit};
use minnow_workload::dict_memory::{self, DictConfig, Heap};

/// The system allocator, counting the bytes and blocks live.
struct Counting;

static BYTES: AtomicI64 = AtomicI64::new(0);
static BLOCKS: AtomicI64 = AtomicI64::new(0);

// SAFETY: every call is passed on to `System` unchanged; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is `System`'s.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            BYTES.fetch_add(layout.size() as i64, Ordering::Relaxed);
            BLOCKS.fetch_add(1, Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is `System`'s.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            BYTES.fetch_add(layout.size() as i64, Ordering::Relaxed);
            BLOCKS.fetch_add(1, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        BYTES.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        BLOCKS.fetch_sub(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        // SAFETY: the caller's contract is `System`'s.
        let p = unsafe { System.realloc(ptr, layout, new) };
        if !p.is_null() {
            BYTES.fetch_add(new as i64 - layout.size() as i64, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn heap() -> Heap {
    Heap {
        bytes: BYTES.load(Ordering::Relaxed),
        blocks: BLOCKS.load(Ordering::Relaxed),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let counts: Vec<u64> = args
        .first()
        .map_or("1,10000", String::as_str)
        .split(',')
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    let flag = |f: &str| args.iter().any(|a| a == f);
    let parent = args
        .iter()
        .position(|a| a == "--dir")
        .and_then(|i| args.get(i + 1))
        .map_or_else(|| std::path::PathBuf::from("."), std::path::PathBuf::from);
    let config = Config {
        flush_log_at_trx_commit: if flag("--sync") {
            FlushAtCommit::Sync
        } else {
            FlushAtCommit::Lazy
        },
        ..Config::default()
    };
    println!(
        "tables,secondary,phase,bytes_per_table,blocks_per_table,micros_per_table,seconds,tables_listed"
    );
    for n in counts {
        let dir = tempfile::tempdir_in(&parent)?;
        let cfg = DictConfig {
            tables: n,
            secondary: !flag("--no-secondary"),
            config: config.clone(),
        };
        let r = dict_memory::run(dir.path(), &cfg, &heap, &mut |p| {
            println!(
                "{n},{},{},{:.0},{:.1},{:.1},{:.3},{}",
                cfg.secondary,
                p.name,
                p.bytes_per_table,
                p.blocks_per_table,
                p.micros_per_table,
                p.seconds,
                p.tables_listed
            );
        })?;
        println!(
            "# {n} tables: ibdata1 pages empty {} / full {} / after drops {}: {:.2} pages a table; \
             an open of the empty database holds {} bytes in {} blocks",
            r.file_pages[0],
            r.file_pages[1],
            r.file_pages[2],
            r.pages_per_table,
            r.empty_open.bytes,
            r.empty_open.blocks
        );
    }
    Ok(())
}
