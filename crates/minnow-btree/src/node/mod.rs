//! INDEX pages: one B-tree node inside one page's bytes.
//!
//! A B-tree node holds records sorted by key. InnoDB (and minnow, following it) does not keep
//! them in a sorted array, which would mean moving half the page on every insert. Instead:
//!
//! ```text
//!  0     38        94       120                      heap_top            N-8-2s      N-8  N
//!  +-----+---------+--------+---------------------------+-----------------+--------+----+
//!  | FIL | page    | inf    | record heap: records in   |   free space    | page   |FIL |
//!  | hdr | header  | + sup  | insertion order, linked   |                 | dir    |trl |
//!  |     |         |        | in key order              |                 | (s     |    |
//!  +-----+---------+--------+---------------------------+-----------------+ slots) +----+
//! ```
//!
//! ## The record heap
//!
//! Records are appended where the heap ends (`PAGE_HEAP_TOP`), in whatever order they arrive,
//! and each gets the next **heap number** (`PAGE_N_HEAP` counts them). Key order is kept by a
//! singly linked list: every record header holds the offset of the next record in key order.
//! The list starts at the **infimum**, a fake record smaller than any key (origin 99), and ends
//! at the **supremum**, larger than any key (origin 112). Both are written once by [`init`]:
//! `01 00 02 00 0d 'infimum\0' 01 00 0b 00 00 'supremum'` (the infimum's next is +13 on an empty
//! page, +0x1c and more once records exist). Inserting is then: copy the record to the heap,
//! point the predecessor at it, point it at the successor. Nothing else moves.
//!
//! ## Deleting, and the free list
//!
//! A deleted record is unlinked from the key-order list and pushed on the **free list**
//! (`PAGE_FREE` is its head; deleted records link through their own next fields). Its bytes
//! count as `PAGE_GARBAGE`. The next insert whose record fits in the space of the record at the
//! head of the free list reuses that space (and its heap number), so a page with steady
//! delete/insert traffic does not run out of heap. Space lost to fragmentation (a short record
//! reusing a long record's slot) stays counted in the garbage until [`reorganize`] rewrites the
//! page compactly in key order.
//!
//! ## The sparse page directory, and what "owned" means
//!
//! A linked list alone would make search linear. The **page directory** at the end of the page
//! is an array of 2-byte slots, in key order, each pointing at one record. The records are cut
//! into consecutive *groups*; the last record of each group is its **owner**, the slot points at
//! the owner, and the owner's header says how many records it owns (`n_owned`, itself
//! included); every other record has `n_owned = 0`. The infimum alone forms the first group;
//! the supremum owns the last one. Groups hold 4 to 8 records (the first and last may hold
//! fewer). Only one slot per 4-8 records means the directory is **sparse**: it costs about half
//! a byte per record instead of two, and an insert usually changes one `n_owned` byte instead
//! of shifting the whole directory. When a group would reach 9 records it is split in two (4 and
//! 5) and a slot is inserted; when a deletion leaves fewer than 4, the group borrows a record
//! from the next group or merges with it.
//!
//! ## Search: binary search over slots, then a short walk
//!
//! To find the last record `<= key`, [`search`] first binary-searches the slots, comparing the
//! key with each slot's owner record, until it has two adjacent slots `low` and `up` with
//! `owner(low) <= key < owner(up)`. The answer is in `up`'s group, at most 8 records, which it
//! walks along the next pointers. On the way it counts how many leading fields matched the
//! records just below and above the key (`low_match`, `up_match`): every record between them
//! shares at least `min(low_match, up_match)` leading fields with the key, so those fields are
//! skipped in later comparisons. The adaptive hash index uses these counts as well.
//!
//! ## The page header
//!
//! The header fields are InnoDB's, at InnoDB's offsets (see [`minnow_page::index`]);
//! `PAGE_LAST_INSERT`, `PAGE_DIRECTION` and `PAGE_N_DIRECTION` remember where the last insert
//! went and whether inserts are running ascending or descending, which [`split_point`] uses to
//! split at the insert point instead of the middle, so that sequential loads fill pages.
//!
//! Every change goes through [`PageMut`] so the caller can redo-log it; every read is checked,
//! and [`check`] validates all of the above without panicking on garbage.

mod check;
mod modify;
pub(crate) mod racy;
mod reorg;
mod trx_bound;

