//! Working with [`Value`]s from Rust: reading one as a Rust type, making one from a Rust
//! value, and showing one to a person.
//!
//! ## Reading: accessors and [`FromValue`]
//!
//! The accessors ([`Value::as_u64`], [`Value::as_str`], ...) borrow and return `None` when the
//! value is not of that kind. [`FromValue`] (and the `TryFrom<Value>` impls built on it)
//! takes the value and says what was wrong when it does not fit, expected against found
//! ([`FromValueError`]). Both follow the column types a table can hold:
//!
//! | Rust type | from |
//! |---|---|
//! | `u8` ... `u64`, `i8` ... `i64` | any integer value in the type's range (`Int` or `UInt`) |
//! | `bool` | the integers 0 and 1 (store it in a `U8` or `I8` column) |
//! | `f64` | a DOUBLE |
//! | `String` | bytes that are valid UTF-8 (VARCHAR, CHAR, TEXT) |
//! | `Vec<u8>` | any bytes |
//! | [`Date`], [`DateTime`] | a DATE, a DATETIME |
//! | `Option<T>` | `None` from NULL, else as `T` (a NULL into a non-`Option` is an error) |
//! | [`Value`] | itself |
//!
//! ## Making: `From` and [`ToValue`]
//!
//! `Value::from(x)` (or `x.into()`) makes a value of every type above, and of `&str`,
//! `&[u8]` and `f32`; `None` becomes NULL. [`ToValue`] does the same from a reference, which
//! is what a row of borrowed fields needs (the `ToRow` derive of the `minnow` crate uses it).
//!
//! ## Showing: `Display` and `Debug`
//!
//! Both print numbers as numbers and bytes as text when they are valid UTF-8 (quoted and
//! escaped, `"978-0-13-468599-1"`), as hex otherwise (`0x00ff10`); a long value is cut short
//! with its length (`"aaaa…" (50000 bytes)`), unless the alternate form (`{:#}`) is asked for,
//! which prints all of it. `Display` prints the value alone (`NULL`, `7`, `-1.5`,
//! `2024-02-29`); `Debug` names the variant too (`UInt(7)`, `Bytes("ada")`), so a test
//! failure says which kind of value it got. [`Key`] prints several values as a key,
//! `(7, "ada")`, as the errors that name a key do.

use std::fmt;

use super::{Date, DateTime, Value};

/// Bytes and characters shown before a long value is cut short (the alternate form, `{:#}`,
/// shows all).
const SHOW_BYTES: usize = 32;
const SHOW_CHARS: usize = 64;

impl Value {
    /// True for NULL.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The integer, if this is an integer value that fits `u64` (a negative `Int` does not).
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::UInt(x) => Some(x),
            Value::Int(x) => u64::try_from(x).ok(),
            _ => None,
        }
    }

    /// The integer, if this is an integer value that fits `i64` (a `UInt` above `i64::MAX`
    /// does not).
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::Int(x) => Some(x),
            Value::UInt(x) => i64::try_from(x).ok(),
            _ => None,
        }
    }

    /// The number, if this is a DOUBLE.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::Double(x) => Some(x),
            _ => None,
        }
    }

    /// The text, if this is a byte value holding valid UTF-8 (VARCHAR, CHAR, TEXT).
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Bytes(b) => std::str::from_utf8(b).ok(),
            _ => None,
        }
    }

    /// The bytes, if this is a byte value (any of the byte columns, BLOB and TEXT).
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Bytes(b) => Some(b),
            _ => None,
        }
    }

    /// The date, if this is a DATE.
    pub fn as_date(&self) -> Option<Date> {
        match *self {
            Value::Date(d) => Some(d),
            _ => None,
        }
    }

    /// The date and time, if this is a DATETIME.
    pub fn as_datetime(&self) -> Option<DateTime> {
        match *self {
            Value::DateTime(d) => Some(d),
            _ => None,
        }
    }

    /// What kind of value this is, as [`FromValueError`] names it: `NULL`, `an integer`,
    /// `bytes`, `a DOUBLE`, `a DATE`, `a DATETIME`.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "NULL",
            Value::Int(_) | Value::UInt(_) => "an integer",
            Value::Bytes(_) => "bytes",
            Value::Double(_) => "a DOUBLE",
            Value::Date(_) => "a DATE",
            Value::DateTime(_) => "a DATETIME",
        }
    }

    /// The value as a Rust type ([`FromValue`]): `Value::UInt(7).get::<u32>()`.
    pub fn get<T: FromValue>(self) -> Result<T, FromValueError> {
        T::from_value(self)
    }
}

