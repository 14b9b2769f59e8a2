//! Mini-transactions.
//!
//! A **mini-transaction** (mtr) is the unit of atomic *physical* change: the few page edits
//! that together take the database from one consistent state to the next (insert a record
//! and update the page directory; split a B-tree page and fix its parent). It is not a user
//! transaction: it has no rollback log and lasts microseconds. Its life:
//!
//! 1. **start** ([`crate::BufferPool::mtr`]): reserve room in the log (`Log::reserve`), before
//!    any latch is held — waiting for log space while holding latches could deadlock with the
//!    page cleaner that needs them to free the space. The mtr holds the reservation until its
//!    commit appends into it, so mtrs that start together cannot overrun the log together;
//! 2. **latch**: each page to change is fixed with an exclusive latch ([`Mtr::get_write`],
//!    [`Mtr::new_page`]) and kept latched until commit, so no other thread sees a half-done
//!    state. A page the mtr latched but did **not** change may be let go earlier
//!    ([`Mtr::release`]; refused with [`BufError::ReleaseChanged`] for a changed page): the
//!    B-tree's pessimistic descent latches ancestors it may have to change and releases
//!    those that turn out safe. The redo group is unaffected: it holds every change, and
//!    every changed page stays latched until the group is appended;
//! 3. **change**: [`Mtr::write`], [`Mtr::memset`], [`Mtr::init_page`] change the frame at once
//!    and append the encoding of a redo [`minnow_redo::Record`] to the mtr's group; each
//!    change first saves the bytes it overwrites in the mtr's undo buffer (a few bytes for a
//!    record insert, not a copy of the page);
//! 4. **commit** ([`Mtr::commit`]): append the group (one length prefix, then the records)
//!    to the log → LSN range `[start, end)`; stamp every changed page's FIL LSN with `end`; put pages that
//!    were clean on the flush list with `oldest_modification = start`; then release the
//!    latches. The group is replayed whole or not at all after a crash.
//!
//! **Compressed pages.** A page of a compressed tablespace must still compress into its block
//! after the change, or it could never be written. So commit first compresses every changed
//! page of such a tablespace ([`minnow_io::Tablespace::compress_body`]); if one does not fit,
//! commit fails with [`BufError::CompressionFailure`] before anything is logged, and the
//! dropped mtr puts the page back: the B-tree then splits the page and tries again (InnoDB's
//! compression failure). The blocks that fit are kept in the zip cache (`crate::zip`), so the
//! page cleaner writes them later without compressing again.
//!
//! An mtr dropped without commit, or whose commit fails (log full, poisoned, compression
//! failure), puts the saved bytes back, newest first: no change without redo ever stays in a
//! frame. Commit does not make
//! the redo durable; a user transaction does that once, for all its mtrs, with
//! [`crate::BufferPool::commit_durable`] (`flush_log_at_trx_commit`).
//!
//! **No allocation per change.** An mtr encodes each redo record straight into its group
//! buffer ([`GroupBuf`]) as the change is made, so a write's bytes are copied once, into the
//! group, and never into a record of their own. The group, the saved overwritten bytes and
//! their index are taken from a small per-thread pool when the mtr starts and handed back,
//! emptied but with their capacity, when it ends: a thread that runs mtr after mtr (a row
//! insert runs three or four) allocates for them only while they grow. A buffer that grew
//! past 64 KiB (an mtr that initialised pages) is dropped instead of kept.

use std::cell::{Cell, RefCell};

use minnow_page::{PageId, fil};
use minnow_redo::record::GroupBuf;
use minnow_redo::{Lsn, Reservation};

use crate::guard::PageWriteGuard;
use crate::pool::Mode;
use crate::{BufError, BufferPool};

/// A page an mtr holds: the index of its X-latched guard within the mtr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PageHandle(usize);

struct Held<'a> {
    /// The latch; `None` once [`Mtr::release`] let go of the page (the slot stays, so the
    /// other handles keep their indexes).
    guard: Option<PageWriteGuard<'a>>,
    /// True once the mtr changed the page (it gets the commit LSN and joins the flush list).
    changed: bool,
    created: bool,
}

/// Bytes a change overwrote: `len` bytes at `offset` of held page `page`, saved at the end
/// of [`Mtr::undo`] (the newest last).
struct Overwritten {
    page: usize,
    offset: usize,
    len: usize,
}

