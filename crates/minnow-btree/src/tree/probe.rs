//! One descent for a transactional insert: InnoDB's `PAGE_CUR_LE` search that positions the
//! cursor once for the duplicate check, the gap check and the insert.
//!
//! A transactional insert needs three answers about its key before it writes: is there a
//! record with the key already (a duplicate, or a delete-marked record to write over), which
//! record follows the key (the end of the gap the insert enters, whose locks it must check),
//! and where the record goes. InnoDB gets all three from one search that leaves the cursor on
//! the last record `<=` the key, with the leaf latched: the record at the cursor is the
//! duplicate candidate, the next record (or the first of the next page) is the successor,
//! and the optimistic insert goes in right after the cursor.
//!
//! minnow cannot keep the leaf latched across the whole insert: the row lock checks and the
//! undo append come between, and both rank above page latches (ARCHITECTURE.md, "The latch
//! order"). So [`BTree::probe_insert`] answers the first two questions in one shared descent
//! and remembers the leaf it ended on as a [`LeafHint`]: its page number and its LSN. Every
//! change of a page moves its LSN (a freed page is zeroed), so while the LSN is unchanged the
//! page holds the same records and the same key range, and the answers still hold:
//!
//! ```text
//!   probe_insert(k):  descend (S), search leaf L  ->  existing?  successor?  hint (L, lsn)
//!   ...row locks, undo...
//!   InsertProbe::still_valid:     S-latch L by number: lsn the same? (no descent)
//!   BTree::insert_hinted(hint):   X-latch L by number: lsn the same? insert there (no descent)
//!                                 else: the ordinary descent (optimistic, then pessimistic)
//! ```
//!
//! When the key falls after the last record of its leaf, the successor is the first record
//! of the next leaf, read by latch coupling to the right (left to right, as a scan); the probe
//! then remembers that page's LSN too, since a record inserted there would be the new
//! successor. A stale hint costs one page latch and then the ordinary path: nothing is ever
//! written through a hint that does not match.

use minnow_buf::{BufferPool, Mtr, PageHandle};
use minnow_page::fil;

use super::page::{NIL, next, validate};
use super::{BTree, Entry, TreeError};
use crate::node::{self, Cursor};
use crate::record::{SearchKey, Value};

/// A leaf remembered by page number and page LSN: the position a probe found is still good
/// while the page's LSN has not moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PageAt {
    pub(super) page_no: u32,
    pub(super) lsn: u64,
}

/// The leaf a point lookup read a record on, as page number and LSN
/// ([`crate::tree::LeafRecord::position`]): a change of that record right after latches the
/// leaf by its number instead of descending, if the LSN has not moved
/// ([`BTree::stamp_marked_at`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeafPos {
    pub(super) at: PageAt,
    /// The record's origin on the leaf: while the LSN is the same the record is still there
    /// (checked against the key all the same, so a position of another key finds nothing).
    pub(super) origin: usize,
}

/// Where a probed key goes: its leaf (as page number and LSN) and the key itself. An insert
/// of any other key ignores the hint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeafHint {
    at: PageAt,
    key: SearchKey,
}

/// What [`BTree::probe_insert`] found for a key.
#[derive(Debug, Clone)]
pub struct InsertProbe {
    /// The record with the key (delete-marked or not), off-page fields fetched.
    pub existing: Option<Entry>,
    /// The key of the first record after the key (delete-marked records included), as stored
    /// field bytes; `None` if no record follows (the gap ends at the index's supremum).
    /// Only looked for when there is no `existing` record (then `None` too).
    pub successor: Option<SearchKey>,
    /// The leaf the key belongs to.
    leaf: LeafHint,
    /// The leaf the successor was read from, when it is not `leaf`.
    right: Option<PageAt>,
    /// False when the successor was found more than one leaf to the right (past empty
    /// leaves): the two hints do not cover the gap, and [`InsertProbe::still_valid`] says no.
    covered: bool,
}

