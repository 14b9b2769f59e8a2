//! The layout of an InnoDB ROW_FORMAT=COMPRESSED INDEX page (`page0zip.h`, `page0zip.cc`).
//!
//! In a compressed tablespace each B-tree page exists twice: the ordinary (logical) page,
//! 16 KiB say, which only lives in the buffer pool, and its compressed image of
//! `KEY_BLOCK_SIZE` bytes, which is what the file holds. The image keeps the parts InnoDB must
//! read or patch without inflating anything **uncompressed, at their usual offsets**, and
//! squeezes the records in between:
//!
//! ```text
//!  0          38             94                       m_end                            N
//!  +----------+--------------+------------------------+------------+------+-----------+
//!  | FIL      | INDEX page   | zlib stream: index     | modifi-    | free | uncompr.  |
//!  | header   | header + the | field info, then the   | cation log | (0)  | trailer   |
//!  | (no      | FSEG headers | records without their  | (appended  |      | (grows    |
//!  | trailer) | (56 bytes)   | headers                | records)   |      |  down)    |
//!  +----------+--------------+------------------------+------------+------+-----------+
//! ```
//!
//! The page header describes the **logical** page: `PAGE_N_HEAP` (with the COMPACT bit, always
//! set here), `PAGE_HEAP_TOP`, `PAGE_N_DIR_SLOTS` and `PAGE_GARBAGE` are the values the
//! uncompressed page has, `PAGE_LEVEL` and `PAGE_INDEX_ID` are as usual. The infimum and
//! supremum records are not stored at all.
//!
//! The uncompressed trailer ends the page. Its last part is the **dense page directory**: one
//! 2-byte entry per record in the heap except infimum and supremum (`PAGE_N_HEAP - 2`
//! entries), the first at `N - 2`, the next at `N - 4`, and so on. The first `PAGE_N_RECS`
//! entries are the live records in key order, the rest the free (deleted) ones. Each entry
//! is the record's offset in the logical page (low 14 bits) with two flags: `0x4000` the
//! record owns a slot of the sparse directory, `0x8000` it is delete-marked. Below the dense
//! directory, towards lower addresses, sit the columns InnoDB updates in place: on a
//! clustered leaf DB_TRX_ID and DB_ROLL_PTR (13 bytes per record) and the 20-byte pointers of
//! columns stored off-page, on a non-leaf page the 4-byte child page numbers. How many of
//! those there are depends on the index definition, which the page does not record; this
//! module decodes the header and the dense directory, and leaves the records compressed.

use crate::PageError;
use crate::bytes::read_u16;
use crate::index::{IndexHeader, PAGE_DATA};

/// Where the compressed stream starts (`PAGE_DATA`: right after the page and FSEG headers).
pub const STREAM_START: usize = PAGE_DATA;
/// Bytes per dense-directory entry (`PAGE_ZIP_DIR_SLOT_SIZE`).
pub const DIR_SLOT_SIZE: usize = 2;
/// The offset bits of a dense-directory entry (`PAGE_ZIP_DIR_SLOT_MASK`).
pub const SLOT_OFFSET_MASK: u16 = 0x3FFF;
/// The record owns a slot of the sparse page directory (`PAGE_ZIP_DIR_SLOT_OWNED`).
pub const SLOT_OWNED: u16 = 0x4000;
/// The record is delete-marked (`PAGE_ZIP_DIR_SLOT_DEL`).
pub const SLOT_DELETED: u16 = 0x8000;
/// Heap numbers 0 and 1 are the infimum and supremum, which have no dense-directory entry.
const HEAP_NO_USER_LOW: u16 = 2;

/// The dense page directory of a compressed INDEX page, summarised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DenseDirectory {
    /// Entries: every record in the heap but infimum and supremum (`PAGE_N_HEAP - 2`).
    pub slots: usize,
    /// Of those, the live records (`PAGE_N_RECS`, the first entries).
    pub user_slots: usize,
    /// Entries with the owned flag: should equal the sparse directory's slots less the two of
    /// infimum and supremum.
    pub owned: usize,
    /// Entries with the delete mark.
    pub deleted: usize,
    /// Offset of the directory's lowest byte in the compressed page.
    pub start: usize,
    /// The live records' offsets in the logical page, in key order (flags removed).
    pub offsets: Vec<u16>,
}

