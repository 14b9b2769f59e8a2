//! InnoDB's COMPACT (and DYNAMIC) records, decoded with a schema the user gives.
//!
//! A page does not say what its columns are: InnoDB keeps that in its dictionary (or the
//! `.frm`/SDI), which this tool does not read. So `minnow page FILE N --columns "..."` takes
//! the table's columns in table order, and decodes every record of an INDEX page with them.
//!
//! ## A COMPACT record
//!
//! ```text
//!        ... var lengths (reverse) | NULL bitmap | info+n_owned | heap_no<<3|status | next |  fields ...
//!                                                 └────────── 5-byte header ──────────────┘^ origin
//! ```
//!
//! Reading backwards from the origin: the 5-byte header (info bits `0x20` deleted and `0x10`
//! min-rec, `n_owned`; heap number and status, 0 leaf, 1 node pointer, 2 infimum, 3 supremum;
//! the next record as a signed offset from this origin), then the **NULL bitmap**, one bit per
//! nullable field of the index (the first nullable field is the lowest bit of the byte nearest
//! the header), then one or two **length bytes** per non-NULL variable-length field, in field
//! order going backwards. A length takes two bytes when the field can be longer than 255 bytes
//! (or is a BLOB/TEXT) and the first byte has bit `0x80`; then bit `0x40` says the column is
//! **stored externally** (DYNAMIC keeps only a 20-byte pointer in the record, COMPACT a
//! 768-byte prefix and the pointer). Fixed-length fields (integers, `CHAR` in a single-byte
//! character set, `DATE`) have no length byte.
//!
//! The fields are the index's, in its order:
//!
//! - clustered leaf: the primary key columns, `DB_TRX_ID` (6 bytes: the transaction that last
//!   changed the row), `DB_ROLL_PTR` (7 bytes: bit 55 "insert", 7 bits rollback segment, 4
//!   bytes undo page, 2 bytes offset: where the previous version is), then the other columns;
//! - clustered node pointer: the primary key columns and the child page number (4 bytes);
//! - secondary index (`--key`): the key columns, then the primary key columns (plus the child
//!   page on node pointers).
//!
//! Integers are big-endian with the sign bit flipped for signed types (so they sort as bytes);
//! `FLOAT`/`DOUBLE` are stored little-endian as the machine has them; `DATE` is 3 bytes,
//! `day + 32 × month + 512 × year`. Lengths here are bytes: a `VARCHAR(n)` in latin1 is
//! `varchar(n)`; in utf8mb4 (up to 4 bytes a character) it is `varchar(4n)`, and its `CHAR(n)`
//! columns are variable-length (`varchar(4n)` too).
//!
//! Nothing here trusts the page: every read is checked, a walk stops after `N_HEAP` records, and
//! a record that does not fit is reported as a problem instead of decoded.

use std::fmt::Write as _;

use serde::Serialize;

/// A column's type, as far as its storage goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColType {
    /// An integer of 1, 2, 3, 4 or 8 bytes.
    Int {
        /// Bytes.
        bytes: usize,
        /// UNSIGNED.
        unsigned: bool,
    },
    /// FLOAT (4 bytes) or DOUBLE (8 bytes), little-endian.
    Float {
        /// Bytes.
        bytes: usize,
    },
    /// DATE: 3 bytes.
    Date,
    /// CHAR(n) / BINARY(n) in a single-byte character set: n bytes.
    Fixed {
        /// Bytes.
        len: usize,
        /// Shown as text (CHAR) or hex (BINARY).
        text: bool,
    },
    /// VARCHAR(n) / VARBINARY(n) / TEXT / BLOB: a length byte or two.
    Var {
        /// Maximum bytes (BLOB/TEXT: more than 255, so two length bytes when long).
        max: usize,
        /// Shown as text or hex.
        text: bool,
    },
}

