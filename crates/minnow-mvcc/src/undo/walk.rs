//! What one undo page holds: walking the undo stream up to it.
//!
//! An undo page does not say where its entries start. Its bytes `44..FREE` are a stretch of
//! the undo stream, and the stream is a sequence of entries (log headers, undo records,
//! fillers) laid back to back across pages: the first bytes of a page may be the tail of a
//! record that began on an earlier page, and only someone who stepped over that record from
//! its start knows where it ends. So, as [`crate::TrxSys::trim`] does, [`walk_page`] starts
//! where a rollback segment's header page says its stream starts (FIRST at HEAD) and steps
//! from entry to entry by their lengths (every entry starts with its total length) until it
//! has crossed the page asked for. Which segment's stream the page is on, the page does not
//! say either: the walk tries each segment's stream in turn until one reaches the page.
//!
//! ```text
//!   page 4 (FIRST)              page 9                      page 12 (LAST)
//!   44  HEAD                    44                          44
//!   │dead│hdr│rec│rec│reco…     …rd (rest)│hdr│rec│filler…   …(rest)│rec│      FREE
//!                      └──── one record ───┘        └─ one long entry ┘
//! ```
//!
//! Bytes before HEAD on the first page are dead (purged and trimmed); a page that is not on
//! the chain from FIRST to LAST is not part of the stream at all (nothing reads its bytes),
//! and is not walked.
//!
//! The walk reads pages through a [`PageSource`], so it is the same code whether the pages
//! come from the buffer pool or, in a tool, straight from the data file. It writes nothing.

use minnow_page::walk::CycleGuard;
use minnow_page::{PageId, bytes};

use super::record::{FILLER, HEADER_KIND, LOG_HEADER_LEN, LogHeader, UndoAddr, UndoRecord};
use super::{PageSource, UNDO_DATA, read_record, undo_page_fields};
use crate::error::{MvccError, Result};
use crate::trx_sys::{RsegPage, SysPage, read_all};

/// What a stretch of an undo page's bytes is.
#[derive(Debug)]
pub enum Content {
    /// Bytes before HEAD on the stream's first page: purged and trimmed, read by nobody.
    Dead,
    /// A log header (kind 0).
    Header(LogHeader),
    /// An undo record (kinds 1 to 3), gathered from the following pages if it continues.
    Record(UndoRecord),
    /// A filler (kind 4): the unfinished start of a record longer than a page, which a crash
    /// left behind (or which is being written now); nothing points at it.
    Filler,
    /// The rest of an entry that starts on an earlier page; `kind` is its kind byte.
    Rest {
        /// The entry's kind byte (0 header, 1 to 3 record, 4 filler).
        kind: u8,
    },
    /// An entry that starts here but does not decode.
    Bad(MvccError),
}

/// One stretch of an undo page: an entry, the part of one that lies in this page, or dead
/// bytes.
#[derive(Debug)]
pub struct PageEntry {
    /// The first byte of the stretch in this page.
    pub start: u16,
    /// One past its last byte in this page.
    pub end: u16,
    /// Where the entry starts (this page and `start`, unless it began on an earlier page).
    pub entry: UndoAddr,
    /// The entry's total length as its first four bytes say (0 for dead bytes).
    pub len: u32,
    /// The page the entry goes on to, if it continues past this page.
    pub continues: Option<u32>,
    /// What the bytes are.
    pub content: Content,
}

/// What [`walk_page`] found.
#[derive(Debug)]
pub struct PageWalk {
    /// The TRX_SYS page the walk started from.
    pub sys: SysPage,
    /// The header of the rollback segment whose stream holds the page, `None` if no
    /// segment's walk reached it.
    pub rseg: Option<RsegPage>,
    /// The page's place in its segment's stream (0 = FIRST), `None` if no walk reached it.
    pub position: Option<u32>,
    /// The stretches of the page, in order (empty if it is not on the stream).
    pub entries: Vec<PageEntry>,
    /// Why the walk stopped before it was done with the page, if it did: a damaged page or
    /// entry on the way, or a chain that does not match its segment's header page (when no
    /// segment reached the page: the first such error met).
    pub error: Option<MvccError>,
}

