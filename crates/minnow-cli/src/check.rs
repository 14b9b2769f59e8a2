//! Checking pages and explaining the result.
//!
//! [`minnow_page::checksum::verify`] answers "is this page intact?" in InnoDB's order (LSN words
//! first, then the empty-page rule, then the checksum formulas). For a report we want more than
//! the verdict: when a page is corrupt, a reader wants to see the checksum stored in the page next
//! to the one the configured algorithm computes, and whether the two copies of the LSN's low word
//! (header bytes 20..24 and the trailer) still agree: if they do not, the page was most likely
//! torn by a partial write. [`CorruptPage`] gathers all of that; [`Tally`] counts verdicts for a
//! summary line.
//!
//! A compressed tablespace adds a check before the page's own: its block must restore (the
//! zip header must decode, the block's CRC-32C must match, the padding must be zero and the
//! payload must inflate to exactly one page). A block that fails is reported like a corrupt
//! page, of kind `zip_block`; its FIL header and trailer are stored verbatim in the block, so
//! the stored checksum fields and LSN words are still shown.
//!
//! A page of an InnoDB ROW_FORMAT=COMPRESSED tablespace has a single checksum field (offset 0)
//! and no trailer ([`minnow_page::checksum::zip`]); [`CorruptPage::zip_page`] reports it with
//! that one field and its physical size.

use std::collections::BTreeMap;

use minnow_page::bytes::read_u32;
use minnow_page::checksum::{
    self, ChecksumAlgorithm, ChecksumPolicy, Corruption, Matched, Verdict,
};
use serde::Serialize;

use crate::output::hex32;

/// The outcome of checking one page.
pub type PageVerdict = Result<Verdict, Corruption>;

/// Checks one page under `policy`.
pub fn check(page: &[u8], policy: ChecksumPolicy) -> PageVerdict {
    checksum::verify(page, policy)
}

/// A short machine name for a verdict: the matched algorithm, `empty`, `not_checked` or
/// `corrupt`.
pub fn verdict_name(verdict: &PageVerdict) -> &'static str {
    match verdict {
        Ok(Verdict::Valid(m)) => m.name(),
        Ok(Verdict::Empty) => "empty",
        Ok(Verdict::NotChecked) => "not_checked",
        Err(_) => "corrupt",
    }
}

/// Everything a report says about one corrupt page.
#[derive(Debug, Clone, Serialize)]
pub struct CorruptPage {
    /// The page number (position in the file).
    pub page: u64,
    /// What kind of problem: `checksum`, `lsn_mismatch`, `not_empty`, `bad_compressed_size`,
    /// `malformed`, `partial_page`, or `zip_block` (a compressed block that does not restore).
    pub kind: &'static str,
    /// A one-line explanation.
    pub reason: String,
    /// The algorithm whose checksum was expected (the policy's).
    pub algorithm: &'static str,
    /// The stored checksum field at offset 0 (full_crc32: the checksum in the last 4 bytes).
    pub stored_first: u32,
    /// The stored checksum field at N-8 (full_crc32: the checksum in the last 4 bytes again).
    pub stored_second: u32,
    /// What the algorithm computes for the first field.
    pub computed_first: u32,
    /// What the algorithm computes for the second field.
    pub computed_second: u32,
    /// The low 32 bits of the LSN in the header (bytes 20..24).
    pub lsn_header_low: u32,
    /// The trailer's copy of them (N-4; full_crc32: N-8).
    pub lsn_trailer: u32,
    /// Whether the two LSN words agree (false typically means a torn write).
    pub lsn_match: bool,
    /// For a page of an InnoDB ROW_FORMAT=COMPRESSED tablespace, its physical size: its one
    /// checksum is at offset 0 (`stored_first`, repeated in `stored_second`) and it has no
    /// trailer, so there is no second LSN word. Absent for other pages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zip_size: Option<usize>,
}

