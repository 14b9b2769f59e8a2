//! Shared by the model and crash tests: the campaign RNG (the crash simulator's), the test table,
//! its model.

#![allow(dead_code)]

use std::collections::BTreeMap;

use std::sync::Arc;

use minnow::PageSize;
use minnow::backend::Backend;
use minnow::{ColumnDef, ColumnType, Config, IndexDef, IoBackend, TableDef, Transaction, Value};

pub use minnow_io::SplitMix64 as Rng;

/// A small database for power-cut campaigns on `backend` (the crash simulator): 4 KiB pages,
/// a 32-page pool and a 512 KiB redo log, so pages are evicted, flushed and checkpointed
/// often; a 4-page doublewrite area, one cleaner, no read-ahead, no pool dump. Campaigns
/// change what they need with `Config { .., ..crash_config(b) }`.
pub fn crash_config(backend: Arc<dyn Backend>) -> Config {
    Config {
        page_size: PageSize::K4,
        buffer_pool_size: 32 * 4096,
        log_file_size: 512 << 10,
        doublewrite_pages: 4,
        page_cleaners: 1,
        read_ahead_threshold: 0,
        buffer_pool_dump_at_shutdown: false,
        io_backend: IoBackend::Custom(backend),
        ..Config::default()
    }
}

/// `t(id U64 PK, a I32, u Var(8) NULL, pad Var(120))`, `by_a(a)`, unique `by_u(u)`.
pub fn table_def() -> TableDef {
    TableDef::new("t")
        .column(ColumnDef::new("id", ColumnType::U64))
        .column(ColumnDef::new("a", ColumnType::I32))
        .column(ColumnDef::nullable("u", ColumnType::Var(8)))
        .column(ColumnDef::new("pad", ColumnType::Var(120)))
        .primary_key(&["id"])
        .index(IndexDef::new("by_a", &["a"]))
        .index(IndexDef::unique("by_u", &["u"]))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub a: i64,
    pub u: Option<Vec<u8>>,
    pub pad: Vec<u8>,
}

impl Row {
    pub fn values(&self, id: u64) -> Vec<Value> {
        vec![
            Value::UInt(id),
            Value::Int(self.a),
            self.u.clone().map_or(Value::Null, Value::Bytes),
            Value::Bytes(self.pad.clone()),
        ]
    }
}

pub type Model = BTreeMap<u64, Row>;

/// A random row whose `u` (if any) no other row of `m` than `id` holds.
pub fn random_row(rng: &mut Rng, m: &Model, id: u64) -> Row {
    let a = rng.below(50) as i64 - 25;
    let mut u = None;
    if rng.below(3) > 0 {
        let cand = format!("u{}", rng.below(400)).into_bytes();
        if !m
            .iter()
            .any(|(k, r)| *k != id && r.u.as_ref() == Some(&cand))
        {
            u = Some(cand);
        }
    }
    let len = rng.below(120) as usize;
    let pad = (0..len).map(|i| (id as u8).wrapping_add(i as u8)).collect();
    Row { a, u, pad }
}

/// A statement against the model.
#[derive(Debug, Clone)]
pub enum Op {
    Insert(u64, Row),
    Update(u64, Row),
    Delete(u64),
}

impl Op {
    pub fn apply(&self, m: &mut Model) {
        match self {
            Op::Insert(id, r) | Op::Update(id, r) => {
                m.insert(*id, r.clone());
            }
            Op::Delete(id) => {
                m.remove(id);
            }
        }
    }

    /// A random valid statement (no duplicate keys) for model `m`.
    pub fn random(rng: &mut Rng, m: &Model, keys: u64) -> Op {
        let id = rng.below(keys);
        match (m.contains_key(&id), rng.below(3)) {
            (false, _) => Op::Insert(id, random_row(rng, m, id)),
            (true, 0) => Op::Delete(id),
            (true, _) => Op::Update(id, random_row(rng, m, id)),
        }
    }

    /// The operation as a statement of transaction `tx`.
    pub fn run_in(&self, tx: &mut Transaction, t: &minnow::Table) -> minnow::Result<()> {
        match self {
            Op::Insert(id, r) => tx.insert(t, &r.values(*id)),
            Op::Update(id, r) => tx.update(t, &r.values(*id)),
            Op::Delete(id) => tx.delete(t, &[Value::UInt(*id)]).map(|_| ()),
        }
    }

