use super::*;
use crate::fil::{FilHeader, PageType};
use proptest::prelude::*;

/// The page of innodb-facts.md's worked test vector: 16 KiB, zero except page 3, no siblings,
/// LSN 0x1234, type INDEX, space 5, LSN copy in the trailer.
fn vector_page() -> Vec<u8> {
    let mut page = vec![0u8; 16384];
    let mut h = FilHeader::new(5, 3, PageType::Index);
    h.lsn = 0x1234;
    h.write(&mut page).unwrap();
    page[16376..16384].copy_from_slice(&0x1234u64.to_be_bytes());
    page
}

fn policy(algorithm: ChecksumAlgorithm, strict: bool) -> ChecksumPolicy {
    ChecksumPolicy { algorithm, strict }
}

#[test]
fn test_vector_from_the_brief() {
    let page = vector_page();
    assert_eq!(
        hex(&page[4..38]),
        "00000003ffffffffffffffff000000000000123445bf000000000000000000000005"
    );
    assert_eq!(crc32(&page).unwrap(), 0x7910_4CA5);
    assert_eq!(crc32_legacy_big_endian(&page).unwrap(), 0x08EE_CC71);
    assert_eq!(innodb_new(&page).unwrap(), 0xE647_BA3F);

    let mut stamped = page.clone();
    stamp(&mut stamped, ChecksumAlgorithm::Crc32).unwrap();
    assert_eq!(hex(&stamped[0..4]), "79104ca5");
    assert_eq!(hex(&stamped[16376..]), "79104ca500001234");

    let mut stamped = page;
    stamp(&mut stamped, ChecksumAlgorithm::Innodb).unwrap();
    assert_eq!(hex(&stamped[0..4]), "e647ba3f");
    assert_eq!(hex(&stamped[16376..16380]), "90f9c895");
    assert_eq!(
        verify(&stamped, policy(ChecksumAlgorithm::Innodb, true)),
        Ok(Verdict::Valid(Matched::Innodb))
    );
}

#[test]
fn all_zero_page_values_and_empty_rule() {
    let page = vec![0u8; 16384];
    assert_eq!(crc32(&page).unwrap(), 0x1FFD_D4D2);
    assert_eq!(innodb_new(&page).unwrap(), 0x5DEF_CC00);
    for algorithm in [ChecksumAlgorithm::Crc32, ChecksumAlgorithm::Innodb] {
        for strict in [false, true] {
            assert_eq!(verify(&page, policy(algorithm, strict)), Ok(Verdict::Empty));
        }
    }
    assert_eq!(
        verify(&page, policy(ChecksumAlgorithm::FullCrc32, false)),
        Ok(Verdict::Empty)
    );
    // Bytes 26..34 may be set on an otherwise empty page; anything else may not.
    let mut flush_lsn = page.clone();
    flush_lsn[30] = 7;
    assert_eq!(
        verify(&flush_lsn, ChecksumPolicy::default()),
        Ok(Verdict::Empty)
    );
    let mut dirty = page;
    dirty[5000] = 1;
    assert_eq!(
        verify(&dirty, ChecksumPolicy::default()),
        Err(Corruption::NotEmpty { offset: 5000 })
    );
}

#[test]
fn every_algorithm_round_trips_at_every_page_size() {
    for size in PageSize::ALL {
        for algorithm in ChecksumAlgorithm::ALL {
            let mut page = vec![0u8; size.bytes()];
            let mut h = FilHeader::new(9, 42, PageType::Index);
            h.lsn = 0x0102_0304_0506_0708;
            h.write(&mut page).unwrap();
            for (i, b) in page.iter_mut().enumerate().skip(38).take(size.bytes() - 46) {
                *b = (i * 31 % 251) as u8;
            }
            stamp(&mut page, algorithm).unwrap();
            let expected = match algorithm {
                ChecksumAlgorithm::Crc32 => Matched::Crc32,
                ChecksumAlgorithm::Innodb => Matched::Innodb,
                ChecksumAlgorithm::None => Matched::None,
                ChecksumAlgorithm::FullCrc32 => Matched::FullCrc32,
            };
            assert_eq!(
                verify(&page, policy(algorithm, true)),
                Ok(Verdict::Valid(expected)),
                "{algorithm} at {size}"
            );
        }
    }
}

