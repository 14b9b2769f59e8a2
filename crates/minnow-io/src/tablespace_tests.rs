use std::path::Path;

use minnow_page::checksum::Corruption;
use minnow_zip::Outcome;
use proptest::prelude::*;

use super::*;
use crate::tests::make_page;
use crate::{CrashSim, Fate, SyncBackend};

const SPACE: u32 = 5;

fn create(path: &Path, size: PageSize, pages: u32) -> Tablespace {
    Tablespace::create(
        &SyncBackend::new(),
        path,
        SPACE,
        size,
        ChecksumAlgorithm::Crc32,
        FlushMethod::Fsync,
        pages,
    )
    .unwrap()
}

fn open(path: &Path) -> Result<Tablespace, IoError> {
    Tablespace::open(
        &SyncBackend::new(),
        path,
        &OpenOptions::new(FlushMethod::Fsync),
        ChecksumPolicy::default(),
    )
}

fn reason(err: &IoError) -> String {
    match err {
        IoError::BadTablespace { reason, .. } => reason.clone(),
        other => panic!("expected BadTablespace, got {other}"),
    }
}

#[test]
fn truncated_and_misshapen_files_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.ibd");
    drop(create(&path, PageSize::K16, 4));
    let full = std::fs::read(&path).unwrap();
    for len in [0, 100, 1024, 4095, 8192, 16383, 16385, 3 * 16384 - 512] {
        std::fs::write(&path, &full[..len]).unwrap();
        let err = open(&path).unwrap_err();
        let why = reason(&err);
        assert!(
            why.contains("shorter") || why.contains("multiple of the page size"),
            "{len} bytes: {err}"
        );
        assert!(err.to_string().contains("t.ibd"), "{err}");
    }
    // Bad flags (page size field 2 in the MySQL layout is 2 KiB: unsupported).
    let mut bad_flags = full.clone();
    bad_flags[fsp::FLAGS_OFFSET..fsp::FLAGS_OFFSET + 4].copy_from_slice(&(2u32 << 6).to_be_bytes());
    std::fs::write(&path, &bad_flags).unwrap();
    assert!(reason(&open(&path).unwrap_err()).contains("page size"));
    // A valid page 0 that is not an FSP header.
    let mut not_fsp = full.clone();
    not_fsp[24..26].copy_from_slice(&PageType::Index.to_u16().to_be_bytes());
    checksum::stamp(&mut not_fsp[..16384], ChecksumAlgorithm::Crc32).unwrap();
    std::fs::write(&path, &not_fsp).unwrap();
    assert!(reason(&open(&path).unwrap_err()).contains("not FSP_HDR"));
    // An all-zero file of the right shape: flags 0 mean 16 KiB, but page 0 is empty.
    std::fs::write(&path, vec![0u8; 2 * 16384]).unwrap();
    assert!(reason(&open(&path).unwrap_err()).contains("all zeros"));
}

#[test]
fn create_refuses_existing_data_and_open_refuses_create() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.ibd");
    std::fs::write(&path, b"precious").unwrap();
    let err = Tablespace::create(
        &SyncBackend::new(),
        &path,
        1,
        PageSize::K4,
        ChecksumAlgorithm::Crc32,
        FlushMethod::Fsync,
        1,
    )
    .unwrap_err();
    assert!(reason(&err).contains("not empty"));
    assert_eq!(std::fs::read(&path).unwrap(), b"precious");
    let opts = OpenOptions::new(FlushMethod::Fsync).create(true);
    let err =
        Tablespace::open(&SyncBackend::new(), &path, &opts, ChecksumPolicy::default()).unwrap_err();
    assert!(reason(&err).contains("create"));
}

