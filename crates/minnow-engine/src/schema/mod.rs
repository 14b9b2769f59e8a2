//! Table definitions, and how the dictionary stores them.
//!
//! A [`TableDef`] names typed columns, the primary key and the secondary indexes. When the
//! table is created, each index gets an **index id** (stamped on every page of its B-tree)
//! and a **root page** (fixed for the tree's life); the definition together with those is
//! one dictionary record, encoded as described in [`encode`]'s docs.
//!
//! This file resolves a definition into a [`TableMeta`] (names checked, positions found, the
//! record layouts built); `values.rs` checks and normalises a row's values against the column
//! types; `encoding.rs` writes and reads the dictionary record.

use std::borrow::Cow;

use minnow_btree::record::types::canonical_double;
use minnow_btree::record::{Column, ColumnType, Date, DateTime, RecordLayout, Value};

use crate::compression::Compression;
use crate::error::{Error, Result};

/// Longest table, column or index name, in bytes.
pub const MAX_NAME_LEN: usize = 64;

/// One column: a name, a type, whether it may be NULL and whether it is the table's
/// AUTO_INCREMENT column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnDef {
    /// The name (1..=64 bytes).
    pub name: String,
    /// The type.
    pub ty: ColumnType,
    /// Whether the column may be NULL (primary key columns may not).
    pub nullable: bool,
    /// Whether inserting NULL or 0 into this column stores the table's next
    /// auto-increment value ([`ColumnDef::auto_increment`]).
    pub auto_increment: bool,
}

impl ColumnDef {
    /// A NOT NULL column.
    pub fn new(name: impl Into<String>, ty: ColumnType) -> ColumnDef {
        ColumnDef {
            name: name.into(),
            ty,
            nullable: false,
            auto_increment: false,
        }
    }

    /// A nullable column.
    pub fn nullable(name: impl Into<String>, ty: ColumnType) -> ColumnDef {
        ColumnDef {
            name: name.into(),
            ty,
            nullable: true,
            auto_increment: false,
        }
    }

    /// Makes this the table's AUTO_INCREMENT column (MySQL's `AUTO_INCREMENT` attribute).
    /// Inserting NULL or 0 into it stores the table's next value (1, 2, 3, ...; 0 counts as
    /// "generate" as in MySQL without `NO_AUTO_VALUE_ON_ZERO`); inserting a larger value
    /// moves the counter past it. As in MySQL the column must be an integer, a table has at
    /// most one, and it must be the first column of the primary key or of some secondary
    /// index; `Database::create_table` refuses anything else with
    /// [`Error::BadDefinition`]. How values are handed out under concurrency is
    /// [`crate::Config::autoinc_lock_mode`]; the counter survives restarts and crashes (the
    /// `autoinc` module docs say how).
    ///
    /// ```
    /// # mod minnow { // the items as the `minnow` crate (which depends on this one) re-exports them
    /// #     pub use minnow_btree::record::ColumnType;
    /// #     pub use minnow_engine::Compression;
    /// #     pub use minnow_zip::KeyBlockSize;
    /// #     pub use minnow_engine::config::{Config, KnobError};
    /// #     pub use minnow_engine::{ColumnDef, Error, IndexDef, TableDef};
    /// #     pub use minnow_redo::FlushAtCommit;
    /// # }
    /// use minnow::{ColumnDef, ColumnType, TableDef};
    ///
    /// let def = TableDef::new("t")
    ///     .column(ColumnDef::new("id", ColumnType::U64).auto_increment())
    ///     .column(ColumnDef::new("name", ColumnType::Var(20)))
    ///     .primary_key(&["id"]);
    /// assert!(def.columns[0].auto_increment);
    /// ```
    ///
    /// The `minnow` crate's docs, "Auto-increment", show it in use: the values statements
    /// get, the counter after a restart, and an explicit value moving it.
    pub fn auto_increment(mut self) -> ColumnDef {
        self.auto_increment = true;
        self
    }

    pub(crate) fn column(&self) -> Column {
        Column {
            ty: self.ty,
            nullable: self.nullable,
        }
    }
}

/// A secondary index: a name, its columns, and whether their values must be unique.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexDef {
    /// The name (unique within the table; `PRIMARY` is reserved).
    pub name: String,
    /// The indexed columns, by name, in key order.
    pub columns: Vec<String>,
    /// Whether two rows may not share the indexed values. As in SQL, rows with a NULL in
    /// any indexed column never conflict.
    pub unique: bool,
}

