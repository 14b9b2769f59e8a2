//! The log file's on-disk structures: the file header, the two checkpoint slots and the block
//! frame.
//!
//! ```text
//! file offset   contents
//! 0             file header block (magic, format, capacity, creator, CRC)
//! 512           checkpoint slot 0
//! 1024          checkpoint slot 1
//! 1536..4096    zero
//! 4096          the circular data area: `capacity` bytes of 512-byte blocks;
//!               the block holding LSN x lives at 4096 + (x - x % 512) % capacity
//! ```
//!
//! The file may end before the data area does: it grows as redo reaches it (see the `log`
//! module), and whatever lies beyond its end reads as zeroes.
//!
//! Checkpoints alternate between the two slots, so a power cut while one slot is being written
//! leaves the other one intact: recovery takes the valid slot with the higher checkpoint number.
//! Every structure ends in a CRC-32C of its other bytes, so a torn or zeroed block is never
//! mistaken for a real one.

use crate::block::{BLOCK_SIZE, DATA_END, HEADER_SIZE, Lsn};
use minnow_page::crc::crc32c;

/// Magic bytes at the start of a minnow redo log file.
pub const MAGIC: [u8; 8] = *b"MNWREDO\x01";
/// The format version this code writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// File offset of checkpoint slot `i`.
pub const fn checkpoint_offset(slot: usize) -> u64 {
    (BLOCK_SIZE * (1 + slot)) as u64
}
/// File offset of the data area.
pub const DATA_AREA: u64 = 4096;

/// How much the log file grows at a time: 1/32 of the capacity (at least 64 blocks, at most
/// the capacity), in whole blocks. The file is always `DATA_AREA` plus a multiple of this, or
/// `DATA_AREA + capacity` once it is full.
pub fn growth_step(capacity: u64) -> u64 {
    let block = BLOCK_SIZE as u64;
    (capacity / 32)
        .div_ceil(block)
        .saturating_mul(block)
        .max(64 * block)
        .min(capacity)
}

/// True if a log file of `len` bytes is one the log could have grown to (see
/// [`growth_step`]; the header alone is what a shrink leaves, see `Log::shrink`): anything
/// else was cut short or extended by something else.
pub fn is_grown_length(capacity: u64, len: u64) -> bool {
    let full = DATA_AREA.saturating_add(capacity);
    let step = growth_step(capacity).max(1);
    len == full || (len >= DATA_AREA && len < full && (len - DATA_AREA).is_multiple_of(step))
}

/// Errors in the log's fixed structures.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    /// The file header's magic bytes are wrong: not a minnow redo log.
    #[error("not a minnow redo log (magic {found:02x?})")]
    BadMagic {
        /// The bytes found.
        found: [u8; 8],
    },
    /// The file header's CRC does not match.
    #[error("redo log header checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    HeaderChecksum {
        /// Stored CRC.
        stored: u32,
        /// Computed CRC.
        computed: u32,
    },
    /// A format version this code does not know.
    #[error("redo log format version {0} is not supported (this build reads version 1)")]
    Version(u32),
    /// The capacity is not a positive multiple of the block size.
    #[error("redo log capacity {0} is not a positive multiple of 512")]
    Capacity(u64),
}

