//! One partition's table: fold → [`Slot`], read without writing anything shared.
//!
//! ## Why not a lock
//!
//! A reader-writer lock taken shared is still a *write*: the reader count lives in the lock
//! word, so every lookup does an atomic read-modify-write on it and its cache line moves to
//! the looking-up core, then back to the next one. Two threads looking up different keys in
//! the same partition pass that line back and forth although neither changes anything.
//!
//! ## A seqlock over atomics
//!
//! The table is an open-addressing hash table (linear probing, at most 5/8 full) whose
//! buckets are made of atomics, and a version counter guards it like InnoDB's and
//! LeanStore's optimistic latches:
//!
//! ```text
//!  writer (holds the partition's mutex)        reader (holds nothing)
//!  version += 1          (odd: "in change")    v = version          odd? try again
//!  fence(Release)                              probe: relaxed loads of the buckets
//!  change buckets (relaxed stores)             fence(Acquire)
//!  version += 1          (even, a new value)   version == v ?       no: try again
//! ```
//!
//! A reader that sees the same even version before and after its probe read buckets no
//! writer touched in between, so what it found is a state the table really had (the
//! canonical seqlock, Boehm 2012). Every access is an atomic load or store: a probe racing a
//! writer reads a mix of old and new words, never undefined behaviour, and the validation
//! throws the mix away. A probe looks at no more buckets than the table has, so a torn
//! table cannot make it loop. After a few failed tries the reader takes the mutex (writers
//! hold it briefly: a page's entries, or one partition of a sweep).
//!
//! A hit writes one thing: the entry's `used` flag (a bit OR-ed into the word that also holds
//! the record's place), on its first probe only (a heuristic for
//! the page back-off in [`crate::index`]; a flag set on the wrong bucket by a racing probe, or
//! lost in a move, only nudges that heuristic).
//!
//! ## Growing without freeing
//!
//! A reader may still be probing the old bucket array when a writer moves everything to a
//! bigger one, so an array is never freed while the table lives: the table keeps a ladder of
//! arrays, level `i` with `16 << i` buckets, and only the current level is used. The levels
//! left behind add up to less than the current one, so the table takes at most twice the
//! memory of its largest size. Deletion shifts the following entries back (no tombstones),
//! so a table never grows because of removals. A fold of 0 marks an empty bucket; the fold 0
//! itself is stored as 1 (the two share an entry, which verification makes harmless: every
//! guess is checked against the page).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering, fence};

use parking_lot::{Mutex, MutexGuard};

use crate::hash::Slot;

/// Buckets at level 0.
const MIN_BUCKETS: usize = 16;

/// Levels of the ladder: far more than memory allows.
const LEVELS: usize = 40;

/// Optimistic tries before a reader takes the mutex.
const TRIES: usize = 4;

/// True if `n` entries fit `buckets` buckets: a load of at most 5/8 keeps linear probing's
/// runs short (about 4 buckets looked at for a fold that is absent, 2 for one present).
#[inline]
fn fits(n: usize, buckets: usize) -> bool {
    n.saturating_mul(8) <= buckets.saturating_mul(5)
}

/// The fold of an empty bucket.
const EMPTY: u64 = 0;

/// The key a fold is stored under (see the module docs: 0 marks an empty bucket).
#[inline]
fn key(fold: u64) -> u64 {
    if fold == EMPTY { 1 } else { fold }
}

/// The `used` flag in [`Bucket::loc`].
const USED: u64 = 1 << 63;
/// The frame hint's bits in [`Bucket::loc`] (above the origin's 32): 31 of them. A frame
/// number past them comes back masked, which is only a wrong hint (the lookup checks it).
const FRAME_BITS: u64 = 0x7FFF_FFFF;

/// One bucket: an entry's words, each an atomic; 40 bytes.
#[derive(Debug, Default)]
struct Bucket {
    fold: AtomicU64,
    index_id: AtomicU64,
    /// `space << 32 | page_no`.
    page: AtomicU64,
    layout: AtomicU64,
    /// `used << 63 | frame << 32 | origin`: the flag a probe sets (with an atomic OR, on the
    /// entry's first probe only) shares a word with the record's place, which writers store
    /// whole.
    loc: AtomicU64,
}

