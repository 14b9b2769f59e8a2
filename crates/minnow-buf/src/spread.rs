//! A reader-writer latch whose readers write no line other readers write: [`SpreadLatch`].
//!
//! A `parking_lot::RwLock` taken shared still *writes*: its reader count is one word, so
//! every shared acquisition and release is an atomic read-modify-write of one cache line,
//! and threads that only ever take it shared pass that line from core to core. The latches
//! every write transaction takes many times (the buffer pool's commit gate at each mtr
//! commit, the engine's quiesce latch and a table's metadata lock at each statement) are
//! taken exclusively almost never (a checkpoint, `check`, DDL), so the sharing buys nothing.
//!
//! Here the reader count is **spread** over [`SLOTS`] counters, each alone on its cache lines
//! (128 bytes, for the adjacent-line prefetcher). A thread counts itself in the slot of its
//! own (a thread-local index, handed out round robin), so readers on different threads write
//! different lines. The price is paid by the rare writer, which must look at every slot.
//!
//! ## The protocol (Dekker, as the read views' registration in `minnow-mvcc`)
//!
//! ```text
//!   reader                                    writer (holding the inner lock exclusively)
//!   slot += 1                   (SeqCst)      state := PENDING                  (SeqCst)
//!   if state != FREE:                         wait until every slot is 0        (SeqCst)
//!       slot -= 1; wait on the inner lock     state := HELD; every slot still 0? (SeqCst)
//!   ... read ...                              ... write ... ; state := FREE
//!   slot -= 1                   (Release)
//! ```
//!
//! In the single total order of the `SeqCst` operations, either the reader's increment comes
//! before the writer's scan of its slot (the writer waits for it) or the reader's load of the
//! state comes after the writer's store (the reader backs off and waits on the inner
//! `RwLock`, which the writer holds exclusively until it is done). A reader that backs off
//! then holds the inner lock shared: the slow path, only while a writer is around.
//!
//! **Recursive reads** ([`SpreadLatch::read_recursive`], `parking_lot`'s meaning: a thread
//! that may already hold the latch shared must not wait for a *waiting* writer, which waits
//! for it) enter while the state is `PENDING` and back off only from `HELD`. A writer sets
//! `HELD` after a scan found every slot at 0 and scans again after the store: a recursive
//! reader whose increment came before that store is seen by the second scan (the writer goes
//! back to `PENDING` and waits), and one whose increment came after it sees `HELD`, which a
//! writer sets only while no reader holds the latch, so the reader held nothing before.
//!
//! A waiting writer yields, then sleeps in short steps: readers hold these latches for a
//! statement or a commit, and writers are rare. A thread that takes the latch shared twice
//! with [`SpreadLatch::read`] may deadlock with a waiting writer, exactly as with
//! `parking_lot::RwLock::read`.

use std::cell::Cell;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Reader counters per latch (each 128 bytes: 4 KiB a latch).
pub const SLOTS: usize = 32;

const FREE: u8 = 0;
const PENDING: u8 = 1;
const HELD: u8 = 2;

/// One reader counter, alone on its cache lines.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Slot(AtomicU64);

static NEXT_HINT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static HINT: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// This thread's slot.
fn hint() -> usize {
    HINT.with(|h| {
        if h.get() == usize::MAX {
            h.set(NEXT_HINT.fetch_add(1, Ordering::Relaxed) % SLOTS);
        }
        h.get()
    })
}

/// A reader-writer latch with no data, whose shared acquisitions write only the calling
/// thread's own counter while no writer is around (see the module docs).
pub struct SpreadLatch {
    slots: Box<[Slot; SLOTS]>,
    /// [`FREE`], [`PENDING`] (a writer waits for readers) or [`HELD`].
    state: AtomicU8,
    /// Writers take it exclusively for their whole hold; readers that met a writer wait on it
    /// shared. It guards no data and is not a lock of its own in the latch order: it is this
    /// latch's slow path and sits in the latch's own row (ARCHITECTURE.md). Readers on the
    /// fast path never touch it, so it serialises only exclusive holders (a checkpoint,
    /// `check`, DDL) against each other and against the readers that arrive while one of
    /// them is there; readers of different rows never wait on it while no writer is around.
    inner: RwLock<()>,
}

