//! One uncontended row lock and its release, in a loop: the program to count instructions of
//! (`valgrind --tool=callgrind`) or to time, for the issue's "under 200 ns" target.
//!
//! ```text
//! cargo build --release -p minnow-mvcc --example lock_loop
//! target/release/examples/lock_loop 2000000
//! valgrind --tool=callgrind target/release/examples/lock_loop 200000
//! ```
//!
//! Each iteration is what an autocommit single-row update costs the lock manager: a fresh
//! transaction's lock list, one exclusive lock on a primary key, and the release at commit.

use std::time::{Duration, Instant};

use minnow_mvcc::lock::{LockKey, LockManager, LockMode};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: u64 = match std::env::args().nth(1) {
        Some(a) => a.parse()?,
        None => 1_000_000,
    };
    let m = LockManager::new(Duration::from_secs(1));
    let start = Instant::now();
    for trx in 1..=n {
        let mut t = m.begin(trx);
        t.lock(
            LockKey::new(7, &(trx % 4096).to_be_bytes()),
            LockMode::Exclusive,
        )?;
        t.release_all();
    }
    let per = start.elapsed().as_nanos() as f64 / n as f64;
    println!("{n} uncontended lock + release: {per:.0} ns each");
    Ok(())
}
