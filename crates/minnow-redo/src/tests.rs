//! Tests of the log against real files, with the crash simulator cutting power.

use crate::block::{BLOCK_SIZE, Lsn};
use crate::format::DATA_AREA;
use crate::log::{Durability, FlushAtCommit, Log, LogError};
use crate::record::{Record, encode_group};
use crate::recover::{Group, RecoveryError};
use minnow_io::{Backend, CrashSim, FileIo, FlushMethod, OpenOptions, SyncBackend};
use minnow_page::PageId;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

fn open(backend: &dyn Backend, path: &Path, create: bool) -> Arc<dyn FileIo> {
    backend
        .open(path, &OpenOptions::new(FlushMethod::Fsync).create(create))
        .unwrap()
}

/// A new 1 MiB log in `dir`, on real files.
fn small_log(dir: &Path) -> Arc<Log> {
    Arc::new(log_in(dir, 1 << 20))
}

/// A new log of `capacity` bytes in `dir` (`redo.log`), on real files.
fn log_in(dir: &Path, capacity: u64) -> Log {
    Log::create(
        open(&SyncBackend::new(), &dir.join("redo.log"), true),
        capacity,
    )
    .unwrap()
}

/// A small deterministic group: `n` records on page `n % 7` with recognisable bytes.
fn group(n: u64) -> Vec<Record> {
    let len = (n * 37 % 700) as usize + 1;
    vec![
        Record::Write {
            page: PageId::new(1, (n % 7) as u32),
            offset: (n % 1000) as u16,
            data: (0..len).map(|i| (n as usize + i) as u8).collect(),
        },
        Record::Memset {
            page: PageId::new(2, n as u32),
            offset: 64,
            len: (n % 50) as u16,
            value: n as u8,
        },
    ]
}

fn recover_all(file: Arc<dyn FileIo>) -> Result<(Log, Vec<Group>), RecoveryError> {
    let mut groups = Vec::new();
    let (log, _) = Log::recover(file, |g| {
        groups.push(g.clone());
        Ok(())
    })?;
    Ok((log, groups))
}

#[test]
fn synced_groups_come_back_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("redo.log");
    let log = Log::create(open(&SyncBackend::new(), &path, true), 1 << 20).unwrap();
    let mut ends = Vec::new();
    for n in 0..300 {
        let (_, end) = log.append(&encode_group(&group(n))).unwrap();
        ends.push(end);
        if n % 10 == 9 {
            assert_eq!(
                log.commit(end, FlushAtCommit::Sync).unwrap(),
                Durability::Synced
            );
        }
    }
    log.shutdown().unwrap();
    drop(log);
    let (log, groups) = recover_all(open(&SyncBackend::new(), &path, false)).unwrap();
    assert_eq!(groups.len(), 300);
    for (n, g) in groups.iter().enumerate() {
        assert_eq!(g.records, group(n as u64));
        assert_eq!(g.end, ends[n]);
    }
    // Appends continue where the log ended, and survive another reopen.
    let (_, end) = log.append(&encode_group(&group(300))).unwrap();
    log.commit(end, FlushAtCommit::Sync).unwrap();
    drop(log);
    let (_, groups) = recover_all(open(&SyncBackend::new(), &path, false)).unwrap();
    assert_eq!(groups.len(), 301);
    assert_eq!(groups[300].records, group(300));
}

