//! [`Database::status`]: the engine's counters in one snapshot, minnow's `SHOW ENGINE INNODB
//! STATUS`; and the status file, the channel through which `minnow status` and `minnow watch`
//! read a database that is running in another process.
//!
//! ## What a snapshot holds
//!
//! ```text
//!   Status
//!   ├─ uptime                        since open
//!   ├─ buffer_pool   BUFFER POOL AND MEMORY: frames, free, LRU young/old, dirty, hit rate,
//!   │                pages read (on demand, by read-ahead), written (flush list, LRU tail),
//!   │                evictions, pages made young / not young
//!   ├─ redo          LOG: current LSN, flushed LSN, last checkpoint, checkpoint age and the
//!   │                capacity it must stay under, mtr groups appended, writes, syncs
//!   ├─ doublewrite   batches, pages copied to the segments, pages written in place, syncs
//!   │                (absent with innodb_doublewrite = off)
//!   ├─ rows          ROW OPERATIONS: rows read, inserted, updated, deleted since open;
//!   │                secondary-index entries whose row was looked up in the clustered
//!   │                index, and entries that were not (INNODB_METRICS sec_rec_cluster_reads
//!   │                and sec_rec_cluster_reads_avoided)
//!   ├─ adaptive_hash_index  lookups, hits, misses, pages hashed, built and dropped, entries, memory and limit
//!   ├─ transactions  TRANSACTIONS: next transaction id, active transactions, history list
//!   │                length, open read views and the oldest one's age, undo pages, purge's
//!   │                counters (logs, records, entries removed, undo pages freed), row locks
//!   │                held and waiting, lock waits, deadlocks and timeouts since open
//!   └─ compression   per compressed tablespace (INFORMATION_SCHEMA.INNODB_CMP, per file):
//!                    file, space id, block size, algorithm, size, compress ops / ok /
//!                    failures and time, decompress ops and time, bytes in and out; and the
//!                    buffer pool's cache of compressed blocks (INNODB_CMPMEM's role)
//! ```
//!
//! [`SECTIONS_NOT_BUILT`] names InnoDB status sections minnow has no source for (none today),
//! rather than filling them with made-up zeros; the CLI prints any section it finds in the
//! JSON without knowing it in advance.
//!
//! ## The status file: reading a running database from outside
//!
//! With [`crate::Config::status_file`] set, a background thread rewrites
//! [`STATUS_FILE`] (`minnow_status.json`) in the data directory at that interval, as InnoDB's
//! `innodb_status_file` option writes `innodb_status.<pid>`. It writes a temporary file and
//! renames it over the old one, so a reader sees the previous snapshot or the next, never half
//! of one. The thread only reads counters and writes its own file: it never takes an engine
//! lock, and a failed write (a full disk) is skipped and retried at the next tick, never
//! reported to the engine. `close` stops the thread and removes the file; a file left behind
//! by a process that died stops being refreshed, which readers detect by its age
//! (`taken_at_unix_ms` against `interval_ms`). The file is not synced: it is a window, not a
//! record, and after a power cut it may be empty or stale.
//!
//! How a snapshot is taken without a lock any statement takes is in the engine's `status`
//! module (`minnow-engine`).

use crate::db::Database;
use crate::error::Result;

pub use minnow_engine::status::{
    BufferPoolStatus, CompressionStatus, DoublewriteStatus, RedoStatus, RowStatus,
    SECTIONS_NOT_BUILT, STATUS_FILE, STATUS_FORMAT, STATUS_VERSION, Status, TransactionStatus,
    ZipSpaceStatus,
};
pub(crate) use minnow_engine::status::{RowOp, collect};

impl Database {
    /// A snapshot of the engine's counters, minnow's `SHOW ENGINE INNODB STATUS`. Takes no
    /// lock that row operations take (see the `status` module docs), so it can be polled
    /// while any number of threads work.
    pub fn status(&self) -> Result<Status> {
        let inner = self.inner()?;
        Ok(collect(
            inner.pool(),
            inner.rows(),
            inner.ahi(),
            inner.started(),
            (inner.trx_sys(), inner.purge(), inner.locks()),
        ))
    }
}
