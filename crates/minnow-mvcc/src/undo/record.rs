//! Undo records and undo log headers: the bytes, and their encoding and decoding.
//!
//! Both live in the undo stream (see the parent module) and start with their total length,
//! so a reader can gather a record that continues on the next undo page.
//!
//! ```text
//! undo record (kind 1 insert, 2 update, 3 delete-mark), all integers big-endian
//! (kind 4 marks the unfinished start of a long record, see `FILLER` below)
//!  0  u32  total length (43 + fields)
//!  4  u8   kind
//!  5  u8   flags: bit 0 = the old record was delete-marked
//!  6  u64  undo number (0, 1, 2, ... within the transaction)
//! 14  u64  index id of the clustered index (the table)
//! 22  u48  the old record's DB_TRX_ID
//! 28  u56  the old record's DB_ROLL_PTR
//! 35  u32  previous record of the same log: page (0 = none)
//! 39  u16  previous record of the same log: offset
//! 41  u16  field count n
//! 43       n fields: u32 length (0xFFFF_FFFF = NULL), then the stored bytes
//!
//! insert:             the fields are the primary key (the row is removed on rollback)
//! update:             the fields are the whole old record without DB_TRX_ID and DB_ROLL_PTR
//!                     (key fields first, then the other columns), off-page columns included
//! delete-mark:        the primary key alone (a delete-mark changes no field: the older
//!                     version is the record's fields with the old system columns); one
//!                     written by an older build holds the whole old record, as an update's
//!
//! undo log header (kind 0), 48 bytes, never split across pages
//!  0  u32  48
//!  4  u8   0
//!  5  u8   state: 1 active, 2 committed, 3 rolled back, 4 purged
//!  6  u8   type: 1 insert (only insert records so far), 2 update
//!  7  u8   0
//!  8  u64  transaction id
//! 16  u64  transaction number (commit order; 0 until committed)
//! 24  u32  last record: page (0 = no record)        28  u16  last record: offset
//! 30  u64  records written (the next undo number)
//! 38  u32  next log in the history list: page        42  u16  offset
//! 44  u32  0
//! ```

use std::cell::Cell;

use crate::roll_ptr::RollPtr;

/// Bytes of an undo record before its fields.
pub const RECORD_HEADER_LEN: usize = 43;
/// Bytes of an undo log header.
pub const LOG_HEADER_LEN: usize = 48;
/// The kind byte of a **filler**: the first pieces of a record longer than a page are written
/// one mini-transaction each, with this kind and a length covering only the bytes written so
/// far; the last piece writes the real length and kind. A crash in between leaves a filler,
/// which a walk of the stream steps over and nothing points at.
pub const FILLER: u8 = 4;
/// The kind byte of a log header.
pub const HEADER_KIND: u8 = 0;

/// The length of a NULL field.
const NULL_LEN: u32 = u32::MAX;

/// Where something is in the undo stream: a page and a byte offset in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UndoAddr {
    /// The undo page.
    pub page: u32,
    /// The byte offset in the page.
    pub offset: u16,
}

impl UndoAddr {
    /// `None` for the null address (page 0).
    pub fn non_null(page: u32, offset: u16) -> Option<UndoAddr> {
        (page != 0).then_some(UndoAddr { page, offset })
    }
}

/// What an undo record undoes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UndoKind {
    /// An insert: undone by removing the record. Needed only for rollback, never by a reader.
    Insert,
    /// An update in place (including an insert over a delete-marked record): undone by
    /// restoring the old values, system columns and delete mark.
    Update,
    /// A delete (the delete mark): undone like an update.
    DeleteMark,
}

impl UndoKind {
    fn code(self) -> u8 {
        match self {
            UndoKind::Insert => 1,
            UndoKind::Update => 2,
            UndoKind::DeleteMark => 3,
        }
    }

    fn from_code(c: u8) -> Option<UndoKind> {
        match c {
            1 => Some(UndoKind::Insert),
            2 => Some(UndoKind::Update),
            3 => Some(UndoKind::DeleteMark),
            _ => None,
        }
    }
}

/// The fields of an undo record as the record stores them (each a u32 length, `0xFFFF_FFFF`
/// for NULL, then the bytes), in one buffer: what a writer fills straight from the stored
/// bytes of a clustered record, with no allocation per field, and can clear and fill again
/// for its next record. [`crate::TrxSys::append`] copies them after the record's header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UndoFields {
    bytes: Vec<u8>,
    n: usize,
    /// The first field that could not be stored (4 GiB or longer): reported when the record
    /// is encoded.
    too_long: Option<usize>,
}

