//! AUTO_INCREMENT: values, gaps and explicit values in each `innodb_autoinc_lock_mode`, what
//! each mode does to concurrent statements (observed with channels and the AUTO-INC lock's
//! wait counter, never with clocks), restarts, and power cuts that must not give an
//! acknowledged value out again.

use std::sync::Arc;
use std::sync::mpsc;
use std::thread;

use minnow::PageSize;
use minnow::backend::{Backend, CrashSim, SyncBackend};
use minnow::{
    AutoIncLockMode, ColumnDef, ColumnType, Config, Database, Error, IndexDef, IoBackend, Scan,
    Table, TableDef, Value,
};

const MODES: [AutoIncLockMode; 3] = [
    AutoIncLockMode::Traditional,
    AutoIncLockMode::Consecutive,
    AutoIncLockMode::Interleaved,
];

fn config(mode: AutoIncLockMode) -> Config {
    Config {
        autoinc_lock_mode: mode,
        buffer_pool_size: 4 << 20,
        log_file_size: 1 << 20,
        buffer_pool_dump_at_shutdown: false,
        ..Config::default()
    }
}

/// `id` AUTO_INCREMENT primary key, `tag` (who inserted the row), `u` unique.
fn def() -> TableDef {
    TableDef::new("t")
        .column(ColumnDef::new("id", ColumnType::U64).auto_increment())
        .column(ColumnDef::new("tag", ColumnType::U32))
        .column(ColumnDef::nullable("u", ColumnType::I64))
        .primary_key(&["id"])
        .index(IndexDef::unique("by_u", &["u"]))
}

fn row(id: Value, tag: u64) -> Vec<Value> {
    vec![id, Value::UInt(tag), Value::Null]
}

fn ids(t: &Table) -> Vec<u64> {
    t.scan(Scan::all().columns(&["id"]))
        .unwrap()
        .map(|r| match r.unwrap()[0] {
            Value::UInt(v) => v,
            ref other => panic!("id {other:?}"),
        })
        .collect()
}

fn next(t: &Table) -> Option<u64> {
    t.auto_increment_status().unwrap().next
}

#[test]
fn values_explicit_values_and_zero_in_every_mode() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path(), config(mode)).unwrap();
        let t = db.create_table(def()).unwrap();
        assert_eq!(next(&t), Some(1));
        for want in 1..=3 {
            let r = t.insert_returning_id(&row(Value::Null, 0)).unwrap();
            assert_eq!(r.id(), Some(want), "{mode:?}");
        }
        // 0 generates as NULL does; an explicit larger value moves the counter past it; a
        // smaller one leaves it alone.
        assert_eq!(
            t.insert_returning_id(&row(Value::UInt(0), 0)).unwrap().id(),
            Some(4)
        );
        let explicit = t.insert_returning_id(&row(Value::UInt(10), 0)).unwrap();
        assert_eq!(explicit.id(), None);
        assert_eq!(explicit.rows, 1);
        assert_eq!(next(&t), Some(11));
        t.insert(&row(Value::UInt(7), 0)).unwrap();
        assert_eq!(next(&t), Some(11));
        assert_eq!(
            t.insert_returning_id(&row(Value::Null, 0)).unwrap().id(),
            Some(11)
        );
        assert_eq!(ids(&t), [1, 2, 3, 4, 7, 10, 11]);
        // A multi-row statement with a known row count.
        let many = t.insert_many((0..3).map(|_| row(Value::Null, 1))).unwrap();
        assert_eq!((many.rows, many.generated.clone()), (3, vec![12, 13, 14]));
        assert_eq!(many.id(), Some(12));
        db.check().unwrap();
    }
}

