//! The promise of `flush_log_at_trx_commit` 0 and 2: a commit is durable about
//! `flush_log_at_timeout` (1 s) after it returned, with no further activity. A background
//! thread syncs the log; without it an idle database could keep commits unsynced forever.
//!
//! Each case commits one row under the crash simulator, then does nothing but watch the
//! status until the log's flushed LSN passes the commit, cuts the power, and reopens: the
//! row must be there whatever the cut does to writes that were never synced.

use std::sync::Arc;
use std::time::{Duration, Instant};

use minnow::backend::{Backend, CrashSim, SyncBackend};
use minnow::{
    ColumnDef, ColumnType, Config, Database, Durability, FlushAtCommit, IoBackend, TableDef, Value,
};

fn config(backend: Arc<dyn Backend>, policy: FlushAtCommit) -> Config {
    Config {
        io_backend: IoBackend::Custom(backend),
        flush_log_at_trx_commit: policy,
        // Nothing else may sync the log: no page cleaner (its flushes obey the WAL rule and
        // would sync it), no purge.
        page_cleaners: 0,
        purge_threads: 0,
        ..Config::default()
    }
}

fn commit_then_wait(policy: FlushAtCommit, expected: Durability, seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let sim = Arc::new(CrashSim::new(Arc::new(SyncBackend::new())));
    let backend: Arc<dyn Backend> = sim.clone();
    let db = Database::create(dir.path(), config(Arc::clone(&backend), policy)).unwrap();
    let t = db
        .create_table(
            TableDef::new("t")
                .column(ColumnDef::new("id", ColumnType::U64))
                .primary_key(&["id"]),
        )
        .unwrap();
    let mut tx = db.begin().unwrap();
    tx.insert(&t, &[Value::UInt(42)]).unwrap();
    assert_eq!(tx.commit().unwrap(), expected);
    let committed = db.status().unwrap().redo.current_lsn;
    let start = Instant::now();
    // Generous for a loaded machine; the flusher's interval is 1 s.
    let deadline = Duration::from_secs(5);
    loop {
        let flushed = db.status().unwrap().redo.flushed_lsn;
        if flushed >= committed {
            break;
        }
        assert!(
            start.elapsed() < deadline,
            "{policy:?}: the log was synced only up to {flushed}, the commit ends at \
             {committed}, {:?} after the commit with nothing else happening",
            start.elapsed()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(sim.unsynced_writes(), 0, "the redo write was not synced");
    sim.power_cut(seed).unwrap();
    drop(t);
    drop(db); // its shutdown's writes fail: the device is gone
    let db = Database::open(dir.path(), config(backend, policy)).unwrap();
    assert_eq!(
        db.table("t").unwrap().get(&[Value::UInt(42)]).unwrap(),
        Some(vec![Value::UInt(42)]),
        "{policy:?}: a commit synced by the flusher was lost"
    );
    db.close().unwrap();
}

#[test]
fn a_commit_under_2_becomes_durable_without_further_activity() {
    for seed in 0..3 {
        commit_then_wait(FlushAtCommit::Write, Durability::Written, seed);
    }
}

#[test]
fn a_commit_under_0_becomes_durable_without_further_activity() {
    commit_then_wait(FlushAtCommit::Lazy, Durability::Buffered, 7);
}

#[test]
fn the_flush_interval_is_validated() {
    let dir = tempfile::tempdir().unwrap();
    let bad = Config {
        flush_log_at_timeout: Duration::ZERO,
        ..Config::default()
    };
    let err = Database::create(dir.path(), bad).unwrap_err();
    assert!(
        err.to_string().contains("innodb_flush_log_at_timeout"),
        "{err}"
    );
}
