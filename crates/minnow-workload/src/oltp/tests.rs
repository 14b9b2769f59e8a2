use std::sync::atomic::{AtomicBool, Ordering};

use super::*;
use minnow::{Config, Error, Scan};

fn tiny(mode: Mode) -> OltpConfig {
    OltpConfig {
        mode,
        tables: 2,
        table_size: 300,
        threads: 3,
        time: None,
        events: Some(40),
        range_size: 20,
        ..OltpConfig::default()
    }
}

fn fresh(cfg: &OltpConfig) -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), Config::default()).unwrap();
    prepare(&db, cfg, &mut |_| {}).unwrap();
    (dir, db)
}

#[test]
fn data_is_deterministic_and_sysbench_shaped() {
    let a = row(7, 1, 42, 1000);
    assert_eq!(a, row(7, 1, 42, 1000));
    assert_ne!(a, row(8, 1, 42, 1000));
    assert_ne!(a, row(7, 2, 42, 1000));
    assert_eq!(a[0], Value::UInt(42));
    let Value::UInt(k) = a[1] else { panic!() };
    assert!((1..=1000).contains(&k));
    let Value::Bytes(c) = &a[2] else { panic!() };
    let Value::Bytes(pad) = &a[3] else { panic!() };
    assert_eq!((c.len(), pad.len()), (C_LEN, PAD_LEN));
    for (text, groups) in [(c, 10), (pad, 5)] {
        let body = std::str::from_utf8(text).unwrap().trim_end();
        let parts: Vec<_> = body.split('-').collect();
        assert_eq!(parts.len(), groups);
        assert!(
            parts
                .iter()
                .all(|p| p.len() == 11 && p.bytes().all(|b| b.is_ascii_digit()))
        );
    }

    // Two prepares with the same seed load the same rows.
    let cfg = OltpConfig {
        table_size: 50,
        tables: 1,
        ..OltpConfig::default()
    };
    let dump = |db: &Database| -> Vec<Vec<Value>> {
        db.table("sbtest1")
            .unwrap()
            .scan(Scan::all())
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let (_d1, db1) = fresh(&cfg);
    let (_d2, db2) = fresh(&cfg);
    assert_eq!(dump(&db1), dump(&db2));
    assert_eq!(dump(&db1)[9], row(0, 1, 10, 50));
}

#[test]
fn prepare_reports_progress_and_loads_every_row() {
    let cfg = OltpConfig {
        table_size: 25_000,
        tables: 2,
        ..OltpConfig::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), Config::default()).unwrap();
    let mut seen = Vec::new();
    let last = prepare(&db, &cfg, &mut |p| {
        seen.push((p.table, p.rows, p.total_rows))
    })
    .unwrap();
    assert_eq!(last.total_rows, 50_000);
    assert_eq!(
        seen,
        [
            (1, 10_000, 10_000),
            (1, 20_000, 20_000),
            (1, 25_000, 25_000),
            (2, 10_000, 35_000),
            (2, 20_000, 45_000),
            (2, 25_000, 50_000)
        ]
    );
    let report = db.check().unwrap();
    assert_eq!(report.rows["sbtest1"], 25_000);
    assert_eq!(report.rows["sbtest2"], 25_000);
    // A second prepare finds the tables there.
    assert!(matches!(
        prepare(&db, &cfg, &mut |_| {}),
        Err(WorkloadError::Engine(Error::TableExists { .. }))
    ));
}

