//! Bulk build: a whole tree from records in ascending key order, bottom-up.
//!
//! Inserting sorted records one at a time descends the tree for every record, latches and
//! logs each insert separately, and splits a page every time one fills. When the input is
//! already sorted (creating an index on a populated table, loading a sorted file) none of that
//! is needed. InnoDB's *sorted index build* (`btr_bulk`) builds the tree from the bottom up
//! instead, and so does [`BulkBuilder`]:
//!
//! ```text
//!  level 2                          [ a          m          ]            <- the root, last
//!                                     |          |
//!  level 1             [ a    e    i ]-----------[ m    q    ]           <- first keys of
//!                        |    |    |               |    |                   the level below
//!  level 0   [a b c d]-[e f g h]-[i j k l]-----[m n o p]-[q r]           <- leaves, filled
//!                                                                           left to right
//! ```
//!
//! 1. **Leaves.** Records are appended to an in-memory image of the current leaf, in order,
//!    until the next one would take the page past its **fill factor** (default 15/16, as
//!    InnoDB's `innodb_fill_factor` leaves 1/16 free for later updates and inserts). Then
//!    the leaf is finished: the next page is allocated, the finished leaf's `NEXT` link
//!    points at it, the new one's `PREV` back.
//! 2. **Upper levels.** Finishing a page hands a node pointer (its first key, its page
//!    number) to the level above, which fills its own pages the same way; the very first
//!    pointer of each upper level carries `MIN_REC`. A level that fills creates the level
//!    above it, so the tree grows upwards as the input flows.
//! 3. **The root.** At the end every level's last page is finished from the bottom up; the
//!    first level left with a single page is the root.
//!
//! Every page holds at least two records whatever the fill factor, so upper levels always
//! shrink and the height stays logarithmic. Pages are laid out as [`crate::node::reorganize`]
//! lays them out: records in key order from the heap start, directory groups of four.
//!
//! ## Crash safety: each finished page is one compact mini-transaction
//!
//! minnow takes InnoDB's other road here (InnoDB's sorted build writes pages without redo and
//! flushes them before the index is published). A finished page goes through the buffer pool
//! in one mini-transaction whose redo is the page's *used bytes only*: a WRITE of the page
//! header, infimum, supremum and record heap (bytes 38 to the heap top), a WRITE of the
//! directory, and two small WRITEs of the FIL links and type; the free gap in the middle is
//! not logged (the page was zeroed when allocated). The same mtr allocates the page that
//! follows, so a page's `NEXT` link is never dangling. The redo volume is therefore about
//! the data volume, recovery replays it like any other redo, and the page LSN and flush
//! rules are the ordinary ones (nothing bypasses the pool, so no flushed page can be
//! clobbered by an older redo record).
//!
//! **The tree becomes reachable only when its root is published by the caller** (for a
//! table, by the dictionary record that names the root). [`BulkBuilder::new`] first creates
//! an empty tree (its root page and its two segments, [`BTree::create`]) and every page the
//! build takes comes from that tree's segments: leaves from the leaf segment, upper levels
//! from the non-leaf one. At the end the built top page is copied into that root page and
//! given back, in one mtr. Until the caller publishes the root, nothing points at the tree:
//! a crash in the middle leaves two segments no dictionary record names, which `minnow`
//! frees at the next `open` (its "orphan segments"), never a half-built index that someone
//! can see. [`BulkBuilder::finish`] returns the end LSN of the last mtr; the caller makes it
//! durable before (or together with) publishing the root.
//!
//! ## Long columns
//!
//! [`BulkBuilder::push_values`] chooses a record's off-page columns exactly as an insert does
//! (`BTree::prepare`: the longest variable-length fields move until the record fits half a
//! page, or half a block in a compressed tree; see [`crate::tree::overflow`]) and writes each
//! record's overflow chains in one mini-transaction of their own, before the record joins its
//! leaf image. The chain pages come from the tree's leaf segment like the leaves, so they too
//! are unreachable, and freed with the tree, until the root is published; the leaf that later
//! points at them is written in a later mtr, so redo never replays a reference without its
//! chain.
//!
//! ## Input checks
//!
//! Records must arrive in strictly ascending key order: an equal key is
//! [`TreeError::Duplicate`], a smaller one [`TreeError::OutOfOrder`]; both name the key. A
//! record too large for a page is a [`NodeError::RecordTooBig`]. After an error the builder
//! is spent: dropping it leaves only unreachable pages, as a crash would.

