//! Overflow pages: where the long columns of a big row go (InnoDB's DYNAMIC row format).
//!
//! A B+tree page must hold at least two records, or a split could not make room; so a
//! clustered record may take at most about half a page ([`max_record_len`]). A row with long
//! VARCHAR, BLOB or TEXT values can be much bigger than that. Before such a record is
//! written, its **longest variable-length non-key fields move off the page, longest first,
//! until the record fits** (fields of 40 bytes or less never move: the reference would not
//! save enough). A field longer than 16383 bytes always moves, since a 2-byte on-page length
//! cannot say more.
//!
//! An off-page field keeps a 20-byte **reference** in the record, and its 2-byte length has
//! bit `0x40` ([`crate::record::LEN_EXTERN`]) set and says 20:
//!
//! ```text
//! ref+0   u32  space id
//! ref+4   u32  first overflow page
//! ref+8   u32  offset of the BLOB header in that page (always 38, FIL_PAGE_DATA)
//! ref+12  u64  total length of the value (the top two bits, InnoDB's owner and inherited
//!              flags, are 0)
//! ```
//!
//! The bytes go to a singly linked **chain of overflow pages**, InnoDB page type BLOB (10),
//! allocated from the tree's leaf segment as InnoDB does (so dropping the table frees them
//! with the leaves).
//! Each starts with the 38-byte FIL header (FIL `PREV` and `NEXT` are `FIL_NULL`: the chain
//! has its own link) and then an 8-byte BLOB header:
//!
//! ```text
//! 38  u32  part length: bytes of the value on this page (1 ..= page size - 54)
//! 42  u32  next page of the chain (FIL_NULL on the last)
//! 46  ...  the part's bytes; the rest of the page up to the 8-byte FIL trailer is zero
//! ```
//!
//! ## One mini-transaction, and what that costs
//!
//! The chain is written in the **same mini-transaction** as the record that points to it, and
//! an update or delete frees the old chain in the mini-transaction that removes the pointer.
//! So redo replays "record and chain" together or not at all, and a crash can leave neither a
//! dangling reference nor an orphan chain: no undo log is needed to clean up. The price is
//! that the whole chain is X-latched in the buffer pool until commit, and its bytes are in one
//! redo group (about the value's size plus 60 bytes a page, on top of the record's). minnow
//! therefore refuses ([`TreeError::RowTooLarge`]) a row whose overflow pages exceed a quarter
//! of the buffer pool's frames, or whose redo exceeds a quarter of the redo log; the mtr that
//! writes the chain reserves that much log space when it starts, before it latches anything
//! (waiting for a checkpoint if the log is short of it), so that writers starting at the same
//! time cannot take the room between the wait and the append. InnoDB instead
//! writes BLOB pages in mtrs of their own and relies on its undo log to free a half-written
//! chain after a crash. A column's type limit is [`crate::record::MAX_BLOB_LEN`]; this
//! runtime limit is what a given pool and log allow.
//!
//! Updates do not reuse an old chain: the old one is freed and a new one written, even if the
//! value did not change.
//!
//! ## Reading, latching
//!
//! Readers follow a chain while holding the shared latch on the leaf that holds the reference
//! (and take each overflow page's latch one at a time): a writer must X-latch that leaf to
//! free the chain, so a reader never sees a chain being freed. Chain pages come after their
//! leaf in the latch order, as newly allocated pages do, and no thread reaches them any other
//! way, so this adds no deadlock. Reads fetch an off-page field only when asked for it
//! ([`BTree::get_fields`], [`crate::ScanRange::fetch`]).
//!
//! Every walk down a chain (reading, freeing) is bounded: the parts must add up to the
//! reference's length, the length must fit the column before anything is read, and a
//! [`CycleGuard`] stops a chain whose `NEXT` comes back to a page of its own (a corrupt file)
//! with [`TreeError::Corrupt`] naming the page, never a loop. `check` keeps a set of every
//! overflow page instead (each belongs to one field of one record).

