//! Bulk insert into an empty table: a transaction's inserts into a table that holds no
//! record are buffered in memory, sorted by primary key, and built bottom-up at commit, as
//! MariaDB 10.7 does for an `INSERT` into an empty table (MDEV-515, MDEV-24621).
//!
//! ## The claim
//!
//! A transaction's (the `minnow` crate's `Transaction`) first insert into a table may **claim** it
//! ([`crate::claim::BulkClaim`], shared by every entry of the table). It does so, holding the quiesce
//! latch and the table's metadata lock exclusively (so no write statement on the table is
//! running), only if the table:
//!
//! - is not compressed (a compressed table takes the ordinary path);
//! - holds no record in any of its indexes, delete-marked ones included;
//! - has no row lock anyone holds or waits for, on any of its indexes
//!   ([`minnow_mvcc::LockManager::index_in_use`]),
//!   and no write statement let its latches go for a lock wait (the claim's `pending` count):
//!   so no other transaction has, or is about to have, anything in the table.
//!
//! Otherwise the insert takes the ordinary path, silently, and the transaction does not
//! try that table again. Every write statement on the table reads the claim under the
//! metadata lock held shared (a load of a line only claims write) and, while another
//! transaction holds it, lets its latches go and waits for it to end, up to
//! `lock_wait_timeout` ([`crate::Error::LockWaitTimeout`]): writers and locking reads
//! wait, consistent reads do not (they read the tree, which is still empty: right, since
//! the rows are not committed). DDL on a claimed table (`drop_table`, `drop_index`,
//! `create_index`, `load`) fails at once with that error, as a retryable one. A claim is
//! a table lock outside the wait-for graph: a cycle through it ends by the timeout.
//!
//! ## The buffer
//!
//! While it claims the table, each of the transaction's inserts there is checked and given
//! its auto-increment value as an ordinary insert is, encoded as the clustered record it
//! will be (`DB_TRX_ID` the transaction's id, `DB_ROLL_PTR` "inserted, no history": a read
//! view that does not see the transaction finds no version of the row), and appended to an
//! arena of records (the `bulk_buf` module), sorted by primary key once, at commit or spill:
//! a duplicate key is [`crate::Error::DuplicateKey`] from the insert call (a hash of every
//! key finds it, or a comparison with the last key while the rows come in key order), and
//! a failed insert leaves the buffer as it was (statement rollback). Each secondary index's
//! entry for the row is buffered beside it, and a UNIQUE index's key checked there, in the
//! order an ordinary insert checks (the `bulk_sec` module). No undo, no row lock, no page is
//! touched.
//!
//! Anything else the transaction does with the table (a read, an update, a delete, a
//! locking read) first **spills** the buffer: the rows are inserted the ordinary way, with
//! undo and locks, in key order, as one statement, and the claim ends; every read and write
//! path then works unchanged (the spilled rows' secondary entries are the ordinary inserts'
//! own). A row too long to stay inline, or a buffer past
//! [`crate::Config::bulk_insert_buffer_size`] (rows and secondary entries counted, or past
//! 2^32 rows), spills too. A rollback drops the buffer.
//!
//! ## Commit
//!
//! The commit builds the table's clustered tree bottom-up from the buffer
//! ([`minnow_btree::tree::BulkBuilder`], leaves' `PAGE_MAX_TRX_ID` the transaction's id), and
//! each secondary index's tree from its sorted entries (the same stamp), then, holding the
//! DDL mutex, the quiesce latch and the metadata lock (exclusively):
//!
//! 1. switches the table's in-memory entry to the new trees (a reader that does not see the
//!    transaction finds its records and no version of them: still empty to it; through a
//!    secondary index it checks each entry against that record, the leaf's
//!    `PAGE_MAX_TRX_ID` being the transaction's);
//! 2. commits the transaction with [`minnow_mvcc::trx_sys::TrxSys::commit_with`], whose
//!    mini-transaction also rewrites the table's dictionary record in place to name the new
//!    roots ([`minnow_btree::BTree::overwrite_in`]): the dictionary change and the commit
//!    mark are durable together or not at all. Only after it does the transaction stop
//!    being active, so every read view that sees it reads the new trees.
//! 3. ends the claim and frees the old, empty trees.
//!
//! **Crash**: the built trees' pages are logged before the commit mtr. A crash before that
//! mtr is durable leaves the dictionary naming the old empty trees and the transaction
//! active (rolled back at open: it has no undo records), and the built trees' segments
//! orphans that `open` frees; a crash after it leaves the new trees named, the transaction
//! committed, and the old trees' segments orphans, freed the same way. If the commit mtr
//! fails, the entry is switched back and the transaction rolled back.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::entry::EntryState;
use crate::{Engine, TableEntry};
use minnow_btree::ScanRange;
use minnow_btree::record::{RecordBuf, Value};
use minnow_btree::tree::{BulkBuilder, BulkOptions};
use minnow_mvcc::{MvccError, RollPtr};
use minnow_redo::Lsn;

