//! # minnow-ahi: the adaptive hash index
//!
//! A point lookup in a B-tree descends: root, inner pages, leaf, with a binary search on
//! each. When the same keys are looked up again and again (a cached table with a small
//! working set), that work repeats. InnoDB's **adaptive hash index** (AHI) notices this and
//! builds, *on its own*, a hash table from key prefixes to leaf records, so that a lookup
//! becomes one hash probe plus one check of the leaf. This crate is minnow's AHI. It plugs
//! into the tree through [`minnow_btree::tree::SearchHook`]; the tree decides nothing about
//! hashing, and trusts nothing the hash says.
//!
//! ## Adaptive: what to hash, and when
//!
//! Three counters decide, as in InnoDB's `btr0sea.cc`:
//!
//! 1. **Per index, which prefix.** After every descent the index's search statistics
//!    ([`info`]) ask: would a hash on the first `n` key fields have found this record? If
//!    yes, `n_hash_potential` grows; if not, a new `n` is recommended from how many fields
//!    the key shared with the records around it. The index is *ready* once the potential
//!    reaches 100 ([`info::BUILD_LIMIT`]).
//! 2. **Per page, whether.** Once the index is ready, each leaf page counts the descents
//!    that ended on it **with its records where they were** (`helps`, reset whenever the
//!    layout counter of the page's frame differs from the previous descent's: see below).
//!    When `helps` exceeds `n_recs / 16` ([`PAGE_BUILD_LIMIT`]), the page is hashed: every
//!    record's prefix is folded ([`fold`]) and an entry inserted. The count is exactly the
//!    number of lookups a build at the first of those descents would have answered, since
//!    an entry is only good while its page keeps its layout: pages nobody looks up twice,
//!    and pages whose records move between lookups (an insert load, purge), are never
//!    hashed, so such loads pay no builds. Delete marks change records in place and keep
//!    the layout: a bulk delete that reads each row first keeps its pages' entries.
//! 3. **Per lookup, whether to try.** A lookup probes the hash only while its index is ready.
//!
//! ## Entries point at records, and every hit is verified
//!
//! An entry holds the leaf page number, the record's offset, the buffer-pool frame the page
//! was in when it was hashed and that frame's **layout counter** then
//! (`PageReadGuard::layout`): the lookup fixes the page through that frame without the
//! buffer pool's page-hash lookup (`BufferPool::get_read_hinted`). The tree verifies each
//! guess under the page's latch: the same frame with the same layout (the counter moves at
//! every exclusive latch of the frame except one whose holder changes bytes only in place,
//! and at every read-in, so the offset still holds the hashed record), an INDEX leaf of this
//! index, a user record at the offset, and its key equal to the key searched. Otherwise it
//! descends, and the hook drops the entry, or the page's whole stale build (see below).
//!
//! This is how the hash keeps in step with **splits, merges, reorganisation and eviction**
//! without being told about them: each of those moves the layout counter of every frame it
//! touches, so all entries of those pages become stale at once and are never trusted again.
//! A row delete's delete mark is the one change told apart: it latches the leaf in place
//! (`Mtr::get_write_in_place`), so the leaf's entries stay good, and the delete itself
//! finds its record through them (`BTree::change_leaf_record`).
//!
//! ## Upkeep that pays for itself
//!
//! Nothing is done when a page changes. The first lookup that trips on a stale entry (the
//! tree reports that the page's layout moved, [`minnow_btree::tree::Descent::guess_page_changed`])
//! drops that page's **whole** build in one batch, so the page's other keys stop probing
//! entries that cannot verify; a page that changes and is never looked up again costs
//! nothing until its entries are overwritten or its page freed. A lookup that fails on an
//! entry whose page did not change (a wrong or planted entry) removes only that entry, or
//! repairs it in place when its page is hashed as it is now.
//!
//! A build costs about as much as a few dozen descents (fold and insert every record, and
//! later remove them), so a page whose builds go to waste backs off: when a build is
//! dropped, the entries lookups probed meanwhile are counted (each entry has a flag that
//! the first probe sets; later probes only read it). Under a quarter of the page's keys:
//! the page's threshold doubles, up to [`MAX_LEVEL`] doublings (about `n_recs / 4` unchanged
//! descents, after which the descents already paid for cost as much as a build). A quarter
//! or more: it halves again. A page read between a background writer's changes (purge
//! removing delete-marked rows during a read phase) thus stops being rebuilt after a few
//! tries.
//!
//! What the lookup path writes to shared memory: nothing on most probes. The partition is
//! read under a seqlock (the private `table` module teaches it), the hit or miss counter is
//! the thread's own stripe, and an entry's used flag is written on its first probe only. A
//! descent that misses the hash also updates its page's counter under a page-shard lock,
//! but only once the index is ready.
//!
//! A page **evicted** from the buffer pool needs nothing done at once: its entries no longer
//! verify (read back, it is in a frame with another layout), and go at their first failed
//! probe like any stale build. A page **freed** by a merge has its entries dropped at once
//! ([`SearchHook::page_freed`]), for memory; if it were reused its layout would have moved
//! anyway.
//!
//! InnoDB instead updates entries on every row insert and delete and drops a page's entries
//! on every split, merge and eviction, so the hash never holds a stale pointer (its entries
//! are raw record pointers). minnow pays a verification per lookup (a key comparison on the
//! leaf the lookup reads anyway and a layout comparison on its frame's control block) and gets a simpler, crash-free
//! protocol in return: a bug in the maintenance can cost speed, not answers.
//!
//! ## Partitioned by key hash; reads take no latch
//!
//! See [`hash`]: partitions are chosen by the key's fold, not by index, so one hot index
//! spreads over all of them, and a lookup reads one partition optimistically (a seqlock over
//! atomic buckets: read the version, probe, check the version again), taking no lock.
//! Dropping an index marks it dead (no more guesses or entries, at once) and then removes
//! its entries one partition at a time ([`Ahi::drop_index`]), so other queries never wait
//! for the whole drop. Switching the hash off at runtime ([`Ahi::set_enabled`]) empties it the same
//! way; on again, it relearns from scratch.
//!
//! ## Memory
//!
//! [`AhiConfig::max_memory`] bounds the entries: once the table holds
//! `max_memory / ENTRY_BYTES` entries, new ones are refused (counted in
//! [`AhiStats::refused`]); overwriting an existing entry is always allowed. [`AhiStats`]
//! reports the entries, the pages tracked and hashed, and the memory they take.
//!
//! ```
//! use minnow_ahi::{Ahi, AhiConfig};
//! use minnow_btree::BTree;
//! use minnow_btree::record::{Column, ColumnType, RecordLayout, Value};
//! use minnow_buf::{BufConfig, BufferPool};
//! use minnow_page::PageSize;
//!
//! let dir = tempfile::tempdir()?;
//! let pool = BufferPool::create_scratch(dir.path(), BufConfig::with_frames(256, PageSize::K4), 1)?;
//! let layout = RecordLayout::clustered(vec![Column::new(ColumnType::U64)], vec![])?;
//! let (tree, _) = BTree::create(&pool, 1, 42, layout.clone())?;
//! let ahi = Ahi::new(AhiConfig::default());
//! let tree = tree.with_search_hook(ahi.hook(1, 42, layout));
//! for k in 0..2000u64 {
//!     tree.insert(&pool, &[Value::UInt(k), Value::trx_id(1), Value::roll_ptr(1 << 55)])?;
//! }
//! for _ in 0..3 {
//!     for k in 0..2000u64 {
//!         assert!(tree.get(&pool, &[Value::UInt(k)])?.is_some());
//!     }
//! }
//! let s = ahi.stats();
//! assert!(s.pages_hashed > 0 && s.hits > 0);
//! assert_eq!(s.hits, s.descents_avoided);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]
#![deny(unsafe_code)]