use std::collections::HashSet;

use minnow_buf::{BufferPool, Mtr, PageHandle};
use minnow_page::walk::CycleGuard;
use minnow_page::{PageId, PageType, bytes, fil};

use super::page::{NIL, fits_records};
use super::{BTree, TreeError};
use crate::record::{
    EXTERN_REF_LEN, HEADER_SIZE, MAX_VAR_LEN, RecordBuf, RecordLayout, Value, decode_value,
};

/// Offset of the BLOB header in an overflow page (FIL_PAGE_DATA).
pub const BLOB_HEADER: usize = fil::HEADER_SIZE;
/// Offset of the part length (`u32`).
pub const BLOB_PART_LEN: usize = BLOB_HEADER;
/// Offset of the next page number (`u32`).
pub const BLOB_NEXT: usize = BLOB_HEADER + 4;
/// Offset of the first data byte.
pub const BLOB_DATA: usize = BLOB_HEADER + 8;
/// Fields of at most this many bytes always stay on the page.
pub const MIN_EXTERN_LEN: usize = 2 * EXTERN_REF_LEN;
/// Redo bytes counted per overflow page on top of its data (records and their headers).
const REDO_PER_PAGE: usize = 64;

/// Bytes of a value one overflow page holds.
pub fn part_capacity(page_len: usize) -> usize {
    page_len.saturating_sub(BLOB_DATA + fil::TRAILER_SIZE)
}

/// The longest clustered record a page of `page_len` bytes takes: two of them must fit.
pub fn max_record_len(page_len: usize) -> usize {
    let mut hi = page_len / 2;
    while hi > 0 && !fits_records(page_len, 2 * hi, 2) {
        hi -= 1;
    }
    hi.saturating_sub(8)
}

/// The 20-byte reference of an off-page field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExternRef {
    /// The tablespace of the chain.
    pub space: u32,
    /// The first overflow page.
    pub page: u32,
    /// Offset of the BLOB header in the first page (38).
    pub offset: u32,
    /// Total length of the value.
    pub len: u64,
}

impl ExternRef {
    /// The stored 20 bytes.
    pub fn encode(&self) -> [u8; EXTERN_REF_LEN] {
        let mut out = [0u8; EXTERN_REF_LEN];
        let parts = [
            self.space.to_be_bytes().as_slice(),
            &self.page.to_be_bytes(),
            &self.offset.to_be_bytes(),
            &self.len.to_be_bytes(),
        ]
        .concat();
        out.copy_from_slice(&parts);
        out
    }

    /// Decodes a stored reference (`None` if it is not 20 bytes).
    pub fn decode(b: &[u8]) -> Option<ExternRef> {
        if b.len() != EXTERN_REF_LEN {
            return None;
        }
        Some(ExternRef {
            space: bytes::read_u32(b, 0).ok()?,
            page: bytes::read_u32(b, 4).ok()?,
            offset: bytes::read_u32(b, 8).ok()?,
            len: u64::from_be_bytes(bytes::slice(b, 12, 8).ok()?.try_into().ok()?),
        })
    }
}

/// A leaf record ready to write: the record (off-page fields hold a zero reference), and
/// each off-page field's offset in the record bytes with the value to store.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    pub(crate) rec: RecordBuf,
    ext: Vec<(usize, Vec<u8>)>,
    /// Redo bytes the chains take, beyond an mtr's usual margin.
    room: u64,
}

impl Prepared {
    pub(crate) fn inline(rec: RecordBuf) -> Prepared {
        Prepared {
            rec,
            ext: Vec::new(),
            room: 0,
        }
    }

    /// Redo bytes writing the overflow chains takes: the mtr that stores them reserves this
    /// much beyond its usual margin ([`BufferPool::mtr_with_room`]), before it latches
    /// anything. Zero for a record with nothing off-page.
    pub(crate) fn room(&self) -> u64 {
        self.room
    }

