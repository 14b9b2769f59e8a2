//! Experiment E3 (issue 7): table compression, in two parts.
//!
//! **The codec** (the groundwork): what compressing minnow's own B-tree pages costs and saves,
//! measured on the codec alone. **The IO-bound reads**: the same text-like table compressed
//! (8 KiB blocks, zlib level 6) and uncompressed, read cold with the buffer pool at 1/8 of the
//! uncompressed table and `O_DIRECT` ([`minnow_workload::e3`], which `minnow bench
//! compression` runs at full size; see docs/EXPERIMENTS.md, "E3").
//!
//! The codec's pages are real: the bench creates a database, bulk-loads the text-like
//! `articles` table of [`minnow_workload::textgen`] with [`minnow::Table::load`], closes the
//! database (so every page is on disk), reads `ibdata1` and keeps the **leaf pages of the
//! table's clustered index** (page type INDEX, level 0, the index id with the most pages).
//! Each is a 16 KiB logical page as the engine wrote it: records, free space, page directory,
//! FIL header and trailer.
//!
//! ## What it prints
//!
//! - Criterion groups `e3_compress/<algorithm>` and `e3_decompress/<algorithm>`: one page
//!   compressed into (or restored from) an 8 KiB block (16 KiB when it does not fit 8), the
//!   pages taken in turn.
//! - Then the **same-run table**, for zlib levels 1, 6 and 9 and LZ4: per page, the median over
//!   `ROUNDS` of the mean compress and decompress time in µs (compressing into a 16 KiB block,
//!   so every page "fits" and the payload length is the compressed size); the compression
//!   ratio (sum of payload bytes / sum of 16 KiB); and the share of pages that fit an 8, 4, 2
//!   and 1 KiB block (each found by compressing into that block size, as a table with that
//!   `KEY_BLOCK_SIZE` would). Written also as CSV to `<criterion dir>/e3_compression/results.csv`.
//! - Criterion group `e3_io/<workload>/<layout>`: time per query of point selects and of
//!   filesort-order fetches (`MINNOW_E3_IO_FILESORT_ROWS` rows by primary key in hash order),
//!   uncompressed and `zlib6_8k`; every sample opens the database afresh (a cold pool of 1/8
//!   of the uncompressed table, `O_DIRECT`) and times the queries of its window.
//! - Then a **same-run IO table**: one window of `MINNOW_E3_IO_SECS` per workload and layout,
//!   alternating layouts: queries per second, user CPU seconds, the readers' blocked (IO wait)
//!   seconds, pages read, zip hits and misses, µs per decompression. Written also as CSV to
//!   `<criterion dir>/e3_io/results.csv`.
//!
//! ## Knobs (environment variables)
//!
//! | variable | default | what |
//! |---|---|---|
//! | `MINNOW_E3_ROWS` | 20000 | rows of `articles` loaded for the codec part (about 20 per leaf page) |
//! | `MINNOW_E3_ROUNDS` | 5 | rounds of the codec's same-run table |
//! | `MINNOW_E3_SEED` | 1 | the generator's seed |
//! | `MINNOW_E3_IO_ROWS` | 40000 | rows of the IO-bound part's table (about 32 MB uncompressed, a 4 MiB pool) |
//! | `MINNOW_E3_IO_THREADS` | 4 | reader threads of the IO-bound part |
//! | `MINNOW_E3_IO_SECS` | 5 | seconds per window of the IO-bound same-run table |
//! | `MINNOW_E3_IO_FILESORT_ROWS` | 200 | rows per filesort query in the Criterion group |
//! | `MINNOW_BENCH_DIR` | the temp dir | where the databases go (use a real disk: `O_DIRECT`) |
//!
//! `cargo test --bench compression` (CI) runs each Criterion bench once, one
//! round of the codec table on 2,000 rows, and the IO part on 3,000 rows with windows of a
//! few queries.

