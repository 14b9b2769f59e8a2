//! The FIL header and trailer: the frame around every page.
//!
//! Every page, whatever it holds, starts with a 38-byte header and ends with an 8-byte trailer,
//! at the same offsets InnoDB uses (`fil0types.h`). The body in between, `[38, N-8)`, belongs to
//! the page type.
//!
//! ```text
//!  offset  size  field
//!  0       4     checksum (or, in full_crc32 tablespaces, the encryption key version)
//!  4       4     page number within the tablespace
//!  8       4     previous page on the same B-tree level (FIL_NULL if none)
//!  12      4     next page on the same B-tree level (FIL_NULL if none)
//!  16      8     LSN of the newest change applied to the page
//!  24      2     page type
//!  26      8     flush LSN (page 0 of the system tablespace only; other uses below)
//!  34      4     tablespace (space) id
//!  38      ...   body
//!  N-8     4     trailer: second checksum field (full_crc32: LSN low 32 bits)
//!  N-4     4     trailer: low 32 bits of the LSN (full_crc32: the checksum)
//! ```
//!
//! The trailer's LSN copy is how a torn write is caught even before checksums are looked at:
//! the first sector and the last sector of a half-written page usually disagree.

use crate::PageError;
use crate::bytes::{read_u16, read_u32, read_u64, write_u16, write_u32, write_u64};

/// Offset of the checksum field (`FIL_PAGE_SPACE_OR_CHKSUM`).
pub const CHECKSUM: usize = 0;
/// Offset of the page number (`FIL_PAGE_OFFSET`).
pub const PAGE_NO: usize = 4;
/// Offset of the previous-page pointer (`FIL_PAGE_PREV`).
pub const PREV: usize = 8;
/// Offset of the next-page pointer (`FIL_PAGE_NEXT`).
pub const NEXT: usize = 12;
/// Offset of the page LSN (`FIL_PAGE_LSN`).
pub const LSN: usize = 16;
/// Offset of the page type (`FIL_PAGE_TYPE`).
pub const PAGE_TYPE: usize = 24;
/// Offset of the flush LSN (`FIL_PAGE_FILE_FLUSH_LSN`).
pub const FLUSH_LSN: usize = 26;
/// Offset of the space id (`FIL_PAGE_ARCH_LOG_NO_OR_SPACE_ID`).
pub const SPACE_ID: usize = 34;
/// Size of the FIL header; the page body starts here (`FIL_PAGE_DATA`).
pub const HEADER_SIZE: usize = 38;
/// Size of the FIL trailer (`FIL_PAGE_DATA_END`).
pub const TRAILER_SIZE: usize = 8;
/// "No page": the null value of page pointers (`FIL_NULL`).
pub const FIL_NULL: u32 = 0xFFFF_FFFF;

/// Offset of the trailer in a page of `page_len` bytes.
#[inline]
pub const fn trailer_offset(page_len: usize) -> usize {
    page_len.saturating_sub(TRAILER_SIZE)
}

/// The decoded FIL header of one page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FilHeader {
    /// The checksum field at offset 0 (key version in full_crc32 tablespaces).
    pub checksum: u32,
    /// Page number within the tablespace.
    pub page_no: u32,
    /// Left sibling, or [`FIL_NULL`].
    pub prev: u32,
    /// Right sibling, or [`FIL_NULL`].
    pub next: u32,
    /// LSN of the newest change applied to the page.
    pub lsn: u64,
    /// The page type.
    pub page_type: PageType,
    /// Flush LSN (meaningful on page 0 of a system tablespace only).
    pub flush_lsn: u64,
    /// The tablespace id.
    pub space_id: u32,
}

impl FilHeader {
    /// A header for a new page: no siblings, LSN 0, checksum to be stamped later.
    pub fn new(space_id: u32, page_no: u32, page_type: PageType) -> FilHeader {
        FilHeader {
            checksum: 0,
            page_no,
            prev: FIL_NULL,
            next: FIL_NULL,
            lsn: 0,
            page_type,
            flush_lsn: 0,
            space_id,
        }
    }

    /// Decodes the header at the start of `page`.
    pub fn read(page: &[u8]) -> Result<FilHeader, PageError> {
        Ok(FilHeader {
            checksum: read_u32(page, CHECKSUM)?,
            page_no: read_u32(page, PAGE_NO)?,
            prev: read_u32(page, PREV)?,
            next: read_u32(page, NEXT)?,
            lsn: read_u64(page, LSN)?,
            page_type: PageType::from_u16(read_u16(page, PAGE_TYPE)?),
            flush_lsn: read_u64(page, FLUSH_LSN)?,
            space_id: read_u32(page, SPACE_ID)?,
        })
    }

    /// Encodes the header into the first 38 bytes of `page` (the checksum field included).
    pub fn write(&self, page: &mut [u8]) -> Result<(), PageError> {
        write_u32(page, CHECKSUM, self.checksum)?;
        write_u32(page, PAGE_NO, self.page_no)?;
        write_u32(page, PREV, self.prev)?;
        write_u32(page, NEXT, self.next)?;
        write_u64(page, LSN, self.lsn)?;
        write_u16(page, PAGE_TYPE, self.page_type.to_u16())?;
        write_u64(page, FLUSH_LSN, self.flush_lsn)?;
        write_u32(page, SPACE_ID, self.space_id)
    }
}

