//! Page cleaners: background flushing.
//!
//! `page_cleaners` threads each own a set of instances (`instance % cleaners == k`) and a
//! doublewrite segment (`k`). Every tick (100 ms, or sooner when woken) a cleaner decides how
//! much to write, as InnoDB's adaptive flushing does:
//!
//! - **dirty pages**: below `max_dirty_pages_pct_lwm` nothing; above it a share that grows
//!   to 100 % of `io_capacity` at `max_dirty_pages_pct`;
//! - **checkpoint age** (current LSN − checkpoint, as a share of the log capacity): from 10 %
//!   on, `age_factor * sqrt(age_factor) / 7.5` percent of `io_capacity` (InnoDB's formula,
//!   with the age measured against 7/8 of the capacity), which rises steeply as the log fills;
//! - **checkpoint requests**: when the log asks for a checkpoint ([`minnow_redo::Log::reserve`]
//!   calls the requester the pool installs, without waiting once the checkpoint age passes
//!   7/8 of the capacity and waiting once the log is nearly full), every page older than the
//!   requested LSN is written now, whatever `io_capacity` says: otherwise commits would stall
//!   on a full log. The request asks for the age to come back to 13/16 of the capacity, so one
//!   request is one large batch of writes and syncs, not one per few mtrs;
//! - **LRU tail**: when an instance's free list runs low, dirty pages near the LRU tail are
//!   written so that the next read can evict them instead of writing in the user's thread.
//!
//! The larger of the first two percentages, times `io_capacity` pages per second, scaled to
//! the tick, is how many pages it writes from the flush lists. After each tick the checkpoint
//! is advanced.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::pool::Shared;

/// How often a cleaner wakes up by itself.
const TICK: Duration = Duration::from_millis(100);

#[derive(Debug, Default)]
struct Request {
    shutdown: bool,
    /// The checkpoint LSN the log asked for (0: none).
    target: u64,
    wake: bool,
}

/// Wake-ups and requests for the cleaners.
#[derive(Debug, Default)]
pub(crate) struct CleanerState {
    req: Mutex<Request>,
    cv: Condvar,
}

impl CleanerState {
    /// Asks the cleaners to flush everything older than `lsn` and checkpoint.
    pub(crate) fn request(&self, lsn: u64) {
        let mut r = self.req.lock();
        r.target = r.target.max(lsn);
        r.wake = true;
        self.cv.notify_all();
    }

    /// Wakes the cleaners (a thread is short of free frames).
    pub(crate) fn wake(&self) {
        let mut r = self.req.lock();
        r.wake = true;
        self.cv.notify_all();
    }

    pub(crate) fn shutdown(&self) {
        self.req.lock().shutdown = true;
        self.cv.notify_all();
    }
}

impl Shared {
    /// Pages per second adaptive flushing asks for now.
    pub(crate) fn adaptive_rate(&self) -> f64 {
        let frames = self.ctl.len() as f64;
        let dirty: u64 = self
            .instances
            .iter()
            .map(|i| i.stats.dirty.load(Ordering::Relaxed))
            .sum();
        let dirty_pct = dirty as f64 * 100.0 / frames;
        let max = f64::from(self.cfg.max_dirty_pages_pct);
        let lwm = f64::from(self.cfg.max_dirty_pages_pct_lwm);
        let pct_dirty = if dirty_pct >= max {
            100.0
        } else if dirty_pct >= lwm && dirty > 0 {
            dirty_pct * 100.0 / max
        } else {
            0.0
        };
        let pct_lsn = match self.log.get() {
            Some(log) => {
                let age = log.current_lsn().0.saturating_sub(log.checkpoint_lsn().0) as f64;
                let cap = log.capacity() as f64;
                if age * 100.0 / cap < 10.0 {
                    0.0
                } else {
                    let factor = age * 100.0 / (cap * 7.0 / 8.0);
                    factor * factor.sqrt() / 7.5
                }
            }
            None => 0.0,
        };
        f64::from(self.cfg.io_capacity) * pct_dirty.max(pct_lsn) / 100.0
    }

    /// One cleaner's loop.
    fn cleaner_loop(&self, k: usize) {
        let cleaners = self.cfg.page_cleaners.max(1);
        let mut last = Instant::now();
        let mut credit = 0.0f64;
        loop {
            let target = {
                let mut r = self.cleaner.req.lock();
                if !r.wake && !r.shutdown {
                    self.cleaner.cv.wait_for(&mut r, TICK);
                }
                if r.shutdown {
                    return;
                }
                r.wake = false;
                std::mem::take(&mut r.target)
            };
            if self.is_poisoned() {
                // Nothing can be written any more; wait for shutdown.
                continue;
            }
            let now = Instant::now();
            let elapsed = now.duration_since(last).as_secs_f64().min(1.0);
            last = now;
            credit = (credit + self.adaptive_rate() * elapsed).min(self.cfg.io_capacity as f64);
            let mine: Vec<usize> = (k..self.instances.len()).step_by(cleaners).collect();
            let per = (credit as usize).div_ceil(mine.len().max(1));
            let mut result = Ok(());
            for &ii in &mine {
                let r = (|| {
                    if target > 0 {
                        self.flush_list_batch(ii, usize::MAX, Some(target), k)?;
                    } else if per > 0 {
                        let n = self.flush_list_batch(ii, per, None, k)?;
                        credit = (credit - n as f64).max(0.0);
                    }
                    let inst = &self.instances[ii];
                    if inst.free_len.load(Ordering::Relaxed) < (inst.n / 16).max(1) {
                        self.flush_lru_tail(ii, self.cfg.doublewrite_pages)?;
                    }
                    Ok(())
                })();
                if r.is_err() {
                    result = r;
                    break;
                }
            }
            if result.is_ok() && self.log.get().is_some() {
                result = self.advance_checkpoint().map(|_| ());
            }
            if result.is_err() {
                // The error poisoned the pool; user threads see `Poisoned`.
                continue;
            }
        }
    }
}

/// Starts `page_cleaners` threads.
pub(crate) fn spawn(shared: &Arc<Shared>) -> Result<Vec<JoinHandle<()>>, crate::BufError> {
    (0..shared.cfg.page_cleaners)
        .map(|k| {
            let s = Arc::clone(shared);
            std::thread::Builder::new()
                .name(format!("minnow-page-cleaner-{k}"))
                .spawn(move || s.cleaner_loop(k))
                .map_err(|e| crate::BufError::Config {
                    reason: format!("cannot start a page cleaner: {e}"),
                })
        })
        .collect()
}
