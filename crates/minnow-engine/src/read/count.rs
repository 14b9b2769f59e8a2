//! Counting rows (the `minnow` crate's `Table::count` and `Transaction::count`, thin
//! wrappers over [`count`]): how many rows a snapshot sees, from the smallest index, without
//! decoding rows.
//!
//! A table keeps no row count: with MVCC every reader may see a different number (InnoDB's
//! `SELECT COUNT(*)` is a scan for the same reason). What makes minnow's count cheap is that
//! it asks the B-tree to count records from their delete mark and writer alone
//! ([`minnow_btree::BTree::count_visible`]), leaf after leaf, and decodes only the records whose
//! newest version the snapshot may not see:
//!
//! - on the **clustered index** a record written by a transaction the snapshot sees is its
//!   own visible version: it counts unless delete-marked. Any other record is rebuilt from undo
//!   as a consistent read would ([`super::visible`]) and counts if a visible version exists. A
//!   leaf whose `PAGE_MAX_TRX_ID` (kept there as a bound on its records' writers, 0 meaning
//!   unknown) is below the view's up limit is counted from its delete marks alone.
//! - on a **secondary index** entries carry no transaction id, but a leaf whose
//!   `PAGE_MAX_TRX_ID` the snapshot sees holds only changes it sees, so its entries count
//!   unless delete-marked. Entries of any other leaf are checked against the clustered record
//!   exactly as a secondary scan checks them (the visible version must exist and have this
//!   entry), so each row counts once even while an update moves its entry.
//!
//! Every row has exactly one entry in every index, so any index gives the same answer; the
//! count walks the one with the narrowest records (InnoDB also picks the smallest secondary
//! index), which means the fewest leaves. Records to decide are collected during the walk and
//! decided after its latches are gone (deciding reads other pages: undo, the clustered index).
//! Like a scan, a count racing DDL that replaces or drops the table ends with
//! [`crate::Error::TableChanged`].
//!
//! On a table of at least [`MIN_PARALLEL_LEAVES`] leaves the walk runs on
//! `parallel_read_threads` threads (InnoDB's `innodb_parallel_read_threads`, default 4, at
//! most the machine's available parallelism), as InnoDB's parallel reader answers
//! `COUNT(*)`: the leaf level is cut into key ranges at node pointers of the upper levels and
//! the threads count ranges under the one read view
//! ([`minnow_btree::BTree::count_visible_parallel`]). The records to decide are the same, in
//! the same order, as the serial walk's.
//!
//! ## Counting twice costs nothing
//!
//! redb and LMDB answer a count from a number kept in the tree; with MVCC there is no such
//! number, but there is one that holds for a while. A walk that had to decide nothing (every
//! record's writer seen, so every writer committed before the reader's view was opened) and
//! whose writers are all older than the view's oldest active transaction counted a state that
//! any view seeing those writers sees too, until the table is written again. So each table keeps
//! a [`CountCache`](crate::entry::CountCache): a change counter that every write statement
//! bumps when it ends (before its transaction can commit), and the last such count with the counter it was taken at and the
//! largest writer id behind it. A count whose counter matches, by a view that sees that writer
//! (`PAGE_MAX_TRX_ID`'s test: below the view's up limit), returns the number without a walk.
//! Why the order of the bump matters: a change a view can see was committed before the view
//! opened, and its bump came before its commit, so the view reads a counter past the cached
//! one. A change made while a walk runs, behind its position, bumps the counter after the walk
//! may have read it unchanged; the cached count (without the change) is then keyed to the old
//! counter, which no later reader sees.

use std::sync::Arc;

use minnow_btree::tree::{Counted, Parallel};
use minnow_btree::{BTree, Entry};

use super::get::newest_record;
use super::{Snapshot, changed, validated, visible};
use crate::engine::Engine;
use crate::entry::{Cached, EntryState, TableEntry};
use crate::error::{Result, from_tree};
use crate::schema::PRIMARY;

