//! [`Config`]: the knobs of a database, each named after the `innodb_*` variable it mirrors.
//!
//! Only knobs that the lower crates actually implement are here; each is passed down as is
//! ([`minnow_buf::BufConfig`], [`minnow_dblwr::DoublewriteConfig`], the redo log, the
//! tablespace). [`Config::validate`] checks them all and names the first bad one in
//! [`Error::Config`].
//!
//! The table below is rendered from the knob registry ([`KNOBS`], the `knobs` module), which
//! also gives [`Config::set`] and the CLI's `--set` their names and parsers; a test fails if
//! the two drift apart. Defaults are [`Config::default`]'s, written as `--set` takes them.
//!
//! <!-- knobs table: rendered by config::knobs::Knob::docs_table -->
//! | knob | InnoDB variable | default | values | what it does | acts in, when |
//! |---|---|---|---|---|---|
//! | `buffer_pool_size` | `innodb_buffer_pool_size` | `64M` | bytes, with an optional K, M or G suffix | bytes of page frames (at least 8 frames per instance) | buffer pool (minnow-buf): every open |
//! | `buffer_pool_instances` | `innodb_buffer_pool_instances` | `1` | 1..=64 | independent pools, each with its own lists and mutexes | buffer pool (minnow-buf): every open |
//! | `page_size` | `innodb_page_size` | `16k` | `4k`, `8k`, `16k`, `32k`, `64k` or bytes | size of every page; open requires the size the files have | file format (minnow-page): create |
//! | `flush_log_at_trx_commit` | `innodb_flush_log_at_trx_commit` | `1` | `0`, `1` or `2` | 1: a commit syncs the redo log; 2: writes it, synced by the flusher; 0: neither | redo log (minnow-redo): every commit |
//! | `flush_log_at_timeout` | `innodb_flush_log_at_timeout` | `1s` | a duration, 1ms ..= 2700s (a plain number is milliseconds) | how often the flusher writes and syncs the log under 0 and 2 | log flusher thread (minnow-redo): every open |
//! | `log_file_size` | `innodb_log_file_size` / `innodb_redo_log_capacity` | `0` | bytes, with an optional K, M or G suffix | capacity of the circular redo log; 0: the larger of 100 MiB and the pool | redo log (minnow-redo): create (an existing log keeps its size) |
//! | `doublewrite` | `innodb_doublewrite` | `on` | `on`/`1`, `off`/`0`, `detect_only` | copy each flush batch to the doublewrite files before writing it in place | doublewrite buffer (minnow-dblwr): every open |
//! | `doublewrite_pages` | `innodb_doublewrite_pages` | `64` | a whole number | pages per doublewrite batch | doublewrite buffer (minnow-dblwr): every open |
//! | `flush_method` | `innodb_flush_method` | `fsync` | `fsync`, `O_DIRECT`, `O_DSYNC` | how writes reach the disk | file IO (minnow-io): every open |
//! | `io_backend` | (minnow) | `sync` | `sync`, `io_uring` | `pread`/`pwrite`, `io_uring`, or a backend passed in code (`custom`) | file IO (minnow-io): every open |
//! | `write_io_threads` | `innodb_write_io_threads` | `4` | 1..=64 | with `io_backend=sync`, writes of one batch (a flush batch's pages in place) in flight at once, each on its own thread; io_uring submits a whole batch at once whatever this is | file IO (minnow-io): every open |
//! | `page_cleaners` | `innodb_page_cleaners` | `1` | a whole number | background flushing threads; 0 flushes only on demand | page cleaner threads (minnow-buf): every open |
//! | `checksum_algorithm` | `innodb_checksum_algorithm` | `crc32` | `crc32`, `innodb`, `none`, `full_crc32` | pages are written with it; reads accept every algorithm | file format (minnow-page): create; every page written |
//! | `old_blocks_pct` | `innodb_old_blocks_pct` | `37` | 5..=95 | share of the LRU list kept as the old sublist | buffer pool (minnow-buf): every open |
//! | `old_blocks_time` | `innodb_old_blocks_time` | `1s` | a duration (`250ms`, `2s`; a plain number is milliseconds) | how long a page stays old after its first access before a hit makes it young | buffer pool (minnow-buf): every open |
//! | `io_capacity` | `innodb_io_capacity` | `200` | a whole number, at least 100 | pages per second background flushing aims at | page cleaner threads (minnow-buf): every open |
//! | `flush_neighbors` | `innodb_flush_neighbors` | `0` | `0`, `1` or `2` | 0: flush a page alone; 1: with its contiguous dirty neighbours; 2: its extent | page cleaner threads (minnow-buf): every open |
//! | `max_dirty_pages_pct` | `innodb_max_dirty_pages_pct` | `90` | a whole number of per cent | above this share of dirty frames the cleaners flush at full io_capacity | page cleaner threads (minnow-buf): every open |
//! | `max_dirty_pages_pct_lwm` | `innodb_max_dirty_pages_pct_lwm` | `10` | a whole number of per cent | below this share of dirty frames, dirty pages alone do not start flushing | page cleaner threads (minnow-buf): every open |
//! | `read_ahead_threshold` | `innodb_read_ahead_threshold` | `56` | 0..=64 | pages of an extent read in order before linear read-ahead fetches the next; 0: off | buffer pool (minnow-buf): every open |
//! | `buffer_pool_dump_at_shutdown` | `innodb_buffer_pool_dump_at_shutdown` / `innodb_buffer_pool_load_at_startup` | `on` | `on`/`off` (`1`/`0`, `true`/`false`) | write the pool's page list to `ib_buffer_pool` at close, load it at open | buffer pool (minnow-buf): close and open |
//! | `buffer_pool_dump_pct` | `innodb_buffer_pool_dump_pct` | `25` | 1..=100 | share of each instance's most recently used pages the dump keeps | buffer pool (minnow-buf): close |
//! | `autoinc_lock_mode` | `innodb_autoinc_lock_mode` | `2` | `0`, `1` or `2` | 0 traditional, 1 consecutive, 2 interleaved (see `AutoIncLockMode`) | row statements (minnow): every insert into a table with an AUTO_INCREMENT column |
//! | `lock_wait_timeout` | `innodb_lock_wait_timeout` | `50s` | a duration, at least 1ms (a plain number is seconds) | how long a writer waits for a row lock before its statement fails | row statements (minnow): every open |
//! | `bulk_insert_buffer_size` | (minnow) | `0` | bytes, with an optional K, M or G suffix | memory a transaction's buffered inserts into an empty table may take; 0: half of buffer_pool_size | row statements (minnow): every insert into an empty table |
//! | `purge_threads` | `innodb_purge_threads` | `1` | `0` or `1` | 1: a background thread purges; 0: only `Database::purge` does | purge thread (minnow): every open |
//! | `fast_shutdown` | `innodb_fast_shutdown` | `1` | `0` or `1` | 1: close without waiting for purge; 0: purge fully, then close (the freed undo is cut off the file's end) | purge thread (minnow): close |
//! | `rollback_segments` | `innodb_rollback_segments` | `16` | 1..=128 | rollback segments undo is spread over, each with its own lock | rollback segments (minnow-mvcc): create (open uses the stored number) |
//! | `status_file` | `innodb_status_file` | `off` | `off` or a duration, at least 10ms (a plain number is milliseconds; 0: off) | rewrite `minnow_status.json` at this interval for `minnow status`/`watch` | status file thread (minnow): every open |
//! | `adaptive_hash_index` | `innodb_adaptive_hash_index` | `on` | `on`/`off` (`1`/`0`, `true`/`false`) | hash of hot leaf records that lets point lookups skip the descent | adaptive hash index (minnow-ahi): every open; `Database::set_adaptive_hash_index` at runtime |
//! | `adaptive_hash_index_parts` | `innodb_adaptive_hash_index_parts` | `64` | 1..=4096 | partitions of the hash, chosen by key hash (rounded up to a power of two) | adaptive hash index (minnow-ahi): every open |
//! | `adaptive_hash_index_max_memory` | (minnow) | `128M` | bytes, with an optional K, M or G suffix | the most memory the hash's entries may take; entries beyond it are not added | adaptive hash index (minnow-ahi): every open |
//! | `thread_concurrency` | `innodb_thread_concurrency` | `0` | a whole number | threads allowed inside the engine at once; 0: no limit | admission (minnow): every open |
//! | `concurrency_tickets` | `innodb_concurrency_tickets` | `5000` | a whole number, at least 1 | row operations a thread may do after entering before it queues again | admission (minnow): every open |
//! | `parallel_read_threads` | `innodb_parallel_read_threads` | `4` | 1..=256 | threads a `count()` walks the leaf level with, at most the available parallelism; 1: one walk | row statements (minnow): every count |
//! | `compression_failure_threshold_pct` | `innodb_compression_failure_threshold_pct` | `5` | 0..=100 | failure share above which an index's pages get more padding; 0: no padding | compressed indexes (minnow-btree): every open |
//! | `compression_pad_pct_max` | `innodb_compression_pad_pct_max` | `50` | 0..=75 | the most padding, in per cent of the page | compressed indexes (minnow-btree): every open |
//! | `merge_threshold` | (minnow) | `50` | 1..=50 | InnoDB's per-index MERGE_THRESHOLD, for every index: a page a delete leaves less full than this (per cent of its record space) merges with a sibling if the two fit | B-tree merges (minnow-btree): every open |
//! | `recovery_progress` | (minnow) | `none` | none from text | a function told how far crash recovery has come (set in code) | crash recovery (minnow-buf): open after a crash |

