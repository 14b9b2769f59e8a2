//! Output plumbing: the commands' error type and small formatting helpers.
//!
//! Text goes to stdout as it is produced; JSON is built as serde structs and written once, pretty
//! printed, to stdout ([`crate::report`]). Nothing here panics when stdout is closed: a failed
//! write becomes [`CliError::Stdout`] and the process exits 2.

use std::io;

use crate::space::SpaceError;

/// A fatal error of one command.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Opening or reading a tablespace failed.
    #[error(transparent)]
    Space(#[from] SpaceError),
    /// The redo log could not be read (the message names the file).
    #[error(transparent)]
    Redo(#[from] minnow_redo::ScanError),
    /// A minnow database could not be opened or checked (the message names the directory).
    #[error("{0}")]
    Database(String),
    /// The demo could not run (the message names the file or step).
    #[error("demo: {0}")]
    Demo(String),
    /// A request that cannot be served: an unknown table or index, a tree too large to draw,
    /// an output file that cannot be written.
    #[error("{0}")]
    Usage(String),
    /// A benchmark could not run: a bad workload setting or `--set` knob, or a failed
    /// statement (the message says which).
    #[error("bench: {0}")]
    Bench(String),
    /// Writing the report to stdout failed.
    #[error("cannot write to stdout: {0}")]
    Stdout(#[from] io::Error),
}

/// `0x` and eight hex digits: how checksums and LSN words are printed.
pub fn hex32(v: u32) -> String {
    format!("{v:#010x}")
}

/// A page pointer for humans: the number, or `FIL_NULL` for "no page".
pub fn page_ptr(v: u32) -> String {
    if v == minnow_page::fil::FIL_NULL {
        "FIL_NULL".to_string()
    } else {
        v.to_string()
    }
}
