//! A latency model: pretend the files live on a spinning disk (or an SSD).
//!
//! The disk under this project is a virtualised SSD-like device (limits.md A.2). Many classic
//! InnoDB experiments were run on spinning disks, where the *position* of an IO decides its cost.
//! [`LatencyModel`] wraps any backend, does the real IO, and charges each IO what a modelled
//! disk would have taken, optionally sleeping that long.
//!
//! ## The seek + rotation model
//!
//! A hard disk has one arm whose head reads one track of a spinning platter. To serve an IO at
//! a new place it must
//!
//! 1. **seek**: move the arm to the right track (about 8 ms on average for a 7200 rpm disk);
//! 2. **wait for the rotation**: until the right sector comes under the head; on average half a
//!    revolution, 60 s / 7200 / 2 = 4.17 ms;
//! 3. **transfer**: read or write the bytes as they pass, at the streaming rate (~150 MB/s, so a
//!    16 KiB page takes ~0.1 ms).
//!
//! An IO that starts exactly where the previous one ended (same file, next byte) is
//! *sequential*: the head is already there and the sector arrives next, so it pays only the
//! transfer. A random 16 KiB read costs ~12.3 ms; a sequential one ~0.11 ms: a hundred times
//! less. That ratio is why InnoDB has read-ahead, flushes neighbours, and writes the doublewrite
//! buffer as one sequential chunk.
//!
//! The model keeps one head per [`LatencyModel`] (one disk for all its files) and serialises IOs
//! through it with a mutex, like a single-spindle disk queue. A batch ([`FileIo::submit`]) is
//! charged in ascending offset order, as a disk's elevator scheduler would serve it (the real IO
//! still runs in the order given). A sync costs [`DiskProfile::sync_ns`] (flushing the disk's
//! write cache). The SSD profile has no seek or rotation, only a per-IO cost and a transfer rate.
//!
//! Everything measured through this model is *emulated*: [`LatencyModel::label`] says so, and
//! results must carry that label. Tests check the accounting ([`LatencyStats`]), never time.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::{Backend, FileIo, FlushMethod, IoError, IoRequest, OpenOptions};

/// The parameters of a modelled disk. Fields are public so experiments can tune them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskProfile {
    /// A name for labels, such as `7200 rpm disk`.
    pub name: String,
    /// Average seek time for a random IO, in nanoseconds.
    pub seek_ns: u64,
    /// Average rotational latency (half a revolution) for a random IO, in nanoseconds.
    pub rotation_ns: u64,
    /// Fixed cost of every read (controller, flash array), in nanoseconds.
    pub read_ns: u64,
    /// Fixed cost of every write, in nanoseconds.
    pub write_ns: u64,
    /// Streaming transfer rate in bytes per second.
    pub bytes_per_sec: u64,
    /// Cost of one sync (flushing the disk's write cache), in nanoseconds.
    pub sync_ns: u64,
}

impl DiskProfile {
    /// A 7200 rpm hard disk: 8 ms average seek, 4.17 ms half rotation, 150 MB/s streaming,
    /// a sync costs one full revolution (8.33 ms).
    pub fn spinning_disk() -> DiskProfile {
        DiskProfile {
            name: "7200 rpm disk".to_string(),
            seek_ns: 8_000_000,
            rotation_ns: 4_166_667,
            read_ns: 0,
            write_ns: 0,
            bytes_per_sec: 150_000_000,
            sync_ns: 8_333_333,
        }
    }

    /// A SATA-class SSD: 80 µs per read, 30 µs per write, 500 MB/s, 120 µs per sync (about the
    /// `fdatasync` of limits.md A.1); no seek, no rotation.
    pub fn ssd() -> DiskProfile {
        DiskProfile {
            name: "SATA SSD".to_string(),
            seek_ns: 0,
            rotation_ns: 0,
            read_ns: 80_000,
            write_ns: 30_000,
            bytes_per_sec: 500_000_000,
            sync_ns: 120_000,
        }
    }

