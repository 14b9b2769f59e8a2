//! Cross-module tests: every backend under every flush method.

use std::sync::Arc;

use minnow_page::checksum::{ChecksumAlgorithm, ChecksumPolicy, Verdict};
use minnow_page::fil::FilHeader;
use minnow_page::{PageSize, PageType};

use crate::*;

/// One of each backend (the wrappers around different real backends).
pub(crate) fn backends() -> Vec<Arc<dyn Backend>> {
    let uring: Arc<dyn Backend> = Arc::new(UringBackend::new().unwrap());
    vec![
        Arc::new(SyncBackend::new()),
        Arc::new(SyncBackend::with_write_threads(4)),
        Arc::clone(&uring),
        Arc::new(CrashSim::new(Arc::new(SyncBackend::new()))),
        Arc::new(CrashSim::new(Arc::new(SyncBackend::with_write_threads(3)))),
        Arc::new(CrashSim::new(Arc::clone(&uring))),
        Arc::new(LatencyModel::new(uring, DiskProfile::ssd(), false)),
    ]
}

/// A page of `size` with a valid FIL header and a body pattern that depends on `seed`.
pub(crate) fn make_page(size: PageSize, space_id: u32, page_no: u32, seed: u64) -> AlignedBuf {
    let mut page = AlignedBuf::page(size);
    for (i, b) in page.iter_mut().enumerate() {
        *b = (seed.wrapping_mul(31).wrapping_add(i as u64 * 7) % 251) as u8;
    }
    let mut h = FilHeader::new(space_id, page_no, PageType::Index);
    h.lsn = 1000 + seed;
    h.write(&mut page).unwrap();
    page
}

#[test]
fn raw_round_trip_every_backend_and_flush_method() {
    let dir = tempfile::tempdir().unwrap();
    for (b, backend) in backends().into_iter().enumerate() {
        for method in FlushMethod::ALL {
            let path = dir.path().join(format!("raw-{b}-{method}"));
            let f = backend
                .open(&path, &OpenOptions::new(method).create(true))
                .unwrap();
            assert_eq!(f.flush_method(), method);
            assert_eq!(f.path(), path.as_path());
            assert!(f.is_empty().unwrap());
            let mut data = AlignedBuf::new(8192).unwrap();
            data.iter_mut()
                .enumerate()
                .for_each(|(i, x)| *x = (i % 13) as u8);
            f.write_at(&data, 4096).unwrap();
            f.sync_data().unwrap();
            assert_eq!(f.len().unwrap(), 12288, "{} {method}", backend.name());
            f.allocate(65536).unwrap();
            f.allocate(1024).unwrap(); // never shrinks
            f.sync_all().unwrap();
            assert_eq!(f.len().unwrap(), 65536);
            let mut back = AlignedBuf::new(8192).unwrap();
            f.read_at(&mut back, 4096).unwrap();
            assert!(back == data, "{} {method}", backend.name());
            let mut tail = AlignedBuf::new(512).unwrap();
            f.read_at(&mut tail, 65536 - 512).unwrap();
            assert!(tail.iter().all(|&x| x == 0));
            let err = f.read_at(&mut tail, 65536).unwrap_err();
            assert_eq!(
                err.io_kind(),
                Some(std::io::ErrorKind::UnexpectedEof),
                "{err}"
            );
        }
    }
}

#[test]
fn read_only_handles_refuse_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ro");
    std::fs::write(&path, [1u8; 4096]).unwrap();
    for backend in backends() {
        let f = backend
            .open(&path, &OpenOptions::new(FlushMethod::Fsync).read_only(true))
            .unwrap();
        let mut buf = [0u8; 16];
        f.read_at(&mut buf, 0).unwrap();
        assert_eq!(buf, [1u8; 16]);
        let err = f.write_at(&buf, 0).unwrap_err();
        assert!(
            matches!(
                err,
                IoError::Io {
                    op: IoOp::Write,
                    ..
                }
            ),
            "{err}"
        );
    }
    // Opening a missing file without create is an Open error naming the file.
    let err = SyncBackend::new()
        .open(&dir.path().join("missing"), &OpenOptions::default())
        .unwrap_err();
    assert!(matches!(err, IoError::File { op: IoOp::Open, .. }), "{err}");
    assert!(err.to_string().contains("missing"), "{err}");
}

