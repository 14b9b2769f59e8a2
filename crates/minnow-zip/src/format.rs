//! The compressed block format, byte by byte (docs/FORMAT.md, "Compressed blocks").
//!
//! ```text
//! offset  size  field
//!      0    38  the logical page's FIL header, verbatim (page no, LSN, type, space id readable)
//!     38     4  magic 0x6D5A4950 ("mZIP")
//!     42     1  format version (2)
//!     43     1  algorithm: 1 = zlib, 2 = LZ4
//!     44     1  level: zlib 1-9, LZ4 0
//!     45     1  block zip shift size: block bytes = 512 << ssize (1 = 1 KiB ... 5 = 16 KiB)
//!     46     4  logical page size in bytes (4096 ... 65536)
//!     50     4  payload length in bytes
//!     54     4  CRC-32C of bytes [0, 54), the payload and the trailer
//!     58     n  payload: the logical page's body, bytes [38, page size - 8), compressed
//!   58+n        zero padding
//!    B-8     8  the logical page's FIL trailer, verbatim (B = the block size)
//! ```
//!
//! All integers are big-endian, as everywhere in minnow's files. The checksum covers the FIL
//! header, the zip header, the payload and the trailer, so a flipped bit anywhere outside the
//! padding is caught before inflating; the padding is checked to be zero.
//!
//! **Why the FIL header and trailer stay outside the payload.** They are the only bytes the
//! writer changes after a page's content is final: the page LSN (header and trailer) and the
//! checksum are stamped just before the write. Keeping them verbatim means the compressed
//! payload depends on the body alone, so a body that was checked to fit its block at
//! mini-transaction commit still fits when it is written, and a block compressed then can be
//! written later with fresh header bytes ([`reheader`]) instead of being compressed again.
//! (Version 1 compressed the trailer with the body; it was never used by a table.)

use minnow_page::{PageSize, bytes, crc, fil};

use crate::{Algorithm, KeyBlockSize, ZipError};

/// Where the zip header starts: right after the FIL header.
pub const HEADER_OFFSET: usize = fil::HEADER_SIZE;
/// The zip header's length.
pub const HEADER_LEN: usize = 20;
/// Where the payload starts.
pub const PAYLOAD_OFFSET: usize = HEADER_OFFSET + HEADER_LEN;
/// The magic number at [`HEADER_OFFSET`]: `"mZIP"` in ASCII.
pub const MAGIC: u32 = 0x6D5A_4950;
/// The format version this crate writes and reads.
pub const VERSION: u8 = 2;
/// The FIL trailer kept verbatim at the end of every block.
pub const TRAILER_LEN: usize = fil::TRAILER_SIZE;

const MAGIC_AT: usize = HEADER_OFFSET;
const VERSION_AT: usize = HEADER_OFFSET + 4;
const ALGORITHM_AT: usize = HEADER_OFFSET + 5;
const LEVEL_AT: usize = HEADER_OFFSET + 6;
const SSIZE_AT: usize = HEADER_OFFSET + 7;
const LOGICAL_AT: usize = HEADER_OFFSET + 8;
const PAYLOAD_LEN_AT: usize = HEADER_OFFSET + 12;
const CRC_AT: usize = HEADER_OFFSET + 16;

/// The payload bytes a block of `block_size` has room for.
pub const fn capacity(block_size: KeyBlockSize) -> usize {
    block_size.bytes() - PAYLOAD_OFFSET - TRAILER_LEN
}

/// Where the trailer starts in a block of `len` bytes.
fn trailer_at(len: usize) -> usize {
    len.saturating_sub(TRAILER_LEN)
}

/// A block's zip header, decoded and checked for consistency with the block's length (but not
/// against its checksum: see [`ZipHeader::verify`]). Reading it costs no inflating, which is
/// what an inspector listing per-page compressed sizes needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZipHeader {
    /// Algorithm and level.
    pub algorithm: Algorithm,
    /// The block's size.
    pub block_size: KeyBlockSize,
    /// The logical page's size.
    pub logical_size: PageSize,
    /// Length of the compressed payload.
    pub payload_len: usize,
    /// The stored CRC-32C.
    pub crc: u32,
}

