//! Linear read-ahead.
//!
//! A scan reads pages in ascending order; reading them one at a time costs a round trip
//! each. InnoDB notices the pattern per **extent** (64 pages of 16 KiB, 1 MiB): when enough of
//! an extent's pages (`read_ahead_threshold`, default 56 of 64) were first accessed in
//! ascending order, it reads the *whole next extent* with one batch of IO, so the scan finds
//! those pages already cached.
//!
//! Here each instance keeps a few trackers (space, extent, last page, count), hashed by
//! extent. Every *first* access to a page since it was read (pages brought in by read-ahead
//! count too, so a scan keeps triggering the next extent) feeds its tracker: a higher page
//! number than the last adds one, a lower one starts over. At the threshold the next extent's
//! uncached pages are claimed from free frames or clean LRU-tail pages (never by flushing:
//! read-ahead is a hint, not worth a write) and read with one [`Tablespace::read_pages`] batch
//! (one `io_uring` submission on that backend), then placed at the head of the old sublist.
//! The read happens in the thread whose access triggered it.

use std::sync::atomic::Ordering;

use minnow_io::Tablespace;
use minnow_page::PageId;
use parking_lot::Mutex;

use crate::hash::fold;
use crate::pool::Shared;

const TRACKERS: usize = 32;

#[derive(Debug, Clone, Copy, Default)]
struct Tracker {
    space: u32,
    extent: u32,
    last: u32,
    count: u32,
    used: bool,
}

/// Read-ahead trackers, one small table per instance.
#[derive(Debug)]
pub(crate) struct ReadAhead {
    tables: Vec<Mutex<[Tracker; TRACKERS]>>,
}

impl ReadAhead {
    pub(crate) fn new(instances: usize) -> ReadAhead {
        ReadAhead {
            tables: (0..instances)
                .map(|_| Mutex::new([Tracker::default(); TRACKERS]))
                .collect(),
        }
    }
}

impl Shared {
    /// Ascending accesses of an extent needed to read the next one (0: off).
    fn read_ahead_threshold(&self) -> u32 {
        let ppe = self.cfg.page_size.pages_per_extent();
        self.cfg.read_ahead_threshold * ppe / 64
    }

    /// Feeds the first access of `id` to its tracker; reads the next extent at the threshold.
    pub(crate) fn note_first_access(&self, id: PageId) {
        let threshold = self.read_ahead_threshold();
        if threshold == 0 {
            return;
        }
        let ppe = self.cfg.page_size.pages_per_extent();
        let extent = id.page_no / ppe;
        let ii = self.instance_of(id);
        let slot = (fold(PageId::new(id.space, extent).to_u64()) % TRACKERS as u64) as usize;
        let fire = {
            let mut table = self.readahead.tables[ii].lock();
            let t = &mut table[slot];
            if !t.used || t.space != id.space || t.extent != extent {
                *t = Tracker {
                    space: id.space,
                    extent,
                    last: id.page_no,
                    count: 1,
                    used: true,
                };
            } else if id.page_no > t.last {
                t.last = id.page_no;
                t.count += 1;
            } else {
                t.last = id.page_no;
                t.count = 1;
            }
            t.count == threshold
        };
        if fire && let Some(space) = self.spaces.get(id.space) {
            self.read_extent(&space, extent.saturating_add(1));
        }
    }

    /// Claims a frame for `id` without flushing; `None` if cached or no frame is free/clean.
    pub(crate) fn claim_quiet(&self, id: PageId) -> Option<u32> {
        let ii = self.instance_of(id);
        let inst = &self.instances[ii];
        let key = id.to_u64();
        let mut h = inst.hash.write();
        if h.lookup(key, |l| {
            self.ctl(inst.base + l).page_id.load(Ordering::Acquire)
        })
        .is_some()
        {
            return None;
        }
        let f = self.take_frame(ii, &mut h)?;
        let c = self.ctl(f);
        c.page_id.store(key, Ordering::Release);
        c.pin();
        h.insert(key, f - inst.base);
        Some(f)
    }

    /// Reads the uncached pages of `extent` with one batch; returns how many were read.
    pub(crate) fn read_extent(&self, space: &Tablespace, extent: u32) -> usize {
        let ppe = self.cfg.page_size.pages_per_extent();
        let first = extent.saturating_mul(ppe);
        let end = first.saturating_add(ppe).min(space.size_in_pages());
        let mut claimed: Vec<(u32, u32)> = Vec::new();
        for no in first..end {
            let id = PageId::new(space.space_id(), no);
            if self.contains(id) {
                continue;
            }
            match self.claim_quiet(id) {
                Some(f) => claimed.push((f, no)),
                None if self.contains(id) => continue,
                None => break,
            }
        }
        if claimed.is_empty() {
            return 0;
        }
        let mut batch: Vec<(u32, &mut [u8])> = claimed
            .iter()
            // SAFETY: each frame was claimed above, latched exclusively by this thread, and
            // the frames are distinct, so the mutable slices do not overlap.
            .map(|&(f, no)| (no, unsafe { self.frames.slice_mut(f) }))
            .collect();
        let ok = space.read_pages(&mut batch).is_ok();
        drop(batch);
        for &(f, no) in &claimed {
            let ii = self.instance_of(PageId::new(space.space_id(), no));
            // (publish_read fails only in a lab starter; read-ahead is advisory, and the page
            // is read, with the error, when somebody asks for it.)
            if ok && self.publish_read(ii, f).is_ok() {
                self.instances[ii]
                    .stats
                    .bump(crate::stats::Counter::ReadAhead);
                let c = self.ctl(f);
                c.unlock_x();
                c.unpin();
            } else {
                // A bad page is reported when somebody actually reads it.
                self.discard(f);
            }
        }
        if ok { claimed.len() } else { 0 }
    }
}
