//! Table definitions, and how the dictionary stores them.
//!
//! A [`TableDef`] names typed columns, the primary key and the secondary indexes. When the
//! table is created, each index gets an **index id** (stamped on every page of its B-tree)
//! and a **root page** (fixed for the tree's life); the definition together with those is
//! one dictionary record, encoded as described in [`encode`]'s docs.

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
    /// index; [`crate::Database::create_table`] refuses anything else with
    /// [`Error::BadDefinition`]. How values are handed out under concurrency is
    /// [`crate::Config::autoinc_lock_mode`]; the counter survives restarts and crashes (the
    /// `autoinc` module docs say how).
    ///
    /// ```
    /// use minnow::{ColumnDef, ColumnType, Config, Database, TableDef, Value};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Database::create(dir.path(), Config::default())?;
    /// let t = db.create_table(TableDef::new("t")
    ///     .column(ColumnDef::new("id", ColumnType::U64).auto_increment())
    ///     .column(ColumnDef::new("name", ColumnType::Var(20)))
    ///     .primary_key(&["id"]))?;
    /// let ada = t.insert_returning_id(&[Value::Null, Value::text("ada")])?;
    /// assert_eq!(ada.id(), Some(1));
    /// t.insert(&[Value::UInt(10), Value::text("bob")])?; // explicit: the counter moves past 10
    /// let many = t.insert_many(vec![
    ///     vec![Value::UInt(0), Value::text("cy")], // 0 generates too
    ///     vec![Value::Null, Value::text("di")],
    /// ])?;
    /// assert_eq!(many.generated, [11, 12]);
    /// assert_eq!(t.get(&[Value::UInt(12)])?, Some(vec![Value::UInt(12), Value::text("di")]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
    /// [`crate::Database::create_table`] refuses anything else with a typed error naming the
    /// table.
    ///
    /// ```
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

/// The name the primary key goes by in errors and [`crate::Database::check`].
pub const PRIMARY: &str = "PRIMARY";

/// A secondary index, resolved: column positions, its tree's identity.
#[derive(Debug, Clone)]
pub(crate) struct SecMeta {
    pub name: String,
    pub unique: bool,
    /// Positions (in the row) of the indexed columns.
    pub cols: Vec<usize>,
    pub index_id: u64,
    pub root: u32,
}

