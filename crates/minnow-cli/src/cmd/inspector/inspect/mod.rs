//! `minnow inspect FILE`: what is in a tablespace, at a glance.
//!
//! The report shows:
//!
//! - **geometry**: the page size, and the size in pages twice, as page 0's FSP header records it
//!   and as the file's length gives it (InnoDB extends a file before it records the new size, so
//!   the two can differ after a crash);
//! - **page 0's FSP header**: the space id every page of the file repeats, the free limit, and the
//!   flags, decoded;
//! - **page types**: how many pages of each type (InnoDB's names: `INDEX`, `FSP_HDR`, `XDES`,
//!   `IBUF_BITMAP`, `INODE`, `ALLOCATED`, ...). A file-per-table tablespace starts with
//!   `FSP_HDR`, `IBUF_BITMAP`, `INODE`, then the index roots;
//! - **LSN range**: the smallest and largest non-zero page LSN: how far the redo log had got
//!   when the oldest and the newest page was last written;
//! - **checksums**: how many pages matched each algorithm, how many are empty (all zero) and how
//!   many are corrupt;
//! - **indexes**: for INDEX pages, grouped by index id, named `table.index` when the file lies
//!   in a minnow data directory (from the dictionary in its `ibdata1`): pages, leaves, non-leaf
//!   pages, pages per level, the tree's height and its root (the one page on the top level). A
//!   tree of height 2 is a root above a row of leaves;
//! - **space usage** ([`usage`]): per index and over all INDEX pages, the fill factor
//!   (live records and directory over the page's capacity), the free bytes (the gap between
//!   heap top and directory) and the fragmented bytes (deleted records, `PAGE_GARBAGE`); and
//!   the pages never written (all zero);
//! - **LSN age**: pages by how far their LSN is behind the end of the redo log (when
//!   `ib_logfile0` is beside the file) or the file's newest page, in buckets, and how many were
//!   written since the last checkpoint;
//! - **a page map**, one character per page, 64 per line (one 1 MiB extent of 16 KiB pages), in
//!   the spirit of innodb_ruby's `space-extents-illustrate`: it shows at a glance where the
//!   indexes live, how the file was extended, and how much of it is still unused;
//! - **compression**, for a compressed tablespace (minnow's blocks, docs/FORMAT.md §12): the
//!   `KEY_BLOCK_SIZE`, algorithm and level, the logical page size, and how well the pages
//!   compress ([`ZipReport`]): the smallest, median and largest compressed payload, a
//!   histogram of the payload as a share of its block in 10 % buckets (a page near 100 % is
//!   close to not fitting, which is when InnoDB splits it), and the average ratio of payload
//!   to logical page. `--zip-pages` lists every page's payload. The payload length is read
//!   from each block's zip header, so it costs no inflating; the rest of the report is built
//!   from the inflated pages, as for a plain file.
//!
//! An InnoDB ROW_FORMAT=COMPRESSED tablespace is read in its physical pages (`KEY_BLOCK_SIZE`
//! bytes, from the FSP flags) and checked with the compressed-page checksum; page types, LSNs,
//! indexes (pages, levels, leaf records: the uncompressed page header says) and the map are
//! reported as for a plain file, but not the space usage, which needs the logical pages.
//!
//! Exit 0 when no page is corrupt, 1 otherwise, 2 when the file cannot be read.

mod print;
pub mod usage;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use minnow_page::PageType;
use minnow_page::checksum::Verdict;
use minnow_page::fil::FilHeader;
use minnow_page::fsp::FspHeader;
use minnow_page::index::IndexHeader;
use serde::Serialize;

use crate::check::Tally;
use crate::cli::{ReadOpts, Status};
use crate::describe::FlagsInfo;
use crate::dict;
use crate::output::CliError;
use crate::report;
use crate::space::{BlockState, PageSizeSource, Space, SpaceError, ZipInfo};
use usage::{LsnAges, Usage};

/// Files with more pages than this get no page map unless `--map-max` says otherwise.
pub const DEFAULT_MAP_MAX: u64 = 16384;

