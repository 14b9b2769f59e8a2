//! Tablespaces: files of pages.
//!
//! A tablespace (an `.ibd` file in InnoDB) is an array of pages of one size: page `n` lives at
//! byte offset `n * page_size`, and the file is always a whole number of pages long. Page 0 is
//! the `FSP_HDR` page, whose FSP header records the space id and, in its flags, the page size.
//!
//! ```text
//!  offset 0          page_size        2*page_size              n*page_size
//!  +-----------------+----------------+-------- ... -----------+
//!  | page 0: FSP_HDR | page 1         | page 2 ...             |
//!  | flags at byte 54|                |                        |
//!  +-----------------+----------------+-------- ... -----------+
//! ```
//!
//! Opening a file we know nothing about is a bootstrapping problem: we need the page size to
//! read page 0, and the page size is in page 0. The FSP flags sit at byte 54, inside the first
//! 1 KiB whatever the page size, so [`Tablespace::open`] reads 1 KiB first (as `innochecksum`
//! does), decodes the page size, then reads and verifies the whole page 0.
//!
//! Every page read through [`Tablespace::read_page`] is verified with the space's checksum
//! policy ([`ChecksumPolicy::for_space`]); a failure is [`IoError::Corrupt`], naming the file,
//! the page and the stored and computed checksums. Every page written through
//! [`Tablespace::write_page`] is stamped first. Nothing here panics on a damaged file: a file of
//! garbage, a truncated file or a page past the end all give typed errors.
//!
//! Growing the file ([`Tablespace::extend_to`]) preallocates with `fallocate`, so later page
//! writes cannot fail for lack of space; the FSP header's size field belongs to space
//! management above this crate and is only written at creation.
//!
//! ## Compressed tablespaces
//!
//! A tablespace made with [`Tablespace::create_compressed`] stores each logical page (the
//! size everything above works with, 16 KiB by default) compressed into a **block** of
//! `KEY_BLOCK_SIZE` bytes (1, 2, 4 or 8 KiB; [`minnow_zip`] has the block format), and page
//! `n` lives at byte offset `n * block_size`: the file is an array of blocks, and a read moves
//! only the block. Everything else is unchanged for the caller: [`Tablespace::read_page`]
//! fills a logical page (inflated and verified: the block's CRC-32C first, then the page's own
//! checksum and page number), [`Tablespace::write_page`] stamps a logical page and writes its
//! block.
//!
//! ```text
//!  offset 0       block    2*block         n*block
//!  +--------------+--------------+-- ... --+--------------+
//!  | page 0 (FSP) | page 1       |         | page n       |   each block: FIL header,
//!  | compressed   | compressed   |         | compressed   |   zip header, payload,
//!  +--------------+--------------+-- ... --+--------------+   padding, FIL trailer
//! ```
//!
//! A page whose body does not compress into its block cannot be written
//! ([`IoError::DoesNotFit`]); the buffer pool checks every change when its mini-transaction
//! commits ([`Tablespace::compress_body`]) so that the B-tree can split such a page before it
//! is ever dirty, and keeps the block it compressed there so the write does not compress again
//! ([`Tablespace::block_for`]). Page 0's FSP flags carry the block size in InnoDB's
//! `ZIP_SSIZE` bits, and every block records it too, which is how [`Tablespace::open`] tells a
//! compressed file from a plain one before it knows anything else: a block starts with the
//! verbatim FIL header and then minnow's zip magic, where a plain page 0 has its FSP header.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, PoisonError};

use minnow_page::checksum::{self, ChecksumAlgorithm, ChecksumPolicy, Verdict};
use minnow_page::fil::{self, FilHeader};
use minnow_page::fsp::{self, FspFlags, FspHeader};
use minnow_page::{PageSize, PageType};
use minnow_zip::{ZipConfig, ZipStats};

use crate::{AlignedBuf, Backend, FileIo, FlushMethod, IoError, IoOp, IoRequest, OpenOptions};

