//! The transaction system: transaction ids, the TRX_SYS page, rollback segments, undo logs
//! and commit.
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
//! ## Rollback segments
//!
//! Undo lives in **rollback segments**, as in InnoDB: a configurable number of them (1 to
//! [`MAX_RSEGS`], fixed when the database is created), each with its own header page, its
//! own undo stream of undo pages, its own slots for the transactions writing into it and its
//! own **history list**, behind its own mutex. The TRX_SYS page (page 3) keeps only what all
//! transactions share: the id mark and the directory of the segments' header pages. The
//! byte layouts are in [`page`].
//!
//! ```text
//!   TRX_SYS page 3            rseg 0 header             rseg 1 header         ...
//!   id mark                   FIRST ──► undo ──► undo   FIRST ──► undo
//!   rseg pages: [4, 6, ...]   slots: active logs        slots
//!                             history: committed logs   history
//! ```
//!
//! A writing transaction is given a segment **round robin** (an atomic counter) when it
//! writes its first undo record, and from then on its begin, appends, commit and rollback
//! take only that segment's mutex and latch only that segment's pages. The transactions of
//! one segment still interleave on its one stream (each transaction's records chained
//! backwards from its log header); they do not get pages of their own. With the default 16
//! segments, writers on different segments never wait for each other to log undo or to
//! commit; the id counter (a short mutex, its mark written every [`TRX_ID_MARGIN`] ids) and
//! page allocation in the undo segment are all they share.
//!
//! ## One undo log per transaction
//!
//! A writing transaction takes a free slot in its segment and appends a **log header** to
//! the segment's stream (one mtr), then one undo record per change (one mtr each, before
//! the change itself), updating the header's `last` record and record count. InnoDB keeps an
//! insert undo log and an update undo log per transaction; minnow keeps one log, as MariaDB
//! does since 10.3, and keeps the distinction where it matters: the roll pointer's insert
//! flag marks insert records, and the header's type says whether the log holds any update or
//! delete-mark record. **Commit** is one mtr: the header becomes committed with its commit
//! number, the slot is freed, and a log with update records joins its segment's **history
//! list**, the committed logs that readers with old views may still need. The commit number
//! is drawn while the segment's mutex is held, so each segment's history list is in commit
//! number order. That mtr is the commit point: after a crash, a log in a slot of any segment
//! is active and is rolled back.
//!
//! ## Read views, the purge view and giving undo space back
//!
//! Every consistent read holds an [`OpenView`], registered here until it is dropped, so the
//! transaction system knows the **oldest view** still open. Purge (in the `minnow-engine` crate,
//! which knows what records mean) asks for a [`TrxSys::purge_view`]: a copy of the oldest
//! view, or a fresh one if none is open. A committed log whose commit number is below that
//! view's `low_limit_no` was committed before every open view was taken, so no reader can
//! need the versions it holds: purge removes what it describes and then takes it off the
//! history list ([`TrxSys::finish_purge`], one mtr that also marks its header purged).
//! Purge must take the logs of all segments in one commit-number order: the next log is the
//! one with the smallest commit number among the first logs of every segment's history list
//! ([`TrxSys::history_head`]), InnoDB's purge queue merge.
//!
//! Each segment's undo stream is then **trimmed at its head** ([`TrxSys::trim`]): walking the
//! entries of the first page from HEAD, a page whose entries are all dead (fillers, records, headers of
//! logs that are committed insert-only, rolled back or purged) is freed back to the undo
//! segment, whose free pages the next appends take again. The first header of an active
//! log, or of a committed update log still in the history, stops the walk: everything after
//! it may be needed. A transaction that stays open (or a read view that does) therefore pins
//! every undo page written after it, which is why long transactions make undo grow.
//!
//! ## Views without the `ids` mutex
//!
//! Readers do not take the `ids` mutex writers take, nor write any line another thread
//! writes: every view built at one **view epoch** (a counter each change of the active set,
//! the next id or the committing set moves, under the `ids` mutex) is the same, so each
//! thread keeps its own copy of the current epoch's view, and a view is registered in a
//! cache-line-aligned slot of the reader's own; purge's pass and the reader's registration
//! follow a `SeqCst` protocol (Dekker's) so that purge never passes a view it did not see.
//! [`TrxSys::open_view`] (transactions) and [`TrxSys::statement_view`] (statements outside
//! one) both take views this way; `views.rs` teaches the protocol and proves it.
//!
//! ## Where the code is
//!
//! This file holds the ids, the active set, read views and the purge view, and opens and
//! creates the whole; `views` taking and registering views and purge's pass over them;
//! [`page`] the on-disk format of the TRX_SYS page and the segment header
//! pages, with their checked decoders; `rseg` one segment in memory (its tail, its appends to
//! its stream); `store` a transaction's log steps (begin, append, commit, rollback);
//! `history` the history lists, purge's steps, trimming and the check.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use minnow_btree::space::{self, FsegHeader};
use minnow_buf::BufferPool;
use minnow_page::{PageId, PageType, fil};
use minnow_redo::Lsn;
use parking_lot::Mutex;

