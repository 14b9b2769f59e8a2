//! Unit tests of the lock manager.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Barrier, mpsc};
use std::thread;
use std::time::Duration;

use super::*;

/// Key `i` of index 1.
pub(super) fn k(i: u64) -> LockKey {
    LockKey::new(1, &i.to_be_bytes())
}

/// A wait timeout no test reaches unless something is wrong.
pub(super) const LONG: Duration = Duration::from_secs(20);
/// A wait timeout for the tests that time out on purpose.
pub(super) const SHORT: Duration = Duration::from_millis(30);

/// A xorshift generator started at `seed` (not zero): deterministic random numbers.
pub(super) fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// Transaction `trx` asks for `key` in `mode` on a thread of its own and, once it waits (the
/// only waiter), `end` ends the holder; returns the waiter's locks, granted.
fn granted_after(
    m: &Arc<LockManager>,
    trx: TrxId,
    key: LockKey,
    mode: LockMode,
    end: impl FnOnce(),
) -> TrxLocks {
    let m2 = Arc::clone(m);
    let waiter = thread::spawn(move || {
        let mut t = m2.begin(trx);
        t.lock(key, mode).map(|()| t)
    });
    wait_for_waiters(m, 1);
    end();
    waiter
        .join()
        .unwrap()
        .expect("granted when the holder ended")
}

