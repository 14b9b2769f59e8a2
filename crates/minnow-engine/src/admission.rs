//! Admission control: `innodb_thread_concurrency` and `innodb_concurrency_tickets`.
//!
//! Before InnoDB scaled on many cores, letting every client thread run inside the engine at
//! once made them fight over its mutexes, and throughput fell as threads were added. InnoDB's
//! answer (`srv/srv0conc.cc`) was a bouncer at the door:
//!
//! ```text
//!   statement ──► enter: tickets left? ── yes ──► spend one, go
//!                         │ no
//!                         ▼
//!                 fewer than thread_concurrency inside? ── yes ──► inside += 1,
//!                         │ no                                      tickets = concurrency_tickets
//!                         ▼
//!                 wait for someone to leave
//!   every row operation spends a ticket; out of tickets: leave and enter again (queue)
//!   end of statement: leave
//! ```
//!
//! Tickets exist so a thread doing a long scan does not queue at every row: it pays the
//! door once per `concurrency_tickets` rows. With `thread_concurrency = 0` (the default, as
//! in MySQL since 5.6) there is no door: [`Admission::enter`] does one relaxed atomic load
//! and returns a ticket whose every method does nothing. Both knobs can change at runtime
//! (`Database::set_thread_concurrency`), as InnoDB's are `SET GLOBAL` variables. MariaDB removed the feature in 10.6
//! because modern InnoDB scales and users who set it made their servers slower; minnow
//! has it to reproduce experiment E4 and to measure what it costs.
//!
//! Differences from InnoDB: a waiting thread sleeps on a condition variable and is woken by
//! the next thread that leaves (InnoDB sleeps `innodb_thread_sleep_delay` microseconds and
//! retries, self-tuning the delay); minnow has no row-lock waits yet, so the "leave while
//! waiting for a lock" rule has nothing to apply to. A [`Ticket`] is one statement's: it
//! enters when the statement starts (on its first row operation) and leaves when it is
//! dropped (the end of the statement: for a scan, when its `Rows` is dropped). A
//! statement begun by a thread that is already inside (a lookup for each row of an open
//! scan) uses that thread's slot rather than queueing for another, as an InnoDB transaction
//! already inside does; the bookkeeping is per thread, so a scan's `Rows` should be consumed
//! on the thread that opened it when a limit is set.

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use parking_lot::{Condvar, Mutex};

use crate::engine::Engine;

thread_local! {
    /// Slots this thread holds now, per door (by address): a statement started by a thread
    /// that is already inside (a lookup per row of an open scan) rides on that slot instead
    /// of queueing for a second one, which with `thread_concurrency = 1` would wait forever.
    static HELD: Cell<(usize, u32)> = const { Cell::new((0, 0)) };
}

fn held(door: &Admission) -> bool {
    let me = door as *const Admission as usize;
    HELD.with(|h| matches!(h.get(), (d, n) if d == me && n > 0))
}

fn hold(door: &Admission, delta: i32) {
    let me = door as *const Admission as usize;
    HELD.with(|h| {
        let (d, n) = h.get();
        let n = if d == me { n } else { 0 };
        h.set((me, n.saturating_add_signed(delta)));
    });
}

/// The door (see the module docs). One per open database.
#[derive(Debug, Default)]
pub struct Admission {
    /// `thread_concurrency` (0: no limit).
    limit: AtomicUsize,
    /// `concurrency_tickets`.
    tickets: AtomicU32,
    inside: AtomicUsize,
    waiting: AtomicUsize,
    lock: Mutex<()>,
    cv: Condvar,
    entries: AtomicU64,
    waits: AtomicU64,
    peak: AtomicUsize,
}

/// What `Database::admission_stats` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AdmissionStats {
    /// `thread_concurrency` (0: no limit, nothing below is counted).
    pub thread_concurrency: usize,
    /// `concurrency_tickets`.
    pub concurrency_tickets: u32,
    /// Threads inside the engine now.
    pub inside: usize,
    /// Threads waiting at the door now.
    pub waiting: usize,
    /// The most threads ever inside at once (never above `thread_concurrency`).
    pub peak_inside: usize,
    /// Entries through the door (each hands out `concurrency_tickets` tickets).
    pub entries: u64,
    /// Entries that had to wait for a thread to leave first.
    pub waits: u64,
}

