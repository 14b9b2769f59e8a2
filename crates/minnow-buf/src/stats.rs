//! Counters of the buffer pool (`SHOW ENGINE INNODB STATUS`'s BUFFER POOL AND MEMORY section).
//!
//! Each instance keeps its own counters, so threads working in different instances never
//! write the same cache line; [`crate::BufferPool::stats`] sums them into a
//! [`BufferPoolStats`] snapshot with relaxed loads, cheap enough to poll.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters of one instance.
#[derive(Debug, Default)]
pub(crate) struct InstanceStats {
    pub hits: AtomicU64,
    pub misses: AtomicU64,
    pub reads: AtomicU64,
    pub read_ahead: AtomicU64,
    pub young: AtomicU64,
    pub not_young: AtomicU64,
    pub evictions: AtomicU64,
    pub lru_flushed: AtomicU64,
    pub list_flushed: AtomicU64,
    pub dirty: AtomicU64,
}

#[inline]
pub(crate) fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
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
        let l = |c: &AtomicU64| c.load(Ordering::Relaxed);
        self.hits += l(&s.hits);
        self.misses += l(&s.misses);
        self.reads += l(&s.reads);
        self.read_ahead += l(&s.read_ahead);
        self.young += l(&s.young);
        self.not_young += l(&s.not_young);
        self.evictions += l(&s.evictions);
        self.lru_flushed += l(&s.lru_flushed);
        self.flush_list_flushed += l(&s.list_flushed);
        self.dirty_pages += l(&s.dirty);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_and_ratio() {
        let s = InstanceStats::default();
        bump(&s.hits);
        bump(&s.hits);
        bump(&s.hits);
        bump(&s.misses);
        let mut t = BufferPoolStats::default();
        assert_eq!(t.hit_ratio(), 1.0);
        t.add(&s);
        t.add(&s);
        assert_eq!((t.hits, t.misses), (6, 2));
        assert!((t.hit_ratio() - 0.75).abs() < 1e-9);
    }
}
