//! Tests of the dump load ([`crate::load`]): every listed page read once, resident pages
//! skipped, damage counted instead of panicking, free frames only, and a prompt stop at close.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use minnow_io::{Backend, FileIo, FlushMethod, IoError, OpenOptions, SyncBackend};
use minnow_page::PageId;

use crate::dump::{DUMP_FILE, encode_dump};
use crate::load::{LOAD_BATCH, LOAD_THREADS, LoadReport};
use crate::tests::{Env, cfg, create_pages, env, env_on, open, pid};
use crate::{BufConfig, BufError, BufferPool};

/// `cfg(frames)` with the dump file in the environment's directory.
fn with_dump(e: &Env, frames: usize) -> BufConfig {
    BufConfig {
        dump_dir: Some(e.dir.path().to_path_buf()),
        ..cfg(frames)
    }
}

fn write_dump(e: &Env, pages: &[PageId]) {
    std::fs::write(e.dir.path().join(DUMP_FILE), encode_dump(pages)).unwrap();
}

/// An environment whose pages 1..=n hold their markers on disk (written, no dump left).
fn written(pages: u32, n: u32) -> Env {
    let e = env(pages, 4 << 20);
    let pool = open(&e, cfg(512));
    create_pages(&pool, n);
    pool.shutdown().unwrap();
    e
}

fn marker(pool: &BufferPool, no: u32) -> [u8; 4] {
    let g = pool.get_read(pid(no)).unwrap();
    let mut m = [0u8; 4];
    m.copy_from_slice(&g[100..104]);
    m
}

#[test]
fn load_reads_every_listed_page_exactly_once() {
    let e = written(300, 200);
    // Out of order and with repeats: the load sorts and deduplicates.
    let listed: Vec<PageId> = (1..=200).rev().chain(1..=50).map(pid).collect();
    write_dump(&e, &listed);
    let pool = open(&e, with_dump(&e, 512));
    assert_eq!(pool.wait_for_load().unwrap(), 200);
    let report = pool.load_report().unwrap();
    assert_eq!(
        report,
        LoadReport {
            listed: 200,
            loaded: 200,
            ..LoadReport::default()
        }
    );
    assert_eq!(pool.stats().reads, 200);
    for no in 1..=200 {
        assert!(pool.contains(pid(no)));
        assert_eq!(marker(&pool, no), no.to_be_bytes());
    }
    // Every page was a hit: nothing was read twice.
    assert_eq!(pool.stats().reads, 200);
}

#[test]
fn load_skips_pages_already_resident() {
    let e = written(300, 40);
    // A dump directory without a dump: nothing is loaded at open.
    let pool = open(&e, with_dump(&e, 512));
    assert_eq!(pool.wait_for_load().unwrap(), 0);
    for no in 1..=10 {
        assert_eq!(marker(&pool, no), no.to_be_bytes());
    }
    write_dump(&e, &(1..=40).map(pid).collect::<Vec<_>>());
    let report = pool.load_now().unwrap().unwrap();
    assert_eq!((report.loaded, report.resident), (30, 10), "{report:?}");
    assert_eq!(pool.stats().reads, 40);
}

#[test]
fn load_counts_missing_and_damaged_pages() {
    let e = written(300, 20);
    // Damage page 3 on disk: its checksum no longer matches.
    let path = e.dir.path().join("t1.ibd");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[3 * 4096 + 200] ^= 0xFF;
    std::fs::write(&path, bytes).unwrap();
    let mut listed: Vec<PageId> = (1..=20).map(pid).collect();
    listed.extend([pid(5_000), pid(u32::MAX), PageId::new(77, 1)]);
    write_dump(&e, &listed);
    let pool = open(&e, with_dump(&e, 512));
    assert_eq!(pool.wait_for_load().unwrap(), 19);
    let r = pool.load_report().unwrap();
    assert_eq!((r.listed, r.missing, r.unreadable), (23, 3, 1), "{r:?}");
    // The damaged page's batch was re-read page by page: its neighbours are in.
    assert!(pool.contains(pid(2)) && pool.contains(pid(4)) && !pool.contains(pid(3)));
    // The damage is reported to whoever reads the page.
    assert!(pool.get_read(pid(3)).is_err());
}

#[test]
fn a_damaged_dump_file_is_a_typed_error() {
    let e = written(300, 4);
    let dump = e.dir.path().join(DUMP_FILE);
    std::fs::write(&dump, "minnow-buffer-pool-dump 1\n1,2\ncrc32c 00000000 1\n").unwrap();
    let pool = open(&e, with_dump(&e, 64));
    assert!(matches!(pool.wait_for_load(), Err(BufError::Dump { .. })));
    std::fs::write(&dump, [0xFFu8, 0x00, 0x13, 0x37]).unwrap();
    assert!(matches!(pool.load_now(), Err(BufError::Dump { .. })));
    // The pool works regardless.
    assert_eq!(marker(&pool, 1), 1u32.to_be_bytes());
}

