//! Space management: how a tablespace hands out pages, in **extents** and **segments**, after
//! InnoDB's `fsp0fsp.cc` (simplified; docs/FORMAT.md §3.2 has every byte).
//!
//! ## Why not just a free list?
//!
//! The simplest allocator is a high-water mark plus a list of freed pages. It works, but the
//! pages of one index end up scattered over the file in the order they happened to be needed,
//! and the pages of a dropped index sit on one long list mixed with everybody else's. InnoDB
//! wants two things a free list cannot give:
//!
//! 1. **Locality.** A range scan reads leaves left to right; if consecutive leaves are
//!    consecutive pages, read-ahead can fetch a whole megabyte in one IO. So space is handed
//!    to an index in **extents**: runs of contiguous pages, 1 MiB each (64 pages of 16 KiB,
//!    256 of 4 KiB), and the index fills its extent before it takes another.
//! 2. **Cheap ownership.** Dropping an index must give back all its pages without visiting
//!    them. So every page belongs to a **segment**, a set of pages with one owner, and the
//!    segment knows its extents through lists: freeing the segment walks those lists (a few
//!    descriptor pages), not the tree.
//!
//! ## The pieces
//!
//! ```text
//!  page 0 (FSP_HDR)                                  page 1 (INODE)
//!  +-------------------------------+                 +-------------------------------+
//!  | FSP header: size, free limit, |                 | inode 0: seg id 1             |
//!  |  FREE / FREE_FRAG / FULL_FRAG |                 |   FREE / NOT_FULL / FULL      |
//!  |  lists of extents, inode lists|                 |   extent lists, 32 fragment   |
//!  | XDES entry per extent:        |                 |   page slots                  |
//!  |  state, owner, 2 bits a page  |                 | inode 1: seg id 2 ...         |
//!  +-------------------------------+                 +-------------------------------+
//!            ^ the root page of each index points at its two inodes (FSEG headers)
//! ```
//!
//! - An **extent descriptor** (XDES entry) says what an extent is used for: FREE (nobody),
//!   FREE_FRAG / FULL_FRAG (single pages handed out one by one, "fragments"), or FSEG (owned
//!   whole by one segment), with a free bit per page. The entries of the first
//!   `page size` pages live in page 0; every later group of `page size` pages starts with an
//!   XDES page holding its group's entries.
//! - The **FSP header** chains the descriptors into three lists: FREE extents, FREE_FRAG
//!   (some fragment pages used) and FULL_FRAG.
//! - A **segment** lives in an *inode* entry of an INODE page: its id, up to 32 **fragment
//!   pages** (single pages taken from FREE_FRAG extents), and three lists of extents it owns:
//!   FREE (none used), NOT_FULL, FULL. A small index never needs a whole megabyte: its
//!   segments take their first 32 pages as fragments, and only a segment that grows past them
//!   takes whole extents.
//! - Each B-tree has **two segments**, as InnoDB's: leaves and non-leaf pages (the root
//!   belongs to the non-leaf one). Leaves are what scans read in order, so keeping them apart
//!   from the node pages keeps leaf extents dense. The root's page header points at both
//!   inodes (`PAGE_BTR_SEG_LEAF` at 74, `PAGE_BTR_SEG_TOP` at 84).
//!
//! A freed page goes back to its segment's extent (or, for a fragment page, to its FREE_FRAG
//! extent); an extent with no page left in use goes back to the space's FREE list, where any
//! segment can take it. The space grows, one extent at a time, only when FREE is empty.
//!
//! ## What minnow keeps and what it leaves out
//!
//! Kept: InnoDB's byte layout of the FSP header, XDES entries, INODE pages and FSEG headers,
//! its page types (FSP_HDR 8, XDES 9, INODE 3), its extent states and list semantics. Left out:
//! the insert-buffer bitmap page after each XDES page, the reservation of free extents ahead
//! of need (a segment's FREE list is always empty between mini-transactions: an extent a
//! segment takes is used at once and given back as soon as it is empty), and the
//! "fill factor" rule for when a segment takes a new extent. `SIZE` always equals
//! `FREE_LIMIT` (every page below the limit is described); the file itself grows lazily as
//! pages are first written.
//!
//! ## Atomicity and latching
//!
//! Every function takes the caller's mini-transaction: an allocation is atomic with the split
//! that needs it, a free with the merge that empties the page. Page 0 is X-latched first and
//! kept to commit, so the space's allocator is serialised; every other allocator page (XDES,
//! INODE) is only reached through page 0. These pages are always the **last** latches an mtr
//! takes (after every B-tree page it needs), and a page being allocated is one nobody else can
//! reach: so allocation never takes part in a deadlock cycle.

