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
//!  38  u32   format version (1)
//!  42  u64   TRX_ID_MARK: above every transaction id and commit number handed out
//!  50  10    FSEG header of the undo segment (which owns this page and every undo page)
//!  60  u32   FIRST undo page of the undo stream
//!  64  u32   LAST undo page (where appends go)
//!  68  6     HISTORY first: oldest committed update log (page u32, offset u16; 0 = none)
//!  74  6     HISTORY last: newest committed update log
//!  80  u64   HISTORY length (InnoDB's history list length)
//!  88  u16   N_SLOTS
//!  90  6×N   slots: the log header of each active transaction (page u32, offset u16)
//! ```
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
//! logs that readers with old views may still need (purge, not built yet, would free them).
//! That mtr is the commit point: after a crash, a log in a slot is active and is rolled back.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};

use minnow_btree::space::{self, FsegHeader};
use minnow_buf::{BufferPool, Mtr, PageHandle};
use minnow_page::{PageId, PageType, bytes, fil};
use minnow_redo::Lsn;
use parking_lot::Mutex;

use crate::error::{MvccError, Result};
use crate::read_view::ReadView;
use crate::roll_ptr::RollPtr;
use crate::undo::record::{
    LOG_HEADER_LEN, LogHeader, LogState, UndoAddr, UndoKind, UndoRecord, hdr,
};
use crate::undo::{
    self, PageSource, UNDO_DATA, UNDO_FREE, UNDO_NEXT, data_end, held_fields, init_undo_page,
};

/// How far ahead of the id counter the persisted mark is written.
pub const TRX_ID_MARGIN: u64 = 256;
/// The TRX_SYS page format version.
pub const TRX_SYS_FORMAT: u32 = 1;
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
    /// Slot count.
    pub const N_SLOTS: usize = 88;
    /// The slots.
    pub const SLOTS: usize = 90;
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
}

#[derive(Debug, Clone)]
struct Tail {
    last_page: u32,
    free_slots: Vec<u16>,
    hist_first: Option<UndoAddr>,
    hist_last: Option<UndoAddr>,
    hist_len: u64,
}

/// What the transaction system looks like now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrxStatus {
    /// The next transaction id.
    pub next_id: u64,
    /// Active writing transactions.
    pub active: usize,
    /// Committed update undo logs not purged (InnoDB's history list length).
    pub history_len: u64,
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
            "page type {ty}, expected 7 (TRX_SYS): a database made before transactions existed?"
        )));
    }
    let format = bytes::read_u32(p, sys::FORMAT).map_err(|e| bad(e.to_string()))?;
    if format != TRX_SYS_FORMAT {
        return Err(bad(format!(
            "format version {format}, expected {TRX_SYS_FORMAT}"
        )));
    }
    Ok(())
}

