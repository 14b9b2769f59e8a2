//! The read-only inspector: commands that look inside files without ever writing to them.
//!
//! A tablespace file (minnow's own, or a real InnoDB / MariaDB `.ibd`) or a minnow database
//! directory is read page by page, every page's checksum checked before its contents are
//! believed; nothing is opened through the engine (opening runs recovery, which writes) and
//! no lock is taken, so every command here is safe on a live database and on a damaged one.
//!
//! On one file:
//!
//! - [`verify`]: `minnow verify FILE...`, every page's checksum, like `innochecksum`;
//! - [`inspect`]: `minnow inspect FILE`, a tablespace at a glance (page types, LSNs, indexes,
//!   space usage, a page map);
//! - [`page`]: `minnow page FILE N`, one page field by field (with the records of an INDEX
//!   page, the undo and TRX_SYS pages, compressed blocks and pages).
//!
//! On a database directory:
//!
//! - [`tree`]: `minnow tree DIR TABLE`, one index's B-tree level by level (Graphviz, SVG);
//! - [`log`]: `minnow log DIR`, the redo log's header, checkpoints and records;
//! - [`dblwr`]: `minnow dblwr DIR`, the doublewrite segments against the data file;
//! - [`history`]: `minnow history DIR TABLE KEY`, one row's version chain through the undo
//!   pages;
//! - [`status`]: `minnow status DIR`, the engine's counters from the status file a running
//!   database writes, or from the files at rest;
//! - [`watch`]: `minnow watch DIR`, those counters as rates, one line per interval.
//!
//! Exit status: 0 all checked is fine, 1 something is corrupt (named), 2 usage or IO error.

pub mod dblwr;
pub mod history;
pub mod inspect;
pub mod log;
pub mod page;
pub mod status;
pub mod tree;
pub mod verify;
pub mod watch;
