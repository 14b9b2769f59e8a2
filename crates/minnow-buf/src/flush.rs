//! Writing dirty pages: the flush list, the WAL rule and checkpoints.
//!
//! ## Dirty pages and the flush list
//!
//! A mini-transaction changes pages in memory only. A changed (**dirty**) page remembers
//! `oldest_modification`, the start LSN of the first change not yet on disk, and joins its
//! instance's **flush list**, ordered by that LSN. Writing the pages at the head of that
//! order is what lets the checkpoint move:
//!
//! ```text
//!   log:  ...[checkpoint]=========== redo still needed ===========[current LSN]
//!                 ^ min oldest_modification over all flush lists
//!   checkpoint age = current LSN - checkpoint; the log is full when it reaches capacity
//! ```
//!
//! ## The WAL rule
//!
//! A page may reach its data file only after the redo of every change in it is durable:
//! otherwise a crash could leave a page containing a change whose redo is lost, which no
//! recovery can undo. The page's newest change is its FIL LSN, so before writing a batch the
//! flusher calls `log.write_up_to(max page LSN, sync)`.
//!
//! ## Writing a batch
//!
//! For each frame: try its latch shared (never wait: a page an mtr holds is skipped), mark it
//! FLUSHING (so two flushers never write the same page out of order and it cannot be evicted),
//! copy the bytes and remember the page LSN, unlatch. Then WAL, then the [`PageWriter`]
//! (doublewrite + in place, or directly in place) writes and syncs the copies. Finally each
//! page is marked clean if its LSN did not change meanwhile; otherwise it stays dirty with its
//! original `oldest_modification` and is written again later.
//!
//! ## Two batches in flight
//!
//! With the doublewrite buffer ([`PageWriter::doublewrite`]) a flush of more than one batch
//! keeps two in flight through the flusher's pair of segments
//! ([`minnow_dblwr::SegmentPair`]): while batch *n* is written in place and its data files
//! synced on a scoped thread (`minnow-dblwr-in-place`), this thread takes batch *n + 1*,
//! makes its redo durable and writes and syncs its copies to the other segment; then it
//! waits for batch *n*, marks its pages clean, and sends batch *n + 1* in place:
//!
//! ```text
//!   flusher:   take n, WAL, copies n | take n+1, WAL, copies n+1 | wait n, clean n | take n+2 ...
//!   in place:                        | in place n, data sync n    |                 | in place n+1 ...
//! ```
//!
//! The segment write and sync of one batch overlap the in-place writes and data syncs of the
//! one before (MariaDB's two doublewrite slots, `buf_dblwr_t::slots`, do the same). The
//! order each page needs is kept: its redo durable before its copy is written (WAL, per
//! batch, before its copies); its copy durable before it goes in place (the in-place step
//! takes what only a completed copy step returns); a segment reused only after its batch's
//! data syncs (the pair alternates, and a segment between the two steps refuses a batch);
//! a page marked clean, and so passed by the checkpoint, only after its data sync. A page
//! stays FLUSHING until then, so the next batch never holds it. The next flush call starts
//! with nothing in flight: its first copies wait for nothing.
//!
//! After flushing, `Shared::advance_checkpoint` moves the checkpoint to the smallest
//! `oldest_modification` left (or to the durable end of the log if nothing is dirty).
//!
//! A failed write or sync poisons the pool (see [`crate::BufError::Poisoned`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;

use minnow_io::AlignedBuf;
use minnow_page::PageId;
use minnow_redo::Lsn;

use crate::config::FlushNeighbors;
use crate::frame::FLUSHING;
use crate::pool::Shared;
use crate::stats::Counter;
use crate::{BufError, SpaceMap};

/// One page image handed to a [`PageWriter`]: a private copy, so the frame stays usable.
#[derive(Debug)]
pub struct PageImage<'a> {
    /// The page.
    pub id: PageId,
    /// Its LSN (newest modification) — redo is durable up to at least this.
    pub lsn: Lsn,
    /// The bytes (the writer stamps the checksum).
    pub data: &'a mut [u8],
    /// For a page of a compressed tablespace: its block as the zip cache holds it (compressed
    /// from these very bytes, header aside), which the writer gives the stamped header
    /// ([`minnow_io::Tablespace::block_for`]) instead of compressing again. `None`: compress.
    pub zip: Option<Vec<u8>>,
}