use std::cmp::Ordering;

use minnow_buf::BufferPool;
use minnow_page::{PageType, fil};
use minnow_redo::Lsn;

use super::page::{NIL, node_ptr};
use super::{BTree, TreeError};
use crate::node::{self, NodeError, SUPREMUM, SUPREMUM_END};
use crate::record::{INFO_DELETED, INFO_MIN_REC, RecordBuf, RecordHeader, RecordLayout, next_rel};
use minnow_page::index::PAGE_HEADER;

/// InnoDB's default `innodb_fill_factor` for sorted index builds: 15/16 of each page.
pub const DEFAULT_FILL_FACTOR: f64 = 15.0 / 16.0;

/// Records per directory group in a built page (room to insert before a group splits).
const GROUP: usize = 4;

/// Settings of a bulk build.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BulkOptions {
    /// The share of each page's record space to fill, in `(0, 1]` ([`DEFAULT_FILL_FACTOR`]).
    /// Pages always take at least two records.
    pub fill_factor: f64,
    /// The `PAGE_MAX_TRX_ID` every built leaf gets (0 by default). A secondary index built
    /// from rows that some read views may not see in full needs a value no older than the
    /// newest transaction whose change the rows hold, so that such a view checks each entry
    /// against the row's version it sees instead of trusting the entries (InnoDB's sorted
    /// build stamps its leaves with the id of the transaction that creates the index).
    pub max_trx_id: u64,
}

impl Default for BulkOptions {
    fn default() -> BulkOptions {
        BulkOptions {
            fill_factor: DEFAULT_FILL_FACTOR,
            max_trx_id: 0,
        }
    }
}

impl BulkOptions {
    /// The same options with another fill factor.
    pub fn fill_factor(mut self, f: f64) -> BulkOptions {
        self.fill_factor = f;
        self
    }

    /// The same options, stamping every built leaf's `PAGE_MAX_TRX_ID` with `trx_id`.
    pub fn max_trx_id(mut self, trx_id: u64) -> BulkOptions {
        self.max_trx_id = trx_id;
        self
    }
}

/// One level's page under construction: an in-memory image, appended to in key order.
#[derive(Clone)]
struct PageImage {
    level: u16,
    /// The page this image will be written to (already allocated).
    page_no: u32,
    /// Its left sibling (`FIL_NULL` for the leftmost page of the level).
    prev: u32,
    img: Vec<u8>,
    heap_top: usize,
    n_recs: usize,
    /// Origin of the last record appended (0: none yet).
    last: usize,
    /// Origin of the first record.
    first: usize,
    /// Origins of the directory groups' owners, in key order (infimum and supremum aside).
    owners: Vec<usize>,
    /// For a compressed tree: record bytes and compressed payload at the last fit trial
    /// (0, 0 before the first).
    zip_seen: (usize, usize),
}

impl PageImage {
    fn new(
        page_len: usize,
        level: u16,
        page_no: u32,
        prev: u32,
        index_id: u64,
        max_trx_id: u64,
    ) -> PageImage {
        let mut img = vec![0u8; page_len];
        // A fresh `init` on a zeroed buffer: page header, infimum, supremum, two slots.
        let _ = node::init(&mut img, index_id, level);
        if level == 0 {
            let _ = node::raise_max_trx_id(&mut img, max_trx_id);
        }
        PageImage {
            level,
            page_no,
            prev,
            img,
            heap_top: SUPREMUM_END,
            n_recs: 0,
            last: 0,
            first: 0,
            owners: Vec::new(),
            zip_seen: (0, 0),
        }
    }

    /// Record bytes plus directory slots the page would use with one more record of `len`.
    fn used_with(&self, len: usize) -> usize {
        let n = self.n_recs + 1;
        (self.heap_top - SUPREMUM_END) + len + 2 * (n / GROUP)
    }

