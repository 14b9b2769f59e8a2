//! `minnow page` on minnow's transaction pages: the TRX_SYS page and undo pages.
//!
//! minnow keeps its whole undo store in the system tablespace (`ibdata1`): one undo segment
//! whose first page is the **TRX_SYS page** (page 3), which names the header pages of the
//! **rollback segments**; each segment's **undo pages** are chained into its own **undo
//! stream** (the `minnow_mvcc::trx_sys::page` and `minnow_mvcc::undo` module docs draw the
//! formats). The decoding is minnow-mvcc's own, the code the engine opens the database with,
//! run here on pages read straight from the file:
//!
//! - the TRX_SYS page ([`minnow_mvcc::SysPage`]): the format version, the id mark (above
//!   every transaction id handed out), the undo segment's FSEG header and the directory of
//!   rollback segment header pages;
//! - a rollback segment header page ([`minnow_mvcc::trx_sys::RsegPage`], FIL type SYS): its
//!   id, its undo stream's FIRST, LAST, HEAD and page count, its **history list** (committed
//!   update logs purge has not finished with: first, last, length) and every used **slot**,
//!   each naming the log header of a transaction that was active when the page was written;
//!   those headers are read from their undo pages;
//! - an undo page: its header (NEXT, FREE), then what its bytes are. A page does not say
//!   where its entries start (the first bytes may be the end of a record begun on an earlier
//!   page), so [`minnow_mvcc::undo::walk::walk_page`] walks the streams from their heads
//!   until one reaches the page, and each stretch is shown: log headers (transaction id, state, commit number,
//!   records), undo records (kind, undo number, index id, old `DB_TRX_ID` and `DB_ROLL_PTR`,
//!   the fields as hex), fillers, and the pieces of records that span pages.
//!
//! Other pages are read only to walk the stream, each one checksum-verified; a damaged one
//! ends the walk with a problem that names it. Real InnoDB TRX_SYS and undo pages (page 5 and
//! the rollback segments of a MySQL or MariaDB `ibdata1`) have other layouts, which this
//! command does not decode: it says so instead of guessing.

use std::io::Write;

use minnow_mvcc::trx_sys::RsegPage;
use minnow_mvcc::trx_sys::page::rseg;
use minnow_mvcc::undo::walk::{Content, PageWalk, walk_page};
use minnow_mvcc::undo::{self, UNDO_DATA, data_end};
use minnow_mvcc::{LogHeader, LogState, SysPage, UndoAddr, UndoRecord};
use minnow_page::{PageId, PageType, bytes, fil};
use serde::Serialize;

use crate::cmd::inspector::history::RollPtrReport;
use crate::reader::Reader;

/// Field bytes shown per field (the rest is counted, not shown).
const FIELD_SHOW: usize = 32;

/// An address in the undo stream.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct AddrInfo {
    /// The undo page.
    pub page: u32,
    /// The byte offset in it.
    pub offset: u16,
}

impl From<UndoAddr> for AddrInfo {
    fn from(a: UndoAddr) -> AddrInfo {
        AddrInfo {
            page: a.page,
            offset: a.offset,
        }
    }
}

/// An undo log header, decoded.
#[derive(Debug, Serialize)]
pub struct LogHeaderInfo {
    /// The transaction id.
    pub trx_id: u64,
    /// `active`, `committed`, `rolled_back` or `purged`.
    pub state: &'static str,
    /// `insert` (only insert records so far) or `update`.
    pub log_type: &'static str,
    /// The commit number (0 until committed).
    pub trx_no: u64,
    /// The newest record still to be undone.
    pub last: Option<AddrInfo>,
    /// Records written (the next undo number).
    pub n_recs: u64,
    /// The next (newer) log in the history list.
    pub history_next: Option<AddrInfo>,
}

impl From<&LogHeader> for LogHeaderInfo {
    fn from(h: &LogHeader) -> LogHeaderInfo {
        LogHeaderInfo {
            trx_id: h.trx_id,
            state: match h.state {
                LogState::Active => "active",
                LogState::Committed => "committed",
                LogState::RolledBack => "rolled_back",
                LogState::Purged => "purged",
            },
            log_type: if h.update { "update" } else { "insert" },
            trx_no: h.trx_no,
            last: h.last.map(AddrInfo::from),
            n_recs: h.n_recs,
            history_next: h.history_next.map(AddrInfo::from),
        }
    }
}

