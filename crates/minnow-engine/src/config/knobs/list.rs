//! The list of knobs, [`KNOBS`], one entry per [`Config`] field in the order of the fields,
//! and the parsers and printers the entries share (bytes with a suffix, durations with a
//! unit, on/off).

use std::time::Duration;

use minnow_buf::FlushNeighbors;
use minnow_dblwr::DoublewriteMode;
use minnow_io::FlushMethod;
use minnow_page::PageSize;
use minnow_page::checksum::ChecksumPolicy;
use minnow_redo::FlushAtCommit;

use super::{Acts, Knob};
#[cfg(doc)]
use crate::config::Config;
use crate::config::{AutoIncLockMode, IoBackend};

fn whole<T: TryFrom<u64>>(v: &str) -> Result<T, String> {
    let n: u64 = v
        .parse()
        .map_err(|_| "expected a whole number".to_owned())?;
    T::try_from(n).map_err(|_| format!("{n} is too large"))
}

/// Bytes with an optional binary suffix: `4096`, `64K`, `256M`, `1G`.
fn bytes(v: &str) -> Result<u64, String> {
    let bad = || "expected bytes, optionally with a K, M or G suffix".to_owned();
    let (digits, shift) = match v.char_indices().last() {
        Some((i, c)) => match c.to_ascii_uppercase() {
            'K' => (v.get(..i).ok_or_else(bad)?, 10),
            'M' => (v.get(..i).ok_or_else(bad)?, 20),
            'G' => (v.get(..i).ok_or_else(bad)?, 30),
            _ => (v, 0),
        },
        None => return Err(bad()),
    };
    digits
        .trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .ok_or_else(bad)
}

fn bytes_usize(v: &str) -> Result<usize, String> {
    usize::try_from(bytes(v)?).map_err(|_| "too large for this machine".to_owned())
}

fn show_bytes(n: u64) -> String {
    match n {
        0 => "0".into(),
        n if n % (1 << 30) == 0 => format!("{}G", n >> 30),
        n if n % (1 << 20) == 0 => format!("{}M", n >> 20),
        n if n % (1 << 10) == 0 => format!("{}K", n >> 10),
        n => n.to_string(),
    }
}

/// A duration: a number with `ms` or `s`, or a plain number in `unit`.
fn duration(v: &str, unit: Duration) -> Result<Duration, String> {
    let bad = || "expected a duration: a whole number with ms or s".to_owned();
    let lower = v.to_ascii_lowercase();
    let (digits, unit) = if let Some(d) = lower.strip_suffix("ms") {
        (d, Duration::from_millis(1))
    } else if let Some(d) = lower.strip_suffix('s') {
        (d, Duration::from_secs(1))
    } else {
        (lower.as_str(), unit)
    };
    let n: u32 = digits.trim().parse().map_err(|_| bad())?;
    unit.checked_mul(n).ok_or_else(bad)
}

fn show_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

fn on_off(v: &str) -> Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "1" | "on" | "true" => Ok(true),
        "0" | "off" | "false" => Ok(false),
        _ => Err("expected on or off".into()),
    }
}

fn show_on_off(b: bool) -> String {
    if b { "on" } else { "off" }.into()
}

const MS: Duration = Duration::from_millis(1);
const SEC: Duration = Duration::from_secs(1);
const BYTES: &str = "bytes, with an optional K, M or G suffix";
const COUNT: &str = "a whole number";
const PCT: &str = "a whole number of per cent";
const MILLIS: &str = "a duration (`250ms`, `2s`; a plain number is milliseconds)";
const ON_OFF: &str = "`on`/`off` (`1`/`0`, `true`/`false`)";
const OPEN: &str = "every open";

