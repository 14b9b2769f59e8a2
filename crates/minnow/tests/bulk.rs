//! `Database::create_index` and `Table::load`: bottom-up builds through the API, checked with
//! `Database::check()`, across a restart, and with their failure modes (duplicates, unsorted
//! input, a populated table) leaving nothing behind. Also reverse scans and prefix bounds
//! through `Scan`, against a model.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use minnow::backend::{CrashSim, SyncBackend};
use minnow::{
    ColumnDef, ColumnType, Compression, Config, Database, Error, IndexDef, IoBackend, KeyBlockSize,
    Scan, TableDef, Value,
};

/// A model bound: `a`, `b`, and whether `b` is part of it (else a prefix on `a`).
type ModelKey = (u64, i64, bool);

fn def() -> TableDef {
    TableDef::new("t")
        .column(ColumnDef::new("a", ColumnType::U32))
        .column(ColumnDef::new("b", ColumnType::I64))
        .column(ColumnDef::new("k", ColumnType::U32))
        .column(ColumnDef::nullable("note", ColumnType::Var(60)))
        .primary_key(&["a", "b"])
}

fn row(a: u64, b: i64) -> Vec<Value> {
    let note = if b % 5 == 0 {
        Value::Null
    } else {
        Value::Bytes(format!("note {a} {b}").into_bytes())
    };
    vec![
        Value::UInt(a),
        Value::Int(b),
        Value::UInt((a * 31).wrapping_add(b as u64) % 97),
        note,
    ]
}

fn rows() -> Vec<Vec<Value>> {
    (0..60u64)
        .flat_map(|a| (-20..20i64).map(move |b| row(a, b * 2)))
        .collect()
}

fn config() -> Config {
    Config {
        buffer_pool_size: 16 << 20,
        ..Config::default()
    }
}

#[test]
fn load_then_check_restart_and_reject_a_second_load() {
    let dir = tempfile::tempdir().unwrap();
    let all = rows();
    let sim = Arc::new(CrashSim::new(Arc::new(SyncBackend::new())));
    let crashy = Config {
        io_backend: IoBackend::Custom(sim.clone()),
        ..config()
    };
    {
        let db = Database::create(dir.path(), crashy.clone()).unwrap();
        let t = db
            .create_table(def().index(IndexDef::new("by_k", &["k"])))
            .unwrap();
        t.load(&all).unwrap();
        let report = db.check().unwrap();
        assert_eq!(report.rows["t"], all.len() as u64);
        let got: Vec<_> = t.scan(Scan::all()).unwrap().map(Result::unwrap).collect();
        assert_eq!(got, all);
        assert!(matches!(
            t.load([row(999, 0)]),
            Err(Error::TableNotEmpty { .. })
        ));
        // The loaded table takes ordinary statements.
        t.insert(&row(1000, 1)).unwrap();
        t.delete(&[Value::UInt(0), Value::Int(0)]).unwrap();
        db.check().unwrap();
        // No clean close: the power goes, and open must recover the load from redo.
        drop(t);
        sim.power_cut(7).unwrap();
        drop(db); // what it tries to write fails: the device is gone
    }
    let db = Database::open(dir.path(), crashy).unwrap();
    let report = db.check().unwrap();
    assert_eq!(report.rows["t"], all.len() as u64);
    let t = db.table("t").unwrap();
    assert_eq!(
        t.get(&[Value::UInt(7), Value::Int(-4)]).unwrap(),
        Some(row(7, -4))
    );
}

#[test]
fn load_rejects_bad_input_and_leaves_the_table_empty() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config()).unwrap();
    let t = db
        .create_table(def().index(IndexDef::unique("by_note", &["note"])))
        .unwrap();
    let unsorted = [row(1, 0), row(0, 2)];
    match t.load(unsorted) {
        Err(Error::Unsorted { key, previous, .. }) => {
            assert_eq!(key, [Value::UInt(0), Value::Int(2)]);
            assert_eq!(previous, [Value::UInt(1), Value::Int(0)]);
        }
        other => panic!("expected Unsorted, got {other:?}"),
    }
    match t.load([row(1, 1), row(1, 1)]) {
        Err(Error::DuplicateKey { index, .. }) => assert_eq!(index, "PRIMARY"),
        other => panic!("expected a duplicate primary key, got {other:?}"),
    }
    let mut dup = row(2, 1);
    dup[3] = Value::Bytes(b"same".to_vec());
    let mut dup2 = row(3, 1);
    dup2[3] = Value::Bytes(b"same".to_vec());
    match t.load([row(1, 1), dup, dup2]) {
        Err(Error::DuplicateKey { index, key, .. }) => {
            assert_eq!(index, "by_note");
            assert_eq!(key, [Value::Bytes(b"same".to_vec())]);
        }
        other => panic!("expected a duplicate unique key, got {other:?}"),
    }
    // NULLs do not collide in a unique index.
    assert_eq!(db.check().unwrap().rows["t"], 0);
    t.load([row(1, 0), row(1, 5), row(2, 10)]).unwrap();
    assert_eq!(db.check().unwrap().rows["t"], 3);
}