#[test]
fn checkpoints_free_space_and_the_log_wraps() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("redo.log");
    let capacity = 64 * BLOCK_SIZE as u64;
    let log = Log::create(open(&SyncBackend::new(), &path, true), capacity).unwrap();
    let mut last_checkpoint = Lsn::FIRST;
    let mut after_checkpoint = Vec::new();
    for n in 0..2000u64 {
        let g = encode_group(&group(n));
        let (start, end) = match log.append(&g) {
            Ok(r) => r,
            Err(LogError::LogFull { .. }) => {
                // Everything durable can be checkpointed in this test (no pages to flush).
                log.write_up_to(log.current_lsn(), true).unwrap();
                last_checkpoint = log.flushed_lsn();
                log.checkpoint(last_checkpoint).unwrap();
                after_checkpoint.clear();
                log.append(&g).unwrap()
            }
            Err(e) => panic!("{e}"),
        };
        assert!(start >= last_checkpoint);
        after_checkpoint.push(n);
        log.commit(end, FlushAtCommit::Sync).unwrap();
    }
    assert!(
        log.stats()
            .checkpoints
            .load(std::sync::atomic::Ordering::Relaxed)
            > 10
    );
    drop(log);
    let (_, groups) = recover_all(open(&SyncBackend::new(), &path, false)).unwrap();
    let got: Vec<_> = groups.iter().map(|g| g.records.clone()).collect();
    let want: Vec<_> = after_checkpoint.iter().map(|&n| group(n)).collect();
    assert_eq!(got, want);
}

#[test]
fn a_full_log_refuses_instead_of_overwriting() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_in(dir.path(), 64 * BLOCK_SIZE as u64);
    let big = encode_group(&[Record::Write {
        page: PageId::new(0, 0),
        offset: 0,
        data: vec![7; 4000],
    }]);
    let mut appended = 0;
    let err = loop {
        match log.append(&big) {
            Ok(_) => appended += 1,
            Err(e) => break e,
        }
    };
    assert!(appended >= 6, "{appended}");
    assert!(matches!(err, LogError::LogFull { .. }), "{err}");
    // Without a checkpoint requester, free_check cannot make room either.
    assert!(matches!(
        log.free_check(8000, Duration::from_millis(10)),
        Err(LogError::LogFull { .. })
    ));
}

#[test]
fn free_check_asks_the_requester_for_a_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(log_in(dir.path(), 64 * BLOCK_SIZE as u64));
    let weak = Arc::downgrade(&log);
    log.set_checkpoint_requester(Box::new(move |_target| {
        if let Some(log) = weak.upgrade() {
            log.write_up_to(log.current_lsn(), true).unwrap();
            log.checkpoint(log.flushed_lsn()).unwrap();
        }
    }));
    let g = encode_group(&group(5));
    for _ in 0..500 {
        log.free_check(4096, Duration::from_secs(5)).unwrap();
        log.append(&g).unwrap();
    }
    assert!(log.checkpoint_lsn() > Lsn::FIRST);
}

/// A writer that finds the log full waits for the checkpoint, and the log counts the wait
/// and its time (what `minnow bench oltp` reports per interval).
#[test]
fn a_writer_that_finds_the_log_full_counts_its_wait() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(log_in(dir.path(), 64 * BLOCK_SIZE as u64));
    // The requester frees the log from another thread, 30 ms after the first request, as a
    // page cleaner does once its batch is written.
    let weak = Arc::downgrade(&log);
    let started = std::sync::atomic::AtomicBool::new(false);
    log.set_checkpoint_requester(Box::new(move |_target| {
        if started.swap(true, Ordering::SeqCst) {
            return;
        }
        if let Some(log) = weak.upgrade() {
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(30));
                log.write_up_to(log.current_lsn(), true).unwrap();
                log.checkpoint(log.flushed_lsn()).unwrap();
            });
        }
    }));
    let margin = 4096;
    let g = encode_group(&group(5));
    while log.free_space() >= margin {
        log.append(&g).unwrap();
    }
    let stats = log.stats();
    assert_eq!(stats.space_waits.load(Ordering::Relaxed), 0);
    log.free_check(margin, Duration::from_secs(10)).unwrap();
    assert!(log.free_space() >= margin);
    assert_eq!(stats.space_waits.load(Ordering::Relaxed), 1);
    let waited = stats.space_wait_ns.load(Ordering::Relaxed);
    assert!(waited >= 25_000_000, "waited {waited} ns");
    // With room to spare, a check neither waits nor counts.
    log.free_check(margin, Duration::from_secs(10)).unwrap();
    assert_eq!(stats.space_waits.load(Ordering::Relaxed), 1);
}

