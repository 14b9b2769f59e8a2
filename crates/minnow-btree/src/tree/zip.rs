//! B-trees in a compressed tablespace: compression failure, splits and padding.
//!
//! In a compressed tablespace every 16 KiB page is stored as a smaller block (1-8 KiB,
//! `KEY_BLOCK_SIZE`), so a page is "full" for two reasons: it has no room for the record (as
//! in any tree), or its body would no longer **compress into the block**. The second cannot be
//! known without compressing, so the buffer pool checks it when a mini-transaction commits
//! (`minnow_buf::BufError::CompressionFailure`, nothing changed) and the tree reacts the way
//! InnoDB does after `page_zip_compress` fails: it **splits the page** and tries the operation
//! again.
//!
//! ```text
//!   insert r into P ──commit──► P + r compresses?  yes ─► done
//!                                   │ no: compression failure (the mtr undoes the insert)
//!                                   ▼
//!   split P in two (one mtr, no record added; the separator goes to the parent, which may
//!   split too; the cut halves P's bytes, or moves only P's last record when inserts arrive
//!   in ascending order, so a sequential load leaves full pages behind; if what stays in P
//!   still does not compress, the split is made again at the half)
//!   ──► insert r again, now into a page with room that compresses
//! ```
//!
//! A failure costs a wasted compression and a split, so InnoDB avoids them by **padding**:
//! it counts compressions and failures per index in rounds of 128, and when a round's failure
//! rate is above `innodb_compression_failure_threshold_pct` (5 %) it makes pages of that index
//! "full" 128 bytes earlier, up to `innodb_compression_pad_pct_max` (50 %) of the page; after
//! 5 good rounds in a row it gives 128 bytes back. minnow keeps the same rule and numbers
//! ([`ZipPadConfig`]): the pad is subtracted from a page's room when the tree decides whether a
//! record fits without a split (`BTree::zip_room`), so a page of an index whose rows compress
//! badly is split by the ordinary path before it is full enough to fail.
//!
//! **Which page the retry splits.** The failure names the page that did not compress, but
//! that is not always a page the retry can split. When a pessimistic insert splits a page,
//! the new right page takes half of its records and maybe the new one, all in the same mtr;
//! if *that* page does not compress (the records that moved compress worse than those that
//! stayed), the dropped mtr gives it back to the allocator and it is an empty, free page
//! again. Splitting it is impossible, and retrying the insert repeats the same split. So the
//! commit of a path that may have split (`BTree::commit_splits`) names the page that was
//! split instead: the path page whose right sibling link points at the new page, or the root
//! when a root raise made the new page. The retry then splits the old page by itself (a
//! split that moves no new record), and the insert that follows finds a smaller page.
//!
//! **Other writers.** Between the failure and the retry's own mtr, other threads may split,
//! empty or merge away the page that failed (two writers that fail on one page both split
//! it, the second finding one record left). Finding nothing to split on the page as it is
//! now therefore does not end the operation: it is tried again, and the retry gives up only
//! when the operation fails on the same page twice with the page's LSN unchanged in between
//! (nobody changed it, so nothing will change the outcome).
//!
//! Two more limits keep a single record from defeating the split: a record longer than about
//! half of what a block holds has its long columns moved to overflow pages (InnoDB's
//! `page_zip_rec_needs_ext`), and an overflow page of a compressed tree carries at most a
//! block's worth of the column (so it fits even when the column does not compress). A record
//! that still cannot be made to fit is a typed error, never a loop: at most
//! [`MAX_ZIP_RETRIES`] splits are tried for one operation.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use minnow_buf::{BufError, BufferPool, Mtr};
use minnow_page::{PageId, PageType, fil};
use minnow_redo::Lsn;

use super::descend::{Intent, Level};
use super::{BTree, TreeError};
use crate::node::{self, Cursor};

/// Splits tried for one operation before it fails with [`TreeError::DoesNotCompress`].
pub const MAX_ZIP_RETRIES: usize = 12;
/// Compressions per padding round (InnoDB's `ZIP_PAD_ROUND_LEN`).
const ROUND: u32 = 128;
/// Padding step in bytes (InnoDB's `ZIP_PAD_INCR`).
const PAD_STEP: usize = 128;
/// Good rounds in a row before the padding shrinks (InnoDB's `ZIP_PAD_SUCCESSFUL_ROUND_LIMIT`).
const GOOD_ROUNDS: u32 = 5;
/// Payload bytes of a block kept out of reach of records and overflow parts: the block's
/// headers aside, the FIL trailer, and what a page of a few records and a directory costs on
/// top of its records when compressed.
const BLOCK_OVERHEAD: usize = 256;

