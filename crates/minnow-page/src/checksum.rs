//! Page checksums, byte-compatible with InnoDB and MariaDB.
//!
//! A checksum is how a storage engine notices that the bytes it reads are not the bytes it
//! wrote: a torn write during a power cut, a firmware bug, a flipped bit on a bus. InnoDB has
//! used four formulas over the years, and a real `.ibd` file may carry any of them, so minnow
//! computes and accepts all four exactly as InnoDB does (`buf/checksum.cc`, MariaDB
//! `buf0buf.cc`):
//!
//! | algorithm    | field at 0                  | field at N-8           | covers                  |
//! |--------------|-----------------------------|------------------------|-------------------------|
//! | `crc32`      | CRC-32C(4..26) ^ CRC-32C(38..N-8) | the same value   | all but 0..4, 26..38, trailer |
//! | `innodb`     | "new" fold of 4..26 and 38..N-8 | "old" fold of 0..26 | the legacy formula      |
//! | `none`       | 0xDEADBEEF                  | 0xDEADBEEF             | nothing                 |
//! | `full_crc32` | key version (0)             | LSN low word; CRC-32C(0..N-4) in the last 4 bytes | everything but the checksum |
//!
//! Notice what `crc32` leaves out: bytes 26..38 hold the flush LSN and the space id, which
//! InnoDB may rewrite without recomputing the checksum. `full_crc32` (MariaDB 10.5+) covers
//! everything, which is why MariaDB made it the default.
//!
//! ## Verification order
//!
//! [`verify`] follows InnoDB's `is_corrupted`: first the LSN low word in the trailer must match
//! the header (a torn write usually breaks this before any checksum is computed); then, unless
//! the configured algorithm is `none`, a page whose checksum fields and LSN are all zero must be
//! entirely zero (a freshly allocated page); then the configured algorithm is tried, and unless
//! the policy is *strict*, the other algorithms after it, since a tablespace may hold pages
//! written under an older setting. Strict here means what MariaDB's server means: a page that
//! only matches another algorithm is rejected (MySQL's strict modes only log a warning).

use crate::bytes::{read_u32, read_u64, write_u32};
use crate::crc;
use crate::fil::{FLUSH_LSN, HEADER_SIZE, SPACE_ID, TRAILER_SIZE};
use crate::{PageError, PageSize};

/// The magic value of the `none` algorithm (`BUF_NO_CHECKSUM_MAGIC`).
pub const NO_CHECKSUM_MAGIC: u32 = 0xDEAD_BEEF;

/// `UT_HASH_RANDOM_MASK`, used by the legacy `innodb` formula.
const HASH_RANDOM_MASK: u32 = 1_463_735_687;
/// `UT_HASH_RANDOM_MASK2`, used by the legacy `innodb` formula.
const HASH_RANDOM_MASK2: u32 = 1_653_893_711;

/// A page checksum algorithm (`innodb_checksum_algorithm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ChecksumAlgorithm {
    /// CRC-32C of the header and body, the same value in both fields; MySQL's default.
    #[default]
    Crc32,
    /// The legacy fold-based formula: a "new" checksum at 0 and an "old" one in the trailer.
    Innodb,
    /// No checksum: both fields hold 0xDEADBEEF.
    None,
    /// MariaDB's full_crc32: CRC-32C over all but the last 4 bytes, stored in the last 4 bytes.
    /// A property of the tablespace (its FSP flags say so), not just of a page.
    FullCrc32,
}

impl ChecksumAlgorithm {
    /// Every algorithm.
    pub const ALL: [ChecksumAlgorithm; 4] = [
        ChecksumAlgorithm::Crc32,
        ChecksumAlgorithm::Innodb,
        ChecksumAlgorithm::None,
        ChecksumAlgorithm::FullCrc32,
    ];

    /// The name `innodb_checksum_algorithm` uses.
    pub const fn name(self) -> &'static str {
        match self {
            ChecksumAlgorithm::Crc32 => "crc32",
            ChecksumAlgorithm::Innodb => "innodb",
            ChecksumAlgorithm::None => "none",
            ChecksumAlgorithm::FullCrc32 => "full_crc32",
        }
    }
}

impl std::fmt::Display for ChecksumAlgorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How pages are checked on read: the configured algorithm and whether others are accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ChecksumPolicy {
    /// The algorithm tried first (and used for writing).
    pub algorithm: ChecksumAlgorithm,
    /// When true, a page that only matches another algorithm is corrupt.
    pub strict: bool,
}

impl ChecksumPolicy {
    /// A non-strict policy for `algorithm`.
    pub const fn new(algorithm: ChecksumAlgorithm) -> ChecksumPolicy {
        ChecksumPolicy {
            algorithm,
            strict: false,
        }
    }

