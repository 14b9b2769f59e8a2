//! A row delete's delete mark and its undo record in one mini-transaction: InnoDB's
//! `btr_cur_del_mark_set_clust_rec`, which writes the undo record (`trx_undo_report_row_operation`)
//! while the clustered leaf is latched.
//!
//! The delete of a row (the [`crate::write`] module's `delete`) takes the row's lock first,
//! by its key alone; the lock key's bytes are the key's fields as the index stores them, and
//! the descent searches with them and the undo record copies them from there
//! ([`undo_key_fields`]) rather than encode the key again. The descent latches the clustered
//! leaf exclusively, and in one mtr ([`minnow_btree::BTree::change_leaf_record_stored`]):
//!
//! ```text
//!   leaf X-latched ── record read in place (delete mark, DB_TRX_ID, DB_ROLL_PTR, fields if
//!        │            secondary entries need them)
//!        ├── rollback segment mutex: try_lock (never waited for under a latch)
//!        ├── undo record (the key and the old system columns) appended: undo pages latched
//!        │   after the leaf
//!        └── record stamped: DB_TRX_ID, DB_ROLL_PTR, delete mark ── mtr commit: one redo group
//! ```
//!
//! So a crash keeps the undo record and the mark together or neither: recovery's rollback
//! finds every marked record's undo record. The older path wrote the undo record in an mtr
//! of its own and latched the leaf again for the mark (two mtrs, two latchings of the leaf,
//! the hash guess's verification and repair between them).
//!
//! **The latch order.** The rollback segment mutex comes before every page latch
//! (ARCHITECTURE.md). Under the leaf latch it is only *tried*; if another thread holds it,
//! the mtr commits empty (nothing was written yet), the mutex is taken with no latch held,
//! and the descent runs again under it. Within the mtr the undo pages come after the leaf, as
//! a bulk insert's commit latches a dictionary leaf before its undo pages; nothing latches an
//! undo page and then waits for a B-tree page.
//!
//! **What it leaves to the general path** ([`Marked::Declined`], nothing changed): a record
//! last written by a transaction that may still be active (telling a conflict from a writer
//! that committed takes the transaction system's id mutex, which a page latch must not be
//! held for), a compressed tree (a mark that no longer compresses needs the compression
//! retry's reorganization, which runs in mtrs of its own) and an undo record longer than a
//! page.

use std::borrow::Cow;

use minnow_btree::TreeError;
use minnow_btree::record::{RecordError, Value};
use minnow_btree::tree::LeafSlot;
use minnow_buf::Mtr;
use minnow_mvcc::{LockKey, NewRecord, RollPtr, UndoFields, UndoKind, UndoLog, UndoTail};
use minnow_redo::Lsn;

use crate::engine::Engine;
use crate::entry::TableEntry;
use crate::error::{Error, Result, from_tree};
use crate::schema::PRIMARY;

/// What [`mark_deleted`] did.
#[derive(Debug)]
pub enum Marked {
    /// The record is delete-marked, its undo record in the same mtr, which ended at `end`;
    /// `values` holds every field of the record (off-page ones fetched) if they were asked
    /// for.
    Done {
        /// The mtr's end LSN (what the transaction's commit must make durable).
        end: Lsn,
        /// The record's fields, if asked for.
        values: Option<Vec<Value>>,
    },
    /// No record with the key, or one delete-marked by a transaction that ended or by this
    /// one: nothing to delete, nothing changed.
    Absent,
    /// Nothing changed: the case is the general path's (see the module docs).
    Declined,
}

/// The step the closure under the leaf latch took.
enum Step {
    Marked(Option<Vec<Value>>),
    Absent,
    Declined,
    /// The rollback segment mutex is held by another thread: take it, then try again.
    Contended,
}

/// Fills `out` with the undo fields of a clustered record: all fields but the system ones,
/// or only the key (`key_only`, where `values` may be the key alone), each value encoded in
/// place.
pub fn undo_fields(
    t: &TableEntry,
    values: &[Value],
    key_only: bool,
    out: &mut UndoFields,
) -> Result<()> {
    let layout = t.clustered.layout();
    let n = t.meta.pk.len();
    for (i, v) in values.iter().enumerate() {
        if i == n || i == n + 1 {
            continue;
        }
        if key_only && i >= n {
            break;
        }
        out.push_with(|b| layout.encode_field_into(i, v, b))
            .map_err(|e| from_tree(e.into(), t.meta.name(), PRIMARY))?;
    }
    Ok(())
}

