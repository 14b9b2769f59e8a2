//! The page hash of an instance, and its lookup that writes nothing shared.
//!
//! The page hash maps a page id to the frame holding it: chained buckets of local frame
//! indices, the key (the page id) living in the frame's control block, as InnoDB chains
//! `buf_page_t`s through `hash`. It changes only when a page is read in, evicted or
//! discarded, under the exclusive lock of [`PageHash::write`]. It is *looked up* on every
//! page fix.
//!
//! ## Why a shared lock stops scaling
//!
//! A reader-writer lock's shared mode is not free: taking it increments a reader count in
//! the lock word, and releasing it decrements it. Those are writes, so the lock word's cache
//! line moves to every core that takes the lock. Two threads that fix pages of the same
//! instance, even *different* pages, take turns owning that one line: the "read-only"
//! lookup becomes a ping-pong of a cache line between cores (~100 ns per transfer), and two
//! threads do less than one.
//!
//! ## The optimistic lookup
//!
//! [`PageHash::lookup_optimistic`] writes no shared cache line. It is a seqlock reader:
//!
//! ```text
//!  v = version            odd: a writer is in, give up (take the lock instead)
//!  walk the bucket chain  atomic loads of the links and of the frames' page ids
//!  pin the frame          (the caller; a write, but to that frame's own control block)
//!  version == v ?         no: a writer came in meanwhile: unpin, take the lock instead
//! ```
//!
//! The exclusive lock makes the version odd when it is taken and even (a new value) when it
//! is released, so "same even version before and after" means no writer held the lock at any
//! time in between: the chain that was walked was a consistent one, and the frame found held
//! the page.
//!
//! The subtle part is the pin. The locked lookup pins *under* the shared lock, and eviction
//! checks pins under the exclusive lock, so an evictor always sees a pin taken by a lookup
//! that found the page. The optimistic lookup keeps that guarantee with sequential
//! consistency: the reader does `pin; load version`, the evictor does `version += 1 (lock);
//! load pin`, all four `SeqCst`. In their single total order either the reader's version load
//! comes before the evictor's increment — then so does the reader's pin, and the evictor sees
//! it and leaves the frame alone — or after it, and the reader sees a changed (or odd)
//! version and backs off. Either way no frame is reused under a successful lookup's pin.
//! (The caller still checks the frame's page id after latching, as the locked path always
//! did, because a page whose read failed is discarded from a pinned frame.)
//!
//! Links are `AtomicU32`, read with atomic loads: a reader racing a writer reads stale or
//! mixed links, never undefined behaviour, and the version check rejects what it found. A
//! walk is bounded by the number of frames, so a reader led in circles by concurrent
//! changes gives up instead of spinning.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::frame::NIL;

/// The hash of a packed page id.
#[inline]
pub(crate) fn fold(id: u64) -> u64 {
    let h = id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    h ^ (h >> 29)
}

/// A value alone on its (pair of) cache line(s).
#[repr(align(128))]
struct Padded<T>(T);

/// The page hash of one instance. See the module docs.
pub(crate) struct PageHash {
    /// Odd while a writer holds `lock`; bumped when the write lock is taken and released.
    /// Alone on its line, so that readers taking `lock` shared do not disturb it.
    version: Padded<AtomicU64>,
    lock: RwLock<()>,
    buckets: Box<[AtomicU32]>,
    next: Box<[AtomicU32]>,
    mask: u64,
    /// Tests only: optimistic lookups that pinned and validated, and that backed off after
    /// finding the page (a writer came in).
    #[cfg(test)]
    pub(crate) probes: [AtomicU64; 2],
}

/// The page hash with its lock held shared: lookups.
pub(crate) struct HashRead<'a> {
    hash: &'a PageHash,
    _lock: RwLockReadGuard<'a, ()>,
}

/// The page hash with its lock held exclusively (version odd): lookups and changes.
pub(crate) struct HashWrite<'a> {
    hash: &'a PageHash,
    _lock: RwLockWriteGuard<'a, ()>,
}