/// An undo page held during the walk: its bytes and checked (next, free).
struct Held {
    id: PageId,
    bytes: Vec<u8>,
    next: u32,
    free: usize,
}

fn load<S: PageSource + ?Sized>(pages: &S, id: PageId) -> Result<Held> {
    pages.with_page(id, |g| -> Result<Held> {
        let (next, free) = undo_page_fields(g, id)?;
        Ok(Held {
            id,
            bytes: g.to_vec(),
            next,
            free,
        })
    })?
}

/// Decodes the entry that starts at `at` of `held` (the page being shown).
fn decode_entry<S: PageSource + ?Sized>(
    pages: &S,
    held: &Held,
    at: usize,
    len: usize,
    kind: u8,
) -> Content {
    let corrupt = |offset: usize, expected: String, found: String| {
        Content::Bad(MvccError::CorruptUndo {
            page: held.id,
            offset,
            expected,
            found,
        })
    };
    match kind {
        HEADER_KIND => match held.bytes.get(at..at + LOG_HEADER_LEN) {
            Some(b) if at + LOG_HEADER_LEN <= held.free => match LogHeader::decode(b) {
                Ok(h) => Content::Header(h),
                Err(e) => corrupt(at + e.at, e.expected, e.found),
            },
            _ => corrupt(
                at,
                format!("a {LOG_HEADER_LEN}-byte log header inside the page's used bytes"),
                format!("{} bytes before FREE", held.free.saturating_sub(at)),
            ),
        },
        FILLER => Content::Filler,
        1..=3 => {
            if at + len <= held.free {
                match held.bytes.get(at..at + len).map(UndoRecord::decode) {
                    Some(Ok(r)) => Content::Record(r),
                    Some(Err(e)) => corrupt(at + e.at, e.expected, e.found),
                    None => corrupt(at, "the record's bytes".into(), "the page end".into()),
                }
            } else {
                let addr = UndoAddr {
                    page: held.id.page_no,
                    offset: at as u16,
                };
                match read_record(pages, held.id.space, addr) {
                    Ok(r) => Content::Record(r),
                    Err(e) => Content::Bad(e),
                }
            }
        }
        k => corrupt(at + 4, "an entry kind 0 to 4".into(), k.to_string()),
    }
}

/// Walks the undo streams of the rollback segments of the TRX_SYS page `sys_page`, each
/// from its head, until one reaches undo page `target` (of the same tablespace), and returns
/// what `target`'s bytes hold. An error only when the TRX_SYS page or a segment header page
/// cannot be read or decoded; damage found on the way is [`PageWalk::error`], with what was
/// found before it.
pub fn walk_page<S: PageSource + ?Sized>(
    pages: &S,
    sys_page: PageId,
    target: u32,
) -> Result<PageWalk> {
    let (sys, rsegs) = read_all(pages, sys_page)?;
    let mut first_error = None;
    for r in rsegs {
        let mut walk = PageWalk {
            sys: sys.clone(),
            rseg: None,
            position: None,
            entries: Vec::new(),
            error: None,
        };
        let done = walk_into(pages, sys_page.space, target, &r, &mut walk);
        if walk.position.is_some() {
            walk.error = done.err();
            walk.rseg = Some(r);
            return Ok(walk);
        }
        if first_error.is_none() {
            first_error = done.err();
        }
    }
    Ok(PageWalk {
        sys,
        rseg: None,
        position: None,
        entries: Vec::new(),
        error: first_error,
    })
}

