//! Concurrent writers on a tall tree: the model test run by several threads at once, and a
//! reader passing a pessimistic writer that is stopped in the middle of a merge.
//!
//! Four writers each insert, delete and update their own keys (thread `t` the keys `k` with
//! `k % 4 == t`, so their keys share leaves and they split and merge the same pages), each
//! against an exact model of its own; two readers scan forward and backward meanwhile. The
//! writers grow the tree, shrink it to a few anchor rows and grow it again, with `check()`
//! between the phases; at the end the tree equals the union of the models.
//!
//! The keys carry a 120-byte part, so node pointers are long (about 28 to a 4 KiB page) and a
//! few thousand rows make a tree three or four levels high: splits and merges of node pages,
//! root raises and root lowers all happen while other threads read and write. A pessimistic
//! writer lets go of the latches above a safe node page (see the `descend` module), so these
//! tests are where a wrong safety judgement (a page that must split after all, with its
//! parent released) or a latch-order slip (a deadlock) would show.
//!
//! The same run on a compressed tablespace (2 KiB blocks, values that hardly compress) makes
//! the writers' compression failures, splits and retries meet on shared pages.
//!
//! `MINNOW_CONCURRENT_OPS` sets the operations per writer and phase (default 4000, 3000 on
//! the compressed tree).

mod common;

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Condvar, Mutex};

use common::{Env, Rng, SPACE, tall_key as key, tall_layout as layout, tall_row as row};
use minnow_btree::record::Value;
use minnow_btree::tree::{Descent, Guess, SearchHook};
use minnow_btree::{BTree, ScanRange, TreeError, node};
use minnow_buf::BufferPool;
use minnow_page::PageId;

const WRITERS: i64 = 4;
const READERS: usize = 2;
/// Keys `0..ANCHORS` are inserted first and never touched again: every scan must see them.
const ANCHORS: i64 = 40;
/// The writers' random keys: `ANCHORS..KEYS`, thread `t` owning those with `k % WRITERS == t`.
const KEYS: i64 = 12000;

/// A value that names its own salt (the first byte is `k ^ salt`), so a reader can check it
/// without knowing which version it sees.
fn value(k: i64, salt: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (k as u8) ^ salt ^ (i as u8).wrapping_mul(31))
        .collect()
}

fn consistent(k: i64, v: &[u8]) -> bool {
    match v.first() {
        None => true,
        Some(&b) => *v == value(k, b ^ (k as u8), v.len()),
    }
}

fn split(values: &[Value]) -> (i64, Vec<u8>) {
    match (&values[0], &values[4]) {
        (Value::Int(k), Value::Bytes(b)) => (*k, b.clone()),
        other => panic!("unexpected row {other:?}"),
    }
}

fn scan(tree: &BTree, pool: &BufferPool, range: ScanRange) -> Vec<(i64, Vec<u8>)> {
    tree.scan(pool, range)
        .unwrap()
        .map(|e| split(&e.unwrap().values))
        .collect()
}

fn anchor_value(k: i64) -> Vec<u8> {
    value(k, 0xA5, 10)
}

/// A barrier the writers meet at between phases, which a writer that panicked breaks: the
/// others then stop too instead of waiting for ever (and the readers see `broken`).
struct Phases {
    threads: usize,
    /// Arrived so far, and the generation (bumped each time all have arrived).
    state: Mutex<(usize, u64)>,
    cv: Condvar,
    broken: AtomicBool,
}

impl Phases {
    fn new(threads: usize) -> Phases {
        Phases {
            threads,
            state: Mutex::new((0, 0)),
            cv: Condvar::new(),
            broken: AtomicBool::new(false),
        }
    }

    /// Waits for every writer; true for exactly one of them (the last to arrive). Panics if
    /// the barrier is broken.
    fn wait(&self) -> bool {
        let mut st = self.state.lock().unwrap();
        let generation = st.1;
        st.0 += 1;
        if st.0 == self.threads {
            *st = (0, generation + 1);
            self.cv.notify_all();
            return true;
        }
        while st.1 == generation && !self.broken.load(Ordering::Acquire) {
            st = self.cv.wait(st).unwrap();
        }
        assert!(st.1 != generation, "another writer failed");
        false
    }

    fn brk(&self) {
        let _st = self.state.lock().unwrap();
        self.broken.store(true, Ordering::Release);
        self.cv.notify_all();
    }
}

