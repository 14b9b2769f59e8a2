//! Streaming scans: [`ScanArgs`] (what to read) and [`Cursor`] (the scan in progress, one
//! visible row at a time), under the `minnow` crate's `Table::scan`, `Table::scan_index`,
//! their `Transaction` twins and its `Rows` iterator (which holds the database handle and
//! asks this cursor for each row).
//!
//! A scan reads one leaf at a time and holds no latch between rows. Each row it returns, and
//! its end, is validated against DDL after it was read (the `ddl` module docs, "Reads racing
//! a drop"): a scan whose table was dropped or replaced under it ends with
//! [`Error::TableChanged`] rather than return what it found on pages the table gave back.
//!
//! On the clustered index each record is decided by [`super::visible`]. A secondary entry
//! carries no transaction id: its leaf's `PAGE_MAX_TRX_ID` says whether the view sees every
//! change on it, and then a delete-marked entry is skipped and a covering read answers from
//! the entry alone; otherwise the clustered record's visible version decides (it must exist
//! and have exactly this entry).

use std::ops::Bound;
use std::sync::Arc;

use minnow_btree::record::Value;
use minnow_btree::{Entry, RangeCursor, ScanRange};

use super::by_index::from_entry;
use super::{Snapshot, validated, visible};
use crate::admission::Ticket;
use crate::engine::Engine;
use crate::entry::{EntryState, TableEntry};
use crate::error::{Error, Result, from_tree};
use crate::schema::{PRIMARY, TableMeta};
use crate::status::RowOp;

/// What a scan reads, borrowed from the `minnow` crate's `Scan` (its typed constructors
/// need the API's key traits, so the type stays there): key bounds (keys or key
/// **prefixes**: for a scan of the primary key the leading primary key columns, for one of a
/// secondary index the leading index columns, followed, if wanted, by leading primary key
/// columns), a limit, a projection and a direction.
#[derive(Debug, Clone, Copy)]
pub struct ScanArgs<'a> {
    /// Lower bound.
    pub start: &'a Bound<Vec<Value>>,
    /// Upper bound.
    pub end: &'a Bound<Vec<Value>>,
    /// The most rows to return.
    pub limit: Option<usize>,
    /// The columns to return, by name, in this order (`None`: every column in table order).
    pub columns: Option<&'a [String]>,
    /// Descending key order (from `end` down to `start`; the limit counts from the top).
    pub reverse: bool,
}

/// A streaming scan in progress ([`primary`], [`secondary`]): the projected rows it sees,
/// one per [`Cursor::next_in`]. It holds no latch between rows (it reads one leaf at a
/// time), so a thread may write while it scans; rows changed meanwhile may or may not be
/// seen. A scan whose table is dropped, or replaced by `drop_index`, `create_index` or a
/// load, while it runs ends with [`Error::TableChanged`]; once the engine is closed its next
/// row is [`Error::Closed`].
pub struct Cursor {
    t: Arc<TableEntry>,
    /// The B-tree scan's position (it reads through the engine's pool on each step).
    cursor: RangeCursor,
    /// Which versions the scan sees.
    snap: Snapshot,
    /// Rows still to return (`None`: no limit).
    left: Option<usize>,
    /// The stored clustered fields a non-covering secondary scan fetches.
    fetch: Vec<usize>,
    /// `None`: a clustered scan; `Some(i)`: secondary index `i`.
    index: Option<usize>,
    /// Positions of the requested columns in the row.
    proj: Vec<usize>,
    /// Whether the secondary entry holds every requested column.
    covering: bool,
    done: bool,
    /// The statement's admission ticket: one per row, released when the scan is dropped.
    admitted: Ticket<'static>,
}

impl std::fmt::Debug for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rows")
            .field("table", &self.t.meta.name())
            .field("index", &self.index)
            .field("covering", &self.covering)
            .finish()
    }
}

impl Cursor {
    /// True if this secondary-index scan answers from the index alone (every requested
    /// column is an index or primary key column); false if it fetches each row from the
    /// clustered index. A primary key scan is always covering.
    pub fn is_covering(&self) -> bool {
        self.covering
    }

