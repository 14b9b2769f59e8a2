//! `count()`: how many rows a snapshot sees, from the smallest index, without decoding rows.
//!
//! A table keeps no row count: with MVCC every reader may see a different number (InnoDB's
//! `SELECT COUNT(*)` is a scan for the same reason). What makes minnow's count cheap is that
//! it asks the B-tree to count records from their delete mark and writer alone
//! ([`minnow_btree::BTree::count_visible`]), leaf after leaf, and decodes only the records whose
//! newest version the snapshot may not see:
//!
//! - on the **clustered index** a record written by a transaction the snapshot sees is its
//!   own visible version: it counts unless delete-marked. Any other record is rebuilt from undo
//!   as a consistent read would ([`trx::visible`]) and counts if a visible version exists. A
//!   leaf whose `PAGE_MAX_TRX_ID` (kept there as a bound on its records' writers, 0 meaning
//!   unknown) is below the view's up limit is counted from its delete marks alone.
//! - on a **secondary index** entries carry no transaction id, but a leaf whose
//!   `PAGE_MAX_TRX_ID` the snapshot sees holds only changes it sees, so its entries count
//!   unless delete-marked. Entries of any other leaf are checked against the clustered record
//!   exactly as a secondary scan checks them (the visible version must exist and have this
//!   entry), so each row counts once even while an update moves its entry.
//!
//! Every row has exactly one entry in every index, so any index gives the same answer; the
//! count walks the one with the narrowest records (InnoDB also picks the smallest secondary
//! index), which means the fewest leaves. Records to decide are collected during the walk and
//! decided after its latches are gone (deciding reads other pages: undo, the clustered index).
//! Like a scan, a count racing DDL that replaces or drops the table ends with
//! [`crate::Error::TableChanged`].
//!
//! On a table of at least [`MIN_PARALLEL_LEAVES`] leaves the walk runs on
//! `parallel_read_threads` threads (InnoDB's `innodb_parallel_read_threads`, default 4, at
//! most the machine's available parallelism), as InnoDB's parallel reader answers
//! `COUNT(*)`: the leaf level is cut into key ranges at node pointers of the upper levels and
//! the threads count ranges under the one read view
//! ([`minnow_btree::BTree::count_visible_parallel`]). The records to decide are the same, in
//! the same order, as the serial walk's.
//!
//! ## Counting twice costs nothing
//!
//! redb and LMDB answer a count from a number kept in the tree; with MVCC there is no such
//! number, but there is one that holds for a while. A walk that had to decide nothing (every
//! record's writer seen, so every writer committed before the reader's view was opened) and
//! whose writers are all older than the view's oldest active transaction counted a state that
//! any view seeing those writers sees too, until the table is written again. So each table keeps
//! [`CountCache`]: a change counter that every write statement bumps when it ends (before its
//! transaction can commit), and the last such count with the counter it was taken at and the
//! largest writer id behind it. A count whose counter matches, by a view that sees that writer
//! (`PAGE_MAX_TRX_ID`'s test: below the view's up limit), returns the number without a walk.
//! Why the order of the bump matters: a change a view can see was committed before the view
//! opened, and its bump came before its commit, so the view reads a counter past the cached
//! one. A change made while a walk runs, behind its position, bumps the counter after the walk
//! may have read it unchanged; the cached count (without the change) is then keyed to the old
//! counter, which no later reader sees.

use minnow_btree::BTree;
use minnow_btree::tree::{Counted, Parallel};

use super::Table;
use crate::error::{Result, from_tree};
use crate::schema::PRIMARY;
use crate::trx::{self, Snapshot};
use minnow_engine::entry::{Cached, EntryState};

