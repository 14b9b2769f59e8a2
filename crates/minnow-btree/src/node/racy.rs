//! The node-pointer search of an optimistic descent: [`search`](super::search)'s binary
//! search and group walk, done in place over a page read *without a latch*
//! ([`minnow_buf::RacyPage`]).
//!
//! A writer may change the page while this runs, so every value read may be torn. Nothing
//! here may therefore trust one: each offset is checked against the page by the
//! [`RacyPage`] accessor (out of range answers `None`), the binary search runs over at most
//! as many slots as the page can hold, the group walk takes at most
//! [`DIR_SLOT_MAX_N_OWNED`]` * 2` steps, and any inconsistency answers `None` instead of an
//! error. A `Some` answer is only a candidate: the caller uses it once the frame's version
//! has shown that no writer came in ([`minnow_buf::BufferPool::read_optimistic`]); on a
//! page nobody writes it is exactly what [`search`](super::search) finds.
//!
//! Only keys that compare flat ([`FlatKey`]: fixed-width, NOT NULL key columns, at fixed
//! offsets from the record origin) are searched this way; any other key takes the latched
//! descent.

use std::cmp::Ordering;

use minnow_buf::RacyPage;
use minnow_page::fil;
use minnow_page::index::PAGE_HEADER;

use super::{DIR_SLOT_MAX_N_OWNED, INFIMUM, SUPREMUM, SUPREMUM_END, slot_addr};
use crate::record::{FlatKey, HEADER_SIZE, INFO_MIN_REC};

/// `FIL_PAGE_INDEX`.
const INDEX_PAGE: u16 = fil::PageType::Index.to_u16();

/// The B-tree level of the index page `page` if it is an INDEX page of index `index_id`.
pub(crate) fn level_of(page: &RacyPage<'_>, index_id: u64) -> Option<u16> {
    if page.u16(fil::PAGE_TYPE)? != INDEX_PAGE || page.u64(PAGE_HEADER + 28)? != index_id {
        return None;
    }
    page.u16(PAGE_HEADER + 26)
}

/// The child page number of the node pointer to follow for `key` on node page `page`: the
/// last record `<= key` (as [`search`](super::search) finds it), whose child number lies
/// `child_at` bytes after its origin. `status` is the node layout's record status bits.
/// `None` if the page does not hold together (torn, or not a node page of this layout).
pub(crate) fn child_for(
    page: &RacyPage<'_>,
    status: u8,
    key: &FlatKey<'_>,
    child_at: usize,
) -> Option<u32> {
    let len = page.len();
    let n = usize::from(page.u16(PAGE_HEADER)?); // PAGE_N_DIR_SLOTS
    let max_slots = len.saturating_sub(SUPREMUM_END + 8) / 2;
    if n < 2 || n > max_slots {
        return None;
    }
    // The key's order relative to the record at `origin`.
    let cmp = |origin: usize| -> Option<Ordering> {
        match origin {
            INFIMUM => return Some(Ordering::Greater),
            SUPREMUM => return Some(Ordering::Less),
            _ => {}
        }
        if page.u8(origin.checked_sub(HEADER_SIZE)?)? & INFO_MIN_REC != 0 {
            return Some(Ordering::Greater);
        }
        if page.u8(origin.checked_sub(3)?)? & 7 != status {
            return None;
        }
        key.compare_racy(page, origin)
    };
    let slot = |i: usize| page.u16(slot_addr(len, i)).map(usize::from);
    let (mut low, mut up) = (0usize, n - 1);
    // Halves `up - low` each round: at most log2(max_slots) rounds.
    while up - low > 1 {
        let mid = low + (up - low) / 2;
        if cmp(slot(mid)?)? == Ordering::Less {
            up = mid;
        } else {
            low = mid;
        }
    }
    let mut low_rec = slot(low)?;
    let up_limit = slot(up)?;
    let mut rec = next_of(page, low_rec)?;
    for _ in 0..=usize::from(DIR_SLOT_MAX_N_OWNED) * 2 {
        if rec != up_limit && rec == SUPREMUM {
            return None; // the group does not lead to its owner
        }
        if rec == up_limit || cmp(rec)? == Ordering::Less {
            if low_rec == INFIMUM || low_rec == SUPREMUM {
                return None;
            }
            return page.u32(low_rec.checked_add(child_at)?);
        }
        low_rec = rec;
        rec = next_of(page, rec)?;
    }
    None
}