impl ZipHeader {
    /// Decodes the header of `block`, checking magic, version, algorithm and level, that the
    /// recorded block size is `block.len()`, that the logical page size is a page size no
    /// smaller than the block, and that the payload fits the block.
    pub fn read(block: &[u8]) -> Result<ZipHeader, ZipError> {
        let magic = bytes::read_u32(block, MAGIC_AT)?;
        if magic != MAGIC {
            return Err(ZipError::BadMagic {
                offset: MAGIC_AT,
                expected: MAGIC,
                actual: magic,
            });
        }
        let version = read_u8(block, VERSION_AT)?;
        if version != VERSION {
            return Err(ZipError::BadVersion {
                expected: VERSION,
                actual: version,
            });
        }
        let algorithm =
            Algorithm::from_stored(read_u8(block, ALGORITHM_AT)?, read_u8(block, LEVEL_AT)?)?;
        let ssize = read_u8(block, SSIZE_AT)?;
        let block_size = KeyBlockSize::from_ssize(ssize)
            .filter(|k| k.bytes() == block.len())
            .ok_or(ZipError::BlockSizeMismatch {
                ssize,
                recorded: KeyBlockSize::from_ssize(ssize).map_or(0, KeyBlockSize::bytes),
                actual: block.len(),
            })?;
        let recorded = bytes::read_u32(block, LOGICAL_AT)?;
        let logical_size = usize::try_from(recorded)
            .ok()
            .and_then(|b| PageSize::from_bytes(b).ok())
            .ok_or(ZipError::BadLogicalSize {
                recorded,
                reason: "not 4, 8, 16, 32 or 64 KiB",
            })?;
        if logical_size.bytes() < block_size.bytes() {
            return Err(ZipError::BadLogicalSize {
                recorded,
                reason: "smaller than the block that holds it",
            });
        }
        let payload_len = bytes::read_u32(block, PAYLOAD_LEN_AT)?;
        let cap = capacity(block_size);
        let payload = usize::try_from(payload_len)
            .ok()
            .filter(|&n| n <= cap)
            .ok_or(ZipError::PayloadTooLong {
                payload_len,
                capacity: cap,
                block: block.len(),
            })?;
        Ok(ZipHeader {
            algorithm,
            block_size,
            logical_size,
            payload_len: payload,
            crc: bytes::read_u32(block, CRC_AT)?,
        })
    }

    /// Checks the stored CRC-32C against the block's bytes and that the padding is zero.
    pub fn verify(&self, block: &[u8]) -> Result<(), ZipError> {
        let computed = block_crc(block, self.payload_len)?;
        if computed != self.crc {
            return Err(ZipError::Checksum {
                stored: self.crc,
                computed,
            });
        }
        let padding_at = PAYLOAD_OFFSET + self.payload_len;
        let padding = bytes::slice(
            block,
            padding_at,
            trailer_at(block.len()).saturating_sub(padding_at),
        )?;
        if let Some((i, &value)) = padding.iter().enumerate().find(|(_, b)| **b != 0) {
            return Err(ZipError::NonZeroPadding {
                offset: padding_at + i,
                value,
            });
        }
        Ok(())
    }

    /// The payload's bytes in `block`.
    pub fn payload<'b>(&self, block: &'b [u8]) -> Result<&'b [u8], ZipError> {
        Ok(bytes::slice(block, PAYLOAD_OFFSET, self.payload_len)?)
    }
}

