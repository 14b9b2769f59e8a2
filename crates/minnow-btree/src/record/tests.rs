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

mod types_order {
    use super::super::types::{decode_double, encode_double};
    use super::*;
    use proptest::prelude::*;

    fn enc(ty: ColumnType, v: &Value) -> Vec<u8> {
        let l = RecordLayout::secondary(vec![Column::new(ty)]).unwrap();
        l.encode_field(0, v).unwrap().unwrap()
    }

    fn round_trip(ty: ColumnType, v: &Value) -> Value {
        let l = RecordLayout::secondary(vec![Column::new(ty)]).unwrap();
        let rec = l.encode(std::slice::from_ref(v)).unwrap();
        l.decode(rec.as_bytes(), rec.extra()).unwrap().remove(0)
    }

    fn any_date() -> impl Strategy<Value = Date> {
        (0u16..=9999, 1u8..=12, 1u8..=31)
            .prop_map(|(y, m, d)| Date::new(y, m, d.min(types::days_in_month(y, m))).unwrap())
    }

    fn any_datetime() -> impl Strategy<Value = DateTime> {
        (any_date(), 0u8..24, 0u8..60, 0u8..60, 0u32..1_000_000)
            .prop_map(|(d, h, m, s, us)| DateTime::new(d, h, m, s, us).unwrap())
    }

    fn any_double() -> impl Strategy<Value = f64> {
        prop_oneof![
            any::<f64>().prop_filter("not NaN", |x| !x.is_nan()),
            Just(0.0),
            Just(-0.0),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(f64::MIN_POSITIVE),
            Just(-f64::MIN_POSITIVE),
            Just(f64::MAX),
            Just(f64::MIN),
        ]
    }

    proptest! {
        #[test]
        fn double_byte_order_is_value_order(a in any_double(), b in any_double()) {
            let (ea, eb) = (encode_double(a).unwrap(), encode_double(b).unwrap());
            prop_assert_eq!(ea.cmp(&eb), a.partial_cmp(&b).unwrap());
            let back = decode_double(ea);
            prop_assert_eq!(back, a);
            prop_assert!(back.to_bits() == a.to_bits() || a == 0.0);
            let v = round_trip(ColumnType::Double, &Value::Double(a));
            prop_assert_eq!(v, Value::Double(if a == 0.0 { 0.0 } else { a }));
        }

        #[test]
        fn date_byte_order_is_value_order(a in any_date(), b in any_date()) {
            let (ea, eb) = (enc(ColumnType::Date, &Value::Date(a)), enc(ColumnType::Date, &Value::Date(b)));
            prop_assert_eq!(ea.cmp(&eb), a.cmp(&b));
            prop_assert_eq!(round_trip(ColumnType::Date, &Value::Date(a)), Value::Date(a));
        }

        #[test]
        fn datetime_byte_order_is_value_order(a in any_datetime(), b in any_datetime()) {
            let ea = enc(ColumnType::DateTime, &Value::DateTime(a));
            let eb = enc(ColumnType::DateTime, &Value::DateTime(b));
            prop_assert_eq!(ea.cmp(&eb), a.cmp(&b));
            prop_assert_eq!(round_trip(ColumnType::DateTime, &Value::DateTime(a)), Value::DateTime(a));
        }

        #[test]
        fn stored_date_bytes_never_panic(b in any::<[u8; 8]>()) {
            let _ = decode_value(ColumnType::DateTime, &b);
            let _ = decode_value(ColumnType::Date, &b[..3]);
            let _ = decode_value(ColumnType::Double, &b);
        }
    }

    #[test]
    fn an_integer_of_the_wrong_width_does_not_decode() {
        // Stored bytes come from pages and undo records: a torn or foreign field must be an
        // error, not another number (or, for an empty signed field, a shift overflow).
        for (ty, width) in [
            (ColumnType::U8, 1),
            (ColumnType::I16, 2),
            (ColumnType::U32, 4),
            (ColumnType::I64, 8),
            (ColumnType::U64, 8),
        ] {
            assert!(decode_value(ty, &vec![0x80; width]).is_ok(), "{ty:?}");
            for wrong in [0, width - 1, width + 1, 9] {
                if wrong != width {
                    assert!(
                        decode_value(ty, &vec![0x80; wrong]).is_err(),
                        "{ty:?} of {wrong} bytes"
                    );
                }
            }
        }
    }

