//! Lab 6: the doublewrite decision at recovery (docs/labs/06-doublewrite.md).
//!
//! Each case writes one batch through the doublewrite buffer (the copies land in the segment
//! file, then the pages in place), damages the data file or the copy by hand the way a crash
//! or a bad disk would, and runs [`recover`]. What it must decide, page by page: keep the data
//! page, write the copy back, leave the page for redo, or name it as unrepairable.

use std::collections::BTreeMap;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

use minnow_dblwr::{
    Action, CopyState, DataState, DblwrError, Doublewrite, DoublewriteConfig, DoublewriteMode,
    RecoveryReport, recover, segment_path,
};
use minnow_io::{AlignedBuf, Backend, FlushMethod, OpenOptions, SyncBackend, Tablespace};
use minnow_page::checksum::{self, ChecksumAlgorithm, ChecksumPolicy};
use minnow_page::fil::FilHeader;
use minnow_page::{PageId, PageSize, PageType};

const SIZE: PageSize = PageSize::K16;
const SPACE: u32 = 3;
const SPACE_PAGES: u32 = 12;
/// The batch: three pages in the middle of the file and its last page.
const PAGES: [u32; 4] = [1, 2, 3, 11];
const OLD_LSN: u64 = 100;
const NEW_LSN: u64 = 200;
const NEWER_LSN: u64 = 300;

fn id(page_no: u32) -> PageId {
    PageId::new(SPACE, page_no)
}

/// A page of `page_no` at `lsn` with a body that differs for every (page, lsn); not stamped.
fn make_page(page_no: u32, lsn: u64) -> AlignedBuf {
    let mut page = AlignedBuf::page(SIZE);
    let seed = u64::from(page_no) * 7919 + lsn;
    for (i, b) in page.iter_mut().enumerate() {
        *b = (seed.wrapping_mul(31).wrapping_add(i as u64 * 13) % 251) as u8;
    }
    let mut h = FilHeader::new(SPACE, page_no, PageType::Index);
    h.lsn = lsn;
    h.write(&mut page).unwrap();
    page
}

/// The page as it lies on disk: stamped with the tablespace's checksum.
fn stamped(page_no: u32, lsn: u64) -> AlignedBuf {
    let mut page = make_page(page_no, lsn);
    checksum::stamp(&mut page, ChecksumAlgorithm::Crc32).unwrap();
    page
}

/// A data directory with one tablespace whose `PAGES` were written at `NEW_LSN` through the
/// doublewrite buffer (mode on): the segment file holds valid copies, the pages are in place.
struct Lab {
    dir: tempfile::TempDir,
    backend: Arc<dyn Backend>,
    spaces: BTreeMap<u32, Arc<Tablespace>>,
}

impl Lab {
    fn new() -> Lab {
        let dir = tempfile::tempdir().unwrap();
        let backend: Arc<dyn Backend> = Arc::new(SyncBackend::new());
        let space = Tablespace::create(
            &*backend,
            &dir.path().join("s3.ibd"),
            SPACE,
            SIZE,
            ChecksumAlgorithm::Crc32,
            FlushMethod::Fsync,
            SPACE_PAGES,
        )
        .unwrap();
        let spaces = BTreeMap::from([(SPACE, Arc::new(space))]);
        let lab = Lab {
            dir,
            backend,
            spaces,
        };
        let config = DoublewriteConfig::new(DoublewriteMode::On, 1, SIZE)
            .pages_per_batch(8)
            .flush_method(FlushMethod::Fsync);
        let dblwr = Doublewrite::open(&*lab.backend, lab.dir.path(), config).unwrap();
        let pages: Vec<(PageId, AlignedBuf)> = PAGES
            .iter()
            .map(|&n| (id(n), make_page(n, NEW_LSN)))
            .collect();
        let refs: Vec<(PageId, &[u8])> = pages.iter().map(|(i, p)| (*i, &p[..])).collect();
        dblwr.flush_batch(0, &refs, &lab.spaces).unwrap();
        lab
    }