    /// The policy that applies to a tablespace with these flags: a full_crc32 tablespace is
    /// always checked with full_crc32, and a `full_crc32` setting meets older-format tablespaces
    /// with `crc32` rules, as MariaDB does.
    pub fn for_space(self, flags: crate::fsp::FspFlags) -> ChecksumPolicy {
        let algorithm = match (flags.is_full_crc32(), self.algorithm) {
            (true, _) => ChecksumAlgorithm::FullCrc32,
            (false, ChecksumAlgorithm::FullCrc32) => ChecksumAlgorithm::Crc32,
            (false, other) => other,
        };
        ChecksumPolicy { algorithm, ..self }
    }
}

impl std::str::FromStr for ChecksumPolicy {
    type Err = PageError;

    /// Parses the values of `innodb_checksum_algorithm`: `crc32`, `strict_crc32`, `innodb`,
    /// `strict_innodb`, `none`, `strict_none`, `full_crc32`, `strict_full_crc32`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.trim().to_ascii_lowercase();
        let (strict, name) = match lower.strip_prefix("strict_") {
            Some(rest) => (true, rest),
            None => (false, lower.as_str()),
        };
        let algorithm = ChecksumAlgorithm::ALL
            .into_iter()
            .find(|a| a.name() == name)
            .ok_or_else(|| PageError::UnknownAlgorithm {
                name: s.to_string(),
            })?;
        Ok(ChecksumPolicy { algorithm, strict })
    }
}

impl std::fmt::Display for ChecksumPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.strict {
            f.write_str("strict_")?;
        }
        f.write_str(self.algorithm.name())
    }
}

fn check_len(page: &[u8]) -> Result<usize, PageError> {
    PageSize::from_bytes(page.len()).map(PageSize::bytes)
}

/// Borrows the two ranges the `crc32` and `innodb` formulas cover: `[4, 26)` and `[38, N-8)`.
fn covered_ranges(page: &[u8]) -> Result<(&[u8], &[u8]), PageError> {
    // lab 1 begin: covered_ranges
    // lab 1 starter: let _ = page; Err(crate::lab::NotWritten::new(1, "covered_ranges").into())
    let n = check_len(page)?;
    let head = crate::bytes::slice(page, 4, 22)?;
    let body = crate::bytes::slice(page, HEADER_SIZE, n - HEADER_SIZE - TRAILER_SIZE)?;
    Ok((head, body))
    // lab 1 end
}

/// The `crc32` checksum of a page: CRC-32C of `[4, 26)` XOR CRC-32C of `[38, N-8)`.
pub fn crc32(page: &[u8]) -> Result<u32, PageError> {
    // lab 1 begin: crc32
    // lab 1 starter: let _ = page; Err(crate::lab::NotWritten::new(1, "crc32").into())
    let (head, body) = covered_ranges(page)?;
    Ok(crc::crc32c(head) ^ crc::crc32c(body))
    // lab 1 end
}

/// The `crc32` checksum as computed by old big-endian builds of InnoDB's software CRC, which
/// fed each aligned 8-byte word byte-reversed. Pages carrying it are still accepted on read.
pub fn crc32_legacy_big_endian(page: &[u8]) -> Result<u32, PageError> {
    let (head, body) = covered_ranges(page)?;
    // Both ranges start 4 and 6 bytes before an 8-byte boundary (page frames are aligned).
    Ok(legacy_be_crc(head, 4) ^ legacy_be_crc(body, 2))
}

/// CRC-32C where, after `lead` plain bytes, every whole 8-byte group is fed reversed.
fn legacy_be_crc(data: &[u8], lead: usize) -> u32 {
    let (first, rest) = data.split_at(lead.min(data.len()));
    let mut state = crc::crc32c_append(0, first);
    let mut chunks = rest.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        word.reverse();
        state = crc::crc32c_append(state, &word);
    }
    crc::crc32c_append(state, chunks.remainder())
}

#[inline]
fn fold_pair(n1: u32, n2: u32) -> u32 {
    ((((n1 ^ n2 ^ HASH_RANDOM_MASK2) << 8).wrapping_add(n1)) ^ HASH_RANDOM_MASK).wrapping_add(n2)
}

/// InnoDB's `ut_fold_binary`: folds bytes one at a time into a 32-bit value. (InnoDB uses a
/// 64-bit `ulint`, but XOR, addition and left shifts only carry upward, so the low 32 bits
/// are the same.)
fn fold_binary(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0, |f, &b| fold_pair(f, u32::from(b)))
}

