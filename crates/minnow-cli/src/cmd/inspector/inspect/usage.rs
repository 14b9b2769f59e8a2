//! Space usage and page ages for `minnow inspect`: how full each index's pages are, where the
//! free space is, and how far behind the newest LSN the pages were last written.
//!
//! ## Fill, free and fragmented space on an INDEX page
//!
//! ```text
//!  0      38        94                         HEAP_TOP              dir   size-8  size
//!  | FIL  | PAGE hdr | infimum supremum records | ....free.... | slots |  FIL trl |
//!                     \_____ heap: live records + GARBAGE ____/
//! ```
//!
//! Both InnoDB and minnow lay out an INDEX page this way (FORMAT.md §7, `innodb-facts`), so the
//! same arithmetic reads both: the page's **capacity** is everything between the page header
//! and the trailer (`size - 94 - 8`); **used** bytes are the heap's live part plus the
//! directory (`HEAP_TOP - 94 - GARBAGE + 2 × N_DIR_SLOTS`); **fill** is used over capacity;
//! **free** is the contiguous gap between the heap top and the directory, where a new record
//! goes at once; **fragmented** is `GARBAGE`, the bytes of deleted records on the page's free
//! list, reusable only by a record that fits in one of them or after the page is
//! reorganised. An index with a low fill after many deletes is a candidate for `OPTIMIZE
//! TABLE`; one whose free space is mostly fragmented shows why a reorganisation helps.
//!
//! ## LSN age
//!
//! Every page carries the LSN of the last change written to it (FIL offset 16). Its **age** is
//! how far that is behind a reference: the end of the redo log when the file sits in a minnow
//! data directory (`ib_logfile0` beside it), else the newest page LSN in the file. Pages are
//! counted in buckets of age (in LSN bytes, which is redo bytes): young pages were written
//! recently; old ones have not changed for a long stretch of redo. For a minnow directory the
//! report also counts the pages written since the last checkpoint (their LSN is above it).

use std::collections::BTreeMap;
use std::path::Path;

use minnow_page::fil::TRAILER_SIZE;
use minnow_page::index::{IndexHeader, PAGE_DATA};
use serde::Serialize;

/// Upper bounds of the LSN-age buckets, in LSN bytes, and their labels.
pub const AGE_BUCKETS: &[(u64, &str)] = &[
    (1, "0 (newest)"),
    (64 << 10, "< 64 KiB"),
    (1 << 20, "< 1 MiB"),
    (16 << 20, "< 16 MiB"),
    (256 << 20, "< 256 MiB"),
    (u64::MAX, ">= 256 MiB"),
];

/// Used, free and fragmented bytes of some INDEX pages.
#[derive(Debug, Default, Clone, Copy, Serialize)]
pub struct Usage {
    /// Pages counted.
    pub pages: u64,
    /// Pages whose header did not fit the page (not counted in the bytes).
    pub bad_headers: u64,
    /// Capacity: page size minus page header and trailer, summed.
    pub capacity_bytes: u64,
    /// Live records and directory slots.
    pub used_bytes: u64,
    /// The contiguous gap between heap top and directory.
    pub free_bytes: u64,
    /// Deleted records' bytes (GARBAGE).
    pub fragmented_bytes: u64,
    /// `used / capacity` (0 when no page was counted).
    pub fill_factor: f64,
}

impl Usage {
    /// Counts one INDEX page.
    pub fn add(&mut self, page: &[u8], h: &IndexHeader) {
        let size = page.len() as u64;
        let capacity = size.saturating_sub((PAGE_DATA + TRAILER_SIZE) as u64);
        let heap_top = u64::from(h.heap_top);
        let dir = 2 * u64::from(h.n_dir_slots);
        let garbage = u64::from(h.garbage);
        let heap = heap_top.checked_sub(PAGE_DATA as u64);
        let end = size.saturating_sub(TRAILER_SIZE as u64);
        match heap {
            Some(heap) if heap_top + dir <= end && garbage <= heap => {
                self.pages += 1;
                self.capacity_bytes += capacity;
                self.used_bytes += heap - garbage + dir;
                self.free_bytes += end - heap_top - dir;
                self.fragmented_bytes += garbage;
            }
            _ => self.bad_headers += 1,
        }
        self.fill_factor = if self.capacity_bytes == 0 {
            0.0
        } else {
            self.used_bytes as f64 / self.capacity_bytes as f64
        };
    }
}

/// One bucket of pages by LSN age.
#[derive(Debug, Serialize)]
pub struct AgeBucket {
    /// The bucket's label (`< 1 MiB`).
    pub age: &'static str,
    /// Pages in it.
    pub pages: u64,
}