#[test]
fn failed_inserts_leave_gaps_in_every_mode() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path(), config(mode)).unwrap();
        let t = db.create_table(def()).unwrap();
        t.insert(&[Value::Null, Value::UInt(0), Value::Int(5)])
            .unwrap();
        // Duplicate unique key: the value the row took is not given back.
        let dup = t.insert(&[Value::Null, Value::UInt(0), Value::Int(5)]);
        assert!(
            matches!(dup, Err(Error::DuplicateKey { ref index, .. }) if index == "by_u"),
            "{mode:?}: {dup:?}"
        );
        // A bad value in another column fails too, after its value was taken.
        let bad = t.insert(&[Value::Null, Value::Int(-1), Value::Null]);
        assert!(matches!(bad, Err(Error::TypeMismatch { .. })), "{bad:?}");
        let r = t.insert_returning_id(&row(Value::Null, 0)).unwrap();
        assert_eq!(r.id(), Some(4), "{mode:?}");
        assert_eq!(ids(&t), [1, 4]);
        // A multi-row statement stops at its first failing row and keeps the rows before.
        let err = t.insert_many(vec![
            row(Value::Null, 2),
            vec![Value::Null, Value::UInt(2), Value::Int(5)],
            row(Value::Null, 2),
        ]);
        assert!(matches!(err, Err(Error::DuplicateKey { .. })), "{err:?}");
        let gap = match mode {
            // The reservation of three values is spent, whatever the statement used.
            AutoIncLockMode::Consecutive => 8,
            _ => 7,
        };
        assert_eq!(ids(&t), [1, 4, 5]);
        assert_eq!(next(&t), Some(gap), "{mode:?}");
        db.check().unwrap();
    }
}

/// MySQL's manual, "InnoDB AUTO_INCREMENT Lock Modes", mixed-mode inserts: the counter after
/// the statement is 103 in modes 0 and 2 and 105 in mode 1 (four values reserved, two used).
#[test]
fn mixed_mode_insert_matches_the_manual() {
    for (mode, want_next) in MODES.into_iter().zip([103, 105, 103]) {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path(), config(mode)).unwrap();
        let t = db
            .create_table(
                TableDef::new("t1")
                    .column(ColumnDef::new("c1", ColumnType::I32).auto_increment())
                    .column(ColumnDef::new("c2", ColumnType::Fixed(1)))
                    .primary_key(&["c1"]),
            )
            .unwrap();
        t.insert(&[Value::Int(100), Value::text("x")]).unwrap();
        let r = t
            .insert_many(vec![
                vec![Value::Int(1), Value::text("a")],
                vec![Value::Null, Value::text("b")],
                vec![Value::Int(5), Value::text("c")],
                vec![Value::Null, Value::text("d")],
            ])
            .unwrap();
        assert_eq!(r.generated, [101, 102], "{mode:?}");
        assert_eq!(next(&t), Some(want_next), "{mode:?}");
        let got = t.get(&[Value::Int(102)]).unwrap().unwrap();
        assert_eq!(got, [Value::Int(102), Value::text("d")]);
    }
}

/// Rows that pause after their first row until told to go on; the size hint is exact or
/// not, as asked.
struct Paused {
    rows: std::vec::IntoIter<Vec<Value>>,
    exact: bool,
    yielded: usize,
    paused: Option<mpsc::Sender<()>>,
    go: mpsc::Receiver<()>,
}

impl Iterator for Paused {
    type Item = Vec<Value>;
    fn next(&mut self) -> Option<Vec<Value>> {
        if self.yielded == 1
            && let Some(p) = self.paused.take()
        {
            p.send(()).unwrap();
            self.go.recv().unwrap();
        }
        self.yielded += 1;
        self.rows.next()
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.rows.len();
        if self.exact { (n, Some(n)) } else { (0, None) }
    }
}