/// The legacy `innodb` "new" checksum (stored at offset 0).
pub fn innodb_new(page: &[u8]) -> Result<u32, PageError> {
    let (head, body) = covered_ranges(page)?;
    Ok(fold_binary(head).wrapping_add(fold_binary(body)))
}

/// The legacy `innodb` "old" checksum (stored at N-8): a fold of bytes `[0, 26)`, computed
/// after the new checksum has been written at offset 0.
pub fn innodb_old(page: &[u8]) -> Result<u32, PageError> {
    check_len(page)?;
    Ok(fold_binary(crate::bytes::slice(page, 0, FLUSH_LSN)?))
}

/// The MariaDB `full_crc32` checksum: CRC-32C of `[0, N-4)`.
pub fn full_crc32(page: &[u8]) -> Result<u32, PageError> {
    let n = check_len(page)?;
    Ok(crc::crc32c(crate::bytes::slice(page, 0, n - 4)?))
}

/// Prepares a page for writing: copies the LSN's low word into the trailer and writes the
/// checksum field(s) of `algorithm`. The page's LSN must already be set.
pub fn stamp(page: &mut [u8], algorithm: ChecksumAlgorithm) -> Result<(), PageError> {
    // lab 1 begin: stamp
    // lab 1 starter: let _ = (page, algorithm); Err(crate::lab::NotWritten::new(1, "stamp").into())
    let n = check_len(page)?;
    let lsn_low = read_u32(page, 20)?;
    match algorithm {
        ChecksumAlgorithm::FullCrc32 => {
            write_u32(page, n - 8, lsn_low)?;
            let sum = full_crc32(page)?;
            write_u32(page, n - 4, sum)
        }
        ChecksumAlgorithm::Crc32 => {
            write_u32(page, n - 4, lsn_low)?;
            let sum = crc32(page)?;
            write_u32(page, 0, sum)?;
            write_u32(page, n - 8, sum)
        }
        ChecksumAlgorithm::Innodb => {
            write_u32(page, n - 4, lsn_low)?;
            let new = innodb_new(page)?;
            write_u32(page, 0, new)?;
            let old = innodb_old(page)?;
            write_u32(page, n - 8, old)
        }
        ChecksumAlgorithm::None => {
            write_u32(page, n - 4, lsn_low)?;
            write_u32(page, 0, NO_CHECKSUM_MAGIC)?;
            write_u32(page, n - 8, NO_CHECKSUM_MAGIC)
        }
    }
    // lab 1 end
}

/// Which formula a valid page matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Matched {
    /// `crc32`.
    Crc32,
    /// `crc32` as computed by old big-endian software builds.
    Crc32LegacyBigEndian,
    /// Legacy `innodb`.
    Innodb,
    /// `none` (0xDEADBEEF in both fields).
    None,
    /// MariaDB `full_crc32`.
    FullCrc32,
}

impl Matched {
    /// A short name for reports.
    pub const fn name(self) -> &'static str {
        match self {
            Matched::Crc32 => "crc32",
            Matched::Crc32LegacyBigEndian => "crc32_legacy_big_endian",
            Matched::Innodb => "innodb",
            Matched::None => "none",
            Matched::FullCrc32 => "full_crc32",
        }
    }
}

/// The result of checking a page that is not corrupt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// The page's checksum matched this formula.
    Valid(Matched),
    /// An all-zero page (allowed: freshly allocated, never written).
    Empty,
    /// Policy `none` (not strict): only the LSN words were compared, as InnoDB does.
    NotChecked,
}

/// Why a page is corrupt. The caller adds the file and page number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Corruption {
    /// The LSN low word in the trailer differs from the header's: typically a torn write.
    #[error("LSN mismatch: header low word {header:#010x}, trailer {trailer:#010x}")]
    LsnMismatch {
        /// Bytes 20..24.
        header: u32,
        /// The trailer's copy.
        trailer: u32,
    },
    /// Checksum fields and LSN are zero, but the page is not (first non-zero byte at `offset`).
    #[error("zero checksum and LSN on a page that is not empty (byte {offset} is non-zero)")]
    NotEmpty {
        /// Offset of the first unexpected non-zero byte.
        offset: usize,
    },
    /// No accepted algorithm matched.
    #[error(
        "checksum mismatch ({algorithm}): stored {stored_first:#010x}/{stored_second:#010x}, \
         computed {computed_first:#010x}/{computed_second:#010x}"
    )]
    Checksum {
        /// The algorithm whose expectation is reported (the policy's).
        algorithm: ChecksumAlgorithm,
        /// The first stored field (offset 0; full_crc32: the stored checksum in the last 4 bytes).
        stored_first: u32,
        /// The second stored field (N-8; full_crc32: the stored checksum again).
        stored_second: u32,
        /// What `algorithm` computes for the first field.
        computed_first: u32,
        /// What `algorithm` computes for the second field.
        computed_second: u32,
    },
    /// A full_crc32 page-compressed page announces a size that does not fit the page.
    #[error("full_crc32 compressed page claims {claimed} bytes in a {page_size}-byte page")]
    BadCompressedSize {
        /// The size in the page type field.
        claimed: usize,
        /// The page size.
        page_size: usize,
    },
    /// The buffer is not a page at all (wrong length).
    #[error("{0}")]
    Malformed(#[from] PageError),
}

