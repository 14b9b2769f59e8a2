//! The engine's counters in one snapshot ([`Status`], minnow's `SHOW ENGINE INNODB STATUS`,
//! which `Database::status` in `minnow` returns), the row counters statements bump, and the
//! thread that rewrites the status file ([`STATUS_FILE`]) for `minnow status` and `minnow
//! watch` (the `minnow` crate's `status` module shows what a snapshot holds and how the file
//! is written and read).
//!
//! ## What taking one costs (experiment E10)
//!
//! The MySQL 5.x articles measured `SHOW STATUS` going from 0.2 ms to 20 ms under many
//! threads, because it took a global mutex every query also needed, and `SHOW INNODB STATUS`
//! spending 0.3 s on two rarely read counters. A snapshot here **walks nothing that grows with
//! the load** and holds no lock across more than a few loads: it loads atomics with relaxed
//! ordering, and scans the transaction system's view registration slots (a fixed array,
//! read only). The one mutex it shares with readers is the overflow list of registrations,
//! which a reader takes only when every slot it tried was busy (see `minnow_mvcc`'s
//! `trx_sys::views` module): held for a copy of a short list.
//!
//! - buffer pool: each instance's striped counters (16 stripes, [`minnow_buf::BufferPoolStats`])
//!   and the mirrors of its list lengths;
//! - redo: [`minnow_redo::Log::current_lsn_relaxed`] (a mirror of the append position, so the
//!   snapshot does not queue behind the log mutex), the flushed and checkpoint LSNs and the
//!   log's counters;
//! - doublewrite: its counters;
//! - rows: `RowCounters`, striped the same way as the pool's (a row operation writes only
//!   its thread's stripe, so counting adds no shared cache line to the hot path);
//! - transactions: mirrors the transaction system keeps in atomics next to its locked state,
//!   purge's counters, and the lock manager's (locks held and waiting are counters kept where
//!   locks are granted and released, so no transaction and no lock queue is walked: a snapshot
//!   costs the same with 10,000 open transactions as with none, see EXPERIMENTS.md's E10);
//! - compression: each compressed tablespace's counters (a short mutex of the file's own,
//!   which only compressions and decompressions of that file take) and the zip cache's.
//!
//! The price is that the numbers are not one instant's: a counter read after another may
//! include increments the first missed. Each value is exact on its own.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use minnow_buf::{BufferPool, ZipCacheStats};
use minnow_zip::{Algorithm, KeyBlockSize, ZipStats};
use parking_lot::{Condvar, Mutex};
use serde::Serialize;

use minnow_mvcc::TrxSys;
use minnow_mvcc::lock::LockManager;

mod json;

use crate::error::Result;
use crate::purge::PurgeCounters;

/// The status file's name in the data directory.
pub const STATUS_FILE: &str = "minnow_status.json";

/// The `format` field of the status file's JSON, so readers know what they hold.
pub const STATUS_FORMAT: &str = "minnow-status";

/// The version of the status file's JSON layout (new fields may appear within a version).
pub const STATUS_VERSION: u32 = 1;

/// The sections of InnoDB's status output that minnow has no source for yet. They are listed
/// (in [`Status::not_built`] and the JSON's `not_built`) instead of being filled with zeros.
pub const SECTIONS_NOT_BUILT: &[&str] = &[];

/// The buffer pool's section.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct BufferPoolStatus {
    /// Frames in the pool (`innodb_buffer_pool_size` / page size).
    pub frames: u64,
    /// Page size in bytes.
    pub page_size: u64,
    /// Free frames.
    pub free: u64,
    /// Pages on the LRU lists.
    pub lru: u64,
    /// Pages in the LRU's young sublist.
    pub young: u64,
    /// Pages in the LRU's old sublist.
    pub old: u64,
    /// Dirty pages (on the flush lists).
    pub dirty: u64,
    /// Page fixes served from the pool.
    pub hits: u64,
    /// Page fixes that had to read the page.
    pub misses: u64,
    /// `hits / (hits + misses)`, 1.0 before the first fix.
    pub hit_rate: f64,
    /// Pages read from disk on demand.
    pub reads: u64,
    /// Pages read by linear read-ahead.
    pub read_ahead: u64,
    /// Pages written: `flushed_list + flushed_lru`.
    pub writes: u64,
    /// Dirty pages written from the flush lists (checkpoint, adaptive flushing).
    pub flushed_list: u64,
    /// Dirty pages written from the LRU tails (to make them evictable).
    pub flushed_lru: u64,
    /// Clean pages evicted to make room.
    pub evictions: u64,
    /// Old pages moved to the young sublist ("made young").
    pub made_young: u64,
    /// Accesses to old pages that left them old ("not young").
    pub not_young: u64,
}

