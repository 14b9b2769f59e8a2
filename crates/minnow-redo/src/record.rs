//! Redo records: what a mini-transaction did to its pages.
//!
//! minnow logs *physical* changes, as MariaDB 10.5+ does: "these bytes now sit at this offset of
//! that page", "this range was filled with one byte", "this page was initialised". Replaying a
//! physical record needs nothing but the page itself, which keeps recovery simple and
//! independent of the B-tree code. It still needs the page to be *intact*: a record writes a
//! few bytes into a page and trusts the rest of the page to be a consistent earlier version.
//! A torn page (half old, half new after a power cut) breaks that trust, and that is why the
//! doublewrite buffer exists.
//!
//! ## Encoding
//!
//! A mini-transaction's records form one **group** in the log: a 4-byte big-endian length,
//! then the records back to back. Recovery applies a group entirely or not at all, which is
//! what makes a mini-transaction atomic across a crash. Each record:
//!
//! ```text
//! type (1) | space id (varint) | page no (varint) | type-specific body
//!   1 WRITE      offset (2) | length (varint) | bytes
//!   2 MEMSET     offset (2) | length (2) | value (1)
//!   3 INIT_PAGE  (nothing: the page becomes all zeroes)
//! ```
//!
//! Varints are LEB128: 7 bits per byte, low bits first, high bit set on all but the last byte.

use minnow_page::PageId;

/// Record type byte of [`Record::Write`].
pub const WRITE: u8 = 1;
/// Record type byte of [`Record::Memset`].
pub const MEMSET: u8 = 2;
/// Record type byte of [`Record::InitPage`].
pub const INIT_PAGE: u8 = 3;

/// Size of a group's length prefix.
pub const GROUP_HEADER: usize = 4;

/// One physical change to one page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// `data` was written at `offset` of the page.
    Write {
        /// The page.
        page: PageId,
        /// Byte offset within the page.
        offset: u16,
        /// The new bytes.
        data: Vec<u8>,
    },
    /// `len` bytes at `offset` were set to `value`.
    Memset {
        /// The page.
        page: PageId,
        /// Byte offset within the page.
        offset: u16,
        /// Number of bytes.
        len: u16,
        /// The byte value.
        value: u8,
    },
    /// The page was (re)initialised to all zeroes; later records of the group fill it in.
    InitPage {
        /// The page.
        page: PageId,
    },
}

impl Record {
    /// The page this record changes.
    pub fn page(&self) -> PageId {
        match self {
            Record::Write { page, .. }
            | Record::Memset { page, .. }
            | Record::InitPage { page } => *page,
        }
    }

    /// Appends the encoding of this record to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Record::Write { page, offset, data } => put_write(out, *page, *offset, data),
            Record::Memset {
                page,
                offset,
                len,
                value,
            } => put_memset(out, *page, *offset, *len, *value),
            Record::InitPage { page } => put_head(out, INIT_PAGE, *page),
        }
    }

    /// Applies the record to `page` (the page's bytes). Fails, without changing the page, if
    /// the record reaches past the page's end.
    pub fn apply(&self, page: &mut [u8]) -> Result<(), RecordError> {
        let page_len = page.len();
        let range = |offset: u16, len: usize| {
            let start = usize::from(offset);
            start
                .checked_add(len)
                .filter(|&end| end <= page_len)
                .map(|end| start..end)
                .ok_or(RecordError::OutsidePage {
                    offset: start,
                    len,
                    page_len,
                })
        };
        match self {
            Record::Write { offset, data, .. } => {
                let r = range(*offset, data.len())?;
                if let Some(dst) = page.get_mut(r) {
                    dst.copy_from_slice(data);
                }
            }
            Record::Memset {
                offset, len, value, ..
            } => {
                let r = range(*offset, usize::from(*len))?;
                if let Some(dst) = page.get_mut(r) {
                    dst.fill(*value);
                }
            }
            Record::InitPage { .. } => page.fill(0),
        }
        Ok(())
    }
}

