use std::path::Path;

use super::*;
use crate::{AlignedBuf, SyncBackend, UringBackend};

const PAGE: usize = 16384;

fn sim() -> Arc<CrashSim> {
    Arc::new(CrashSim::new(Arc::new(SyncBackend::new())))
}

fn fill(version: u8, len: usize) -> Vec<u8> {
    // Every byte differs between versions, so every torn chunk is recognisable.
    (0..len)
        .map(|i| version.wrapping_mul(37).wrapping_add((i % 199) as u8))
        .collect()
}

fn opts(method: FlushMethod) -> OpenOptions {
    OpenOptions::new(method).create(true)
}

/// 8 pages of version 1, synced; then 8 pages of version 2 over them and 4 more appended
/// unsynced; then the cut. Returns the file's bytes and the report.
fn scenario(dir: &Path, seed: u64) -> (Vec<u8>, CrashReport) {
    let sim = sim();
    let path = dir.join("data");
    let f = sim.open(&path, &opts(FlushMethod::Fsync)).unwrap();
    f.write_at(&fill(1, 8 * PAGE), 0).unwrap();
    f.sync_data().unwrap();
    for page in 0..12 {
        f.write_at(&fill(2, PAGE), (page * PAGE) as u64).unwrap();
    }
    assert_eq!(sim.unsynced_writes(), 12);
    let report = sim.power_cut(seed).unwrap();
    (std::fs::read(&path).unwrap(), report)
}

#[test]
fn unsynced_writes_come_out_kept_lost_or_torn() {
    let mut totals = [0usize; 3];
    for seed in 0..40 {
        let dir = tempfile::tempdir().unwrap();
        let (bytes, report) = scenario(dir.path(), seed);
        let file = report.file(&dir.path().join("data")).unwrap();
        assert_eq!(file.writes.len(), 12, "{report}");
        assert_eq!(file.durable_len, (8 * PAGE) as u64);
        assert!(
            bytes.len() == 8 * PAGE || bytes.len() == 12 * PAGE,
            "{report}: length {}",
            bytes.len()
        );
        assert_eq!(bytes.len() as u64, file.len_after);
        totals[0] += file.kept();
        totals[1] += file.lost();
        totals[2] += file.torn();
        let old = fill(1, 8 * PAGE);
        let new = fill(2, PAGE);
        let zero = vec![0u8; PAGE];
        for (i, w) in file.writes.iter().enumerate() {
            assert_eq!(w.offset, (i * PAGE) as u64);
            if w.offset >= bytes.len() as u64 {
                continue; // the extension was lost with it
            }
            let got = &bytes[i * PAGE..(i + 1) * PAGE];
            let before: &[u8] = if i < 8 {
                &old[i * PAGE..(i + 1) * PAGE]
            } else {
                &zero
            };
            match w.fate {
                Fate::Kept => assert!(got == &new[..], "{report}: page {i}"),
                Fate::Lost => assert!(got == before, "{report}: page {i}"),
                Fate::Torn {
                    granularity,
                    persisted,
                    chunks,
                } => {
                    assert_eq!(chunks, PAGE / granularity);
                    let news = got
                        .chunks(granularity)
                        .zip(new.chunks(granularity))
                        .filter(|(g, n)| g == n)
                        .count();
                    let olds = got
                        .chunks(granularity)
                        .zip(before.chunks(granularity))
                        .filter(|(g, o)| g == o)
                        .count();
                    assert_eq!(news, persisted, "{report}: page {i}");
                    assert_eq!(news + olds, chunks, "{report}: page {i}");
                    assert!(news > 0 && olds > 0, "{report}: page {i} is not torn");
                }
                Fate::Durable => panic!("no O_DSYNC writes here: {report}"),
            }
        }
    }
    assert!(
        totals.iter().all(|&t| t > 20),
        "kept/lost/torn totals {totals:?}"
    );
}

#[test]
fn same_seed_same_files_different_seeds_differ() {
    let mut outcomes = Vec::new();
    for seed in [3u64, 3, 4, 5, 6] {
        let dir = tempfile::tempdir().unwrap();
        let (bytes, report) = scenario(dir.path(), seed);
        let fates: Vec<WriteFate> = report.files.iter().flat_map(|f| f.writes.clone()).collect();
        outcomes.push((bytes, fates));
    }
    assert!(
        outcomes[0] == outcomes[1],
        "seed 3 twice gave different files"
    );
    assert!(
        outcomes[2..].iter().any(|o| *o != outcomes[0]),
        "seeds 3..6 all gave the same crash"
    );
}

