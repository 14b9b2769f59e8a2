//! Page 0: the FSP header and its flags.
//!
//! Page 0 of every tablespace is an `FSP_HDR` page. Right after the FIL header, at offset 38,
//! sits the file space header (`fsp0fsp.h`): the space id, the size in pages, how far the free
//! lists reach, the *flags*, and the bases of the extent and segment-inode lists. Tools such as
//! `innochecksum` and minnow's own inspector read the flags first, because they say how big a
//! page is: without them nothing else in the file can be found.
//!
//! ```text
//! offset (from 38)  size  field
//! 0                 4     space id
//! 4                 4     (unused)
//! 8                 4     size of the tablespace in pages
//! 12                4     free limit: first page not yet added to a free list
//! 16                4     flags (page size, compression, format)
//! 20                4     pages used in the FREE_FRAG list
//! 24                16    list base: FREE extents
//! 40                16    list base: FREE_FRAG extents
//! 56                16    list base: FULL_FRAG extents
//! 72                8     next unused segment id
//! 80                16    list base: full segment-inode pages
//! 96                16    list base: segment-inode pages with free slots
//! ```
//!
//! ## The flags, two layouts
//!
//! MySQL (and MariaDB when not using `full_crc32`): bit 0 POST_ANTELOPE, bits 1-4 ZIP_SSIZE
//! (compressed page size, 0 = not compressed), bit 5 ATOMIC_BLOBS, bits 6-9 PAGE_SSIZE
//! (0 = the legacy 16 KiB default), then DATA_DIR, SHARED, TEMPORARY, ENCRYPTION, SDI.
//!
//! MariaDB `full_crc32`: bits 0-3 PAGE_SSIZE (never 0), bit 4 the full_crc32 marker, bits 5-7 the
//! page compression algorithm. Bit 4 cannot be set in the MySQL layout by a valid file (it would
//! mean a ZIP_SSIZE of 8 or more), which is how readers tell the layouts apart.
//!
//! minnow writes the MySQL layout (`POST_ANTELOPE | ATOMIC_BLOBS`, flags `0x21` for 16 KiB pages)
//! for `crc32`, `innodb` and `none` tablespaces, and the full_crc32 layout for `full_crc32`
//! tablespaces, so that MariaDB's tools pick the right checksum rules for our files.

use crate::bytes::{read_u32, read_u64, write_u32, write_u64};
use crate::fil::{FIL_NULL, HEADER_SIZE};
use crate::{PageError, PageSize};

/// Offset of the FSP header in page 0.
pub const FSP_HEADER: usize = HEADER_SIZE;
/// Offset of the space id, relative to the FSP header.
pub const SPACE_ID: usize = 0;
/// Offset of the size in pages, relative to the FSP header.
pub const SIZE: usize = 8;
/// Offset of the free limit, relative to the FSP header.
pub const FREE_LIMIT: usize = 12;
/// Offset of the flags, relative to the FSP header (absolute offset 54).
pub const FLAGS: usize = 16;
/// Offset of the FREE_FRAG used-page count, relative to the FSP header.
pub const FRAG_N_USED: usize = 20;
/// Offset of the FREE extent list base, relative to the FSP header.
pub const FREE: usize = 24;
/// Offset of the FREE_FRAG extent list base, relative to the FSP header.
pub const FREE_FRAG: usize = 40;
/// Offset of the FULL_FRAG extent list base, relative to the FSP header.
pub const FULL_FRAG: usize = 56;
/// Offset of the next unused segment id, relative to the FSP header.
pub const SEG_ID: usize = 72;
/// Offset of the full inode-page list base, relative to the FSP header.
pub const SEG_INODES_FULL: usize = 80;
/// Offset of the free inode-page list base, relative to the FSP header.
pub const SEG_INODES_FREE: usize = 96;
/// Size of the FSP header.
pub const FSP_HEADER_SIZE: usize = 112;
/// Absolute offset of the flags in page 0: where tools look first.
pub const FLAGS_OFFSET: usize = FSP_HEADER + FLAGS;

