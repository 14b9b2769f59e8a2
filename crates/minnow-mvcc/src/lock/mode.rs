//! Lock modes and InnoDB's rule for who waits for whom (`lock_rec_has_to_wait`).
//!
//! A lock has a strength ([`LockMode`], S or X) and a type ([`LockType`]): the record alone,
//! the gap before the record alone, both (a next-key lock), or an insert intention. Inside the
//! queues a lock is kept as its two parts, the record part and the gap part, each with its own
//! strength ([`Parts`]): the rule below is then one comparison per part.

use super::TrxId;

/// How strong a lock is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LockMode {
    /// Shared: others may hold shared locks on the key too.
    Shared,
    /// Exclusive: nobody else holds a conflicting lock on the key.
    Exclusive,
}

impl LockMode {
    /// True if two transactions may hold `self` and `other` on one record at once.
    pub fn compatible(self, other: LockMode) -> bool {
        self == LockMode::Shared && other == LockMode::Shared
    }
}

/// What a lock covers: InnoDB's precise record lock types (`LOCK_ORDINARY`, `LOCK_REC_NOT_GAP`,
/// `LOCK_GAP`, `LOCK_INSERT_INTENTION`).
///
/// The gap of a key is the open interval between the record before it and the key itself:
/// keys are hashed, not ordered, so the lock manager cannot find neighbours. The caller, which
/// walks the index, names the record whose gap it means (its successor, or the index's
/// [`LockKey::supremum`](super::LockKey::supremum) after the last record).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LockType {
    /// The record and the gap before it (`LOCK_ORDINARY`): what a locking read or a write takes
    /// on every record it scans under REPEATABLE READ, so nothing new appears in what it read.
    NextKey(LockMode),
    /// The record only (`LOCK_REC_NOT_GAP`): a row found by a unique search, or any locking
    /// read under READ COMMITTED.
    Record(LockMode),
    /// The gap before the record only (`LOCK_GAP`): keeps others from inserting into the gap.
    /// Never waits: two transactions may hold conflicting gap locks on one gap.
    Gap(LockMode),
    /// An inserter's announcement that it wants to insert into the gap before the record
    /// (`LOCK_X | LOCK_GAP | LOCK_INSERT_INTENTION`): waits while another transaction holds a
    /// gap or next-key lock there; nobody waits for it, so inserters of different keys into
    /// one gap do not block each other. Granted, it leaves nothing held.
    InsertIntention,
}

/// A lock as the queues keep it: the strength of its record part and of its gap part (`None`
/// if it does not cover that part), and whether it is an insert intention. A transaction's
/// locks on one key merge into one `Parts` (the stronger mode of each part), since the rule
/// below looks at each part on its own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Parts {
    pub(super) rec: Option<LockMode>,
    pub(super) gap: Option<LockMode>,
    pub(super) ii: bool,
}

impl Parts {
    /// The parts of a lock of type `t`; on a supremum key every lock is a gap lock (there is
    /// no record).
    pub(super) fn of(t: LockType, supremum: bool) -> Parts {
        let none = Parts::default();
        match t {
            LockType::NextKey(m) | LockType::Record(m) if supremum => Parts {
                gap: Some(m),
                ..none
            },
            LockType::NextKey(m) => Parts {
                rec: Some(m),
                gap: Some(m),
                ..none
            },
            LockType::Record(m) => Parts {
                rec: Some(m),
                ..none
            },
            LockType::Gap(m) => Parts {
                gap: Some(m),
                ..none
            },
            LockType::InsertIntention => Parts { ii: true, ..none },
        }
    }

    /// `lock_rec_has_to_wait`: true if a request `self` must wait for `other`, a lock (granted
    /// or requested) of another transaction on the same key. The record parts conflict as S
    /// and X do; an insert intention waits for any gap part (it is exclusive); nothing else
    /// waits. So a gap-only request never waits, a record or next-key request does not wait
    /// for a gap-only lock, an insert intention does not wait for a record-only lock, and
    /// nothing waits for an insert intention.
    pub(super) fn waits_for(self, other: Parts) -> bool {
        let rec = matches!((self.rec, other.rec), (Some(a), Some(b)) if !a.compatible(b));
        rec || (self.ii && other.gap.is_some())
    }

    /// True if holding `self` makes the request `want` unnecessary. An insert intention is
    /// never covered: it is a check against others, not something held.
    pub(super) fn covers(self, want: Parts) -> bool {
        !want.ii && want.rec <= self.rec && want.gap <= self.gap
    }

    /// `self` strengthened by `more` (the insert-intention flag is not kept).
    pub(super) fn merge(self, more: Parts) -> Parts {
        Parts {
            rec: self.rec.max(more.rec),
            gap: self.gap.max(more.gap),
            ii: false,
        }
    }

    /// True if nothing is held: the lock is an insert intention only, or empty.
    pub(super) fn holds_nothing(self) -> bool {
        self.rec.is_none() && self.gap.is_none()
    }
}

/// Who asks for a lock: what changes how its locks are inherited and counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Owner {
    /// A REPEATABLE READ transaction.
    RepeatableRead,
    /// A READ COMMITTED transaction: it takes no gap locks, and its exclusive locks are not
    /// inherited by a removed record's successor (InnoDB's `lock_rec_inherit_to_gap`).
    ReadCommitted,
    /// A background task that is not a transaction (the `minnow-engine` crate's purge): its locks
    /// conflict and wait as a transaction's, but are neither counted in
    /// [`LockStats::held`](super::LockStats::held) nor inherited.
    Background,
}

