//! What a [`Database`] handle is: the state its clones share, what `close` and the last drop
//! do, [`Database::open_or_create`], and [`Database::transaction`] with its retries.
//!
//! ## One engine, many handles
//!
//! ```text
//!   Database ──┐                       Handle (one per open)          Engine (minnow-engine)
//!   Database ──┼── Arc<Handle> ──────▶ report, LOCK ── Arc<Engine> ──▶ pool, dictionary,
//!   Table.db ──┤                       close / drop                   trx system, closed flag
//!   Transaction.db, Rows.db ──┘                                          ▲
//!                                                   purge thread ── Weak ┘
//! ```
//!
//! Every [`Database`], [`crate::Table`], [`crate::Transaction`] and [`crate::Rows`] holds one
//! `Arc` of the same `Handle`. [`Database::close`] closes the engine for all of them at once:
//! it stops purge, takes the dictionary latch and the quiesce latch exclusively (waiting for
//! the statements that are changing pages to finish), sets the **closed flag**, writes the
//! auto-increment counters, flushes every page and checkpoints, and only then lets go of the
//! directory's `LOCK`. A statement checks the flag when it starts (a load of a cache line
//! nobody writes while the database is open) and every change checks it again after taking
//! the quiesce latch, so a statement that was waiting for a row lock during close fails
//! with [`Error::Closed`] without writing anything. Reads that had already started finish on
//! the pages in memory; scans fail at their next row. A transaction left open at close has
//! its changes (and its undo log, still active) on disk: the next `open` rolls it back, as
//! after a crash, and its own drop does not touch the closed engine.
//!
//! The engine's part of close (the order above, from a slow shutdown's purge and stopping
//! purge to the pool's shutdown) is `minnow_engine::Engine::close`; the `Handle` adds the
//! directory's `LOCK` and the open report. Opening is the engine's too
//! (`minnow_engine::Engine::open`, which hands back the engine, the `LOCK` and the report).
//!
//! The `Handle` is dropped when its last holder is: if nobody called `close`, that drop
//! closes the engine the same way (errors ignored). The engine's memory goes with the last
//! `Arc`, whatever it is.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use minnow_io::DirLock;
use parking_lot::Mutex;

use crate::config::Config;
use crate::db::Database;
use crate::dict::SYSTEM_TABLESPACE;
use crate::error::{Error, Result};
use crate::trx::{Isolation, Transaction};
use minnow_engine::{Engine, OpenReport, Opened};

/// How many times [`Database::transaction`] runs its closure again after a retryable error
/// ([`Error::is_retryable`]): at most `1 + TRANSACTION_RETRIES` runs in all.
pub const TRANSACTION_RETRIES: u32 = 4;

/// How [`Database::transaction_with`] runs a transaction: its isolation level and how many
/// times it retries after a retryable error. The default is REPEATABLE READ with
/// [`TRANSACTION_RETRIES`] retries; an [`Isolation`] converts into the options with that
/// level and the default retries.
///
/// ```
/// use minnow::{Isolation, TransactionOptions};
///
/// let opts = TransactionOptions::default().isolation(Isolation::ReadCommitted).retries(20);
/// assert_eq!(opts.retry_limit(), 20);
/// assert_eq!(TransactionOptions::from(Isolation::ReadCommitted).retry_limit(), minnow::TRANSACTION_RETRIES);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransactionOptions {
    isolation: Isolation,
    retries: u32,
}

impl Default for TransactionOptions {
    fn default() -> TransactionOptions {
        TransactionOptions {
            isolation: Isolation::default(),
            retries: TRANSACTION_RETRIES,
        }
    }
}

impl From<Isolation> for TransactionOptions {
    fn from(isolation: Isolation) -> TransactionOptions {
        TransactionOptions::default().isolation(isolation)
    }
}

impl TransactionOptions {
    /// The isolation level of each run.
    pub fn isolation(self, isolation: Isolation) -> TransactionOptions {
        TransactionOptions { isolation, ..self }
    }

