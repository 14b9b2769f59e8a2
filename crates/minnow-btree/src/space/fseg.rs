//! Segments: inode entries in INODE pages, and how a segment takes and gives back pages.
//!
//! ```text
//! INODE page: FIL header | list node (38, 12 bytes) | inode 0 (50) | inode 1 (242) | ...
//! inode entry (192 bytes):
//!   0  seg id (8)            8  NOT_FULL_N_USED (4)   12 FREE list base (16)
//!   28 NOT_FULL base (16)    44 FULL base (16)        60 magic 97937874 (4)
//!   64 fragment page slots, 32 x 4 bytes (FIL_NULL = empty)
//! ```

use minnow_page::{PageId, PageType, bytes, fil, fsp as fsph};

use super::fsp::{Fsp, XDES_FLST_NODE};
use super::{
    Addr, FRAG_SLOTS, FSP_INODES_FREE, FSP_INODES_FULL, FsegHeader, Segment, XDES_FSEG, corrupt,
};
use crate::tree::TreeError;

/// Offset of the INODE page's own list node (in SEG_INODES_FREE or SEG_INODES_FULL).
pub(crate) const INODE_PAGE_NODE: usize = 38;
/// Offset of the first inode entry.
pub(crate) const INODE_ARR: usize = 50;
/// Bytes of one inode entry.
pub(crate) const INODE_SIZE: usize = 192;
pub(crate) const ID: usize = 0;
pub(crate) const NOT_FULL_N_USED: usize = 8;
pub(crate) const FREE: usize = 12;
pub(crate) const NOT_FULL: usize = 28;
pub(crate) const FULL: usize = 44;
pub(crate) const MAGIC: usize = 60;
pub(crate) const FRAG_ARR: usize = 64;
/// InnoDB's `FSEG_MAGIC_N_VALUE`.
pub(crate) const MAGIC_N: u32 = 97_937_874;

/// Inode entries per INODE page (InnoDB's `FSP_SEG_INODES_PER_PAGE`).
pub(crate) fn inodes_per_page(page_len: usize) -> usize {
    page_len.saturating_sub(INODE_ARR + 10) / INODE_SIZE
}

/// The name of an inode's extent list, by its offset in the inode.
fn list_name(list: usize) -> &'static str {
    match list {
        FREE => "FREE",
        NOT_FULL => "NOT_FULL",
        FULL => "FULL",
        _ => "unknown",
    }
}

/// The slot number of an inode entry at `at`, if `at` is one.
pub(crate) fn slot_of(page_len: usize, at: usize) -> Option<usize> {
    let rel = at.checked_sub(INODE_ARR)?;
    (rel % INODE_SIZE == 0 && rel / INODE_SIZE < inodes_per_page(page_len))
        .then_some(rel / INODE_SIZE)
}

/// The id in the inode entry `h` points at, checking the page type, slot and magic; an
/// error for a free slot.
pub(crate) fn inode_id(page: &[u8], h: FsegHeader) -> Result<u64, TreeError> {
    let at = usize::from(h.offset);
    let bad = |what: String| corrupt(h.space, h.page, what);
    let ty = fil::page_type(page).map_err(|e| bad(e.to_string()))?;
    if ty != PageType::Inode {
        return Err(bad(format!("{h}: page type {}, not INODE", ty.name())));
    }
    if slot_of(page.len(), at).is_none() {
        return Err(bad(format!("{h}: offset {at} is not an inode entry")));
    }
    let magic = bytes::read_u32(page, at + MAGIC).map_err(|e| bad(e.to_string()))?;
    let id = bytes::read_u64(page, at + ID).map_err(|e| bad(e.to_string()))?;
    if id == 0 || magic != MAGIC_N {
        return Err(bad(format!(
            "{h}: no segment there (id {id}, magic {magic}, expected {MAGIC_N})"
        )));
    }
    Ok(id)
}

fn base(page: u32, at: usize, list: usize) -> Addr {
    Addr::of(page, at + list)
}

