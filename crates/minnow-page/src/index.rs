//! The INDEX page header, decoded for inspection.
//!
//! A B-tree node page (`FIL_PAGE_INDEX`) carries, right after the FIL header, a 56-byte page
//! header (`page0page.h`) and then two FSEG headers that only the root uses. The records
//! themselves live in a heap above it, linked in key order from the *infimum* to the
//! *supremum*, and a sparse page directory grows down from the trailer: slot `i` is a 2-byte
//! offset at `N - 8 - 2(i+1)` pointing at the record that owns the `i`-th group.
//!
//! ```text
//! offset  size  field
//! 38      2     N_DIR_SLOTS   directory slots
//! 40      2     HEAP_TOP      first byte past the record heap
//! 42      2     N_HEAP        records in the heap (bit 15: COMPACT format)
//! 44      2     FREE          head of the free-record list (0 = none)
//! 46      2     GARBAGE       bytes in deleted records
//! 48      2     LAST_INSERT   last inserted record (0 after a reorganise)
//! 50      2     DIRECTION     1 left, 2 right, 3 same rec, 4 same page, 5 none
//! 52      2     N_DIRECTION   consecutive inserts in that direction
//! 54      2     N_RECS        user records
//! 56      8     MAX_TRX_ID    newest transaction that changed a secondary-index leaf
//! 64      2     LEVEL         0 for leaves
//! 66      8     INDEX_ID      the index the page belongs to
//! 74      10    BTR_SEG_LEAF  FSEG header of the leaf segment (root only)
//! 84      10    BTR_SEG_TOP   FSEG header of the non-leaf segment (root only)
//! 94            infimum and supremum records start here
//! ```
//!
//! This module reads the header as InnoDB lays it out, so that real `.ibd` files and minnow's
//! own files decode with the same code. The record format inside minnow's pages is the B-tree
//! crate's business.

use crate::PageError;
use crate::bytes::{read_u16, read_u32, read_u64};
use crate::fil::{HEADER_SIZE, TRAILER_SIZE};

/// Offset of the INDEX page header (`PAGE_HEADER`).
pub const PAGE_HEADER: usize = HEADER_SIZE;
/// Offset of the first byte after the page header and FSEG headers (`PAGE_DATA`).
pub const PAGE_DATA: usize = PAGE_HEADER + 56;

/// A file-segment header: where a segment's inode lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FsegHeader {
    /// Space id of the inode page.
    pub space_id: u32,
    /// Page number of the inode page.
    pub page_no: u32,
    /// Byte offset of the inode entry in that page.
    pub offset: u16,
}

impl FsegHeader {
    fn read(page: &[u8], at: usize) -> Result<FsegHeader, PageError> {
        Ok(FsegHeader {
            space_id: read_u32(page, at)?,
            page_no: read_u32(page, at + 4)?,
            offset: read_u16(page, at + 8)?,
        })
    }
}

/// Insert direction recorded in `PAGE_DIRECTION`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Descending inserts.
    Left,
    /// Ascending inserts.
    Right,
    /// Same record.
    SameRec,
    /// Same page.
    SamePage,
    /// No direction yet.
    NoDirection,
    /// A value InnoDB does not define.
    Invalid(u16),
}

impl Direction {
    /// Decodes the stored value.
    pub fn from_u16(v: u16) -> Direction {
        match v {
            1 => Direction::Left,
            2 => Direction::Right,
            3 => Direction::SameRec,
            4 => Direction::SamePage,
            5 => Direction::NoDirection,
            other => Direction::Invalid(other),
        }
    }
}

