//! Opening a tablespace file and reading its pages, read-only.
//!
//! A tablespace file is a sequence of equal-sized pages, and nothing in the file says how big a
//! page is except page 0's **FSP flags** (offset 54). So, like `innochecksum`, we first read only
//! the first 1 KiB (the smallest page InnoDB ever wrote, a 1 KiB compressed page, still holds the
//! flags), derive the page size from the flags, and only then read whole pages. `--page-size`
//! overrides the flags, which is how a file whose page 0 is damaged can still be checked.
//!
//! Reads are positional (`pread` via [`FileExt::read_exact_at`]) on a file opened read-only: an
//! inspector must never change what it inspects. A file whose length is not a multiple of the
//! page size ends in a *partial page*, which the commands report as a problem rather than
//! silently ignoring.
//!
//! ## Compressed tablespaces
//!
//! minnow's compressed tables live in files of **blocks** (docs/FORMAT.md §12): each logical
//! page (16 KiB, say) is stored compressed in a block of `KEY_BLOCK_SIZE` bytes (1 to 16 KiB),
//! and page `n` lives at byte `n * block_size`. Such a file is recognised by what its first
//! block holds after the verbatim 38-byte FIL header: minnow's zip magic `"mZIP"` at byte 38,
//! where a plain page 0 has its FSP header. The same 1 KiB probe that finds the FSP flags
//! finds the magic, and the block shift size beside it (byte 45) gives the block size:
//!
//! ```text
//!  probe (first 1 KiB)      is it compressed?           page size from
//!  bytes 38..42 = "mZIP" -> yes: block = 512 << [45] -> block 0's zip header (logical size),
//!                                                        then page 0's FSP flags once inflated
//!  anything else         -> no                       -> page 0's FSP flags at byte 54
//! ```
//!
//! Callers never see blocks unless they ask: [`Space::read_page`] and [`Space::scan`] hand over
//! the **inflated logical page**, so every command that reads pages works on either kind of
//! file. What a block adds is told beside it ([`Slot::block`]): its zip header (payload length,
//! algorithm, CRC) or why it could not be restored. A damaged block (bad magic, CRC mismatch,
//! a payload that does not inflate) is never a panic: [`Space::read_page`] returns
//! [`SpaceError::DamagedBlock`] naming the file, the page, the block's offset and what is
//! wrong, and [`Space::scan`] reports it per page so that `verify` can list it like a corrupt
//! page. An all-zero block (allocated, never written) reads as an all-zero, empty page.
//!
//! ## InnoDB's ROW_FORMAT=COMPRESSED tablespaces
//!
//! InnoDB's own compressed tables are another kind of file: page 0's FSP flags carry a
//! `ZIP_SSIZE` (docs/FORMAT.md §12, "InnoDB's own compressed pages"), and every page, page 0
//! included, is stored in a *physical* page of that size (1 to 16 KiB) with one checksum at
//! offset 0 and no FIL trailer ([`minnow_page::checksum::zip`]). minnow reads such files
//! without inflating them: the page size reported is the logical one the flags give,
//! [`Space::physical_page_bytes`] is the compressed size, [`Space::scan`] hands over each
//! physical page as stored, and [`Space::check`] applies the compressed-page checksum rules.
//! [`Space::read_page`], which promises a logical page, refuses with
//! [`SpaceError::NotDecompressed`]. `--page-size` equal to the compressed size selects the same
//! reading; any other value reads the file as plain pages of that size, as before.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use minnow_page::checksum::{self, ChecksumPolicy};
use minnow_page::fsp::{FLAGS_OFFSET, FspFlags, read_flags};
use minnow_page::{PageError, PageSize};
use minnow_zip::format::{HEADER_OFFSET, MAGIC};
use minnow_zip::{Algorithm, Codec, KeyBlockSize, ZipConfig, ZipError, ZipHeader, ZipStats};

/// How many bytes are read first to find the flags (`UNIV_ZIP_SIZE_MIN`).
pub const PROBE_BYTES: usize = 1024;

/// Pages read per `pread` while scanning a whole file.
const PAGES_PER_READ: usize = 64;

/// Where a compressed block records its zip shift size (`block = 512 << ssize`).
const SSIZE_AT: usize = HEADER_OFFSET + 7;

/// How many blocks [`Space::open`] tries for a readable zip header when block 0's is damaged.
const HEADER_SEARCH_BLOCKS: u64 = 64;