    /// Records the B-tree scan decoded so far (returned, skipped as invisible, or
    /// buffered to return next).
    pub fn decoded(&self) -> u64 {
        self.cursor.decoded()
    }

    /// [`Error::TableChanged`] if DDL dropped or replaced the scan's table entry since the
    /// scan began: what it read since may come from pages the table no longer owns.
    fn stale(&self) -> Option<Error> {
        (self.t.state() != EntryState::Live).then(|| Error::TableChanged {
            table: self.t.meta.name().to_owned(),
        })
    }

    fn row(&mut self, inner: &Engine, e: Entry) -> Result<Option<Vec<Value>>> {
        let Entry {
            values,
            deleted,
            page_max_trx_id,
        } = e;
        inner.check_open()?;
        let meta = &self.t.meta;
        let Some(i) = self.index else {
            let Some(v) = visible(inner, &self.t, &self.snap, values, deleted)? else {
                return Ok(None);
            };
            return Ok(Some(self.project(meta.row_of(v)?)));
        };
        let s = &meta.secondary[i];
        // Secondary entries carry no transaction id, but their leaf carries PAGE_MAX_TRX_ID:
        // if the view sees every transaction up to it, every change on the leaf is visible
        // and the entries are the truth as they are (InnoDB's `lock_sec_rec_cons_read_sees`).
        // A delete-marked one then belongs to no version the view sees, and a covering read
        // needs nothing from the clustered index.
        if self.snap.sees_page(page_max_trx_id) && (deleted || self.covering) {
            inner.rows().bump(RowOp::SecClusterReadAvoided, 1);
            if deleted {
                return Ok(None);
            }
            return Ok(Some(from_entry(meta, s, &values, &self.proj)));
        }
        inner.rows().bump(RowOp::SecClusterRead, 1);
        // Otherwise (the leaf may hold a change the view cannot see, or the scan needs
        // other columns) the clustered record decides: its visible version must exist and
        // have exactly this entry (a delete-marked entry may be the one an old version has,
        // an unmarked one may belong to a version the view cannot see).
        let pk = values.get(s.cols.len()..).unwrap_or_default();
        let e = self
            .t
            .clustered
            .get_fields(inner.pool(), pk, &self.fetch)
            .map_err(|e| from_tree(e, meta.name(), PRIMARY))?;
        let Some(e) = e else {
            return Ok(None);
        };
        let Some(v) = visible(inner, &self.t, &self.snap, e.values, e.deleted)? else {
            return Ok(None);
        };
        let row = meta.row_of(v)?;
        if !meta.has_secondary_entry(s, &row, &values) {
            return Ok(None);
        }
        Ok(Some(self.project(row)))
    }

    /// The projected columns of a whole row, moved rather than copied when the projection
    /// is every column in table order (a scan without `columns`): no value is cloned and
    /// the row's buffers are handed on as they are.
    fn project(&self, row: Vec<Value>) -> Vec<Value> {
        if self.proj.len() == row.len() && self.proj.iter().enumerate().all(|(i, &c)| i == c) {
            return row;
        }
        self.proj.iter().map(|&c| row[c].clone()).collect()
    }
}

