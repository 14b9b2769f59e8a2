//! The status snapshot as JSON ([`Status::to_json`]): written by `serde_json` from the section
//! structs of the parent module, which derive `Serialize`, and from small views of the structs
//! that live in lower crates (the adaptive hash index, the zip cache and the compressed
//! tablespaces), which give those InnoDB's names without the lower crates knowing the JSON.

use std::time::Duration;

use minnow_buf::ZipCacheStats;
use serde::Serialize;

use super::{
    BufferPoolStatus, DoublewriteStatus, RedoStatus, RowStatus, STATUS_FORMAT, STATUS_VERSION,
    Status, TransactionStatus, ZipSpaceStatus,
};

impl Status {
    /// The snapshot as one JSON object: `format`, `version`, `pid`, `interval_ms` (the
    /// status file's refresh interval, 0 for a snapshot taken by hand), `uptime_ms`,
    /// `taken_at_unix_ms`, `not_built`, then one object per section (`buffer_pool`, `redo`,
    /// `doublewrite` if on, `rows`, `transactions`, `adaptive_hash_index`, `compression`)
    /// with the fields of its struct; flags (`purge_running`, `enabled`, `cache_io_bound`)
    /// are 0 or 1. `compression` holds the zip cache's counters (prefixed `cache_`) and
    /// `tablespaces`, an array with one object per compressed tablespace (`file`,
    /// `space_id`, `block_size` in bytes, `algorithm`, `pages`, `file_bytes`, then InnoDB's
    /// `compress_ops`, `compress_ops_ok`, `compress_failures`, `compress_time_us`,
    /// `uncompress_ops`, `uncompress_time_us`, and `compress_bytes_in` / `_out`,
    /// `uncompress_bytes_in` / `_out`, `uncompress_errors`). This is the status file's
    /// content; the CLI's `--json` prints the same object. It is written by `serde_json`
    /// from the section structs, which derive `Serialize`; the sections whose structs live
    /// in lower crates (the adaptive hash index, the zip cache and tablespaces) go through
    /// the small views below, which give them InnoDB's names.
    pub fn to_json(&self, interval: Option<Duration>) -> String {
        let json = StatusJson {
            format: STATUS_FORMAT,
            version: STATUS_VERSION,
            pid: std::process::id(),
            interval_ms: interval.map_or(0, |d| d.as_millis() as u64),
            uptime_ms: self.uptime.as_millis() as u64,
            taken_at_unix_ms: self.taken_at_unix_ms,
            not_built: &self.not_built,
            buffer_pool: &self.buffer_pool,
            redo: &self.redo,
            doublewrite: self.doublewrite.as_ref(),
            rows: &self.rows,
            transactions: &self.transactions,
            adaptive_hash_index: AhiJson::from(&self.adaptive_hash_index),
            compression: CompressionJson {
                cache: CacheJson::from(&self.compression.cache),
                tablespaces: self
                    .compression
                    .tablespaces
                    .iter()
                    .map(ZipSpaceJson::from)
                    .collect(),
            },
        };
        // Serialising plain structs of numbers and strings into a String cannot fail.
        serde_json::to_string_pretty(&json).unwrap_or_default()
    }
}

/// Writes a flag as 0 or 1, as the status JSON has always had it.
pub(super) fn flag<S: serde::Serializer>(b: &bool, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_u8(u8::from(*b))
}

/// The status JSON's top level (see [`Status::to_json`]).
#[derive(Serialize)]
struct StatusJson<'a> {
    format: &'static str,
    version: u32,
    pid: u32,
    interval_ms: u64,
    uptime_ms: u64,
    taken_at_unix_ms: u64,
    not_built: &'a [&'static str],
    buffer_pool: &'a BufferPoolStatus,
    redo: &'a RedoStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    doublewrite: Option<&'a DoublewriteStatus>,
    rows: &'a RowStatus,
    transactions: &'a TransactionStatus,
    adaptive_hash_index: AhiJson,
    compression: CompressionJson,
}

/// [`minnow_ahi::AhiStats`] in the status JSON.
#[derive(Serialize)]
struct AhiJson {
    #[serde(serialize_with = "flag")]
    enabled: bool,
    lookups: u64,
    hits: u64,
    misses: u64,
    descents_avoided: u64,
    pages_hashed: u64,
    pages_built: u64,
    pages_dropped: u64,
    entries: u64,
    refused: u64,
    memory_bytes: u64,
    memory_limit: u64,
}

