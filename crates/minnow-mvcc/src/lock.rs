//! Row locks: which writer may change a record now, who waits, and who gives way.
//!
//! MVCC lets a reader go without locks: it reads the version its read view sees, rebuilt from
//! undo if a writer has moved on. Two *writers* of one row cannot both go ahead, though: the
//! second would overwrite a change the first may still roll back (a "dirty write"), or base its
//! new value on one that is about to change (a "lost update"). So every writer takes a lock on
//! each record it changes and keeps it until its transaction ends (strict two-phase locking).
//!
//! ## What is locked
//!
//! A lock names a [`LockKey`]: an index id and the key's encoded bytes (the primary key for a
//! clustered record, the unique columns for a unique secondary entry). The record need not
//! exist: an insert locks the key it is about to create, so a second transaction inserting the
//! same key waits and then sees the first one's outcome. Locks live in a hash table in memory
//! only; after a crash no transaction is left to hold them (recovery rolls back every
//! transaction that had not committed).
//!
//! ## Modes and queues
//!
//! ```text
//!              held S   held X          one queue per key:
//!   want S       ok      wait             granted: [T5 X]
//!   want X      wait     wait             waiting: T9 X -> T7 S -> T8 S   (first come, first served)
//! ```
//!
//! A transaction that already holds a lock at least as strong gets it again at once. A request
//! is granted at once only if it is compatible with every other holder *and* nobody waits
//! ahead of it, so a stream of shared requests cannot starve an exclusive one. An upgrade (S
//! held, X wanted) waits only for the other holders and goes to the front of the queue. When
//! a holder releases, waiters at the front are granted for as long as they are compatible.
//!
//! ## Deadlocks
//!
//! A waiting transaction waits *for* the transactions that block it: the incompatible holders
//! and the incompatible waiters ahead of it. These edges form the wait-for graph, kept exact
//! as queues change. A transaction waits for one lock at a time, so a cycle can only close when
//! someone starts waiting; that is when the graph is searched. If the new edges close a cycle,
//! the **youngest** transaction in it (the largest id, the one likely to have done the least
//! work) is the victim: if that is the requester, its request fails at once with
//! [`LockError::Deadlock`]; otherwise the victim's wait ends with that error. The victim's
//! caller must roll its transaction back, which releases its locks and lets the others go.
//! (InnoDB weighs transactions by the rows they changed and locked; the youngest is a simpler
//! stand-in with the same intent.)
//!
//! ## Timeouts
//!
//! A wait longer than the lock wait timeout (InnoDB's `innodb_lock_wait_timeout`) ends with
//! [`LockError::Timeout`], naming the key and the transactions that held it.
//!
//! ## What is not here
//!
//! No gap or next-key locks: a locking read of a range does not stop another transaction from
//! inserting into it (phantoms are possible for writers; snapshot reads never see them). No
//! table or intention locks: DDL is serialised by the database separately.
//!
//! ## Latch order
//!
//! One shard of the lock table, then the wait-for graph, then a waiter's state; the per-
//! transaction lists are taken last and alone. No path takes them in another order.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// A transaction id, as the lock manager sees it.
pub type TrxId = u64;

/// Number of lock table shards (a power of two): keys spread over them by hash, so threads
/// locking different rows rarely share a mutex.
const SHARDS: usize = 64;

/// How strong a lock is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LockMode {
    /// Shared: others may hold shared locks on the key too.
    Shared,
    /// Exclusive: nobody else holds any lock on the key.
    Exclusive,
}

impl LockMode {
    /// True if two transactions may hold `self` and `other` on one key at once.
    pub fn compatible(self, other: LockMode) -> bool {
        self == LockMode::Shared && other == LockMode::Shared
    }

    /// True if holding `self` makes a request for `want` unnecessary.
    fn covers(self, want: LockMode) -> bool {
        self == LockMode::Exclusive || want == LockMode::Shared
    }
}

