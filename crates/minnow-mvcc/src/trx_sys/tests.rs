//! Rollback segments: round-robin assignment, a writer per segment at once, the history
//! lists merged in commit-number order, recovery of active logs in several segments after a
//! power cut, and typed errors for a damaged segment header page or an old format.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use minnow_buf::{BufConfig, BufferPool, DoublewriteRecovery, PageWriter, SpaceMap};
use minnow_dblwr::{Doublewrite, DoublewriteConfig, DoublewriteMode};
use minnow_io::{Backend, CrashSim, FlushMethod, OpenOptions, SyncBackend, Tablespace};
use minnow_page::checksum::{ChecksumAlgorithm, ChecksumPolicy};
use minnow_page::{PageId, PageSize};
use minnow_redo::{FlushAtCommit, Log};

use super::page::{rseg, sys};
use super::{MAX_RSEGS, TrxSys, UndoLog};
use crate::error::MvccError;
use crate::undo::record::UndoKind;
use crate::undo::tests::rec;

const SPACE: u32 = 1;

fn pool(dir: &Path) -> BufferPool {
    BufferPool::create_scratch(dir, BufConfig::with_frames(256, PageSize::K4), 1).unwrap()
}

/// Writes `bytes` at `at` of page `page` in one mtr.
fn poke(pool: &BufferPool, page: u32, at: usize, bytes: &[u8]) {
    let mut mtr = pool.mtr().unwrap();
    let h = mtr.get_write(PageId::new(SPACE, page)).unwrap();
    mtr.write(h, at, bytes).unwrap();
    mtr.commit().unwrap();
}

/// Begins a log for a new transaction and appends `n` records keyed `key`.
fn write_log(pool: &BufferPool, sys: &TrxSys, key: u8, n: usize) -> UndoLog {
    let id = sys.assign_id(pool).unwrap();
    let mut log = sys.begin_log(pool, id).unwrap();
    for i in 0..n {
        let kind = if i == 0 {
            UndoKind::Insert
        } else {
            UndoKind::Update
        };
        sys.append(pool, &mut log, rec(kind, key, 10 + i)).unwrap();
    }
    log
}

#[test]
fn logs_go_to_the_segments_round_robin_each_on_its_own_stream() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path());
    let (sys, _) = TrxSys::create(&pool, SPACE, 4).unwrap();
    assert_eq!(sys.rollback_segments(), 4);
    let logs: Vec<UndoLog> = (0..8).map(|k| write_log(&pool, &sys, k, 2)).collect();
    let segs: Vec<usize> = logs.iter().map(UndoLog::rseg).collect();
    assert_eq!(segs, [0, 1, 2, 3, 0, 1, 2, 3]);
    // Each segment's stream holds exactly the headers of its own logs.
    let check = sys.check(&pool).unwrap();
    assert_eq!(check.rseg_pages.len(), 4);
    assert_eq!(check.pages.len(), 4, "one undo page per segment so far");
    let pages: BTreeSet<u32> = logs.iter().map(|l| l.header.page).collect();
    assert_eq!(pages.len(), 4);
    for l in &logs {
        assert_eq!(l.header.page, logs[l.rseg()].header.page);
    }
    assert_eq!(sys.status().active, 8);
    for l in &logs {
        sys.commit(&pool, l).unwrap();
    }
    let st = sys.status();
    assert_eq!((st.active, st.history_len, st.undo_pages), (0, 8, 4));
}

#[test]
fn create_refuses_a_segment_count_out_of_range() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path());
    for n in [0, MAX_RSEGS + 1] {
        match TrxSys::create(&pool, SPACE, n) {
            Err(MvccError::RollbackSegments { requested }) => assert_eq!(requested, n),
            other => panic!("{n} segments: expected RollbackSegments, got {other:?}"),
        }
    }
}

