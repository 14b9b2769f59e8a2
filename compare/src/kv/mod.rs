//! The key-value workload: redb's benchmark phases, one engine trait, one implementation per
//! engine.
//!
//! The phases (per run, on a fresh database per engine), after redb's
//! `crates/redb-bench/benches/common.rs`:
//!
//! 1. **bulk load**: `bulk` inserts in one write batch, made durable at its end.
//! 2. **individual writes**: `individual` write batches of one insert, each durable.
//! 3. **batch writes**: `batches` write batches of `batch_size` inserts, each durable.
//! 4. **count**: the number of entries.
//! 5. **random reads**: `reads` point reads of random existing keys.
//! 6. **random range reads**: `scans` reads of the `scan_len` entries from a random existing
//!    key on.
//! 7. **reads at N threads**: every key read once, split across N threads.
//! 8. **removals**: half of the keys removed in one write batch, made durable.
//! 9. **size** of the engine's files, closed, after the removals and after the engine's own
//!    compaction.
//!
//! A write batch is one real transaction on every engine, committed with the engine's default
//! (durable) setting; [`KvEngine::notes`] says what that is per engine.
//!
//! Besides the time, every phase measures the **bytes the process wrote to storage** during
//! it ([`crate::write_bytes`], before and after the phase). All engines run in this one
//! process one after the other, so the figure is the engine's own; but work an engine's
//! background threads do after a phase returns (minnow's page cleaners writing the pages a
//! load dirtied) lands in the phases after it, and the clean close writes what is still
//! dirty. The total over all phases, against the final size, is the write amplification.

mod lmdb;
pub(crate) mod minnow;
mod redb;
pub(crate) mod sqlite;

use std::path::{Path, PathBuf};
use std::time::Instant;

pub use self::lmdb::Lmdb;
pub use self::minnow::Minnow;
pub use self::redb::Redb;
pub use self::sqlite::Sqlite;
use crate::rng::Rng;
use crate::{Result, mismatch};

/// Key length in bytes (redb's benchmark: 24).
pub const KEY_LEN: usize = 24;
/// Value length in bytes (redb's benchmark: 150).
pub const VALUE_LEN: usize = 150;

/// A key-value engine under test. Every method that writes makes its change durable before
/// it returns (an fsync-class sync of whatever the engine's commit protocol needs).
pub trait KvEngine: Sync {
    /// The engine's name, as the column header.
    fn name(&self) -> &'static str;

    /// One line each: the durability setting, and what a write batch is for this engine.
    fn notes(&self) -> Vec<String>;

    /// Inserts every pair as one write batch and makes it durable; returns how many.
    fn insert(&mut self, pairs: &mut dyn Iterator<Item = (&[u8], &[u8])>) -> Result<u64>;

    /// Removes every key as one write batch and makes it durable; returns how many existed.
    fn remove(&mut self, keys: &mut dyn Iterator<Item = &[u8]>) -> Result<u64>;

    /// A reader: a read transaction (or its nearest equivalent) that one thread uses for a
    /// whole phase. Several readers may run on several threads at once.
    fn reader(&self) -> Result<Box<dyn KvReader + '_>>;

    /// Closes the database cleanly (minnow: `Database::close`, which writes every dirty page
    /// and checkpoints; SQLite: closing the last connection checkpoints and deletes the WAL),
    /// so the size of its files means something. Only [`KvEngine::reopen`] may follow.
    fn close(&mut self) -> Result<()>;

    /// Opens the database again after [`KvEngine::close`].
    fn reopen(&mut self) -> Result<()>;

    /// Runs the engine's compaction (on the open database); `false` if it has none.
    fn compact(&mut self) -> Result<bool>;

    /// The directory that holds all of the engine's files.
    fn dir(&self) -> &Path;
}

/// Reads through one engine's read transaction.
pub trait KvReader {
    /// Copies the value of `key` into `out` (cleared first); `false` if there is none.
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool>;