impl Fsp<'_, '_> {
    /// The inode entry of `h` (page, offset, id), checked.
    fn inode(&mut self, h: FsegHeader) -> Result<(u32, usize, u64), TreeError> {
        if h.space != self.space {
            return Err(corrupt(
                self.space,
                h.page,
                format!("{h} is not in space {}", self.space),
            ));
        }
        let limit = self.hdr(fsph::FREE_LIMIT)?;
        if h.page == 0 || h.page >= limit {
            return Err(corrupt(self.space, h.page, format!("{h}: no such page")));
        }
        let ph = self.h(h.page)?;
        let id = inode_id(self.mtr.page(ph), h)?;
        Ok((h.page, usize::from(h.offset), id))
    }

    fn frag_slots(&mut self, page: u32, at: usize) -> Result<Vec<u32>, TreeError> {
        (0..FRAG_SLOTS)
            .map(|i| self.r32(page, at + FRAG_ARR + 4 * i))
            .collect()
    }

    fn add_not_full_used(&mut self, page: u32, at: usize, delta: i64) -> Result<(), TreeError> {
        let n = i64::from(self.r32(page, at + NOT_FULL_N_USED)?) + delta;
        let n = u32::try_from(n)
            .map_err(|_| corrupt(self.space, page, "NOT_FULL_N_USED would become negative"))?;
        self.w32(page, at + NOT_FULL_N_USED, n)
    }

    /// The slots of an INODE page that hold no segment.
    fn free_slots(&mut self, page: u32) -> Result<Vec<usize>, TreeError> {
        let n = inodes_per_page(self.geo.page);
        let mut out = Vec::new();
        for i in 0..n {
            if self.r64(page, INODE_ARR + i * INODE_SIZE + ID)? == 0 {
                out.push(i);
            }
        }
        Ok(out)
    }

    /// Creates a segment (see [`super::create_segment`]).
    pub fn create_seg(&mut self) -> Result<Segment, TreeError> {
        let node = match self.list_first(FSP_INODES_FREE)? {
            Some(n) => n,
            None => {
                let p = self.alloc_frag(None)?;
                let h = self.mtr.new_page(PageId::new(self.space, p))?;
                self.mtr
                    .write(h, fil::PAGE_TYPE, &PageType::Inode.to_u16().to_be_bytes())?;
                let node = Addr::of(p, INODE_PAGE_NODE);
                self.list_add_last(FSP_INODES_FREE, node)?;
                node
            }
        };
        if node.at() != INODE_PAGE_NODE {
            return Err(corrupt(
                self.space,
                node.page,
                format!("inode list node at {node}, expected offset {INODE_PAGE_NODE}"),
            ));
        }
        let page = node.page;
        let free = self.free_slots(page)?;
        let Some(&slot) = free.first() else {
            return Err(corrupt(
                self.space,
                page,
                "INODE page on SEG_INODES_FREE has no free slot",
            ));
        };
        let id = self.r64(0, fsph::FSP_HEADER + fsph::SEG_ID)?;
        let next = id
            .checked_add(1)
            .filter(|_| id != 0)
            .ok_or_else(|| corrupt(self.space, 0, format!("bad next segment id {id}")))?;
        self.w64(0, fsph::FSP_HEADER + fsph::SEG_ID, next)?;
        let at = INODE_ARR + slot * INODE_SIZE;
        let mut entry = vec![0u8; INODE_SIZE];
        let mut put = |off: usize, b: &[u8]| {
            if let Some(dst) = entry.get_mut(off..off + b.len()) {
                dst.copy_from_slice(b);
            }
        };
        put(ID, &id.to_be_bytes());
        for list in [FREE, NOT_FULL, FULL] {
            put(list + 4, &Addr::NULL.to_bytes());
            put(list + 10, &Addr::NULL.to_bytes());
        }
        put(MAGIC, &MAGIC_N.to_be_bytes());
        put(FRAG_ARR, &[0xFF; FRAG_SLOTS * 4]);
        self.w(page, at, &entry)?;
        if free.len() == 1 {
            self.list_remove(FSP_INODES_FREE, node)?;
            self.list_add_last(FSP_INODES_FULL, node)?;
        }
        Ok(Segment {
            header: FsegHeader {
                space: self.space,
                page,
                offset: at as u16,
            },
            id,
        })
    }