impl UndoFields {
    /// No fields.
    pub fn new() -> UndoFields {
        UndoFields::default()
    }

    /// Removes every field, keeping the buffer.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.n = 0;
        self.too_long = None;
    }

    /// Appends a field: its stored bytes, `None` for NULL.
    pub fn push(&mut self, field: Option<&[u8]>) {
        self.push_with(|out| {
            if let Some(b) = field {
                out.extend_from_slice(b);
            }
            Ok::<_, std::convert::Infallible>(field.is_some())
        })
        .unwrap_or_else(|never| match never {});
    }

    /// Appends a field whose bytes `fill` appends to the buffer it is given, returning false
    /// for NULL (and then appending nothing): a value encoded in place, with no buffer of its
    /// own. On an error nothing is appended.
    pub fn push_with<E>(
        &mut self,
        fill: impl FnOnce(&mut Vec<u8>) -> Result<bool, E>,
    ) -> Result<(), E> {
        let at = self.bytes.len();
        self.bytes.extend_from_slice(&NULL_LEN.to_be_bytes());
        match fill(&mut self.bytes) {
            Ok(true) => {
                let len = self.bytes.len() - at - 4;
                match u32::try_from(len).ok().filter(|&l| l != NULL_LEN) {
                    Some(l) => {
                        if let Some(slot) = self.bytes.get_mut(at..at + 4) {
                            slot.copy_from_slice(&l.to_be_bytes());
                        }
                    }
                    None => {
                        self.bytes.truncate(at + 4);
                        self.too_long.get_or_insert(len);
                    }
                }
            }
            Ok(false) => self.bytes.truncate(at + 4),
            Err(e) => {
                self.bytes.truncate(at);
                return Err(e);
            }
        }
        self.n += 1;
        Ok(())
    }

    /// Runs `f` with this thread's reusable field buffer, emptied: a writer fills it for one
    /// record, appends the record, and the next record finds the buffer with its capacity.
    /// A call nested inside `f` on the same thread gets a new, empty buffer.
    pub fn with_scratch<R>(f: impl FnOnce(&mut UndoFields) -> R) -> R {
        let mut buf = SCRATCH.try_with(Cell::take).unwrap_or_default();
        buf.clear();
        let r = f(&mut buf);
        if buf.bytes.capacity() <= 64 * 1024 {
            let _ = SCRATCH.try_with(|c| c.set(buf));
        }
        r
    }

    /// The fields of a list of stored fields (`None` for NULL).
    pub fn from_fields(fields: &[Option<Vec<u8>>]) -> UndoFields {
        let mut out = UndoFields::new();
        for f in fields {
            out.push(f.as_deref());
        }
        out
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        self.n
    }

    /// True without fields.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The encoded fields, as they follow the record's header.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// An undo record's header: everything but its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RecordHead {
    pub(crate) kind: UndoKind,
    pub(crate) old_deleted: bool,
    pub(crate) undo_no: u64,
    pub(crate) index_id: u64,
    pub(crate) old_trx_id: u64,
    pub(crate) old_roll_ptr: RollPtr,
    pub(crate) prev: Option<UndoAddr>,
}

impl RecordHead {
    /// Replaces `out` with the record of this header and `fields`; an error if a field is
    /// 4 GiB or longer, there are more than 65535 fields or the record reaches 4 GiB.
    pub(crate) fn encode_into(&self, fields: &UndoFields, out: &mut Vec<u8>) -> Result<(), String> {
        if let Some(len) = fields.too_long {
            return Err(format!("a field of {len} bytes"));
        }
        let n = u16::try_from(fields.len())
            .map_err(|_| format!("{} fields (at most 65535)", fields.len()))?;
        let total = RECORD_HEADER_LEN + fields.as_bytes().len();
        let total32 = u32::try_from(total).map_err(|_| format!("{total} bytes (at most 4 GiB)"))?;
        out.clear();
        out.reserve(total);
        out.extend_from_slice(&total32.to_be_bytes());
        out.push(self.kind.code());
        out.push(u8::from(self.old_deleted));
        out.extend_from_slice(&self.undo_no.to_be_bytes());
        out.extend_from_slice(&self.index_id.to_be_bytes());
        out.extend_from_slice(&self.old_trx_id.to_be_bytes()[2..]);
        out.extend_from_slice(&self.old_roll_ptr.to_u64().to_be_bytes()[1..]);
        put_addr(out, self.prev);
        out.extend_from_slice(&n.to_be_bytes());
        out.extend_from_slice(fields.as_bytes());
        Ok(())
    }
}