const POST_ANTELOPE: u32 = 1;
const ATOMIC_BLOBS: u32 = 1 << 5;
const FCRC32_MARKER: u32 = 1 << 4;

/// The tablespace flags stored in page 0 (`FSP_SPACE_FLAGS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FspFlags(pub u32);

impl FspFlags {
    /// The flags minnow writes for a new tablespace with pages of `size`. `full_crc32` selects
    /// MariaDB's full_crc32 layout; otherwise the MySQL layout with DYNAMIC-format bits.
    pub fn new(size: PageSize, full_crc32: bool) -> FspFlags {
        if full_crc32 {
            FspFlags(FCRC32_MARKER | size.ssize())
        } else {
            let ssize = if size == PageSize::K16 {
                0
            } else {
                size.ssize()
            };
            FspFlags(POST_ANTELOPE | ATOMIC_BLOBS | (ssize << 6))
        }
    }

    /// True for MariaDB's full_crc32 layout (marker bit 4).
    #[inline]
    pub fn is_full_crc32(self) -> bool {
        self.0 & FCRC32_MARKER != 0
    }

    /// The logical page size the flags encode.
    pub fn page_size(self) -> Result<PageSize, PageError> {
        let ssize = if self.is_full_crc32() {
            self.0 & 0xF
        } else {
            match (self.0 >> 6) & 0xF {
                0 => PageSize::K16.ssize(),
                s => s,
            }
        };
        PageSize::from_ssize(ssize).ok_or(PageError::BadFspFlags {
            flags: self.0,
            reason: "page size field is not 4, 8, 16, 32 or 64 KiB",
        })
    }

    /// The compressed (physical) page size in bytes if the tablespace is ROW_FORMAT=COMPRESSED
    /// (`ZIP_SSIZE` 1..5 is 1..16 KiB); `None` when pages are stored uncompressed.
    pub fn zip_size(self) -> Option<usize> {
        if self.is_full_crc32() {
            return None;
        }
        match (self.0 >> 1) & 0xF {
            0 => None,
            s @ 1..=5 => Some(512usize << s),
            _ => None,
        }
    }

    /// Checks the flags describe something minnow can read; a ZIP_SSIZE above 5 or an unknown
    /// page size is rejected with the reason.
    pub fn validate(self) -> Result<(), PageError> {
        self.page_size()?;
        if !self.is_full_crc32() && ((self.0 >> 1) & 0xF) > 5 {
            return Err(PageError::BadFspFlags {
                flags: self.0,
                reason: "compressed page size field is above 16 KiB",
            });
        }
        Ok(())
    }
}

/// Reads the flags of a tablespace from its page 0 (or just its first 1 KiB, as innochecksum
/// does: the flags are at offset 54).
pub fn read_flags(page0: &[u8]) -> Result<FspFlags, PageError> {
    read_u32(page0, FLAGS_OFFSET).map(FspFlags)
}

/// The FSP header fields minnow reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FspHeader {
    /// The tablespace id (repeated from the FIL header).
    pub space_id: u32,
    /// Size of the tablespace in pages.
    pub size: u32,
    /// First page not yet added to a free list.
    pub free_limit: u32,
    /// The flags.
    pub flags: FspFlags,
    /// Pages used in the FREE_FRAG extents.
    pub frag_n_used: u32,
    /// Next unused segment id.
    pub next_seg_id: u64,
}

impl FspHeader {
    /// Decodes the FSP header of page 0.
    pub fn read(page0: &[u8]) -> Result<FspHeader, PageError> {
        Ok(FspHeader {
            space_id: read_u32(page0, FSP_HEADER + SPACE_ID)?,
            size: read_u32(page0, FSP_HEADER + SIZE)?,
            free_limit: read_u32(page0, FSP_HEADER + FREE_LIMIT)?,
            flags: FspFlags(read_u32(page0, FSP_HEADER + FLAGS)?),
            frag_n_used: read_u32(page0, FSP_HEADER + FRAG_N_USED)?,
            next_seg_id: read_u64(page0, FSP_HEADER + SEG_ID)?,
        })
    }

