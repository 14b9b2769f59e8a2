//! `minnow status` and `minnow watch`: live through the status file of a database this test
//! process runs, and stopped from the files at rest.

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::minnow;
use minnow::{ColumnDef, ColumnType, Config, Database, STATUS_FILE, TableDef, Value};

fn def() -> TableDef {
    TableDef::new("t")
        .column(ColumnDef::new("id", ColumnType::U64))
        .column(ColumnDef::new("c", ColumnType::Var(100)))
        .primary_key(&["id"])
}

fn live_config() -> Config {
    Config {
        status_file: Some(Duration::from_millis(50)),
        ..Config::default()
    }
}

fn arg(p: &Path) -> String {
    p.display().to_string()
}

#[test]
fn live_status_shows_the_running_engine() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), live_config()).unwrap();
    let t = db.create_table(def()).unwrap();
    for id in 0..300u64 {
        t.insert(&[Value::UInt(id), Value::text("hello")]).unwrap();
    }
    // Wait (bounded) for a snapshot that has seen the inserts.
    let mut json = serde_json::Value::Null;
    for _ in 0..300 {
        let run = minnow(["status", &arg(dir.path()), "--json"]);
        assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
        json = run.json();
        if json.pointer("/live/rows/inserted").and_then(|v| v.as_u64()) == Some(300) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(json["source"], "live", "{json}");
    assert_eq!(json.pointer("/live/rows/inserted").unwrap(), 300, "{json}");
    let live = &json["live"];
    assert_eq!(live["pid"], std::process::id());
    assert!(live["redo"]["current_lsn"].as_u64().unwrap() > 0);
    assert!(live["buffer_pool"]["hits"].as_u64().unwrap() > 0);
    assert_eq!(live["buffer_pool"]["frames"], (64u64 << 20) / 16384);
    assert!(live["doublewrite"].is_object());
    assert!(
        live["adaptive_hash_index"]["memory_limit"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert_eq!(live["not_built"], serde_json::json!([]));
    assert!(live["transactions"]["next_trx_id"].as_u64().unwrap() > 300);
    assert!(live["transactions"]["history_len"].is_u64(), "{live}");
    assert!(live["transactions"]["purge_logs"].is_u64(), "{live}");
    let text = minnow(["status", &arg(dir.path())]);
    assert_eq!(text.code, 0);
    assert!(text.stdout.contains(": live (process"), "{}", text.stdout);
    for section in [
        "BUFFER POOL",
        "REDO",
        "DOUBLEWRITE",
        "ROWS",
        "TRANSACTIONS",
        "history_len",
    ] {
        assert!(text.stdout.contains(section), "{section}:\n{}", text.stdout);
    }
    drop(t);
    db.close().unwrap();
    assert!(!dir.path().join(STATUS_FILE).exists());
}

#[test]
fn watch_follows_a_workload() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), live_config()).unwrap();
    let t = db.create_table(def()).unwrap();
    let stop = AtomicBool::new(false);
    let run = std::thread::scope(|s| {
        s.spawn(|| {
            let mut id = 0u64;
            while !stop.load(Ordering::Relaxed) {
                t.insert(&[Value::UInt(id), Value::text("row")]).unwrap();
                assert!(t.get(&[Value::UInt(id / 2)]).unwrap().is_some());
                id += 1;
            }
        });
        let run = minnow([
            "watch",
            &arg(dir.path()),
            "--interval-ms",
            "60",
            "--count",
            "3",
            "--json",
        ]);
        stop.store(true, Ordering::Relaxed);
        run
    });
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let lines: Vec<serde_json::Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{}", run.stdout);
    for l in &lines {
        assert!(l["seconds"].as_f64().unwrap() > 0.0, "{l}");
        assert!(l["rows_inserted_per_s"].as_f64().unwrap() > 0.0, "{l}");
        assert!(l["rows_read_per_s"].as_f64().unwrap() > 0.0, "{l}");
        assert!(l["lsn_per_s"].as_f64().unwrap() > 0.0, "{l}");
        let hit = l["hit_rate"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&hit), "{l}");
    }
    // Text mode prints the header, then one line per interval.
    let text = minnow([
        "watch",
        &arg(dir.path()),
        "--interval-ms",
        "10",
        "--count",
        "2",
    ]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    let out: Vec<&str> = text.stdout.lines().collect();
    assert_eq!(out.len(), 3, "{}", text.stdout);
    assert!(out[0].contains("reads/s") && out[0].contains("redo B/s"));
    drop(t);
    db.close().unwrap();
}

