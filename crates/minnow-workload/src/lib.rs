//! # minnow-workload: benchmark workloads for minnow
//!
//! The experiments in `docs/EXPERIMENTS.md` need the loads the seed articles ran against
//! InnoDB. This crate drives them through minnow's embedded API ([`minnow::Database`],
//! [`minnow::Table`]), so the same code serves the Criterion benches in `benches/` and the
//! `minnow bench` command for long runs.
//!
//! - [`oltp`]: sysbench's OLTP scripts (`oltp_read_only`, `oltp_write_only`,
//!   `oltp_read_write`, `oltp_update_index`, `oltp_update_non_index`, `oltp_point_select`) on
//!   `sbtest` tables, with sysbench's knobs and defaults, per-interval reports and a final
//!   summary with latency percentiles.
//! - [`reads2007`]: the 2007 read micro-benchmark (seed 001): the "normal" table and its 13
//!   queries at a thread sweep, on a clustered table or a MyISAM-like heap table
//!   ([`minnow_heap`]), for experiment E2.
//! - [`revisions`]: the `revision` table of seed 004's "Where covering indexes rock" and one
//!   user's revisions read on a cold buffer pool through a covering or a non-covering index
//!   (experiment E8).
//! - [`parallel_load`]: parallel multi-row inserts under auto-increment lock modes 0, 1, 2
//!   and with explicit keys (experiment E7).
//! - [`writers`]: small write transactions on disjoint keys at a thread count (writer
//!   scaling: what the engine costs when no writer waits for another).
//! - [`hot_rows`]: writers updating a few hot rows in random order, queueing on row locks and
//!   deadlocking, retried as an application would (the lock queue's and the deadlock
//!   detector's cost).
//! - [`timed`]: the timed worker-thread loop with latency histograms both of them use.
//! - [`warmup`]: a skewed point-read workload on a table larger than the buffer pool, read to
//!   a steady state and restarted with and without the `ib_buffer_pool` dump load, with
//!   throughput per interval after each restart (experiment E11).
//! - [`plot`]: line and grouped-bar charts as SVG from the CSV the benches write (no
//!   dependencies), for `minnow plot` and docs/plots.
//! - [`slap`]: mysqlslap-style q1/q4/q5 point and range queries over a cached table with a
//!   small working set, under the article's base / noahi / itc configurations (experiment E4).
//! - [`e3`]: the text-like `articles` table compressed and uncompressed, read cold with the
//!   buffer pool at 1/8 of the data: point, range, filesort-order and key-order fetches, with
//!   CPU versus IO wait and the zip cache's counters (experiment E3).
//! - [`textgen`]: deterministic text-like rows (titles and bodies of Zipf-distributed words,
//!   names, e-mail addresses, dates, small counters) for the compression experiment E3.
//! - [`dict_memory`]: tables created, reopened and dropped by the thousand, with the live
//!   heap per table (read through a counting allocator the caller installs) and the pages
//!   each empty table takes (seed 004's dictionary memory).
//! - [`status_load`]: the cost of a status snapshot with many transactions open and holding
//!   row locks, alone and beside writers (seed 004's status commands, after E10).
//! - [`io_stats`]: pages flushed and bytes written around a run.
//! - [`io_count`]: a pass-through IO backend counting writes, bytes, syncs and their time per
//!   file class (data, doublewrite, redo), and the same per flushed page (experiment E1).
//! - [`procfs`]: the process's CPU time, IO bytes and per-thread scheduling times from `/proc`.
//! - [`spread`]: the median and range of repeated measurements.
//!
//! A command line names [`minnow::Config`] knobs (`--set doublewrite=off`) through the
//! engine's own registry, [`minnow::Config::apply`] and [`minnow::KNOBS`].
//!
//! ```
//! use std::sync::atomic::AtomicBool;
//! use minnow::{Config, Database};
//! use minnow_workload::oltp::{self, Mode, OltpConfig};
//!
//! let dir = tempfile::tempdir()?;
//! let db = Database::create(dir.path(), Config::default())?;
//! let cfg = OltpConfig {
//!     mode: Mode::ReadWrite,
//!     table_size: 200,
//!     threads: 2,
//!     time: None,
//!     events: Some(20),
//!     ..OltpConfig::default()
//! };
//! oltp::prepare(&db, &cfg, &mut |_progress| {})?;
//! let stop = AtomicBool::new(false);
//! let summary = oltp::run(&db, &cfg, &stop, &mut |_interval| {})?;
//! assert_eq!(summary.events, 20);
//! assert_eq!(summary.queries, summary.reads + summary.writes + summary.other);
//! db.check()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]
#![deny(unsafe_code)]

pub mod dict_memory;
pub mod e3;
pub mod hot_rows;
pub mod io_count;
pub mod io_stats;
pub mod killer;
pub mod oltp;
pub mod parallel_load;
pub mod plot;
pub mod procfs;
pub mod reads2007;
pub mod revisions;
pub mod slap;
pub mod spread;
pub mod status_load;
pub mod textgen;
pub mod timed;
pub mod warmup;
pub mod writers;

/// Everything that can go wrong while preparing or running a workload.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// A workload setting that cannot be used (names the setting).
    #[error("bad workload setting: {setting}: {reason}")]
    Setting {
        /// The setting, by its sysbench name (`table_size`, `threads`, ...).
        setting: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// The engine failed a statement the workload cannot treat as an expected outcome.
    #[error(transparent)]
    Engine(#[from] minnow::Error),
    /// A table does not look like an `sbtest` table this workload prepared.
    #[error("table `{table}`: {reason}")]
    Schema {
        /// The table.
        table: String,
        /// What is wrong.
        reason: String,
    },
    /// The heap table failed (its heap file, or a definition it refuses).
    #[error(transparent)]
    Heap(Box<minnow_heap::HeapError>),
    /// The data after a run is not what the run wrote (a lost update, a missing row): says
    /// what was found and what was expected.
    #[error("verification after the run failed: {0}")]
    Verify(String),
    /// A worker thread panicked (a bug in the workload or the engine).
    #[error("a worker thread panicked")]
    WorkerPanicked,
}
