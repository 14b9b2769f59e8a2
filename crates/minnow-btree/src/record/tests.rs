use super::*;
use std::cmp::Ordering;

fn layout() -> RecordLayout {
    RecordLayout::clustered(
        vec![Column::new(ColumnType::I32)],
        vec![
            Column::nullable(ColumnType::Var(300)),
            Column::nullable(ColumnType::U16),
            Column::new(ColumnType::Fixed(3)),
        ],
    )
    .unwrap()
}

#[test]
fn signed_ints_sort_as_bytes() {
    let l = layout();
    let vals = [i64::from(i32::MIN), -1, 0, 1, i64::from(i32::MAX)];
    let enc: Vec<_> = vals
        .iter()
        .map(|&v| l.encode_field(0, &Value::Int(v)).unwrap().unwrap())
        .collect();
    assert_eq!(enc[1], vec![0x7f, 0xff, 0xff, 0xff]);
    assert_eq!(enc[2], vec![0x80, 0, 0, 0]);
    assert!(enc.windows(2).all(|w| w[0] < w[1]));
    assert!(l.encode_field(0, &Value::Int(1 << 40)).is_err());
}

#[test]
fn encode_decode_round_trip_with_long_var_and_nulls() {
    let l = layout();
    let vals = vec![
        Value::Int(-7),
        Value::trx_id(0x0102_0304_0506),
        Value::roll_ptr(1 << 55),
        Value::Bytes(vec![b'x'; 200]),
        Value::Null,
        Value::Bytes(b"abc".to_vec()),
    ];
    let rec = l.encode(&vals).unwrap();
    // 2 length bytes (200 >= 128), 1 null byte, 5 header bytes.
    assert_eq!(rec.extra(), 8);
    assert_eq!(rec.as_bytes()[..3], [200, 0x80, 0b10]);
    assert_eq!(rec.len(), 8 + 4 + 6 + 7 + 200 + 3);
    let decoded = l.decode(rec.as_bytes(), rec.extra()).unwrap();
    assert_eq!(decoded, vals);
    assert_eq!(
        l.size_of(rec.as_bytes(), rec.extra()).unwrap(),
        (8, rec.len() - 8)
    );
}

#[test]
fn header_round_trip() {
    let h = RecordHeader {
        info_bits: INFO_DELETED,
        n_owned: 5,
        heap_no: 0x1ABC,
        status: RecStatus::Supremum,
        next_rel: 0xFFF3,
    };
    assert_eq!(RecordHeader::from_bytes(h.to_bytes()), h);
    assert_eq!(h.next(20), Some(7));
    // The infimum of a fresh COMPACT page: 01 00 02 00 0d.
    let inf = RecordHeader::from_bytes([0x01, 0x00, 0x02, 0x00, 0x0d]);
    assert_eq!((inf.n_owned, inf.heap_no), (1, 0));
    assert_eq!(inf.status, RecStatus::Infimum);
    assert_eq!(inf.next(99), Some(112));
}

#[test]
fn compare_counts_matched_fields() {
    let l = RecordLayout::secondary(vec![
        Column::nullable(ColumnType::Var(10)),
        Column::new(ColumnType::U8),
    ])
    .unwrap();
    let rec = l
        .encode(&[Value::Bytes(b"ab".to_vec()), Value::UInt(5)])
        .unwrap();
    let (page, o) = (rec.as_bytes(), rec.extra());
    let k = |a: Value, b: Value| l.search_key(&[a, b]).unwrap();
    let bytes = |s: &[u8]| Value::Bytes(s.to_vec());
    assert_eq!(
        l.compare(&k(bytes(b"ab"), Value::UInt(5)), page, o, 0)
            .unwrap(),
        (Ordering::Equal, 2)
    );
    assert_eq!(
        l.compare(&k(bytes(b"ab"), Value::UInt(4)), page, o, 0)
            .unwrap(),
        (Ordering::Less, 1)
    );
    assert_eq!(
        l.compare(&k(bytes(b"abc"), Value::UInt(0)), page, o, 0)
            .unwrap(),
        (Ordering::Greater, 0)
    );
    assert_eq!(
        l.compare(&k(Value::Null, Value::UInt(9)), page, o, 0)
            .unwrap(),
        (Ordering::Less, 0)
    );
    let prefix = l.search_key(&[bytes(b"ab")]).unwrap();
    assert_eq!(
        l.compare(&prefix, page, o, 0).unwrap(),
        (Ordering::Equal, 1)
    );
}

