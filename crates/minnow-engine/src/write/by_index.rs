//! The locking read through a unique secondary index
//! (`Transaction::get_by_for_update`, [`super::get_by_for_update`], `SELECT ... WHERE isbn = ? FOR UPDATE`).
//!
//! It locks two things, each held until the transaction ends:
//!
//! 1. **the key** in the unique index, the lock every insert and every update that gives a
//!    row this key takes before its unique check (`check_unique`). Held, no other
//!    transaction can give the key to a row: if no row has it, none will until this one
//!    ends (the phantom a gap lock prevents in InnoDB), and if one has it, no second row can
//!    take it.
//! 2. **the row** of every entry with the key, live or delete-marked, then read at its
//!    latest version (what a write reads): the row that has the key now is the answer, and
//!    locked, nobody changes or deletes it. A delete-marked entry whose row another
//!    transaction is changing (a delete, or an update of the key, not yet committed) waits
//!    for that row's lock: if that transaction rolls back, the row has the key again.
//!
//! The entries are collected first and locked after (each lock wait lets the statement's
//! latches go); under the key's lock no new entry can get the key, and an entry purged
//! meanwhile is checked against its row's latest version like any other.

use minnow_btree::ScanRange;
use minnow_btree::record::Value;

use crate::error::{Result, from_tree};
use crate::{Engine, TableEntry};

use super::rows::lock_and_read;
use super::*;

/// The row whose key in unique index `i` is `key` (normalised), locked with the key, at its
/// latest version (see the module docs); `None` if no row has the key (the key stays
/// locked). The caller runs it as a statement.
pub(crate) fn lock_by_unique(
    inner: &Engine,
    t: &TableEntry,
    trx: &mut TrxState,
    w: &mut WriteGuard<'_>,
    i: usize,
    key: &[Value],
) -> Result<Option<Vec<Value>>> {
    let meta = &t.meta;
    let (tree, name) = sec(t, i)?;
    let Some(s) = meta.secondary.get(i) else {
        return Ok(None); // `sec` found it
    };
    let nk = key.len();
    lock(inner, t, trx, w, &lock_key(t, tree, name, s.index_id, key)?)?;
    let bound = || std::ops::Bound::Included(key.to_vec());
    let mut pks = Vec::new();
    for e in tree
        .scan(inner.pool(), ScanRange::new(bound(), bound()))
        .map_err(|e| from_tree(e, meta.name(), name))?
    {
        let mut e = e.map_err(|e| from_tree(e, meta.name(), name))?;
        pks.push(e.values.split_off(nk.min(e.values.len())));
    }
    for pk in pks {
        let Some(rec) = lock_and_read(inner, t, trx, w, &pk)? else {
            continue;
        };
        // Holding the lock, the record is this transaction's or committed.
        conflict(inner, t, trx.id, &rec.values, &pk)?;
        if rec.deleted {
            continue;
        }
        let row = meta.row_of(rec.values)?;
        if s.cols.iter().zip(key).all(|(&c, v)| row.get(c) == Some(v)) {
            return Ok(Some(row));
        }
    }
    Ok(None)
}
