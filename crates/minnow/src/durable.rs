//! Choosing durability: per database, per transaction, or now.
//!
//! A commit is durable once the redo log is synced past the commit's mini-transaction. How
//! long a commit waits for that is chosen at three levels:
//!
//! - **per database**, [`crate::Config::flush_log_at_trx_commit`]
//!   (`innodb_flush_log_at_trx_commit`): every autocommit statement and every
//!   [`crate::Transaction::commit`] syncs (1, the default), writes to the OS (2) or waits for
//!   nothing (0); under 0 and 2 a background thread syncs the log every
//!   `flush_log_at_timeout`.
//! - **per transaction**, [`crate::Transaction::commit_with`]: this commit at the level given,
//!   whatever the database's setting (a bulk job commits without a sync, a payment with
//!   one). A commit below `Sync` on a database that syncs every commit starts the background
//!   flusher (no thread runs until then), so it too is durable about `flush_log_at_timeout`
//!   after it returned, or sooner: at the next synced commit (a sync covers every commit
//!   before it), [`Database::sync`] or close.
//! - **now**, [`Database::sync`]: everything committed so far is made durable (what MySQL
//!   offers as `FLUSH ENGINE LOGS`), for an application that commits cheaply in a loop and
//!   then wants one sync for all of it.
//!
//! Every level goes through one path: the commit writes its commit mini-transaction, then
//! [`minnow_buf::BufferPool::commit_durable`] asks the redo log for the level
//! ([`minnow_redo::Log::commit`]: a group commit when syncing), and the [`Durability`] it
//! reached is what the commit returns. A level is what a commit *waits for*, not a cap: a
//! commit under `Lazy` whose redo another commit already synced returns `Synced`.

use minnow_redo::{Durability, FlushAtCommit, Lsn};

use crate::db::Database;
use crate::error::Result;

impl Database {
    /// Makes every change committed so far durable: writes and syncs the redo log up to
    /// its current end (one sync, shared with any commit syncing at the same time). Returns
    /// the log sequence number the log is now durable up to (the status's
    /// `redo.flushed_lsn` is at least this).
    ///
    /// For commits made below `Sync` ([`crate::FlushAtCommit`], per database or per
    /// [`crate::Transaction::commit_with`]): after `sync` returns they survive a crash or a power
    /// cut. Under the default `flush_log_at_trx_commit` every commit is durable already and
    /// `sync` costs one check.
    ///
    /// ```
    /// use minnow::{ColumnDef, ColumnType, Config, Database, Durability, FlushAtCommit, TableDef, Value};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let config = Config { flush_log_at_trx_commit: FlushAtCommit::Lazy, ..Config::default() };
    /// let db = Database::create(dir.path(), config)?;
    /// let t = db.create_table(TableDef::new("t")
    ///     .column(ColumnDef::new("id", ColumnType::U64))
    ///     .primary_key(&["id"]))?;
    /// for i in 0..100u64 {
    ///     t.insert(&[Value::UInt(i)])?; // no sync each
    /// }
    /// let lsn = db.sync()?; // one sync for all of them
    /// assert!(db.status()?.redo.flushed_lsn >= lsn);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sync(&self) -> Result<u64> {
        let inner = self.inner()?;
        let end = inner.pool().log().map_or(Lsn(0), |log| log.current_lsn());
        inner.pool().commit_durable(end, FlushAtCommit::Sync)?;
        Ok(end.0)
    }

    /// Makes an acknowledged change whose redo ends at `end` as durable as `level` asks
    /// (`None`: as `flush_log_at_trx_commit` asks), starting the background flusher first if
    /// `level` leaves the sync to it and it is not running.
    pub(crate) fn durable_at(&self, end: Lsn, level: Option<FlushAtCommit>) -> Result<Durability> {
        let inner = self.inner()?;
        let level = match level {
            Some(level) => {
                if level != FlushAtCommit::Sync {
                    inner.ensure_log_flusher()?;
                }
                level
            }
            None => inner.config().flush_log_at_trx_commit,
        };
        Ok(inner.pool().commit_durable(end, level)?)
    }
}
