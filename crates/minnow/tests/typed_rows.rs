//! Typed rows: `#[derive(Row)]`, tuples, typed keys, the typed calls of `Table` and
//! `Transaction`, the errors that name a field and a column, and how values print.

use std::ops::Bound;

use minnow::{
    ColumnDef, ColumnType, Config, Database, Date, DateTime, Error, FromValue, IndexDef, Row, Scan,
    Table, TableDef, ToValue, Value,
};

type Res<T = ()> = Result<T, Box<dyn std::error::Error>>;

/// Every column type, NOT NULL and nullable.
#[derive(Row, Debug, Clone, PartialEq)]
struct Every {
    id: u64,
    i8c: i8,
    i16c: i16,
    i32c: i32,
    i64c: i64,
    u8c: u8,
    u16c: u16,
    u32c: u32,
    fixed: Vec<u8>,
    var: String,
    dbl: f64,
    day: Date,
    at: DateTime,
    blob: Vec<u8>,
    text: String,
    flag: bool,
    maybe_int: Option<i32>,
    maybe_text: Option<String>,
    maybe_day: Option<Date>,
}

fn every_def() -> TableDef {
    TableDef::new("every")
        .column(ColumnDef::new("id", ColumnType::U64))
        .column(ColumnDef::new("i8c", ColumnType::I8))
        .column(ColumnDef::new("i16c", ColumnType::I16))
        .column(ColumnDef::new("i32c", ColumnType::I32))
        .column(ColumnDef::new("i64c", ColumnType::I64))
        .column(ColumnDef::new("u8c", ColumnType::U8))
        .column(ColumnDef::new("u16c", ColumnType::U16))
        .column(ColumnDef::new("u32c", ColumnType::U32))
        .column(ColumnDef::new("fixed", ColumnType::Fixed(4)))
        .column(ColumnDef::new("var", ColumnType::Var(40)))
        .column(ColumnDef::new("dbl", ColumnType::Double))
        .column(ColumnDef::new("day", ColumnType::Date))
        .column(ColumnDef::new("at", ColumnType::DateTime))
        .column(ColumnDef::new("blob", ColumnType::Blob))
        .column(ColumnDef::new("text", ColumnType::Text))
        .column(ColumnDef::new("flag", ColumnType::U8))
        .column(ColumnDef::nullable("maybe_int", ColumnType::I32))
        .column(ColumnDef::nullable("maybe_text", ColumnType::Var(10)))
        .column(ColumnDef::nullable("maybe_day", ColumnType::Date))
        .primary_key(&["id"])
}

fn every(id: u64) -> Res<Every> {
    Ok(Every {
        id,
        i8c: -8,
        i16c: -16_000,
        i32c: i32::MIN,
        i64c: i64::MAX,
        u8c: 255,
        u16c: 65_535,
        u32c: u32::MAX,
        fixed: vec![0, 1, 2, 0xff],
        var: "naïve café".into(),
        dbl: -1.5,
        day: Date::new(2024, 2, 29)?,
        at: DateTime::new(Date::new(1999, 12, 31)?, 23, 59, 59, 999_999)?,
        blob: (0..40_000u32).map(|i| (i % 251) as u8).collect(),
        text: "x".repeat(20_000),
        flag: true,
        maybe_int: Some(-3),
        maybe_text: None,
        maybe_day: None,
    })
}

#[derive(Row, Debug, Clone, PartialEq)]
struct Book {
    isbn: String,
    title: String,
    #[minnow(rename = "qty")]
    stock: u32,
}

/// `books(id U64 AUTO_INCREMENT PK, isbn Var(20) UNIQUE, title Var(100), qty U32,
/// note TEXT NULL)`.
fn books(db: &Database) -> Result<Table, Error> {
    db.create_table(
        TableDef::new("books")
            .column(ColumnDef::new("id", ColumnType::U64).auto_increment())
            .column(ColumnDef::new("isbn", ColumnType::Var(20)))
            .column(ColumnDef::new("title", ColumnType::Var(100)))
            .column(ColumnDef::new("qty", ColumnType::U32))
            .column(ColumnDef::nullable("note", ColumnType::Text))
            .primary_key(&["id"])
            .index(IndexDef::unique("by_isbn", &["isbn"])),
    )
}

