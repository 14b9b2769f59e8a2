//! # minnow: the embedded API
//!
//! This crate is what an application links: a [`Database`] in a directory, tables with typed
//! columns, a clustered primary key and secondary indexes, point and range reads, and
//! explicit durability: the handles and the API of the reads and writes (keys, projections,
//! typed rows, the `Rows` iterator, transactions and their durability), each a thin wrapper
//! over the engine. Underneath it are the crates that do the work: the row engine
//! (`minnow-engine`: the open engine's state, opening a directory and recovery, DDL, the
//! bulk build of `create_index` and `load`, the reads themselves and their visibility check,
//! the row writes with their undo and locks, the locking reads, a transaction's bulk insert
//! into an empty table, `check`, rollback, purge, definitions, settings and errors), the
//! buffer pool and
//! mini-transactions (`minnow-buf`), the redo log (`minnow-redo`), the doublewrite buffer
//! (`minnow-dblwr`), B+trees (`minnow-btree`) and files (`minnow-io`).
//!
//! ```
//! use std::ops::Bound;
//! use minnow::{ColumnDef, ColumnType, Config, Database, Error, IndexDef, Scan, TableDef, Value};
//!
//! let dir = tempfile::tempdir()?;
//! let db = Database::create(dir.path(), Config::default())?;
//! let accounts = db.create_table(
//!     TableDef::new("accounts")
//!         .column(ColumnDef::new("id", ColumnType::U64))
//!         .column(ColumnDef::new("owner", ColumnType::Var(32)))
//!         .column(ColumnDef::new("balance", ColumnType::I64))
//!         .primary_key(&["id"])
//!         .index(IndexDef::unique("by_owner", &["owner"])),
//! )?;
//! accounts.insert(&[Value::UInt(1), Value::Bytes(b"ada".to_vec()), Value::Int(100)])?;
//! accounts.insert(&[Value::UInt(2), Value::Bytes(b"bob".to_vec()), Value::Int(5)])?;
//! let dup = accounts.insert(&[Value::UInt(3), Value::Bytes(b"ada".to_vec()), Value::Int(0)]);
//! assert!(matches!(dup, Err(Error::DuplicateKey { ref index, .. }) if index == "by_owner"));
//!
//! accounts.update(&[Value::UInt(2), Value::Bytes(b"bob".to_vec()), Value::Int(7)])?;
//! let bob = Bound::Included(vec![Value::Bytes(b"bob".to_vec())]);
//! let rows: Vec<_> = accounts
//!     .scan_index("by_owner", Scan::range(bob.clone(), bob).columns(&["balance"]))?
//!     .collect::<Result<_, _>>()?;
//! assert_eq!(rows, [vec![Value::Int(7)]]);
//! db.check()?;
//! db.close()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Typed rows
//!
//! Rows are lists of [`Value`]s, one per column in table order, which convert from and to
//! Rust types ([`Value::as_str`], `Value::from(7u32)`, [`FromValue`]). An application
//! usually reads and writes its own structs instead: `#[derive(Row)]` (feature `derive`, on
//! by default) maps a struct's fields to columns by name, tuples map by position, and
//! [`Table::get_row`], [`Table::scan_rows`], [`Table::insert_row`], [`Table::update_row`]
//! and their [`Transaction`] twins take them. Every call that takes a key takes a typed one
//! ([`ToKey`]: `get_row(7u64)`, `get_row(("oslo", 3u32))`, `delete(7u64)`,
//! `update_columns(7u64, ...)`, `get_by("by_isbn", "978-0")`), or values as before
//! (`&[Value::UInt(7)]`). A struct's reads project exactly its columns. The [`row`]
//! module explains the mapping; values print readably (text as text, other bytes as hex)
//! in `Debug`, `Display` and the errors that name a key.
//!
#![cfg_attr(feature = "derive", doc = "```")]
#![cfg_attr(not(feature = "derive"), doc = "```ignore")]
//! use minnow::{ColumnDef, ColumnType, Config, Database, Row, TableDef};
//!
//! #[derive(Row, Debug, PartialEq)]
//! struct Account { id: u64, owner: String, balance: i64 }
//!
//! let dir = tempfile::tempdir()?;
//! let db = Database::create(dir.path(), Config::default())?;
//! let accounts = db.create_table(TableDef::new("accounts")
//!     .column(ColumnDef::new("id", ColumnType::U64))
//!     .column(ColumnDef::new("owner", ColumnType::Var(32)))
//!     .column(ColumnDef::new("balance", ColumnType::I64))
//!     .primary_key(&["id"]))?;
//! accounts.insert_row(&Account { id: 1, owner: "ada".into(), balance: 100 })?;
//! let mut tx = db.begin()?;
//! let mut ada: Account = tx.get_row_for_update(&accounts, 1u64)?.unwrap();
//! ada.balance -= 30;
//! tx.update_row(&accounts, &ada)?;
//! tx.commit()?;
//! assert_eq!(accounts.get_row::<Account>(1u64)?.map(|a| a.balance), Some(70));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## What this crate exposes
//!
//! The crate root is the embedding API: the handles, definitions, values, errors, settings
//! and reports above, and the few lower-crate types that are part of them, re-exported one
//! by one ([`PageSize`], [`DoublewriteMode`], [`FlushMethod`], [`FlushAtCommit`],
//! [`Durability`], [`LockStats`], ...). The lower crates themselves are not
//! re-exported. The modules that explain a feature hold its less common types: [`row`] (the
//! typed-row traits' helpers), [`autoinc`], [`compression`], [`status`], [`purge`] and
//! [`history`] (a row's version chain, and the [`history::ReadView`] a transaction reads
//! with, for teaching MVCC). Three modules hold the rest:
//!
//! - [`backend`]: the IO backends [`Config::io_backend`] can name, among them the crash
//!   simulator and the latency model;
//! - [`cause`]: the lower layers' errors some [`Error`] variants carry;
//! - [`inspect`]: for tools and tests only, and free to change: the dictionary's layout and
//!   decoder, the system constants and file names, and [`inspect::Internals`] (the buffer
//!   pool of a running database). A tool that reads pages, records or undo depends on the
//!   lower crates directly.
//!
//! ```compile_fail
//! // The buffer pool crate is not re-exported: a tool names `minnow_buf` itself.
//! fn stats(pool: &minnow::buf::BufferPool) {}
//! ```
//!
//! ## Column types and large rows
//!
//! Columns are signed and unsigned 8- to 64-bit integers, `Fixed(n)` (CHAR/BINARY), `Var(n)`
//! (VARCHAR/VARBINARY, n ≤ 16383), DOUBLE, DATE, DATETIME (microseconds), BLOB and TEXT (up to
//! 4 GiB − 1 bytes), each nullable or not. Keys compare as bytes in an order-preserving
//! encoding; collation is **binary** (TEXT compares by its UTF-8 bytes). DOUBLE rejects NaN and
//! stores `-0.0` as `0.0`. BLOB and TEXT cannot be key columns of any index.
//!
//! A row too big for about half a page moves its longest variable-length columns to overflow
//! pages (InnoDB's DYNAMIC format, `docs/FORMAT.md` §5.3), in the same mini-transaction as the
//! row itself ([`Table::load`] moves the same columns, writing each row's pages in a
//! mini-transaction before the page that holds the row, all unreachable until the load's
//! commit point); reads fetch them only when the requested columns include them. One row's
//! overflow pages must fit in a quarter of the buffer pool and their redo in a quarter of the
//! log, or the statement fails with [`Error::RowTooLarge`].
//!
//! ```
//! use minnow::{ColumnDef, ColumnType, Config, Database, Scan, TableDef, Value};
//!
//! let dir = tempfile::tempdir()?;
//! let db = Database::create(dir.path(), Config::default())?;
//! let files = db.create_table(
//!     TableDef::new("files")
//!         .column(ColumnDef::new("name", ColumnType::Var(100)))
//!         .column(ColumnDef::new("modified", ColumnType::DateTime))
//!         .column(ColumnDef::new("body", ColumnType::Blob))
//!         .primary_key(&["name"]),
//! )?;
//! let body: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
//! let when = Value::datetime((2024, 2, 29), (12, 0, 0), 0)?;
//! files.insert(&[Value::text("a.bin"), when.clone(), Value::Bytes(body.clone())])?;
//! let row = files.get(&[Value::text("a.bin")])?.unwrap();
//! assert_eq!(row[2], Value::Bytes(body));
//! // Listing names and dates reads no overflow page.
//! let listing: Vec<_> = files.scan(Scan::all().columns(&["name", "modified"]))?
//!     .collect::<Result<_, _>>()?;
//! assert_eq!(listing, [vec![Value::text("a.bin"), when]]);
//! assert!(db.check()?.overflow_pages > 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## The data directory
//!
//! | file | what |
//! |---|---|
//! | `ibdata1` | the system tablespace (space id 0): page 0 (FSP header and the page allocator), page 1 (the first INODE page), the dictionary B-tree (root page 2), the undo log, and every uncompressed table's indexes |
//! | `zip8k_zlib-6.ibd`, `zip4k_lz4.ibd`, ... | shared compressed tablespaces, one per block size and algorithm, created by the first compressed table that needs one: every index of every table with that setting (see "Compressed tables") |
//! | `ib_logfile0` | the circular redo log (`innodb_log_file_size`; grows to its capacity as redo reaches it) |
//! | `dblwr.0`, `dblwr.1`, ... | doublewrite segments, a pair per page cleaner plus a pair for user-thread flushes (two batches in flight per flusher) |
//! | `ib_buffer_pool` | the buffer pool dump, written at close and loaded at open |
//!
//! One system tablespace holds everything else (InnoDB's `innodb_file_per_table=OFF`);
//! a tablespace per table needs a tablespace registry in the dictionary and comes later.
//!
//! ## Compressed tables
//!
//! [`TableDef::compressed`] makes a table `ROW_FORMAT=COMPRESSED`: each 16 KiB page of its
//! indexes is stored compressed into a block of `KEY_BLOCK_SIZE` (1, 2, 4 or 8 KiB, smaller
//! than the page) with zlib (level 1-9, default 6) or LZ4 ([`Compression`]). Reads inflate a
//! page into the buffer pool, which keeps recently used blocks too, so a page evicted as a
//! frame can come back without IO; every mini-transaction that changes a page checks that it
//! still fits its block (a **compression failure** otherwise, counted in
//! [`Database::status`]).
//!
//! **Where the pages go.** A tablespace file is an array of slots of one size, so a file
//! cannot mix 8 KiB blocks with 4 KiB ones, nor with the 16 KiB pages of `ibdata1`. minnow
//! keeps one **shared compressed tablespace per (block size, algorithm)**, like a MySQL
//! general tablespace created with `FILE_BLOCK_SIZE=8192`, which holds exactly the tables of
//! `KEY_BLOCK_SIZE=8`: `zip8k_zlib-6.ibd` holds every index (clustered, secondary, and their
//! overflow pages) of every table compressed into 8 KiB zlib-6 blocks. The file is created
//! by the first `create_table` that needs it and is durable, page 0 and directory entry,
//! before anything refers to it (it is written under a temporary name, `….ibd.creating`,
//! renamed once durable; `open` removes such a leftover of a crash, with a note); `open` registers every `zip*.ibd` before recovery, since redo
//! and the doublewrite buffer may name its pages. The dictionary, the undo log and
//! uncompressed tables stay in `ibdata1`. The `compression` module docs say more.
//!
//! ```
//! use minnow::{ColumnDef, ColumnType, Compression, Config, Database, KeyBlockSize, TableDef, Value};
//!
//! let dir = tempfile::tempdir()?;
//! let db = Database::create(dir.path(), Config::default())?;
//! let notes = db.create_table(TableDef::new("notes")
//!     .column(ColumnDef::new("id", ColumnType::U64))
//!     .column(ColumnDef::new("body", ColumnType::Var(200)))
//!     .primary_key(&["id"])
//!     .compressed(Compression::default()))?;   // KEY_BLOCK_SIZE=8, zlib level 6
//! for i in 0..500u64 {
//!     notes.insert(&[Value::UInt(i), Value::text(&format!("note {i}: nothing much happened today"))])?;
//! }
//! assert!(dir.path().join("zip8k_zlib-6.ibd").exists());
//! db.close()?;
//!
//! let db = Database::open(dir.path(), Config::default())?;
//! let notes = db.table("notes")?;
//! assert_eq!(notes.compression(), Some(Compression::default()));
//! assert_eq!(notes.get(&[Value::UInt(7)])?.map(|r| r.len()), Some(2));
//! let zip = &db.status()?.compression.tablespaces[0];
//! assert_eq!((zip.file.as_str(), zip.block_size), ("zip8k_zlib-6.ibd", KeyBlockSize::K8));
//! assert!(zip.stats.decompress_ops > 0);
//! db.check()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A change after which a page no longer compresses into its block (a **compression
//! failure**) is undone and the page is reorganized or split, then the change is made again
//! (`minnow_btree::tree::zip`); indexes that fail often get InnoDB's padding
//! ([`Config::compression_failure_threshold_pct`], [`Config::compression_pad_pct_max`]). Only a
//! row whose own bytes do not compress into half a block even with its long columns
//! off-page fails, with [`Error::DoesNotCompress`], and is undone.
//!
//! ## The dictionary
//!
//! Table definitions live in a B-tree of the system tablespace (InnoDB's `SYS_TABLES`,
//! reduced to one record per table): key = the table name, value = the definition with each
//! index's id and root page, encoded as `schema::encode` documents. `create_table` first
//! creates the index trees (one mini-transaction each) and then inserts the dictionary record
//! in one more: that insert is the commit point. A crash before it leaves no table and a few
//! segments no record names, which `open` frees; a crash after it (once the statement's redo
//! is durable) leaves the whole table. `open` reads every record back.
//!
//! A table with an AUTO_INCREMENT column has one more small record, its counter's
//! high-water mark (key `"\0autoinc "` + the table name), updated through the same B-tree,
//! so through redo, ahead of the values handed out (see [`autoinc`]).
//!
//! `drop_table` and `drop_index` change the dictionary first (the commit point) and then give
//! the index trees' segments back to the tablespace, so their pages are reused and the file
//! stops growing; a pending-drop marker record makes the freeing restartable (the
//! engine crate's `ddl` module).
//! Reads take no lock, so one may still be walking a tree a drop frees: each read checks
//! afterwards whether its table was dropped or replaced meanwhile, and if so reports
//! [`Error::TableChanged`] instead of what it found on pages the drop gave back (a read
//! through a handle taken before a `load` or `create_index` follows the table's new
//! definition instead).
//!
//! ## Recovery
//!
//! `open` runs recovery through [`minnow_buf::BufferPool::recover`], in InnoDB's order:
//! **doublewrite repair** of torn pages first (redo records are edits of an intact page),
//! then **redo** from the last checkpoint, then flush and checkpoint. Then the dictionary is
//! read, and every transaction that had not committed is **rolled back** from its undo log
//! (see "Transactions").
//! [`Database::open_report`] says what happened.
//!
//! ## Handles and lifetime
//!
//! [`Database`] is a handle: `Clone` (one `Arc`), `Send + Sync`, and every clone is the same
//! open database. [`Table`], [`Transaction`] and [`Rows`] own a clone too and borrow nothing,
//! so an application can keep the database, its tables and even an open transaction in one
//! struct, or hand them to other threads:
//!
//! ```
//! use minnow::{ColumnDef, ColumnType, Config, Database, Table, TableDef, Value};
//!
//! struct Shop {
//!     db: Database,
//!     books: Table,
//! }
//!
//! let dir = tempfile::tempdir()?;
//! let db = Database::open_or_create(dir.path(), Config::default())?;
//! let books = db.create_table(TableDef::new("books")
//!     .column(ColumnDef::new("id", ColumnType::U64))
//!     .column(ColumnDef::new("stock", ColumnType::I64))
//!     .primary_key(&["id"]))?;
//! let shop = Shop { db, books };
//! let worker = {
//!     let books = shop.books.clone();
//!     std::thread::spawn(move || books.insert(&[Value::UInt(1), Value::Int(5)]))
//! };
//! worker.join().expect("the worker")?;
//! assert_eq!(shop.books.count()?, 1);
//! shop.db.close()?;                     // closes it for every handle...
//! assert!(matches!(shop.books.count(), Err(minnow::Error::Closed { .. }))); // ...this one too
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! - **clone**: another handle on the same engine (no new files, no second open).
//! - **close** ([`Database::close`], through any handle): closes the database for every
//!   handle. It waits for the statements that are changing pages, writes the auto-increment
//!   counters, flushes every page, checkpoints and lets go of the directory's `LOCK`, so the
//!   directory can be opened again at once. Afterwards every call through any handle is
//!   [`Error::Closed`] (a scan at its next row). A transaction still open then is neither
//!   committed nor rolled back by close: its changes and active undo log are on disk, and the
//!   next [`Database::open`] rolls it back as after a crash; dropping it later does not touch
//!   the closed engine. A statement waiting for a row lock when close runs fails with
//!   [`Error::Closed`] once its wait ends (at the latest after `lock_wait_timeout`), without
//!   changing anything more.
//! - **drop**: dropping the last handle (database, tables, transactions and scans
//!   together) without `close` closes the database the same way, ignoring errors; a
//!   handle still alive keeps the database open.
//!
//! ## Transactions
//!
//! [`Database::begin`] starts a [`Transaction`] (REPEATABLE READ; [`Database::begin_with`]
//! picks [`Isolation::ReadCommitted`]). Its reads see one snapshot, its writes become visible
//! to others at [`Transaction::commit`], which returns the [`Durability`] reached per
//! `flush_log_at_trx_commit`, and vanish at [`Transaction::rollback`] or when it is dropped
//! uncommitted. Its consistent reads ([`Transaction::get`], [`Transaction::scan`],
//! [`Transaction::count`]) take `&self`; writes and locking reads take `&mut self`.
//! [`Database::transaction`] runs a closure in a transaction and commits it, retrying on a
//! deadlock or lock wait timeout ([`Error::is_retryable`]).
//!
//! Every [`Table`] method is a transaction of its own (autocommit), made as durable as
//! [`Config::flush_log_at_trx_commit`] says before it returns, and returns what the same
//! statement returns inside a transaction: `()` for [`Table::insert`] and [`Table::update`],
//! whether a row was there for [`Table::delete`]. A transaction takes only its own
//! database's tables: a [`Table`] handle of another database is [`Error::ForeignTable`].
//!
//! **Durability** is chosen per database (`flush_log_at_trx_commit`), per transaction
//! ([`Transaction::commit_with`]: a bulk job commits without a sync, a payment with one) or
//! on demand ([`Database::sync`]: everything committed so far made durable at once).
//!
//! ```
//! use minnow::{ColumnDef, ColumnType, Config, Database, Error, TableDef, Value};
//! use std::time::Duration;
//!
//! let dir = tempfile::tempdir()?;
//! let config = Config { lock_wait_timeout: Duration::from_millis(50), ..Config::default() };
//! let db = Database::create(dir.path(), config)?;
//! let t = db.create_table(TableDef::new("acct")
//!     .column(ColumnDef::new("id", ColumnType::U64))
//!     .column(ColumnDef::new("balance", ColumnType::I64))
//!     .primary_key(&["id"]))?;
//! t.insert(&[Value::UInt(1), Value::Int(100)])?;
//! t.insert(&[Value::UInt(2), Value::Int(0)])?;
//!
//! let mut reader = db.begin()?;                 // REPEATABLE READ
//! let before = reader.get(&t, &[Value::UInt(1)])?;
//!
//! let mut tx = db.begin()?;
//! tx.update(&t, &[Value::UInt(1), Value::Int(70)])?;
//! tx.update(&t, &[Value::UInt(2), Value::Int(30)])?;
//! // Not committed: nobody else sees it, and a second writer of row 1 would wait for the
//! // row's lock (here, with a short lock_wait_timeout, until it gives up).
//! assert_eq!(t.get(&[Value::UInt(1)])?, Some(vec![Value::UInt(1), Value::Int(100)]));
//! assert!(matches!(t.delete(&[Value::UInt(1)]), Err(Error::LockWaitTimeout { .. })));
//! tx.commit()?;
//!
//! assert_eq!(t.get(&[Value::UInt(2)])?, Some(vec![Value::UInt(2), Value::Int(30)]));
//! // The reader's snapshot was taken before the commit: it still sees the old balance.
//! assert_eq!(reader.get(&t, &[Value::UInt(1)])?, before);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! How it works (the `minnow_mvcc` crate docs draw it): every change writes an undo record
//! first and stamps the row with the writer's transaction id and a roll pointer to that
//! record; a reader whose read view cannot see the writer rebuilds the older version from
//! undo. A delete only delete-marks the row and its index entries; secondary indexes keep an
//! entry for every version (old ones delete-marked). What each isolation level prevents is
//! the table on [`Isolation`]: dirty writes and dirty reads never happen, REPEATABLE READ also
//! prevents fuzzy reads, read skew and phantoms for its (snapshot) reads, and lost updates and
//! write skew are possible at both levels, as in InnoDB without locking reads; a read-modify-write
//! that reads with [`Transaction::get_for_update`] (`SELECT ... FOR UPDATE`: the row's lock, then
//! its latest committed version) loses no update. So does [`Table::update_columns`]
//! ([`Transaction::update_columns`]): `UPDATE ... SET stock = 4 WHERE id = ?` sets the named
//! columns in the row's latest version, read under the row's lock.
//!
//! [`Table::history`] shows a row's **version chain**, newest first: who wrote each version
//! (committed or still active), its roll pointer, the undo record kind and delete mark, and
//! why the chain ends; the [`history`] module draws it, and `minnow history` reads the same
//! chain from the files of a stopped or running database.
//!
//! **Atomicity.** A statement that fails halfway rolls back to its start through the undo
//! log (a savepoint), inside a transaction or alone. The commit point of a transaction is
//! the mini-transaction that marks its undo log committed; after a crash, `open` rolls back
//! every transaction whose log was still active, newest change first, before the database is
//! used ([`OpenReport::rolled_back`]), so committed transactions are complete and
//! uncommitted ones leave no trace in any index.
//!
//! **Concurrency.** Writers of different rows run at the same time, in one table or several:
//! nothing database-wide serialises them but the redo log's append and the transaction id
//! counter at begin and commit (undo goes to 16 rollback segments, each with its own mutex). A write statement holds its table's metadata lock shared (DDL and `Table::load`
//! take it exclusively, so they wait for running statements and statements wait for them),
//! and the row locks of what it changes; purge runs beside writers, taking each row's lock
//! while it cleans that row. Readers take no lock. Writers lock every row they change (and every unique key
//! they insert) until their transaction ends; a writer that meets a row another uncommitted
//! transaction holds waits for it, with its statement's latches let go, up to
//! [`Config::lock_wait_timeout`] ([`Error::LockWaitTimeout`]: its statement is rolled back); a
//! wait that would close a cycle makes the youngest transaction in it the victim
//! ([`Error::Deadlock`]: its whole transaction is rolled back). Under REPEATABLE READ the
//! locking reads ([`Transaction::get_for_update`], [`Transaction::scan_for_update`]) also
//! lock the gaps they read, as InnoDB's next-key locks do, and an insert waits while another
//! transaction locks its gap: a locking read finds no phantom. Inserts of new records into
//! one gap (appends at the end of a table) take turns for the length of one B-tree insert;
//! inserts into different gaps do not (the engine's `write` gaps module).
//! [`Table::insert_many`] runs one transaction per row (each row atomic, the statement stops
//! at its first failing row).
//!
//! **Secondary-index reads** use InnoDB's per-page shortcut: every change a transaction makes
//! to a secondary-index leaf raises the leaf's `PAGE_MAX_TRX_ID` to its id (in the same
//! mini-transaction, so it is redo-logged; splits and merges carry it). A consistent read
//! whose view sees every transaction up to a leaf's value uses the leaf's entries as they
//! are, so a covering read stays covering however busy other leaves of the index are;
//! otherwise it checks each entry against the clustered record's visible version.
//! [`RowStatus`] counts both (`sec_cluster_reads`, `sec_cluster_reads_avoided`).
//! [`Table::get_by`] ([`Transaction::get_by`]) reads one row by the key of a unique secondary
//! index the same way, past the delete-marked entries the index keeps for old versions.
//!
//! **Purge.** Delete-marked rows (with their overflow pages), old secondary entries and
//! committed undo are removed once no open read view can need them: by a background thread
//! ([`Config::purge_threads`], default 1) or by [`Database::purge`]. Purge waits for the
//! oldest open read view, so a transaction left open holds back purge of everything committed
//! after its snapshot; the history list length in [`Database::status`] shows it. Undo pages
//! purge frees are reused. See the [`purge`] module.
//!
//! **Not built yet**: `create_index` on a table with transactions in
//! flight builds from the latest state (its leaves are stamped so that views older than the
//! build check every entry against the row, but a row whose latest version was deleted or
//! changed its key has no entry for the version an older view sees: InnoDB refuses such
//! views the new index instead).
//!
//! ## Bulk operations
//!
//! [`Table::load`] fills an empty table from rows in primary key order and
//! [`Database::create_index`] adds a secondary index to a populated table; both build their
//! B-trees bottom-up ([`minnow_btree::tree::BulkBuilder`], pages filled to 15/16) instead of
//! inserting row by row; `load` moves long columns to overflow pages as `insert` does. Scans go forward or backward ([`Scan::reverse`]) and take key
//! prefixes as bounds.
//!
//! ## Auto-increment
//!
//! A column made with [`ColumnDef::auto_increment`] hands out 1, 2, 3, ... to rows that insert
//! NULL or 0 into it; [`Table::insert_returning_id`] and [`Table::insert_many`] say which
//! values a statement got ([`Inserted`]), and [`Transaction::insert_returning_id`] which
//! value a row got inside a transaction. [`Config::autoinc_lock_mode`] picks InnoDB's lock
//! mode, 0 traditional, 1 consecutive or 2 interleaved (the default, as MySQL 8.0), and the
//! counter lives in the dictionary, so it survives restarts and crashes without ever handing
//! out an acknowledged value again. The engine crate's `autoinc` module (`minnow-engine`)
//! explains the modes and what each changes; [`autoinc`] holds what a statement reports.
//!
//! ```
//! use minnow::{AutoIncLockMode, ColumnDef, ColumnType, Config, Database, TableDef, Value};
//!
//! let dir = tempfile::tempdir()?;
//! let config = Config { autoinc_lock_mode: AutoIncLockMode::Traditional, ..Config::default() };
//! let db = Database::create(dir.path(), config.clone())?;
//! let log = db.create_table(TableDef::new("log")
//!     .column(ColumnDef::new("id", ColumnType::U64).auto_increment())
//!     .column(ColumnDef::new("msg", ColumnType::Text))
//!     .primary_key(&["id"]))?;
//! let batch = log.insert_many((0..3).map(|i| vec![Value::Null, Value::text(&format!("m{i}"))]))?;
//! assert_eq!(batch.generated, [1, 2, 3]);
//! log.delete(&[Value::UInt(3)])?;
//! db.close()?;
//!
//! // The counter came back from the dictionary: 3 is not handed out again.
//! let db = Database::open(dir.path(), config)?;
//! let id = db.table("log")?.insert_returning_id(&[Value::Null, Value::text("m3")])?.id();
//! assert_eq!(id, Some(4));
//!
//! // An explicit value moves the counter past it; 0, like NULL, asks for the next value.
//! let log = db.table("log")?;
//! log.insert(&[Value::UInt(10), Value::text("explicit")])?;
//! assert_eq!(log.insert_returning_id(&[Value::UInt(0), Value::text("m11")])?.id(), Some(11));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Async services (feature `tokio`)
//!
//! With the crate feature `tokio`, `AsyncDatabase` wraps a `Database` for services built on
//! tokio. The engine blocks (page reads, log syncs), so its calls must not run on the async
//! worker threads: each call runs on tokio's blocking pool, and scans stream rows in batches
//! through a bounded channel (`RowStream`), so a large scan neither blocks a worker nor
//! holds the table in memory. The module docs of `async_db` explain the design;
//! `examples/kv_service.rs` is a small TCP key-value service built on it.
//!
//! ## Not built yet
//!
//! Locking reads through a secondary index (gap locks are on the clustered index only);
//! SERIALIZABLE; `ALTER TABLE` beyond
//! `create_index` and `drop_index`; a tablespace per table; `auto_increment_increment` and
//! `_offset`; prefix keys on
//! BLOB/TEXT columns; the `innodb_*` knobs the lower crates do not implement yet (adaptive
//! compression, write IO threads).
//!
//! ## Platform
//!
//! Linux only (tested on x86_64): the engine calls io_uring, `O_DIRECT` and `O_DSYNC`,
//! `fallocate(2)` and `flock(2)` directly and does not build on macOS or Windows (docs.rs
//! builds the Linux target only). Rust 1.89 or later (`rust-version`).

