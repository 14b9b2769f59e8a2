//! The locking reads (`SELECT ... FOR UPDATE`): reads that lock what they read and read
//! the **latest committed** version (or the transaction's own), as a write does, rather than
//! a snapshot's. Each runs as a write statement (the `minnow` crate's `Transaction` runs it
//! under [`super::statement`] and [`TrxState::statement`]), with a write's errors: a
//! deadlock rolls the whole transaction back, a lock wait timeout only the statement.
//!
//! ```text
//!   get_for_update      by primary key: the row's lock, then its record; a missing row
//!                       locks its gap under REPEATABLE READ (lock_absent, the gaps module)
//!   scan_for_update     a primary key range: next-key locks on every record read and on
//!                       the first one past the range (the gaps module's walk)
//!   get_by_for_update   through a unique secondary index: the key's lock, then the rows
//!                       of its entries (the by_index module)
//! ```

use minnow_btree::record::Value;

use crate::engine::Engine;
use crate::entry::TableEntry;
use crate::error::Result;
use crate::read::scan::{ScanArgs, locking_plan};

use super::by_index::lock_by_unique;
use super::rows::lock_and_read;
use super::*;

/// The row with primary key `key` (not yet normalised), locked, at its latest version;
/// `None` if there is no such row (the key stays locked either way, and under REPEATABLE
/// READ the gap a missing row would go in, so no other transaction can insert it until
/// this one ends).
pub fn get_for_update(
    inner: &Engine,
    t: &TableEntry,
    st: &mut TrxState,
    w: &mut WriteGuard<'_>,
    key: &[Value],
) -> Result<Option<Vec<Value>>> {
    let key = t.meta.normalise_key(&t.meta.pk, key)?;
    match lock_and_read(inner, t, st, w, &key)? {
        Some(e) if !e.deleted => {
            // Holding the lock, the record is ours or committed.
            conflict(inner, t, st.id, &e.values, &key)?;
            Ok(Some(t.meta.row_of(e.values)?))
        }
        found => {
            if let Some(e) = found {
                conflict(inner, t, st.id, &e.values, &key)?;
            }
            // No row: under REPEATABLE READ nobody may insert one until this ends.
            lock_absent(inner, t, st, &key)?;
            Ok(None)
        }
    }
}

/// The rows of `scan`'s primary key range, its columns, limit and order, each locked and
/// read at its latest version (the `gaps` module's walk, which says what it locks). A
/// reverse scan locks the whole range, then keeps the top `limit` rows.
pub fn scan_for_update(
    inner: &Engine,
    t: &TableEntry,
    st: &mut TrxState,
    w: &mut WriteGuard<'_>,
    scan: ScanArgs<'_>,
) -> Result<Vec<Vec<Value>>> {
    let (bounds, proj) = locking_plan(t, scan)?;
    let limit = if scan.reverse { None } else { scan.limit };
    let mut rows = gaps::scan_for_update(inner, t, st, w, bounds, &proj, limit)?;
    if scan.reverse {
        rows.reverse();
        rows.truncate(scan.limit.unwrap_or(usize::MAX));
    }
    Ok(rows)
}

/// The row whose key in unique secondary index `index` is `key` (not yet normalised),
/// locked with the key, at its latest version; `None` if no row has the key (the key stays
/// locked). See the `by_index` module.
pub fn get_by_for_update(
    inner: &Engine,
    t: &TableEntry,
    st: &mut TrxState,
    w: &mut WriteGuard<'_>,
    index: &str,
    key: &[Value],
) -> Result<Option<Vec<Value>>> {
    let (i, _, key) = t.meta.unique_key(index, key)?;
    lock_by_unique(inner, t, st, w, i, &key)
}
