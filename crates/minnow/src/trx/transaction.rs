//! The public [`Transaction`]: statements under row locks, consistent reads, commit and
//! rollback.

use minnow_btree::record::Value;
use minnow_mvcc::ReadView;
use minnow_redo::{Durability, FlushAtCommit};

use std::borrow::Cow;
use std::sync::OnceLock;

use crate::db::Database;
use crate::error::{Error, Result};
use crate::row::ToKey;
use crate::status::RowOp;
use minnow_engine::write::{self, TrxState, WriteGuard};
use minnow_engine::{Engine, TableEntry};

use super::{Isolation, Snapshot};

mod commit_with;
mod statements;

// ---- The public transaction ----

/// A transaction: reads see one snapshot (REPEATABLE READ) or one per statement (READ
/// COMMITTED); writes become visible to others and durable at [`Transaction::commit`], or
/// vanish at [`Transaction::rollback`]. Dropping a transaction that was not committed rolls
/// it back. Every method taking a [`crate::Table`] refuses a handle of another database
/// ([`Error::ForeignTable`]). See the crate docs, "Transactions".
///
/// It owns a clone of its [`Database`] (no lifetime), so it can live in a struct beside
/// the database and its tables, or move to another thread (it is `Send`). Consistent reads
/// ([`Transaction::get`], [`Transaction::scan`], [`Transaction::count`], ...) take `&self`:
/// several may run through a shared reference, and a row read can feed a write without a
/// borrow conflict. Writes and locking reads take `&mut self`.
pub struct Transaction {
    db: Database,
    isolation: Isolation,
    /// Its state, behind a mutex only so that a read through `&self` can spill the
    /// transaction's buffered inserts first (the `bulk` module); `&mut self` methods reach it
    /// without locking.
    state: parking_lot::Mutex<TrxState>,
    /// REPEATABLE READ's read view, taken at the first consistent read (through `&self`,
    /// hence the cell); READ COMMITTED takes a fresh one per statement and keeps none. Kept
    /// as the [`Snapshot`] reads take, so that a read borrows it rather than cloning it.
    view: OnceLock<Snapshot>,
    /// Set while the state may hold buffered inserts (set and cleared through `&mut self`):
    /// a consistent read looks at it before taking the state's mutex to spill, so that the
    /// reads of a transaction that buffers nothing take no lock.
    buffering: bool,
    ended: bool,
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("id", &self.state.try_lock().map(|s| s.id()))
            .field("isolation", &self.isolation)
            .field("ended", &self.ended)
            .finish()
    }
}

impl Database {
    /// The row lock manager's counters: waits, deadlocks, timeouts, locks held and
    /// transactions waiting now.
    pub fn lock_stats(&self) -> Result<minnow_mvcc::LockStats> {
        Ok(self.inner()?.locks().stats())
    }

    /// Starts a REPEATABLE READ transaction.
    pub fn begin(&self) -> Result<Transaction> {
        self.begin_with(Isolation::default())
    }

    /// Starts a transaction with the given isolation level. Nothing happens until its first
    /// read (which takes the read view) or write (which gives it an id and an undo log).
    pub fn begin_with(&self, isolation: Isolation) -> Result<Transaction> {
        self.inner()?;
        Ok(Transaction {
            db: self.clone(),
            isolation,
            state: parking_lot::Mutex::new(TrxState::new(isolation == Isolation::ReadCommitted)),
            view: OnceLock::new(),
            buffering: false,
            ended: false,
        })
    }
}

impl Transaction {
    /// The transaction's id (0 until its first write: read-only transactions never get one).
    pub fn id(&self) -> u64 {
        self.state.lock().id()
    }

    /// The isolation level.
    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    fn live(&self) -> Result<&Engine> {
        if self.ended {
            return Err(Error::TransactionEnded);
        }
        self.db.inner()
    }