    /// Nanoseconds to move `len` bytes at the streaming rate.
    pub fn transfer_ns(&self, len: usize) -> u64 {
        let ns = (len as u128 * 1_000_000_000) / u128::from(self.bytes_per_sec.max(1));
        u64::try_from(ns).unwrap_or(u64::MAX)
    }

    /// The modelled cost of one IO of `len` bytes: positioning (unless `sequential`), the fixed
    /// per-IO cost, and the transfer.
    pub fn io_ns(&self, len: usize, write: bool, sequential: bool) -> u64 {
        let position = if sequential {
            0
        } else {
            self.seek_ns.saturating_add(self.rotation_ns)
        };
        let fixed = if write { self.write_ns } else { self.read_ns };
        position
            .saturating_add(fixed)
            .saturating_add(self.transfer_ns(len))
    }
}

/// Counters of a [`LatencyModel`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LatencyStats {
    /// Emulated time the disk was busy, in nanoseconds.
    pub busy_ns: u64,
    /// Reads served.
    pub reads: u64,
    /// Writes served.
    pub writes: u64,
    /// Syncs served.
    pub syncs: u64,
    /// IOs that started where the previous one ended.
    pub sequential: u64,
    /// IOs that needed a seek and rotation.
    pub random: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
}

/// A backend wrapper that charges modelled disk time per IO. See the module docs.
#[derive(Debug)]
pub struct LatencyModel {
    inner: Arc<dyn Backend>,
    disk: Arc<Disk>,
}

#[derive(Debug)]
struct Disk {
    profile: DiskProfile,
    sleep: bool,
    state: Mutex<DiskState>,
}

#[derive(Debug, Default)]
struct DiskState {
    /// Where the head is: (file id, byte offset just past the last IO).
    head: Option<(u64, u64)>,
    stats: LatencyStats,
    /// A small id per distinct path, so the head position names a file cheaply.
    ids: HashMap<PathBuf, u64>,
}

impl Disk {
    fn lock(&self) -> MutexGuard<'_, DiskState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Charges one IO and moves the head; returns its cost.
    fn charge(&self, st: &mut DiskState, file: u64, offset: u64, len: usize, write: bool) -> u64 {
        let sequential = st.head == Some((file, offset));
        let ns = self.profile.io_ns(len, write, sequential);
        st.head = Some((file, offset.saturating_add(len as u64)));
        let s = &mut st.stats;
        s.busy_ns = s.busy_ns.saturating_add(ns);
        if sequential {
            s.sequential += 1;
        } else {
            s.random += 1;
        }
        if write {
            s.writes += 1;
            s.bytes_written += len as u64;
        } else {
            s.reads += 1;
            s.bytes_read += len as u64;
        }
        ns
    }

    fn wait(&self, ns: u64) {
        if self.sleep && ns > 0 {
            std::thread::sleep(Duration::from_nanos(ns));
        }
    }
}

impl LatencyModel {
    /// Wraps `inner` with the disk `profile`. With `sleep` false the costs are only counted
    /// (tests); with `sleep` true each IO also sleeps for its cost, holding the disk's one head.
    pub fn new(inner: Arc<dyn Backend>, profile: DiskProfile, sleep: bool) -> LatencyModel {
        LatencyModel {
            inner,
            disk: Arc::new(Disk {
                profile,
                sleep,
                state: Mutex::new(DiskState::default()),
            }),
        }
    }

