//! Bounding walks over pointers read from disk.
//!
//! Many structures in a data file are linked lists whose links are page numbers or addresses
//! stored in the pages themselves: B-tree sibling links, overflow (BLOB) page chains, undo
//! page chains, roll-pointer chains from a record through its old versions, the history list.
//! A walk that follows such links trusts the file to end the list. A corrupt file (or a
//! crafted one) can make a link point back to a page already walked; the walk then never
//! ends. Every such walk in minnow is therefore **bounded**: a cycle is a typed corruption
//! error naming where it was found, never a hang.
//!
//! The bound must cost next to nothing on hot paths (a range scan steps from leaf to leaf
//! millions of times), so it is not a set of visited pages. [`CycleGuard`] is Brent's cycle
//! detection: it keeps **one** remembered position and compares each new position with it;
//! the remembered position is replaced at steps 1, 2, 4, 8, ... A walk whose step function
//! is deterministic (the next position depends only on the current one, as long as the pages
//! do not change) and that enters a cycle of length `λ` after `μ` steps revisits the
//! remembered position within about `2·max(μ, λ) + λ` steps, so the guard fires after a
//! bounded number of steps, using one comparison and one counter per step and no memory.
//!
//! A legitimate walk never revisits a position: a leaf, an overflow page or an undo record is
//! reached at most once along one list. Where pages may be freed and reused while a walk is
//! under way (a range scan between two calls), the position includes something that changes
//! on reuse (the page's LSN), or the guard is reset when the walk starts again from a root.
//!
//! ```
//! use minnow_page::walk::CycleGuard;
//!
//! // A chain 1 -> 2 -> 3 -> 4 -> 2 -> ...: the guard stops it.
//! let next = |p: u32| if p == 4 { 2 } else { p + 1 };
//! let (mut at, mut guard) = (1u32, CycleGuard::new());
//! let mut steps = 0;
//! while guard.step(at) {
//!     at = next(at);
//!     steps += 1;
//! }
//! assert!(steps < 16);
//! assert!((2..=4).contains(&at)); // a position on the cycle
//! ```
//!
//! [`within`] runs a walk on a thread with a time limit, for tests of such walks.

use std::sync::mpsc;
use std::time::Duration;

/// Runs `f` on a thread of its own and waits up to `limit` for it: `Some` of what it returned,
/// or `None` if it still runs then (the thread is left running, detached). A panic in `f` is
/// resumed on the caller's thread. Tests use it on walks over crafted corrupt files, so that
/// a walk that loops fails the test instead of hanging the test run.
pub fn within<T: Send + 'static>(
    limit: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let (tx, rx) = mpsc::channel();
    let thread = std::thread::spawn(move || {
        // The receiver is gone only if the caller gave up waiting.
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(v) => Some(v),
        Err(mpsc::RecvTimeoutError::Timeout) => None,
        Err(mpsc::RecvTimeoutError::Disconnected) => match thread.join() {
            Err(payload) => std::panic::resume_unwind(payload),
            // Sending failed without a panic: nothing came back.
            Ok(()) => None,
        },
    }
}

/// Brent's cycle detection over the positions of a walk (see the module docs): call
/// [`CycleGuard::step`] with each position reached, and stop with a corruption error when it
/// returns false.
#[derive(Debug, Clone, Copy)]
pub struct CycleGuard<T> {
    saved: Option<T>,
    steps: u64,
    next_save: u64,
}

impl<T: Copy + PartialEq> Default for CycleGuard<T> {
    fn default() -> Self {
        CycleGuard::new()
    }
}

impl<T: Copy + PartialEq> CycleGuard<T> {
    /// A guard for a walk that has not started.
    pub const fn new() -> CycleGuard<T> {
        CycleGuard {
            saved: None,
            steps: 0,
            next_save: 1,
        }
    }

    /// Records that the walk reached `at`. False if `at` is a position the walk already
    /// reached, so the walk is in a cycle and must stop; true otherwise (the walk may go on).
    #[inline]
    pub fn step(&mut self, at: T) -> bool {
        if self.saved == Some(at) {
            return false;
        }
        self.steps += 1;
        if self.steps == self.next_save {
            self.saved = Some(at);
            self.next_save = self.next_save.saturating_mul(2);
        }
        true
    }

    /// Positions recorded so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Forgets the walk: the next position starts a new one.
    pub fn reset(&mut self) {
        *self = CycleGuard::new();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{CycleGuard, within};

    #[test]
    fn within_returns_what_the_walk_returned_or_none_if_it_loops() {
        assert_eq!(within(Duration::from_secs(60), || 7), Some(7));
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        // Blocks until the test ends (the sender is dropped then): a walk that never ends.
        assert_eq!(
            within(Duration::from_millis(10), move || rx.recv().is_ok()),
            None
        );
        drop(tx);
    }

    /// Walks `next` from `start` until the guard fires or `max` steps pass; the steps taken,
    /// or `None` if the guard never fired.
    fn run(start: u32, next: impl Fn(u32) -> Option<u32>, max: u64) -> Option<u64> {
        let mut g = CycleGuard::new();
        let mut at = Some(start);
        while let Some(p) = at {
            if !g.step(p) {
                return Some(g.steps());
            }
            if g.steps() > max {
                break;
            }
            at = next(p);
        }
        None
    }

    #[test]
    fn every_cycle_is_found_within_a_few_times_its_reach() {
        for mu in 0..40u32 {
            for lambda in 1..40u32 {
                // 0, 1, ..., mu - 1 lead into the cycle mu, ..., mu + lambda - 1.
                let next = |p: u32| Some(if p + 1 == mu + lambda { mu } else { p + 1 });
                let bound = 4 * u64::from(mu + lambda) + 2;
                let steps = run(0, next, bound);
                assert!(
                    steps.is_some_and(|s| s <= bound),
                    "mu {mu} lambda {lambda}: {steps:?}"
                );
            }
        }
    }

    #[test]
    fn a_list_without_a_cycle_is_never_stopped() {
        for len in 0..300u32 {
            assert_eq!(
                run(0, |p| (p + 1 < len).then_some(p + 1), u64::MAX),
                None,
                "{len}"
            );
        }
    }

    #[test]
    fn reset_starts_a_new_walk() {
        let mut g = CycleGuard::new();
        assert!(g.step(7u32));
        assert!(!g.step(7));
        g.reset();
        assert_eq!(g.steps(), 0);
        assert!(g.step(7));
    }
}