    /// Allocates a page for the segment (see [`super::allocate_in`]); returns its number.
    pub fn seg_alloc(&mut self, seg: FsegHeader, hint: Option<u32>) -> Result<u32, TreeError> {
        let (ip, at, id) = self.inode(seg)?;
        let ext = self.geo.extent;
        let limit = self.hdr(fsph::FREE_LIMIT)?;
        if let Some(p) = hint.filter(|&p| p < limit && !self.geo.is_descriptor(p)) {
            let start = self.geo.extent_start(p);
            let e = self.xdes(start)?;
            if self.state(e)? == XDES_FSEG && self.owner(e)? == id && self.is_free(e, p % ext)? {
                return self.seg_take(ip, at, start, p % ext);
            }
        }
        let frags = self.frag_slots(ip, at)?;
        let n_frag = frags.iter().filter(|&&p| p != fil::FIL_NULL).count() as u64;
        let full = u64::from(self.list_len(base(ip, at, FULL))?);
        let used = n_frag + u64::from(self.r32(ip, at + NOT_FULL_N_USED)?) + full * u64::from(ext);
        if used < FRAG_SLOTS as u64
            && let Some(slot) = frags.iter().position(|&p| p == fil::FIL_NULL)
        {
            let p = self.alloc_frag(hint)?;
            self.w32(ip, at + FRAG_ARR + 4 * slot, p)?;
            return Ok(p);
        }
        let start = if let Some(n) = self.list_first(base(ip, at, NOT_FULL))? {
            self.extent_of_node(n)?
        } else if let Some(n) = self.list_first(base(ip, at, FREE))? {
            self.list_remove(base(ip, at, FREE), n)?;
            self.list_add_last(base(ip, at, NOT_FULL), n)?;
            self.extent_of_node(n)?
        } else {
            let s = self.alloc_extent()?;
            let e = self.xdes(s)?;
            self.set_state(e, XDES_FSEG)?;
            self.set_owner(e, id)?;
            self.list_add_last(base(ip, at, NOT_FULL), e.plus(XDES_FLST_NODE))?;
            s
        };
        let e = self.xdes(start)?;
        if self.state(e)? != XDES_FSEG || self.owner(e)? != id {
            return Err(corrupt(
                self.space,
                start,
                format!("extent {start} on segment {id}'s NOT_FULL list is not owned by it"),
            ));
        }
        let i = self
            .first_free(e)?
            .ok_or_else(|| corrupt(self.space, start, "a NOT_FULL extent has no free page"))?;
        self.seg_take(ip, at, start, i)
    }

    /// The lowest free page of the segment's NOT_FULL extents (see [`super::lowest_free_in`]).
    pub fn seg_lowest_free(&mut self, seg: FsegHeader) -> Result<Option<u32>, TreeError> {
        let (ip, at, id) = self.inode(seg)?;
        let list = base(ip, at, NOT_FULL);
        let len = self.list_len(list)?;
        let mut node = self.list_first(list)?;
        let mut best: Option<u32> = None;
        let mut seen = 0u32;
        while let Some(a) = node {
            seen += 1;
            if seen > len {
                return Err(corrupt(
                    self.space,
                    ip,
                    format!("segment {id}'s NOT_FULL list is longer than its length {len}"),
                ));
            }
            let start = self.extent_of_node(a)?;
            let e = self.xdes(start)?;
            if let Some(i) = self.first_free(e)? {
                best = Some(best.map_or(start + i, |b| b.min(start + i)));
            }
            let next = self.read_addr(a.page, a.at() + 6)?;
            node = (!next.is_null()).then_some(next);
        }
        Ok(best)
    }

