//! Instruction counts of the row operations the peer comparison times (docs/COMPARE.md), for
//! callgrind: `peer_ops OP ROWS N` loads ROWS rows of redb's benchmark shape (24-byte random
//! keys, 150-byte values) with `Table::load`, then runs N operations of kind OP inside one
//! function, `measured`, so that callgrind can count that function alone:
//!
//! ```sh
//! cargo build --release -p minnow --example peer_ops
//! valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*measured*' \
//!     target/release/examples/peer_ops get 100000 20000
//! ```
//!
//! and divide the total (`Ir`) by N. Arguments after N are knobs (`buffer_pool_size=1G`, as
//! `--set` takes them) for the database's `Config`, the defaults otherwise. With ROWS 0,
//! `insert_tx` loads into an empty table: its inserts are buffered and built at commit (the
//! engine's `write::bulk` module), as long as they fit `bulk_insert_buffer_size`. Run without valgrind it prints the measured part's
//! time per operation: wall clock and this thread's time on a CPU (the steadier figure on a
//! shared machine). OP is `get` (`Table::get` of a random existing key), `get_tx` (the same
//! in one REPEATABLE READ transaction), `get_tx_with` (the same read in place, through
//! `Transaction::get_with`, the value as borrowed bytes), `get_tx_bytes_with` (the same read with
//! the key borrowed too, through `Transaction::get_bytes_with`: how compare/ reads),
//! `get_tx_bytes_with_warm` (the same after the warm-up `scan10_with_warm` has: compare/'s
//! second pass, answered by the adaptive hash index), `get_tx_bytes_with_2t_warm` (that on two
//! threads, each in its own transaction, N reads each: compare/'s threads phase; it also
//! prints wall time and the readers' summed CPU time per read), `scan10`
//! (`Table::scan` of 10 rows from a random key), `scan10_with` (the same 10 rows in place,
//! through `Table::scan_with`, each key and value read as borrowed bytes), `scan10_with_warm`
//! (the same after one untimed point read per key, as compare/ runs its range reads after its
//! point reads: the adaptive hash index then knows every leaf), `insert_tx` (N
//! inserts of new random keys in one transaction, committed with the default durability),
//! `remove_tx` (N deletes of distinct existing keys in one transaction, committed the same
//! way; N is capped at the rows loaded), `remove_tx_warm` (the same after one point read per
//! key, as compare/'s removals come after its reads: the adaptive hash index knows every leaf) or `count` (`Table::count`, after one write so that
//! each count walks). Keys come from a fixed seed, so every run does the same work.
//!
//! To tell two builds apart on a busy machine, `peer_ops_ab.sh` beside this file runs them in
//! alternating rounds and reports medians, quartiles and per-round ratios (docs/EXPERIMENTS.md,
//! "Point reads without shared writes").

use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};

use minnow::{ColumnDef, ColumnType, Config, Database, Scan, Table, TableDef, Value};

const KEY: usize = 24;
const VALUE: usize = 150;

/// SplitMix64: the keys, from a fixed seed.
struct Keys(u64);

impl Keys {
    fn next_key(&mut self) -> Vec<u8> {
        let mut k = Vec::with_capacity(KEY);
        while k.len() < KEY {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            k.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
        }
        k.truncate(KEY);
        k
    }
}

fn row(key: Vec<u8>) -> [Value; 2] {
    let value = vec![key[0]; VALUE];
    [Value::Bytes(key), Value::Bytes(value)]
}

/// CPU time of the reader threads of a `_2t` operation, summed.
static THREADS_CPU_NS: AtomicU64 = AtomicU64::new(0);