#[test]
fn derive_round_trips_every_column_type_and_null() -> Res {
    let dir = tempfile::tempdir()?;
    let db = Database::create(dir.path(), Config::default())?;
    let t = db.create_table(every_def())?;
    let a = every(1)?;
    let b = Every {
        maybe_int: None,
        maybe_text: Some("ok".into()),
        maybe_day: Some(Date::new(2000, 1, 1)?),
        flag: false,
        ..every(2)?
    };
    assert_eq!(t.insert_row(&a)?, None);
    t.insert_row(&b)?;
    assert_eq!(t.get_row::<Every>(1u64)?, Some(a.clone()));
    assert_eq!(t.get_row::<Every>(2u64)?, Some(b.clone()));
    assert_eq!(t.get_row::<Every>(3u64)?, None);
    // NULL columns come back as None, and are stored as NULL.
    let raw = t.get(&[Value::UInt(2)])?.ok_or("row 2")?;
    assert_eq!(raw[16], Value::Null);
    let all: Vec<Every> = t.scan_rows(Scan::all())?.collect::<Result<_, _>>()?;
    assert_eq!(all, [a.clone(), b]);
    db.close()?;

    // Reopened: the same rows.
    let db = Database::open(dir.path(), Config::default())?;
    let t = db.table("every")?;
    assert_eq!(t.get_row::<Every>(1u64)?, Some(a));
    db.check()?;
    Ok(())
}

#[test]
fn struct_fields_map_by_name_and_reads_project_them() -> Res {
    let dir = tempfile::tempdir()?;
    let db = Database::create(dir.path(), Config::default())?;
    let t = books(&db)?;
    // Missing `id` (AUTO_INCREMENT) and `note` (nullable): NULL, and `id` is generated.
    let rust = Book {
        isbn: "978-1-59327-828-1".into(),
        title: "The Rust Programming Language".into(),
        stock: 3,
    };
    assert_eq!(t.insert_row(&rust)?, Some(1));
    assert_eq!(
        t.get(&[Value::UInt(1)])?,
        Some(vec![
            Value::UInt(1),
            Value::text("978-1-59327-828-1"),
            Value::text("The Rust Programming Language"),
            Value::UInt(3),
            Value::Null,
        ])
    );
    // The renamed field reads column `qty`; only the struct's columns are read.
    assert_eq!(t.get_row::<Book>(1u64)?, Some(rust.clone()));

    // Projection: a struct of the columns of index `by_isbn` (its key and the primary
    // key) is answered from the index alone.
    #[derive(Row, Debug, PartialEq)]
    struct IsbnId {
        isbn: String,
        id: u64,
    }
    let rows = t.scan_index_rows::<IsbnId>("by_isbn", Scan::all())?;
    assert!(rows.rows().is_covering());
    let got: Vec<IsbnId> = rows.collect::<Result<_, _>>()?;
    assert_eq!(
        got,
        [IsbnId {
            isbn: "978-1-59327-828-1".into(),
            id: 1
        }]
    );
    // A struct with a column outside the index is not covering.
    let rows = t.scan_index_rows::<Book>("by_isbn", Scan::all())?;
    assert!(!rows.rows().is_covering());
    drop(rows);

    // A long TEXT column the struct does not name is not read: its overflow pages stay
    // out of the buffer pool's reads.
    t.update(&[
        Value::UInt(1),
        Value::text("978-1-59327-828-1"),
        Value::text("The Rust Programming Language"),
        Value::UInt(3),
        Value::text(&"n".repeat(200_000)),
    ])?;
    db.close()?;
    let db = Database::open(
        dir.path(),
        Config {
            buffer_pool_dump_at_shutdown: false,
            ..Config::default()
        },
    )?;
    let t = db.table("books")?;
    let before = db.status()?.buffer_pool.reads;
    assert_eq!(t.get_row::<Book>(1u64)?, Some(rust));
    let projected = db.status()?.buffer_pool.reads - before;
    let before = db.status()?.buffer_pool.reads;
    let whole = t.get(&[Value::UInt(1)])?.ok_or("row 1")?;
    assert_eq!(whole[4].as_bytes().map(<[u8]>::len), Some(200_000));
    let full = db.status()?.buffer_pool.reads - before;
    assert!(
        full >= projected + 10,
        "the projected read read {projected} pages, the full one {full}"
    );
    Ok(())
}

