//! The record format: how one row (or one node pointer) is laid out in bytes.
//!
//! minnow's records are modelled on InnoDB's COMPACT format. A record has an **origin**: the
//! offset that the page's next-record pointers and directory slots point at. The *data* (the
//! field values, one after the other) grows forwards from the origin; the *extra bytes* that
//! describe the data grow backwards from it:
//!
//! ```text
//!   lower addresses                                               higher addresses
//!   +-------------------+-------------+---------------+-----------------------------+
//!   | var-field lengths | null bitmap | 5-byte header | field 0 | field 1 | ...     |
//!   |  (last .. first)  |             |               |                             |
//!   +-------------------+-------------+---------------+-----------------------------+
//!   ^ record start                                    ^ origin
//! ```
//!
//! Reading backwards from the origin means a reader who holds only the origin finds the header
//! first (at `origin - 5`), then the null bitmap, then the lengths, each exactly where the
//! previous one ended; the data is then read forwards, each field's length known either from
//! its type (integers, fixed-width bytes) or from the length bytes.
//!
//! ## The 5-byte header, byte by byte
//!
//! ```text
//! origin-5   bits 7..4  info bits: 0x20 DELETED (delete-marked), 0x10 MIN_REC (leftmost
//!                       node pointer of a non-leaf level), 0x80 and 0x40 reserved (0)
//!            bits 3..0  n_owned: records owned by this one in the page directory (0 if the
//!                       record is not the last of its directory group)
//! origin-4   bits 15..3 heap_no: the record's number in the page's heap (0 infimum,
//! origin-3              1 supremum, user records from 2), bits 2..0 status: 0 ordinary
//!                       (leaf) record, 1 node pointer, 2 infimum, 3 supremum
//! origin-2   16 bits    next: offset of the next record in key order, relative to this
//! origin-1              origin, modulo 65536 (0 in the supremum: the list ends there)
//! ```
//!
//! ## Null bitmap and variable lengths
//!
//! Every nullable column has a bit, whether or not it is NULL: the j-th nullable column's bit is
//! bit `j % 8` of the byte at `origin - 6 - j / 8`. A set bit means NULL; a NULL field takes no
//! data bytes and has no length byte. The bitmap has `ceil(nullable / 8)` bytes (none if no
//! column is nullable).
//!
//! Below the bitmap, each non-NULL variable-length field (VARCHAR/VARBINARY, BLOB/TEXT) has a
//! length, in field order, at decreasing addresses. A length below 128 takes one byte. A longer
//! one takes two: the first (higher-address) byte holds `0x80 | len >> 8`, the next one
//! `len & 0xFF`. Bit `0x40` ([`LEN_EXTERN`]) of that first byte means "stored off-page": the
//! field's data is then a 20-byte reference to a chain of overflow pages
//! ([`crate::tree::overflow`]). So one field holds at most 16383 bytes on the page.
//!
//! ## Field data
//!
//! Integers are stored big-endian with the sign bit flipped for signed types, so that unsigned
//! byte comparison (`memcmp`) orders them numerically: `-1i32` is `7f ff ff ff`, `0i32` is
//! `80 00 00 00`. DOUBLE, DATE and DATETIME have order-preserving encodings of their own
//! ([`types`]). Fixed-width bytes (`BINARY(n)`) are stored as given, exactly `n` bytes.
//! Variable bytes (VARCHAR, BLOB, TEXT) are stored as given: the collation is binary. Comparison of two values of one column is therefore
//! always a byte comparison (shorter first when one is a prefix of the other), with NULL smaller
//! than every value.
//!
//! ## Which fields a record has
//!
//! A [`RecordLayout`] lists the stored fields of one kind of record:
//!
//! - clustered-index leaf: the primary key columns, `DB_TRX_ID` (6 bytes), `DB_ROLL_PTR`
//!   (7 bytes), then the other columns;
//! - secondary-index leaf: the secondary key columns followed by the primary key columns;
//! - node pointer (any non-leaf level): the key columns of the level below, then the 4-byte
//!   child page number.
//!
//! The first [`RecordLayout::n_key`] fields are the *key*: they order the records and are what
//! searches compare.
//!
//! Decoding never panics: every access is checked and bad bytes produce a [`RecordError`].

use minnow_page::bytes;

