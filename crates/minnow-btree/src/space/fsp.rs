//! The space level: page 0's FSP header, extent descriptors (XDES entries), the file-based
//! lists that chain them, and the two things the space hands out: whole extents and single
//! fragment pages.
//!
//! Everything here works on pages held by one [`Mtr`] through an [`Fsp`], which latched
//! page 0 first: whoever holds page 0 may latch any XDES or INODE page of the space, because
//! nobody else reaches them without page 0.

use minnow_buf::{Mtr, PageHandle};
use minnow_page::{PageId, PageType, bytes, fil, fsp};

use super::{
    Addr, FSP_FREE, FSP_FREE_FRAG, FSP_FULL_FRAG, Geometry, XDES_FREE, XDES_FREE_FRAG, XDES_FSEG,
    XDES_FULL_FRAG, corrupt,
};
use crate::tree::TreeError;

/// Offsets inside an XDES entry.
const XDES_ID: usize = 0;
pub(crate) const XDES_FLST_NODE: usize = 8;
const XDES_STATE: usize = 20;
const XDES_BITMAP: usize = 24;

/// A space being changed by one mtr that holds its page 0.
pub(crate) struct Fsp<'m, 'a> {
    pub mtr: &'m mut Mtr<'a>,
    pub space: u32,
    pub geo: Geometry,
}

impl<'m, 'a> Fsp<'m, 'a> {
    /// X-latches page 0 of `space` in `mtr` (the same handle if the mtr already holds it).
    pub fn open(mtr: &'m mut Mtr<'a>, space: u32) -> Result<Fsp<'m, 'a>, TreeError> {
        let h0 = mtr.get_write(PageId::new(space, 0))?;
        let geo = Geometry::of(mtr.page(h0).len())
            .ok_or_else(|| corrupt(space, 0, "page 0 has an unsupported page size"))?;
        Ok(Fsp { mtr, space, geo })
    }

    pub fn h(&mut self, page: u32) -> Result<PageHandle, TreeError> {
        Ok(self.mtr.get_write(PageId::new(self.space, page))?)
    }

    pub fn r32(&mut self, page: u32, at: usize) -> Result<u32, TreeError> {
        let h = self.h(page)?;
        bytes::read_u32(self.mtr.page(h), at).map_err(|e| corrupt(self.space, page, e.to_string()))
    }

    pub fn r64(&mut self, page: u32, at: usize) -> Result<u64, TreeError> {
        let h = self.h(page)?;
        bytes::read_u64(self.mtr.page(h), at).map_err(|e| corrupt(self.space, page, e.to_string()))
    }

    pub fn w(&mut self, page: u32, at: usize, data: &[u8]) -> Result<(), TreeError> {
        let h = self.h(page)?;
        Ok(self.mtr.write(h, at, data)?)
    }

    pub fn w32(&mut self, page: u32, at: usize, v: u32) -> Result<(), TreeError> {
        self.w(page, at, &v.to_be_bytes())
    }

    pub fn w64(&mut self, page: u32, at: usize, v: u64) -> Result<(), TreeError> {
        self.w(page, at, &v.to_be_bytes())
    }

    pub fn read_addr(&mut self, page: u32, at: usize) -> Result<Addr, TreeError> {
        let h = self.h(page)?;
        Addr::read(self.mtr.page(h), at).map_err(|e| corrupt(self.space, page, e.to_string()))
    }

    pub fn write_addr(&mut self, page: u32, at: usize, a: Addr) -> Result<(), TreeError> {
        self.w(page, at, &a.to_bytes())
    }

    // ---- file-based lists (InnoDB's flst) ----

    /// The first node of the list whose base is at `base`.
    pub fn list_first(&mut self, base: Addr) -> Result<Option<Addr>, TreeError> {
        let a = self.read_addr(base.page, base.at() + 4)?;
        Ok((!a.is_null()).then_some(a))
    }

