//! The B+tree: many INDEX pages, found through the buffer pool, changed by mini-transactions.
//!
//! One [`BTree`] is one index. Its pages form levels: level 0 holds the **leaves** (the
//! records themselves), every level above holds **node pointers** (a key and a child page
//! number), and the single page at the top is the **root**, whose page number never changes
//! (it is what the dictionary remembers).
//!
//! ```text
//!                          root (level 2)  [MIN | 40 | 90]
//!                         /                  |           \
//!          level 1 [MIN | 17 | 28]      [40 | 61]          [90 | 120]
//!                  /     |      \        /     \             /     \
//!  leaves  [1..16] <-> [17..27] <-> [28..39] <-> [40..60] <-> ... <-> [120..]
//! ```
//!
//! Every page on a level is linked to its left and right neighbours through the FIL header
//! (`PREV` at offset 8, `NEXT` at 12), so a range scan walks the leaves without going back up.
//! A node pointer's key is the smallest key its child may hold: child `i` of a page holds keys
//! in `[key_i, key_{i+1})`. The first node pointer of the leftmost page of each non-leaf level
//! carries the `MIN_REC` flag and compares below every key, so every search finds a child.
//! Inner pages keep one more invariant: their first record's key equals their separator in
//! the parent.
//!
//! ## Descent and latch coupling
//!
//! To find a key, start at the root and repeatedly search the page ([`crate::node::search`])
//! for the last node pointer `<= key`, then go to its child. Many threads do this at once, and
//! a writer may be changing a page a reader is about to enter. **Latch coupling** (or
//! *crabbing*) makes that safe without a lock shared by all readers: a reader holds a shared
//! latch on the parent until it has latched the child, then lets go of the parent. At every
//! moment it holds a latch on a page that points to where it is going, so no split or merge
//! can pull the child away between "read the pointer" and "latch the child". It never holds
//! more than two latches, so readers of different leaves never wait for each other.
//!
//! ## Writers: optimistic first, pessimistic when the structure changes
//!
//! Most inserts and deletes change one leaf and nothing else. So a writer first descends
//! **optimistically**: shared latches on the way down, exactly as a reader, and an exclusive
//! latch only on the leaf. If the change fits (an insert that needs no split, a delete that
//! does not leave the page under-full) it is made right there, in one mini-transaction on
//! one page, while other threads keep using every other page.
//!
//! If the leaf must **split** or **merge**, the parent changes too, and possibly the
//! grandparent, up to the root. The writer cannot upgrade the shared latches it let go of, so
//! it releases everything (its mtr made no change yet) and starts again **pessimistically**:
//! exclusive latches from the root down, plus the siblings each level may need (see
//! the `descend` module). With 4 KiB pages of 50-byte records that is about one insert in 80.
//!
//! On the way down the pessimistic writer asks of every node page whether it is **safe**:
//! whether it can neither split nor merge, whatever happens below it.
//!
//! - For an insert (or an update that grows a record) a page is safe if it has room for the
//!   longest node pointer the index can have (the node-pointer layout's
//!   [`RecordLayout::max_record_len`]): a split below pushes up exactly one pointer, and no
//!   longer than that.
//! - For a delete it is safe if it keeps more than two records and stays at least
//!   the merge threshold ([`BTree::merge_fill`]) full without that longest pointer: a merge
//!   below removes exactly one.
//!
//! Once a safe page is latched nothing above it will change, so the mini-transaction lets go
//! of every latch above it, and of its left sibling (only its own merge would need that), with
//! [`minnow_buf::Mtr::release`]; its right siblings are not latched at all. Only the safe page
//! and the levels below it stay latched to commit, and readers and writers whose paths part
//! from the writer's above the safe page (the other subtrees) go on while the split or merge
//! runs: InnoDB's `btr_cur_will_modify_tree`. The released pages were only looked at, never
//! changed (the mtr refuses to release a changed page), so the redo group is still whole:
//! every page it changes stays latched from before its change until the group is in the log.
//! Where no page is safe the root stays latched, as in a two-level tree whose root is the
//! parent a leaf split changes. The compression splits (see [`zip`]) keep the whole path, and
//! on a compressed tree a safe page takes the separator even if the padding rose meanwhile
//! (the padding is a hint to split early; a page that then does not compress fails the commit,
//! and the compression retry splits it).
//!
//! **Why no index latch.** InnoDB 5.7 SX-latches the index (`dict_index_t::lock`) for every
//! structure change: SX lets readers (S) through but admits one structure change per index at
//! a time. It needs that because its tree changes find a page's parent by searching again
//! from the root (`btr_page_get_father`) while holding latches on lower pages, against the
//! top-down order; that is safe only while no other structure change can hold those upper
//! pages. minnow's changes never climb: the descent keeps the path it latched, and a split or
//! merge touches only pages of that path and the siblings latched with it, in order. So page
//! latches alone keep the order, and two structure changes in different subtrees run at once.
//! The price: a second pessimistic writer heading into the same subtree waits at the first
//! one's safe page while holding its own latches above it (the root, when nothing above was
//! safe for it either), and readers of other subtrees wait for it at the root until the first
//! writer commits. Under InnoDB's SX it would wait on the index latch holding no page.
//!
//! ## Latch order: why there is no deadlock
//!
//! Every thread takes latches in one global order: **top-down** (a page before any page on a
//! lower level), and on one level **left to right**. Readers and optimistic writers descend
//! top-down (a reader's optimistic descent latches only its leaf, holding nothing else); scans move right along the leaves; a pessimistic writer latches, level by level
//! from the root, the path page's left sibling (if it has the same parent), the path page,
//! its right sibling and, when needed, the right sibling's right sibling, finishing a level
//! before starting the next. Pages it allocates (and page 0, the XDES and INODE pages, which
//! hold the allocator: see [`crate::space`]) come last: nobody else can reach a page that is
//! not yet in the tree. A wait-for cycle would need some thread to wait for a page *earlier*
//! in the order than one it holds, which never happens.
//!
//! Releasing the latches above a safe page keeps the rule: a thread that lets go of latches
//! only holds less, and after the release the writer latches only pages below the safe page
//! (and new or allocator pages), never one above or to the left of a page it still holds. It
//! never latches a released page again: a split or merge touches only the kept part of the
//! path, which is why a safe page that had to split or merge after all would be reported as
//! an error rather than climb to its released parent.
//!
//! ## Splits, and the root raise
//!
//! A full page splits in two: a new page is allocated, linked into the sibling list to the
//! right of the old one, and the records from a **split point** on move to it
//! ([`crate::node::split_point`]): in the middle (by bytes) for random inserts, but *at the
//! insert point* when inserts run in ascending or descending order (the page header remembers
//! the last insert and the direction). A sequential load then leaves every page full instead of
//! half full. A node pointer to the new page (its first key and page number) goes into the
//! parent, which may split in turn.
//!
//! When the root is full it cannot split sideways (its page number must stay), so it splits
//! *upwards*: its records move to a new child page, the root is re-initialised one level
//! higher with a single node pointer to that child, and the child splits as any page would.
//! This **root raise** is the only way the tree grows taller, so all leaves stay at one depth.
//!
//! ## Merges, and the root lower
//!
//! A delete that leaves a page less full than the tree's merge threshold (a quarter,
//! [`MERGE_FILL`], unless [`BTree::with_merge_threshold`] set another) merges it with a
//! sibling under the same parent, if the two fit in one page: the records move, the sibling
//! links are mended, the emptied page's node pointer is deleted from the parent (which may in
//! turn become under-full) and the page goes back to the allocator. When the root is left with
//! a single child, the child's records move up into the root and the child is freed: the
//! **root lower**, the only way the tree gets shorter.
//!
//! ## One mini-transaction per structural change
//!
//! A split changes at least four pages (the page, the new page, the right neighbour's `PREV`,
//! the parent) and the allocator's pages (page 0, an XDES or INODE page). If a crash left some
//! of those changes on disk and not the others, the tree would be broken: a page with no
//! parent pointer, a sibling link to nowhere. So every structural change is **one**
//! mini-transaction: every page it changes stays X-latched until commit (the ancestors it
//! only looked at may go earlier, see above), its redo records are appended as one group, and
//! recovery replays a group whole or not at all. No other thread sees a half-done split (the latches), and no
//! crash leaves one (the redo group). Every byte goes through [`crate::PageMut`] implemented for
//! `(&mut Mtr, PageHandle)`, so no change escapes the log.
//!
//! ## Range scans
//!
//! A [`RangeScan`] goes forward or backward ([`ScanRange::reverse`]) between bounds that may be
//! key prefixes. It starts with one descent and one binary search on the leaf, copies only the
//! records it may return (no more than the limit) under a shared latch, and then lets go of
//! the latch, remembering the leaf's page number, LSN and siblings. To move on it checks the
//! remembered leaf's LSN: unchanged, it steps to the sibling (rightwards by latch coupling;
//! leftwards by latching the left page *first* and then the remembered one, so that every
//! thread takes sibling latches left to right); changed, it searches again from the root for
//! the last key it returned (InnoDB's "restore the persistent cursor"). See the cursor module.
//!
//! ## Bulk build
//!
//! [`BulkBuilder`] builds a whole tree bottom-up from sorted records: leaves filled to a fill
//! factor (15/16 by default), upper levels from the first keys of the level below, the root
//! last; each finished page is one mini-transaction logging only its used bytes, and the tree
//! is reachable only once the caller publishes its root.
//!
//! ## Example
//!
//! ```
//! use std::ops::Bound;
//! use minnow_btree::{BTree, ScanRange};
//! use minnow_btree::record::{Column, ColumnType, RecordLayout, Value};
//! use minnow_buf::{BufConfig, BufferPool};
//! use minnow_page::PageSize;
//! use minnow_redo::FlushAtCommit;
//!
//! let dir = tempfile::tempdir()?;
//! let pool = BufferPool::create_scratch(dir.path(), BufConfig::with_frames(64, PageSize::K4), 1)?;
//! let layout = RecordLayout::clustered(
//!     vec![Column::new(ColumnType::U64)],
//!     vec![Column::new(ColumnType::Var(100))],
//! )?;
//! let (tree, _) = BTree::create(&pool, 1, 42, layout)?;
//! let row = |k: u64| vec![Value::UInt(k), Value::trx_id(1), Value::roll_ptr(1 << 55),
//!                         Value::Bytes(format!("row {k}").into_bytes())];
//! for k in 0..2000 {
//!     let end = tree.insert(&pool, &row(k))?;
//!     pool.commit_durable(end, FlushAtCommit::Lazy)?;
//! }
//! tree.delete(&pool, &[Value::UInt(7)])?;
//! assert!(tree.get(&pool, &[Value::UInt(7)])?.is_none());
//! assert_eq!(tree.get(&pool, &[Value::UInt(8)])?.unwrap().values, row(8));
//! let range = ScanRange::new(Bound::Excluded(vec![Value::UInt(5)]), Bound::Unbounded).limit(3);
//! let keys: Vec<Value> = tree.scan(&pool, range)?.map(|e| Ok(e?.values[0].clone()))
//!     .collect::<Result<_, minnow_btree::TreeError>>()?;
//! assert_eq!(keys, [Value::UInt(6), Value::UInt(8), Value::UInt(9)]);
//! let stats = tree.check(&pool)?;
//! assert_eq!((stats.records, stats.height), (1999, 2));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod bulk;
mod check;
mod count;
mod count_par;
mod cursor;
mod descend;
mod get;
mod hook;
mod in_place;
#[cfg(test)]
mod latch_tests;
mod merge;
mod olc;
pub mod overflow;
mod page;
mod probe;
mod relocate;
mod segs;
mod split;
mod write;
pub mod zip;

