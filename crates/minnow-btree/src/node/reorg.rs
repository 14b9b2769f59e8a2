//! Whole-page operations: free-space accounting, reorganizing, moving records between pages
//! for splits and merges, and choosing a split point.

use minnow_page::bytes;

use super::{
    Cursor, DIR_LEFT, DIR_NONE, DIR_RIGHT, DIR_SLOT_MAX_N_OWNED, DIR_SLOT_MIN_N_OWNED, Hdr,
    INFIMUM, NodeError, SUPREMUM, SUPREMUM_END, modify::check_kind, next_of, page_len, rec_header,
    records,
};
use crate::PageMut;
use crate::record::{
    HEADER_SIZE, INFO_DELETED, INFO_MIN_REC, RecordBuf, RecordHeader, RecordLayout, SearchKey,
    next_rel,
};

/// Bytes held by live records (delete-marked ones included), excluding infimum and supremum.
pub fn used_bytes(page: &[u8]) -> Result<usize, NodeError> {
    let h = Hdr::read(page)?;
    Ok(usize::from(h.heap_top)
        .saturating_sub(SUPREMUM_END)
        .saturating_sub(usize::from(h.garbage)))
}

/// Bytes free for records: the gap between the heap and the directory plus the garbage of
/// deleted records (usable in full only after [`reorganize`]).
pub fn free_space(page: &[u8]) -> Result<usize, NodeError> {
    let n = page_len(page)?;
    let h = Hdr::read(page)?;
    Ok(h.dir_start(n).saturating_sub(usize::from(h.heap_top)) + usize::from(h.garbage))
}

/// The share of the page's record space used by live records, 0.0 to 1.0. The record space is
/// everything but the headers, infimum, supremum, trailer and the two fixed directory slots.
pub fn fill_factor(page: &[u8]) -> Result<f64, NodeError> {
    let n = page_len(page)?;
    let capacity = n - SUPREMUM_END - 8 - 4;
    Ok(used_bytes(page)? as f64 / capacity as f64)
}

/// The largest record the node layer accepts on a page of `page_len` bytes: half of an empty
/// page's record space, so that any two records fit on one page (a split always succeeds).
pub fn max_record_len(page_len: usize) -> usize {
    (page_len.saturating_sub(SUPREMUM_END + 8 + 2 * 4) / 2).saturating_sub(2)
}

/// True if a record of `len` bytes can be inserted now, without reorganizing: in the space of
/// the deleted record at the head of the free list, or at the heap top. Two bytes are kept for
/// a directory slot the insert may add.
pub fn fits(page: &[u8], layout: &RecordLayout, len: usize) -> Result<bool, NodeError> {
    let n = page_len(page)?;
    let h = Hdr::read(page)?;
    let gap = h.dir_start(n).saturating_sub(usize::from(h.heap_top));
    if gap >= len + 2 && h.n_heap < 0x1FFF {
        return Ok(true);
    }
    if h.free != 0 && gap >= 2 {
        let (x, d) = layout.size_of(page, usize::from(h.free))?;
        return Ok(x + d >= len);
    }
    Ok(false)
}

/// True if a record of `len` bytes would fit after [`reorganize`].
pub fn fits_after_reorganize(page: &[u8], len: usize) -> Result<bool, NodeError> {
    let n = page_len(page)?;
    let h = Hdr::read(page)?;
    let slots = 2 + usize::from(h.n_recs) / usize::from(DIR_SLOT_MAX_N_OWNED);
    let need = SUPREMUM_END + used_bytes(page)? + len + 2 + 2 * slots + 8;
    Ok(need <= n && usize::from(h.n_recs) + 2 < 0x1FFF)
}

/// One record copied out of a page: its bytes and origin within them. Its key is read only
/// where records of two pages are merged ([`move_into`]): a split or a reorganization keeps
/// the page's order.
struct Owned {
    buf: RecordBuf,
    min_rec: bool,
}

fn copy_out(page: &[u8], layout: &RecordLayout, origin: usize) -> Result<Owned, NodeError> {
    let (x, d) = layout.size_of(page, origin)?;
    let b = bytes::slice(page, origin - x, x + d)?.to_vec();
    let h = rec_header(page, origin)?;
    Ok(Owned {
        buf: RecordBuf::from_parts(b, x),
        min_rec: h.info_bits & INFO_MIN_REC != 0,
    })
}

fn collect(page: &[u8], layout: &RecordLayout) -> Result<Vec<Owned>, NodeError> {
    records(page)
        .map(|c| copy_out(page, layout, c?.origin()))
        .collect()
}