impl ColType {
    fn fixed_len(self) -> Option<usize> {
        match self {
            ColType::Int { bytes, .. } | ColType::Float { bytes } => Some(bytes),
            ColType::Date => Some(3),
            ColType::Fixed { len, .. } => Some(len),
            ColType::Var { .. } => None,
        }
    }
}

/// A column of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Col {
    /// Its name.
    pub name: String,
    /// Its type.
    pub ty: ColType,
    /// May be NULL (columns are, unless `not null` or in the primary key).
    pub nullable: bool,
}

/// The table's columns and which index the page belongs to.
#[derive(Debug, Clone)]
pub struct Schema {
    /// Columns in table order.
    pub cols: Vec<Col>,
    /// Primary key columns (indexes into `cols`).
    pub pk: Vec<usize>,
    /// The secondary index's key columns, when the page is a secondary index's.
    pub key: Option<Vec<usize>>,
}

/// A field of an index record: a column, or a system field.
#[derive(Debug, Clone)]
struct Field {
    name: String,
    ty: ColType,
    nullable: bool,
}

fn parse_type(spec: &str) -> Result<ColType, String> {
    let s = spec.trim().to_ascii_lowercase();
    let unsigned = s.split_whitespace().any(|w| w == "unsigned");
    let base = s.split_whitespace().next().unwrap_or("");
    let (name, arg) = match base.split_once('(') {
        Some((n, rest)) => (n, rest.trim_end_matches(')').parse::<usize>().ok()),
        None => (base, None),
    };
    let need = |what: &str| arg.ok_or_else(|| format!("`{spec}`: {what} needs a length"));
    Ok(match name {
        "tinyint" => ColType::Int { bytes: 1, unsigned },
        "smallint" => ColType::Int { bytes: 2, unsigned },
        "mediumint" => ColType::Int { bytes: 3, unsigned },
        "int" | "integer" => ColType::Int { bytes: 4, unsigned },
        "bigint" => ColType::Int { bytes: 8, unsigned },
        "float" => ColType::Float { bytes: 4 },
        "double" => ColType::Float { bytes: 8 },
        "date" => ColType::Date,
        "char" => ColType::Fixed {
            len: need("char")?,
            text: true,
        },
        "binary" => ColType::Fixed {
            len: need("binary")?,
            text: false,
        },
        "varchar" => ColType::Var {
            max: need("varchar")?,
            text: true,
        },
        "varbinary" => ColType::Var {
            max: need("varbinary")?,
            text: false,
        },
        "text" | "mediumtext" | "longtext" => ColType::Var {
            max: usize::MAX,
            text: true,
        },
        "blob" | "mediumblob" | "longblob" => ColType::Var {
            max: usize::MAX,
            text: false,
        },
        _ => {
            return Err(format!(
                "`{spec}`: unsupported type (supported: tinyint, smallint, mediumint, int, \
                 bigint [unsigned], float, double, date, char(n), binary(n), varchar(n), \
                 varbinary(n), text, blob)"
            ));
        }
    })
}

impl Schema {
    /// Parses `name:type[ unsigned][ not null]` items separated by commas or newlines (`#`
    /// starts a comment), the primary key column names (default: the first column) and a
    /// secondary index's key column names.
    pub fn parse(columns: &str, pk: Option<&str>, key: Option<&str>) -> Result<Schema, String> {
        let mut cols = Vec::new();
        for item in columns
            .lines()
            .map(|l| l.split('#').next().unwrap_or(""))
            .flat_map(|l| l.split(','))
            .map(str::trim)
            .filter(|i| !i.is_empty())
        {
            let (name, ty) = item
                .split_once(':')
                .ok_or_else(|| format!("`{item}`: expected name:type"))?;
            let not_null = ty.to_ascii_lowercase().contains("not null");
            cols.push(Col {
                name: name.trim().to_string(),
                ty: parse_type(ty)?,
                nullable: !not_null,
            });
        }
        if cols.is_empty() {
            return Err("no columns given".into());
        }
        let find = |cols: &[Col], names: &str| -> Result<Vec<usize>, String> {
            names
                .split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(|n| {
                    cols.iter()
                        .position(|c| c.name == n)
                        .ok_or_else(|| format!("no column `{n}`"))
                })
                .collect()
        };
        let pk = match pk {
            Some(p) => find(&cols, p)?,
            None => vec![0],
        };
        if pk.is_empty() {
            return Err("empty primary key".into());
        }
        for &i in &pk {
            if let Some(c) = cols.get_mut(i) {
                c.nullable = false;
            }
        }
        let key = key.map(|k| find(&cols, k)).transpose()?;
        Ok(Schema { cols, pk, key })
    }