/// Errors decoding or applying a record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The record type byte is unknown.
    #[error("unknown redo record type {kind} at byte {at} of its group")]
    UnknownType {
        /// The type byte.
        kind: u8,
        /// Offset within the group.
        at: usize,
    },
    /// The group ends in the middle of a record.
    #[error("redo record truncated at byte {at} of its group")]
    Truncated {
        /// Offset within the group.
        at: usize,
    },
    /// A varint is longer than its type allows.
    #[error("malformed varint at byte {at} of its group")]
    BadVarint {
        /// Offset within the group.
        at: usize,
    },
    /// A record writes outside its page.
    #[error("redo record touches bytes {offset}..{offset}+{len} of a {page_len}-byte page")]
    OutsidePage {
        /// First byte.
        offset: usize,
        /// Number of bytes.
        len: usize,
        /// The page size.
        page_len: usize,
    },
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A cursor over the bytes of one group.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn u8(&mut self) -> Result<u8, RecordError> {
        let b = *self
            .bytes
            .get(self.at)
            .ok_or(RecordError::Truncated { at: self.at })?;
        self.at += 1;
        Ok(b)
    }

    fn u16(&mut self) -> Result<u16, RecordError> {
        Ok(u16::from_be_bytes([self.u8()?, self.u8()?]))
    }

    fn varint(&mut self, max: u64) -> Result<u64, RecordError> {
        let start = self.at;
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7F) << shift;
            if b & 0x80 == 0 {
                return if v <= max {
                    Ok(v)
                } else {
                    Err(RecordError::BadVarint { at: start })
                };
            }
        }
        Err(RecordError::BadVarint { at: start })
    }

    fn take(&mut self, n: usize) -> Result<&[u8], RecordError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or(RecordError::Truncated { at: self.at })?;
        let s = self
            .bytes
            .get(self.at..end)
            .ok_or(RecordError::Truncated { at: self.at })?;
        self.at = end;
        Ok(s)
    }
}

/// Decodes every record of a group body (the bytes after the length prefix).
pub fn decode_group(body: &[u8]) -> Result<Vec<Record>, RecordError> {
    let mut r = Reader { bytes: body, at: 0 };
    let mut out = Vec::new();
    while r.at < body.len() {
        let at = r.at;
        let kind = r.u8()?;
        let space = r.varint(u64::from(u32::MAX))? as u32;
        let page_no = r.varint(u64::from(u32::MAX))? as u32;
        let page = PageId::new(space, page_no);
        out.push(match kind {
            WRITE => {
                let offset = r.u16()?;
                let len = r.varint(u64::from(u16::MAX) + 1)? as usize;
                Record::Write {
                    page,
                    offset,
                    data: r.take(len)?.to_vec(),
                }
            }
            MEMSET => Record::Memset {
                page,
                offset: r.u16()?,
                len: r.u16()?,
                value: r.u8()?,
            },
            INIT_PAGE => Record::InitPage { page },
            kind => return Err(RecordError::UnknownType { kind, at }),
        });
    }
    Ok(out)
}

/// The type byte and page of a record.
fn put_head(out: &mut Vec<u8>, kind: u8, page: PageId) {
    out.push(kind);
    put_varint(out, u64::from(page.space));
    put_varint(out, u64::from(page.page_no));
}

/// The longest head a WRITE record has before its data: the type byte, two 32-bit varints,
/// the offset and a 64-bit varint length.
const WRITE_HEAD_MAX: usize = 1 + 5 + 5 + 2 + 10;

/// A record head built on the stack, so that a record costs the buffer one capacity check
/// and one copy, not one per byte (every change of every mtr comes through here).
struct Head {
    bytes: [u8; WRITE_HEAD_MAX],
    len: usize,
}

impl Head {
    fn new(kind: u8, page: PageId) -> Head {
        let mut h = Head {
            bytes: [0; WRITE_HEAD_MAX],
            len: 0,
        };
        h.push(kind);
        h.varint(u64::from(page.space));
        h.varint(u64::from(page.page_no));
        h
    }

