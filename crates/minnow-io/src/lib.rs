//! # minnow-io: tablespace files and the IO backends under them
//!
//! Everything minnow stores goes through this crate: the buffer pool reads and writes pages of
//! [`Tablespace`]s, the redo log and the doublewrite buffer write their files through
//! [`FileIo`]. Underneath, a [`Backend`] decides *how* the bytes move:
//!
//! | backend          | what it does                                                        |
//! |------------------|---------------------------------------------------------------------|
//! | [`SyncBackend`]  | one `pread`/`pwrite` system call per IO, real `fdatasync`           |
//! | [`UringBackend`] | io_uring: a whole batch of IOs in one system call, one wait         |
//! | [`CrashSim`]     | wraps a backend; remembers unsynced writes; cuts the power on demand |
//! | [`LatencyModel`] | wraps a backend; charges each IO a modelled disk's seek and transfer |
//!
//! and a [`FlushMethod`] (`fsync`, `O_DIRECT`, `O_DSYNC`, as `innodb_flush_method`) decides
//! when written bytes become durable. The module docs teach the ideas: [`mod@file`] (where written
//! bytes live, flush methods), [`aligned`] (why `O_DIRECT` needs aligned buffers), [`uring`]
//! (what io_uring buys), [`crash`] (what a power cut does, torn writes), [`latency`] (the seek
//! and rotation model) and [`tablespace`] (a file of pages).
//!
//! ```
//! use std::sync::Arc;
//! use minnow_io::{Backend, FlushMethod, OpenOptions, SyncBackend, Tablespace, AlignedBuf};
//! use minnow_page::{PageSize, PageType, checksum::{ChecksumAlgorithm, ChecksumPolicy}};
//! use minnow_page::fil::FilHeader;
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("t1.ibd");
//! let backend: Arc<dyn Backend> = Arc::new(SyncBackend::new());
//! let space = Tablespace::create(&*backend, &path, 7, PageSize::K16, ChecksumAlgorithm::Crc32,
//!                                FlushMethod::ODirect, 4)?;
//! let mut page = AlignedBuf::page(PageSize::K16);
//! FilHeader::new(7, 3, PageType::Index).write(&mut page)?;
//! space.write_page(3, &mut page)?;
//! space.sync()?;
//! drop(space);
//!
//! let opts = OpenOptions::new(FlushMethod::ODirect);
//! let space = Tablespace::open(&*backend, &path, &opts, ChecksumPolicy::default())?;
//! assert_eq!((space.space_id(), space.size_in_pages()), (7, 4));
//! let mut back = AlignedBuf::page(PageSize::K16);
//! space.read_page(3, &mut back)?;
//! assert_eq!(back, page);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod aligned;
pub mod crash;
pub mod dirlock;
mod error;
pub mod file;
pub mod latency;
pub mod sync;
pub mod tablespace;
pub mod uring;

pub use aligned::AlignedBuf;
pub use crash::{CrashReport, CrashSim, Fate, FileCrash, SplitMix64, WriteFate, campaign_seeds};
pub use dirlock::{DirLock, DirLockError, LOCK_FILE};
pub use error::{IoError, IoOp};
pub use file::{Backend, FileIo, FlushMethod, IoRequest, OpenOptions, ParseFlushMethodError};
pub use latency::{DiskProfile, LatencyModel, LatencyStats};
pub use sync::SyncBackend;
pub use tablespace::Tablespace;
pub use uring::UringBackend;

#[cfg(test)]
mod tests;