/// Keys up to this many bytes are kept inline in a [`LockKey`] (no allocation): primary keys of
/// integers, dates and short strings all fit.
const INLINE_KEY: usize = 30;

/// The bytes of a lock key: inline when short, on the heap when long.
#[derive(Clone)]
enum KeyBytes {
    Inline { len: u8, buf: [u8; INLINE_KEY] },
    Heap(Box<[u8]>),
}

impl KeyBytes {
    fn as_slice(&self) -> &[u8] {
        match self {
            KeyBytes::Inline { len, buf } => buf.get(..usize::from(*len)).unwrap_or(buf),
            KeyBytes::Heap(b) => b,
        }
    }
}

/// What a lock names: an index and a key in it (encoded bytes, as the index compares them).
/// Keys of up to 30 bytes are stored inline, so making, copying and dropping one allocates
/// nothing.
#[derive(Clone)]
pub struct LockKey {
    index: u64,
    /// The key's hash, computed once: the table is probed with it twice per lock.
    hash: u64,
    bytes: KeyBytes,
}

impl LockKey {
    /// The key `key` of index `index`.
    pub fn new(index: u64, key: &[u8]) -> LockKey {
        let bytes = match u8::try_from(key.len()) {
            Ok(len) if key.len() <= INLINE_KEY => {
                let mut buf = [0u8; INLINE_KEY];
                buf.iter_mut().zip(key).for_each(|(d, s)| *d = *s);
                KeyBytes::Inline { len, buf }
            }
            _ => KeyBytes::Heap(key.into()),
        };
        let mut h = FoldHasher::default();
        h.write_u64(index);
        h.write(key);
        LockKey {
            index,
            hash: h.finish(),
            bytes,
        }
    }

    /// The index id.
    pub fn index(&self) -> u64 {
        self.index
    }

    /// The key's encoded bytes.
    pub fn key(&self) -> &[u8] {
        self.bytes.as_slice()
    }
}

impl PartialEq for LockKey {
    fn eq(&self, other: &LockKey) -> bool {
        self.hash == other.hash && self.index == other.index && self.key() == other.key()
    }
}

impl Eq for LockKey {}

impl Hash for LockKey {
    fn hash<H: Hasher>(&self, h: &mut H) {
        h.write_u64(self.hash);
    }
}

impl fmt::Debug for LockKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LockKey({self})")
    }
}

impl fmt::Display for LockKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "index {} key 0x", self.index)?;
        for b in self.key() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// Why a lock was not granted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LockError {
    /// Waiting would close a cycle of waits and this transaction was chosen to give way. Roll
    /// the transaction back (that releases its locks) and retry it if you like.
    #[error(
        "deadlock: transaction {trx} was chosen as the victim while waiting for {key} (cycle {cycle:?})"
    )]
    Deadlock {
        /// The victim (the caller's transaction).
        trx: TrxId,
        /// The key it wanted.
        key: LockKey,
        /// The transactions in the cycle, starting with the one that closed it.
        cycle: Vec<TrxId>,
    },
    /// The wait lasted longer than the lock wait timeout.
    #[error(
        "lock wait timeout: transaction {trx} waited {waited:?} for {key}, held by {holders:?}"
    )]
    Timeout {
        /// The caller's transaction.
        trx: TrxId,
        /// The key it wanted.
        key: LockKey,
        /// How long it waited.
        waited: Duration,
        /// The transactions holding the key when the wait ended.
        holders: Vec<TrxId>,
    },
}

/// Counters of a [`LockManager`], cheap to read at any time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LockStats {
    /// Requests that had to wait.
    pub waits: u64,
    /// Deadlocks found (each makes one victim).
    pub deadlocks: u64,
    /// Waits that ended in a timeout.
    pub timeouts: u64,
    /// Transactions waiting now.
    pub waiting: u64,
    /// Locks held now by transactions (one per transaction and key; a background task's,
    /// see [`LockManager::begin_background`], are not counted).
    pub held: u64,
}

