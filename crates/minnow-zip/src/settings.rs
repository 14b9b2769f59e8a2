//! Block size, algorithm and level: what a compressed table would be created with.

use crate::ZipError;

/// The size of a compressed block on disk, InnoDB's `KEY_BLOCK_SIZE`.
///
/// InnoDB stores it as a "zip shift size" (`ZIP_SSIZE`, 1 to 5): the block is `512 << ssize`
/// bytes. It must not be larger than the logical page. 8 KiB is InnoDB's default (half of a
/// 16 KiB page).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum KeyBlockSize {
    /// 1 KiB blocks (a 16 KiB page must compress 16:1, less the headers).
    K1,
    /// 2 KiB blocks.
    K2,
    /// 4 KiB blocks.
    K4,
    /// 8 KiB blocks, InnoDB's default for 16 KiB pages.
    #[default]
    K8,
    /// 16 KiB blocks (for 16 KiB pages: compressed, but no space saved per page).
    K16,
}

impl KeyBlockSize {
    /// Every block size, smallest first.
    pub const ALL: [KeyBlockSize; 5] = [
        KeyBlockSize::K1,
        KeyBlockSize::K2,
        KeyBlockSize::K4,
        KeyBlockSize::K8,
        KeyBlockSize::K16,
    ];

    /// InnoDB's zip shift size: `bytes() == 512 << ssize()` (1 for 1 KiB up to 5 for 16 KiB).
    pub const fn ssize(self) -> u8 {
        match self {
            KeyBlockSize::K1 => 1,
            KeyBlockSize::K2 => 2,
            KeyBlockSize::K4 => 3,
            KeyBlockSize::K8 => 4,
            KeyBlockSize::K16 => 5,
        }
    }

    /// The size in bytes.
    pub const fn bytes(self) -> usize {
        512 << self.ssize()
    }

    /// The size in KiB, as `KEY_BLOCK_SIZE` is written.
    pub const fn kib(self) -> usize {
        self.bytes() / 1024
    }

    /// The block size with zip shift size `ssize`, if it is one of 1-5.
    pub const fn from_ssize(ssize: u8) -> Option<KeyBlockSize> {
        match ssize {
            1 => Some(KeyBlockSize::K1),
            2 => Some(KeyBlockSize::K2),
            3 => Some(KeyBlockSize::K4),
            4 => Some(KeyBlockSize::K8),
            5 => Some(KeyBlockSize::K16),
            _ => None,
        }
    }

    /// The block size of `bytes` bytes, if it is one of 1, 2, 4, 8 or 16 KiB.
    pub fn from_bytes(bytes: usize) -> Option<KeyBlockSize> {
        KeyBlockSize::ALL.into_iter().find(|k| k.bytes() == bytes)
    }
}

/// A zlib compression level, 1 (fastest) to 9 (smallest); InnoDB's
/// `innodb_compression_level`, default 6. (InnoDB also accepts 0, "store without
/// compressing", which can never make a page smaller; minnow does not.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ZlibLevel(u8);

impl ZlibLevel {
    /// Level 6, InnoDB's and zlib's default.
    pub const DEFAULT: ZlibLevel = ZlibLevel(6);
    /// Level 1: fastest.
    pub const FASTEST: ZlibLevel = ZlibLevel(1);
    /// Level 9: smallest.
    pub const SMALLEST: ZlibLevel = ZlibLevel(9);

    /// `level` if it is 1 to 9, else [`ZipError::BadLevel`].
    pub const fn new(level: u8) -> Result<ZlibLevel, ZipError> {
        if 1 <= level && level <= 9 {
            Ok(ZlibLevel(level))
        } else {
            Err(ZipError::BadLevel { level })
        }
    }

    /// The level as a number.
    pub const fn get(self) -> u8 {
        self.0
    }
}

impl Default for ZlibLevel {
    fn default() -> Self {
        ZlibLevel::DEFAULT
    }
}

/// The compression algorithm of a block.
///
/// The numbers stored in the block ([`Algorithm::id`]) are those MySQL's transparent page
/// compression writes (1 = zlib, 2 = LZ4), so a reader of either format sees the same code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// Deflate in a zlib wrapper (RFC 1950/1951), what InnoDB's compressed tables use; pure
    /// Rust through `miniz_oxide`.
    Zlib(ZlibLevel),
    /// The LZ4 block format (no frame), through `lz4_flex`: several times faster to compress
    /// and to inflate than zlib, compresses less.
    Lz4,
}