use crate::error::{MvccError, Result};
use crate::read_view::ReadView;
use crate::roll_ptr::RollPtr;
use crate::undo::record::{UndoAddr, UndoFields, UndoKind};

mod history;
pub mod page;
mod rseg;
mod store;
mod views;

pub use history::UndoCheck;
use page::slot_log;
pub use page::{RsegPage, SysPage, active_logs, read_all, sys};
use rseg::{Rseg, Tail};
pub use store::UndoTail;

/// How far ahead of the id counter the persisted mark is written.
pub const TRX_ID_MARGIN: u64 = 256;
/// The TRX_SYS page format version (3: rollback segments).
pub const TRX_SYS_FORMAT: u32 = 3;
/// At most this many slots (concurrent writing transactions) per rollback segment, as one
/// InnoDB rollback segment.
pub const MAX_SLOTS: usize = 1024;
/// At most this many rollback segments (InnoDB's 128: the roll pointer's 7-bit field).
pub const MAX_RSEGS: usize = 128;
/// The number of rollback segments a database gets unless configured otherwise.
pub const DEFAULT_RSEGS: usize = 16;

/// A transaction's undo log, as its owner holds it in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndoLog {
    /// The transaction.
    pub trx_id: u64,
    /// Its rollback segment.
    rseg: u8,
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

    /// The rollback segment it is written to.
    pub fn rseg(&self) -> usize {
        usize::from(self.rseg)
    }
}

/// What the caller passes to [`TrxSys::append`]: an undo record without its log position.
/// The fields may be borrowed, so a writer can fill one [`UndoFields`] buffer for record
/// after record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRecord<'a> {
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
    /// The fields (see [`UndoRecord::fields`](crate::UndoRecord::fields)), encoded.
    pub fields: Cow<'a, UndoFields>,
}

#[derive(Debug)]
struct Ids {
    next: u64,
    mark: u64,
    active: BTreeSet<u64>,
    /// Commit numbers of transactions between taking their number and leaving `active`.
    committing: BTreeSet<u64>,
    /// The views built, by the view epoch they were built at (creator 0): what a reader
    /// registered at that epoch sees, kept until purge has passed the epoch (see [`views`]).
    built: BTreeMap<u64, ReadView>,
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
    pages_freed: AtomicU64,
}

/// What the transaction system looks like now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrxStatus {
    /// The next transaction id.
    pub next_id: u64,
    /// Active writing transactions.
    pub active: usize,
    /// Committed update undo logs not purged, all rollback segments (InnoDB's history list
    /// length).
    pub history_len: u64,
    /// Undo pages in the undo streams of all rollback segments.
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
    _guard: Arc<views::Registration>,
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

