//! A crash simulator: a backend that can cut the power.
//!
//! ## What a power cut does
//!
//! When the power goes, everything that was only in RAM is gone: the page cache and the disk's
//! own write cache. What is on the media is what was there at the last successful sync, plus
//! whatever part of the later writes happened to reach it, in no particular order. Each write
//! issued since the last sync may therefore have been
//!
//! - **kept**: it reached the media completely;
//! - **lost**: none of it did; the old bytes are still there;
//! - **torn**: some of it did. A disk promises atomicity only per *sector* (512 bytes on the
//!   disk here, 4 KiB on "advanced format" disks), and the kernel writes the page cache back in
//!   *memory pages* of 4 KiB, each on its own. A 16 KiB database page is 32 sectors and 4 memory
//!   pages: a cut in the middle leaves some of them new and some old. The result is neither the
//!   old page nor the new one, which is why pages carry checksums (to notice) and why InnoDB has a
//!   doublewrite buffer (to repair).
//!
//! A file that grew since the last sync may also come back at its old length, and a file that
//! was shrunk (`ftruncate`) since the last sync may come back at its old length with its old
//! bytes.
//!
//! ## How [`CrashSim`] models it
//!
//! `CrashSim` wraps another backend and passes every IO through to the real files, so the engine
//! above runs normally. On the side it remembers, per file, since the last sync:
//! the durable length; the durable contents of every 512-byte sector a write touched (captured
//! just before the first write to it); and every write, in order, with a copy of its bytes.
//!
//! [`CrashSim::power_cut`] then rewrites each real file into one state a real power cut could
//! leave: it restores the durable image (old length, old sectors), decides with a seeded RNG
//! whether the extension survives, and replays each unsynced write in order as kept, lost or torn
//! (torn at 512-byte or 4 KiB granularity, chosen per write; some chunks new, some old). A
//! [`FileIo::truncate`] since the last sync is kept or lost as a whole (its pre-image, the durable
//! bytes beyond the new end, is captured when it runs): kept, it drops what the writes before
//! it left beyond the new end; lost, the old length and bytes come back. The same
//! seed always gives the same files. Afterwards every handle opened before the cut fails with
//! [`IoError::DeviceGone`]: reopen the files, as a restarted process would.
//!
//! Writes to files opened with [`FlushMethod::ODsync`] are durable when they return, and a
//! successful sync makes everything before it durable.
//!
//! A sync is *simulated*: it moves the simulator's durable image forward and does not call
//! `fsync` on the real file (nor does the power cut after rewriting the files). What survives
//! a cut is decided by the simulator's image alone, and the test reopens the files in the
//! same process, through the same page cache, so a real `fsync` changes nothing a campaign
//! checks; it only costs time (a power-cut campaign spent 97 % of its wall-clock time waiting
//! in `fsync`, 27 s against 0.9 s of CPU). [`CrashSim::with_real_syncs`] forwards every sync
//! to the wrapped backend as well, for a campaign that should run the real sync path of its
//! backend (io_uring's, say) on the way. To stop at a random point,
//! [`CrashSim::arm`] makes the device die after N more write or sync operations (later ones fail
//! with `EIO`, as a dying disk does) and [`CrashSim::fail_next_sync`] makes one sync fail with
//! `EIO` without syncing (the writes before it stay in doubt, as on Linux after a failed fsync).
//!
//! Not modelled: directory entries (a created file always survives), reordering of writes to the
//! same bytes (later writes are applied after earlier ones), and handles to one file that use
//! different flush methods. All handles to a file must use paths that resolve to the same file.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::file::SECTOR;
use crate::{Backend, FileIo, FlushMethod, IoError, IoOp, IoRequest, OpenOptions};

/// The seeds a crash campaign runs: `MINNOW_CRASH_SEEDS` of them (default `default_count`),
/// starting at `MINNOW_CRASH_SEED_START` (default 0). CI runs the defaults; a long campaign
/// started elsewhere in the seed space never repeats CI's. Every campaign in the workspace
/// reads its seeds here, so the two variables mean the same thing everywhere.
pub fn campaign_seeds(default_count: u64) -> std::ops::Range<u64> {
    let var = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(default)
    };
    let start = var("MINNOW_CRASH_SEED_START", 0);
    start..start.saturating_add(var("MINNOW_CRASH_SEEDS", default_count))
}

