//! One key's queue: who holds it, who waits, and granting waiters when a holder lets go.

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use super::TrxId;
use super::graph::Graph;
use super::mode::{Holding, Owner, Parts};

/// Where a waiting request stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum WaitState {
    Waiting,
    /// Granted; `new` if the transaction held nothing on the key before.
    Granted {
        new: bool,
    },
    /// Chosen as a deadlock victim; the cycle it closed.
    Victim(Vec<TrxId>),
}

/// One waiting request: its owner parks on `cv` until `state` leaves `Waiting`.
#[derive(Debug)]
pub(super) struct Waiter {
    pub(super) trx: TrxId,
    pub(super) want: Parts,
    pub(super) owner: Owner,
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

    /// The request as a lock held (for inheritance: InnoDB turns waiting requests into
    /// granted gap locks on the heir too).
    pub(super) fn as_holding(&self) -> Holding {
        Holding {
            trx: self.trx,
            parts: self.want,
            owner: self.owner,
        }
    }
}

/// Who holds one key: one entry per transaction (its parts merged). Nearly every key has one
/// holder, kept inline so that an uncontended lock allocates nothing here.
#[derive(Debug, Default)]
pub(super) struct Holders {
    first: Option<Holding>,
    rest: Vec<Holding>,
}

impl Holders {
    pub(super) fn iter(&self) -> impl Iterator<Item = &Holding> {
        self.first.iter().chain(self.rest.iter())
    }

    pub(super) fn is_empty(&self) -> bool {
        self.first.is_none() && self.rest.is_empty()
    }

    /// Adds `h`, or strengthens the entry of its transaction; true if a new entry was made
    /// (an insert intention alone makes none: it holds nothing).
    pub(super) fn grant(&mut self, h: Holding) -> bool {
        let mut slots = self.first.iter_mut().chain(self.rest.iter_mut());
        if let Some(g) = slots.find(|g| g.trx == h.trx) {
            g.parts = g.parts.merge(h.parts);
            return false;
        }
        if h.parts.holds_nothing() {
            return false;
        }
        let h = Holding {
            parts: Parts {
                ii: false,
                ..h.parts
            },
            ..h
        };
        match self.first {
            None => self.first = Some(h),
            Some(_) => self.rest.push(h),
        }
        true
    }

