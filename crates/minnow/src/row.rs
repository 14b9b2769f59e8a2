//! Typed rows: an application reads and writes its own structs instead of `Vec<Value>`.
//!
//! A table's rows are lists of [`Value`]s, one per column in table order. Three traits map
//! them to Rust types:
//!
//! - [`FromRow`]: a type a row is read into ([`crate::Table::get_row`],
//!   [`crate::Table::scan_rows`], and the same on [`crate::Transaction`]);
//! - [`ToRow`]: a type a row is written from ([`crate::Table::insert_row`],
//!   [`crate::Table::update_row`]);
//! - [`ToKey`]: a key (a primary key, a unique secondary key, or a scan bound's prefix):
//!   `7u64`, `"978-0-13"`, `("oslo", 3u32)`, or values (`&[Value]`, `Vec<Value>`). Every
//!   call that takes a key takes one, the untyped ones too ([`crate::Table::get`],
//!   [`crate::Table::delete`], [`crate::Table::update_columns`], [`crate::Table::history`],
//!   [`crate::Transaction::get_for_update`], the `get_by` family, `AsyncDatabase`'s).
//!
//! ## By name or by position
//!
//! A **struct** maps its fields to columns **by name** (`#[derive(Row)]`, feature `derive`,
//! writes both traits; `#[minnow(rename = "col")]` picks another column name). So a struct
//! needs only the columns it uses, in any order:
//!
//! - a read **projects**: it asks the engine for exactly the struct's columns, in field
//!   order (as [`crate::Table::get_columns`] and [`crate::Scan::columns`] do), so a struct
//!   without the table's BLOB column never reads that BLOB's overflow pages;
//! - an insert stores NULL in every column the struct has no field for, which suits a
//!   nullable column and an AUTO_INCREMENT one (NULL takes the next value); a NOT NULL
//!   column without a field is an error naming it;
//! - an update changes the struct's columns and leaves the others as they are (the struct
//!   must have every primary key column: that is how the row is found).
//!
//! A **tuple** or a `Vec<Value>` maps **by position**: every column in table order (or,
//! in a scan with [`crate::Scan::columns`], the scan's columns in its order).
//!
//! Field types convert with [`FromValue`] and [`ToValue`] (integers of any width within
//! range, `String` for text, `Vec<u8>` for bytes, `f64`, `bool` as 0/1, [`crate::Date`],
//! [`crate::DateTime`], `Option<T>` for a nullable column; the `minnow_btree::record::value`
//! module docs list them). A value that does not fit its field, a field whose column the
//! table lacks, a missing NOT NULL column: each is [`crate::Error::RowType`], naming the
//! type, the field, the column and the table.
//!
#![cfg_attr(feature = "derive", doc = "```")]
#![cfg_attr(not(feature = "derive"), doc = "```ignore")]
//! use minnow::{ColumnDef, ColumnType, Config, Database, IndexDef, Row, Scan, TableDef};
//!
//! #[derive(Row, Debug, PartialEq)]
//! struct Book {
//!     isbn: String,
//!     title: String,
//!     stock: u32,
//!     #[minnow(rename = "published")]
//!     year: Option<u16>,
//! }
//!
//! let dir = tempfile::tempdir()?;
//! let db = Database::create(dir.path(), Config::default())?;
//! let books = db.create_table(TableDef::new("books")
//!     .column(ColumnDef::new("isbn", ColumnType::Var(20)))
//!     .column(ColumnDef::new("title", ColumnType::Var(200)))
//!     .column(ColumnDef::new("stock", ColumnType::U32))
//!     .column(ColumnDef::nullable("published", ColumnType::U16))
//!     .column(ColumnDef::nullable("blurb", ColumnType::Text))
//!     .primary_key(&["isbn"]))?;
//! let book = Book { isbn: "978-0-13-468599-1".into(), title: "The Rust Book".into(), stock: 3, year: Some(2019) };
//! books.insert_row(&book)?;                       // `blurb` is NULL
//! assert_eq!(books.get_row::<Book>("978-0-13-468599-1")?, Some(book));
//!
//! // A tuple reads every column, by position.
//! let (isbn, _, stock, _, blurb): (String, String, u32, Option<u16>, Option<String>) =
//!     books.get_row("978-0-13-468599-1")?.unwrap();
//! assert_eq!((isbn.as_str(), stock, blurb), ("978-0-13-468599-1", 3, None));
//!
//! // In a scan with columns, a tuple maps to those columns.
//! let titles: Vec<(String,)> = books.scan_rows(Scan::all().columns(&["title"]))?
//!     .collect::<Result<_, _>>()?;
//! assert_eq!(titles, [("The Rust Book".to_owned(),)]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## What the derive refuses
//!
//! Only structs with named fields (the names are the columns), without generic parameters,
//! each column once. Anything else is a compile error that says why:
//!
//! ```compile_fail
//! #[derive(minnow::Row)]
//! struct Pair(u64, String); // a tuple struct: which column is each field?
//! ```
//!
//! ```compile_fail
//! #[derive(minnow::Row)]
//! enum Shape { Circle { r: f64 } }
//! ```
//!
//! ```compile_fail
//! #[derive(minnow::Row)]
//! struct Wrapped<T> { id: u64, value: T }
//! ```
//!
//! ```compile_fail
//! #[derive(minnow::Row)]
//! struct Twice { id: u64, #[minnow(rename = "id")] other: u64 }
//! ```
//!
//! ```compile_fail
//! #[derive(minnow::Row)]
//! struct Odd { #[minnow(column = "id")] id: u64 } // the attribute is `rename`
//! ```
//!
//! ```compile_fail
//! // A field type without a conversion to and from a value.
//! #[derive(minnow::Row)]
//! struct Opaque { id: u64, at: std::time::Instant }
//! ```
//!
//! The same struct with every field of a supported type compiles:
//!
#![cfg_attr(feature = "derive", doc = "```")]
#![cfg_attr(not(feature = "derive"), doc = "```ignore")]
//! #[derive(minnow::Row)]
//! struct Fine { id: u64, #[minnow(rename = "other_id")] other: u64 }
//! ```
//!
//! ## Implementing the traits by hand
//!
//! The derive writes what a hand-written impl would: the column names (the `COLUMNS`
//! constants), the field names for errors (`FIELDS`), and the conversions, through
//! [`values`] and [`field`] when reading. A type that maps by position sets `COLUMNS` to
//! `None`.
//!
//! ```
//! use minnow::row::{self, FromRow, RowError, ToRow};
//! use minnow::{ToValue, Value};
//!
//! struct Stock { isbn: String, stock: u32 }
//!
//! impl FromRow for Stock {
//!     const COLUMNS: Option<&'static [&'static str]> = Some(&["isbn", "stock"]);
//!     fn from_row(values: Vec<Value>) -> Result<Stock, RowError> {
//!         let [isbn, stock] = row::values(values)?;
//!         Ok(Stock { isbn: row::field(isbn, 0)?, stock: row::field(stock, 1)? })
//!     }
//! }
//!
//! impl ToRow for Stock {
//!     const COLUMNS: Option<&'static [&'static str]> = Some(&["isbn", "stock"]);
//!     fn to_values(&self) -> Vec<Value> {
//!         vec![self.isbn.to_value(), self.stock.to_value()]
//!     }
//! }
//!
//! let s = Stock::from_row(vec![Value::text("978-0"), Value::UInt(4)])?;
//! assert_eq!((s.isbn.as_str(), s.stock), ("978-0", 4));
//! assert_eq!(s.to_values(), [Value::text("978-0"), Value::UInt(4)]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::borrow::Cow;