/// A backend that records unsynced writes and can cut the power. See the module docs.
#[derive(Debug)]
pub struct CrashSim {
    inner: Arc<dyn Backend>,
    state: Arc<Mutex<SimState>>,
}

#[derive(Debug, Default)]
struct SimState {
    /// Bumped by every power cut; handles from an older generation are dead.
    generation: u64,
    /// Write/sync operations left before the device dies.
    armed: Option<u64>,
    /// The device died (armed countdown reached zero); everything fails until a power cut.
    dead: bool,
    fail_next_sync: bool,
    /// Syncs are forwarded to the wrapped backend too ([`CrashSim::with_real_syncs`]).
    real_syncs: bool,
    files: BTreeMap<PathBuf, FileState>,
    /// Write, sync and truncate operations counted so far (what [`CrashSim::arm`] counts).
    ops: u64,
}

struct FileState {
    /// Length at the last sync.
    durable_len: u64,
    /// Durable contents of each sector touched since the last sync (zeros past `durable_len`).
    pre_images: BTreeMap<u64, Vec<u8>>,
    /// Writes since the last sync, in order.
    pending: Vec<PendingWrite>,
    /// The smallest length a truncate since the last sync left, and how many of `pending`
    /// came before that truncate.
    shrink: Option<(u64, usize)>,
    /// A plain descriptor for capturing pre-images and rewriting the file at a power cut.
    side: Option<File>,
}

struct PendingWrite {
    offset: u64,
    data: Vec<u8>,
    /// Durable on return (`O_DSYNC`): always kept.
    durable: bool,
}

impl fmt::Debug for FileState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileState")
            .field("durable_len", &self.durable_len)
            .field("pre_image_sectors", &self.pre_images.len())
            .field("pending_writes", &self.pending.len())
            .field("shrink", &self.shrink)
            .finish()
    }
}

impl CrashSim {
    /// Wraps `inner`, whose files must live at the paths they are opened with. Syncs are
    /// simulated (see the module docs).
    pub fn new(inner: Arc<dyn Backend>) -> CrashSim {
        CrashSim {
            inner,
            state: Arc::new(Mutex::new(SimState::default())),
        }
    }

    /// [`CrashSim::new`], with every sync also forwarded to `inner`'s file (and the files
    /// synced after a power cut rewrites them): the backend's real sync path runs too.
    pub fn with_real_syncs(inner: Arc<dyn Backend>) -> CrashSim {
        let sim = CrashSim::new(inner);
        sim.lock().real_syncs = true;
        sim
    }

    fn lock(&self) -> MutexGuard<'_, SimState> {
        lock(&self.state)
    }

    /// Makes the device die after `after_ops` more write or sync operations (each request of a
    /// batch counts); the ones after fail with `EIO` until [`CrashSim::power_cut`].
    pub fn arm(&self, after_ops: u64) {
        self.lock().armed = Some(after_ops);
    }

    /// Write, sync and truncate operations done (or refused by a dead device) so far, each
    /// request of a batch counted, as [`CrashSim::arm`] counts them: a test measures a step
    /// once, then arms the device to die at each operation of it in turn.
    pub fn ops(&self) -> u64 {
        self.lock().ops
    }

    /// Cancels [`CrashSim::arm`] (a device that already died stays dead until the power cut).
    pub fn disarm(&self) {
        self.lock().armed = None;
    }

    /// True once an armed device has died.
    pub fn is_dead(&self) -> bool {
        self.lock().dead
    }

    /// Makes the next sync on any file fail with `EIO` without syncing anything.
    pub fn fail_next_sync(&self) {
        self.lock().fail_next_sync = true;
    }

    /// Unsynced writes (not counting `O_DSYNC` ones) across all files.
    pub fn unsynced_writes(&self) -> usize {
        let st = self.lock();
        st.files
            .values()
            .map(|f| f.pending.iter().filter(|w| !w.durable).count())
            .sum()
    }

    /// Cuts the power: rewrites every file into what the media would hold, chosen by `seed`
    /// (see the module docs), syncs the result, and kills every handle opened before.
    pub fn power_cut(&self, seed: u64) -> Result<CrashReport, IoError> {
        let mut st = self.lock();
        let mut rng = SplitMix64(seed);
        let mut files = Vec::new();
        // Deleting files is not modelled: a file that is gone is forgotten.
        st.files.retain(|path, _| path.exists());
        let real_syncs = st.real_syncs;
        for (path, file) in st.files.iter_mut() {
            files.push(file.cut(path, &mut rng, real_syncs)?);
        }
        st.generation += 1;
        st.armed = None;
        st.dead = false;
        st.fail_next_sync = false;
        Ok(CrashReport { seed, files })
    }
}