/// Why a tablespace could not be opened or read. Every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum SpaceError {
    /// The file could not be opened or its size read.
    #[error("{path}: cannot open: {source}")]
    Open {
        /// The file.
        path: String,
        /// The OS error.
        source: io::Error,
    },
    /// A read failed.
    #[error("{path}: cannot read {len} bytes at offset {offset}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Where the read started.
        offset: u64,
        /// How many bytes were asked for.
        len: usize,
        /// The OS error.
        source: io::Error,
    },
    /// The file has no bytes at all.
    #[error("{path}: the file is empty")]
    Empty {
        /// The file.
        path: String,
    },
    /// The file ends before page 0's flags.
    #[error(
        "{path}: the file is only {len} bytes, too short to hold page 0's FSP flags \
         (offset {FLAGS_OFFSET}); pass --page-size to read it anyway"
    )]
    TooShort {
        /// The file.
        path: String,
        /// Its length.
        len: u64,
    },
    /// Page 0's flags do not describe a readable tablespace.
    #[error("{path}: page 0 has unusable FSP flags: {source}; pass --page-size to read it anyway")]
    BadFlags {
        /// The file.
        path: String,
        /// What is wrong with them.
        source: PageError,
    },
    /// A logical page of an InnoDB ROW_FORMAT=COMPRESSED tablespace was asked for: minnow
    /// checks and decodes the compressed pages' headers but does not inflate their records.
    #[error(
        "{path}: page {page} is stored compressed ({zip_size}-byte ROW_FORMAT=COMPRESSED page); \
         minnow reads its header and checksum but does not decompress InnoDB's compressed pages"
    )]
    NotDecompressed {
        /// The file.
        path: String,
        /// The page asked for.
        page: u64,
        /// The physical (compressed) page size.
        zip_size: usize,
    },
    /// A page number past the end of the file.
    #[error("{path}: page {page} is beyond the end of the file ({pages} whole pages)")]
    NoSuchPage {
        /// The file.
        path: String,
        /// The page asked for.
        page: u64,
        /// Whole pages in the file.
        pages: u64,
    },
    /// Block 0 carries the zip magic but a block shift size that is not 1 to 5.
    #[error(
        "{path}: page 0 starts like a compressed block (zip magic at byte {HEADER_OFFSET}) but \
         its block shift size at byte {SSIZE_AT} is {actual}, expected 1 to 5 (1 to 16 KiB \
         blocks)"
    )]
    BadBlockShift {
        /// The file.
        path: String,
        /// The byte found.
        actual: u8,
    },
    /// A compressed file shorter than its first block: it was truncated.
    #[error(
        "{path}: compressed tablespace truncated: the file is {len} bytes, shorter than its \
         first {block}-byte block"
    )]
    TruncatedBlock {
        /// The file.
        path: String,
        /// Its length.
        len: u64,
        /// The block size block 0 records.
        block: usize,
    },
    /// No block among the first few has a zip header that reads, so the logical page size and
    /// algorithm are unknown.
    #[error(
        "{path}: compressed tablespace whose block 0 is damaged ({source}) and no block among \
         the first {searched} has a readable zip header"
    )]
    NoZipHeader {
        /// The file.
        path: String,
        /// Why block 0's header does not read.
        source: ZipError,
        /// Blocks tried.
        searched: u64,
    },
    /// A compressed block that cannot be restored to its page.
    #[error("{path}: page {page} (compressed block at offset {offset}): {source}")]
    DamagedBlock {
        /// The file.
        path: String,
        /// The page number (the block's position in the file).
        page: u64,
        /// The block's byte offset in the file.
        offset: u64,
        /// What is wrong with it.
        source: ZipError,
    },
}

/// Where the page size in use came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PageSizeSource {
    /// Page 0's FSP flags.
    Flags,
    /// The `--page-size` option.
    Option,
    /// The zip header of a compressed file's block 0 (its logical page size).
    ZipHeader,
}

/// How a compressed tablespace stores its pages: the block size and the algorithm its block 0
/// (or the first block with a readable header) records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZipLayout {
    /// The block size, `KEY_BLOCK_SIZE`.
    pub block_size: KeyBlockSize,
    /// Algorithm and level.
    pub algorithm: Algorithm,
}

