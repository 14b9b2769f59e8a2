//! Helpers the experiment benches share: settings from environment variables, the directory a
//! bench's databases live in, where Criterion writes, and a median for same-run comparisons.
//!
//! Each bench is its own crate and includes this file with `mod common;`, so a bench that uses
//! only some of the helpers leaves the others unused.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// Whether this run is Criterion's test mode, where each bench runs once on a small size:
/// `--test` was passed (`cargo bench -- --test`), or the binary was started without `--bench`
/// (`cargo test --bench NAME`, as CI does; `cargo bench` always passes `--bench`). A bench
/// that sized its data from `--test` alone loaded its full default size in CI.
pub fn test_mode() -> bool {
    let mut test = false;
    let mut bench = false;
    for a in std::env::args().skip(1) {
        test |= a == "--test";
        bench |= a == "--bench";
    }
    test || !bench
}

/// `name` parsed as a number (underscores allowed: `1_000_000`), or `default` when unset; a
/// value that does not parse stops the bench with its name and the reason.
pub fn env_num<T: std::str::FromStr>(name: &str, default: T) -> T
where
    T::Err: std::fmt::Display,
{
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .replace('_', "")
            .parse()
            .unwrap_or_else(|e| panic!("{name}={v}: {e}")),
        Err(_) => default,
    }
}

/// `name` as a string, or `default` when unset.
pub fn env_str(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

/// `MINNOW_BENCH_DIR`: the file system the benches' databases go on (default: the system's
/// temporary directory).
pub fn bench_parent() -> Option<PathBuf> {
    std::env::var_os("MINNOW_BENCH_DIR").map(PathBuf::from)
}

/// A fresh directory under `parent` (or the temporary directory), removed when dropped.
pub fn bench_dir_in(parent: Option<PathBuf>) -> tempfile::TempDir {
    match parent {
        Some(dir) => tempfile::tempdir_in(dir),
        None => tempfile::tempdir(),
    }
    .unwrap_or_else(|e| panic!("cannot create a bench directory: {e}"))
}

/// A fresh directory under `MINNOW_BENCH_DIR` (or the temporary directory).
pub fn bench_dir() -> tempfile::TempDir {
    bench_dir_in(bench_parent())
}

/// Where Criterion writes its reports (`CRITERION_HOME`, else `<target>/criterion`): the
/// benches put their same-run results files beside them.
pub fn criterion_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return PathBuf::from(home);
    }
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(t) => PathBuf::from(t).join("criterion"),
        None => PathBuf::from("target/criterion"),
    }
}

/// Writes a bench's same-run results file through the `csv` crate: the `header` (its
/// comma-separated column names), then `rows`; says on stderr, after `tag`, where it went or
/// why it could not be written (a results file never stops a bench).
pub fn write_csv(tag: &str, path: &Path, header: &str, rows: &[Vec<String>]) {
    let written = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .map_err(csv::Error::from)
        .and_then(|()| {
            let mut w = csv::Writer::from_path(path)?;
            w.write_record(header.split(','))?;
            for r in rows {
                w.write_record(r)?;
            }
            Ok(w.flush()?)
        });
    match written {
        Ok(()) => eprintln!("{tag}: wrote {}", path.display()),
        Err(e) => eprintln!("{tag}: could not write {}: {e}", path.display()),
    }
}

/// The median of `v` (0 for an empty list).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}