/// The decoded FIL trailer (last 8 bytes) of one page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FilTrailer {
    /// Bytes `[N-8, N-4)`: the second checksum field (full_crc32: LSN low word).
    pub first: u32,
    /// Bytes `[N-4, N)`: the LSN low word (full_crc32: the checksum).
    pub second: u32,
}

impl FilTrailer {
    /// Decodes the trailer of `page`.
    pub fn read(page: &[u8]) -> Result<FilTrailer, PageError> {
        let at = page
            .len()
            .checked_sub(TRAILER_SIZE)
            .ok_or(PageError::OutOfBounds {
                offset: 0,
                len: TRAILER_SIZE,
                available: page.len(),
            })?;
        Ok(FilTrailer {
            first: read_u32(page, at)?,
            second: read_u32(page, at + 4)?,
        })
    }
}

/// Reads the page LSN of `page`.
#[inline]
pub fn page_lsn(page: &[u8]) -> Result<u64, PageError> {
    read_u64(page, LSN)
}

/// Sets the page LSN in the header. The trailer copy is written when the page is stamped
/// with its checksum ([`crate::checksum::stamp`]), just before it goes to disk.
#[inline]
pub fn set_page_lsn(page: &mut [u8], lsn: u64) -> Result<(), PageError> {
    write_u64(page, LSN, lsn)
}

/// Reads the page type of `page`.
#[inline]
pub fn page_type(page: &[u8]) -> Result<PageType, PageError> {
    read_u16(page, PAGE_TYPE).map(PageType::from_u16)
}