#[test]
fn lazy_and_write_policies_report_what_they_got() {
    let dir = tempfile::tempdir().unwrap();
    let log = small_log(dir.path());
    let (_, end) = log.append(&encode_group(&group(1))).unwrap();
    assert_eq!(
        log.commit(end, FlushAtCommit::Lazy).unwrap(),
        Durability::Buffered
    );
    assert_eq!(
        log.commit(end, FlushAtCommit::Write).unwrap(),
        Durability::Written
    );
    assert_eq!(log.written_lsn(), end);
    let flusher = log.spawn_flusher(Duration::from_millis(5)).unwrap();
    while log.flushed_lsn() < end {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(
        log.commit(end, FlushAtCommit::Lazy).unwrap(),
        Durability::Synced
    );
    log.shutdown().unwrap();
    flusher.join().unwrap();
}

/// A shutdown that comes before the flusher thread first waits (here: before it is even
/// spawned, the extreme of that race) stops it at once, not after its interval: the join in a
/// database's close waits for it. This hung for the whole 2700 s interval before the thread
/// checked the flag ahead of its first wait.
#[test]
fn a_flusher_told_to_stop_before_it_first_waits_stops_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = small_log(dir.path());
    let (_, end) = log.append(&encode_group(&group(2))).unwrap();
    log.shutdown().unwrap();
    assert_eq!(log.flushed_lsn(), end);
    let flusher = log.spawn_flusher(Duration::from_secs(2700)).unwrap();
    flusher.join().unwrap();
}

#[test]
fn group_commit_shares_syncs_between_threads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("redo.log");
    let log = Arc::new(Log::create(open(&SyncBackend::new(), &path, true), 8 << 20).unwrap());
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                for i in 0..100 {
                    let (_, end) = log.append(&encode_group(&group(t * 1000 + i))).unwrap();
                    log.commit(end, FlushAtCommit::Sync).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let stats = log.stats();
    let syncs = stats.syncs.load(std::sync::atomic::Ordering::Relaxed);
    let commits = stats
        .sync_commits
        .load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(commits, 800);
    assert!(syncs <= commits);
    drop(log);
    let (_, groups) = recover_all(open(&SyncBackend::new(), &path, false)).unwrap();
    assert_eq!(groups.len(), 800);
}

#[test]
fn damage_before_durable_records_is_an_error_not_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("redo.log");
    let log = Log::create(open(&SyncBackend::new(), &path, true), 1 << 20).unwrap();
    for n in 0..200 {
        let (_, end) = log.append(&encode_group(&group(n))).unwrap();
        log.commit(end, FlushAtCommit::Sync).unwrap();
    }
    drop(log);
    // Flip a byte in the 10th block of the data area: long synced, followed by later blocks.
    // (The first block, LSN 8192, sits at 8192 % capacity = 8192 bytes into the data area.)
    let file = open(&SyncBackend::new(), &path, false);
    let at = DATA_AREA + 8192 + 10 * BLOCK_SIZE as u64 + 100;
    let mut b = [0u8; 1];
    file.read_at(&mut b, at).unwrap();
    b[0] ^= 0x10;
    file.write_at(&b, at).unwrap();
    let err = recover_all(file).unwrap_err();
    assert!(matches!(err, RecoveryError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("not a torn tail"));
}

#[test]
fn garbage_headers_and_checkpoints_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("redo.log");
    drop(Log::create(open(&SyncBackend::new(), &path, true), 1 << 16).unwrap());
    let file = open(&SyncBackend::new(), &path, false);
    // Both checkpoint slots destroyed.
    file.write_at(&[0xAB; 1024], 512).unwrap();
    assert!(matches!(
        recover_all(Arc::clone(&file)).unwrap_err(),
        RecoveryError::NoCheckpoint { .. }
    ));
    // Not a log at all.
    file.write_at(&[0x55; 512], 0).unwrap();
    assert!(matches!(
        recover_all(file).unwrap_err(),
        RecoveryError::Log(LogError::Format { .. })
    ));
    // A truncated file.
    let short = dir.path().join("short.log");
    std::fs::write(&short, [0u8; 100]).unwrap();
    assert!(recover_all(open(&SyncBackend::new(), &short, false)).is_err());
}

