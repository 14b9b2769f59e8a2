//! The lock table: sharded queues, granting, waiting, deadlock victims and timeouts, and each
//! transaction's own list of what it holds.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::graph::Graph;
use super::key::{Fold, LockKey};
use super::mode::{Holding, Owner, Parts};
use super::queue::{Queue, Slot, WaitState, Waiter, grant_waiters};
use super::trx::TrxLocks;
use super::{LockError, LockMode, LockStats, TrxId};

/// Number of lock table shards (a power of two): keys spread over them by hash, so threads
/// locking different rows rarely share a mutex.
const SHARDS: usize = 64;

/// A transaction that ends holding at least this many keys it locked itself, and at least a
/// [`SWEEP_SHARE`]th of all the table's holder entries, lets go of them in one pass over the
/// table instead of one probe per key ([`LockManager::release_keys`]).
pub(super) const SWEEP_MIN: u64 = 4096;

/// See [`SWEEP_MIN`]: the pass visits every entry of the table, so it pays only when this
/// transaction's own entries are a good share of them (a probe costs a cache miss, an entry
/// visited in memory order a fraction of one).
pub(super) const SWEEP_SHARE: u64 = 2;

/// One shard of the lock table.
pub(super) type Shard = Mutex<HashMap<LockKey, Slot, Fold>>;

/// What an attempt to lock without waiting found.
pub(super) enum Attempt {
    /// Granted now for the first time.
    New,
    /// Already held at least this strongly, or strengthened in place.
    Held,
    /// Someone is in the way.
    Busy,
}

/// The lock table: grants, queues, deadlock detection and timeouts for row locks. Shared by
/// every transaction (`Arc`); each transaction locks through its own [`TrxLocks`].
///
/// ```
/// # use minnow_mvcc::lock::{LockError, LockKey, LockManager, LockMode};
/// use std::time::Duration;
///
/// let locks = LockManager::new(Duration::from_millis(50));
/// let row = LockKey::new(7, &42u64.to_be_bytes());
/// let mut t1 = locks.begin(1);
/// let mut t2 = locks.begin(2);
/// t1.lock(row.clone(), LockMode::Exclusive)?;
/// // Transaction 2 cannot have the row while 1 holds it.
/// assert!(!t2.try_lock(&row, LockMode::Shared));
/// let waited = t2.lock(row.clone(), LockMode::Exclusive);
/// assert!(matches!(waited, Err(LockError::Timeout { trx: 2, .. })));
/// t1.release_all(); // at commit or rollback
/// assert!(t2.try_lock(&row, LockMode::Exclusive));
/// # Ok::<(), LockError>(())
/// ```
pub struct LockManager {
    shards: Box<[Shard; SHARDS]>,
    pub(super) graph: Mutex<Graph>,
    timeout: Duration,
    waits: AtomicU64,
    pub(super) deadlocks: AtomicU64,
    timeouts: AtomicU64,
    waiting: AtomicU64,
    /// Holder entries of transactions (one per transaction and key; a background task's are
    /// not counted), kept where entries are made and removed.
    pub(super) held: AtomicU64,
    /// Keys on which a transaction was given a lock by inheritance (see `inherit.rs`), which
    /// its own [`TrxLocks`] does not list: released with the rest when it ends.
    pub(super) inherited: Mutex<HashMap<TrxId, Vec<LockKey>, Fold>>,
    /// Number of keys in `inherited`: zero lets a transaction's end skip that map's latch.
    pub(super) inherited_keys: AtomicU64,
}

impl fmt::Debug for LockManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockManager")
            .field("timeout", &self.timeout)
            .field("stats", &self.stats())
            .finish()
    }
}

impl LockManager {
    /// An empty lock table whose waits end after `wait_timeout`.
    pub fn new(wait_timeout: Duration) -> Arc<LockManager> {
        Arc::new(LockManager {
            shards: Box::new(std::array::from_fn(|_| Mutex::default())),
            graph: Mutex::default(),
            timeout: wait_timeout,
            waits: AtomicU64::new(0),
            deadlocks: AtomicU64::new(0),
            timeouts: AtomicU64::new(0),
            waiting: AtomicU64::new(0),
            held: AtomicU64::new(0),
            inherited: Mutex::default(),
            inherited_keys: AtomicU64::new(0),
        })
    }

    /// The locks of transaction `trx` under REPEATABLE READ, empty: lock through them, release
    /// them at commit or rollback (dropping them releases too).
    pub fn begin(self: &Arc<Self>, trx: TrxId) -> TrxLocks {
        TrxLocks::new(Arc::clone(self), trx, Owner::RepeatableRead)
    }

