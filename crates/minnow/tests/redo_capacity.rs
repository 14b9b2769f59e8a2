//! The redo log's capacity: transactions whose redo is many times the log's capacity commit,
//! survive a power cut (committed) or are rolled back by recovery (in flight); and the log
//! file of a small database stays small, whatever its capacity.

mod common;

use std::sync::Arc;

use common::{all_rows, crash_config};
use minnow::backend::{Backend, CrashSim, SyncBackend};
use minnow::inspect::Internals;
use minnow::{ColumnDef, ColumnType, Config, Database, TableDef, Value};

fn def() -> TableDef {
    padded(120)
}

/// Table `t`: a `u64` key and a pad of up to `max` bytes.
fn padded(max: u16) -> TableDef {
    TableDef::new("t")
        .column(ColumnDef::new("id", ColumnType::U64))
        .column(ColumnDef::new("pad", ColumnType::Var(max)))
        .primary_key(&["id"])
}

fn row(id: u64) -> Vec<Value> {
    // Keys spread over the key space, so the inserts land all over the tree.
    let key = id.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 16;
    vec![
        Value::UInt(key),
        Value::Bytes((0..100).map(|i| (id as u8).wrapping_add(i)).collect()),
    ]
}

#[test]
fn transactions_many_logs_long_commit_and_survive_a_power_cut() {
    const CAPACITY: u64 = 256 << 10;
    const ROWS: u64 = 3000;
    let dir = tempfile::tempdir().unwrap();
    let sim = Arc::new(CrashSim::new(Arc::new(SyncBackend::new())));
    let backend: Arc<dyn Backend> = sim.clone();
    let config = || Config {
        log_file_size: CAPACITY,
        ..crash_config(Arc::clone(&backend))
    };
    {
        let db = Database::create(dir.path(), config()).unwrap();
        let t = db.create_table(def()).unwrap();
        let log = Arc::clone(db.buffer_pool().unwrap().log().unwrap());
        assert_eq!(log.capacity(), CAPACITY);
        let start = log.current_lsn();
        let mut tx = db.begin().unwrap();
        for id in 0..ROWS {
            tx.insert(&t, &row(id)).unwrap();
        }
        tx.commit().unwrap();
        let laps = (log.current_lsn().0 - start.0) / CAPACITY;
        assert!(
            laps >= 3,
            "the committed transaction's redo is {laps} laps of the log"
        );
        // A second one, as long, still running when the power goes.
        let start = log.current_lsn();
        let mut tx = db.begin().unwrap();
        for id in ROWS..2 * ROWS {
            tx.insert(&t, &row(id)).unwrap();
        }
        let laps = (log.current_lsn().0 - start.0) / CAPACITY;
        assert!(
            laps >= 3,
            "the open transaction's redo is {laps} laps of the log"
        );
        // The device dies: neither the rollback of the dropped transaction nor the close
        // reaches the disk.
        sim.arm(0);
        drop(tx);
        drop(t);
        drop(db);
    }
    let report = sim.power_cut(7).unwrap();
    let db = Database::open(dir.path(), config())
        .unwrap_or_else(|e| panic!("open after the power cut: {e}\n{report}"));
    assert!(
        db.open_report().undo_records_applied > 0,
        "recovery rolled the open transaction back"
    );
    let t = db.table("t").unwrap();
    let mut want: Vec<Vec<Value>> = (0..ROWS).map(row).collect();
    want.sort_by_key(|r| match r[0] {
        Value::UInt(k) => k,
        _ => unreachable!("the key is a UInt"),
    });
    assert_eq!(all_rows(&t), want, "the committed rows, and only those");
    db.check().unwrap();
    drop(t);
    db.close().unwrap();
}

#[test]
fn a_small_database_keeps_a_small_log() {
    let dir = tempfile::tempdir().unwrap();
    let config = || Config {
        buffer_pool_dump_at_shutdown: false,
        ..Config::default()
    };
    let capacity = config().redo_capacity();
    assert_eq!(capacity, minnow::DEFAULT_REDO_CAPACITY);
    {
        let db = Database::create(dir.path(), config()).unwrap();
        let t = db.create_table(def()).unwrap();
        for id in 0..6 {
            t.insert(&row(id)).unwrap();
        }
        drop(t);
        db.close().unwrap();
    }
    let log_len = std::fs::metadata(dir.path().join(minnow::inspect::REDO_LOG))
        .unwrap()
        .len();
    // The header and the first 1/32 of the capacity, not the whole circular area.
    assert!(
        log_len <= 4096 + capacity / 32,
        "a six-row database has a {log_len}-byte redo log"
    );
    // The whole directory: the log's first step, two 1 MiB doublewrite segments and ibdata1's
    // first extent (the README's "What a new database costs on disk"), 6.2 MB.
    let files: Vec<(String, u64)> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            (name, e.metadata().unwrap().len())
        })
        .collect();
    let total: u64 = files.iter().map(|(_, len)| len).sum();
    assert!(
        total < 7_000_000,
        "a six-row database takes {total} bytes: {files:?}"
    );
    let db = Database::open(dir.path(), config()).unwrap();
    assert_eq!(
        db.buffer_pool().unwrap().log().unwrap().capacity(),
        capacity
    );
    assert_eq!(all_rows(&db.table("t").unwrap()).len(), 6);
    db.close().unwrap();
}