mod check;
mod fseg;
mod fsp;
#[cfg(test)]
mod shrink_tests;
#[cfg(test)]
mod tests;

use std::fmt;

use minnow_buf::{BufferPool, Mtr, PageHandle};
use minnow_page::{PageError, PageId, bytes, fil, fsp as fsph};
use minnow_redo::Lsn;

use crate::tree::TreeError;
pub use check::{SegmentReport, SpaceReport, check_space};
use fsp::Fsp;

/// Where the XDES array starts in page 0 and in every XDES page (after the 112-byte FSP
/// header, which XDES pages leave zero).
pub const XDES_ARR: usize = 150;
/// XDES state: not described yet (beyond the free limit).
pub const XDES_NOT_INITED: u32 = 0;
/// XDES state: no page in use, on the space's FREE list.
pub const XDES_FREE: u32 = 1;
/// XDES state: some pages used as fragment pages, on FREE_FRAG.
pub const XDES_FREE_FRAG: u32 = 2;
/// XDES state: every page used as a fragment page, on FULL_FRAG.
pub const XDES_FULL_FRAG: u32 = 3;
/// XDES state: owned whole by one segment, on one of its lists.
pub const XDES_FSEG: u32 = 4;
/// Fragment page slots per segment (InnoDB's `FSEG_FRAG_ARR_N_SLOTS`): a segment's first
/// pages are fragments, whole extents come after.
pub const FRAG_SLOTS: usize = 32;
/// Extents a [`free_segment`] step gives back per mini-transaction.
pub const EXTENTS_PER_MTR: usize = 64;

const FSP_FREE: Addr = Addr::of(0, fsph::FSP_HEADER + fsph::FREE);
const FSP_FREE_FRAG: Addr = Addr::of(0, fsph::FSP_HEADER + fsph::FREE_FRAG);
const FSP_FULL_FRAG: Addr = Addr::of(0, fsph::FSP_HEADER + fsph::FULL_FRAG);
const FSP_INODES_FULL: Addr = Addr::of(0, fsph::FSP_HEADER + fsph::SEG_INODES_FULL);
const FSP_INODES_FREE: Addr = Addr::of(0, fsph::FSP_HEADER + fsph::SEG_INODES_FREE);

/// The name of an XDES state.
pub fn state_name(s: u32) -> &'static str {
    match s {
        XDES_NOT_INITED => "NOT_INITED",
        XDES_FREE => "FREE",
        XDES_FREE_FRAG => "FREE_FRAG",
        XDES_FULL_FRAG => "FULL_FRAG",
        XDES_FSEG => "FSEG",
        _ => "unknown",
    }
}

pub(crate) fn corrupt(space: u32, page_no: u32, what: impl Into<String>) -> TreeError {
    TreeError::Corrupt {
        page: PageId::new(space, page_no),
        what: what.into(),
    }
}

/// Bit 0 of page `i`'s 2-bit field: set when the page is free.
fn bit_free(map: &[u8], i: u32) -> bool {
    map.get((i / 4) as usize)
        .is_some_and(|b| b & (1 << ((i % 4) * 2)) != 0)
}

/// A file address: page number and byte offset (InnoDB's `fil_addr_t`, 6 bytes on disk).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Addr {
    /// The page (`FIL_NULL` for a null address).
    pub page: u32,
    /// The byte offset in the page.
    pub off: u16,
}

impl Addr {
    /// The null address (page `FIL_NULL`, offset 0).
    pub const NULL: Addr = Addr {
        page: fil::FIL_NULL,
        off: 0,
    };

    const fn of(page: u32, off: usize) -> Addr {
        Addr {
            page,
            off: off as u16,
        }
    }

    /// True for the null address.
    pub fn is_null(self) -> bool {
        self.page == fil::FIL_NULL
    }

