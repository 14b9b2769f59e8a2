//! # The lower layers' errors that an [`Error`](crate::Error) carries
//!
//! Most [`Error`](crate::Error) variants describe what went wrong in the table's terms (a
//! duplicate key, a lock wait timeout, a corrupt page with its id). A few wrap the error of the
//! layer underneath as their cause, to be shown or matched: [`Error::Locked`](crate::Error::Locked)
//! a [`DirLockError`] (the directory is open elsewhere), [`Error::Io`](crate::Error::Io) an
//! [`IoError`] (the operation, the file and the OS error), [`Error::Storage`](crate::Error::Storage)
//! a [`BufError`] (the buffer pool, the redo log or the doublewrite buffer),
//! [`Error::Undo`](crate::Error::Undo) an [`MvccError`] (the undo log), and
//! [`Error::CorruptPage`](crate::Error::CorruptPage) a checksum [`Corruption`].
//!
//! ```
//! use minnow::cause::DirLockError;
//! use minnow::{Config, Database, Error};
//!
//! let dir = tempfile::tempdir()?;
//! let _db = Database::create(dir.path(), Config::default())?;
//! let second = Database::open(dir.path(), Config::default());
//! let me = Some(std::process::id());
//! assert!(matches!(second, Err(Error::Locked(DirLockError::Locked { pid, .. })) if pid == me));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub use minnow_buf::BufError;
pub use minnow_io::{DirLockError, IoError, IoOp};
pub use minnow_mvcc::MvccError;
pub use minnow_page::checksum::Corruption;
