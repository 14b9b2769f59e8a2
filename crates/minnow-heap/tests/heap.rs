//! The heap table against a `BTreeMap` model, across reopens; damaged heap pages and lost
//! rows give typed errors and `check` names them.

use std::collections::BTreeMap;
use std::ops::Bound;

use minnow::{ColumnDef, ColumnType, Config, Database, IndexDef, Scan, TableDef, Value};
use minnow_heap::{HeapError, HeapTable, page};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

fn def() -> TableDef {
    TableDef::new("t")
        .column(ColumnDef::new("id", ColumnType::U32))
        .column(ColumnDef::new("email", ColumnType::Var(24)))
        .column(ColumnDef::new("grp", ColumnType::U16))
        .column(ColumnDef::nullable("note", ColumnType::Var(200)))
        .primary_key(&["id"])
        .index(IndexDef::unique("email", &["email"]))
        .index(IndexDef::new("grp", &["grp"]))
}

fn row(id: u32, v: u32, rng: &mut SmallRng) -> Vec<Value> {
    let note = if rng.random_bool(0.2) {
        Value::Null
    } else {
        Value::Bytes(vec![b'n'; rng.random_range(0..200)])
    };
    vec![
        Value::UInt(u64::from(id)),
        Value::text(&format!("u{id}v{v}@x")),
        Value::UInt(u64::from(id % 7)),
        note,
    ]
}

fn compare(t: &HeapTable<'_>, model: &BTreeMap<u32, Vec<Value>>) {
    let all: Vec<Vec<Value>> = t
        .scan(Scan::all())
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(all, model.values().cloned().collect::<Vec<_>>());
    let mut fts: Vec<Vec<Value>> = t
        .full_scan(None)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    fts.sort_by_key(|r| match r[0] {
        Value::UInt(x) => x,
        _ => 0,
    });
    assert_eq!(fts, all);
    for g in 0..7u64 {
        let k = vec![Value::UInt(g)];
        let s = Scan::range(Bound::Included(k.clone()), Bound::Included(k)).columns(&["id", "grp"]);
        let rows = t.scan_index("grp", s).unwrap();
        assert!(
            !rows.is_covering(),
            "MyISAM secondary entries hold no primary key"
        );
        let mut ids: Vec<u64> = rows
            .map(|r| match r.unwrap()[0] {
                Value::UInt(x) => x,
                _ => u64::MAX,
            })
            .collect();
        ids.sort_unstable();
        let want: Vec<u64> = model
            .keys()
            .map(|&k| u64::from(k))
            .filter(|k| k % 7 == g)
            .collect();
        assert_eq!(ids, want);
    }
    for (id, r) in model.iter().take(20) {
        let email = vec![r[1].clone()];
        let s =
            Scan::range(Bound::Included(email.clone()), Bound::Included(email)).columns(&["email"]);
        let rows = t.scan_index("email", s).unwrap();
        assert!(rows.is_covering());
        assert_eq!(rows.count(), 1);
        assert_eq!(
            t.get_columns(&[Value::UInt(u64::from(*id))], &["id"])
                .unwrap(),
            Some(vec![r[0].clone()])
        );
    }
    let c = t.check().unwrap();
    assert!(c.problems.is_empty(), "{:?}", c.problems);
    assert_eq!(c.rows, model.len() as u64);
}