/// Spins until `n` transactions wait.
pub(super) fn wait_for_waiters(m: &LockManager, n: u64) {
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
fn a_background_task_conflicts_as_a_transaction_but_is_not_counted_or_inherited() {
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
    // Purge removes the record it holds: its lock does not become a gap lock.
    m.record_removed(&k(1), &k(2));
    assert_eq!(m.held_gap(u64::MAX, &k(2)), None);
    purge.release_all();
    assert!(t1.try_lock(&k(1), LockMode::Exclusive));
    assert_eq!(m.stats().held, 1);
    assert!(matches!(
        purge.lock(k(1), LockMode::Exclusive),
        Err(LockError::Timeout { .. })
    ));
    // Granted after a wait, it is not counted either.
    let mut purge = m.begin_background(u64::MAX);
    let h = thread::spawn(move || purge.lock(k(1), LockMode::Exclusive).map(|()| purge));
    wait_for_waiters(&m, 1);
    t1.release_all();
    let purge = h.join().unwrap().unwrap();
    assert_eq!(m.stats().held, 0);
    drop(purge);
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
                let mut rnd = xorshift(seed * 104_729 + 17);
                let mut deadlocks = 0;
                for _ in 0..300 {
                    let mut t = m.begin(next_trx.fetch_add(1, Ordering::Relaxed));
                    let mut keys: Vec<usize> = Vec::new();
                    let mut ok = true;
                    for _ in 0..3 {
                        let key = (rnd() % KEYS) as usize;
                        let mode = if rnd().is_multiple_of(3) {
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

#[test]
fn index_in_use_sees_holders_and_waiters_of_that_index_only() {
    let locks = LockManager::new(LONG);
    assert!(!locks.index_in_use(1));
    let mut t1 = locks.begin(1);
    t1.lock(k(5), LockMode::Exclusive).unwrap();
    assert!(locks.index_in_use(1));
    assert!(
        !locks.index_in_use(2),
        "a lock of index 1 says nothing of index 2"
    );
    // A gap lock on the supremum of an empty index counts too.
    let mut t2 = locks.begin(2);
    t2.lock_as(LockKey::supremum(2), LockType::Gap(LockMode::Shared))
        .unwrap();
    assert!(locks.index_in_use(2));
    t1.release_all();
    t2.release_all();
    assert!(!locks.index_in_use(1) && !locks.index_in_use(2));
}

/// A transaction with many locks lets go of them in one pass over the table when they are a
/// good share of it, one probe per key otherwise: both ways release exactly its locks (its own
/// and one it inherited), grant a waiter and leave the other transactions' locks alone.
#[test]
fn a_long_transaction_releases_by_a_pass_over_the_table_or_by_key_alike() {
    let many = manager::SWEEP_MIN + 100;
    // 10 other locks: the pass (the long transaction's are nearly all); 3x its count: by key.
    for others in [10, 3 * many] {
        let m = LockManager::new(LONG);
        let (mut big, mut other) = (m.begin(1), m.begin(2));
        for i in 0..many {
            assert!(big.try_lock_as(&k(i), LockType::NextKey(LockMode::Exclusive)));
        }
        // Another transaction's locks: gaps on the long one's keys (gap locks never wait) and
        // records of its own.
        for i in 0..others {
            let key = k(1_000_000 + i);
            assert!(other.try_lock(&key, LockMode::Shared));
        }
        assert!(other.try_lock_as(&k(5), LockType::Gap(LockMode::Shared)));
        // A lock inherited: the record after key 7 is removed, key 7 closes the gap.
        let (removed, heir) = (k(2_000_000), k(2_000_001));
        assert!(big.try_lock(&removed, LockMode::Shared));
        m.record_removed(&removed, &heir);
        assert_eq!(m.held_gap(1, &heir), Some(LockMode::Shared));
        assert_eq!(m.stats().held, many + 1 + others + 1 + 1);
        // A waiter for one of the long transaction's records.
        let t3 = granted_after(&m, 3, k(9), LockMode::Exclusive, || big.release_all());
        assert_eq!(m.held(3, &k(9)), Some(LockMode::Exclusive));
        for i in [0, 5, 9, many - 1, 2_000_000, 2_000_001] {
            assert_eq!(m.held(1, &k(i)), None, "key {i} released ({others} others)");
            assert_eq!(
                m.held_gap(1, &k(i)),
                None,
                "gap {i} released ({others} others)"
            );
        }
        assert_eq!(m.held_gap(2, &k(5)), Some(LockMode::Shared));
        assert_eq!(
            m.held(2, &k(1_000_000 + others - 1)),
            Some(LockMode::Shared)
        );
        assert_eq!(m.stats().held, others + 1 + 1, "the other two's locks only");
        assert!(big.is_empty());
        // The released keys are free again.
        let mut t4 = m.begin(4);
        assert!(t4.try_lock(&k(many - 1), LockMode::Exclusive));
        assert!(t4.try_lock(&heir, LockMode::Exclusive));
        drop((t3, t4, other));
        assert_eq!(m.stats().held, 0);
    }
}

/// A key with one holder and no waiter is kept as that holding alone: a table entry (key and
/// slot) fits one 64-byte cache line.
#[test]
fn a_lock_table_entry_is_one_cache_line() {
    assert_eq!(
        std::mem::size_of::<(LockKey, queue::Slot)>(),
        64,
        "a lock table entry grew past a cache line"
    );
}

/// The single-holder form goes through every change a queue does: strengthened in place, a
/// second holder and a waiter turn it into a queue, and it ends empty.
#[test]
fn a_single_holder_is_strengthened_shared_and_waited_for() {
    let m = LockManager::new(LONG);
    let (mut t1, mut t2) = (m.begin(1), m.begin(2));
    assert!(t1.try_lock_as(&k(1), LockType::Gap(LockMode::Shared)));
    assert!(t1.try_lock(&k(1), LockMode::Shared));
    assert_eq!(
        (m.held(1, &k(1)), m.held_gap(1, &k(1))),
        (Some(LockMode::Shared), Some(LockMode::Shared))
    );
    assert!(
        t1.try_lock(&k(1), LockMode::Exclusive),
        "an upgrade of its own"
    );
    assert_eq!(
        (m.held(1, &k(1)), t1.len(), m.stats().held),
        (Some(LockMode::Exclusive), 1, 1)
    );
    // Another's conflicting request is refused without queueing; a gap lock joins.
    assert!(!t2.try_lock(&k(1), LockMode::Shared));
    assert!(t2.try_lock_as(&k(1), LockType::Gap(LockMode::Exclusive)));
    assert_eq!(m.stats().held, 2);
    // A waiter behind both.
    let t3 = granted_after(&m, 3, k(1), LockMode::Shared, || t1.release_all());
    assert_eq!(m.held(3, &k(1)), Some(LockMode::Shared));
    drop((t2, t3));
    assert_eq!(m.stats().held, 0);
    assert!(!m.index_in_use(1), "the key's entry is gone");
}
