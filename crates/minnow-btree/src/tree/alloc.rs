//! A simple page allocator for one tablespace, kept in page 0.
//!
//! InnoDB manages space in *extents* (64 contiguous pages) and *segments* (the leaf and
//! non-leaf page sets of an index, with their own extents and 32 "fragment" pages), described
//! by XDES entries and INODE pages. minnow does not have that yet. Until it does, this module
//! is the allocator, and it is deliberately small:
//!
//! - **High-water mark**: the FSP header's `FREE_LIMIT` field (page 0, offset 50; InnoDB's
//!   "first page not yet added to a free list") holds the first page number never handed
//!   out. A fresh tablespace has 0 there; page 0 itself is never handed out, so allocation
//!   starts at 1. `SIZE` (offset 46) is raised to cover every page handed out.
//! - **Free list**: pages given back (after merges or a root lowering) form a singly linked
//!   list through their own FIL `NEXT` field. Its head and length live in a minnow-owned
//!   12-byte record at offset [`ALLOC_AT`] of page 0 (where InnoDB's XDES array would start;
//!   minnow writes no XDES entries yet): the magic `MNFL`, the head page number (`FIL_NULL`
//!   when empty) and the number of free pages. A free page is a zeroed page of type ALLOCATED
//!   whose body starts with the magic `MNFREE` (offset 38), so the list can be checked.
//!
//! Every change (page 0, the freed or reused page) is made inside the caller's
//! mini-transaction, so an allocation is atomic with the split that needed it and a free with
//! the merge that produced it: after a crash, redo replays both or neither.
//!
//! **Latching**: page 0 is X-latched by the allocating mtr until it commits, so allocation is
//! serialised per tablespace. It is always the *last* tree-related latch an mtr takes (after
//! every B-tree page it needs), and whoever holds it waits only for free pages, which no other
//! thread can reach: that keeps it out of every deadlock cycle.

use minnow_buf::{BufferPool, Mtr, PageHandle};
use minnow_page::{PageId, bytes, fil, fsp};

use super::TreeError;
use super::page::NIL;

/// Offset in page 0 of the allocator's record: magic, free-list head, free-list length.
pub const ALLOC_AT: usize = 150;
const MAGIC: &[u8; 4] = b"MNFL";
const FREE_MAGIC: &[u8; 6] = b"MNFREE";
const FREE_LIMIT_AT: usize = fsp::FSP_HEADER + fsp::FREE_LIMIT;
const SIZE_AT: usize = fsp::FSP_HEADER + fsp::SIZE;

/// The allocator's state, as read from page 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpaceUsage {
    /// The first page number never handed out (pages `1..free_limit` are in use or free).
    pub free_limit: u32,
    /// Head of the free-page list (`FIL_NULL` when empty).
    pub free_head: u32,
    /// Pages on the free list.
    pub free_pages: u32,
}

fn corrupt(space: u32, page_no: u32, what: impl Into<String>) -> TreeError {
    TreeError::Corrupt {
        page: PageId::new(space, page_no),
        what: what.into(),
    }
}

fn read_usage(space: u32, page0: &[u8]) -> Result<SpaceUsage, TreeError> {
    let err = |e: minnow_page::PageError| corrupt(space, 0, e.to_string());
    let free_limit = bytes::read_u32(page0, FREE_LIMIT_AT).map_err(err)?.max(1);
    let magic = bytes::slice(page0, ALLOC_AT, 4).map_err(err)?;
    if magic == MAGIC {
        Ok(SpaceUsage {
            free_limit,
            free_head: bytes::read_u32(page0, ALLOC_AT + 4).map_err(err)?,
            free_pages: bytes::read_u32(page0, ALLOC_AT + 8).map_err(err)?,
        })
    } else if magic.iter().all(|&b| b == 0) {
        Ok(SpaceUsage {
            free_limit,
            free_head: NIL,
            free_pages: 0,
        })
    } else {
        Err(corrupt(space, 0, "unknown page allocator record"))
    }
}

