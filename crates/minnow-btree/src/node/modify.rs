//! Inserting and deleting single records, and keeping the directory balanced.

use super::{
    Cursor, DIR_LEFT, DIR_NONE, DIR_RIGHT, DIR_SLOT_MAX_N_OWNED, DIR_SLOT_MIN_N_OWNED, Hdr,
    NodeError, fits, fits_after_reorganize, level, max_record_len, next_of, page_len, rec_header,
    reorg::reorganize_reserving, search, set_n_owned, slot, slot_addr,
};
use minnow_page::bytes;

use crate::PageMut;
use crate::record::{INFO_DELETED, RecStatus, RecordBuf, RecordHeader, RecordLayout, next_rel};

/// Checks that records of `layout` belong on this page's level.
pub(crate) fn check_kind(page: &[u8], layout: &RecordLayout) -> Result<(), NodeError> {
    let level = level(page)?;
    let want = if level == 0 {
        RecStatus::Ordinary
    } else {
        RecStatus::NodePtr
    };
    if layout.status() != want {
        return Err(NodeError::WrongKind {
            status: layout.status(),
            level,
        });
    }
    Ok(())
}

/// Follows next pointers from `from` (inclusive) to the first record with `n_owned > 0`.
fn find_owner(page: &[u8], from: usize) -> Result<usize, NodeError> {
    let mut rec = from;
    for _ in 0..=usize::from(DIR_SLOT_MAX_N_OWNED) * 2 {
        if rec_header(page, rec)?.n_owned > 0 {
            return Ok(rec);
        }
        rec = next_of(page, rec)?;
    }
    Err(NodeError::Corrupt {
        at: from,
        what: "no owner within a directory group's reach",
    })
}

/// The index of the directory slot pointing at `owner`.
fn find_slot(page: &[u8], owner: usize) -> Result<usize, NodeError> {
    let n = usize::from(Hdr::read(page)?.n_slots);
    for i in 0..n {
        if slot(page, i)? == owner {
            return Ok(i);
        }
    }
    Err(NodeError::Corrupt {
        at: owner,
        what: "an owner record has no directory slot",
    })
}

/// Rewrites directory slots `from..` with `values` (slot `from` first) in one write.
fn write_slots<P: PageMut + ?Sized>(
    p: &mut P,
    from: usize,
    values: &[usize],
) -> Result<(), NodeError> {
    let n = page_len(p.bytes())?;
    let Some(last) = values.len().checked_sub(1) else {
        return Ok(());
    };
    let mut buf = vec![0u8; 2 * values.len()];
    // The highest address holds slot `from`; lower addresses hold later slots.
    for (k, v) in values.iter().enumerate() {
        let at = 2 * (last - k);
        if let Some(dst) = buf.get_mut(at..at + 2) {
            dst.copy_from_slice(&(*v as u16).to_be_bytes());
        }
    }
    p.write(slot_addr(n, from + last), &buf)?;
    Ok(())
}