/// Characters of the page map, one per page.
pub const LEGEND: &[(char, &str)] = &[
    (
        'F',
        "FSP_HDR (page 0: file space header and first extent descriptors)",
    ),
    ('X', "XDES (extent descriptors)"),
    ('B', "IBUF_BITMAP (change buffer bitmap)"),
    ('N', "INODE (file segment inodes)"),
    ('I', "INDEX (B-tree node)"),
    ('S', "SDI (serialized dictionary, MySQL 8.0)"),
    ('R', "RTREE (spatial index node)"),
    ('U', "UNDO_LOG"),
    ('L', "BLOB / LOB (externally stored column)"),
    ('T', "TRX_SYS / SYS / RSEG_ARRAY (system pages)"),
    ('M', "minnow-only page type"),
    ('.', "all zero (allocated, never written)"),
    (
        'a',
        "type ALLOCATED (0) on a written page (files older than MySQL 5.1.7 left the type of \
         non-index pages unset)",
    ),
    ('!', "corrupt (checksum or LSN check failed)"),
    ('?', "other page type"),
];

/// Page map characters per line: one extent of 16 KiB pages.
pub const MAP_WIDTH: usize = 64;

/// The FSP header of page 0, decoded.
#[derive(Debug, Serialize)]
pub struct FspInfo {
    /// The tablespace id.
    pub space_id: u32,
    /// Size in pages, as the header records it.
    pub size_pages: u32,
    /// First page not yet added to a free list.
    pub free_limit: u32,
    /// Pages used in FREE_FRAG extents.
    pub frag_n_used: u32,
    /// Next unused segment id.
    pub next_seg_id: u64,
    /// Lengths of the FSP lists: free extents, FREE_FRAG and FULL_FRAG extents, full and
    /// non-full INODE pages (docs/FORMAT.md §3.2).
    pub lists: FspLists,
    /// The flags, decoded.
    pub flags: FlagsInfo,
}

/// The lengths of page 0's list bases.
#[derive(Debug, Serialize)]
pub struct FspLists {
    /// Extents with no page used.
    pub free_extents: u32,
    /// Extents with some pages used as fragment pages.
    pub free_frag_extents: u32,
    /// Extents whose pages are all used as fragment pages.
    pub full_frag_extents: u32,
    /// INODE pages with no free slot.
    pub inode_pages_full: u32,
    /// INODE pages with a free slot.
    pub inode_pages_free: u32,
}

impl FspLists {
    fn read(page0: &[u8]) -> FspLists {
        use minnow_page::fsp as f;
        let len =
            |base: usize| minnow_page::bytes::read_u32(page0, f::FSP_HEADER + base).unwrap_or(0);
        FspLists {
            free_extents: len(f::FREE),
            free_frag_extents: len(f::FREE_FRAG),
            full_frag_extents: len(f::FULL_FRAG),
            inode_pages_full: len(f::SEG_INODES_FULL),
            inode_pages_free: len(f::SEG_INODES_FREE),
        }
    }
}

/// Pages of one type.
#[derive(Debug, Serialize)]
pub struct TypeCount {
    /// InnoDB's name for the type.
    pub name: &'static str,
    /// The number stored at offset 24.
    pub type_number: u16,
    /// How many pages carry it.
    pub pages: u64,
}

/// The smallest and largest non-zero page LSN.
#[derive(Debug, Serialize)]
pub struct LsnRange {
    /// Smallest non-zero page LSN.
    pub min: u64,
    /// Largest page LSN.
    pub max: u64,
}

/// Pages on one level of a B-tree.
#[derive(Debug, Serialize)]
pub struct LevelCount {
    /// The level (0 = leaves).
    pub level: u16,
    /// Pages on it.
    pub pages: u64,
}

