//! Optimistic descents: a reader walks the node pages (levels 1 and up) without latching
//! them, validating versions instead, and latches only the leaf.
//!
//! ## Why
//!
//! Shared latch coupling ([`BTree::leaf_for_read`]'s fallback) takes and releases a shared
//! latch and a pin on every level: four atomic writes to the page's control block. The root
//! and the pages just below it are on *every* reader's path, so on two cores those control
//! blocks' cache lines move from core to core on every read, for pages that hardly ever
//! change. Optimistic lock coupling (Leis et al. 2016; LeanStore) reads them without
//! writing anything shared.
//!
//! ## How
//!
//! ```text
//!  root:    (level, child) = read_optimistic(root, search in place)   validated: root at v_r
//!  level k: (level, child) = read_optimistic(child, search in place)  validated: child at v_c
//!           parent still at its version?  no: start again
//!  leaf:    S-latch the leaf (pin + latch, as before)
//!           parent still at its version?  no: let go of the leaf, start again
//! ```
//!
//! Each node page is read in place by [`minnow_buf::BufferPool::read_optimistic`] (a seqlock
//! reader: see `minnow_buf::racy`) and searched by the `node::racy` search, which tolerates
//! torn bytes. Re-validating the parent *after* the child's version was read (or the leaf was
//! latched) chains the levels: at that moment the parent pointed to the child for this key,
//! so the child is the page a latched descent would have reached. A split or merge below a
//! page changes that page (its node pointers) under its exclusive latch, so it cannot slip
//! between the two checks unseen; a root raise changes the root.
//!
//! A failed validation starts the descent again from the root, at most [`TRIES`] times; then
//! the reader takes the latched descent, which waits for writers instead of racing them.
//! Keys that do not compare flat (a variable-length or nullable key column) and roots that
//! are leaves always take the latched descent.
//!
//! An optimistic read does not count as an access for the LRU (it writes nothing, so it
//! cannot): node pages stay young because writers and latched reads touch them, and an
//! evicted node page simply makes the next optimistic read fail over to the latched descent,
//! which reads it back.

use std::cell::Cell;

use minnow_buf::{BufferPool, PageReadGuard, Seen};

use super::BTree;
use super::TreeError;
use super::descend::MAX_LEVEL;
use super::page::validate;
use crate::node::racy;
use crate::record::{FlatKey, SearchKey};

/// Optimistic descents started over before a reader falls back to latch coupling.
pub(crate) const TRIES: usize = 4;

thread_local! {
    /// This thread's [`OptimisticStats`].
    static STATS: Cell<OptimisticStats> = const { Cell::new(OptimisticStats::ZERO) };
}

/// How this thread's descents for reading went (per thread, so counting writes nothing
/// shared): tests read it to see which path ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OptimisticStats {
    /// Descents that reached the leaf with every node page read optimistically.
    pub done: u64,
    /// Optimistic attempts thrown away because a page changed (or was not cached) meanwhile.
    pub retries: u64,
    /// Descents that gave up after `TRIES` (4) attempts and latched their way down.
    pub fallbacks: u64,
}

impl OptimisticStats {
    const ZERO: OptimisticStats = OptimisticStats {
        done: 0,
        retries: 0,
        fallbacks: 0,
    };
}

/// The calling thread's optimistic-descent counts so far.
pub fn optimistic_stats() -> OptimisticStats {
    STATS.with(Cell::get)
}

fn count(f: impl FnOnce(&mut OptimisticStats)) {
    STATS.with(|s| {
        let mut v = s.get();
        f(&mut v);
        s.set(v);
    });
}

/// How one optimistic attempt ended.
enum Attempt<'p> {
    /// The leaf, shared-latched.
    Leaf(PageReadGuard<'p>),
    /// A page changed or was not cached: try again.
    Retry,
    /// Not for this descent (the root is a leaf, a level looks wrong): latch instead.
    Latch,
}

