//! The hash table itself: partitions of fold → entry, and the per-page bookkeeping.
//!
//! ## Partitions, by key hash
//!
//! InnoDB maps each *index* to one of `innodb_adaptive_hash_index_parts` partitions, each
//! behind one rw-latch, so a single hot index funnels every lookup through one latch. Here
//! the partition is picked by the high bits of the **fold** (the key's hash), so lookups of
//! one hot index spread over all partitions. Each partition is a table on its own cache
//! lines, read under a seqlock (the private `table` module teaches it): a lookup takes no
//! lock at all, so it writes no line another lookup reads (the hit and miss counters are per
//! thread stripe, `Striped`). Maintenance (page builds, repairs, drops) takes one
//! partition's writer mutex at a time, never two at once.
//!
//! ## Entries and pages
//!
//! An entry ([`Slot`]) names a leaf record: the index, the page, the record's offset, and the
//! frame that held the page with its layout counter when the entry was made. A side table, sharded by page number, keeps for every
//! leaf page the descents that saw it unchanged (`helps`, after InnoDB's `n_hash_helps`)
//! and, once the page is hashed, the folds of its entries: dropping a page's entries (when it
//! is found stale, merged away, or its index dropped) then costs one removal per entry and no
//! scan of the table, and no re-folding of records that may no longer be on the page.
//!
//! Lock order: a page shard, then partitions' writer mutexes one at a time. Lookups take
//! nothing (a lookup that keeps meeting a writer takes the partition's mutex, alone).
//! Nothing here latches a buffer-pool page, so holding a page latch while calling in (as the
//! B-tree does) cannot deadlock.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use minnow_buf::stats::{STRIPES, thread_stripe};
use parking_lot::Mutex;

use crate::table::{Put, Table};

/// One hash entry: where a leaf record was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// The index the record belongs to.
    pub index_id: u64,
    /// Its tablespace.
    pub space: u32,
    /// Its leaf page.
    pub page_no: u32,
    /// The record's origin on the page.
    pub origin: u32,
    /// The layout counter of the page's frame when the entry was made
    /// ([`minnow_btree::tree::Guess::layout`]).
    pub layout: u64,
    /// The buffer-pool frame that held the page when the entry was made
    /// ([`minnow_btree::tree::Guess::frame`]): the lookup fixes the page through it, and the
    /// entry holds only while that frame holds the page with the same layout.
    pub frame: u32,
}

/// Bytes an entry costs, for the memory limit: a round estimate. Its 40-byte bucket takes 64
/// bytes at the 5/8 load where a table grows (up to twice that just after it grew), plus 8
/// for the fold kept in its page's list. The smaller arrays a table grew out of are kept
/// (see the `table` module) and can add as much again at most; the estimate does not count
/// them.
pub const ENTRY_BYTES: usize = 64;

/// Bytes the bookkeeping of one tracked page costs (key, value, map overhead), rounded up.
pub const PAGE_BYTES: usize = 64;

/// Entries ahead that a page build prefetches the buckets of ([`Shared::insert`]).
const INSERT_AHEAD: usize = 4;

/// One partition: its table, on cache lines of its own.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct Partition {
    pub table: Table,
}

/// A counter bumped on the lookup path: one copy per thread stripe
/// ([`minnow_buf::stats::thread_stripe`]), each on its own cache lines, so that threads
/// counting hits do not pass one line between them. Reading sums the stripes.
#[derive(Debug, Default)]
pub(crate) struct Striped([Padded; STRIPES]);

#[derive(Debug, Default)]
#[repr(align(128))]
struct Padded(AtomicU64);