    /// True if a record of `len` bytes may be appended under the fill factor `fill`.
    fn takes(&self, len: usize, fill: f64) -> bool {
        let page_len = self.img.len();
        let n = self.n_recs + 1;
        let physical = self.heap_top + len + 8 + 2 * (2 + n / GROUP) <= page_len && n + 2 < 0x1FFF;
        if !physical {
            return false;
        }
        if self.n_recs < 2 {
            return true;
        }
        let capacity = super::page::capacity(page_len) as f64;
        self.used_with(len) as f64 <= fill * capacity
    }

    /// Appends a record (bytes from its start, `extra` bytes before its origin) with the
    /// given info bits; the caller has checked [`PageImage::takes`].
    fn push(&mut self, bytes: &[u8], extra: usize, info_bits: u8) -> Result<(), TreeError> {
        let start = self.heap_top;
        let origin = start + extra;
        let available = self.img.len().saturating_sub(start);
        let dst = self
            .img
            .get_mut(start..start + bytes.len())
            .ok_or(NodeError::PageFull {
                needed: bytes.len(),
                available,
            })?;
        dst.copy_from_slice(bytes);
        self.n_recs += 1;
        let owner = self.n_recs.is_multiple_of(GROUP);
        let old = RecordHeader::read(&self.img, origin)?;
        let h = RecordHeader {
            info_bits,
            n_owned: if owner { GROUP as u8 } else { 0 },
            heap_no: (self.n_recs + 1) as u16,
            status: old.status,
            next_rel: next_rel(origin, SUPREMUM),
        };
        self.set_header(origin, h)?;
        if info_bits & INFO_DELETED != 0 {
            node::set_no_delete_marks(&mut self.img, false)?;
        }
        let prev = if self.last == 0 {
            node::INFIMUM
        } else {
            self.last
        };
        let mut ph = RecordHeader::read(&self.img, prev)?;
        ph.next_rel = next_rel(prev, origin);
        self.set_header(prev, ph)?;
        if owner {
            self.owners.push(origin);
        }
        if self.first == 0 {
            self.first = origin;
        }
        self.last = origin;
        self.heap_top = start + bytes.len();
        Ok(())
    }

    fn set_header(&mut self, origin: usize, h: RecordHeader) -> Result<(), TreeError> {
        let at = origin.checked_sub(5).ok_or(NodeError::BadCursor {
            at: origin,
            what: "no room for a record header",
        })?;
        self.img
            .get_mut(at..origin)
            .ok_or(NodeError::BadCursor {
                at: origin,
                what: "record header outside the page",
            })?
            .copy_from_slice(&h.to_bytes());
        Ok(())
    }

    /// Completes the directory and page header; returns the directory's first byte.
    fn seal(&mut self) -> Result<usize, TreeError> {
        let n = self.img.len();
        let mut slots = Vec::with_capacity(self.owners.len() + 2);
        slots.push(node::INFIMUM);
        slots.extend_from_slice(&self.owners);
        slots.push(SUPREMUM);
        let n_slots = slots.len();
        let dir_start = n - 8 - 2 * n_slots;
        for (k, s) in slots.iter().enumerate() {
            let at = n - 10 - 2 * k;
            self.img
                .get_mut(at..at + 2)
                .ok_or(NodeError::PageFull {
                    needed: 2 * n_slots,
                    available: n,
                })?
                .copy_from_slice(&(*s as u16).to_be_bytes());
        }
        let mut sup = RecordHeader::read(&self.img, SUPREMUM)?;
        sup.n_owned = (self.n_recs % GROUP + 1) as u8;
        self.set_header(SUPREMUM, sup)?;
        let hdr = node::Hdr {
            n_slots: n_slots as u16,
            heap_top: self.heap_top as u16,
            n_heap: (self.n_recs + 2) as u16,
            free: 0,
            garbage: 0,
            last_insert: 0,
            direction: node::DIR_NONE,
            n_direction: 0,
            n_recs: self.n_recs as u16,
        };
        hdr.store(&mut self.img)?;
        Ok(dir_start)
    }
}

/// Payload bytes a bulk-built compressed page leaves free in its block, for the in-place
/// changes (delete marks, system columns, a slightly longer value) it will take later.
const ZIP_HEADROOM: usize = 128;

/// What a compressor may add on top of the bytes it is given, whatever they are (deflate's
/// block headers and Adler-32, LZ4's literal-run lengths for a few KiB).
const ZIP_SLACK: usize = 64;