impl BTree {
    /// The leaf for `key`, shared-latched, reached by an optimistic descent (see the module
    /// docs); `None` if the caller must descend with latches (a key that does not compare
    /// flat, a root that is a leaf, or [`TRIES`] failed attempts).
    pub(super) fn leaf_optimistic<'p>(
        &self,
        pool: &'p BufferPool,
        key: &SearchKey,
    ) -> Result<Option<PageReadGuard<'p>>, TreeError> {
        let Some(flat) = self.node.flat_key(key) else {
            return Ok(None);
        };
        // The node pointer's child number follows the key fields at a fixed offset.
        let child = self.node.fields().len().saturating_sub(1);
        let Some(child_at) = self.node.fixed_offset(child) else {
            return Ok(None);
        };
        for _ in 0..TRIES {
            match self.attempt(pool, &flat, child_at)? {
                Attempt::Leaf(g) => {
                    count(|s| s.done += 1);
                    return Ok(Some(g));
                }
                Attempt::Retry => count(|s| s.retries += 1),
                Attempt::Latch => return Ok(None),
            }
        }
        count(|s| s.fallbacks += 1);
        Ok(None)
    }

    /// Reads page `no` optimistically, expecting level `want` (any, for the root): its
    /// level and, on a node page, the child to follow for `key`.
    fn read_node(
        &self,
        pool: &BufferPool,
        no: u32,
        want: Option<u16>,
        key: &FlatKey<'_>,
        child_at: usize,
    ) -> Option<((u16, Option<u32>), Seen)> {
        let status = self.node.status().bits();
        pool.read_optimistic(self.id(no), |p| {
            let level = racy::level_of(&p, self.index_id)?;
            if want.is_some_and(|w| w != level) || level > MAX_LEVEL {
                return None;
            }
            if level == 0 {
                return Some((0, None));
            }
            Some((level, Some(racy::child_for(&p, status, key, child_at)?)))
        })
    }

    /// One optimistic descent from the root.
    fn attempt<'p>(
        &self,
        pool: &'p BufferPool,
        key: &FlatKey<'_>,
        child_at: usize,
    ) -> Result<Attempt<'p>, TreeError> {
        let Some(((mut level, root_child), mut seen)) =
            self.read_node(pool, self.root, None, key, child_at)
        else {
            return Ok(Attempt::Retry);
        };
        // A root that is a leaf: one page, nothing to gain.
        let Some(mut child) = root_child else {
            return Ok(Attempt::Latch);
        };
        while level > 1 {
            let Some(((_, Some(next)), below)) =
                self.read_node(pool, child, Some(level - 1), key, child_at)
            else {
                return Ok(Attempt::Retry);
            };
            if !pool.unchanged(&seen) {
                return Ok(Attempt::Retry);
            }
            (child, seen, level) = (next, below, level - 1);
        }
        let id = self.id(child);
        let g = match pool.get_read(id) {
            Ok(g) => g,
            // The page number was validated, so this is a real error; the latched descent
            // meets it again and reports it.
            Err(_) => return Ok(Attempt::Latch),
        };
        if !pool.unchanged(&seen) {
            return Ok(Attempt::Retry);
        }
        if validate(&g, id, self.index_id, Some(0)).is_err() {
            return Ok(Attempt::Latch);
        }
        Ok(Attempt::Leaf(g))
    }
}

#[cfg(test)]
mod tests {
    use minnow_buf::{BufConfig, BufferPool};
    use minnow_page::{PageId, PageSize};

    use super::*;
    use crate::node;
    use crate::record::{Column, ColumnType, RecordLayout, Value};

    /// A 120-byte key part: long node pointers, so 1000 rows make three levels.
    fn layout(var_key: bool) -> RecordLayout {
        let part = if var_key {
            ColumnType::Var(120)
        } else {
            ColumnType::Fixed(120)
        };
        RecordLayout::clustered(
            vec![Column::new(ColumnType::I64), Column::new(part)],
            vec![Column::nullable(ColumnType::Var(200))],
        )
        .unwrap()
    }

    fn key(k: i64) -> Vec<Value> {
        vec![Value::Int(k), Value::Bytes(vec![k as u8; 120])]
    }