/// How much of the file [`Tablespace::open`] reads to find the FSP flags.
const PROBE: usize = 1024;

/// An open tablespace file.
#[derive(Debug)]
pub struct Tablespace {
    file: Arc<dyn FileIo>,
    path: PathBuf,
    space_id: u32,
    page_size: PageSize,
    flags: FspFlags,
    policy: ChecksumPolicy,
    /// The file's length in pages.
    size: AtomicU32,
    /// Set for a compressed tablespace.
    zip: Option<Zip>,
}

impl Tablespace {
    /// Creates a new tablespace file at `path` (which must not exist or be empty) of
    /// `initial_pages` pages (at least 1): writes page 0 (FIL header of type `FSP_HDR`, FSP
    /// header with the flags for `page_size` and `checksum`), stamped with `checksum`,
    /// preallocates the rest, and syncs the file and its directory.
    pub fn create(
        backend: &dyn Backend,
        path: &Path,
        space_id: u32,
        page_size: PageSize,
        checksum: ChecksumAlgorithm,
        flush_method: FlushMethod,
        initial_pages: u32,
    ) -> Result<Tablespace, IoError> {
        Tablespace::create_with(
            backend,
            path,
            (space_id, page_size, None),
            checksum,
            flush_method,
            initial_pages,
        )
    }

    /// Creates a new **compressed** tablespace: as [`Tablespace::create`], but every logical
    /// page of `page_size` is stored compressed into a block of `zip.block_size` with
    /// `zip.algorithm` (see the module docs). The block must be smaller than the page, and the
    /// checksum cannot be `full_crc32` (whose FSP flags have no compressed-size field; MariaDB
    /// does not compress such tablespaces either).
    #[allow(clippy::too_many_arguments)]
    pub fn create_compressed(
        backend: &dyn Backend,
        path: &Path,
        space_id: u32,
        page_size: PageSize,
        zip: ZipConfig,
        checksum: ChecksumAlgorithm,
        flush_method: FlushMethod,
        initial_pages: u32,
    ) -> Result<Tablespace, IoError> {
        if zip.block_size.bytes() >= page_size.bytes() {
            return Err(bad(
                path,
                &format!(
                    "a {} KiB block does not compress a {page_size} page (it must be smaller)",
                    zip.block_size.kib()
                ),
            ));
        }
        if checksum == ChecksumAlgorithm::FullCrc32 {
            return Err(bad(
                path,
                "full_crc32 tablespaces cannot be compressed (their FSP flags have no ZIP_SSIZE)",
            ));
        }
        Tablespace::create_with(
            backend,
            path,
            (space_id, page_size, Some(zip)),
            checksum,
            flush_method,
            initial_pages,
        )
    }

    /// [`Tablespace::create_compressed`] with `Some(zip)`, [`Tablespace::create`] with `None`:
    /// for callers that build either kind.
    #[allow(clippy::too_many_arguments)]
    pub fn create_with_zip(
        backend: &dyn Backend,
        path: &Path,
        space_id: u32,
        page_size: PageSize,
        zip: Option<ZipConfig>,
        checksum: ChecksumAlgorithm,
        flush_method: FlushMethod,
        initial_pages: u32,
    ) -> Result<Tablespace, IoError> {
        match zip {
            Some(z) => Tablespace::create_compressed(
                backend,
                path,
                space_id,
                page_size,
                z,
                checksum,
                flush_method,
                initial_pages,
            ),
            None => Tablespace::create(
                backend,
                path,
                space_id,
                page_size,
                checksum,
                flush_method,
                initial_pages,
            ),
        }
    }

