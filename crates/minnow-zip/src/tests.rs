//! Round trips, compression failures and damaged blocks.

use minnow_page::fil::FilHeader;
use minnow_page::{PageType, crc};
use proptest::prelude::*;

use crate::format::{HEADER_OFFSET, MAGIC, PAYLOAD_OFFSET};
use crate::{
    Algorithm, Codec, Compressed, KeyBlockSize, Outcome, ZipConfig, ZipError, ZipHeader, ZipStats,
    ZlibLevel,
};

const WORDS: &[&str] = &[
    "the buffer pool keeps hot pages in memory",
    "a compressed page that does not fit is split",
    "redo is written before the page",
    "read views decide which version is visible",
    "the doublewrite buffer protects against torn pages",
    "purge removes old versions",
];

/// An INDEX page whose body is text-like (sentences drawn from a small list).
fn text_page(seed: u64, size: usize) -> Vec<u8> {
    let mut page = vec![0u8; size];
    let mut h = FilHeader::new(7, 42, PageType::Index);
    h.lsn = 0xABCD_1234;
    h.write(&mut page).unwrap();
    let mut x = seed | 1;
    let mut at = 38;
    while at < size - 8 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let w = WORDS[(x % WORDS.len() as u64) as usize].as_bytes();
        for &b in w.iter().chain(b" ") {
            if at < size - 8 {
                page[at] = b;
                at += 1;
            }
        }
    }
    page
}

fn random_page(seed: u64, size: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..size)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn all_algorithms() -> Vec<Algorithm> {
    let mut v: Vec<_> = (1..=9)
        .map(|l| Algorithm::Zlib(ZlibLevel::new(l).unwrap()))
        .collect();
    v.push(Algorithm::Lz4);
    v
}

/// Recomputes a block's CRC-32C after a test changed it on purpose.
fn reseal(block: &mut [u8]) {
    let payload_len = u32::from_be_bytes(
        block[HEADER_OFFSET + 12..HEADER_OFFSET + 16]
            .try_into()
            .unwrap(),
    ) as usize;
    let end = (PAYLOAD_OFFSET + payload_len).min(block.len() - 8);
    let c = crc::crc32c_append(
        crc::crc32c_append(
            crc::crc32c(&block[..HEADER_OFFSET + 16]),
            &block[PAYLOAD_OFFSET..end],
        ),
        &block[block.len() - 8..],
    );
    block[HEADER_OFFSET + 16..HEADER_OFFSET + 20].copy_from_slice(&c.to_be_bytes());
}

fn compress8(page: &[u8], algorithm: Algorithm) -> Vec<u8> {
    let mut codec = Codec::new(ZipConfig::new(KeyBlockSize::K8, algorithm));
    match codec.compress(page, &mut ZipStats::default()).unwrap() {
        Compressed::Block(b) => b,
        other => panic!("text page did not fit: {other:?}"),
    }
}

#[test]
fn text_pages_round_trip_with_every_algorithm_and_block_size() {
    let page = text_page(1, 16384);
    for algorithm in all_algorithms() {
        for block_size in KeyBlockSize::ALL {
            let mut codec = Codec::new(ZipConfig::new(block_size, algorithm));
            let mut stats = ZipStats::default();
            let mut block = vec![0xEEu8; block_size.bytes()];
            match codec.compress_into(&page, &mut block, &mut stats).unwrap() {
                Outcome::Fits { payload_len } => {
                    let header = ZipHeader::read(&block).unwrap();
                    assert_eq!(header.payload_len, payload_len);
                    assert_eq!(header.algorithm, algorithm);
                    assert_eq!(header.block_size, block_size);
                    // The FIL header stays readable without inflating.
                    let fil = FilHeader::read(&block).unwrap();
                    assert_eq!((fil.page_no, fil.space_id, fil.lsn), (42, 7, 0xABCD_1234));
                    let restored = codec.decompress(&block, &mut stats).unwrap();
                    assert_eq!(restored, page, "{algorithm} {block_size:?}");
                    assert_eq!(stats.decompress_bytes_out, 16384);
                }
                Outcome::DoesNotFit { .. } => {
                    // 16 KiB of words from 17 distinct ones compresses far below 2 KiB with
                    // any algorithm; only 1 KiB may fail.
                    assert_eq!(block_size, KeyBlockSize::K1, "{algorithm}");
                    assert_eq!(stats.compress_failures, 1);
                }
            }
            assert_eq!(stats.compress_ops, 1);
            assert_eq!(stats.compress_bytes_in, 16384);
        }
    }
}

