//! Compressing a page into a block and restoring it.
//!
//! A [`Codec`] owns the codecs' working memory (zlib's compressor keeps a 32 KiB window, hash
//! chains and an output buffer, a few hundred KiB in all; its decompressor its Huffman tables),
//! so a caller compressing many pages keeps one per thread and allocates that memory once
//! instead of per page.

use std::time::Instant;

use miniz_oxide::DataFormat;
use miniz_oxide::deflate::core::{CompressorOxide, TDEFLFlush, TDEFLStatus};
use miniz_oxide::inflate::TINFLStatus;
use miniz_oxide::inflate::core::{DecompressorOxide, inflate_flags};
use minnow_page::{PageSize, bytes, fil};

use crate::format::{self, PAYLOAD_OFFSET, ZipHeader};
use crate::{Algorithm, KeyBlockSize, ZipConfig, ZipError, ZipStats};

/// What [`Codec::compress_into`] achieved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The page fits: the block is complete (headers, payload, padding, checksum).
    Fits {
        /// Length of the compressed payload.
        payload_len: usize,
    },
    /// The page does not compress into the block: InnoDB's **compression failure**, after
    /// which its B-tree splits the page. The block buffer's contents are unspecified and must
    /// not be written anywhere.
    DoesNotFit {
        /// The block size that was too small.
        block_size: KeyBlockSize,
        /// The payload bytes that block has room for.
        capacity: usize,
    },
}

/// What [`Codec::compress`] returns: a block of its own, or the failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compressed {
    /// The compressed block, exactly `block_size` bytes.
    Block(Vec<u8>),
    /// The page does not fit (see [`Outcome::DoesNotFit`]).
    DoesNotFit {
        /// The block size that was too small.
        block_size: KeyBlockSize,
        /// The payload bytes that block has room for.
        capacity: usize,
    },
}

/// A page compressor and decompressor with its working memory. Compressing follows the
/// [`ZipConfig`] it was made with; decompressing reads the algorithm from each block.
pub struct Codec {
    config: ZipConfig,
    deflater: Box<CompressorOxide>,
    inflater: Box<DecompressorOxide>,
    lz4_scratch: Vec<u8>,
}

