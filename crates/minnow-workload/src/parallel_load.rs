//! Parallel inserts and the AUTO-INC lock (seed 004, "INSERT speed, paramy, auto-inc";
//! experiment E7).
//!
//! The article loaded 13M rows: one client managed 7,200 rows/s, the same statements spread
//! over worker threads 8,700 rows/s, because InnoDB's table-level AUTO-INC lock (held to the
//! end of each insert statement in the "traditional" mode of its day) serialised them; without
//! an AUTO_INCREMENT column, 21,500 rows/s.
//!
//! [`run`] creates a fresh database with one table `load_test` (`id BIGINT UNSIGNED` primary
//! key, `k INT UNSIGNED`, `pad VARCHAR(100)`) and has `threads` threads insert `rows` rows in
//! multi-row statements of `rows_per_statement` ([`minnow::Table::insert_many`] of a `Vec`: a
//! "simple insert", whose row count is known up front) under one [`KeyMode`]: `id`
//! AUTO_INCREMENT under `innodb_autoinc_lock_mode` 0, 1 or 2, or no AUTO_INCREMENT and explicit
//! ids from disjoint ranges per thread. It reports rows per second, the process's CPU time
//! (`/proc/self/stat` user + system, in USER_HZ = 100 ticks a second; `None` where the file does
//! not exist) and the AUTO-INC lock's waits and grants.
//!
//! Writers of different rows run in parallel (row locks), so the AUTO-INC lock is what an
//! insert into an AUTO_INCREMENT table may wait for: the article's gap between
//! AUTO_INCREMENT in the traditional mode and explicit keys is what this workload shows.

use std::path::Path;
use std::time::Instant;

use minnow::{AutoIncLockMode, ColumnDef, ColumnType, Config, Database, TableDef, Value};
use serde::Serialize;

use crate::{WorkloadError, procfs};

/// The table's name.
pub const TABLE: &str = "load_test";

/// How rows get their ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum KeyMode {
    /// `id` is AUTO_INCREMENT, under this `innodb_autoinc_lock_mode`.
    AutoInc(#[serde(serialize_with = "ser_mode")] AutoIncLockMode),
    /// No AUTO_INCREMENT; each thread inserts ids from its own range.
    Explicit,
}

fn ser_mode<S: serde::Serializer>(m: &AutoIncLockMode, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u8(m.as_innodb())
}

impl KeyMode {
    /// The four modes E7 compares: lock modes 0, 1, 2 and explicit keys.
    pub const ALL: [KeyMode; 4] = [
        KeyMode::AutoInc(AutoIncLockMode::Traditional),
        KeyMode::AutoInc(AutoIncLockMode::Consecutive),
        KeyMode::AutoInc(AutoIncLockMode::Interleaved),
        KeyMode::Explicit,
    ];

    /// `autoinc0`, `autoinc1`, `autoinc2` or `explicit`.
    pub fn name(self) -> &'static str {
        match self {
            KeyMode::AutoInc(AutoIncLockMode::Traditional) => "autoinc0",
            KeyMode::AutoInc(AutoIncLockMode::Consecutive) => "autoinc1",
            KeyMode::AutoInc(AutoIncLockMode::Interleaved) => "autoinc2",
            KeyMode::Explicit => "explicit",
        }
    }
}

impl std::str::FromStr for KeyMode {
    type Err = WorkloadError;

    fn from_str(s: &str) -> Result<KeyMode, WorkloadError> {
        KeyMode::ALL
            .into_iter()
            .find(|m| m.name() == s.trim())
            .ok_or_else(|| WorkloadError::Setting {
                setting: "keys",
                reason: format!("`{s}` is not autoinc0, autoinc1, autoinc2 or explicit"),
            })
    }
}

/// What one load measured.
#[derive(Debug, Clone, Serialize)]
pub struct LoadResult {
    /// The key mode's name.
    pub keys: &'static str,
    /// Threads.
    pub threads: usize,
    /// Rows inserted.
    pub rows: u64,
    /// Wall seconds.
    pub seconds: f64,
    /// Rows per second.
    pub rows_per_sec: f64,
    /// CPU seconds the process used during the load (user + system).
    pub cpu_seconds: Option<f64>,
    /// Times a statement waited for the AUTO-INC lock.
    pub lock_waits: u64,
    /// Times the AUTO-INC lock was granted.
    pub lock_grants: u64,
}