impl Table {
    /// The number of rows in the table: every committed row (a consistent read, as
    /// [`Table::scan`] sees the table). Walks the leaves of the table's narrowest index
    /// counting records from their headers; rows changed by transactions that have not
    /// committed are rebuilt from undo. Cost: one pass over the leaves of the narrowest
    /// index (secondary or clustered), no row decoded unless a transaction the read view
    /// cannot see changed it.
    ///
    /// ```
    /// use minnow::{ColumnDef, ColumnType, Config, Database, TableDef, Value};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = Database::create(dir.path(), Config::default())?;
    /// let t = db.create_table(TableDef::new("t")
    ///     .column(ColumnDef::new("id", ColumnType::U32))
    ///     .primary_key(&["id"]))?;
    /// for i in 0..10u64 {
    ///     t.insert(&[Value::UInt(i)])?;
    /// }
    /// let mut tx = db.begin()?;
    /// tx.delete(&t, &[Value::UInt(3)])?;
    /// assert_eq!(tx.count(&t)?, 9); // the transaction sees its own delete
    /// assert_eq!(t.count()?, 10); // others do not until it commits
    /// tx.commit()?;
    /// assert_eq!(t.count()?, 9);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn count(&self) -> Result<u64> {
        let snap = Snapshot::View(self.db.inner()?.trx_sys().statement_view());
        self.count_in(&snap)
    }

    /// [`Table::count`] as `snap` sees the table.
    pub(crate) fn count_in(&self, snap: &Snapshot) -> Result<u64> {
        self.read(|t| t.count_entry(snap))
    }

    /// [`Table::count_in`] on this handle's entry, validated after the walk.
    fn count_entry(&self, snap: &Snapshot) -> Result<u64> {
        let mut admitted = self.db.admit();
        admitted.row();
        let inner = self.db.inner()?;
        let cache = &self.t.counted;
        let changes = cache.changes();
        if let Some(c) = cache.last()
            && c.changes == changes
            && snap.sees_page(c.max_trx_id)
        {
            return Ok(c.rows);
        }
        let (index, tree) = self.narrowest_index();
        let par = parallel(inner.config().parallel_read_threads);
        let counted: Counted = tree
            .count_visible_parallel(inner.pool(), snap.up_limit(), &|trx| snap.sees(trx), par)
            .map_err(|e| {
                let name = index.map_or(PRIMARY, |i| self.t.meta.secondary[i].name.as_str());
                from_tree(e, self.name(), name)
            })?;
        let reusable = counted.unresolved.is_empty() && snap.sees_page(counted.max_trx_id);
        let mut rows = counted.visible;
        for e in counted.unresolved {
            rows += u64::from(self.resolve(snap, index, e)?);
        }
        if self.t.state() != EntryState::Live {
            return Err(self.changed());
        }
        if reusable && cache.changes() == changes {
            cache.keep(Cached {
                changes,
                rows,
                max_trx_id: counted.max_trx_id,
            });
        }
        Ok(rows)
    }

    /// True if the record `e` of `index` (`None`: the clustered index), whose newest version
    /// `snap` may not see, stands for a row `snap` sees.
    fn resolve(
        &self,
        snap: &Snapshot,
        index: Option<usize>,
        e: minnow_btree::Entry,
    ) -> Result<bool> {
        let inner = self.db.inner()?;
        let meta = &self.t.meta;
        let Some(i) = index else {
            return Ok(trx::visible(inner, &self.t, snap, e.values, e.deleted)?.is_some());
        };
        let s = &meta.secondary[i];
        let pk = e.values.get(s.cols.len()..).unwrap_or_default();
        let Some(rec) = self.clustered_record(pk)? else {
            return Ok(false);
        };
        let Some(v) = trx::visible(inner, &self.t, snap, rec.values, rec.deleted)? else {
            return Ok(false);
        };
        Ok(meta.has_secondary_entry(s, &meta.row_of(v)?, &e.values))
    }

    /// The index whose leaf records are narrowest (`None` in the pair: the clustered index),
    /// and its tree. Widths are estimated from the column types: fixed-width columns count
    /// their width, variable-width ones half their maximum.
    fn narrowest_index(&self) -> (Option<usize>, &BTree) {
        let width = |tree: &BTree| -> usize {
            tree.layout()
                .fields()
                .iter()
                .map(|c| c.ty.fixed_len().unwrap_or(c.ty.max_len() / 2))
                .sum()
        };
        let mut best = (None, &self.t.clustered, width(&self.t.clustered));
        for (i, tree) in self.t.secondary.iter().enumerate() {
            let w = width(tree);
            if w < best.2 {
                best = (Some(i), tree, w);
            }
        }
        (best.0, best.1)
    }
}

