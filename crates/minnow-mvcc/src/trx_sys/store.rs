//! The undo store's write side: a transaction's undo log in its rollback segment.
//!
//! A writing transaction is given a rollback segment round robin at its first write
//! ([`TrxSys::begin_log`]): the next segment with a free slot, counting from an atomic
//! counter. From then on every step of its log (the header, each record, commit, popping
//! records in a rollback, the end of a rollback) takes only that segment's mutex and
//! latches only that segment's header page and the undo pages of its stream; each is one
//! mini-transaction, except a record appended inside the caller's ([`UndoTail`]: a delete's
//! undo record in the mtr that marks the record). Only the commit number comes from the shared counter, taken while the
//! segment's mutex is held, so that the segment's history list stays in commit-number order
//! (purge merges the lists by it).

use std::cell::Cell;

use minnow_buf::{BufferPool, Mtr, PageHandle};
use minnow_page::PageId;
use minnow_redo::Lsn;

use super::page::{addr_bytes, rseg};
use super::rseg::{Place, Rseg, Tail};
use super::{NewRecord, TrxSys, UndoLog};
use crate::error::{MvccError, Result};
use crate::roll_ptr::RollPtr;
use crate::undo;
use crate::undo::record::{FILLER, LogHeader, RecordHead, UndoAddr, UndoKind, UndoRecord, hdr};