use std::sync::Arc;
use std::time::Duration;

use minnow_buf::{BufConfig, FlushNeighbors};
use minnow_dblwr::DoublewriteMode;
use minnow_io::{Backend, FlushMethod, SyncBackend, UringBackend};
use minnow_page::PageSize;
use minnow_page::checksum::ChecksumAlgorithm;
use minnow_redo::FlushAtCommit;

use crate::error::{Error, Result};

mod knobs;

pub use knobs::{Acts, KNOBS, Knob, KnobError};

/// How the database's files are read and written.
#[derive(Debug, Clone, Default)]
pub enum IoBackend {
    /// Synchronous `pread`/`pwrite` ([`minnow_io::SyncBackend`]).
    #[default]
    Sync,
    /// `io_uring` ([`minnow_io::UringBackend`]); opening fails with an IO error if the kernel
    /// refuses it (there is no silent fallback).
    IoUring,
    /// A backend you construct: a [`minnow_io::CrashSim`] for crash tests, a
    /// [`minnow_io::LatencyModel`] for experiments, or your own [`Backend`]. Every file of
    /// the database (tablespace, redo log, doublewrite segments) goes through it; the
    /// `ib_buffer_pool` dump is written with ordinary file IO.
    Custom(Arc<dyn Backend>),
}

