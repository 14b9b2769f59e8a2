//! The transaction system: transaction ids, the TRX_SYS page, undo logs and commit.
//!
//! ## Transaction ids that survive a crash
//!
//! A transaction gets its id when it first writes (a read-only transaction never gets one,
//! as in InnoDB). Ids come from one counter, which also hands out **commit numbers**
//! (`trx_no`) at commit, so "committed before" is a comparison of numbers. An id must never be
//! handed out twice, not even across a crash, or a reader could take a new transaction's
//! change for an old one's. Writing the counter for every id would cost a redo record per
//! transaction; instead, as InnoDB's `TRX_SYS_TRX_ID_STORE`, the TRX_SYS page holds a
//! **mark** above every id handed out, moved [`TRX_ID_MARGIN`] ahead in a mini-transaction
//! whenever the counter reaches it. That mtr is in the redo log before any change stamped
//! with an id below the new mark, so after a crash `open` restarts the counter at the mark:
//! a gap of at most the margin, never a reuse.
//!
//! ## The TRX_SYS page
//!
//! The first page of the undo segment (page 3 of a fresh system tablespace), FIL type
//! `TRX_SYS` = 7:
//!
//! ```text
//!  38  u32   format version (2)
//!  42  u64   TRX_ID_MARK: above every transaction id and commit number handed out
//!  50  10    FSEG header of the undo segment (which owns this page and every undo page)
//!  60  u32   FIRST undo page of the undo stream
//!  64  u32   LAST undo page (where appends go)
//!  68  6     HISTORY first: oldest committed update log (page u32, offset u16; 0 = none)
//!  74  6     HISTORY last: newest committed update log
//!  80  u64   HISTORY length (InnoDB's history list length)
//!  88  u16   HEAD: offset in FIRST of the stream's first entry (bytes before it are dead)
//!  90  u32   PAGES: undo pages in the stream, FIRST to LAST
//!  94  u16   N_SLOTS
//!  96  6×N   slots: the log header of each active transaction (page u32, offset u16)
//! ```
//!
//! Format 1 (before purge) had no HEAD and PAGES and its slots at 90; it is refused.
//!
//! ## One undo log per transaction
//!
//! A writing transaction takes a free slot and appends a **log header** to the undo stream
//! (one mtr), then one undo record per change (one mtr each, before the change itself),
//! updating the header's `last` record and record count. InnoDB keeps an insert undo log
//! and an update undo log per transaction; minnow keeps one log, as MariaDB does since 10.3,
//! and keeps the distinction where it matters: the roll pointer's insert flag marks insert
//! records, and the header's type says whether the log holds any update or delete-mark
//! record. **Commit** is one mtr: the header becomes committed with its commit number, the
//! slot is freed, and a log with update records joins the **history list**, the committed
//! logs that readers with old views may still need. That mtr is the commit point: after a
//! crash, a log in a slot is active and is rolled back.
//!
//! ## Read views, the purge view and giving undo space back
//!
//! Every consistent read holds an [`OpenView`], registered here until it is dropped, so the
//! transaction system knows the **oldest view** still open. Purge (in the `minnow` crate,
//! which knows what records mean) asks for a [`TrxSys::purge_view`]: a copy of the oldest
//! view, or a fresh one if none is open. A committed log whose commit number is below that
//! view's `low_limit_no` was committed before every open view was taken, so no reader can
//! need the versions it holds: purge removes what it describes and then takes it off the
//! history list ([`TrxSys::finish_purge`], one mtr that also marks its header purged).
//!
//! The undo stream is then **trimmed at its head** ([`TrxSys::trim`]): walking the entries of
//! the first page from HEAD, a page whose entries are all dead (fillers, records, headers of
//! logs that are committed insert-only, rolled back or purged) is freed back to the undo
//! segment, whose free pages the next appends take again. The first header of an active
//! log, or of a committed update log still in the history, stops the walk: everything after
//! it may be needed. A transaction that stays open (or a read view that does) therefore pins
//! every undo page written after it, which is why long transactions make undo grow.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use minnow_btree::space::{self, FsegHeader};
use minnow_buf::{BufferPool, Mtr, PageHandle};
use minnow_page::walk::CycleGuard;
use minnow_page::{PageId, PageType, bytes, fil};
use minnow_redo::Lsn;
use parking_lot::Mutex;

use crate::error::{MvccError, Result};
use crate::read_view::ReadView;
use crate::roll_ptr::RollPtr;
use crate::undo::record::{
    FILLER, HEADER_KIND, LOG_HEADER_LEN, LogHeader, LogState, UndoAddr, UndoKind, UndoRecord, hdr,
};
use crate::undo::{
    self, PageSource, UNDO_DATA, UNDO_FREE, UNDO_NEXT, data_end, held_fields, init_undo_page,
};

/// How far ahead of the id counter the persisted mark is written.
pub const TRX_ID_MARGIN: u64 = 256;
/// The TRX_SYS page format version.
pub const TRX_SYS_FORMAT: u32 = 2;
/// At most this many slots (concurrent writing transactions), as one InnoDB rollback segment.
pub const MAX_SLOTS: usize = 1024;

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

/// A transaction's undo log, as its owner holds it in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndoLog {
    /// The transaction.
    pub trx_id: u64,
    /// Where its header is.
    pub header: UndoAddr,
    slot: u16,
    /// Its newest record still to be undone.
    pub last: Option<UndoAddr>,
    /// Records written (the next undo number): a savepoint.
    pub n_recs: u64,
    /// True once it holds an update or delete-mark record.
    pub update: bool,
}

impl UndoLog {
    /// The savepoint at this moment: rolling back to it undoes every later record.
    pub fn savepoint(&self) -> u64 {
        self.n_recs
    }
}

/// Where appended bytes may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// In one page (a log header): a new page if they do not fit.
    Whole,
    /// The start of a record: at least its first 8 bytes in the current page.
    Start,
    /// Right after the previous bytes (the next piece of a long record).
    Continue,
}

