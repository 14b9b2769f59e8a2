//! The segment file: a header block, then one page slot per page of a batch.
//!
//! Each segment is one file in the data directory, `dblwr.<n>` for segment `n` (0-based). All
//! integers are big-endian, as everywhere in InnoDB's and minnow's formats. With `C` the batch
//! capacity (`doublewrite_pages`, 1..=[`MAX_CAPACITY`]) and `P` the page size:
//!
//! ```text
//!  offset        size   field
//!  0             8      magic: the ASCII bytes "MNWDBLWR"
//!  8             4      format version: 2
//!  12            4      page size in bytes (4096, 8192, 16384, 32768 or 65536)
//!  16            4      capacity C: slots in the file
//!  20            4      flags: bit 0 = page copies follow the header (mode on; clear in
//!                       detect_only); the other bits are zero
//!  24            4      segment index n (the n of dblwr.<n>)
//!  28            4      count: pages in the current batch (0..=C); slots 0..count are used
//!  32            8      batch sequence number: 1 for the segment's first batch, +1 per batch
//!                       (0 in a freshly created file that holds no batch)
//!  40            20*C   slot entries, slot i at 40 + 20*i:
//!                         +0  4  space id
//!                         +4  4  page number
//!                         +8  8  page LSN (FIL header bytes 16..24 of the page as written)
//!                         +16 4  slot checksum: CRC-32C of all P bytes of the stamped
//!                                page (the bytes of slot i when copies follow)
//!                       entries at and after `count` are all zero
//!  40+20*C       4      CRC-32C of bytes [0, 40 + 20*C)
//!  44+20*C       ...    zero up to H = 44 + 20*C rounded up to a multiple of P
//!  H + i*P       P      slot i: the copy of the page in entry i, exactly the bytes written in
//!                       place, checksum stamped (flag bit 0 set, i < count)
//! ```
//!
//! With the default C = 128 and 16 KiB pages the header block is one page (H = 16384) and the
//! file is H + 128 × 16 KiB = 2 MiB + 16 KiB, preallocated and written in full (zeros) when the
//! segment is created. A batch is persisted with one write of `H + count × P` bytes at offset 0
//! (just `H` in detect_only mode, whose file is only `H` long). Slots past `count` keep stale bytes from earlier batches; the
//! header says they are unused.
//!
//! ## Why each slot has its own checksum
//!
//! The header CRC says the header is what the writer wrote; it says nothing about the copies.
//! A copy's page checksum does not cover all of it either: `crc32` and `innodb` leave bytes
//! 26..38 (FIL_PAGE_FILE_FLUSH_LSN and the space id) out, and `none` checks only the LSN
//! words. A copy damaged there (a bit flip on the medium, a stray write) still verifies, and
//! restoring it would put bytes in place that no writer ever wrote. The slot checksum covers
//! every byte of the copy, so recovery restores a copy only if it is exactly the page that was
//! written ([`SlotEntry::check_copy`]). In `detect_only` segments the field is written all the
//! same (the checksum of the stamped page), but there is no copy to check against it.
//!
//! ## Version 1
//!
//! Version 1 (16-byte entries, no slot checksum) is not read: [`SegmentHeader::decode`]
//! returns [`FormatError::Version`]`(1)`, which recovery turns into a typed error naming the
//! file rather than restore copies it cannot check. A data directory last used by a version-1
//! build is upgraded by shutting that build down cleanly (every batch of it is then in place)
//! and deleting its `dblwr.<n>` files; [`crate::Doublewrite::open`] recreates them.
//!
//! ## Reading a header back
//!
//! [`SegmentHeader::decode`] checks, in this order (the first failure is returned):
//!
//! 1. at least 40 bytes, then the magic ([`FormatError::Short`], [`FormatError::BadMagic`]);
//! 2. the format version ([`FormatError::Version`]): a version this code does not know is not
//!    guessed at;
//! 3. the capacity, 1..=[`MAX_CAPACITY`], which locates the CRC ([`FormatError::Capacity`]),
//!    and enough bytes for the whole header ([`FormatError::Short`]);
//! 4. the CRC-32C ([`FormatError::Checksum`]);
//! 5. then, the header being exactly what some writer wrote, its contents: page size, flags,
//!    count ≤ capacity ([`FormatError::PageSize`], [`FormatError::Flags`],
//!    [`FormatError::Count`]).
//!
//! [`FormatError::is_incomplete_batch`] tells which failures mean "this batch never completed
//! its doublewrite sync" (recovery ignores the file and reports it) and which mean "something
//! wrote this file that this code cannot interpret" (recovery stops with a typed error rather
//! than skip a batch that may hold the only intact copy of a page).

