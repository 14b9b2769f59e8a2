//! [`check_space`]: reads every allocator structure of a space and checks they agree, and
//! says who owns every page in use.
//!
//! Checked: the free limit is a whole number of extents; every XDES entry below it has a
//! known state whose free bits fit it (FREE: none used, FREE_FRAG: some, FULL_FRAG: all,
//! FSEG: an owner); the descriptor pages (page 0, each XDES page) are in use and typed; the
//! FREE, FREE_FRAG and FULL_FRAG lists are well linked (prev/next agree, lengths match, no
//! node twice) and hold exactly the extents of their state; `FRAG_N_USED` is the number of
//! used pages in FREE_FRAG extents; every INODE page is on the right inode list and is a used
//! fragment page; every segment has the magic, a unique id, fragment pages that are used
//! pages of fragment extents, and extent lists holding only its own FSEG extents with the
//! right fill, with `NOT_FULL_N_USED` matching; every FSEG extent is on its owner's lists;
//! and no used page is claimed twice. Runs under shared latches, one page at a time: run it
//! on a quiet space.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use minnow_buf::BufferPool;
use minnow_page::{PageId, PageType, bytes, fil, fsp as fsph};

use super::fseg::{
    self, FRAG_ARR, FREE, FULL, ID, INODE_ARR, INODE_PAGE_NODE, INODE_SIZE, MAGIC, MAGIC_N,
    NOT_FULL, NOT_FULL_N_USED,
};
use super::{
    Addr, FRAG_SLOTS, FSP_FREE, FSP_FREE_FRAG, FSP_FULL_FRAG, FSP_INODES_FREE, FSP_INODES_FULL,
    FsegHeader, Geometry, SpaceUsage, XDES_FREE, XDES_FREE_FRAG, XDES_FSEG, XDES_FULL_FRAG,
    bit_free, corrupt, state_name,
};
use crate::tree::TreeError;

/// One segment as [`check_space`] found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentReport {
    /// Where its inode is.
    pub header: FsegHeader,
    /// Its fragment pages.
    pub fragments: Vec<u32>,
    /// The first pages of the extents it owns.
    pub extents: Vec<u32>,
    /// Every page in use by it (fragments and used pages of its extents).
    pub pages: BTreeSet<u32>,
}

/// What [`check_space`] found in a consistent space.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SpaceReport {
    /// Counts from page 0 and the XDES entries.
    pub usage: SpaceUsage,
    /// Every segment, by id.
    pub segments: BTreeMap<u64, SegmentReport>,
    /// Page 0 and the XDES pages.
    pub descriptor_pages: Vec<u32>,
    /// The INODE pages.
    pub inode_pages: Vec<u32>,
    /// Used fragment pages that no segment owns (handed out by [`super::allocate`]).
    pub loose_pages: BTreeSet<u32>,
}

impl SpaceReport {
    /// Every page in use, with its owner: `Some(segment id)` or `None` for pages of the
    /// space itself and loose pages.
    pub fn used_pages(&self) -> BTreeMap<u32, Option<u64>> {
        let mut out = BTreeMap::new();
        for p in self
            .descriptor_pages
            .iter()
            .chain(&self.inode_pages)
            .chain(&self.loose_pages)
        {
            out.insert(*p, None);
        }
        for (id, s) in &self.segments {
            for p in &s.pages {
                out.insert(*p, Some(*id));
            }
        }
        out
    }
}

struct Extent {
    state: u32,
    owner: u64,
    used: Vec<u32>,
    listed: bool,
}

struct Reader<'a> {
    pool: &'a BufferPool,
    space: u32,
    cache: HashMap<u32, Vec<u8>>,
}

impl Reader<'_> {
    fn page(&mut self, no: u32) -> Result<&[u8], TreeError> {
        if !self.cache.contains_key(&no) {
            let g = self.pool.get_read(PageId::new(self.space, no))?;
            self.cache.insert(no, g.to_vec());
        }
        Ok(self.cache.get(&no).map(Vec::as_slice).unwrap_or_default())
    }

    fn u32(&mut self, no: u32, at: usize) -> Result<u32, TreeError> {
        let space = self.space;
        bytes::read_u32(self.page(no)?, at).map_err(|e| corrupt(space, no, e.to_string()))
    }

    fn u64(&mut self, no: u32, at: usize) -> Result<u64, TreeError> {
        let space = self.space;
        bytes::read_u64(self.page(no)?, at).map_err(|e| corrupt(space, no, e.to_string()))
    }

    fn addr(&mut self, no: u32, at: usize) -> Result<Addr, TreeError> {
        let space = self.space;
        Addr::read(self.page(no)?, at).map_err(|e| corrupt(space, no, e.to_string()))
    }

    /// The nodes of the list at `base`, checking its links and length.
    fn list(&mut self, base: Addr, limit: u32) -> Result<Vec<Addr>, TreeError> {
        let sp = self.space;
        let bad = |what: String| corrupt(sp, base.page, format!("list at {base}: {what}"));
        let len = self.u32(base.page, base.at())?;
        let first = self.addr(base.page, base.at() + 4)?;
        let last = self.addr(base.page, base.at() + 10)?;
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        let mut prev = Addr::NULL;
        let mut node = first;
        while !node.is_null() {
            if node.page >= limit || out.len() as u32 >= len || !seen.insert(node) {
                return Err(bad(format!(
                    "node {node} is beyond the free limit, repeated or past the length {len}"
                )));
            }
            let p = self.addr(node.page, node.at())?;
            if p != prev {
                return Err(bad(format!("node {node} has prev {p}, expected {prev}")));
            }
            out.push(node);
            prev = node;
            node = self.addr(node.page, node.at() + 6)?;
        }
        if out.len() as u32 != len || last != prev {
            return Err(bad(format!(
                "length {len} and last {last}, but {} nodes ending at {prev}",
                out.len()
            )));
        }
        Ok(out)
    }
}