fn write_list(mtr: &mut Mtr<'_>, h0: PageHandle, head: u32, len: u32) -> Result<(), TreeError> {
    let rec = [MAGIC.as_slice(), &head.to_be_bytes(), &len.to_be_bytes()].concat();
    mtr.write(h0, ALLOC_AT, &rec)?;
    Ok(())
}

/// The allocator's state of tablespace `space` (reads page 0 under a shared latch).
pub fn space_usage(pool: &BufferPool, space: u32) -> Result<SpaceUsage, TreeError> {
    let g = pool.get_read(PageId::new(space, 0))?;
    read_usage(space, &g)
}

/// Allocates a page of `space` inside `mtr`: the head of the free list, else the page at the
/// high-water mark (extending the file). The page comes back X-latched, zeroed and of type
/// ALLOCATED ([`Mtr::new_page`]).
pub fn allocate(mtr: &mut Mtr<'_>, space: u32) -> Result<PageHandle, TreeError> {
    let h0 = mtr.get_write(PageId::new(space, 0))?;
    let u = read_usage(space, mtr.page(h0))?;
    if u.free_head != NIL {
        let no = u.free_head;
        if no == 0 || no >= u.free_limit || u.free_pages == 0 {
            return Err(corrupt(
                space,
                0,
                format!("free-list head {no} is not a page in use"),
            ));
        }
        let h = mtr.get_write(PageId::new(space, no))?;
        let page = mtr.page(h);
        let is_free =
            bytes::slice(page, fil::HEADER_SIZE, FREE_MAGIC.len()).is_ok_and(|m| m == FREE_MAGIC);
        if !is_free {
            return Err(corrupt(
                space,
                no,
                "page on the free list is not marked free",
            ));
        }
        let next =
            bytes::read_u32(page, fil::NEXT).map_err(|e| corrupt(space, no, e.to_string()))?;
        write_list(mtr, h0, next, u.free_pages - 1)?;
        mtr.init_page(h)?;
        return Ok(h);
    }
    let no = u.free_limit;
    let after = no
        .checked_add(1)
        .ok_or_else(|| corrupt(space, 0, "tablespace has no page numbers left"))?;
    mtr.write(h0, FREE_LIMIT_AT, &after.to_be_bytes())?;
    let size =
        bytes::read_u32(mtr.page(h0), SIZE_AT).map_err(|e| corrupt(space, 0, e.to_string()))?;
    if size < after {
        mtr.write(h0, SIZE_AT, &after.to_be_bytes())?;
    }
    if u.free_head == NIL && bytes::slice(mtr.page(h0), ALLOC_AT, 4).is_ok_and(|m| m != MAGIC) {
        write_list(mtr, h0, NIL, 0)?;
    }
    Ok(mtr.new_page(PageId::new(space, no))?)
}

/// Gives page `page_no` of `space` back inside `mtr`: zeroes it (so its LSN changes and any
/// saved cursor position on it is invalidated), marks it free and pushes it on the free list.
/// The page must be held by `mtr` or be latchable by it, and must no longer be reachable from
/// any tree.
pub fn free(mtr: &mut Mtr<'_>, space: u32, page_no: u32) -> Result<(), TreeError> {
    let h = mtr.get_write(PageId::new(space, page_no))?;
    let h0 = mtr.get_write(PageId::new(space, 0))?;
    let u = read_usage(space, mtr.page(h0))?;
    if page_no == 0 || page_no >= u.free_limit {
        return Err(corrupt(
            space,
            page_no,
            "freeing a page that was never allocated",
        ));
    }
    mtr.init_page(h)?;
    mtr.write(h, fil::NEXT, &u.free_head.to_be_bytes())?;
    mtr.write(h, fil::PREV, &NIL.to_be_bytes())?;
    mtr.write(h, fil::HEADER_SIZE, FREE_MAGIC)?;
    write_list(mtr, h0, page_no, u.free_pages.saturating_add(1))
}