/// The pages of one index.
#[derive(Debug, Serialize)]
pub struct IndexStats {
    /// The index id (`PAGE_INDEX_ID`).
    pub index_id: u64,
    /// `table.index`, from the dictionary of the minnow data directory holding the file
    /// ([`crate::dict::beside`]); `None` elsewhere (an InnoDB file, a copy).
    pub name: Option<String>,
    /// Pages of the index.
    pub pages: u64,
    /// Leaf pages (level 0).
    pub leaves: u64,
    /// Non-leaf pages.
    pub non_leaf: u64,
    /// User records on the leaves.
    pub leaf_records: u64,
    /// Highest level + 1.
    pub height: u32,
    /// The page on the highest level, if there is exactly one (the root).
    pub root_page: Option<u64>,
    /// Pages per level, leaves first.
    pub levels: Vec<LevelCount>,
    /// Fill, free and fragmented space over all its pages.
    pub usage: Usage,
    /// The same over its leaves only.
    pub leaf_usage: Usage,
}

/// The page map.
#[derive(Debug, Serialize)]
pub struct PageMap {
    /// Characters per line.
    pub width: usize,
    /// One string per line of `width` pages.
    pub lines: Vec<String>,
    /// What each character means.
    pub legend: BTreeMap<String, &'static str>,
}

/// The whole report.
#[derive(Debug, Serialize)]
pub struct InspectReport {
    /// The file.
    pub file: String,
    /// Its length in bytes.
    pub file_bytes: u64,
    /// The page size in bytes.
    pub page_size: usize,
    /// Where the page size came from.
    pub page_size_source: PageSizeSource,
    /// Whole pages in the file.
    pub file_pages: u64,
    /// Bytes of a partial page at the end (0 if none).
    pub trailing_bytes: u64,
    /// Page 0's FSP header, if page 0 could be read.
    pub fsp: Option<FspInfo>,
    /// The checksum policy applied.
    pub policy: String,
    /// Verdict counts (the partial page, if any, counts as corrupt).
    pub checksums: Tally,
    /// Corrupt page numbers.
    pub corrupt_pages: Vec<u64>,
    /// Page type histogram, by type number.
    pub page_types: Vec<TypeCount>,
    /// LSN range of the non-empty, intact pages.
    pub lsn: Option<LsnRange>,
    /// Space ids seen in intact page headers other than the FSP header's, with counts.
    pub foreign_space_ids: BTreeMap<u32, u64>,
    /// B-tree indexes, by index id.
    pub indexes: Vec<IndexStats>,
    /// Fill, free and fragmented space over every INDEX page.
    pub index_usage: Usage,
    /// Pages never written (all zero).
    pub empty_pages: u64,
    /// Pages by LSN age (absent when no page has an LSN).
    pub lsn_ages: Option<LsnAges>,
    /// The page map, for files up to `--map-max` pages.
    pub map: Option<PageMap>,
    /// For a compressed tablespace: its layout and per-page compressed sizes.
    pub compression: Option<ZipReport>,
    /// For an InnoDB ROW_FORMAT=COMPRESSED tablespace, the physical (compressed) page size in
    /// bytes (`KEY_BLOCK_SIZE`); absent for other files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zip_size: Option<usize>,
}

/// What a compressed tablespace's blocks hold.
#[derive(Debug, Serialize)]
pub struct ZipReport {
    /// Block size, algorithm, level, logical page size.
    #[serde(flatten)]
    pub layout: ZipInfo,
    /// Blocks that restore to a page (the pages the statistics describe).
    pub compressed_pages: u64,
    /// All-zero blocks (allocated, never written).
    pub empty_blocks: u64,
    /// Blocks that do not restore (also counted as corrupt pages).
    pub damaged_blocks: u64,
    /// Payload lengths of the restored pages, if there is any.
    pub payload: Option<PayloadStats>,
    /// Restored pages by payload as a share of the block, in 10 % buckets.
    pub share_of_block: Vec<ShareBucket>,
    /// The average ratio of payload to logical page: all payload bytes over the logical bytes
    /// of the restored pages (0.25 is 4:1).
    pub ratio: Option<f64>,
    /// Every non-empty block's payload, with `--zip-pages`.
    pub pages: Option<Vec<BlockEntry>>,
}

/// The smallest, median and largest payload, and their sum.
#[derive(Debug, Serialize)]
pub struct PayloadStats {
    /// Smallest payload in bytes.
    pub min: usize,
    /// The median payload (the lower middle value for an even count).
    pub median: usize,
    /// Largest payload in bytes.
    pub max: usize,
    /// All payload bytes.
    pub total: u64,
}