pub mod fold;
pub mod hash;
mod index;
pub mod info;
mod table;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use minnow_btree::record::{RecordLayout, SearchKey};
use minnow_btree::tree::SearchHook;
use parking_lot::Mutex;

pub use hash::{ENTRY_BYTES, PAGE_BYTES, Slot};
pub use index::{IndexHook, MAX_LEVEL, PAGE_BUILD_LIMIT};

use hash::Shared;
use index::IndexState;

/// Settings of an adaptive hash index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AhiConfig {
    /// On at start (`innodb_adaptive_hash_index`); [`Ahi::set_enabled`] changes it later.
    pub enabled: bool,
    /// Partitions (rounded up to a power of two, 1 to 4096). Unlike InnoDB's
    /// `innodb_adaptive_hash_index_parts`, a key's partition comes from its hash, not its
    /// index.
    pub partitions: usize,
    /// The most memory entries may take, in bytes (each costs [`ENTRY_BYTES`]).
    pub max_memory: usize,
}

impl Default for AhiConfig {
    /// On, 64 partitions, 128 MiB: room for 2M entries ([`ENTRY_BYTES`] each), so that a
    /// table of a million or two rows, cached in a pool of a gigabyte or so, can have every
    /// leaf hashed (a limit of 64 MiB, a million entries, left the last 5 % of a table of
    /// 1.1M rows without entries).
    fn default() -> AhiConfig {
        AhiConfig {
            enabled: true,
            partitions: 64,
            max_memory: 128 << 20,
        }
    }
}