    /// The modelled disk.
    pub fn profile(&self) -> &DiskProfile {
        &self.disk.profile
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> LatencyStats {
        self.disk.lock().stats
    }

    /// Zeroes the counters (the head stays where it is).
    pub fn reset_stats(&self) {
        self.disk.lock().stats = LatencyStats::default();
    }

    /// A label for results, always containing "emulated", e.g.
    /// `sync backend on an emulated 7200 rpm disk (sleeping)`.
    pub fn label(&self) -> String {
        format!(
            "{} backend on an emulated {} ({})",
            self.inner.name(),
            self.disk.profile.name,
            if self.disk.sleep {
                "sleeping"
            } else {
                "accounting only"
            }
        )
    }
}

impl Backend for LatencyModel {
    fn open(&self, path: &Path, opts: &OpenOptions) -> Result<Arc<dyn FileIo>, IoError> {
        let inner = self.inner.open(path, opts)?;
        let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let mut st = self.disk.lock();
        let next = st.ids.len() as u64;
        let id = *st.ids.entry(key).or_insert(next);
        Ok(Arc::new(ModelFile {
            inner,
            id,
            disk: Arc::clone(&self.disk),
        }))
    }

    fn name(&self) -> &'static str {
        "latency_model"
    }
}

struct ModelFile {
    inner: Arc<dyn FileIo>,
    id: u64,
    disk: Arc<Disk>,
}

impl fmt::Debug for ModelFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelFile")
            .field("inner", &self.inner)
            .field("id", &self.id)
            .finish()
    }
}

impl FileIo for ModelFile {
    fn path(&self) -> &Path {
        self.inner.path()
    }