    /// The list's length.
    pub fn list_len(&mut self, base: Addr) -> Result<u32, TreeError> {
        self.r32(base.page, base.at())
    }

    /// Appends `node` (the address of its 12-byte prev/next node) to the list at `base`.
    pub fn list_add_last(&mut self, base: Addr, node: Addr) -> Result<(), TreeError> {
        let len = self.list_len(base)?;
        let last = self.read_addr(base.page, base.at() + 10)?;
        self.write_addr(node.page, node.at(), last)?;
        self.write_addr(node.page, node.at() + 6, Addr::NULL)?;
        if last.is_null() {
            self.write_addr(base.page, base.at() + 4, node)?;
        } else {
            self.write_addr(last.page, last.at() + 6, node)?;
        }
        self.write_addr(base.page, base.at() + 10, node)?;
        self.w32(base.page, base.at(), len.saturating_add(1))
    }

    /// Unlinks `node` from the list at `base`.
    pub fn list_remove(&mut self, base: Addr, node: Addr) -> Result<(), TreeError> {
        let len = self.list_len(base)?;
        if len == 0 {
            return Err(corrupt(
                self.space,
                base.page,
                format!(
                    "removing node {node} from the empty list at offset {}",
                    base.off
                ),
            ));
        }
        let prev = self.read_addr(node.page, node.at())?;
        let next = self.read_addr(node.page, node.at() + 6)?;
        if prev.is_null() {
            self.write_addr(base.page, base.at() + 4, next)?;
        } else {
            self.write_addr(prev.page, prev.at() + 6, next)?;
        }
        if next.is_null() {
            self.write_addr(base.page, base.at() + 10, prev)?;
        } else {
            self.write_addr(next.page, next.at(), prev)?;
        }
        self.w32(base.page, base.at(), len - 1)
    }

    // ---- the FSP header ----

    pub fn hdr(&mut self, field: usize) -> Result<u32, TreeError> {
        self.r32(0, fsp::FSP_HEADER + field)
    }

    pub fn set_hdr(&mut self, field: usize, v: u32) -> Result<(), TreeError> {
        self.w32(0, fsp::FSP_HEADER + field, v)
    }

    fn add_frag_used(&mut self, delta: i64) -> Result<(), TreeError> {
        let n = i64::from(self.hdr(fsp::FRAG_N_USED)?) + delta;
        let n = u32::try_from(n)
            .map_err(|_| corrupt(self.space, 0, "FRAG_N_USED would become negative"))?;
        self.set_hdr(fsp::FRAG_N_USED, n)
    }

    // ---- extent descriptors ----

    /// The XDES entry of the extent starting at `start`, checked to lie below the free limit.
    pub fn xdes(&mut self, start: u32) -> Result<Addr, TreeError> {
        let limit = self.hdr(fsp::FREE_LIMIT)?;
        if start >= limit {
            return Err(corrupt(
                self.space,
                start,
                format!("page {start} lies beyond the free limit {limit}"),
            ));
        }
        Ok(self.geo.xdes_addr(start))
    }

    pub fn state(&mut self, e: Addr) -> Result<u32, TreeError> {
        self.r32(e.page, e.at() + XDES_STATE)
    }

    pub fn set_state(&mut self, e: Addr, s: u32) -> Result<(), TreeError> {
        self.w32(e.page, e.at() + XDES_STATE, s)
    }

    pub fn owner(&mut self, e: Addr) -> Result<u64, TreeError> {
        self.r64(e.page, e.at() + XDES_ID)
    }

    pub fn set_owner(&mut self, e: Addr, id: u64) -> Result<(), TreeError> {
        self.w64(e.page, e.at() + XDES_ID, id)
    }

    fn bitmap(&mut self, e: Addr) -> Result<Vec<u8>, TreeError> {
        let h = self.h(e.page)?;
        let len = self.geo.bitmap_len();
        bytes::slice(self.mtr.page(h), e.at() + XDES_BITMAP, len)
            .map(<[u8]>::to_vec)
            .map_err(|err| corrupt(self.space, e.page, err.to_string()))
    }