    /// Removes `trx`'s entry and returns it.
    pub(super) fn remove(&mut self, trx: TrxId) -> Option<Holding> {
        if self.first.is_some_and(|g| g.trx == trx) {
            let h = self.first.take();
            self.first = self.rest.pop();
            h
        } else {
            let at = self.rest.iter().position(|g| g.trx == trx)?;
            Some(self.rest.swap_remove(at))
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
    pub(super) fn held_by(&self, trx: TrxId) -> Option<Parts> {
        self.granted.iter().find(|g| g.trx == trx).map(|g| g.parts)
    }

    /// True if `trx`'s request `want` must wait: another transaction holds a lock it waits
    /// for, or (unless `only_holders`, as for a transaction that already holds the key and
    /// goes to the front) another transaction's request it waits for is queued.
    pub(super) fn must_wait(&self, trx: TrxId, want: Parts, only_holders: bool) -> bool {
        self.granted
            .iter()
            .any(|g| g.trx != trx && want.waits_for(g.parts))
            || (!only_holders
                && self
                    .waiting
                    .iter()
                    .any(|w| w.trx != trx && want.waits_for(w.want)))
    }

    /// The transactions the waiter at `pos` waits for: the holders and the requests ahead of
    /// it that its request waits for.
    pub(super) fn blockers(&self, pos: usize) -> Vec<TrxId> {
        let Some(w) = self.waiting.get(pos) else {
            return Vec::new();
        };
        let mut out: Vec<TrxId> = self
            .granted
            .iter()
            .filter(|g| g.trx != w.trx && w.want.waits_for(g.parts))
            .map(|g| g.trx)
            .collect();
        for ahead in self.waiting.iter().take(pos) {
            if ahead.trx != w.trx && w.want.waits_for(ahead.want) && !out.contains(&ahead.trx) {
                out.push(ahead.trx);
            }
        }
        out
    }

    pub(super) fn holders(&self) -> Vec<TrxId> {
        self.granted.iter().map(|g| g.trx).collect()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.granted.is_empty() && self.waiting.is_empty()
    }
}

/// Grants every waiter that waits for nobody any more (InnoDB's `lock_rec_grant`: a request
/// is granted once no holder and no request ahead of it is one it waits for), in queue order;
/// returns how many new counted holder entries (see [`Owner::counted`]) that made. The waiter notes the key in its own
/// [`TrxLocks`](super::TrxLocks) when it wakes, before it can release anything.
pub(super) fn grant_waiters(q: &mut Queue, graph: &mut Graph) -> u64 {
    let mut new = 0;
    let mut pos = 0;
    while let Some(w) = q.waiting.get(pos) {
        if w.is_victim() {
            // Leaving anyway; it removes itself from the graph.
            q.waiting.remove(pos);
            continue;
        }
        if !q.blockers(pos).is_empty() {
            pos += 1;
            continue;
        }
        let Some(w) = q.waiting.remove(pos) else {
            break;
        };
        let fresh = q.granted.grant(w.as_holding());
        new += u64::from(fresh && w.owner.counted());
        graph.edges.remove(&w.trx);
        w.set(WaitState::Granted { new: fresh });
    }
    new
}

/// What the lock table keeps for one key. Nearly every locked key has one holder and no
/// waiter (a writer's row lock), so that case is the holder alone, inline: with the key, a
/// table entry of 64 bytes, one cache line, instead of 128 with a whole [`Queue`] inline (a
/// 550,500-row removal makes as many entries, each written once and looked up once more at
/// the end, a cache miss per line). Anything else (a second holder, a waiter) moves the key's
/// locks to a boxed queue, which stays until the key's last lock goes.
#[derive(Debug)]
pub(super) enum Slot {
    /// One holder, nobody waiting.
    One(Holding),
    /// The general case.
    Queue(Box<Queue>),
}

impl Slot {
    /// An empty queue (for a request about to be queued).
    pub(super) fn empty() -> Slot {
        Slot::Queue(Box::default())
    }

    /// The single holding `h` (its insert-intention flag dropped: that is not held).
    pub(super) fn one(h: Holding) -> Slot {
        Slot::One(Holding {
            parts: Parts {
                ii: false,
                ..h.parts
            },
            ..h
        })
    }

    /// The key's locks as a queue, made into one first if it held a single holding.
    pub(super) fn queue(&mut self) -> &mut Queue {
        if let Slot::One(h) = *self {
            let mut q = Box::<Queue>::default();
            q.granted.grant(h);
            *self = Slot::Queue(q);
        }
        match self {
            Slot::Queue(q) => q,
            // Made a queue just above; the borrow checker cannot see that a conditional
            // return of the borrow and the assignment above do not overlap.
            Slot::One(_) => unreachable!("a single holding was made a queue"),
        }
    }

    /// The holders.
    pub(super) fn granted(&self) -> impl Iterator<Item = &Holding> {
        let (one, q) = match self {
            Slot::One(h) => (Some(h), None),
            Slot::Queue(q) => (None, Some(q.granted.iter())),
        };
        one.into_iter().chain(q.into_iter().flatten())
    }

    /// The waiting requests, in queue order.
    pub(super) fn waiting(&self) -> impl Iterator<Item = &Arc<Waiter>> {
        match self {
            Slot::One(_) => None,
            Slot::Queue(q) => Some(q.waiting.iter()),
        }
        .into_iter()
        .flatten()
    }

    /// The parts `trx` holds.
    pub(super) fn held_by(&self, trx: TrxId) -> Option<Parts> {
        self.granted().find(|g| g.trx == trx).map(|g| g.parts)
    }

    /// True if nobody holds or waits.
    pub(super) fn is_empty(&self) -> bool {
        match self {
            Slot::One(_) => false,
            Slot::Queue(q) => q.is_empty(),
        }
    }
}
