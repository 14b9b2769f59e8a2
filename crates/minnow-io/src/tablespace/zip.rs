//! A compressed tablespace's blocks: what [`Tablespace`] does when each page is stored
//! compressed into a `KEY_BLOCK_SIZE` block (see the parent module's "Compressed tablespaces").
//!
//! A page goes to disk as a block: its FIL header verbatim (so a block is recognisable without
//! inflating it), minnow's zip header, the compressed body, padding and the FIL trailer. The
//! buffer pool keeps a page's block as its compressed copy; [`Tablespace::compress_body`]
//! checks at a mini-transaction's commit that a changed page still fits, and
//! [`Tablespace::block_for`] reuses that block when the page is written. Reading inflates and
//! verifies ([`Tablespace::restore_block`]); block 0 tells [`Tablespace::open`] the block size
//! before anything else is known ([`probe_block`], [`read_block0`]).

use std::path::Path;
use std::sync::{Mutex, PoisonError};

use minnow_page::checksum::Verdict;
use minnow_page::fil;
use minnow_page::fsp::{self, FspFlags};
use minnow_zip::{Codec, KeyBlockSize, Outcome, ZipConfig, ZipHeader, ZipStats};

use super::{Tablespace, bad};
use crate::{AlignedBuf, FileIo, IoError};

/// What a compressed tablespace keeps besides its file: the block settings pages are
/// compressed with, idle codecs (each holds a compressor's working memory, a few hundred KiB,
/// so they are reused rather than made per page), and the counters of every compression and
/// decompression done for this file.
#[derive(Debug)]
pub(super) struct Zip {
    pub(super) config: ZipConfig,
    codecs: Mutex<Vec<Codec>>,
    pub(super) stats: Mutex<ZipStats>,
}

impl Zip {
    pub(super) fn new(config: ZipConfig) -> Zip {
        Zip {
            config,
            codecs: Mutex::new(Vec::new()),
            stats: Mutex::new(ZipStats::default()),
        }
    }

    /// Runs `f` with an idle codec (made if none is idle) and adds what it did to the counters.
    fn with_codec<R>(&self, f: impl FnOnce(&mut Codec, &mut ZipStats) -> R) -> R {
        let taken = self
            .codecs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let mut codec = taken.unwrap_or_else(|| Codec::new(self.config));
        let mut stats = ZipStats::default();
        let result = f(&mut codec, &mut stats);
        self.codecs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(codec);
        self.stats
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .add(&stats);
        result
    }
}

impl Tablespace {
    /// Reads the raw block of page `page_no` of a compressed tablespace into `block` (exactly
    /// one block long; aligned for `O_DIRECT`), unchecked: what the buffer pool keeps as a
    /// page's compressed copy, and what the inspector measures. For a plain tablespace this is
    /// [`Tablespace::read_page_unverified`].
    pub fn read_block(&self, page_no: u32, block: &mut [u8]) -> Result<(), IoError> {
        let offset = self.locate_block(page_no, block.len())?;
        self.file.read_at(block, offset)
    }

    /// Checks the page number and that `len` is one block (one page, if plain); returns the
    /// byte offset.
    fn locate_block(&self, page_no: u32, len: usize) -> Result<u64, IoError> {
        self.locate_len(page_no, len, self.physical_page_bytes())
    }

    /// Inflates the block of page `page_no` into the logical page `page` (no page checksum
    /// check: [`Tablespace::decode_block`] does both). An all-zero block gives an all-zero page.
    pub fn restore_block(
        &self,
        page_no: u32,
        block: &[u8],
        page: &mut [u8],
    ) -> Result<(), IoError> {
        let Some(zip) = &self.zip else {
            if block.len() != page.len() {
                return Err(IoError::BufferSize {
                    path: self.path.clone(),
                    expected: page.len(),
                    actual: block.len(),
                });
            }
            page.copy_from_slice(block);
            return Ok(());
        };
        if block.iter().all(|&b| b == 0) {
            page.fill(0);
            return Ok(());
        }
        zip.with_codec(|codec, stats| codec.decompress_into(block, page, stats))
            .map(|_| ())
            .map_err(|source| IoError::ZipDamaged {
                path: self.path.clone(),
                page_no,
                source,
            })
    }

    /// [`Tablespace::restore_block`] and then the checks of [`Tablespace::read_page`]: the
    /// restored page's checksum and page number.
    pub fn decode_block(
        &self,
        page_no: u32,
        block: &[u8],
        page: &mut [u8],
    ) -> Result<Verdict, IoError> {
        self.restore_block(page_no, block, page)?;
        self.verify(page_no, page)
    }

