//! Removals: a delete reads its row once (one descent: the undo record and the delete mark
//! are written in that descent's mini-transaction), its undo record holds the key alone, and everything that goes back through that
//! record — readers rebuilding the old version, rollback, purge of the old secondary entries —
//! gets the old row from the newer version. Concurrent removers, rollbacks, re-inserts,
//! purge and old-snapshot readers run together under a watchdog, so a deadlock fails the
//! test instead of hanging it.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::time::Duration;

use minnow::PageSize;
use minnow::{
    ColumnDef, ColumnType, Config, Database, IndexDef, Scan, TableDef, Transaction, Value,
};
use minnow_btree::tree::descents;

fn config(purge_threads: usize) -> Config {
    Config {
        page_size: PageSize::K4,
        buffer_pool_size: 512 * 4096,
        purge_threads,
        buffer_pool_dump_at_shutdown: false,
        flush_log_at_trx_commit: minnow::FlushAtCommit::Lazy,
        ..Config::default()
    }
}

/// `r(id U64 PK, tag Var(16), pad Var(64))` with `by_tag(tag)`.
fn table(db: &Database) -> minnow::Table {
    db.create_table(
        TableDef::new("r")
            .column(ColumnDef::new("id", ColumnType::U64))
            .column(ColumnDef::new("tag", ColumnType::Var(16)))
            .column(ColumnDef::new("pad", ColumnType::Var(64)))
            .primary_key(&["id"])
            .index(IndexDef::new("by_tag", &["tag"])),
    )
    .unwrap()
}

fn row(id: u64, round: u64) -> Vec<Value> {
    vec![
        Value::UInt(id),
        Value::text(&format!("t{}", (id * 7 + round) % 13)),
        Value::text(&format!("{id}-{round}-{}", "x".repeat((id % 40) as usize))),
    ]
}

type Rows = BTreeMap<u64, Vec<Value>>;

fn id_of(r: &[Value]) -> u64 {
    match r.first() {
        Some(Value::UInt(id)) => *id,
        other => panic!("id {other:?}"),
    }
}

/// What `tx` sees by primary key and through `by_tag`.
fn seen(tx: &mut Transaction, t: &minnow::Table) -> (Rows, Rows) {
    let by = |index: Option<&str>| -> Rows {
        let rows = match index {
            None => tx.scan(t, Scan::all()).unwrap().collect::<Vec<_>>(),
            Some(i) => tx.scan_index(t, i, Scan::all()).unwrap().collect(),
        };
        rows.into_iter()
            .map(|r| {
                let r = r.unwrap();
                (id_of(&r), r)
            })
            .collect()
    };
    (by(None), by(Some("by_tag")))
}

/// A delete on a table without secondary indexes walks the clustered index once: the read
/// that locks the row finds the leaf, and the delete mark is stamped on that leaf by its
/// page number after the undo append (the second descent it used to take is gone). Without
/// `BTree::stamp_marked_at` each delete counts 2.
#[test]
fn a_delete_descends_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config(0)).unwrap();
    let t = db
        .create_table(
            TableDef::new("kv")
                .column(ColumnDef::new("k", ColumnType::U64))
                .column(ColumnDef::new("v", ColumnType::I64))
                .primary_key(&["k"]),
        )
        .unwrap();
    for i in 0..2000u64 {
        t.insert(&[Value::UInt((i * 7919) % 2000), Value::Int(0)])
            .unwrap();
    }
    let mut tx = db.begin().unwrap();
    // The first write gives the transaction its id and undo log: not counted.
    assert!(tx.delete(&t, &[Value::UInt(0)]).unwrap());
    for k in (1..2000u64).step_by(37) {
        let before = descents();
        assert!(tx.delete(&t, &[Value::UInt(k)]).unwrap());
        assert_eq!(descents() - before, 1, "delete of {k}");
    }
    tx.commit().unwrap();
    assert_eq!(t.get(&[Value::UInt(1)]).unwrap(), None);
    assert!(t.get(&[Value::UInt(2)]).unwrap().is_some());
}