/// Why a compressed page's dense directory cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ZipPageError {
    /// The header's record counts do not fit the page.
    #[error(
        "PAGE_N_HEAP {n_heap} needs a {needed}-byte dense directory, more than the {room} bytes \
         after the page header of this {size}-byte compressed page"
    )]
    DirectoryTooLarge {
        /// `PAGE_N_HEAP` without the COMPACT bit.
        n_heap: u16,
        /// Bytes the directory would take.
        needed: usize,
        /// Bytes between the page header and the end of the page.
        room: usize,
        /// The compressed page size.
        size: usize,
    },
    /// `PAGE_N_RECS` is larger than the heap.
    #[error("PAGE_N_RECS {n_recs} is more than the {slots} records in the heap")]
    TooManyRecords {
        /// `PAGE_N_RECS`.
        n_recs: u16,
        /// `PAGE_N_HEAP - 2`.
        slots: usize,
    },
    /// A field could not be read.
    #[error("{0}")]
    Page(#[from] PageError),
}

/// Reads the dense directory of the compressed INDEX page `page` (the whole physical page),
/// whose header is `header`. Checked: a header whose counts do not fit is an error.
pub fn dense_directory(page: &[u8], header: &IndexHeader) -> Result<DenseDirectory, ZipPageError> {
    let size = page.len();
    let slots = usize::from(header.n_heap.saturating_sub(HEAP_NO_USER_LOW));
    let needed = slots * DIR_SLOT_SIZE;
    let room = size.saturating_sub(STREAM_START);
    if needed > room {
        return Err(ZipPageError::DirectoryTooLarge {
            n_heap: header.n_heap,
            needed,
            room,
            size,
        });
    }
    let user_slots = usize::from(header.n_recs);
    if user_slots > slots {
        return Err(ZipPageError::TooManyRecords {
            n_recs: header.n_recs,
            slots,
        });
    }
    let mut dir = DenseDirectory {
        slots,
        user_slots,
        owned: 0,
        deleted: 0,
        start: size - needed,
        offsets: Vec::with_capacity(user_slots),
    };
    for i in 0..slots {
        let entry = read_u16(page, size - DIR_SLOT_SIZE * (i + 1))?;
        dir.owned += usize::from(entry & SLOT_OWNED != 0);
        dir.deleted += usize::from(entry & SLOT_DELETED != 0);
        if i < user_slots {
            dir.offsets.push(entry & SLOT_OFFSET_MASK);
        }
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header_page(size: usize, n_heap: u16, n_recs: u16) -> Vec<u8> {
        let mut p = vec![0u8; size];
        p[42..44].copy_from_slice(&(0x8000 | n_heap).to_be_bytes());
        p[54..56].copy_from_slice(&n_recs.to_be_bytes());
        p
    }

    #[test]
    fn reads_entries_from_the_end_with_their_flags() {
        let mut p = header_page(1024, 5, 2);
        p[1022..1024].copy_from_slice(&(SLOT_OWNED | 130).to_be_bytes());
        p[1020..1022].copy_from_slice(&150u16.to_be_bytes());
        p[1018..1020].copy_from_slice(&(SLOT_DELETED | 170).to_be_bytes());
        let h = IndexHeader::read(&p).unwrap();
        let d = dense_directory(&p, &h).unwrap();
        assert_eq!(d.slots, 3);
        assert_eq!(d.user_slots, 2);
        assert_eq!(d.offsets, vec![130, 150]);
        assert_eq!((d.owned, d.deleted), (1, 1));
        assert_eq!(d.start, 1018);
    }

    #[test]
    fn counts_that_do_not_fit_are_errors() {
        let p = header_page(1024, 0x7FFF, 0);
        let h = IndexHeader::read(&p).unwrap();
        assert!(matches!(
            dense_directory(&p, &h),
            Err(ZipPageError::DirectoryTooLarge { .. })
        ));
        let p = header_page(1024, 4, 3);
        let h = IndexHeader::read(&p).unwrap();
        assert_eq!(
            dense_directory(&p, &h),
            Err(ZipPageError::TooManyRecords {
                n_recs: 3,
                slots: 2
            })
        );
    }
}
