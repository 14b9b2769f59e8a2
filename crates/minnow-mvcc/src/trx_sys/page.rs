//! The TRX_SYS page and the rollback segment header pages on disk.
//!
//! ## The TRX_SYS page
//!
//! Page 3 of a fresh system tablespace, the first page of the undo segment, FIL type
//! `TRX_SYS` = 7. It holds what every transaction shares (the id mark) and the directory of
//! the rollback segments; nothing a transaction does at begin or commit writes it:
//!
//! ```text
//!  38  u32   format version (3)
//!  42  u64   TRX_ID_MARK: above every transaction id and commit number handed out
//!  50  10    FSEG header of the undo segment (which owns this page, every rollback
//!            segment header page and every undo page)
//!  60  u16   N_RSEGS: rollback segments (1..=128, fixed at create)
//!  62  4×N   the header page number of each rollback segment, rseg 0 first
//! ```
//!
//! ## A rollback segment header page
//!
//! FIL type `SYS` = 6 (InnoDB's type for its rseg headers). One per rollback segment, each
//! with its own undo stream, history list and slots:
//!
//! ```text
//!  38  u16   RSEG id: its index in the TRX_SYS directory
//!  40  u32   FIRST undo page of the segment's undo stream
//!  44  u32   LAST undo page (where appends go)
//!  48  6     HISTORY first: oldest committed update log (page u32, offset u16; 0 = none)
//!  54  6     HISTORY last: newest committed update log
//!  60  u64   HISTORY length
//!  68  u16   HEAD: offset in FIRST of the stream's first entry (bytes before it are dead)
//!  70  u32   PAGES: undo pages in the stream, FIRST to LAST
//!  74  u16   N_SLOTS
//!  76  6×N   slots: the log header of each active transaction of this segment
//! ```
//!
//! Formats 1 and 2 (one undo stream, its fields and slots on the TRX_SYS page) are refused
//! with an error naming the version found.
//!
//! [`SysPage`] and [`RsegPage`] are the checked decoders both
//! [`TrxSys::open`](super::TrxSys::open) and read-only tools use; [`active_logs`] reads every
//! segment's slots without opening the database. A bad value is a
//! [`MvccError::CorruptTrxSys`] naming the page, the field's offset, what was expected and
//! what was found.

use std::collections::BTreeSet;

use minnow_btree::space::FsegHeader;
use minnow_page::{PageId, PageType, bytes, fil};

use super::{MAX_RSEGS, MAX_SLOTS, TRX_SYS_FORMAT};
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
    /// The number of rollback segments.
    pub const N_RSEGS: usize = 60;
    /// The directory: each rollback segment's header page number (u32).
    pub const RSEGS: usize = 62;
}

/// Offsets in a rollback segment header page.
pub mod rseg {
    /// The segment's id (its index in the TRX_SYS directory).
    pub const ID: usize = 38;
    /// First undo page.
    pub const FIRST: usize = 40;
    /// Last undo page.
    pub const LAST: usize = 44;
    /// History list: first log.
    pub const HIST_FIRST: usize = 48;
    /// History list: last log.
    pub const HIST_LAST: usize = 54;
    /// History list length.
    pub const HIST_LEN: usize = 60;
    /// Offset of the stream's first entry in the FIRST page.
    pub const HEAD: usize = 68;
    /// Undo pages in the stream.
    pub const PAGES: usize = 70;
    /// Slot count.
    pub const N_SLOTS: usize = 74;
    /// The slots.
    pub const SLOTS: usize = 76;
}

/// The TRX_SYS page, decoded: every field of the layout in the module docs, as the bytes
/// say (read by [`TrxSys::open`](super::TrxSys::open), and by tools that read the file
/// without opening it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysPage {
    /// The format version ([`TRX_SYS_FORMAT`]).
    pub format: u32,
    /// TRX_ID_MARK: above every transaction id and commit number handed out.
    pub mark: u64,
    /// The undo segment's FSEG header.
    pub seg: FsegHeader,
    /// The header page number of each rollback segment, rseg 0 first.
    pub rsegs: Vec<u32>,
}