/// What every run's counters must satisfy (see the module docs, "Transactions").
fn assert_counts_add_up(cfg: &OltpConfig, s: &Summary) {
    let per_event = cfg.statements();
    let mode = cfg.mode;
    assert_eq!(s.events_per_thread.iter().sum::<u64>(), s.events, "{mode}");
    assert_eq!(s.queries, s.reads + s.writes + s.other, "{mode}");
    assert_eq!(s.ignored_errors, s.ignored.total(), "{mode}");
    let i = s.ignored;
    if cfg.skip_trx {
        assert_eq!(s.other, 0, "{mode}");
        assert_eq!(s.reads, s.events * per_event.reads(), "{mode}");
        assert_eq!(s.writes, s.events * per_event.writes(), "{mode}");
        assert_eq!((i.deadlocks, i.lock_wait_timeouts), (0, 0), "{mode}");
    } else {
        // BEGIN and COMMIT per event, BEGIN per deadlock, BEGIN and ROLLBACK per other error.
        assert_eq!(
            s.other,
            2 * s.events + i.deadlocks + 2 * (i.lock_wait_timeouts + i.duplicate_keys),
            "{mode}"
        );
        // Failed attempts' statements count too.
        assert!(s.reads >= s.events * per_event.reads(), "{mode}");
        assert!(s.writes >= s.events * per_event.writes(), "{mode}");
        if i.total() == 0 {
            assert_eq!(s.reads, s.events * per_event.reads(), "{mode}");
            assert_eq!(s.writes, s.events * per_event.writes(), "{mode}");
        }
    }
}

#[test]
fn every_mode_runs_and_its_counts_add_up() {
    for (mode, skip_trx) in Mode::ALL.into_iter().flat_map(|m| [(m, true), (m, false)]) {
        let cfg = OltpConfig {
            skip_trx,
            ..tiny(mode)
        };
        let (_dir, db) = fresh(&cfg);
        let stop = AtomicBool::new(false);
        let s = run(&db, &cfg, &stop, &mut |_| {}).unwrap();
        assert_eq!(s.events, 40, "{mode}");
        assert_eq!(s.skip_trx, skip_trx);
        assert_counts_add_up(&cfg, &s);
        assert!(!s.interrupted);
        assert!(s.latency.min_ms <= s.latency.p50_ms && s.latency.p95_ms <= s.latency.max_ms);
        let report = db.check().unwrap();
        // Delete-inserts put every id back, so the row count never changes.
        assert_eq!(report.rows["sbtest1"], 300, "{mode}");
        assert_eq!(report.rows["sbtest2"], 300, "{mode}");
    }
}

#[test]
fn mode_statements_follow_sysbench() {
    let d = OltpConfig::default();
    let rw = OltpConfig {
        mode: Mode::ReadWrite,
        ..d.clone()
    }
    .statements();
    assert_eq!((rw.reads(), rw.writes()), (14, 4));
    let ro = OltpConfig {
        mode: Mode::ReadOnly,
        range_selects: false,
        ..d.clone()
    }
    .statements();
    assert_eq!((ro.reads(), ro.writes()), (10, 0));
    let ps = OltpConfig {
        mode: Mode::PointSelect,
        ..d.clone()
    }
    .statements();
    assert_eq!((ps.reads(), ps.writes()), (1, 0));
    let ui = OltpConfig {
        mode: Mode::UpdateIndex,
        index_updates: 10,
        ..d.clone()
    }
    .statements();
    assert_eq!((ui.reads(), ui.writes()), (0, 10));
    assert_eq!(
        "oltp_update_non_index".parse::<Mode>().unwrap(),
        Mode::UpdateNonIndex
    );
    assert!("oltp_insert".parse::<Mode>().is_err());
}

#[test]
fn bad_settings_are_rejected() {
    let d = OltpConfig::default();
    for bad in [
        OltpConfig {
            tables: 0,
            ..d.clone()
        },
        OltpConfig {
            threads: 0,
            ..d.clone()
        },
        OltpConfig {
            table_size: 0,
            ..d.clone()
        },
        OltpConfig {
            range_size: 0,
            ..d.clone()
        },
        OltpConfig {
            time: None,
            events: None,
            ..d.clone()
        },
        OltpConfig {
            rand_spec_pct: 0,
            ..d.clone()
        },
    ] {
        assert!(matches!(bad.validate(), Err(WorkloadError::Setting { .. })));
    }
    // Running on a table that is not sbtest-shaped is an error, not a panic.
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), Config::default()).unwrap();
    db.create_table(
        TableDef::new("sbtest1")
            .column(ColumnDef::new("id", ColumnType::U32))
            .primary_key(&["id"]),
    )
    .unwrap();
    let stop = AtomicBool::new(false);
    assert!(matches!(
        run(&db, &tiny(Mode::PointSelect), &stop, &mut |_| {}),
        Err(WorkloadError::Schema { .. }) | Err(WorkloadError::Engine(Error::NoSuchTable { .. }))
    ));
}