impl InsertProbe {
    /// The leaf the key belongs to, for [`BTree::insert_hinted`].
    pub fn hint(&self) -> &LeafHint {
        &self.leaf
    }

    /// True if no page the probe read has changed since (each one's LSN is the same), so
    /// `existing` and `successor` still hold. Latches each page shared by its number, without
    /// a descent. A page that cannot be read counts as changed: a fresh probe reports the
    /// damage.
    pub fn still_valid(&self, tree: &BTree, pool: &BufferPool) -> bool {
        self.covered
            && [Some(self.leaf.at), self.right]
                .into_iter()
                .flatten()
                .all(|h| match pool.get_read(tree.id(h.page_no)) {
                    Ok(g) => g.lsn().0 == h.lsn,
                    Err(_) => false,
                })
    }
}

impl BTree {
    /// One shared descent for an insert of `key` (a full key): the record with the key if
    /// there is one, else the key of the record after it, and the leaf as a hint for
    /// [`BTree::insert_hinted`]. See the module docs.
    pub fn probe_insert(&self, pool: &BufferPool, key: &[Value]) -> Result<InsertProbe, TreeError> {
        let k = self.key(key)?;
        let mut g = self.leaf_for_read(pool, Some(&k))?;
        let found = node::search(&g, &self.leaf, &k)?;
        let at = PageAt {
            page_no: g.page_id().page_no,
            lsn: g.lsn().0,
        };
        let mut probe = InsertProbe {
            existing: None,
            successor: None,
            leaf: LeafHint { at, key: k },
            right: None,
            covered: true,
        };
        if found.exact {
            probe.existing = Some(Entry {
                values: self.decode_leaf(pool, &g, found.cursor.origin(), None)?,
                deleted: node::header_at(&g, found.cursor)?.deleted(),
                page_max_trx_id: node::max_trx_id(&g)?,
            });
            return Ok(probe);
        }
        if found.up.is_user() {
            probe.successor = Some(self.leaf.key_of(&g, found.up.origin())?);
            return Ok(probe);
        }
        // Past the leaf's last record: the successor is the first record to the right.
        let mut steps = 0;
        loop {
            let no = g.page_id().page_no;
            let r = next(&g).map_err(|e| self.corrupt(no, e.to_string()))?;
            if r == NIL {
                return Ok(probe);
            }
            let id = self.id(r);
            let c = pool.get_read(id)?;
            validate(&c, id, self.index_id, Some(0))?;
            g = c; // the left latch goes only now: coupling, left to right
            steps += 1;
            if steps == 1 {
                probe.right = Some(PageAt {
                    page_no: r,
                    lsn: g.lsn().0,
                });
            } else {
                probe.covered = false;
            }
            let first = node::next(&g, Cursor::INFIMUM)?;
            if first.is_user() {
                probe.successor = Some(self.leaf.key_of(&g, first.origin())?);
                return Ok(probe);
            }
        }
    }

    /// [`BTree::insert_trx`] that first tries the leaf `hint` names: latched exclusively by
    /// its number, used if its LSN is unchanged and the record's key is the probed one (no
    /// descent), else let go for the ordinary descent. The result is the same either way.
    pub fn insert_hinted(
        &self,
        pool: &BufferPool,
        values: &[Value],
        trx_id: u64,
        hint: &LeafHint,
    ) -> Result<minnow_redo::Lsn, TreeError> {
        let p = self.prepare(pool, values)?;
        self.zip_retry(pool, || self.insert_prepared(pool, &p, trx_id, Some(hint)))
    }

    /// The hinted leaf, latched by `mtr`, if the hint is for `key` and the leaf's LSN is still
    /// the hint's; else nothing is left latched.
    pub(crate) fn latch_hinted(
        &self,
        mtr: &mut Mtr<'_>,
        hint: &LeafHint,
        key: &SearchKey,
    ) -> Result<Option<PageHandle>, TreeError> {
        if hint.key != *key {
            return Ok(None);
        }
        self.latch_at(mtr, hint.at)
    }