/// Size of the record header (the extra bytes right before the origin).
pub const HEADER_SIZE: usize = 5;
/// Info bit: the record is delete-marked.
pub const INFO_DELETED: u8 = 0x20;
/// Info bit: the leftmost node pointer of a non-leaf level (smaller than any key).
pub const INFO_MIN_REC: u8 = 0x10;
/// Longest variable-length field stored on the page (bit 0x40 of a 2-byte length marks a
/// field stored off-page).
pub const MAX_VAR_LEN: usize = 0x3FFF;
/// Longest BLOB or TEXT value: 4 GiB - 1 (InnoDB's LONGBLOB). One row's off-page bytes are
/// further limited by the buffer pool and the redo log (see [`crate::tree::overflow`]).
pub const MAX_BLOB_LEN: usize = u32::MAX as usize;
/// Size of the reference an off-page field keeps in the record (see
/// [`crate::tree::overflow`]).
pub const EXTERN_REF_LEN: usize = 20;
/// Bit of the first (higher-address) byte of a 2-byte length: the field is stored off-page.
pub const LEN_EXTERN: u8 = 0x40;
/// Size of `DB_TRX_ID`.
pub const TRX_ID_LEN: usize = 6;
/// Size of `DB_ROLL_PTR`.
pub const ROLL_PTR_LEN: usize = 7;

