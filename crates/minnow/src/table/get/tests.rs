//! Point reads in place: projections of every column type, NULLs and off-page columns,
//! the closure form, and which version a read sees while a writer is active.

use minnow_btree::record::{Date, DateTime, Value};

use crate::{ColumnDef, ColumnType, Config, Database, Error, TableDef};

/// A table with a column of most types, two of them BLOB/TEXT that go off-page when long.
fn db() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), Config::default()).unwrap();
    db.create_table(
        TableDef::new("t")
            .column(ColumnDef::nullable("i", ColumnType::I32))
            .column(ColumnDef::new("id", ColumnType::U64))
            .column(ColumnDef::nullable("d", ColumnType::Double))
            .column(ColumnDef::nullable("day", ColumnType::Date))
            .column(ColumnDef::nullable("at", ColumnType::DateTime))
            .column(ColumnDef::new("f", ColumnType::Fixed(3)))
            .column(ColumnDef::nullable("v", ColumnType::Var(50)))
            .column(ColumnDef::nullable("b", ColumnType::Blob))
            .column(ColumnDef::nullable("txt", ColumnType::Text))
            .primary_key(&["id"]),
    )
    .unwrap();
    (dir, db)
}

/// Row `id`: every column set, the BLOB and TEXT long enough to go off-page when `long`.
fn row(id: u64, long: bool) -> Vec<Value> {
    let n = if long { 40_000 } else { 10 };
    vec![
        Value::Int(-(id as i64)),
        Value::UInt(id),
        Value::Double(id as f64 / 4.0),
        Value::Date(Date::new(2020, 1, 1 + (id % 28) as u8).unwrap()),
        Value::DateTime(DateTime::new(Date::new(2021, 6, 30).unwrap(), 1, 2, 3, 4).unwrap()),
        Value::Bytes(vec![b'f'; 3]),
        Value::text(&format!("row {id}")),
        Value::Bytes(vec![id as u8; n]),
        Value::text(&"t".repeat(n)),
    ]
}

const ALL: [&str; 9] = ["i", "id", "d", "day", "at", "f", "v", "b", "txt"];

fn key(id: u64) -> [Value; 1] {
    [Value::UInt(id)]
}

#[test]
fn projections_return_the_named_columns_of_every_type() {
    let (_dir, db) = db();
    let t = db.table("t").unwrap();
    for (id, long) in [(1, false), (2, true)] {
        t.insert(&row(id, long)).unwrap();
    }
    let mut nulls = row(3, false);
    for (i, v) in nulls.iter_mut().enumerate() {
        if ![1, 5].contains(&i) {
            *v = Value::Null;
        }
    }
    t.insert(&nulls).unwrap();
    for id in 1..=3 {
        let full = t.get(key(id)).unwrap().unwrap();
        assert_eq!(t.get_columns(key(id), &ALL).unwrap().unwrap(), full);
        // Each column alone, and an order of its own with a repeat.
        for (i, name) in ALL.iter().enumerate() {
            let one = t.get_columns(key(id), &[name]).unwrap().unwrap();
            assert_eq!(one, vec![full[i].clone()], "row {id} column {name}");
        }
        let mixed = t.get_columns(key(id), &["txt", "id", "txt", "d"]).unwrap();
        assert_eq!(
            mixed.unwrap(),
            vec![
                full[8].clone(),
                full[1].clone(),
                full[8].clone(),
                full[2].clone()
            ]
        );
    }
    assert_eq!(t.get(key(2)).unwrap().unwrap(), row(2, true));
    assert_eq!(t.get(key(3)).unwrap().unwrap(), nulls);
    assert_eq!(t.get_columns(key(9), &["v"]).unwrap(), None);
    assert!(matches!(
        t.get_columns(key(1), &["v", "nope"]),
        Err(Error::NoSuchColumn { column, .. }) if column == "nope"
    ));
    // A key of the wrong type is refused as `get` refuses it.
    assert!(matches!(
        t.get_columns(&[Value::text("x")], &["v"]),
        Err(Error::TypeMismatch { .. })
    ));
    drop(t);
    db.close().unwrap();
}

