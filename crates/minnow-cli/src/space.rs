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

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use minnow_page::checksum::ChecksumPolicy;
use minnow_page::fsp::{FLAGS_OFFSET, FspFlags, read_flags};
use minnow_page::{PageError, PageSize};

/// How many bytes are read first to find the flags (`UNIV_ZIP_SIZE_MIN`).
pub const PROBE_BYTES: usize = 1024;

/// Pages read per `pread` while scanning a whole file.
const PAGES_PER_READ: usize = 64;

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
    /// A ROW_FORMAT=COMPRESSED tablespace: its pages are not stored at the logical page size.
    #[error(
        "{path}: ROW_FORMAT=COMPRESSED tablespace (FSP flags {flags:#x}, {zip_size}-byte physical \
         pages): compressed pages are not supported; pass --page-size to read it anyway"
    )]
    Compressed {
        /// The file.
        path: String,
        /// The flags.
        flags: u32,
        /// The physical page size.
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
}

/// Where the page size in use came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PageSizeSource {
    /// Page 0's FSP flags.
    Flags,
    /// The `--page-size` option.
    Option,
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
}

impl Space {
    /// Opens `path` read-only and determines its page size, from `page_size` if given, else from
    /// the FSP flags in the first 1 KiB.
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
        let flags = read_flags(&probe).ok();
        let (page_size, source) = match page_size {
            Some(size) => (size, PageSizeSource::Option),
            None => (flags_page_size(&name, len, flags)?, PageSizeSource::Flags),
        };
        Ok(Space {
            path: path.to_path_buf(),
            file,
            len,
            page_size,
            source,
            flags,
        })
    }

    /// The file's path for messages.
    pub fn name(&self) -> String {
        self.path.display().to_string()
    }

    /// The file's length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// The page size in use.
    pub fn page_size(&self) -> PageSize {
        self.page_size
    }

    /// Where the page size came from.
    pub fn page_size_source(&self) -> PageSizeSource {
        self.source
    }

    /// Page 0's flags, if the file is long enough to hold them (valid or not).
    pub fn flags(&self) -> Option<FspFlags> {
        self.flags
    }

    /// Whole pages in the file.
    pub fn pages(&self) -> u64 {
        self.len / self.page_size.bytes() as u64
    }

    /// Bytes after the last whole page (a partial page), 0 for a well-formed file.
    pub fn trailing_bytes(&self) -> u64 {
        self.len % self.page_size.bytes() as u64
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

    /// Reads whole page `page` into `buf`, which must be one page long.
    pub fn read_page(&self, page: u64, buf: &mut [u8]) -> Result<(), SpaceError> {
        if page >= self.pages() {
            return Err(SpaceError::NoSuchPage {
                path: self.name(),
                page,
                pages: self.pages(),
            });
        }
        self.read_at(buf, page * self.page_size.bytes() as u64)
    }

    /// Reads the partial page at the end of the file, if there is one.
    pub fn read_partial(&self) -> Result<Option<Vec<u8>>, SpaceError> {
        let tail = self.trailing_bytes();
        if tail == 0 {
            return Ok(None);
        }
        let mut buf = vec![0u8; usize::try_from(tail).unwrap_or(0)];
        self.read_at(&mut buf, self.len - tail)?;
        Ok(Some(buf))
    }

    /// Calls `visit(page_no, page)` for every whole page in order, reading several pages per
    /// system call. Stops at the first error `visit` returns.
    pub fn scan<E: From<SpaceError>>(
        &self,
        mut visit: impl FnMut(u64, &[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let size = self.page_size.bytes();
        let total = self.pages();
        let mut buf = vec![0u8; size * PAGES_PER_READ];
        let mut first = 0u64;
        while first < total {
            let count = usize::try_from((total - first).min(PAGES_PER_READ as u64))
                .unwrap_or(PAGES_PER_READ);
            let Some(chunk) = buf.get_mut(..count * size) else {
                break;
            };
            self.read_at(chunk, first * size as u64)?;
            for (i, page) in chunk.chunks_exact(size).enumerate() {
                visit(first + i as u64, page)?;
            }
            first += count as u64;
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
    if let Some(zip_size) = flags.zip_size() {
        return Err(SpaceError::Compressed {
            path: path.to_string(),
            flags: flags.0,
            zip_size,
        });
    }
    flags.page_size().map_err(|source| SpaceError::BadFlags {
        path: path.to_string(),
        source,
    })
}
