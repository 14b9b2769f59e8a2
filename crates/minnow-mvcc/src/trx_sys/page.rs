//! The TRX_SYS page on disk: its byte offsets ([`sys`]), the checked decoder [`SysPage`] that
//! both [`TrxSys::open`](super::TrxSys::open)(super::TrxSys::open) and read-only tools use, and the undo slots read
//! without opening the database ([`active_logs`]). Every field read here is bounds-checked;
//! a bad value is a [`MvccError::CorruptTrxSys`] naming the field's offset, what was expected
//! and what was found.

use std::collections::BTreeSet;

use minnow_btree::space::FsegHeader;
use minnow_page::{PageId, PageType, bytes, fil};

use super::{MAX_SLOTS, TRX_SYS_FORMAT};
use crate::error::{MvccError, Result};
use crate::undo::record::{LogHeader, LogState, UndoAddr};
use crate::undo::{self, PageSource, UNDO_DATA, data_end};

/// Offsets in the TRX_SYS page.
pub mod sys {
    /// Format version.
    pub const FORMAT: usize = 38;
    /// The id mark.
    pub const MARK: usize = 42;
    /// The undo segment's FSEG header.
    pub const SEG: usize = 50;
    /// First undo page.
    pub const FIRST: usize = 60;
    /// Last undo page.
    pub const LAST: usize = 64;
    /// History list: first log.
    pub const HIST_FIRST: usize = 68;
    /// History list: last log.
    pub const HIST_LAST: usize = 74;
    /// History list length.
    pub const HIST_LEN: usize = 80;
    /// Offset of the stream's first entry in the FIRST page.
    pub const HEAD: usize = 88;
    /// Undo pages in the stream.
    pub const PAGES: usize = 90;
    /// Slot count.
    pub const N_SLOTS: usize = 94;
    /// The slots.
    pub const SLOTS: usize = 96;
}

/// The TRX_SYS page, decoded: every field of the layout in the module docs, as the bytes
/// say (read by [`TrxSys::open`](super::TrxSys::open), and by tools that read the file without opening it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysPage {
    /// The format version ([`TRX_SYS_FORMAT`]).
    pub format: u32,
    /// TRX_ID_MARK: above every transaction id and commit number handed out.
    pub mark: u64,
    /// The undo segment's FSEG header.
    pub seg: FsegHeader,
    /// FIRST: the undo stream's first page.
    pub first_page: u32,
    /// LAST: the undo stream's last page, where appends go.
    pub last_page: u32,
    /// The oldest log of the history list.
    pub hist_first: Option<UndoAddr>,
    /// The newest log of the history list.
    pub hist_last: Option<UndoAddr>,
    /// The history list length.
    pub hist_len: u64,
    /// HEAD: offset of the stream's first entry in FIRST (bytes before it are dead).
    pub head: u16,
    /// PAGES: undo pages in the stream, FIRST to LAST.
    pub n_pages: u32,
    /// N_SLOTS: the number of undo slots.
    pub n_slots: u16,
    /// The used slots, lowest first: (slot, the address of its active log's header).
    pub slots: Vec<(u16, UndoAddr)>,
}

impl SysPage {
    /// Decodes the TRX_SYS page `p` (page `page`): its type and format version must be
    /// minnow's, HEAD must lie in an undo page's data area, FIRST, LAST and PAGES must not be 0
    /// and the slot count must fit the page. Errors name the field's offset, what was expected
    /// and what was found.
    pub fn read(p: &[u8], page: PageId) -> Result<SysPage> {
        let bad = |what: String| MvccError::CorruptTrxSys { page, what };
        check_sys_page(p, page)?;
        let field = |r: std::result::Result<u64, minnow_page::PageError>, at: usize| {
            r.map_err(|e| bad(format!("@{at}: {e}")))
        };
        let mark = field(bytes::read_u64(p, sys::MARK), sys::MARK)?;
        let seg = FsegHeader::read(p, sys::SEG).map_err(|e| bad(format!("@{}: {e}", sys::SEG)))?;
        let u32_at = |at: usize| field(bytes::read_u32(p, at).map(u64::from), at).map(|v| v as u32);
        let first_page = u32_at(sys::FIRST)?;
        let last_page = u32_at(sys::LAST)?;
        let n_pages = u32_at(sys::PAGES)?;
        let head = field(bytes::read_u16(p, sys::HEAD).map(u64::from), sys::HEAD)? as u16;
        if usize::from(head) < UNDO_DATA || usize::from(head) > data_end(p.len()) {
            return Err(bad(format!(
                "HEAD @{} is {head}, expected an offset in {UNDO_DATA}..={}",
                sys::HEAD,
                data_end(p.len())
            )));
        }
        if n_pages == 0 || first_page == 0 || last_page == 0 {
            return Err(bad(format!(
                "undo stream FIRST @{} {first_page}, LAST @{} {last_page}, PAGES @{} \
                 {n_pages}: none may be 0",
                sys::FIRST,
                sys::LAST,
                sys::PAGES
            )));
        }
        let hist_first = read_addr(p, sys::HIST_FIRST)
            .ok_or_else(|| bad(format!("@{}: history first", sys::HIST_FIRST)))?;
        let hist_last = read_addr(p, sys::HIST_LAST)
            .ok_or_else(|| bad(format!("@{}: history last", sys::HIST_LAST)))?;
        let hist_len = field(bytes::read_u64(p, sys::HIST_LEN), sys::HIST_LEN)?;
        let (n_slots, mut slots, _) = read_slots(p, page)?;
        slots.reverse();
        Ok(SysPage {
            format: TRX_SYS_FORMAT,
            mark,
            seg,
            first_page,
            last_page,
            hist_first,
            hist_last,
            hist_len,
            head,
            n_pages,
            n_slots,
            slots,
        })
    }

