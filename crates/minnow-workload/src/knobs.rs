//! `name=value` settings for [`minnow::Config`], named as InnoDB names its variables.
//!
//! A benchmark command line changes one knob at a time (`--set doublewrite=off`), so every
//! [`Config`] field has a name here: the `innodb_*` variable it mirrors, with or without the
//! `innodb_` prefix. [`apply`] parses the value and sets the field; an unknown name or a value
//! that does not parse is a [`KnobError`], never a silent default. [`KNOBS`] lists them all
//! (the CLI prints it in its help).
//!
//! | name | value |
//! |---|---|
//! | `buffer_pool_size` | bytes, with an optional `K`, `M` or `G` suffix |
//! | `buffer_pool_instances` | integer ≥ 1 |
//! | `page_size` | `4k`, `8k`, `16k`, `32k`, `64k` or bytes (used at create) |
//! | `flush_log_at_trx_commit` | `0`, `1` or `2` |
//! | `log_file_size` | bytes, with an optional suffix (used at create) |
//! | `doublewrite` | `on`/`1`, `off`/`0`, `detect_only` |
//! | `doublewrite_pages` | integer |
//! | `flush_method` | `fsync`, `O_DIRECT`, `O_DSYNC` |
//! | `io_backend` | `sync` or `io_uring` (minnow's own knob) |
//! | `page_cleaners` | integer (0: flush only on demand) |
//! | `checksum_algorithm` | `crc32`, `innodb`, `none`, `full_crc32` |
//! | `old_blocks_pct` | 5..=95 |
//! | `old_blocks_time` | milliseconds |
//! | `io_capacity` | integer |
//! | `flush_neighbors` | `0`, `1` or `2` |
//! | `max_dirty_pages_pct`, `max_dirty_pages_pct_lwm` | integer percent |
//! | `read_ahead_threshold` | 0..=64 |
//! | `buffer_pool_dump_at_shutdown` | `on`/`off`/`1`/`0`/`true`/`false` |
//! | `buffer_pool_dump_pct` | 1..=100 |
//! | `autoinc_lock_mode` | `0`, `1` or `2` |
//! | `lock_wait_timeout` | seconds |
//! | `purge_threads` | `0` (purge only on demand) or `1` |
//! | `flush_log_at_timeout` | milliseconds |
//! | `compression_failure_threshold_pct`, `compression_pad_pct_max` | integer percent |
//! | `adaptive_hash_index` | `on` or `off` |
//! | `adaptive_hash_index_parts` | an integer, 1 to 4096 |
//! | `adaptive_hash_index_max_memory` | bytes (`K`, `M`, `G` suffixes as for the pool size) |
//! | `thread_concurrency` | an integer, 0 for no limit |
//! | `concurrency_tickets` | an integer |
//! | `status_file` | milliseconds between rewrites of `minnow_status.json` (`0`: off), for `minnow status` / `watch` |
//!
//! Ranges are checked by [`Config::validate`] when the database opens, as InnoDB checks them
//! at startup.
//!
//! ```
//! use minnow::Config;
//! use minnow::FlushAtCommit;
//! use minnow_workload::knobs;
//!
//! let mut config = Config::default();
//! knobs::apply(&mut config, "innodb_flush_log_at_trx_commit", "0")?;
//! knobs::apply(&mut config, "buffer_pool_size", "256M")?;
//! assert_eq!(config.flush_log_at_trx_commit, FlushAtCommit::Lazy);
//! assert_eq!(config.buffer_pool_size, 256 << 20);
//! knobs::apply(&mut config, "adaptive_hash_index", "off")?;
//! assert!(!config.adaptive_hash_index);
//! assert!(knobs::apply(&mut config, "change_buffering", "all").is_err());
//! # Ok::<(), knobs::KnobError>(())
//! ```

use std::time::Duration;

use minnow::DoublewriteMode;
use minnow::FlushMethod;
use minnow::FlushNeighbors;
use minnow::PageSize;
use minnow::{AutoIncLockMode, Config, FlushAtCommit, IoBackend};
use minnow_page::checksum::ChecksumPolicy;