/// Writes stored field bytes (of a key, say): as text when they are UTF-8 without control
/// characters, as hex otherwise (the stored form of an integer is rarely text), cut short.
pub(crate) fn write_stored(f: &mut fmt::Formatter<'_>, b: &[u8]) -> fmt::Result {
    let printable = std::str::from_utf8(b).is_ok_and(|s| !s.chars().any(char::is_control));
    write_bytes(f, b, false, printable)
}

/// Writes `b` as text (valid UTF-8, quoted and escaped) or as hex, cut short unless `full`.
fn write_bytes(f: &mut fmt::Formatter<'_>, b: &[u8], full: bool, text: bool) -> fmt::Result {
    match std::str::from_utf8(b) {
        Ok(s) if text => {
            let mut cut = s.char_indices().nth(SHOW_CHARS).map(|(at, _)| at);
            if full {
                cut = None;
            }
            match cut {
                None => write!(f, "{s:?}"),
                Some(at) => {
                    let head = s.get(..at).unwrap_or(s);
                    let quoted = format!("{head:?}");
                    let open = quoted.strip_suffix('"').unwrap_or(&quoted);
                    write!(f, "{open}…\" ({} bytes)", b.len())
                }
            }
        }
        _ => {
            let shown = if full {
                b
            } else {
                b.get(..SHOW_BYTES).unwrap_or(b)
            };
            f.write_str("0x")?;
            for x in shown {
                write!(f, "{x:02x}")?;
            }
            if shown.len() < b.len() {
                write!(f, "… ({} bytes)", b.len())?;
            }
            Ok(())
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Int(x) => write!(f, "{x}"),
            Value::UInt(x) => write!(f, "{x}"),
            // `{:?}` keeps the point of a whole number: 1.0, not 1.
            Value::Double(x) => write!(f, "{x:?}"),
            Value::Bytes(b) => write_bytes(f, b, f.alternate(), true),
            Value::Date(d) => write!(f, "{d}"),
            Value::DateTime(d) => write!(f, "{d}"),
        }
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Value::Null => return f.write_str("Null"),
            Value::Int(_) => "Int",
            Value::UInt(_) => "UInt",
            Value::Double(_) => "Double",
            Value::Bytes(_) => "Bytes",
            Value::Date(_) => "Date",
            Value::DateTime(_) => "DateTime",
        };
        // `{:#?}` of a row puts each value on a line of its own: that alternate form is
        // about layout, so it does not ask for long values in full here.
        write!(f, "{name}(")?;
        match self {
            Value::Bytes(b) => write_bytes(f, b, false, true)?,
            other => write!(f, "{other}")?,
        }
        f.write_str(")")
    }
}

/// Several values shown as a key: `(7, "ada")`, each value as its `Display` shows it. The
/// errors that name a key (a duplicate key, a missing row) print it this way.
#[derive(Clone, Copy)]
pub struct Key<'a>(pub &'a [Value]);

impl fmt::Display for Key<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(")?;
        for (i, v) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            fmt::Display::fmt(v, f)?;
        }
        f.write_str(")")
    }
}

impl fmt::Debug for Key<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A value that does not convert to the Rust type asked for ([`FromValue`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected {expected}, found {}", Found(found))]
pub struct FromValueError {
    /// What the type accepts (`an integer in u8's range`, `UTF-8 text`, ...).
    pub expected: &'static str,
    /// The value found.
    pub found: Value,
}

/// A found value in an error: its kind, and the value unless it is NULL.
struct Found<'a>(&'a Value);

impl fmt::Display for Found<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Value::Null => f.write_str("NULL"),
            v => write!(f, "{} {v}", v.kind()),
        }
    }
}