impl Bucket {
    fn used(&self) -> bool {
        self.loc.load(Ordering::Relaxed) & USED != 0
    }

    fn mark_used(&self) {
        self.loc.fetch_or(USED, Ordering::Relaxed);
    }

    fn slot(&self) -> Slot {
        let page = self.page.load(Ordering::Relaxed);
        let loc = self.loc.load(Ordering::Relaxed);
        Slot {
            index_id: self.index_id.load(Ordering::Relaxed),
            space: (page >> 32) as u32,
            page_no: page as u32,
            origin: loc as u32,
            layout: self.layout.load(Ordering::Relaxed),
            frame: ((loc >> 32) & FRAME_BITS) as u32,
        }
    }

    fn set(&self, fold: u64, s: &Slot, used: bool) {
        self.index_id.store(s.index_id, Ordering::Relaxed);
        self.page.store(
            u64::from(s.space) << 32 | u64::from(s.page_no),
            Ordering::Relaxed,
        );
        self.layout.store(s.layout, Ordering::Relaxed);
        let flag = if used { USED } else { 0 };
        let frame = (u64::from(s.frame) & FRAME_BITS) << 32;
        self.loc
            .store(flag | frame | u64::from(s.origin), Ordering::Relaxed);
        self.fold.store(fold, Ordering::Relaxed);
    }
}

/// Where `k` is in `b` (or the empty bucket ending its run): its index, or `None` if the
/// whole array was looked at (full, or torn by a writer).
#[inline]
fn find(b: &[Bucket], k: u64) -> Option<(usize, bool)> {
    let mut i = home(b, k)?;
    let mask = b.len() - 1;
    for _ in 0..b.len() {
        let f = b.get(i)?.fold.load(Ordering::Relaxed);
        if f == k {
            return Some((i, true));
        }
        if f == EMPTY {
            return Some((i, false));
        }
        i = (i + 1) & mask;
    }
    None
}

/// The bucket where the search for `k` begins in `b` (`None` for an empty array; the
/// array's length is a power of two).
#[inline]
fn home(b: &[Bucket], k: u64) -> Option<usize> {
    Some(k as usize & b.len().checked_sub(1)?)
}

/// Starts loading the bucket where the search for `k` begins in `b` (nothing for an empty
/// array).
#[inline]
fn prefetch_home(b: &[Bucket], k: u64) {
    if let Some(x) = home(b, k).and_then(|i| b.get(i)) {
        minnow_buf::prefetch_line(x);
    }
}

/// Buckets ahead that a table's growth prefetches in the new array while it moves entries.
const MOVE_AHEAD: usize = 8;

/// A partition's table (see the module docs).
#[derive(Debug)]
pub(crate) struct Table {
    /// The seqlock: odd while a writer changes the buckets.
    version: AtomicU64,
    /// Guards the buckets, `level` and `len` against other writers: held by whoever changes
    /// this partition (a page's build or drop, a sweep's step) and by a reader that gave up on
    /// the optimistic probe. It serialises only changes to this one partition, never readers
    /// of other keys (they probe without it). Latch order: ARCHITECTURE.md row 11, taken after
    /// a page shard, one partition's at a time, nothing taken while it is held.
    writer: Mutex<()>,
    levels: Box<[OnceLock<Box<[Bucket]>>]>,
    /// The level in use.
    level: AtomicUsize,
    /// Entries (changed by writers only).
    len: AtomicUsize,
}

impl Default for Table {
    fn default() -> Table {
        Table {
            version: AtomicU64::new(0),
            writer: Mutex::new(()),
            levels: (0..LEVELS).map(|_| OnceLock::new()).collect(),
            level: AtomicUsize::new(0),
            len: AtomicUsize::new(0),
        }
    }
}

impl Table {
    /// The bucket array in use (empty before the first insert).
    #[inline]
    fn buckets(&self) -> &[Bucket] {
        self.levels
            .get(self.level.load(Ordering::Acquire))
            .and_then(OnceLock::get)
            .map_or(&[], |b| &b[..])
    }

    /// Starts loading the bucket where a probe or an insert of `fold` begins (only a hint:
    /// taken without the writer mutex, and a table that grows meanwhile only makes it
    /// useless). A page build knows all its folds before it inserts the first: it calls
    /// this a few entries ahead, so that the buckets' cache misses overlap.
    #[inline]
    pub fn prefetch(&self, fold: u64) {
        prefetch_home(self.buckets(), key(fold));
    }

