//! Counters for compression work, in the shape of InnoDB's `INFORMATION_SCHEMA.INNODB_CMP`
//! (`compress_ops`, `compress_ops_ok`, `compress_time`, `uncompress_ops`, `uncompress_time`)
//! plus bytes in and out.
//!
//! The codec adds to a [`ZipStats`] the caller passes in; each compressed tablespace
//! (`minnow_io::Tablespace::zip_stats`) sums what its reads, writes and fit checks did with
//! [`ZipStats::add`], and `minnow::Database::status` reports them per file.

use std::time::Duration;

/// What compressing and decompressing pages cost and achieved. All counters only grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ZipStats {
    /// Pages given to the compressor (fits and failures).
    pub compress_ops: u64,
    /// Pages that did not fit their block: compression failures, which InnoDB answers by
    /// splitting the page.
    pub compress_failures: u64,
    /// Logical page bytes given to the compressor (every attempt).
    pub compress_bytes_in: u64,
    /// Payload bytes of the blocks that fit (headers and padding not counted).
    pub compress_bytes_out: u64,
    /// Wall time spent compressing, failures included.
    pub compress_time: Duration,
    /// Blocks given to the decompressor.
    pub decompress_ops: u64,
    /// Blocks rejected (bad header, checksum, payload or length).
    pub decompress_errors: u64,
    /// Payload bytes read by successful decompressions.
    pub decompress_bytes_in: u64,
    /// Logical page bytes restored.
    pub decompress_bytes_out: u64,
    /// Wall time spent decompressing, verification included.
    pub decompress_time: Duration,
}

impl ZipStats {
    /// Adds `other`'s counters to these.
    pub fn add(&mut self, other: &ZipStats) {
        self.compress_ops += other.compress_ops;
        self.compress_failures += other.compress_failures;
        self.compress_bytes_in += other.compress_bytes_in;
        self.compress_bytes_out += other.compress_bytes_out;
        self.compress_time += other.compress_time;
        self.decompress_ops += other.decompress_ops;
        self.decompress_errors += other.decompress_errors;
        self.decompress_bytes_in += other.decompress_bytes_in;
        self.decompress_bytes_out += other.decompress_bytes_out;
        self.decompress_time += other.decompress_time;
    }

    /// Compressions that fit their block (InnoDB's `compress_ops_ok`).
    pub fn compress_ok(&self) -> u64 {
        self.compress_ops.saturating_sub(self.compress_failures)
    }

    /// Failures as a percentage of compressions (what InnoDB compares with
    /// `innodb_compression_failure_threshold_pct`); 0 before the first one.
    pub fn failure_pct(&self) -> f64 {
        if self.compress_ops == 0 {
            0.0
        } else {
            self.compress_failures as f64 * 100.0 / self.compress_ops as f64
        }
    }
}
