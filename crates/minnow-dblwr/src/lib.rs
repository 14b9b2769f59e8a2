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
//! 2. the segment header (ids, LSNs and slot checksums of the pages, CRC-32C) and the page
//!    copies are written to the segment file in **one sequential write**, then the segment
//!    file is **synced**;
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
//! ## Two batches in flight
//!
//! The engine gives each flusher a **pair** of segments ([`SegmentPair`], see [`mod@pair`]'s
//! docs): batch *n* is written in place and its data files synced while batch *n + 1*'s
//! copies are written and synced to the other segment, as MariaDB (10.5 on) fills one of its
//! two doublewrite slots while the other's batch is written. The steps of each batch stay in
//! the protocol's order, and a segment takes its next batch only after its last one's data
//! syncs, so the crash table above holds per segment; with both batches out, recovery finds
//! both segments' copies durable and repairs the pages of either.
//!
//! ## Modes ([`DoublewriteMode`], `innodb_doublewrite`)
//!
//! - `on`: the protocol above. Costs one extra sequential write and one sync per batch (see
//!   "Where the time goes" below for what that amounts to).
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
//! touched in place), collects the newest valid copy of each page (a copy must match its slot
//! checksum, a CRC-32C over every byte of it, before anything else about it is believed),
//! compares it with the data page and writes it back where the data page is torn, all zeros,
//! missing, older, or at the same LSN but with different bytes. Then it syncs the data files and returns a
//! [`RecoveryReport`] saying what happened to each page. Call it before redo, and before
//! [`Doublewrite::open`] starts new batches in the same files.
//!
//! ## Where the time goes
//!
//! [`DoublewriteStats`] times every phase of every batch ([`DoublewriteStats::phase_times`],
//! a [`PhaseTimes`]: prepare = check, copy and stamp; segment write; segment sync; in-place
//! writes; data syncs; and the whole batch), so the cost of doublewrite is measured, not
//! guessed. Physically, mode on adds to a batch of mode off exactly one sequential write of
//! the batch and one sync; `benches/doublewrite.rs` measures that bound and how close `on`
//! comes to it. Two things keep the extra cost at that bound:
//!
//! - **The batch buffer sits in huge pages** ([`mod@batch_buf`],
//!   [`DoublewriteConfig::huge_pages`]). `O_DIRECT` writes go to the disk straight from the
//!   buffer's physical pages; from 4 KiB pages a 2 MiB batch is a scatter list of 512+
//!   pieces, split into several requests. On this project's VM (128 × 16 KiB, same runs,
//!   interleaved) the segment write took 2.2-4.4 ms from 4 KiB pages and 0.7-0.8 ms from one
//!   huge page, and the in-place writes, which leave from the same slots, went from 2.9-3.3 to
//!   1.8-2.1 ms through io_uring: a whole "on" batch from 12.3-13.9 to 9.5-10.8 ms.
//! - **The segment file is written in full when created**, not just `fallocate`d: writing into
//!   preallocated ("unwritten") extents converts them, a metadata change that turns the next
//!   sync into a journal commit (measured: the first batch's write + sync 8.0 ms instead of
//!   5.2-5.7 ms).
//!
//! What stays is what the protocol needs: two syncs per batch where mode off has one, and the
//! in-place writes, whose speed is the backend's: [`minnow_io::SyncBackend`] with one write
//! thread issues them one `pwrite` at a time (queue depth 1: 7-16 ms for 128 random pages),
//! while [`minnow_io::UringBackend`] submits the batch at once (about 2 ms). The engine's sync
//! backend spreads a batch over `write_io_threads` threads (default 4: four writes in flight,
//! [`minnow_io::SyncBackend::with_write_threads`]); io_uring remains the one that needs no
//! extra threads. On a disk with a volatile write cache the segment sync is not cheap: the write
//! returns once the batch is in the cache (about 2 GB/s here), and the sync then pays for
//! moving 2 MiB on (about 2 ms, against 0.3 ms for a sync after a 4 KiB write). Measured
//! that way (off + the batch's write and sync together), "on" reaches the bound (1.0-1.2 of
//! it); charging the batch at cache speed plus a 4 KiB sync, it reaches 0.86-0.92.
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

pub mod batch_buf;
mod buffer;
mod error;
pub mod format;
mod mode;
pub mod pair;
mod recover;
mod resolver;
mod stats;

pub use batch_buf::BatchBuf;
pub use buffer::{Doublewrite, DoublewriteConfig, segment_path};
pub use error::DblwrError;
pub use mode::{DoublewriteMode, ParseModeError};
pub use pair::{CopiedBatch, Half, SegmentPair};
pub use recover::{
    Action, CopyState, DataState, PageReport, RecoveryReport, SegmentReport, SegmentState, recover,
};
pub use resolver::SpaceResolver;
pub use stats::{DoublewriteStats, PhaseTimes, StatsSnapshot};

#[cfg(test)]
mod tests;