/// A fast hasher for lock keys (FxHash's multiply-rotate): the keys are short and not chosen
/// by an attacker who could see the hash, so SipHash's protection buys nothing here.
#[derive(Default, Clone, Copy)]
struct FoldHasher(u64);

impl Hasher for FoldHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(w));
        }
        for &b in chunks.remainder() {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
}

type Fold = BuildHasherDefault<FoldHasher>;

/// Where a waiting request stands.
#[derive(Debug, Clone, PartialEq, Eq)]
enum WaitState {
    Waiting,
    Granted,
    /// Chosen as a deadlock victim; the cycle it closed.
    Victim(Vec<TrxId>),
}

/// One waiting request: its owner parks on `cv` until `state` leaves `Waiting`.
#[derive(Debug)]
struct Waiter {
    trx: TrxId,
    mode: LockMode,
    state: Mutex<WaitState>,
    cv: Condvar,
}

impl Waiter {
    fn set(&self, s: WaitState) {
        *self.state.lock() = s;
        self.cv.notify_one();
    }

    fn is_victim(&self) -> bool {
        matches!(*self.state.lock(), WaitState::Victim(_))
    }
}

/// Who holds one key: one entry per transaction (its strongest mode). Nearly every key has one
/// holder, kept inline so that an uncontended lock allocates nothing here.
#[derive(Debug, Default)]
struct Holders {
    first: Option<(TrxId, LockMode)>,
    rest: Vec<(TrxId, LockMode)>,
}

impl Holders {
    fn iter(&self) -> impl Iterator<Item = &(TrxId, LockMode)> {
        self.first.iter().chain(self.rest.iter())
    }

    fn is_empty(&self) -> bool {
        self.first.is_none() && self.rest.is_empty()
    }

    /// Adds `trx` in `mode`, or strengthens its entry; true if it held nothing before.
    fn grant(&mut self, trx: TrxId, mode: LockMode) -> bool {
        let mut slots = self.first.iter_mut().chain(self.rest.iter_mut());
        if let Some(g) = slots.find(|g| g.0 == trx) {
            if mode == LockMode::Exclusive {
                g.1 = mode;
            }
            return false;
        }
        match self.first {
            None => self.first = Some((trx, mode)),
            Some(_) => self.rest.push((trx, mode)),
        }
        true
    }

    fn remove(&mut self, trx: TrxId) {
        if self.first.is_some_and(|g| g.0 == trx) {
            self.first = self.rest.pop();
        } else {
            self.rest.retain(|g| g.0 != trx);
        }
    }
}

/// The locks on one key: who holds them and who waits, in arrival order.
#[derive(Debug, Default)]
struct Queue {
    granted: Holders,
    waiting: VecDeque<Arc<Waiter>>,
}

impl Queue {
    fn held_by(&self, trx: TrxId) -> Option<LockMode> {
        self.granted.iter().find(|g| g.0 == trx).map(|g| g.1)
    }

    /// True if every other holder allows `mode`.
    fn others_allow(&self, trx: TrxId, mode: LockMode) -> bool {
        self.granted
            .iter()
            .all(|&(t, m)| t == trx || m.compatible(mode))
    }

    /// The transactions the waiter at `pos` waits for.
    fn blockers(&self, pos: usize) -> Vec<TrxId> {
        let Some(w) = self.waiting.get(pos) else {
            return Vec::new();
        };
        let mut out: Vec<TrxId> = self
            .granted
            .iter()
            .filter(|&&(t, m)| t != w.trx && !m.compatible(w.mode))
            .map(|g| g.0)
            .collect();
        for ahead in self.waiting.iter().take(pos) {
            if ahead.trx != w.trx && !ahead.mode.compatible(w.mode) && !out.contains(&ahead.trx) {
                out.push(ahead.trx);
            }
        }
        out
    }

