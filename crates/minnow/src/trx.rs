//! Transactions: writes that stamp their transaction id and roll pointer, undo logging,
//! statement and transaction rollback, recovery rollback, and consistent reads through
//! read views.
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
//! - **delete**: delete-mark undo (the whole old row); the record gets the delete mark and
//!   stays, for readers with older views, until purge removes it (`crate::purge`).
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
//! ## Row locks
//!
//! Before a writer touches a row it takes an exclusive lock on the row's primary key
//! (`minnow_mvcc::lock`), and before it inserts a key into a unique index, a lock on that
//! key; it keeps them until its transaction commits or rolls back. No two active
//! transactions ever change the same row, which is what makes rolling each of them back
//! independently correct. A lock another transaction holds is waited for with the writer
//! lock (`Inner::write`) let go, so the holder can go on and finish; the wait ends when the
//! lock is granted (the statement then carries on, re-checking the table it writes), in
//! [`Error::Deadlock`] (this transaction was the youngest in a cycle of waits: the whole
//! transaction is rolled back) or in [`Error::LockWaitTimeout`] (the statement is rolled
//! back). A unique check that meets a delete-marked entry whose row another active
//! transaction changed waits for that row's lock, then checks again.
//!
//! There are no gap locks: a transaction's range reads are snapshot reads, and nothing stops
//! another transaction from inserting into a range it read (the write-skew family of
//! anomalies stays possible, see [`Isolation`]). An insert waiting for a row lock while it
//! holds a table's AUTO-INC lock (modes 0 and 1) is not part of the wait-for graph; such a
//! cycle ends by the lock wait timeout.
//!
//! ## Rollback
//!
//! A statement starts at a **savepoint** (the undo number of its first record); if it fails
//! halfway, its records are undone newest first and it leaves no trace. A transaction's
//! rollback undoes all its records. Undoing a record is idempotent (it acts only if the
//! clustered record's roll pointer still points at that undo record), and each undone record
//! is then popped from the log in its own mini-transaction, so a crash during a rollback just
//! means the rollback runs again at the next open. The secondary entries are put right
//! *before* the clustered record (whose restored roll pointer marks the record as undone):
//!
//! - the new row's entry, if it differs from the old row's, is removed, or only
//!   delete-marked if some older version of the row still has it;
//! - the old row's entry is un-marked (or stays delete-marked if the old row was deleted).
//!
//! ## Consistent reads
//!
//! A read takes a [`ReadView`] and sees a clustered record's version through
//! [`visible`]: the record itself if the view sees its `DB_TRX_ID`, else an older version
//! rebuilt by following roll pointers through undo. A secondary entry has no id to test, so
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

use std::sync::atomic::Ordering;

use minnow_btree::record::{Value, decode_value};
use minnow_btree::{BTree, TreeError};
use minnow_mvcc::{
    LockKey, LockMode, NewRecord, OpenView, ReadView, RollPtr, TrxLocks, UndoKind, UndoLog,
    UndoRecord,
};
use minnow_redo::{Durability, Lsn};

use crate::db::{Database, Inner, TableEntry};
use crate::error::{Error, Result, from_tree};
use crate::history::{Older, VersionWalk, older, older_in_log, sys_of, undo_mismatch, version_of};
use crate::schema::PRIMARY;

/// The isolation level of a [`Transaction`].
///
/// | anomaly | READ COMMITTED | REPEATABLE READ |
/// |---|---|---|
/// | dirty write | prevented (row locks) | prevented (row locks) |
/// | dirty read | prevented | prevented |
/// | lost update | possible | possible (as InnoDB: a write waits for the row's lock, then acts on the latest committed row); prevented by reading with [`Transaction::get_for_update`] |
/// | fuzzy (non-repeatable) read | possible | prevented |
/// | read skew | possible | prevented |
/// | phantom (consistent reads) | possible | prevented |
/// | write skew | possible | possible (snapshot isolation allows it) |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Isolation {
    /// A new read view for every statement: each read sees what was committed when it
    /// started.
    ReadCommitted,
    /// One read view, taken at the transaction's first consistent read, for all its reads
    /// (the default, as InnoDB's).
    #[default]
    RepeatableRead,
}

/// What a transaction holds while it runs: its id and undo log once it writes, and the redo
/// end of its last change.
#[derive(Debug, Default)]
pub(crate) struct TrxState {
    pub id: u64,
    pub log: Option<UndoLog>,
    pub end: Lsn,
    /// The row locks it holds (from its first write on).
    pub locks: Option<TrxLocks>,
    /// Lock waits so far: each let go of the writer lock, so purge may have run meanwhile.
    pub waits: u64,
}

/// The writer lock's guard, which a statement lets go of while it waits for a row lock.
pub(crate) type WriteGuard<'a> = parking_lot::MutexGuard<'a, ()>;

impl TrxState {
    /// Gives the transaction its id and undo log at its first write.
    fn writer(&mut self, inner: &Inner) -> Result<u64> {
        if self.log.is_none() {
            let id = inner.trx_sys.assign_id(&inner.pool)?;
            match inner.trx_sys.begin_log(&inner.pool, id) {
                Ok(log) => {
                    self.log = Some(log);
                    self.id = id;
                    self.locks = Some(inner.locks.begin(id));
                }
                Err(e) => {
                    inner.trx_sys.forget(id);
                    return Err(e.into());
                }
            }
        }
        Ok(self.id)
    }

