//! # `minnow`: look inside a tablespace file
//!
//! A storage engine's data file is just pages: 16 KiB blocks (by default), each framed by a FIL
//! header and trailer, each carrying a checksum. This tool reads such files, minnow's own and real
//! InnoDB / MariaDB `.ibd` files alike, **without ever writing to them**, and shows what is inside:
//!
//! - `minnow verify FILE...` checks every page's checksum, like MySQL's `innochecksum`
//!   ([`cmd::inspector::verify`]);
//! - `minnow inspect FILE` summarises a tablespace: page types, LSN range, B-tree indexes and a
//!   one-character-per-page map ([`cmd::inspector::inspect`]);
//! - `minnow page FILE N` decodes one page field by field, with an optional hex dump
//!   ([`cmd::inspector::page`]).
//!
//! All three also read minnow's **compressed tablespaces** (`zip8k_zlib-6.ibd` and the like: a
//! file of `KEY_BLOCK_SIZE` blocks, each a page compressed): every block is checked and inflated,
//! `inspect` adds the block size, algorithm and per-page compressed sizes, and `page` the block's
//! zip header ([`space`] explains how such a file is recognised).
//!
//! Four commands look at a minnow database directory, stopped or live, without opening the
//! database (opening runs recovery, which writes):
//!
//! - `minnow tree DIR TABLE [--index NAME]` reads the dictionary from `ibdata1`'s raw pages,
//!   finds the table's index and walks its B-tree level by level: pages, records, fill and key
//!   ranges per level (a compressed table's trees from its `zip*.ibd` file, inflated, and said
//!   so); `--dot` writes Graphviz and `--svg` draws small trees ([`cmd::inspector::tree`]);
//! - `minnow log DIR` decodes the redo log: the header, both checkpoint slots, and every record
//!   from the newest checkpoint to the end of the valid log, grouped by mini-transaction, with a
//!   summary and any torn tail ([`cmd::inspector::log`]);
//! - `minnow dblwr DIR` decodes each doublewrite segment and compares every slot's copy with the
//!   page in the data file: same LSN, data newer, data older, or torn, and what recovery would
//!   do ([`cmd::inspector::dblwr`]);
//! - `minnow history DIR TABLE KEY` finds one row's clustered record and follows its roll
//!   pointers through the undo pages: every version newest first, who wrote it (committed or
//!   still active), the undo record kinds, delete marks and values ([`cmd::inspector::history`]).
//!
//! Two commands show the engine's counters, minnow's `SHOW ENGINE INNODB STATUS`:
//!
//! - `minnow status DIR` reads the status file a running database rewrites when
//!   `Config::status_file` is set (live), or else what the files at rest say: LSNs from the
//!   log, the tablespace's size, the doublewrite segments ([`cmd::inspector::status`]);
//! - `minnow watch DIR` prints the live counters as rates, one line per interval, while a
//!   workload runs ([`cmd::inspector::watch`]).
//!
//! Every command takes `--json` (machine-readable output on stdout) and exits with
//! **0** when everything checked is fine, **1** when the file has corrupt pages (or the log,
//! doublewrite or tree has other problems), and **2** on a
//! usage or IO error (a file that cannot be opened, a page 0 whose flags make no sense).
//!
//! The code is laid out for reading: [`space`] opens a file and finds its page size (or its block
//! size), [`check`] turns a checksum verdict into a report, [`describe`] explains flags and
//! formats hex dumps, [`reader`] reads checked pages of a database directory without opening
//! it and [`dict`] finds a table in its dictionary that way, [`report`] is the envelope every
//! report shares (the verdict, JSON or text), [`cli`] holds the options commands share as
//! clap `flatten` structs, and the commands live under [`cmd`], grouped by the tool they
//! belong to: [`cmd::inspector`] (the read-only commands above) and [`cmd::experiment`]
//! (`minnow bench` and `minnow plot`, which run workloads on fresh databases and chart them),
//! beside `demo` and `check`. The redo log is read with `minnow_redo::scan`, the walk recovery
//! itself makes.

#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]
#![forbid(unsafe_code)]

mod check;
mod cli;
mod cmd;
mod describe;
mod dict;
mod innodb_rec;
mod output;
mod reader;
mod report;
mod space;

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::run(std::env::args_os())
}
