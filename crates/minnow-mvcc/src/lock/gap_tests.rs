//! Unit tests of gap, next-key and insert-intention locks and of lock inheritance.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;

use parking_lot::Mutex;

use super::tests::{LONG, SHORT, k, wait_for_waiters, xorshift};
use super::*;

const S: LockMode = LockMode::Shared;
const X: LockMode = LockMode::Exclusive;
const II: LockType = LockType::InsertIntention;

#[test]
fn gap_locks_never_wait_and_record_locks_ignore_them() {
    let m = LockManager::new(SHORT);
    let (mut t1, mut t2, mut t3) = (m.begin(1), m.begin(2), m.begin(3));
    // Conflicting gap locks on one gap coexist.
    assert!(t1.try_lock_as(&k(1), LockType::Gap(X)));
    assert!(t2.try_lock_as(&k(1), LockType::Gap(X)));
    assert!(t3.try_lock_as(&k(1), LockType::Gap(S)));
    // A record or next-key request does not wait for gap locks...
    assert!(t2.try_lock_as(&k(1), LockType::NextKey(X)));
    // ...but record parts conflict as S and X do.
    assert!(!t3.try_lock_as(&k(1), LockType::Record(S)));
    assert!(!t1.try_lock_as(&k(1), LockType::NextKey(S)));
    // A gap request does not wait for a record lock.
    assert!(t3.try_lock_as(&k(1), LockType::Gap(X)));
    assert_eq!((m.held(2, &k(1)), m.held_gap(2, &k(1))), (Some(X), Some(X)));
    assert_eq!((m.held(1, &k(1)), m.held_gap(1, &k(1))), (None, Some(X)));
    // One entry per transaction and key, however many types it took.
    assert_eq!((m.stats().held, t2.len()), (3, 1));
    t2.release_all();
    assert!(t3.try_lock_as(&k(1), LockType::Record(X)));
}

#[test]
fn insert_intention_waits_for_gap_parts_of_others_only() {
    let m = LockManager::new(SHORT);
    let (mut t1, mut t2) = (m.begin(1), m.begin(2));
    // Into a gap nobody locks: granted, and nothing is left held.
    assert!(t2.try_lock_as(&k(1), II));
    assert_eq!((m.stats().held, t2.len()), (0, 0));
    // A record-only lock does not stop an insert into the gap before it.
    assert!(t1.try_lock_as(&k(1), LockType::Record(X)));
    assert!(t2.try_lock_as(&k(1), II));
    // A gap or next-key lock, even shared, does.
    assert!(t1.try_lock_as(&k(2), LockType::Gap(S)));
    assert!(!t2.try_lock_as(&k(2), II));
    assert!(t1.try_lock_as(&k(3), LockType::NextKey(S)));
    assert!(!t2.try_lock_as(&k(3), II));
    // Its own gap lock does not stop a transaction.
    assert!(t1.try_lock_as(&k(2), II));
    assert_eq!(m.held(1, &k(2)), None);
    // The wait ends in a timeout naming the gap's holder.
    match t2.lock_as(k(2), II).unwrap_err() {
        LockError::Timeout { trx, holders, .. } => assert_eq!((trx, holders), (2, vec![1])),
        e => panic!("{e}"),
    }
    t1.release_all();
    assert!(t2.try_lock_as(&k(2), II));
    assert_eq!(m.stats().held, 0);
}

#[test]
fn nobody_waits_for_an_insert_intention() {
    let m = LockManager::new(LONG);
    let mut t1 = m.begin(1);
    t1.lock_as(k(1), LockType::Gap(S)).unwrap();
    let mut t2 = m.begin(2);
    let (tx, rx) = mpsc::channel();
    let inserter = thread::spawn(move || {
        let r = t2.lock_as(k(1), II);
        tx.send(()).unwrap();
        r.map(|()| t2)
    });
    wait_for_waiters(&m, 1);
    // The queued insert intention blocks neither record, next-key nor gap requests.
    let (mut t3, mut t4, mut t5) = (m.begin(3), m.begin(4), m.begin(5));
    assert!(t3.try_lock_as(&k(1), LockType::NextKey(X)));
    assert!(t4.try_lock_as(&k(1), LockType::Gap(X)));
    // Another inserter waits for the gap locks, not for the queued insert intention.
    let mut t6 = m.begin(6);
    assert!(!t6.try_lock_as(&k(1), II));
    t1.release_all();
    assert!(rx.try_recv().is_err(), "3 and 4 still lock the gap");
    t3.release_all();
    t4.release_all();
    let t2 = inserter.join().unwrap().unwrap();
    // Granted after a wait, an insert intention holds nothing either.
    assert_eq!((t2.len(), m.stats().held), (0, 0));
    assert!(t5.try_lock_as(&k(1), LockType::Record(X)));
    assert!(t6.try_lock_as(&k(1), II));
}

