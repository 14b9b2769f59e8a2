//! Model test: random inserts, updates, deletes, point gets and scans (primary key and both
//! secondary indexes, covering and not) on a table with a secondary and a unique index,
//! against a `BTreeMap` model, with clean reopens in between and `check()` at the end of
//! each round.

mod common;

use std::ops::Bound;

use common::{Model, Op, Rng, all_rows, model_rows, random_row, table_def};
use minnow::PageSize;
use minnow::{Config, Database, Error, Scan, Value};

fn config() -> Config {
    Config {
        page_size: PageSize::K4,
        buffer_pool_size: 64 * 4096,
        log_file_size: 1 << 20,
        doublewrite_pages: 8,
        ..Config::default()
    }
}

fn verify_scans(t: &minnow::Table, m: &Model, rng: &mut Rng) {
    assert_eq!(all_rows(t), model_rows(m));
    // Primary key range with limit and projection.
    let lo = rng.below(400);
    let hi = lo + 1 + rng.below(100);
    let limit = 1 + rng.below(30) as usize;
    let got: Vec<Vec<Value>> = t
        .scan(
            Scan::range(
                Bound::Excluded(vec![Value::UInt(lo)]),
                Bound::Included(vec![Value::UInt(hi)]),
            )
            .limit(limit)
            .columns(&["pad", "id"]),
        )
        .unwrap()
        .collect::<minnow::Result<_>>()
        .unwrap();
    let want: Vec<Vec<Value>> = m
        .range(lo + 1..=hi)
        .take(limit)
        .map(|(id, r)| vec![Value::Bytes(r.pad.clone()), Value::UInt(*id)])
        .collect();
    assert_eq!(got, want);
    // by_a over [a1, a2): covering (a, id) and not covering (pad).
    let a1 = rng.below(50) as i64 - 25;
    let a2 = a1 + rng.below(10) as i64;
    let mut want: Vec<(i64, u64, Vec<u8>)> = m
        .iter()
        .filter(|(_, r)| r.a >= a1 && r.a < a2)
        .map(|(id, r)| (r.a, *id, r.pad.clone()))
        .collect();
    want.sort();
    let range = Scan::range(
        Bound::Included(vec![Value::Int(a1)]),
        Bound::Excluded(vec![Value::Int(a2)]),
    );
    let cov = t
        .scan_index("by_a", range.clone().columns(&["id", "a"]))
        .unwrap();
    assert!(cov.is_covering());
    let cov: Vec<Vec<Value>> = cov.collect::<minnow::Result<_>>().unwrap();
    let want_cov: Vec<Vec<Value>> = want
        .iter()
        .map(|(a, id, _)| vec![Value::UInt(*id), Value::Int(*a)])
        .collect();
    assert_eq!(cov, want_cov);
    let fetch = t.scan_index("by_a", range.columns(&["pad"])).unwrap();
    assert!(!fetch.is_covering());
    let fetch: Vec<Vec<Value>> = fetch.collect::<minnow::Result<_>>().unwrap();
    let want_fetch: Vec<Vec<Value>> = want
        .iter()
        .map(|(_, _, p)| vec![Value::Bytes(p.clone())])
        .collect();
    assert_eq!(fetch, want_fetch);
    // by_u: a full scan (NULLs first) and an exact lookup.
    let mut want_u: Vec<(Option<Vec<u8>>, u64)> =
        m.iter().map(|(id, r)| (r.u.clone(), *id)).collect();
    want_u.sort();
    let got_u: Vec<Vec<Value>> = t
        .scan_index("by_u", Scan::all().columns(&["u", "id"]))
        .unwrap()
        .collect::<minnow::Result<_>>()
        .unwrap();
    let want_u_rows: Vec<Vec<Value>> = want_u
        .iter()
        .map(|(u, id)| {
            vec![
                u.clone().map_or(Value::Null, Value::Bytes),
                Value::UInt(*id),
            ]
        })
        .collect();
    assert_eq!(got_u, want_u_rows);
    if let Some((id, r)) = m.iter().find(|(_, r)| r.u.is_some()) {
        let k = Bound::Included(vec![r.u.clone().map_or(Value::Null, Value::Bytes)]);
        let got: Vec<Vec<Value>> = t
            .scan_index("by_u", Scan::range(k.clone(), k))
            .unwrap()
            .collect::<minnow::Result<_>>()
            .unwrap();
        assert_eq!(got, vec![r.values(*id)]);
    }
}