/// Statement A (5 rows, tag 1) pauses after its first row; meanwhile statement B (one row,
/// tag 2) inserts. Returns A's values, B's value, and whether B had to wait for A's AUTO-INC
/// lock (B is let finish first when it does not wait; when it waits, A is let go once the
/// wait is seen, so the test never depends on timing).
fn a_pauses_b_inserts(mode: AutoIncLockMode, exact: bool) -> (Vec<u64>, u64, bool) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config(mode)).unwrap();
    let t = db.create_table(def()).unwrap();
    let (paused_tx, paused_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel();
    let a_rows = Paused {
        rows: (0..5)
            .map(|_| row(Value::Null, 1))
            .collect::<Vec<_>>()
            .into_iter(),
        exact,
        yielded: 0,
        paused: Some(paused_tx),
        go: go_rx,
    };
    let waits_before = t.auto_increment_status().unwrap().lock_waits;
    thread::scope(|s| {
        let a = s.spawn(|| t.insert_many(a_rows).unwrap());
        paused_rx.recv().unwrap();
        let b = s.spawn(|| t.insert_returning_id(&row(Value::Null, 2)).unwrap());
        // Either B finishes while A is paused, or B waits for the AUTO-INC lock.
        let waited = loop {
            if b.is_finished() {
                break false;
            }
            if t.auto_increment_status().unwrap().lock_waits > waits_before {
                break true;
            }
            thread::yield_now();
        };
        if waited {
            assert!(
                !b.is_finished(),
                "B waited for A's lock, yet finished while A paused"
            );
        }
        go_tx.send(()).unwrap();
        let a = a.join().unwrap();
        let b = b.join().unwrap();
        assert_eq!(a.rows, 5);
        db.check().unwrap();
        (a.generated, b.id().unwrap(), waited)
    })
}

#[test]
fn traditional_mode_holds_the_lock_for_the_whole_statement() {
    let (a, b, waited) = a_pauses_b_inserts(AutoIncLockMode::Traditional, true);
    assert!(waited, "mode 0: B must wait for A's AUTO-INC lock");
    assert_eq!(a, [1, 2, 3, 4, 5]);
    assert_eq!(b, 6);
}

#[test]
fn consecutive_mode_reserves_up_front_for_simple_inserts() {
    let (a, b, waited) = a_pauses_b_inserts(AutoIncLockMode::Consecutive, true);
    assert!(
        !waited,
        "mode 1, simple insert: B only waits for the reservation"
    );
    assert_eq!(a, [1, 2, 3, 4, 5], "A's values stay consecutive");
    assert_eq!(b, 6, "B gets the value after A's reserved block");
}

#[test]
fn consecutive_mode_holds_the_lock_for_bulk_inserts() {
    let (a, b, waited) = a_pauses_b_inserts(AutoIncLockMode::Consecutive, false);
    assert!(waited, "mode 1, bulk insert: B must wait as in mode 0");
    assert_eq!(a, [1, 2, 3, 4, 5]);
    assert_eq!(b, 6);
}

#[test]
fn interleaved_mode_takes_values_row_by_row() {
    for exact in [true, false] {
        let (a, b, waited) = a_pauses_b_inserts(AutoIncLockMode::Interleaved, exact);
        assert!(!waited, "mode 2 never takes the AUTO-INC lock");
        assert_eq!(a, [1, 3, 4, 5, 6], "B's value lands inside A's statement");
        assert_eq!(b, 2);
    }
}

/// Rows handed out in lockstep with another thread's: each `next` first passes the turn on.
struct Lockstep {
    left: usize,
    tag: u64,
    first: bool,
    mine: mpsc::Receiver<()>,
    theirs: mpsc::Sender<()>,
}

impl Iterator for Lockstep {
    type Item = Vec<Value>;
    fn next(&mut self) -> Option<Vec<Value>> {
        if !self.first {
            // The previous row is in: the other statement's turn.
            let _ = self.theirs.send(());
        }
        self.first = false;
        if self.left == 0 {
            return None;
        }
        self.mine.recv().unwrap();
        self.left -= 1;
        Some(row(Value::Null, self.tag))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

/// Two 4-row statements whose rows alternate in time, A first. Returns A's and B's values.
fn lockstep(mode: AutoIncLockMode) -> (Vec<u64>, Vec<u64>) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config(mode)).unwrap();
    let t = db.create_table(def()).unwrap();
    let (to_a, a_rx) = mpsc::channel();
    let (to_b, b_rx) = mpsc::channel();
    let a_rows = Lockstep {
        left: 4,
        tag: 1,
        first: true,
        mine: a_rx,
        theirs: to_b.clone(),
    };
    let b_rows = Lockstep {
        left: 4,
        tag: 2,
        first: true,
        mine: b_rx,
        theirs: to_a.clone(),
    };
    to_a.send(()).unwrap();
    let (a, b) = thread::scope(|s| {
        let a = s.spawn(|| t.insert_many(a_rows).unwrap());
        let b = s.spawn(|| t.insert_many(b_rows).unwrap());
        (a.join().unwrap(), b.join().unwrap())
    });
    // Rows went in alternately: tags in insertion order alternate when read by value.
    assert_eq!(ids(&t).len(), 8);
    db.check().unwrap();
    (a.generated, b.generated)
}

