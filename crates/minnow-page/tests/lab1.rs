//! Lab 1 (page checksums): the graded tests, smallest first. docs/labs/01-checksums.md is the
//! handout; `cargo xtask lab grade 1` runs these with the engine's own checksum tests.

use minnow_page::checksum::{
    ChecksumAlgorithm, ChecksumPolicy, Corruption, Matched, Verdict, crc32, stamp, verify,
};
use minnow_page::crc::crc32c;
use minnow_page::fil::{FilHeader, PageType};
use minnow_page::{PageError, PageSize};

const N: usize = 16384;

/// innodb-facts.md's worked test vector: 16 KiB, zero except page 3, no siblings, LSN 0x1234,
/// type INDEX, space 5, and the LSN's copy in the trailer.
fn vector_page() -> Vec<u8> {
    let mut page = vec![0u8; N];
    let mut h = FilHeader::new(5, 3, PageType::Index);
    h.lsn = 0x1234;
    h.write(&mut page).unwrap();
    page[N - 8..].copy_from_slice(&0x1234u64.to_be_bytes());
    page
}

/// A page of `size` with deterministic, non-zero contents and a consistent LSN.
fn filled_page(size: usize, seed: u32) -> Vec<u8> {
    let mut x = seed.wrapping_mul(2_654_435_761) | 1;
    let mut page: Vec<u8> = (0..size)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect();
    let lsn = page[20..24].to_vec();
    page[size - 4..].copy_from_slice(&lsn);
    page
}

fn u32_at(page: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(page[at..at + 4].try_into().unwrap())
}

fn policy(algorithm: ChecksumAlgorithm, strict: bool) -> ChecksumPolicy {
    ChecksumPolicy { algorithm, strict }
}

#[test]
fn crc32_of_an_all_zero_page() {
    assert_eq!(crc32(&vec![0u8; N]).unwrap(), 0x1FFD_D4D2);
}

#[test]
fn crc32_matches_the_test_vector() {
    assert_eq!(crc32(&vector_page()).unwrap(), 0x7910_4CA5);
}

#[test]
fn crc32_is_two_crc32c_values_xored() {
    let page = filled_page(N, 7);
    let expected = crc32c(&page[4..26]) ^ crc32c(&page[38..N - 8]);
    assert_eq!(crc32(&page).unwrap(), expected);
}

#[test]
fn crc32_ignores_exactly_the_uncovered_bytes() {
    let page = filled_page(N, 11);
    let base = crc32(&page).unwrap();
    for at in (0..4).chain(26..38).chain(N - 8..N) {
        let mut p = page.clone();
        p[at] ^= 0x5A;
        assert_eq!(
            crc32(&p).unwrap(),
            base,
            "byte {at} is not covered by crc32"
        );
    }
    for at in [4, 25, 38, N - 9] {
        let mut p = page.clone();
        p[at] ^= 0x5A;
        assert_ne!(crc32(&p).unwrap(), base, "byte {at} is covered by crc32");
    }
}

#[test]
fn crc32_rejects_a_buffer_that_is_not_a_page() {
    assert!(matches!(
        crc32(&[0u8; 1000]),
        Err(PageError::BadPageSize { bytes: 1000 })
    ));
}

#[test]
fn stamp_crc32_writes_both_fields_and_the_lsn_copy() {
    let mut page = vector_page();
    page[N - 4..].fill(0);
    stamp(&mut page, ChecksumAlgorithm::Crc32).unwrap();
    assert_eq!(u32_at(&page, 0), 0x7910_4CA5);
    assert_eq!(u32_at(&page, N - 8), 0x7910_4CA5);
    assert_eq!(
        u32_at(&page, N - 4),
        0x1234,
        "the trailer holds the LSN's low word"
    );
}

#[test]
fn stamp_innodb_writes_the_new_checksum_first_then_the_old() {
    let mut page = vector_page();
    stamp(&mut page, ChecksumAlgorithm::Innodb).unwrap();
    assert_eq!(u32_at(&page, 0), 0xE647_BA3F, "the new formula at offset 0");
    assert_eq!(
        u32_at(&page, N - 8),
        0x90F9_C895,
        "the old formula covers bytes 0..26, including the new checksum just written"
    );
}

#[test]
fn stamp_then_verify_round_trips_at_every_page_size() {
    for (i, size) in PageSize::ALL.into_iter().enumerate() {
        for algorithm in [
            ChecksumAlgorithm::Crc32,
            ChecksumAlgorithm::Innodb,
            ChecksumAlgorithm::None,
        ] {
            let mut page = filled_page(size.bytes(), i as u32 + 1);
            stamp(&mut page, algorithm).unwrap();
            let verdict = verify(&page, policy(algorithm, true));
            assert!(
                matches!(verdict, Ok(Verdict::Valid(_))),
                "{algorithm} at {size:?}: {verdict:?}"
            );
        }
    }
}

#[test]
fn verify_compares_the_lsn_words_before_any_checksum() {
    let mut page = vector_page();
    stamp(&mut page, ChecksumAlgorithm::Crc32).unwrap();
    page[N - 1] ^= 1; // the trailer's LSN copy
    page[100] = 9; // and a body byte: the checksum is wrong too
    assert_eq!(
        verify(&page, ChecksumPolicy::default()),
        Err(Corruption::LsnMismatch {
            header: 0x1234,
            trailer: 0x1235
        })
    );
}

#[test]
fn verify_accepts_an_all_zero_page_and_nothing_else_with_zero_checksums() {
    let page = vec![0u8; N];
    for algorithm in [ChecksumAlgorithm::Crc32, ChecksumAlgorithm::Innodb] {
        assert_eq!(verify(&page, policy(algorithm, true)), Ok(Verdict::Empty));
    }
    let mut dirty = page;
    dirty[9000] = 1;
    assert_eq!(
        verify(&dirty, ChecksumPolicy::default()),
        Err(Corruption::NotEmpty { offset: 9000 })
    );
}

#[test]
fn verify_tries_the_other_algorithms_unless_strict() {
    let mut page = vector_page();
    stamp(&mut page, ChecksumAlgorithm::Innodb).unwrap();
    assert_eq!(
        verify(&page, policy(ChecksumAlgorithm::Crc32, false)),
        Ok(Verdict::Valid(Matched::Innodb))
    );
    assert!(matches!(
        verify(&page, policy(ChecksumAlgorithm::Crc32, true)),
        Err(Corruption::Checksum { .. })
    ));
    let mut none = vector_page();
    stamp(&mut none, ChecksumAlgorithm::None).unwrap();
    assert_eq!(
        verify(&none, policy(ChecksumAlgorithm::Innodb, false)),
        Ok(Verdict::Valid(Matched::None))
    );
}

#[test]
fn verify_reports_what_was_stored_and_what_was_expected() {
    let mut page = vector_page();
    stamp(&mut page, ChecksumAlgorithm::Crc32).unwrap();
    page[5000] ^= 0x80;
    let expected = crc32(&page).unwrap();
    assert_eq!(
        verify(&page, ChecksumPolicy::default()),
        Err(Corruption::Checksum {
            algorithm: ChecksumAlgorithm::Crc32,
            stored_first: 0x7910_4CA5,
            stored_second: 0x7910_4CA5,
            computed_first: expected,
            computed_second: expected,
        })
    );
}
