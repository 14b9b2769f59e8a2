//! Point reads through a unique secondary index: [`Table::get_by`], [`Table::get_by_columns`]
//! and their [`crate::Transaction`] twins (`SELECT ... WHERE isbn = ?` on a `UNIQUE KEY`).
//!
//! A unique index does not hold one entry per row but one per **version**: an update that
//! changes the indexed columns delete-marks the old entry and inserts the new one, a delete
//! delete-marks, and purge removes a marked entry only once no read view can need it (the
//! `trx` module docs). So several entries may carry the key asked for: at most one live,
//! and delete-marked ones of rows that had the key once (another row that was deleted or
//! took another key, or the same row before its key changed away and back). An entry is the
//! index columns followed by the primary key and the index is ordered by both, so these
//! entries lie side by side; the read walks them in primary key order and asks of each:
//!
//! ```text
//!   its leaf's PAGE_MAX_TRX_ID seen by the view,    no version the view sees has it:
//!   entry delete-marked                              skip it (no clustered read)
//!   leaf seen, entry live, only index and primary    every change on the leaf is visible,
//!   key columns asked for (get_by_columns)           so the entry is the row: answer from it
//!   otherwise                                        read the row's visible version by the
//!                                                    entry's primary key (in place, or
//!                                                    rebuilt from undo); it is the answer if
//!                                                    it exists and has exactly this key
//! ```
//!
//! This is the secondary scan's rule (InnoDB's `lock_sec_rec_cons_read_sees`) applied to
//! one key, with the clustered read of [`Table::get`]. The first entry that passes is the
//! answer: one read view sees one committed state of the table (plus its own transaction's
//! changes), in which the unique index holds the key at most once. The lookups it cost or
//! saved count in `Status::rows` (`sec_cluster_reads`, `sec_cluster_reads_avoided`), as a
//! scan's do.

use std::ops::Bound;

use minnow_btree::ScanRange;
use minnow_btree::record::Value;

use super::Table;
use super::get::{Cols, PointKey, Reader};
use crate::error::{Result, from_tree};
use crate::row::ToKey;
use crate::schema::{SecMeta, TableMeta};
use crate::status::RowOp;
use crate::trx::Snapshot;