/// Checks every allocator structure of `space` (see the module docs) and returns who owns
/// which page.
pub fn check_space(pool: &BufferPool, space: u32) -> Result<SpaceReport, TreeError> {
    scan(pool, space)
}

pub(crate) fn scan(pool: &BufferPool, space: u32) -> Result<SpaceReport, TreeError> {
    let mut r = Reader {
        pool,
        space,
        cache: HashMap::new(),
    };
    let bad = |page: u32, what: String| corrupt(space, page, what);
    let geo =
        Geometry::of(r.page(0)?.len()).ok_or_else(|| bad(0, "unsupported page size".into()))?;
    let ext = geo.extent;
    let limit = r.u32(0, fsph::FSP_HEADER + fsph::FREE_LIMIT)?;
    let size = r.u32(0, fsph::FSP_HEADER + fsph::SIZE)?;
    let frag_n_used = r.u32(0, fsph::FSP_HEADER + fsph::FRAG_N_USED)?;
    let next_seg = r.u64(0, fsph::FSP_HEADER + fsph::SEG_ID)?;
    if limit % ext != 0 || size < limit {
        return Err(bad(
            0,
            format!("free limit {limit} (size {size}) is not a whole number of {ext}-page extents"),
        ));
    }
    let mut report = SpaceReport::default();
    let mut extents: BTreeMap<u32, Extent> = BTreeMap::new();
    for start in (0..limit).step_by(ext as usize) {
        let e = geo.xdes_addr(start);
        let state = r.u32(e.page, e.at() + 20)?;
        let owner = r.u64(e.page, e.at())?;
        let map = bytes::slice(r.page(e.page)?, e.at() + 24, geo.bitmap_len())
            .map_err(|err| bad(e.page, err.to_string()))?
            .to_vec();
        let used: Vec<u32> = (0..ext).filter(|&i| !bit_free(&map, i)).collect();
        let n = used.len() as u32;
        let ok = match state {
            XDES_FREE => n == 0 && owner == 0,
            XDES_FREE_FRAG => n > 0 && n < ext && owner == 0,
            XDES_FULL_FRAG => n == ext && owner == 0,
            XDES_FSEG => owner != 0,
            _ => false,
        };
        if !ok {
            return Err(bad(
                start,
                format!(
                    "extent {start}: state {state} ({}), owner {owner}, {n} pages used",
                    state_name(state)
                ),
            ));
        }
        if geo.is_descriptor(start) {
            let want = if start == 0 {
                PageType::FspHdr
            } else {
                PageType::Xdes
            };
            let ty = fil::page_type(r.page(start)?).map_err(|err| bad(start, err.to_string()))?;
            if ty != want || used.first() != Some(&0) || state == XDES_FSEG {
                return Err(bad(
                    start,
                    format!("descriptor page {start} is not a used {} page", want.name()),
                ));
            }
            report.descriptor_pages.push(start);
        }
        report.usage.free_pages += ext - n;
        extents.insert(
            start,
            Extent {
                state,
                owner,
                used,
                listed: false,
            },
        );
    }
    let node_extent = |node: Addr| {
        node.at()
            .checked_sub(8)
            .and_then(|at| geo.extent_at(node.page, at))
            .ok_or_else(|| bad(node.page, format!("list node {node} is not an XDES entry")))
    };
    let take = |extents: &mut BTreeMap<u32, Extent>, start: u32, state: u32, owner: u64| {
        match extents.get_mut(&start) {
            Some(x) if !x.listed && x.state == state && x.owner == owner => {
                x.listed = true;
                Ok(x.used.len() as u32)
            }
            _ => Err(bad(
                start,
                format!(
                    "extent {start} is listed as {} of owner {owner} but is not, or is listed twice",
                    state_name(state)
                ),
            )),
        }
    };
    let mut frag_used = 0;
    for (base, state) in [
        (FSP_FREE, XDES_FREE),
        (FSP_FREE_FRAG, XDES_FREE_FRAG),
        (FSP_FULL_FRAG, XDES_FULL_FRAG),
    ] {
        let nodes = r.list(base, limit)?;
        let count = nodes.len() as u32;
        for node in nodes {
            let used = take(&mut extents, node_extent(node)?, state, 0)?;
            if state == XDES_FREE_FRAG {
                frag_used += used;
            }
        }
        match state {
            XDES_FREE => report.usage.free_extents = count,
            XDES_FREE_FRAG => report.usage.free_frag_extents = count,
            _ => report.usage.full_frag_extents = count,
        }
    }
    if frag_used != frag_n_used {
        return Err(bad(
            0,
            format!("FRAG_N_USED is {frag_n_used}, but FREE_FRAG extents use {frag_used} pages"),
        ));
    }
    // Used fragment pages, to be claimed once each.
    let mut unclaimed: BTreeSet<u32> = extents
        .iter()
        .filter(|(_, x)| x.state == XDES_FREE_FRAG || x.state == XDES_FULL_FRAG)
        .flat_map(|(s, x)| x.used.iter().map(move |i| s + i))
        .collect();
    let mut claim = |page: u32, who: &str| {
        if unclaimed.remove(&page) {
            Ok(())
        } else {
            Err(bad(
                page,
                format!(
                    "{who} claims page {page}, which is not a free-for-the-taking used fragment page (free, in an FSEG extent, or claimed twice)"
                ),
            ))
        }
    };
    for &d in &report.descriptor_pages {
        claim(d, "the space (descriptor page)")?;
    }
    let per = fseg::inodes_per_page(geo.page);
    let mut ids = HashSet::new();
    for (list, full) in [(FSP_INODES_FULL, true), (FSP_INODES_FREE, false)] {
        for node in r.list(list, limit)? {
            let ip = node.page;
            if node.at() != INODE_PAGE_NODE {
                return Err(bad(
                    ip,
                    format!("inode list node {node} at the wrong offset"),
                ));
            }
            let ty = fil::page_type(r.page(ip)?).map_err(|err| bad(ip, err.to_string()))?;
            if ty != PageType::Inode {
                return Err(bad(
                    ip,
                    format!("page {ip} on an inode list is {}", ty.name()),
                ));
            }
            claim(ip, "the space (INODE page)")?;
            report.inode_pages.push(ip);
            let mut n_free = 0;
            for i in 0..per {
                let at = INODE_ARR + i * INODE_SIZE;
                let id = r.u64(ip, at + ID)?;
                if id == 0 {
                    n_free += 1;
                    continue;
                }
                if r.u32(ip, at + MAGIC)? != MAGIC_N || id >= next_seg || !ids.insert(id) {
                    return Err(bad(
                        ip,
                        format!(
                            "inode at {ip}:{at}: bad magic, or id {id} repeated or not below the next id {next_seg}"
                        ),
                    ));
                }
                let header = FsegHeader {
                    space,
                    page: ip,
                    offset: at as u16,
                };
                let mut seg = SegmentReport {
                    header,
                    fragments: Vec::new(),
                    extents: Vec::new(),
                    pages: BTreeSet::new(),
                };
                for s in 0..FRAG_SLOTS {
                    let p = r.u32(ip, at + FRAG_ARR + 4 * s)?;
                    if p != fil::FIL_NULL {
                        claim(p, &format!("segment {id} (fragment)"))?;
                        seg.fragments.push(p);
                        seg.pages.insert(p);
                    }
                }
                let mut nf_used = 0;
                for list in [FREE, NOT_FULL, FULL] {
                    for node in r.list(Addr::of(ip, at + list), limit)? {
                        let start = node_extent(node)?;
                        let used = take(&mut extents, start, XDES_FSEG, id)?;
                        let fits = match list {
                            FREE => used == 0,
                            NOT_FULL => used > 0 && used < ext,
                            _ => used == ext,
                        };
                        if !fits {
                            return Err(bad(
                                start,
                                format!(
                                    "segment {id}'s extent {start} has {used} pages used, which does not fit its list"
                                ),
                            ));
                        }
                        if list == NOT_FULL {
                            nf_used += used;
                        }
                        seg.extents.push(start);
                        if let Some(x) = extents.get(&start) {
                            seg.pages.extend(x.used.iter().map(|i| start + i));
                        }
                    }
                }
                let stored = r.u32(ip, at + NOT_FULL_N_USED)?;
                if stored != nf_used {
                    return Err(bad(
                        ip,
                        format!(
                            "segment {id}: NOT_FULL_N_USED is {stored}, its NOT_FULL extents use {nf_used}"
                        ),
                    ));
                }
                report.segments.insert(id, seg);
            }
            let ok = if full {
                n_free == 0
            } else {
                n_free > 0 && n_free < per
            };
            if !ok {
                return Err(bad(
                    ip,
                    format!(
                        "INODE page {ip} has {n_free} free slots of {per} but is on the {} list",
                        if full { "full" } else { "free" }
                    ),
                ));
            }
        }
    }
    if let Some((start, _)) = extents.iter().find(|(_, x)| !x.listed) {
        return Err(bad(*start, format!("extent {start} is on no list")));
    }
    report.loose_pages = unclaimed;
    report.usage.size = size;
    report.usage.free_limit = limit;
    report.usage.extent_pages = ext;
    report.usage.frag_n_used = frag_n_used;
    Ok(report)
}