macro_rules! page_types {
    ($( $(#[$doc:meta])* $name:ident = $value:expr, $label:expr; )*) => {
        /// What a page holds, with InnoDB's type numbers (`fil0fil.h`) where the concept is the
        /// same as InnoDB's.
        ///
        /// minnow-only page types use the range `0x4D00..=0x4DFF` ("M"), which no InnoDB or
        /// MariaDB version assigns; each is documented where it is defined and in
        /// docs/FORMAT.md. Unknown numbers are kept as [`PageType::Other`] so a page from a
        /// newer file still decodes.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub enum PageType {
            $( $(#[$doc])* $name, )*
            /// A type number minnow does not know.
            Other(u16),
        }

        impl PageType {
            /// Every known page type.
            pub const KNOWN: &'static [PageType] = &[$(PageType::$name,)*];

            /// Decodes a type number.
            pub const fn from_u16(value: u16) -> PageType {
                match value {
                    $( $value => PageType::$name, )*
                    other => PageType::Other(other),
                }
            }

            /// The type number stored at offset 24.
            pub const fn to_u16(self) -> u16 {
                match self {
                    $( PageType::$name => $value, )*
                    PageType::Other(other) => other,
                }
            }

            /// InnoDB's name for the type (`FIL_PAGE_INDEX` is `INDEX`), for tools.
            pub const fn name(self) -> &'static str {
                match self {
                    $( PageType::$name => $label, )*
                    PageType::Other(_) => "UNKNOWN_TYPE",
                }
            }
        }
    };
}

page_types! {
    /// Freshly allocated, never written (`FIL_PAGE_TYPE_ALLOCATED`). Also what 5.0 files carry
    /// in most pages' type field.
    #[default]
    Allocated = 0, "ALLOCATED";
    /// Unused (`FIL_PAGE_TYPE_UNUSED`).
    Unused = 1, "UNUSED";
    /// An undo log page (`FIL_PAGE_UNDO_LOG`).
    UndoLog = 2, "UNDO_LOG";
    /// A segment inode page (`FIL_PAGE_INODE`).
    Inode = 3, "INODE";
    /// Insert buffer free list (`FIL_PAGE_IBUF_FREE_LIST`).
    IbufFreeList = 4, "IBUF_FREE_LIST";
    /// Insert buffer bitmap (`FIL_PAGE_IBUF_BITMAP`).
    IbufBitmap = 5, "IBUF_BITMAP";
    /// System page (`FIL_PAGE_TYPE_SYS`).
    Sys = 6, "SYS";
    /// Transaction system header (`FIL_PAGE_TYPE_TRX_SYS`).
    TrxSys = 7, "TRX_SYS";
    /// File space header, page 0 (`FIL_PAGE_TYPE_FSP_HDR`).
    FspHdr = 8, "FSP_HDR";
    /// Extent descriptor page (`FIL_PAGE_TYPE_XDES`).
    Xdes = 9, "XDES";
    /// Uncompressed BLOB (overflow) page (`FIL_PAGE_TYPE_BLOB`).
    Blob = 10, "BLOB";
    /// First compressed BLOB page (`FIL_PAGE_TYPE_ZBLOB`).
    Zblob = 11, "ZBLOB";
    /// Subsequent compressed BLOB page (`FIL_PAGE_TYPE_ZBLOB2`).
    Zblob2 = 12, "ZBLOB2";
    /// Unknown content (`FIL_PAGE_TYPE_UNKNOWN`).
    Unknown = 13, "UNKNOWN";
    /// Transparently compressed page (`FIL_PAGE_COMPRESSED`).
    Compressed = 14, "COMPRESSED";
    /// Encrypted page (`FIL_PAGE_ENCRYPTED`).
    Encrypted = 15, "ENCRYPTED";
    /// Compressed and encrypted page (`FIL_PAGE_COMPRESSED_AND_ENCRYPTED`).
    CompressedAndEncrypted = 16, "COMPRESSED_AND_ENCRYPTED";
    /// Encrypted R-tree page (`FIL_PAGE_ENCRYPTED_RTREE`).
    EncryptedRtree = 17, "ENCRYPTED_RTREE";
    /// Serialized dictionary BLOB (`FIL_PAGE_SDI_BLOB`).
    SdiBlob = 18, "SDI_BLOB";
    /// Compressed serialized dictionary BLOB (`FIL_PAGE_SDI_ZBLOB`).
    SdiZblob = 19, "SDI_ZBLOB";
    /// Legacy doublewrite buffer page (`FIL_PAGE_TYPE_LEGACY_DBLWR`).
    LegacyDblwr = 20, "LEGACY_DBLWR";
    /// Rollback segment array (`FIL_PAGE_TYPE_RSEG_ARRAY`).
    RsegArray = 21, "RSEG_ARRAY";
    /// LOB index page (`FIL_PAGE_TYPE_LOB_INDEX`).
    LobIndex = 22, "LOB_INDEX";
    /// LOB data page (`FIL_PAGE_TYPE_LOB_DATA`).
    LobData = 23, "LOB_DATA";
    /// First LOB page (`FIL_PAGE_TYPE_LOB_FIRST`).
    LobFirst = 24, "LOB_FIRST";
    /// First compressed LOB page (`FIL_PAGE_TYPE_ZLOB_FIRST`).
    ZlobFirst = 25, "ZLOB_FIRST";
    /// Compressed LOB data (`FIL_PAGE_TYPE_ZLOB_DATA`).
    ZlobData = 26, "ZLOB_DATA";
    /// Compressed LOB index (`FIL_PAGE_TYPE_ZLOB_INDEX`).
    ZlobIndex = 27, "ZLOB_INDEX";
    /// Compressed LOB fragment (`FIL_PAGE_TYPE_ZLOB_FRAG`).
    ZlobFrag = 28, "ZLOB_FRAG";
    /// Compressed LOB fragment entries (`FIL_PAGE_TYPE_ZLOB_FRAG_ENTRY`).
    ZlobFragEntry = 29, "ZLOB_FRAG_ENTRY";
    /// Serialized dictionary information index (`FIL_PAGE_SDI`).
    Sdi = 17853, "SDI";
    /// R-tree index page (`FIL_PAGE_RTREE`).
    Rtree = 17854, "RTREE";
    /// B-tree index page (`FIL_PAGE_INDEX`, 0x45BF).
    Index = 17855, "INDEX";
    /// MariaDB page-compressed page (`FIL_PAGE_PAGE_COMPRESSED`).
    MariadbPageCompressed = 34354, "PAGE_COMPRESSED";
    /// MariaDB page-compressed and encrypted page (`FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED`).
    MariadbPageCompressedEncrypted = 37401, "PAGE_COMPRESSED_ENCRYPTED";
}

impl std::fmt::Display for PageType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PageType::Other(n) => write!(f, "UNKNOWN_TYPE({n})"),
            known => f.write_str(known.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip() {
        let mut page = vec![0u8; 16384];
        let header = FilHeader {
            checksum: 1,
            page_no: 3,
            prev: FIL_NULL,
            next: 7,
            lsn: 0x1234,
            page_type: PageType::Index,
            flush_lsn: 9,
            space_id: 5,
        };
        header.write(&mut page).unwrap();
        assert_eq!(&page[24..26], &[0x45, 0xBF]);
        assert_eq!(FilHeader::read(&page).unwrap(), header);
    }

    #[test]
    fn type_numbers_round_trip_and_unknown_numbers_survive() {
        for &t in PageType::KNOWN {
            assert_eq!(PageType::from_u16(t.to_u16()), t);
        }
        assert_eq!(PageType::from_u16(17855), PageType::Index);
        assert_eq!(PageType::from_u16(4242), PageType::Other(4242));
        assert_eq!(PageType::Other(4242).to_u16(), 4242);
        assert_eq!(PageType::Index.to_string(), "INDEX");
    }

    #[test]
    fn short_buffers_are_errors() {
        assert!(FilHeader::read(&[0u8; 37]).is_err());
        assert!(FilTrailer::read(&[0u8; 7]).is_err());
        assert_eq!(
            FilTrailer::read(&[0, 0, 0, 1, 0, 0, 0, 2]).unwrap(),
            FilTrailer {
                first: 1,
                second: 2
            }
        );
    }
}