/// Writes batches of dirty page images durably in place. Implemented by the doublewrite
/// buffer (write the batch to its segment, sync, write in place, sync) and by
/// [`DirectWriter`] (in place, sync: torn pages are then detected, not repaired).
pub trait PageWriter: Send + Sync + std::fmt::Debug {
    /// Writes `pages` (at most `doublewrite_pages`, distinct) and syncs the data files.
    /// `segment` is the flusher's own doublewrite segment (`0..page_cleaners` for the page
    /// cleaners, `page_cleaners` for flushes done by user threads).
    fn write_batch(
        &self,
        segment: usize,
        pages: &mut [PageImage<'_>],
        spaces: &SpaceMap,
    ) -> Result<(), BufError>;

    /// The doublewrite buffer this writer is, if it is one (the default: none). The pool
    /// then writes its batches through the flusher's pair of segments with two batches in
    /// flight (see the module docs, "Two batches in flight") wherever the buffer has a pair
    /// ([`minnow_dblwr::Doublewrite::pair`]), and through [`PageWriter::write_batch`] where
    /// it has not.
    fn doublewrite(&self) -> Option<&minnow_dblwr::Doublewrite> {
        None
    }

    /// The doublewrite buffer's counters, for writers that are one (the default: none).
    fn doublewrite_stats(&self) -> Option<minnow_dblwr::StatsSnapshot> {
        None
    }

    /// Drops whatever copies the writer keeps of pages it wrote, once every one of them is
    /// durable in place and none will be needed again (after a clean shutdown's final flush
    /// and checkpoint): see [`crate::BufferPool::cut_space`]. A writer that keeps none (the
    /// default) has nothing to do.
    fn forget_copies(&self) -> Result<(), BufError> {
        Ok(())
    }
}

/// Writes pages straight to their tablespaces and syncs them (doublewrite off).
///
/// Like the doublewrite path's in-place step, a batch goes to each tablespace as one
/// submission in page order ([`minnow_io::Tablespace::write_pages`]): io_uring takes it in one
/// system call, the sync backend spreads it over its write threads. Then each touched file is
/// synced once. A power cut during the batch may tear any of its pages; without doublewrite
/// nothing can repair them, and recovery reports them (see `minnow_dblwr`'s crate docs).
#[derive(Debug, Default, Clone, Copy)]
pub struct DirectWriter;

impl PageWriter for DirectWriter {
    fn write_batch(
        &self,
        _segment: usize,
        pages: &mut [PageImage<'_>],
        spaces: &SpaceMap,
    ) -> Result<(), BufError> {
        let mut per_space: BTreeMap<u32, Vec<&mut PageImage<'_>>> = BTreeMap::new();
        for p in pages.iter_mut() {
            per_space.entry(p.id.space).or_default().push(p);
        }
        for (&space_id, batch) in &mut per_space {
            let space = spaces
                .get(space_id)
                .ok_or(BufError::UnknownSpace { space: space_id })?;
            let end = batch.iter().map(|p| p.id.page_no).max().unwrap_or(0);
            space.extend_to(end.saturating_add(1))?;
            if space.zip().is_some() {
                for p in batch.iter_mut() {
                    space
                        .write_page_with(p.id.page_no, p.data, p.zip.as_deref())
                        .map_err(|e| BufError::from_io(p.id, e))?;
                }
                continue;
            }
            batch.sort_unstable_by_key(|p| p.id.page_no);
            let mut writes: Vec<(u32, &mut [u8])> = batch
                .iter_mut()
                .map(|p| (p.id.page_no, &mut *p.data))
                .collect();
            space.write_pages(&mut writes)?;
        }
        for &s in per_space.keys() {
            if let Some(space) = spaces.get(s) {
                space.sync()?;
            }
        }
        Ok(())
    }
}

/// The doublewrite buffer as the pool's writer: each batch goes to the flusher's segment
/// (copies written and synced first, then the pages in place, then the data files synced).
/// Pages beyond the end of their file (new pages) extend it first.
impl PageWriter for minnow_dblwr::Doublewrite {
    fn write_batch(
        &self,
        segment: usize,
        pages: &mut [PageImage<'_>],
        spaces: &SpaceMap,
    ) -> Result<(), BufError> {
        extend_spaces(pages.iter().map(|p| p.id), spaces)?;
        let batch: Vec<(PageId, &[u8])> = pages.iter().map(|p| (p.id, &*p.data)).collect();
        let cached: Vec<Option<&[u8]>> = pages.iter().map(|p| p.zip.as_deref()).collect();
        self.flush_batch_cached(self.segment_for(segment), &batch, &cached, spaces)
            .map_err(|e| dblwr_error(e, pages.iter().map(|p| p.id)))
    }

    fn doublewrite(&self) -> Option<&minnow_dblwr::Doublewrite> {
        Some(self)
    }

    fn doublewrite_stats(&self) -> Option<minnow_dblwr::StatsSnapshot> {
        Some(self.stats().snapshot())
    }

    fn forget_copies(&self) -> Result<(), BufError> {
        Ok(self.forget()?)
    }
}

/// Extends each page's tablespace to hold it (new pages beyond the end of their file).
fn extend_spaces(ids: impl Iterator<Item = PageId>, spaces: &SpaceMap) -> Result<(), BufError> {
    for id in ids {
        let space = spaces
            .get(id.space)
            .ok_or(BufError::UnknownSpace { space: id.space })?;
        space.extend_to(id.page_no.saturating_add(1))?;
    }
    Ok(())
}

/// A doublewrite error as the pool reports it: a compressed page that does not fit its
/// block is named by its page id (one of `ids`).
fn dblwr_error(e: minnow_dblwr::DblwrError, mut ids: impl Iterator<Item = PageId>) -> BufError {
    match e {
        minnow_dblwr::DblwrError::Io(minnow_io::IoError::DoesNotFit {
            page_no,
            block,
            capacity,
            ..
        }) => BufError::CompressionFailure {
            page: ids
                .find(|id| id.page_no == page_no)
                .unwrap_or(PageId::new(0, page_no)),
            block,
            capacity,
        },
        other => other.into(),
    }
}

/// The pages of a batch: (frame, page id, LSN of the copy).
type TakenPages = Vec<(u32, PageId, Lsn)>;

/// A batch taken from the frames: the copies of its pages, which frames they came from with
/// their ids and LSNs, and the cached compressed block of each (pages of compressed
/// tablespaces). Every frame in `taken` is marked FLUSHING until [`Shared::finish_batch`].
struct Taken {
    buf: AlignedBuf,
    taken: TakenPages,
    blocks: Vec<Option<Vec<u8>>>,
}

/// Where a flush came from, for the statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    FlushList,
    Lru,
}

impl Shared {
    /// Writes the dirty pages among `frames` (in batches of `doublewrite_pages`), honouring
    /// the WAL rule; returns how many were written and marked clean.
    pub(crate) fn flush_frames(
        &self,
        frames: &[u32],
        segment: usize,
        source: Source,
    ) -> Result<usize, BufError> {
        if self.is_poisoned() {
            return Err(BufError::Poisoned);
        }
        if let Some(mut pair) = self.writer.doublewrite().and_then(|d| d.pair(segment)) {
            return self.flush_frames_paired(&mut pair, frames, source);
        }
        let mut cleaned = 0;
        for chunk in frames.chunks(self.cfg.doublewrite_pages) {
            let Some(mut batch) = self.take_batch(chunk) else {
                continue;
            };
            let result = self.write_images(segment, &mut batch);
            cleaned += self.finish_batch(&batch.taken, result.is_ok(), source);
            if let Err(e) = result {
                self.poison();
                return Err(e);
            }
        }
        Ok(cleaned)
    }

