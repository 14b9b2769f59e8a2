//! Heap pages and heap rows: the bytes of the data file, as pure functions.
//!
//! A heap file is a sequence of 16 KiB pages. Page 0 holds the table definition
//! ([`crate::def`]); every later page holds rows, packed from the front in the order they were
//! inserted:
//!
//! ```text
//!  offset  size  field
//!       0    38  FIL header (InnoDB's offsets; type HEAP_PAGE_TYPE, LSN 0)
//!      38     2  n_rows: rows ever placed on the page (live and deleted)
//!      40     2  heap_top: offset of the first free byte (44 on an empty page)
//!      42     2  n_deleted: rows marked deleted
//!      44     .  rows, back to back:   status (1) | payload length (2) | CRC-32C of payload (4)
//!                                      | payload
//!  N - 8      8  FIL trailer (checksum, LSN low word)
//! ```
//!
//! A row is addressed by its **row id**: the byte offset of its first byte in the file, so a
//! row id names its page (`id / 16384`) and its place in the page (`id % 16384`), as MyISAM's
//! dynamic row format names a row by its file offset. A point read is one `pread` of the
//! row's longest possible size starting at the row id; the row's own CRC-32C tells a garbage
//! read from a row. Whole-page reads (full scans, writes) check the page's `crc32` checksum.
//!
//! A row's payload is its columns in table order: first a NULL bitmap (one bit per nullable
//! column, in order, 1 = NULL), then each non-NULL value's stored bytes (minnow's
//! order-preserving encoding, `minnow_btree::record`), with a 2-byte big-endian length
//! before each variable-length value.

use minnow_btree::record::{Column, ColumnType, RecordLayout, Value, decode_value};
use minnow_page::bytes::{read_u16, read_u32, write_u16};
use minnow_page::checksum::{self, ChecksumAlgorithm, ChecksumPolicy};
use minnow_page::fil::{self, FilHeader};
use minnow_page::{PageError, PageType};

/// Size of every heap page.
pub const PAGE_SIZE: usize = 16 * 1024;
/// The FIL page type of a row page (in minnow's own range 0x4D00..=0x4DFF: InnoDB has no heap pages).
pub const HEAP_PAGE_TYPE: u16 = 0x4D48; // "MH"
/// The FIL page type of page 0, the definition page.
pub const HEAP_HEADER_TYPE: u16 = 0x4D44; // "MD"
/// The space id stamped in heap pages (heap files are outside minnow's tablespaces).
pub const HEAP_SPACE_ID: u32 = 0xFFFF_FFF0;
/// Offset of `n_rows`.
pub const N_ROWS: usize = fil::HEADER_SIZE;
/// Offset of `heap_top`.
pub const HEAP_TOP: usize = fil::HEADER_SIZE + 2;
/// Offset of `n_deleted`.
pub const N_DELETED: usize = fil::HEADER_SIZE + 4;
/// Offset of the first row on a page.
pub const DATA_START: usize = fil::HEADER_SIZE + 6;
/// Where rows must end: the FIL trailer.
pub const DATA_END: usize = PAGE_SIZE - fil::TRAILER_SIZE;
/// Bytes of a row's header: status, payload length, CRC-32C.
pub const ROW_HEADER: usize = 7;
/// Status byte of a live row.
pub const LIVE: u8 = 0xA1;
/// Status byte of a deleted row.
pub const DELETED: u8 = 0xD1;

/// What is wrong with a page or row; [`crate::HeapError::Corrupt`] adds file, page and offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// What was expected there.
    pub expected: String,
    /// What was found.
    pub actual: String,
}

impl Damage {
    fn new(expected: impl Into<String>, actual: impl Into<String>) -> Damage {
        Damage {
            expected: expected.into(),
            actual: actual.into(),
        }
    }
}

impl From<PageError> for Damage {
    fn from(e: PageError) -> Damage {
        Damage::new("fields inside the page", e.to_string())
    }
}

/// A fresh, empty row page `page_no` (checksum not yet stamped).
pub fn new_page(page_no: u32) -> Result<Vec<u8>, PageError> {
    let mut p = vec![0u8; PAGE_SIZE];
    FilHeader::new(HEAP_SPACE_ID, page_no, PageType::from_u16(HEAP_PAGE_TYPE)).write(&mut p)?;
    write_u16(&mut p, HEAP_TOP, DATA_START as u16)?;
    Ok(p)
}