thread_local! {
    /// The buffer each thread encodes its undo records into before they are copied into the
    /// undo page: kept from one append to the next, so an append allocates nothing once it
    /// has grown to the thread's usual record size.
    static RECORD: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// A record buffer that grew past this is dropped after its append rather than kept.
const KEEP_RECORD: usize = 64 * 1024;

impl TrxSys {
    /// The rollback segment `log` writes into.
    fn rseg_of(&self, log: &UndoLog) -> Result<&Rseg> {
        self.rsegs
            .get(usize::from(log.rseg))
            .ok_or_else(|| MvccError::CorruptTrxSys {
                page: self.page,
                what: format!(
                    "the log of transaction {} names rollback segment {}; there are {}",
                    log.trx_id,
                    log.rseg,
                    self.rsegs.len()
                ),
            })
    }

    /// Starts transaction `trx_id`'s undo log: picks its rollback segment (round robin,
    /// skipping segments whose slots are all taken), takes a slot there and appends its
    /// header to the segment's stream, in one mtr.
    pub fn begin_log(&self, pool: &BufferPool, trx_id: u64) -> Result<UndoLog> {
        let n = self.rsegs.len();
        let start = self
            .next_rseg
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        for i in 0..n {
            let Some(r) = self.rsegs.get((start + i) % n.max(1)) else {
                continue;
            };
            let mut tail = r.tail.lock();
            let mut t = tail.clone();
            let Some(slot) = t.free_slots.pop() else {
                continue;
            };
            let mut mtr = pool.mtr()?;
            let s = mtr.get_write(r.page)?;
            let header = r.append_bytes(
                &mut mtr,
                &mut t,
                &LogHeader::new(trx_id).encode(),
                Place::Whole,
            )?;
            mtr.write(s, Rseg::slot_at(slot), &addr_bytes(Some(header)))?;
            mtr.commit()?;
            r.publish(&mut tail, t);
            return Ok(UndoLog {
                trx_id,
                rseg: r.id,
                header,
                slot,
                last: None,
                n_recs: 0,
                update: false,
            });
        }
        Err(MvccError::TooManyTransactions {
            slots: self.rsegs.iter().map(|r| usize::from(r.n_slots)).sum(),
        })
    }

    /// Appends an undo record to `log` in its own mtr (to be committed before the change it
    /// describes) and returns the roll pointer to store in the changed record.
    pub fn append(
        &self,
        pool: &BufferPool,
        log: &mut UndoLog,
        rec: NewRecord<'_>,
    ) -> Result<RollPtr> {
        let kind = rec.kind;
        let (undo_no, prev) = (log.n_recs, log.last);
        with_encoded(undo_no, prev, rec, |bytes| {
            self.append_encoded(pool, log, kind, bytes)
        })
    }

    /// [`TrxSys::append`] of the encoded record `bytes` (of kind `kind`).
    fn append_encoded(
        &self,
        pool: &BufferPool,
        log: &mut UndoLog,
        kind: UndoKind,
        bytes: &[u8],
    ) -> Result<RollPtr> {
        let r = self.rseg_of(log)?;
        let mut tail = r.tail.lock();
        let mut t = tail.stream_copy();
        // A long record (a row with big BLOBs) is written a page's worth per mtr, so that no
        // mtr needs more redo than the log keeps free for one (`BufferPool::mtr` waits for
        // four pages' worth); only the last mtr links the record into the log (the header's
        // `last`), so a crash in between leaves unreferenced bytes, never half a record.
        // Until that last mtr the bytes are a FILLER whose length covers what is written, so
        // the stream stays a walkable sequence of entries whatever the crash leaves.
        let piece = pool.config().page_size.bytes();
        let space = r.space();
        let mut first: Option<UndoAddr> = None;
        let mut written = 0usize;
        let mut rest: &[u8] = bytes;
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
                    first = Some(r.append_bytes(&mut mtr, &mut t, &b, Place::Start)?);
                }
                Some(f) => {
                    r.append_bytes(&mut mtr, &mut t, now, Place::Continue)?;
                    let h = mtr.get_write(PageId::new(space, f.page))?;
                    mtr.write(h, usize::from(f.offset), &(written as u32).to_be_bytes())?;
                }
            }
            mtr.commit()?;
            r.publish_stream(&mut tail, t.clone());
            rest = later;
        }
        let mut mtr = pool.mtr()?;
        let at = link(r, &mut mtr, &mut t, log, kind, rest, first, bytes)?;
        mtr.commit()?;
        r.publish_stream(&mut tail, t);
        advance(log, at, kind);
        Ok(roll_ptr(kind, at))
    }

    /// Takes the rollback segment mutex of `log` for appends inside the caller's
    /// mini-transactions ([`UndoTail::append_in`]), waiting for it: to be called holding
    /// no page latch (the latch order, ARCHITECTURE.md: the segment mutex comes before every
    /// page latch).
    pub fn undo_tail(&self, log: &UndoLog) -> Result<UndoTail<'_>> {
        let r = self.rseg_of(log)?;
        Ok(UndoTail {
            r,
            tail: r.tail.lock(),
            staged: None,
        })
    }

    /// [`TrxSys::undo_tail`] without waiting: `None` if another thread holds the mutex now.
    /// What a caller that already holds page latches takes: it never waits for the mutex
    /// under them, so the latch order stands; on `None` it lets its latches go, takes the
    /// mutex with [`TrxSys::undo_tail`] and latches again.
    pub fn try_undo_tail(&self, log: &UndoLog) -> Result<Option<UndoTail<'_>>> {
        let r = self.rseg_of(log)?;
        Ok(r.tail.try_lock().map(|tail| UndoTail {
            r,
            staged: None,
            tail,
        }))
    }

    /// Reads the undo record a roll pointer addresses. Every rollback segment's pages are
    /// in the same tablespace, so the page and offset find it.
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
    /// (for a log with update records) appends it to its rollback segment's history list.
    /// That mtr is the commit point; the transaction stops being active after it. The commit
    /// number is taken while the segment's mutex is held, so the segment's history list is
    /// in commit-number order. Returns the mtr's end LSN.
    pub fn commit(&self, pool: &BufferPool, log: &UndoLog) -> Result<Lsn> {
        self.commit_with(pool, log, |_| Ok(()))
    }

    /// [`TrxSys::commit`] that first runs `extra` in the commit mtr, so that its page
    /// changes and the commit mark are durable together or not at all (the `minnow-engine` crate's
    /// bulk insert publishes the trees it built by rewriting a dictionary record here). An
    /// error from `extra` drops the mtr, changing nothing: the transaction is still active.
    /// `extra` latches its pages before the rollback segment's, and must not start an mtr.
    pub fn commit_with(
        &self,
        pool: &BufferPool,
        log: &UndoLog,
        extra: impl FnOnce(&mut minnow_buf::Mtr<'_>) -> Result<()>,
    ) -> Result<Lsn> {
        let r = self.rseg_of(log)?;
        let mut tail = r.tail.lock();
        let trx_no = {
            let mut ids = self.ids.lock();
            let no = self.take_number(pool, &mut ids)?;
            ids.committing.insert(no);
            no
        };
        let end = (|| -> Result<Lsn> {
            let mut t = tail.clone();
            let mut mtr = pool.mtr()?;
            extra(&mut mtr)?;
            let s = mtr.get_write(r.page)?;
            let (h, off) = r.header_handle(&mut mtr, log.header)?;
            mtr.write(h, off + hdr::STATE, &[2])?;
            mtr.write(h, off + hdr::TRX_NO, &trx_no.to_be_bytes())?;
            // Appends leave LAST behind (`undo::chain`): purge reads it from here on.
            write_last(&mut mtr, h, off, log.last, log.n_recs)?;
            mtr.write(s, Rseg::slot_at(log.slot), &[0; 6])?;
            if log.update {
                match t.hist_last {
                    Some(prev) => {
                        let id = PageId::new(r.space(), prev.page);
                        let ph = mtr.get_write(id)?;
                        mtr.write(
                            ph,
                            usize::from(prev.offset) + hdr::HISTORY_NEXT,
                            &addr_bytes(Some(log.header)),
                        )?;
                    }
                    None => {
                        mtr.write(s, rseg::HIST_FIRST, &addr_bytes(Some(log.header)))?;
                        t.hist_first = Some(log.header);
                    }
                }
                t.hist_last = Some(log.header);
                t.hist_len += 1;
                mtr.write(s, rseg::HIST_LAST, &addr_bytes(Some(log.header)))?;
                mtr.write(s, rseg::HIST_LEN, &t.hist_len.to_be_bytes())?;
            }
            let end = mtr.commit()?;
            t.free_slots.push(log.slot);
            r.publish(&mut tail, t);
            Ok(end)
        })();
        drop(tail);
        let end = match end {
            Ok(end) => end,
            Err(e) => {
                // Not committed: not committing either, or purge would wait for it forever.
                let mut ids = self.ids.lock();
                ids.committing.remove(&trx_no);
                self.changed(&ids);
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
        Ok(Some((roll_ptr(rec.kind, at), rec)))
    }

    /// Removes the newest record `rec` from `log` once it is undone (one mtr moving the
    /// header's `last` to the record before it), so a crash after this never undoes it
    /// again and a later rollback does not see it.
    pub fn pop(&self, pool: &BufferPool, log: &mut UndoLog, rec: &UndoRecord) -> Result<Lsn> {
        let r = self.rseg_of(log)?;
        let _tail = r.tail.lock();
        let mut mtr = pool.mtr()?;
        let (h, off) = r.header_handle(&mut mtr, log.header)?;
        // N_RECS with it: the records the pop leaves after the new LAST in the stream have
        // undo numbers below it, so recovery's walk from LAST skips them (`undo::chain`).
        write_last(&mut mtr, h, off, rec.prev, log.n_recs)?;
        let end = mtr.commit()?;
        log.last = rec.prev;
        Ok(end)
    }

    /// Ends a rollback to the transaction's start: the log becomes rolled back and its slot
    /// free, in one mtr; the transaction stops being active.
    pub fn finish_rollback(&self, pool: &BufferPool, log: &UndoLog) -> Result<Lsn> {
        let r = self.rseg_of(log)?;
        let end = {
            let mut tail = r.tail.lock();
            let mut mtr = pool.mtr()?;
            let s = mtr.get_write(r.page)?;
            let (h, off) = r.header_handle(&mut mtr, log.header)?;
            mtr.write(h, off + hdr::STATE, &[3])?;
            mtr.write(s, Rseg::slot_at(log.slot), &[0; 6])?;
            let end = mtr.commit()?;
            tail.free_slots.push(log.slot);
            end
        };
        self.deactivate(log.trx_id, None);
        Ok(end)
    }
}

/// The roll pointer of the undo record of kind `kind` at `at`. Its rollback segment field
/// stays 0: every segment's pages are in the system tablespace, whose page numbers are
/// unique, so page and offset alone find the record (InnoDB, whose segments may live in
/// other undo tablespaces, needs the id to find the space).
fn roll_ptr(kind: UndoKind, at: UndoAddr) -> RollPtr {
    RollPtr {
        insert: kind == UndoKind::Insert,
        rseg: 0,
        page: at.page,
        offset: at.offset,
    }
}

/// Encodes `rec` as record `undo_no` of a log whose newest record is `prev` into this
/// thread's record buffer and runs `f` on the bytes.
fn with_encoded<T>(
    undo_no: u64,
    prev: Option<UndoAddr>,
    rec: NewRecord<'_>,
    f: impl FnOnce(&[u8]) -> Result<T>,
) -> Result<T> {
    let head = RecordHead {
        kind: rec.kind,
        old_deleted: rec.old_deleted,
        undo_no,
        index_id: rec.index_id,
        old_trx_id: rec.old_trx_id,
        old_roll_ptr: rec.old_roll_ptr,
        prev,
    };
    // Taken out while in use (a nested append on this thread would find an empty one).
    let mut bytes = RECORD.try_with(Cell::take).unwrap_or_default();
    let done = match head.encode_into(&rec.fields, &mut bytes) {
        Ok(()) => f(&bytes),
        Err(what) => Err(MvccError::RecordTooLarge { what }),
    };
    if bytes.capacity() <= KEEP_RECORD {
        let _ = RECORD.try_with(|c| c.set(bytes));
    }
    done
}

/// The last step of an append, in `mtr`: writes `rest` (the whole record, or the last piece
/// of one whose earlier pieces start at `first`) to the stream `t` and links the record into
/// `log`'s header (its `last`, its record count, its type once it holds an update record).
/// Returns where the record starts. The record exists from `mtr`'s commit on.
#[allow(clippy::too_many_arguments)]
fn link(
    r: &Rseg,
    mtr: &mut Mtr<'_>,
    t: &mut Tail,
    log: &UndoLog,
    kind: UndoKind,
    rest: &[u8],
    first: Option<UndoAddr>,
    bytes: &[u8],
) -> Result<UndoAddr> {
    // The header only where the record needs it (module docs of `undo::chain`): a record
    // with no `prev` (nothing to be found from a stale LAST), or the first record that makes
    // the log an update log (its type). Latched before the stream's last page, as always.
    let type_now = !log.update && kind != UndoKind::Insert;
    let header = match log.last.is_none() || type_now {
        true => Some(r.header_handle(mtr, log.header)?),
        false => None,
    };
    let place = if first.is_none() {
        Place::Start
    } else {
        Place::Continue
    };
    let last = r.append_bytes(mtr, t, rest, place)?;
    if let (Some(f), Some(prefix)) = (first, bytes.get(0..=hdr::KIND)) {
        // The real length and kind: the record exists from this mtr on.
        let fh = mtr.get_write(PageId::new(r.space(), f.page))?;
        mtr.write(fh, usize::from(f.offset), prefix)?;
    }
    let at = first.unwrap_or(last);
    if let Some((h, off)) = header {
        write_last(mtr, h, off, Some(at), log.n_recs + 1)?;
        if type_now {
            mtr.write(h, off + hdr::TYPE, &[2])?;
        }
    }
    Ok(at)
}

/// Writes a log header's LAST and N_RECS (at `off` of the page `h`): neighbours, so one
/// write (one redo record) for both.
fn write_last(
    mtr: &mut Mtr<'_>,
    h: PageHandle,
    off: usize,
    last: Option<UndoAddr>,
    n_recs: u64,
) -> Result<()> {
    let mut last_n = [0u8; hdr::N_RECS + 8 - hdr::LAST];
    let (l, n) = last_n.split_at_mut(hdr::N_RECS - hdr::LAST);
    l.copy_from_slice(&addr_bytes(last));
    n.copy_from_slice(&n_recs.to_be_bytes());
    mtr.write(h, off + hdr::LAST, &last_n)?;
    Ok(())
}

/// `log` in memory after its record at `at` (of kind `kind`) was linked and committed.
fn advance(log: &mut UndoLog, at: UndoAddr, kind: UndoKind) {
    log.last = Some(at);
    log.n_recs += 1;
    log.update = log.update || kind != UndoKind::Insert;
}

/// A rollback segment's mutex, held for undo appends written inside the caller's
/// mini-transaction: InnoDB's order for a change of a clustered record, where
/// `btr_cur_del_mark_set_clust_rec` and `btr_cur_update_in_place` log the undo record while
/// the index leaf is latched, so that the undo record and the change it describes are in
/// one redo group: a crash keeps both or neither. The caller latches its other pages first
/// (the undo pages come after the index pages in one mtr, ARCHITECTURE.md's latch order),
/// calls [`UndoTail::append_in`], commits its mtr, and only then [`UndoTail::committed`],
/// which installs the new stream tail and advances the log in memory. Dropped without
/// `committed` (the mtr failed or was dropped, rolling its page changes back), nothing in
/// memory moved.
#[derive(Debug)]
pub struct UndoTail<'a> {
    r: &'a Rseg,
    tail: parking_lot::MutexGuard<'a, Tail>,
    /// The stream after the append written into the caller's mtr, and the record's place
    /// and kind: installed by [`UndoTail::committed`].
    staged: Option<(Tail, UndoAddr, UndoKind)>,
}

impl UndoTail<'_> {
    /// Writes `rec` as the next record of `log` into `mtr` and returns the roll pointer to
    /// store in the changed record; `None` (nothing written) for a record longer than a
    /// page, which takes several mtrs ([`TrxSys::append`] writes those). One record per
    /// mtr: a second call before [`UndoTail::committed`] is refused.
    pub fn append_in(
        &mut self,
        mtr: &mut Mtr<'_>,
        page_size: usize,
        log: &UndoLog,
        rec: NewRecord<'_>,
    ) -> Result<Option<RollPtr>> {
        if self.rseg_id() != log.rseg || self.staged.is_some() {
            return Err(MvccError::CorruptTrxSys {
                page: self.r.page,
                what: format!(
                    "an undo append of transaction {} inside another mtr: rollback segment {} \
                     held, {} wanted, a record already staged: {}",
                    log.trx_id,
                    self.rseg_id(),
                    log.rseg,
                    self.staged.is_some()
                ),
            });
        }
        let kind = rec.kind;
        with_encoded(log.n_recs, log.last, rec, |bytes| {
            if bytes.len() > page_size {
                return Ok(None);
            }
            let mut t = self.tail.stream_copy();
            let at = link(self.r, mtr, &mut t, log, kind, bytes, None, bytes)?;
            self.staged = Some((t, at, kind));
            Ok(Some(roll_ptr(kind, at)))
        })
    }

    /// After the mtr that [`UndoTail::append_in`] wrote into committed: installs the stream
    /// tail and advances `log` (its `last`, its record count) in memory, then lets the mutex
    /// go.
    pub fn committed(mut self, log: &mut UndoLog) {
        if let Some((t, at, kind)) = self.staged.take() {
            self.r.publish_stream(&mut self.tail, t);
            advance(log, at, kind);
        }
    }

    fn rseg_id(&self) -> u8 {
        self.r.id
    }
}
