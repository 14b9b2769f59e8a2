//! `minnow page FILE N`: one page, field by field.
//!
//! Every page starts with the 38-byte **FIL header** (checksum, page number, siblings, LSN, type,
//! flush LSN, space id) and ends with the 8-byte **FIL trailer** (a second checksum field and the
//! LSN's low word; in MariaDB's full_crc32 format the LSN word comes first and the checksum last).
//! This command decodes both, then what the page type adds:
//!
//! - page 0: the **FSP header** (space id, size, free limit, flags with their meaning);
//! - minnow's TRX_SYS page (page 3 of `ibdata1`) and undo pages: the transaction system's
//!   fields, the active transactions' log headers, and what an undo page's bytes hold, log
//!   headers and undo records ([`trx`]);
//! - INDEX pages (and SDI / RTREE pages, which share the layout): the **INDEX page header**
//!   (directory slots, heap top, record counts, level, index id, the root's segment headers) and
//!   the **page directory**, the sparse array of record offsets that binary search starts from;
//! - the **checksum verdict** under the policy, with what each algorithm computes for this page,
//!   so you can see which one wrote it.
//!
//! With `--columns "id:int,name:varchar(20),..."` (or `--schema FILE`, plus `--pk` and `--key`
//! for the primary key and a secondary index's columns), the records of an InnoDB COMPACT or
//! DYNAMIC INDEX page are decoded too, in key order: every field, the delete mark, and for
//! clustered leaves DB_TRX_ID and DB_ROLL_PTR ([`crate::innodb_rec`] explains the format).
//!
//! A page of a compressed tablespace (minnow's blocks, docs/FORMAT.md §12) is read from its
//! block and inflated; its **zip header** comes first (block size, algorithm and level,
//! logical page size, payload length and its share of the block, the stored CRC-32C and
//! whether it matches), then the page as above. A block that does not restore is reported
//! with what is wrong (exit 1); `--hex` then dumps the block as stored.
//!
//! A page of an InnoDB ROW_FORMAT=COMPRESSED tablespace is shown as stored, not inflated:
//! the FIL header, the INDEX header (which describes the logical page), the compressed
//! stream's extent and the dense page directory ([`zip`]), and the
//! compressed-page checksum verdict. Its records are not decoded.
//!
//! On one of minnow's own INDEX pages, in a file that lies in a minnow data directory, the
//! records are decoded with no `--columns`: the dictionary in the directory's `ibdata1` says
//! which table and index the page's index id belongs to, and so the record layout
//! ([`minnow_records`]).
//!
//! `--hex` adds an xxd-style dump (runs of zero lines collapse into `*`). Exit 0 when the page is
//! intact, 1 when it is corrupt (or the file ends before the page is complete), 2 on errors.

pub mod block;
pub mod minnow_records;
pub mod trx;
pub mod zip;

use std::io::Write;
use std::path::Path;

use minnow_page::PageType;
use minnow_page::checksum::{self, ChecksumAlgorithm};
use minnow_page::fil::{FilHeader, FilTrailer};
use minnow_page::fsp::FspHeader;
use minnow_page::index::{Direction, IndexHeader};
use serde::Serialize;

use block::{DamagedReport, ZipBlockInfo, print_damaged};
use minnow_records::MinnowRecords;
use trx::TrxPages;
use zip::ZipPageInfo;

use crate::check::{self, CorruptPage};
use crate::cli::{ReadOpts, Status};
use crate::describe::{FlagsInfo, hex_dump};
use crate::dict;
use crate::innodb_rec::{self, Records, Schema};
use crate::output::{CliError, hex32, page_ptr};
use crate::reader::Reader;
use crate::report;
use crate::space::{self, BlockState, Space, SpaceError};

/// The FIL header, decoded.
#[derive(Debug, Serialize)]
pub struct FilInfo {
    /// Offset 0: checksum (key version in full_crc32 tablespaces).
    pub checksum: u32,
    /// Offset 4: page number.
    pub page_no: u32,
    /// Offset 8: previous page (0xFFFFFFFF = none).
    pub prev: u32,
    /// Offset 12: next page (0xFFFFFFFF = none).
    pub next: u32,
    /// Offset 16: page LSN.
    pub lsn: u64,
    /// Offset 24: page type number.
    pub page_type: u16,
    /// The type's InnoDB name.
    pub page_type_name: &'static str,
    /// Offset 26: flush LSN.
    pub flush_lsn: u64,
    /// Offset 34: space id.
    pub space_id: u32,
}