    /// The fit check of a compressed tablespace: compresses the body of the logical `page`
    /// into `block` (one block long) and says whether it fits. The FIL header and trailer are
    /// not part of the payload (the block format keeps them verbatim), so a page found to fit
    /// here still fits once its LSN and checksum are stamped; `block` can then be handed to
    /// [`Tablespace::block_for`] instead of compressing again. Counted in
    /// [`Tablespace::zip_stats`]. A plain tablespace has nothing to check: it fits.
    pub fn compress_body(&self, page: &[u8], block: &mut [u8]) -> Result<Outcome, IoError> {
        let Some(zip) = &self.zip else {
            return Ok(Outcome::Fits {
                payload_len: page.len(),
            });
        };
        let page_no = minnow_page::bytes::read_u32(page, fil::PAGE_NO).unwrap_or(0);
        zip.with_codec(|codec, stats| codec.compress_into(page, block, stats))
            .map_err(|source| IoError::ZipDamaged {
                path: self.path.clone(),
                page_no,
                source,
            })
    }

    /// The block to write for the stamped logical `page` of a compressed tablespace: `cached`
    /// (a block [`Tablespace::compress_body`] made from the same body) given the page's new
    /// FIL header and trailer, or else the page compressed now. A body that does not fit is
    /// [`IoError::DoesNotFit`]. For a plain tablespace the block is the page itself.
    pub fn block_for(
        &self,
        page_no: u32,
        page: &[u8],
        cached: Option<&[u8]>,
    ) -> Result<AlignedBuf, IoError> {
        let mut block = AlignedBuf::new(self.physical_page_bytes())?;
        let Some(zip) = &self.zip else {
            block.copy_from_slice(page);
            return Ok(block);
        };
        if let Some(c) = cached.filter(|c| c.len() == block.len()) {
            block.copy_from_slice(c);
            if minnow_zip::format::reheader(&mut block, page).is_ok() {
                return Ok(block);
            }
        }
        let outcome = zip
            .with_codec(|codec, stats| codec.compress_into(page, &mut block, stats))
            .map_err(|source| IoError::ZipDamaged {
                path: self.path.clone(),
                page_no,
                source,
            })?;
        match outcome {
            Outcome::Fits { .. } => Ok(block),
            Outcome::DoesNotFit {
                block_size,
                capacity,
            } => Err(IoError::DoesNotFit {
                path: self.path.clone(),
                page_no,
                block: block_size.bytes(),
                capacity,
            }),
        }
    }

    /// Writes a block made by [`Tablespace::block_for`] as page `page_no` (no stamping: the
    /// block carries the stamped header). Durable after [`Tablespace::sync`].
    pub fn write_block(&self, page_no: u32, block: &[u8]) -> Result<(), IoError> {
        let offset = self.locate_block(page_no, block.len())?;
        self.file.write_at(block, offset)
    }

    /// [`Tablespace::write_page`] for a compressed tablespace's page whose block the caller
    /// may already have (`cached`, see [`Tablespace::block_for`]): stamps the page, then
    /// writes the cached block with the page's new header, or the page compressed now.
    pub fn write_page_with(
        &self,
        page_no: u32,
        buf: &mut [u8],
        cached: Option<&[u8]>,
    ) -> Result<(), IoError> {
        let offset = self.locate(page_no, buf.len())?;
        self.stamp(page_no, buf)?;
        let block = self.block_for(page_no, buf, cached)?;
        self.file.write_at(&block, offset)
    }
}

/// The block size if `probe` (the file's first bytes) starts like a compressed block: the
/// verbatim FIL header, then minnow's zip magic and a block shift size.
pub(super) fn probe_block(probe: &[u8]) -> Option<KeyBlockSize> {
    let magic = minnow_page::bytes::read_u32(probe, minnow_zip::format::HEADER_OFFSET).ok()?;
    if magic != minnow_zip::format::MAGIC {
        return None;
    }
    let ssize = probe.get(minnow_zip::format::HEADER_OFFSET + 7).copied()?;
    Some(KeyBlockSize::from_ssize(ssize).unwrap_or(KeyBlockSize::K1))
}

/// Reads block 0 of a compressed file and returns page 0's FSP flags and the block's settings
/// (which the file's later pages are compressed with). With `verify` false (crash
/// recovery), a block 0 that does not inflate (torn) still gives both: its zip header is in the
/// first sector, and the flags follow from it as [`Tablespace::create_compressed`] wrote them.
pub(super) fn read_block0(
    file: &dyn FileIo,
    path: &Path,
    block_size: KeyBlockSize,
    verify: bool,
) -> Result<(FspFlags, ZipConfig), IoError> {
    let mut block = AlignedBuf::new(block_size.bytes())?;
    file.read_at(&mut block, 0)?;
    let header = ZipHeader::read(&block).map_err(|e| bad(path, &format!("block 0: {e}")))?;
    let config = ZipConfig::new(block_size, header.algorithm);
    let mut page0 = vec![0u8; header.logical_size.bytes()];
    match Codec::new(config).decompress_into(&block, &mut page0, &mut ZipStats::default()) {
        Ok(_) => {
            let flags = fsp::read_flags(&page0).map_err(|e| bad(path, &e.to_string()))?;
            Ok((flags, config))
        }
        Err(_) if !verify => {
            let mut flags = FspFlags::new(header.logical_size, false);
            flags.0 |= u32::from(block_size.ssize()) << 1;
            Ok((flags, config))
        }
        Err(e) => Err(bad(path, &format!("block 0: {e}"))),
    }
}
