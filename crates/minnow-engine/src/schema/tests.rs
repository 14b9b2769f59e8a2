//! Definitions checked, and the dictionary encoding round-tripped.

use super::encoding::COMPRESSION_TAG;
use super::*;

fn def() -> TableDef {
    TableDef::new("t")
        .column(ColumnDef::new("id", ColumnType::U64))
        .column(ColumnDef::nullable("v", ColumnType::Var(10)))
        .column(ColumnDef::new("k", ColumnType::I32))
        .primary_key(&["id"])
        .index(IndexDef::unique("by_k", &["k"]))
}

#[test]
fn decode_table_indexes_lists_every_index_clustered_first() {
    let mut m = TableMeta::resolve(def()).unwrap();
    m.index_id = 7;
    m.root = 3;
    m.secondary[0].index_id = 8;
    m.secondary[0].root = 4;
    let (d, ix) = decode_table_indexes("t", &encode(&m)).unwrap();
    assert_eq!(d.name, "t");
    assert_eq!(ix.len(), 2);
    assert_eq!(
        (ix[0].name.as_str(), ix[0].index_id, ix[0].root),
        (PRIMARY, 7, 3)
    );
    assert_eq!(ix[0].key_columns, ["id"]);
    assert_eq!(
        (ix[1].name.as_str(), ix[1].index_id, ix[1].root),
        ("by_k", 8, 4)
    );
    assert_eq!(ix[1].key_columns, ["k", "id"]);
    assert!(decode_table_indexes("t", &[1, 2, 3]).is_err());
}

#[test]
fn dictionary_record_round_trips_and_rejects_damage() {
    let mut m = TableMeta::resolve(def()).unwrap();
    m.index_id = 7;
    m.root = 3;
    m.secondary[0].index_id = 8;
    m.secondary[0].root = 4;
    let b = encode(&m);
    let back = decode("t", &b).unwrap();
    assert_eq!(back.def, m.def);
    assert_eq!((back.index_id, back.root), (7, 3));
    assert_eq!((back.secondary[0].index_id, back.secondary[0].root), (8, 4));
    for cut in 0..b.len() {
        assert!(decode("t", &b[..cut]).is_err(), "prefix {cut} accepted");
    }
    let mut bad = b.clone();
    bad[0] = 9;
    assert!(matches!(decode("t", &bad), Err(Error::Corrupt { .. })));
}

#[test]
fn auto_increment_flag_round_trips_in_the_flags_byte() {
    let mut d = def();
    d.columns[0] = d.columns[0].clone().auto_increment();
    let m = TableMeta::resolve(d).unwrap();
    let b = encode(&m);
    // version, index id, root, column count, then column `id`: name, type, length, flags.
    let flags_at = 1 + 8 + 4 + 2 + 1 + 2 + 1 + 2;
    assert_eq!(b[flags_at], 0b10);
    let back = decode("t", &b).unwrap();
    assert_eq!(back.def, m.def);
    assert_eq!(back.auto_increment_column(), Some(0));
    let mut bad = b.clone();
    bad[flags_at] = 0b100;
    assert!(matches!(decode("t", &bad), Err(Error::Corrupt { .. })));
    // Records written before the flag existed (0 or 1) decode as they did.
    assert!(
        !decode("t", &encode(&TableMeta::resolve(def()).unwrap()))
            .unwrap()
            .def
            .columns
            .iter()
            .any(|c| c.auto_increment)
    );
}

#[test]
fn compression_trailer_round_trips_and_old_records_decode_uncompressed() {
    use minnow_zip::KeyBlockSize;
    let plain = encode(&TableMeta::resolve(def()).unwrap());
    let c = Compression::lz4(KeyBlockSize::K4);
    let m = TableMeta::resolve(def().compressed(c)).unwrap();
    let b = encode(&m);
    // The trailer is appended: a record without it is exactly the old encoding.
    assert_eq!(&b[..plain.len()], &plain[..]);
    assert_eq!(&b[plain.len()..], &[COMPRESSION_TAG, 3, 2, 0]);
    assert_eq!(decode("t", &b).unwrap().def.compression, Some(c));
    assert_eq!(decode("t", &b).unwrap().space_id(), c.space_id());
    assert_eq!(decode("t", &plain).unwrap().def.compression, None);
    assert_eq!(decode("t", &plain).unwrap().space_id(), 0);
    for damage in [
        vec![COMPRESSION_TAG + 1, 3, 2, 0],
        vec![COMPRESSION_TAG, 9, 2, 0],
        vec![COMPRESSION_TAG, 3, 1, 0],
        vec![COMPRESSION_TAG, 3, 2, 0, 0],
        // 16 KiB blocks are refused by the definition's own checks.
        vec![COMPRESSION_TAG, 5, 2, 0],
    ] {
        let bad = [&plain[..], &damage].concat();
        assert!(
            matches!(decode("t", &bad), Err(Error::Corrupt { .. })),
            "{damage:?}"
        );
    }
    assert!(matches!(
        TableMeta::resolve(def().compressed(Compression::lz4(KeyBlockSize::K16))),
        Err(Error::BadDefinition { .. })
    ));
}

#[test]
fn definitions_are_validated() {
    let nullable_pk = TableDef::new("t")
        .column(ColumnDef::nullable("id", ColumnType::U64))
        .primary_key(&["id"]);
    assert!(matches!(
        TableMeta::resolve(nullable_pk),
        Err(Error::BadDefinition { .. })
    ));
    let unknown = def().index(IndexDef::new("x", &["nope"]));
    assert!(matches!(
        TableMeta::resolve(unknown),
        Err(Error::BadDefinition { .. })
    ));
    let dup = def().index(IndexDef::new("by_k", &["v"]));
    assert!(TableMeta::resolve(dup).is_err());
    let m = TableMeta::resolve(def()).unwrap();
    assert_eq!(m.normalise(2, &Value::UInt(5)).unwrap(), Value::Int(5));
    assert!(m.normalise(2, &Value::Int(i64::MAX)).is_err());
    assert!(m.normalise(0, &Value::Null).is_err());
    assert!(m.normalise(1, &Value::Bytes(vec![0; 11])).is_err());
    assert_eq!(m.normalise(1, &Value::Null).unwrap(), Value::Null);
}
