//! The row writes: insert, update and delete of one row, each undo first, then the clustered
//! record, then the secondary entries; with the unique checks and the size check before
//! anything is written.

use std::borrow::Cow;

use minnow_btree::TreeError;
use minnow_btree::record::Value;
use minnow_btree::tree::InsertProbe;
use minnow_mvcc::{NewRecord, RollPtr, UndoFields, UndoKind};

use crate::error::{Error, Result, from_tree};
use crate::history::sys_of;
use crate::schema::PRIMARY;
use crate::{Engine, TableEntry};

use super::*;

// Shared with rollback and purge (the engine's `row` module).
use crate::mark::{Marked, mark_deleted, undo_fields};
pub(crate) use crate::row::{clustered_record, sec};

// ---- Records and their system columns ----

/// The clustered values of `row` written by `trx` with roll pointer `ptr`.
pub(super) fn stamped(t: &TableEntry, row: &[Value], trx: u64, ptr: RollPtr) -> Vec<Value> {
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

/// The clustered record a delete marks, as [`old_version`] reads it.
struct OldVersion {
    deleted: bool,
    trx_id: u64,
    roll_ptr: RollPtr,
    /// The leaf it was read on, for the stamp that follows.
    at: Option<minnow_btree::tree::LeafPos>,
    /// Every field, off-page ones fetched; read only when secondary entries need the row.
    values: Option<Vec<Value>>,
}

/// Reads the clustered record of primary key `pk` in place (under its leaf's latch): its
/// delete mark and system columns, and its values only if `want_values`; `None` if there is
/// no record with that key.
fn old_version(
    inner: &Engine,
    t: &TableEntry,
    pk: &[Value],
    want_values: bool,
) -> Result<Option<OldVersion>> {
    let n = t.meta.pk.len();
    let found = t.clustered.get_with(inner.pool(), pk, |rec| {
        let view = rec.view();
        let sys = |x: Option<u64>| {
            x.ok_or_else(|| {
                TreeError::from(minnow_btree::record::RecordError::NoField {
                    field: n,
                    fields: view.len(),
                })
            })
        };
        let trx_id = sys(view.trx_id()?)?;
        let roll_ptr = RollPtr::from_u64(sys(view.roll_ptr()?)?);
        let values = match want_values {
            true => Some(
                (0..view.len())
                    .map(|i| rec.value(i))
                    .collect::<Result<_, _>>()?,
            ),
            false => None,
        };
        Ok::<_, TreeError>(OldVersion {
            deleted: rec.deleted(),
            trx_id,
            roll_ptr,
            at: rec.position(),
            values,
        })
    });
    found
        .and_then(Option::transpose)
        .map_err(|e| from_tree(e, t.meta.name(), PRIMARY))
}

// ---- Secondary entries ----

// Every change of a secondary entry on behalf of transaction `me` raises the leaf's
// PAGE_MAX_TRX_ID to `me` in the change's own mini-transaction (the `_trx` B-tree calls), so
// a reader that sees the change sees the raise, and redo carries both.

pub(super) fn sec_insert(
    inner: &Engine,
    t: &TableEntry,
    i: usize,
    me: u64,
    entry: &[Value],
) -> Result<()> {
    let (tree, name) = sec(t, i)?;
    match tree.insert_trx(inner.pool(), entry, me) {
        Ok(_) => Ok(()),
        Err(TreeError::Duplicate { .. }) => tree
            .set_delete_mark_trx(inner.pool(), entry, false, me)
            .map(|_| ())
            .map_err(|e| from_tree(e, t.meta.name(), name)),
        Err(e) => Err(from_tree(e, t.meta.name(), name)),
    }
}

pub(super) fn sec_mark(
    inner: &Engine,
    t: &TableEntry,
    i: usize,
    me: u64,
    entry: &[Value],
    deleted: bool,
) -> Result<()> {
    let (tree, name) = sec(t, i)?;
    tree.set_delete_mark_trx(inner.pool(), entry, deleted, me)
        .map(|_| ())
        .map_err(|e| from_tree(e, t.meta.name(), name))
}

// ---- Writes (the caller holds the statement's latches and runs them as a statement) ----

/// Locks the row with primary key `pk` (waiting as [`lock_row`] does), then reads its
/// clustered record: read after the lock, so it is this transaction's or committed.
pub(super) fn lock_and_read(
    inner: &Engine,
    t: &TableEntry,
    trx: &mut TrxState,
    w: &mut WriteGuard<'_>,
    pk: &[Value],
) -> Result<Option<minnow_btree::Entry>> {
    lock_row(inner, t, trx, w, pk)?;
    clustered_record(inner, t, pk)
}

/// Probes the clustered index for an insert of primary key `pk`: one descent that finds the
/// record with the key (if any), the record after it and the leaf it goes to
/// ([`minnow_btree::BTree::probe_insert`]).
pub(super) fn probe(inner: &Engine, t: &TableEntry, pk: &[Value]) -> Result<InsertProbe> {
    t.clustered
        .probe_insert(inner.pool(), pk)
        .map_err(|e| from_tree(e, t.meta.name(), PRIMARY))
}

/// Inserts a checked, normalised row. The clustered index is searched once
/// (`probe`): the same descent answers the duplicate check, names the gap the record
/// enters, and leaves the leaf as a hint the insert goes straight to (see `gaps`,
/// `insert_into_gap`).
pub fn insert(
    inner: &Engine,
    t: &TableEntry,
    trx: &mut TrxState,
    w: &mut WriteGuard<'_>,
    row: &[Value],
) -> Result<()> {
    let meta = &t.meta;
    let pool = inner.pool();
    let pk = meta.pk_of(row);
    // Locked before the probe reads, so what it finds is this transaction's or committed.
    lock_row(inner, t, trx, w, &pk)?;
    let mut found = probe(inner, t, &pk)?;
    if let Some(e) = &found.existing {
        conflict(inner, t, trx.id, &e.values, &pk)?;
        if !e.deleted {
            return Err(dup(t, PRIMARY, pk));
        }
    }
    let waits = trx.waits;
    for i in 0..meta.secondary.len() {
        check_unique(inner, t, trx, w, i, row, None)?;
    }
    if trx.waits != waits {
        // The row is locked, so no writer changed it while the unique checks waited; but
        // purge may have removed the delete-marked record meanwhile, and the gap moved.
        found = probe(inner, t, &pk)?;
    }
    check_entry_sizes(inner, t, row)?;
    match found.existing.take() {
        None => {
            // A new record: it enters a gap, which another transaction may have locked.
            insert_into_gap(inner, t, trx, w, &pk, found, |trx, hint| {
                let ptr = UndoFields::with_scratch(|fields| {
                    // The key alone: the clustered record's leading fields are `pk`.
                    undo_fields(t, &pk, true, fields)?;
                    trx.append(
                        inner,
                        NewRecord {
                            kind: UndoKind::Insert,
                            old_deleted: false,
                            index_id: meta.index_id,
                            old_trx_id: 0,
                            old_roll_ptr: RollPtr::NONE,
                            fields: Cow::Borrowed(fields),
                        },
                    )
                })?;
                trx.end = t
                    .clustered
                    .insert_hinted(pool, &stamped(t, row, trx.id, ptr), 0, hint)
                    .map_err(|e| match e {
                        TreeError::Duplicate { .. } => dup(t, PRIMARY, pk.clone()),
                        e => from_tree(e, meta.name(), PRIMARY),
                    })?;
                Ok(())
            })?;
        }
        Some(old) => {
            // An insert over a delete-marked row: an update of that record.
            rewrite(
                inner,
                t,
                trx,
                &old.values,
                UndoKind::Update,
                row,
                Some(false),
            )?;
        }
    }
    for (i, s) in meta.secondary.iter().enumerate() {
        sec_insert(inner, t, i, trx.id, &meta.secondary_values(s, row))?;
    }
    Ok(())
}

/// Writes `row` over the clustered record whose values are now `old`, on behalf of `trx`:
/// the undo record first (of `kind`, holding the whole old version and its delete mark),
/// then the record, stamped with `trx`'s id and the undo record's roll pointer; `mark` sets
/// (`Some(true)`, a delete) or clears (`Some(false)`, an insert over a delete-marked row) the
/// delete mark in the same mini-transaction, `None` keeps it.
fn rewrite(
    inner: &Engine,
    t: &TableEntry,
    trx: &mut TrxState,
    old: &[Value],
    kind: UndoKind,
    row: &[Value],
    mark: Option<bool>,
) -> Result<()> {
    let (old_trx, old_ptr) = sys_of(&t.meta, old)?;
    let old_deleted = mark == Some(false);
    let ptr = UndoFields::with_scratch(|fields| {
        undo_fields(t, old, false, fields)?;
        trx.append(
            inner,
            NewRecord {
                kind,
                old_deleted,
                index_id: t.meta.index_id,
                old_trx_id: old_trx,
                old_roll_ptr: old_ptr,
                fields: Cow::Borrowed(fields),
            },
        )
    })?;
    trx.end = t
        .clustered
        .update_marked(inner.pool(), &stamped(t, row, trx.id, ptr), mark)
        .map_err(|e| from_tree(e, t.meta.name(), PRIMARY))?;
    Ok(())
}

/// Replaces the row with `row`'s primary key (normalised).
pub fn update(
    inner: &Engine,
    t: &TableEntry,
    trx: &mut TrxState,
    w: &mut WriteGuard<'_>,
    row: &[Value],
) -> Result<()> {
    let meta = &t.meta;
    let pk = meta.pk_of(row);
    let old = match lock_and_read(inner, t, trx, w, &pk)? {
        Some(e) if !e.deleted => e,
        Some(e) => {
            conflict(inner, t, trx.id, &e.values, &pk)?;
            lock_absent(inner, t, trx, &pk)?;
            return Err(not_found(t, pk));
        }
        None => {
            lock_absent(inner, t, trx, &pk)?;
            return Err(not_found(t, pk));
        }
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
    rewrite(inner, t, trx, &old.values, UndoKind::Update, row, None)?;
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
pub fn delete(
    inner: &Engine,
    t: &TableEntry,
    trx: &mut TrxState,
    w: &mut WriteGuard<'_>,
    pk: &[Value],
) -> Result<bool> {
    let meta = &t.meta;
    // The key encoded once: for the lock, and (its bytes copied) for the undo record.
    let key = row_lock_key(t, pk)?;
    lock(inner, t, trx, w, &key)?;
    // Read after the lock: one descent, the undo record and the mark in one mtr, unless the
    // case is the general path's below (`crate::mark`).
    trx.writer(inner)?;
    let log = trx.log.as_mut().ok_or(Error::TransactionEnded)?;
    let values = match mark_deleted(inner, t, log, pk, &key, !meta.secondary.is_empty())? {
        Marked::Done { end, values } => {
            trx.end = end;
            values
        }
        Marked::Absent => {
            lock_absent(inner, t, trx, pk)?;
            return Ok(false);
        }
        Marked::Declined => return delete_apart(inner, t, trx, pk),
    };
    if let Some(values) = values {
        sec_unmark(inner, t, trx.id, values)?;
    }
    Ok(true)
}

/// [`delete`]'s general path, for what `mark_deleted` declines: the record read in place,
/// the undo record appended in its own mtr, then the mark in another (the leaf latched again
/// by its number if it did not change meanwhile).
fn delete_apart(inner: &Engine, t: &TableEntry, trx: &mut TrxState, pk: &[Value]) -> Result<bool> {
    let meta = &t.meta;
    // Read after the lock, in place: the row is decoded only when secondary entries need it.
    let (old, ptr) = UndoFields::with_scratch(|fields| -> Result<_> {
        let want_row = !meta.secondary.is_empty();
        let Some(old) = old_version(inner, t, pk, want_row)? else {
            return Ok((None, None));
        };
        conflict_with(inner, t, trx.id, old.trx_id, pk)?;
        if old.deleted {
            return Ok((None, None));
        }
        // The record only takes the delete mark and the new system columns, written in place
        // (as InnoDB's delete-mark): its fields stay until purge, so the undo record holds
        // the key and the old system columns alone, and the older version is the record's
        // fields with those (`history::version_before`).
        undo_fields(t, pk, true, fields)?;
        let ptr = trx.append(
            inner,
            NewRecord {
                kind: UndoKind::DeleteMark,
                old_deleted: false,
                index_id: meta.index_id,
                old_trx_id: old.trx_id,
                old_roll_ptr: old.roll_ptr,
                fields: Cow::Borrowed(fields),
            },
        )?;
        Ok((Some(old), Some(ptr)))
    })?;
    let (Some(old), Some(ptr)) = (old, ptr) else {
        lock_absent(inner, t, trx, pk)?;
        return Ok(false);
    };
    // The leaf the read found, latched by its number if nothing changed it meanwhile: on
    // this path the undo append ran in its own mtr, but the row lock keeps the record as
    // read, so unless the page moved on, no second descent.
    trx.end = t
        .clustered
        .stamp_marked_at(inner.pool(), pk, trx.id, ptr.to_u64(), Some(true), old.at)
        .map_err(|e| from_tree(e, meta.name(), PRIMARY))?;
    if let Some(values) = old.values {
        sec_unmark(inner, t, trx.id, values)?;
    }
    Ok(true)
}

/// Delete-marks the secondary entries of a deleted row whose clustered fields are `values`.
fn sec_unmark(inner: &Engine, t: &TableEntry, me: u64, values: Vec<Value>) -> Result<()> {
    let meta = &t.meta;
    let old_row = meta.row_of(values)?;
    for (i, s) in meta.secondary.iter().enumerate() {
        sec_mark(inner, t, i, me, &meta.secondary_values(s, &old_row), true)?;
    }
    Ok(())
}

pub(super) fn dup(t: &TableEntry, index: &str, key: Vec<Value>) -> Error {
    Error::DuplicateKey {
        table: t.meta.name().to_owned(),
        index: index.to_owned(),
        key,
    }
}

pub(super) fn not_found(t: &TableEntry, key: Vec<Value>) -> Error {
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
pub(super) fn check_unique(
    inner: &Engine,
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
pub(super) fn unique_holder(
    inner: &Engine,
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
    lock(inner, t, trx, w, &unique)?;
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
        .scan(inner.pool(), range)
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
            .get(inner.pool(), pk)
            .map_err(|e| from_tree(e, meta.name(), PRIMARY))?
        {
            let (writer, _) = sys_of(&t.meta, &c.values)?;
            if writer != trx.id && writer != 0 && inner.trx_sys().is_active(writer) {
                return Ok(Some(pk.to_vec()));
            }
        }
    }
    Ok(None)
}

/// Refuses a row whose entry in some secondary index would be too big for a page before
/// anything is written.
pub(super) fn check_entry_sizes(inner: &Engine, t: &TableEntry, row: &[Value]) -> Result<()> {
    let meta = &t.meta;
    let max = minnow_btree::tree::overflow::max_record_len(inner.pool().config().page_size.bytes());
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