    fn flush_method(&self) -> FlushMethod {
        self.inner.flush_method()
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), IoError> {
        let mut st = self.disk.lock();
        let ns = self.disk.charge(&mut st, self.id, offset, buf.len(), false);
        self.disk.wait(ns);
        self.inner.read_at(buf, offset)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> Result<(), IoError> {
        let mut st = self.disk.lock();
        let ns = self.disk.charge(&mut st, self.id, offset, buf.len(), true);
        self.disk.wait(ns);
        self.inner.write_at(buf, offset)
    }

    fn submit(&self, batch: &mut [IoRequest<'_>]) -> Result<(), IoError> {
        let mut st = self.disk.lock();
        // The elevator: serve the batch in ascending offset order.
        let mut order: Vec<(u64, usize, bool)> = batch
            .iter()
            .map(|r| (r.offset(), r.len(), r.is_write()))
            .collect();
        order.sort_unstable();
        let ns = order.into_iter().fold(0u64, |total, (offset, len, write)| {
            total.saturating_add(self.disk.charge(&mut st, self.id, offset, len, write))
        });
        self.disk.wait(ns);
        self.inner.submit(batch)
    }

    fn sync_data(&self) -> Result<(), IoError> {
        self.sync(false)
    }

    fn sync_all(&self) -> Result<(), IoError> {
        self.sync(true)
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

impl ModelFile {
    fn sync(&self, all: bool) -> Result<(), IoError> {
        let mut st = self.disk.lock();
        let ns = self.disk.profile.sync_ns;
        st.stats.syncs += 1;
        st.stats.busy_ns = st.stats.busy_ns.saturating_add(ns);
        self.disk.wait(ns);
        if all {
            self.inner.sync_all()
        } else {
            self.inner.sync_data()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SyncBackend;

    fn model(profile: DiskProfile) -> LatencyModel {
        LatencyModel::new(Arc::new(SyncBackend::new()), profile, false)
    }

    #[test]
    fn profile_costs() {
        let hdd = DiskProfile::spinning_disk();
        assert_eq!(hdd.transfer_ns(150_000_000), 1_000_000_000);
        let random = hdd.io_ns(16384, false, false);
        let seq = hdd.io_ns(16384, false, true);
        assert_eq!(random - seq, hdd.seek_ns + hdd.rotation_ns);
        assert!(
            random > 50 * seq,
            "random {random} ns vs sequential {seq} ns"
        );
        let ssd = DiskProfile::ssd();
        assert_eq!(ssd.io_ns(4096, true, false), ssd.io_ns(4096, true, true));
        assert!(ssd.io_ns(4096, false, true) > ssd.io_ns(4096, true, true));
    }

    #[test]
    fn sequential_is_cheaper_than_random_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let opts = OpenOptions::new(FlushMethod::Fsync).create(true);
        let page = [1u8; 16384];

        let seq = model(DiskProfile::spinning_disk());
        assert!(seq.label().contains("emulated"), "{}", seq.label());
        let f = seq.open(&dir.path().join("seq"), &opts).unwrap();
        for i in 0..16u64 {
            f.write_at(&page, i * 16384).unwrap();
        }
        let s = seq.stats();
        assert_eq!((s.writes, s.random, s.sequential), (16, 1, 15));
        assert_eq!(s.bytes_written, 16 * 16384);

        let rnd = model(DiskProfile::spinning_disk());
        let g = rnd.open(&dir.path().join("rnd"), &opts).unwrap();
        for i in [5u64, 1, 9, 3, 12, 0, 7, 14, 2, 11, 6, 15, 4, 13, 8, 10] {
            g.write_at(&page, i * 16384).unwrap();
        }
        let r = rnd.stats();
        assert_eq!((r.writes, r.random, r.sequential), (16, 16, 0));
        assert!(
            r.busy_ns > 10 * s.busy_ns,
            "random {} vs sequential {}",
            r.busy_ns,
            s.busy_ns
        );

        // Reading it back in order: the first read seeks, the rest stream.
        rnd.reset_stats();
        let mut back = [0u8; 16384];
        for i in 0..4u64 {
            g.read_at(&mut back, i * 16384).unwrap();
        }
        g.sync_data().unwrap();
        let r = rnd.stats();
        assert_eq!((r.reads, r.random, r.sequential, r.syncs), (4, 1, 3, 1));
        let hdd = DiskProfile::spinning_disk();
        let expected =
            hdd.io_ns(16384, false, false) + 3 * hdd.io_ns(16384, false, true) + hdd.sync_ns;
        assert_eq!(r.busy_ns, expected);
        assert_eq!(back, page);
    }

    #[test]
    fn one_head_for_all_files_and_elevator_batches() {
        let dir = tempfile::tempdir().unwrap();
        let m = model(DiskProfile::spinning_disk());
        let opts = OpenOptions::new(FlushMethod::Fsync).create(true);
        let a = m.open(&dir.path().join("a"), &opts).unwrap();
        let b = m.open(&dir.path().join("b"), &opts).unwrap();
        let data = [3u8; 4096];
        a.write_at(&data, 0).unwrap();
        b.write_at(&data, 4096).unwrap(); // another file: random, even at the "next" offset
        a.write_at(&data, 4096).unwrap(); // the head is in b now: random again
        assert_eq!(m.stats().random, 3);

        // A batch given in reverse order is charged in ascending order: one seek, then streaming.
        m.reset_stats();
        let bufs = vec![[9u8; 4096]; 8];
        let mut batch: Vec<IoRequest<'_>> = bufs
            .iter()
            .enumerate()
            .rev()
            .map(|(i, buf)| IoRequest::Write {
                offset: 65536 + (i as u64) * 4096,
                buf,
            })
            .collect();
        a.submit(&mut batch).unwrap();
        let s = m.stats();
        assert_eq!((s.writes, s.random, s.sequential), (8, 1, 7));
        let mut check = [0u8; 4096];
        a.read_at(&mut check, 65536 + 7 * 4096).unwrap();
        assert_eq!(check, [9u8; 4096]);
    }

    #[test]
    fn ssd_profile_has_no_positioning_cost() {
        let dir = tempfile::tempdir().unwrap();
        let m = model(DiskProfile::ssd());
        let f = m
            .open(
                &dir.path().join("s"),
                &OpenOptions::new(FlushMethod::Fsync).create(true),
            )
            .unwrap();
        let data = [1u8; 4096];
        f.write_at(&data, 8192).unwrap();
        f.write_at(&data, 0).unwrap();
        let s = m.stats();
        assert_eq!(s.random, 2);
        assert_eq!(s.busy_ns, 2 * DiskProfile::ssd().io_ns(4096, true, true));
        assert!(m.label().contains("emulated SATA SSD"));
    }
}