#[test]
fn model_with_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.MYD");
    let mut rng = SmallRng::seed_from_u64(8);
    let mut model: BTreeMap<u32, Vec<Value>> = BTreeMap::new();
    let mut version = 0u32;
    for round in 0..3 {
        let db = if round == 0 {
            Database::create(dir.path(), Config::default()).unwrap()
        } else {
            Database::open(dir.path(), Config::default()).unwrap()
        };
        let t = if round == 0 {
            HeapTable::create(&db, &path, def()).unwrap()
        } else {
            HeapTable::open(&db, &path).unwrap()
        };
        compare(&t, &model);
        for _ in 0..600 {
            let id = rng.random_range(0..300u32);
            version += 1;
            match rng.random_range(0..10) {
                0..=4 => {
                    let r = row(id, version, &mut rng);
                    match t.insert(&r) {
                        Ok(_) => assert!(model.insert(id, r).is_none()),
                        Err(HeapError::DuplicateKey { index, .. }) => {
                            assert_eq!(index, "PRIMARY");
                            assert!(model.contains_key(&id));
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
                5..=6 => {
                    let found = t.delete(&[Value::UInt(u64::from(id))]).unwrap();
                    assert_eq!(found, model.remove(&id).is_some());
                }
                7..=8 => {
                    let r = row(id, version, &mut rng);
                    let found = t.update(&r).unwrap();
                    assert_eq!(found, model.contains_key(&id));
                    if found {
                        model.insert(id, r);
                    }
                }
                _ => {
                    let got = t.get(&[Value::UInt(u64::from(id))]).unwrap();
                    assert_eq!(got.as_ref(), model.get(&id));
                }
            }
        }
        // A unique-key clash changes nothing.
        if let Some((&a, ra)) = model.iter().next() {
            let mut clash = row(100_000, 0, &mut rng);
            clash[1] = ra[1].clone();
            let e = t.insert(&clash).unwrap_err();
            assert!(
                matches!(e, HeapError::DuplicateKey { ref index, .. } if index == "email"),
                "{e}"
            );
            assert!(t.get(&[Value::UInt(100_000)]).unwrap().is_none());
            assert!(model.contains_key(&a));
        }
        compare(&t, &model);
        drop(t);
        db.close().unwrap();
    }
}

#[test]
fn load_then_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), Config::default()).unwrap();
    let t = HeapTable::create(&db, dir.path().join("t.MYD"), def()).unwrap();
    let mut rng = SmallRng::seed_from_u64(1);
    // Out of key order on purpose: the heap keeps input order, the indexes sort.
    let mut model = BTreeMap::new();
    let rows: Vec<Vec<Value>> = (0..3000u32).rev().map(|i| row(i, 0, &mut rng)).collect();
    for r in &rows {
        if let Value::UInt(id) = r[0] {
            model.insert(id as u32, r.clone());
        }
    }
    assert_eq!(t.load(&rows).unwrap(), 3000);
    assert!(matches!(t.load(&rows), Err(HeapError::NotEmpty { .. })));
    compare(&t, &model);
    let lo = Bound::Included(vec![Value::UInt(100)]);
    let hi = Bound::Excluded(vec![Value::UInt(200)]);
    let n = t
        .scan(Scan::range(lo.clone(), hi.clone()).columns(&["id"]))
        .unwrap();
    assert!(n.is_covering());
    assert_eq!(n.count(), 100);
    let first = t
        .scan(Scan::range(lo, hi).columns(&["email"]).limit(5))
        .unwrap();
    assert!(!first.is_covering());
    let first: Vec<_> = first.collect::<Result<_, _>>().unwrap();
    assert_eq!(first.len(), 5);
    assert_eq!(first[0][0], model[&100][1]);
    // Every row's first column as the heap stores it, in insertion order.
    let first_id = t.full_scan(Some(&["id"])).unwrap().next().unwrap().unwrap();
    assert_eq!(first_id, vec![Value::UInt(2999)]);
    // A duplicate unique key in a load leaves the table empty.
    let dir2 = tempfile::tempdir().unwrap();
    let db2 = Database::create(dir2.path(), Config::default()).unwrap();
    let t2 = HeapTable::create(&db2, dir2.path().join("t.MYD"), def()).unwrap();
    let mut dup = vec![row(1, 0, &mut rng), row(2, 0, &mut rng)];
    dup[1][1] = dup[0][1].clone();
    assert!(matches!(t2.load(&dup), Err(HeapError::DuplicateKey { .. })));
}