impl CorruptPage {
    /// Explains why page `page_no` (bytes `page`) failed under `policy`.
    pub fn new(page_no: u64, page: &[u8], policy: ChecksumPolicy, why: &Corruption) -> CorruptPage {
        let n = page.len();
        let algorithm = policy.algorithm;
        let word = |at: Option<usize>| at.and_then(|at| read_u32(page, at).ok()).unwrap_or(0);
        let (stored_first, stored_second, trailer_at) = if algorithm == ChecksumAlgorithm::FullCrc32
        {
            let s = word(n.checked_sub(4));
            (s, s, n.checked_sub(8))
        } else {
            (word(Some(0)), word(n.checked_sub(8)), n.checked_sub(4))
        };
        let (computed_first, computed_second) =
            checksum::expected_fields(page, algorithm).unwrap_or((0, 0));
        let lsn_header_low = word(Some(20));
        let lsn_trailer = word(trailer_at);
        let kind = kind_of(why);
        CorruptPage {
            page: page_no,
            kind,
            reason: why.to_string(),
            algorithm: algorithm.name(),
            stored_first,
            stored_second,
            computed_first,
            computed_second,
            lsn_header_low,
            lsn_trailer,
            lsn_match: lsn_header_low == lsn_trailer,
            zip_size: None,
        }
    }

    /// The report for a partial page of `len` bytes at the end of a file of `page_size`-byte
    /// pages.
    pub fn partial(page_no: u64, len: u64, page_size: usize, policy: ChecksumPolicy) -> Self {
        CorruptPage {
            page: page_no,
            kind: "partial_page",
            reason: format!(
                "the file ends in a partial page: {len} of {page_size} bytes (truncated file?)"
            ),
            algorithm: policy.algorithm.name(),
            stored_first: 0,
            stored_second: 0,
            computed_first: 0,
            computed_second: 0,
            lsn_header_low: 0,
            lsn_trailer: 0,
            lsn_match: true,
            zip_size: None,
        }
    }

    /// Explains why page `page_no` of an InnoDB compressed tablespace (`page`, the physical
    /// page as stored) failed under `policy`.
    pub fn zip_page(
        page_no: u64,
        page: &[u8],
        policy: ChecksumPolicy,
        why: &Corruption,
    ) -> CorruptPage {
        let algorithm = match policy.algorithm {
            ChecksumAlgorithm::FullCrc32 => ChecksumAlgorithm::Crc32,
            other => other,
        };
        let stored = read_u32(page, 0).unwrap_or(0);
        let computed = checksum::zip::expected(page, algorithm).unwrap_or(0);
        let lsn_header_low = read_u32(page, 20).unwrap_or(0);
        CorruptPage {
            page: page_no,
            kind: kind_of(why),
            reason: why.to_string(),
            algorithm: algorithm.name(),
            stored_first: stored,
            stored_second: stored,
            computed_first: computed,
            computed_second: computed,
            lsn_header_low,
            lsn_trailer: lsn_header_low,
            lsn_match: true,
            zip_size: Some(page.len()),
        }
    }

    /// The report for page `page_no` of a compressed file, whose `block` could not be restored
    /// (`why`). The FIL header and trailer are verbatim in the block, so the stored checksum
    /// fields and LSN words are read from it; nothing can be computed without the page.
    pub fn damaged_block(
        page_no: u64,
        block: &[u8],
        policy: ChecksumPolicy,
        why: &minnow_zip::ZipError,
    ) -> CorruptPage {
        let n = block.len();
        let word = |at: Option<usize>| at.and_then(|at| read_u32(block, at).ok()).unwrap_or(0);
        let lsn_header_low = word(Some(20));
        let lsn_trailer = word(n.checked_sub(4));
        CorruptPage {
            page: page_no,
            kind: "zip_block",
            reason: format!("compressed block does not restore: {why}"),
            algorithm: policy.algorithm.name(),
            stored_first: word(Some(0)),
            stored_second: word(n.checked_sub(8)),
            computed_first: 0,
            computed_second: 0,
            lsn_header_low,
            lsn_trailer,
            lsn_match: lsn_header_low == lsn_trailer,
            zip_size: None,
        }
    }