fn lock(state: &Mutex<SimState>) -> MutexGuard<'_, SimState> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Backend for CrashSim {
    fn open(&self, path: &Path, opts: &OpenOptions) -> Result<Arc<dyn FileIo>, IoError> {
        let mut st = self.lock();
        if st.dead {
            return Err(IoError::file(IoOp::Open, path, eio()));
        }
        let inner = self.inner.open(path, opts)?;
        let key = std::fs::canonicalize(path).map_err(|e| IoError::file(IoOp::Open, path, e))?;
        if !st.files.contains_key(&key) {
            let durable_len = inner.len()?;
            st.files.insert(
                key.clone(),
                FileState {
                    durable_len,
                    pre_images: BTreeMap::new(),
                    pending: Vec::new(),
                    shrink: None,
                    side: None,
                },
            );
        }
        Ok(Arc::new(SimFile {
            inner,
            key,
            generation: st.generation,
            state: Arc::clone(&self.state),
        }))
    }

    fn name(&self) -> &'static str {
        "crash_sim"
    }
}

fn eio() -> io::Error {
    io::Error::from_raw_os_error(libc::EIO)
}

impl FileState {
    /// Remembers the durable contents of every sector in `[offset, offset + len)` not yet
    /// remembered since the last sync.
    fn capture(&mut self, path: &Path, offset: u64, len: usize) -> Result<(), IoError> {
        if len == 0 {
            return Ok(());
        }
        let sector = SECTOR as u64;
        let first = offset / sector;
        let last = (offset + len as u64 - 1) / sector;
        let durable_len = self.durable_len;
        for s in first..=last {
            if self.pre_images.contains_key(&s) {
                continue;
            }
            let mut image = vec![0u8; SECTOR];
            let start = s * sector;
            let want = usize::try_from(durable_len.saturating_sub(start).min(sector)).unwrap_or(0);
            if let Some(dst) = image.get_mut(..want) {
                read_upto(side(&mut self.side, path)?, dst, start)
                    .map_err(|e| IoError::io(IoOp::Read, path, start, want, e))?;
            }
            self.pre_images.insert(s, image);
        }
        Ok(())
    }

    fn record(&mut self, offset: u64, data: &[u8], durable: bool) {
        let end = offset + data.len() as u64;
        if durable {
            self.durable_len = self.durable_len.max(end);
            if self.pending.is_empty() {
                // Nothing in doubt: the durable image simply moved forward.
                return;
            }
        }
        self.pending.push(PendingWrite {
            offset,
            data: data.to_vec(),
            durable,
        });
    }

    fn synced(&mut self, len: u64) {
        self.durable_len = len;
        self.pre_images.clear();
        self.pending.clear();
        self.shrink = None;
    }

    /// Notes a truncate to `len`: captures the durable bytes it removes, so that a cut that
    /// loses it can bring them back.
    fn truncated(&mut self, path: &Path, len: u64) -> Result<(), IoError> {
        if len < self.durable_len {
            let gone = usize::try_from(self.durable_len - len).unwrap_or(usize::MAX);
            self.capture(path, len, gone)?;
        }
        let smallest = self.shrink.map_or(len, |(m, _)| m.min(len));
        let at = match self.shrink {
            Some((m, at)) if m <= len => at,
            _ => self.pending.len(),
        };
        self.shrink = Some((smallest, at));
        Ok(())
    }

