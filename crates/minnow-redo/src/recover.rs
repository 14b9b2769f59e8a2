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

use crate::block::{BLOCK_SIZE, DATA_END, HEADER_SIZE, Lsn};
use crate::format::{BlockHeader, Checkpoint, DATA_AREA, FileHeader};
use crate::log::{Log, LogError};
use crate::record::{self, GROUP_HEADER, Record, RecordError};
use minnow_io::{AlignedBuf, FileIo};
use std::ops::ControlFlow;
use std::sync::Arc;

/// One mini-transaction's records, with its LSN range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// LSN of the group's first byte.
    pub start: Lsn,
    /// LSN just past the group's last byte: the page LSN a page gets from this group.
    pub end: Lsn,
    /// The records.
    pub records: Vec<Record>,
}

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

/// Reads blocks of the circular data area in large chunks. The file may end before the data
/// area does (the log grows as it is used): blocks beyond its end read as zeroes, which is
/// never a valid block.
struct BlockReader<'a> {
    file: &'a dyn FileIo,
    capacity: u64,
    /// The file's length.
    len: u64,
}

impl BlockReader<'_> {
    /// Reads `count` blocks starting at block LSN `from` (wrapping), into `out`.
    fn read(&self, from: Lsn, count: usize, out: &mut AlignedBuf) -> Result<(), LogError> {
        let block = BLOCK_SIZE as u64;
        let mut done = 0;
        while done < count {
            let lsn = from.0 + (done * BLOCK_SIZE) as u64;
            let pos = lsn % self.capacity;
            let room = ((self.capacity - pos) / block) as usize;
            let n = room.min(count - done);
            let dst = &mut out[done * BLOCK_SIZE..(done + n) * BLOCK_SIZE];
            // Whole blocks the file holds from here on; the rest of `dst` reads as zeroes.
            let present = (self.len.saturating_sub(DATA_AREA + pos) / block).min(n as u64);
            let (head, rest) = dst.split_at_mut(present as usize * BLOCK_SIZE);
            if !head.is_empty() {
                self.file.read_at(head, DATA_AREA + pos)?;
            }
            rest.fill(0);
            done += n;
        }
        Ok(())
    }
}

impl BlockReader<'_> {
    /// Reads the blocks with indexes `range` counted from block LSN `first`, `CHUNK_BLOCKS`
    /// at a time into `buf`, and calls `f(index, lsn, block)` on each in order until it
    /// returns `Break`.
    fn each_block(
        &self,
        first: Lsn,
        range: std::ops::Range<usize>,
        buf: &mut AlignedBuf,
        mut f: impl FnMut(usize, Lsn, &[u8; BLOCK_SIZE]) -> Result<ControlFlow<()>, RecoveryError>,
    ) -> Result<(), RecoveryError> {
        let mut at = range.start;
        while at < range.end {
            let n = CHUNK_BLOCKS.min(range.end - at);
            let chunk_start = Lsn(first.0 + (at * BLOCK_SIZE) as u64);
            self.read(chunk_start, n, buf)?;
            for i in 0..n {
                let lsn = Lsn(chunk_start.0 + (i * BLOCK_SIZE) as u64);
                if f(at + i, lsn, &block_at(buf, i))?.is_break() {
                    return Ok(());
                }
            }
            at += n;
        }
        Ok(())
    }
}

fn block_at(buf: &AlignedBuf, i: usize) -> [u8; BLOCK_SIZE] {
    let mut b = [0u8; BLOCK_SIZE];
    if let Some(s) = buf.get(i * BLOCK_SIZE..(i + 1) * BLOCK_SIZE) {
        b.copy_from_slice(s);
    }
    b
}

