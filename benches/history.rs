//! Experiment E9: open transactions and version history (seed 004, "Open transactions are
//! bad").
//!
//! The article's `count(*)` over 10,000 rows took 0.00 s normally and 2.88 s while an old
//! transaction kept about a million row versions alive (about 100 per row), and was instant
//! again once that transaction ended. This bench loads `ROWS` rows, then:
//!
//! 1. counts them (a full primary-key scan) with no old read view open;
//! 2. opens a REPEATABLE READ transaction and takes its view (the old view), then updates
//!    every row `UPDATES` times in autocommit statements: each update is a committed log
//!    in the history list that purge may not touch while the old view is open;
//! 3. counts from the old view (every row is rebuilt through `UPDATES` undo records) and from
//!    a new view (the latest versions, read in place);
//! 4. closes the old view, runs purge until the history list is empty, and counts again.
//!
//! ## What it prints
//!
//! Criterion group `e9` with `count_no_old_view`, `count_old_view`, `count_new_view_beside_old`
//! and `count_after_purge`, then one line per phase with the history list length and the time
//! purge took.
//!
//! ## Knobs (environment variables)
//!
//! | variable | default | what |
//! |---|---|---|
//! | `MINNOW_E9_ROWS` | 2000 | rows (the article: 10,000) |
//! | `MINNOW_E9_UPDATES` | 20 | updates per row while the old view is open (the article: about 100) |
//!
//! `cargo test --bench history` (CI) runs each count once on the default size.

use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use minnow::{ColumnDef, ColumnType, Config, Database, FlushAtCommit, Scan, TableDef, Value};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn row(id: u64, n: i64) -> Vec<Value> {
    vec![
        Value::UInt(id),
        Value::Int(n),
        Value::text("some payload of a row"),
    ]
}

fn e9(c: &mut Criterion) {
    let rows = env_u64("MINNOW_E9_ROWS", 2000);
    let updates = env_u64("MINNOW_E9_UPDATES", 20);
    let dir = tempfile::tempdir().expect("temp dir");
    let config = Config {
        // Purge runs only when the bench calls it, so the phases are what they say.
        purge_threads: 0,
        flush_log_at_trx_commit: FlushAtCommit::Lazy,
        buffer_pool_size: 256 << 20,
        ..Config::default()
    };
    let db = Database::create(dir.path(), config).expect("create");
    let t = db
        .create_table(
            TableDef::new("t")
                .column(ColumnDef::new("id", ColumnType::U64))
                .column(ColumnDef::new("n", ColumnType::I64))
                .column(ColumnDef::new("pad", ColumnType::Var(40)))
                .primary_key(&["id"]),
        )
        .expect("table");
    for id in 0..rows {
        t.insert(&row(id, 0)).expect("insert");
    }
    let count_now = || t.scan(Scan::all()).expect("scan").count() as u64;
    let history = || db.status().expect("status").transactions.history_len;

    let mut g = c.benchmark_group("e9");
    g.sample_size(10);
    assert_eq!(count_now(), rows);
    g.bench_function("count_no_old_view", |b| b.iter(count_now));
    println!("e9: {rows} rows, history list length {}", history());

    let old = db.begin().expect("begin");
    let first = old.scan(&t, Scan::all()).expect("scan").count() as u64;
    assert_eq!(first, rows);
    let start = Instant::now();
    for round in 1..=updates {
        for id in 0..rows {
            t.update(&row(id, round as i64)).expect("update");
        }
    }
    println!(
        "e9: {} updates with the old view open in {:.2} s; history list length {}",
        rows * updates,
        start.elapsed().as_secs_f64(),
        history()
    );
    g.bench_function("count_old_view", |b| {
        b.iter(|| old.scan(&t, Scan::all()).expect("scan").count())
    });
    g.bench_function("count_new_view_beside_old", |b| b.iter(count_now));
    // The old view still sees the first versions.
    let n0 = old
        .scan(&t, Scan::all())
        .expect("scan")
        .map(|r| r.expect("row"))
        .filter(|r| r.get(1) == Some(&Value::Int(0)))
        .count() as u64;
    assert_eq!(n0, rows);
    drop(old);

    let start = Instant::now();
    let r = db.purge().expect("purge");
    println!(
        "e9: old view closed; purge took {:.2} s for {} logs ({} records, {} undo pages freed); \
         history list length {}",
        start.elapsed().as_secs_f64(),
        r.logs,
        r.records,
        r.undo_pages_freed,
        history()
    );
    g.bench_function("count_after_purge", |b| b.iter(count_now));
    g.finish();
    drop(t);
    db.close().expect("close");
}

criterion_group!(benches, e9);
criterion_main!(benches);