    fn create_with(
        backend: &dyn Backend,
        path: &Path,
        (space_id, page_size, zip): (u32, PageSize, Option<ZipConfig>),
        checksum: ChecksumAlgorithm,
        flush_method: FlushMethod,
        initial_pages: u32,
    ) -> Result<Tablespace, IoError> {
        let file = backend.open(path, &OpenOptions::new(flush_method).create(true))?;
        if !file.is_empty()? {
            return Err(bad(path, "the file already exists and is not empty"));
        }
        let pages = initial_pages.max(1);
        let mut flags = FspFlags::new(page_size, checksum == ChecksumAlgorithm::FullCrc32);
        if let Some(z) = zip {
            flags.0 |= u32::from(z.block_size.ssize()) << 1;
        }
        let mut page0 = AlignedBuf::page(page_size);
        let encode = |page: &mut [u8]| -> Result<(), minnow_page::PageError> {
            FilHeader::new(space_id, 0, PageType::FspHdr).write(page)?;
            FspHeader {
                space_id,
                size: pages,
                free_limit: 0,
                flags,
                frag_n_used: 0,
                next_seg_id: 1,
            }
            .write(page)
        };
        encode(&mut page0).map_err(|e| bad(path, &e.to_string()))?;
        let space = Tablespace {
            file,
            path: path.to_path_buf(),
            space_id,
            page_size,
            flags,
            policy: ChecksumPolicy::new(checksum).for_space(flags),
            size: AtomicU32::new(0),
            zip: zip.map(Zip::new),
        };
        space.file.allocate(space.byte_offset(pages))?;
        space.size.store(pages, Ordering::Release);
        space.write_page(0, &mut page0)?;
        space.file.sync_all()?;
        sync_parent_dir(path)?;
        Ok(space)
    }

    /// Opens an existing tablespace, verifying page 0 with `checksum` (adapted to the space by
    /// [`ChecksumPolicy::for_space`]). Fails with [`IoError::BadTablespace`] if the file is
    /// shorter than a page, its flags are invalid, its length is not a whole number of pages or
    /// page 0 is not its FSP header; with [`IoError::Corrupt`] if page 0 fails its checksum.
    pub fn open(
        backend: &dyn Backend,
        path: &Path,
        opts: &OpenOptions,
        checksum: ChecksumPolicy,
    ) -> Result<Tablespace, IoError> {
        Tablespace::open_with(backend, path, opts, checksum, true)
    }

    /// Opens an existing tablespace for crash recovery: as [`Tablespace::open`], but page 0's
    /// checksum is not verified. A power cut can tear page 0 like any other page, and its
    /// intact copy is then in the doublewrite buffer, which recovery consults only after the
    /// tablespaces are open (InnoDB restores page 0 from the doublewrite buffer the same way).
    /// What `open` reads from page 0 survives a tear: the FSP flags and the space id never
    /// change after creation, so both versions of a torn page agree on them (and the flags are
    /// validated all the same). The caller reads page 0 through its normal, verifying path
    /// once recovery is done.
    pub fn open_for_recovery(
        backend: &dyn Backend,
        path: &Path,
        opts: &OpenOptions,
        checksum: ChecksumPolicy,
    ) -> Result<Tablespace, IoError> {
        Tablespace::open_with(backend, path, opts, checksum, false)
    }