/// Every knob name [`apply`] accepts (without the optional `innodb_` prefix).
pub const KNOBS: &[&str] = &[
    "buffer_pool_size",
    "buffer_pool_instances",
    "page_size",
    "flush_log_at_trx_commit",
    "log_file_size",
    "doublewrite",
    "doublewrite_pages",
    "flush_method",
    "io_backend",
    "page_cleaners",
    "checksum_algorithm",
    "old_blocks_pct",
    "old_blocks_time",
    "io_capacity",
    "flush_neighbors",
    "max_dirty_pages_pct",
    "max_dirty_pages_pct_lwm",
    "read_ahead_threshold",
    "buffer_pool_dump_at_shutdown",
    "buffer_pool_dump_pct",
    "autoinc_lock_mode",
    "lock_wait_timeout",
    "purge_threads",
    "flush_log_at_timeout",
    "adaptive_hash_index",
    "adaptive_hash_index_parts",
    "adaptive_hash_index_max_memory",
    "thread_concurrency",
    "concurrency_tickets",
    "status_file",
    "compression_failure_threshold_pct",
    "compression_pad_pct_max",
];

/// A `name=value` setting that cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KnobError {
    /// The text has no `=`.
    #[error("`{0}` is not name=value")]
    Syntax(String),
    /// No [`Config`] field has this name.
    #[error("unknown knob `{name}` (known: {})", KNOBS.join(", "))]
    Unknown {
        /// The name given.
        name: String,
    },
    /// The value does not parse for this knob.
    #[error("bad value `{value}` for {name}: {reason}")]
    Value {
        /// The knob (without the prefix).
        name: String,
        /// The value given.
        value: String,
        /// What was expected.
        reason: String,
    },
}

/// Applies one `name=value` text (as given to `--set`).
pub fn apply_setting(config: &mut Config, setting: &str) -> Result<(), KnobError> {
    let (name, value) = setting
        .split_once('=')
        .ok_or_else(|| KnobError::Syntax(setting.to_owned()))?;
    apply(config, name, value)
}

