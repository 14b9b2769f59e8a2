//! Compressed tables (`ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=n`): the setting
//! ([`Compression`]), the shared compressed tablespaces that hold such tables' indexes, and
//! how `open` finds them again.
//!
//! ## One tablespace per block size and algorithm
//!
//! A tablespace file is an array of equal slots: page `n` of a compressed file lives at
//! `n * block_size` (`minnow_io::tablespace`). So every page of a file has the same physical
//! size, and a table compressed into 8 KiB blocks cannot share a file with one compressed
//! into 4 KiB blocks, nor with the 16 KiB pages of `ibdata1`. The blocks also record their
//! algorithm, which the file's reads and writes use for every page. minnow therefore keeps
//! one **shared compressed tablespace per (block size, algorithm)**, like a MySQL general
//! tablespace created with `FILE_BLOCK_SIZE` (which only accepts tables of that
//! `KEY_BLOCK_SIZE`), rather than a file per table (`innodb_file_per_table`, which minnow does
//! not have yet):
//!
//! | setting | file | space id |
//! |---|---|---|
//! | `KEY_BLOCK_SIZE=8`, zlib level 6 | `zip8k_zlib-6.ibd` | 16 × 4 + 6 = 70 |
//! | `KEY_BLOCK_SIZE=4`, LZ4 | `zip4k_lz4.ibd` | 16 × 3 + 10 = 58 |
//!
//! ([`Compression::space_id`] has the rule.) All of a compressed table's indexes, clustered
//! and secondary, with their overflow pages (which come from the trees' own segments), live
//! there; the dictionary, the undo log and uncompressed tables stay in `ibdata1`.
//!
//! ## Created lazily, crash-safely
//!
//! The first `create_table` that needs a tablespace creates its file
//! ([`minnow_io::Tablespace::create_compressed`], 4 pages, page 0 holding the FSP header the
//! page allocator grows from, exactly as `ibdata1`'s at `Database::create`). A power cut
//! inside the creation can leave that file in any state: empty, of any length up to its 4
//! blocks, with block 0 missing or torn (some of its sectors written, others still zeros).
//! Nothing can tell such a file from one whose block 0 was damaged later, after tables had
//! put rows in it, by looking at it. So the name says it instead:
//!
//! 1. the file is created as `zip{KiB}k_{alg}.ibd.creating` (a stale one of that name is
//!    removed first: see below why nothing can refer to it), and
//!    [`minnow_io::Tablespace::create_compressed`] writes block 0 and syncs the file and the
//!    directory;
//! 2. only then is it renamed to its real name, the directory synced again, the file opened
//!    under that name (page 0 verified) and the space registered with the buffer pool.
//!
//! No redo record, dictionary record or page write can name a space before step 2 ends, and
//! `open` looks up spaces by their real names only, so a `.creating` file never holds anything
//! a table wrote: `open` removes every one it finds, with a note
//! (`OpenReport::notes`). A file with a real name, on the other hand, had its whole
//! block 0 durable before it got that name (and it never shrinks below its 4 blocks), so
//! whatever is wrong with it is damage, not a creation cut short: `open` never removes it, and
//! reports a file it cannot open as [`Error::Directory`] naming it.
//!
//! `open` registers every `zip*.ibd` of the directory **before** recovery (redo and the
//! doublewrite buffer may name their pages), opening them without verifying page 0 (a torn
//! page 0 is repaired like any other page), and reads page 0 of each through the verifying
//! path once recovery is done.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use minnow_buf::SpaceMap;
use minnow_io::{Backend, OpenOptions, Tablespace};
use minnow_page::checksum::{ChecksumAlgorithm, ChecksumPolicy};
use minnow_page::{PageId, PageSize};
use minnow_zip::{Algorithm, KeyBlockSize, ZipConfig, ZlibLevel};

use crate::config::Config;
use crate::error::{Error, Result};