#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Mostly inserts: the tree grows to three or four levels (root raises).
    Grow,
    /// Mostly deletes, then every non-anchor key goes: merges up to root lowers.
    Shrink,
}

/// One writer thread's run of `ops` operations of `phase` on its own keys; `own` is its
/// exact model.
fn write(
    t: i64,
    tree: &BTree,
    pool: &BufferPool,
    phase: Phase,
    ops: u64,
    rng: &mut Rng,
    own: &mut BTreeMap<i64, Vec<u8>>,
) {
    let (ins, del) = match phase {
        Phase::Grow => (60, 15),
        Phase::Shrink => (10, 80),
    };
    for n in 0..ops {
        let k = ANCHORS + (rng.below(((KEYS - ANCHORS) / WRITERS) as u64) as i64) * WRITERS + t;
        let roll = rng.below(100);
        let v = value(k, n as u8, rng.below(301) as usize);
        if roll < ins {
            match tree.insert(pool, &row(k, &v)) {
                Ok(_) => assert!(own.insert(k, v).is_none(), "thread {t}: insert {k}"),
                Err(TreeError::Duplicate { .. }) => assert!(own.contains_key(&k)),
                Err(e) => panic!("thread {t}: insert {k}: {e}"),
            }
        } else if roll < ins + del {
            match tree.delete(pool, &key(k)) {
                Ok(_) => assert!(own.remove(&k).is_some(), "thread {t}: delete {k}"),
                Err(TreeError::NotFound { .. }) => assert!(!own.contains_key(&k)),
                Err(e) => panic!("thread {t}: delete {k}: {e}"),
            }
        } else {
            // Updates change the length, so many go pessimistic (delete and insert with a
            // split).
            match tree.update(pool, &row(k, &v)) {
                Ok(_) => assert!(own.insert(k, v).is_some(), "thread {t}: update {k}"),
                Err(TreeError::NotFound { .. }) => assert!(!own.contains_key(&k)),
                Err(e) => panic!("thread {t}: update {k}: {e}"),
            }
        }
    }
}

/// A reader's loop until `stop`: full scans forward and backward, range scans and lookups.
/// Every scan is sorted, every value consistent, every anchor present. Returns the scans
/// made and the lowest and highest root level seen.
fn read(
    r: usize,
    tree: &BTree,
    pool: &BufferPool,
    stop: &AtomicBool,
    phases: &Phases,
) -> (u64, u16, u16) {
    let mut rng = Rng(0x5EED ^ r as u64);
    let (mut scans, mut low, mut high) = (0, u16::MAX, 0);
    let root = PageId::new(tree.space(), tree.root());
    loop {
        let level = node::level(&pool.get_read(root).unwrap()).unwrap();
        (low, high) = (low.min(level), high.max(level));
        let reverse = rng.below(2) == 0;
        let range = if reverse {
            ScanRange::all().reverse()
        } else {
            ScanRange::all()
        };
        let all = scan(tree, pool, range);
        let sorted = all.windows(2).all(|w| {
            if reverse {
                w[0].0 > w[1].0
            } else {
                w[0].0 < w[1].0
            }
        });
        assert!(sorted, "reader {r}: unsorted scan");
        for (k, v) in &all {
            assert!(consistent(*k, v), "reader {r}: key {k} has a torn value");
        }
        let anchors: Vec<_> = all.iter().filter(|(k, _)| *k < ANCHORS).cloned().collect();
        let mut want: Vec<_> = (0..ANCHORS).map(|k| (k, anchor_value(k))).collect();
        if reverse {
            want.reverse();
        }
        assert_eq!(anchors, want, "reader {r}: anchors");
        let lo = rng.below(KEYS as u64) as i64;
        let part = scan(
            tree,
            pool,
            ScanRange::new(Bound::Included(key(lo)), Bound::Unbounded).limit(50),
        );
        assert!(part.iter().all(|(k, v)| *k >= lo && consistent(*k, v)));
        let k = rng.below(ANCHORS as u64) as i64;
        let got = tree.get(pool, &key(k)).unwrap().map(|e| split(&e.values).1);
        assert_eq!(got, Some(anchor_value(k)), "reader {r}: anchor {k}");
        scans += 2;
        if stop.load(Ordering::Acquire) || phases.broken.load(Ordering::Acquire) {
            return (scans, low, high);
        }
    }
}

