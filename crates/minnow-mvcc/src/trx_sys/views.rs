//! Read views that readers take without the `ids` mutex, and purge's oldest view.
//!
//! Every consistent read needs a [`ReadView`] and must tell purge that it holds one. Done
//! the obvious way (InnoDB's `trx_sys->mutex` around `ReadView::prepare` and the view list),
//! every read-only transaction takes the mutex every writer takes at begin and commit, and
//! writes the same list: readers of different rows serialise on one cache line. Here a
//! reader writes no line another thread writes, in three parts.
//!
//! ## 1. One view per view epoch, copied per thread
//!
//! The **view epoch** is a counter moved forward, under the `ids` mutex, by every change of
//! what a view is made of: an id or a commit number handed out, a transaction leaving the
//! active set. Two views built at the same epoch are the same photograph. So a view is built
//! (under the mutex) only when a reader finds the epoch moved since the last one; the
//! transaction system keeps the last view built with its epoch, and each thread keeps **its
//! own copy** (a thread-local, its active-id list copied once): a reader that finds its
//! thread's copy at the current epoch (one atomic load of a line only writers write) clones
//! it, and the clone's reference count is that thread's own.
//!
//! A commit is acknowledged after its transaction left the active set, which moved the epoch
//! past every value read before. A read that starts after the acknowledgement reads that
//! epoch or a later one (acquire, against the release of the move), so no copy built at an
//! earlier epoch is used: the reader builds a fresh view, which sees the commit.
//!
//! ## 2. Registration in a slot of its own
//!
//! Purge must know the oldest view still open. Each open view holds a **slot**: one of
//! [`SLOTS`] cache-line-aligned pairs (the epoch its view was built at, and the view's low
//! limit for status output). A thread starts its search at a slot of its own (a thread-local
//! hint, handed out round robin), so the compare-and-swap that claims a slot and the store
//! that frees it write a line no other thread writes; only when [`PROBES`] slots in a row are
//! busy (a thread holding many views at once) does a registration go to the overflow list,
//! behind a mutex. The views built are kept by epoch (`Ids::built`), so the oldest registered
//! epoch names the oldest open view.
//!
//! ## 3. Purge's floor, and why no reader slips past it (Dekker)
//!
//! A reader takes its view (part 1) before registering it, so purge could scan the slots in
//! between, miss it, and go past the versions it needs. Both sides therefore write, then
//! read, each with `SeqCst`:
//!
//! ```text
//!   reader                                     purge (under `ids`)
//!   slot.epoch := e + 1          (SeqCst)      floor := max(floor, now)      (SeqCst)
//!   if floor > e: free the slot, start over    m := min(now, every slot's epoch)
//!   read through the view of epoch e           the purge view: the view built at m;
//!                                              views built before m are dropped
//! ```
//!
//! In the single total order of `SeqCst` operations, either the reader's store comes before
//! purge's scan of its slot, and purge sees epoch `e` (its view is no newer than the
//! reader's), or the reader's load of `floor` comes after purge's store, and the reader sees
//! that purge went past `e` and takes a fresh view, of an epoch at or after the floor. The
//! overflow list gets the same guarantee from its mutex: purge stores the floor before it
//! locks the list, a reader loads it after it unlocks. So every view a reader uses is
//! registered before purge can pass it, and the view built at its epoch is kept as long as it
//! may be the oldest. Purge's scan reads every slot: cheap, and purge runs once per batch.
//!
//! A statement outside a transaction takes a view the same way ([`TrxSys::statement_view`]).
//! Status output counts the occupied slots and the overflow list, and takes the smallest low
//! limit among them: no cache of any kind counts as a reader.

use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use parking_lot::Mutex;

use super::{Ids, OpenView, TrxSys};
use crate::read_view::ReadView;

/// Registration slots (more than the threads usually reading at once).
pub const SLOTS: usize = 256;
/// Slots a reader tries, from its thread's own, before the overflow list.
pub const PROBES: usize = 4;
/// A slot's epoch word while its claimant fills it in: neither free nor registered.
const CLAIMED: u64 = u64::MAX;
/// Views built kept before the builder drops those no reader can use any more.
const BUILT_KEPT: usize = 64;

