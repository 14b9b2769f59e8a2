//! `Table::count` and `Transaction::count` on a table whose only index is the clustered one
//! (records counted by their `DB_TRX_ID`) and on one with a narrow secondary index (leaves
//! counted by `PAGE_MAX_TRX_ID`): open transactions' inserts, deletes and updates are seen by
//! their own transaction only, REPEATABLE READ keeps its number, READ COMMITTED moves with
//! commits, and purge and rollback change nothing a reader sees. Every number is also checked
//! against a full scan. (The MVCC model test checks `count()` at every scan step too.) A
//! random run from a fixed seed checks each kind of reader against a row-by-row model while
//! rows committed after its view, another transaction's open changes and delete-marked rows
//! not yet purged sit on the same leaves, on both indexes.

use std::collections::BTreeSet;

use minnow::{
    ColumnDef, ColumnType, Config, Database, IndexDef, Isolation, Scan, Table, TableDef, Value,
};

use minnow_io::SplitMix64 as Rng;

const ROWS: u64 = 3000;

fn scanned(t: &Table) -> u64 {
    let rows: Vec<_> = t
        .scan(Scan::all())
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    rows.len() as u64
}

fn row(k: u64, v: u64) -> Vec<Value> {
    vec![
        Value::UInt(k),
        Value::UInt(v),
        Value::Bytes(vec![b'x'; 40 + (k % 60) as usize]),
    ]
}

fn check(def: TableDef) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), Config::default()).unwrap();
    let t = db.create_table(def).unwrap();
    let mut tx = db.begin().unwrap();
    for k in 0..ROWS {
        tx.insert(&t, &row(k * 2, k)).unwrap();
    }
    tx.commit().unwrap();
    assert_eq!(t.count().unwrap(), ROWS);

    // A REPEATABLE READ reader fixes its view now.
    let rr = db.begin().unwrap();
    assert_eq!(rr.count(&t).unwrap(), ROWS);

    // A writer deletes 100, inserts 250 new keys, updates 80 (all left open).
    let mut w = db.begin().unwrap();
    for k in 0..100 {
        assert!(w.delete(&t, &[Value::UInt(k * 6)]).unwrap());
    }
    for k in 0..250 {
        w.insert(&t, &row(k * 2 + 1, k)).unwrap();
    }
    for k in 1000..1080 {
        w.update(&t, &row(k * 2, k + 7)).unwrap();
    }
    let after = ROWS - 100 + 250;
    assert_eq!(
        w.count(&t).unwrap(),
        after,
        "the writer sees its own changes"
    );
    assert_eq!(t.count().unwrap(), ROWS, "others do not");
    assert_eq!(scanned(&t), ROWS);
    let rc = db.begin_with(Isolation::ReadCommitted).unwrap();
    assert_eq!(rc.count(&t).unwrap(), ROWS);

    w.commit().unwrap();
    assert_eq!(t.count().unwrap(), after);
    assert_eq!(scanned(&t), after);
    assert_eq!(
        rr.count(&t).unwrap(),
        ROWS,
        "REPEATABLE READ keeps its view"
    );
    assert_eq!(
        rc.count(&t).unwrap(),
        after,
        "READ COMMITTED sees the commit"
    );

    // A rolled-back writer leaves no trace; purge changes nothing anyone sees.
    let mut gone = db.begin().unwrap();
    for k in 2000..2100 {
        gone.delete(&t, &[Value::UInt(k * 2)]).unwrap();
    }
    gone.insert(&t, &row(1_000_001, 0)).unwrap();
    assert_eq!(gone.count(&t).unwrap(), after - 100 + 1);
    gone.rollback().unwrap();
    assert_eq!(t.count().unwrap(), after);
    rr.commit().unwrap();
    rc.commit().unwrap();
    db.purge().unwrap();
    assert_eq!(t.count().unwrap(), after);
    assert_eq!(scanned(&t), after);
    db.check().unwrap();
}