#[test]
fn update_row_changes_the_struct_columns_only() -> Res {
    let dir = tempfile::tempdir()?;
    let db = Database::create(dir.path(), Config::default())?;
    let t = books(&db)?;
    t.insert(&[
        Value::UInt(7),
        Value::text("978-0"),
        Value::text("Dune"),
        Value::UInt(5),
        Value::text("keep me"),
    ])?;

    // A struct with the primary key and some columns: the others keep their values.
    #[derive(Row)]
    struct Restock {
        id: u64,
        qty: u32,
    }
    t.update_row(&Restock { id: 7, qty: 4 })?;
    assert_eq!(
        t.get(&[Value::UInt(7)])?,
        Some(vec![
            Value::UInt(7),
            Value::text("978-0"),
            Value::text("Dune"),
            Value::UInt(4),
            Value::text("keep me"),
        ])
    );
    // A missing row.
    let e = t.update_row(&Restock { id: 8, qty: 1 }).unwrap_err();
    assert!(matches!(e, Error::RowNotFound { .. }), "{e}");
    assert_eq!(
        e.to_string(),
        "no row with primary key (8) in table `books`"
    );
    // Without the primary key the row cannot be found: an error naming the column.
    let e = t
        .update_row(&Book {
            isbn: "978-0".into(),
            title: "Dune".into(),
            stock: 1,
        })
        .unwrap_err();
    assert!(
        matches!(&e, Error::RowType { column, field, .. } if column == "id" && field.is_empty()),
        "{e}"
    );

    // A tuple sets every column.
    t.update_row(&(7u64, "978-0", "Dune Messiah", 9u32, None::<String>))?;
    assert_eq!(
        t.get_row::<(u64, String, String, u32, Option<String>)>(7u64)?,
        Some((7, "978-0".into(), "Dune Messiah".into(), 9, None))
    );
    db.check()?;
    Ok(())
}

#[test]
fn tuples_map_by_position_and_typed_keys_take_many_shapes() -> Res {
    let dir = tempfile::tempdir()?;
    let db = Database::create(dir.path(), Config::default())?;
    let t = db.create_table(
        TableDef::new("stops")
            .column(ColumnDef::new("city", ColumnType::Var(20)))
            .column(ColumnDef::new("n", ColumnType::U32))
            .column(ColumnDef::nullable("name", ColumnType::Var(40)))
            .primary_key(&["city", "n"]),
    )?;
    for (city, n, name) in [
        ("oslo", 1u32, Some("Jernbanetorget")),
        ("oslo", 2, None),
        ("bern", 1, Some("Bahnhof")),
    ] {
        t.insert_row(&(city, n, name))?;
    }
    type Stop = (String, u32, Option<String>);
    let oslo2: Stop = ("oslo".into(), 2, None);
    // A tuple key, values, a vector, an array of values.
    assert_eq!(t.get_row::<Stop>(("oslo", 2u32))?, Some(oslo2.clone()));
    assert_eq!(
        t.get_row::<Stop>(&[Value::text("oslo"), Value::UInt(2)])?,
        Some(oslo2.clone())
    );
    assert_eq!(
        t.get_row::<Stop>(vec![Value::from("oslo"), Value::from(2u32)])?,
        Some(oslo2)
    );
    assert_eq!(t.get_row::<Stop>(("oslo", 3u32))?, None);
    // A one-value key: the prefix of a scan bound is values too.
    let oslo = Bound::Included(vec![Value::from("oslo")]);
    let names: Vec<(u32, Option<String>)> = t
        .scan_rows(Scan::range(oslo.clone(), oslo).columns(&["n", "name"]))?
        .collect::<Result<_, _>>()?;
    assert_eq!(names, [(1, Some("Jernbanetorget".into())), (2, None)]);
    // Typed scan bounds: a prefix, and a range of tuple keys.
    let same: Vec<(u32, Option<String>)> = t
        .scan_rows(Scan::prefix("oslo").columns(&["n", "name"]))?
        .collect::<Result<_, _>>()?;
    assert_eq!(same, names);
    let after: Vec<Stop> = t
        .scan_rows(Scan::between(
            Bound::Excluded(("bern", 1u32)),
            Bound::Included(("oslo", 1u32)),
        ))?
        .collect::<Result<_, _>>()?;
    assert_eq!(after, [("oslo".into(), 1, Some("Jernbanetorget".into()))]);
    // A tuple of the wrong width names the problem.
    let e = t.get_row::<(String, u32)>(("bern", 1u32)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "(String, u32).2 (column `name` of table `stops`): the row has 3 columns, the type 2 \
         fields"
    );
    // `Vec<Value>` rows, as the untyped calls return them.
    let raw: Option<Vec<Value>> = t.get_row(("bern", 1u32))?;
    assert_eq!(raw, t.get(&[Value::text("bern"), Value::UInt(1)])?);
    Ok(())
}