/// The FIL trailer, decoded.
#[derive(Debug, Serialize)]
pub struct TrailerInfo {
    /// Bytes N-8..N-4.
    pub first: u32,
    /// Bytes N-4..N.
    pub second: u32,
    /// What the two words mean in this tablespace's format.
    pub meaning: &'static str,
}

/// Page 0's FSP header, decoded.
#[derive(Debug, Serialize)]
pub struct FspInfo {
    /// The tablespace id.
    pub space_id: u32,
    /// Size in pages.
    pub size: u32,
    /// First page not yet added to a free list.
    pub free_limit: u32,
    /// Pages used in FREE_FRAG extents.
    pub frag_n_used: u32,
    /// Next unused segment id.
    pub next_seg_id: u64,
    /// The flags, decoded.
    pub flags: FlagsInfo,
}

/// A file segment header (root pages only).
#[derive(Debug, Serialize)]
pub struct FsegInfo {
    /// Space of the inode.
    pub space_id: u32,
    /// Page of the inode.
    pub page_no: u32,
    /// Byte offset of the inode entry.
    pub offset: u16,
}

/// The INDEX page header, decoded.
#[derive(Debug, Serialize)]
pub struct IndexInfo {
    /// PAGE_N_DIR_SLOTS.
    pub n_dir_slots: u16,
    /// PAGE_HEAP_TOP.
    pub heap_top: u16,
    /// PAGE_N_HEAP (records in the heap, including infimum and supremum).
    pub n_heap: u16,
    /// `compact` (COMPACT/DYNAMIC rows) or `redundant`.
    pub format: &'static str,
    /// PAGE_FREE.
    pub free: u16,
    /// PAGE_GARBAGE.
    pub garbage: u16,
    /// PAGE_LAST_INSERT.
    pub last_insert: u16,
    /// PAGE_DIRECTION, by name.
    pub direction: String,
    /// PAGE_N_DIRECTION.
    pub n_direction: u16,
    /// PAGE_N_RECS.
    pub n_recs: u16,
    /// PAGE_MAX_TRX_ID.
    pub max_trx_id: u64,
    /// PAGE_LEVEL (0 = leaf).
    pub level: u16,
    /// PAGE_INDEX_ID.
    pub index_id: u64,
    /// PAGE_BTR_SEG_LEAF (root only).
    pub seg_leaf: FsegInfo,
    /// PAGE_BTR_SEG_TOP (root only).
    pub seg_top: FsegInfo,
    /// The page directory: record offsets, slot 0 (infimum) first.
    pub directory: Vec<u16>,
}

/// What each algorithm computes for this page (for a page of an InnoDB compressed tablespace,
/// the compressed-page formulas: `crc32` and `innodb_new` for the one field at offset 0).
#[derive(Debug, Serialize)]
pub struct Computed {
    /// `crc32` (both fields).
    pub crc32: Option<u32>,
    /// Legacy `innodb`, field at 0.
    pub innodb_new: Option<u32>,
    /// Legacy `innodb`, field at N-8.
    pub innodb_old: Option<u32>,
    /// `full_crc32` (last 4 bytes).
    pub full_crc32: Option<u32>,
}

/// The checksum verdict.
#[derive(Debug, Serialize)]
pub struct ChecksumInfo {
    /// The policy applied.
    pub policy: String,
    /// The matched algorithm, `empty`, `not_checked` or `corrupt`.
    pub verdict: &'static str,
    /// The details when corrupt.
    pub corruption: Option<CorruptPage>,
    /// What each algorithm computes.
    pub computed: Computed,
}

