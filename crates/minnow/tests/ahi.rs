//! The adaptive hash index and admission control through the embedded API: lookups are
//! answered by the hash once warm and stay right, the runtime switch and DDL empty it, and
//! `thread_concurrency` keeps threads out (counted, not timed).

use std::sync::atomic::{AtomicBool, Ordering};

use minnow::{ColumnDef, ColumnType, Config, Database, IndexDef, Scan, TableDef, Value};

fn config() -> Config {
    Config {
        buffer_pool_size: 16 << 20,
        page_size: minnow::PageSize::K4,
        flush_log_at_trx_commit: minnow::FlushAtCommit::Lazy,
        ..Config::default()
    }
}

fn sbtest(db: &Database, rows: u64) -> minnow::Table {
    let t = db
        .create_table(
            TableDef::new("sbtest")
                .column(ColumnDef::new("id", ColumnType::U64))
                .column(ColumnDef::new("k", ColumnType::U64))
                .column(ColumnDef::new("c", ColumnType::Var(60)))
                .primary_key(&["id"])
                .index(IndexDef::new("k_1", &["k"])),
        )
        .unwrap();
    t.load((0..rows).map(|i| {
        vec![
            Value::UInt(i),
            Value::UInt(i / 4),
            Value::Bytes(format!("c{i}").into_bytes()),
        ]
    }))
    .unwrap();
    db.table("sbtest").unwrap()
}

fn row(i: u64) -> Vec<Value> {
    vec![
        Value::UInt(i),
        Value::UInt(i / 4),
        Value::Bytes(format!("c{i}").into_bytes()),
    ]
}

#[test]
fn point_lookups_and_non_covering_scans_go_through_the_hash() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config()).unwrap();
    let t = sbtest(&db, 4000);
    for _ in 0..3 {
        for i in 0..4000 {
            assert_eq!(t.get(&[Value::UInt(i)]).unwrap(), Some(row(i)));
        }
    }
    let warm = db.ahi_stats().unwrap();
    assert!(
        warm.enabled && warm.pages_hashed > 0 && warm.entries > 0,
        "{warm:?}"
    );
    for i in 0..4000 {
        assert_eq!(t.get(&[Value::UInt(i)]).unwrap(), Some(row(i)));
    }
    let after = db.ahi_stats().unwrap();
    assert_eq!(after.hits - warm.hits, 4000);

    // q4: a non-covering secondary-index range, each row fetched by primary key.
    let k = |v: u64| std::ops::Bound::Included(vec![Value::UInt(v)]);
    let rows: Vec<_> = t
        .scan_index("k_1", Scan::range(k(10), k(19)).limit(1000))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows, (40..80).map(row).collect::<Vec<_>>());
    assert!(db.ahi_stats().unwrap().hits >= after.hits + 40);

    // Writes keep it right.
    t.update(&[
        Value::UInt(7),
        Value::UInt(1),
        Value::Bytes(b"new".to_vec()),
    ])
    .unwrap();
    t.delete(&[Value::UInt(8)]).unwrap();
    assert_eq!(
        t.get(&[Value::UInt(7)]).unwrap(),
        Some(vec![
            Value::UInt(7),
            Value::UInt(1),
            Value::Bytes(b"new".to_vec())
        ])
    );
    assert_eq!(t.get(&[Value::UInt(8)]).unwrap(), None);

    // Off at runtime: empty, no probes; on: relearns.
    db.set_adaptive_hash_index(false).unwrap();
    let off = db.ahi_stats().unwrap();
    assert_eq!((off.enabled, off.entries), (false, 0));
    for i in 0..4000 {
        if i != 7 && i != 8 {
            assert_eq!(t.get(&[Value::UInt(i)]).unwrap(), Some(row(i)));
        }
    }
    assert_eq!(db.ahi_stats().unwrap().lookups, off.lookups);
    db.set_adaptive_hash_index(true).unwrap();
    for _ in 0..3 {
        for i in 100..4000 {
            assert_eq!(t.get(&[Value::UInt(i)]).unwrap(), Some(row(i)));
        }
    }
    assert!(db.ahi_stats().unwrap().entries > 0);

    // Dropping the table takes its entries with it.
    drop(t);
    db.drop_table("sbtest").unwrap();
    let dropped = db.ahi_stats().unwrap();
    assert_eq!((dropped.entries, dropped.pages_hashed), (0, 0));
    db.check().unwrap();
}

#[test]
fn the_hash_can_start_off_and_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::create(
            dir.path(),
            Config {
                adaptive_hash_index: false,
                ..config()
            },
        )
        .unwrap();
        let t = sbtest(&db, 1000);
        for _ in 0..3 {
            for i in 0..1000 {
                assert_eq!(t.get(&[Value::UInt(i)]).unwrap(), Some(row(i)));
            }
        }
        let s = db.ahi_stats().unwrap();
        assert_eq!((s.enabled, s.lookups, s.entries), (false, 0, 0));
        db.close().unwrap();
    }
    let db = Database::open(dir.path(), config()).unwrap();
    let t = db.table("sbtest").unwrap();
    for _ in 0..3 {
        for i in 0..1000 {
            assert_eq!(t.get(&[Value::UInt(i)]).unwrap(), Some(row(i)));
        }
    }
    assert!(db.ahi_stats().unwrap().hits > 0);
}

#[test]
fn no_limit_counts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config()).unwrap();
    let t = sbtest(&db, 100);
    for i in 0..100 {
        t.get(&[Value::UInt(i)]).unwrap();
    }
    let n = t.scan(Scan::all()).unwrap().count();
    assert_eq!(n, 100);
    let s = db.admission_stats().unwrap();
    assert_eq!((s.thread_concurrency, s.entries, s.peak_inside), (0, 0, 0));
}

#[test]
fn thread_concurrency_keeps_a_second_thread_waiting_until_the_first_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(
        dir.path(),
        Config {
            thread_concurrency: 1,
            concurrency_tickets: 10,
            ..config()
        },
    )
    .unwrap();
    let t = sbtest(&db, 100);
    // An open scan holds the only slot (and a lookup per row on the same thread rides on it).
    let mut rows = t.scan(Scan::all()).unwrap();
    for i in 0..5 {
        let r = rows.next().unwrap().unwrap();
        assert_eq!(t.get(&[r[0].clone()]).unwrap(), Some(row(i)));
    }
    assert_eq!(db.admission_stats().unwrap().inside, 1);
    let finished = AtomicBool::new(false);
    std::thread::scope(|s| {
        let h = s.spawn(|| {
            let t = db.table("sbtest").unwrap();
            assert_eq!(t.get(&[Value::UInt(3)]).unwrap(), Some(row(3)));
            finished.store(true, Ordering::SeqCst);
        });
        // Wait (for a state, not a time) until the other thread queues at the door.
        while db.admission_stats().unwrap().waiting == 0 {
            std::thread::yield_now();
        }
        assert!(!finished.load(Ordering::SeqCst));
        // The end of the scan's statement lets it in.
        drop(rows);
        h.join().unwrap();
    });
    assert!(finished.load(Ordering::SeqCst));
    let s = db.admission_stats().unwrap();
    assert_eq!((s.inside, s.waiting, s.peak_inside), (0, 0, 1));
    assert!(s.waits >= 1);
}