#[test]
fn writers_and_readers_grow_and_shrink_a_tall_tree() {
    grow_and_shrink(None, 4000);
}

/// The same writers and readers on a compressed tablespace (4 KiB pages in 2 KiB blocks): the
/// values hardly compress, so many changes fail to compress and `zip_retry` reorganizes or
/// splits pages while the other threads split, merge and read the same pages. Every
/// operation must succeed (no `DoesNotCompress`): a page that did not compress can always be
/// split, or was changed by another thread and is tried again.
#[test]
fn writers_and_readers_grow_and_shrink_a_compressed_tree() {
    let zip = minnow_zip::ZipConfig::new(
        minnow_zip::KeyBlockSize::K2,
        minnow_zip::Algorithm::default(),
    );
    grow_and_shrink(Some(zip), 3000);
}

/// The grow, shrink, grow run of [`write`] by [`WRITERS`] threads with [`READERS`] readers,
/// `default_ops` operations per writer and phase unless `MINNOW_CONCURRENT_OPS` says.
fn grow_and_shrink(zip: Option<minnow_zip::ZipConfig>, default_ops: u64) {
    let ops = common::env_count("MINNOW_CONCURRENT_OPS", default_ops);
    let env = Env::new(256);
    let pool = env.create_with(zip);
    let (tree, _) = BTree::create(&pool, SPACE, 7, layout()).unwrap();
    for k in 0..ANCHORS {
        tree.insert(&pool, &row(k, &anchor_value(k))).unwrap();
    }
    let plan = [Phase::Grow, Phase::Shrink, Phase::Grow];
    let phases = Phases::new(WRITERS as usize);
    let heights = Mutex::new(Vec::new());
    let stop = AtomicBool::new(false);
    let (models, reads) = std::thread::scope(|s| {
        let readers: Vec<_> = (0..READERS)
            .map(|r| {
                let (tree, pool, stop, phases) = (&tree, &pool, &stop, &phases);
                s.spawn(move || read(r, tree, pool, stop, phases))
            })
            .collect();
        let writers: Vec<_> = (0..WRITERS)
            .map(|t| {
                let (tree, pool, phases, heights) = (&tree, &pool, &phases, &heights);
                s.spawn(move || {
                    let run = || {
                        let mut rng = Rng(0xC0FFEE ^ t as u64);
                        let mut own = BTreeMap::new();
                        for phase in plan {
                            write(t, tree, pool, phase, ops, &mut rng, &mut own);
                            if let Phase::Shrink = phase {
                                for k in std::mem::take(&mut own).into_keys() {
                                    tree.delete(pool, &key(k)).unwrap();
                                }
                            }
                            // Between phases, with the writers still: the tree is sound.
                            if phases.wait() {
                                let stats = tree.check(pool).unwrap();
                                heights.lock().unwrap().push((stats.height, stats.records));
                            }
                            phases.wait();
                        }
                        own
                    };
                    let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run));
                    done.unwrap_or_else(|e| {
                        phases.brk();
                        std::panic::resume_unwind(e)
                    })
                })
            })
            .collect();
        let models: Vec<_> = writers.into_iter().map(|h| h.join().unwrap()).collect();
        stop.store(true, Ordering::Release);
        let reads: Vec<_> = readers.into_iter().map(|h| h.join().unwrap()).collect();
        (models, reads)
    });
    let stats = tree.check(&pool).unwrap();
    let mut want: BTreeMap<i64, Vec<u8>> = (0..ANCHORS).map(|k| (k, anchor_value(k))).collect();
    for m in models {
        want.extend(m);
    }
    let all = scan(&tree, &pool, ScanRange::all());
    assert_eq!(all, want.into_iter().collect::<Vec<_>>());
    assert_eq!(stats.records as usize, all.len());
    let heights = heights.into_inner().unwrap();
    eprintln!(
        "concurrent: {WRITERS} writers x {ops} ops x 3 phases; (height, records) after each: {heights:?}; reads {reads:?}; final pages per level {:?}",
        stats.pages_per_level
    );
    // Grown three levels high (root raises), shrunk back to the anchors (root lowers), grown
    // again.
    assert!(heights[0].0 >= 3, "{heights:?}");
    assert_eq!(heights[1].1, ANCHORS as u64);
    assert!(heights[1].0 < heights[0].0, "{heights:?}");
    assert!(heights[2].0 >= 3, "{heights:?}");
    assert!(reads.iter().all(|(scans, _, _)| *scans > 0));
    if zip.is_some() {
        let z = tree.zip_stats().unwrap();
        eprintln!("concurrent on a compressed tree: {z:?}");
        assert!(z.failures > 0 && z.zip_splits > 0, "{z:?}");
    }
    pool.shutdown().unwrap();
}