/// The padding rule's two knobs, InnoDB's names and defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZipPadConfig {
    /// `innodb_compression_failure_threshold_pct`: a round with more failures (per cent of
    /// compressions) than this adds padding; 0 turns padding off.
    pub failure_threshold_pct: u8,
    /// `innodb_compression_pad_pct_max`: the most padding, in per cent of the page (0-75).
    pub pad_pct_max: u8,
}

impl Default for ZipPadConfig {
    fn default() -> Self {
        ZipPadConfig {
            failure_threshold_pct: 5,
            pad_pct_max: 50,
        }
    }
}

/// What compression did to one index, for status reports (InnoDB's
/// `INFORMATION_SCHEMA.INNODB_CMP_PER_INDEX`, plus the padding).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ZipIndexStats {
    /// Operations on the index's pages whose mini-transaction had to compress (successes and
    /// failures).
    pub ops: u64,
    /// Compression failures (each followed by a split and a retry).
    pub failures: u64,
    /// Splits made because a page did not compress.
    pub zip_splits: u64,
    /// The current padding in bytes.
    pub pad_bytes: usize,
}

/// The compression state shared by every handle of one tree.
#[derive(Debug)]
pub(crate) struct ZipState {
    /// Payload bytes one block holds.
    capacity: usize,
    page_len: usize,
    threshold_pct: AtomicU32,
    pad_max_pct: AtomicU32,
    pad: AtomicUsize,
    round_ops: AtomicU32,
    round_failures: AtomicU32,
    good_rounds: AtomicU32,
    ops: AtomicU64,
    failures: AtomicU64,
    zip_splits: AtomicU64,
}

impl ZipState {
    /// The state for a tree in `space`, or `None` if the space is not compressed.
    pub(crate) fn for_space(pool: &BufferPool, space: u32) -> Option<Arc<ZipState>> {
        let ts = pool.spaces().get(space)?;
        let zip = ts.zip()?;
        let cfg = ZipPadConfig::default();
        Some(Arc::new(ZipState {
            capacity: minnow_zip::format::capacity(zip.block_size),
            page_len: ts.page_size().bytes(),
            threshold_pct: AtomicU32::new(u32::from(cfg.failure_threshold_pct)),
            pad_max_pct: AtomicU32::new(u32::from(cfg.pad_pct_max)),
            pad: AtomicUsize::new(0),
            round_ops: AtomicU32::new(0),
            round_failures: AtomicU32::new(0),
            good_rounds: AtomicU32::new(0),
            ops: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            zip_splits: AtomicU64::new(0),
        }))
    }

    /// The current padding in bytes.
    pub(crate) fn pad(&self) -> usize {
        self.pad.load(Ordering::Relaxed)
    }

    /// Sets the padding, as another thread's failure rate would.
    #[cfg(test)]
    pub(crate) fn set_pad(&self, pad: usize) {
        self.pad.store(pad, Ordering::Relaxed);
    }

    /// The longest record kept on the page: about half of what a block holds, so two records
    /// of any content and a page's overhead still compress into it.
    pub(crate) fn max_record_len(&self) -> usize {
        self.capacity.saturating_sub(BLOCK_OVERHEAD) / 2
    }

    /// The most bytes of a column one overflow page of this tree carries: what a block holds
    /// even if the bytes do not compress at all.
    pub(crate) fn overflow_part(&self) -> usize {
        self.capacity.saturating_sub(BLOCK_OVERHEAD)
    }