    /// True if no field goes off-page: `rec` is the record as it is stored.
    pub(crate) fn is_inline(&self) -> bool {
        self.ext.is_empty()
    }
}

/// Size of a record of `layout` with these field bytes, `external` ones as references.
fn record_len(layout: &RecordLayout, raw: &[Option<Vec<u8>>], external: &[bool]) -> usize {
    let nullable = layout.fields().iter().filter(|c| c.nullable).count();
    let mut n = HEADER_SIZE + nullable.div_ceil(8);
    for ((col, v), ext) in layout.fields().iter().zip(raw).zip(external) {
        let Some(v) = v else { continue };
        n += match (col.ty.fixed_len(), ext) {
            (Some(len), _) => len,
            (None, true) => EXTERN_REF_LEN + 2,
            (None, false) => v.len() + if v.len() < 128 { 1 } else { 2 },
        };
    }
    n
}

/// One stored field of a record: its bytes and whether they are an off-page reference
/// (`None` for NULL).
type Stored<'p> = Option<(&'p [u8], bool)>;

impl BTree {
    fn too_large(&self, len: usize, max: usize, what: String) -> TreeError {
        TreeError::RowTooLarge {
            index_id: self.index_id,
            len,
            max,
            what,
        }
    }

    /// Encodes a leaf record from values, choosing the fields that go off-page (see the
    /// module docs), and checks that the pool and the log can take it in one mtr (the mtr
    /// then reserves [`Prepared::room`] of log space).
    pub(crate) fn prepare(
        &self,
        pool: &BufferPool,
        values: &[Value],
    ) -> Result<Prepared, TreeError> {
        let layout = &self.leaf;
        if values.len() != layout.fields().len() {
            return Ok(Prepared::inline(layout.encode(values)?));
        }
        let page_len = pool.config().page_size.bytes();
        let page_max = max_record_len(page_len);
        let whole = |len: usize| {
            self.too_large(
                len,
                page_max,
                format!(
                    "the record takes {len} bytes with every long column off-page; a page of \
                     {page_len} bytes takes at most {page_max}"
                ),
            )
        };
        if !(0..values.len()).any(|i| layout.may_be_external(i)) {
            // Nothing can go off-page: the record is encoded from the values in place, with
            // no buffer per field.
            let rec = layout.encode(values)?;
            if rec.len() > page_max {
                return Err(whole(rec.len()));
            }
            return Ok(Prepared::inline(rec));
        }
        let raw = values
            .iter()
            .enumerate()
            .map(|(i, v)| layout.encode_field(i, v))
            .collect::<Result<Vec<_>, _>>()?;
        let max = self.inline_max(page_len);
        let len_of = |i: usize| raw.get(i).and_then(Option::as_ref).map_or(0, Vec::len);
        let mut external: Vec<bool> = (0..raw.len())
            .map(|i| layout.may_be_external(i) && len_of(i) > MAX_VAR_LEN)
            .collect();
        while record_len(layout, &raw, &external) > max {
            let pick = (0..raw.len())
                .filter(|&i| {
                    layout.may_be_external(i)
                        && !external.get(i).copied().unwrap_or(true)
                        && len_of(i) > MIN_EXTERN_LEN
                })
                .max_by_key(|&i| (len_of(i), std::cmp::Reverse(i)));
            let len_now = record_len(layout, &raw, &external);
            match pick.and_then(|i| external.get_mut(i)) {
                Some(e) => *e = true,
                None if len_now <= page_max => break,
                None => return Err(whole(record_len(layout, &raw, &external))),
            }
        }
        let zero = [0u8; EXTERN_REF_LEN];
        let refs: Vec<Option<&[u8]>> = raw
            .iter()
            .zip(&external)
            .map(|(v, &e)| match v {
                Some(_) if e => Some(zero.as_slice()),
                other => other.as_deref(),
            })
            .collect();
        let rec = layout.encode_raw_ext(&refs, &external)?;
        // Where each off-page field's reference sits in the record bytes.
        let mut ext = Vec::new();
        let mut pos = rec.extra();
        let mut walk = layout.walk(rec.as_bytes(), rec.extra());
        let mut i = 0;
        while let Some(f) = walk.next() {
            if let Some(b) = f? {
                if walk.is_external() {
                    let value = raw.get(i).cloned().flatten().unwrap_or_default();
                    ext.push((pos, value));
                }
                pos += b.len();
            }
            i += 1;
        }
        let room = if ext.is_empty() {
            0
        } else {
            self.room_for(pool, &ext)?
        };
        Ok(Prepared { rec, ext, room })
    }

