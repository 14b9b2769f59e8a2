//! `drop_table` and `drop_index`: pages go back to the tablespace and are reused, typed
//! errors, stale handles, and a crash campaign with power cuts inside the drops.
//!
//! The campaign: per seed, a table with two secondary indexes and some rows (durable), then,
//! under an armed [`CrashSim`], a `drop_index` or a `drop_table` followed by a re-create of
//! the same name and inserts that allocate pages. After the power cut and `open`: an
//! acknowledged drop stays done, an unacknowledged one is all or nothing, the rows are the
//! model's, and `check()` passes, which includes the page allocator (every tree page in its
//! tree's segment, every segment owned by a live tree, no page both used and free).
//!
//! `MINNOW_CRASH_SEEDS=N` runs N seeds (default 48), `MINNOW_CRASH_SEED_START=S` starts at S.

mod common;

use std::sync::Arc;

use common::{Model, Op, Rng, all_rows, model_rows, seeds, table_def};
use minnow::PageSize;
use minnow::backend::{Backend, CrashSim, SyncBackend};
use minnow::inspect::Internals;
use minnow::{Config, Database, Error, IoBackend, Scan, Value};

fn small(backend: Option<Arc<dyn Backend>>) -> Config {
    let mut c = Config {
        page_size: PageSize::K4,
        buffer_pool_size: 64 * 4096,
        log_file_size: 1 << 20,
        doublewrite_pages: 4,
        page_cleaners: 1,
        read_ahead_threshold: 0,
        buffer_pool_dump_at_shutdown: false,
        ..Config::default()
    };
    if let Some(b) = backend {
        c.io_backend = IoBackend::Custom(b);
        c.buffer_pool_size = 24 * 4096;
        c.log_file_size = 256 << 10;
    }
    c
}

fn load(db: &Database, rng: &mut Rng, model: &mut Model, n: usize) {
    let t = db.table("t").unwrap();
    for _ in 0..n {
        let op = Op::random(rng, model, 100_000);
        op.run(&t).unwrap();
        op.apply(model);
    }
}

/// Pages of the undo segment (the one holding the TRX_SYS page).
fn undo_pages(db: &Database) -> u64 {
    let r = minnow_btree::space::check_space(db.buffer_pool().unwrap(), 0).unwrap();
    r.segments
        .values()
        .find(|s| s.pages.contains(&minnow::inspect::TRX_SYS_PAGE))
        .map_or(0, |s| s.pages.len() as u64)
}

fn file_len(dir: &std::path::Path) -> u64 {
    std::fs::metadata(dir.join(minnow::inspect::SYSTEM_TABLESPACE))
        .unwrap()
        .len()
}

#[test]
fn dropped_pages_are_reused_and_the_file_stops_growing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), small(None)).unwrap();
    let mut sizes = Vec::new();
    let mut undo = Vec::new();
    for round in 0..3 {
        db.create_table(table_def()).unwrap();
        let mut rng = Rng(7);
        let mut model = Model::new();
        load(&db, &mut rng, &mut model, 3000);
        assert_eq!(all_rows(&db.table("t").unwrap()), model_rows(&model));
        db.check().unwrap();
        db.buffer_pool().unwrap().flush_all().unwrap();
        sizes.push(file_len(dir.path()));
        undo.push(undo_pages(&db));
        if round < 2 {
            db.drop_table("t").unwrap();
            db.check().unwrap();
            assert!(matches!(db.table("t"), Err(Error::NoSuchTable { .. })));
        }
    }
    // The same data after a drop fits in the pages the drop gave back: the file grows only by
    // the undo the rounds wrote (what purge has not given back yet), plus at most one extent
    // the undo segment took whole.
    let extent = 256 * 4096;
    for r in 1..3 {
        let undo_growth = undo[r].saturating_sub(undo[0]) * 4096;
        assert!(
            sizes[r] - sizes[0] <= undo_growth + extent,
            "round {r}: {sizes:?}, undo pages {undo:?}"
        );
    }
    db.close().unwrap();
    let db = Database::open(dir.path(), small(None)).unwrap();
    assert_eq!(db.tables().unwrap(), ["t"]);
    db.check().unwrap();
}

