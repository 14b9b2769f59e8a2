//! Point reads through a unique secondary index: [`Table::get_by`], [`Table::get_by_columns`]
//! and (through `get_by_in`) their [`crate::Transaction`] twins (`SELECT ... WHERE isbn = ?`
//! on a `UNIQUE KEY`). The read is the engine's (`minnow-engine`'s `read::by_index` module,
//! which says how it meets the delete-marked entries a unique index keeps for old versions).

use minnow_btree::record::Value;
use minnow_engine::read::by_index;

use super::Table;
use crate::error::Result;
use crate::row::ToKey;
use crate::trx::Snapshot;

impl Table {
    /// The row whose key in unique secondary index `index` is `key` (one value per index
    /// column), all columns in table order; `None` if no row has that key. A consistent
    /// read of the latest committed state, as [`Table::get`] is, through the index rather
    /// than a scan (see the engine's `read::by_index` module docs for how it meets the delete-marked
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
        let snap = Snapshot::statement(self.db.inner()?);
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
        let snap = Snapshot::statement(self.db.inner()?);
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
        by_index::unique(self.db.inner()?, &self.t, snap, index, key, columns)
    }
}
