//! # minnow-compare: minnow next to SQLite, redb and LMDB
//!
//! One run of this crate puts every engine through the same work with the same durability
//! and prints one markdown table, rows = phases, columns = engines (docs/COMPARE.md holds
//! the latest). Two workloads:
//!
//! - [`kv`]: the phases of redb's benchmark (24-byte random keys, 150-byte random values):
//!   bulk load, individual durable writes, batch writes, count, random reads, random range
//!   reads of 10, reads at several thread counts, removal of half the keys, file size before
//!   and after compaction. Each engine implements [`kv::KvEngine`].
//! - [`sbtest`]: sysbench's `sbtest` table (`id` primary key, `k` with a secondary index,
//!   `c`, `pad`) against SQLite and against redb with a hand-maintained index table: point
//!   selects, ranges of 10 and 100 by id, selects by `k` through the index, durable index
//!   updates and durable inserts. Each engine implements [`sbtest::SbEngine`].
//!
//! Every phase checks what it reads against what was written, so a fast wrong engine fails
//! the run instead of winning it; [`report`] turns the runs into medians and the table, and
//! [`machine`] describes where it ran.

pub mod kv;
pub mod machine;
pub mod report;
pub mod rng;
pub mod sbtest;

/// The error type of every engine call: each engine's own error, boxed.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// `Result` with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// An error with a message, for a check that failed (a value read back that differs, a count
/// that is off).
pub fn mismatch(what: impl Into<String>) -> Error {
    what.into().into()
}

/// Bytes this process (all its threads, live or ended) has caused to be sent to storage so
/// far: `write_bytes` of `/proc/self/io`. The kernel counts a buffered write when it dirties
/// a page of the page cache (so a page written twice before writeback counts once, and once
/// more after each sync cleans it) and a direct write when it is submitted; the file system's
/// own journal is not counted. `None` where the file is missing (not Linux, or a kernel
/// without task IO accounting).
pub fn write_bytes() -> Option<u64> {
    let io = std::fs::read_to_string("/proc/self/io").ok()?;
    io.lines()
        .find_map(|l| l.strip_prefix("write_bytes:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Sum of the lengths of the files in `dir` (not recursive: every engine here keeps its
/// files in one directory), in bytes.
pub fn dir_size(dir: &std::path::Path) -> Result<u64> {
    let mut total = 0;
    for e in std::fs::read_dir(dir)? {
        let m = e?.metadata()?;
        if m.is_file() {
            total += m.len();
        }
    }
    Ok(total)
}