#[test]
fn stopped_status_reads_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), Config::default()).unwrap();
    let t = db.create_table(def()).unwrap();
    for id in 0..100u64 {
        t.insert(&[Value::UInt(id), Value::text("x")]).unwrap();
    }
    drop(t);
    db.close().unwrap();
    let run = minnow(["status", &arg(dir.path()), "--json"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let j = run.json();
    assert_eq!(j["source"], "stopped");
    assert!(j["live"].is_null());
    let s = &j["stopped"];
    assert_eq!(s["redo"]["clean_shutdown"], true, "{j}");
    assert_eq!(s["redo"]["checkpoint_age"], 0, "{j}");
    assert!(s["tablespace"]["pages"].as_u64().unwrap() >= 4);
    assert_eq!(s["tablespace"]["page_size"], 16384);
    // Inserts write insert undo only: nothing joins the history list.
    assert_eq!(s["transactions"]["history_len"], 0, "{j}");
    assert!(
        s["transactions"]["undo_pages"].as_u64().unwrap() >= 1,
        "{j}"
    );
    assert_eq!(
        s["doublewrite_segments"], 4,
        "a pair per page cleaner plus the user threads' pair"
    );
    let text = minnow(["status", &arg(dir.path())]);
    assert!(
        text.stdout
            .contains("stopped (read from the files at rest)")
    );
    assert!(text.stdout.contains("closed cleanly"), "{}", text.stdout);
    assert!(
        text.stdout.contains("history list     0"),
        "{}",
        text.stdout
    );
    // watch needs a running database.
    let w = minnow(["watch", &arg(dir.path()), "--count", "1"]);
    assert_eq!(w.code, 2);
    assert!(w.stderr.contains("not running"), "{}", w.stderr);
}

#[test]
fn a_database_that_was_not_closed_has_redo_to_replay() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        page_cleaners: 0,
        ..Config::default()
    };
    let db = Database::create(dir.path(), config).unwrap();
    let t = db.create_table(def()).unwrap();
    for id in 0..50u64 {
        t.insert(&[Value::UInt(id), Value::text("x")]).unwrap();
    }
    drop(t);
    // Never closed: no cleaner moved the checkpoint, so the inserts' redo follows it.
    std::mem::forget(db);
    let j = minnow(["status", &arg(dir.path()), "--json"]).json();
    let redo = &j["stopped"]["redo"];
    assert_eq!(redo["clean_shutdown"], false, "{j}");
    assert!(redo["groups_to_replay"].as_u64().unwrap() >= 50, "{j}");
    assert!(redo["checkpoint_age"].as_u64().unwrap() > 0, "{j}");
}

#[test]
fn stale_and_garbage_status_files() {
    let dir = tempfile::tempdir().unwrap();
    Database::create(dir.path(), Config::default())
        .unwrap()
        .close()
        .unwrap();
    let path = dir.path().join(STATUS_FILE);
    // Left behind by a process that died an hour ago.
    std::fs::write(
        &path,
        r#"{"format": "minnow-status", "version": 1, "pid": 4242, "interval_ms": 1000,
            "taken_at_unix_ms": 1000, "rows": {"read": 1}}"#,
    )
    .unwrap();
    let run = minnow(["status", &arg(dir.path()), "--json"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let j = run.json();
    assert_eq!(j["source"], "stopped");
    assert!(j["notes"][0].as_str().unwrap().contains("4242"), "{j}");
    // Garbage is a problem (exit 1), and the files at rest are still shown.
    std::fs::write(&path, b"\x00\xffnot json").unwrap();
    let run = minnow(["status", &arg(dir.path()), "--json"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let j = run.json();
    assert!(
        j["problems"][0].as_str().unwrap().contains("not JSON"),
        "{j}"
    );
    assert!(j["stopped"]["tablespace"].is_object());
    // Not a database at all.
    let empty = tempfile::tempdir().unwrap();
    assert_eq!(minnow(["status", &arg(empty.path())]).code, 2);
}