/// Inserts the encoded record `rec` right after `after` (the infimum or a user record, as
/// returned by [`search`]). Space comes from the head of the free list when the deleted record
/// there is large enough, else from the heap top. Returns the new record's cursor.
///
/// Key order is the caller's responsibility here; [`insert`] searches first.
pub fn insert_at<P: PageMut + ?Sized>(
    p: &mut P,
    layout: &RecordLayout,
    after: Cursor,
    rec: &RecordBuf,
) -> Result<Cursor, NodeError> {
    let page = p.bytes();
    let n = page_len(page)?;
    check_kind(page, layout)?;
    let mut h = Hdr::read(page)?;
    if rec.header().status != layout.status() {
        return Err(NodeError::WrongKind {
            status: rec.header().status,
            level: level(page)?,
        });
    }
    let after_hdr = rec_header(page, after.origin())?;
    if after.is_supremum()
        || !matches!(after_hdr.status, RecStatus::Infimum) && after_hdr.status != layout.status()
        || after.origin() >= usize::from(h.heap_top)
    {
        return Err(NodeError::BadCursor {
            at: after.origin(),
            what: "insert position must be the infimum or a user record",
        });
    }
    let next = next_of(page, after.origin())?;
    let len = rec.len();
    if len > max_record_len(n) {
        return Err(NodeError::RecordTooBig {
            len,
            max: max_record_len(n),
        });
    }
    let gap = h.dir_start(n).saturating_sub(usize::from(h.heap_top));

    // 1. Allocate: reuse the head of the free list, or take space at the heap top.
    let mut reused = None;
    if h.free != 0 {
        let f = usize::from(h.free);
        let (fx, fd) = layout.size_of(page, f)?;
        if fx + fd >= len && gap >= 2 {
            let fh = rec_header(page, f)?;
            let new_free = fh.next(f).unwrap_or(0);
            reused = Some((f - fx, fh.heap_no, new_free));
        }
    }
    let (start, heap_no) = match reused {
        Some((start, heap_no, new_free)) => {
            h.free = new_free as u16;
            h.garbage = h.garbage.saturating_sub(len as u16);
            (start, heap_no)
        }
        None => {
            if gap < len + 2 || h.n_heap >= 0x1FFF {
                return Err(NodeError::PageFull {
                    needed: len + 2,
                    available: gap,
                });
            }
            let start = usize::from(h.heap_top);
            h.heap_top += len as u16;
            h.n_heap += 1;
            (start, h.n_heap - 1)
        }
    };
    let origin = start + rec.extra();

    // 2. Copy the record in, its header pointing at the successor.
    let mut buf = rec.clone();
    buf.set_header(RecordHeader {
        info_bits: rec.header().info_bits,
        n_owned: 0,
        heap_no,
        status: layout.status(),
        next_rel: next_rel(origin, next),
    });
    p.write(start, buf.as_bytes())?;
    if rec.header().info_bits & INFO_DELETED != 0 {
        super::set_no_delete_marks(p, false)?;
    }

    // 3. Link the predecessor to it.
    p.write(
        after.origin() - 2,
        &next_rel(after.origin(), origin).to_be_bytes(),
    )?;

    // 4. The owner of the group now owns one more record; split the group at 9.
    let owner = find_owner(p.bytes(), next)?;
    let owned = rec_header(p.bytes(), owner)?.n_owned + 1;
    if owned > DIR_SLOT_MAX_N_OWNED {
        split_slot(p, owner, owned, &mut h)?;
    } else {
        set_n_owned(p, owner, owned)?;
    }

    // 5. Header: counts and the insert direction (InnoDB's page_cur_insert_rec_low).
    let last = usize::from(h.last_insert);
    if last == 0 {
        (h.direction, h.n_direction) = (DIR_NONE, 0);
    } else if last == after.origin() && h.direction != DIR_LEFT {
        (h.direction, h.n_direction) = (DIR_RIGHT, h.n_direction.saturating_add(1));
    } else if last == next && h.direction != DIR_RIGHT {
        (h.direction, h.n_direction) = (DIR_LEFT, h.n_direction.saturating_add(1));
    } else {
        (h.direction, h.n_direction) = (DIR_NONE, 0);
    }
    h.last_insert = origin as u16;
    h.n_recs = h.n_recs.wrapping_add(1);
    h.store(p)?;
    Ok(Cursor(origin))
}

/// Splits the group owned by `owner`, which would own `owned` (9) records: the first half
/// gets a new slot owned by its last record.
fn split_slot<P: PageMut + ?Sized>(
    p: &mut P,
    owner: usize,
    owned: u8,
    h: &mut Hdr,
) -> Result<(), NodeError> {
    let page = p.bytes();
    let s = find_slot(page, owner)?;
    let prev_owner = slot(
        page,
        s.checked_sub(1).ok_or(NodeError::Corrupt {
            at: owner,
            what: "the infimum's group cannot grow",
        })?,
    )?;
    let first_half = owned / 2;
    let mut mid = prev_owner;
    for _ in 0..first_half {
        mid = next_of(page, mid)?;
    }
    let n_slots = usize::from(h.n_slots);
    let mut moved = vec![mid];
    for i in s..n_slots {
        moved.push(slot(page, i)?);
    }
    write_slots(p, s, &moved)?;
    set_n_owned(p, mid, first_half)?;
    set_n_owned(p, owner, owned - first_half)?;
    h.n_slots = h.n_slots.wrapping_add(1);
    Ok(())
}

