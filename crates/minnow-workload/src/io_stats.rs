//! How much a run wrote: pages the buffer pool flushed, redo generated, bytes the process wrote.
//!
//! An experiment about write amplification (doublewrite writes every flushed page twice) needs
//! three counts around a run: the pages the buffer pool wrote to the data files
//! ([`minnow_buf::BufferPoolStats`]: LRU and flush-list flushes), the redo generated (the
//! log's LSN advance, in bytes of log), and the bytes the whole
//! process handed to the kernel for writing (`write_bytes` of `/proc/self/io`: data files,
//! doublewrite segments and redo log together; `None` where the file does not exist). Their
//! difference between a run with doublewrite on and one with it off is the doublewrite's
//! own traffic; `process_write_bytes - data - redo` estimates it within one run (redo blocks
//! rewritten in place count more than once, so the estimate is an upper bound).

use minnow::Database;
use minnow::inspect::Internals;
use serde::Serialize;

use crate::WorkloadError;

/// The counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct IoSnapshot {
    /// Pages the buffer pool has written to the data files (LRU + flush list).
    pub pages_flushed: u64,
    /// The redo log's current LSN (bytes of log generated since the log was created; `0`
    /// for a database without a log).
    pub redo_lsn: u64,
    /// `write_bytes` of `/proc/self/io`: bytes this process caused to be written to storage.
    pub process_write_bytes: Option<u64>,
}

impl IoSnapshot {
    /// The counters now.
    pub fn take(db: &Database) -> Result<IoSnapshot, WorkloadError> {
        let s = db.buffer_pool()?.stats();
        Ok(IoSnapshot {
            pages_flushed: s.lru_flushed + s.flush_list_flushed,
            redo_lsn: db.buffer_pool()?.log().map_or(0, |l| l.current_lsn().0),
            process_write_bytes: process_write_bytes(),
        })
    }

    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: &IoSnapshot) -> IoSnapshot {
        IoSnapshot {
            pages_flushed: self.pages_flushed.saturating_sub(earlier.pages_flushed),
            redo_lsn: self.redo_lsn.saturating_sub(earlier.redo_lsn),
            process_write_bytes: match (self.process_write_bytes, earlier.process_write_bytes) {
                (Some(a), Some(b)) => Some(a.saturating_sub(b)),
                _ => None,
            },
        }
    }
}

/// `write_bytes` from `/proc/self/io`, if the system has it.
pub fn process_write_bytes() -> Option<u64> {
    crate::procfs::io_counter("write_bytes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_saturate_and_missing_counts_stay_missing() {
        let a = IoSnapshot {
            pages_flushed: 10,
            redo_lsn: 7,
            process_write_bytes: Some(100),
        };
        let b = IoSnapshot {
            pages_flushed: 15,
            redo_lsn: 9,
            process_write_bytes: None,
        };
        assert_eq!(
            b.since(&a),
            IoSnapshot {
                pages_flushed: 5,
                redo_lsn: 2,
                process_write_bytes: None
            }
        );
        assert_eq!(a.since(&b).pages_flushed, 0);
    }
}