#[test]
fn load_takes_only_free_frames() {
    let e = written(300, 100);
    write_dump(&e, &(1..=100).map(pid).collect::<Vec<_>>());
    let pool = open(&e, with_dump(&e, 32));
    assert_eq!(pool.wait_for_load().unwrap(), 32);
    let r = pool.load_report().unwrap();
    assert_eq!((r.loaded, r.not_loaded), (32, 68), "{r:?}");
    // It filled the free frames and evicted nothing.
    assert_eq!(pool.stats().evictions, 0);
    assert_eq!(pool.stats().free_frames, 0);
    // Readers still get their pages (by evicting loaded ones).
    assert_eq!(marker(&pool, 90), 90u32.to_be_bytes());
}

/// A backend whose reads wait while its gate is closed, counting the readers waiting.
#[derive(Debug, Default)]
struct Gate {
    closed: Mutex<bool>,
    opened: Condvar,
    waiting: AtomicUsize,
}

impl Gate {
    fn set(&self, closed: bool) {
        *self.closed.lock().unwrap() = closed;
        self.opened.notify_all();
    }

    fn pass(&self) {
        let mut closed = self.closed.lock().unwrap();
        if *closed {
            self.waiting.fetch_add(1, Ordering::SeqCst);
            while *closed {
                closed = self.opened.wait(closed).unwrap();
            }
        }
    }
}

#[derive(Debug)]
struct GatedBackend(Arc<Gate>);

#[derive(Debug)]
struct GatedFile {
    inner: Arc<dyn FileIo>,
    gate: Arc<Gate>,
}

impl Backend for GatedBackend {
    fn open(&self, path: &Path, opts: &OpenOptions) -> Result<Arc<dyn FileIo>, IoError> {
        Ok(Arc::new(GatedFile {
            inner: SyncBackend::new().open(path, opts)?,
            gate: Arc::clone(&self.0),
        }))
    }

    fn name(&self) -> &'static str {
        "gated"
    }
}

impl FileIo for GatedFile {
    fn path(&self) -> &Path {
        self.inner.path()
    }
    fn flush_method(&self) -> FlushMethod {
        self.inner.flush_method()
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), IoError> {
        self.gate.pass();
        self.inner.read_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> Result<(), IoError> {
        self.inner.write_at(buf, offset)
    }
    fn sync_data(&self) -> Result<(), IoError> {
        self.inner.sync_data()
    }
    fn sync_all(&self) -> Result<(), IoError> {
        self.inner.sync_all()
    }
    fn len(&self) -> Result<u64, IoError> {
        self.inner.len()
    }
    fn allocate(&self, len: u64) -> Result<(), IoError> {
        self.inner.allocate(len)
    }

    fn truncate(&self, len: u64) -> Result<(), IoError> {
        self.inner.truncate(len)
    }
}

#[test]
fn close_stops_the_load_after_the_reads_in_flight() {
    let gate = Arc::new(Gate::default());
    let e = env_on(&GatedBackend(Arc::clone(&gate)), 1_200, 4 << 20);
    let pool = open(&e, cfg(2_048));
    create_pages(&pool, 1_000);
    pool.shutdown().unwrap();
    drop(pool);
    write_dump(&e, &(1..=1_000).map(pid).collect::<Vec<_>>());
    gate.set(true);
    let pool = open(&e, with_dump(&e, 2_048));
    // Wait until the load's first read is held at the gate.
    while gate.waiting.load(Ordering::SeqCst) == 0 {
        std::thread::yield_now();
    }
    std::thread::scope(|s| {
        let closing = s.spawn(|| pool.shutdown());
        while !pool.shared.stopping.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
        gate.set(false);
        closing.join().unwrap().unwrap();
    });
    let r = pool.load_report().unwrap();
    assert!(r.stopped, "{r:?}");
    // Only the batches already claimed were read: at most one per reader thread.
    assert!(r.loaded <= LOAD_THREADS * LOAD_BATCH, "{r:?}");
    assert_eq!(r.loaded + r.not_loaded, 1_000, "{r:?}");
}

#[test]
fn load_reads_in_page_order_batches() {
    let model = minnow_io::LatencyModel::new(
        Arc::new(SyncBackend::new()),
        minnow_io::DiskProfile::spinning_disk(),
        false,
    );
    let e = env_on(&model, 300, 4 << 20);
    let pool = open(&e, cfg(512));
    create_pages(&pool, 200);
    pool.shutdown().unwrap();
    drop(pool);
    // Listed in a scattered order; read back sorted, a batch at a time.
    let listed: Vec<PageId> = (0..200).map(|i| pid(1 + (i * 37) % 200)).collect();
    write_dump(&e, &listed);
    model.reset_stats();
    let pool = open(&e, with_dump(&e, 512));
    assert_eq!(pool.wait_for_load().unwrap(), 200);
    let st = model.stats();
    assert_eq!(st.reads, 200);
    // Only a batch's first read may need a seek: the rest follow the previous page.
    let batches = 200usize.div_ceil(LOAD_BATCH) as u64;
    assert!(st.random <= batches, "{st:?}");
}