thread_local! {
    /// Each thread's [`UndoFields::with_scratch`] buffer.
    static SCRATCH: Cell<UndoFields> = const {
        Cell::new(UndoFields {
            bytes: Vec::new(),
            n: 0,
            too_long: None,
        })
    };
}

/// One undo record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndoRecord {
    /// What it undoes.
    pub kind: UndoKind,
    /// True if the old record was delete-marked (an insert over a deleted row).
    pub old_deleted: bool,
    /// The undo number: the record's position in its transaction (a savepoint is one).
    pub undo_no: u64,
    /// The clustered index the change was made to.
    pub index_id: u64,
    /// The old record's `DB_TRX_ID` (0 for an insert).
    pub old_trx_id: u64,
    /// The old record's `DB_ROLL_PTR` ([`RollPtr::NONE`] for an insert).
    pub old_roll_ptr: RollPtr,
    /// The transaction's previous undo record.
    pub prev: Option<UndoAddr>,
    /// Insert: the primary key fields. Update and delete-mark: every field of the old record
    /// except `DB_TRX_ID` and `DB_ROLL_PTR`, as stored bytes (`None` for NULL).
    pub fields: Vec<Option<Vec<u8>>>,
}

/// A state of an undo log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LogState {
    /// The transaction is running (or was, when the power went).
    Active,
    /// The transaction committed.
    Committed,
    /// The transaction was rolled back to its start.
    RolledBack,
    /// A committed log purge has finished with: out of the history list, nothing in it is
    /// needed any more (its space may be reused).
    Purged,
}

/// An undo log header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogHeader {
    /// The log's state.
    pub state: LogState,
    /// True once the log holds an update or delete-mark record (InnoDB's update undo, kept
    /// for readers until purge); false while it holds only inserts (insert undo, needed only
    /// for rollback).
    pub update: bool,
    /// The transaction.
    pub trx_id: u64,
    /// The commit number (0 until committed).
    pub trx_no: u64,
    /// The newest record still to be undone on rollback. In an active log's header it may
    /// be an older record of the log: appends write it only now and then, and the newest
    /// is found from it by [`crate::undo::chain::newest_record`].
    pub last: Option<UndoAddr>,
    /// Records written: the next undo number (as of `last`, like it).
    pub n_recs: u64,
    /// The next (newer) log in the history list.
    pub history_next: Option<UndoAddr>,
}

/// Why some bytes do not decode: the byte offset (relative to the record's start), what was
/// expected and what was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// Offset in the record.
    pub at: usize,
    /// What was expected.
    pub expected: String,
    /// What was found.
    pub found: String,
}

fn bad(at: usize, expected: impl Into<String>, found: impl Into<String>) -> DecodeError {
    DecodeError {
        at,
        expected: expected.into(),
        found: found.into(),
    }
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], DecodeError> {
        let s = self
            .at
            .checked_add(n)
            .and_then(|end| self.b.get(self.at..end))
            .ok_or_else(|| {
                bad(
                    self.at,
                    format!("{n} more bytes"),
                    format!("{} left", self.b.len().saturating_sub(self.at)),
                )
            })?;
        self.at += n;
        Ok(s)
    }

    fn uint(&mut self, n: usize) -> Result<u64, DecodeError> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |acc, &x| (acc << 8) | u64::from(x)))
    }

    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.uint(1)? as u8)
    }
    fn u16(&mut self) -> Result<u16, DecodeError> {
        Ok(self.uint(2)? as u16)
    }
    fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(self.uint(4)? as u32)
    }
    fn u64(&mut self) -> Result<u64, DecodeError> {
        self.uint(8)
    }
    fn addr(&mut self) -> Result<Option<UndoAddr>, DecodeError> {
        let page = self.u32()?;
        let offset = self.u16()?;
        Ok(UndoAddr::non_null(page, offset))
    }
}

fn put_addr(out: &mut Vec<u8>, a: Option<UndoAddr>) {
    let a = a.unwrap_or(UndoAddr { page: 0, offset: 0 });
    out.extend_from_slice(&a.page.to_be_bytes());
    out.extend_from_slice(&a.offset.to_be_bytes());
}

/// The total length a record claims: its first four bytes.
pub fn claimed_len(b: &[u8]) -> Result<usize, DecodeError> {
    Ok(Reader { b, at: 0 }.u32()? as usize)
}

impl UndoRecord {
    /// Encodes the record; an error if a field is 4 GiB or longer or there are more than
    /// 65535 fields.
    pub fn encode(&self) -> Result<Vec<u8>, String> {
        let head = RecordHead {
            kind: self.kind,
            old_deleted: self.old_deleted,
            undo_no: self.undo_no,
            index_id: self.index_id,
            old_trx_id: self.old_trx_id,
            old_roll_ptr: self.old_roll_ptr,
            prev: self.prev,
        };
        let mut out = Vec::new();
        head.encode_into(&UndoFields::from_fields(&self.fields), &mut out)?;
        Ok(out)
    }

