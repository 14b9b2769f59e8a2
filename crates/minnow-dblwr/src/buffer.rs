//! The running doublewrite buffer: segments, batches, counters.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use minnow_io::{AlignedBuf, Backend, FileIo, FlushMethod, IoError, IoOp, IoRequest, OpenOptions};
use minnow_io::{Tablespace, file::SECTOR};
use minnow_page::{PageId, PageSize, bytes, checksum, fil};

use crate::batch_buf::BatchBuf;
use crate::format::{self, SegmentHeader, SlotEntry};
use crate::stats::{DoublewriteStats, add, lap};
use crate::{DblwrError, DoublewriteMode, SpaceResolver};

/// The path of segment `segment`'s file in `dir`: `dir/dblwr.<segment>`.
pub fn segment_path(dir: &Path, segment: usize) -> PathBuf {
    dir.join(format!("dblwr.{segment}"))
}

/// How the doublewrite buffer is set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DoublewriteConfig {
    /// `innodb_doublewrite`.
    pub mode: DoublewriteMode,
    /// Number of segments (one per buffer pool instance or page cleaner), at least 1.
    pub segments: usize,
    /// Pages per batch per segment (`innodb_doublewrite_pages`), 1..=[`format::MAX_CAPACITY`].
    pub pages_per_batch: usize,
    /// The page size of every tablespace written through this buffer (`innodb_page_size`).
    pub page_size: PageSize,
    /// How the segment files are opened (`innodb_flush_method`).
    pub flush_method: FlushMethod,
    /// Place each segment's page slots in transparent huge pages where they fill whole 2 MiB
    /// ones (with the defaults: exactly one per segment), so that `O_DIRECT` writes from them
    /// reach the disk as a few large pieces rather than hundreds of 4 KiB ones (see the crate
    /// docs, "Where the time goes"). On by default; off keeps ordinary pages.
    pub huge_pages: bool,
}

impl DoublewriteConfig {
    /// The default batch size: 128 pages, as MySQL 8.4's `innodb_doublewrite_pages`.
    pub const DEFAULT_PAGES_PER_BATCH: usize = 128;

    /// `segments` segments in `mode` for pages of `page_size`, with the default batch size,
    /// buffered IO (`fsync`) and huge pages for the batch buffers.
    pub const fn new(
        mode: DoublewriteMode,
        segments: usize,
        page_size: PageSize,
    ) -> DoublewriteConfig {
        DoublewriteConfig {
            mode,
            segments,
            pages_per_batch: Self::DEFAULT_PAGES_PER_BATCH,
            page_size,
            flush_method: FlushMethod::Fsync,
            huge_pages: true,
        }
    }

    /// The same configuration with `pages_per_batch` pages per batch.
    pub const fn pages_per_batch(self, pages_per_batch: usize) -> DoublewriteConfig {
        DoublewriteConfig {
            pages_per_batch,
            ..self
        }
    }

    /// The same configuration with segment files opened with `flush_method`.
    pub const fn flush_method(self, flush_method: FlushMethod) -> DoublewriteConfig {
        DoublewriteConfig {
            flush_method,
            ..self
        }
    }

    /// The same configuration with huge pages for the batch buffers on or off.
    pub const fn huge_pages(self, huge_pages: bool) -> DoublewriteConfig {
        DoublewriteConfig { huge_pages, ..self }
    }

    /// Checks the ranges: at least one segment, 1..=[`format::MAX_CAPACITY`] pages per batch.
    pub fn validate(&self) -> Result<(), DblwrError> {
        if self.segments == 0 {
            return Err(config("at least one segment is needed"));
        }
        if self.pages_per_batch == 0 || self.pages_per_batch > format::MAX_CAPACITY {
            return Err(config(&format!(
                "doublewrite_pages {} is outside 1..={}",
                self.pages_per_batch,
                format::MAX_CAPACITY
            )));
        }
        Ok(())
    }
}

impl Default for DoublewriteConfig {
    /// Mode on, one segment, 128 pages per batch, 16 KiB pages, `fsync`, huge pages.
    fn default() -> Self {
        DoublewriteConfig::new(DoublewriteMode::On, 1, PageSize::K16)
    }
}

fn config(reason: &str) -> DblwrError {
    DblwrError::Config {
        reason: reason.to_string(),
    }
}