/// The rows of table `t` that `snap` sees (see the module docs), validated against DDL.
pub fn count(inner: &Engine, t: &Arc<TableEntry>, snap: &Snapshot) -> Result<u64> {
    validated(inner, t, |t| count_entry(inner, t, snap))
}

/// [`count`] on entry `t`, validated after the walk.
fn count_entry(inner: &Engine, t: &TableEntry, snap: &Snapshot) -> Result<u64> {
    let mut admitted = inner.admission().enter();
    admitted.row();
    let cache = &t.counted;
    let changes = cache.changes();
    if let Some(c) = cache.last()
        && c.changes == changes
        && snap.sees_page(c.max_trx_id)
    {
        return Ok(c.rows);
    }
    let (index, tree) = narrowest_index(t);
    let par = parallel(inner.config().parallel_read_threads);
    let counted: Counted = tree
        .count_visible_parallel(inner.pool(), snap.up_limit(), &|trx| snap.sees(trx), par)
        .map_err(|e| {
            let name = index.map_or(PRIMARY, |i| t.meta.secondary[i].name.as_str());
            from_tree(e, t.meta.name(), name)
        })?;
    let reusable = counted.unresolved.is_empty() && snap.sees_page(counted.max_trx_id);
    let mut rows = counted.visible;
    for e in counted.unresolved {
        rows += u64::from(resolve(inner, t, snap, index, e)?);
    }
    if t.state() != EntryState::Live {
        return Err(changed(t));
    }
    if reusable && cache.changes() == changes {
        cache.keep(Cached {
            changes,
            rows,
            max_trx_id: counted.max_trx_id,
        });
    }
    Ok(rows)
}

/// True if the record `e` of `index` (`None`: the clustered index) of `t`, whose newest
/// version `snap` may not see, stands for a row `snap` sees.
fn resolve(
    inner: &Engine,
    t: &TableEntry,
    snap: &Snapshot,
    index: Option<usize>,
    e: Entry,
) -> Result<bool> {
    let meta = &t.meta;
    let Some(i) = index else {
        return Ok(visible(inner, t, snap, e.values, e.deleted)?.is_some());
    };
    let s = &meta.secondary[i];
    let pk = e.values.get(s.cols.len()..).unwrap_or_default();
    let Some(rec) = newest_record(inner, t, pk)? else {
        return Ok(false);
    };
    let Some(v) = visible(inner, t, snap, rec.values, rec.deleted)? else {
        return Ok(false);
    };
    Ok(meta.has_secondary_entry(s, &meta.row_of(v)?, &e.values))
}

/// The index of `t` whose leaf records are narrowest (`None` in the pair: the clustered
/// index), and its tree. Widths are estimated from the column types: fixed-width columns
/// count their width, variable-width ones half their maximum.
pub fn narrowest_index(t: &TableEntry) -> (Option<usize>, &BTree) {
    let width = |tree: &BTree| -> usize {
        tree.layout()
            .fields()
            .iter()
            .map(|c| c.ty.fixed_len().unwrap_or(c.ty.max_len() / 2))
            .sum()
    };
    let mut best = (None, &t.clustered, width(&t.clustered));
    for (i, tree) in t.secondary.iter().enumerate() {
        let w = width(tree);
        if w < best.2 {
            best = (Some(i), tree, w);
        }
    }
    (best.0, best.1)
}

/// Tables with fewer leaves than this are counted on one thread: below a few hundred leaves
/// (a few MB) starting threads costs about what they save.
pub const MIN_PARALLEL_LEAVES: usize = 256;

/// How a count walks with `parallel_read_threads` configured: on that many threads, at most
/// the machine's available parallelism (asked once: on Linux the answer reads cgroup files).
pub fn parallel(configured: usize) -> Parallel {
    #[cfg(feature = "test-hooks")]
    if let Some(p) = crate::hooks::parallel() {
        return p;
    }
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let cores = *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from));
    Parallel {
        threads: configured.min(cores).max(1),
        min_leaves: MIN_PARALLEL_LEAVES,
    }
}