use minnow_page::crc::crc32c;
use minnow_page::{PageId, PageSize};

/// Magic bytes at the start of every segment file.
pub const MAGIC: [u8; 8] = *b"MNWDBLWR";
/// The format version this code writes and reads (version 1 had no slot checksums).
pub const FORMAT_VERSION: u32 = 2;
/// Length of the fixed fields before the slot entries.
pub const FIXED_LEN: usize = 40;
/// Length of one slot entry (space id, page number, LSN, slot checksum).
pub const ENTRY_LEN: usize = 20;
/// The largest batch capacity a segment may have (`innodb_doublewrite_pages` allows 512 at most;
/// this leaves room).
pub const MAX_CAPACITY: usize = 1024;
/// Flag bit 0: page copies follow the header block.
pub const FLAG_COPIES: u32 = 1;

/// Offset of the format version.
const OFF_VERSION: usize = 8;
/// Offset of the page size.
const OFF_PAGE_SIZE: usize = 12;
/// Offset of the capacity.
const OFF_CAPACITY: usize = 16;
/// Offset of the flags.
const OFF_FLAGS: usize = 20;
/// Offset of the segment index.
const OFF_SEGMENT: usize = 24;
/// Offset of the page count.
const OFF_COUNT: usize = 28;
/// Offset of the batch sequence number.
const OFF_SEQUENCE: usize = 32;

/// Offset of the CRC for a capacity of `capacity` slots.
pub const fn crc_offset(capacity: usize) -> usize {
    FIXED_LEN + ENTRY_LEN * capacity
}

/// Bytes of header proper (fields, entries, CRC) for `capacity` slots.
pub const fn header_len(capacity: usize) -> usize {
    crc_offset(capacity) + 4
}

/// Length `H` of the header block: [`header_len`] rounded up to a whole page, so that the page
/// slots are page-aligned (as `O_DIRECT` wants).
pub const fn header_block_len(page_size: PageSize, capacity: usize) -> usize {
    header_len(capacity).div_ceil(page_size.bytes()) * page_size.bytes()
}

/// Offset of page slot `slot` in the file.
pub const fn slot_offset(page_size: PageSize, capacity: usize, slot: usize) -> u64 {
    (header_block_len(page_size, capacity) + slot * page_size.bytes()) as u64
}

/// Length of a segment file: the header block, plus all slots when it holds copies.
pub const fn file_len(page_size: PageSize, capacity: usize, copies: bool) -> u64 {
    let slots = if copies { capacity } else { 0 };
    slot_offset(page_size, capacity, slots)
}

/// One used slot: which page, at which LSN, and the checksum of its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SlotEntry {
    /// The page.
    pub page: PageId,
    /// The page's LSN as written (FIL header bytes 16..24).
    pub lsn: u64,
    /// The slot checksum: CRC-32C of the whole stamped page ([`slot_checksum`]).
    pub crc: u32,
}

impl SlotEntry {
    /// The entry for `page` written as `bytes` (stamped, exactly as it goes in place).
    pub fn for_page(page: PageId, lsn: u64, bytes: &[u8]) -> SlotEntry {
        SlotEntry {
            page,
            lsn,
            crc: slot_checksum(bytes),
        }
    }

    /// Checks that `copy` is, byte for byte, the page this entry recorded: its CRC-32C must
    /// equal the slot checksum. A copy that fails is damaged and must never be restored, even
    /// if its own page checksum verifies.
    pub fn check_copy(&self, copy: &[u8]) -> Result<(), SlotChecksumError> {
        let computed = slot_checksum(copy);
        if computed == self.crc {
            Ok(())
        } else {
            Err(SlotChecksumError {
                stored: self.crc,
                computed,
            })
        }
    }
}

/// The slot checksum of a page: CRC-32C of all its bytes.
pub fn slot_checksum(page: &[u8]) -> u32 {
    crc32c(page)
}

/// A page copy whose bytes do not match its slot checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("slot checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
pub struct SlotChecksumError {
    /// The slot checksum in the entry.
    pub stored: u32,
    /// The CRC-32C of the copy's bytes.
    pub computed: u32,
}

/// A decoded segment header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentHeader {
    /// The page size of the copies.
    pub page_size: PageSize,
    /// Slots in the file.
    pub capacity: usize,
    /// Whether the page copies follow the header (mode on) or not (detect_only).
    pub copies: bool,
    /// The segment index.
    pub segment: u32,
    /// The batch sequence number (0: no batch yet).
    pub sequence: u64,
    /// The used slots, in slot order (`count` = `entries.len()`).
    pub entries: Vec<SlotEntry>,
}