#[test]
fn garbage_is_an_error() {
    let l = layout();
    let page = [0xFFu8; 64];
    assert!(l.decode(&page, 3).is_err());
    assert!(l.decode(&page, 50).is_err()); // data runs off the end
    assert!(l.size_of(&page, 200).is_err());
    assert!(RecordHeader::read(&page, 2).is_err());
}

mod flat_key {
    use super::*;
    use proptest::prelude::*;

    /// Layouts with fixed-width keys: clustered ones whose key fits a word (3 bytes) or does
    /// not (11 bytes), and a secondary one that is all key (3 bytes).
    fn layouts() -> [RecordLayout; 3] {
        let make = |key: &[ColumnType]| {
            let key: Vec<Column> = key.iter().map(|&t| Column::new(t)).collect();
            RecordLayout::clustered(key, vec![Column::new(ColumnType::Var(20))]).unwrap()
        };
        [
            make(&[ColumnType::U8, ColumnType::U16]),
            make(&[ColumnType::U16, ColumnType::Fixed(5), ColumnType::U32]),
            // Only 3 data bytes: with little tail, fewer than 8 bytes follow the origin.
            RecordLayout::secondary(vec![
                Column::new(ColumnType::U8),
                Column::new(ColumnType::U16),
            ])
            .unwrap(),
        ]
    }

    fn value(ty: ColumnType, x: u64) -> Value {
        match ty {
            ColumnType::Fixed(n) => {
                Value::Bytes((0..n).map(|i| (x >> (i % 8)) as u8 & 3).collect())
            }
            ColumnType::U8 => Value::UInt(x % 4),
            ColumnType::U16 => Value::UInt(x % 5),
            _ => Value::UInt(x % 3),
        }
    }

    proptest! {
        /// The flattened comparison agrees with the field-by-field one, for every key prefix,
        /// also when the record ends within 8 bytes of the page end.
        #[test]
        fn flat_compare_agrees_with_compare(
            which in 0usize..3,
            rec_seed in any::<u64>(),
            key_seed in any::<u64>(),
            tail in 0usize..12,
        ) {
            let l = &layouts()[which];
            let n_key = l.n_key();
            let mut values: Vec<Value> = l.fields()[..n_key]
                .iter()
                .enumerate()
                .map(|(i, c)| value(c.ty, rec_seed.rotate_left(7 * i as u32)))
                .collect();
            if l.trx_id_field().is_some() {
                values.push(Value::trx_id(7));
                values.push(Value::roll_ptr(9));
                values.push(Value::Bytes(b"v".to_vec()));
            }
            let rec = l.encode(&values).unwrap();
            // The record at the end of a buffer, `tail` bytes of padding after it.
            let origin = 16 + rec.extra;
            let mut page = vec![0u8; 16];
            page.extend_from_slice(&rec.bytes);
            page.extend(std::iter::repeat_n(0xEE, tail));
            for prefix in 0..=n_key {
                let kv: Vec<Value> = l.fields()[..prefix]
                    .iter()
                    .enumerate()
                    .map(|(i, c)| value(c.ty, key_seed.rotate_left(7 * i as u32)))
                    .collect();
                let key = l.search_key(&kv).unwrap();
                let flat = l.flat_key(&key).expect("fixed-width key");
                prop_assert_eq!(
                    flat.compare(&page, origin).unwrap(),
                    l.compare(&key, &page, origin, 0).unwrap()
                );
            }
        }
    }

    #[test]
    fn keys_with_variable_or_nullable_fields_are_not_flattened() {
        let l = layout(); // key: I32, then the fixed trx id (not a key field)
        let key = l.search_key(&[Value::Int(1)]).unwrap();
        assert!(l.flat_key(&key).is_some());
        let var = RecordLayout::secondary(vec![Column::new(ColumnType::Var(9))]).unwrap();
        let key = var.search_key(&[Value::Bytes(b"a".to_vec())]).unwrap();
        assert!(var.flat_key(&key).is_none());
        let null = RecordLayout::secondary(vec![Column::nullable(ColumnType::U8)]).unwrap();
        let key = null.search_key(&[Value::UInt(1)]).unwrap();
        assert!(null.flat_key(&key).is_none());
    }
}
