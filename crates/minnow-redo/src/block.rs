//! The log's geometry: 512-byte blocks and the LSNs that address their bytes.
//!
//! The redo log is one long stream of bytes. An **LSN** (log sequence number) is a position in
//! that stream: every byte ever appended has one, they only grow, and they are never reused.
//! The stream is cut into 512-byte **blocks**, the unit written to disk, because a disk writes
//! a 512-byte sector atomically: a block is either entirely old or entirely new after a power
//! cut, never half of each.
//!
//! ```text
//!  one block, 512 bytes
//!  0        8        10       12                20                              508     512
//!  +--------+--------+--------+----------------+-------------------------------+-------+
//!  | block  | data   | first  | flushed LSN    |  488 bytes of mtr groups       | CRC-  |
//!  | LSN    | len    | group  | at write time  |                                | 32C   |
//!  +--------+--------+--------+----------------+-------------------------------+-------+
//! ```
//!
//! As in InnoDB, LSNs count the header and trailer bytes too, so the LSN of a byte tells where
//! it sits in its block: `lsn % 512` is always in `[20, 508)` for a data byte. That makes the
//! file offset of any LSN a single division, and lets a block carry its own LSN so that a stale
//! block left from the previous lap of the circular file is recognised at once.

/// Size of a log block.
pub const BLOCK_SIZE: usize = 512;
/// Size of the block header.
pub const HEADER_SIZE: usize = 20;
/// Size of the block trailer (a CRC-32C of the rest of the block).
pub const TRAILER_SIZE: usize = 4;
/// Data bytes per block.
pub const DATA_SIZE: usize = BLOCK_SIZE - HEADER_SIZE - TRAILER_SIZE;
/// Offset of the data end within a block (the trailer's offset).
pub const DATA_END: usize = BLOCK_SIZE - TRAILER_SIZE;

/// The LSN of the first byte of the first block: InnoDB's `LOG_START_LSN` (16 blocks).
pub const START_LSN: Lsn = Lsn(8192);

/// A log sequence number: a position in the redo stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Lsn(pub u64);

impl Lsn {
    /// The first data position of a fresh log.
    pub const FIRST: Lsn = Lsn(START_LSN.0 + HEADER_SIZE as u64);

    /// The LSN of the start of the block containing this LSN.
    #[inline]
    pub const fn block_start(self) -> Lsn {
        Lsn(self.0 - self.0 % BLOCK_SIZE as u64)
    }

    /// This LSN's offset within its block.
    #[inline]
    pub const fn offset_in_block(self) -> usize {
        (self.0 % BLOCK_SIZE as u64) as usize
    }

    /// True if the LSN addresses a data byte (not a header or trailer byte).
    #[inline]
    pub const fn is_data_position(self) -> bool {
        let o = self.offset_in_block();
        o >= HEADER_SIZE && o < DATA_END
    }

    /// The LSN reached after appending `n` data bytes at `self`, skipping headers and
    /// trailers. A position at the very end of a block's data normalises to the first data
    /// byte of the next block, so every LSN this returns is a data position.
    pub const fn advance(self, n: u64) -> Lsn {
        let o = self.offset_in_block() as u64;
        let data_off = o - HEADER_SIZE as u64; // position within this block's data
        let total = data_off + n;
        let blocks = total / DATA_SIZE as u64;
        let rem = total % DATA_SIZE as u64;
        Lsn(self.block_start().0 + blocks * BLOCK_SIZE as u64 + HEADER_SIZE as u64 + rem)
    }

    /// Data bytes between `self` and a later data position `to`.
    pub const fn data_bytes_until(self, to: Lsn) -> u64 {
        let from_blocks = self.0 / BLOCK_SIZE as u64;
        let to_blocks = to.0 / BLOCK_SIZE as u64;
        let from_off = self.offset_in_block() as u64 - HEADER_SIZE as u64;
        let to_off = to.offset_in_block() as u64 - HEADER_SIZE as u64;
        (to_blocks - from_blocks) * DATA_SIZE as u64 + to_off - from_off
    }
}

impl std::fmt::Display for Lsn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advance_skips_headers_and_trailers() {
        let a = Lsn::FIRST;
        assert!(a.is_data_position());
        assert_eq!(a.advance(0), a);
        assert_eq!(a.advance(10), Lsn(8192 + 30));
        // Filling the block exactly lands on the next block's first data byte.
        assert_eq!(a.advance(DATA_SIZE as u64), Lsn(8192 + 512 + 20));
        assert_eq!(a.advance(DATA_SIZE as u64 + 1), Lsn(8192 + 512 + 21));
        assert_eq!(
            a.advance(3 * DATA_SIZE as u64 + 7),
            Lsn(8192 + 3 * 512 + 27)
        );
    }

    #[test]
    fn data_bytes_until_inverts_advance() {
        let mut at = Lsn::FIRST;
        for step in [0u64, 1, 487, 488, 489, 1000, 5000, 3] {
            let next = at.advance(step);
            assert!(next.is_data_position());
            assert_eq!(at.data_bytes_until(next), step);
            at = next;
        }
    }
}