    /// Whether page `i` of the extent is free.
    pub fn is_free(&mut self, e: Addr, i: u32) -> Result<bool, TreeError> {
        Ok(super::bit_free(&self.bitmap(e)?, i))
    }

    /// Marks page `i` of the extent free or used (the "clean" bit stays set, as InnoDB's).
    pub fn set_free(&mut self, e: Addr, i: u32, free: bool) -> Result<(), TreeError> {
        let at = e.at() + XDES_BITMAP + (i / 4) as usize;
        let h = self.h(e.page)?;
        let byte = bytes::slice(self.mtr.page(h), at, 1)
            .map_err(|err| corrupt(self.space, e.page, err.to_string()))?
            .first()
            .copied()
            .unwrap_or(0);
        let bit = 1u8 << ((i % 4) * 2);
        let new = if free { byte | bit } else { byte & !bit };
        self.w(e.page, at, &[new])
    }

    /// Pages in use in the extent.
    pub fn n_used(&mut self, e: Addr) -> Result<u32, TreeError> {
        let map = self.bitmap(e)?;
        Ok((0..self.geo.extent)
            .filter(|&i| !super::bit_free(&map, i))
            .count() as u32)
    }

    /// The lowest free page index of the extent.
    pub fn first_free(&mut self, e: Addr) -> Result<Option<u32>, TreeError> {
        let map = self.bitmap(e)?;
        Ok((0..self.geo.extent).find(|&i| super::bit_free(&map, i)))
    }

    /// Resets an entry: owner 0, every page free, state `state`.
    fn init_xdes(&mut self, e: Addr, state: u32) -> Result<(), TreeError> {
        self.set_owner(e, 0)?;
        let h = self.h(e.page)?;
        self.mtr
            .memset(h, e.at() + XDES_BITMAP, self.geo.bitmap_len(), 0xFF)?;
        self.set_state(e, state)
    }

    /// The extent start of an XDES entry found through a list node.
    pub fn extent_of_node(&self, node: Addr) -> Result<u32, TreeError> {
        node.at()
            .checked_sub(XDES_FLST_NODE)
            .and_then(|at| self.geo.extent_at(node.page, at))
            .ok_or_else(|| {
                corrupt(
                    self.space,
                    node.page,
                    format!("list node {node} is not an extent descriptor"),
                )
            })
    }

    /// Adds the extent at the free limit to the space (the only way a space grows): formats
    /// the XDES page first if the extent starts a new descriptor group, then puts the extent
    /// on FREE, or on FREE_FRAG with its descriptor page in use when it holds one.
    fn add_extent(&mut self) -> Result<(), TreeError> {
        let start = self.hdr(fsp::FREE_LIMIT)?;
        let ext = self.geo.extent;
        if start % ext != 0 {
            return Err(corrupt(
                self.space,
                0,
                format!("free limit {start} is not a multiple of the extent size {ext}"),
            ));
        }
        let end = start
            .checked_add(ext)
            .filter(|&e| e < fil::FIL_NULL)
            .ok_or_else(|| corrupt(self.space, 0, "the tablespace has no page numbers left"))?;
        let descriptor = self.geo.is_descriptor(start);
        if descriptor && start > 0 {
            let h = self.mtr.new_page(PageId::new(self.space, start))?;
            self.mtr
                .write(h, fil::PAGE_TYPE, &PageType::Xdes.to_u16().to_be_bytes())?;
        }
        self.set_hdr(fsp::FREE_LIMIT, end)?;
        if self.hdr(fsp::SIZE)? < end {
            self.set_hdr(fsp::SIZE, end)?;
        }
        let e = self.xdes(start)?;
        self.init_xdes(e, XDES_FREE)?;
        if descriptor {
            self.set_free(e, 0, false)?;
            self.set_state(e, XDES_FREE_FRAG)?;
            self.list_add_last(FSP_FREE_FRAG, e.plus(XDES_FLST_NODE))?;
            self.add_frag_used(1)
        } else {
            self.list_add_last(FSP_FREE, e.plus(XDES_FLST_NODE))
        }
    }