pub use crate::space::{SpaceUsage, allocate, free, space_usage};
pub use bulk::{BulkBuilder, BulkOptions, DEFAULT_FILL_FACTOR};
pub use check::TreeStats;
pub use count::Counted;
pub use count_par::Parallel;
pub use cursor::{RangeCursor, RangeScan, ScanRange, Visit};
pub use descend::descents;
pub use get::LeafRecord;
pub use hook::{Descent, Guess, SearchHook};
pub use in_place::{LeafSlot, SysFields};
pub use olc::{OptimisticStats, optimistic_stats};
pub use probe::{InsertProbe, LeafHint, LeafPos};
pub use relocate::Relocation;
pub use segs::Segments;
pub use zip::{ZipIndexStats, ZipPadConfig};

use minnow_buf::{BufError, BufferPool, Mtr, PageHandle};
use minnow_page::PageId;
use minnow_redo::Lsn;

use crate::PageMut as _;
use crate::node::{self, Cursor, NodeError};
use crate::record::{RecordBuf, RecordError, RecordLayout, SearchKey, Value};

/// A page less full than this share of its record space is merged with a sibling if they fit:
/// the default of a tree opened or created here; an engine sets its own
/// ([`BTree::with_merge_threshold`]).
pub const MERGE_FILL: f64 = 0.25;