/// Two transactions lock one gap (say, each read a missing key for update), then both insert
/// into it: each insert intention waits for the other's gap lock. The younger gives way.
#[test]
fn two_inserts_into_one_locked_gap_deadlock() {
    let m = LockManager::new(LONG);
    let (mut t1, mut t2) = (m.begin(1), m.begin(2));
    t1.lock_as(k(10), LockType::Gap(X)).unwrap();
    t2.lock_as(k(10), LockType::Gap(X)).unwrap();
    let older = thread::spawn(move || t1.lock_as(k(10), II).map(|()| t1));
    wait_for_waiters(&m, 1);
    let err = t2.lock_as(k(10), II).unwrap_err();
    assert!(
        matches!(&err, LockError::Deadlock { trx: 2, cycle, .. } if cycle.len() == 2),
        "{err}"
    );
    t2.release_all();
    let t1 = older.join().unwrap().unwrap();
    assert_eq!((t1.len(), m.stats().deadlocks), (1, 1));
}

#[test]
fn the_supremum_is_its_own_key_and_only_a_gap() {
    let sup = LockKey::supremum(1);
    assert!(sup.is_supremum() && !LockKey::new(1, &[]).is_supremum());
    assert_ne!(sup, LockKey::new(1, &[]));
    assert_ne!(sup, LockKey::supremum(2));
    assert_eq!(sup, LockKey::supremum(1));
    assert_eq!(sup.to_string(), "index 1 supremum");
    let m = LockManager::new(SHORT);
    let (mut t1, mut t2, mut t3) = (m.begin(1), m.begin(2), m.begin(3));
    // Next-key locks on the supremum are gap locks: they do not conflict.
    assert!(t1.try_lock_as(&sup, LockType::NextKey(X)));
    assert!(t2.try_lock_as(&sup, LockType::NextKey(X)));
    assert_eq!((m.held(1, &sup), m.held_gap(1, &sup)), (None, Some(X)));
    // An insert after the last record waits for them.
    assert!(!t3.try_lock_as(&sup, II));
    t1.release_all();
    t2.release_all();
    assert!(t3.try_lock_as(&sup, II));
    // An empty key is an ordinary record of the same index.
    assert!(t3.try_lock_as(&LockKey::new(1, &[]), LockType::Record(X)));
}

#[test]
fn read_committed_takes_record_locks_only_but_checks_insert_intentions() {
    let m = LockManager::new(SHORT);
    let mut rc = m.begin_read_committed(1);
    assert!(rc.skips_gap_locks() && !m.begin(9).skips_gap_locks());
    rc.lock_as(k(1), LockType::NextKey(X)).unwrap();
    assert_eq!((m.held(1, &k(1)), m.held_gap(1, &k(1))), (Some(X), None));
    rc.lock_as(k(2), LockType::Gap(X)).unwrap();
    rc.lock_as(LockKey::supremum(1), LockType::NextKey(X))
        .unwrap();
    assert_eq!((m.stats().held, rc.len()), (1, 1));
    // Its inserts still wait for a REPEATABLE READ transaction's gap lock.
    let mut rr = m.begin(2);
    rr.lock_as(k(3), LockType::Gap(S)).unwrap();
    assert!(!rc.try_lock_as(&k(3), II));
    // Nobody inserting before k(1) waits for it: it has no gap lock.
    assert!(rr.try_lock_as(&k(1), II));
}

#[test]
fn a_removed_record_passes_its_locks_to_its_successor_as_gap_locks() {
    let m = LockManager::new(LONG);
    let (mut t1, mut t2, mut t3) = (m.begin(1), m.begin(2), m.begin(3));
    t1.lock_as(k(20), LockType::NextKey(X)).unwrap();
    t2.lock_as(k(20), LockType::Gap(S)).unwrap();
    t3.lock_as(k(20), LockType::Gap(X)).unwrap();
    // 4 waits to insert before 20: its insert intention is not inherited.
    let mut t4 = m.begin(4);
    let inserter = thread::spawn(move || t4.lock_as(k(20), II).map(|()| t4));
    wait_for_waiters(&m, 1);
    m.record_removed(&k(20), &k(30));
    assert_eq!((m.held(1, &k(30)), m.held_gap(1, &k(30))), (None, Some(X)));
    assert_eq!(m.held_gap(2, &k(30)), Some(S));
    assert_eq!(m.held_gap(4, &k(30)), None);
    // The removed key keeps its own locks, and the merged gap is locked.
    assert_eq!(m.held(1, &k(20)), Some(X));
    let mut t5 = m.begin(5);
    assert!(!t5.try_lock_as(&k(30), II));
    assert_eq!(m.stats().held, 3 + 3);
    // The inherited locks are released with the rest, though no list of the holder names
    // them.
    assert_eq!(t1.len(), 1);
    t1.release_all();
    t2.release_all();
    t3.release_all();
    inserter.join().unwrap().unwrap();
    assert!(t5.try_lock_as(&k(30), II));
    assert_eq!(m.stats().held, 0);
}