    pub fn run(&self, t: &minnow::Table) -> minnow::Result<()> {
        match self {
            Op::Insert(id, r) => t.insert(&r.values(*id)).map(|_| ()),
            Op::Update(id, r) => t.update(&r.values(*id)).map(|_| ()),
            Op::Delete(id) => {
                let d = t.delete(&[Value::UInt(*id)])?;
                assert!(d, "delete of existing row {id} found nothing");
                Ok(())
            }
        }
    }
}

/// Every row of the table, in primary key order, as the model's rows.
pub fn all_rows(t: &minnow::Table) -> Vec<Vec<Value>> {
    t.scan(minnow::Scan::all())
        .unwrap()
        .collect::<minnow::Result<Vec<_>>>()
        .unwrap()
}

pub fn model_rows(m: &Model) -> Vec<Vec<Value>> {
    m.iter().map(|(id, r)| r.values(*id)).collect()
}

pub fn seeds(default: u64) -> std::ops::Range<u64> {
    minnow_io::campaign_seeds(default)
}

/// A database on a crash simulator made with `config`, after `load`, every page flushed:
/// what is left for a close under test is the close itself. Returns its directory, the
/// simulator, the backend it is seen through, and the open database.
pub fn crash_db(
    config: impl Fn(&Arc<dyn Backend>) -> Config,
    load: impl Fn(&minnow::Database),
) -> (
    tempfile::TempDir,
    Arc<minnow::backend::CrashSim>,
    Arc<dyn Backend>,
    minnow::Database,
) {
    use minnow::inspect::Internals;
    let dir = tempfile::tempdir().unwrap();
    let sim = Arc::new(minnow::backend::CrashSim::new(Arc::new(
        minnow::backend::SyncBackend::new(),
    )));
    let backend: Arc<dyn Backend> = sim.clone();
    let db = minnow::Database::create(dir.path(), config(&backend)).unwrap();
    load(&db);
    db.buffer_pool().unwrap().flush_all().unwrap();
    (dir, sim, backend, db)
}

/// A power-cut campaign over one commit, `seeds(4)` seeds: for each, a database on a crash
/// simulator with [`crash_config`], where `commit(seed, db, sim)` does its work, arms the
/// simulator and commits, saying whether the commit was acknowledged; after the cut and the
/// recovery, `kept(seed, db)` says whether the database holds all of the commit's work
/// (it asserts that it holds none of it otherwise). An acknowledged commit must be kept,
/// `check()` must pass after recovery, and with 4 seeds or more the cuts must fall on both
/// sides of the commit.
pub fn commit_campaign(
    commit: impl Fn(u64, &minnow::Database, &minnow::backend::CrashSim) -> bool,
    kept: impl Fn(u64, &minnow::Database) -> bool,
) {
    use minnow::backend::{CrashSim, SyncBackend};
    let (mut all_seen, mut none_seen) = (0, 0);
    let seeds = seeds(4);
    let n = seeds.end - seeds.start;
    for seed in seeds {
        let dir = tempfile::tempdir().unwrap();
        let sim = Arc::new(CrashSim::new(Arc::new(SyncBackend::new())));
        let backend: Arc<dyn Backend> = sim.clone();
        let acked = {
            let db =
                minnow::Database::create(dir.path(), crash_config(Arc::clone(&backend))).unwrap();
            commit(seed, &db, &sim)
        };
        let report = sim.power_cut(seed).unwrap();
        let db = minnow::Database::open(dir.path(), crash_config(backend))
            .unwrap_or_else(|e| panic!("seed {seed}: open: {e}\n{report}"));
        let all = kept(seed, &db);
        eprintln!("seed {seed}: acked {acked}, kept {all}");
        if all {
            all_seen += 1;
        } else {
            assert!(!acked, "seed {seed}: an acknowledged commit was lost");
            none_seen += 1;
        }
        db.check()
            .unwrap_or_else(|e| panic!("seed {seed}: check after recovery: {e}\n{report}"));
        db.close().unwrap();
    }
    eprintln!("{all_seen} seeds kept the commit, {none_seen} did not");
    if n >= 4 {
        assert!(
            all_seen > 0 && none_seen > 0,
            "the cuts must fall on both sides of the commit"
        );
    }
}
