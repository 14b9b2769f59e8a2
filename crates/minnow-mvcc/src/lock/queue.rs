//! One key's queue: who holds it, who waits, and granting waiters when a holder lets go.

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use super::graph::Graph;
use super::{LockMode, TrxId};

/// Where a waiting request stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum WaitState {
    Waiting,
    Granted,
    /// Chosen as a deadlock victim; the cycle it closed.
    Victim(Vec<TrxId>),
}

/// One waiting request: its owner parks on `cv` until `state` leaves `Waiting`.
#[derive(Debug)]
pub(super) struct Waiter {
    pub(super) trx: TrxId,
    pub(super) mode: LockMode,
    pub(super) state: Mutex<WaitState>,
    pub(super) cv: Condvar,
}

impl Waiter {
    pub(super) fn set(&self, s: WaitState) {
        *self.state.lock() = s;
        self.cv.notify_one();
    }

    pub(super) fn is_victim(&self) -> bool {
        matches!(*self.state.lock(), WaitState::Victim(_))
    }
}

/// Who holds one key: one entry per transaction (its strongest mode). Nearly every key has one
/// holder, kept inline so that an uncontended lock allocates nothing here.
#[derive(Debug, Default)]
pub(super) struct Holders {
    first: Option<(TrxId, LockMode)>,
    rest: Vec<(TrxId, LockMode)>,
}

impl Holders {
    pub(super) fn iter(&self) -> impl Iterator<Item = &(TrxId, LockMode)> {
        self.first.iter().chain(self.rest.iter())
    }

    pub(super) fn is_empty(&self) -> bool {
        self.first.is_none() && self.rest.is_empty()
    }

    /// Adds `trx` in `mode`, or strengthens its entry; true if it held nothing before.
    pub(super) fn grant(&mut self, trx: TrxId, mode: LockMode) -> bool {
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

    pub(super) fn remove(&mut self, trx: TrxId) {
        if self.first.is_some_and(|g| g.0 == trx) {
            self.first = self.rest.pop();
        } else {
            self.rest.retain(|g| g.0 != trx);
        }
    }
}

/// The locks on one key: who holds them and who waits, in arrival order.
#[derive(Debug, Default)]
pub(super) struct Queue {
    pub(super) granted: Holders,
    pub(super) waiting: VecDeque<Arc<Waiter>>,
}

impl Queue {
    pub(super) fn held_by(&self, trx: TrxId) -> Option<LockMode> {
        self.granted.iter().find(|g| g.0 == trx).map(|g| g.1)
    }

    /// True if every other holder allows `mode`.
    pub(super) fn others_allow(&self, trx: TrxId, mode: LockMode) -> bool {
        self.granted
            .iter()
            .all(|&(t, m)| t == trx || m.compatible(mode))
    }

    /// The transactions the waiter at `pos` waits for.
    pub(super) fn blockers(&self, pos: usize) -> Vec<TrxId> {
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

    pub(super) fn holders(&self) -> Vec<TrxId> {
        self.granted.iter().map(|g| g.0).collect()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.granted.is_empty() && self.waiting.is_empty()
    }
}

/// Grants the waiters at the front of `q` for as long as they fit. The waiter notes the key in
/// its own [`TrxLocks`] when it wakes, before it can release anything.
pub(super) fn grant_waiters(q: &mut Queue, graph: &mut Graph) {
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
