//! # Inspection: what tools and tests need from minnow's insides
//!
//! An application needs none of this. The items here are for **tools that read a data
//! directory themselves** (the `minnow` command line's `page`, `tree`, `history`, `log` and
//! `status` commands read the files of a stopped or running database without opening it)
//! and for **tests and experiments** that look under a running [`Database`]: where the
//! dictionary lives and how its records decode, the names of the files, and the buffer pool.
//!
//! **These items may change in any release**, with the on-disk format (`docs/FORMAT.md`)
//! or the engine's structure; they are not part of the stable embedding API, which is the
//! crate root.
//!
//! Lower-level types (pages, records, undo, redo) come from the lower crates themselves: a
//! tool depends on `minnow-page`, `minnow-btree`, `minnow-mvcc`, `minnow-redo`, ... directly;
//! this crate does not re-export them.
//!
//! ```
//! use minnow::inspect::{DICT_ROOT, Internals, SYSTEM_SPACE_ID, SYSTEM_TABLESPACE, dict_layout};
//! use minnow::{ColumnDef, ColumnType, Config, Database, TableDef};
//!
//! let dir = tempfile::tempdir()?;
//! let db = Database::create(dir.path(), Config::default())?;
//! db.create_table(TableDef::new("t")
//!     .column(ColumnDef::new("id", ColumnType::U64))
//!     .primary_key(&["id"]))?;
//! // Write every dirty page, so that a tool reading the file sees the dictionary.
//! db.buffer_pool()?.flush_all()?;
//! assert!(dir.path().join(SYSTEM_TABLESPACE).exists());
//! // The dictionary's records: the table name as key, its encoded definition as value.
//! assert_eq!(dict_layout()?.n_key(), 1);
//! assert_eq!((SYSTEM_SPACE_ID, DICT_ROOT), (0, 2));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use minnow_buf::BufferPool;

use crate::Database;
use crate::error::Result;

pub use minnow_engine::dict::{
    DICT_INDEX_ID, DICT_ROOT, REDO_LOG, SYSTEM_SPACE_ID, SYSTEM_TABLESPACE, TRX_SYS_PAGE,
    dict_layout,
};
pub use minnow_engine::schema::{IndexInfo, decode_table_indexes};

/// Access to a running [`Database`]'s engine parts, for tests, benchmarks and experiments
/// (flush every page, read the buffer pool's counters, reach the redo log). Bring it into
/// scope with `use minnow::inspect::Internals;`.
///
/// What is handed out is the engine's own object, not a copy: calls on it act on the
/// running database (a `flush_all` writes pages now). An application reads the same numbers
/// through [`Database::status`].
pub trait Internals {
    /// The buffer pool (for statistics, flushing and inspection).
    fn buffer_pool(&self) -> Result<&BufferPool>;
}

impl Internals for Database {
    fn buffer_pool(&self) -> Result<&BufferPool> {
        self.pool()
    }
}