    fn at(self) -> usize {
        usize::from(self.off)
    }

    fn plus(self, n: usize) -> Addr {
        Addr::of(self.page, self.at() + n)
    }

    /// Decodes 6 bytes at `at`.
    pub fn read(page: &[u8], at: usize) -> Result<Addr, PageError> {
        Ok(Addr {
            page: bytes::read_u32(page, at)?,
            off: bytes::read_u16(page, at + 4)?,
        })
    }

    fn to_bytes(self) -> [u8; 6] {
        let [a, b, c, d] = self.page.to_be_bytes();
        let [e, f] = self.off.to_be_bytes();
        [a, b, c, d, e, f]
    }
}

impl fmt::Display for Addr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_null() {
            write!(f, "null")
        } else {
            write!(f, "{}:{}", self.page, self.off)
        }
    }
}

/// The sizes that follow from the page size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Page size in bytes.
    pub page: usize,
    /// Pages per extent: 1 MiB worth up to 16 KiB pages (256, 128, 64), 64 above.
    pub extent: u32,
}

impl Geometry {
    /// The geometry of pages of `page_len` bytes (4 to 64 KiB, a power of two).
    pub fn of(page_len: usize) -> Option<Geometry> {
        if !page_len.is_power_of_two() || !(4096..=65536).contains(&page_len) {
            return None;
        }
        let extent = if page_len <= 16384 {
            (1 << 20) / page_len as u32
        } else {
            64
        };
        Some(Geometry {
            page: page_len,
            extent,
        })
    }

    /// Pages described by one XDES page (page 0 or an XDES page): `page size` pages.
    pub fn group(&self) -> u32 {
        self.page as u32
    }

    /// Bytes of the per-page bitmap of an XDES entry (2 bits a page).
    pub fn bitmap_len(&self) -> usize {
        (self.extent / 4) as usize
    }

    /// Bytes of one XDES entry: id 8, list node 12, state 4, bitmap.
    pub fn xdes_size(&self) -> usize {
        24 + self.bitmap_len()
    }

    /// The first page of the extent holding `page`.
    pub fn extent_start(&self, page: u32) -> u32 {
        page - page % self.extent
    }

    /// True for page 0 and the XDES page starting each later group.
    pub fn is_descriptor(&self, page: u32) -> bool {
        page.is_multiple_of(self.group())
    }

    /// The address of the XDES entry describing `page`.
    pub fn xdes_addr(&self, page: u32) -> Addr {
        let g = page - page % self.group();
        let idx = ((page % self.group()) / self.extent) as usize;
        Addr::of(g, XDES_ARR + idx * self.xdes_size())
    }

    /// The extent an XDES entry at `at` of page `page` describes, if it is one.
    pub fn extent_at(&self, page: u32, at: usize) -> Option<u32> {
        let rel = at.checked_sub(XDES_ARR)?;
        let idx = rel / self.xdes_size();
        let per_page = (self.group() / self.extent) as usize;
        (self.is_descriptor(page) && rel % self.xdes_size() == 0 && idx < per_page)
            .then(|| page + idx as u32 * self.extent)
    }
}

/// An FSEG header (10 bytes, in a root page): where a segment's inode entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FsegHeader {
    /// The tablespace.
    pub space: u32,
    /// The INODE page.
    pub page: u32,
    /// The inode entry's offset in that page.
    pub offset: u16,
}

impl FsegHeader {
    /// Bytes on disk.
    pub const LEN: usize = 10;

    /// Decodes the header at `at` of `page`.
    pub fn read(page: &[u8], at: usize) -> Result<FsegHeader, PageError> {
        Ok(FsegHeader {
            space: bytes::read_u32(page, at)?,
            page: bytes::read_u32(page, at + 4)?,
            offset: bytes::read_u16(page, at + 8)?,
        })
    }

    /// The 10 bytes on disk.
    pub fn to_bytes(self) -> [u8; 10] {
        let [a, b, c, d] = self.space.to_be_bytes();
        let [e, f, g, h] = self.page.to_be_bytes();
        let [i, j] = self.offset.to_be_bytes();
        [a, b, c, d, e, f, g, h, i, j]
    }
}

