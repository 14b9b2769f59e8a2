//! The doublewrite buffer's cost: pages flushed per second with doublewrite on, off and
//! detect-only (experiment E1's mechanism, measured directly).
//!
//! Each flusher thread owns one doublewrite segment and flushes batches of distinct random pages
//! of a preallocated tablespace, opened with O_DIRECT, through `Doublewrite::flush_batch`: with
//! doublewrite on, one sequential write of the batch to the segment, a sync, the in-place writes
//! (one batched submission) and one data-file sync; with it off, the in-place writes and the
//! sync only. Throughput is pages per second.
//!
//! The physical extra cost of doublewrite is one sequential write of the batch plus one sync, so
//! the bound for "on" is: the time per batch with it off, plus the batch's bytes at the disk's
//! sequential write bandwidth, plus one sync. The `reference` group measures those two terms in
//! the same run (`seq_write_batch` = one O_DIRECT write of a whole batch, `fdatasync` = one
//! sync after a small overwrite), so docs/EXPERIMENTS.md can report doublewrite-on throughput as
//! a fraction of the bound.
//!
//! Run: `cargo bench --bench doublewrite`. `MINNOW_BENCH_DIR` chooses the disk (default: the
//! system temp dir); `MINNOW_BENCH_PAGES` the tablespace size in 16 KiB pages (default 4096).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use minnow_dblwr::{Doublewrite, DoublewriteConfig, DoublewriteMode};
use minnow_io::{AlignedBuf, Backend, FlushMethod, OpenOptions, SyncBackend, Tablespace};
use minnow_page::checksum::ChecksumAlgorithm;
use minnow_page::fil::FilHeader;
use minnow_page::{PageId, PageSize, PageType};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

const SIZE: PageSize = PageSize::K16;
const SPACE: u32 = 7;

fn bench_dir() -> tempfile::TempDir {
    match std::env::var_os("MINNOW_BENCH_DIR") {
        Some(dir) => tempfile::tempdir_in(dir),
        None => tempfile::tempdir(),
    }
    .unwrap_or_else(|e| panic!("cannot create a bench directory: {e}"))
}