#[test]
fn random_statements_match_the_model_across_reopens() {
    model_rounds(table_def());
}

/// The same statements on the table compressed into 1 KiB blocks (4 KiB pages): compression
/// failures, splits and padding under every kind of statement, across reopens.
#[test]
fn random_statements_match_the_model_on_a_compressed_table() {
    let zip = minnow::Compression::new(minnow::KeyBlockSize::K1, minnow::ZipAlgorithm::default());
    model_rounds(table_def().compressed(zip));
}

fn model_rounds(def: minnow::TableDef) {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(42);
    let mut m = Model::new();
    {
        let db = Database::create(dir.path(), config()).unwrap();
        db.create_table(def).unwrap();
        db.close().unwrap();
    }
    let (mut dups_pk, mut dups_u) = (0, 0);
    for round in 0..4 {
        let db = Database::open(dir.path(), config()).unwrap();
        assert_eq!(
            db.open_report().redo_groups,
            0,
            "clean reopen replays nothing"
        );
        let t = db.table("t").unwrap();
        assert_eq!(all_rows(&t), model_rows(&m), "round {round}: after reopen");
        for step in 0..700u32 {
            let op = Op::random(&mut rng, &m, 500);
            op.run(&t).unwrap();
            op.apply(&mut m);
            // Point gets.
            let id = rng.below(500);
            assert_eq!(
                t.get(&[Value::UInt(id)]).unwrap(),
                m.get(&id).map(|r| r.values(id))
            );
            // Duplicates are refused, naming the index, and change nothing.
            if step.is_multiple_of(50) {
                if let Some((&id, r)) = m.iter().next() {
                    let r2 = random_row(&mut rng, &m, id);
                    match t.insert(&r2.values(id)) {
                        Err(Error::DuplicateKey { table, index, key }) => {
                            assert_eq!((table.as_str(), index.as_str()), ("t", "PRIMARY"));
                            assert_eq!(key, vec![Value::UInt(id)]);
                            dups_pk += 1;
                        }
                        other => panic!("expected a duplicate key, got {other:?}"),
                    }
                    assert_eq!(t.get(&[Value::UInt(id)]).unwrap(), Some(r.values(id)));
                }
                let taken = m.iter().find_map(|(_, r)| r.u.clone());
                let fresh = (0..10_000).find(|k| !m.contains_key(k)).unwrap();
                if let Some(u) = taken {
                    let mut r = random_row(&mut rng, &m, fresh);
                    r.u = Some(u.clone());
                    match t.insert(&r.values(fresh)) {
                        Err(Error::DuplicateKey { index, key, .. }) => {
                            assert_eq!(index, "by_u");
                            assert_eq!(key, vec![Value::Bytes(u)]);
                            dups_u += 1;
                        }
                        other => panic!("expected a duplicate by_u key, got {other:?}"),
                    }
                    assert_eq!(t.get(&[Value::UInt(fresh)]).unwrap(), None);
                }
            }
            if step.is_multiple_of(100) {
                verify_scans(&t, &m, &mut rng);
            }
        }
        verify_scans(&t, &m, &mut rng);
        let report = db.check().unwrap();
        assert_eq!(report.rows.get("t"), Some(&(m.len() as u64)));
        assert_eq!(report.indexes, 4);
        db.close().unwrap();
    }
    assert!(dups_pk > 10 && dups_u > 10, "{dups_pk} {dups_u}");
    assert!(m.len() > 100, "the table should hold rows: {}", m.len());
}