    #[test]
    fn extremes_and_bad_values() {
        assert_eq!(encode_double(-0.0).unwrap(), encode_double(0.0).unwrap());
        assert_eq!(encode_double(0.0).unwrap(), [0x80, 0, 0, 0, 0, 0, 0, 0]);
        assert!(encode_double(f64::NAN).is_err());
        assert!(Date::new(2023, 2, 29).is_err());
        assert!(Date::new(2024, 2, 29).is_ok());
        assert!(Date::new(1900, 2, 29).is_err());
        assert!(Date::new(10000, 1, 1).is_err());
        assert!(Date::new(2024, 13, 1).is_err());
        assert!(Date::new(2024, 4, 31).is_err());
        assert!(DateTime::new(Date::MAX, 24, 0, 0, 0).is_err());
        assert!(DateTime::new(Date::MAX, 0, 0, 0, 1_000_000).is_err());
        assert!(
            enc(ColumnType::Date, &Value::Date(Date::MIN))
                < enc(ColumnType::Date, &Value::Date(Date::MAX))
        );
        assert_eq!(Date::MAX.encode(), [0x4e, 0x1f, 0x9f]);
        assert_eq!(
            DateTime::from_packed(DateTime::MAX.packed()).unwrap(),
            DateTime::MAX
        );
        assert_eq!(DateTime::MIN.to_string(), "0000-01-01 00:00:00.000000");
        // A stored DATE with month 13 is a typed error, not a panic.
        let l = RecordLayout::secondary(vec![Column::new(ColumnType::Date)]).unwrap();
        let mut rec = l.encode(&[Value::Date(Date::MIN)]).unwrap();
        rec.patch(rec.extra(), &[0, 1, 0xA1]);
        assert!(matches!(
            l.decode(rec.as_bytes(), rec.extra()),
            Err(RecordError::BadStored { .. })
        ));
        // TEXT must be UTF-8; kinds must match.
        let t = RecordLayout::clustered(
            vec![Column::new(ColumnType::U8)],
            vec![Column::new(ColumnType::Text)],
        )
        .unwrap();
        assert!(t.encode_field(3, &Value::Bytes(vec![0xC0])).is_err());
        assert!(t.encode_field(3, &Value::text("ok ✓")).is_ok());
        assert!(t.encode_field(0, &Value::Double(1.0)).is_err());
    }

    #[test]
    fn external_marks_are_only_accepted_where_allowed() {
        let l = RecordLayout::clustered(
            vec![Column::new(ColumnType::Var(100))],
            vec![Column::new(ColumnType::Blob)],
        )
        .unwrap();
        let r = [0u8; EXTERN_REF_LEN];
        let trx = [0u8; TRX_ID_LEN];
        let roll = [0u8; ROLL_PTR_LEN];
        let vals = [Some(b"k".as_slice()), Some(&trx), Some(&roll), Some(&r)];
        let rec = l
            .encode_raw_ext(&vals, &[false, false, false, true])
            .unwrap();
        let ext = l.externals(rec.as_bytes(), rec.extra()).unwrap();
        assert_eq!(ext, vec![(3, r.as_slice())]);
        assert!(matches!(
            l.decode(rec.as_bytes(), rec.extra()),
            Err(RecordError::External { field: 3, .. })
        ));
        // Not on a key field, not with a length other than 20.
        assert!(
            l.encode_raw_ext(&vals, &[true, false, false, false])
                .is_err()
        );
        let short = [
            Some(b"k".as_slice()),
            Some(&trx),
            Some(&roll),
            Some(b"abc".as_slice()),
        ];
        assert!(
            l.encode_raw_ext(&short, &[false, false, false, true])
                .is_err()
        );
        // A key field flagged off-page on the page is an error on read.
        let mut bytes = rec.as_bytes().to_vec();
        let first_len = rec.extra() - HEADER_SIZE - 1;
        bytes[first_len] |= 0x80 | LEN_EXTERN;
        assert!(l.key_of(&bytes, rec.extra()).is_err());
    }
}

mod flat_key {
    use super::*;
    use proptest::prelude::*;