    /// Counts one operation that compressed (`failed`: it did not fit) and runs InnoDB's
    /// padding rule at the end of each round.
    fn record(&self, failed: bool) {
        self.ops.fetch_add(1, Ordering::Relaxed);
        if failed {
            self.failures.fetch_add(1, Ordering::Relaxed);
            self.round_failures.fetch_add(1, Ordering::Relaxed);
        }
        let n = self.round_ops.fetch_add(1, Ordering::Relaxed) + 1;
        if n < ROUND {
            return;
        }
        // One thread closes the round; the others' counts land in the next one.
        if self
            .round_ops
            .compare_exchange(n, 0, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        let fails = self.round_failures.swap(0, Ordering::Relaxed);
        let threshold = self.threshold_pct.load(Ordering::Relaxed);
        let max = self.page_len * self.pad_max_pct.load(Ordering::Relaxed) as usize / 100;
        let pad = self.pad();
        if threshold > 0 && fails * 100 > threshold * n {
            self.good_rounds.store(0, Ordering::Relaxed);
            if pad + PAD_STEP <= max {
                self.pad.store(pad + PAD_STEP, Ordering::Relaxed);
            }
        } else if self.good_rounds.fetch_add(1, Ordering::Relaxed) + 1 >= GOOD_ROUNDS {
            self.good_rounds.store(0, Ordering::Relaxed);
            self.pad
                .store(pad.saturating_sub(PAD_STEP), Ordering::Relaxed);
        }
    }

    fn stats(&self) -> ZipIndexStats {
        ZipIndexStats {
            ops: self.ops.load(Ordering::Relaxed),
            failures: self.failures.load(Ordering::Relaxed),
            zip_splits: self.zip_splits.load(Ordering::Relaxed),
            pad_bytes: self.pad(),
        }
    }
}

impl BTree {
    /// True if the tree lives in a compressed tablespace.
    pub fn is_compressed(&self) -> bool {
        self.zip.is_some()
    }

    /// The compression counters and padding of this index; `None` if it is not compressed.
    pub fn zip_stats(&self) -> Option<ZipIndexStats> {
        self.zip.as_ref().map(|z| z.stats())
    }

    /// Sets the padding rule's knobs (see the module docs); no effect on an uncompressed tree.
    /// The pad shrinks to the new maximum at once.
    pub fn set_zip_pad(&self, cfg: ZipPadConfig) {
        if let Some(z) = &self.zip {
            let pct = cfg.pad_pct_max.min(75);
            z.threshold_pct
                .store(u32::from(cfg.failure_threshold_pct), Ordering::Relaxed);
            z.pad_max_pct.store(u32::from(pct), Ordering::Relaxed);
            let max = z.page_len * usize::from(pct) / 100;
            z.pad.fetch_min(max, Ordering::Relaxed);
        }
    }

    /// True unless padding says `page` is too full for `len` more bytes (the page may still
    /// have room: the pad keeps it free so that the page keeps compressing).
    pub(crate) fn zip_room(&self, page: &[u8], len: usize) -> Result<bool, TreeError> {
        let pad = self.zip.as_ref().map_or(0, |z| z.pad());
        if pad == 0 {
            return Ok(true);
        }
        let used = node::used_bytes(page)?;
        Ok(used + len + pad <= super::page::capacity(page.len()))
    }

    /// The page length a split must fit both halves into: the page less the padding.
    pub(crate) fn split_len(&self, page_len: usize) -> usize {
        let pad = self.zip.as_ref().map_or(0, |z| z.pad());
        page_len.saturating_sub(pad).max(page_len / 4)
    }

    /// Runs `op` (one whole operation: its own mtrs, latches released when it returns); on a
    /// compression failure splits the page that did not fit and runs it again. Uncompressed
    /// trees run `op` once.
    pub(crate) fn zip_retry<T>(
        &self,
        pool: &BufferPool,
        mut op: impl FnMut() -> Result<T, TreeError>,
    ) -> Result<T, TreeError> {
        let Some(z) = self.zip.clone() else {
            return op();
        };
        let mut last = None;
        // The page that nothing could be done for, and its LSN then (see the module docs).
        let mut stuck = None;
        for _ in 0..MAX_ZIP_RETRIES {
            match op() {
                Err(TreeError::Buf(BufError::CompressionFailure { page, block, .. })) => {
                    z.record(true);
                    last = Some((page, block));
                    // InnoDB's order: reorganize (deleted records' bytes become zeros), and
                    // split only if the page still does not compress.
                    if self.reorganize_for_zip(pool, page)?
                        || self.split_for_zip(pool, page, 0, Cut::Planned)?
                        || self.split_for_zip(pool, page, 0, Cut::Halve)?
                    {
                        stuck = None;
                        continue;
                    }
                    // Nothing to do on the page as it is now; but other writers may have
                    // changed it since the operation failed on it. Give up only when the
                    // operation failed on it twice with the page unchanged in between.
                    let lsn = pool
                        .get_read(page)
                        .ok()
                        .and_then(|g| fil::page_lsn(&g).ok());
                    if page.space != self.space || stuck == Some((page, lsn)) {
                        break;
                    }
                    stuck = Some((page, lsn));
                }
                other => {
                    if other.is_ok() {
                        z.record(false);
                    }
                    return other;
                }
            }
        }
        let (page, block) = last.unwrap_or((self.id(self.root), 0));
        Err(TreeError::DoesNotCompress {
            index_id: self.index_id,
            page,
            block,
        })
    }