/// A table, resolved: what the dictionary record holds.
#[derive(Debug, Clone)]
pub(crate) struct TableMeta {
    pub def: TableDef,
    /// Positions of the primary key columns.
    pub pk: Vec<usize>,
    /// Positions of the other columns, in row order.
    pub rest: Vec<usize>,
    /// True when the primary key is the leading columns in order (`pk == [0, 1, ..]`): a
    /// clustered record is then the row with the system columns inserted after the key.
    pub pk_leads: bool,
    pub index_id: u64,
    pub root: u32,
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
        if crate::autoinc::int_range(c.ty).is_none() {
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

    pub fn clustered_layout(&self) -> Result<RecordLayout> {
        RecordLayout::clustered(
            self.pk.iter().map(|&i| self.col(i)).collect(),
            self.rest.iter().map(|&i| self.col(i)).collect(),
        )
        .map_err(|e| bad(&self.def, e.to_string()))
    }

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

    /// Checks and normalises one value for column `i`: integers become `Int` for signed
    /// columns and `UInt` for unsigned ones (as the record decoder returns them), so that
    /// rows compare equal to what reads return.
    pub fn normalise(&self, i: usize, v: &Value) -> Result<Value> {
        self.normalise_cow(i, v).map(Cow::into_owned)
    }

    /// [`TableMeta::normalise`], borrowing `v` where it is already in its normal form (the
    /// common case: no copy of a byte value).
    pub fn normalise_cow<'v>(&self, i: usize, v: &'v Value) -> Result<Cow<'v, Value>> {
        let Some(c) = self.def.columns.get(i) else {
            return Err(self.mismatch("", "no such column position".into()));
        };
        let fail = |reason: String| Err(self.mismatch(&c.name, reason));
        let signed = matches!(
            c.ty,
            ColumnType::I8 | ColumnType::I16 | ColumnType::I32 | ColumnType::I64
        );
        let (lo, hi): (i128, i128) = match c.ty {
            ColumnType::I8 => (i8::MIN.into(), i8::MAX.into()),
            ColumnType::I16 => (i16::MIN.into(), i16::MAX.into()),
            ColumnType::I32 => (i32::MIN.into(), i32::MAX.into()),
            ColumnType::I64 => (i64::MIN.into(), i64::MAX.into()),
            ColumnType::U8 => (0, u8::MAX.into()),
            ColumnType::U16 => (0, u16::MAX.into()),
            ColumnType::U32 => (0, u32::MAX.into()),
            ColumnType::U64 => (0, u64::MAX.into()),
            _ => (0, -1),
        };
        let int = |x: i128| -> Result<Cow<'v, Value>> {
            if lo > hi {
                return fail(format!("{:?} column given an integer", c.ty));
            }
            if x < lo || x > hi {
                return fail(format!("{x} is out of range for {:?}", c.ty));
            }
            let n = if signed {
                Value::Int(i64::try_from(x).unwrap_or_default())
            } else {
                Value::UInt(u64::try_from(x).unwrap_or_default())
            };
            Ok(if n == *v {
                Cow::Borrowed(v)
            } else {
                Cow::Owned(n)
            })
        };
        match v {
            Value::Null if c.nullable => Ok(Cow::Borrowed(v)),
            Value::Null => fail("NULL in a NOT NULL column".into()),
            Value::Int(x) => int(i128::from(*x)),
            Value::UInt(x) => int(i128::from(*x)),
            Value::Bytes(b) => match c.ty {
                ColumnType::Fixed(n) if b.len() != usize::from(n) => {
                    fail(format!("{} bytes for a Fixed({n}) column", b.len()))
                }
                ColumnType::Var(n) if b.len() > usize::from(n) => {
                    fail(format!("{} bytes for a Var({n}) column", b.len()))
                }
                ColumnType::Blob | ColumnType::Text if b.len() > c.ty.max_len() => fail(format!(
                    "{} bytes for a {:?} column (at most {})",
                    b.len(),
                    c.ty,
                    c.ty.max_len()
                )),
                ColumnType::Text if std::str::from_utf8(b).is_err() => {
                    fail("TEXT value is not UTF-8".into())
                }
                ColumnType::Fixed(_) | ColumnType::Var(_) | ColumnType::Blob | ColumnType::Text => {
                    Ok(Cow::Borrowed(v))
                }
                _ => fail(format!("{:?} column given bytes", c.ty)),
            },
            Value::Double(x) if c.ty == ColumnType::Double => match canonical_double(*x) {
                Ok(d) if d.to_bits() == x.to_bits() => Ok(Cow::Borrowed(v)),
                Ok(d) => Ok(Cow::Owned(Value::Double(d))),
                Err(_) => fail("NaN cannot be stored in a DOUBLE column".into()),
            },
            Value::Date(_) if c.ty == ColumnType::Date => Ok(Cow::Borrowed(v)),
            Value::DateTime(_) if c.ty == ColumnType::DateTime => Ok(Cow::Borrowed(v)),
            Value::Double(_) | Value::Date(_) | Value::DateTime(_) => {
                fail(format!("{:?} column given {v:?}", c.ty))
            }
        }
    }

    pub fn mismatch(&self, column: &str, reason: String) -> Error {
        Error::TypeMismatch {
            table: self.def.name.clone(),
            column: column.to_owned(),
            reason,
        }
    }

    /// Checks and normalises a whole row.
    pub fn normalise_row(&self, row: &[Value]) -> Result<Vec<Value>> {
        if row.len() != self.def.columns.len() {
            return Err(self.mismatch(
                "",
                format!(
                    "{} values for {} columns",
                    row.len(),
                    self.def.columns.len()
                ),
            ));
        }
        row.iter()
            .enumerate()
            .map(|(i, v)| self.normalise(i, v))
            .collect()
    }

    /// Checks and normalises values for the columns at `cols`.
    pub fn normalise_key(&self, cols: &[usize], key: &[Value]) -> Result<Vec<Value>> {
        self.normalise_key_cow(cols, key).map(Cow::into_owned)
    }

    /// [`TableMeta::normalise_key`], borrowing `key` when every value is already in its
    /// normal form (a point read then copies nothing).
    pub fn normalise_key_cow<'k>(
        &self,
        cols: &[usize],
        key: &'k [Value],
    ) -> Result<Cow<'k, [Value]>> {
        if key.len() != cols.len() {
            return Err(self.mismatch(
                "",
                format!("{} key values for {} key columns", key.len(), cols.len()),
            ));
        }
        let mut owned: Option<Vec<Value>> = None;
        for (n, (&i, v)) in cols.iter().zip(key).enumerate() {
            match (self.normalise_cow(i, v)?, &mut owned) {
                (Cow::Borrowed(_), None) => {}
                (c, Some(o)) => o.push(c.into_owned()),
                (Cow::Owned(c), None) => {
                    let mut o = key.get(..n).unwrap_or_default().to_vec();
                    o.push(c);
                    owned = Some(o);
                }
            }
        }
        Ok(owned.map_or(Cow::Borrowed(key), Cow::Owned))
    }

    /// The smallest and largest value of column `i` in the key order.
    pub fn extreme(&self, i: usize, max: bool) -> Value {
        let c = self.col(i);
        if c.nullable && !max {
            return Value::Null;
        }
        match c.ty {
            ColumnType::I8 => Value::Int(if max { i8::MAX.into() } else { i8::MIN.into() }),
            ColumnType::I16 => Value::Int(if max {
                i16::MAX.into()
            } else {
                i16::MIN.into()
            }),
            ColumnType::I32 => Value::Int(if max {
                i32::MAX.into()
            } else {
                i32::MIN.into()
            }),
            ColumnType::I64 => Value::Int(if max { i64::MAX } else { i64::MIN }),
            ColumnType::U8 => Value::UInt(if max { u8::MAX.into() } else { 0 }),
            ColumnType::U16 => Value::UInt(if max { u16::MAX.into() } else { 0 }),
            ColumnType::U32 => Value::UInt(if max { u32::MAX.into() } else { 0 }),
            ColumnType::U64 => Value::UInt(if max { u64::MAX } else { 0 }),
            ColumnType::Fixed(n) => Value::Bytes(vec![if max { 0xFF } else { 0 }; usize::from(n)]),
            ColumnType::Var(n) => Value::Bytes(if max {
                vec![0xFF; usize::from(n)]
            } else {
                Vec::new()
            }),
            ColumnType::Double => Value::Double(if max {
                f64::INFINITY
            } else {
                f64::NEG_INFINITY
            }),
            ColumnType::Date => Value::Date(if max { Date::MAX } else { Date::MIN }),
            ColumnType::DateTime => {
                Value::DateTime(if max { DateTime::MAX } else { DateTime::MIN })
            }
            // Never a key column, so never padded; the empty value is the smallest.
            ColumnType::Blob | ColumnType::Text => Value::Bytes(Vec::new()),
        }
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

// ---- The dictionary record's value: a small versioned binary encoding. ----

const FORMAT_VERSION: u8 = 1;

/// The tag of the optional compression trailer of a dictionary value (see [`encode`]).
const COMPRESSION_TAG: u8 = 1;

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.push(s.len().min(255) as u8);
    out.extend_from_slice(&s.as_bytes()[..s.len().min(255)]);
}