#[test]
fn synced_data_survives_every_seed() {
    for seed in 0..60 {
        let dir = tempfile::tempdir().unwrap();
        let sim = sim();
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        let fa = sim.open(&a, &opts(FlushMethod::Fsync)).unwrap();
        let fb = sim.open(&b, &opts(FlushMethod::ODirect)).unwrap();
        let mut page = AlignedBuf::new(PAGE).unwrap();
        page.copy_from_slice(&fill(1, PAGE));
        fa.write_at(&fill(1, 4 * PAGE), 0).unwrap();
        fb.write_at(&page, 0).unwrap();
        fa.sync_all().unwrap();
        fb.sync_data().unwrap();
        // Unsynced: overwrite the middle of a's page 1 (sector-unaligned) and append to b.
        fa.write_at(&fill(2, 3000), (PAGE + 700) as u64).unwrap();
        page.copy_from_slice(&fill(2, PAGE));
        fb.write_at(&page, PAGE as u64).unwrap();
        let report = sim.power_cut(seed).unwrap();

        let got_a = std::fs::read(&a).unwrap();
        let want_old = fill(1, 4 * PAGE);
        assert_eq!(got_a.len(), 4 * PAGE, "{report}");
        // Everything outside the unsynced range is the synced data, byte for byte.
        assert!(got_a[..PAGE + 512] == want_old[..PAGE + 512], "{report}");
        assert!(got_a[PAGE + 4096..] == want_old[PAGE + 4096..], "{report}");
        // Inside it, each sector is old or new.
        let new_part = fill(2, 3000);
        for s in (PAGE + 512..PAGE + 4096).step_by(512) {
            let sector = &got_a[s..s + 512];
            let mut new_sector = want_old[s..s + 512].to_vec();
            for (k, byte) in new_sector.iter_mut().enumerate() {
                let at = s + k;
                if (PAGE + 700..PAGE + 3700).contains(&at) {
                    *byte = new_part[at - PAGE - 700];
                }
            }
            assert!(
                sector == &want_old[s..s + 512] || sector == &new_sector[..],
                "{report}: sector at {s}"
            );
        }
        let got_b = std::fs::read(&b).unwrap();
        assert!(got_b.len() == PAGE || got_b.len() == 2 * PAGE, "{report}");
        assert!(got_b[..PAGE] == fill(1, PAGE)[..], "{report}");
    }
}

#[test]
fn o_dsync_writes_are_durable_on_return() {
    for seed in 0..30 {
        let dir = tempfile::tempdir().unwrap();
        let sim = sim();
        let path = dir.path().join("log");
        let f = sim.open(&path, &opts(FlushMethod::ODsync)).unwrap();
        for i in 0..6u8 {
            f.write_at(&fill(i, 4096), u64::from(i) * 4096).unwrap();
        }
        assert_eq!(sim.unsynced_writes(), 0);
        let report = sim.power_cut(seed).unwrap();
        let got = std::fs::read(&path).unwrap();
        assert_eq!(got.len(), 6 * 4096, "{report}");
        for i in 0..6u8 {
            let at = usize::from(i) * 4096;
            assert!(
                got[at..at + 4096] == fill(i, 4096)[..],
                "{report}: block {i}"
            );
        }
    }
}

#[test]
fn unsynced_extension_may_be_lost_synced_one_never() {
    let mut lengths = std::collections::BTreeSet::new();
    for seed in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let sim = sim();
        let f = sim
            .open(&dir.path().join("f"), &opts(FlushMethod::Fsync))
            .unwrap();
        f.allocate(8192).unwrap();
        f.sync_data().unwrap();
        f.allocate(65536).unwrap();
        let report = sim.power_cut(seed).unwrap();
        let len = std::fs::metadata(dir.path().join("f")).unwrap().len();
        assert!(len == 8192 || len == 65536, "{report}");
        lengths.insert(len);
    }
    assert_eq!(lengths.len(), 2, "both outcomes should occur over 20 seeds");
}