mod common;
use common::{bench_dir, criterion_dir, env_num, median, write_csv};

use std::collections::HashMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use minnow::FlushMethod;
use minnow::{Config, Database};
use minnow_page::fil::{self, FilHeader};
use minnow_page::index::IndexHeader;
use minnow_page::{PageSize, PageType};
use minnow_workload::e3::{self, E3Config, Layout, RunReport, Workload};
use minnow_zip::{Algorithm, Codec, KeyBlockSize, Outcome, ZipConfig, ZipStats, ZlibLevel};

/// limits.md A.2: a random 16 KiB O_DIRECT read at queue depth 1 on this machine, p50. An
/// 8 KiB read moves half the bytes and costs at most this.
const RANDOM_READ_US: f64 = 27.5;

fn algorithms() -> [Algorithm; 4] {
    let z = |l| Algorithm::Zlib(ZlibLevel::new(l).unwrap_or_else(|e| panic!("{e}")));
    [z(1), z(6), z(9), Algorithm::Lz4]
}

/// Leaf pages of the `articles` clustered index, as written to `ibdata1`.
fn leaf_pages(rows: u64, seed: u64) -> Vec<Vec<u8>> {
    let dir = bench_dir();
    let db = Database::create(dir.path(), Config::default()).unwrap_or_else(|e| panic!("{e}"));
    minnow_workload::textgen::load(&db, seed, rows).unwrap_or_else(|e| panic!("load: {e}"));
    db.close().unwrap_or_else(|e| panic!("close: {e}"));
    let file = std::fs::read(dir.path().join(minnow::inspect::SYSTEM_TABLESPACE))
        .unwrap_or_else(|e| panic!("read ibdata1: {e}"));
    let size = PageSize::default().bytes();
    let mut by_index: HashMap<u64, Vec<Vec<u8>>> = HashMap::new();
    for page in file.chunks_exact(size) {
        let Ok(h) = FilHeader::read(page) else {
            continue;
        };
        if h.page_type != PageType::Index {
            continue;
        }
        let Ok(ih) = IndexHeader::read(page) else {
            continue;
        };
        if ih.level == 0 {
            by_index.entry(ih.index_id).or_default().push(page.to_vec());
        }
    }
    by_index
        .into_values()
        .max_by_key(Vec::len)
        .unwrap_or_else(|| panic!("no INDEX leaf pages in ibdata1"))
}

/// Compresses `page` into the smallest of 8 and 16 KiB it fits.
fn block_for(codecs: &mut [Codec; 2], page: &[u8], stats: &mut ZipStats) -> Vec<u8> {
    for codec in codecs.iter_mut() {
        let mut block = vec![0u8; codec.config().block_size.bytes()];
        if let Ok(Outcome::Fits { .. }) = codec.compress_into(page, &mut block, stats) {
            return block;
        }
    }
    panic!("a page fits no block");
}

fn pair(algorithm: Algorithm) -> [Codec; 2] {
    [
        Codec::new(ZipConfig::new(KeyBlockSize::K8, algorithm)),
        Codec::new(ZipConfig::new(KeyBlockSize::K16, algorithm)),
    ]
}

fn criterion_groups(c: &mut Criterion, pages: &[Vec<u8>], test_mode: bool) {
    for (name, decompress) in [("e3_compress", false), ("e3_decompress", true)] {
        let mut g = c.benchmark_group(name);
        g.sample_size(10);
        g.warm_up_time(Duration::from_millis(if test_mode { 1 } else { 300 }));
        g.measurement_time(Duration::from_secs(if test_mode { 1 } else { 3 }));
        for algorithm in algorithms() {
            let mut codecs = pair(algorithm);
            let mut stats = ZipStats::default();
            let blocks: Vec<Vec<u8>> = pages
                .iter()
                .map(|p| block_for(&mut codecs, p, &mut stats))
                .collect();
            let mut out = vec![0u8; PageSize::default().bytes()];
            let mut i = 0usize;
            g.bench_function(algorithm.to_string(), |b| {
                b.iter(|| {
                    i = (i + 1) % pages.len();
                    if decompress {
                        let r = codecs[0].decompress_into(&blocks[i], &mut out, &mut stats);
                        black_box(r.is_ok())
                    } else {
                        black_box(!block_for(&mut codecs, &pages[i], &mut stats).is_empty())
                    }
                })
            });
        }
        g.finish();
    }
}

