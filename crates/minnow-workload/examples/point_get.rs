//! Random point gets on redb's benchmark table (24-byte keys, 150-byte values): time per
//! get and heap allocations per get, through `Table::get`, `Transaction::get` in one
//! REPEATABLE READ transaction, `Table::get_columns` (one column) and `Table::get` from two
//! threads at once. EXPERIMENTS.md's "Peer speed: zero-copy gets" comes from this program.
//!
//! ```text
//! cargo build --release -p minnow-workload --example point_get
//! target/release/examples/point_get 200000 200000          # rows, gets per phase
//! valgrind --tool=callgrind --toggle-collect='*measured*' \
//!     target/release/examples/point_get 50000 20000 table    # instructions per Table::get
//! ```
//!
//! The optional third argument runs one phase only (`table`, `trx`, `columns`, `threads`),
//! so that callgrind's count covers one kind of get. Allocations are counted by a global
//! allocator that wraps the system one; every phase reads every key once before it is
//! measured, so the pages are cached.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use minnow::{ColumnDef, ColumnType, Config, Database, FlushAtCommit, Table, TableDef, Value};

/// The system allocator, counting allocations.
struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is passed on to `System` unchanged; only a counter is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.realloc(ptr, layout, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const KEY_LEN: usize = 24;
const VALUE_LEN: usize = 150;

/// The key of row `i`: its number in the first 8 bytes, scrambled, so keys arrive in random
/// order.
fn key(i: u64) -> Vec<u8> {
    let mut k = vec![0u8; KEY_LEN];
    let x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    for (d, s) in k
        .iter_mut()
        .zip(x.to_be_bytes().iter().chain(&i.to_le_bytes()))
    {
        *d = *s;
    }
    k
}

/// `n` row numbers below `rows` in a fixed pseudo-random order.
fn order(n: u64, rows: u64) -> Vec<u64> {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % rows
        })
        .collect()
}

/// How a phase reads one row; returns whether it was found.
type Get<'a> = dyn FnMut(&[Value]) -> bool + 'a;

#[inline(never)]
fn measured(keys: &[Vec<Value>], get: &mut Get<'_>) -> u64 {
    keys.iter().map(|k| u64::from(get(k))).sum()
}

/// Runs `get` over `keys` once to warm up, then measured: (µs per get, allocations per get).
fn phase(keys: &[Vec<Value>], get: &mut Get<'_>) -> (f64, f64) {
    let warm: u64 = keys.iter().map(|k| u64::from(get(k))).sum();
    assert_eq!(warm, keys.len() as u64, "every key is in the table");
    let a0 = ALLOCS.load(Ordering::Relaxed);
    let t0 = Instant::now();
    let found = measured(keys, get);
    let el = t0.elapsed();
    let allocs = ALLOCS.load(Ordering::Relaxed) - a0;
    assert_eq!(found, keys.len() as u64);
    let n = keys.len() as f64;
    (el.as_secs_f64() * 1e6 / n, allocs as f64 / n)
}

fn load(db: &Database, rows: u64) -> Result<(), minnow::Error> {
    db.create_table(
        TableDef::new("kv")
            .column(ColumnDef::new("key", ColumnType::Fixed(KEY_LEN as u16)))
            .column(ColumnDef::new("value", ColumnType::Fixed(VALUE_LEN as u16)))
            .primary_key(&["key"]),
    )?;
    let t = db.table("kv")?;
    // Rows 0..rows, inserted in the scrambled key order (keys differ in their first bytes).
    let mut tx = db.begin()?;
    for i in 0..rows {
        let v = vec![(i % 251) as u8; VALUE_LEN];
        tx.insert(&t, &[Value::Bytes(key(i)), Value::Bytes(v)])?;
        if i % 1000 == 999 {
            tx.commit()?;
            tx = db.begin()?;
        }
    }
    tx.commit()?;
    Ok(())
}

fn table_phase(t: &Table, keys: &[Vec<Value>]) -> (f64, f64) {
    phase(keys, &mut |k| t.get(k).ok().flatten().is_some())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let rows: u64 = args.get(1).and_then(|v| v.parse().ok()).unwrap_or(200_000);
    let n: u64 = args.get(2).and_then(|v| v.parse().ok()).unwrap_or(200_000);
    let only = args.get(3).cloned();
    let run = |p: &str| only.as_deref().is_none_or(|o| o == p);
    let dir = tempfile::tempdir()?;
    let db = Database::create(
        dir.path(),
        Config {
            buffer_pool_size: 1 << 30,
            flush_log_at_trx_commit: FlushAtCommit::Lazy,
            ..Config::default()
        },
    )?;
    load(&db, rows)?;
    let t = db.table("kv")?;
    let keys: Vec<Vec<Value>> = order(n, rows)
        .into_iter()
        .map(|i| vec![Value::Bytes(key(i))])
        .collect();
    if run("table") {
        let (us, allocs) = table_phase(&t, &keys);
        println!("Table::get            {us:.3} us/get  {allocs:.2} allocs/get");
    }
    if run("trx") {
        let tx = db.begin()?;
        let (us, allocs) = phase(&keys, &mut |k| tx.get(&t, k).ok().flatten().is_some());
        tx.commit()?;
        println!("Transaction::get (RR) {us:.3} us/get  {allocs:.2} allocs/get");
    }
    if run("columns") {
        let (us, allocs) = phase(&keys, &mut |k| {
            t.get_columns(k, &["value"]).ok().flatten().is_some()
        });
        println!("Table::get_columns    {us:.3} us/get  {allocs:.2} allocs/get");
    }
    if run("threads") {
        let half = keys.len() / 2;
        let (a, b) = keys.split_at(half);
        table_phase(&t, &keys);
        let t0 = Instant::now();
        std::thread::scope(|s| {
            for part in [a, b] {
                let t = &t;
                s.spawn(move || table_phase(t, part));
            }
        });
        let us = t0.elapsed().as_secs_f64() * 1e6 / (2 * keys.len()) as f64;
        println!(
            "Table::get, 2 threads {us:.3} us/get (wall / gets, each thread reads its half twice)"
        );
    }
    drop(t);
    db.close()?;
    Ok(())
}