    /// The indented detail lines of the text report.
    pub fn text(&self) -> String {
        if self.kind == "zip_block" {
            return format!(
                "page {}: CORRUPT (zip_block): {}\n    stored checksum fields {}/{}; LSN low word \
                 header {} trailer {}",
                self.page,
                self.reason,
                hex32(self.stored_first),
                hex32(self.stored_second),
                hex32(self.lsn_header_low),
                hex32(self.lsn_trailer)
            );
        }
        if let Some(zip_size) = self.zip_size {
            let headline = if self.kind == "checksum" {
                "checksum mismatch"
            } else {
                self.reason.as_str()
            };
            return format!(
                "page {}: CORRUPT ({}): {headline}\n    compressed page ({zip_size} bytes): \
                 checksum field at offset 0 stored {}, computed {} ({}); no trailer, LSN low \
                 word {}",
                self.page,
                self.kind,
                hex32(self.stored_first),
                hex32(self.computed_first),
                self.algorithm,
                hex32(self.lsn_header_low)
            );
        }
        if self.kind == "partial_page" {
            return format!(
                "page {}: CORRUPT (partial_page): {}",
                self.page, self.reason
            );
        }
        let sums = if self.algorithm == ChecksumAlgorithm::FullCrc32.name() {
            format!(
                "stored {}, computed {} ({})",
                hex32(self.stored_first),
                hex32(self.computed_first),
                self.algorithm
            )
        } else {
            format!(
                "stored {}/{}, computed {}/{} ({})",
                hex32(self.stored_first),
                hex32(self.stored_second),
                hex32(self.computed_first),
                hex32(self.computed_second),
                self.algorithm
            )
        };
        let lsn = if self.lsn_match {
            format!(
                "LSN low word {} (header and trailer agree)",
                hex32(self.lsn_header_low)
            )
        } else {
            format!(
                "LSN MISMATCH: header {} trailer {}",
                hex32(self.lsn_header_low),
                hex32(self.lsn_trailer)
            )
        };
        // The checksum line already shows the numbers a checksum mismatch message would repeat.
        let headline = if self.kind == "checksum" {
            "checksum mismatch"
        } else {
            self.reason.as_str()
        };
        format!(
            "page {}: CORRUPT ({}): {headline}\n    checksum {sums}\n    {lsn}",
            self.page, self.kind
        )
    }
}

/// The report's name for a kind of corruption.
fn kind_of(why: &Corruption) -> &'static str {
    match why {
        Corruption::LsnMismatch { .. } => "lsn_mismatch",
        Corruption::NotEmpty { .. } => "not_empty",
        Corruption::Checksum { .. } => "checksum",
        Corruption::BadCompressedSize { .. } => "bad_compressed_size",
        Corruption::Malformed(_) => "malformed",
    }
}

/// Verdict counts for a file.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Tally {
    /// Pages checked (whole pages, plus a partial page if the file ends in one).
    pub pages: u64,
    /// Pages whose checksum matched some accepted algorithm.
    pub valid: u64,
    /// All-zero pages (freshly allocated; valid).
    pub empty: u64,
    /// Pages not checked (policy `none`): only their LSN words were compared.
    pub not_checked: u64,
    /// Corrupt pages (a partial page at the end counts as one, and so does a compressed block
    /// that does not restore).
    pub corrupt: u64,
    /// Of the corrupt pages, those whose compressed block does not restore (compressed files
    /// only; absent from JSON when 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub damaged_blocks: u64,
    /// Valid pages per matched algorithm (`crc32`, `innodb`, `full_crc32`, ...).
    pub by_algorithm: BTreeMap<&'static str, u64>,
}

impl Tally {
    /// Counts one verdict.
    pub fn add(&mut self, verdict: &PageVerdict) {
        self.pages += 1;
        match verdict {
            Ok(Verdict::Valid(m)) => {
                self.valid += 1;
                *self.by_algorithm.entry(Matched::name(*m)).or_default() += 1;
            }
            Ok(Verdict::Empty) => self.empty += 1,
            Ok(Verdict::NotChecked) => self.not_checked += 1,
            Err(_) => self.corrupt += 1,
        }
    }

    /// Counts a partial page at the end of the file.
    pub fn add_partial(&mut self) {
        self.pages += 1;
        self.corrupt += 1;
    }

    /// Counts a compressed block that could not be restored.
    pub fn add_damaged_block(&mut self) {
        self.pages += 1;
        self.corrupt += 1;
        self.damaged_blocks += 1;
    }

    /// `288 valid (crc32 288), 544 empty, 0 corrupt`.
    pub fn text(&self) -> String {
        let mut s = format!("{} pages: {} valid", self.pages, self.valid);
        if !self.by_algorithm.is_empty() {
            let algos: Vec<String> = self
                .by_algorithm
                .iter()
                .map(|(name, n)| format!("{name} {n}"))
                .collect();
            s.push_str(&format!(" ({})", algos.join(", ")));
        }
        s.push_str(&format!(", {} empty", self.empty));
        if self.not_checked > 0 {
            s.push_str(&format!(", {} not checked", self.not_checked));
        }
        s.push_str(&format!(", {} corrupt", self.corrupt));
        if self.damaged_blocks > 0 {
            s.push_str(&format!(
                " ({} compressed blocks do not restore)",
                self.damaged_blocks
            ));
        }
        s
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
