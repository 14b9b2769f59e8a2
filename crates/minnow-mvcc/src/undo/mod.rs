//! The undo store: undo pages, the undo stream, and reading records back.
//!
//! ## Undo pages and the undo streams
//!
//! All undo lives in one **segment** of the system tablespace, whose first page is the
//! TRX_SYS page ([`crate::trx_sys`]). The undo store is divided into **rollback segments**
//! (16 by default), each with a header page in that segment and its own chain of **undo
//! pages** (FIL type `UNDO_LOG` = 2) linked through a `NEXT` pointer into one **undo stream**
//! per rollback segment, appended at its end and trimmed at its head once purge is done with
//! the logs there ([`crate::TrxSys::trim`]):
//!
//! ```text
//!  undo page                                 rseg header page: FIRST, LAST of the chain
//!  38  u32  NEXT undo page (0: the last)
//!  42  u16  FREE: end of the bytes in use
//!  44       data: log headers and undo records, back to back
//! ```
//!
//! Writers append at the end of their rollback segment's stream, one mini-transaction per
//! append (a record longer than a page: one per page, the last one linking it into its
//! log), under that segment's mutex; writers of different segments append at once. A record
//! longer than what is left of the page continues at byte 44 of the next page (so a row with
//! a 100 KiB BLOB has a 100 KiB undo record spanning several pages); a log header (48 bytes,
//! changed in place later) never straddles pages. The records of the transactions of one
//! segment interleave on its stream; each transaction's records are chained backwards
//! (`prev`) from its log header's `last`, and each record is addressed by a
//! [`crate::RollPtr`] (page and offset of its first byte: page numbers are unique in the
//! system tablespace, so the roll pointer's segment field stays 0).
//!
//! Because each append is its own mini-transaction that commits before the clustered change
//! it describes, redo order guarantees the undo is durable whenever the change is.
//!
//! The record and header bytes are in [`record`]; [`walk`] tells what one page's bytes are,
//! which takes walking the stream from its head.
//!
//! ## Who reads undo pages
//!
//! The engine reads them through its buffer pool. A tool that must never open the database
//! (opening runs recovery, which writes) reads the same pages straight from the data file;
//! both go through [`PageSource`], so the decoding below is one piece of code for both.

pub mod chain;
pub mod record;
pub mod walk;

use minnow_buf::{BufferPool, Mtr, PageHandle};
use minnow_page::{PageId, bytes, fil};

use crate::error::{MvccError, Result};
use record::{DecodeError, LOG_HEADER_LEN, LogHeader, UndoAddr, UndoRecord, claimed_len};

/// Offset of an undo page's NEXT pointer.
pub const UNDO_NEXT: usize = 38;
/// Offset of an undo page's FREE offset.
pub const UNDO_FREE: usize = 42;
/// Offset of an undo page's first data byte.
pub const UNDO_DATA: usize = 44;

/// Where undo pages (and the TRX_SYS page) are read from: the buffer pool, or a tool's
/// read-only view of the data file.
pub trait PageSource {
    /// The page size in bytes.
    fn page_len(&self) -> usize;
    /// Calls `f` with the bytes of page `id` (checked: a page that fails its checksum or
    /// cannot be read is an error, never handed to `f`).
    fn with_page<T>(&self, id: PageId, f: impl FnOnce(&[u8]) -> T) -> Result<T>;
}

impl PageSource for BufferPool {
    fn page_len(&self) -> usize {
        self.config().page_size.bytes()
    }

    fn with_page<T>(&self, id: PageId, f: impl FnOnce(&[u8]) -> T) -> Result<T> {
        let g = self.get_read(id)?;
        Ok(f(&g))
    }
}

/// The end of the usable bytes of an undo page (the FIL trailer follows).
pub fn data_end(page_len: usize) -> usize {
    page_len - fil::TRAILER_SIZE
}

fn corrupt(space: u32, page: u32, offset: usize, e: DecodeError) -> MvccError {
    MvccError::CorruptUndo {
        page: PageId::new(space, page),
        offset,
        expected: e.expected,
        found: e.found,
    }
}

