//! Point reads by primary key: [`Table::get`], [`Table::get_columns`], [`Table::get_with`],
//! [`Table::get_bytes_with`] (and, in `table.rs`, their [`crate::Transaction`] twins): the
//! API over one path, the engine's (`minnow-engine`'s `read::get` module: the read in place
//! under the leaf latch, the visibility decision, the version rebuilt from undo when the
//! record is too new). Here are the keys as an application gives them ([`ToKey`], bytes)
//! and what comes back (values, a projection, a [`RowView`] for a closure).

use minnow_btree::record::Value;
use minnow_engine::read::get::{self, Cols, Found, PointKey, project, with_view};

use super::Table;
use crate::error::Result;
use crate::row::ToKey;
use crate::schema::TableMeta;

pub use minnow_engine::read::get::RowView;

impl Table {
    /// The row with primary key `key` (one value per primary key column: `7u64`,
    /// `("oslo", 3u32)` or `&[Value]`, see [`ToKey`]), all columns in table order.
    pub fn get(&self, key: impl ToKey) -> Result<Option<Vec<Value>>> {
        let key: &[Value] = &key.to_key();
        self.point(PointKey::Values(key), |meta, found| {
            project(meta, found, Cols::All)
        })
    }

    /// The columns `columns` (by name, in the order wanted; a name may repeat) of the row
    /// with primary key `key`: the projection of [`Table::get`], which decodes only those
    /// columns (a BLOB or TEXT column stored off-page is read from its overflow pages only
    /// if it is named). [`crate::Error::NoSuchColumn`] for a name the table does not have.
    ///
    /// ```
    /// use minnow::{ColumnDef, ColumnType, Config, Database, TableDef, Value};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Database::create(dir.path(), Config::default())?;
    /// let t = db.create_table(
    ///     TableDef::new("users")
    ///         .column(ColumnDef::new("id", ColumnType::U64))
    ///         .column(ColumnDef::new("name", ColumnType::Var(40)))
    ///         .column(ColumnDef::nullable("bio", ColumnType::Text))
    ///         .primary_key(&["id"]),
    /// )?;
    /// t.insert(&[Value::UInt(7), Value::text("ada"), Value::text(&"x".repeat(50_000))])?;
    /// // Only `name` is decoded; the 50 KB `bio` on its overflow pages is not read.
    /// assert_eq!(t.get_columns(&[Value::UInt(7)], &["name"])?, Some(vec![Value::text("ada")]));
    /// assert_eq!(t.get_columns(&[Value::UInt(8)], &["name"])?, None);
    /// assert!(t.get_columns(&[Value::UInt(7)], &["age"]).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_columns(&self, key: impl ToKey, columns: &[&str]) -> Result<Option<Vec<Value>>> {
        let key: &[Value] = &key.to_key();
        self.t.meta.check_names(columns)?;
        self.point(PointKey::Values(key), |meta, found| {
            project(meta, found, Cols::Named(columns))
        })
    }

    /// Runs `f` on the row with primary key `key`, read in place: `f` gets a [`RowView`]
    /// whose byte columns are slices of the page, and returns what it needs from them
    /// (nothing of the row outlives the call: the borrow ends with it). `None` if there is
    /// no such row. Which version it sees is [`Table::get`]'s.
    ///
    /// `f` runs while the row's leaf page is latched (shared): keep it short, and do not
    /// call into the database from it (no reads, writes or transactions: a write to the
    /// same leaf would wait for this latch forever). Reading the view's columns is all it
    /// should do.
    ///
    /// ```
    /// use minnow::{ColumnDef, ColumnType, Config, Database, TableDef, Value};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Database::create(dir.path(), Config::default())?;
    /// let t = db.create_table(
    ///     TableDef::new("kv")
    ///         .column(ColumnDef::new("k", ColumnType::U64))
    ///         .column(ColumnDef::new("v", ColumnType::Var(100)))
    ///         .primary_key(&["k"]),
    /// )?;
    /// t.insert(&[Value::UInt(1), Value::text("hello, world")])?;
    /// // The length of `v`, read without copying it out of the page.
    /// let len = t.get_with(&[Value::UInt(1)], |row| {
    ///     Ok(row.bytes(1)?.map_or(0, |b| b.len()))
    /// })?;
    /// assert_eq!(len, Some(12));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_with<R>(
        &self,
        key: impl ToKey,
        f: impl FnOnce(&RowView<'_>) -> Result<R>,
    ) -> Result<Option<R>> {
        let key: &[Value] = &key.to_key();
        let mut f = Some(f);
        self.point(PointKey::Values(key), |meta, found| {
            with_view(meta, found, &mut f)
        })
    }

    /// [`Table::get_with`] for a table whose primary key is one byte column (`Fixed`, `Var`,
    /// `Blob`, `Text`), the key given as its bytes: the same read, without building a
    /// [`Value`] for the key (the bytes are checked as a [`Value::Bytes`] key's are, and
    /// [`crate::Error::TypeMismatch`] for a table with another key).
    ///
    /// ```
    /// use minnow::{ColumnDef, ColumnType, Config, Database, TableDef, Value};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Database::create(dir.path(), Config::default())?;
    /// let t = db.create_table(
    ///     TableDef::new("kv")
    ///         .column(ColumnDef::new("k", ColumnType::Var(16)))
    ///         .column(ColumnDef::new("v", ColumnType::Var(100)))
    ///         .primary_key(&["k"]),
    /// )?;
    /// t.insert(&[Value::text("ada"), Value::text("lovelace")])?;
    /// let len = t.get_bytes_with(b"ada", |row| Ok(row.bytes(1)?.map_or(0, |b| b.len())))?;
    /// assert_eq!(len, Some(8));
    /// assert_eq!(t.get_bytes_with(b"bob", |_| Ok(()))?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_bytes_with<R>(
        &self,
        key: &[u8],
        f: impl FnOnce(&RowView<'_>) -> Result<R>,
    ) -> Result<Option<R>> {
        let mut f = Some(f);
        self.point(PointKey::Bytes(key), |meta, found| {
            with_view(meta, found, &mut f)
        })
    }

    /// An autocommit point read (the engine's [`get::latest`]) on this handle's table.
    fn point<R>(
        &self,
        key: PointKey<'_>,
        f: impl FnMut(&TableMeta, Found<'_>) -> Result<R>,
    ) -> Result<Option<R>> {
        get::latest(self.db.inner()?, &self.t, key, f)
    }
}

#[cfg(test)]
mod tests;