/// A simulator and a file `f` in `dir` holding four pages of version 1, synced.
fn four_synced_pages(dir: &Path) -> (Arc<CrashSim>, std::path::PathBuf, Arc<dyn FileIo>) {
    let sim = sim();
    let path = dir.join("f");
    let f = sim.open(&path, &opts(FlushMethod::Fsync)).unwrap();
    f.write_at(&fill(1, 4 * PAGE), 0).unwrap();
    f.sync_data().unwrap();
    (sim, path, f)
}

#[test]
fn unsynced_truncate_is_kept_or_lost_whole_synced_one_stays() {
    let mut outcomes = std::collections::BTreeSet::new();
    for seed in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let (sim, path, f) = four_synced_pages(dir.path());
        // A write beyond the new end before the truncate, one inside it after.
        f.write_at(&fill(2, PAGE), 3 * PAGE as u64).unwrap();
        f.truncate(PAGE as u64).unwrap();
        assert_eq!(f.len().unwrap(), PAGE as u64);
        f.write_at(&fill(3, 512), 0).unwrap();
        let report = sim.power_cut(seed).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let old = fill(1, 4 * PAGE);
        match bytes.len() {
            // Kept: nothing beyond the new end, the durable bytes below it.
            n if n == PAGE => assert_eq!(bytes[512..], old[512..PAGE], "{report}"),
            // Lost: the old length, and the old bytes beyond the new end unless the write
            // before the truncate landed over them.
            n if n == 4 * PAGE => {
                assert_eq!(bytes[PAGE..3 * PAGE], old[PAGE..3 * PAGE], "{report}")
            }
            n => panic!("length {n} after the cut: {report}"),
        }
        outcomes.insert(bytes.len());
    }
    assert_eq!(
        outcomes.len(),
        2,
        "both outcomes should occur over 20 seeds"
    );

    // Once synced, a truncate is durable whatever the seed.
    let dir = tempfile::tempdir().unwrap();
    let (sim, path, f) = four_synced_pages(dir.path());
    f.truncate(PAGE as u64).unwrap();
    f.truncate(2 * PAGE as u64).unwrap(); // never grows
    f.sync_data().unwrap();
    sim.power_cut(7).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), fill(1, 4 * PAGE)[..PAGE]);
}

#[test]
fn old_handles_are_gone_after_a_cut_and_reopening_works() {
    let dir = tempfile::tempdir().unwrap();
    let sim = sim();
    let path = dir.path().join("f");
    let f = sim.open(&path, &opts(FlushMethod::Fsync)).unwrap();
    f.write_at(b"durable!", 0).unwrap();
    f.sync_data().unwrap();
    sim.power_cut(1).unwrap();
    let mut buf = [0u8; 8];
    assert!(matches!(
        f.read_at(&mut buf, 0),
        Err(IoError::DeviceGone { .. })
    ));
    assert!(matches!(
        f.write_at(&buf, 0),
        Err(IoError::DeviceGone { .. })
    ));
    assert!(matches!(f.sync_data(), Err(IoError::DeviceGone { .. })));
    assert!(matches!(f.len(), Err(IoError::DeviceGone { .. })));
    let g = sim
        .open(&path, &OpenOptions::new(FlushMethod::Fsync))
        .unwrap();
    g.read_at(&mut buf, 0).unwrap();
    assert_eq!(&buf, b"durable!");
}

#[test]
fn armed_device_dies_after_n_ops() {
    let dir = tempfile::tempdir().unwrap();
    let sim = sim();
    let path = dir.path().join("f");
    let f = sim.open(&path, &opts(FlushMethod::Fsync)).unwrap();
    f.write_at(&[1u8; 512], 0).unwrap();
    f.sync_data().unwrap();
    sim.arm(3);
    f.write_at(&[2u8; 512], 512).unwrap(); // 1
    let mut buf = [0u8; 512];
    f.read_at(&mut buf, 0).unwrap(); // reads do not count
    f.write_at(&[3u8; 512], 1024).unwrap(); // 2
    // A batch of two writes: the first is op 3, the second finds the device dead.
    let (x, y) = ([4u8; 512], [5u8; 512]);
    let mut batch = [
        IoRequest::Write {
            offset: 1536,
            buf: &x,
        },
        IoRequest::Write {
            offset: 2048,
            buf: &y,
        },
    ];
    let err = f.submit(&mut batch).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "{err}");
    assert!(matches!(err, IoError::Io { offset: 2048, .. }), "{err}");
    assert!(sim.is_dead());
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        2048,
        "the dead write must not land"
    );
    assert_eq!(f.sync_data().unwrap_err().raw_os_error(), Some(libc::EIO));
    assert_eq!(
        f.read_at(&mut buf, 0).unwrap_err().raw_os_error(),
        Some(libc::EIO)
    );
    assert!(sim.open(&path, &OpenOptions::default()).is_err());
    let report = sim.power_cut(7).unwrap();
    assert_eq!(report.files[0].writes.len(), 3, "{report}");
    assert!(!sim.is_dead());
    let g = sim.open(&path, &OpenOptions::default()).unwrap();
    g.read_at(&mut buf, 0).unwrap();
    assert_eq!(buf, [1u8; 512], "synced data survives the death");
    g.write_at(&[9u8; 512], 0).unwrap(); // disarmed after the cut
}