/// What the caller passes to [`TrxSys::append`]: an undo record without its log position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRecord {
    /// What it undoes.
    pub kind: UndoKind,
    /// True if the old record was delete-marked.
    pub old_deleted: bool,
    /// The clustered index.
    pub index_id: u64,
    /// The old `DB_TRX_ID`.
    pub old_trx_id: u64,
    /// The old `DB_ROLL_PTR`.
    pub old_roll_ptr: RollPtr,
    /// The fields (see [`UndoRecord::fields`]).
    pub fields: Vec<Option<Vec<u8>>>,
}

#[derive(Debug)]
struct Ids {
    next: u64,
    mark: u64,
    active: BTreeSet<u64>,
    /// Commit numbers of transactions between taking their number and leaving `active`.
    committing: BTreeSet<u64>,
    /// The open read views, by when they were opened (oldest first).
    views: BTreeMap<u64, ReadView>,
    view_seq: u64,
}

impl Ids {
    /// A view of the system now (InnoDB's `ReadView::prepare`).
    fn view(&self, creator: u64) -> ReadView {
        ReadView::new(self.next, creator, self.active.iter().copied().collect())
            .with_low_limit_no(self.committing.first().copied().unwrap_or(self.next))
    }
}

/// Counters kept as atomics so that a status snapshot takes no lock writers take.
#[derive(Debug, Default)]
struct Mirror {
    next_id: AtomicU64,
    active: AtomicU64,
    history_len: AtomicU64,
    undo_pages: AtomicU64,
    views: AtomicU64,
    /// The low limit of the oldest open view (`u64::MAX`: none).
    oldest_view: AtomicU64,
    pages_freed: AtomicU64,
}

#[derive(Debug, Clone)]
struct Tail {
    first_page: u32,
    head: u16,
    n_pages: u64,
    last_page: u32,
    free_slots: Vec<u16>,
    hist_first: Option<UndoAddr>,
    hist_last: Option<UndoAddr>,
    hist_len: u64,
}

/// What the transaction system looks like now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrxStatus {
    /// The next transaction id.
    pub next_id: u64,
    /// Active writing transactions.
    pub active: usize,
    /// Committed update undo logs not purged (InnoDB's history list length).
    pub history_len: u64,
    /// Undo pages in the undo stream.
    pub undo_pages: u64,
    /// Undo pages given back to the undo segment since open.
    pub undo_pages_freed: u64,
    /// Read views open now.
    pub open_views: u64,
    /// The low limit (next transaction id when it was taken) of the oldest open view, `None`
    /// if no view is open: `next_id` minus it is how many transaction ids ago the oldest
    /// reader's snapshot was taken, the distance purge trails by at least.
    pub oldest_view_low_limit: Option<u64>,
}

/// A registered read view: while it (or a clone of it) lives, purge keeps every version it
/// may need. Dereferences to the [`ReadView`].
#[derive(Debug, Clone)]
pub struct OpenView {
    view: ReadView,
    _guard: Arc<ViewGuard>,
}

#[derive(Debug)]
struct ViewGuard {
    ids: Arc<Mutex<Ids>>,
    mirror: Arc<Mirror>,
    seq: u64,
}

impl Drop for ViewGuard {
    fn drop(&mut self) {
        let mut ids = self.ids.lock();
        ids.views.remove(&self.seq);
        publish_views(&ids, &self.mirror);
    }
}

fn publish_views(ids: &Ids, mirror: &Mirror) {
    mirror
        .views
        .store(ids.views.len() as u64, Ordering::Relaxed);
    mirror.oldest_view.store(
        ids.views
            .values()
            .next()
            .map_or(u64::MAX, ReadView::low_limit),
        Ordering::Relaxed,
    );
}

impl OpenView {
    /// Makes `creator` the owner in this copy (a transaction that writes after its view was
    /// taken); the registered copy keeps seeing the creator's changes as invisible, as
    /// InnoDB's purge view does.
    pub fn set_creator(&mut self, creator: u64) {
        self.view.set_creator(creator);
    }

    /// The view.
    pub fn view(&self) -> &ReadView {
        &self.view
    }
}

impl std::ops::Deref for OpenView {
    type Target = ReadView;
    fn deref(&self) -> &ReadView {
        &self.view
    }
}

/// What [`TrxSys::check`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UndoCheck {
    /// The undo pages of the stream, FIRST to LAST.
    pub pages: Vec<u32>,
    /// Logs in the history list.
    pub history_len: u64,
}