    fn col_field(&self, i: usize) -> Option<Field> {
        self.cols.get(i).map(|c| Field {
            name: c.name.clone(),
            ty: c.ty,
            nullable: c.nullable,
        })
    }

    /// The index's fields on a leaf page, in record order.
    fn leaf_fields(&self) -> Vec<Field> {
        let mut f: Vec<Field> = Vec::new();
        match &self.key {
            None => {
                f.extend(self.pk.iter().filter_map(|&i| self.col_field(i)));
                f.push(Field {
                    name: "DB_TRX_ID".into(),
                    ty: ColType::Fixed {
                        len: 6,
                        text: false,
                    },
                    nullable: false,
                });
                f.push(Field {
                    name: "DB_ROLL_PTR".into(),
                    ty: ColType::Fixed {
                        len: 7,
                        text: false,
                    },
                    nullable: false,
                });
                f.extend(
                    (0..self.cols.len())
                        .filter(|i| !self.pk.contains(i))
                        .filter_map(|i| self.col_field(i)),
                );
            }
            Some(key) => {
                f.extend(key.iter().filter_map(|&i| self.col_field(i)));
                f.extend(
                    self.pk
                        .iter()
                        .filter(|i| !key.contains(i))
                        .filter_map(|&i| self.col_field(i)),
                );
            }
        }
        f
    }

    /// The fields of a node pointer: the unique prefix (clustered: the primary key; secondary:
    /// every field), then the child page number.
    fn node_fields(&self) -> Vec<Field> {
        let mut f: Vec<Field> = match &self.key {
            None => self.pk.iter().filter_map(|&i| self.col_field(i)).collect(),
            Some(_) => self.leaf_fields(),
        };
        f.push(Field {
            name: "child_page".into(),
            ty: ColType::Int {
                bytes: 4,
                unsigned: true,
            },
            nullable: false,
        });
        f
    }
}

/// One decoded field.
#[derive(Debug, Serialize)]
pub struct FieldValue {
    /// The column (or `DB_TRX_ID`, `DB_ROLL_PTR`, `child_page`).
    pub name: String,
    /// The value as text; `NULL` for NULL.
    pub value: String,
    /// Stored bytes in the record.
    pub len: usize,
    /// Stored off-page (only a prefix and a 20-byte pointer are here).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub external: bool,
}

/// A decoded roll pointer.
#[derive(Debug, Serialize)]
pub struct RollPtr {
    /// Bit 55: the version was made by an insert (there is no older one).
    pub insert: bool,
    /// The rollback segment.
    pub rseg: u8,
    /// The undo log page.
    pub page: u32,
    /// The offset of the undo record in it.
    pub offset: u16,
}

/// One decoded record.
#[derive(Debug, Serialize)]
pub struct RecordInfo {
    /// The record's origin (page offset).
    pub offset: usize,
    /// Its heap number.
    pub heap_no: u16,
    /// `leaf`, `node_ptr`, `infimum`, `supremum` or a number.
    pub status: String,
    /// Delete-marked (info bit 0x20).
    pub deleted: bool,
    /// Leftmost record of a non-leaf level (info bit 0x10).
    pub min_rec: bool,
    /// Records owned (non-zero for a directory slot's owner).
    pub n_owned: u8,
    /// The fields, in index order.
    pub fields: Vec<FieldValue>,
    /// DB_TRX_ID, for clustered leaves.
    pub trx_id: Option<u64>,
    /// DB_ROLL_PTR, for clustered leaves.
    pub roll_ptr: Option<RollPtr>,
}

