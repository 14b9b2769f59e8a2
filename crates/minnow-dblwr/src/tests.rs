//! The doublewrite buffer's tests: round trips, typed errors, and the crash campaigns that show
//! why the buffer exists (mode off tears pages; mode on never leaves one torn).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use minnow_io::{AlignedBuf, Backend, CrashSim, FlushMethod, OpenOptions, SyncBackend, Tablespace};
use minnow_page::checksum::{self, ChecksumAlgorithm, ChecksumPolicy, Verdict};
use minnow_page::fil::FilHeader;
use minnow_page::{PageId, PageSize, PageType};

use crate::format::{self, SegmentHeader};
use crate::*;

const SIZE: PageSize = PageSize::K16;
/// Two tablespaces, one per checksum family.
const SPACES: [(u32, ChecksumAlgorithm); 2] = [
    (3, ChecksumAlgorithm::Crc32),
    (4, ChecksumAlgorithm::FullCrc32),
];
const SPACE_PAGES: u32 = 12;
/// The pages of the batch every crash test writes: both spaces, out of order.
const BATCH: [(u32, u32); 8] = [
    (3, 5),
    (4, 1),
    (3, 1),
    (4, 7),
    (3, 2),
    (4, 3),
    (3, 9),
    (4, 4),
];
const OLD_LSN: u64 = 100;
const NEW_LSN: u64 = 200;

/// A page of `id` at `lsn`, with a body that differs for every (page, lsn). Not stamped.
fn make_page(id: PageId, lsn: u64) -> AlignedBuf {
    let mut page = AlignedBuf::page(SIZE);
    let seed = u64::from(id.space) * 1_000_003 + u64::from(id.page_no) * 7919 + lsn;
    for (i, b) in page.iter_mut().enumerate() {
        *b = (seed.wrapping_mul(31).wrapping_add(i as u64 * 13) % 251) as u8;
    }
    let mut h = FilHeader::new(id.space, id.page_no, PageType::Index);
    h.lsn = lsn;
    h.write(&mut page).unwrap();
    page
}

/// `make_page`, stamped as it must appear on disk.
fn stamped(id: PageId, lsn: u64) -> AlignedBuf {
    let mut page = make_page(id, lsn);
    checksum::stamp(&mut page, algorithm_of(id.space)).unwrap();
    page
}

fn algorithm_of(space: u32) -> ChecksumAlgorithm {
    SPACES
        .iter()
        .find(|(id, _)| *id == space)
        .map(|(_, a)| *a)
        .unwrap()
}

fn batch_ids() -> Vec<PageId> {
    BATCH.iter().map(|&(s, p)| PageId::new(s, p)).collect()
}

/// A data directory with the two tablespaces, on `backend`.
struct Fixture {
    dir: tempfile::TempDir,
    backend: Arc<dyn Backend>,
    method: FlushMethod,
    spaces: BTreeMap<u32, Arc<Tablespace>>,
}