/// Errors of tree operations.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    /// The buffer pool failed (IO, corrupt page, pool exhausted, poisoned).
    #[error(transparent)]
    Buf(#[from] BufError),
    /// A node-page operation failed.
    #[error(transparent)]
    Node(#[from] NodeError),
    /// A record could not be encoded or decoded.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// An insert found a record with the same key.
    #[error("duplicate key {key:?} in index {index_id}")]
    Duplicate {
        /// The index.
        index_id: u64,
        /// The key, as stored field bytes.
        key: SearchKey,
    },
    /// A delete, update or delete-mark found no record with the key.
    #[error("key {key:?} not found in index {index_id}")]
    NotFound {
        /// The index.
        index_id: u64,
        /// The key, as stored field bytes.
        key: SearchKey,
    },
    /// A key with the wrong number of fields.
    #[error("a key of index {index_id} needs {need} fields, got {got}")]
    BadKey {
        /// The index.
        index_id: u64,
        /// Fields the key needs.
        need: usize,
        /// Fields given.
        got: usize,
    },
    /// A bulk build got a record whose key is below the previous record's.
    #[error("bulk build of index {index_id}: key {key:?} arrived after {previous:?}")]
    OutOfOrder {
        /// The index.
        index_id: u64,
        /// The key that arrived out of order, as stored field bytes.
        key: SearchKey,
        /// The key before it.
        previous: SearchKey,
    },
    /// A bulk build fill factor outside `(0, 1]`.
    #[error("bulk build fill factor {fill_factor} is not in (0, 1]")]
    BadFillFactor {
        /// The fill factor given.
        fill_factor: f64,
    },
    /// A row that cannot be stored: too big for a page even with every long column on
    /// overflow pages, or with more overflow pages than one mini-transaction may write (see
    /// [`overflow`]).
    #[error("a row of {len} bytes is too large for index {index_id} (limit {max}): {what}")]
    RowTooLarge {
        /// The index.
        index_id: u64,
        /// The row's size in bytes (on-page record, or all its off-page bytes).
        len: usize,
        /// The limit it exceeds, in bytes.
        max: usize,
        /// Which limit, with the numbers.
        what: String,
    },
    /// A page of a compressed index still did not compress into its block after
    /// [`zip::MAX_ZIP_RETRIES`] splits (or could not be split further): its records do not
    /// compress enough for the block size.
    #[error(
        "index {index_id}: page {page} does not compress into its {block}-byte block even after splitting"
    )]
    DoesNotCompress {
        /// The index.
        index_id: u64,
        /// The page that did not fit.
        page: PageId,
        /// The block size in bytes.
        block: usize,
    },
    /// A B-tree invariant does not hold on a page.
    #[error("corrupt B-tree page {page}: {what}")]
    Corrupt {
        /// The page.
        page: PageId,
        /// What is wrong.
        what: String,
    },
}

