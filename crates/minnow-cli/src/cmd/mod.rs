//! The subcommands, one module each. Each has a `run` function that reads the file(s), builds a
//! serde-serialisable report, prints it as text or JSON, and returns the exit status.

pub mod bench;
pub mod bench_ahi;
pub mod bench_args;
pub mod bench_compression;
pub mod bench_covering;
pub(crate) mod bench_csv;
pub mod bench_load;
pub mod bench_oltp_sweep;
pub(crate) mod bench_progress;
pub mod bench_reads;
pub mod bench_recovery;
pub mod bench_warmup;
pub mod bench_writers;
pub mod check;
pub mod dblwr;
pub mod demo;
pub mod demo_tables;
pub mod history;
pub mod inspect;
pub mod log;
pub mod page;
pub mod page_block;
pub mod page_minnow;
pub mod page_trx;
pub mod page_zip;
pub mod plot;
pub mod status;
pub mod tree;
pub mod usage;
pub mod verify;
pub mod watch;