/// Rewrites the page with `recs` (in key order) compactly from the heap start, resetting the
/// free list, garbage and insert direction, and keeping at least `reserve` bytes free. Groups
/// are of 4 records (room for inserts before a group splits) or, when the page is too full for
/// that many slots, up to 8: a page that was valid always fits again. Checks the room first,
/// so a failure leaves the page untouched.
fn rebuild<P: PageMut + ?Sized>(
    p: &mut P,
    recs: &[Owned],
    reserve: usize,
) -> Result<(), NodeError> {
    let n = page_len(p.bytes())?;
    let old = Hdr::read(p.bytes())?;
    let total: usize = recs.iter().map(|r| r.buf.len()).sum();
    let heap_top = SUPREMUM_END + total;
    let room = |g: usize| n.saturating_sub(8 + 2 * (2 + recs.len() / g));
    let group = (usize::from(DIR_SLOT_MIN_N_OWNED)..=usize::from(DIR_SLOT_MAX_N_OWNED))
        .find(|&g| heap_top + reserve <= room(g));
    let Some(group) = group.filter(|_| recs.len() + 2 < 0x1FFF) else {
        return Err(NodeError::PageFull {
            needed: heap_top + reserve + 2 * (2 + recs.len() / 8) + 8,
            available: n,
        });
    };
    let n_slots = 2 + recs.len() / group;
    let dir_start = n - 8 - 2 * n_slots;
    // Lay out origins first: each record's next pointer needs its successor's origin.
    let mut origins = Vec::with_capacity(recs.len());
    let mut pos = SUPREMUM_END;
    for r in recs {
        origins.push(pos + r.buf.extra());
        pos += r.buf.len();
    }
    let mut image = bytes::slice(p.bytes(), INFIMUM - 5, SUPREMUM_END - (INFIMUM - 5))?.to_vec();
    let mut slots = vec![INFIMUM];
    for (i, r) in recs.iter().enumerate() {
        let origin = origins.get(i).copied().unwrap_or(SUPREMUM);
        let next = origins.get(i + 1).copied().unwrap_or(SUPREMUM);
        let owner = (i + 1) % group == 0;
        if owner {
            slots.push(origin);
        }
        let old_h = r.buf.header();
        let h = RecordHeader {
            info_bits: old_h.info_bits,
            n_owned: if owner { group as u8 } else { 0 },
            heap_no: (i + 2) as u16,
            status: old_h.status,
            next_rel: next_rel(origin, next),
        };
        // The record's bytes, then its new header over the old one (the 5 bytes before its
        // origin), in the image itself.
        let at = image.len() + r.buf.extra();
        image.extend_from_slice(r.buf.as_bytes());
        if let Some(dst) = at
            .checked_sub(HEADER_SIZE)
            .and_then(|start| image.get_mut(start..at))
        {
            dst.copy_from_slice(&h.to_bytes());
        }
    }
    slots.push(SUPREMUM);
    let first = origins.first().copied().unwrap_or(SUPREMUM);
    let inf_next = next_rel(INFIMUM, first).to_be_bytes();
    let sup_owned = (recs.len() % group + 1) as u8;
    // image[0..] starts at byte 94: infimum header at 94..99, supremum header at 107..112.
    if let Some(dst) = image.get_mut(3..5) {
        dst.copy_from_slice(&inf_next);
    }
    if let Some(b) = image.get_mut(13) {
        *b = (*b & 0xF0) | sup_owned;
    }
    p.write_changed(INFIMUM - 5, &image)?;
    let old_top = usize::from(old.heap_top);
    if old_top > heap_top {
        p.memset(heap_top, old_top.min(dir_start) - heap_top, 0)?;
    }
    // Directory: slot 0 at the highest address.
    let mut dir = vec![0u8; 2 * n_slots];
    for (k, s) in slots.iter().enumerate() {
        let at = 2 * (n_slots - 1 - k);
        if let Some(dst) = dir.get_mut(at..at + 2) {
            dst.copy_from_slice(&(*s as u16).to_be_bytes());
        }
    }
    p.write_changed(dir_start, &dir)?;
    let old_dir_start = old.dir_start(n);
    if old_dir_start < dir_start {
        p.memset(
            old_dir_start.max(heap_top),
            dir_start - old_dir_start.max(heap_top),
            0,
        )?;
    }
    let h = Hdr {
        n_slots: n_slots as u16,
        heap_top: heap_top as u16,
        n_heap: (recs.len() + 2) as u16,
        free: 0,
        garbage: 0,
        last_insert: 0,
        direction: DIR_NONE,
        n_direction: 0,
        n_recs: recs.len() as u16,
    };
    h.store(p)?;
    let marked = recs
        .iter()
        .any(|r| r.buf.header().info_bits & INFO_DELETED != 0);
    super::set_no_delete_marks(p, !marked)
}