    /// [`Shared::flush_frames`] through a pair of doublewrite segments, two batches in
    /// flight: each batch's in-place writes and data syncs run on a scoped thread while this
    /// thread takes the next batch, makes its redo durable and writes and syncs its copies
    /// to the pair's other segment; only then does it wait for the previous batch, mark that
    /// batch's pages clean, and send the new one in place. See the module docs.
    fn flush_frames_paired(
        &self,
        pair: &mut minnow_dblwr::SegmentPair<'_>,
        frames: &[u32],
        source: Source,
    ) -> Result<usize, BufError> {
        let mut idle: Vec<minnow_dblwr::Half<'_>> = pair.halves().into_iter().rev().collect();
        std::thread::scope(|s| {
            let mut cleaned = 0;
            let mut failed: Option<BufError> = None;
            let mut in_flight: Option<(InPlace<'_, '_>, TakenPages)> = None;
            for chunk in frames.chunks(self.cfg.doublewrite_pages) {
                let Some(mut batch) = self.take_batch(chunk) else {
                    continue;
                };
                let Some(mut half) = idle.pop() else {
                    break;
                };
                let copied = self.write_copies(&mut half, &mut batch);
                if let Some((handle, taken)) = in_flight.take() {
                    let (back, result) = join_in_place(handle);
                    idle.push(back);
                    let result = result.map_err(|e| dblwr_error(e, taken.iter().map(|t| t.1)));
                    cleaned += self.finish_batch(&taken, result.is_ok(), source);
                    if let Err(e) = result {
                        failed.get_or_insert(e);
                    }
                }
                match copied {
                    Ok(copied) if failed.is_none() => {
                        let spawned = std::thread::Builder::new()
                            .name("minnow-dblwr-in-place".into())
                            .spawn_scoped(s, move || {
                                let r = half.write_in_place(copied);
                                (half, r)
                            });
                        match spawned {
                            Ok(handle) => in_flight = Some((handle, batch.taken)),
                            Err(e) => {
                                cleaned += self.finish_batch(&batch.taken, false, source);
                                failed.get_or_insert(BufError::Config {
                                    reason: format!("cannot start an in-place writer: {e}"),
                                });
                                break;
                            }
                        }
                    }
                    other => {
                        idle.push(half);
                        cleaned += self.finish_batch(&batch.taken, false, source);
                        if let Err(e) = other {
                            failed.get_or_insert(e);
                        }
                        break;
                    }
                }
            }
            if let Some((handle, taken)) = in_flight.take() {
                let (_, result) = join_in_place(handle);
                let result = result.map_err(|e| dblwr_error(e, taken.iter().map(|t| t.1)));
                cleaned += self.finish_batch(&taken, result.is_ok(), source);
                if let Err(e) = result {
                    failed.get_or_insert(e);
                }
            }
            match failed {
                Some(e) => {
                    self.poison();
                    Err(e)
                }
                None => Ok(cleaned),
            }
        })
    }

