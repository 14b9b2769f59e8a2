//! `minnow inspect`'s space usage (fill, free, fragmented) and LSN ages, on a minnow database
//! and on the MariaDB fixtures.

mod common;

use common::{mariadb, minnow, mysql_fixtures};
use minnow::{ColumnDef, ColumnType, Config, Database, TableDef, Value};
use serde_json::Value as Json;

fn u(v: &Json, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"))
}

/// used + free + fragmented is the capacity, and the fill is used over capacity.
fn consistent(usage: &Json) {
    assert_eq!(
        u(usage, "used_bytes") + u(usage, "free_bytes") + u(usage, "fragmented_bytes"),
        u(usage, "capacity_bytes"),
        "{usage}"
    );
    let fill = usage["fill_factor"].as_f64().unwrap();
    let want = u(usage, "used_bytes") as f64 / u(usage, "capacity_bytes") as f64;
    assert!((fill - want).abs() < 1e-9, "{usage}");
}

#[test]
fn minnow_database_after_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), Config::default()).unwrap();
    let t = db
        .create_table(
            TableDef::new("t")
                .column(ColumnDef::new("id", ColumnType::U64))
                .column(ColumnDef::new("c", ColumnType::Var(200)))
                .primary_key(&["id"]),
        )
        .unwrap();
    for id in 0..3000u64 {
        t.insert(&[Value::UInt(id), Value::text(&"x".repeat(150))])
            .unwrap();
    }
    // A delete only delete-marks a record (purge, not built yet, would remove it), so the
    // fragmentation comes from shrinking every third row: each record is rewritten shorter
    // and the old one's bytes become garbage.
    for id in (0..3000u64).filter(|i| i % 3 == 1) {
        t.update(&[Value::UInt(id), Value::text("y")]).unwrap();
    }
    drop(t);
    db.close().unwrap();
    let file = dir.path().join(minnow::inspect::SYSTEM_TABLESPACE);
    let run = minnow(["inspect", file.to_str().unwrap(), "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let j = run.json();
    consistent(&j["index_usage"]);
    let table = j["indexes"]
        .as_array()
        .unwrap()
        .iter()
        .max_by_key(|i| u(i, "pages"))
        .unwrap();
    consistent(&table["usage"]);
    consistent(&table["leaf_usage"]);
    // A third of every leaf's records shrank: the space is fragmented, not free.
    assert!(u(&table["leaf_usage"], "fragmented_bytes") > 0, "{table}");
    let fill = table["leaf_usage"]["fill_factor"].as_f64().unwrap();
    assert!(fill > 0.2 && fill < 0.9, "{table}");
    // The redo log beside the file is the reference; after a clean close every page is at
    // or behind the checkpoint, and none is ahead of the log.
    let ages = &j["lsn_ages"];
    assert_eq!(ages["reference"], "redo log end", "{ages}");
    assert_eq!(u(ages, "pages_after_checkpoint"), 0, "{ages}");
    assert_eq!(u(ages, "pages_ahead"), 0, "{ages}");
    let bucketed: u64 = ages["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| u(b, "pages"))
        .sum();
    let written = u(&j, "file_pages") - u(&j, "empty_pages");
    assert!(
        bucketed > 0 && bucketed <= written,
        "{bucketed} of {written}"
    );
    let text = minnow(["inspect", file.to_str().unwrap()]);
    assert!(text.stdout.contains("space usage"), "{}", text.stdout);
    assert!(
        text.stdout
            .contains("pages by LSN age (behind the redo log end")
    );
}

#[test]
fn mariadb_sbtest1_fill() {
    let dir = tempfile::tempdir().unwrap();
    let file = mariadb(dir.path(), "sbtest1");
    let j = minnow(["inspect", file.to_str().unwrap(), "--json"]).json();
    let by_id = |id: u64| {
        j["indexes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["index_id"] == id)
            .cloned()
            .unwrap()
    };
    // PRIMARY (35), loaded in key order by sysbench: leaves filled to about 15/16.
    let primary = by_id(35);
    consistent(&primary["usage"]);
    let leaf = primary["leaf_usage"]["fill_factor"].as_f64().unwrap();
    assert!(leaf > 0.85 && leaf < 1.0, "{primary}");
    assert_eq!(u(&primary["leaf_usage"], "pages"), 138);
    // k_1 (36): sysbench creates it after the load, so it is built sorted too.
    let k1 = by_id(36);
    consistent(&k1["leaf_usage"]);
    assert_eq!(u(&k1["leaf_usage"], "pages"), 9);
    assert!(
        k1["leaf_usage"]["fill_factor"].as_f64().unwrap() > 0.85,
        "{k1}"
    );
    assert_eq!(j["lsn_ages"]["reference"], "newest page");
    assert!(j["lsn_ages"]["checkpoint_lsn"].is_null());
    // 640 pages, 152 of them non-zero.
    assert_eq!(u(&j, "empty_pages"), 640 - 152);
}

#[test]
fn every_mysql_fixture_has_consistent_usage() {
    for (file, _) in mysql_fixtures() {
        let j = minnow(["inspect", file.to_str().unwrap(), "--json"]).json();
        consistent(&j["index_usage"]);
        assert_eq!(j["index_usage"]["bad_headers"], 0, "{}", file.display());
        assert!(j["lsn_ages"].is_object(), "{}", file.display());
    }
}