/// A file segment header.
#[derive(Debug, Serialize)]
pub struct SegInfo {
    /// Space of the inode.
    pub space_id: u32,
    /// Page of the inode.
    pub page_no: u32,
    /// Byte offset of the inode entry.
    pub offset: u16,
}

/// A used undo slot of a rollback segment header page.
#[derive(Debug, Serialize)]
pub struct SlotInfo {
    /// The slot number.
    pub slot: u16,
    /// Where the active transaction's log header is.
    pub header_at: AddrInfo,
    /// The log header, read from its undo page (null if it could not be read).
    pub header: Option<LogHeaderInfo>,
}

/// minnow's TRX_SYS page, decoded.
#[derive(Debug, Serialize)]
pub struct TrxSysInfo {
    /// Offset 38: the format version.
    pub format: u32,
    /// Offset 42: TRX_ID_MARK.
    pub trx_id_mark: u64,
    /// Offset 50: the undo segment's FSEG header.
    pub undo_segment: SegInfo,
    /// From offset 62 (N_RSEGS at 60): each rollback segment's header page, rseg 0 first.
    pub rseg_pages: Vec<u32>,
}

/// A minnow rollback segment header page, decoded.
#[derive(Debug, Serialize)]
pub struct RsegInfo {
    /// Offset 38: the segment's id.
    pub id: u16,
    /// Offset 40: FIRST undo page.
    pub first_page: u32,
    /// Offset 44: LAST undo page.
    pub last_page: u32,
    /// Offset 68: HEAD, the stream's first entry in FIRST.
    pub head: u16,
    /// Offset 70: undo pages in the stream.
    pub n_pages: u32,
    /// Offset 48: the history list's oldest log.
    pub history_first: Option<AddrInfo>,
    /// Offset 54: its newest log.
    pub history_last: Option<AddrInfo>,
    /// Offset 60: the history list length.
    pub history_len: u64,
    /// Offset 74: the number of slots.
    pub n_slots: u16,
    /// The used slots (from offset 76, 6 bytes each), lowest first.
    pub slots: Vec<SlotInfo>,
}

/// A field of an undo record.
#[derive(Debug, Serialize)]
pub struct FieldInfo {
    /// Its length in bytes.
    pub len: usize,
    /// Its first bytes in hex (at most 32).
    pub hex: String,
    /// True if `hex` shows only a prefix.
    pub truncated: bool,
}

/// An undo record, decoded.
#[derive(Debug, Serialize)]
pub struct RecordInfo {
    /// `insert`, `update` or `delete_mark`.
    pub kind: &'static str,
    /// The undo number (its position in its transaction).
    pub undo_no: u64,
    /// The clustered index the change was made to.
    pub index_id: u64,
    /// The old record's DB_TRX_ID.
    pub old_trx_id: u64,
    /// The old record's DB_ROLL_PTR.
    pub old_roll_ptr: RollPtrReport,
    /// True if the old record was delete-marked.
    pub old_deleted: bool,
    /// The same transaction's previous record.
    pub prev: Option<AddrInfo>,
    /// The fields (null for SQL NULL): insert, the primary key; update and delete-mark, the
    /// old record without DB_TRX_ID and DB_ROLL_PTR, key fields first.
    pub fields: Vec<Option<FieldInfo>>,
}

impl From<&UndoRecord> for RecordInfo {
    fn from(r: &UndoRecord) -> RecordInfo {
        RecordInfo {
            kind: minnow::history::kind_name(r.kind),
            undo_no: r.undo_no,
            index_id: r.index_id,
            old_trx_id: r.old_trx_id,
            old_roll_ptr: r.old_roll_ptr.into(),
            old_deleted: r.old_deleted,
            prev: r.prev.map(AddrInfo::from),
            fields: r
                .fields
                .iter()
                .map(|f| {
                    f.as_ref().map(|b| FieldInfo {
                        len: b.len(),
                        hex: b
                            .iter()
                            .take(FIELD_SHOW)
                            .map(|x| format!("{x:02x}"))
                            .collect(),
                        truncated: b.len() > FIELD_SHOW,
                    })
                })
                .collect(),
        }
    }
}