/// Every call that takes a key takes any `ToKey`: a plain value, a tuple, `&[Value]`.
#[test]
fn every_keyed_call_takes_a_typed_key() -> Res {
    let dir = tempfile::tempdir()?;
    let db = Database::create(dir.path(), Config::default())?;
    let t = books(&db)?;
    for (isbn, qty) in [("978-1", 3u32), ("978-2", 5), ("978-3", 7)] {
        t.insert_row(&(0u64, isbn, "T", qty, None::<String>))?;
    }
    let row = |id: u64, isbn: &str, qty: u32| {
        vec![
            Value::UInt(id),
            Value::text(isbn),
            Value::text("T"),
            Value::UInt(qty.into()),
            Value::Null,
        ]
    };
    // Autocommit reads: by primary key and by unique secondary key.
    assert_eq!(t.get(1u64)?, Some(row(1, "978-1", 3)));
    assert_eq!(t.get(&[Value::UInt(1)])?, t.get(1u64)?, "values still work");
    assert_eq!(t.get_columns(2u64, &["qty"])?, Some(vec![Value::UInt(5)]));
    assert_eq!(t.get_with(3u64, |r| r.value(3))?, Some(Value::UInt(7)));
    assert_eq!(t.get_by("by_isbn", "978-2")?, Some(row(2, "978-2", 5)));
    assert_eq!(
        t.get_by_columns("by_isbn", "978-3", &["id"])?,
        Some(vec![Value::UInt(3)])
    );
    // Autocommit writes and the version chain.
    assert!(t.update_columns(1u64, &[("qty", Value::from(4u32))])?);
    assert_eq!(t.history(1u64)?.map(|h| h.key), Some(vec![Value::UInt(1)]));
    assert!(t.history(9u64)?.is_none());
    assert!(t.delete(3u64)?);
    assert!(!t.delete(3u64)?);
    assert_eq!(t.get(3u64)?, None);

    // The same in a transaction, locking reads included.
    let mut tx = db.begin()?;
    assert_eq!(tx.get(&t, 1u64)?, Some(row(1, "978-1", 4)));
    assert_eq!(
        tx.get_columns(&t, 2u64, &["isbn"])?,
        Some(vec![Value::text("978-2")])
    );
    assert_eq!(tx.get_with(&t, 2u64, |r| r.value(3))?, Some(Value::UInt(5)));
    assert_eq!(tx.get_by(&t, "by_isbn", "978-1")?, Some(row(1, "978-1", 4)));
    assert_eq!(
        tx.get_by_columns(&t, "by_isbn", "978-1", &["qty"])?,
        Some(vec![Value::UInt(4)])
    );
    assert_eq!(tx.get_for_update(&t, 2u64)?, Some(row(2, "978-2", 5)));
    assert_eq!(
        tx.get_by_for_update(&t, "by_isbn", "978-1")?,
        Some(row(1, "978-1", 4))
    );
    assert!(tx.update_columns(&t, 2u64, &[("qty", Value::from(6u32))])?);
    assert!(tx.delete(&t, 1u64)?);
    tx.commit()?;
    assert_eq!(t.get(1u64)?, None);
    assert_eq!(t.get(2u64)?, Some(row(2, "978-2", 6)));
    Ok(())
}

