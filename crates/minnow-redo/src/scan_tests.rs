//! Tests of the read-only scan ([`crate::scan`]) against real log files.

use std::path::Path;
use std::sync::Arc;

use minnow_io::{Backend, FileIo, FlushMethod, OpenOptions, SyncBackend};
use minnow_page::PageId;

use crate::block::{BLOCK_SIZE, Lsn};
use crate::format::{Checkpoint, DATA_AREA, FileHeader, checkpoint_offset};
use crate::log::{FlushAtCommit, Log};
use crate::record::{Record, encode_group};
use crate::scan::{BlockState, LogScan, ScanError, ScanStop};

fn open(path: &Path, create: bool) -> Arc<dyn FileIo> {
    SyncBackend::new()
        .open(path, &OpenOptions::new(FlushMethod::Fsync).create(create))
        .unwrap()
}

fn group(n: u64) -> Vec<Record> {
    vec![Record::Write {
        page: PageId::new(1, n as u32),
        offset: 100,
        data: vec![n as u8; (n as usize * 53) % 900 + 1],
    }]
}

/// Writes `n` synced groups to a fresh 1 MiB log; returns each group's end.
fn write_log(path: &Path, n: u64) -> Vec<Lsn> {
    let log = Log::create(open(path, true), 1 << 20).unwrap();
    let mut ends = Vec::new();
    for i in 0..n {
        let (_, end) = log.append(&encode_group(&group(i))).unwrap();
        log.commit(end, FlushAtCommit::Sync).unwrap();
        ends.push(end);
    }
    log.shutdown().unwrap();
    ends
}

/// The header and the newest checkpoint, as a tool reads them.
fn header_and_checkpoint(file: &dyn FileIo) -> (FileHeader, Checkpoint) {
    let mut b = [0u8; BLOCK_SIZE];
    file.read_at(&mut b, 0).unwrap();
    let header = FileHeader::decode(&b).unwrap();
    let checkpoint = (0..2)
        .filter_map(|slot| {
            file.read_at(&mut b, checkpoint_offset(slot)).unwrap();
            Checkpoint::decode(&b)
        })
        .max_by_key(|c| c.no)
        .unwrap();
    (header, checkpoint)
}

#[test]
fn the_scan_finds_every_group_recovery_would_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("redo.log");
    let ends = write_log(&path, 60);
    let before = std::fs::read(&path).unwrap();

    let file = open(&path, false);
    let (header, checkpoint) = header_and_checkpoint(file.as_ref());
    let scan = LogScan::new(file.as_ref(), &header, checkpoint.lsn).unwrap();
    let end = scan.find_end().unwrap();
    assert!(
        matches!(end.stop, ScanStop::LastWritten { .. }),
        "{}",
        end.stop
    );
    assert!(end.damage.is_empty());
    assert_eq!(end.leftover_blocks, 0);
    let blocks: Vec<_> = scan
        .blocks(0..end.scanned_blocks)
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(blocks.len(), end.scanned_blocks);
    assert!(
        blocks
            .iter()
            .all(|b| matches!(b.state, BlockState::Valid(_)))
    );
    assert_eq!(blocks[0].lsn, checkpoint.lsn.block_start());

    let mut groups = scan.groups(&end);
    let got: Vec<_> = groups.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(got.len(), 60);
    for (i, g) in got.iter().enumerate() {
        assert_eq!(g.records, group(i as u64));
        assert_eq!(g.end, ends[i]);
    }
    assert_eq!(groups.end(), ends[59]);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the scan wrote nothing"
    );
}

#[test]
fn a_damaged_block_ends_the_log_and_later_blocks_prove_damage() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("redo.log");
    write_log(&path, 200);
    // Flip a byte in the 10th data block (the first is at 8192 bytes into the data area).
    let file = open(&path, false);
    let damaged = Lsn(8192 + 10 * BLOCK_SIZE as u64);
    let at = DATA_AREA + damaged.0 + 100;
    let mut b = [0u8; 1];
    file.read_at(&mut b, at).unwrap();
    b[0] ^= 0x10;
    file.write_at(&b, at).unwrap();

    let (header, checkpoint) = header_and_checkpoint(file.as_ref());
    let scan = LogScan::new(file.as_ref(), &header, checkpoint.lsn).unwrap();
    let end = scan.find_end().unwrap();
    assert_eq!(end.stop, ScanStop::BadChecksum { block: damaged });
    assert_eq!(
        end.stop.to_string(),
        format!("block at LSN {damaged} fails its CRC")
    );
    assert!(end.leftover_blocks > 0);
    assert!(!end.damage.is_empty(), "synced blocks after the damage");
    assert!(end.damage.iter().all(|d| d.durable > end.valid_end));
    // The groups stop before the damaged block; none is handed out half.
    let got: Vec<_> = scan.groups(&end).collect::<Result<_, _>>().unwrap();
    assert!(!got.is_empty());
    assert!(got.iter().all(|g| g.end <= end.valid_end));
}

#[test]
fn a_scan_past_any_real_log_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("redo.log");
    write_log(&path, 1);
    let file = open(&path, false);
    let (header, _) = header_and_checkpoint(file.as_ref());
    let err = LogScan::new(file.as_ref(), &header, Lsn(u64::MAX - 512))
        .err()
        .unwrap();
    assert!(matches!(err, ScanError::Implausible { .. }), "{err}");
}
