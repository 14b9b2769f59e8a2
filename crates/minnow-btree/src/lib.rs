//! # minnow-btree: the B+tree
//!
//! This crate is minnow's B+tree, built bottom-up. First the layer that works on the bytes of
//! **one** page:
//!
//! - [`record`]: the record format (ours, modelled on InnoDB's COMPACT): a column schema,
//!   [`record::RecordLayout`] for clustered leaves, secondary leaves and node pointers, an
//!   encoder, a checked decoder and a key comparator that counts matched fields;
//! - [`node`]: an INDEX page organised as InnoDB's: page header at InnoDB's offsets, record
//!   heap with free-list reuse, records linked in key order from infimum to supremum, a sparse
//!   page directory whose slots own 4 to 8 records, binary search over the slots, inserts,
//!   deletes, delete-marks, reorganization, split-point choice, record moves for splits and
//!   merges, and a [`node::check`] of every invariant;
//! - [`PageMut`]: the trait through which every page change is made, so that a
//!   mini-transaction can turn each one into a redo record;
//! - [`tree`]: the B+tree over the buffer pool built on that layer: [`BTree`] with point
//!   lookups, inserts, deletes, updates, delete-marks and range scans ([`RangeScan`]); shared
//!   latch coupling for readers, optimistic-then-pessimistic writers, splits at the insert
//!   point or in the middle, merges, root raise and lower, one mini-transaction per
//!   structural change, a simple page allocator in page 0, and [`BTree::check`].
//!
//! ```
//! use minnow_btree::node;
//! use minnow_btree::record::{Column, ColumnType, RecordLayout, Value};
//!
//! let layout = RecordLayout::clustered(
//!     vec![Column::new(ColumnType::U64)],
//!     vec![Column::nullable(ColumnType::Var(100))],
//! )?;
//! let mut page = vec![0u8; 16384];
//! node::init(&mut page, 42, 0)?;
//! for k in [3u64, 1, 2] {
//!     let rec = layout.encode(&[
//!         Value::UInt(k),
//!         Value::trx_id(7),
//!         Value::roll_ptr(1 << 55),
//!         Value::Bytes(format!("row {k}").into_bytes()),
//!     ])?;
//!     node::insert(&mut page, &layout, &rec)?;
//! }
//! node::check(&page, &layout)?;
//! let key = layout.search_key(&[Value::UInt(2)])?;
//! let found = node::search(&page, &layout, &key)?;
//! assert!(found.exact);
//! let values = layout.decode(&page, found.cursor.origin())?;
//! assert_eq!(values[3], Value::Bytes(b"row 2".to_vec()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]
#![deny(unsafe_code)]

pub mod node;
mod page_mut;
pub mod record;
pub mod space;
pub mod tree;

pub use page_mut::{CountingPage, PageMut};
pub use tree::{
    BTree, Entry, LeafRecord, RangeCursor, RangeScan, ScanRange, TreeError, TreeStats, Visit,
};
