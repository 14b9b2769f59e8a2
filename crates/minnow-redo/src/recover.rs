//! Recovery: finding the end of the log and replaying it.
//!
//! After a crash the log file holds everything that was synced, and possibly more: writes that
//! were in flight when the power went may have landed whole, partly, or not at all. Recovery
//! reads it in four steps:
//!
//! 1. **Checkpoint.** Read both checkpoint slots and take the valid one with the higher number.
//!    Every change before its LSN is already in the data files.
//! 2. **Scan.** Read blocks forward from the checkpoint. A block belongs to the log if its CRC
//!    holds and it carries the LSN of its position (a block from the previous lap of the
//!    circular file carries an older one). The first block that fails, or that is not full,
//!    ends the log.
//! 3. **Torn tail or damage?** A power cut can leave the last in-flight write half done, so
//!    blocks *after* the end may still be valid: leftovers of that write. Each block records
//!    the LSN that was durable when it was written. A leftover whose recorded durable LSN lies
//!    *beyond* the end proves that the damaged region had been synced before: that is
//!    corruption in the middle of the log, and recovery stops with an error naming the LSN,
//!    rather than silently dropping committed work. Otherwise the damage is a torn tail, and
//!    the leftovers are erased (zeroed and synced) so that they can never be mistaken for log
//!    records after new ones are written around them.
//! 4. **Replay.** The bytes from the checkpoint to the end are read again, chunk by chunk,
//!    and cut into groups, one per mini-transaction, as they arrive. A group that runs past
//!    the end never finished reaching the disk and is dropped whole: mini-transactions are
//!    atomic. Each complete group is handed to the caller's [`RecoverySink`] (the buffer pool
//!    collects them by page and applies them in batches) and forgotten.
//!
//! ## Linear time, bounded memory
//!
//! Recovery's cost must grow with the redo it replays, not with its square: an earlier
//! version kept every byte since the checkpoint in one vector and removed each group from its
//! front, moving the rest every time (40 MiB of redo took 98 s, all of it in `memmove`). Now
//! the scan (step 2) only checks blocks and remembers where the log ends; the replay reads
//! the log a second time in 128 KiB chunks, and its parser keeps a cursor into a buffer of
//! the bytes not yet handed out, dropping the consumed prefix once it is half the buffer.
//! Every byte is read twice and copied a bounded number of times on average, whatever the
//! log's size; the memory is a chunk and about twice the largest group. Reading twice costs
//! little: the second pass finds the blocks in the operating system's cache.

use crate::block::{BLOCK_SIZE, HEADER_SIZE, Lsn};
use crate::format::{Checkpoint, DATA_AREA, FileHeader};
use crate::log::{Log, LogError};
use crate::record::RecordError;
pub use crate::scan::Group;
use crate::scan::{LogScan, ScanError};
use minnow_io::{AlignedBuf, FileIo};
use std::sync::Arc;

/// What recovery found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    /// The checkpoint the scan started from.
    pub checkpoint: Checkpoint,
    /// The end of the last complete group: new appends continue here.
    pub end: Lsn,
    /// Complete groups handed to the caller.
    pub groups: u64,
    /// Data bytes of an incomplete last group that were dropped.
    pub dropped_bytes: u64,
    /// Leftover blocks of a torn last write that were erased.
    pub erased_blocks: u64,
}

/// Where recovery hands what it finds, in LSN order ([`Log::recover_into`]).
pub trait RecoverySink {
    /// Called once, before the first group, when the end of the log is known: the groups
    /// that follow lie between `from` (the checkpoint) and `to` (the end of the valid log),
    /// so a caller can report progress as a fraction of `to - from`.
    fn span(&mut self, from: Lsn, to: Lsn) {
        let _ = (from, to);
    }

    /// One complete group, given away: the sink may keep its records. An error stops
    /// recovery with [`RecoveryError::Apply`].
    fn group(&mut self, group: Group) -> Result<(), String>;
}

/// A closure as a sink that ignores the span.
struct FnSink<F>(F);

impl<F: FnMut(&Group) -> Result<(), String>> RecoverySink for FnSink<F> {
    fn group(&mut self, group: Group) -> Result<(), String> {
        (self.0)(&group)
    }
}

/// Errors of recovery.
#[derive(Debug, thiserror::Error)]
pub enum RecoveryError {
    /// The log could not be read or its fixed structures are damaged.
    #[error(transparent)]
    Log(#[from] LogError),
    /// Neither checkpoint slot is valid.
    #[error("{path}: both checkpoint slots are damaged")]
    NoCheckpoint {
        /// The log file.
        path: std::path::PathBuf,
    },
    /// Damage before records that were already durable: not a torn tail.
    #[error(
        "{path}: redo log corrupt at LSN {at}: block at LSN {later} was written after LSN {durable} \
         was durable, so the damage is not a torn tail"
    )]
    Corrupt {
        /// The log file.
        path: std::path::PathBuf,
        /// Where the valid log stops.
        at: Lsn,
        /// A later valid block.
        later: Lsn,
        /// The durable LSN that later block recorded.
        durable: Lsn,
    },
    /// The header's capacity or the checkpoint's LSN is too large for any real log
    /// ([`ScanError::Implausible`]).
    #[error("redo log capacity {capacity} or checkpoint LSN {from} is implausibly large")]
    Implausible {
        /// The capacity from the file header.
        capacity: u64,
        /// The checkpoint's LSN.
        from: Lsn,
    },
    /// A complete, checksummed group does not decode.
    #[error("{path}: redo group at LSN {at} is malformed: {source}")]
    BadGroup {
        /// The log file.
        path: std::path::PathBuf,
        /// The group's start LSN.
        at: Lsn,
        /// What is wrong.
        source: RecordError,
    },
    /// The caller's apply function failed.
    #[error("applying the redo group at LSN {at} failed: {message}")]
    Apply {
        /// The group's start LSN.
        at: Lsn,
        /// The caller's error.
        message: String,
    },
}