    fn data_file(&self) -> PathBuf {
        self.dir.path().join("s3.ibd")
    }

    /// Writes `bytes` over the data file at page `page_no` (a crash's or a disk's damage).
    fn damage_page(&mut self, page_no: u32, bytes: &[u8]) {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(self.data_file())
            .unwrap();
        f.write_all_at(bytes, u64::from(page_no) * SIZE.bytes() as u64)
            .unwrap();
        self.reopen();
    }

    /// Flips one byte in the middle of page `page_no`'s copy in the segment file.
    fn damage_copy(&self, page_no: u32) {
        let path = segment_path(self.dir.path(), 0);
        let mut seg = std::fs::read(&path).unwrap();
        let want = stamped(page_no, NEW_LSN);
        let at = (0..seg.len())
            .step_by(512)
            .find(|&at| seg.get(at..at + want.len()) == Some(&want[..]))
            .expect("the copy is in the segment file");
        seg[at + 5000] ^= 0x55;
        std::fs::write(&path, seg).unwrap();
    }

    /// Reopens the tablespace, as the process that recovers does.
    fn reopen(&mut self) {
        let opts = OpenOptions::new(FlushMethod::Fsync);
        let space = Tablespace::open_for_recovery(
            &*self.backend,
            &self.data_file(),
            &opts,
            ChecksumPolicy::default(),
        )
        .unwrap();
        self.spaces.insert(SPACE, Arc::new(space));
    }

    fn recover(&mut self, mode: DoublewriteMode) -> Result<RecoveryReport, DblwrError> {
        self.reopen();
        recover(&*self.backend, self.dir.path(), SIZE, &self.spaces, mode)
    }

    /// The data file's bytes of page `page_no` (zeros beyond its end).
    fn raw(&self, page_no: u32) -> Vec<u8> {
        let bytes = std::fs::read(self.data_file()).unwrap();
        let psz = SIZE.bytes();
        let at = page_no as usize * psz;
        bytes
            .get(at..at + psz)
            .map_or_else(|| vec![0; psz], <[u8]>::to_vec)
    }
}

fn action(report: &RecoveryReport, page_no: u32) -> Action {
    report
        .page(id(page_no))
        .expect("the page is reported")
        .action
}

#[test]
fn intact_pages_at_the_copys_lsn_are_kept() {
    let mut lab = Lab::new();
    let report = lab.recover(DoublewriteMode::On).unwrap();
    for n in PAGES {
        let p = report.page(id(n)).unwrap();
        assert_eq!(p.data, DataState::Intact { lsn: NEW_LSN }, "page {n}");
        assert!(
            matches!(p.copy, CopyState::Valid { lsn: NEW_LSN, .. }),
            "{n}: {:?}",
            p.copy
        );
        assert_eq!(p.action, Action::Kept, "page {n}");
    }
}

#[test]
fn a_torn_page_is_restored_from_its_valid_copy() {
    let mut lab = Lab::new();
    // The first 4 KiB of the old version over the new: a torn write.
    lab.damage_page(1, &stamped(1, OLD_LSN)[..4096]);
    let report = lab.recover(DoublewriteMode::On).unwrap();
    let p = report.page(id(1)).unwrap();
    assert!(matches!(p.data, DataState::Torn { .. }), "{:?}", p.data);
    assert_eq!(p.action, Action::Restored);
    assert!(
        lab.raw(1) == stamped(1, NEW_LSN)[..],
        "the copy is in place"
    );
    assert_eq!(
        action(&report, 2),
        Action::Kept,
        "other pages are left alone"
    );
}

#[test]
fn an_all_zero_page_is_restored() {
    let mut lab = Lab::new();
    lab.damage_page(2, &vec![0u8; SIZE.bytes()]);
    let report = lab.recover(DoublewriteMode::On).unwrap();
    assert_eq!(report.page(id(2)).unwrap().data, DataState::Empty);
    assert_eq!(action(&report, 2), Action::Restored);
    assert!(lab.raw(2) == stamped(2, NEW_LSN)[..]);
}