/// The IO backend `io` names, made ready (an io_uring ring is set up here); the sync backend
/// with `write_io_threads` write threads.
pub fn backend(io: &IoBackend, write_io_threads: usize) -> Result<Arc<dyn Backend>> {
    Ok(match io {
        IoBackend::Sync => Arc::new(SyncBackend::with_write_threads(write_io_threads)),
        IoBackend::IoUring => Arc::new(UringBackend::new()?),
        IoBackend::Custom(b) => Arc::clone(b),
    })
}

/// `innodb_autoinc_lock_mode`: how inserts into a table with an AUTO_INCREMENT column get
/// their values (see the `autoinc` module docs for what each mode does in minnow today).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AutoIncLockMode {
    /// 0, "traditional": every insert statement holds the table's AUTO-INC lock until it
    /// ends, so one statement's generated values are consecutive and insert statements on
    /// the table run one after another.
    Traditional,
    /// 1, "consecutive" (MySQL's default up to 8.0.2): a statement whose row count is known
    /// up front (a "simple insert": `Table::insert`, or
    /// `Table::insert_many` of an iterator with an exact size) reserves that many
    /// values under the AUTO-INC lock and releases it at once; one whose count is unknown (a
    /// "bulk insert") holds the lock to its end, as in mode 0.
    Consecutive,
    /// 2, "interleaved" (MySQL's default since 8.0.3, and minnow's): no statement takes the
    /// AUTO-INC lock; each row takes the next value under a light mutex, so concurrent
    /// multi-row statements interleave their values.
    #[default]
    Interleaved,
}

impl AutoIncLockMode {
    /// The `innodb_autoinc_lock_mode` number: 0, 1 or 2.
    pub fn as_innodb(self) -> u8 {
        match self {
            AutoIncLockMode::Traditional => 0,
            AutoIncLockMode::Consecutive => 1,
            AutoIncLockMode::Interleaved => 2,
        }
    }
}

impl TryFrom<u8> for AutoIncLockMode {
    type Error = Error;

    /// The mode for an `innodb_autoinc_lock_mode` number; anything but 0, 1, 2 is
    /// [`Error::Config`].
    fn try_from(n: u8) -> Result<AutoIncLockMode> {
        match n {
            0 => Ok(AutoIncLockMode::Traditional),
            1 => Ok(AutoIncLockMode::Consecutive),
            2 => Ok(AutoIncLockMode::Interleaved),
            _ => Err(Error::Config {
                knob: "innodb_autoinc_lock_mode",
                reason: format!("{n} is not 0 (traditional), 1 (consecutive) or 2 (interleaved)"),
            }),
        }
    }
}

