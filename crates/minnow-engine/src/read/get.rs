//! Point reads by primary key: [`Table::get`], [`Table::get_columns`], [`Table::get_with`]
//! and their [`crate::Transaction`] twins, all through one path.
//!
//! A point read descends the clustered index to the leaf and reads the record **in place**
//! while the leaf is shared-latched ([`minnow_btree::BTree::get_with`]): the record's extra
//! bytes are walked once, its `DB_TRX_ID` is read as a number, and only the columns asked
//! for are decoded (or, through [`Table::get_with`], handed to the caller as slices of the
//! page). Whether the record itself is the version the reader may see is decided under the
//! same latch:
//!
//! - an autocommit read ([`Table::get`]) sees the record if its writer is below the bound of
//!   ended transactions read *before* the record (such a writer has committed; read after,
//!   a writer that rolled back in between would pass for committed);
//! - a transaction's read sees it if the writer is visible to its read view.
//!
//! Otherwise (a writer still active, or one the view does not see), the latch is let go and
//! the visible version is rebuilt from undo as an owned row, and the projection or the
//! closure runs on that. The caller cannot tell the two apart, except by speed.
//!
//! Off-page (BLOB and TEXT) columns are read from their overflow pages into owned bytes,
//! under the leaf latch, only when asked for.
//!
//! The key comes as values (`PointKey::Values`, normalised first) or, for a table keyed by
//! one byte column, as borrowed bytes ([`Table::get_bytes_with`],
//! [`crate::Transaction::get_bytes_with`]: `PointKey::Bytes`, checked as a
//! [`Value::Bytes`] key would be), which spares the caller a `Vec` per read and the read a
//! normalising pass: the bytes go straight into the B-tree's reusable search key.

use std::borrow::Cow;

use minnow_btree::LeafRecord;
use minnow_btree::record::{ColumnType, Value};

use super::Table;
use crate::error::{Error, Result, from_tree};
use crate::row::ToKey;
use crate::schema::{PRIMARY, TableMeta};
use crate::status::RowOp;
use crate::trx::{self, Snapshot};
use minnow_engine::Engine;

/// One row of a table, read by [`Table::get_with`] or [`crate::Transaction::get_with`]:
/// columns by their position in the table ([`crate::TableDef::column_index`] finds it by
/// name). Usually the row is read in place on its page, which stays latched while the
/// closure runs; when the newest version is not the one the reader sees, it is a version
/// rebuilt from undo. Either way byte columns are borrowed, not copied.
#[derive(Debug)]
pub struct RowView<'a> {
    meta: &'a TableMeta,
    src: Src<'a>,
}

#[derive(Debug)]
enum Src<'a> {
    /// The clustered record on its latched leaf.
    Page(&'a LeafRecord<'a>),
    /// An older version, in table order.
    Owned(&'a [Value]),
}

impl<'a> RowView<'a> {
    /// The row of `meta` that is the clustered record `rec`, read in place.
    pub(super) fn on_page(meta: &'a TableMeta, rec: &'a LeafRecord<'a>) -> RowView<'a> {
        RowView {
            meta,
            src: Src::Page(rec),
        }
    }

    /// The row of `meta` that is the version `row` (in table order), rebuilt from undo.
    pub(super) fn owned(meta: &'a TableMeta, row: &'a [Value]) -> RowView<'a> {
        RowView {
            meta,
            src: Src::Owned(row),
        }
    }

    /// Number of columns.
    pub fn len(&self) -> usize {
        self.meta.def.columns.len()
    }

    /// Always false: a table has at least one column.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn no_column(&self, col: usize) -> Error {
        self.meta.mismatch(
            "",
            format!("no column at position {col} (the table has {})", self.len()),
        )
    }

    /// The stored field of column `col` in the clustered record.
    fn field(&self, col: usize) -> Result<usize> {
        match self.meta.row_fields_trx.get(col) {
            Some(&f) if col < self.len() => Ok(f),
            _ => Err(self.no_column(col)),
        }
    }

    /// Column `col` as an owned value (a byte column is copied; see [`RowView::bytes`]).
    pub fn value(&self, col: usize) -> Result<Value> {
        match self.src {
            Src::Page(rec) => rec
                .value(self.field(col)?)
                .map_err(|e| from_tree(e, self.meta.name(), PRIMARY)),
            Src::Owned(row) => row.get(col).cloned().ok_or_else(|| self.no_column(col)),
        }
    }

    /// Column `col` of a byte type (`Fixed`, `Var`, `Blob`, `Text`) as its bytes, `None` for
    /// NULL: borrowed, without a copy, except an off-page BLOB or TEXT value, which is read
    /// from its overflow pages. [`Error::TypeMismatch`] for a column of another type.
    pub fn bytes(&self, col: usize) -> Result<Option<Cow<'a, [u8]>>> {
        let c = self
            .meta
            .def
            .columns
            .get(col)
            .ok_or_else(|| self.no_column(col))?;
        if !matches!(
            c.ty,
            ColumnType::Fixed(_) | ColumnType::Var(_) | ColumnType::Blob | ColumnType::Text
        ) {
            return Err(self
                .meta
                .mismatch(&c.name, format!("{:?} column read as bytes", c.ty)));
        }
        match self.src {
            Src::Page(rec) => rec
                .bytes(self.field(col)?)
                .map_err(|e| from_tree(e, self.meta.name(), PRIMARY)),
            Src::Owned(row) => match row.get(col) {
                Some(Value::Bytes(b)) => Ok(Some(Cow::Borrowed(b.as_slice()))),
                Some(Value::Null) => Ok(None),
                _ => Err(Error::Corrupt {
                    what: format!(
                        "table `{}`: column `{}` of an old version is not bytes",
                        self.meta.name(),
                        c.name
                    ),
                }),
            },
        }
    }
}

