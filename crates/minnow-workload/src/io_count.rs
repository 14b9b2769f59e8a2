//! Where a run's writes and syncs went, file by file: a pass-through IO backend that counts.
//!
//! Experiment E1 asks why doublewrite costs minnow less than it costs InnoDB. The answer is
//! in what each flushed page costs the storage: the bytes written to the data files (the page
//! in place), to the doublewrite segments (its copy, plus a header per batch) and to the redo
//! log (the changes that dirtied it), and the syncs each file class needed. [`Counting`]
//! wraps the backend the database would have used (the `io_backend` knob: `sync` or
//! `io_uring`) and counts, per [`FileClass`], the write requests, bytes written, syncs, and
//! the wall time spent inside writes and syncs (summed over threads, so with several flushers
//! it can exceed the run's length). A file's class comes from its name: `ibdata1` and `*.ibd`
//! are data, `dblwr.N` doublewrite, `ib_logfile*` redo; anything else is "other".
//!
//! Reading the counts: divide each class's bytes and syncs by the pages written to the data
//! files in the same interval ([`PerPage::of`]: a flushed page is one page-sized write to a
//! data file, whichever path of the pool wrote it). With doublewrite on, doublewrite bytes
//! per flushed page are slightly more than a page (the copy, plus the batch header spread
//! over the batch's pages); with it off, zero. Redo bytes per flushed page say how much log
//! the changes behind one page write cost. Syncs per flushed page fall as batches grow: a
//! batch costs a segment sync and one sync per data file, whatever its size.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use minnow::{Config, IoBackend};
use minnow_io::{Backend, FileIo, FlushMethod, IoError, IoRequest, OpenOptions};
use serde::Serialize;

/// What a file holds, as far as the counts are concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileClass {
    /// Tablespaces: `ibdata1`, `*.ibd`.
    Data,
    /// Doublewrite segments: `dblwr.N`.
    Doublewrite,
    /// The redo log: `ib_logfile*`.
    Redo,
    /// Anything else.
    Other,
}

impl FileClass {
    /// The class of the file at `path`, from its name.
    pub fn of(path: &Path) -> FileClass {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name == "ibdata1" || name.ends_with(".ibd") {
            FileClass::Data
        } else if name.starts_with("dblwr.") {
            FileClass::Doublewrite
        } else if name.starts_with("ib_logfile") {
            FileClass::Redo
        } else {
            FileClass::Other
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// One class's counters.
#[derive(Debug, Default)]
struct Counters {
    writes: AtomicU64,
    write_bytes: AtomicU64,
    write_ns: AtomicU64,
    syncs: AtomicU64,
    sync_ns: AtomicU64,
}

/// One class's counts at one moment (or between two: [`IoCounts::since`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ClassCounts {
    /// Write requests (one `write_at`, or one request of a submitted batch).
    pub writes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Nanoseconds spent inside writes (a submitted batch's whole time counts here when it
    /// holds a write).
    pub write_ns: u64,
    /// `sync_data` and `sync_all` calls.
    pub syncs: u64,
    /// Nanoseconds spent inside syncs.
    pub sync_ns: u64,
}

impl ClassCounts {
    fn since(&self, e: &ClassCounts) -> ClassCounts {
        ClassCounts {
            writes: self.writes.saturating_sub(e.writes),
            write_bytes: self.write_bytes.saturating_sub(e.write_bytes),
            write_ns: self.write_ns.saturating_sub(e.write_ns),
            syncs: self.syncs.saturating_sub(e.syncs),
            sync_ns: self.sync_ns.saturating_sub(e.sync_ns),
        }
    }
}

/// Every class's counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct IoCounts {
    /// Tablespaces.
    pub data: ClassCounts,
    /// Doublewrite segments.
    pub doublewrite: ClassCounts,
    /// The redo log.
    pub redo: ClassCounts,
    /// Other files.
    pub other: ClassCounts,
}

impl IoCounts {
    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: &IoCounts) -> IoCounts {
        IoCounts {
            data: self.data.since(&earlier.data),
            doublewrite: self.doublewrite.since(&earlier.doublewrite),
            redo: self.redo.since(&earlier.redo),
            other: self.other.since(&earlier.other),
        }
    }

    /// Syncs of all files.
    pub fn syncs(&self) -> u64 {
        self.data.syncs + self.doublewrite.syncs + self.redo.syncs + self.other.syncs
    }
}

/// The shared counters of a [`Counting`] backend and the files it opened.
#[derive(Debug, Default)]
pub struct Tally {
    classes: [Counters; 4],
}

impl Tally {
    /// The counts now.
    pub fn snapshot(&self) -> IoCounts {
        let get = |c: FileClass| {
            let k = &self.classes[c.index()];
            ClassCounts {
                writes: k.writes.load(Ordering::Relaxed),
                write_bytes: k.write_bytes.load(Ordering::Relaxed),
                write_ns: k.write_ns.load(Ordering::Relaxed),
                syncs: k.syncs.load(Ordering::Relaxed),
                sync_ns: k.sync_ns.load(Ordering::Relaxed),
            }
        };
        IoCounts {
            data: get(FileClass::Data),
            doublewrite: get(FileClass::Doublewrite),
            redo: get(FileClass::Redo),
            other: get(FileClass::Other),
        }
    }
}

/// A backend that passes every call to `inner` and counts writes and syncs per [`FileClass`].
#[derive(Debug)]
pub struct Counting {
    inner: Arc<dyn Backend>,
    tally: Arc<Tally>,
}

impl Counting {
    /// Wraps the backend `config` names ([`Config::backend`]: an io_uring ring is set up
    /// here, the sync backend gets `write_io_threads`), returning the backend for
    /// `Config::io_backend` and the counters it fills.
    pub fn wrap(config: &Config) -> Result<(IoBackend, Arc<Tally>), minnow::Error> {
        let (counting, tally) = Counting::around(config.backend()?);
        Ok((IoBackend::Custom(counting), tally))
    }