/// The buffers of an mtr that hold no borrow: its redo group and what its changes
/// overwrote. Pooled per thread (see the module docs).
#[derive(Default)]
struct Buffers {
    /// The redo records so far, encoded.
    group: GroupBuf,
    /// The overwritten bytes of every change, in order; `overwritten` says where.
    undo: Vec<u8>,
    overwritten: Vec<Overwritten>,
}

/// A pooled buffer that grew past this many bytes is dropped when its mtr ends rather than
/// kept for the next one (an mtr that initialised pages holds a page's worth per page).
const POOL_KEEP: usize = 64 * 1024;

/// Buffers kept per thread: enough for the mtrs one thread has open at once (an undo append
/// inside a row write, a B-tree split and its segment allocation).
const POOL_SLOTS: usize = 4;

thread_local! {
    static POOL: RefCell<Vec<Buffers>> = const { RefCell::new(Vec::new()) };
    /// Mtrs open on this thread: one started while another is open is nested, and must not
    /// wait for log room (see [`crate::BufferPool::mtr`]). Counted where an mtr starts and
    /// where it ends; an mtr ended on another thread than the one that started it would
    /// leave both counts off by one (no caller moves an open mtr between threads).
    static OPEN: Cell<u32> = const { Cell::new(0) };
}

/// How many mtrs this thread has open.
pub(crate) fn open_on_thread() -> u32 {
    OPEN.try_with(Cell::get).unwrap_or(0)
}

fn count_open(up: bool) {
    let _ = OPEN.try_with(|n| {
        n.set(if up {
            n.get().saturating_add(1)
        } else {
            n.get().saturating_sub(1)
        })
    });
}

impl Buffers {
    /// Buffers from this thread's pool, or new ones.
    fn take() -> Buffers {
        POOL.try_with(|p| p.borrow_mut().pop())
            .ok()
            .flatten()
            .unwrap_or_else(|| Buffers {
                // Room for a typical record insert (a dozen changes), so the first mtrs of
                // a thread do not grow these step by step.
                group: GroupBuf::new(),
                undo: Vec::with_capacity(1024),
                overwritten: Vec::with_capacity(16),
            })
    }

    /// Empties the buffers and gives them back to this thread's pool (dropped when they grew
    /// too big or the pool is full).
    fn give_back(mut self) {
        if self.group.capacity() > POOL_KEEP || self.undo.capacity() > POOL_KEEP {
            return;
        }
        self.group.clear();
        self.undo.clear();
        self.overwritten.clear();
        let _ = POOL.try_with(|p| {
            let mut p = p.borrow_mut();
            if p.len() < POOL_SLOTS {
                p.push(self);
            }
        });
    }
}

/// A mini-transaction. See the module docs.
pub struct Mtr<'a> {
    pool: &'a BufferPool,
    pages: Vec<Held<'a>>,
    bufs: Buffers,
    /// The log room reserved at start; the commit's append gives it back (a drop does too).
    room: Option<Reservation<'a>>,
    done: bool,
}