    fn push(&mut self, b: u8) {
        if let Some(at) = self.bytes.get_mut(self.len) {
            *at = b;
            self.len += 1;
        }
    }

    /// The same bytes as [`put_varint`].
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.push(v as u8);
    }

    fn bytes(&self) -> &[u8] {
        self.bytes.get(..self.len).unwrap_or(&self.bytes)
    }
}

/// Appends a WRITE record (what [`Record::Write`] encodes to), from borrowed bytes.
fn put_write(out: &mut Vec<u8>, page: PageId, offset: u16, data: &[u8]) {
    let mut head = Head::new(WRITE, page);
    let [o0, o1] = offset.to_be_bytes();
    head.push(o0);
    head.push(o1);
    head.varint(data.len() as u64);
    let head = head.bytes();
    out.reserve(head.len() + data.len());
    out.extend_from_slice(head);
    out.extend_from_slice(data);
}

/// Appends a MEMSET record.
fn put_memset(out: &mut Vec<u8>, page: PageId, offset: u16, len: u16, value: u8) {
    put_head(out, MEMSET, page);
    out.extend_from_slice(&offset.to_be_bytes());
    out.extend_from_slice(&len.to_be_bytes());
    out.push(value);
}

/// A group encoded record by record into a buffer the caller keeps: what a mini-transaction
/// builds as it changes pages, so that no [`Record`] (and no copy of a write's bytes in a
/// `Vec` of its own) exists between the change and the log. [`GroupBuf::finish`] gives the
/// same bytes as [`encode_group`] of the same records; [`GroupBuf::clear`] keeps the buffer's
/// capacity for the next group.
#[derive(Debug, Clone, Default)]
pub struct GroupBuf {
    bytes: Vec<u8>,
    records: usize,
}

impl GroupBuf {
    /// An empty group.
    pub fn new() -> GroupBuf {
        GroupBuf::default()
    }

    fn start(&mut self) {
        if self.bytes.is_empty() {
            self.bytes.resize(GROUP_HEADER, 0);
        }
        self.records += 1;
    }

    /// Appends a WRITE record of `data` at `offset` of `page`.
    pub fn write(&mut self, page: PageId, offset: u16, data: &[u8]) {
        self.start();
        put_write(&mut self.bytes, page, offset, data);
    }

    /// Appends a MEMSET record.
    pub fn memset(&mut self, page: PageId, offset: u16, len: u16, value: u8) {
        self.start();
        put_memset(&mut self.bytes, page, offset, len, value);
    }

    /// Appends an INIT_PAGE record.
    pub fn init_page(&mut self, page: PageId) {
        self.start();
        put_head(&mut self.bytes, INIT_PAGE, page);
    }

    /// Appends `record`.
    pub fn push(&mut self, record: &Record) {
        self.start();
        record.encode(&mut self.bytes);
    }

    /// Number of records so far.
    pub fn len(&self) -> usize {
        self.records
    }

    /// True before the first record.
    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// The group's bytes, length prefix set: what [`encode_group`] returns. Empty (no prefix)
    /// for a group without records.
    pub fn finish(&mut self) -> &[u8] {
        let len = self.bytes.len().saturating_sub(GROUP_HEADER) as u32;
        if let Some(prefix) = self.bytes.get_mut(..GROUP_HEADER) {
            prefix.copy_from_slice(&len.to_be_bytes());
        }
        &self.bytes
    }

    /// Empties the group, keeping its buffer.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.records = 0;
    }

    /// Bytes the buffer holds room for.
    pub fn capacity(&self) -> usize {
        self.bytes.capacity()
    }
}