use crate::dict::dict_row;
use crate::error::{Error, Result, from_tree};
use crate::schema::{self, PRIMARY};

use super::bulk_buf::{Added, RowBuffer};
use super::bulk_sec::SecBuffers;
use super::{TrxState, WriteGuard, entry_now, statement};

/// Bytes a buffered row is counted at beyond its record and key (its entry, its hash).
const ROW_OVERHEAD: usize = 64;

/// A transaction's buffered inserts into the table it claims.
pub(crate) struct Bulk {
    /// The claimed table's entry at the claim (DDL refuses a claimed table, so it stays the
    /// table's until the claim ends).
    table: Arc<TableEntry>,
    /// The claiming transaction.
    trx: u64,
    /// Every buffered record's `DB_TRX_ID` and `DB_ROLL_PTR` (the claiming transaction,
    /// "inserted, no history").
    sys: [Value; 2],
    /// The rows, as clustered records (the `bulk_buf` module).
    rows: RowBuffer,
    /// Their secondary index entries (the `bulk_sec` module).
    sec: SecBuffers,
    /// What they are counted at against `bulk_insert_buffer_size`.
    bytes: usize,
}

impl std::fmt::Debug for Bulk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bulk")
            .field("table", &self.table.meta.name())
            .field("rows", &self.rows.len())
            .field("bytes", &self.bytes)
            .finish()
    }
}

impl Drop for Bulk {
    fn drop(&mut self) {
        self.table.claim.release(self.trx);
    }
}

impl Bulk {
    /// True if this buffer is for the table of `t`.
    fn is_for(&self, t: &TableEntry) -> bool {
        Arc::ptr_eq(&self.table.claim, &t.claim)
    }
}

/// What [`TrxState::bulk_insert`] did with a row.
pub enum BulkInsert {
    /// Buffered; the auto-increment values it generated.
    Buffered(Vec<u64>),
    /// Not buffered: insert it the ordinary way.
    Ordinary,
    /// Not buffered (too long to stay inline), the buffer spilled: insert this prepared row
    /// (its auto-increment value given) the ordinary way; the values generated.
    Prepared(Vec<Value>, Vec<u64>),
}

// The claim's timeout is the engine's (DDL refuses a claimed table there).
pub(crate) use crate::claim::claim_timeout;

/// The row `row` of `t`, normalised, and its clustered record stamped with the system
/// columns `sys`, encoded from the row's own values (no copy of them, nor a vector of the
/// record's values): for a table without an auto-increment column, whose record stays
/// whole. `None` otherwise, or if the row does not encode: the caller then takes the
/// ordinary preparation, which reports what is wrong or moves columns off-page.
fn encoded_as_is<'r>(
    inner: &Engine,
    t: &TableEntry,
    row: &'r [Value],
    sys: &[Value; 2],
) -> Result<Option<(Cow<'r, [Value]>, RecordBuf)>> {
    if t.autoinc.is_some() {
        return Ok(None);
    }
    let row = t.meta.normalise_row_cow(row)?;
    let meta = &t.meta;
    let mut refs: Vec<&Value> = Vec::with_capacity(meta.pk.len() + 2 + meta.rest.len());
    for &i in meta.pk.iter() {
        let Some(v) = row.get(i) else { return Ok(None) };
        refs.push(v);
    }
    refs.extend(sys);
    for &i in meta.rest.iter() {
        let Some(v) = row.get(i) else { return Ok(None) };
        refs.push(v);
    }
    let rec = t.clustered.try_encode_inline_refs(inner.pool(), &refs);
    drop(refs);
    Ok(rec.map(|rec| (row, rec)))
}