    /// Marks page `i` of the segment's extent `start` used, moving a now full extent from
    /// NOT_FULL to FULL.
    fn seg_take(&mut self, ip: u32, at: usize, start: u32, i: u32) -> Result<u32, TreeError> {
        let ext = self.geo.extent;
        let e = self.xdes(start)?;
        self.set_free(e, i, false)?;
        self.add_not_full_used(ip, at, 1)?;
        if self.n_used(e)? == ext {
            self.list_remove(base(ip, at, NOT_FULL), e.plus(XDES_FLST_NODE))?;
            self.list_add_last(base(ip, at, FULL), e.plus(XDES_FLST_NODE))?;
            self.add_not_full_used(ip, at, -i64::from(ext))?;
        }
        Ok(start + i)
    }

    /// Gives `page` back to segment `seg`: to its extent (a FULL extent becomes NOT_FULL, an
    /// empty one goes back to the space), or out of its fragment slot.
    pub fn seg_free_page(&mut self, seg: FsegHeader, page: u32) -> Result<(), TreeError> {
        let (ip, at, id) = self.inode(seg)?;
        let ext = self.geo.extent;
        let start = self.geo.extent_start(page);
        let (state, owner) = self.page_state(page)?;
        if state == XDES_FSEG {
            if owner != id {
                return Err(corrupt(
                    self.space,
                    page,
                    format!("page {page} belongs to segment {owner}, not {id}"),
                ));
            }
            let e = self.xdes(start)?;
            if self.is_free(e, page % ext)? {
                return Err(corrupt(
                    self.space,
                    page,
                    format!("freeing page {page}, which is already free"),
                ));
            }
            if self.n_used(e)? == ext {
                self.list_remove(base(ip, at, FULL), e.plus(XDES_FLST_NODE))?;
                self.list_add_last(base(ip, at, NOT_FULL), e.plus(XDES_FLST_NODE))?;
                self.add_not_full_used(ip, at, i64::from(ext) - 1)?;
            } else {
                self.add_not_full_used(ip, at, -1)?;
            }
            self.set_free(e, page % ext, true)?;
            if self.n_used(e)? == 0 {
                self.list_remove(base(ip, at, NOT_FULL), e.plus(XDES_FLST_NODE))?;
                self.free_extent(start)?;
            }
            return Ok(());
        }
        let frags = self.frag_slots(ip, at)?;
        let Some(slot) = frags.iter().position(|&p| p == page) else {
            return Err(corrupt(
                self.space,
                page,
                format!("page {page} is not a page of segment {id}"),
            ));
        };
        self.w32(ip, at + FRAG_ARR + 4 * slot, fil::FIL_NULL)?;
        self.free_frag(page)
    }

    /// Every live segment of the space: (header, id), from both inode-page lists.
    pub fn segments(&mut self) -> Result<Vec<Segment>, TreeError> {
        let mut out = Vec::new();
        let per = inodes_per_page(self.geo.page);
        for list in [FSP_INODES_FULL, FSP_INODES_FREE] {
            let len = self.list_len(list)?;
            let mut node = self.list_first(list)?;
            for _ in 0..len {
                let Some(n) = node else { break };
                for i in 0..per {
                    let at = INODE_ARR + i * INODE_SIZE;
                    let id = self.r64(n.page, at + ID)?;
                    if id != 0 {
                        out.push(Segment {
                            header: FsegHeader {
                                space: self.space,
                                page: n.page,
                                offset: at as u16,
                            },
                            id,
                        });
                    }
                }
                let next = self.read_addr(n.page, n.at() + 6)?;
                node = (!next.is_null()).then_some(next);
            }
        }
        Ok(out)
    }

    /// The segment owning `page`, if any (a page from [`super::allocate`] has none).
    pub fn owner_of(&mut self, page: u32) -> Result<Option<FsegHeader>, TreeError> {
        let (state, owner) = self.page_state(page)?;
        let segs = self.segments()?;
        if state == XDES_FSEG {
            return match segs.iter().find(|s| s.id == owner) {
                Some(s) => Ok(Some(s.header)),
                None => Err(corrupt(
                    self.space,
                    page,
                    format!(
                        "page {page}'s extent belongs to segment {owner}, which does not exist"
                    ),
                )),
            };
        }
        for s in segs {
            let at = usize::from(s.header.offset);
            if self.frag_slots(s.header.page, at)?.contains(&page) {
                return Ok(Some(s.header));
            }
        }
        Ok(None)
    }