    fn savepoint(&self) -> u64 {
        self.log.as_ref().map_or(0, UndoLog::savepoint)
    }

    fn append(&mut self, inner: &Inner, rec: NewRecord) -> Result<RollPtr> {
        self.writer(inner)?;
        let log = self.log.as_mut().ok_or(Error::TransactionEnded)?;
        Ok(inner.trx_sys.append(&inner.pool, log, rec)?)
    }

    /// Undoes every record from `savepoint` on, newest first. The caller holds the writer
    /// lock.
    pub fn rollback_to(&mut self, inner: &Inner, savepoint: u64) -> Result<u64> {
        let Some(log) = self.log.as_mut() else {
            return Ok(0);
        };
        rollback_log(inner, log, savepoint)
    }

    /// Runs `f` as one statement: on error, everything it wrote is rolled back.
    pub fn statement<T>(
        &mut self,
        inner: &Inner,
        f: impl FnOnce(&mut TrxState) -> Result<T>,
    ) -> Result<T> {
        let sp = self.savepoint();
        match f(self) {
            Ok(v) => Ok(v),
            Err(e) => {
                self.rollback_to(inner, sp)?;
                Err(e)
            }
        }
    }

    /// Commits (the caller holds the writer lock); returns the commit mtr's end, `None` for a
    /// transaction that wrote nothing.
    pub fn commit(&mut self, inner: &Inner) -> Result<Option<Lsn>> {
        let end = match self.log.take() {
            Some(log) => Some(inner.trx_sys.commit(&inner.pool, &log)?),
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

    /// Rolls back everything and ends the transaction (the caller holds the writer lock).
    pub fn rollback(&mut self, inner: &Inner) -> Result<()> {
        if let Some(mut log) = self.log.take() {
            rollback_log(inner, &mut log, 0)?;
            inner.trx_sys.finish_rollback(&inner.pool, &log)?;
        }
        self.release_locks();
        Ok(())
    }
}

/// Rolls back a transaction found active at open; returns the records undone.
pub(crate) fn recover_rollback(inner: &Inner, mut log: UndoLog) -> Result<u64> {
    let n = rollback_log(inner, &mut log, 0)?;
    let end = inner.trx_sys.finish_rollback(&inner.pool, &log)?;
    inner
        .pool
        .commit_durable(end, minnow_redo::FlushAtCommit::Sync)?;
    Ok(n)
}

fn rollback_log(inner: &Inner, log: &mut UndoLog, savepoint: u64) -> Result<u64> {
    let mut n = 0;
    let mut below = u64::MAX;
    while let Some((ptr, rec)) = inner.trx_sys.last_record(&inner.pool, log, savepoint)? {
        let at = minnow_mvcc::UndoAddr {
            page: ptr.page,
            offset: ptr.offset,
        };
        older_in_log(log.trx_id, at, &rec, &mut below)?;
        undo_record(inner, &rec, ptr, log.trx_id)?;
        inner.trx_sys.pop(&inner.pool, log, &rec)?;
        n += 1;
    }
    Ok(n)
}

// ---- Records and their system columns ----

/// The clustered values of `row` written by `trx` with roll pointer `ptr`.
fn stamped(t: &TableEntry, row: &[Value], trx: u64, ptr: RollPtr) -> Vec<Value> {
    let mut v = t.meta.clustered_values(row);
    let n = t.meta.pk.len();
    if let Some(x) = v.get_mut(n) {
        *x = Value::trx_id(trx);
    }
    if let Some(x) = v.get_mut(n + 1) {
        *x = Value::roll_ptr(ptr.to_u64());
    }
    v
}

/// The undo fields of a clustered record: all fields but the system ones, or only the key.
fn undo_fields(t: &TableEntry, values: &[Value], key_only: bool) -> Result<Vec<Option<Vec<u8>>>> {
    let layout = t.clustered.layout();
    let n = t.meta.pk.len();
    let mut out = Vec::with_capacity(values.len());
    for (i, v) in values.iter().enumerate() {
        if i == n || i == n + 1 {
            continue;
        }
        if key_only && i >= n {
            break;
        }
        out.push(
            layout
                .encode_field(i, v)
                .map_err(|e| from_tree(e.into(), t.meta.name(), PRIMARY))?,
        );
    }
    Ok(out)
}

/// The primary key an undo record names.
pub(crate) fn key_of_undo(t: &TableEntry, rec: &UndoRecord) -> Result<Vec<Value>> {
    let fields = t.clustered.layout().fields();
    let n = t.meta.pk.len();
    if rec.fields.len() < n {
        return Err(undo_mismatch(&t.meta, rec, n));
    }
    rec.fields
        .iter()
        .zip(fields)
        .take(n)
        .map(|(f, col)| match f {
            Some(b) => decode_value(col.ty, b).map_err(|why| Error::Corrupt {
                what: format!("table `{}`: undo record key: {why}", t.meta.name()),
            }),
            None => Ok(Value::Null),
        })
        .collect()
}

fn conflict(inner: &Inner, t: &TableEntry, me: u64, values: &[Value], key: &[Value]) -> Result<()> {
    let (w, _) = sys_of(&t.meta, values)?;
    if w != me && w != 0 && inner.trx_sys.is_active(w) {
        return Err(Error::WriteConflict {
            table: t.meta.name().to_owned(),
            key: key.to_vec(),
            holder: w,
        });
    }
    Ok(())
}

// ---- Row locks ----

/// The lock key of the leading key `values` of `tree` (index `index_id`): each field's
/// encoding as the index compares it, length-prefixed, NULL as one zero byte.
fn lock_key(
    t: &TableEntry,
    tree: &BTree,
    index: &str,
    index_id: u64,
    values: &[Value],
) -> Result<LockKey> {
    let layout = tree.layout();
    let mut bytes = Vec::with_capacity(16);
    for (i, v) in values.iter().enumerate() {
        match layout
            .encode_field(i, v)
            .map_err(|e| from_tree(e.into(), t.meta.name(), index))?
        {
            None => bytes.push(0),
            Some(f) => {
                bytes.push(1);
                bytes.extend_from_slice(&(f.len() as u32).to_be_bytes());
                bytes.extend_from_slice(&f);
            }
        }
    }
    Ok(LockKey::new(index_id, &bytes))
}

/// Takes `key` exclusively for the transaction, waiting (with the writer lock let go) while
/// another transaction holds it. After a wait the table may have changed under the
/// statement: a table dropped or reloaded meanwhile is [`Error::TableChanged`].
fn lock(
    inner: &Inner,
    t: &TableEntry,
    trx: &mut TrxState,
    w: &mut WriteGuard<'_>,
    key: LockKey,
) -> Result<()> {
    trx.writer(inner)?;
    let locks = trx.locks.as_mut().ok_or(Error::TransactionEnded)?;
    if locks.try_lock(&key, LockMode::Exclusive) {
        return Ok(());
    }
    trx.waits += 1;
    parking_lot::MutexGuard::unlocked(w, || locks.lock(key, LockMode::Exclusive))?;
    if t.dropped.load(Ordering::Acquire) || t.superseded.load(Ordering::Acquire) {
        return Err(Error::TableChanged {
            table: t.meta.name().to_owned(),
        });
    }
    Ok(())
}

/// Locks the row with primary key `pk`.
fn lock_row(
    inner: &Inner,
    t: &TableEntry,
    trx: &mut TrxState,
    w: &mut WriteGuard<'_>,
    pk: &[Value],
) -> Result<()> {
    let key = lock_key(t, &t.clustered, PRIMARY, t.meta.index_id, pk)?;
    lock(inner, t, trx, w, key)
}

// ---- Secondary entries ----

// Every change of a secondary entry on behalf of transaction `me` raises the leaf's
// PAGE_MAX_TRX_ID to `me` in the change's own mini-transaction (the `_trx` B-tree calls), so
// a reader that sees the change sees the raise, and redo carries both.

fn sec_insert(inner: &Inner, t: &TableEntry, i: usize, me: u64, entry: &[Value]) -> Result<()> {
    let (tree, name) = sec(t, i)?;
    match tree.insert_trx(&inner.pool, entry, me) {
        Ok(_) => Ok(()),
        Err(TreeError::Duplicate { .. }) => tree
            .set_delete_mark_trx(&inner.pool, entry, false, me)
            .map(|_| ())
            .map_err(|e| from_tree(e, t.meta.name(), name)),
        Err(e) => Err(from_tree(e, t.meta.name(), name)),
    }
}

fn sec_mark(
    inner: &Inner,
    t: &TableEntry,
    i: usize,
    me: u64,
    entry: &[Value],
    deleted: bool,
) -> Result<()> {
    let (tree, name) = sec(t, i)?;
    tree.set_delete_mark_trx(&inner.pool, entry, deleted, me)
        .map(|_| ())
        .map_err(|e| from_tree(e, t.meta.name(), name))
}

pub(crate) fn sec(t: &TableEntry, i: usize) -> Result<(&BTree, &str)> {
    match (t.secondary.get(i), t.meta.secondary.get(i)) {
        (Some(tree), Some(s)) => Ok((tree, s.name.as_str())),
        _ => Err(Error::Corrupt {
            what: format!("table `{}`: secondary index {i} missing", t.meta.name()),
        }),
    }
}

// ---- Writes (the caller holds the writer lock and runs them as a statement) ----

/// Inserts a checked, normalised row.
pub(crate) fn insert(
    inner: &Inner,
    t: &TableEntry,
    trx: &mut TrxState,
    w: &mut WriteGuard<'_>,
    row: &[Value],
) -> Result<()> {
    let meta = &t.meta;
    let pool = &inner.pool;
    let pk = meta.pk_of(row);
    lock_row(inner, t, trx, w, &pk)?;
    let mut existing = t
        .clustered
        .get(pool, &pk)
        .map_err(|e| from_tree(e, meta.name(), PRIMARY))?;
    if let Some(e) = &existing {
        conflict(inner, t, trx.id, &e.values, &pk)?;
        if !e.deleted {
            return Err(dup(t, PRIMARY, pk));
        }
    }
    let waits = trx.waits;
    for i in 0..meta.secondary.len() {
        check_unique(inner, t, trx, w, i, row, None)?;
    }
    if trx.waits != waits && existing.is_some() {
        // The row is locked, so no writer changed it while the unique checks waited; but
        // purge may have removed the delete-marked record meanwhile.
        existing = t
            .clustered
            .get(pool, &pk)
            .map_err(|e| from_tree(e, meta.name(), PRIMARY))?;
    }
    check_entry_sizes(inner, t, row)?;
    match existing {
        None => {
            let ptr = trx.append(
                inner,
                NewRecord {
                    kind: UndoKind::Insert,
                    old_deleted: false,
                    index_id: meta.index_id,
                    old_trx_id: 0,
                    old_roll_ptr: RollPtr::NONE,
                    fields: undo_fields(t, &meta.clustered_values(row), true)?,
                },
            )?;
            trx.end = t
                .clustered
                .insert(pool, &stamped(t, row, trx.id, ptr))
                .map_err(|e| match e {
                    TreeError::Duplicate { .. } => dup(t, PRIMARY, pk.clone()),
                    e => from_tree(e, meta.name(), PRIMARY),
                })?;
        }
        Some(old) => {
            // An insert over a delete-marked row: an update of that record.
            let (old_trx, old_ptr) = sys_of(&t.meta, &old.values)?;
            let ptr = trx.append(
                inner,
                NewRecord {
                    kind: UndoKind::Update,
                    old_deleted: true,
                    index_id: meta.index_id,
                    old_trx_id: old_trx,
                    old_roll_ptr: old_ptr,
                    fields: undo_fields(t, &old.values, false)?,
                },
            )?;
            trx.end = t
                .clustered
                .update_marked(pool, &stamped(t, row, trx.id, ptr), Some(false))
                .map_err(|e| from_tree(e, meta.name(), PRIMARY))?;
        }
    }
    for (i, s) in meta.secondary.iter().enumerate() {
        sec_insert(inner, t, i, trx.id, &meta.secondary_values(s, row))?;
    }
    Ok(())
}

/// Replaces the row with `row`'s primary key (normalised).
pub(crate) fn update(
    inner: &Inner,
    t: &TableEntry,
    trx: &mut TrxState,
    w: &mut WriteGuard<'_>,
    row: &[Value],
) -> Result<()> {
    let meta = &t.meta;
    let pool = &inner.pool;
    let pk = meta.pk_of(row);
    lock_row(inner, t, trx, w, &pk)?;
    let old = match t
        .clustered
        .get(pool, &pk)
        .map_err(|e| from_tree(e, meta.name(), PRIMARY))?
    {
        Some(e) if !e.deleted => e,
        Some(e) => {
            conflict(inner, t, trx.id, &e.values, &pk)?;
            return Err(not_found(t, pk));
        }
        None => return Err(not_found(t, pk)),
    };
    conflict(inner, t, trx.id, &old.values, &pk)?;
    let old_row = meta.row_of(old.values.clone())?;
    let changed: Vec<bool> = meta
        .secondary
        .iter()
        .map(|s| s.cols.iter().any(|&c| old_row[c] != row[c]))
        .collect();
    for (i, &ch) in changed.iter().enumerate() {
        if ch {
            check_unique(inner, t, trx, w, i, row, Some(&pk))?;
        }
    }
    check_entry_sizes(inner, t, row)?;
    if let Some(a) = &t.autoinc {
        // As in MySQL 8.0: a larger value written by an update moves the counter too.
        a.observe(inner, meta.name(), &row[a.column])?;
    }
    let (old_trx, old_ptr) = sys_of(&t.meta, &old.values)?;
    let ptr = trx.append(
        inner,
        NewRecord {
            kind: UndoKind::Update,
            old_deleted: false,
            index_id: meta.index_id,
            old_trx_id: old_trx,
            old_roll_ptr: old_ptr,
            fields: undo_fields(t, &old.values, false)?,
        },
    )?;
    trx.end = t
        .clustered
        .update(pool, &stamped(t, row, trx.id, ptr))
        .map_err(|e| from_tree(e, meta.name(), PRIMARY))?;
    for (i, s) in meta.secondary.iter().enumerate() {
        if changed[i] {
            sec_mark(
                inner,
                t,
                i,
                trx.id,
                &meta.secondary_values(s, &old_row),
                true,
            )?;
            sec_insert(inner, t, i, trx.id, &meta.secondary_values(s, row))?;
        }
    }
    Ok(())
}

/// Deletes (delete-marks) the row with primary key `pk` (normalised); false if none.
pub(crate) fn delete(
    inner: &Inner,
    t: &TableEntry,
    trx: &mut TrxState,
    w: &mut WriteGuard<'_>,
    pk: &[Value],
) -> Result<bool> {
    let meta = &t.meta;
    let pool = &inner.pool;
    lock_row(inner, t, trx, w, pk)?;
    let Some(old) = t
        .clustered
        .get(pool, pk)
        .map_err(|e| from_tree(e, meta.name(), PRIMARY))?
    else {
        return Ok(false);
    };
    conflict(inner, t, trx.id, &old.values, pk)?;
    if old.deleted {
        return Ok(false);
    }
    let old_row = meta.row_of(old.values.clone())?;
    let (old_trx, old_ptr) = sys_of(&t.meta, &old.values)?;
    let ptr = trx.append(
        inner,
        NewRecord {
            kind: UndoKind::DeleteMark,
            old_deleted: false,
            index_id: meta.index_id,
            old_trx_id: old_trx,
            old_roll_ptr: old_ptr,
            fields: undo_fields(t, &old.values, false)?,
        },
    )?;
    trx.end = t
        .clustered
        .update_marked(pool, &stamped(t, &old_row, trx.id, ptr), Some(true))
        .map_err(|e| from_tree(e, meta.name(), PRIMARY))?;
    for (i, s) in meta.secondary.iter().enumerate() {
        sec_mark(
            inner,
            t,
            i,
            trx.id,
            &meta.secondary_values(s, &old_row),
            true,
        )?;
    }
    Ok(true)
}

fn dup(t: &TableEntry, index: &str, key: Vec<Value>) -> Error {
    Error::DuplicateKey {
        table: t.meta.name().to_owned(),
        index: index.to_owned(),
        key,
    }
}

fn not_found(t: &TableEntry, key: Vec<Value>) -> Error {
    Error::RowNotFound {
        table: t.meta.name().to_owned(),
        key,
    }
}

/// If unique index `i` holds `row`'s key for a row other than `own_pk`, the duplicate
/// error. The key is locked first, so no other transaction can insert it meanwhile.
/// Delete-marked entries belong to old versions and do not count, unless the transaction
/// that marked them is still active (it may roll back): then the check waits for that row's
/// lock and runs again.
fn check_unique(
    inner: &Inner,
    t: &TableEntry,
    trx: &mut TrxState,
    w: &mut WriteGuard<'_>,
    i: usize,
    row: &[Value],
    own_pk: Option<&[Value]>,
) -> Result<()> {
    loop {
        match unique_holder(inner, t, trx, w, i, row, own_pk)? {
            None => return Ok(()),
            Some(pk) => lock_row(inner, t, trx, w, &pk)?,
        }
    }
}

/// One pass of [`check_unique`]: `Some(pk)` if a delete-marked entry's row `pk` was last
/// changed by another active transaction (whose outcome decides), `None` if the key is free.
fn unique_holder(
    inner: &Inner,
    t: &TableEntry,
    trx: &mut TrxState,
    w: &mut WriteGuard<'_>,
    i: usize,
    row: &[Value],
    own_pk: Option<&[Value]>,
) -> Result<Option<Vec<Value>>> {
    let meta = &t.meta;
    let (tree, name) = sec(t, i)?;
    let Some(s) = meta.secondary.get(i) else {
        return Ok(None);
    };
    let key: Vec<Value> = s.cols.iter().map(|&c| row[c].clone()).collect();
    if !s.unique || key.contains(&Value::Null) {
        return Ok(None);
    }
    let unique = lock_key(t, tree, name, s.index_id, &key)?;
    lock(inner, t, trx, w, unique)?;
    let lo: Vec<Value> = key
        .iter()
        .cloned()
        .chain(meta.pk.iter().map(|&c| meta.extreme(c, false)))
        .collect();
    let hi: Vec<Value> = key
        .iter()
        .cloned()
        .chain(meta.pk.iter().map(|&c| meta.extreme(c, true)))
        .collect();
    let range =
        minnow_btree::ScanRange::new(std::ops::Bound::Included(lo), std::ops::Bound::Included(hi));
    for e in tree
        .scan(&inner.pool, range)
        .map_err(|e| from_tree(e, meta.name(), name))?
    {
        let e = e.map_err(|e| from_tree(e, meta.name(), name))?;
        let pk = e.values.get(s.cols.len()..).unwrap_or_default();
        if own_pk == Some(pk) {
            continue;
        }
        if !e.deleted {
            return Err(dup(t, name, key));
        }
        if let Some(c) = t
            .clustered
            .get(&inner.pool, pk)
            .map_err(|e| from_tree(e, meta.name(), PRIMARY))?
        {
            let (writer, _) = sys_of(&t.meta, &c.values)?;
            if writer != trx.id && writer != 0 && inner.trx_sys.is_active(writer) {
                return Ok(Some(pk.to_vec()));
            }
        }
    }
    Ok(None)
}

/// Refuses a row whose entry in some secondary index would be too big for a page before
/// anything is written.
fn check_entry_sizes(inner: &Inner, t: &TableEntry, row: &[Value]) -> Result<()> {
    let meta = &t.meta;
    let max = minnow_btree::tree::overflow::max_record_len(inner.pool.config().page_size.bytes());
    for (s, tree) in meta.secondary.iter().zip(&t.secondary) {
        let rec = tree
            .layout()
            .encode(&meta.secondary_values(s, row))
            .map_err(|e| from_tree(e.into(), meta.name(), &s.name))?;
        if rec.len() > max {
            return Err(Error::RowTooLarge {
                table: meta.name().to_owned(),
                index: s.name.clone(),
                len: rec.len(),
                max,
                reason: String::new(),
            });
        }
    }
    Ok(())
}

// ---- Undoing one record ----

pub(crate) fn table_of(inner: &Inner, index_id: u64) -> Option<std::sync::Arc<TableEntry>> {
    inner
        .tables
        .read()
        .values()
        .find(|t| t.meta.index_id == index_id)
        .cloned()
}

/// Undoes one undo record of transaction `me` (idempotent: acts only if the record's roll
/// pointer still points at it). The secondary leaves it changes get `me` as their
/// `PAGE_MAX_TRX_ID`, as every change on a transaction's behalf does.
fn undo_record(inner: &Inner, rec: &UndoRecord, ptr: RollPtr, me: u64) -> Result<()> {
    // A table dropped since has nothing left to undo.
    let Some(t) = table_of(inner, rec.index_id) else {
        return Ok(());
    };
    let meta = &t.meta;
    let pool = &inner.pool;
    let key = key_of_undo(&t, rec)?;
    let Some(cur) = t
        .clustered
        .get(pool, &key)
        .map_err(|e| from_tree(e, meta.name(), PRIMARY))?
    else {
        return Ok(());
    };
    let (_, cur_ptr) = sys_of(&t.meta, &cur.values)?;
    if cur_ptr != ptr {
        return Ok(());
    }
    let new_row = meta.row_of(cur.values.clone())?;
    match rec.kind {
        UndoKind::Insert => {
            for (i, s) in meta.secondary.iter().enumerate() {
                let (tree, name) = sec(&t, i)?;
                match tree.delete_trx(pool, &meta.secondary_values(s, &new_row), me) {
                    Ok(_) | Err(TreeError::NotFound { .. }) => {}
                    Err(e) => return Err(from_tree(e, meta.name(), name)),
                }
            }
            t.clustered
                .delete(pool, &key)
                .map_err(|e| from_tree(e, meta.name(), PRIMARY))?;
        }
        UndoKind::Update | UndoKind::DeleteMark => {
            let old_values = version_of(&t.meta, t.clustered.layout(), rec)?;
            let old_row = meta.row_of(old_values.clone())?;
            for (i, s) in meta.secondary.iter().enumerate() {
                let (tree, name) = sec(&t, i)?;
                let e_old = meta.secondary_values(s, &old_row);
                let e_new = meta.secondary_values(s, &new_row);
                if e_new != e_old {
                    let exists = tree
                        .get(pool, &e_new)
                        .map_err(|e| from_tree(e, meta.name(), name))?
                        .is_some();
                    if exists {
                        if older_version_has(
                            inner,
                            &t,
                            rec.old_trx_id,
                            rec.old_roll_ptr,
                            i,
                            &e_new,
                        )? {
                            tree.set_delete_mark_trx(pool, &e_new, true, me)
                                .map_err(|e| from_tree(e, meta.name(), name))?;
                        } else {
                            tree.delete_trx(pool, &e_new, me)
                                .map_err(|e| from_tree(e, meta.name(), name))?;
                        }
                    }
                }
                match tree
                    .get(pool, &e_old)
                    .map_err(|e| from_tree(e, meta.name(), name))?
                {
                    Some(e) if e.deleted != rec.old_deleted => {
                        tree.set_delete_mark_trx(pool, &e_old, rec.old_deleted, me)
                            .map_err(|e| from_tree(e, meta.name(), name))?;
                    }
                    Some(_) => {}
                    None if !rec.old_deleted => {
                        tree.insert_trx(pool, &e_old, me)
                            .map_err(|e| from_tree(e, meta.name(), name))?;
                    }
                    None => {}
                }
            }
            t.clustered
                .update_marked(pool, &old_values, Some(rec.old_deleted))
                .map_err(|e| from_tree(e, meta.name(), PRIMARY))?;
        }
    }
    Ok(())
}

/// True if a version of the row older than the one written by `writer` with roll pointer
/// `ptr` has `entry` in secondary index `i`. Versions behind a writer every reader sees are
/// needed by no one and their undo may be purged already: the walk stops there.
fn older_version_has(
    inner: &Inner,
    t: &TableEntry,
    mut writer: u64,
    mut ptr: RollPtr,
    i: usize,
    entry: &[Value],
) -> Result<bool> {
    let Some(s) = t.meta.secondary.get(i) else {
        return Ok(false);
    };
    let mut walk = VersionWalk::default();
    while !inner.trx_sys.undo_may_be_gone(writer) {
        walk.step(&t.meta, ptr)?;
        let Older::Version { rec, values } = step_back(inner, t, ptr)? else {
            break;
        };
        let row = t.meta.row_of(values)?;
        if !rec.old_deleted && t.meta.secondary_values(s, &row) == entry {
            return Ok(true);
        }
        writer = rec.old_trx_id;
        ptr = rec.old_roll_ptr;
    }
    Ok(false)
}

// ---- Consistent reads ----

/// Which writers' changes a read sees.
#[derive(Debug, Clone)]
pub(crate) enum Snapshot {
    /// A read view (a transaction's, or one taken for a single statement), registered with
    /// the transaction system while the snapshot lives, so purge keeps what it needs.
    View(OpenView),
}

impl Snapshot {
    pub fn sees(&self, trx: u64) -> bool {
        match self {
            Snapshot::View(v) => v.changes_visible(trx),
        }
    }

    /// True if every change on a secondary leaf whose `PAGE_MAX_TRX_ID` is `max_trx_id` is
    /// visible (the page shortcut of secondary-index reads).
    pub fn sees_page(&self, max_trx_id: u64) -> bool {
        match self {
            Snapshot::View(v) => v.sees_page(max_trx_id),
        }
    }
}

/// The version of a clustered record that `snap` sees: the record itself, or one rebuilt
/// from undo by following roll pointers; `None` if no version is visible or the visible one
/// is delete-marked.
pub(crate) fn visible(
    inner: &Inner,
    t: &TableEntry,
    snap: &Snapshot,
    mut values: Vec<Value>,
    mut deleted: bool,
) -> Result<Option<Vec<Value>>> {
    let mut walk = VersionWalk::default();
    loop {
        let (trx, ptr) = sys_of(&t.meta, &values)?;
        if snap.sees(trx) {
            return Ok((!deleted).then_some(values));
        }
        walk.step(&t.meta, ptr)?;
        match step_back(inner, t, ptr)? {
            Older::Version { rec, values: v } => (values, deleted) = (v, rec.old_deleted),
            Older::Inserted | Older::NoUndo | Older::Foreign { .. } => return Ok(None),
        }
    }
}

/// The version before the one whose roll pointer is `ptr`, from the undo store through the
/// buffer pool ([`crate::history`] has the one function that does it).
fn step_back(inner: &Inner, t: &TableEntry, ptr: RollPtr) -> Result<Older> {
    match older(
        &*inner.pool,
        inner.trx_sys.page().space,
        &t.meta,
        t.clustered.layout(),
        ptr,
    )? {
        Older::Foreign { index_id } => Err(Error::Corrupt {
            what: format!(
                "table `{}`: roll pointer {ptr} names an undo record of index {index_id}",
                t.meta.name()
            ),
        }),
        other => Ok(other),
    }
}

// ---- The public transaction ----

/// A transaction: reads see one snapshot (REPEATABLE READ) or one per statement (READ
/// COMMITTED); writes become visible to others and durable at [`Transaction::commit`], or
/// vanish at [`Transaction::rollback`]. Dropping a transaction that was not committed rolls
/// it back. Every method taking a [`crate::Table`] refuses a handle of another database
/// ([`Error::ForeignTable`]). See the crate docs, "Transactions".
pub struct Transaction<'db> {
    db: &'db Database,
    isolation: Isolation,
    state: TrxState,
    view: Option<OpenView>,
    ended: bool,
}

impl std::fmt::Debug for Transaction<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("id", &self.state.id)
            .field("isolation", &self.isolation)
            .field("ended", &self.ended)
            .finish()
    }
}