/// The transaction system: the id counter, the active transactions and the undo store.
#[derive(Debug)]
pub struct TrxSys {
    page: PageId,
    seg: FsegHeader,
    /// The rollback segments, by id.
    rsegs: Vec<Rseg>,
    /// Round-robin counter: a new log goes to segment `next_rseg % rsegs.len()` (or the next
    /// one with a free slot).
    next_rseg: AtomicUsize,
    ids: Arc<Mutex<Ids>>,
    mirror: Arc<Mirror>,
    /// The last purge view: a writer whose changes it sees may have had its undo log purged,
    /// so no roll pointer it wrote may be followed (see [`TrxSys::undo_may_be_gone`]).
    purge_limit: Mutex<ReadView>,
    /// The smallest active transaction id, `u64::MAX` if none: a record whose writer is
    /// below it is committed, which is all an autocommit read needs to know (no view).
    oldest_active: AtomicU64,
    /// Moved forward (under `ids`) by every change of what a view is made of: an id or a
    /// commit number handed out, a transaction ending (see [`views`]).
    view_epoch: AtomicU64,
    /// The registrations of open views, purge's floor and the last view built (see
    /// [`views`]).
    views: views::Views,
}

impl TrxSys {
    /// Creates the undo segment, the TRX_SYS page and `rsegs` rollback segments (each a
    /// header page and a first undo page) in `space`, at database creation: one mtr for the
    /// TRX_SYS page and the first segment, one for each further segment (so that no mtr
    /// latches more than a handful of pages), each leaving N_RSEGS and the directory
    /// consistent. Returns the transaction system and the last mtr's end LSN.
    pub fn create(pool: &BufferPool, space: u32, rsegs: usize) -> Result<(TrxSys, Lsn)> {
        if rsegs == 0 || rsegs > MAX_RSEGS {
            return Err(MvccError::RollbackSegments { requested: rsegs });
        }
        let mut mtr = pool.mtr()?;
        let seg = space::create_segment(&mut mtr, space)?.header;
        let h = space::allocate_in(&mut mtr, seg, None)?;
        let page = mtr.page_id(h).unwrap_or(PageId::new(space, 0));
        mtr.write(h, fil::PAGE_TYPE, &PageType::TrxSys.to_u16().to_be_bytes())?;
        mtr.write(h, sys::FORMAT, &TRX_SYS_FORMAT.to_be_bytes())?;
        mtr.write(h, sys::MARK, &1u64.to_be_bytes())?;
        mtr.write(h, sys::SEG, &seg.to_bytes())?;
        let mut made = Vec::with_capacity(rsegs);
        let mut end;
        loop {
            let id = made.len();
            let r = Rseg::create(&mut mtr, seg, id as u8)?;
            let h = mtr.get_write(page)?;
            mtr.write(h, sys::RSEGS + 4 * id, &r.page.page_no.to_be_bytes())?;
            mtr.write(h, sys::N_RSEGS, &((id + 1) as u16).to_be_bytes())?;
            end = mtr.commit()?;
            made.push(r);
            if made.len() == rsegs {
                break;
            }
            mtr = pool.mtr()?;
        }
        let trx_sys = TrxSys::assemble(page, seg, made, 1, BTreeSet::new());
        Ok((trx_sys, end))
    }

    fn assemble(
        page: PageId,
        seg: FsegHeader,
        rsegs: Vec<Rseg>,
        mark: u64,
        active: BTreeSet<u64>,
    ) -> TrxSys {
        let mirror = Mirror {
            next_id: AtomicU64::new(mark),
            active: AtomicU64::new(active.len() as u64),
            ..Mirror::default()
        };
        let oldest = active.first().copied().unwrap_or(mark);
        // Until the first purge of this run, any committed transaction may have had its log
        // purged by an earlier run: all of them are behind the limit.
        let purge_limit = ReadView::new(mark, 0, active.iter().copied().collect());
        TrxSys {
            page,
            seg,
            rsegs,
            next_rseg: AtomicUsize::new(0),
            ids: Arc::new(Mutex::new(Ids {
                next: mark,
                mark,
                active,
                committing: BTreeSet::new(),
                built: BTreeMap::new(),
            })),
            mirror: Arc::new(mirror),
            purge_limit: Mutex::new(purge_limit),
            oldest_active: AtomicU64::new(oldest),
            view_epoch: AtomicU64::new(0),
            views: views::Views::new(),
        }
    }

