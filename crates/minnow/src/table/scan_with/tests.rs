//! `scan_with` returns exactly what `scan` returns, for every kind of record a view meets: its
//! own visible version, a delete-marked one, one too new for the view (rebuilt from undo),
//! across leaves, in both directions, with and without a limit.

use std::ops::Bound;

use minnow_btree::record::Value;

use crate::{ColumnDef, ColumnType, Config, Database, Error, Scan, Table, TableDef};

/// Ids 0, 2, ..., 1998 (`v` = -id, `name` = "n{id}": several leaves), no background purge
/// so that delete-marked records stay on the pages.
fn evens(config: Config) -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        purge_threads: 0,
        ..config
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
        tx.insert(&t, &row(id, -(id as i64))).unwrap();
    }
    tx.commit().unwrap();
    (dir, db)
}

fn row(id: u64, v: i64) -> Vec<Value> {
    vec![
        Value::UInt(id),
        Value::Int(v),
        Value::text(&format!("n{id}")),
    ]
}

/// Every row `scan_with` hands out, read whole through the view.
fn visited(t: &Table, scan: Scan) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    let n = t
        .scan_with(scan, |r| {
            out.push(
                (0..r.len())
                    .map(|c| r.value(c))
                    .collect::<crate::Result<_>>()?,
            );
            Ok(true)
        })
        .unwrap();
    assert_eq!(n, out.len() as u64);
    out
}

fn owned(t: &Table, scan: Scan) -> Vec<Vec<Value>> {
    t.scan(scan).unwrap().collect::<crate::Result<_>>().unwrap()
}

fn scans() -> Vec<Scan> {
    let k = |id: u64| vec![Value::UInt(id)];
    vec![
        Scan::all(),
        Scan::range(Bound::Included(k(100)), Bound::Unbounded).limit(10),
        Scan::range(Bound::Excluded(k(100)), Bound::Excluded(k(900))),
        Scan::range(Bound::Included(k(101)), Bound::Included(k(1500))).limit(400),
        Scan::range(Bound::Unbounded, Bound::Included(k(1000)))
            .reverse()
            .limit(10),
        Scan::range(Bound::Included(k(300)), Bound::Excluded(k(1700))).reverse(),
        Scan::all().limit(0),
    ]
}

fn same_as_scan(t: &Table) {
    for s in scans() {
        assert_eq!(visited(t, s.clone()), owned(t, s.clone()), "{s:?}");
    }
}

#[test]
fn scan_with_sees_what_scan_sees() {
    let (_dir, db) = evens(Config::default());
    let t = db.table("t").unwrap();
    same_as_scan(&t);
    assert_eq!(visited(&t, Scan::all()).len(), 1000);
    // Committed deletes: delete-marked records, skipped.
    for id in (200..400u64).step_by(2) {
        t.delete(&[Value::UInt(id)]).unwrap();
    }
    // A reader whose view is older than the changes that follow.
    let reader = db.begin().unwrap();
    let before: Vec<_> = reader
        .scan(&t, Scan::all())
        .unwrap()
        .collect::<crate::Result<_>>()
        .unwrap();
    assert_eq!(before.len(), 900);
    // Committed updates and deletes after the reader's view, and uncommitted changes of
    // another transaction: the statement sees the first, not the second.
    for id in (1000..1100u64).step_by(2) {
        t.update(&row(id, 7)).unwrap();
    }
    for id in (1100..1200u64).step_by(2) {
        t.delete(&[Value::UInt(id)]).unwrap();
    }
    let mut writer = db.begin().unwrap();
    for id in (501..600u64).step_by(2) {
        writer.insert(&t, &row(id, 1)).unwrap();
    }
    for id in (600..700u64).step_by(2) {
        writer.update(&t, &row(id, 9)).unwrap();
    }
    for id in (700..800u64).step_by(2) {
        writer.delete(&t, &[Value::UInt(id)]).unwrap();
    }
    same_as_scan(&t);
    let now = visited(&t, Scan::all());
    assert_eq!(now.len(), 850);
    assert!(now.contains(&row(1000, 7)) && now.contains(&row(600, -600)));
    assert!(now.contains(&row(700, -700)) && !now.contains(&row(501, 1)));
    // The old reader sees its view: every row rebuilt from undo where it must be.
    let mut old = Vec::new();
    let n = reader
        .scan_with(&t, Scan::all(), |r| {
            old.push(
                (0..r.len())
                    .map(|c| r.value(c))
                    .collect::<crate::Result<_>>()?,
            );
            Ok(true)
        })
        .unwrap();
    assert_eq!((n, &old), (900, &before));
    // The writer sees its own changes.
    let mut mine = 0;
    writer
        .scan_with(&t, Scan::all(), |r| {
            mine += 1;
            if r.value(0)? == Value::UInt(600) {
                assert_eq!(r.value(1)?, Value::Int(9));
            }
            Ok(true)
        })
        .unwrap();
    assert_eq!(mine, 850 + 50 - 50);
    writer.rollback().unwrap();
    reader.commit().unwrap();
    same_as_scan(&t);
}

#[test]
fn the_closure_ends_the_scan_and_its_errors_come_back() {
    let (_dir, db) = evens(Config::default());
    let t = db.table("t").unwrap();
    let mut seen = Vec::new();
    let n = t
        .scan_with(Scan::all(), |r| {
            seen.push(r.value(0)?);
            Ok(seen.len() < 3)
        })
        .unwrap();
    assert_eq!(n, 3);
    assert_eq!(seen, [Value::UInt(0), Value::UInt(2), Value::UInt(4)]);
    // Byte columns are slices of the page; a column that is not bytes is a typed error.
    let mut names = Vec::new();
    t.scan_with(Scan::all().limit(2), |r| {
        names.push(r.bytes(2)?.map(|b| b.into_owned()));
        Ok(true)
    })
    .unwrap();
    assert_eq!(names, [Some(b"n0".to_vec()), Some(b"n2".to_vec())]);
    let e = t.scan_with(Scan::all(), |r| r.bytes(1).map(|_| true));
    assert!(matches!(e, Err(Error::TypeMismatch { .. })), "{e:?}");
}

#[test]
fn admission_tickets_run_out_off_the_latch() {
    let (_dir, db) = evens(Config::default());
    // One thread inside at a time, three rows per entry: the scan leaves and enters again
    // every three rows, each time with the leaf released.
    db.set_thread_concurrency(1, 3).unwrap();
    let t = db.table("t").unwrap();
    same_as_scan(&t);
}