/// Pages by how far their LSN is behind the reference.
#[derive(Debug, Serialize)]
pub struct LsnAges {
    /// The reference LSN.
    pub reference_lsn: u64,
    /// What the reference is: `redo log end` or `newest page`.
    pub reference: &'static str,
    /// The redo log's checkpoint, when the log was found.
    pub checkpoint_lsn: Option<u64>,
    /// Pages whose LSN is above the checkpoint (written since), when the log was found.
    pub pages_after_checkpoint: Option<u64>,
    /// Pages whose LSN is above the reference (impossible for a consistent directory: a page
    /// ahead of its log).
    pub pages_ahead: u64,
    /// The buckets, youngest first.
    pub buckets: Vec<AgeBucket>,
}

/// The redo log's end and checkpoint, if `file`'s directory holds a readable `ib_logfile0`.
pub fn log_lsns(file: &Path) -> Option<(u64, u64)> {
    let dir = file.parent()?;
    if !dir.join(minnow::inspect::REDO_LOG).is_file() {
        return None;
    }
    let (log, _) = crate::cmd::inspector::log::read(dir, 0).ok()?;
    let checkpoint = log.checkpoints.iter().find(|c| c.newest && c.valid)?.lsn;
    Some((log.end?, checkpoint))
}

/// Buckets the page LSNs (non-zero LSNs of intact, non-empty pages).
pub fn ages(lsns: &[u64], log: Option<(u64, u64)>) -> Option<LsnAges> {
    let newest = lsns.iter().copied().max()?;
    let (reference_lsn, reference) = match log {
        Some((end, _)) => (end, "redo log end"),
        None => (newest, "newest page"),
    };
    let mut counts: BTreeMap<usize, u64> = BTreeMap::new();
    let mut ahead = 0;
    for &l in lsns {
        let Some(age) = reference_lsn.checked_sub(l) else {
            ahead += 1;
            continue;
        };
        let b = AGE_BUCKETS
            .iter()
            .position(|(limit, _)| age < *limit)
            .unwrap_or(AGE_BUCKETS.len() - 1);
        *counts.entry(b).or_default() += 1;
    }
    Some(LsnAges {
        reference_lsn,
        reference,
        checkpoint_lsn: log.map(|(_, c)| c),
        pages_after_checkpoint: log.map(|(_, c)| lsns.iter().filter(|&&l| l > c).count() as u64),
        pages_ahead: ahead,
        buckets: AGE_BUCKETS
            .iter()
            .enumerate()
            .map(|(i, (_, label))| AgeBucket {
                age: label,
                pages: counts.get(&i).copied().unwrap_or(0),
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(heap_top: u16, garbage: u16, slots: u16) -> IndexHeader {
        let mut page = vec![0u8; 16384];
        let h = PAGE_DATA - 56;
        page[h..h + 2].copy_from_slice(&slots.to_be_bytes());
        page[h + 2..h + 4].copy_from_slice(&heap_top.to_be_bytes());
        page[h + 8..h + 10].copy_from_slice(&garbage.to_be_bytes());
        IndexHeader::read(&page).unwrap()
    }

    #[test]
    fn usage_arithmetic() {
        let page = vec![0u8; 16384];
        let mut u = Usage::default();
        // 1000 bytes of heap past the header, 100 of them garbage, 4 slots.
        u.add(&page, &header(94 + 1000, 100, 4));
        assert_eq!(u.pages, 1);
        assert_eq!(u.capacity_bytes, 16384 - 94 - 8);
        assert_eq!(u.used_bytes, 900 + 8);
        assert_eq!(u.fragmented_bytes, 100);
        assert_eq!(u.free_bytes, 16384 - 8 - 1094 - 8);
        assert_eq!(
            u.used_bytes + u.free_bytes + u.fragmented_bytes,
            u.capacity_bytes
        );
        assert!((u.fill_factor - 908.0 / 16282.0).abs() < 1e-9);
        // Garbage headers are counted apart, never panicking or underflowing.
        u.add(&page, &header(10, 0, 2));
        u.add(&page, &header(20000, 0, 2));
        u.add(&page, &header(200, 500, 2));
        assert_eq!((u.pages, u.bad_headers), (1, 3));
    }

    #[test]
    fn age_buckets() {
        let a = ages(&[100_000, 100_000, 99_900, 30_000, 5], None).unwrap();
        assert_eq!(a.reference, "newest page");
        let counts: Vec<u64> = a.buckets.iter().map(|b| b.pages).collect();
        assert_eq!(counts, [2, 1, 2, 0, 0, 0]);
        let a = ages(&[100, 200, 300], Some((250, 150))).unwrap();
        assert_eq!(a.pages_ahead, 1);
        assert_eq!(a.pages_after_checkpoint, Some(2));
        assert!(ages(&[], None).is_none());
    }
}
