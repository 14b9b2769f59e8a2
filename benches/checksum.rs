//! Experiment E5, first half: what a page checksum costs.
//!
//! The seed article (004, "On checksums") timed InnoDB's legacy formula against a Fletcher
//! checksum over 10,000 pages. This bench measures the cost per page of every algorithm minnow
//! knows, for every page size, as the time to *stamp* a page (compute and store its checksum,
//! which is what a page write costs) and, for the production algorithms, to *verify* it (what
//! a page read costs). `crc32c crate, whole page` is the reference the foundation issue set:
//! one call of the `crc32c` crate over the whole page; `crc32c minnow, whole page` is the same
//! call to minnow's own CRC-32C (`minnow_page::crc`), which `crc32` and `full_crc32` use.
//!
//! Run: `cargo bench --bench checksum`; results and the ratio table are in
//! docs/EXPERIMENTS.md (E5).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use minnow_page::checksum::{self, ChecksumAlgorithm, ChecksumPolicy, experimental};
use minnow_page::fil::FilHeader;
use minnow_page::{PageSize, PageType};
use std::hint::black_box;

fn sample_page(size: PageSize) -> Vec<u8> {
    let mut page = vec![0u8; size.bytes()];
    let mut h = FilHeader::new(1, 7, PageType::Index);
    h.lsn = 0xABCD_0123;
    if h.write(&mut page).is_err() {
        return page;
    }
    let mut x: u32 = 0x9E37_79B9;
    for b in page.iter_mut().take(size.bytes() - 8).skip(38) {
        x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        *b = (x >> 24) as u8;
    }
    page
}

fn stamp_cost(c: &mut Criterion) {
    let mut group = c.benchmark_group("checksum/stamp");
    for size in PageSize::ALL {
        let mut page = sample_page(size);
        group.throughput(Throughput::Bytes(size.bytes() as u64));
        for algorithm in ChecksumAlgorithm::ALL {
            group.bench_with_input(
                BenchmarkId::new(algorithm.name(), size.bytes()),
                &(),
                |b, _| b.iter(|| checksum::stamp(black_box(&mut page), algorithm)),
            );
        }
        group.bench_with_input(BenchmarkId::new("crc32_ieee", size.bytes()), &(), |b, _| {
            b.iter(|| experimental::crc32_ieee(black_box(&page)))
        });
        group.bench_with_input(BenchmarkId::new("fletcher64", size.bytes()), &(), |b, _| {
            b.iter(|| experimental::fletcher64(black_box(&page)))
        });
        group.bench_with_input(
            BenchmarkId::new("crc32c_crate_whole_page", size.bytes()),
            &(),
            |b, _| b.iter(|| crc32c::crc32c(black_box(&page))),
        );
        group.bench_with_input(
            BenchmarkId::new("crc32c_minnow_whole_page", size.bytes()),
            &(),
            |b, _| b.iter(|| minnow_page::crc::crc32c(black_box(&page))),
        );
        group.bench_with_input(
            BenchmarkId::new("crc32fast_whole_page", size.bytes()),
            &(),
            |b, _| b.iter(|| crc32fast::hash(black_box(&page))),
        );
    }
    group.finish();
}

fn verify_cost(c: &mut Criterion) {
    let mut group = c.benchmark_group("checksum/verify");
    for size in PageSize::ALL {
        group.throughput(Throughput::Bytes(size.bytes() as u64));
        for algorithm in ChecksumAlgorithm::ALL {
            let mut page = sample_page(size);
            if checksum::stamp(&mut page, algorithm).is_err() {
                continue;
            }
            let policy = ChecksumPolicy {
                algorithm,
                strict: true,
            };
            group.bench_with_input(
                BenchmarkId::new(algorithm.name(), size.bytes()),
                &(),
                |b, _| b.iter(|| checksum::verify(black_box(&page), policy)),
            );
        }
    }
    group.finish();
}

criterion_group!(benches, stamp_cost, verify_cost);
criterion_main!(benches);