/// How a compressed table's pages are stored: InnoDB's `ROW_FORMAT=COMPRESSED` with
/// `KEY_BLOCK_SIZE` and `innodb_compression_level` (or LZ4, which InnoDB's compressed tables
/// do not offer). Give it to [`crate::TableDef::compressed`].
///
/// ```
/// # mod minnow { // the items as the `minnow` crate (which depends on this one) re-exports them
/// #     pub use minnow_btree::record::ColumnType;
/// #     pub use minnow_engine::Compression;
/// #     pub use minnow_zip::KeyBlockSize;
/// #     pub use minnow_engine::config::{Config, KnobError};
/// #     pub use minnow_engine::{ColumnDef, Error, IndexDef, TableDef};
/// #     pub use minnow_redo::FlushAtCommit;
/// # }
/// use minnow::{Compression, KeyBlockSize};
///
/// let c = Compression::default();
/// assert_eq!(c.to_string(), "KEY_BLOCK_SIZE=8 zlib-6");
/// assert_eq!(Compression::lz4(KeyBlockSize::K4).to_string(), "KEY_BLOCK_SIZE=4 lz4");
/// assert!(Compression::zlib(KeyBlockSize::K8, 0).is_err());
/// assert_eq!(c.file_name(), "zip8k_zlib-6.ibd");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compression {
    /// The compressed block size (1, 2, 4 or 8 KiB, smaller than the page size).
    pub block_size: KeyBlockSize,
    /// The algorithm, and zlib's level.
    pub algorithm: Algorithm,
}

impl Default for Compression {
    /// 8 KiB blocks, zlib level 6: InnoDB's `KEY_BLOCK_SIZE` default for 16 KiB pages and
    /// its `innodb_compression_level` default.
    fn default() -> Self {
        Compression::new(KeyBlockSize::K8, Algorithm::Zlib(ZlibLevel::DEFAULT))
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "KEY_BLOCK_SIZE={} {}",
            self.block_size.kib(),
            self.algorithm
        )
    }
}

/// The code of LZ4 in a compressed space's id (zlib's is its level, 1 to 9).
const LZ4_CODE: u32 = 10;

impl Compression {
    /// Blocks of `block_size` compressed with `algorithm`.
    pub const fn new(block_size: KeyBlockSize, algorithm: Algorithm) -> Compression {
        Compression {
            block_size,
            algorithm,
        }
    }

    /// Blocks of `block_size` compressed with zlib at `level` (1 fastest to 9 smallest);
    /// another level is [`Error::Config`] naming `innodb_compression_level`.
    pub fn zlib(block_size: KeyBlockSize, level: u8) -> Result<Compression> {
        let level = ZlibLevel::new(level).map_err(|e| Error::Config {
            knob: "innodb_compression_level",
            reason: e.to_string(),
        })?;
        Ok(Compression::new(block_size, Algorithm::Zlib(level)))
    }

    /// Blocks of `block_size` compressed with LZ4.
    pub const fn lz4(block_size: KeyBlockSize) -> Compression {
        Compression::new(block_size, Algorithm::Lz4)
    }

    /// The id of the shared tablespace holding every table with this setting:
    /// `16 * ssize + code`, where `ssize` is InnoDB's zip shift size of the block
    /// ([`KeyBlockSize::ssize`], 1 for 1 KiB to 4 for 8 KiB) and `code` the zlib level (1 to
    /// 9) or 10 for LZ4. Every setting gets its own id, none is 0 (the system tablespace),
    /// and the id alone gives the setting back ([`Compression::from_space_id`]).
    pub const fn space_id(&self) -> u32 {
        let code = match self.algorithm {
            Algorithm::Zlib(level) => level.get() as u32,
            Algorithm::Lz4 => LZ4_CODE,
        };
        16 * self.block_size.ssize() as u32 + code
    }

    /// The setting whose tablespace has id `space_id`, if any ([`Compression::space_id`]
    /// backwards).
    pub fn from_space_id(space_id: u32) -> Option<Compression> {
        let ssize = u8::try_from(space_id / 16).ok()?;
        let block_size = KeyBlockSize::from_ssize(ssize)?;
        let algorithm = match space_id % 16 {
            LZ4_CODE => Algorithm::Lz4,
            code => Algorithm::Zlib(ZlibLevel::new(u8::try_from(code).ok()?).ok()?),
        };
        Some(Compression::new(block_size, algorithm))
    }