    /// The longest leaf record [`BTree::prepare`] leaves whole on its page: half a page, or
    /// in a compressed tree less, so that two records compress into a block (see `zip`); a
    /// record that cannot get that short may still take a page.
    pub(crate) fn inline_max(&self, page_len: usize) -> usize {
        self.zip
            .as_ref()
            .map_or(max_record_len(page_len), |z| z.max_record_len())
    }

    /// Checks the pool and log limits for writing `ext` in one mtr, and returns the redo bytes
    /// that takes ([`Prepared::room`]). Nothing waits here: the mtr that writes the chains
    /// reserves the room when it starts, so that no other writer can take it in between.
    fn room_for(&self, pool: &BufferPool, ext: &[(usize, Vec<u8>)]) -> Result<u64, TreeError> {
        let cfg = pool.config();
        let page_len = cfg.page_size.bytes();
        let per = self.overflow_part(page_len);
        let pages: usize = ext.iter().map(|(_, v)| v.len().div_ceil(per)).sum();
        let bytes: usize = ext.iter().map(|(_, v)| v.len()).sum();
        let frames = cfg.pool_size / page_len.max(1);
        if pages > frames / 4 {
            return Err(self.too_large(
                bytes,
                frames / 4 * per,
                format!(
                    "its off-page columns need {pages} overflow pages; one statement may latch a \
                 quarter of the buffer pool's {frames} frames"
                ),
            ));
        }
        let redo: usize = bytes + pages * REDO_PER_PAGE;
        let Some(log) = pool.log() else {
            return Ok(0);
        };
        let redo = redo as u64;
        let need = redo + 4 * page_len as u64;
        if need > log.capacity() / 4 {
            let max = usize::try_from(log.capacity() / 4).unwrap_or(usize::MAX);
            return Err(self.too_large(
                bytes,
                max,
                format!(
                    "its off-page columns need about {need} bytes of redo in one mini-transaction; \
                 the redo log of {} bytes takes a quarter of that",
                    log.capacity()
                ),
            ));
        }
        Ok(redo)
    }

    /// Bytes of a column one overflow page of this tree carries: a page's worth, or in a
    /// compressed tree what its block holds even if they do not compress.
    fn overflow_part(&self, page_len: usize) -> usize {
        let part = part_capacity(page_len);
        self.zip
            .as_ref()
            .map_or(part, |z| part.min(z.overflow_part()))
            .max(1)
    }

    /// Writes the overflow chains of `p` inside `mtr` and returns the record with their
    /// references filled in. `mtr` was started with [`Prepared::room`] reserved
    /// ([`BufferPool::mtr_with_room`]): otherwise its append could find the log full.
    pub(crate) fn store_external(
        &self,
        mtr: &mut Mtr<'_>,
        p: &Prepared,
    ) -> Result<RecordBuf, TreeError> {
        let mut rec = p.rec.clone();
        for (at, value) in &p.ext {
            let r = self.store_chain(mtr, value)?;
            rec.patch(*at, &r.encode());
        }
        Ok(rec)
    }

