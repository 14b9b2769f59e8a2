//! Typed reads and writes on a [`Table`]: the [`crate::row`] traits over the untyped
//! statements. Each call is one untyped statement: the engine projects the columns a
//! [`FromRow`] type names, and [`Table::update_row`] of a type that sets only some columns
//! is one [`Table::update_columns`].

use std::marker::PhantomData;
use std::ops::Bound;
use std::sync::Arc;

use minnow_btree::record::Value;

use super::{Rows, Scan, Table};
use crate::error::Result;
use crate::row::{self, FromRow, ToKey, ToRow, Update};
use minnow_engine::TableEntry;

impl Table {
    /// The row with primary key `key`, read into `T` (a typed [`Table::get`]): a struct
    /// reads only its columns ([`Table::get_columns`]), a tuple every column. `None` if
    /// there is no such row.
    ///
    /// ```
    /// use minnow::{ColumnDef, ColumnType, Config, Database, TableDef, Value};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Database::create(dir.path(), Config::default())?;
    /// let t = db.create_table(TableDef::new("t")
    ///     .column(ColumnDef::new("city", ColumnType::Var(20)))
    ///     .column(ColumnDef::new("n", ColumnType::U32))
    ///     .column(ColumnDef::new("pop", ColumnType::U64))
    ///     .primary_key(&["city", "n"]))?;
    /// t.insert_row(&("oslo", 3u32, 700_000u64))?;
    /// // A key is a value, a tuple of values, or `&[Value]`.
    /// let row: Option<(String, u32, u64)> = t.get_row(("oslo", 3u32))?;
    /// assert_eq!(row, Some(("oslo".to_owned(), 3, 700_000)));
    /// let same = t.get_row::<(String, u32, u64)>(&[Value::text("oslo"), Value::UInt(3)])?;
    /// assert_eq!(same, row);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_row<T: FromRow>(&self, key: impl ToKey) -> Result<Option<T>> {
        let key = key.to_key();
        let found = match T::COLUMNS {
            Some(cols) => self.get_columns(&key, cols)?,
            None => self.get(&key)?,
        };
        row::read_found(self.def(), found)
    }

    /// The row whose key in unique secondary index `index` is `key`, read into `T` (a typed
    /// [`Table::get_by`]): a struct reads only its columns ([`Table::get_by_columns`], from
    /// the index entry alone when they are all in it), a tuple every column.
    ///
    #[cfg_attr(feature = "derive", doc = "```")]
    #[cfg_attr(not(feature = "derive"), doc = "```ignore")]
    /// use minnow::{ColumnDef, ColumnType, Config, Database, IndexDef, Row, TableDef};
    ///
    /// #[derive(Row, Debug, PartialEq)]
    /// struct Isbn { id: u64, isbn: String }
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Database::create(dir.path(), Config::default())?;
    /// let books = db.create_table(TableDef::new("books")
    ///     .column(ColumnDef::new("id", ColumnType::U64))
    ///     .column(ColumnDef::new("isbn", ColumnType::Var(20)))
    ///     .column(ColumnDef::new("title", ColumnType::Var(100)))
    ///     .primary_key(&["id"])
    ///     .index(IndexDef::unique("by_isbn", &["isbn"])))?;
    /// books.insert_row(&(7u64, "978-0", "Dune"))?;
    /// let found: Option<Isbn> = books.get_row_by("by_isbn", "978-0")?;
    /// assert_eq!(found, Some(Isbn { id: 7, isbn: "978-0".into() }));
    /// assert_eq!(books.get_row_by::<Isbn>("by_isbn", "978-1")?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_row_by<T: FromRow>(&self, index: &str, key: impl ToKey) -> Result<Option<T>> {
        let key = key.to_key();
        let found = match T::COLUMNS {
            Some(cols) => self.get_by_columns(index, &key, cols)?,
            None => self.get_by(index, &key)?,
        };
        row::read_found(self.def(), found)
    }

    /// A primary key scan read into `T` (a typed [`Table::scan`]): a struct's columns
    /// replace `scan`'s [`Scan::columns`]; a tuple maps to `scan`'s columns, or every
    /// column.
    pub fn scan_rows<T: FromRow>(&self, scan: Scan) -> Result<TypedRows<T>> {
        let scan = typed_scan::<T>(scan);
        let columns = self.value_names::<T>(&scan);
        Ok(TypedRows::new(self, self.scan(scan)?, columns))
    }

    /// A secondary index scan read into `T` (a typed [`Table::scan_index`]; columns as
    /// [`Table::scan_rows`] picks them).
    pub fn scan_index_rows<T: FromRow>(&self, index: &str, scan: Scan) -> Result<TypedRows<T>> {
        let scan = typed_scan::<T>(scan);
        let columns = self.value_names::<T>(&scan);
        Ok(TypedRows::new(self, self.scan_index(index, scan)?, columns))
    }

    /// Inserts `row` (a typed [`Table::insert_returning_id`]): a struct's fields go to the
    /// columns of their names and every other column gets NULL (for an AUTO_INCREMENT column,
    /// its next value); a tuple gives every column in table order. Returns the
    /// auto-increment value the row got, `None` if it brought its own or the table has no
    /// AUTO_INCREMENT column.
    pub fn insert_row<R: ToRow + ?Sized>(&self, row: &R) -> Result<Option<u64>> {
        let values = row::insert_values(self.def(), row)?;
        Ok(self.insert_returning_id(&values)?.id())
    }

    /// Updates the row with `row`'s primary key (a typed [`Table::update`]): the columns
    /// `row` has a field for get its values, the others keep theirs. A type that sets every
    /// column is one [`Table::update`]; one that sets some is one [`Table::update_columns`]
    /// (those columns of the row's latest version, changed under its lock). A missing row is
    /// [`crate::Error::RowNotFound`].
    pub fn update_row<R: ToRow + ?Sized>(&self, row: &R) -> Result<()> {
        match row::update_values(self.def(), row)? {
            Update::Full(values) => self.update(&values).map(drop),
            Update::Partial { key, changes } => {
                let found = self.update_columns(&key, &changes)?;
                row::updated(self.def(), key, found)
            }
        }
    }

    /// The names of the values a typed scan returns.
    pub(crate) fn value_names<T: FromRow>(&self, scan: &Scan) -> Vec<String> {
        let cols = row::read_columns::<T>(self.def(), scan.columns.as_deref());
        cols.into_iter().map(str::to_owned).collect()
    }
}