/// Settings of a database. Start from [`Config::default`] and change fields:
///
/// ```
/// # mod minnow { // the items as the `minnow` crate (which depends on this one) re-exports them
/// #     pub use minnow_btree::record::ColumnType;
/// #     pub use minnow_engine::Compression;
/// #     pub use minnow_zip::KeyBlockSize;
/// #     pub use minnow_engine::config::{Config, KnobError};
/// #     pub use minnow_engine::{ColumnDef, Error, IndexDef, TableDef};
/// #     pub use minnow_redo::FlushAtCommit;
/// # }
/// use minnow::Config;
/// use minnow::FlushAtCommit;
///
/// let config = Config {
///     buffer_pool_size: 8 << 20,
///     flush_log_at_trx_commit: FlushAtCommit::Write,
///     ..Config::default()
/// };
/// config.validate()?;
/// assert!(Config { buffer_pool_instances: 0, ..Config::default() }.validate().is_err());
/// # Ok::<(), minnow::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Config {
    /// `innodb_buffer_pool_size` in bytes (default 64 MiB; at least 8 frames per instance).
    pub buffer_pool_size: usize,
    /// `innodb_buffer_pool_instances` (default 1).
    pub buffer_pool_instances: usize,
    /// `innodb_page_size` (default 16 KiB). Fixed at create; `open` requires the same value.
    pub page_size: PageSize,
    /// `innodb_flush_log_at_trx_commit`: 1 = [`FlushAtCommit::Sync`] (default: every
    /// statement is durable when it returns), 2 = [`FlushAtCommit::Write`] (written to the OS,
    /// synced about once a second), 0 = [`FlushAtCommit::Lazy`].
    pub flush_log_at_trx_commit: FlushAtCommit,
    /// `innodb_flush_log_at_timeout` (default 1 s, 1 ms to 2700 s): under
    /// `flush_log_at_trx_commit` 0 and 2 a background thread writes and syncs the redo log
    /// this often, so a commit is durable at most about this long after it returned, with
    /// or without later activity. Under 1 every commit syncs and no thread is started until
    /// a transaction commits below `Sync` (`Transaction::commit_with`).
    pub flush_log_at_timeout: Duration,
    /// `innodb_log_file_size` / `innodb_redo_log_capacity`: bytes of the circular redo log.
    /// The default, 0, sizes it from the buffer pool: the larger of 100 MiB (InnoDB's
    /// `innodb_redo_log_capacity` default since 8.0.30) and `buffer_pool_size` (see
    /// [`Config::redo_capacity`]). Used at create; an existing log keeps its size. The file
    /// is not preallocated: it grows 1/32 of the capacity at a time as redo reaches it, so
    /// a small database keeps a small log.
    ///
    /// Why it grows with the pool: a page must be written before the log wraps past its
    /// oldest change, so a workload that keeps changing a set of pages writes each of them
    /// about once per lap of the log. A log smaller than the pool's dirty pages turns one
    /// large transaction into many rewrites of the same pages (a 1M-row load in one
    /// transaction wrote 13x the table's size with the old default of 48 MiB, 4.1-4.7x
    /// with 1 GiB; see "Redo capacity and bulk loads" in `docs/EXPERIMENTS.md`).
    pub log_file_size: u64,
    /// `innodb_doublewrite` (default on).
    pub doublewrite: DoublewriteMode,
    /// `innodb_doublewrite_pages`: pages per flush batch (default 64).
    pub doublewrite_pages: usize,
    /// `innodb_flush_method` (default fsync).
    pub flush_method: FlushMethod,
    /// The IO backend (default synchronous `pread`/`pwrite`).
    pub io_backend: IoBackend,
    /// `innodb_write_io_threads` (1..=64, default 4): with [`IoBackend::Sync`], how many
    /// writes of one batch are in flight at once, each issued by its own thread (InnoDB's
    /// "simulated AIO"; [`minnow_io::SyncBackend::with_write_threads`]). A flush batch's
    /// pages in place are such a batch. io_uring submits a whole batch at once, and a custom
    /// backend is used as it is given.
    pub write_io_threads: usize,
    /// `innodb_page_cleaners` (default 1; 0 flushes only on demand).
    pub page_cleaners: usize,
    /// `innodb_checksum_algorithm` (default crc32): pages are written with it; reads accept
    /// the other algorithms (non-strict).
    pub checksum_algorithm: ChecksumAlgorithm,
    /// `innodb_old_blocks_pct` (5..=95, default 37).
    pub old_blocks_pct: u32,
    /// `innodb_old_blocks_time` (default 1 s).
    pub old_blocks_time: Duration,
    /// `innodb_io_capacity` (default 200).
    pub io_capacity: u32,
    /// `innodb_flush_neighbors` (default 0).
    pub flush_neighbors: FlushNeighbors,
    /// `innodb_max_dirty_pages_pct` (default 90).
    pub max_dirty_pages_pct: u32,
    /// `innodb_max_dirty_pages_pct_lwm` (default 10).
    pub max_dirty_pages_pct_lwm: u32,
    /// `innodb_read_ahead_threshold` (0..=64, default 56; 0 turns read-ahead off).
    pub read_ahead_threshold: u32,
    /// `innodb_buffer_pool_dump_at_shutdown` and `_load_at_startup` (default true): the
    /// `ib_buffer_pool` file in the data directory.
    pub buffer_pool_dump_at_shutdown: bool,
    /// `innodb_buffer_pool_dump_pct` (1..=100, default 25).
    pub buffer_pool_dump_pct: u32,
    /// `innodb_autoinc_lock_mode` (default 2, [`AutoIncLockMode::Interleaved`], as MySQL
    /// 8.0). Read at every statement, so it takes effect at open.
    pub autoinc_lock_mode: AutoIncLockMode,
    /// `innodb_lock_wait_timeout`: how long a writer waits for a row lock another transaction
    /// holds before its statement fails with [`crate::Error::LockWaitTimeout`] (default 50 s,
    /// as InnoDB's; at least 1 ms).
    pub lock_wait_timeout: Duration,
    /// `bulk_insert_buffer_size` (MariaDB's knob of that name, for the same idea): the most
    /// bytes a transaction's buffered inserts into an empty table may take in memory before
    /// they are written the ordinary way (see the `write` module's bulk insert module
    /// docs). 0 (the default) means half of `buffer_pool_size`: a 1 GiB pool buffers up to
    /// 512 MiB, about 1.8 million rows of 24-byte keys and 150-byte values (each row is
    /// counted at its record, its key and 64 bytes, and each of its secondary index entries
    /// at its record, its key and 48 bytes).
    pub bulk_insert_buffer_size: usize,
    /// `innodb_purge_threads`: background purge threads, 0 or 1 (default 1). With 1, a
    /// thread removes delete-marked records, old secondary entries and undo that no open
    /// read view needs, in batches, sleeping 10 ms when there is nothing it may purge; with
    /// 0 nothing is purged except by `Database::purge`. More than 1 is refused:
    /// purge walks the history list in commit order on one thread, so a second one could
    /// only wait for its turn (InnoDB's default of 4 is a coordinator handing records to
    /// worker threads, which minnow does not have). See the `purge` module docs.
    pub purge_threads: usize,
    /// `innodb_fast_shutdown`: 1 (the default, as InnoDB's) closes without waiting for
    /// purge: what the history list still holds is purged after the next open. 0 (a *slow
    /// shutdown*) purges everything no open read view needs before the final checkpoint,
    /// then moves each idle undo stream's last page as low in the file as its segment
    /// allows, so that the undo of the last large transactions is free and the close can cut
    /// it off the end of the system tablespace, and packs every B-tree into the low end of
    /// its segments (`minnow_btree::BTree::pack`: each page above its segment's lowest free
    /// page moves down), so that the free pages between live ones leave the file too.
    /// InnoDB's 2 (a crash-like close that skips
    /// the final flush) is refused.
    pub fast_shutdown: u8,
    /// `innodb_rollback_segments`: the rollback segments undo is written to (default 16,
    /// 1..=128). Fixed at create and stored in the TRX_SYS page; `open` uses the stored
    /// number whatever this says. Each segment has its own header page, slots, undo pages
    /// and history list, and its own lock, so writers in different segments never wait for
    /// each other to log undo or commit (see `minnow_mvcc::trx_sys`).
    pub rollback_segments: usize,
    /// `innodb_status_file`: if set, a background thread rewrites `minnow_status.json` in
    /// the data directory at this interval (at least 10 ms) with `Database::status`,
    /// for `minnow status` and `minnow watch` to read while the database runs; removed at
    /// close. Default off. See the `status` module docs.
    pub status_file: Option<Duration>,
    /// `innodb_adaptive_hash_index` (default on: point lookups of a cached working set are
    /// 1.6x faster with it and it costs nothing measurable elsewhere; see the E4 section of
    /// `docs/EXPERIMENTS.md`). Changeable at runtime with
    /// `Database::set_adaptive_hash_index`.
    pub adaptive_hash_index: bool,
    /// `innodb_adaptive_hash_index_parts`: partitions of the hash (default 64; rounded up to
    /// a power of two, at most 4096). Unlike InnoDB's, a key's partition is chosen by its
    /// hash, not by its index.
    pub adaptive_hash_index_parts: usize,
    /// The most memory the hash's entries may take, in bytes (default 128 MiB: 2M entries);
    /// entries beyond it are not added.
    pub adaptive_hash_index_max_memory: usize,
    /// `innodb_thread_concurrency`: threads allowed inside the engine at once (default 0,
    /// no limit); see the `admission` module.
    pub thread_concurrency: usize,
    /// `innodb_concurrency_tickets`: row operations a thread may do after entering before
    /// it must queue again (default 5000, at least 1).
    pub concurrency_tickets: u32,
    /// `innodb_parallel_read_threads`: threads one `count()` walks the leaf level with
    /// (default 4, as InnoDB's; 1..=256), never more than the machine's available
    /// parallelism. A table of fewer than a few hundred leaves is walked on one thread; see
    /// `minnow_btree`'s parallel count.
    pub parallel_read_threads: usize,
    /// `innodb_compression_failure_threshold_pct` (default 5, 0-100; 0 turns padding off):
    /// an index of a compressed table whose compression failures exceed this share of its
    /// compressions in a round of 128 gets 128 more bytes of padding (pages are split that
    /// much earlier); see `minnow_btree::tree::zip`.
    pub compression_failure_threshold_pct: u8,
    /// `innodb_compression_pad_pct_max` (default 50, at most 75): the most padding, in per
    /// cent of the page.
    pub compression_pad_pct_max: u8,
    /// InnoDB's `MERGE_THRESHOLD` (an index's `COMMENT 'MERGE_THRESHOLD=N'` in MySQL;
    /// MariaDB has none), for every index of every table (default 50, as InnoDB's;
    /// 1..=50): a delete (purge, a rollback) that leaves a B-tree page less full than this
    /// per cent of its record space merges it with a sibling under the same parent if the
    /// two fit in one page (`minnow_btree::BTree::with_merge_threshold`). Lower values merge
    /// less: cheaper deletes, emptier pages.
    pub merge_threshold: u8,
    /// (minnow) Called with crash recovery's progress while `open` replays the redo log:
    /// the share applied, batches, pages read ([`minnow_buf::RecoveryProgress`]). Default
    /// `None` (silent); `minnow check` prints it on stderr, as InnoDB prints its progress to
    /// the error log.
    pub recovery_progress: Option<minnow_buf::RecoveryProgressHook>,
}