/// Rewrites the page compactly in key order: garbage becomes free space at the heap top, heap
/// numbers are renumbered in key order, the directory is rebuilt with groups of four, and
/// `PAGE_LAST_INSERT` is reset. Logged as a few large writes.
pub fn reorganize<P: PageMut + ?Sized>(p: &mut P, layout: &RecordLayout) -> Result<(), NodeError> {
    reorganize_reserving(p, layout, 0)
}

/// [`reorganize`], failing (without a change) unless `reserve` bytes are free afterwards.
pub(crate) fn reorganize_reserving<P: PageMut + ?Sized>(
    p: &mut P,
    layout: &RecordLayout,
    reserve: usize,
) -> Result<(), NodeError> {
    check_kind(p.bytes(), layout)?;
    let recs = collect(p.bytes(), layout)?;
    rebuild(p, &recs, reserve)
}

/// Splits the records of `src` into those before `at` and those from `at` on (in key order).
fn split_list(
    page: &[u8],
    layout: &RecordLayout,
    at: Cursor,
) -> Result<(Vec<Owned>, Vec<Owned>), NodeError> {
    let mut before = Vec::new();
    let mut after = Vec::new();
    let mut seen = at.is_infimum();
    for c in records(page) {
        let c = c?;
        seen |= c == at;
        let r = copy_out(page, layout, c.origin())?;
        if seen { after.push(r) } else { before.push(r) }
    }
    if !seen && !at.is_supremum() {
        return Err(NodeError::BadCursor {
            at: at.origin(),
            what: "not a record of the source page",
        });
    }
    Ok((before, after))
}

/// Merges `moved` into `dst`'s records by key and rewrites both pages.
fn move_into<P: PageMut + ?Sized, Q: PageMut + ?Sized>(
    src: &mut P,
    dst: &mut Q,
    layout: &RecordLayout,
    keep: Vec<Owned>,
    moved: Vec<Owned>,
) -> Result<(), NodeError> {
    check_kind(dst.bytes(), layout)?;
    let present = collect(dst.bytes(), layout)?;
    // Into an empty page (a split, a root raise) the moved records keep their order; only a
    // merge with records already there sorts by key.
    let all = if present.is_empty() {
        moved
    } else {
        merged(layout, present, moved)?
    };
    rebuild(dst, &all, 0)?;
    rebuild(src, &keep, 0)
}

/// `a` and `b` in one list in key order, refusing two records with the same key.
fn merged(layout: &RecordLayout, a: Vec<Owned>, b: Vec<Owned>) -> Result<Vec<Owned>, NodeError> {
    let mut all = a
        .into_iter()
        .chain(b)
        .map(|r| Ok((layout.key_of(r.buf.as_bytes(), r.buf.extra())?, r)))
        .collect::<Result<Vec<(SearchKey, Owned)>, NodeError>>()?;
    all.sort_by(|(ka, a), (kb, b)| (!a.min_rec, ka).cmp(&(!b.min_rec, kb)));
    // A MIN_REC node pointer is below every key whatever key it stores, and it may store the
    // key of the record after it: the leftmost child it points to kept the key at a root raise
    // and later split off the records from that key on, whose pointer follows it here.
    if let Some(w) = all
        .windows(2)
        .find(|w| matches!(w, [(ka, a), (kb, _)] if !a.min_rec && ka == kb))
    {
        let at = w.first().map_or(0, |(_, r)| r.buf.extra());
        return Err(NodeError::Duplicate { at });
    }
    Ok(all.into_iter().map(|(_, r)| r).collect())
}

/// Moves the records of `src` from `from` (inclusive) to the end into `dst`, merged with
/// `dst`'s records in key order; both pages come out reorganized. For a split `dst` is the new
/// right page; for a merge it is the left neighbour. `from` at the infimum moves everything,
/// at the supremum nothing. Fails without changing either page if `dst` has no room.
pub fn move_records_to<P: PageMut + ?Sized, Q: PageMut + ?Sized>(
    src: &mut P,
    dst: &mut Q,
    layout: &RecordLayout,
    from: Cursor,
) -> Result<(), NodeError> {
    check_kind(src.bytes(), layout)?;
    let (keep, moved) = split_list(src.bytes(), layout, from)?;
    move_into(src, dst, layout, keep, moved)
}