/// The checked header fields of an undo page: (next, free).
fn undo_page_fields(p: &[u8], id: PageId) -> Result<(u32, usize)> {
    let bad = |offset: usize, expected: &str, found: String| MvccError::CorruptUndo {
        page: id,
        offset,
        expected: expected.to_owned(),
        found,
    };
    let ty = bytes::read_u16(p, fil::PAGE_TYPE)
        .map_err(|e| bad(fil::PAGE_TYPE, "a page type", e.to_string()))?;
    if ty != minnow_page::PageType::UndoLog.to_u16() {
        return Err(bad(
            fil::PAGE_TYPE,
            "page type 2 (UNDO_LOG)",
            ty.to_string(),
        ));
    }
    let next = bytes::read_u32(p, UNDO_NEXT).map_err(|e| bad(UNDO_NEXT, "NEXT", e.to_string()))?;
    let free = usize::from(
        bytes::read_u16(p, UNDO_FREE).map_err(|e| bad(UNDO_FREE, "FREE", e.to_string()))?,
    );
    if free < UNDO_DATA || free > data_end(p.len()) {
        return Err(bad(
            UNDO_FREE,
            &format!("FREE in {UNDO_DATA}..={}", data_end(p.len())),
            free.to_string(),
        ));
    }
    Ok((next, free))
}

/// Reads `len` bytes of the undo stream from `at` on, following NEXT pointers.
pub fn gather<S: PageSource + ?Sized>(
    pool: &S,
    space: u32,
    at: UndoAddr,
    len: usize,
) -> Result<Vec<u8>> {
    // lab 5 begin: gather
    // lab 5 starter: let _ = (pool, space, at, len); Err(minnow_page::lab::NotWritten::new(5, "gather").into())
    let mut out = Vec::with_capacity(len.min(1 << 20));
    let (mut page, mut off) = (at.page, usize::from(at.offset));
    let page_len = pool.page_len();
    // Each page gives at least one byte, except possibly the first: a bound on the walk,
    // so a cycle of NEXT pointers in a corrupt file ends.
    let max_pages = len / data_end(page_len).saturating_sub(UNDO_DATA).max(1) + 2;
    let mut pages = 0;
    let mut prev = PageId::new(space, at.page);
    while out.len() < len {
        pages += 1;
        let id = PageId::new(space, page);
        if page == 0 || pages > max_pages {
            // Name the last page of the chain, where the record should have continued.
            return Err(MvccError::CorruptUndo {
                page: prev,
                offset: off,
                expected: format!("{} more bytes of an undo record", len - out.len()),
                found: "the end of the undo page chain".into(),
            });
        }
        let want = len - out.len();
        let next = pool.with_page(id, |g| -> Result<u32> {
            let (next, free) = undo_page_fields(g, id)?;
            if off < UNDO_DATA || off > free {
                return Err(MvccError::CorruptUndo {
                    page: id,
                    offset: off,
                    expected: format!("an offset in {UNDO_DATA}..={free}"),
                    found: off.to_string(),
                });
            }
            let n = (free - off).min(want);
            out.extend_from_slice(g.get(off..off + n).unwrap_or_default());
            Ok(next)
        })??;
        prev = id;
        page = next;
        off = UNDO_DATA;
    }
    Ok(out)
    // lab 5 end
}

/// Reads the undo record at `at`.
pub fn read_record<S: PageSource + ?Sized>(
    pool: &S,
    space: u32,
    at: UndoAddr,
) -> Result<UndoRecord> {
    // lab 5 begin: read_record
    // lab 5 starter: let _ = (pool, space, at); Err(minnow_page::lab::NotWritten::new(5, "read_record").into())
    let head = gather(pool, space, at, 4)?;
    let len = claimed_len(&head).map_err(|e| corrupt(space, at.page, usize::from(at.offset), e))?;
    if len < record::RECORD_HEADER_LEN {
        return Err(MvccError::CorruptUndo {
            page: PageId::new(space, at.page),
            offset: usize::from(at.offset),
            expected: format!(
                "an undo record length of at least {}",
                record::RECORD_HEADER_LEN
            ),
            found: len.to_string(),
        });
    }
    let b = gather(pool, space, at, len)?;
    UndoRecord::decode(&b).map_err(|e| corrupt(space, at.page, usize::from(at.offset) + e.at, e))
    // lab 5 end
}

/// Reads the log header at `at` (never split across pages).
pub fn read_header<S: PageSource + ?Sized>(
    pool: &S,
    space: u32,
    at: UndoAddr,
) -> Result<LogHeader> {
    let id = PageId::new(space, at.page);
    pool.with_page(id, |g| {
        undo_page_fields(g, id)?;
        let off = usize::from(at.offset);
        let b = g
            .get(off..off + LOG_HEADER_LEN)
            .ok_or_else(|| MvccError::CorruptUndo {
                page: id,
                offset: off,
                expected: format!("{LOG_HEADER_LEN} bytes of a log header"),
                found: "the end of the page".into(),
            })?;
        LogHeader::decode(b).map_err(|e| corrupt(space, at.page, off + e.at, e))
    })?
}