#[test]
fn a_failed_sync_poisons_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let sim = CrashSim::new(Arc::new(SyncBackend::new()));
    let log = Log::create(open(&sim, &dir.path().join("redo.log"), true), 1 << 16).unwrap();
    let (_, end) = log.append(&encode_group(&group(1))).unwrap();
    sim.fail_next_sync();
    assert!(log.commit(end, FlushAtCommit::Sync).is_err());
    assert!(log.is_poisoned());
    assert!(matches!(
        log.append(&encode_group(&group(2))),
        Err(LogError::Poisoned)
    ));
    assert!(matches!(
        log.commit(end, FlushAtCommit::Sync),
        Err(LogError::Poisoned)
    ));
}

fn seeds() -> std::ops::Range<u64> {
    minnow_io::campaign_seeds(200)
}

/// The crash campaign for the log alone: random appends, syncs and checkpoints, power cut at a
/// random point with unsynced writes kept, lost or torn; then recovery must return exactly a
/// prefix of what was appended since the checkpoint that covers every acknowledged commit.
/// A second crash after recovery checks that the erased tail stays erased.
#[test]
fn crash_campaign_loses_nothing_acknowledged() {
    let (mut torn_writes, mut dropped_groups) = (0, 0);
    for seed in seeds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("redo.log");
        let sim = CrashSim::new(Arc::new(SyncBackend::new()));
        let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let log = Log::create(open(&sim, &path, true), 96 * BLOCK_SIZE as u64).unwrap();
        // Every group appended after the current checkpoint; the first `acked_upto` of them
        // were acknowledged as durable.
        let mut live: Vec<u64> = Vec::new();
        let steps = 50 + next() % 200;
        let mut acked_upto = 0usize;
        for n in 0..steps {
            let g = encode_group(&group(n));
            let end = match log.append(&g) {
                Ok((_, end)) => end,
                Err(LogError::LogFull { .. }) => {
                    log.write_up_to(log.current_lsn(), true).unwrap();
                    log.checkpoint(log.flushed_lsn()).unwrap();
                    live.clear();
                    acked_upto = 0;
                    log.append(&g).unwrap().1
                }
                Err(e) => panic!("seed {seed}: {e}"),
            };
            live.push(n);
            match next() % 4 {
                0 => {
                    log.commit(end, FlushAtCommit::Sync).unwrap();
                    acked_upto = live.len();
                }
                1 => {
                    log.write_up_to(end, false).unwrap();
                }
                _ => {}
            }
        }
        // Leave some writes in flight, then cut the power.
        log.write_up_to(log.current_lsn(), false).unwrap();
        let report = sim.power_cut(next()).unwrap();
        drop(log);
        let (log, groups) = recover_all(open(&sim, &path, false))
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{report}"));
        let got: Vec<_> = groups.iter().map(|g| g.records.clone()).collect();
        assert!(
            got.len() >= acked_upto && got.len() <= live.len(),
            "seed {seed}: recovered {} groups, acknowledged {acked_upto}, appended {}\n{report}",
            got.len(),
            live.len()
        );
        for (i, records) in got.iter().enumerate() {
            assert_eq!(records, &group(live[i]), "seed {seed}: group {i}\n{report}");
        }
        torn_writes += report.files.iter().map(|f| f.torn()).sum::<usize>();
        dropped_groups += live.len() - got.len();
        // After recovery the engine applies the groups, flushes the pages and checkpoints; then
        // a new commit, synced, and a second cut with nothing in flight: exactly that commit
        // comes back (the erased torn tail must not reappear as log).
        log.checkpoint(log.flushed_lsn()).unwrap();
        let (_, end) = log.append(&encode_group(&group(9999))).unwrap();
        log.commit(end, FlushAtCommit::Sync).unwrap();
        let report = sim.power_cut(seed).unwrap();
        drop(log);
        let (_, again) = recover_all(open(&sim, &path, false))
            .unwrap_or_else(|e| panic!("seed {seed} (second cut): {e}\n{report}"));
        let again: Vec<_> = again.into_iter().map(|g| g.records).collect();
        assert_eq!(
            again,
            vec![group(9999)],
            "seed {seed}: second cut\n{report}"
        );
    }
    // The campaign is only worth something if power cuts really tore and dropped writes.
    if seeds().count() >= 50 {
        assert!(
            torn_writes > 0 && dropped_groups > 0,
            "{torn_writes} torn, {dropped_groups} dropped"
        );
    }
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Random bytes as a log file: recovery returns an error or an empty log, never panics.
        #[test]
        fn garbage_log_files_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..12_000)) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("redo.log");
            std::fs::write(&path, &bytes).unwrap();
            let _ = recover_all(open(&SyncBackend::new(), &path, false));
        }

        /// A real log with bits flipped anywhere: recovery either fails with a typed error or
        /// returns a prefix of the groups that were written, never a garbage group.
        #[test]
        fn flipped_bits_give_an_error_or_a_prefix(
            flips in prop::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..6)
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("redo.log");
            let log = Log::create(open(&SyncBackend::new(), &path, true), 64 * BLOCK_SIZE as u64).unwrap();
            for n in 0..40 {
                let (_, end) = log.append(&encode_group(&group(n))).unwrap();
                log.commit(end, FlushAtCommit::Sync).unwrap();
            }
            drop(log);
            let mut bytes = std::fs::read(&path).unwrap();
            for (at, bit) in &flips {
                let i = at.index(bytes.len());
                bytes[i] ^= 1 << bit;
            }
            std::fs::write(&path, &bytes).unwrap();
            if let Ok((_, groups)) = recover_all(open(&SyncBackend::new(), &path, false)) {
                for (i, g) in groups.iter().enumerate() {
                    prop_assert_eq!(&g.records, &group(i as u64));
                }
            }
        }
    }
}