fn block_at(buf: &AlignedBuf, i: usize) -> [u8; BLOCK_SIZE] {
    let mut b = [0u8; BLOCK_SIZE];
    if let Some(s) = buf.get(i * BLOCK_SIZE..(i + 1) * BLOCK_SIZE) {
        b.copy_from_slice(s);
    }
    b
}

impl From<ScanError> for RecoveryError {
    fn from(e: ScanError) -> RecoveryError {
        match e {
            ScanError::Log(e) => RecoveryError::Log(e),
            ScanError::Implausible { capacity, from } => {
                RecoveryError::Implausible { capacity, from }
            }
            ScanError::BadGroup { path, at, source } => {
                RecoveryError::BadGroup { path, at, source }
            }
        }
    }
}

impl Log {
    /// Opens an existing log, runs recovery, hands every complete group after the checkpoint
    /// to `apply` in LSN order, erases a torn tail, and returns the log ready for appends.
    pub fn recover(
        file: Arc<dyn FileIo>,
        apply: impl FnMut(&Group) -> Result<(), String>,
    ) -> Result<(Log, Recovered), RecoveryError> {
        Log::recover_into(file, &mut FnSink(apply))
    }

    /// [`Log::recover`] with a [`RecoverySink`]: told the span before the first group, and
    /// given each group to keep.
    pub fn recover_into(
        file: Arc<dyn FileIo>,
        sink: &mut impl RecoverySink,
    ) -> Result<(Log, Recovered), RecoveryError> {
        let path = file.path().to_path_buf();
        let mut head = AlignedBuf::new(DATA_AREA as usize).map_err(LogError::from)?;
        file.read_at(&mut head, 0).map_err(LogError::from)?;
        let header =
            FileHeader::decode(&block_at(&head, 0)).map_err(|source| LogError::Format {
                path: path.clone(),
                source,
            })?;
        let checkpoint = [1, 2]
            .into_iter()
            .filter_map(|i| Checkpoint::decode(&block_at(&head, i)))
            .max_by_key(|c| c.no)
            .ok_or_else(|| RecoveryError::NoCheckpoint { path: path.clone() })?;
        let capacity = header.capacity;
        let scan = LogScan::new(file.as_ref(), &header, checkpoint.lsn)?;
        let len = scan.file_len();

        // Steps 2 and 3: find the end, then tell a torn tail from damage.
        let found = scan.find_end()?;
        let valid_end = found.valid_end;
        if let Some(d) = found.damage.first() {
            return Err(RecoveryError::Corrupt {
                path,
                at: valid_end,
                later: d.later,
                durable: d.durable,
            });
        }

        // Step 4: read the valid log again and hand each group over as soon as it is whole.
        sink.span(checkpoint.lsn, valid_end);
        let mut groups = 0u64;
        let mut replay = scan.groups(&found);
        for g in replay.by_ref() {
            let g = g?;
            let at = g.start;
            sink.group(g)
                .map_err(|message| RecoveryError::Apply { at, message })?;
            groups += 1;
        }
        let end = replay.end();
        let dropped_bytes = end.data_bytes_until(valid_end.max(end));

        // Erase leftovers beyond the end block so they can never be read as log again.
        let mut erased_blocks = 0;
        if let Some(last) = found.furthest_leftover {
            let zero = AlignedBuf::new(BLOCK_SIZE).map_err(LogError::from)?;
            for k in scan.index_of(end) + 1..=last {
                file.write_at(&zero, scan.offset_of(scan.lsn_of(k)))
                    .map_err(LogError::from)?;
                erased_blocks += 1;
            }
            file.sync_data().map_err(LogError::from)?;
        }

        // The block holding `end` is rewritten by the next write; keep its bytes up to `end`.
        let tail = if end.offset_in_block() > HEADER_SIZE {
            let mut one = AlignedBuf::new(BLOCK_SIZE).map_err(LogError::from)?;
            scan.read(end.block_start(), 1, &mut one)?;
            Some(block_at(&one, 0))
        } else {
            None
        };
        let log = Log::resume(file, capacity, checkpoint, end, tail, len);
        Ok((
            log,
            Recovered {
                checkpoint,
                end,
                groups,
                dropped_bytes,
                erased_blocks,
            },
        ))
    }
}
