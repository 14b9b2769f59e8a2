//! Lab 3 (redo recovery), the log's half: finding the end of the log, telling a torn tail from
//! corruption, and cutting the bytes into groups. The other half (applying by LSN) is graded
//! in crates/minnow-buf/tests/lab3.rs. docs/labs/03-redo-recovery.md is the handout.

use std::path::Path;
use std::sync::Arc;

use minnow_io::{Backend, FileIo, FlushMethod, OpenOptions, SyncBackend};
use minnow_page::PageId;
use minnow_redo::block::{BLOCK_SIZE, Lsn};
use minnow_redo::format::{Checkpoint, DATA_AREA, FileHeader};
use minnow_redo::record::encode_group;
use minnow_redo::scan::ScanStop;
use minnow_redo::{FlushAtCommit, Group, Log, LogScan, Record, RecoveryError};

/// The log's data area in these tests (1 MiB: nothing wraps).
const CAPACITY: u64 = 1 << 20;

fn open(path: &Path, create: bool) -> Arc<dyn FileIo> {
    SyncBackend::new()
        .open(path, &OpenOptions::new(FlushMethod::Fsync).create(create))
        .unwrap()
}

/// A deterministic group: a write of `n * 37 % 700 + 1` bytes and a memset.
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

/// Appends groups `range`, syncing after each one when `each`, else once at the end; returns
/// each group's end LSN.
fn append(log: &Log, range: std::ops::Range<u64>, each: bool) -> Vec<Lsn> {
    let mut ends = Vec::new();
    for n in range {
        let (_, end) = log.append(&encode_group(&group(n))).unwrap();
        if each {
            log.commit(end, FlushAtCommit::Sync).unwrap();
        }
        ends.push(end);
    }
    if let Some(&end) = ends.last() {
        log.commit(end, FlushAtCommit::Sync).unwrap();
    }
    ends
}

fn recover(path: &Path) -> Result<(minnow_redo::Recovered, Vec<Group>), RecoveryError> {
    let mut groups = Vec::new();
    let (_, recovered) = Log::recover(open(path, false), |g| {
        groups.push(g.clone());
        Ok(())
    })?;
    Ok((recovered, groups))
}

/// The file offset of the block holding `lsn`.
fn offset_of(lsn: Lsn) -> u64 {
    DATA_AREA + lsn.block_start().0 % CAPACITY
}

fn flip(path: &Path, at: u64) {
    let file = open(path, false);
    let mut b = [0u8; 1];
    file.read_at(&mut b, at).unwrap();
    b[0] ^= 0x10;
    file.write_at(&b, at).unwrap();
    file.sync_data().unwrap();
}

fn scan_end(path: &Path) -> minnow_redo::scan::LogEnd {
    let file = open(path, false);
    let mut head = [0u8; 3 * BLOCK_SIZE];
    file.read_at(&mut head, 0).unwrap();
    let block = |i: usize| -> [u8; BLOCK_SIZE] {
        head[i * BLOCK_SIZE..(i + 1) * BLOCK_SIZE]
            .try_into()
            .unwrap()
    };
    let header = FileHeader::decode(&block(0)).unwrap();
    let checkpoint = [1, 2]
        .into_iter()
        .filter_map(|i| Checkpoint::decode(&block(i)))
        .max_by_key(|c| c.no)
        .unwrap();
    let scan = LogScan::new(file.as_ref(), &header, checkpoint.lsn).unwrap();
    scan.find_end().unwrap()
}

#[test]
fn a_new_log_recovers_no_groups() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("redo");
    drop(Log::create(open(&path, true), CAPACITY).unwrap());
    let (recovered, groups) = recover(&path).unwrap();
    assert!(groups.is_empty());
    assert_eq!(recovered.end, recovered.checkpoint.lsn);
    assert_eq!(recovered.erased_blocks, 0);
}

#[test]
fn synced_groups_come_back_in_order_with_their_end_lsns() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("redo");
    let log = Log::create(open(&path, true), CAPACITY).unwrap();
    let ends = append(&log, 0..50, true);
    drop(log);
    let (recovered, groups) = recover(&path).unwrap();
    assert_eq!(groups.len(), 50);
    for (n, g) in groups.iter().enumerate() {
        assert_eq!(g.records, group(n as u64), "group {n}");
        assert_eq!(g.end, ends[n], "group {n}'s end LSN");
    }
    assert_eq!(recovered.end, ends[49]);
    assert_eq!(recovered.groups, 50);
}