/// For a compressed tree: true if page `p` with the record `bytes` appended still compresses
/// into its block with [`ZIP_HEADROOM`] to spare (a page takes at least one record). A trial
/// compression is made only when it could be needed: since the last trial (payload `P` for
/// `U` meaningful bytes: heap and directory) the page may have grown by `U' - U` bytes, and
/// if even those did not compress at all `P + (U' - U)` plus [`ZIP_SLACK`] would still fit,
/// no trial is needed. So a page whose rows compress well costs a few trials, and a
/// page whose later rows do not compress is still closed in time.
fn zip_takes(
    space: &minnow_io::Tablespace,
    p: &mut PageImage,
    bytes: &[u8],
    extra: usize,
) -> Result<bool, TreeError> {
    if p.n_recs == 0 {
        return Ok(true);
    }
    let Some(zip) = space.zip() else {
        return Ok(true);
    };
    let limit = minnow_zip::format::capacity(zip.block_size).saturating_sub(ZIP_HEADROOM);
    let used = p.heap_top + bytes.len() + 2 * (2 + (p.n_recs + 1) / GROUP);
    let (seen_used, seen_payload) = p.zip_seen;
    if seen_payload + used.saturating_sub(seen_used) + ZIP_SLACK <= limit {
        return Ok(true);
    }
    let mut trial = p.clone();
    trial.push(bytes, extra, 0)?;
    trial.seal()?;
    let mut block = vec![0u8; zip.block_size.bytes()];
    let outcome = space
        .compress_body(&trial.img, &mut block)
        .map_err(|e| TreeError::Buf(minnow_buf::BufError::Io(e)))?;
    Ok(match outcome {
        minnow_zip::Outcome::Fits { payload_len } if payload_len <= limit => {
            p.zip_seen = (used, payload_len);
            true
        }
        _ => false,
    })
}

/// Builds one B-tree bottom-up from records in ascending key order; see the module docs.
///
/// ```
/// use minnow_btree::BTree;
/// use minnow_btree::record::{Column, ColumnType, RecordLayout, Value};
/// use minnow_btree::tree::{BulkBuilder, BulkOptions};
/// use minnow_buf::{BufConfig, BufferPool};
/// use minnow_page::PageSize;
///
/// let dir = tempfile::tempdir()?;
/// let pool = BufferPool::create_scratch(dir.path(), BufConfig::with_frames(64, PageSize::K4), 1)?;
/// let layout = RecordLayout::clustered(
///     vec![Column::new(ColumnType::U64)],
///     vec![Column::new(ColumnType::Var(100))],
/// )?;
/// let mut b = BulkBuilder::new(&pool, 1, 42, layout.clone(), BulkOptions::default())?;
/// for k in 0..5000u64 {
///     b.push_values(&[Value::UInt(k), Value::trx_id(1), Value::roll_ptr(1 << 55),
///                     Value::Bytes(format!("row {k}").into_bytes())])?;
/// }
/// let (tree, _end) = b.finish()?;
/// let stats = tree.check(&pool)?;
/// assert_eq!((stats.records, stats.height), (5000, 2));
/// assert!(tree.get(&pool, &[Value::UInt(4321)])?.is_some());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct BulkBuilder<'p> {
    pool: &'p BufferPool,
    /// The empty tree the build fills: its root page receives the built top page, its
    /// segments give every page.
    target: BTree,
    space: u32,
    index_id: u64,
    leaf: RecordLayout,
    node: RecordLayout,
    fill: f64,
    /// `PAGE_MAX_TRX_ID` of every built leaf ([`BulkOptions::max_trx_id`]).
    max_trx_id: u64,
    /// The page under construction on each level, leaves first.
    levels: Vec<PageImage>,
    /// The last leaf record of the previous leaf (bytes, origin), for the order check.
    prev_last: Option<(Vec<u8>, usize)>,
    records: u64,
    pages: u64,
    end: Lsn,
    page_len: Option<usize>,
    /// The target's tablespace if it is compressed: pages are closed before they stop
    /// compressing into a block.
    zip: Option<std::sync::Arc<minnow_io::Tablespace>>,
}