    /// Decodes a whole record (exactly its claimed length).
    pub fn decode(b: &[u8]) -> Result<UndoRecord, DecodeError> {
        let mut r = Reader { b, at: 0 };
        let len = r.u32()? as usize;
        if len != b.len() || len < RECORD_HEADER_LEN {
            return Err(bad(
                0,
                format!(
                    "a record length of at least {RECORD_HEADER_LEN} matching the bytes ({})",
                    b.len()
                ),
                len.to_string(),
            ));
        }
        let code = r.u8()?;
        let kind = UndoKind::from_code(code)
            .ok_or_else(|| bad(4, "record kind 1, 2 or 3", code.to_string()))?;
        let flags = r.u8()?;
        if flags > 1 {
            return Err(bad(5, "flags 0 or 1", flags.to_string()));
        }
        let undo_no = r.u64()?;
        let index_id = r.u64()?;
        let old_trx_id = r.uint(6)?;
        let old_roll_ptr = RollPtr::from_u64(r.uint(7)?);
        let prev = r.addr()?;
        let n = r.u16()?;
        let mut fields = Vec::with_capacity(usize::from(n).min(1024));
        for _ in 0..n {
            let at = r.at;
            let l = r.u32()?;
            if l == NULL_LEN {
                fields.push(None);
            } else {
                let v = r.take(l as usize).map_err(|e| DecodeError { at, ..e })?;
                fields.push(Some(v.to_vec()));
            }
        }
        if r.at != b.len() {
            return Err(bad(
                r.at,
                "the end of the record",
                format!("{} more bytes", b.len() - r.at),
            ));
        }
        Ok(UndoRecord {
            kind,
            old_deleted: flags == 1,
            undo_no,
            index_id,
            old_trx_id,
            old_roll_ptr,
            prev,
            fields,
        })
    }
}

impl LogState {
    fn code(self) -> u8 {
        match self {
            LogState::Active => 1,
            LogState::Committed => 2,
            LogState::RolledBack => 3,
            LogState::Purged => 4,
        }
    }
}

impl LogHeader {
    /// A new, active header for transaction `trx_id`.
    pub fn new(trx_id: u64) -> LogHeader {
        LogHeader {
            state: LogState::Active,
            update: false,
            trx_id,
            trx_no: 0,
            last: None,
            n_recs: 0,
            history_next: None,
        }
    }

    /// The 48 bytes.
    pub fn encode(&self) -> [u8; LOG_HEADER_LEN] {
        let mut out = Vec::with_capacity(LOG_HEADER_LEN);
        out.extend_from_slice(&(LOG_HEADER_LEN as u32).to_be_bytes());
        out.push(0);
        out.push(self.state.code());
        out.push(if self.update { 2 } else { 1 });
        out.push(0);
        out.extend_from_slice(&self.trx_id.to_be_bytes());
        out.extend_from_slice(&self.trx_no.to_be_bytes());
        put_addr(&mut out, self.last);
        out.extend_from_slice(&self.n_recs.to_be_bytes());
        put_addr(&mut out, self.history_next);
        out.extend_from_slice(&[0; 4]);
        let mut a = [0; LOG_HEADER_LEN];
        a.copy_from_slice(&out);
        a
    }

    /// Decodes a header from (at least) its 48 bytes.
    pub fn decode(b: &[u8]) -> Result<LogHeader, DecodeError> {
        let mut r = Reader { b, at: 0 };
        let len = r.u32()?;
        if len as usize != LOG_HEADER_LEN {
            return Err(bad(
                0,
                format!("log header length {LOG_HEADER_LEN}"),
                len.to_string(),
            ));
        }
        let kind = r.u8()?;
        if kind != 0 {
            return Err(bad(4, "log header kind 0", kind.to_string()));
        }
        let state = match r.u8()? {
            1 => LogState::Active,
            2 => LogState::Committed,
            3 => LogState::RolledBack,
            4 => LogState::Purged,
            s => return Err(bad(5, "log state 1, 2, 3 or 4", s.to_string())),
        };
        let update = match r.u8()? {
            1 => false,
            2 => true,
            t => return Err(bad(6, "log type 1 (insert) or 2 (update)", t.to_string())),
        };
        r.u8()?;
        Ok(LogHeader {
            state,
            update,
            trx_id: r.u64()?,
            trx_no: r.u64()?,
            last: r.addr()?,
            n_recs: r.u64()?,
            history_next: r.addr()?,
        })
    }
}