pub use check::{CheckError, check};
pub(crate) use modify::stamp_sys_at;
pub use modify::{delete, insert, insert_at, set_delete_mark, stamp_sys};
pub use reorg::{
    SplitAt, SplitKind, SplitPoint, fill_factor, fits, fits_after_reorganize, free_space,
    max_record_len, move_records_before_to, move_records_to, reorganize, split_point, used_bytes,
};
pub use trx_bound::{carry_trx_id, cover_trx_id, exact_max_trx_id};
pub(crate) use trx_bound::{record_trx_id, trx_id_of};

use std::cmp::Ordering;

use minnow_page::index::{PAGE_DATA, PAGE_HEADER};
use minnow_page::{PageError, PageSize, bytes};

use crate::PageMut;
use crate::record::{
    HEADER_SIZE, INFO_MIN_REC, RecStatus, RecordError, RecordHeader, RecordLayout, SearchKey,
};

/// Origin of the infimum record.
pub const INFIMUM: usize = 99;
/// Origin of the supremum record.
pub const SUPREMUM: usize = 112;
/// First byte after the supremum: where the user record heap starts.
pub const SUPREMUM_END: usize = 120;
/// Fewest records a directory group (other than the first and last) owns.
pub const DIR_SLOT_MIN_N_OWNED: u8 = 4;
/// Most records a directory group owns.
pub const DIR_SLOT_MAX_N_OWNED: u8 = 8;

/// `PAGE_DIRECTION` values.
pub(crate) const DIR_LEFT: u16 = 1;
pub(crate) const DIR_RIGHT: u16 = 2;
pub(crate) const DIR_NONE: u16 = 5;

/// Bytes 94..120 of a fresh page: the infimum and supremum records.
const INF_SUP: [u8; 26] = [
    0x01, 0x00, 0x02, 0x00, 0x0d, b'i', b'n', b'f', b'i', b'm', b'u', b'm', 0x00, // infimum
    0x01, 0x00, 0x0b, 0x00, 0x00, b's', b'u', b'p', b'r', b'e', b'm', b'u', b'm', // supremum
];

/// Errors from node-page operations.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeError {
    /// A field outside the page, or a page of an unsupported size.
    #[error(transparent)]
    Page(#[from] PageError),
    /// A record could not be decoded.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The page contradicts itself.
    #[error("corrupt INDEX page at offset {at}: {what}")]
    Corrupt {
        /// Offset of the offending structure.
        at: usize,
        /// What is wrong.
        what: &'static str,
    },
    /// Not enough room on the page.
    #[error("page full: {needed} bytes needed, {available} available")]
    PageFull {
        /// Bytes the operation needs.
        needed: usize,
        /// Bytes available.
        available: usize,
    },
    /// The record is larger than [`max_record_len`] for this page size (it would need its long
    /// columns moved to overflow pages, which are not implemented yet).
    #[error("record of {len} bytes exceeds the {max}-byte maximum for this page size")]
    RecordTooBig {
        /// The record's size.
        len: usize,
        /// The maximum.
        max: usize,
    },
    /// A record equal in every key field already exists.
    #[error("duplicate key: the record at {at} has the same key")]
    Duplicate {
        /// Origin of the existing record.
        at: usize,
    },
    /// A cursor that cannot be used for this operation.
    #[error("cursor at {at} is invalid here: {what}")]
    BadCursor {
        /// The cursor's origin.
        at: usize,
        /// Why.
        what: &'static str,
    },
    /// The record's kind (leaf or node pointer) does not match the page level.
    #[error("record status {status:?} does not belong on a level-{level} page")]
    WrongKind {
        /// The record's status.
        status: RecStatus,
        /// The page level.
        level: u16,
    },
    /// Only a course lab's starter code returns this: a function of lab 4 (a B+tree leaf)
    /// that the student has not written yet. docs/labs/ has the handout.
    #[error(transparent)]
    NotWritten(#[from] minnow_page::lab::NotWritten),
}

/// A position on a page: the origin of a record (possibly the infimum or supremum).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Cursor(usize);

impl Cursor {
    /// The infimum, before every user record.
    pub const INFIMUM: Cursor = Cursor(INFIMUM);
    /// The supremum, after every user record.
    pub const SUPREMUM: Cursor = Cursor(SUPREMUM);

    /// A cursor at the record whose origin is `origin` (not validated until used).
    pub fn at(origin: usize) -> Cursor {
        Cursor(origin)
    }

    /// The record origin.
    pub fn origin(self) -> usize {
        self.0
    }

    /// True at the infimum.
    pub fn is_infimum(self) -> bool {
        self.0 == INFIMUM
    }

    /// True at the supremum.
    pub fn is_supremum(self) -> bool {
        self.0 == SUPREMUM
    }

    /// True at a user record.
    pub fn is_user(self) -> bool {
        !self.is_infimum() && !self.is_supremum()
    }
}

/// The result of [`search`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchResult {
    /// The last record `<= key` (the infimum if there is none): insert after it.
    pub cursor: Cursor,
    /// The first record `> key` (the supremum if there is none).
    pub up: Cursor,
    /// Leading fields of the key that match `cursor`'s record.
    pub low_match: usize,
    /// Leading fields of the key that match `up`'s record.
    pub up_match: usize,
    /// True if `cursor` is a user record equal to the key in all of the key's fields.
    pub exact: bool,
}

