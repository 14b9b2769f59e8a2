//! The open engine: the state one open database shares between its statements, its
//! background threads and every handle on it.
//!
//! ```text
//!   Engine
//!   ├─ pool, trx_sys, undo_segment, locks   the storage below: buffer pool (with the redo
//!   │                                       log), transaction system, row locks
//!   ├─ dict, tables, next_index_id          the dictionary B-tree and the table cache
//!   │                                       (every open table's [`TableEntry`])
//!   ├─ ddl, quiesce, gaps, closed           the latches (ARCHITECTURE.md, "The latch order",
//!   │                                       rows 3, 4 and 6) and the closed flag
//!   ├─ ahi, admission                       the adaptive hash index, the admission door
//!   └─ rows, purge, status_file, log_flusher  counters and background threads
//! ```
//!
//! The fields are private to this crate: a statement reaches them through accessors of the
//! same names ([`Engine::pool`], [`Engine::tables`], ...), public where a statement of the
//! `minnow` crate still needs them, crate-private where only this crate's statements do
//! (the quiesce latch, the gap latch, the undo segment). The rules that span several fields
//! are methods here: [`Engine::check_open`] and [`Engine::write_latch`] (no change after
//! close), [`Engine::close`] (close's order, in `Engine::shutdown`),
//! [`Engine::ensure_log_flusher`].
//!
//! Building an engine from a directory and tearing it down are [`crate::open`]'s
//! ([`Engine::create`], [`Engine::open`], [`Engine::close`]); DDL is [`crate::ddl`]'s, the
//! bulk build ([`Engine::create_index`], [`Engine::load`]) [`crate::bulk`]'s, the
//! consistency check [`crate::check`]'s, rollback and purge [`crate::rollback`]'s and
//! [`crate::purge`]'s. What the `minnow` crate adds on top: `Database` (an `Arc` of a handle
//! that holds one `Arc<Engine>`, the open report and the directory's `LOCK`), the API of the
//! reads and writes (the reads themselves are [`crate::read`]'s, the row writes with their
//! undo and locks, the locking reads and a transaction's bulk insert [`crate::write`]'s), and
//! the typed rows.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use minnow_btree::BTree;
use minnow_buf::{BufferPool, SpreadLatch, SpreadReadGuard};
use minnow_mvcc::{LockKey, TrxSys};
use parking_lot::{Mutex, MutexGuard, RwLock};

use crate::admission::Admission;
use crate::config::Config;
use crate::dict::{SYSTEM_SPACE_ID, SYSTEM_TABLESPACE};
use crate::entry::TableEntry;
use crate::error::{Error, Result, from_tree};
use crate::purge::PurgeCounters;
use crate::status::{RowCounters, StatusFileWriter};
use crate::table_cache::TableCache;