/// Pages whose payload is `from_pct` to `to_pct` per cent of the block.
#[derive(Debug, Serialize)]
pub struct ShareBucket {
    /// Lower bound, included.
    pub from_pct: u32,
    /// Upper bound, excluded (the last bucket includes 100).
    pub to_pct: u32,
    /// Pages in it.
    pub pages: u64,
}

/// One block, with `--zip-pages`.
#[derive(Debug, Serialize)]
pub struct BlockEntry {
    /// The page number.
    pub page: u64,
    /// The page type from the block's verbatim FIL header.
    pub page_type: &'static str,
    /// The payload length the zip header records (absent if the header does not decode).
    pub payload_len: Option<usize>,
    /// The payload as a share of the block (0 to 1).
    pub share_of_block: Option<f64>,
    /// Whether the block restores (`intact`) or not (`damaged`).
    pub state: &'static str,
    /// What is wrong with a damaged block.
    pub error: Option<String>,
}

/// Gathers per-block sizes while the file is scanned.
#[derive(Default)]
struct ZipAcc {
    payloads: Vec<usize>,
    empty: u64,
    damaged: u64,
    entries: Vec<BlockEntry>,
}

impl ZipAcc {
    fn add(&mut self, page_no: u64, block: &[u8], state: &BlockState, list: bool) {
        let share = |len: usize| len as f64 / block.len().max(1) as f64;
        let (payload_len, error) = match state {
            BlockState::Empty => {
                self.empty += 1;
                return;
            }
            BlockState::Intact(h) => {
                self.payloads.push(h.payload_len);
                (Some(h.payload_len), None)
            }
            BlockState::Damaged { header, error } => {
                self.damaged += 1;
                (header.map(|h| h.payload_len), Some(error.to_string()))
            }
        };
        if list {
            self.entries.push(BlockEntry {
                page: page_no,
                page_type: FilHeader::read(block).unwrap_or_default().page_type.name(),
                payload_len,
                share_of_block: payload_len.map(share),
                state: if error.is_some() { "damaged" } else { "intact" },
                error,
            });
        }
    }

    fn finish(mut self, layout: ZipInfo, list: bool) -> ZipReport {
        self.payloads.sort_unstable();
        let n = self.payloads.len();
        let total: u64 = self.payloads.iter().map(|&p| p as u64).sum();
        let payload = match (self.payloads.first(), self.payloads.last()) {
            (Some(&min), Some(&max)) => Some(PayloadStats {
                min,
                median: self.payloads.get((n - 1) / 2).copied().unwrap_or_default(),
                max,
                total,
            }),
            _ => None,
        };
        let mut buckets = [0u64; 10];
        for &p in &self.payloads {
            let i = (p * 10 / layout.block_size.max(1)).min(9);
            if let Some(b) = buckets.get_mut(i) {
                *b += 1;
            }
        }
        let ratio = (n > 0).then(|| total as f64 / (n as f64 * layout.logical_page_size as f64));
        ZipReport {
            compressed_pages: n as u64,
            empty_blocks: self.empty,
            damaged_blocks: self.damaged,
            payload,
            share_of_block: (0u32..)
                .zip(buckets)
                .map(|(i, pages)| ShareBucket {
                    from_pct: i * 10,
                    to_pct: i * 10 + 10,
                    pages,
                })
                .collect(),
            ratio,
            pages: list.then_some(self.entries),
            layout,
        }
    }
}

#[derive(Default)]
struct IndexAcc {
    pages: u64,
    leaf_records: u64,
    levels: BTreeMap<u16, (u64, u64)>, // level -> (pages, last page seen)
    usage: Usage,
    leaf_usage: Usage,
}

/// Runs `minnow inspect`.
pub fn run(
    path: &Path,
    opts: &ReadOpts,
    map_max: u64,
    zip_pages: bool,
    json: bool,
    out: &mut dyn Write,
) -> Result<Status, CliError> {
    let report = inspect(path, opts, map_max, zip_pages)?;
    let status = if report.checksums.corrupt > 0 {
        Status::Corrupt
    } else {
        Status::Clean
    };
    report::emit(out, json, &report, print::print_text)?;
    Ok(status)
}