#[test]
fn create_index_on_a_populated_table() {
    let dir = tempfile::tempdir().unwrap();
    let all = rows();
    {
        let db = Database::create(dir.path(), config()).unwrap();
        let t = db.create_table(def()).unwrap();
        for r in &all {
            t.insert(r).unwrap();
        }
        db.create_index("t", IndexDef::new("by_k", &["k", "note"]))
            .unwrap();
        db.check().unwrap();
        // The handle made before the index maintains it.
        t.insert(&row(500, 1)).unwrap();
        t.update(&{
            let mut r = row(3, 4);
            r[2] = Value::UInt(1234);
            r
        })
        .unwrap();
        t.delete(&[Value::UInt(4), Value::Int(6)]).unwrap();
        db.check().unwrap();
        let k5: Vec<_> = db
            .table("t")
            .unwrap()
            .scan_index(
                "by_k",
                Scan::range(
                    Bound::Included(vec![Value::UInt(5)]),
                    Bound::Included(vec![Value::UInt(5)]),
                )
                .columns(&["a", "b"]),
            )
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let want = all.iter().filter(|r| r[2] == Value::UInt(5)).count();
        assert_eq!(k5.len(), want);
        // A unique index over duplicates fails, naming the index and key, and leaves nothing.
        match db.create_index("t", IndexDef::unique("uk", &["k"])) {
            Err(Error::DuplicateKey { index, key, .. }) => {
                assert_eq!(index, "uk");
                assert_eq!(key.len(), 1);
            }
            other => panic!("expected a duplicate key, got {other:?}"),
        }
        assert_eq!(db.table_def("t").unwrap().indexes.len(), 1);
        // A unique index that holds works, and is enforced afterwards.
        db.create_index("t", IndexDef::unique("pk_copy", &["b", "a"]))
            .unwrap();
        assert!(matches!(
            db.create_index("t", IndexDef::new("by_k", &["k"])),
            Err(Error::BadDefinition { .. })
        ));
        db.check().unwrap();
        db.close().unwrap();
    }
    let db = Database::open(dir.path(), config()).unwrap();
    let report = db.check().unwrap();
    assert_eq!(report.indexes, 1 + 3);
    assert_eq!(db.table_def("t").unwrap().indexes.len(), 2);
}

#[test]
fn reverse_scans_and_prefix_bounds_match_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config()).unwrap();
    let t = db
        .create_table(def().index(IndexDef::new("by_k", &["k"])))
        .unwrap();
    let all = rows();
    t.load(&all).unwrap();
    let model: BTreeMap<(u64, i64), Vec<Value>> = all
        .iter()
        .map(|r| match (&r[0], &r[1]) {
            (Value::UInt(a), Value::Int(b)) => ((*a, *b), r.clone()),
            _ => unreachable!(),
        })
        .collect();
    let mut seed = 0x1234_5678_u64;
    let mut rnd = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for round in 0..300 {
        // Prefix bounds on `a` alone, or full keys.
        let bound = |rnd: &mut dyn FnMut(u64) -> u64| -> (Bound<Vec<Value>>, Bound<ModelKey>) {
            let a = rnd(62);
            let full = rnd(2) == 0;
            let b = rnd(84) as i64 - 42;
            let vals = if full {
                vec![Value::UInt(a), Value::Int(b)]
            } else {
                vec![Value::UInt(a)]
            };
            match rnd(3) {
                0 => (Bound::Unbounded, Bound::Unbounded),
                1 => (Bound::Included(vals), Bound::Included((a, b, full))),
                _ => (Bound::Excluded(vals), Bound::Excluded((a, b, full))),
            }
        };
        let (s, sm) = bound(&mut rnd);
        let (e, em) = bound(&mut rnd);
        let reverse = rnd(2) == 0;
        let limit = (rnd(2) == 0).then(|| rnd(50) as usize);
        let cmp = |k: &(u64, i64), (a, b, full): (u64, i64, bool)| {
            if full { k.cmp(&(a, b)) } else { k.0.cmp(&a) }
        };
        use std::cmp::Ordering::*;
        let matching = model.iter().filter(|(k, _)| {
            let lo = match sm {
                Bound::Unbounded => true,
                Bound::Included(x) => cmp(k, x) != Less,
                Bound::Excluded(x) => cmp(k, x) == Greater,
            };
            let hi = match em {
                Bound::Unbounded => true,
                Bound::Included(x) => cmp(k, x) != Greater,
                Bound::Excluded(x) => cmp(k, x) == Less,
            };
            lo && hi
        });
        let want: Vec<Vec<Value>> = if reverse {
            matching
                .rev()
                .take(limit.unwrap_or(usize::MAX))
                .map(|(_, r)| r.clone())
                .collect()
        } else {
            matching
                .take(limit.unwrap_or(usize::MAX))
                .map(|(_, r)| r.clone())
                .collect()
        };
        let mut scan = Scan::range(s, e);
        if reverse {
            scan = scan.reverse();
        }
        if let Some(l) = limit {
            scan = scan.limit(l);
        }
        let got: Vec<_> = t.scan(scan.clone()).unwrap().map(Result::unwrap).collect();
        assert_eq!(got, want, "round {round}: {scan:?}");
    }
    // A secondary index backwards, with a prefix of (k, a).
    let got: Vec<_> = t
        .scan_index(
            "by_k",
            Scan::range(
                Bound::Included(vec![Value::UInt(3), Value::UInt(10)]),
                Bound::Included(vec![Value::UInt(3), Value::UInt(20)]),
            )
            .columns(&["a", "b"])
            .reverse(),
        )
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut want: Vec<Vec<Value>> = all
        .iter()
        .filter(|r| {
            r[2] == Value::UInt(3) && matches!(r[0], Value::UInt(a) if (10..=20).contains(&a))
        })
        .map(|r| vec![r[0].clone(), r[1].clone()])
        .collect();
    want.reverse();
    assert_eq!(got, want);
}

