//! # minnow-suite
//!
//! The workspace root package. It owns the cross-crate integration tests in `tests/` and the
//! Criterion benches in `benches/` (one per documented experiment, see docs/EXPERIMENTS.md).
//! The engine itself lives in the crates under `crates/`; this library only holds helpers
//! those tests and benches share.

use std::path::PathBuf;

/// The repository's `fixtures/` directory: small golden files and real InnoDB tablespaces.
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}