/// The records of a page, in key order (the next-pointer chain from the infimum).
#[derive(Debug, Serialize)]
pub struct Records {
    /// The records, infimum and supremum excluded.
    pub records: Vec<RecordInfo>,
    /// Why the walk stopped early or a record could not be decoded.
    pub problems: Vec<String>,
}

/// A big-endian number of up to eight bytes.
pub(crate) fn be(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0, |a, &b| (a << 8) | u64::from(b))
}

fn text_or_hex(bytes: &[u8], text: bool) -> String {
    if text && bytes.iter().all(|b| (0x20..0x7f).contains(b)) {
        String::from_utf8_lossy(bytes).into_owned()
    } else {
        let mut s = String::from("0x");
        for b in bytes {
            let _ = write!(s, "{b:02x}");
        }
        s
    }
}

fn value(ty: ColType, b: &[u8]) -> String {
    match ty {
        ColType::Int { bytes, unsigned } => {
            let raw = be(b);
            if unsigned {
                raw.to_string()
            } else {
                let bits = 8 * bytes as u32;
                let flipped = raw ^ (1u64 << (bits - 1));
                // Sign-extend from `bits`.
                let shift = 64 - bits;
                (((flipped << shift) as i64) >> shift).to_string()
            }
        }
        ColType::Float { bytes: 4 } => {
            let mut w = [0u8; 4];
            w.copy_from_slice(b.get(..4).unwrap_or(&[0; 4]));
            f32::from_le_bytes(w).to_string()
        }
        ColType::Float { .. } => {
            let mut w = [0u8; 8];
            w.copy_from_slice(b.get(..8).unwrap_or(&[0; 8]));
            f64::from_le_bytes(w).to_string()
        }
        ColType::Date => {
            let v = be(b) ^ 0x80_0000;
            format!("{:04}-{:02}-{:02}", v >> 9, (v >> 5) & 15, v & 31)
        }
        ColType::Fixed { text, .. } | ColType::Var { text, .. } => text_or_hex(b, text),
    }
}

/// A read of `len` bytes at `at` that fails instead of panicking.
fn slice(page: &[u8], at: usize, len: usize) -> Option<&[u8]> {
    page.get(at..at.checked_add(len)?)
}