    fn open_with(
        backend: &dyn Backend,
        path: &Path,
        opts: &OpenOptions,
        checksum: ChecksumPolicy,
        verify_page0: bool,
    ) -> Result<Tablespace, IoError> {
        if opts.create {
            return Err(bad(
                path,
                "open does not create tablespaces; use Tablespace::create",
            ));
        }
        let file = backend.open(path, opts)?;
        let len = file.len()?;
        // The smallest page is a 1 KiB compressed block; a plain file shorter than its page
        // size fails the length check below.
        if len < PROBE as u64 {
            return Err(bad(
                path,
                &format!("{len} bytes is shorter than the smallest page"),
            ));
        }
        let mut probe = AlignedBuf::new(PROBE)?;
        file.read_at(&mut probe, 0)?;
        let (flags, zip) = match probe_block(&probe) {
            Some(block_size) => {
                let (flags, config) = read_block0(&*file, path, block_size, verify_page0)?;
                (flags, Some(config))
            }
            None => (
                fsp::read_flags(&probe).map_err(|e| bad(path, &e.to_string()))?,
                None,
            ),
        };
        flags.validate().map_err(|e| bad(path, &e.to_string()))?;
        let page_size = flags.page_size().map_err(|e| bad(path, &e.to_string()))?;
        if let Some(z) = zip
            && flags.zip_size() != Some(z.block_size.bytes())
        {
            return Err(bad(
                path,
                &format!(
                    "page 0 is a {} KiB block but its FSP flags say {:?}",
                    z.block_size.kib(),
                    flags.zip_size()
                ),
            ));
        }
        let unit = zip.map_or(page_size.bytes(), |z| z.block_size.bytes()) as u64;
        if len % unit != 0 {
            return Err(bad(
                path,
                &format!("length {len} is not a multiple of the page size {unit}"),
            ));
        }
        let size = u32::try_from(len / unit)
            .map_err(|_| bad(path, &format!("{len} bytes is more than 2^32 pages")))?;
        let mut space = Tablespace {
            file,
            path: path.to_path_buf(),
            space_id: 0,
            page_size,
            flags,
            policy: checksum.for_space(flags),
            size: AtomicU32::new(size),
            zip: zip.map(Zip::new),
        };
        let mut page0 = AlignedBuf::page(page_size);
        if verify_page0 {
            if space.read_page(0, &mut page0)? == Verdict::Empty {
                return Err(bad(path, "page 0 is all zeros"));
            }
        } else {
            match space.read_page_unverified(0, &mut page0) {
                Ok(()) => {}
                Err(IoError::ZipDamaged { .. }) => {
                    // A torn block 0 (recovery repairs it from the doublewrite buffer): its
                    // FIL header is stored verbatim in the first sector, and both versions of
                    // a torn block agree on the space id.
                    let mut block = AlignedBuf::new(space.physical_page_bytes())?;
                    space.file.read_at(&mut block, 0)?;
                    space.space_id = minnow_page::bytes::read_u32(&block, fil::SPACE_ID)
                        .map_err(|e| bad(path, &e.to_string()))?;
                    return Ok(space);
                }
                Err(e) => return Err(e),
            }
        }
        let header = FilHeader::read(&page0).map_err(|e| bad(path, &e.to_string()))?;
        let fsp = FspHeader::read(&page0).map_err(|e| bad(path, &e.to_string()))?;
        if header.page_type != PageType::FspHdr {
            return Err(bad(
                path,
                &format!("page 0 has type {}, not FSP_HDR", header.page_type.name()),
            ));
        }
        if header.space_id != fsp.space_id {
            return Err(bad(
                path,
                &format!(
                    "page 0 names space {} in its FIL header and {} in its FSP header",
                    header.space_id, fsp.space_id
                ),
            ));
        }
        space.space_id = fsp.space_id;
        Ok(space)
    }

    /// The tablespace id.
    pub fn space_id(&self) -> u32 {
        self.space_id
    }

    /// The page size.
    pub fn page_size(&self) -> PageSize {
        self.page_size
    }

    /// The FSP flags of page 0.
    pub fn flags(&self) -> FspFlags {
        self.flags
    }