/// Counters and sizes of an adaptive hash index (cumulative counters since it was made).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AhiStats {
    /// Whether lookups use it now.
    pub enabled: bool,
    /// Hash probes made by lookups.
    pub lookups: u64,
    /// Probes whose guess verified: the record was where the entry said.
    pub hits: u64,
    /// Probes that found no entry, or an entry that failed verification.
    pub misses: u64,
    /// Descents from the root that hits made unnecessary (equal to `hits`: each hit replaces
    /// one descent).
    pub descents_avoided: u64,
    /// Leaf pages whose records are hashed now.
    pub pages_hashed: u64,
    /// Page hash builds so far (a page rebuilt after it changed counts again).
    pub pages_built: u64,
    /// Page hashes dropped whole because their page changed after the build (found out
    /// lazily, by the first lookup that failed on one of its entries).
    pub pages_dropped: u64,
    /// Leaf pages with bookkeeping (hashed or counting helps).
    pub pages_tracked: u64,
    /// Entries in the hash now.
    pub entries: u64,
    /// Entries refused because the memory limit was reached.
    pub refused: u64,
    /// Bytes the entries and the page bookkeeping take (estimated as [`ENTRY_BYTES`] per
    /// entry and [`PAGE_BYTES`] per tracked page).
    pub memory_bytes: u64,
    /// The memory limit, in bytes.
    pub memory_limit: u64,
}

/// An adaptive hash index shared by any number of B-trees (see the crate docs). Cheap to
/// clone (one `Arc`).
#[derive(Debug, Clone)]
pub struct Ahi {
    shared: Arc<Shared>,
    indexes: Arc<Mutex<HashMap<u64, Arc<IndexState>>>>,
    max_memory: usize,
}

impl Ahi {
    /// A new, empty hash.
    pub fn new(config: AhiConfig) -> Ahi {
        Ahi {
            shared: Arc::new(Shared::new(
                config.partitions,
                config.max_memory,
                config.enabled,
            )),
            indexes: Arc::default(),
            max_memory: config.max_memory,
        }
    }

    /// The hook for index `index_id` of tablespace `space` whose leaf records have `layout`:
    /// install it with [`minnow_btree::BTree::with_search_hook`]. Hooks for the same index
    /// share its statistics.
    pub fn hook(&self, space: u32, index_id: u64, layout: RecordLayout) -> Arc<dyn SearchHook> {
        let state = {
            let mut idx = self.indexes.lock();
            Arc::clone(idx.entry(index_id).or_insert_with(|| {
                Arc::new(IndexState {
                    index_id,
                    space,
                    layout,
                    info: Default::default(),
                    dead: Default::default(),
                })
            }))
        };
        Arc::new(IndexHook {
            shared: Arc::clone(&self.shared),
            state,
        })
    }