struct Row {
    algorithm: Algorithm,
    compress_us: f64,
    decompress_us: f64,
    ratio: f64,
    fits: [f64; 4],
}

fn same_run_table(pages: &[Vec<u8>], rounds: usize) -> Vec<Row> {
    let n = pages.len() as f64;
    let page_bytes = PageSize::default().bytes();
    algorithms()
        .into_iter()
        .map(|algorithm| {
            let mut codec = Codec::new(ZipConfig::new(KeyBlockSize::K16, algorithm));
            let mut stats = ZipStats::default();
            let mut blocks: Vec<Vec<u8>> = vec![vec![0u8; page_bytes]; pages.len()];
            let mut payload = 0usize;
            let (mut cus, mut dus) = (Vec::new(), Vec::new());
            let mut out = vec![0u8; page_bytes];
            for _ in 0..rounds {
                payload = 0;
                let t = Instant::now();
                for (page, block) in pages.iter().zip(blocks.iter_mut()) {
                    match codec.compress_into(page, block, &mut stats) {
                        Ok(Outcome::Fits { payload_len }) => payload += payload_len,
                        other => panic!("{algorithm}: 16 KiB block: {other:?}"),
                    }
                }
                cus.push(t.elapsed().as_secs_f64() * 1e6 / n);
                let t = Instant::now();
                for block in &blocks {
                    codec
                        .decompress_into(block, &mut out, &mut stats)
                        .unwrap_or_else(|e| panic!("{algorithm}: {e}"));
                    black_box(&out);
                }
                dus.push(t.elapsed().as_secs_f64() * 1e6 / n);
            }
            // Outside the timed loops: every page comes back byte for byte.
            for (page, block) in pages.iter().zip(&blocks) {
                codec
                    .decompress_into(block, &mut out, &mut stats)
                    .unwrap_or_else(|e| panic!("{algorithm}: {e}"));
                assert_eq!(&out, page, "{algorithm}: round trip");
            }
            let mut fits = [0.0; 4];
            for (share, size) in fits.iter_mut().zip([
                KeyBlockSize::K8,
                KeyBlockSize::K4,
                KeyBlockSize::K2,
                KeyBlockSize::K1,
            ]) {
                let mut c = Codec::new(ZipConfig::new(size, algorithm));
                let mut s = ZipStats::default();
                let mut block = vec![0u8; size.bytes()];
                for page in pages {
                    c.compress_into(page, &mut block, &mut s)
                        .unwrap_or_else(|e| panic!("{e}"));
                }
                *share = s.compress_ok() as f64 / n;
            }
            Row {
                algorithm,
                compress_us: median(cus),
                decompress_us: median(dus),
                ratio: payload as f64 / (n * page_bytes as f64),
                fits,
            }
        })
        .collect()
}

