//! Reading the pages of a database directory without opening the database.
//!
//! Opening a database runs recovery, which writes; the inspection commands (`tree`, `history`,
//! `page`'s undo walk) read the files of a stopped or running database as they are instead. A
//! [`Reader`] opens `DIR/ibdata1` read-only and, once told of a compressed table
//! ([`Reader::follow`]), that table's shared compressed tablespace; every page it hands out
//! has passed its checksum (with the policy the tablespace's flags call for), and every
//! error names the page and what is wrong with it.

use std::path::Path;

use minnow::TableDef;
use minnow::inspect::IndexInfo;
use minnow_page::checksum::{self, ChecksumPolicy};

use crate::output::CliError;
use crate::space::Space;

/// One tablespace file the reader reads pages of, with the checksum policy its flags call for.
pub(crate) struct SpaceFile {
    /// The file.
    pub space: Space,
    /// How its pages are checked.
    pub policy: ChecksumPolicy,
}

impl SpaceFile {
    /// Opens `path` read-only (a compressed file's blocks are inflated as they are read).
    pub fn open(path: &Path) -> Result<SpaceFile, CliError> {
        let space = Space::open(path, None)?;
        let policy = space.policy(ChecksumPolicy::default());
        Ok(SpaceFile { space, policy })
    }

    /// Reads page `page_no` into `buf` (one page long) and verifies its checksum.
    pub fn checked_page(&self, page_no: u32, buf: &mut [u8]) -> Result<(), String> {
        if u64::from(page_no) >= self.space.pages() {
            return Err(format!(
                "page {page_no} is past the end of {} ({} pages)",
                self.space.name(),
                self.space.pages()
            ));
        }
        self.space
            .read_page(u64::from(page_no), buf)
            .map_err(|e| e.to_string())?;
        checksum::verify(buf, self.policy)
            .map(|_| ())
            .map_err(|e| format!("page {page_no} is corrupt: {e}"))
    }
}

/// Reads and checks pages of the system tablespace and, once [`Reader::follow`] has been told
/// of a compressed table, of that table's compressed tablespace.
pub(crate) struct Reader {
    /// `ibdata1`: the dictionary, the undo log, uncompressed tables.
    pub system: SpaceFile,
    /// A compressed table's shared tablespace and its id, once followed.
    table_space: Option<(u32, SpaceFile)>,
}

impl Reader {
    /// Opens `DIR/ibdata1` read-only, checking pages with the default policy adjusted to the
    /// tablespace's flags.
    pub fn open(dir: &Path) -> Result<Reader, CliError> {
        Ok(Reader {
            system: SpaceFile::open(&dir.join(minnow::inspect::SYSTEM_TABLESPACE))?,
            table_space: None,
        })
    }

    /// A reader of one already open file, taken as the system tablespace (`minnow page`
    /// walks an undo stream through the file it was given).
    pub fn over(space: Space, policy: ChecksumPolicy) -> Reader {
        Reader {
            system: SpaceFile { space, policy },
            table_space: None,
        }
    }

    /// Opens the tablespace `index` of table `def` lives in, if it is not `ibdata1`: a
    /// compressed table's shared compressed tablespace, `DIR/` +
    /// [`minnow::Compression::file_name`]. An error names the file and the table when it cannot be
    /// opened, or when the dictionary's space id for the index disagrees with the table's
    /// compression.
    pub fn follow(
        &mut self,
        dir: &Path,
        def: &TableDef,
        index: &IndexInfo,
    ) -> Result<(), CliError> {
        let Some(c) = def.compression else {
            return if index.space_id == minnow::inspect::SYSTEM_SPACE_ID {
                Ok(())
            } else {
                Err(CliError::Database(format!(
                    "table `{}`: index `{}` is in tablespace {} but the table is not compressed",
                    def.name, index.name, index.space_id
                )))
            };
        };
        if index.space_id != c.space_id() {
            return Err(CliError::Database(format!(
                "table `{}` is compressed ({c}) but index `{}` is in tablespace {}, not {}",
                def.name,
                index.name,
                index.space_id,
                c.space_id()
            )));
        }
        let path = dir.join(c.file_name());
        let file = SpaceFile::open(&path).map_err(|e| {
            CliError::Database(format!(
                "table `{}` is compressed ({c}): its tablespace cannot be read: {e}",
                def.name
            ))
        })?;
        if file.space.zip().is_none() {
            return Err(CliError::Database(format!(
                "table `{}` is compressed ({c}) but {} is not a compressed tablespace",
                def.name,
                path.display()
            )));
        }
        self.table_space = Some((c.space_id(), file));
        Ok(())
    }

    /// The file of tablespace `space_id`: `ibdata1` or the followed compressed tablespace.
    pub fn file(&self, space_id: u32) -> Result<&SpaceFile, String> {
        if space_id == minnow::inspect::SYSTEM_SPACE_ID {
            return Ok(&self.system);
        }
        match &self.table_space {
            Some((id, file)) if *id == space_id => Ok(file),
            _ => Err(format!("tablespace {space_id} is not open")),
        }
    }

    /// The (logical) page size: every tablespace of a database has the same.
    pub fn page_len(&self) -> usize {
        self.system.space.page_size().bytes()
    }

    /// Reads page `page_no` of tablespace `space_id` into `buf` (one page long) and verifies
    /// its checksum; the error says what is wrong with the page (past the end, unreadable,
    /// corrupt, a tablespace not open).
    pub fn checked_page(&self, space_id: u32, page_no: u32, buf: &mut [u8]) -> Result<(), String> {
        self.file(space_id)?.checked_page(page_no, buf)
    }
}
