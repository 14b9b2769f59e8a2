//! [`check`]: validates every invariant of an INDEX page, for tests, `minnow verify` and
//! defensive reads. It never panics, whatever the bytes.

use std::cmp::Ordering;

use minnow_page::bytes;

use super::{
    DIR_SLOT_MAX_N_OWNED, DIR_SLOT_MIN_N_OWNED, Hdr, INF_SUP, INFIMUM, NodeError, SUPREMUM,
    SUPREMUM_END, page_len, rec_header, slot,
};
use crate::record::{INFO_DELETED, INFO_MIN_REC, RecStatus, RecordLayout};

/// A violated page invariant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    /// The page could not even be read (bad size, record that does not decode).
    #[error(transparent)]
    Node(#[from] NodeError),
    /// An invariant does not hold.
    #[error("INDEX page invariant violated at offset {at}: {what}")]
    Invariant {
        /// Offset of the offending structure.
        at: usize,
        /// The invariant.
        what: String,
    },
}

fn bad(at: usize, what: impl Into<String>) -> CheckError {
    CheckError::Invariant {
        at,
        what: what.into(),
    }
}

fn ensure(cond: bool, at: usize, what: &str) -> Result<(), CheckError> {
    if cond { Ok(()) } else { Err(bad(at, what)) }
}