impl<'a> Mtr<'a> {
    pub(crate) fn new(pool: &'a BufferPool, room: Option<Reservation<'a>>) -> Mtr<'a> {
        count_open(true);
        Mtr {
            pool,
            // Room for a typical record insert (a few pages), so the common mtr does not
            // grow this step by step.
            pages: Vec::with_capacity(4),
            bufs: Buffers::take(),
            room,
            done: false,
        }
    }

    fn held(&self, id: PageId) -> Option<PageHandle> {
        self.pages
            .iter()
            .position(|h| h.guard.as_ref().is_some_and(|g| g.id == id))
            .map(PageHandle)
    }

    /// Fixes page `id` with an exclusive latch held until commit (the same handle again if
    /// this mtr already holds it).
    pub fn get_write(&mut self, id: PageId) -> Result<PageHandle, BufError> {
        self.fix(id, Mode::Exclusive)
    }

    /// [`Mtr::get_write`] for a caller that will change the page only **in place**: a delete
    /// mark, system columns, header fields; no record inserted, removed or moved, no
    /// reorganization. The frame's layout counter ([`crate::PageReadGuard::layout`]) then
    /// stays, so what others remember about where the page's records lie (the adaptive hash
    /// index's entries) stays true. A page this mtr already holds comes back as it is held.
    pub fn get_write_in_place(&mut self, id: PageId) -> Result<PageHandle, BufError> {
        self.fix(id, Mode::ExclusiveInPlace)
    }

    /// The handle of page `id`, fixed and latched (`mode`) unless this mtr holds it already.
    fn fix(&mut self, id: PageId, mode: Mode) -> Result<PageHandle, BufError> {
        if let Some(h) = self.held(id) {
            return Ok(h);
        }
        let frame = self.pool.shared.fix(id, mode)?;
        Ok(self.hold(frame, id))
    }

    /// [`Mtr::get_write_in_place`] through `hint`, the frame that held page `id` when the
    /// caller last saw it (as [`BufferPool::get_read_hinted`] does: a stale hint is safe);
    /// the page is fixed the normal way if the frame no longer holds it or is latched.
    /// [`Mtr::frame`] tells which frame it came from.
    pub fn get_write_in_place_hinted(
        &mut self,
        id: PageId,
        hint: u32,
    ) -> Result<PageHandle, BufError> {
        if let Some(h) = self.held(id) {
            return Ok(h);
        }
        let shared = &*self.pool.shared;
        match shared.fix_hinted(id, hint, Mode::ExclusiveInPlace) {
            Some(frame) => Ok(self.hold(frame, id)),
            None => self.get_write_in_place(id),
        }
    }

    fn hold(&mut self, frame: u32, id: PageId) -> PageHandle {
        let shared = &*self.pool.shared;
        self.pages.push(Held {
            guard: Some(PageWriteGuard { shared, frame, id }),
            changed: false,
            created: false,
        });
        PageHandle(self.pages.len() - 1)
    }

    /// The frame holding page `h` (`None` once released).
    pub fn frame(&self, h: PageHandle) -> Option<u32> {
        self.pages
            .get(h.0)
            .and_then(|held| held.guard.as_ref())
            .map(|g| g.frame)
    }

    /// The layout counter of the frame holding page `h` (see [`crate::PageReadGuard::layout`];
    /// `None` once released).
    pub fn layout(&self, h: PageHandle) -> Option<u64> {
        Some(self.pool.shared.ctl(self.frame(h)?).layout())
    }

    /// Allocates page `id` afresh: no read (the file is extended if the page lies past its
    /// end), then [`Mtr::init_page`].
    pub fn new_page(&mut self, id: PageId) -> Result<PageHandle, BufError> {
        let h = match self.held(id) {
            Some(h) => h,
            None => {
                let shared = &*self.pool.shared;
                let (frame, created) = shared.create(id)?;
                self.pages.push(Held {
                    guard: Some(PageWriteGuard { shared, frame, id }),
                    changed: false,
                    created,
                });
                PageHandle(self.pages.len() - 1)
            }
        };
        self.init_page(h)?;
        Ok(h)
    }

    /// The bytes of a held page (empty for a handle this mtr does not hold, or no longer
    /// holds after [`Mtr::release`]).
    pub fn page(&self, h: PageHandle) -> &[u8] {
        match self.pages.get(h.0).and_then(|held| held.guard.as_ref()) {
            Some(guard) => guard,
            None => &[],
        }
    }

    /// The id of a held page (`None` once released).
    pub fn page_id(&self, h: PageHandle) -> Option<PageId> {
        self.pages
            .get(h.0)
            .and_then(|held| held.guard.as_ref())
            .map(|g| g.id)
    }

    /// True if this mtr holds `h` and has changed (or created) the page.
    pub fn is_changed(&self, h: PageHandle) -> bool {
        self.pages
            .get(h.0)
            .is_some_and(|held| held.guard.is_some() && (held.changed || held.created))
    }

    /// Lets go of page `h`'s exclusive latch before commit. Only a page this mtr has not
    /// changed may go: its bytes are exactly what other threads may already see, so nothing
    /// about the redo group changes (it still holds every change, and every changed page
    /// stays latched until it is appended). A B-tree writer uses this to release ancestors
    /// that turn out not to need a change ("safe" pages) while it works lower down.
    ///
    /// Fails with [`BufError::ReleaseChanged`] (and changes nothing) for a page the mtr
    /// changed or created. Releasing a handle the mtr does not hold (never did, or already
    /// released) does nothing. The handle is dead afterwards: [`Mtr::page`] gives an empty
    /// slice, changes through it fail, and [`Mtr::get_write`] of the same page latches it
    /// afresh (under a new handle) — which is only deadlock-free if it respects the caller's
    /// latch order.
    pub fn release(&mut self, h: PageHandle) -> Result<(), BufError> {
        let Some(held) = self.pages.get_mut(h.0) else {
            return Ok(());
        };
        let Some(guard) = &held.guard else {
            return Ok(());
        };
        if held.changed || held.created {
            return Err(BufError::ReleaseChanged { page: guard.id });
        }
        held.guard = None;
        Ok(())
    }

    /// The held page's bytes `offset..offset + len` (already checked against the page size),
    /// to be changed: their current contents are saved for a rollback first.
    fn bytes(
        &mut self,
        h: PageHandle,
        offset: usize,
        len: usize,
    ) -> Result<(&mut [u8], PageId), BufError> {
        let (held, guard) = self
            .pages
            .get_mut(h.0)
            .and_then(|held| {
                let guard = held.guard.as_mut()?;
                Some((&mut held.changed, guard))
            })
            .ok_or(BufError::OutOfPage {
                offset: 0,
                len: 0,
                page_size: 0,
            })?;
        let id = guard.id;
        let range = guard
            .bytes_mut()
            .get_mut(offset..offset + len)
            .ok_or_else(|| BufError::OutOfPage {
                offset,
                len,
                page_size: self.pool.shared.cfg.page_size.bytes(),
            })?;
        *held = true;
        self.bufs.undo.extend_from_slice(range);
        self.bufs.overwritten.push(Overwritten {
            page: h.0,
            offset,
            len,
        });
        Ok((range, id))
    }

    fn check(&self, offset: usize, len: usize) -> Result<u16, BufError> {
        let page_size = self.pool.shared.cfg.page_size.bytes();
        match offset.checked_add(len) {
            Some(end) if end <= page_size && offset <= u16::MAX as usize => Ok(offset as u16),
            _ => Err(BufError::OutOfPage {
                offset,
                len,
                page_size,
            }),
        }
    }

    /// Writes `data` at `offset` of a held page (logged as a WRITE record).
    pub fn write(&mut self, h: PageHandle, offset: usize, data: &[u8]) -> Result<(), BufError> {
        let off = self.check(offset, data.len())?;
        let (bytes, page) = self.bytes(h, offset, data.len())?;
        bytes.copy_from_slice(data);
        self.bufs.group.write(page, off, data);
        Ok(())
    }

    /// Sets `len` bytes at `offset` of a held page to `value` (a MEMSET record).
    pub fn memset(
        &mut self,
        h: PageHandle,
        offset: usize,
        len: usize,
        value: u8,
    ) -> Result<(), BufError> {
        let off = self.check(offset, len)?;
        let len16 = u16::try_from(len).map_err(|_| BufError::OutOfPage {
            offset,
            len,
            page_size: self.pool.shared.cfg.page_size.bytes(),
        })?;
        let (bytes, page) = self.bytes(h, offset, len)?;
        bytes.fill(value);
        self.bufs.group.memset(page, off, len16, value);
        Ok(())
    }

    /// Re-initialises a held page: all zeroes (an INIT_PAGE record), then its FIL page
    /// number and space id (WRITE records), so the page is a valid, empty page of type
    /// ALLOCATED that its user fills in.
    pub fn init_page(&mut self, h: PageHandle) -> Result<(), BufError> {
        let page_size = self.pool.shared.cfg.page_size.bytes();
        let (bytes, page) = self.bytes(h, 0, page_size)?;
        bytes.fill(0);
        self.bufs.group.init_page(page);
        self.write(h, fil::PAGE_NO, &page.page_no.to_be_bytes())?;
        self.write(h, fil::SPACE_ID, &page.space.to_be_bytes())
    }

    /// Number of redo records so far.
    pub fn record_count(&self) -> usize {
        self.bufs.group.len()
    }

    /// Commits: appends the redo group, stamps page LSNs, joins the flush lists, releases
    /// the latches. Returns the end LSN (pass it to [`crate::BufferPool::commit_durable`]).
    /// An mtr without changes appends nothing and returns the current LSN.
    pub fn commit(mut self) -> Result<Lsn, BufError> {
        let shared = &*self.pool.shared;
        let log = shared.log()?;
        if self.bufs.group.is_empty() {
            self.done = true;
            return Ok(log.current_lsn());
        }
        if shared.is_poisoned() {
            return Err(BufError::Poisoned);
        }
        let mut zipped = self.fit_check()?;
        let gate = shared.gate.read();
        let group = self.bufs.group.finish();
        let (start, end) = match self.room.take() {
            Some(room) => log.append_reserved(group, room)?,
            None => log.append(group)?,
        };
        // A changed page is never released ([`Mtr::release`]), so each still has its guard.
        for guard in self.changed_mut() {
            let _ = fil::set_page_lsn(guard.bytes_mut(), end.0);
            shared.mark_dirty(guard.frame, start);
        }
        drop(gate);
        for (i, block) in &mut zipped {
            if let Some(guard) = self.pages.get(*i).and_then(|held| held.guard.as_ref()) {
                // The block was compressed before the LSN was set: give it the page's header
                // and trailer (stored verbatim), so a later zip hit restores the page exactly.
                if minnow_zip::format::reheader(block, &guard[..]).is_ok() {
                    shared.zip.put(shared, guard.id, block);
                } else {
                    shared.zip.invalidate(guard.id);
                }
            }
        }
        self.done = true;
        crate::trace_event!(
            "mtr_commit",
            start = start.0,
            end = end.0,
            pages = self.pages.iter().filter(|h| h.changed).count(),
            records = self.bufs.group.len()
        );
        Ok(end)
    }

    /// Compresses every changed page of a compressed tablespace; a page that does not fit
    /// fails the commit ([`BufError::CompressionFailure`]). Returns the blocks, by held index.
    fn fit_check(&self) -> Result<Vec<(usize, Vec<u8>)>, BufError> {
        let shared = &*self.pool.shared;
        let mut zipped = Vec::new();
        if !shared.spaces.has_compressed() {
            return Ok(zipped);
        }
        let changed = self.pages.iter().enumerate().filter(|(_, h)| h.changed);
        for (i, guard) in changed.filter_map(|(i, h)| Some((i, h.guard.as_ref()?))) {
            let id = guard.id;
            let Some(space) = shared.spaces.get(id.space) else {
                continue;
            };
            if space.zip().is_none() {
                continue;
            }
            let mut block = vec![0u8; space.physical_page_bytes()];
            match space
                .compress_body(&guard[..], &mut block)
                .map_err(|e| BufError::from_io(id, e))?
            {
                minnow_zip::Outcome::Fits { .. } => zipped.push((i, block)),
                minnow_zip::Outcome::DoesNotFit {
                    block_size,
                    capacity,
                } => {
                    return Err(BufError::CompressionFailure {
                        page: id,
                        block: block_size.bytes(),
                        capacity,
                    });
                }
            }
        }
        Ok(zipped)
    }

    /// The guards of the pages this mtr changed.
    fn changed_mut(&mut self) -> impl Iterator<Item = &mut PageWriteGuard<'a>> {
        self.pages
            .iter_mut()
            .filter(|h| h.changed)
            .filter_map(|h| h.guard.as_mut())
    }

    /// Undoes the in-memory changes (the mtr is being dropped uncommitted).
    fn rollback(&mut self) {
        let bufs = &mut self.bufs;
        while let Some(o) = bufs.overwritten.pop() {
            let from = bufs.undo.len().saturating_sub(o.len);
            let range = self
                .pages
                .get_mut(o.page)
                .and_then(|held| held.guard.as_mut())
                .and_then(|guard| guard.bytes_mut().get_mut(o.offset..o.offset + o.len));
            if let (Some(range), Some(saved)) = (range, bufs.undo.get(from..)) {
                range.copy_from_slice(saved);
            }
            bufs.undo.truncate(from);
        }
        for held in self.pages.drain(..).rev() {
            if let (true, Some(guard)) = (held.created, held.guard) {
                guard.discard();
            }
        }
    }
}

impl Drop for Mtr<'_> {
    fn drop(&mut self) {
        count_open(false);
        if !self.done {
            self.rollback();
        }
        std::mem::take(&mut self.bufs).give_back();
    }
}