    /// Visits up to `n` entries in key order from `start` (included); returns how many.
    fn range(
        &mut self,
        start: &[u8],
        n: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize>;

    /// The number of entries.
    fn count(&mut self) -> Result<u64>;
}

/// The sizes of one run. [`Sizes::default`] is the published size, redb's: 1M keys loaded.
#[derive(Debug, Clone)]
pub struct Sizes {
    /// Keys inserted by the bulk load.
    pub bulk: usize,
    /// Durable single-insert write batches.
    pub individual: usize,
    /// Write batches of `batch_size` inserts.
    pub batches: usize,
    /// Inserts per write batch.
    pub batch_size: usize,
    /// Point reads in the random reads phase.
    pub reads: usize,
    /// Scans in the random range reads phase.
    pub scans: usize,
    /// Entries per scan.
    pub scan_len: usize,
    /// The thread counts of the multi-threaded read phases.
    pub threads: Vec<usize>,
}

impl Default for Sizes {
    fn default() -> Sizes {
        Sizes {
            bulk: 1_000_000,
            individual: 1_000,
            batches: 100,
            batch_size: 1_000,
            reads: 1_000_000,
            scans: 500_000,
            scan_len: 10,
            threads: vec![1, 2, 4],
        }
    }
}

impl Sizes {
    /// The default with `keys` keys loaded, `keys` point reads and `keys / 2` range reads.
    pub fn with_keys(keys: usize) -> Sizes {
        Sizes {
            bulk: keys,
            reads: keys,
            scans: keys / 2,
            ..Sizes::default()
        }
    }

    /// Every phase at a handful of operations (the smoke test).
    pub fn tiny() -> Sizes {
        Sizes {
            bulk: 2_000,
            individual: 5,
            batches: 3,
            batch_size: 50,
            reads: 500,
            scans: 200,
            scan_len: 10,
            threads: vec![1, 2],
        }
    }

    /// Keys in the database after the write phases.
    pub fn total(&self) -> usize {
        self.bulk + self.individual + self.batches * self.batch_size
    }
}

/// Every key and value of a run, generated once from a fixed seed, so generating them is
/// never inside a timed loop and every engine gets the same data.
pub struct Workload {
    keys: Vec<[u8; KEY_LEN]>,
    values: Vec<[u8; VALUE_LEN]>,
}

impl Workload {
    /// `n` random pairs from `seed`. Keys are random 24-byte strings, so all distinct in
    /// practice; [`Workload::new`] checks it.
    pub fn new(n: usize, seed: u64) -> Result<Workload> {
        let mut rng = Rng::new(seed);
        let mut keys = Vec::with_capacity(n);
        let mut values = Vec::with_capacity(n);
        for _ in 0..n {
            let mut k = [0; KEY_LEN];
            let mut v = [0; VALUE_LEN];
            rng.fill(&mut k);
            rng.fill(&mut v);
            keys.push(k);
            values.push(v);
        }
        let mut sorted: Vec<&[u8; KEY_LEN]> = keys.iter().collect();
        sorted.sort_unstable();
        if sorted.windows(2).any(|w| w[0] == w[1]) {
            return Err(mismatch("the generator produced a duplicate key"));
        }
        Ok(Workload { keys, values })
    }

    /// Key `i`.
    pub fn key(&self, i: usize) -> &[u8] {
        &self.keys[i]
    }

    /// Value `i`.
    pub fn value(&self, i: usize) -> &[u8] {
        &self.values[i]
    }

