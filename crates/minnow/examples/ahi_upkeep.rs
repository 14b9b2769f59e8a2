//! What keeping the adaptive hash index up to date costs writes, through the public API:
//! `ahi_upkeep on|off N` loads N rows (24-byte keys, 150-byte values) in one transaction,
//! reads every key twice (so the hash learns and hashes pages, as a read phase before
//! removals does), then times four phases: one more pass of point reads (the hash's gain),
//! N/2 updates in transactions of 1,000, N/2 removals in one transaction, and two passes of
//! point reads over all keys (half of them gone, while purge runs). Prints
//! microseconds per key for each phase (wall clock, and the main thread's CPU time, which a
//! busy machine disturbs less) and the hash's counters.
use std::time::Instant;

use minnow::{ColumnDef, ColumnType, Config, Database, TableDef, Value};

fn key(i: u64) -> Value {
    let mut k = [0u8; 24];
    let h = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    k[..8].copy_from_slice(&h.to_be_bytes());
    k[8..16].copy_from_slice(&i.to_be_bytes());
    Value::Bytes(k.to_vec())
}

fn value(i: u64, round: u8) -> Value {
    let mut v = vec![round; 150];
    v[..8].copy_from_slice(&i.to_le_bytes());
    Value::Bytes(v)
}

/// A fixed permutation walk over 0..n (a stride coprime with n).
fn order(n: u64, salt: u64) -> impl Iterator<Item = u64> {
    let mut stride = (n / 2 + 1 + salt) | 1;
    while gcd(stride, n) != 1 {
        stride += 2;
    }
    (0..n).map(move |i| (i.wrapping_mul(stride) + salt) % n)
}

/// The calling thread's CPU time in microseconds (Linux; 0 elsewhere).
fn cpu_us() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |ns| ns / 1e3)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let on = args.next().as_deref() != Some("off");
    let n: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(200_000);
    let dir = tempfile::tempdir_in(".")?;
    let config = Config {
        flush_log_at_trx_commit: minnow::FlushAtCommit::Lazy,
        buffer_pool_dump_at_shutdown: false,
        buffer_pool_size: 1 << 30,
        adaptive_hash_index: on,
        ..Config::default()
    };
    let db = Database::create(dir.path(), config)?;
    let t = db.create_table(
        TableDef::new("kv")
            .column(ColumnDef::new("key", ColumnType::Fixed(24)))
            .column(ColumnDef::new("value", ColumnType::Fixed(150)))
            .primary_key(&["key"]),
    )?;
    let mut trx = db.begin()?;
    for i in order(n, 0) {
        trx.insert(&t, &[key(i), value(i, 0)])?;
    }
    trx.commit()?;
    for pass in 0..2 {
        for i in order(n, 7 + pass) {
            assert!(t.get(&[key(i)])?.is_some());
        }
    }
    let (start, c) = (Instant::now(), cpu_us());
    for i in order(n, 9) {
        assert!(t.get(&[key(i)])?.is_some());
    }
    let hot = start.elapsed().as_secs_f64() * 1e6 / n as f64;
    let hot_cpu = (cpu_us() - c) / n as f64;
    let s0 = db.ahi_stats()?;
    let half = n / 2;

    let (start, c) = (Instant::now(), cpu_us());
    let mut done = 0;
    let mut trx = db.begin()?;
    for i in order(n, 11).take(half as usize) {
        trx.update(&t, &[key(i), value(i, 1)])?;
        done += 1;
        if done % 1000 == 0 {
            trx.commit()?;
            trx = db.begin()?;
        }
    }
    trx.commit()?;
    let upd = start.elapsed().as_secs_f64() * 1e6 / half as f64;
    let upd_cpu = (cpu_us() - c) / half as f64;
    let s1 = db.ahi_stats()?;

    let (start, c) = (Instant::now(), cpu_us());
    let mut trx = db.begin()?;
    for i in order(n, 13).take(half as usize) {
        assert!(trx.delete(&t, &[key(i)])?);
    }
    trx.commit()?;
    let del = start.elapsed().as_secs_f64() * 1e6 / half as f64;
    let del_cpu = (cpu_us() - c) / half as f64;
    let s2 = db.ahi_stats()?;

    let (start, c) = (Instant::now(), cpu_us());
    let mut found = 0u64;
    for pass in 0..2 {
        for i in order(n, 17 + pass) {
            found += u64::from(t.get(&[key(i)])?.is_some());
        }
    }
    let get = start.elapsed().as_secs_f64() * 1e6 / (2 * n) as f64;
    let get_cpu = (cpu_us() - c) / (2 * n) as f64;
    let s3 = db.ahi_stats()?;
    assert_eq!(found, 2 * (n - half));
    println!(
        "ahi={} n={n} hot_get_us={hot:.3} update_us={upd:.2} remove_us={del:.2} \
         get_us={get:.3} cpu: hot_get_us={hot_cpu:.3} update_us={upd_cpu:.2} \
         remove_us={del_cpu:.2} get_us={get_cpu:.3}",
        if on { "on" } else { "off" }
    );
    for (name, s) in [
        ("after reads", s0),
        ("after updates", s1),
        ("after removals", s2),
        ("after reads", s3),
    ] {
        println!("  {name}: {s:?}");
    }
    Ok(())
}