#[test]
fn a_missing_page_is_restored_and_the_file_extended() {
    let mut lab = Lab::new();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(lab.data_file())
        .unwrap();
    f.set_len(11 * SIZE.bytes() as u64).unwrap();
    let report = lab.recover(DoublewriteMode::On).unwrap();
    assert_eq!(report.page(id(11)).unwrap().data, DataState::Missing);
    assert_eq!(action(&report, 11), Action::Restored);
    assert!(lab.raw(11) == stamped(11, NEW_LSN)[..]);
}

#[test]
fn an_intact_page_older_than_its_copy_is_restored() {
    let mut lab = Lab::new();
    // The whole old page: the in-place write was lost, not torn.
    lab.damage_page(3, &stamped(3, OLD_LSN));
    let report = lab.recover(DoublewriteMode::On).unwrap();
    assert_eq!(
        report.page(id(3)).unwrap().data,
        DataState::Intact { lsn: OLD_LSN }
    );
    assert_eq!(action(&report, 3), Action::Restored);
    assert!(lab.raw(3) == stamped(3, NEW_LSN)[..]);
}

#[test]
fn a_page_newer_than_its_copy_is_kept() {
    let mut lab = Lab::new();
    // A later flush (without the doublewrite buffer, or whose batch header never completed)
    // wrote the page at a newer LSN: writing the copy back would roll it back in time.
    let newer = stamped(1, NEWER_LSN);
    lab.damage_page(1, &newer);
    let report = lab.recover(DoublewriteMode::On).unwrap();
    assert_eq!(
        report.page(id(1)).unwrap().data,
        DataState::Intact { lsn: NEWER_LSN }
    );
    assert_eq!(action(&report, 1), Action::Kept);
    assert!(lab.raw(1) == newer[..], "the newer page stays");
}

#[test]
fn a_damaged_copy_is_reported_and_the_intact_page_kept() {
    let mut lab = Lab::new();
    lab.damage_copy(2);
    let report = lab.recover(DoublewriteMode::On).unwrap();
    let p = report.page(id(2)).unwrap();
    assert!(
        matches!(p.copy, CopyState::Invalid { segment: 0, .. }),
        "{:?}",
        p.copy
    );
    assert_eq!(p.action, Action::Kept);
    assert!(lab.raw(2) == stamped(2, NEW_LSN)[..]);
}

#[test]
fn an_old_page_without_a_usable_copy_is_left_for_redo() {
    let mut lab = Lab::new();
    lab.damage_copy(3);
    let old = stamped(3, OLD_LSN);
    lab.damage_page(3, &old);
    let report = lab.recover(DoublewriteMode::On).unwrap();
    assert_eq!(action(&report, 3), Action::LeftForRedo);
    assert!(lab.raw(3) == old[..], "nothing was written over it");
}

#[test]
fn a_torn_page_whose_copy_is_torn_too_is_a_typed_error_naming_it() {
    let mut lab = Lab::new();
    lab.damage_copy(1);
    let torn = stamped(1, OLD_LSN);
    lab.damage_page(1, &torn[..4096]);
    let before = lab.raw(1);
    match lab.recover(DoublewriteMode::On) {
        Err(DblwrError::TornPages { pages, mode }) => {
            assert_eq!((pages, mode), (vec![id(1)], DoublewriteMode::On));
        }
        other => panic!("expected TornPages naming page 3:1, got {other:?}"),
    }
    assert!(lab.raw(1) == before, "a damaged copy is never written");
}

#[test]
fn detect_only_names_a_torn_page_and_writes_nothing() {
    let mut lab = Lab::new();
    lab.damage_page(2, &stamped(2, OLD_LSN)[..4096]);
    let before = lab.raw(2);
    match lab.recover(DoublewriteMode::DetectOnly) {
        Err(DblwrError::TornPages { pages, mode }) => {
            assert_eq!((pages, mode), (vec![id(2)], DoublewriteMode::DetectOnly));
        }
        other => panic!("expected TornPages naming page 3:2, got {other:?}"),
    }
    assert!(lab.raw(2) == before, "detect_only writes nothing");
}
