//! Every phase at a tiny size on every engine: the engines must agree on what they hold
//! (counts, range contents, index lookups), and every value read must be the one written
//! (the phases check that themselves and fail otherwise).
//!
//! It runs with the README's test command (`cargo test --workspace`; alone:
//! `cargo test -p minnow-compare`). The databases go under cargo's per-target temporary directory, on the disk the build is on: a tmpfs `/tmp`
//! would make the bytes-written figures zero.

use minnow_compare::kv::{self, Sizes, Workload};
use minnow_compare::sbtest::{self, SbSizes};

const CACHE: usize = 16 << 20;

/// A fresh directory on the build's disk.
fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

#[test]
fn kv_engines_agree() {
    let root = tempdir();
    let sizes = Sizes::tiny();
    let w = Workload::new(sizes.total(), 3).unwrap();
    let names = kv::phase_names(&sizes);
    let mut digests = Vec::new();
    for (id, _) in kv::ENGINES {
        let dir = kv::fresh_dir(root.path(), id).unwrap();
        let mut e = kv::open(id, &dir, CACHE).unwrap();
        let out = kv::run(&mut *e, &w, &sizes, 3).unwrap_or_else(|err| panic!("{id}: {err}"));
        let figs = &out.figs;
        assert_eq!(figs.len(), names.len(), "{id}: one figure per phase");
        assert!(
            figs.iter()
                .flatten()
                .all(|f| f.value.is_finite() && f.value >= 0.0),
            "{id}: {figs:?}"
        );
        // Every engine has a size after removals and one after its compaction.
        let size = figs[names.len() - 2].expect("size after removals").value;
        assert!(size > 0.0, "{id}: empty files after removals");
        let compacted = figs[names.len() - 1].expect("size after compaction").value;
        assert!(compacted > 0.0, "{id}: empty files after compaction");
        let d = &out.digest;
        assert_eq!(d.count, sizes.total() as u64, "{id}");
        assert_eq!(
            d.count_after_removals,
            (sizes.total() - sizes.total() / 2) as u64,
            "{id}"
        );
        // Every range read returned its full `scan_len` pairs but those near the end.
        assert!(
            d.scans > ((sizes.scans - sizes.scans / 10) * sizes.scan_len) as u64,
            "{id}: {} pairs from {} range reads",
            d.scans,
            sizes.scans
        );
        // A durable bulk load writes at least its keys and values to disk once (the other
        // tests of this binary run in parallel and may add to the figure, never take away).
        let written = kv::written_names(&sizes);
        assert_eq!(out.written.len(), written.len(), "{id}");
        let data = (sizes.bulk * (kv::KEY_LEN + kv::VALUE_LEN)) as f64 / (1024.0 * 1024.0);
        let bulk = out.written[0].expect("/proc/self/io is readable on Linux");
        assert!(
            bulk >= data,
            "{id}: bulk load wrote {bulk} MiB < {data} MiB of data"
        );
        let all = out.written[written.len() - 3].expect("a total");
        assert!(all >= bulk, "{id}");
        digests.push((id, out.digest));
    }
    for (id, d) in &digests[1..] {
        assert_eq!(d, &digests[0].1, "{id} disagrees with {}", digests[0].0);
    }
}

#[test]
fn sbtest_engines_agree() {
    let root = tempdir();
    let sizes = SbSizes::tiny();
    let rows = sbtest::make_rows(&sizes, 3);
    let names = sbtest::phase_names(&sizes);
    let mut digests = Vec::new();
    for mut e in sbtest::engines(root.path(), 0, CACHE).unwrap() {
        let (figs, digest) = sbtest::run(&mut *e, &rows, &sizes, 3)
            .unwrap_or_else(|err| panic!("{}: {err}", e.name()));
        assert_eq!(figs.len(), names.len());
        digests.push((e.name(), digest));
    }
    assert_eq!(digests.len(), 3);
    for (name, d) in &digests[1..] {
        assert_eq!(*d, digests[0].1, "{name} disagrees with {}", digests[0].0);
    }
}

#[test]
fn a_wrong_engine_is_caught() {
    // A reader that loses one key must fail the run, not win it.
    struct Lossy(Box<dyn kv::KvEngine>);
    struct LossyReader<'a>(Box<dyn kv::KvReader + 'a>);
    impl kv::KvReader for LossyReader<'_> {
        fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> minnow_compare::Result<bool> {
            let found = self.0.get(key, out)?;
            Ok(found && key[0] != 0x42)
        }
        fn range(
            &mut self,
            start: &[u8],
            n: usize,
            visit: &mut dyn FnMut(&[u8], &[u8]),
        ) -> minnow_compare::Result<usize> {
            self.0.range(start, n, visit)
        }
        fn count(&mut self) -> minnow_compare::Result<u64> {
            self.0.count()
        }
    }
    impl kv::KvEngine for Lossy {
        fn name(&self) -> &'static str {
            "lossy"
        }
        fn notes(&self) -> Vec<String> {
            Vec::new()
        }
        fn insert(
            &mut self,
            pairs: &mut dyn Iterator<Item = (&[u8], &[u8])>,
        ) -> minnow_compare::Result<u64> {
            self.0.insert(pairs)
        }
        fn remove(&mut self, keys: &mut dyn Iterator<Item = &[u8]>) -> minnow_compare::Result<u64> {
            self.0.remove(keys)
        }
        fn reader(&self) -> minnow_compare::Result<Box<dyn kv::KvReader + '_>> {
            Ok(Box::new(LossyReader(self.0.reader()?)))
        }
        fn close(&mut self) -> minnow_compare::Result<()> {
            self.0.close()
        }
        fn reopen(&mut self) -> minnow_compare::Result<()> {
            self.0.reopen()
        }
        fn compact(&mut self) -> minnow_compare::Result<bool> {
            self.0.compact()
        }
        fn dir(&self) -> &std::path::Path {
            self.0.dir()
        }
    }
    let root = tempdir();
    let sizes = Sizes::tiny();
    let w = Workload::new(sizes.total(), 3).unwrap();
    let dir = kv::fresh_dir(root.path(), "lmdb").unwrap();
    let mut e = Lossy(kv::open("lmdb", &dir, CACHE).unwrap());
    let err = kv::run(&mut e, &w, &sizes, 3).expect_err("a lossy engine must fail the run");
    assert!(err.to_string().contains("wrong or missing"), "{err}");
}