/// The engine of one open database (see the module docs).
pub struct Engine {
    /// Shared with the status-file thread, if any (see `status`); unwrapped at close.
    pub(crate) pool: Arc<BufferPool>,
    pub(crate) config: Config,
    pub(crate) dict: BTree,
    pub(crate) tables: RwLock<TableCache>,
    /// The dictionary latch: one DDL statement (create, drop, create index, load) at a time.
    /// Taken before any table's metadata lock; DML never takes it. Latch order: row 3 of
    /// ARCHITECTURE.md's table.
    pub(crate) ddl: Mutex<()>,
    /// Held shared by every write statement, commit, rollback and purge step, exclusively by
    /// `Database::check` and by close's counter write, which need a database nobody
    /// changes. Let go (with the metadata lock) while a statement waits for a row lock.
    /// Writers share it and never wait for each other here, nor write a line another writer
    /// writes (a [`SpreadLatch`]: each thread counts itself in a reader slot of its own).
    /// Latch order: row 4, after the dictionary latch.
    pub(crate) quiesce: SpreadLatch,
    pub(crate) next_index_id: Mutex<u64>,
    /// The gap latch every table's entry shares (the `write` gaps module).
    pub(crate) gaps: Arc<GapLatch>,
    pub(crate) dir: PathBuf,
    /// The transaction system: ids, active transactions, the undo store (shared with the
    /// status-file thread, which reads its counters).
    pub(crate) trx_sys: Arc<TrxSys>,
    /// Purge's counters and background thread (purge itself is [`crate::purge`]).
    pub(crate) purge: Arc<PurgeCounters>,
    /// The undo segment (owner of the TRX_SYS page and the undo pages).
    pub(crate) undo_segment: minnow_btree::space::Segment,
    /// Row locks: writers lock every row and unique key they change until their transaction
    /// ends (`minnow_mvcc::lock`).
    pub(crate) locks: Arc<minnow_mvcc::LockManager>,
    /// Row operations since open, for `Database::status`.
    pub(crate) rows: Arc<RowCounters>,
    /// When the database was opened.
    pub(crate) started: Instant,
    /// The thread rewriting the status file (`Config::status_file`).
    pub(crate) status_file: Mutex<Option<StatusFileWriter>>,
    /// The background log flusher under `flush_log_at_trx_commit` 0 and 2, or under 1 from
    /// the first `Transaction::commit_with` below `Sync` (`Config::flush_log_at_timeout`).
    pub(crate) log_flusher: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// The adaptive hash index every table's trees consult ([`crate::entry::hook_tree`]).
    pub(crate) ahi: minnow_ahi::Ahi,
    /// `thread_concurrency` / `concurrency_tickets` ([`crate::admission`]).
    pub(crate) admission: Admission,
    /// Set once by close (under the quiesce latch, exclusively): every statement checks it
    /// at its start (`Database::inner` in `minnow`), every change after taking the quiesce latch
    /// ([`Engine::write_latch`]). On a cache line of its own, which nobody writes while the
    /// database is open.
    pub(crate) closed: ClosedFlag,
}

impl Engine {
    /// An engine over a recovered (or new) pool, with the dictionary tree, the open tables,
    /// the next index id, the data directory and the transaction system; no thread started
    /// yet ([`Engine::start_threads`]).
    pub(crate) fn new(
        pool: BufferPool,
        config: Config,
        dict: BTree,
        // The tables, the adaptive hash index their trees are hooked to and the gap latch
        // they share.
        (tables, ahi, gaps): (
            BTreeMap<String, Arc<TableEntry>>,
            minnow_ahi::Ahi,
            Arc<GapLatch>,
        ),
        next_index_id: u64,
        dir: &Path,
        (trx_sys, undo_segment): (TrxSys, minnow_btree::space::Segment),
    ) -> Engine {
        let admission = Admission::new(config.thread_concurrency, config.concurrency_tickets);
        let lock_wait_timeout = config.lock_wait_timeout;
        Engine {
            pool: Arc::new(pool),
            config,
            dict,
            tables: RwLock::new(TableCache::new(tables)),
            ddl: Mutex::new(()),
            quiesce: SpreadLatch::new(),
            next_index_id: Mutex::new(next_index_id),
            gaps,
            dir: dir.to_path_buf(),
            rows: Arc::default(),
            started: Instant::now(),
            status_file: Mutex::new(None),
            log_flusher: Mutex::new(None),
            ahi,
            admission,
            closed: Default::default(),
            trx_sys: Arc::new(trx_sys),
            purge: Arc::default(),
            undo_segment,
            locks: minnow_mvcc::LockManager::new(lock_wait_timeout),
        }
    }

    /// Starts the status-file thread if the configuration asks for one.
    fn start_status_file(&self) -> Result<()> {
        if let Some(interval) = self.config.status_file {
            let w = StatusFileWriter::start(
                &self.dir,
                interval,
                Arc::clone(&self.pool),
                Arc::clone(&self.rows),
                self.ahi.clone(),
                self.started,
                (
                    Arc::clone(&self.trx_sys),
                    Arc::clone(&self.purge),
                    Arc::clone(&self.locks),
                ),
            )?;
            *self.status_file.lock() = Some(w);
        }
        Ok(())
    }

