//! `snapshots_see_whole_generations`: writer threads give every row one new generation per
//! transaction while readers check that each snapshot sees exactly one generation on every
//! row, through every path (see the docs at the top of `mvcc_model.rs`).

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};

use super::*;

const ROWS: u64 = 8;

fn gen_def() -> TableDef {
    TableDef::new("g")
        .column(ColumnDef::new("k", ColumnType::U64))
        .column(ColumnDef::new("gen", ColumnType::I64))
        .column(ColumnDef::new("tag", ColumnType::I64))
        .primary_key(&["k"])
        .index(IndexDef::new("by_gen", &["gen"]))
}

fn gen_row(k: u64, g: i64) -> Vec<Value> {
    vec![
        Value::UInt(k),
        Value::Int(g),
        Value::Int(g * 100 + k as i64),
    ]
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        Value::UInt(u) => *u as i64,
        other => panic!("not an integer: {other:?}"),
    }
}

/// The one generation a read shows on all `ROWS` rows (`rows` are `[k, gen, tag]`).
fn one_generation(what: &str, rows: &[Vec<Value>]) -> i64 {
    assert_eq!(rows.len(), ROWS as usize, "{what}: {rows:?}");
    let g = int(&rows[0][1]);
    for r in rows {
        assert_eq!(
            int(&r[1]),
            g,
            "{what}: two generations in one snapshot: {rows:?}"
        );
        if r.len() == 3 {
            assert_eq!(int(&r[2]), g * 100 + int(&r[0]), "{what}: torn row {r:?}");
        }
    }
    g
}

/// Everything a transaction's reads show, checked; returns the generations its statements
/// saw (one for a `stable` transaction: REPEATABLE READ, or one that wrote every row itself).
/// At READ COMMITTED each statement has its own snapshot, and sees one generation.
fn read_generation(tx: &mut Transaction, t: &Table, stable: bool) -> Vec<i64> {
    let pk = collect(tx.scan(t, Scan::all()));
    let g = one_generation("primary key scan", &pk);
    // Every generation has every row: a count (through by_gen, whose leaves the writers keep
    // changing) sees all of them, whichever generation its snapshot holds.
    assert_eq!(tx.count(t).unwrap(), pk.len() as u64, "count");
    let mut seen = vec![g];
    let cov: Vec<Vec<Value>> =
        collect(tx.scan_index(t, "by_gen", Scan::all().columns(&["k", "gen"])));
    seen.push(one_generation("covering by_gen scan", &cov));
    let fetch = collect(tx.scan_index(t, "by_gen", Scan::all().columns(&["k", "gen", "tag"])));
    seen.push(one_generation("fetching by_gen scan", &fetch));
    let at = Bound::Included(vec![Value::Int(g)]);
    let exact = collect(tx.scan_index(t, "by_gen", Scan::range(at.clone(), at)));
    // Generation g on every row, or (READ COMMITTED, a newer one committed since) on none.
    if stable || !exact.is_empty() {
        assert_eq!(one_generation("by_gen point range", &exact), g);
    }
    if stable {
        assert!(
            seen.iter().all(|&x| x == g),
            "one snapshot, several generations: {seen:?}"
        );
        seen.truncate(1);
    }
    seen
}