/// A Rust type a [`Value`] converts to, with a [`FromValueError`] saying expected against
/// found when it does not fit (the module docs list the types).
///
/// ```
/// use minnow_btree::record::{FromValue, Value};
///
/// assert_eq!(u32::from_value(Value::UInt(7)), Ok(7));
/// assert_eq!(Option::<String>::from_value(Value::Null), Ok(None));
/// let e = u8::from_value(Value::Int(-1)).unwrap_err();
/// assert_eq!(e.to_string(), "expected an integer in u8's range, found an integer -1");
/// ```
pub trait FromValue: Sized {
    /// Converts `v`, or says why it does not fit.
    fn from_value(v: Value) -> Result<Self, FromValueError>;
}

/// A Rust value that makes a [`Value`] from a reference (the owned types have `From` too).
pub trait ToValue {
    /// The value.
    fn to_value(&self) -> Value;
}

fn mismatch<T>(expected: &'static str, found: Value) -> Result<T, FromValueError> {
    Err(FromValueError { expected, found })
}

impl FromValue for Value {
    fn from_value(v: Value) -> Result<Value, FromValueError> {
        Ok(v)
    }
}

impl ToValue for Value {
    fn to_value(&self) -> Value {
        self.clone()
    }
}

impl<T: FromValue> FromValue for Option<T> {
    fn from_value(v: Value) -> Result<Option<T>, FromValueError> {
        match v {
            Value::Null => Ok(None),
            v => T::from_value(v).map(Some),
        }
    }
}

impl<T: ToValue> ToValue for Option<T> {
    fn to_value(&self) -> Value {
        self.as_ref().map_or(Value::Null, T::to_value)
    }
}

impl<T: ToValue + ?Sized> ToValue for &T {
    fn to_value(&self) -> Value {
        T::to_value(self)
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}

/// The integer types: `From` into `Int` or `UInt`, `FromValue` from either within range.
macro_rules! integers {
    ($($t:ty => $variant:ident as $wide:ty),* $(,)?) => {$(
        impl From<$t> for Value {
            fn from(x: $t) -> Value {
                Value::$variant(<$wide>::from(x))
            }
        }
        impl ToValue for $t {
            fn to_value(&self) -> Value {
                Value::from(*self)
            }
        }
        impl FromValue for $t {
            fn from_value(v: Value) -> Result<$t, FromValueError> {
                let fits = match v {
                    Value::Int(x) => <$t>::try_from(x).ok(),
                    Value::UInt(x) => <$t>::try_from(x).ok(),
                    _ => None,
                };
                match fits {
                    Some(x) => Ok(x),
                    None => mismatch(concat!("an integer in ", stringify!($t), "'s range"), v),
                }
            }
        }
    )*};
}

integers! {
    u8 => UInt as u64, u16 => UInt as u64, u32 => UInt as u64, u64 => UInt as u64,
    i8 => Int as i64, i16 => Int as i64, i32 => Int as i64, i64 => Int as i64,
}

/// `TryFrom<Value>` for every [`FromValue`] type but `Option` (which the standard library's
/// blanket `TryFrom` already covers for `Option<Value>`) and `Value` itself.
macro_rules! try_from_value {
    ($($t:ty),* $(,)?) => {$(
        impl TryFrom<Value> for $t {
            type Error = FromValueError;
            fn try_from(v: Value) -> Result<$t, FromValueError> {
                <$t as FromValue>::from_value(v)
            }
        }
    )*};
}

try_from_value!(
    u8,
    u16,
    u32,
    u64,
    i8,
    i16,
    i32,
    i64,
    bool,
    f64,
    String,
    Vec<u8>,
    Date,
    DateTime
);

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::UInt(u64::from(b))
    }
}

impl ToValue for bool {
    fn to_value(&self) -> Value {
        Value::from(*self)
    }
}

impl FromValue for bool {
    fn from_value(v: Value) -> Result<bool, FromValueError> {
        match v.as_u64() {
            Some(0) => Ok(false),
            Some(1) => Ok(true),
            _ => mismatch("the integer 0 or 1 (a bool)", v),
        }
    }
}

impl From<f64> for Value {
    fn from(x: f64) -> Value {
        Value::Double(x)
    }
}

impl From<f32> for Value {
    fn from(x: f32) -> Value {
        Value::Double(f64::from(x))
    }
}