/// One segment: its file, its batch buffer, its state. Used by one flusher at a time.
#[derive(Debug)]
pub(crate) struct Segment {
    pub(crate) index: usize,
    /// The segment file, or the data directory in mode off (for error messages).
    path: PathBuf,
    /// `None` in mode off.
    file: Option<Arc<dyn FileIo>>,
    /// Header block followed by `capacity` page slots: the bytes of one batch.
    buf: BatchBuf,
    /// Sequence number of the last batch written.
    sequence: u64,
    /// A batch failed after its copies became durable: refuse further batches.
    poisoned: bool,
}

/// The doublewrite buffer: `segments` independent segments, each with its own file and mutex.
///
/// Open it with [`Doublewrite::open`] after [`crate::recover`] has run; page cleaners then call
/// [`Doublewrite::flush_batch`] with their segment's index.
#[derive(Debug)]
pub struct Doublewrite {
    config: DoublewriteConfig,
    dir: PathBuf,
    pub(crate) segments: Vec<Mutex<Segment>>,
    stats: DoublewriteStats,
}

impl Doublewrite {
    /// Opens (creating where needed) the segment files `dir/dblwr.0` ..
    /// `dir/dblwr.<segments-1>` through `backend`. A file that already has a valid header of
    /// the same geometry (page size, capacity, mode) is kept, and its batch sequence continues;
    /// any other file is reinitialised: written in full (an empty header, count 0, and zeroed
    /// slots, so that no batch later writes into unwritten preallocated extents) and synced, as
    /// is the directory. In mode off no file is opened or touched.
    ///
    /// Run [`crate::recover`] first: reinitialising, or the next batch, overwrites what the
    /// last run left in the segments.
    pub fn open(
        backend: &dyn Backend,
        dir: &Path,
        config: DoublewriteConfig,
    ) -> Result<Doublewrite, DblwrError> {
        config.validate()?;
        let capacity = config.pages_per_batch;
        let buf_len = format::file_len(config.page_size, capacity, true);
        let buf_len = usize::try_from(buf_len).map_err(|_| config_too_big())?;
        let header_block = format::header_block_len(config.page_size, capacity);
        let mut segments = Vec::with_capacity(config.segments);
        let mut created = false;
        for index in 0..config.segments {
            let buf = BatchBuf::new(buf_len, header_block, config.huge_pages)?;
            let mut segment = Segment {
                index,
                path: dir.to_path_buf(),
                file: None,
                buf,
                sequence: 0,
                poisoned: false,
            };
            if config.mode.uses_files() {
                let path = segment_path(dir, index);
                let file =
                    backend.open(&path, &OpenOptions::new(config.flush_method).create(true))?;
                created |= file.is_empty()?;
                segment.sequence = prepare_file(&*file, &mut segment.buf, &config, index)?;
                segment.path = path;
                segment.file = Some(file);
            }
            segments.push(Mutex::new(segment));
        }
        if created {
            sync_dir(dir)?;
        }
        Ok(Doublewrite {
            config,
            dir: dir.to_path_buf(),
            segments,
            stats: DoublewriteStats::default(),
        })
    }

    /// The header of segment `seg`'s next batch, naming `entries`.
    fn next_header(&self, seg: &Segment, entries: Vec<SlotEntry>) -> SegmentHeader {
        SegmentHeader {
            page_size: self.config.page_size,
            capacity: self.config.pages_per_batch,
            copies: self.config.mode.writes_copies(),
            segment: u32::try_from(seg.index).unwrap_or(u32::MAX),
            sequence: seg.sequence + 1,
            entries,
        }
    }