impl IndexDef {
    /// A non-unique index.
    pub fn new(name: impl Into<String>, columns: &[&str]) -> IndexDef {
        IndexDef {
            name: name.into(),
            columns: columns.iter().map(|c| (*c).to_owned()).collect(),
            unique: false,
        }
    }

    /// A unique index.
    pub fn unique(name: impl Into<String>, columns: &[&str]) -> IndexDef {
        IndexDef {
            unique: true,
            ..IndexDef::new(name, columns)
        }
    }
}

/// A table: columns in order, the primary key, secondary indexes.
///
/// ```
/// # mod minnow { // the items as the `minnow` crate (which depends on this one) re-exports them
/// #     pub use minnow_btree::record::ColumnType;
/// #     pub use minnow_engine::Compression;
/// #     pub use minnow_zip::KeyBlockSize;
/// #     pub use minnow_engine::config::{Config, KnobError};
/// #     pub use minnow_engine::{ColumnDef, Error, IndexDef, TableDef};
/// #     pub use minnow_redo::FlushAtCommit;
/// # }
/// use minnow::{ColumnDef, ColumnType, IndexDef, TableDef};
///
/// let def = TableDef::new("users")
///     .column(ColumnDef::new("id", ColumnType::U64))
///     .column(ColumnDef::new("email", ColumnType::Var(100)))
///     .column(ColumnDef::nullable("age", ColumnType::U8))
///     .primary_key(&["id"])
///     .index(IndexDef::unique("by_email", &["email"]))
///     .index(IndexDef::new("by_age", &["age"]));
/// assert_eq!(def.columns.len(), 3);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableDef {
    /// The table name (1..=64 bytes).
    pub name: String,
    /// The columns, in row order.
    pub columns: Vec<ColumnDef>,
    /// The primary key columns, by name, in key order (at least one, all NOT NULL).
    pub primary_key: Vec<String>,
    /// Secondary indexes.
    pub indexes: Vec<IndexDef>,
    /// `ROW_FORMAT=COMPRESSED` with these settings, or `None` for uncompressed pages
    /// ([`TableDef::compressed`]).
    pub compression: Option<Compression>,
}

impl TableDef {
    /// An empty definition named `name`.
    pub fn new(name: impl Into<String>) -> TableDef {
        TableDef {
            name: name.into(),
            columns: Vec::new(),
            primary_key: Vec::new(),
            indexes: Vec::new(),
            compression: None,
        }
    }

    /// Adds a column.
    pub fn column(mut self, c: ColumnDef) -> TableDef {
        self.columns.push(c);
        self
    }

    /// Sets the primary key.
    pub fn primary_key(mut self, columns: &[&str]) -> TableDef {
        self.primary_key = columns.iter().map(|c| (*c).to_owned()).collect();
        self
    }

    /// Adds a secondary index.
    pub fn index(mut self, i: IndexDef) -> TableDef {
        self.indexes.push(i);
        self
    }

    /// Makes the table compressed (`ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=...`): all its
    /// indexes live in the shared compressed tablespace of `c`'s block size and algorithm
    /// (see the crate docs, "Compressed tables"). The block must be 1, 2, 4 or 8 KiB and
    /// smaller than the page size, and the checksum cannot be `full_crc32`;
    /// `Database::create_table` refuses anything else with a typed error naming the
    /// table.
    ///
    /// ```
    /// # mod minnow { // the items as the `minnow` crate (which depends on this one) re-exports them
    /// #     pub use minnow_btree::record::ColumnType;
    /// #     pub use minnow_engine::Compression;
    /// #     pub use minnow_zip::KeyBlockSize;
    /// #     pub use minnow_engine::config::{Config, KnobError};
    /// #     pub use minnow_engine::{ColumnDef, Error, IndexDef, TableDef};
    /// #     pub use minnow_redo::FlushAtCommit;
    /// # }
    /// use minnow::{ColumnDef, ColumnType, Compression, KeyBlockSize, TableDef};
    ///
    /// let def = TableDef::new("notes")
    ///     .column(ColumnDef::new("id", ColumnType::U64))
    ///     .column(ColumnDef::new("body", ColumnType::Text))
    ///     .primary_key(&["id"])
    ///     .compressed(Compression::lz4(KeyBlockSize::K4));
    /// assert_eq!(def.compression.map(|c| c.to_string()).as_deref(), Some("KEY_BLOCK_SIZE=4 lz4"));
    /// ```
    pub fn compressed(mut self, c: Compression) -> TableDef {
        self.compression = Some(c);
        self
    }

    /// The position of column `name`.
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }
}

/// The name the primary key goes by in errors and `Database::check`.
pub const PRIMARY: &str = "PRIMARY";

