//! Log space: checkpoints that free it, and the reservations that share it among writers.
//!
//! The file is circular: once the buffer pool has written every page changed before LSN `c`,
//! the log before `c` is no longer needed, and [`Log::checkpoint`] records `c` in the next of
//! the two checkpoint slots. Redo that is not yet covered by a checkpoint is never overwritten:
//! an append that would need it fails with [`LogError::LogFull`]. Writers avoid that by
//! **reserving** room ([`Log::reserve`]) *before* they latch any page, and appending into it.
//! Waiting while holding page latches could deadlock with the page cleaner that needs those
//! latches to free the space, which is why InnoDB does its check (`log_free_check`) at mtr
//! start too.
//!
//! ## Reservations
//!
//! Checking that `margin` bytes are free is not enough when writers run at once: sixteen
//! threads can each find 64 KiB free, all go on, and each then append 16 KiB. The last
//! appends find the log full, after their mtrs have changed their pages (they are undone, and
//! their statements fail). So a writer *takes* its margin: [`Log::reserve`] adds it to a counter of
//! reserved bytes and succeeds only if the log has room for it on top of everything used
//! **and everything already reserved**; the [`Reservation`] it returns goes back when the
//! append it covered is done, or when it is dropped (an mtr that changed nothing, an error, a
//! panic). Every mtr between its start and its append is thus covered, however many there are,
//! which is what InnoDB gets by sizing one margin for all the threads that may be inside
//! (MySQL 8.0's `log_calc_concurrency_margin`: `LOG_CHECKPOINT_FREE_PER_THREAD` pages for each
//! of `10 + srv_thread_concurrency` threads, plus `LOG_CHECKPOINT_EXTRA_FREE` pages and 5 % of
//! the capacity), here counted as the mtrs come and go rather than assumed from a setting.
//!
//! A reservation is sized in group bytes and counted as the log bytes such a group may take
//! (its block headers and trailers, and a block for the end falling in a new one). One that
//! does not fit waits, holding nothing (no reservation, no latch): until a checkpoint frees
//! space, or until the mtrs in flight give theirs back (a thread that gives one back while
//! some wait wakes them; one that finds no waiter takes no lock).
//!
//! **Bigger than its reservation.** An mtr does not know in advance how much it will write;
//! one that writes more than its margin (a pessimistic insert that splits several levels, an
//! overflow chain) may take the rest from log space *no one has reserved*, never from another
//! writer's reservation. To leave such mtrs room even when writers have reserved all they
//! can, reservations may use only `capacity - capacity / 16` (InnoDB's margin above keeps a
//! similar 5 % of the capacity). An append that does not fit even so fails with `LogFull`
//! before anything is copied: nothing is logged, the buffer pool's mtr puts its pages back,
//! no state is poisoned, and the next mtr reserves (and waits) as usual. It never waits for space itself, because it holds page latches: a checkpoint
//! might need exactly those pages written. A caller that knows it will write a large group
//! reserves that much with the mtr's own reservation, before it latches anything (overflow
//! chains do: the buffer pool's `mtr_with_room`); [`Log::free_check`] only waits for room
//! without holding it.
//!
//! **Nested mtrs.** A thread that starts an mtr while it holds another (an undo append inside
//! a row write, a segment allocation inside a split) holds a reservation and page latches.
//! If it waited for room, the threads in that state could hold all of it between them and
//! wait for each other, and the checkpoint that would free room may need the pages they
//! latch. So the buffer pool takes the inner mtr's reservation only if it is there at once
//! ([`Log::try_reserve`]); otherwise the inner mtr appends, like a big one, into space no one
//! has reserved, which the 1/16 above keeps for it.
//!
//! ## Checkpoint requests
//!
//! `reserve` works with two marks on the **checkpoint age** (bytes between the checkpoint
//! and the end of the log), as InnoDB's `log_free_check` with `max_modified_age_async` and
//! `_sync` does:
//!
//! ```text
//!   age:  0 ............ 7/8 capacity (async) ........ reservable - reserved - margin .. capacity
//!         nothing to do | ask for a checkpoint, go on  | ask, and wait for room
//! ```
//!
//! Either way the checkpoint asked for is [`Log::flush_target`]: the LSN that brings the age
//! back to 13/16 of the capacity (or, for a writer that waits while the mtrs in flight hold
//! much of the log, further: to where it has room beside their reservations). Asking for a real step matters: a request that freed only
//! what the next mtr needs would come again a few mtrs later, and each one costs the page
//! flusher a batch with its syncs and a checkpoint, and blocks the mtr that asked. With the
//! async mark and the 13/16 target each request frees at least 1/16 of the log (about sixteen
//! requests per lap of a long load) and the mtrs go on while the pages are written; the price
//! is that a page is flushed once it has been dirty for 13/16 of a lap rather than a whole
//! one. A page changed all the time is written about once per lap either way: how often it
//! must be is set by the capacity alone, which is why the default capacity grows with the
//! buffer pool (see `minnow`'s `Config::log_file_size`).
//!
//! ## The common path
//!
//! An mtr start far from both marks costs one atomic add on the reservation counter and a
//! relaxed load of the end-LSN mirror, no mutex and no clock; its append one atomic subtract
//! and a load of the waiter count. The mirror may lag appends in flight, which is why that
//! path answers alone only with twice the margin to spare; near a mark the exact check, under
//! the append mutex, decides.