impl Database {
    /// The row lock manager's counters: waits, deadlocks, timeouts, locks held and
    /// transactions waiting now.
    pub fn lock_stats(&self) -> Result<minnow_mvcc::LockStats> {
        Ok(self.inner()?.locks.stats())
    }

    /// Starts a REPEATABLE READ transaction.
    pub fn begin(&self) -> Result<Transaction<'_>> {
        self.begin_with(Isolation::default())
    }

    /// Starts a transaction with the given isolation level. Nothing happens until its first
    /// read (which takes the read view) or write (which gives it an id and an undo log).
    pub fn begin_with(&self, isolation: Isolation) -> Result<Transaction<'_>> {
        self.inner()?;
        Ok(Transaction {
            db: self,
            isolation,
            state: TrxState::default(),
            view: None,
            ended: false,
        })
    }
}

impl<'db> Transaction<'db> {
    /// The transaction's id (0 until its first write: read-only transactions never get one).
    pub fn id(&self) -> u64 {
        self.state.id
    }

    /// The isolation level.
    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    fn live(&self) -> Result<&'db Inner> {
        if self.ended {
            return Err(Error::TransactionEnded);
        }
        self.db.inner()
    }

    /// The snapshot for the next read: the transaction's view (REPEATABLE READ, taken at the
    /// first read) or a fresh one (READ COMMITTED).
    pub(crate) fn snapshot(&mut self) -> Result<Snapshot> {
        let inner = self.live()?;
        let view = match (self.isolation, &self.view) {
            (Isolation::RepeatableRead, Some(v)) => v.clone(),
            _ => {
                let v = inner.trx_sys.open_view(self.state.id);
                if self.isolation == Isolation::RepeatableRead {
                    self.view = Some(v.clone());
                }
                v
            }
        };
        Ok(Snapshot::View(view))
    }

    /// The read view this transaction's next consistent read uses (REPEATABLE READ: the one
    /// taken at its first read, taken now if there was none; READ COMMITTED: a fresh one):
    /// its limits and active ids say exactly which writers' versions it sees
    /// ([`crate::RowHistory::seen_by`] picks the version of a chain it would read).
    pub fn read_view(&mut self) -> Result<ReadView> {
        let Snapshot::View(v) = self.snapshot()?;
        Ok(ReadView::clone(&v))
    }

    /// Runs one write statement under the writer lock, rolled back to its start if it fails;
    /// a deadlock rolls back the whole transaction (as InnoDB's), which then has ended.
    fn write<T>(
        &mut self,
        table: &crate::Table<'_>,
        f: impl FnOnce(&Inner, &TableEntry, &mut TrxState, &mut WriteGuard<'_>) -> Result<T>,
    ) -> Result<T> {
        let inner = self.live()?;
        table.belongs_to(self.db)?;
        let r = {
            let mut w = inner.write.lock();
            let t = table.entry_now()?;
            let r = self.state.statement(inner, |st| f(inner, &t, st, &mut w));
            if let Some(v) = self.view.as_mut() {
                v.set_creator(self.state.id);
            }
            r
        };
        if matches!(r, Err(Error::Deadlock { .. })) {
            self.rollback_inner()?;
        }
        r
    }

    /// Inserts a row (see [`crate::Table::insert`]).
    pub fn insert(&mut self, table: &crate::Table<'_>, row: &[Value]) -> Result<()> {
        self.write(table, |inner, t, st, w| {
            let mut reserved = 0..0;
            let mut generated = Vec::new();
            let row = t.prepare_row(inner, row, &mut reserved, &mut generated)?;
            insert(inner, t, st, w, &row)
        })
    }

    /// Replaces the row with the same primary key (see [`crate::Table::update`]).
    pub fn update(&mut self, table: &crate::Table<'_>, row: &[Value]) -> Result<()> {
        self.write(table, |inner, t, st, w| {
            let row = t.meta.normalise_row(row)?;
            update(inner, t, st, w, &row)
        })
    }

    /// Deletes the row with primary key `key`; false if there was none.
    pub fn delete(&mut self, table: &crate::Table<'_>, key: &[Value]) -> Result<bool> {
        self.write(table, |inner, t, st, w| {
            let key = t.meta.normalise_key(&t.meta.pk, key)?;
            delete(inner, t, st, w, &key)
        })
    }

    /// The row with primary key `key` as this transaction sees it.
    pub fn get(&mut self, table: &crate::Table<'_>, key: &[Value]) -> Result<Option<Vec<Value>>> {
        table.belongs_to(self.db)?;
        let snap = self.snapshot()?;
        table.get_in(&snap, key)
    }

    /// A locking read (`SELECT ... FOR UPDATE`): takes the row's exclusive lock, waiting as
    /// a write does, then returns the row's **latest committed** version (a current read, not
    /// the snapshot), or `None` if there is no such row (the key stays locked either way,
    /// until the transaction ends). What an `UPDATE ... SET k=k+1` reads: a read-modify-write
    /// through `get_for_update` then [`Transaction::update`] loses no concurrent update,
    /// which one through [`Transaction::get`] (the snapshot) can. Errors as a write's: a
    /// deadlock rolls the whole transaction back, a lock wait timeout only this statement.
    pub fn get_for_update(
        &mut self,
        table: &crate::Table<'_>,
        key: &[Value],
    ) -> Result<Option<Vec<Value>>> {
        self.write(table, |inner, t, st, w| {
            let key = t.meta.normalise_key(&t.meta.pk, key)?;
            lock_row(inner, t, st, w, &key)?;
            match t
                .clustered
                .get(&inner.pool, &key)
                .map_err(|e| from_tree(e, t.meta.name(), PRIMARY))?
            {
                Some(e) => {
                    // Holding the lock, the record is ours or committed.
                    conflict(inner, t, st.id, &e.values, &key)?;
                    if e.deleted {
                        Ok(None)
                    } else {
                        Ok(Some(t.meta.row_of(e.values)?))
                    }
                }
                None => Ok(None),
            }
        })
    }

    /// A primary-key scan as this transaction sees the table (see [`crate::Table::scan`]).
    pub fn scan(
        &mut self,
        table: &crate::Table<'db>,
        scan: crate::Scan,
    ) -> Result<crate::Rows<'db>> {
        table.belongs_to(self.db)?;
        let snap = self.snapshot()?;
        table.scan_in(snap, scan)
    }

    /// A secondary-index scan as this transaction sees the table (see
    /// [`crate::Table::scan_index`]).
    pub fn scan_index(
        &mut self,
        table: &crate::Table<'db>,
        index: &str,
        scan: crate::Scan,
    ) -> Result<crate::Rows<'db>> {
        table.belongs_to(self.db)?;
        let snap = self.snapshot()?;
        table.scan_index_in(snap, index, scan)
    }

    /// Commits: the commit mini-transaction marks the undo log committed (the commit point),
    /// then the redo log is made as durable as `flush_log_at_trx_commit` says. A read-only
    /// transaction has nothing to make durable and returns `Synced`.
    pub fn commit(mut self) -> Result<Durability> {
        let inner = self.live()?;
        self.ended = true;
        let end = {
            let _w = inner.write.lock();
            self.state.commit(inner)?
        };
        match end {
            Some(end) => self.db.durable(end),
            None => Ok(Durability::Synced),
        }
    }

    /// Rolls back every change of the transaction.
    pub fn rollback(mut self) -> Result<()> {
        self.rollback_inner()
    }

    fn rollback_inner(&mut self) -> Result<()> {
        let inner = self.live()?;
        self.ended = true;
        let _w = inner.write.lock();
        self.state.rollback(inner)
    }
}

impl Drop for Transaction<'_> {
    fn drop(&mut self) {
        if !self.ended {
            let _ = self.rollback_inner();
        }
    }
}