impl Fixture {
    fn new(backend: Arc<dyn Backend>, method: FlushMethod) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let mut spaces = BTreeMap::new();
        for (id, algorithm) in SPACES {
            let path = space_path(dir.path(), id);
            let space =
                Tablespace::create(&*backend, &path, id, SIZE, algorithm, method, SPACE_PAGES)
                    .unwrap();
            spaces.insert(id, Arc::new(space));
        }
        Fixture {
            dir,
            backend,
            method,
            spaces,
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn open(&self, mode: DoublewriteMode, segments: usize, pages: usize) -> Doublewrite {
        let config = DoublewriteConfig::new(mode, segments, SIZE)
            .pages_per_batch(pages)
            .flush_method(self.method);
        Doublewrite::open(&*self.backend, self.path(), config).unwrap()
    }

    /// Reopens the tablespaces, as a restarted process does.
    fn reopen(&mut self) {
        for (id, _) in SPACES {
            let opts = OpenOptions::new(self.method);
            let space = Tablespace::open_for_recovery(
                &*self.backend,
                &space_path(self.path(), id),
                &opts,
                ChecksumPolicy::default(),
            )
            .unwrap();
            self.spaces.insert(id, Arc::new(space));
        }
    }

    /// The raw bytes of a data page (zeros beyond the end of the file).
    fn raw(&self, id: PageId) -> AlignedBuf {
        let space = &self.spaces[&id.space];
        let mut buf = AlignedBuf::page(SIZE);
        if id.page_no < space.size_in_pages() {
            space.read_page_unverified(id.page_no, &mut buf).unwrap();
        }
        buf
    }

    /// True when the data page passes its tablespace's verification.
    fn verifies(&self, id: PageId) -> bool {
        let space = &self.spaces[&id.space];
        let mut buf = AlignedBuf::page(SIZE);
        matches!(space.read_page(id.page_no, &mut buf), Ok(Verdict::Valid(_)))
    }

    fn recover(&self, mode: DoublewriteMode) -> Result<RecoveryReport, DblwrError> {
        recover(&*self.backend, self.path(), SIZE, &self.spaces, mode)
    }
}

fn space_path(dir: &Path, id: u32) -> PathBuf {
    dir.join(format!("s{id}.ibd"))
}

/// Flushes `ids` at `lsn` through `segment`.
fn flush(
    dblwr: &Doublewrite,
    fx: &Fixture,
    segment: usize,
    ids: &[PageId],
    lsn: u64,
) -> Result<(), DblwrError> {
    let pages: Vec<(PageId, AlignedBuf)> = ids.iter().map(|&id| (id, make_page(id, lsn))).collect();
    let refs: Vec<(PageId, &[u8])> = pages.iter().map(|(id, p)| (*id, &p[..])).collect();
    dblwr.flush_batch(segment, &refs, &fx.spaces)
}

#[test]
fn a_batch_lands_in_place_and_its_segment_decodes() {
    let fx = Fixture::new(Arc::new(SyncBackend::new()), FlushMethod::ODirect);
    let dblwr = fx.open(DoublewriteMode::On, 2, 16);
    let ids = batch_ids();
    flush(&dblwr, &fx, 1, &ids, NEW_LSN).unwrap();

    for &id in &ids {
        assert!(fx.verifies(id), "{id}");
        assert!(
            fx.raw(id) == stamped(id, NEW_LSN),
            "{id}: in place = stamped input"
        );
    }
    let bytes = std::fs::read(segment_path(fx.path(), 1)).unwrap();
    assert_eq!(bytes.len() as u64, format::file_len(SIZE, 16, true));
    let header = SegmentHeader::decode(&bytes).unwrap();
    assert_eq!(
        (
            header.segment,
            header.sequence,
            header.capacity,
            header.copies
        ),
        (1, 1, 16, true)
    );
    let recorded: Vec<PageId> = header.entries.iter().map(|e| e.page).collect();
    assert_eq!(recorded, ids, "slots in the caller's order");
    assert!(header.entries.iter().all(|e| e.lsn == NEW_LSN));
    for (e, &id) in header.entries.iter().zip(&ids) {
        let crc = minnow_page::crc::crc32c(&stamped(id, NEW_LSN));
        assert_eq!(
            e.crc, crc,
            "{id}: the slot checksum covers the whole page as written"
        );
    }
    for (slot, &id) in ids.iter().enumerate() {
        let at = format::slot_offset(SIZE, 16, slot) as usize;
        assert!(
            bytes[at..at + SIZE.bytes()] == fx.raw(id)[..],
            "slot {slot}: the copy and the in-place page are the same bytes"
        );
    }
    // Segment 0 was never used: an empty header.
    let zero = std::fs::read(segment_path(fx.path(), 0)).unwrap();
    let h0 = SegmentHeader::decode(&zero).unwrap();
    assert_eq!((h0.sequence, h0.entries.len()), (0, 0));

    let s = dblwr.stats().snapshot();
    let psz = SIZE.bytes() as u64;
    assert_eq!(
        s,
        StatsSnapshot {
            batches: 1,
            dblwr_pages: 8,
            in_place_pages: 8,
            syncs: 3,
            dblwr_bytes: psz + 8 * psz,
            in_place_bytes: 8 * psz,
        }
    );

    // A clean state: recovery finds every page already good and writes nothing.
    let report = fx.recover(DoublewriteMode::On).unwrap();
    assert_eq!(report.pages.len(), 8);
    assert!(
        report.pages.iter().all(|p| p.action == Action::Kept),
        "{report:?}"
    );
    assert!(matches!(
        report.segments[1].state,
        SegmentState::Batch {
            sequence: 1,
            pages: 8,
            copies: true
        }
    ));

    // Reopening keeps the files and continues the sequence.
    drop(dblwr);
    let dblwr = fx.open(DoublewriteMode::On, 2, 16);
    flush(&dblwr, &fx, 1, &ids[..2], NEW_LSN + 1).unwrap();
    let header =
        SegmentHeader::decode(&std::fs::read(segment_path(fx.path(), 1)).unwrap()).unwrap();
    assert_eq!((header.sequence, header.entries.len()), (2, 2));
}

#[test]
fn large_slices_run_as_several_batches_and_segments_run_in_parallel() {
    let fx = Fixture::new(Arc::new(SyncBackend::new()), FlushMethod::Fsync);
    let dblwr = fx.open(DoublewriteMode::On, 2, 4);
    let all: Vec<PageId> = (1..SPACE_PAGES)
        .flat_map(|n| [PageId::new(3, n), PageId::new(4, n)])
        .collect();
    let (a, b) = all.split_at(10);
    std::thread::scope(|s| {
        s.spawn(|| flush(&dblwr, &fx, 0, a, NEW_LSN).unwrap());
        s.spawn(|| flush(&dblwr, &fx, 1, b, NEW_LSN).unwrap());
    });
    for &id in &all {
        assert!(fx.raw(id) == stamped(id, NEW_LSN), "{id}");
    }
    let s = dblwr.stats().snapshot();
    assert_eq!(s.batches, 3 + 3, "10 and 12 pages in batches of 4");
    assert_eq!((s.in_place_pages, s.dblwr_pages), (22, 22));
    assert_eq!(dblwr.segment_for(5), 1);
}

#[test]
fn detect_only_writes_entries_and_off_writes_no_file() {
    let fx = Fixture::new(Arc::new(SyncBackend::new()), FlushMethod::Fsync);
    let dblwr = fx.open(DoublewriteMode::DetectOnly, 1, 8);
    let ids = batch_ids();
    flush(&dblwr, &fx, 0, &ids, NEW_LSN).unwrap();
    let bytes = std::fs::read(segment_path(fx.path(), 0)).unwrap();
    assert_eq!(bytes.len(), SIZE.bytes(), "the header block only");
    let header = SegmentHeader::decode(&bytes).unwrap();
    assert!(!header.copies);
    assert_eq!(header.entries.len(), 8);
    let s = dblwr.stats().snapshot();
    assert_eq!(
        (s.dblwr_pages, s.in_place_pages, s.dblwr_bytes),
        (0, 8, SIZE.bytes() as u64)
    );
    let report = fx.recover(DoublewriteMode::DetectOnly).unwrap();
    assert!(
        report
            .pages
            .iter()
            .all(|p| p.copy == CopyState::Absent && p.action == Action::Kept)
    );

    let fx = Fixture::new(Arc::new(SyncBackend::new()), FlushMethod::Fsync);
    let dblwr = fx.open(DoublewriteMode::Off, 3, 8);
    flush(&dblwr, &fx, 2, &ids, NEW_LSN).unwrap();
    assert!(!segment_path(fx.path(), 0).exists());
    for &id in &ids {
        assert!(fx.raw(id) == stamped(id, NEW_LSN), "{id}");
    }
    let s = dblwr.stats().snapshot();
    assert_eq!(
        (s.dblwr_pages, s.dblwr_bytes, s.in_place_pages, s.syncs),
        (0, 0, 8, 2)
    );
    let t = dblwr.stats().phase_times();
    assert_eq!(
        (t.batches, t.segment_write_ns, t.segment_sync_ns),
        (1, 0, 0)
    );
    assert!(t.in_place_write_ns > 0 && t.data_sync_ns > 0, "{t}");
}

#[test]
fn phase_times_add_up_and_segment_files_are_written_in_full() {
    let fx = Fixture::new(Arc::new(SyncBackend::new()), FlushMethod::Fsync);
    let dblwr = fx.open(DoublewriteMode::On, 1, 8);
    // Created files hold real bytes (header and zeroed slots), not just preallocated extents.
    let bytes = std::fs::read(segment_path(fx.path(), 0)).unwrap();
    assert_eq!(bytes.len(), format::file_len(SIZE, 8, true) as usize);
    assert!(bytes[SIZE.bytes()..].iter().all(|&b| b == 0));
    assert_eq!(dblwr.stats().phase_times(), PhaseTimes::default());

    let ids = batch_ids();
    flush(&dblwr, &fx, 0, &ids, NEW_LSN).unwrap();
    let first = dblwr.stats().phase_times();
    flush(&dblwr, &fx, 0, &ids, NEW_LSN + 1).unwrap();
    let t = dblwr.stats().phase_times();
    assert_eq!(t.batches, 2);
    for (phase, ns) in [
        ("prepare", t.prepare_ns),
        ("segment write", t.segment_write_ns),
        ("segment sync", t.segment_sync_ns),
        ("in place", t.in_place_write_ns),
        ("data sync", t.data_sync_ns),
    ] {
        assert!(ns > 0, "{phase}: {t}");
    }
    let phases = t.prepare_ns
        + t.segment_write_ns
        + t.segment_sync_ns
        + t.in_place_write_ns
        + t.data_sync_ns;
    assert_eq!(t.other_ns(), t.batch_ns - phases);
    let second = t.since(&first);
    assert_eq!(second.batches, 1);
    assert_eq!(second.batch_ns, t.batch_ns - first.batch_ns);
    let mean = t.per_batch();
    assert_eq!((mean.batches, mean.batch_ns), (2, t.batch_ns / 2));
    assert!(t.to_string().contains("(2 batches)"), "{t}");
    assert_eq!(PhaseTimes::default().per_batch(), PhaseTimes::default());
}

#[test]
fn huge_pages_off_gives_the_same_bytes() {
    let fx = Fixture::new(Arc::new(SyncBackend::new()), FlushMethod::ODirect);
    let config = DoublewriteConfig::new(DoublewriteMode::On, 1, SIZE)
        .pages_per_batch(8)
        .flush_method(FlushMethod::ODirect)
        .huge_pages(false);
    assert!(!config.huge_pages && DoublewriteConfig::default().huge_pages);
    let dblwr = Doublewrite::open(&*fx.backend, fx.path(), config).unwrap();
    let ids = batch_ids();
    flush(&dblwr, &fx, 0, &ids, NEW_LSN).unwrap();
    for &id in &ids {
        assert!(fx.raw(id) == stamped(id, NEW_LSN), "{id}");
    }
    let report = fx.recover(DoublewriteMode::On).unwrap();
    assert_eq!(report.restored().count(), 0);
}

#[test]
fn bad_batches_are_typed_errors_before_any_io() {
    let fx = Fixture::new(Arc::new(SyncBackend::new()), FlushMethod::Fsync);
    let dblwr = fx.open(DoublewriteMode::On, 1, 8);
    let id = PageId::new(3, 1);
    let page = make_page(id, NEW_LSN);
    let run = |pages: &[(PageId, &[u8])]| dblwr.flush_batch(0, pages, &fx.spaces).unwrap_err();

    let e = dblwr
        .flush_batch(1, &[(id, &page[..])], &fx.spaces)
        .unwrap_err();
    assert!(
        matches!(
            e,
            DblwrError::NoSuchSegment {
                segment: 1,
                segments: 1
            }
        ),
        "{e}"
    );
    let e = run(&[(id, &page[..100])]);
    assert!(matches!(e, DblwrError::PageSize { actual: 100, .. }), "{e}");
    let e = run(&[(PageId::new(3, 2), &page[..])]);
    assert!(
        matches!(e, DblwrError::Misdirected { stored, .. } if stored == id),
        "{e}"
    );
    let e = run(&[(id, &page[..]), (id, &page[..])]);
    assert!(
        matches!(e, DblwrError::DuplicatePage { page } if page == id),
        "{e}"
    );
    let stranger = PageId::new(99, 1);
    let e = run(&[(stranger, &make_page(stranger, 1)[..])]);
    assert!(
        matches!(e, DblwrError::UnknownSpace { page } if page == stranger),
        "{e}"
    );
    assert!(e.to_string().contains("tablespace 99"), "{e}");
    let far = PageId::new(4, SPACE_PAGES);
    let e = run(&[(far, &make_page(far, 1)[..])]);
    assert!(
        matches!(
            e,
            DblwrError::PageOutOfRange {
                size_in_pages: SPACE_PAGES,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(
        dblwr.stats().snapshot(),
        StatsSnapshot::default(),
        "no IO at all"
    );
    dblwr.flush_batch(0, &[], &fx.spaces).unwrap();

    let zero = DoublewriteConfig::new(DoublewriteMode::On, 0, SIZE);
    assert!(matches!(zero.validate(), Err(DblwrError::Config { .. })));
    let huge = DoublewriteConfig::default().pages_per_batch(format::MAX_CAPACITY + 1);
    assert!(matches!(huge.validate(), Err(DblwrError::Config { .. })));
}

#[test]
fn a_failure_after_the_segment_sync_poisons_the_segment() {
    let sim = Arc::new(CrashSim::new(Arc::new(SyncBackend::new())));
    let fx = Fixture::new(sim.clone(), FlushMethod::Fsync);
    let dblwr = fx.open(DoublewriteMode::On, 2, 8);
    let ids = batch_ids();
    // Segment write and sync go through; the device dies at the third in-place write.
    sim.arm(4);
    assert!(flush(&dblwr, &fx, 0, &ids, NEW_LSN).is_err());
    assert!(dblwr.is_poisoned(0) && !dblwr.is_poisoned(1));
    sim.power_cut(7).unwrap();
    let e = flush(&dblwr, &fx, 0, &ids, NEW_LSN).unwrap_err();
    assert!(matches!(e, DblwrError::Poisoned { segment: 0, .. }), "{e}");
    assert!(e.to_string().contains("dblwr.0"), "{e}");

    // A failure before the segment sync does not poison: the data files were not touched.
    let sim = Arc::new(CrashSim::new(Arc::new(SyncBackend::new())));
    let fx = Fixture::new(sim.clone(), FlushMethod::Fsync);
    let dblwr = fx.open(DoublewriteMode::On, 1, 8);
    sim.fail_next_sync();
    assert!(flush(&dblwr, &fx, 0, &ids, NEW_LSN).is_err());
    assert!(!dblwr.is_poisoned(0));
    flush(&dblwr, &fx, 0, &ids, NEW_LSN).unwrap();
}

#[test]
fn recovery_restores_torn_zero_missing_and_old_pages() {
    let sim = Arc::new(CrashSim::new(Arc::new(SyncBackend::new())));
    let mut fx = Fixture::new(sim.clone(), FlushMethod::Fsync);
    // Page 11 of space 4 is the last page: it will go missing when the file is cut short.
    let ids = [
        PageId::new(3, 1),  // torn by hand
        PageId::new(3, 2),  // zeroed by hand
        PageId::new(3, 3),  // old
        PageId::new(3, 4),  // already new
        PageId::new(4, 11), // missing
    ];
    flush(&fx.open(DoublewriteMode::On, 1, 8), &fx, 0, &ids, OLD_LSN).unwrap();
    let dblwr = fx.open(DoublewriteMode::On, 1, 8);
    // Die right after the segment sync: the copies are durable, nothing went in place.
    sim.arm(2);
    assert!(flush(&dblwr, &fx, 0, &ids, NEW_LSN).is_err());
    sim.power_cut(1).unwrap();
    drop(dblwr);

    let psz = SIZE.bytes() as u64;
    let dir = fx.path().to_path_buf();
    let file = |id: u32| {
        std::fs::OpenOptions::new()
            .write(true)
            .open(space_path(&dir, id))
            .unwrap()
    };
    use std::os::unix::fs::FileExt;
    let torn = stamped(ids[0], NEW_LSN);
    file(3).write_all_at(&torn[..4096], psz).unwrap();
    file(3)
        .write_all_at(&vec![0u8; SIZE.bytes()], 2 * psz)
        .unwrap();
    file(3)
        .write_all_at(&stamped(ids[3], NEW_LSN), 4 * psz)
        .unwrap();
    file(4).set_len(11 * psz).unwrap();
    fx.reopen();
    assert!(!fx.verifies(ids[0]));

    let report = fx.recover(DoublewriteMode::On).unwrap();
    let data: Vec<DataState> = ids
        .iter()
        .map(|&id| report.page(id).unwrap().data.clone())
        .collect();
    assert!(matches!(data[0], DataState::Torn { .. }), "{data:?}");
    assert_eq!(data[1], DataState::Empty);
    assert_eq!(data[2], DataState::Intact { lsn: OLD_LSN });
    assert_eq!(data[3], DataState::Intact { lsn: NEW_LSN });
    assert_eq!(data[4], DataState::Missing);
    let actions: Vec<Action> = ids
        .iter()
        .map(|&id| report.page(id).unwrap().action)
        .collect();
    use Action::*;
    assert_eq!(actions, [Restored, Restored, Restored, Kept, Restored]);
    fx.reopen();
    for &id in &ids {
        assert!(fx.verifies(id), "{id}");
        assert!(fx.raw(id) == stamped(id, NEW_LSN), "{id}");
    }
    assert_eq!(fx.spaces[&4].size_in_pages(), SPACE_PAGES, "extended back");

    // The same kind of damage under detect_only is named, not repaired: an old first 4 KiB.
    file(3)
        .write_all_at(&stamped(ids[0], OLD_LSN)[..4096], psz)
        .unwrap();
    fx.reopen();
    match fx.recover(DoublewriteMode::DetectOnly) {
        Err(DblwrError::TornPages { pages, mode }) => {
            assert_eq!((pages, mode), (vec![ids[0]], DoublewriteMode::DetectOnly));
        }
        other => panic!("expected TornPages, got {other:?}"),
    }
    assert!(!fx.verifies(ids[0]), "detect_only writes nothing");
}

#[test]
fn pages_of_unknown_spaces_are_skipped_and_reported() {
    let fx = Fixture::new(Arc::new(SyncBackend::new()), FlushMethod::Fsync);
    flush(
        &fx.open(DoublewriteMode::On, 1, 8),
        &fx,
        0,
        &batch_ids(),
        NEW_LSN,
    )
    .unwrap();
    let only3: BTreeMap<u32, Arc<Tablespace>> = fx
        .spaces
        .range(3..4)
        .map(|(k, v)| (*k, v.clone()))
        .collect();
    let report = recover(&*fx.backend, fx.path(), SIZE, &only3, DoublewriteMode::On).unwrap();
    for p in &report.pages {
        let expected = if p.page.space == 4 {
            Action::UnknownSpace
        } else {
            Action::Kept
        };
        assert_eq!(p.action, expected, "{p:?}");
    }
    // A segment of another page size is an error, not something to skip.
    let e = recover(
        &*fx.backend,
        fx.path(),
        PageSize::K8,
        &fx.spaces,
        DoublewriteMode::On,
    )
    .unwrap_err();
    assert!(
        matches!(e, DblwrError::BadSegment { segment: 0, .. }),
        "{e}"
    );
}

// ---------------------------------------------------------------------------------------------
// Crash campaigns: the pair of tests that shows why the doublewrite buffer exists.
// ---------------------------------------------------------------------------------------------

/// Seeds to run: `MINNOW_CRASH_SEEDS` (default 200) from `MINNOW_CRASH_SEED_START` (default 0).
fn seeds() -> std::ops::Range<u64> {
    minnow_io::campaign_seeds(200)
}

/// SplitMix64, to derive a crash point from a seed.
fn mix(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The tablespaces on a crash simulator over the sync backend, opened with `fsync` for even
/// seeds and `O_DIRECT` for odd ones.
fn crash_fixture(seed: u64) -> (Arc<CrashSim>, Fixture) {
    let sim = Arc::new(CrashSim::new(Arc::new(SyncBackend::new())));
    let method = if seed.is_multiple_of(2) {
        FlushMethod::Fsync
    } else {
        FlushMethod::ODirect
    };
    let fx = Fixture::new(sim.clone(), method);
    (sim, fx)
}

/// One crash: the batch is first written completely at OLD_LSN, then again at NEW_LSN with the
/// device dying after a seed-chosen number of writes and syncs; then the power is cut (the
/// seed chooses which unsynced writes survive, whole or torn) and the tablespaces reopened.
fn crash(mode: DoublewriteMode, seed: u64) -> (Fixture, String) {
    let (sim, mut fx) = crash_fixture(seed);
    let dblwr = fx.open(mode, 2, BATCH.len());
    let segment = (seed / 2 % 2) as usize;
    let ids = batch_ids();
    flush(&dblwr, &fx, segment, &ids, OLD_LSN).unwrap();

    // Writes and syncs of one batch: segment write + sync (not in mode off), 8 in-place
    // writes, one sync per tablespace. A crash point past them lets the batch complete.
    let ops = if mode.uses_files() { 2 } else { 0 } + BATCH.len() as u64 + 2;
    let die_after = mix(seed) % (ops + 2);
    sim.arm(die_after);
    let result = flush(&dblwr, &fx, segment, &ids, NEW_LSN);
    let report = sim.power_cut(seed).unwrap();
    drop(dblwr);
    fx.reopen();
    let context = format!("seed {seed}, die after {die_after} ops ({result:?}): {report}");
    (fx, context)
}

/// What a data page holds after the crash.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Old,
    New,
    Torn,
}

fn look(fx: &Fixture, id: PageId, context: &str) -> Seen {
    if !fx.verifies(id) {
        return Seen::Torn;
    }
    let raw = fx.raw(id);
    if raw == stamped(id, OLD_LSN) {
        Seen::Old
    } else if raw == stamped(id, NEW_LSN) {
        Seen::New
    } else {
        panic!("{context}: page {id} verifies but is neither the old nor the new page")
    }
}

#[test]
fn with_doublewrite_off_a_crash_tears_pages() {
    let mut torn_seeds = 0;
    for seed in seeds() {
        let (fx, context) = crash(DoublewriteMode::Off, seed);
        let torn = batch_ids()
            .into_iter()
            .filter(|&id| look(&fx, id, &context) == Seen::Torn)
            .count();
        torn_seeds += usize::from(torn > 0);
    }
    // Nothing can repair these pages, and redo cannot replay onto them.
    eprintln!(
        "doublewrite off: {torn_seeds} of {} crashes left torn pages",
        seeds().count()
    );
    assert!(
        torn_seeds > 0,
        "no seed tore a page: the campaign proves nothing"
    );
}

#[test]
fn with_doublewrite_on_no_page_is_ever_torn_after_recovery() {
    let (mut repaired, mut runs) = (0, 0);
    for seed in seeds() {
        let (fx, context) = crash(DoublewriteMode::On, seed);
        let report = fx
            .recover(DoublewriteMode::On)
            .unwrap_or_else(|e| panic!("{context}: recovery failed: {e}"));
        for id in batch_ids() {
            let seen = look(&fx, id, &context);
            assert_ne!(
                seen,
                Seen::Torn,
                "{context}: page {id} torn after recovery: {report:?}"
            );
        }
        repaired += report
            .restored()
            .filter(|p| matches!(p.data, DataState::Torn { .. }))
            .count();
        runs += 1;
    }
    eprintln!("doublewrite on: {repaired} torn pages repaired in {runs} crashes, none left torn");
    assert!(
        repaired > 0 || runs < 20,
        "no seed produced a torn page for recovery to repair: the campaign proves nothing"
    );
}

#[test]
fn with_detect_only_recovery_names_exactly_the_torn_pages() {
    let (mut named, mut runs) = (0, 0);
    for seed in seeds() {
        let (fx, context) = crash(DoublewriteMode::DetectOnly, seed);
        let torn: Vec<PageId> = batch_ids()
            .into_iter()
            .filter(|&id| look(&fx, id, &context) == Seen::Torn)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        match fx.recover(DoublewriteMode::DetectOnly) {
            Ok(report) => {
                assert!(
                    torn.is_empty(),
                    "{context}: torn {torn:?} not named: {report:?}"
                );
                // Every page is old or new; an old one is a lost write redo rolls forward.
                for p in &report.pages {
                    assert!(
                        matches!(p.action, Action::Kept | Action::LeftForRedo),
                        "{context}: {p:?}"
                    );
                }
            }
            Err(DblwrError::TornPages { pages, .. }) => {
                assert_eq!(pages, torn, "{context}");
                named += 1;
            }
            Err(e) => panic!("{context}: {e}"),
        }
        for id in batch_ids() {
            look(&fx, id, &context);
        }
        runs += 1;
    }
    eprintln!("detect_only: {named} of {runs} crashes named their torn pages");
    assert!(
        named > 0 || runs < 20,
        "no seed tore a page under detect_only"
    );
}

mod damaged;
mod pair;