/// The redo log's section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RedoStatus {
    /// The LSN the next mini-transaction will start at ("Log sequence number").
    pub current_lsn: u64,
    /// Everything below is written to the OS.
    pub written_lsn: u64,
    /// Everything below is durable ("Log flushed up to").
    pub flushed_lsn: u64,
    /// The last checkpoint ("Last checkpoint at"): recovery starts here.
    pub checkpoint_lsn: u64,
    /// `current_lsn - checkpoint_lsn`: the redo recovery would replay now.
    pub checkpoint_age: u64,
    /// Data bytes of the circular log: the checkpoint age must stay below this.
    pub capacity: u64,
    /// Mini-transaction groups appended since open.
    pub mtr_commits: u64,
    /// Redo bytes appended since open.
    pub bytes: u64,
    /// Log writes issued (group-commit leaders).
    pub writes: u64,
    /// Log syncs issued.
    pub syncs: u64,
    /// Checkpoints written since open.
    pub checkpoints: u64,
    /// Times a writer found the log full (the checkpoint age within its margin of the
    /// capacity) and waited for the page cleaner's checkpoint, since open.
    pub space_waits: u64,
    /// Nanoseconds writers spent in those waits, summed over threads, since open.
    pub space_wait_ns: u64,
}

/// The doublewrite buffer's section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DoublewriteStatus {
    /// Batches completed.
    pub batches: u64,
    /// Page copies written to the segment files.
    pub pages: u64,
    /// Pages written in place after their batch's copies were synced.
    pub in_place_pages: u64,
    /// Syncs of segment and data files.
    pub syncs: u64,
}

/// The row operations' section (InnoDB's `Innodb_rows_*`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RowStatus {
    /// Rows returned by point gets and scans.
    pub read: u64,
    /// Rows inserted.
    pub inserted: u64,
    /// Rows updated.
    pub updated: u64,
    /// Rows deleted.
    pub deleted: u64,
    /// Secondary-index entries a read checked or completed through the clustered index:
    /// one clustered lookup each (InnoDB's `sec_rec_cluster_reads`). A consistent read does
    /// one when the entry's leaf may hold a change its view cannot see (`PAGE_MAX_TRX_ID`)
    /// or when the scan is not covering.
    pub sec_cluster_reads: u64,
    /// Secondary-index entries a read used without a clustered lookup: covering reads on
    /// leaves every change of which the view sees, and delete-marked entries on such
    /// leaves, skipped (InnoDB's `sec_rec_cluster_reads_avoided`).
    pub sec_cluster_reads_avoided: u64,
}

/// A snapshot of the engine's counters: see the module docs for what each section holds and
/// what taking one costs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Status {
    /// Time since the database was opened.
    pub uptime: Duration,
    /// When the snapshot was taken, in milliseconds since the Unix epoch.
    pub taken_at_unix_ms: u64,
    /// The buffer pool.
    pub buffer_pool: BufferPoolStatus,
    /// The redo log.
    pub redo: RedoStatus,
    /// The doublewrite buffer; `None` with `innodb_doublewrite = off`.
    pub doublewrite: Option<DoublewriteStatus>,
    /// Row operations since open.
    pub rows: RowStatus,
    /// The adaptive hash index (InnoDB's INSERT BUFFER AND ADAPTIVE HASH INDEX section, less
    /// the insert buffer, which minnow does not have): lookups, hits, entries, memory.
    pub adaptive_hash_index: minnow_ahi::AhiStats,
    /// Transactions, the history list and purge (InnoDB's TRANSACTIONS section).
    pub transactions: TransactionStatus,
    /// Compressed tablespaces and the buffer pool's cache of compressed blocks.
    pub compression: CompressionStatus,
    /// InnoDB status sections with no source in minnow yet ([`SECTIONS_NOT_BUILT`]).
    pub not_built: Vec<&'static str>,
}

/// The COMPRESSION section: what compressing pages cost and achieved, per compressed
/// tablespace (InnoDB reports the same counters per block size in
/// `INFORMATION_SCHEMA.INNODB_CMP`), and the buffer pool's cache of compressed blocks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompressionStatus {
    /// Every compressed tablespace open now, by space id (none until the first compressed
    /// table is created).
    pub tablespaces: Vec<ZipSpaceStatus>,
    /// The zip cache: blocks kept in frames lent by the pool, hits, misses, evictions.
    pub cache: ZipCacheStats,
}