/// Checks one page under `policy`, in InnoDB's order (see the module docs).
pub fn verify(page: &[u8], policy: ChecksumPolicy) -> Result<Verdict, Corruption> {
    if policy.algorithm == ChecksumAlgorithm::FullCrc32 {
        return verify_full_crc32(page);
    }
    // lab 1 begin: verify
    // lab 1 starter: let _ = page; Err(PageError::from(crate::lab::NotWritten::new(1, "verify")).into())
    let n = check_len(page)?;
    let header = read_u32(page, 20)?;
    let trailer = read_u32(page, n - 4)?;
    if header != trailer {
        return Err(Corruption::LsnMismatch { header, trailer });
    }
    if policy.algorithm == ChecksumAlgorithm::None && !policy.strict {
        return Ok(Verdict::NotChecked);
    }
    let field1 = read_u32(page, 0)?;
    let field2 = read_u32(page, n - 8)?;
    if field1 == 0 && field2 == 0 && read_u64(page, 16)? == 0 {
        return match first_nonzero_outside(page, FLUSH_LSN..SPACE_ID) {
            None => Ok(Verdict::Empty),
            Some(offset) => Err(Corruption::NotEmpty { offset }),
        };
    }
    let order: &[ChecksumAlgorithm] = match (policy.algorithm, policy.strict) {
        (ChecksumAlgorithm::Innodb, false) => &[
            ChecksumAlgorithm::Innodb,
            ChecksumAlgorithm::None,
            ChecksumAlgorithm::Crc32,
        ],
        (ChecksumAlgorithm::None, false) => &[],
        (_, false) => &[
            ChecksumAlgorithm::Crc32,
            ChecksumAlgorithm::None,
            ChecksumAlgorithm::Innodb,
        ],
        (ChecksumAlgorithm::Innodb, true) => &[ChecksumAlgorithm::Innodb],
        (ChecksumAlgorithm::None, true) => &[ChecksumAlgorithm::None],
        (_, true) => &[ChecksumAlgorithm::Crc32],
    };
    for &algorithm in order {
        if let Some(matched) = classic_matches(page, algorithm, field1, field2)? {
            return Ok(Verdict::Valid(matched));
        }
    }
    let (computed_first, computed_second) = expected_fields(page, policy.algorithm)?;
    Err(Corruption::Checksum {
        algorithm: policy.algorithm,
        stored_first: field1,
        stored_second: field2,
        computed_first,
        computed_second,
    })
    // lab 1 end
}

/// Does the page match `algorithm` (one of crc32, innodb, none)?
fn classic_matches(
    page: &[u8],
    algorithm: ChecksumAlgorithm,
    field1: u32,
    field2: u32,
) -> Result<Option<Matched>, PageError> {
    Ok(match algorithm {
        ChecksumAlgorithm::Crc32 | ChecksumAlgorithm::FullCrc32 => {
            if field1 != field2 {
                None
            } else if crc32(page)? == field1 {
                Some(Matched::Crc32)
            } else if crc32_legacy_big_endian(page)? == field1 {
                Some(Matched::Crc32LegacyBigEndian)
            } else {
                None
            }
        }
        ChecksumAlgorithm::None => {
            (field1 == NO_CHECKSUM_MAGIC && field2 == NO_CHECKSUM_MAGIC).then_some(Matched::None)
        }
        ChecksumAlgorithm::Innodb => {
            // Before 4.0.14 the trailer field held the LSN's high word instead of a checksum,
            // and the field at 0 could be zero.
            let old_ok = field2 == read_u32(page, 16)? || field2 == innodb_old(page)?;
            let new_ok = field1 == 0 || field1 == innodb_new(page)?;
            (old_ok && new_ok).then_some(Matched::Innodb)
        }
    })
}