    /// Takes the dirty pages among `chunk`: for each frame whose latch can be had shared
    /// at once, that holds a dirty page and that no other flush has, marks it FLUSHING and
    /// copies it. `None` if no page was taken.
    fn take_batch(&self, chunk: &[u32]) -> Option<Taken> {
        let size = self.cfg.page_size;
        let page = size.bytes();
        let mut buf = AlignedBuf::pages(size, chunk.len());
        let mut taken: Vec<(u32, PageId, Lsn)> = Vec::with_capacity(chunk.len());
        let mut blocks: Vec<Option<Vec<u8>>> = Vec::with_capacity(chunk.len());
        for &f in chunk {
            let c = self.ctl(f);
            if !c.try_lock_s() {
                continue;
            }
            let dirty = c.oldest.load(Ordering::Acquire) != 0;
            if let (true, Some(id)) = (dirty, c.page())
                && c.pin.fetch_or(FLUSHING, Ordering::AcqRel) & FLUSHING == 0
            {
                let at = taken.len() * page;
                // SAFETY: the shared latch is held; the copy ends before unlock.
                let src = unsafe { self.frames.slice(f) };
                buf[at..at + page].copy_from_slice(src);
                let lsn = minnow_page::fil::page_lsn(src).unwrap_or(0);
                taken.push((f, id, Lsn(lsn)));
                // Under the same latch as the copy: the cached block is of these bytes.
                blocks.push(
                    self.spaces
                        .has_compressed()
                        .then(|| self.zip.get(self, id, false))
                        .flatten(),
                );
            }
            c.unlock_s();
        }
        (!taken.is_empty()).then_some(Taken { buf, taken, blocks })
    }

