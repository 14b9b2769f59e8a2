//! A transactional insert searches the clustered index once: the same descent answers the
//! duplicate check and names the gap the record enters (the insert intention check), and the
//! insert goes to the leaf it found without walking down again. Counted with
//! `minnow_btree::tree::descents`, which counts every walk from a root on the calling thread.

use minnow::{ColumnDef, ColumnType, Config, Database, Error, Table, TableDef, Value};
use minnow_btree::tree::descents;

/// Rows 0, 2, .., 3998 of `t(k U64 PRIMARY KEY, v I64)`, loaded in a scrambled order so the
/// leaves are part full (about 400 small rows fit a leaf: the inserts below never split one).
fn setup() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        purge_threads: 0,
        ..Config::default()
    };
    let db = Database::create(dir.path(), config).unwrap();
    let t = db
        .create_table(
            TableDef::new("t")
                .column(ColumnDef::new("k", ColumnType::U64))
                .column(ColumnDef::new("v", ColumnType::I64))
                .primary_key(&["k"]),
        )
        .unwrap();
    for i in 0..2000u64 {
        let k = 2 * ((i * 7919) % 2000);
        t.insert(&[Value::UInt(k), Value::Int(0)]).unwrap();
    }
    (dir, db)
}

fn row(k: u64, v: i64) -> Vec<Value> {
    vec![Value::UInt(k), Value::Int(v)]
}

fn value_of(t: &Table, k: u64) -> Option<Vec<Value>> {
    t.get(&[Value::UInt(k)]).unwrap()
}

#[test]
fn an_insert_descends_once() {
    let (_dir, db) = setup();
    let t = db.table("t").unwrap();
    let mut tx = db.begin().unwrap();
    // The first write gives the transaction its id and undo log: not counted.
    tx.insert(&t, &row(1, 1)).unwrap();
    for k in (41..4000).step_by(40) {
        let before = descents();
        tx.insert(&t, &row(k, 1)).unwrap();
        assert_eq!(descents() - before, 1, "insert of {k}");
    }
    // A duplicate is found by the same single descent.
    let before = descents();
    assert!(matches!(
        tx.insert(&t, &row(40, 1)),
        Err(Error::DuplicateKey { .. })
    ));
    assert_eq!(descents() - before, 1);
    tx.commit().unwrap();
    for k in (41..4000).step_by(40) {
        assert_eq!(value_of(&t, k), Some(row(k, 1)));
    }
}

#[test]
fn inserts_over_delete_marked_rows_still_work() {
    let (_dir, db) = setup();
    let t = db.table("t").unwrap();
    // Deleted by a committed transaction, purge not run: the record is still there.
    let mut tx = db.begin().unwrap();
    assert!(tx.delete(&t, &[Value::UInt(100)]).unwrap());
    tx.commit().unwrap();
    let mut tx = db.begin().unwrap();
    tx.insert(&t, &row(100, 7)).unwrap();
    // Deleted by this transaction itself, then inserted again.
    assert!(tx.delete(&t, &[Value::UInt(200)]).unwrap());
    tx.insert(&t, &row(200, 8)).unwrap();
    assert!(matches!(
        tx.insert(&t, &row(200, 9)),
        Err(Error::DuplicateKey { .. })
    ));
    tx.commit().unwrap();
    assert_eq!(value_of(&t, 100), Some(row(100, 7)));
    assert_eq!(value_of(&t, 200), Some(row(200, 8)));
    // A rollback of the insert over the delete-marked row brings the deletion back.
    let mut tx = db.begin().unwrap();
    assert!(tx.delete(&t, &[Value::UInt(300)]).unwrap());
    tx.insert(&t, &row(300, 5)).unwrap();
    tx.rollback().unwrap();
    assert_eq!(value_of(&t, 300), Some(row(300, 0)));
    db.check().unwrap();
}