#[test]
fn a_writer_per_segment_at_once_reads_everything_back() {
    const THREADS: usize = 4;
    const TRXS: usize = 6;
    const RECS: usize = 40;
    let dir = tempfile::tempdir().unwrap();
    let pool =
        BufferPool::create_scratch(dir.path(), BufConfig::with_frames(1024, PageSize::K4), 1)
            .unwrap();
    let (sys, _) = TrxSys::create(&pool, SPACE, THREADS).unwrap();
    // Each thread writes TRXS transactions of RECS records, some of them long enough to
    // span pages; it keeps every roll pointer with the payload it wrote.
    let written: Vec<Vec<(crate::RollPtr, u8, usize, u64)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (pool, sys) = (&pool, &sys);
                s.spawn(move || {
                    let mut out = Vec::new();
                    for x in 0..TRXS {
                        let id = sys.assign_id(pool).unwrap();
                        let mut log = sys.begin_log(pool, id).unwrap();
                        for i in 0..RECS {
                            let key = (t * 50 + x * 7 + i) as u8;
                            let len = if i % 13 == 5 { 5000 } else { 20 + i };
                            let p = sys
                                .append(pool, &mut log, rec(UndoKind::Update, key, len))
                                .unwrap();
                            out.push((p, key, len, log.n_recs - 1));
                        }
                        sys.commit(pool, &log).unwrap();
                    }
                    out
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (p, key, len, undo_no) in written.iter().flatten() {
        let r = sys.read(&pool, *p).unwrap();
        assert_eq!(r.undo_no, *undo_no);
        assert_eq!(r.fields[0].as_deref(), Some(&[*key][..]));
        assert_eq!(r.fields[2].as_deref(), Some(&vec![*key; *len][..]));
    }
    let check = sys.check(&pool).unwrap();
    assert_eq!(check.history_len, (THREADS * TRXS) as u64);
    let history = sys.history(&pool).unwrap();
    assert_eq!(history.len(), THREADS * TRXS);
    assert!(history.windows(2).all(|w| w[0].1.trx_no < w[1].1.trx_no));
    let st = sys.status();
    assert_eq!(st.undo_pages, check.pages.len() as u64);
    assert_eq!(st.history_len, check.history_len);
}

#[test]
fn purge_takes_the_logs_of_all_segments_in_commit_order() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path());
    let (sys, _) = TrxSys::create(&pool, SPACE, 3).unwrap();
    // Five logs over three segments, committed in an order unlike their beginning.
    let logs: Vec<UndoLog> = (0..5).map(|k| write_log(&pool, &sys, k, 3)).collect();
    let order = [4, 2, 0, 3, 1];
    for &i in &order {
        sys.commit(&pool, &logs[i]).unwrap();
    }
    let by_header: BTreeMap<_, usize> = logs
        .iter()
        .enumerate()
        .map(|(i, l)| (l.header, i))
        .collect();
    let listed: Vec<usize> = sys
        .history(&pool)
        .unwrap()
        .iter()
        .map(|(a, _)| by_header[a])
        .collect();
    assert_eq!(listed, order);
    let mut purged = Vec::new();
    let mut last_no = 0;
    while let Some((at, h)) = sys.history_head(&pool).unwrap() {
        assert!(h.trx_no > last_no, "commit numbers rise");
        last_no = h.trx_no;
        purged.push(by_header[&at]);
        assert!(sys.finish_purge(&pool, at).unwrap().is_some());
        // Taking it twice does nothing.
        assert!(sys.finish_purge(&pool, at).unwrap().is_none());
    }
    assert_eq!(purged, order);
    assert_eq!(sys.status().history_len, 0);
    sys.trim(&pool).unwrap();
    let check = sys.check(&pool).unwrap();
    assert_eq!(check.history_len, 0);
}