    /// After a batch's write: if it succeeded (`ok`), marks each page clean whose LSN did not
    /// change since its copy; clears every page's FLUSHING mark. Returns how many were
    /// marked clean.
    fn finish_batch(&self, taken: &[(u32, PageId, Lsn)], ok: bool, source: Source) -> usize {
        let mut cleaned = 0;
        for &(f, id, lsn) in taken {
            let c = self.ctl(f);
            if ok && c.try_lock_s() {
                // SAFETY: shared latch held for the read.
                let now = minnow_page::fil::page_lsn(unsafe { self.frames.slice(f) }).unwrap_or(0);
                if c.page() == Some(id) && now == lsn.0 && self.mark_clean(f) {
                    cleaned += 1;
                    let stats = &self.instances[self.instance_of_frame(f)].stats;
                    match source {
                        Source::FlushList => stats.bump(Counter::ListFlushed),
                        Source::Lru => stats.bump(Counter::LruFlushed),
                    }
                }
                c.unlock_s();
            }
            c.pin.fetch_and(!FLUSHING, Ordering::AcqRel);
        }
        cleaned
    }

    /// The WAL rule for a batch: the log durable up to its newest page LSN.
    fn wal(&self, taken: &[(u32, PageId, Lsn)]) -> Result<(), BufError> {
        let newest = taken.iter().map(|t| t.2).max().unwrap_or(Lsn(0));
        // During recovery no log is attached: every page LSN then comes from redo that is
        // already durable, so the WAL rule holds without a write.
        if let Some(log) = self.log.get() {
            log.write_up_to(newest, true)?;
        }
        Ok(())
    }

    /// The batch's page images, for a writer (counting the cached compressed blocks reused).
    fn images<'b>(&self, batch: &'b mut Taken) -> Vec<PageImage<'b>> {
        let page = self.cfg.page_size.bytes();
        let reused = batch.blocks.iter().filter(|b| b.is_some()).count();
        for _ in 0..reused {
            self.zip.count_write_from_cache();
        }
        let images: Vec<PageImage<'_>> = batch
            .buf
            .chunks_mut(page)
            .zip(&batch.taken)
            .zip(std::mem::take(&mut batch.blocks))
            .map(|((data, &(_, id, lsn)), zip)| PageImage { id, lsn, data, zip })
            .collect();
        crate::trace_event!("doublewrite_batch", pages = images.len());
        #[cfg(feature = "trace")]
        for p in &images {
            crate::trace_event!(
                "page_write",
                space = p.id.space,
                page = p.id.page_no,
                lsn = p.lsn.0
            );
        }
        images
    }

    /// WAL, then the writer.
    fn write_images(&self, segment: usize, batch: &mut Taken) -> Result<(), BufError> {
        self.wal(&batch.taken)?;
        let mut images = self.images(batch);
        self.writer.write_batch(segment, &mut images, &self.spaces)
    }

    /// WAL, then the batch's copies durable in `half`'s segment (steps 1 and 2 of the
    /// doublewrite protocol); the pages go in place later, through the same half.
    fn write_copies(
        &self,
        half: &mut minnow_dblwr::Half<'_>,
        batch: &mut Taken,
    ) -> Result<minnow_dblwr::CopiedBatch, BufError> {
        self.wal(&batch.taken)?;
        let images = self.images(batch);
        extend_spaces(images.iter().map(|p| p.id), &self.spaces)?;
        let pages: Vec<(PageId, &[u8])> = images.iter().map(|p| (p.id, &*p.data)).collect();
        let cached: Vec<Option<&[u8]>> = images.iter().map(|p| p.zip.as_deref()).collect();
        half.write_copies(&pages, &cached, &*self.spaces)
            .map_err(|e| dblwr_error(e, images.iter().map(|p| p.id)))
    }