    /// Wraps `inner` (a real backend, or a wrapper such as a `LatencyModel`), returning the
    /// counting backend and the counters it fills.
    pub fn around(inner: Arc<dyn Backend>) -> (Arc<Counting>, Arc<Tally>) {
        let tally = Arc::new(Tally::default());
        let counting = Counting {
            inner,
            tally: Arc::clone(&tally),
        };
        (Arc::new(counting), tally)
    }
}

impl Backend for Counting {
    fn open(&self, path: &Path, opts: &OpenOptions) -> Result<Arc<dyn FileIo>, IoError> {
        Ok(Arc::new(CountedFile {
            inner: self.inner.open(path, opts)?,
            class: FileClass::of(path),
            tally: Arc::clone(&self.tally),
        }))
    }

    fn name(&self) -> &'static str {
        self.inner.name()
    }
}

#[derive(Debug)]
struct CountedFile {
    inner: Arc<dyn FileIo>,
    class: FileClass,
    tally: Arc<Tally>,
}

impl CountedFile {
    fn counters(&self) -> &Counters {
        &self.tally.classes[self.class.index()]
    }

    fn timed<T>(&self, ns: impl Fn(&Counters) -> &AtomicU64, f: impl FnOnce() -> T) -> T {
        let t = Instant::now();
        let r = f();
        let spent = u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
        ns(self.counters()).fetch_add(spent, Ordering::Relaxed);
        r
    }

    fn sync(&self, f: impl FnOnce() -> Result<(), IoError>) -> Result<(), IoError> {
        self.counters().syncs.fetch_add(1, Ordering::Relaxed);
        self.timed(|c| &c.sync_ns, f)
    }
}

