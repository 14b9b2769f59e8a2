//! The table cache gives a dropped table's memory back (seed 004: InnoDB's data dictionary
//! kept every table it had opened until the server stopped). Each table's cache entry is
//! watched through a `Weak` reference: once the table is dropped and no handle holds it,
//! nothing may keep the entry alive (not the adaptive hash index, not purge, not the map).

use std::sync::{Arc, Weak};

use crate::{ColumnDef, ColumnType, Config, Database, FlushAtCommit, IndexDef, TableDef, Value};
use minnow_engine::TableEntry;

const TABLES: u64 = 12;

fn def(i: u64) -> TableDef {
    TableDef::new(format!("t{i}"))
        .column(ColumnDef::new("id", ColumnType::U64))
        .column(ColumnDef::new("name", ColumnType::Var(20)))
        .primary_key(&["id"])
        .index(IndexDef::new("by_name", &["name"]))
}

fn config() -> Config {
    Config {
        buffer_pool_size: 4 << 20,
        flush_log_at_trx_commit: FlushAtCommit::Lazy,
        // Purge runs when the test says, so no background step holds an entry meanwhile.
        purge_threads: 0,
        ..Config::default()
    }
}

/// Weak references to every cached table's entry.
fn watch(db: &Database) -> Vec<Weak<TableEntry>> {
    let inner = db.inner().unwrap();
    inner.tables().read().values().map(Arc::downgrade).collect()
}

/// Writes, reads (so the adaptive hash index hashes the pages), updates and deletes in table
/// `i`, and purges, so every structure that can refer to a table has.
fn use_table(db: &Database, i: u64) {
    let t = db.table(&format!("t{i}")).unwrap();
    for k in 0..40u64 {
        t.insert(&[Value::UInt(k), Value::Bytes(format!("n{k}").into_bytes())])
            .unwrap();
    }
    for _ in 0..3 {
        for k in 0..40u64 {
            assert!(t.get(&[Value::UInt(k)]).unwrap().is_some());
        }
    }
    t.update(&[Value::UInt(1), Value::Bytes(b"x".to_vec())])
        .unwrap();
    t.delete(&[Value::UInt(2)]).unwrap();
    db.purge().unwrap();
}

#[test]
fn dropped_tables_leave_nothing_in_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config()).unwrap();
    for i in 0..TABLES {
        db.create_table(def(i)).unwrap();
        use_table(&db, i);
    }
    let created = watch(&db);
    assert_eq!(created.len() as u64, TABLES);
    // Rollback and purge find each table by its clustered index id.
    let ids: Vec<u64> = created
        .iter()
        .map(|w| w.upgrade().unwrap().meta.index_id)
        .collect();
    for (w, id) in created.iter().zip(&ids) {
        let found = minnow_engine::row::table_of(db.inner().unwrap(), *id).unwrap();
        assert!(Arc::ptr_eq(&found, &w.upgrade().unwrap()));
    }
    // A handle taken before the drop keeps its entry alive until it goes, and no longer.
    let held = db.table("t0").unwrap();
    for i in 0..TABLES {
        db.drop_table(&format!("t{i}")).unwrap();
    }
    db.purge().unwrap();
    assert!(db.tables().unwrap().is_empty());
    let alive: Vec<_> = created.iter().filter(|w| w.upgrade().is_some()).collect();
    assert_eq!(alive.len(), 1, "only the held table's entry is alive");
    drop(held);
    assert!(created.iter().all(|w| w.upgrade().is_none()));
    let inner = db.inner().unwrap();
    assert!(
        ids.iter()
            .all(|&id| minnow_engine::row::table_of(inner, id).is_none())
    );
    db.close().unwrap();
}

#[test]
fn tables_loaded_at_open_are_freed_by_their_drop() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config()).unwrap();
    for i in 0..TABLES {
        db.create_table(def(i)).unwrap();
    }
    db.close().unwrap();
    // The whole dictionary is loaded at open, not on first use.
    let db = Database::open(dir.path(), config()).unwrap();
    let loaded = watch(&db);
    assert_eq!(loaded.len() as u64, TABLES);
    use_table(&db, 3);
    for i in 0..TABLES {
        db.drop_table(&format!("t{i}")).unwrap();
    }
    db.purge().unwrap();
    assert!(loaded.iter().all(|w| w.upgrade().is_none()));
    db.close().unwrap();
    let db = Database::open(dir.path(), config()).unwrap();
    assert!(watch(&db).is_empty());
    db.check().unwrap();
    db.close().unwrap();
}