    fn tree(dir: &std::path::Path, var_key: bool) -> (BufferPool, BTree) {
        let cfg = BufConfig::with_frames(256, PageSize::K4);
        let pool = BufferPool::create_scratch_with(dir, cfg, 1, None).unwrap();
        let (tree, _) = BTree::create(&pool, 1, 42, layout(var_key)).unwrap();
        for k in 0..1000 {
            let mut row = key(k);
            row.extend([
                Value::trx_id(1),
                Value::roll_ptr(1 << 55),
                Value::Bytes(vec![k as u8; 200]),
            ]);
            tree.insert(&pool, &row).unwrap();
        }
        assert_eq!(tree.check(&pool).unwrap().height, 3);
        (pool, tree)
    }

    fn value(tree: &BTree, pool: &BufferPool, k: i64) -> Vec<u8> {
        match tree.get(pool, &key(k)).unwrap().unwrap().values.pop() {
            Some(Value::Bytes(b)) => b,
            v => panic!("value {v:?}"),
        }
    }

    #[test]
    fn reads_descend_optimistically_and_fall_back_under_a_writer() {
        let dir = tempfile::tempdir().unwrap();
        let (pool, tree) = tree(dir.path(), false);
        let before = optimistic_stats();
        assert_eq!(value(&tree, &pool, 617), vec![617i64 as u8; 200]);
        let after = optimistic_stats();
        assert_eq!(
            after.done,
            before.done + 1,
            "a quiet tree: no latch above the leaf"
        );
        assert_eq!(after.retries, before.retries);

        // A writer holds the root: every attempt fails, and after TRIES of them the reader
        // is told to latch (which would wait for the writer: not done here, on its thread).
        let k = tree.key(&key(617)).unwrap();
        let root = pool.get_write(PageId::new(1, tree.root())).unwrap();
        assert!(tree.leaf_optimistic(&pool, &k).unwrap().is_none());
        let held = optimistic_stats();
        assert_eq!(held.retries, after.retries + TRIES as u64);
        assert_eq!(held.fallbacks, after.fallbacks + 1);
        drop(root);
        // Let go, the same read goes through again, and the latched way gives the same.
        let leaf = tree.leaf_optimistic(&pool, &k).unwrap().unwrap();
        let no = leaf.page_id().page_no;
        drop(leaf);
        assert_eq!(optimistic_stats().done, held.done + 1);
        let latched = {
            let mut g = pool.get_read(PageId::new(1, tree.root())).unwrap();
            loop {
                let level = node::level(&g).unwrap();
                if level == 0 {
                    break g.page_id().page_no;
                }
                let (_, child) = tree.child_for(g.page_id().page_no, &g, Some(&k)).unwrap();
                g = pool.get_read(PageId::new(1, child)).unwrap();
            }
        };
        assert_eq!(no, latched);
    }

    #[test]
    fn variable_length_keys_and_leaf_roots_latch_without_trying() {
        let dir = tempfile::tempdir().unwrap();
        let (pool, tree) = tree(dir.path(), true);
        let before = optimistic_stats();
        assert_eq!(value(&tree, &pool, 3), vec![3u8; 200]);
        assert_eq!(
            optimistic_stats(),
            before,
            "no flat key: straight to the latches"
        );

        let dir = tempfile::tempdir().unwrap();
        let cfg = BufConfig::with_frames(64, PageSize::K4);
        let pool = BufferPool::create_scratch_with(dir.path(), cfg, 1, None).unwrap();
        let (small, _) = BTree::create(&pool, 1, 43, layout(false)).unwrap();
        let mut row = key(1);
        row.extend([
            Value::trx_id(1),
            Value::roll_ptr(1 << 55),
            Value::Bytes(vec![9; 3]),
        ]);
        small.insert(&pool, &row).unwrap();
        let before = optimistic_stats();
        assert_eq!(value(&small, &pool, 1), vec![9; 3]);
        assert_eq!(optimistic_stats(), before, "a leaf root: nothing to skip");
    }
}