/// True if inserts into `t` may be buffered: not compressed.
fn eligible(t: &TableEntry) -> bool {
    t.meta.def.compression.is_none()
}

/// True if no tree of `t` holds a record, delete-marked ones included.
fn physically_empty(inner: &Engine, t: &TableEntry) -> Result<bool> {
    let names = t.meta.secondary.iter().map(|s| s.name.as_str());
    for (tree, name) in std::iter::once(&t.clustered)
        .chain(&t.secondary)
        .zip(std::iter::once(PRIMARY).chain(names))
    {
        let mut probe = tree
            .scan(inner.pool(), ScanRange::all().limit(1))
            .map_err(|e| from_tree(e, t.meta.name(), name))?;
        if probe.next().is_some() {
            return Ok(false);
        }
    }
    Ok(true)
}

impl TrxState {
    /// True if this transaction buffers inserts into the table of `t`.
    pub fn claims(&self, t: &TableEntry) -> bool {
        self.bulk.as_ref().is_some_and(|b| b.is_for(t))
    }

    /// Buffers `row` for `table` if this transaction claims it or can claim it now (see the
    /// module docs); says what it did.
    pub fn bulk_insert(
        &mut self,
        inner: &Engine,
        table: &Arc<TableEntry>,
        row: &[Value],
    ) -> Result<BulkInsert> {
        match &self.bulk {
            Some(b) if !b.is_for(table) => return Ok(BulkInsert::Ordinary),
            Some(_) => {}
            None => {
                let key = Arc::as_ptr(&table.claim) as usize;
                if self.bulk_tried.contains(&key) || !self.claim(inner, table)? {
                    if !self.bulk_tried.contains(&key) {
                        self.bulk_tried.push(key);
                    }
                    return Ok(BulkInsert::Ordinary);
                }
            }
        }
        let id = self.id;
        let Some(b) = self.bulk.as_mut() else {
            return Ok(BulkInsert::Ordinary);
        };
        let t = Arc::clone(&b.table);
        // The statement's latches, as an ordinary insert holds them (close waits for it).
        let w = WriteGuard::new(inner, &t.mdl, &t.claim)?;
        if t.state() != EntryState::Live {
            return Err(Error::TableChanged {
                table: t.meta.name().to_owned(),
            });
        }
        let mut reserved = 0..0;
        let mut generated = Vec::new();
        let (row, rec) = match encoded_as_is(inner, &t, row, &b.sys)? {
            Some(x) => x,
            None => {
                let row = t.prepare_row(inner, row, &mut reserved, &mut generated)?;
                let values = super::rows::stamped(&t, &row, id, RollPtr::NONE);
                let Some(rec) = t
                    .clustered
                    .encode_inline(inner.pool(), &values)
                    .map_err(|e| from_tree(e, t.meta.name(), PRIMARY))?
                else {
                    drop(w);
                    self.spill(inner)?;
                    return Ok(BulkInsert::Prepared(row, generated));
                };
                (Cow::Owned(row), rec)
            }
        };
        let added = b
            .rows
            .add(t.clustered.layout(), rec.as_bytes(), rec.extra())
            .map_err(|e| from_tree(e.into(), t.meta.name(), PRIMARY))?;
        let mut size = match added {
            Added::Row(size) => size,
            Added::Duplicate => {
                return Err(Error::DuplicateKey {
                    table: t.meta.name().to_owned(),
                    index: PRIMARY.to_owned(),
                    key: t.meta.pk_of(&row),
                });
            }
            Added::Full => {
                // The buffer holds all it can: the rows go the ordinary way, this one too.
                drop(w);
                self.spill(inner)?;
                return Ok(BulkInsert::Prepared(row.into_owned(), generated));
            }
        };
        let max =
            minnow_btree::tree::overflow::max_record_len(inner.pool().config().page_size.bytes());
        let clustered = (rec.as_bytes(), rec.extra());
        match b.sec.add(&t, t.clustered.layout(), clustered, max) {
            Ok(bytes) => size += bytes,
            Err(e) => {
                // The row leaves no trace: its clustered record goes too.
                b.rows.remove_last();
                return Err(e);
            }
        }
        b.bytes += size + ROW_OVERHEAD;
        if b.bytes > inner.config().bulk_insert_buffer_bytes() {
            drop(w);
            self.spill(inner)?;
        }
        Ok(BulkInsert::Buffered(generated))
    }

