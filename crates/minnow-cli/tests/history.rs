//! `minnow history DIR TABLE KEY`: a row's version chain read from the files, on stopped and
//! live databases, with an uncommitted transaction's version on top, and on garbage. Every
//! run must leave the files byte-identical.

mod common;

use common::{json_in as json_of, minnow_in as minnow};

use std::path::Path;

use minnow::inspect::Internals;
use minnow::{ColumnDef, ColumnType, Config, Database, TableDef, Value};

fn def() -> TableDef {
    TableDef::new("acct")
        .column(ColumnDef::new("id", ColumnType::U32))
        .column(ColumnDef::new("day", ColumnType::Date))
        .column(ColumnDef::new("note", ColumnType::Var(200)))
        .column(ColumnDef::new("balance", ColumnType::I64))
        .primary_key(&["id", "day"])
}

fn day() -> Value {
    Value::date(2024, 2, 29).unwrap()
}

fn row(id: u64, note: &str, balance: i64) -> Vec<Value> {
    vec![
        Value::UInt(id),
        day(),
        Value::text(note),
        Value::Int(balance),
    ]
}

/// Rows 0..400 (a tree of more than one level), row 7 updated three times and deleted, row 8
/// updated once; closed cleanly.
fn make_db(dir: &Path) {
    let db = Database::create(dir, common::config_without_purge()).unwrap();
    let t = db.create_table(def()).unwrap();
    for id in 0..400u64 {
        t.insert(&row(id, &format!("{id:04}-{}", "n".repeat(150)), 100))
            .unwrap();
    }
    for (i, bal) in [90i64, 80, 70].into_iter().enumerate() {
        t.update(&row(7, &format!("v{i}"), bal)).unwrap();
    }
    t.delete(&[Value::UInt(7), day()]).unwrap();
    t.update(&row(8, "eight", 1)).unwrap();
    drop(t);
    db.close().unwrap();
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn committed_updates_and_a_delete_newest_first() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    let (code, j) = json_of(
        dir.path(),
        &["history", s(dir.path()), "acct", "7,2024-02-29"],
    );
    assert_eq!(code, 0, "{j}");
    assert_eq!(j["ok"], true);
    assert_eq!(j["found"], true);
    let versions = j["versions"].as_array().unwrap();
    let shape: Vec<(String, bool, i64, String)> = versions
        .iter()
        .map(|v| {
            (
                v["undo"].as_str().unwrap().to_owned(),
                v["deleted"].as_bool().unwrap(),
                v["values"]["balance"].as_i64().unwrap(),
                v["writer"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let c = |u: &str, d, b| (u.to_owned(), d, b, "committed".to_owned());
    assert_eq!(
        shape,
        [
            c("delete_mark", true, 70),
            c("update", false, 70),
            c("update", false, 80),
            c("update", false, 90),
            c("insert", false, 100),
        ]
    );
    assert_eq!(versions[0]["values"]["note"], "v2");
    assert_eq!(versions[0]["values"]["day"], "2024-02-29");
    // Newer versions were written by newer transactions; roll pointers decoded.
    let ids: Vec<u64> = versions
        .iter()
        .map(|v| v["trx_id"].as_u64().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "{ids:?}");
    assert_eq!(versions[4]["roll_ptr"]["insert"], true);
    assert!(
        versions[..4]
            .iter()
            .all(|v| v["roll_ptr"]["insert"] == false)
    );
    assert!(
        versions
            .iter()
            .all(|v| v["roll_ptr"]["page"].as_u64() > Some(0))
    );
    assert_eq!(j["end"]["reason"], "inserted");
    assert_eq!(j["end"]["trx_id"].as_u64(), Some(ids[4]));
    assert_eq!(j["active_transactions"].as_array().unwrap().len(), 0);

    // The same in text.
    let (code, text) = minnow(
        dir.path(),
        false,
        &["history", s(dir.path()), "acct", "7,2024-02-29"],
    );
    assert_eq!(code, 0);
    assert!(text.contains("DELETE-MARKED"), "{text}");
    assert!(text.contains("undo delete_mark"), "{text}");
    assert!(text.contains("end of chain: transaction"), "{text}");
    assert!(text.contains("5 version(s)"), "{text}");

    // A row never changed after its insert: one version.
    let (code, j) = json_of(
        dir.path(),
        &["history", s(dir.path()), "acct", "300,2024-02-29"],
    );
    assert_eq!(code, 0);
    assert_eq!(j["versions"].as_array().unwrap().len(), 1);
    assert_eq!(j["versions"][0]["values"]["id"], 300);
}

#[test]
fn missing_tables_and_keys_exit_1_bad_input_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    let d = s(dir.path());
    // No such table, no such key: problems found.
    let (code, j) = json_of(dir.path(), &["history", d, "nope", "1"]);
    assert_eq!(code, 1);
    assert_eq!(j["found"], false);
    assert!(j["problems"][0].as_str().unwrap().contains("acct"), "{j}");
    let (code, j) = json_of(dir.path(), &["history", d, "acct", "9999,2024-02-29"]);
    assert_eq!(code, 1);
    assert_eq!(j["found"], false);
    let (code, _) = json_of(dir.path(), &["history", d, "acct", "7,2024-03-01"]);
    assert_eq!(code, 1);
    // Keys that do not parse by the column types: usage errors, with JSON on stdout.
    for key in [
        "7",
        "7,2024-02-29,1",
        "x,2024-02-29",
        "-1,2024-02-29",
        "4294967296,2024-02-29",
        "7,2024-02-30",
        "7,yesterday",
        "",
        ",,,",
    ] {
        let (code, j) = json_of(dir.path(), &["history", d, "acct", key]);
        assert_eq!(code, 2, "key {key:?}: {j}");
        assert!(j["error"].as_str().is_some(), "{j}");
    }
    // No database there.
    let empty = tempfile::tempdir().unwrap();
    let (code, _) = json_of(empty.path(), &["history", s(empty.path()), "acct", "1"]);
    assert_eq!(code, 2);
    let missing = empty.path().join("missing");
    let (code, _) = json_of(&missing, &["history", s(&missing), "acct", "1"]);
    assert_eq!(code, 2);
    // Missing arguments: clap's usage error.
    let (code, _) = minnow(dir.path(), false, &["history", d, "acct"]);
    assert_eq!(code, 2);
}

#[test]
fn garbage_files_are_reported_not_panicked_on() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    let data = dir.path().join(minnow::inspect::SYSTEM_TABLESPACE);
    let good = std::fs::read(&data).unwrap();
    let page = 16384;
    // Damage every page after the dictionary in turn, a few at a time: the command says what
    // it found (0 if the damage missed the row's path, 1 if it hit it), never panics.
    let pages = good.len() / page;
    let mut hit = 0;
    for p in (3..pages).step_by(3) {
        let mut bad = good.clone();
        for b in &mut bad[p * page + 100..p * page + 200] {
            *b ^= 0x5A;
        }
        std::fs::write(&data, &bad).unwrap();
        let (code, j) = json_of(
            dir.path(),
            &["history", s(dir.path()), "acct", "7,2024-02-29"],
        );
        assert!(code == 0 || code == 1, "page {p}: exit {code}: {j}");
        if code == 1 {
            hit += 1;
            assert!(!j["problems"].as_array().unwrap().is_empty(), "{j}");
        }
    }
    assert!(hit > 0, "no damaged page was on the row's path");
    // Random bytes for a tablespace, and a truncated one: errors, not panics.
    std::fs::write(&data, vec![0xA5u8; 100_000]).unwrap();
    let (code, _) = json_of(
        dir.path(),
        &["history", s(dir.path()), "acct", "7,2024-02-29"],
    );
    assert!(code == 1 || code == 2);
    std::fs::write(&data, &good[..page * 3 + 17]).unwrap();
    let (code, _) = json_of(
        dir.path(),
        &["history", s(dir.path()), "acct", "7,2024-02-29"],
    );
    assert!(code == 1 || code == 2);
}

#[test]
fn an_uncommitted_version_is_on_top_live_and_after_a_stop_and_gone_after_open() {
    let dir = tempfile::tempdir().unwrap();
    let d = s(dir.path()).to_owned();
    let key = "8,2024-02-29";
    let db = Database::create(dir.path(), Config::default()).unwrap();
    let t = db.create_table(def()).unwrap();
    t.insert(&row(8, "eight", 100)).unwrap();
    let mut tx = db.begin().unwrap();
    tx.update(&t, &row(8, "pending", 5)).unwrap();
    let writer = tx.id();
    // Live: what the command reads is what reached the data file.
    db.buffer_pool().unwrap().flush_all().unwrap();
    let (code, j) = json_of(dir.path(), &["history", &d, "acct", key]);
    assert_eq!(code, 0, "{j}");
    assert_eq!(j["versions"][0]["writer"], "active");
    assert_eq!(j["versions"][0]["trx_id"].as_u64(), Some(writer));
    assert_eq!(j["versions"][0]["values"]["note"], "pending");
    assert_eq!(j["versions"][1]["writer"], "committed");
    assert_eq!(j["active_transactions"][0].as_u64(), Some(writer));
    // The database was neither blocked nor disturbed: the writer goes on.
    tx.update(&t, &row(8, "pending", 6)).unwrap();
    // The process stops with the transaction open (forgotten: nothing rolls it back), after
    // its pages were written.
    std::mem::forget(tx);
    drop(t);
    db.close().unwrap();
    let (code, j) = json_of(dir.path(), &["history", &d, "acct", key]);
    assert_eq!(code, 0, "{j}");
    let writers: Vec<&str> = j["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["writer"].as_str().unwrap())
        .collect();
    assert_eq!(writers, ["active", "active", "committed"]);
    assert_eq!(j["versions"][0]["values"]["balance"], 6);
    // Opening rolls it back: the chain is the committed insert alone.
    let db = Database::open(dir.path(), Config::default()).unwrap();
    assert_eq!(db.open_report().rolled_back, 1);
    db.close().unwrap();
    let (code, j) = json_of(dir.path(), &["history", &d, "acct", key]);
    assert_eq!(code, 0, "{j}");
    assert_eq!(j["versions"].as_array().unwrap().len(), 1);
    assert_eq!(j["versions"][0]["values"]["balance"], 100);
    assert_eq!(j["active_transactions"].as_array().unwrap().len(), 0);
}