/// Decodes the record at `origin` with `fields`.
fn decode_record(
    page: &[u8],
    origin: usize,
    fields: &[Field],
    clustered_leaf: bool,
) -> Result<RecordInfo, String> {
    let hdr = origin
        .checked_sub(5)
        .and_then(|h| slice(page, h, 5))
        .ok_or_else(|| format!("record at {origin}: header outside the page"))?;
    let info = hdr.first().copied().unwrap_or(0);
    let hs = u16::from_be_bytes([
        hdr.get(1).copied().unwrap_or(0),
        hdr.get(2).copied().unwrap_or(0),
    ]);
    let status = hs & 7;
    let n_nullable = fields.iter().filter(|f| f.nullable).count();
    // NULL bitmap: the byte right before the header first, lowest bit first.
    let nulls_at = origin - 5; // one past the bitmap's first byte (reading backwards)
    let bitmap_bytes = n_nullable.div_ceil(8);
    let mut lens_at = nulls_at
        .checked_sub(bitmap_bytes)
        .ok_or_else(|| format!("record at {origin}: NULL bitmap outside the page"))?;
    let mut bit = 0usize;
    let mut at = origin;
    let mut out = Vec::new();
    let mut trx_id = None;
    let mut roll_ptr = None;
    for f in fields {
        if f.nullable {
            let byte_at = nulls_at - 1 - bit / 8;
            let byte = page
                .get(byte_at)
                .ok_or_else(|| format!("record at {origin}: NULL bitmap outside the page"))?;
            let is_null = byte & (1 << (bit % 8)) != 0;
            bit += 1;
            if is_null {
                out.push(FieldValue {
                    name: f.name.clone(),
                    value: "NULL".into(),
                    len: 0,
                    external: false,
                });
                continue;
            }
        }
        let (len, external) = match f.ty.fixed_len() {
            Some(n) => (n, false),
            None => {
                lens_at = lens_at
                    .checked_sub(1)
                    .ok_or_else(|| format!("record at {origin}: lengths outside the page"))?;
                let b0 = usize::from(*page.get(lens_at).ok_or("length outside the page")?);
                let big = matches!(f.ty, ColType::Var { max, .. } if max > 255);
                if big && b0 & 0x80 != 0 {
                    lens_at = lens_at
                        .checked_sub(1)
                        .ok_or_else(|| format!("record at {origin}: lengths outside the page"))?;
                    let b1 = usize::from(*page.get(lens_at).ok_or("length outside the page")?);
                    (((b0 & 0x3f) << 8) | b1, b0 & 0x40 != 0)
                } else {
                    (b0, false)
                }
            }
        };
        let bytes = slice(page, at, len).ok_or_else(|| {
            format!(
                "record at {origin}: field `{}` of {len} bytes at {at} runs past the page",
                f.name
            )
        })?;
        if clustered_leaf && f.name == "DB_TRX_ID" {
            trx_id = Some(be(bytes));
        }
        if clustered_leaf && f.name == "DB_ROLL_PTR" {
            let v = be(bytes);
            roll_ptr = Some(RollPtr {
                insert: v >> 55 & 1 == 1,
                rseg: (v >> 48 & 0x7f) as u8,
                page: (v >> 16 & 0xffff_ffff) as u32,
                offset: (v & 0xffff) as u16,
            });
        }
        let shown = if external {
            let ptr = bytes.get(len.saturating_sub(20)..).unwrap_or(&[]);
            let (space, page_no, off) = (
                ptr.get(..4).map_or(0, be),
                ptr.get(4..8).map_or(0, be),
                ptr.get(8..12).map_or(0, be),
            );
            let total = ptr.get(12..20).map_or(0, be) & 0x3fff_ffff_ffff;
            format!(
                "{} local bytes + external {total} bytes at space {space} page {page_no} offset {off}",
                len.saturating_sub(20)
            )
        } else {
            value(f.ty, bytes)
        };
        out.push(FieldValue {
            name: f.name.clone(),
            value: shown,
            len,
            external,
        });
        at += len;
    }
    Ok(RecordInfo {
        offset: origin,
        heap_no: hs >> 3,
        status: match status {
            0 => "leaf".into(),
            1 => "node_ptr".into(),
            2 => "infimum".into(),
            3 => "supremum".into(),
            s => s.to_string(),
        },
        deleted: info & 0x20 != 0,
        min_rec: info & 0x10 != 0,
        n_owned: info & 0x0f,
        fields: out,
        trx_id,
        roll_ptr,
    })
}

/// The COMPACT infimum's origin.
const INFIMUM: usize = 99;
/// The COMPACT supremum's origin.
const SUPREMUM: usize = 112;