    /// At most `retries` runs again after the first (0: run once, never retry). The pause
    /// before each doubles from 1 ms and stays at 64 ms from the seventh on.
    pub fn retries(self, retries: u32) -> TransactionOptions {
        TransactionOptions { retries, ..self }
    }

    /// The isolation level set.
    pub fn isolation_level(&self) -> Isolation {
        self.isolation
    }

    /// The retries allowed after the first run.
    pub fn retry_limit(&self) -> u32 {
        self.retries
    }
}

/// The pause before retry `n` (0-based) of [`Database::transaction`]: 1, 2, 4, 8 ms, ... up to
/// 64 ms, so the transaction that won a deadlock can finish before the loser runs again.
fn backoff(n: u32) -> Duration {
    Duration::from_millis(1 << n.min(6))
}

/// What every clone of a [`Database`] shares (see the module docs). Aligned to two cache
/// lines so that, inside its `Arc`, the reference counts sit on lines of their own: every
/// transaction clones the `Database` at begin and drops it at its end (a write of the
/// count), while every statement reads `inner` from here, and a reader should not miss in
/// its cache because another thread began a transaction.
#[repr(align(128))]
pub(crate) struct Handle {
    pub(crate) inner: Arc<Engine>,
    /// What `open` did (all zero after `create`).
    pub(crate) report: OpenReport,
    /// The data directory's `LOCK`, held until the engine has shut down; `None` once closed.
    /// Its mutex also makes a second `close` wait for the first.
    lock: Mutex<Option<DirLock>>,
}