    /// Empties every segment: writes a header with no entries (the next sequence number)
    /// and syncs it, so that [`crate::recover`] finds no copy to write back. Only for when
    /// every page of every batch is durable in place and no copy is needed any more: after a
    /// clean shutdown's final flush and checkpoint, before a tablespace is cut shorter (a
    /// copy of a page beyond a file's new end would be written back at the next start and
    /// grow the file again). A power cut while it runs leaves each header old or new, either
    /// valid, or torn, which recovery ignores. A poisoned segment (a failed batch) is an
    /// error, and the segments after it are left as they are.
    pub fn forget(&self) -> Result<(), DblwrError> {
        let page_size = self.config.page_size;
        let capacity = self.config.pages_per_batch;
        let header_block = format::header_block_len(page_size, capacity);
        for slot in &self.segments {
            let mut guard = lock(slot);
            let seg = &mut *guard;
            if seg.poisoned {
                return Err(DblwrError::Poisoned {
                    segment: seg.index,
                    path: seg.path.clone(),
                });
            }
            let Some(file) = seg.file.clone() else {
                continue;
            };
            let header = self.next_header(seg, Vec::new());
            let block = seg.buf.get_mut(..header_block).ok_or_else(config_too_big)?;
            header
                .encode(block)
                .map_err(|e| bad_segment(&seg.path, seg.index, &e.to_string()))?;
            file.write_at(block, 0)?;
            file.sync_data()?;
            seg.sequence += 1;
        }
        Ok(())
    }

    /// The configuration.
    pub fn config(&self) -> &DoublewriteConfig {
        &self.config
    }

    /// The mode.
    pub fn mode(&self) -> DoublewriteMode {
        self.config.mode
    }

    /// The number of segments.
    pub fn segments(&self) -> usize {
        self.segments.len()
    }

    /// The most pages one batch holds (`doublewrite_pages`); larger slices given to
    /// [`Doublewrite::flush_batch`] run as several batches.
    pub fn pages_per_batch(&self) -> usize {
        self.config.pages_per_batch
    }

    /// The segment a flusher with index `flusher` (a buffer pool instance, a page cleaner
    /// thread) should use: `flusher % segments`.
    pub fn segment_for(&self, flusher: usize) -> usize {
        flusher % self.segments.len().max(1)
    }

    /// The data directory holding the segment files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The counters.
    pub fn stats(&self) -> &DoublewriteStats {
        &self.stats
    }

    /// True once a batch on `segment` failed after its copies became durable (see
    /// [`DblwrError::Poisoned`]).
    pub fn is_poisoned(&self, segment: usize) -> bool {
        self.segments.get(segment).is_some_and(|s| lock(s).poisoned)
    }

    /// Writes `pages` durably through segment `segment`, following the protocol of the crate
    /// docs: stamp each page's checksum once (into the segment's buffer, with its tablespace's
    /// algorithm; the caller's buffers are not modified), write header and copies to the
    /// segment file in one write and sync it, write the pages in place with one batched
    /// submission per tablespace, sync each touched data file once. Returns when all of it is
    /// durable. More than [`Doublewrite::pages_per_batch`] pages run as several batches, in
    /// order.
    ///
    /// Each page is `(id, bytes)`: exactly one page of the configured size whose FIL header
    /// already names `id` (page number at 4, space id at 34) and carries its LSN; its redo must
    /// be durable (write-ahead logging is the caller's job). The caller must keep the pages
    /// from changing during the call (a shared or SX latch) and must not put one page in two
    /// batches running at once. Buffers need no alignment: the writes come from the segment's
    /// own aligned buffer.
    ///
    /// Checked before any IO, as typed errors: an unknown segment or space, a page size or FIL
    /// header that does not match, a page twice in the batch, a page beyond the end of its
    /// tablespace. An IO error before the in-place writes leaves the data files untouched (the
    /// batch may simply be retried); one during or after them poisons the segment
    /// ([`DblwrError::Poisoned`] from then on): the pages are in doubt until recovery.
    pub fn flush_batch(
        &self,
        segment: usize,
        pages: &[(PageId, &[u8])],
        spaces: &dyn SpaceResolver,
    ) -> Result<(), DblwrError> {
        self.flush_batch_cached(segment, pages, &vec![None; pages.len()], spaces)
    }

    /// [`Doublewrite::flush_batch`] where pages of compressed tablespaces may come with their
    /// block already compressed (`cached[i]` for `pages[i]`, see
    /// `minnow_io::Tablespace::block_for`). The segment keeps the logical pages, so a copy
    /// restores a page whatever the codec; in place, a compressed tablespace gets each page's
    /// block (the cached one with the stamped header, or the page compressed now).
    pub fn flush_batch_cached(
        &self,
        segment: usize,
        pages: &[(PageId, &[u8])],
        cached: &[Option<&[u8]>],
        spaces: &dyn SpaceResolver,
    ) -> Result<(), DblwrError> {
        let slot = self
            .segments
            .get(segment)
            .ok_or(DblwrError::NoSuchSegment {
                segment,
                segments: self.segments.len(),
            })?;
        let mut seg = lock(slot);
        let per = self.config.pages_per_batch.max(1);
        for (batch, cached) in pages.chunks(per).zip(cached.chunks(per)) {
            self.flush_one(&mut seg, batch, cached, spaces)?;
        }
        Ok(())
    }