/// The whole report.
#[derive(Debug, Serialize)]
pub struct PageReport {
    /// The file.
    pub file: String,
    /// The page number asked for.
    pub page: u64,
    /// The page size in bytes.
    pub page_size: usize,
    /// For a page of a compressed tablespace: its block and zip header.
    pub zip: Option<ZipBlockInfo>,
    /// For a page of an InnoDB ROW_FORMAT=COMPRESSED tablespace (`page_size` is then the
    /// physical size): the compressed stream and the dense directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zip_page: Option<ZipPageInfo>,
    /// The FIL header.
    pub fil: FilInfo,
    /// The FIL trailer.
    pub trailer: TrailerInfo,
    /// Page 0's FSP header.
    pub fsp: Option<FspInfo>,
    /// The INDEX page header, for INDEX, SDI and RTREE pages.
    pub index: Option<IndexInfo>,
    /// minnow's TRX_SYS or undo page, decoded: `trx_sys`, `undo`, `not_decoded` and
    /// `problems` (flattened into the report).
    #[serde(flatten)]
    pub trx: TrxPages,
    /// The checksum verdict.
    pub checksum: ChecksumInfo,
    /// The records, decoded with `--columns` (COMPACT INDEX pages only).
    pub records: Option<Records>,
    /// The records of one of minnow's own INDEX pages, decoded with the schema from the
    /// dictionary of the data directory the file lies in ([`minnow_records`]).
    pub minnow_records: Option<MinnowRecords>,
    /// The hex dump, with `--hex`.
    pub hex: Option<Vec<String>>,
}

/// The JSON printed when the page is cut short by the end of the file.
#[derive(Debug, Serialize)]
struct PartialReport {
    file: String,
    page: u64,
    page_size: usize,
    bytes_in_file: u64,
    corruption: CorruptPage,
    hex: Option<Vec<String>>,
}

/// Runs `minnow page`.
pub fn run(
    path: &Path,
    page_no: u64,
    opts: &ReadOpts,
    hex: bool,
    schema: Option<&Schema>,
    json: bool,
    out: &mut dyn Write,
) -> Result<Status, CliError> {
    let space = Space::open(path, opts.page_size)?;
    let policy = space.policy(opts.checksum);
    if page_no >= space.pages() {
        // The partial page at the end of a truncated file is reported, not refused.
        if page_no == space.pages()
            && let Some(bytes) = space.read_partial()?
        {
            let corruption = CorruptPage::partial(
                page_no,
                bytes.len() as u64,
                space.physical_page_bytes(),
                policy,
            );
            let dump = hex.then(|| hex_dump(&bytes));
            if json {
                report::emit_json(
                    out,
                    &PartialReport {
                        file: space.name(),
                        page: page_no,
                        page_size: space.page_size().bytes(),
                        bytes_in_file: bytes.len() as u64,
                        corruption,
                        hex: dump,
                    },
                )?;
            } else {
                writeln!(out, "{}: {}", space.name(), corruption.text())?;
                for line in dump.unwrap_or_default() {
                    writeln!(out, "{line}")?;
                }
            }
            return Ok(Status::Corrupt);
        }
        return Err(SpaceError::NoSuchPage {
            path: space.name(),
            page: page_no,
            pages: space.pages(),
        }
        .into());
    }
    if space.innodb_zip().is_some() {
        return zip::run(&space, page_no, policy, hex, schema.is_some(), json, out);
    }
    let mut page = vec![0u8; space.page_size().bytes()];
    let zip = match space.zip() {
        None => {
            space.read_page(page_no, &mut page)?;
            None
        }
        Some(layout) => {
            let block = space.read_block(page_no)?;
            let (state, _) =
                space::restore(&mut space::codec_for(layout.block_size), &block, &mut page);
            let info = ZipBlockInfo::new(layout.block_size.bytes(), &state);
            if let BlockState::Damaged { error, .. } = &state {
                let report = DamagedReport {
                    file: space.name(),
                    page: page_no,
                    page_size: space.page_size().bytes(),
                    zip: info,
                    corruption: CorruptPage::damaged_block(page_no, &block, policy, error),
                    hex: hex.then(|| hex_dump(&block)),
                };
                print_damaged(&report, json, out)?;
                return Ok(Status::Corrupt);
            }
            Some(info)
        }
    };
    let mut report = decode(&space, page_no, &page, policy, hex);
    report.zip = zip;
    if let Some(schema) = schema {
        report.records = Some(records(&page, report.index.as_ref(), schema));
    } else if let Some(ix) = &report.index {
        report.minnow_records = dict::beside(path)
            .and_then(|t| minnow_records::decode(&t, &page, ix.index_id, ix.level));
    }
    // The undo stream is walked through the same file, every page checksum-verified.
    let reader = Reader::over(space, policy);
    report.trx = trx::decode(
        &reader,
        page_no,
        &page,
        PageType::from_u16(report.fil.page_type),
    );
    let problems = !report.trx.problems.is_empty()
        || report
            .records
            .as_ref()
            .is_some_and(|r| !r.problems.is_empty())
        || (report.minnow_records.as_ref()).is_some_and(|r| !r.problems.is_empty());
    let status = if report.checksum.corruption.is_some() || problems {
        Status::Corrupt
    } else {
        Status::Clean
    };
    report::emit(out, json, &report, print_text)?;
    Ok(status)
}