    /// The entry for `fold`, without taking any lock (see the module docs); marks it used.
    #[inline]
    pub fn probe(&self, fold: u64) -> Option<Slot> {
        let k = key(fold);
        for _ in 0..TRIES {
            let v = self.version.load(Ordering::Acquire);
            if v % 2 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let b = self.buckets();
            let found = find(b, k).and_then(|(i, hit)| Some((b.get(i)?, hit)));
            let slot = match found {
                Some((bucket, true)) => Some((bucket, bucket.slot())),
                _ => None,
            };
            fence(Ordering::Acquire);
            if self.version.load(Ordering::Relaxed) != v {
                continue;
            }
            return slot.map(|(bucket, s)| {
                if !bucket.used() {
                    bucket.mark_used();
                }
                s
            });
        }
        let _held = self.writer.lock();
        let b = self.buckets();
        let (i, hit) = find(b, k)?;
        let bucket = b.get(i).filter(|_| hit)?;
        bucket.mark_used();
        Some(bucket.slot())
    }

    /// Entries in the table.
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// Takes the table for changes: the mutex, and the version odd until the guard drops.
    pub fn write(&self) -> TableWrite<'_> {
        let held = self.writer.lock();
        let v = self.version.load(Ordering::Relaxed);
        self.version.store(v.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        TableWrite {
            t: self,
            _held: held,
            v,
        }
    }
}

/// A table taken for changes (see [`Table::write`]).
pub(crate) struct TableWrite<'a> {
    t: &'a Table,
    _held: MutexGuard<'a, ()>,
    /// The even version before the change.
    v: u64,
}

impl Drop for TableWrite<'_> {
    fn drop(&mut self) {
        self.t
            .version
            .store(self.v.wrapping_add(2), Ordering::Release);
    }
}

/// What [`TableWrite::insert`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Put {
    /// A new entry.
    Added,
    /// An entry with the fold was there and now says the new slot.
    Replaced,
    /// No room (the ladder's last level is full).
    Full,
}