    /// The checksum policy pages are verified (and stamped) with.
    pub fn policy(&self) -> ChecksumPolicy {
        self.policy
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The underlying file, for IO this type does not cover.
    pub fn file(&self) -> &Arc<dyn FileIo> {
        &self.file
    }

    /// The file's length in pages.
    pub fn size_in_pages(&self) -> u32 {
        self.size.load(Ordering::Acquire)
    }

    /// The compression settings of a compressed tablespace; `None` for a plain one.
    pub fn zip(&self) -> Option<ZipConfig> {
        self.zip.as_ref().map(|z| z.config)
    }

    /// The counters of every compression and decompression done for this file (through
    /// [`Tablespace::compress_body`], reads and writes); `None` for a plain tablespace.
    pub fn zip_stats(&self) -> Option<ZipStats> {
        self.zip
            .as_ref()
            .map(|z| *z.stats.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Bytes one page takes in the file: the block size if compressed, else the page size.
    pub fn physical_page_bytes(&self) -> usize {
        self.zip
            .as_ref()
            .map_or(self.page_size.bytes(), |z| z.config.block_size.bytes())
    }

    fn byte_offset(&self, page_no: u32) -> u64 {
        u64::from(page_no) * self.physical_page_bytes() as u64
    }

    /// Checks the page number and that the buffer is one logical page; returns the byte
    /// offset of the page (its block, if compressed).
    fn locate(&self, page_no: u32, buf_len: usize) -> Result<u64, IoError> {
        self.locate_len(page_no, buf_len, self.page_size.bytes())
    }

    /// Checks the page number and that `len` is `expected`; returns the byte offset.
    fn locate_len(&self, page_no: u32, len: usize, expected: usize) -> Result<u64, IoError> {
        let size_in_pages = self.size_in_pages();
        if page_no >= size_in_pages {
            return Err(IoError::PageOutOfRange {
                path: self.path.clone(),
                page_no,
                size_in_pages,
            });
        }
        if len != expected {
            return Err(IoError::BufferSize {
                path: self.path.clone(),
                expected,
                actual: len,
            });
        }
        Ok(self.byte_offset(page_no))
    }

    /// Verifies a page just read as `page_no`.
    fn verify(&self, page_no: u32, page: &[u8]) -> Result<Verdict, IoError> {
        let verdict =
            checksum::verify(page, self.policy).map_err(|corruption| IoError::Corrupt {
                path: self.path.clone(),
                page_no,
                corruption,
            })?;
        if verdict != Verdict::Empty {
            let stored = minnow_page::bytes::read_u32(page, fil::PAGE_NO).unwrap_or(page_no);
            if stored != page_no {
                return Err(IoError::Misdirected {
                    path: self.path.clone(),
                    page_no,
                    stored,
                });
            }
        }
        Ok(verdict)
    }

    /// Reads page `page_no` into `buf` (exactly one page long; aligned for `O_DIRECT`) and
    /// verifies it: its checksum under the space's policy, and its stored page number. An
    /// all-zero page (allocated, never written) is [`Verdict::Empty`].
    pub fn read_page(&self, page_no: u32, buf: &mut [u8]) -> Result<Verdict, IoError> {
        self.read_page_unverified(page_no, buf)?;
        self.verify(page_no, buf)
    }

    /// Reads page `page_no` into `buf` without checking its checksum (for inspection tools).
    /// A compressed page's block must still pass its own check to be inflated at all: a
    /// damaged block is [`IoError::ZipDamaged`]; an all-zero block (allocated, never written)
    /// reads as an all-zero page.
    pub fn read_page_unverified(&self, page_no: u32, buf: &mut [u8]) -> Result<(), IoError> {
        let offset = self.locate(page_no, buf.len())?;
        if self.zip.is_none() {
            return self.file.read_at(buf, offset);
        }
        let mut block = AlignedBuf::new(self.physical_page_bytes())?;
        self.file.read_at(&mut block, offset)?;
        self.restore_block(page_no, &block, buf)
    }

    /// Stamps the page's checksum (the LSN must already be in its header) and writes it as
    /// page `page_no` (compressed into its block, for a compressed tablespace). Durable after
    /// [`Tablespace::sync`] (or on return with `O_DSYNC`).
    pub fn write_page(&self, page_no: u32, buf: &mut [u8]) -> Result<(), IoError> {
        let offset = self.locate(page_no, buf.len())?;
        self.stamp(page_no, buf)?;
        if self.zip.is_some() {
            let block = self.block_for(page_no, buf, None)?;
            return self.file.write_at(&block, offset);
        }
        self.file.write_at(buf, offset)
    }

    fn stamp(&self, page_no: u32, buf: &mut [u8]) -> Result<(), IoError> {
        checksum::stamp(buf, self.policy.algorithm).map_err(|e| IoError::Corrupt {
            path: self.path.clone(),
            page_no,
            corruption: e.into(),
        })
    }

    /// Reads many pages with one batch ([`FileIo::submit`]), then verifies each; the first bad
    /// page is the error.
    pub fn read_pages(&self, pages: &mut [(u32, &mut [u8])]) -> Result<(), IoError> {
        if self.zip.is_some() {
            for (page_no, buf) in pages.iter_mut() {
                self.read_page(*page_no, buf)?;
            }
            return Ok(());
        }
        let mut batch = Vec::with_capacity(pages.len());
        for (page_no, buf) in pages.iter_mut() {
            let offset = self.locate(*page_no, buf.len())?;
            batch.push(IoRequest::Read { offset, buf });
        }
        self.file.submit(&mut batch)?;
        drop(batch);
        for (page_no, buf) in pages.iter() {
            self.verify(*page_no, buf)?;
        }
        Ok(())
    }

    /// Stamps and writes many pages with one batch ([`FileIo::submit`]).
    pub fn write_pages(&self, pages: &mut [(u32, &mut [u8])]) -> Result<(), IoError> {
        if self.zip.is_some() {
            for (page_no, buf) in pages.iter_mut() {
                self.write_page(*page_no, buf)?;
            }
            return Ok(());
        }
        let mut batch = Vec::with_capacity(pages.len());
        for (page_no, buf) in pages.iter_mut() {
            let offset = self.locate(*page_no, buf.len())?;
            self.stamp(*page_no, buf)?;
            batch.push(IoRequest::Write { offset, buf });
        }
        self.file.submit(&mut batch)
    }

    /// Grows the file to at least `pages` pages, preallocated and reading as zeros (all-zero
    /// pages verify as [`Verdict::Empty`]). Never shrinks. Durable after [`Tablespace::sync`].
    pub fn extend_to(&self, pages: u32) -> Result<(), IoError> {
        if pages <= self.size_in_pages() {
            return Ok(());
        }
        self.file.allocate(self.byte_offset(pages))?;
        self.size.fetch_max(pages, Ordering::AcqRel);
        Ok(())
    }

    /// Cuts the file to `pages` pages (`ftruncate`) and syncs it; never grows it. The pages
    /// beyond must be ones nothing will read again: the space's allocator no longer
    /// describes them, that change is durable, and no doublewrite copy of them is left to
    /// be written back (see `minnow_btree::space::shrink_tail`). Returns whether the file
    /// was longer.
    pub fn truncate_to(&self, pages: u32) -> Result<bool, IoError> {
        if pages >= self.size_in_pages() {
            return Ok(false);
        }
        self.size.fetch_min(pages, Ordering::AcqRel);
        self.file.truncate(self.byte_offset(pages))?;
        self.file.sync_data()?;
        Ok(true)
    }

    /// Makes every page written so far, and the file's length, durable.
    pub fn sync(&self) -> Result<(), IoError> {
        self.file.sync_data()
    }
}

fn bad(path: &Path, reason: &str) -> IoError {
    IoError::BadTablespace {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    }
}

/// Syncs the directory holding `path`, so that a new file's name (or a rename to it) is
/// durable too.
pub fn sync_parent_dir(path: &Path) -> Result<(), IoError> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::File::open(parent)
        .and_then(|dir| dir.sync_all())
        .map_err(|e| IoError::file(IoOp::Sync, parent, e))
}

mod zip;
use zip::{Zip, probe_block, read_block0};

#[cfg(test)]
#[path = "tablespace_tests.rs"]
mod tests;