    fn store_chain(&self, mtr: &mut Mtr<'_>, value: &[u8]) -> Result<ExternRef, TreeError> {
        let mut first = NIL;
        let mut prev: Option<PageHandle> = None;
        let mut rest = value;
        while !rest.is_empty() {
            // Overflow pages come from the leaf segment (as InnoDB's), near the chain so far.
            let hint = prev.and_then(|ph| mtr.page_id(ph)).map(|id| id.page_no + 1);
            let h = self.alloc_page(mtr, 0, hint)?;
            let no = mtr.page_id(h).map_or(0, |id| id.page_no);
            let per = self.overflow_part(mtr.page(h).len());
            let (part, tail) = rest.split_at(per.min(rest.len()));
            rest = tail;
            mtr.write(h, fil::PAGE_TYPE, &PageType::Blob.to_u16().to_be_bytes())?;
            mtr.write(h, fil::PREV, &[0xFF; 8])?;
            let len = u32::try_from(part.len()).unwrap_or(u32::MAX);
            let head = [len.to_be_bytes(), NIL.to_be_bytes()].concat();
            mtr.write(h, BLOB_PART_LEN, &head)?;
            mtr.write(h, BLOB_DATA, part)?;
            match prev {
                Some(ph) => mtr.write(ph, BLOB_NEXT, &no.to_be_bytes())?,
                None => first = no,
            }
            prev = Some(h);
        }
        Ok(ExternRef {
            space: self.space,
            page: first,
            offset: BLOB_HEADER as u32,
            len: value.len() as u64,
        })
    }

    /// Frees, inside `mtr`, the overflow chains of the record at `origin` of held leaf `h`.
    pub(crate) fn free_external(
        &self,
        mtr: &mut Mtr<'_>,
        h: PageHandle,
        origin: usize,
    ) -> Result<(), TreeError> {
        let leaf_no = mtr.page_id(h).map_or(0, |id| id.page_no);
        let refs: Vec<ExternRef> = self
            .leaf
            .externals(mtr.page(h), origin)?
            .into_iter()
            .map(|(_, b)| self.extern_ref(leaf_no, b))
            .collect::<Result<_, _>>()?;
        for r in refs {
            let mut no = r.page;
            let mut left = r.len;
            let mut guard = CycleGuard::new();
            while left > 0 {
                self.chain_step(&mut guard, no, leaf_no)?;
                let id = self.id(no);
                let ph = mtr.get_write(id)?;
                let (part, next) = self.blob_header(mtr.page(ph), id, left)?;
                self.free_page(mtr, no, 0)?;
                left -= part;
                no = next;
            }
        }
        Ok(())
    }

    fn extern_ref(&self, leaf: u32, b: &[u8]) -> Result<ExternRef, TreeError> {
        let r = ExternRef::decode(b)
            .ok_or_else(|| self.corrupt(leaf, "off-page reference is not 20 bytes"))?;
        if r.space != self.space || r.offset as usize != BLOB_HEADER || r.page == NIL {
            return Err(self.corrupt(
                leaf,
                format!(
                    "off-page reference to space {} page {} offset {}, expected space {} \
                     offset {BLOB_HEADER}",
                    r.space, r.page, r.offset, self.space
                ),
            ));
        }
        if r.len == 0 || r.len > crate::record::MAX_BLOB_LEN as u64 {
            return Err(self.corrupt(leaf, format!("off-page value of {} bytes", r.len)));
        }
        Ok(r)
    }

