//! Per-index search statistics: which key prefix to hash, and whether hashing would help.
//!
//! This is InnoDB's `btr_search_t` (`btr_search_info_update_hash` in `btr0sea.cc`) adapted
//! to minnow's search mode. minnow's leaf search returns the last record `<= key` (InnoDB's
//! `PAGE_CUR_LE`) together with how many leading fields the key shares with that record
//! (`low_match`) and with the next one (`up_match`). A hash on the first `n` fields, storing
//! the **rightmost** record of each run of equal prefixes, would have found that record
//! directly exactly when
//!
//! ```text
//!     low_match >= n   (the record has the key's n-field prefix)
//!     up_match  <  n   (the next record does not: it is the last of its run)
//! ```
//!
//! After each descent the statistics check that condition for the current recommendation
//! `n`. If it holds, `n_hash_potential` grows (it saturates at [`POTENTIAL_MAX`] so that a
//! hot, stable index stops writing this cache line). If not, a new `n` is recommended: one
//! field more than the key shares with the next record (`up_match + 1`), and the potential
//! restarts at 1; or, if the key shares at least as much with the next record as with its own
//! (no prefix can tell them apart), at 0. Only descents that found their key are learnt from
//! (the caller's choice: see `IndexHook::descended`). As InnoDB does, analysis pauses for
//! [`HASH_ANALYSIS`] searches after every change of recommendation, so a workload without a
//! usable prefix pays little. minnow recommends whole fields only (InnoDB can also hash
//! `n_bytes` of the next field); its full-key point lookups always end on whole fields.
//!
//! The state is one `AtomicU64` updated with plain loads and stores: two threads racing may
//! lose an increment, which is harmless for a heuristic (InnoDB updates it without a latch
//! too), and a reader never sees a torn half-updated recommendation.

use std::sync::atomic::{AtomicU64, Ordering};

/// Searches to wait after a change of recommendation before analysing again
/// (InnoDB's `BTR_SEARCH_HASH_ANALYSIS`).
pub const HASH_ANALYSIS: u16 = 17;

/// Consistent successes before pages of an index may be hashed (`BTR_SEARCH_BUILD_LIMIT`).
pub const BUILD_LIMIT: u32 = 100;

/// Where `n_hash_potential` stops counting.
pub const POTENTIAL_MAX: u32 = 10_000;

/// One consistent snapshot of an index's search statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Recommendation {
    /// Key fields to hash (0: nothing recommended yet).
    pub n_fields: u16,
    /// Consecutive searches the recommendation would have served.
    pub potential: u32,
    /// Searches since the recommendation last changed (saturates at [`HASH_ANALYSIS`]).
    pub analysis: u16,
}

impl Recommendation {
    fn pack(self) -> u64 {
        u64::from(self.n_fields) | u64::from(self.analysis) << 16 | u64::from(self.potential) << 32
    }

    fn unpack(v: u64) -> Recommendation {
        Recommendation {
            n_fields: (v & 0xFFFF) as u16,
            analysis: ((v >> 16) & 0xFFFF) as u16,
            potential: (v >> 32) as u32,
        }
    }

    /// True once pages may be hashed and lookups should try the hash.
    pub fn ready(self) -> bool {
        self.n_fields > 0 && self.potential >= BUILD_LIMIT
    }
}

/// The statistics of one index.
#[derive(Debug, Default)]
pub struct SearchInfo {
    state: AtomicU64,
}

impl SearchInfo {
    /// The current recommendation.
    #[inline]
    pub fn get(&self) -> Recommendation {
        Recommendation::unpack(self.state.load(Ordering::Relaxed))
    }

    /// Forgets everything (the hash was switched off or the index changed).
    pub fn reset(&self) {
        self.state.store(0, Ordering::Relaxed);
    }

    /// Learns from one descent for a key of `key_len` fields that ended with `low_match` and
    /// `up_match` (see the module docs). Returns the recommendation after it.
    pub fn update(&self, key_len: usize, low_match: usize, up_match: usize) -> Recommendation {
        let old = self.get();
        let mut r = old;
        if r.analysis < HASH_ANALYSIS {
            r.analysis += 1;
        } else {
            let n = usize::from(r.n_fields);
            if r.potential > 0 && n > 0 && low_match >= n && up_match < n {
                r.potential = (r.potential + 1).min(POTENTIAL_MAX);
            } else {
                r.analysis = 0;
                if low_match > up_match {
                    r.n_fields = (up_match + 1).min(key_len).min(usize::from(u16::MAX)) as u16;
                    r.potential = 1;
                } else {
                    r.n_fields = 1;
                    r.potential = 0;
                }
            }
        }
        if r != old {
            self.state.store(r.pack(), Ordering::Relaxed);
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unique_one_field_key_becomes_ready_after_the_build_limit() {
        let info = SearchInfo::default();
        for _ in 0..HASH_ANALYSIS {
            assert!(!info.update(1, 1, 0).ready());
        }
        // First analysis: recommends one field.
        let r = info.update(1, 1, 0);
        assert_eq!((r.n_fields, r.potential), (1, 1));
        // The analysis pauses again after a new recommendation, then counts successes.
        for _ in 0..HASH_ANALYSIS {
            assert_eq!(info.update(1, 1, 0).potential, 1);
        }
        for _ in 1..BUILD_LIMIT {
            assert!(!info.get().ready());
            info.update(1, 1, 0);
        }
        assert!(info.get().ready());
        for _ in 0..2 * POTENTIAL_MAX {
            info.update(1, 1, 0);
        }
        assert_eq!(info.get().potential, POTENTIAL_MAX);
    }

    #[test]
    fn a_longer_shared_prefix_moves_the_recommendation() {
        let info = SearchInfo::default();
        for _ in 0..=HASH_ANALYSIS {
            info.update(2, 2, 0);
        }
        assert_eq!(info.get().n_fields, 1);
        for _ in 0..HASH_ANALYSIS {
            info.update(2, 2, 0);
        }
        // A key sharing its first field with the next record: one field is not enough.
        let r = info.update(2, 2, 1);
        assert_eq!((r.n_fields, r.potential, r.analysis), (2, 1, 0));
        // A search that does not find its key (shares more with the next record): potential 0.
        for _ in 0..HASH_ANALYSIS {
            info.update(2, 2, 0);
        }
        let r = info.update(2, 0, 1);
        assert_eq!(r.potential, 0);
        info.reset();
        assert_eq!(info.get(), Recommendation::default());
    }
}