impl ZipLayout {
    /// The layout described for a report, with the logical page size in use.
    pub fn info(&self, page_size: PageSize) -> ZipInfo {
        let (algorithm, level) = match self.algorithm {
            Algorithm::Zlib(level) => ("zlib", Some(level.get())),
            Algorithm::Lz4 => ("lz4", None),
        };
        ZipInfo {
            key_block_size: self.block_size.kib(),
            block_size: self.block_size.bytes(),
            algorithm,
            level,
            codec: self.algorithm.to_string(),
            logical_page_size: page_size.bytes(),
            payload_capacity: minnow_zip::format::capacity(self.block_size),
        }
    }
}

/// How a compressed tablespace stores its pages, as the reports show it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ZipInfo {
    /// `KEY_BLOCK_SIZE` in KiB.
    pub key_block_size: usize,
    /// The block size in bytes.
    pub block_size: usize,
    /// `zlib` or `lz4`.
    pub algorithm: &'static str,
    /// The zlib level (1-9); absent for LZ4.
    pub level: Option<u8>,
    /// Algorithm and level as the engine names them (`zlib-6`, `lz4`: the `ALG` of a
    /// `zip{KIB}k_{ALG}.ibd` file name).
    pub codec: String,
    /// The logical page size in bytes.
    pub logical_page_size: usize,
    /// Payload bytes a block has room for: the block less its 58-byte headers and 8-byte
    /// trailer.
    pub payload_capacity: usize,
}

impl ZipInfo {
    /// `KEY_BLOCK_SIZE=8 (8192-byte blocks), zlib level 6, 16384-byte logical pages`.
    pub fn text(&self) -> String {
        let algo = match self.level {
            Some(level) => format!("{} level {level}", self.algorithm),
            None => self.algorithm.to_string(),
        };
        format!(
            "KEY_BLOCK_SIZE={} ({}-byte blocks), {algo}, {}-byte logical pages",
            self.key_block_size, self.block_size, self.logical_page_size
        )
    }
}

/// What became of one compressed block when it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockState {
    /// All zero: allocated, never written. Its page reads as all zero.
    Empty,
    /// Restored: its header, CRC-32C, padding and payload are sound.
    Intact(ZipHeader),
    /// Could not be restored. `header` is the zip header if it decodes (a CRC mismatch or a
    /// payload that does not inflate leaves it readable).
    Damaged {
        /// The header, if it decodes.
        header: Option<ZipHeader>,
        /// What is wrong.
        error: ZipError,
    },
}

/// A compressed block as read, beside the page it holds.
#[derive(Debug)]
pub struct BlockRead<'a> {
    /// The block's bytes as stored.
    pub bytes: &'a [u8],
    /// Whether it restored, and its header.
    pub state: BlockState,
}

/// One page of the file as [`Space::scan`] hands it over.
#[derive(Debug)]
pub struct Slot<'a> {
    /// The page number (its position in the file).
    pub page_no: u64,
    /// The logical page: as stored in a plain file, inflated from its block in a compressed
    /// one. `None` when the block could not be restored ([`BlockState::Damaged`]). In an
    /// InnoDB ROW_FORMAT=COMPRESSED tablespace, the physical page as stored (not inflated).
    pub page: Option<&'a [u8]>,
    /// For a compressed file, the block and what became of it; `None` for a plain file.
    pub block: Option<BlockRead<'a>>,
}

/// An open tablespace file.
#[derive(Debug)]
pub struct Space {
    path: PathBuf,
    file: File,
    len: u64,
    page_size: PageSize,
    source: PageSizeSource,
    flags: Option<FspFlags>,
    zip: Option<ZipLayout>,
    innodb_zip: Option<usize>,
}