    /// Opens the transaction system whose TRX_SYS page is `page`, with the rollback segments
    /// its directory names (the number fixed at create). Returns it and the undo logs of the
    /// transactions that were active when the database stopped (after a crash), in every
    /// segment, which the caller must roll back ([`TrxSys::last_record`] and
    /// [`TrxSys::pop`], then [`TrxSys::finish_rollback`]) before anything else runs.
    pub fn open(pool: &BufferPool, page: PageId) -> Result<(TrxSys, Vec<UndoLog>)> {
        let (sp, pages) = page::read_all(pool, page)?;
        let mut active = BTreeSet::new();
        let mut logs = Vec::new();
        let mut rsegs = Vec::with_capacity(pages.len());
        for (rp, &no) in pages.iter().zip(&sp.rsegs) {
            let header_page = PageId::new(page.space, no);
            // Highest slot first, as before the decoding moved into `RsegPage`.
            for &(slot, header) in rp.slots.iter().rev() {
                let h = slot_log(pool, header_page, rp, slot, header)?;
                active.insert(h.trx_id);
                logs.push(UndoLog {
                    trx_id: h.trx_id,
                    rseg: rp.id as u8,
                    header,
                    slot,
                    last: h.last,
                    n_recs: h.n_recs,
                    update: h.update,
                });
            }
            rsegs.push(Rseg::new(
                rp.id as u8,
                header_page,
                sp.seg,
                rp.n_slots,
                Tail::from_page(rp),
            ));
        }
        let trx_sys = TrxSys::assemble(page, sp.seg, rsegs, sp.mark, active);
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

    /// The number of undo slots, all rollback segments (the most transactions that may
    /// write at once).
    pub fn slots(&self) -> usize {
        self.rsegs.iter().map(|r| usize::from(r.n_slots)).sum()
    }

    /// The number of rollback segments.
    pub fn rollback_segments(&self) -> usize {
        self.rsegs.len()
    }

    /// The header page of each rollback segment, rseg 0 first.
    pub fn rseg_pages(&self) -> Vec<PageId> {
        self.rsegs.iter().map(|r| r.page).collect()
    }

    /// Records (under the `ids` mutex, which `_ids` proves is held) that what views are made
    /// of changed: a view built before is not reused.
    fn changed(&self, _ids: &Ids) {
        self.view_epoch.fetch_add(1, Ordering::Release);
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
        self.changed(ids);
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
        self.changed(&ids);
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

    /// The purge view: a copy of the oldest open view, or a view of the system now if none
    /// is open. Every view open now sees at least what it sees, so a change it sees is seen
    /// by all readers, and a committed log whose commit number is below its
    /// [`ReadView::low_limit_no`] is needed by none. It also becomes the limit of
    /// [`TrxSys::undo_may_be_gone`], before purge frees anything.
    pub fn purge_view(&self) -> ReadView {
        let oldest = {
            let mut ids = self.ids.lock();
            self.oldest_registered(&mut ids)
        };
        let mut limit = self.purge_limit.lock();
        // Should the oldest view be missing, the last limit is one no reader is behind.
        let view = oldest.unwrap_or_else(|| limit.clone());
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

    /// Counters for status output, from atomics and a scan of the view registrations: takes
    /// no lock writers or readers take (but the overflow list's, which a reader takes only
    /// when every slot it tried was busy).
    pub fn status(&self) -> TrxStatus {
        let m = &self.mirror;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let (views, oldest) = self.views.census();
        let (history_len, undo_pages) = self
            .rsegs
            .iter()
            .map(Rseg::counters)
            .fold((0, 0), |(h, p), (rh, rp)| (h + rh, p + rp));
        TrxStatus {
            next_id: load(&m.next_id),
            active: load(&m.active) as usize,
            history_len,
            undo_pages,
            undo_pages_freed: load(&m.pages_freed),
            open_views: views,
            oldest_view_low_limit: oldest,
        }
    }
}

#[cfg(test)]
mod tests;