/// Encodes records as one group: the length prefix, then the records.
pub fn encode_group(records: &[Record]) -> Vec<u8> {
    let mut g = GroupBuf::new();
    if records.is_empty() {
        // The empty group still has its (zero) prefix.
        return vec![0; GROUP_HEADER];
    }
    // Sized up front (a record's encoding is its data plus at most 24 bytes of header).
    let payload: usize = records
        .iter()
        .map(|r| match r {
            Record::Write { data, .. } => data.len() + 24,
            _ => 24,
        })
        .sum();
    g.bytes.reserve(GROUP_HEADER + payload);
    for r in records {
        g.push(r);
    }
    g.finish();
    g.bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> Vec<Record> {
        vec![
            Record::InitPage {
                page: PageId::new(1, 3),
            },
            Record::Write {
                page: PageId::new(1, 3),
                offset: 38,
                data: vec![1, 2, 3],
            },
            Record::Memset {
                page: PageId::new(u32::MAX, 300),
                offset: 100,
                len: 50,
                value: 0xAB,
            },
        ]
    }

    #[test]
    fn group_round_trip() {
        let g = encode_group(&sample());
        let len = u32::from_be_bytes([g[0], g[1], g[2], g[3]]) as usize;
        assert_eq!(len, g.len() - 4);
        assert_eq!(decode_group(&g[4..]).unwrap(), sample());
    }

    #[test]
    fn group_buf_builds_the_same_bytes_and_is_reused() {
        let mut g = GroupBuf::new();
        assert!(g.is_empty());
        for round in 0..2 {
            g.init_page(PageId::new(1, 3));
            g.write(PageId::new(1, 3), 38, &[1, 2, 3]);
            g.memset(PageId::new(u32::MAX, 300), 100, 50, 0xAB);
            assert_eq!(g.len(), 3, "round {round}");
            assert_eq!(g.finish(), encode_group(&sample()).as_slice());
            let cap = g.capacity();
            g.clear();
            assert!(g.is_empty() && g.finish().is_empty());
            assert_eq!(g.capacity(), cap, "clear keeps the buffer");
        }
        assert_eq!(encode_group(&[]), vec![0; GROUP_HEADER]);
    }

    #[test]
    fn apply_changes_bytes_and_rejects_overflow() {
        let mut page = vec![9u8; 4096];
        for r in sample().iter().take(2) {
            r.apply(&mut page).unwrap();
        }
        assert_eq!(&page[36..42], &[0, 0, 1, 2, 3, 0]);
        let bad = Record::Write {
            page: PageId::new(1, 1),
            offset: 4095,
            data: vec![1, 2],
        };
        let before = page.clone();
        assert!(matches!(
            bad.apply(&mut page),
            Err(RecordError::OutsidePage { .. })
        ));
        assert_eq!(page, before);
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(matches!(
            decode_group(&[9, 1, 1]),
            Err(RecordError::UnknownType { kind: 9, at: 0 })
        ));
        assert!(matches!(
            decode_group(&[WRITE, 1, 1, 0]),
            Err(RecordError::Truncated { .. })
        ));
        assert!(matches!(
            decode_group(&[WRITE, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F]),
            Err(RecordError::BadVarint { .. })
        ));
    }

    proptest! {
        /// The stack-built head of a WRITE record: any page, offset and length (multi-byte
        /// varints included) decodes back to the record written.
        #[test]
        fn writes_round_trip_through_the_group_buffer(
            space in any::<u32>(),
            page_no in any::<u32>(),
            offset in any::<u16>(),
            data in prop::collection::vec(any::<u8>(), 0..400),
        ) {
            let page = PageId::new(space, page_no);
            let mut g = GroupBuf::new();
            g.write(page, offset, &data);
            let want = vec![Record::Write { page, offset, data: data.clone() }];
            let whole = encode_group(&want);
            prop_assert_eq!(g.finish(), whole.as_slice());
            prop_assert_eq!(decode_group(&g.finish()[GROUP_HEADER..]).unwrap(), want);
        }

        #[test]
        fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
            if let Ok(records) = decode_group(&bytes) {
                // Whatever decodes must re-encode to the same bytes' meaning.
                let g = encode_group(&records);
                prop_assert_eq!(decode_group(&g[4..]).unwrap(), records);
            }
        }
    }
}