impl From<&minnow_ahi::AhiStats> for AhiJson {
    fn from(a: &minnow_ahi::AhiStats) -> AhiJson {
        AhiJson {
            enabled: a.enabled,
            lookups: a.lookups,
            hits: a.hits,
            misses: a.misses,
            descents_avoided: a.descents_avoided,
            pages_hashed: a.pages_hashed,
            pages_built: a.pages_built,
            pages_dropped: a.pages_dropped,
            entries: a.entries,
            refused: a.refused,
            memory_bytes: a.memory_bytes,
            memory_limit: a.memory_limit,
        }
    }
}

/// The COMPRESSION section in the status JSON: the zip cache's counters flattened into it
/// with a `cache_` prefix, then the tablespaces.
#[derive(Serialize)]
struct CompressionJson {
    #[serde(flatten)]
    cache: CacheJson,
    tablespaces: Vec<ZipSpaceJson>,
}

/// [`ZipCacheStats`] in the status JSON.
#[derive(Serialize)]
struct CacheJson {
    cache_blocks: u64,
    cache_block_bytes: u64,
    cache_frames_lent: u64,
    cache_zip_hits: u64,
    cache_zip_misses: u64,
    cache_blocks_evicted: u64,
    cache_frames_borrowed: u64,
    cache_frames_returned: u64,
    cache_writes_from_cache: u64,
    #[serde(serialize_with = "flag")]
    cache_io_bound: bool,
}

impl From<&ZipCacheStats> for CacheJson {
    fn from(c: &ZipCacheStats) -> CacheJson {
        CacheJson {
            cache_blocks: c.blocks,
            cache_block_bytes: c.block_bytes,
            cache_frames_lent: c.frames_lent,
            cache_zip_hits: c.zip_hits,
            cache_zip_misses: c.zip_misses,
            cache_blocks_evicted: c.blocks_evicted,
            cache_frames_borrowed: c.frames_borrowed,
            cache_frames_returned: c.frames_returned,
            cache_writes_from_cache: c.writes_from_cache,
            cache_io_bound: c.io_bound,
        }
    }
}

/// One compressed tablespace in the status JSON, with InnoDB's `INNODB_CMP` names.
#[derive(Serialize)]
struct ZipSpaceJson {
    file: String,
    space_id: u32,
    block_size: usize,
    algorithm: String,
    pages: u64,
    file_bytes: u64,
    compress_ops: u64,
    compress_ops_ok: u64,
    compress_failures: u64,
    compress_time_us: u64,
    compress_bytes_in: u64,
    compress_bytes_out: u64,
    uncompress_ops: u64,
    uncompress_errors: u64,
    uncompress_time_us: u64,
    uncompress_bytes_in: u64,
    uncompress_bytes_out: u64,
}

