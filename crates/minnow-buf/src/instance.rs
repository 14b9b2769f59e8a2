//! Buffer pool instances: the shards of the pool.
//!
//! Every page belongs to one instance, chosen by a hash of `(space, page_no / 64)` (so the 64
//! pages of a 1 MiB extent share an instance, as in InnoDB, and read-ahead of an extent stays
//! in few instances). Each instance has its own
//!
//! - **page hash** ([`crate::hash`]): page id → frame. The hit path looks it up without any
//!   lock (a seqlock read, validated after pinning the frame); reading a page in or evicting
//!   one takes its lock exclusively;
//! - **lists** (`Mutex`): the LRU list and the free list ([`crate::lru`]);
//! - **flush list** (`Mutex`): its dirty frames ordered by `oldest_modification`. A
//!   `BTreeSet<(lsn, frame)>` rather than a linked list, because concurrent mini-transactions
//!   may insert slightly out of LSN order;
//! - counters ([`crate::stats`]), striped per thread.
//!
//! So threads working on pages of different instances never share a lock or a cache line,
//! and threads hitting different pages of the *same* instance write no common cache line
//! either (the lock-free lookup, the striped counters).
//! Lock order, where more than one is held: page hash, then lists, then flush list. Frame
//! latches are only ever *tried* while one of these is held, never waited for.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU32, Ordering};

use parking_lot::Mutex;

use crate::hash::PageHash;
use crate::lru::Lists;
use crate::stats::InstanceStats;

/// One shard of the pool.
pub(crate) struct Instance {
    /// First global frame index of this instance.
    pub base: u32,
    /// Frames in this instance.
    pub n: u32,
    pub hash: PageHash,
    pub lists: Mutex<Lists>,
    /// Dirty frames: (oldest_modification, global frame).
    pub flush: Mutex<BTreeSet<(u64, u32)>>,
    /// Pages evicted from this instance's LRU so far, InnoDB's `freed_page_clock` (starts
    /// at 1; see [`crate::lru`]).
    pub freed_clock: AtomicU32,
    /// Mirrors of the list lengths, readable without the mutex.
    pub lru_len: AtomicU32,
    pub old_len: AtomicU32,
    pub free_len: AtomicU32,
    pub stats: InstanceStats,
}

impl Instance {
    pub(crate) fn new(base: u32, n: u32, old_pct: u32) -> Instance {
        Instance {
            base,
            n,
            hash: PageHash::new(n),
            lists: Mutex::new(Lists::new(n, old_pct)),
            flush: Mutex::new(BTreeSet::new()),
            freed_clock: AtomicU32::new(1),
            lru_len: AtomicU32::new(0),
            old_len: AtomicU32::new(0),
            free_len: AtomicU32::new(n),
            stats: InstanceStats::default(),
        }
    }

    /// Copies the list lengths into the lock-free mirrors (call with the lists locked).
    pub(crate) fn publish(&self, lists: &Lists) {
        self.lru_len.store(lists.len, Ordering::Relaxed);
        self.old_len.store(lists.old_len, Ordering::Relaxed);
        self.free_len
            .store(lists.free.len() as u32, Ordering::Relaxed);
    }

    /// The oldest modification among this instance's dirty pages.
    pub(crate) fn oldest_modification(&self) -> Option<u64> {
        self.flush.lock().first().map(|&(lsn, _)| lsn)
    }
}