/// A secondary index, resolved: column positions, its tree's identity.
#[derive(Debug, Clone)]
pub struct SecMeta {
    /// The index's name.
    pub name: String,
    /// Whether the index is unique.
    pub unique: bool,
    /// Positions (in the row) of the indexed columns.
    pub cols: Vec<usize>,
    /// The index id stamped on the tree's pages.
    pub index_id: u64,
    /// The tree's root page (fixed for the tree's life).
    pub root: u32,
}

/// A table, resolved: what the dictionary record holds.
#[derive(Debug, Clone)]
pub struct TableMeta {
    /// The definition as given (and validated).
    pub def: TableDef,
    /// Positions of the primary key columns.
    pub pk: Vec<usize>,
    /// Positions of the other columns, in row order.
    pub rest: Vec<usize>,
    /// True when the primary key is the leading columns in order (`pk == [0, 1, ..]`): a
    /// clustered record is then the row with the system columns inserted after the key.
    pub pk_leads: bool,
    /// The clustered index's id.
    pub index_id: u64,
    /// The clustered index's root page.
    pub root: u32,
    /// The secondary indexes, in definition order.
    pub secondary: Vec<SecMeta>,
    /// For each column in table order, its stored field in the clustered record (the
    /// primary key columns first, then `DB_TRX_ID` and `DB_ROLL_PTR`, then the rest); then
    /// the `DB_TRX_ID` field itself (what an autocommit get reads).
    pub row_fields_trx: Vec<usize>,
}

fn bad(def: &TableDef, reason: impl Into<String>) -> Error {
    Error::BadDefinition {
        table: def.name.clone(),
        reason: reason.into(),
    }
}

fn check_name(def: &TableDef, what: &str, name: &str) -> Result<()> {
    if name.is_empty() || name.len() > MAX_NAME_LEN || name.contains('\0') {
        return Err(bad(
            def,
            format!("{what} name `{name}` must be 1..={MAX_NAME_LEN} bytes without NUL"),
        ));
    }
    Ok(())
}

fn positions(def: &TableDef, names: &[String], what: &str) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(names.len());
    for n in names {
        let i = def
            .column_index(n)
            .ok_or_else(|| bad(def, format!("{what} names unknown column `{n}`")))?;
        if out.contains(&i) {
            return Err(bad(def, format!("{what} names column `{n}` twice")));
        }
        out.push(i);
    }
    if out.is_empty() {
        return Err(bad(def, format!("{what} has no columns")));
    }
    Ok(out)
}

