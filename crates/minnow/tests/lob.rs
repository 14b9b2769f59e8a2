//! The newer column types through the embedded API: DOUBLE, DATE, DATETIME keys and values,
//! BLOB and TEXT columns around the off-page thresholds (on 4 KiB and 16 KiB pages), a
//! value of a few MiB, reopen, `check()`, and a power-cut campaign during large-row inserts,
//! updates and deletes.
//!
//! `MINNOW_CRASH_SEEDS=N` runs N crash seeds (default 10), `MINNOW_CRASH_SEED_START=S` starts
//! at S.

mod common;

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use common::{Rng, seeds};
use minnow::PageSize;
use minnow::backend::{Backend, CrashSim, SyncBackend};
use minnow::{ColumnDef, ColumnType, Config, Database, Error, IndexDef, Scan, TableDef, Value};
use minnow_btree::tree::overflow::{max_record_len, part_capacity};

fn lob_def() -> TableDef {
    TableDef::new("docs")
        .column(ColumnDef::new("id", ColumnType::U32))
        .column(ColumnDef::nullable("body", ColumnType::Blob))
        .column(ColumnDef::nullable("title", ColumnType::Text))
        .column(ColumnDef::new("score", ColumnType::Double))
        .column(ColumnDef::nullable("day", ColumnType::Date))
        .column(ColumnDef::new("at", ColumnType::DateTime))
        .primary_key(&["id"])
        .index(IndexDef::new("by_score", &["score"]))
        .index(IndexDef::new("by_day", &["day", "at"]))
}

fn blob(seed: u64, len: usize) -> Vec<u8> {
    let mut r = Rng(seed);
    (0..len).map(|_| r.below(256) as u8).collect()
}

fn doc(id: u32, body: Option<usize>, title: usize, seed: u64) -> Vec<Value> {
    let title: String = (0..title).map(|i| ['a', 'é', 'z'][i % 3]).collect();
    vec![
        Value::UInt(id.into()),
        body.map_or(Value::Null, |n| Value::Bytes(blob(seed, n))),
        Value::text(&title),
        Value::Double((f64::from(id) - 7.5) * 1e3),
        Value::date(1999 + (id % 30) as u16, 2, 28).unwrap(),
        Value::datetime((2024, 2, 29), (23, 59, (id % 60) as u8), id * 7).unwrap(),
    ]
}

fn config(page: PageSize) -> Config {
    Config {
        page_size: page,
        buffer_pool_size: 8 << 20,
        buffer_pool_dump_at_shutdown: false,
        ..Config::default()
    }
}