/// What `algorithm` would store in the two checksum fields of this page.
pub fn expected_fields(page: &[u8], algorithm: ChecksumAlgorithm) -> Result<(u32, u32), PageError> {
    Ok(match algorithm {
        ChecksumAlgorithm::Crc32 => {
            let c = crc32(page)?;
            (c, c)
        }
        ChecksumAlgorithm::Innodb => {
            // The old formula covers bytes 0..4, which hold the new checksum once stamped.
            let mut head = [0u8; FLUSH_LSN];
            head.copy_from_slice(crate::bytes::slice(page, 0, FLUSH_LSN)?);
            let new = innodb_new(page)?;
            head[..4].copy_from_slice(&new.to_be_bytes());
            (new, fold_binary(&head))
        }
        ChecksumAlgorithm::None => (NO_CHECKSUM_MAGIC, NO_CHECKSUM_MAGIC),
        ChecksumAlgorithm::FullCrc32 => {
            let c = full_crc32(page)?;
            (c, c)
        }
    })
}

/// MariaDB's rules for full_crc32 tablespaces (`buf_page_is_corrupted`).
fn verify_full_crc32(page: &[u8]) -> Result<Verdict, Corruption> {
    let n = check_len(page)?;
    // Page-compressed pages mark bit 15 of the type; the rest, shifted left 8, is the size.
    let raw_type = u32::from(crate::bytes::read_u16(page, 24)?);
    let (size, compressed) = if raw_type & 0x8000 != 0 {
        let claimed = ((raw_type & 0x7FFF) << 8) as usize;
        if claimed >= n || claimed < HEADER_SIZE + 4 {
            return Err(Corruption::BadCompressedSize {
                claimed,
                page_size: n,
            });
        }
        (claimed, true)
    } else {
        (n, false)
    };
    let stored = read_u32(page, size - 4)?;
    if stored == 0 && !compressed && first_nonzero_outside(page, 0..0).is_none() {
        return Ok(Verdict::Empty);
    }
    let computed = crc::crc32c(crate::bytes::slice(page, 0, size - 4)?);
    if stored != computed {
        return Err(Corruption::Checksum {
            algorithm: ChecksumAlgorithm::FullCrc32,
            stored_first: stored,
            stored_second: stored,
            computed_first: computed,
            computed_second: computed,
        });
    }
    let key_version = read_u32(page, 0)?;
    if !compressed && key_version == 0 {
        let header = read_u32(page, 20)?;
        let trailer = read_u32(page, n - 8)?;
        if header != trailer {
            return Err(Corruption::LsnMismatch { header, trailer });
        }
    }
    Ok(Verdict::Valid(Matched::FullCrc32))
}

/// Offset of the first non-zero byte outside `skip`, if any.
fn first_nonzero_outside(page: &[u8], skip: std::ops::Range<usize>) -> Option<usize> {
    page.iter()
        .enumerate()
        .find(|&(i, &b)| b != 0 && !skip.contains(&i))
        .map(|(i, _)| i)
}

/// Checksums that exist only for experiment E5 (the seed article compared InnoDB's legacy
/// formula with a Fletcher checksum). No tablespace is ever written with them.
pub mod experimental {
    use super::covered_ranges;
    use crate::PageError;

    /// The `crc32` page layout computed with CRC-32 IEEE (zlib's polynomial, via `crc32fast`)
    /// instead of CRC-32C. InnoDB never used it; it shows what the polynomial choice costs.
    pub fn crc32_ieee(page: &[u8]) -> Result<u32, PageError> {
        let (head, body) = covered_ranges(page)?;
        Ok(crc32fast::hash(head) ^ crc32fast::hash(body))
    }

    /// A Fletcher-64 checksum over the page body's 32-bit words (two running sums modulo
    /// 2^32 - 1), folded to 32 bits. Covers the same ranges as `crc32`.
    pub fn fletcher64(page: &[u8]) -> Result<u32, PageError> {
        let (head, body) = covered_ranges(page)?;
        let (mut a, mut b) = (0u64, 0u64);
        for part in [head, body] {
            let mut words = part.chunks_exact(4);
            for w in &mut words {
                let mut word = [0u8; 4];
                word.copy_from_slice(w);
                a += u64::from(u32::from_le_bytes(word));
                b += a;
                // Reduce lazily: a stays below 2^33 and b below 2^63 between reductions.
                if b >= 1 << 62 {
                    a %= 0xFFFF_FFFF;
                    b %= 0xFFFF_FFFF;
                }
            }
            for &byte in words.remainder() {
                a += u64::from(byte);
                b += a;
            }
        }
        let (a, b) = (a % 0xFFFF_FFFF, b % 0xFFFF_FFFF);
        Ok((a ^ (b << 16) ^ (b >> 16)) as u32)
    }
}

#[cfg(test)]
mod tests;