#[test]
fn concurrent_statements_interleave_values_only_in_interleaved_mode() {
    let (a, b) = lockstep(AutoIncLockMode::Interleaved);
    assert_eq!(a, [1, 3, 5, 7]);
    assert_eq!(b, [2, 4, 6, 8]);
    // Mode 1: the same alternation in time, but each statement reserved a block.
    let (a, b) = lockstep(AutoIncLockMode::Consecutive);
    let blocks = [vec![1, 2, 3, 4], vec![5, 6, 7, 8]];
    assert!(
        (a == blocks[0] && b == blocks[1]) || (a == blocks[1] && b == blocks[0]),
        "mode 1: {a:?} {b:?}"
    );
}

#[test]
fn free_running_threads_get_distinct_values_consecutive_per_statement_in_mode_0() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path(), config(mode)).unwrap();
        let t = db.create_table(def()).unwrap();
        let per_statement: Vec<Vec<u64>> = thread::scope(|s| {
            let handles: Vec<_> = (0..4u64)
                .map(|tag| {
                    let t = &t;
                    s.spawn(move || {
                        // A filtered iterator: a bulk insert, count unknown.
                        let rows = (0..200u64)
                            .filter(|_| true)
                            .map(move |_| row(Value::Null, tag));
                        t.insert_many(rows).unwrap().generated
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut all: Vec<u64> = per_statement.iter().flatten().copied().collect();
        all.sort_unstable();
        assert_eq!(all, (1..=800).collect::<Vec<_>>(), "{mode:?}");
        if mode != AutoIncLockMode::Interleaved {
            for g in &per_statement {
                let first = g[0];
                assert_eq!(*g, (first..first + 200).collect::<Vec<_>>(), "{mode:?}");
            }
        }
        let status = t.auto_increment_status().unwrap();
        if mode == AutoIncLockMode::Interleaved {
            assert_eq!(status.lock_grants, 0);
        } else {
            assert_eq!(status.lock_grants, 4);
        }
        assert_eq!(ids(&t), (1..=800).collect::<Vec<_>>());
    }
}

#[test]
fn definitions_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), Config::default()).unwrap();
    let bad = |def: TableDef, what: &str| match db.create_table(def) {
        Err(Error::BadDefinition { reason, .. }) => assert!(reason.contains(what), "{reason}"),
        other => panic!("{what}: {other:?}"),
    };
    bad(
        TableDef::new("a")
            .column(ColumnDef::new("id", ColumnType::Var(8)).auto_increment())
            .primary_key(&["id"]),
        "integer",
    );
    bad(
        TableDef::new("b")
            .column(ColumnDef::new("id", ColumnType::U32).auto_increment())
            .column(ColumnDef::new("k", ColumnType::U32).auto_increment())
            .primary_key(&["id"]),
        "at most one",
    );
    bad(
        TableDef::new("c")
            .column(ColumnDef::new("k", ColumnType::U32))
            .column(ColumnDef::new("id", ColumnType::U32).auto_increment())
            .primary_key(&["k", "id"]),
        "first column",
    );
    // The first column of a secondary index will do; dropping that index will not.
    let t = db
        .create_table(
            TableDef::new("d")
                .column(ColumnDef::new("k", ColumnType::Var(8)))
                .column(ColumnDef::new("seq", ColumnType::I16).auto_increment())
                .primary_key(&["k"])
                .index(IndexDef::new("by_seq", &["seq"])),
        )
        .unwrap();
    assert!(matches!(
        db.drop_index("d", "by_seq"),
        Err(Error::BadDefinition { .. })
    ));
    // An update to a larger value moves the counter (MySQL 8.0).
    t.insert(&[Value::text("x"), Value::Null]).unwrap();
    t.update(&[Value::text("x"), Value::Int(50)]).unwrap();
    assert_eq!(next(&t), Some(51));
    // Negative explicit values are stored and move nothing.
    t.insert(&[Value::text("y"), Value::Int(-7)]).unwrap();
    assert_eq!(next(&t), Some(51));
    assert!(
        db.table("d")
            .unwrap()
            .auto_increment_status()
            .is_some_and(|s| s.column == "seq")
    );
    assert_eq!(
        AutoIncLockMode::try_from(1).unwrap(),
        AutoIncLockMode::Consecutive
    );
    assert!(matches!(
        AutoIncLockMode::try_from(3),
        Err(Error::Config {
            knob: "innodb_autoinc_lock_mode",
            ..
        })
    ));
    db.check().unwrap();
}

#[test]
fn exhausted_range_is_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), Config::default()).unwrap();
    let t = db
        .create_table(
            TableDef::new("small")
                .column(ColumnDef::new("id", ColumnType::I8).auto_increment())
                .primary_key(&["id"]),
        )
        .unwrap();
    t.insert(&[Value::Int(126)]).unwrap();
    assert_eq!(
        t.insert_returning_id(&[Value::Null]).unwrap().id(),
        Some(127)
    );
    assert_eq!(next(&t), None);
    let e = t.insert(&[Value::Null]);
    assert!(
        matches!(e, Err(Error::AutoIncrementExhausted { ref column, max: 127, .. }) if column == "id"),
        "{e:?}"
    );
    db.close().unwrap();
    let db = Database::open(dir.path(), Config::default()).unwrap();
    let t = db.table("small").unwrap();
    assert!(matches!(
        t.insert(&[Value::Null]),
        Err(Error::AutoIncrementExhausted { .. })
    ));
}