/// Stamps the page's `crc32` checksum, as every write does just before the bytes go out.
pub fn stamp(page: &mut [u8]) -> Result<(), PageError> {
    checksum::stamp(page, ChecksumAlgorithm::Crc32)
}

/// Checks a page read from the file: its checksum, its number, its type, and that its
/// header fields fit. Returns `heap_top`.
pub fn verify(page: &[u8], page_no: u32, page_type: u16) -> Result<usize, Damage> {
    let policy = ChecksumPolicy {
        algorithm: ChecksumAlgorithm::Crc32,
        strict: true,
    };
    match checksum::verify(page, policy) {
        Ok(checksum::Verdict::Valid(_)) => {}
        Ok(other) => return Err(Damage::new("a written page", format!("{other:?}"))),
        Err(e) => return Err(Damage::new("a valid crc32 checksum", e.to_string())),
    }
    let h = FilHeader::read(page)?;
    if h.page_no != page_no {
        return Err(Damage::new(
            format!("page number {page_no}"),
            format!("page number {}", h.page_no),
        ));
    }
    if h.page_type.to_u16() != page_type {
        return Err(Damage::new(
            format!("page type {page_type:#06x}"),
            format!("page type {:#06x}", h.page_type.to_u16()),
        ));
    }
    if page_type != HEAP_PAGE_TYPE {
        return Ok(DATA_START);
    }
    let top = usize::from(read_u16(page, HEAP_TOP)?);
    if !(DATA_START..=DATA_END).contains(&top) {
        return Err(Damage::new(
            format!("heap_top in {DATA_START}..={DATA_END}"),
            format!("heap_top {top}"),
        ));
    }
    Ok(top)
}

/// Appends a row's bytes (header and payload) to a page if they fit; returns the offset
/// in the page where the row starts.
pub fn append(page: &mut [u8], payload: &[u8]) -> Result<Option<usize>, PageError> {
    let top = usize::from(read_u16(page, HEAP_TOP)?);
    let end = top + ROW_HEADER + payload.len();
    if end > DATA_END {
        return Ok(None);
    }
    let row = minnow_page::bytes::slice_mut(page, top, ROW_HEADER + payload.len())?;
    let (head, body) = row.split_at_mut(ROW_HEADER);
    body.copy_from_slice(payload);
    head[0] = LIVE;
    head[1..3].copy_from_slice(&(payload.len() as u16).to_be_bytes());
    head[3..7].copy_from_slice(&crc32c::crc32c(payload).to_be_bytes());
    write_u16(page, HEAP_TOP, end as u16)?;
    let n = read_u16(page, N_ROWS)?;
    write_u16(page, N_ROWS, n.saturating_add(1))?;
    Ok(Some(top))
}

/// Marks the row at `offset` deleted (its bytes stay; the space is not reused).
pub fn mark_deleted(page: &mut [u8], offset: usize) -> Result<(), Damage> {
    let status = page
        .get(offset)
        .copied()
        .ok_or_else(|| Damage::new("a row inside the page", format!("offset {offset}")))?;
    if status != LIVE {
        return Err(Damage::new(
            format!("live row status {LIVE:#04x}"),
            format!("{status:#04x}"),
        ));
    }
    if let Some(b) = page.get_mut(offset) {
        *b = DELETED;
    }
    let n = read_u16(page, N_DELETED)?;
    write_u16(page, N_DELETED, n.saturating_add(1))?;
    Ok(())
}

/// Reads the row that starts at `bytes[0]`: its status and payload, checked against the
/// row's CRC-32C. `bytes` may run past the row's end.
pub fn row_at(bytes: &[u8]) -> Result<(u8, &[u8]), Damage> {
    let status = *bytes
        .first()
        .ok_or_else(|| Damage::new("a row header", "nothing"))?;
    if status != LIVE && status != DELETED {
        return Err(Damage::new(
            format!("row status {LIVE:#04x} or {DELETED:#04x}"),
            format!("{status:#04x}"),
        ));
    }
    let len = usize::from(read_u16(bytes, 1)?);
    let crc = read_u32(bytes, 3)?;
    let payload = bytes
        .get(ROW_HEADER..ROW_HEADER + len)
        .ok_or_else(|| Damage::new(format!("{len} payload bytes"), "a shorter read"))?;
    let actual = crc32c::crc32c(payload);
    if actual != crc {
        return Err(Damage::new(
            format!("row CRC-32C {crc:#010x}"),
            format!("{actual:#010x}"),
        ));
    }
    Ok((status, payload))
}