#[test]
fn a_group_larger_than_a_block_comes_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("redo");
    let log = Log::create(open(&path, true), CAPACITY).unwrap();
    let big = vec![Record::Write {
        page: PageId::new(3, 9),
        offset: 10,
        data: (0..3000u32).map(|i| (i * 7) as u8).collect(),
    }];
    let (_, end) = log.append(&encode_group(&big)).unwrap();
    log.commit(end, FlushAtCommit::Sync).unwrap();
    drop(log);
    let (_, groups) = recover(&path).unwrap();
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0].records, big);
    assert_eq!(groups[0].end, end);
}

#[test]
fn a_clean_log_ends_in_its_last_written_block() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("redo");
    let log = Log::create(open(&path, true), CAPACITY).unwrap();
    let ends = append(&log, 0..20, true);
    drop(log);
    let end = scan_end(&path);
    let last = *ends.last().unwrap();
    assert_eq!(end.valid_end, last);
    assert!(
        matches!(end.stop, ScanStop::LastWritten { block, .. } if block == last.block_start()),
        "{:?}",
        end.stop
    );
    assert!(end.damage.is_empty());
}

#[test]
fn a_torn_last_block_ends_the_log_and_drops_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("redo");
    let log = Log::create(open(&path, true), CAPACITY).unwrap();
    let ends = append(&log, 0..30, true);
    drop(log);
    // Tear the block holding the last group's end: nothing after it was ever synced.
    let last = *ends.last().unwrap();
    flip(&path, offset_of(last) + 30);
    let (recovered, groups) = recover(&path).unwrap();
    assert!(groups.len() < 30, "the torn group must not come back");
    for (n, g) in groups.iter().enumerate() {
        assert_eq!(g.records, group(n as u64));
        assert!(
            g.end <= last.block_start(),
            "group {n} runs into the torn block"
        );
    }
    assert_eq!(
        recovered.end,
        groups.last().map_or(recovered.checkpoint.lsn, |g| g.end)
    );
}

#[test]
fn leftovers_of_a_torn_write_are_a_torn_tail_and_are_erased() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("redo");
    let log = Log::create(open(&path, true), CAPACITY).unwrap();
    let first = append(&log, 0..10, true);
    // One write of many blocks: its blocks all record the durable LSN before it.
    let second = append(&log, 10..60, false);
    drop(log);
    let synced = *first.last().unwrap();
    let middle = Lsn((synced.0 + second.last().unwrap().0) / 2);
    flip(&path, offset_of(middle) + 100);
    let end = scan_end(&path);
    assert!(end.damage.is_empty(), "{:?}", end.damage);
    assert!(end.leftover_blocks > 0);
    let (recovered, groups) = recover(&path).unwrap();
    assert!(groups.len() >= 10 && groups.len() < 60, "{}", groups.len());
    assert!(recovered.erased_blocks > 0);
    // Erased: a second recovery finds no leftovers and the same groups.
    let (again, groups_again) = recover(&path).unwrap();
    assert_eq!(again.erased_blocks, 0);
    assert_eq!(groups_again, groups);
}

#[test]
fn damage_before_durable_blocks_is_corruption_not_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("redo");
    let log = Log::create(open(&path, true), CAPACITY).unwrap();
    append(&log, 0..200, true);
    drop(log);
    // The 10th data block was synced long before the blocks after it were written.
    let damaged = Lsn(8192 + 10 * BLOCK_SIZE as u64);
    flip(&path, offset_of(damaged) + 100);
    let end = scan_end(&path);
    assert!(!end.damage.is_empty());
    assert!(end.damage.iter().all(|d| d.durable > end.valid_end));
    match recover(&path) {
        Err(RecoveryError::Corrupt {
            at, later, durable, ..
        }) => {
            assert_eq!(at, end.valid_end);
            assert!(later > at && durable > at);
        }
        other => panic!("expected Corrupt, got {:?}", other.map(|(r, _)| r)),
    }
}

#[test]
fn a_group_cut_by_the_end_of_the_log_is_not_handed_out() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("redo");
    let log = Log::create(open(&path, true), CAPACITY).unwrap();
    let ends = append(&log, 0..5, true);
    let big = vec![Record::Write {
        page: PageId::new(4, 1),
        offset: 0,
        data: vec![0xAB; 2000],
    }];
    let (start, end) = log.append(&encode_group(&big)).unwrap();
    log.commit(end, FlushAtCommit::Sync).unwrap();
    drop(log);
    // Tear the big group's last block: its first blocks are whole, its end is lost.
    flip(&path, offset_of(end) + 30);
    assert!(start.block_start() < end.block_start());
    let (recovered, groups) = recover(&path).unwrap();
    assert_eq!(groups.len(), 5);
    assert_eq!(recovered.end, ends[4]);
    assert!(recovered.dropped_bytes > 0);
}