impl FileIo for CountedFile {
    fn path(&self) -> &Path {
        self.inner.path()
    }
    fn flush_method(&self) -> FlushMethod {
        self.inner.flush_method()
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), IoError> {
        self.inner.read_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> Result<(), IoError> {
        let c = self.counters();
        c.writes.fetch_add(1, Ordering::Relaxed);
        c.write_bytes.fetch_add(buf.len() as u64, Ordering::Relaxed);
        self.timed(|c| &c.write_ns, || self.inner.write_at(buf, offset))
    }
    fn submit(&self, batch: &mut [IoRequest<'_>]) -> Result<(), IoError> {
        let (mut writes, mut bytes) = (0u64, 0u64);
        for r in batch.iter() {
            if let IoRequest::Write { buf, .. } = r {
                writes += 1;
                bytes += buf.len() as u64;
            }
        }
        if writes == 0 {
            return self.inner.submit(batch);
        }
        let c = self.counters();
        c.writes.fetch_add(writes, Ordering::Relaxed);
        c.write_bytes.fetch_add(bytes, Ordering::Relaxed);
        self.timed(|c| &c.write_ns, || self.inner.submit(batch))
    }
    fn sync_data(&self) -> Result<(), IoError> {
        self.sync(|| self.inner.sync_data())
    }
    fn sync_all(&self) -> Result<(), IoError> {
        self.sync(|| self.inner.sync_all())
    }
    fn len(&self) -> Result<u64, IoError> {
        self.inner.len()
    }
    fn allocate(&self, len: u64) -> Result<(), IoError> {
        self.inner.allocate(len)
    }
    fn truncate(&self, len: u64) -> Result<(), IoError> {
        self.inner.truncate(len)
    }
}

/// Per flushed page: what E1 reads off a run (see the module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct PerPage {
    /// The pages this divides by: page-sized writes to data files.
    pub pages: u64,
    /// Data-file bytes per flushed page.
    pub data_bytes: f64,
    /// Doublewrite-segment bytes per flushed page.
    pub doublewrite_bytes: f64,
    /// Redo bytes per flushed page.
    pub redo_bytes: f64,
    /// Syncs of all files per flushed page.
    pub syncs: f64,
    /// Data-file syncs per flushed page.
    pub data_syncs: f64,
    /// Doublewrite-segment syncs per flushed page.
    pub doublewrite_syncs: f64,
}

impl PerPage {
    /// `counts` divided by the pages written to the data files (`data.write_bytes /
    /// page_size`); all zero when none was.
    pub fn of(counts: &IoCounts, page_size: usize) -> PerPage {
        let pages = counts.data.write_bytes / (page_size.max(1) as u64);
        if pages == 0 {
            return PerPage::default();
        }
        let p = pages as f64;
        PerPage {
            pages,
            data_bytes: counts.data.write_bytes as f64 / p,
            doublewrite_bytes: counts.doublewrite.write_bytes as f64 / p,
            redo_bytes: counts.redo.write_bytes as f64 / p,
            syncs: counts.syncs() as f64 / p,
            data_syncs: counts.data.syncs as f64 / p,
            doublewrite_syncs: counts.doublewrite.syncs as f64 / p,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_classed_by_name() {
        for (name, class) in [
            ("ibdata1", FileClass::Data),
            ("zip8k_zlib-6.ibd", FileClass::Data),
            ("dblwr.0", FileClass::Doublewrite),
            ("dblwr.3", FileClass::Doublewrite),
            ("ib_logfile0", FileClass::Redo),
            ("ib_buffer_pool", FileClass::Other),
        ] {
            assert_eq!(FileClass::of(&Path::new("/d").join(name)), class, "{name}");
        }
    }

    #[test]
    fn a_database_run_counts_every_class_it_writes() {
        use minnow::inspect::Internals;
        use minnow::{ColumnDef, ColumnType, Database, TableDef, Value};
        let dir = tempfile::tempdir().unwrap();
        let (io, tally) = Counting::wrap(&Config::default()).unwrap();
        let config = Config {
            io_backend: io,
            ..Config::default()
        };
        let db = Database::create(dir.path(), config).unwrap();
        let before = tally.snapshot();
        let t = db
            .create_table(
                TableDef::new("t")
                    .column(ColumnDef::new("id", ColumnType::U64))
                    .primary_key(&["id"]),
            )
            .unwrap();
        t.insert(&[Value::UInt(1)]).unwrap();
        t.insert(&[Value::UInt(2)]).unwrap();
        db.buffer_pool().unwrap().flush_all().unwrap();
        let d = tally.snapshot().since(&before);
        assert!(d.redo.write_bytes > 0 && d.redo.syncs > 0, "{d:?}");
        assert!(d.data.write_bytes >= 16384 && d.data.syncs > 0, "{d:?}");
        assert!(d.doublewrite.write_bytes >= 16384, "{d:?}");
        // Every data-file write is a whole page.
        assert_eq!(d.data.write_bytes % 16384, 0, "{d:?}");
        let per = PerPage::of(&d, 16384);
        assert_eq!(per.data_bytes, 16384.0);
        assert!(per.pages >= 1 && per.syncs > 0.0, "{per:?}");
        assert_eq!(PerPage::of(&IoCounts::default(), 16384), PerPage::default());
        db.close().unwrap();
    }
}
