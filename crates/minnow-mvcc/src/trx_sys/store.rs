//! The undo store's write side: appending log headers and undo records to the undo stream,
//! one mini-transaction each, and ending a log (commit, rollback record by record, the end
//! of a rollback). Everything here runs under the stream's tail mutex, the one lock on the
//! stream's last page and the TRX_SYS page's slots.

use std::sync::atomic::Ordering;

use minnow_btree::space;
use minnow_buf::{BufferPool, Mtr, PageHandle};
use minnow_page::PageId;
use minnow_redo::Lsn;

use super::page::{addr_bytes, sys};
use super::{NewRecord, TrxSys, UndoLog};
use crate::error::{MvccError, Result};
use crate::roll_ptr::RollPtr;
use crate::undo::record::{FILLER, LOG_HEADER_LEN, LogHeader, UndoAddr, UndoKind, UndoRecord, hdr};
use crate::undo::{self, UNDO_DATA, UNDO_FREE, UNDO_NEXT, data_end, held_fields, init_undo_page};

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

#[derive(Debug, Clone)]
pub(super) struct Tail {
    pub(super) first_page: u32,
    pub(super) head: u16,
    pub(super) n_pages: u64,
    pub(super) last_page: u32,
    pub(super) free_slots: Vec<u16>,
    pub(super) hist_first: Option<UndoAddr>,
    pub(super) hist_last: Option<UndoAddr>,
    pub(super) hist_len: u64,
}

impl TrxSys {
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
    pub(super) fn publish_tail(&self, tail: &mut Tail, t: Tail) {
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
}
