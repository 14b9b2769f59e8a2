//! [`Table::update_columns`]: the autocommit statement over the row write of
//! `minnow_engine::write::update_columns` (whose module docs say what it does).

use minnow_btree::record::Value;

use super::Table;
use crate::error::Result;
use crate::row::ToKey;
use crate::status::RowOp;
use minnow_engine::write;

impl Table {
    /// Sets the named columns of the row with primary key `key` (`UPDATE ... SET stock = 4
    /// WHERE id = ?`), leaving the others as they are, as a transaction of its own
    /// (autocommit), made as durable as [`crate::Config::flush_log_at_trx_commit`] says
    /// before this returns; false if there was no such row (as
    /// [`crate::Transaction::update_columns`]).
    ///
    /// One atomic statement: it locks the row (waiting while another transaction holds it,
    /// up to `lock_wait_timeout`), reads its **latest** version under the lock and writes it
    /// back with the new values, so a change committed meanwhile by another statement is
    /// kept, not overwritten with an older copy (as a read-modify-write through
    /// [`Table::get`] and [`Table::update`] can). Secondary indexes on the changed columns
    /// are maintained as [`Table::update`] maintains them, unique checks included
    /// ([`crate::Error::DuplicateKey`]).
    ///
    /// Errors: [`crate::Error::NoSuchColumn`] for a name the table does not have,
    /// [`crate::Error::PrimaryKeyUpdate`] for a primary key column (change a key by a delete
    /// and an insert in one transaction), [`crate::Error::TypeMismatch`] for a value that
    /// does not fit its column; nothing is written then.
    ///
    /// ```
    /// use minnow::{ColumnDef, ColumnType, Config, Database, TableDef, Value};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Database::create(dir.path(), Config::default())?;
    /// let t = db.create_table(TableDef::new("books")
    ///     .column(ColumnDef::new("id", ColumnType::U64))
    ///     .column(ColumnDef::new("title", ColumnType::Var(40)))
    ///     .column(ColumnDef::new("stock", ColumnType::U32))
    ///     .primary_key(&["id"]))?;
    /// t.insert(&[Value::UInt(1), Value::text("Dune"), Value::UInt(5)])?;
    /// // The key is any `ToKey`: a plain `1u64` here, `&[Value::UInt(1)]` as well.
    /// assert!(t.update_columns(1u64, &[("stock", Value::from(4u32))])?);
    /// assert_eq!(t.get(1u64)?, Some(vec![Value::UInt(1), Value::text("Dune"), Value::UInt(4)]));
    /// assert!(!t.update_columns(&[Value::UInt(2)], &[("stock", Value::UInt(4))])?);
    /// assert!(matches!(
    ///     t.update_columns(1u64, &[("id", Value::UInt(9))]),
    ///     Err(minnow::Error::PrimaryKeyUpdate { .. })
    /// ));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn update_columns(&self, key: impl ToKey, changes: &[(&str, Value)]) -> Result<bool> {
        let key: &[Value] = &key.to_key();
        let mut admitted = self.db.admit();
        admitted.row();
        let done = write::keyed_one(self.db.inner()?, &self.t, key, |inner, t, st, w, key| {
            let changes = write::column_changes(&t.meta, changes)?;
            write::update_columns(inner, t, st, w, key, &changes)
        })?;
        self.keyed_end(RowOp::Update, done)
    }
}