fn rows(db: &Database) -> Vec<Vec<Value>> {
    db.table("docs")
        .unwrap()
        .scan(Scan::all())
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn thresholds(page: PageSize) -> Vec<usize> {
    let half = max_record_len(page.bytes());
    let part = part_capacity(page.bytes());
    vec![
        0,
        1,
        half - 120,
        half - 60,
        half,
        half + 1,
        part - 1,
        part,
        part + 1,
        5 * part,
        16384,
        300_000,
    ]
}

fn round_trip(page: PageSize) {
    let dir = tempfile::tempdir().unwrap();
    let sizes = thresholds(page);
    let mut model: BTreeMap<u32, Vec<Value>> = BTreeMap::new();
    {
        let db = Database::create(dir.path(), config(page)).unwrap();
        let t = db.create_table(lob_def()).unwrap();
        for (i, &n) in sizes.iter().enumerate() {
            let id = i as u32;
            let r = doc(
                id,
                if i == 0 { None } else { Some(n) },
                n.min(100),
                id.into(),
            );
            t.insert(&r).unwrap();
            assert_eq!(t.get(&r[..1]).unwrap().as_ref(), Some(&r), "size {n}");
            model.insert(id, r);
        }
        let report = db.check().unwrap();
        assert!(report.overflow_pages > 0);
        assert_eq!(rows(&db), model.values().cloned().collect::<Vec<_>>());
        // Grow the small ones, shrink the big ones.
        for (i, r) in model.iter_mut() {
            let n = sizes[sizes.len() - 1 - *i as usize];
            *r = doc(*i, Some(n), (n / 3).min(2000), u64::from(*i) + 99);
            t.update(r).unwrap();
        }
        db.check().unwrap();
        // A projection without the BLOB reads no overflow page and still sees the rest.
        let titles: Vec<_> = t
            .scan(Scan::all().columns(&["id", "title"]))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let want: Vec<_> = model
            .values()
            .map(|r| vec![r[0].clone(), r[2].clone()])
            .collect();
        assert_eq!(titles, want);
        // A secondary scan that fetches rows.
        let lo = Bound::Included(vec![Value::Double(-1e9)]);
        let via_index: Vec<_> = t
            .scan_index(
                "by_score",
                Scan::range(lo, Bound::Unbounded).columns(&["body"]),
            )
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(via_index.len(), model.len());
        for id in [1u32, 5, 9] {
            t.delete(&[Value::UInt(id.into())]).unwrap();
            model.remove(&id);
        }
        db.check().unwrap();
        db.close().unwrap();
    }
    let db = Database::open(dir.path(), config(page)).unwrap();
    db.check().unwrap();
    assert_eq!(rows(&db), model.values().cloned().collect::<Vec<_>>());
    let t = db.table("docs").unwrap();
    for id in model.keys().copied().collect::<Vec<_>>() {
        t.delete(&[Value::UInt(id.into())]).unwrap();
    }
    // A delete only delete-marks the row: its overflow pages stay for readers with older
    // views until purge removes the record, with them.
    db.check().unwrap();
    assert!(rows(&db).is_empty());
    db.purge().unwrap();
    assert_eq!(db.check().unwrap().overflow_pages, 0);
}

#[test]
fn lob_rows_round_trip_on_4k_pages() {
    round_trip(PageSize::K4);
}

#[test]
fn lob_rows_round_trip_on_16k_pages() {
    round_trip(PageSize::K16);
}

/// A BLOB of a few MiB in the default configuration (16 KiB pages, 64 MiB pool, 48 MiB log).
#[test]
fn a_few_mib_blob() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config {
        buffer_pool_dump_at_shutdown: false,
        ..Config::default()
    };
    let db = Database::create(dir.path(), cfg.clone()).unwrap();
    let t = db.create_table(lob_def()).unwrap();
    let big = doc(1, Some(3 << 20), 10, 1);
    t.insert(&big).unwrap();
    assert_eq!(t.get(&big[..1]).unwrap(), Some(big.clone()));
    let smaller = doc(1, Some(2 << 20), 10, 2);
    t.update(&smaller).unwrap();
    let report = db.check().unwrap();
    let per = part_capacity(PageSize::K16.bytes()) as u64;
    assert_eq!(report.overflow_pages, (2u64 << 20).div_ceil(per));
    db.close().unwrap();
    let db = Database::open(dir.path(), cfg).unwrap();
    let t = db.table("docs").unwrap();
    assert_eq!(t.get(&smaller[..1]).unwrap(), Some(smaller));
    t.delete(&[Value::UInt(1)]).unwrap();
    assert_eq!(t.get(&[Value::UInt(1)]).unwrap(), None);
    // The delete-marked row keeps its overflow pages until purge removes the record (the
    // background thread may have done so already); then they are free.
    db.purge().unwrap();
    let report = db.check().unwrap();
    assert_eq!(report.overflow_pages, 0);
    assert_eq!(report.delete_marked, 0);
}

#[test]
fn typed_errors_for_lob_keys_nan_and_bad_text() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config(PageSize::K4)).unwrap();
    let blob_pk = TableDef::new("a")
        .column(ColumnDef::new("b", ColumnType::Blob))
        .primary_key(&["b"]);
    assert!(matches!(
        db.create_table(blob_pk),
        Err(Error::BadDefinition { .. })
    ));
    let text_ix = lob_def().index(IndexDef::new("by_title", &["title"]));
    assert!(matches!(
        db.create_table(text_ix),
        Err(Error::BadDefinition { .. })
    ));
    let t = db
        .create_table(
            TableDef::new("d")
                .column(ColumnDef::new("x", ColumnType::Double))
                .column(ColumnDef::nullable("s", ColumnType::Text))
                .primary_key(&["x"]),
        )
        .unwrap();
    assert!(matches!(
        t.insert(&[Value::Double(f64::NAN), Value::Null]),
        Err(Error::TypeMismatch { .. })
    ));
    assert!(matches!(
        t.insert(&[Value::Double(1.0), Value::Bytes(vec![0xFF, 0xFE])]),
        Err(Error::TypeMismatch { .. })
    ));
    assert!(matches!(
        t.insert(&[Value::Int(1), Value::Null]),
        Err(Error::TypeMismatch { .. })
    ));
    // A secondary entry too big for a page is refused before the row is written.
    let wide = db
        .create_table(
            TableDef::new("w")
                .column(ColumnDef::new("id", ColumnType::U32))
                .column(ColumnDef::new("v", ColumnType::Var(4000)))
                .primary_key(&["id"])
                .index(IndexDef::new("by_v", &["v"])),
        )
        .unwrap();
    assert!(matches!(
        wide.insert(&[Value::UInt(1), Value::Bytes(vec![1; 3000])]),
        Err(Error::RowTooLarge { ref index, .. }) if index == "by_v"
    ));
    assert_eq!(wide.get(&[Value::UInt(1)]).unwrap(), None);
    wide.insert(&[Value::UInt(1), Value::Bytes(vec![1; 30])])
        .unwrap();
    assert!(matches!(
        wide.update(&[Value::UInt(1), Value::Bytes(vec![1; 3000])]),
        Err(Error::RowTooLarge { .. })
    ));
    // -0.0 is stored as 0.0: the same key.
    t.insert(&[Value::Double(-0.0), Value::text("zero")])
        .unwrap();
    assert!(matches!(
        t.insert(&[Value::Double(0.0), Value::Null]),
        Err(Error::DuplicateKey { .. })
    ));
    assert_eq!(
        t.get(&[Value::Double(0.0)]).unwrap(),
        Some(vec![Value::Double(0.0), Value::text("zero")])
    );
    for x in [
        f64::NEG_INFINITY,
        -1e300,
        -1.0,
        -f64::MIN_POSITIVE,
        1e-300,
        2.5,
        f64::INFINITY,
    ] {
        t.insert(&[Value::Double(x), Value::Null]).unwrap();
    }
    let keys: Vec<f64> = t
        .scan(Scan::all().columns(&["x"]))
        .unwrap()
        .map(|r| match r.unwrap()[0] {
            Value::Double(x) => x,
            ref other => panic!("{other:?}"),
        })
        .collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
    db.check().unwrap();
}