/// A new 1 MiB log file `redo.log` in a new directory, on real files.
fn mib_log() -> (tempfile::TempDir, std::path::PathBuf, Log) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("redo.log");
    let log = Log::create(open(&SyncBackend::new(), &path, true), 1 << 20).unwrap();
    (dir, path, log)
}

#[test]
fn the_file_grows_a_step_at_a_time_and_a_short_file_recovers() {
    let (_dir, path, log) = mib_log();
    let (capacity, step) = (log.capacity(), log.capacity() / 32);
    let len = || std::fs::metadata(&path).unwrap().len();
    // Nothing but the header and the first step up front.
    assert_eq!(len(), DATA_AREA + step);
    let mut n = 0;
    while log.current_lsn().0 - Lsn::FIRST.0 < 3 * step {
        let (_, end) = log.append(&encode_group(&group(n))).unwrap();
        log.commit(end, FlushAtCommit::Sync).unwrap();
        n += 1;
    }
    let written = log.current_lsn().0 % capacity + BLOCK_SIZE as u64;
    assert!(len() >= DATA_AREA + written, "{} < {written}", len());
    assert!(
        len() <= DATA_AREA + written + step,
        "grew more than a step ahead"
    );
    assert_eq!(len(), log.allocated());
    drop(log);
    // Recovery reads the missing part of the data area as zeroes: the log ends where its
    // synced data ends, whether the file stops a step later or right after the last block.
    for cut in [None, Some(DATA_AREA + written)] {
        if let Some(at) = cut {
            std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .unwrap()
                .set_len(at)
                .unwrap();
        }
        let (log, groups) = recover_all(open(&SyncBackend::new(), &path, false)).unwrap();
        assert_eq!(groups.len() as u64, n, "cut at {cut:?}");
        for (i, g) in groups.iter().enumerate() {
            assert_eq!(g.records, group(i as u64));
        }
        assert_eq!(log.allocated(), len());
    }
    // Appending on after recovery grows the file again; a whole lap leaves it full size.
    let (log, _) = recover_all(open(&SyncBackend::new(), &path, false)).unwrap();
    let start = log.current_lsn();
    fill_and_checkpoint(&log, start, capacity + 8 * step, n);
    assert_eq!(len(), DATA_AREA + capacity);
}