    /// Leaf `at.page_no` latched exclusively by `mtr`, if it is still a leaf of this tree
    /// with LSN `at.lsn`; else nothing is left latched.
    pub(super) fn latch_at(
        &self,
        mtr: &mut Mtr<'_>,
        at: PageAt,
    ) -> Result<Option<PageHandle>, TreeError> {
        let id = self.id(at.page_no);
        let h = mtr.get_write(id)?;
        let page = mtr.page(h);
        let same = fil::page_lsn(page).ok() == Some(at.lsn)
            && validate(page, id, self.index_id, Some(0)).is_ok();
        if same {
            return Ok(Some(h));
        }
        mtr.release(h)?;
        Ok(None)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use minnow_buf::{BufConfig, BufferPool};
    use minnow_page::PageSize;

    use super::super::{BTree, descents};
    use crate::record::{Column, ColumnType, RecordLayout, Value};

    pub(crate) fn row(k: u64) -> Vec<Value> {
        vec![
            Value::UInt(k),
            Value::trx_id(1),
            Value::roll_ptr(1 << 55),
            Value::Bytes(vec![k as u8; 150]),
        ]
    }

    /// Even keys 0, 2, .. 2 * (n - 1) in a tree of 4 KiB pages (about 20 rows to a leaf).
    pub(crate) fn tree(dir: &std::path::Path, n: u64) -> (BufferPool, BTree) {
        let cfg = BufConfig::with_frames(256, PageSize::K4);
        let pool = BufferPool::create_scratch(dir, cfg, 1).unwrap();
        let layout = RecordLayout::clustered(
            vec![Column::new(ColumnType::U64)],
            vec![Column::new(ColumnType::Fixed(150))],
        )
        .unwrap();
        let (tree, _) = BTree::create(&pool, 1, 42, layout).unwrap();
        for k in 0..n {
            tree.insert(&pool, &row(2 * k)).unwrap();
        }
        (pool, tree)
    }

    fn key_of(tree: &BTree, k: u64) -> crate::record::SearchKey {
        tree.key(&[Value::UInt(k)]).unwrap()
    }

    /// Every gap of a tree of many leaves, the ones at leaf ends included: the probe finds the
    /// next key in one descent, and finds an existing key with its record.
    #[test]
    fn probe_finds_the_successor_in_one_descent() {
        let dir = tempfile::tempdir().unwrap();
        let (pool, tree) = tree(dir.path(), 400);
        assert!(tree.check(&pool).unwrap().height >= 2);
        for k in 0..400u64 {
            let before = descents();
            let p = tree.probe_insert(&pool, &[Value::UInt(2 * k + 1)]).unwrap();
            assert_eq!(descents() - before, 1, "key {}", 2 * k + 1);
            assert!(p.existing.is_none());
            let want = (k < 399).then(|| key_of(&tree, 2 * k + 2));
            assert_eq!(p.successor, want, "key {}", 2 * k + 1);
            assert!(p.still_valid(&tree, &pool));
        }
        let p = tree.probe_insert(&pool, &[Value::UInt(84)]).unwrap();
        let e = p.existing.expect("key 84 is there");
        assert_eq!((e.values, e.deleted), (row(84), false));
        tree.set_delete_mark(&pool, &[Value::UInt(84)], true)
            .unwrap();
        let p = tree.probe_insert(&pool, &[Value::UInt(84)]).unwrap();
        assert!(p.existing.is_some_and(|e| e.deleted));
    }

    /// A fresh hint inserts without a descent; a hint whose leaf changed meanwhile is let go
    /// and the insert descends as usual, into the right place.
    #[test]
    fn hinted_insert_descends_only_when_the_leaf_changed() {
        let dir = tempfile::tempdir().unwrap();
        let (pool, tree) = tree(dir.path(), 400);
        // An ascending load leaves every leaf full: make room where 101 and 201 go, so their
        // inserts need no split (which descends, pessimistically).
        for k in [96, 98, 196, 198] {
            tree.delete(&pool, &[Value::UInt(k)]).unwrap();
        }
        let p = tree.probe_insert(&pool, &[Value::UInt(101)]).unwrap();
        let before = descents();
        tree.insert_hinted(&pool, &row(101), 0, p.hint()).unwrap();
        assert_eq!(descents() - before, 0);
        assert!(
            !p.still_valid(&tree, &pool),
            "the insert moved the leaf's LSN"
        );

        let stale = tree.probe_insert(&pool, &[Value::UInt(201)]).unwrap();
        tree.insert(&pool, &row(203)).unwrap();
        assert!(!stale.still_valid(&tree, &pool));
        let before = descents();
        tree.insert_hinted(&pool, &row(201), 0, stale.hint())
            .unwrap();
        assert_eq!(descents() - before, 1);
        // Hints at the leaf of other keys fall back too: every insert lands in order.
        for k in (301..701).step_by(2) {
            let p = tree.probe_insert(&pool, &[Value::UInt(k)]).unwrap();
            let elsewhere = tree.probe_insert(&pool, &[Value::UInt(k + 100)]).unwrap();
            let hint = if k % 4 == 1 {
                p.hint()
            } else {
                elsewhere.hint()
            };
            tree.insert_hinted(&pool, &row(k), 0, hint).unwrap();
        }
        let stats = tree.check(&pool).unwrap();
        assert_eq!(stats.records, 400 - 4 + 3 + 200);
        for k in [101, 201, 203, 301, 303, 699] {
            assert_eq!(
                tree.get(&pool, &[Value::UInt(k)]).unwrap().unwrap().values,
                row(k)
            );
        }
        assert!(matches!(
            tree.insert_hinted(&pool, &row(301), 0, stale.hint()),
            Err(super::super::TreeError::Duplicate { .. })
        ));
    }

    /// A stamp at a remembered position neither descends nor searches while the leaf is
    /// unchanged; a position whose leaf changed, or one of another key (on the same leaf or
    /// another), falls back to the ordinary search and stamps the right record.
    #[test]
    fn stamp_at_a_position_descends_only_when_it_must() {
        let dir = tempfile::tempdir().unwrap();
        let (pool, tree) = tree(dir.path(), 400);
        let pos = |k: u64| {
            tree.get_with(&pool, &[Value::UInt(k)], |r| r.position())
                .unwrap()
                .flatten()
                .unwrap()
        };
        let sys = |k: u64| {
            let e = tree.get(&pool, &[Value::UInt(k)]).unwrap().unwrap();
            (e.values[1].clone(), e.values[2].clone(), e.deleted)
        };
        let at = pos(100);
        let before = descents();
        tree.stamp_marked_at(&pool, &[Value::UInt(100)], 7, 70, Some(true), Some(at))
            .unwrap();
        assert_eq!(descents() - before, 0);
        assert_eq!(sys(100), (Value::trx_id(7), Value::roll_ptr(70), true));
        // The stamp moved the leaf's LSN: the same position is stale now.
        let before = descents();
        tree.stamp_marked_at(&pool, &[Value::UInt(102)], 8, 80, Some(true), Some(at))
            .unwrap();
        assert_eq!(descents() - before, 1);
        // Positions of other keys: a neighbour on the same leaf, a key on another leaf.
        for (k, other) in [(104, 106), (300, 700)] {
            tree.stamp_marked_at(
                &pool,
                &[Value::UInt(k)],
                9,
                90,
                Some(true),
                Some(pos(other)),
            )
            .unwrap();
            assert_eq!(
                sys(k),
                (Value::trx_id(9), Value::roll_ptr(90), true),
                "key {k}"
            );
            assert!(!sys(other).2, "key {other}");
        }
        assert_eq!(sys(102), (Value::trx_id(8), Value::roll_ptr(80), true));
        tree.check(&pool).unwrap();
    }
}