use minnow_btree::record::{Date, DateTime, Value};
pub use minnow_btree::record::{FromValue, FromValueError, ToValue};

use crate::error::{Error, Result};
use crate::schema::TableDef;

/// A Rust type a table's row is read into (see the module docs).
pub trait FromRow: Sized {
    /// The columns to read, by name, in the order [`FromRow::from_row`] takes their values
    /// (a read asks the engine for exactly these); `None` for every column in table order,
    /// or a scan's own [`crate::Scan::columns`].
    const COLUMNS: Option<&'static [&'static str]>;
    /// The field each value goes to, in the same order, for errors (empty: the values'
    /// positions stand for them, as for a tuple).
    const FIELDS: &'static [&'static str] = &[];

    /// Converts the values, in [`FromRow::COLUMNS`] order.
    fn from_row(values: Vec<Value>) -> std::result::Result<Self, RowError>;
}

/// A Rust type a table's row is written from (see the module docs).
pub trait ToRow {
    /// The columns [`ToRow::to_values`] gives values for, by name, in its order; `None` for
    /// every column in table order.
    const COLUMNS: Option<&'static [&'static str]>;
    /// The field each value comes from, in the same order, for errors (empty: positions).
    const FIELDS: &'static [&'static str] = &[];

    /// The values, in [`ToRow::COLUMNS`] order.
    fn to_values(&self) -> Vec<Value>;
}