fn pages_in_space() -> u32 {
    std::env::var("MINNOW_BENCH_PAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4096)
}

/// A page image for `page_no`, with an LSN so recovery-style checks would accept it.
fn page_image(page_no: u32, lsn: u64) -> AlignedBuf {
    let mut page = AlignedBuf::page(SIZE);
    let mut h = FilHeader::new(SPACE, page_no, PageType::Index);
    h.lsn = lsn;
    if let Err(e) = h.write(&mut page) {
        panic!("{e}");
    }
    for (i, b) in page.iter_mut().enumerate().skip(38).take(SIZE.bytes() - 46) {
        *b = (i as u32 ^ page_no) as u8;
    }
    page
}

/// Creates the tablespace and writes every page once, so that later writes overwrite real
/// blocks (not unwritten extents) as a running database's do.
fn setup_space(dir: &std::path::Path, pages: u32) -> Arc<Tablespace> {
    let path = dir.join("t.ibd");
    let space = Tablespace::create(
        &SyncBackend::new(),
        &path,
        SPACE,
        SIZE,
        ChecksumAlgorithm::Crc32,
        FlushMethod::ODirect,
        pages,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut p = 1;
    while p < pages {
        let n = 64.min(pages - p);
        let mut bufs: Vec<AlignedBuf> = (p..p + n).map(|q| page_image(q, 1)).collect();
        let mut batch: Vec<(u32, &mut [u8])> = bufs
            .iter_mut()
            .enumerate()
            .map(|(i, b)| (p + i as u32, &mut b[..]))
            .collect();
        space
            .write_pages(&mut batch)
            .unwrap_or_else(|e| panic!("{e}"));
        p += n;
    }
    space.sync().unwrap_or_else(|e| panic!("{e}"));
    Arc::new(space)
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn doublewrite(c: &mut Criterion) {
    let dir = bench_dir();
    let pages = pages_in_space().max(256);
    let space = setup_space(dir.path(), pages);
    let spaces: HashMap<u32, Arc<Tablespace>> = [(SPACE, Arc::clone(&space))].into();
    let mut g = c.benchmark_group("doublewrite");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(3));
    g.warm_up_time(Duration::from_millis(500));
    for mode in DoublewriteMode::ALL {
        for batch in [8usize, 32, 128] {
            for threads in [1usize, 2, 4, 8] {
                let seg_dir = dir.path().join(format!("{mode}-{batch}-{threads}"));
                if let Err(e) = std::fs::create_dir_all(&seg_dir) {
                    panic!("{e}");
                }
                let config = DoublewriteConfig::new(mode, threads, SIZE)
                    .pages_per_batch(batch)
                    .flush_method(FlushMethod::ODirect);
                let dw = Doublewrite::open(&SyncBackend::new(), &seg_dir, config)
                    .unwrap_or_else(|e| panic!("{e}"));
                // Each thread flushes pages from its own slice of the space, so batches never
                // share a page.
                let slice = (pages - 1) / threads as u32;
                let images: Vec<Vec<AlignedBuf>> = (0..threads)
                    .map(|t| {
                        (0..batch)
                            .map(|i| page_image(1 + t as u32 * slice + i as u32 % slice, 2))
                            .collect()
                    })
                    .collect();
                g.throughput(Throughput::Elements((batch * threads) as u64));
                let id = BenchmarkId::new(format!("{mode}/batch{batch}"), format!("{threads}t"));
                g.bench_function(id, |b| {
                    b.iter_custom(|iters| {
                        let start = Instant::now();
                        std::thread::scope(|s| {
                            for (t, imgs) in images.iter().enumerate() {
                                let (dw, spaces) = (&dw, &spaces);
                                s.spawn(move || {
                                    let mut rng = Rng(0x9E37_79B9 + t as u64);
                                    let mut owned: Vec<AlignedBuf> = imgs.clone();
                                    for _ in 0..iters {
                                        // Random distinct pages within this thread's slice.
                                        let base = rng.next() as u32 % slice;
                                        let mut ids = Vec::with_capacity(owned.len());
                                        for (i, img) in owned.iter_mut().enumerate() {
                                            let p = 1
                                                + t as u32 * slice
                                                + (base + i as u32 * 7919) % slice;
                                            let mut h = FilHeader::read(img)
                                                .unwrap_or_else(|e| panic!("{e}"));
                                            h.page_no = p;
                                            h.write(img).unwrap_or_else(|e| panic!("{e}"));
                                            ids.push(PageId::new(SPACE, p));
                                        }
                                        let refs: Vec<(PageId, &[u8])> = ids
                                            .iter()
                                            .zip(owned.iter())
                                            .map(|(id, img)| (*id, &img[..]))
                                            .collect();
                                        dw.flush_batch(t, &refs, spaces)
                                            .unwrap_or_else(|e| panic!("{e}"));
                                    }
                                });
                            }
                        });
                        start.elapsed()
                    })
                });
            }
        }
    }
    g.finish();

    // The two physical terms of the bound, measured in the same run.
    let mut r = c.benchmark_group("doublewrite/reference");
    r.sample_size(10);
    r.measurement_time(Duration::from_secs(3));
    let file = SyncBackend::new()
        .open(
            &dir.path().join("seq.bin"),
            &OpenOptions::new(FlushMethod::ODirect).create(true),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let batch_bytes = AlignedBuf::new(128 * SIZE.bytes()).unwrap_or_else(|e| panic!("{e}"));
    if let Err(e) = file
        .write_at(&batch_bytes, 0)
        .and_then(|()| file.sync_data())
    {
        panic!("{e}");
    }
    r.throughput(Throughput::Bytes(batch_bytes.len() as u64));
    r.bench_function("seq_write_batch128", |b| {
        b.iter(|| {
            file.write_at(&batch_bytes, 0)
                .unwrap_or_else(|e| panic!("{e}"))
        })
    });
    let small = AlignedBuf::new(4096).unwrap_or_else(|e| panic!("{e}"));
    r.throughput(Throughput::Elements(1));
    r.bench_function("overwrite4k_fdatasync", |b| {
        b.iter(|| {
            file.write_at(&small, 0)
                .and_then(|()| file.sync_data())
                .unwrap_or_else(|e| panic!("{e}"))
        })
    });
    r.finish();
}

criterion_group!(benches, doublewrite);
criterion_main!(benches);