#[test]
fn load_generates_values_and_moves_the_counter() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path(), config(mode)).unwrap();
        let t = db.create_table(def()).unwrap();
        let rows = (0..1000u64).map(|i| {
            if i < 900 {
                row(Value::Null, i)
            } else {
                row(Value::UInt(i + 100), i)
            }
        });
        t.load(rows).unwrap();
        assert_eq!(next(&t), Some(1100), "{mode:?}");
        let ids = ids(&db.table("t").unwrap());
        assert_eq!(ids.len(), 1000);
        assert_eq!(ids[899], 900);
        assert_eq!(ids[900], 1000);
        assert_eq!(
            db.table("t")
                .unwrap()
                .insert_returning_id(&row(Value::Null, 0))
                .unwrap()
                .id(),
            Some(1100)
        );
        db.check().unwrap();
    }
}

#[test]
fn counter_survives_restart_and_deleted_values_are_not_reused() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(AutoIncLockMode::Interleaved);
    {
        let db = Database::create(dir.path(), cfg.clone()).unwrap();
        let t = db.create_table(def()).unwrap();
        for _ in 0..5 {
            t.insert(&row(Value::Null, 0)).unwrap();
        }
        t.delete(&[Value::UInt(5)]).unwrap();
        t.delete(&[Value::UInt(4)]).unwrap();
        db.close().unwrap();
    }
    let db = Database::open(dir.path(), cfg.clone()).unwrap();
    let t = db.table("t").unwrap();
    // A clean close wrote the exact counter: no gap, and 4 and 5 are not handed out again.
    assert_eq!(next(&t), Some(6));
    assert_eq!(
        t.insert_returning_id(&row(Value::Null, 0)).unwrap().id(),
        Some(6)
    );
    // Dropping and re-creating the table starts a new counter.
    db.drop_table("t").unwrap();
    let t = db.create_table(def()).unwrap();
    assert_eq!(
        t.insert_returning_id(&row(Value::Null, 0)).unwrap().id(),
        Some(1)
    );
    db.check().unwrap();
    db.close().unwrap();
    let db = Database::open(dir.path(), cfg).unwrap();
    assert_eq!(next(&db.table("t").unwrap()), Some(2));
    db.check().unwrap();
}