/// The old version of a removed row comes back whole (every column, through both indexes)
/// for a reader whose snapshot is older, after a rollback, and after a re-insert over the
/// delete-marked record; purge then removes the old secondary entries it finds through the
/// newer version, leaving no delete-marked record or entry.
#[test]
fn old_versions_of_removed_rows_come_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config(0)).unwrap();
    let t = table(&db);
    for id in 0..200u64 {
        t.insert(&row(id, 0)).unwrap();
    }
    let mut reader = db.begin().unwrap();
    let (old, old_sec) = seen(&mut reader, &t);
    assert_eq!((old.len(), old_sec.len()), (200, 200));
    // A removal that rolls back restores every field and entry.
    let mut tx = db.begin().unwrap();
    for id in (0..200u64).step_by(3) {
        assert!(tx.delete(&t, &[Value::UInt(id)]).unwrap());
    }
    tx.rollback().unwrap();
    for id in 0..200u64 {
        assert_eq!(t.get(&[Value::UInt(id)]).unwrap(), Some(row(id, 0)));
    }
    // Committed removals, and re-inserts with other values over some of them.
    let mut tx = db.begin().unwrap();
    for id in (0..200u64).step_by(2) {
        assert!(tx.delete(&t, &[Value::UInt(id)]).unwrap());
    }
    tx.commit().unwrap();
    for id in (0..200u64).step_by(4) {
        t.insert(&row(id, 1)).unwrap();
    }
    assert_eq!(seen(&mut reader, &t), (old.clone(), old));
    drop(reader);
    db.purge().unwrap();
    let report = db.check().unwrap();
    assert_eq!(report.rows["r"], 150, "{report:?}");
    assert_eq!(report.delete_marked, 0, "{report:?}");
    for id in 0..200u64 {
        let want = match id % 4 {
            0 => Some(row(id, 1)),
            2 => None,
            _ => Some(row(id, 0)),
        };
        assert_eq!(t.get(&[Value::UInt(id)]).unwrap(), want, "row {id}");
    }
}

/// Removers (each on its own rows, a third of their transactions rolled back), a re-inserter,
/// the purge thread, explicit purges and readers with old snapshots, all at once. Each
/// reader's snapshot stays the same to the end; afterwards purge leaves nothing
/// delete-marked. The work runs on a thread the test waits for with a time limit: a deadlock
/// between the delete path's latches, purge's and the readers' fails the test (the limit is
/// generous and says nothing about speed).
#[test]
fn removers_purge_and_old_readers_run_together() {
    const ROWS: u64 = 600;
    const REMOVERS: u64 = 3;
    // Remover `r`'s rows; it removes them 25 to a transaction, rolling back every third.
    let rows_of = |r: u64| -> Vec<u64> { (0..ROWS).filter(|id| id % REMOVERS == r).collect() };
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config(1)).unwrap();
    let t = table(&db);
    for id in 0..ROWS {
        t.insert(&row(id, 0)).unwrap();
    }
    let (done, finished) = mpsc::channel();
    let worker = {
        let db = db.clone();
        std::thread::spawn(move || {
            let t = db.table("r").unwrap();
            let mut reader = db.begin().unwrap();
            let first = seen(&mut reader, &t);
            std::thread::scope(|s| {
                for r in 0..REMOVERS {
                    let (db, t, rows_of) = (&db, &t, &rows_of);
                    s.spawn(move || {
                        for (n, chunk) in rows_of(r).chunks(25).enumerate() {
                            let mut tx = db.begin().unwrap();
                            for &id in chunk {
                                assert!(tx.delete(t, &[Value::UInt(id)]).unwrap());
                            }
                            if n % 3 == 2 {
                                tx.rollback().unwrap();
                            } else {
                                tx.commit().unwrap();
                            }
                        }
                    });
                }
                s.spawn(|| {
                    // Re-inserts over rows the removers deleted (delete-marked or purged).
                    for round in 1..=3u64 {
                        for id in (0..ROWS).step_by(11) {
                            if t.get(&[Value::UInt(id)]).unwrap().is_none() {
                                let _ = t.insert(&row(id, round));
                            }
                        }
                        db.purge().unwrap();
                    }
                });
                for _ in 0..2 {
                    s.spawn(|| {
                        let mut mine = db.begin().unwrap();
                        let at_start = seen(&mut mine, &t);
                        for _ in 0..3 {
                            assert_eq!(seen(&mut mine, &t), at_start);
                        }
                    });
                }
                for _ in 0..3 {
                    assert_eq!(seen(&mut reader, &t), first);
                }
            });
            assert_eq!(seen(&mut reader, &t), first);
            drop(reader);
            db.purge().unwrap();
            done.send(()).unwrap();
        })
    };
    // The watchdog: a generous limit (the work takes well under a second on a quiet
    // machine), only to turn a deadlock into a failure.
    match finished.recv_timeout(Duration::from_secs(120)) {
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("removers, purge and readers did not finish in 120 s: a deadlock?")
        }
        // Finished, or the worker failed an assertion: joining reports which.
        Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => worker.join().unwrap(),
    }
    let report = db.check().unwrap();
    assert_eq!(report.delete_marked, 0, "{report:?}");
    // The rows of rolled-back transactions stay (re-inserts add some of the others).
    let kept: usize = (0..REMOVERS)
        .map(|r| {
            rows_of(r)
                .chunks(25)
                .enumerate()
                .filter(|(n, _)| n % 3 == 2)
                .map(|(_, c)| c.len())
                .sum::<usize>()
        })
        .sum();
    assert!(report.rows["r"] as usize >= kept, "{kept}: {report:?}");
    let st = db.status().unwrap().transactions;
    assert_eq!(st.purge_errors, 0, "{st:?}");
}
