//! A transaction's inserts into an empty table WITH secondary indexes: each index's entries
//! are buffered beside the rows and every index is built bottom-up at commit (the
//! `minnow-engine` `write::bulk` and `write::bulk_sec` module docs). Each test checks what
//! the ordinary path gives, and that the buffered path was the one taken (a buffered insert
//! takes no row lock: `lock_stats().held` stays 0).

mod common;

use std::time::Duration;

use common::Rng;
use minnow::{ColumnDef, ColumnType, Config, Database, Error, IndexDef, Scan, TableDef, Value};

/// `t(id U64 PK, a I32, u Var(8) NULL, pad Var(120))` with `by_a(a)` and unique `by_u(u)`:
/// the campaigns' table (`common::table_def`).
fn def() -> TableDef {
    common::table_def()
}

fn small() -> Config {
    Config {
        buffer_pool_size: 4 << 20,
        lock_wait_timeout: Duration::from_millis(50),
        ..Config::default()
    }
}

/// `n` rows with distinct ids in random order (fixed seed), `a` repeating (about three rows
/// each), `u` distinct or NULL (every fifth row).
fn rows(seed: u64, n: usize) -> Vec<Vec<Value>> {
    let mut rng = Rng(seed);
    let mut ids: Vec<u64> = (0..n as u64).map(|i| i * 7 + 1).collect();
    for i in (1..ids.len()).rev() {
        ids.swap(i, rng.below(i as u64 + 1) as usize);
    }
    ids.into_iter()
        .map(|id| {
            let a = rng.below(n as u64 / 3 + 1) as i64 - 100;
            let u = if id % 5 == 0 {
                Value::Null
            } else {
                Value::Bytes(format!("u{id}").into_bytes())
            };
            vec![
                Value::UInt(id),
                Value::Int(a),
                u,
                Value::Bytes(vec![b'p'; 40]),
            ]
        })
        .collect()
}

fn id(r: &[Value]) -> u64 {
    match r[0] {
        Value::UInt(i) => i,
        _ => panic!("id {:?}", r[0]),
    }
}

fn a(r: &[Value]) -> i64 {
    match r[1] {
        Value::Int(a) => a,
        _ => panic!("a {:?}", r[1]),
    }
}

/// The rows in primary key order.
fn by_id(mut r: Vec<Vec<Value>>) -> Vec<Vec<Value>> {
    r.sort_by_key(|r| id(r));
    r
}

/// What a covering scan of `by_a` for `(a, id)` returns for `rows`.
fn by_a_entries(rows: &[Vec<Value>]) -> Vec<Vec<Value>> {
    let mut rows = rows.to_vec();
    rows.sort_by_key(|r| (a(r), id(r)));
    rows.iter()
        .map(|r| vec![r[1].clone(), r[0].clone()])
        .collect()
}

fn collect(r: minnow::Result<minnow::Rows>) -> Vec<Vec<Value>> {
    r.unwrap().collect::<minnow::Result<_>>().unwrap()
}

/// Every way of reading the table agrees with `want` (the rows, any order): the primary
/// key scan, a covering scan of `by_a`, a full-row scan of `by_a`, point reads through
/// `by_u`, the count; and `check()` passes.
fn assert_holds(db: &Database, t: &minnow::Table, want: &[Vec<Value>]) {
    let want = by_id(want.to_vec());
    assert_eq!(collect(t.scan(Scan::all())), want);
    assert_eq!(
        collect(t.scan_index("by_a", Scan::all().columns(&["a", "id"]))),
        by_a_entries(&want)
    );
    let mut full = collect(t.scan_index("by_a", Scan::all()));
    assert_eq!(full.len(), want.len());
    full.sort_by_key(|r| id(r));
    assert_eq!(full, want);
    for r in want.iter().step_by(7) {
        if r[2] != Value::Null {
            assert_eq!(t.get_by("by_u", &r[2..3]).unwrap().as_ref(), Some(r));
        }
    }
    assert_eq!(t.count().unwrap(), want.len() as u64);
    assert_eq!(db.check().unwrap().rows["t"], want.len() as u64);
}

/// A new database with the small config and an empty `t`.
fn db_t() -> (tempfile::TempDir, Database, minnow::Table) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), small()).unwrap();
    let t = db.create_table(def()).unwrap();
    (dir, db, t)
}

fn insert_all(tx: &mut minnow::Transaction, t: &minnow::Table, rows: &[Vec<Value>]) {
    for r in rows {
        tx.insert(t, r).unwrap();
    }
}

#[test]
fn buffered_load_builds_every_index_and_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let data = rows(1, 3000);
    {
        let db = Database::create(dir.path(), small()).unwrap();
        let t = db.create_table(def()).unwrap();
        let mut tx = db.begin().unwrap();
        insert_all(&mut tx, &t, &data);
        assert_eq!(db.lock_stats().unwrap().held, 0, "buffered");
        assert_eq!(t.count().unwrap(), 0, "not committed: others see nothing");
        assert!(collect(t.scan_index("by_a", Scan::all())).is_empty());
        tx.commit().unwrap();
        assert_holds(&db, &t, &data);
        // The table is an ordinary one now, its unique index enforced.
        let taken = data.iter().find(|r| r[2] != Value::Null).unwrap()[2].clone();
        let e = t
            .insert(&[Value::UInt(2), Value::Int(0), taken, Value::text("p")])
            .unwrap_err();
        assert!(matches!(e, Error::DuplicateKey { .. }), "{e}");
        db.close().unwrap();
    }
    let db = Database::open(dir.path(), small()).unwrap();
    let t = db.table("t").unwrap();
    assert_holds(&db, &t, &data);
}