#[test]
fn snapshots_see_whole_generations() {
    let rounds = env("MINNOW_MVCC_ROUNDS", 25);
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        flush_log_at_trx_commit: minnow::FlushAtCommit::Lazy,
        ..Config::default()
    };
    let db = Database::create(dir.path(), config).unwrap();
    let t = db.create_table(gen_def()).unwrap();
    for k in 0..ROWS {
        t.insert(&gen_row(k, 0)).unwrap();
    }
    let next_gen = AtomicI64::new(1);
    let rolled_back = Mutex::new(HashSet::new());
    let committed = Mutex::new(HashSet::from([0i64]));
    let writers_done = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let reads = AtomicU64::new(0);
    const WRITERS: u64 = 2;
    std::thread::scope(|s| {
        for w in 0..WRITERS {
            let (db, t, next_gen, rolled_back, committed, writers_done) =
                (&db, &t, &next_gen, &rolled_back, &committed, &writers_done);
            s.spawn(move || {
                let mut x = w * 0x9E37_79B9 + 11;
                let mut rnd = move || {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x
                };
                let mut done = 0;
                while done < rounds {
                    let g = next_gen.fetch_add(1, Ordering::Relaxed);
                    let iso = if rnd() % 2 == 0 {
                        Isolation::ReadCommitted
                    } else {
                        Isolation::RepeatableRead
                    };
                    let mut tx = db.begin_with(iso).unwrap();
                    // Every row, in a random rotation (so writers deadlock now and then).
                    let start = rnd() % ROWS;
                    let r = (|| {
                        for i in 0..ROWS {
                            let k = (start + i) % ROWS;
                            if rnd() % 3 == 0 {
                                assert!(tx.delete(t, &[Value::UInt(k)])?);
                                tx.insert(t, &gen_row(k, g))?;
                            } else {
                                tx.update(t, &gen_row(k, g))?;
                            }
                        }
                        // Its own snapshot shows its generation everywhere.
                        assert_eq!(read_generation(&mut tx, t, true), [g]);
                        Ok::<_, Error>(())
                    })();
                    match r {
                        Ok(()) if rnd() % 4 == 0 => {
                            rolled_back.lock().unwrap().insert(g);
                            tx.rollback().unwrap();
                        }
                        Ok(()) => {
                            committed.lock().unwrap().insert(g);
                            tx.commit().unwrap();
                            done += 1;
                        }
                        Err(Error::Deadlock { .. }) => {
                            rolled_back.lock().unwrap().insert(g);
                        }
                        Err(e) => panic!("writer: {e}"),
                    }
                }
                writers_done.fetch_add(1, Ordering::Release);
            });
        }
        for r in 0..2u64 {
            let (db, t, rolled_back, committed, stop, reads) =
                (&db, &t, &rolled_back, &committed, &stop, &reads);
            s.spawn(move || {
                while !stop.load(Ordering::Acquire) {
                    let iso = if r == 0 {
                        Isolation::RepeatableRead
                    } else {
                        Isolation::ReadCommitted
                    };
                    let rr = iso == Isolation::RepeatableRead;
                    let mut tx = db.begin_with(iso).unwrap();
                    let seen = read_generation(&mut tx, t, rr);
                    for g in &seen {
                        assert!(
                            !rolled_back.lock().unwrap().contains(g),
                            "a snapshot saw rolled-back generation {g}"
                        );
                        assert!(
                            committed.lock().unwrap().contains(g),
                            "a snapshot saw generation {g} before its commit"
                        );
                    }
                    std::thread::yield_now();
                    // REPEATABLE READ: the same generation again, by every path.
                    if rr {
                        let g = seen[0];
                        assert_eq!(read_generation(&mut tx, t, true), [g]);
                        for k in 0..ROWS {
                            let row = tx.get(t, &[Value::UInt(k)]).unwrap().unwrap();
                            assert_eq!(row, gen_row(k, g));
                        }
                    }
                    tx.commit().unwrap();
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        while writers_done.load(Ordering::Acquire) < WRITERS {
            std::thread::sleep(Duration::from_millis(5));
        }
        stop.store(true, Ordering::Release);
    });
    assert!(reads.load(Ordering::Relaxed) > 0);
    let mut tx = db.begin().unwrap();
    let g = read_generation(&mut tx, &t, true);
    assert!(committed.lock().unwrap().contains(&g[0]));
    drop(tx);
    // Purge's background thread locks the row it purges, one at a time: purge here first (it
    // takes purge's turn, so the thread's batch ends), so that the counts are what the
    // transactions left, not a purge lock caught in passing.
    db.purge().unwrap();
    let stats = db.lock_stats().unwrap();
    assert_eq!((stats.held, stats.waiting), (0, 0));
    db.check().unwrap();
}