#[test]
fn inheritance_on_removal_follows_innodbs_exceptions() {
    let m = LockManager::new(SHORT);
    // REPEATABLE READ: even a record-only lock becomes a gap lock on the successor.
    let mut rr = m.begin(1);
    rr.lock_as(k(10), LockType::Record(X)).unwrap();
    m.record_removed(&k(10), &k(11));
    assert_eq!(m.held_gap(1, &k(11)), Some(X));
    // READ COMMITTED: its exclusive locks are not inherited.
    let mut rc = m.begin_read_committed(2);
    rc.lock_as(k(20), LockType::Record(X)).unwrap();
    rc.lock_as(k(21), LockType::Record(S)).unwrap();
    m.record_removed(&k(20), &k(30));
    m.record_removed(&k(21), &k(30));
    assert_eq!(m.held_gap(2, &k(30)), Some(S));
    // Chains: the inherited lock is passed on again, and still released at the end.
    m.record_removed(&k(11), &LockKey::supremum(1));
    assert_eq!(m.held_gap(1, &LockKey::supremum(1)), Some(X));
    // The rollback of an insert: the inserter's own lock is not passed on, a waiter's is.
    let (mut ins, mut waiter) = (m.begin(3), m.begin(4));
    ins.lock_as(k(40), LockType::Record(X)).unwrap();
    waiter.lock_as(k(40), LockType::Gap(S)).unwrap();
    m.insert_undone(&k(40), &k(50), 3);
    assert_eq!(
        (m.held_gap(3, &k(50)), m.held_gap(4, &k(50))),
        (None, Some(S))
    );
    drop((ins, waiter));
    // Nothing on the removed record: nothing happens.
    m.record_removed(&k(99), &k(100));
    assert_eq!(m.stats().held, 3 + 3);
    rr.release_all();
    rc.release_all();
    assert_eq!(m.stats().held, 0);
}

#[test]
fn an_inserted_record_takes_over_the_gap_locks_of_its_successor() {
    let m = LockManager::new(SHORT);
    let (mut t1, mut t2, mut t3) = (m.begin(1), m.begin(2), m.begin(3));
    t1.lock_as(k(30), LockType::NextKey(S)).unwrap();
    t2.lock_as(k(30), LockType::Record(S)).unwrap();
    // 3 inserts 25 into the gap before 30, then a gap lock is granted there to 1 (gap
    // requests never wait) before 25's inheritance; 1 must lock (.., 25) too.
    t3.lock_as(k(25), LockType::Record(X)).unwrap();
    m.record_inserted(&k(25), &k(30));
    assert_eq!(m.held_gap(1, &k(25)), Some(S));
    assert_eq!(m.held(1, &k(25)), None);
    // A record-only lock covers no gap: nothing inherited.
    assert_eq!(m.held_gap(2, &k(25)), None);
    let mut t4 = m.begin(4);
    assert!(!t4.try_lock_as(&k(25), II));
    t1.release_all();
    assert!(t4.try_lock_as(&k(25), II));
    assert_eq!(m.stats().held, 2);
}