/// A key, or the leading columns of one, as every call that takes a key takes it: one value
/// (`7u64`, `"978-0"`), a tuple of values (`("oslo", 3u32)`), or values (`&[Value]`,
/// `Vec<Value>`, a `Value`). Which key it is (primary, or a unique secondary index's) is the
/// call's: [`crate::Table::get`] takes a primary key, [`crate::Table::get_by`] an index's.
pub trait ToKey {
    /// The key's values (borrowed when they already are values).
    fn to_key(&self) -> Cow<'_, [Value]>;
}

/// A row whose values do not fit a [`FromRow`] type; the typed calls turn it into
/// [`Error::RowType`], naming the table's column.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RowError {
    /// The value at `index` does not convert to its field's type.
    #[error("value {index}: {source}")]
    Value {
        /// The position of the value (and of its field).
        index: usize,
        /// Expected against found.
        source: FromValueError,
    },
    /// A row with another number of values than the type has fields.
    #[error("{got} values for {expected} fields")]
    Width {
        /// The type's fields.
        expected: usize,
        /// The row's values.
        got: usize,
    },
}

/// The `N` values of a row, for a [`FromRow`] impl of `N` fields; [`RowError::Width`] for
/// another number.
pub fn values<const N: usize>(values: Vec<Value>) -> std::result::Result<[Value; N], RowError> {
    let got = values.len();
    values
        .try_into()
        .map_err(|_| RowError::Width { expected: N, got })
}

/// Value `index` of a row converted to its field's type `T`, for a [`FromRow`] impl.
pub fn field<T: FromValue>(v: Value, index: usize) -> std::result::Result<T, RowError> {
    T::from_value(v).map_err(|source| RowError::Value { index, source })
}

impl FromRow for Vec<Value> {
    const COLUMNS: Option<&'static [&'static str]> = None;
    fn from_row(values: Vec<Value>) -> std::result::Result<Vec<Value>, RowError> {
        Ok(values)
    }
}

impl ToRow for [Value] {
    const COLUMNS: Option<&'static [&'static str]> = None;
    fn to_values(&self) -> Vec<Value> {
        self.to_vec()
    }
}

impl ToRow for Vec<Value> {
    const COLUMNS: Option<&'static [&'static str]> = None;
    fn to_values(&self) -> Vec<Value> {
        self.clone()
    }
}

impl<const N: usize> ToRow for [Value; N] {
    const COLUMNS: Option<&'static [&'static str]> = None;
    fn to_values(&self) -> Vec<Value> {
        self.to_vec()
    }
}

impl ToKey for [Value] {
    fn to_key(&self) -> Cow<'_, [Value]> {
        Cow::Borrowed(self)
    }
}

impl ToKey for Vec<Value> {
    fn to_key(&self) -> Cow<'_, [Value]> {
        Cow::Borrowed(self)
    }
}

impl ToKey for Cow<'_, [Value]> {
    fn to_key(&self) -> Cow<'_, [Value]> {
        Cow::Borrowed(self)
    }
}

impl<const N: usize> ToKey for [Value; N] {
    fn to_key(&self) -> Cow<'_, [Value]> {
        Cow::Borrowed(self)
    }
}

impl ToKey for Value {
    fn to_key(&self) -> Cow<'_, [Value]> {
        Cow::Borrowed(std::slice::from_ref(self))
    }
}

impl<T: ToKey + ?Sized> ToKey for &T {
    fn to_key(&self) -> Cow<'_, [Value]> {
        T::to_key(self)
    }
}