    /// The locks of transaction `trx` under READ COMMITTED: like [`LockManager::begin`], but
    /// the transaction takes no gap locks (a next-key request locks the record only, a gap
    /// request is granted without locking anything: InnoDB's `trx_t::skip_gap_locks`), and its
    /// exclusive locks are not inherited by a removed record's successor. Insert intentions
    /// are still checked: a READ COMMITTED insert waits for a REPEATABLE READ gap lock.
    pub fn begin_read_committed(self: &Arc<Self>, trx: TrxId) -> TrxLocks {
        TrxLocks::new(Arc::clone(self), trx, Owner::ReadCommitted)
    }

    /// The locks of a background task that is not a transaction (the `minnow-engine` crate's purge,
    /// which holds one row's lock at a time while it removes what that row no longer needs),
    /// named `trx` in the queues. They conflict, queue and wait exactly as a transaction's,
    /// but are not counted in [`LockStats::held`], which counts the locks of transactions,
    /// and a removed record's successor does not inherit them.
    pub fn begin_background(self: &Arc<Self>, trx: TrxId) -> TrxLocks {
        TrxLocks::new(Arc::clone(self), trx, Owner::Background)
    }

    /// The lock wait timeout.
    pub fn wait_timeout(&self) -> Duration {
        self.timeout
    }

    /// The counters.
    pub fn stats(&self) -> LockStats {
        LockStats {
            waits: self.waits.load(Ordering::Relaxed),
            deadlocks: self.deadlocks.load(Ordering::Relaxed),
            timeouts: self.timeouts.load(Ordering::Relaxed),
            waiting: self.waiting.load(Ordering::Relaxed),
            held: self.held.load(Ordering::Relaxed),
        }
    }

    /// The mode in which `trx` holds the record of `key` (by a record or next-key lock), if it
    /// does.
    pub fn held(&self, trx: TrxId, key: &LockKey) -> Option<LockMode> {
        self.held_parts(trx, key).and_then(|p| p.rec)
    }

    /// The mode in which `trx` holds the gap before `key` (by a gap or next-key lock, or one
    /// inherited), if it does.
    pub fn held_gap(&self, trx: TrxId, key: &LockKey) -> Option<LockMode> {
        self.held_parts(trx, key).and_then(|p| p.gap)
    }

    /// True if any transaction holds or waits for a lock on a key of index `index`. It
    /// looks at every shard (one latch at a time): for a caller that rarely asks and has
    /// made sure no new request on the index can start meanwhile (the `minnow-engine` crate's
    /// bulk insert claim, under the table's exclusive metadata lock).
    pub fn index_in_use(&self, index: u64) -> bool {
        self.shards.iter().any(|s| {
            s.lock()
                .iter()
                .any(|(k, q)| k.index() == index && !q.is_empty())
        })
    }

    fn held_parts(&self, trx: TrxId, key: &LockKey) -> Option<Parts> {
        self.shard(key).lock().get(key).and_then(|q| q.held_by(trx))
    }

    /// The shard number of `key`.
    pub(super) fn shard_no(key: &LockKey) -> usize {
        // Middle bits: the multiply in `write_u64` mixes upward, and the hash map inside the
        // shard uses the lowest bits (bucket) and the top seven (tag); take neither.
        (key.hash >> 40) as usize % SHARDS
    }

    // The index is reduced modulo the array's length, so it cannot be out of bounds.
    #[allow(clippy::indexing_slicing)]
    pub(super) fn shard_at(&self, no: usize) -> &Shard {
        &self.shards[no % SHARDS]
    }

    fn shard(&self, key: &LockKey) -> &Shard {
        self.shard_at(Self::shard_no(key))
    }

    /// Grants without waiting if nothing is in the way.
    pub(super) fn attempt(&self, key: &LockKey, want: Holding) -> Attempt {
        let mut table = self.shard(key).lock();
        // One probe of the table whether the key is there or not.
        let slot = match table.entry(key.clone()) {
            Entry::Vacant(v) => {
                // An insert intention into a gap nobody locks creates nothing (InnoDB's fast
                // path in `lock_rec_insert_check_and_lock`).
                if want.parts.holds_nothing() {
                    return Attempt::Held;
                }
                v.insert(Slot::one(want));
                self.count_new(want.owner);
                return Attempt::New;
            }
            Entry::Occupied(o) => o.into_mut(),
        };
        if let Slot::One(h) = slot {
            // The key's only lock, nobody waiting: the holder's own request strengthens it in
            // place (its own lock never blocks it), another's waits if it conflicts.
            if h.trx == want.trx {
                h.parts = h.parts.merge(want.parts);
                return Attempt::Held;
            }
            if want.parts.waits_for(h.parts) {
                return Attempt::Busy;
            }
        }
        let held = slot.held_by(want.trx);
        if held.is_some_and(|p| p.covers(want.parts)) {
            return Attempt::Held;
        }
        let q = slot.queue();
        // A transaction that holds the key already (an upgrade) waits only for the holders.
        if q.must_wait(want.trx, want.parts, held.is_some()) {
            return Attempt::Busy;
        }
        let new = self.grant(q, want, "grant");
        if new { Attempt::New } else { Attempt::Held }
    }

