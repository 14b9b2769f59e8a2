//! A transaction's inserts into an empty table: buffered, built bottom-up at commit, and
//! published with the commit (the `minnow-engine` `write::bulk` module docs). Every test checks what the
//! ordinary path would give, plus that the buffered path was the one taken (a buffered
//! insert takes no row lock: `lock_stats().held` stays 0).

mod common;

use std::time::Duration;

use common::Rng;
use minnow::{
    ColumnDef, ColumnType, Compression, Config, Database, Error, IndexDef, KeyBlockSize, Scan,
    TableDef, Value,
};

fn kv() -> TableDef {
    kv_named("kv")
}

fn kv_named(name: &str) -> TableDef {
    TableDef::new(name)
        .column(ColumnDef::new("k", ColumnType::Var(24)))
        .column(ColumnDef::new("v", ColumnType::Var(150)))
        .primary_key(&["k"])
}

/// `n` distinct random 24-byte keys (fixed seed) with 150-byte values, in random order.
fn rows(seed: u64, n: usize) -> Vec<Vec<Value>> {
    let mut rng = Rng(seed);
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    while out.len() < n {
        let k: Vec<u8> = (0..24).map(|_| b'a' + rng.below(26) as u8).collect();
        if seen.insert(k.clone()) {
            let v: Vec<u8> = (0..150).map(|i| k[i % 24]).collect();
            out.push(vec![Value::Bytes(k), Value::Bytes(v)]);
        }
    }
    out
}

fn sorted(mut r: Vec<Vec<Value>>) -> Vec<Vec<Value>> {
    r.sort_by(|a, b| match (&a[0], &b[0]) {
        (Value::Bytes(x), Value::Bytes(y)) => x.cmp(y),
        _ => std::cmp::Ordering::Equal,
    });
    r
}

fn all(t: &minnow::Table) -> Vec<Vec<Value>> {
    t.scan(Scan::all())
        .unwrap()
        .collect::<minnow::Result<_>>()
        .unwrap()
}

fn small() -> Config {
    Config {
        buffer_pool_size: 4 << 20,
        lock_wait_timeout: Duration::from_millis(50),
        ..Config::default()
    }
}

/// A new database with the small config and an empty `kv` table.
fn kv_db() -> (tempfile::TempDir, Database, minnow::Table) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), small()).unwrap();
    let t = db.create_table(kv()).unwrap();
    (dir, db, t)
}

/// Inserts every row of `rows` into `t` in `tx`.
fn insert_all<'r>(
    tx: &mut minnow::Transaction,
    t: &minnow::Table,
    rows: impl IntoIterator<Item = &'r Vec<Value>>,
) {
    for r in rows {
        tx.insert(t, r).unwrap();
    }
}

#[test]
fn buffered_load_commits_and_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let data = rows(1, 2000);
    {
        let db = Database::create(dir.path(), small()).unwrap();
        let t = db.create_table(kv()).unwrap();
        let mut tx = db.begin().unwrap();
        insert_all(&mut tx, &t, &data);
        assert_eq!(
            db.lock_stats().unwrap().held,
            0,
            "the inserts were buffered"
        );
        // Not committed: nobody else sees a row.
        assert_eq!(t.count().unwrap(), 0);
        tx.commit().unwrap();
        assert_eq!(all(&t), sorted(data.clone()));
        for r in data.iter().take(50) {
            assert_eq!(t.get(&r[..1]).unwrap().as_ref(), Some(r));
        }
        assert_eq!(db.check().unwrap().rows["kv"], 2000);
        // The handle's entry was replaced by the commit: a new transaction through it finds
        // the rows and takes the ordinary path.
        let mut tx = db.begin().unwrap();
        let e = tx.insert(&t, &data[7]).unwrap_err();
        assert!(matches!(e, Error::DuplicateKey { .. }), "{e}");
        tx.insert(&t, &[Value::text("1"), Value::text("y")])
            .unwrap();
        assert!(
            db.lock_stats().unwrap().held > 0,
            "the ordinary path locks its rows"
        );
        tx.rollback().unwrap();
        db.close().unwrap();
    }
    let db = Database::open(dir.path(), small()).unwrap();
    assert_eq!(db.check().unwrap().rows["kv"], 2000);
    let t = db.table("kv").unwrap();
    assert_eq!(all(&t), sorted(data));
    // The table is an ordinary one now: later writes take the ordinary path.
    t.insert(&[Value::text("0"), Value::text("x")]).unwrap();
    assert_eq!(t.count().unwrap(), 2001);
}