/// Decodes a whole page.
pub(super) fn decode(
    space: &Space,
    page_no: u64,
    page: &[u8],
    policy: minnow_page::checksum::ChecksumPolicy,
    hex: bool,
) -> PageReport {
    let h = FilHeader::read(page).unwrap_or_default();
    let t = FilTrailer::read(page).unwrap_or_default();
    let full_crc32 = policy.algorithm == ChecksumAlgorithm::FullCrc32;
    let fsp = (page_no == 0)
        .then(|| FspHeader::read(page).ok())
        .flatten()
        .map(|f| FspInfo {
            space_id: f.space_id,
            size: f.size,
            free_limit: f.free_limit,
            frag_n_used: f.frag_n_used,
            next_seg_id: f.next_seg_id,
            flags: FlagsInfo::new(f.flags),
        });
    let index = matches!(
        h.page_type,
        PageType::Index | PageType::Sdi | PageType::Rtree
    )
    .then(|| IndexHeader::read(page).ok())
    .flatten();
    let compressed = space.innodb_zip().is_some();
    let zip_page = compressed.then(|| zip::decode(page, space.page_size().bytes(), index.as_ref()));
    let mut index = index.map(|ih| index_info(&ih, page));
    if let Some(ix) = index.as_mut().filter(|_| compressed) {
        // The sparse directory lives in the logical page only.
        ix.directory.clear();
    }
    let verdict = space.check(page, policy);
    let corruption = verdict.as_ref().err().map(|why| {
        if compressed {
            CorruptPage::zip_page(page_no, page, policy, why)
        } else {
            CorruptPage::new(page_no, page, policy, why)
        }
    });
    let (innodb_new, innodb_old) = if compressed {
        (checksum::zip::innodb(page).ok(), None)
    } else {
        checksum::expected_fields(page, ChecksumAlgorithm::Innodb)
            .map_or((None, None), |(a, b)| (Some(a), Some(b)))
    };
    let (crc32, full_crc32_sum) = if compressed {
        (checksum::zip::crc32(page).ok(), None)
    } else {
        (checksum::crc32(page).ok(), checksum::full_crc32(page).ok())
    };
    PageReport {
        file: space.name(),
        page: page_no,
        page_size: page.len(),
        zip: None,
        zip_page,
        fil: FilInfo {
            checksum: h.checksum,
            page_no: h.page_no,
            prev: h.prev,
            next: h.next,
            lsn: h.lsn,
            page_type: h.page_type.to_u16(),
            page_type_name: h.page_type.name(),
            flush_lsn: h.flush_lsn,
            space_id: h.space_id,
        },
        trailer: TrailerInfo {
            first: t.first,
            second: t.second,
            meaning: if compressed {
                "none: a compressed page has no trailer (these are its last 8 bytes)"
            } else if full_crc32 {
                "full_crc32: LSN low word, then CRC-32C of bytes [0, N-4)"
            } else {
                "second checksum field, then LSN low word"
            },
        },
        fsp,
        index,
        trx: TrxPages::default(),
        checksum: ChecksumInfo {
            policy: policy.to_string(),
            verdict: check::verdict_name(&verdict),
            corruption,
            computed: Computed {
                crc32,
                innodb_new,
                innodb_old,
                full_crc32: full_crc32_sum,
            },
        },
        records: None,
        minnow_records: None,
        hex: hex.then(|| hex_dump(page)),
    }
}

/// The records of an INDEX page, or why they cannot be decoded.
fn records(page: &[u8], index: Option<&IndexInfo>, schema: &Schema) -> Records {
    let refuse = |why: String| Records {
        records: Vec::new(),
        problems: vec![why],
    };
    match index {
        None => refuse("--columns: not an INDEX page".into()),
        Some(ih) if ih.format != "compact" => {
            refuse("--columns: REDUNDANT records (MySQL 5.0 and older) are not decoded".into())
        }
        Some(ih) => innodb_rec::decode_page(page, schema, ih.level, ih.n_heap),
    }
}