impl Default for Config {
    fn default() -> Config {
        // The buffer pool's knobs take their defaults from `BufConfig::default()`, so the
        // two crates cannot disagree about them.
        let buf = BufConfig::default();
        Config {
            buffer_pool_size: buf.pool_size,
            buffer_pool_instances: buf.instances,
            page_size: buf.page_size,
            flush_log_at_trx_commit: FlushAtCommit::Sync,
            flush_log_at_timeout: Duration::from_secs(1),
            log_file_size: 0,
            doublewrite: DoublewriteMode::On,
            doublewrite_pages: buf.doublewrite_pages,
            flush_method: FlushMethod::Fsync,
            io_backend: IoBackend::Sync,
            write_io_threads: 4,
            page_cleaners: buf.page_cleaners,
            checksum_algorithm: ChecksumAlgorithm::Crc32,
            old_blocks_pct: buf.old_blocks_pct,
            old_blocks_time: buf.old_blocks_time,
            io_capacity: buf.io_capacity,
            flush_neighbors: buf.flush_neighbors,
            max_dirty_pages_pct: buf.max_dirty_pages_pct,
            max_dirty_pages_pct_lwm: buf.max_dirty_pages_pct_lwm,
            read_ahead_threshold: buf.read_ahead_threshold,
            buffer_pool_dump_at_shutdown: true,
            buffer_pool_dump_pct: buf.dump_pct,
            autoinc_lock_mode: AutoIncLockMode::default(),
            lock_wait_timeout: Duration::from_secs(50),
            bulk_insert_buffer_size: 0,
            purge_threads: 1,
            fast_shutdown: 1,
            rollback_segments: minnow_mvcc::trx_sys::DEFAULT_RSEGS,
            status_file: None,
            adaptive_hash_index: true,
            adaptive_hash_index_parts: 64,
            adaptive_hash_index_max_memory: 128 << 20,
            thread_concurrency: 0,
            concurrency_tickets: 5000,
            parallel_read_threads: 4,
            compression_failure_threshold_pct: 5,
            compression_pad_pct_max: 50,
            merge_threshold: 50,
            recovery_progress: None,
        }
    }
}