impl Algorithm {
    /// The algorithm's number in a block's zip header: 1 = zlib, 2 = LZ4.
    pub const fn id(self) -> u8 {
        match self {
            Algorithm::Zlib(_) => 1,
            Algorithm::Lz4 => 2,
        }
    }

    /// The level byte stored in a block: the zlib level, 0 for LZ4.
    pub const fn level_byte(self) -> u8 {
        match self {
            Algorithm::Zlib(level) => level.get(),
            Algorithm::Lz4 => 0,
        }
    }

    /// The algorithm stored as `id` with level byte `level`, validated.
    pub fn from_stored(id: u8, level: u8) -> Result<Algorithm, ZipError> {
        match id {
            1 if (1..=9).contains(&level) => Ok(Algorithm::Zlib(ZlibLevel(level))),
            1 => Err(ZipError::BadRecordedLevel {
                algorithm: "zlib",
                expected: "1 to 9",
                actual: level,
            }),
            2 if level == 0 => Ok(Algorithm::Lz4),
            2 => Err(ZipError::BadRecordedLevel {
                algorithm: "lz4",
                expected: "0",
                actual: level,
            }),
            actual => Err(ZipError::UnknownAlgorithm { actual }),
        }
    }

    /// `"zlib"` or `"lz4"`.
    pub const fn name(self) -> &'static str {
        match self {
            Algorithm::Zlib(_) => "zlib",
            Algorithm::Lz4 => "lz4",
        }
    }
}

impl Default for Algorithm {
    /// zlib at level 6, InnoDB's default.
    fn default() -> Self {
        Algorithm::Zlib(ZlibLevel::DEFAULT)
    }
}

impl std::fmt::Display for Algorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Algorithm::Zlib(level) => write!(f, "zlib-{}", level.get()),
            Algorithm::Lz4 => f.write_str("lz4"),
        }
    }
}

/// How pages are compressed: the block size and the algorithm (what `CREATE TABLE ...
/// KEY_BLOCK_SIZE=8` with `innodb_compression_level=6` would choose).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ZipConfig {
    /// The compressed block size.
    pub block_size: KeyBlockSize,
    /// The algorithm and level.
    pub algorithm: Algorithm,
}

impl ZipConfig {
    /// Blocks of `block_size` compressed with `algorithm`.
    pub const fn new(block_size: KeyBlockSize, algorithm: Algorithm) -> ZipConfig {
        ZipConfig {
            block_size,
            algorithm,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_sizes_follow_innodb_zip_ssize() {
        for k in KeyBlockSize::ALL {
            assert_eq!(k.bytes(), 512 << k.ssize());
            assert_eq!(KeyBlockSize::from_ssize(k.ssize()), Some(k));
            assert_eq!(KeyBlockSize::from_bytes(k.bytes()), Some(k));
        }
        assert_eq!(KeyBlockSize::default().kib(), 8);
        assert_eq!(KeyBlockSize::from_ssize(0), None);
        assert_eq!(KeyBlockSize::from_ssize(6), None);
    }

    #[test]
    fn levels_and_algorithms_round_trip() {
        assert_eq!(ZlibLevel::new(0), Err(ZipError::BadLevel { level: 0 }));
        assert_eq!(ZlibLevel::new(10), Err(ZipError::BadLevel { level: 10 }));
        for l in 1..=9 {
            let a = Algorithm::Zlib(ZlibLevel::new(l).unwrap());
            assert_eq!(Algorithm::from_stored(a.id(), a.level_byte()), Ok(a));
        }
        assert_eq!(Algorithm::from_stored(2, 0), Ok(Algorithm::Lz4));
        assert!(Algorithm::from_stored(2, 3).is_err());
        assert!(Algorithm::from_stored(1, 0).is_err());
        assert_eq!(
            Algorithm::from_stored(7, 0),
            Err(ZipError::UnknownAlgorithm { actual: 7 })
        );
        assert_eq!(Algorithm::default().to_string(), "zlib-6");
    }
}