/// One compressed tablespace: its identity, its size and its counters since open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZipSpaceStatus {
    /// The file name in the data directory (`zip8k_zlib-6.ibd`).
    pub file: String,
    /// The space id ([`crate::Compression::space_id`]).
    pub space_id: u32,
    /// The block size (`KEY_BLOCK_SIZE`).
    pub block_size: KeyBlockSize,
    /// The algorithm and level.
    pub algorithm: Algorithm,
    /// The file's size in pages (one block each).
    pub pages: u64,
    /// The file's size in bytes: `pages * block_size`.
    pub file_bytes: u64,
    /// Compressions (InnoDB's `compress_ops`; `compress_ok()` is `compress_ops_ok`) and
    /// failures, decompressions (`uncompress_ops`), their times and bytes in and out.
    pub stats: ZipStats,
}

/// The COMPRESSION section, from the pool's registry of tablespaces and its zip cache.
fn compression(pool: &BufferPool) -> CompressionStatus {
    let tablespaces = pool
        .spaces()
        .compressed()
        .iter()
        .filter_map(|space| {
            let zip = space.zip()?;
            let pages = u64::from(space.size_in_pages());
            Some(ZipSpaceStatus {
                file: space
                    .path()
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
                space_id: space.space_id(),
                block_size: zip.block_size,
                algorithm: zip.algorithm,
                pages,
                file_bytes: pages * space.physical_page_bytes() as u64,
                stats: space.zip_stats().unwrap_or_default(),
            })
        })
        .collect();
    CompressionStatus {
        tablespaces,
        cache: pool.zip_cache_stats(),
    }
}

/// The TRANSACTIONS section: the transaction system, the history list and purge.
///
/// How far purge trails shows in three numbers: `history_len` (committed update logs not
/// purged yet), `oldest_view_age` (how many transaction ids ago the oldest open read view
/// was taken: purge may not pass it) and `purge_running`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TransactionStatus {
    /// The next transaction id ("Trx id counter").
    pub next_trx_id: u64,
    /// Active writing transactions.
    pub active: u64,
    /// InnoDB's "History list length": committed logs with update undo not purged yet.
    pub history_len: u64,
    /// Read views open now (transactions' snapshots and running statements').
    pub open_views: u64,
    /// `next_trx_id` minus the oldest open view's low limit: how many transaction ids
    /// behind the oldest reader's snapshot is (0 with no view open). Purge cannot pass it.
    pub oldest_view_age: u64,
    /// Undo pages in the undo streams of all rollback segments now.
    pub undo_pages: u64,
    /// Undo pages given back to the undo segment since open.
    pub undo_pages_freed: u64,
    /// True while the background purge thread runs (`purge_threads = 1`, no error).
    #[serde(serialize_with = "json::flag")]
    pub purge_running: bool,
    /// Undo logs purged since open.
    pub purge_logs: u64,
    /// Undo records purged since open.
    pub purge_records: u64,
    /// Delete-marked clustered records removed by purge since open.
    pub purge_clustered_removed: u64,
    /// Delete-marked secondary entries removed by purge since open.
    pub purge_secondary_removed: u64,
    /// Purge batches that did something since open.
    pub purge_batches: u64,
    /// Errors that stopped the background purge thread (see the log of the application).
    pub purge_errors: u64,
    /// Row locks held now by transactions (one per transaction and key; InnoDB prints
    /// "N row lock(s)" per transaction, this is their sum, kept in a counter rather than
    /// walked).
    pub row_locks: u64,
    /// Transactions waiting for a row lock now.
    pub lock_waiting: u64,
    /// Row lock requests that had to wait, since open.
    pub lock_waits: u64,
    /// Deadlocks found since open (each rolled one victim back).
    pub deadlocks: u64,
    /// Lock waits that ended in a timeout since open.
    pub lock_timeouts: u64,
}