impl std::fmt::Debug for SpreadLatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpreadLatch")
            .field("state", &self.state.load(Ordering::Relaxed))
            .field("readers", &self.readers())
            .finish()
    }
}

impl Default for SpreadLatch {
    fn default() -> SpreadLatch {
        SpreadLatch::new()
    }
}

/// How a shared hold was taken.
#[derive(Debug)]
enum Hold<'a> {
    /// Counted in this slot.
    Slot(usize),
    /// The inner lock, shared (a writer was around).
    Inner(RwLockReadGuard<'a, ()>),
    /// Let go for a while ([`SpreadReadGuard::unlocked`]).
    None,
}

/// A shared hold of a [`SpreadLatch`]; let go when dropped.
#[must_use = "the latch is let go when the guard is dropped"]
#[derive(Debug)]
pub struct SpreadReadGuard<'a> {
    latch: &'a SpreadLatch,
    hold: Hold<'a>,
}

/// An exclusive hold of a [`SpreadLatch`]; let go when dropped.
#[must_use = "the latch is let go when the guard is dropped"]
#[derive(Debug)]
pub struct SpreadWriteGuard<'a> {
    latch: &'a SpreadLatch,
    _inner: RwLockWriteGuard<'a, ()>,
}

impl SpreadLatch {
    /// A free latch.
    pub fn new() -> SpreadLatch {
        SpreadLatch {
            slots: Box::new(std::array::from_fn(|_| Slot::default())),
            state: AtomicU8::new(FREE),
            inner: RwLock::new(()),
        }
    }

    fn slot(&self, i: usize) -> &AtomicU64 {
        &self.slots[i % SLOTS].0
    }

    /// Takes the latch shared, waiting while a writer holds it or waits for it.
    pub fn read(&self) -> SpreadReadGuard<'_> {
        self.shared(FREE)
    }

    /// Takes the latch shared without waiting for a writer that only *waits* (it may be
    /// waiting for this thread's own earlier hold); waits while a writer holds it. For a
    /// thread that may hold the latch shared already (`parking_lot`'s `read_recursive`).
    pub fn read_recursive(&self) -> SpreadReadGuard<'_> {
        self.shared(PENDING)
    }

    /// A shared hold that enters while the state is at most `enter_up_to`.
    fn shared(&self, enter_up_to: u8) -> SpreadReadGuard<'_> {
        let i = hint();
        let slot = self.slot(i);
        slot.fetch_add(1, Ordering::SeqCst);
        if self.state.load(Ordering::SeqCst) <= enter_up_to {
            return SpreadReadGuard {
                latch: self,
                hold: Hold::Slot(i),
            };
        }
        slot.fetch_sub(1, Ordering::Release);
        SpreadReadGuard {
            latch: self,
            hold: Hold::Inner(self.inner.read_recursive()),
        }
    }

    /// Takes the latch exclusively: waits for other writers, then for every reader to let
    /// go (readers that come meanwhile wait).
    pub fn write(&self) -> SpreadWriteGuard<'_> {
        let inner = self.inner.write();
        self.state.store(PENDING, Ordering::SeqCst);
        loop {
            self.wait_for_readers();
            self.state.store(HELD, Ordering::SeqCst);
            if self.readers() == 0 {
                break;
            }
            // A recursive reader came in before the store: wait for it too.
            self.state.store(PENDING, Ordering::SeqCst);
        }
        SpreadWriteGuard {
            latch: self,
            _inner: inner,
        }
    }

    /// Readers counted in the slots now (those on the slow path hold the inner lock).
    fn readers(&self) -> u64 {
        self.slots
            .iter()
            .map(|s| s.0.load(Ordering::SeqCst))
            .fold(0, u64::wrapping_add)
    }

    fn wait_for_readers(&self) {
        let mut round = 0u32;
        while self.readers() != 0 {
            if round < 64 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(50));
            }
            round = round.saturating_add(1);
        }
    }
}