/// Tables with fewer leaves than this are counted on one thread: below a few hundred leaves
/// (a few MB) starting threads costs about what they save.
const MIN_PARALLEL_LEAVES: usize = 256;

/// How a count walks with `parallel_read_threads` configured: on that many threads, at most
/// the machine's available parallelism (asked once: on Linux the answer reads cgroup files).
fn parallel(configured: usize) -> Parallel {
    #[cfg(test)]
    if let Some(p) = minnow_engine::hooks::parallel() {
        return p;
    }
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let cores = *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from));
    Parallel {
        threads: configured.min(cores).max(1),
        min_leaves: MIN_PARALLEL_LEAVES,
    }
}

#[cfg(test)]
mod tests {
    use minnow_btree::record::Value;
    use minnow_btree::tree::Parallel;

    use super::Cached;
    use crate::{ColumnDef, ColumnType, Config, Database, IndexDef, Table, TableDef};

    fn db() -> (tempfile::TempDir, Database) {
        db_with(Config::default())
    }

    /// Table `t(id)` holding ids 0..100, in a database made with `config`.
    fn db_with(config: Config) -> (tempfile::TempDir, Database) {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path(), config).unwrap();
        let t = db
            .create_table(
                TableDef::new("t")
                    .column(ColumnDef::new("id", ColumnType::U64))
                    .primary_key(&["id"]),
            )
            .unwrap();
        for i in 0..100u64 {
            t.insert(&[Value::UInt(i)]).unwrap();
        }
        (dir, db)
    }

    #[test]
    fn a_second_count_reuses_the_first_until_the_table_is_written() {
        let (_d, db) = db();
        let t = db.table("t").unwrap();
        assert_eq!(t.count().unwrap(), 100);
        let c =
            t.t.counted
                .last()
                .expect("a count with nothing to decide is kept");
        assert_eq!(c.rows, 100);
        // Reuse is real: a planted number comes back while nothing is written...
        t.t.counted.keep(Cached { rows: 7, ..c });
        assert_eq!(t.count().unwrap(), 7);
        // ...and the next write statement ends its use.
        t.insert(&[Value::UInt(1000)]).unwrap();
        assert_eq!(t.count().unwrap(), 101);
        // A failed statement counts as a write too (it may have changed and undone rows).
        assert!(t.insert(&[Value::UInt(1000)]).is_err());
        t.t.counted.keep(Cached {
            rows: 7,
            ..t.t.counted.last().unwrap()
        });
        t.insert(&[Value::UInt(1001)]).unwrap();
        assert_eq!(t.count().unwrap(), 102);
    }

    #[test]
    fn a_view_that_cannot_see_the_writers_behind_a_kept_count_walks() {
        let (_d, db) = db();
        let t = db.table("t").unwrap();
        let old = db.begin().unwrap();
        assert_eq!(old.count(&t).unwrap(), 100);
        t.insert(&[Value::UInt(500)]).unwrap();
        assert_eq!(t.count().unwrap(), 101);
        assert_eq!(t.t.counted.last().unwrap().rows, 101);
        assert_eq!(
            old.count(&t).unwrap(),
            100,
            "REPEATABLE READ: not the kept 101"
        );
        old.commit().unwrap();
    }

    /// The walk decides most records with one comparison (a writer below the view's up
    /// limit is seen) and asks the view about the rest: every kind of record must come out
    /// as the view says, the cache kept out of it.
    #[test]
    fn the_walks_inline_test_agrees_with_the_view_on_every_kind_of_record() {
        let (_dir, db) = db_with(Config {
            purge_threads: 0, // delete-marked records stay on the leaf
            ..Config::default()
        });
        let t = db.table("t").unwrap();
        let walk = |n: u64| {
            t.t.counted.forget();
            n
        };
        // Delete-marked by a commit every later view sees.
        t.delete(&[Value::UInt(3)]).unwrap();
        let old = db.begin().unwrap();
        assert_eq!(walk(old.count(&t).unwrap()), 99);
        // Delete-marked by a commit the old view does not see.
        t.delete(&[Value::UInt(5)]).unwrap();
        // An uncommitted insert and delete: only their transaction sees them.
        let mut w = db.begin().unwrap();
        w.insert(&t, &[Value::UInt(500)]).unwrap();
        w.delete(&t, &[Value::UInt(7)]).unwrap();
        let mid = db.begin().unwrap();
        assert_eq!(walk(t.count().unwrap()), 98);
        assert_eq!(walk(mid.count(&t).unwrap()), 98);
        assert_eq!(walk(old.count(&t).unwrap()), 99);
        assert_eq!(walk(w.count(&t).unwrap()), 98);
        w.commit().unwrap();
        assert_eq!(
            walk(mid.count(&t).unwrap()),
            98,
            "w committed after mid's view"
        );
        assert_eq!(walk(old.count(&t).unwrap()), 99);
        assert_eq!(walk(t.count().unwrap()), 98, "7 went, 500 came");
        mid.commit().unwrap();
        old.commit().unwrap();
    }

    #[test]
    fn a_transactions_own_changes_are_never_kept() {
        let (_d, db) = db();
        let t = db.table("t").unwrap();
        let mut tx = db.begin().unwrap();
        tx.insert(&t, &[Value::UInt(500)]).unwrap();
        tx.delete(&t, &[Value::UInt(3)]).unwrap();
        tx.delete(&t, &[Value::UInt(4)]).unwrap();
        assert_eq!(tx.count(&t).unwrap(), 99);
        assert!(t.t.counted.last().is_none_or(|c| c.rows != 99));
        tx.rollback().unwrap();
        assert_eq!(t.count().unwrap(), 100);
    }

    /// `t(k, v, pad)` of 4 KiB pages, 3,000 rows (over a hundred leaves), with purge off so
    /// that delete-marked rows stay on the leaves, and an index on `v` if `indexed` (then the
    /// narrowest index, the one counted).
    fn big(indexed: bool) -> (tempfile::TempDir, Database, Table) {
        let dir = tempfile::tempdir().unwrap();
        let config = Config {
            page_size: minnow_page::PageSize::K4,
            purge_threads: 0,
            // Commits need not reach the disk: a test of what reads see.
            flush_log_at_trx_commit: minnow_redo::FlushAtCommit::Lazy,
            ..Config::default()
        };
        let db = Database::create(dir.path(), config).unwrap();
        let mut def = TableDef::new("t")
            .column(ColumnDef::new("k", ColumnType::U64))
            .column(ColumnDef::new("v", ColumnType::U64))
            .column(ColumnDef::new("pad", ColumnType::Var(200)))
            .primary_key(&["k"]);
        if indexed {
            def = def.index(IndexDef::new("by_v", &["v"]));
        }
        let t = db.create_table(def).unwrap();
        let mut tx = db.begin().unwrap();
        for k in 0..3000u64 {
            let pad = Value::Bytes(vec![b'p'; 60 + (k % 50) as usize]);
            tx.insert(&t, &[Value::UInt(k * 2), Value::UInt(k % 97), pad])
                .unwrap();
        }
        tx.commit().unwrap();
        // The commit may have built the table bottom-up (a bulk insert into the empty
        // table): the tests below read its trees through the handle, so take it afresh.
        let t = db.table("t").unwrap();
        (dir, db, t)
    }

    /// The count of `count` walked serially and on 2 and 3 threads (cutting any number of
    /// leaves, the cache forgotten before each): all three must agree; returns the number.
    fn each_way(t: &Table, count: impl Fn() -> u64) -> u64 {
        let way = |p: Parallel| {
            minnow_engine::hooks::set_parallel(Some(p));
            t.t.counted.forget();
            let n = count();
            minnow_engine::hooks::set_parallel(None);
            n
        };
        let serial = way(Parallel {
            threads: 1,
            min_leaves: 0,
        });
        for threads in [2, 3] {
            let par = way(Parallel {
                threads,
                min_leaves: 0,
            });
            assert_eq!(par, serial, "{threads} threads");
        }
        serial
    }

    fn parallel_counts_agree(indexed: bool) {
        let (_dir, db, t) = big(indexed);
        let (index, tree) = t.narrowest_index();
        assert_eq!(index.is_some(), indexed);
        let inner = db.inner().unwrap();
        let cut = tree
            .count_visible_parallel(
                inner.pool(),
                u64::MAX,
                &|_| true,
                Parallel {
                    threads: 3,
                    min_leaves: 0,
                },
            )
            .unwrap();
        assert!(cut.ranges > 1 && cut.leaves > 20, "{cut:?}");
        // Deletes committed before every view below: delete-marked records on the leaves.
        for k in (0..3000u64).step_by(7) {
            t.delete(&[Value::UInt(k * 2)]).unwrap();
        }
        let seen = 3000 - 3000u64.div_ceil(7);
        assert_eq!(each_way(&t, || t.count().unwrap()), seen);
        // An older view must not see later inserts and deletes; an open writer sees its own.
        let old = db.begin().unwrap();
        // Its first read opens the view.
        assert_eq!(each_way(&t, || old.count(&t).unwrap()), seen);
        for k in 0..200u64 {
            t.insert(&[
                Value::UInt(k * 2 + 1),
                Value::UInt(k),
                Value::Bytes(b"n".to_vec()),
            ])
            .unwrap();
        }
        t.delete(&[Value::UInt(2)]).unwrap();
        let mut w = db.begin().unwrap();
        for k in 200..300u64 {
            w.insert(
                &t,
                &[
                    Value::UInt(k * 2 + 1),
                    Value::UInt(k),
                    Value::Bytes(b"n".to_vec()),
                ],
            )
            .unwrap();
        }
        w.update(
            &t,
            &[
                Value::UInt(4),
                Value::UInt(500),
                Value::Bytes(b"n".to_vec()),
            ],
        )
        .unwrap();
        assert_eq!(each_way(&t, || old.count(&t).unwrap()), seen);
        assert_eq!(each_way(&t, || t.count().unwrap()), seen + 200 - 1);
        assert_eq!(each_way(&t, || w.count(&t).unwrap()), seen + 300 - 1);
        w.commit().unwrap();
        assert_eq!(each_way(&t, || old.count(&t).unwrap()), seen);
        assert_eq!(each_way(&t, || t.count().unwrap()), seen + 300 - 1);
        old.commit().unwrap();
    }

    #[test]
    fn parallel_counts_of_the_clustered_index_agree_with_the_serial_walk() {
        parallel_counts_agree(false);
    }

    #[test]
    fn parallel_counts_of_a_narrow_secondary_index_agree_with_the_serial_walk() {
        parallel_counts_agree(true);
    }

    /// The knob reaches the count: one thread is the serial walk, more are capped at the
    /// machine's cores, and a table of fewer leaves than the threshold is not cut.
    #[test]
    fn parallel_read_threads_sets_the_counts_threads() {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        assert_eq!(super::parallel(1).threads, 1);
        assert_eq!(super::parallel(256).threads, cores.min(256));
        assert_eq!(super::parallel(4).min_leaves, super::MIN_PARALLEL_LEAVES);
        let (_dir, db, t) = big(false);
        let inner = db.inner().unwrap();
        let c =
            t.t.clustered
                .count_visible_parallel(inner.pool(), u64::MAX, &|_| true, super::parallel(4))
                .unwrap();
        assert!(c.leaves < super::MIN_PARALLEL_LEAVES as u64);
        assert_eq!(
            (c.ranges, c.visible),
            (1, 3000),
            "a small table walks serially"
        );
    }
}