    /// Claims `table` for this transaction if it may (see the module docs); true if it did.
    fn claim(&mut self, inner: &Engine, table: &Arc<TableEntry>) -> Result<bool> {
        // Cheap refusals first, without the exclusive metadata lock, on the table's current
        // entry (a handle's may be one a load or a bulk commit replaced, whose tree is gone).
        // An error here (a tree freed under the probe) is only a refusal: the ordinary
        // path reports what is wrong, if anything is.
        let current;
        let t = if table.state() == EntryState::Live {
            table
        } else {
            current = entry_now(inner, table)?;
            &current
        };
        if !eligible(t) || t.claim.owner() != 0 || !physically_empty(inner, t).unwrap_or(false) {
            return Ok(false);
        }
        self.writer(inner)?;
        let _q = inner.write_latch()?;
        // No write statement on the table runs while this is held.
        let _x = table.mdl.write();
        let t = entry_now(inner, table)?;
        if !eligible(&t)
            || t.claim.owner() != 0
            || t.claim.pending() != 0
            || !physically_empty(inner, &t)?
            || std::iter::once(t.meta.index_id)
                .chain(t.meta.secondary.iter().map(|s| s.index_id))
                .any(|id| inner.locks().index_in_use(id))
        {
            return Ok(false);
        }
        let sec = SecBuffers::new(&t)?;
        t.claim.claim(self.id);
        self.bulk = Some(Bulk {
            table: t,
            trx: self.id,
            sys: [
                Value::trx_id(self.id),
                Value::roll_ptr(RollPtr::NONE.to_u64()),
            ],
            rows: RowBuffer::new(),
            sec,
            bytes: 0,
        });
        Ok(true)
    }

    /// Inserts the buffered rows the ordinary way (undo, locks), as one statement, and ends
    /// the claim; nothing if there is no buffer. If it fails, the statement is rolled back
    /// and the buffer and claim stay.
    pub fn spill(&mut self, inner: &Engine) -> Result<()> {
        let Some(mut b) = self.bulk.take() else {
            return Ok(());
        };
        b.rows.sort();
        let me = self.id;
        let r = statement(inner, &b.table, me, |inner, t, w| {
            self.statement(inner, |st| {
                for (rec, extra) in b.rows.records() {
                    let values = t
                        .clustered
                        .layout()
                        .decode(rec, extra)
                        .map_err(|e| from_tree(e.into(), t.meta.name(), PRIMARY))?;
                    let row = t.meta.row_of(values)?;
                    super::insert(inner, t, st, w, &row)?;
                }
                Ok(())
            })
        });
        match r {
            Ok(()) => {
                self.bulk_tried.push(Arc::as_ptr(&b.table.claim) as usize);
                drop(b);
                Ok(())
            }
            Err(e) => {
                self.bulk = Some(b);
                Err(e)
            }
        }
    }

    /// Commits a transaction that buffers inserts (see the module docs, "Commit"); the
    /// caller holds no latch. Any failure before the commit point rolls the transaction back.
    pub fn commit_bulk(&mut self, inner: &Engine) -> Result<Option<Lsn>> {
        let Some(mut b) = self.bulk.take().filter(|b| !b.rows.is_empty()) else {
            // No buffered row (a claim whose inserts all failed ends with the buffer).
            let _q = inner.write_latch()?;
            return self.commit(inner);
        };
        let _ddl = inner.ddl().lock();
        let _q = inner.write_latch()?;
        let t = Arc::clone(&b.table);
        let _x = t.mdl.write();
        b.rows.sort();
        match self.publish(inner, &mut b, &t) {
            Ok(end) => {
                self.release_locks();
                // Ends the claim, after the commit: writers waiting for it find the new tree.
                drop(b);
                // The old, empty trees are named by nothing now. A failure here leaves their
                // segments orphans, which `open` frees; the commit stands either way.
                for tree in std::iter::once(&t.clustered).chain(&t.secondary) {
                    let _ = tree.free_all(inner.pool());
                }
                Ok(Some(end))
            }
            Err(e) => {
                drop(b);
                self.rollback(inner)?;
                Err(e)
            }
        }
    }