#[test]
fn a_damaged_segment_header_page_is_a_typed_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path());
    let (sys, _) = TrxSys::create(&pool, SPACE, 3).unwrap();
    let header = sys.rseg_pages()[2];
    let page = sys.page();
    drop(sys);
    let expect = |what_has: &str, at: PageId| match TrxSys::open(&pool, page) {
        Err(MvccError::CorruptTrxSys { page, what }) => {
            assert_eq!(page, at);
            assert!(what.contains(what_has), "{what}");
        }
        other => panic!("expected CorruptTrxSys, got {other:?}"),
    };
    poke(&pool, header.page_no, rseg::N_SLOTS, &0u16.to_be_bytes());
    expect(&format!("N_SLOTS @{}", rseg::N_SLOTS), header);
    poke(&pool, header.page_no, rseg::N_SLOTS, &1u16.to_be_bytes());
    poke(&pool, header.page_no, rseg::ID, &7u16.to_be_bytes());
    expect(&format!("RSEG id @{} is 7, expected 2", rseg::ID), header);
    poke(&pool, header.page_no, rseg::ID, &2u16.to_be_bytes());
    poke(&pool, header.page_no, rseg::HEAD, &3u16.to_be_bytes());
    expect(&format!("HEAD @{} is 3", rseg::HEAD), header);
    // The directory naming the TRX_SYS page itself, and a format-2 page.
    poke(
        &pool,
        page.page_no,
        sys::RSEGS + 4,
        &page.page_no.to_be_bytes(),
    );
    expect(&format!("header page @{}", sys::RSEGS + 4), page);
    poke(&pool, page.page_no, sys::FORMAT, &2u32.to_be_bytes());
    expect(&format!("format version @{} is 2", sys::FORMAT), page);
    // A page of random bytes in place of the header never panics.
    for seed in 0..20u32 {
        let junk: Vec<u8> = (0..4000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761).wrapping_add(seed * 97) >> 11) as u8)
            .collect();
        poke(&pool, header.page_no, 38, &junk);
        let _ = TrxSys::open(&pool, page);
        let _ = super::active_logs(&pool, page);
    }
}

/// A pool on `backend` over one tablespace and a redo log in `dir`, with doublewrite (a power
/// cut may tear a page write).
fn crash_pool(backend: &dyn Backend, dir: &Path) -> BufferPool {
    let space = Tablespace::create_with_zip(
        backend,
        &dir.join("t.ibd"),
        SPACE,
        PageSize::K4,
        None,
        ChecksumAlgorithm::Crc32,
        FlushMethod::Fsync,
        1,
    )
    .unwrap();
    let spaces = Arc::new(SpaceMap::new());
    spaces.insert(Arc::new(space));
    let log_file = backend
        .open(
            &dir.join("redo"),
            &OpenOptions::new(FlushMethod::Fsync).create(true),
        )
        .unwrap();
    let log = Arc::new(Log::create(log_file, 4 << 20).unwrap());
    BufferPool::open(crash_cfg(), spaces, log, dblwr(backend, dir)).unwrap()
}

fn crash_cfg() -> BufConfig {
    BufConfig {
        doublewrite_pages: 4,
        read_ahead_threshold: 0,
        ..BufConfig::with_frames(64, PageSize::K4)
    }
}

fn dblwr(backend: &dyn Backend, dir: &Path) -> Arc<dyn PageWriter> {
    let c = DoublewriteConfig::new(DoublewriteMode::On, 2, PageSize::K4).pages_per_batch(4);
    Arc::new(Doublewrite::open(backend, dir, c).unwrap())
}

fn recover(backend: &dyn Backend, dir: &Path, what: &str) -> BufferPool {
    let opts = OpenOptions::new(FlushMethod::Fsync);
    let space = Tablespace::open_for_recovery(
        backend,
        &dir.join("t.ibd"),
        &opts,
        ChecksumPolicy::default(),
    )
    .unwrap();
    let spaces = Arc::new(SpaceMap::new());
    spaces.insert(Arc::new(space));
    let log_file = backend.open(&dir.join("redo"), &opts).unwrap();
    let d = Some(DoublewriteRecovery {
        backend,
        dir,
        mode: DoublewriteMode::On,
    });
    let (pool, _, _) =
        BufferPool::recover(crash_cfg(), spaces, d, || Ok(dblwr(backend, dir)), log_file)
            .unwrap_or_else(|e| panic!("{what}: recovery failed: {e}"));
    pool
}