fn put_u64(b: &mut [u8], at: usize, v: u64) {
    if let Some(s) = b.get_mut(at..at + 8) {
        s.copy_from_slice(&v.to_be_bytes());
    }
}
fn put_u32(b: &mut [u8], at: usize, v: u32) {
    if let Some(s) = b.get_mut(at..at + 4) {
        s.copy_from_slice(&v.to_be_bytes());
    }
}
fn put_u16(b: &mut [u8], at: usize, v: u16) {
    if let Some(s) = b.get_mut(at..at + 2) {
        s.copy_from_slice(&v.to_be_bytes());
    }
}
fn get_u64(b: &[u8; BLOCK_SIZE], at: usize) -> u64 {
    let mut a = [0u8; 8];
    if let Some(s) = b.get(at..at + 8) {
        a.copy_from_slice(s);
    }
    u64::from_be_bytes(a)
}
fn get_u32(b: &[u8; BLOCK_SIZE], at: usize) -> u32 {
    let mut a = [0u8; 4];
    if let Some(s) = b.get(at..at + 4) {
        a.copy_from_slice(s);
    }
    u32::from_be_bytes(a)
}
fn get_u16(b: &[u8; BLOCK_SIZE], at: usize) -> u16 {
    let mut a = [0u8; 2];
    if let Some(s) = b.get(at..at + 2) {
        a.copy_from_slice(s);
    }
    u16::from_be_bytes(a)
}

/// Computes and stores the CRC-32C of bytes `[0, 508)` in the last 4 bytes.
pub fn seal(block: &mut [u8; BLOCK_SIZE]) {
    let crc = crc32c(&block[..DATA_END]);
    put_u32(block, DATA_END, crc);
}

/// The stored and the computed CRC of a block.
pub fn crcs(block: &[u8; BLOCK_SIZE]) -> (u32, u32) {
    (get_u32(block, DATA_END), crc32c(&block[..DATA_END]))
}

/// The log file header (block 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileHeader {
    /// Bytes in the circular data area (a multiple of 512).
    pub capacity: u64,
    /// The LSN the log started at when the file was created.
    pub start_lsn: Lsn,
    /// Who created the file (free text, at most 32 bytes).
    pub creator: String,
}

impl FileHeader {
    /// Encodes the header block.
    pub fn encode(&self) -> [u8; BLOCK_SIZE] {
        let mut b = [0u8; BLOCK_SIZE];
        b[..8].copy_from_slice(&MAGIC);
        put_u32(&mut b, 8, FORMAT_VERSION);
        put_u64(&mut b, 12, self.capacity);
        put_u64(&mut b, 20, self.start_lsn.0);
        let creator = self.creator.as_bytes();
        let n = creator.len().min(32);
        b[28..28 + n].copy_from_slice(&creator[..n]);
        seal(&mut b);
        b
    }

    /// Decodes and checks the header block.
    pub fn decode(b: &[u8; BLOCK_SIZE]) -> Result<FileHeader, FormatError> {
        let mut magic = [0u8; 8];
        magic.copy_from_slice(&b[..8]);
        if magic != MAGIC {
            return Err(FormatError::BadMagic { found: magic });
        }
        let (stored, computed) = crcs(b);
        if stored != computed {
            return Err(FormatError::HeaderChecksum { stored, computed });
        }
        let version = get_u32(b, 8);
        if version != FORMAT_VERSION {
            return Err(FormatError::Version(version));
        }
        let capacity = get_u64(b, 12);
        if capacity == 0 || !capacity.is_multiple_of(BLOCK_SIZE as u64) {
            return Err(FormatError::Capacity(capacity));
        }
        let creator_bytes = &b[28..60];
        let end = creator_bytes.iter().position(|&c| c == 0).unwrap_or(32);
        Ok(FileHeader {
            capacity,
            start_lsn: Lsn(get_u64(b, 20)),
            creator: String::from_utf8_lossy(&creator_bytes[..end]).into_owned(),
        })
    }
}

/// One checkpoint slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checkpoint {
    /// Increases with every checkpoint; the slot is `no % 2`.
    pub no: u64,
    /// Recovery starts scanning here: every change before it is in the data files.
    pub lsn: Lsn,
}

impl Checkpoint {
    /// Encodes the slot block.
    pub fn encode(&self) -> [u8; BLOCK_SIZE] {
        let mut b = [0u8; BLOCK_SIZE];
        put_u64(&mut b, 0, self.no);
        put_u64(&mut b, 8, self.lsn.0);
        seal(&mut b);
        b
    }