/// What is wrong with a segment header.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    /// Fewer bytes than the header needs.
    #[error("{len} bytes is shorter than the {need}-byte header")]
    Short {
        /// Bytes available.
        len: usize,
        /// Bytes the header needs.
        need: usize,
    },
    /// The magic bytes are wrong: never written, zeroed, or not a segment file.
    #[error("not a doublewrite segment (magic {found:02x?})")]
    BadMagic {
        /// The bytes found.
        found: [u8; 8],
    },
    /// A format version this code does not know.
    #[error(
        "doublewrite format version {0} is not supported (this build reads version \
         {FORMAT_VERSION} only; version 1 segments carry no slot checksums)"
    )]
    Version(u32),
    /// The capacity is 0 or more than [`MAX_CAPACITY`], so the CRC cannot be located.
    #[error("capacity {0} is outside 1..={MAX_CAPACITY}")]
    Capacity(u32),
    /// The header CRC does not match: a torn or damaged header.
    #[error("header checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    Checksum {
        /// Stored CRC.
        stored: u32,
        /// Computed CRC.
        computed: u32,
    },
    /// The page size field is not a supported page size.
    #[error("page size {0} is not 4, 8, 16, 32 or 64 KiB")]
    PageSize(u32),
    /// Flag bits this code does not know.
    #[error("unknown flag bits {0:#x}")]
    Flags(u32),
    /// More used slots than the file has.
    #[error("the batch claims {count} pages but the segment holds {capacity}")]
    Count {
        /// The page count field.
        count: u32,
        /// The capacity field.
        capacity: u32,
    },
}

impl FormatError {
    /// True for the failures a batch that never completed its write-and-sync leaves behind (a
    /// short, zeroed, torn or garbage header): recovery ignores such a file. False for a header
    /// that checks out but that this code cannot interpret (unknown version or flags, counts
    /// out of range): recovery must not silently skip it.
    pub fn is_incomplete_batch(&self) -> bool {
        matches!(
            self,
            FormatError::Short { .. }
                | FormatError::BadMagic { .. }
                | FormatError::Capacity(_)
                | FormatError::Checksum { .. }
        )
    }
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    if let Some(s) = b.get_mut(at..at + 4) {
        s.copy_from_slice(&v.to_be_bytes());
    }
}

fn put_u64(b: &mut [u8], at: usize, v: u64) {
    if let Some(s) = b.get_mut(at..at + 8) {
        s.copy_from_slice(&v.to_be_bytes());
    }
}

fn get_u32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    if let Some(s) = b.get(at..at + 4) {
        a.copy_from_slice(s);
    }
    u32::from_be_bytes(a)
}

fn get_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    if let Some(s) = b.get(at..at + 8) {
        a.copy_from_slice(s);
    }
    u64::from_be_bytes(a)
}

impl SegmentHeader {
    /// Encodes the header into `block`, zeroing the rest of it. `block` must hold
    /// [`header_len`]`(capacity)` bytes and the entries must fit the capacity, or
    /// [`FormatError::Short`] / [`FormatError::Count`] is returned.
    pub fn encode(&self, block: &mut [u8]) -> Result<(), FormatError> {
        let need = header_len(self.capacity);
        if block.len() < need {
            return Err(FormatError::Short {
                len: block.len(),
                need,
            });
        }
        let count = u32::try_from(self.entries.len()).unwrap_or(u32::MAX);
        let capacity = u32::try_from(self.capacity).unwrap_or(u32::MAX);
        if self.entries.len() > self.capacity || self.capacity > MAX_CAPACITY {
            return Err(FormatError::Count { count, capacity });
        }
        block.fill(0);
        if let Some(m) = block.get_mut(..MAGIC.len()) {
            m.copy_from_slice(&MAGIC);
        }
        put_u32(block, OFF_VERSION, FORMAT_VERSION);
        put_u32(
            block,
            OFF_PAGE_SIZE,
            u32::try_from(self.page_size.bytes()).unwrap_or(0),
        );
        put_u32(block, OFF_CAPACITY, capacity);
        put_u32(block, OFF_FLAGS, if self.copies { FLAG_COPIES } else { 0 });
        put_u32(block, OFF_SEGMENT, self.segment);
        put_u32(block, OFF_COUNT, count);
        put_u64(block, OFF_SEQUENCE, self.sequence);
        for (i, e) in self.entries.iter().enumerate() {
            let at = FIXED_LEN + ENTRY_LEN * i;
            put_u32(block, at, e.page.space);
            put_u32(block, at + 4, e.page.page_no);
            put_u64(block, at + 8, e.lsn);
            put_u32(block, at + 16, e.crc);
        }
        let at = crc_offset(self.capacity);
        let crc = crc32c(block.get(..at).unwrap_or(&[]));
        put_u32(block, at, crc);
        Ok(())
    }