/// The redo capacity `log_file_size = 0` stands for at least: `innodb_redo_log_capacity`'s
/// default.
pub const DEFAULT_REDO_CAPACITY: u64 = 100 << 20;

impl Config {
    /// The memory bound of one transaction's buffered inserts into an empty table:
    /// `bulk_insert_buffer_size`, or with 0 (the default) half of `buffer_pool_size`.
    pub fn bulk_insert_buffer_bytes(&self) -> usize {
        match self.bulk_insert_buffer_size {
            0 => self.buffer_pool_size / 2,
            n => n,
        }
    }

    /// The redo log's capacity a create uses: `log_file_size`, or with 0 (the default) the
    /// larger of [`DEFAULT_REDO_CAPACITY`] and `buffer_pool_size`.
    ///
    /// ```
    /// # mod minnow { // the items as the `minnow` crate (which depends on this one) re-exports them
    /// #     pub use minnow_btree::record::ColumnType;
    /// #     pub use minnow_engine::Compression;
    /// #     pub use minnow_zip::KeyBlockSize;
    /// #     pub use minnow_engine::config::{Config, KnobError};
    /// #     pub use minnow_engine::{ColumnDef, Error, IndexDef, TableDef};
    /// #     pub use minnow_redo::FlushAtCommit;
    /// # }
    /// use minnow::Config;
    ///
    /// assert_eq!(Config::default().redo_capacity(), 100 << 20);
    /// let big = Config { buffer_pool_size: 1 << 30, ..Config::default() };
    /// assert_eq!(big.redo_capacity(), 1 << 30);
    /// let set = Config { log_file_size: 8 << 20, ..big };
    /// assert_eq!(set.redo_capacity(), 8 << 20);
    /// ```
    pub fn redo_capacity(&self) -> u64 {
        match self.log_file_size {
            0 => DEFAULT_REDO_CAPACITY.max(self.buffer_pool_size as u64),
            n => n,
        }
    }
}

