//! Shared setup for the tree tests: a tablespace, a redo log and a small buffer pool on real
//! files in a temporary directory, and a clean reopen (shutdown, then recovery).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use minnow_btree::record::{Column, ColumnType, RecordLayout, Value};
use minnow_buf::{BufConfig, BufferPool, DirectWriter, SpaceMap};
use minnow_io::{Backend, FlushMethod, OpenOptions, SyncBackend, Tablespace};
use minnow_page::PageSize;
use minnow_page::checksum::{ChecksumAlgorithm, ChecksumPolicy};
use minnow_redo::Log;

pub const SPACE: u32 = 1;
pub const PAGE: PageSize = PageSize::K4;

pub fn cfg(frames: usize) -> BufConfig {
    BufConfig {
        read_ahead_threshold: 0,
        ..BufConfig::with_frames(frames, PAGE)
    }
}

/// Key `i64`, a nullable VARCHAR(400) value.
pub fn layout() -> RecordLayout {
    RecordLayout::clustered(
        vec![Column::new(ColumnType::I64)],
        vec![Column::nullable(ColumnType::Var(400))],
    )
    .unwrap()
}

/// Key `(i64, 120 fixed bytes)`, a nullable VARCHAR(300) value: node pointers are long
/// (about 28 to a 4 KiB page), so a few thousand rows make a tree three or four levels high.
/// Both key columns are fixed-width, so reads descend optimistically (`tree::olc`).
pub fn tall_layout() -> RecordLayout {
    RecordLayout::clustered(
        vec![
            Column::new(ColumnType::I64),
            Column::new(ColumnType::Fixed(120)),
        ],
        vec![Column::nullable(ColumnType::Var(300))],
    )
    .unwrap()
}

/// The key of row `k` of [`tall_layout`].
pub fn tall_key(k: i64) -> Vec<Value> {
    vec![Value::Int(k), Value::Bytes(vec![k as u8; 120])]
}

/// Row `k` of [`tall_layout`] with value `v` (system columns of transaction 1).
pub fn tall_row(k: i64, v: &[u8]) -> Vec<Value> {
    let mut r = tall_key(k);
    r.extend([
        Value::trx_id(1),
        Value::roll_ptr(1 << 55),
        Value::Bytes(v.to_vec()),
    ]);
    r
}

pub fn row(key: i64, value: &[u8]) -> Vec<Value> {
    vec![
        Value::Int(key),
        Value::trx_id(1),
        Value::roll_ptr(1 << 55),
        Value::Bytes(value.to_vec()),
    ]
}

pub fn value_of(values: &[Value]) -> (i64, Vec<u8>) {
    match (&values[0], &values[3]) {
        (Value::Int(k), Value::Bytes(b)) => (*k, b.clone()),
        other => panic!("unexpected row {other:?}"),
    }
}

/// A tiny deterministic generator (SplitMix64) for the threaded tests' fixed seeds.
pub struct Rng(pub u64);

impl Rng {
    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}

pub struct Env {
    pub dir: tempfile::TempDir,
    pub frames: usize,
}

impl Env {
    pub fn new(frames: usize) -> Env {
        Env {
            dir: tempfile::tempdir().unwrap(),
            frames,
        }
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("t1.ibd")
    }

    fn redo(&self) -> PathBuf {
        self.dir.path().join("redo")
    }

    /// Creates the tablespace (one page: the allocator grows it) and the log.
    pub fn create(&self) -> BufferPool {
        self.create_with(None)
    }

    /// [`Env::create`] with the tablespace compressed as `zip` says (plain with `None`).
    pub fn create_with(&self, zip: Option<minnow_zip::ZipConfig>) -> BufferPool {
        let backend = SyncBackend::new();
        let (data, checksum) = (self.data(), ChecksumAlgorithm::Crc32);
        let space = Tablespace::create_with_zip(
            &backend,
            &data,
            SPACE,
            PAGE,
            zip,
            checksum,
            FlushMethod::Fsync,
            1,
        )
        .unwrap();
        let spaces = Arc::new(SpaceMap::new());
        spaces.insert(Arc::new(space));
        let file = backend
            .open(
                &self.redo(),
                &OpenOptions::new(FlushMethod::Fsync).create(true),
            )
            .unwrap();
        let log = Arc::new(Log::create(file, 8 << 20).unwrap());
        BufferPool::open(cfg(self.frames), spaces, log, Arc::new(DirectWriter)).unwrap()
    }

    /// Opens the files again and recovers.
    pub fn reopen(&self) -> BufferPool {
        reopen_at(self.dir.path(), &self.data(), &self.redo(), self.frames)
    }
}

fn reopen_at(_dir: &Path, data: &Path, redo: &Path, frames: usize) -> BufferPool {
    let backend = SyncBackend::new();
    let opts = OpenOptions::new(FlushMethod::Fsync);
    let space =
        Tablespace::open_for_recovery(&backend, data, &opts, ChecksumPolicy::default()).unwrap();
    let spaces = Arc::new(SpaceMap::new());
    spaces.insert(Arc::new(space));
    let log_file = backend.open(redo, &opts).unwrap();
    let (pool, _log, _report) = BufferPool::recover(
        cfg(frames),
        spaces,
        None,
        || Ok(Arc::new(DirectWriter)),
        log_file,
    )
    .unwrap();
    pool
}

/// The number in environment variable `name` (a longer campaign asked for by hand), else
/// `default` (what CI runs).
pub fn env_count(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
