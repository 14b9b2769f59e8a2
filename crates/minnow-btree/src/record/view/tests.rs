use super::*;
use crate::record::{Column, ColumnType, Date, DateTime, RecordBuf, TRX_ID_LEN};
use minnow_page::PageError;

/// A clustered layout with a column of every type, most of them nullable.
fn every_type() -> RecordLayout {
    use ColumnType::*;
    let rest = [
        I8,
        I16,
        I32,
        I64,
        U8,
        U16,
        U32,
        U64,
        Fixed(4),
        Var(300),
        Double,
        Date,
        DateTime,
        Blob,
        Text,
    ];
    RecordLayout::clustered(
        vec![Column::new(U64)],
        rest.into_iter().map(Column::nullable).collect(),
    )
    .unwrap()
}

fn row() -> Vec<Value> {
    vec![
        Value::UInt(42),
        Value::trx_id(0x0102_0304_0506),
        Value::roll_ptr(0x00AB_CDEF_0123_4567),
        Value::Int(-8),
        Value::Int(-300),
        Value::Int(70_000),
        Value::Int(i64::MIN),
        Value::UInt(200),
        Value::UInt(65_000),
        Value::UInt(4_000_000_000),
        Value::UInt(u64::MAX),
        Value::Bytes(b"abcd".to_vec()),
        Value::Bytes(vec![b'v'; 200]),
        Value::Double(-2.5),
        Value::Date(Date::new(2024, 2, 29).unwrap()),
        Value::DateTime(
            DateTime::new(Date::new(1999, 12, 31).unwrap(), 23, 59, 58, 123_456).unwrap(),
        ),
        Value::Bytes(vec![0, 1, 2, 3]),
        Value::text("héllo"),
    ]
}

fn view(rec: &RecordBuf) -> Result<RecordView<'_>, RecordError> {
    // The layout is leaked only in tests: a view borrows it for as long as the bytes.
    let l: &'static RecordLayout = Box::leak(Box::new(every_type()));
    RecordView::new(l, rec.as_bytes(), rec.extra())
}

#[test]
fn every_column_type_reads_back_in_place() {
    let l = every_type();
    let vals = row();
    let rec = l.encode(&vals).unwrap();
    let v = view(&rec).unwrap();
    assert_eq!(v.len(), vals.len());
    for (i, want) in vals.iter().enumerate() {
        assert_eq!(&v.value(i).unwrap(), want, "field {i}");
    }
    // Byte columns are slices of the record, not copies.
    let var = v.bytes(12).unwrap().unwrap();
    let range = rec.as_bytes().as_ptr_range();
    assert!(range.contains(&var.as_ptr()));
    assert_eq!(var, &[b'v'; 200][..]);
    // The system columns as numbers.
    assert_eq!(v.trx_id().unwrap(), Some(0x0102_0304_0506));
    assert_eq!(v.roll_ptr().unwrap(), Some(0x00AB_CDEF_0123_4567));
    assert!(!v.deleted());
    assert_eq!(v.size(), (rec.extra(), rec.len() - rec.extra()));
    assert_eq!(l.decode(rec.as_bytes(), rec.extra()).unwrap(), vals);
}

#[test]
fn nulls_read_as_null() {
    let l = every_type();
    let mut vals = row();
    for v in vals.iter_mut().skip(3).step_by(2) {
        *v = Value::Null;
    }
    let rec = l.encode(&vals).unwrap();
    let v = view(&rec).unwrap();
    for (i, want) in vals.iter().enumerate() {
        assert_eq!(&v.value(i).unwrap(), want, "field {i}");
        if *want == Value::Null {
            assert_eq!(v.field(i).unwrap(), FieldRef::Null);
            assert_eq!(v.bytes(i).unwrap(), None);
        }
    }
}

#[test]
fn wide_records_keep_positions_on_the_heap() {
    // Nullable columns after the fixed prefix (key, DB_TRX_ID, DB_ROLL_PTR): walked, more
    // of them than the view holds inline.
    let n = INLINE_FIELDS + 5;
    let l = RecordLayout::clustered(
        vec![Column::new(ColumnType::U32)],
        vec![Column::nullable(ColumnType::U16); n],
    )
    .unwrap();
    let mut vals = vec![Value::UInt(1), Value::trx_id(9), Value::roll_ptr(1)];
    vals.extend((0..n as u64).map(Value::UInt));
    let rec = l.encode(&vals).unwrap();
    let v = RecordView::new(&l, rec.as_bytes(), rec.extra()).unwrap();
    assert_eq!(v.len(), n + 3);
    assert_eq!(v.value(n + 2).unwrap(), Value::UInt(n as u64 - 1));
    assert_eq!(v.trx_id().unwrap(), Some(9));
}

#[test]
fn a_field_past_the_record_is_a_typed_error() {
    let rec = every_type().encode(&row()).unwrap();
    let v = view(&rec).unwrap();
    assert_eq!(
        v.field(18),
        Err(RecordError::NoField {
            field: 18,
            fields: 18
        })
    );
    assert!(v.value(usize::MAX).is_err());
}