/// One stretch of an undo page.
#[derive(Debug, Serialize)]
pub struct EntryInfo {
    /// First byte in this page.
    pub start: u16,
    /// One past the last byte in this page.
    pub end: u16,
    /// `dead`, `header`, `record`, `filler`, `rest` (of an entry begun on an earlier page) or
    /// `bad`.
    pub kind: &'static str,
    /// Where the entry starts.
    pub entry: AddrInfo,
    /// The entry's total length (0 for dead bytes).
    pub len: u32,
    /// The page the entry continues on, if it goes past this page.
    pub continues: Option<u32>,
    /// `rest` only: what the entry is (`header`, `record`, `filler`).
    pub rest_of: Option<&'static str>,
    /// `header` only.
    pub header: Option<LogHeaderInfo>,
    /// `record` only.
    pub record: Option<RecordInfo>,
    /// `bad` only: why it does not decode.
    pub problem: Option<String>,
}

/// minnow's undo page, decoded.
#[derive(Debug, Serialize)]
pub struct UndoInfo {
    /// Offset 38: NEXT undo page (0 = the stream's last).
    pub next: u32,
    /// Offset 42: FREE, the end of the bytes in use.
    pub free: u16,
    /// Bytes left between FREE and the trailer.
    pub bytes_left: usize,
    /// The page's place in its rollback segment's undo stream (0 = FIRST), null if it is on
    /// no segment's stream.
    pub position: Option<u32>,
    /// The rollback segment whose stream holds the page.
    pub rseg: Option<u16>,
    /// That stream's pages (the segment header's PAGES).
    pub stream_pages: Option<u32>,
    /// The stretches of the page, in order.
    pub entries: Vec<EntryInfo>,
}

/// What the transaction pages add to a page report.
#[derive(Debug, Default, Serialize)]
pub struct TrxPages {
    /// The TRX_SYS page.
    pub trx_sys: Option<TrxSysInfo>,
    /// A rollback segment header page.
    pub rseg: Option<RsegInfo>,
    /// The undo page.
    pub undo: Option<UndoInfo>,
    /// Why a page of these types is not decoded (not minnow's layout).
    pub not_decoded: Option<String>,
    /// What is wrong (the command then exits 1).
    pub problems: Vec<String>,
}

/// The minnow TRX_SYS page of the file.
fn sys_id() -> PageId {
    PageId::new(
        minnow::inspect::SYSTEM_SPACE_ID,
        minnow::inspect::TRX_SYS_PAGE,
    )
}

/// True if `p` carries minnow's TRX_SYS type and a format version minnow wrote (1 to 3); an
/// InnoDB TRX_SYS page holds the high half of TRX_SYS_TRX_ID_STORE there (0 in practice).
fn minnow_sys_format(p: &[u8]) -> Option<u32> {
    let ty = bytes::read_u16(p, fil::PAGE_TYPE).ok()?;
    let format = bytes::read_u32(p, minnow_mvcc::trx_sys::sys::FORMAT).ok()?;
    (ty == PageType::TrxSys.to_u16() && (1..=3).contains(&format)).then_some(format)
}

/// The bytes of the file's TRX_SYS page if it is minnow's (any format minnow wrote);
/// `None` if it cannot be read or has another layout.
fn file_sys_bytes(reader: &Reader, page_len: usize) -> Option<Vec<u8>> {
    let mut sys = vec![0u8; page_len];
    let no = u64::from(sys_id().page_no);
    (no < reader.system.space.pages()).then_some(())?;
    reader.system.space.read_page(no, &mut sys).ok()?;
    minnow_sys_format(&sys)?;
    Some(sys)
}

/// Decodes `page` (number `page_no` of the file `reader` reads) if it is a TRX_SYS or undo
/// page; the default (nothing) otherwise.
pub fn decode(reader: &Reader, page_no: u64, page: &[u8], page_type: PageType) -> TrxPages {
    let mut out = TrxPages::default();
    match page_type {
        PageType::TrxSys => trx_sys(page_no, page, &mut out),
        PageType::Sys => rseg_page(reader, page_no, page, &mut out),
        PageType::UndoLog => undo_page(reader, page_no, page, &mut out),
        _ => {}
    }
    out
}