#[test]
fn free_check_asks_early_and_in_large_steps() {
    // A requester that checkpoints exactly where it is asked to (as far as the log is
    // durable): each request frees at least 1/16 of the log, so a stream of appends many laps
    // long asks about sixteen times per lap (asking for just the next mtr's room asked 64
    // times), never waits, and never finds the log full.
    let dir = tempfile::tempdir().unwrap();
    let capacity = 256 * BLOCK_SIZE as u64;
    let log = Arc::new(log_in(dir.path(), capacity));
    let asked = Arc::new(std::sync::Mutex::new(Vec::<(Lsn, Lsn)>::new()));
    let weak = Arc::downgrade(&log);
    let seen = Arc::clone(&asked);
    log.set_checkpoint_requester(Box::new(move |target| {
        if let Some(log) = weak.upgrade() {
            seen.lock().unwrap().push((log.current_lsn(), target));
            log.write_up_to(log.current_lsn(), true).unwrap();
            log.checkpoint(target.min(log.flushed_lsn())).unwrap();
        }
    }));
    let margin = 2 * BLOCK_SIZE as u64;
    let g = encode_group(&group(5));
    let laps = 20;
    while log.current_lsn().0 - Lsn::FIRST.0 < laps * capacity {
        log.free_check(margin, Duration::ZERO).unwrap();
        log.append(&g).unwrap();
    }
    let asked = asked.lock().unwrap();
    for &(at, target) in asked.iter() {
        // The async mark was passed, and the target keeps at most 13/16 of the log.
        assert!(at.0 - target.0 <= capacity * 13 / 16, "{at} -> {target}");
    }
    assert!(
        asked.len() as u64 <= 17 * laps,
        "{} requests for {laps} laps",
        asked.len()
    );
    assert!(asked.len() as u64 >= laps, "{} requests", asked.len());
    assert_eq!(log.stats().space_waits.load(Ordering::Relaxed), 0);
}

/// Appends and syncs groups `from..` until the log's end is `bytes` past `start`, checkpoints
/// at the end (as a clean close does) and returns the next group number.
fn fill_and_checkpoint(log: &Log, start: Lsn, bytes: u64, mut n: u64) -> u64 {
    while log.current_lsn().0 - start.0 < bytes {
        let g = encode_group(&group(n));
        if log.free_space() < 2 * g.len() as u64 + 2 * BLOCK_SIZE as u64 {
            log.write_up_to(log.current_lsn(), true).unwrap();
            log.checkpoint(log.flushed_lsn()).unwrap();
        }
        log.append(&g).unwrap();
        n += 1;
    }
    log.write_up_to(log.current_lsn(), true).unwrap();
    log.checkpoint(log.flushed_lsn()).unwrap();
    n
}