/// Removes the record at `cursor` from the page: unlinks it, pushes it on the free list and
/// rebalances the directory. Returns the cursor of the record before it.
pub fn delete<P: PageMut + ?Sized>(
    p: &mut P,
    layout: &RecordLayout,
    cursor: Cursor,
) -> Result<Cursor, NodeError> {
    let page = p.bytes();
    let rec = cursor.origin();
    let mut h = Hdr::read(page)?;
    let rh = rec_header(page, rec)?;
    if !cursor.is_user() || rh.status != layout.status() {
        return Err(NodeError::BadCursor {
            at: rec,
            what: "only user records can be deleted",
        });
    }
    let (rx, rd) = layout.size_of(page, rec)?;
    let owner = find_owner(page, rec)?;
    let s = find_slot(page, owner)?;
    let group_start = slot(
        page,
        s.checked_sub(1).ok_or(NodeError::Corrupt {
            at: rec,
            what: "user record in the infimum's group",
        })?,
    )?;
    let mut prev = group_start;
    for _ in 0..=usize::from(DIR_SLOT_MAX_N_OWNED) * 2 {
        let nx = next_of(page, prev)?;
        if nx == rec {
            break;
        }
        prev = nx;
    }
    if next_of(page, prev)? != rec {
        return Err(NodeError::BadCursor {
            at: rec,
            what: "record is not in the page's record list",
        });
    }
    let next = next_of(page, rec)?;
    let owned = rec_header(page, owner)?.n_owned - 1;

    // Unlink.
    p.write(prev - 2, &next_rel(prev, next).to_be_bytes())?;
    // Fix ownership: if the owner goes, its predecessor takes over the group.
    let new_owner = if owner == rec {
        if prev == group_start {
            return Err(NodeError::Corrupt {
                at: rec,
                what: "a directory group of one user record",
            });
        }
        write_slots(p, s, &[prev])?;
        prev
    } else {
        owner
    };
    set_n_owned(p, new_owner, owned)?;
    // Push on the free list.
    let free_next = if h.free == 0 {
        0
    } else {
        next_rel(rec, usize::from(h.free))
    };
    let mut fh = rh;
    fh.n_owned = 0;
    fh.next_rel = free_next;
    p.write_changed(rec - 5, &fh.to_bytes())?;
    h.free = rec as u16;
    h.garbage = h.garbage.saturating_add((rx + rd) as u16);
    h.n_recs = h.n_recs.saturating_sub(1);
    h.last_insert = 0;
    if owned < DIR_SLOT_MIN_N_OWNED && s + 1 < usize::from(h.n_slots) {
        balance_slot(p, s, &mut h)?;
    }
    h.store(p)?;
    if h.n_recs == 0 {
        // No record left, so none delete-marked (a removal never makes the flag false).
        super::set_no_delete_marks(p, true)?;
    }
    Ok(Cursor(prev))
}

/// Slot `s` owns fewer than 4 records: borrow one from the next group, or merge with it.
fn balance_slot<P: PageMut + ?Sized>(p: &mut P, s: usize, h: &mut Hdr) -> Result<(), NodeError> {
    let page = p.bytes();
    let owner = slot(page, s)?;
    let up_owner = slot(page, s + 1)?;
    let n = rec_header(page, owner)?.n_owned;
    let up_n = rec_header(page, up_owner)?.n_owned;
    if up_n > DIR_SLOT_MIN_N_OWNED {
        // Borrow: the first record of the upper group becomes this group's owner.
        let new_owner = next_of(page, owner)?;
        set_n_owned(p, owner, 0)?;
        set_n_owned(p, new_owner, n + 1)?;
        set_n_owned(p, up_owner, up_n - 1)?;
        write_slots(p, s, &[new_owner])?;
    } else {
        // Merge: the upper owner takes this group and slot `s` disappears.
        set_n_owned(p, owner, 0)?;
        set_n_owned(p, up_owner, up_n + n)?;
        let n_slots = usize::from(h.n_slots);
        let mut vals = Vec::new();
        for i in s + 1..n_slots {
            vals.push(slot(p.bytes(), i)?);
        }
        vals.push(0); // the vacated lowest slot is cleared
        write_slots(p, s, &vals)?;
        h.n_slots -= 1;
    }
    Ok(())
}

/// Sets or clears the delete mark of the record at `cursor` (one 1-byte write).
pub fn set_delete_mark<P: PageMut + ?Sized>(
    p: &mut P,
    cursor: Cursor,
    deleted: bool,
) -> Result<(), NodeError> {
    let info = info_byte_at(p.bytes(), cursor)?;
    super::set_bits(p, info, INFO_DELETED, deleted)?;
    if deleted {
        super::set_no_delete_marks(p, false)?;
    }
    Ok(())
}

/// Where the byte with the delete mark of the user record at `cursor` lies (refused for the
/// infimum and the supremum).
fn info_byte_at(page: &[u8], cursor: Cursor) -> Result<usize, NodeError> {
    let rh = rec_header(page, cursor.origin())?;
    if !cursor.is_user() || matches!(rh.status, RecStatus::Infimum | RecStatus::Supremum) {
        return Err(NodeError::BadCursor {
            at: cursor.origin(),
            what: "only user records can be delete-marked",
        });
    }
    Ok(cursor.origin() - 5)
}

