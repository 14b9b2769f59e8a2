//! `minnow verify FILE...`: check every page's checksum, like `innochecksum`.
//!
//! For each file: find the page size (page 0's FSP flags, or `--page-size`), pick the checksum
//! policy (`--checksum`, default `crc32`; a tablespace whose flags say full_crc32 is always
//! checked with full_crc32), then check every page in InnoDB's order:
//!
//! 1. the LSN's low word in the header (bytes 20..24) must equal its copy in the trailer: if not,
//!    the page was probably torn by a partial write;
//! 2. a page whose checksum fields and LSN are zero must be all zero: a freshly allocated page,
//!    counted as *empty* (valid);
//! 3. the checksum must match the configured algorithm or, unless the policy is `strict_*`,
//!    any other (a tablespace may hold pages written under an older setting). The summary counts
//!    which algorithm each valid page matched: a MySQL 5.0 file shows `innodb`, 5.7 and later
//!    `crc32`, MariaDB 10.5+ `full_crc32`.
//!
//! Each corrupt page is listed with its number, the stored and the computed checksums, the
//! algorithm, and whether the LSN words agree. A file that ends in a partial page (its size is
//! not a multiple of the page size) has that page reported as corrupt. Then comes one summary
//! line per file.
//!
//! A compressed tablespace (minnow's blocks, recognised by their zip magic) is checked twice
//! per page: first its block (the zip header decodes, the block's CRC-32C matches, the
//! padding is zero, the payload inflates to exactly one page), then the restored page as
//! above. A block that fails the first check is listed as a corrupt page of kind `zip_block`
//! with what is wrong; an all-zero block is an empty page.
//!
//! An InnoDB ROW_FORMAT=COMPRESSED tablespace (page 0's FSP flags carry a `ZIP_SSIZE`) is read
//! in physical pages of `KEY_BLOCK_SIZE` bytes, each checked with the compressed-page rules
//! (`page_zip_verify_checksum`: one checksum at offset 0, no trailer, step 1 skipped). A corrupt
//! one is listed with its stored and computed checksum. Exit 0 when every page of every file is fine, 1 when any is corrupt, 2 when a
//! file cannot be read at all.

use std::io::Write;
use std::path::PathBuf;

use minnow_page::checksum::Verdict;
use minnow_page::fil::FilHeader;
use serde::Serialize;

use crate::check::{CorruptPage, Tally};
use crate::cli::{ReadOpts, Status};
use crate::output::CliError;
use crate::report::{self, Outcome};
use crate::space::{BlockState, PageSizeSource, Space, SpaceError, ZipInfo};

/// The report for one file.
#[derive(Debug, Serialize)]
pub struct FileReport {
    /// The file.
    pub file: String,
    /// `ok`, `corrupt` or `error`.
    pub status: &'static str,
    /// The page size in bytes (absent if the file could not be opened).
    pub page_size: Option<usize>,
    /// Where the page size came from.
    pub page_size_source: Option<PageSizeSource>,
    /// Page 0's FSP flags, if readable.
    pub fsp_flags: Option<u32>,
    /// For a compressed tablespace: block size, algorithm and logical page size.
    pub compression: Option<ZipInfo>,
    /// For an InnoDB ROW_FORMAT=COMPRESSED tablespace, the physical (compressed) page size in
    /// bytes (`KEY_BLOCK_SIZE`); absent for other files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zip_size: Option<usize>,
    /// The checksum policy applied (after adjusting to the flags).
    pub policy: Option<String>,
    /// Verdict counts.
    pub summary: Tally,
    /// Every corrupt page, in page order.
    pub corrupt_pages: Vec<CorruptPage>,
    /// Bytes of a partial page at the end of the file (0 if none).
    pub trailing_bytes: u64,
    /// Valid pages whose header names another page number (not counted as corrupt; InnoDB
    /// would refuse such a page when reading it through the buffer pool).
    pub page_number_mismatches: Vec<PageNumberMismatch>,
    /// Why the file could not be read, for status `error`.
    pub error: Option<String>,
}

/// A page whose header's page number differs from its position.
#[derive(Debug, Serialize)]
pub struct PageNumberMismatch {
    /// The position in the file.
    pub page: u64,
    /// What the FIL header says.
    pub header_page_no: u32,
}

/// The whole report.
#[derive(Debug, Serialize)]
pub struct VerifyReport {
    /// The outcome: true when every file is fine.
    #[serde(flatten)]
    pub outcome: Outcome,
    /// One report per file, in argument order.
    pub files: Vec<FileReport>,
}