impl std::fmt::Debug for BulkBuilder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BulkBuilder")
            .field("index_id", &self.index_id)
            .field("records", &self.records)
            .field("pages", &self.pages)
            .field("levels", &self.levels.len())
            .finish()
    }
}

impl<'p> BulkBuilder<'p> {
    /// A builder for a new tree of `index_id` in tablespace `space`: creates the (empty,
    /// unpublished) tree whose segments the build fills. A fill factor outside `(0, 1]` is
    /// [`TreeError::BadFillFactor`].
    pub fn new(
        pool: &'p BufferPool,
        space: u32,
        index_id: u64,
        layout: RecordLayout,
        options: BulkOptions,
    ) -> Result<BulkBuilder<'p>, TreeError> {
        let fill = options.fill_factor;
        if !(fill > 0.0 && fill <= 1.0) {
            return Err(TreeError::BadFillFactor { fill_factor: fill });
        }
        let node = layout.node_ptr();
        let (target, end) = BTree::create(pool, space, index_id, layout.clone())?;
        Ok(BulkBuilder {
            pool,
            target,
            space,
            index_id,
            leaf: layout,
            node,
            fill,
            max_trx_id: options.max_trx_id,
            levels: Vec::new(),
            prev_last: None,
            records: 0,
            pages: 0,
            end,
            page_len: None,
            zip: pool.spaces().get(space).filter(|s| s.zip().is_some()),
        })
    }

    /// The tree being built (unpublished until [`BulkBuilder::finish`] returns and the caller
    /// publishes it). A caller that gives up on a build frees it with [`BTree::free_all`].
    pub fn tree(&self) -> &BTree {
        &self.target
    }

    /// Records pushed so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Encodes and appends one leaf record ([`BulkBuilder::push`]), moving its long columns
    /// to overflow pages as an insert does (see "Long columns" in the module docs).
    pub fn push_values(&mut self, values: &[crate::record::Value]) -> Result<(), TreeError> {
        let page_len = self.page_len()?;
        // Most records stay whole: then `prepare` would choose nothing off-page either.
        if let Ok(rec) = self.leaf.encode(values)
            && rec.len() <= self.target.inline_max(page_len)
        {
            return self.push(&rec);
        }
        let p = self.target.prepare(self.pool, values)?;
        if p.is_inline() {
            return self.push(&p.rec);
        }
        // Checked before the chains are written, so a rejected record writes none.
        self.check_order(p.rec.as_bytes(), p.rec.extra())?;
        let mut mtr = self.pool.mtr_with_room(p.room())?;
        let rec = self.target.store_external(&mut mtr, &p)?;
        self.end = self.end.max(mtr.commit()?);
        self.push(&rec)
    }

    /// Appends one encoded leaf record, whose key must be larger than every key before it.
    /// Its fields are stored as they are: a record over half a page is
    /// [`NodeError::RecordTooBig`] ([`BulkBuilder::push_values`] moves long columns off-page).
    pub fn push(&mut self, rec: &RecordBuf) -> Result<(), TreeError> {
        self.push_bytes(rec.as_bytes(), rec.extra())
    }

    /// [`BulkBuilder::push`] for an encoded record given as its bytes (from its start) and
    /// the offset of its origin in them ([`RecordBuf::extra`]): a caller that keeps records
    /// in an arena of its own appends them without a copy.
    pub fn push_bytes(&mut self, bytes: &[u8], extra: usize) -> Result<(), TreeError> {
        let page_len = self.page_len()?;
        let max = node::max_record_len(page_len);
        if bytes.len() > max {
            return Err(NodeError::RecordTooBig {
                len: bytes.len(),
                max,
            }
            .into());
        }
        self.check_order(bytes, extra)?;
        self.add(0, bytes, extra)?;
        self.records += 1;
        Ok(())
    }

    /// Fails unless the key of the record `bytes` (origin at `extra`) is above the previous
    /// leaf record's.
    fn check_order(&self, bytes: &[u8], extra: usize) -> Result<(), TreeError> {
        let prev = match self.levels.first() {
            Some(p) if p.last != 0 => Some((p.img.as_slice(), p.last)),
            _ => self.prev_last.as_ref().map(|(b, o)| (b.as_slice(), *o)),
        };
        let Some((page, origin)) = prev else {
            return Ok(());
        };
        let ord = cmp_keys(&self.leaf, bytes, extra, page, origin)?;
        if ord == Ordering::Greater {
            return Ok(());
        }
        let key = self.leaf.key_of(bytes, extra)?;
        if ord == Ordering::Equal {
            return Err(TreeError::Duplicate {
                index_id: self.index_id,
                key,
            });
        }
        Err(TreeError::OutOfOrder {
            index_id: self.index_id,
            key,
            previous: self.leaf.key_of(page, origin)?,
        })
    }

    /// The page size, learnt from page 0 of the tablespace.
    fn page_len(&mut self) -> Result<usize, TreeError> {
        if let Some(n) = self.page_len {
            return Ok(n);
        }
        let g = self
            .pool
            .get_read(minnow_page::PageId::new(self.space, 0))?;
        let n = g.len();
        self.page_len = Some(n);
        Ok(n)
    }

    /// Allocates one page for `level` in its own mtr (the first page of a level).
    fn allocate_page(&mut self, level: u16) -> Result<u32, TreeError> {
        let mut mtr = self.pool.mtr()?;
        let h = self.target.alloc_page(&mut mtr, level, None)?;
        let no = mtr.page_id(h).map_or(NIL, |id| id.page_no);
        self.end = self.end.max(mtr.commit()?);
        Ok(no)
    }

    /// Appends a record to `level`, finishing that level's page first if it is full.
    fn add(&mut self, level: usize, bytes: &[u8], extra: usize) -> Result<(), TreeError> {
        let page_len = self.page_len()?;
        if self.levels.len() <= level {
            let no = self.allocate_page(level as u16)?;
            self.levels.push(PageImage::new(
                page_len,
                level as u16,
                no,
                NIL,
                self.index_id,
                self.max_trx_id,
            ));
        }
        let mut full = self
            .levels
            .get(level)
            .is_some_and(|p| !p.takes(bytes.len(), self.fill));
        if !full && let Some(space) = &self.zip {
            full = match self.levels.get_mut(level) {
                Some(p) => !zip_takes(space, p, bytes, extra)?,
                None => false,
            };
        }
        if full {
            self.finish_page(level, false)?;
        }
        let Some(p) = self.levels.get_mut(level) else {
            return Err(TreeError::Corrupt {
                page: minnow_page::PageId::new(self.space, NIL),
                what: format!("bulk build lost level {level}"),
            });
        };
        // A clustered leaf's PAGE_MAX_TRX_ID bounds its records' DB_TRX_IDs (see
        // `node::cover_trx_id`): each record raises its page's.
        if level == 0
            && let Some(t) = node::record_trx_id(bytes, &self.leaf, extra)?
        {
            node::raise_max_trx_id(&mut p.img, t.max(1))?;
        }
        // The first pointer of each upper level is the leftmost one: MIN_REC.
        let info = if level > 0 && p.prev == NIL && p.n_recs == 0 {
            INFO_MIN_REC
        } else {
            0
        };
        p.push(bytes, extra, info)
    }

    /// Writes `level`'s page (allocating its right sibling unless `last`), and passes its
    /// node pointer up. With `last`, the page is the level's rightmost.
    fn finish_page(&mut self, level: usize, last: bool) -> Result<(), TreeError> {
        let page_len = self.page_len()?;
        let (index_id, max_trx_id) = (self.index_id, self.max_trx_id);
        let mut mtr = self.pool.mtr()?;
        let hint = self.levels.get(level).map(|p| p.page_no + 1);
        let next = if last {
            NIL
        } else {
            let h = self.target.alloc_page(&mut mtr, level as u16, hint)?;
            mtr.page_id(h).map_or(NIL, |id| id.page_no)
        };
        let Some(p) = self.levels.get_mut(level) else {
            return Ok(());
        };
        let dir_start = p.seal()?;
        let id = minnow_page::PageId::new(self.space, p.page_no);
        let h = mtr.get_write(id)?;
        let mut links = [0u8; 8];
        links[..4].copy_from_slice(&p.prev.to_be_bytes());
        links[4..].copy_from_slice(&next.to_be_bytes());
        mtr.write(h, fil::PREV, &links)?;
        mtr.write(h, fil::PAGE_TYPE, &PageType::Index.to_u16().to_be_bytes())?;
        let head = p.img.get(PAGE_HEADER..p.heap_top).unwrap_or_default();
        mtr.write(h, PAGE_HEADER, head)?;
        let dir = p.img.get(dir_start..page_len - 8).unwrap_or_default();
        mtr.write(h, dir_start, dir)?;
        self.end = self.end.max(mtr.commit()?);
        self.pages += 1;
        let layout = if level == 0 { &self.leaf } else { &self.node };
        let ptr = node_ptr(layout, &self.node, &p.img, p.first, p.page_no)?;
        if level == 0 {
            let (x, d) = self.leaf.size_of(&p.img, p.last)?;
            let start = p.last - x;
            let copy = p.img.get(start..p.last + d).unwrap_or_default().to_vec();
            self.prev_last = Some((copy, x));
        }
        let (done_no, lvl) = (p.page_no, p.level);
        *p = PageImage::new(page_len, lvl, next, done_no, index_id, max_trx_id);
        self.add(level + 1, ptr.as_bytes(), ptr.extra())
    }

    /// Finishes every level and returns the tree (its root is the page [`BulkBuilder::new`]
    /// created, now holding the built top level) and the end LSN of the last mtr. Make that
    /// LSN durable before publishing the root; until the root is published, nothing reaches
    /// the tree. With no records the tree is one empty leaf.
    pub fn finish(mut self) -> Result<(BTree, Lsn), TreeError> {
        let tree = self.target.clone();
        if self.levels.is_empty() {
            return Ok((tree, self.end));
        }
        let mut level = 0;
        while level + 1 < self.levels.len() || self.levels.get(level).is_some_and(|p| p.prev != NIL)
        {
            self.finish_page(level, true)?;
            level += 1;
        }
        let page_len = self.page_len()?;
        let Some(p) = self.levels.get_mut(level) else {
            return Ok((tree, self.end));
        };
        // The top level's only page goes into the root page (which keeps its FSEG headers:
        // they lie in the page header bytes 74..94, rewritten below from the target's).
        let dir_start = p.seal()?;
        let mut mtr = self.pool.mtr()?;
        let h = mtr.get_write(tree.id(tree.root))?;
        mtr.memset(h, fil::PREV, 8, 0xFF)?;
        let head = p.img.get(PAGE_HEADER..p.heap_top).unwrap_or_default();
        mtr.write(h, PAGE_HEADER, head)?;
        mtr.memset(h, p.heap_top, dir_start - p.heap_top, 0)?;
        let dir = p.img.get(dir_start..page_len - 8).unwrap_or_default();
        mtr.write(h, dir_start, dir)?;
        tree.keep_seg_headers(&mut mtr, h)?;
        tree.free_page(&mut mtr, p.page_no, p.level)?;
        self.end = self.end.max(mtr.commit()?);
        self.pages += 1;
        Ok((tree, self.end))
    }
}