impl Striped {
    /// Adds one in this thread's stripe.
    #[inline]
    pub fn bump(&self) {
        if let Some(p) = self.0.get(thread_stripe()) {
            p.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The sum over the stripes.
    pub fn get(&self) -> u64 {
        self.0
            .iter()
            .map(|p| p.0.load(Ordering::Relaxed))
            .fold(0, u64::wrapping_add)
    }
}

/// A hashed page: the prefix it was hashed with, its frame's layout then, and the folds it inserted
/// (in the page's record order, not sorted: only a rebuild needs them sorted, and sorts
/// them then).
#[derive(Debug, Clone)]
pub(crate) struct Hashed {
    pub n_fields: u16,
    pub layout: u64,
    pub folds: Vec<u64>,
}

/// What is known about one leaf page.
#[derive(Debug, Clone)]
pub(crate) struct PageInfo {
    pub index_id: u64,
    /// Descents that ended here with the index's current recommendation.
    pub helps: u32,
    /// The recommendation `helps` counts for.
    pub n_fields: u16,
    /// The page's layout at the descents `helps` counts (a change restarts the count).
    pub seen_layout: u64,
    /// Back-off: a build needs `(n_recs / 16 + 1) << level` unchanged descents. Up by one
    /// when a build is dropped having answered under a quarter of its keys, down by one
    /// when it answered more.
    pub level: u8,
    pub hashed: Option<Hashed>,
}

impl PageInfo {
    pub fn new(index_id: u64) -> PageInfo {
        PageInfo {
            index_id,
            helps: 0,
            n_fields: 0,
            seen_layout: 0,
            level: 0,
            hashed: None,
        }
    }
}

/// The hasher of the page shards' maps: a page's `(space, page_no)` packed into one word and
/// mixed by one multiplication. Every descent of a ready index looks its leaf up in one of
/// these maps; the standard library's SipHash, made to resist keys chosen by an attacker,
/// cost about 150 instructions of that, and page numbers are chosen by the engine.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct PageHasher(u64);

impl Hasher for PageHasher {
    fn finish(&self) -> u64 {
        // The multiplication carries the low bits up; the fold brings the high bits down,
        // since the map takes its bucket from the low bits and its tag from the high ones.
        let h = self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        h ^ (h >> 32)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = self.0 << 32 | u64::from(n);
    }
}

pub(crate) type PageShard = Mutex<HashMap<(u32, u32), PageInfo, BuildHasherDefault<PageHasher>>>;

/// Everything the per-index hooks share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub enabled: AtomicBool,
    pub parts: Box<[Partition]>,
    /// `fold >> part_shift` is the partition.
    pub part_shift: u32,
    pub pages: Box<[PageShard]>,
    pub entries: AtomicUsize,
    pub max_entries: AtomicUsize,
    pub pages_hashed: AtomicUsize,
    pub pages_tracked: AtomicUsize,
    pub pages_built: AtomicU64,
    /// Builds dropped whole because their page changed.
    pub pages_dropped: AtomicU64,
    pub refused: AtomicU64,
    /// Probes whose guess verified.
    pub hits: Striped,
    /// Probes that found no entry, or one that failed verification.
    pub misses: Striped,
}

impl Shared {
    pub fn new(partitions: usize, max_memory: usize, enabled: bool) -> Shared {
        let n = partitions.clamp(1, 1 << 12).next_power_of_two();
        Shared {
            enabled: AtomicBool::new(enabled),
            parts: (0..n).map(|_| Partition::default()).collect(),
            part_shift: 64 - n.trailing_zeros(),
            pages: (0..n).map(|_| PageShard::default()).collect(),
            entries: AtomicUsize::new(0),
            max_entries: AtomicUsize::new(max_memory / ENTRY_BYTES),
            pages_hashed: AtomicUsize::new(0),
            pages_tracked: AtomicUsize::new(0),
            pages_built: AtomicU64::new(0),
            pages_dropped: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            hits: Striped::default(),
            misses: Striped::default(),
        }
    }

    #[inline]
    pub fn part_index(&self, fold: u64) -> usize {
        // `checked_shr` is `None` only for a shift of 64, i.e. one partition.
        fold.checked_shr(self.part_shift).unwrap_or(0) as usize
    }

    #[inline]
    pub fn part(&self, fold: u64) -> Option<&Partition> {
        self.parts.get(self.part_index(fold))
    }