    /// The shared tablespace's file name in the data directory: `zip{KiB}k_{algorithm}.ibd`,
    /// as `zip8k_zlib-6.ibd` or `zip4k_lz4.ibd`.
    pub fn file_name(&self) -> String {
        format!("zip{}k_{}.ibd", self.block_size.kib(), self.algorithm)
    }

    /// The setting whose tablespace file is called `name`, if it is one.
    pub fn from_file_name(name: &str) -> Option<Compression> {
        let rest = name.strip_prefix("zip")?.strip_suffix(".ibd")?;
        let (kib, alg) = rest.split_once("k_")?;
        let block_size = KeyBlockSize::from_bytes(kib.parse::<usize>().ok()?.checked_mul(1024)?)?;
        let algorithm = match alg.strip_prefix("zlib-") {
            Some(level) => Algorithm::Zlib(ZlibLevel::new(level.parse().ok()?).ok()?),
            None if alg == "lz4" => Algorithm::Lz4,
            None => return None,
        };
        let c = Compression::new(block_size, algorithm);
        (c.file_name() == name).then_some(c)
    }

    /// The tablespace's settings.
    pub(crate) fn zip_config(&self) -> ZipConfig {
        ZipConfig::new(self.block_size, self.algorithm)
    }

    /// The three bytes the dictionary record stores: zip shift size, algorithm id, level byte.
    pub(crate) fn to_stored(self) -> [u8; 3] {
        [
            self.block_size.ssize(),
            self.algorithm.id(),
            self.algorithm.level_byte(),
        ]
    }

    /// [`Compression::to_stored`] backwards; `None` for bytes no setting writes.
    pub(crate) fn from_stored(b: [u8; 3]) -> Option<Compression> {
        let block_size = KeyBlockSize::from_ssize(b[0])?;
        let algorithm = Algorithm::from_stored(b[1], b[2]).ok()?;
        Some(Compression::new(block_size, algorithm))
    }

    /// Refuses a setting that does not fit the table's definition alone: 16 KiB blocks
    /// (InnoDB's `KEY_BLOCK_SIZE=16` saves no space with 16 KiB pages, and minnow's compressed
    /// files need a block smaller than the page).
    pub(crate) fn check_definition(&self, table: &str) -> Result<()> {
        if self.block_size == KeyBlockSize::K16 {
            return Err(Error::BadDefinition {
                table: table.to_owned(),
                reason: "KEY_BLOCK_SIZE=16 is not supported: compressed tables take 1, 2, 4 or 8 \
                         KiB blocks"
                    .into(),
            });
        }
        Ok(())
    }
}

/// Refuses a setting the database's configuration cannot store: a block not smaller than
/// the page size, or the `full_crc32` checksum (whose FSP flags have no compressed size).
pub fn check_config(c: &Compression, table: &str, config: &Config) -> Result<()> {
    c.check_definition(table)?;
    if c.block_size.bytes() >= config.page_size.bytes() {
        return Err(Error::BadDefinition {
            table: table.to_owned(),
            reason: format!(
                "KEY_BLOCK_SIZE={} must be smaller than the {} page size",
                c.block_size.kib(),
                config.page_size
            ),
        });
    }
    if config.checksum_algorithm == ChecksumAlgorithm::FullCrc32 {
        return Err(Error::Config {
            knob: "innodb_checksum_algorithm",
            reason: format!(
                "table `{table}` is ROW_FORMAT=COMPRESSED, and full_crc32 tablespaces cannot \
                 be compressed (their FSP flags have no compressed page size)"
            ),
        });
    }
    Ok(())
}