/// What the paused writer tells the test.
enum Event {
    /// A merge is freeing a page: the writer holds its latches and waits for `go`.
    Paused,
    /// The writer's deletes are over (and no merge freed a page, if `Paused` did not come
    /// first).
    Finished,
}

/// A search hook whose only part is to stop the first merge that frees a leaf, inside the
/// pessimistic mtr (every latch of the merge held), until the test says go.
struct PauseOnFree {
    events: Sender<Event>,
    go: Mutex<Receiver<()>>,
    armed: AtomicBool,
    freed: AtomicU64,
}

impl std::fmt::Debug for PauseOnFree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PauseOnFree").finish_non_exhaustive()
    }
}

impl SearchHook for PauseOnFree {
    fn guess(&self, _key: &minnow_btree::record::SearchKey) -> Option<Guess> {
        None
    }
    fn verified(&self, _guess: &Guess, _hit: bool) {}
    fn descended(&self, _descent: &Descent<'_>) {}
    fn page_freed(&self, _page_no: u32) {
        self.freed.fetch_add(1, Ordering::Relaxed);
        if self.armed.swap(false, Ordering::AcqRel) {
            self.events.send(Event::Paused).unwrap();
            self.go.lock().unwrap().recv().unwrap();
        }
    }
}

/// A delete merging leaves under the first level-1 page is stopped while it holds the
/// merge's latches; meanwhile the root is not latched and a lookup and a scan under the last
/// level-1 page complete. (With the whole path latched from the root, as before, the root
/// would be X-latched here and the reader would wait for the writer.)
#[test]
fn a_reader_passes_a_pessimistic_writer_stopped_in_a_merge() {
    const ROWS: i64 = 1000;
    let env = Env::new(256);
    let pool = env.create();
    let (tree, _) = BTree::create(&pool, SPACE, 8, layout()).unwrap();
    for k in 0..ROWS {
        tree.insert(&pool, &row(k, &value(k, 1, 200))).unwrap();
    }
    assert_eq!(tree.check(&pool).unwrap().height, 3);
    let (events, got) = channel();
    let (go, wait) = channel();
    let hook = Arc::new(PauseOnFree {
        events: events.clone(),
        go: Mutex::new(wait),
        armed: AtomicBool::new(true),
        freed: AtomicU64::new(0),
    });
    let hooked = tree.clone().with_search_hook(hook.clone());
    let root = PageId::new(SPACE, tree.root());
    let far = ROWS - 1;
    let (root_free, seen) = std::thread::scope(|s| {
        let writer = s.spawn(|| {
            // Deletes from the left until a merge frees a leaf (and was let go on).
            for k in 0..ROWS / 4 {
                hooked.delete(&pool, &key(k)).unwrap();
                if hook.freed.load(Ordering::Relaxed) > 0 {
                    break;
                }
            }
            events.send(Event::Finished).unwrap();
        });
        let paused = matches!(got.recv().unwrap(), Event::Paused);
        // Only look if the root is free: a reader that waited for the paused writer would
        // wait for ever.
        let root_free = paused && pool.optimistic(root).is_some();
        let seen = root_free.then(|| {
            let one = tree
                .get(&pool, &key(far))
                .unwrap()
                .map(|e| split(&e.values));
            let range = ScanRange::new(Bound::Included(key(far - 20)), Bound::Unbounded);
            (one, scan(&tree, &pool, range).len())
        });
        if paused {
            go.send(()).unwrap();
        }
        writer.join().unwrap();
        (root_free, seen)
    });
    assert!(
        hook.freed.load(Ordering::Relaxed) > 0,
        "no merge freed a leaf"
    );
    assert!(
        root_free,
        "the root is X-latched by the writer stopped in a merge"
    );
    let (one, n) = seen.unwrap();
    assert_eq!(one, Some((far, value(far, 1, 200))));
    assert_eq!(n, 21);
    tree.check(&pool).unwrap();
    pool.shutdown().unwrap();
}