#[test]
fn every_logical_page_size_round_trips() {
    for size in [4096, 8192, 16384, 32768, 65536] {
        let page = text_page(size as u64, size);
        let mut codec = Codec::new(ZipConfig::new(KeyBlockSize::K4, Algorithm::default()));
        let mut stats = ZipStats::default();
        let Compressed::Block(block) = codec.compress(&page, &mut stats).unwrap() else {
            panic!("a {size}-byte text page did not fit 4 KiB");
        };
        assert_eq!(codec.decompress(&block, &mut stats).unwrap(), page);
    }
}

#[test]
fn random_bytes_do_not_fit_and_count_as_failures() {
    let page = random_page(9, 16384);
    for algorithm in [Algorithm::default(), Algorithm::Lz4] {
        let mut codec = Codec::new(ZipConfig::new(KeyBlockSize::K8, algorithm));
        let mut stats = ZipStats::default();
        let got = codec.compress(&page, &mut stats).unwrap();
        assert_eq!(
            got,
            Compressed::DoesNotFit {
                block_size: KeyBlockSize::K8,
                capacity: 8192 - PAYLOAD_OFFSET - 8
            }
        );
        assert_eq!((stats.compress_ops, stats.compress_failures), (1, 1));
        assert_eq!(stats.compress_ok(), 0);
        assert_eq!(stats.failure_pct(), 100.0);
        assert_eq!(stats.compress_bytes_out, 0);
    }
}

#[test]
fn wrong_buffers_are_errors() {
    let mut codec = Codec::new(ZipConfig::new(KeyBlockSize::K8, Algorithm::Lz4));
    let mut stats = ZipStats::default();
    let mut block = vec![0u8; 8192];
    assert_eq!(
        codec.compress_into(&[0u8; 1000], &mut block, &mut stats),
        Err(ZipError::BadPageSize { bytes: 1000 })
    );
    assert!(matches!(
        codec.compress_into(&[0u8; 16384], &mut [0u8; 4096], &mut stats),
        Err(ZipError::BadBlockSize { actual: 4096, .. })
    ));
    let mut big = Codec::new(ZipConfig::new(KeyBlockSize::K16, Algorithm::Lz4));
    assert_eq!(
        big.compress_into(&[0u8; 8192], &mut vec![0u8; 16384], &mut stats),
        Err(ZipError::BlockLargerThanPage {
            block: 16384,
            page: 8192
        })
    );
    let good = compress8(&text_page(3, 16384), Algorithm::Lz4);
    assert_eq!(
        codec.decompress_into(&good, &mut [0u8; 8192], &mut stats),
        Err(ZipError::OutputSizeMismatch {
            expected: 16384,
            actual: 8192
        })
    );
    assert!(matches!(
        codec.decompress(&good[..8000], &mut stats),
        Err(ZipError::BlockSizeMismatch { actual: 8000, .. })
    ));
    assert_eq!(stats.decompress_errors, 2);
}

#[test]
fn damaged_blocks_name_the_damage() {
    let page = text_page(5, 16384);
    let good = compress8(&page, Algorithm::default());
    let header = ZipHeader::read(&good).unwrap();
    let mut codec = Codec::new(ZipConfig::default());
    let mut stats = ZipStats::default();
    let mut run = |b: &[u8]| codec.decompress(b, &mut stats).unwrap_err();

    let mut b = good.clone();
    b[HEADER_OFFSET] ^= 0xFF;
    assert!(matches!(
        run(&b),
        ZipError::BadMagic {
            expected: MAGIC,
            ..
        }
    ));

    let mut b = good.clone();
    b[HEADER_OFFSET + 4] = 9;
    assert_eq!(
        run(&b),
        ZipError::BadVersion {
            expected: crate::format::VERSION,
            actual: 9
        }
    );

    let mut b = good.clone();
    b[HEADER_OFFSET + 5] = 3;
    assert_eq!(run(&b), ZipError::UnknownAlgorithm { actual: 3 });

    let mut b = good.clone();
    b[HEADER_OFFSET + 7] = 3; // says 4 KiB
    assert_eq!(
        run(&b),
        ZipError::BlockSizeMismatch {
            ssize: 3,
            recorded: 4096,
            actual: 8192
        }
    );

    let mut b = good.clone();
    b[HEADER_OFFSET + 8..HEADER_OFFSET + 12].copy_from_slice(&5000u32.to_be_bytes());
    assert!(matches!(
        run(&b),
        ZipError::BadLogicalSize { recorded: 5000, .. }
    ));

    let mut b = good.clone();
    b[HEADER_OFFSET + 12..HEADER_OFFSET + 16].copy_from_slice(&9000u32.to_be_bytes());
    assert!(matches!(
        run(&b),
        ZipError::PayloadTooLong {
            payload_len: 9000,
            ..
        }
    ));

    let mut b = good.clone();
    b[PAYLOAD_OFFSET + 10] ^= 1;
    assert!(matches!(run(&b), ZipError::Checksum { stored, .. } if stored == header.crc));

    let mut b = good.clone();
    b[20] ^= 1; // the FIL header's LSN is covered too
    assert!(matches!(run(&b), ZipError::Checksum { .. }));

    let mut b = good.clone();
    b[8000] = 7;
    assert_eq!(
        run(&b),
        ZipError::NonZeroPadding {
            offset: 8000,
            value: 7
        }
    );

    // A payload cut short but checksummed as if whole: the stream is truncated.
    let mut b = good.clone();
    let cut = header.payload_len / 2;
    b[HEADER_OFFSET + 12..HEADER_OFFSET + 16].copy_from_slice(&(cut as u32).to_be_bytes());
    b[PAYLOAD_OFFSET + cut..].fill(0);
    reseal(&mut b);
    assert!(matches!(
        run(&b),
        ZipError::CorruptPayload {
            algorithm: "zlib",
            ..
        }
    ));

    // A page that claims to be 32 KiB: the stream ends early.
    let mut b = good.clone();
    b[HEADER_OFFSET + 8..HEADER_OFFSET + 12].copy_from_slice(&32768u32.to_be_bytes());
    reseal(&mut b);
    assert!(matches!(
        run(&b),
        ZipError::LengthMismatch {
            expected: 32722,
            actual: 16338,
            ..
        }
    ));
}