#[test]
fn corrupt_page_names_file_page_and_checksums() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.ibd");
    let space = create(&path, PageSize::K4, 4);
    let mut page = make_page(PageSize::K4, SPACE, 2, 2);
    space.write_page(2, &mut page).unwrap();
    space.sync().unwrap();
    let stored = u32::from_be_bytes(page[0..4].try_into().unwrap());
    drop(space);

    let mut bytes = std::fs::read(&path).unwrap();
    bytes[2 * 4096 + 1000] ^= 0x40; // one flipped bit in the body
    std::fs::write(&path, &bytes).unwrap();
    let space = open(&path).unwrap();
    let mut back = AlignedBuf::page(PageSize::K4);
    let err = space.read_page(2, &mut back).unwrap_err();
    match &err {
        IoError::Corrupt {
            path: p,
            page_no,
            corruption:
                Corruption::Checksum {
                    stored_first,
                    computed_first,
                    ..
                },
        } => {
            assert_eq!(p, &path);
            assert_eq!(*page_no, 2);
            assert_eq!(*stored_first, stored);
            assert_ne!(*computed_first, stored);
        }
        other => panic!("expected a checksum Corrupt error, got {other}"),
    }
    let text = err.to_string();
    assert!(text.contains("c.ibd") && text.contains("page 2"), "{text}");
    assert!(text.contains(&format!("{stored:#010x}")), "{text}");
    // The unverified read still returns the bytes, for inspection.
    space.read_page_unverified(2, &mut back).unwrap();
    assert_eq!(back[1000], page[1000] ^ 0x40);
    // Batched reads report the same page.
    let mut other = AlignedBuf::page(PageSize::K4);
    let mut batch: Vec<(u32, &mut [u8])> = vec![(1, &mut other[..]), (2, &mut back[..])];
    let err = space.read_pages(&mut batch).unwrap_err();
    assert!(matches!(err, IoError::Corrupt { page_no: 2, .. }), "{err}");
}

#[test]
fn out_of_range_wrong_size_misdirected_and_misaligned() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ibd");
    let space = create(&path, PageSize::K8, 3);
    let mut page = make_page(PageSize::K8, SPACE, 1, 1);
    let err = space.write_page(3, &mut page).unwrap_err();
    assert!(
        matches!(
            err,
            IoError::PageOutOfRange {
                page_no: 3,
                size_in_pages: 3,
                ..
            }
        ),
        "{err}"
    );
    assert!(matches!(
        space.read_page(u32::MAX, &mut page),
        Err(IoError::PageOutOfRange { .. })
    ));
    let mut small = vec![0u8; 4096];
    assert!(matches!(
        space.read_page(1, &mut small),
        Err(IoError::BufferSize {
            expected: 8192,
            actual: 4096,
            ..
        })
    ));
    // Page 1's image written into slot 2: the checksum is fine, the page number is not.
    space.write_page(2, &mut page).unwrap();
    let err = space.read_page(2, &mut page).unwrap_err();
    assert!(
        matches!(
            err,
            IoError::Misdirected {
                page_no: 2,
                stored: 1,
                ..
            }
        ),
        "{err}"
    );
    drop(space);

    // O_DIRECT with a misaligned buffer is a typed error, not EINVAL.
    let space = Tablespace::open(
        &SyncBackend::new(),
        &path,
        &OpenOptions::new(FlushMethod::ODirect),
        ChecksumPolicy::default(),
    )
    .unwrap();
    let mut big = AlignedBuf::new(8192 + 4096).unwrap();
    let err = space.read_page(1, &mut big[1..8193]).unwrap_err();
    assert!(matches!(err, IoError::Misaligned { .. }), "{err}");
    assert_eq!(
        space.read_page(1, &mut big[4096..]).unwrap(),
        Verdict::Empty
    );
}

#[test]
fn torn_pages_fail_verification_after_a_power_cut() {
    let size = PageSize::K16;
    let mut seen = [0usize; 3];
    for seed in 0..25 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("torn.ibd");
        let sim = Arc::new(CrashSim::new(Arc::new(SyncBackend::new())));
        let space = Tablespace::create(
            &*sim,
            &path,
            SPACE,
            size,
            ChecksumAlgorithm::Crc32,
            FlushMethod::ODirect,
            9,
        )
        .unwrap();
        let mut v1: Vec<AlignedBuf> = (1..9).map(|n| make_page(size, SPACE, n, 1)).collect();
        let mut v2: Vec<AlignedBuf> = (1..9).map(|n| make_page(size, SPACE, n, 2)).collect();
        for (i, p) in v1.iter_mut().enumerate() {
            space.write_page(i as u32 + 1, p).unwrap();
        }
        space.sync().unwrap();
        let mut batch: Vec<(u32, &mut [u8])> = v2
            .iter_mut()
            .enumerate()
            .map(|(i, p)| (i as u32 + 1, &mut p[..]))
            .collect();
        space.write_pages(&mut batch).unwrap();
        let report = sim.power_cut(seed).unwrap();
        let writes = &report.file(&path).unwrap().writes;
        assert_eq!(writes.len(), 8, "{report}");

        let opts = OpenOptions::new(FlushMethod::ODirect);
        let space = Tablespace::open(&*sim, &path, &opts, ChecksumPolicy::default()).unwrap();
        let mut back = AlignedBuf::page(size);
        for (i, w) in writes.iter().enumerate() {
            let page_no = i as u32 + 1;
            assert_eq!(w.offset, u64::from(page_no) * size.bytes() as u64);
            let result = space.read_page(page_no, &mut back);
            match w.fate {
                Fate::Kept => {
                    seen[0] += 1;
                    result.unwrap();
                    assert!(back == v2[i], "{report}: page {page_no}");
                }
                Fate::Lost => {
                    seen[1] += 1;
                    result.unwrap();
                    assert!(back == v1[i], "{report}: page {page_no}");
                }
                Fate::Torn { .. } => {
                    seen[2] += 1;
                    let err = result.unwrap_err();
                    assert!(
                        matches!(err, IoError::Corrupt { page_no: p, .. } if p == page_no),
                        "{report}: page {page_no}: {err}"
                    );
                }
                Fate::Durable => panic!("{report}"),
            }
        }
    }
    assert!(
        seen.iter().all(|&n| n > 10),
        "kept/lost/torn pages {seen:?}"
    );
}

