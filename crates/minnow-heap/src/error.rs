//! [`HeapError`]: what can go wrong with a heap table.

use std::path::PathBuf;

use minnow::Value;

/// Everything a heap table operation can fail with.
#[derive(Debug, thiserror::Error)]
pub enum HeapError {
    /// The engine failed on one of the index trees.
    #[error(transparent)]
    Engine(#[from] minnow::Error),
    /// A read, write or sync of the heap file failed.
    #[error("{op} of heap file {} at offset {offset}: {source}", file.display())]
    Io {
        /// The heap file.
        file: PathBuf,
        /// What was being done (`read`, `write`, `sync`, `create`, `open`).
        op: &'static str,
        /// Byte offset in the file.
        offset: u64,
        /// The OS error.
        source: std::io::Error,
    },
    /// A heap page or row is damaged: names the file, the page, the byte offset in the file,
    /// what was expected there and what was found.
    #[error(
        "heap file {} page {page} (file offset {offset}): expected {expected}, found {actual}",
        file.display()
    )]
    Corrupt {
        /// The heap file.
        file: PathBuf,
        /// The page number.
        page: u32,
        /// Byte offset in the file of the damaged page or row.
        offset: u64,
        /// What should be there.
        expected: String,
        /// What is there.
        actual: String,
    },
    /// A definition a heap table cannot have.
    #[error("heap table `{table}`: {reason}")]
    BadDefinition {
        /// The table.
        table: String,
        /// What is wrong.
        reason: String,
    },
    /// A value that does not fit its column.
    #[error("heap table `{table}`, column {column}: {reason}")]
    BadValue {
        /// The table.
        table: String,
        /// The column (its name, or its position when the row has too many values).
        column: String,
        /// What is wrong.
        reason: String,
    },
    /// A row whose primary key or unique index key already exists.
    #[error("heap table `{table}`: duplicate key {key:?} in index {index}")]
    DuplicateKey {
        /// The table.
        table: String,
        /// The index (`PRIMARY` for the primary key).
        index: String,
        /// The key.
        key: Vec<Value>,
    },
    /// A name that is not an index or a column of the table.
    #[error("heap table `{table}` has no {what} `{name}`")]
    NoSuch {
        /// The table.
        table: String,
        /// `index` or `column`.
        what: &'static str,
        /// The name asked for.
        name: String,
    },
    /// [`crate::HeapTable::load`] on a table that already has rows.
    #[error("heap table `{table}` is not empty: load needs an empty table")]
    NotEmpty {
        /// The table.
        table: String,
    },
}

/// Results of heap table operations.
pub type Result<T> = std::result::Result<T, HeapError>;
