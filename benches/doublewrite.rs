//! The doublewrite buffer's cost: pages flushed per second with doublewrite on, off and
//! detect-only (experiment E1's mechanism, measured directly).
//!
//! Each flusher thread owns one doublewrite segment and flushes batches of distinct random pages
//! of a preallocated tablespace, opened with O_DIRECT, through `Doublewrite::flush_batch`: with
//! doublewrite on, one sequential write of the batch to the segment, a sync, the in-place writes
//! (one batched submission) and one data-file sync; with it off, the in-place writes and the
//! sync only. Throughput is pages per second. Every configuration runs on both IO backends:
//! `sync` (one `pwrite` per page, queue depth 1) and `uring` (the whole batch in one io_uring
//! submission, queue depth = batch size).
//!
//! ## Groups
//!
//! - `doublewrite/{mode}/batch{B}/{backend}/{T}t`: throughput of each mode. After each, it
//!   prints where the batches' time went, as the buffer's own timers saw it
//!   ([`minnow_dblwr::PhaseTimes`], mean per batch, warm-up included):
//!   `phases on/batch128/uring/1t: prepare .. + seg write .. + seg sync .. + in place .. +
//!   data sync .. + other .. = batch .. ms (N batches); .. ms per round`.
//! - `doublewrite/bound/batch{B}/{backend}/{T}t`: the bound for "on" (below); Criterion's time
//!   is that of the "on" rounds.
//! - `doublewrite/reference/*`: the physical terms on their own.
//!
//! ## The bound for "on"
//!
//! The physical extra cost of doublewrite is one sequential write of the batch plus one sync,
//! so the bound for "on" is: the time per batch with it off, plus the batch's bytes at the
//! disk's sequential write bandwidth, plus one sync. The host is shared and noisy (a sync
//! flushes the whole virtual disk's cache, other tenants' writes included), so terms measured
//! minutes apart do not add up. The bound group therefore measures everything round by round,
//! interleaved: one "off" round and one "on" round (every thread flushing one batch, the order
//! alternating), then the physical terms, on a file that was preallocated *and written* (no
//! unwritten extents), opened with O_DIRECT:
//!
//! - `seq`: one write of a batch's segment bytes (header block + pages) from huge-page memory
//!   (as the segments' own buffers; the same write from 4 KiB pages is printed too), timed
//!   until the write returns;
//! - `sync`: one 4 KiB overwrite of that file plus `fdatasync`;
//! - `seq+sync`: the batch write and its `fdatasync` timed together. On a disk with a volatile
//!   write cache (this project's VM: `write_cache = write back`) a write returns once the
//!   bytes are in the cache, and the sync pays for moving them on, so this is the sequential
//!   write at its *durable* bandwidth.
//!
//! It then prints medians over the rounds, and the median of the per-round fractions:
//!
//! ```text
//! bound batch128/uring/1t: off X ms + seq Y ms + sync Z ms = B ms; on W ms -> fraction F (durable: off + seq+sync D ms = B2 ms -> F2; seq from 4 KiB pages S ms; N rounds)
//! bound batch128/uring/1t: sequential bandwidth X MB/s until the write returns, Y MB/s durable (..)
//! bound batch128/uring/1t: off's batches, medians: prepare .. + seg write .. + seg sync .. + in place .. + data sync ..; batch .. ms
//! bound batch128/uring/1t: on's batches, medians: ...
//! ```
//!
//! The fraction is bound / on: 1.0 means "on" costs exactly the physical extra, above 1 that
//! it cost less than the terms measured beside it (syncs are the noisiest term). The two
//! bounds differ in the bandwidth they charge the batch's bytes at: `seq` is the speed of a
//! write *into the disk's cache*; the sync after a 2 MiB write costs far more than after a
//! 4 KiB one (on this VM about 2 ms against 0.3), because the flush moves the bytes on. The
//! durable bound, off + seq+sync, is the same formula with the bandwidth measured durably,
//! bytes / (seq+sync - sync), and is the one a flushed doublewrite batch can actually reach
//! (the line after the bound prints both bandwidths). With T threads
//! the sequential term counts T batches (they share one disk) and the sync one; the durable
//! bound counts T batch writes with their syncs.
//! `MINNOW_BENCH_COMPARE_4K=1` adds, interleaved in the same rounds, an off/on pair whose batch
//! buffers are in ordinary 4 KiB pages (`DoublewriteConfig::huge_pages(false)`), labelled
//! `-4k`: the before/after of that choice.
//!
//! Run: `cargo bench --bench doublewrite` (about 8 minutes; filter with a regex, e.g.
//! `-- 'doublewrite/(on|off)/batch128/uring|bound/batch128'`). `MINNOW_BENCH_DIR` chooses the
//! disk (default: the system temp dir); `MINNOW_BENCH_PAGES` the tablespace size in 16 KiB
//! pages (default 4096); `MINNOW_BENCH_URING_RINGS` the io_uring backend's rings (default 8). `cargo bench -- --test` runs every configuration once (the printed
//! numbers are then single batches, not measurements).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use minnow_dblwr::format::header_block_len;
use minnow_dblwr::{BatchBuf, Doublewrite, DoublewriteConfig, DoublewriteMode, PhaseTimes};
use minnow_io::{
    AlignedBuf, Backend, FileIo, FlushMethod, OpenOptions, SyncBackend, Tablespace, UringBackend,
};
use minnow_page::checksum::ChecksumAlgorithm;
use minnow_page::fil::FilHeader;
use minnow_page::{PageId, PageSize, PageType};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const SIZE: PageSize = PageSize::K16;
const SPACE: u32 = 7;
const BATCHES: [usize; 3] = [8, 32, 128];
const THREADS: [usize; 4] = [1, 2, 4, 8];
/// `off` first, so that the bound for `on` uses an `off` measured just before it.
const MODES: [DoublewriteMode; 3] = [
    DoublewriteMode::Off,
    DoublewriteMode::On,
    DoublewriteMode::DetectOnly,
];

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