#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]
#![deny(unsafe_code)]
// docs.rs (nightly, `--cfg docsrs`) marks feature-gated items such as `AsyncDatabase` with the
// feature they need; stable builds never see the attribute.
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "tokio")]
mod async_db;
pub mod autoinc {
    //! AUTO_INCREMENT columns: what an insert statement says it generated ([`Inserted`]) and a
    //! table's counter ([`AutoIncStatus`]).
    //!
    //! The crate docs ("Auto-increment") show the column in use. The counter itself, the
    //! AUTO-INC table lock, the three `innodb_autoinc_lock_mode`s ([`crate::AutoIncLockMode`])
    //! and how the counter survives a crash (its high-water mark in the dictionary, written
    //! [`PERSIST_AHEAD`] values ahead) are the engine crate's `autoinc` module
    //! (`minnow-engine`).

    pub use minnow_engine::autoinc::{AutoIncStatus, Inserted, PERSIST_AHEAD};
}
pub mod backend;
pub mod cause;
mod compact;
pub mod compression;
use minnow_engine::config;
mod db;
use minnow_engine::dict;
mod durable;
use minnow_engine::error;
mod handle;
pub mod history;
pub mod inspect;
pub mod purge {
    //! Purge: removing what no reader can need any more (delete-marked records, old
    //! secondary entries, committed undo), in the background (`Config::purge_threads`) or
    //! now ([`crate::Database::purge`]). Purge itself is the engine crate's `purge` module
    //! (`minnow-engine`), whose docs explain when a version may go and what purging one
    //! undo log does.