    fn holders(&self) -> Vec<TrxId> {
        self.granted.iter().map(|g| g.0).collect()
    }

    fn is_empty(&self) -> bool {
        self.granted.is_empty() && self.waiting.is_empty()
    }
}

/// The wait-for graph: each waiting transaction, what it waits for, and its waiter.
#[derive(Debug, Default)]
struct Graph {
    edges: HashMap<TrxId, (Vec<TrxId>, Arc<Waiter>), Fold>,
}

impl Graph {
    /// Brings the edges of every waiter in `q` up to date.
    fn refresh(&mut self, q: &Queue) {
        for (pos, w) in q.waiting.iter().enumerate() {
            self.edges.insert(w.trx, (q.blockers(pos), Arc::clone(w)));
        }
    }

    #[cfg(test)]
    fn check(&self, at: &str) {
        for (&t, (_, w)) in self.edges.iter() {
            if w.is_victim() {
                continue;
            }
            if let Some(c) = self.cycle_through(t, &[]) {
                panic!(
                    "cycle {c:?} after {at}: {:?}",
                    self.edges
                        .iter()
                        .map(|(t, (e, w))| (*t, e.clone(), w.state.lock().clone()))
                        .collect::<Vec<_>>()
                );
            }
        }
    }

    /// A cycle through `start`, if its edges close one: the transactions on it, `start` first.
    /// Transactions in `skip` count as already leaving, as chosen victims do.
    fn cycle_through(&self, start: TrxId, skip: &[TrxId]) -> Option<Vec<TrxId>> {
        // Depth-first search from `start`'s blockers, remembering how each node was reached.
        let mut parent: HashMap<TrxId, TrxId, Fold> = HashMap::default();
        let mut seen: HashSet<TrxId, Fold> = HashSet::default();
        let mut stack = vec![start];
        while let Some(t) = stack.pop() {
            let Some((next, w)) = self.edges.get(&t) else {
                continue;
            };
            // A victim already chosen is about to give way: its edges do not hold anyone.
            if t != start && (skip.contains(&t) || w.is_victim()) {
                continue;
            }
            for &n in next {
                if n == start {
                    let mut cycle = vec![t];
                    let mut at = t;
                    while at != start {
                        match parent.get(&at) {
                            Some(&p) => {
                                cycle.push(p);
                                at = p;
                            }
                            None => break,
                        }
                    }
                    cycle.reverse();
                    return Some(cycle);
                }
                if seen.insert(n) {
                    parent.insert(n, t);
                    stack.push(n);
                }
            }
        }
        None
    }
}

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
            counted: true,
        }
    }

    /// The locks of a background task that is not a transaction (the `minnow` crate's purge,
    /// which holds one row's lock at a time while it removes what that row no longer needs),
    /// named `trx` in the queues. They conflict, queue and wait exactly as a transaction's,
    /// but are not counted in [`LockStats::held`], which counts the locks of transactions.
    pub fn begin_background(self: &Arc<Self>, trx: TrxId) -> TrxLocks {
        TrxLocks {
            mgr: Arc::clone(self),
            trx,
            held: Vec::new(),
            counted: false,
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
    fn dump(&self) -> String {
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

/// Grants the waiters at the front of `q` for as long as they fit. The waiter notes the key in
/// its own [`TrxLocks`] when it wakes, before it can release anything.
fn grant_waiters(q: &mut Queue, graph: &mut Graph) {
    while let Some(w) = q.waiting.front() {
        if w.is_victim() {
            // Leaving anyway; it removes itself from the graph.
            q.waiting.pop_front();
            continue;
        }
        if !q.others_allow(w.trx, w.mode) {
            break;
        }
        let Some(w) = q.waiting.pop_front() else {
            break;
        };
        q.granted.grant(w.trx, w.mode);
        graph.edges.remove(&w.trx);
        w.set(WaitState::Granted);
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
    /// False for a background task's locks: not in [`LockStats::held`].
    counted: bool,
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
        if self.counted {
            self.mgr.held.fetch_add(1, Ordering::Relaxed);
        }
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
        if self.counted {
            self.mgr.held.fetch_sub(n, Ordering::Relaxed);
        }
    }
}

impl Drop for TrxLocks {
    fn drop(&mut self) {
        self.release_all();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicI64;
    use std::sync::{Barrier, mpsc};
    use std::thread;

    use super::*;

    fn k(i: u64) -> LockKey {
        LockKey::new(1, &i.to_be_bytes())
    }

    const LONG: Duration = Duration::from_secs(20);
    const SHORT: Duration = Duration::from_millis(30);

    fn wait_for_waiters(m: &LockManager, n: u64) {
        while m.stats().waiting < n {
            thread::yield_now();
        }
    }

    #[test]
    fn shared_locks_share_and_exclusive_excludes() {
        let m = LockManager::new(SHORT);
        let (mut t1, mut t2, mut t3) = (m.begin(1), m.begin(2), m.begin(3));
        assert!(t1.try_lock(&k(1), LockMode::Shared));
        assert!(t2.try_lock(&k(1), LockMode::Shared));
        assert!(!t3.try_lock(&k(1), LockMode::Exclusive));
        assert!(t3.try_lock(&k(2), LockMode::Exclusive));
        assert!(!t1.try_lock(&k(2), LockMode::Shared));
        assert_eq!(m.held(1, &k(1)), Some(LockMode::Shared));
        assert_eq!(m.held(3, &k(2)), Some(LockMode::Exclusive));
        assert_eq!((m.stats().held, t1.len(), t3.len()), (3, 1, 1));
        t1.release_all();
        t2.release_all();
        drop(t3); // dropping releases too
        assert_eq!(m.stats().held, 0);
        assert!(t1.is_empty());
        let mut t4 = m.begin(4);
        assert!(t4.try_lock(&k(1), LockMode::Exclusive));
        assert!(t4.try_lock(&k(2), LockMode::Exclusive));
    }

    #[test]
    fn a_background_task_conflicts_as_a_transaction_but_is_not_counted() {
        let m = LockManager::new(SHORT);
        let (mut purge, mut t1) = (m.begin_background(u64::MAX), m.begin(1));
        assert!(purge.try_lock(&k(1), LockMode::Exclusive));
        assert_eq!(
            m.stats().held,
            0,
            "a background lock is not a transaction's"
        );
        assert!(
            !t1.try_lock(&k(1), LockMode::Exclusive),
            "but it excludes one"
        );
        purge.release_all();
        assert!(t1.try_lock(&k(1), LockMode::Exclusive));
        assert_eq!(m.stats().held, 1);
        assert!(matches!(
            purge.lock(k(1), LockMode::Exclusive),
            Err(LockError::Timeout { .. })
        ));
        t1.release_all();
        assert_eq!(m.stats().held, 0);
    }

    #[test]
    fn a_holder_gets_its_lock_again_and_upgrades_when_alone() {
        let m = LockManager::new(SHORT);
        let mut t1 = m.begin(1);
        assert!(t1.try_lock(&k(1), LockMode::Exclusive));
        t1.lock(k(1), LockMode::Shared).unwrap();
        assert_eq!(m.held(1, &k(1)), Some(LockMode::Exclusive));
        let mut t2 = m.begin(2);
        assert!(t2.try_lock(&k(2), LockMode::Shared));
        assert!(t2.try_lock(&k(2), LockMode::Exclusive));
        assert_eq!(m.held(2, &k(2)), Some(LockMode::Exclusive));
        // Held once per key, however often asked.
        assert_eq!((m.stats().held, t1.len(), t2.len()), (2, 1, 1));
        // An upgrade waits for the other holders only.
        let (mut t3, mut t4) = (m.begin(3), m.begin(4));
        assert!(t3.try_lock(&k(3), LockMode::Shared));
        assert!(t4.try_lock(&k(3), LockMode::Shared));
        assert!(!t3.try_lock(&k(3), LockMode::Exclusive));
        t4.release_all();
        assert!(t3.try_lock(&k(3), LockMode::Exclusive));
        assert_eq!(t3.len(), 1);
    }

    #[test]
    fn a_wait_times_out_with_the_holders_named() {
        let m = LockManager::new(SHORT);
        let (mut t1, mut t2) = (m.begin(1), m.begin(2));
        t1.lock(k(9), LockMode::Exclusive).unwrap();
        let err = t2.lock(k(9), LockMode::Shared).unwrap_err();
        match err {
            LockError::Timeout {
                trx,
                key,
                holders,
                waited,
            } => {
                assert_eq!((trx, key, holders), (2, k(9), vec![1]));
                assert!(waited >= SHORT);
            }
            e => panic!("expected a timeout, got {e}"),
        }
        assert_eq!((m.stats().timeouts, m.stats().waiting), (1, 0));
        // The timed-out request left nothing behind.
        assert_eq!((m.held(2, &k(9)), t2.len()), (None, 0));
        t1.release_all();
        assert!(m.begin(3).try_lock(&k(9), LockMode::Exclusive));
    }

    #[test]
    fn release_grants_the_waiter() {
        let m = LockManager::new(LONG);
        let mut t1 = m.begin(1);
        t1.lock(k(5), LockMode::Exclusive).unwrap();
        let (tx, rx) = mpsc::channel();
        let mut t2 = m.begin(2);
        let h = thread::spawn(move || {
            let r = t2.lock(k(5), LockMode::Exclusive);
            tx.send(()).unwrap();
            r.map(|()| t2)
        });
        wait_for_waiters(&m, 1);
        assert!(rx.try_recv().is_err(), "granted while 1 still held the key");
        t1.release_all();
        let t2 = h.join().unwrap().unwrap();
        assert_eq!(m.held(2, &k(5)), Some(LockMode::Exclusive));
        assert_eq!((t2.len(), m.stats().waits, m.stats().held), (1, 1, 1));
        drop(t2);
        assert_eq!(m.stats().held, 0);
    }

    #[test]
    fn shared_requests_queue_behind_a_waiting_exclusive_one() {
        let m = LockManager::new(LONG);
        let mut t1 = m.begin(1);
        assert!(t1.try_lock(&k(1), LockMode::Shared));
        let mut t2 = m.begin(2);
        let h = thread::spawn(move || t2.lock(k(1), LockMode::Exclusive).map(|()| t2));
        wait_for_waiters(&m, 1);
        // Compatible with the holder, but 2 waits ahead: no starving it.
        let mut t3 = m.begin(3);
        assert!(!t3.try_lock(&k(1), LockMode::Shared));
        t1.release_all();
        let mut t2 = h.join().unwrap().unwrap();
        assert!(!t3.try_lock(&k(1), LockMode::Shared));
        t2.release_all();
        assert!(t3.try_lock(&k(1), LockMode::Shared));
    }

    #[test]
    fn two_way_deadlock_makes_the_younger_the_victim() {
        let m = LockManager::new(LONG);
        let (mut t1, mut t2) = (m.begin(1), m.begin(2));
        t1.lock(k(1), LockMode::Exclusive).unwrap();
        t2.lock(k(2), LockMode::Exclusive).unwrap();
        // The older transaction waits first; the younger one closes the cycle and gives way.
        let older = thread::spawn(move || t1.lock(k(2), LockMode::Exclusive).map(|()| t1));
        wait_for_waiters(&m, 1);
        let err = t2.lock(k(1), LockMode::Exclusive).unwrap_err();
        assert!(
            matches!(&err, LockError::Deadlock { trx: 2, cycle, .. } if cycle.len() == 2),
            "{err}"
        );
        t2.release_all();
        let t1 = older.join().unwrap().unwrap();
        assert_eq!(m.held(1, &k(2)), Some(LockMode::Exclusive));
        assert_eq!((t1.len(), m.stats().deadlocks), (2, 1));
    }

    #[test]
    fn a_waiting_victim_is_woken_with_the_deadlock() {
        let m = LockManager::new(LONG);
        let (mut t1, mut t2) = (m.begin(1), m.begin(2));
        t1.lock(k(1), LockMode::Exclusive).unwrap();
        t2.lock(k(2), LockMode::Exclusive).unwrap();
        // The younger waits first; the older closes the cycle, so the waiting one is the victim.
        let younger = thread::spawn(move || {
            let r = t2.lock(k(1), LockMode::Exclusive);
            drop(t2); // the rollback
            r
        });
        wait_for_waiters(&m, 1);
        t1.lock(k(2), LockMode::Exclusive).unwrap();
        let err = younger.join().unwrap().unwrap_err();
        assert!(matches!(err, LockError::Deadlock { trx: 2, .. }), "{err}");
        assert_eq!(m.stats().waiting, 0);
    }

    #[test]
    fn three_way_deadlock_is_found() {
        let m = LockManager::new(LONG);
        let mut ts: Vec<TrxLocks> = (1..=3).map(|t| m.begin(t)).collect();
        for (i, t) in ts.iter_mut().enumerate() {
            t.lock(k(i as u64 + 1), LockMode::Exclusive).unwrap();
        }
        let mut t3 = ts.pop().unwrap();
        let mut hs = Vec::new();
        for (i, mut t) in ts.into_iter().enumerate() {
            let next = k(i as u64 + 2);
            hs.push(thread::spawn(move || t.lock(next, LockMode::Exclusive)));
            wait_for_waiters(&m, i as u64 + 1);
        }
        match t3.lock(k(1), LockMode::Exclusive).unwrap_err() {
            LockError::Deadlock { trx, cycle, .. } => {
                assert_eq!(trx, 3);
                let mut c = cycle.clone();
                c.sort_unstable();
                assert_eq!(c, [1, 2, 3]);
            }
            e => panic!("{e}"),
        }
        t3.release_all();
        for h in hs {
            h.join().unwrap().unwrap();
        }
    }

    #[test]
    fn shared_waiters_are_granted_together() {
        let m = LockManager::new(LONG);
        let mut t1 = m.begin(1);
        t1.lock(k(1), LockMode::Exclusive).unwrap();
        let go = Arc::new(Barrier::new(3));
        let hs: Vec<_> = (2..=3u64)
            .map(|t| {
                let mut t = m.begin(t);
                let go = Arc::clone(&go);
                thread::spawn(move || {
                    t.lock(k(1), LockMode::Shared).unwrap();
                    go.wait();
                })
            })
            .collect();
        wait_for_waiters(&m, 2);
        t1.release_all();
        // Both hold the shared lock at once, or the barrier would never open.
        go.wait();
        for h in hs {
            h.join().unwrap();
        }
    }

    /// Transactions lock three random keys in random modes (upgrades included) in random
    /// order; deadlocks happen and their victims roll back. Whatever the interleaving, an
    /// exclusive holder is alone, no cycle of waits survives (checked inside the manager after
    /// every change, in test builds) and every transaction ends.
    #[test]
    fn random_transactions_keep_exclusive_holders_alone() {
        const KEYS: u64 = 5;
        let m = LockManager::new(LONG);
        let writers: Arc<Vec<AtomicI64>> = Arc::new((0..KEYS).map(|_| AtomicI64::new(0)).collect());
        let readers: Arc<Vec<AtomicI64>> = Arc::new((0..KEYS).map(|_| AtomicI64::new(0)).collect());
        let next_trx = Arc::new(AtomicU64::new(1));
        let hs: Vec<_> = (0..4u64)
            .map(|seed| {
                let (m, writers, readers, next_trx) = (
                    Arc::clone(&m),
                    Arc::clone(&writers),
                    Arc::clone(&readers),
                    Arc::clone(&next_trx),
                );
                thread::spawn(move || {
                    let mut x = seed * 104_729 + 17;
                    let mut rnd = move || {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x
                    };
                    let mut deadlocks = 0;
                    for _ in 0..300 {
                        let mut t = m.begin(next_trx.fetch_add(1, Ordering::Relaxed));
                        let mut keys: Vec<usize> = Vec::new();
                        let mut ok = true;
                        for _ in 0..3 {
                            let key = (rnd() % KEYS) as usize;
                            let mode = if rnd() % 3 == 0 {
                                LockMode::Exclusive
                            } else {
                                LockMode::Shared
                            };
                            match t.lock(k(key as u64), mode) {
                                Ok(()) => keys.push(key),
                                Err(LockError::Deadlock { .. }) => {
                                    deadlocks += 1;
                                    ok = false;
                                    break;
                                }
                                Err(e) => panic!("{e}\n{}", m.dump()),
                            }
                            thread::yield_now();
                        }
                        if ok {
                            keys.sort_unstable();
                            keys.dedup();
                            assert_eq!(t.len(), keys.len());
                            let modes: Vec<LockMode> = keys
                                .iter()
                                .map(|&key| m.held(t.trx(), &k(key as u64)).unwrap())
                                .collect();
                            for (&key, &mode) in keys.iter().zip(&modes) {
                                if mode == LockMode::Exclusive {
                                    assert_eq!(writers[key].fetch_add(1, Ordering::SeqCst), 0);
                                    assert_eq!(readers[key].load(Ordering::SeqCst), 0);
                                } else {
                                    readers[key].fetch_add(1, Ordering::SeqCst);
                                    assert_eq!(writers[key].load(Ordering::SeqCst), 0);
                                }
                            }
                            thread::yield_now();
                            for (&key, &mode) in keys.iter().zip(&modes) {
                                if mode == LockMode::Exclusive {
                                    writers[key].fetch_sub(1, Ordering::SeqCst);
                                } else {
                                    readers[key].fetch_sub(1, Ordering::SeqCst);
                                }
                            }
                        }
                        t.release_all();
                    }
                    deadlocks
                })
            })
            .collect();
        let deadlocks: u64 = hs.into_iter().map(|h| h.join().unwrap()).sum();
        let s = m.stats();
        assert_eq!((s.held, s.waiting, s.timeouts), (0, 0, 0));
        // Each victim was counted once.
        assert!(s.deadlocks >= deadlocks);
    }

    #[test]
    fn long_keys_live_on_the_heap_and_compare_by_bytes() {
        let long: Vec<u8> = (0..100u8).collect();
        let (a, b) = (LockKey::new(1, &long), LockKey::new(1, &long));
        assert_eq!((a.key(), a.index()), (&long[..], 1));
        assert_eq!(a, b);
        assert_ne!(a, LockKey::new(2, &long));
        assert_ne!(a, LockKey::new(1, &long[..30]));
        assert_eq!(LockKey::new(1, &long[..30]).key(), &long[..30]);
        let m = LockManager::new(SHORT);
        let (mut t1, mut t2) = (m.begin(1), m.begin(2));
        assert!(t1.try_lock(&a, LockMode::Exclusive));
        assert!(!t2.try_lock(&b, LockMode::Shared));
        assert!(t2.try_lock(&LockKey::new(1, &long[..99]), LockMode::Exclusive));
    }

    #[test]
    fn keys_print_as_index_and_hex() {
        assert_eq!(
            LockKey::new(3, &[0, 0xab]).to_string(),
            "index 3 key 0x00ab"
        );
    }
}