#[test]
fn a_truncated_page_is_a_typed_error() {
    let rec = every_type().encode(&row()).unwrap();
    // The page ends inside the record's data: the walk finds a field past its end.
    for cut in [1, 10, 100, 200] {
        let short = rec.as_bytes().get(..rec.len() - cut).unwrap();
        let l = every_type();
        match RecordView::new(&l, short, rec.extra()) {
            Err(RecordError::Page(PageError::OutOfBounds { .. })) => {}
            other => panic!("cut {cut}: {other:?}"),
        }
    }
}

/// A record of fixed-width NOT NULL fields only: every position comes from the layout, with
/// one bounds check for all of them.
#[test]
fn fixed_width_records_are_viewed_without_a_walk() {
    let l = RecordLayout::clustered(
        vec![Column::new(ColumnType::Fixed(24))],
        vec![
            Column::new(ColumnType::Fixed(150)),
            Column::new(ColumnType::I32),
        ],
    )
    .unwrap();
    assert_eq!(l.fixed_ends(), [24, 30, 37, 187, 191]);
    let vals = [
        Value::Bytes(vec![1; 24]),
        Value::trx_id(77),
        Value::roll_ptr(5),
        Value::Bytes(vec![2; 150]),
        Value::Int(-3),
    ];
    let rec = l.encode(&vals).unwrap();
    let v = RecordView::new(&l, rec.as_bytes(), rec.extra()).unwrap();
    assert_eq!((v.len(), v.trx_id().unwrap()), (5, Some(77)));
    for (i, want) in vals.iter().enumerate() {
        assert_eq!(&v.value(i).unwrap(), want, "field {i}");
    }
    assert_eq!(v.size(), (HEADER_SIZE, 191));
    assert!(matches!(
        v.field(5),
        Err(RecordError::NoField {
            field: 5,
            fields: 5
        })
    ));
    // A page that ends inside the last field: the one check catches it.
    let short = rec.as_bytes().get(..rec.len() - 1).unwrap();
    assert!(matches!(
        RecordView::new(&l, short, rec.extra()),
        Err(RecordError::Page(PageError::OutOfBounds { .. }))
    ));
}

#[test]
fn offsets_out_of_range_are_typed_errors() {
    let l = every_type();
    let rec = every_type().encode(&row()).unwrap();
    // An origin too close to the page start for the header.
    assert!(matches!(
        RecordView::new(&l, rec.as_bytes(), 3),
        Err(RecordError::ExtraUnderflow { .. })
    ));
    // An origin past the page.
    assert!(matches!(
        RecordView::new(&l, rec.as_bytes(), rec.len() + 100),
        Err(RecordError::Page(_))
    ));
    // A length byte that sends a field past the end of the page: the first length byte
    // below the null bitmap is the Var(300) column's (2 bytes, 200 = 0x80 0xC8).
    let mut bytes = rec.as_bytes().to_vec();
    let null_bytes = 2; // 15 nullable columns
    let at = rec.extra() - HEADER_SIZE - null_bytes - 1;
    assert_eq!(bytes[at], 0x80);
    bytes[at] = 0x80 | 0x2F; // 0x2FC8 bytes: longer than the column
    assert!(matches!(
        RecordView::new(&l, &bytes, rec.extra()),
        Err(RecordError::FieldTooLong { field: 12, .. })
    ));
    // The extra bytes themselves cut off: lengths read below the page start.
    let tail = &rec.as_bytes()[at..];
    assert!(RecordView::new(&l, tail, rec.extra() - at).is_err());
}

#[test]
fn off_page_fields_are_references() {
    let l = every_type();
    let vals = row();
    let mut raw: Vec<Option<Vec<u8>>> = vals
        .iter()
        .enumerate()
        .map(|(i, v)| l.encode_field(i, v).unwrap())
        .collect();
    raw[16] = Some(vec![7; EXTERN_REF]);
    let refs: Vec<Option<&[u8]>> = raw.iter().map(Option::as_deref).collect();
    let mut ext = vec![false; raw.len()];
    ext[16] = true;
    let rec = l.encode_raw_ext(&refs, &ext).unwrap();
    let v = RecordView::new(&l, rec.as_bytes(), rec.extra()).unwrap();
    assert_eq!(
        v.field(16).unwrap(),
        FieldRef::External(&[7; EXTERN_REF][..])
    );
    assert!(matches!(
        v.bytes(16),
        Err(RecordError::External { field: 16, .. })
    ));
    assert!(v.value(16).is_err());
    // The fields after it are where they should be.
    assert_eq!(v.value(17).unwrap(), Value::text("héllo"));
}

#[test]
fn system_columns_of_a_wrong_width_are_errors() {
    // A secondary layout has no DB_TRX_ID: the view says so rather than guessing.
    let l = RecordLayout::secondary(vec![Column::new(ColumnType::U32)]).unwrap();
    let rec = l.encode(&[Value::UInt(5)]).unwrap();
    let v = RecordView::new(&l, rec.as_bytes(), rec.extra()).unwrap();
    assert_eq!(v.trx_id().unwrap(), None);
    assert_eq!(v.roll_ptr().unwrap(), None);
    assert_eq!(TRX_ID_LEN, 6);
}

const EXTERN_REF: usize = crate::record::EXTERN_REF_LEN;
use crate::record::HEADER_SIZE;