/// The smallest redo log accepted (the log must hold the largest mini-transaction with room
/// to spare).
pub const MIN_LOG_FILE_SIZE: u64 = 64 << 10;

impl Config {
    /// The padding rule of compressed tables' indexes, from the two `compression_*` knobs.
    pub fn zip_pad(&self) -> minnow_btree::tree::ZipPadConfig {
        minnow_btree::tree::ZipPadConfig {
            failure_threshold_pct: self.compression_failure_threshold_pct,
            pad_pct_max: self.compression_pad_pct_max,
        }
    }

    /// The IO backend [`Config::io_backend`] names, made ready as an open would (an io_uring
    /// ring is set up here; the sync backend gets [`Config::write_io_threads`]), for wrappers
    /// that count or delay the IO and are then passed back as [`IoBackend::Custom`].
    pub fn backend(&self) -> Result<Arc<dyn Backend>> {
        backend(&self.io_backend, self.write_io_threads)
    }

    /// Checks every knob; the error names the first bad one by its `innodb_*` name.
    pub fn validate(&self) -> Result<()> {
        let bad = |knob: &'static str, reason: String| Err(Error::Config { knob, reason });
        if self.buffer_pool_instances == 0 {
            return bad("innodb_buffer_pool_instances", "must be at least 1".into());
        }
        if self.log_file_size != 0 && self.log_file_size < MIN_LOG_FILE_SIZE {
            return bad(
                "innodb_log_file_size",
                format!(
                    "{} bytes is below the minimum {MIN_LOG_FILE_SIZE}",
                    self.log_file_size
                ),
            );
        }
        if self.doublewrite_pages == 0
            || self.doublewrite_pages > minnow_dblwr::format::MAX_CAPACITY
        {
            return bad(
                "innodb_doublewrite_pages",
                format!(
                    "{} is outside 1..={}",
                    self.doublewrite_pages,
                    minnow_dblwr::format::MAX_CAPACITY
                ),
            );
        }
        if let Some(i) = self.status_file
            && i < Duration::from_millis(10)
        {
            return bad(
                "innodb_status_file",
                format!("an interval of {i:?} is below the minimum 10 ms"),
            );
        }
        if self.compression_failure_threshold_pct > 100 {
            return bad(
                "innodb_compression_failure_threshold_pct",
                format!("{} is above 100", self.compression_failure_threshold_pct),
            );
        }
        if !(1..=50).contains(&self.merge_threshold) {
            return bad(
                "merge_threshold",
                format!("{} is outside 1..=50", self.merge_threshold),
            );
        }
        if self.compression_pad_pct_max > 75 {
            return bad(
                "innodb_compression_pad_pct_max",
                format!("{} is above the maximum 75", self.compression_pad_pct_max),
            );
        }
        if self.flush_log_at_timeout < Duration::from_millis(1)
            || self.flush_log_at_timeout > Duration::from_secs(2700)
        {
            return bad(
                "innodb_flush_log_at_timeout",
                format!("{:?} is outside 1 ms ..= 2700 s", self.flush_log_at_timeout),
            );
        }
        if self.lock_wait_timeout < Duration::from_millis(1) {
            return bad(
                "innodb_lock_wait_timeout",
                format!("{:?} is below the minimum 1 ms", self.lock_wait_timeout),
            );
        }
        if self.purge_threads > 1 {
            return bad(
                "innodb_purge_threads",
                format!(
                    "{} threads: at most 1, because purge walks the history in commit order \
                     on one thread (no worker threads), so more threads could only wait",
                    self.purge_threads
                ),
            );
        }
        if self.fast_shutdown > 1 {
            return bad(
                "innodb_fast_shutdown",
                format!(
                    "{}: 0 (purge fully, then close) or 1 (close without waiting for purge); \
                     2 (skip the final flush, as a crash) is not supported",
                    self.fast_shutdown
                ),
            );
        }
        if self.rollback_segments == 0 || self.rollback_segments > minnow_mvcc::trx_sys::MAX_RSEGS {
            return bad(
                "innodb_rollback_segments",
                format!(
                    "{} is outside 1..={}",
                    self.rollback_segments,
                    minnow_mvcc::trx_sys::MAX_RSEGS
                ),
            );
        }
        if self.concurrency_tickets == 0 {
            return bad("innodb_concurrency_tickets", "must be at least 1".into());
        }
        if !(1..=64).contains(&self.write_io_threads) {
            return bad(
                "innodb_write_io_threads",
                format!("{} is outside 1..=64", self.write_io_threads),
            );
        }
        if !(1..=256).contains(&self.parallel_read_threads) {
            return bad(
                "innodb_parallel_read_threads",
                format!("{} is outside 1..=256", self.parallel_read_threads),
            );
        }
        if self.adaptive_hash_index_parts == 0 || self.adaptive_hash_index_parts > 4096 {
            return bad(
                "innodb_adaptive_hash_index_parts",
                format!("{} is outside 1..=4096", self.adaptive_hash_index_parts),
            );
        }
        buf_config(self, None)
            .validate()
            .or_else(|e| bad("innodb_buffer_pool_*", e.to_string()))
    }
}

