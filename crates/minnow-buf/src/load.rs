//! Warm restart, the reading half: loading the pages `ib_buffer_pool` lists.
//!
//! A restarted server is slow until its working set is back in the pool. Reading the dumped
//! pages one at a time from one thread would add one more reader to the queue, no faster than
//! the server's own misses; InnoDB instead issues the dump's reads **many at a time, in page
//! order, in the background** (`buf_load`: asynchronous reads, sorted by space and page). So
//! does this loader:
//!
//! ```text
//!  ib_buffer_pool ──decode──► sort by (space, page), dedup ──► batches of LOAD_BATCH pages
//!                                                                   │ (one space each)
//!       LOAD_THREADS readers take the batches in order ◄────────────┘
//!         per page: beyond the file's end or space unknown? skip (missing)
//!                   already in the pool?                 skip (resident)
//!                   a free frame in its instance?        claim it, else skip (no frame)
//!         read the claimed pages with one Tablespace::read_pages (one io_uring submission
//!         on that backend; pread after pread on the sync backend), verify each
//!         publish them at the head of the old sublist, as read-ahead does
//! ```
//!
//! **Many reads at once.** With the `io_uring` backend each batch is one submission, so up to
//! `LOAD_THREADS × LOAD_BATCH` reads are in flight; with the synchronous backend the readers
//! still keep `LOAD_THREADS` reads in flight. Batches are cut from the sorted list, so the
//! reads go out in ascending page order: on a spinning disk (or `minnow-io`'s latency model)
//! neighbouring pages are served without a seek.
//!
//! **Never in the readers' way.** The load only takes *free* frames, never evicts a page,
//! and never flushes: once an instance has no free frame, that instance's remaining pages are
//! skipped, and once no instance has one the load stops (InnoDB's load likewise reads no more
//! than the pool holds). A page already resident (read meanwhile by a query) is skipped, so
//! no page is read twice.
//!
//! **Stoppable.** Every reader checks the pool's `stopping` flag before each page it claims;
//! close sets it and waits for the readers, which finish only the batch they have in flight.
//!
//! **Damage is a count, not a crash.** A dump file that does not decode is a typed error
//! ([`crate::BufError::Dump`]); a listed page that no longer exists is counted as missing; a
//! page whose read or checksum fails is counted as unreadable and left for the query that
//! needs it to report (the batch is then re-read page by page, so its good pages still load).
//! What a load did is a [`LoadReport`].

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use minnow_io::Tablespace;
use minnow_page::PageId;

use crate::BufError;
use crate::dump::decode_dump;
use crate::pool::Shared;
use crate::stats::Counter;

/// Pages per read batch (one `io_uring` submission on that backend).
pub const LOAD_BATCH: usize = 32;
/// Reader threads of a load.
pub const LOAD_THREADS: usize = 4;

/// What one load of `ib_buffer_pool` did. Every distinct listed page is counted once, in
/// exactly one of `loaded`, `resident`, `missing`, `unreadable` or `not_loaded`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadReport {
    /// Distinct pages the dump listed.
    pub listed: usize,
    /// Pages read into the pool.
    pub loaded: usize,
    /// Pages skipped because they were already in the pool.
    pub resident: usize,
    /// Pages skipped because their tablespace is not open or they lie beyond its end.
    pub missing: usize,
    /// Pages whose read or verification failed (left for a query to report).
    pub unreadable: usize,
    /// Pages not read for want of a free frame, or because the load was stopped.
    pub not_loaded: usize,
    /// True if close stopped the load before it went through the list.
    pub stopped: bool,
}

/// Counters the readers share.
#[derive(Default)]
struct Tally {
    loaded: AtomicUsize,
    resident: AtomicUsize,
    missing: AtomicUsize,
    unreadable: AtomicUsize,
    stopped: AtomicBool,
    /// Set when no instance has a free frame left: the readers stop.
    full: AtomicBool,
}