impl std::fmt::Debug for Codec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Codec")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Codec {
    /// A codec that compresses with `config`.
    pub fn new(config: ZipConfig) -> Codec {
        Codec {
            config,
            deflater: Box::default(),
            inflater: Box::default(),
            lz4_scratch: Vec::new(),
        }
    }

    /// The settings pages are compressed with.
    pub fn config(&self) -> ZipConfig {
        self.config
    }

    /// Compresses the logical `page` (4 to 64 KiB) into `block`, which must be exactly the
    /// configured block size and no larger than the page. Returns [`Outcome::DoesNotFit`]
    /// when the page does not compress enough (not an error); errors are for buffers of the
    /// wrong size. Adds the attempt to `stats`.
    pub fn compress_into(
        &mut self,
        page: &[u8],
        block: &mut [u8],
        stats: &mut ZipStats,
    ) -> Result<Outcome, ZipError> {
        let started = Instant::now();
        let logical = PageSize::from_bytes(page.len())
            .map_err(|_| ZipError::BadPageSize { bytes: page.len() })?;
        let block_size = self.config.block_size;
        if block.len() != block_size.bytes() {
            return Err(ZipError::BadBlockSize {
                expected: block_size.bytes().to_string(),
                actual: block.len(),
            });
        }
        if block_size.bytes() > logical.bytes() {
            return Err(ZipError::BlockLargerThanPage {
                block: block_size.bytes(),
                page: logical.bytes(),
            });
        }
        bytes::slice_mut(block, 0, fil::HEADER_SIZE)?.copy_from_slice(bytes::slice(
            page,
            0,
            fil::HEADER_SIZE,
        )?);
        let trailer_at = logical.bytes() - format::TRAILER_LEN;
        bytes::slice_mut(
            block,
            block.len() - format::TRAILER_LEN,
            format::TRAILER_LEN,
        )?
        .copy_from_slice(bytes::slice(page, trailer_at, format::TRAILER_LEN)?);
        let body = bytes::slice(page, fil::HEADER_SIZE, trailer_at - fil::HEADER_SIZE)?;
        let capacity = format::capacity(block_size);
        let out = bytes::slice_mut(block, PAYLOAD_OFFSET, capacity)?;
        let written = match self.config.algorithm {
            Algorithm::Zlib(level) => deflate_into(&mut self.deflater, level.get(), body, out)?,
            Algorithm::Lz4 => lz4_into(&mut self.lz4_scratch, body, out)?,
        };
        let outcome = match written {
            Some(payload_len) => {
                format::seal(
                    block,
                    self.config.algorithm,
                    block_size,
                    logical,
                    payload_len,
                )?;
                stats.compress_bytes_out += payload_len as u64;
                Outcome::Fits { payload_len }
            }
            None => {
                stats.compress_failures += 1;
                Outcome::DoesNotFit {
                    block_size,
                    capacity,
                }
            }
        };
        stats.compress_ops += 1;
        stats.compress_bytes_in += page.len() as u64;
        stats.compress_time += started.elapsed();
        Ok(outcome)
    }

    /// [`Codec::compress_into`] into a new block.
    pub fn compress(&mut self, page: &[u8], stats: &mut ZipStats) -> Result<Compressed, ZipError> {
        let mut block = vec![0u8; self.config.block_size.bytes()];
        Ok(match self.compress_into(page, &mut block, stats)? {
            Outcome::Fits { .. } => Compressed::Block(block),
            Outcome::DoesNotFit {
                block_size,
                capacity,
            } => Compressed::DoesNotFit {
                block_size,
                capacity,
            },
        })
    }

    /// Restores the logical page held in `block` into `page`, which must be the logical size
    /// the block records. Checks the header, the CRC-32C, the padding, the payload stream and
    /// the restored length; any damage is a [`ZipError`] naming it, never a panic. On error
    /// `page` holds unspecified bytes. Adds the attempt to `stats`.
    pub fn decompress_into(
        &mut self,
        block: &[u8],
        page: &mut [u8],
        stats: &mut ZipStats,
    ) -> Result<ZipHeader, ZipError> {
        let started = Instant::now();
        let result = self.restore(block, page);
        stats.decompress_ops += 1;
        match &result {
            Ok(header) => {
                stats.decompress_bytes_in += header.payload_len as u64;
                stats.decompress_bytes_out += page.len() as u64;
            }
            Err(_) => stats.decompress_errors += 1,
        }
        stats.decompress_time += started.elapsed();
        result
    }

    /// [`Codec::decompress_into`] into a new page of the size the block records.
    pub fn decompress(&mut self, block: &[u8], stats: &mut ZipStats) -> Result<Vec<u8>, ZipError> {
        let size = match ZipHeader::read(block) {
            Ok(header) => header.logical_size.bytes(),
            Err(e) => {
                stats.decompress_ops += 1;
                stats.decompress_errors += 1;
                return Err(e);
            }
        };
        let mut page = vec![0u8; size];
        self.decompress_into(block, &mut page, stats)?;
        Ok(page)
    }

    fn restore(&mut self, block: &[u8], page: &mut [u8]) -> Result<ZipHeader, ZipError> {
        if KeyBlockSize::from_bytes(block.len()).is_none() {
            return Err(ZipError::BadBlockSize {
                expected: "1, 2, 4, 8 or 16 KiB".to_owned(),
                actual: block.len(),
            });
        }
        let header = ZipHeader::read(block)?;
        header.verify(block)?;
        let logical = header.logical_size.bytes();
        if page.len() != logical {
            return Err(ZipError::OutputSizeMismatch {
                expected: logical,
                actual: page.len(),
            });
        }
        bytes::slice_mut(page, 0, fil::HEADER_SIZE)?.copy_from_slice(bytes::slice(
            block,
            0,
            fil::HEADER_SIZE,
        )?);
        let trailer_at = logical - format::TRAILER_LEN;
        bytes::slice_mut(page, trailer_at, format::TRAILER_LEN)?.copy_from_slice(bytes::slice(
            block,
            block.len() - format::TRAILER_LEN,
            format::TRAILER_LEN,
        )?);
        let payload = header.payload(block)?;
        let body = bytes::slice_mut(page, fil::HEADER_SIZE, trailer_at - fil::HEADER_SIZE)?;
        match header.algorithm {
            Algorithm::Zlib(_) => inflate_into(&mut self.inflater, payload, body)?,
            Algorithm::Lz4 => lz4_restore(payload, body)?,
        }
        Ok(header)
    }
}

