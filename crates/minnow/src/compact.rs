//! Compaction by copy: [`Database::compact_into`].
//!
//! ## Why a copy
//!
//! A database's files only grow. Removed rows leave their pages on minnow's free lists (for
//! the next inserts of any table, see `minnow_btree::space`), not to the file system, and a
//! tree built by random inserts keeps the half-full pages its splits made. Giving the space
//! back in place would mean moving live pages from the end of the file into the holes and
//! rewriting every pointer to them. What SQLite's `VACUUM INTO`, LMDB's compacting copy
//! (`mdb_env_copy2` with `MDB_CP_COMPACT`) and InnoDB's `OPTIMIZE TABLE` (a table rebuild) do
//! instead is simpler and as good: write the rows again, in key order, into new trees.
//!
//! `compact_into` creates a new database in another directory with the same configuration,
//! and for each table creates it with the same definition (columns, primary key, secondary
//! indexes, compression) and fills it with [`crate::Table::load`]: every index is built
//! bottom-up from sorted entries, so its pages are full (but for the last of each level), its
//! leaves are in key order on disk, and nothing is left for purge. The rows are read in one
//! REPEATABLE READ transaction, so the copy is one consistent snapshot of every table, taken
//! when the call starts, while writers go on beside it.
//!
//! To replace a database by its copy: compact into a sibling directory, close the database,
//! swap the directories, open the copy. Not carried over: an auto-increment counter continues
//! after the largest value copied (values above it that were handed out and whose rows were
//! removed are handed out again), and the buffer pool dump (the copy has none until its first
//! close).

use std::path::Path;

use crate::{Database, Error, Result, Scan};

/// What [`Database::compact_into`] copied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactReport {
    /// Tables copied.
    pub tables: usize,
    /// Rows copied, all tables together.
    pub rows: u64,
}

impl Database {
    /// Writes a compacted copy of this database into `dest` (see the `compact` module docs):
    /// a new database with the same configuration, every table created with its definition
    /// and filled, in key order, with the rows of one REPEATABLE READ snapshot taken at the
    /// start of the call. `dest` must be missing or empty; when the call returns the copy is
    /// closed cleanly, ready for [`Database::open`]. On an error `dest` holds a partial copy,
    /// to be removed. This database stays open and usable throughout.
    ///
    /// ```
    /// use minnow::{ColumnDef, ColumnType, Config, Database, TableDef, Value};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Database::create(dir.path().join("db"), Config::default())?;
    /// let t = db.create_table(TableDef::new("t")
    ///     .column(ColumnDef::new("id", ColumnType::U64))
    ///     .primary_key(&["id"]))?;
    /// t.insert_many((0..100u64).map(|i| vec![Value::UInt(i)]))?;
    /// let report = db.compact_into(dir.path().join("copy"))?;
    /// assert_eq!((report.tables, report.rows), (1, 100));
    /// let copy = Database::open(dir.path().join("copy"), Config::default())?;
    /// assert_eq!(copy.check()?.rows["t"], 100);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compact_into(&self, dest: impl AsRef<Path>) -> Result<CompactReport> {
        let dest = dest.as_ref();
        let config = self.config()?.clone();
        if let Ok(mut entries) = std::fs::read_dir(dest)
            && entries.next().is_some()
        {
            return Err(Error::Directory {
                path: dest.to_path_buf(),
                reason: "is not empty: a compacted copy is written only into a new directory"
                    .into(),
            });
        }
        let copy = Database::create(dest, config)?;
        let snapshot = self.begin()?;
        let mut report = CompactReport::default();
        for name in self.tables()? {
            let from = self.table(&name)?;
            let to = copy.create_table(from.def().clone())?;
            let mut failed = None;
            let mut rows = 0u64;
            to.load(snapshot.scan(&from, Scan::all())?.map_while(|r| match r {
                Ok(row) => {
                    rows += 1;
                    Some(row)
                }
                Err(e) => {
                    failed = Some(e);
                    None
                }
            }))?;
            if let Some(e) = failed {
                return Err(e);
            }
            report.tables += 1;
            report.rows += rows;
        }
        snapshot.commit()?;
        copy.close()?;
        Ok(report)
    }
}