/// One registration slot, alone on its cache lines (two, for the adjacent-line prefetcher).
#[derive(Debug, Default)]
#[repr(align(128))]
pub(super) struct Slot {
    /// 0: free; [`CLAIMED`]: being filled in; otherwise the view's epoch plus one.
    epoch: AtomicU64,
    /// The view's low limit (status output only).
    low_limit: AtomicU64,
}

/// What one open view holds to stay registered; dropping it frees the registration.
#[derive(Debug)]
pub(super) enum Registration {
    /// A slot (the `Arc` counts are the slot's own, on their own line).
    Slot(Arc<Slot>),
    /// An entry (epoch, low limit) of the overflow list.
    Overflow(Arc<Mutex<Vec<(u64, u64)>>>, u64, u64),
}

impl Drop for Registration {
    fn drop(&mut self) {
        match self {
            Registration::Slot(s) => s.epoch.store(0, Ordering::Release),
            Registration::Overflow(list, epoch, low) => {
                let mut l = list.lock();
                if let Some(i) = l.iter().position(|&e| e == (*epoch, *low)) {
                    l.swap_remove(i);
                }
            }
        }
    }
}

/// The registrations, purge's floor and the last view built.
#[derive(Debug)]
pub(super) struct Views {
    /// Tells this transaction system's thread-local copies from another's.
    id: u64,
    slots: Box<[Arc<Slot>]>,
    overflow: Arc<Mutex<Vec<(u64, u64)>>>,
    /// The epoch purge has gone to: a reader whose view is older starts over.
    floor: AtomicU64,
    /// The last view built and its epoch, for threads whose copy is stale.
    last: Mutex<Option<(u64, ReadView)>>,
}

static NEXT_SYS: AtomicU64 = AtomicU64::new(1);
static NEXT_HINT: AtomicUsize = AtomicUsize::new(0);

/// A thread's copy of a view: the transaction system's id, the epoch, the view.
type Local = Option<(u64, u64, ReadView)>;

thread_local! {
    static HINT: Cell<usize> = const { Cell::new(usize::MAX) };
    static LOCAL: RefCell<Local> = const { RefCell::new(None) };
}

/// This thread's first slot.
fn hint() -> usize {
    HINT.with(|h| {
        if h.get() == usize::MAX {
            h.set(NEXT_HINT.fetch_add(1, Ordering::Relaxed) % SLOTS);
        }
        h.get()
    })
}

impl Views {
    pub(super) fn new() -> Views {
        Views {
            id: NEXT_SYS.fetch_add(1, Ordering::Relaxed),
            slots: (0..SLOTS).map(|_| Arc::new(Slot::default())).collect(),
            overflow: Arc::new(Mutex::new(Vec::new())),
            floor: AtomicU64::new(0),
            last: Mutex::new(None),
        }
    }

    /// Registers a view of epoch `epoch` (the reader's store of part 3).
    fn register(&self, epoch: u64, low_limit: u64) -> Registration {
        let h = hint();
        for k in 0..PROBES {
            let Some(s) = self.slots.get((h + k) % SLOTS) else {
                break;
            };
            if s.epoch
                .compare_exchange(0, CLAIMED, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                s.low_limit.store(low_limit, Ordering::Relaxed);
                s.epoch.store(epoch + 1, Ordering::SeqCst);
                return Registration::Slot(Arc::clone(s));
            }
        }
        self.overflow.lock().push((epoch, low_limit));
        Registration::Overflow(Arc::clone(&self.overflow), epoch, low_limit)
    }

    /// Registers a view of epoch `epoch`, then checks purge's floor (the reader's side of
    /// part 3): `None`, registration undone, if purge may have passed the epoch unseen.
    fn try_register(&self, epoch: u64, low_limit: u64) -> Option<Registration> {
        let reg = self.register(epoch, low_limit);
        (self.floor.load(Ordering::SeqCst) <= epoch).then_some(reg)
    }

    /// The registered (epoch, low limit) pairs, slots then overflow.
    fn registered(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let slots = self
            .slots
            .iter()
            .filter_map(|s| match s.epoch.load(Ordering::SeqCst) {
                0 | CLAIMED => None,
                e => Some((e - 1, s.low_limit.load(Ordering::Relaxed))),
            });
        slots.chain(self.overflow.lock().clone())
    }