impl Owner {
    /// True if its locks count in `LockStats::held`.
    pub(super) fn counted(self) -> bool {
        self != Owner::Background
    }
}

/// One transaction's lock on one key, as a queue holds it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Holding {
    pub(super) trx: TrxId,
    pub(super) parts: Parts,
    pub(super) owner: Owner,
}

impl Holding {
    /// The gap lock `self` leaves on the successor of its record when the record is removed
    /// (`lock_rec_inherit_to_gap`): every part, as a gap lock of the same strength, except the
    /// exclusive parts of a READ COMMITTED transaction and a background task's locks.
    pub(super) fn inherited_on_removal(self) -> Option<LockMode> {
        if self.owner == Owner::Background {
            return None;
        }
        let keep = |m: Option<LockMode>| {
            m.filter(|&m| !(self.owner == Owner::ReadCommitted && m == LockMode::Exclusive))
        };
        keep(self.parts.rec).max(keep(self.parts.gap))
    }

    /// The gap lock a key inserted just before `self`'s record takes over
    /// (`lock_rec_inherit_to_gap_if_gap_lock`): the gap part, if there is one (a background
    /// task's locks are never inherited).
    pub(super) fn inherited_on_insert(self) -> Option<LockMode> {
        self.parts.gap.filter(|_| self.owner != Owner::Background)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // InnoDB's type_mode bits (lock0lock.h).
    const LOCK_S: u32 = 2;
    const LOCK_X: u32 = 3;
    const LOCK_GAP: u32 = 512;
    const LOCK_REC_NOT_GAP: u32 = 1024;
    const LOCK_INSERT_INTENTION: u32 = 2048;

    fn type_mode(t: LockType) -> u32 {
        let m = |m: LockMode| match m {
            LockMode::Shared => LOCK_S,
            LockMode::Exclusive => LOCK_X,
        };
        match t {
            LockType::NextKey(x) => m(x),
            LockType::Record(x) => m(x) | LOCK_REC_NOT_GAP,
            LockType::Gap(x) => m(x) | LOCK_GAP,
            LockType::InsertIntention => LOCK_X | LOCK_GAP | LOCK_INSERT_INTENTION,
        }
    }

    /// `lock_rec_has_to_wait` of lock0lock.cc, transcribed on the bits: must a request
    /// `type_mode` wait for `lock2` of another transaction on the same record?
    fn innodb_has_to_wait(type_mode: u32, lock2: u32, on_supremum: bool) -> bool {
        let compatible = (type_mode & 0xf) == LOCK_S && (lock2 & 0xf) == LOCK_S;
        if compatible {
            return false;
        }
        if (on_supremum || type_mode & LOCK_GAP != 0) && type_mode & LOCK_INSERT_INTENTION == 0 {
            return false;
        }
        if type_mode & LOCK_INSERT_INTENTION == 0 && lock2 & LOCK_GAP != 0 {
            return false;
        }
        if type_mode & LOCK_GAP != 0 && lock2 & LOCK_REC_NOT_GAP != 0 {
            return false;
        }
        lock2 & LOCK_INSERT_INTENTION == 0
    }

    fn all() -> Vec<LockType> {
        let mut v = vec![LockType::InsertIntention];
        for m in [LockMode::Shared, LockMode::Exclusive] {
            v.extend([LockType::NextKey(m), LockType::Record(m), LockType::Gap(m)]);
        }
        v
    }

    #[test]
    fn waits_for_is_innodbs_rule_for_every_pair() {
        let mut waits = 0;
        for on_supremum in [false, true] {
            for want in all() {
                for held in all() {
                    // InnoDB never places a record-only lock on the supremum.
                    if on_supremum && matches!(held, LockType::Record(_)) {
                        continue;
                    }
                    let ours = Parts::of(want, on_supremum).waits_for(Parts::of(held, on_supremum));
                    let theirs = innodb_has_to_wait(type_mode(want), type_mode(held), on_supremum);
                    assert_eq!(
                        ours, theirs,
                        "{want:?} vs held {held:?}, supremum {on_supremum}"
                    );
                    waits += usize::from(ours);
                }
            }
        }
        // Not vacuous: of the 7 x 7 + 7 x 5 pairs, some wait and most do not.
        assert!(waits > 10 && waits < 40, "{waits}");
    }

    #[test]
    fn covering_and_merging() {
        let nk_x = Parts::of(LockType::NextKey(LockMode::Exclusive), false);
        let rec_s = Parts::of(LockType::Record(LockMode::Shared), false);
        let gap_s = Parts::of(LockType::Gap(LockMode::Shared), false);
        let ii = Parts::of(LockType::InsertIntention, false);
        assert!(nk_x.covers(rec_s) && nk_x.covers(gap_s) && nk_x.covers(nk_x));
        assert!(!rec_s.covers(gap_s) && !gap_s.covers(rec_s) && !nk_x.covers(ii));
        let both = rec_s.merge(gap_s);
        assert_eq!(both, Parts::of(LockType::NextKey(LockMode::Shared), false));
        assert!(!both.covers(nk_x));
        assert!(ii.holds_nothing() && !rec_s.merge(ii).ii);
        // On the supremum every lock is a gap lock.
        assert_eq!(
            Parts::of(LockType::NextKey(LockMode::Exclusive), true),
            Parts::of(LockType::Gap(LockMode::Exclusive), false)
        );
    }
}