#[test]
fn errors_name_the_field_and_the_column() -> Res {
    let dir = tempfile::tempdir()?;
    let db = Database::create(dir.path(), Config::default())?;
    let t = books(&db)?;
    t.insert(&[
        Value::UInt(1),
        Value::text("978-0"),
        Value::text("Dune"),
        Value::UInt(70_000),
        Value::Null,
    ])?;

    // A value that does not fit the field's type.
    #[derive(Row, Debug)]
    struct Small {
        id: u64,
        #[minnow(rename = "qty")]
        stock: u16,
    }
    let e = t.get_row::<Small>(1u64).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Small.stock (column `qty` of table `books`): expected an integer in u16's range, \
         found an integer 70000"
    );
    // NULL into a field that is not an Option.
    #[derive(Row, Debug)]
    struct Noted {
        id: u64,
        note: String,
    }
    let e = t.get_row::<Noted>(1u64).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Noted.note (column `note` of table `books`): expected UTF-8 text, found NULL"
    );
    // A field whose column the table lacks, on a read and on a write.
    #[derive(Row, Debug)]
    struct Priced {
        id: u64,
        price: f64,
    }
    let e = t.get_row::<Priced>(1u64).unwrap_err();
    assert!(
        matches!(&e, Error::NoSuchColumn { column, .. } if column == "price"),
        "{e}"
    );
    let e = t.insert_row(&Priced { id: 2, price: 1.0 }).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Priced.price (column `price` of table `books`): the table has no such column"
    );
    // A NOT NULL column without a field.
    #[derive(Row, Debug)]
    struct NoTitle {
        isbn: String,
        qty: u32,
    }
    let e = t
        .insert_row(&NoTitle {
            isbn: "1".into(),
            qty: 1,
        })
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "NoTitle (column `title` of table `books`): the column is NOT NULL and the type has \
         no field for it"
    );
    // A field of the wrong type on the way in is the engine's type check, naming the column.
    let e = t
        .insert_row(&(2u64, "978-1", "Emma", -1i32, None::<String>))
        .unwrap_err();
    assert!(
        matches!(&e, Error::TypeMismatch { column, .. } if column == "qty"),
        "{e}"
    );
    // A duplicate text key prints as text.
    let e = t
        .insert_row(&Book {
            isbn: "978-0".into(),
            title: "Dune again".into(),
            stock: 1,
        })
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "duplicate key (\"978-0\") in index `by_isbn` of table `books`"
    );
    Ok(())
}

