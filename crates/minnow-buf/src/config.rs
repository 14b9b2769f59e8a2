//! Configuration of the buffer pool: one field per `innodb_*` setting it honours.
//!
//! Every field is named after the InnoDB variable it mirrors (the doc comment names it), so a
//! bench that reproduces an article can set exactly what the article changed.
//! [`BufConfig::validate`] rejects values InnoDB would reject instead of silently clamping them.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use minnow_page::PageSize;

use crate::BufError;

/// `innodb_flush_neighbors`: which other dirty pages of the same extent a flush takes along.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FlushNeighbors {
    /// 0: only the page itself (the 8.0 default, right for SSDs).
    #[default]
    Off,
    /// 1: the run of contiguous dirty pages around it in the same extent (5.7's default: one
    /// long sequential write instead of many seeks on a spinning disk).
    Contiguous,
    /// 2: every dirty page of the extent.
    Extent,
}

impl FlushNeighbors {
    /// From the numeric setting 0, 1, 2.
    pub fn from_setting(v: u8) -> Option<FlushNeighbors> {
        match v {
            0 => Some(FlushNeighbors::Off),
            1 => Some(FlushNeighbors::Contiguous),
            2 => Some(FlushNeighbors::Extent),
            _ => None,
        }
    }
}

/// The time source of the LRU's `old_blocks_time` test. Real by default; tests use a manual
/// clock they advance by hand, so that "a second later" needs no sleeping.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    manual: Option<Arc<AtomicU64>>,
}

impl Clock {
    /// The real monotonic clock.
    pub fn real() -> Clock {
        Clock { manual: None }
    }

    /// A clock that only moves when [`Clock::advance`] is called (starts at 1 ms).
    pub fn manual() -> Clock {
        Clock {
            manual: Some(Arc::new(AtomicU64::new(1))),
        }
    }

    /// Moves a manual clock forward (no effect on the real clock).
    pub fn advance(&self, by: Duration) {
        if let Some(ms) = &self.manual {
            ms.fetch_add(by.as_millis() as u64, Ordering::Relaxed);
        }
    }

    /// Milliseconds since `epoch` (at least 1, so that 0 can mean "never"), as a `u32`
    /// (wraps after 49 days; only differences are used).
    pub(crate) fn now_ms(&self, epoch: Instant) -> u32 {
        let ms = match &self.manual {
            Some(ms) => ms.load(Ordering::Relaxed),
            None => epoch.elapsed().as_millis() as u64 + 1,
        };
        (ms as u32).max(1)
    }
}

/// Buffer pool settings.
#[derive(Debug, Clone)]
pub struct BufConfig {
    /// `innodb_buffer_pool_size`: bytes of page frames (rounded down to whole pages per
    /// instance; at least 8 frames per instance). Default 64 MiB, which `minnow::Config`
    /// takes from here (InnoDB's default is 128 MiB; minnow's is smaller because tests and
    /// tools open many small databases).
    pub pool_size: usize,
    /// `innodb_page_size`: the size of every frame.
    pub page_size: PageSize,
    /// `innodb_buffer_pool_instances`: shards, each with its own page hash, LRU, free list and
    /// flush list. A page belongs to instance `hash(space, page_no / 64) % instances`.
    pub instances: usize,
    /// `innodb_old_blocks_pct` (5..=95, default 37): share of the LRU that is the old sublist.
    pub old_blocks_pct: u32,
    /// `innodb_old_blocks_time` (default 1000 ms): an old page is made young on access only if
    /// its first access was at least this long ago.
    pub old_blocks_time: Duration,
    /// `innodb_page_cleaners` (default 1 here): background flushing threads; 0 means flushing
    /// happens only on demand in the threads that need a frame or log space.
    pub page_cleaners: usize,
    /// `innodb_doublewrite_pages`: pages per flush batch (one doublewrite batch).
    pub doublewrite_pages: usize,
    /// `innodb_flush_neighbors` (0/1/2).
    pub flush_neighbors: FlushNeighbors,
    /// `innodb_io_capacity` (default 200): pages per second background flushing aims at when
    /// adaptive flushing asks for 100 %; the page cleaners pace themselves with it.
    pub io_capacity: u32,
    /// `innodb_max_dirty_pages_pct` (default 90): above this share of dirty frames the cleaners
    /// flush at full `io_capacity`.
    pub max_dirty_pages_pct: u32,
    /// `innodb_max_dirty_pages_pct_lwm` (default 10): below this share, dirty pages alone do
    /// not trigger flushing.
    pub max_dirty_pages_pct_lwm: u32,
    /// `innodb_read_ahead_threshold` (0..=64, default 56): linear read-ahead fetches the next
    /// extent once this many pages of an extent were first accessed in ascending order
    /// (scaled to the extent size for 4 and 8 KiB pages). 0 turns read-ahead off.
    pub read_ahead_threshold: u32,
    /// `innodb_buffer_pool_dump_pct` (1..=100, default 25): share of each instance's most
    /// recently used pages written to `ib_buffer_pool` at shutdown.
    pub dump_pct: u32,
    /// `innodb_buffer_pool_dump_at_shutdown` / `_load_at_startup` with the data directory:
    /// where `ib_buffer_pool` lives. `None` disables dump and load.
    pub dump_dir: Option<PathBuf>,
    /// The clock of the `old_blocks_time` test.
    pub clock: Clock,
    /// Memory for parsed redo during recovery, in bytes: when the redo waiting to be applied
    /// reaches it, recovery applies that batch page by page and frees it (InnoDB's
    /// `recv_sys` budget). `None`: a quarter of `pool_size`. At least 4 MiB either way.
    pub recovery_memory: Option<usize>,
    /// Called with recovery's progress (see [`crate::RecoveryProgress`]); `None`: silent.
    pub recovery_progress: Option<crate::RecoveryProgressHook>,
}