// ---- the power-cut campaign ----

fn crash_config(backend: Arc<dyn Backend>) -> Config {
    Config {
        buffer_pool_size: 96 * 4096,
        ..common::crash_config(backend)
    }
}

fn crash_def() -> TableDef {
    TableDef::new("docs")
        .column(ColumnDef::new("id", ColumnType::U32))
        .column(ColumnDef::nullable("body", ColumnType::Blob))
        .column(ColumnDef::new("note", ColumnType::Var(3000)))
        .primary_key(&["id"])
}

type Model = BTreeMap<u32, Vec<Value>>;

/// An insert, update or delete of a row whose BLOB is 0 to 5 overflow pages long.
fn crash_op(rng: &mut Rng, m: &Model) -> (u32, Option<Vec<Value>>) {
    let id = rng.below(40) as u32;
    if m.contains_key(&id) && rng.below(3) == 0 {
        return (id, None);
    }
    let n = rng.below(5 * 4040) as usize;
    let note = rng.below(2500) as usize;
    let row = vec![
        Value::UInt(id.into()),
        if n.is_multiple_of(7) {
            Value::Null
        } else {
            Value::Bytes(blob(rng.below(1 << 30), n))
        },
        Value::Bytes(vec![b'n'; note]),
    ];
    (id, Some(row))
}

fn run_op(t: &minnow::Table, m: &Model, (id, row): &(u32, Option<Vec<Value>>)) -> bool {
    match row {
        None => t.delete(&[Value::UInt((*id).into())]).is_ok(),
        Some(r) if m.contains_key(id) => t.update(r).is_ok(),
        Some(r) => t.insert(r).is_ok(),
    }
}

fn apply(m: &mut Model, (id, row): &(u32, Option<Vec<Value>>)) {
    match row {
        None => m.remove(id),
        Some(r) => m.insert(*id, r.clone()),
    };
}

#[test]
fn power_cuts_during_large_row_writes() {
    let mut replayed = 0;
    for seed in seeds(10) {
        let dir = tempfile::tempdir().unwrap();
        let sim = Arc::new(CrashSim::new(Arc::new(SyncBackend::new())));
        let backend: Arc<dyn Backend> = sim.clone();
        let mut rng = Rng(seed ^ 0x1_0B5);
        let mut acked = Model::new();
        let mut inflight = None;
        {
            let db = Database::create(dir.path(), crash_config(Arc::clone(&backend))).unwrap();
            let t = db.create_table(crash_def()).unwrap();
            for _ in 0..20 {
                let op = crash_op(&mut rng, &acked);
                assert!(run_op(&t, &acked, &op));
                apply(&mut acked, &op);
            }
            sim.arm(1 + rng.below(200));
            for _ in 0..120 {
                let op = crash_op(&mut rng, &acked);
                let mut after = acked.clone();
                apply(&mut after, &op);
                if !run_op(&t, &acked, &op) {
                    inflight = Some(after);
                    break;
                }
                acked = after;
            }
            assert!(sim.is_dead() || inflight.is_none(), "seed {seed}");
        }
        let report = sim.power_cut(seed).unwrap();
        let db = Database::open(dir.path(), crash_config(backend))
            .unwrap_or_else(|e| panic!("seed {seed}: open failed: {e}\n{report}"));
        replayed += usize::from(db.open_report().redo_groups > 0);
        let got = rows(&db);
        let want = |m: &Model| m.values().cloned().collect::<Vec<_>>();
        assert!(
            got == want(&acked) || inflight.as_ref().is_some_and(|m| got == want(m)),
            "seed {seed}: rows match neither the acknowledged statements nor those plus the \
             one in flight\n{report}"
        );
        db.check()
            .unwrap_or_else(|e| panic!("seed {seed}: check after recovery: {e}\n{report}"));
        db.close().unwrap();
    }
    assert!(
        seeds(10).is_empty() || replayed > 0,
        "no seed replayed redo"
    );
}
