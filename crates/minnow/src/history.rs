//! Version chains: every version of one row that the undo store still describes, newest
//! first ([`crate::Table::history`], [`RowHistory`]).
//!
//! ## What a version chain is
//!
//! A row lives in exactly one place, its clustered record, and that record always holds the
//! **newest** version, committed or not. Every clustered record also carries two hidden
//! columns: `DB_TRX_ID`, the transaction that wrote this version, and `DB_ROLL_PTR`, the
//! address of the undo record that describes how to get the version before it. Following
//! roll pointers from the record walks back through time:
//!
//! ```text
//!   clustered record            undo store (append-only)
//!   ┌──────────────────────┐
//!   │ id 1 | T12 | ptr ────┼──► update undo: old values (1, "b", 80), old T9,  old ptr ──┐
//!   │ "b" | 70             │                                                            │
//!   └──────────────────────┘    ┌───────────────────────────────────────────────────────┘
//!                               └► update undo: old values (1, "a", 100), old T5, old ptr ─┐
//!                                                                                           │
//!                               ┌───────────────────────────────────────────────────────────┘
//!                               └► insert undo (T5 inserted the row): nothing older
//!
//!   the chain, newest first:  (1,"b",70) by T12  ·  (1,"b",80) by T9  ·  (1,"a",100) by T5
//! ```
//!
//! Each update undo record holds the **whole old version** (minnow's update undo is not a
//! diff, so rebuilding a version is one decode, not a replay) together with the old
//! `DB_TRX_ID` and `DB_ROLL_PTR`: the rebuilt version carries its own roll pointer, and the
//! walk goes on from there. A delete-mark changes no field, so its undo record holds the key
//! and the old system columns alone: the older version is the newer one's fields with those
//! (the walk always has the newer version in hand). A reader whose read view cannot see `T12` rebuilds `T9`'s version; if it
//! cannot see `T9` either, `T5`'s; this is how consistent reads work
//! (`read::visible` in `minnow-engine`, through the engine's `history::older`, the one step both take).
//!
//! ## Where a chain ends
//!
//! - **at an insert undo record** ([`ChainEnd::Inserted`]): the roll pointer's insert flag
//!   says the version was created by an insert; before it the row did not exist.
//! - **at a row without undo** ([`ChainEnd::NoUndo`]): rows written by a bulk load
//!   (`Table::load`) carry `DB_TRX_ID` 0 and the roll pointer `1 << 55`, "inserted, no
//!   history" (MariaDB writes the same for rows whose history purge removed).
//! - **at a version whose undo is gone** ([`ChainEnd::UndoGone`]): the roll pointer names
//!   an address that no longer holds an undo record of this row (the page is no longer an
//!   undo page, the offset is past the page's used bytes, or the record there belongs to
//!   another row). Purge, which frees undo that no read view needs, will make this normal
//!   for old rows; until purge exists it means the undo was damaged.
//!
//! ## Delete marks and the writer's state
//!
//! A delete does not remove the record: it sets its **delete mark** and writes a
//! delete-mark undo record holding the row as it was. So a deleted row still has a chain,
//! whose newest version is delete-marked. Each version also says whether its writer is still
//! **active** (its changes are visible to nobody else yet and would be undone by a rollback,
//! or by the rollback at the next open after a crash) or **committed**.
//!
//! Reading a chain writes nothing and takes no lock: [`crate::Table::history`] reads through
//! the buffer pool of an open database, and [`chain_from_record`] reads through any
//! `minnow_mvcc::PageSource`, which is how `minnow history` reads the files of a stopped or
//! running database without opening it. The walk itself is the engine's (`minnow-engine`'s
//! `history` module): consistent reads, rollback and purge take the same steps.
//!
//! Which version a reader gets is its [`ReadView`]'s choice: [`RowHistory::seen_by`] picks
//! it for the view [`crate::Transaction::read_view`] returns (the `tour_mvcc` example
//! prints both).

/// A transaction's snapshot ([`crate::Transaction::read_view`]), which
/// [`RowHistory::seen_by`] takes: the MVCC engine's own type, here for showing which version
/// of a chain a reader sees.
pub use minnow_mvcc::ReadView;

pub use minnow_engine::history::{
    ChainEnd, RollPtr, RowHistory, RowVersion, UndoKind, Writer, chain_from_record, kind_name,
};