impl From<&ZipSpaceStatus> for ZipSpaceJson {
    fn from(t: &ZipSpaceStatus) -> ZipSpaceJson {
        let z = &t.stats;
        ZipSpaceJson {
            file: t.file.clone(),
            space_id: t.space_id,
            block_size: t.block_size.bytes(),
            algorithm: t.algorithm.to_string(),
            pages: t.pages,
            file_bytes: t.file_bytes,
            compress_ops: z.compress_ops,
            compress_ops_ok: z.compress_ok(),
            compress_failures: z.compress_failures,
            compress_time_us: z.compress_time.as_micros() as u64,
            compress_bytes_in: z.compress_bytes_in,
            compress_bytes_out: z.compress_bytes_out,
            uncompress_ops: z.decompress_ops,
            uncompress_errors: z.decompress_errors,
            uncompress_time_us: z.decompress_time.as_micros() as u64,
            uncompress_bytes_in: z.decompress_bytes_in,
            uncompress_bytes_out: z.decompress_bytes_out,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::SECTIONS_NOT_BUILT;
    use super::*;

    #[test]
    fn json_shape() {
        let s = Status {
            doublewrite: Some(DoublewriteStatus {
                batches: 2,
                ..DoublewriteStatus::default()
            }),
            not_built: SECTIONS_NOT_BUILT.to_vec(),
            ..Status::default()
        };
        let j = s.to_json(Some(Duration::from_millis(250)));
        assert!(j.starts_with("{\n  \"format\": \"minnow-status\""), "{j}");
        assert!(j.contains("\"interval_ms\": 250"), "{j}");
        assert!(j.contains("\"doublewrite\": {\n    \"batches\": 2,"), "{j}");
        assert!(j.contains("\"not_built\": []"), "{j}");
        assert!(
            j.contains("\"transactions\": {\n    \"next_trx_id\": 0,"),
            "{j}"
        );
        assert!(j.ends_with("\n  }\n}"), "{j}");
        assert!(j.contains("\"tablespaces\": []"), "{j}");
        assert!(
            j.contains("\"pages_built\": 0,\n    \"pages_dropped\": 0,"),
            "{j}"
        );
        // Every key the hand-written JSON had, in its order, section by section.
        let v: serde_json::Value = serde_json::from_str(&j).unwrap();
        let keys = |o: &serde_json::Value| -> Vec<String> {
            o.as_object().unwrap().keys().cloned().collect()
        };
        let want: &[(&str, &[&str])] = &[
            (
                "",
                &[
                    "format",
                    "version",
                    "pid",
                    "interval_ms",
                    "uptime_ms",
                    "taken_at_unix_ms",
                    "not_built",
                    "buffer_pool",
                    "redo",
                    "doublewrite",
                    "rows",
                    "transactions",
                    "adaptive_hash_index",
                    "compression",
                ],
            ),
            (
                "buffer_pool",
                &[
                    "frames",
                    "page_size",
                    "free",
                    "lru",
                    "young",
                    "old",
                    "dirty",
                    "hits",
                    "misses",
                    "hit_rate",
                    "reads",
                    "read_ahead",
                    "writes",
                    "flushed_list",
                    "flushed_lru",
                    "evictions",
                    "made_young",
                    "not_young",
                ],
            ),
            (
                "redo",
                &[
                    "current_lsn",
                    "written_lsn",
                    "flushed_lsn",
                    "checkpoint_lsn",
                    "checkpoint_age",
                    "capacity",
                    "mtr_commits",
                    "bytes",
                    "writes",
                    "syncs",
                    "checkpoints",
                    "space_waits",
                    "space_wait_ns",
                ],
            ),
            (
                "doublewrite",
                &["batches", "pages", "in_place_pages", "syncs"],
            ),
            (
                "rows",
                &[
                    "read",
                    "inserted",
                    "updated",
                    "deleted",
                    "sec_cluster_reads",
                    "sec_cluster_reads_avoided",
                ],
            ),
            (
                "transactions",
                &[
                    "next_trx_id",
                    "active",
                    "history_len",
                    "open_views",
                    "oldest_view_age",
                    "undo_pages",
                    "undo_pages_freed",
                    "purge_running",
                    "purge_logs",
                    "purge_records",
                    "purge_clustered_removed",
                    "purge_secondary_removed",
                    "purge_batches",
                    "purge_errors",
                    "row_locks",
                    "lock_waiting",
                    "lock_waits",
                    "deadlocks",
                    "lock_timeouts",
                ],
            ),
            (
                "adaptive_hash_index",
                &[
                    "enabled",
                    "lookups",
                    "hits",
                    "misses",
                    "descents_avoided",
                    "pages_hashed",
                    "pages_built",
                    "pages_dropped",
                    "entries",
                    "refused",
                    "memory_bytes",
                    "memory_limit",
                ],
            ),
            (
                "compression",
                &[
                    "cache_blocks",
                    "cache_block_bytes",
                    "cache_frames_lent",
                    "cache_zip_hits",
                    "cache_zip_misses",
                    "cache_blocks_evicted",
                    "cache_frames_borrowed",
                    "cache_frames_returned",
                    "cache_writes_from_cache",
                    "cache_io_bound",
                    "tablespaces",
                ],
            ),
        ];
        for (section, names) in want {
            let o = if section.is_empty() { &v } else { &v[*section] };
            let mut got = keys(o);
            let mut names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
            got.sort();
            names.sort();
            assert_eq!(got, names, "section {section:?}");
        }
        assert_eq!(v["transactions"]["purge_running"], 0);
        assert_eq!(v["adaptive_hash_index"]["enabled"], 0);
        let off = Status::default().to_json(None);
        assert!(!off.contains("doublewrite"), "{off}");
        assert!(off.contains("\"not_built\": []"), "{off}");
    }
}