/// The backends every configuration runs on. `MINNOW_BENCH_URING_RINGS` sets the io_uring
/// backend's number of rings (default [`UringBackend::DEFAULT_RINGS`]; 1 makes every flusher
/// take turns on one ring, as before the pool).
fn backends() -> Vec<(&'static str, Arc<dyn Backend>)> {
    let rings = std::env::var("MINNOW_BENCH_URING_RINGS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(UringBackend::DEFAULT_RINGS);
    let uring = UringBackend::with_rings(rings, UringBackend::DEFAULT_ENTRIES)
        .unwrap_or_else(|e| panic!("io_uring: {e}"));
    vec![
        ("sync", Arc::new(SyncBackend::new())),
        ("uring", Arc::new(uring)),
    ]
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
fn setup_space(backend: &dyn Backend, path: &std::path::Path, pages: u32) -> Arc<Tablespace> {
    let space = Tablespace::create(
        backend,
        path,
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
    fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn check<T>(r: Result<T, minnow_io::IoError>) -> T {
    r.unwrap_or_else(|e| panic!("{e}"))
}

/// Wall time and rounds (every thread flushing one batch) accumulated over one configuration,
/// warm-up included.
#[derive(Default)]
struct Clock {
    ns: AtomicU64,
    rounds: AtomicU64,
}

impl Clock {
    fn add(&self, elapsed: Duration, rounds: u64) {
        let ns = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        self.ns.fetch_add(ns, Ordering::Relaxed);
        self.rounds.fetch_add(rounds, Ordering::Relaxed);
    }

    /// Milliseconds per round, or `None` if nothing ran.
    fn ms_per_round(&self) -> Option<f64> {
        let rounds = self.rounds.load(Ordering::Relaxed);
        (rounds > 0).then(|| self.ns.load(Ordering::Relaxed) as f64 / 1e6 / rounds as f64)
    }
}

/// One flusher's state: its page images (rewritten for each batch) and its random numbers.
struct Flusher {
    images: Vec<AlignedBuf>,
    rng: Rng,
}

/// `threads` flushers, each with its own segment and its own slice of the tablespace (so
/// batches never share a page).
struct Flushers {
    dw: Doublewrite,
    flushers: Vec<Mutex<Flusher>>,
    slice: u32,
}

impl Flushers {
    fn new(
        backend: &dyn Backend,
        dir: &std::path::Path,
        mode: DoublewriteMode,
        batch: usize,
        threads: usize,
        pages: u32,
        huge_pages: bool,
    ) -> Flushers {
        if let Err(e) = std::fs::create_dir_all(dir) {
            panic!("{}: {e}", dir.display());
        }
        let config = DoublewriteConfig::new(mode, threads, SIZE)
            .pages_per_batch(batch)
            .flush_method(FlushMethod::ODirect)
            .huge_pages(huge_pages);
        let dw = Doublewrite::open(backend, dir, config).unwrap_or_else(|e| panic!("{e}"));
        let slice = (pages - 1) / threads as u32;
        let flushers = (0..threads)
            .map(|t| {
                Mutex::new(Flusher {
                    images: (0..batch)
                        .map(|i| page_image(1 + t as u32 * slice + i as u32 % slice, 2))
                        .collect(),
                    rng: Rng::new(0x9E37_79B9 + t as u64 * 0x1_0000_0001),
                })
            })
            .collect();
        Flushers {
            dw,
            flushers,
            slice,
        }
    }

    /// Every flusher flushes `iters` batches, each on its own thread (one flusher runs on the
    /// calling thread); returns the wall time.
    fn run(&self, spaces: &HashMap<u32, Arc<Tablespace>>, iters: u64) -> Duration {
        let one = |t: usize| {
            let mut f = self.flushers[t].lock().unwrap_or_else(|e| panic!("{e}"));
            let Flusher { images, rng } = &mut *f;
            for _ in 0..iters {
                self.flush_one(spaces, t, images, rng);
            }
        };
        let start = Instant::now();
        if self.flushers.len() == 1 {
            one(0);
        } else {
            std::thread::scope(|s| {
                for t in 0..self.flushers.len() {
                    s.spawn(move || one(t));
                }
            });
        }
        start.elapsed()
    }

    /// One batch of random distinct pages of thread `t`'s slice, through segment `t`.
    fn flush_one(
        &self,
        spaces: &HashMap<u32, Arc<Tablespace>>,
        t: usize,
        owned: &mut [AlignedBuf],
        rng: &mut Rng,
    ) {
        let slice = self.slice;
        let base = rng.next() as u32 % slice;
        let mut ids = Vec::with_capacity(owned.len());
        for (i, img) in owned.iter_mut().enumerate() {
            let p = 1 + t as u32 * slice + (base + i as u32 * 7919) % slice;
            let mut h = FilHeader::read(img).unwrap_or_else(|e| panic!("{e}"));
            h.page_no = p;
            h.write(img).unwrap_or_else(|e| panic!("{e}"));
            ids.push(PageId::new(SPACE, p));
        }
        let refs: Vec<(PageId, &[u8])> = ids
            .iter()
            .zip(owned.iter())
            .map(|(id, img)| (*id, &img[..]))
            .collect();
        self.dw
            .flush_batch(t, &refs, spaces)
            .unwrap_or_else(|e| panic!("{e}"));
    }
}

/// The reference file for the bound's physical terms: preallocated *and written* (no
/// unwritten extents), opened with O_DIRECT.
struct ReferenceFile {
    file: Arc<dyn FileIo>,
    /// A batch's segment bytes in the memory the segments use (huge pages where they fit).
    batch_bytes: BatchBuf,
    /// The same bytes in ordinary 4 KiB pages.
    batch_bytes_4k: AlignedBuf,
    small: AlignedBuf,
}

impl ReferenceFile {
    fn new(path: &std::path::Path, batch: usize) -> ReferenceFile {
        let file = check(
            SyncBackend::new().open(path, &OpenOptions::new(FlushMethod::ODirect).create(true)),
        );
        let header = header_block_len(SIZE, batch);
        let len = header + batch * SIZE.bytes();
        let mut batch_bytes_4k = check(AlignedBuf::new(len));
        check(
            file.write_at(&batch_bytes_4k, 0)
                .and_then(|()| file.sync_data()),
        );
        batch_bytes_4k.fill(0x5A);
        let mut batch_bytes = BatchBuf::new(len, header, true).unwrap_or_else(|e| panic!("{e}"));
        batch_bytes.fill(0x5A);
        ReferenceFile {
            file,
            batch_bytes,
            batch_bytes_4k,
            small: check(AlignedBuf::new(4096)),
        }
    }

    /// One write of a batch's segment bytes, timed until it returns (then synced, untimed).
    fn seq(&self, bytes: &[u8]) -> f64 {
        let start = Instant::now();
        check(self.file.write_at(bytes, 0));
        let t = ms(start.elapsed());
        check(self.file.sync_data());
        t
    }

    /// A 4 KiB overwrite + `fdatasync`.
    fn sync(&self) -> f64 {
        let start = Instant::now();
        check(
            self.file
                .write_at(&self.small, 0)
                .and_then(|()| self.file.sync_data()),
        );
        ms(start.elapsed())
    }

    /// A batch write and its `fdatasync`, together.
    fn seq_sync(&self) -> f64 {
        let start = Instant::now();
        check(
            self.file
                .write_at(&self.batch_bytes, 0)
                .and_then(|()| self.file.sync_data()),
        );
        ms(start.elapsed())
    }

    /// All the terms, once each.
    fn measure(&self) -> Terms {
        Terms {
            seq: self.seq(&self.batch_bytes),
            seq_4k: self.seq(&self.batch_bytes_4k),
            sync: self.sync(),
            seq_sync: self.seq_sync(),
        }
    }
}

/// The physical terms of one round, in milliseconds.
#[derive(Debug, Clone, Copy)]
struct Terms {
    /// The batch write from huge pages (the disk's sequential bandwidth as best reached).
    seq: f64,
    /// The same write from 4 KiB pages.
    seq_4k: f64,
    /// A 4 KiB overwrite + `fdatasync`.
    sync: f64,
    /// The batch write and its `fdatasync`.
    seq_sync: f64,
}

/// One round of the bound measurement for one variant, in milliseconds.
#[derive(Debug, Clone, Copy)]
struct BoundRound {
    off: f64,
    on: f64,
    terms: Terms,
    /// Where the on round's batches went (summed over its batches).
    phases: PhaseTimes,
    /// Where the off round's batches went.
    off_phases: PhaseTimes,
}

/// An off and an on doublewrite buffer measured side by side, and their rounds.
struct Variant {
    label: &'static str,
    off: Flushers,
    on: Flushers,
    rounds: Vec<BoundRound>,
}

impl Variant {
    /// One off round and one on round (in the order `on_first` says), with their phases.
    fn round(
        &self,
        spaces: &HashMap<u32, Arc<Tablespace>>,
        on_first: bool,
    ) -> (f64, f64, PhaseTimes, PhaseTimes) {
        let on_before = self.on.dw.stats().phase_times();
        let off_before = self.off.dw.stats().phase_times();
        let (off, on) = if on_first {
            let on = self.on.run(spaces, 1);
            (self.off.run(spaces, 1), on)
        } else {
            let off = self.off.run(spaces, 1);
            (off, self.on.run(spaces, 1))
        };
        (
            ms(off),
            ms(on),
            self.on.dw.stats().phase_times().since(&on_before),
            self.off.dw.stats().phase_times().since(&off_before),
        )
    }
}

/// Prints the bound for `on` and the fraction reached (see the module docs): medians of the
/// terms, and the median of the per-round fractions; then where off's and on's batches went.
fn print_bound(name: &str, batch: usize, threads: usize, rounds: &[BoundRound]) {
    if rounds.is_empty() {
        return;
    }
    let t = threads as f64;
    let col = |f: fn(&BoundRound) -> f64| median(rounds.iter().map(f).collect());
    let bound = |r: &BoundRound| r.off + t * r.terms.seq + r.terms.sync;
    // The sync that follows a batch write, instead of after a 4 KiB one.
    let durable = |r: &BoundRound| r.off + t * r.terms.seq_sync;
    let fraction = median(rounds.iter().map(|r| bound(r) / r.on).collect());
    let durable_fraction = median(rounds.iter().map(|r| durable(r) / r.on).collect());
    eprintln!(
        "bound {name}: off {:.2} ms + seq {:.2} ms + sync {:.2} ms = {:.2} ms; on {:.2} ms \
         -> fraction {fraction:.2} (durable: off + seq+sync {:.2} ms = {:.2} ms -> \
         {durable_fraction:.2}; seq from 4 KiB pages {:.2} ms; {} rounds)",
        col(|r| r.off),
        t * col(|r| r.terms.seq),
        col(|r| r.terms.sync),
        median(rounds.iter().map(bound).collect()),
        col(|r| r.on),
        t * col(|r| r.terms.seq_sync),
        median(rounds.iter().map(durable).collect()),
        t * col(|r| r.terms.seq_4k),
        rounds.len(),
    );
    // Bytes per microsecond = MB/s.
    let bytes = (header_block_len(SIZE, batch) + batch * SIZE.bytes()) as f64;
    let flush = col(|r| r.terms.seq_sync) - col(|r| r.terms.sync);
    let durable_bw = if flush > 0.0 {
        format!("{:.0} MB/s", bytes / 1e3 / flush)
    } else {
        "n/a".to_string()
    };
    eprintln!(
        "bound {name}: sequential bandwidth {:.0} MB/s until the write returns, {durable_bw} \
         durable (bytes / (seq+sync - sync))",
        bytes / 1e3 / col(|r| r.terms.seq),
    );
    for (mode, pick) in [
        (
            "off",
            (|r: &BoundRound| r.off_phases) as fn(&BoundRound) -> PhaseTimes,
        ),
        ("on", |r: &BoundRound| r.phases),
    ] {
        let phase = |f: fn(&PhaseTimes) -> u64| {
            let per_batch = |r: &BoundRound| {
                let p = pick(r);
                f(&p) as f64 / 1e6 / p.batches.max(1) as f64
            };
            median(rounds.iter().map(per_batch).collect())
        };
        eprintln!(
            "bound {name}: {mode}'s batches, medians: prepare {:.2} + seg write {:.2} + seg sync \
             {:.2} + in place {:.2} + data sync {:.2}; batch {:.2} ms",
            phase(|p| p.prepare_ns),
            phase(|p| p.segment_write_ns),
            phase(|p| p.segment_sync_ns),
            phase(|p| p.in_place_write_ns),
            phase(|p| p.data_sync_ns),
            phase(|p| p.batch_ns),
        );
    }
}

fn doublewrite(c: &mut Criterion) {
    let dir = bench_dir();
    let pages = pages_in_space().max(256);
    let backends = backends();
    let spaces: Vec<HashMap<u32, Arc<Tablespace>>> = backends
        .iter()
        .map(|(name, backend)| {
            let path = dir.path().join(format!("t-{name}.ibd"));
            [(SPACE, setup_space(&**backend, &path, pages))].into()
        })
        .collect();

    // Throughput of each mode, and where its batches' time went.
    let mut g = c.benchmark_group("doublewrite");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(2));
    g.warm_up_time(Duration::from_millis(500));
    for ((backend_name, backend), spaces) in backends.iter().zip(&spaces) {
        for batch in BATCHES {
            for threads in THREADS {
                for mode in MODES {
                    let name = format!("{mode}/batch{batch}/{backend_name}/{threads}t");
                    let seg_dir = dir.path().join(name.replace('/', "-"));
                    let f = Flushers::new(&**backend, &seg_dir, mode, batch, threads, pages, true);
                    let clock = Clock::default();
                    let before = f.dw.stats().phase_times();
                    g.throughput(Throughput::Elements((batch * threads) as u64));
                    let id = BenchmarkId::new(
                        format!("{mode}/batch{batch}/{backend_name}"),
                        format!("{threads}t"),
                    );
                    g.bench_function(id, |b| {
                        b.iter_custom(|iters| {
                            let elapsed = f.run(spaces, iters);
                            clock.add(elapsed, iters);
                            elapsed
                        })
                    });
                    let Some(round) = clock.ms_per_round() else {
                        continue; // filtered out
                    };
                    let phases = f.dw.stats().phase_times().since(&before).per_batch();
                    eprintln!("phases {name}: {phases}; {round:.2} ms per round");
                }
            }
        }
    }
    g.finish();

    // With MINNOW_BENCH_COMPARE_4K=1, the same rounds also run with batch buffers in ordinary
    // 4 KiB pages (`huge_pages(false)`), interleaved, labelled "-4k".
    let huge_variants: &[(&str, bool)] = if std::env::var_os("MINNOW_BENCH_COMPARE_4K").is_some() {
        &[("", true), ("-4k", false)]
    } else {
        &[("", true)]
    };

    // The bound for "on": off and on rounds interleaved with the physical terms, round by
    // round, so that all of them see the same disk weather.
    let mut g = c.benchmark_group("doublewrite/bound");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(2));
    g.warm_up_time(Duration::from_millis(500));
    for ((backend_name, backend), spaces) in backends.iter().zip(&spaces) {
        for batch in BATCHES {
            let reference = ReferenceFile::new(
                &dir.path()
                    .join(format!("reference-{backend_name}-{batch}.bin")),
                batch,
            );
            for threads in THREADS {
                let name = format!("batch{batch}/{backend_name}/{threads}t");
                let base = dir.path().join(format!("bound-{}", name.replace('/', "-")));
                let mut variants: Vec<Variant> = huge_variants
                    .iter()
                    .map(|&(label, huge)| {
                        let [off, on] = [DoublewriteMode::Off, DoublewriteMode::On].map(|mode| {
                            let seg_dir = base.join(format!("{mode}{label}"));
                            Flushers::new(&**backend, &seg_dir, mode, batch, threads, pages, huge)
                        });
                        Variant {
                            label,
                            off,
                            on,
                            rounds: Vec::new(),
                        }
                    })
                    .collect();
                g.throughput(Throughput::Elements((batch * threads) as u64));
                let id = BenchmarkId::new(
                    format!("batch{batch}/{backend_name}"),
                    format!("{threads}t"),
                );
                let mut k = 0u64;
                g.bench_function(id, |b| {
                    b.iter_custom(|iters| {
                        let mut on_total = 0.0;
                        for _ in 0..iters {
                            // Alternate which of off and on goes first.
                            let measured: Vec<_> = variants
                                .iter()
                                .map(|v| v.round(spaces, k % 2 == 1))
                                .collect();
                            k += 1;
                            let terms = reference.measure();
                            for (v, (off, on, phases, off_phases)) in
                                variants.iter_mut().zip(measured)
                            {
                                v.rounds.push(BoundRound {
                                    off,
                                    on,
                                    terms,
                                    phases,
                                    off_phases,
                                });
                            }
                            on_total += variants
                                .first()
                                .map_or(0.0, |v| v.rounds.last().map_or(0.0, |r| r.on));
                        }
                        Duration::from_secs_f64(on_total / 1e3)
                    })
                });
                for v in &variants {
                    print_bound(&format!("{name}{}", v.label), batch, threads, &v.rounds);
                }
            }
        }
    }
    g.finish();

    // The physical terms on their own, as Criterion measurements (for the HTML report).
    let mut r = c.benchmark_group("doublewrite/reference");
    r.sample_size(10);
    r.measurement_time(Duration::from_secs(2));
    let reference = ReferenceFile::new(&dir.path().join("seq.bin"), 128);
    r.throughput(Throughput::Bytes(reference.batch_bytes.len() as u64));
    r.bench_function("seq_write_batch128", |b| {
        b.iter(|| check(reference.file.write_at(&reference.batch_bytes, 0)))
    });
    r.bench_function("seq_write_batch128_fdatasync", |b| {
        b.iter(|| reference.seq_sync())
    });
    r.throughput(Throughput::Elements(1));
    r.bench_function("overwrite4k_fdatasync", |b| b.iter(|| reference.sync()));
    r.finish();
}

criterion_group!(benches, doublewrite);
criterion_main!(benches);