impl fmt::Display for FsegHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "inode {}:{}:{}", self.space, self.page, self.offset)
    }
}

/// A segment: where its inode is, and its id (ids are never reused, so a stale reference to
/// a freed segment is recognised).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Segment {
    /// Where the inode entry is.
    pub header: FsegHeader,
    /// The segment id stored in the inode.
    pub id: u64,
}

/// The allocator's state of a space, as [`space_usage`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SpaceUsage {
    /// `SIZE`: pages described (equal to `free_limit` in minnow).
    pub size: u32,
    /// `FREE_LIMIT`: pages below it are described by XDES entries.
    pub free_limit: u32,
    /// Pages per extent.
    pub extent_pages: u32,
    /// Extents on the space's FREE list.
    pub free_extents: u32,
    /// Extents on FREE_FRAG.
    pub free_frag_extents: u32,
    /// Extents on FULL_FRAG.
    pub full_frag_extents: u32,
    /// `FRAG_N_USED`: pages used in FREE_FRAG extents.
    pub frag_n_used: u32,
    /// Free pages below the free limit (in free, fragment and segment extents).
    pub free_pages: u32,
}

/// The allocator's state of tablespace `space` (reads page 0 and the XDES pages under shared
/// latches; expects a quiet space for exact counts).
pub fn space_usage(pool: &BufferPool, space: u32) -> Result<SpaceUsage, TreeError> {
    Ok(check::scan(pool, space)?.usage)
}

/// Allocates a single page of `space` inside `mtr`, owned by no segment (a "fragment page for
/// this space", from a FREE_FRAG extent). The page comes back X-latched, zeroed and of type
/// ALLOCATED ([`Mtr::new_page`]). Give it back with [`free`].
pub fn allocate(mtr: &mut Mtr<'_>, space: u32) -> Result<PageHandle, TreeError> {
    let no = Fsp::open(mtr, space)?.alloc_frag(None)?;
    Ok(mtr.new_page(PageId::new(space, no))?)
}

/// Gives page `page_no` of `space` back inside `mtr`, whoever owns it: a segment's extent
/// page goes back to its segment, a segment's fragment page leaves the segment's slot, a page
/// from [`allocate`] goes back to its FREE_FRAG extent. The page is zeroed (so its LSN changes
/// and any saved cursor position on it is invalidated); it must no longer be reachable.
pub fn free(mtr: &mut Mtr<'_>, space: u32, page_no: u32) -> Result<(), TreeError> {
    let h = mtr.get_write(PageId::new(space, page_no))?;
    let mut f = Fsp::open(mtr, space)?;
    if page_no == 0 || page_no >= f.hdr(fsph::FREE_LIMIT)? {
        return Err(corrupt(
            space,
            page_no,
            "freeing a page that was never allocated",
        ));
    }
    match f.owner_of(page_no)? {
        Some(seg) => f.seg_free_page(seg, page_no)?,
        None => f.free_frag(page_no)?,
    }
    Ok(mtr.init_page(h)?)
}

/// Creates an empty segment in `space` inside `mtr`: an inode entry in an INODE page with
/// room (a new INODE page is allocated as a fragment page when none has).
pub fn create_segment(mtr: &mut Mtr<'_>, space: u32) -> Result<Segment, TreeError> {
    Fsp::open(mtr, space)?.create_seg()
}

/// Allocates a page for segment `seg` inside `mtr`: a fragment page while the segment uses
/// fewer than [`FRAG_SLOTS`] pages, then pages of its own extents (`hint` if it is free in
/// one of them, else the lowest free page of its first NOT_FULL extent, else the first page
/// of a new extent). The page comes back X-latched, zeroed and of type ALLOCATED.
pub fn allocate_in(
    mtr: &mut Mtr<'_>,
    seg: FsegHeader,
    hint: Option<u32>,
) -> Result<PageHandle, TreeError> {
    let no = Fsp::open(mtr, seg.space)?.seg_alloc(seg, hint)?;
    Ok(mtr.new_page(PageId::new(seg.space, no))?)
}