/// Deflates `input` (zlib format) into `out`; `None` when it does not fit. Stops as soon as
/// `out` is full, as InnoDB's `page_zip_compress` does with a bounded `avail_out`.
fn deflate_into(
    deflater: &mut CompressorOxide,
    level: u8,
    input: &[u8],
    out: &mut [u8],
) -> Result<Option<usize>, ZipError> {
    deflater.reset();
    deflater.set_format_and_level(DataFormat::Zlib, level);
    let (mut in_pos, mut out_pos) = (0usize, 0usize);
    loop {
        let rest_in = input.get(in_pos..).unwrap_or_default();
        let rest_out = out.get_mut(out_pos..).unwrap_or_default();
        let (status, read, wrote) =
            miniz_oxide::deflate::core::compress(deflater, rest_in, rest_out, TDEFLFlush::Finish);
        in_pos += read;
        out_pos += wrote;
        match status {
            TDEFLStatus::Done => return Ok(Some(out_pos)),
            TDEFLStatus::Okay if out_pos >= out.len() => return Ok(None),
            TDEFLStatus::Okay if read == 0 && wrote == 0 => {
                return Err(ZipError::Compressor {
                    algorithm: "zlib",
                    reason: format!("no progress at input {in_pos}, output {out_pos}"),
                });
            }
            TDEFLStatus::Okay => {}
            other => {
                return Err(ZipError::Compressor {
                    algorithm: "zlib",
                    reason: format!("status {other:?}"),
                });
            }
        }
    }
}

/// Inflates the zlib stream `payload` into exactly `out` (Adler-32 checked).
fn inflate_into(
    inflater: &mut DecompressorOxide,
    payload: &[u8],
    out: &mut [u8],
) -> Result<(), ZipError> {
    inflater.init();
    let flags = inflate_flags::TINFL_FLAG_PARSE_ZLIB_HEADER
        | inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF;
    let (status, consumed, written) =
        miniz_oxide::inflate::core::decompress(inflater, payload, out, 0, flags);
    let corrupt = |reason: &str| ZipError::CorruptPayload {
        algorithm: "zlib",
        reason: reason.to_owned(),
    };
    match status {
        TINFLStatus::Done if written != out.len() => Err(ZipError::LengthMismatch {
            algorithm: "zlib",
            expected: out.len(),
            actual: written,
        }),
        TINFLStatus::Done if consumed != payload.len() => Err(ZipError::TrailingPayload {
            consumed,
            payload_len: payload.len(),
        }),
        TINFLStatus::Done => Ok(()),
        TINFLStatus::HasMoreOutput => Err(ZipError::LengthMismatch {
            algorithm: "zlib",
            expected: out.len(),
            actual: out.len() + 1,
        }),
        TINFLStatus::NeedsMoreInput | TINFLStatus::FailedCannotMakeProgress => Err(corrupt(
            &format!("stream is truncated after {written} output bytes"),
        )),
        TINFLStatus::Adler32Mismatch => {
            Err(corrupt("Adler-32 of the inflated bytes does not match"))
        }
        TINFLStatus::Failed => Err(corrupt("invalid deflate stream")),
        TINFLStatus::BadParam => Err(corrupt("decoder rejected its parameters")),
        other => Err(corrupt(&format!("decoder status {other:?}"))),
    }
}

/// LZ4-compresses `input` into `out`; `None` when it does not fit. `lz4_flex` wants room for
/// the worst case, so the block is built in `scratch` and copied.
fn lz4_into(
    scratch: &mut Vec<u8>,
    input: &[u8],
    out: &mut [u8],
) -> Result<Option<usize>, ZipError> {
    scratch.resize(lz4_flex::block::get_maximum_output_size(input.len()), 0);
    let n = lz4_flex::block::compress_into(input, scratch).map_err(|e| ZipError::Compressor {
        algorithm: "lz4",
        reason: e.to_string(),
    })?;
    match (out.get_mut(..n), scratch.get(..n)) {
        (Some(dst), Some(src)) => {
            dst.copy_from_slice(src);
            Ok(Some(n))
        }
        _ => Ok(None),
    }
}

/// Inflates the LZ4 block `payload` into exactly `out`.
fn lz4_restore(payload: &[u8], out: &mut [u8]) -> Result<(), ZipError> {
    match lz4_flex::block::decompress_into(payload, out) {
        Ok(n) if n == out.len() => Ok(()),
        Ok(n) => Err(ZipError::LengthMismatch {
            algorithm: "lz4",
            expected: out.len(),
            actual: n,
        }),
        Err(lz4_flex::block::DecompressError::OutputTooSmall { expected, .. }) => {
            Err(ZipError::LengthMismatch {
                algorithm: "lz4",
                expected: out.len(),
                actual: expected.max(out.len() + 1),
            })
        }
        Err(e) => Err(ZipError::CorruptPayload {
            algorithm: "lz4",
            reason: e.to_string(),
        }),
    }
}
