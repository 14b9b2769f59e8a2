//! An inventory with a sell transaction, written with typed rows: books with a unique ISBN
//! index and an author index, orders with an auto-increment id, and a `sell` that locks the
//! book, takes one from stock and records the order, all or nothing (run again by
//! [`Database::transaction`] if it deadlocks or times out waiting for a lock).
//!
//! The application keeps the database and its tables in one struct (handles own what they
//! need: no lifetimes), finds a book by ISBN through the unique index (`get_row_by`), and
//! learns an order's generated id before it commits. A sale the customer abandons is rolled
//! back; a restock sets one named column (`update_columns`); keys are plain Rust values
//! (`get_row(id)`, `update_columns(id, ...)`, `delete(order)`), as everywhere a key is taken.
//!
//! ```text
//! cargo run -p minnow --example inventory
//! ```

use minnow::{
    ColumnDef, ColumnType, Config, Database, Error, IndexDef, Row, Scan, Table, TableDef,
    Transaction, Value,
};

/// The application's state: the database and the handles it uses, owned together.
struct Store {
    db: Database,
    books: Table,
    orders: Table,
}

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

/// A book's id, found through the unique ISBN index.
#[derive(Row)]
struct BookId {
    id: u64,
}

impl Store {
    fn open_or_create(dir: &std::path::Path) -> Result<Store, Error> {
        let db = Database::open_or_create(dir, Config::default())?;
        if db.table("books").is_err() {
            create(&db)?;
        }
        Ok(Store {
            books: db.table("books")?,
            orders: db.table("orders")?,
            db,
        })
    }

    /// The id of the book with `isbn` (a covering read: the index holds the ISBN and the
    /// primary key).
    fn book_id(&self, isbn: &str) -> Result<Option<u64>, Error> {
        Ok(self
            .books
            .get_row_by::<BookId>("by_isbn", isbn)?
            .map(|b| b.id))
    }

    /// Sells one copy of book `id` to `customer`: the order's id, or `None` when the book
    /// is out of stock (nothing changes then). One transaction, committed when the closure
    /// returns `Ok` (and run again if it deadlocks or times out waiting for a lock).
    fn sell(&self, id: u64, customer: &str) -> Result<Option<u64>, Error> {
        self.db.transaction(|tx| self.sell_in(tx, id, customer))
    }

    /// The statements of a sale, in `tx`: the caller commits or rolls back.
    fn sell_in(&self, tx: &mut Transaction, id: u64, customer: &str) -> Result<Option<u64>, Error> {
        // The book's lock first: two sellers of the last copy take turns here.
        let Some(mut stock) = tx.get_row_for_update::<Stock>(&self.books, id)? else {
            return Ok(None);
        };
        if stock.qty == 0 {
            return Ok(None);
        }
        stock.qty -= 1;
        // `Stock` names two columns: only `qty` is written, over the row's latest version.
        tx.update_row(&self.books, &stock)?;
        let order = Order {
            id: None,
            book: id,
            customer: customer.into(),
        };
        // The generated order id, known before the commit.
        tx.insert_row(&self.orders, &order)
    }

    /// Cancels order `id`: the order goes and its copy goes back on the shelf, in one
    /// transaction; false if there is no such order.
    fn cancel(&self, id: u64) -> Result<bool, Error> {
        self.db.transaction(|tx| {
            let Some(order) = tx.get_row_for_update::<Order>(&self.orders, id)? else {
                return Ok(false);
            };
            tx.delete(&self.orders, id)?;
            if let Some(mut stock) = tx.get_row_for_update::<Stock>(&self.books, order.book)? {
                stock.qty += 1;
                tx.update_row(&self.books, &stock)?;
            }
            Ok(true)
        })
    }

    /// The stock of book `id`.
    fn stock(&self, id: u64) -> Result<Option<u32>, Error> {
        Ok(self.books.get_row::<Stock>(id)?.map(|s| s.qty))
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let store = Store::open_or_create(dir.path())?;
    let books = &store.books;
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

    let rust_book = store.book_id("978-1-59327-828-1")?.ok_or("no such ISBN")?;
    for customer in ["ada", "bob", "cy"] {
        match store.sell(rust_book, customer)? {
            Some(order) => println!("order {order}: book {rust_book} to {customer}"),
            None => println!("book {rust_book} is sold out; {customer} gets nothing"),
        }
    }

    // A sale the customer abandons: the transaction is rolled back, and with it the stock
    // change and the order (its generated id is not handed out again, as in InnoDB).
    let blandy = store.book_id("978-1-4919-2728-1")?.ok_or("no such ISBN")?;
    let mut tx = store.db.begin()?;
    let abandoned = store.sell_in(&mut tx, blandy, "dee")?.ok_or("in stock")?;
    tx.rollback()?;
    assert_eq!(store.stock(blandy)?, Some(1));
    assert!(store.orders.get_row::<Order>(abandoned)?.is_none());
    println!("order {abandoned} abandoned: rolled back, book {blandy} still has 1 left");

    // An order cancelled after its commit: deleted by its key, the copy back in stock.
    let cancelled = store.sell(blandy, "eve")?.ok_or("in stock")?;
    assert_eq!(store.stock(blandy)?, Some(0));
    assert!(store.cancel(cancelled)?);
    assert_eq!(store.stock(blandy)?, Some(1));
    println!("order {cancelled} cancelled: book {blandy} has 1 left again");
    store.db.close()?;

    // Reopened, everything committed is there.
    let store = Store::open_or_create(dir.path())?;
    let (db, books) = (store.db.clone(), &store.books);
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
    let orders: Vec<Order> = store
        .orders
        .scan_rows(Scan::all())?
        .collect::<Result<_, _>>()?;
    assert_eq!(orders.len(), 2);

    // A restock sets one named column (`UPDATE books SET qty = 5 WHERE id = ?`); the rest
    // of the row stays as it is. False would mean there was no such book.
    assert!(books.update_columns(rust_book, &[("qty", Value::from(5u32))])?);
    assert_eq!(store.stock(rust_book)?, Some(5));
    let report = db.check()?;
    println!(
        "check: {} rows in books, {} in orders",
        report.rows["books"], report.rows["orders"]
    );
    db.close()?;
    Ok(())
}
