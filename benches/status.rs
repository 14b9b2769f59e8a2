//! Experiment E10, "cost of status": what a status snapshot costs, alone and while threads
//! work, and what a thread polling it costs the workers.
//!
//! The MySQL 5.x articles found `SHOW STATUS` going from 0.2 ms to 20 ms at high thread
//! counts (a global mutex every query also took) and `SHOW INNODB STATUS` taking 0.3 s.
//! minnow's [`Database::status`] loads relaxed atomics only (the `minnow::status` module docs
//! say which), so its cost should stay flat as threads grow, and a poller should not slow the
//! readers. Measured on a table of `ROWS` rows, cached, `flush_log_at_trx_commit = 0`:
//!
//! | bench | what |
//! |---|---|
//! | `status/snapshot/idle` | one `Database::status()`, nothing else running |
//! | `status/snapshot/under_load/{1,2,4}` | one `status()` while that many threads run point gets |
//! | `status/point_get/{1,2,4}/{alone,polled}` | point gets per second (wall time over all threads' gets) at that many threads, alone or with one more thread calling `status()` in a loop |
//!
//! Run: `cargo bench --bench status`. The database lives in `MINNOW_BENCH_DIR` (default: the
//! system temp dir).

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use minnow::{ColumnDef, ColumnType, Config, Database, FlushAtCommit, TableDef, Value};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const ROWS: u64 = 20_000;
const THREADS: [u64; 3] = [1, 2, 4];

fn open() -> (tempfile::TempDir, Database) {
    let base = std::env::var_os("MINNOW_BENCH_DIR").map(std::path::PathBuf::from);
    let dir = match base {
        Some(b) => tempfile::tempdir_in(b),
        None => tempfile::tempdir(),
    }
    .expect("bench dir");
    let config = Config {
        flush_log_at_trx_commit: FlushAtCommit::Lazy,
        buffer_pool_size: 64 << 20,
        ..Config::default()
    };
    let db = Database::create(dir.path(), config).expect("create");
    let t = db
        .create_table(
            TableDef::new("t")
                .column(ColumnDef::new("id", ColumnType::U64))
                .column(ColumnDef::new("c", ColumnType::Var(64)))
                .primary_key(&["id"]),
        )
        .expect("table");
    t.insert_many((0..ROWS).map(|i| vec![Value::UInt(i), Value::text("some payload of a row")]))
        .expect("load");
    (dir, db)
}

/// Point gets of random keys until `stop`; returns how many.
fn read_until(db: &Database, seed: u64, stop: &AtomicBool) -> u64 {
    let t = db.table("t").expect("table");
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        black_box(
            t.get(&[Value::UInt(rng.random_range(0..ROWS))])
                .expect("get"),
        );
        n += 1;
    }
    n
}

fn bench(c: &mut Criterion) {
    let (_dir, db) = open();
    let mut g = c.benchmark_group("status");
    g.warm_up_time(Duration::from_millis(500));
    g.measurement_time(Duration::from_secs(2));
    g.bench_function("snapshot/idle", |b| {
        b.iter(|| black_box(db.status().expect("status")))
    });
    for threads in THREADS {
        g.bench_function(BenchmarkId::new("snapshot/under_load", threads), |b| {
            let stop = AtomicBool::new(false);
            std::thread::scope(|s| {
                for i in 0..threads {
                    let (db, stop) = (&db, &stop);
                    s.spawn(move || read_until(db, i, stop));
                }
                b.iter(|| black_box(db.status().expect("status")));
                stop.store(true, Ordering::Relaxed);
            });
        });
    }
    g.throughput(Throughput::Elements(1));
    for threads in THREADS {
        for polled in [false, true] {
            let id = BenchmarkId::new(
                format!("point_get/{threads}"),
                if polled { "polled" } else { "alone" },
            );
            let polls = AtomicU64::new(0);
            g.bench_function(id, |b| {
                b.iter_custom(|iters| {
                    let per = iters.div_ceil(threads);
                    let stop = AtomicBool::new(false);
                    std::thread::scope(|s| {
                        if polled {
                            s.spawn(|| {
                                while !stop.load(Ordering::Relaxed) {
                                    black_box(db.status().expect("status"));
                                    polls.fetch_add(1, Ordering::Relaxed);
                                }
                            });
                        }
                        let start = Instant::now();
                        let workers: Vec<_> = (0..threads)
                            .map(|i| {
                                let db = &db;
                                s.spawn(move || {
                                    let t = db.table("t").expect("table");
                                    let mut rng = SmallRng::seed_from_u64(i);
                                    for _ in 0..per {
                                        let k = rng.random_range(0..ROWS);
                                        black_box(t.get(&[Value::UInt(k)]).expect("get"));
                                    }
                                })
                            })
                            .collect();
                        for w in workers {
                            w.join().expect("worker");
                        }
                        let took = start.elapsed();
                        stop.store(true, Ordering::Relaxed);
                        // Each thread did `per` gets: report the time per get of `iters`.
                        took.mul_f64(iters as f64 / (per * threads) as f64)
                    })
                })
            });
            if polled {
                eprintln!(
                    "status point_get/{threads}/polled: {} snapshots taken while reading",
                    polls.load(Ordering::Relaxed)
                );
            }
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