    /// One step of freeing a segment (see [`super::free_segment_step`]). Every extent taken
    /// off the segment's lists must be one of its FSEG extents, and a list whose length is
    /// not 0 must have a first node: a corrupt list (one that loops back to an extent already
    /// freed, or a length without nodes) is [`TreeError::Corrupt`], so that
    /// [`super::free_segment`], which repeats this step until the segment is gone, ends.
    pub fn seg_free_step(&mut self, seg: Segment, max_extents: usize) -> Result<bool, TreeError> {
        let h = seg.header;
        let limit = self.hdr(fsph::FREE_LIMIT)?;
        if h.space != self.space || h.page == 0 || h.page >= limit {
            return Err(corrupt(self.space, h.page, format!("{h}: no such page")));
        }
        let ph = self.h(h.page)?;
        let page = self.mtr.page(ph);
        let gone = !matches!(fil::page_type(page), Ok(PageType::Inode))
            || slot_of(page.len(), usize::from(h.offset)).is_none()
            || bytes::read_u64(page, usize::from(h.offset) + ID).ok() != Some(seg.id);
        if gone {
            return Ok(true);
        }
        let (ip, at, _) = self.inode(h)?;
        let mut budget = max_extents;
        for list in [FULL, NOT_FULL, FREE] {
            while budget > 0 {
                let Some(n) = self.list_first(base(ip, at, list))? else {
                    break;
                };
                let start = self.extent_of_node(n)?;
                let e = self.xdes(start)?;
                let state = self.state(e)?;
                let owner = self.owner(e)?;
                if state != XDES_FSEG || owner != seg.id {
                    return Err(corrupt(
                        self.space,
                        n.page,
                        format!(
                            "{h}: extent {start} on the segment's {} list is {} with owner \
                             {owner}, not an extent of segment {}",
                            list_name(list),
                            super::state_name(state),
                            seg.id
                        ),
                    ));
                }
                self.list_remove(base(ip, at, list), n)?;
                if list == NOT_FULL {
                    let used = self.n_used(e)?;
                    self.add_not_full_used(ip, at, -i64::from(used))?;
                }
                self.free_extent(start)?;
                budget -= 1;
            }
        }
        for list in [FULL, NOT_FULL, FREE] {
            let len = self.list_len(base(ip, at, list))?;
            if len > 0 && budget > 0 {
                // Every list was emptied of nodes, yet this one says it has some.
                return Err(corrupt(
                    self.space,
                    ip,
                    format!(
                        "{h}: the segment's {} list has length {len} but no first node",
                        list_name(list)
                    ),
                ));
            }
            if len > 0 {
                return Ok(false);
            }
        }
        for (slot, p) in self.frag_slots(ip, at)?.into_iter().enumerate() {
            if p != fil::FIL_NULL {
                self.w32(ip, at + FRAG_ARR + 4 * slot, fil::FIL_NULL)?;
                self.free_frag(p)?;
            }
        }
        let was_full = self.free_slots(ip)?.is_empty();
        let eh = self.h(ip)?;
        self.mtr.memset(eh, at, INODE_SIZE, 0)?;
        let node = Addr::of(ip, INODE_PAGE_NODE);
        if was_full {
            self.list_remove(FSP_INODES_FULL, node)?;
            self.list_add_last(FSP_INODES_FREE, node)?;
        }
        if self.free_slots(ip)?.len() == inodes_per_page(self.geo.page) {
            self.list_remove(FSP_INODES_FREE, node)?;
            self.free_frag(ip)?;
            self.mtr.init_page(eh)?;
        }
        Ok(true)
    }
}
