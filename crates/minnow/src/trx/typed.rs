//! Typed reads and writes in a [`Transaction`]: the [`crate::row`] traits over the
//! transaction's untyped statements, with the same mapping as the [`crate::Table`] ones.

use super::transaction::Transaction;
use crate::error::Result;
use crate::row::{self, FromRow, ToKey, ToRow, Update};
use crate::table::{Scan, Table, TypedRows, typed_scan};

impl Transaction {
    /// The row with primary key `key` as this transaction sees it, read into `T` (a typed
    /// [`Transaction::get`]; see [`crate::Table::get_row`]).
    pub fn get_row<T: FromRow>(&self, table: &Table, key: impl ToKey) -> Result<Option<T>> {
        let key = key.to_key();
        let found = match T::COLUMNS {
            Some(cols) => self.get_columns(table, &key, cols)?,
            None => self.get(table, &key)?,
        };
        row::read_found(table.def(), found)
    }

    /// The row whose key in unique secondary index `index` is `key`, as this transaction
    /// sees it, read into `T` (a typed [`Transaction::get_by`]; see
    /// [`crate::Table::get_row_by`]).
    pub fn get_row_by<T: FromRow>(
        &self,
        table: &Table,
        index: &str,
        key: impl ToKey,
    ) -> Result<Option<T>> {
        let key = key.to_key();
        let found = match T::COLUMNS {
            Some(cols) => self.get_by_columns(table, index, &key, cols)?,
            None => self.get_by(table, index, &key)?,
        };
        row::read_found(table.def(), found)
    }

    /// A locking read of the row with primary key `key`, read into `T` (a typed
    /// [`Transaction::get_for_update`]: the row's lock, then its latest committed version).
    /// The whole row is read, as the lock needs it; `T` takes its columns from it.
    pub fn get_row_for_update<T: FromRow>(
        &mut self,
        table: &Table,
        key: impl ToKey,
    ) -> Result<Option<T>> {
        let found = self.get_for_update(table, key)?;
        read_locked(table, found)
    }

    /// A locking read through unique secondary index `index`, read into `T` (a typed
    /// [`Transaction::get_by_for_update`], `SELECT ... WHERE isbn = ? FOR UPDATE`: the row's
    /// lock and the key's, then the row's latest committed version). The whole row is read,
    /// as the lock needs it; `T` takes its columns from it.
    pub fn get_row_by_for_update<T: FromRow>(
        &mut self,
        table: &Table,
        index: &str,
        key: impl ToKey,
    ) -> Result<Option<T>> {
        let found = self.get_by_for_update(table, index, key)?;
        read_locked(table, found)
    }

    /// A primary key scan as this transaction sees the table, read into `T` (a typed
    /// [`Transaction::scan`]; columns as [`crate::Table::scan_rows`] picks them).
    pub fn scan_rows<T: FromRow>(&self, table: &Table, scan: Scan) -> Result<TypedRows<T>> {
        let scan = typed_scan::<T>(scan);
        let columns = table.value_names::<T>(&scan);
        let rows = self.scan(table, scan)?;
        Ok(TypedRows::new(table, rows, columns))
    }

    /// A secondary index scan as this transaction sees the table, read into `T` (a typed
    /// [`Transaction::scan_index`]).
    pub fn scan_index_rows<T: FromRow>(
        &self,
        table: &Table,
        index: &str,
        scan: Scan,
    ) -> Result<TypedRows<T>> {
        let scan = typed_scan::<T>(scan);
        let columns = table.value_names::<T>(&scan);
        let rows = self.scan_index(table, index, scan)?;
        Ok(TypedRows::new(table, rows, columns))
    }

    /// A locking range read over the primary key, read into `T` (a typed
    /// [`Transaction::scan_for_update`]; columns as [`crate::Table::scan_rows`] picks them).
    pub fn scan_rows_for_update<T: FromRow>(
        &mut self,
        table: &Table,
        scan: Scan,
    ) -> Result<Vec<T>> {
        let scan = typed_scan::<T>(scan);
        let columns = table.value_names::<T>(&scan);
        let def = table.def();
        self.scan_for_update(table, scan)?
            .into_iter()
            .map(|values| row::read(def, &columns, values))
            .collect()
    }

    /// Inserts `row` (a typed [`Transaction::insert`], mapped as [`crate::Table::insert_row`]
    /// maps it). Returns the auto-increment value the row got, `None` if it brought its own
    /// or the table has no AUTO_INCREMENT column: an order's generated id is known before
    /// the transaction commits.
    pub fn insert_row<R: ToRow + ?Sized>(&mut self, table: &Table, row: &R) -> Result<Option<u64>> {
        let values = row::insert_values(table.def(), row)?;
        Ok(self.insert_returning_id(table, &values)?.id())
    }

    /// Updates the row with `row`'s primary key (a typed [`Transaction::update`]): the
    /// columns `row` has a field for get its values, the others keep theirs. A type that
    /// sets only some columns is a [`Transaction::update_columns`]: it changes those columns
    /// of the row's latest version under its lock, so no concurrent change of the other
    /// columns is lost. A missing row is [`crate::Error::RowNotFound`].
    pub fn update_row<R: ToRow + ?Sized>(&mut self, table: &Table, row: &R) -> Result<()> {
        match row::update_values(table.def(), row)? {
            Update::Full(values) => self.update(table, &values),
            Update::Partial { key, changes } => {
                let found = self.update_columns(table, &key, &changes)?;
                row::updated(table.def(), key, found)
            }
        }
    }
}

/// A whole row a locking read found, read into `T` (a struct takes its columns from it).
fn read_locked<T: FromRow>(
    table: &Table,
    found: Option<Vec<minnow_btree::record::Value>>,
) -> Result<Option<T>> {
    let Some(values) = found else {
        return Ok(None);
    };
    let def = table.def();
    let values = row::project::<T>(def, values)?;
    row::read(def, &row::read_columns::<T>(def, None), values).map(Some)
}