/// Opens whatever is at `path` and reads every page: any outcome but a panic is fine.
fn open_and_read_all(path: &Path) {
    if let Ok(space) = open(path) {
        let mut buf = AlignedBuf::page(space.page_size());
        for n in 0..space.size_in_pages().min(64) {
            let _ = space.read_page(n, &mut buf);
        }
        assert!(space.read_page(space.size_in_pages(), &mut buf).is_err());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn garbage_files_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..40_000)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.ibd");
        std::fs::write(&path, &bytes).unwrap();
        let result = open(&path);
        if bytes.len() < 4096 {
            let bad = matches!(result, Err(IoError::BadTablespace { .. }));
            prop_assert!(bad, "short file must be BadTablespace");
        }
        open_and_read_all(&path);
    }

    #[test]
    fn mutated_tablespaces_never_panic(
        flips in proptest::collection::vec((0usize..5 * 4096, any::<u8>()), 1..12),
        cut in 0usize..6 * 4096,
        size in prop_oneof![Just(PageSize::K4), Just(PageSize::K8)],
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.ibd");
        let space = create(&path, size, 4);
        let mut p = make_page(size, SPACE, 1, 1);
        space.write_page(1, &mut p).unwrap();
        drop(space);
        let mut bytes = std::fs::read(&path).unwrap();
        for (at, value) in flips {
            if let Some(b) = bytes.get_mut(at) {
                *b = value;
            }
        }
        bytes.truncate(cut);
        std::fs::write(&path, &bytes).unwrap();
        open_and_read_all(&path);
    }
}

mod compressed {
    use super::*;
    use minnow_zip::{Algorithm, KeyBlockSize, ZipConfig};

    fn create_zip(path: &Path, block: KeyBlockSize, algorithm: Algorithm) -> Tablespace {
        Tablespace::create_compressed(
            &SyncBackend::new(),
            path,
            SPACE,
            PageSize::K16,
            ZipConfig::new(block, algorithm),
            ChecksumAlgorithm::Crc32,
            FlushMethod::Fsync,
            4,
        )
        .unwrap()
    }

    /// A page whose body is text: compresses well.
    fn text_page(page_no: u32, lsn: u64) -> Vec<u8> {
        let mut page = make_page(PageSize::K16, SPACE, page_no, lsn).to_vec();
        let words = b"the quick brown fox jumps over the lazy dog ";
        for (i, b) in page[38..16384 - 8].iter_mut().enumerate() {
            *b = words[(i * 7 + page_no as usize) % words.len()];
        }
        page
    }

