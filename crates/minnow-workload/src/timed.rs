//! Worker threads that repeat one unit of work for a fixed time, with latency histograms.
//!
//! The writer-scaling ([`crate::writers`]) and hot-row ([`crate::hot_rows`]) benchmarks both
//! measure the same way: `threads` threads each repeat a *unit* (one committed transaction,
//! with whatever retries it needed) until the time is up or a stop flag is set, and the run
//! reports units and rows per second and the units' latency percentiles. [`run`] is that
//! loop; the caller's closure is the unit.
//!
//! Each worker keeps its own [`WorkerStats`] (no shared counters on the hot path) and its own
//! random stream, seeded from the run's seed and the worker's number, so a run's choices are
//! reproducible; only the interleaving of the threads is not. Latencies go into HDR
//! histograms in microseconds (the same bounds as [`crate::oltp`]'s), and the workers'
//! histograms are merged at the end. A unit can also record the latency of one of its steps
//! into [`WorkerStats::step`] (the hot-row benchmark records each locking read there, so the
//! time spent queued for a row lock shows up in its percentiles).
//!
//! A worker checks the deadline and the stop flag between units, so every unit counted ran to
//! its end. The first error a unit returns stops every worker and is returned by [`run`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use rand::SeedableRng;
use rand::rngs::SmallRng;

use crate::WorkloadError;
use crate::oltp::{Latency, new_hist};

/// One worker's counters; the unit closure adds to them.
#[derive(Debug)]
pub struct WorkerStats {
    /// Units completed (counted by [`run`]).
    pub units: u64,
    /// Rows the units wrote (the closure's return values, summed by [`run`]).
    pub rows: u64,
    /// Deadlocks the worker's transactions were chosen as victims of (the closure counts).
    pub deadlocks: u64,
    /// Lock wait timeouts the worker's statements met (the closure counts).
    pub lock_wait_timeouts: u64,
    /// Unit latency in microseconds (recorded by [`run`]).
    pub latency: Histogram<u64>,
    /// Latency of one step of a unit, in microseconds, as the closure records it with
    /// [`WorkerStats::record_step`].
    pub step: Histogram<u64>,
}

impl WorkerStats {
    fn new() -> Result<WorkerStats, WorkloadError> {
        Ok(WorkerStats {
            units: 0,
            rows: 0,
            deadlocks: 0,
            lock_wait_timeouts: 0,
            latency: new_hist()?,
            step: new_hist()?,
        })
    }

    /// Records how long one step of the unit took (from `since` to now).
    pub fn record_step(&mut self, since: Instant) {
        // Clamped to the histogram's bounds: cannot fail.
        let _ = self.step.record(micros(since.elapsed()));
    }

    fn add(&mut self, o: &WorkerStats) {
        self.units += o.units;
        self.rows += o.rows;
        self.deadlocks += o.deadlocks;
        self.lock_wait_timeouts += o.lock_wait_timeouts;
        // Same bounds on both sides: cannot fail.
        let _ = self.latency.add(&o.latency);
        let _ = self.step.add(&o.step);
    }
}

/// Microseconds, clamped to the histograms' bounds.
fn micros(d: Duration) -> u64 {
    (d.as_micros() as u64).clamp(1, crate::oltp::HIST_MAX_US)
}

/// What a timed run measured, over all workers.
#[derive(Debug)]
pub struct TimedRun {
    /// Wall time from the start to the last worker's end.
    pub elapsed: Duration,
    /// The workers' counters, merged.
    pub total: WorkerStats,
    /// Units per worker (how fair the run was).
    pub units_per_thread: Vec<u64>,
    /// True when the stop flag ended the run before its time.
    pub interrupted: bool,
}

impl TimedRun {
    /// Units per second.
    pub fn units_per_sec(&self) -> f64 {
        crate::oltp::per_sec(self.total.units, self.elapsed)
    }

    /// Rows per second.
    pub fn rows_per_sec(&self) -> f64 {
        crate::oltp::per_sec(self.total.rows, self.elapsed)
    }

    /// Percentiles of the units' latency.
    pub fn latency(&self) -> Latency {
        Latency::of(&self.total.latency)
    }