#[test]
fn typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config()).unwrap();
    let t = db.create_table(table_def()).unwrap();
    assert!(matches!(db.table("nope"), Err(Error::NoSuchTable { .. })));
    assert!(matches!(
        db.create_table(table_def()),
        Err(Error::TableExists { .. })
    ));
    let bad = [
        Value::UInt(1),
        Value::Bytes(b"x".to_vec()),
        Value::Null,
        Value::Bytes(vec![]),
    ];
    assert!(matches!(t.insert(&bad), Err(Error::TypeMismatch { ref column, .. }) if column == "a"));
    assert!(matches!(
        t.insert(&bad[..2]),
        Err(Error::TypeMismatch { .. })
    ));
    let big = [
        Value::UInt(1),
        Value::Int(1 << 40),
        Value::Null,
        Value::Bytes(vec![]),
    ];
    assert!(matches!(t.insert(&big), Err(Error::TypeMismatch { .. })));
    assert!(matches!(
        t.scan(Scan::all().columns(&["zz"])),
        Err(Error::NoSuchColumn { .. })
    ));
    assert!(matches!(
        t.scan_index("zz", Scan::all()),
        Err(Error::NoSuchIndex { .. })
    ));
    let row = [
        Value::UInt(9),
        Value::Int(1),
        Value::Null,
        Value::Bytes(vec![]),
    ];
    assert!(matches!(t.update(&row), Err(Error::RowNotFound { .. })));
    assert!(!t.delete(&[Value::UInt(9)]).unwrap());
    t.insert(&row).unwrap();
    // Two NULLs in a unique index do not conflict.
    let row2 = [
        Value::UInt(10),
        Value::Int(1),
        Value::Null,
        Value::Bytes(vec![]),
    ];
    t.insert(&row2).unwrap();
    // A directory in use is refused before anything else is looked at ...
    assert!(matches!(
        Database::create(dir.path(), config()),
        Err(Error::Locked(_))
    ));
    drop(t);
    db.close().unwrap();
    // ... and once free, it still holds a database.
    assert!(matches!(
        Database::create(dir.path(), config()),
        Err(Error::Directory { .. })
    ));
    let wrong_page = Config {
        page_size: PageSize::K16,
        ..config()
    };
    assert!(matches!(
        Database::open(dir.path(), wrong_page),
        Err(Error::Config {
            knob: "innodb_page_size",
            ..
        })
    ));
    let bad_cfg = Config {
        old_blocks_pct: 99,
        ..config()
    };
    assert!(matches!(
        Database::open(dir.path(), bad_cfg),
        Err(Error::Config { .. })
    ));
    let empty = tempfile::tempdir().unwrap();
    assert!(matches!(
        Database::open(empty.path(), config()),
        Err(Error::Directory { .. })
    ));
    let db = Database::open(dir.path(), config()).unwrap();
    assert_eq!(db.tables().unwrap(), ["t"]);
    assert_eq!(db.table_def("t").unwrap(), table_def());
    assert_eq!(all_rows(&db.table("t").unwrap()).len(), 2);
}

#[test]
fn durability_follows_flush_log_at_trx_commit() {
    for (setting, want) in [
        (minnow::FlushAtCommit::Sync, minnow::Durability::Synced),
        (minnow::FlushAtCommit::Write, minnow::Durability::Written),
        (minnow::FlushAtCommit::Lazy, minnow::Durability::Buffered),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let cfg = Config {
            flush_log_at_trx_commit: setting,
            ..config()
        };
        let db = Database::create(dir.path(), cfg.clone()).unwrap();
        let t = db.create_table(table_def()).unwrap();
        let row = [
            Value::UInt(1),
            Value::Int(1),
            Value::Null,
            Value::Bytes(vec![]),
        ];
        // An autocommit statement is as durable as the setting says; a transaction's
        // commit says how durable it is.
        t.insert(&row).unwrap();
        if want == minnow::Durability::Synced {
            let redo = db.status().unwrap().redo;
            assert!(redo.flushed_lsn >= redo.current_lsn, "{redo:?}");
        }
        let mut tx = db.begin().unwrap();
        assert!(tx.delete(&t, &[Value::UInt(1)]).unwrap());
        assert_eq!(tx.commit().unwrap(), want);
        drop(t);
        db.close().unwrap();
        let db = Database::open(dir.path(), cfg).unwrap();
        assert_eq!(all_rows(&db.table("t").unwrap()), Vec::<Vec<Value>>::new());
    }
}