/// The lowest free page of segment `seg`'s partly used (NOT_FULL) extents, read inside
/// `mtr`; `None` if it has none. Passed as the hint of [`allocate_in`], it keeps a segment's
/// pages low in the file (`minnow_mvcc`'s slow-shutdown move of the undo streams).
pub fn lowest_free_in(mtr: &mut Mtr<'_>, seg: FsegHeader) -> Result<Option<u32>, TreeError> {
    Fsp::open(mtr, seg.space)?.seg_lowest_free(seg)
}

/// Gives page `page_no` back to segment `seg` inside `mtr` (see [`free`]); an error if the
/// segment does not own it.
pub fn free_in(mtr: &mut Mtr<'_>, seg: FsegHeader, page_no: u32) -> Result<(), TreeError> {
    let h = mtr.get_write(PageId::new(seg.space, page_no))?;
    Fsp::open(mtr, seg.space)?.seg_free_page(seg, page_no)?;
    Ok(mtr.init_page(h)?)
}

/// Reads segment `header`'s id from its inode (under a shared latch).
pub fn segment_at(pool: &BufferPool, header: FsegHeader) -> Result<Segment, TreeError> {
    let g = pool.get_read(PageId::new(header.space, header.page))?;
    let id = fseg::inode_id(&g, header)?;
    Ok(Segment { header, id })
}

/// One step of freeing a whole segment inside `mtr`: gives up to `max_extents` of its
/// extents back to the space; once it has none left, its fragment pages and its inode entry
/// too. Touches only page 0, XDES and INODE pages, never the segment's own pages. Returns
/// true when the segment is gone, including when it was already gone (its inode no longer
/// holds `seg.id`), so that a restarted drop can simply run again.
pub fn free_segment_step(
    mtr: &mut Mtr<'_>,
    seg: Segment,
    max_extents: usize,
) -> Result<bool, TreeError> {
    Fsp::open(mtr, seg.header.space)?.seg_free_step(seg, max_extents)
}

/// One step of [`shrink_tail`] inside `mtr`: takes up to `max_extents` unused extents off the
/// end of `space` (FREE extents, and a descriptor group's first extent once its XDES page is
/// all it holds), lowering `FREE_LIMIT` and `SIZE` with them. Returns how many it took; the
/// space stays consistent after every step.
pub fn shrink_tail_step(
    mtr: &mut Mtr<'_>,
    space: u32,
    max_extents: usize,
) -> Result<u32, TreeError> {
    Fsp::open(mtr, space)?.shrink_tail(max_extents)
}

/// Gives the unused extents at the end of `space` back: one mtr per [`EXTENTS_PER_MTR`]
/// extents, until the last extent has a page in use. Returns the space's size in pages
/// afterwards (its `SIZE`, equal to `FREE_LIMIT`), whether or not anything was taken.
///
/// Only the allocator's pages change: the file keeps its length. Cutting it is safe once
/// this change can no longer be undone by recovery and no copy of a page beyond the new
/// size can be written back: after the final flush and checkpoint of a clean shutdown, with
/// the doublewrite segments emptied (`minnow_buf::BufferPool::cut_space`). Until then a file
/// longer than `SIZE` is harmless: the pages beyond it are never read, and growing the space
/// formats them afresh.
pub fn shrink_tail(pool: &BufferPool, space: u32) -> Result<u32, TreeError> {
    loop {
        let mut mtr = pool.mtr()?;
        let taken = shrink_tail_step(&mut mtr, space, EXTENTS_PER_MTR)?;
        let size = Fsp::open(&mut mtr, space)?.hdr(fsph::SIZE)?;
        mtr.commit()?;
        if (taken as usize) < EXTENTS_PER_MTR {
            return Ok(size);
        }
    }
}

/// Frees a whole segment: [`free_segment_step`] in one mtr per [`EXTENTS_PER_MTR`] extents
/// (one mtr for any segment of up to 64 MiB at 16 KiB pages). Each mtr leaves a consistent
/// space (a smaller segment). Returns the last mtr's end LSN.
pub fn free_segment(pool: &BufferPool, seg: Segment) -> Result<Lsn, TreeError> {
    loop {
        let mut mtr = pool.mtr()?;
        let done = free_segment_step(&mut mtr, seg, EXTENTS_PER_MTR)?;
        let end = mtr.commit()?;
        if done {
            return Ok(end);
        }
    }
}