impl TableMeta {
    /// The positions of the columns `names`, in that order; [`Error::NoSuchColumn`] for a
    /// name the table does not have.
    pub fn positions_of<'n>(
        &'n self,
        names: &'n [&'n str],
    ) -> impl Iterator<Item = Result<usize>> + 'n {
        names.iter().map(move |n| {
            self.def.column_index(n).ok_or_else(|| Error::NoSuchColumn {
                table: self.def.name.clone(),
                column: (*n).to_owned(),
            })
        })
    }

    /// [`Error::NoSuchColumn`] if a name in `names` is not a column of the table.
    pub fn check_names(&self, names: &[&str]) -> Result<()> {
        self.positions_of(names).try_for_each(|c| c.map(|_| ()))
    }

    /// Secondary index `index` (its position and definition) and `key` checked and
    /// normalised as a whole key of it, for a look-up of one row: [`Error::NoSuchIndex`],
    /// [`Error::NotUniqueKey`] if the index is not unique or the key holds a NULL,
    /// [`Error::TypeMismatch`] naming the index for a key of the wrong width or type.
    pub fn unique_key<'k>(
        &self,
        index: &str,
        key: &'k [Value],
    ) -> Result<(usize, &SecMeta, Cow<'k, [Value]>)> {
        let (i, s) = self
            .secondary
            .iter()
            .enumerate()
            .find(|(_, s)| s.name == index)
            .ok_or_else(|| Error::NoSuchIndex {
                table: self.name().to_owned(),
                index: index.to_owned(),
            })?;
        let refuse = |reason: &str| Error::NotUniqueKey {
            table: self.name().to_owned(),
            index: s.name.clone(),
            reason: reason.to_owned(),
        };
        if !s.unique {
            return Err(refuse(
                "it is not a unique index (scan it with `scan_index` instead)",
            ));
        }
        let key = self.normalise_key_cow(&s.cols, key).map_err(|e| match e {
            Error::TypeMismatch {
                table,
                column,
                reason,
            } => Error::TypeMismatch {
                table,
                column,
                reason: format!("key of index `{}`: {reason}", s.name),
            },
            e => e,
        })?;
        if key.contains(&Value::Null) {
            return Err(refuse(
                "the key holds a NULL, which any number of rows may have",
            ));
        }
        Ok((i, s, key))
    }

    /// Checks a definition and resolves names to positions (index ids and roots are 0 until
    /// the trees exist).
    pub fn resolve(def: TableDef) -> Result<TableMeta> {
        check_name(&def, "table", &def.name)?;
        if let Some(c) = def.compression {
            c.check_definition(&def.name)?;
        }
        if def.columns.is_empty() {
            return Err(bad(&def, "a table needs at least one column"));
        }
        for (i, c) in def.columns.iter().enumerate() {
            check_name(&def, "column", &c.name)?;
            if def.columns[..i].iter().any(|o| o.name == c.name) {
                return Err(bad(&def, format!("column `{}` appears twice", c.name)));
            }
            if c.ty.max_len() == 0
                || (!c.ty.is_lob() && c.ty.max_len() > minnow_btree::record::MAX_VAR_LEN)
            {
                return Err(bad(
                    &def,
                    format!("column `{}` has an unusable length", c.name),
                ));
            }
        }
        let pk = positions(&def, &def.primary_key, "the primary key")?;
        let lob_key = |what: &str, cols: &[usize]| -> Result<()> {
            match cols.iter().find(|&&i| def.columns[i].ty.is_lob()) {
                Some(&i) => Err(bad(
                    &def,
                    format!(
                        "{what} names BLOB/TEXT column `{}`: such columns cannot be keys",
                        def.columns[i].name
                    ),
                )),
                None => Ok(()),
            }
        };
        lob_key("the primary key", &pk)?;
        if let Some(&i) = pk.iter().find(|&&i| def.columns[i].nullable) {
            return Err(bad(
                &def,
                format!("primary key column `{}` is nullable", def.columns[i].name),
            ));
        }
        let rest: Vec<usize> = (0..def.columns.len()).filter(|i| !pk.contains(i)).collect();
        let mut secondary = Vec::new();
        for (n, ix) in def.indexes.iter().enumerate() {
            check_name(&def, "index", &ix.name)?;
            if ix.name == PRIMARY || def.indexes[..n].iter().any(|o| o.name == ix.name) {
                return Err(bad(&def, format!("index name `{}` is taken", ix.name)));
            }
            let what = format!("index `{}`", ix.name);
            let cols = positions(&def, &ix.columns, &what)?;
            lob_key(&what, &cols)?;
            secondary.push(SecMeta {
                name: ix.name.clone(),
                unique: ix.unique,
                cols,
                index_id: 0,
                root: 0,
            });
        }
        let row_fields = (0..def.columns.len())
            .map(|c| match pk.iter().position(|&p| p == c) {
                Some(p) => p,
                None => pk.len() + 2 + rest.iter().position(|&r| r == c).unwrap_or(0),
            })
            .collect::<Vec<usize>>();
        let row_fields_trx = row_fields.iter().copied().chain([pk.len()]).collect();
        let pk_leads = pk.iter().enumerate().all(|(i, &c)| i == c);
        let meta = TableMeta {
            def,
            pk,
            rest,
            pk_leads,
            index_id: 0,
            root: 0,
            secondary,
            row_fields_trx,
        };
        meta.check_auto_increment()?;
        meta.clustered_layout()?;
        for s in &meta.secondary {
            meta.secondary_layout(s)?;
        }
        Ok(meta)
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        &self.def.name
    }

    /// The tablespace holding the table's indexes: its shared compressed tablespace, or the
    /// system tablespace.
    pub fn space_id(&self) -> u32 {
        crate::compression::space_of(self.def.compression)
    }

    /// The position of the AUTO_INCREMENT column, if the table has one.
    pub fn auto_increment_column(&self) -> Option<usize> {
        self.def.columns.iter().position(|c| c.auto_increment)
    }

    /// MySQL's rules for AUTO_INCREMENT: at most one column, an integer one, and the first
    /// column of the primary key or of some secondary index (so that its largest value is
    /// one index descent away).
    pub fn check_auto_increment(&self) -> Result<()> {
        let mut cols = self
            .def
            .columns
            .iter()
            .enumerate()
            .filter(|(_, c)| c.auto_increment);
        let Some((i, c)) = cols.next() else {
            return Ok(());
        };
        if let Some((_, other)) = cols.next() {
            return Err(bad(
                &self.def,
                format!(
                    "columns `{}` and `{}` are both AUTO_INCREMENT; a table has at most one",
                    c.name, other.name
                ),
            ));
        }
        if int_range(c.ty).is_none() {
            return Err(bad(
                &self.def,
                format!(
                    "AUTO_INCREMENT column `{}` is {:?}; it must be an integer column",
                    c.name, c.ty
                ),
            ));
        }
        let keyed = self.pk.first() == Some(&i)
            || self.secondary.iter().any(|s| s.cols.first() == Some(&i));
        if !keyed {
            return Err(bad(
                &self.def,
                format!(
                    "AUTO_INCREMENT column `{}` must be the first column of the primary key \
                     or of some index",
                    c.name
                ),
            ));
        }
        Ok(())
    }

    fn col(&self, i: usize) -> Column {
        self.def
            .columns
            .get(i)
            .map_or(Column::new(ColumnType::U8), ColumnDef::column)
    }

    /// The clustered index's record layout: the primary key, the system columns, the rest.
    pub fn clustered_layout(&self) -> Result<RecordLayout> {
        RecordLayout::clustered(
            self.pk.iter().map(|&i| self.col(i)).collect(),
            self.rest.iter().map(|&i| self.col(i)).collect(),
        )
        .map_err(|e| bad(&self.def, e.to_string()))
    }

    /// Secondary index `s`'s record layout: its columns, then the primary key's.
    pub fn secondary_layout(&self, s: &SecMeta) -> Result<RecordLayout> {
        RecordLayout::secondary(
            s.cols
                .iter()
                .chain(self.pk.iter())
                .map(|&i| self.col(i))
                .collect(),
        )
        .map_err(|e| bad(&self.def, e.to_string()))
    }

    /// The clustered record of a (normalised) row.
    pub fn clustered_values(&self, row: &[Value]) -> Vec<Value> {
        let mut v: Vec<Value> = self.pk.iter().map(|&i| row[i].clone()).collect();
        v.push(Value::trx_id(0));
        v.push(Value::roll_ptr(1 << 55));
        v.extend(self.rest.iter().map(|&i| row[i].clone()));
        v
    }

    /// The stored field indexes (in the clustered record) of the columns at `cols`: what a
    /// read must fetch from overflow pages for them.
    pub fn stored_fields(&self, cols: &[usize]) -> Vec<usize> {
        cols.iter()
            .filter_map(|c| {
                self.pk.iter().position(|p| p == c).or_else(|| {
                    self.rest
                        .iter()
                        .position(|r| r == c)
                        .map(|q| self.pk.len() + 2 + q)
                })
            })
            .collect()
    }

    /// The row of a clustered record.
    pub fn row_of(&self, rec: Vec<Value>) -> Result<Vec<Value>> {
        let n = self.def.columns.len();
        if rec.len() != n + 2 {
            return Err(Error::Corrupt {
                what: format!(
                    "table `{}`: clustered record has {} fields",
                    self.def.name,
                    rec.len()
                ),
            });
        }
        let npk = self.pk.len();
        if self.pk_leads {
            // The primary key is the first columns, in order, and the rest follow in order:
            // the record is the row with its two system columns in the middle. Take them out
            // in place rather than building a second vector.
            let mut rec = rec;
            rec.drain(npk..npk + 2);
            return Ok(rec);
        }
        let mut row = vec![Value::Null; n];
        let mut it = rec.into_iter();
        for &i in &self.pk {
            row[i] = it.next().unwrap_or(Value::Null);
        }
        it.next();
        it.next();
        for &i in &self.rest {
            row[i] = it.next().unwrap_or(Value::Null);
        }
        Ok(row)
    }

    /// The secondary entry of a (normalised) row.
    pub fn secondary_values(&self, s: &SecMeta, row: &[Value]) -> Vec<Value> {
        s.cols
            .iter()
            .chain(self.pk.iter())
            .map(|&i| row[i].clone())
            .collect()
    }

    /// True if `entry` is exactly the secondary entry of a (normalised) row: the same
    /// comparison as `secondary_values(s, row) == entry`, without building the entry.
    pub fn has_secondary_entry(&self, s: &SecMeta, row: &[Value], entry: &[Value]) -> bool {
        let cols = s.cols.iter().chain(self.pk.iter());
        s.cols.len() + self.pk.len() == entry.len()
            && cols.zip(entry).all(|(&i, v)| row.get(i) == Some(v))
    }

    /// The primary key of a (normalised) row.
    pub fn pk_of(&self, row: &[Value]) -> Vec<Value> {
        self.pk.iter().map(|&i| row[i].clone()).collect()
    }
}

mod encoding;
#[cfg(test)]
mod tests;
mod values;

pub use values::int_range;

pub use encoding::{IndexInfo, decode_table_indexes};
pub use encoding::{decode, encode};