/// The mutable part of the page header, bytes 38..56.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hdr {
    pub n_slots: u16,
    pub heap_top: u16,
    pub n_heap: u16,
    pub free: u16,
    pub garbage: u16,
    pub last_insert: u16,
    pub direction: u16,
    pub n_direction: u16,
    pub n_recs: u16,
}

impl Hdr {
    pub fn read(page: &[u8]) -> Result<Hdr, NodeError> {
        let f = |i: usize| bytes::read_u16(page, PAGE_HEADER + 2 * i);
        Ok(Hdr {
            n_slots: f(0)?,
            heap_top: f(1)?,
            n_heap: f(2)? & 0x7FFF,
            free: f(3)?,
            garbage: f(4)?,
            last_insert: f(5)?,
            direction: f(6)?,
            n_direction: f(7)?,
            n_recs: f(8)?,
        })
    }

    pub fn to_bytes(self) -> [u8; 18] {
        let v = [
            self.n_slots,
            self.heap_top,
            self.n_heap | 0x8000,
            self.free,
            self.garbage,
            self.last_insert,
            self.direction,
            self.n_direction,
            self.n_recs,
        ];
        let mut out = [0u8; 18];
        for (chunk, x) in out.chunks_exact_mut(2).zip(v) {
            chunk.copy_from_slice(&x.to_be_bytes());
        }
        out
    }

    /// Writes the header, as one write spanning only the bytes that differ from the page.
    pub fn store<P: PageMut + ?Sized>(self, p: &mut P) -> Result<(), NodeError> {
        p.write_changed(PAGE_HEADER, &self.to_bytes())?;
        Ok(())
    }

    /// Lowest byte used by the page directory.
    pub fn dir_start(&self, page_len: usize) -> usize {
        page_len.saturating_sub(8 + 2 * usize::from(self.n_slots))
    }
}

/// The page length, if it is a supported page size.
pub(crate) fn page_len(page: &[u8]) -> Result<usize, NodeError> {
    PageSize::from_bytes(page.len())?;
    Ok(page.len())
}

/// Address of directory slot `i`.
pub(crate) fn slot_addr(page_len: usize, i: usize) -> usize {
    page_len.saturating_sub(10 + 2 * i)
}

/// The record that directory slot `i` points at.
pub(crate) fn slot(page: &[u8], i: usize) -> Result<usize, NodeError> {
    Ok(usize::from(bytes::read_u16(
        page,
        slot_addr(page.len(), i),
    )?))
}

pub(crate) fn rec_header(page: &[u8], origin: usize) -> Result<RecordHeader, NodeError> {
    Ok(RecordHeader::read(page, origin)?)
}

/// The next record in the list, which must lie inside the record area.
pub(crate) fn next_of(page: &[u8], origin: usize) -> Result<usize, NodeError> {
    let next = rec_header(page, origin)?
        .next(origin)
        .ok_or(NodeError::Corrupt {
            at: origin,
            what: "the list ends before the supremum",
        })?;
    if !(INFIMUM..page.len()).contains(&next) {
        return Err(NodeError::Corrupt {
            at: origin,
            what: "next pointer outside the record area",
        });
    }
    Ok(next)
}