    /// Grants `want` in `q`, where it need not wait; true if that made a new holder entry. A
    /// stronger holder, or a new gap part, may block waiters it did not block before: their
    /// edges are refreshed. No cycle can close here: the grantee is running, not waiting.
    fn grant(&self, q: &mut Queue, want: Holding, _at: &str) -> bool {
        let new = q.granted.grant(want);
        if new {
            self.count_new(want.owner);
        }
        if !q.waiting.is_empty() {
            let mut graph = self.graph.lock();
            graph.refresh(q);
            #[cfg(test)]
            graph.check(_at);
        }
        new
    }

    /// Counts a new holder entry of `owner` in `LockStats::held`, if its locks count.
    fn count_new(&self, owner: Owner) {
        if owner.counted() {
            self.held.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts a holder entry of `owner` gone from `LockStats::held`, if its locks count.
    fn count_gone(&self, owner: Owner) {
        if owner.counted() {
            self.held.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Queues the request `want` and parks until it is granted (`Ok(true)` if the key is newly
    /// held), chosen as a deadlock victim, or out of time.
    pub(super) fn enqueue_and_wait(&self, key: &LockKey, want: Holding) -> Result<bool, LockError> {
        let trx = want.trx;
        let shard = self.shard(key);
        let mut table = shard.lock();
        // The queue may have changed since the attempt let go of the shard: try again under it.
        let q = table.entry(key.clone()).or_insert_with(Slot::empty).queue();
        let upgrade = q.held_by(trx).is_some();
        if !q.must_wait(trx, want.parts, upgrade) {
            let new = self.grant(q, want, "regrant");
            if q.is_empty() {
                // An insert intention that found the way free leaves no queue behind.
                table.remove(key);
            }
            return Ok(new);
        }
        let waiter = Arc::new(Waiter {
            trx,
            want: want.parts,
            owner: want.owner,
            state: Mutex::new(WaitState::Waiting),
            cv: Condvar::new(),
        });
        if upgrade {
            q.waiting.push_front(Arc::clone(&waiter));
        } else {
            q.waiting.push_back(Arc::clone(&waiter));
        }
        self.waits.fetch_add(1, Ordering::Relaxed);
        {
            let mut graph = self.graph.lock();
            graph.refresh(q);
            // Every cycle through this request needs a victim. If the requester is the
            // youngest in any of them, it alone gives way (that breaks them all, since they
            // all pass through it); otherwise each cycle's youngest does.
            let mut victims: Vec<(TrxId, Vec<TrxId>)> = Vec::new();
            let mut skip: Vec<TrxId> = Vec::new();
            while let Some(cycle) = graph.cycle_through(trx, &skip) {
                let victim = cycle.iter().copied().max().unwrap_or(trx);
                if victim == trx {
                    self.deadlocks.fetch_add(1, Ordering::Relaxed);
                    graph.edges.remove(&trx);
                    q.waiting.retain(|w| !Arc::ptr_eq(w, &waiter));
                    graph.refresh(q);
                    if q.is_empty() {
                        table.remove(key);
                    }
                    return Err(LockError::Deadlock {
                        trx,
                        key: key.clone(),
                        cycle,
                    });
                }
                skip.push(victim);
                victims.push((victim, cycle));
            }
            for (victim, cycle) in victims {
                self.deadlocks.fetch_add(1, Ordering::Relaxed);
                if let Some((_, w)) = graph.edges.get(&victim) {
                    w.set(WaitState::Victim(cycle));
                }
            }
            #[cfg(test)]
            graph.check("enqueue");
        }
        drop(table);
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let out = self.wait(&waiter, shard, key);
        self.waiting.fetch_sub(1, Ordering::Relaxed);
        out
    }

    /// Parks until `waiter` is granted, chosen as a victim or out of time, then cleans up.
    fn wait(&self, waiter: &Arc<Waiter>, shard: &Shard, key: &LockKey) -> Result<bool, LockError> {
        let start = Instant::now();
        let deadline = start + self.timeout;
        {
            let mut st = waiter.state.lock();
            loop {
                match *st {
                    WaitState::Granted { new } => return Ok(new),
                    WaitState::Victim(_) => break,
                    WaitState::Waiting => {}
                }
                if waiter.cv.wait_until(&mut st, deadline).timed_out() {
                    break;
                }
            }
        }
        // Out of the queue, under the shard, where grants cannot race us, and under the graph,
        // where victims are chosen (possibly from another shard).
        let mut table = shard.lock();
        let mut graph = self.graph.lock();
        let state = waiter.state.lock().clone();
        if let WaitState::Granted { new } = state {
            // Granted just as the time ran out: keep it.
            return Ok(new);
        }
        graph.edges.remove(&waiter.trx);
        let mut holders = Vec::new();
        if let Some(q) = table.get_mut(key).map(Slot::queue) {
            q.waiting.retain(|w| !Arc::ptr_eq(w, waiter));
            holders = q.holders();
            // Whoever waited behind this request may go now.
            let granted = grant_waiters(q, &mut graph);
            self.held.fetch_add(granted, Ordering::Relaxed);
            graph.refresh(q);
            #[cfg(test)]
            graph.check("cleanup");
            if q.is_empty() {
                table.remove(key);
            }
        }
        match state {
            WaitState::Victim(cycle) => Err(LockError::Deadlock {
                trx: waiter.trx,
                key: key.clone(),
                cycle,
            }),
            _ => {
                self.timeouts.fetch_add(1, Ordering::Relaxed);
                Err(LockError::Timeout {
                    trx: waiter.trx,
                    key: key.clone(),
                    waited: start.elapsed(),
                    holders,
                })
            }
        }
    }

    /// Lets go of `trx`'s lock on `key` and grants what waited for it.
    pub(super) fn release(&self, trx: TrxId, key: &LockKey) {
        let mut table = self.shard(key).lock();
        let Entry::Occupied(mut o) = table.entry(key.clone()) else {
            return;
        };
        if self.release_in(o.get_mut(), trx) {
            o.remove();
        }
    }

    /// Lets go of `trx`'s locks on `keys` (every key it locked itself) and grants what waited
    /// for them. Each key's release is a probe of its shard's table at a scattered place: a
    /// cache miss, since a long transaction's entries were made long ago. When the keys are
    /// many and at least a share of all the table holds ([`SWEEP_MIN`], [`SWEEP_SHARE`]), one
    /// pass over every shard in memory order ([`LockManager::sweep`]) is cheaper: a 550,000-
    /// key removal's commit spends most of its time on those misses otherwise.
    pub(super) fn release_keys(&self, trx: TrxId, keys: &[LockKey]) {
        let n = keys.len() as u64;
        if n >= SWEEP_MIN && n.saturating_mul(SWEEP_SHARE) >= self.held.load(Ordering::Relaxed) {
            self.sweep(trx);
            return;
        }
        for key in keys {
            self.release(trx, key);
        }
    }

    /// Lets go of every lock `trx` holds, shard by shard (each shard's latch held for one
    /// pass over its table), granting what waited. It finds the locks `trx` inherited too; the
    /// caller's release of those afterwards finds them gone, which a release allows (a key
    /// whose queue no longer lists the transaction is skipped). The latch order is the
    /// per-key release's: one shard latch, then the graph's.
    fn sweep(&self, trx: TrxId) {
        for shard in self.shards.iter() {
            shard.lock().retain(|_, q| !self.release_in(q, trx));
        }
    }

    /// Removes `trx`'s entry from `slot`, if it has one, and grants what waited for it; true
    /// if `slot` is left empty (the caller removes it).
    fn release_in(&self, slot: &mut Slot, trx: TrxId) -> bool {
        let q = match slot {
            Slot::One(h) if h.trx == trx => {
                self.count_gone(h.owner);
                return true;
            }
            Slot::One(_) => return false,
            Slot::Queue(q) => q,
        };
        let Some(h) = q.granted.remove(trx) else {
            return q.is_empty();
        };
        self.count_gone(h.owner);
        if !q.waiting.is_empty() {
            let mut graph = self.graph.lock();
            let granted = grant_waiters(q, &mut graph);
            self.held.fetch_add(granted, Ordering::Relaxed);
            graph.refresh(q);
            #[cfg(test)]
            graph.check("release");
        }
        q.is_empty()
    }

    #[cfg(test)]
    pub(super) fn dump(&self) -> String {
        let mut out = String::new();
        for sh in self.shards.iter() {
            for (k, q) in sh.lock().iter() {
                let w: Vec<_> = q
                    .waiting()
                    .map(|w| (w.trx, w.want, w.state.lock().clone()))
                    .collect();
                let g: Vec<_> = q.granted().collect();
                out += &format!("{k}: granted {g:?} waiting {w:?}\n");
            }
        }
        for (t, (e, _)) in self.graph.lock().edges.iter() {
            out += &format!("edge {t} -> {e:?}\n");
        }
        out
    }
}