#[test]
fn drop_index_keeps_the_table_and_frees_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), small(None)).unwrap();
    db.create_table(table_def()).unwrap();
    let mut rng = Rng(3);
    let mut model = Model::new();
    load(&db, &mut rng, &mut model, 2000);
    let old = db.table("t").unwrap();
    let before = minnow_btree::space::check_space(db.buffer_pool().unwrap(), 0).unwrap();
    db.drop_index("t", "by_a").unwrap();
    let after = minnow_btree::space::check_space(db.buffer_pool().unwrap(), 0).unwrap();
    assert_eq!(after.segments.len(), before.segments.len() - 2);
    assert!(after.usage.free_pages > before.usage.free_pages);
    db.check().unwrap();
    // A handle from before the drop is stale; a new one works without the index.
    assert!(matches!(
        old.get(&[Value::UInt(1)]),
        Err(Error::TableChanged { .. })
    ));
    let t = db.table("t").unwrap();
    assert_eq!(t.def().indexes.len(), 1);
    assert!(matches!(
        t.scan_index("by_a", Scan::all()),
        Err(Error::NoSuchIndex { .. })
    ));
    load(&db, &mut rng, &mut model, 500);
    assert_eq!(all_rows(&db.table("t").unwrap()), model_rows(&model));
    db.check().unwrap();
    // Typed errors.
    assert!(matches!(
        db.drop_index("t", "PRIMARY"),
        Err(Error::DropPrimary { .. })
    ));
    assert!(matches!(
        db.drop_index("t", "by_a"),
        Err(Error::NoSuchIndex { .. })
    ));
    assert!(matches!(
        db.drop_index("nope", "by_a"),
        Err(Error::NoSuchTable { .. })
    ));
    assert!(matches!(
        db.drop_table("nope"),
        Err(Error::NoSuchTable { .. })
    ));
    db.close().unwrap();
    let db = Database::open(dir.path(), small(None)).unwrap();
    assert_eq!(db.table_def("t").unwrap().indexes.len(), 1);
    assert_eq!(all_rows(&db.table("t").unwrap()), model_rows(&model));
    db.check().unwrap();
    db.drop_index("t", "by_u").unwrap();
    db.drop_table("t").unwrap();
    let r = minnow_btree::space::check_space(db.buffer_pool().unwrap(), 0).unwrap();
    // Only the dictionary's two segments and the undo segment are left.
    assert_eq!(r.segments.len(), 3);
    db.check().unwrap();
}

#[test]
fn a_handle_never_follows_its_name_to_a_recreated_table() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), small(None)).unwrap();
    db.create_table(table_def()).unwrap();
    race_fill(&db, 0);
    let old = db.table("t").unwrap();
    // A handle from before create_index reads and writes through the new definition...
    db.create_index("t", minnow::IndexDef::new("by_pad", &["pad"]))
        .unwrap();
    assert_eq!(old.scan_index("by_pad", Scan::all()).unwrap().count(), 300);
    old.delete(&[Value::UInt(0)]).unwrap();
    // ...but once the table is dropped and the name taken again, it is stale: it neither
    // reads nor writes the new table.
    db.drop_table("t").unwrap();
    db.create_table(table_def()).unwrap();
    let row = [
        Value::UInt(1),
        Value::Int(1),
        Value::Null,
        Value::Bytes(vec![]),
    ];
    for r in [
        old.insert(&row).map(drop),
        old.get(&[Value::UInt(1)]).map(drop),
        old.scan(Scan::all()).map(drop),
        old.delete(&[Value::UInt(1)]).map(drop),
    ] {
        assert!(matches!(r, Err(Error::TableChanged { .. })), "{r:?}");
    }
    assert_eq!(db.check().unwrap().rows["t"], 0);
}

/// What one reader thread of the DDL race saw: reads that succeeded, reads the DDL cut short
/// with a typed error, and every other error (which must not happen).
#[derive(Debug, Default)]
struct Seen {
    ok: u64,
    changed: u64,
    other: Vec<String>,
}

