//! [`Table::count`] (and [`crate::Transaction::count`], through `count_in`): how many rows a
//! snapshot sees. The walk is the engine's (`minnow-engine`'s `read::count` module: from the
//! narrowest index, without decoding rows, on `parallel_read_threads` threads for a big table,
//! and a count that costs nothing the second time); here are the API and its tests.

use super::Table;
use crate::error::Result;
use crate::trx::Snapshot;
use minnow_engine::read::count;

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
        let snap = Snapshot::statement(self.db.inner()?);
        self.count_in(&snap)
    }

    /// [`Table::count`] as `snap` sees the table.
    pub(crate) fn count_in(&self, snap: &Snapshot) -> Result<u64> {
        count::count(self.db.inner()?, &self.t, snap)
    }
}

#[cfg(test)]
mod tests {
    use minnow_btree::record::Value;
    use minnow_btree::tree::Parallel;

    use crate::{ColumnDef, ColumnType, Config, Database, IndexDef, Table, TableDef};
    use minnow_engine::entry::Cached;
    use minnow_engine::read::count::{MIN_PARALLEL_LEAVES, narrowest_index, parallel};

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
        let row = |k: u64| {
            let pad = Value::Bytes(vec![b'p'; 60 + (k % 50) as usize]);
            [Value::UInt(k * 2), Value::UInt(k % 97), pad]
        };
        // The first row alone: the rest go in row by row (into an empty table they would be
        // bulk-built, every index's leaves full, fewer than the cut below needs).
        t.insert(&row(0)).unwrap();
        let mut tx = db.begin().unwrap();
        for k in 1..3000u64 {
            tx.insert(&t, &row(k)).unwrap();
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
        let (index, tree) = narrowest_index(&t.t);
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
        assert_eq!(parallel(1).threads, 1);
        assert_eq!(parallel(256).threads, cores.min(256));
        assert_eq!(parallel(4).min_leaves, MIN_PARALLEL_LEAVES);
        let (_dir, db, t) = big(false);
        let inner = db.inner().unwrap();
        let c =
            t.t.clustered
                .count_visible_parallel(inner.pool(), u64::MAX, &|_| true, parallel(4))
                .unwrap();
        assert!(c.leaves < MIN_PARALLEL_LEAVES as u64);
        assert_eq!(
            (c.ranges, c.visible),
            (1, 3000),
            "a small table walks serially"
        );
    }
}