fn trx_sys(page_no: u64, page: &[u8], out: &mut TrxPages) {
    if minnow_sys_format(page).is_none() {
        out.not_decoded = Some(
            "a TRX_SYS page that is not minnow's (no minnow format version 1 to 3 at offset \
             38): InnoDB's TRX_SYS layout (TRX_SYS_TRX_ID_STORE, rollback segment slots, \
             doublewrite header) is not decoded"
                .into(),
        );
        return;
    }
    let id = PageId::new(
        minnow::inspect::SYSTEM_SPACE_ID,
        u32::try_from(page_no).unwrap_or(u32::MAX),
    );
    let sp = match SysPage::read(page, id) {
        Ok(sp) => sp,
        Err(e) => {
            out.problems.push(e.to_string());
            return;
        }
    };
    out.trx_sys = Some(TrxSysInfo {
        format: sp.format,
        trx_id_mark: sp.mark,
        undo_segment: SegInfo {
            space_id: sp.seg.space,
            page_no: sp.seg.page,
            offset: sp.seg.offset,
        },
        rseg_pages: sp.rsegs,
    });
}

/// A SYS page is decoded if the file's TRX_SYS page names it as a rollback segment header.
fn rseg_page(reader: &Reader, page_no: u64, page: &[u8], out: &mut TrxPages) {
    let Some(sp) =
        file_sys_bytes(reader, page.len()).and_then(|b| SysPage::read(&b, sys_id()).ok())
    else {
        return;
    };
    let page_no = u32::try_from(page_no).unwrap_or(u32::MAX);
    let Some(rseg_id) = sp.rsegs.iter().position(|&p| p == page_no) else {
        return;
    };
    let id = PageId::new(minnow::inspect::SYSTEM_SPACE_ID, page_no);
    let r = match RsegPage::read(page, id, rseg_id as u16) {
        Ok(r) => r,
        Err(e) => {
            out.problems.push(e.to_string());
            return;
        }
    };
    let mut slots = Vec::new();
    for &(slot, at) in &r.slots {
        let header = match undo::read_header(reader, minnow::inspect::SYSTEM_SPACE_ID, at) {
            Ok(h) => {
                if h.state != LogState::Active {
                    out.problems.push(format!(
                        "slot {slot} names the log of transaction {} at {}:{}, which is not \
                         active",
                        h.trx_id, at.page, at.offset
                    ));
                }
                Some(LogHeaderInfo::from(&h))
            }
            Err(e) => {
                out.problems.push(format!("slot {slot}: {e}"));
                None
            }
        };
        slots.push(SlotInfo {
            slot,
            header_at: at.into(),
            header,
        });
    }
    out.rseg = Some(RsegInfo {
        id: r.id,
        first_page: r.first_page,
        last_page: r.last_page,
        head: r.head,
        n_pages: r.n_pages,
        history_first: r.hist_first.map(AddrInfo::from),
        history_last: r.hist_last.map(AddrInfo::from),
        history_len: r.hist_len,
        n_slots: r.n_slots,
        slots,
    });
}

fn undo_page(reader: &Reader, page_no: u64, page: &[u8], out: &mut TrxPages) {
    if file_sys_bytes(reader, page.len()).is_none() {
        out.not_decoded = Some(format!(
            "an undo page of a file whose page {} is not minnow's TRX_SYS page: InnoDB's undo \
             page layout (TRX_UNDO_PAGE_HDR, segment and log headers) is not decoded",
            sys_id().page_no
        ));
        return;
    }
    let page_no = u32::try_from(page_no).unwrap_or(u32::MAX);
    let id = PageId::new(minnow::inspect::SYSTEM_SPACE_ID, page_no);
    let (next, free) = match undo::page_fields(page, id) {
        Ok(f) => f,
        Err(e) => {
            out.problems.push(e.to_string());
            return;
        }
    };
    let mut info = UndoInfo {
        next,
        free: free as u16,
        bytes_left: data_end(page.len()).saturating_sub(free),
        position: None,
        rseg: None,
        stream_pages: None,
        entries: Vec::new(),
    };
    match walk_page(reader, sys_id(), page_no) {
        Ok(w) => fill(&mut info, w, &mut out.problems),
        Err(e) => out
            .problems
            .push(format!("the undo stream cannot be walked: {e}")),
    }
    out.undo = Some(info);
}