/// 2 waits for 1's row; 1 waits to insert into a gap 3 locks. When a record 2 had locked is
/// purged, 2 inherits a gap lock on that gap, so 1 now waits for 2 as well: a cycle that no
/// new wait closed. It is found then, and 2, the younger, gives way.
#[test]
fn inheritance_that_closes_a_cycle_makes_a_victim() {
    let m = LockManager::new(LONG);
    let (mut t1, mut t2, mut t3) = (m.begin(1), m.begin(2), m.begin(3));
    t1.lock_as(k(1), LockType::Record(X)).unwrap();
    t2.lock_as(k(20), LockType::NextKey(S)).unwrap();
    t3.lock_as(k(30), LockType::Gap(S)).unwrap();
    let second = thread::spawn(move || {
        let r = t2.lock_as(k(1), LockType::Record(X));
        drop(t2); // the rollback
        r
    });
    wait_for_waiters(&m, 1);
    let first = thread::spawn(move || t1.lock_as(k(30), II).map(|()| t1));
    wait_for_waiters(&m, 2);
    m.record_removed(&k(20), &k(30));
    let err = second.join().unwrap().unwrap_err();
    assert!(matches!(err, LockError::Deadlock { trx: 2, .. }), "{err}");
    assert_eq!(m.stats().deadlocks, 1);
    // 1 still waits for 3's gap lock; then it goes.
    t3.release_all();
    let t1 = first.join().unwrap().unwrap();
    drop(t1);
    assert_eq!((m.stats().held, m.stats().waiting), (0, 0));
}

/// Transactions take random lock types on a few neighbouring keys while a "purger" removes
/// and re-inserts records (inheriting locks); deadlock victims roll back. Whatever the
/// interleaving, two transactions never hold conflicting record parts at once, no cycle of
/// waits survives (checked inside the manager after every change, in test builds), every
/// transaction ends, and every lock, inherited ones included, is released.
#[test]
fn random_gap_and_record_locks_with_inheritance() {
    const KEYS: u64 = 4;
    let m = LockManager::new(LONG);
    let next_trx = Arc::new(AtomicU64::new(1));
    let active: Arc<Mutex<Vec<TrxId>>> = Arc::default();
    let stop = Arc::new(AtomicU64::new(0));
    let purger = {
        let (m, stop) = (Arc::clone(&m), Arc::clone(&stop));
        thread::spawn(move || {
            let mut i = 0u64;
            while stop.load(Ordering::Relaxed) == 0 {
                let key = i % KEYS;
                let next = if key + 1 == KEYS {
                    LockKey::supremum(1)
                } else {
                    k(key + 1)
                };
                if i.is_multiple_of(2) {
                    m.record_removed(&k(key), &next);
                } else {
                    m.record_inserted(&k(key), &next);
                }
                i += 1;
                thread::yield_now();
            }
        })
    };
    let hs: Vec<_> = (0..3u64)
        .map(|seed| {
            let (m, next_trx, active) =
                (Arc::clone(&m), Arc::clone(&next_trx), Arc::clone(&active));
            thread::spawn(move || {
                let mut rnd = xorshift(seed * 7_919 + 3);
                let mut deadlocks = 0u64;
                for _ in 0..200 {
                    let trx = next_trx.fetch_add(1, Ordering::Relaxed);
                    active.lock().push(trx);
                    let mut t = if rnd().is_multiple_of(4) {
                        m.begin_read_committed(trx)
                    } else {
                        m.begin(trx)
                    };
                    for _ in 0..3 {
                        let mode = if rnd().is_multiple_of(2) { S } else { X };
                        let ty = match rnd() % 4 {
                            0 => LockType::NextKey(mode),
                            1 => LockType::Record(mode),
                            2 => LockType::Gap(mode),
                            _ => II,
                        };
                        let key = if rnd().is_multiple_of(5) {
                            LockKey::supremum(1)
                        } else {
                            k(rnd() % KEYS)
                        };
                        match t.lock_as(key, ty) {
                            Ok(()) => {}
                            Err(LockError::Deadlock { .. }) => {
                                deadlocks += 1;
                                break;
                            }
                            Err(e) => panic!("{e}\n{}", m.dump()),
                        }
                        // No other transaction holds a conflicting record part.
                        for key in 0..KEYS {
                            if let Some(mine) = m.held(trx, &k(key)) {
                                let others: Vec<TrxId> = active.lock().clone();
                                assert!(
                                    others
                                        .into_iter()
                                        .filter(|&o| o != trx)
                                        .filter_map(|o| m.held(o, &k(key)))
                                        .all(|theirs| mine.compatible(theirs)),
                                    "{}",
                                    m.dump()
                                );
                            }
                        }
                        thread::yield_now();
                    }
                    t.release_all();
                    active.lock().retain(|&o| o != trx);
                }
                deadlocks
            })
        })
        .collect();
    let deadlocks: u64 = hs.into_iter().map(|h| h.join().unwrap()).sum();
    stop.store(1, Ordering::Relaxed);
    purger.join().unwrap();
    let s = m.stats();
    assert_eq!((s.held, s.waiting, s.timeouts), (0, 0, 0), "{}", m.dump());
    assert!(s.deadlocks >= deadlocks);
}