impl Space {
    /// Opens `path` read-only and determines its page size, from `page_size` if given, else from
    /// the FSP flags in the first 1 KiB. A compressed file (block 0 carries the zip magic) is
    /// recognised whatever `page_size` says; its logical page size comes from the zip header,
    /// and `page_size`, if given, overrides it.
    pub fn open(path: &Path, page_size: Option<PageSize>) -> Result<Space, SpaceError> {
        let name = path.display().to_string();
        let open_err = |source| SpaceError::Open {
            path: name.clone(),
            source,
        };
        let file = File::open(path).map_err(open_err)?;
        let meta = file.metadata().map_err(open_err)?;
        if meta.is_dir() {
            return Err(open_err(io::Error::other("is a directory")));
        }
        let len = meta.len();
        if len == 0 {
            return Err(SpaceError::Empty { path: name });
        }
        let probe_len = usize::try_from(len.min(PROBE_BYTES as u64)).unwrap_or(PROBE_BYTES);
        let mut probe = vec![0u8; probe_len];
        file.read_exact_at(&mut probe, 0)
            .map_err(|source| SpaceError::Read {
                path: name.clone(),
                offset: 0,
                len: probe_len,
                source,
            })?;
        let mut space = Space {
            path: path.to_path_buf(),
            file,
            len,
            page_size: PageSize::K16,
            source: PageSizeSource::Flags,
            flags: None,
            zip: None,
            innodb_zip: None,
        };
        if has_zip_magic(&probe) {
            space.open_compressed(&probe, page_size)?;
            return Ok(space);
        }
        let flags = read_flags(&probe).ok();
        let innodb_zip = flags
            .filter(|f| f.validate().is_ok())
            .and_then(FspFlags::zip_size)
            .filter(|&z| page_size.is_none_or(|size| size.bytes() == z));
        (space.page_size, space.source) = match (page_size, innodb_zip, flags) {
            // The flags give the logical size; --page-size named the physical one.
            (Some(_), Some(_), Some(f)) => (
                f.page_size().map_err(|source| SpaceError::BadFlags {
                    path: name.clone(),
                    source,
                })?,
                PageSizeSource::Option,
            ),
            (Some(size), _, _) => (size, PageSizeSource::Option),
            (None, _, _) => (flags_page_size(&name, len, flags)?, PageSizeSource::Flags),
        };
        space.flags = flags;
        space.innodb_zip = innodb_zip;
        Ok(space)
    }

    /// The second half of [`Space::open`] for a compressed file: block size from block 0's
    /// shift size, algorithm and logical page size from the first readable zip header, FSP
    /// flags from page 0 once inflated (absent if block 0 is damaged).
    fn open_compressed(
        &mut self,
        probe: &[u8],
        page_size: Option<PageSize>,
    ) -> Result<(), SpaceError> {
        let name = self.name();
        let ssize = probe
            .get(SSIZE_AT)
            .copied()
            .ok_or(SpaceError::TruncatedBlock {
                path: name.clone(),
                len: self.len,
                block: PROBE_BYTES,
            })?;
        let block_size = KeyBlockSize::from_ssize(ssize).ok_or(SpaceError::BadBlockShift {
            path: name.clone(),
            actual: ssize,
        })?;
        let unit = block_size.bytes() as u64;
        if self.len < unit {
            return Err(SpaceError::TruncatedBlock {
                path: name,
                len: self.len,
                block: block_size.bytes(),
            });
        }
        let mut block = vec![0u8; block_size.bytes()];
        self.read_at(&mut block, 0)?;
        let header = match ZipHeader::read(&block) {
            Ok(h) => h,
            Err(source) => {
                // Block 0's header is damaged: any other block of the file tells the same
                // algorithm and logical page size.
                let mut found = None;
                for n in 1..(self.len / unit).min(HEADER_SEARCH_BLOCKS) {
                    let mut other = vec![0u8; block_size.bytes()];
                    self.read_at(&mut other, n * unit)?;
                    if let Ok(h) = ZipHeader::read(&other) {
                        found = Some(h);
                        break;
                    }
                }
                found.ok_or(SpaceError::NoZipHeader {
                    path: name.clone(),
                    source,
                    searched: (self.len / unit).min(HEADER_SEARCH_BLOCKS),
                })?
            }
        };
        self.zip = Some(ZipLayout {
            block_size,
            algorithm: header.algorithm,
        });
        (self.page_size, self.source) = match page_size {
            Some(size) => (size, PageSizeSource::Option),
            None => (header.logical_size, PageSizeSource::ZipHeader),
        };
        let mut page0 = vec![0u8; self.page_size.bytes()];
        if let (BlockState::Intact(_), _) = restore(&mut codec_for(block_size), &block, &mut page0)
        {
            self.flags = read_flags(&page0).ok();
        }
        Ok(())
    }

    /// The file's path for messages.
    pub fn name(&self) -> String {
        self.path.display().to_string()
    }

    /// The file's length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// The (logical) page size in use: the size of the pages callers get.
    pub fn page_size(&self) -> PageSize {
        self.page_size
    }