impl Scan {
    /// Rows whose key starts with `prefix`, typed ([`ToKey`]): the leading key columns for
    /// [`Table::scan`], the leading index columns for [`Table::scan_index`] (equal to it
    /// when it is the whole key). `Scan::prefix("oslo")`, `Scan::prefix(("oslo", 3u32))`.
    ///
    /// ```
    /// use minnow::{ColumnDef, ColumnType, Config, Database, IndexDef, Scan, TableDef};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Database::create(dir.path(), Config::default())?;
    /// let t = db.create_table(TableDef::new("stops")
    ///     .column(ColumnDef::new("city", ColumnType::Var(20)))
    ///     .column(ColumnDef::new("n", ColumnType::U32))
    ///     .primary_key(&["city", "n"]))?;
    /// for (city, n) in [("bern", 1u32), ("oslo", 1), ("oslo", 2)] {
    ///     t.insert_row(&(city, n))?;
    /// }
    /// let oslo: Vec<(String, u32)> = t.scan_rows(Scan::prefix("oslo"))?.collect::<Result<_, _>>()?;
    /// assert_eq!(oslo, [("oslo".to_owned(), 1), ("oslo".to_owned(), 2)]);
    /// let from_oslo_2 = Scan::between(std::ops::Bound::Included(("oslo", 2u32)), std::ops::Bound::Unbounded);
    /// assert_eq!(t.scan_rows::<(String, u32)>(from_oslo_2)?.count(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn prefix(prefix: impl ToKey) -> Scan {
        let key = prefix.to_key().into_owned();
        Scan::range(Bound::Included(key.clone()), Bound::Included(key))
    }

    /// Rows with keys from `start` to `end`, typed bounds ([`ToKey`]; a bound is a key or
    /// a key prefix, as for [`Scan::range`]).
    pub fn between<K: ToKey>(start: Bound<K>, end: Bound<K>) -> Scan {
        let owned = |b: Bound<K>| b.map(|k| k.to_key().into_owned());
        Scan::range(owned(start), owned(end))
    }
}

/// `scan` with `T`'s columns, if it names its own.
pub(crate) fn typed_scan<T: FromRow>(scan: Scan) -> Scan {
    match T::COLUMNS {
        Some(cols) => scan.columns(cols),
        None => scan,
    }
}

/// A typed scan ([`Table::scan_rows`], [`crate::Transaction::scan_rows`]): the rows of a
/// [`Rows`] scan, each read into `T`. An error ends the scan as [`Rows`]' do; a row that
/// does not convert is [`crate::Error::RowType`] (the scan may go on past it).
pub struct TypedRows<T> {
    rows: Rows,
    table: Arc<TableEntry>,
    columns: Vec<String>,
    _row: PhantomData<fn() -> T>,
}

impl<T: FromRow> TypedRows<T> {
    pub(crate) fn new(table: &Table, rows: Rows, columns: Vec<String>) -> Self {
        TypedRows {
            rows,
            table: Arc::clone(&table.t),
            columns,
            _row: PhantomData,
        }
    }

    /// The untyped scan underneath ([`Rows::is_covering`] says whether a secondary index
    /// scan answers from the index alone).
    pub fn rows(&self) -> &Rows {
        &self.rows
    }
}

impl<T> std::fmt::Debug for TypedRows<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TypedRows")
            .field("rows", &self.rows)
            .field("type", &row::type_name::<T>())
            .finish()
    }
}

impl<T: FromRow> Iterator for TypedRows<T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Result<T>> {
        let values: Vec<Value> = match self.rows.next()? {
            Ok(v) => v,
            Err(e) => return Some(Err(e)),
        };
        Some(row::read(&self.table.meta.def, &self.columns, values))
    }
}