use super::{Log, LogError, LogStats, lock};
use crate::block::{BLOCK_SIZE, DATA_SIZE, Lsn};
use std::sync::PoisonError;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The counters reservations share, on a cache line of their own: every mtr start and
/// append writes `reserved`, which should not evict the lines readers of the LSNs use.
#[derive(Debug, Default)]
#[repr(align(64))]
pub(super) struct Reserved {
    /// Log bytes reserved by mtrs between their start and their append.
    bytes: AtomicU64,
    /// Threads waiting in [`Log::reserve`]; a returned reservation wakes them only if any.
    waiters: AtomicU64,
}

/// Log space held from an mtr's start to its append (see the module docs). Given back by
/// [`Log::append_reserved`], or when dropped.
#[must_use = "a reservation covers the mtr only while it is held"]
#[derive(Debug)]
pub struct Reservation<'a> {
    log: &'a Log,
    /// Log bytes held (the group bytes asked for, with their block overhead).
    bytes: u64,
}

impl Reservation<'_> {
    /// Log bytes held: the group bytes asked for, with the headers and trailers of the
    /// blocks such a group may span.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Gives the space back without dropping (the append that consumed it is done).
    pub(super) fn release(mut self) {
        self.give_back();
    }

    fn give_back(&mut self) {
        let bytes = std::mem::take(&mut self.bytes);
        if bytes == 0 {
            return;
        }
        let r = &self.log.reserved;
        r.bytes.fetch_sub(bytes, Ordering::SeqCst);
        // A waiter counts itself, then rechecks under the append mutex: if it is not counted
        // yet, its recheck sees this subtraction; if it is, the notify below reaches it.
        if r.waiters.load(Ordering::SeqCst) > 0 {
            let _st = lock(&self.log.append);
            self.log.space.notify_all();
        }
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        self.give_back();
    }
}

/// Log bytes a group of `len` bytes may take: its blocks' headers and trailers, and one more
/// block for an end that falls into a new one.
fn span(len: u64) -> u64 {
    len.div_ceil(DATA_SIZE as u64)
        .saturating_add(1)
        .saturating_mul(BLOCK_SIZE as u64)
}

impl Log {
    /// Bytes of the circular file in use between the checkpoint's block and `end`'s block.
    pub(super) fn used(&self, end: Lsn) -> u64 {
        end.block_start().0 + BLOCK_SIZE as u64 - self.checkpoint_lsn().block_start().0
    }

    /// Free bytes in the circular file (reserved ones included).
    pub fn free_space(&self) -> u64 {
        self.capacity.saturating_sub(self.used(self.current_lsn()))
    }

    /// Log bytes reserved by mtrs between their start and their append.
    pub fn reserved(&self) -> u64 {
        self.reserved.bytes.load(Ordering::Relaxed)
    }

    /// What reservations may take, with what is used: all but the 1/16 kept for mtrs bigger
    /// than their reservation.
    fn reservable(&self) -> u64 {
        self.capacity - self.capacity / 16
    }