fn fill(info: &mut UndoInfo, w: PageWalk, problems: &mut Vec<String>) {
    info.position = w.position;
    info.rseg = w.rseg.as_ref().map(|r| r.id);
    info.stream_pages = w.rseg.as_ref().map(|r| r.n_pages);
    for e in w.entries {
        let mut entry = EntryInfo {
            start: e.start,
            end: e.end,
            kind: "dead",
            entry: e.entry.into(),
            len: e.len,
            continues: e.continues,
            rest_of: None,
            header: None,
            record: None,
            problem: None,
        };
        match &e.content {
            Content::Dead => {}
            Content::Header(h) => {
                entry.kind = "header";
                entry.header = Some(h.into());
            }
            Content::Record(r) => {
                entry.kind = "record";
                entry.record = Some(r.into());
            }
            Content::Filler => entry.kind = "filler",
            Content::Rest { kind } => {
                entry.kind = "rest";
                entry.rest_of = Some(match kind {
                    0 => "header",
                    4 => "filler",
                    _ => "record",
                });
            }
            Content::Bad(why) => {
                entry.kind = "bad";
                entry.problem = Some(why.to_string());
                problems.push(why.to_string());
            }
        }
        info.entries.push(entry);
    }
    if let Some(e) = w.error {
        problems.push(format!("walking the undo stream: {e}"));
    }
}

fn addr(a: Option<&AddrInfo>) -> String {
    a.map_or_else(|| "none".into(), |a| format!("{}:{}", a.page, a.offset))
}

fn header_line(h: &LogHeaderInfo) -> String {
    let committed = if h.trx_no != 0 {
        format!(" (trx no {})", h.trx_no)
    } else {
        String::new()
    };
    format!(
        "trx {} {}{committed}, {} log, {} record{}, last {}, history next {}",
        h.trx_id,
        h.state,
        h.log_type,
        h.n_recs,
        if h.n_recs == 1 { "" } else { "s" },
        addr(h.last.as_ref()),
        addr(h.history_next.as_ref())
    )
}