impl Admission {
    /// A door for `thread_concurrency` threads (0: no door) with `concurrency_tickets` each.
    pub fn new(thread_concurrency: usize, concurrency_tickets: u32) -> Admission {
        Admission {
            limit: AtomicUsize::new(thread_concurrency),
            tickets: AtomicU32::new(concurrency_tickets.max(1)),
            ..Admission::default()
        }
    }

    /// Changes the limit and the tickets per entry (threads inside stay inside).
    pub fn set(&self, thread_concurrency: usize, concurrency_tickets: u32) {
        self.tickets
            .store(concurrency_tickets.max(1), Ordering::Relaxed);
        self.limit.store(thread_concurrency, Ordering::SeqCst);
        // Waiters re-check against the new limit.
        let _g = self.lock.lock();
        self.cv.notify_all();
    }

    /// A statement's ticket (not yet inside: its first [`Ticket::row`] enters).
    #[inline]
    pub fn enter(&self) -> Ticket<'_> {
        Ticket {
            door: self.guards().then_some(Door::Borrowed(self)),
            left: 0,
            inside: false,
        }
    }

    /// True if a statement starting on this thread must pass the door: there is a limit,
    /// and the thread holds no slot already.
    #[inline]
    fn guards(&self) -> bool {
        self.limit.load(Ordering::Relaxed) > 0 && !held(self)
    }

    fn try_enter(&self) -> bool {
        let mut n = self.inside.load(Ordering::SeqCst);
        let limit = self.limit.load(Ordering::Relaxed);
        while n < limit || limit == 0 {
            match self
                .inside
                .compare_exchange(n, n + 1, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => {
                    self.peak.fetch_max(n + 1, Ordering::Relaxed);
                    return true;
                }
                Err(now) => n = now,
            }
        }
        false
    }

    /// Waits for a slot and takes it.
    fn take_slot(&self) {
        self.entries.fetch_add(1, Ordering::Relaxed);
        if self.try_enter() {
            return;
        }
        self.waits.fetch_add(1, Ordering::Relaxed);
        let mut g = self.lock.lock();
        self.waiting.fetch_add(1, Ordering::SeqCst);
        while !self.try_enter() {
            self.cv.wait(&mut g);
        }
        self.waiting.fetch_sub(1, Ordering::SeqCst);
    }

    /// Gives a slot back and wakes one waiter.
    fn leave(&self) {
        self.inside.fetch_sub(1, Ordering::SeqCst);
        if self.waiting.load(Ordering::SeqCst) > 0 {
            let _g = self.lock.lock();
            self.cv.notify_one();
        }
    }

    /// The door's counters now.
    pub fn stats(&self) -> AdmissionStats {
        AdmissionStats {
            thread_concurrency: self.limit.load(Ordering::Relaxed),
            concurrency_tickets: self.tickets.load(Ordering::Relaxed),
            inside: self.inside.load(Ordering::Relaxed),
            waiting: self.waiting.load(Ordering::Relaxed),
            peak_inside: self.peak.load(Ordering::Relaxed),
            entries: self.entries.load(Ordering::Relaxed),
            waits: self.waits.load(Ordering::Relaxed),
        }
    }
}

/// One statement's pass through the door: spend one per row operation; dropping it leaves.
#[derive(Debug)]
pub struct Ticket<'a> {
    door: Option<Door<'a>>,
    left: u32,
    inside: bool,
}

/// The door a ticket passes: borrowed for a statement that ends before its caller returns,
/// or reached through the engine for a scan's `Rows`, which owns a clone of its `Arc`.
#[derive(Debug)]
enum Door<'a> {
    Borrowed(&'a Admission),
    Owned(Arc<Engine>),
}

impl Door<'_> {
    fn get(&self) -> &Admission {
        match self {
            Door::Borrowed(a) => a,
            Door::Owned(engine) => &engine.admission,
        }
    }
}

