//! [`Database`]: the handle an application holds on one open database directory, and the
//! statements on the database as a whole (tables, DDL, `check`, `purge`). What builds the
//! engine from a directory, recovery, DDL (`create_index` too) and `check` themselves are
//! the engine crate's (`minnow-engine`'s `open`, `ddl`, `bulk`, `check` and `purge`
//! modules); the methods here check that the database is open and hand out handles.

use std::path::Path;
use std::sync::Arc;

use minnow_buf::BufferPool;
use minnow_redo::{Durability, Lsn};

use crate::config::Config;
use crate::error::Result;
use crate::schema::{IndexDef, TableDef};
use crate::status::RowOp;
use crate::table::Table;
use minnow_engine::purge::PurgeReport;
use minnow_engine::{CheckReport, Engine, OpenReport};

/// A database: a data directory holding one system tablespace (`ibdata1`, the dictionary
/// and every uncompressed table's indexes), a shared compressed tablespace per compression
/// setting in use (`zip8k_zlib-6.ibd`, ...), the redo log (`ib_logfile0`), the doublewrite segments
/// (`dblwr.N`) and the buffer pool dump (`ib_buffer_pool`).
///
/// ```
/// use minnow::{ColumnDef, ColumnType, Config, Database, TableDef, Value};
///
/// let dir = tempfile::tempdir()?;
/// let db = Database::create(dir.path(), Config::default())?;
/// let users = db.create_table(
///     TableDef::new("users")
///         .column(ColumnDef::new("id", ColumnType::U64))
///         .column(ColumnDef::new("name", ColumnType::Var(40)))
///         .primary_key(&["id"]),
/// )?;
/// users.insert(&[Value::UInt(1), Value::Bytes(b"ada".to_vec())])?;
/// db.close()?;
///
/// let db = Database::open(dir.path(), Config::default())?;
/// let row = db.table("users")?.get(&[Value::UInt(1)])?;
/// assert_eq!(row, Some(vec![Value::UInt(1), Value::Bytes(b"ada".to_vec())]));
/// db.check()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// A `Database` is a handle: cloning it is cheap (one `Arc`), every clone is the same open
/// database, and it is `Send + Sync`, so threads may each own one. [`Table`] and
/// [`crate::Transaction`] handles own a clone too, so one struct can own the database, its
/// tables and a transaction, with no lifetime to thread through. See the crate docs,
/// "Handles and lifetime", for what `close` and drop mean while other handles live.
#[derive(Clone)]
pub struct Database {
    pub(crate) handle: Arc<crate::handle::Handle>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("dir", &self.handle.inner.dir())
            .field("closed", &self.handle.inner.is_closed())
            .finish()
    }
}

impl Database {
    /// Creates a database in `dir` (created if missing; it must not hold a database):
    /// the system tablespace, the redo log, the doublewrite segments and the dictionary.
    /// Creating is not crash-atomic: if it fails or the machine dies during `create`, remove
    /// the directory and create again.
    pub fn create(dir: impl AsRef<Path>, config: Config) -> Result<Database> {
        Ok(Database::from_parts(Engine::create(dir.as_ref(), config)?))
    }

    /// Opens the database in `dir` and brings it back to a consistent state, in InnoDB's
    /// order: doublewrite repair of torn pages, redo apply from the last checkpoint, flush
    /// and checkpoint (all in [`minnow_buf::BufferPool::recover`]); then the dictionary is
    /// read, and every transaction that had not committed is rolled back from its undo log.
    pub fn open(dir: impl AsRef<Path>, config: Config) -> Result<Database> {
        Ok(Database::from_parts(Engine::open(dir.as_ref(), config)?))
    }

    /// The engine, for a statement about to start; [`Error::Closed`](crate::Error::Closed)
    /// once the database is closed (one load of a flag nobody writes while it is open).
    #[inline]
    pub(crate) fn inner(&self) -> Result<&Engine> {
        let inner = &*self.handle.inner;
        inner.check_open()?;
        Ok(inner)
    }

    /// [`Database::inner`] as the `Arc` the handle holds (a scan's admission ticket keeps a
    /// clone of it).
    pub(crate) fn engine(&self) -> Result<&Arc<Engine>> {
        self.handle.inner.check_open()?;
        Ok(&self.handle.inner)
    }

    /// The engine, closed or not (a scan's cursor checks at each step, and a closed one's
    /// next row is [`Error::Closed`]).
    pub(crate) fn engine_unchecked(&self) -> &Engine {
        &self.handle.inner
    }

    /// What `open` did (all zero after `create`).
    pub fn open_report(&self) -> &OpenReport {
        &self.handle.report
    }

    /// The configuration the database runs with.
    pub fn config(&self) -> Result<&Config> {
        Ok(self.inner()?.config())
    }

    /// The buffer pool; tools reach it through [`crate::inspect::Internals`].
    pub(crate) fn pool(&self) -> Result<&BufferPool> {
        Ok(self.inner()?.pool())
    }

    /// Counts `n` row operations of kind `op` for [`Database::status`] (this thread's stripe:
    /// no shared cache line written).
    #[inline]
    pub(crate) fn count_rows(&self, op: RowOp, n: u64) {
        self.handle.inner.rows().bump(op, n);
    }