    /// Takes a free extent off the space's FREE list (growing the space by one extent when
    /// the list is empty) and returns its first page; its descriptor is still marked FREE.
    pub fn alloc_extent(&mut self) -> Result<u32, TreeError> {
        for _ in 0..3 {
            if let Some(node) = self.list_first(FSP_FREE)? {
                self.list_remove(FSP_FREE, node)?;
                return self.extent_of_node(node);
            }
            self.add_extent()?;
        }
        Err(corrupt(
            self.space,
            0,
            "growing the space gave no free extent",
        ))
    }

    /// Gives an extent (already unlinked from its list) back to the space's FREE list.
    pub fn free_extent(&mut self, start: u32) -> Result<(), TreeError> {
        let e = self.xdes(start)?;
        self.init_xdes(e, XDES_FREE)?;
        self.list_add_last(FSP_FREE, e.plus(XDES_FLST_NODE))
    }

    /// Allocates one fragment page (the page is not latched or formatted here): `hint` if it
    /// is free in a FREE_FRAG extent, else the lowest free page of the first FREE_FRAG
    /// extent, else the first page of a fresh extent that becomes FREE_FRAG.
    pub fn alloc_frag(&mut self, hint: Option<u32>) -> Result<u32, TreeError> {
        let ext = self.geo.extent;
        let limit = self.hdr(fsp::FREE_LIMIT)?;
        let mut pick = None;
        if let Some(p) = hint.filter(|&p| p < limit) {
            let e = self.xdes(self.geo.extent_start(p))?;
            if self.state(e)? == XDES_FREE_FRAG && self.is_free(e, p % ext)? {
                pick = Some((self.geo.extent_start(p), e, p % ext));
            }
        }
        let (start, e, i) = match pick {
            Some(x) => x,
            None => {
                let start = self.frag_extent()?;
                let e = self.xdes(start)?;
                let i = self.first_free(e)?.ok_or_else(|| {
                    corrupt(self.space, start, "a FREE_FRAG extent has no free page")
                })?;
                (start, e, i)
            }
        };
        self.set_free(e, i, false)?;
        self.add_frag_used(1)?;
        if self.n_used(e)? == ext {
            self.list_remove(FSP_FREE_FRAG, e.plus(XDES_FLST_NODE))?;
            self.list_add_last(FSP_FULL_FRAG, e.plus(XDES_FLST_NODE))?;
            self.set_state(e, XDES_FULL_FRAG)?;
            self.add_frag_used(-i64::from(ext))?;
        }
        Ok(start + i)
    }

    /// The first FREE_FRAG extent; when there is none, a free extent becomes one (growing
    /// the space if needed: a new descriptor group's first extent is FREE_FRAG already).
    fn frag_extent(&mut self) -> Result<u32, TreeError> {
        for _ in 0..3 {
            if let Some(node) = self.list_first(FSP_FREE_FRAG)? {
                return self.extent_of_node(node);
            }
            if let Some(node) = self.list_first(FSP_FREE)? {
                self.list_remove(FSP_FREE, node)?;
                let start = self.extent_of_node(node)?;
                let e = self.xdes(start)?;
                self.set_state(e, XDES_FREE_FRAG)?;
                self.list_add_last(FSP_FREE_FRAG, e.plus(XDES_FLST_NODE))?;
                return Ok(start);
            }
            self.add_extent()?;
        }
        Err(corrupt(
            self.space,
            0,
            "growing the space gave no fragment extent",
        ))
    }

