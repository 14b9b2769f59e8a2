//! The dictionary record's value: a small versioned binary encoding of a [`TableMeta`] (the
//! definition, each index's id and root page, the compression setting), written by
//! [`encode`] and read back, checked, by [`decode`]; [`decode_table_indexes`] is the same
//! decoding for read-only tools.

use minnow_btree::record::{ColumnType, RecordLayout};

use super::*;

const FORMAT_VERSION: u8 = 1;

/// The tag of the optional compression trailer of a dictionary value (see [`encode`]).
pub(super) const COMPRESSION_TAG: u8 = 1;

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
pub fn encode(m: &TableMeta) -> Vec<u8> {
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
pub fn decode(name: &str, b: &[u8]) -> Result<TableMeta> {
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
    /// The tablespace holding the tree: the system tablespace (`inspect::SYSTEM_SPACE_ID`),
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