/// `n` reads through `Transaction::get_bytes_with` in one transaction, the `i`-th of the key
/// at `(start + i) * 2654435761 % keys`: how compare/ reads.
fn read_bytes(
    db: &Database,
    t: &Table,
    keys: &[Vec<u8>],
    start: usize,
    n: usize,
) -> Result<u64, Box<dyn std::error::Error>> {
    let mut seen = 0;
    let tx = db.begin()?;
    for i in start..start + n {
        let key = &keys[(i.wrapping_mul(2_654_435_761)) % keys.len()];
        let found = tx.get_bytes_with(t, key, |r| {
            Ok(r.bytes(1)?.is_some_and(|v| v.len() == VALUE))
        })?;
        seen += u64::from(found == Some(true));
    }
    tx.commit()?;
    Ok(seen)
}

/// The timed part: `n` operations of kind `op` on `t`, over the loaded `keys`.
#[inline(never)]
fn measured(
    db: &Database,
    t: &Table,
    op: &str,
    keys: &[Vec<u8>],
    n: usize,
) -> Result<u64, Box<dyn std::error::Error>> {
    let mut seen = 0u64;
    let pick = |i: usize| keys[(i.wrapping_mul(2_654_435_761)) % keys.len()].clone();
    match op {
        "get" => {
            for i in 0..n {
                seen += u64::from(t.get(&[Value::Bytes(pick(i))])?.is_some());
            }
        }
        "get_tx" => {
            let tx = db.begin()?;
            for i in 0..n {
                seen += u64::from(tx.get(t, &[Value::Bytes(pick(i))])?.is_some());
            }
            tx.commit()?;
        }
        "get_tx_with" => {
            let tx = db.begin()?;
            for i in 0..n {
                let found = tx.get_with(t, &[Value::Bytes(pick(i))], |r| {
                    Ok(r.bytes(1)?.is_some_and(|v| v.len() == VALUE))
                })?;
                seen += u64::from(found == Some(true));
            }
            tx.commit()?;
        }
        "get_tx_bytes_with" | "get_tx_bytes_with_warm" => seen = read_bytes(db, t, keys, 0, n)?,
        "get_tx_bytes_with_2t_warm" => {
            // Two readers, each in its own transaction, over different keys: the compare's
            // threads phase. Each thread's CPU time goes to THREADS_CPU_NS.
            let per: Vec<Result<u64, String>> = std::thread::scope(|s| {
                let run = |j: usize| {
                    s.spawn(move || {
                        let cpu0 = on_cpu_ns();
                        let seen = read_bytes(db, t, keys, j * 7_919, n).map_err(|e| e.to_string());
                        if let Some((b, a)) = on_cpu_ns().zip(cpu0) {
                            THREADS_CPU_NS.fetch_add(b - a, Ordering::Relaxed);
                        }
                        seen
                    })
                };
                let hs = [run(0), run(1)];
                hs.into_iter()
                    .map(|h| h.join().unwrap_or_else(|_| Err("reader panicked".into())))
                    .collect()
            });
            for r in per {
                seen += r?;
            }
        }
        "scan10" => {
            for i in 0..n {
                let from = Bound::Included(vec![Value::Bytes(pick(i))]);
                for r in t.scan(Scan::range(from, Bound::Unbounded).limit(10))? {
                    r?;
                    seen += 1;
                }
            }
        }
        "scan10_with" | "scan10_with_warm" => {
            for i in 0..n {
                let from = Bound::Included(vec![Value::Bytes(pick(i))]);
                let scan = Scan::range(from, Bound::Unbounded).limit(10);
                t.scan_with(scan, |r| {
                    let (k, v) = (r.bytes(0)?, r.bytes(1)?);
                    seen += u64::from(k.is_some() && v.is_some_and(|v| v.len() == VALUE));
                    Ok(true)
                })?;
            }
        }
        "insert_tx" => {
            let mut fresh = Keys(99);
            let mut tx = db.begin()?;
            for _ in 0..n {
                tx.insert(t, &row(fresh.next_key()))?;
                seen += 1;
            }
            tx.commit()?;
        }
        "remove_tx" | "remove_tx_warm" => {
            let mut tx = db.begin()?;
            // Every other loaded key, in a scattered order: each delete finds its row.
            let step = keys.len() / n.min(keys.len()).max(1);
            for i in 0..n.min(keys.len()) {
                let k = &keys[(i.wrapping_mul(2_654_435_761) % n.min(keys.len())) * step];
                seen += u64::from(tx.delete(t, &[Value::Bytes(k.clone())])?);
            }
            tx.commit()?;
        }
        "count" => {
            for i in 0..n {
                t.insert(&row(Keys(1_000 + i as u64).next_key()))?;
                seen += t.count()?;
            }
        }
        other => {
            return Err(format!(
                "unknown operation {other:?}: get, get_tx, get_tx_with, get_tx_bytes_with(_warm), get_tx_bytes_with_2t_warm, scan10, scan10_with, scan10_with_warm, insert_tx, remove_tx(_warm) or count"
            )
            .into());
        }
    }
    Ok(seen)
}