fn put_u16(out: &mut Vec<u8>, v: usize) {
    out.extend_from_slice(&(v.min(usize::from(u16::MAX)) as u16).to_be_bytes());
}

/// Encodes the table's dictionary value. Layout (big-endian): version `u8` = 1; clustered
/// index id `u64`, root `u32`; column count `u16`, then per column a name (`u8` length and
/// bytes), a type code `u8` (1..=4 I8..I64, 5..=8 U8..U64, 9 Fixed, 10 Var, 11 Double,
/// 12 Date, 13 DateTime, 14 Blob, 15 Text; codes 11..=15 were added without a version bump,
/// since every record written before them decodes as it did), a `u16`
/// length (Fixed/Var, else 0) and a flags `u8` (bit 0 nullable, bit 1 AUTO_INCREMENT; bit 1
/// was added without a version bump, as older records only ever hold 0 or 1, and any other
/// bit is damage); primary key column count `u16` and
/// positions `u16`; index count `u16`, then per index a name, a unique flag `u8`, column
/// count `u16` and positions `u16`, index id `u64`, root `u32`. Then, for a compressed table
/// only, a trailer: tag `u8` = 1, the block's zip shift size `u8` (1..=4), the algorithm
/// `u8` (1 zlib, 2 LZ4) and its level `u8` (zlib's 1..=9, 0 for LZ4). The trailer was added
/// without a version bump: a record without it (every record written before it) decodes as
/// an uncompressed table, as it was.
pub(crate) fn encode(m: &TableMeta) -> Vec<u8> {
    let mut out = vec![FORMAT_VERSION];
    out.extend_from_slice(&m.index_id.to_be_bytes());
    out.extend_from_slice(&m.root.to_be_bytes());
    put_u16(&mut out, m.def.columns.len());
    for c in &m.def.columns {
        put_str(&mut out, &c.name);
        let (code, len) = c.ty.code();
        out.push(code);
        out.extend_from_slice(&len.to_be_bytes());
        out.push(u8::from(c.nullable) | (u8::from(c.auto_increment) << 1));
    }
    put_u16(&mut out, m.pk.len());
    for &p in &m.pk {
        put_u16(&mut out, p);
    }
    put_u16(&mut out, m.secondary.len());
    for s in &m.secondary {
        put_str(&mut out, &s.name);
        out.push(u8::from(s.unique));
        put_u16(&mut out, s.cols.len());
        for &p in &s.cols {
            put_u16(&mut out, p);
        }
        out.extend_from_slice(&s.index_id.to_be_bytes());
        out.extend_from_slice(&s.root.to_be_bytes());
    }
    if let Some(c) = m.def.compression {
        out.push(COMPRESSION_TAG);
        out.extend_from_slice(&c.to_stored());
    }
    out
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let s = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1)?.first().copied()
    }
    fn u16(&mut self) -> Option<usize> {
        Some(usize::from(u16::from_be_bytes(
            self.take(2)?.try_into().ok()?,
        )))
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_be_bytes(self.take(8)?.try_into().ok()?))
    }
    fn str(&mut self) -> Option<String> {
        let n = usize::from(self.u8()?);
        String::from_utf8(self.take(n)?.to_vec()).ok()
    }
}