#[test]
fn duplicate_primary_key_fails_at_the_insert_and_the_rest_stays() {
    let (_dir, db, t) = kv_db();
    let mut tx = db.begin().unwrap();
    tx.insert(&t, &[Value::text("a"), Value::text("1")])
        .unwrap();
    tx.insert(&t, &[Value::text("b"), Value::text("2")])
        .unwrap();
    let e = tx
        .insert(&t, &[Value::text("a"), Value::text("3")])
        .unwrap_err();
    assert!(
        matches!(&e, Error::DuplicateKey { index, .. } if index == "PRIMARY"),
        "{e}"
    );
    tx.insert(&t, &[Value::text("c"), Value::text("4")])
        .unwrap();
    assert_eq!(db.lock_stats().unwrap().held, 0);
    tx.commit().unwrap();
    assert_eq!(
        all(&t),
        [
            vec![Value::text("a"), Value::text("1")],
            vec![Value::text("b"), Value::text("2")],
            vec![Value::text("c"), Value::text("4")],
        ]
    );
    db.check().unwrap();
}

#[test]
fn auto_increment_values_are_given_as_today() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), small()).unwrap();
    let t = db
        .create_table(
            TableDef::new("o")
                .column(ColumnDef::new("id", ColumnType::U64).auto_increment())
                .column(ColumnDef::new("x", ColumnType::U32))
                .primary_key(&["id"]),
        )
        .unwrap();
    let mut tx = db.begin().unwrap();
    let mut ids = Vec::new();
    for x in 0..20u64 {
        ids.push(
            tx.insert_returning_id(&t, &[Value::Null, Value::UInt(x)])
                .unwrap()
                .id(),
        );
    }
    assert_eq!(ids, (1..=20).map(Some).collect::<Vec<_>>());
    assert_eq!(db.lock_stats().unwrap().held, 0);
    tx.commit().unwrap();
    assert_eq!(t.count().unwrap(), 20);
    assert_eq!(
        t.get(&[Value::UInt(7)]).unwrap(),
        Some(vec![Value::UInt(7), Value::UInt(6)])
    );
    t.insert(&[Value::Null, Value::UInt(99)]).unwrap();
    assert!(t.get(&[Value::UInt(21)]).unwrap().is_some());
    db.check().unwrap();
}

#[test]
fn reads_and_changes_by_the_transaction_spill_the_buffer_first() {
    let (_dir, db, t) = kv_db();
    let data = rows(2, 100);
    // get
    let mut tx = db.begin().unwrap();
    insert_all(&mut tx, &t, &data);
    assert_eq!(db.lock_stats().unwrap().held, 0);
    assert_eq!(tx.get(&t, &data[5][..1]).unwrap().as_ref(), Some(&data[5]));
    assert_eq!(
        db.lock_stats().unwrap().held,
        100,
        "spilled: each row locked"
    );
    assert_eq!(tx.count(&t).unwrap(), 100);
    // After the spill, writes are ordinary ones, and see the spilled rows.
    assert!(tx.delete(&t, &data[0][..1]).unwrap());
    let e = tx.insert(&t, &data[1]).unwrap_err();
    assert!(matches!(e, Error::DuplicateKey { .. }), "{e}");
    assert_eq!(t.count().unwrap(), 0, "others still see nothing");
    tx.commit().unwrap();
    assert_eq!(all(&t), sorted(data[1..].to_vec()));
    db.check().unwrap();

    // scan and update, on a fresh empty table.
    let u = db
        .create_table(
            TableDef::new("u")
                .column(ColumnDef::new("id", ColumnType::U32))
                .column(ColumnDef::new("x", ColumnType::U32))
                .primary_key(&["id"]),
        )
        .unwrap();
    let mut tx = db.begin().unwrap();
    for i in (0..10u64).rev() {
        tx.insert(&u, &[Value::UInt(i), Value::UInt(0)]).unwrap();
    }
    let got: Vec<_> = tx
        .scan(&u, Scan::all().columns(&["id"]))
        .unwrap()
        .collect::<minnow::Result<_>>()
        .unwrap();
    assert_eq!(
        got,
        (0..10u64).map(|i| vec![Value::UInt(i)]).collect::<Vec<_>>()
    );
    tx.update(&u, &[Value::UInt(3), Value::UInt(33)]).unwrap();
    tx.commit().unwrap();
    assert_eq!(
        u.get(&[Value::UInt(3)]).unwrap(),
        Some(vec![Value::UInt(3), Value::UInt(33)])
    );
    db.check().unwrap();
}

