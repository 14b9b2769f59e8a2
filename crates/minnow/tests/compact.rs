//! `Database::compact_into`: a compacted copy holds exactly the committed rows of one
//! snapshot, with every index, in smaller files.

mod common;

use common::{all_rows, table_def};
use minnow::{Config, Database, Error, PageSize, TableDef, Value};

fn config() -> Config {
    Config {
        page_size: PageSize::K4,
        buffer_pool_size: 4 << 20,
        buffer_pool_dump_at_shutdown: false,
        ..Config::default()
    }
}

fn row(id: u64) -> Vec<Value> {
    vec![
        Value::UInt(id),
        Value::Int((id % 13) as i64),
        if id.is_multiple_of(3) {
            Value::Null
        } else {
            Value::Bytes(id.to_be_bytes().to_vec())
        },
        Value::Bytes(vec![id as u8; 100]),
    ]
}

fn file_len(dir: &std::path::Path, name: &str) -> u64 {
    std::fs::metadata(dir.join(name)).unwrap().len()
}

#[test]
fn a_compacted_copy_holds_the_snapshot_in_smaller_files() {
    const ROWS: u64 = 1500;
    let root = tempfile::tempdir().unwrap();
    let (src, dest) = (root.path().join("db"), root.path().join("copy"));
    let db = Database::create(&src, config()).unwrap();
    let t = db.create_table(table_def()).unwrap();
    db.create_table(
        TableDef::new("empty")
            .column(minnow::ColumnDef::new("k", minnow::ColumnType::U32))
            .primary_key(&["k"]),
    )
    .unwrap();
    // Keys in a scattered order, so the tree is built by splits; then two thirds removed.
    let mut tx = db.begin().unwrap();
    for i in 0..ROWS {
        tx.insert(&t, &row(i * 7919 % ROWS)).unwrap();
    }
    tx.commit().unwrap();
    let mut tx = db.begin().unwrap();
    for id in (0..ROWS).filter(|id| id % 3 != 1) {
        assert!(tx.delete(&t, &[Value::UInt(id)]).unwrap());
    }
    tx.commit().unwrap();
    db.purge().unwrap();
    let want = all_rows(&t);
    assert_eq!(want.len() as u64, ROWS / 3);
    // A transaction still open when the copy starts is not in it.
    let mut open = db.begin().unwrap();
    open.insert(&t, &row(ROWS + 1)).unwrap();

    let report = db.compact_into(&dest).unwrap();
    assert_eq!((report.tables, report.rows), (2, ROWS / 3));
    // The database goes on; its open transaction commits.
    open.commit().unwrap();
    assert_eq!(all_rows(&t).len() as u64, ROWS / 3 + 1);
    // A second copy into a directory that is not empty is refused, and writes nothing there.
    assert!(matches!(
        db.compact_into(&dest),
        Err(Error::Directory { .. })
    ));
    drop(t);
    db.close().unwrap();

    let copy = Database::open(&dest, config()).unwrap();
    let report = copy.check().unwrap();
    assert_eq!(report.rows["t"], ROWS / 3);
    assert_eq!(report.rows["empty"], 0);
    let t = copy.table("t").unwrap();
    assert_eq!(all_rows(&t), want);
    assert_eq!(copy.table_def("t").unwrap(), table_def());
    // The unique index came along: a duplicate `u` is refused in the copy too.
    let mut dup = row(ROWS + 2);
    dup[2] = Value::Bytes(1u64.to_be_bytes().to_vec());
    assert!(matches!(t.insert(&dup), Err(Error::DuplicateKey { .. })));
    drop(t);
    copy.close().unwrap();
    let (before, after) = (file_len(&src, "ibdata1"), file_len(&dest, "ibdata1"));
    assert!(
        after < before,
        "the copy's ibdata1 is {after} bytes, the original's {before}"
    );
}