#[test]
fn after_a_power_cut_open_finds_the_active_logs_of_every_segment() {
    for seed in 0..3u64 {
        let dir = tempfile::tempdir().unwrap();
        let sim = Arc::new(CrashSim::new(Arc::new(SyncBackend::new())));
        let backend: Arc<dyn Backend> = sim.clone();
        let (page, active, committed) = {
            let pool = crash_pool(&*backend, dir.path());
            let (sys, end) = TrxSys::create(&pool, SPACE, 4).unwrap();
            pool.commit_durable(end, FlushAtCommit::Sync).unwrap();
            pool.flush_all().unwrap();
            // Seven transactions over the four segments; 0, 3 and 5 commit.
            let logs: Vec<UndoLog> = (0..7)
                .map(|k| write_log(&pool, &sys, k, 4 + k as usize))
                .collect();
            let mut committed = BTreeSet::new();
            for i in [0, 3, 5] {
                let end = sys.commit(&pool, &logs[i]).unwrap();
                pool.commit_durable(end, FlushAtCommit::Sync).unwrap();
                committed.insert(logs[i].trx_id);
            }
            // Make the last append durable too: the redo of every step above is on disk.
            let extra = write_log(&pool, &sys, 9, 1);
            let end = sys.commit(&pool, &extra).unwrap();
            pool.commit_durable(end, FlushAtCommit::Sync).unwrap();
            committed.insert(extra.trx_id);
            let active: BTreeMap<u64, (usize, u64)> = [1, 2, 4, 6]
                .iter()
                .map(|&i| (logs[i].trx_id, (logs[i].rseg(), logs[i].n_recs)))
                .collect();
            sim.arm(0);
            let page = sys.page();
            drop(sys);
            drop(pool);
            (page, active, committed)
        };
        let report = sim.power_cut(seed).unwrap();
        let pool = recover(&*backend, dir.path(), &report.to_string());
        let (sys, logs) = TrxSys::open(&pool, page).unwrap();
        let found: BTreeMap<u64, (usize, u64)> = logs
            .iter()
            .map(|l| (l.trx_id, (l.rseg(), l.n_recs)))
            .collect();
        assert_eq!(found, active, "seed {seed}");
        let segs: BTreeSet<usize> = found.values().map(|v| v.0).collect();
        assert!(segs.len() >= 3, "active logs in several segments: {segs:?}");
        assert_eq!(super::active_logs(&pool, page).unwrap().len(), active.len());
        for t in &committed {
            assert!(!sys.is_active(*t));
        }
        // Roll every one back, as the engine does at startup.
        for mut log in logs {
            let mut undone = 0;
            while let Some((_, r)) = sys.last_record(&pool, &log, 0).unwrap() {
                sys.pop(&pool, &mut log, &r).unwrap();
                undone += 1;
            }
            assert_eq!(undone, active[&log.trx_id].1);
            sys.finish_rollback(&pool, &log).unwrap();
        }
        sys.check(&pool).unwrap();
        assert_eq!(sys.status().active, 0);
        drop(sys);
        let (again, logs) = TrxSys::open(&pool, page).unwrap();
        assert!(logs.is_empty());
        assert_eq!(again.check(&pool).unwrap().history_len, 3);
    }
}