/// Walks a COMPACT INDEX page's records from the infimum along the next pointers and decodes
/// each with `schema`; `level` picks leaf or node-pointer fields and `n_heap` bounds the walk.
pub fn decode_page(page: &[u8], schema: &Schema, level: u16, n_heap: u16) -> Records {
    let fields = if level == 0 {
        schema.leaf_fields()
    } else {
        schema.node_fields()
    };
    let clustered_leaf = level == 0 && schema.key.is_none();
    let mut records = Vec::new();
    let mut problems = Vec::new();
    let next_of = |origin: usize| -> Option<usize> {
        let b = slice(page, origin.checked_sub(2)?, 2)?;
        let rel = i16::from_be_bytes([*b.first()?, *b.get(1)?]);
        let n = (origin as i64 + i64::from(rel)).rem_euclid(page.len() as i64);
        usize::try_from(n).ok()
    };
    let mut origin = INFIMUM;
    for _ in 0..=usize::from(n_heap) {
        let Some(next) = next_of(origin) else {
            problems.push(format!("record at {origin}: next pointer outside the page"));
            break;
        };
        if next == SUPREMUM {
            return Records { records, problems };
        }
        if next < SUPREMUM + 8 || next >= page.len().saturating_sub(8) {
            problems.push(format!(
                "record at {origin}: next record {next} is outside the record heap"
            ));
            break;
        }
        match decode_record(page, next, &fields, clustered_leaf) {
            Ok(r) => records.push(r),
            Err(e) => {
                problems.push(e);
                break;
            }
        }
        origin = next;
    }
    if problems.is_empty() {
        problems.push(format!(
            "the record chain did not reach the supremum within N_HEAP = {n_heap} records"
        ));
    }
    Records { records, problems }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_columns() {
        let s = Schema::parse(
            "id:int unsigned not null, name:varchar(64)\n# comment\nk:int not null, d:date",
            None,
            None,
        )
        .unwrap();
        assert_eq!(s.cols.len(), 4);
        assert_eq!(s.pk, [0]);
        assert!(!s.cols[0].nullable && s.cols[1].nullable && !s.cols[2].nullable);
        assert_eq!(
            s.cols[0].ty,
            ColType::Int {
                bytes: 4,
                unsigned: true
            }
        );
        assert!(Schema::parse("id:decimal(5)", None, None).is_err());
        assert!(Schema::parse("id int", None, None).is_err());
        assert!(Schema::parse("id:int", Some("nope"), None).is_err());
        assert!(Schema::parse("", None, None).is_err());
    }

    #[test]
    fn values() {
        let int = ColType::Int {
            bytes: 4,
            unsigned: false,
        };
        assert_eq!(value(int, &[0x80, 0, 0, 5]), "5");
        assert_eq!(value(int, &[0x7f, 0xff, 0xff, 0xff]), "-1");
        assert_eq!(
            value(
                ColType::Int {
                    bytes: 1,
                    unsigned: true
                },
                &[200]
            ),
            "200"
        );
        // 1961-09-05: 1961 * 512 + 9 * 32 + 5, sign bit set.
        let d = (1961u32 * 512 + 9 * 32 + 5) | 0x80_0000;
        assert_eq!(value(ColType::Date, &d.to_be_bytes()[1..]), "1961-09-05");
        assert_eq!(
            value(ColType::Float { bytes: 8 }, &2.5f64.to_le_bytes()),
            "2.5"
        );
        assert_eq!(text_or_hex(b"ab", true), "ab");
        assert_eq!(text_or_hex(&[0, 1], true), "0x0001");
    }

    #[test]
    fn garbage_pages_never_panic() {
        let schema =
            Schema::parse("id:int, a:varchar(300), b:text, c:char(3)", None, None).unwrap();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for round in 0..300 {
            let mut page = vec![0u8; if round % 2 == 0 { 16384 } else { 4096 }];
            for b in page.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *b = x as u8;
            }
            for level in [0, 1] {
                let n_heap = (x % 600) as u16;
                let r = decode_page(&page, &schema, level, n_heap);
                assert!(r.records.len() <= usize::from(n_heap) + 1);
                assert!(r.records.iter().all(|rec| rec.offset < page.len()));
                // Random bytes almost never chain to the supremum: the walk says why it stopped.
                if r.records.len() > usize::from(n_heap) {
                    assert!(!r.problems.is_empty());
                }
            }
        }
        // A page too small to hold anything.
        let r = decode_page(&[0u8; 50], &schema, 0, 10);
        assert!(!r.problems.is_empty());
    }
}