fn read_slots(p: &[u8], page: PageId) -> Result<Slots> {
    let bad = |what: String| MvccError::CorruptTrxSys { page, what };
    let n_slots = bytes::read_u16(p, sys::N_SLOTS).map_err(|e| bad(e.to_string()))?;
    let max = (p.len().saturating_sub(fil::TRAILER_SIZE + sys::SLOTS) / 6).min(MAX_SLOTS);
    if usize::from(n_slots) > max || n_slots == 0 {
        return Err(bad(format!("{n_slots} undo slots, expected 1..={max}")));
    }
    let mut slots = Vec::new();
    let mut free_slots = Vec::new();
    for s in (0..n_slots).rev() {
        let at = sys::SLOTS + 6 * usize::from(s);
        match read_addr(p, at).ok_or_else(|| bad(format!("slot {s}")))? {
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
    ids: Mutex<Ids>,
    tail: Mutex<Tail>,
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
        mtr.write(h, sys::N_SLOTS, &n_slots.to_be_bytes())?;
        init_undo_page(&mut mtr, u)?;
        let end = mtr.commit()?;
        let trx_sys = TrxSys {
            page,
            seg: seg.header,
            n_slots,
            ids: Mutex::new(Ids {
                next: 1,
                mark: 1,
                active: BTreeSet::new(),
            }),
            tail: Mutex::new(Tail {
                last_page: first,
                free_slots: (0..n_slots).rev().collect(),
                hist_first: None,
                hist_last: None,
                hist_len: 0,
            }),
            oldest_active: AtomicU64::new(u64::MAX),
        };
        Ok((trx_sys, end))
    }

    /// Opens the transaction system whose TRX_SYS page is `page`. Returns it and the undo
    /// logs of the transactions that were active when the database stopped (after a crash),
    /// which the caller must roll back ([`TrxSys::last_record`] and [`TrxSys::pop`], then [`TrxSys::finish_rollback`]) before anything else runs.
    pub fn open(pool: &BufferPool, page: PageId) -> Result<(TrxSys, Vec<UndoLog>)> {
        let bad = |what: String| MvccError::CorruptTrxSys { page, what };
        let g = pool.get_read(page)?;
        let p: &[u8] = &g;
        let field =
            |r: std::result::Result<u64, minnow_page::PageError>| r.map_err(|e| bad(e.to_string()));
        check_sys_page(p, page)?;
        let mark = field(bytes::read_u64(p, sys::MARK))?;
        let seg = FsegHeader::read(p, sys::SEG).map_err(|e| bad(e.to_string()))?;
        let last_page = field(bytes::read_u32(p, sys::LAST).map(u64::from))? as u32;
        let hist_first =
            read_addr(p, sys::HIST_FIRST).ok_or_else(|| bad("history first".into()))?;
        let hist_last = read_addr(p, sys::HIST_LAST).ok_or_else(|| bad("history last".into()))?;
        let hist_len = field(bytes::read_u64(p, sys::HIST_LEN))?;
        let (n_slots, slots, free_slots) = read_slots(p, page)?;
        drop(g);
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
        let oldest = active.first().copied().unwrap_or(u64::MAX);
        let trx_sys = TrxSys {
            page,
            seg,
            n_slots,
            ids: Mutex::new(Ids {
                next: mark,
                mark,
                active,
            }),
            tail: Mutex::new(Tail {
                last_page,
                free_slots,
                hist_first,
                hist_last,
                hist_len,
            }),
            oldest_active: AtomicU64::new(oldest),
        };
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
            ids.active.first().copied().unwrap_or(u64::MAX),
            Ordering::Release,
        );
    }

    fn deactivate(&self, trx_id: u64) {
        let mut ids = self.ids.lock();
        ids.active.remove(&trx_id);
        self.publish_oldest(&ids);
    }

    /// Forgets a transaction that got an id but never started a log (nothing to commit).
    pub fn forget(&self, trx_id: u64) {
        self.deactivate(trx_id);
    }

    /// True if `trx_id` is an active (uncommitted) writing transaction.
    pub fn is_active(&self, trx_id: u64) -> bool {
        if trx_id < self.oldest_active.load(Ordering::Acquire) {
            return false;
        }
        self.ids.lock().active.contains(&trx_id)
    }

    /// The smallest active transaction id (`u64::MAX` if none). A record written by a
    /// smaller id is committed: the cheap test of an autocommit read.
    pub fn oldest_active(&self) -> u64 {
        self.oldest_active.load(Ordering::Acquire)
    }

    /// A read view for a transaction whose id is `creator` (0 if it has none yet).
    pub fn read_view(&self, creator: u64) -> ReadView {
        let ids = self.ids.lock();
        ReadView::new(ids.next, creator, ids.active.iter().copied().collect())
    }

    /// Counters for status output.
    pub fn status(&self) -> TrxStatus {
        let (next_id, active) = {
            let ids = self.ids.lock();
            (ids.next, ids.active.len())
        };
        TrxStatus {
            next_id,
            active,
            history_len: self.tail.lock().hist_len,
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

    /// Allocates a new undo page, links it after `h` and makes it the stream's last page.
    fn next_page(&self, mtr: &mut Mtr<'_>, tail: &mut Tail, h: PageHandle) -> Result<PageHandle> {
        let s = mtr.get_write(self.page)?;
        let n = space::allocate_in(mtr, self.seg, None)?;
        init_undo_page(mtr, n)?;
        let no = mtr.page_id(n).map_or(0, |id| id.page_no);
        mtr.write(h, UNDO_NEXT, &no.to_be_bytes())?;
        mtr.write(s, sys::LAST, &no.to_be_bytes())?;
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
        *tail = t;
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
        let piece = pool.config().page_size.bytes();
        let mut first = None;
        let mut rest: &[u8] = &bytes;
        while rest.len() > piece {
            let (now, later) = rest.split_at(piece);
            let mut mtr = pool.mtr()?;
            let place = if first.is_none() {
                Place::Start
            } else {
                Place::Continue
            };
            let a = self.append_bytes(&mut mtr, &mut t, now, place)?;
            mtr.commit()?;
            *tail = t.clone();
            first.get_or_insert(a);
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
        let at = first.unwrap_or(last);
        let update = log.update || kind != UndoKind::Insert;
        mtr.write(h, off + hdr::LAST, &addr_bytes(Some(at)))?;
        mtr.write(h, off + hdr::N_RECS, &(log.n_recs + 1).to_be_bytes())?;
        if update && !log.update {
            mtr.write(h, off + hdr::TYPE, &[2])?;
        }
        mtr.commit()?;
        *tail = t;
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
            self.take_number(pool, &mut ids)?
        };
        let end = {
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
            *tail = t;
            end
        };
        self.deactivate(log.trx_id);
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
        self.deactivate(log.trx_id);
        Ok(end)
    }

    /// Verifies the undo store: reads every undo page of the stream (so a damaged page is a
    /// checksum error naming it) and checks its header, and every active log's header.
    /// Returns the number of undo pages.
    pub fn check(&self, pool: &BufferPool) -> Result<u64> {
        let first = {
            let g = pool.get_read(self.page)?;
            bytes::read_u32(&g, sys::FIRST).map_err(|e| MvccError::CorruptTrxSys {
                page: self.page,
                what: e.to_string(),
            })?
        };
        let limit = minnow_btree::space::space_usage(pool, self.page.space)?.size;
        let (mut page, mut n) = (first, 0u64);
        while page != 0 {
            n += 1;
            if n > u64::from(limit) {
                return Err(MvccError::CorruptTrxSys {
                    page: self.page,
                    what: "the undo page chain has a cycle".into(),
                });
            }
            let id = PageId::new(self.page.space, page);
            let g = pool.get_read(id)?;
            page = undo::held_page_fields(&g, id)?.0;
        }
        Ok(n)
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
        while let Some(a) = at {
            if out.len() as u64 >= len {
                return Err(MvccError::CorruptTrxSys {
                    page: self.page,
                    what: format!("the history list is longer than its length {len}"),
                });
            }
            let h = undo::read_header(pool, self.page.space, a)?;
            at = h.history_next;
            out.push((a, h));
        }
        Ok(out)
    }
}
