//! How a row's values meet the column types: each value is checked against its column
//! (range, length, NULL) and normalised to the form the record decoder returns, so that a row
//! written compares equal to the row read back. Integers become `Int` for signed columns and
//! `UInt` for unsigned ones; keys given as borrowed bytes are checked without a copy; and
//! [`TableMeta::extreme`] names the smallest and largest value of a column in key order (the
//! open ends of a range scan).

use super::*;

impl TableMeta {
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
            Value::Bytes(b) => self.check_bytes(c, b).map(|()| Cow::Borrowed(v)),
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

    /// Checks that column `c` of this table can hold the bytes `b` (a byte column, and `b`
    /// of a length and, for TEXT, an encoding it takes): [`Error::TypeMismatch`] otherwise.
    fn check_bytes(&self, c: &ColumnDef, b: &[u8]) -> Result<()> {
        let fail = |reason: String| Err(self.mismatch(&c.name, reason));
        match c.ty {
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
                Ok(())
            }
            _ => fail(format!("{:?} column given bytes", c.ty)),
        }
    }

    /// Checks the bytes `b` as the whole key of the columns at `cols`, which must be one byte
    /// column: the check [`TableMeta::normalise_key_cow`] makes of a key of one
    /// [`Value::Bytes`], without building it. [`Error::TypeMismatch`] for a key of more
    /// columns, or bytes the column cannot hold.
    pub fn check_key_bytes(&self, cols: &[usize], b: &[u8]) -> Result<()> {
        match cols {
            [i] => match self.def.columns.get(*i) {
                Some(c) => self.check_bytes(c, b),
                None => Err(self.mismatch("", "no such column position".into())),
            },
            _ => Err(self.mismatch("", format!("1 key value for {} key columns", cols.len()))),
        }
    }

    /// [`Error::TypeMismatch`] for `column` of this table.
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
        self.normalise_each_cow(cols.iter().copied(), key)
    }

    /// [`TableMeta::normalise_row`], borrowing `row` when every value is already in its
    /// normal form (an insert then copies nothing before it encodes its record).
    pub fn normalise_row_cow<'r>(&self, row: &'r [Value]) -> Result<Cow<'r, [Value]>> {
        if row.len() != self.def.columns.len() {
            return self.normalise_row(row).map(Cow::Owned);
        }
        self.normalise_each_cow(0..row.len(), row)
    }

    /// Normalises `key[n]` as column `cols[n]`, borrowing `key` if no value changes.
    fn normalise_each_cow<'k>(
        &self,
        cols: impl Iterator<Item = usize>,
        key: &'k [Value],
    ) -> Result<Cow<'k, [Value]>> {
        let mut owned: Option<Vec<Value>> = None;
        for (n, (i, v)) in cols.zip(key).enumerate() {
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
}

/// The smallest and largest value of an integer column type; `None` for other types.
pub fn int_range(ty: ColumnType) -> Option<(i128, u128)> {
    Some(match ty {
        ColumnType::I8 => (i8::MIN.into(), 127),
        ColumnType::I16 => (i16::MIN.into(), 32_767),
        ColumnType::I32 => (i32::MIN.into(), 2_147_483_647),
        ColumnType::I64 => (i64::MIN.into(), 9_223_372_036_854_775_807),
        ColumnType::U8 => (0, u8::MAX.into()),
        ColumnType::U16 => (0, u16::MAX.into()),
        ColumnType::U32 => (0, u32::MAX.into()),
        ColumnType::U64 => (0, u64::MAX.into()),
        _ => return None,
    })
}
