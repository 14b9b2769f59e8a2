//! A tree's two segments, as InnoDB's: the **leaf** segment (level 0 pages) and the
//! **non-leaf** ("top") segment (every page above, and the root whatever its level). Their
//! FSEG headers sit in the root's page header at InnoDB's offsets, `PAGE_BTR_SEG_LEAF` (74)
//! and `PAGE_BTR_SEG_TOP` (84). Splits take new pages from the segment of the level they
//! work on, merges give them back there, and dropping the tree frees both segments without
//! reading a single tree page ([`BTree::free_all`]).

use minnow_buf::{BufferPool, Mtr, PageHandle};
use minnow_page::PageId;
use minnow_redo::Lsn;

use super::{BTree, TreeError};
use crate::space::{self, FsegHeader, Segment, SpaceReport};

/// Offset of the leaf segment's FSEG header in a root page (`PAGE_BTR_SEG_LEAF`).
pub const PAGE_BTR_SEG_LEAF: usize = 74;
/// Offset of the non-leaf segment's FSEG header in a root page (`PAGE_BTR_SEG_TOP`).
pub const PAGE_BTR_SEG_TOP: usize = 84;

/// The two segments of a tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Segments {
    /// The non-leaf segment: the root and every page above level 0.
    pub top: Segment,
    /// The leaf segment: every level-0 page but a leaf root.
    pub leaf: Segment,
}

impl Segments {
    /// The (top, leaf) FSEG headers stored in root page `id`.
    pub(crate) fn headers(page: &[u8], id: PageId) -> Result<(FsegHeader, FsegHeader), TreeError> {
        let bad = |e: minnow_page::PageError| TreeError::Corrupt {
            page: id,
            what: format!("root FSEG headers: {e}"),
        };
        Ok((
            FsegHeader::read(page, PAGE_BTR_SEG_TOP).map_err(bad)?,
            FsegHeader::read(page, PAGE_BTR_SEG_LEAF).map_err(bad)?,
        ))
    }

    /// The segments the root's headers point at, with their ids.
    pub(crate) fn read(
        pool: &BufferPool,
        root: PageId,
        (top, leaf): (FsegHeader, FsegHeader),
    ) -> Result<Segments, TreeError> {
        let at = |h: FsegHeader| {
            if h.space != root.space {
                return Err(TreeError::Corrupt {
                    page: root,
                    what: format!("FSEG header points to {h}, outside the tree's space"),
                });
            }
            space::segment_at(pool, h)
        };
        Ok(Segments {
            top: at(top)?,
            leaf: at(leaf)?,
        })
    }

    /// Writes both FSEG headers into the root page `h`.
    pub(crate) fn write(&self, mtr: &mut Mtr<'_>, h: PageHandle) -> Result<(), TreeError> {
        mtr.write(h, PAGE_BTR_SEG_LEAF, &self.leaf.header.to_bytes())?;
        mtr.write(h, PAGE_BTR_SEG_TOP, &self.top.header.to_bytes())?;
        Ok(())
    }

    /// The segment pages of `level` belong to.
    pub fn of_level(&self, level: u16) -> Segment {
        if level == 0 { self.leaf } else { self.top }
    }
}

impl BTree {
    /// The tree's segments.
    pub fn segments(&self) -> Segments {
        self.segs
    }

    /// Allocates a page for `level` from its segment, near `hint`.
    pub(crate) fn alloc_page(
        &self,
        mtr: &mut Mtr<'_>,
        level: u16,
        hint: Option<u32>,
    ) -> Result<PageHandle, TreeError> {
        space::allocate_in(mtr, self.segs.of_level(level).header, hint)
    }

    /// Gives page `no` of `level` back to its segment.
    pub(crate) fn free_page(
        &self,
        mtr: &mut Mtr<'_>,
        no: u32,
        level: u16,
    ) -> Result<(), TreeError> {
        if let (0, Some(hook)) = (level, &self.hook) {
            hook.page_freed(no);
        }
        space::free_in(mtr, self.segs.of_level(level).header, no)
    }

    /// Writes the FSEG headers again into the root (after re-initialising its page header).
    pub(crate) fn keep_seg_headers(
        &self,
        mtr: &mut Mtr<'_>,
        root: PageHandle,
    ) -> Result<(), TreeError> {
        self.segs.write(mtr, root)
    }

    /// Frees the whole tree: both segments go back to the space ([`space::free_segment`]),
    /// touching only page 0, XDES and INODE pages; the tree's pages are not read or
    /// changed. The tree must be unreachable (dropped from the dictionary) and no longer
    /// used. Freeing a tree that is already (partly) freed finishes the job, so a crashed
    /// drop can simply run again. Returns the last mtr's end LSN.
    pub fn free_all(&self, pool: &BufferPool) -> Result<Lsn, TreeError> {
        space::free_segment(pool, self.segs.leaf)?;
        space::free_segment(pool, self.segs.top)
    }

    /// Checks the tree (as [`BTree::check`]) and that its pages are exactly its segments'
    /// pages in `report` ([`space::check_space`]): the root and the non-leaf pages in the
    /// top segment, the other leaves and the overflow pages of its records in the leaf
    /// segment, and the root's FSEG headers pointing at both.
    pub fn check_space(
        &self,
        pool: &BufferPool,
        report: &SpaceReport,
    ) -> Result<super::TreeStats, TreeError> {
        let (stats, levels) = self.walk_checked(pool)?;
        let root_id = self.id(self.root);
        let headers = {
            let g = pool.get_read(root_id)?;
            Segments::headers(&g, root_id)?
        };
        if headers != (self.segs.top.header, self.segs.leaf.header) {
            return Err(self.corrupt(self.root, "FSEG headers differ from the tree's segments"));
        }
        let mut top = std::collections::BTreeSet::new();
        let mut leaf = std::collections::BTreeSet::new();
        for (level, pages) in levels.iter().enumerate() {
            for &p in pages {
                if level == 0 && p != self.root {
                    leaf.insert(p);
                } else {
                    top.insert(p);
                }
            }
        }
        // Overflow (BLOB) pages belong to the leaf segment, as in InnoDB.
        leaf.extend(stats.overflow_pages.iter().copied());
        for (seg, want, what) in [
            (self.segs.top, top, "non-leaf"),
            (self.segs.leaf, leaf, "leaf"),
        ] {
            let Some(got) = report.segments.get(&seg.id) else {
                return Err(self.corrupt(
                    self.root,
                    format!("{what} segment {} does not exist", seg.id),
                ));
            };
            if got.header != seg.header {
                return Err(self.corrupt(
                    self.root,
                    format!(
                        "{what} segment {} is at {}, not {}",
                        seg.id, got.header, seg.header
                    ),
                ));
            }
            if got.pages != want {
                let missing: Vec<_> = want.difference(&got.pages).take(5).collect();
                let extra: Vec<_> = got.pages.difference(&want).take(5).collect();
                return Err(self.corrupt(
                    self.root,
                    format!(
                        "{what} segment {}: tree pages not allocated to it {missing:?}, its pages not in the tree {extra:?}",
                        seg.id
                    ),
                ));
            }
        }
        Ok(stats)
    }
}