/// Takes a snapshot from the pool, the row counters and the open time.
pub fn collect(
    pool: &BufferPool,
    rows: &RowCounters,
    ahi: &minnow_ahi::Ahi,
    started: Instant,
    (trx_sys, purge, locks): (&TrxSys, &PurgeCounters, &LockManager),
) -> Status {
    let b = pool.stats();
    let buffer_pool = BufferPoolStatus {
        frames: b.frames,
        page_size: pool.config().page_size.bytes() as u64,
        free: b.free_frames,
        lru: b.lru_pages,
        young: b.lru_pages.saturating_sub(b.old_pages),
        old: b.old_pages,
        dirty: b.dirty_pages,
        hits: b.hits,
        misses: b.misses,
        hit_rate: b.hit_ratio(),
        reads: b.reads,
        read_ahead: b.read_ahead,
        writes: b.flush_list_flushed + b.lru_flushed,
        flushed_list: b.flush_list_flushed,
        flushed_lru: b.lru_flushed,
        evictions: b.evictions,
        made_young: b.young,
        not_young: b.not_young,
    };
    let redo = match pool.log() {
        Some(log) => {
            let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
            let s = log.stats();
            let current = log.current_lsn_relaxed().0;
            let checkpoint = log.checkpoint_lsn().0;
            RedoStatus {
                current_lsn: current,
                written_lsn: log.written_lsn().0,
                flushed_lsn: log.flushed_lsn().0,
                checkpoint_lsn: checkpoint,
                checkpoint_age: current.saturating_sub(checkpoint),
                capacity: log.capacity(),
                mtr_commits: load(&s.appends),
                bytes: load(&s.bytes),
                writes: load(&s.writes),
                syncs: load(&s.syncs),
                checkpoints: load(&s.checkpoints),
                space_waits: load(&s.space_waits),
                space_wait_ns: load(&s.space_wait_ns),
            }
        }
        None => RedoStatus::default(),
    };
    let doublewrite = pool.doublewrite_stats().map(|d| DoublewriteStatus {
        batches: d.batches,
        pages: d.dblwr_pages,
        in_place_pages: d.in_place_pages,
        syncs: d.syncs,
    });
    Status {
        uptime: started.elapsed(),
        taken_at_unix_ms: unix_ms(),
        buffer_pool,
        redo,
        doublewrite,
        rows: rows.snapshot(),
        adaptive_hash_index: ahi.stats(),
        transactions: transactions(trx_sys, purge, locks),
        compression: compression(pool),
        not_built: SECTIONS_NOT_BUILT.to_vec(),
    }
}

/// The TRANSACTIONS section, from atomics (the trx system's mirrors and purge's counters).
fn transactions(trx_sys: &TrxSys, purge: &PurgeCounters, locks: &LockManager) -> TransactionStatus {
    let t = trx_sys.status();
    let l = locks.stats();
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
    TransactionStatus {
        next_trx_id: t.next_id,
        active: t.active as u64,
        history_len: t.history_len,
        open_views: t.open_views,
        oldest_view_age: t
            .oldest_view_low_limit
            .map_or(0, |l| t.next_id.saturating_sub(l)),
        undo_pages: t.undo_pages,
        undo_pages_freed: t.undo_pages_freed,
        purge_running: load(&purge.running) == 1,
        purge_logs: load(&purge.logs),
        purge_records: load(&purge.records),
        purge_clustered_removed: load(&purge.clustered_removed),
        purge_secondary_removed: load(&purge.secondary_removed),
        purge_batches: load(&purge.batches),
        purge_errors: load(&purge.errors),
        row_locks: l.held,
        lock_waiting: l.waiting,
        lock_waits: l.waits,
        deadlocks: l.deadlocks,
        lock_timeouts: l.timeouts,
    }
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A row operation, for [`RowCounters`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowOp {
    /// A row read.
    Read = 0,
    /// A row inserted.
    Insert = 1,
    /// A row updated.
    Update = 2,
    /// A row deleted.
    Delete = 3,
    /// A secondary entry looked up in the clustered index.
    SecClusterRead = 4,
    /// A secondary entry used (or skipped) without a clustered lookup.
    SecClusterReadAvoided = 5,
}

/// Stripes of the row counters (as the buffer pool's: more than the threads usually busy).
const STRIPES: usize = 16;

/// One thread's copy of the six counters, alone on its cache lines (two, for the
/// adjacent-line prefetcher).
#[derive(Debug, Default)]
#[repr(align(128))]
struct Stripe([AtomicU64; 6]);

/// Row operation counters, striped per thread so that counting a row writes no cache line
/// another thread writes (see [`minnow_buf::BufferPoolStats`]'s module for why).
#[derive(Debug, Default)]
pub struct RowCounters {
    stripes: [Stripe; STRIPES],
}

static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
}

#[inline]
fn stripe() -> usize {
    STRIPE.with(|s| {
        let i = s.get();
        if i != usize::MAX {
            return i;
        }
        let i = NEXT_STRIPE.fetch_add(1, Ordering::Relaxed) % STRIPES;
        s.set(i);
        i
    })
}

impl RowCounters {
    /// Counts `n` rows of `op` in this thread's stripe.
    #[inline]
    pub fn bump(&self, op: RowOp, n: u64) {
        if let Some(s) = self.stripes.get(stripe()) {
            s.0[op as usize].fetch_add(n, Ordering::Relaxed);
        }
    }

    fn get(&self, op: RowOp) -> u64 {
        self.stripes
            .iter()
            .map(|s| s.0[op as usize].load(Ordering::Relaxed))
            .fold(0, u64::wrapping_add)
    }

    /// The sums.
    pub fn snapshot(&self) -> RowStatus {
        RowStatus {
            read: self.get(RowOp::Read),
            inserted: self.get(RowOp::Insert),
            updated: self.get(RowOp::Update),
            deleted: self.get(RowOp::Delete),
            sec_cluster_reads: self.get(RowOp::SecClusterRead),
            sec_cluster_reads_avoided: self.get(RowOp::SecClusterReadAvoided),
        }
    }
}

/// The background thread that rewrites the status file (see the module docs).
pub struct StatusFileWriter {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
    path: PathBuf,
}

impl std::fmt::Debug for StatusFileWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatusFileWriter")
            .field("path", &self.path)
            .finish()
    }
}

