//! The row-level steps that row writes, rollback and purge share: a table's clustered record
//! and its secondary trees, the primary key an undo record names, a row's lock key, the step
//! back to an older version through the buffer pool, and the physical removal of a clustered
//! record with the gap locks it hands on.
//!
//! The row writes themselves (insert, update, delete with undo and locks) are the
//! [`crate::write`] module; rollback ([`crate::rollback`]) and purge ([`crate::purge`]) undo
//! or remove what those writes left, with the same steps.

use std::ops::Bound;
use std::sync::Arc;

use minnow_btree::record::{Value, decode_value};
use minnow_btree::{BTree, Entry, ScanRange};
use minnow_mvcc::{LockKey, RollPtr, UndoRecord};

use crate::engine::Engine;
use crate::entry::TableEntry;
use crate::error::{Error, Result, from_tree};
use crate::history::{Older, older, undo_mismatch};
use crate::schema::PRIMARY;

/// The table whose clustered index is `index_id` (one hash probe: see [`crate::table_cache`]).
pub fn table_of(inner: &Engine, index_id: u64) -> Option<Arc<TableEntry>> {
    inner.tables().read().by_index(index_id).cloned()
}

/// The clustered record of primary key `pk`, delete-marked or not.
pub(crate) fn clustered_record(
    inner: &Engine,
    t: &TableEntry,
    pk: &[Value],
) -> Result<Option<Entry>> {
    t.clustered
        .get(inner.pool(), pk)
        .map_err(|e| from_tree(e, t.meta.name(), PRIMARY))
}

/// Secondary index `i` of table `t`: its tree and its name.
pub(crate) fn sec(t: &TableEntry, i: usize) -> Result<(&BTree, &str)> {
    match (t.secondary.get(i), t.meta.secondary.get(i)) {
        (Some(tree), Some(s)) => Ok((tree, s.name.as_str())),
        _ => Err(Error::Corrupt {
            what: format!("table `{}`: secondary index {i} missing", t.meta.name()),
        }),
    }
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

/// The lock key of the leading key `values` of `tree` (index `index_id`): each field's
/// encoding as the index compares it, length-prefixed, NULL as one zero byte.
pub(crate) fn lock_key(
    t: &TableEntry,
    tree: &BTree,
    index: &str,
    index_id: u64,
    values: &[Value],
) -> Result<LockKey> {
    LockKey::of_values(index_id, tree.layout(), values)
        .map_err(|e| from_tree(e.into(), t.meta.name(), index))
}

/// The lock key of the row with primary key `pk` (what writers and purge lock).
pub fn row_lock_key(t: &TableEntry, pk: &[Value]) -> Result<LockKey> {
    lock_key(t, &t.clustered, PRIMARY, t.meta.index_id, pk)
}

/// The primary key of a clustered record: its leading fields.
pub(crate) fn pk_of_entry(t: &TableEntry, e: &Entry) -> Vec<Value> {
    e.values.iter().take(t.meta.pk.len()).cloned().collect()
}

/// The first clustered record (delete-marked ones included: they are records until purge
/// removes them) within `start..end`, with the off-page fields `fetch` (`None`: all; the
/// others come back as NULL).
pub(crate) fn first_in(
    inner: &Engine,
    t: &TableEntry,
    (start, end): (Bound<Vec<Value>>, Bound<Vec<Value>>),
    fetch: Option<Vec<usize>>,
) -> Result<Option<Entry>> {
    let mut range = ScanRange::new(start, end);
    range.limit = Some(1);
    range.fetch = fetch;
    let mut scan = t
        .clustered
        .scan(inner.pool(), range)
        .map_err(|e| from_tree(e, t.meta.name(), PRIMARY))?;
    scan.next()
        .transpose()
        .map_err(|e| from_tree(e, t.meta.name(), PRIMARY))
}

/// The lock key of the record after `pk` in the clustered index, or the index's supremum if
/// there is none: the key whose gap `pk` is (or would be) in.
pub(crate) fn successor_key(inner: &Engine, t: &TableEntry, pk: &[Value]) -> Result<LockKey> {
    let after = (Bound::Excluded(pk.to_vec()), Bound::Unbounded);
    match first_in(inner, t, after, Some(Vec::new()))? {
        Some(e) => row_lock_key(t, &pk_of_entry(t, &e)),
        None => Ok(LockKey::supremum(t.meta.index_id)),
    }
}

/// Physically removes the clustered record of primary key `pk` by running `remove` (purge of a
/// delete-marked record, or the rollback of `inserter`'s insert), and passes the locks on it
/// to its successor as gap locks, so that a gap some transaction locked stays locked now that
/// it reaches further (not the inserter's own lock: see `LockManager::insert_undone`).
pub(crate) fn remove_record<T>(
    inner: &Engine,
    t: &TableEntry,
    pk: &[Value],
    inserter: Option<u64>,
    remove: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let me = row_lock_key(t, pk)?;
    let _gaps = t.gaps.latch(&me);
    let out = remove()?;
    let next = successor_key(inner, t, pk)?;
    match inserter {
        Some(trx) => inner.locks().insert_undone(&me, &next, trx),
        None => inner.locks().record_removed(&me, &next),
    }
    Ok(out)
}

/// The version before `newer`, whose roll pointer is `ptr`, from the undo store through the
/// buffer pool ([`crate::history::older`] is the one function that does it); an undo record
/// of another index is corruption.
pub(crate) fn step_back(
    inner: &Engine,
    t: &TableEntry,
    ptr: RollPtr,
    newer: &[Value],
) -> Result<Older> {
    match older(
        &**inner.pool(),
        inner.trx_sys().page().space,
        &t.meta,
        t.clustered.layout(),
        ptr,
        newer,
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