    /// Checks one overflow page (type, page number, part length against the `left` bytes
    /// still expected) and returns its part length and next page.
    fn blob_header(&self, page: &[u8], id: PageId, left: u64) -> Result<(u64, u32), TreeError> {
        let bad = |what: String| TreeError::Corrupt { page: id, what };
        let ty = fil::page_type(page).map_err(|e| bad(e.to_string()))?;
        if ty != PageType::Blob {
            return Err(bad(format!("page type {}, expected BLOB", ty.name())));
        }
        let no = bytes::read_u32(page, fil::PAGE_NO).map_err(|e| bad(e.to_string()))?;
        if no != id.page_no {
            return Err(bad(format!("overflow page says it is page {no}")));
        }
        let part = bytes::read_u32(page, BLOB_PART_LEN).map_err(|e| bad(e.to_string()))?;
        let next = bytes::read_u32(page, BLOB_NEXT).map_err(|e| bad(e.to_string()))?;
        let cap = part_capacity(page.len()) as u64;
        let part = u64::from(part);
        if part == 0 || part > cap || part > left {
            return Err(bad(format!(
                "overflow part of {part} bytes at offset {BLOB_PART_LEN}, expected 1..={}",
                cap.min(left)
            )));
        }
        let last = part == left;
        if last != (next == NIL) {
            return Err(bad(format!(
                "overflow chain link {next} with {} bytes still to come",
                left - part
            )));
        }
        Ok((part, next))
    }

    /// One step of a walk down an overflow chain of a record on leaf `leaf`: to page `no`,
    /// unless the chain came back to a page of its own.
    fn chain_step(&self, guard: &mut CycleGuard<u32>, no: u32, leaf: u32) -> Result<(), TreeError> {
        if guard.step(no) {
            return Ok(());
        }
        Err(self.corrupt(
            no,
            format!(
                "the overflow chain of a record on page {leaf} comes back to this page \
                 (a cycle)"
            ),
        ))
    }

    /// Reads the off-page value `r` refers to (the caller holds the leaf `leaf` that
    /// references it).
    fn read_chain(&self, pool: &BufferPool, leaf: u32, r: ExternRef) -> Result<Vec<u8>, TreeError> {
        let mut out = Vec::with_capacity(usize::try_from(r.len).unwrap_or(0).min(1 << 24));
        let mut no = r.page;
        let mut left = r.len;
        let mut guard = CycleGuard::new();
        while left > 0 {
            self.chain_step(&mut guard, no, leaf)?;
            let id = self.id(no);
            let g = pool.get_read(id)?;
            let (part, next) = self.blob_header(&g, id, left)?;
            let data = bytes::slice(&g, BLOB_DATA, part as usize)
                .map_err(|e| self.corrupt(no, e.to_string()))?;
            out.extend_from_slice(data);
            left -= part;
            no = next;
        }
        Ok(out)
    }

    /// An off-page field `i` of the record on leaf `leaf` whose reference is `r`: its chain
    /// read and decoded with the column's type.
    pub(super) fn fetch_external(
        &self,
        pool: &BufferPool,
        leaf: u32,
        i: usize,
        r: &[u8],
    ) -> Result<Value, TreeError> {
        let col = self.leaf.fields().get(i).copied();
        let max = col.map_or(0, |c| c.ty.max_len());
        // Checked before reading: the chain is as long as the reference says.
        let r = self.extern_ref(leaf, r)?;
        if r.len > max as u64 {
            return Err(self.corrupt(
                leaf,
                format!(
                    "off-page field {i} of {} bytes, the column allows {max}",
                    r.len
                ),
            ));
        }
        let data = self.read_chain(pool, leaf, r)?;
        let ty = col.map_or(crate::record::ColumnType::Blob, |c| c.ty);
        decode_value(ty, &data).map_err(|what| self.corrupt(leaf, what))
    }

