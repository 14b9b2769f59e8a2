//! Checksums of InnoDB's ROW_FORMAT=COMPRESSED pages (`page_zip_calc_checksum`).
//!
//! A compressed tablespace stores every page, whatever its type, in a *physical* page of
//! `KEY_BLOCK_SIZE` bytes (1, 2, 4, 8 or 16 KiB; page 0's FSP flags say which). Such a page
//! keeps the 38-byte FIL header but has **no FIL trailer**: the last bytes belong to the dense
//! page directory. So there is one checksum, at offset 0, and no second LSN copy to compare.
//! It covers three ranges, leaving out the checksum itself, the LSN (16..24) and the flush LSN
//! (26..34), which InnoDB may rewrite without recomputing it:
//!
//! ```text
//!  0      4        16        24   26         34                                    N
//!  +------+--------+---------+----+----------+-------------------------------------+
//!  | sum  | page,  |   LSN   |type| flush LSN| space id, then the body             |
//!  |      | prev,  | (not    |    | (not     |                                     |
//!  |      | next   | covered)|    | covered) |                                     |
//!  +------+--------+---------+----+----------+-------------------------------------+
//!          [4, 16)            [24, 26)        [34, N)
//! ```
//!
//! | algorithm | value at offset 0                                             |
//! |-----------|---------------------------------------------------------------|
//! | `crc32`   | CRC-32C([4,16)) ^ CRC-32C([24,26)) ^ CRC-32C([34,N))          |
//! | `innodb`  | Adler-32 run over the three ranges in order, **started at 0** (zlib's `adler32(0L, ...)`, not the usual 1) |
//! | `none`    | 0xDEADBEEF                                                    |
//!
//! `full_crc32` has no compressed-page form: MariaDB keeps ROW_FORMAT=COMPRESSED tablespaces
//! in the older flags layout and checks them with the `crc32` rule above.
//!
//! ## Verification order (`page_zip_verify_checksum`)
//!
//! A page whose checksum field and LSN are zero must be entirely zero (freshly allocated).
//! Under a non-strict `none` policy nothing more is checked. Otherwise the configured
//! algorithm is tried first, and unless the policy is strict, the others after it (a
//! tablespace may hold pages written under an older setting). MariaDB 10.11's server reads
//! pages this way; its `innochecksum` accepts only `crc32` on compressed pages.

use crate::PageError;
use crate::bytes::{read_u32, read_u64, slice, write_u32};
use crate::checksum::{
    ChecksumAlgorithm, ChecksumPolicy, Corruption, Matched, NO_CHECKSUM_MAGIC, Verdict,
};
use crate::crc;

/// The physical page sizes a compressed tablespace may use (`KEY_BLOCK_SIZE` 1 to 16 KiB).
pub const ZIP_SIZES: [usize; 5] = [1024, 2048, 4096, 8192, 16384];

/// `FIL_PAGE_LSN`: the first byte the checksum leaves out after the page number and siblings.
const LSN: usize = 16;
/// `FIL_PAGE_TYPE`: the two bytes covered between the two LSN fields.
const TYPE: usize = 24;
/// `FIL_PAGE_ARCH_LOG_NO_OR_SPACE_ID`: where the covered body starts.
const SPACE_ID: usize = 34;

/// Adler-32's modulus.
const ADLER_MOD: u32 = 65_521;

/// Checks that `page` is one compressed page long.
fn check_zip_len(page: &[u8]) -> Result<usize, PageError> {
    let n = page.len();
    if ZIP_SIZES.contains(&n) {
        Ok(n)
    } else {
        Err(PageError::BadPageSize { bytes: n })
    }
}

/// The three ranges the checksum covers.
fn ranges(page: &[u8]) -> Result<[&[u8]; 3], PageError> {
    let n = check_zip_len(page)?;
    Ok([
        slice(page, 4, LSN - 4)?,
        slice(page, TYPE, 2)?,
        slice(page, SPACE_ID, n - SPACE_ID)?,
    ])
}

/// The `crc32` checksum of a compressed page: the XOR of the three ranges' CRC-32C values.
pub fn crc32(page: &[u8]) -> Result<u32, PageError> {
    Ok(ranges(page)?
        .iter()
        .fold(0, |sum, part| sum ^ crc::crc32c(part)))
}