/// Formats a freshly allocated page as an empty undo page.
pub(crate) fn init_undo_page(mtr: &mut Mtr<'_>, h: PageHandle) -> Result<()> {
    mtr.write(
        h,
        fil::PAGE_TYPE,
        &minnow_page::PageType::UndoLog.to_u16().to_be_bytes(),
    )?;
    mtr.write(h, UNDO_NEXT, &0u32.to_be_bytes())?;
    mtr.write(h, UNDO_FREE, &(UNDO_DATA as u16).to_be_bytes())?;
    Ok(())
}

/// The undo page header of page `id`'s bytes `p`, checked: (NEXT, FREE). An error, naming
/// the offset, if the page type is not UNDO_LOG or FREE lies outside the data area.
pub fn page_fields(p: &[u8], id: PageId) -> Result<(u32, usize)> {
    undo_page_fields(p, id)
}

/// The checked (NEXT, FREE) of undo page `page` of tablespace `space`, read from `pages`.
pub(crate) fn stream_page<S: PageSource + ?Sized>(
    pages: &S,
    space: u32,
    page: u32,
) -> Result<(u32, usize)> {
    let id = PageId::new(space, page);
    pages.with_page(id, |g| undo_page_fields(g, id))?
}

/// A damaged undo stream: at `offset` of page `page` of tablespace `space`, `expected` was
/// not what was `found`.
pub(crate) fn bad_stream(
    space: u32,
    page: u32,
    offset: usize,
    expected: &str,
    found: String,
) -> MvccError {
    MvccError::CorruptUndo {
        page: PageId::new(space, page),
        offset,
        expected: expected.to_owned(),
        found,
    }
}

/// A place in a rollback segment's undo stream, with its page's checked NEXT and FREE.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamPos {
    pub(crate) page: u32,
    pub(crate) off: usize,
    pub(crate) next: u32,
    pub(crate) free: usize,
}

/// The length and kind of the stream entry that starts at `at` (always in one page: a
/// record's first 8 bytes and a whole header are written to one page), and the two bytes
/// after the kind (a header's state and type). An error for a length under 8.
pub(crate) fn entry_head<S: PageSource + ?Sized>(
    pages: &S,
    space: u32,
    at: UndoAddr,
) -> Result<(usize, [u8; 3])> {
    let off = usize::from(at.offset);
    let b = pages.with_page(PageId::new(space, at.page), |g| {
        g.get(off..off + 7)
            .and_then(|b| <[u8; 7]>::try_from(b).ok())
    })?;
    let b = b.ok_or_else(|| {
        bad_stream(
            space,
            at.page,
            off,
            "an entry's first 7 bytes",
            "the page end".into(),
        )
    })?;
    let [l0, l1, l2, l3, kind, state, ty] = b;
    let len = u32::from_be_bytes([l0, l1, l2, l3]) as usize;
    if len < 8 {
        return Err(bad_stream(
            space,
            at.page,
            off,
            "an entry of at least 8 bytes",
            len.to_string(),
        ));
    }
    Ok((len, [kind, state, ty]))
}

/// Moves `pos` over `len` bytes of the stream, page by page, `step(from, to)` giving the
/// checked (NEXT, FREE) of each page stepped to; an error if the stream ends at `last_page`
/// (or a NEXT of 0) first.
pub(crate) fn step_over(
    pos: &mut StreamPos,
    len: usize,
    space: u32,
    last_page: u32,
    mut step: impl FnMut(u32, u32) -> Result<(u32, usize)>,
) -> Result<()> {
    let mut left = len;
    loop {
        let here = pos.free.saturating_sub(pos.off);
        if left <= here {
            pos.off += left;
            return Ok(());
        }
        left -= here;
        if pos.next == 0 || pos.page == last_page {
            return Err(bad_stream(
                space,
                pos.page,
                pos.off,
                "the rest of an undo entry on the next page",
                "the end of the undo stream".into(),
            ));
        }
        let to = pos.next;
        (pos.next, pos.free) = step(pos.page, to)?;
        (pos.page, pos.off) = (to, UNDO_DATA);
    }
}

/// The checked (next, free) of a page held by an mtr.
pub(crate) fn held_fields(mtr: &Mtr<'_>, h: PageHandle, id: PageId) -> Result<(u32, usize)> {
    undo_page_fields(mtr.page(h), id)
}

#[cfg(test)]
mod cycle_tests;
#[cfg(test)]
pub(crate) mod tests;
