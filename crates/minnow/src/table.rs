//! [`Table`]: statements on one table and its indexes; streaming scans are in `scan`.

use std::sync::Arc;

use minnow_btree::record::Value;
use minnow_redo::{Durability, Lsn};

use crate::config::AutoIncLockMode;
use crate::db::Database;
use crate::error::{Error, Result};
use crate::row::ToKey;
use crate::schema::TableDef;
use crate::status::RowOp;
use crate::trx::Snapshot;
use minnow_engine::TableEntry;
use minnow_engine::autoinc::{AutoInc, AutoIncStatus, Inserted};
use minnow_engine::read::{self, get as point};
use minnow_engine::write;

/// A handle on one table of a [`Database`]. Cheap to get ([`Database::table`]) and to
/// clone (two `Arc`s); it owns a clone of its database, so it may be kept in a struct,
/// moved to another thread or outlive the `Database` value it came from (the database stays
/// open while it lives, unless [`Database::close`] closes it for every handle). Every
/// statement through it is atomic (see the crate docs, "Atomicity").
#[derive(Debug, Clone)]
pub struct Table {
    pub(crate) db: Database,
    pub(crate) t: Arc<TableEntry>,
}

mod by_index;
mod count;
mod get;
mod scan;
mod scan_with;
mod typed;
mod update_columns;
pub use get::RowView;
pub use scan::{Rows, Scan};
pub use typed::TypedRows;
pub(crate) use typed::typed_scan;

impl Table {
    pub(crate) fn new(db: Database, t: Arc<TableEntry>) -> Table {
        Table { db, t }
    }

    /// An error if a DDL statement (`drop_table`, `drop_index`) replaced or removed this
    /// table after the handle was taken: its trees may be gone.
    fn live(&self) -> Result<()> {
        if self.t.dropped.load(std::sync::atomic::Ordering::Acquire) {
            return Err(self.changed());
        }
        Ok(())
    }

    /// [`Error::ForeignTable`] unless this handle belongs to `db`: the same open database,
    /// compared by the address of its shared state (a transaction's statements must change
    /// and read only pages of its own database).
    pub(crate) fn belongs_to(&self, db: &Database) -> Result<()> {
        let (mine, theirs) = (self.db.inner()?, db.inner()?);
        if std::ptr::eq(mine, theirs) {
            return Ok(());
        }
        Err(Error::ForeignTable {
            table: self.name().to_owned(),
            table_db: mine.dir().to_path_buf(),
            trx_db: theirs.dir().to_path_buf(),
        })
    }

    fn changed(&self) -> Error {
        read::changed(&self.t)
    }

    /// The table's definition.
    pub fn def(&self) -> &TableDef {
        &self.t.meta.def
    }

    /// How the table's pages are compressed (`ROW_FORMAT=COMPRESSED`), or `None` for an
    /// uncompressed table ([`TableDef::compressed`]).
    pub fn compression(&self) -> Option<crate::Compression> {
        self.t.meta.def.compression
    }

    /// What compression did to each of the table's indexes since the database was opened
    /// (InnoDB's `INFORMATION_SCHEMA.INNODB_CMP_PER_INDEX`, plus the padding): compressions,
    /// compression failures, the splits they caused and the current pad, primary key first.
    /// Empty for an uncompressed table.
    pub fn compression_stats(&self) -> Vec<(String, crate::ZipIndexStats)> {
        let primary = self
            .t
            .clustered
            .zip_stats()
            .map(|z| (crate::schema::PRIMARY.to_owned(), z));
        let secondary = self
            .t
            .meta
            .secondary
            .iter()
            .zip(&self.t.secondary)
            .filter_map(|(s, tree)| tree.zip_stats().map(|z| (s.name.clone(), z)));
        primary.into_iter().chain(secondary).collect()
    }

    /// This table's entry as the database holds it now (a fresh handle; the engine's
    /// `read::current`).
    fn current(&self) -> Result<Table> {
        let t = read::current(self.db.inner()?, &self.t)?;
        Ok(Table::new(self.db.clone(), t))
    }

    fn name(&self) -> &str {
        self.t.meta.name()
    }