/// Which version of a row a point read returns.
#[derive(Debug, Clone, Copy)]
pub(super) enum Reader<'s> {
    /// The latest committed version: a record whose writer is below this bound (of ended
    /// transactions, read before the record) has committed.
    Latest(u64),
    /// The version this snapshot sees.
    Snap(&'s Snapshot),
}

/// The primary key a point read looks for, checked against the table's key columns.
#[derive(Debug, Clone, Copy)]
pub(super) enum PointKey<'k> {
    /// One value per key column, normalised.
    Values(&'k [Value]),
    /// The bytes of a key of one byte column, borrowed (no [`Value`] is built for it).
    Bytes(&'k [u8]),
}

/// What a point read found: the record in place, or an older version as a row.
pub(super) enum Found<'a> {
    Page(&'a LeafRecord<'a>),
    Row(Vec<Value>),
}

/// What the read under the latch decided.
enum Step<R> {
    /// The record is the visible version: here is the answer (`None`: it is deleted).
    Done(Option<R>),
    /// The record is too new for the reader: rebuild the visible version from undo.
    Older,
}

/// The columns at `cols` of what a point read found, in that order.
pub(super) fn project(meta: &TableMeta, found: Found<'_>, cols: Cols<'_>) -> Result<Vec<Value>> {
    match found {
        Found::Page(rec) => {
            let field = |c: usize| -> Result<Value> {
                let f = meta.row_fields_trx.get(c).copied().unwrap_or(usize::MAX);
                rec.value(f).map_err(|e| from_tree(e, meta.name(), PRIMARY))
            };
            match cols {
                Cols::All => (0..meta.def.columns.len()).map(field).collect(),
                Cols::Named(names) => meta.positions_of(names).map(|c| field(c?)).collect(),
            }
        }
        Found::Row(row) => match cols {
            Cols::All => Ok(row),
            Cols::Named(names) => meta
                .positions_of(names)
                .map(|c| {
                    let v = row.get(c?).cloned();
                    v.ok_or_else(|| meta.mismatch("", "column out of range".into()))
                })
                .collect(),
        },
    }
}

/// Which columns a point read returns.
#[derive(Debug, Clone, Copy)]
pub(super) enum Cols<'n> {
    /// Every column in table order.
    All,
    /// The named ones, in the order named.
    Named(&'n [&'n str]),
}

impl Table {
    /// The row with primary key `key` (one value per primary key column: `7u64`,
    /// `("oslo", 3u32)` or `&[Value]`, see [`ToKey`]), all columns in table order.
    pub fn get(&self, key: impl ToKey) -> Result<Option<Vec<Value>>> {
        let key: &[Value] = &key.to_key();
        self.point(key, |meta, found| project(meta, found, Cols::All))
    }

    /// The columns `columns` (by name, in the order wanted; a name may repeat) of the row
    /// with primary key `key`: the projection of [`Table::get`], which decodes only those
    /// columns (a BLOB or TEXT column stored off-page is read from its overflow pages only
    /// if it is named). [`Error::NoSuchColumn`] for a name the table does not have.
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
        self.point(key, |meta, found| {
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
        self.point(key, |meta, found| with_view(meta, found, &mut f))
    }

    /// [`Table::get_with`] for a table whose primary key is one byte column (`Fixed`, `Var`,
    /// `Blob`, `Text`), the key given as its bytes: the same read, without building a
    /// [`Value`] for the key (the bytes are checked as a [`Value::Bytes`] key's are, and
    /// [`Error::TypeMismatch`] for a table with another key).
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
        self.point_at(PointKey::Bytes(key), |meta, found| {
            with_view(meta, found, &mut f)
        })
    }