/// The record after the one at `origin`, inside the record area.
fn next_of(page: &RacyPage<'_>, origin: usize) -> Option<usize> {
    let rel = page.u16(origin.checked_sub(2)?)?;
    if rel == 0 {
        return None;
    }
    let next = usize::from((origin as u16).wrapping_add(rel));
    (INFIMUM..page.len()).contains(&next).then_some(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::{init, insert, search};
    use crate::record::{Column, ColumnType, RecordLayout, Value};

    /// A node page of 16 KiB over a `U32` key: a MIN_REC pointer to child 1000, then keys
    /// `10 * i` pointing to child `i` for `i` in `1..=400`.
    fn node_page() -> (Vec<u8>, RecordLayout) {
        let l = RecordLayout::secondary(vec![Column::new(ColumnType::U32)])
            .unwrap()
            .node_ptr();
        let mut page = vec![0u8; 16384];
        init(&mut page, 7, 1).unwrap();
        // The FIL header's type, which the tree's page allocation writes.
        page[fil::PAGE_TYPE..fil::PAGE_TYPE + 2].copy_from_slice(&INDEX_PAGE.to_be_bytes());
        let mut first = l.encode(&[Value::UInt(0), Value::UInt(1000)]).unwrap();
        first.set_info_bits(INFO_MIN_REC);
        insert(&mut page, &l, &first).unwrap();
        for i in 1..=400u64 {
            let r = l.encode(&[Value::UInt(10 * i), Value::UInt(i)]).unwrap();
            insert(&mut page, &l, &r).unwrap();
        }
        (page, l)
    }

    fn child(page: &[u8], l: &RecordLayout, k: u64) -> Option<u32> {
        let key = l.search_key(&[Value::UInt(k)]).unwrap();
        let flat = l.flat_key(&key).unwrap();
        let at = l.fixed_offset(l.fields().len() - 1).unwrap();
        child_for(&RacyPage::from(page), l.status().bits(), &flat, at)
    }

    #[test]
    fn agrees_with_the_latched_search_on_a_quiet_page() {
        let (page, l) = node_page();
        assert_eq!(level_of(&RacyPage::from(&page[..]), 7), Some(1));
        assert_eq!(level_of(&RacyPage::from(&page[..]), 8), None);
        for k in 0..4100u64 {
            let key = l.search_key(&[Value::UInt(k)]).unwrap();
            let c = search(&page, &l, &key).unwrap().cursor;
            let want = match &l.decode(&page, c.origin()).unwrap()[1] {
                Value::UInt(v) => *v as u32,
                v => panic!("child {v:?}"),
            };
            assert_eq!(child(&page, &l, k), Some(want), "key {k}");
        }
        assert_eq!(child(&page, &l, 5), Some(1000));
        assert_eq!(child(&page, &l, 4000), Some(400));
    }

    /// Torn and garbage pages: every answer is bounded and nothing panics (the answers
    /// themselves mean nothing: a version check would throw them away).
    #[test]
    fn torn_and_garbage_pages_end_without_a_panic() {
        let (page, l) = node_page();
        let mut seed = 0x0123_4567_89AB_CDEFu64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut answered = 0;
        for round in 0..3000 {
            let mut torn = page.clone();
            match round % 3 {
                // A few bytes anywhere.
                0 => {
                    for _ in 0..1 + next() % 40 {
                        let at = (next() % torn.len() as u64) as usize;
                        torn[at] = next() as u8;
                    }
                }
                // The directory and the record headers, where the search steers.
                1 => {
                    for _ in 0..1 + next() % 20 {
                        let at = if next() % 2 == 0 {
                            torn.len() - 10 - (next() % 200) as usize
                        } else {
                            120 + (next() % 4000) as usize
                        };
                        torn[at] = next() as u8;
                    }
                }
                // Nothing but noise.
                _ => torn.iter_mut().for_each(|b| *b = next() as u8),
            }
            let k = next() % 5000;
            answered += usize::from(child(&torn, &l, k).is_some());
            let _ = level_of(&RacyPage::from(&torn[..]), 7);
        }
        assert!(answered > 0, "lightly torn pages still answer");
        for fill in [0u8, 0xFF, 0x70] {
            let flat = vec![fill; 16384];
            let _ = child(&flat, &l, 77);
        }
        assert_eq!(child(&[], &l, 1), None);
        assert_eq!(child(&page[..200], &l, 1), None);
    }
}
