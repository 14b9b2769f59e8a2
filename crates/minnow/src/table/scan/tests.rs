//! Scans that stop: a limited scan decodes about as many records as it returns, and rows it
//! must skip (invisible versions, delete-marked records) do not count against the limit.

use std::ops::Bound;

use minnow_btree::record::Value;

use crate::{ColumnDef, ColumnType, Config, Database, Scan, Table, TableDef};

/// A table of even ids 0, 2, ..., 1998 (`v` = -id, `name` = "n{id}"), without background
/// purge so that delete-marked records stay on the page.
fn evens() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        purge_threads: 0,
        ..Config::default()
    };
    let db = Database::create(dir.path(), config).unwrap();
    let t = db
        .create_table(
            TableDef::new("t")
                .column(ColumnDef::new("id", ColumnType::U64))
                .column(ColumnDef::new("v", ColumnType::I64))
                .column(ColumnDef::new("name", ColumnType::Var(40)))
                .primary_key(&["id"]),
        )
        .unwrap();
    let mut tx = db.begin().unwrap();
    for id in (0..2000u64).step_by(2) {
        tx.insert(&t, &row(id)).unwrap();
    }
    tx.commit().unwrap();
    (dir, db)
}

fn row(id: u64) -> Vec<Value> {
    vec![
        Value::UInt(id),
        Value::Int(-(id as i64)),
        Value::text(&format!("n{id}")),
    ]
}

/// The ids a scan returns, and how many records its B-tree scan decoded.
fn ids(t: &Table, scan: Scan) -> (Vec<u64>, u64) {
    let mut rows = t.scan(scan).unwrap();
    let ids = rows
        .by_ref()
        .map(|r| match r.unwrap().first() {
            Some(Value::UInt(id)) => *id,
            other => panic!("unexpected row {other:?}"),
        })
        .collect();
    (ids, rows.decoded())
}

fn from(id: u64) -> Scan {
    Scan::range(Bound::Included(vec![Value::UInt(id)]), Bound::Unbounded)
}

#[test]
fn a_ten_row_scan_decodes_ten_records() {
    let (_dir, db) = evens();
    let t = db.table("t").unwrap();
    let (got, decoded) = ids(&t, from(100).limit(10));
    assert_eq!(got, (100..120).step_by(2).collect::<Vec<_>>());
    assert_eq!(
        decoded, 10,
        "a 10-row scan decodes 10 records, not its leaves"
    );
    let to = Bound::Included(vec![Value::UInt(1000)]);
    let (got, decoded) = ids(&t, Scan::range(Bound::Unbounded, to).reverse().limit(10));
    assert_eq!(got, (982..=1000).rev().step_by(2).collect::<Vec<_>>());
    assert_eq!(decoded, 10);
}

#[test]
fn rows_the_view_cannot_see_do_not_count_against_the_limit() {
    let (_dir, db) = evens();
    let t = db.table("t").unwrap();
    // Uncommitted inserts between the rows: invisible to a statement's view.
    let mut writer = db.begin().unwrap();
    for id in (101..200u64).step_by(2) {
        writer.insert(&t, &row(id)).unwrap();
    }
    let (got, decoded) = ids(&t, from(100).limit(10));
    assert_eq!(got, (100..120).step_by(2).collect::<Vec<_>>());
    // 19 records hold the 10 visible rows; batches of 10 and then 20 read at most 30.
    assert!((19..=30).contains(&decoded), "decoded {decoded}");
    let to = Bound::Included(vec![Value::UInt(199)]);
    let (got, decoded) = ids(&t, Scan::range(Bound::Unbounded, to).reverse().limit(10));
    assert_eq!(got, (180..=198).rev().step_by(2).collect::<Vec<_>>());
    assert!((19..=30).contains(&decoded), "decoded {decoded}");
    writer.rollback().unwrap();
    // Committed deletes leave delete-marked records (no purge runs): 100 of them to skip.
    for id in (200..400u64).step_by(2) {
        t.delete(&[Value::UInt(id)]).unwrap();
    }
    let (got, decoded) = ids(&t, from(200).limit(5));
    assert_eq!(got, [400, 402, 404, 406, 408]);
    // Batches of 5, 10, 20, 40, 80, 160: what grows is bounded by twice what was skipped.
    assert!((105..=315).contains(&decoded), "decoded {decoded}");
}

#[test]
fn a_projected_scan_returns_its_columns() {
    let (_dir, db) = evens();
    let t = db.table("t").unwrap();
    let rows: Vec<_> = t
        .scan(from(10).limit(3).columns(&["name", "v"]))
        .unwrap()
        .collect::<crate::Result<_>>()
        .unwrap();
    let want: Vec<Vec<Value>> = [10u64, 12, 14]
        .iter()
        .map(|&id| vec![Value::text(&format!("n{id}")), Value::Int(-(id as i64))])
        .collect();
    assert_eq!(rows, want);
    // A row updated after the scan's view: the projection comes from the old version.
    let mut writer = db.begin().unwrap();
    writer
        .update(&t, &[Value::UInt(12), Value::Int(7), Value::text("new")])
        .unwrap();
    let rows: Vec<_> = t
        .scan(from(12).limit(1).columns(&["v"]))
        .unwrap()
        .collect::<crate::Result<_>>()
        .unwrap();
    assert_eq!(rows, [vec![Value::Int(-12)]]);
    writer.commit().unwrap();
}

/// Statement views are reused while no transaction begins or ends: a scan that starts after
/// a commit was acknowledged (here: published through an atomic by the writer) must still
/// see it, from another thread.
#[test]
fn a_scan_sees_every_commit_acknowledged_before_it_began() {
    use std::sync::atomic::{AtomicU64, Ordering};
    let (_dir, db) = evens();
    let acked = AtomicU64::new(0);
    std::thread::scope(|s| {
        s.spawn(|| {
            let t = db.table("t").unwrap();
            for v in 1..=200u64 {
                t.update(&[Value::UInt(0), Value::Int(v as i64), Value::text("w")])
                    .unwrap();
                acked.store(v, Ordering::SeqCst);
            }
        });
        let t = db.table("t").unwrap();
        loop {
            let before = acked.load(Ordering::SeqCst);
            let rows: Vec<_> = t
                .scan(from(0).limit(1).columns(&["v"]))
                .unwrap()
                .collect::<crate::Result<_>>()
                .unwrap();
            let seen = match rows.as_slice() {
                [r] => match r.as_slice() {
                    [Value::Int(v)] => *v,
                    other => panic!("unexpected row {other:?}"),
                },
                other => panic!("unexpected rows {other:?}"),
            };
            assert!(
                seen >= before as i64,
                "saw {seen} after {before} was acknowledged"
            );
            if before == 200 {
                break;
            }
        }
    });
}