/// One-value keys: every [`ToValue`] type but `Value` and the byte containers, whose
/// slices are keys of their own kind above.
macro_rules! scalar_keys {
    ($($t:ty),* $(,)?) => {$(
        impl ToKey for $t {
            fn to_key(&self) -> Cow<'_, [Value]> {
                Cow::Owned(vec![self.to_value()])
            }
        }
    )*};
}

scalar_keys!(
    u8, u16, u32, u64, i8, i16, i32, i64, bool, f64, str, String, Date, DateTime
);

/// Tuples: by position, each element a [`ToValue`] (a [`ToRow`] and a [`ToKey`]) and a
/// [`FromValue`] (a [`FromRow`]).
macro_rules! tuples {
    ($( ($n:literal; $($t:ident $v:ident $i:tt),+) )*) => {$(
        impl<$($t: FromValue),+> FromRow for ($($t,)+) {
            const COLUMNS: Option<&'static [&'static str]> = None;
            fn from_row(values: Vec<Value>) -> std::result::Result<Self, RowError> {
                let [$($v),+] = self::values::<$n>(values)?;
                Ok(($(field::<$t>($v, $i)?,)+))
            }
        }

        impl<$($t: ToValue),+> ToRow for ($($t,)+) {
            const COLUMNS: Option<&'static [&'static str]> = None;
            fn to_values(&self) -> Vec<Value> {
                vec![$(self.$i.to_value()),+]
            }
        }

        impl<$($t: ToValue),+> ToKey for ($($t,)+) {
            fn to_key(&self) -> Cow<'_, [Value]> {
                Cow::Owned(vec![$(self.$i.to_value()),+])
            }
        }
    )*};
}

tuples! {
    (1; A a 0)
    (2; A a 0, B b 1)
    (3; A a 0, B b 1, C c 2)
    (4; A a 0, B b 1, C c 2, D d 3)
    (5; A a 0, B b 1, C c 2, D d 3, E e 4)
    (6; A a 0, B b 1, C c 2, D d 3, E e 4, F f 5)
    (7; A a 0, B b 1, C c 2, D d 3, E e 4, F f 5, G g 6)
    (8; A a 0, B b 1, C c 2, D d 3, E e 4, F f 5, G g 6, H h 7)
    (9; A a 0, B b 1, C c 2, D d 3, E e 4, F f 5, G g 6, H h 7, I i 8)
    (10; A a 0, B b 1, C c 2, D d 3, E e 4, F f 5, G g 6, H h 7, I i 8, J j 9)
    (11; A a 0, B b 1, C c 2, D d 3, E e 4, F f 5, G g 6, H h 7, I i 8, J j 9, K k 10)
    (12; A a 0, B b 1, C c 2, D d 3, E e 4, F f 5, G g 6, H h 7, I i 8, J j 9, K k 10, L l 11)
}

// ---- The mapping the typed calls of `Table` and `Transaction` share ----

/// `ty` without its module paths: `typed_rows::Book` is `Book`, `(u64,
/// alloc::string::String)` is `(u64, String)`.
pub(crate) fn type_name<T: ?Sized>() -> String {
    let full = std::any::type_name::<T>();
    let mut out = String::with_capacity(full.len());
    let mut segment = 0;
    let mut chars = full.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ':' && chars.peek() == Some(&':') {
            chars.next();
            out.truncate(segment);
            continue;
        }
        if !(c.is_alphanumeric() || c == '_') {
            segment = out.len() + c.len_utf8();
        }
        out.push(c);
    }
    out
}

/// The field of position `i` of a type with field names `fields`: its name, or the
/// position when the type has none (a tuple).
fn field_name(fields: &[&str], i: usize) -> String {
    fields
        .get(i)
        .map_or_else(|| i.to_string(), |f| (*f).to_owned())
}

/// [`Error::RowType`] for type `T`'s field `i`.
fn row_type<T: ?Sized>(
    def: &TableDef,
    fields: &[&str],
    i: usize,
    column: &str,
    reason: String,
) -> Error {
    Error::RowType {
        table: def.name.clone(),
        ty: type_name::<T>(),
        field: field_name(fields, i),
        column: column.to_owned(),
        reason,
    }
}