    fn flush_one(
        &self,
        seg: &mut Segment,
        pages: &[(PageId, &[u8])],
        cached: &[Option<&[u8]>],
        spaces: &dyn SpaceResolver,
    ) -> Result<(), DblwrError> {
        let copied = self.write_copies(seg, pages, cached, spaces)?;
        self.write_in_place(seg, copied)
    }

    /// Steps 1 and 2 of a batch on `seg`: checks, copies and stamps the pages into the
    /// segment's buffer (compressing each page of a compressed tablespace into its block
    /// now, so that the caller's buffers are not needed after this returns), then writes
    /// header and copies in one write and syncs the segment file. Leaves the segment marked
    /// `poisoned` until [`Doublewrite::write_in_place`] completes the batch: a segment whose
    /// copies may be the only intact images of pages about to be written in place takes no
    /// other batch.
    pub(crate) fn write_copies(
        &self,
        seg: &mut Segment,
        pages: &[(PageId, &[u8])],
        cached: &[Option<&[u8]>],
        spaces: &dyn SpaceResolver,
    ) -> Result<Copied, DblwrError> {
        if seg.poisoned {
            return Err(DblwrError::Poisoned {
                segment: seg.index,
                path: seg.path.clone(),
            });
        }
        let start = Instant::now();
        let mut copied = Copied {
            segment: seg.index,
            start,
            per_space: BTreeMap::new(),
            blocks: Vec::new(),
        };
        if pages.is_empty() {
            return Ok(copied);
        }
        let stats = &self.stats;
        let page_size = self.config.page_size;
        let psz = page_size.bytes();
        let capacity = self.config.pages_per_batch;
        let header_block = format::header_block_len(page_size, capacity);
        let resolved = self.check(pages, spaces)?;

        // 1. Copy and stamp, once, into the segment's buffer; a compressed tablespace's
        // pages are compressed here too (before any IO, so a page that does not fit fails
        // the batch with the data files untouched).
        let mut entries = Vec::with_capacity(pages.len());
        copied.blocks = Vec::with_capacity(pages.len());
        for (i, ((id, bytes), space)) in pages.iter().zip(&resolved).enumerate() {
            let at = header_block + i * psz;
            let slot = seg.buf.get_mut(at..at + psz).ok_or_else(config_too_big)?;
            slot.copy_from_slice(bytes);
            checksum::stamp(slot, space.policy().algorithm)
                .map_err(|source| DblwrError::Stamp { page: *id, source })?;
            let lsn =
                fil::page_lsn(slot).map_err(|source| DblwrError::Stamp { page: *id, source })?;
            entries.push(SlotEntry::for_page(*id, lsn, slot));
            copied.blocks.push(match space.zip() {
                Some(_) => {
                    Some(space.block_for(id.page_no, slot, cached.get(i).copied().flatten())?)
                }
                None => None,
            });
        }
        for (i, (id, space)) in pages.iter().map(|p| p.0).zip(resolved).enumerate() {
            copied
                .per_space
                .entry(id.space)
                .or_insert_with(|| (space, Vec::new()))
                .1
                .push((id.page_no, i));
        }

        let mut t = lap(&stats.prepare_ns, start);

        // 2. Header and copies in one sequential write, then sync.
        if let Some(file) = &seg.file {
            let header = self.next_header(seg, entries);
            let block = seg.buf.get_mut(..header_block).ok_or_else(config_too_big)?;
            header
                .encode(block)
                .map_err(|e| bad_segment(&seg.path, seg.index, &e.to_string()))?;
            let len = if header.copies {
                header_block + pages.len() * psz
            } else {
                header_block
            };
            let bytes = seg.buf.get(..len).ok_or_else(config_too_big)?;
            file.write_at(bytes, 0)?;
            t = lap(&stats.segment_write_ns, t);
            add(&stats.dblwr_bytes, len);
            if header.copies {
                add(&stats.dblwr_pages, pages.len());
            }
            file.sync_data()?;
            lap(&stats.segment_sync_ns, t);
            add(&stats.syncs, 1);
            seg.sequence += 1;
        }
        // From here on the data pages may be torn by a failure: the segment holds the only
        // evidence (and, in mode on, the only intact copies) until the data files are synced.
        seg.poisoned = true;
        Ok(copied)
    }