fn walk_into<S: PageSource + ?Sized>(
    pages: &S,
    space: u32,
    target: u32,
    rseg: &RsegPage,
    walk: &mut PageWalk,
) -> Result<()> {
    let (first, last, n_pages) = (rseg.first_page, rseg.last_page, rseg.n_pages);
    let mut held = load(pages, PageId::new(space, first))?;
    let mut position = 0u32;
    let mut off = usize::from(rseg.head);
    // Steps to the next page of the chain, checking it against PAGES and, since PAGES comes
    // from the file too, against the pages stepped to so far (a NEXT that loops).
    let mut guard = CycleGuard::new();
    guard.step(first);
    let mut advance = |held: &Held, position: &mut u32| -> Result<Held> {
        *position += 1;
        if !guard.step(held.next) {
            return Err(MvccError::CorruptUndo {
                page: held.id,
                offset: super::UNDO_NEXT,
                expected: "a NEXT undo page not reached before".into(),
                found: format!("NEXT {} (the undo page chain has a cycle)", held.next),
            });
        }
        if *position >= n_pages {
            return Err(MvccError::CorruptUndo {
                page: held.id,
                offset: super::UNDO_NEXT,
                expected: format!("the last undo page of the stream ({last}: PAGES is {n_pages})"),
                found: format!("NEXT {} after {n_pages} pages", held.next),
            });
        }
        load(pages, PageId::new(space, held.next))
    };
    if first == target {
        walk.position = Some(0);
        if off > UNDO_DATA {
            walk.entries.push(PageEntry {
                start: UNDO_DATA as u16,
                end: off as u16,
                entry: UndoAddr {
                    page: target,
                    offset: UNDO_DATA as u16,
                },
                len: 0,
                continues: None,
                content: Content::Dead,
            });
        }
    }
    loop {
        let page = held.id.page_no;
        if off >= held.free {
            if page == target || page == last || held.next == 0 {
                return Ok(());
            }
            held = advance(&held, &mut position)?;
            off = UNDO_DATA;
            if held.id.page_no == target {
                walk.position = Some(position);
            }
            continue;
        }
        // An entry starts here: its length and kind are always in this page (a record's
        // first 8 bytes and a whole header are written to one page).
        let len = bytes::read_u32(&held.bytes, off).map_err(|e| MvccError::CorruptUndo {
            page: held.id,
            offset: off,
            expected: "an entry's length".into(),
            found: e.to_string(),
        })? as usize;
        let kind = held.bytes.get(off + 4).copied().unwrap_or(0xFF);
        if len < 8 {
            return Err(MvccError::CorruptUndo {
                page: held.id,
                offset: off,
                expected: "an entry of at least 8 bytes".into(),
                found: len.to_string(),
            });
        }
        if kind > FILLER && page != target {
            return Err(MvccError::CorruptUndo {
                page: held.id,
                offset: off + 4,
                expected: "an entry kind 0 to 4".into(),
                found: kind.to_string(),
            });
        }
        let entry = UndoAddr {
            page,
            offset: off as u16,
        };
        let mut left = len;
        let mut first_piece = true;
        loop {
            let here_page = held.id.page_no;
            let n = left.min(held.free - off);
            left -= n;
            if here_page == target {
                let content = if first_piece {
                    decode_entry(pages, &held, off, len, kind)
                } else {
                    Content::Rest { kind }
                };
                let bad = matches!(content, Content::Bad(_));
                walk.entries.push(PageEntry {
                    start: off as u16,
                    end: (off + n) as u16,
                    entry,
                    len: len as u32,
                    continues: (left > 0).then_some(held.next),
                    content,
                });
                if bad {
                    // The length of an entry that does not decode is not to be trusted.
                    return Ok(());
                }
            }
            off += n;
            if left == 0 {
                break;
            }
            if here_page == target {
                // The rest lies beyond the page asked about.
                return Ok(());
            }
            if here_page == last || held.next == 0 {
                return Err(MvccError::CorruptUndo {
                    page: held.id,
                    offset: off,
                    expected: format!("{left} more bytes of the entry at {page}:{}", entry.offset),
                    found: "the end of the undo stream".into(),
                });
            }
            held = advance(&held, &mut position)?;
            off = UNDO_DATA;
            if held.id.page_no == target {
                walk.position = Some(position);
            }
            first_piece = false;
        }
    }
}