#[test]
fn a_clean_close_gives_the_grown_log_file_back() {
    const CAPACITY: u64 = 256 << 10;
    const ROWS: u64 = 1500;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(minnow::inspect::REDO_LOG);
    let len = || std::fs::metadata(&path).unwrap().len();
    let config = || Config {
        log_file_size: CAPACITY,
        buffer_pool_dump_at_shutdown: false,
        ..Config::default()
    };
    // What is left: the log file's 4 KiB header (the file header and checkpoint slots).
    let shrunk = 4096;
    let db = Database::create(dir.path(), config()).unwrap();
    let t = db.create_table(def()).unwrap();
    // One row first, so that the transaction below writes row by row (into an empty table
    // it would be buffered and built at commit, writing far less redo).
    t.insert(&row(0)).unwrap();
    let mut tx = db.begin().unwrap();
    for id in 1..ROWS {
        tx.insert(&t, &row(id)).unwrap();
    }
    tx.commit().unwrap();
    // A transaction that laps the log leaves it full size while the database is open.
    assert_eq!(len(), 4096 + CAPACITY);
    drop(t);
    db.close().unwrap();
    assert_eq!(len(), shrunk, "the close shrinks the log file");
    // Everything is there after the reopen, and the log grows and shrinks again.
    let db = Database::open(dir.path(), config()).unwrap();
    assert_eq!(db.open_report().redo_groups, 0);
    let t = db.table("t").unwrap();
    assert_eq!(all_rows(&t).len(), ROWS as usize);
    let mut tx = db.begin().unwrap();
    for id in ROWS..2 * ROWS {
        tx.insert(&t, &row(id)).unwrap();
    }
    tx.commit().unwrap();
    assert_eq!(len(), 4096 + CAPACITY);
    drop(t);
    db.close().unwrap();
    assert_eq!(len(), shrunk);
    let db = Database::open(dir.path(), config()).unwrap();
    assert_eq!(all_rows(&db.table("t").unwrap()).len(), 2 * ROWS as usize);
    db.check().unwrap();
    db.close().unwrap();
}

/// Sixteen writers (each row's id spread over the key space, its value `len` bytes of one
/// value), ROWS each, on a 1 MiB log: checks that every insert succeeded and returns the
/// database (its directory first) for more checks. With `together` every round's inserts
/// start at once.
fn sixteen_writers(
    def: TableDef,
    rows: u64,
    len: usize,
    together: bool,
) -> (tempfile::TempDir, Database, minnow::Table) {
    use std::sync::atomic::{AtomicU64, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        log_file_size: 1 << 20,
        ..Config::default()
    };
    let db = Database::create(dir.path(), config).unwrap();
    let t = db.create_table(def).unwrap();
    // A first row, so that no writer fills an empty table through the bulk insert path.
    t.insert(&[Value::UInt(u64::MAX), Value::Bytes(vec![0; 10])])
        .unwrap();
    let (table, failed) = (&t, &AtomicU64::new(0));
    let barrier = &std::sync::Barrier::new(WRITERS as usize);
    std::thread::scope(|s| {
        for w in 0..WRITERS {
            s.spawn(move || {
                for i in 0..rows {
                    let value = vec![(i + w) as u8; len];
                    if together {
                        barrier.wait();
                    }
                    let id = Value::UInt(spread(i * WRITERS + w));
                    if let Err(e) = table.insert(&[id, Value::Bytes(value)]) {
                        eprintln!("writer {w}, row {i}: {e}");
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    assert_eq!(failed.load(Ordering::Relaxed), 0);
    assert_eq!(t.count().unwrap(), WRITERS * rows + 1);
    (dir, db, t)
}

const WRITERS: u64 = 16;

/// Row `n`'s id in [`sixteen_writers`].
fn spread(n: u64) -> u64 {
    n.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 8
}

/// Sixteen writers on a 1 MiB log, where four pages' worth of redo per writer (what each mtr
/// reserves) is a sixteenth of it: every insert succeeds. Before log reservations, mtrs that
/// started together all passed the free check and the last appends failed with "redo log
/// full" (seen in `minnow bench oltp` with 16 threads on a 32 MiB log).
#[test]
fn sixteen_writers_on_a_one_mebibyte_log_never_find_it_full() {
    let (_dir, db, _) = sixteen_writers(padded(4000), 150, 3000, false);
    db.check().unwrap();
    db.close().unwrap();
}

/// Sixteen writers of rows whose value goes off-page (eight overflow pages, about 118 KiB of
/// redo in the inserting mtr, more than the sixteenth of the log no reservation may take) on
/// a 1 MiB log, where five such mtrs fit at once: every insert succeeds. Each mtr reserves
/// its chain's redo when it starts, before latching anything; when the chain's room was only
/// waited for (a free check before the mtr), writers starting together all saw it free, and
/// the appends that came last found the log full.
#[test]
fn sixteen_writers_of_overflow_chains_on_a_one_mebibyte_log_never_find_it_full() {
    const ROWS: u64 = 6;
    let def = TableDef::new("t")
        .column(ColumnDef::new("id", ColumnType::U64))
        .column(ColumnDef::new("body", ColumnType::Blob))
        .primary_key(&["id"]);
    let (_dir, db, t) = sixteen_writers(def, ROWS, 120_000, true);
    for n in [0, WRITERS * ROWS - 1] {
        let row = t
            .get(&[Value::UInt(spread(n))])
            .unwrap()
            .expect("row is there");
        let body = vec![(n / WRITERS + n % WRITERS) as u8; 120_000];
        assert_eq!(row.get(1), Some(&Value::Bytes(body)));
    }
    db.check().unwrap();
    db.close().unwrap();
}