/// Compares the keys of two records (each given by its bytes and origin) field by field,
/// as searches order them: NULL first, then bytes.
fn cmp_keys(
    layout: &RecordLayout,
    a: &[u8],
    a_origin: usize,
    b: &[u8],
    b_origin: usize,
) -> Result<Ordering, TreeError> {
    let n = layout.n_key();
    for (fa, fb) in layout
        .walk(a, a_origin)
        .take(n)
        .zip(layout.walk(b, b_origin).take(n))
    {
        let ord = match (fa?, fb?) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (Some(x), Some(y)) => x.cmp(y),
        };
        if ord != Ordering::Equal {
            return Ok(ord);
        }
    }
    Ok(Ordering::Equal)
}

impl BTree {
    /// Builds a tree bottom-up from `records` (leaf records in strictly ascending key order)
    /// with [`BulkBuilder`]; see its docs for the crash-safety contract.
    pub fn bulk_build<I>(
        pool: &BufferPool,
        space: u32,
        index_id: u64,
        layout: RecordLayout,
        options: BulkOptions,
        records: I,
    ) -> Result<(BTree, Lsn), TreeError>
    where
        I: IntoIterator<Item = RecordBuf>,
    {
        let mut b = BulkBuilder::new(pool, space, index_id, layout, options)?;
        for rec in records {
            b.push(&rec)?;
        }
        b.finish()
    }
}