/// An undo append inside the caller's mtr ([`super::UndoTail`]): the record exists from that
/// mtr's commit on, the segment's mutex is not free meanwhile, one record per mtr; a dropped
/// mtr leaves the stream and the log as they were; a record longer than a page is left to
/// [`TrxSys::append`], nothing written.
#[test]
fn an_append_inside_the_callers_mtr_exists_from_its_commit_on() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path());
    let (sys, _) = TrxSys::create(&pool, SPACE, 1).unwrap();
    let mut log = write_log(&pool, &sys, 1, 1);
    let page = PageSize::K4.bytes();

    let mut mtr = pool.mtr().unwrap();
    let mut tail = sys.try_undo_tail(&log).unwrap().unwrap();
    assert!(
        sys.try_undo_tail(&log).unwrap().is_none(),
        "the mutex is held"
    );
    let ptr = tail
        .append_in(&mut mtr, page, &log, rec(UndoKind::DeleteMark, 2, 30))
        .unwrap()
        .unwrap();
    assert!(
        tail.append_in(&mut mtr, page, &log, rec(UndoKind::Update, 3, 30))
            .is_err(),
        "a second record in one mtr"
    );
    mtr.commit().unwrap();
    tail.committed(&mut log);
    assert!(sys.try_undo_tail(&log).unwrap().is_some(), "let go");
    assert_eq!(log.n_recs, 2);
    let got = sys.read(&pool, ptr).unwrap();
    assert_eq!((got.kind, got.undo_no), (UndoKind::DeleteMark, 1));
    assert_eq!(got.fields.first(), Some(&Some(vec![2])));
    let (last, _) = sys.last_record(&pool, &log, 0).unwrap().unwrap();
    assert_eq!((last.page, last.offset), (ptr.page, ptr.offset));
    assert!(
        log.update,
        "a delete-mark record makes the log an update log"
    );

    // Dropped uncommitted: nothing moved, and the next record lands where it would have.
    let mut mtr = pool.mtr().unwrap();
    let mut tail = sys.undo_tail(&log).unwrap();
    let lost = tail
        .append_in(&mut mtr, page, &log, rec(UndoKind::DeleteMark, 4, 30))
        .unwrap()
        .unwrap();
    drop(mtr);
    drop(tail);
    assert_eq!(log.n_recs, 2);
    let (last, _) = sys.last_record(&pool, &log, 0).unwrap().unwrap();
    assert_eq!((last.page, last.offset), (ptr.page, ptr.offset));
    let next = sys
        .append(&pool, &mut log, rec(UndoKind::Update, 5, 30))
        .unwrap();
    assert_eq!((next.page, next.offset), (lost.page, lost.offset));
    assert_eq!(sys.read(&pool, next).unwrap().undo_no, 2);

    // Longer than a page: not here.
    let mut mtr = pool.mtr().unwrap();
    let mut tail = sys.undo_tail(&log).unwrap();
    let long = tail
        .append_in(&mut mtr, page, &log, rec(UndoKind::Update, 6, 5000))
        .unwrap();
    assert!(long.is_none());
    assert_eq!(mtr.record_count(), 0, "nothing written");
}

