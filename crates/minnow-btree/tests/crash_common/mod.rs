//! The power-cut harness shared by the B-tree crash campaigns: a small buffer pool with
//! doublewrite over one tablespace and a redo log on a crash-simulating backend, and the
//! restart that recovers it (doublewrite repair, then redo) after [`minnow_io::CrashSim::power_cut`].

use std::path::Path;
use std::sync::Arc;

use minnow_buf::{BufConfig, BufferPool, DoublewriteRecovery, PageWriter, SpaceMap};
use minnow_dblwr::{Doublewrite, DoublewriteConfig, DoublewriteMode};
use minnow_io::{Backend, FlushMethod, OpenOptions, Tablespace};
use minnow_page::checksum::{ChecksumAlgorithm, ChecksumPolicy};
use minnow_redo::Log;

use crate::common::{PAGE, SPACE};

/// A 24-frame pool, doublewrite batches of 4 pages, no read-ahead.
pub fn cfg(cleaners: usize) -> BufConfig {
    BufConfig {
        page_cleaners: cleaners,
        doublewrite_pages: 4,
        read_ahead_threshold: 0,
        ..BufConfig::with_frames(24, PAGE)
    }
}

/// The doublewrite writer (2 segments of 4 pages) in `dir`.
pub fn writer(backend: &dyn Backend, dir: &Path) -> Arc<dyn PageWriter> {
    let c = DoublewriteConfig::new(DoublewriteMode::On, 2, PAGE).pages_per_batch(4);
    Arc::new(Doublewrite::open(backend, dir, c).unwrap())
}

/// A fresh tablespace `data` and redo log `redo` (of `log_bytes`) in `dir`, under a pool with
/// one page cleaner.
#[allow(dead_code)]
pub fn create(
    backend: &dyn Backend,
    dir: &Path,
    data: &Path,
    redo: &Path,
    log_bytes: u64,
) -> BufferPool {
    create_with(backend, dir, (data, redo), log_bytes, None)
}

/// [`create`] with the tablespace compressed as `zip` says (or plain with `None`). Recovery
/// needs nothing more: a compressed file is recognised when it is opened.
#[allow(dead_code)]
pub fn create_with(
    backend: &dyn Backend,
    dir: &Path,
    (data, redo): (&Path, &Path),
    log_bytes: u64,
    zip: Option<minnow_zip::ZipConfig>,
) -> BufferPool {
    let checksum = ChecksumAlgorithm::Crc32;
    let space = Tablespace::create_with_zip(
        backend,
        data,
        SPACE,
        PAGE,
        zip,
        checksum,
        FlushMethod::Fsync,
        1,
    )
    .unwrap();
    let spaces = Arc::new(SpaceMap::new());
    spaces.insert(Arc::new(space));
    let log_file = backend
        .open(redo, &OpenOptions::new(FlushMethod::Fsync).create(true))
        .unwrap();
    let log = Arc::new(Log::create(log_file, log_bytes).unwrap());
    BufferPool::open(cfg(1), spaces, log, writer(backend, dir)).unwrap()
}

/// The restart after a power cut: the tablespace opened for recovery (page 0 is verified
/// after doublewrite repair), then [`BufferPool::recover`]. `what` (the seed and the crash
/// report) goes into the panic message if recovery fails.
pub fn recover(
    backend: &dyn Backend,
    dir: &Path,
    data: &Path,
    redo: &Path,
    what: &str,
) -> BufferPool {
    let opts = OpenOptions::new(FlushMethod::Fsync);
    let space =
        Tablespace::open_for_recovery(backend, data, &opts, ChecksumPolicy::default()).unwrap();
    let spaces = Arc::new(SpaceMap::new());
    spaces.insert(Arc::new(space));
    let log_file = backend.open(redo, &opts).unwrap();
    let dblwr = Some(DoublewriteRecovery {
        backend,
        dir,
        mode: DoublewriteMode::On,
    });
    let (pool, _log, _report) =
        BufferPool::recover(cfg(0), spaces, dblwr, || Ok(writer(backend, dir)), log_file)
            .unwrap_or_else(|e| panic!("{what}: recovery failed: {e}"));
    pool
}
