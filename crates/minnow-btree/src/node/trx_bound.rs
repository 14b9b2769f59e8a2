//! `PAGE_MAX_TRX_ID` on clustered leaves: a bound on the writers of the records on the page.
//!
//! On a secondary leaf the field says "every transaction that changed a record here has at
//! most this id" (see [`super::max_trx_id`]). A clustered record carries its writer itself
//! (`DB_TRX_ID`), so InnoDB keeps the field at 0 there. minnow keeps it on clustered leaves too,
//! with a meaning of its own that lets a count trust a whole leaf:
//!
//! - **0 means unknown**: nothing is promised. Pages written before the field was kept (and any
//!   page whose bound was lost) hold 0, and a reader walks their records one by one.
//! - **any other value is at least the `DB_TRX_ID` of every record now on the page**. A reader
//!   whose view sees every id below its up limit, on a leaf whose bound is below that limit,
//!   sees every record as it is: the leaf's count is its records minus the delete-marked ones.
//!   A bound is never below 1, so that a page whose records were all written with id 0 (a bulk
//!   load) still says "known".
//!
//! The bound is kept wherever a record's `DB_TRX_ID` is written ([`cover_trx_id`]: inserts,
//! updates, stamps) and wherever records move between pages (a split or merge carries the
//! source's bound, or recomputes the destination's with [`exact_max_trx_id`] when either side
//! was unknown). Deletes and purge only remove records, which keeps a bound true. Every change
//! is an ordinary page write inside the change's mini-transaction, so redo carries it and
//! recovery restores it. The bound may go down (a recomputation after a merge): only the
//! records present matter, unlike on a secondary leaf, whose bound also speaks for changes to
//! entries that are gone.

use minnow_page::bytes;

use super::{INFIMUM, NodeError, SUPREMUM, max_trx_id, n_recs, records, store_max_trx_id};
use crate::PageMut;
use crate::record::RecordLayout;

/// The `DB_TRX_ID` of the clustered-leaf record at `origin` (`None` for a layout without one:
/// a secondary index or node pointers). Read at its fixed offset when every key field before it
/// is fixed-width, else found by walking the key's stored lengths.
pub(crate) fn record_trx_id(
    page: &[u8],
    layout: &RecordLayout,
    origin: usize,
) -> Result<Option<u64>, NodeError> {
    let Some(field) = layout.trx_id_field() else {
        return Ok(None);
    };
    let at = match layout.fixed_offset(field) {
        Some(off) => origin + off,
        None => match layout.sys_fields_at(page, origin)? {
            Some(at) => at,
            None => return Ok(None),
        },
    };
    Ok(trx_id_of(bytes::slice(page, at, 6)?))
}

/// A stored `DB_TRX_ID`: 6 bytes, big-endian (`None` for any other length).
pub(crate) fn trx_id_of(b: &[u8]) -> Option<u64> {
    let b: &[u8; 6] = b.try_into().ok()?;
    let mut a = [0u8; 8];
    a[2..].copy_from_slice(b);
    Some(u64::from_be_bytes(a))
}

/// The bound a clustered leaf should carry for its records now: the largest `DB_TRX_ID` on
/// the page, at least 1 (see the module docs). Walks every record.
pub fn exact_max_trx_id(page: &[u8], layout: &RecordLayout) -> Result<u64, NodeError> {
    let mut max = 1;
    for c in records(page) {
        if let Some(t) = record_trx_id(page, layout, c?.origin())? {
            max = max.max(t);
        }
    }
    Ok(max)
}

/// Keeps a clustered leaf's bound true when a record written by `trx_id` is about to be put
/// on it (or stamped on it): raised to `trx_id` (at least 1) if the page's bound is known or
/// the page holds no records yet; an unknown bound on a page with records is first computed
/// from them ([`exact_max_trx_id`]), once, so that pages from before the field was kept become
/// known as they are written. A no-op for layouts without `DB_TRX_ID`.
pub fn cover_trx_id<P: PageMut + ?Sized>(
    p: &mut P,
    layout: &RecordLayout,
    trx_id: u64,
) -> Result<(), NodeError> {
    if layout.trx_id_field().is_none() {
        return Ok(());
    }
    let now = max_trx_id(p.bytes())?;
    let base = if now == 0 && n_recs(p.bytes())? > 0 {
        exact_max_trx_id(p.bytes(), layout)?
    } else {
        now
    };
    let want = base.max(trx_id).max(1);
    if want != now {
        store_max_trx_id(p, want)?;
    }
    Ok(())
}

/// After records moved from a page whose bound was `src_max` into `dst` (whose bound before
/// the move was `dst_max`, with `dst_had_records` records): `dst`'s bound, kept true. Both
/// known (or `dst` empty before): the larger of the two, as InnoDB carries the field; either
/// unknown: computed from `dst`'s records. A no-op for layouts without `DB_TRX_ID`.
pub fn carry_trx_id<P: PageMut + ?Sized>(
    dst: &mut P,
    layout: &RecordLayout,
    src_max: u64,
    dst_max: u64,
    dst_had_records: bool,
) -> Result<(), NodeError> {
    if layout.trx_id_field().is_none() {
        return Ok(());
    }
    let want = if src_max != 0 && (dst_max != 0 || !dst_had_records) {
        src_max.max(dst_max)
    } else if next_is_supremum(dst.bytes())? {
        0 // no records: nothing to bound, and the next insert sets it
    } else {
        exact_max_trx_id(dst.bytes(), layout)?
    };
    if want != max_trx_id(dst.bytes())? {
        store_max_trx_id(dst, want)?;
    }
    Ok(())
}

/// True if the page has no user records (the infimum points at the supremum).
fn next_is_supremum(page: &[u8]) -> Result<bool, NodeError> {
    Ok(super::next_of(page, INFIMUM)? == SUPREMUM)
}