    /// Builds the tree from `b`, switches `t`'s table to it and commits with the dictionary
    /// record naming it (steps 1 and 2 of the module docs' "Commit"); on failure nothing is
    /// committed and the table is as it was.
    fn publish(&mut self, inner: &Engine, b: &mut Bulk, t: &Arc<TableEntry>) -> Result<Lsn> {
        let pool = inner.pool();
        let name = t.meta.name();
        let current = inner.tables().read().get(name).cloned();
        if !current.is_some_and(|c| Arc::ptr_eq(&c, t)) {
            return Err(Error::TableChanged {
                table: name.to_owned(),
            });
        }
        let mut created = Vec::new();
        let built = (|| {
            let mut builder = BulkBuilder::new(
                pool,
                t.meta.space_id(),
                t.clustered.index_id(),
                t.meta.clustered_layout()?,
                BulkOptions::default().max_trx_id(self.id),
            )
            .map_err(|e| from_tree(e, name, PRIMARY))?;
            created.push(builder.tree().clone());
            for (rec, extra) in b.rows.records() {
                builder
                    .push_bytes(rec, extra)
                    .map_err(|e| from_tree(e, name, PRIMARY))?;
            }
            let (secondary, sec_end) = b.sec.build(pool, t, self.id, &mut created)?;
            let (tree, end) = builder.finish().map_err(|e| from_tree(e, name, PRIMARY))?;
            Ok((tree, secondary, end.max(sec_end)))
        })();
        let (tree, secondary, built_end) = crate::bulk::abandon_on_error(pool, built, &created)?;
        let mut meta = t.meta.clone();
        meta.root = tree.root();
        for (s, tree) in meta.secondary.iter_mut().zip(&secondary) {
            s.root = tree.root();
        }
        let row = dict_row(name.as_bytes(), schema::encode(&meta));
        // The new trees keep the old (empty) ones' index ids: their hash starts afresh, and
        // BEFORE the new entry hooks them (dropping an index kills every hook on that id,
        // the new tree's too: it would never be hashed).
        drop_hashes(inner, t);
        let new = Arc::new(entry_like(inner, t, meta, tree.clone(), secondary.clone()));
        // Step 1: readers of the table read the new tree from now on.
        inner
            .tables()
            .write()
            .insert(name.to_owned(), Arc::clone(&new));
        t.superseded.store(true, Ordering::Release);
        // Step 2: the commit point.
        let log = self.log.take().ok_or(Error::TransactionEnded)?;
        let committed = inner.trx_sys().commit_with(pool, &log, |mtr| {
            if inner.dict().overwrite_in(pool, mtr, &row)? {
                Ok(())
            } else {
                Err(MvccError::CommitRefused {
                    what: format!(
                        "table `{name}`: its dictionary record cannot be rewritten in place"
                    ),
                })
            }
        });
        match committed {
            Ok(end) => Ok(end.max(built_end)),
            Err(e) => {
                // Not committed: the table goes back to its empty trees. The hash of each
                // index is dropped first (the new trees' pages may be in it) and the old trees
                // get fresh hooks: their own died with the drop above.
                drop_hashes(inner, t);
                let rehook = |tree: &minnow_btree::BTree| {
                    crate::entry::rehook_tree(inner.ahi(), tree.clone())
                };
                let empty = rehook(&t.clustered);
                let empty_sec = t.secondary.iter().map(rehook).collect();
                let old = Arc::new(entry_like(inner, t, t.meta.clone(), empty, empty_sec));
                inner.tables().write().insert(name.to_owned(), old);
                new.superseded.store(true, Ordering::Release);
                for tree in std::iter::once(&tree).chain(&secondary) {
                    let _ = tree.free_all(pool);
                }
                self.log = Some(log);
                Err(e.into())
            }
        }
    }
}

/// Drops the adaptive hash index's entries (and hooks) of every index of `t`.
fn drop_hashes(inner: &Engine, t: &TableEntry) {
    for tree in std::iter::once(&t.clustered).chain(&t.secondary) {
        inner.ahi().drop_index(tree.index_id());
    }
}

/// A new entry for the table of `t` (its locks, claim and counters carried) with `meta`
/// and trees `clustered` and `secondary`.
fn entry_like(
    inner: &Engine,
    t: &TableEntry,
    meta: crate::schema::TableMeta,
    clustered: minnow_btree::BTree,
    secondary: Vec<minnow_btree::BTree>,
) -> TableEntry {
    t.successor(meta, clustered, secondary)
        .hooked(inner.ahi())
        .configured(inner.config())
}