    /// Rewrites the real file into one possible post-crash state.
    fn cut(
        &mut self,
        path: &Path,
        rng: &mut SplitMix64,
        real_syncs: bool,
    ) -> Result<FileCrash, IoError> {
        let side_err = |op, e| IoError::file(op, path, e);
        let len_before = side(&mut self.side, path)?
            .metadata()
            .map_err(|e| side_err(IoOp::Stat, e))?
            .len();
        let durable_len = self.durable_len;
        let mut report = FileCrash {
            path: path.to_path_buf(),
            durable_len,
            len_before,
            len_after: len_before,
            writes: Vec::new(),
        };
        if self.pending.is_empty() && len_before <= durable_len && self.shrink.is_none() {
            return Ok(report);
        }
        // A truncate since the sync is kept (the file ends where it ends now) or lost (the
        // old length and bytes come back).
        let kept_shrink = match self.shrink {
            Some(shrink) if rng.below(2) == 0 => Some(shrink),
            _ => None,
        };
        let len_after = if kept_shrink.is_some() {
            len_before
        } else if len_before > durable_len && rng.below(2) == 0 {
            durable_len
        } else {
            len_before.max(durable_len)
        };
        let full = len_after.max(durable_len);
        let side = side(&mut self.side, path)?;
        let set_len = |len: u64| side.set_len(len).map_err(|e| side_err(IoOp::Allocate, e));
        set_len(full)?;
        for (&s, image) in &self.pre_images {
            put(side, path, s * SECTOR as u64, image, full)?;
        }
        for (i, w) in self.pending.iter().enumerate() {
            if let Some((m, at)) = kept_shrink
                && at == i
            {
                set_len(m)?;
            }
            let fate = if w.durable {
                Fate::Durable
            } else {
                decide(rng, w.offset, w.data.len())
            };
            let fate = apply(side, path, w, fate, rng, full)?;
            report.writes.push(WriteFate {
                offset: w.offset,
                len: w.data.len(),
                fate,
            });
        }
        if let Some((m, at)) = kept_shrink
            && at >= self.pending.len()
        {
            set_len(m)?;
        }
        set_len(len_after)?;
        if real_syncs {
            side.sync_all().map_err(|e| side_err(IoOp::Sync, e))?;
        }
        report.len_after = len_after;
        self.synced(len_after);
        Ok(report)
    }
}

/// The simulator's own plain descriptor for `path`, opened on first use.
fn side<'a>(slot: &'a mut Option<File>, path: &Path) -> Result<&'a File, IoError> {
    if slot.is_none() {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| IoError::file(IoOp::Open, path, e))?;
        *slot = Some(file);
    }
    slot.as_ref()
        .ok_or_else(|| IoError::file(IoOp::Open, path, eio()))
}

/// Picks kept, lost or torn (granularity and the number of chunks, not yet which ones).
fn decide(rng: &mut SplitMix64, offset: u64, len: usize) -> Fate {
    match rng.below(3) {
        0 => Fate::Kept,
        1 => Fate::Lost,
        _ => {
            let granularity = if rng.below(2) == 0 { 512 } else { 4096 };
            let chunks = chunk_count(offset, len, granularity);
            if chunks < 2 {
                // A write inside one chunk cannot tear at this granularity.
                if rng.below(2) == 0 {
                    Fate::Kept
                } else {
                    Fate::Lost
                }
            } else {
                Fate::Torn {
                    granularity,
                    persisted: 0,
                    chunks,
                }
            }
        }
    }
}

fn chunk_count(offset: u64, len: usize, granularity: usize) -> usize {
    if len == 0 {
        return 0;
    }
    let g = granularity as u64;
    let first = offset / g;
    let last = (offset + len as u64 - 1) / g;
    usize::try_from(last - first + 1).unwrap_or(usize::MAX)
}

