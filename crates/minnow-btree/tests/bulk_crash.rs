//! Power cuts during a bulk build.
//!
//! A catalog tree (a stand-in for the dictionary) is created and made durable first. Then a
//! tree is bulk-built from sorted records with a small pool and a page cleaner (so built pages
//! are flushed through the doublewrite buffer, and torn, while the build runs), its end LSN is
//! made durable, and its root is published by inserting `(1, root)` into the catalog and
//! syncing. The power is cut after a random number of writes and syncs.
//!
//! After recovery the catalog must pass `check()`. If the publication was acknowledged, the
//! catalog must name the root and the built tree must pass `check()` and hold exactly the
//! input; if the catalog names a root without acknowledgement (the publishing commit was in
//! flight), the same holds; otherwise the catalog is empty and the half-built pages are
//! unreachable. In every case the page allocator is consistent and the space takes more work.
//!
//! `MINNOW_CRASH_SEEDS=N` runs N seeds (default 60), `MINNOW_CRASH_SEED_START=S` starts at S.

mod common;
mod crash_common;

use std::sync::Arc;

use common::{SPACE, layout, row, value_of};
use minnow_btree::record::{Column, ColumnType, RecordLayout, Value};
use minnow_btree::tree::{BulkBuilder, BulkOptions, space_usage};
use minnow_btree::{BTree, ScanRange};
use minnow_io::{Backend, CrashSim, SyncBackend};
use minnow_redo::FlushAtCommit;

use minnow_io::SplitMix64 as Rng;

const RECORDS: i64 = 1500;

/// The catalog: key U32, value the root page number.
fn catalog_layout() -> RecordLayout {
    RecordLayout::clustered(
        vec![Column::new(ColumnType::U32)],
        vec![Column::new(ColumnType::U32)],
    )
    .unwrap()
}

fn value(k: i64) -> Vec<u8> {
    (0..(k as usize % 61 + 30))
        .map(|i| (k as u8) ^ (i as u8))
        .collect()
}

fn expected() -> Vec<(i64, Vec<u8>)> {
    (0..RECORDS).map(|k| (k * 2, value(k))).collect()
}

#[derive(Debug, Default)]
struct Outcome {
    published: bool,
    built: bool,
}

fn run_seed(seed: u64) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let sim = Arc::new(CrashSim::new(Arc::new(SyncBackend::new())));
    let backend: Arc<dyn Backend> = sim.clone();
    let data = dir.path().join("t1.ibd");
    let redo = dir.path().join("redo");
    let mut rng = Rng(seed ^ 0xB01C_0000);
    let mut outcome = Outcome::default();
    let catalog_root = {
        let pool = crash_common::create(&*backend, dir.path(), &data, &redo, 512 << 10);
        let (catalog, end) = BTree::create(&pool, SPACE, 1, catalog_layout()).unwrap();
        pool.commit_durable(end, FlushAtCommit::Sync).unwrap();
        pool.flush_all().unwrap();
        sim.arm(1 + rng.below(200));
        let built = (|| {
            let mut b = BulkBuilder::new(&pool, SPACE, 5, layout(), BulkOptions::default())
                .map_err(|e| e.to_string())?;
            for k in 0..RECORDS {
                b.push_values(&row(k * 2, &value(k)))
                    .map_err(|e| e.to_string())?;
            }
            let (tree, end) = b.finish().map_err(|e| e.to_string())?;
            pool.commit_durable(end, FlushAtCommit::Sync)
                .map_err(|e| e.to_string())?;
            Ok::<_, String>(tree)
        })();
        if let Ok(tree) = built {
            outcome.built = true;
            let publish = catalog.insert(
                &pool,
                &[
                    Value::UInt(1),
                    Value::trx_id(1),
                    Value::roll_ptr(1 << 55),
                    Value::UInt(u64::from(tree.root())),
                ],
            );
            if let Ok(end) = publish {
                outcome.published = pool.commit_durable(end, FlushAtCommit::Sync).is_ok();
            }
        }
        let root = catalog.root();
        drop(pool);
        root
    };
    let report = sim.power_cut(seed).unwrap();

    let pool = crash_common::recover(
        &*backend,
        dir.path(),
        &data,
        &redo,
        &format!(
            "seed {seed}
{report}"
        ),
    );
    let catalog = BTree::open(&pool, SPACE, catalog_root, catalog_layout()).unwrap();
    catalog
        .check(&pool)
        .unwrap_or_else(|e| panic!("seed {seed}: catalog check: {e}\n{report}"));
    let entry = catalog.get(&pool, &[Value::UInt(1)]).unwrap();
    match entry {
        Some(e) => {
            let Some(Value::UInt(root)) = e.values.get(3).cloned() else {
                panic!("seed {seed}: bad catalog entry {e:?}");
            };
            assert!(
                outcome.built,
                "seed {seed}: a root was published without a build"
            );
            let tree = BTree::open(&pool, SPACE, root as u32, layout())
                .unwrap_or_else(|e| panic!("seed {seed}: open built tree: {e}\n{report}"));
            let stats = tree
                .check(&pool)
                .unwrap_or_else(|e| panic!("seed {seed}: built tree check: {e}\n{report}"));
            assert_eq!(stats.records, RECORDS as u64, "seed {seed}");
            let got: Vec<_> = tree
                .scan(&pool, ScanRange::all())
                .unwrap()
                .map(|e| value_of(&e.unwrap().values))
                .collect();
            assert_eq!(got, expected(), "seed {seed}");
            tree.insert(&pool, &row(-5, b"after")).unwrap();
            tree.check(&pool).unwrap();
        }
        None => assert!(
            !outcome.published,
            "seed {seed}: an acknowledged publication is lost\n{report}"
        ),
    }
    // The allocator is consistent and the space takes more work: a new tree and a new bulk
    // build on top of whatever pages the crash leaked.
    let usage = space_usage(&pool, SPACE).unwrap();
    assert!(usage.free_limit >= 2, "seed {seed}: {usage:?}");
    let mut b = BulkBuilder::new(&pool, SPACE, 6, layout(), BulkOptions::default()).unwrap();
    for k in 0..300 {
        b.push_values(&row(k, b"again")).unwrap();
    }
    let (again, _) = b.finish().unwrap();
    assert_eq!(again.check(&pool).unwrap().records, 300);
    outcome
}

#[test]
fn bulk_build_crash_campaign() {
    let (mut seeds, mut published, mut unpublished) = (0u64, 0u64, 0u64);
    for seed in minnow_io::campaign_seeds(60) {
        let o = run_seed(seed);
        seeds += 1;
        if o.published {
            published += 1;
        } else {
            unpublished += 1;
        }
    }
    eprintln!(
        "bulk build crash campaign: {seeds} seeds, {published} with the tree published before \
         the cut, {unpublished} cut before publication"
    );
    assert!(seeds > 0);
}