/// Errors from encoding or decoding records.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// A read fell outside the page.
    #[error(transparent)]
    Page(#[from] minnow_page::PageError),
    /// The origin is too close to the start of the page for the record's extra bytes.
    #[error("record at {origin} needs {extra} extra bytes before its origin")]
    ExtraUnderflow {
        /// The record origin.
        origin: usize,
        /// Extra bytes needed.
        extra: usize,
    },
    /// A stored length is longer than the column allows.
    #[error("field {field} of the record at {origin} is {len} bytes, the column allows {max}")]
    FieldTooLong {
        /// The record origin.
        origin: usize,
        /// Field index.
        field: usize,
        /// Stored length.
        len: usize,
        /// Column maximum.
        max: usize,
    },
    /// A field marked as stored off-page where that is not allowed (a key field, a fixed-width
    /// field, a layout other than a clustered leaf, a reference that is not 20 bytes), or
    /// asked to be decoded from the page alone ([`RecordLayout::decode`]).
    #[error("field {field} of the record at {origin} is marked as stored off-page")]
    External {
        /// The record origin.
        origin: usize,
        /// Field index.
        field: usize,
    },
    /// Stored bytes that are no value of the field's type (a DATE with month 13).
    #[error("field {field} of the record at {origin} is not a valid {ty:?}: {reason}")]
    BadStored {
        /// The record origin.
        origin: usize,
        /// Field index.
        field: usize,
        /// The field's type.
        ty: ColumnType,
        /// What is wrong.
        reason: &'static str,
    },
    /// Wrong number of values for the layout.
    #[error("expected {expected} values, got {got}")]
    ValueCount {
        /// Values the layout needs.
        expected: usize,
        /// Values given.
        got: usize,
    },
    /// A value does not fit its column.
    #[error("value for field {field} does not fit its column: {reason}")]
    BadValue {
        /// Field index.
        field: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// A field index past the record's fields ([`RecordView::field`]).
    #[error("asked for field {field} of a {fields}-field record")]
    NoField {
        /// The index asked for.
        field: usize,
        /// Fields the record has.
        fields: usize,
    },
    /// A layout that cannot be built.
    #[error("bad layout: {0}")]
    BadLayout(&'static str),
}

/// The type of one column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ColumnType {
    /// TINYINT.
    I8,
    /// SMALLINT.
    I16,
    /// INT.
    I32,
    /// BIGINT.
    I64,
    /// TINYINT UNSIGNED.
    U8,
    /// SMALLINT UNSIGNED.
    U16,
    /// INT UNSIGNED.
    U32,
    /// BIGINT UNSIGNED.
    U64,
    /// CHAR(n)/BINARY(n): exactly `n` bytes.
    Fixed(u16),
    /// VARCHAR(max)/VARBINARY(max): up to `max` bytes (at most [`MAX_VAR_LEN`]).
    Var(u16),
    /// DOUBLE: an IEEE 754 double, 8 bytes (see [`types`] for NaN and `-0.0`).
    Double,
    /// DATE: 3 bytes, InnoDB's packed `year * 512 + month * 32 + day`.
    Date,
    /// DATETIME(6): 8 bytes, MySQL's packed date, time and microseconds.
    DateTime,
    /// BLOB: up to [`MAX_BLOB_LEN`] bytes; long values go to overflow pages. Never a key.
    Blob,
    /// TEXT: like BLOB, but the bytes must be UTF-8 (binary collation: compared as bytes).
    Text,
}

impl ColumnType {
    /// The type's code and length as the dictionary stores them (FORMAT.md §8; the heap
    /// file's definition page, §10, uses the same codes): 1-8 the integers from `I8` to `U64`,
    /// 9 `Fixed(n)`, 10 `Var(n)` (the length is `n`; 0 for every other type), 11 `Double`,
    /// 12 `Date`, 13 `DateTime`, 14 `Blob`, 15 `Text`.
    pub fn code(self) -> (u8, u16) {
        match self {
            ColumnType::I8 => (1, 0),
            ColumnType::I16 => (2, 0),
            ColumnType::I32 => (3, 0),
            ColumnType::I64 => (4, 0),
            ColumnType::U8 => (5, 0),
            ColumnType::U16 => (6, 0),
            ColumnType::U32 => (7, 0),
            ColumnType::U64 => (8, 0),
            ColumnType::Fixed(n) => (9, n),
            ColumnType::Var(n) => (10, n),
            ColumnType::Double => (11, 0),
            ColumnType::Date => (12, 0),
            ColumnType::DateTime => (13, 0),
            ColumnType::Blob => (14, 0),
            ColumnType::Text => (15, 0),
        }
    }

    /// The type with code `code` and length `len` ([`ColumnType::code`]); `None` for an
    /// unknown code.
    pub fn from_code(code: u8, len: u16) -> Option<ColumnType> {
        Some(match code {
            1 => ColumnType::I8,
            2 => ColumnType::I16,
            3 => ColumnType::I32,
            4 => ColumnType::I64,
            5 => ColumnType::U8,
            6 => ColumnType::U16,
            7 => ColumnType::U32,
            8 => ColumnType::U64,
            9 => ColumnType::Fixed(len),
            10 => ColumnType::Var(len),
            11 => ColumnType::Double,
            12 => ColumnType::Date,
            13 => ColumnType::DateTime,
            14 => ColumnType::Blob,
            15 => ColumnType::Text,
            _ => return None,
        })
    }

    /// The stored width of a fixed-width type; `None` for [`ColumnType::Var`].
    pub fn fixed_len(self) -> Option<usize> {
        Some(match self {
            ColumnType::I8 | ColumnType::U8 => 1,
            ColumnType::I16 | ColumnType::U16 => 2,
            ColumnType::I32 | ColumnType::U32 => 4,
            ColumnType::I64 | ColumnType::U64 => 8,
            ColumnType::Fixed(n) => usize::from(n),
            ColumnType::Double | ColumnType::DateTime => 8,
            ColumnType::Date => 3,
            ColumnType::Var(_) | ColumnType::Blob | ColumnType::Text => return None,
        })
    }

    /// Largest stored size of a value.
    pub fn max_len(self) -> usize {
        match self {
            ColumnType::Var(max) => usize::from(max),
            ColumnType::Blob | ColumnType::Text => MAX_BLOB_LEN,
            other => other.fixed_len().unwrap_or(0),
        }
    }

    /// True for BLOB and TEXT, which can be no index's key column.
    pub fn is_lob(self) -> bool {
        matches!(self, ColumnType::Blob | ColumnType::Text)
    }

    fn signed(self) -> bool {
        matches!(
            self,
            ColumnType::I8 | ColumnType::I16 | ColumnType::I32 | ColumnType::I64
        )
    }

    fn is_int(self) -> bool {
        matches!(
            self,
            ColumnType::I8
                | ColumnType::I16
                | ColumnType::I32
                | ColumnType::I64
                | ColumnType::U8
                | ColumnType::U16
                | ColumnType::U32
                | ColumnType::U64
        )
    }
}

/// One stored column: a type and whether it may be NULL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Column {
    /// The type.
    pub ty: ColumnType,
    /// Whether the column may be NULL.
    pub nullable: bool,
}

impl Column {
    /// A NOT NULL column.
    pub fn new(ty: ColumnType) -> Column {
        Column {
            ty,
            nullable: false,
        }
    }

    /// A nullable column.
    pub fn nullable(ty: ColumnType) -> Column {
        Column { ty, nullable: true }
    }
}

