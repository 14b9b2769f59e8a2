//! An inventory with a sell transaction, written with typed rows: books with a unique ISBN
//! index and an author index, orders with an auto-increment id, and a `sell` that locks the
//! book, takes one from stock and records the order, all or nothing.
//!
//! ```text
//! cargo run -p minnow --example inventory
//! ```

use minnow::{
    ColumnDef, ColumnType, Config, Database, Error, IndexDef, Row, Scan, Table, TableDef,
};

/// A book as the application sees it; the table's `blurb` column is not part of it, so
/// reading a `Book` never reads a blurb.
#[derive(Row, Debug, Clone, PartialEq)]
struct Book {
    id: u64,
    isbn: String,
    title: String,
    author: String,
    #[minnow(rename = "qty")]
    stock: u32,
}

/// An order; `id` is generated on insert.
#[derive(Row, Debug)]
struct Order {
    id: Option<u64>,
    book: u64,
    customer: String,
}

/// What `sell` changes of a book.
#[derive(Row)]
struct Stock {
    id: u64,
    qty: u32,
}

fn create(db: &Database) -> Result<(), Error> {
    db.create_table(
        TableDef::new("books")
            .column(ColumnDef::new("id", ColumnType::U64).auto_increment())
            .column(ColumnDef::new("isbn", ColumnType::Var(20)))
            .column(ColumnDef::new("title", ColumnType::Var(200)))
            .column(ColumnDef::new("author", ColumnType::Var(100)))
            .column(ColumnDef::new("qty", ColumnType::U32))
            .column(ColumnDef::nullable("blurb", ColumnType::Text))
            .primary_key(&["id"])
            .index(IndexDef::unique("by_isbn", &["isbn"]))
            .index(IndexDef::new("by_author", &["author"])),
    )?;
    db.create_table(
        TableDef::new("orders")
            .column(ColumnDef::new("id", ColumnType::U64).auto_increment())
            .column(ColumnDef::new("book", ColumnType::U64))
            .column(ColumnDef::new("customer", ColumnType::Var(100)))
            .primary_key(&["id"]),
    )?;
    Ok(())
}

/// The id of the book with `isbn`, through the unique index (a covering read: the index
/// holds the ISBN and the primary key).
fn book_id(books: &Table<'_>, isbn: &str) -> Result<Option<u64>, Error> {
    let scan = Scan::prefix(isbn).columns(&["id"]);
    let mut ids = books.scan_index_rows::<(u64,)>("by_isbn", scan)?;
    ids.next().transpose().map(|id| id.map(|(id,)| id))
}

/// Sells one copy of book `id` to `customer`: the order's id, or `None` when the book is
/// out of stock (nothing changes then).
fn sell(
    db: &Database,
    books: &Table<'_>,
    orders: &Table<'_>,
    id: u64,
    customer: &str,
) -> Result<Option<u64>, Error> {
    let mut tx = db.begin()?;
    // The book's lock first: two sellers of the last copy take turns here.
    let Some(mut stock) = tx.get_row_for_update::<Stock>(books, id)? else {
        return Ok(None);
    };
    if stock.qty == 0 {
        tx.rollback()?;
        return Ok(None);
    }
    stock.qty -= 1;
    tx.update_row(books, &stock)?;
    let order = tx.insert_row(
        orders,
        &Order {
            id: None,
            book: id,
            customer: customer.into(),
        },
    )?;
    tx.commit()?;
    Ok(order)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = Database::create(dir.path(), Config::default())?;
    create(&db)?;
    let books = db.table("books")?;
    for (isbn, title, author, stock) in [
        (
            "978-1-59327-828-1",
            "The Rust Programming Language",
            "Klabnik",
            2,
        ),
        ("978-1-4919-2728-1", "Programming Rust", "Blandy", 1),
        ("978-1-7185-0044-0", "Rust for Rustaceans", "Gjengset", 0),
    ] {
        // `id` 0 asks for the next auto-increment value; `blurb` is NULL.
        let book = Book {
            id: 0,
            isbn: isbn.into(),
            title: title.into(),
            author: author.into(),
            stock,
        };
        books.insert_row(&book)?;
    }
    // The unique index refuses a second book with an ISBN, and says which.
    let dup = Book {
        id: 0,
        isbn: "978-1-4919-2728-1".into(),
        title: "Again".into(),
        author: "X".into(),
        stock: 1,
    };
    match books.insert_row(&dup) {
        Err(e @ Error::DuplicateKey { .. }) => println!("refused: {e}"),
        other => return Err(format!("expected a duplicate key, got {other:?}").into()),
    }

    let orders = db.table("orders")?;
    let rust_book = book_id(&books, "978-1-59327-828-1")?.ok_or("no such ISBN")?;
    for customer in ["ada", "bob", "cy"] {
        match sell(&db, &books, &orders, rust_book, customer)? {
            Some(order) => println!("order {order}: book {rust_book} to {customer}"),
            None => println!("book {rust_book} is sold out; {customer} gets nothing"),
        }
    }
    db.close()?;

    // Reopened, everything committed is there.
    let db = Database::open(dir.path(), Config::default())?;
    let books = db.table("books")?;
    let by_author: Vec<Book> = books
        .scan_index_rows("by_author", Scan::all())?
        .collect::<Result<_, _>>()?;
    for b in &by_author {
        println!("{:<10} {:<32} {} left", b.author, b.title, b.stock);
    }
    assert_eq!(
        by_author
            .iter()
            .find(|b| b.id == rust_book)
            .map(|b| b.stock),
        Some(0)
    );
    let orders: Vec<Order> = db
        .table("orders")?
        .scan_rows(Scan::all())?
        .collect::<Result<_, _>>()?;
    assert_eq!(orders.len(), 2);
    let report = db.check()?;
    println!(
        "check: {} rows in books, {} in orders",
        report.rows["books"], report.rows["orders"]
    );
    db.close()?;
    Ok(())
}