#[test]
fn garbage_heap_page_is_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.MYD");
    let db = Database::create(dir.path(), Config::default()).unwrap();
    let mut rng = SmallRng::seed_from_u64(2);
    {
        let t = HeapTable::create(&db, &path, def()).unwrap();
        t.load((0..500u32).map(|i| row(i, 0, &mut rng))).unwrap();
        t.sync().unwrap();
    }
    // Garbage in the middle of row page 1.
    let mut bytes = std::fs::read(&path).unwrap();
    for b in &mut bytes[page::PAGE_SIZE + 200..page::PAGE_SIZE + 400] {
        *b = 0xA5;
    }
    std::fs::write(&path, &bytes).unwrap();
    let t = HeapTable::open(&db, &path).unwrap();
    let scan: Result<Vec<_>, _> = t.full_scan(None).unwrap().collect();
    match scan {
        Err(HeapError::Corrupt {
            page,
            offset,
            expected,
            ..
        }) => {
            assert_eq!(page, 1);
            assert_eq!(offset, page::PAGE_SIZE as u64);
            assert!(expected.contains("checksum"), "{expected}");
        }
        other => panic!("expected a corrupt page, got {other:?}"),
    }
    // Point reads of damaged rows fail on the row's own checksum; others still work.
    let mut bad = 0;
    for i in 0..500u64 {
        match t.get(&[Value::UInt(i)]) {
            Ok(Some(_)) => {}
            Err(HeapError::Corrupt { page: 1, .. }) => bad += 1,
            other => panic!("{other:?}"),
        }
    }
    assert!(bad > 0);
    let c = t.check().unwrap();
    assert!(
        c.problems.iter().any(|p| p.contains("page 1")),
        "{:?}",
        c.problems
    );
    drop(t);
    // Garbage in page 0 (the definition).
    bytes[100] ^= 0xFF;
    std::fs::write(&path, &bytes).unwrap();
    assert!(matches!(
        HeapTable::open(&db, &path),
        Err(HeapError::Corrupt { page: 0, .. })
    ));
    // A file whose length is not whole pages.
    std::fs::write(&path, &bytes[..page::PAGE_SIZE + 10]).unwrap();
    assert!(matches!(
        HeapTable::open(&db, &path),
        Err(HeapError::Corrupt { .. })
    ));
}

#[test]
fn lost_heap_pages_are_named_not_returned() {
    // What a power cut that loses unsynced heap pages leaves: index entries (durable in
    // minnow) pointing past the end of the heap file.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.MYD");
    let db = Database::create(dir.path(), Config::default()).unwrap();
    let mut rng = SmallRng::seed_from_u64(3);
    {
        let t = HeapTable::create(&db, &path, def()).unwrap();
        for i in 0..400u32 {
            t.insert(&row(i, 0, &mut rng)).unwrap();
        }
    }
    let len = std::fs::metadata(&path).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(len - page::PAGE_SIZE as u64).unwrap();
    drop(f);
    let t = HeapTable::open(&db, &path).unwrap();
    assert!(matches!(
        t.get(&[Value::UInt(399)]),
        Err(HeapError::Corrupt { .. })
    ));
    assert!(t.get(&[Value::UInt(0)]).unwrap().is_some());
    let c = t.check().unwrap();
    assert!(!c.problems.is_empty());
    assert!(
        c.problems
            .iter()
            .any(|p| p.contains("end of the heap file")),
        "{:?}",
        c.problems
    );
}

#[test]
fn definitions_a_heap_table_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), Config::default()).unwrap();
    let auto = TableDef::new("a")
        .column(ColumnDef::new("id", ColumnType::U32).auto_increment())
        .primary_key(&["id"]);
    let nullable_key = TableDef::new("b")
        .column(ColumnDef::new("id", ColumnType::U32))
        .column(ColumnDef::nullable("x", ColumnType::U32))
        .primary_key(&["id"])
        .index(IndexDef::new("x", &["x"]));
    let blob = TableDef::new("c")
        .column(ColumnDef::new("id", ColumnType::U32))
        .column(ColumnDef::new("x", ColumnType::Blob))
        .primary_key(&["id"]);
    for d in [auto, nullable_key, blob] {
        let p = dir.path().join(format!("{}.MYD", d.name));
        assert!(matches!(
            HeapTable::create(&db, &p, d),
            Err(HeapError::BadDefinition { .. })
        ));
    }
}