/// A typed field value.
///
/// Equality and hashing compare a [`Value::Double`] by its bits, so `Value` can be `Eq`:
/// `Double(-0.0) != Double(0.0)` here, but a DOUBLE column stores (and reads return) `0.0`
/// for both, and NaN cannot be stored at all (see [`types`]). Accessors, conversions from
/// and to Rust types, and how values print (text as text, other bytes as hex) are in
/// [`value`].
#[derive(Clone)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// A signed integer (accepted by any integer column it fits).
    Int(i64),
    /// An unsigned integer (accepted by any integer column it fits).
    UInt(u64),
    /// Bytes, for fixed and variable byte columns, BLOB and TEXT (UTF-8 for TEXT).
    Bytes(Vec<u8>),
    /// A DOUBLE.
    Double(f64),
    /// A DATE.
    Date(Date),
    /// A DATETIME.
    DateTime(DateTime),
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::UInt(a), Value::UInt(b)) => a == b,
            (Value::Bytes(a), Value::Bytes(b)) => a == b,
            (Value::Double(a), Value::Double(b)) => a.to_bits() == b.to_bits(),
            (Value::Date(a), Value::Date(b)) => a == b,
            (Value::DateTime(a), Value::DateTime(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Value {}

impl std::hash::Hash for Value {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Value::Null => {}
            Value::Int(x) => x.hash(state),
            Value::UInt(x) => x.hash(state),
            Value::Bytes(b) => b.hash(state),
            Value::Double(x) => x.to_bits().hash(state),
            Value::Date(d) => d.hash(state),
            Value::DateTime(d) => d.hash(state),
        }
    }
}

impl Value {
    /// A TEXT (or byte-column) value from a string: its UTF-8 bytes.
    pub fn text(s: &str) -> Value {
        Value::Bytes(s.as_bytes().to_vec())
    }

    /// A DATE value; an error if the date does not exist ([`Date::new`]).
    pub fn date(year: u16, month: u8, day: u8) -> Result<Value, RecordError> {
        Ok(Value::Date(Date::new(year, month, day)?))
    }

    /// A DATETIME value; an error if a part is out of range ([`DateTime::new`]).
    pub fn datetime(
        (year, month, day): (u16, u8, u8),
        (hour, minute, second): (u8, u8, u8),
        micro: u32,
    ) -> Result<Value, RecordError> {
        Ok(Value::DateTime(DateTime::new(
            Date::new(year, month, day)?,
            hour,
            minute,
            second,
            micro,
        )?))
    }

    /// The `DB_TRX_ID` value for transaction `id` (low 48 bits). A system
    /// column, for the engine, hidden from the docs: rows of the API never hold it.
    #[doc(hidden)]
    pub fn trx_id(id: u64) -> Value {
        Value::Bytes(id.to_be_bytes().get(2..).unwrap_or_default().to_vec())
    }

    /// The `DB_ROLL_PTR` value for roll pointer `ptr` (low 56 bits). A system
    /// column, for the engine, hidden from the docs: rows of the API never hold it.
    #[doc(hidden)]
    pub fn roll_ptr(ptr: u64) -> Value {
        Value::Bytes(ptr.to_be_bytes().get(1..).unwrap_or_default().to_vec())
    }
}

/// Record status, the low 3 bits of header bytes `origin-4..origin-3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecStatus {
    /// An ordinary (leaf) record.
    Ordinary,
    /// A node pointer on a non-leaf level.
    NodePtr,
    /// The infimum.
    Infimum,
    /// The supremum.
    Supremum,
    /// A value minnow does not define.
    Invalid(u8),
}

impl RecStatus {
    /// Decodes 3 status bits.
    pub fn from_bits(v: u8) -> RecStatus {
        match v & 7 {
            0 => RecStatus::Ordinary,
            1 => RecStatus::NodePtr,
            2 => RecStatus::Infimum,
            3 => RecStatus::Supremum,
            other => RecStatus::Invalid(other),
        }
    }

    /// Encodes as 3 bits.
    pub fn bits(self) -> u8 {
        match self {
            RecStatus::Ordinary => 0,
            RecStatus::NodePtr => 1,
            RecStatus::Infimum => 2,
            RecStatus::Supremum => 3,
            RecStatus::Invalid(v) => v & 7,
        }
    }
}

/// The decoded 5-byte record header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHeader {
    /// Info bits (high nibble of byte `origin-5`, as a value `0x00..=0xF0`).
    pub info_bits: u8,
    /// Records owned in the page directory (0..=15).
    pub n_owned: u8,
    /// Heap number (13 bits).
    pub heap_no: u16,
    /// Status.
    pub status: RecStatus,
    /// Next-record offset, relative to the origin, modulo 65536 (0: end of list).
    pub next_rel: u16,
}

