//! Page sizes.
//!
//! A tablespace has one page size, fixed at creation: 4, 8, 16 (the default), 32 or 64 KiB, as
//! `innodb_page_size` allows. InnoDB records it in page 0's FSP flags as a "shift size"
//! (`ssize`): the size is `512 << ssize`, so 4 KiB is 3 and 64 KiB is 7 (see [`crate::fsp`]).
//! Extents, the unit in which space is handed to indexes, are 1 MiB for pages up to 16 KiB and
//! 2 or 4 MiB for 32 and 64 KiB pages.

use crate::PageError;

/// The size of every page in one tablespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum PageSize {
    /// 4 KiB pages.
    K4,
    /// 8 KiB pages.
    K8,
    /// 16 KiB pages, InnoDB's default.
    #[default]
    K16,
    /// 32 KiB pages.
    K32,
    /// 64 KiB pages.
    K64,
}

impl PageSize {
    /// Every supported size, smallest first.
    pub const ALL: [PageSize; 5] = [
        PageSize::K4,
        PageSize::K8,
        PageSize::K16,
        PageSize::K32,
        PageSize::K64,
    ];

    /// The size in bytes.
    #[inline]
    pub const fn bytes(self) -> usize {
        512 << self.ssize()
    }

    /// InnoDB's shift size: `bytes == 512 << ssize` (3 for 4 KiB up to 7 for 64 KiB).
    #[inline]
    pub const fn ssize(self) -> u32 {
        match self {
            PageSize::K4 => 3,
            PageSize::K8 => 4,
            PageSize::K16 => 5,
            PageSize::K32 => 6,
            PageSize::K64 => 7,
        }
    }

    /// The page size with shift size `ssize`, if it is one minnow supports.
    pub const fn from_ssize(ssize: u32) -> Option<PageSize> {
        match ssize {
            3 => Some(PageSize::K4),
            4 => Some(PageSize::K8),
            5 => Some(PageSize::K16),
            6 => Some(PageSize::K32),
            7 => Some(PageSize::K64),
            _ => None,
        }
    }

    /// The page size of `bytes` bytes, or [`PageError::BadPageSize`].
    pub fn from_bytes(bytes: usize) -> Result<PageSize, PageError> {
        PageSize::ALL
            .into_iter()
            .find(|size| size.bytes() == bytes)
            .ok_or(PageError::BadPageSize { bytes })
    }

    /// Pages per extent: 64 up to 16 KiB pages (1 MiB extents), then 2 MiB and 4 MiB extents.
    #[inline]
    pub const fn pages_per_extent(self) -> u32 {
        match self {
            PageSize::K4 => 256,
            PageSize::K8 => 128,
            PageSize::K16 => 64,
            PageSize::K32 => 64,
            PageSize::K64 => 64,
        }
    }
}

impl std::fmt::Display for PageSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} KiB", self.bytes() / 1024)
    }
}

impl std::str::FromStr for PageSize {
    type Err = PageError;

    /// Accepts `16384`, `16k`, `16K` or `16KiB`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let lower = t.to_ascii_lowercase();
        let digits = lower
            .strip_suffix("kib")
            .or_else(|| lower.strip_suffix('k'))
            .map(|d| (d, 1024))
            .unwrap_or((lower.as_str(), 1));
        let n: usize = digits
            .0
            .parse()
            .map_err(|_| PageError::BadPageSize { bytes: 0 })?;
        PageSize::from_bytes(n.saturating_mul(digits.1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_shift_sizes_agree() {
        for size in PageSize::ALL {
            assert_eq!(PageSize::from_ssize(size.ssize()), Some(size));
            assert_eq!(PageSize::from_bytes(size.bytes()).unwrap(), size);
        }
        assert_eq!(PageSize::K16.bytes(), 16384);
        assert_eq!(PageSize::default(), PageSize::K16);
        assert!(PageSize::from_bytes(1000).is_err());
        assert_eq!(PageSize::from_ssize(2), None);
    }

    #[test]
    fn parses_human_sizes() {
        assert_eq!("16k".parse::<PageSize>().unwrap(), PageSize::K16);
        assert_eq!("4KiB".parse::<PageSize>().unwrap(), PageSize::K4);
        assert_eq!("65536".parse::<PageSize>().unwrap(), PageSize::K64);
        assert!("3k".parse::<PageSize>().is_err());
        assert!("k".parse::<PageSize>().is_err());
    }
}