    /// Steps 3 and 4 of the batch `copied` that [`Doublewrite::write_copies`] wrote to `seg`:
    /// the pages in place from the segment's buffer, one batched submission per tablespace
    /// in page order, then one sync per touched data file; then the segment takes batches
    /// again. On an error the segment stays poisoned.
    pub(crate) fn write_in_place(
        &self,
        seg: &mut Segment,
        copied: Copied,
    ) -> Result<(), DblwrError> {
        if copied.segment != seg.index {
            return Err(config(&format!(
                "a batch copied to segment {} was given to segment {} to write in place",
                copied.segment, seg.index
            )));
        }
        if copied.per_space.is_empty() {
            return Ok(());
        }
        let stats = &self.stats;
        let psz = self.config.page_size.bytes();
        let header_block =
            format::header_block_len(self.config.page_size, self.config.pages_per_batch);
        let mut t = Instant::now();
        let Copied {
            start,
            mut per_space,
            mut blocks,
            ..
        } = copied;

        // 3. In place, one batched submission per tablespace, in page order.
        for (space, slots) in per_space.values_mut() {
            slots.sort_unstable();
            if space.zip().is_some() {
                // Compressed: each page goes in place as its block.
                for &(page_no, i) in slots.iter() {
                    let block = blocks
                        .get_mut(i)
                        .and_then(Option::take)
                        .ok_or_else(|| config("a compressed page's block was not prepared"))?;
                    space.write_block(page_no, &block)?;
                    add(&stats.in_place_bytes, block.len());
                }
                add(&stats.in_place_pages, slots.len());
                continue;
            }
            let mut batch = Vec::with_capacity(slots.len());
            for &(page_no, i) in slots.iter() {
                let at = header_block + i * psz;
                let buf = seg.buf.get(at..at + psz).ok_or_else(config_too_big)?;
                let offset = u64::from(page_no) * psz as u64;
                batch.push(IoRequest::Write { offset, buf });
            }
            space.file().submit(&mut batch)?;
            add(&stats.in_place_pages, slots.len());
            add(&stats.in_place_bytes, slots.len() * psz);
        }
        t = lap(&stats.in_place_write_ns, t);

        // 4. Sync every touched data file once.
        for (space, _) in per_space.values() {
            space.sync()?;
            add(&stats.syncs, 1);
        }
        lap(&stats.data_sync_ns, t);
        seg.poisoned = false;
        lap(&stats.batch_ns, start);
        add(&stats.batches, 1);
        Ok(())
    }

    /// Validates a batch and resolves its tablespaces; no IO.
    fn check(
        &self,
        pages: &[(PageId, &[u8])],
        spaces: &dyn SpaceResolver,
    ) -> Result<Vec<Arc<Tablespace>>, DblwrError> {
        let psz = self.config.page_size.bytes();
        let mut seen = HashSet::with_capacity(pages.len());
        let mut cache: Vec<Arc<Tablespace>> = Vec::new();
        let mut resolved = Vec::with_capacity(pages.len());
        for &(id, page) in pages {
            if page.len() != psz {
                return Err(DblwrError::PageSize {
                    page: id,
                    what: "the buffer",
                    expected: psz,
                    actual: page.len(),
                });
            }
            let stored = PageId::new(
                bytes::read_u32(page, fil::SPACE_ID).unwrap_or(u32::MAX),
                bytes::read_u32(page, fil::PAGE_NO).unwrap_or(u32::MAX),
            );
            if stored != id {
                return Err(DblwrError::Misdirected { page: id, stored });
            }
            if !seen.insert(id) {
                return Err(DblwrError::DuplicatePage { page: id });
            }
            let space = match cache.iter().find(|s| s.space_id() == id.space) {
                Some(s) => Arc::clone(s),
                None => {
                    let s = spaces
                        .tablespace(id.space)
                        .ok_or(DblwrError::UnknownSpace { page: id })?;
                    if s.page_size().bytes() != psz {
                        return Err(DblwrError::PageSize {
                            page: id,
                            what: "the tablespace's page size",
                            expected: psz,
                            actual: s.page_size().bytes(),
                        });
                    }
                    cache.push(Arc::clone(&s));
                    s
                }
            };
            let size_in_pages = space.size_in_pages();
            if id.page_no >= size_in_pages {
                return Err(DblwrError::PageOutOfRange {
                    page: id,
                    path: space.path().to_path_buf(),
                    size_in_pages,
                });
            }
            resolved.push(space);
        }
        Ok(resolved)
    }
}