impl Default for BufConfig {
    fn default() -> Self {
        BufConfig {
            pool_size: 64 << 20,
            page_size: PageSize::K16,
            instances: 1,
            old_blocks_pct: 37,
            old_blocks_time: Duration::from_millis(1000),
            page_cleaners: 1,
            doublewrite_pages: 64,
            flush_neighbors: FlushNeighbors::Off,
            io_capacity: 200,
            max_dirty_pages_pct: 90,
            max_dirty_pages_pct_lwm: 10,
            read_ahead_threshold: 56,
            dump_pct: 25,
            dump_dir: None,
            clock: Clock::real(),
            recovery_memory: None,
            recovery_progress: None,
        }
    }
}

/// The fewest frames an instance may have.
pub const MIN_FRAMES_PER_INSTANCE: usize = 8;

impl BufConfig {
    /// A small pool of `frames` frames of `page_size` in one instance (for tests and tools).
    pub fn with_frames(frames: usize, page_size: PageSize) -> BufConfig {
        BufConfig {
            pool_size: frames * page_size.bytes(),
            page_size,
            ..BufConfig::default()
        }
    }

    /// Frames per instance.
    pub fn frames_per_instance(&self) -> usize {
        self.pool_size / self.page_size.bytes() / self.instances.max(1)
    }

    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), BufError> {
        let bad = |reason: String| Err(BufError::Config { reason });
        if self.instances == 0 || self.instances > 64 {
            return bad(format!("instances = {} (1..=64)", self.instances));
        }
        if self.frames_per_instance() < MIN_FRAMES_PER_INSTANCE {
            return bad(format!(
                "pool_size {} gives {} frames per instance (at least {MIN_FRAMES_PER_INSTANCE})",
                self.pool_size,
                self.frames_per_instance()
            ));
        }
        if self.frames_per_instance() >= u32::MAX as usize / 2 {
            return bad("too many frames per instance".into());
        }
        if !(5..=95).contains(&self.old_blocks_pct) {
            return bad(format!("old_blocks_pct = {} (5..=95)", self.old_blocks_pct));
        }
        if self.doublewrite_pages == 0 {
            return bad("doublewrite_pages = 0".into());
        }
        if self.io_capacity < 100 {
            return bad(format!("io_capacity = {} (at least 100)", self.io_capacity));
        }
        if self.max_dirty_pages_pct > 99 || self.max_dirty_pages_pct_lwm > self.max_dirty_pages_pct
        {
            return bad(format!(
                "max_dirty_pages_pct = {}, lwm = {} (lwm <= pct <= 99)",
                self.max_dirty_pages_pct, self.max_dirty_pages_pct_lwm
            ));
        }
        if self.read_ahead_threshold > 64 {
            return bad(format!(
                "read_ahead_threshold = {} (0..=64)",
                self.read_ahead_threshold
            ));
        }
        if !(1..=100).contains(&self.dump_pct) {
            return bad(format!("dump_pct = {} (1..=100)", self.dump_pct));
        }
        Ok(())
    }
}