/// The error a row-by-row insert gives when it repeats a committed row's keys as `dup` does
/// `first`: `first` committed, then `dup` inserted by a transaction on the ordinary path.
fn ordinary_error(first: &[Value], dup: &[Value]) -> String {
    let (_dir, db, t) = db_t();
    t.insert(first).unwrap();
    let mut tx = db.begin().unwrap();
    let e = tx.insert(&t, dup).unwrap_err().to_string();
    assert!(db.lock_stats().unwrap().held > 0, "the ordinary path");
    e
}

/// A repeated unique secondary key fails at the insert with the error a row-by-row insert
/// gives (index `by_u`, the key), and the row leaves no trace: its primary key can be
/// inserted again. A row repeating both keys names PRIMARY, as row by row. NULLs repeat
/// freely. Both while rows come in key order and after one came out of order.
#[test]
fn unique_duplicates_fail_at_the_insert_as_row_by_row() {
    let row = |id: u64, u: Option<&str>| {
        vec![
            Value::UInt(id),
            Value::Int(id as i64 % 3),
            u.map_or(Value::Null, |u| Value::Bytes(u.as_bytes().to_vec())),
            Value::Bytes(b"x".to_vec()),
        ]
    };
    for out_of_order in [false, true] {
        let (_dir, db, t) = db_t();
        let mut tx = db.begin().unwrap();
        let mut want = Vec::new();
        if out_of_order {
            for r in [row(50, Some("k50")), row(40, Some("k40"))] {
                tx.insert(&t, &r).unwrap();
                want.push(r);
            }
        }
        for r in [
            row(1, Some("a")),
            row(2, None),
            row(3, None),
            row(4, Some("b")),
        ] {
            tx.insert(&t, &r).unwrap();
            want.push(r);
        }
        // u = "a" again, a new id.
        let dup = row(5, Some("a"));
        let e = tx.insert(&t, &dup).unwrap_err();
        assert!(
            matches!(&e, Error::DuplicateKey { index, key, .. }
                if index == "by_u" && key == &[Value::Bytes(b"a".to_vec())]),
            "{e}"
        );
        assert_eq!(e.to_string(), ordinary_error(&row(1, Some("a")), &dup));
        // Both keys repeated: the primary key is checked first.
        let both = row(4, Some("a"));
        let e = tx.insert(&t, &both).unwrap_err();
        assert!(
            matches!(&e, Error::DuplicateKey { index, .. } if index == "PRIMARY"),
            "{e}"
        );
        assert_eq!(e.to_string(), ordinary_error(&row(4, Some("a")), &both));
        // The failed row left nothing: id 5 and u "c" go in, and "a" is still taken.
        let r = row(5, Some("c"));
        tx.insert(&t, &r).unwrap();
        want.push(r);
        let e = tx.insert(&t, &row(6, Some("a"))).unwrap_err();
        assert!(matches!(&e, Error::DuplicateKey { index, .. } if index == "by_u"));
        let e = tx.insert(&t, &row(5, Some("d"))).unwrap_err();
        assert!(matches!(&e, Error::DuplicateKey { index, .. } if index == "PRIMARY"));
        assert_eq!(db.lock_stats().unwrap().held, 0, "still buffered");
        tx.commit().unwrap();
        assert_holds(&db, &t, &want);
    }
}

/// Reads of the table by the transaction (through either index) and its updates and
/// deletes first write the buffered rows the ordinary way (a spill), so they see them and
/// change them as row-by-row inserts; the secondary entries are the ordinary path's.
#[test]
fn reads_and_changes_through_secondary_indexes_spill_first() {
    let data = rows(2, 200);
    // get_by, then an update that moves a row in both indexes, then a delete.
    let (_dir, db, t) = db_t();
    let mut tx = db.begin().unwrap();
    insert_all(&mut tx, &t, &data);
    assert_eq!(db.lock_stats().unwrap().held, 0);
    let r = data.iter().find(|r| r[2] != Value::Null).unwrap();
    assert_eq!(tx.get_by(&t, "by_u", &r[2..3]).unwrap().as_ref(), Some(r));
    assert!(db.lock_stats().unwrap().held >= 200, "spilled");
    let mut want = data.clone();
    let moved = vec![
        want[3][0].clone(),
        Value::Int(-5000),
        Value::Bytes(b"moved".to_vec()),
        Value::Bytes(b"m".to_vec()),
    ];
    tx.update(&t, &moved).unwrap();
    want[3] = moved;
    assert!(tx.delete(&t, &want[9][..1]).unwrap());
    want.remove(9);
    let e = tx.insert(&t, &data[20]).unwrap_err();
    assert!(matches!(e, Error::DuplicateKey { .. }), "{e}");
    tx.commit().unwrap();
    assert_holds(&db, &t, &want);

    // A scan of a secondary index first, on a fresh table.
    let (_dir, db, t) = db_t();
    let mut tx = db.begin().unwrap();
    insert_all(&mut tx, &t, &data);
    assert_eq!(
        collect(tx.scan_index(&t, "by_a", Scan::all().columns(&["a", "id"]))),
        by_a_entries(&data)
    );
    assert_eq!(tx.count(&t).unwrap(), 200);
    tx.commit().unwrap();
    assert_holds(&db, &t, &data);
}