/// Writes the `n_owned` nibble of a record, keeping its info bits.
pub(crate) fn set_n_owned<P: PageMut + ?Sized>(
    p: &mut P,
    origin: usize,
    n: u8,
) -> Result<(), NodeError> {
    let at = origin.checked_sub(5).ok_or(NodeError::BadCursor {
        at: origin,
        what: "no room for a record header",
    })?;
    let b = bytes::slice(p.bytes(), at, 1)?
        .first()
        .copied()
        .unwrap_or(0);
    p.write(at, &[(b & 0xF0) | (n & 0x0F)])?;
    Ok(())
}

/// Formats `page` as an empty INDEX page of `index_id` at B-tree `level` (0 for leaves). The
/// FIL header and trailer are left alone (the caller stamps the page type); the page header,
/// FSEG headers, infimum, supremum and the two directory slots are written.
pub fn init<P: PageMut + ?Sized>(p: &mut P, index_id: u64, level: u16) -> Result<(), NodeError> {
    let n = page_len(p.bytes())?;
    let mut head = [0u8; PAGE_DATA - PAGE_HEADER + INF_SUP.len()];
    let h = Hdr {
        n_slots: 2,
        heap_top: SUPREMUM_END as u16,
        n_heap: 2,
        free: 0,
        garbage: 0,
        last_insert: 0,
        direction: DIR_NONE,
        n_direction: 0,
        n_recs: 0,
    };
    head.get_mut(..18)
        .unwrap_or_default()
        .copy_from_slice(&h.to_bytes());
    let fixed = [
        (26, level.to_be_bytes().to_vec()),
        (28, index_id.to_be_bytes().to_vec()),
    ];
    for (at, v) in fixed {
        head.get_mut(at..at + v.len())
            .unwrap_or_default()
            .copy_from_slice(&v);
    }
    // PAGE_MAX_TRX_ID's top byte: an empty page has no delete-marked record.
    if let Some(b) = head.get_mut(MAX_TRX_ID - PAGE_HEADER) {
        *b = NO_DELETE_MARKS;
    }
    head.get_mut(56..)
        .unwrap_or_default()
        .copy_from_slice(&INF_SUP);
    p.write(PAGE_HEADER, &head)?;
    // Zero the heap (old contents would confuse a reader of the dump) and the directory.
    p.memset(SUPREMUM_END, n - 8 - 4 - SUPREMUM_END, 0)?;
    let mut dir = [0u8; 4];
    dir[..2].copy_from_slice(&(SUPREMUM as u16).to_be_bytes());
    dir[2..].copy_from_slice(&(INFIMUM as u16).to_be_bytes());
    p.write(n - 12, &dir)?;
    Ok(())
}

/// Offset of `PAGE_MAX_TRX_ID` (8 bytes, page header + 18).
pub const MAX_TRX_ID: usize = PAGE_HEADER + 18;

/// The bits of the 8-byte `PAGE_MAX_TRX_ID` field that hold the transaction id: the low 48, a
/// `DB_TRX_ID`'s width. The top byte holds minnow's page flags ([`NO_DELETE_MARKS`]).
pub const TRX_ID_BITS: u64 = (1 << 48) - 1;

/// Page flag in the top byte of `PAGE_MAX_TRX_ID` (byte 56): set, no record on the page's
/// record list is delete-marked, so a reader that trusts the page's writers (its
/// `PAGE_MAX_TRX_ID` below the view's up limit) may count its records from `PAGE_N_RECS`
/// without visiting them (`tree::count`). Clear means *unknown*, which is what every page
/// written before the flag existed holds (InnoDB writes 0 there).
///
/// Kept where records get their delete marks or move, in the change's own mini-transaction
/// (so redo carries it): [`init`] sets it (an empty page), [`insert_at`] clears it for a
/// delete-marked record, [`set_delete_mark`] (and so [`stamp_sys`]) clears it when it marks,
/// a rebuild ([`reorganize`], and the moves of a split or merge) sets it exactly from the
/// records it writes, a bulk-built page keeps it unless it took a delete-marked record, and a
/// page left without records gets it back. Removing records keeps it true, so purge leaves it
/// clear until the page is next rebuilt. [`check`] refuses a page whose flag is set while a
/// record is delete-marked.
pub const NO_DELETE_MARKS: u8 = 0x80;