/// Moves the records of `src` before `upto` (exclusive) into `dst`: the mirror image of
/// [`move_records_to`], for descending splits (new left page) and merges into the right page.
pub fn move_records_before_to<P: PageMut + ?Sized, Q: PageMut + ?Sized>(
    src: &mut P,
    dst: &mut Q,
    layout: &RecordLayout,
    upto: Cursor,
) -> Result<(), NodeError> {
    check_kind(src.bytes(), layout)?;
    let (moved, keep) = split_list(src.bytes(), layout, upto)?;
    move_into(src, dst, layout, keep, moved)
}

/// Where the first record of the right page is, for a page split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitAt {
    /// This existing record and everything after it go to the right page; the new record goes
    /// to the side its key belongs to.
    Record(Cursor),
    /// The record being inserted is the first of the right page, followed by every record
    /// after the insert position.
    NewRecord,
}

/// Why the split point was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitKind {
    /// Inserts run ascending: split at the insert point, the left page stays full.
    Ascending,
    /// Inserts run descending: split at the insert point, the right page stays full.
    Descending,
    /// Random inserts: split where half the bytes are on each side.
    Middle,
}

/// A split decision from [`split_point`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitPoint {
    /// The first record of the right page.
    pub at: SplitAt,
    /// How it was chosen.
    pub kind: SplitKind,
}

/// Chooses where to split the page when a record of `new_len` bytes, to be inserted after
/// `after`, does not fit. Follows InnoDB's `btr_page_get_split_rec_to_right/_to_left`: if the
/// insert lands right after the previous insert (`PAGE_LAST_INSERT`), inserts are ascending and
/// the page splits at the insert point, so the left page stays full; right before it, they are
/// descending and the right page stays full; otherwise the split is in the middle by bytes.
///
/// A descending insert right after the page's first record (on the leftmost node page of a
/// level that is the MIN_REC pointer, after which every smaller separator lands) makes the
/// new record the first of the right page, leaving the first record alone on the left: the
/// next descending inserts land there. InnoDB keeps the new record on the left instead, which
/// leaves the right page one record short; with records so long that a page holds only two,
/// that right page holds a single pointer forever, and every such split would add a level.
pub fn split_point(
    page: &[u8],
    layout: &RecordLayout,
    after: Cursor,
    new_len: usize,
) -> Result<SplitPoint, NodeError> {
    let h = Hdr::read(page)?;
    if after.is_supremum() {
        return Err(NodeError::BadCursor {
            at: SUPREMUM,
            what: "insert position must be before the supremum",
        });
    }
    let last = usize::from(h.last_insert);
    let next = next_of(page, after.origin())?;
    if last != 0 && last == after.origin() && h.direction != DIR_LEFT {
        // Ascending: keep one record after the new one on the left only if two or more follow.
        let at = if next == SUPREMUM || next_of(page, next)? == SUPREMUM {
            SplitAt::NewRecord
        } else {
            SplitAt::Record(Cursor(next_of(page, next)?))
        };
        return Ok(SplitPoint {
            at,
            kind: SplitKind::Ascending,
        });
    }
    if last != 0 && last == next && h.direction != DIR_RIGHT && next != SUPREMUM {
        let first = next_of(page, INFIMUM)?;
        let at = if after.is_infimum() {
            SplitAt::Record(Cursor(next))
        } else if first == after.origin() {
            SplitAt::NewRecord
        } else {
            SplitAt::Record(Cursor(after.origin()))
        };
        return Ok(SplitPoint {
            at,
            kind: SplitKind::Descending,
        });
    }
    // Middle: sizes in key order with the new record at its place.
    let mut items: Vec<(Option<Cursor>, usize)> = Vec::new();
    if after.is_infimum() {
        items.push((None, new_len));
    }
    for c in records(page) {
        let c = c?;
        let (x, d) = layout.size_of(page, c.origin())?;
        items.push((Some(c), x + d));
        if c == after {
            items.push((None, new_len));
        }
    }
    let total: usize = items.iter().map(|(_, l)| l).sum();
    // The first item at which the left side holds half the bytes goes right; never the first
    // item (the left page must keep a record), and by default the last one.
    let mut idx = items.len().saturating_sub(1);
    let mut acc = 0;
    for (i, (_, l)) in items.iter().enumerate() {
        if i > 0 && acc >= total / 2 {
            idx = i;
            break;
        }
        acc += l;
    }
    let at = match items.get(idx) {
        Some((Some(c), _)) => SplitAt::Record(*c),
        _ => SplitAt::NewRecord,
    };
    Ok(SplitPoint {
        at,
        kind: SplitKind::Middle,
    })
}