impl Ticket<'_> {
    /// One row operation: spends a ticket, entering (and waiting) first when none are left.
    #[inline]
    pub fn row(&mut self) {
        let Some(door) = self.door.as_ref().map(Door::get) else {
            return;
        };
        if self.left == 0 {
            if self.inside {
                door.leave();
                hold(door, -1);
                self.inside = false;
            }
            door.take_slot();
            hold(door, 1);
            self.inside = true;
            self.left = door.tickets.load(Ordering::Relaxed);
        }
        self.left -= 1;
    }
}

impl Ticket<'_> {
    /// One row operation if it needs no wait: spends a ticket and returns true when one is
    /// left (or there is no door); returns false, spending nothing, when [`Ticket::row`]
    /// would have to enter (and perhaps wait). For a caller that holds a page latch.
    #[inline]
    pub fn try_row(&mut self) -> bool {
        if self.door.is_none() {
            return true;
        }
        if self.left == 0 {
            return false;
        }
        self.left -= 1;
        true
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if let (Some(door), true) = (self.door.as_ref().map(Door::get), self.inside) {
            door.leave();
            hold(door, -1);
        }
    }
}

impl<'a> Ticket<'a> {
    /// A ticket that never waits (no door).
    pub fn none() -> Ticket<'a> {
        Ticket {
            door: None,
            left: 0,
            inside: false,
        }
    }
}

impl Ticket<'static> {
    /// A ticket for a statement that outlives the call starting it (a scan's `Rows`): it
    /// holds an `Arc` of the engine while it guards; no door when the engine has no limit.
    pub fn owned(engine: &Arc<Engine>) -> Ticket<'static> {
        if engine.admission.guards() {
            Ticket {
                door: Some(Door::Owned(Arc::clone(engine))),
                left: 0,
                inside: false,
            }
        } else {
            Ticket::none()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_limit_touches_nothing() {
        let a = Admission::new(0, 5000);
        for _ in 0..100 {
            let mut t = a.enter();
            t.row();
            t.row();
        }
        assert_eq!(
            a.stats(),
            AdmissionStats {
                concurrency_tickets: 5000,
                ..AdmissionStats::default()
            }
        );
    }

    #[test]
    fn tickets_are_spent_per_row_and_renewed_through_the_door() {
        let a = Admission::new(4, 10);
        let mut t = a.enter();
        assert_eq!(a.stats().entries, 0, "a statement enters on its first row");
        for _ in 0..25 {
            t.row();
        }
        // 25 rows at 10 tickets an entry: three entries, one slot held.
        let s = a.stats();
        assert_eq!((s.entries, s.inside, s.waits), (3, 1, 0));
        drop(t);
        assert_eq!(a.stats().inside, 0);
    }

    #[test]
    fn a_thread_inside_does_not_queue_for_a_second_slot() {
        let a = Admission::new(1, 100);
        let mut scan = a.enter();
        scan.row();
        let mut lookup = a.enter();
        lookup.row(); // would wait forever if it needed a slot of its own
        drop(lookup);
        assert_eq!(a.stats().inside, 1);
        drop(scan);
        assert_eq!(a.stats().inside, 0);
        let mut next = a.enter();
        next.row();
        assert_eq!(a.stats().entries, 2);
    }

    #[test]
    fn never_more_than_the_limit_inside() {
        let a = Admission::new(2, 3);
        let inside_max = AtomicUsize::new(0);
        let now = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..300 {
                        let mut t = a.enter();
                        for _ in 0..5 {
                            t.row();
                            // Between row() calls this thread is inside: count it.
                            let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                            inside_max.fetch_max(n, Ordering::SeqCst);
                            now.fetch_sub(1, Ordering::SeqCst);
                        }
                    }
                });
            }
        });
        let s = a.stats();
        assert!(inside_max.load(Ordering::SeqCst) <= 2);
        assert!(s.peak_inside <= 2 && s.peak_inside >= 1);
        assert_eq!(s.inside, 0);
        assert_eq!(s.waiting, 0);
        // 8 threads x 300 statements x 5 rows at 3 tickets an entry: two entries each.
        assert_eq!(s.entries, 8 * 300 * 2);
    }
}
