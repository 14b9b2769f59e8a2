//! Point reads by primary key: the one path under the `minnow` crate's `Table::get`,
//! `Table::get_columns`, `Table::get_with`, `Table::get_bytes_with` and their `Transaction`
//! twins ([`latest`] for an autocommit read, [`in_snapshot`] for a transaction's), which are
//! thin wrappers over it.
//!
//! A point read descends the clustered index to the leaf and reads the record **in place**
//! while the leaf is shared-latched ([`minnow_btree::BTree::get_with`]): the record's extra
//! bytes are walked once, its `DB_TRX_ID` is read as a number, and only the columns asked
//! for are decoded (or, through [`with_view`], handed to the caller as slices of the page
//! in a [`RowView`]). Whether the record itself is the version the reader may see is decided under the
//! same latch:
//!
//! - an autocommit read ([`latest`]) sees the record if its writer is below the bound of
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
//! The key comes as values ([`PointKey::Values`], normalised first) or, for a table keyed by
//! one byte column, as borrowed bytes ([`PointKey::Bytes`], checked as a [`Value::Bytes`]
//! key would be; `Table::get_bytes_with` in the `minnow` crate), which spares the caller a
//! `Vec` per read and the read a normalising pass: the bytes go straight into the B-tree's
//! reusable search key.
//!
//! Every read here is validated against DDL ([`super::validated`]), and an autocommit read
//! is admitted (`innodb_thread_concurrency`) and counted in the row counters.

use std::borrow::Cow;
use std::sync::Arc;

use minnow_btree::record::{ColumnType, Value};
use minnow_btree::{Entry, LeafRecord};

use super::{Snapshot, validated, visible};
use crate::engine::Engine;
use crate::entry::TableEntry;
use crate::error::{Error, Result, from_tree};
use crate::row::clustered_record;
use crate::schema::{PRIMARY, TableMeta};
use crate::status::RowOp;

/// One row of a table, read by `Table::get_with` or `Transaction::get_with` (the `minnow`
/// crate): columns by their position in the table ([`crate::TableDef::column_index`] finds it by
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
    pub fn on_page(meta: &'a TableMeta, rec: &'a LeafRecord<'a>) -> RowView<'a> {
        RowView {
            meta,
            src: Src::Page(rec),
        }
    }

    /// The row of `meta` that is the version `row` (in table order), rebuilt from undo.
    pub fn owned(meta: &'a TableMeta, row: &'a [Value]) -> RowView<'a> {
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
pub enum Reader<'s> {
    /// The latest committed version: a record whose writer is below this bound (of ended
    /// transactions, read before the record) has committed.
    Latest(u64),
    /// The version this snapshot sees.
    Snap(&'s Snapshot),
}

/// The primary key a point read looks for, checked against the table's key columns.
#[derive(Debug, Clone, Copy)]
pub enum PointKey<'k> {
    /// One value per key column, normalised.
    Values(&'k [Value]),
    /// The bytes of a key of one byte column, borrowed (no [`Value`] is built for it).
    Bytes(&'k [u8]),
}

/// What a point read found: the record in place, or an older version as a row.
pub enum Found<'a> {
    /// The clustered record, in place on its latched leaf.
    Page(&'a LeafRecord<'a>),
    /// An older version rebuilt from undo, in table order.
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
pub fn project(meta: &TableMeta, found: Found<'_>, cols: Cols<'_>) -> Result<Vec<Value>> {
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
pub enum Cols<'n> {
    /// Every column in table order.
    All,
    /// The named ones, in the order named.
    Named(&'n [&'n str]),
}

/// An autocommit point read (the `minnow` crate's `Table::get` and its kin): admitted for
/// one row, the latest committed version ([`Reader::Latest`], the bound of ended
/// transactions read before the record) given to `f`, validated against DDL, counted as a
/// read if found.
pub fn latest<R>(
    inner: &Engine,
    t: &Arc<TableEntry>,
    key: PointKey<'_>,
    mut f: impl FnMut(&TableMeta, Found<'_>) -> Result<R>,
) -> Result<Option<R>> {
    let mut admitted = inner.admission().enter();
    admitted.row();
    let found = validated(inner, t, |t| {
        with_checked_key(t, key, |key| {
            let committed_below = inner.trx_sys().oldest_active();
            #[cfg(feature = "test-hooks")]
            crate::hooks::hook(crate::hooks::Point::FastGetBoundTaken);
            read_row(inner, t, key, Reader::Latest(committed_below), &mut f)
        })
    })?;
    inner.rows().bump(RowOp::Read, u64::from(found.is_some()));
    Ok(found)
}

/// A consistent point read through `snap` (a transaction's): the version it sees given to
/// `f`, validated against DDL.
pub fn in_snapshot<R>(
    inner: &Engine,
    t: &Arc<TableEntry>,
    snap: &Snapshot,
    key: PointKey<'_>,
    mut f: impl FnMut(&TableMeta, Found<'_>) -> Result<R>,
) -> Result<Option<R>> {
    validated(inner, t, |t| {
        with_checked_key(t, key, |key| {
            read_row(inner, t, key, Reader::Snap(snap), &mut f)
        })
    })
}

/// The clustered record of `t` with primary key `key` (normalised here), delete-marked or
/// not, whatever its writer: the newest version, which consistent reads and a row's
/// history start from.
pub fn newest_record(inner: &Engine, t: &TableEntry, key: &[Value]) -> Result<Option<Entry>> {
    let key = t.meta.normalise_key_cow(&t.meta.pk, key)?;
    clustered_record(inner, t, &key)
}

/// Runs `f` on `key` checked against the primary key of `t` (values normalised, bytes
/// checked against the key's one column).
#[inline]
pub fn with_checked_key<R>(
    t: &TableEntry,
    key: PointKey<'_>,
    f: impl FnOnce(PointKey<'_>) -> Result<R>,
) -> Result<R> {
    let meta = &t.meta;
    match key {
        PointKey::Values(v) => f(PointKey::Values(&meta.normalise_key_cow(&meta.pk, v)?)),
        PointKey::Bytes(b) => {
            meta.check_key_bytes(&meta.pk, b)?;
            f(key)
        }
    }
}

/// The row of `t` with the checked primary key `key` ([`with_checked_key`]), as `reader`
/// sees it, given to `f` (see the module docs). On entry `t`, unvalidated.
pub fn read_row<R>(
    inner: &Engine,
    t: &TableEntry,
    key: PointKey<'_>,
    reader: Reader<'_>,
    f: &mut impl FnMut(&TableMeta, Found<'_>) -> Result<R>,
) -> Result<Option<R>> {
    let meta = &t.meta;
    let tree_err = |e| from_tree(e, meta.name(), PRIMARY);
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
    let tree = &t.clustered;
    let step = match key {
        PointKey::Values(v) => tree.get_with(inner.pool(), v, read),
        PointKey::Bytes(b) => tree.get_bytes_with(inner.pool(), b, read),
    }
    .map_err(tree_err)?
    .transpose()?;
    #[cfg(feature = "test-hooks")]
    if matches!(reader, Reader::Latest(_)) {
        crate::hooks::hook(crate::hooks::Point::FastGetRead);
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
            let Some(e) = newest_record(inner, t, key)? else {
                return Ok(None);
            };
            match visible(inner, t, snap, e.values, e.deleted)? {
                Some(v) => f(meta, Found::Row(meta.row_of(v)?)).map(Some),
                None => Ok(None),
            }
        }
    }
}

/// Calls the user's closure (once) on a [`RowView`] of what a point read found.
pub fn with_view<R>(
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
