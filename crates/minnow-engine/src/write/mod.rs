//! The row writes: writes that stamp their transaction id and roll pointer, undo logging,
//! row and gap locks, a statement's rollback, the locking reads and the bulk insert into an
//! empty table, each a function of the engine, a table's entry and the transaction's state
//! ([`TrxState`]) that the `minnow` crate's `Table` and `Transaction` methods wrap. The
//! consistent reads these writes must not disturb are the [`crate::read`] module's.
//!
//! ## What a write does
//!
//! Every change of a clustered record first appends an undo record (its own
//! mini-transaction, so redo order makes the undo durable before the change), then changes
//! the record, stamping `DB_TRX_ID` with the writer's id and `DB_ROLL_PTR` with the undo
//! record's address:
//!
//! - **insert**: insert undo (the key); a row whose key exists delete-marked is updated in
//!   place instead (update undo with the old, delete-marked row).
//! - **update**: update undo (the whole old row); the record is updated in place.
//! - **delete**: delete-mark undo (the key and the old system columns: the fields stay in
//!   the record); the record gets the delete mark and stays, for readers with older views,
//!   until purge removes it (the [`crate::purge`] module).
//!
//! Secondary indexes carry no transaction ids. A delete, or an update that changes an
//! index's columns, **delete-marks** the old entry and inserts the new one (an insert that
//! finds the same entry delete-marked un-marks it): every version of a row keeps its entry,
//! so a reader with an old view finds the row through the entry of the version it sees.
//!
//! What a secondary **leaf** carries instead is `PAGE_MAX_TRX_ID`: every change above (and
//! every change a rollback makes) raises it to the writer's id, in the change's own
//! mini-transaction (the B-tree's `*_trx` calls; splits and merges carry it to the pages
//! that take the records). See "Consistent reads" below for what it buys.
//!
//! **Bulk insert into an empty table** (the `bulk` module): a transaction's inserts into a
//! table that holds no record, is not compressed and has nobody's row locks are not
//! written one by one: the transaction claims the table, buffers the rows and their
//! secondary entries in memory (no undo, no row lock), builds every index bottom-up at
//! commit and names their roots in the commit's own mini-transaction. Anything else it does with the table first writes
//! the buffered rows the ordinary way, as above.
//!
//! ## Row locks
//!
//! Before a writer touches a row it takes an exclusive lock on the row's primary key
//! (`minnow_mvcc::lock`), and before it inserts a key into a unique index, a lock on that
//! key; it keeps them until its transaction commits or rolls back. No two active
//! transactions ever change the same row, which is what makes rolling each of them back
//! independently correct. A lock another transaction holds is waited for with the
//! statement's latches let go (`WriteGuard::unlocked`), so the holder can go on and finish,
//! and DDL is not held up; the wait ends when the
//! lock is granted (the statement then carries on, re-checking the table it writes), in
//! [`Error::Deadlock`] (this transaction was the youngest in a cycle of waits: the whole
//! transaction is rolled back) or in [`Error::LockWaitTimeout`] (the statement is rolled
//! back). A unique check that meets a delete-marked entry whose row another active
//! transaction changed waits for that row's lock, then checks again.
//!
//! Gaps are locked too, as InnoDB's next-key locking does (the `gaps` module): under
//! REPEATABLE READ a locking read (`Transaction::get_for_update`,
//! `Transaction::scan_for_update`: the `locking` module) or a write by key that finds no row locks the gaps it
//! looked at, and an insert of a new record first asks for an insert intention on the record
//! after it, waiting while another transaction locks that gap; so a locking read finds no
//! phantom. READ COMMITTED takes record locks only. Plain reads are snapshot reads and lock
//! nothing, so write skew stays possible without locking reads (see `minnow::Isolation`). An
//! insert waiting for a row lock while it holds a table's AUTO-INC lock (modes 0 and 1) is
//! not part of the wait-for graph; such a cycle ends by the lock wait timeout.
//!
//! ## Rollback
//!
//! A statement starts at a **savepoint** (the undo number of its first record); if it fails
//! halfway, its records are undone newest first and it leaves no trace; a transaction's
//! rollback undoes all its records. The undoing is the [`crate::rollback`] module's (which explains why
//! it is idempotent and crash-safe): [`TrxState::rollback_to`] and [`TrxState::rollback`]
//! call it.
//!
//! ## Consistent reads
//!
//! A read (the [`crate::read`] module) takes a read view and sees a clustered record's
//! version through [`crate::read::visible`]: the record itself if the view sees its
//! `DB_TRX_ID`, else an older version rebuilt by following roll pointers through undo. A secondary entry has no id to test, so
//! a read through a secondary index looks at the entry's leaf first (InnoDB's
//! `lock_sec_rec_cons_read_sees`):
//!
//! ```text
//!   PAGE_MAX_TRX_ID < view's up limit        every change on the leaf is visible:
//!   (smallest id active at the view)          use the entry as it is; skip it if
//!                                             delete-marked; a covering read is done
//!   otherwise                                 fetch the clustered record, take its
//!                                             visible version, keep the row only if that
//!                                             version has exactly this entry
//! ```
//!
//! So a covering read stays covering while the transactions it cannot see write *other*
//! leaves of the index; only entries on leaves they touched cost a clustered lookup
//! (`Status::rows.sec_cluster_reads` counts them, `sec_cluster_reads_avoided` the others).
//! A transaction's own changes are never below its view's up limit, so it always checks
//! its own writes' leaves against the row and sees its own versions.