impl TableWrite<'_> {
    fn buckets(&self) -> &[Bucket] {
        self.t.buckets()
    }

    /// Entries in the table.
    pub fn len(&self) -> usize {
        self.t.len()
    }

    /// Makes room for `more` entries beyond the present ones ([`fits`]), moving to a bigger
    /// level if needed. False if no level is big enough.
    pub fn reserve(&mut self, more: usize) -> bool {
        let need = self.len().saturating_add(more);
        let mut level = self.t.level.load(Ordering::Relaxed);
        let cap = |l: usize| MIN_BUCKETS.checked_shl(l as u32).unwrap_or(usize::MAX);
        let have = self.buckets().len();
        if have > 0 && fits(need, have) {
            return true;
        }
        while !fits(need, cap(level)) || cap(level) <= have {
            level += 1;
            if level >= LEVELS {
                return false;
            }
        }
        let Some(cell) = self.t.levels.get(level) else {
            return false;
        };
        let new = cell.get_or_init(|| (0..cap(level)).map(|_| Bucket::default()).collect());
        let old = self.buckets();
        for (j, b) in old.iter().enumerate() {
            // The old array is read in order; the new one at random: start the miss for an
            // entry a few buckets on while this one moves.
            if let Some(ahead) = old.get(j + MOVE_AHEAD)
                && let f = ahead.fold.load(Ordering::Relaxed)
                && f != EMPTY
            {
                prefetch_home(new, f);
            }
            let f = b.fold.load(Ordering::Relaxed);
            if f == EMPTY {
                continue;
            }
            if let Some((i, _)) = find(new, f)
                && let Some(to) = new.get(i)
            {
                to.set(f, &b.slot(), b.used());
            }
        }
        self.t.level.store(level, Ordering::Release);
        true
    }

    /// The entry for `fold` and whether it was probed since it was written.
    #[cfg(test)]
    pub fn get(&self, fold: u64) -> Option<(Slot, bool)> {
        let b = self.buckets();
        let (i, hit) = find(b, key(fold))?;
        let bucket = b.get(i).filter(|_| hit)?;
        Some((bucket.slot(), bucket.used()))
    }

    /// Makes the entry for `fold` say `slot` (not yet used). A fold not yet present is added
    /// only if `add` (else [`Put::Full`]).
    pub fn insert(&mut self, fold: u64, slot: Slot, add: bool) -> Put {
        let k = key(fold);
        let b = self.buckets();
        let mut at = match find(b, k) {
            Some((i, true)) => {
                if let Some(x) = b.get(i) {
                    x.set(k, &slot, false);
                }
                return Put::Replaced;
            }
            Some((i, false)) if fits(self.len() + 1, b.len()) => Some(i),
            _ => None,
        };
        if !add {
            return Put::Full;
        }
        if at.is_none() {
            if !self.reserve(1) {
                return Put::Full;
            }
            at = match find(self.buckets(), k) {
                Some((i, false)) => Some(i),
                _ => None,
            };
        }
        match at.and_then(|i| self.buckets().get(i)) {
            Some(x) => {
                x.set(k, &slot, false);
                self.t.len.fetch_add(1, Ordering::Relaxed);
                Put::Added
            }
            None => Put::Full,
        }
    }

    /// Removes the entry for `fold` if `pred` holds for it; returns it and its used flag.
    pub fn remove_if(&mut self, fold: u64, pred: impl Fn(&Slot) -> bool) -> Option<(Slot, bool)> {
        let b = self.buckets();
        let (mut i, true) = find(b, key(fold))? else {
            return None;
        };
        let gone = b.get(i)?;
        let out = (gone.slot(), gone.used());
        if !pred(&out.0) {
            return None;
        }
        // Backward shift: move each later entry of the run whose home is not in (i, j]
        // into the hole, until the run ends.
        let mask = b.len() - 1;
        let mut j = i;
        for _ in 0..b.len() {
            j = (j + 1) & mask;
            let Some(next) = b.get(j) else { break };
            let f = next.fold.load(Ordering::Relaxed);
            if f == EMPTY {
                break;
            }
            let home = f as usize & mask;
            let stays = if i <= j {
                i < home && home <= j
            } else {
                i < home || home <= j
            };
            if stays {
                continue;
            }
            if let Some(hole) = b.get(i) {
                hole.set(f, &next.slot(), next.used());
            }
            i = j;
        }
        if let Some(hole) = b.get(i) {
            hole.fold.store(EMPTY, Ordering::Relaxed);
        }
        self.t.len.fetch_sub(1, Ordering::Relaxed);
        Some(out)
    }

    /// Every entry's slot.
    pub fn slots(&self) -> Vec<Slot> {
        self.buckets()
            .iter()
            .filter(|b| b.fold.load(Ordering::Relaxed) != EMPTY)
            .map(Bucket::slot)
            .collect()
    }

    /// Keeps only the entries for which `keep` holds; returns how many went.
    pub fn retain(&mut self, keep: impl Fn(&Slot) -> bool) -> usize {
        let b = self.buckets();
        let kept: Vec<(u64, Slot, bool)> = b
            .iter()
            .filter_map(|x| {
                let f = x.fold.load(Ordering::Relaxed);
                let s = x.slot();
                (f != EMPTY && keep(&s)).then(|| (f, s, x.used()))
            })
            .collect();
        let gone = self.len().saturating_sub(kept.len());
        if gone == 0 {
            return 0;
        }
        for x in b {
            x.fold.store(EMPTY, Ordering::Relaxed);
        }
        for (f, s, used) in &kept {
            if let Some((i, false)) = find(b, *f)
                && let Some(to) = b.get(i)
            {
                to.set(*f, s, *used);
            }
        }
        self.t.len.store(kept.len(), Ordering::Relaxed);
        gone
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use rand::rngs::SmallRng as StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;

    fn slot(n: u64) -> Slot {
        Slot {
            index_id: n ^ 0x55,
            space: (n >> 3) as u32,
            page_no: n as u32,
            origin: (n as u32).wrapping_mul(7),
            layout: n.wrapping_mul(0x9E37_79B9_7F4A_7C15),
            frame: (n as u32).wrapping_mul(11) & FRAME_BITS as u32,
        }
    }

    /// Inserts, replacements, removals (backward shift) and growth agree with a map, with
    /// folds picked to collide (a few home buckets) and the fold 0.
    #[test]
    fn matches_a_map_under_random_changes() {
        let t = Table::default();
        let mut model: HashMap<u64, Slot> = HashMap::new();
        let mut rng = StdRng::seed_from_u64(18);
        for step in 0..20_000u64 {
            // Few distinct low bits: long probe runs that wrap around the array.
            let fold = (rng.random_range(0..400u64) << 20) | rng.random_range(0..4u64);
            let mut w = t.write();
            if rng.random_bool(0.6) {
                let s = slot(step);
                let put = w.insert(fold, s, true);
                let was = model.insert(key(fold), s);
                assert_eq!(
                    put,
                    if was.is_some() {
                        Put::Replaced
                    } else {
                        Put::Added
                    }
                );
            } else {
                let got = w.remove_if(fold, |_| true).map(|(s, _)| s);
                assert_eq!(got, model.remove(&key(fold)));
            }
            if step % 997 == 0 {
                for (&k, s) in &model {
                    assert_eq!(w.get(k).map(|(s, _)| s), Some(*s));
                }
                assert_eq!(w.len(), model.len());
            }
            drop(w);
            assert_eq!(t.probe(fold), model.get(&key(fold)).copied());
        }
        assert_eq!(t.probe(0), t.probe(1), "0 is stored as 1");
        let removed = t.write().retain(|s| s.index_id % 2 == 0);
        let before = model.len();
        model.retain(|_, s| s.index_id % 2 == 0);
        assert_eq!(removed, before - model.len());
        for (&k, s) in &model {
            assert_eq!(t.probe(k), Some(*s));
        }
        assert_eq!(t.write().slots().len(), model.len());
    }

    /// A slot whose every word depends on `fold` and `generation`: a probe that read words of
    /// two writes (a torn read) is told apart.
    fn tagged(fold: u64, generation: u32) -> Slot {
        Slot {
            index_id: fold ^ 0x55,
            space: generation,
            page_no: generation ^ fold as u32,
            origin: generation.wrapping_mul(3),
            layout: u64::from(generation) << 20 | fold,
            frame: (generation ^ (fold >> 7) as u32) & FRAME_BITS as u32,
        }
    }

    /// Readers probing while a writer inserts, replaces, removes and grows the table see, for
    /// every fold, only a slot that was really stored under it, never a mix of two, and the
    /// folds that are never removed are always found (backward shifts move them under the
    /// readers). Without the version check both fail within a few thousand changes.
    #[test]
    fn racing_probes_see_only_stored_entries() {
        const FOLDS: u64 = 2000;
        // Every seventh fold is stable: inserted once, never removed, spread among the others.
        let stable = |f: u64| f.is_multiple_of(7);
        let t = Arc::new(Table::default());
        {
            let mut w = t.write();
            for f in (1..FOLDS).filter(|&f| stable(f)) {
                assert_eq!(w.insert(f, tagged(f, 0), true), Put::Added);
            }
        }
        // `MINNOW_AHI_RACE_PROBES` lengthens the campaign (probes per reader).
        let probes: u64 = std::env::var("MINNOW_AHI_RACE_PROBES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(200_000);
        let readers: Vec<_> = (0..2)
            .map(|r| {
                let t = Arc::clone(&t);
                std::thread::spawn(move || {
                    let mut rng = StdRng::seed_from_u64(r);
                    for _ in 0..probes {
                        let f = rng.random_range(1..FOLDS);
                        match t.probe(f) {
                            Some(s) => assert_eq!(s, tagged(f, s.space), "fold {f}: torn"),
                            None => assert!(!stable(f), "stable fold {f} not found"),
                        }
                    }
                })
            })
            .collect();
        // The writer changes the table until both readers are through (or one failed).
        let mut rng = StdRng::seed_from_u64(99);
        let mut generation = 0u32;
        while !readers.iter().all(|r| r.is_finished()) {
            generation = generation.wrapping_add(1);
            let g = rng.random_range(1..FOLDS);
            if stable(g) {
                continue;
            }
            let mut w = t.write();
            if rng.random_bool(0.5) {
                w.insert(g, tagged(g, generation), true);
            } else {
                w.remove_if(g, |_| true);
            }
        }
        for r in readers {
            r.join().unwrap();
        }
        assert!(generation > 0);
    }
}