/// The TRX_SYS page, decoded: every field of the layout in the module docs, as the bytes
/// say (read by [`TrxSys::open`], and by tools that read the file without opening it).
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
    fn free_slots(&self) -> Vec<u16> {
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

/// The transactions the TRX_SYS page at `page` lists as active (one log header per used
/// slot), read through any [`PageSource`]: what a tool that reads the data file without
/// opening the database learns about who had not committed when the page was last written.
/// Writes nothing. Checks the page type and format as [`TrxSys::open`] does.
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

/// The transaction system: the id counter, the active transactions and the undo store.
#[derive(Debug)]
pub struct TrxSys {
    page: PageId,
    seg: FsegHeader,
    n_slots: u16,
    ids: Arc<Mutex<Ids>>,
    tail: Mutex<Tail>,
    mirror: Arc<Mirror>,
    /// The last purge view: a writer whose changes it sees may have had its undo log purged,
    /// so no roll pointer it wrote may be followed (see [`TrxSys::undo_may_be_gone`]).
    purge_limit: Mutex<ReadView>,
    /// The smallest active transaction id, `u64::MAX` if none: a record whose writer is
    /// below it is committed, which is all an autocommit read needs to know (no view).
    oldest_active: AtomicU64,
}

fn addr_bytes(a: Option<UndoAddr>) -> [u8; 6] {
    let a = a.unwrap_or(UndoAddr { page: 0, offset: 0 });
    let [p0, p1, p2, p3] = a.page.to_be_bytes();
    let [o0, o1] = a.offset.to_be_bytes();
    [p0, p1, p2, p3, o0, o1]
}

fn read_addr(p: &[u8], at: usize) -> Option<Option<UndoAddr>> {
    Some(UndoAddr::non_null(
        bytes::read_u32(p, at).ok()?,
        bytes::read_u16(p, at + 4).ok()?,
    ))
}

impl TrxSys {
    /// Creates the undo segment, the TRX_SYS page and the first undo page of `space` in one
    /// mtr (at database creation). Returns the transaction system and the mtr's end LSN.
    pub fn create(pool: &BufferPool, space: u32) -> Result<(TrxSys, Lsn)> {
        let page_len = pool.config().page_size.bytes();
        let n_slots = ((page_len - fil::TRAILER_SIZE - sys::SLOTS) / 6).min(MAX_SLOTS) as u16;
        let mut mtr = pool.mtr()?;
        let seg = space::create_segment(&mut mtr, space)?;
        let h = space::allocate_in(&mut mtr, seg.header, None)?;
        let u = space::allocate_in(&mut mtr, seg.header, None)?;
        let page = mtr.page_id(h).unwrap_or(PageId::new(space, 0));
        let first = mtr.page_id(u).map_or(0, |id| id.page_no);
        mtr.write(h, fil::PAGE_TYPE, &PageType::TrxSys.to_u16().to_be_bytes())?;
        mtr.write(h, sys::FORMAT, &TRX_SYS_FORMAT.to_be_bytes())?;
        mtr.write(h, sys::MARK, &1u64.to_be_bytes())?;
        mtr.write(h, sys::SEG, &seg.header.to_bytes())?;
        mtr.write(h, sys::FIRST, &first.to_be_bytes())?;
        mtr.write(h, sys::LAST, &first.to_be_bytes())?;
        mtr.write(h, sys::HEAD, &(UNDO_DATA as u16).to_be_bytes())?;
        mtr.write(h, sys::PAGES, &1u32.to_be_bytes())?;
        mtr.write(h, sys::N_SLOTS, &n_slots.to_be_bytes())?;
        init_undo_page(&mut mtr, u)?;
        let end = mtr.commit()?;
        let tail = Tail {
            first_page: first,
            head: UNDO_DATA as u16,
            n_pages: 1,
            last_page: first,
            free_slots: (0..n_slots).rev().collect(),
            hist_first: None,
            hist_last: None,
            hist_len: 0,
        };
        let trx_sys = TrxSys::assemble(page, seg.header, n_slots, 1, BTreeSet::new(), tail);
        Ok((trx_sys, end))
    }

    fn assemble(
        page: PageId,
        seg: FsegHeader,
        n_slots: u16,
        mark: u64,
        active: BTreeSet<u64>,
        tail: Tail,
    ) -> TrxSys {
        let mirror = Mirror {
            next_id: AtomicU64::new(mark),
            active: AtomicU64::new(active.len() as u64),
            history_len: AtomicU64::new(tail.hist_len),
            undo_pages: AtomicU64::new(tail.n_pages),
            oldest_view: AtomicU64::new(u64::MAX),
            ..Mirror::default()
        };
        let oldest = active.first().copied().unwrap_or(mark);
        // Until the first purge of this run, any committed transaction may have had its log
        // purged by an earlier run: all of them are behind the limit.
        let purge_limit = ReadView::new(mark, 0, active.iter().copied().collect());
        TrxSys {
            page,
            seg,
            n_slots,
            ids: Arc::new(Mutex::new(Ids {
                next: mark,
                mark,
                active,
                committing: BTreeSet::new(),
                views: BTreeMap::new(),
                view_seq: 0,
            })),
            tail: Mutex::new(tail),
            mirror: Arc::new(mirror),
            purge_limit: Mutex::new(purge_limit),
            oldest_active: AtomicU64::new(oldest),
        }
    }

    /// Opens the transaction system whose TRX_SYS page is `page`. Returns it and the undo
    /// logs of the transactions that were active when the database stopped (after a crash),
    /// which the caller must roll back ([`TrxSys::last_record`] and [`TrxSys::pop`], then [`TrxSys::finish_rollback`]) before anything else runs.
    pub fn open(pool: &BufferPool, page: PageId) -> Result<(TrxSys, Vec<UndoLog>)> {
        let sp = pool.with_page(page, |p| SysPage::read(p, page))??;
        let free_slots = sp.free_slots();
        // Highest slot first, as before the decoding moved into `SysPage`.
        let slots: Vec<(u16, UndoAddr)> = sp.slots.iter().rev().copied().collect();
        let mut active = BTreeSet::new();
        let mut logs = Vec::new();
        for (slot, header) in slots {
            let h = slot_header(pool, page, slot, header)?;
            active.insert(h.trx_id);
            logs.push(UndoLog {
                trx_id: h.trx_id,
                header,
                slot,
                last: h.last,
                n_recs: h.n_recs,
                update: h.update,
            });
        }
        let tail = Tail {
            first_page: sp.first_page,
            head: sp.head,
            n_pages: u64::from(sp.n_pages),
            last_page: sp.last_page,
            free_slots,
            hist_first: sp.hist_first,
            hist_last: sp.hist_last,
            hist_len: sp.hist_len,
        };
        let trx_sys = TrxSys::assemble(page, sp.seg, sp.n_slots, sp.mark, active, tail);
        Ok((trx_sys, logs))
    }

    /// The TRX_SYS page.
    pub fn page(&self) -> PageId {
        self.page
    }

    /// The undo segment's FSEG header.
    pub fn segment(&self) -> FsegHeader {
        self.seg
    }

    /// The number of undo slots (the most transactions that may write at once).
    pub fn slots(&self) -> usize {
        usize::from(self.n_slots)
    }

    /// Takes the next number from the counter, moving the persisted mark first if needed.
    fn take_number(&self, pool: &BufferPool, ids: &mut Ids) -> Result<u64> {
        if ids.next >= ids.mark {
            let mark = ids.next + TRX_ID_MARGIN;
            let mut mtr = pool.mtr()?;
            let h = mtr.get_write(self.page)?;
            mtr.write(h, sys::MARK, &mark.to_be_bytes())?;
            mtr.commit()?;
            ids.mark = mark;
        }
        let n = ids.next;
        ids.next += 1;
        Ok(n)
    }

    /// Gives a transaction its id (at its first write) and makes it active.
    pub fn assign_id(&self, pool: &BufferPool) -> Result<u64> {
        let mut ids = self.ids.lock();
        let id = self.take_number(pool, &mut ids)?;
        ids.active.insert(id);
        self.publish_oldest(&ids);
        Ok(id)
    }

    fn publish_oldest(&self, ids: &Ids) {
        self.oldest_active.store(
            ids.active.first().copied().unwrap_or(ids.next),
            Ordering::Release,
        );
        self.mirror.next_id.store(ids.next, Ordering::Relaxed);
        self.mirror
            .active
            .store(ids.active.len() as u64, Ordering::Relaxed);
    }

    /// Ends a transaction: no longer active, and (if it committed with number `trx_no`) no
    /// longer committing.
    fn deactivate(&self, trx_id: u64, trx_no: Option<u64>) {
        let mut ids = self.ids.lock();
        ids.active.remove(&trx_id);
        if let Some(no) = trx_no {
            ids.committing.remove(&no);
        }
        self.publish_oldest(&ids);
    }

    /// Forgets a transaction that got an id but never started a log (nothing to commit).
    pub fn forget(&self, trx_id: u64) {
        self.deactivate(trx_id, None);
    }

    /// True if `trx_id` is an active (uncommitted) writing transaction.
    pub fn is_active(&self, trx_id: u64) -> bool {
        if trx_id < self.oldest_active.load(Ordering::Acquire) {
            return false;
        }
        self.ids.lock().active.contains(&trx_id)
    }

    /// A bound below which every transaction id has ended: the smallest active id, or, when
    /// none is active, the next id to be given out (ids are handed out in increasing order,
    /// so any transaction that starts later gets an id at or above the bound). A transaction
    /// leaves the active set only after its rollback has restored every row it changed, so a
    /// record whose writer is below a bound read *before* the record was read is committed:
    /// the cheap test of an autocommit read. (A bound read after the record could count a
    /// writer that rolled back in between as committed.)
    pub fn oldest_active(&self) -> u64 {
        self.oldest_active.load(Ordering::Acquire)
    }

    /// Opens a read view for a transaction whose id is `creator` (0 if it has none yet),
    /// registered until the last clone of it is dropped: purge keeps what it may need.
    pub fn open_view(&self, creator: u64) -> OpenView {
        let mut ids = self.ids.lock();
        let view = ids.view(creator);
        let seq = ids.view_seq;
        ids.view_seq += 1;
        // The registered copy has no creator: the creator's own changes, invisible to
        // everyone else, must not count as seen (InnoDB adds the creator to a purge view's
        // ids for the same reason). An active creator is in the copy's ids already.
        let registered = ids.view(0);
        ids.views.insert(seq, registered);
        publish_views(&ids, &self.mirror);
        drop(ids);
        OpenView {
            view,
            _guard: Arc::new(ViewGuard {
                ids: Arc::clone(&self.ids),
                mirror: Arc::clone(&self.mirror),
                seq,
            }),
        }
    }

    /// The purge view: a copy of the oldest open view, or a view of the system now if none
    /// is open. Every view open now sees at least what it sees, so a change it sees is seen
    /// by all readers, and a committed log whose commit number is below its
    /// [`ReadView::low_limit_no`] is needed by none. It also becomes the limit of
    /// [`TrxSys::undo_may_be_gone`], before purge frees anything.
    pub fn purge_view(&self) -> ReadView {
        let view = {
            let ids = self.ids.lock();
            match ids.views.values().next() {
                Some(v) => v.clone(),
                None => ids.view(0),
            }
        };
        let mut limit = self.purge_limit.lock();
        // Views only get newer, but keep the limit monotonic whatever happens.
        if view.low_limit() >= limit.low_limit() {
            *limit = view.clone();
        }
        view
    }

    /// True if the undo record a roll pointer written by transaction `writer` points at may
    /// have been purged (its log freed and its space reused): the writer's changes are seen
    /// by the last purge view. A walk of old versions must stop before following such a
    /// pointer; no reader needs what lies behind it. Readers with a view never meet one
    /// (a view sees every change the purge view sees), only walks without a view
    /// (rollback's look at older versions) must ask.
    pub fn undo_may_be_gone(&self, writer: u64) -> bool {
        self.purge_limit.lock().changes_visible(writer)
    }

    /// Counters for status output, from atomics: takes no lock writers or readers take.
    pub fn status(&self) -> TrxStatus {
        let m = &self.mirror;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let oldest = load(&m.oldest_view);
        TrxStatus {
            next_id: load(&m.next_id),
            active: load(&m.active) as usize,
            history_len: load(&m.history_len),
            undo_pages: load(&m.undo_pages),
            undo_pages_freed: load(&m.pages_freed),
            open_views: load(&m.views),
            oldest_view_low_limit: (oldest != u64::MAX).then_some(oldest),
        }
    }

    /// Appends `data` to the undo stream inside `mtr` and returns where it starts. With
    /// [`Place::Whole`] the bytes never straddle pages (log headers); with [`Place::Continue`]
    /// they follow the previous bytes directly (the next piece of a long record).
    fn append_bytes(
        &self,
        mtr: &mut Mtr<'_>,
        tail: &mut Tail,
        data: &[u8],
        place: Place,
    ) -> Result<UndoAddr> {
        let space = self.page.space;
        let mut h = mtr.get_write(PageId::new(space, tail.last_page))?;
        let (_, mut free) = held_fields(mtr, h, PageId::new(space, tail.last_page))?;
        let end = data_end(mtr.page(h).len());
        let first = match place {
            Place::Whole => data.len(),
            Place::Start => data.len().min(8),
            Place::Continue => 1,
        };
        if end - free < first {
            h = self.next_page(mtr, tail, h)?;
            free = UNDO_DATA;
        }
        let start = UndoAddr {
            page: tail.last_page,
            offset: free as u16,
        };
        let mut rest = data;
        loop {
            let n = rest.len().min(end - free);
            let (now, later) = rest.split_at(n);
            mtr.write(h, free, now)?;
            free += n;
            mtr.write(h, UNDO_FREE, &(free as u16).to_be_bytes())?;
            rest = later;
            if rest.is_empty() {
                return Ok(start);
            }
            h = self.next_page(mtr, tail, h)?;
            free = UNDO_DATA;
        }
    }

    /// Installs `t` as the tail and mirrors its counters for status.
    fn publish_tail(&self, tail: &mut Tail, t: Tail) {
        self.mirror.history_len.store(t.hist_len, Ordering::Relaxed);
        self.mirror.undo_pages.store(t.n_pages, Ordering::Relaxed);
        *tail = t;
    }

    /// Allocates a new undo page, links it after `h` and makes it the stream's last page.
    fn next_page(&self, mtr: &mut Mtr<'_>, tail: &mut Tail, h: PageHandle) -> Result<PageHandle> {
        let s = mtr.get_write(self.page)?;
        let n = space::allocate_in(mtr, self.seg, None)?;
        init_undo_page(mtr, n)?;
        let no = mtr.page_id(n).map_or(0, |id| id.page_no);
        mtr.write(h, UNDO_NEXT, &no.to_be_bytes())?;
        mtr.write(s, sys::LAST, &no.to_be_bytes())?;
        tail.n_pages += 1;
        mtr.write(s, sys::PAGES, &(tail.n_pages as u32).to_be_bytes())?;
        tail.last_page = no;
        Ok(n)
    }

    /// Starts transaction `trx_id`'s undo log: takes a slot and appends its header, in one
    /// mtr.
    pub fn begin_log(&self, pool: &BufferPool, trx_id: u64) -> Result<UndoLog> {
        let mut tail = self.tail.lock();
        let mut t = tail.clone();
        let slot = t.free_slots.pop().ok_or(MvccError::TooManyTransactions {
            slots: usize::from(self.n_slots),
        })?;
        let mut mtr = pool.mtr()?;
        let s = mtr.get_write(self.page)?;
        let header = self.append_bytes(
            &mut mtr,
            &mut t,
            &LogHeader::new(trx_id).encode(),
            Place::Whole,
        )?;
        mtr.write(
            s,
            sys::SLOTS + 6 * usize::from(slot),
            &addr_bytes(Some(header)),
        )?;
        mtr.commit()?;
        self.publish_tail(&mut tail, t);
        Ok(UndoLog {
            trx_id,
            header,
            slot,
            last: None,
            n_recs: 0,
            update: false,
        })
    }

    fn header_handle(&self, mtr: &mut Mtr<'_>, log: &UndoLog) -> Result<(PageHandle, usize)> {
        let id = PageId::new(self.page.space, log.header.page);
        let h = mtr.get_write(id)?;
        held_fields(mtr, h, id)?;
        let off = usize::from(log.header.offset);
        if off + LOG_HEADER_LEN > data_end(mtr.page(h).len()) {
            return Err(MvccError::CorruptUndo {
                page: id,
                offset: off,
                expected: "a log header inside the page".into(),
                found: "one past its end".into(),
            });
        }
        Ok((h, off))
    }

    /// Appends an undo record to `log` in its own mtr (to be committed before the change it
    /// describes) and returns the roll pointer to store in the changed record.
    pub fn append(&self, pool: &BufferPool, log: &mut UndoLog, rec: NewRecord) -> Result<RollPtr> {
        let kind = rec.kind;
        let full = UndoRecord {
            kind,
            old_deleted: rec.old_deleted,
            undo_no: log.n_recs,
            index_id: rec.index_id,
            old_trx_id: rec.old_trx_id,
            old_roll_ptr: rec.old_roll_ptr,
            prev: log.last,
            fields: rec.fields,
        };
        let bytes = full
            .encode()
            .map_err(|what| MvccError::RecordTooLarge { what })?;
        let mut tail = self.tail.lock();
        let mut t = tail.clone();
        // A long record (a row with big BLOBs) is written a page's worth per mtr, so that no
        // mtr needs more redo than the log keeps free for one (`BufferPool::mtr` waits for
        // four pages' worth); only the last mtr links the record into the log (the header's
        // `last`), so a crash in between leaves unreferenced bytes, never half a record.
        // Until that last mtr the bytes are a FILLER whose length covers what is written, so
        // the stream stays a walkable sequence of entries whatever the crash leaves.
        let piece = pool.config().page_size.bytes();
        let space = self.page.space;
        let mut first: Option<UndoAddr> = None;
        let mut written = 0usize;
        let mut rest: &[u8] = &bytes;
        while rest.len() > piece {
            let (now, later) = rest.split_at(piece);
            let mut mtr = pool.mtr()?;
            written += now.len();
            match first {
                None => {
                    let mut b = now.to_vec();
                    if let Some(len) = b.get_mut(0..4) {
                        len.copy_from_slice(&(written as u32).to_be_bytes());
                    }
                    if let Some(k) = b.get_mut(hdr::KIND) {
                        *k = FILLER;
                    }
                    first = Some(self.append_bytes(&mut mtr, &mut t, &b, Place::Start)?);
                }
                Some(f) => {
                    self.append_bytes(&mut mtr, &mut t, now, Place::Continue)?;
                    let h = mtr.get_write(PageId::new(space, f.page))?;
                    mtr.write(h, usize::from(f.offset), &(written as u32).to_be_bytes())?;
                }
            }
            mtr.commit()?;
            self.publish_tail(&mut tail, t.clone());
            rest = later;
        }
        let mut mtr = pool.mtr()?;
        let (h, off) = self.header_handle(&mut mtr, log)?;
        let place = if first.is_none() {
            Place::Start
        } else {
            Place::Continue
        };
        let last = self.append_bytes(&mut mtr, &mut t, rest, place)?;
        if let (Some(f), Some(prefix)) = (first, bytes.get(0..=hdr::KIND)) {
            // The real length and kind: the record exists from this mtr on.
            let fh = mtr.get_write(PageId::new(space, f.page))?;
            mtr.write(fh, usize::from(f.offset), prefix)?;
        }
        let at = first.unwrap_or(last);
        let update = log.update || kind != UndoKind::Insert;
        mtr.write(h, off + hdr::LAST, &addr_bytes(Some(at)))?;
        mtr.write(h, off + hdr::N_RECS, &(log.n_recs + 1).to_be_bytes())?;
        if update && !log.update {
            mtr.write(h, off + hdr::TYPE, &[2])?;
        }
        mtr.commit()?;
        self.publish_tail(&mut tail, t);
        log.last = Some(at);
        log.n_recs += 1;
        log.update = update;
        Ok(RollPtr {
            insert: kind == UndoKind::Insert,
            rseg: 0,
            page: at.page,
            offset: at.offset,
        })
    }

    /// Reads the undo record a roll pointer addresses.
    pub fn read(&self, pool: &BufferPool, ptr: RollPtr) -> Result<UndoRecord> {
        undo::read_record(
            pool,
            self.page.space,
            UndoAddr {
                page: ptr.page,
                offset: ptr.offset,
            },
        )
    }

    /// Commits: one mtr marks the log committed with its commit number, frees its slot and
    /// (for a log with update records) appends it to the history list. That mtr is the
    /// commit point; the transaction stops being active after it. Returns its end LSN.
    pub fn commit(&self, pool: &BufferPool, log: &UndoLog) -> Result<Lsn> {
        let trx_no = {
            let mut ids = self.ids.lock();
            let no = self.take_number(pool, &mut ids)?;
            ids.committing.insert(no);
            no
        };
        let end = (|| -> Result<Lsn> {
            let mut tail = self.tail.lock();
            let mut t = tail.clone();
            let mut mtr = pool.mtr()?;
            let s = mtr.get_write(self.page)?;
            let (h, off) = self.header_handle(&mut mtr, log)?;
            mtr.write(h, off + hdr::STATE, &[2])?;
            mtr.write(h, off + hdr::TRX_NO, &trx_no.to_be_bytes())?;
            mtr.write(s, sys::SLOTS + 6 * usize::from(log.slot), &[0; 6])?;
            if log.update {
                match t.hist_last {
                    Some(prev) => {
                        let id = PageId::new(self.page.space, prev.page);
                        let ph = mtr.get_write(id)?;
                        mtr.write(
                            ph,
                            usize::from(prev.offset) + hdr::HISTORY_NEXT,
                            &addr_bytes(Some(log.header)),
                        )?;
                    }
                    None => {
                        mtr.write(s, sys::HIST_FIRST, &addr_bytes(Some(log.header)))?;
                        t.hist_first = Some(log.header);
                    }
                }
                t.hist_last = Some(log.header);
                t.hist_len += 1;
                mtr.write(s, sys::HIST_LAST, &addr_bytes(Some(log.header)))?;
                mtr.write(s, sys::HIST_LEN, &t.hist_len.to_be_bytes())?;
            }
            let end = mtr.commit()?;
            t.free_slots.push(log.slot);
            self.publish_tail(&mut tail, t);
            Ok(end)
        })();
        let end = match end {
            Ok(end) => end,
            Err(e) => {
                // Not committed: not committing either, or purge would wait for it forever.
                self.ids.lock().committing.remove(&trx_no);
                return Err(e);
            }
        };
        self.deactivate(log.trx_id, Some(trx_no));
        Ok(end)
    }

    /// The newest record of `log` still to be undone, if its undo number is at least
    /// `savepoint`; the caller undoes it and then calls [`TrxSys::pop`].
    pub fn last_record(
        &self,
        pool: &BufferPool,
        log: &UndoLog,
        savepoint: u64,
    ) -> Result<Option<(RollPtr, UndoRecord)>> {
        let Some(at) = log.last else {
            return Ok(None);
        };
        let rec = undo::read_record(pool, self.page.space, at)?;
        if rec.undo_no < savepoint {
            return Ok(None);
        }
        let ptr = RollPtr {
            insert: rec.kind == UndoKind::Insert,
            rseg: 0,
            page: at.page,
            offset: at.offset,
        };
        Ok(Some((ptr, rec)))
    }

    /// Removes the newest record `rec` from `log` once it is undone (one mtr moving the
    /// header's `last` to the record before it), so a crash after this never undoes it
    /// again and a later rollback does not see it.
    pub fn pop(&self, pool: &BufferPool, log: &mut UndoLog, rec: &UndoRecord) -> Result<Lsn> {
        let _tail = self.tail.lock();
        let mut mtr = pool.mtr()?;
        let (h, off) = self.header_handle(&mut mtr, log)?;
        mtr.write(h, off + hdr::LAST, &addr_bytes(rec.prev))?;
        let end = mtr.commit()?;
        log.last = rec.prev;
        Ok(end)
    }

    /// Ends a rollback to the transaction's start: the log becomes rolled back and its slot
    /// free, in one mtr; the transaction stops being active.
    pub fn finish_rollback(&self, pool: &BufferPool, log: &UndoLog) -> Result<Lsn> {
        let end = {
            let mut tail = self.tail.lock();
            let mut mtr = pool.mtr()?;
            let s = mtr.get_write(self.page)?;
            let (h, off) = self.header_handle(&mut mtr, log)?;
            mtr.write(h, off + hdr::STATE, &[3])?;
            mtr.write(s, sys::SLOTS + 6 * usize::from(log.slot), &[0; 6])?;
            let end = mtr.commit()?;
            tail.free_slots.push(log.slot);
            end
        };
        self.deactivate(log.trx_id, None);
        Ok(end)
    }

    /// Verifies the undo store: reads every undo page of the stream from FIRST (so a damaged
    /// page is a checksum error naming it) and checks its header, that the chain ends at
    /// LAST after PAGES pages, and walks the history list: as long as its length, every log
    /// in it committed with update records. Returns the stream's pages and the history length.
    pub fn check(&self, pool: &BufferPool) -> Result<UndoCheck> {
        let t = self.tail.lock().clone();
        let bad = |what: String| MvccError::CorruptTrxSys {
            page: self.page,
            what,
        };
        let limit = minnow_btree::space::space_usage(pool, self.page.space)?.size;
        let mut pages = Vec::new();
        let mut page = t.first_page;
        while page != 0 {
            pages.push(page);
            if pages.len() as u64 > u64::from(limit) {
                return Err(bad("the undo page chain has a cycle".into()));
            }
            let id = PageId::new(self.page.space, page);
            let g = pool.get_read(id)?;
            let (next, free) = undo::page_fields(&g, id)?;
            if page == t.first_page && usize::from(t.head) > free {
                return Err(bad(format!(
                    "HEAD {} is past the first undo page's FREE {free}",
                    t.head
                )));
            }
            page = next;
        }
        if pages.last() != Some(&t.last_page) || pages.len() as u64 != t.n_pages {
            return Err(bad(format!(
                "the undo chain from page {} has {} pages ending at {:?}; TRX_SYS says {} pages \
                 ending at {}",
                t.first_page,
                pages.len(),
                pages.last(),
                t.n_pages,
                t.last_page
            )));
        }
        let history = self.history(pool)?;
        if history.len() as u64 != t.hist_len {
            return Err(bad(format!(
                "the history list holds {} logs, its length says {}",
                history.len(),
                t.hist_len
            )));
        }
        let on_chain: BTreeSet<u32> = pages.iter().copied().collect();
        for (a, h) in &history {
            if h.state != LogState::Committed || !h.update || !on_chain.contains(&a.page) {
                return Err(bad(format!(
                    "history log of transaction {} at {}:{} is {:?} (update {}), on a page {} \
                     the undo stream",
                    h.trx_id,
                    a.page,
                    a.offset,
                    h.state,
                    h.update,
                    if on_chain.contains(&a.page) {
                        "in"
                    } else {
                        "not in"
                    }
                )));
            }
        }
        Ok(UndoCheck {
            pages,
            history_len: t.hist_len,
        })
    }

    /// The oldest log of the history list: its header's address and the header, which must
    /// be a committed log with update records. A purged log there means the list came back
    /// to a log purge already took off it (a cycle in a corrupt file): an error, so that
    /// purge does not go round forever.
    pub fn history_head(&self, pool: &BufferPool) -> Result<Option<(UndoAddr, LogHeader)>> {
        let first = self.tail.lock().hist_first;
        match first {
            None => Ok(None),
            Some(a) => {
                let h = undo::read_header(pool, self.page.space, a)?;
                self.check_in_history(a, &h)?;
                Ok(Some((a, h)))
            }
        }
    }

    /// Checks that the log at `a` may be on the history list: committed, with update records.
    fn check_in_history(&self, a: UndoAddr, h: &LogHeader) -> Result<()> {
        if h.state == LogState::Committed && h.update {
            return Ok(());
        }
        Err(MvccError::CorruptTrxSys {
            page: self.page,
            what: format!(
                "the history list reaches the log of transaction {} at {}:{}, which is {:?} \
                 (update {}): not a log purge may still need (a cycle back to a purged log?)",
                h.trx_id, a.page, a.offset, h.state, h.update
            ),
        })
    }

    /// Takes the history list's oldest log, whose header is at `at`, off the list once purge
    /// has removed what its records describe: one mtr marks its header purged and moves the
    /// list's first and length in TRX_SYS, so the history list length falls. Does nothing if
    /// `at` is not the list's first log any more.
    pub fn finish_purge(&self, pool: &BufferPool, at: UndoAddr) -> Result<Option<Lsn>> {
        let mut tail = self.tail.lock();
        if tail.hist_first != Some(at) {
            return Ok(None);
        }
        let h = undo::read_header(pool, self.page.space, at)?;
        self.check_in_history(at, &h)?;
        let mut t = tail.clone();
        let mut mtr = pool.mtr()?;
        let s = mtr.get_write(self.page)?;
        let id = PageId::new(self.page.space, at.page);
        let lh = mtr.get_write(id)?;
        mtr.write(lh, usize::from(at.offset) + hdr::STATE, &[4])?;
        t.hist_first = h.history_next;
        t.hist_len = t.hist_len.saturating_sub(1);
        if t.hist_first.is_none() {
            t.hist_last = None;
            t.hist_len = 0;
            mtr.write(s, sys::HIST_LAST, &addr_bytes(None))?;
        }
        mtr.write(s, sys::HIST_FIRST, &addr_bytes(t.hist_first))?;
        mtr.write(s, sys::HIST_LEN, &t.hist_len.to_be_bytes())?;
        let end = mtr.commit()?;
        self.publish_tail(&mut tail, t);
        Ok(Some(end))
    }

    /// Gives the dead head of the undo stream back to the undo segment: walks the entries
    /// from HEAD; while every entry starting in the first page is dead (a filler, a record,
    /// the header of a log that is committed without update records, rolled back or purged),
    /// the pages up to where the next entry starts are freed and FIRST and HEAD move there,
    /// one mtr per step. The header of an active log or of a log still in the history stops
    /// it, and so does the last page (where appends go). Returns the pages freed.
    pub fn trim(&self, pool: &BufferPool) -> Result<u64> {
        let mut tail = self.tail.lock();
        let mut freed = 0u64;
        loop {
            let t = tail.clone();
            if t.first_page == t.last_page {
                break;
            }
            let Some((to_page, to_off, dead)) = self.dead_head(pool, &t)? else {
                break;
            };
            if dead.is_empty() {
                break;
            }
            let mut next = t.clone();
            let mut mtr = pool.mtr()?;
            let s = mtr.get_write(self.page)?;
            for &p in &dead {
                space::free_in(&mut mtr, self.seg, p)?;
            }
            next.first_page = to_page;
            next.head = to_off;
            next.n_pages = next.n_pages.saturating_sub(dead.len() as u64);
            mtr.write(s, sys::FIRST, &to_page.to_be_bytes())?;
            mtr.write(s, sys::HEAD, &to_off.to_be_bytes())?;
            mtr.write(s, sys::PAGES, &(next.n_pages as u32).to_be_bytes())?;
            mtr.commit()?;
            freed += dead.len() as u64;
            self.publish_tail(&mut tail, next);
        }
        self.mirror.pages_freed.fetch_add(freed, Ordering::Relaxed);
        Ok(freed)
    }

    /// Walks the entries that start in the stream's first page. `None` if one of them is
    /// needed; else where the next entry starts (page, offset) and the pages before it.
    fn dead_head(&self, pool: &BufferPool, t: &Tail) -> Result<Option<(u32, u16, Vec<u32>)>> {
        let space = self.page.space;
        let (mut page, mut off) = (t.first_page, usize::from(t.head));
        let mut pages = vec![page];
        let corrupt =
            |page: u32, offset: usize, expected: &str, found: String| MvccError::CorruptUndo {
                page: PageId::new(space, page),
                offset,
                expected: expected.to_owned(),
                found,
            };
        let fields = |page: u32| -> Result<(u32, usize)> {
            let id = PageId::new(space, page);
            let g = pool.get_read(id)?;
            undo::page_fields(&g, id)
        };
        let (mut next, mut free) = fields(page)?;
        // Pages may give no bytes (FREE at the data start), so an entry's length does not
        // bound the steps: a NEXT that comes back to a page already stepped over is a cycle.
        let mut guard = CycleGuard::new();
        guard.step(page);
        let mut step_to = |page: u32, from: u32| -> Result<(u32, usize)> {
            if !guard.step(page) {
                return Err(corrupt(
                    from,
                    UNDO_NEXT,
                    "a NEXT page not stepped over before",
                    format!("{page} (the undo page chain has a cycle)"),
                ));
            }
            fields(page)
        };
        loop {
            if page != t.first_page {
                // The last entry continued past the first page: the next one starts here.
                pages.pop();
                return Ok(Some((page, off as u16, pages)));
            }
            if off >= free {
                if page == t.last_page || next == 0 {
                    return Ok(None);
                }
                return Ok(Some((next, UNDO_DATA as u16, pages)));
            }
            let id = PageId::new(space, page);
            let (len, kind, state, ty) = {
                let g = pool.get_read(id)?;
                let b = g.get(off..off + 7).ok_or_else(|| {
                    corrupt(page, off, "an entry's first 7 bytes", "the page end".into())
                })?;
                let len = bytes::read_u32(b, 0)
                    .map_err(|e| corrupt(page, off, "a length", e.to_string()))?;
                let at = |i: usize| b.get(i).copied().unwrap_or(0);
                (len as usize, at(4), at(5), at(6))
            };
            if len < 8 {
                return Err(corrupt(
                    page,
                    off,
                    "an entry of at least 8 bytes",
                    len.to_string(),
                ));
            }
            if kind == HEADER_KIND {
                // Active, or committed with update records and not yet purged: needed.
                if state == 1 || (state == 2 && ty == 2) {
                    return Ok(None);
                }
            } else if kind != FILLER && !(1..=3).contains(&kind) {
                return Err(corrupt(
                    page,
                    off + 4,
                    "an entry kind 0 to 4",
                    kind.to_string(),
                ));
            }
            // Step over the entry, page by page.
            let mut left = len;
            loop {
                let here = free.saturating_sub(off);
                if left <= here {
                    off += left;
                    break;
                }
                left -= here;
                if next == 0 || page == t.last_page {
                    return Err(corrupt(
                        page,
                        off,
                        "the rest of an undo entry on the next page",
                        "the end of the undo stream".into(),
                    ));
                }
                let to = next;
                (next, free) = step_to(to, page)?;
                page = to;
                off = UNDO_DATA;
                pages.push(page);
            }
            if page != t.first_page && off >= free && page != t.last_page && next != 0 {
                // Ended exactly at the end of a later page: that page is dead too.
                let to = next;
                (next, free) = step_to(to, page)?;
                page = to;
                off = UNDO_DATA;
                pages.push(page);
            }
        }
    }

    /// Reads the header of `log` from its page.
    pub fn header(&self, pool: &BufferPool, log: &UndoLog) -> Result<LogHeader> {
        undo::read_header(pool, self.page.space, log.header)
    }

    /// The history list, oldest first: (header address, header) of every committed log with
    /// update records.
    pub fn history(&self, pool: &BufferPool) -> Result<Vec<(UndoAddr, LogHeader)>> {
        let (mut at, len) = {
            let t = self.tail.lock();
            (t.hist_first, t.hist_len)
        };
        let mut out = Vec::new();
        let mut guard = CycleGuard::new();
        while let Some(a) = at {
            if out.len() as u64 >= len {
                return Err(MvccError::CorruptTrxSys {
                    page: self.page,
                    what: format!("the history list is longer than its length {len}"),
                });
            }
            if !guard.step(a) {
                return Err(MvccError::CorruptTrxSys {
                    page: self.page,
                    what: format!(
                        "the history list comes back to the log at {}:{} (a cycle)",
                        a.page, a.offset
                    ),
                });
            }
            let h = undo::read_header(pool, self.page.space, a)?;
            at = h.history_next;
            out.push((a, h));
        }
        Ok(out)
    }
}