/// `PAGE_MAX_TRX_ID`: on a secondary-index leaf, at least the id of every transaction that
/// changed a record on the page (0 if none did); on a clustered leaf 0 (unknown) or at least
/// the `DB_TRX_ID` of every record on the page (see the `trx_bound` module: [`cover_trx_id`]);
/// node pages keep whatever they had. A consistent read whose view sees every id below it may
/// trust the page's records as they are (see `minnow_mvcc::ReadView::sees_page`). The field's
/// low 48 bits ([`TRX_ID_BITS`]); its top byte holds flags ([`NO_DELETE_MARKS`]).
pub fn max_trx_id(page: &[u8]) -> Result<u64, NodeError> {
    Ok(bytes::read_u64(page, MAX_TRX_ID)? & TRX_ID_BITS)
}

/// Writes `trx_id` (its low 48 bits) into `PAGE_MAX_TRX_ID`, keeping the flags in the field's
/// top byte; one write of the bytes that differ, or none.
pub(crate) fn store_max_trx_id<P: PageMut + ?Sized>(
    p: &mut P,
    trx_id: u64,
) -> Result<(), NodeError> {
    let flags = bytes::read_u64(p.bytes(), MAX_TRX_ID)? & !TRX_ID_BITS;
    p.write_changed(MAX_TRX_ID, &(flags | (trx_id & TRX_ID_BITS)).to_be_bytes())?;
    Ok(())
}

/// True if the page's [`NO_DELETE_MARKS`] flag is set: no record on its list is
/// delete-marked.
pub fn no_delete_marks(page: &[u8]) -> Result<bool, NodeError> {
    let b = bytes::slice(page, MAX_TRX_ID, 1)?;
    Ok(b.first().is_some_and(|f| f & NO_DELETE_MARKS != 0))
}

/// Sets (`true`) or clears the page's [`NO_DELETE_MARKS`] flag; a 1-byte write, or none if
/// it already says so.
pub fn set_no_delete_marks<P: PageMut + ?Sized>(p: &mut P, none: bool) -> Result<(), NodeError> {
    set_bits(p, MAX_TRX_ID, NO_DELETE_MARKS, none)
}

/// Sets (`on`) or clears the bits `mask` of the byte at `at`; a 1-byte write, or none if they
/// already are.
pub(crate) fn set_bits<P: PageMut + ?Sized>(
    p: &mut P,
    at: usize,
    mask: u8,
    on: bool,
) -> Result<(), NodeError> {
    let b = bytes::slice(p.bytes(), at, 1)?
        .first()
        .copied()
        .unwrap_or(0);
    let nb = if on { b | mask } else { b & !mask };
    if nb != b {
        p.write(at, &[nb])?;
    }
    Ok(())
}

/// Raises `PAGE_MAX_TRX_ID` to `trx_id` if it is below it (InnoDB's `page_update_max_trx_id`:
/// the value never goes down); one write, or none. Returns true if it wrote.
pub fn raise_max_trx_id<P: PageMut + ?Sized>(p: &mut P, trx_id: u64) -> Result<bool, NodeError> {
    if max_trx_id(p.bytes())? >= trx_id & TRX_ID_BITS {
        return Ok(false);
    }
    store_max_trx_id(p, trx_id)?;
    Ok(true)
}

/// The B-tree level of the page (0 for leaves).
pub fn level(page: &[u8]) -> Result<u16, NodeError> {
    Ok(bytes::read_u16(page, PAGE_HEADER + 26)?)
}

/// The index id of the page.
pub fn index_id(page: &[u8]) -> Result<u64, NodeError> {
    Ok(bytes::read_u64(page, PAGE_HEADER + 28)?)
}

/// Bytes of deleted records still in the heap (`PAGE_GARBAGE`): reclaimed by a reorganize.
pub fn garbage(page: &[u8]) -> Result<usize, NodeError> {
    Ok(usize::from(Hdr::read(page)?.garbage))
}

/// Number of user records on the page (`PAGE_N_RECS`).
pub fn n_recs(page: &[u8]) -> Result<usize, NodeError> {
    // The one field, not the whole header: the hash's bookkeeping asks at every descent.
    Ok(usize::from(bytes::read_u16(page, PAGE_HEADER + 16)?))
}