/// Writes `data` at `offset`, clipped to `limit` bytes of file.
fn put(side: &File, path: &Path, offset: u64, data: &[u8], limit: u64) -> Result<(), IoError> {
    let room = usize::try_from(limit.saturating_sub(offset)).unwrap_or(usize::MAX);
    let data = data.get(..room.min(data.len())).unwrap_or(&[]);
    if data.is_empty() {
        return Ok(());
    }
    side.write_all_at(data, offset)
        .map_err(|e| IoError::io(IoOp::Write, path, offset, data.len(), e))
}

/// Replays one write with its fate; fills in which chunks of a torn write persisted.
fn apply(
    side: &File,
    path: &Path,
    w: &PendingWrite,
    fate: Fate,
    rng: &mut SplitMix64,
    limit: u64,
) -> Result<Fate, IoError> {
    match fate {
        Fate::Lost => Ok(fate),
        Fate::Kept | Fate::Durable => put(side, path, w.offset, &w.data, limit).map(|()| fate),
        Fate::Torn {
            granularity,
            chunks,
            ..
        } => {
            let mut mask: Vec<bool> = (0..chunks).map(|_| rng.below(2) == 0).collect();
            // Torn means a mix: at least one chunk new and at least one old.
            let pick = usize::try_from(rng.below(chunks as u64)).unwrap_or(0);
            let all_same = mask.iter().all(|&m| m) || mask.iter().all(|&m| !m);
            if all_same && let Some(m) = mask.get_mut(pick) {
                *m = !*m;
            }
            let g = granularity as u64;
            let end = w.offset + w.data.len() as u64;
            let mut chunk_start = w.offset - w.offset % g;
            for &keep in &mask {
                let lo = chunk_start.max(w.offset);
                let hi = (chunk_start + g).min(end);
                if keep {
                    let from = usize::try_from(lo - w.offset).unwrap_or(0);
                    let to = usize::try_from(hi - w.offset).unwrap_or(0);
                    if let Some(bytes) = w.data.get(from..to) {
                        put(side, path, lo, bytes, limit)?;
                    }
                }
                chunk_start += g;
            }
            Ok(Fate::Torn {
                granularity,
                persisted: mask.iter().filter(|&&m| m).count(),
                chunks,
            })
        }
    }
}

/// Reads as much of `buf` as the file has from `offset`; the rest stays as it was.
fn read_upto(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    let mut done = 0;
    while let Some(rest) = buf.get_mut(done..) {
        if rest.is_empty() {
            break;
        }
        match file.read_at(rest, offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// SplitMix64: a tiny, well-mixed, seedable generator. Enough for choosing fates, and its
/// output never changes between library versions, so a seed names the same crash forever.
/// Crash campaigns use it too, to derive their workloads and cut points from a seed.
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }

    /// Puts `items` in a random order (Fisher-Yates): the same order for the same seed.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

/// A handle opened through the simulator.
#[derive(Debug)]
struct SimFile {
    inner: Arc<dyn FileIo>,
    key: PathBuf,
    generation: u64,
    state: Arc<Mutex<SimState>>,
}

impl SimFile {
    /// Locks the simulator and checks this handle is alive and the device working.
    fn enter(
        &self,
        op: IoOp,
        offset: u64,
        len: usize,
    ) -> Result<MutexGuard<'_, SimState>, IoError> {
        let st = lock(&self.state);
        if st.generation != self.generation {
            return Err(IoError::DeviceGone {
                path: self.inner.path().to_path_buf(),
            });
        }
        if st.dead {
            return Err(self.dead_error(op, offset, len));
        }
        Ok(st)
    }

    fn dead_error(&self, op: IoOp, offset: u64, len: usize) -> IoError {
        match op {
            IoOp::Read | IoOp::Write => IoError::io(op, self.inner.path(), offset, len, eio()),
            _ => IoError::file(op, self.inner.path(), eio()),
        }
    }

    /// Counts one write or sync against an armed device; false when the device dies now.
    fn tick(st: &mut SimState) -> bool {
        st.ops += 1;
        match st.armed {
            Some(0) => {
                st.dead = true;
                st.armed = None;
                false
            }
            Some(n) => {
                st.armed = Some(n - 1);
                true
            }
            None => true,
        }
    }

    fn file_state<'a>(&self, st: &'a mut SimState) -> Result<&'a mut FileState, IoError> {
        st.files
            .get_mut(&self.key)
            .ok_or_else(|| IoError::DeviceGone {
                path: self.key.clone(),
            })
    }

    fn sync(&self, all: bool) -> Result<(), IoError> {
        let mut st = self.enter(IoOp::Sync, 0, 0)?;
        if !Self::tick(&mut st) {
            return Err(self.dead_error(IoOp::Sync, 0, 0));
        }
        if std::mem::take(&mut st.fail_next_sync) {
            return Err(IoError::file(IoOp::Sync, self.inner.path(), eio()));
        }
        if st.real_syncs {
            if all {
                self.inner.sync_all()?;
            } else {
                self.inner.sync_data()?;
            }
        }
        let len = self.inner.len()?;
        self.file_state(&mut st)?.synced(len);
        Ok(())
    }
}