/// The id of the tablespace holding the indexes of a table with compression `c` (the system
/// tablespace for an uncompressed one).
pub fn space_of(c: Option<Compression>) -> u32 {
    c.map_or(crate::dict::SYSTEM_SPACE_ID, |c| c.space_id())
}

/// The suffix of a compressed tablespace file while it is being created (see the module docs).
const CREATING: &str = ".creating";

/// Makes sure the shared tablespace for `c` exists and is registered in `spaces`, creating
/// its file if not (see the module docs: the file is created under a temporary name, and
/// gets its real name only once its page 0 is durable). Returns its space id. Called under
/// the database's write lock.
pub fn ensure_space(dir: &Path, config: &Config, spaces: &SpaceMap, c: Compression) -> Result<u32> {
    let id = c.space_id();
    if spaces.get(id).is_some() {
        return Ok(id);
    }
    let path = dir.join(c.file_name());
    let creating = dir.join(format!("{}{CREATING}", c.file_name()));
    let file_err = |path: &Path, e: std::io::Error| Error::Directory {
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    // A leftover of an attempt that failed in this process: never registered, so unused.
    match std::fs::remove_file(&creating) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(file_err(&creating, e)),
        _ => {}
    }
    let backend = crate::config::backend(&config.io_backend, config.write_io_threads)?;
    drop(Tablespace::create_compressed(
        &*backend,
        &creating,
        id,
        config.page_size,
        c.zip_config(),
        config.checksum_algorithm,
        config.flush_method,
        INITIAL_BLOCKS,
    )?);
    // A file of the real name is there only if an earlier attempt of this process failed
    // after its rename: it was never registered either, and the rename replaces it.
    std::fs::rename(&creating, &path).map_err(|e| file_err(&path, e))?;
    minnow_io::tablespace::sync_parent_dir(&path)?;
    let space = Tablespace::open(
        &*backend,
        &path,
        &OpenOptions::new(config.flush_method),
        ChecksumPolicy::new(config.checksum_algorithm),
    )?;
    spaces.insert(Arc::new(space));
    Ok(id)
}

/// The length of a new compressed tablespace file, in blocks.
const INITIAL_BLOCKS: u32 = 4;

/// What [`register_files`] found: the spaces it registered and notes on files it removed.
#[derive(Debug, Default)]
pub struct Registered {
    /// Space ids registered, to verify page 0 of after recovery.
    pub ids: Vec<u32>,
    /// One line per file removed (a creation a crash cut short).
    pub notes: Vec<String>,
}

/// Registers every compressed tablespace file of `dir` in `spaces`, opened for recovery
/// (page 0 unverified): called by `open` before recovery. Files a crash left while they were
/// being created (`*.ibd.creating`) are removed with a note; any other file that does not
/// open, holds another space than its name says or has another page size is an error naming
/// it, and is left in place.
pub fn register_files(
    backend: &dyn Backend,
    dir: &Path,
    opts: &OpenOptions,
    (checksum, page_size): (ChecksumAlgorithm, PageSize),
    spaces: &SpaceMap,
) -> Result<Registered> {
    let dir_err = |reason: String| Error::Directory {
        path: dir.to_path_buf(),
        reason,
    };
    let mut found = Vec::new();
    let mut out = Registered::default();
    for entry in std::fs::read_dir(dir).map_err(|e| dir_err(e.to_string()))? {
        let entry = entry.map_err(|e| dir_err(e.to_string()))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(c) = Compression::from_file_name(name) {
            found.push((entry.path(), c));
        } else if let Some(c) = name
            .strip_suffix(CREATING)
            .and_then(Compression::from_file_name)
        {
            let path = entry.path();
            std::fs::remove_file(&path).map_err(|e| Error::Directory {
                path: path.clone(),
                reason: e.to_string(),
            })?;
            out.notes.push(format!(
                "removed {}: the creation of {} was cut short before the file got its name, so \
                 no table used it",
                path.display(),
                c.file_name()
            ));
        }
    }
    found.sort_by_key(|(_, c)| c.space_id());
    for (path, c) in found {
        let file_err = |reason: String| Error::Directory {
            path: path.clone(),
            reason,
        };
        let space =
            Tablespace::open_for_recovery(backend, &path, opts, ChecksumPolicy::new(checksum))
                .map_err(|e| {
                    file_err(format!(
                        "{e} (the file got its name only once its block 0 was durable, so this \
                         is damage, not a creation cut short: left in place, it may hold rows)"
                    ))
                })?;
        if space.space_id() != c.space_id() || space.zip() != Some(c.zip_config()) {
            return Err(file_err(format!(
                "holds space {} ({:?}), but its name says space {} ({c})",
                space.space_id(),
                space.zip(),
                c.space_id()
            )));
        }
        if space.page_size() != page_size {
            return Err(file_err(format!(
                "has {} pages, the configuration asks for {page_size}",
                space.page_size()
            )));
        }
        spaces.insert(Arc::new(space));
        out.ids.push(c.space_id());
    }
    Ok(out)
}