/// The end of the record heap (`PAGE_HEAP_TOP`): no record starts at or after it.
pub fn heap_top(page: &[u8]) -> Result<usize, NodeError> {
    Ok(usize::from(bytes::read_u16(page, PAGE_HEADER + 2)?))
}

/// The header of the record at `cursor`.
pub fn header_at(page: &[u8], cursor: Cursor) -> Result<RecordHeader, NodeError> {
    rec_header(page, cursor.origin())
}

/// The record after `cursor` in key order (the supremum after the last user record).
pub fn next(page: &[u8], cursor: Cursor) -> Result<Cursor, NodeError> {
    if cursor.is_supremum() {
        return Err(NodeError::BadCursor {
            at: SUPREMUM,
            what: "nothing follows the supremum",
        });
    }
    next_of(page, cursor.origin()).map(Cursor)
}

/// Compares a key with the record at `origin` through `cmp`, treating the infimum, the
/// supremum and a MIN_REC node pointer as smaller/larger than every key. Only the two header
/// bytes it needs are read: the info bits (`origin - 5`) and the status (`origin - 3`).
#[inline]
fn cmp_rec<F>(
    page: &[u8],
    layout: &RecordLayout,
    origin: usize,
    skip: usize,
    cmp: &F,
) -> Result<(Ordering, usize), NodeError>
where
    F: Fn(usize, usize) -> Result<(Ordering, usize), RecordError>,
{
    match origin {
        INFIMUM => return Ok((Ordering::Greater, 0)),
        SUPREMUM => return Ok((Ordering::Less, 0)),
        _ => {}
    }
    let info = origin
        .checked_sub(HEADER_SIZE)
        .and_then(|at| page.get(at))
        .copied();
    let status = origin.checked_sub(3).and_then(|at| page.get(at)).copied();
    let (Some(info), Some(status)) = (info, status) else {
        return Err(NodeError::Corrupt {
            at: origin,
            what: "record header outside the page",
        });
    };
    if info & INFO_MIN_REC != 0 {
        return Ok((Ordering::Greater, 0));
    }
    if status & 7 != layout.status().bits() {
        return Err(NodeError::Corrupt {
            at: origin,
            what: "record status does not match the layout",
        });
    }
    Ok(cmp(origin, skip)?)
}

/// Finds where `key` belongs: the last record `<= key` and the first record `> key`, by binary
/// search over the directory slots and a walk of at most one group.
pub fn search(
    page: &[u8],
    layout: &RecordLayout,
    key: &SearchKey,
) -> Result<SearchResult, NodeError> {
    search_mode(page, layout, key, false)
}

/// Like [`search`], but finds the last record *strictly below* `key` (the infimum if there is
/// none) and the first record `>= key`. With a key of fewer fields than the index key (a
/// prefix), `search` lands after every record that starts with the prefix and
/// `search_before` before all of them: InnoDB's `PAGE_CUR_LE` and `PAGE_CUR_L` modes. Range
/// scans use it to start at the first record of a prefix.
pub fn search_before(
    page: &[u8],
    layout: &RecordLayout,
    key: &SearchKey,
) -> Result<SearchResult, NodeError> {
    search_mode(page, layout, key, true)
}

/// [`search`] (`strict` false: equal records go low) or [`search_before`] (`strict` true:
/// equal records go up), comparing a fixed-width key flattened where the layout allows.
fn search_mode(
    page: &[u8],
    layout: &RecordLayout,
    key: &SearchKey,
    strict: bool,
) -> Result<SearchResult, NodeError> {
    match layout.flat_key(key) {
        Some(flat) => search_by(page, layout, key.len(), strict, |origin, _| {
            flat.compare(page, origin)
        }),
        None => search_by(page, layout, key.len(), strict, |origin, skip| {
            layout.compare(key, page, origin, skip)
        }),
    }
}

