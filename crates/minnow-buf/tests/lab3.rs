//! Lab 3 (redo recovery), the apply half: each change is applied to its page only if the
//! page's LSN is below the change's end. The log's half is graded in
//! crates/minnow-redo/tests/lab3.rs; docs/labs/03-redo-recovery.md is the handout.
//!
//! One history is recorded once per test: pages 1 and 2 created and flushed (the files and the
//! log's checkpoint are saved: `data0`, `head0`), then three mini-transactions, each writing
//! its number to both pages, with a flush after the first (`data_mid`) and after the last
//! (`data1`). Recovery then runs on a chosen data file with the log's records of all three
//! changes and the early checkpoint, so which changes apply is decided by the page LSNs alone.

use std::path::Path;
use std::sync::Arc;

use minnow_buf::{BufConfig, BufferPool, DirectWriter, PageWriter, RecoveryReport, SpaceMap};
use minnow_io::{Backend, FlushMethod, OpenOptions, SyncBackend, Tablespace};
use minnow_page::checksum::{ChecksumAlgorithm, ChecksumPolicy};
use minnow_page::{PageId, PageSize};
use minnow_redo::format::DATA_AREA;
use minnow_redo::{FlushAtCommit, Log};

const VALUE_AT: usize = 200;

struct History {
    /// The data file after the pages were created and flushed.
    data0: Vec<u8>,
    /// After the first change was flushed.
    data_mid: Vec<u8>,
    /// After all three were flushed.
    data1: Vec<u8>,
    /// The log: the early checkpoint, and the records of all three changes.
    log: Vec<u8>,
}

fn cfg() -> BufConfig {
    BufConfig {
        page_cleaners: 0,
        read_ahead_threshold: 0,
        ..BufConfig::with_frames(32, PageSize::K4)
    }
}

fn pid(n: u32) -> PageId {
    PageId::new(1, n)
}

fn history() -> History {
    let backend = SyncBackend::new();
    let dir = tempfile::tempdir().unwrap();
    let (data, redo) = (dir.path().join("t1.ibd"), dir.path().join("redo"));
    let space = Tablespace::create(
        &backend,
        &data,
        1,
        PageSize::K4,
        ChecksumAlgorithm::Crc32,
        FlushMethod::Fsync,
        8,
    )
    .unwrap();
    let spaces = Arc::new(SpaceMap::new());
    spaces.insert(Arc::new(space));
    let file = backend
        .open(&redo, &OpenOptions::new(FlushMethod::Fsync).create(true))
        .unwrap();
    let log = Arc::new(Log::create(file, 4 << 20).unwrap());
    let pool = BufferPool::open(cfg(), spaces, log, Arc::new(DirectWriter)).unwrap();
    let change = |k: u32| {
        let mut m = pool.mtr().unwrap();
        for no in [1, 2] {
            let h = if k == 0 {
                m.new_page(pid(no)).unwrap()
            } else {
                m.get_write(pid(no)).unwrap()
            };
            m.write(h, VALUE_AT, &k.to_be_bytes()).unwrap();
        }
        let end = m.commit().unwrap();
        pool.commit_durable(end, FlushAtCommit::Sync).unwrap();
    };
    change(0);
    pool.flush_all().unwrap();
    let data0 = std::fs::read(&data).unwrap();
    let head0 = std::fs::read(&redo).unwrap();
    change(1);
    pool.flush_all().unwrap();
    let data_mid = std::fs::read(&data).unwrap();
    change(2);
    change(3);
    let mut log = std::fs::read(&redo).unwrap();
    pool.flush_all().unwrap();
    let data1 = std::fs::read(&data).unwrap();
    drop(pool);
    // The early checkpoint with every record written since: recovery replays all three.
    let area = DATA_AREA as usize;
    log[..area].copy_from_slice(&head0[..area]);
    History {
        data0,
        data_mid,
        data1,
        log,
    }
}

/// Recovers `data` with `log` in a new directory; returns the values of pages 1 and 2 and
/// the report.
fn recover(data: &[u8], log: &[u8]) -> ([u32; 2], RecoveryReport) {
    let backend = SyncBackend::new();
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "t1.ibd", data);
    write(dir.path(), "redo", log);
    let opts = OpenOptions::new(FlushMethod::Fsync);
    let space = Tablespace::open_for_recovery(
        &backend,
        &dir.path().join("t1.ibd"),
        &opts,
        ChecksumPolicy::default(),
    )
    .unwrap();
    let spaces = Arc::new(SpaceMap::new());
    spaces.insert(Arc::new(space));
    let log_file = backend.open(&dir.path().join("redo"), &opts).unwrap();
    let (pool, _log, report) = BufferPool::recover(
        cfg(),
        spaces,
        None,
        || Ok(Arc::new(DirectWriter) as Arc<dyn PageWriter>),
        log_file,
    )
    .unwrap();
    let value = |no: u32| {
        let g = pool.get_read(pid(no)).unwrap();
        u32::from_be_bytes(g[VALUE_AT..VALUE_AT + 4].try_into().unwrap())
    };
    ([value(1), value(2)], report)
}

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::write(dir.join(name), bytes).unwrap();
}

#[test]
fn every_change_applies_to_pages_older_than_all_of_them() {
    let h = history();
    let (values, report) = recover(&h.data0, &h.log);
    assert_eq!(values, [3, 3]);
    assert_eq!(
        (report.pages_applied, report.pages_skipped),
        (6, 0),
        "{report:?}"
    );
}

#[test]
fn a_page_at_the_changes_lsn_skips_it() {
    let h = history();
    let (values, report) = recover(&h.data1, &h.log);
    assert_eq!(values, [3, 3]);
    assert_eq!(
        (report.pages_applied, report.pages_skipped),
        (0, 6),
        "{report:?}"
    );
}

#[test]
fn a_page_between_changes_gets_only_the_later_ones() {
    let h = history();
    let (values, report) = recover(&h.data_mid, &h.log);
    assert_eq!(values, [3, 3]);
    assert_eq!(
        (report.pages_applied, report.pages_skipped),
        (4, 2),
        "{report:?}"
    );
}

#[test]
fn recovering_twice_changes_nothing_the_second_time() {
    let h = history();
    let (first, _) = recover(&h.data0, &h.log);
    let (second, report) = recover(&h.data1, &h.log);
    assert_eq!(first, second);
    assert_eq!(report.pages_applied, 0);
}