/// A point read's result (`None`: no such row) read into `T`, as [`read`] reads it with the
/// columns `T` asked for.
pub(crate) fn read_found<T: FromRow>(
    def: &TableDef,
    found: Option<Vec<Value>>,
) -> Result<Option<T>> {
    found
        .map(|values| read(def, &read_columns::<T>(def, None), values))
        .transpose()
}

/// A read row converted to `T`; `columns` are the names of the values' columns, in order.
pub(crate) fn read<T: FromRow>(
    def: &TableDef,
    columns: &[impl AsRef<str>],
    values: Vec<Value>,
) -> Result<T> {
    T::from_row(values).map_err(|e| {
        let (i, reason) = match e {
            RowError::Value { index, source } => (index, source.to_string()),
            RowError::Width { expected, got } => (
                expected.min(got),
                format!("the row has {got} columns, the type {expected} fields"),
            ),
        };
        let column = columns.get(i).map_or("", AsRef::as_ref);
        row_type::<T>(def, T::FIELDS, i, column, reason)
    })
}

/// The names of every column of `def`, in table order.
pub(crate) fn all_columns(def: &TableDef) -> Vec<&str> {
    def.columns.iter().map(|c| c.name.as_str()).collect()
}

/// Where each column of `def` is in `R`'s values (`None`: `R` has no field for it), after
/// checking that every field of `R` names a column of the table, once.
fn positions<R: ToRow + ?Sized>(def: &TableDef, names: &[&str]) -> Result<Vec<Option<usize>>> {
    let mut at = vec![None; def.columns.len()];
    for (i, name) in names.iter().enumerate() {
        let Some(c) = def.column_index(name) else {
            return Err(row_type::<R>(
                def,
                R::FIELDS,
                i,
                name,
                "the table has no such column".to_owned(),
            ));
        };
        if let Some(slot) = at.get_mut(c) {
            if slot.is_some() {
                return Err(row_type::<R>(
                    def,
                    R::FIELDS,
                    i,
                    name,
                    "a second field for the same column".to_owned(),
                ));
            }
            *slot = Some(i);
        }
    }
    Ok(at)
}

/// The full row (every column in table order) an insert of `row` stores: `R`'s values by
/// column name, NULL where `R` has no field for a nullable or AUTO_INCREMENT column.
pub(crate) fn insert_values<R: ToRow + ?Sized>(def: &TableDef, row: &R) -> Result<Vec<Value>> {
    let values = row.to_values();
    let Some(names) = R::COLUMNS else {
        return Ok(values);
    };
    let at = positions::<R>(def, names)?;
    let mut values: Vec<Option<Value>> = values.into_iter().map(Some).collect();
    def.columns
        .iter()
        .zip(at)
        .map(|(c, at)| match at.and_then(|i| values.get_mut(i)?.take()) {
            Some(v) => Ok(v),
            None if c.nullable || c.auto_increment => Ok(Value::Null),
            None => Err(Error::RowType {
                table: def.name.clone(),
                ty: type_name::<R>(),
                field: String::new(),
                column: c.name.clone(),
                reason: "the column is NOT NULL and the type has no field for it".to_owned(),
            }),
        })
        .collect()
}

/// An update of `row`: `Ok(Full(row))` when `R` sets every column (positional, or a field
/// for each), else its values by table position and its primary key, for a
/// read-modify-write of the row under its lock ([`merge`]).
pub(crate) fn update_values<'d, R: ToRow + ?Sized>(
    def: &'d TableDef,
    row: &R,
) -> Result<Update<'d>> {
    let values = row.to_values();
    let Some(names) = R::COLUMNS else {
        return Ok(Update::Full(values));
    };
    let at = positions::<R>(def, names)?;
    let mut values: Vec<Option<Value>> = values.into_iter().map(Some).collect();
    let by_column: Vec<Option<Value>> = at
        .into_iter()
        .map(|i| i.and_then(|i| values.get_mut(i)?.take()))
        .collect();
    if by_column.iter().all(Option::is_some) {
        return Ok(Update::Full(by_column.into_iter().flatten().collect()));
    }
    let mut key = Vec::with_capacity(def.primary_key.len());
    for name in &def.primary_key {
        let v = def
            .column_index(name)
            .and_then(|c| by_column.get(c)?.clone());
        match v {
            Some(v) => key.push(v),
            None => {
                return Err(Error::RowType {
                    table: def.name.clone(),
                    ty: type_name::<R>(),
                    field: String::new(),
                    column: name.clone(),
                    reason: "an update needs every primary key column, and the type has no \
                             field for this one"
                        .to_owned(),
                });
            }
        }
    }
    // The columns the type sets, by name, less the primary key (which names the row).
    let changes = def
        .columns
        .iter()
        .zip(by_column)
        .filter(|(c, _)| !def.primary_key.contains(&c.name))
        .filter_map(|(c, v)| Some((c.name.as_str(), v?)))
        .collect();
    Ok(Update::Partial { key, changes })
}