    /// Reorganizes index page `page` of this tree in its own mtr if it holds deleted records'
    /// bytes (garbage): the rebuilt page has zeros there, which compress to nothing. True if
    /// it did (try the operation again); false if there was nothing to gain or the
    /// reorganized page still does not compress.
    fn reorganize_for_zip(&self, pool: &BufferPool, page: PageId) -> Result<bool, TreeError> {
        if page.space != self.space {
            return Ok(false);
        }
        let mut mtr = pool.mtr()?;
        let h = mtr.get_write(page)?;
        let p = mtr.page(h);
        let ours = fil::page_type(p).ok() == Some(PageType::Index)
            && node::index_id(p).ok() == Some(self.index_id);
        if !ours {
            return Ok(false);
        }
        if node::garbage(p)? == 0 {
            return Ok(false);
        }
        let layout = self.layout_at(node::level(p)?);
        node::reorganize(&mut (&mut mtr, h), layout)?;
        match mtr.commit() {
            Ok(_) => Ok(true),
            Err(BufError::CompressionFailure { .. }) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Splits index page `page` of this tree in two, where `cut` says, in one mtr, adding no
    /// record; the separator goes to the parent (which splits too if full). False if the page
    /// cannot be split (not an index page of this tree, fewer than two records, or the halves
    /// still do not compress); true if it was split or changed meanwhile (try again).
    fn split_for_zip(
        &self,
        pool: &BufferPool,
        page: PageId,
        depth: u32,
        cut: Cut,
    ) -> Result<bool, TreeError> {
        if page.space != self.space || depth > 3 {
            return Ok(false);
        }
        let (level, key) = {
            let g = pool.get_read(page)?;
            let ours = fil::page_type(&g).ok() == Some(PageType::Index)
                && node::index_id(&g).ok() == Some(self.index_id);
            if !ours || node::n_recs(&g)? < 2 {
                return Ok(false);
            }
            let level = node::level(&g)?;
            let first = node::next(&g, Cursor::INFIMUM)?;
            if !first.is_user() {
                return Ok(false);
            }
            (level, self.layout_at(level).key_of(&g, first.origin())?)
        };
        let mut mtr = pool.mtr()?;
        let path = self.latch_path(&mut mtr, &key, Intent::Keep)?;
        let Some(i) = path.iter().position(|l| l.level == level) else {
            return Ok(true);
        };
        if path.get(i).map(|l| l.page.no) != Some(page.page_no) {
            return Ok(true);
        }
        if !self.split_only(&mut mtr, &path, i, cut)? {
            return Ok(false);
        }
        match self.commit_splits(mtr, &path) {
            Ok(_) => {
                if let Some(z) = &self.zip {
                    z.zip_splits.fetch_add(1, Ordering::Relaxed);
                }
                Ok(true)
            }
            // A half, or the parent taking the separator, does not fit: split that first.
            Err(BufError::CompressionFailure { page: other, .. }) if other != page => {
                self.split_for_zip(pool, other, depth + 1, Cut::Planned)
            }
            Err(BufError::CompressionFailure { .. }) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Commits `mtr`, which latched `path` and may have split its pages. If a page the mtr
    /// allocated for a split (or a root raise) does not compress, the error names the page
    /// that was split instead: the rollback gave the new page back to the allocator, so it
    /// is nothing that the compression retry could reorganize or split (see the module
    /// docs).
    pub(crate) fn commit_splits(&self, mtr: Mtr<'_>, path: &[Level]) -> Result<Lsn, BufError> {
        if self.zip.is_none() {
            return mtr.commit();
        }
        // Pages the path latched; any other index page the mtr changed is a new one.
        let mut known = Vec::new();
        // (new page, the path page it was split from): a split links its new page as the
        // right sibling of the page it splits.
        let mut sources = Vec::new();
        let mut raised = None;
        for lvl in path {
            let latched = [Some(lvl.page), lvl.left, lvl.right, lvl.right2];
            known.extend(latched.iter().flatten().map(|l| l.no));
            let page = mtr.page(lvl.page.h);
            if let Ok(n) = super::page::next(page)
                && n != super::page::NIL
                && Some(n) != lvl.right.map(|r| r.no)
            {
                sources.push((n, lvl.page.no));
            }
            // A raised root: its records went to a new child, which may have split too.
            if lvl.page.no == self.root && node::level(page).ok() != Some(lvl.level) {
                raised = Some(lvl.page.no);
            }
        }
        match mtr.commit() {
            Err(BufError::CompressionFailure {
                page,
                block,
                capacity,
            }) if page.space == self.space && !known.contains(&page.page_no) => {
                let source = sources
                    .iter()
                    .find(|(new, _)| *new == page.page_no)
                    .map(|(_, from)| *from)
                    .or(raised);
                Err(BufError::CompressionFailure {
                    page: source.map_or(page, |no| self.id(no)),
                    block,
                    capacity,
                })
            }
            other => other,
        }
    }

    /// Splits path page `i` where `cut` says; no record is added.
    fn split_only(
        &self,
        mtr: &mut Mtr<'_>,
        path: &[Level],
        i: usize,
        cut: Cut,
    ) -> Result<bool, TreeError> {
        let Some(lvl) = path.get(i) else {
            return Err(self.corrupt_path());
        };
        let layout = self.layout_at(lvl.level);
        let page = mtr.page(lvl.page.h);
        let mut sizes = Vec::new();
        for c in node::records(page) {
            let c = c?;
            let (x, d) = layout.size_of(page, c.origin())?;
            sizes.push((c, x + d));
        }
        if sizes.len() < 2 {
            return Ok(false);
        }
        let at = zip_cut(page, &sizes, cut)?;
        let Some(&(first_moved, _)) = sizes.get(at) else {
            return Ok(false);
        };
        if i == 0 {
            let child = self.root_raise(mtr, lvl.page, lvl.level)?;
            // The root's records moved to the child in the same order: find the cut again.
            let c_page = mtr.page(child.h);
            let Some(cut) = node::records(c_page).nth(at) else {
                return Ok(false);
            };
            let (m, m_no) = self.split_off(mtr, child, None, lvl.level, cut?)?;
            let sep = self.first_ptr(mtr, m, m_no, lvl.level)?;
            node::insert(&mut (&mut *mtr, lvl.page.h), &self.node, &sep)?;
        } else {
            let (m, m_no) = self.split_off(mtr, lvl.page, lvl.right, lvl.level, first_moved)?;
            let sep = self.first_ptr(mtr, m, m_no, lvl.level)?;
            self.insert_into(mtr, path, i - 1, &sep)?;
        }
        Ok(true)
    }
}

/// Where a split for compression cuts a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    /// At the insert point for sequential inserts, else in the middle ([`zip_cut`]).
    Planned,
    /// In the middle by bytes, whatever the inserts did: the fallback when a cut at the insert
    /// point leaves the kept half still too large for its block. Moving a single record
    /// frees little, and the split rebuilds the page (its directory groups included), so a
    /// page that compressed with just a few bytes to spare can come out no smaller.
    Halve,
}

/// Where a page split for compression cuts (the index of the first record that moves right).
/// With [`Cut::Planned`], inserts arriving in ascending order at the page's end (InnoDB's
/// `PAGE_DIRECTION` right) move only the last record, so the left page stays full and the
/// next inserts fill the new one, as an ordinary split does for sequential loads; descending
/// inserts at the start keep only the first record; otherwise (and always with
/// [`Cut::Halve`]) the cut halves the page's bytes.
fn zip_cut(page: &[u8], sizes: &[(Cursor, usize)], cut: Cut) -> Result<usize, TreeError> {
    let n = sizes.len();
    let h = node::Hdr::read(page)?;
    let last_insert = usize::from(h.last_insert);
    let sequential = cut == Cut::Planned && h.n_direction >= 3;
    if sequential
        && h.direction == node::DIR_RIGHT
        && sizes.last().map(|(c, _)| c.origin()) == Some(last_insert)
    {
        return Ok(n - 1);
    }
    if sequential
        && h.direction == node::DIR_LEFT
        && sizes.first().map(|(c, _)| c.origin()) == Some(last_insert)
    {
        return Ok(1);
    }
    let total: usize = sizes.iter().map(|(_, l)| l).sum();
    let mut acc = 0;
    let mut at = n - 1;
    for (k, (_, l)) in sizes.iter().enumerate() {
        if k > 0 && 2 * acc >= total {
            at = k;
            break;
        }
        acc += l;
    }
    Ok(at.clamp(1, n - 1))
}