#[test]
fn transactions_read_and_write_typed_rows() -> Res {
    let dir = tempfile::tempdir()?;
    let db = Database::create(dir.path(), Config::default())?;
    let t = books(&db)?;
    let dune = Book {
        isbn: "978-0".into(),
        title: "Dune".into(),
        stock: 2,
    };
    t.insert_row(&dune)?;

    #[derive(Row, Debug, PartialEq)]
    struct Order {
        id: u64,
        book: u64,
    }
    let orders = db.create_table(
        TableDef::new("orders")
            .column(ColumnDef::new("id", ColumnType::U64).auto_increment())
            .column(ColumnDef::new("book", ColumnType::U64))
            .primary_key(&["id"]),
    )?;

    // A sell: lock the book, take one from stock, record the order and learn its id.
    let mut tx = db.begin()?;
    #[derive(Row, Debug)]
    struct Stock {
        id: u64,
        qty: u32,
    }
    let mut s: Stock = tx.get_row_for_update(&t, 1u64)?.ok_or("book 1")?;
    s.qty -= 1;
    tx.update_row(&t, &s)?;
    let id = tx.insert_row(&orders, &(None::<u64>, s.id))?;
    assert_eq!(id, Some(1));
    let second = tx.insert_row(&orders, &(None::<u64>, s.id))?;
    assert_eq!(second, Some(2));
    // Its own writes, typed.
    assert_eq!(
        tx.get_row::<Order>(&orders, 1u64)?,
        Some(Order { id: 1, book: 1 })
    );
    let mine: Vec<Order> = tx
        .scan_rows(&orders, Scan::all().reverse())?
        .collect::<Result<_, _>>()?;
    assert_eq!(mine.iter().map(|o| o.id).collect::<Vec<_>>(), [2, 1]);
    // Not yet seen by others.
    assert_eq!(t.get_row::<Book>(1u64)?, Some(dune.clone()));
    assert_eq!(orders.get_row::<Order>(1u64)?, None);
    tx.commit()?;
    assert_eq!(
        t.get_row::<Book>(1u64)?,
        Some(Book {
            stock: 1,
            ..dune.clone()
        })
    );

    // A sell by ISBN: the typed locking read through the unique index.
    let mut tx = db.begin()?;
    let mut s: Stock = tx
        .get_row_by_for_update(&t, "by_isbn", "978-0")?
        .ok_or("978-0")?;
    assert_eq!((s.id, s.qty), (1, 1));
    assert!(
        tx.get_row_by_for_update::<Stock>(&t, "by_isbn", "978-9")?
            .is_none()
    );
    s.qty -= 1;
    tx.update_row(&t, &s)?;
    tx.commit()?;
    assert_eq!(
        t.get_row_by::<Book>("by_isbn", "978-0")?.map(|b| b.stock),
        Some(0)
    );

    // Locking scans and secondary scans, typed.
    let mut tx = db.begin()?;
    let locked: Vec<Order> = tx.scan_rows_for_update(&orders, Scan::all().limit(1))?;
    assert_eq!(locked, [Order { id: 1, book: 1 }]);
    let by_isbn: Vec<Book> = tx
        .scan_index_rows(&t, "by_isbn", Scan::all())?
        .collect::<Result<_, _>>()?;
    assert_eq!(by_isbn.len(), 1);
    // A rolled-back typed insert leaves nothing.
    tx.insert_row(&orders, &Order { id: 10, book: 1 })?;
    tx.rollback()?;
    assert_eq!(orders.get_row::<Order>(10u64)?, None);
    db.check()?;
    Ok(())
}

#[test]
fn values_print_readably() -> Res {
    assert_eq!(
        Value::text("978-0-13-468599-1").to_string(),
        "\"978-0-13-468599-1\""
    );
    assert_eq!(format!("{:?}", Value::text("ada")), "Bytes(\"ada\")");
    assert_eq!(
        format!("{:?}", Value::text("a\"b\n")),
        "Bytes(\"a\\\"b\\n\")"
    );
    assert_eq!(Value::Bytes(vec![0, 0xff, 0x10]).to_string(), "0x00ff10");
    assert_eq!(format!("{:?}", Value::UInt(7)), "UInt(7)");
    assert_eq!(Value::Int(-7).to_string(), "-7");
    assert_eq!(Value::Double(1.0).to_string(), "1.0");
    assert_eq!(Value::Null.to_string(), "NULL");
    assert_eq!(format!("{:?}", Value::Null), "Null");
    assert_eq!(Value::date(2024, 2, 29)?.to_string(), "2024-02-29");
    assert_eq!(
        format!("{:?}", Value::datetime((2024, 2, 29), (12, 0, 1), 5)?),
        "DateTime(2024-02-29 12:00:01.000005)"
    );
    // Long values are cut short with their length; `{:#}` shows all of it.
    let long = Value::text(&"é".repeat(100));
    assert_eq!(
        long.to_string(),
        format!("\"{}…\" (200 bytes)", "é".repeat(64))
    );
    assert_eq!(format!("{long:#}"), format!("\"{}\"", "é".repeat(100)));
    let blob = Value::Bytes(vec![0xff; 1000]);
    assert_eq!(
        blob.to_string(),
        format!("0x{}… (1000 bytes)", "ff".repeat(32))
    );
    assert_eq!(format!("{blob:#}").len(), 2 + 2000);
    // A row prints as a list of readable values.
    let row = vec![Value::UInt(1), Value::text("ada"), Value::Null];
    assert_eq!(format!("{row:?}"), "[UInt(1), Bytes(\"ada\"), Null]");
    Ok(())
}