    /// Marks frame `f` clean (caller holds a latch). True if it was dirty.
    fn mark_clean(&self, f: u32) -> bool {
        let inst = &self.instances[self.instance_of_frame(f)];
        let c = self.ctl(f);
        let mut fl = inst.flush.lock();
        let oldest = c.oldest.load(Ordering::Acquire);
        if oldest == 0 {
            return false;
        }
        fl.remove(&(oldest, f));
        c.oldest.store(0, Ordering::Release);
        inst.stats.dirty.fetch_sub(1, Ordering::Relaxed);
        true
    }

    /// Marks frame `f` (latched X by the caller) dirty since `start` if it was clean.
    ///
    /// A page already dirty is left as it is without taking the flush list's mutex: its
    /// `oldest` is cleared only by `mark_clean`, whose caller holds the frame's
    /// latch (shared), which the caller's exclusive latch excludes; so a nonzero `oldest`
    /// read here stays nonzero until the caller lets the page go, and the page stays on its
    /// flush list with an older start. Most changes are to pages already dirty (a leaf
    /// updated again, an undo page appended to), so most mtr commits take no flush list
    /// mutex, a line every writer of the instance would otherwise write.
    pub(crate) fn mark_dirty(&self, f: u32, start: Lsn) {
        let c = self.ctl(f);
        if c.oldest.load(Ordering::Acquire) != 0 {
            return;
        }
        let inst = &self.instances[self.instance_of_frame(f)];
        let mut fl = inst.flush.lock();
        if c.oldest.load(Ordering::Acquire) == 0 {
            c.oldest.store(start.0, Ordering::Release);
            fl.insert((start.0, f));
            inst.stats.dirty.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Flushes up to `max` pages from the head of instance `ii`'s flush list whose
    /// `oldest_modification` is below `limit` (all if `None`), plus their neighbours as
    /// `flush_neighbors` asks.
    pub(crate) fn flush_list_batch(
        &self,
        ii: usize,
        max: usize,
        limit: Option<u64>,
        segment: usize,
    ) -> Result<usize, BufError> {
        let inst = &self.instances[ii];
        let frames: Vec<u32> = inst
            .flush
            .lock()
            .iter()
            .take_while(|&&(lsn, _)| limit.is_none_or(|l| lsn < l))
            .take(max)
            .map(|&(_, f)| f)
            .collect();
        if frames.is_empty() {
            return Ok(0);
        }
        let frames = self.with_neighbors(frames);
        self.flush_frames(&frames, segment, Source::FlushList)
    }

    /// Adds the dirty neighbours of each frame's page within its extent.
    fn with_neighbors(&self, frames: Vec<u32>) -> Vec<u32> {
        let mode = self.cfg.flush_neighbors;
        if mode == FlushNeighbors::Off {
            return frames;
        }
        let extent = self.cfg.page_size.pages_per_extent();
        let mut out: Vec<u32> = Vec::with_capacity(frames.len());
        let mut seen: BTreeSet<u32> = frames.iter().copied().collect();
        for f in frames {
            out.push(f);
            let Some(id) = self.ctl(f).page() else {
                continue;
            };
            let first = id.page_no - id.page_no % extent;
            let last = first.saturating_add(extent - 1);
            let mut visit = |no: u32| -> bool {
                let n = PageId::new(id.space, no);
                match self.dirty_frame(n) {
                    Some(g) => {
                        if seen.insert(g) {
                            out.push(g);
                        }
                        true
                    }
                    None => false,
                }
            };
            match mode {
                FlushNeighbors::Extent => {
                    for no in first..=last {
                        if no != id.page_no {
                            visit(no);
                        }
                    }
                }
                FlushNeighbors::Contiguous => {
                    let mut no = id.page_no;
                    while no > first && visit(no - 1) {
                        no -= 1;
                    }
                    let mut no = id.page_no;
                    while no < last && visit(no + 1) {
                        no += 1;
                    }
                }
                FlushNeighbors::Off => {}
            }
        }
        out
    }

    /// The frame of `id` if it is cached and dirty.
    fn dirty_frame(&self, id: PageId) -> Option<u32> {
        let inst = &self.instances[self.instance_of(id)];
        let h = inst.hash.read();
        let l = h.lookup(id.to_u64(), |l| {
            self.ctl(inst.base + l).page_id.load(Ordering::Acquire)
        })?;
        let f = inst.base + l;
        (self.ctl(f).oldest.load(Ordering::Acquire) != 0).then_some(f)
    }

    /// Writes up to `max` dirty, unpinned pages from instance `ii`'s LRU tail, so they can
    /// be evicted. Uses the user-thread doublewrite segment.
    pub(crate) fn flush_lru_tail(&self, ii: usize, max: usize) -> Result<usize, BufError> {
        let inst = &self.instances[ii];
        let frames: Vec<u32> = {
            let lists = inst.lists.lock();
            lists
                .tail_first()
                .map(|l| inst.base + l)
                .filter(|&f| {
                    let c = self.ctl(f);
                    c.pin.load(Ordering::Acquire) == 0 && c.oldest.load(Ordering::Acquire) != 0
                })
                .take(max)
                .collect()
        };
        if frames.is_empty() {
            return Ok(0);
        }
        self.flush_frames(&frames, self.cfg.page_cleaners, Source::Lru)
    }

    /// The smallest `oldest_modification` over all instances.
    pub(crate) fn oldest_modification(&self) -> Option<u64> {
        self.instances
            .iter()
            .filter_map(|i| i.oldest_modification())
            .min()
    }

    /// Moves the checkpoint to the oldest modification still dirty, or to the durable end of
    /// the log if nothing is dirty. Returns the checkpoint LSN.
    pub(crate) fn advance_checkpoint(&self) -> Result<Lsn, BufError> {
        let log = self.log()?;
        let (oldest, current) = {
            let _gate = self.gate.write();
            (self.oldest_modification(), log.current_lsn())
        };
        let target = Lsn(oldest.unwrap_or(current.0)).min(log.flushed_lsn());
        if target > log.checkpoint_lsn() {
            if let Err(e) = log.checkpoint(target) {
                self.poison();
                return Err(e.into());
            }
            crate::trace_event!("checkpoint", lsn = target.0);
        }
        Ok(log.checkpoint_lsn())
    }

    /// Flushes every dirty page whose `oldest_modification` is below `limit` (all if
    /// `None`), in all instances; then advances the checkpoint if a log is attached. Pages
    /// latched by running mtrs are retried a bounded number of times.
    pub(crate) fn flush_until(&self, limit: Option<u64>, segment: usize) -> Result<(), BufError> {
        for _round in 0..1000 {
            let mut left = false;
            for ii in 0..self.instances.len() {
                self.flush_list_batch(ii, usize::MAX, limit, segment)?;
                let oldest = self.instances[ii].oldest_modification();
                left |= oldest.is_some_and(|o| limit.is_none_or(|l| o < l));
            }
            if !left {
                break;
            }
            std::thread::yield_now();
        }
        if self.log.get().is_some() {
            self.advance_checkpoint()?;
        }
        Ok(())
    }
}

/// A batch's in-place writes running on a scoped thread: it hands back its half and the
/// result.
type InPlace<'scope, 'h> = std::thread::ScopedJoinHandle<
    'scope,
    (minnow_dblwr::Half<'h>, Result<(), minnow_dblwr::DblwrError>),
>;

/// Waits for a batch's in-place writes; a panic there goes on in this thread.
fn join_in_place<'h>(
    handle: InPlace<'_, 'h>,
) -> (minnow_dblwr::Half<'h>, Result<(), minnow_dblwr::DblwrError>) {
    handle
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}
