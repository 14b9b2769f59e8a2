//! # minnow-dblwr: the doublewrite buffer
//!
//! A page write is not atomic. A 16 KiB page is 32 sectors of 512 bytes and 4 memory pages of
//! 4 KiB; the disk promises atomicity per sector, the kernel writes back per memory page, and a
//! power cut in the middle of a page write can leave some of them new and the rest old (see
//! [`minnow_io::crash`]). Such a **torn page** is neither the old page nor the new one.
//!
//! ## Why redo cannot fix a torn page
//!
//! Redo records are *physiological*: addressed to one page, they describe a change inside it
//! ("insert this record after the one at offset X", "set these bytes of the page header").
//! Replaying a record assumes the page is an intact earlier version of itself, the one the
//! record was generated against, so that offsets, free-space pointers and record links mean what
//! they meant. A torn page breaks that assumption: its first 4 KiB may describe a record
//! directory whose records live in an old last 4 KiB. Worse, its checksum fails, so recovery
//! cannot even tell which LSN the page is at. Redo can roll an *old* page forward; it cannot
//! mend a *torn* one. Something must supply an intact image: that is the doublewrite buffer.
//!
//! ## The protocol
//!
//! A page cleaner hands [`Doublewrite::flush_batch`] up to [`DoublewriteConfig::pages_per_batch`]
//! dirty pages (their redo already durable, as write-ahead logging requires). For each batch:
//!
//! 1. every page is copied into the segment's batch buffer and its checksum is stamped there,
//!    once, with its tablespace's algorithm; those exact bytes go both to the doublewrite file
//!    and in place;
//! 2. the segment header (ids and LSNs of the pages, CRC-32C) and the page copies are written to
//!    the segment file in **one sequential write**, then the segment file is **synced**;
//! 3. the pages are written **in place**, grouped per tablespace, one batched submission per
//!    tablespace ([`minnow_io::FileIo::submit`]: a single io_uring submission where the backend
//!    is io_uring);
//! 4. every touched data file is **synced once**;
//! 5. the segment is released for the next batch.
//!
//! What a crash at each point leaves behind, and why recovery ([`recover`]) can always produce
//! an intact page:
//!
//! | crash ...                              | segment file                  | data pages                  | recovery                                      |
//! |----------------------------------------|-------------------------------|-----------------------------|-----------------------------------------------|
//! | before the segment sync (steps 1-2)    | anything: old batch, new, torn | untouched (old, intact)    | a torn header is ignored; a header that did survive has copies newer than (or equal to) the data, restored harmlessly |
//! | after the segment sync, before step 3  | new batch, durable            | old, intact                 | copies restored (they are newer): same as if the writes had landed |
//! | during the in-place writes (3-4)       | new batch, durable            | each old, new or **torn**   | torn, zero or older pages get the copy back   |
//! | after the data sync (5)                | new batch, durable            | new, intact                 | nothing to do ("already good")                |
//!
//! The invariant that makes this work: a segment's header and copies are overwritten only after
//! the previous batch's in-place writes were synced. So whenever a data page can be torn, the
//! batch that tore it has a durable, verifiable copy in its segment. (If a write or sync fails
//! after step 2, the segment is **poisoned** and refuses further batches: overwriting it could
//! destroy the only intact copy of a page whose in-place write is in doubt.)
//!
//! Restoring a copy that is newer than the data page is always safe: the copy is a complete
//! page image whose redo was durable before it was written (write-ahead logging), so it is a
//! state the page could have reached anyway; redo then rolls it forward from there.
//!
//! ## Why sharded
//!
//! InnoDB up to 8.0.19 had one 128-page doublewrite area for the whole server, in the system
//! tablespace; every flushing thread queued for its slots and held them while its pages were
//! written in place, so flushing was serialised on one buffer and its fsyncs. MySQL 8.0.20
//! moved it into separate files per buffer pool instance and reported a historical bottleneck
//! gone. minnow is sharded the same way: [`DoublewriteConfig::segments`] **segments**, each its
//! own file (`dblwr.0`, `dblwr.1`, ...) with its own batch buffer and its own mutex, one per
//! buffer pool instance or page cleaner. Flushers never share a segment, so they never wait for
//! each other's syncs.
//!
//! ## Modes ([`DoublewriteMode`], `innodb_doublewrite`)
//!
//! - `on`: the protocol above. Costs one extra sequential write and one sync per batch: about
//!   60-70 % of the in-place writes' time for 128 × 16 KiB on this project's machine (limits.md
//!   A.3), much less than the random writes it protects.
//! - `off`: no segment files; pages are stamped and written in place, then the data files are
//!   synced. A crash during the in-place writes can leave torn pages that nothing can repair:
//!   the tests show it happening.
//! - `detect_only` (MySQL 8.0.30): only the header (space id, page number, LSN per page) is
//!   written and synced, no copies. A few KiB per batch instead of 2 MiB; recovery can then
//!   *name* every page of the last batches that is torn, instead of letting redo trip over it
//!   later (or, with a weak checksum, not at all), but cannot repair it: [`recover`] fails with
//!   [`DblwrError::TornPages`].
//!
//! ## Recovery, before redo
//!
//! [`recover`] reads every segment file in the data directory, ignores batches whose header is
//! torn (CRC mismatch: that batch never completed its doublewrite sync, so none of its pages was
//! touched in place), collects the newest valid copy of each page, compares it with the data
//! page and writes it back where the data page is torn, all zeros, missing, older, or at the
//! same LSN but with different bytes. Then it syncs the data files and returns a
//! [`RecoveryReport`] saying what happened to each page. Call it before redo, and before
//! [`Doublewrite::open`] starts new batches in the same files.
//!
//! The segment file's byte layout is in [`mod@format`].
//!
//! ```
//! use std::collections::HashMap;
//! use std::sync::Arc;
//! use minnow_dblwr::{Doublewrite, DoublewriteConfig, DoublewriteMode, recover};
//! use minnow_io::{AlignedBuf, Backend, FlushMethod, SyncBackend, Tablespace};
//! use minnow_page::{PageId, PageSize, PageType, checksum::ChecksumAlgorithm, fil::FilHeader};
//!
//! let dir = tempfile::tempdir()?;
//! let backend: Arc<dyn Backend> = Arc::new(SyncBackend::new());
//! let space = Arc::new(Tablespace::create(&*backend, &dir.path().join("t.ibd"), 7,
//!     PageSize::K16, ChecksumAlgorithm::Crc32, FlushMethod::Fsync, 8)?);
//! let spaces: HashMap<u32, Arc<Tablespace>> = HashMap::from([(7, Arc::clone(&space))]);
//!
//! let config = DoublewriteConfig::new(DoublewriteMode::On, 2, PageSize::K16);
//! let dblwr = Doublewrite::open(&*backend, dir.path(), config)?;
//! let mut page = AlignedBuf::page(PageSize::K16);
//! let mut header = FilHeader::new(7, 3, PageType::Index);
//! header.lsn = 42;
//! header.write(&mut page)?;
//! dblwr.flush_batch(0, &[(PageId::new(7, 3), &page[..])], &spaces)?;
//! assert_eq!(dblwr.stats().snapshot().in_place_pages, 1);
//!
//! // After a crash, before redo:
//! let report = recover(&*backend, dir.path(), PageSize::K16, &spaces, DoublewriteMode::On)?;
//! assert_eq!(report.restored().count(), 0); // the batch completed: nothing torn
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod buffer;
mod error;
pub mod format;
mod mode;
mod recover;
mod resolver;

pub use buffer::{Doublewrite, DoublewriteConfig, DoublewriteStats, StatsSnapshot, segment_path};
pub use error::DblwrError;
pub use mode::{DoublewriteMode, ParseModeError};
pub use recover::{
    Action, CopyState, DataState, PageReport, RecoveryReport, SegmentReport, SegmentState, recover,
};
pub use resolver::SpaceResolver;

#[cfg(test)]
mod tests;