fn e3(c: &mut Criterion) {
    let test_mode = common::test_mode();
    let rows: u64 = env_num("MINNOW_E3_ROWS", if test_mode { 2_000 } else { 20_000 });
    let rounds: usize = env_num("MINNOW_E3_ROUNDS", if test_mode { 1 } else { 5 });
    let seed: u64 = env_num("MINNOW_E3_SEED", 1);
    let pages = leaf_pages(rows, seed);
    let recs: u64 = pages
        .iter()
        .map(|p| u64::from(IndexHeader::read(p).map_or(0, |h| h.n_recs)))
        .sum();
    eprintln!(
        "e3: {rows} textgen rows -> {} leaf pages of 16 KiB, {:.1} records per page (FIL header: {} bytes kept uncompressed)",
        pages.len(),
        recs as f64 / pages.len() as f64,
        fil::HEADER_SIZE
    );

    criterion_groups(c, &pages, test_mode);

    let table = same_run_table(&pages, rounds);
    eprintln!(
        "e3: {} pages, median of {rounds} rounds; target: decompress <= {RANDOM_READ_US} µs (one random read, limits.md A.2); ratio <= 0.50",
        pages.len()
    );
    eprintln!(
        "e3: {:<7} {:>12} {:>14} {:>7} {:>7} {:>7} {:>7} {:>7}",
        "algo", "compress µs", "decompress µs", "ratio", "fit 8K", "fit 4K", "fit 2K", "fit 1K"
    );
    let mut rows = Vec::new();
    for r in &table {
        eprintln!(
            "e3: {:<7} {:>12.1} {:>14.1} {:>7.3} {:>6.0}% {:>6.0}% {:>6.0}% {:>6.0}%",
            r.algorithm.to_string(),
            r.compress_us,
            r.decompress_us,
            r.ratio,
            r.fits[0] * 100.0,
            r.fits[1] * 100.0,
            r.fits[2] * 100.0,
            r.fits[3] * 100.0
        );
        rows.push(vec![
            r.algorithm.to_string(),
            pages.len().to_string(),
            format!("{:.2}", r.compress_us),
            format!("{:.2}", r.decompress_us),
            format!("{:.4}", r.ratio),
            format!("{:.4}", r.fits[0]),
            format!("{:.4}", r.fits[1]),
            format!("{:.4}", r.fits[2]),
            format!("{:.4}", r.fits[3]),
        ]);
    }
    write_csv(
        "e3",
        &criterion_dir().join("e3_compression").join("results.csv"),
        "algorithm,pages,compress_us,decompress_us,ratio,fit_8k,fit_4k,fit_2k,fit_1k",
        &rows,
    );
}