/// The decoded INDEX page header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexHeader {
    /// Number of page directory slots.
    pub n_dir_slots: u16,
    /// End of the record heap.
    pub heap_top: u16,
    /// Records in the heap, including infimum, supremum and deleted ones.
    pub n_heap: u16,
    /// True for the COMPACT record format (bit 15 of N_HEAP).
    pub compact: bool,
    /// Head of the free-record list.
    pub free: u16,
    /// Bytes held by deleted records.
    pub garbage: u16,
    /// Last inserted record.
    pub last_insert: u16,
    /// Insert direction.
    pub direction: Direction,
    /// Inserts in a row in that direction.
    pub n_direction: u16,
    /// User records on the page.
    pub n_recs: u16,
    /// Newest transaction id that modified the page (secondary-index leaves): the field's low
    /// 48 bits, a transaction id's width (minnow keeps page flags in its top byte).
    pub max_trx_id: u64,
    /// B-tree level; 0 for leaves.
    pub level: u16,
    /// The index id.
    pub index_id: u64,
    /// FSEG header of the leaf segment (valid on the root only).
    pub seg_leaf: FsegHeader,
    /// FSEG header of the non-leaf segment (valid on the root only).
    pub seg_top: FsegHeader,
}

impl IndexHeader {
    /// Decodes the header of an INDEX page.
    pub fn read(page: &[u8]) -> Result<IndexHeader, PageError> {
        let h = PAGE_HEADER;
        let n_heap_raw = read_u16(page, h + 4)?;
        Ok(IndexHeader {
            n_dir_slots: read_u16(page, h)?,
            heap_top: read_u16(page, h + 2)?,
            n_heap: n_heap_raw & 0x7FFF,
            compact: n_heap_raw & 0x8000 != 0,
            free: read_u16(page, h + 6)?,
            garbage: read_u16(page, h + 8)?,
            last_insert: read_u16(page, h + 10)?,
            direction: Direction::from_u16(read_u16(page, h + 12)?),
            n_direction: read_u16(page, h + 14)?,
            n_recs: read_u16(page, h + 16)?,
            max_trx_id: read_u64(page, h + 18)? & ((1 << 48) - 1),
            level: read_u16(page, h + 26)?,
            index_id: read_u64(page, h + 28)?,
            seg_leaf: FsegHeader::read(page, h + 36)?,
            seg_top: FsegHeader::read(page, h + 46)?,
        })
    }

    /// The page directory's slots (record offsets), slot 0 (the infimum's) first. The number
    /// of slots is capped by what fits between the record data and the trailer, so a garbage
    /// header cannot make this read outside the page.
    pub fn directory(&self, page: &[u8]) -> Result<Vec<u16>, PageError> {
        let end = page
            .len()
            .checked_sub(TRAILER_SIZE)
            .ok_or(PageError::OutOfBounds {
                offset: 0,
                len: TRAILER_SIZE,
                available: page.len(),
            })?;
        let room = end.saturating_sub(PAGE_DATA) / 2;
        let n = usize::from(self.n_dir_slots).min(room);
        (0..n).map(|i| read_u16(page, end - 2 * (i + 1))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_a_fresh_compact_page_header() {
        let mut page = vec![0u8; 16384];
        page[38..40].copy_from_slice(&2u16.to_be_bytes());
        page[40..42].copy_from_slice(&120u16.to_be_bytes());
        page[42..44].copy_from_slice(&0x8002u16.to_be_bytes());
        page[50..52].copy_from_slice(&5u16.to_be_bytes());
        page[66..74].copy_from_slice(&23u64.to_be_bytes());
        page[16374..16376].copy_from_slice(&99u16.to_be_bytes());
        page[16372..16374].copy_from_slice(&112u16.to_be_bytes());
        let h = IndexHeader::read(&page).unwrap();
        assert!(h.compact);
        assert_eq!(h.n_heap, 2);
        assert_eq!(h.heap_top, 120);
        assert_eq!(h.direction, Direction::NoDirection);
        assert_eq!(h.index_id, 23);
        assert_eq!(h.directory(&page).unwrap(), vec![99, 112]);
    }

    #[test]
    fn garbage_slot_count_stays_inside_the_page() {
        let mut page = vec![0xFFu8; 4096];
        page[38..40].copy_from_slice(&u16::MAX.to_be_bytes());
        let h = IndexHeader::read(&page).unwrap();
        let slots = h.directory(&page).unwrap();
        assert!(slots.len() < 4096 / 2);
        assert!(IndexHeader::read(&page[..60]).is_err());
    }
}