/// Every knob of [`Config`], in the order of its fields.
pub static KNOBS: &[Knob] = &[
    Knob {
        name: "buffer_pool_size",
        innodb: &["innodb_buffer_pool_size"],
        doc: "bytes of page frames (at least 8 frames per instance)",
        values: BYTES,
        acts: Acts::BufferPool,
        when: OPEN,
        example: Some("256M"),
        set: |c, v| {
            c.buffer_pool_size = bytes_usize(v)?;
            Ok(())
        },
        show: |c| show_bytes(c.buffer_pool_size as u64),
    },
    Knob {
        name: "buffer_pool_instances",
        innodb: &["innodb_buffer_pool_instances"],
        doc: "independent pools, each with its own lists and mutexes",
        values: "1..=64",
        acts: Acts::BufferPool,
        when: OPEN,
        example: Some("4"),
        set: |c, v| {
            c.buffer_pool_instances = whole(v)?;
            Ok(())
        },
        show: |c| c.buffer_pool_instances.to_string(),
    },
    Knob {
        name: "page_size",
        innodb: &["innodb_page_size"],
        doc: "size of every page; open requires the size the files have",
        values: "`4k`, `8k`, `16k`, `32k`, `64k` or bytes",
        acts: Acts::Format,
        when: "create",
        example: Some("8k"),
        set: |c, v| {
            c.page_size = v
                .parse::<PageSize>()
                .map_err(|_| "expected 4k, 8k, 16k, 32k or 64k")?;
            Ok(())
        },
        show: |c| format!("{}k", c.page_size.bytes() / 1024),
    },
    Knob {
        name: "flush_log_at_trx_commit",
        innodb: &["innodb_flush_log_at_trx_commit"],
        doc: "1: a commit syncs the redo log; 2: writes it, synced by the flusher; 0: neither",
        values: "`0`, `1` or `2`",
        acts: Acts::Redo,
        when: "every commit",
        example: Some("2"),
        set: |c, v| {
            c.flush_log_at_trx_commit =
                FlushAtCommit::from_setting(whole(v)?).ok_or("expected 0, 1 or 2")?;
            Ok(())
        },
        show: |c| c.flush_log_at_trx_commit.setting().to_string(),
    },
    Knob {
        name: "flush_log_at_timeout",
        innodb: &["innodb_flush_log_at_timeout"],
        doc: "how often the flusher writes and syncs the log under 0 and 2",
        values: "a duration, 1ms ..= 2700s (a plain number is milliseconds)",
        acts: Acts::LogFlusher,
        when: OPEN,
        example: Some("200ms"),
        set: |c, v| {
            c.flush_log_at_timeout = duration(v, MS)?;
            Ok(())
        },
        show: |c| show_duration(c.flush_log_at_timeout),
    },
    Knob {
        name: "log_file_size",
        innodb: &["innodb_log_file_size", "innodb_redo_log_capacity"],
        doc: "capacity of the circular redo log; 0: the larger of 100 MiB and the pool",
        values: BYTES,
        acts: Acts::Redo,
        when: "create (an existing log keeps its size)",
        example: Some("1G"),
        set: |c, v| {
            c.log_file_size = bytes(v)?;
            Ok(())
        },
        show: |c| show_bytes(c.log_file_size),
    },
    Knob {
        name: "doublewrite",
        innodb: &["innodb_doublewrite"],
        doc: "copy each flush batch to the doublewrite files before writing it in place",
        values: "`on`/`1`, `off`/`0`, `detect_only`",
        acts: Acts::Doublewrite,
        when: OPEN,
        example: Some("detect_only"),
        set: |c, v| {
            c.doublewrite = match v {
                "1" => DoublewriteMode::On,
                "0" => DoublewriteMode::Off,
                _ => v.parse().map_err(|_| "expected on, off or detect_only")?,
            };
            Ok(())
        },
        show: |c| c.doublewrite.to_string(),
    },
    Knob {
        name: "doublewrite_pages",
        innodb: &["innodb_doublewrite_pages"],
        doc: "pages per doublewrite batch",
        values: COUNT,
        acts: Acts::Doublewrite,
        when: OPEN,
        example: Some("32"),
        set: |c, v| {
            c.doublewrite_pages = whole(v)?;
            Ok(())
        },
        show: |c| c.doublewrite_pages.to_string(),
    },
    Knob {
        name: "flush_method",
        innodb: &["innodb_flush_method"],
        doc: "how writes reach the disk",
        values: "`fsync`, `O_DIRECT`, `O_DSYNC`",
        acts: Acts::Files,
        when: OPEN,
        example: Some("O_DIRECT"),
        set: |c, v| {
            c.flush_method = v
                .parse::<FlushMethod>()
                .map_err(|_| "expected fsync, O_DIRECT or O_DSYNC")?;
            Ok(())
        },
        show: |c| c.flush_method.to_string(),
    },
    Knob {
        name: "io_backend",
        innodb: &[],
        doc: "`pread`/`pwrite`, `io_uring`, or a backend passed in code (`custom`)",
        values: "`sync`, `io_uring`",
        acts: Acts::Files,
        when: OPEN,
        example: Some("io_uring"),
        set: |c, v| {
            c.io_backend = match v.to_ascii_lowercase().as_str() {
                "sync" => IoBackend::Sync,
                "io_uring" | "uring" => IoBackend::IoUring,
                _ => {
                    return Err(
                        "expected sync or io_uring (a custom backend is set in code)".into(),
                    );
                }
            };
            Ok(())
        },
        show: |c| {
            match c.io_backend {
                IoBackend::Sync => "sync",
                IoBackend::IoUring => "io_uring",
                IoBackend::Custom(_) => "custom",
            }
            .into()
        },
    },
    Knob {
        name: "write_io_threads",
        innodb: &["innodb_write_io_threads"],
        doc: "with `io_backend=sync`, writes of one batch (a flush batch's pages in place) in flight at once, each on its own thread; io_uring submits a whole batch at once whatever this is",
        values: "1..=64",
        acts: Acts::Files,
        when: OPEN,
        example: Some("1"),
        set: |c, v| {
            let n: usize = whole(v)?;
            if !(1..=64).contains(&n) {
                return Err(format!("{n} is outside 1..=64"));
            }
            c.write_io_threads = n;
            Ok(())
        },
        show: |c| c.write_io_threads.to_string(),
    },
    Knob {
        name: "page_cleaners",
        innodb: &["innodb_page_cleaners"],
        doc: "background flushing threads; 0 flushes only on demand",
        values: COUNT,
        acts: Acts::PageCleaners,
        when: OPEN,
        example: Some("0"),
        set: |c, v| {
            c.page_cleaners = whole(v)?;
            Ok(())
        },
        show: |c| c.page_cleaners.to_string(),
    },
    Knob {
        name: "checksum_algorithm",
        innodb: &["innodb_checksum_algorithm"],
        doc: "pages are written with it; reads accept every algorithm",
        values: "`crc32`, `innodb`, `none`, `full_crc32`",
        acts: Acts::Format,
        when: "create; every page written",
        example: Some("full_crc32"),
        set: |c, v| {
            let policy = v
                .parse::<ChecksumPolicy>()
                .map_err(|_| "expected crc32, innodb, none or full_crc32")?;
            if policy.strict {
                return Err(
                    "strict_* is a read policy; minnow reads every algorithm (non-strict)".into(),
                );
            }
            {
                c.checksum_algorithm = policy.algorithm;
                Ok(())
            }
        },
        show: |c| c.checksum_algorithm.to_string(),
    },
    Knob {
        name: "old_blocks_pct",
        innodb: &["innodb_old_blocks_pct"],
        doc: "share of the LRU list kept as the old sublist",
        values: "5..=95",
        acts: Acts::BufferPool,
        when: OPEN,
        example: Some("20"),
        set: |c, v| {
            c.old_blocks_pct = whole(v)?;
            Ok(())
        },
        show: |c| c.old_blocks_pct.to_string(),
    },
    Knob {
        name: "old_blocks_time",
        innodb: &["innodb_old_blocks_time"],
        doc: "how long a page stays old after its first access before a hit makes it young",
        values: MILLIS,
        acts: Acts::BufferPool,
        when: OPEN,
        example: Some("0"),
        set: |c, v| {
            c.old_blocks_time = duration(v, MS)?;
            Ok(())
        },
        show: |c| show_duration(c.old_blocks_time),
    },
    Knob {
        name: "io_capacity",
        innodb: &["innodb_io_capacity"],
        doc: "pages per second background flushing aims at",
        values: "a whole number, at least 100",
        acts: Acts::PageCleaners,
        when: OPEN,
        example: Some("1000"),
        set: |c, v| {
            c.io_capacity = whole(v)?;
            Ok(())
        },
        show: |c| c.io_capacity.to_string(),
    },
    Knob {
        name: "flush_neighbors",
        innodb: &["innodb_flush_neighbors"],
        doc: "0: flush a page alone; 1: with its contiguous dirty neighbours; 2: its extent",
        values: "`0`, `1` or `2`",
        acts: Acts::PageCleaners,
        when: OPEN,
        example: Some("1"),
        set: |c, v| {
            c.flush_neighbors =
                FlushNeighbors::from_setting(whole(v)?).ok_or("expected 0, 1 or 2")?;
            Ok(())
        },
        show: |c| (c.flush_neighbors as u8).to_string(),
    },
    Knob {
        name: "max_dirty_pages_pct",
        innodb: &["innodb_max_dirty_pages_pct"],
        doc: "above this share of dirty frames the cleaners flush at full io_capacity",
        values: PCT,
        acts: Acts::PageCleaners,
        when: OPEN,
        example: Some("75"),
        set: |c, v| {
            c.max_dirty_pages_pct = whole(v)?;
            Ok(())
        },
        show: |c| c.max_dirty_pages_pct.to_string(),
    },
    Knob {
        name: "max_dirty_pages_pct_lwm",
        innodb: &["innodb_max_dirty_pages_pct_lwm"],
        doc: "below this share of dirty frames, dirty pages alone do not start flushing",
        values: PCT,
        acts: Acts::PageCleaners,
        when: OPEN,
        example: Some("0"),
        set: |c, v| {
            c.max_dirty_pages_pct_lwm = whole(v)?;
            Ok(())
        },
        show: |c| c.max_dirty_pages_pct_lwm.to_string(),
    },
    Knob {
        name: "read_ahead_threshold",
        innodb: &["innodb_read_ahead_threshold"],
        doc: "pages of an extent read in order before linear read-ahead fetches the next; 0: off",
        values: "0..=64",
        acts: Acts::BufferPool,
        when: OPEN,
        example: Some("0"),
        set: |c, v| {
            c.read_ahead_threshold = whole(v)?;
            Ok(())
        },
        show: |c| c.read_ahead_threshold.to_string(),
    },
    Knob {
        name: "buffer_pool_dump_at_shutdown",
        innodb: &[
            "innodb_buffer_pool_dump_at_shutdown",
            "innodb_buffer_pool_load_at_startup",
        ],
        doc: "write the pool's page list to `ib_buffer_pool` at close, load it at open",
        values: ON_OFF,
        acts: Acts::BufferPool,
        when: "close and open",
        example: Some("off"),
        set: |c, v| {
            c.buffer_pool_dump_at_shutdown = on_off(v)?;
            Ok(())
        },
        show: |c| show_on_off(c.buffer_pool_dump_at_shutdown),
    },
    Knob {
        name: "buffer_pool_dump_pct",
        innodb: &["innodb_buffer_pool_dump_pct"],
        doc: "share of each instance's most recently used pages the dump keeps",
        values: "1..=100",
        acts: Acts::BufferPool,
        when: "close",
        example: Some("50"),
        set: |c, v| {
            c.buffer_pool_dump_pct = whole(v)?;
            Ok(())
        },
        show: |c| c.buffer_pool_dump_pct.to_string(),
    },
    Knob {
        name: "autoinc_lock_mode",
        innodb: &["innodb_autoinc_lock_mode"],
        doc: "0 traditional, 1 consecutive, 2 interleaved (see `AutoIncLockMode`)",
        values: "`0`, `1` or `2`",
        acts: Acts::Rows,
        when: "every insert into a table with an AUTO_INCREMENT column",
        example: Some("0"),
        set: |c, v| {
            c.autoinc_lock_mode =
                AutoIncLockMode::try_from(whole::<u8>(v)?).map_err(|_| "expected 0, 1 or 2")?;
            Ok(())
        },
        show: |c| c.autoinc_lock_mode.as_innodb().to_string(),
    },
    Knob {
        name: "lock_wait_timeout",
        innodb: &["innodb_lock_wait_timeout"],
        doc: "how long a writer waits for a row lock before its statement fails",
        values: "a duration, at least 1ms (a plain number is seconds)",
        acts: Acts::Rows,
        when: OPEN,
        example: Some("5s"),
        set: |c, v| {
            c.lock_wait_timeout = duration(v, SEC)?;
            Ok(())
        },
        show: |c| show_duration(c.lock_wait_timeout),
    },
    Knob {
        name: "bulk_insert_buffer_size",
        innodb: &[],
        doc: "memory a transaction's buffered inserts into an empty table may take; 0: half of buffer_pool_size",
        values: BYTES,
        acts: Acts::Rows,
        when: "every insert into an empty table",
        example: Some("256M"),
        set: |c, v| {
            c.bulk_insert_buffer_size = bytes_usize(v)?;
            Ok(())
        },
        show: |c| show_bytes(c.bulk_insert_buffer_size as u64),
    },
    Knob {
        name: "purge_threads",
        innodb: &["innodb_purge_threads"],
        doc: "1: a background thread purges; 0: only `Database::purge` does",
        values: "`0` or `1`",
        acts: Acts::Purge,
        when: OPEN,
        example: Some("0"),
        set: |c, v| {
            c.purge_threads = whole(v)?;
            Ok(())
        },
        show: |c| c.purge_threads.to_string(),
    },
    Knob {
        name: "fast_shutdown",
        innodb: &["innodb_fast_shutdown"],
        doc: "1: close without waiting for purge; 0: purge fully, then close (the freed undo is cut off the file's end)",
        values: "`0` or `1`",
        acts: Acts::Purge,
        when: "close",
        example: Some("0"),
        set: |c, v| {
            c.fast_shutdown = whole(v)?;
            Ok(())
        },
        show: |c| c.fast_shutdown.to_string(),
    },
    Knob {
        name: "rollback_segments",
        innodb: &["innodb_rollback_segments"],
        doc: "rollback segments undo is spread over, each with its own lock",
        values: "1..=128",
        acts: Acts::Undo,
        when: "create (open uses the stored number)",
        example: Some("4"),
        set: |c, v| {
            c.rollback_segments = whole(v)?;
            Ok(())
        },
        show: |c| c.rollback_segments.to_string(),
    },
    Knob {
        name: "status_file",
        innodb: &["innodb_status_file"],
        doc: "rewrite `minnow_status.json` at this interval for `minnow status`/`watch`",
        values: "`off` or a duration, at least 10ms (a plain number is milliseconds; 0: off)",
        acts: Acts::StatusFile,
        when: OPEN,
        example: Some("250ms"),
        set: |c, v| {
            c.status_file = match v.to_ascii_lowercase().as_str() {
                "off" | "0" => None,
                _ => Some(duration(v, MS)?),
            };
            Ok(())
        },
        show: |c| c.status_file.map_or_else(|| "off".into(), show_duration),
    },
    Knob {
        name: "adaptive_hash_index",
        innodb: &["innodb_adaptive_hash_index"],
        doc: "hash of hot leaf records that lets point lookups skip the descent",
        values: ON_OFF,
        acts: Acts::Ahi,
        when: "every open; `Database::set_adaptive_hash_index` at runtime",
        example: Some("off"),
        set: |c, v| {
            c.adaptive_hash_index = on_off(v)?;
            Ok(())
        },
        show: |c| show_on_off(c.adaptive_hash_index),
    },
    Knob {
        name: "adaptive_hash_index_parts",
        innodb: &["innodb_adaptive_hash_index_parts"],
        doc: "partitions of the hash, chosen by key hash (rounded up to a power of two)",
        values: "1..=4096",
        acts: Acts::Ahi,
        when: OPEN,
        example: Some("8"),
        set: |c, v| {
            c.adaptive_hash_index_parts = whole(v)?;
            Ok(())
        },
        show: |c| c.adaptive_hash_index_parts.to_string(),
    },
    Knob {
        name: "adaptive_hash_index_max_memory",
        innodb: &[],
        doc: "the most memory the hash's entries may take; entries beyond it are not added",
        values: BYTES,
        acts: Acts::Ahi,
        when: OPEN,
        example: Some("1M"),
        set: |c, v| {
            c.adaptive_hash_index_max_memory = bytes_usize(v)?;
            Ok(())
        },
        show: |c| show_bytes(c.adaptive_hash_index_max_memory as u64),
    },
    Knob {
        name: "thread_concurrency",
        innodb: &["innodb_thread_concurrency"],
        doc: "threads allowed inside the engine at once; 0: no limit",
        values: COUNT,
        acts: Acts::Admission,
        when: OPEN,
        example: Some("32"),
        set: |c, v| {
            c.thread_concurrency = whole(v)?;
            Ok(())
        },
        show: |c| c.thread_concurrency.to_string(),
    },
    Knob {
        name: "concurrency_tickets",
        innodb: &["innodb_concurrency_tickets"],
        doc: "row operations a thread may do after entering before it queues again",
        values: "a whole number, at least 1",
        acts: Acts::Admission,
        when: OPEN,
        example: Some("500"),
        set: |c, v| {
            c.concurrency_tickets = whole(v)?;
            Ok(())
        },
        show: |c| c.concurrency_tickets.to_string(),
    },
    Knob {
        name: "parallel_read_threads",
        innodb: &["innodb_parallel_read_threads"],
        doc: "threads a `count()` walks the leaf level with, at most the available parallelism; 1: one walk",
        values: "1..=256",
        acts: Acts::Rows,
        when: "every count",
        example: Some("2"),
        set: |c, v| {
            let n: usize = whole(v)?;
            if !(1..=256).contains(&n) {
                return Err(format!("{n} is outside 1..=256"));
            }
            c.parallel_read_threads = n;
            Ok(())
        },
        show: |c| c.parallel_read_threads.to_string(),
    },
    Knob {
        name: "compression_failure_threshold_pct",
        innodb: &["innodb_compression_failure_threshold_pct"],
        doc: "failure share above which an index's pages get more padding; 0: no padding",
        values: "0..=100",
        acts: Acts::Compression,
        when: OPEN,
        example: Some("10"),
        set: |c, v| {
            c.compression_failure_threshold_pct = whole(v)?;
            Ok(())
        },
        show: |c| c.compression_failure_threshold_pct.to_string(),
    },
    Knob {
        name: "compression_pad_pct_max",
        innodb: &["innodb_compression_pad_pct_max"],
        doc: "the most padding, in per cent of the page",
        values: "0..=75",
        acts: Acts::Compression,
        when: OPEN,
        example: Some("25"),
        set: |c, v| {
            c.compression_pad_pct_max = whole(v)?;
            Ok(())
        },
        show: |c| c.compression_pad_pct_max.to_string(),
    },
    Knob {
        name: "merge_threshold",
        innodb: &[],
        doc: "InnoDB's per-index MERGE_THRESHOLD, for every index: a page a delete leaves less full than this (per cent of its record space) merges with a sibling if the two fit",
        values: "1..=50",
        acts: Acts::Merges,
        when: OPEN,
        example: Some("25"),
        set: |c, v| {
            c.merge_threshold = whole(v)?;
            Ok(())
        },
        show: |c| c.merge_threshold.to_string(),
    },
    Knob {
        name: "recovery_progress",
        innodb: &[],
        doc: "a function told how far crash recovery has come (set in code)",
        values: "none from text",
        acts: Acts::Recovery,
        when: "open after a crash",
        example: None,
        set: |_, _| Err("a function: set `Config::recovery_progress` in code".into()),
        show: |c| {
            if c.recovery_progress.is_some() {
                "set"
            } else {
                "none"
            }
            .into()
        },
    },
];