impl SpreadReadGuard<'_> {
    /// Runs `f` with the latch let go, and takes it again (shared, as [`SpreadLatch::read`])
    /// after it: for a wait that must not hold the latch (a row lock wait).
    pub fn unlocked<T>(&mut self, f: impl FnOnce() -> T) -> T {
        self.release();
        let r = f();
        let latch = self.latch;
        *self = latch.read();
        r
    }

    fn release(&mut self) {
        match std::mem::replace(&mut self.hold, Hold::None) {
            Hold::Slot(i) => {
                self.latch.slot(i).fetch_sub(1, Ordering::Release);
            }
            Hold::Inner(g) => drop(g),
            Hold::None => {}
        }
    }
}

impl Drop for SpreadReadGuard<'_> {
    fn drop(&mut self) {
        self.release();
    }
}

impl Drop for SpreadWriteGuard<'_> {
    fn drop(&mut self) {
        self.latch.state.store(FREE, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn readers_share_and_a_writer_excludes_them() {
        let l = SpreadLatch::new();
        let a = l.read();
        let b = l.read();
        assert_eq!(l.readers(), 2);
        drop((a, b));
        assert_eq!(l.readers(), 0);
        let w = l.write();
        assert_eq!(l.state.load(Ordering::SeqCst), HELD);
        drop(w);
        assert_eq!(l.state.load(Ordering::SeqCst), FREE);
        let _c = l.read();
        assert_eq!(l.readers(), 1);
    }

    /// Readers and writers on several threads: a writer never sees a reader inside, nor a
    /// reader a writer (a shared counter checked inside each hold).
    #[test]
    fn writers_and_readers_never_overlap() {
        let l = Arc::new(SpreadLatch::new());
        // Readers inside (low bits) and a writer inside (bit 32).
        let inside = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        for t in 0..6u64 {
            let (l, inside, stop) = (Arc::clone(&l), Arc::clone(&inside), Arc::clone(&stop));
            threads.push(std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) || n < 200 {
                    n += 1;
                    if t == 0 && n.is_multiple_of(50) {
                        let _w = l.write();
                        let before = inside.fetch_add(1 << 32, Ordering::SeqCst);
                        assert_eq!(before, 0, "a writer met a reader or a writer");
                        std::thread::yield_now();
                        inside.fetch_sub(1 << 32, Ordering::SeqCst);
                    } else {
                        let g = if n.is_multiple_of(3) {
                            l.read_recursive()
                        } else {
                            l.read()
                        };
                        let before = inside.fetch_add(1, Ordering::SeqCst);
                        assert_eq!(before >> 32, 0, "a reader met a writer");
                        inside.fetch_sub(1, Ordering::SeqCst);
                        drop(g);
                    }
                }
            }));
        }
        std::thread::sleep(Duration::from_millis(300));
        stop.store(true, Ordering::Relaxed);
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(l.readers(), 0);
    }

    /// A thread holding the latch shared takes it again recursively while a writer waits:
    /// it must get in (the writer waits for both holds), not deadlock.
    #[test]
    fn a_recursive_read_passes_a_waiting_writer() {
        let l = Arc::new(SpreadLatch::new());
        let outer = l.read();
        let wrote = Arc::new(AtomicBool::new(false));
        let w = {
            let (l, wrote) = (Arc::clone(&l), Arc::clone(&wrote));
            std::thread::spawn(move || {
                let _w = l.write();
                wrote.store(true, Ordering::SeqCst);
            })
        };
        while l.state.load(Ordering::SeqCst) != PENDING {
            std::thread::yield_now();
        }
        let inner = l.read_recursive();
        assert!(!wrote.load(Ordering::SeqCst));
        drop(inner);
        drop(outer);
        w.join().unwrap();
        assert!(wrote.load(Ordering::SeqCst));
    }

    /// `unlocked` lets a writer in during the closure and holds the latch again after it.
    #[test]
    fn unlocked_lets_a_writer_in() {
        let l = Arc::new(SpreadLatch::new());
        let mut g = l.read();
        let l2 = Arc::clone(&l);
        let got = g.unlocked(move || {
            let _w = l2.write();
            true
        });
        assert!(got);
        assert_eq!(l.readers(), 1);
        drop(g);
        assert_eq!(l.readers(), 0);
    }
}