/// Validates the page: header fields, infimum and supremum, the record list (in strictly
/// increasing key order, from the infimum to the supremum, each record inside the heap and of
/// the page level's kind), heap numbers (unique, below `N_HEAP`, live plus free = `N_HEAP - 2`),
/// directory slots (in list order, owners with the right `n_owned`, groups of 4 to 8 except
/// the first of exactly 1 and the last of 1 to 8), `N_RECS`, the free list, `GARBAGE` (heap
/// bytes = live bytes + garbage), records not overlapping, `LAST_INSERT` and `DIRECTION`,
/// and no delete-marked record on a page flagged [`super::NO_DELETE_MARKS`].
pub fn check(page: &[u8], layout: &RecordLayout) -> Result<(), CheckError> {
    let n = page_len(page)?;
    let h = Hdr::read(page)?;
    let raw_n_heap = bytes::read_u16(page, super::PAGE_HEADER + 4).map_err(NodeError::from)?;
    ensure(raw_n_heap & 0x8000 != 0, 42, "N_HEAP lacks the COMPACT bit")?;
    let level = super::level(page)?;
    let want = if level == 0 {
        RecStatus::Ordinary
    } else {
        RecStatus::NodePtr
    };
    ensure(
        layout.status() == want,
        64,
        "layout does not match the page level",
    )?;
    let n_slots = usize::from(h.n_slots);
    let heap_top = usize::from(h.heap_top);
    ensure(n_slots >= 2, 38, "fewer than two directory slots")?;
    ensure(
        heap_top >= SUPREMUM_END,
        40,
        "HEAP_TOP below the supremum's end",
    )?;
    ensure(
        heap_top <= h.dir_start(n),
        40,
        "heap overlaps the page directory",
    )?;
    ensure(
        n_slots * 2 + SUPREMUM_END + 8 <= n,
        38,
        "too many directory slots",
    )?;
    ensure(
        h.n_heap >= 2 && h.n_heap < 0x2000,
        42,
        "N_HEAP out of range",
    )?;
    ensure((1..=5).contains(&h.direction), 50, "DIRECTION is not 1..=5")?;

    // Infimum and supremum: fixed bytes except the next and n_owned fields.
    let fixed = bytes::slice(page, INFIMUM - 5, INF_SUP.len()).map_err(NodeError::from)?;
    for (i, (a, b)) in fixed.iter().zip(INF_SUP.iter()).enumerate() {
        let at = INFIMUM - 5 + i;
        let skip = matches!(i, 3 | 4 | 13); // infimum next, supremum n_owned
        ensure(
            skip || a == b,
            at,
            "infimum/supremum bytes differ from COMPACT's",
        )?;
    }
    ensure(
        slot(page, 0)? == INFIMUM,
        n - 10,
        "slot 0 is not the infimum",
    )?;
    ensure(
        slot(page, n_slots - 1)? == SUPREMUM,
        n - 8 - 2 * n_slots,
        "the last slot is not the supremum",
    )?;

    // Walk the list.
    let no_marks = super::no_delete_marks(page)?;
    let mut heap_seen = vec![false; usize::from(h.n_heap)];
    let mut extents: Vec<(usize, usize)> = Vec::new();
    let mut live_bytes = 0usize;
    let mut n_user = 0usize;
    let mut slot_i = 1usize;
    let mut in_group = 0usize;
    let mut prev_user: Option<usize> = None;
    let mut last_insert_seen = h.last_insert == 0;
    let mut rec = INFIMUM;
    let mut steps = 0usize;
    loop {
        let next = rec_header(page, rec)?
            .next(rec)
            .ok_or_else(|| bad(rec, "the record list ends before the supremum"))?;
        steps += 1;
        ensure(steps <= usize::from(h.n_heap), rec, "the record list loops")?;
        if next == SUPREMUM {
            let sh = rec_header(page, SUPREMUM)?;
            ensure(
                slot_i == n_slots - 1,
                SUPREMUM,
                "slots left after the supremum",
            )?;
            ensure(
                usize::from(sh.n_owned) == in_group + 1,
                SUPREMUM,
                "the supremum's n_owned is not its group size",
            )?;
            break;
        }
        ensure(
            next >= SUPREMUM_END && next < heap_top,
            rec,
            "next record outside the heap",
        )?;
        rec = next;
        let rh = rec_header(page, rec)?;
        ensure(
            rh.status == want,
            rec,
            "record status does not match the level",
        )?;
        let (x, d) = layout.size_of(page, rec).map_err(NodeError::from)?;
        ensure(
            rec >= SUPREMUM_END + x && rec + d <= heap_top,
            rec,
            "record extends outside the heap",
        )?;
        extents.push((rec - x, rec + d));
        live_bytes += x + d;
        n_user += 1;
        last_insert_seen |= usize::from(h.last_insert) == rec;
        let hn = usize::from(rh.heap_no);
        ensure(hn >= 2, rec, "user record with heap number below 2")?;
        match heap_seen.get_mut(hn) {
            Some(seen) if !*seen => *seen = true,
            _ => return Err(bad(rec, "heap number out of range or repeated")),
        }
        ensure(
            !no_marks || rh.info_bits & INFO_DELETED == 0,
            rec,
            "a delete-marked record on a page flagged NO_DELETE_MARKS",
        )?;
        if rh.info_bits & INFO_MIN_REC != 0 {
            ensure(
                level > 0 && prev_user.is_none(),
                rec,
                "MIN_REC set on a record that is not the first node pointer",
            )?;
        }
        if let Some(p) = prev_user {
            let key = layout.key_of(page, p).map_err(NodeError::from)?;
            let (ord, _) = layout
                .compare(&key, page, rec, 0)
                .map_err(NodeError::from)?;
            let p_min = rec_header(page, p)?.info_bits & INFO_MIN_REC != 0;
            ensure(
                p_min || ord == Ordering::Less,
                rec,
                "records are not in strictly increasing key order",
            )?;
        }
        prev_user = Some(rec);
        in_group += 1;
        if rh.n_owned > 0 {
            ensure(
                slot_i < n_slots - 1,
                rec,
                "more owners than directory slots",
            )?;
            ensure(
                slot(page, slot_i)? == rec,
                rec,
                "owner does not match its slot",
            )?;
            ensure(
                usize::from(rh.n_owned) == in_group,
                rec,
                "n_owned is not the group size",
            )?;
            ensure(
                (usize::from(DIR_SLOT_MIN_N_OWNED)..=usize::from(DIR_SLOT_MAX_N_OWNED))
                    .contains(&in_group),
                rec,
                "a middle group does not own 4 to 8 records",
            )?;
            slot_i += 1;
            in_group = 0;
        } else {
            ensure(
                in_group < usize::from(DIR_SLOT_MAX_N_OWNED),
                rec,
                "group without an owner within 8 records",
            )?;
        }
    }
    ensure(
        rec_header(page, INFIMUM)?.n_owned == 1,
        INFIMUM,
        "the infimum must own exactly itself",
    )?;
    ensure(
        usize::from(h.n_recs) == n_user,
        54,
        "N_RECS does not match the list",
    )?;
    ensure(last_insert_seen, 48, "LAST_INSERT is not a live record")?;

    // The free list.
    let mut free_bytes = 0usize;
    let mut n_free = 0usize;
    let mut f = usize::from(h.free);
    while f != 0 {
        ensure(
            f >= SUPREMUM_END && f < heap_top,
            f,
            "free list entry outside the heap",
        )?;
        n_free += 1;
        ensure(
            n_user + n_free + 2 <= usize::from(h.n_heap),
            f,
            "free list too long",
        )?;
        let fh = rec_header(page, f)?;
        let (x, d) = layout.size_of(page, f).map_err(NodeError::from)?;
        ensure(
            f - x >= SUPREMUM_END && f + d <= heap_top,
            f,
            "free record extends outside the heap",
        )?;
        extents.push((f - x, f + d));
        free_bytes += x + d;
        match heap_seen.get_mut(usize::from(fh.heap_no)) {
            Some(seen) if !*seen && fh.heap_no >= 2 => *seen = true,
            _ => return Err(bad(f, "free record heap number out of range or repeated")),
        }
        f = fh.next(f).unwrap_or(0);
    }
    ensure(
        n_user + n_free + 2 == usize::from(h.n_heap),
        42,
        "N_HEAP is not live + free + 2",
    )?;
    ensure(
        free_bytes <= usize::from(h.garbage),
        46,
        "GARBAGE is smaller than the free list",
    )?;
    ensure(
        live_bytes + usize::from(h.garbage) + SUPREMUM_END == heap_top,
        46,
        "heap bytes are not live bytes + GARBAGE",
    )?;
    extents.sort_unstable();
    for w in extents.windows(2) {
        if let [(_, end), (start, _)] = w {
            ensure(end <= start, *start, "records overlap")?;
        }
    }
    Ok(())
}
