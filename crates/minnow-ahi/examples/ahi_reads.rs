//! Point lookups through the adaptive hash index, at 1 and at 2 threads: what the hash's
//! lookup path costs, without the layers above the B-tree. `ahi_reads KEYS N THREADS` loads
//! KEYS keys (`u64`, 100-byte values) into a tree on 16 KiB pages with the hash on, looks
//! every key up three times (the hash learns the index and hashes its pages), then runs N
//! lookups of random existing keys on each of THREADS threads inside one function,
//! `measured`, and prints the wall time per lookup and the hash's hit count. For instructions
//! per lookup:
//!
//! ```sh
//! cargo build --release -p minnow-ahi --example ahi_reads
//! valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*measured*' \
//!     target/release/examples/ahi_reads 200000 200000 1
//! ```
//!
//! and divide the total (`Ir`) by N. For the cost of sharing, compare the wall time per
//! lookup at THREADS 1 and 2 (on an idle machine: state the load average), or count the
//! cache misses (`perf stat -e cache-misses`). Keys come from a fixed seed.

use std::time::Instant;

use minnow_ahi::{Ahi, AhiConfig};
use minnow_btree::BTree;
use minnow_btree::record::{Column, ColumnType, RecordLayout, Value};
use minnow_buf::{BufConfig, BufferPool};
use minnow_page::PageSize;

/// SplitMix64 from a fixed seed.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `n` lookups of random keys below `keys` (seeded by `seed`); returns how many were found.
#[inline(never)]
fn lookups(tree: &BTree, pool: &BufferPool, keys: u64, n: u64, seed: u64) -> u64 {
    let mut found = 0;
    for i in 0..n {
        let k = mix(seed ^ i) % keys;
        let hit = tree
            .get_with(pool, &[Value::UInt(k)], |r| !r.deleted())
            .ok()
            .flatten();
        found += u64::from(hit == Some(true));
    }
    found
}

/// [`lookups`], the part callgrind counts (the warm-up calls `lookups` directly).
#[inline(never)]
fn measured(tree: &BTree, pool: &BufferPool, keys: u64, n: u64, seed: u64) -> u64 {
    lookups(tree, pool, keys, n, seed)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse())
        .collect::<Result<_, _>>()?;
    let (keys, n, threads) = match args[..] {
        [k, n, t] => (k, n, t),
        _ => return Err("usage: ahi_reads KEYS N THREADS".into()),
    };
    let dir = tempfile::tempdir()?;
    let frames = (keys / 50 + 1024) as usize;
    let pool =
        BufferPool::create_scratch(dir.path(), BufConfig::with_frames(frames, PageSize::K16), 1)?;
    let layout = RecordLayout::clustered(
        vec![Column::new(ColumnType::U64)],
        vec![Column::new(ColumnType::Var(200))],
    )?;
    let (tree, _) = BTree::create(&pool, 1, 42, layout.clone())?;
    let ahi = Ahi::new(AhiConfig::default());
    let tree = tree.with_search_hook(ahi.hook(1, 42, layout));
    for k in 0..keys {
        let row = [
            Value::UInt(k),
            Value::trx_id(1),
            Value::roll_ptr(1 << 55),
            Value::Bytes(vec![k as u8; 100]),
        ];
        tree.insert(&pool, &row)?;
    }
    for round in 0..3 {
        lookups(&tree, &pool, keys, keys, round);
    }
    let before = ahi.stats().hits;
    let start = Instant::now();
    let found: u64 = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (tree, pool) = (&tree, &pool);
                s.spawn(move || measured(tree, pool, keys, n, 1000 + t))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or(0)).sum()
    });
    let wall = start.elapsed();
    let total = n * threads;
    println!(
        "threads {threads}: {:.3} µs per lookup (wall / lookups per thread), found {found} of {total}, hash hits {}",
        wall.as_secs_f64() * 1e6 / n as f64,
        ahi.stats().hits - before
    );
    Ok(())
}