/// The table for `keys`.
pub fn table_def(keys: KeyMode) -> TableDef {
    let id = ColumnDef::new("id", ColumnType::U64);
    let id = match keys {
        KeyMode::AutoInc(_) => id.auto_increment(),
        KeyMode::Explicit => id,
    };
    TableDef::new(TABLE)
        .column(id)
        .column(ColumnDef::new("k", ColumnType::U32))
        .column(ColumnDef::new("pad", ColumnType::Var(100)))
        .primary_key(&["id"])
}

/// Creates a database in `dir` with `config` (its `autoinc_lock_mode` set from `keys`) and
/// loads `rows` rows from `threads` threads in statements of `rows_per_statement` rows.
pub fn run(
    dir: &Path,
    config: Config,
    keys: KeyMode,
    threads: usize,
    rows: u64,
    rows_per_statement: usize,
) -> Result<LoadResult, WorkloadError> {
    if threads == 0 || rows_per_statement == 0 || rows == 0 {
        return Err(WorkloadError::Setting {
            setting: "threads",
            reason: "threads, rows and rows per statement must be at least 1".into(),
        });
    }
    let config = match keys {
        KeyMode::AutoInc(mode) => Config {
            autoinc_lock_mode: mode,
            ..config
        },
        KeyMode::Explicit => config,
    };
    let db = Database::create(dir, config)?;
    let t = db.create_table(table_def(keys))?;
    let per_thread = rows.div_ceil(threads as u64);
    let cpu0 = procfs::cpu_seconds();
    let started = Instant::now();
    let results: Vec<Result<u64, WorkloadError>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads as u64)
            .map(|w| {
                let t = &t;
                s.spawn(move || -> Result<u64, WorkloadError> {
                    let first = w * per_thread;
                    let last = (first + per_thread).min(rows);
                    let pad = Value::Bytes(vec![b'p'; 60]);
                    let mut done = 0u64;
                    let mut i = first;
                    while i < last {
                        let end = (i + rows_per_statement as u64).min(last);
                        let batch: Vec<Vec<Value>> = (i..end)
                            .map(|n| {
                                let id = match keys {
                                    KeyMode::AutoInc(_) => Value::UInt(0),
                                    KeyMode::Explicit => Value::UInt(n + 1),
                                };
                                vec![id, Value::UInt(n % 1_000_003), pad.clone()]
                            })
                            .collect();
                        done += t.insert_many(batch)?.rows as u64;
                        i = end;
                    }
                    Ok(done)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|h| h.join().unwrap_or(Err(WorkloadError::WorkerPanicked)))
            .collect()
    });
    let seconds = started.elapsed().as_secs_f64();
    let cpu = match (cpu0, procfs::cpu_seconds()) {
        (Some(a), Some(b)) => Some(b - a),
        _ => None,
    };
    let mut inserted = 0;
    for r in results {
        inserted += r?;
    }
    let status = t.auto_increment_status();
    drop(t);
    db.close()?;
    Ok(LoadResult {
        keys: keys.name(),
        threads,
        rows: inserted,
        seconds,
        rows_per_sec: inserted as f64 / seconds.max(1e-9),
        cpu_seconds: cpu,
        lock_waits: status.as_ref().map_or(0, |s| s.lock_waits),
        lock_grants: status.as_ref().map_or(0, |s| s.lock_grants),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_loads_every_row() {
        for keys in KeyMode::ALL {
            let dir = tempfile::tempdir().unwrap();
            let r = run(dir.path(), Config::default(), keys, 3, 1_000, 50).unwrap();
            assert_eq!(r.rows, 1_000, "{r:?}");
            assert_eq!(r.keys.parse::<KeyMode>().unwrap(), keys);
            if keys == KeyMode::Explicit {
                assert_eq!(r.lock_grants, 0);
            }
            let db = Database::open(dir.path(), Config::default()).unwrap();
            assert_eq!(db.check().unwrap().rows[TABLE], 1_000);
        }
        assert!(crate::procfs::cpu_seconds().is_some_and(|c| c >= 0.0));
        let dir = tempfile::tempdir().unwrap();
        assert!(run(dir.path(), Config::default(), KeyMode::Explicit, 0, 10, 1).is_err());
    }
}