#[test]
fn the_stop_flag_ends_a_run_and_reports_come_in() {
    let cfg = OltpConfig {
        mode: Mode::PointSelect,
        table_size: 100,
        threads: 2,
        time: None,
        events: Some(u64::MAX),
        report_interval: Some(Duration::from_millis(10)),
        ..OltpConfig::default()
    };
    let (_dir, db) = fresh(&cfg);
    let stop = AtomicBool::new(false);
    let mut reports = Vec::new();
    let s = run(&db, &cfg, &stop, &mut |r| {
        reports.push(*r);
        if reports.len() == 3 {
            stop.store(true, Ordering::SeqCst);
        }
    })
    .unwrap();
    assert!(s.interrupted);
    assert!(reports.len() >= 3);
    assert_eq!(reports.iter().map(|r| r.events).sum::<u64>(), s.events);
    db.check().unwrap();
}

fn sum_k(db: &Database, tables: usize) -> u64 {
    (1..=tables)
        .map(|n| {
            db.table(&table_name(n))
                .unwrap()
                .scan(Scan::all().columns(&["k"]))
                .unwrap()
                .map(|r| match r.unwrap()[0] {
                    Value::UInt(k) => k,
                    ref v => panic!("k = {v:?}"),
                })
                .sum::<u64>()
        })
        .sum()
}

#[test]
fn transactions_keep_every_committed_write_and_nothing_else() {
    // Four threads, five k=k+1 updates per transaction, most of them on two hot rows (special
    // distribution over 200 rows): deadlocks happen, are rolled back and retried. Every
    // committed event added exactly 5 to the sum of k, and rolled back attempts nothing.
    let cfg = OltpConfig {
        mode: Mode::UpdateIndex,
        tables: 2,
        table_size: 200,
        threads: 4,
        index_updates: 5,
        time: Some(Duration::from_secs(2)),
        events: None,
        report_interval: Some(Duration::from_millis(500)),
        ..OltpConfig::default()
    };
    assert!(
        !cfg.skip_trx,
        "transactions are the default, as in sysbench"
    );
    let (_dir, db) = fresh(&cfg);
    let before = sum_k(&db, 2);
    let stop = AtomicBool::new(false);
    let mut reports = Vec::new();
    let s = run(&db, &cfg, &stop, &mut |r| reports.push(*r)).unwrap();
    assert!(s.events > 0);
    assert_counts_add_up(&cfg, &s);
    eprintln!("update_index: {} events, ignored {:?}", s.events, s.ignored);
    assert_eq!(sum_k(&db, 2) - before, 5 * s.events);
    assert_eq!(reports.iter().map(|r| r.events).sum::<u64>(), s.events);
    let errors: f64 = reports
        .iter()
        .map(|r| r.errors_per_sec * r.interval.as_secs_f64())
        .sum();
    assert!((errors - s.ignored_errors as f64).abs() < 0.5 + 1e-6 * errors);
    db.check().unwrap();

    // read_write: reads through snapshots, delete-inserts; the row count never changes and
    // every index agrees with its table.
    let cfg = OltpConfig {
        mode: Mode::ReadWrite,
        range_size: 20,
        index_updates: 1,
        ..cfg
    };
    let (_dir, db) = fresh(&cfg);
    let s = run(&db, &cfg, &stop, &mut |_| {}).unwrap();
    assert!(s.events > 0);
    assert_counts_add_up(&cfg, &s);
    let report = db.check().unwrap();
    assert_eq!(report.rows["sbtest1"], 200);
    assert_eq!(report.rows["sbtest2"], 200);
}
