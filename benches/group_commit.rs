//! Group commit: durable commits per second with `flush_log_at_trx_commit = 1`.
//!
//! Every commit must be synced before it returns, and one `fdatasync` costs 100-300 µs on this
//! machine's disk (brief/limits.md A.1), so a log that synced once per commit could never pass
//! ~7,000 commits per second. Group commit lets one sync serve every commit that arrived while
//! the previous sync was running. This bench runs 1, 4, 16 and 64 threads that each append a
//! small mini-transaction group and commit it durably, and reports commits per second
//! (Criterion's throughput) and, on stderr, commits per sync. The target: at 16 threads,
//! at least 8 commits share each sync.
//!
//! Run: `cargo bench --bench group_commit`. The log lives in `MINNOW_BENCH_DIR` (default: the
//! system temp dir), which must be on a real disk for the numbers to mean anything.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use minnow_io::{Backend, FlushMethod, OpenOptions, SyncBackend};
use minnow_page::PageId;
use minnow_redo::record::encode_group;
use minnow_redo::{FlushAtCommit, Log, Record};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

fn bench_dir() -> tempfile::TempDir {
    match std::env::var_os("MINNOW_BENCH_DIR") {
        Some(dir) => tempfile::tempdir_in(dir),
        None => tempfile::tempdir(),
    }
    .unwrap_or_else(|e| panic!("cannot create a bench directory: {e}"))
}

fn group_commit(c: &mut Criterion) {
    let dir = bench_dir();
    let path = dir.path().join("redo.log");
    let file = SyncBackend::new()
        .open(&path, &OpenOptions::new(FlushMethod::Fsync).create(true))
        .unwrap_or_else(|e| panic!("{e}"));
    let log = Arc::new(Log::create(file, 256 << 20).unwrap_or_else(|e| panic!("{e}")));
    let weak = Arc::downgrade(&log);
    // No pages to flush here: everything durable can be checkpointed when space runs out.
    log.set_checkpoint_requester(Box::new(move |_| {
        if let Some(log) = weak.upgrade() {
            let _ = log.checkpoint(log.flushed_lsn());
        }
    }));
    let group = encode_group(&[Record::Write {
        page: PageId::new(1, 42),
        offset: 120,
        data: vec![0xAB; 100],
    }]);

    let mut g = c.benchmark_group("group_commit");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(3));
    for threads in [1usize, 4, 16, 64] {
        g.throughput(Throughput::Elements(threads as u64));
        g.bench_with_input(
            BenchmarkId::new("sync_commits", threads),
            &threads,
            |b, &threads| {
                b.iter_custom(|iters| {
                    let syncs_before = log.stats().syncs.load(Ordering::Relaxed);
                    let start = Instant::now();
                    std::thread::scope(|s| {
                        for _ in 0..threads {
                            s.spawn(|| {
                                for _ in 0..iters {
                                    let _ = log.free_check(64 << 10, Duration::from_secs(10));
                                    let (_, end) =
                                        log.append(&group).unwrap_or_else(|e| panic!("{e}"));
                                    log.commit(end, FlushAtCommit::Sync)
                                        .unwrap_or_else(|e| panic!("{e}"));
                                }
                            });
                        }
                    });
                    let elapsed = start.elapsed();
                    let syncs = log.stats().syncs.load(Ordering::Relaxed) - syncs_before;
                    let commits = iters * threads as u64;
                    if iters >= 100 {
                        eprintln!(
                            "group_commit threads={threads}: {commits} commits, {syncs} syncs, \
                         {:.1} commits/sync, {:.0} commits/s",
                            commits as f64 / syncs.max(1) as f64,
                            commits as f64 / elapsed.as_secs_f64()
                        );
                    }
                    elapsed
                })
            },
        );
    }
    g.finish();
}

criterion_group!(benches, group_commit);
criterion_main!(benches);