/// One reader of the DDL race: takes a handle, reads through it (gets, scans of the primary
/// key and of `by_a`, covering and not, alone and in a transaction) until the handle is
/// reported stale, and takes a new one.
fn race_reader(db: &Database, stop: &std::sync::atomic::AtomicBool, seed: u64) -> Seen {
    let mut rng = Rng(seed);
    let mut seen = Seen::default();
    let drain = |rows: minnow::Result<minnow::Rows>| -> minnow::Result<()> {
        rows?.try_for_each(|r| r.map(drop))
    };
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let t = match db.table("t") {
            Ok(t) => t,
            Err(Error::NoSuchTable { .. }) => continue,
            Err(e) => {
                seen.other.push(format!("table: {e}"));
                continue;
            }
        };
        for _ in 0..50 {
            let key = [Value::UInt(rng.below(RACE_ROWS))];
            let r = match rng.below(6) {
                0 => t.get(&key).map(drop),
                1 => drain(t.scan(Scan::all())),
                2 => drain(t.scan(Scan::all().reverse().columns(&["pad"]))),
                3 => drain(t.scan_index("by_a", Scan::all().columns(&["id"]))),
                4 => drain(t.scan_index("by_a", Scan::all().columns(&["pad"]))),
                _ => db.begin().and_then(|tx| {
                    tx.get(&t, &key)?;
                    drain(tx.scan_index(&t, "by_u", Scan::all()))?;
                    drain(tx.scan(&t, Scan::all().limit(50)))
                }),
            };
            match r {
                Ok(()) => seen.ok += 1,
                Err(Error::TableChanged { .. }) => {
                    seen.changed += 1;
                    break;
                }
                // A handle taken while `by_a` was dropped.
                Err(Error::NoSuchIndex { .. }) => break,
                Err(e) => seen.other.push(e.to_string()),
            }
        }
    }
    seen
}

/// Rows of the DDL race's table.
const RACE_ROWS: u64 = 300;

/// Fills the race's (new) table `t`: enough rows for several leaves per index, so a drop
/// frees pages that the next round's inserts (another index id) and undo take again. Odd
/// rounds `load` the rows, which frees the table's empty trees under readers of them.
fn race_fill(db: &Database, round: u64) {
    let t = db.table("t").unwrap();
    let rows = (0..RACE_ROWS).map(|id| {
        vec![
            Value::UInt(id),
            Value::Int(((id * 7 + round) % 50) as i64),
            Value::Bytes(format!("u{id}").into_bytes()),
            Value::Bytes(vec![b'a' + (round % 26) as u8; 100]),
        ]
    });
    if round % 2 == 1 {
        t.load(rows).unwrap();
    } else {
        t.insert_many(rows).unwrap();
    }
}

#[test]
fn reads_racing_drops_get_table_changed_never_corruption() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), small(None)).unwrap();
    db.create_table(table_def()).unwrap();
    race_fill(&db, 0);
    let stop = AtomicBool::new(false);
    let seen: Vec<Seen> = std::thread::scope(|s| {
        let readers: Vec<_> = (0..2)
            .map(|i| {
                let (db, stop) = (&db, &stop);
                s.spawn(move || race_reader(db, stop, 100 + i))
            })
            .collect();
        for round in 1..=40u64 {
            if round % 3 == 0 {
                db.drop_index("t", "by_a").unwrap();
                db.create_index("t", minnow::IndexDef::new("by_a", &["a"]))
                    .unwrap();
            } else {
                db.drop_table("t").unwrap();
                db.create_table(table_def()).unwrap();
                race_fill(&db, round);
            }
        }
        stop.store(true, Ordering::Relaxed);
        readers.into_iter().map(|r| r.join().unwrap()).collect()
    });
    for (i, s) in seen.iter().enumerate() {
        assert!(
            s.other.is_empty(),
            "reader {i}: {} errors other than TableChanged, e.g. {:?}",
            s.other.len(),
            &s.other[..s.other.len().min(3)]
        );
        assert!(s.ok > 0, "reader {i} read nothing: {s:?}");
    }
    let report = db.check().unwrap();
    assert_eq!(report.rows["t"], RACE_ROWS);
}

/// What the campaign's DDL did before the crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ddl {
    DropIndex,
    DropTable,
}

