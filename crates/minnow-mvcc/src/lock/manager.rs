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
use super::queue::{Queue, WaitState, Waiter, grant_waiters};
use super::{LockError, LockMode, LockStats, TrxId};

/// Number of lock table shards (a power of two): keys spread over them by hash, so threads
/// locking different rows rarely share a mutex.
const SHARDS: usize = 64;

/// One shard of the lock table.
type Shard = Mutex<HashMap<LockKey, Queue, Fold>>;

/// What an attempt to lock without waiting found.
enum Attempt {
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
    graph: Mutex<Graph>,
    timeout: Duration,
    waits: AtomicU64,
    deadlocks: AtomicU64,
    timeouts: AtomicU64,
    waiting: AtomicU64,
    held: AtomicU64,
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
        })
    }

    /// The locks of transaction `trx`, empty: lock through them, release them at commit or
    /// rollback (dropping them releases too).
    pub fn begin(self: &Arc<Self>, trx: TrxId) -> TrxLocks {
        TrxLocks {
            mgr: Arc::clone(self),
            trx,
            held: Vec::new(),
        }
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

    /// The mode in which `trx` holds `key`, if it does.
    pub fn held(&self, trx: TrxId, key: &LockKey) -> Option<LockMode> {
        self.shard(key).lock().get(key).and_then(|q| q.held_by(trx))
    }

    // The index is reduced modulo the array's length, so it cannot be out of bounds.
    #[allow(clippy::indexing_slicing)]
    fn shard(&self, key: &LockKey) -> &Shard {
        // Middle bits: the multiply in `write_u64` mixes upward, and the hash map inside the
        // shard uses the lowest bits (bucket) and the top seven (tag); take neither.
        &self.shards[(key.hash >> 40) as usize % SHARDS]
    }

    /// Grants without waiting if nothing is in the way.
    fn attempt(&self, trx: TrxId, key: &LockKey, mode: LockMode) -> Attempt {
        let mut table = self.shard(key).lock();
        // One probe of the table whether the key is there or not.
        let q = match table.entry(key.clone()) {
            Entry::Vacant(v) => {
                v.insert(Queue::default()).granted.grant(trx, mode);
                return Attempt::New;
            }
            Entry::Occupied(o) => o.into_mut(),
        };
        {
            match q.held_by(trx) {
                Some(m) if m.covers(mode) => return Attempt::Held,
                Some(_) => {
                    // An upgrade waits only for the other holders.
                    if !q.others_allow(trx, mode) {
                        return Attempt::Busy;
                    }
                    q.granted.grant(trx, mode);
                    if !q.waiting.is_empty() {
                        // A stronger holder may block waiters it did not block before.
                        let mut graph = self.graph.lock();
                        graph.refresh(q);
                        #[cfg(test)]
                        graph.check("upgrade");
                    }
                    return Attempt::Held;
                }
                None => {
                    if !q.waiting.is_empty() || !q.others_allow(trx, mode) {
                        return Attempt::Busy;
                    }
                    q.granted.grant(trx, mode);
                }
            }
        }
        Attempt::New
    }

    /// Queues `trx`'s request and parks until it is granted (`Ok(true)` if the key is newly
    /// held, `Ok(false)` for an upgrade), chosen as a deadlock victim, or out of time.
    fn enqueue_and_wait(
        &self,
        trx: TrxId,
        key: &LockKey,
        mode: LockMode,
    ) -> Result<bool, LockError> {
        let shard = self.shard(key);
        let mut table = shard.lock();
        // The queue may have changed since the attempt let go of the shard: try again under it.
        let q = table.entry(key.clone()).or_default();
        let upgrade = q.held_by(trx).is_some();
        let free = q.others_allow(trx, mode) && (upgrade || q.waiting.is_empty());
        if free {
            let new = q.granted.grant(trx, mode);
            if !q.waiting.is_empty() {
                let mut graph = self.graph.lock();
                graph.refresh(q);
                #[cfg(test)]
                graph.check("regrant");
            }
            return Ok(new);
        }
        let waiter = Arc::new(Waiter {
            trx,
            mode,
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
        out.map(|()| !upgrade)
    }

    /// Parks until `waiter` is granted, chosen as a victim or out of time, then cleans up.
    fn wait(&self, waiter: &Arc<Waiter>, shard: &Shard, key: &LockKey) -> Result<(), LockError> {
        let start = Instant::now();
        let deadline = start + self.timeout;
        {
            let mut st = waiter.state.lock();
            loop {
                match *st {
                    WaitState::Granted => return Ok(()),
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
        if state == WaitState::Granted {
            // Granted just as the time ran out: keep it.
            return Ok(());
        }
        graph.edges.remove(&waiter.trx);
        let mut holders = Vec::new();
        if let Some(q) = table.get_mut(key) {
            q.waiting.retain(|w| !Arc::ptr_eq(w, waiter));
            holders = q.holders();
            // Whoever waited behind this request may go now.
            grant_waiters(q, &mut graph);
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
    fn release(&self, trx: TrxId, key: &LockKey) {
        let mut table = self.shard(key).lock();
        let Entry::Occupied(mut o) = table.entry(key.clone()) else {
            return;
        };
        let q = o.get_mut();
        q.granted.remove(trx);
        if !q.waiting.is_empty() {
            let mut graph = self.graph.lock();
            grant_waiters(q, &mut graph);
            graph.refresh(q);
            #[cfg(test)]
            graph.check("release");
        }
        if q.is_empty() {
            o.remove();
        }
    }

    #[cfg(test)]
    pub(super) fn dump(&self) -> String {
        let mut out = String::new();
        for sh in self.shards.iter() {
            for (k, q) in sh.lock().iter() {
                let w: Vec<_> = q
                    .waiting
                    .iter()
                    .map(|w| (w.trx, w.mode, w.state.lock().clone()))
                    .collect();
                let g: Vec<_> = q.granted.iter().collect();
                out += &format!("{k}: granted {g:?} waiting {w:?}\n");
            }
        }
        for (t, (e, _)) in self.graph.lock().edges.iter() {
            out += &format!("edge {t} -> {e:?}\n");
        }
        out
    }
}

/// One transaction's locks: how it asks for them and where it keeps them until it ends.
///
/// A transaction is used by one thread at a time, so its list needs no latch; the list is what
/// [`TrxLocks::release_all`] walks at commit or rollback. Dropping it releases everything too,
/// so a transaction abandoned by a panic or an early return cannot leave rows locked.
pub struct TrxLocks {
    mgr: Arc<LockManager>,
    trx: TrxId,
    held: Vec<LockKey>,
}

impl fmt::Debug for TrxLocks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TrxLocks")
            .field("trx", &self.trx)
            .field("held", &self.held.len())
            .finish()
    }
}

impl TrxLocks {
    /// The transaction these locks belong to.
    pub fn trx(&self) -> TrxId {
        self.trx
    }

    /// Number of keys held.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// True if no key is held.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    fn note(&mut self, key: LockKey) {
        self.held.push(key);
        self.mgr.held.fetch_add(1, Ordering::Relaxed);
    }

    /// Takes `key` in `mode` if that needs no wait: `true` if granted (or already held at least
    /// that strongly), `false` if someone is in the way (then nothing is queued).
    pub fn try_lock(&mut self, key: &LockKey, mode: LockMode) -> bool {
        match self.mgr.attempt(self.trx, key, mode) {
            Attempt::New => {
                self.note(key.clone());
                true
            }
            Attempt::Held => true,
            Attempt::Busy => false,
        }
    }

    /// Takes `key` in `mode`, waiting up to the lock wait timeout while another transaction
    /// holds it incompatibly. Errors: [`LockError::Deadlock`] if waiting would close a cycle
    /// and this transaction is chosen as the victim (at once, or later while it waits): roll
    /// it back; and [`LockError::Timeout`]. After either, it holds what it held before.
    pub fn lock(&mut self, key: LockKey, mode: LockMode) -> Result<(), LockError> {
        match self.mgr.attempt(self.trx, &key, mode) {
            Attempt::New => self.note(key),
            Attempt::Held => {}
            Attempt::Busy => {
                if self.mgr.enqueue_and_wait(self.trx, &key, mode)? {
                    self.note(key);
                }
            }
        }
        Ok(())
    }

    /// Releases every lock (at commit or rollback) and grants what waited for them.
    pub fn release_all(&mut self) {
        let n = self.held.len() as u64;
        for key in self.held.drain(..) {
            self.mgr.release(self.trx, &key);
        }
        self.mgr.held.fetch_sub(n, Ordering::Relaxed);
    }
}

impl Drop for TrxLocks {
    fn drop(&mut self) {
        self.release_all();
    }
}