#[test]
fn values_convert_from_and_to_rust_types() -> Res {
    let v = Value::UInt(200);
    assert_eq!(v.as_u64(), Some(200));
    assert_eq!(v.as_i64(), Some(200));
    assert_eq!(Value::Int(-1).as_u64(), None);
    assert_eq!(Value::UInt(u64::MAX).as_i64(), None);
    assert_eq!(Value::Double(2.5).as_f64(), Some(2.5));
    assert_eq!(Value::text("ok").as_str(), Some("ok"));
    assert_eq!(Value::Bytes(vec![0xff]).as_str(), None);
    assert_eq!(Value::Bytes(vec![0xff]).as_bytes(), Some(&[0xff][..]));
    assert!(Value::Null.is_null());
    assert_eq!(
        Value::date(2024, 1, 2)?.as_date(),
        Some(Date::new(2024, 1, 2)?)
    );

    assert_eq!(Value::from(5u8), Value::UInt(5));
    assert_eq!(Value::from(-5i16), Value::Int(-5));
    assert_eq!(Value::from("a"), Value::text("a"));
    assert_eq!(Value::from(String::from("a")), Value::text("a"));
    assert_eq!(Value::from(&b"\x00"[..]), Value::Bytes(vec![0]));
    assert_eq!(Value::from(None::<u32>), Value::Null);
    assert_eq!(Value::from(Some(3u32)), Value::UInt(3));
    assert_eq!(Value::from(true), Value::UInt(1));
    assert_eq!(Some("x").to_value(), Value::text("x"));

    assert_eq!(u8::try_from(Value::Int(255))?, 255);
    assert_eq!(String::try_from(Value::text("é"))?, "é");
    assert!(!bool::try_from(Value::UInt(0))?);
    assert_eq!(Value::Int(-3).get::<i64>()?, -3);
    assert_eq!(Option::<u32>::from_value(Value::Null)?, None);
    let e = u8::try_from(Value::UInt(256)).unwrap_err();
    assert_eq!(e.expected, "an integer in u8's range");
    assert_eq!(e.found, Value::UInt(256));
    let e = String::try_from(Value::Bytes(vec![0xff])).unwrap_err();
    assert_eq!(e.to_string(), "expected UTF-8 text, found bytes 0xff");
    let e = f64::try_from(Value::text("1.0")).unwrap_err();
    assert_eq!(e.to_string(), "expected a DOUBLE, found bytes \"1.0\"");
    Ok(())
}

#[test]
fn raw_identifiers_name_their_column_without_r_hash() -> Res {
    let dir = tempfile::tempdir()?;
    let db = Database::create(dir.path(), Config::default())?;
    let t = db.create_table(
        TableDef::new("items")
            .column(ColumnDef::new("id", ColumnType::U32))
            .column(ColumnDef::new("type", ColumnType::Var(10)))
            .primary_key(&["id"]),
    )?;
    #[derive(Row, Debug, PartialEq)]
    struct Item {
        id: u32,
        r#type: String,
    }
    let item = Item {
        id: 1,
        r#type: "tool".into(),
    };
    t.insert_row(&item)?;
    assert_eq!(t.get_row::<Item>(1u32)?, Some(item));
    assert_eq!(
        t.get_columns(&[Value::UInt(1)], &["type"])?,
        Some(vec![Value::text("tool")])
    );
    Ok(())
}
