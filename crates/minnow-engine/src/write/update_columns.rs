//! `UPDATE t SET stock = 4 WHERE id = ?`: a write of named columns over the row's latest
//! version (the `minnow` crate's `Table::update_columns` and `Transaction::update_columns`).
//!
//! The statement locks the row first (waiting as any write does), then reads its clustered
//! record: read under the lock, it is this transaction's own version or the latest
//! committed one, never a snapshot's older one, so a concurrent update is never lost (what
//! `stock = stock - 1` through `Transaction::get` and a whole-row `update` can lose
//! under REPEATABLE READ). The named columns are set in that row and it is written back by
//! the same code as a whole-row update ([`update`]): one undo record, the clustered record in
//! place, and for every secondary index whose columns changed the old entry delete-marked
//! and the new one inserted, after the unique checks. A row whose named columns already hold
//! the new values is not written (MySQL's "rows matched 1, changed 0"), but stays locked.
//!
//! The primary key cannot be named: InnoDB changes a row's key as a delete and an insert,
//! which an application can do itself in one transaction ([`Error::PrimaryKeyUpdate`]).

use minnow_btree::record::Value;

use crate::error::{Error, Result};
use crate::schema::TableMeta;
use crate::{Engine, TableEntry};

use super::rows::lock_and_read;
use super::*;

/// Resolves `changes` (column name, new value) against `meta`: each column's position and
/// its value checked and normalised. [`Error::NoSuchColumn`] for a name the table does not
/// have, [`Error::PrimaryKeyUpdate`] for a primary key column, [`Error::TypeMismatch`] for a
/// value that does not fit its column. A column named twice takes the last value.
pub fn column_changes(meta: &TableMeta, changes: &[(&str, Value)]) -> Result<Vec<(usize, Value)>> {
    changes
        .iter()
        .map(|(name, v)| {
            let c = meta
                .def
                .column_index(name)
                .ok_or_else(|| Error::NoSuchColumn {
                    table: meta.name().to_owned(),
                    column: (*name).to_owned(),
                })?;
            if meta.pk.contains(&c) {
                return Err(Error::PrimaryKeyUpdate {
                    table: meta.name().to_owned(),
                    column: (*name).to_owned(),
                });
            }
            Ok((c, meta.normalise(c, v)?))
        })
        .collect()
}

/// Sets the columns `changes` (from [`column_changes`]) of the row with primary key `pk`
/// (normalised), under its lock, as one write of the row (see the module docs); false if
/// there is no such row (under REPEATABLE READ its gap is then locked, as a delete of a
/// missing row locks it). The caller runs it as a statement.
pub fn update_columns(
    inner: &Engine,
    t: &TableEntry,
    trx: &mut TrxState,
    w: &mut WriteGuard<'_>,
    pk: &[Value],
    changes: &[(usize, Value)],
) -> Result<bool> {
    let old = match lock_and_read(inner, t, trx, w, pk)? {
        Some(e) if !e.deleted => e,
        found => {
            if let Some(e) = found {
                conflict(inner, t, trx.id, &e.values, pk)?;
            }
            lock_absent(inner, t, trx, pk)?;
            return Ok(false);
        }
    };
    // Holding the lock, the record is this transaction's or committed.
    conflict(inner, t, trx.id, &old.values, pk)?;
    let mut row = t.meta.row_of(old.values)?;
    let mut changed = false;
    for (c, v) in changes {
        let slot = row.get_mut(*c).ok_or_else(|| {
            t.meta
                .mismatch("", format!("no column at position {c} in an update"))
        })?;
        if slot != v {
            *slot = v.clone();
            changed = true;
        }
    }
    if changed {
        update(inner, t, trx, w, &row)?;
    }
    Ok(true)
}