    /// Decodes a slot; `None` if its CRC fails or it was never written.
    pub fn decode(b: &[u8; BLOCK_SIZE]) -> Option<Checkpoint> {
        let (stored, computed) = crcs(b);
        let cp = Checkpoint {
            no: get_u64(b, 0),
            lsn: Lsn(get_u64(b, 8)),
        };
        (stored == computed && cp.lsn.0 != 0 && cp.lsn.is_data_position()).then_some(cp)
    }
}

/// The header of one data block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockHeader {
    /// The LSN of the block's first byte.
    pub lsn: Lsn,
    /// Bytes of the block in use, header included: `20..=508`.
    pub data_len: u16,
    /// Offset of the first group that starts in this block, or 0.
    pub first_group: u16,
    /// Every LSN below this was durable (synced) when this block was written. Recovery uses it
    /// to tell a torn tail (damage after the last sync: discard) from damage in the middle of
    /// the log (an error).
    pub flushed_lsn: Lsn,
}

impl BlockHeader {
    /// Writes the header into a block (the CRC is sealed separately).
    pub fn write(&self, b: &mut [u8; BLOCK_SIZE]) {
        put_u64(b, 0, self.lsn.0);
        put_u16(b, 8, self.data_len);
        put_u16(b, 10, self.first_group);
        put_u64(b, 12, self.flushed_lsn.0);
    }

    /// Reads the header of a block.
    pub fn read(b: &[u8; BLOCK_SIZE]) -> BlockHeader {
        BlockHeader {
            lsn: Lsn(get_u64(b, 0)),
            data_len: get_u16(b, 8),
            first_group: get_u16(b, 10),
            flushed_lsn: Lsn(get_u64(b, 12)),
        }
    }

    /// True if the block is a sealed, plausible block for position `expected`.
    pub fn is_valid_at(b: &[u8; BLOCK_SIZE], expected: Lsn) -> bool {
        let h = BlockHeader::read(b);
        let (stored, computed) = crcs(b);
        stored == computed
            && h.lsn == expected
            && usize::from(h.data_len) >= HEADER_SIZE
            && usize::from(h.data_len) <= DATA_END
            && (h.first_group == 0
                || (usize::from(h.first_group) >= HEADER_SIZE && h.first_group < h.data_len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_damage() {
        let h = FileHeader {
            capacity: 1 << 20,
            start_lsn: Lsn(8192),
            creator: "minnow test".into(),
        };
        let mut b = h.encode();
        assert_eq!(FileHeader::decode(&b).unwrap(), h);
        b[15] ^= 1;
        assert!(matches!(
            FileHeader::decode(&b),
            Err(FormatError::HeaderChecksum { .. })
        ));
        b[0] = b'X';
        assert!(matches!(
            FileHeader::decode(&b),
            Err(FormatError::BadMagic { .. })
        ));
    }

    #[test]
    fn checkpoint_round_trip_and_zero_slot() {
        let cp = Checkpoint {
            no: 7,
            lsn: Lsn(8192 + 20),
        };
        assert_eq!(Checkpoint::decode(&cp.encode()), Some(cp));
        assert_eq!(Checkpoint::decode(&[0u8; BLOCK_SIZE]), None);
        let mut torn = cp.encode();
        torn[9] ^= 0x40;
        assert_eq!(Checkpoint::decode(&torn), None);
    }

    #[test]
    fn block_validity() {
        let mut b = [0u8; BLOCK_SIZE];
        let h = BlockHeader {
            lsn: Lsn(8192),
            data_len: 100,
            first_group: 20,
            flushed_lsn: Lsn(0),
        };
        h.write(&mut b);
        seal(&mut b);
        assert!(BlockHeader::is_valid_at(&b, Lsn(8192)));
        assert!(!BlockHeader::is_valid_at(&b, Lsn(8192 + 512)));
        b[50] = 1;
        assert!(!BlockHeader::is_valid_at(&b, Lsn(8192)));
    }
}