impl Table {
    /// The row whose key in unique secondary index `index` is `key` (one value per index
    /// column), all columns in table order; `None` if no row has that key. A consistent
    /// read of the latest committed state, as [`Table::get`] is, through the index rather
    /// than a scan (see the `by_index` module docs for how it meets the delete-marked
    /// entries a unique index keeps for old versions).
    ///
    /// Errors: [`crate::Error::NoSuchIndex`]; [`crate::Error::NotUniqueKey`] for an index that is not
    /// unique or a key with a NULL in it (any number of rows may have NULL there);
    /// [`crate::Error::TypeMismatch`] naming the index for a key of the wrong width or type.
    ///
    /// ```
    /// use minnow::{ColumnDef, ColumnType, Config, Database, IndexDef, TableDef, Value};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Database::create(dir.path(), Config::default())?;
    /// let books = db.create_table(
    ///     TableDef::new("books")
    ///         .column(ColumnDef::new("id", ColumnType::U64))
    ///         .column(ColumnDef::new("isbn", ColumnType::Fixed(13)))
    ///         .column(ColumnDef::new("stock", ColumnType::U32))
    ///         .primary_key(&["id"])
    ///         .index(IndexDef::unique("by_isbn", &["isbn"])),
    /// )?;
    /// books.insert(&[Value::UInt(1), Value::text("9780000000001"), Value::UInt(3)])?;
    /// let isbn = [Value::text("9780000000001")];
    /// assert_eq!(
    ///     books.get_by("by_isbn", &isbn)?,
    ///     Some(vec![Value::UInt(1), Value::text("9780000000001"), Value::UInt(3)])
    /// );
    /// // The primary key alone comes from the index entry (a covering read).
    /// assert_eq!(books.get_by_columns("by_isbn", &isbn, &["id"])?, Some(vec![Value::UInt(1)]));
    /// assert_eq!(books.get_by("by_isbn", &[Value::text("9780000000002")])?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_by(&self, index: &str, key: impl ToKey) -> Result<Option<Vec<Value>>> {
        let key: &[Value] = &key.to_key();
        let snap = Snapshot::View(self.db.inner()?.trx_sys().statement_view());
        self.get_by_in(&snap, index, key, None)
    }

    /// The columns `columns` (by name, in the order wanted) of the row [`Table::get_by`]
    /// finds: its projection, which decodes only those columns, and answers from the index
    /// entry alone when they are all index or primary key columns and the entry's leaf holds
    /// no change the read cannot see. [`crate::Error::NoSuchColumn`] for a name the table does not
    /// have.
    pub fn get_by_columns(
        &self,
        index: &str,
        key: impl ToKey,
        columns: &[&str],
    ) -> Result<Option<Vec<Value>>> {
        let key: &[Value] = &key.to_key();
        let snap = Snapshot::View(self.db.inner()?.trx_sys().statement_view());
        self.get_by_in(&snap, index, key, Some(columns))
    }

    /// [`Table::get_by_columns`] (all columns: `None`) as `snap` sees the table, validated
    /// against DDL.
    pub(crate) fn get_by_in(
        &self,
        snap: &Snapshot,
        index: &str,
        key: &[Value],
        columns: Option<&[&str]>,
    ) -> Result<Option<Vec<Value>>> {
        let mut admitted = self.db.admit();
        admitted.row();
        let found = self.read(|t| t.get_by_entry(snap, index, key, columns))?;
        self.db.count_rows(RowOp::Read, u64::from(found.is_some()));
        Ok(found)
    }

    /// [`Table::get_by_in`] on this handle's entry, unvalidated (see the module docs).
    fn get_by_entry(
        &self,
        snap: &Snapshot,
        index: &str,
        key: &[Value],
        columns: Option<&[&str]>,
    ) -> Result<Option<Vec<Value>>> {
        let inner = self.db.inner()?;
        let meta = &self.t.meta;
        let (i, s, key) = meta.unique_key(index, key)?;
        let (tree, _) = crate::trx::sec(&self.t, i)?;
        let proj: Vec<usize> = match columns {
            None => (0..meta.def.columns.len()).collect(),
            Some(names) => meta.positions_of(names).collect::<Result<_>>()?,
        };
        let covering = proj
            .iter()
            .all(|c| s.cols.contains(c) || meta.pk.contains(c));
        // A row read from the clustered index brings its index columns first, to be compared
        // with the key, then the columns asked for.
        let names: Vec<&str> = s
            .cols
            .iter()
            .chain(&proj)
            .filter_map(|&c| meta.def.columns.get(c).map(|c| c.name.as_str()))
            .collect();
        let nk = s.cols.len();
        let bound = || Bound::Included(key.to_vec());
        let tree_err = |e| from_tree(e, meta.name(), index);
        let entries = tree
            .scan(inner.pool(), ScanRange::new(bound(), bound()))
            .map_err(tree_err)?;
        for e in entries {
            let e = e.map_err(tree_err)?;
            let seen = snap.sees_page(e.page_max_trx_id);
            if seen && (e.deleted || covering) {
                self.db.count_rows(RowOp::SecClusterReadAvoided, 1);
                if e.deleted {
                    continue;
                }
                return Ok(Some(from_entry(meta, s, &e.values, &proj)));
            }
            self.db.count_rows(RowOp::SecClusterRead, 1);
            let pk = e.values.get(nk..).unwrap_or_default();
            let row = self.read_row(
                inner,
                PointKey::Values(pk),
                Reader::Snap(snap),
                &mut |meta, found| super::get::project(meta, found, Cols::Named(&names)),
            )?;
            if let Some(mut row) = row
                && row.get(..nk) == Some(&key[..])
            {
                return Ok(Some(row.split_off(nk)));
            }
        }
        Ok(None)
    }
}

/// The columns at `proj` (index or primary key columns) of secondary entry `values` (index
/// columns, then primary key columns): what a covering read returns.
pub(super) fn from_entry(
    meta: &TableMeta,
    s: &SecMeta,
    values: &[Value],
    proj: &[usize],
) -> Vec<Value> {
    let at = |c: usize| {
        s.cols
            .iter()
            .chain(meta.pk.iter())
            .position(|&x| x == c)
            .and_then(|p| values.get(p).cloned())
            .unwrap_or(Value::Null)
    };
    proj.iter().map(|&c| at(c)).collect()
}