impl FileIo for SimFile {
    fn path(&self) -> &Path {
        self.inner.path()
    }

    fn flush_method(&self) -> FlushMethod {
        self.inner.flush_method()
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), IoError> {
        let _st = self.enter(IoOp::Read, offset, buf.len())?;
        self.inner.read_at(buf, offset)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> Result<(), IoError> {
        self.submit(&mut [IoRequest::Write { offset, buf }])
    }

    fn submit(&self, batch: &mut [IoRequest<'_>]) -> Result<(), IoError> {
        let (op, offset, len) = batch
            .first()
            .map_or((IoOp::Write, 0, 0), |r| (r.op(), r.offset(), r.len()));
        let mut st = self.enter(op, offset, len)?;
        // Requests before the device dies go through; the rest fail.
        let mut alive = batch.len();
        for (i, r) in batch.iter().enumerate() {
            if r.is_write() && !Self::tick(&mut st) {
                alive = i;
                break;
            }
        }
        let (run, rest) = batch.split_at_mut(alive);
        let durable = self.inner.flush_method().writes_are_durable();
        let path = self.inner.path().to_path_buf();
        let file = self.file_state(&mut st)?;
        // O_DSYNC writes with nothing in doubt before them need no bookkeeping: they simply
        // move the durable image forward (and after a failure, whatever landed counts as
        // durable: there is no pre-image to roll back to).
        let fast = durable && file.pending.is_empty();
        if !fast {
            for r in run.iter() {
                if let IoRequest::Write { offset, buf } = r {
                    file.capture(&self.key, *offset, buf.len())?;
                }
            }
        }
        let result = self.inner.submit(run);
        for r in run.iter() {
            if let IoRequest::Write { offset, buf } = r {
                file.record(*offset, buf, fast || (durable && result.is_ok()));
            }
        }
        result?;
        match rest.first() {
            Some(r) => Err(IoError::io(r.op(), path, r.offset(), r.len(), eio())),
            None => Ok(()),
        }
    }

    fn sync_data(&self) -> Result<(), IoError> {
        self.sync(false)
    }

    fn sync_all(&self) -> Result<(), IoError> {
        self.sync(true)
    }

    fn len(&self) -> Result<u64, IoError> {
        let _st = self.enter(IoOp::Stat, 0, 0)?;
        self.inner.len()
    }

    fn allocate(&self, len: u64) -> Result<(), IoError> {
        let mut st = self.enter(IoOp::Allocate, 0, 0)?;
        if !Self::tick(&mut st) {
            return Err(self.dead_error(IoOp::Allocate, 0, 0));
        }
        self.inner.allocate(len)
    }

    fn truncate(&self, len: u64) -> Result<(), IoError> {
        let mut st = self.enter(IoOp::Truncate, 0, 0)?;
        if !Self::tick(&mut st) {
            return Err(self.dead_error(IoOp::Truncate, 0, 0));
        }
        if len >= self.inner.len()? {
            return Ok(());
        }
        self.file_state(&mut st)?.truncated(&self.key, len)?;
        self.inner.truncate(len)
    }
}

mod report;
pub use report::{CrashReport, Fate, FileCrash, WriteFate};

#[cfg(test)]
#[path = "crash_tests.rs"]
mod tests;