/// Prints what [`decode`] found.
pub fn print_text(t: &TrxPages, out: &mut dyn Write) -> std::io::Result<()> {
    if let Some(s) = &t.trx_sys {
        writeln!(out, "TRX_SYS (minnow format {}, @38):", s.format)?;
        writeln!(
            out,
            "  id mark       @42  {} (above every transaction id and commit number handed out)",
            s.trx_id_mark
        )?;
        writeln!(
            out,
            "  undo segment  @50  FSEG header: space {} page {} offset {}",
            s.undo_segment.space_id, s.undo_segment.page_no, s.undo_segment.offset
        )?;
        writeln!(
            out,
            "  rollback segs @60  {}, header pages (@62): {:?}",
            s.rseg_pages.len(),
            s.rseg_pages
        )?;
    }
    if let Some(s) = &t.rseg {
        writeln!(out, "rollback segment header (minnow, FIL type SYS):")?;
        writeln!(out, "  rseg id       @{}  {}", rseg::ID, s.id)?;
        writeln!(
            out,
            "  undo stream   @{}  FIRST {}, LAST {} (@{}), HEAD {} (@{}), {} page{} (@{})",
            rseg::FIRST,
            s.first_page,
            s.last_page,
            rseg::LAST,
            s.head,
            rseg::HEAD,
            s.n_pages,
            if s.n_pages == 1 { "" } else { "s" },
            rseg::PAGES
        )?;
        writeln!(
            out,
            "  history list  @{}  first {}, last {} (@{}), length {} (@{})",
            rseg::HIST_FIRST,
            addr(s.history_first.as_ref()),
            addr(s.history_last.as_ref()),
            rseg::HIST_LAST,
            s.history_len,
            rseg::HIST_LEN
        )?;
        writeln!(
            out,
            "  slots         @{}  {}, {} used (active transactions):",
            rseg::N_SLOTS,
            s.n_slots,
            s.slots.len()
        )?;
        for slot in &s.slots {
            let at = rseg::SLOTS + 6 * usize::from(slot.slot);
            let what = slot
                .header
                .as_ref()
                .map_or_else(|| "unreadable".into(), header_line);
            writeln!(
                out,
                "    slot {:<4} @{at}: log header at {}: {what}",
                slot.slot,
                addr(Some(&slot.header_at))
            )?;
        }
    }
    if let Some(u) = &t.undo {
        writeln!(out, "undo page header (minnow, @38):")?;
        let next = if u.next == 0 {
            "none (the last page of the chain)".to_string()
        } else {
            u.next.to_string()
        };
        writeln!(out, "  next          @38  {next}")?;
        writeln!(
            out,
            "  free          @42  {} ({} bytes left)",
            u.free, u.bytes_left
        )?;
        match (u.position, u.rseg, u.stream_pages) {
            (Some(p), Some(r), Some(n)) => writeln!(
                out,
                "undo stream: page {} of {n} of rollback segment {r}",
                p + 1
            )?,
            _ => writeln!(
                out,
                "undo stream: on no rollback segment's stream (each runs from its header's \
                 FIRST to LAST): nothing reads this page's bytes, so they are not walked"
            )?,
        }
        if !u.entries.is_empty() {
            writeln!(out, "entries ({UNDO_DATA}..{}):", u.free)?;
        }
        for e in &u.entries {
            print_entry(e, out)?;
        }
    }
    if let Some(why) = &t.not_decoded {
        writeln!(out, "not decoded: {why}")?;
    }
    for p in &t.problems {
        writeln!(out, "problem: {p}")?;
    }
    Ok(())
}

fn print_entry(e: &EntryInfo, out: &mut dyn Write) -> std::io::Result<()> {
    let cont = e
        .continues
        .map_or_else(String::new, |p| format!(", continues on page {p}"));
    let here = format!("@{:<5}", e.start);
    match e.kind {
        "dead" => writeln!(
            out,
            "  {here} dead bytes {}..{} (before HEAD: purged and trimmed)",
            e.start, e.end
        ),
        "header" => {
            let h = e.header.as_ref().map_or_else(String::new, header_line);
            writeln!(out, "  {here} log header ({} bytes): {h}", e.len)
        }
        "record" => {
            let Some(r) = &e.record else { return Ok(()) };
            writeln!(
                out,
                "  {here} {} undo record ({} bytes{cont}): undo no {}, index {}, old trx {}, \
                 prev {}",
                r.kind,
                e.len,
                r.undo_no,
                r.index_id,
                r.old_trx_id,
                addr(r.prev.as_ref())
            )?;
            let p = &r.old_roll_ptr;
            writeln!(
                out,
                "          old roll ptr {} ({}page {} offset {}){}",
                p.hex,
                if p.insert { "insert, " } else { "" },
                p.page,
                p.offset,
                if r.old_deleted {
                    ", old record delete-marked"
                } else {
                    ""
                }
            )?;
            let fields: Vec<String> = r
                .fields
                .iter()
                .map(|f| match f {
                    None => "NULL".into(),
                    Some(f) => format!(
                        "{}{}",
                        f.hex,
                        if f.truncated {
                            format!("..({} bytes)", f.len)
                        } else {
                            String::new()
                        }
                    ),
                })
                .collect();
            writeln!(
                out,
                "          fields ({}): {}",
                fields.len(),
                fields.join(" ")
            )
        }
        "filler" => writeln!(
            out,
            "  {here} filler ({} bytes{cont}): the unfinished start of a long record",
            e.len
        ),
        "rest" => writeln!(
            out,
            "  {here} bytes {}..{}: the rest of the {} at {} ({} bytes){cont}",
            e.start,
            e.end,
            e.rest_of.unwrap_or("entry"),
            addr(Some(&e.entry)),
            e.len
        ),
        _ => writeln!(
            out,
            "  {here} does not decode: {}",
            e.problem.as_deref().unwrap_or("?")
        ),
    }
}