#[test]
fn get_with_reads_columns_in_place() {
    let (_dir, db) = db();
    let t = db.table("t").unwrap();
    t.insert(&row(1, false)).unwrap();
    t.insert(&row(2, true)).unwrap();
    let got = t
        .get_with(key(1), |r| {
            assert_eq!(r.len(), 9);
            let v = r.bytes(6)?.map(|b| b.into_owned());
            Ok((v, r.value(0)?, r.bytes(7)?.map(|b| b.len())))
        })
        .unwrap();
    assert_eq!(
        got,
        Some((Some(b"row 1".to_vec()), Value::Int(-1), Some(10)))
    );
    // Off-page columns are read from their overflow pages.
    let len = t.get_with(key(2), |r| Ok(r.bytes(8)?.map(|b| b.len())));
    assert_eq!(len.unwrap(), Some(Some(40_000)));
    // Numbers are not bytes; positions past the row are errors; a missing row is None.
    let err = t.get_with(key(1), |r| r.bytes(0).map(|_| ()));
    assert!(matches!(err, Err(Error::TypeMismatch { .. })));
    assert!(t.get_with(key(1), |r| r.value(9)).is_err());
    assert_eq!(t.get_with(key(5), |_| Ok(())).unwrap(), None);
    drop(t);
    db.close().unwrap();
}

#[test]
fn an_uncommitted_change_is_not_seen_by_projections() {
    let (_dir, db) = db();
    let t = db.table("t").unwrap();
    t.insert(&row(1, false)).unwrap();
    t.insert(&row(2, true)).unwrap();
    let reader = db.begin().unwrap();
    // The reader's view is taken at its first read, before the writer changes anything.
    assert_eq!(
        reader.get_columns(&t, key(1), &["v"]).unwrap(),
        Some(vec![Value::text("row 1")])
    );
    let mut w = db.begin().unwrap();
    let mut changed = row(1, false);
    changed[6] = Value::text("changed");
    w.update(&t, &changed).unwrap();
    let mut long = row(2, true);
    long[7] = Value::Bytes(vec![9; 30_000]);
    w.update(&t, &long).unwrap();
    w.delete(&t, key(2)).unwrap();
    w.insert(&t, &row(4, false)).unwrap();
    // Autocommit reads see the committed versions (rebuilt from undo), in every form.
    let v1 = Some(vec![Value::text("row 1"), Value::UInt(1)]);
    assert_eq!(t.get_columns(key(1), &["v", "id"]).unwrap(), v1);
    assert_eq!(t.get(key(1)).unwrap(), Some(row(1, false)));
    let b2 = t.get_columns(key(2), &["b"]).unwrap();
    assert_eq!(b2, Some(vec![Value::Bytes(vec![2; 40_000])]));
    assert_eq!(t.get_columns(key(4), &["v"]).unwrap(), None);
    let borrowed = t.get_with(key(1), |r| Ok(r.bytes(6)?.map(|b| b.into_owned())));
    assert_eq!(borrowed.unwrap(), Some(Some(b"row 1".to_vec())));
    // The writer sees its own changes.
    assert_eq!(
        w.get_columns(&t, key(1), &["v"]).unwrap(),
        Some(vec![Value::text("changed")])
    );
    assert_eq!(w.get_columns(&t, key(2), &["v"]).unwrap(), None);
    w.commit().unwrap();
    // Committed: new autocommit reads see it, the older snapshot still does not.
    assert_eq!(
        t.get_columns(key(1), &["v"]).unwrap(),
        Some(vec![Value::text("changed")])
    );
    assert_eq!(t.get_columns(key(2), &["b"]).unwrap(), None);
    assert_eq!(
        reader.get_columns(&t, key(1), &["v"]).unwrap(),
        Some(vec![Value::text("row 1")])
    );
    let old = reader.get_with(&t, key(2), |r| Ok(r.bytes(7)?.map(|b| b.len())));
    assert_eq!(old.unwrap(), Some(Some(40_000)));
    assert_eq!(reader.get(&t, key(4)).unwrap(), None);
    reader.commit().unwrap();
    drop(t);
    db.close().unwrap();
}

/// A table keyed by one byte column `k` of type `ty`, with a value column `v`.
fn bytes_keyed(db: &Database, name: &str, ty: ColumnType) -> crate::Table {
    db.create_table(
        TableDef::new(name)
            .column(ColumnDef::new("k", ty))
            .column(ColumnDef::nullable("v", ColumnType::Var(50)))
            .primary_key(&["k"]),
    )
    .unwrap()
}

