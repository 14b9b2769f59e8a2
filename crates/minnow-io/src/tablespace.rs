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

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use minnow_page::checksum::{self, ChecksumAlgorithm, ChecksumPolicy, Verdict};
use minnow_page::fil::{self, FilHeader};
use minnow_page::fsp::{self, FspFlags, FspHeader};
use minnow_page::{PageSize, PageType};

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
        let file = backend.open(path, &OpenOptions::new(flush_method).create(true))?;
        if !file.is_empty()? {
            return Err(bad(path, "the file already exists and is not empty"));
        }
        let pages = initial_pages.max(1);
        let flags = FspFlags::new(page_size, checksum == ChecksumAlgorithm::FullCrc32);
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
        if len < PageSize::K4.bytes() as u64 {
            return Err(bad(
                path,
                &format!("{len} bytes is shorter than the smallest page"),
            ));
        }
        let mut probe = AlignedBuf::new(PROBE)?;
        file.read_at(&mut probe, 0)?;
        let flags = fsp::read_flags(&probe).map_err(|e| bad(path, &e.to_string()))?;
        flags.validate().map_err(|e| bad(path, &e.to_string()))?;
        let page_size = flags.page_size().map_err(|e| bad(path, &e.to_string()))?;
        let page_bytes = page_size.bytes() as u64;
        if len % page_bytes != 0 {
            return Err(bad(
                path,
                &format!("length {len} is not a multiple of the page size {page_bytes}"),
            ));
        }
        let size = u32::try_from(len / page_bytes)
            .map_err(|_| bad(path, &format!("{len} bytes is more than 2^32 pages")))?;
        let mut space = Tablespace {
            file,
            path: path.to_path_buf(),
            space_id: 0,
            page_size,
            flags,
            policy: checksum.for_space(flags),
            size: AtomicU32::new(size),
        };
        let mut page0 = AlignedBuf::page(page_size);
        if verify_page0 {
            if space.read_page(0, &mut page0)? == Verdict::Empty {
                return Err(bad(path, "page 0 is all zeros"));
            }
        } else {
            space.read_page_unverified(0, &mut page0)?;
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

    fn byte_offset(&self, page_no: u32) -> u64 {
        u64::from(page_no) * self.page_size.bytes() as u64
    }

    /// Checks the page number and buffer length; returns the byte offset.
    fn locate(&self, page_no: u32, buf_len: usize) -> Result<u64, IoError> {
        let size_in_pages = self.size_in_pages();
        if page_no >= size_in_pages {
            return Err(IoError::PageOutOfRange {
                path: self.path.clone(),
                page_no,
                size_in_pages,
            });
        }
        if buf_len != self.page_size.bytes() {
            return Err(IoError::BufferSize {
                path: self.path.clone(),
                expected: self.page_size.bytes(),
                actual: buf_len,
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

    /// Reads page `page_no` into `buf` without checking it (for inspection tools).
    pub fn read_page_unverified(&self, page_no: u32, buf: &mut [u8]) -> Result<(), IoError> {
        let offset = self.locate(page_no, buf.len())?;
        self.file.read_at(buf, offset)
    }

    /// Stamps the page's checksum (the LSN must already be in its header) and writes it as
    /// page `page_no`. Durable after [`Tablespace::sync`] (or on return with `O_DSYNC`).
    pub fn write_page(&self, page_no: u32, buf: &mut [u8]) -> Result<(), IoError> {
        let offset = self.locate(page_no, buf.len())?;
        self.stamp(page_no, buf)?;
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

/// Syncs the directory holding `path`, so that a new file's name is durable too.
fn sync_parent_dir(path: &Path) -> Result<(), IoError> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::File::open(parent)
        .and_then(|dir| dir.sync_all())
        .map_err(|e| IoError::file(IoOp::Sync, parent, e))
}

#[cfg(test)]
#[path = "tablespace_tests.rs"]
mod tests;