impl RecordHeader {
    /// Reads the header of the record whose origin is `origin`.
    pub fn read(page: &[u8], origin: usize) -> Result<RecordHeader, RecordError> {
        let start = origin
            .checked_sub(HEADER_SIZE)
            .ok_or(RecordError::ExtraUnderflow {
                origin,
                extra: HEADER_SIZE,
            })?;
        let b = bytes::slice(page, start, HEADER_SIZE)?;
        let mut h = [0u8; HEADER_SIZE];
        h.copy_from_slice(b);
        Ok(RecordHeader::from_bytes(h))
    }

    /// Decodes five header bytes.
    pub fn from_bytes(h: [u8; HEADER_SIZE]) -> RecordHeader {
        let [b0, b1, b2, b3, b4] = h;
        let hs = u16::from_be_bytes([b1, b2]);
        RecordHeader {
            info_bits: b0 & 0xF0,
            n_owned: b0 & 0x0F,
            heap_no: hs >> 3,
            status: RecStatus::from_bits((hs & 7) as u8),
            next_rel: u16::from_be_bytes([b3, b4]),
        }
    }

    /// Encodes as five bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_SIZE] {
        let hs = (self.heap_no << 3) | u16::from(self.status.bits());
        let [h1, h2] = hs.to_be_bytes();
        let [n1, n2] = self.next_rel.to_be_bytes();
        [
            (self.info_bits & 0xF0) | (self.n_owned & 0x0F),
            h1,
            h2,
            n1,
            n2,
        ]
    }

    /// The absolute offset of the next record, or `None` at the end of the list.
    pub fn next(&self, origin: usize) -> Option<usize> {
        (self.next_rel != 0).then(|| usize::from((origin as u16).wrapping_add(self.next_rel)))
    }

    /// True if the record is delete-marked.
    pub fn deleted(&self) -> bool {
        self.info_bits & INFO_DELETED != 0
    }
}

/// The relative next offset stored in a record at `from` that points at `to`.
pub fn next_rel(from: usize, to: usize) -> u16 {
    (to as u16).wrapping_sub(from as u16)
}

/// An encoded record, ready to be copied into a page: extra bytes, then data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordBuf {
    bytes: Vec<u8>,
    extra: usize,
}

impl RecordBuf {
    /// All bytes, from the record start (first length byte) to the end of the data.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Total size in bytes.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Always false: a record has at least its 5-byte header.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Extra bytes before the origin (lengths, null bitmap, header).
    pub fn extra(&self) -> usize {
        self.extra
    }

    /// The header as encoded (heap number, n_owned and next are filled in by the page).
    pub fn header(&self) -> RecordHeader {
        RecordHeader::read(&self.bytes, self.extra).unwrap_or(RecordHeader {
            info_bits: 0,
            n_owned: 0,
            heap_no: 0,
            status: RecStatus::Ordinary,
            next_rel: 0,
        })
    }

    /// Sets the info bits (e.g. [`INFO_MIN_REC`] on the leftmost node pointer).
    pub fn set_info_bits(&mut self, info: u8) {
        let mut h = self.header();
        h.info_bits = info & 0xF0;
        self.set_header(h);
    }

    pub(crate) fn set_header(&mut self, h: RecordHeader) {
        let start = self.extra.saturating_sub(HEADER_SIZE);
        if let Ok(dst) = bytes::slice_mut(&mut self.bytes, start, HEADER_SIZE) {
            dst.copy_from_slice(&h.to_bytes());
        }
    }

    /// Overwrites bytes at `at` (an off-page field's reference, once its chain exists).
    pub(crate) fn patch(&mut self, at: usize, data: &[u8]) {
        if let Ok(dst) = bytes::slice_mut(&mut self.bytes, at, data.len()) {
            dst.copy_from_slice(data);
        }
    }

    pub(crate) fn from_parts(bytes: Vec<u8>, extra: usize) -> RecordBuf {
        RecordBuf { bytes, extra }
    }
}

mod key;
mod layout;
pub mod types;
pub mod value;
mod view;

pub use key::{FlatKey, SearchKey};
pub use layout::{Field, FieldWalk, RecordLayout, decode_value};
pub use types::{Date, DateTime};
pub use value::{FromValue, FromValueError, Key, ToValue};
pub use view::{FieldRef, RecordView};

#[cfg(test)]
mod tests;