    /// Where the page size came from.
    pub fn page_size_source(&self) -> PageSizeSource {
        self.source
    }

    /// Page 0's flags, if the file is long enough to hold them (valid or not); for a
    /// compressed file, if block 0 restores.
    pub fn flags(&self) -> Option<FspFlags> {
        self.flags
    }

    /// How pages are compressed in minnow's block format; `None` for other files.
    pub fn zip(&self) -> Option<ZipLayout> {
        self.zip
    }

    /// For an InnoDB ROW_FORMAT=COMPRESSED tablespace, the physical (compressed) page size in
    /// bytes, from the FSP flags' `ZIP_SSIZE`; `None` for other files.
    pub fn innodb_zip(&self) -> Option<usize> {
        self.innodb_zip
    }

    /// Bytes one page takes in the file: the block size or the compressed page size if
    /// compressed, else the page size.
    pub fn physical_page_bytes(&self) -> usize {
        match (self.innodb_zip, self.zip) {
            (Some(zip_size), _) => zip_size,
            (None, Some(z)) => z.block_size.bytes(),
            (None, None) => self.page_size.bytes(),
        }
    }

    /// Checks one page as [`Space::scan`] hands it over under `policy`: with the compressed
    /// page rules ([`checksum::zip::verify`]) in an InnoDB compressed tablespace, else the
    /// ordinary ones.
    pub fn check(&self, page: &[u8], policy: ChecksumPolicy) -> crate::check::PageVerdict {
        if self.innodb_zip.is_some() {
            checksum::zip::verify(page, policy)
        } else {
            crate::check::check(page, policy)
        }
    }

    /// Whole pages (blocks, for a compressed file) in the file.
    pub fn pages(&self) -> u64 {
        self.len / self.physical_page_bytes() as u64
    }

    /// Bytes after the last whole page or block (a partial page), 0 for a well-formed file.
    pub fn trailing_bytes(&self) -> u64 {
        self.len % self.physical_page_bytes() as u64
    }

    /// The checksum policy for this file: `requested`, adjusted to the tablespace's flags as
    /// MariaDB does ([`ChecksumPolicy::for_space`]): a full_crc32 tablespace is checked with
    /// full_crc32. Flags that are invalid or disagree with the page size in use are ignored
    /// (the user overrode them with `--page-size`).
    pub fn policy(&self, requested: ChecksumPolicy) -> ChecksumPolicy {
        match self.flags {
            Some(flags)
                if flags.validate().is_ok() && flags.page_size().ok() == Some(self.page_size) =>
            {
                requested.for_space(flags)
            }
            _ => requested,
        }
    }

    /// Reads whole page `page` into `buf`, which must be one (logical) page long. A compressed
    /// page is inflated; a block that cannot be restored is [`SpaceError::DamagedBlock`]. An
    /// InnoDB compressed page is [`SpaceError::NotDecompressed`] (use [`Space::read_block`]).
    pub fn read_page(&self, page: u64, buf: &mut [u8]) -> Result<(), SpaceError> {
        if let Some(zip_size) = self.innodb_zip {
            self.check_page_no(page)?;
            return Err(SpaceError::NotDecompressed {
                path: self.name(),
                page,
                zip_size,
            });
        }
        let Some(zip) = self.zip else {
            self.check_page_no(page)?;
            return self.read_at(buf, page * self.page_size.bytes() as u64);
        };
        let block = self.read_block(page)?;
        match restore(&mut codec_for(zip.block_size), &block, buf).0 {
            BlockState::Damaged { error, .. } => Err(self.damaged(page, error)),
            _ => Ok(()),
        }
    }

    /// Reads the raw block of page `page` of a compressed file (the physical page of an InnoDB
    /// compressed tablespace, the page itself for a plain file).
    pub fn read_block(&self, page: u64) -> Result<Vec<u8>, SpaceError> {
        self.check_page_no(page)?;
        let unit = self.physical_page_bytes();
        let mut block = vec![0u8; unit];
        self.read_at(&mut block, page * unit as u64)?;
        Ok(block)
    }

    /// The error for page `page`'s damaged block.
    pub fn damaged(&self, page: u64, source: ZipError) -> SpaceError {
        SpaceError::DamagedBlock {
            path: self.name(),
            page,
            offset: page * self.physical_page_bytes() as u64,
            source,
        }
    }