impl SysPage {
    /// Decodes the TRX_SYS page `p` (page `page`): its type and format version must be
    /// minnow's, N_RSEGS in 1..=128, and no directory entry 0 or repeated.
    pub fn read(p: &[u8], page: PageId) -> Result<SysPage> {
        let bad = |what: String| MvccError::CorruptTrxSys { page, what };
        check_sys_page(p, page)?;
        let mark =
            bytes::read_u64(p, sys::MARK).map_err(|e| bad(format!("@{}: {e}", sys::MARK)))?;
        let seg = FsegHeader::read(p, sys::SEG).map_err(|e| bad(format!("@{}: {e}", sys::SEG)))?;
        let n =
            bytes::read_u16(p, sys::N_RSEGS).map_err(|e| bad(format!("@{}: {e}", sys::N_RSEGS)))?;
        if n == 0 || usize::from(n) > MAX_RSEGS {
            return Err(bad(format!(
                "N_RSEGS @{} is {n}, expected 1..={MAX_RSEGS}",
                sys::N_RSEGS
            )));
        }
        let mut rsegs = Vec::with_capacity(usize::from(n));
        let mut seen = BTreeSet::new();
        for i in 0..usize::from(n) {
            let at = sys::RSEGS + 4 * i;
            let no = bytes::read_u32(p, at).map_err(|e| bad(format!("@{at}: {e}")))?;
            if no == 0 || no == page.page_no || !seen.insert(no) {
                return Err(bad(format!(
                    "rollback segment {i}'s header page @{at} is {no}, expected a page \
                     other than 0, this page and every other segment's"
                )));
            }
            rsegs.push(no);
        }
        Ok(SysPage {
            format: TRX_SYS_FORMAT,
            mark,
            seg,
            rsegs,
        })
    }
}

/// A rollback segment header page, decoded: every field of the layout in the module docs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RsegPage {
    /// The segment's id.
    pub id: u16,
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

impl RsegPage {
    /// Decodes the header page `p` (page `page`) of rollback segment `id`: its type must be
    /// `SYS` and its id `id`, HEAD must lie in an undo page's data area, FIRST, LAST and
    /// PAGES must not be 0 and the slot count must fit the page. Errors name the page, the
    /// field's offset, what was expected and what was found.
    pub fn read(p: &[u8], page: PageId, id: u16) -> Result<RsegPage> {
        let bad = |what: String| MvccError::CorruptTrxSys { page, what };
        let field = |r: std::result::Result<u64, minnow_page::PageError>, at: usize| {
            r.map_err(|e| bad(format!("@{at}: {e}")))
        };
        let ty = field(
            bytes::read_u16(p, fil::PAGE_TYPE).map(u64::from),
            fil::PAGE_TYPE,
        )?;
        if ty != u64::from(PageType::Sys.to_u16()) {
            return Err(bad(format!(
                "page type @{} is {ty}, expected 6 (SYS): the header page of rollback \
                 segment {id}",
                fil::PAGE_TYPE
            )));
        }
        let u16_at = |at: usize| field(bytes::read_u16(p, at).map(u64::from), at).map(|v| v as u16);
        let u32_at = |at: usize| field(bytes::read_u32(p, at).map(u64::from), at).map(|v| v as u32);
        let found = u16_at(rseg::ID)?;
        if found != id {
            return Err(bad(format!(
                "RSEG id @{} is {found}, expected {id} (the directory's entry)",
                rseg::ID
            )));
        }
        let first_page = u32_at(rseg::FIRST)?;
        let last_page = u32_at(rseg::LAST)?;
        let n_pages = u32_at(rseg::PAGES)?;
        let head = u16_at(rseg::HEAD)?;
        if usize::from(head) < UNDO_DATA || usize::from(head) > data_end(p.len()) {
            return Err(bad(format!(
                "HEAD @{} is {head}, expected an offset in {UNDO_DATA}..={}",
                rseg::HEAD,
                data_end(p.len())
            )));
        }
        if n_pages == 0 || first_page == 0 || last_page == 0 {
            return Err(bad(format!(
                "undo stream FIRST @{} {first_page}, LAST @{} {last_page}, PAGES @{} \
                 {n_pages}: none may be 0",
                rseg::FIRST,
                rseg::LAST,
                rseg::PAGES
            )));
        }
        let hist_first = read_addr(p, rseg::HIST_FIRST)
            .ok_or_else(|| bad(format!("@{}: history first", rseg::HIST_FIRST)))?;
        let hist_last = read_addr(p, rseg::HIST_LAST)
            .ok_or_else(|| bad(format!("@{}: history last", rseg::HIST_LAST)))?;
        let hist_len = field(bytes::read_u64(p, rseg::HIST_LEN), rseg::HIST_LEN)?;
        let (n_slots, mut slots) = read_slots(p, page)?;
        slots.reverse();
        Ok(RsegPage {
            id,
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

/// The most slots a rollback segment header page of `page_len` bytes holds.
pub(super) fn slots_per_page(page_len: usize) -> u16 {
    (page_len.saturating_sub(fil::TRAILER_SIZE + rseg::SLOTS) / 6).min(MAX_SLOTS) as u16
}

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
            "format version @{} is {format}, expected {TRX_SYS_FORMAT} (format 2 and older \
             kept one undo stream on this page, before rollback segments)",
            sys::FORMAT
        )));
    }
    Ok(())
}