fn base() -> TableDef {
    TableDef::new("t")
        .column(ColumnDef::new("k", ColumnType::U64))
        .column(ColumnDef::new("v", ColumnType::U64))
        .column(ColumnDef::new("pad", ColumnType::Var(200)))
        .primary_key(&["k"])
}

#[test]
fn count_through_the_clustered_index() {
    check(base());
}

#[test]
fn count_through_a_narrow_secondary_index() {
    check(base().index(IndexDef::new("by_v", &["v"])));
}

#[test]
fn count_of_an_empty_table_and_after_a_drop() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), Config::default()).unwrap();
    let t = db.create_table(base()).unwrap();
    assert_eq!(t.count().unwrap(), 0);
    db.drop_table("t").unwrap();
    assert!(matches!(t.count(), Err(minnow::Error::TableChanged { .. })));
}

/// `n` random inserts, deletes and updates by `tx` on keys below 1600; `rows` is what `tx`
/// sees, kept in step.
fn churn(rng: &mut Rng, tx: &mut minnow::Transaction, t: &Table, rows: &mut BTreeSet<u64>, n: u32) {
    for _ in 0..n {
        let k = rng.below(1600);
        if !rows.contains(&k) {
            tx.insert(t, &row(k, rng.below(50))).unwrap();
            rows.insert(k);
        } else if rng.below(2) == 0 {
            assert!(tx.delete(t, &[Value::UInt(k)]).unwrap());
            rows.remove(&k);
        } else {
            tx.update(t, &row(k, rng.below(50))).unwrap();
        }
    }
}

fn random_against_a_model(def: TableDef) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), Config::default()).unwrap();
    let t = db.create_table(def).unwrap();
    let mut rng = Rng(0xC0_0172);
    let mut committed = BTreeSet::new();
    let mut tx = db.begin().unwrap();
    churn(&mut rng, &mut tx, &t, &mut committed, 800);
    tx.commit().unwrap();
    for round in 0..6 {
        // A REPEATABLE READ view, then changes committed after it, then an open writer.
        let rr = db.begin().unwrap();
        assert_eq!(rr.count(&t).unwrap(), committed.len() as u64);
        let seen_by_rr = committed.len() as u64;
        let mut c = db.begin().unwrap();
        churn(&mut rng, &mut c, &t, &mut committed, 60);
        c.commit().unwrap();
        let mut open = committed.clone();
        let mut w = db.begin().unwrap();
        churn(&mut rng, &mut w, &t, &mut open, 60);
        let ctx = format!("round {round}");
        assert_eq!(rr.count(&t).unwrap(), seen_by_rr, "{ctx}: old view");
        let rr_scan = rr.scan(&t, Scan::all()).unwrap().count() as u64;
        assert_eq!(rr_scan, seen_by_rr, "{ctx}: old view's scan");
        assert_eq!(w.count(&t).unwrap(), open.len() as u64, "{ctx}: writer");
        assert_eq!(
            t.count().unwrap(),
            committed.len() as u64,
            "{ctx}: statement"
        );
        assert_eq!(scanned(&t), committed.len() as u64, "{ctx}: scan");
        if round % 2 == 0 {
            w.commit().unwrap();
            committed = open;
        } else {
            w.rollback().unwrap();
        }
        rr.commit().unwrap();
        assert_eq!(t.count().unwrap(), committed.len() as u64, "{ctx}: after");
        // Delete-marked rows wait for purge in the other rounds.
        if round % 3 == 2 {
            db.purge().unwrap();
        }
    }
    db.check().unwrap();
}

#[test]
fn random_changes_count_as_a_row_by_row_model_says_through_the_clustered_index() {
    random_against_a_model(base());
}

#[test]
fn random_changes_count_as_a_row_by_row_model_says_through_a_secondary_index() {
    random_against_a_model(base().index(IndexDef::new("by_v", &["v"])));
}