#[test]
fn get_bytes_with_reads_what_get_with_reads() {
    let (_dir, db) = db();
    // (BLOB and TEXT columns cannot be keys.)
    for (name, ty) in [("fixed", ColumnType::Fixed(4)), ("var", ColumnType::Var(8))] {
        let t = bytes_keyed(&db, name, ty);
        for k in [b"aaaa", b"bbbb", b"cccc"] {
            t.insert(&[Value::Bytes(k.to_vec()), Value::Bytes(k.repeat(2))])
                .unwrap();
        }
        let value = |r: &super::RowView<'_>| Ok(r.bytes(1)?.map(|b| b.into_owned()));
        let tx = db.begin().unwrap();
        for k in [&b"aaaa"[..], b"bbbb", b"cccc", b"zzzz"] {
            let by_value = tx.get_with(&t, &[Value::Bytes(k.to_vec())], value).unwrap();
            let by_bytes = tx.get_bytes_with(&t, k, value).unwrap();
            assert_eq!(by_bytes, by_value, "{name}: {k:?}");
            assert_eq!(t.get_bytes_with(k, value).unwrap(), by_value, "{name}");
            assert_eq!(by_bytes.is_some(), k != b"zzzz", "{name}");
        }
        tx.commit().unwrap();
    }
    db.close().unwrap();
}

#[test]
fn get_bytes_with_refuses_keys_the_column_cannot_hold() {
    let (_dir, db) = db();
    let fixed = bytes_keyed(&db, "fixed", ColumnType::Fixed(4));
    let var = bytes_keyed(&db, "var", ColumnType::Var(4));
    let numbered = db.table("t").unwrap();
    let two = db
        .create_table(
            TableDef::new("two")
                .column(ColumnDef::new("a", ColumnType::Var(4)))
                .column(ColumnDef::new("b", ColumnType::Var(4)))
                .primary_key(&["a", "b"]),
        )
        .unwrap();
    let tx = db.begin().unwrap();
    let refused = |t: &crate::Table, k: &[u8]| {
        let autocommit = t.get_bytes_with(k, |_| Ok(()));
        let in_tx = tx.get_bytes_with(t, k, |_| Ok(()));
        matches!(autocommit, Err(Error::TypeMismatch { .. }))
            && matches!(in_tx, Err(Error::TypeMismatch { .. }))
    };
    assert!(refused(&fixed, b"abc"), "short for Fixed(4)");
    assert!(refused(&fixed, b"abcde"), "long for Fixed(4)");
    assert!(refused(&var, b"abcde"), "long for Var(4)");
    assert!(refused(&numbered, b"12345678"), "a U64 key");
    assert!(refused(&two, b"ab"), "a key of two columns");
    assert_eq!(var.get_bytes_with(b"", |_| Ok(())).unwrap(), None);
    tx.commit().unwrap();
    drop((fixed, var, numbered, two));
    db.close().unwrap();
}

#[test]
fn get_bytes_with_sees_the_version_of_its_view() {
    let (_dir, db) = db();
    let t = bytes_keyed(&db, "kv", ColumnType::Var(8));
    t.insert(&[Value::text("k"), Value::text("old")]).unwrap();
    let value = |r: &super::RowView<'_>| Ok(r.bytes(1)?.map(|b| b.into_owned()));
    let reader = db.begin().unwrap();
    assert_eq!(
        reader.get_bytes_with(&t, b"k", value).unwrap(),
        Some(Some(b"old".to_vec()))
    );
    // A writer changes the row and, later, commits: the reader's view keeps the old value
    // (rebuilt from undo); an autocommit read sees the latest committed one.
    let mut writer = db.begin().unwrap();
    writer
        .update(&t, &[Value::text("k"), Value::text("new")])
        .unwrap();
    assert_eq!(
        reader.get_bytes_with(&t, b"k", value).unwrap(),
        Some(Some(b"old".to_vec()))
    );
    assert_eq!(
        t.get_bytes_with(b"k", value).unwrap(),
        Some(Some(b"old".to_vec()))
    );
    writer.commit().unwrap();
    assert_eq!(
        reader.get_bytes_with(&t, b"k", value).unwrap(),
        Some(Some(b"old".to_vec()))
    );
    assert_eq!(
        t.get_bytes_with(b"k", value).unwrap(),
        Some(Some(b"new".to_vec()))
    );
    // A delete the view does not see leaves the row readable to it.
    let mut deleter = db.begin().unwrap();
    deleter.delete(&t, &[Value::text("k")]).unwrap();
    deleter.commit().unwrap();
    assert_eq!(
        reader.get_bytes_with(&t, b"k", value).unwrap(),
        Some(Some(b"old".to_vec()))
    );
    assert_eq!(t.get_bytes_with(b"k", value).unwrap(), None);
    reader.commit().unwrap();
    drop(t);
    db.close().unwrap();
}