/// `info` with the delete-mark bit set or cleared as `mark` says (`None`: unchanged).
pub(crate) fn with_mark(info: u8, mark: Option<bool>) -> u8 {
    match mark {
        Some(true) => info | crate::record::INFO_DELETED,
        Some(false) => info & !crate::record::INFO_DELETED,
        None => info,
    }
}

/// One record returned by a lookup or a scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// One value per stored field of the leaf layout. An off-page field the read was told
    /// not to fetch ([`BTree::get_fields`], [`ScanRange::fetch`]) is [`Value::Null`].
    pub values: Vec<Value>,
    /// True if the record is delete-marked.
    pub deleted: bool,
    /// `PAGE_MAX_TRX_ID` of the leaf the record was read from, read under the same latch as
    /// the record ([`crate::node::max_trx_id`]): on a secondary index, every transaction that
    /// changed the record (or anything else on its page) has an id at most this. 0 on
    /// clustered indexes, which keep their transaction ids in the records.
    pub page_max_trx_id: u64,
}

/// One index: a B+tree of INDEX pages in one tablespace. A small descriptor (`Clone`,
/// `Send`, `Sync`): every operation takes the [`BufferPool`] the pages live in. It may carry
/// a [`SearchHook`] (an adaptive hash index) that its point lookups consult.
#[derive(Debug, Clone)]
pub struct BTree {
    space: u32,
    root: u32,
    index_id: u64,
    /// The leaf and node-pointer layouts, shared by every clone (a scan's cursor owns one, so
    /// cloning must not copy the layouts' vectors).
    leaf: std::sync::Arc<RecordLayout>,
    node: std::sync::Arc<RecordLayout>,
    /// The non-leaf segment (which holds the root) and the leaf segment.
    segs: Segments,
    /// The adaptive hash index of this tree, if one is installed.
    hook: Option<std::sync::Arc<dyn SearchHook>>,
    /// Set for a tree in a compressed tablespace ([`zip`]).
    zip: Option<std::sync::Arc<zip::ZipState>>,
    /// A page less full than this share of its record space merges with a sibling if they
    /// fit ([`MERGE_FILL`] unless [`BTree::with_merge_threshold`] set it).
    merge_fill: f64,
}

