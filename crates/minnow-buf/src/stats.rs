//! Counters of the buffer pool (`SHOW ENGINE INNODB STATUS`'s BUFFER POOL AND MEMORY section).
//!
//! ## Why the counters are striped
//!
//! A counter bumped on the hit path is a *write*. If every thread increments the same
//! `AtomicU64`, the cache line holding it must move to the incrementing core every time
//! (the MESI protocol lets only one core own a line for writing): two threads hitting the
//! pool then spend most of their time passing that line back and forth, and two threads
//! fix fewer pages per second than one. Per-instance counters do not help when the threads
//! work in the same instance.
//!
//! So each instance's monotonic counters are **striped**: `STRIPES` (16) copies, each on
//! its own 128-byte-aligned line (two lines, because of the adjacent-line prefetcher). A
//! thread gets a stripe once, the first time it counts anything (a thread-local index handed
//! out round robin from a global counter), and only ever writes that stripe; a thread's
//! counters of one instance share a line that no other thread writes (unless more than 16
//! threads are counting). Reading a counter sums its stripes with relaxed loads: a snapshot
//! that may miss increments in flight, never one that is wrong by more than those.
//!
//! `dirty` is not striped: it is a gauge that goes up *and* down, and a sum of stripes read
//! one after the other could see a page's decrement without its earlier increment (a
//! "negative" count). It is changed only when a page is dirtied or cleaned, under the
//! instance's flush-list mutex anyway, never on the hit path.
//!
//! [`crate::BufferPool::stats`] sums everything into a [`BufferPoolStats`] snapshot, cheap
//! enough to poll.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Stripes per instance: more than the threads that usually hit one instance at once.
/// Other crates' hot-path counters (the adaptive hash index's) stripe the same way, with
/// [`thread_stripe`].
pub const STRIPES: usize = 16;

/// The striped (monotonic) counters of an instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Counter {
    Hits,
    Misses,
    Reads,
    ReadAhead,
    Young,
    NotYoung,
    Evictions,
    LruFlushed,
    ListFlushed,
}

const COUNTERS: usize = Counter::ListFlushed as usize + 1;

/// One thread's copy of an instance's counters, alone on its lines.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Stripe([AtomicU64; COUNTERS]);

/// Counters of one instance.
#[derive(Debug, Default)]
pub(crate) struct InstanceStats {
    stripes: [Stripe; STRIPES],
    /// Dirty pages now (a gauge; see the module docs).
    pub dirty: AtomicU64,
}

/// Hands out stripe indices to threads, round robin.
static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// This thread's stripe index (below [`STRIPES`]): handed out round robin the first time a
/// thread asks, the same ever after. Counters that keep one copy per stripe, each on its own
/// cache lines, are written by (mostly) one thread each (see the module docs).
#[inline]
pub fn thread_stripe() -> usize {
    STRIPE.with(|s| {
        let i = s.get();
        if i != usize::MAX {
            return i;
        }
        let i = NEXT_STRIPE.fetch_add(1, Ordering::Relaxed) % STRIPES;
        s.set(i);
        i
    })
}

impl InstanceStats {
    /// Adds one to `c` in this thread's stripe.
    #[inline]
    pub(crate) fn bump(&self, c: Counter) {
        self.stripes[thread_stripe()].0[c as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// The sum of `c` over the stripes.
    pub(crate) fn get(&self, c: Counter) -> u64 {
        self.stripes
            .iter()
            .map(|s| s.0[c as usize].load(Ordering::Relaxed))
            .fold(0, u64::wrapping_add)
    }
}

/// A snapshot of the pool's counters, summed over instances.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BufferPoolStats {
    /// Page fixes served from the pool.
    pub hits: u64,
    /// Page fixes that had to read the page.
    pub misses: u64,
    /// Pages read from disk on demand.
    pub reads: u64,
    /// Pages read by linear read-ahead.
    pub read_ahead: u64,
    /// Old pages moved to the young sublist.
    pub young: u64,
    /// Accesses to old pages that did not move them (first access too recent).
    pub not_young: u64,
    /// Clean pages evicted to make room.
    pub evictions: u64,
    /// Dirty pages written from the LRU tail (to make them evictable).
    pub lru_flushed: u64,
    /// Dirty pages written from the flush list (checkpoint and adaptive flushing).
    pub flush_list_flushed: u64,
    /// Dirty pages now.
    pub dirty_pages: u64,
    /// Free frames now.
    pub free_frames: u64,
    /// Pages on the LRU lists now (young and old sublists together).
    pub lru_pages: u64,
    /// Pages in the LRU's old sublist now (the rest are young).
    pub old_pages: u64,
    /// Frames in the pool.
    pub frames: u64,
}

impl BufferPoolStats {
    /// Hits as a share of all fixes (1.0 when nothing was fixed).
    pub fn hit_ratio(&self) -> f64 {
        let total = self.hits + self.misses;
        if total == 0 {
            1.0
        } else {
            self.hits as f64 / total as f64
        }
    }

    pub(crate) fn add(&mut self, s: &InstanceStats) {
        self.hits += s.get(Counter::Hits);
        self.misses += s.get(Counter::Misses);
        self.reads += s.get(Counter::Reads);
        self.read_ahead += s.get(Counter::ReadAhead);
        self.young += s.get(Counter::Young);
        self.not_young += s.get(Counter::NotYoung);
        self.evictions += s.get(Counter::Evictions);
        self.lru_flushed += s.get(Counter::LruFlushed);
        self.flush_list_flushed += s.get(Counter::ListFlushed);
        self.dirty_pages += s.dirty.load(Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_and_ratio() {
        let s = InstanceStats::default();
        s.bump(Counter::Hits);
        s.bump(Counter::Hits);
        s.bump(Counter::Hits);
        s.bump(Counter::Misses);
        let mut t = BufferPoolStats::default();
        assert_eq!(t.hit_ratio(), 1.0);
        t.add(&s);
        t.add(&s);
        assert_eq!((t.hits, t.misses), (6, 2));
        assert!((t.hit_ratio() - 0.75).abs() < 1e-9);
    }

    #[test]
    fn threads_count_in_their_own_stripes() {
        assert_eq!(std::mem::align_of::<Stripe>(), 128);
        let s = InstanceStats::default();
        std::thread::scope(|sc| {
            for _ in 0..4 {
                sc.spawn(|| {
                    for _ in 0..1000 {
                        s.bump(Counter::Hits);
                    }
                });
            }
        });
        assert_eq!(s.get(Counter::Hits), 4000);
        let used = s
            .stripes
            .iter()
            .filter(|st| st.0[Counter::Hits as usize].load(Ordering::Relaxed) > 0)
            .count();
        // Threads spawned one after the other take consecutive stripes (tests running in
        // parallel may take some in between, so only require more than one).
        assert!(used > 1, "{used}");
    }
}