    /// The snapshot for the next read: the transaction's view (REPEATABLE READ, taken at the
    /// first read, borrowed) or a fresh one (READ COMMITTED).
    pub(crate) fn snapshot(&self) -> Result<Cow<'_, Snapshot>> {
        let inner = self.live()?;
        Ok(match self.isolation {
            Isolation::RepeatableRead => Cow::Borrowed(
                self.view
                    .get_or_init(|| Snapshot::View(inner.trx_sys().open_view(self.id()))),
            ),
            Isolation::ReadCommitted => {
                Cow::Owned(Snapshot::View(inner.trx_sys().open_view(self.id())))
            }
        })
    }

    /// The snapshot for a consistent read of `table` (checked to be of this database): if
    /// this transaction buffers inserts into it, they are spilled first, so the read sees
    /// them through the ordinary read path (the `bulk` module).
    pub(crate) fn read_snapshot(&self, table: &crate::Table) -> Result<Cow<'_, Snapshot>> {
        table.belongs_to(&self.db)?;
        if self.buffering {
            let mut st = self.state.lock();
            if st.claims(&table.t) {
                st.spill(self.live()?)?;
            }
        }
        self.snapshot()
    }

    /// The read view this transaction's next consistent read uses (REPEATABLE READ: the one
    /// taken at its first read, taken now if there was none; READ COMMITTED: a fresh one):
    /// its limits and active ids say exactly which writers' versions it sees
    /// ([`crate::RowHistory::seen_by`] picks the version of a chain it would read). For
    /// inspection and teaching: the type is [`crate::history::ReadView`].
    pub fn read_view(&self) -> Result<ReadView> {
        let Snapshot::View(v) = &*self.snapshot()?;
        Ok(ReadView::clone(v))
    }

    /// Runs one write statement (holding its table's metadata lock shared: see
    /// [`WriteGuard`]), rolled back to its start if it fails;
    /// a deadlock rolls back the whole transaction (as InnoDB's), which then has ended.
    fn write<T>(
        &mut self,
        table: &crate::Table,
        f: impl FnOnce(&Engine, &TableEntry, &mut TrxState, &mut WriteGuard<'_>) -> Result<T>,
    ) -> Result<T> {
        self.live()?;
        table.belongs_to(&self.db)?;
        let inner = table.db.inner()?;
        let state = self.state.get_mut();
        if state.claims(&table.t) {
            // Anything but a plain insert reads or changes the table the ordinary way.
            state.spill(inner)?;
        }
        self.buffering = state.buffers();
        let me = state.id();
        let r = write::statement(inner, &table.t, me, |inner, t, w| {
            let r = state.statement(inner, |st| f(inner, t, st, w));
            if let Some(Snapshot::View(v)) = self.view.get_mut() {
                v.set_creator(state.id());
            }
            r
        });
        if matches!(r, Err(Error::Deadlock { .. })) {
            self.rollback_inner()?;
        }
        r
    }

    /// Inserts a row (see [`crate::Table::insert`]); returns what the autocommit
    /// [`crate::Table::insert`] returns.
    pub fn insert(&mut self, table: &crate::Table, row: &[Value]) -> Result<()> {
        self.insert_returning_id(table, row).map(|_| ())
    }

    /// Replaces the row with the same primary key (see [`crate::Table::update`]); returns
    /// what the autocommit [`crate::Table::update`] returns.
    pub fn update(&mut self, table: &crate::Table, row: &[Value]) -> Result<()> {
        self.write(table, |inner, t, st, w| {
            let row = t.meta.normalise_row(row)?;
            write::update(inner, t, st, w, &row)
        })?;
        self.db.count_rows(RowOp::Update, 1);
        Ok(())
    }

    /// Deletes the row with primary key `key`; false if there was none (as the autocommit
    /// [`crate::Table::delete`]).
    pub fn delete(&mut self, table: &crate::Table, key: impl ToKey) -> Result<bool> {
        let key: &[Value] = &key.to_key();
        let found = self.write(table, |inner, t, st, w| {
            // Borrowed when already normal (no copy of the key per removal).
            let key = t.meta.normalise_key_cow(&t.meta.pk, key)?;
            write::delete(inner, t, st, w, &key)
        })?;
        self.db.count_rows(RowOp::Delete, u64::from(found));
        Ok(found)
    }

    /// The row with primary key `key` as this transaction sees it.
    pub fn get(&self, table: &crate::Table, key: impl ToKey) -> Result<Option<Vec<Value>>> {
        let key: &[Value] = &key.to_key();
        let snap = self.read_snapshot(table)?;
        table.get_in(&snap, key, None)
    }

    /// The columns `columns` (by name, in the order wanted) of the row with primary key
    /// `key` as this transaction sees it: [`Transaction::get`] decoding only those columns
    /// (see [`crate::Table::get_columns`]). When the newest version of the row is one this
    /// transaction does not see (an uncommitted change, or one committed after its read
    /// view), the columns come from the version it sees.
    ///
    /// ```
    /// use minnow::{ColumnDef, ColumnType, Config, Database, TableDef, Value};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Database::create(dir.path(), Config::default())?;
    /// let t = db.create_table(
    ///     TableDef::new("acct")
    ///         .column(ColumnDef::new("id", ColumnType::U64))
    ///         .column(ColumnDef::new("owner", ColumnType::Var(20)))
    ///         .column(ColumnDef::new("balance", ColumnType::I64))
    ///         .primary_key(&["id"]),
    /// )?;
    /// t.insert(&[Value::UInt(1), Value::text("ada"), Value::Int(10)])?;
    /// let mut reader = db.begin()?;
    /// let mut writer = db.begin()?;
    /// writer.update(&t, &[Value::UInt(1), Value::text("ada"), Value::Int(99)])?;
    /// // The writer has not committed: the reader sees the committed balance.
    /// let got = reader.get_columns(&t, &[Value::UInt(1)], &["balance"])?;
    /// assert_eq!(got, Some(vec![Value::Int(10)]));
    /// writer.commit()?;
    /// reader.commit()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_columns(
        &self,
        table: &crate::Table,
        key: impl ToKey,
        columns: &[&str],
    ) -> Result<Option<Vec<Value>>> {
        let key: &[Value] = &key.to_key();
        let snap = self.read_snapshot(table)?;
        table.get_in(&snap, key, Some(columns))
    }

    /// Runs `f` on the row with primary key `key` as this transaction sees it, read in
    /// place ([`crate::Table::get_with`], with its rules: `f` runs under the leaf's latch,
    /// must be short and must not call into the database).
    pub fn get_with<R>(
        &self,
        table: &crate::Table,
        key: impl ToKey,
        f: impl FnOnce(&crate::RowView<'_>) -> Result<R>,
    ) -> Result<Option<R>> {
        let key: &[Value] = &key.to_key();
        let snap = self.read_snapshot(table)?;
        table.get_in_with(&snap, key, f)
    }

    /// [`Transaction::get_with`] for a table whose primary key is one byte column (`Fixed`,
    /// `Var`, `Blob`, `Text`), the key given as its bytes, borrowed: the same read without
    /// building a [`Value`] for the key (see [`crate::Table::get_bytes_with`]).
    ///
    /// ```
    /// use minnow::{ColumnDef, ColumnType, Config, Database, TableDef, Value};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Database::create(dir.path(), Config::default())?;
    /// let t = db.create_table(
    ///     TableDef::new("kv")
    ///         .column(ColumnDef::new("k", ColumnType::Fixed(4)))
    ///         .column(ColumnDef::new("v", ColumnType::Var(100)))
    ///         .primary_key(&["k"]),
    /// )?;
    /// t.insert(&[Value::Bytes(b"key1".to_vec()), Value::text("one")])?;
    /// let tx = db.begin()?;
    /// let v = tx.get_bytes_with(&t, b"key1", |row| Ok(row.bytes(1)?.map(|b| b.into_owned())))?;
    /// assert_eq!(v, Some(Some(b"one".to_vec())));
    /// // A key of the wrong length for the Fixed(4) column is refused, as a Value's would be.
    /// assert!(tx.get_bytes_with(&t, b"key", |_| Ok(())).is_err());
    /// tx.commit()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_bytes_with<R>(
        &self,
        table: &crate::Table,
        key: &[u8],
        f: impl FnOnce(&crate::RowView<'_>) -> Result<R>,
    ) -> Result<Option<R>> {
        let snap = self.read_snapshot(table)?;
        table.get_in_bytes_with(&snap, key, f)
    }

    /// A locking read (`SELECT ... FOR UPDATE`): takes the row's exclusive lock, waiting as
    /// a write does, then returns the row's **latest committed** version (a current read, not
    /// the snapshot), or `None` if there is no such row (the key stays locked either way,
    /// until the transaction ends). What an `UPDATE ... SET k=k+1` reads: a read-modify-write
    /// through `get_for_update` then [`Transaction::update`] loses no concurrent update,
    /// which one through [`Transaction::get`] (the snapshot) can. Under REPEATABLE READ a
    /// missing row also locks the gap it would go in (a gap lock on the next record), so no
    /// other transaction can insert it until this one ends. Errors as a write's: a deadlock
    /// rolls the whole transaction back, a lock wait timeout only this statement.
    pub fn get_for_update(
        &mut self,
        table: &crate::Table,
        key: impl ToKey,
    ) -> Result<Option<Vec<Value>>> {
        let key: &[Value] = &key.to_key();
        self.write(table, |inner, t, st, w| {
            write::get_for_update(inner, t, st, w, key)
        })
    }

    /// A locking range read over the primary key (`SELECT ... FOR UPDATE` of a range): the
    /// rows of `scan`'s range, as [`Transaction::scan`] returns them (its columns, limit and
    /// order), but each read at its **latest committed** version (or this transaction's own)
    /// under an exclusive lock, waiting as a write does, rather than from the snapshot.
    ///
    /// Under REPEATABLE READ the locks are next-key locks, on every record read and on the
    /// first record past the range (or the end of the table), so until this transaction ends
    /// no other transaction can change or delete a row of the range, nor **insert** one into
    /// it: reading the range again, locking or not, finds no phantom. Under READ COMMITTED
    /// only the rows read are locked, and rows inserted into the range meanwhile show up on
    /// the next read. A reverse scan locks the whole range as a forward one does. Errors as a
    /// write's: a deadlock rolls the whole transaction back, a lock wait timeout only this
    /// statement (its locks stay).
    ///
    /// ```
    /// use std::ops::Bound;
    /// use minnow::{ColumnDef, ColumnType, Config, Database, Scan, TableDef, Value};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let config = Config { lock_wait_timeout: std::time::Duration::from_millis(50), ..Config::default() };
    /// let db = Database::create(dir.path(), config)?;
    /// let t = db.create_table(TableDef::new("t")
    ///     .column(ColumnDef::new("id", ColumnType::U32))
    ///     .primary_key(&["id"]))?;
    /// for i in [10u64, 20, 30] {
    ///     t.insert(&[Value::UInt(i)])?;
    /// }
    /// let mut tx = db.begin()?;
    /// let range = Scan::range(Bound::Included(vec![Value::UInt(15)]), Bound::Excluded(vec![Value::UInt(25)]));
    /// assert_eq!(tx.scan_for_update(&t, range)?, [vec![Value::UInt(20)]]);
    /// // Another transaction cannot insert into the range (nor next to it, up to 30)...
    /// assert!(matches!(t.insert(&[Value::UInt(25)]), Err(minnow::Error::LockWaitTimeout { .. })));
    /// // ...but can beyond the locked gaps.
    /// t.insert(&[Value::UInt(35)])?;
    /// tx.commit()?;
    /// t.insert(&[Value::UInt(25)])?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn scan_for_update(
        &mut self,
        table: &crate::Table,
        scan: crate::Scan,
    ) -> Result<Vec<Vec<Value>>> {
        self.write(table, |inner, t, st, w| {
            write::scan_for_update(inner, t, st, w, scan.args())
        })
    }

    /// A primary-key scan as this transaction sees the table (see [`crate::Table::scan`]).
    pub fn scan(&self, table: &crate::Table, scan: crate::Scan) -> Result<crate::Rows> {
        let snap = self.read_snapshot(table)?.into_owned();
        table.scan_in(snap, scan)
    }

    /// Runs `f` on each row of a primary-key range as this transaction sees the table, read
    /// in place ([`crate::Table::scan_with`], with its rules: `f` runs under a leaf's latch,
    /// must be short and must not call into the database). Returns the number of rows `f`
    /// got.
    pub fn scan_with(
        &self,
        table: &crate::Table,
        scan: crate::Scan,
        f: impl FnMut(&crate::RowView<'_>) -> Result<bool>,
    ) -> Result<u64> {
        let snap = self.read_snapshot(table)?;
        table.scan_with_in(&snap, &scan, f)
    }

    /// The number of rows of `table` this transaction sees: its own changes included, others'
    /// as its read view says (see [`crate::Table::count`]).
    pub fn count(&self, table: &crate::Table) -> Result<u64> {
        let snap = self.read_snapshot(table)?;
        table.count_in(&snap)
    }

    /// A secondary-index scan as this transaction sees the table (see
    /// [`crate::Table::scan_index`]).
    pub fn scan_index(
        &self,
        table: &crate::Table,
        index: &str,
        scan: crate::Scan,
    ) -> Result<crate::Rows> {
        let snap = self.read_snapshot(table)?.into_owned();
        table.scan_index_in(snap, index, scan)
    }

    /// Commits: the commit mini-transaction marks the undo log committed (the commit point),
    /// then the redo log is made as durable as `flush_log_at_trx_commit` says. A read-only
    /// transaction has nothing to make durable and returns `Synced`.
    pub fn commit(self) -> Result<Durability> {
        self.commit_at(None)
    }

    /// [`Transaction::commit`] with durability `level` (`None`: `flush_log_at_trx_commit`).
    fn commit_at(mut self, level: Option<FlushAtCommit>) -> Result<Durability> {
        self.live()?;
        self.ended = true;
        let inner = self.db.inner()?;
        if self.state.get_mut().is_empty() {
            return Ok(Durability::Synced);
        }
        // Takes its latches itself (a bulk insert's commit takes the DDL mutex first).
        let end = self.state.get_mut().commit_bulk(inner)?;
        match end {
            Some(end) => self.db.durable_at(end, level),
            None => Ok(Durability::Synced),
        }
    }

    /// Rolls back every change of the transaction.
    pub fn rollback(mut self) -> Result<()> {
        self.rollback_inner()
    }

    fn rollback_inner(&mut self) -> Result<()> {
        self.live()?;
        self.ended = true;
        let inner = self.db.inner()?;
        if self.state.get_mut().is_empty() {
            return Ok(());
        }
        let _q = inner.write_latch()?;
        self.state.get_mut().rollback(inner)
    }

    /// Ends the transaction after a statement or the caller's code failed
    /// ([`Database::transaction`]): rolls it back unless it has ended already (a deadlock
    /// rolls its victim back).
    pub(crate) fn end_after_error(mut self) -> Result<()> {
        if self.ended {
            return Ok(());
        }
        self.rollback_inner()
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        if !self.ended {
            let _ = self.rollback_inner();
        }
    }
}