/// Every row on a verified page, in place order: `(offset in page, status, payload)`.
pub fn rows(page: &[u8], top: usize) -> impl Iterator<Item = Result<(usize, u8, &[u8]), Damage>> {
    let mut at = DATA_START;
    let mut failed = false;
    std::iter::from_fn(move || {
        if failed || at >= top {
            return None;
        }
        let r = page
            .get(at..top)
            .ok_or_else(|| Damage::new("a row below heap_top", format!("offset {at}")))
            .and_then(row_at);
        match r {
            Ok((status, payload)) => {
                let here = at;
                at += ROW_HEADER + payload.len();
                Some(Ok((here, status, payload)))
            }
            Err(e) => {
                failed = true;
                Some(Err(e))
            }
        }
    })
}

/// How the columns of one table are stored in a row payload.
#[derive(Debug, Clone)]
pub struct RowFormat {
    columns: Vec<Column>,
    /// minnow's field encoder for the same columns (validates kinds, widths and UTF-8).
    layout: RecordLayout,
    n_nullable: usize,
}

impl RowFormat {
    /// The format for `columns`. BLOB and TEXT are refused (a heap row lives on one page).
    pub fn new(columns: Vec<Column>) -> Result<RowFormat, String> {
        if columns.iter().any(|c| c.ty.is_lob()) {
            return Err("BLOB and TEXT columns are not supported in heap tables".into());
        }
        let layout = RecordLayout::secondary(columns.clone()).map_err(|e| e.to_string())?;
        let n_nullable = columns.iter().filter(|c| c.nullable).count();
        let f = RowFormat {
            columns,
            layout,
            n_nullable,
        };
        if ROW_HEADER + f.max_payload() > DATA_END - DATA_START {
            return Err(format!(
                "a row of up to {} bytes does not fit a heap page",
                f.max_payload()
            ));
        }
        Ok(f)
    }

    /// The longest payload a row can have.
    pub fn max_payload(&self) -> usize {
        self.n_nullable.div_ceil(8)
            + self
                .columns
                .iter()
                .map(|c| c.ty.max_len() + if c.ty.fixed_len().is_none() { 2 } else { 0 })
                .sum::<usize>()
    }

    /// Encodes a row (one value per column). The error names the column position.
    pub fn encode(&self, row: &[Value]) -> Result<Vec<u8>, (usize, String)> {
        if row.len() != self.columns.len() {
            return Err((
                row.len(),
                format!("expected {} values, got {}", self.columns.len(), row.len()),
            ));
        }
        let nb = self.n_nullable.div_ceil(8);
        let mut out = vec![0u8; nb];
        let mut null_i = 0;
        for (i, (v, c)) in row.iter().zip(&self.columns).enumerate() {
            let stored = self
                .layout
                .encode_field(i, v)
                .map_err(|e| (i, e.to_string()))?;
            if c.nullable {
                if stored.is_none()
                    && let Some(b) = out.get_mut(null_i / 8)
                {
                    *b |= 1 << (null_i % 8);
                }
                null_i += 1;
            }
            let Some(bytes) = stored else {
                if !c.nullable {
                    return Err((i, "NULL in a NOT NULL column".into()));
                }
                continue;
            };
            if c.ty.fixed_len().is_none() {
                out.extend_from_slice(&(bytes.len() as u16).to_be_bytes());
            }
            out.extend_from_slice(&bytes);
        }
        Ok(out)
    }