#[test]
fn lz4_length_damage_is_typed() {
    let page = text_page(6, 16384);
    let good = compress8(&page, Algorithm::Lz4);
    let mut codec = Codec::new(ZipConfig::default());
    let mut b = good.clone();
    b[HEADER_OFFSET + 8..HEADER_OFFSET + 12].copy_from_slice(&8192u32.to_be_bytes());
    reseal(&mut b);
    assert!(matches!(
        codec.decompress(&b, &mut ZipStats::default()),
        Err(ZipError::LengthMismatch {
            algorithm: "lz4",
            expected: 8146,
            ..
        })
    ));
}

#[test]
fn stats_add_up() {
    let mut a = ZipStats {
        compress_ops: 2,
        compress_failures: 1,
        ..ZipStats::default()
    };
    let b = ZipStats {
        compress_ops: 2,
        decompress_ops: 5,
        ..ZipStats::default()
    };
    a.add(&b);
    assert_eq!(
        (a.compress_ops, a.compress_ok(), a.decompress_ops),
        (4, 3, 5)
    );
    assert_eq!(a.failure_pct(), 25.0);
}

fn algorithm_strategy() -> impl Strategy<Value = Algorithm> {
    prop_oneof![
        (1u8..=9).prop_map(|l| Algorithm::Zlib(ZlibLevel::new(l).unwrap())),
        Just(Algorithm::Lz4),
    ]
}

fn block_strategy() -> impl Strategy<Value = KeyBlockSize> {
    prop::sample::select(KeyBlockSize::ALL.to_vec())
}