/// Fills the empty `out` with the undo fields of primary key `pk`, whose row lock key is
/// `key`: the key's fields copied, as the lock encoded them (the same encoding as
/// [`undo_fields`]'s), so a delete encodes its key once for both; encoded from `pk` should
/// `key` not hold the key's fields.
pub fn undo_key_fields(
    t: &TableEntry,
    key: &LockKey,
    pk: &[Value],
    out: &mut UndoFields,
) -> Result<()> {
    let mut n = 0;
    for f in key.stored_fields() {
        out.push(f);
        n += 1;
    }
    if n == t.meta.pk.len() && key.index() == t.meta.index_id {
        return Ok(());
    }
    out.clear();
    undo_fields(t, pk, true, out)
}

/// Delete-marks the clustered record of primary key `pk` (normalised) for the transaction
/// that owns `log`, whose row lock on `pk` (lock key `key`) the caller holds: the undo
/// record and the mark in one mtr (see the module docs). `want_values` asks for the record's
/// fields (for its secondary entries). On success `log` has the new record.
pub fn mark_deleted(
    inner: &Engine,
    t: &TableEntry,
    log: &mut UndoLog,
    pk: &[Value],
    key: &LockKey,
    want_values: bool,
) -> Result<Marked> {
    if t.clustered.is_compressed() {
        return Ok(Marked::Declined);
    }
    let sys = inner.trx_sys();
    let pool = inner.pool();
    let page_size = pool.config().page_size.bytes();
    let me = log.trx_id;
    // Taken without a latch after a try under one found it held.
    let mut held: Option<UndoTail<'_>> = None;
    loop {
        let tail = &mut held;
        let undo: &UndoLog = log;
        let change = |mtr: &mut Mtr<'_>, slot: &LeafSlot| {
            // The bound first: a writer below it ended before the record was read.
            let bound = sys.oldest_active();
            let read = || -> std::result::Result<_, TreeError> {
                let old = slot.sys(&t.clustered, mtr)?.ok_or_else(|| {
                    TreeError::from(RecordError::NoField {
                        field: t.meta.pk.len(),
                        fields: t.meta.pk.len(),
                    })
                })?;
                // The fields only when secondary entries need them (a walk of the record).
                let values = match want_values && !old.deleted {
                    true => {
                        let rec = slot.record(&t.clustered, pool, mtr)?;
                        Some(
                            (0..rec.view().len())
                                .map(|i| rec.value(i))
                                .collect::<std::result::Result<Vec<_>, _>>()?,
                        )
                    }
                    false => None,
                };
                Ok((old, values))
            };
            let (old, values) = read().map_err(|e| from_tree(e, t.meta.name(), PRIMARY))?;
            let (deleted, trx_id) = (old.deleted, old.trx_id);
            let roll_ptr = RollPtr::from_u64(old.roll_ptr);
            if trx_id != me && trx_id != 0 && trx_id >= bound {
                return Ok::<_, Error>(Step::Declined);
            }
            if deleted {
                return Ok(Step::Absent);
            }
            let appender = match tail {
                Some(a) => a,
                None => match sys.try_undo_tail(undo)? {
                    Some(a) => tail.insert(a),
                    None => return Ok(Step::Contended),
                },
            };
            // The record keeps its fields until purge: the undo record holds the key and
            // the old system columns alone (`history::version_before` rebuilds the older
            // version from the record's fields and those).
            let ptr = UndoFields::with_scratch(|fields| -> Result<Option<RollPtr>> {
                undo_key_fields(t, key, pk, fields)?;
                let rec = NewRecord {
                    kind: UndoKind::DeleteMark,
                    old_deleted: false,
                    index_id: t.meta.index_id,
                    old_trx_id: trx_id,
                    old_roll_ptr: roll_ptr,
                    fields: Cow::Borrowed(fields),
                };
                Ok(appender.append_in(mtr, page_size, undo, rec)?)
            })?;
            let Some(ptr) = ptr else {
                return Ok(Step::Declined);
            };
            t.clustered
                .stamp_in(mtr, slot, me, ptr.to_u64(), Some(true))
                .map_err(|e| from_tree(e, t.meta.name(), PRIMARY))?;
            Ok(Step::Marked(values))
        };
        // The search key from the lock key's bytes, where they are this index's key: the
        // key is encoded once for the lock, the undo record and the descent.
        let changed = match key.index() == t.meta.index_id {
            true => t
                .clustered
                .change_leaf_record_stored(pool, key.stored_fields(), change),
            false => t.clustered.change_leaf_record(pool, pk, change),
        };
        let changed = changed.map_err(|e| from_tree(e, t.meta.name(), PRIMARY))??;
        match changed {
            None | Some((Step::Absent, _)) => return Ok(Marked::Absent),
            Some((Step::Declined, _)) => return Ok(Marked::Declined),
            Some((Step::Contended, _)) => held = Some(sys.undo_tail(log)?),
            Some((Step::Marked(values), end)) => {
                if let Some(a) = held.take() {
                    a.committed(log);
                }
                return Ok(Marked::Done { end, values });
            }
        }
    }
}
