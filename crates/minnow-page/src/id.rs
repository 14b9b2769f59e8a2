//! Page addresses.
//!
//! A page is named by the tablespace it lives in and its number within that tablespace,
//! exactly the pair the FIL header stores at offsets 34 and 4. The buffer pool hashes it, the
//! redo log addresses records to it, the doublewrite buffer records it next to each copy.

/// The address of a page: (space id, page number).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct PageId {
    /// The tablespace id.
    pub space: u32,
    /// The page number within the tablespace.
    pub page_no: u32,
}

impl PageId {
    /// The page `page_no` of tablespace `space`.
    #[inline]
    pub const fn new(space: u32, page_no: u32) -> PageId {
        PageId { space, page_no }
    }

    /// Packs the address into one `u64` (space in the high half), e.g. for hashing or dumps.
    #[inline]
    pub const fn to_u64(self) -> u64 {
        ((self.space as u64) << 32) | self.page_no as u64
    }

    /// Unpacks an address packed with [`PageId::to_u64`].
    #[inline]
    pub const fn from_u64(packed: u64) -> PageId {
        PageId {
            space: (packed >> 32) as u32,
            page_no: packed as u32,
        }
    }
}

impl std::fmt::Display for PageId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.space, self.page_no)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_and_orders_by_space_then_page() {
        let id = PageId::new(7, 0xFFFF_FFFE);
        assert_eq!(PageId::from_u64(id.to_u64()), id);
        assert!(PageId::new(1, 9) < PageId::new(2, 0));
        assert_eq!(id.to_string(), "7:4294967294");
    }
}