/// Nanoseconds this thread has run on a CPU (Linux's `/proc/thread-self/schedstat`, first
/// field), `None` where that file is missing: on a busy machine a steadier figure than the
/// wall clock, which also counts the time the thread waited for a core.
fn on_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let op = args.next().unwrap_or_else(|| "get".to_owned());
    let mut num = |default: usize| -> Result<usize, Box<dyn std::error::Error>> {
        Ok(args
            .next()
            .map(|a| a.parse())
            .transpose()?
            .unwrap_or(default))
    };
    let (rows, n) = (num(100_000)?, num(20_000)?);
    let mut config = Config::default();
    for knob in args {
        config.apply(&knob)?;
    }
    let dir = tempfile::tempdir()?;
    let db = Database::create(dir.path(), config)?;
    let t = db.create_table(
        TableDef::new("kv")
            .column(ColumnDef::new("key", ColumnType::Fixed(KEY as u16)))
            .column(ColumnDef::new("value", ColumnType::Fixed(VALUE as u16)))
            .primary_key(&["key"]),
    )?;
    let mut gen_ = Keys(7);
    let mut keys: Vec<Vec<u8>> = (0..rows).map(|_| gen_.next_key()).collect();
    keys.sort();
    keys.dedup();
    t.load(keys.iter().map(|k| row(k.clone())))?;
    // The load replaced the table's entry: a handle taken before it finds the new entry on
    // every statement (a look-up in the dictionary and a handle made), which a reader of an
    // unchanged table (compare/'s) does not pay. Take the handle afresh, as compare/ does.
    let t = db.table("kv")?;
    if op.ends_with("_warm") {
        // One point read per key, scattered, as compare/'s point reads before its range
        // reads: the adaptive hash index then knows every leaf.
        for i in 0..keys.len() {
            let k = &keys[(i.wrapping_mul(2_654_435_761)) % keys.len()];
            t.get(&[Value::Bytes(k.clone())])?;
        }
    }
    let (cpu0, wall0) = (on_cpu_ns(), std::time::Instant::now());
    let seen = measured(&db, &t, &op, &keys, n)?;
    let (wall, cpu) = (wall0.elapsed(), on_cpu_ns().zip(cpu0).map(|(b, a)| b - a));
    println!(
        "{op}: {n} operations over {} rows, {seen} rows seen",
        keys.len()
    );
    let per = |ns: u128| ns as f64 / n.max(1) as f64;
    let cpu = cpu.map_or("unknown".to_owned(), |c| {
        format!("{:.0}", per(u128::from(c)))
    });
    println!(
        "  {:.0} ns/op wall, {cpu} ns/op on CPU (this thread)",
        per(wall.as_nanos())
    );
    if op.contains("_2t") {
        // Both readers' operations: wall and CPU per read, as compare/ divides.
        let reads = 2 * n.max(1) as u128;
        println!(
            "  2 threads: {:.0} ns/read wall, {:.0} ns/read on CPU (the readers, summed)",
            wall.as_nanos() as f64 / reads as f64,
            THREADS_CPU_NS.load(Ordering::Relaxed) as f64 / reads as f64
        );
    }
    drop(t);
    db.close()?;
    Ok(())
}