/// The used slots of a rollback segment header page, highest first: (slot count, the used
/// slots with their log headers' addresses).
fn read_slots(p: &[u8], page: PageId) -> Result<(u16, Vec<(u16, UndoAddr)>)> {
    let bad = |what: String| MvccError::CorruptTrxSys { page, what };
    let n_slots = bytes::read_u16(p, rseg::N_SLOTS).map_err(|e| bad(e.to_string()))?;
    let max = slots_per_page(p.len());
    if n_slots > max || n_slots == 0 {
        return Err(bad(format!(
            "N_SLOTS @{} is {n_slots}, expected 1..={max}",
            rseg::N_SLOTS
        )));
    }
    let mut slots = Vec::new();
    for s in (0..n_slots).rev() {
        let at = rseg::SLOTS + 6 * usize::from(s);
        if let Some(a) = read_addr(p, at).ok_or_else(|| bad(format!("slot {s} @{at}")))? {
            slots.push((s, a));
        }
    }
    Ok((n_slots, slots))
}

/// The log header a used slot of the rollback segment whose header is `page` names, which
/// must be active.
fn slot_header<S: PageSource + ?Sized>(
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

/// [`slot_header`] with its LAST and N_RECS brought forward to the log's newest record, which
/// appends do not write into the header ([`crate::undo::chain`]): the log of slot `slot` of
/// segment `rseg` (header page `page`) as a rollback must start from it.
pub(super) fn slot_log<S: PageSource + ?Sized>(
    pages: &S,
    page: PageId,
    rseg: &RsegPage,
    slot: u16,
    header: UndoAddr,
) -> Result<LogHeader> {
    let mut h = slot_header(pages, page, slot, header)?;
    if let Some(at) = h.last {
        let (last, n_recs) = undo::chain::newest_record(pages, page.space, rseg, at, h.n_recs)?;
        h.last = Some(last);
        h.n_recs = n_recs;
    }
    Ok(h)
}

/// Reads the TRX_SYS page at `page` and the header page of every rollback segment it names:
/// what [`TrxSys::open`](super::TrxSys::open) starts from, and what tools show.
pub fn read_all<S: PageSource + ?Sized>(
    pages: &S,
    page: PageId,
) -> Result<(SysPage, Vec<RsegPage>)> {
    let sp = pages.with_page(page, |p| SysPage::read(p, page))??;
    let mut rsegs = Vec::with_capacity(sp.rsegs.len());
    for (i, &no) in sp.rsegs.iter().enumerate() {
        let id = PageId::new(page.space, no);
        rsegs.push(pages.with_page(id, |p| RsegPage::read(p, id, i as u16))??);
    }
    Ok((sp, rsegs))
}

/// The transactions the rollback segments of the TRX_SYS page at `page` list as active (one
/// log header per used slot, every segment), read through any [`PageSource`]: what a tool
/// that reads the data file without opening the database learns about who had not committed
/// when the pages were last written, each header's LAST and N_RECS those of the log's newest
/// record (as [`TrxSys::open`](super::TrxSys::open) finds them). Writes nothing. Checks the
/// pages as `open` does.
pub fn active_logs<S: PageSource + ?Sized>(
    pages: &S,
    page: PageId,
) -> Result<Vec<(UndoAddr, LogHeader)>> {
    let (sp, rsegs) = read_all(pages, page)?;
    let mut out = Vec::new();
    for (r, &no) in rsegs.iter().zip(&sp.rsegs) {
        let header_page = PageId::new(page.space, no);
        for &(slot, a) in &r.slots {
            out.push((a, slot_log(pages, header_page, r, slot, a)?));
        }
    }
    Ok(out)
}

/// The 6 bytes of an undo address (page, offset), zeros for none.
pub(super) fn addr_bytes(a: Option<UndoAddr>) -> [u8; 6] {
    let a = a.unwrap_or(UndoAddr { page: 0, offset: 0 });
    let [p0, p1, p2, p3] = a.page.to_be_bytes();
    let [o0, o1] = a.offset.to_be_bytes();
    [p0, p1, p2, p3, o0, o1]
}

/// Decodes the undo address at `at`; `None` if the bytes are not there.
pub(super) fn read_addr(p: &[u8], at: usize) -> Option<Option<UndoAddr>> {
    Some(UndoAddr::non_null(
        bytes::read_u32(p, at).ok()?,
        bytes::read_u16(p, at + 4).ok()?,
    ))
}