    /// Percentiles of the recorded steps' latency (all zero when none was recorded).
    pub fn step_latency(&self) -> Latency {
        Latency::of(&self.total.step)
    }
}

/// Runs `threads` workers for `time` (or until `stop` is set). Worker `i` repeats
/// `unit(i, rng, stats)`, which does one unit of work and returns the rows it wrote; `rng`
/// is the worker's own stream, seeded from `seed` and `i`.
pub fn run<F>(
    threads: usize,
    time: Duration,
    seed: u64,
    stop: &AtomicBool,
    unit: F,
) -> Result<TimedRun, WorkloadError>
where
    F: Fn(usize, &mut SmallRng, &mut WorkerStats) -> Result<u64, WorkloadError> + Sync,
{
    if threads == 0 {
        return Err(WorkloadError::Setting {
            setting: "threads",
            reason: "must be at least 1".into(),
        });
    }
    let failed = AtomicBool::new(false);
    let start = Instant::now();
    let deadline = start + time;
    let results: Vec<Result<WorkerStats, WorkloadError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let (unit, failed) = (&unit, &failed);
                s.spawn(move || -> Result<WorkerStats, WorkloadError> {
                    let mut rng = SmallRng::seed_from_u64(
                        seed.wrapping_add(1)
                            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                            .wrapping_add(i as u64),
                    );
                    let mut st = WorkerStats::new()?;
                    while Instant::now() < deadline
                        && !stop.load(Ordering::Relaxed)
                        && !failed.load(Ordering::Relaxed)
                    {
                        let t0 = Instant::now();
                        match unit(i, &mut rng, &mut st) {
                            Ok(rows) => {
                                st.units += 1;
                                st.rows += rows;
                                let _ = st.latency.record(micros(t0.elapsed()));
                            }
                            Err(e) => {
                                failed.store(true, Ordering::SeqCst);
                                return Err(e);
                            }
                        }
                    }
                    Ok(st)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(Err(WorkloadError::WorkerPanicked)))
            .collect()
    });
    let elapsed = start.elapsed();
    let mut total = WorkerStats::new()?;
    let mut units_per_thread = Vec::with_capacity(threads);
    for r in results {
        let st = r?;
        units_per_thread.push(st.units);
        total.add(&st);
    }
    Ok(TimedRun {
        elapsed,
        total,
        units_per_thread,
        interrupted: stop.load(Ordering::Relaxed) && Instant::now() < deadline,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn every_worker_runs_units_until_the_time_is_up() {
        let stop = AtomicBool::new(false);
        let r = run(3, Duration::from_millis(30), 7, &stop, |_, rng, st| {
            let t0 = Instant::now();
            let n: u64 = rng.random_range(1..=3);
            st.record_step(t0);
            Ok(n)
        })
        .unwrap();
        assert_eq!(r.units_per_thread.len(), 3);
        assert!(r.units_per_thread.iter().all(|&u| u > 0), "{r:?}");
        assert_eq!(r.total.units, r.units_per_thread.iter().sum::<u64>());
        assert!(r.total.rows >= r.total.units && r.total.rows <= 3 * r.total.units);
        assert_eq!(r.total.latency.len(), r.total.units);
        assert_eq!(r.total.step.len(), r.total.units);
        assert!(!r.interrupted);
    }

    #[test]
    fn an_error_stops_every_worker_and_is_returned() {
        let stop = AtomicBool::new(false);
        let r = run(2, Duration::from_secs(3600), 0, &stop, |i, _, st| {
            if i == 1 && st.units == 5 {
                return Err(WorkloadError::Setting {
                    setting: "test",
                    reason: "boom".into(),
                });
            }
            Ok(1)
        });
        assert!(matches!(
            r,
            Err(WorkloadError::Setting {
                setting: "test",
                ..
            })
        ));
        assert!(run(0, Duration::ZERO, 0, &stop, |_, _, _| Ok(0)).is_err());
    }

    #[test]
    fn the_stop_flag_ends_the_run_early() {
        let stop = AtomicBool::new(true);
        let r = run(2, Duration::from_secs(3600), 0, &stop, |_, _, _| Ok(1)).unwrap();
        assert_eq!(r.total.units, 0);
        assert!(r.interrupted);
    }
}
