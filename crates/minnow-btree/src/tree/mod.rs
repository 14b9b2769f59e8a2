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

    /// Inserts a record (one value per stored field of the leaf layout); fails with
    /// [`TreeError::Duplicate`] if its key exists (delete-marked records included). Long
    /// columns of a record too big for half a page go to overflow pages, in the same mtr
    /// (see [`overflow`]). Returns the end LSN of the mtr that made the change.
    pub fn insert(&self, pool: &BufferPool, values: &[Value]) -> Result<Lsn, TreeError> {
        self.insert_trx(pool, values, 0)
    }

    /// [`BTree::insert`] on behalf of transaction `trx_id`: the leaf the record lands on
    /// gets its `PAGE_MAX_TRX_ID` raised to `trx_id` in the same mini-transaction (InnoDB's
    /// `page_update_max_trx_id`, done for every change of a secondary-index leaf; a split
    /// carries the value to the new page). `trx_id` 0 raises nothing: plain
    /// [`BTree::insert`].
    pub fn insert_trx(
        &self,
        pool: &BufferPool,
        values: &[Value],
        trx_id: u64,
    ) -> Result<Lsn, TreeError> {
        let p = self.prepare(pool, values)?;
        self.zip_retry(pool, || self.insert_prepared(pool, &p, trx_id, None))
    }

    /// [`BTree::insert`] of an encoded leaf record (stored as given: no field moves
    /// off-page).
    pub fn insert_rec(&self, pool: &BufferPool, rec: &RecordBuf) -> Result<Lsn, TreeError> {
        let p = overflow::Prepared::inline(rec.clone());
        self.zip_retry(pool, || self.insert_prepared(pool, &p, 0, None))
    }

    fn insert_prepared(
        &self,
        pool: &BufferPool,
        p: &overflow::Prepared,
        trx_id: u64,
        hint: Option<&probe::LeafHint>,
    ) -> Result<Lsn, TreeError> {
        let key = self.leaf.key_of(p.rec.as_bytes(), p.rec.extra())?;
        if let Some(end) = self.insert_optimistic(pool, p, &key, trx_id, hint)? {
            return Ok(end);
        }
        self.insert_pessimistic(pool, p, &key, trx_id)
    }

    /// Deletes the record with key `key` (removing it from its page; see
    /// [`BTree::set_delete_mark`] for the logical delete MVCC uses). Merges pages that fall
    /// below [`MERGE_FILL`].
    pub fn delete(&self, pool: &BufferPool, key: &[Value]) -> Result<Lsn, TreeError> {
        self.delete_trx(pool, key, 0)
    }

    /// [`BTree::delete`] on behalf of transaction `trx_id` (a rollback removing an entry
    /// its transaction inserted): the leaf's `PAGE_MAX_TRX_ID` is raised to `trx_id` in the
    /// same mini-transaction, and a merge carries it to the page that takes the records.
    /// `trx_id` 0 raises nothing.
    pub fn delete_trx(
        &self,
        pool: &BufferPool,
        key: &[Value],
        trx_id: u64,
    ) -> Result<Lsn, TreeError> {
        let k = self.key(key)?;
        self.zip_retry(pool, || {
            if let Some(end) = self.delete_optimistic(pool, &k, trx_id)? {
                return Ok(end);
            }
            match self.delete_pessimistic(pool, &k, trx_id, true) {
                // The merged page does not compress: delete without merging.
                Err(TreeError::Buf(BufError::CompressionFailure { .. })) if self.zip.is_some() => {
                    self.delete_pessimistic(pool, &k, trx_id, false)
                }
                other => other,
            }
        })
    }

    /// Replaces the record with the same key as `values`: in place when the new record has
    /// the same size, else by delete and insert on the same page, else with a split. The old
    /// record's overflow chains are freed and the new one's written in the same mtr.
    pub fn update(&self, pool: &BufferPool, values: &[Value]) -> Result<Lsn, TreeError> {
        self.update_marked(pool, values, None)
    }

    /// [`BTree::update`] that also sets (`Some(true)`) or clears (`Some(false)`) the
    /// record's delete mark in the same mini-transaction (`None` keeps it). MVCC needs the
    /// two together: a delete stamps the deleting transaction's id and roll pointer and
    /// sets the mark atomically, a rollback restores the old values and the old mark.
    pub fn update_marked(
        &self,
        pool: &BufferPool,
        values: &[Value],
        mark: Option<bool>,
    ) -> Result<Lsn, TreeError> {
        let p = self.prepare(pool, values)?;
        let key = self.leaf.key_of(p.rec.as_bytes(), p.rec.extra())?;
        self.zip_retry(pool, || {
            if let Some(end) = self.update_optimistic(pool, &p, &key, mark)? {
                return Ok(end);
            }
            self.update_pessimistic(pool, &p, &key, mark)
        })
    }

    /// The record an insert of `values` would store, if it stores every field inline (the
    /// same choice of off-page columns as [`BTree::insert`]); `None` if some field would go
    /// off-page. A record too long even so is the error the insert would give.
    pub fn encode_inline(
        &self,
        pool: &BufferPool,
        values: &[Value],
    ) -> Result<Option<RecordBuf>, TreeError> {
        // Most records stay whole: encoded once, with no buffer per field (`prepare` would
        // choose nothing off-page for a record that fits `inline_max` either).
        if let Ok(rec) = self.leaf.encode(values)
            && rec.len() <= self.inline_max(pool.config().page_size.bytes())
        {
            return Ok(Some(rec));
        }
        let p = self.prepare(pool, values)?;
        Ok(p.is_inline().then_some(p.rec))
    }

    /// Overwrites the record with the same key as `values` in place, inside the caller's
    /// mini-transaction `mtr`, when the new record has exactly the old one's shape (same
    /// header and data lengths, every field inline, as a dictionary record whose only change
    /// is a fixed-width root page number): so the change commits with whatever else `mtr`
    /// does. Returns false, having changed nothing, when it cannot (another shape, a field
    /// that would go off-page, or a root that stopped being a leaf between the descent's
    /// latches); the caller then does it another way. No record with the key is
    /// [`TreeError::NotFound`].
    pub fn overwrite_in(
        &self,
        pool: &BufferPool,
        mtr: &mut Mtr<'_>,
        values: &[Value],
    ) -> Result<bool, TreeError> {
        let p = self.prepare(pool, values)?;
        if !p.is_inline() || self.zip.is_some() {
            return Ok(false);
        }
        let key = self.leaf.key_of(p.rec.as_bytes(), p.rec.extra())?;
        let Some(h) = self.leaf_for_write(pool, mtr, &key)? else {
            return Ok(false);
        };
        let found = node::search(mtr.page(h), &self.leaf, &key)?;
        if !found.exact {
            return Err(self.not_found(key));
        }
        let origin = found.cursor.origin();
        let (x, d) = self.leaf.size_of(mtr.page(h), origin)?;
        let rec = &p.rec;
        if x != rec.extra()
            || x + d != rec.len()
            || !self.leaf.externals(mtr.page(h), origin)?.is_empty()
        {
            return Ok(false);
        }
        self.cover_rec(mtr, h, rec)?;
        let bytes = rec.as_bytes();
        let head = bytes.get(..x.saturating_sub(5)).unwrap_or_default();
        let data = bytes.get(x..).unwrap_or_default();
        if !head.is_empty() {
            (&mut *mtr, h)
                .write_changed(origin - x, head)
                .map_err(NodeError::from)?;
        }
        (&mut *mtr, h)
            .write_changed(origin, data)
            .map_err(NodeError::from)?;
        Ok(true)
    }

    /// Stamps the clustered record with key `key` in place with `trx_id` and `roll_ptr`
    /// (`DB_TRX_ID`, `DB_ROLL_PTR`) and sets or clears its delete mark as `mark` says
    /// ([`node::stamp_sys`]), in one mini-transaction on one leaf: [`BTree::update_marked`]
    /// for a change that leaves every other field as it is (a delete), without encoding the
    /// record again. Off-page fields stay where they are.
    pub fn stamp_marked(
        &self,
        pool: &BufferPool,
        key: &[Value],
        trx_id: u64,
        roll_ptr: u64,
        mark: Option<bool>,
    ) -> Result<Lsn, TreeError> {
        self.stamp_marked_at(pool, key, trx_id, roll_ptr, mark, None)
    }

    /// [`BTree::stamp_marked`] that first tries the leaf `at` (where a lookup just read the
    /// record, [`LeafRecord::position`]): latched exclusively by its number, used if its LSN
    /// is unchanged (no descent; and the record is where the lookup found it, checked
    /// against the key, so the leaf is not searched either), else let go for the ordinary
    /// descent. The result is the same either way. A delete reads the record, appends its
    /// undo (which may not happen under a leaf latch) and stamps it: with the position, one
    /// descent instead of two.
    pub fn stamp_marked_at(
        &self,
        pool: &BufferPool,
        key: &[Value],
        trx_id: u64,
        roll_ptr: u64,
        mark: Option<bool>,
        at: Option<LeafPos>,
    ) -> Result<Lsn, TreeError> {
        self.in_place(pool, key, at, |p, cursor| {
            node::cover_trx_id(p, &self.leaf, trx_id)?;
            node::stamp_sys(p, &self.leaf, cursor, trx_id, roll_ptr, mark)
        })
    }

    /// Changes the leaf record with key `key` in place with `change` (given the latched leaf
    /// and the record's cursor), in one mini-transaction: no split, no merge, one leaf. The
    /// leaf `at`, if given and unchanged, is taken without a descent.
    fn in_place(
        &self,
        pool: &BufferPool,
        key: &[Value],
        at: Option<LeafPos>,
        change: impl Fn(&mut (&mut Mtr<'_>, PageHandle), Cursor) -> Result<(), NodeError>,
    ) -> Result<Lsn, TreeError> {
        let k = self.key(key)?;
        self.zip_retry(pool, || {
            loop {
                let mut mtr = pool.mtr()?;
                // The remembered leaf, if unchanged and still holding the key's record where
                // the lookup found it (no descent, no search of the leaf).
                let mut hinted = None;
                if let Some(at) = at
                    && let Some(h) = self.latch_at(&mut mtr, at.at)?
                {
                    let ours = matches!(
                        self.leaf.compare(&k, mtr.page(h), at.origin, 0),
                        Ok((std::cmp::Ordering::Equal, _))
                    );
                    match ours {
                        true => hinted = Some((h, Cursor::at(at.origin))),
                        false => mtr.release(h)?,
                    }
                }
                let (h, cursor) = match hinted {
                    Some(found) => found,
                    None => {
                        let Some(h) = self.leaf_for_write(pool, &mut mtr, &k)? else {
                            continue;
                        };
                        let found = node::search(mtr.page(h), &self.leaf, &k)?;
                        if !found.exact {
                            return Err(self.not_found(k.clone()));
                        }
                        (h, found.cursor)
                    }
                };
                change(&mut (&mut mtr, h), cursor)?;
                return Ok(mtr.commit()?);
            }
        })
    }

    /// Sets or clears the delete mark of the record with key `key` (one byte, one page).
    pub fn set_delete_mark(
        &self,
        pool: &BufferPool,
        key: &[Value],
        deleted: bool,
    ) -> Result<Lsn, TreeError> {
        self.set_delete_mark_trx(pool, key, deleted, 0)
    }

    /// [`BTree::set_delete_mark`] on behalf of transaction `trx_id`: the leaf's
    /// `PAGE_MAX_TRX_ID` is raised to `trx_id` in the same mini-transaction (`trx_id` 0
    /// raises nothing).
    pub fn set_delete_mark_trx(
        &self,
        pool: &BufferPool,
        key: &[Value],
        deleted: bool,
        trx_id: u64,
    ) -> Result<Lsn, TreeError> {
        self.in_place(pool, key, None, |p, cursor| {
            node::raise_max_trx_id(p, trx_id)?;
            node::set_delete_mark(p, cursor, deleted)
        })
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
        let mut mtr = pool.mtr()?;
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