    pub fn page_shard(&self, space: u32, page_no: u32) -> Option<&PageShard> {
        let h = (u64::from(space) << 32 | u64::from(page_no)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.pages.get(self.part_index(h))
    }

    /// Inserts one page's entries: `new` holds `(fold, origin)` pairs, and every entry is
    /// `slot` but for its record's origin. Returns the folds inserted or overwritten, in the
    /// order of `new`. A fold not yet present is refused once the table holds its entry
    /// limit.
    ///
    /// Each entry takes its partition's writer mutex on its own. Taking each partition once
    /// for all of its entries needs the entries grouped by partition first, and sorting a
    /// page's 80-odd entries for that cost more instructions (about 85 per entry) than the
    /// lock pairs it saved. Room for all of them is claimed from the shared entry count with
    /// one atomic write for the whole page, and what was not used is given back after.
    pub fn insert(&self, slot: Slot, new: &[(u64, u32)]) -> Vec<u64> {
        let mut done = Vec::with_capacity(new.len());
        let max = self.max_entries.load(Ordering::Relaxed);
        let want = new.len();
        let claim = |n: usize| Some(n + want.min(max.saturating_sub(n)));
        let claimed = match self
            .entries
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, claim)
        {
            Ok(n) | Err(n) => want.min(max.saturating_sub(n)),
        };
        let mut room = claimed;
        let mut refused = 0u64;
        for (i, &(f, origin)) in new.iter().enumerate() {
            // Each entry's bucket is a cache miss in a large table: start the one of an entry
            // a few ahead now, so that they overlap instead of queueing.
            if let Some(&(ahead, _)) = new.get(i + INSERT_AHEAD)
                && let Some(p) = self.part(ahead)
            {
                p.table.prefetch(ahead);
            }
            let Some(part) = self.part(f) else {
                continue;
            };
            match part
                .table
                .write()
                .insert(f, Slot { origin, ..slot }, room > 0)
            {
                Put::Replaced => done.push(f),
                Put::Added => {
                    room -= 1;
                    done.push(f);
                }
                Put::Full => refused += 1,
            }
        }
        if room > 0 {
            self.entries.fetch_sub(room, Ordering::Relaxed);
        }
        if refused > 0 {
            self.refused.fetch_add(refused, Ordering::Relaxed);
        }
        done
    }

    /// Removes the entries `folds` that still point at page `page_no` of `space`; returns
    /// how many of them lookups had probed.
    pub fn remove_page(&self, mut folds: Vec<u64>, space: u32, page_no: u32) -> usize {
        let mut used = 0;
        folds.sort_unstable();
        let mut i = 0;
        while let Some(&first) = folds.get(i) {
            let p = self.part_index(first);
            let Some(part) = self.parts.get(p) else {
                break;
            };
            let mut table = part.table.write();
            while let Some(&f) = folds.get(i) {
                if self.part_index(f) != p {
                    break;
                }
                i += 1;
                if let Some((_, was_used)) =
                    table.remove_if(f, |s| s.space == space && s.page_no == page_no)
                {
                    used += usize::from(was_used);
                    self.entries.fetch_sub(1, Ordering::Relaxed);
                }
            }
        }
        used
    }

    /// Removes entry `fold` if `pred` holds for it.
    pub fn remove_if(&self, fold: u64, pred: impl Fn(&Slot) -> bool) {
        let Some(part) = self.part(fold) else {
            return;
        };
        if part.table.write().remove_if(fold, pred).is_some() {
            self.entries.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Forgets page `page_no` of `space`: its bookkeeping and its entries.
    pub fn drop_page(&self, space: u32, page_no: u32) {
        let Some(shard) = self.page_shard(space, page_no) else {
            return;
        };
        let mut pages = shard.lock();
        if let Some(pi) = pages.remove(&(space, page_no)) {
            self.pages_tracked.fetch_sub(1, Ordering::Relaxed);
            if let Some(h) = pi.hashed {
                self.pages_hashed.fetch_sub(1, Ordering::Relaxed);
                self.remove_page(h.folds, space, page_no);
            }
        }
    }

    /// Removes every page and entry for which `doomed(index_id)` holds, one page shard and
    /// then one partition at a time: other threads keep using every other shard and
    /// partition meanwhile, and wait at most for one shard's or partition's share.
    pub fn sweep(&self, doomed: impl Fn(u64) -> bool) {
        for shard in self.pages.iter() {
            let mut pages = shard.lock();
            let before = pages.len();
            let mut hashed = 0;
            pages.retain(|_, pi| {
                let keep = !doomed(pi.index_id);
                if !keep && pi.hashed.is_some() {
                    hashed += 1;
                }
                keep
            });
            self.pages_tracked
                .fetch_sub(before - pages.len(), Ordering::Relaxed);
            self.pages_hashed.fetch_sub(hashed, Ordering::Relaxed);
        }
        for part in self.parts.iter() {
            let gone = part.table.write().retain(|s| !doomed(s.index_id));
            self.entries.fetch_sub(gone, Ordering::Relaxed);
        }
    }
}
