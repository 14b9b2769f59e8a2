//! The doublewrite buffer's counters: pages, bytes and syncs, and where each batch's time
//! went, phase by phase (see the crate docs, "Where the time goes").

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Counters of the doublewrite buffer, shared by all segments. Relaxed atomics: each is exact,
/// a set read together is not a snapshot of one instant.
#[derive(Debug, Default)]
pub struct DoublewriteStats {
    /// Batches completed (all their pages written in place and synced).
    pub batches: AtomicU64,
    /// Page copies written to segment files (0 in modes off and detect_only).
    pub dblwr_pages: AtomicU64,
    /// Pages written in place.
    pub in_place_pages: AtomicU64,
    /// Syncs issued: segment files and data files.
    pub syncs: AtomicU64,
    /// Bytes written to segment files (headers and copies).
    pub dblwr_bytes: AtomicU64,
    /// Bytes written in place to data files.
    pub in_place_bytes: AtomicU64,
    /// Nanoseconds spent checking batches and copying and stamping pages into segment buffers.
    pub prepare_ns: AtomicU64,
    /// Nanoseconds spent in the segment-file writes (header and copies).
    pub segment_write_ns: AtomicU64,
    /// Nanoseconds spent in the segment-file syncs.
    pub segment_sync_ns: AtomicU64,
    /// Nanoseconds spent in the in-place writes (all tablespaces' submissions).
    pub in_place_write_ns: AtomicU64,
    /// Nanoseconds spent in the data-file syncs.
    pub data_sync_ns: AtomicU64,
    /// Nanoseconds from the start to the end of every batch (the phases above plus the
    /// bookkeeping between them; not the wait for the segment's mutex).
    pub batch_ns: AtomicU64,
}

/// The values of [`DoublewriteStats`] at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StatsSnapshot {
    /// Batches completed.
    pub batches: u64,
    /// Page copies written to segment files.
    pub dblwr_pages: u64,
    /// Pages written in place.
    pub in_place_pages: u64,
    /// Syncs issued.
    pub syncs: u64,
    /// Bytes written to segment files.
    pub dblwr_bytes: u64,
    /// Bytes written in place.
    pub in_place_bytes: u64,
}

/// Where the time of the doublewrite buffer's batches went: the timing counters of
/// [`DoublewriteStats`] at one moment, in nanoseconds summed over all batches and segments
/// (with several flushers the sum can exceed wall time). A batch's phases run one after the
/// other, in this order: `prepare` (check, copy, stamp), `segment_write`, `segment_sync`
/// (modes on and detect_only), `in_place_write`, `data_sync`. `batch` is the wall time of the
/// whole batch; `batch` minus the phases is bookkeeping. A batch that fails keeps the time of
/// the phases it ran but is not counted in `batches`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PhaseTimes {
    /// Batches completed when the times were read.
    pub batches: u64,
    /// Checking, copying and stamping.
    pub prepare_ns: u64,
    /// Segment-file writes.
    pub segment_write_ns: u64,
    /// Segment-file syncs.
    pub segment_sync_ns: u64,
    /// In-place writes.
    pub in_place_write_ns: u64,
    /// Data-file syncs.
    pub data_sync_ns: u64,
    /// Whole batches.
    pub batch_ns: u64,
}

impl PhaseTimes {
    /// The times accumulated since `earlier` (a reading of the same counters taken before).
    pub fn since(&self, earlier: &PhaseTimes) -> PhaseTimes {
        PhaseTimes {
            batches: self.batches.saturating_sub(earlier.batches),
            prepare_ns: self.prepare_ns.saturating_sub(earlier.prepare_ns),
            segment_write_ns: self
                .segment_write_ns
                .saturating_sub(earlier.segment_write_ns),
            segment_sync_ns: self.segment_sync_ns.saturating_sub(earlier.segment_sync_ns),
            in_place_write_ns: self
                .in_place_write_ns
                .saturating_sub(earlier.in_place_write_ns),
            data_sync_ns: self.data_sync_ns.saturating_sub(earlier.data_sync_ns),
            batch_ns: self.batch_ns.saturating_sub(earlier.batch_ns),
        }
    }

    /// The same times divided by the number of batches: the mean batch (all zero when no batch
    /// completed). `batches` stays the number of batches averaged.
    pub fn per_batch(&self) -> PhaseTimes {
        let n = self.batches.max(1);
        let per = |v: u64| if self.batches == 0 { 0 } else { v / n };
        PhaseTimes {
            batches: self.batches,
            prepare_ns: per(self.prepare_ns),
            segment_write_ns: per(self.segment_write_ns),
            segment_sync_ns: per(self.segment_sync_ns),
            in_place_write_ns: per(self.in_place_write_ns),
            data_sync_ns: per(self.data_sync_ns),
            batch_ns: per(self.batch_ns),
        }
    }

    /// `batch_ns` minus the phases: the bookkeeping between them.
    pub fn other_ns(&self) -> u64 {
        self.batch_ns.saturating_sub(
            self.prepare_ns
                + self.segment_write_ns
                + self.segment_sync_ns
                + self.in_place_write_ns
                + self.data_sync_ns,
        )
    }
}

impl fmt::Display for PhaseTimes {
    /// One line in milliseconds, e.g. `prepare 0.52 + seg write 0.79 + seg sync 1.94 + in place
    /// 1.92 + data sync 3.84 + other 0.01 = batch 9.02 ms (70 batches)`: totals, or means after
    /// [`PhaseTimes::per_batch`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = |ns: u64| ns as f64 / 1e6;
        write!(
            f,
            "prepare {:.2} + seg write {:.2} + seg sync {:.2} + in place {:.2} + data sync {:.2} \
             + other {:.2} = batch {:.2} ms ({} batches)",
            ms(self.prepare_ns),
            ms(self.segment_write_ns),
            ms(self.segment_sync_ns),
            ms(self.in_place_write_ns),
            ms(self.data_sync_ns),
            ms(self.other_ns()),
            ms(self.batch_ns),
            self.batches
        )
    }
}

impl DoublewriteStats {
    /// Reads every counter.
    pub fn snapshot(&self) -> StatsSnapshot {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        StatsSnapshot {
            batches: get(&self.batches),
            dblwr_pages: get(&self.dblwr_pages),
            in_place_pages: get(&self.in_place_pages),
            syncs: get(&self.syncs),
            dblwr_bytes: get(&self.dblwr_bytes),
            in_place_bytes: get(&self.in_place_bytes),
        }
    }

    /// Reads every timing counter (see [`PhaseTimes`]).
    pub fn phase_times(&self) -> PhaseTimes {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        PhaseTimes {
            batches: get(&self.batches),
            prepare_ns: get(&self.prepare_ns),
            segment_write_ns: get(&self.segment_write_ns),
            segment_sync_ns: get(&self.segment_sync_ns),
            in_place_write_ns: get(&self.in_place_write_ns),
            data_sync_ns: get(&self.data_sync_ns),
            batch_ns: get(&self.batch_ns),
        }
    }
}

pub(crate) fn add(counter: &AtomicU64, n: usize) {
    counter.fetch_add(n as u64, Ordering::Relaxed);
}

/// Adds the time since `start` to `counter` and returns now, the start of the next phase.
pub(crate) fn lap(counter: &AtomicU64, start: Instant) -> Instant {
    let now = Instant::now();
    let ns = u64::try_from(now.duration_since(start).as_nanos()).unwrap_or(u64::MAX);
    counter.fetch_add(ns, Ordering::Relaxed);
    now
}