impl Cursor {
    /// The next row the scan sees, read through `inner` (the engine the scan was started
    /// on); `None` at its end.
    pub fn next_in(&mut self, inner: &Engine) -> Option<Result<Vec<Value>>> {
        if self.done || self.left == Some(0) {
            return None;
        }
        self.admitted.row();
        loop {
            if let Err(e) = inner.check_open() {
                self.done = true;
                return Some(Err(e));
            }
            let pool = inner.pool();
            let Some(next) = self.cursor.next_in(pool) else {
                // The end is an answer too: one reached through a page a drop freed is not.
                self.done = true;
                return self.stale().map(Err);
            };
            let r = match next {
                Ok(e) => self.row(inner, e),
                Err(e) => {
                    let index = match self.index {
                        None => PRIMARY,
                        Some(i) => self.t.meta.secondary[i].name.as_str(),
                    };
                    Err(from_tree(e, self.t.meta.name(), index))
                }
            };
            // Validated after the read (`minnow-engine`'s `ddl` module docs, "Reads racing a
            // drop"): a row or an error from a page the table no longer owns is a changed table.
            if !matches!(r, Ok(None))
                && let Some(e) = self.stale()
            {
                self.done = true;
                return Some(Err(e));
            }
            match r {
                Ok(Some(row)) => {
                    if let Some(n) = self.left.as_mut() {
                        *n -= 1;
                    }
                    inner.rows().bump(RowOp::Read, 1);
                    return Some(Ok(row));
                }
                Ok(None) => continue,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
    }
}

/// A bound over the leading `k.len()` columns of `cols`, normalised: read from the caller's
/// bound and copied once (the copy the B-tree's range takes), not cloned and then normalised
/// into a second copy.
fn prefix_bound(
    meta: &TableMeta,
    cols: &[usize],
    b: &Bound<Vec<Value>>,
) -> Result<Bound<Vec<Value>>> {
    let norm = |k: &[Value]| -> Result<Vec<Value>> {
        let cols = cols.get(..k.len()).unwrap_or(cols);
        Ok(meta.normalise_key_cow(cols, k)?.into_owned())
    };
    Ok(match b {
        Bound::Included(k) => Bound::Included(norm(k)?),
        Bound::Excluded(k) => Bound::Excluded(norm(k)?),
        Bound::Unbounded => Bound::Unbounded,
    })
}

/// What a locking range read over the primary key of `t` needs from `scan`
/// (`Transaction::scan_for_update`): its bounds, normalised, and the positions of its
/// columns.
pub(crate) type LockingPlan = (Bounds, Vec<usize>);

/// A scan's lower and upper bound.
pub type Bounds = (Bound<Vec<Value>>, Bound<Vec<Value>>);

/// See [`LockingPlan`].
pub(crate) fn locking_plan(t: &TableEntry, scan: ScanArgs<'_>) -> Result<LockingPlan> {
    Ok((
        pk_bounds(&t.meta, scan)?,
        projection(&t.meta, scan.columns)?,
    ))
}

/// The bounds of `scan` over the primary key of `meta`, normalised.
pub fn pk_bounds(meta: &TableMeta, scan: ScanArgs<'_>) -> Result<Bounds> {
    let b = |b: &Bound<Vec<Value>>| prefix_bound(meta, &meta.pk, b);
    Ok((b(scan.start)?, b(scan.end)?))
}

/// The positions of the columns `cols` names (`None`: every column in table order).
fn projection(meta: &TableMeta, cols: Option<&[String]>) -> Result<Vec<usize>> {
    let def = &meta.def;
    match cols {
        None => Ok((0..def.columns.len()).collect()),
        Some(names) => names
            .iter()
            .map(|n| {
                def.column_index(n).ok_or_else(|| Error::NoSuchColumn {
                    table: def.name.clone(),
                    column: n.clone(),
                })
            })
            .collect(),
    }
}

/// A scan of the primary key of table `t` as `snap` sees it, validated against DDL (the
/// engine must be open: the caller checked).
pub fn primary(
    inner: &Arc<Engine>,
    t: &Arc<TableEntry>,
    snap: Snapshot,
    scan: ScanArgs<'_>,
) -> Result<Cursor> {
    start(inner, t, &snap, scan, None)
}

/// A scan of secondary index `index` of table `t` as `snap` sees it, validated against DDL:
/// covering when every requested column is an index or primary key column, otherwise each
/// row fetched from the clustered index.
pub fn secondary(
    inner: &Arc<Engine>,
    t: &Arc<TableEntry>,
    snap: Snapshot,
    index: &str,
    scan: ScanArgs<'_>,
) -> Result<Cursor> {
    start(inner, t, &snap, scan, Some(index))
}

/// Where a scan reads and what it returns: its B-tree cursor, the projection, the stored
/// clustered fields a secondary scan fetches, the secondary index (`None`: the clustered
/// one) and whether the scan is covering.
type Plan = (RangeCursor, Vec<usize>, Vec<usize>, Option<usize>, bool);

/// [`primary`] (`index` `None`) or [`secondary`], each try on the entry [`validated`] gives.
fn start(
    inner: &Arc<Engine>,
    t: &Arc<TableEntry>,
    snap: &Snapshot,
    scan: ScanArgs<'_>,
    index: Option<&str>,
) -> Result<Cursor> {
    validated(inner, t, |t| {
        let mut admitted = Ticket::owned(inner);
        admitted.row();
        let (cursor, proj, fetch, index, covering) = match index {
            None => primary_plan(t, scan)?,
            Some(name) => secondary_plan(t, name, scan)?,
        };
        Ok(Cursor {
            t: Arc::clone(t),
            cursor,
            snap: snap.clone(),
            left: scan.limit,
            fetch,
            index,
            proj,
            covering,
            done: false,
            admitted,
        })
    })
}

/// The [`Plan`] of a scan of the primary key of `t`.
fn primary_plan(t: &TableEntry, scan: ScanArgs<'_>) -> Result<Plan> {
    let meta = &t.meta;
    let proj = projection(meta, scan.columns)?;
    let b = |b: &Bound<Vec<Value>>| prefix_bound(meta, &meta.pk, b);
    let wanted = meta.stored_fields(&proj);
    let mut range = ScanRange::new(b(scan.start)?, b(scan.end)?);
    if scan.columns.is_some() {
        // Only the requested columns are decoded, and the system columns the
        // visibility check reads (an older version comes whole from undo).
        let npk = meta.pk.len();
        range = range.fields(wanted.iter().copied().chain([npk, npk + 1]).collect());
    }
    range = range.fetch(wanted);
    // The limit counts visible rows, so it is applied here, not by the B-tree (which
    // would count delete-marked records and invisible versions); the B-tree only reads
    // as many records as the limit at first, and more, lazily, if some are skipped.
    range.batch = scan.limit;
    range.reverse = scan.reverse;
    let cursor = t
        .clustered
        .cursor(range)
        .map_err(|e| from_tree(e, meta.name(), PRIMARY))?;
    Ok((cursor, proj, Vec::new(), None, true))
}

/// The [`Plan`] of a scan of secondary index `index` of `t`.
fn secondary_plan(t: &TableEntry, index: &str, scan: ScanArgs<'_>) -> Result<Plan> {
    let meta = &t.meta;
    let i = meta
        .secondary
        .iter()
        .position(|s| s.name == index)
        .ok_or_else(|| Error::NoSuchIndex {
            table: meta.name().to_owned(),
            index: index.to_owned(),
        })?;
    let s = &meta.secondary[i];
    let proj = projection(meta, scan.columns)?;
    let covering = proj
        .iter()
        .all(|c| s.cols.contains(c) || meta.pk.contains(c));
    // A fetched row is compared with the entry, so the index columns come too.
    let proj_and_key: Vec<usize> = proj.iter().chain(&s.cols).copied().collect();
    // Bounds are prefixes of (index columns, primary key columns).
    let cols: Vec<usize> = s.cols.iter().chain(meta.pk.iter()).copied().collect();
    let start = prefix_bound(meta, &cols, scan.start)?;
    let end = prefix_bound(meta, &cols, scan.end)?;
    let mut range = ScanRange::new(start, end);
    // The limit counts visible rows, so it is applied here, not by the B-tree (which
    // would count delete-marked records and invisible versions), which reads as many
    // entries as the limit at first and more, lazily, if some are skipped.
    range.batch = scan.limit;
    range.reverse = scan.reverse;
    let cursor = t.secondary[i]
        .cursor(range)
        .map_err(|e| from_tree(e, meta.name(), index))?;
    let fetch = meta.stored_fields(&proj_and_key);
    Ok((cursor, proj, fetch, Some(i), covering))
}