#[test]
fn non_strict_accepts_other_algorithms_strict_does_not() {
    let mut page = vector_page();
    stamp(&mut page, ChecksumAlgorithm::Innodb).unwrap();
    assert_eq!(
        verify(&page, policy(ChecksumAlgorithm::Crc32, false)),
        Ok(Verdict::Valid(Matched::Innodb))
    );
    let err = verify(&page, policy(ChecksumAlgorithm::Crc32, true)).unwrap_err();
    assert_eq!(
        err,
        Corruption::Checksum {
            algorithm: ChecksumAlgorithm::Crc32,
            stored_first: 0xE647_BA3F,
            stored_second: 0x90F9_C895,
            computed_first: 0x7910_4CA5,
            computed_second: 0x7910_4CA5,
        }
    );
    assert!(err.to_string().contains("0x7910"));

    let mut none = vector_page();
    stamp(&mut none, ChecksumAlgorithm::None).unwrap();
    assert_eq!(
        verify(&none, policy(ChecksumAlgorithm::Innodb, false)),
        Ok(Verdict::Valid(Matched::None))
    );
    assert!(verify(&none, policy(ChecksumAlgorithm::Innodb, true)).is_err());
    // Policy none, not strict, checks only the LSN words.
    let mut garbage = vector_page();
    garbage[100] = 1;
    assert_eq!(
        verify(&garbage, ChecksumPolicy::new(ChecksumAlgorithm::None)),
        Ok(Verdict::NotChecked)
    );
}

#[test]
fn legacy_big_endian_crc32_is_accepted_as_crc32() {
    let mut page = vector_page();
    page[0..4].copy_from_slice(&0x08EE_CC71u32.to_be_bytes());
    page[16376..16380].copy_from_slice(&0x08EE_CC71u32.to_be_bytes());
    assert_eq!(
        verify(&page, policy(ChecksumAlgorithm::Crc32, true)),
        Ok(Verdict::Valid(Matched::Crc32LegacyBigEndian))
    );
}

#[test]
fn torn_trailer_is_an_lsn_mismatch() {
    let mut page = vector_page();
    stamp(&mut page, ChecksumAlgorithm::Crc32).unwrap();
    page[16380..16384].copy_from_slice(&0x9999u32.to_be_bytes());
    assert_eq!(
        verify(&page, ChecksumPolicy::default()),
        Err(Corruption::LsnMismatch {
            header: 0x1234,
            trailer: 0x9999
        })
    );
}

#[test]
fn full_crc32_checks_lsn_after_checksum_and_handles_compressed_sizes() {
    let mut page = vector_page();
    stamp(&mut page, ChecksumAlgorithm::FullCrc32).unwrap();
    assert_eq!(hex(&page[16376..16380]), "00001234");
    // A header LSN that disagrees with the trailer copy, with a checksum that matches.
    page[23] = 0x35;
    let sum = full_crc32(&page).unwrap();
    page[16380..].copy_from_slice(&sum.to_be_bytes());
    assert_eq!(
        verify(&page, ChecksumPolicy::new(ChecksumAlgorithm::FullCrc32)),
        Err(Corruption::LsnMismatch {
            header: 0x1235,
            trailer: 0x1234
        })
    );
    // Page-compressed marker with an impossible size.
    let mut compressed = vector_page();
    compressed[24..26].copy_from_slice(&(0x8000u16 | 0x7FFF).to_be_bytes());
    assert!(matches!(
        verify(
            &compressed,
            ChecksumPolicy::new(ChecksumAlgorithm::FullCrc32)
        ),
        Err(Corruption::BadCompressedSize { .. })
    ));
    // A valid page-compressed page: 1 KiB of payload, checksum in its last 4 bytes.
    let mut small = vec![0u8; 16384];
    small[24..26].copy_from_slice(&(0x8000u16 | 4).to_be_bytes());
    small[100] = 9;
    let sum = crc::crc32c(&small[..1020]);
    small[1020..1024].copy_from_slice(&sum.to_be_bytes());
    assert_eq!(
        verify(&small, ChecksumPolicy::new(ChecksumAlgorithm::FullCrc32)),
        Ok(Verdict::Valid(Matched::FullCrc32))
    );
}