fn run_seed(seed: u64) -> (bool, bool) {
    let dir = tempfile::tempdir().unwrap();
    let sim = Arc::new(CrashSim::new(Arc::new(SyncBackend::new())));
    let backend: Arc<dyn Backend> = sim.clone();
    let mut rng = Rng(seed ^ 0xD809_0000);
    let mut model = Model::new();
    let ddl = if seed.is_multiple_of(2) {
        Ddl::DropIndex
    } else {
        Ddl::DropTable
    };
    let mut dropped = false;
    let mut recreated = false;
    let mut after = Model::new();
    {
        let db = Database::create(dir.path(), small(Some(Arc::clone(&backend)))).unwrap();
        db.create_table(table_def()).unwrap();
        load(&db, &mut rng, &mut model, 150);
        db.buffer_pool().unwrap().flush_all().unwrap();
        // Every third seed dies within the first few IOs, i.e. inside the drop.
        let ops = if seed.is_multiple_of(3) {
            1 + rng.below(6)
        } else {
            1 + rng.below(300)
        };
        sim.arm(ops);
        let r = match ddl {
            Ddl::DropIndex => db.drop_index("t", "by_a"),
            Ddl::DropTable => db.drop_table("t"),
        };
        if r.is_ok() {
            dropped = true;
            if ddl == Ddl::DropTable && db.create_table(table_def()).is_ok() {
                recreated = true;
                let t = db.table("t").unwrap();
                for _ in 0..300 {
                    let op = Op::random(&mut rng, &after, 100_000);
                    let mut next = after.clone();
                    op.apply(&mut next);
                    if op.run(&t).is_err() {
                        break;
                    }
                    after = next;
                }
            }
        }
        assert!(
            sim.is_dead() || (dropped && (ddl == Ddl::DropIndex || recreated)),
            "seed {seed}: a statement failed without a crash"
        );
    }
    let report = sim.power_cut(seed).unwrap();
    let db = Database::open(dir.path(), small(Some(backend)))
        .unwrap_or_else(|e| panic!("seed {seed}: open after the crash failed: {e}\n{report}"));
    db.check()
        .unwrap_or_else(|e| panic!("seed {seed}: check after recovery: {e}\n{report}"));
    match ddl {
        Ddl::DropIndex => {
            let t = db.table("t").unwrap();
            let has = t.def().indexes.iter().any(|i| i.name == "by_a");
            assert!(
                !(dropped && has),
                "seed {seed}: acknowledged DROP INDEX undone"
            );
            assert_eq!(all_rows(&t), model_rows(&model), "seed {seed}");
        }
        Ddl::DropTable => match db.table("t") {
            Ok(t) => {
                let rows = all_rows(&t);
                if dropped {
                    // Only the re-created table can be there, with a prefix of its inserts.
                    assert!(rows.len() <= after.len() + 1, "seed {seed}");
                    assert!(
                        rows != model_rows(&model) || model.is_empty(),
                        "seed {seed}"
                    );
                } else {
                    assert_eq!(rows, model_rows(&model), "seed {seed}: half-dropped table");
                }
            }
            Err(Error::NoSuchTable { .. }) => {}
            Err(e) => panic!("seed {seed}: {e}"),
        },
    }
    // The space takes more work after recovery, and stays consistent.
    if db.table("t").is_err() {
        db.create_table(table_def()).unwrap();
    }
    let mut m = Model::new();
    let t = db.table("t").unwrap();
    for _ in 0..50 {
        let op = Op::random(&mut rng, &m, 100_000);
        if op.run(&t).is_ok() {
            op.apply(&mut m);
        }
    }
    db.check().unwrap();
    db.close().unwrap();
    (dropped, sim.is_dead())
}

#[test]
fn crash_campaign_drops_are_atomic_and_leak_nothing() {
    let mut acked = 0;
    let mut cut = 0;
    for seed in seeds(48) {
        let (dropped, _) = run_seed(seed);
        if dropped {
            acked += 1;
        } else {
            cut += 1;
        }
    }
    // Both outcomes must have been exercised for the campaign to mean anything.
    if seeds(48).count() >= 24 {
        assert!(acked > 0 && cut > 0, "acked {acked}, cut {cut}");
    }
}