impl Tally {
    fn add(counter: &AtomicUsize, n: usize) {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}

/// Cuts the sorted, deduplicated `pages` into batches of at most [`LOAD_BATCH`] pages of one
/// space each.
fn batches(pages: &[PageId]) -> Vec<&[PageId]> {
    let mut out = Vec::new();
    for same_space in pages.chunk_by(|a, b| a.space == b.space) {
        out.extend(same_space.chunks(LOAD_BATCH));
    }
    out
}

impl Shared {
    /// Loads the pages listed in the dump at `path` (see the module docs); runs the readers
    /// in this thread's scope and returns when they are done.
    pub(crate) fn load_dump(&self, path: &Path) -> Result<LoadReport, BufError> {
        let text = std::fs::read_to_string(path).map_err(|e| BufError::Dump {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        let mut pages = decode_dump(path, &text)?;
        pages.sort_unstable();
        pages.dedup();
        let work = batches(&pages);
        let next = AtomicUsize::new(0);
        let tally = Tally::default();
        std::thread::scope(|s| {
            for _ in 0..LOAD_THREADS.min(work.len()) {
                s.spawn(|| {
                    while let Some(batch) = work.get(next.fetch_add(1, Ordering::Relaxed)) {
                        if !self.load_batch(batch, &tally) {
                            break;
                        }
                    }
                });
            }
        });
        let get = |c: &AtomicUsize| c.load(Ordering::Relaxed);
        let (loaded, resident) = (get(&tally.loaded), get(&tally.resident));
        let (missing, unreadable) = (get(&tally.missing), get(&tally.unreadable));
        Ok(LoadReport {
            listed: pages.len(),
            loaded,
            resident,
            missing,
            unreadable,
            not_loaded: pages.len() - loaded - resident - missing - unreadable,
            stopped: tally.stopped.load(Ordering::Relaxed),
        })
    }

    /// Claims frames for the pages of `batch` that need reading, reads them with one batch
    /// and publishes them. Returns false when the load should stop (close, or a full pool).
    fn load_batch(&self, batch: &[PageId], tally: &Tally) -> bool {
        let Some(space) = batch.first().and_then(|id| self.spaces.get(id.space)) else {
            Tally::add(&tally.missing, batch.len());
            return true;
        };
        let mut claimed: Vec<(u32, u32)> = Vec::with_capacity(batch.len());
        let mut go_on = true;
        for &id in batch {
            if self.stopping.load(Ordering::Acquire) {
                tally.stopped.store(true, Ordering::Relaxed);
                go_on = false;
                break;
            }
            if tally.full.load(Ordering::Relaxed) {
                go_on = false;
                break;
            }
            if id.page_no >= space.size_in_pages() {
                Tally::add(&tally.missing, 1);
                continue;
            }
            if self.contains(id) {
                Tally::add(&tally.resident, 1);
                continue;
            }
            match self.claim_quiet(id, true) {
                Some(f) => claimed.push((f, id.page_no)),
                None if self.contains(id) => Tally::add(&tally.resident, 1),
                None => {
                    let no_free =
                        |i: &crate::instance::Instance| i.free_len.load(Ordering::Relaxed) == 0;
                    if self.instances.iter().all(no_free) {
                        tally.full.store(true, Ordering::Relaxed);
                    }
                }
            }
        }
        if !claimed.is_empty() {
            self.read_claimed(&space, &claimed, tally);
        }
        go_on
    }

    /// Reads the claimed `(frame, page_no)`s of `space` with one batch; if the batch fails,
    /// page by page, so that one bad page costs only itself.
    fn read_claimed(&self, space: &Tablespace, claimed: &[(u32, u32)], tally: &Tally) {
        let all_ok = self.read_claimed_batch(space, claimed);
        for &(f, no) in claimed {
            // SAFETY: `claim_quiet` latched the frame exclusively for this thread.
            let ok = all_ok
                || space
                    .read_page(no, unsafe { self.frames.slice_mut(f) })
                    .is_ok();
            if !ok {
                // A damaged page is reported when somebody actually reads it.
                self.discard(f);
                Tally::add(&tally.unreadable, 1);
            } else if self.publish_claimed(f, PageId::new(space.space_id(), no), Counter::Reads) {
                Tally::add(&tally.loaded, 1);
            }
            // (else a lab starter's LRU refused the page: it is not loaded, and not counted.)
        }
    }
}
