//! Page 0 of the system tablespace can be torn by a power cut like any other page. `open` must
//! not judge it before the doublewrite buffer had its chance: the tablespace is opened without
//! verifying page 0, doublewrite recovery restores it, and only then is it read (verified).

use minnow::PageSize;
use minnow::inspect::Internals;
use minnow::{ColumnDef, ColumnType, Config, Database, TableDef, Value};

fn config() -> Config {
    Config {
        page_size: PageSize::K4,
        buffer_pool_size: 64 * 4096,
        log_file_size: 1 << 20,
        doublewrite_pages: 8,
        ..Config::default()
    }
}

#[test]
fn a_torn_page_0_is_restored_from_the_doublewrite_buffer() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::create(dir.path(), config()).unwrap();
        let t = db
            .create_table(
                TableDef::new("t")
                    .column(ColumnDef::new("id", ColumnType::U64))
                    .column(ColumnDef::new("v", ColumnType::Var(200)))
                    .primary_key(&["id"]),
            )
            .unwrap();
        for id in 0..400u64 {
            t.insert(&[Value::UInt(id), Value::Bytes(vec![b'v'; 150])])
                .unwrap();
        }
        // Everything flushed; then a change to a handful of pages, page 0 among them (a new
        // table allocates its segments and root), so the final flush at close is one
        // doublewrite batch that holds page 0.
        db.buffer_pool().unwrap().flush_all().unwrap();
        db.create_table(
            TableDef::new("u")
                .column(ColumnDef::new("id", ColumnType::U64))
                .primary_key(&["id"]),
        )
        .unwrap();
        db.close().unwrap();
    }
    // Tear page 0: its second 512-byte sector becomes garbage, as a cut mid-write leaves it.
    let path = dir.path().join(minnow::inspect::SYSTEM_TABLESPACE);
    let mut bytes = std::fs::read(&path).unwrap();
    let good = bytes[..4096].to_vec();
    for b in &mut bytes[512..1024] {
        *b ^= 0x5A;
    }
    std::fs::write(&path, &bytes).unwrap();
    let db = Database::open(dir.path(), config()).unwrap();
    assert!(
        db.open_report().pages_repaired >= 1,
        "{:?}",
        db.open_report()
    );
    assert_eq!(db.check().unwrap().rows["t"], 400);
    db.close().unwrap();
    let after = std::fs::read(&path).unwrap();
    assert_eq!(after[512..1024], good[512..1024], "page 0 was written back");
}
