//! Lab 5's graded tests for `version_of` (docs/labs/05-mvcc.md): rebuilding the older version
//! of a row from the undo record that holds it. Each test builds a table's metadata and
//! clustered layout the way the engine does, encodes an undo record's fields with that layout,
//! and checks the values `version_of` gives back: the old columns in the clustered record's
//! order, with the old `DB_TRX_ID` and `DB_ROLL_PTR` in the hidden places, NULLs kept, and a
//! typed error (never a panic) for a record that does not fit the table. In a lab 5 starter
//! workspace every one of them fails. (The same rebuild seen through snapshots of a real
//! database is `crates/minnow/tests/snapshot_versions.rs`.)

use minnow_btree::record::{ColumnType, RecordLayout, Value};
use minnow_engine::history::{version_before, version_of};
use minnow_engine::schema::TableMeta;
use minnow_engine::{ColumnDef, Error, TableDef};
use minnow_mvcc::{RollPtr, UndoKind, UndoRecord};

/// `acct(id, owner, balance, note NULL)`, clustered on `id`: its metadata and the clustered
/// record's layout (`id`, `DB_TRX_ID`, `DB_ROLL_PTR`, `owner`, `balance`, `note`).
fn acct() -> (TableMeta, RecordLayout) {
    let meta = TableMeta::resolve(
        TableDef::new("acct")
            .column(ColumnDef::new("id", ColumnType::U64))
            .column(ColumnDef::new("owner", ColumnType::Var(16)))
            .column(ColumnDef::new("balance", ColumnType::I64))
            .column(ColumnDef::nullable("note", ColumnType::Var(16)))
            .primary_key(&["id"]),
    )
    .unwrap();
    let layout = meta.clustered_layout().unwrap();
    (meta, layout)
}

/// The clustered values of a version of `acct`, with its system columns.
fn version(
    id: u64,
    owner: &str,
    balance: i64,
    note: Option<&str>,
    trx: u64,
    roll: u64,
) -> Vec<Value> {
    vec![
        Value::UInt(id),
        Value::trx_id(trx),
        Value::roll_ptr(roll),
        Value::from(owner),
        Value::Int(balance),
        note.map_or(Value::Null, Value::from),
    ]
}

/// An undo record of `kind` holding `old` (a version as [`version`] builds it): every field
/// but the two hidden ones, encoded with `layout`; its old `DB_TRX_ID` and `DB_ROLL_PTR` are
/// the version's.
fn undo_of(
    layout: &RecordLayout,
    kind: UndoKind,
    old: &[Value],
    trx: u64,
    roll: u64,
) -> UndoRecord {
    let fields = old
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != 1 && i != 2)
        .map(|(i, v)| layout.encode_field(i, v).unwrap())
        .collect();
    UndoRecord {
        kind,
        old_deleted: false,
        undo_no: 7,
        index_id: 42,
        old_trx_id: trx,
        old_roll_ptr: RollPtr::from_u64(roll),
        prev: None,
        fields,
    }
}

#[test]
fn an_update_record_gives_back_the_old_values_and_system_columns() {
    let (meta, layout) = acct();
    let old = version(1, "ada", 100, Some("first"), 0x1234, 0x00ab_cdef_0102);
    let rec = undo_of(&layout, UndoKind::Update, &old, 0x1234, 0x00ab_cdef_0102);
    assert_eq!(version_of(&meta, &layout, &rec).unwrap(), old);
}

#[test]
fn the_hidden_columns_come_from_the_record_header_not_the_fields() {
    let (meta, layout) = acct();
    // Two versions with the same columns and different writers: only the header differs.
    for (trx, roll) in [(5, 0), (u64::from(u32::MAX) + 9, RollPtr::NONE.to_u64())] {
        let old = version(2, "bob", -3, None, trx, roll);
        let rec = undo_of(&layout, UndoKind::Update, &old, trx, roll);
        let got = version_of(&meta, &layout, &rec).unwrap();
        assert_eq!(
            got.get(1),
            Some(&Value::trx_id(trx)),
            "DB_TRX_ID of trx {trx}"
        );
        assert_eq!(
            got.get(2),
            Some(&Value::roll_ptr(roll)),
            "DB_ROLL_PTR of trx {trx}"
        );
        assert_eq!(got, old);
    }
}

