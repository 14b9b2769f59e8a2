//! One process per data directory: the `LOCK` file.
//!
//! A database directory must never be opened twice at once. Two openers would each run their
//! own buffer pool, redo log and page allocator over the same files: each believes it owns the
//! log's tail and the free pages, so their writes interleave and acknowledged commits vanish
//! (two handles that each inserted 3,000 rows were found holding 3,000 rows between them).
//!
//! The guard is the one LevelDB, RocksDB and LMDB use: an exclusive advisory lock (`flock(2)`)
//! on a file named `LOCK` in the directory, taken before anything else is read and held until
//! the database is closed. The kernel ties the lock to the open file, so:
//!
//! - a second opener, in another process *or in the same one* (each open of the file is its own
//!   open file description, and `flock` locks conflict between descriptions), fails after a
//!   short grace ([`GRACE`]) instead of waiting: [`DirLockError::Locked`], naming the directory
//!   and the holder's pid, which the holder writes into the file;
//! - a process that dies, however it dies (SIGKILL included), releases its lock with its file
//!   descriptors: a stale `LOCK` file left behind is simply locked again by the next opener,
//!   and its old pid overwritten. There is nothing to clean up by hand.
//!
//! Readers that never write (the inspector's `verify`, `inspect`, `page`, `tree`, `log`,
//! `dblwr`, `history`, `status`, `watch`) do not take the lock: they read pages with positional
//! reads and are safe beside a running engine.
//!
//! **Why a grace period.** `fork` duplicates every descriptor, the lock file's included, and the
//! duplicate shares the lock. A process that starts a child (a test runner starting the CLI, an
//! application running a helper program) can therefore keep a directory locked after its own
//! handle closed: from the `fork` until the child's `exec` closes the copy (the file is opened
//! close-on-exec). That window is short, so an opener that finds the lock held tries again for
//! up to [`GRACE`] before it reports [`DirLockError::Locked`]; a real second opener is refused
//! after that grace, never admitted.
//!
//! `flock` is advisory: it keeps out every opener that asks (every minnow process does), not a
//! program that writes the files without asking. On network file systems where `flock` is not
//! supported the lock fails with [`DirLockError::Io`] rather than pretending to hold.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The lock file's name inside a data directory.
pub const LOCK_FILE: &str = "LOCK";

/// How long an opener keeps trying a held lock before it reports [`DirLockError::Locked`] (see
/// the module docs, "Why a grace period").
pub const GRACE: std::time::Duration = std::time::Duration::from_millis(250);

/// The pause between tries during the grace period.
const RETRY: std::time::Duration = std::time::Duration::from_millis(5);

/// Why a directory could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum DirLockError {
    /// Another open handle holds the directory: another process, or this one.
    #[error("{}: the database is in use by {} (its LOCK file is held); close it first",
        dir.display(),
        pid.map_or_else(|| "another process".to_string(), |p| format!("process {p}")))]
    Locked {
        /// The data directory.
        dir: PathBuf,
        /// The holder's process id, as it wrote it into the file (absent if unreadable).
        pid: Option<u32>,
    },
    /// The lock file could not be created, opened or locked (a read-only directory, a `LOCK`
    /// that is a directory, a file system without `flock`).
    #[error("{}: cannot lock the data directory: {source}", path.display())]
    Io {
        /// The lock file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
}

/// An exclusive lock on a data directory, held until dropped.
#[derive(Debug)]
pub struct DirLock {
    /// The open lock file: the lock lives as long as this descriptor.
    _file: File,
    path: PathBuf,
}

impl DirLock {
    /// Takes the lock on `dir` (which must exist), creating `dir/LOCK` if needed, and writes
    /// this process's id into it. Fails if another handle still holds it after [`GRACE`].
    pub fn acquire(dir: &Path) -> Result<DirLock, DirLockError> {
        let path = dir.join(LOCK_FILE);
        let io = |source| DirLockError::Io {
            path: path.clone(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        let start = std::time::Instant::now();
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(TryLockError::WouldBlock) if start.elapsed() < GRACE => {
                    std::thread::sleep(RETRY);
                }
                Err(TryLockError::WouldBlock) => {
                    return Err(DirLockError::Locked {
                        dir: dir.to_path_buf(),
                        pid: read_pid(&mut file),
                    });
                }
                Err(TryLockError::Error(e)) => return Err(io(e)),
            }
        }
        // Ours now: record who holds it, for the error a second opener prints.
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        writeln!(file, "{}", std::process::id()).map_err(io)?;
        Ok(DirLock { _file: file, path })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The pid a holder wrote into the lock file, if it parses.
fn read_pid(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.take(32).read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_in_the_same_process_is_refused_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let first = DirLock::acquire(dir.path()).unwrap();
        match DirLock::acquire(dir.path()) {
            Err(DirLockError::Locked { dir: d, pid }) => {
                assert_eq!(d, dir.path());
                assert_eq!(pid, Some(std::process::id()));
            }
            other => panic!("expected Locked, got {other:?}"),
        }
        drop(first);
        let again = DirLock::acquire(dir.path()).unwrap();
        assert_eq!(again.path(), dir.path().join(LOCK_FILE));
    }

    #[test]
    fn a_stale_lock_file_is_taken_over_and_its_pid_replaced() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(LOCK_FILE), "4294967295 and some junk\n").unwrap();
        let _lock = DirLock::acquire(dir.path()).unwrap();
        let text = std::fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap();
        assert_eq!(text.trim(), std::process::id().to_string());
    }

    #[test]
    fn a_lock_file_that_is_a_directory_is_a_typed_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(LOCK_FILE)).unwrap();
        let err = DirLock::acquire(dir.path()).unwrap_err();
        assert!(matches!(err, DirLockError::Io { .. }), "{err:?}");
        assert!(err.to_string().contains("LOCK"), "{err}");
    }
}