/// The buffer pool's settings. Every field of [`BufConfig`] is named here (no `..`), so a
/// field added there does not compile until it is taken from a knob or stated as fixed;
/// the registry's tests check that every buffer pool knob changes what this returns.
pub fn buf_config(c: &Config, dump_dir: Option<&std::path::Path>) -> BufConfig {
    BufConfig {
        pool_size: c.buffer_pool_size,
        page_size: c.page_size,
        instances: c.buffer_pool_instances,
        old_blocks_pct: c.old_blocks_pct,
        old_blocks_time: c.old_blocks_time,
        page_cleaners: c.page_cleaners,
        doublewrite_pages: c.doublewrite_pages,
        flush_neighbors: c.flush_neighbors,
        io_capacity: c.io_capacity,
        max_dirty_pages_pct: c.max_dirty_pages_pct,
        max_dirty_pages_pct_lwm: c.max_dirty_pages_pct_lwm,
        read_ahead_threshold: c.read_ahead_threshold,
        dump_pct: c.buffer_pool_dump_pct,
        dump_dir: if c.buffer_pool_dump_at_shutdown {
            dump_dir.map(std::path::Path::to_path_buf)
        } else {
            None
        },
        recovery_progress: c.recovery_progress.clone(),
        // Not knobs: the real clock, and recovery's default memory (a quarter of the pool).
        clock: minnow_buf::Clock::real(),
        recovery_memory: None,
    }
}

/// The adaptive hash index's settings.
pub fn ahi_config(c: &Config) -> minnow_ahi::AhiConfig {
    minnow_ahi::AhiConfig {
        enabled: c.adaptive_hash_index,
        partitions: c.adaptive_hash_index_parts,
        max_memory: c.adaptive_hash_index_max_memory,
    }
}

/// The doublewrite buffer's settings: a pair of segments per page cleaner and one for user
/// threads' flushes, so that each flusher keeps two batches in flight
/// ([`minnow_dblwr::SegmentPair`]).
pub fn dblwr_config(c: &Config) -> minnow_dblwr::DoublewriteConfig {
    minnow_dblwr::DoublewriteConfig::new(c.doublewrite, 2 * (c.page_cleaners + 1), c.page_size)
        .pages_per_batch(c.doublewrite_pages)
        .flush_method(c.flush_method)
}