/// The IO-bound part: both layouts loaded once, then Criterion's group and the same-run
/// table.
fn e3_io(c: &mut Criterion) {
    let test_mode = common::test_mode();
    let rows: u64 = env_num("MINNOW_E3_IO_ROWS", if test_mode { 3_000 } else { 40_000 });
    let threads: usize = env_num("MINNOW_E3_IO_THREADS", 4);
    let secs: f64 = env_num("MINNOW_E3_IO_SECS", if test_mode { 0.05 } else { 5.0 });
    let filesort_rows: u64 = env_num("MINNOW_E3_IO_FILESORT_ROWS", 200);
    let mut cfg = E3Config {
        rows,
        threads,
        seed: env_num("MINNOW_E3_SEED", 1),
        duration: Duration::from_secs_f64(secs),
        max_queries: test_mode.then_some(20),
        filesort_rows: if test_mode { 50 } else { filesort_rows },
        ..E3Config::default()
    };
    let dir = bench_dir();
    let layouts = [Layout::Uncompressed, Layout::Zlib6];
    let first = dir.path().join(layouts[0].name());
    let mut loads = vec![match e3::prepare(&first, layouts[0], &cfg) {
        Ok(p) => p,
        Err(e) => {
            eprintln!(
                "e3_io: note: O_DIRECT refused here ({e}); using fsync, so the OS cache may serve reads"
            );
            cfg.base.flush_method = FlushMethod::Fsync;
            let _ = std::fs::remove_dir_all(&first);
            e3::prepare(&first, layouts[0], &cfg).unwrap_or_else(|e| panic!("prepare: {e}"))
        }
    }];
    for &l in &layouts[1..] {
        loads.push(
            e3::prepare(&dir.path().join(l.name()), l, &cfg)
                .unwrap_or_else(|e| panic!("prepare: {e}")),
        );
    }
    let pool = cfg.pool_bytes(loads[0].table_bytes);
    for p in &loads {
        eprintln!(
            "e3_io: {} rows {:<12}: {} bytes in {} ({:.3} of uncompressed); pool {pool} bytes",
            rows,
            p.layout.name(),
            p.table_bytes,
            p.table_file,
            p.table_bytes as f64 / loads[0].table_bytes.max(1) as f64
        );
    }

    for workload in [Workload::Point, Workload::Filesort] {
        let mut g = c.benchmark_group(format!("e3_io/{}", workload.name()));
        g.sample_size(10);
        g.warm_up_time(Duration::from_millis(if test_mode { 1 } else { 500 }));
        g.measurement_time(Duration::from_secs(if test_mode { 1 } else { 10 }));
        for layout in layouts {
            let path = dir.path().join(layout.name());
            g.bench_function(layout.name(), |b| {
                b.iter_custom(|iters| {
                    // A cold window of `iters` queries: the time per query it measured.
                    let window = E3Config {
                        max_queries: Some(iters),
                        duration: Duration::from_secs(600),
                        ..cfg.clone()
                    };
                    let r = e3::run(&path, layout, workload, &window, pool)
                        .unwrap_or_else(|e| panic!("{e}"));
                    Duration::from_secs_f64(r.seconds / r.queries.max(1) as f64 * iters as f64)
                })
            });
        }
        g.finish();
    }

    let mut runs: Vec<RunReport> = Vec::new();
    for workload in Workload::ALL {
        for layout in layouts {
            let r = e3::run(
                &dir.path().join(layout.name()),
                layout,
                workload,
                &cfg,
                pool,
            )
            .unwrap_or_else(|e| panic!("{e}"));
            runs.push(r);
        }
    }
    eprintln!(
        "e3_io: same run, {threads} threads, {secs} s per window, pool {pool} bytes (1/8 of the uncompressed table, at least 4 MiB), {:?}",
        cfg.base.flush_method
    );
    eprintln!(
        "e3_io: {:<10} {:<12} {:>10} {:>8} {:>10} {:>8} {:>9} {:>9} {:>8}",
        "workload",
        "layout",
        "qps",
        "user s",
        "blocked s",
        "pages",
        "zip hits",
        "zip miss",
        "µs/unzip"
    );
    let mut rows = Vec::new();
    for r in &runs {
        eprintln!(
            "e3_io: {:<10} {:<12} {:>10.1} {:>8.2} {:>10.2} {:>8} {:>9} {:>9} {:>8.1}",
            r.workload.name(),
            r.layout.name(),
            r.qps,
            r.cpu.user_s,
            r.cpu.readers_blocked_s,
            r.pages_read + r.read_ahead,
            r.zip_hits,
            r.zip_misses,
            r.decompress_us
        );
        rows.push(vec![
            r.workload.name().to_string(),
            r.layout.name().to_string(),
            format!("{:.3}", r.seconds),
            r.queries.to_string(),
            r.rows.to_string(),
            format!("{:.1}", r.qps),
            format!("{:.2}", r.cpu.user_s),
            format!("{:.2}", r.cpu.sys_s),
            format!("{:.2}", r.cpu.readers_blocked_s),
            (r.pages_read + r.read_ahead).to_string(),
            r.zip_hits.to_string(),
            r.zip_misses.to_string(),
            r.decompress_ops.to_string(),
            format!("{:.2}", r.decompress_us),
        ]);
    }
    write_csv(
        "e3_io",
        &criterion_dir().join("e3_io").join("results.csv"),
        "workload,layout,seconds,queries,rows,qps,user_s,sys_s,readers_blocked_s,pages_read,zip_hits,zip_misses,decompress_ops,decompress_us",
        &rows,
    );
}

criterion_group!(benches, e3, e3_io);
criterion_main!(benches);
