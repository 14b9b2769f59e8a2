//! A delete's undo record and mark in one mini-transaction (`minnow_engine::mark`) when the
//! rollback segment's mutex is held by another thread: the delete does not wait for it under
//! the leaf's latch; it lets the leaf go, waits, descends again and marks. Then the rollback
//! of its log restores the row. One rollback segment, so the two logs share its mutex.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use minnow_btree::record::{ColumnType, Value};
use minnow_engine::mark::{Marked, mark_deleted, undo_fields, undo_key_fields};
use minnow_engine::rollback::rollback_log;
use minnow_engine::row::row_lock_key;
use minnow_engine::{ColumnDef, Config, Engine, TableDef};
use minnow_mvcc::{LockKey, UndoFields};

fn setup(dir: &std::path::Path) -> (Arc<Engine>, Arc<minnow_engine::TableEntry>) {
    let config = Config {
        rollback_segments: 1,
        buffer_pool_dump_at_shutdown: false,
        ..Config::default()
    };
    let engine = Engine::create(dir, config).unwrap().engine;
    let t = engine
        .create_table(
            TableDef::new("kv")
                .column(ColumnDef::new("k", ColumnType::U64))
                .column(ColumnDef::new("v", ColumnType::I64))
                .primary_key(&["k"]),
        )
        .unwrap();
    for k in 0..500u64 {
        let row = [Value::UInt(k), Value::Int(k as i64)];
        t.clustered
            .insert(engine.pool(), &t.meta.clustered_values(&row))
            .unwrap();
    }
    (engine, t)
}

#[test]
fn a_held_segment_mutex_is_waited_for_with_no_latch_held() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, t) = setup(dir.path());
    let sys = engine.trx_sys();
    let pool = engine.pool();
    let mut log = sys.begin_log(pool, sys.assign_id(pool).unwrap()).unwrap();
    let other = sys.begin_log(pool, sys.assign_id(pool).unwrap()).unwrap();
    let released = AtomicBool::new(false);
    let (held_tx, held_rx) = mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| {
            let tail = sys.undo_tail(&other).unwrap();
            held_tx.send(()).unwrap();
            // Long enough for the delete to meet the held mutex under its leaf latch.
            std::thread::sleep(Duration::from_millis(200));
            released.store(true, Ordering::SeqCst);
            drop(tail);
        });
        held_rx.recv().unwrap();
        let pk = [Value::UInt(77)];
        let key = row_lock_key(&t, &pk).unwrap();
        let marked = mark_deleted(&engine, &t, &mut log, &pk, &key, true).unwrap();
        assert!(
            released.load(Ordering::SeqCst),
            "the mark finished while the mutex was held"
        );
        let Marked::Done { values, .. } = marked else {
            panic!("not marked: {marked:?}");
        };
        let values = values.expect("the fields were asked for");
        assert_eq!(values.first(), Some(&Value::UInt(77)));
    });
    assert_eq!(log.n_recs, 1);
    let e = t.clustered.get(pool, &[Value::UInt(77)]).unwrap().unwrap();
    assert!(e.deleted);
    // The undo record holds the key as the index stores it, copied from the lock key.
    let (_, rec) = sys.last_record(pool, &log, 0).unwrap().unwrap();
    let stored = t
        .clustered
        .layout()
        .encode_field(0, &Value::UInt(77))
        .unwrap();
    assert_eq!(rec.fields, [stored]);
    let key = |k: u64| row_lock_key(&t, &[Value::UInt(k)]).unwrap();
    assert!(matches!(
        mark_deleted(&engine, &t, &mut log, &[Value::UInt(77)], &key(77), false).unwrap(),
        Marked::Absent
    ));
    assert!(matches!(
        mark_deleted(
            &engine,
            &t,
            &mut log,
            &[Value::UInt(1000)],
            &key(1000),
            false
        )
        .unwrap(),
        Marked::Absent
    ));

    {
        let _q = engine.write_latch().unwrap();
        assert_eq!(rollback_log(&engine, &mut log, 0).unwrap(), 1);
    }
    let e = t.clustered.get(pool, &[Value::UInt(77)]).unwrap().unwrap();
    assert!(!e.deleted, "the rollback restores the row");
    assert_eq!(e.values.get(3), Some(&Value::Int(77)));
    sys.finish_rollback(pool, &log).unwrap();
    sys.finish_rollback(pool, &other).unwrap();
    engine.close().unwrap();
}

/// The undo fields of a key come from its lock key's bytes, and from the values themselves
/// when the lock key is not that key's (another index, or the supremum): the same fields.
#[test]
fn a_keys_undo_fields_copied_from_its_lock_key_are_the_encoded_ones() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, t) = setup(dir.path());
    let pk = [Value::UInt(123_456)];
    let mut want = UndoFields::new();
    undo_fields(&t, &pk, true, &mut want).unwrap();
    let other_index = LockKey::of_stored(t.meta.index_id + 1, &[Some(vec![9])]);
    for key in [
        row_lock_key(&t, &pk).unwrap(),
        LockKey::supremum(t.meta.index_id),
        other_index,
    ] {
        let mut got = UndoFields::new();
        undo_key_fields(&t, &key, &pk, &mut got).unwrap();
        assert_eq!(got, want, "{key}");
    }
    engine.close().unwrap();
}