    /// Open views and the smallest low limit among them (status output).
    pub(super) fn census(&self) -> (u64, Option<u64>) {
        self.registered().fold((0, None), |(n, low), (_, l)| {
            (n + 1, Some(low.map_or(l, |m: u64| m.min(l))))
        })
    }
}

impl TrxSys {
    /// Opens a read view for a transaction whose id is `creator` (0 if it has none yet),
    /// registered until the last clone of it is dropped: purge keeps what it may need. Takes
    /// no mutex and writes no shared line while this thread's copy of the view is current
    /// (the module docs).
    pub fn open_view(&self, creator: u64) -> OpenView {
        loop {
            let (mut view, epoch) = self.epoch_view();
            // None: purge may have gone past this view before seeing it; a fresh one.
            if let Some(reg) = self.views.try_register(epoch, view.low_limit()) {
                if creator != 0 {
                    view.set_creator(creator);
                }
                return OpenView {
                    view,
                    _guard: Arc::new(reg),
                };
            }
        }
    }

    /// A read view for one statement outside a transaction (no creator): taken and
    /// registered as [`TrxSys::open_view`]'s, so that statements share the view built for
    /// the current epoch without a mutex.
    pub fn statement_view(&self) -> OpenView {
        self.open_view(0)
    }

    /// The view of the current epoch (creator 0) and that epoch: this thread's copy if it is
    /// current, else the last one built if that is, else one built now.
    fn epoch_view(&self) -> (ReadView, u64) {
        let epoch = self.view_epoch.load(Ordering::Acquire);
        let id = self.views.id;
        let mine = LOCAL.with(|l| match &*l.borrow() {
            Some((sys, e, v)) if *sys == id && *e == epoch => Some(v.clone()),
            _ => None,
        });
        if let Some(v) = mine {
            return (v, epoch);
        }
        let last = match &*self.views.last.lock() {
            Some((e, v)) if *e == epoch => Some((v.clone(), epoch)),
            _ => None,
        };
        let (view, epoch) = last.unwrap_or_else(|| {
            let mut ids = self.ids.lock();
            let epoch = self.view_epoch.load(Ordering::Acquire);
            let view = self.built_view(&mut ids, epoch);
            drop(ids);
            let mut last = self.views.last.lock();
            if last.as_ref().is_none_or(|(e, _)| *e < epoch) {
                *last = Some((epoch, view.clone()));
            }
            (view, epoch)
        });
        // This thread's own copy: its clones count references on a line of its own.
        let own = view.detached();
        LOCAL.with(|l| *l.borrow_mut() = Some((id, epoch, own.clone())));
        (own, epoch)
    }

    /// The view built at `epoch`, the current one (under `ids`, which `ids` proves held),
    /// built now if none was.
    fn built_view(&self, ids: &mut Ids, epoch: u64) -> ReadView {
        if let Some(v) = ids.built.get(&epoch) {
            return v.clone();
        }
        let view = ids.view(0);
        ids.built.insert(epoch, view.clone());
        if ids.built.len() > BUILT_KEPT {
            self.pass(ids, epoch);
        }
        view
    }

    /// Purge's side of the protocol (module docs, part 3), at the current epoch `now`: moves
    /// the floor to it, takes the oldest registered epoch (`now` if none is older) and drops
    /// the views built before that one, which no reader can use any more. Returns it.
    fn pass(&self, ids: &mut Ids, now: u64) -> u64 {
        self.views.floor.fetch_max(now, Ordering::SeqCst);
        let oldest = self.views.registered().map(|(e, _)| e).fold(now, u64::min);
        ids.built = ids.built.split_off(&oldest);
        oldest
    }

    /// The oldest open view, or the view of now if none is (under `ids`): `None` only if the
    /// view built at the oldest registered epoch is gone, which the protocol rules out.
    pub(super) fn oldest_registered(&self, ids: &mut Ids) -> Option<ReadView> {
        let now = self.view_epoch.load(Ordering::Acquire);
        self.built_view(ids, now);
        let oldest = self.pass(ids, now);
        ids.built.get(&oldest).cloned()
    }
}

#[cfg(test)]
mod tests;