    pub use minnow_engine::purge::{BATCH_LOGS, IDLE_WAIT, PurgeReport};
}
pub mod row;
mod runtime;
use minnow_engine::schema;
#[cfg(test)]
mod dict_tests;
pub mod status;
mod table;
mod trx;
#[cfg(test)]
mod walk_tests;

#[cfg(feature = "tokio")]
pub use async_db::{AsyncDatabase, DEFAULT_BATCHES, DEFAULT_ROWS_PER_BATCH, RowStream};
pub use autoinc::{AutoIncStatus, Inserted};
pub use compact::CompactReport;
pub use compression::Compression;
pub use config::{
    Acts, AutoIncLockMode, Config, DEFAULT_REDO_CAPACITY, IoBackend, KNOBS, Knob, KnobError,
    MIN_LOG_FILE_SIZE,
};
pub use db::Database;
pub use error::{Error, Result};
pub use handle::{TRANSACTION_RETRIES, TransactionOptions};
pub use history::{ChainEnd, RowHistory, RowVersion, Writer};
pub use minnow_btree::record::{ColumnType, Date, DateTime, Value};
pub use minnow_btree::tree::ZipIndexStats;
/// `#[derive(Row)]`: [`ToRow`] and [`FromRow`] for a struct with named fields (the
/// [`row`] module docs show it; feature `derive`, on by default).
#[cfg(feature = "derive")]
pub use minnow_derive::Row;
pub use minnow_engine::admission::AdmissionStats;
pub use minnow_engine::{CheckReport, OpenReport};
pub use minnow_zip::{Algorithm as ZipAlgorithm, KeyBlockSize, ZipStats, ZlibLevel};
pub use purge::PurgeReport;
pub use row::{FromRow, FromValue, FromValueError, ToKey, ToRow, ToValue};
pub use schema::{ColumnDef, IndexDef, MAX_NAME_LEN, PRIMARY, TableDef};
pub use status::{
    BufferPoolStatus, CompressionStatus, DoublewriteStatus, RedoStatus, RowStatus, STATUS_FILE,
    Status, TransactionStatus, ZipSpaceStatus,
};
pub use table::TypedRows;
pub use table::{RowView, Rows, Scan, Table};
pub use trx::{Isolation, Transaction};

// Services share one `Database` between threads (and `AsyncDatabase` moves it to tokio's
// blocking pool), and own its handles in their structs: a change that made one of them
// borrow (not `'static`), `!Send` or `!Sync` must fail to compile here.
const _: () = {
    const fn send_sync<T: Send + Sync + 'static>() {}
    const fn send<T: Send + 'static>() {}
    send_sync::<Database>();
    send_sync::<Table>();
    send_sync::<Transaction>();
    send::<Rows>();
    send_sync::<Error>();
};

// The lower crates' types that appear in this crate's own API (settings in `Config`, what
// statistics and commits return), one by one: the crates themselves are not re-exported.
// IO backends are in `backend`, the causes an `Error` carries in `cause`, tool-only items in
// `inspect`.
pub use minnow_ahi::AhiStats;
pub use minnow_buf::{FlushNeighbors, RecoveryProgress, RecoveryProgressHook, ZipCacheStats};
pub use minnow_dblwr::DoublewriteMode;
pub use minnow_io::FlushMethod;
pub use minnow_mvcc::LockStats;
pub use minnow_page::PageSize;
pub use minnow_page::checksum::ChecksumAlgorithm;
pub use minnow_redo::{Durability, FlushAtCommit};
