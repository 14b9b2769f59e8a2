//! Every phase at a tiny size on every engine: the engines must agree on what they hold
//! (counts, range contents, index lookups), and every value read must be the one written
//! (the phases check that themselves and fail otherwise).
//!
//! Not run by CI (this crate is outside the workspace): run it with
//! `cargo test --manifest-path compare/Cargo.toml`.

use minnow_compare::kv::{self, Sizes, Workload};
use minnow_compare::sbtest::{self, SbSizes};

const CACHE: usize = 16 << 20;

#[test]
fn kv_engines_agree() {
    let root = tempfile::tempdir().unwrap();
    let sizes = Sizes::tiny();
    let w = Workload::new(sizes.total(), 3).unwrap();
    let names = kv::phase_names(&sizes);
    let mut digests = Vec::new();
    for (id, _) in kv::ENGINES {
        let dir = kv::fresh_dir(root.path(), id).unwrap();
        let mut e = kv::open(id, &dir, CACHE).unwrap();
        let (figs, digest) =
            kv::run(&mut *e, &w, &sizes, 3).unwrap_or_else(|err| panic!("{id}: {err}"));
        assert_eq!(figs.len(), names.len(), "{id}: one figure per phase");
        assert!(
            figs.iter()
                .flatten()
                .all(|f| f.value.is_finite() && f.value >= 0.0),
            "{id}: {figs:?}"
        );
        assert_eq!(digest.count, sizes.total() as u64, "{id}");
        assert_eq!(
            digest.count_after_removals,
            (sizes.total() - sizes.total() / 2) as u64,
            "{id}"
        );
        digests.push((id, digest));
    }
    for (id, d) in &digests[1..] {
        assert_eq!(d, &digests[0].1, "{id} disagrees with {}", digests[0].0);
    }
}

#[test]
fn sbtest_engines_agree() {
    let root = tempfile::tempdir().unwrap();
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
        fn quiesce(&mut self) -> minnow_compare::Result<()> {
            self.0.quiesce()
        }
        fn compact(&mut self) -> minnow_compare::Result<bool> {
            self.0.compact()
        }
        fn dir(&self) -> &std::path::Path {
            self.0.dir()
        }
    }
    let root = tempfile::tempdir().unwrap();
    let sizes = Sizes::tiny();
    let w = Workload::new(sizes.total(), 3).unwrap();
    let dir = kv::fresh_dir(root.path(), "lmdb").unwrap();
    let mut e = Lossy(kv::open("lmdb", &dir, CACHE).unwrap());
    assert!(kv::run(&mut e, &w, &sizes, 3).is_err());
}