    /// The free slots in the order they are handed out (lowest first).
    pub(super) fn free_slots(&self) -> Vec<u16> {
        let used: BTreeSet<u16> = self.slots.iter().map(|&(s, _)| s).collect();
        (0..self.n_slots)
            .rev()
            .filter(|s| !used.contains(s))
            .collect()
    }
}

/// The TRX_SYS page's undo slots: (slot count, the used slots with their log headers'
/// addresses, the free slots in the order they are handed out).
type Slots = (u16, Vec<(u16, UndoAddr)>, Vec<u16>);

/// Checks the page type and format version of a TRX_SYS page.
fn check_sys_page(p: &[u8], page: PageId) -> Result<()> {
    let bad = |what: String| MvccError::CorruptTrxSys { page, what };
    let ty = bytes::read_u16(p, fil::PAGE_TYPE).map_err(|e| bad(e.to_string()))?;
    if ty != PageType::TrxSys.to_u16() {
        return Err(bad(format!(
            "page type @{} is {ty}, expected 7 (TRX_SYS): a database made before transactions \
             existed?",
            fil::PAGE_TYPE
        )));
    }
    let format = bytes::read_u32(p, sys::FORMAT).map_err(|e| bad(e.to_string()))?;
    if format != TRX_SYS_FORMAT {
        return Err(bad(format!(
            "format version @{} is {format}, expected {TRX_SYS_FORMAT}",
            sys::FORMAT
        )));
    }
    Ok(())
}

fn read_slots(p: &[u8], page: PageId) -> Result<Slots> {
    let bad = |what: String| MvccError::CorruptTrxSys { page, what };
    let n_slots = bytes::read_u16(p, sys::N_SLOTS).map_err(|e| bad(e.to_string()))?;
    let max = (p.len().saturating_sub(fil::TRAILER_SIZE + sys::SLOTS) / 6).min(MAX_SLOTS);
    if usize::from(n_slots) > max || n_slots == 0 {
        return Err(bad(format!(
            "N_SLOTS @{} is {n_slots}, expected 1..={max}",
            sys::N_SLOTS
        )));
    }
    let mut slots = Vec::new();
    let mut free_slots = Vec::new();
    for s in (0..n_slots).rev() {
        let at = sys::SLOTS + 6 * usize::from(s);
        match read_addr(p, at).ok_or_else(|| bad(format!("slot {s} @{at}")))? {
            Some(a) => slots.push((s, a)),
            None => free_slots.push(s),
        }
    }
    Ok((n_slots, slots, free_slots))
}

/// The log header a used slot names, which must be active.
pub(super) fn slot_header<S: PageSource + ?Sized>(
    pages: &S,
    page: PageId,
    slot: u16,
    header: UndoAddr,
) -> Result<LogHeader> {
    let h = undo::read_header(pages, page.space, header)?;
    if h.state != LogState::Active {
        return Err(MvccError::CorruptTrxSys {
            page,
            what: format!(
                "slot {slot} names the log of transaction {} at {}:{}, which is not active",
                h.trx_id, header.page, header.offset
            ),
        });
    }
    Ok(h)
}

/// The transactions the TRX_SYS page at `page` lists as active (one log header per used
/// slot), read through any [`PageSource`]: what a tool that reads the data file without
/// opening the database learns about who had not committed when the page was last written.
/// Writes nothing. Checks the page type and format as [`TrxSys::open`](super::TrxSys::open) does.
pub fn active_logs<S: PageSource + ?Sized>(
    pages: &S,
    page: PageId,
) -> Result<Vec<(UndoAddr, LogHeader)>> {
    let slots = pages.with_page(page, |p| -> Result<Vec<(u16, UndoAddr)>> {
        check_sys_page(p, page)?;
        Ok(read_slots(p, page)?.1)
    })??;
    slots
        .into_iter()
        .map(|(slot, a)| Ok((a, slot_header(pages, page, slot, a)?)))
        .collect()
}

pub(super) fn addr_bytes(a: Option<UndoAddr>) -> [u8; 6] {
    let a = a.unwrap_or(UndoAddr { page: 0, offset: 0 });
    let [p0, p1, p2, p3] = a.page.to_be_bytes();
    let [o0, o1] = a.offset.to_be_bytes();
    [p0, p1, p2, p3, o0, o1]
}

pub(super) fn read_addr(p: &[u8], at: usize) -> Option<Option<UndoAddr>> {
    Some(UndoAddr::non_null(
        bytes::read_u32(p, at).ok()?,
        bytes::read_u16(p, at + 4).ok()?,
    ))
}