/// Writes `json` to `path` through a temporary file and a rename.
fn write_atomically(path: &Path, json: &str) -> std::io::Result<()> {
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, json)?;
    std::fs::rename(&tmp, path)
}

impl StatusFileWriter {
    /// Writes the first snapshot (so a reader finds the file as soon as `open` returns) and
    /// starts the thread that rewrites it every `interval`.
    pub fn start(
        dir: &Path,
        interval: Duration,
        pool: Arc<BufferPool>,
        rows: Arc<RowCounters>,
        ahi: minnow_ahi::Ahi,
        started: Instant,
        (trx_sys, purge, locks): (Arc<TrxSys>, Arc<PurgeCounters>, Arc<LockManager>),
    ) -> Result<StatusFileWriter> {
        let path = dir.join(STATUS_FILE);
        let first = collect(&pool, &rows, &ahi, started, (&trx_sys, &purge, &locks))
            .to_json(Some(interval));
        write_atomically(&path, &first).map_err(|e| crate::Error::Directory {
            path: path.clone(),
            reason: format!("cannot write the status file: {e}"),
        })?;
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let thread_stop = Arc::clone(&stop);
        let thread_path = path.clone();
        let thread = std::thread::Builder::new()
            .name("minnow-status".into())
            .spawn(move || {
                let (flag, cv) = &*thread_stop;
                let mut stopped = flag.lock();
                while !*stopped {
                    if cv.wait_for(&mut stopped, interval).timed_out() && !*stopped {
                        let json = collect(&pool, &rows, &ahi, started, (&trx_sys, &purge, &locks))
                            .to_json(Some(interval));
                        // A failed write is retried at the next tick; the engine never
                        // hears of it (the file is a window, not part of the database).
                        let _ = write_atomically(&thread_path, &json);
                    }
                }
            })
            .map_err(|e| crate::Error::Directory {
                path: path.clone(),
                reason: format!("cannot start the status thread: {e}"),
            })?;
        Ok(StatusFileWriter {
            stop,
            thread: Some(thread),
            path,
        })
    }

    /// Stops the thread, waits for it, and removes the file: a database that is not running
    /// leaves no status file behind.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        let (flag, cv) = &*self.stop;
        *flag.lock() = true;
        cv.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Drop for StatusFileWriter {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.halt();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_counters_sum_over_threads() {
        let c = RowCounters::default();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..100 {
                        c.bump(RowOp::Read, 1);
                    }
                    c.bump(RowOp::Insert, 3);
                    c.bump(RowOp::SecClusterReadAvoided, 2);
                });
            }
        });
        let snap = c.snapshot();
        assert_eq!(
            snap,
            RowStatus {
                read: 400,
                inserted: 12,
                updated: 0,
                deleted: 0,
                sec_cluster_reads: 0,
                sec_cluster_reads_avoided: 8,
            }
        );
    }
}