fn crash_config(backend: Arc<dyn Backend>, mode: AutoIncLockMode) -> Config {
    Config {
        page_size: PageSize::K4,
        buffer_pool_size: 24 * 4096,
        log_file_size: 256 << 10,
        doublewrite_pages: 4,
        page_cleaners: 1,
        read_ahead_threshold: 0,
        buffer_pool_dump_at_shutdown: false,
        io_backend: IoBackend::Custom(backend),
        autoinc_lock_mode: mode,
        ..Config::default()
    }
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Power cuts during auto-increment inserts (single and multi-row) and deletes of the
/// largest rows: after recovery every acknowledged row is there, and the next value is above
/// every value ever acknowledged, deleted rows' included. `MINNOW_CRASH_SEEDS` runs more.
#[test]
fn power_cut_never_reuses_an_acknowledged_value() {
    let mut replayed = 0;
    for seed in minnow_io::campaign_seeds(40) {
        let mode = MODES[(seed % 3) as usize];
        let dir = tempfile::tempdir().unwrap();
        let sim = Arc::new(CrashSim::new(Arc::new(SyncBackend::new())));
        let backend: Arc<dyn Backend> = sim.clone();
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut live: Vec<u64> = Vec::new();
        let mut max_acked = 0;
        {
            let db =
                Database::create(dir.path(), crash_config(Arc::clone(&backend), mode)).unwrap();
            let t = db.create_table(def()).unwrap();
            sim.arm(1 + rng.below(300));
            let mut failed = false;
            for _ in 0..300 {
                let generated = match rng.below(4) {
                    0 => t
                        .insert_many((0..1 + rng.below(5)).map(|_| row(Value::Null, seed)))
                        .map(|r| r.generated),
                    1 if !live.is_empty() => {
                        // Delete the largest row: its value must not come back either. Cut
                        // by the crash, the row may or may not be gone.
                        let k = live.pop().unwrap();
                        t.delete(&[Value::UInt(k)]).map(|_| Vec::new())
                    }
                    _ => t
                        .insert_returning_id(&row(Value::Null, seed))
                        .map(|r| r.generated),
                };
                match generated {
                    Ok(g) => {
                        max_acked = max_acked.max(g.iter().copied().max().unwrap_or(0));
                        live.extend(g);
                    }
                    Err(_) => {
                        failed = true;
                        break;
                    }
                }
            }
            assert!(
                !failed || sim.is_dead(),
                "seed {seed}: a statement failed without a crash"
            );
        }
        let report = sim.power_cut(seed).unwrap();
        let db = Database::open(dir.path(), crash_config(backend, mode))
            .unwrap_or_else(|e| panic!("seed {seed}: open failed: {e}\n{report}"));
        replayed += usize::from(db.open_report().redo_groups > 0);
        let t = db.table("t").unwrap();
        let got = ids(&t);
        // Every acknowledged live row is there; at most one statement's rows beyond them.
        for id in &live {
            assert!(
                got.contains(id),
                "seed {seed}: acknowledged id {id} lost\n{report}"
            );
        }
        let fresh = t
            .insert_returning_id(&row(Value::Null, 0))
            .unwrap()
            .id()
            .unwrap();
        assert!(
            fresh > max_acked && !got.contains(&fresh),
            "seed {seed} ({mode:?}): value {fresh} handed out again (largest acknowledged \
             {max_acked}, rows {got:?})\n{report}"
        );
        db.check()
            .unwrap_or_else(|e| panic!("seed {seed}: check: {e}\n{report}"));
        db.close().unwrap();
    }
    assert!(
        replayed > 0,
        "no seed needed redo: the campaign is too gentle"
    );
}