/// Appends leave the log header's LAST and N_RECS behind (`undo::chain`): after a power cut,
/// open must still find every log's newest record and next undo number, for logs that
/// interleave on one stream, with records longer than a page, records appended inside the
/// caller's mtr, a partial rollback whose undone records stay in the stream after the new
/// LAST, and a log rolled back to empty and written again. The rollback then undoes exactly
/// the live records, newest first. A committed log's header is exact (purge reads it).
#[test]
fn after_a_power_cut_a_stale_last_is_brought_forward_to_the_newest_record() {
    let page_size = PageSize::K4.bytes();
    for seed in 0..3u64 {
        let dir = tempfile::tempdir().unwrap();
        let sim = Arc::new(CrashSim::new(Arc::new(SyncBackend::new())));
        let backend: Arc<dyn Backend> = sim.clone();
        let (page, live) = {
            let pool = crash_pool(&*backend, dir.path());
            let (sys, end) = TrxSys::create(&pool, SPACE, 1).unwrap();
            pool.commit_durable(end, FlushAtCommit::Sync).unwrap();
            pool.flush_all().unwrap();
            let mut logs: Vec<UndoLog> = (0..4).map(|k| write_log(&pool, &sys, k, 1)).collect();
            // The undo numbers each log still has to undo.
            let mut live: Vec<Vec<u64>> = vec![vec![0]; 4];
            let append = |sys: &TrxSys, log: &mut UndoLog, live: &mut Vec<u64>, i: usize| {
                let no = log.n_recs;
                if i % 7 == 3 {
                    // Longer than a page: several mtrs.
                    sys.append(&pool, log, rec(UndoKind::Update, 1, 5000))
                        .unwrap();
                } else if i.is_multiple_of(2) {
                    let mut mtr = pool.mtr().unwrap();
                    let mut tail = sys.undo_tail(log).unwrap();
                    tail.append_in(&mut mtr, page_size, log, rec(UndoKind::DeleteMark, 2, 30))
                        .unwrap()
                        .unwrap();
                    mtr.commit().unwrap();
                    tail.committed(log);
                } else {
                    sys.append(&pool, log, rec(UndoKind::Update, 3, 60 + i))
                        .unwrap();
                }
                live.push(no);
            };
            let pop = |sys: &TrxSys, log: &mut UndoLog, live: &mut Vec<u64>, n: usize| {
                for _ in 0..n {
                    let (_, r) = sys.last_record(&pool, log, 0).unwrap().unwrap();
                    assert_eq!(live.pop(), Some(r.undo_no));
                    sys.pop(&pool, log, &r).unwrap();
                }
            };
            for i in 0..30 {
                for (k, (log, l)) in logs.iter_mut().zip(live.iter_mut()).enumerate() {
                    if k < 3 || i < 5 {
                        append(&sys, log, l, i + k);
                    }
                }
                if i == 12 {
                    // A partial rollback in log 0, a rollback to empty in log 1.
                    pop(&sys, &mut logs[0], &mut live[0], 6);
                    let n = live[1].len();
                    pop(&sys, &mut logs[1], &mut live[1], n);
                    assert_eq!(logs[1].last, None);
                }
            }
            // The header was left behind: the walk is what finds the newest record.
            let on_page = crate::undo::read_header(&pool, SPACE, logs[0].header).unwrap();
            assert_ne!(on_page.last, logs[0].last, "seed {seed}");
            // A committed log's header is exact.
            let end = sys.commit(&pool, &logs[3]).unwrap();
            let h = crate::undo::read_header(&pool, SPACE, logs[3].header).unwrap();
            assert_eq!((h.last, h.n_recs), (logs[3].last, logs[3].n_recs));
            pool.commit_durable(end, FlushAtCommit::Sync).unwrap();
            let live: BTreeMap<u64, (Option<crate::undo::record::UndoAddr>, u64, Vec<u64>)> = logs
                [..3]
                .iter()
                .zip(live)
                .map(|(l, v)| (l.trx_id, (l.last, l.n_recs, v)))
                .collect();
            sim.arm(0);
            let page = sys.page();
            drop(sys);
            drop(pool);
            (page, live)
        };
        let report = sim.power_cut(seed).unwrap();
        let pool = recover(&*backend, dir.path(), &report.to_string());
        let (sys, logs) = TrxSys::open(&pool, page).unwrap();
        assert_eq!(logs.len(), 3, "seed {seed}");
        let listed = super::active_logs(&pool, page).unwrap();
        for mut log in logs {
            let (last, n_recs, want) = &live[&log.trx_id];
            assert_eq!((log.last, log.n_recs), (*last, *n_recs), "seed {seed}");
            assert!(
                listed
                    .iter()
                    .any(|(_, h)| h.trx_id == log.trx_id && (h.last, h.n_recs) == (*last, *n_recs)),
                "a tool's listing agrees"
            );
            let mut undone = Vec::new();
            while let Some((_, r)) = sys.last_record(&pool, &log, 0).unwrap() {
                undone.push(r.undo_no);
                sys.pop(&pool, &mut log, &r).unwrap();
            }
            undone.reverse();
            assert_eq!(&undone, want, "seed {seed}: trx {}", log.trx_id);
            sys.finish_rollback(&pool, &log).unwrap();
        }
        sys.check(&pool).unwrap();
    }
}