#[test]
fn policy_names_and_space_rules() {
    let p: ChecksumPolicy = "strict_full_crc32".parse().unwrap();
    assert_eq!(p, policy(ChecksumAlgorithm::FullCrc32, true));
    assert_eq!(p.to_string(), "strict_full_crc32");
    assert!("adler".parse::<ChecksumPolicy>().is_err());
    let classic = crate::fsp::FspFlags(0x21);
    let fcrc = crate::fsp::FspFlags(0x15);
    assert_eq!(p.for_space(classic).algorithm, ChecksumAlgorithm::Crc32);
    assert_eq!(
        ChecksumPolicy::default().for_space(fcrc).algorithm,
        ChecksumAlgorithm::FullCrc32
    );
}

#[test]
fn wrong_lengths_are_errors() {
    for len in [0, 37, 46, 1000, 16383, 16385] {
        let page = vec![0u8; len];
        assert!(matches!(
            verify(&page, ChecksumPolicy::default()),
            Err(Corruption::Malformed(_))
        ));
        assert!(crc32(&page).is_err());
        assert!(stamp(&mut page.clone(), ChecksumAlgorithm::Crc32).is_err());
    }
}

#[test]
fn experimental_checksums_detect_changes() {
    let a = vector_page();
    let mut b = a.clone();
    b[200] ^= 1;
    assert_ne!(experimental::crc32_ieee(&a), experimental::crc32_ieee(&b));
    assert_ne!(experimental::fletcher64(&a), experimental::fletcher64(&b));
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn random_page(size: PageSize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut page: Vec<u8> = (0..size.bytes())
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    // A plausible non-zero LSN, so the empty-page rule never applies, and an INDEX page type
    // (a random type could carry full_crc32's page-compressed marker bit).
    page[16] = 1;
    page[24..26].copy_from_slice(&PageType::Index.to_u16().to_be_bytes());
    page
}

fn size_strategy() -> impl Strategy<Value = PageSize> {
    prop::sample::select(PageSize::ALL.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn write_then_verify_round_trips(size in size_strategy(), seed: u64, alg in 0usize..4) {
        let algorithm = ChecksumAlgorithm::ALL[alg];
        let mut page = random_page(size, seed);
        stamp(&mut page, algorithm).unwrap();
        let verdict = verify(&page, ChecksumPolicy { algorithm, strict: true });
        prop_assert!(matches!(verdict, Ok(Verdict::Valid(_))), "{:?}", verdict);
    }

    #[test]
    fn any_single_bit_flip_in_a_covered_byte_is_detected(
        size in size_strategy(),
        seed: u64,
        alg in prop::sample::select(vec![
            ChecksumAlgorithm::Crc32,
            ChecksumAlgorithm::Innodb,
            ChecksumAlgorithm::FullCrc32,
        ]),
        at in any::<prop::sample::Index>(),
        bit in 0u8..8,
    ) {
        let mut page = random_page(size, seed);
        stamp(&mut page, alg).unwrap();
        // crc32 and innodb leave the flush LSN and space id (26..38) uncovered.
        let covered: Vec<usize> = (0..size.bytes())
            .filter(|&i| alg == ChecksumAlgorithm::FullCrc32 || !(26..38).contains(&i))
            .collect();
        let i = covered[at.index(covered.len())];
        page[i] ^= 1 << bit;
        // The one undetectable flip for innodb: turning a stored "new" field into zero, which
        // InnoDB accepts for pre-4.0.14 pages. Only possible if the field had a single bit set.
        let zeroed_new = alg == ChecksumAlgorithm::Innodb && i < 4 && page[0..4] == [0; 4];
        prop_assume!(!zeroed_new);
        let verdict = verify(&page, ChecksumPolicy { algorithm: alg, strict: true });
        prop_assert!(verdict.is_err(), "flip at {} bit {} accepted: {:?}", i, bit, verdict);
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..200),
        len in prop::sample::select(vec![0usize, 38, 45, 4096, 8192, 16384]),
        policy_idx in 0usize..8,
    ) {
        let mut page = bytes.clone();
        page.resize(len.max(bytes.len()), 0xA5);
        let algorithm = ChecksumAlgorithm::ALL[policy_idx % 4];
        let _ = verify(&page, ChecksumPolicy { algorithm, strict: policy_idx >= 4 });
        let _ = FilHeader::read(&page);
        let _ = crate::fil::FilTrailer::read(&page);
        let _ = crate::fsp::FspHeader::read(&page);
        if let Ok(h) = crate::index::IndexHeader::read(&page) {
            let _ = h.directory(&page);
        }
        let _ = crate::fsp::read_flags(&page).map(|f| f.page_size());
    }
}
