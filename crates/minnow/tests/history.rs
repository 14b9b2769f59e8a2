//! `Table::history`: the version chain of a row, newest first, as the undo store describes it.

use minnow::history::UndoKind;
use minnow::{ChainEnd, ColumnDef, ColumnType, Config, Database, TableDef, Value, Writer};

fn def() -> TableDef {
    TableDef::new("acct")
        .column(ColumnDef::new("id", ColumnType::U64))
        .column(ColumnDef::new("owner", ColumnType::Var(16)))
        .column(ColumnDef::new("balance", ColumnType::I64))
        .primary_key(&["id"])
}

/// No background purge: with no read view open it may remove a delete-marked row and the undo
/// of committed changes before `history` reads them (seen failing about one run in five).
fn config() -> Config {
    Config {
        purge_threads: 0,
        ..Config::default()
    }
}

fn row(id: u64, owner: &str, bal: i64) -> Vec<Value> {
    vec![Value::UInt(id), Value::text(owner), Value::Int(bal)]
}

#[test]
fn updates_and_a_delete_leave_a_chain_back_to_the_insert() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config()).unwrap();
    let t = db.create_table(def()).unwrap();
    t.insert(&row(1, "ada", 100)).unwrap();
    t.update(&row(1, "ada", 80)).unwrap();
    t.update(&row(1, "bob", 70)).unwrap();
    t.delete(&[Value::UInt(1)]).unwrap();

    let h = t.history(&[Value::UInt(1)]).unwrap().unwrap();
    assert_eq!(h.table, "acct");
    assert_eq!(h.key, [Value::UInt(1)]);
    let shape: Vec<_> = h
        .versions
        .iter()
        .map(|v| (v.values.clone(), v.deleted, v.undo, v.writer))
        .collect();
    assert_eq!(
        shape,
        [
            (
                row(1, "bob", 70),
                true,
                Some(UndoKind::DeleteMark),
                Writer::Committed
            ),
            (
                row(1, "bob", 70),
                false,
                Some(UndoKind::Update),
                Writer::Committed
            ),
            (
                row(1, "ada", 80),
                false,
                Some(UndoKind::Update),
                Writer::Committed
            ),
            (
                row(1, "ada", 100),
                false,
                Some(UndoKind::Insert),
                Writer::Committed
            ),
        ]
    );
    // Each statement was its own transaction, newer ones with larger ids.
    let ids: Vec<u64> = h.versions.iter().map(|v| v.trx_id).collect();
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "{ids:?}");
    assert_eq!(h.end, ChainEnd::Inserted { trx_id: ids[3] });
    // Roll pointers: only the oldest version's names an insert undo record.
    assert!(h.versions[3].roll_ptr.insert && h.versions[3].roll_ptr.has_undo());
    assert!(h.versions[..3].iter().all(|v| !v.roll_ptr.insert));
    // No such key: no chain.
    assert!(t.history(&[Value::UInt(2)]).unwrap().is_none());
    // A wrongly typed key is an error, not a panic.
    assert!(t.history(&[Value::text("x")]).is_err());
    db.close().unwrap();
}

#[test]
fn an_active_writer_is_on_top_and_a_reader_sees_the_version_below() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config()).unwrap();
    let t = db.create_table(def()).unwrap();
    t.insert(&row(1, "ada", 100)).unwrap();
    let reader = db.begin().unwrap();
    assert!(reader.get(&t, &[Value::UInt(1)]).unwrap().is_some()); // takes the view
    let mut tx = db.begin().unwrap();
    tx.update(&t, &row(1, "ada", 50)).unwrap();

    let h = t.history(&[Value::UInt(1)]).unwrap().unwrap();
    assert_eq!(h.versions.len(), 2);
    assert_eq!(h.versions[0].writer, Writer::Active);
    assert_eq!(h.versions[0].trx_id, tx.id());
    assert_eq!(h.versions[0].values, row(1, "ada", 50));
    assert_eq!(h.versions[1].writer, Writer::Committed);
    // The reader's view was taken before the writer began: it sees the version below.
    let view = reader.read_view().unwrap();
    assert!(view.low_limit() <= tx.id());
    assert_eq!(h.seen_by(&view), Some(1));
    // The writer's own view sees its own version.
    let mine = tx.read_view().unwrap();
    assert_eq!(mine.creator(), tx.id());
    assert_eq!(h.seen_by(&mine), Some(0));
    tx.rollback().unwrap();

    let h = t.history(&[Value::UInt(1)]).unwrap().unwrap();
    assert_eq!(h.versions.len(), 1, "the rollback removed the version");
    assert_eq!(h.versions[0].values, row(1, "ada", 100));
    drop(reader);
    db.close().unwrap();
}

#[test]
fn a_bulk_loaded_row_has_no_undo() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config()).unwrap();
    let t = db.create_table(def()).unwrap();
    t.load([row(1, "ada", 1), row(2, "bob", 2)]).unwrap();
    let h = t.history(&[Value::UInt(2)]).unwrap().unwrap();
    assert_eq!(h.versions.len(), 1);
    assert_eq!(h.versions[0].trx_id, 0);
    assert_eq!(h.versions[0].undo, None);
    assert_eq!(h.end, ChainEnd::NoUndo);
    t.update(&row(2, "bob", 3)).unwrap();
    let h = t.history(&[Value::UInt(2)]).unwrap().unwrap();
    assert_eq!(h.versions.len(), 2);
    assert_eq!(h.versions[1].values, row(2, "bob", 2));
    assert_eq!(h.end, ChainEnd::NoUndo);
    db.close().unwrap();
}
