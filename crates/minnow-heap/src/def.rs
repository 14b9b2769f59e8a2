//! Page 0 of a heap file: the table definition.
//!
//! ```text
//!  offset  size  field
//!       0    38  FIL header (type HEAP_HEADER_TYPE, page 0)
//!      38     8  magic "MNHEAP01"
//!      46     2  length L of the definition
//!      48     L  the definition (below)
//!  N - 8      8  FIL trailer
//! ```
//!
//! The definition: the table name; the column count (2 bytes) and per column its name, a type
//! code (1 byte), the type's length parameter (2 bytes: CHAR/VARCHAR width, else 0) and flags
//! (bit 0 nullable, bit 1 AUTO_INCREMENT); the primary key's column count (1 byte) and column
//! positions (2 bytes each); the index count (1 byte) and per index its name, a unique flag
//! (1 byte), its column count (1 byte) and positions (2 bytes each). A name is a 1-byte length
//! and its bytes. All integers big-endian.

use minnow::{ColumnDef, ColumnType, IndexDef, TableDef};

use crate::page::{DATA_END, HEAP_HEADER_TYPE, HEAP_SPACE_ID};
use minnow_page::PageType;
use minnow_page::fil::{self, FilHeader};

/// The magic at offset 38 of page 0.
pub const MAGIC: &[u8; 8] = b"MNHEAP01";

fn put_name(out: &mut Vec<u8>, s: &str) {
    let b = s.as_bytes();
    let n = b.len().min(255);
    out.push(n as u8);
    out.extend_from_slice(b.get(..n).unwrap_or_default());
}

fn positions(def: &TableDef, names: &[String]) -> Vec<u16> {
    names
        .iter()
        .map(|n| def.column_index(n).unwrap_or(usize::MAX) as u16)
        .collect()
}

/// Page 0 for `def` (checksum not yet stamped). The caller has validated `def` (every
/// named column exists, names fit 64 bytes); an error if the definition does not fit a page.
pub fn encode_page(def: &TableDef) -> Result<Vec<u8>, String> {
    let mut d = Vec::new();
    put_name(&mut d, &def.name);
    d.extend_from_slice(&(def.columns.len() as u16).to_be_bytes());
    for c in &def.columns {
        put_name(&mut d, &c.name);
        let (code, n) = ColumnType::code(c.ty);
        d.push(code);
        d.extend_from_slice(&n.to_be_bytes());
        d.push(u8::from(c.nullable) | (u8::from(c.auto_increment) << 1));
    }
    let pk = positions(def, &def.primary_key);
    d.push(pk.len() as u8);
    for p in pk {
        d.extend_from_slice(&p.to_be_bytes());
    }
    d.push(def.indexes.len() as u8);
    for i in &def.indexes {
        put_name(&mut d, &i.name);
        d.push(u8::from(i.unique));
        let cols = positions(def, &i.columns);
        d.push(cols.len() as u8);
        for p in cols {
            d.extend_from_slice(&p.to_be_bytes());
        }
    }
    if 48 + d.len() > DATA_END {
        return Err(format!("a {}-byte definition does not fit page 0", d.len()));
    }
    let mut page = vec![0u8; crate::page::PAGE_SIZE];
    FilHeader::new(HEAP_SPACE_ID, 0, PageType::from_u16(HEAP_HEADER_TYPE))
        .write(&mut page)
        .map_err(|e| e.to_string())?;
    let at = fil::HEADER_SIZE;
    page[at..at + 8].copy_from_slice(MAGIC);
    page[at + 8..at + 10].copy_from_slice(&(d.len() as u16).to_be_bytes());
    page[at + 10..at + 10 + d.len()].copy_from_slice(&d);
    Ok(page)
}

/// A cursor over the definition bytes; every read is checked.
struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let s = self.b.get(self.at..self.at + n).ok_or_else(|| {
            format!(
                "{n} bytes at definition offset {}, past its end ({})",
                self.at,
                self.b.len()
            )
        })?;
        self.at += n;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, String> {
        let s = self.take(2)?;
        Ok(u16::from_be_bytes([s[0], s[1]]))
    }
    fn name(&mut self) -> Result<String, String> {
        let n = usize::from(self.u8()?);
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| "a name that is not UTF-8".into())
    }
    fn cols(&mut self, def: &TableDef) -> Result<Vec<String>, String> {
        let n = self.u8()?;
        (0..n)
            .map(|_| {
                let p = usize::from(self.u16()?);
                def.columns
                    .get(p)
                    .map(|c| c.name.clone())
                    .ok_or_else(|| format!("column position {p} of {}", def.columns.len()))
            })
            .collect()
    }
}

/// Decodes the definition from page 0's bytes (the page's checksum already verified).
/// The error says what was expected where.
pub fn decode_page(page: &[u8]) -> Result<TableDef, String> {
    let at = fil::HEADER_SIZE;
    let magic = page
        .get(at..at + 8)
        .ok_or("a page shorter than its header")?;
    if magic != MAGIC {
        return Err(format!("magic {MAGIC:?}, found {magic:?}"));
    }
    let len = page
        .get(at + 8..at + 10)
        .map(|s| usize::from(u16::from_be_bytes([s[0], s[1]])))
        .ok_or("a definition length")?;
    let b = page
        .get(at + 10..at + 10 + len)
        .ok_or_else(|| format!("a {len}-byte definition inside the page"))?;
    let mut r = Reader { b, at: 0 };
    let mut def = TableDef::new(r.name()?);
    for _ in 0..r.u16()? {
        let name = r.name()?;
        let code = r.u8()?;
        let n = r.u16()?;
        let ty =
            ColumnType::from_code(code, n).ok_or_else(|| format!("a type code, found {code}"))?;
        let flags = r.u8()?;
        let mut c = if flags & 1 != 0 {
            ColumnDef::nullable(name, ty)
        } else {
            ColumnDef::new(name, ty)
        };
        if flags & 2 != 0 {
            c = c.auto_increment();
        }
        def = def.column(c);
    }
    def.primary_key = r.cols(&def)?;
    for _ in 0..r.u8()? {
        let name = r.name()?;
        let unique = r.u8()? != 0;
        let columns = r.cols(&def)?;
        def.indexes.push(IndexDef {
            name,
            columns,
            unique,
        });
    }
    Ok(def)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definition_roundtrip_and_garbage() {
        let def = TableDef::new("t")
            .column(ColumnDef::new("id", ColumnType::U32).auto_increment())
            .column(ColumnDef::nullable("v", ColumnType::Var(20)))
            .column(ColumnDef::new("d", ColumnType::Date))
            .primary_key(&["id"])
            .index(IndexDef::unique("by_v", &["v", "d"]));
        let page = encode_page(&def).unwrap();
        assert_eq!(decode_page(&page).unwrap(), def);
        for cut in 0..80 {
            let mut p = page.clone();
            p[fil::HEADER_SIZE + cut] ^= 0x5A;
            let _ = decode_page(&p);
        }
        assert!(decode_page(&[0u8; 10]).is_err());
    }
}