/// What an update of a typed row writes ([`update_values`]).
pub(crate) enum Update<'d> {
    /// Every column, in table order: a plain update.
    Full(Vec<Value>),
    /// Some columns, by name (an `update_columns`), and the primary key of the row they
    /// change.
    Partial {
        /// The primary key.
        key: Vec<Value>,
        /// The new value of each non-key column the type sets.
        changes: Vec<(&'d str, Value)>,
    },
}

/// A typed update's outcome: `found` from its `update_columns`, [`Error::RowNotFound`] for
/// the row with primary key `key` when there was none.
pub(crate) fn updated(def: &TableDef, key: Vec<Value>, found: bool) -> Result<()> {
    if found {
        return Ok(());
    }
    Err(Error::RowNotFound {
        table: def.name.clone(),
        key,
    })
}

/// The columns a read of `T` asks for, and the names of the values it gets back: `T`'s
/// own, or (for a positional `T`) `scan`'s projection or every column.
pub(crate) fn read_columns<'a, T: FromRow>(
    def: &'a TableDef,
    scan: Option<&'a [String]>,
) -> Vec<&'a str> {
    match (T::COLUMNS, scan) {
        (Some(cols), _) => cols.to_vec(),
        (None, Some(cols)) => cols.iter().map(String::as_str).collect(),
        (None, None) => all_columns(def),
    }
}

/// The columns of `row` (every column in table order) that `T` reads, in `T`'s order: the
/// projection of a row read whole (a locking read).
pub(crate) fn project<T: FromRow>(def: &TableDef, row: Vec<Value>) -> Result<Vec<Value>> {
    let Some(cols) = T::COLUMNS else {
        return Ok(row);
    };
    let mut row: Vec<Option<Value>> = row.into_iter().map(Some).collect();
    cols.iter()
        .map(|name| {
            let v = def.column_index(name).and_then(|i| row.get_mut(i)?.take());
            v.ok_or_else(|| Error::NoSuchColumn {
                table: def.name.clone(),
                column: (*name).to_owned(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_lose_their_paths() {
        assert_eq!(type_name::<(u64, String)>(), "(u64, String)");
        assert_eq!(type_name::<Vec<Option<String>>>(), "Vec<Option<String>>");
        assert_eq!(type_name::<[Value]>(), "[Value]");
    }

    #[test]
    fn tuples_convert_by_position_and_name_the_failing_one() {
        let row = vec![Value::UInt(7), Value::text("ada"), Value::Null];
        let t = <(u8, String, Option<i64>)>::from_row(row.clone());
        assert_eq!(t, Ok((7, "ada".to_owned(), None)));
        let e = <(u8, u8, Option<i64>)>::from_row(row.clone()).unwrap_err();
        assert!(matches!(e, RowError::Value { index: 1, .. }), "{e}");
        let e = <(u8, String)>::from_row(row).unwrap_err();
        assert_eq!(
            e,
            RowError::Width {
                expected: 2,
                got: 3
            }
        );
        assert_eq!(
            (1u32, "x", None::<u8>).to_values(),
            [Value::UInt(1), Value::text("x"), Value::Null]
        );
    }

    #[test]
    fn keys_borrow_values_and_convert_the_rest() {
        let vals = [Value::UInt(1)];
        assert!(matches!(vals[..].to_key(), Cow::Borrowed(_)));
        assert_eq!(7u64.to_key().as_ref(), [Value::UInt(7)]);
        assert_eq!("a".to_key().as_ref(), [Value::text("a")]);
        assert_eq!(
            ("oslo", 3u32).to_key().as_ref(),
            [Value::text("oslo"), Value::UInt(3)]
        );
    }
}
