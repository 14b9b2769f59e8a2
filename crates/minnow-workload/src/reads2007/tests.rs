use super::*;
use minnow::Config;
use std::time::Duration;

fn setup() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), Config::default()).unwrap();
    (dir, db)
}

#[test]
fn rows_are_deterministic_and_valid() {
    assert_eq!(row(7, 1000, 5), row(7, 1000, 5));
    assert_ne!(row(7, 1000, 5), row(8, 1000, 5));
    for id in 1..=500 {
        let r = row(1, 1000, id);
        assert_eq!(r.len(), table_def().columns.len());
        match (&r[9], &r[7]) {
            (Value::UInt(c), Value::UInt(s)) => {
                assert!((1..=countries(1000)).contains(c));
                assert!(*s < STATES);
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn names_parse() {
    for q in Query::ALL {
        assert_eq!(q.name().parse::<Query>().unwrap(), q);
    }
    assert_eq!("pk_point".parse::<Query>().unwrap(), Query::PkPoint);
    assert!("nope".parse::<Query>().is_err());
    assert_eq!(
        "myisam".parse::<Organisation>().unwrap(),
        Organisation::Heap
    );
}

#[test]
fn both_organisations_answer_every_query_alike() {
    let rows = 3000;
    let (dir, db) = setup();
    let (clustered, loaded) = prepare(
        &db,
        dir.path(),
        Organisation::Clustered,
        rows,
        3,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(loaded.rows, rows);
    let mut seen = 0;
    let (heap, _) = prepare(&db, dir.path(), Organisation::Heap, rows, 3, &mut |n| {
        seen = n
    })
    .unwrap();
    assert_eq!(seen, rows);
    // The model: rows per country and per (country, state).
    let all: Vec<Vec<Value>> = (1..=rows).map(|id| row(3, rows, id)).collect();
    for q in Query::ALL {
        for i in 0..30 {
            let mut m = SmallRng::seed_from_u64(i);
            let mut shadow = m.clone();
            let x = clustered.run_query(q, rows, &mut m).unwrap();
            let y = heap.run_query(q, rows, &mut shadow).unwrap();
            assert_eq!(x, y, "{}", q.name());
        }
    }
    // One query checked against the model.
    let mut rng = SmallRng::seed_from_u64(5);
    let mut peek = rng.clone();
    let n = heap.run_query(Query::KeyPoint, rows, &mut rng).unwrap();
    let _id: u64 = peek.random_range(1..=rows);
    let country: u64 = peek.random_range(1..=countries(rows));
    let want = all.iter().filter(|r| r[9] == Value::UInt(country)).count() as u64;
    assert_eq!(n, want);
    assert!(n > 5, "a country holds more rows than LIMIT 5");
    // Reopen both.
    drop((clustered, heap));
    db.close().unwrap();
    let db = Database::open(dir.path(), Config::default()).unwrap();
    for org in Organisation::ALL {
        let t = open(&db, dir.path(), org).unwrap();
        let mut rng = SmallRng::seed_from_u64(1);
        assert_eq!(t.run_query(Query::PkPoint, rows, &mut rng).unwrap(), 1);
        assert_eq!(t.run_query(Query::PkPointIndex, rows, &mut rng).unwrap(), 1);
    }
}

#[test]
fn sweep_measures_every_point() {
    let rows = 1000;
    let (dir, db) = setup();
    let (t, _) = prepare(&db, dir.path(), Organisation::Heap, rows, 0, &mut |_| {}).unwrap();
    let cfg = SweepConfig {
        rows,
        queries: vec![Query::PkPoint, Query::Fts],
        threads: vec![1, 3],
        warmup: Duration::from_millis(5),
        duration: Duration::from_millis(40),
        seed: 0,
    };
    let stop = AtomicBool::new(false);
    let mut calls = 0;
    let points = sweep(&t, Organisation::Heap, &cfg, &stop, &mut |_| calls += 1).unwrap();
    assert_eq!(points.len(), 4);
    assert_eq!(calls, 4);
    for p in &points {
        assert!(p.queries > 0, "{p:?}");
        assert_eq!(p.rows, p.queries, "each query here produces one row: {p:?}");
    }
    assert!(run_point(&t, Organisation::Heap, Query::PkPoint, 0, &cfg, &stop).is_err());
    stop.store(true, Ordering::Relaxed);
    assert!(
        sweep(&t, Organisation::Heap, &cfg, &stop, &mut |_| {})
            .unwrap()
            .is_empty()
    );
}

#[test]
fn a_point_is_one_csv_record_under_the_header() {
    let p = Point {
        organisation: Organisation::Heap,
        query: "READ_FTS",
        threads: 4,
        queries: 10,
        rows: 20,
        seconds: 1.23456,
        qps: 8.1,
    };
    let r = p.csv_record();
    assert_eq!(r, ["heap", "READ_FTS", "4", "10", "20", "1.235", "8.1"]);
    assert_eq!(Point::CSV_HEADER.split(',').count(), r.len());
}
