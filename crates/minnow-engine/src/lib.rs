//! # minnow-engine: the row engine under the embedded API
//!
//! The `minnow` crate is what an application links: `Database`, `Table`, `Transaction`,
//! typed rows. This crate is the layer it stands on, the part of the engine that knows about
//! **tables and rows** rather than pages: what a table is, how the dictionary stores it, what
//! the settings mean and what can go wrong. Below it, the storage crates know only pages,
//! trees, undo and redo.
//!
//! ```text
//!   application
//!       │
//!   minnow            Database, Table, Transaction, Rows, typed rows, AsyncDatabase
//!       │             (handles, the API of the reads and writes, durability)
//!   minnow-engine     the open engine's state (Engine, table entries, the table
//!       │             cache, admission, auto-increment); building it from a directory
//!       │             and recovery, close; DDL; the bulk build; the reads and their
//!       │             visibility check; the row writes with undo and locks, the
//!       │             locking reads, a transaction's bulk insert; check; rollback;
//!       │             purge; the row steps these share; table definitions and the
//!       │             dictionary's records, version chains, Config and its knobs,
//!       │             compressed-tablespace placement, status reports, Error
//!       ├──────────────────┬──────────────────┐
//!   minnow-btree      minnow-mvcc        minnow-buf         B+trees and records; undo, read
//!       │                  │                  │             views, row locks; buffer pool,
//!       │                  │                  │             mini-transactions, recovery
//!   minnow-redo       minnow-dblwr       minnow-io          redo log; doublewrite buffer;
//!       │                  │                  │             files and IO backends
//!   minnow-page (+ minnow-zip, minnow-ahi)                   page formats, checksums,
//!                                                            compression, adaptive hash
//! ```
//!
//! Each layer uses only the layers under it: nothing here names a `Database` or a handle,
//! and the `minnow` crate re-exports the items of this one that are part of its API one by
//! one ([`Error`], [`Config`], [`TableDef`], ...), never the crate itself.
//!
//! ## The modules
//!
//! - [`schema`]: [`TableDef`], [`ColumnDef`], [`IndexDef`], a definition's validation and its
//!   resolution into record layouts ([`schema::TableMeta`]), and the dictionary record's
//!   encoding.
//! - [`dict`]: where the dictionary lives in the system tablespace (file names, fixed pages
//!   and ids) and the layout of its records.
//! - [`config`]: [`Config`], every setting with its InnoDB name, and the knob registry that
//!   reads and prints them by name.
//! - [`compression`]: `ROW_FORMAT=COMPRESSED` ([`Compression`]) and the shared compressed
//!   tablespaces that hold such tables.
//! - [`history`]: version chains: the step back from a version to the one before it that
//!   consistent reads, rollback and purge share, bounded against corrupt undo, and a row's
//!   whole chain ([`history::RowHistory`]).
//! - [`status`]: the status snapshot ([`status::Status`]) and its JSON, the striped row
//!   counters, the status-file thread; [`purge`]: purge's report and counters.
//! - [`error`]: [`Error`], the one error type of the whole API, and how the lower crates'
//!   errors map into it.
//!
//! The open engine's state:
//!
//! - [`engine`]: [`Engine`], what one open database shares between its statements, its
//!   background threads and every handle on it (the buffer pool, the dictionary tree, the
//!   table cache, the transaction system and row locks, the latches, the closed flag), its
//!   fields private behind accessors, with the rules that span them: no change after close
//!   ([`Engine::write_latch`]) and close's order ([`Engine::close`]). The latch order is
//!   ARCHITECTURE.md's table ("The latch order"); the engine's latches are its rows 3, 4
//!   and 6.
//! - [`entry`]: [`TableEntry`], one open table (its trees, the flags a reader checks after
//!   a drop or a load, its metadata lock, count cache and auto-increment counter), opened
//!   from its dictionary record, and the adaptive hash index's hooks on its trees.
//! - [`table_cache`]: every open table's entry by name and by clustered index id.
//! - [`autoinc`]: AUTO_INCREMENT: the counter, the AUTO-INC lock, the lock modes, and the
//!   counter's record in the dictionary.
//! - [`admission`]: `innodb_thread_concurrency`'s door and its tickets.
//!
//! What the engine does with that state, each a function or an `impl Engine` block over it:
//!
//! - [`open`]: [`Engine::create`] and [`Engine::open`] build an engine from a directory
//!   (recovery in InnoDB's order: doublewrite repair, redo apply, the dictionary, the
//!   rollback of transactions a crash cut, the drops it cut short), returning an [`Opened`]
//!   (the engine, the directory's `LOCK`, the [`OpenReport`]); [`Engine::close`] tears it
//!   down.
//! - [`ddl`]: `CREATE TABLE`, `DROP TABLE`, `DROP INDEX`, the pending-drop markers that make
//!   a drop crash-safe, and how reads racing a drop stay correct.
//! - [`check`]: [`Engine::check`], every index and allocator verified ([`CheckReport`]).
//! - [`rollback`]: undoing a statement, a transaction, or one found active at open.
//! - [`purge`]: removing delete-marked records, old secondary entries and undo no read view
//!   needs, on the caller's thread or the background thread.
//! - [`read`]: the consistent reads, each a function of the engine and a table's entry that
//!   the `minnow` crate's `Table` and `Transaction` methods wrap: point reads by primary key
//!   ([`read::get`], the record read in place under the leaf latch), through a unique
//!   secondary index ([`read::by_index`]), streaming scans ([`read::scan`]), range reads in
//!   place ([`read::scan_with`]) and counts ([`read::count`]). Under them, the visibility
//!   check (a [`read::Snapshot`] and the version of a clustered record it sees,
//!   [`read::visible`], rebuilt from undo when the record is newer) and every read's
//!   validation against DDL ([`read::validated`]).
//! - [`mod@write`]: the row writes, each a function of the engine, a table's entry and the
//!   transaction's state ([`write::TrxState`]) that the `minnow` crate's `Table` and
//!   `Transaction` methods wrap: a write statement's latches ([`write::statement`],
//!   [`write::WriteGuard`]), insert, update and delete of one row with their undo records,
//!   unique checks and row locks ([`write::insert`], [`write::update`], [`write::delete`],
//!   [`write::update_columns`]), next-key and gap locks, the locking reads
//!   ([`write::get_for_update`], [`write::scan_for_update`], [`write::get_by_for_update`]),
//!   a statement's rollback to its savepoint, commit, and a transaction's bulk insert into
//!   an empty table, buffered and built at commit ([`write::BulkInsert`]).
//! - [`row`]: the steps row writes, rollback and purge share (a record, its lock key, the
//!   step back to an older version, the removal of a record with the gap locks it hands on).
//! - [`bulk`]: `CREATE INDEX` on a populated table and the load of an empty one, each
//!   built bottom-up from sorted rows, the dictionary update its commit point.
//! - [`claim`]: a bulk insert's claim on an empty table, and DDL's refusal of a claimed one.
//!
//! ## What the `minnow` crate adds
//!
//! `minnow` is the API: `Database` (a cheap clone of one handle that holds an
//! `Arc<Engine>`, the open report and the directory's `LOCK`), `Table`, `Transaction`,
//! `Rows`, typed rows, `AsyncDatabase`, the retries of `Database::transaction`, and
//! `minnow::inspect` for tools; the keys an application gives (`ToKey`, byte keys), the
//! `Scan` it describes and the `Rows` iterator that holds the database open. Its reads are
//! thin wrappers over [`read`], its writes and locking reads over [`mod@write`]: what a wrapper
//! adds is the handle (a table of this database, a transaction not yet ended), admission,
//! the row counters and the durability a commit reaches. It reaches the rest of the engine
//! through a few of [`Engine`]'s accessors (the buffer pool for durability and the status,
//! the transaction system for read views, the row locks' and the admission door's
//! counters, the table cache for the table names); the others are crate-private.
//!
//! ## Test hooks
//!
//! With the `test-hooks` feature (turned on only by the `minnow` crate's dev-dependency on
//! this one), the `hooks` module offers fixed points in the read and write paths where a test
//! pauses a thread, so that an interleaving (a rollback between a read and its visibility
//! decision) runs the same way every time. A normal build compiles neither the module nor a
//! call to it.

#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]
#![deny(unsafe_code)]

pub mod admission;
pub mod autoinc;
pub mod bulk;
pub mod check;
pub mod claim;
pub mod compression;
pub mod config;
pub mod ddl;
pub mod dict;
pub mod engine;
pub mod entry;
pub mod error;
pub mod history;
#[cfg(feature = "test-hooks")]
pub mod hooks;
pub mod mark;
pub mod open;
pub mod purge;
pub mod read;
pub mod rollback;
pub mod row;
pub mod schema;
pub mod status;
pub mod table_cache;
pub mod write;

pub use check::CheckReport;
pub use compression::Compression;
pub use config::Config;
pub use engine::Engine;
pub use entry::TableEntry;
pub use error::{Error, Result};
pub use open::{OpenReport, Opened};
pub use schema::{ColumnDef, IndexDef, TableDef};