    /// An autocommit point read: admission, the read of the latest committed version
    /// ([`Reader::Latest`]) validated against DDL, and the row counter.
    fn point<R>(
        &self,
        key: &[Value],
        f: impl FnMut(&TableMeta, Found<'_>) -> Result<R>,
    ) -> Result<Option<R>> {
        self.point_at(PointKey::Values(key), f)
    }

    /// [`Table::point`] of a key as values or as bytes.
    fn point_at<R>(
        &self,
        key: PointKey<'_>,
        mut f: impl FnMut(&TableMeta, Found<'_>) -> Result<R>,
    ) -> Result<Option<R>> {
        let mut admitted = self.db.admit();
        admitted.row();
        let found = self.read(|t| {
            let inner = t.db.inner()?;
            t.with_checked_key(key, |key| {
                let committed_below = inner.trx_sys().oldest_active();
                #[cfg(test)]
                minnow_engine::hooks::hook(minnow_engine::hooks::Point::FastGetBoundTaken);
                t.read_row(inner, key, Reader::Latest(committed_below), &mut f)
            })
        })?;
        self.db.count_rows(RowOp::Read, u64::from(found.is_some()));
        Ok(found)
    }

    /// Runs `f` on `key` checked against this table's primary key (values normalised, bytes
    /// checked against the key's one column).
    pub(super) fn with_checked_key<R>(
        &self,
        key: PointKey<'_>,
        f: impl FnOnce(PointKey<'_>) -> Result<R>,
    ) -> Result<R> {
        let meta = &self.t.meta;
        match key {
            PointKey::Values(v) => f(PointKey::Values(&meta.normalise_key_cow(&meta.pk, v)?)),
            PointKey::Bytes(b) => {
                meta.check_key_bytes(&meta.pk, b)?;
                f(key)
            }
        }
    }

    /// The row with the checked primary key `key` ([`Table::with_checked_key`]), as
    /// `reader` sees it, given to `f` (see the module docs). On this handle's entry,
    /// unvalidated.
    pub(super) fn read_row<R>(
        &self,
        inner: &Engine,
        key: PointKey<'_>,
        reader: Reader<'_>,
        f: &mut impl FnMut(&TableMeta, Found<'_>) -> Result<R>,
    ) -> Result<Option<R>> {
        let meta = &self.t.meta;
        let tree_err = |e| from_tree(e, self.name(), PRIMARY);
        let read = |rec: &LeafRecord<'_>| -> Result<Step<R>> {
            let trx = rec.trx_id().map_err(tree_err)?.unwrap_or(u64::MAX);
            let sees = match reader {
                Reader::Latest(bound) => trx < bound,
                Reader::Snap(s) => s.sees(trx),
            };
            if !sees {
                return Ok(Step::Older);
            }
            if rec.deleted() {
                return Ok(Step::Done(None));
            }
            Ok(Step::Done(Some(f(meta, Found::Page(rec))?)))
        };
        let tree = &self.t.clustered;
        let step = match key {
            PointKey::Values(v) => tree.get_with(inner.pool(), v, read),
            PointKey::Bytes(b) => tree.get_bytes_with(inner.pool(), b, read),
        }
        .map_err(tree_err)?
        .transpose()?;
        #[cfg(test)]
        if matches!(reader, Reader::Latest(_)) {
            minnow_engine::hooks::hook(minnow_engine::hooks::Point::FastGetRead);
        }
        match step {
            None => Ok(None),
            Some(Step::Done(r)) => Ok(r),
            Some(Step::Older) => {
                // A writer that may not have committed (or one the view does not see): the
                // visible version, from undo.
                let fresh;
                let snap = match reader {
                    Reader::Snap(s) => s,
                    Reader::Latest(_) => {
                        fresh = Snapshot::View(inner.trx_sys().statement_view());
                        &fresh
                    }
                };
                let bytes_key;
                let key = match key {
                    PointKey::Values(v) => v,
                    PointKey::Bytes(b) => {
                        bytes_key = [Value::Bytes(b.to_vec())];
                        &bytes_key[..]
                    }
                };
                let Some(e) = self.clustered_record(key)? else {
                    return Ok(None);
                };
                match trx::visible(inner, &self.t, snap, e.values, e.deleted)? {
                    Some(v) => f(meta, Found::Row(meta.row_of(v)?)).map(Some),
                    None => Ok(None),
                }
            }
        }
    }
}

/// Calls the user's closure (once) on a [`RowView`] of what a point read found.
pub(super) fn with_view<R>(
    meta: &TableMeta,
    found: Found<'_>,
    f: &mut Option<impl FnOnce(&RowView<'_>) -> Result<R>>,
) -> Result<R> {
    // Taken already: the read ran on this handle's entry, then found that a load replaced
    // the table meanwhile and read again. The closure saw a row of the old table.
    let f = f.take().ok_or_else(|| Error::TableChanged {
        table: meta.name().to_owned(),
    })?;
    match found {
        Found::Page(rec) => f(&RowView::on_page(meta, rec)),
        Found::Row(row) => f(&RowView::owned(meta, &row)),
    }
}

#[cfg(test)]
mod tests;
