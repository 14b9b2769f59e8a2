//! Deterministic interleavings for tests: fixed points in the read and write paths where a
//! test can pause a thread and run something else meanwhile (a rollback between a read and
//! its visibility decision, a writer that starts after a read took its bound).
//!
//! Compiled only with the `test-hooks` feature, which the `minnow` crate's dev-dependency on
//! this crate turns on: a normal build has no hook module and no call to one (the call sites
//! are `#[cfg(feature = "test-hooks")]`). With the feature on and no hook installed, a
//! point costs one relaxed load of a flag nobody writes.
//!
//! A hook is installed for one thread ([`install`]) and runs only when that thread passes a
//! [`Point`]; tests in other threads pass their points untouched.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::ThreadId;

use minnow_btree::tree::Parallel;

/// Where a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    /// An autocommit point read has read the bound of ended transactions, not the record yet.
    FastGetBoundTaken,
    /// An autocommit point read has read the record and let its latch go, and not yet
    /// decided whether the record's writer committed.
    FastGetRead,
    /// A write statement holds its latches (the quiesce latch and the table's metadata lock,
    /// shared) and has not started its work.
    StatementLatched,
}

/// A hook: called with each point the thread it was installed for passes.
pub type Hook = Arc<dyn Fn(Point) + Send + Sync>;

/// The installed hook and the one thread it runs for (other tests run in parallel threads).
static HOOK: Mutex<Option<(ThreadId, Hook)>> = Mutex::new(None);

/// True while a hook is installed: the only thing a point reads when none is.
static INSTALLED: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Set by a test: how this thread's counts walk, in place of the configured threads
    /// (capped by the machine's cores) and the leaves a table needs.
    static PARALLEL: Cell<Option<Parallel>> = const { Cell::new(None) };
}

/// Runs the installed hook if it was installed for this thread (not holding the slot while
/// it runs: other threads pass their points meanwhile).
pub fn hook(point: Point) {
    if !INSTALLED.load(Ordering::Relaxed) {
        return;
    }
    let f = {
        let guard = HOOK.lock().unwrap_or_else(PoisonError::into_inner);
        match guard.as_ref() {
            Some((thread, f)) if *thread == std::thread::current().id() => Some(f.clone()),
            _ => None,
        }
    };
    if let Some(f) = f {
        f(point);
    }
}

/// Installs `f` for the calling thread, replacing any hook installed before.
pub fn install(f: Hook) {
    *HOOK.lock().unwrap_or_else(PoisonError::into_inner) = Some((std::thread::current().id(), f));
    INSTALLED.store(true, Ordering::Relaxed);
}

/// Removes the installed hook.
pub fn uninstall() {
    *HOOK.lock().unwrap_or_else(PoisonError::into_inner) = None;
    INSTALLED.store(false, Ordering::Relaxed);
}

/// Makes the calling thread's counts walk as `p` says (`None`: as configured again).
pub fn set_parallel(p: Option<Parallel>) {
    PARALLEL.with(|c| c.set(p));
}

/// The walk a test set for this thread's counts, if any.
pub fn parallel() -> Option<Parallel> {
    PARALLEL.with(Cell::get)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hook_runs_only_for_the_thread_it_was_installed_for() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = Arc::clone(&seen);
        install(Arc::new(move |p| s.lock().unwrap().push(p)));
        hook(Point::FastGetRead);
        std::thread::spawn(|| hook(Point::StatementLatched))
            .join()
            .unwrap();
        uninstall();
        hook(Point::FastGetBoundTaken);
        assert_eq!(*seen.lock().unwrap(), [Point::FastGetRead]);
    }
}