#[test]
fn tablespace_round_trip_every_backend_method_and_page_size() {
    let dir = tempfile::tempdir().unwrap();
    for (b, backend) in backends().into_iter().enumerate() {
        for method in FlushMethod::ALL {
            for (size, algo) in [
                (PageSize::K4, ChecksumAlgorithm::FullCrc32),
                (PageSize::K16, ChecksumAlgorithm::Crc32),
                (PageSize::K64, ChecksumAlgorithm::Innodb),
            ] {
                let path = dir.path().join(format!("t-{b}-{method}-{}", size.bytes()));
                let ctx = format!("{} {method} {size} {algo}", backend.name());
                let space =
                    Tablespace::create(&*backend, &path, 42, size, algo, method, 3).unwrap();
                assert_eq!(space.size_in_pages(), 3, "{ctx}");
                let mut p1 = make_page(size, 42, 1, 1);
                space.write_page(1, &mut p1).unwrap();
                space.extend_to(6).unwrap();
                let mut p5 = make_page(size, 42, 5, 5);
                space.write_page(5, &mut p5).unwrap();
                space.sync().unwrap();
                drop(space);

                let opts = OpenOptions::new(method);
                let space = Tablespace::open(&*backend, &path, &opts, ChecksumPolicy::new(algo))
                    .unwrap_or_else(|e| panic!("{ctx}: {e}"));
                assert_eq!(space.space_id(), 42, "{ctx}");
                assert_eq!(space.page_size(), size, "{ctx}");
                assert_eq!(space.size_in_pages(), 6, "{ctx}");
                assert_eq!(
                    space.flags().is_full_crc32(),
                    algo == ChecksumAlgorithm::FullCrc32
                );
                let mut back = AlignedBuf::page(size);
                assert!(
                    matches!(space.read_page(1, &mut back), Ok(Verdict::Valid(_))),
                    "{ctx}"
                );
                assert!(back == p1, "{ctx}");
                space.read_page(5, &mut back).unwrap();
                assert!(back == p5, "{ctx}");
                // Preallocated, never written: empty.
                assert_eq!(
                    space.read_page(3, &mut back).unwrap(),
                    Verdict::Empty,
                    "{ctx}"
                );
            }
        }
    }
}

#[test]
fn batched_pages_through_io_uring() {
    let dir = tempfile::tempdir().unwrap();
    let backend = UringBackend::new().unwrap();
    let size = PageSize::K16;
    let path = dir.path().join("batch.ibd");
    let space = Tablespace::create(
        &backend,
        &path,
        9,
        size,
        ChecksumAlgorithm::Crc32,
        FlushMethod::ODirect,
        1,
    )
    .unwrap();
    let n = 300u32; // more than the 256-entry ring: submitted in rounds
    space.extend_to(n + 1).unwrap();
    let mut pages: Vec<AlignedBuf> = (1..=n)
        .map(|i| make_page(size, 9, i, u64::from(i)))
        .collect();
    let mut batch: Vec<(u32, &mut [u8])> = pages
        .iter_mut()
        .enumerate()
        .map(|(i, p)| (i as u32 + 1, &mut p[..]))
        .collect();
    space.write_pages(&mut batch).unwrap();
    space.sync().unwrap();

    let mut back: Vec<AlignedBuf> = (0..n).map(|_| AlignedBuf::page(size)).collect();
    let mut batch: Vec<(u32, &mut [u8])> = back
        .iter_mut()
        .enumerate()
        .map(|(i, p)| (i as u32 + 1, &mut p[..]))
        .collect();
    space.read_pages(&mut batch).unwrap();
    assert!(back == pages);
}

#[test]
fn threads_share_one_uring_backend() {
    let dir = tempfile::tempdir().unwrap();
    let backend: Arc<dyn Backend> = Arc::new(UringBackend::with_entries(8).unwrap());
    let handles: Vec<_> = (0..4u8)
        .map(|t| {
            let backend = Arc::clone(&backend);
            let path = dir.path().join(format!("thread-{t}"));
            std::thread::spawn(move || {
                let f = backend
                    .open(&path, &OpenOptions::new(FlushMethod::ODirect).create(true))
                    .unwrap();
                let mut page = AlignedBuf::new(4096).unwrap();
                for i in 0..40u8 {
                    page.fill(t.wrapping_mul(50).wrapping_add(i));
                    f.write_at(&page, u64::from(i) * 4096).unwrap();
                }
                f.sync_data().unwrap();
                for i in 0..40u8 {
                    f.read_at(&mut page, u64::from(i) * 4096).unwrap();
                    assert!(
                        page.iter()
                            .all(|&b| b == t.wrapping_mul(50).wrapping_add(i))
                    );
                }
                f.len().unwrap()
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), 40 * 4096);
    }
}

#[test]
fn sleeping_latency_model_runs_and_counts() {
    // Tiny costs so the sleeping path runs quickly; only the accounting is asserted.
    let profile = DiskProfile {
        name: "tiny disk".to_string(),
        seek_ns: 1_000,
        rotation_ns: 1_000,
        read_ns: 0,
        write_ns: 0,
        bytes_per_sec: 4_096_000_000,
        sync_ns: 1_000,
    };
    let model = LatencyModel::new(Arc::new(SyncBackend::new()), profile.clone(), true);
    assert!(
        model.label().contains("emulated tiny disk (sleeping)"),
        "{}",
        model.label()
    );
    let dir = tempfile::tempdir().unwrap();
    let f = model
        .open(
            &dir.path().join("f"),
            &OpenOptions::new(FlushMethod::Fsync).create(true),
        )
        .unwrap();
    f.write_at(&[1u8; 4096], 0).unwrap();
    f.write_at(&[2u8; 4096], 4096).unwrap();
    f.sync_all().unwrap();
    let s = model.stats();
    assert_eq!((s.writes, s.random, s.sequential, s.syncs), (2, 1, 1, 1));
    assert_eq!(s.busy_ns, 2_000 + 2 * 1_000 + 1_000);
    assert_eq!(model.profile(), &profile);
}