const CHUNK_BLOCKS: usize = 256;

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
        let len = file.len().map_err(LogError::from)?;
        let reader = BlockReader {
            file: file.as_ref(),
            capacity,
            len,
        };
        let lap_blocks = (capacity / BLOCK_SIZE as u64) as usize;
        let mut buf = AlignedBuf::new(CHUNK_BLOCKS * BLOCK_SIZE).map_err(LogError::from)?;
        let first_block = checkpoint.lsn.block_start();

        // Step 2: find the end. Only block frames are checked here; no data is kept.
        let mut stop: Option<(Lsn, usize)> = None; // (end of valid data, blocks scanned incl. stop block)
        reader.each_block(first_block, 0..lap_blocks, &mut buf, |i, expected, b| {
            if !BlockHeader::is_valid_at(b, expected) {
                stop = Some((Lsn(expected.0 + HEADER_SIZE as u64), i + 1));
                return Ok(ControlFlow::Break(()));
            }
            let to = usize::from(BlockHeader::read(b).data_len);
            if to < DATA_END {
                stop = Some((Lsn(expected.0 + to as u64), i + 1));
                return Ok(ControlFlow::Break(()));
            }
            Ok(ControlFlow::Continue(()))
        })?;
        let (valid_end, scanned_blocks) = stop.unwrap_or((
            Lsn(first_block.0 + capacity + HEADER_SIZE as u64),
            lap_blocks,
        ));

        // Step 3: blocks after the end: leftovers of a torn write, or proof of damage.
        let mut furthest_leftover = None;
        reader.each_block(
            first_block,
            scanned_blocks..lap_blocks,
            &mut buf,
            |i, expected, b| {
                if BlockHeader::is_valid_at(b, expected) {
                    let h = BlockHeader::read(b);
                    if h.flushed_lsn > valid_end {
                        return Err(RecoveryError::Corrupt {
                            path: path.clone(),
                            at: valid_end,
                            later: expected,
                            durable: h.flushed_lsn,
                        });
                    }
                    furthest_leftover = Some(i);
                }
                Ok(ControlFlow::Continue(()))
            },
        )?;

        // Step 4: read the valid log again and hand each group over as soon as it is whole.
        sink.span(checkpoint.lsn, valid_end);
        let mut parser = GroupParser::new(checkpoint.lsn);
        let mut groups = 0u64;
        reader.each_block(
            first_block,
            0..scanned_blocks,
            &mut buf,
            |_, expected, b| {
                if !BlockHeader::is_valid_at(b, expected) {
                    return Ok(ControlFlow::Break(())); // the stop block of step 2
                }
                let from = if expected == first_block {
                    checkpoint.lsn.offset_in_block()
                } else {
                    HEADER_SIZE
                };
                let to = usize::from(BlockHeader::read(b).data_len);
                if let Some(data) = b.get(from..to) {
                    parser.feed(data);
                }
                while let Some((start, body)) = parser.next_group(valid_end) {
                    let records =
                        record::decode_group(body).map_err(|source| RecoveryError::BadGroup {
                            path: path.clone(),
                            at: start,
                            source,
                        })?;
                    let end = start.advance((GROUP_HEADER + body.len()) as u64);
                    let g = Group {
                        start,
                        end,
                        records,
                    };
                    sink.group(g)
                        .map_err(|message| RecoveryError::Apply { at: start, message })?;
                    groups += 1;
                }
                Ok(ControlFlow::Continue(()))
            },
        )?;
        let end = parser.at;
        let dropped_bytes = end.data_bytes_until(valid_end.max(end));

        // Erase leftovers beyond the end block so they can never be read as log again.
        let mut erased_blocks = 0;
        if let Some(last) = furthest_leftover {
            let end_index = ((end.block_start().0 - first_block.0) / BLOCK_SIZE as u64) as usize;
            let zero = AlignedBuf::new(BLOCK_SIZE).map_err(LogError::from)?;
            for k in end_index + 1..=last {
                let lsn = first_block.0 + (k * BLOCK_SIZE) as u64;
                file.write_at(&zero, DATA_AREA + lsn % capacity)
                    .map_err(LogError::from)?;
                erased_blocks += 1;
            }
            file.sync_data().map_err(LogError::from)?;
        }

        // The block holding `end` is rewritten by the next write; keep its bytes up to `end`.
        let tail = if end.offset_in_block() > HEADER_SIZE {
            let mut one = AlignedBuf::new(BLOCK_SIZE).map_err(LogError::from)?;
            reader.read(end.block_start(), 1, &mut one)?;
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

/// Cuts the stream of data bytes into groups.
///
/// `pending[read..]` holds the bytes fed but not yet handed out, starting with the group at
/// LSN `at`. Handing a group out only moves `read`; `feed` drops the consumed prefix once it
/// is at least half of the buffer, so each byte is moved a bounded number of times on
/// average however the groups and feeds fall (draining the front per group made recovery
/// quadratic).
struct GroupParser {
    /// LSN of `pending[read]`: the start of the next group.
    at: Lsn,
    pending: Vec<u8>,
    read: usize,
}

impl GroupParser {
    fn new(at: Lsn) -> GroupParser {
        GroupParser {
            at,
            pending: Vec::new(),
            read: 0,
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        if self.read > 0 && self.read * 2 >= self.pending.len() {
            self.pending.drain(..self.read.min(self.pending.len()));
            self.read = 0;
        }
        self.pending.extend_from_slice(bytes);
    }

    /// The next complete group (start LSN, body), if the bytes fed so far hold one that ends
    /// at or before `limit`.
    fn next_group(&mut self, limit: Lsn) -> Option<(Lsn, &[u8])> {
        let rest = self.pending.get(self.read..)?;
        let len_bytes: [u8; 4] = rest.get(..GROUP_HEADER)?.try_into().ok()?;
        let len = u32::from_be_bytes(len_bytes) as usize;
        let total = GROUP_HEADER.checked_add(len)?;
        if rest.len() < total {
            return None;
        }
        let end = self.at.advance(total as u64);
        if end > limit {
            return None;
        }
        let start = self.at;
        let body = self
            .pending
            .get(self.read + GROUP_HEADER..self.read + total)?;
        self.read += total;
        self.at = end;
        Some((start, body))
    }
}

#[cfg(test)]
mod parser_tests {
    use super::*;

    fn group(body: &[u8]) -> Vec<u8> {
        let mut g = (body.len() as u32).to_be_bytes().to_vec();
        g.extend_from_slice(body);
        g
    }

    #[test]
    fn groups_split_across_feeds_come_out_whole_and_in_order() {
        let stream: Vec<u8> = [group(b"abc"), group(b""), group(&[7u8; 1000])].concat();
        let mut p = GroupParser::new(Lsn::FIRST);
        let mut out = Vec::new();
        for piece in stream.chunks(5) {
            p.feed(piece);
            while let Some((start, body)) = p.next_group(Lsn(u64::MAX)) {
                out.push((start, body.to_vec()));
            }
        }
        assert_eq!(out.len(), 3);
        assert_eq!(out[0], (Lsn::FIRST, b"abc".to_vec()));
        assert_eq!(out[1].0, Lsn::FIRST.advance(7));
        assert!(out[1].1.is_empty());
        assert_eq!(out[2].1, vec![7u8; 1000]);
        assert_eq!(p.at, Lsn::FIRST.advance(stream.len() as u64));
        assert_eq!(p.read, p.pending.len(), "every byte fed was handed out");
        assert!(
            p.pending.len() < stream.len(),
            "handed-out bytes are forgotten as feeding goes on"
        );
    }

    #[test]
    fn a_group_past_the_limit_is_held_back() {
        let mut p = GroupParser::new(Lsn::FIRST);
        p.feed(&group(b"0123456789"));
        assert!(p.next_group(Lsn::FIRST.advance(13)).is_none());
        assert!(p.next_group(Lsn::FIRST.advance(14)).is_some());
    }
}
