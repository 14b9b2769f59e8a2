//! The [`Transaction`] twins of [`crate::Table::get_by`], [`crate::Table::update_columns`]
//! and [`crate::Table::insert_returning_id`]: the same statements, under the transaction's
//! read view and locks.

use minnow_btree::record::Value;

use super::Transaction;
use crate::error::Result;
use crate::row::ToKey;
use crate::status::RowOp;
use crate::trx::Snapshot;
use minnow_engine::autoinc::Inserted;
use minnow_engine::write::{self, BulkInsert};

impl Transaction {
    /// The row whose key in unique secondary index `index` is `key`, as this transaction
    /// sees it (its read view, its own changes included): [`crate::Table::get_by`], with its
    /// errors. A consistent read: it takes no lock, and under REPEATABLE READ it finds the
    /// row by the key it had when the view was taken, even if that key has changed since.
    ///
    /// ```
    /// use minnow::{ColumnDef, ColumnType, Config, Database, IndexDef, TableDef, Value};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Database::create(dir.path(), Config::default())?;
    /// let users = db.create_table(TableDef::new("users")
    ///     .column(ColumnDef::new("id", ColumnType::U64))
    ///     .column(ColumnDef::new("email", ColumnType::Var(40)))
    ///     .primary_key(&["id"])
    ///     .index(IndexDef::unique("by_email", &["email"])))?;
    /// users.insert(&[Value::UInt(1), Value::text("ada@old")])?;
    /// let mut reader = db.begin()?;
    /// assert!(reader.get_by(&users, "by_email", &[Value::text("ada@old")])?.is_some());
    /// users.update_columns(&[Value::UInt(1)], &[("email", Value::text("ada@new"))])?;
    /// // The reader's view still has the old address, and not the new one.
    /// assert!(reader.get_by(&users, "by_email", &[Value::text("ada@old")])?.is_some());
    /// assert!(reader.get_by(&users, "by_email", &[Value::text("ada@new")])?.is_none());
    /// reader.commit()?;
    /// assert!(users.get_by("by_email", &[Value::text("ada@new")])?.is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_by(
        &self,
        table: &crate::Table,
        index: &str,
        key: impl ToKey,
    ) -> Result<Option<Vec<Value>>> {
        let key: &[Value] = &key.to_key();
        let snap = self.read_snapshot(table)?;
        table.get_by_in(&snap, index, key, None)
    }

    /// The columns `columns` of the row [`Transaction::get_by`] finds
    /// ([`crate::Table::get_by_columns`] under this transaction's view).
    pub fn get_by_columns(
        &self,
        table: &crate::Table,
        index: &str,
        key: impl ToKey,
        columns: &[&str],
    ) -> Result<Option<Vec<Value>>> {
        let key: &[Value] = &key.to_key();
        let snap = self.read_snapshot(table)?;
        table.get_by_in(&snap, index, key, Some(columns))
    }

    /// A locking read through unique secondary index `index` (`SELECT ... WHERE isbn = ?
    /// FOR UPDATE`): the row whose key there is `key`, at its **latest committed** version
    /// (or this transaction's own), locked until the transaction ends, as
    /// [`Transaction::get_for_update`] reads by primary key; `None` if no row has the key.
    /// Either way the key itself stays locked too, so no other transaction can give it to a
    /// row (insert or update) until this one ends, under both isolation levels. Rows of the
    /// index's delete-marked entries for the key (rows that had it once) are locked as well
    /// while they are checked. Errors as [`crate::Table::get_by`]'s and a write's: a
    /// deadlock rolls the whole transaction back, a lock wait timeout only this statement.
    ///
    /// ```
    /// use minnow::{ColumnDef, ColumnType, Config, Database, IndexDef, TableDef, Value};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Database::create(dir.path(), Config::default())?;
    /// let books = db.create_table(TableDef::new("books")
    ///     .column(ColumnDef::new("id", ColumnType::U64))
    ///     .column(ColumnDef::new("isbn", ColumnType::Var(13)))
    ///     .column(ColumnDef::new("stock", ColumnType::U32))
    ///     .primary_key(&["id"])
    ///     .index(IndexDef::unique("by_isbn", &["isbn"])))?;
    /// books.insert(&[Value::UInt(1), Value::text("978"), Value::UInt(3)])?;
    /// let mut sell = db.begin()?;
    /// let row = sell.get_by_for_update(&books, "by_isbn", "978")?.unwrap();
    /// let stock: u32 = row[2].clone().get()?;
    /// sell.update_columns(&books, &row[0], &[("stock", Value::from(stock - 1))])?;
    /// sell.commit()?;
    /// assert_eq!(books.get_by_columns("by_isbn", "978", &["stock"])?, Some(vec![Value::UInt(2)]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_by_for_update(
        &mut self,
        table: &crate::Table,
        index: &str,
        key: impl ToKey,
    ) -> Result<Option<Vec<Value>>> {
        let key: &[Value] = &key.to_key();
        self.write(table, |inner, t, st, w| {
            write::get_by_for_update(inner, t, st, w, index, key)
        })
    }

    /// Sets the named columns of the row with primary key `key`, under its lock, over its
    /// latest version ([`crate::Table::update_columns`], with its errors); false if there
    /// is no such row. The row stays locked until the transaction ends. Errors as a
    /// write's: a deadlock rolls the whole transaction back, a lock wait timeout only this
    /// statement.
    pub fn update_columns(
        &mut self,
        table: &crate::Table,
        key: impl ToKey,
        changes: &[(&str, Value)],
    ) -> Result<bool> {
        let key: &[Value] = &key.to_key();
        let found = self.write(table, |inner, t, st, w| {
            let key = t.meta.normalise_key(&t.meta.pk, key)?;
            let changes = write::column_changes(&t.meta, changes)?;
            write::update_columns(inner, t, st, w, &key, &changes)
        })?;
        self.db.count_rows(RowOp::Update, u64::from(found));
        Ok(found)
    }

    /// Inserts a row ([`Transaction::insert`]) and says what it did:
    /// [`Inserted::id`] is the auto-increment value the row got, `None` if it brought its
    /// own or the table has no AUTO_INCREMENT column; so an order's generated id can be
    /// used for its lines in the same transaction. Nothing of a transaction is durable
    /// before its commit, whose return says how durable it became. A rollback does not give
    /// the value back (as in InnoDB, the counter only moves forward).
    ///
    /// ```
    /// use minnow::{ColumnDef, ColumnType, Config, Database, TableDef, Value};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Database::create(dir.path(), Config::default())?;
    /// let orders = db.create_table(TableDef::new("orders")
    ///     .column(ColumnDef::new("id", ColumnType::U64).auto_increment())
    ///     .column(ColumnDef::new("item", ColumnType::Var(20)))
    ///     .primary_key(&["id"]))?;
    /// let lines = db.create_table(TableDef::new("lines")
    ///     .column(ColumnDef::new("order_id", ColumnType::U64))
    ///     .column(ColumnDef::new("n", ColumnType::U32))
    ///     .primary_key(&["order_id", "n"]))?;
    /// let mut tx = db.begin()?;
    /// let id = tx.insert_returning_id(&orders, &[Value::Null, Value::text("book")])?.id();
    /// assert_eq!(id, Some(1));
    /// tx.insert(&lines, &[Value::UInt(id.unwrap()), Value::UInt(1)])?;
    /// tx.commit()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn insert_returning_id(&mut self, table: &crate::Table, row: &[Value]) -> Result<Inserted> {
        self.live()?;
        table.belongs_to(&self.db)?;
        let inner = self.db.inner()?;
        let buffered = self.state.get_mut().bulk_insert(inner, &table.t, row);
        self.buffering = self.state.get_mut().buffers();
        if let Some(Snapshot::View(v)) = self.view.get_mut() {
            v.set_creator(self.state.get_mut().id());
        }
        let generated = match buffered? {
            BulkInsert::Buffered(generated) => generated,
            BulkInsert::Prepared(row, generated) => {
                self.write(table, |inner, t, st, w| {
                    write::insert(inner, t, st, w, &row)
                })?;
                generated
            }
            BulkInsert::Ordinary => self.write(table, |inner, t, st, w| {
                let mut reserved = 0..0;
                let mut generated = Vec::new();
                let row = t.prepare_row(inner, row, &mut reserved, &mut generated)?;
                write::insert(inner, t, st, w, &row)?;
                Ok(generated)
            })?,
        };
        self.db.count_rows(RowOp::Insert, 1);
        Ok(Inserted { rows: 1, generated })
    }
}
