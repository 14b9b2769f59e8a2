//! Point reads through a unique secondary index ([`unique`]: under the `minnow` crate's
//! `Table::get_by`, `Table::get_by_columns` and their `Transaction` twins; `SELECT ... WHERE
//! isbn = ?` on a `UNIQUE KEY`).
//!
//! A unique index does not hold one entry per row but one per **version**: an update that
//! changes the indexed columns delete-marks the old entry and inserts the new one, a delete
//! delete-marks, and purge removes a marked entry only once no read view can need it (the
//! [`crate::write`] module docs). So several entries may carry the key asked for: at most
//! one live, and delete-marked ones of rows that had the key once (another row that was deleted or
//! took another key, or the same row before its key changed away and back). An entry is the
//! index columns followed by the primary key and the index is ordered by both, so these
//! entries lie side by side; the read walks them in primary key order and asks of each:
//!
//! ```text
//!   its leaf's PAGE_MAX_TRX_ID seen by the view,    no version the view sees has it:
//!   entry delete-marked                              skip it (no clustered read)
//!   leaf seen, entry live, only index and primary    every change on the leaf is visible,
//!   key columns asked for (get_by_columns)           so the entry is the row: answer from it
//!   otherwise                                        read the row's visible version by the
//!                                                    entry's primary key (in place, or
//!                                                    rebuilt from undo); it is the answer if
//!                                                    it exists and has exactly this key
//! ```
//!
//! This is the secondary scan's rule (InnoDB's `lock_sec_rec_cons_read_sees`) applied to
//! one key, with the clustered read of a point read ([`super::get::read_row`]). The first entry that passes is the
//! answer: one read view sees one committed state of the table (plus its own transaction's
//! changes), in which the unique index holds the key at most once. The lookups it cost or
//! saved count in `Status::rows` (`sec_cluster_reads`, `sec_cluster_reads_avoided`), as a
//! scan's do.

use std::ops::Bound;
use std::sync::Arc;

use minnow_btree::ScanRange;
use minnow_btree::record::Value;

use super::get::{Cols, PointKey, Reader, project, read_row};
use super::{Snapshot, validated};
use crate::engine::Engine;
use crate::entry::TableEntry;
use crate::error::{Result, from_tree};
use crate::row::sec;
use crate::schema::{SecMeta, TableMeta};
use crate::status::RowOp;

/// The columns `columns` (all of them: `None`) of the row of table `t` whose key in unique
/// secondary index `index` is `key`, as `snap` sees the table (see the module docs):
/// admitted for one row, validated against DDL, counted as a read if found.
pub fn unique(
    inner: &Engine,
    t: &Arc<TableEntry>,
    snap: &Snapshot,
    index: &str,
    key: &[Value],
    columns: Option<&[&str]>,
) -> Result<Option<Vec<Value>>> {
    let mut admitted = inner.admission().enter();
    admitted.row();
    let found = validated(inner, t, |t| {
        unique_entry(inner, t, snap, index, key, columns)
    })?;
    inner.rows().bump(RowOp::Read, u64::from(found.is_some()));
    Ok(found)
}

/// [`unique`] on entry `t`, unvalidated (see the module docs).
fn unique_entry(
    inner: &Engine,
    t: &TableEntry,
    snap: &Snapshot,
    index: &str,
    key: &[Value],
    columns: Option<&[&str]>,
) -> Result<Option<Vec<Value>>> {
    let meta = &t.meta;
    let (i, s, key) = meta.unique_key(index, key)?;
    let (tree, _) = sec(t, i)?;
    let proj: Vec<usize> = match columns {
        None => (0..meta.def.columns.len()).collect(),
        Some(names) => meta.positions_of(names).collect::<Result<_>>()?,
    };
    let covering = proj
        .iter()
        .all(|c| s.cols.contains(c) || meta.pk.contains(c));
    // A row read from the clustered index brings its index columns first, to be compared
    // with the key, then the columns asked for.
    let names: Vec<&str> = s
        .cols
        .iter()
        .chain(&proj)
        .filter_map(|&c| meta.def.columns.get(c).map(|c| c.name.as_str()))
        .collect();
    let nk = s.cols.len();
    let bound = || Bound::Included(key.to_vec());
    let tree_err = |e| from_tree(e, meta.name(), index);
    let entries = tree
        .scan(inner.pool(), ScanRange::new(bound(), bound()))
        .map_err(tree_err)?;
    for e in entries {
        let e = e.map_err(tree_err)?;
        let seen = snap.sees_page(e.page_max_trx_id);
        if seen && (e.deleted || covering) {
            inner.rows().bump(RowOp::SecClusterReadAvoided, 1);
            if e.deleted {
                continue;
            }
            return Ok(Some(from_entry(meta, s, &e.values, &proj)));
        }
        inner.rows().bump(RowOp::SecClusterRead, 1);
        let pk = e.values.get(nk..).unwrap_or_default();
        let row = read_row(
            inner,
            t,
            PointKey::Values(pk),
            Reader::Snap(snap),
            &mut |meta, found| project(meta, found, Cols::Named(&names)),
        )?;
        if let Some(mut row) = row
            && row.get(..nk) == Some(&key[..])
        {
            return Ok(Some(row.split_off(nk)));
        }
    }
    Ok(None)
}

/// The columns at `proj` (index or primary key columns) of secondary entry `values` (index
/// columns, then primary key columns): what a covering read returns.
pub fn from_entry(meta: &TableMeta, s: &SecMeta, values: &[Value], proj: &[usize]) -> Vec<Value> {
    let at = |c: usize| {
        s.cols
            .iter()
            .chain(meta.pk.iter())
            .position(|&x| x == c)
            .and_then(|p| values.get(p).cloned())
            .unwrap_or(Value::Null)
    };
    proj.iter().map(|&c| at(c)).collect()
}