/// Sets the [`Config`] field that `name` (an InnoDB variable name, the `innodb_` prefix
/// optional, `-` accepted for `_`) stands for to `value`.
pub fn apply(config: &mut Config, name: &str, value: &str) -> Result<(), KnobError> {
    let lower = name.trim().to_ascii_lowercase().replace('-', "_");
    let key = lower.strip_prefix("innodb_").unwrap_or(&lower);
    let v = value.trim();
    let bad = |reason: &str| KnobError::Value {
        name: key.to_owned(),
        value: v.to_owned(),
        reason: reason.to_owned(),
    };
    let int = || v.parse::<u64>().map_err(|_| bad("expected a whole number"));
    let usize_ =
        || int().and_then(|n| usize::try_from(n).map_err(|_| bad("too large for this machine")));
    let u32_ = || int().and_then(|n| u32::try_from(n).map_err(|_| bad("too large")));
    let u8_ = || int().and_then(|n| u8::try_from(n).map_err(|_| bad("too large")));
    match key {
        "buffer_pool_size" => {
            config.buffer_pool_size = usize::try_from(
                bytes(v)
                    .ok_or_else(|| bad("expected bytes, optionally with a K, M or G suffix"))?,
            )
            .map_err(|_| bad("too large for this machine"))?;
        }
        "buffer_pool_instances" => config.buffer_pool_instances = usize_()?,
        "page_size" => {
            config.page_size = v
                .parse::<PageSize>()
                .map_err(|_| bad("expected 4k, 8k, 16k, 32k or 64k"))?;
        }
        "flush_log_at_trx_commit" => {
            config.flush_log_at_trx_commit =
                FlushAtCommit::from_setting(u8_()?).ok_or_else(|| bad("expected 0, 1 or 2"))?;
        }
        "log_file_size" => {
            config.log_file_size = bytes(v)
                .ok_or_else(|| bad("expected bytes, optionally with a K, M or G suffix"))?;
        }
        "doublewrite" => {
            config.doublewrite = match v {
                "1" => DoublewriteMode::On,
                "0" => DoublewriteMode::Off,
                _ => v
                    .parse::<DoublewriteMode>()
                    .map_err(|_| bad("expected on, off or detect_only"))?,
            };
        }
        "doublewrite_pages" => config.doublewrite_pages = usize_()?,
        "flush_method" => {
            config.flush_method = v
                .parse::<FlushMethod>()
                .map_err(|_| bad("expected fsync, O_DIRECT or O_DSYNC"))?;
        }
        "io_backend" => {
            config.io_backend = match v.to_ascii_lowercase().as_str() {
                "sync" => IoBackend::Sync,
                "io_uring" | "uring" => IoBackend::IoUring,
                _ => return Err(bad("expected sync or io_uring")),
            };
        }
        "page_cleaners" => config.page_cleaners = usize_()?,
        "checksum_algorithm" => {
            let policy = v
                .parse::<ChecksumPolicy>()
                .map_err(|_| bad("expected crc32, innodb, none or full_crc32"))?;
            if policy.strict {
                return Err(bad(
                    "strict_* is a read policy; minnow reads every algorithm (non-strict)",
                ));
            }
            config.checksum_algorithm = policy.algorithm;
        }
        "old_blocks_pct" => config.old_blocks_pct = u32_()?,
        "old_blocks_time" => config.old_blocks_time = Duration::from_millis(int()?),
        "io_capacity" => config.io_capacity = u32_()?,
        "flush_neighbors" => {
            config.flush_neighbors =
                FlushNeighbors::from_setting(u8_()?).ok_or_else(|| bad("expected 0, 1 or 2"))?;
        }
        "max_dirty_pages_pct" => config.max_dirty_pages_pct = u32_()?,
        "max_dirty_pages_pct_lwm" => config.max_dirty_pages_pct_lwm = u32_()?,
        "read_ahead_threshold" => config.read_ahead_threshold = u32_()?,
        "buffer_pool_dump_at_shutdown" => {
            config.buffer_pool_dump_at_shutdown = match v.to_ascii_lowercase().as_str() {
                "1" | "on" | "true" => true,
                "0" | "off" | "false" => false,
                _ => return Err(bad("expected on or off")),
            };
        }
        "buffer_pool_dump_pct" => config.buffer_pool_dump_pct = u32_()?,
        "autoinc_lock_mode" => {
            config.autoinc_lock_mode =
                AutoIncLockMode::try_from(u8_()?).map_err(|_| bad("expected 0, 1 or 2"))?;
        }
        "lock_wait_timeout" => config.lock_wait_timeout = Duration::from_secs(u64::from(u32_()?)),
        "purge_threads" => config.purge_threads = usize_()?,
        "flush_log_at_timeout" => {
            config.flush_log_at_timeout = Duration::from_millis(u64::from(u32_()?));
        }
        "compression_failure_threshold_pct" => config.compression_failure_threshold_pct = u8_()?,
        "compression_pad_pct_max" => config.compression_pad_pct_max = u8_()?,
        "adaptive_hash_index" => {
            config.adaptive_hash_index = match v.to_ascii_lowercase().as_str() {
                "1" | "on" | "true" => true,
                "0" | "off" | "false" => false,
                _ => return Err(bad("expected on or off")),
            };
        }
        "adaptive_hash_index_parts" => config.adaptive_hash_index_parts = usize_()?,
        "adaptive_hash_index_max_memory" => {
            config.adaptive_hash_index_max_memory = usize::try_from(
                bytes(v)
                    .ok_or_else(|| bad("expected bytes, optionally with a K, M or G suffix"))?,
            )
            .map_err(|_| bad("too large for this machine"))?;
        }
        "thread_concurrency" => config.thread_concurrency = usize_()?,
        "concurrency_tickets" => config.concurrency_tickets = u32_()?,
        "status_file" => {
            config.status_file = match int()? {
                0 => None,
                ms => Some(Duration::from_millis(ms)),
            };
        }
        _ => {
            return Err(KnobError::Unknown {
                name: name.to_owned(),
            });
        }
    }
    Ok(())
}

