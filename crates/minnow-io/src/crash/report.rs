//! What a simulated power cut did: each unsynced write's [`Fate`] (kept, lost, torn into
//! sector- or page-sized chunks, or already durable under `O_DSYNC`), per file a
//! [`FileCrash`], and for the whole cut a [`CrashReport`] that a failing crash test prints,
//! so the failure names the seed and what happened to every file.

use std::fmt;
use std::path::{Path, PathBuf};

/// What a power cut did to one unsynced write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fate {
    /// All of it reached the media.
    Kept,
    /// None of it did.
    Lost,
    /// Some aligned chunks did and others did not.
    Torn {
        /// Chunk size: 512 (sectors) or 4096 (memory pages).
        granularity: usize,
        /// Chunks that persisted.
        persisted: usize,
        /// Chunks the write touched.
        chunks: usize,
    },
    /// It was written with `O_DSYNC`, so it was already durable.
    Durable,
}

/// One unsynced write and its fate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteFate {
    /// Byte offset of the write.
    pub offset: u64,
    /// Its length.
    pub len: usize,
    /// What happened to it.
    pub fate: Fate,
}

/// What a power cut did to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileCrash {
    /// The file (canonical path).
    pub path: PathBuf,
    /// Length at the last sync.
    pub durable_len: u64,
    /// Length before the cut.
    pub len_before: u64,
    /// Length after the cut.
    pub len_after: u64,
    /// Every write since the last sync, in order, with its fate.
    pub writes: Vec<WriteFate>,
}

impl FileCrash {
    /// How many writes have a fate for which `pred` is true.
    pub fn count(&self, pred: impl Fn(&Fate) -> bool) -> usize {
        self.writes.iter().filter(|w| pred(&w.fate)).count()
    }

    /// Writes kept whole.
    pub fn kept(&self) -> usize {
        self.count(|f| matches!(f, Fate::Kept))
    }

    /// Writes lost whole.
    pub fn lost(&self) -> usize {
        self.count(|f| matches!(f, Fate::Lost))
    }

    /// Writes torn.
    pub fn torn(&self) -> usize {
        self.count(|f| matches!(f, Fate::Torn { .. }))
    }
}

/// What a power cut did, per file: for test failure messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrashReport {
    /// The seed that chose the outcome.
    pub seed: u64,
    /// Every file the simulator knows, in path order.
    pub files: Vec<FileCrash>,
}

impl CrashReport {
    /// The entry for the file at `path` (compared after canonicalisation where possible).
    pub fn file(&self, path: &Path) -> Option<&FileCrash> {
        let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        self.files.iter().find(|f| f.path == canonical)
    }
}

impl fmt::Display for CrashReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "power cut (seed {}):", self.seed)?;
        for file in &self.files {
            write!(
                f,
                " [{}: {} kept, {} lost, {} torn, {} durable; len {} -> {}]",
                file.path.display(),
                file.kept(),
                file.lost(),
                file.torn(),
                file.count(|f| matches!(f, Fate::Durable)),
                file.len_before,
                file.len_after
            )?;
        }
        Ok(())
    }
}