    /// Starts the background log flusher unless every commit syncs: with
    /// `flush_log_at_trx_commit` 0 or 2 nothing else would sync the log while the database is
    /// idle, and a commit's promise is "durable within about `flush_log_at_timeout`".
    fn start_log_flusher(&self) -> Result<()> {
        if self.config.flush_log_at_trx_commit == minnow_redo::FlushAtCommit::Sync {
            return Ok(());
        }
        self.ensure_log_flusher()
    }

    /// Starts the background threads a configuration asks for: the status file and the log
    /// flusher (purge is started by the caller, which holds the `Arc`).
    pub(crate) fn start_threads(&self) -> Result<()> {
        self.start_status_file()?;
        self.start_log_flusher()
    }
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("dir", &self.dir)
            .field("closed", &self.closed.is_set())
            .finish_non_exhaustive()
    }
}

/// Accessors: what the statements of the `minnow` crate read.
impl Engine {
    /// The buffer pool (with the redo log and the tablespaces).
    pub fn pool(&self) -> &Arc<BufferPool> {
        &self.pool
    }

    /// The configuration the database runs with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The dictionary B-tree (`SYS_TABLES`).
    pub(crate) fn dict(&self) -> &BTree {
        &self.dict
    }

    /// The table cache: every open table's entry by name and by clustered index id.
    pub fn tables(&self) -> &RwLock<TableCache> {
        &self.tables
    }

    /// The entry of open table `name`; [`Error::NoSuchTable`] if there is none.
    pub fn table(&self, name: &str) -> Result<Arc<TableEntry>> {
        self.tables
            .read()
            .get(name)
            .cloned()
            .ok_or_else(|| Error::NoSuchTable {
                table: name.to_owned(),
            })
    }

    /// The dictionary latch (one DDL statement at a time; latch order row 3).
    pub(crate) fn ddl(&self) -> &Mutex<()> {
        &self.ddl
    }

    /// The quiesce latch (latch order row 4): every change holds it **shared** for its
    /// statement (through [`Engine::write_latch`]), so writers never wait for each other on
    /// it; only what needs no change in flight takes it exclusive (`check`, the close's
    /// shutdown), and waits for the statements running to end.
    pub(crate) fn quiesce(&self) -> &SpreadLatch {
        &self.quiesce
    }

    /// The next index id to hand out (taken under the dictionary latch).
    pub(crate) fn next_index_id(&self) -> &Mutex<u64> {
        &self.next_index_id
    }