    fn pairs(&self, from: usize, to: usize) -> impl Iterator<Item = (&[u8], &[u8])> {
        (from..to).map(|i| (self.key(i), self.value(i)))
    }
}

/// A phase's result: the figure shown in the table (per operation, in the phase's unit) and
/// the wall time of the whole phase.
#[derive(Debug, Clone, Copy)]
pub struct Figure {
    /// The number shown: time per operation, or a size.
    pub value: f64,
    /// Wall time of the phase in seconds (0 for sizes).
    pub secs: f64,
}

/// The phases of [`run`], in order, with the unit of their figure.
pub fn phase_names(s: &Sizes) -> Vec<String> {
    let mut names = vec![
        format!("bulk load ({} keys, 1 transaction), µs/key", s.bulk),
        format!(
            "individual writes ({}, durable each), ms/commit",
            s.individual
        ),
        format!(
            "batch writes ({} × {} keys, durable each), ms/batch",
            s.batches, s.batch_size
        ),
        format!("count ({} keys), ms", s.total()),
        format!("random reads ({}), µs/read", s.reads),
        format!(
            "random range reads ({} × {} entries), µs/scan",
            s.scans, s.scan_len
        ),
    ];
    for t in &s.threads {
        names.push(format!(
            "random reads, {t} thread{} (all keys), µs/read (wall ÷ reads)",
            if *t == 1 { "" } else { "s" }
        ));
    }
    names.push(format!(
        "removals ({} keys, 1 transaction), µs/key",
        s.total() / 2
    ));
    names.push("size after removals (closed), MiB".into());
    names.push("size after compaction (closed), MiB".into());
    names
}

/// The rows of [`Outcome::written`]: MiB written to storage during each phase, then the
/// total and the write amplification.
pub fn written_names(s: &Sizes) -> Vec<String> {
    let mut names = vec![
        format!("bulk load ({} keys, 1 transaction), MiB written", s.bulk),
        format!("individual writes ({}), MiB written", s.individual),
        format!(
            "batch writes ({} × {} keys), MiB written",
            s.batches, s.batch_size
        ),
        "count, MiB written".into(),
        "random reads, MiB written".into(),
        "random range reads, MiB written".into(),
    ];
    for t in &s.threads {
        names.push(format!(
            "random reads, {t} thread{}, MiB written",
            if *t == 1 { "" } else { "s" }
        ));
    }
    names.push(format!("removals ({} keys), MiB written", s.total() / 2));
    names.push("clean close and reopen after removals, MiB written".into());
    names.push("compaction (with its close and reopen), MiB written".into());
    names.push("all phases, MiB written".into());
    names.push("all phases ÷ size after removals (write amplification)".into());
    names.push("bulk load ÷ size after removals".into());
    names
}

/// What [`run`] measured on one engine.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// One figure per [`phase_names`] entry (`None` where the engine cannot do the phase).
    pub figs: Vec<Option<Figure>>,
    /// One figure per [`written_names`] entry (`None`: not measured, no `/proc/self/io`, or
    /// no compaction).
    pub written: Vec<Option<f64>>,
    /// What the engine held and returned.
    pub digest: Digest,
}

/// Bytes written per phase, from [`crate::write_bytes`] read at each phase boundary.
struct Meter {
    last: Option<u64>,
    phases: Vec<Option<u64>>,
}

impl Meter {
    fn start() -> Meter {
        Meter {
            last: crate::write_bytes(),
            phases: Vec::new(),
        }
    }

    /// Ends a phase: records what was written since the last mark.
    fn mark(&mut self) {
        let now = crate::write_bytes();
        self.phases.push(match (self.last, now) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        });
        self.last = now;
    }

    /// Records a phase that did not happen.
    fn none(&mut self) {
        self.phases.push(None);
    }

    /// The rows of [`written_names`], given the size after removals in bytes.
    fn finish(self, size: u64) -> Vec<Option<f64>> {
        let all: Option<u64> = self.phases.iter().flatten().copied().reduce(|a, b| a + b);
        let ratio = |b: Option<u64>| b.map(|b| b as f64 / size.max(1) as f64);
        let bulk_bytes = self.phases.first().copied().flatten();
        let mut rows: Vec<Option<f64>> = self.phases.iter().map(|b| b.map(mib)).collect();
        rows.push(all.map(mib));
        rows.push(ratio(all));
        rows.push(ratio(bulk_bytes));
        rows
    }
}

/// What a run checked, for comparing engines with each other (the smoke test): counts and a
/// checksum of the range-read contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digest {
    /// `count` after the write phases.
    pub count: u64,
    /// `count` after the removals.
    pub count_after_removals: u64,
    /// Pairs the range reads returned (each checked against the keys in sorted order).
    pub scans: u64,
}

fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Reads keys `order` through `r`, checking every value; returns how many were read.
fn read_all(r: &mut dyn KvReader, w: &Workload, order: &[u32]) -> Result<()> {
    let mut out = Vec::with_capacity(VALUE_LEN);
    for &i in order {
        let i = i as usize;
        if !r.get(w.key(i), &mut out)? || out != w.value(i) {
            return Err(mismatch(format!("key #{i}: wrong or missing value")));
        }
    }
    Ok(())
}

/// The size of the engine's files while it is closed: closes it, measures, reopens it.
fn closed_size(e: &mut dyn KvEngine) -> Result<u64> {
    e.close()?;
    let size = crate::dir_size(e.dir());
    e.reopen()?;
    size
}

/// Runs every phase on `e` (a fresh, empty database).
pub fn run(e: &mut dyn KvEngine, w: &Workload, s: &Sizes, seed: u64) -> Result<Outcome> {
    let total = s.total();
    let mut figs: Vec<Option<Figure>> = Vec::new();
    let fig = |value: f64, secs: f64| Some(Figure { value, secs });
    let mut meter = Meter::start();

    // 1. bulk load
    let t = Instant::now();
    e.insert(&mut w.pairs(0, s.bulk))?;
    let d = secs(t);
    meter.mark();
    figs.push(fig(d * 1e6 / s.bulk as f64, d));

    // 2. individual writes
    let t = Instant::now();
    for i in s.bulk..s.bulk + s.individual {
        e.insert(&mut w.pairs(i, i + 1))?;
    }
    let d = secs(t);
    meter.mark();
    figs.push(fig(d * 1e3 / s.individual.max(1) as f64, d));

    // 3. batch writes
    let t = Instant::now();
    let from = s.bulk + s.individual;
    for b in 0..s.batches {
        let at = from + b * s.batch_size;
        e.insert(&mut w.pairs(at, at + s.batch_size))?;
    }
    let d = secs(t);
    meter.mark();
    figs.push(fig(d * 1e3 / s.batches.max(1) as f64, d));

    // 4. count
    let t = Instant::now();
    let count = e.reader()?.count()?;
    let d = secs(t);
    meter.mark();
    if count != total as u64 {
        return Err(mismatch(format!(
            "{}: count {count}, expected {total}",
            e.name()
        )));
    }
    figs.push(fig(d * 1e3, d));

    let mut rng = Rng::new(seed ^ 0x5EED);
    let mut order: Vec<u32> = (0..total as u32).collect();
    rng.shuffle(&mut order);

    // 5. random reads
    let reads: Vec<u32> = (0..s.reads)
        .map(|_| rng.below(total as u64) as u32)
        .collect();
    {
        let mut r = e.reader()?;
        let t = Instant::now();
        read_all(&mut *r, w, &reads)?;
        let d = secs(t);
        figs.push(fig(d * 1e6 / s.reads.max(1) as f64, d));
    }
    meter.mark();

    // 6. random range reads: each must return exactly the next `scan_len` pairs in key order.
    let starts: Vec<u32> = (0..s.scans)
        .map(|_| rng.below(total as u64) as u32)
        .collect();
    let mut sorted: Vec<u32> = (0..total as u32).collect();
    sorted.sort_unstable_by_key(|&i| w.key(i as usize));
    let mut rank = vec![0u32; total];
    for (r, &i) in sorted.iter().enumerate() {
        rank[i as usize] = r as u32;
    }
    let mut visited = 0u64;
    {
        let mut r = e.reader()?;
        let mut wrong = None;
        let t = Instant::now();
        for &i in &starts {
            let from = rank[i as usize] as usize;
            let want = &sorted[from..(from + s.scan_len).min(total)];
            let mut j = 0;
            let n = r.range(w.key(i as usize), s.scan_len, &mut |rk, rv| {
                match want.get(j) {
                    Some(&x) if rk == w.key(x as usize) && rv == w.value(x as usize) => {}
                    _ => wrong = Some(i),
                }
                j += 1;
            })?;
            if n != want.len() || j != want.len() {
                wrong = Some(i);
            }
            visited += n as u64;
        }
        let d = secs(t);
        if let Some(i) = wrong {
            return Err(mismatch(format!(
                "{}: the range read from key #{i} did not return the next {} pairs",
                e.name(),
                s.scan_len
            )));
        }
        figs.push(fig(d * 1e6 / s.scans.max(1) as f64, d));
    }
    meter.mark();

    // 7. reads at N threads: every key once, the shuffled order split in N slices.
    for &n in &s.threads {
        let per = order.len().div_ceil(n);
        let engine: &dyn KvEngine = e;
        let t = Instant::now();
        std::thread::scope(|sc| -> Result<()> {
            let handles: Vec<_> = order
                .chunks(per)
                .map(|slice| {
                    sc.spawn(move || -> Result<()> {
                        let mut r = engine.reader()?;
                        read_all(&mut *r, w, slice)
                    })
                })
                .collect();
            for h in handles {
                h.join()
                    .map_err(|_| mismatch("a reader thread panicked"))??;
            }
            Ok(())
        })?;
        let d = secs(t);
        meter.mark();
        figs.push(fig(d * 1e6 / total as f64, d));
    }

    // 8. removals: the first half of the keys (random keys, in the order they were made).
    let half = total / 2;
    let t = Instant::now();
    let removed = e.remove(&mut (0..half).map(|i| w.key(i)))?;
    let d = secs(t);
    meter.mark();
    if removed != half as u64 {
        return Err(mismatch(format!(
            "{}: removed {removed}, expected {half}",
            e.name()
        )));
    }
    figs.push(fig(d * 1e6 / half.max(1) as f64, d));

    // 9. sizes, closed
    let size = closed_size(e)?;
    meter.mark();
    figs.push(fig(mib(size), 0.0));
    if e.compact()? {
        figs.push(fig(mib(closed_size(e)?), 0.0));
        meter.mark();
    } else {
        figs.push(None);
        meter.none();
    }

    // What is left after closing (and compacting) must be exactly the second half.
    let after = e.reader()?.count()?;
    if after != (total - half) as u64 {
        return Err(mismatch(format!(
            "{}: {after} keys after removals and reopening, expected {}",
            e.name(),
            total - half
        )));
    }
    {
        let mut r = e.reader()?;
        let mut out = Vec::new();
        for i in [half, total - 1] {
            if !r.get(w.key(i), &mut out)? || out != w.value(i) {
                return Err(mismatch(format!(
                    "{}: key #{i} lost by closing or compaction",
                    e.name()
                )));
            }
        }
        if r.get(w.key(0), &mut out)? {
            return Err(mismatch(format!(
                "{}: removed key #0 still there",
                e.name()
            )));
        }
    }

    Ok(Outcome {
        figs,
        written: meter.finish(size),
        digest: Digest {
            count,
            count_after_removals: after,
            scans: visited,
        },
    })
}

/// A fresh directory `name` under `root` for one engine's database (removed first if left
/// over from an earlier run).
pub fn fresh_dir(root: &Path, name: &str) -> Result<PathBuf> {
    let dir = root.join(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// The engines of the key-value workload: (name on the command line, column header).
pub const ENGINES: [(&str, &str); 4] = [
    ("minnow", "minnow"),
    ("sqlite", "SQLite"),
    ("redb", "redb"),
    ("lmdb", "LMDB"),
];

/// LMDB's map size: address space only, so generous.
const LMDB_MAP: usize = 32 << 30;

/// Creates engine `name` (one of [`ENGINES`]) in the empty directory `dir`, with a cache of
/// `cache` bytes where the engine has one.
pub fn open(name: &str, dir: &Path, cache: usize) -> Result<Box<dyn KvEngine>> {
    Ok(match name {
        "minnow" => Box::new(Minnow::create(dir, cache)?),
        "sqlite" => Box::new(Sqlite::create(dir, cache)?),
        "redb" => Box::new(Redb::create(dir, cache)?),
        "lmdb" => Box::new(Lmdb::create(dir, LMDB_MAP)?),
        other => return Err(mismatch(format!("no engine called {other}"))),
    })
}