    /// The columns `cols` (all of them: `None`) of the row with primary key `key` as `snap`
    /// sees it.
    pub(crate) fn get_in(
        &self,
        snap: &Snapshot,
        key: &[Value],
        cols: Option<&[&str]>,
    ) -> Result<Option<Vec<Value>>> {
        if let Some(names) = cols {
            self.t.meta.check_names(names)?;
        }
        let cols = cols.map_or(point::Cols::All, point::Cols::Named);
        let key = point::PointKey::Values(key);
        self.snapshot_read(snap, key, |meta, found| point::project(meta, found, cols))
    }

    /// [`crate::Transaction::get_with`]: `f` on the row with primary key `key` as `snap`
    /// sees it.
    pub(crate) fn get_in_with<R>(
        &self,
        snap: &Snapshot,
        key: &[Value],
        f: impl FnOnce(&RowView<'_>) -> Result<R>,
    ) -> Result<Option<R>> {
        let mut f = Some(f);
        let key = point::PointKey::Values(key);
        self.snapshot_read(snap, key, |meta, found| {
            point::with_view(meta, found, &mut f)
        })
    }

    /// [`crate::Transaction::get_bytes_with`]: [`Table::get_in_with`] of a key of one byte
    /// column given as its bytes.
    pub(crate) fn get_in_bytes_with<R>(
        &self,
        snap: &Snapshot,
        key: &[u8],
        f: impl FnOnce(&RowView<'_>) -> Result<R>,
    ) -> Result<Option<R>> {
        let mut f = Some(f);
        let key = point::PointKey::Bytes(key);
        self.snapshot_read(snap, key, |meta, found| {
            point::with_view(meta, found, &mut f)
        })
    }

    /// A consistent point read through `snap`, validated against DDL (the engine's
    /// `read::point::in_snapshot`).
    fn snapshot_read<R>(
        &self,
        snap: &Snapshot,
        key: point::PointKey<'_>,
        f: impl FnMut(&crate::schema::TableMeta, point::Found<'_>) -> Result<R>,
    ) -> Result<Option<R>> {
        point::in_snapshot(self.db.inner()?, &self.t, snap, key, f)
    }

    /// The version chain of the row with primary key `key`, newest first: every version the
    /// undo store still describes, who wrote it, whether that writer has committed, and why
    /// the chain ends (see [`crate::history`]). `None` if the table holds no record with that
    /// key (a deleted row keeps its record, delete-marked, so it still has a chain). Reads
    /// only: writes nothing and takes no lock, so it never waits for a writer.
    pub fn history(&self, key: impl ToKey) -> Result<Option<crate::RowHistory>> {
        let key: &[Value] = &key.to_key();
        read::row_history(self.db.inner()?, &self.t, key)
    }

    /// Inserts a row (one value per column, in table order), as a transaction of its own
    /// (autocommit), made as durable as [`crate::Config::flush_log_at_trx_commit`] says
    /// before this returns. A row whose primary key exists is [`Error::DuplicateKey`] naming
    /// `PRIMARY`; one that would duplicate a unique secondary index's key names that index.
    /// Returns what [`crate::Transaction::insert`] returns.
    ///
    /// On a table with an AUTO_INCREMENT column, NULL or 0 there takes the next value
    /// ([`Table::insert_returning_id`] says which).
    pub fn insert(&self, row: &[Value]) -> Result<()> {
        self.insert_many(std::iter::once(row)).map(drop)
    }

    /// [`Table::insert`], returning what the statement did: [`Inserted::id`] is the
    /// auto-increment value the row got (MySQL's `LAST_INSERT_ID()`), `None` if it brought
    /// its own value or the table has no AUTO_INCREMENT column.
    pub fn insert_returning_id(&self, row: &[Value]) -> Result<Inserted> {
        self.insert_many(std::iter::once(row))
    }

    /// Inserts rows one after another, as one multi-row `INSERT` statement; returns how many
    /// and the auto-increment values generated. The redo log is made as durable as
    /// [`crate::Config::flush_log_at_trx_commit`] says once, at the end.
    ///
    /// **Each row is atomic, the statement is not**: each row is its own autocommit
    /// statement, so other statements may run between this one's rows, and at the first row that fails the statement stops with
    /// that row's error, keeping the rows before it (made durable as
    /// `flush_log_at_trx_commit` says).
    ///
    /// Auto-increment values follow [`crate::Config::autoinc_lock_mode`]: an iterator whose
    /// `size_hint` is exact is a "simple insert" (mode 1 reserves one value per row up
    /// front), any other a "bulk insert"; see the `autoinc` module docs. In modes 0 and 1 a
    /// statement may hold the table's AUTO-INC lock while it pulls rows from `rows`, so the
    /// iterator must not insert into this table itself (that would wait for itself).
    ///
    /// ```
    /// use minnow::{AutoIncLockMode, ColumnDef, ColumnType, Config, Database, TableDef, Value};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let config = Config { autoinc_lock_mode: AutoIncLockMode::Consecutive, ..Config::default() };
    /// let db = Database::create(dir.path(), config)?;
    /// let t = db.create_table(TableDef::new("t")
    ///     .column(ColumnDef::new("id", ColumnType::U32).auto_increment())
    ///     .column(ColumnDef::new("c", ColumnType::Var(1)))
    ///     .primary_key(&["id"]))?;
    /// t.insert(&[Value::UInt(100), Value::text("x")])?;
    /// // MySQL's manual example: a mixed-mode insert in mode 1 reserves four values for four
    /// // rows, uses two, and the other two are lost.
    /// let r = t.insert_many(vec![
    ///     vec![Value::UInt(1), Value::text("a")],
    ///     vec![Value::Null, Value::text("b")],
    ///     vec![Value::UInt(5), Value::text("c")],
    ///     vec![Value::Null, Value::text("d")],
    /// ])?;
    /// assert_eq!(r.generated, [101, 102]);
    /// assert_eq!(t.auto_increment_status().unwrap().next, Some(105));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn insert_many<I, R>(&self, rows: I) -> Result<Inserted>
    where
        I: IntoIterator<Item = R>,
        R: AsRef<[Value]>,
    {
        let mut admitted = self.db.admit();
        let inner = self.db.inner()?;
        self.live()?;
        let autoinc = self.current()?.t.autoinc.clone();
        let rows = rows.into_iter();
        let known = match rows.size_hint() {
            (lo, Some(hi)) if lo == hi => Some(lo),
            _ => None,
        };
        // The AUTO-INC lock, by mode (lock order: AUTO-INC lock, statement latches, counter).
        let mut reserved = 0..0;
        let mut reserve = None;
        let _auto_inc_lock = match (&autoinc, inner.config().autoinc_lock_mode, known) {
            (Some(a), AutoIncLockMode::Traditional, _)
            | (Some(a), AutoIncLockMode::Consecutive, None) => Some(a.lock_table()),
            (Some(_), AutoIncLockMode::Consecutive, Some(n)) => {
                // A simple insert: at its first row that asks for a value, it reserves one
                // per row of the statement (as MySQL's handler does) and lets the lock go.
                reserve = Some(n);
                None
            }
            _ => None,
        };
        let mut done = Inserted {
            rows: 0,
            generated: Vec::new(),
        };
        let mut end = Lsn(0);
        let run = || -> Result<()> {
            for row in rows {
                let row = row.as_ref();
                // Not while holding the AUTO-INC lock: a thread queueing at the door with
                // it would wait for threads inside that wait for it.
                if _auto_inc_lock.is_none() || done.rows == 0 {
                    admitted.row();
                }
                if let (Some(n), Some(a)) = (reserve, &autoinc)
                    && a.asks(row)
                {
                    reserve = None;
                    let _lock = a.lock_table();
                    reserved = write::statement(inner, &self.t, 0, |inner, _, _| {
                        a.take(inner, self.name(), n as u128)
                    })?;
                }
                // The entry as it is now: an index created since this handle was made counts.
                let one = write::insert_one(
                    inner,
                    &self.t,
                    row,
                    &autoinc,
                    &mut reserved,
                    &mut done.generated,
                )?;
                end = end.max(one);
                done.rows += 1;
                self.db.count_rows(RowOp::Insert, 1);
            }
            Ok(())
        };
        if let Err(e) = run() {
            if done.rows > 0 {
                // The statement's error is the one to report; a failed sync poisons the
                // database, which the next statement reports.
                let _ = self.db.durable(end);
            }
            return Err(e);
        }
        self.db.durable(end)?;
        Ok(done)
    }

    /// Loads `rows` (one value per column, in table order, in ascending primary key order)
    /// into this table, which must be empty ([`Error::TableNotEmpty`]), building every index
    /// bottom-up (see the `bulk` module docs of the engine crate, `minnow-engine`). Rows out
    /// of order are [`Error::Unsorted`]; a repeated primary key or unique key is
    /// [`Error::DuplicateKey`]; either leaves the table empty. Returns the durability
    /// reached, as a statement does.
    ///
    /// On a table with an AUTO_INCREMENT column, rows with NULL or 0 there get the next
    /// values in row order and explicit values move the counter, as in
    /// [`Table::insert_many`]; a load counts as a "bulk insert", so in modes 0 and 1 it holds
    /// the AUTO-INC lock to its end (see the `autoinc` module docs). Values taken by a load
    /// that fails are not given back.
    ///
    /// ```
    /// use minnow::{ColumnDef, ColumnType, Config, Database, IndexDef, Scan, TableDef, Value};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Database::create(dir.path(), Config::default())?;
    /// let t = db.create_table(TableDef::new("t")
    ///     .column(ColumnDef::new("id", ColumnType::U32))
    ///     .column(ColumnDef::new("k", ColumnType::U32))
    ///     .primary_key(&["id"])
    ///     .index(IndexDef::new("by_k", &["k"])))?;
    /// t.load((0..10_000u64).map(|i| vec![Value::UInt(i), Value::UInt(i % 7)]))?;
    /// // The three largest ids, from the top.
    /// let top: Vec<_> = t.scan(Scan::all().reverse().limit(3).columns(&["id"]))?
    ///     .collect::<Result<_, _>>()?;
    /// assert_eq!(top, [[Value::UInt(9999)], [Value::UInt(9998)], [Value::UInt(9997)]]);
    /// assert_eq!(db.check()?.rows["t"], 10_000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn load<I, R>(&self, rows: I) -> Result<Durability>
    where
        I: IntoIterator<Item = R>,
        R: AsRef<[Value]>,
    {
        self.db.inner()?.load(self.name(), rows)
    }

    /// The table's auto-increment counter and AUTO-INC lock statistics; `None` if it has no
    /// AUTO_INCREMENT column.
    pub fn auto_increment_status(&self) -> Option<AutoIncStatus> {
        let t = self.current().unwrap_or_else(|_| self.clone());
        t.t.autoinc.as_deref().map(AutoInc::status)
    }

    /// Deletes the row with primary key `key`, as a transaction of its own (autocommit),
    /// made as durable as [`crate::Config::flush_log_at_trx_commit`] says before this
    /// returns; false if there was no such row (as [`crate::Transaction::delete`]).
    pub fn delete(&self, key: impl ToKey) -> Result<bool> {
        let key: &[Value] = &key.to_key();
        let mut admitted = self.db.admit();
        admitted.row();
        let done = write::keyed_one(self.db.inner()?, &self.t, key, write::delete)?;
        self.keyed_end(RowOp::Delete, done)
    }

    /// The end of an autocommit statement on one row by its key that may find no row
    /// ([`write::keyed_one`], admitted for one row): if it found the row, counted as `op`
    /// and made as durable as `flush_log_at_trx_commit` says. False if there was no such row.
    pub(crate) fn keyed_end(&self, op: RowOp, (found, end): (bool, Lsn)) -> Result<bool> {
        if !found {
            return Ok(false);
        }
        self.db.count_rows(op, 1);
        self.db.durable(end)?;
        Ok(true)
    }

    /// Replaces the row with the same primary key as `row` (the primary key itself cannot
    /// change: delete and insert for that), as a transaction of its own (autocommit), made
    /// as durable as [`crate::Config::flush_log_at_trx_commit`] says before this returns. A
    /// missing row is [`Error::RowNotFound`]; a new value that duplicates a unique index's
    /// key is [`Error::DuplicateKey`].
    pub fn update(&self, row: &[Value]) -> Result<()> {
        let mut admitted = self.db.admit();
        admitted.row();
        let end = write::update_one(self.db.inner()?, &self.t, row)?;
        self.db.count_rows(RowOp::Update, 1);
        self.db.durable(end)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
