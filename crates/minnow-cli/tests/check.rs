//! `minnow check DIR` on a real minnow database: clean, damaged, and not a database.

use minnow::{ColumnDef, ColumnType, Config, Database, IndexDef, TableDef, Value};
use std::process::Command;

fn make_db(dir: &std::path::Path) {
    let db = Database::create(dir, Config::default()).unwrap();
    let t = db
        .create_table(
            TableDef::new("t")
                .column(ColumnDef::new("id", ColumnType::U32))
                .column(ColumnDef::new("k", ColumnType::U32))
                .column(ColumnDef::new("c", ColumnType::Fixed(100)))
                .primary_key(&["id"])
                .index(IndexDef::new("by_k", &["k"])),
        )
        .unwrap();
    for id in 0..2000u64 {
        t.insert(&[
            Value::UInt(id),
            Value::UInt(id % 37),
            Value::Bytes(vec![b'x'; 100]),
        ])
        .unwrap();
    }
    drop(t);
    db.close().unwrap();
}

fn check(dir: &std::path::Path) -> (i32, serde_json::Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_minnow"))
        .args(["--json", "check"])
        .arg(dir)
        .output()
        .unwrap();
    let json = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out.status.code().unwrap_or(-1), json)
}

#[test]
fn a_clean_database_checks_out() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    let (code, report) = check(dir.path());
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["ok"], true);
    assert_eq!(report["rows"]["t"], 2000);
    assert_eq!(report["indexes"], 3);
    assert_eq!(report["redo_groups_replayed"], 0);
}

fn damage_last_page(dir: &std::path::Path) {
    let file = dir.join(minnow::inspect::SYSTEM_TABLESPACE);
    let mut bytes = std::fs::read(&file).unwrap();
    let at = bytes.len() - 16384 + 5000;
    bytes[at] ^= 0x40;
    std::fs::write(&file, &bytes).unwrap();
}

#[test]
fn a_page_damaged_after_its_last_flush_is_restored_from_the_doublewrite_buffer() {
    // The last page written still has an intact copy in a doublewrite segment: opening the
    // database puts it back, exactly as after a torn write.
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    damage_last_page(dir.path());
    let (code, report) = check(dir.path());
    assert_eq!(code, 0, "{report}");
    assert!(report["pages_repaired"].as_u64().unwrap() >= 1, "{report}");
    assert_eq!(report["rows"]["t"], 2000);
}

#[test]
fn a_damaged_page_without_a_copy_is_named_and_not_a_database_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    damage_last_page(dir.path());
    // Without doublewrite copies the damage cannot be repaired and must be reported.
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("dblwr.") {
            let len = std::fs::metadata(&path).unwrap().len() as usize;
            std::fs::write(&path, vec![0u8; len]).unwrap();
        }
    }
    let (code, report) = check(dir.path());
    assert_ne!(code, 0, "{report}");
    let text = report.to_string();
    assert!(
        text.contains("checksum") || text.contains("corrupt"),
        "{text}"
    );

    let empty = tempfile::tempdir().unwrap();
    let (code, report) = check(empty.path());
    assert_eq!(code, 2, "{report}");
    assert!(
        report["error"].as_str().unwrap_or("").contains("ibdata1"),
        "{report}"
    );
}

#[test]
fn a_live_database_is_refused_by_check_and_still_read_by_the_inspector() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    let db = Database::open(dir.path(), Config::default()).unwrap();
    db.table("t")
        .unwrap()
        .insert(&[
            Value::UInt(5000),
            Value::UInt(1),
            Value::Bytes(vec![b'y'; 100]),
        ])
        .unwrap();
    // `check` recovers and writes: it must not run beside the open database.
    let (code, report) = check(dir.path());
    assert_eq!(code, 2, "{report}");
    let msg = report["error"].as_str().unwrap();
    assert!(
        msg.contains(&format!("in use by process {}", std::process::id())),
        "{msg}"
    );
    // The read-only commands keep working on the live files.
    for args in [
        vec![
            "verify".to_string(),
            dir.path().join("ibdata1").display().to_string(),
        ],
        vec!["log".to_string(), dir.path().display().to_string()],
        vec![
            "tree".to_string(),
            dir.path().display().to_string(),
            "t".to_string(),
        ],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_minnow"))
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {out:?}");
    }
    db.close().unwrap();
    let (code, report) = check(dir.path());
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["rows"]["t"], 2001);
}