    /// Encodes the header into page 0, with every list base empty (length 0, first and last
    /// FIL_NULL). Space management (extents, segments) fills the lists in later.
    pub fn write(&self, page0: &mut [u8]) -> Result<(), PageError> {
        write_u32(page0, FSP_HEADER + SPACE_ID, self.space_id)?;
        write_u32(page0, FSP_HEADER + 4, 0)?;
        write_u32(page0, FSP_HEADER + SIZE, self.size)?;
        write_u32(page0, FSP_HEADER + FREE_LIMIT, self.free_limit)?;
        write_u32(page0, FSP_HEADER + FLAGS, self.flags.0)?;
        write_u32(page0, FSP_HEADER + FRAG_N_USED, self.frag_n_used)?;
        for base in [FREE, FREE_FRAG, FULL_FRAG, SEG_INODES_FULL, SEG_INODES_FREE] {
            write_empty_list_base(page0, FSP_HEADER + base)?;
        }
        write_u64(page0, FSP_HEADER + SEG_ID, self.next_seg_id)
    }
}

/// Writes an empty list base node (length 0; first and last addresses FIL_NULL, offset 0).
fn write_empty_list_base(page: &mut [u8], at: usize) -> Result<(), PageError> {
    write_u32(page, at, 0)?;
    for addr in [at + 4, at + 10] {
        write_u32(page, addr, FIL_NULL)?;
        crate::bytes::write_u16(page, addr + 4, 0)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observed_flags_decode() {
        // MySQL 5.0 (flags 0), 5.7 DYNAMIC (0x21), 8.0 with SDI (0x4021): all 16 KiB.
        for flags in [0, 0x21, 0x4021] {
            assert_eq!(FspFlags(flags).page_size().unwrap(), PageSize::K16);
            assert!(!FspFlags(flags).is_full_crc32());
        }
        // MariaDB full_crc32, 16 KiB.
        let f = FspFlags(0x15);
        assert!(f.is_full_crc32());
        assert_eq!(f.page_size().unwrap(), PageSize::K16);
        // ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8: ZIP_SSIZE 4.
        assert_eq!(FspFlags(0x21 | (4 << 1)).zip_size(), Some(8192));
    }

    #[test]
    fn new_flags_round_trip_for_every_size() {
        for size in PageSize::ALL {
            for fcrc in [false, true] {
                let f = FspFlags::new(size, fcrc);
                assert_eq!(f.page_size().unwrap(), size);
                assert_eq!(f.is_full_crc32(), fcrc);
                assert!(f.validate().is_ok());
                assert_eq!(f.zip_size(), None);
            }
        }
        assert_eq!(FspFlags::new(PageSize::K16, false).0, 0x21);
        assert_eq!(FspFlags::new(PageSize::K16, true).0, 0x15);
    }

    #[test]
    fn bad_flags_are_rejected() {
        assert!(FspFlags(2 << 6).page_size().is_err());
        assert!(FspFlags(0x10 | 9).page_size().is_err());
        assert!(FspFlags(7 << 1).validate().is_err());
    }

    #[test]
    fn header_round_trip() {
        let mut page = vec![0u8; 4096];
        let h = FspHeader {
            space_id: 7,
            size: 64,
            free_limit: 64,
            flags: FspFlags::new(PageSize::K4, false),
            frag_n_used: 3,
            next_seg_id: 2,
        };
        h.write(&mut page).unwrap();
        assert_eq!(FspHeader::read(&page).unwrap(), h);
        assert_eq!(read_flags(&page).unwrap(), h.flags);
        assert_eq!(read_u32(&page, FSP_HEADER + FREE + 4).unwrap(), FIL_NULL);
    }
}