/// Bytes with an optional binary suffix: `4096`, `64K`, `256M`, `1G`.
fn bytes(v: &str) -> Option<u64> {
    let v = v.trim();
    let (digits, shift) = match v.chars().last()?.to_ascii_uppercase() {
        'K' => (&v[..v.len() - 1], 10),
        'M' => (&v[..v.len() - 1], 20),
        'G' => (&v[..v.len() - 1], 30),
        _ => (v, 0),
    };
    digits.trim().parse::<u64>().ok()?.checked_mul(1 << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_knob_is_known() {
        let samples = [
            ("buffer_pool_size", "32M"),
            ("buffer_pool_instances", "2"),
            ("page_size", "8k"),
            ("flush_log_at_trx_commit", "2"),
            ("log_file_size", "1G"),
            ("doublewrite", "detect_only"),
            ("doublewrite_pages", "32"),
            ("flush_method", "O_DIRECT"),
            ("io_backend", "io_uring"),
            ("page_cleaners", "0"),
            ("checksum_algorithm", "full_crc32"),
            ("old_blocks_pct", "20"),
            ("old_blocks_time", "0"),
            ("io_capacity", "1000"),
            ("flush_neighbors", "1"),
            ("max_dirty_pages_pct", "75"),
            ("max_dirty_pages_pct_lwm", "0"),
            ("read_ahead_threshold", "0"),
            ("buffer_pool_dump_at_shutdown", "off"),
            ("buffer_pool_dump_pct", "50"),
            ("autoinc_lock_mode", "0"),
            ("lock_wait_timeout", "5"),
            ("purge_threads", "0"),
            ("flush_log_at_timeout", "2000"),
            ("adaptive_hash_index", "off"),
            ("adaptive_hash_index_parts", "8"),
            ("adaptive_hash_index_max_memory", "1M"),
            ("thread_concurrency", "32"),
            ("concurrency_tickets", "500"),
            ("status_file", "250"),
            ("compression_failure_threshold_pct", "10"),
            ("compression_pad_pct_max", "25"),
        ];
        assert_eq!(samples.len(), KNOBS.len());
        let mut c = Config::default();
        for (name, value) in samples {
            assert!(KNOBS.contains(&name));
            apply(&mut c, name, value).unwrap();
            apply(&mut c, &format!("innodb_{name}"), value).unwrap();
        }
        assert_eq!(c.buffer_pool_size, 32 << 20);
        assert_eq!(
            (
                c.compression_failure_threshold_pct,
                c.compression_pad_pct_max
            ),
            (10, 25)
        );
        assert_eq!(c.status_file, Some(Duration::from_millis(250)));
        assert_eq!(c.purge_threads, 0);
        apply(&mut c, "status_file", "0").unwrap();
        assert_eq!(c.status_file, None);
        assert_eq!(c.page_size, PageSize::K8);
        assert_eq!(c.doublewrite, DoublewriteMode::DetectOnly);
        assert_eq!(c.flush_method, FlushMethod::ODirect);
        assert_eq!(c.old_blocks_time, Duration::ZERO);
        assert!(!c.buffer_pool_dump_at_shutdown);
    }

    #[test]
    fn bad_input_is_an_error() {
        let mut c = Config::default();
        assert!(matches!(
            apply_setting(&mut c, "doublewrite"),
            Err(KnobError::Syntax(_))
        ));
        assert!(matches!(
            apply_setting(&mut c, "innodb_change_buffering=all"),
            Err(KnobError::Unknown { .. })
        ));
        for (n, v) in [
            ("flush_log_at_trx_commit", "3"),
            ("doublewrite", "maybe"),
            ("buffer_pool_size", "12X"),
            ("buffer_pool_size", "99999999999G"),
            ("page_cleaners", "-1"),
            ("checksum_algorithm", "strict_crc32"),
        ] {
            assert!(
                matches!(apply(&mut c, n, v), Err(KnobError::Value { .. })),
                "{n}={v}"
            );
        }
        apply_setting(&mut c, "doublewrite=0").unwrap();
        assert_eq!(c.doublewrite, DoublewriteMode::Off);
    }
}