/// Builds the report for one file; `zip_pages` lists every compressed block's payload.
pub fn inspect(
    path: &Path,
    opts: &ReadOpts,
    map_max: u64,
    zip_pages: bool,
) -> Result<InspectReport, SpaceError> {
    let space = Space::open(path, opts.page_size)?;
    let policy = space.policy(opts.checksum);
    let fsp = read_fsp(&space)?;
    let fsp_space_id = fsp.as_ref().map(|f| f.space_id);
    let want_map = space.pages() <= map_max;

    let mut checksums = Tally::default();
    let mut corrupt_pages = Vec::new();
    let mut types: BTreeMap<u16, u64> = BTreeMap::new();
    let mut lsn: Option<(u64, u64)> = None;
    let mut foreign_space_ids: BTreeMap<u32, u64> = BTreeMap::new();
    let mut indexes: BTreeMap<u64, IndexAcc> = BTreeMap::new();
    let mut map = String::new();
    let mut index_usage = Usage::default();
    let mut empty_pages = 0;
    let mut lsns = Vec::new();
    let mut zip = ZipAcc::default();

    space.scan(|slot| {
        let page_no = slot.page_no;
        if let Some(block) = &slot.block {
            zip.add(page_no, block.bytes, &block.state, zip_pages);
        }
        let Some(page) = slot.page else {
            // A block that does not restore: only its verbatim FIL header can be read.
            let header = slot
                .block
                .as_ref()
                .and_then(|b| FilHeader::read(b.bytes).ok())
                .unwrap_or_default();
            checksums.add_damaged_block();
            corrupt_pages.push(page_no);
            *types.entry(header.page_type.to_u16()).or_default() += 1;
            if want_map {
                map.push('!');
            }
            return Ok(());
        };
        let verdict = space.check(page, policy);
        checksums.add(&verdict);
        let header = FilHeader::read(page).unwrap_or_default();
        *types.entry(header.page_type.to_u16()).or_default() += 1;
        let intact = verdict.is_ok();
        // Under policy `none` no page is "empty" in the checksum sense; the map still shows
        // all-zero pages as such.
        let empty =
            matches!(verdict, Ok(Verdict::Empty)) || (intact && page.iter().all(|&b| b == 0));
        if !intact {
            corrupt_pages.push(page_no);
        }
        if want_map {
            map.push(map_char(header.page_type, intact, empty));
        }
        empty_pages += u64::from(empty);
        if !intact || empty {
            return Ok::<(), SpaceError>(());
        }
        if header.lsn != 0 {
            lsns.push(header.lsn);
            lsn = Some(match lsn {
                None => (header.lsn, header.lsn),
                Some((lo, hi)) => (lo.min(header.lsn), hi.max(header.lsn)),
            });
        }
        if fsp_space_id.is_some_and(|id| id != header.space_id) {
            *foreign_space_ids.entry(header.space_id).or_default() += 1;
        }
        if matches!(
            header.page_type,
            PageType::Index | PageType::Rtree | PageType::Sdi
        ) && let Ok(ih) = IndexHeader::read(page)
        {
            let acc = indexes.entry(ih.index_id).or_default();
            acc.pages += 1;
            // A compressed page's header describes its logical page, which is not in the file.
            let plain = space.innodb_zip().is_none();
            if plain {
                acc.usage.add(page, &ih);
                index_usage.add(page, &ih);
            }
            if ih.level == 0 {
                acc.leaf_records += u64::from(ih.n_recs);
                if plain {
                    acc.leaf_usage.add(page, &ih);
                }
            }
            let level = acc.levels.entry(ih.level).or_default();
            level.0 += 1;
            level.1 = page_no;
        }
        Ok(())
    })?;

    let trailing_bytes = space.trailing_bytes();
    if trailing_bytes > 0 {
        checksums.add_partial();
        corrupt_pages.push(space.pages());
    }

    let map = want_map.then(|| PageMap {
        width: MAP_WIDTH,
        lines: map
            .as_bytes()
            .chunks(MAP_WIDTH)
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect(),
        legend: LEGEND.iter().map(|(c, d)| (c.to_string(), *d)).collect(),
    });

    Ok(InspectReport {
        file: space.name(),
        file_bytes: space.len(),
        page_size: space.page_size().bytes(),
        page_size_source: space.page_size_source(),
        file_pages: space.pages(),
        trailing_bytes,
        fsp,
        policy: policy.to_string(),
        checksums,
        corrupt_pages,
        page_types: types
            .into_iter()
            .map(|(t, pages)| TypeCount {
                name: PageType::from_u16(t).name(),
                type_number: t,
                pages,
            })
            .collect(),
        lsn: lsn.map(|(min, max)| LsnRange { min, max }),
        foreign_space_ids,
        indexes: {
            let names = dict::beside(path)
                .map(|t| t.index_names())
                .unwrap_or_default();
            indexes
                .into_iter()
                .map(|(index_id, acc)| index_stats(index_id, names.get(&index_id).cloned(), acc))
                .collect()
        },
        index_usage,
        empty_pages,
        lsn_ages: usage::ages(&lsns, usage::log_lsns(path)),
        map,
        compression: space
            .zip()
            .map(|z| zip.finish(z.info(space.page_size()), zip_pages)),
        zip_size: space.innodb_zip(),
    })
}

