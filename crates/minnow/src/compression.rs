//! Compressed tables (`ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=n`): the setting a
//! [`crate::TableDef::compressed`] takes.
//!
//! The crate docs ("Compressed tables") show how such a table is made and where its pages
//! go; the engine crate's `compression` module (`minnow-engine`) explains the shared
//! compressed tablespaces, how their files are created crash-safely and how `open` finds
//! them again.

pub use minnow_engine::compression::Compression;