/// The `innodb` checksum of a compressed page: Adler-32 over the three ranges, started at 0.
pub fn innodb(page: &[u8]) -> Result<u32, PageError> {
    let (mut a, mut b) = (0u32, 0u32);
    for part in ranges(page)? {
        // 5552 bytes is the longest run whose sums cannot overflow 32 bits (zlib's NMAX).
        for chunk in part.chunks(5552) {
            for &byte in chunk {
                a += u32::from(byte);
                b += a;
            }
            a %= ADLER_MOD;
            b %= ADLER_MOD;
        }
    }
    Ok((b << 16) | a)
}

/// What `algorithm` stores at offset 0 of this compressed page (`full_crc32` means `crc32`).
pub fn expected(page: &[u8], algorithm: ChecksumAlgorithm) -> Result<u32, PageError> {
    match algorithm {
        ChecksumAlgorithm::Crc32 | ChecksumAlgorithm::FullCrc32 => crc32(page),
        ChecksumAlgorithm::Innodb => innodb(page),
        ChecksumAlgorithm::None => check_zip_len(page).map(|_| NO_CHECKSUM_MAGIC),
    }
}

/// Writes the checksum of `algorithm` at offset 0, as InnoDB does before writing the page.
pub fn stamp(page: &mut [u8], algorithm: ChecksumAlgorithm) -> Result<(), PageError> {
    let sum = expected(page, algorithm)?;
    write_u32(page, 0, sum)
}