#[test]
fn rollback_drops_the_buffer_and_frees_the_table() {
    let (_dir, db, t) = kv_db();
    let mut tx = db.begin().unwrap();
    for r in rows(3, 50) {
        tx.insert(&t, &r).unwrap();
    }
    tx.rollback().unwrap();
    assert_eq!(t.count().unwrap(), 0);
    // The claim ended: another writer goes at once.
    t.insert(&[Value::text("z"), Value::text("1")]).unwrap();
    // A dropped transaction rolls back too.
    let u = db.create_table(kv_named("kv2")).unwrap();
    {
        let mut tx = db.begin().unwrap();
        tx.insert(&u, &[Value::text("a"), Value::text("1")])
            .unwrap();
    }
    u.insert(&[Value::text("b"), Value::text("2")]).unwrap();
    assert_eq!(all(&u), [vec![Value::text("b"), Value::text("2")]]);
    db.check().unwrap();
}

#[test]
fn others_see_nothing_before_the_commit_and_old_views_nothing_after() {
    let (_dir, db, t) = kv_db();
    let data = rows(4, 300);
    let old = db.begin().unwrap();
    assert_eq!(old.count(&t).unwrap(), 0); // takes its view
    let mut tx = db.begin().unwrap();
    insert_all(&mut tx, &t, &data);
    let during = db.begin().unwrap();
    assert_eq!(during.count(&t).unwrap(), 0);
    assert!(during.get(&t, &data[0][..1]).unwrap().is_none());
    tx.commit().unwrap();
    // Views taken before the commit still see nothing, through the new tree.
    assert_eq!(old.count(&t).unwrap(), 0);
    assert!(old.get(&t, &data[0][..1]).unwrap().is_none());
    assert_eq!(during.scan(&t, Scan::all()).unwrap().count(), 0);
    let new = db.begin().unwrap();
    assert_eq!(new.count(&t).unwrap(), 300);
    assert_eq!(t.count().unwrap(), 300);
    drop((old, during, new));
    db.check().unwrap();
}

#[test]
fn other_writers_and_ddl_wait_for_the_claim_and_time_out() {
    let (_dir, db, t) = kv_db();
    let mut tx = db.begin().unwrap();
    tx.insert(&t, &[Value::text("a"), Value::text("1")])
        .unwrap();
    let timeout = |r: minnow::Result<()>| {
        let e = r.unwrap_err();
        assert!(matches!(e, Error::LockWaitTimeout { .. }), "{e}");
    };
    timeout(t.insert(&[Value::text("b"), Value::text("2")]));
    let mut other = db.begin().unwrap();
    timeout(other.insert(&t, &[Value::text("c"), Value::text("3")]));
    timeout(other.get_for_update(&t, &[Value::text("a")]).map(drop));
    timeout(t.delete(&[Value::text("a")]).map(drop));
    timeout(
        db.create_index("kv", IndexDef::new("by_v", &["v"]))
            .map(drop),
    );
    timeout(db.drop_table("kv"));
    // A writer that waits goes on once the claim ends.
    let t2 = t.clone();
    let writer = std::thread::spawn(move || {
        // Long enough for the commit below (no timing is asserted: it may run before too).
        loop {
            match t2.insert(&[Value::text("d"), Value::text("4")]) {
                Err(Error::LockWaitTimeout { .. }) => continue,
                other => return other,
            }
        }
    });
    tx.commit().unwrap();
    writer.join().unwrap().unwrap();
    other
        .insert(&t, &[Value::text("c"), Value::text("3")])
        .unwrap();
    other.commit().unwrap();
    assert_eq!(t.count().unwrap(), 3);
    db.check().unwrap();
}