fn index_stats(index_id: u64, name: Option<String>, acc: IndexAcc) -> IndexStats {
    let leaves = acc.levels.get(&0).map_or(0, |l| l.0);
    let top = acc.levels.iter().next_back();
    IndexStats {
        index_id,
        name,
        pages: acc.pages,
        leaves,
        non_leaf: acc.pages - leaves,
        leaf_records: acc.leaf_records,
        height: top.map_or(0, |(level, _)| u32::from(*level) + 1),
        root_page: top.and_then(|(_, (n, page))| (*n == 1).then_some(*page)),
        levels: acc
            .levels
            .iter()
            .map(|(level, (pages, _))| LevelCount {
                level: *level,
                pages: *pages,
            })
            .collect(),
        usage: acc.usage,
        leaf_usage: acc.leaf_usage,
    }
}

/// Reads page 0's FSP header (from a partial page 0 if the file is shorter than a page).
fn read_fsp(space: &Space) -> Result<Option<FspInfo>, SpaceError> {
    let page0 = if space.pages() > 0 && space.innodb_zip().is_some() {
        space.read_block(0)?
    } else if space.pages() > 0 {
        let mut buf = vec![0u8; space.page_size().bytes()];
        space.read_page(0, &mut buf)?;
        buf
    } else {
        space.read_partial()?.unwrap_or_default()
    };
    Ok(FspHeader::read(&page0).ok().map(|h| FspInfo {
        space_id: h.space_id,
        size_pages: h.size,
        free_limit: h.free_limit,
        frag_n_used: h.frag_n_used,
        next_seg_id: h.next_seg_id,
        lists: FspLists::read(&page0),
        flags: FlagsInfo::new(h.flags),
    }))
}

/// The page map character of a page.
pub fn map_char(page_type: PageType, intact: bool, empty: bool) -> char {
    if !intact {
        return '!';
    }
    if empty {
        return '.';
    }
    match page_type {
        PageType::FspHdr => 'F',
        PageType::Xdes => 'X',
        PageType::IbufBitmap => 'B',
        PageType::Inode => 'N',
        PageType::Index => 'I',
        PageType::Sdi => 'S',
        PageType::Rtree => 'R',
        PageType::UndoLog => 'U',
        PageType::Blob
        | PageType::Zblob
        | PageType::Zblob2
        | PageType::SdiBlob
        | PageType::SdiZblob
        | PageType::LobIndex
        | PageType::LobData
        | PageType::LobFirst
        | PageType::ZlobFirst
        | PageType::ZlobData
        | PageType::ZlobIndex
        | PageType::ZlobFrag
        | PageType::ZlobFragEntry => 'L',
        PageType::TrxSys | PageType::Sys | PageType::RsegArray => 'T',
        PageType::Allocated => 'a',
        PageType::Other(0x4D00..=0x4DFF) => 'M',
        _ => '?',
    }
}