/// The first verified read of page 0 of each space in `ids` (opened unverified for
/// recovery), as `open` does for `ibdata1`.
pub fn verify_page0(pool: &minnow_buf::BufferPool, ids: &[u32]) -> Result<()> {
    for &id in ids {
        drop(pool.get_read(PageId::new(id, 0))?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn space_ids_and_file_names_round_trip_for_every_setting() {
        let mut ids = std::collections::HashSet::new();
        for block_size in KeyBlockSize::ALL {
            let mut algorithms = vec![Algorithm::Lz4];
            algorithms.extend((1..=9).map(|l| Algorithm::Zlib(ZlibLevel::new(l).unwrap())));
            for algorithm in algorithms {
                let c = Compression::new(block_size, algorithm);
                assert_ne!(c.space_id(), 0);
                assert!(ids.insert(c.space_id()), "{c} shares an id");
                assert_eq!(Compression::from_space_id(c.space_id()), Some(c));
                assert_eq!(Compression::from_file_name(&c.file_name()), Some(c));
                assert_eq!(Compression::from_stored(c.to_stored()), Some(c));
            }
        }
        assert_eq!(Compression::default().space_id(), 70);
        assert_eq!(Compression::lz4(KeyBlockSize::K4).space_id(), 58);
        assert_eq!(
            Compression::lz4(KeyBlockSize::K4).file_name(),
            "zip4k_lz4.ibd"
        );
        for bad in [
            "zip8k_zlib-0.ibd",
            "zip3k_lz4.ibd",
            "zip08k_lz4.ibd",
            "ibdata1",
            "zip8k_lz4",
        ] {
            assert_eq!(Compression::from_file_name(bad), None, "{bad}");
        }
        assert_eq!(Compression::from_space_id(0), None);
        assert_eq!(Compression::from_space_id(16 * 4), None);
        assert_eq!(Compression::from_stored([4, 1, 0]), None);
    }

    #[test]
    fn settings_the_table_or_configuration_cannot_store_are_refused() {
        let k16 = Compression::lz4(KeyBlockSize::K16);
        assert!(matches!(
            k16.check_definition("t"),
            Err(Error::BadDefinition { table, .. }) if table == "t"
        ));
        let small_pages = Config {
            page_size: PageSize::K8,
            ..Config::default()
        };
        assert!(matches!(
            check_config(&Compression::default(), "t", &small_pages),
            Err(Error::BadDefinition { table, .. }) if table == "t"
        ));
        assert!(check_config(&Compression::lz4(KeyBlockSize::K4), "t", &small_pages).is_ok());
        let crc = Config {
            checksum_algorithm: ChecksumAlgorithm::FullCrc32,
            ..Config::default()
        };
        assert!(matches!(
            check_config(&Compression::default(), "t", &crc),
            Err(Error::Config { knob: "innodb_checksum_algorithm", reason }) if reason.contains("`t`")
        ));
        assert!(matches!(
            Compression::zlib(KeyBlockSize::K8, 10),
            Err(Error::Config {
                knob: "innodb_compression_level",
                ..
            })
        ));
    }
}