    /// The gap latch every table's entry shares.
    pub(crate) fn gaps(&self) -> &Arc<GapLatch> {
        &self.gaps
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The transaction system.
    pub fn trx_sys(&self) -> &Arc<TrxSys> {
        &self.trx_sys
    }

    /// Purge's counters and background thread.
    pub fn purge(&self) -> &Arc<PurgeCounters> {
        &self.purge
    }

    /// The undo segment.
    pub(crate) fn undo_segment(&self) -> &minnow_btree::space::Segment {
        &self.undo_segment
    }

    /// The row lock manager.
    pub fn locks(&self) -> &Arc<minnow_mvcc::LockManager> {
        &self.locks
    }

    /// Row operations since open.
    pub fn rows(&self) -> &Arc<RowCounters> {
        &self.rows
    }

    /// When the database was opened.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// The adaptive hash index.
    pub fn ahi(&self) -> &minnow_ahi::Ahi {
        &self.ahi
    }

    /// The admission door (`thread_concurrency`).
    pub fn admission(&self) -> &Admission {
        &self.admission
    }

    /// Whether close has run.
    #[inline]
    pub fn is_closed(&self) -> bool {
        self.closed.is_set()
    }
}

/// The closed flag ([`Engine::check_open`]), alone on its cache line: statements read it on
/// every start, and the lines around it (the latches and counters beside it in [`Engine`])
/// may be written at any time.
#[repr(align(128))]
#[derive(Debug, Default)]
pub(crate) struct ClosedFlag(AtomicBool);

impl ClosedFlag {
    #[inline]
    pub(crate) fn is_set(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    pub(crate) fn set(&self) {
        self.0.store(true, Ordering::Release);
    }
}

impl Engine {
    /// Closes the engine: stops purge, then, holding the dictionary latch and the quiesce
    /// latch exclusively (so no statement is changing anything, and none starts: each
    /// checks the flag after taking the latch), marks the database closed, writes each
    /// auto-increment counter's exact value, stops the status-file and log-flusher threads
    /// and shuts the pool down (see `BufferPool::shutdown`: every dirty page written, a
    /// checkpoint at the end of the log, the `ib_buffer_pool` dump); the unused extents at
    /// the end of the system tablespace leave its allocator before that, and its file is cut
    /// to match after it (`minnow_btree::space::shrink_tail`, `BufferPool::cut_space`: a
    /// power cut at any step loses nothing).
    ///
    /// `slow` is what the caller's full purge did under a slow shutdown (`fast_shutdown =
    /// 0`: the purge runs before this call, while purge's steps may still take the quiesce
    /// latch); after it succeeded the idle undo streams move down, off the end of the file
    /// (`TrxSys::rehome`). Pass `None` for a fast shutdown. Every step runs even if one
    /// before it failed; the first error is returned. Nothing changes a page afterwards.
    pub(crate) fn shutdown(&self, slow: Option<Result<()>>) -> Result<()> {
        // Purge stops first: its steps take the quiesce latch, shared.
        self.purge.stop();
        let _ddl = self.ddl.lock();
        let _q = self.quiesce.write();
        self.closed.set();
        let counters = self.persist_counters();
        // After the slow shutdown's purge, the idle undo streams move down, off the end.
        let rehomed = match &slow {
            Some(Ok(())) => self
                .trx_sys
                .rehome(&self.pool)
                .map(drop)
                .map_err(Error::from),
            _ => Ok(()),
        };
        // Then every tree's pages move down into the free pages of its segments, emptying
        // the extents at the end of the file (`BTree::pack`).
        let packed = match (&slow, &rehomed) {
            (Some(Ok(())), Ok(())) => self.pack_trees(),
            _ => Ok(()),
        };
        // The unused extents at the end of the system tablespace leave its allocator now;
        // the file is cut after the final checkpoint (`BufferPool::cut_space`).
        let shrunk = minnow_btree::space::shrink_tail(&self.pool, SYSTEM_SPACE_ID);
        if let Some(w) = self.status_file.lock().take() {
            w.stop();
        }
        let mut synced = Ok(());
        if let Some(flusher) = self.log_flusher.lock().take() {
            // Stop it (and sync what it had not) before the pool's shutdown; join it even if
            // that last sync fails.
            synced = self.pool.log().map_or(Ok(()), |log| log.shutdown());
            let _ = flusher.join();
        }
        let flushed = self.pool.shutdown();
        let cut = match (&flushed, &shrunk) {
            (Ok(()), Ok(pages)) => self.pool.cut_space(SYSTEM_SPACE_ID, *pages).map(drop),
            _ => Ok(()),
        };
        slow.unwrap_or(Ok(()))?;
        rehomed?;
        packed?;
        counters?;
        shrunk.map_err(|e| from_tree(e, SYSTEM_TABLESPACE, "(space)"))?;
        synced.map_err(|e| Error::Storage(e.into()))?;
        flushed?;
        Ok(cut?)
    }

    /// Packs the dictionary tree and every table's trees into the low end of their segments (`BTree::pack`: one mtr per page moved), so that the free
    /// extents gather at the end of the file, where the shrink at close takes them. The
    /// caller holds the dictionary latch and the quiesce latch exclusively, after the slow
    /// shutdown's full purge: nothing else changes a tree.
    fn pack_trees(&self) -> Result<()> {
        self.dict
            .pack(&self.pool)
            .map_err(|e| from_tree(e, SYSTEM_TABLESPACE, "(dictionary)"))?;
        for (name, t) in self.tables.read().iter() {
            for tree in std::iter::once(&t.clustered).chain(&t.secondary) {
                tree.pack(&self.pool)
                    .map_err(|e| from_tree(e, name, "(pack)"))?;
            }
        }
        Ok(())
    }