/// [`search_mode`] with the comparison of the key against a record given as
/// `cmp(origin, skip)`.
fn search_by<F>(
    page: &[u8],
    layout: &RecordLayout,
    key_len: usize,
    strict: bool,
    cmp: F,
) -> Result<SearchResult, NodeError>
where
    F: Fn(usize, usize) -> Result<(Ordering, usize), RecordError>,
{
    // lab 4 begin: search_by
    // lab 4 starter: let _ = (page, layout, key_len, strict, cmp); Err(minnow_page::lab::NotWritten::new(4, "search_by").into())
    let goes_up = |ord: Ordering| ord == Ordering::Less || (strict && ord == Ordering::Equal);
    let n = usize::from(bytes::read_u16(page, PAGE_HEADER)?); // PAGE_N_DIR_SLOTS
    let max_slots = page_len(page)?.saturating_sub(SUPREMUM_END + 8) / 2;
    if n < 2 || n > max_slots {
        return Err(NodeError::Corrupt {
            at: PAGE_HEADER,
            what: "bad number of directory slots",
        });
    }
    let (mut low, mut up) = (0usize, n - 1);
    let (mut low_match, mut up_match) = (0usize, 0usize);
    while up - low > 1 {
        let mid = low + (up - low) / 2;
        let (ord, m) = cmp_rec(
            page,
            layout,
            slot(page, mid)?,
            low_match.min(up_match),
            &cmp,
        )?;
        if goes_up(ord) {
            (up, up_match) = (mid, m);
        } else {
            (low, low_match) = (mid, m);
        }
    }
    let mut low_rec = slot(page, low)?;
    let up_limit = slot(page, up)?;
    let mut rec = next_of(page, low_rec)?;
    let mut steps = 0usize;
    let up_rec = loop {
        if rec == up_limit {
            break rec;
        }
        steps += 1;
        if steps > usize::from(DIR_SLOT_MAX_N_OWNED) * 2 || rec == SUPREMUM {
            return Err(NodeError::Corrupt {
                at: rec,
                what: "directory group does not lead to its owner",
            });
        }
        let (ord, m) = cmp_rec(page, layout, rec, low_match.min(up_match), &cmp)?;
        if goes_up(ord) {
            up_match = m;
            break rec;
        }
        (low_rec, low_match) = (rec, m);
        rec = next_of(page, rec)?;
    };
    let exact = !strict && low_rec != INFIMUM && low_match == key_len && {
        let h = rec_header(page, low_rec)?;
        h.info_bits & INFO_MIN_REC == 0
    };
    Ok(SearchResult {
        cursor: Cursor(low_rec),
        up: Cursor(up_rec),
        low_match,
        up_match,
        exact,
    })
    // lab 4 end
}

/// Iterates over the user records in key order (delete-marked ones included).
pub fn records(page: &[u8]) -> Records<'_> {
    let limit = Hdr::read(page).map_or(0, |h| usize::from(h.n_heap));
    Records {
        page,
        at: Some(INFIMUM),
        left: limit,
    }
}

/// Like [`records`], but from the record after `cursor` on (after the infimum: every record;
/// after the supremum: none). Bounded by the heap size as [`records`] is, so a cycle in the
/// record list is an error, not an endless walk.
pub fn records_after(page: &[u8], cursor: Cursor) -> Records<'_> {
    let mut r = records(page);
    r.at = (!cursor.is_supremum()).then_some(cursor.origin());
    r
}

/// Iterator returned by [`records`]: yields each user record's cursor, or an error (once) if
/// the list is broken.
#[derive(Debug)]
pub struct Records<'p> {
    page: &'p [u8],
    at: Option<usize>,
    left: usize,
}

impl Iterator for Records<'_> {
    type Item = Result<Cursor, NodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        let at = self.at?;
        match step(self.page, at, &mut self.left) {
            Ok(Some(n)) => {
                self.at = Some(n);
                Some(Ok(Cursor(n)))
            }
            Ok(None) => {
                self.at = None;
                None
            }
            Err(e) => {
                self.at = None;
                Some(Err(e))
            }
        }
    }
}

/// One step along the record list: the user record after the one at `at` (the infimum to
/// start), `None` at the supremum. `left` is how many more records the heap can hold (start
/// from `PAGE_N_HEAP`): each step spends one, so a list that loops is an error after at most
/// that many steps, never an endless walk. The one checked step of [`records`] and of walks
/// that read more of each record than its cursor.
pub fn step(page: &[u8], at: usize, left: &mut usize) -> Result<Option<usize>, NodeError> {
    let n = next_of(page, at)?;
    if n == SUPREMUM {
        return Ok(None);
    }
    if *left == 0 {
        return Err(NodeError::Corrupt {
            at: n,
            what: "the record list has more records than the heap",
        });
    }
    *left -= 1;
    Ok(Some(n))
}

#[cfg(test)]
mod tests;