    /// Layouts with fixed-width keys: clustered ones whose key fits a word (3 bytes) or does
    /// not (11 bytes; 24 bytes in one field, as the peer comparison's keys; 21 bytes over two
    /// fields, three words and a tail), and a secondary one that is all key (3 bytes).
    fn layouts() -> [RecordLayout; 5] {
        let make = |key: &[ColumnType]| {
            let key: Vec<Column> = key.iter().map(|&t| Column::new(t)).collect();
            RecordLayout::clustered(key, vec![Column::new(ColumnType::Var(20))]).unwrap()
        };
        [
            make(&[ColumnType::U8, ColumnType::U16]),
            make(&[ColumnType::U16, ColumnType::Fixed(5), ColumnType::U32]),
            make(&[ColumnType::Fixed(24)]),
            make(&[ColumnType::Fixed(13), ColumnType::U64]),
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
                Value::Bytes((0..n).map(|i| (x >> (i % 61)) as u8 & 3).collect())
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
            which in 0usize..5,
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

    /// `first_diff` orders byte strings exactly as `a.cmp(b)` does and finds the first
    /// differing byte as a byte-by-byte scan does, over strings of every length up to 40
    /// (whole words, tails, prefixes of each other) from a small alphabet, so that long
    /// equal runs and differences in every byte of a word occur. Fixed seed.
    #[test]
    fn first_diff_agrees_with_bytewise_compare() {
        let mut x = 0x5EED_u64;
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        for _ in 0..20_000 {
            let la = (next() % 41) as usize;
            let lb = if next() % 2 == 0 {
                la
            } else {
                (next() % 41) as usize
            };
            let a: Vec<u8> = (0..la).map(|_| (next() % 3) as u8 * 0x7F).collect();
            let mut b: Vec<u8> = a.iter().copied().take(lb).collect();
            while b.len() < lb {
                b.push((next() % 3) as u8 * 0x7F);
            }
            // Usually equal up to one changed byte.
            if !b.is_empty() && next() % 4 != 0 {
                let i = (next() as usize) % b.len();
                b[i] = (next() % 256) as u8;
            }
            let pos = a
                .iter()
                .zip(&b)
                .position(|(p, q)| p != q)
                .unwrap_or(la.min(lb));
            assert_eq!(
                super::super::key::first_diff(&a, &b),
                (a.cmp(&b), pos),
                "{a:?} vs {b:?}"
            );
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

#[test]
fn max_record_len_is_the_length_of_the_longest_record() {
    let l = RecordLayout::clustered(
        vec![
            Column::new(ColumnType::I64),
            Column::nullable(ColumnType::Var(100)),
        ],
        vec![
            Column::nullable(ColumnType::Var(300)),
            Column::new(ColumnType::Fixed(3)),
        ],
    )
    .unwrap();
    let longest = l
        .encode(&[
            Value::Int(1),
            Value::Bytes(vec![1; 100]),
            Value::trx_id(1),
            Value::roll_ptr(1),
            Value::Bytes(vec![2; 300]),
            Value::Bytes(vec![3; 3]),
        ])
        .unwrap();
    assert_eq!(longest.len(), l.max_record_len());
    let shorter = l
        .encode(&[
            Value::Int(1),
            Value::Null,
            Value::trx_id(1),
            Value::roll_ptr(1),
            Value::Bytes(vec![2; 127]),
            Value::Bytes(vec![3; 3]),
        ])
        .unwrap();
    assert!(shorter.len() < l.max_record_len());
    // The node pointers: both key fields (a one-byte length for the 100-byte one) and the
    // child page number.
    let ptr = l.node_ptr();
    assert_eq!(ptr.max_record_len(), HEADER_SIZE + 1 + 1 + 8 + 100 + 4);
}

#[test]
fn a_search_key_set_from_bytes_is_the_one_set_from_a_value() {
    let rest = vec![Column::new(ColumnType::U16)];
    for ty in [ColumnType::Fixed(3), ColumnType::Var(5)] {
        let l = RecordLayout::clustered(vec![Column::new(ty)], rest.clone()).unwrap();
        let mut from_bytes = SearchKey::default();
        for b in [&b"abc"[..], b"xyz"] {
            from_bytes.set_bytes(&l, b).unwrap();
            let from_value = l.search_key(&[Value::Bytes(b.to_vec())]).unwrap();
            assert_eq!(from_bytes, from_value, "{ty:?}");
        }
        // Bytes the column cannot hold are refused as a value's are, and leave no key.
        let bad: &[u8] = b"abcdef";
        assert!(l.search_key(&[Value::Bytes(bad.to_vec())]).is_err());
        assert!(from_bytes.set_bytes(&l, bad).is_err(), "{ty:?}");
        assert!(from_bytes.is_empty());
    }
    // Only a key of one byte column can be given as bytes.
    let int = RecordLayout::clustered(vec![Column::new(ColumnType::U32)], rest.clone()).unwrap();
    assert!(SearchKey::default().set_bytes(&int, b"\0\0\0\x07").is_err());
    let two = RecordLayout::clustered(
        vec![
            Column::new(ColumnType::Fixed(1)),
            Column::new(ColumnType::Fixed(1)),
        ],
        rest,
    )
    .unwrap();
    assert!(SearchKey::default().set_bytes(&two, b"a").is_err());
}