    /// Field `i` of the record at `origin` on leaf `leaf`, from its stored bytes: decoded with
    /// the column's type; an off-page field read from its chain if `fetch`, else NULL.
    pub(super) fn decode_stored(
        &self,
        pool: &BufferPool,
        leaf: u32,
        origin: usize,
        i: usize,
        stored: Stored<'_>,
        fetch: bool,
    ) -> Result<Value, TreeError> {
        Ok(match stored {
            None => Value::Null,
            Some((_, true)) if !fetch => Value::Null,
            Some((b, true)) => self.fetch_external(pool, leaf, i, b)?,
            Some((b, false)) => {
                let ty = self
                    .leaf
                    .fields()
                    .get(i)
                    .map_or(crate::record::ColumnType::Blob, |c| c.ty);
                decode_value(ty, b).map_err(|reason| {
                    TreeError::Record(crate::record::RecordError::BadStored {
                        origin,
                        field: i,
                        ty,
                        reason,
                    })
                })?
            }
        })
    }

    /// Decodes the leaf record at `origin` of `page`, fetching the off-page fields whose
    /// index is in `fetch` (all when `None`); the others come back as [`Value::Null`].
    pub(crate) fn decode_leaf(
        &self,
        pool: &BufferPool,
        page: &[u8],
        origin: usize,
        fetch: Option<&[usize]>,
    ) -> Result<Vec<Value>, TreeError> {
        let leaf = bytes::read_u32(page, fil::PAGE_NO).unwrap_or(0);
        // One pass: each field is decoded as the walk finds it, with no list of stored
        // fields in between (this runs once per row a non-covering scan fetches).
        let mut out = Vec::with_capacity(self.leaf.fields().len());
        let mut walk = self.leaf.walk(page, origin);
        while let Some(f) = walk.next() {
            let stored = f?.map(|b| (b, walk.is_external()));
            let i = out.len();
            let wanted = fetch.is_none_or(|w| w.contains(&i));
            out.push(self.decode_stored(pool, leaf, origin, i, stored, wanted)?);
        }
        Ok(out)
    }

    /// Checks the overflow chains of the leaf record at `origin` of page `leaf`: page types,
    /// page numbers, part lengths adding up to the reference's length, chain ends, and no
    /// page in `seen` already (each overflow page belongs to exactly one field of one
    /// record). Adds the chain pages to `seen` and `list`.
    pub(crate) fn check_externals(
        &self,
        pool: &BufferPool,
        page: &[u8],
        leaf: u32,
        origin: usize,
        seen: &mut HashSet<u32>,
        list: &mut Vec<u32>,
    ) -> Result<(), TreeError> {
        for (i, b) in self.leaf.externals(page, origin)? {
            let r = self.extern_ref(leaf, b)?;
            let max = self.leaf.fields().get(i).map_or(0, |c| c.ty.max_len()) as u64;
            if r.len > max {
                return Err(self.corrupt(
                    leaf,
                    format!(
                        "off-page field {i} of {} bytes, the column allows {max}",
                        r.len
                    ),
                ));
            }
            if r.len <= MIN_EXTERN_LEN as u64 {
                return Err(
                    self.corrupt(leaf, format!("off-page field {i} of only {} bytes", r.len))
                );
            }
            let mut no = r.page;
            let mut left = r.len;
            while left > 0 {
                if !seen.insert(no) {
                    return Err(self.corrupt(
                        no,
                        format!(
                            "overflow page reached twice (field {i} of a record on page {leaf})"
                        ),
                    ));
                }
                list.push(no);
                let id = self.id(no);
                let g = pool.get_read(id)?;
                let (part, next) = self.blob_header(&g, id, left)?;
                left -= part;
                no = next;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_match_the_format_document() {
        assert_eq!(max_record_len(4096), 1972);
        assert_eq!(max_record_len(16384), 8116);
        assert_eq!(part_capacity(4096), 4042);
        assert_eq!(part_capacity(16384), 16330);
        let r = ExternRef {
            space: 1,
            page: 7,
            offset: 38,
            len: 70_000,
        };
        let b = r.encode();
        assert_eq!(&b[..12], &[0, 0, 0, 1, 0, 0, 0, 7, 0, 0, 0, 38]);
        assert_eq!(ExternRef::decode(&b), Some(r));
        assert_eq!(ExternRef::decode(&b[..19]), None);
    }
}