#[test]
fn io_uring_backend_works_or_fails_with_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config {
        io_backend: minnow::IoBackend::IoUring,
        ..config()
    };
    match Database::create(dir.path(), cfg.clone()) {
        Ok(db) => {
            let t = db.create_table(table_def()).unwrap();
            let row = [
                Value::UInt(7),
                Value::Int(1),
                Value::Null,
                Value::Bytes(vec![1]),
            ];
            t.insert(&row).unwrap();
            drop(t);
            db.close().unwrap();
            let db = Database::open(dir.path(), cfg).unwrap();
            assert_eq!(
                db.table("t").unwrap().get(&[Value::UInt(7)]).unwrap(),
                Some(row.to_vec())
            );
        }
        Err(e) => assert!(matches!(e, Error::Io(_)), "{e}"),
    }
}

#[test]
fn readers_run_beside_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config()).unwrap();
    let t = db.create_table(table_def()).unwrap();
    let m = Model::new();
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        for r in 0..2u64 {
            let (db, done) = (&db, &done);
            s.spawn(move || {
                let t = db.table("t").unwrap();
                let mut rng = Rng(r);
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    let id = rng.below(300);
                    if let Some(row) = t.get(&[Value::UInt(id)]).unwrap() {
                        // Every row's pad is derived from its id: a reader never sees a
                        // torn or mixed-up row.
                        assert_eq!(row[0], Value::UInt(id));
                        let Value::Bytes(pad) = &row[3] else {
                            panic!("pad is not bytes: {row:?}")
                        };
                        for (i, b) in pad.iter().enumerate() {
                            assert_eq!(*b, (id as u8).wrapping_add(i as u8));
                        }
                    }
                    let mut n = 0;
                    for r in t.scan_index("by_a", Scan::all().columns(&["id"])).unwrap() {
                        assert!(matches!(r.unwrap()[..], [Value::UInt(id)] if id < 300));
                        n += 1;
                    }
                    assert!(n <= 300);
                }
            });
        }
        let mut rng = Rng(9);
        let mut m = m;
        for _ in 0..1500 {
            let op = Op::random(&mut rng, &m, 300);
            op.run(&t).unwrap();
            op.apply(&mut m);
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(all_rows(&t), model_rows(&m));
    });
    db.check().unwrap();
}

#[test]
fn rows_larger_than_half_a_page_are_refused_with_a_typed_error() {
    use minnow::{ColumnDef, ColumnType, TableDef};
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config()).unwrap();
    let t = db
        .create_table(
            TableDef::new("blobs")
                .column(ColumnDef::new("id", ColumnType::U32))
                .column(ColumnDef::new("body", ColumnType::Var(4000)))
                .primary_key(&["id"]),
        )
        .unwrap();
    t.insert(&[Value::UInt(1), Value::Bytes(vec![7; 1000])])
        .unwrap();
    // A long non-key column moves to an overflow page.
    t.insert(&[Value::UInt(2), Value::Bytes(vec![7; 3000])])
        .unwrap();
    assert_eq!(
        t.get(&[Value::UInt(2)]).unwrap(),
        Some(vec![Value::UInt(2), Value::Bytes(vec![7; 3000])])
    );
    // A key column never does.
    let k = db
        .create_table(
            TableDef::new("long_keys")
                .column(ColumnDef::new("k", ColumnType::Var(4000)))
                .primary_key(&["k"]),
        )
        .unwrap();
    match k.insert(&[Value::Bytes(vec![7; 3000])]) {
        Err(Error::RowTooLarge {
            table,
            index,
            len,
            max,
            ..
        }) => {
            assert_eq!((table.as_str(), index.as_str()), ("long_keys", "PRIMARY"));
            assert!(len > max, "{len} {max}");
        }
        other => panic!("expected RowTooLarge, got {other:?}"),
    }
    assert_eq!(k.get(&[Value::Bytes(vec![7; 3000])]).unwrap(), None);
    // A definition too large for one dictionary record is refused before anything is made.
    let mut wide = TableDef::new("wide").primary_key(&["c0"]);
    for i in 0..400 {
        wide = wide.column(ColumnDef::new(format!("c{i}"), ColumnType::U8));
    }
    assert!(matches!(
        db.create_table(wide),
        Err(Error::BadDefinition { .. })
    ));
    assert_eq!(db.tables().unwrap(), ["blobs", "long_keys"]);
    drop(t);
    db.check().unwrap();
}