impl PageHash {
    /// A hash for `n` frames (buckets: `n` rounded up to a power of two).
    pub(crate) fn new(n: u32) -> PageHash {
        let buckets = (n as usize).next_power_of_two().max(2);
        PageHash {
            version: Padded(AtomicU64::new(0)),
            lock: RwLock::new(()),
            buckets: (0..buckets).map(|_| AtomicU32::new(NIL)).collect(),
            next: (0..n).map(|_| AtomicU32::new(NIL)).collect(),
            mask: buckets as u64 - 1,
            #[cfg(test)]
            probes: [AtomicU64::new(0), AtomicU64::new(0)],
        }
    }

    /// Takes the lock shared.
    pub(crate) fn read(&self) -> HashRead<'_> {
        HashRead {
            _lock: self.lock.read(),
            hash: self,
        }
    }

    /// Takes the lock exclusively and makes the version odd (even again on drop).
    pub(crate) fn write(&self) -> HashWrite<'_> {
        let lock = self.lock.write();
        // SeqCst: see the module docs (the evictor's `version += 1; load pin`).
        self.version.0.fetch_add(1, Ordering::SeqCst);
        HashWrite {
            _lock: lock,
            hash: self,
        }
    }

    pub(crate) fn bucket_count(&self) -> usize {
        self.buckets.len()
    }

    /// The chain walk shared by all lookups. With the lock held the links are stable; without
    /// it the result is only a guess, to be validated.
    #[inline]
    fn walk(&self, id: u64, key_of: impl Fn(u32) -> u64) -> Option<u32> {
        let mut at = self.buckets[(fold(id) & self.mask) as usize].load(Ordering::Acquire);
        // More steps than frames means the chain changed under a lock-free reader.
        for _ in 0..=self.next.len() {
            if at == NIL {
                return None;
            }
            if key_of(at) == id {
                return Some(at);
            }
            at = self.next.get(at as usize)?.load(Ordering::Acquire);
        }
        None
    }

    /// Finds `id` without lock or pin: a *candidate* frame only, which may stop holding the
    /// page at any moment. For readers that validate with the frame's own version afterwards
    /// ([`crate::racy`]): the walk is bounded and reads only atomics.
    #[inline]
    pub(crate) fn find_unpinned(&self, id: u64, key_of: impl Fn(u32) -> u64) -> Option<u32> {
        self.walk(id, key_of)
    }

    /// The lock-free lookup: finds `id` (`key_of(local)` reads a frame's current page id)
    /// and pins it with `pin(local)`, without writing any shared cache line. `None` when the
    /// page was not found *or* a writer may have interfered; `unpin(local)` undoes a pin that
    /// could not be validated. The caller then takes [`PageHash::read`] to be sure.
    ///
    /// `pin` must be a `SeqCst` read-modify-write, and evictors must load pins with `SeqCst`
    /// under [`PageHash::write`] (see the module docs).
    #[inline]
    pub(crate) fn lookup_optimistic(
        &self,
        id: u64,
        key_of: impl Fn(u32) -> u64,
        pin: impl FnOnce(u32),
        unpin: impl FnOnce(u32),
    ) -> Option<u32> {
        let v = self.version.0.load(Ordering::SeqCst);
        if v % 2 == 1 {
            return None;
        }
        let at = self.walk(id, &key_of)?;
        pin(at);
        // SeqCst, after the SeqCst pin: the evictor either sees the pin or moved the version.
        let ok = self.version.0.load(Ordering::SeqCst) == v && key_of(at) == id;
        #[cfg(test)]
        self.probes[usize::from(!ok)].fetch_add(1, Ordering::Relaxed);
        if ok {
            Some(at)
        } else {
            unpin(at);
            None
        }
    }
}

impl HashRead<'_> {
    /// Finds `id`; `key_of(local)` reads a frame's current page id.
    #[inline]
    pub(crate) fn lookup(&self, id: u64, key_of: impl Fn(u32) -> u64) -> Option<u32> {
        self.hash.walk(id, key_of)
    }

    pub(crate) fn bucket_count(&self) -> usize {
        self.hash.bucket_count()
    }
}

