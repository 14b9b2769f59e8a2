//! Crash recovery: bringing the pages up to date from the redo log.
//!
//! After a crash the data files hold some mix of old and new page versions: pages are
//! written lazily, in any order, and the last writes may be torn. Recovery runs in three
//! steps, and the order matters:
//!
//! 1. **Doublewrite repair** (done by the caller with the doublewrite buffer, before this):
//!    a page torn in place is replaced by its intact copy from the doublewrite area. Redo
//!    records are *physical edits of an intact page*; applied to a torn page they would
//!    produce garbage, so this must come first. Without a doublewrite buffer a torn page
//!    cannot be repaired, and recovery stops with [`BufError::Corrupt`] naming it.
//! 2. **Redo apply** ([`minnow_redo::Log::recover`] hands us every complete group from the
//!    checkpoint on, in LSN order). For each page a group touches: fetch it into the pool (a
//!    page past the end of its file, or all zeros, starts from zeros; a group that begins by
//!    initialising the page needs no read at all); if the page's LSN is older than the
//!    group's end, apply the group's records to it, set its LSN to the group's end and mark
//!    it dirty with `oldest_modification` = the group's start. A page whose LSN is already
//!    that new was written after this change: applying again would be wrong for non-idempotent
//!    changes and is skipped. During this phase the pool may have to evict pages: it writes
//!    them without waiting for the log, because every change in them comes from redo that is
//!    already durable.
//! 3. **Flush and checkpoint**: every recovered page is written, then the checkpoint moves to
//!    the end of the log, so a crash right after recovery does not redo it all again.

use std::sync::Arc;

use std::path::Path;

use minnow_dblwr::DoublewriteMode;
use minnow_io::{Backend, FileIo};
use minnow_page::{PageId, fil};
use minnow_redo::{Group, Log, Record, Recovered, RecoveryError};

use crate::flush::PageWriter;
use crate::guard::PageWriteGuard;
use crate::pool::{Mode, Shared};
use crate::{BufConfig, BufError, BufferPool, SpaceMap};

/// Where the doublewrite buffer's segment files are, for step 1 of recovery.
#[derive(Debug, Clone, Copy)]
pub struct DoublewriteRecovery<'a> {
    /// The backend the segment files are opened with.
    pub backend: &'a dyn Backend,
    /// The directory holding `dblwr.*`.
    pub dir: &'a Path,
    /// The doublewrite mode the engine runs in now.
    pub mode: DoublewriteMode,
}

/// What recovery did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveryReport {
    /// What the doublewrite repair found and did (if it ran).
    pub doublewrite: Option<minnow_dblwr::RecoveryReport>,
    /// What the log scan found (checkpoint, end, groups, torn tail).
    pub log: Recovered,
    /// Page changes applied (one per page per group).
    pub pages_applied: u64,
    /// Page changes skipped because the page was already newer.
    pub pages_skipped: u64,
    /// Records for tablespaces that are not registered (dropped), skipped.
    pub records_unknown_space: u64,
}

impl Shared {
    /// Applies one recovered group to the pages.
    fn apply_group(&self, group: &Group, report: &mut RecoveryReport) -> Result<(), BufError> {
        let mut pages: Vec<(PageId, Vec<&Record>)> = Vec::new();
        for r in &group.records {
            let id = r.page();
            match pages.iter_mut().find(|(p, _)| *p == id) {
                Some((_, list)) => list.push(r),
                None => pages.push((id, vec![r])),
            }
        }
        for (id, records) in pages {
            let Some(space) = self.spaces.get(id.space) else {
                report.records_unknown_space += records.len() as u64;
                continue;
            };
            let frame = if matches!(records.first(), Some(Record::InitPage { .. })) {
                self.create(id)?.0
            } else {
                if id.page_no >= space.size_in_pages() {
                    space
                        .extend_to(id.page_no.saturating_add(1))
                        .map_err(|e| BufError::from_io(id, e))?;
                }
                self.fix(id, Mode::Exclusive)?
            };
            let mut guard = PageWriteGuard {
                shared: self,
                frame,
                id,
            };
            if guard.lsn() >= group.end {
                report.pages_skipped += 1;
                continue;
            }
            let bytes = guard.bytes_mut();
            for r in records {
                r.apply(bytes)
                    .map_err(|source| BufError::Record { page: id, source })?;
            }
            let _ = fil::set_page_lsn(bytes, group.end.0);
            if space.zip().is_some() {
                // Changed without a fit check: its block (if cached) is not its body any more.
                // The recovered state is one a commit checked, so it fits when written.
                self.zip.invalidate(id);
            }
            self.mark_dirty(frame, group.start);
            report.pages_applied += 1;
        }
        Ok(())
    }
}

impl BufferPool {
    /// Recovers after a crash: repairs torn pages from the doublewrite buffer (if
    /// `doublewrite` is given; open the [`minnow_dblwr::Doublewrite`] writer only *after* this
    /// returns, since opening it reinitialises the segments), replays the redo log in
    /// `log_file` onto the pages of `spaces`, flushes them, checkpoints, and returns the
    /// running pool with its log attached.
    ///
    /// A torn page the doublewrite buffer cannot repair is
    /// `BufError::Doublewrite(DblwrError::TornPages { .. })`; a page that fails its checksum
    /// during redo apply is [`BufError::Corrupt`] naming it: torn pages are reported, never
    /// used.
    pub fn recover(
        cfg: BufConfig,
        spaces: Arc<SpaceMap>,
        doublewrite: Option<DoublewriteRecovery<'_>>,
        writer: impl FnOnce() -> Result<Arc<dyn PageWriter>, BufError>,
        log_file: Arc<dyn FileIo>,
    ) -> Result<(BufferPool, Arc<Log>, RecoveryReport), BufError> {
        let dblwr_report = match doublewrite {
            Some(d) => Some(minnow_dblwr::recover(
                d.backend,
                d.dir,
                cfg.page_size,
                &*spaces,
                d.mode,
            )?),
            None => None,
        };
        let shared = Arc::new(Shared::new(cfg, spaces, writer()?)?);
        let mut report = RecoveryReport {
            doublewrite: dblwr_report,
            log: Recovered {
                checkpoint: minnow_redo::format::Checkpoint {
                    no: 0,
                    lsn: minnow_redo::Lsn::FIRST,
                },
                end: minnow_redo::Lsn::FIRST,
                groups: 0,
                dropped_bytes: 0,
                erased_blocks: 0,
            },
            pages_applied: 0,
            pages_skipped: 0,
            records_unknown_space: 0,
        };
        let mut failure: Option<BufError> = None;
        let result = Log::recover(log_file, |group| {
            shared.apply_group(group, &mut report).map_err(|e| {
                let msg = e.to_string();
                failure = Some(e);
                msg
            })
        });
        let (log, recovered) = match result {
            Ok(r) => r,
            Err(RecoveryError::Apply { .. }) if failure.is_some() => {
                return Err(failure.unwrap_or(BufError::NoLog));
            }
            Err(e) => return Err(BufError::Redo(e)),
        };
        report.log = recovered;
        let log = Arc::new(log);
        let pool = BufferPool::start(shared, Arc::clone(&log))?;
        pool.flush_all()?;
        Ok((pool, log, report))
    }
}