    /// Gives back a fragment page: its extent moves from FULL_FRAG to FREE_FRAG, and to the
    /// space's FREE list once no page of it is used.
    pub fn free_frag(&mut self, page: u32) -> Result<(), TreeError> {
        let ext = self.geo.extent;
        if self.geo.is_descriptor(page) {
            return Err(corrupt(
                self.space,
                page,
                "freeing an extent descriptor page",
            ));
        }
        let start = self.geo.extent_start(page);
        let e = self.xdes(start)?;
        let state = self.state(e)?;
        if state != XDES_FREE_FRAG && state != XDES_FULL_FRAG {
            return Err(corrupt(
                self.space,
                page,
                format!(
                    "freeing page {page} as a fragment page, but its extent is {}",
                    super::state_name(state)
                ),
            ));
        }
        if self.is_free(e, page % ext)? {
            return Err(corrupt(
                self.space,
                page,
                format!("freeing page {page}, which is already free"),
            ));
        }
        if state == XDES_FULL_FRAG {
            self.list_remove(FSP_FULL_FRAG, e.plus(XDES_FLST_NODE))?;
            self.list_add_last(FSP_FREE_FRAG, e.plus(XDES_FLST_NODE))?;
            self.set_state(e, XDES_FREE_FRAG)?;
            self.add_frag_used(i64::from(ext) - 1)?;
        } else {
            self.add_frag_used(-1)?;
        }
        self.set_free(e, page % ext, true)?;
        if self.n_used(e)? == 0 {
            self.list_remove(FSP_FREE_FRAG, e.plus(XDES_FLST_NODE))?;
            self.free_extent(start)?;
        }
        Ok(())
    }

    /// Takes up to `max` unused extents off the end of the space, last first, and lowers
    /// `FREE_LIMIT` and `SIZE` to the start of the last one taken: a FREE extent leaves the
    /// FREE list; the first extent of a descriptor group (other than page 0's) leaves
    /// FREE_FRAG when its XDES page is its only page in use, and that XDES page goes with it
    /// (the entries it holds describe only extents already taken). Stops at the first extent
    /// with a page in use; extent 0 always stays. Returns how many extents it took.
    ///
    /// The extents' pages are unreachable (no page of a FREE extent is in use), so nothing
    /// but the allocator's own pages changes; growing the space later describes them
    /// afresh. The file keeps its length: cutting it is the caller's business, once this
    /// change is durable (see [`super::shrink_tail`]).
    pub fn shrink_tail(&mut self, max: usize) -> Result<u32, TreeError> {
        let ext = self.geo.extent;
        let mut limit = self.hdr(fsp::FREE_LIMIT)?;
        let mut taken = 0;
        while (taken as usize) < max && limit > ext {
            let start = limit - ext;
            let e = self.xdes(start)?;
            let node = e.plus(XDES_FLST_NODE);
            match self.state(e)? {
                XDES_FREE => {
                    self.list_remove(FSP_FREE, node)?;
                    self.set_state(e, super::XDES_NOT_INITED)?;
                }
                XDES_FREE_FRAG
                    if self.geo.is_descriptor(start)
                        && self.n_used(e)? == 1
                        && !self.is_free(e, 0)? =>
                {
                    // Only the XDES page itself: it goes with the extent.
                    self.list_remove(FSP_FREE_FRAG, node)?;
                    self.add_frag_used(-1)?;
                }
                _ => break,
            }
            limit = start;
            taken += 1;
        }
        if taken > 0 {
            self.set_hdr(fsp::FREE_LIMIT, limit)?;
            self.set_hdr(fsp::SIZE, limit)?;
        }
        Ok(taken)
    }

    /// Whether `page` is an FSEG extent's page (and the owning segment id) or a fragment page.
    pub fn page_state(&mut self, page: u32) -> Result<(u32, u64), TreeError> {
        let e = self.xdes(self.geo.extent_start(page))?;
        let s = self.state(e)?;
        let owner = if s == XDES_FSEG { self.owner(e)? } else { 0 };
        Ok((s, owner))
    }
}