impl HashWrite<'_> {
    /// Finds `id`; `key_of(local)` reads a frame's current page id.
    #[inline]
    pub(crate) fn lookup(&self, id: u64, key_of: impl Fn(u32) -> u64) -> Option<u32> {
        self.hash.walk(id, key_of)
    }

    /// Adds frame `local` (holding `id`) at the head of its chain.
    pub(crate) fn insert(&mut self, id: u64, local: u32) {
        let h = self.hash;
        let b = &h.buckets[(fold(id) & h.mask) as usize];
        h.next[local as usize].store(b.load(Ordering::Relaxed), Ordering::Release);
        b.store(local, Ordering::Release);
    }

    /// Unlinks frame `local` (holding `id`) from its chain.
    pub(crate) fn remove(&mut self, id: u64, local: u32) {
        let h = self.hash;
        let b = &h.buckets[(fold(id) & h.mask) as usize];
        let mut at = b.load(Ordering::Relaxed);
        let mut prev = NIL;
        while at != NIL {
            let n = h.next[at as usize].load(Ordering::Relaxed);
            if at == local {
                if prev == NIL {
                    b.store(n, Ordering::Release);
                } else {
                    h.next[prev as usize].store(n, Ordering::Release);
                }
                h.next[at as usize].store(NIL, Ordering::Release);
                return;
            }
            prev = at;
            at = n;
        }
    }
}

impl Drop for HashWrite<'_> {
    fn drop(&mut self) {
        // Even again, a new value, before the lock (a field, dropped after this) is released.
        self.hash.version.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn hash_chains() {
        let keys = [10u64, 20, 30, 40];
        let h = PageHash::new(4);
        {
            let mut w = h.write();
            for (i, k) in keys.iter().enumerate() {
                w.insert(*k, i as u32);
            }
        }
        let r = h.read();
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(r.lookup(*k, |f| keys[f as usize]), Some(i as u32));
        }
        drop(r);
        h.write().remove(20, 1);
        assert_eq!(h.read().lookup(20, |f| keys[f as usize]), None);
        assert_eq!(h.read().lookup(40, |f| keys[f as usize]), Some(3));
        assert_eq!(h.bucket_count(), 4);
    }

    #[test]
    fn optimistic_lookup_backs_off_while_a_writer_is_in() {
        let keys = [10u64, 20, 30, 40];
        let h = PageHash::new(4);
        let pins = Cell::new(0i32);
        let pin = |_| pins.set(pins.get() + 1);
        let unpin = |_| pins.set(pins.get() - 1);
        h.write().insert(30, 2);
        assert_eq!(h.version.0.load(Ordering::Relaxed), 2);
        assert_eq!(
            h.lookup_optimistic(30, |f| keys[f as usize], pin, unpin),
            Some(2)
        );
        assert_eq!(pins.get(), 1);
        assert_eq!(
            h.lookup_optimistic(20, |f| keys[f as usize], pin, unpin),
            None
        );
        {
            let _w = h.write();
            assert_eq!(h.version.0.load(Ordering::Relaxed) % 2, 1);
            assert_eq!(
                h.lookup_optimistic(30, |f| keys[f as usize], pin, unpin),
                None
            );
        }
        // A key that changes between the walk and the validation (a frame reused) is
        // rejected and its pin undone.
        let reads = Cell::new(0);
        let flaky = |f: u32| {
            reads.set(reads.get() + 1);
            if reads.get() > 1 {
                99
            } else {
                keys[f as usize]
            }
        };
        assert_eq!(h.lookup_optimistic(30, flaky, pin, unpin), None);
        assert_eq!(pins.get(), 1);
    }

    #[test]
    fn a_chain_that_loops_under_a_reader_ends_the_walk() {
        let h = PageHash::new(4);
        // A cycle no writer would leave behind, as a racing reader might see one mid-change.
        h.buckets[(fold(7) & h.mask) as usize].store(0, Ordering::Relaxed);
        h.next[0].store(1, Ordering::Relaxed);
        h.next[1].store(0, Ordering::Relaxed);
        assert_eq!(h.lookup_optimistic(7, |_| 8, |_| {}, |_| {}), None);
    }
}