    #[test]
    fn pages_round_trip_through_blocks_and_the_file_holds_blocks() {
        for (block, algorithm) in [
            (KeyBlockSize::K8, Algorithm::default()),
            (KeyBlockSize::K4, Algorithm::Lz4),
            (KeyBlockSize::K1, Algorithm::default()),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("z.ibd");
            let space = create_zip(&path, block, algorithm);
            assert_eq!(space.physical_page_bytes(), block.bytes());
            space.extend_to(8).unwrap();
            let mut written = Vec::new();
            for n in 1..8 {
                let mut p = text_page(n, 100 + u64::from(n));
                space.write_page(n, &mut p).unwrap();
                written.push(p);
            }
            space.sync().unwrap();
            drop(space);
            assert_eq!(
                std::fs::metadata(&path).unwrap().len(),
                8 * block.bytes() as u64
            );
            let space = open(&path).unwrap();
            assert_eq!(space.zip(), Some(ZipConfig::new(block, algorithm)));
            assert_eq!(space.page_size(), PageSize::K16);
            assert_eq!(space.flags().zip_size(), Some(block.bytes()));
            for (n, want) in (1..8).zip(&written) {
                let mut got = vec![0u8; 16384];
                assert!(matches!(
                    space.read_page(n, &mut got).unwrap(),
                    Verdict::Valid(_)
                ));
                assert_eq!(&got, want, "page {n}");
            }
            let stats = space.zip_stats().unwrap();
            assert_eq!(stats.decompress_ops, 8, "page 0 at open and seven pages");
            // A never-written block reads as an empty page.
            space.extend_to(9).unwrap();
            let mut got = vec![1u8; 16384];
            assert_eq!(space.read_page(8, &mut got).unwrap(), Verdict::Empty);
        }
    }

    #[test]
    fn a_damaged_block_is_a_typed_error_naming_file_and_page() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("z.ibd");
        let space = create_zip(&path, KeyBlockSize::K8, Algorithm::default());
        let mut p = text_page(2, 7);
        space.write_page(2, &mut p).unwrap();
        drop(space);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[2 * 8192 + 100] ^= 0x40;
        std::fs::write(&path, &bytes).unwrap();
        let space = open(&path).unwrap();
        let err = space.read_page(2, &mut vec![0u8; 16384]).unwrap_err();
        assert!(
            matches!(err, IoError::ZipDamaged { page_no: 2, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("z.ibd"), "{err}");
        // A damaged block 0 makes the file refuse to open, with the reason.
        bytes[200] ^= 0x40;
        std::fs::write(&path, &bytes).unwrap();
        let err = open(&path).unwrap_err();
        assert!(reason(&err).contains("block 0"), "{err}");
    }

    #[test]
    fn incompressible_pages_do_not_fit_and_cached_blocks_are_reused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("z.ibd");
        let space = create_zip(&path, KeyBlockSize::K4, Algorithm::Lz4);
        let mut noise = make_page(PageSize::K16, SPACE, 3, 9);
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for b in noise[38..16384 - 8].iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
        let mut block = vec![0u8; 4096];
        assert!(matches!(
            space.compress_body(&noise, &mut block).unwrap(),
            Outcome::DoesNotFit { .. }
        ));
        let err = space.write_page(3, &mut noise).unwrap_err();
        assert!(
            matches!(
                err,
                IoError::DoesNotFit {
                    page_no: 3,
                    block: 4096,
                    ..
                }
            ),
            "{err}"
        );

        // The fit check's block, given later with a new LSN, is written without compressing.
        let mut p = text_page(3, 10);
        assert!(matches!(
            space.compress_body(&p, &mut block).unwrap(),
            Outcome::Fits { .. }
        ));
        let before = space.zip_stats().unwrap().compress_ops;
        minnow_page::fil::set_page_lsn(&mut p, 11).unwrap();
        checksum::stamp(&mut p, ChecksumAlgorithm::Crc32).unwrap();
        let out = space.block_for(3, &p, Some(&block)).unwrap();
        assert_eq!(space.zip_stats().unwrap().compress_ops, before);
        space.write_block(3, &out).unwrap();
        let mut got = vec![0u8; 16384];
        space.read_page(3, &mut got).unwrap();
        assert_eq!(got, p);
    }

    #[test]
    fn bad_settings_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        for (block, checksum) in [
            (KeyBlockSize::K16, ChecksumAlgorithm::Crc32),
            (KeyBlockSize::K8, ChecksumAlgorithm::FullCrc32),
        ] {
            let err = Tablespace::create_compressed(
                &SyncBackend::new(),
                &dir.path().join(format!("{block:?}{checksum:?}")),
                SPACE,
                PageSize::K16,
                ZipConfig::new(block, Algorithm::default()),
                checksum,
                FlushMethod::Fsync,
                4,
            )
            .unwrap_err();
            assert!(matches!(err, IoError::BadTablespace { .. }), "{err}");
        }
    }
}