/// Runs `minnow verify`.
pub fn run(
    files: &[PathBuf],
    opts: &ReadOpts,
    json: bool,
    out: &mut dyn Write,
) -> Result<Status, CliError> {
    let mut status = Status::Clean;
    let mut reports = Vec::new();
    for path in files {
        let report = match verify_file(path, opts) {
            Ok(report) => report,
            Err(err) => {
                let _ = writeln!(std::io::stderr(), "minnow: {err}");
                error_report(path, &err)
            }
        };
        status = status.max(match report.status {
            "ok" => Status::Clean,
            "corrupt" => Status::Corrupt,
            _ => Status::Error,
        });
        if !json {
            print_text(&report, out)?;
        }
        reports.push(report);
    }
    if json {
        report::emit_json(
            out,
            &VerifyReport {
                outcome: Outcome::of(status),
                files: reports,
            },
        )?;
    }
    Ok(status)
}

/// Checks every page of one file.
pub fn verify_file(path: &std::path::Path, opts: &ReadOpts) -> Result<FileReport, SpaceError> {
    let space = Space::open(path, opts.page_size)?;
    let policy = space.policy(opts.checksum);
    let mut summary = Tally::default();
    let mut corrupt_pages = Vec::new();
    let mut page_number_mismatches = Vec::new();
    space.scan(|slot| {
        let page_no = slot.page_no;
        let Some(page) = slot.page else {
            if let Some(block) = &slot.block
                && let BlockState::Damaged { error, .. } = &block.state
            {
                summary.add_damaged_block();
                corrupt_pages.push(CorruptPage::damaged_block(
                    page_no,
                    block.bytes,
                    policy,
                    error,
                ));
            }
            return Ok(());
        };
        let verdict = space.check(page, policy);
        summary.add(&verdict);
        match &verdict {
            Err(why) if space.innodb_zip().is_some() => {
                corrupt_pages.push(CorruptPage::zip_page(page_no, page, policy, why));
            }
            Err(why) => corrupt_pages.push(CorruptPage::new(page_no, page, policy, why)),
            Ok(Verdict::Valid(_)) => {
                if let Ok(h) = FilHeader::read(page)
                    && u64::from(h.page_no) != page_no
                {
                    page_number_mismatches.push(PageNumberMismatch {
                        page: page_no,
                        header_page_no: h.page_no,
                    });
                }
            }
            Ok(_) => {}
        }
        Ok::<(), SpaceError>(())
    })?;
    let trailing_bytes = space.trailing_bytes();
    if trailing_bytes > 0 {
        summary.add_partial();
        corrupt_pages.push(CorruptPage::partial(
            space.pages(),
            trailing_bytes,
            space.physical_page_bytes(),
            policy,
        ));
    }
    Ok(FileReport {
        file: space.name(),
        status: if summary.corrupt > 0 { "corrupt" } else { "ok" },
        page_size: Some(space.page_size().bytes()),
        page_size_source: Some(space.page_size_source()),
        fsp_flags: space.flags().map(|f| f.0),
        compression: space.zip().map(|z| z.info(space.page_size())),
        zip_size: space.innodb_zip(),
        policy: Some(policy.to_string()),
        summary,
        corrupt_pages,
        trailing_bytes,
        page_number_mismatches,
        error: None,
    })
}

fn error_report(path: &std::path::Path, err: &SpaceError) -> FileReport {
    FileReport {
        file: path.display().to_string(),
        status: "error",
        page_size: None,
        page_size_source: None,
        fsp_flags: None,
        compression: None,
        zip_size: None,
        policy: None,
        summary: Tally::default(),
        corrupt_pages: Vec::new(),
        trailing_bytes: 0,
        page_number_mismatches: Vec::new(),
        error: Some(err.to_string()),
    }
}

fn print_text(report: &FileReport, out: &mut dyn Write) -> std::io::Result<()> {
    let file = &report.file;
    if report.error.is_some() {
        // Already said on stderr, where errors go.
        return Ok(());
    }
    for page in &report.corrupt_pages {
        writeln!(out, "{file}: {}", page.text())?;
    }
    for m in &report.page_number_mismatches {
        writeln!(
            out,
            "{file}: page {}: warning: header says page {}",
            m.page, m.header_page_no
        )?;
    }
    let size = report.page_size.map_or(0, |b| b / 1024);
    let flags = report
        .fsp_flags
        .map_or_else(|| "unreadable".to_string(), |f| format!("{f:#x}"));
    let source = match report.page_size_source {
        Some(PageSizeSource::Option) => ", from --page-size",
        _ => "",
    };
    let blocks = match (&report.compression, report.zip_size) {
        (Some(z), _) => format!(" in {} KiB {} blocks", z.key_block_size, z.codec),
        (None, Some(zip_size)) => format!(
            " stored as {} KiB ROW_FORMAT=COMPRESSED pages",
            zip_size / 1024
        ),
        (None, None) => String::new(),
    };
    writeln!(
        out,
        "{file}: {}: {} [{size} KiB pages{blocks}{source}, FSP flags {flags}, checksum {}]",
        report.status.to_uppercase(),
        report.summary.text(),
        report.policy.as_deref().unwrap_or("?"),
    )
}