/// A table with a BLOB and a TEXT column (and a secondary index), compressed or not.
fn lob_def(name: &str, compression: Option<Compression>) -> TableDef {
    let def = TableDef::new(name)
        .column(ColumnDef::new("id", ColumnType::U32))
        .column(ColumnDef::nullable("body", ColumnType::Blob))
        .column(ColumnDef::new("title", ColumnType::Text))
        .column(ColumnDef::new("n", ColumnType::U32))
        .primary_key(&["id"])
        .index(IndexDef::new("by_n", &["n"]));
    match compression {
        Some(c) => def.compressed(c),
        None => def,
    }
}

/// Rows with 20 KB and 100 KB bodies (bytes that do not compress), 9 KB and 20 KB titles
/// (text that does), and short or NULL ones between them.
fn lob_rows() -> Vec<Vec<Value>> {
    (0..48u32)
        .map(|id| {
            let mut rng = minnow_io::SplitMix64(u64::from(id));
            let mut bytes =
                |n: usize| -> Vec<u8> { (0..n).map(|_| rng.next_u64() as u8).collect() };
            let body = match id % 4 {
                0 => Value::Bytes(bytes(20_000)),
                1 => Value::Bytes(bytes(100_000)),
                2 => Value::Bytes(bytes(30)),
                _ => Value::Null,
            };
            let title_len = [9_000, 20_000, 12, 0][(id % 3) as usize];
            let title: String = (0..title_len).map(|i| ['a', 'é', 'z'][i % 3]).collect();
            vec![
                Value::UInt(id.into()),
                body,
                Value::text(&title),
                Value::UInt(u64::from(id % 7)),
            ]
        })
        .collect()
}

fn lob_read_back(db: &Database, name: &str, all: &[Vec<Value>]) {
    let t = db.table(name).unwrap();
    let got: Vec<_> = t.scan(Scan::all()).unwrap().map(Result::unwrap).collect();
    assert_eq!(got.len(), all.len());
    assert!(got == all, "table `{name}`: rows read back differ");
    assert_eq!(t.get(&[Value::UInt(5)]).unwrap().as_ref(), all.get(5));
    let by_n: Vec<_> = t
        .scan_index("by_n", Scan::all().columns(&["id", "body"]))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(by_n.len(), all.len());
}

#[test]
fn load_moves_long_columns_off_page_as_insert_does() {
    for compression in [
        None,
        Some(Compression::default()),
        Some(Compression::lz4(KeyBlockSize::K4)),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let sim = Arc::new(CrashSim::new(Arc::new(SyncBackend::new())));
        let config = Config {
            io_backend: IoBackend::Custom(sim.clone()),
            ..config()
        };
        let all = lob_rows();
        let loaded = {
            let db = Database::create(dir.path(), config.clone()).unwrap();
            db.create_table(lob_def("loaded", compression))
                .unwrap()
                .load(&all)
                .unwrap();
            let loaded = db.check().unwrap().overflow_pages;
            assert!(loaded > 0, "{compression:?}: nothing went off-page");
            // The same rows inserted one by one take the same overflow pages.
            let inserted = db.create_table(lob_def("inserted", compression)).unwrap();
            for r in &all {
                inserted.insert(r).unwrap();
            }
            assert_eq!(
                db.check().unwrap().overflow_pages,
                2 * loaded,
                "{compression:?}"
            );
            lob_read_back(&db, "loaded", &all);
            // The power goes before a clean close: open must recover the chains from redo.
            sim.arm(0);
            loaded
        };
        sim.power_cut(7).unwrap();
        let db = Database::open(dir.path(), config.clone()).unwrap();
        assert!(db.open_report().redo_groups > 0);
        assert_eq!(db.check().unwrap().overflow_pages, 2 * loaded);
        lob_read_back(&db, "loaded", &all);
        lob_read_back(&db, "inserted", &all);
        db.close().unwrap();
        let db = Database::open(dir.path(), config).unwrap();
        lob_read_back(&db, "loaded", &all);
        assert_eq!(db.check().unwrap().rows["loaded"], all.len() as u64);
    }
}