/// Writes the zip header for a payload of `payload_len` bytes already in place at
/// [`PAYLOAD_OFFSET`], zeroes the padding and stores the CRC-32C. The FIL header must already
/// be in `block[0..38]` and the FIL trailer in the block's last 8 bytes.
pub(crate) fn seal(
    block: &mut [u8],
    algorithm: Algorithm,
    block_size: KeyBlockSize,
    logical_size: PageSize,
    payload_len: usize,
) -> Result<(), ZipError> {
    let too_long = || ZipError::PayloadTooLong {
        payload_len: u32::try_from(payload_len).unwrap_or(u32::MAX),
        capacity: capacity(block_size),
        block: block_size.bytes(),
    };
    let len32 = u32::try_from(payload_len).map_err(|_| too_long())?;
    let logical32 = u32::try_from(logical_size.bytes()).map_err(|_| too_long())?;
    bytes::write_u32(block, MAGIC_AT, MAGIC)?;
    write_u8(block, VERSION_AT, VERSION)?;
    write_u8(block, ALGORITHM_AT, algorithm.id())?;
    write_u8(block, LEVEL_AT, algorithm.level_byte())?;
    write_u8(block, SSIZE_AT, block_size.ssize())?;
    bytes::write_u32(block, LOGICAL_AT, logical32)?;
    bytes::write_u32(block, PAYLOAD_LEN_AT, len32)?;
    let padding_at = PAYLOAD_OFFSET + payload_len;
    if payload_len > capacity(block_size) {
        return Err(too_long());
    }
    bytes::slice_mut(
        block,
        padding_at,
        trailer_at(block.len()).saturating_sub(padding_at),
    )
    .map_err(|_| too_long())?
    .fill(0);
    let crc = block_crc(block, payload_len)?;
    bytes::write_u32(block, CRC_AT, crc)?;
    Ok(())
}

/// Gives a sealed `block` the FIL header and trailer of `page` (the logical page it was
/// compressed from, since stamped with a new LSN and checksum) and recomputes its CRC-32C;
/// the payload is kept. This is how a block compressed when a mini-transaction committed is
/// written later without compressing again: only the header and trailer bytes changed, and
/// they are stored verbatim. Checks that `block` is a sealed block first (the header must
/// read), and that `page`'s length is the logical size it records.
pub fn reheader(block: &mut [u8], page: &[u8]) -> Result<ZipHeader, ZipError> {
    let mut header = ZipHeader::read(block)?;
    if page.len() != header.logical_size.bytes() {
        return Err(ZipError::OutputSizeMismatch {
            expected: header.logical_size.bytes(),
            actual: page.len(),
        });
    }
    bytes::slice_mut(block, 0, fil::HEADER_SIZE)?.copy_from_slice(bytes::slice(
        page,
        0,
        fil::HEADER_SIZE,
    )?);
    let at = trailer_at(block.len());
    bytes::slice_mut(block, at, TRAILER_LEN)?.copy_from_slice(bytes::slice(
        page,
        trailer_at(page.len()),
        TRAILER_LEN,
    )?);
    header.crc = block_crc(block, header.payload_len)?;
    bytes::write_u32(block, CRC_AT, header.crc)?;
    Ok(header)
}

/// CRC-32C of `block[0..CRC_AT]`, the payload and the trailer.
fn block_crc(block: &[u8], payload_len: usize) -> Result<u32, ZipError> {
    let head = bytes::slice(block, 0, CRC_AT)?;
    let payload = bytes::slice(block, PAYLOAD_OFFSET, payload_len)?;
    let trailer = bytes::slice(block, trailer_at(block.len()), TRAILER_LEN)?;
    Ok(crc::crc32c_append(
        crc::crc32c_append(crc::crc32c(head), payload),
        trailer,
    ))
}

fn read_u8(buf: &[u8], offset: usize) -> Result<u8, ZipError> {
    Ok(bytes::slice(buf, offset, 1)?.first().copied().unwrap_or(0))
}

fn write_u8(buf: &mut [u8], offset: usize, value: u8) -> Result<(), ZipError> {
    bytes::slice_mut(buf, offset, 1)?.fill(value);
    Ok(())
}