fn decode_inner(name: &str, b: &[u8]) -> Option<TableMeta> {
    let mut r = Reader { b, at: 0 };
    if r.u8()? != FORMAT_VERSION {
        return None;
    }
    let index_id = r.u64()?;
    let root = r.u32()?;
    let mut def = TableDef::new(name);
    for _ in 0..r.u16()? {
        let cname = r.str()?;
        let code = r.u8()?;
        let len = u16::try_from(r.u16()?).ok()?;
        let ty = ColumnType::from_code(code, len)?;
        let flags = r.u8()?;
        if flags & !0b11 != 0 {
            return None;
        }
        def.columns.push(ColumnDef {
            name: cname,
            ty,
            nullable: flags & 1 != 0,
            auto_increment: flags & 2 != 0,
        });
    }
    let col_name = |def: &TableDef, p: usize| def.columns.get(p).map(|c| c.name.clone());
    for _ in 0..r.u16()? {
        let p = r.u16()?;
        def.primary_key.push(col_name(&def, p)?);
    }
    let mut ids = Vec::new();
    for _ in 0..r.u16()? {
        let iname = r.str()?;
        let unique = r.u8()? != 0;
        let mut columns = Vec::new();
        for _ in 0..r.u16()? {
            let p = r.u16()?;
            columns.push(col_name(&def, p)?);
        }
        ids.push((r.u64()?, r.u32()?));
        def.indexes.push(IndexDef {
            name: iname,
            columns,
            unique,
        });
    }
    if r.at != b.len() {
        if r.u8()? != COMPRESSION_TAG {
            return None;
        }
        let stored = r.take(3)?.try_into().ok()?;
        def.compression = Some(Compression::from_stored(stored)?);
        if r.at != b.len() {
            return None;
        }
    }
    let mut m = TableMeta::resolve(def).ok()?;
    m.index_id = index_id;
    m.root = root;
    for (s, (id, rt)) in m.secondary.iter_mut().zip(ids) {
        s.index_id = id;
        s.root = rt;
    }
    Some(m)
}