impl Handle {
    /// Closes the engine once (a second call finds the lock gone and does nothing), then
    /// lets go of the directory's `LOCK`, even if the shutdown failed.
    fn close(&self) -> Result<()> {
        let mut lock = self.lock.lock();
        if lock.is_none() {
            return Ok(());
        }
        let r = self.inner.close();
        *lock = None;
        r
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

impl Database {
    /// A handle on a freshly started engine, holding the directory's `LOCK`.
    pub(crate) fn from_parts(opened: Opened) -> Database {
        Database {
            handle: Arc::new(Handle {
                inner: opened.engine,
                report: opened.report,
                lock: Mutex::new(Some(opened.lock)),
            }),
        }
    }

    /// Opens the database in `dir` if it holds one ([`Database::open`], recovery included),
    /// or creates one there ([`Database::create`]) if `dir` is missing or empty. A
    /// directory that holds other files but no `ibdata1` is [`Error::Directory`]: it is
    /// not a minnow database, and nothing is created over it.
    ///
    /// ```
    /// use minnow::{ColumnDef, ColumnType, Config, Database, TableDef, Value};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("shop");
    /// let db = Database::open_or_create(&path, Config::default())?; // created
    /// db.create_table(TableDef::new("t").column(ColumnDef::new("id", ColumnType::U64)).primary_key(&["id"]))?;
    /// db.close()?;
    /// let db = Database::open_or_create(&path, Config::default())?; // opened
    /// assert_eq!(db.tables()?, ["t"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_or_create(dir: impl AsRef<Path>, config: Config) -> Result<Database> {
        let dir = dir.as_ref();
        if dir.join(SYSTEM_TABLESPACE).exists() {
            return Database::open(dir, config);
        }
        let dir_err = |reason: String| Error::Directory {
            path: dir.to_path_buf(),
            reason,
        };
        match std::fs::read_dir(dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(dir_err(e.to_string())),
            Ok(entries) => {
                // A `LOCK` alone is what a `create` that failed early leaves.
                let mut others = Vec::new();
                for e in entries {
                    let name = e.map_err(|e| dir_err(e.to_string()))?.file_name();
                    if name != minnow_io::LOCK_FILE {
                        others.push(name.to_string_lossy().into_owned());
                    }
                }
                if !others.is_empty() {
                    others.sort();
                    others.truncate(3);
                    return Err(dir_err(format!(
                        "holds files ({}, ...) but no {SYSTEM_TABLESPACE}: not a minnow \
                         database, and not empty, so none is created there",
                        others.join(", ")
                    )));
                }
            }
        }
        Database::create(dir, config)
    }

    /// Closes the database cleanly for **every** handle of it: its clones, its tables, open
    /// transactions and scans. Waits for the statements that are changing pages, writes
    /// each auto-increment counter's exact value, stops the page cleaners, writes every
    /// dirty page, checkpoints at the end of the log (so the next `open` replays nothing),
    /// writes the `ib_buffer_pool` dump and lets go of the directory's `LOCK`, so the
    /// directory can be opened again at once. Afterwards every call through any handle is
    /// [`Error::Closed`]; a transaction still open is rolled back by the next `open` (see
    /// the crate docs, "Handles and lifetime"). Closing a database that another handle
    /// closed already does nothing. Dropping the last handle without `close` does the same
    /// and ignores errors.
    pub fn close(self) -> Result<()> {
        self.handle.close()
    }

    /// True once the database is closed ([`Database::close`] through any handle).
    pub fn is_closed(&self) -> bool {
        self.handle.inner.is_closed()
    }

    /// Runs `f` in a REPEATABLE READ transaction and commits it, retrying on a deadlock or
    /// a lock wait timeout ([`Error::is_retryable`]): the transaction is rolled back and
    /// `f` runs again in a new one, after a short pause (1, 2, 4, 8 ms), at most
    /// [`TRANSACTION_RETRIES`] times; then the last error is returned. Any other error from
    /// `f` or from the commit rolls the transaction back and is returned at once. `f` may
    /// therefore run more than once: it should do nothing outside the transaction that must
    /// not be repeated. The commit's durability is `flush_log_at_trx_commit`'s.
    ///
    /// ```
    /// use minnow::{ColumnDef, ColumnType, Config, Database, TableDef, Value};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Database::create(dir.path(), Config::default())?;
    /// let stock = db.create_table(TableDef::new("stock")
    ///     .column(ColumnDef::new("item", ColumnType::U64))
    ///     .column(ColumnDef::new("count", ColumnType::I64))
    ///     .primary_key(&["item"]))?;
    /// stock.insert(&[Value::UInt(7), Value::Int(3)])?;
    /// let left = db.transaction(|tx| {
    ///     let row = tx.get_for_update(&stock, &[Value::UInt(7)])?.expect("item 7");
    ///     let Value::Int(n) = row[1] else { unreachable!() };
    ///     tx.update(&stock, &[Value::UInt(7), Value::Int(n - 1)])?;
    ///     Ok(n - 1)
    /// })?;
    /// assert_eq!(left, 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn transaction<T>(&self, f: impl FnMut(&mut Transaction) -> Result<T>) -> Result<T> {
        self.transaction_with(Isolation::default(), f)
    }

    /// [`Database::transaction`] with other options: an isolation level
    /// (`db.transaction_with(Isolation::ReadCommitted, f)`) or [`TransactionOptions`], which
    /// also set how many times it retries.
    pub fn transaction_with<T>(
        &self,
        options: impl Into<TransactionOptions>,
        mut f: impl FnMut(&mut Transaction) -> Result<T>,
    ) -> Result<T> {
        let options = options.into();
        let mut retries = 0;
        loop {
            let mut tx = self.begin_with(options.isolation)?;
            let e = match f(&mut tx) {
                Ok(v) => return tx.commit().map(|_| v),
                Err(e) => {
                    // A deadlock has rolled the transaction back already; anything else
                    // is rolled back here, and a failed rollback is the error to report.
                    tx.end_after_error()?;
                    e
                }
            };
            if !e.is_retryable() || retries >= options.retries {
                return Err(e);
            }
            std::thread::sleep(backoff(retries));
            retries += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_stays_small() {
        let ms: Vec<u128> = (0..TRANSACTION_RETRIES)
            .map(|n| backoff(n).as_millis())
            .collect();
        assert_eq!(ms, [1, 2, 4, 8]);
        assert_eq!(backoff(60).as_millis(), 64);
    }
}