impl ToValue for f64 {
    fn to_value(&self) -> Value {
        Value::Double(*self)
    }
}

impl FromValue for f64 {
    fn from_value(v: Value) -> Result<f64, FromValueError> {
        match v {
            Value::Double(x) => Ok(x),
            v => mismatch("a DOUBLE", v),
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::Bytes(s.as_bytes().to_vec())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::Bytes(s.into_bytes())
    }
}

impl ToValue for str {
    fn to_value(&self) -> Value {
        Value::from(self)
    }
}

impl ToValue for String {
    fn to_value(&self) -> Value {
        Value::from(self.as_str())
    }
}

impl FromValue for String {
    fn from_value(v: Value) -> Result<String, FromValueError> {
        match v {
            Value::Bytes(b) => String::from_utf8(b)
                .or_else(|e| mismatch("UTF-8 text", Value::Bytes(e.into_bytes()))),
            v => mismatch("UTF-8 text", v),
        }
    }
}

impl From<&[u8]> for Value {
    fn from(b: &[u8]) -> Value {
        Value::Bytes(b.to_vec())
    }
}

impl From<Vec<u8>> for Value {
    fn from(b: Vec<u8>) -> Value {
        Value::Bytes(b)
    }
}

impl ToValue for [u8] {
    fn to_value(&self) -> Value {
        Value::from(self)
    }
}

impl ToValue for Vec<u8> {
    fn to_value(&self) -> Value {
        Value::from(self.as_slice())
    }
}

impl FromValue for Vec<u8> {
    fn from_value(v: Value) -> Result<Vec<u8>, FromValueError> {
        match v {
            Value::Bytes(b) => Ok(b),
            v => mismatch("bytes", v),
        }
    }
}

impl From<Date> for Value {
    fn from(d: Date) -> Value {
        Value::Date(d)
    }
}

impl From<DateTime> for Value {
    fn from(d: DateTime) -> Value {
        Value::DateTime(d)
    }
}

impl ToValue for Date {
    fn to_value(&self) -> Value {
        Value::Date(*self)
    }
}

impl ToValue for DateTime {
    fn to_value(&self) -> Value {
        Value::DateTime(*self)
    }
}

impl FromValue for Date {
    fn from_value(v: Value) -> Result<Date, FromValueError> {
        match v {
            Value::Date(d) => Ok(d),
            v => mismatch("a DATE", v),
        }
    }
}

impl FromValue for DateTime {
    fn from_value(v: Value) -> Result<DateTime, FromValueError> {
        match v {
            Value::DateTime(d) => Ok(d),
            v => mismatch("a DATETIME", v),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Column, ColumnType, RecordLayout, SearchKey};

    #[test]
    fn keys_print_as_tuples_of_readable_values() {
        let key = [Value::text("978-0"), Value::UInt(3), Value::Null];
        assert_eq!(Key(&key).to_string(), "(\"978-0\", 3, NULL)");
        assert_eq!(format!("{:?}", Key(&[])), "()");
    }

    #[test]
    fn search_keys_print_stored_integers_as_hex_and_text_as_text() {
        let layout = RecordLayout::secondary(vec![
            Column::new(ColumnType::U64),
            Column::new(ColumnType::Var(10)),
            Column::nullable(ColumnType::U8),
        ])
        .expect("layout");
        let mut k = SearchKey::default();
        k.set(&layout, &[Value::UInt(7), Value::text("ada"), Value::Null])
            .expect("key");
        assert_eq!(format!("{k:?}"), "[0x0000000000000007, \"ada\", NULL]");
    }

    #[test]
    fn integers_convert_across_signedness_within_range() {
        assert_eq!(i8::from_value(Value::UInt(127)), Ok(127));
        assert!(i8::from_value(Value::UInt(128)).is_err());
        assert_eq!(u64::from_value(Value::Int(5)), Ok(5));
        assert_eq!(
            u64::from_value(Value::Int(-5)).map_err(|e| e.to_string()),
            Err("expected an integer in u64's range, found an integer -5".to_owned())
        );
        assert_eq!(bool::from_value(Value::Int(1)), Ok(true));
        assert!(bool::from_value(Value::UInt(2)).is_err());
    }
}