    /// Makes an acknowledged change as durable as `flush_log_at_trx_commit` asks.
    pub(crate) fn durable(&self, end: Lsn) -> Result<Durability> {
        self.durable_at(end, None)
    }

    /// Creates a table and its indexes. The trees are created first (one mtr each); the
    /// dictionary record, inserted in one more mtr, is the commit point: after a crash the
    /// table either exists whole or not at all (a crash before that record leaves segments
    /// no record names, which `open` frees; never a half-created table). Durable as
    /// `flush_log_at_trx_commit` says.
    pub fn create_table(&self, def: TableDef) -> Result<Table> {
        let entry = self.inner()?.create_table(def)?;
        Ok(Table::new(self.clone(), entry))
    }

    /// Drops table `name` with all its indexes: the dictionary record goes (the commit
    /// point, durable when this returns), then every index's segments go back to the
    /// tablespace, so the pages are reused by later inserts and the file stops growing. The
    /// name can be used again at once. Handles to the table taken before get
    /// [`Error::TableChanged`](crate::Error::TableChanged). Crash-safe: see the `ddl` module
    /// docs of the engine crate (`minnow-engine`).
    pub fn drop_table(&self, name: &str) -> Result<()> {
        self.inner()?.drop_table(name)
    }

    /// Drops secondary index `index` of table `table`: the table's dictionary record is
    /// rewritten without it (the commit point, durable when this returns), then the index's
    /// segments go back to the tablespace. The primary key cannot be dropped
    /// ([`Error::DropPrimary`](crate::Error::DropPrimary)); handles to the table taken
    /// before get [`Error::TableChanged`](crate::Error::TableChanged). Crash-safe: see the
    /// `ddl` module docs of the engine crate (`minnow-engine`).
    pub fn drop_index(&self, table: &str, index: &str) -> Result<()> {
        self.inner()?.drop_index(table, index)
    }

    /// Creates secondary index `index` on table `table` from the rows it holds, built
    /// bottom-up from sorted entries (the dictionary update is the commit point: see the
    /// `bulk` module docs of the engine crate, `minnow-engine`). A unique index over rows
    /// with equal keys fails with [`Error::DuplicateKey`](crate::Error::DuplicateKey) naming
    /// the index and the key, and leaves nothing behind. Every handle on the table maintains
    /// the new index from then on.
    ///
    /// ```
    /// use std::ops::Bound;
    /// use minnow::{ColumnDef, ColumnType, Config, Database, IndexDef, Scan, TableDef, Value};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Database::create(dir.path(), Config::default())?;
    /// let t = db.create_table(TableDef::new("t")
    ///     .column(ColumnDef::new("id", ColumnType::U32))
    ///     .column(ColumnDef::new("city", ColumnType::Var(20)))
    ///     .primary_key(&["id"]))?;
    /// for (id, city) in [(1u64, "oslo"), (2, "bern"), (3, "oslo")] {
    ///     t.insert(&[Value::UInt(id), Value::Bytes(city.into())])?;
    /// }
    /// db.create_index("t", IndexDef::new("by_city", &["city"]))?;
    /// let oslo = Bound::Included(vec![Value::Bytes(b"oslo".to_vec())]);
    /// let t = db.table("t")?;
    /// let ids: Vec<_> = t
    ///     .scan_index("by_city", Scan::range(oslo.clone(), oslo).columns(&["id"]).reverse())?
    ///     .collect::<Result<_, _>>()?;
    /// assert_eq!(ids, [vec![Value::UInt(3)], vec![Value::UInt(1)]]);
    /// db.check()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create_index(&self, table: &str, index: IndexDef) -> Result<Durability> {
        self.inner()?.create_index(table, index)
    }

    /// The table named `name`.
    pub fn table(&self, name: &str) -> Result<Table> {
        let entry = self.inner()?.table(name)?;
        Ok(Table::new(self.clone(), entry))
    }

    /// The names of every table, in order.
    pub fn tables(&self) -> Result<Vec<String>> {
        Ok(self.inner()?.tables().read().keys().cloned().collect())
    }

    /// The definition of table `name`, as the dictionary holds it.
    pub fn table_def(&self, name: &str) -> Result<TableDef> {
        Ok(self.table(name)?.def().clone())
    }

    /// Verifies every index: the dictionary's and each table's B-trees
    /// ([`minnow_btree::BTree::check`]: page invariants, key order, levels, sibling links),
    /// and that every secondary index holds exactly one entry per row of its table, built
    /// from that row; then the page allocator of the system tablespace and of every compressed
    /// tablespace ([`minnow_btree::space::check_space`]):
    /// every tree page is allocated to its tree's segment, every segment belongs to a live
    /// tree, and no page is in use without an owner; and every auto-increment counter is
    /// above its column's largest value. The first problem is an error naming the table
    /// and index.
    pub fn check(&self) -> Result<CheckReport> {
        self.inner()?.check()
    }

    /// Purges now, on this thread, until the history list holds only logs that some open
    /// read view may still need (all of it if no view is open), then gives the dead head of
    /// the undo stream back to the undo segment. See the [`crate::purge`] module docs. With
    /// `purge_threads = 1` a background thread does this continuously; this call is for
    /// `purge_threads = 0`, tests and benchmarks, and is safe beside the thread.
    pub fn purge(&self) -> Result<PurgeReport> {
        minnow_engine::purge::all(self.inner()?)
    }
}