    /// Reads the partial page (or block) at the end of the file, if there is one.
    pub fn read_partial(&self) -> Result<Option<Vec<u8>>, SpaceError> {
        let tail = self.trailing_bytes();
        if tail == 0 {
            return Ok(None);
        }
        let mut buf = vec![0u8; usize::try_from(tail).unwrap_or(0)];
        self.read_at(&mut buf, self.len - tail)?;
        Ok(Some(buf))
    }

    /// Calls `visit` for every whole page in order, reading several pages (or blocks) per
    /// system call; a compressed file's blocks are inflated, and a damaged block is handed
    /// over as such ([`Slot::page`] is `None`), not as an error. An InnoDB compressed page is
    /// handed over as stored. Stops at the first error `visit` returns.
    pub fn scan<E: From<SpaceError>>(
        &self,
        mut visit: impl FnMut(Slot<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let unit = self.physical_page_bytes();
        let total = self.pages();
        let mut buf = vec![0u8; unit * PAGES_PER_READ];
        let mut codec = self.zip.map(|z| codec_for(z.block_size));
        let mut page = vec![
            0u8;
            if self.zip.is_some() {
                self.page_size.bytes()
            } else {
                0
            }
        ];
        let mut first = 0u64;
        while first < total {
            let count = usize::try_from((total - first).min(PAGES_PER_READ as u64))
                .unwrap_or(PAGES_PER_READ);
            let Some(chunk) = buf.get_mut(..count * unit) else {
                break;
            };
            self.read_at(chunk, first * unit as u64)?;
            for (i, raw) in chunk.chunks_exact(unit).enumerate() {
                let page_no = first + i as u64;
                let slot = match codec.as_mut() {
                    None => Slot {
                        page_no,
                        page: Some(raw),
                        block: None,
                    },
                    Some(codec) => {
                        let (state, restored) = restore(codec, raw, &mut page);
                        Slot {
                            page_no,
                            page: restored.then_some(page.as_slice()),
                            block: Some(BlockRead { bytes: raw, state }),
                        }
                    }
                };
                visit(slot)?;
            }
            first += count as u64;
        }
        Ok(())
    }

    fn check_page_no(&self, page: u64) -> Result<(), SpaceError> {
        if page >= self.pages() {
            return Err(SpaceError::NoSuchPage {
                path: self.name(),
                page,
                pages: self.pages(),
            });
        }
        Ok(())
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), SpaceError> {
        self.file
            .read_exact_at(buf, offset)
            .map_err(|source| SpaceError::Read {
                path: self.name(),
                offset,
                len: buf.len(),
                source,
            })
    }
}

/// Restores `block` into the logical page `page` (one page long) and says how that went;
/// the second value is true when `page` holds the restored bytes (an intact or an all-zero
/// block). On damage `page` is zeroed.
pub fn restore(codec: &mut Codec, block: &[u8], page: &mut [u8]) -> (BlockState, bool) {
    if block.iter().all(|&b| b == 0) {
        page.fill(0);
        return (BlockState::Empty, true);
    }
    match codec.decompress_into(block, page, &mut ZipStats::default()) {
        Ok(header) => (BlockState::Intact(header), true),
        Err(error) => {
            page.fill(0);
            let header = ZipHeader::read(block).ok();
            (BlockState::Damaged { header, error }, false)
        }
    }
}

/// A codec for restoring blocks of `block_size` (the algorithm is read from each block).
pub fn codec_for(block_size: KeyBlockSize) -> Codec {
    Codec::new(ZipConfig::new(block_size, Algorithm::default()))
}

/// True when `probe` (the file's first bytes) carries minnow's zip magic after the FIL header:
/// block 0 of a compressed tablespace.
fn has_zip_magic(probe: &[u8]) -> bool {
    minnow_page::bytes::read_u32(probe, HEADER_OFFSET).is_ok_and(|m| m == MAGIC)
}

/// The page size the flags give, or the reason they cannot be used.
fn flags_page_size(path: &str, len: u64, flags: Option<FspFlags>) -> Result<PageSize, SpaceError> {
    let flags = flags.ok_or_else(|| SpaceError::TooShort {
        path: path.to_string(),
        len,
    })?;
    flags.validate().map_err(|source| SpaceError::BadFlags {
        path: path.to_string(),
        source,
    })?;
    flags.page_size().map_err(|source| SpaceError::BadFlags {
        path: path.to_string(),
        source,
    })
}
