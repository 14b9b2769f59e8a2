//! Shared setup: a scratch buffer pool of 4 KiB pages and one clustered tree (key `u64`, a
//! VARCHAR value) with an adaptive hash index installed.

#![allow(dead_code)]

use minnow_ahi::{Ahi, AhiConfig};
use minnow_btree::BTree;
use minnow_btree::record::{Column, ColumnType, RecordLayout, Value};
use minnow_buf::{BufConfig, BufferPool};
use minnow_page::PageSize;

pub const SPACE: u32 = 1;
pub const INDEX: u64 = 42;

pub fn layout() -> RecordLayout {
    RecordLayout::clustered(
        vec![Column::new(ColumnType::U64)],
        vec![Column::new(ColumnType::Var(300))],
    )
    .unwrap()
}

pub fn row(k: u64, v: &[u8]) -> Vec<Value> {
    vec![
        Value::UInt(k),
        Value::trx_id(1),
        Value::roll_ptr(1 << 55),
        Value::Bytes(v.to_vec()),
    ]
}

/// The value a test stores for key `k` in generation `g`.
pub fn value(k: u64, g: u64) -> Vec<u8> {
    let len = (k.wrapping_mul(7) ^ g) % 40 + 1;
    (0..len)
        .map(|i| (k as u8) ^ (g as u8).wrapping_add(i as u8))
        .collect()
}

pub struct Setup {
    pub dir: tempfile::TempDir,
    pub pool: BufferPool,
    pub tree: BTree,
    pub ahi: Ahi,
}

pub fn setup(config: AhiConfig) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let pool =
        BufferPool::create_scratch(dir.path(), BufConfig::with_frames(2048, PageSize::K4), 1)
            .unwrap();
    let (tree, _) = BTree::create(&pool, SPACE, INDEX, layout()).unwrap();
    let ahi = Ahi::new(config);
    let tree = tree.with_search_hook(ahi.hook(SPACE, INDEX, layout()));
    Setup {
        dir,
        pool,
        tree,
        ahi,
    }
}

/// The value stored for `k`, or `None`.
pub fn get(s: &Setup, k: u64) -> Option<Vec<u8>> {
    let e = s.tree.get(&s.pool, &[Value::UInt(k)]).unwrap()?;
    assert!(!e.deleted);
    match &e.values[3] {
        Value::Bytes(b) => Some(b.clone()),
        other => panic!("value {other:?}"),
    }
}

/// Looks every key of `keys` up `rounds` times (enough to make the index ready and hash its
/// pages), checking each answer with `expect`.
pub fn warm(
    s: &Setup,
    keys: impl Iterator<Item = u64> + Clone,
    rounds: usize,
    expect: impl Fn(u64) -> Option<Vec<u8>>,
) {
    for _ in 0..rounds {
        for k in keys.clone() {
            assert_eq!(get(s, k), expect(k), "key {k}");
        }
    }
}

/// Values that start with their key, so that a reader can tell a record of another key.
pub fn tagged(k: u64, g: u64) -> Vec<u8> {
    let mut v = k.to_be_bytes().to_vec();
    v.extend(std::iter::repeat_n(g as u8, ((k ^ g) % 50) as usize));
    v
}

/// SplitMix64: the stress tests' choices, from a fixed seed.
pub struct Rng(pub u64);

impl Rng {
    /// A number below `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}