impl BTree {
    /// Creates an empty tree: its two segments (non-leaf and leaf), its root (the first
    /// page of the non-leaf segment) formatted as an empty leaf of `index_id` with the
    /// segments' FSEG headers, all in one mtr. Returns the tree and the mtr's end LSN (pass
    /// it to [`BufferPool::commit_durable`] to make the creation durable).
    pub fn create(
        pool: &BufferPool,
        space: u32,
        index_id: u64,
        layout: RecordLayout,
    ) -> Result<(BTree, Lsn), TreeError> {
        let mut mtr = pool.mtr()?;
        let top = crate::space::create_segment(&mut mtr, space)?;
        let leaf = crate::space::create_segment(&mut mtr, space)?;
        let h = crate::space::allocate_in(&mut mtr, top.header, None)?;
        page::init_index_page(&mut mtr, h, index_id, 0)?;
        let segs = Segments { top, leaf };
        segs.write(&mut mtr, h)?;
        let root = mtr.page_id(h).map_or(0, |id| id.page_no);
        let end = mtr.commit()?;
        let zip = zip::ZipState::for_space(pool, space);
        Ok((
            BTree::descriptor(space, root, index_id, layout, segs, zip),
            end,
        ))
    }

    /// Opens the tree whose root is page `root` of `space`; the index id and the segments
    /// are read from the root, which must be an INDEX page.
    pub fn open(
        pool: &BufferPool,
        space: u32,
        root: u32,
        layout: RecordLayout,
    ) -> Result<BTree, TreeError> {
        let id = PageId::new(space, root);
        let (index_id, headers) = {
            let g = pool.get_read(id)?;
            let index_id = node::index_id(&g)?;
            page::validate(&g, id, index_id, None)?;
            (index_id, Segments::headers(&g, id)?)
        };
        let segs = Segments::read(pool, id, headers)?;
        let zip = zip::ZipState::for_space(pool, space);
        Ok(BTree::descriptor(space, root, index_id, layout, segs, zip))
    }

    fn descriptor(
        space: u32,
        root: u32,
        index_id: u64,
        leaf: RecordLayout,
        segs: Segments,
        zip: Option<std::sync::Arc<zip::ZipState>>,
    ) -> BTree {
        let node = leaf.node_ptr().into();
        BTree {
            space,
            root,
            index_id,
            leaf: leaf.into(),
            node,
            segs,
            hook: None,
            zip,
            merge_fill: MERGE_FILL,
        }
    }

    /// This tree with merge threshold `pct` percent (InnoDB's `MERGE_THRESHOLD`, 1 to 50;
    /// other values are clamped): a delete that leaves a page less full than that share of
    /// its record space merges it with a sibling under the same parent if the two fit in one
    /// page. Higher values keep pages fuller after deletes at the cost of more merges (and
    /// of more pessimistic deletes: one that leaves its leaf under the threshold latches
    /// from the top).
    pub fn with_merge_threshold(mut self, pct: u8) -> BTree {
        self.merge_fill = f64::from(pct.clamp(1, 50)) / 100.0;
        self
    }

