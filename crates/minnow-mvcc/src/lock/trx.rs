//! One transaction's locks: how it asks for them, and the list it releases when it ends.

use std::fmt;
use std::sync::Arc;

use super::manager::{Attempt, LockManager};
use super::mode::{Holding, Owner, Parts};
use super::{LockError, LockKey, LockMode, LockType, TrxId};

/// One transaction's locks: how it asks for them and where it keeps them until it ends.
///
/// A transaction is used by one thread at a time, so its list needs no latch; the list is what
/// [`TrxLocks::release_all`] walks at commit or rollback. Dropping it releases everything too,
/// so a transaction abandoned by a panic or an early return cannot leave rows locked.
pub struct TrxLocks {
    mgr: Arc<LockManager>,
    trx: TrxId,
    /// Who locks: READ COMMITTED takes no gap locks (see
    /// [`LockManager::begin_read_committed`]).
    owner: Owner,
    /// The keys this transaction locked itself (locks inherited from another key are listed
    /// by the manager).
    held: Vec<LockKey>,
}

impl fmt::Debug for TrxLocks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TrxLocks")
            .field("trx", &self.trx)
            .field("owner", &self.owner)
            .field("held", &self.held.len())
            .finish()
    }
}

impl TrxLocks {
    pub(super) fn new(mgr: Arc<LockManager>, trx: TrxId, owner: Owner) -> TrxLocks {
        TrxLocks {
            mgr,
            trx,
            owner,
            held: Vec::new(),
        }
    }

    /// The transaction these locks belong to.
    pub fn trx(&self) -> TrxId {
        self.trx
    }

    /// True if the transaction takes no gap locks (READ COMMITTED).
    pub fn skips_gap_locks(&self) -> bool {
        self.owner == Owner::ReadCommitted
    }

    /// Number of keys this transaction locked itself (not counting gap locks it inherited
    /// when a neighbour was removed or inserted).
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// True if this transaction locked no key itself.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// The request for `t` on `key` as the queues see it, or `None` if there is nothing to
    /// lock: a gap lock under READ COMMITTED.
    fn request(&self, key: &LockKey, t: LockType) -> Option<Holding> {
        let rc = self.skips_gap_locks();
        let t = match t {
            LockType::NextKey(m) if rc => LockType::Record(m),
            LockType::Gap(_) if rc => return None,
            t => t,
        };
        let parts = Parts::of(t, key.is_supremum());
        // On the supremum a record lock became a gap lock, which READ COMMITTED skips too.
        if rc && parts.rec.is_none() && !parts.ii {
            return None;
        }
        Some(Holding {
            trx: self.trx,
            parts,
            owner: self.owner,
        })
    }

    /// Takes the record `key` in `mode` (a record-only lock) if that needs no wait: `true` if
    /// granted (or already held at least that strongly), `false` if someone is in the way
    /// (then nothing is queued). The same as [`TrxLocks::try_lock_as`] with
    /// [`LockType::Record`].
    pub fn try_lock(&mut self, key: &LockKey, mode: LockMode) -> bool {
        self.try_lock_as(key, LockType::Record(mode))
    }

    /// Takes `t` on `key` if that needs no wait: `true` if granted (or already held at least
    /// that strongly; an insert intention that need not wait holds nothing afterwards),
    /// `false` if someone is in the way (then nothing is queued).
    pub fn try_lock_as(&mut self, key: &LockKey, t: LockType) -> bool {
        let Some(want) = self.request(key, t) else {
            return true;
        };
        match self.mgr.attempt(key, want) {
            Attempt::New => {
                self.held.push(key.clone());
                true
            }
            Attempt::Held => true,
            Attempt::Busy => false,
        }
    }

    /// Takes the record `key` in `mode` (a record-only lock), waiting up to the lock wait
    /// timeout while another transaction holds it incompatibly. The same as
    /// [`TrxLocks::lock_as`] with [`LockType::Record`].
    pub fn lock(&mut self, key: LockKey, mode: LockMode) -> Result<(), LockError> {
        self.lock_as(key, LockType::Record(mode))
    }

    /// Takes `t` on `key`, waiting up to the lock wait timeout while another transaction holds
    /// (or asked before for) a lock that `t` must wait for (see [`LockType`] for who waits
    /// for whom). Errors: [`LockError::Deadlock`] if waiting would close a cycle and this
    /// transaction is chosen as the victim (at once, or later while it waits): roll it back;
    /// and [`LockError::Timeout`]. After either, it holds what it held before.
    pub fn lock_as(&mut self, key: LockKey, t: LockType) -> Result<(), LockError> {
        let Some(want) = self.request(&key, t) else {
            return Ok(());
        };
        match self.mgr.attempt(&key, want) {
            Attempt::New => self.held.push(key),
            Attempt::Held => {}
            Attempt::Busy => {
                if self.mgr.enqueue_and_wait(&key, want)? {
                    self.held.push(key);
                }
            }
        }
        Ok(())
    }

    /// Releases every lock (at commit or rollback), the inherited ones too, and grants what
    /// waited for them. A transaction holding many keys, a good share of the whole table's,
    /// does it in one pass over the table instead of a look-up per key.
    pub fn release_all(&mut self) {
        self.mgr.release_keys(self.trx, &self.held);
        self.held.clear();
        self.mgr.release_inherited(self.trx);
    }
}

impl Drop for TrxLocks {
    fn drop(&mut self) {
        self.release_all();
    }
}
