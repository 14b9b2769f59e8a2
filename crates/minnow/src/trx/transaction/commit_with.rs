//! [`Transaction::commit_with`]: durability chosen per transaction (the `durable` module docs
//! compare the three levels of choice).

use minnow_redo::{Durability, FlushAtCommit};

use super::Transaction;
use crate::error::Result;

impl Transaction {
    /// Commits as [`Transaction::commit`] does, but makes this commit as durable as `level`
    /// says, whatever [`crate::Config::flush_log_at_trx_commit`] is: `Sync` waits for the
    /// redo log to be synced (a payment under a database that commits lazily), `Write`
    /// for it to be written to the OS, `Lazy` for nothing (a bulk job's commits under a
    /// database that syncs each one). Returns the [`Durability`] reached, which may be more
    /// than asked for (another commit's sync may have covered this one).
    ///
    /// A commit below `Sync` is made durable by the background log flusher within about
    /// `flush_log_at_timeout` (started for it if the database syncs every commit and no
    /// flusher runs), or sooner by the next synced commit, [`crate::Database::sync`] or
    /// close; a crash before then loses it, and only it and the commits after it: redo is
    /// replayed in order, so a commit that was durable stays so. A transaction that wrote
    /// nothing has nothing to make durable and returns `Synced`.
    ///
    /// ```
    /// use minnow::{ColumnDef, ColumnType, Config, Database, Durability, FlushAtCommit, TableDef, Value};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let lazy = Config { flush_log_at_trx_commit: FlushAtCommit::Lazy, ..Config::default() };
    /// let db = Database::create(dir.path(), lazy)?;
    /// let t = db.create_table(TableDef::new("payments")
    ///     .column(ColumnDef::new("id", ColumnType::U64))
    ///     .primary_key(&["id"]))?;
    /// let mut tx = db.begin()?;
    /// tx.insert(&t, &[Value::UInt(1)])?;
    /// // This one must survive a power cut, whatever the database's default.
    /// assert_eq!(tx.commit_with(FlushAtCommit::Sync)?, Durability::Synced);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn commit_with(self, level: FlushAtCommit) -> Result<Durability> {
        self.commit_at(Some(level))
    }
}