/// Pages between all-random and all-text: runs of random bytes and of repeated words.
fn page_strategy() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::sample::select(vec![4096usize, 8192, 16384]),
        any::<u64>(),
        0u8..=100,
    )
        .prop_map(|(size, seed, random_pct)| {
            let text = text_page(seed, size);
            let noise = random_page(seed ^ 0x9E37_79B9, size);
            let chunk = 256;
            text.chunks(chunk)
                .zip(noise.chunks(chunk))
                .enumerate()
                .flat_map(|(i, (t, n))| {
                    if (i * 37 + seed as usize) % 100 < random_pct as usize {
                        n.to_vec()
                    } else {
                        t.to_vec()
                    }
                })
                .collect()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Whatever fits comes back byte for byte; what does not fit is an outcome, not an error.
    #[test]
    fn round_trip(page in page_strategy(), algorithm in algorithm_strategy(), block_size in block_strategy()) {
        let mut codec = Codec::new(ZipConfig::new(block_size, algorithm));
        let mut stats = ZipStats::default();
        match codec.compress(&page, &mut stats) {
            Ok(Compressed::Block(block)) => {
                prop_assert_eq!(block.len(), block_size.bytes());
                prop_assert_eq!(codec.decompress(&block, &mut stats).unwrap(), page);
            }
            Ok(Compressed::DoesNotFit { .. }) => prop_assert_eq!(stats.compress_failures, 1),
            Err(ZipError::BlockLargerThanPage { .. }) => prop_assert!(block_size.bytes() > page.len()),
            Err(e) => prop_assert!(false, "unexpected error {e}"),
        }
    }

    /// Damaged blocks (bytes changed, with or without a fixed-up checksum, or cut short)
    /// never panic; when they decode at all, they decode to the original page.
    #[test]
    fn corruption_never_panics(
        seed in any::<u64>(),
        algorithm in algorithm_strategy(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        fix_crc in any::<bool>(),
        cut in prop::option::of(any::<prop::sample::Index>()),
    ) {
        let page = text_page(seed, 16384);
        let mut block = compress8(&page, algorithm);
        for (at, value) in &edits {
            let i = at.index(block.len());
            block[i] = *value;
        }
        if fix_crc {
            reseal(&mut block);
        }
        if let Some(cut) = cut {
            block.truncate(cut.index(block.len()));
        }
        let mut codec = Codec::new(ZipConfig::default());
        let mut stats = ZipStats::default();
        // The FIL header and trailer are stored verbatim: an edit there under a fixed-up CRC
        // is another valid page. The body is what must never come back altered, unless the
        // CRC was fixed up over an LZ4 payload: LZ4 carries no checksum of its own (zlib's
        // Adler-32 still catches the edit), so the block's CRC-32C is its only protection and
        // a changed literal decodes to a changed page. Either way nothing panics.
        let body = 38..16384 - 8;
        let unprotected = fix_crc && algorithm == Algorithm::Lz4;
        if let Ok(restored) = codec.decompress(&block, &mut stats)
            && !unprotected
        {
            prop_assert_eq!(&restored[body.clone()], &page[body.clone()]);
        }
        let mut out = vec![0u8; 16384];
        if codec.decompress_into(&block, &mut out, &mut stats).is_ok() && !unprotected {
            prop_assert_eq!(&out[body.clone()], &page[body]);
        }
        let _ = ZipHeader::read(&block);
    }

    /// Arbitrary bytes as a block: an error, never a panic.
    #[test]
    fn arbitrary_blocks_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..9000), magic in any::<bool>()) {
        let mut bytes = bytes;
        if magic && bytes.len() >= PAYLOAD_OFFSET {
            bytes[HEADER_OFFSET..HEADER_OFFSET + 4].copy_from_slice(&MAGIC.to_be_bytes());
            bytes[HEADER_OFFSET + 4] = crate::format::VERSION;
        }
        let mut codec = Codec::new(ZipConfig::default());
        prop_assert!(codec.decompress(&bytes, &mut ZipStats::default()).is_err());
    }
}

#[test]
fn the_trailer_is_kept_verbatim_and_reheader_restamps_without_compressing() {
    let mut page = text_page(11, 16384);
    page[16384 - 8..].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
    let mut codec = Codec::new(ZipConfig::new(KeyBlockSize::K8, Algorithm::default()));
    let mut stats = ZipStats::default();
    let mut block = vec![0u8; 8192];
    let Outcome::Fits { payload_len } = codec.compress_into(&page, &mut block, &mut stats).unwrap()
    else {
        panic!("text page must fit")
    };
    assert_eq!(&block[8192 - 8..], &[1, 2, 3, 4, 5, 6, 7, 8]);
    // The trailer changes: the payload does not depend on it.
    let mut restamped = page.clone();
    restamped[16..24].copy_from_slice(&0x1122_3344_5566_7788u64.to_be_bytes());
    restamped[16384 - 8..].copy_from_slice(&[9; 8]);
    let mut again = vec![0u8; 8192];
    codec
        .compress_into(&restamped, &mut again, &mut stats)
        .unwrap();
    assert_eq!(
        &again[PAYLOAD_OFFSET..PAYLOAD_OFFSET + payload_len],
        &block[PAYLOAD_OFFSET..PAYLOAD_OFFSET + payload_len]
    );
    // reheader turns the old block into the new one without compressing.
    let ops = stats.compress_ops;
    crate::format::reheader(&mut block, &restamped).unwrap();
    assert_eq!(block, again);
    assert_eq!(stats.compress_ops, ops);
    assert_eq!(codec.decompress(&block, &mut stats).unwrap(), restamped);
    // A flipped trailer bit is caught by the CRC.
    block[8191] ^= 1;
    assert!(matches!(
        codec.decompress(&block, &mut stats),
        Err(ZipError::Checksum { .. })
    ));
    // reheader refuses something that is not a block, and a page of the wrong size.
    assert!(crate::format::reheader(&mut vec![0u8; 8192], &restamped).is_err());
    assert!(crate::format::reheader(&mut again, &restamped[..8192]).is_err());
}