#[test]
fn a_null_field_stays_null() {
    let (meta, layout) = acct();
    let old = version(3, "cy", 0, None, 9, 77);
    let rec = undo_of(&layout, UndoKind::Update, &old, 9, 77);
    assert_eq!(
        rec.fields.last(),
        Some(&None),
        "the test's record holds a NULL"
    );
    let got = version_of(&meta, &layout, &rec).unwrap();
    assert_eq!(got.last(), Some(&Value::Null));
    assert_eq!(got, old);
}

#[test]
fn a_delete_mark_record_rebuilds_the_row_it_marked() {
    let (meta, layout) = acct();
    let old = version(4, "di", 250, Some("closed"), 31, 4096);
    let rec = undo_of(&layout, UndoKind::DeleteMark, &old, 31, 4096);
    assert_eq!(version_of(&meta, &layout, &rec).unwrap(), old);
}

#[test]
fn a_record_that_does_not_fit_the_table_is_a_typed_error() {
    let (meta, layout) = acct();
    let old = version(5, "eve", 1, None, 3, 8);
    // One field too few: the record is from another table or torn.
    let mut short = undo_of(&layout, UndoKind::Update, &old, 3, 8);
    short.fields.pop();
    match version_of(&meta, &layout, &short) {
        Err(Error::Corrupt { what }) => {
            assert!(what.contains("acct") && what.contains("fields"), "{what}")
        }
        other => panic!("a short undo record gave {other:?}"),
    }
    // A U64 field of three bytes does not decode.
    let mut bad = undo_of(&layout, UndoKind::Update, &old, 3, 8);
    bad.fields[0] = Some(vec![1, 2, 3]);
    match version_of(&meta, &layout, &bad) {
        Err(Error::Corrupt { what }) => assert!(what.contains("acct"), "{what}"),
        other => panic!("an undecodable field gave {other:?}"),
    }
}

// Beyond the lab: `version_before`, the step the engine takes, which also reads the
// delete-mark records minnow writes now (the key alone: a delete-mark changes no field).

/// A key-only delete-mark record gives the newer version's fields with its own old system
/// columns; a whole one (written by an older build) gives what `version_of` gives, whatever
/// the newer version says; a key-only record with a newer version of another shape is a
/// typed error.
#[test]
fn a_key_only_delete_mark_record_takes_the_fields_from_the_newer_version() {
    let (meta, layout) = acct();
    let old = version(6, "fay", 70, Some("x"), 12, 1 << 20);
    // The delete: same fields, the deleting transaction's system columns.
    let newer = version(6, "fay", 70, Some("x"), 40, 2 << 20);
    let whole = undo_of(&layout, UndoKind::DeleteMark, &old, 12, 1 << 20);
    let key_only = UndoRecord {
        fields: whole.fields[..1].to_vec(),
        ..whole.clone()
    };
    assert_eq!(
        version_before(&meta, &layout, &key_only, &newer).unwrap(),
        old
    );
    assert_eq!(version_before(&meta, &layout, &whole, &newer).unwrap(), old);
    assert_eq!(version_before(&meta, &layout, &whole, &[]).unwrap(), old);
    match version_before(&meta, &layout, &key_only, &newer[..3]) {
        Err(Error::Corrupt { what }) => assert!(what.contains("fields"), "{what}"),
        other => panic!("{other:?}"),
    }
    // An update record is never read as key-only.
    let update = UndoRecord {
        kind: UndoKind::Update,
        ..key_only
    };
    assert!(matches!(
        version_before(&meta, &layout, &update, &newer),
        Err(Error::Corrupt { .. })
    ));
}