//!
//! ## The files
//!
//! ```text
//!   this module   TrxState (a transaction's id, undo log, locks, buffered inserts) and
//!                 WriteGuard (a statement's latches); a statement run and rolled back
//!                 to its savepoint on error; commit and rollback
//!   statement     a write statement on a table's current entry (latches, a bulk claim
//!                 waited for), and an autocommit statement's commit or rollback
//!   rows          insert, update, delete of one row: undo, record, secondary entries,
//!                 unique checks
//!   update_columns  UPDATE of named columns over the row's latest version
//!   locks, gaps   row locks, waits with the latches let go, next-key and gap locks
//!   locking       the locking reads: get_for_update, scan_for_update, and through a
//!                 unique index (by_index)
//!   bulk, bulk_buf  a transaction's inserts into an empty table, buffered and built at
//!                 commit
//!   bulk_sec      their secondary index entries, unique checks, and the build of each
//!                 secondary index
//! ```

mod bulk;
mod bulk_buf;
mod bulk_sec;
mod by_index;
mod gaps;
mod locking;
mod locks;
mod rows;
mod statement;
mod update_columns;

use crate::row::sec;
pub use bulk::BulkInsert;
use gaps::*;
pub use locking::{get_by_for_update, get_for_update, scan_for_update};
use locks::*;
pub use rows::{delete, insert, update};
pub(crate) use statement::entry_now;
pub use statement::{autocommit, insert_one, keyed_one, statement, update_one};
pub use update_columns::{column_changes, update_columns};

use minnow_mvcc::{NewRecord, RollPtr, TrxLocks, UndoLog};
use minnow_redo::Lsn;

use minnow_buf::{SpreadLatch, SpreadReadGuard};

use crate::claim::BulkClaim;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::rollback::rollback_log;

/// What a transaction holds while it runs: its id and undo log once it writes, and the redo
/// end of its last change. The `minnow` crate's `Transaction` keeps one (an autocommit
/// statement a fresh one, [`TrxState::default`]) and hands it to every write.
#[derive(Debug, Default)]
pub struct TrxState {
    pub(crate) id: u64,
    pub(crate) log: Option<UndoLog>,
    pub(crate) end: Lsn,
    /// The row locks it holds (from its first write on).
    pub(crate) locks: Option<TrxLocks>,
    /// Lock waits so far: each let go of the statement's latches, so purge may have run
    /// meanwhile.
    pub(crate) waits: u64,
    /// READ COMMITTED: its locks are record locks only (no gap locks).
    pub(crate) read_committed: bool,
    /// Its buffered inserts into the empty table it claims, if any (the `bulk` module).
    pub(crate) bulk: Option<bulk::Bulk>,
    /// The tables (by their claim's address) it tried to claim, or spilled: it does not
    /// try them again.
    pub(crate) bulk_tried: Vec<usize>,
}

/// What a write statement holds while it runs: the database's quiesce latch
/// (`Engine::quiesce`, latch order row 4) and its table's metadata lock (`TableEntry::mdl`,
/// row 5), both shared, taken in that order. Writers of different rows hold them together and never wait for each
/// other here; DDL on the table (exclusive metadata lock) and `Database::check` (exclusive
/// quiesce latch) wait for running statements. A statement that must wait for a row lock
/// lets both go for the wait (`WriteGuard::unlocked`), so that DDL and `check` are never
/// stuck behind a lock wait, and takes them again after it.
pub struct WriteGuard<'a> {
    quiesce: SpreadReadGuard<'a>,
    mdl: SpreadReadGuard<'a>,
    /// The table's bulk insert claim: a wait with the latches let go is counted there, so
    /// that no claim begins while this statement may still write (the `bulk` module docs).
    claim: &'a BulkClaim,
}