    /// Writes every auto-increment counter's exact value as its high-water mark, so that a
    /// clean restart leaves no gap (see the `autoinc` module docs). The caller holds the
    /// dictionary latch and the quiesce latch exclusively.
    fn persist_counters(&self) -> Result<()> {
        let mut first = Ok(());
        for (name, t) in self.tables.read().iter() {
            if let Some(ai) = &t.autoinc
                && let Err(e) = ai.persist_exact(self, name)
                && first.is_ok()
            {
                first = Err(e);
            }
        }
        first
    }

    /// The quiesce latch, shared, for a change of pages (a write statement, commit, rollback,
    /// DDL, a purge step); [`Error::Closed`] once the database is closed, checked after the
    /// latch is taken, so no change can slip in after close's final flush.
    pub fn write_latch(&self) -> Result<SpreadReadGuard<'_>> {
        let g = self.quiesce.read();
        self.check_open()?;
        Ok(g)
    }

    /// [`Error::Closed`] once the database is closed.
    #[inline]
    pub fn check_open(&self) -> Result<()> {
        if self.closed.is_set() {
            return Err(Error::Closed {
                path: self.dir.clone(),
            });
        }
        Ok(())
    }
}

impl Engine {
    /// Makes a change whose redo ends at `end` as durable as `flush_log_at_trx_commit`
    /// asks (DDL's commit points, the dictionary changes `open` finishes).
    pub(crate) fn durable(&self, end: minnow_redo::Lsn) -> Result<minnow_redo::Durability> {
        Ok(self
            .pool
            .commit_durable(end, self.config.flush_log_at_trx_commit)?)
    }

    /// Starts the background log flusher (every `flush_log_at_timeout`) unless it runs: at
    /// open under `flush_log_at_trx_commit` 0 and 2, at the first commit below `Sync` under 1.
    pub fn ensure_log_flusher(&self) -> Result<()> {
        let mut flusher = self.log_flusher.lock();
        if flusher.is_some() {
            return Ok(());
        }
        if let Some(log) = self.pool.log() {
            let handle = log
                .spawn_flusher(self.config.flush_log_at_timeout)
                .map_err(|source| Error::Thread {
                    thread: "log flusher",
                    source,
                })?;
            *flusher = Some(handle);
        }
        Ok(())
    }
}

/// Stripes of the [`GapLatch`] (a power of two): 16 KiB for the database.
const STRIPES: usize = 256;

/// One stripe, alone on its cache line: threads latching different stripes share nothing. It
/// guards one neighbour look-up and the lock (and insert or removal) that depends on it;
/// latch order: row 6 of ARCHITECTURE.md's table (after the metadata lock, before the row
/// locks, which are only tried under it), and a thread never holds two stripes.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Stripe(Mutex<()>);

/// The gap latch: `STRIPES` (256) mutexes, picked by the lock key of the record that ends the
/// gap a step works on (see the `write` gaps module, "The gap latch"). One per
/// database, shared by every table's entry.
#[derive(Debug)]
pub struct GapLatch {
    stripes: Box<[Stripe]>,
}

impl Default for GapLatch {
    fn default() -> GapLatch {
        GapLatch {
            stripes: (0..STRIPES).map(|_| Stripe::default()).collect(),
        }
    }
}

impl GapLatch {
    /// Latches the stripe of the gap that `end` (a record's lock key, or the supremum) ends.
    pub fn latch(&self, end: &LockKey) -> MutexGuard<'_, ()> {
        let h = end.hash_value();
        let n = h ^ (h >> 29);
        // Masked below the stripe count, so always in bounds.
        let i = (n as usize) & (STRIPES - 1);
        self.stripes[i].0.lock()
    }
}