/// A tablespace of a batch and its pages: (page number, slot).
type SpaceSlots = (Arc<Tablespace>, Vec<(u32, usize)>);

/// A batch whose copies are durable in its segment and whose in-place writes are still to
/// come ([`Doublewrite::write_copies`], then [`Doublewrite::write_in_place`]). Owns everything
/// the in-place step needs besides the segment's buffer, so it may cross to another thread.
#[derive(Debug)]
pub(crate) struct Copied {
    /// The segment it was copied to.
    segment: usize,
    /// When the batch started (for `batch_ns`).
    start: Instant,
    /// Its pages per tablespace.
    per_space: BTreeMap<u32, SpaceSlots>,
    /// Per slot: the block of a compressed tablespace's page.
    blocks: Vec<Option<AlignedBuf>>,
}

pub(crate) fn lock(segment: &Mutex<Segment>) -> MutexGuard<'_, Segment> {
    // A panic while holding a segment leaves `poisoned` set if it happened mid-batch.
    segment.lock().unwrap_or_else(PoisonError::into_inner)
}

fn config_too_big() -> DblwrError {
    config("the batch buffer does not fit this page size and batch capacity")
}

fn bad_segment(path: &Path, segment: usize, reason: &str) -> DblwrError {
    DblwrError::BadSegment {
        path: path.to_path_buf(),
        segment,
        reason: reason.to_string(),
    }
}

/// Keeps a segment file whose header matches `config`, or (re)initialises it. Returns the
/// sequence number to continue from.
fn prepare_file(
    file: &dyn FileIo,
    buf: &mut [u8],
    config: &DoublewriteConfig,
    index: usize,
) -> Result<u64, DblwrError> {
    let capacity = config.pages_per_batch;
    let copies = config.mode.writes_copies();
    let header_block = format::header_block_len(config.page_size, capacity);
    let want_len = format::file_len(config.page_size, capacity, copies);
    let len = file.len()?;
    let mut sequence = 0;
    if len >= header_block as u64 {
        let block = buf.get_mut(..header_block).ok_or_else(config_too_big)?;
        file.read_at(block, 0)?;
        if let Ok(h) = SegmentHeader::decode(block) {
            let same = h.page_size == config.page_size && h.capacity == capacity;
            if same && h.copies == copies && len >= want_len {
                return Ok(h.sequence);
            }
            sequence = h.sequence;
        }
    }
    let header = SegmentHeader {
        page_size: config.page_size,
        capacity,
        copies,
        segment: u32::try_from(index).unwrap_or(u32::MAX),
        sequence,
        entries: Vec::new(),
    };
    let block = buf.get_mut(..header_block).ok_or_else(config_too_big)?;
    header
        .encode(block)
        .map_err(|e| bad_segment(file.path(), index, &e.to_string()))?;
    // Write the whole file, header and zeroed slots, instead of leaving the slots to
    // `fallocate` alone: preallocated blocks are "unwritten extents" on ext4 and XFS, and the
    // first write into one converts it, a metadata change that makes that batch's sync commit
    // the file system's journal. Written once here, every batch's sync is a plain flush.
    let want = usize::try_from(want_len).map_err(|_| config_too_big())?;
    buf.get_mut(header_block..want)
        .ok_or_else(config_too_big)?
        .fill(0);
    file.allocate(want_len)?;
    file.write_at(buf.get(..want).ok_or_else(config_too_big)?, 0)?;
    file.sync_all()?;
    debug_assert!(header_block.is_multiple_of(SECTOR));
    Ok(sequence)
}

/// Syncs a directory, so that newly created files in it survive a crash.
fn sync_dir(dir: &Path) -> Result<(), DblwrError> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| DblwrError::Io(IoError::file(IoOp::Sync, dir, e)))
}