    /// Whether lookups use the hash now.
    pub fn enabled(&self) -> bool {
        self.shared.enabled.load(Ordering::Relaxed)
    }

    /// Switches the hash on or off at runtime. Off: lookups stop probing at once, then the
    /// entries and statistics are removed one partition at a time. On: it starts learning
    /// again from nothing.
    pub fn set_enabled(&self, on: bool) {
        let was = self.shared.enabled.swap(on, Ordering::SeqCst);
        if was && !on {
            for s in self.indexes.lock().values() {
                s.info.reset();
            }
            self.shared.sweep(|_| true);
        }
    }

    /// Index `index_id` was dropped: its hooks stop at once, then its entries go one page
    /// shard and one partition at a time (other lookups wait at most for one partition's
    /// share of the work, never for the whole drop).
    pub fn drop_index(&self, index_id: u64) {
        let state = {
            let mut idx = self.indexes.lock();
            let state = idx.remove(&index_id);
            // After many drops (thousands of tables) the map gives its room back rather than
            // keep a slot for every index it ever held; it shrinks only once it is under a
            // quarter full, so the rehash costs O(1) per drop over time.
            if idx.len() * 4 < idx.capacity() {
                idx.shrink_to_fit();
            }
            state
        };
        let Some(state) = state else {
            return;
        };
        state.dead.store(true, Ordering::SeqCst);
        self.shared.sweep(|id| id == index_id);
    }

    /// Forgets page `page_no` of `space` (its entries and bookkeeping), for a caller that
    /// frees or evicts pages the hooks are not told about.
    pub fn drop_page(&self, space: u32, page_no: u32) {
        self.shared.drop_page(space, page_no);
    }

    /// Sets the memory limit in bytes (entries beyond it are refused; existing ones stay).
    pub fn set_max_memory(&mut self, bytes: usize) {
        self.max_memory = bytes;
        self.shared
            .max_entries
            .store(bytes / ENTRY_BYTES, Ordering::Relaxed);
    }

    /// The current counters and sizes.
    pub fn stats(&self) -> AhiStats {
        let sh = &self.shared;
        let (hits, misses) = (sh.hits.get(), sh.misses.get());
        let entries = sh.entries.load(Ordering::Relaxed) as u64;
        let pages_tracked = sh.pages_tracked.load(Ordering::Relaxed) as u64;
        AhiStats {
            enabled: self.enabled(),
            // Every probe ends as exactly one hit or one miss: one counter less to bump.
            lookups: hits + misses,
            hits,
            misses,
            descents_avoided: hits,
            pages_hashed: sh.pages_hashed.load(Ordering::Relaxed) as u64,
            pages_built: sh.pages_built.load(Ordering::Relaxed),
            pages_dropped: sh.pages_dropped.load(Ordering::Relaxed),
            pages_tracked,
            entries,
            refused: sh.refused.load(Ordering::Relaxed),
            memory_bytes: entries * ENTRY_BYTES as u64 + pages_tracked * PAGE_BYTES as u64,
            memory_limit: self.max_memory as u64,
        }
    }

    /// Fault injection for tests: makes the entry for the first `n_fields` fields of `key`
    /// of index `index_id` say `slot`, whatever the truth is. Lookups must stay right.
    pub fn plant(&self, index_id: u64, key: &SearchKey, n_fields: usize, slot: Slot) {
        let f = fold::fold(
            index_id,
            key.fields().iter().take(n_fields).map(|f| f.as_deref()),
        );
        self.shared.insert(slot, &[(f, slot.origin)]);
    }

    /// Every entry now, for tests and inspection (takes each partition's lock in turn).
    pub fn entries(&self) -> Vec<Slot> {
        let mut out = Vec::new();
        for p in self.shared.parts.iter() {
            out.extend(p.table.write().slots());
        }
        out
    }

    /// The current recommended prefix of index `index_id` (fields; 0 if none) and whether
    /// lookups probe the hash for it.
    pub fn recommendation(&self, index_id: u64) -> Option<info::Recommendation> {
        self.indexes.lock().get(&index_id).map(|s| s.info.get())
    }
}
