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
//! 4. **Replay.** The bytes from the checkpoint to the end are cut into groups, one per
//!    mini-transaction. A group that runs past the end never finished reaching the disk and is
//!    dropped whole: mini-transactions are atomic. Each complete group is handed to the caller
//!    (the buffer pool applies it to the pages whose LSN is older).

use crate::block::{BLOCK_SIZE, DATA_END, HEADER_SIZE, Lsn};
use crate::format::{BlockHeader, Checkpoint, DATA_AREA, FileHeader};
use crate::log::{Log, LogError};
use crate::record::{self, GROUP_HEADER, Record, RecordError};
use minnow_io::{AlignedBuf, FileIo};
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

/// Reads blocks of the circular data area in large chunks.
struct BlockReader<'a> {
    file: &'a dyn FileIo,
    capacity: u64,
}

impl BlockReader<'_> {
    /// Reads `count` blocks starting at block LSN `from` (wrapping), into `out`.
    fn read(&self, from: Lsn, count: usize, out: &mut AlignedBuf) -> Result<(), LogError> {
        let mut done = 0;
        while done < count {
            let lsn = from.0 + (done * BLOCK_SIZE) as u64;
            let pos = lsn % self.capacity;
            let room = ((self.capacity - pos) / BLOCK_SIZE as u64) as usize;
            let n = room.min(count - done);
            let dst = &mut out[done * BLOCK_SIZE..(done + n) * BLOCK_SIZE];
            self.file.read_at(dst, DATA_AREA + pos)?;
            done += n;
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
        mut apply: impl FnMut(&Group) -> Result<(), String>,
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
        let reader = BlockReader {
            file: file.as_ref(),
            capacity,
        };
        let lap_blocks = (capacity / BLOCK_SIZE as u64) as usize;

        // Scan forward from the checkpoint, feeding data bytes to the group parser.
        let mut parser = GroupParser::new(checkpoint.lsn);
        let mut buf = AlignedBuf::new(CHUNK_BLOCKS * BLOCK_SIZE).map_err(LogError::from)?;
        let first_block = checkpoint.lsn.block_start();
        let mut scanned = 0usize;
        let mut stop: Option<(Lsn, usize)> = None; // (end of valid data, blocks scanned incl. stop block)
        while stop.is_none() && scanned < lap_blocks {
            let n = CHUNK_BLOCKS.min(lap_blocks - scanned);
            let chunk_start = Lsn(first_block.0 + (scanned * BLOCK_SIZE) as u64);
            reader.read(chunk_start, n, &mut buf)?;
            for i in 0..n {
                let expected = Lsn(chunk_start.0 + (i * BLOCK_SIZE) as u64);
                let b = block_at(&buf, i);
                if !BlockHeader::is_valid_at(&b, expected) {
                    stop = Some((Lsn(expected.0 + HEADER_SIZE as u64), scanned + i + 1));
                    break;
                }
                let h = BlockHeader::read(&b);
                let from = if expected == first_block {
                    checkpoint.lsn.offset_in_block()
                } else {
                    HEADER_SIZE
                };
                let to = usize::from(h.data_len);
                if from < to {
                    parser.feed(&b[from..to]);
                }
                if to < DATA_END {
                    stop = Some((Lsn(expected.0 + to as u64), scanned + i + 1));
                    break;
                }
            }
            scanned += n;
        }
        let (valid_end, scanned_blocks) = stop.unwrap_or((
            Lsn(first_block.0 + capacity + HEADER_SIZE as u64),
            lap_blocks,
        ));

        // Blocks after the end: leftovers of a torn write, or proof of damage.
        let mut furthest_leftover = None;
        let mut i = scanned_blocks;
        while i < lap_blocks {
            let n = CHUNK_BLOCKS.min(lap_blocks - i);
            let chunk_start = Lsn(first_block.0 + (i * BLOCK_SIZE) as u64);
            reader.read(chunk_start, n, &mut buf)?;
            for j in 0..n {
                let expected = Lsn(chunk_start.0 + (j * BLOCK_SIZE) as u64);
                let b = block_at(&buf, j);
                if BlockHeader::is_valid_at(&b, expected) {
                    let h = BlockHeader::read(&b);
                    if h.flushed_lsn > valid_end {
                        return Err(RecoveryError::Corrupt {
                            path,
                            at: valid_end,
                            later: expected,
                            durable: h.flushed_lsn,
                        });
                    }
                    furthest_leftover = Some(i + j);
                }
            }
            i += n;
        }

        // Replay complete groups.
        let mut groups = 0u64;
        while let Some(group) = parser.next_group(valid_end) {
            let (start, body) = group;
            let records =
                record::decode_group(&body).map_err(|source| RecoveryError::BadGroup {
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
            apply(&g).map_err(|message| RecoveryError::Apply { at: start, message })?;
            groups += 1;
        }
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
        let log = Log::resume(file, capacity, checkpoint, end, tail);
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
struct GroupParser {
    /// LSN of `pending[0]`: the start of the next group.
    at: Lsn,
    pending: Vec<u8>,
}

impl GroupParser {
    fn new(at: Lsn) -> GroupParser {
        GroupParser {
            at,
            pending: Vec::new(),
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
    }

    /// The next complete group (start LSN, body), if the bytes fed so far hold one that ends
    /// at or before `limit`.
    fn next_group(&mut self, limit: Lsn) -> Option<(Lsn, Vec<u8>)> {
        let len_bytes: [u8; 4] = self.pending.get(..GROUP_HEADER)?.try_into().ok()?;
        let len = u32::from_be_bytes(len_bytes) as usize;
        let total = GROUP_HEADER.checked_add(len)?;
        let body = self.pending.get(GROUP_HEADER..total)?.to_vec();
        let end = self.at.advance(total as u64);
        if end > limit {
            return None;
        }
        let start = self.at;
        self.pending.drain(..total);
        self.at = end;
        Some((start, body))
    }
}