#[test]
fn shrink_gives_the_file_back_and_the_log_goes_on() {
    let (_dir, path, log) = mib_log();
    let (capacity, step) = (log.capacity(), log.capacity() / 32);
    let len = || std::fs::metadata(&path).unwrap().len();
    // A new log's first step is given back too; a file down to its header is left alone.
    assert_eq!(log.shrink().unwrap(), step);
    assert_eq!(len(), DATA_AREA);
    assert_eq!(log.shrink().unwrap(), 0);
    // Past a lap and a half: the file is full size and the end lies far from its front.
    let n = fill_and_checkpoint(&log, log.current_lsn(), capacity * 3 / 2, 0);
    assert_eq!(len(), DATA_AREA + capacity);
    // Redo after the checkpoint pins the file.
    let (_, end) = log.append(&encode_group(&group(n))).unwrap();
    log.commit(end, FlushAtCommit::Sync).unwrap();
    assert_eq!(log.shrink().unwrap(), 0);
    assert_eq!(len(), DATA_AREA + capacity);
    log.checkpoint(end).unwrap();
    assert_eq!(log.shrink().unwrap(), capacity);
    assert_eq!((len(), log.allocated()), (DATA_AREA, DATA_AREA));
    // The end moved to the front of the next lap, with the checkpoint.
    let front = log.current_lsn();
    assert!(front > end);
    assert_eq!(front.block_start().0 % capacity, 0);
    assert_eq!(front, log.checkpoint_lsn());
    // A reopen now replays nothing; appends go on from the front, grow the file a step, and
    // come back after the next reopen.
    drop(log);
    let (log, groups) = recover_all(open(&SyncBackend::new(), &path, false)).unwrap();
    assert!(groups.is_empty());
    assert_eq!(log.current_lsn(), front);
    for k in 0..20 {
        let (_, end) = log.append(&encode_group(&group(1000 + k))).unwrap();
        log.commit(end, FlushAtCommit::Sync).unwrap();
    }
    assert_eq!(len(), DATA_AREA + step);
    drop(log);
    let (log, groups) = recover_all(open(&SyncBackend::new(), &path, false)).unwrap();
    let got: Vec<_> = groups.into_iter().map(|g| g.records).collect();
    assert_eq!(got, (1000..1020).map(group).collect::<Vec<_>>());
    // An end inside the first step, in a file left full size (a crash before the truncate was
    // durable): the shrink moves it to the next lap too.
    fill_and_checkpoint(&log, front, step / 2, 2000);
    drop(log);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(DATA_AREA + capacity)
        .unwrap();
    let (log, _) = recover_all(open(&SyncBackend::new(), &path, false)).unwrap();
    assert_eq!(log.shrink().unwrap(), capacity);
    assert_eq!(len(), DATA_AREA);
    assert_eq!(log.current_lsn().0, front.0 + capacity);
}

/// A power cut at every step of a shrink (the device dies after 0, 1, .. operations, with the
/// unsynced ones kept, lost or torn): recovery finds nothing to replay, the file is either
/// length, and the log goes on from wherever it came back.
#[test]
fn a_power_cut_during_the_shrink_loses_nothing() {
    let capacity = 256 * BLOCK_SIZE as u64;
    let shrunk_len = DATA_AREA;
    let mut lengths = std::collections::BTreeSet::new();
    for seed in minnow_io::campaign_seeds(24) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("redo.log");
        let sim = CrashSim::new(Arc::new(SyncBackend::new()));
        let log = Log::create(open(&sim, &path, true), capacity).unwrap();
        // Up to a lap and a bit, so that some seeds end near the front and most far from it.
        let bytes = capacity / 4 + seed * 997 % capacity;
        let n = fill_and_checkpoint(&log, Lsn::FIRST, bytes, 0);
        let full = log.allocated();
        // The shrink does at most 4 operations: checkpoint write, sync, truncate, sync.
        sim.arm(seed % 5);
        let shrunk = log.shrink();
        let report = sim.power_cut(seed).unwrap();
        drop(log);
        let len = std::fs::metadata(&path).unwrap().len();
        assert!(
            len == full || len == shrunk_len,
            "seed {seed}: length {len} ({shrunk:?})\n{report}"
        );
        lengths.insert(len);
        let (log, groups) = recover_all(open(&sim, &path, false))
            .unwrap_or_else(|e| panic!("seed {seed}: {e} ({shrunk:?})\n{report}"));
        assert!(groups.is_empty(), "seed {seed}: replayed {}", groups.len());
        // The log goes on, and a second close shrinks it if the first did not.
        for k in 0..5 {
            let (_, end) = log.append(&encode_group(&group(n + k))).unwrap();
            log.commit(end, FlushAtCommit::Sync).unwrap();
        }
        drop(log);
        let (log, groups) = recover_all(open(&sim, &path, false)).unwrap();
        let got: Vec<_> = groups.into_iter().map(|g| g.records).collect();
        assert_eq!(
            got,
            (n..n + 5).map(group).collect::<Vec<_>>(),
            "seed {seed}"
        );
        log.checkpoint(log.current_lsn()).unwrap();
        log.shrink().unwrap();
        let len = std::fs::metadata(&path).unwrap().len();
        assert_eq!(len, shrunk_len, "seed {seed}: after the second shrink");
    }
    if minnow_io::campaign_seeds(24).count() >= 24 {
        assert_eq!(lengths.len(), 2, "cuts should leave both lengths");
    }
}