    /// The merge threshold as a share of a page's record space (0.25: a quarter).
    pub fn merge_fill(&self) -> f64 {
        self.merge_fill
    }

    /// The tablespace.
    pub fn space(&self) -> u32 {
        self.space
    }

    /// The root page number (fixed for the tree's life).
    pub fn root(&self) -> u32 {
        self.root
    }

    /// The index id stamped on every page.
    pub fn index_id(&self) -> u64 {
        self.index_id
    }

    /// The leaf record layout.
    pub fn layout(&self) -> &RecordLayout {
        &self.leaf
    }

    pub(crate) fn id(&self, page_no: u32) -> PageId {
        PageId::new(self.space, page_no)
    }

    pub(crate) fn layout_at(&self, level: u16) -> &RecordLayout {
        if level == 0 { &self.leaf } else { &self.node }
    }

    /// Encodes a full key (exactly `n_key` values).
    pub fn key(&self, key: &[Value]) -> Result<SearchKey, TreeError> {
        if key.len() != self.leaf.n_key() {
            return Err(TreeError::BadKey {
                index_id: self.index_id,
                need: self.leaf.n_key(),
                got: key.len(),
            });
        }
        Ok(self.leaf.search_key(key)?)
    }

    /// A range scan, forward or backward; see [`ScanRange`] for bounds (keys or key
    /// prefixes), limit and direction.
    pub fn scan<'p>(
        &self,
        pool: &'p BufferPool,
        range: ScanRange,
    ) -> Result<RangeScan<'p>, TreeError> {
        RangeScan::new(self.clone(), pool, range)
    }

    /// A range scan that does not borrow the pool: [`RangeCursor::next_in`] takes it on each
    /// call (for an owner of the pool's `Arc` whose scans must be `'static`).
    pub fn cursor(&self, range: ScanRange) -> Result<RangeCursor, TreeError> {
        RangeCursor::new(self.clone(), range)
    }

    fn not_found(&self, key: SearchKey) -> TreeError {
        TreeError::NotFound {
            index_id: self.index_id,
            key,
        }
    }

    fn update_optimistic(
        &self,
        pool: &BufferPool,
        p: &overflow::Prepared,
        key: &SearchKey,
        mark: Option<bool>,
    ) -> Result<Option<Lsn>, TreeError> {
        let mut mtr = pool.mtr_with_room(p.room())?;
        let Some(h) = self.leaf_for_write(pool, &mut mtr, key)? else {
            return Ok(None);
        };
        let found = node::search(mtr.page(h), &self.leaf, key)?;
        if !found.exact {
            return Err(self.not_found(key.clone()));
        }
        let origin = found.cursor.origin();
        let (x, d) = self.leaf.size_of(mtr.page(h), origin)?;
        let info = with_mark(node::header_at(mtr.page(h), found.cursor)?.info_bits, mark);
        self.free_external(&mut mtr, h, origin)?;
        let rec = &self.store_external(&mut mtr, p)?;
        self.cover_rec(&mut mtr, h, rec)?;
        if x == rec.extra() && x + d == rec.len() {
            // Same shape: overwrite the extra bytes below the header and the data in place.
            let bytes = rec.as_bytes();
            let head = bytes.get(..x.saturating_sub(5)).unwrap_or_default();
            let data = bytes.get(x..).unwrap_or_default();
            if !head.is_empty() {
                (&mut mtr, h)
                    .write_changed(origin - x, head)
                    .map_err(NodeError::from)?;
            }
            (&mut mtr, h)
                .write_changed(origin, data)
                .map_err(NodeError::from)?;
            if let Some(deleted) = mark {
                node::set_delete_mark(&mut (&mut mtr, h), found.cursor, deleted)?;
            }
            return Ok(Some(mtr.commit()?));
        }
        if rec.len() > x + d && !self.zip_room(mtr.page(h), rec.len() - (x + d))? {
            return Ok(None);
        }
        node::delete(&mut (&mut mtr, h), &self.leaf, found.cursor)?;
        let mut new = rec.clone();
        new.set_info_bits(info);
        match node::insert(&mut (&mut mtr, h), &self.leaf, &new) {
            Ok(_) => Ok(Some(mtr.commit()?)),
            // Dropping the mtr puts the page back as it was.
            Err(NodeError::PageFull { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}