fn index_info(ih: &IndexHeader, page: &[u8]) -> IndexInfo {
    let fseg = |f: minnow_page::index::FsegHeader| FsegInfo {
        space_id: f.space_id,
        page_no: f.page_no,
        offset: f.offset,
    };
    IndexInfo {
        n_dir_slots: ih.n_dir_slots,
        heap_top: ih.heap_top,
        n_heap: ih.n_heap,
        format: if ih.compact { "compact" } else { "redundant" },
        free: ih.free,
        garbage: ih.garbage,
        last_insert: ih.last_insert,
        direction: match ih.direction {
            Direction::Left => "left".to_string(),
            Direction::Right => "right".to_string(),
            Direction::SameRec => "same_rec".to_string(),
            Direction::SamePage => "same_page".to_string(),
            Direction::NoDirection => "no_direction".to_string(),
            Direction::Invalid(v) => format!("invalid({v})"),
        },
        n_direction: ih.n_direction,
        n_recs: ih.n_recs,
        max_trx_id: ih.max_trx_id,
        level: ih.level,
        index_id: ih.index_id,
        seg_leaf: fseg(ih.seg_leaf),
        seg_top: fseg(ih.seg_top),
        directory: ih.directory(page).unwrap_or_default(),
    }
}

fn opt_hex(v: Option<u32>) -> String {
    v.map_or_else(|| "-".to_string(), hex32)
}