    /// Decodes and checks a header from the start of a segment file (see the module docs for
    /// the order of the checks). Never panics, whatever the bytes.
    pub fn decode(bytes: &[u8]) -> Result<SegmentHeader, FormatError> {
        let fixed = bytes.get(..FIXED_LEN).ok_or(FormatError::Short {
            len: bytes.len(),
            need: FIXED_LEN,
        })?;
        let mut magic = [0u8; 8];
        magic.copy_from_slice(fixed.get(..8).unwrap_or(&[0; 8]));
        if magic != MAGIC {
            return Err(FormatError::BadMagic { found: magic });
        }
        let version = get_u32(fixed, OFF_VERSION);
        if version != FORMAT_VERSION {
            return Err(FormatError::Version(version));
        }
        let capacity_field = get_u32(fixed, OFF_CAPACITY);
        let capacity = usize::try_from(capacity_field).unwrap_or(usize::MAX);
        if capacity == 0 || capacity > MAX_CAPACITY {
            return Err(FormatError::Capacity(capacity_field));
        }
        let at = crc_offset(capacity);
        let need = header_len(capacity);
        let covered = bytes.get(..at).ok_or(FormatError::Short {
            len: bytes.len(),
            need,
        })?;
        let stored = bytes
            .get(at..need)
            .map(|_| get_u32(bytes, at))
            .ok_or(FormatError::Short {
                len: bytes.len(),
                need,
            })?;
        let computed = crc32c(covered);
        if stored != computed {
            return Err(FormatError::Checksum { stored, computed });
        }
        let page_size_field = get_u32(fixed, OFF_PAGE_SIZE);
        let page_size = usize::try_from(page_size_field)
            .ok()
            .and_then(|b| PageSize::from_bytes(b).ok())
            .ok_or(FormatError::PageSize(page_size_field))?;
        let flags = get_u32(fixed, OFF_FLAGS);
        if flags & !FLAG_COPIES != 0 {
            return Err(FormatError::Flags(flags));
        }
        let count = get_u32(fixed, OFF_COUNT);
        if count > capacity_field {
            return Err(FormatError::Count {
                count,
                capacity: capacity_field,
            });
        }
        let entries = (0..count as usize)
            .map(|i| {
                let e = FIXED_LEN + ENTRY_LEN * i;
                SlotEntry {
                    page: PageId::new(get_u32(bytes, e), get_u32(bytes, e + 4)),
                    lsn: get_u64(bytes, e + 8),
                    crc: get_u32(bytes, e + 16),
                }
            })
            .collect();
        Ok(SegmentHeader {
            page_size,
            capacity,
            copies: flags & FLAG_COPIES != 0,
            segment: get_u32(fixed, OFF_SEGMENT),
            sequence: get_u64(fixed, OFF_SEQUENCE),
            entries,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> SegmentHeader {
        SegmentHeader {
            page_size: PageSize::K16,
            capacity: 128,
            copies: true,
            segment: 3,
            sequence: 77,
            entries: vec![
                SlotEntry {
                    page: PageId::new(5, 9),
                    lsn: 0x0102_0304_0506_0708,
                    crc: 0xA1B2_C3D4,
                },
                SlotEntry {
                    page: PageId::new(6, 1),
                    lsn: 12,
                    crc: 5,
                },
            ],
        }
    }

    #[test]
    fn layout_is_as_documented() {
        assert_eq!(header_len(128), 40 + 2560 + 4);
        assert_eq!(header_block_len(PageSize::K16, 128), 16384);
        assert_eq!(header_block_len(PageSize::K4, 128), 4096);
        assert_eq!(header_block_len(PageSize::K4, 1024), 24576);
        assert_eq!(
            file_len(PageSize::K16, 128, true),
            16384 + 128 * 16384,
            "2 MiB + 16 KiB"
        );
        assert_eq!(file_len(PageSize::K16, 128, false), 16384);

        let mut block = vec![0xAAu8; 16384];
        sample().encode(&mut block).unwrap();
        assert_eq!(&block[..8], b"MNWDBLWR");
        assert_eq!(&block[8..12], &[0, 0, 0, 2]);
        assert_eq!(&block[12..16], &16384u32.to_be_bytes());
        assert_eq!(&block[16..20], &128u32.to_be_bytes());
        assert_eq!(&block[20..24], &[0, 0, 0, 1]);
        assert_eq!(&block[24..28], &3u32.to_be_bytes());
        assert_eq!(&block[28..32], &2u32.to_be_bytes());
        assert_eq!(&block[32..40], &77u64.to_be_bytes());
        assert_eq!(&block[40..44], &5u32.to_be_bytes());
        assert_eq!(&block[44..48], &9u32.to_be_bytes());
        assert_eq!(&block[48..56], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&block[56..60], &[0xA1, 0xB2, 0xC3, 0xD4]);
        assert_eq!(&block[60..64], &6u32.to_be_bytes());
        assert_eq!(&block[76..80], &5u32.to_be_bytes());
        assert!(block[80..2600].iter().all(|&b| b == 0), "unused entries");
        let crc = crc32c(&block[..2600]);
        assert_eq!(&block[2600..2604], &crc.to_be_bytes());
        assert!(block[2604..].iter().all(|&b| b == 0), "padding");
        assert_eq!(SegmentHeader::decode(&block).unwrap(), sample());
    }

    #[test]
    fn every_check_has_its_error() {
        let mut block = vec![0u8; 16384];
        sample().encode(&mut block).unwrap();

        let short = SegmentHeader::decode(&block[..39]).unwrap_err();
        assert!(matches!(short, FormatError::Short { need: 40, .. }));
        let short = SegmentHeader::decode(&block[..2603]).unwrap_err();
        assert!(matches!(short, FormatError::Short { need: 2604, .. }));
        assert!(matches!(
            SegmentHeader::decode(&[0u8; 4096]).unwrap_err(),
            FormatError::BadMagic { .. }
        ));

        let mutate = |at: usize, bytes: &[u8], reseal: bool| {
            let mut b = block.clone();
            b[at..at + bytes.len()].copy_from_slice(bytes);
            if reseal {
                let crc = crc32c(&b[..2600]);
                b[2600..2604].copy_from_slice(&crc.to_be_bytes());
            }
            SegmentHeader::decode(&b).unwrap_err()
        };
        assert_eq!(mutate(8, &[0, 0, 0, 3], false), FormatError::Version(3));
        assert_eq!(
            mutate(8, &[0, 0, 0, 1], false),
            FormatError::Version(1),
            "version 1 (no slot checksums) is refused, not guessed at"
        );
        assert_eq!(mutate(16, &[0, 0, 0, 0], false), FormatError::Capacity(0));
        assert_eq!(
            mutate(16, &[0, 0, 0x10, 0], false),
            FormatError::Capacity(4096)
        );
        assert!(matches!(
            mutate(100, &[1], false),
            FormatError::Checksum { .. }
        ));
        assert_eq!(
            mutate(12, &[0, 0, 0x30, 0], true),
            FormatError::PageSize(0x3000)
        );
        assert_eq!(mutate(20, &[0, 0, 0, 3], true), FormatError::Flags(3));
        assert_eq!(
            mutate(28, &[0, 0, 0, 129], true),
            FormatError::Count {
                count: 129,
                capacity: 128
            }
        );
        assert!(
            FormatError::Checksum {
                stored: 0,
                computed: 1
            }
            .is_incomplete_batch()
        );
        assert!(!FormatError::Version(1).is_incomplete_batch());
    }

    #[test]
    fn the_slot_checksum_covers_every_byte_of_the_copy() {
        let page: Vec<u8> = (0..16384u32).map(|i| (i * 7 % 251) as u8).collect();
        let entry = SlotEntry::for_page(PageId::new(3, 5), 200, &page);
        assert_eq!(entry.crc, crc32c(&page));
        assert_eq!(entry.check_copy(&page), Ok(()));
        // Offsets 0, 26 (flush LSN, outside the crc32 page checksum), 34 (space id) and the
        // last byte: every flip is caught.
        for at in [0, 26, 33, 34, 8000, 16383] {
            let mut bad = page.clone();
            bad[at] ^= 0x10;
            let err = entry.check_copy(&bad).unwrap_err();
            assert_eq!(err.stored, entry.crc, "offset {at}");
            assert_eq!(err.computed, crc32c(&bad), "offset {at}");
        }
        assert!(entry.check_copy(&page[..4096]).is_err(), "a short copy");
    }

    #[test]
    fn encode_refuses_what_does_not_fit() {
        let mut small = vec![0u8; 100];
        assert!(matches!(
            sample().encode(&mut small),
            Err(FormatError::Short { .. })
        ));
        let mut h = sample();
        h.capacity = 1;
        let mut block = vec![0u8; 4096];
        assert!(matches!(
            h.encode(&mut block),
            Err(FormatError::Count { count: 2, .. })
        ));
    }
}