    /// The async mark: past this checkpoint age a reservation asks for a checkpoint.
    fn async_mark(&self) -> u64 {
        self.capacity - self.capacity / 8
    }

    /// The checkpoint a request made when the log ends at `lsn` asks for: the one that brings
    /// the checkpoint age down to 13/16 of the capacity (and frees at least `2 * margin`).
    pub fn flush_target(&self, lsn: Lsn, margin: u64) -> Lsn {
        let keep =
            (self.capacity - self.capacity / 16 * 3).min(self.capacity.saturating_sub(2 * margin));
        Lsn(lsn.0.saturating_sub(keep)).max(self.checkpoint_lsn())
    }

    /// Past the async mark: asks for `target` without waiting, unless an earlier request is
    /// still being worked on (the checkpoint has not reached it yet), so that the requester
    /// hears once per step rather than once per mtr.
    fn ask_async(&self, target: Lsn) {
        let prev = self.asked.load(Ordering::Acquire);
        if prev > self.checkpoint_lsn().0 || prev >= target.0 {
            return;
        }
        if self
            .asked
            .compare_exchange(prev, target.0, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
            && let Some(request) = lock(&self.requester).as_ref()
        {
            request(target);
        }
    }

    /// Reserves room for a group of `margin` bytes, to be given back by the append it covers
    /// ([`Log::append_reserved`]) or by dropping the [`Reservation`]. Call it before latching
    /// pages. Past the async mark (checkpoint age above 7/8 of the capacity) it asks the
    /// checkpoint requester for [`Log::flush_target`] and goes on; without room for `margin`
    /// on top of what is used and reserved it asks and waits. Fails with
    /// [`LogError::LogFull`] if the log could never hold it, if it is full and no requester
    /// is installed, or if no room came for `timeout`.
    pub fn reserve(&self, margin: u64, timeout: Duration) -> Result<Reservation<'_>, LogError> {
        self.check_poison()?;
        let bytes = span(margin);
        // The common case, with no mutex and no clock: the relaxed mirror of the end LSN may
        // lag appends in flight (those inside their reservations are counted in `before`), so
        // it answers alone only with twice the margin to spare and the log below the async
        // mark; anywhere near either, the exact check below decides.
        let (held, used, room) = self.take_relaxed(bytes);
        if room >= bytes.saturating_mul(2) && used <= self.async_mark() {
            return Ok(held);
        }
        drop(held);
        let mut waited = None;
        let result = self.reserve_waiting(margin, bytes, timeout, &mut waited);
        if let Some(since) = waited {
            let ns = u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX);
            LogStats::bump(&self.stats.space_waits, 1);
            LogStats::bump(&self.stats.space_wait_ns, ns);
        }
        result
    }

    /// [`Log::reserve`] without waiting and without asking for a checkpoint: the room if it
    /// is there now, else `None`. For an mtr started while the thread already holds one (and
    /// its reservation and latches): waiting then could wait for itself (see "Nested mtrs"
    /// in the module docs).
    pub fn try_reserve(&self, margin: u64) -> Option<Reservation<'_>> {
        let bytes = span(margin);
        let (held, _, room) = self.take_relaxed(bytes);
        (room >= bytes).then_some(held)
    }

    /// Adds `bytes` to the reserved count, and returns them held, with what is used and the
    /// room there was beside the earlier reservations, by the relaxed end-LSN mirror. Taking
    /// first and checking after, rather than the other way round, is what makes two writers
    /// that reserve at once see each other: the later add returns a count with the earlier
    /// one in it. The acquire of that add also makes visible the end LSN of every append
    /// whose reservation it finds given back.
    fn take_relaxed(&self, bytes: u64) -> (Reservation<'_>, u64, u64) {
        let before = self.reserved.bytes.fetch_add(bytes, Ordering::SeqCst);
        let held = Reservation { log: self, bytes };
        let used = self.used(self.current_lsn_relaxed());
        let room = self
            .reservable()
            .saturating_sub(used)
            .saturating_sub(before);
        (held, used, room)
    }

    /// Waits until `margin` bytes of group are free and not reserved, and reserves nothing:
    /// for a caller about to start an mtr it knows is bigger than the reservation the mtr
    /// takes (see "Bigger than its reservation" in the module docs). Errors as
    /// [`Log::reserve`].
    pub fn free_check(&self, margin: u64, timeout: Duration) -> Result<(), LogError> {
        self.reserve(margin, timeout).map(drop)
    }

    /// [`Log::reserve`]'s exact path; sets `waited` to when it first found no room.
    fn reserve_waiting(
        &self,
        margin: u64,
        bytes: u64,
        timeout: Duration,
        waited: &mut Option<Instant>,
    ) -> Result<Reservation<'_>, LogError> {
        let deadline = Instant::now() + timeout;
        loop {
            self.check_poison()?;
            let before = self.reserved.bytes.fetch_add(bytes, Ordering::SeqCst);
            let held = Reservation { log: self, bytes };
            let (lsn, used) = {
                let st = lock(&self.append);
                (st.lsn, self.used(st.lsn))
            };
            let unreserved = self.reservable().saturating_sub(used);
            // The step the marks ask for, or more where the reservations need it: the
            // checkpoint that leaves this one room beside the others.
            let keep = self
                .reservable()
                .saturating_sub(before)
                .saturating_sub(bytes)
                .saturating_sub(BLOCK_SIZE as u64);
            let target = self
                .flush_target(lsn, margin)
                .max(Lsn(lsn.0.saturating_sub(keep)));
            if unreserved.saturating_sub(before) >= bytes {
                if used > self.async_mark() {
                    self.ask_async(target);
                }
                return Ok(held);
            }
            drop(held);
            let full = LogError::LogFull {
                needed: margin,
                available: unreserved.saturating_sub(before),
                checkpoint: self.checkpoint_lsn(),
            };
            // Even an empty log (one block in use) and no other writer could not hold it.
            if bytes > self.reservable().saturating_sub(BLOCK_SIZE as u64) {
                return Err(full);
            }
            let now = Instant::now();
            waited.get_or_insert(now);
            // Short of room for the log's own sake (not only other writers' reservations,
            // which come back without a checkpoint): a checkpoint must make it.
            let log_short = unreserved < bytes;
            let has_requester = {
                let r = lock(&self.requester);
                match r.as_ref() {
                    Some(request) if target > self.checkpoint_lsn() => {
                        self.asked.fetch_max(target.0, Ordering::AcqRel);
                        request(target);
                        true
                    }
                    Some(_) => true,
                    None => false,
                }
            };
            if (log_short && !has_requester) || now >= deadline {
                return Err(full);
            }
            self.wait_for_space(bytes, (deadline - now).min(Duration::from_millis(50)));
        }
    }

    /// Sleeps until a checkpoint or a returned reservation may have made room for `bytes`,
    /// or for `wait`. Counts itself among the waiters first, so that no wake-up is lost.
    fn wait_for_space(&self, bytes: u64, wait: Duration) {
        let r = &self.reserved;
        r.waiters.fetch_add(1, Ordering::SeqCst);
        let st = lock(&self.append);
        let used = self.used(st.lsn);
        let room = self
            .reservable()
            .saturating_sub(used)
            .saturating_sub(r.bytes.load(Ordering::SeqCst));
        if room < bytes {
            drop(
                self.space
                    .wait_timeout(st, wait)
                    .unwrap_or_else(PoisonError::into_inner),
            );
        } else {
            drop(st);
        }
        r.waiters.fetch_sub(1, Ordering::SeqCst);
    }

    /// Whether a group from `start` to `end` fits, `own` of the reserved bytes being its
    /// own. Called under the append mutex. Within its reservation a group always fits
    /// (everything used and reserved together fit when the reservation was taken), so only
    /// the file's end is checked: the reserved counter may briefly count a reservation that
    /// is about to fail and be given back, which must not fail an append that is owed its
    /// room. Beyond it, the group may take only what no other writer holds.
    pub(super) fn fits(&self, start: Lsn, end: Lsn, own: u64) -> bool {
        let used = self.used(end);
        if used - self.used(start) <= own {
            return used <= self.capacity;
        }
        let others = self
            .reserved
            .bytes
            .load(Ordering::SeqCst)
            .saturating_sub(own);
        used.saturating_add(others) <= self.capacity
    }
}