#[test]
fn a_failed_sync_reports_eio_and_leaves_writes_in_doubt() {
    let dir = tempfile::tempdir().unwrap();
    let sim = sim();
    let f = sim
        .open(&dir.path().join("f"), &opts(FlushMethod::Fsync))
        .unwrap();
    f.write_at(&[1u8; 4096], 0).unwrap();
    sim.fail_next_sync();
    let err = f.sync_data().unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "{err}");
    assert!(matches!(err, IoError::File { op: IoOp::Sync, .. }), "{err}");
    assert_eq!(sim.unsynced_writes(), 1, "the write is still not durable");
    f.sync_all().unwrap();
    assert_eq!(sim.unsynced_writes(), 0);
}

#[test]
fn works_over_io_uring_with_o_direct() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Arc::new(CrashSim::new(Arc::new(UringBackend::new().unwrap())));
    let path = dir.path().join("f");
    let f = sim.open(&path, &opts(FlushMethod::ODirect)).unwrap();
    let mut page = AlignedBuf::new(PAGE).unwrap();
    page.copy_from_slice(&fill(1, PAGE));
    f.write_at(&page, 0).unwrap();
    f.sync_data().unwrap();
    page.copy_from_slice(&fill(2, PAGE));
    let mut batch = [
        IoRequest::Write {
            offset: 0,
            buf: &page,
        },
        IoRequest::Write {
            offset: PAGE as u64,
            buf: &page,
        },
    ];
    f.submit(&mut batch).unwrap();
    assert_eq!(sim.unsynced_writes(), 2);
    let report = sim.power_cut(11).unwrap();
    assert!(report.to_string().contains("seed 11"));
    assert_eq!(report.files[0].writes.len(), 2, "{report}");
    let got = std::fs::read(&path).unwrap();
    let first = &got[..PAGE];
    match report.files[0].writes[0].fate {
        Fate::Kept => assert!(first == &fill(2, PAGE)[..], "{report}"),
        Fate::Lost => assert!(first == &fill(1, PAGE)[..], "{report}"),
        _ => assert!(first != &fill(2, PAGE)[..] && first != &fill(1, PAGE)[..]),
    }
}

#[test]
fn syncs_are_simulated_unless_real_syncs_are_asked_for() {
    use crate::latency::{DiskProfile, LatencyModel};
    for real in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let disk = Arc::new(LatencyModel::new(
            Arc::new(SyncBackend::new()),
            DiskProfile::ssd(),
            false,
        ));
        let inner: Arc<dyn Backend> = disk.clone();
        let sim = if real {
            CrashSim::with_real_syncs(inner)
        } else {
            CrashSim::new(inner)
        };
        let path = dir.path().join("data");
        let f = sim.open(&path, &opts(FlushMethod::Fsync)).unwrap();
        f.write_at(&fill(1, PAGE), 0).unwrap();
        f.sync_data().unwrap();
        f.write_at(&fill(2, PAGE), 0).unwrap();
        f.sync_all().unwrap();
        // Either way the simulator counts both syncs as durable points: the cut keeps the
        // second version whole.
        sim.power_cut(7).unwrap();
        assert_eq!(
            std::fs::read(&path).unwrap(),
            fill(2, PAGE),
            "real syncs: {real}"
        );
        assert_eq!(
            disk.stats().syncs,
            if real { 2 } else { 0 },
            "real syncs: {real}"
        );
        assert_eq!(disk.stats().writes, 2, "writes always reach the real file");
    }
}