#[test]
fn no_claim_on_a_table_with_rows_locks_or_compression() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), small()).unwrap();
    // A row: the ordinary path (each insert locks its row).
    let t = db.create_table(kv()).unwrap();
    t.insert(&[Value::text("m"), Value::text("0")]).unwrap();
    let mut tx = db.begin().unwrap();
    tx.insert(&t, &[Value::text("a"), Value::text("1")])
        .unwrap();
    assert_eq!(db.lock_stats().unwrap().held, 1);
    tx.commit().unwrap();
    // Another transaction's gap lock on the empty table: the insert waits for it, as ever.
    let u = db.create_table(kv_named("u")).unwrap();
    let mut reader = db.begin().unwrap();
    assert!(reader.scan_for_update(&u, Scan::all()).unwrap().is_empty());
    let mut tx = db.begin().unwrap();
    let e = tx
        .insert(&u, &[Value::text("a"), Value::text("1")])
        .unwrap_err();
    assert!(matches!(e, Error::LockWaitTimeout { .. }), "{e}");
    reader.commit().unwrap();
    tx.insert(&u, &[Value::text("a"), Value::text("1")])
        .unwrap();
    tx.commit().unwrap();
    // A compressed table: the ordinary path (tables with secondary indexes are buffered:
    // tests/bulk_insert_secondary.rs).
    let s = db
        .create_table(
            kv_named("s")
                .index(IndexDef::unique("by_v", &["v"]))
                .compressed(Compression::lz4(KeyBlockSize::K4)),
        )
        .unwrap();
    let mut tx = db.begin().unwrap();
    tx.insert(&s, &[Value::text("a"), Value::text("1")])
        .unwrap();
    assert!(db.lock_stats().unwrap().held > 0);
    let e = tx
        .insert(&s, &[Value::text("b"), Value::text("1")])
        .unwrap_err();
    assert!(matches!(e, Error::DuplicateKey { .. }), "{e}");
    tx.commit().unwrap();
    db.check().unwrap();
}

#[test]
fn long_rows_and_a_full_buffer_spill_and_stay_correct() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        bulk_insert_buffer_size: 8 << 10,
        ..small()
    };
    let db = Database::create(dir.path(), config).unwrap();
    let t = db.create_table(kv()).unwrap();
    let data = rows(5, 200);
    let mut tx = db.begin().unwrap();
    insert_all(&mut tx, &t, &data);
    assert!(
        db.lock_stats().unwrap().held >= 190,
        "the buffer spilled past 8 KiB"
    );
    tx.commit().unwrap();
    assert_eq!(all(&t), sorted(data));
    // A row with a column that goes off-page spills the buffer, then goes the ordinary way.
    let b = db
        .create_table(
            TableDef::new("b")
                .column(ColumnDef::new("id", ColumnType::U32))
                .column(ColumnDef::new("blob", ColumnType::Blob))
                .primary_key(&["id"]),
        )
        .unwrap();
    let mut tx = db.begin().unwrap();
    tx.insert(&b, &[Value::UInt(1), Value::Bytes(vec![1; 10])])
        .unwrap();
    assert_eq!(db.lock_stats().unwrap().held, 0);
    tx.insert(&b, &[Value::UInt(2), Value::Bytes(vec![2; 40_000])])
        .unwrap();
    assert_eq!(db.lock_stats().unwrap().held, 2);
    tx.commit().unwrap();
    assert_eq!(
        b.get(&[Value::UInt(2)]).unwrap(),
        Some(vec![Value::UInt(2), Value::Bytes(vec![2; 40_000])])
    );
    db.check().unwrap();
}

/// A power cut anywhere in a buffered transaction's commit: after recovery the table holds
/// every row (the commit was acknowledged, or its mtr reached the disk) or none, and
/// `check()` passes (no page of the built or the old tree leaked).
#[test]
fn a_crash_during_the_commit_leaves_all_rows_or_none() {
    common::commit_campaign(
        |seed, db, sim| {
            let t = db.create_table(kv()).unwrap();
            let mut tx = db.begin().unwrap();
            insert_all(&mut tx, &t, &rows(seed, 200));
            // Early cuts land in the build's evictions and the commit's log write and sync.
            sim.arm(1 + seed % 5);
            tx.commit().is_ok()
        },
        |seed, db| {
            let got = all(&db.table("kv").unwrap());
            if !got.is_empty() {
                assert_eq!(
                    got,
                    sorted(rows(seed, 200)),
                    "seed {seed}: some rows, not all"
                );
            }
            !got.is_empty()
        },
    );
}

/// The tree a bulk commit built is hashed by the adaptive hash index like any other: its
/// index keeps the old empty tree's id, and the hash of that id is dropped before the new
/// entry hooks the tree (dropped after, the new tree's hook was dead and no read ever hit).
#[test]
fn the_built_tree_is_hashed_by_the_adaptive_hash_index() {
    let (_dir, db, t) = kv_db();
    let rows = rows(11, 2000);
    let mut tx = db.begin().unwrap();
    insert_all(&mut tx, &t, &rows);
    tx.commit().unwrap();
    let before = db.ahi_stats().unwrap();
    for _ in 0..4 {
        for r in &rows {
            assert!(t.get(&r[..1]).unwrap().is_some());
        }
    }
    let after = db.ahi_stats().unwrap();
    assert!(after.pages_hashed > 0, "{after:?}");
    assert!(after.hits > before.hits + 1000, "{before:?} -> {after:?}");
}