impl<'a> WriteGuard<'a> {
    /// Takes the quiesce latch, then the metadata lock `mdl`, shared; [`Error::Closed`] if
    /// the database was closed (checked under the quiesce latch, see
    /// [`Engine::write_latch`]).
    pub(crate) fn new(
        inner: &'a Engine,
        mdl: &'a SpreadLatch,
        claim: &'a BulkClaim,
    ) -> Result<WriteGuard<'a>> {
        let quiesce = inner.write_latch()?;
        Ok(WriteGuard {
            quiesce,
            mdl: mdl.read(),
            claim,
        })
    }

    /// Runs `f` (a row lock wait) with both latches let go; takes them again, in order,
    /// after it. The wait is counted in the table's bulk insert claim meanwhile.
    pub(crate) fn unlocked<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let quiesce = &mut self.quiesce;
        self.claim.wait_begins();
        let r = self.mdl.unlocked(|| quiesce.unlocked(f));
        self.claim.wait_ends();
        r
    }
}

impl TrxState {
    /// The state of a transaction that has not yet read or written; `read_committed` for
    /// READ COMMITTED (record locks only).
    pub fn new(read_committed: bool) -> TrxState {
        TrxState {
            read_committed,
            ..TrxState::default()
        }
    }

    /// The transaction's id (0 until its first write: read-only transactions never get one).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The redo end of its last change.
    pub fn end(&self) -> Lsn {
        self.end
    }

    /// True while it buffers inserts into a table it claims (the `bulk` module).
    pub fn buffers(&self) -> bool {
        self.bulk.is_some()
    }

    /// Gives the transaction its id and undo log at its first write.
    fn writer(&mut self, inner: &Engine) -> Result<u64> {
        if self.log.is_none() {
            let id = inner.trx_sys().assign_id(inner.pool())?;
            match inner.trx_sys().begin_log(inner.pool(), id) {
                Ok(log) => {
                    self.log = Some(log);
                    self.id = id;
                    self.locks = Some(if self.read_committed {
                        inner.locks().begin_read_committed(id)
                    } else {
                        inner.locks().begin(id)
                    });
                }
                Err(e) => {
                    inner.trx_sys().forget(id);
                    return Err(e.into());
                }
            }
        }
        Ok(self.id)
    }

    fn savepoint(&self) -> u64 {
        self.log.as_ref().map_or(0, UndoLog::savepoint)
    }

    fn append(&mut self, inner: &Engine, rec: NewRecord) -> Result<RollPtr> {
        self.writer(inner)?;
        let log = self.log.as_mut().ok_or(Error::TransactionEnded)?;
        Ok(inner.trx_sys().append(inner.pool(), log, rec)?)
    }

    /// Undoes every record from `savepoint` on, newest first (inside a statement).
    pub fn rollback_to(&mut self, inner: &Engine, savepoint: u64) -> Result<u64> {
        let Some(log) = self.log.as_mut() else {
            return Ok(0);
        };
        rollback_log(inner, log, savepoint)
    }

    /// Runs `f` as one statement: on error, everything it wrote is rolled back (except
    /// after [`Error::Closed`]: the engine is shut down, and the next open's recovery rolls
    /// back the whole transaction).
    pub fn statement<T>(
        &mut self,
        inner: &Engine,
        f: impl FnOnce(&mut TrxState) -> Result<T>,
    ) -> Result<T> {
        let sp = self.savepoint();
        match f(self) {
            Ok(v) => Ok(v),
            Err(e @ Error::Closed { .. }) => Err(e),
            Err(e) => {
                self.rollback_to(inner, sp)?;
                Err(e)
            }
        }
    }

    /// True if ending the transaction has nothing to do: no undo log, no row lock, no
    /// buffered insert (a read-only transaction). Its commit and rollback then take no latch,
    /// so that readers write no shared line to end (the quiesce latch's reader count).
    pub fn is_empty(&self) -> bool {
        self.log.is_none() && self.locks.is_none() && self.bulk.is_none()
    }

    /// Commits (the caller holds the quiesce latch shared); returns the commit mtr's end,
    /// `None` for a transaction that wrote nothing.
    pub fn commit(&mut self, inner: &Engine) -> Result<Option<Lsn>> {
        let end = match self.log.take() {
            Some(log) => Some(inner.trx_sys().commit(inner.pool(), &log)?),
            None => None,
        };
        // After the commit point, as InnoDB releases them (before the log is made durable).
        self.release_locks();
        Ok(end)
    }

    fn release_locks(&mut self) {
        if let Some(mut l) = self.locks.take() {
            l.release_all();
        }
    }

    /// Rolls back everything and ends the transaction (the caller holds the quiesce latch
    /// shared; each undone record takes its table's metadata lock).
    pub fn rollback(&mut self, inner: &Engine) -> Result<()> {
        // Buffered rows were never written: dropping them (and the claim) undoes them.
        self.bulk = None;
        if let Some(mut log) = self.log.take() {
            rollback_log(inner, &mut log, 0)?;
            inner.trx_sys().finish_rollback(inner.pool(), &log)?;
        }
        self.release_locks();
        Ok(())
    }
}