#[test]
fn rollback_drops_every_index_buffer() {
    let (_dir, db, t) = db_t();
    let data = rows(3, 300);
    let mut tx = db.begin().unwrap();
    insert_all(&mut tx, &t, &data);
    tx.rollback().unwrap();
    assert_holds(&db, &t, &[]);
    // The claim ended and no entry stayed behind: the same rows go in row by row.
    for r in &data[..20] {
        t.insert(r).unwrap();
    }
    assert_holds(&db, &t, &data[..20]);
}

/// Read views taken before the commit read the built secondary trees and see nothing: a
/// covering scan checks each entry of a leaf whose `PAGE_MAX_TRX_ID` is the committer's
/// against the clustered record, which has no version for them; a count too.
#[test]
fn old_views_see_nothing_through_the_built_indexes() {
    let (_dir, db, t) = db_t();
    let data = rows(4, 500);
    let old = db.begin().unwrap();
    assert_eq!(old.count(&t).unwrap(), 0);
    let mut tx = db.begin().unwrap();
    insert_all(&mut tx, &t, &data);
    let during = db.begin().unwrap();
    assert_eq!(during.count(&t).unwrap(), 0);
    tx.commit().unwrap();
    for v in [&old, &during] {
        assert_eq!(v.count(&t).unwrap(), 0);
        assert!(collect(v.scan_index(&t, "by_a", Scan::all().columns(&["a", "id"]))).is_empty());
        assert!(collect(v.scan_index(&t, "by_u", Scan::all())).is_empty());
        let u = data.iter().find(|r| r[2] != Value::Null).unwrap();
        assert_eq!(v.get_by(&t, "by_u", &u[2..3]).unwrap(), None);
    }
    let new = db.begin().unwrap();
    assert_eq!(new.count(&t).unwrap(), 500);
    assert_eq!(
        collect(new.scan_index(&t, "by_a", Scan::all().columns(&["a", "id"]))),
        by_a_entries(&data)
    );
    drop((old, during, new));
    assert_holds(&db, &t, &data);
}

/// `bulk_insert_buffer_size` counts the secondary entries: rows that fit the buffer in a
/// table without indexes overflow it in one with three, and spill (each row then locked).
#[test]
fn the_buffer_limit_counts_secondary_entries() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        bulk_insert_buffer_size: 24 << 10,
        ..small()
    };
    let db = Database::create(dir.path(), config).unwrap();
    let plain = TableDef::new("plain")
        .column(ColumnDef::new("id", ColumnType::U64))
        .column(ColumnDef::new("x", ColumnType::U64))
        .column(ColumnDef::new("y", ColumnType::U64))
        .column(ColumnDef::new("z", ColumnType::U64))
        .primary_key(&["id"]);
    let indexed = TableDef {
        name: "indexed".into(),
        ..plain.clone()
    }
    .index(IndexDef::new("by_x", &["x"]))
    .index(IndexDef::new("by_y", &["y"]))
    .index(IndexDef::unique("by_z", &["z"]));
    let row = |i: u64| (0..4).map(|c| Value::UInt(i * 4 + c)).collect::<Vec<_>>();
    for (def, spills) in [(plain, false), (indexed, true)] {
        let t = db.create_table(def).unwrap();
        let mut tx = db.begin().unwrap();
        for i in 0..150 {
            tx.insert(&t, &row(i)).unwrap();
        }
        let held = db.lock_stats().unwrap().held;
        assert_eq!(held > 0, spills, "{held} locks held");
        tx.commit().unwrap();
        assert_eq!(t.count().unwrap(), 150);
    }
    db.check().unwrap();
}

/// A power cut anywhere in a buffered transaction's commit, on a table with secondary
/// indexes: after recovery every index holds every row or none, and `check()` passes (no
/// page of the built or the old trees leaked).
#[test]
fn a_crash_during_the_commit_leaves_every_index_whole_or_empty() {
    common::commit_campaign(
        |seed, db, sim| {
            let t = db.create_table(def()).unwrap();
            let mut tx = db.begin().unwrap();
            insert_all(&mut tx, &t, &rows(seed, 300));
            sim.arm(1 + seed % 7);
            tx.commit().is_ok()
        },
        |seed, db| {
            let t = db.table("t").unwrap();
            let kept = t.count().unwrap() > 0;
            let want = if kept { rows(seed, 300) } else { Vec::new() };
            assert_holds(db, &t, &want);
            kept
        },
    );
}