/// The longest span, from a record's delete-mark byte to the end of its `DB_ROLL_PTR`, that
/// [`stamp_sys_at`] writes as one: a short key's record (the peer comparison's 24-byte keys
/// make 42 bytes) takes one WRITE record for its mark and system columns, the key bytes
/// between them written unchanged, instead of two records and two changes of the page; a
/// longer key's takes two writes, not more redo bytes.
const STAMP_SPAN_MAX: usize = 64;

/// Stamps the clustered-leaf record at `cursor` in place: its `DB_TRX_ID` and `DB_ROLL_PTR`
/// become `trx_id` (low 48 bits) and `roll_ptr` (low 56 bits), and `mark` sets (`Some(true)`)
/// or clears (`Some(false)`) its delete mark (`None` keeps it). What InnoDB's
/// `btr_cur_del_mark_set_clust_rec` writes for a delete: the record keeps its size and place,
/// so two small writes replace rewriting the record.
pub fn stamp_sys<P: PageMut + ?Sized>(
    p: &mut P,
    layout: &RecordLayout,
    cursor: Cursor,
    trx_id: u64,
    roll_ptr: u64,
    mark: Option<bool>,
) -> Result<(), NodeError> {
    if !cursor.is_user() {
        return Err(NodeError::BadCursor {
            at: cursor.origin(),
            what: "only user records can be stamped",
        });
    }
    let Some(at) = layout.sys_fields_at(p.bytes(), cursor.origin())? else {
        return Err(NodeError::BadCursor {
            at: cursor.origin(),
            what: "a record without system columns cannot be stamped",
        });
    };
    stamp_sys_at(p, cursor, at, trx_id, roll_ptr, mark)
}

/// [`stamp_sys`] of a record whose `DB_TRX_ID` starts at byte `at` of the page (what the
/// layout's `sys_fields_at` found for it, the page unchanged since).
pub(crate) fn stamp_sys_at<P: PageMut + ?Sized>(
    p: &mut P,
    cursor: Cursor,
    at: usize,
    trx_id: u64,
    roll_ptr: u64,
    mark: Option<bool>,
) -> Result<(), NodeError> {
    let mut sys = [0u8; 13];
    let (t, r) = sys.split_at_mut(6);
    t.copy_from_slice(trx_id.to_be_bytes().get(2..).unwrap_or_default());
    r.copy_from_slice(roll_ptr.to_be_bytes().get(1..).unwrap_or_default());
    if let Some(deleted) = mark {
        // The mark and the system columns in one write where they lie close together.
        let info = info_byte_at(p.bytes(), cursor)?;
        let end = at + sys.len();
        if info < at && end - info <= STAMP_SPAN_MAX {
            let mut span = [0u8; STAMP_SPAN_MAX];
            let span = span.get_mut(..end - info).unwrap_or_default();
            span.copy_from_slice(bytes::slice(p.bytes(), info, end - info)?);
            if let Some(b) = span.first_mut() {
                *b = if deleted {
                    *b | INFO_DELETED
                } else {
                    *b & !INFO_DELETED
                };
            }
            if let Some(s) = span.get_mut(at - info..) {
                s.copy_from_slice(&sys);
            }
            p.write_changed(info, span)?;
            if deleted {
                super::set_no_delete_marks(p, false)?;
            }
            return Ok(());
        }
    }
    p.write_changed(at, &sys)?;
    if let Some(deleted) = mark {
        set_delete_mark(p, cursor, deleted)?;
    }
    Ok(())
}

/// Inserts `rec` at its place in key order: searches, refuses a duplicate key, reorganizes
/// the page first if that makes room, then calls [`insert_at`].
pub fn insert<P: PageMut + ?Sized>(
    p: &mut P,
    layout: &RecordLayout,
    rec: &RecordBuf,
) -> Result<Cursor, NodeError> {
    check_kind(p.bytes(), layout)?;
    let max = max_record_len(page_len(p.bytes())?);
    if rec.len() > max {
        return Err(NodeError::RecordTooBig {
            len: rec.len(),
            max,
        });
    }
    let key = layout.key_of(rec.as_bytes(), rec.extra())?;
    let mut found = search(p.bytes(), layout, &key)?;
    if found.exact && found.low_match == layout.n_key() {
        return Err(NodeError::Duplicate {
            at: found.cursor.origin(),
        });
    }
    if !fits(p.bytes(), layout, rec.len())? {
        if !fits_after_reorganize(p.bytes(), rec.len())? {
            let avail = super::free_space(p.bytes())?;
            return Err(NodeError::PageFull {
                needed: rec.len() + 2,
                available: avail,
            });
        }
        reorganize_reserving(p, layout, rec.len() + 2)?;
        found = search(p.bytes(), layout, &key)?;
    }
    insert_at(p, layout, found.cursor, rec)
}