pub(super) fn print_text(r: &PageReport, out: &mut dyn Write) -> std::io::Result<()> {
    let f = &r.fil;
    if let Some(zip) = &r.zip {
        writeln!(
            out,
            "{}: page {} ({} bytes, compressed)",
            r.file, r.page, r.page_size
        )?;
        zip.print(out)?;
    } else {
        writeln!(out, "{}: page {} ({} bytes)", r.file, r.page, r.page_size)?;
    }
    writeln!(out, "FIL header:")?;
    writeln!(out, "  checksum      @0   {}", hex32(f.checksum))?;
    let page_note = if u64::from(f.page_no) == r.page {
        ""
    } else {
        "  (differs from the page's position!)"
    };
    writeln!(out, "  page number   @4   {}{page_note}", f.page_no)?;
    writeln!(out, "  prev          @8   {}", page_ptr(f.prev))?;
    writeln!(out, "  next          @12  {}", page_ptr(f.next))?;
    writeln!(out, "  LSN           @16  {} ({:#x})", f.lsn, f.lsn)?;
    writeln!(
        out,
        "  page type     @24  {} ({})",
        f.page_type_name, f.page_type
    )?;
    writeln!(out, "  flush LSN     @26  {}", f.flush_lsn)?;
    writeln!(out, "  space id      @34  {}", f.space_id)?;
    if let Some(z) = &r.zip_page {
        zip::print(z, out)?;
    } else {
        writeln!(out, "FIL trailer ({}):", r.trailer.meaning)?;
        writeln!(out, "  @N-8  {}", hex32(r.trailer.first))?;
        writeln!(out, "  @N-4  {}", hex32(r.trailer.second))?;
    }
    if let Some(fsp) = &r.fsp {
        writeln!(out, "FSP header (@38):")?;
        writeln!(out, "  space id      {}", fsp.space_id)?;
        writeln!(out, "  size          {} pages", fsp.size)?;
        writeln!(out, "  free limit    {}", fsp.free_limit)?;
        writeln!(out, "  frag n used   {}", fsp.frag_n_used)?;
        writeln!(out, "  next seg id   {}", fsp.next_seg_id)?;
        writeln!(out, "  flags         {}", fsp.flags.summary)?;
        if !fsp.flags.bits.is_empty() {
            writeln!(out, "                bits: {}", fsp.flags.bits.join(", "))?;
        }
    }
    if let Some(ix) = &r.index {
        writeln!(out, "INDEX header (@38):")?;
        writeln!(out, "  index id      {}", ix.index_id)?;
        let kind = if ix.level == 0 { "leaf" } else { "non-leaf" };
        writeln!(out, "  level         {} ({kind})", ix.level)?;
        writeln!(out, "  n recs        {}", ix.n_recs)?;
        writeln!(out, "  n heap        {} ({} format)", ix.n_heap, ix.format)?;
        writeln!(out, "  heap top      {}", ix.heap_top)?;
        writeln!(out, "  n dir slots   {}", ix.n_dir_slots)?;
        writeln!(out, "  free          {}", ix.free)?;
        writeln!(out, "  garbage       {} bytes", ix.garbage)?;
        writeln!(out, "  last insert   {}", ix.last_insert)?;
        writeln!(
            out,
            "  direction     {} (x{})",
            ix.direction, ix.n_direction
        )?;
        // A secondary-index leaf's newest writer (minnow and InnoDB); MariaDB 10.2.4+ reuses
        // the field on a clustered index's root page for the table's AUTO_INCREMENT counter.
        // A single-page index's root is also its only leaf, so the page alone cannot say
        // which meaning holds: name both.
        let root_note = if f.prev == minnow_page::fil::FIL_NULL
            && f.next == minnow_page::fil::FIL_NULL
            && ix.max_trx_id != 0
        {
            " (PAGE_MAX_TRX_ID if this is a secondary index; on a MariaDB clustered-index root, \
             PAGE_ROOT_AUTO_INC, the AUTO_INCREMENT value)"
        } else {
            ""
        };
        writeln!(out, "  max trx id    {}{root_note}", ix.max_trx_id)?;
        writeln!(
            out,
            "  seg leaf      space {} page {} offset {}",
            ix.seg_leaf.space_id,
            page_ptr(ix.seg_leaf.page_no),
            ix.seg_leaf.offset
        )?;
        writeln!(
            out,
            "  seg top       space {} page {} offset {}",
            ix.seg_top.space_id,
            page_ptr(ix.seg_top.page_no),
            ix.seg_top.offset
        )?;
        if r.zip_page.is_none() {
            writeln!(out, "  directory     {} slots:", ix.directory.len())?;
        }
        for chunk in ix.directory.chunks(12) {
            let slots: Vec<String> = chunk.iter().map(|s| format!("{s:>5}")).collect();
            writeln!(out, "   {}", slots.join(" "))?;
        }
    }
    trx::print_text(&r.trx, out)?;
    let c = &r.checksum;
    writeln!(
        out,
        "checksum (policy {}): {}",
        c.policy,
        c.verdict.to_uppercase()
    )?;
    if let Some(bad) = &c.corruption {
        for line in bad.text().lines().skip(1) {
            writeln!(out, "  {}", line.trim_start())?;
        }
        if bad.kind != "checksum" {
            writeln!(out, "  {}: {}", bad.kind, bad.reason)?;
        }
    }
    writeln!(
        out,
        "  computed: crc32 {}, innodb {}/{}, full_crc32 {}",
        opt_hex(c.computed.crc32),
        opt_hex(c.computed.innodb_new),
        opt_hex(c.computed.innodb_old),
        opt_hex(c.computed.full_crc32)
    )?;
    if let Some(recs) = &r.records {
        writeln!(out, "records ({} in key order):", recs.records.len())?;
        for rec in &recs.records {
            let mut flags = String::new();
            if rec.deleted {
                flags.push_str(" DELETED");
            }
            if rec.min_rec {
                flags.push_str(" MIN_REC");
            }
            writeln!(
                out,
                "  @{:<5} heap {:<4} {} owned {}{flags}",
                rec.offset, rec.heap_no, rec.status, rec.n_owned
            )?;
            if let (Some(t), Some(p)) = (rec.trx_id, &rec.roll_ptr) {
                writeln!(
                    out,
                    "      trx {t}, roll ptr: {}rseg {} page {} offset {}",
                    if p.insert { "insert, " } else { "" },
                    p.rseg,
                    p.page,
                    p.offset
                )?;
            }
            let fields: Vec<String> = rec
                .fields
                .iter()
                .filter(|f| f.name != "DB_TRX_ID" && f.name != "DB_ROLL_PTR")
                .map(|f| format!("{}={}", f.name, f.value))
                .collect();
            writeln!(out, "      {}", fields.join(" "))?;
        }
        for p in &recs.problems {
            writeln!(out, "  problem: {p}")?;
        }
    }
    if let Some(recs) = &r.minnow_records {
        minnow_records::print(recs, out)?;
    }
    if let Some(lines) = &r.hex {
        writeln!(out, "hex dump:")?;
        for line in lines {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}