/// Checks one compressed page under `policy`, in `page_zip_verify_checksum`'s order (see the
/// module docs). A mismatch is [`Corruption::Checksum`] with the single stored field in both
/// `stored_*` and what the policy's algorithm computes in both `computed_*`.
pub fn verify(page: &[u8], policy: ChecksumPolicy) -> Result<Verdict, Corruption> {
    check_zip_len(page)?;
    let stored = read_u32(page, 0)?;
    if stored == 0 && read_u64(page, LSN)? == 0 {
        return match page.iter().position(|&b| b != 0) {
            None => Ok(Verdict::Empty),
            Some(offset) => Err(Corruption::NotEmpty { offset }),
        };
    }
    let algorithm = match policy.algorithm {
        ChecksumAlgorithm::FullCrc32 => ChecksumAlgorithm::Crc32,
        other => other,
    };
    if algorithm == ChecksumAlgorithm::None && !policy.strict {
        return Ok(Verdict::NotChecked);
    }
    let order: &[ChecksumAlgorithm] = match (algorithm, policy.strict) {
        (_, true) => &[algorithm],
        (ChecksumAlgorithm::Innodb, false) => &[
            ChecksumAlgorithm::Innodb,
            ChecksumAlgorithm::None,
            ChecksumAlgorithm::Crc32,
        ],
        (_, false) => &[
            ChecksumAlgorithm::Crc32,
            ChecksumAlgorithm::None,
            ChecksumAlgorithm::Innodb,
        ],
    };
    for &candidate in order {
        if expected(page, candidate)? == stored {
            return Ok(Verdict::Valid(match candidate {
                ChecksumAlgorithm::Innodb => Matched::Innodb,
                ChecksumAlgorithm::None => Matched::None,
                _ => Matched::Crc32,
            }));
        }
    }
    let computed = expected(page, algorithm)?;
    Err(Corruption::Checksum {
        algorithm,
        stored_first: stored,
        stored_second: stored,
        computed_first: computed,
        computed_second: computed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A compressed-looking page: a FIL header and some body bytes.
    fn page(size: usize) -> Vec<u8> {
        let mut p = vec![0u8; size];
        p[4..8].copy_from_slice(&3u32.to_be_bytes());
        p[16..24].copy_from_slice(&0x1234_5678u64.to_be_bytes());
        p[24..26].copy_from_slice(&17855u16.to_be_bytes());
        for (i, b) in p.iter_mut().enumerate().skip(38) {
            *b = (i * 7 % 251) as u8;
        }
        p
    }

    /// zlib's adler32 of "abc" started at 0 is 0x024a0126 (Python: `zlib.adler32(b"abc", 0)`
    /// is 38404390); the page checksum is the same sum over the covered ranges.
    #[test]
    fn innodb_is_adler32_started_at_zero() {
        let mut p = vec![0u8; 1024];
        p[34..37].copy_from_slice(b"abc");
        // The other covered bytes are zero: they add nothing to a, and b only through a, which
        // is 0 before "abc" and constant after it, so b grows by a for each trailing zero.
        let trailing = (1024 - 37) as u32;
        let a = u32::from(b'a') + u32::from(b'b') + u32::from(b'c');
        let b_abc = 38_404_390u32 >> 16;
        let want = (((b_abc + a * trailing) % ADLER_MOD) << 16) | a;
        assert_eq!(innodb(&p).unwrap(), want);
        assert_eq!(38_404_390u32 & 0xFFFF, a);
    }

    #[test]
    fn crc32_ignores_the_lsn_fields_and_covers_the_rest() {
        let p = page(2048);
        let base = crc32(&p).unwrap();
        for skipped in [0, 16, 23, 26, 33] {
            let mut q = p.clone();
            q[skipped] ^= 0xFF;
            assert_eq!(crc32(&q).unwrap(), base, "byte {skipped} is not covered");
        }
        for covered in [4, 15, 24, 25, 34, 2047] {
            let mut q = p.clone();
            q[covered] ^= 0xFF;
            assert_ne!(crc32(&q).unwrap(), base, "byte {covered} is covered");
        }
    }

    #[test]
    fn stamped_pages_verify_for_every_size_and_algorithm() {
        for size in ZIP_SIZES {
            for algo in [
                ChecksumAlgorithm::Crc32,
                ChecksumAlgorithm::Innodb,
                ChecksumAlgorithm::None,
            ] {
                let mut p = page(size);
                stamp(&mut p, algo).unwrap();
                let strict = ChecksumPolicy {
                    algorithm: algo,
                    strict: true,
                };
                let want = match algo {
                    ChecksumAlgorithm::Innodb => Matched::Innodb,
                    ChecksumAlgorithm::None => Matched::None,
                    _ => Matched::Crc32,
                };
                assert_eq!(verify(&p, strict), Ok(Verdict::Valid(want)));
                let lenient = ChecksumPolicy::new(ChecksumAlgorithm::Crc32);
                assert_eq!(verify(&p, lenient), Ok(Verdict::Valid(want)));
            }
        }
    }

    #[test]
    fn strict_policies_refuse_other_algorithms_and_flips_are_caught() {
        let mut p = page(4096);
        stamp(&mut p, ChecksumAlgorithm::Innodb).unwrap();
        let strict_crc = ChecksumPolicy {
            algorithm: ChecksumAlgorithm::Crc32,
            strict: true,
        };
        let err = verify(&p, strict_crc).unwrap_err();
        let Corruption::Checksum {
            stored_first,
            computed_first,
            ..
        } = err
        else {
            panic!("expected a checksum mismatch, got {err:?}");
        };
        assert_eq!(stored_first, innodb(&p).unwrap());
        assert_eq!(computed_first, crc32(&p).unwrap());
        p[100] ^= 1;
        let lenient = ChecksumPolicy::new(ChecksumAlgorithm::Crc32);
        assert!(matches!(
            verify(&p, lenient),
            Err(Corruption::Checksum { .. })
        ));
        // Under `none` only the empty-page rule applies.
        let none = ChecksumPolicy::new(ChecksumAlgorithm::None);
        assert_eq!(verify(&p, none), Ok(Verdict::NotChecked));
    }

    #[test]
    fn empty_pages_and_wrong_lengths() {
        let lenient = ChecksumPolicy::new(ChecksumAlgorithm::Crc32);
        let mut p = vec![0u8; 8192];
        assert_eq!(verify(&p, lenient), Ok(Verdict::Empty));
        p[5000] = 1;
        assert_eq!(
            verify(&p, lenient),
            Err(Corruption::NotEmpty { offset: 5000 })
        );
        assert!(matches!(
            verify(&[0u8; 3000], lenient),
            Err(Corruption::Malformed(PageError::BadPageSize {
                bytes: 3000
            }))
        ));
        assert!(crc32(&[0u8; 32768]).is_err());
    }
}