/// Offsets of the fields of a log header that change in place.
pub(crate) mod hdr {
    /// Kind byte (0 for a header).
    pub const KIND: usize = 4;
    /// State byte.
    pub const STATE: usize = 5;
    /// Type byte.
    pub const TYPE: usize = 6;
    /// Commit number.
    pub const TRX_NO: usize = 16;
    /// Last record address (6 bytes).
    pub const LAST: usize = 24;
    /// Records written.
    pub const N_RECS: usize = 30;
    /// History next (6 bytes).
    pub const HISTORY_NEXT: usize = 38;
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> UndoRecord {
        UndoRecord {
            kind: UndoKind::Update,
            old_deleted: true,
            undo_no: 7,
            index_id: 42,
            old_trx_id: 0x0102_0304_0506,
            old_roll_ptr: RollPtr {
                insert: false,
                rseg: 0,
                page: 9,
                offset: 100,
            },
            prev: Some(UndoAddr {
                page: 9,
                offset: 60,
            }),
            fields: vec![Some(b"key".to_vec()), None, Some(vec![0; 300])],
        }
    }

    #[test]
    fn record_round_trips_with_its_documented_layout() {
        let r = sample();
        let b = r.encode().unwrap();
        assert_eq!(b.len(), RECORD_HEADER_LEN + 4 + 3 + 4 + 4 + 300);
        assert_eq!(claimed_len(&b).unwrap(), b.len());
        assert_eq!(b[4], 2);
        assert_eq!(b[5], 1);
        assert_eq!(&b[22..28], &[1, 2, 3, 4, 5, 6]);
        assert_eq!(UndoRecord::decode(&b).unwrap(), r);
    }

    #[test]
    fn fields_filled_in_place_encode_like_owned_fields() {
        let r = sample();
        let mut f = UndoFields::new();
        f.push(Some(b"stale"));
        f.clear();
        f.push(Some(b"key"));
        f.push_with(|_| Ok::<_, ()>(false)).unwrap();
        assert_eq!(
            f.push_with(|out| {
                out.push(1);
                Err("refused")
            }),
            Err("refused")
        );
        f.push_with(|out| {
            out.resize(out.len() + 300, 0);
            Ok::<_, ()>(true)
        })
        .unwrap();
        assert_eq!(f, UndoFields::from_fields(&r.fields));
        assert_eq!(f.len(), 3);
        let head = RecordHead {
            kind: r.kind,
            old_deleted: r.old_deleted,
            undo_no: r.undo_no,
            index_id: r.index_id,
            old_trx_id: r.old_trx_id,
            old_roll_ptr: r.old_roll_ptr,
            prev: r.prev,
        };
        let mut out = vec![9; 7];
        head.encode_into(&f, &mut out).unwrap();
        assert_eq!(out, r.encode().unwrap());
        assert_eq!(UndoRecord::decode(&out).unwrap(), r);
    }

    #[test]
    fn header_round_trips() {
        let mut h = LogHeader::new(77);
        h.update = true;
        h.state = LogState::Committed;
        h.trx_no = 80;
        h.last = Some(UndoAddr {
            page: 5,
            offset: 200,
        });
        h.n_recs = 3;
        h.history_next = Some(UndoAddr {
            page: 6,
            offset: 44,
        });
        let b = h.encode();
        assert_eq!(b[hdr::STATE], 2);
        assert_eq!(b[hdr::TYPE], 2);
        assert_eq!(LogHeader::decode(&b).unwrap(), h);
    }

    #[test]
    fn truncated_and_bad_records_are_errors() {
        let b = sample().encode().unwrap();
        for cut in 0..b.len() {
            assert!(UndoRecord::decode(&b[..cut]).is_err());
        }
        let mut k = b.clone();
        k[4] = 9;
        let e = UndoRecord::decode(&k).unwrap_err();
        assert_eq!((e.at, e.found.as_str()), (4, "9"));
        let mut f = b.clone();
        f[41] = 0xFF; // field count far too large
        assert!(UndoRecord::decode(&f).is_err());
    }

    proptest! {
        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = UndoRecord::decode(&bytes);
            let _ = LogHeader::decode(&bytes);
            let _ = claimed_len(&bytes);
        }

        #[test]
        fn mutated_records_never_panic(i in 0usize..400, x in any::<u8>()) {
            let mut b = sample().encode().unwrap();
            let n = b.len();
            b[i % n] ^= x;
            let _ = UndoRecord::decode(&b);
        }
    }
}