/// Decodes a dictionary value; damage is [`Error::Corrupt`] naming the table.
pub(crate) fn decode(name: &str, b: &[u8]) -> Result<TableMeta> {
    decode_inner(name, b).ok_or_else(|| Error::Corrupt {
        what: format!("dictionary record of table `{name}` is malformed"),
    })
}

/// One index of a table as its dictionary record describes it: what a read-only tool needs to
/// walk the index's B-tree from raw pages (`minnow tree`) without opening the database.
#[derive(Debug, Clone)]
pub struct IndexInfo {
    /// [`PRIMARY`] for the clustered index, else the secondary index's name.
    pub name: String,
    /// The index id every page of the tree carries.
    pub index_id: u64,
    /// The tablespace holding the tree: the system tablespace ([`crate::inspect::SYSTEM_SPACE_ID`]),
    /// or for a compressed table its shared compressed tablespace
    /// ([`Compression::space_id`]).
    pub space_id: u32,
    /// The root page number in that tablespace.
    pub root: u32,
    /// The names of the key fields, in order: for a secondary index its own columns, then the
    /// primary key's.
    pub key_columns: Vec<String>,
    /// The leaf records' layout; the levels above use [`RecordLayout::node_ptr`].
    pub layout: RecordLayout,
}

/// Decodes the dictionary value of table `name` (FORMAT.md §8) into its definition and its
/// indexes, the clustered one first. Never panics on damaged bytes: they are
/// [`Error::Corrupt`].
pub fn decode_table_indexes(name: &str, value: &[u8]) -> Result<(TableDef, Vec<IndexInfo>)> {
    let m = decode(name, value)?;
    let names = |cols: &[usize]| -> Vec<String> {
        cols.iter()
            .filter_map(|&i| m.def.columns.get(i).map(|c| c.name.clone()))
            .collect()
    };
    let mut out = vec![IndexInfo {
        name: PRIMARY.to_string(),
        index_id: m.index_id,
        space_id: m.space_id(),
        root: m.root,
        key_columns: names(&m.pk),
        layout: m.clustered_layout()?,
    }];
    for s in &m.secondary {
        let mut key_columns = names(&s.cols);
        key_columns.extend(names(&m.pk));
        out.push(IndexInfo {
            name: s.name.clone(),
            index_id: s.index_id,
            space_id: m.space_id(),
            root: s.root,
            key_columns,
            layout: m.secondary_layout(s)?,
        });
    }
    Ok((m.def.clone(), out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def() -> TableDef {
        TableDef::new("t")
            .column(ColumnDef::new("id", ColumnType::U64))
            .column(ColumnDef::nullable("v", ColumnType::Var(10)))
            .column(ColumnDef::new("k", ColumnType::I32))
            .primary_key(&["id"])
            .index(IndexDef::unique("by_k", &["k"]))
    }

    #[test]
    fn decode_table_indexes_lists_every_index_clustered_first() {
        let mut m = TableMeta::resolve(def()).unwrap();
        m.index_id = 7;
        m.root = 3;
        m.secondary[0].index_id = 8;
        m.secondary[0].root = 4;
        let (d, ix) = decode_table_indexes("t", &encode(&m)).unwrap();
        assert_eq!(d.name, "t");
        assert_eq!(ix.len(), 2);
        assert_eq!(
            (ix[0].name.as_str(), ix[0].index_id, ix[0].root),
            (PRIMARY, 7, 3)
        );
        assert_eq!(ix[0].key_columns, ["id"]);
        assert_eq!(
            (ix[1].name.as_str(), ix[1].index_id, ix[1].root),
            ("by_k", 8, 4)
        );
        assert_eq!(ix[1].key_columns, ["k", "id"]);
        assert!(decode_table_indexes("t", &[1, 2, 3]).is_err());
    }

    #[test]
    fn dictionary_record_round_trips_and_rejects_damage() {
        let mut m = TableMeta::resolve(def()).unwrap();
        m.index_id = 7;
        m.root = 3;
        m.secondary[0].index_id = 8;
        m.secondary[0].root = 4;
        let b = encode(&m);
        let back = decode("t", &b).unwrap();
        assert_eq!(back.def, m.def);
        assert_eq!((back.index_id, back.root), (7, 3));
        assert_eq!((back.secondary[0].index_id, back.secondary[0].root), (8, 4));
        for cut in 0..b.len() {
            assert!(decode("t", &b[..cut]).is_err(), "prefix {cut} accepted");
        }
        let mut bad = b.clone();
        bad[0] = 9;
        assert!(matches!(decode("t", &bad), Err(Error::Corrupt { .. })));
    }

    #[test]
    fn auto_increment_flag_round_trips_in_the_flags_byte() {
        let mut d = def();
        d.columns[0] = d.columns[0].clone().auto_increment();
        let m = TableMeta::resolve(d).unwrap();
        let b = encode(&m);
        // version, index id, root, column count, then column `id`: name, type, length, flags.
        let flags_at = 1 + 8 + 4 + 2 + 1 + 2 + 1 + 2;
        assert_eq!(b[flags_at], 0b10);
        let back = decode("t", &b).unwrap();
        assert_eq!(back.def, m.def);
        assert_eq!(back.auto_increment_column(), Some(0));
        let mut bad = b.clone();
        bad[flags_at] = 0b100;
        assert!(matches!(decode("t", &bad), Err(Error::Corrupt { .. })));
        // Records written before the flag existed (0 or 1) decode as they did.
        assert!(
            !decode("t", &encode(&TableMeta::resolve(def()).unwrap()))
                .unwrap()
                .def
                .columns
                .iter()
                .any(|c| c.auto_increment)
        );
    }

    #[test]
    fn compression_trailer_round_trips_and_old_records_decode_uncompressed() {
        use minnow_zip::KeyBlockSize;
        let plain = encode(&TableMeta::resolve(def()).unwrap());
        let c = Compression::lz4(KeyBlockSize::K4);
        let m = TableMeta::resolve(def().compressed(c)).unwrap();
        let b = encode(&m);
        // The trailer is appended: a record without it is exactly the old encoding.
        assert_eq!(&b[..plain.len()], &plain[..]);
        assert_eq!(&b[plain.len()..], &[COMPRESSION_TAG, 3, 2, 0]);
        assert_eq!(decode("t", &b).unwrap().def.compression, Some(c));
        assert_eq!(decode("t", &b).unwrap().space_id(), c.space_id());
        assert_eq!(decode("t", &plain).unwrap().def.compression, None);
        assert_eq!(decode("t", &plain).unwrap().space_id(), 0);
        for damage in [
            vec![COMPRESSION_TAG + 1, 3, 2, 0],
            vec![COMPRESSION_TAG, 9, 2, 0],
            vec![COMPRESSION_TAG, 3, 1, 0],
            vec![COMPRESSION_TAG, 3, 2, 0, 0],
            // 16 KiB blocks are refused by the definition's own checks.
            vec![COMPRESSION_TAG, 5, 2, 0],
        ] {
            let bad = [&plain[..], &damage].concat();
            assert!(
                matches!(decode("t", &bad), Err(Error::Corrupt { .. })),
                "{damage:?}"
            );
        }
        assert!(matches!(
            TableMeta::resolve(def().compressed(Compression::lz4(KeyBlockSize::K16))),
            Err(Error::BadDefinition { .. })
        ));
    }

    #[test]
    fn definitions_are_validated() {
        let nullable_pk = TableDef::new("t")
            .column(ColumnDef::nullable("id", ColumnType::U64))
            .primary_key(&["id"]);
        assert!(matches!(
            TableMeta::resolve(nullable_pk),
            Err(Error::BadDefinition { .. })
        ));
        let unknown = def().index(IndexDef::new("x", &["nope"]));
        assert!(matches!(
            TableMeta::resolve(unknown),
            Err(Error::BadDefinition { .. })
        ));
        let dup = def().index(IndexDef::new("by_k", &["v"]));
        assert!(TableMeta::resolve(dup).is_err());
        let m = TableMeta::resolve(def()).unwrap();
        assert_eq!(m.normalise(2, &Value::UInt(5)).unwrap(), Value::Int(5));
        assert!(m.normalise(2, &Value::Int(i64::MAX)).is_err());
        assert!(m.normalise(0, &Value::Null).is_err());
        assert!(m.normalise(1, &Value::Bytes(vec![0; 11])).is_err());
        assert_eq!(m.normalise(1, &Value::Null).unwrap(), Value::Null);
    }
}