    /// Decodes the columns `want` (positions, in the order wanted) of a payload. Columns not
    /// wanted are stepped over without building values.
    pub fn decode(&self, payload: &[u8], want: &[usize]) -> Result<Vec<Value>, Damage> {
        let nb = self.n_nullable.div_ceil(8);
        let nulls = payload
            .get(..nb)
            .ok_or_else(|| Damage::new(format!("{nb} NULL-bitmap bytes"), "a shorter payload"))?;
        let mut at = nb;
        let mut null_i = 0;
        let mut got: Vec<Option<Value>> = vec![None; self.columns.len()];
        let last = want.iter().copied().max();
        for (i, c) in self.columns.iter().enumerate() {
            if last.is_none_or(|l| i > l) {
                break;
            }
            let mut is_null = false;
            if c.nullable {
                is_null = nulls
                    .get(null_i / 8)
                    .is_some_and(|b| b & (1 << (null_i % 8)) != 0);
                null_i += 1;
            }
            if is_null {
                got[i] = Some(Value::Null);
                continue;
            }
            let len = match c.ty.fixed_len() {
                Some(n) => n,
                None => {
                    let n = usize::from(read_u16(payload, at)?);
                    at += 2;
                    n
                }
            };
            let b = payload.get(at..at + len).ok_or_else(|| {
                Damage::new(
                    format!("{len} bytes of column {i} at payload offset {at}"),
                    format!("a {}-byte payload", payload.len()),
                )
            })?;
            at += len;
            if want.contains(&i) {
                let v = decode_value(c.ty, b)
                    .map_err(|e| Damage::new(format!("a {:?} value in column {i}", c.ty), e))?;
                got[i] = Some(v);
            }
        }
        want.iter()
            .map(|&i| {
                got.get_mut(i)
                    .and_then(Option::take)
                    .ok_or_else(|| Damage::new(format!("column {i}"), "a payload without it"))
            })
            .collect()
    }

    /// The column types, in table order.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// True if a column of type `ty` is variable-length in a payload.
    pub fn is_var(ty: ColumnType) -> bool {
        ty.fixed_len().is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt() -> RowFormat {
        RowFormat::new(vec![
            Column::new(ColumnType::U32),
            Column::nullable(ColumnType::Var(10)),
            Column::new(ColumnType::Date),
        ])
        .unwrap()
    }

    #[test]
    fn row_roundtrip_and_projection() {
        let f = fmt();
        let row = vec![
            Value::UInt(7),
            Value::Null,
            Value::date(2001, 2, 3).unwrap(),
        ];
        let p = f.encode(&row).unwrap();
        assert_eq!(f.decode(&p, &[0, 1, 2]).unwrap(), row);
        assert_eq!(
            f.decode(&p, &[2, 0]).unwrap(),
            vec![row[2].clone(), row[0].clone()]
        );
        let row2 = vec![Value::UInt(8), Value::text("abc"), row[2].clone()];
        let p2 = f.encode(&row2).unwrap();
        assert_eq!(f.decode(&p2, &[1]).unwrap(), vec![Value::text("abc")]);
        assert!(f.encode(&[Value::UInt(1)]).is_err());
        assert!(
            f.encode(&[Value::Null, Value::Null, row[2].clone()])
                .is_err()
        );
    }

    #[test]
    fn page_append_verify_delete() {
        let f = fmt();
        let mut p = new_page(3).unwrap();
        let payload = f
            .encode(&[
                Value::UInt(1),
                Value::text("x"),
                Value::date(2000, 1, 1).unwrap(),
            ])
            .unwrap();
        let a = append(&mut p, &payload).unwrap().unwrap();
        let b = append(&mut p, &payload).unwrap().unwrap();
        assert_eq!(a, DATA_START);
        assert_eq!(b, DATA_START + ROW_HEADER + payload.len());
        mark_deleted(&mut p, b).unwrap();
        assert!(mark_deleted(&mut p, b).is_err());
        stamp(&mut p).unwrap();
        let top = verify(&p, 3, HEAP_PAGE_TYPE).unwrap();
        let all: Vec<_> = rows(&p, top).collect::<Result<_, _>>().unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!((all[0].1, all[1].1), (LIVE, DELETED));
        assert!(verify(&p, 4, HEAP_PAGE_TYPE).is_err());
        p[a + ROW_HEADER] ^= 1;
        assert!(verify(&p, 3, HEAP_PAGE_TYPE).is_err());
        assert!(row_at(&p[a..]).is_err());
    }

    #[test]
    fn page_fills_up() {
        let mut p = new_page(1).unwrap();
        let payload = vec![0u8; 1000];
        let mut n = 0;
        while append(&mut p, &payload).unwrap().is_some() {
            n += 1;
        }
        assert_eq!(n, (DATA_END - DATA_START) / (ROW_HEADER + 1000));
    }

    #[test]
    fn garbage_never_panics() {
        let f = fmt();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..2000 {
            let len = (x % 64) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            let _ = row_at(&bytes);
            let _ = f.decode(&bytes, &[0, 1, 2]);
        }
    }
}
