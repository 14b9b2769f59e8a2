//! `minnow log`, `minnow dblwr` and `minnow tree` on real minnow databases: a cleanly closed
//! one, a crashed one, and garbage. Every command must leave the files byte-identical.

mod common;

use common::snapshot;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use minnow::backend::{Backend, CrashSim, SyncBackend};
use minnow::inspect::Internals;
use minnow::{ColumnDef, ColumnType, Config, Database, IndexDef, IoBackend, TableDef, Value};

fn def() -> TableDef {
    TableDef::new("t")
        .column(ColumnDef::new("id", ColumnType::U32))
        .column(ColumnDef::new("k", ColumnType::U32))
        .column(ColumnDef::new("c", ColumnType::Var(100)))
        .primary_key(&["id"])
        .index(IndexDef::new("by_k", &["k"]))
}

fn row(id: u64) -> [Value; 3] {
    [
        Value::UInt(id),
        Value::UInt(id % 37),
        Value::Bytes(format!("row-{id:06}-{}", "x".repeat(60)).into_bytes()),
    ]
}

/// A closed database with a two-level clustered tree.
fn make_db(dir: &Path) {
    let db = Database::create(dir, Config::default()).unwrap();
    let t = db.create_table(def()).unwrap();
    for id in 0..2000u64 {
        t.insert(&row(id)).unwrap();
    }
    drop(t);
    db.close().unwrap();
}

fn crash_config(backend: Arc<dyn Backend>) -> Config {
    Config {
        page_size: minnow::PageSize::K4,
        buffer_pool_size: 24 * 4096,
        log_file_size: 256 << 10,
        doublewrite_pages: 4,
        page_cleaners: 1,
        read_ahead_threshold: 0,
        buffer_pool_dump_at_shutdown: false,
        io_backend: IoBackend::Custom(backend),
        ..Config::default()
    }
}

/// A database whose power was cut in the middle of inserts: redo after the checkpoint.
fn make_crashed_db(dir: &Path) {
    let sim = Arc::new(CrashSim::new(Arc::new(SyncBackend::new())));
    let backend: Arc<dyn Backend> = sim.clone();
    {
        let db = Database::create(dir, crash_config(Arc::clone(&backend))).unwrap();
        let t = db.create_table(def()).unwrap();
        sim.arm(400);
        for id in 0..3000u64 {
            if t.insert(&row(id)).is_err() {
                break;
            }
        }
        assert!(sim.is_dead(), "the power cut never came");
    }
    sim.power_cut(7).unwrap();
}

/// Runs `minnow --json ARGS`, checks the directory is unchanged, returns (exit code, JSON).
fn minnow_json(dir: &Path, args: &[&str]) -> (i32, serde_json::Value) {
    let before = snapshot(dir);
    let out = Command::new(env!("CARGO_BIN_EXE_minnow"))
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    assert!(
        snapshot(dir) == before,
        "minnow {args:?} changed the files in the directory"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("panicked"),
        "minnow {args:?} panicked: {stderr}"
    );
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "minnow {args:?}: stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    (out.status.code().unwrap_or(-1), json)
}

/// Runs `minnow ARGS` in text mode and returns (exit code, stdout).
fn minnow_text(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_minnow"))
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("panicked"),
        "minnow {args:?} panicked: {stderr}"
    );
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

// ---- log ----

#[test]
fn log_of_a_closed_database() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    let (code, r) = minnow_json(dir.path(), &["log", s(dir.path())]);
    assert_eq!(code, 0, "{r}");
    assert_eq!(r["ok"], true);
    assert!(r["header"]["capacity"].as_u64().unwrap() > 0);
    let slots = r["checkpoints"].as_array().unwrap();
    assert_eq!(slots.len(), 2);
    assert_eq!(
        slots.iter().filter(|s| s["newest"] == true).count(),
        1,
        "{r}"
    );
    // A clean close checkpoints at the end: nothing to replay.
    assert_eq!(r["scan_from"], r["end"], "{r}");
    assert_eq!(r["summary"]["records"], 0);
    let (code, text) = minnow_text(&["log", s(dir.path())]);
    assert_eq!(code, 0);
    assert!(text.contains("checkpoint slot 0"), "{text}");
}

#[test]
fn log_of_a_crashed_database_lists_records() {
    let dir = tempfile::tempdir().unwrap();
    make_crashed_db(dir.path());
    let (code, r) = minnow_json(dir.path(), &["log", s(dir.path()), "--limit", "5"]);
    assert_eq!(code, 0, "{r}");
    let records = r["summary"]["records"].as_u64().unwrap();
    assert!(records > 0, "{r}");
    assert!(r["summary"]["pages_touched"].as_u64().unwrap() > 0);
    let listed = r["records"].as_array().unwrap();
    assert_eq!(listed.len() as u64, records.min(5));
    let first = &listed[0];
    assert!(first["lsn"].as_u64().unwrap() >= r["scan_from"].as_u64().unwrap());
    assert!(["write", "memset", "init_page"].contains(&first["type"].as_str().unwrap()));
    let by_type: u64 = r["summary"]["by_type"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(by_type, records);
    let (code, text) = minnow_text(&["log", s(dir.path()), "--limit", "3"]);
    assert_eq!(code, 0);
    assert!(text.contains("group at LSN"), "{text}");
}

#[test]
fn log_names_a_damaged_block_before_the_durable_end_as_corruption() {
    let dir = tempfile::tempdir().unwrap();
    make_crashed_db(dir.path());
    let (_, r) = minnow_json(dir.path(), &["log", s(dir.path())]);
    let from = r["scan_from"].as_u64().unwrap();
    let capacity = r["header"]["capacity"].as_u64().unwrap();
    assert!(r["valid_end"].as_u64().unwrap() > from + 4 * 512, "{r}");
    // Flip a byte of the second block from the checkpoint: synced long before the later
    // blocks were written, so its damage is not a torn tail.
    let block = from - from % 512 + 512;
    let at = (4096 + block % capacity + 100) as usize;
    let log = dir.path().join(minnow::inspect::REDO_LOG);
    let mut bytes = std::fs::read(&log).unwrap();
    bytes[at] ^= 0x10;
    std::fs::write(&log, &bytes).unwrap();
    let (code, r) = minnow_json(dir.path(), &["log", s(dir.path())]);
    assert_eq!(code, 1, "{r}");
    assert_eq!(r["ok"], false);
    assert_eq!(r["valid_end"].as_u64().unwrap(), block + 20, "{r}");
    assert_eq!(
        r["end_reason"],
        format!("block at LSN {block} fails its CRC"),
        "{r}"
    );
    assert!(r["leftover_blocks"].as_u64().unwrap() > 0, "{r}");
    let problems = r["problems"].as_array().unwrap();
    assert!(
        problems.iter().any(|p| p
            .as_str()
            .unwrap()
            .contains("so the damage is not a torn tail")),
        "{r}"
    );
    let (code, text) = minnow_text(&["log", s(dir.path())]);
    assert_eq!(code, 1);
    assert!(
        text.contains(&format!("end: block at LSN {block} fails its CRC")),
        "{text}"
    );
}

#[test]
fn log_garbage_is_reported_not_panicked_on() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    let log = dir.path().join(minnow::inspect::REDO_LOG);
    let bytes = std::fs::read(&log).unwrap();
    // Cut in the middle of the data area (a clean close leaves only the 4 KiB header, so
    // the file is grown to the cut with zeroes first).
    let mut cut = bytes.clone();
    cut.resize(6000, 0);
    std::fs::write(&log, &cut).unwrap();
    let (code, r) = minnow_json(dir.path(), &["log", s(dir.path())]);
    assert_eq!(code, 1, "{r}");
    assert!(!r["problems"].as_array().unwrap().is_empty());
    // Shorter than the header.
    std::fs::write(&log, &bytes[..100]).unwrap();
    let (code, _) = minnow_json(dir.path(), &["log", s(dir.path())]);
    assert_eq!(code, 1);
    // Random bytes.
    let mut x = 0x1234_5678_9abc_def0u64;
    let noise: Vec<u8> = (0..70_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(&log, &noise).unwrap();
    let (code, _) = minnow_json(dir.path(), &["log", s(dir.path())]);
    assert_eq!(code, 1);
    // Both checkpoints damaged.
    let mut b = bytes.clone();
    b[600] ^= 1;
    b[1100] ^= 1;
    std::fs::write(&log, &b).unwrap();
    let (code, r) = minnow_json(dir.path(), &["log", s(dir.path())]);
    assert_eq!(code, 1, "{r}");
    // No log at all: an IO error.
    std::fs::remove_file(&log).unwrap();
    let (code, r) = minnow_json(dir.path(), &["log", s(dir.path())]);
    assert_eq!(code, 2, "{r}");
    assert!(r["error"].is_string());
}

// ---- dblwr ----

#[test]
fn dblwr_of_a_closed_database() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    let (code, r) = minnow_json(dir.path(), &["dblwr", s(dir.path())]);
    assert_eq!(code, 0, "{r}");
    let segments = r["segments"].as_array().unwrap();
    assert!(!segments.is_empty());
    let mut slots = 0;
    for seg in segments {
        assert_eq!(seg["valid"], true, "{seg}");
        for slot in seg["slots"].as_array().unwrap() {
            slots += 1;
            assert_eq!(slot["copy_valid"], true, "{slot}");
            // After a clean close every batch reached the data file.
            assert!(
                ["same_lsn", "data_newer"].contains(&slot["data"].as_str().unwrap()),
                "{slot}"
            );
            assert_eq!(slot["recovery"], "keep", "{slot}");
        }
    }
    assert!(slots > 0, "no batch was ever written: {r}");
    let (code, text) = minnow_text(&["dblwr", s(dir.path())]);
    assert_eq!(code, 0);
    assert!(text.contains("slot"), "{text}");
}

#[test]
fn dblwr_sees_a_torn_data_page_it_would_restore() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    let (_, r) = minnow_json(dir.path(), &["dblwr", s(dir.path())]);
    let slot = r["segments"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|seg| seg["slots"].as_array().unwrap().iter())
        .find(|slot| slot["data"] == "same_lsn")
        .cloned()
        .expect("a slot at the data page's LSN");
    let page = slot["page"].as_u64().unwrap();
    let data = dir.path().join(minnow::inspect::SYSTEM_TABLESPACE);
    let mut bytes = std::fs::read(&data).unwrap();
    bytes[(page * 16384 + 3000) as usize] ^= 0x55;
    std::fs::write(&data, &bytes).unwrap();
    let (code, r) = minnow_json(dir.path(), &["dblwr", s(dir.path())]);
    assert_eq!(code, 0, "a tear recovery repairs is not a problem: {r}");
    assert!(r["would_restore"].as_u64().unwrap() >= 1, "{r}");
    let hit = r["segments"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|seg| seg["slots"].as_array().unwrap().iter())
        .find(|s| s["page"] == page && s["lsn"] == slot["lsn"])
        .unwrap();
    assert_eq!(hit["data"], "data_torn", "{hit}");
    assert_eq!(hit["recovery"], "restore", "{hit}");
}

#[test]
fn dblwr_shows_a_copy_that_fails_its_slot_checksum() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    let (_, r) = minnow_json(dir.path(), &["dblwr", s(dir.path())]);
    let (file, capacity, slot) = r["segments"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|seg| {
            let slot = seg["slots"].as_array()?.first()?;
            assert_eq!(slot["slot_checksum_ok"], true, "{slot}");
            assert!(slot["slot_checksum"].is_u64(), "{slot}");
            Some((
                seg["file"].as_str()?.to_string(),
                seg["capacity"].as_u64()? as usize,
                slot.clone(),
            ))
        })
        .expect("a segment with a used slot");
    // Flip a bit of the copy's flush LSN (offset 26), which the crc32 page checksum skips.
    let at = minnow_dblwr::format::slot_offset(minnow::PageSize::K16, capacity, 0) + 26;
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[at as usize] ^= 0x04;
    std::fs::write(&file, &bytes).unwrap();

    let (code, r) = minnow_json(dir.path(), &["dblwr", s(dir.path())]);
    assert_eq!(code, 1, "a damaged copy is a problem: {r}");
    let hit = r["segments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|seg| seg["file"] == file.as_str())
        .map(|seg| seg["slots"][0].clone())
        .unwrap();
    assert_eq!(hit["page"], slot["page"]);
    assert_eq!(hit["slot_checksum_ok"], false, "{hit}");
    assert_eq!(hit["copy_valid"], false, "{hit}");
    assert_ne!(hit["recovery"], "restore", "{hit}");
    let problem = hit["copy_problem"].as_str().unwrap();
    assert!(problem.contains("slot checksum mismatch"), "{problem}");
    let (code, text) = minnow_text(&["dblwr", s(dir.path())]);
    assert_eq!(code, 1);
    assert!(text.contains(" BAD "), "{text}");
}

#[test]
fn dblwr_garbage_is_reported_not_panicked_on() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    let seg = dir.path().join("dblwr.0");
    let bytes = std::fs::read(&seg).unwrap();
    std::fs::write(&seg, &bytes[..30]).unwrap();
    let (code, r) = minnow_json(dir.path(), &["dblwr", s(dir.path())]);
    assert_eq!(code, 1, "{r}");
    assert_eq!(r["segments"][0]["valid"], false);
    std::fs::write(
        &seg,
        (0..20_000u32)
            .map(|i| (i * 7919 % 251) as u8)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let (code, _) = minnow_json(dir.path(), &["dblwr", s(dir.path())]);
    assert_eq!(code, 1);
    // A valid header whose copies were cut off.
    let keep = 20_000.min(bytes.len());
    std::fs::write(&seg, &bytes[..keep]).unwrap();
    let (code, r) = minnow_json(dir.path(), &["dblwr", s(dir.path())]);
    assert!(code == 0 || code == 1, "{r}");
    // Not a directory.
    let (code, r) = minnow_json(dir.path(), &["dblwr", s(&dir.path().join("nope"))]);
    assert_eq!(code, 2, "{r}");
}

#[test]
fn dblwr_and_log_of_a_crashed_database_do_not_change_it() {
    let dir = tempfile::tempdir().unwrap();
    make_crashed_db(dir.path());
    let (code, r) = minnow_json(dir.path(), &["dblwr", s(dir.path())]);
    assert!(code == 0 || code == 1, "{r}");
    assert!(!r["segments"].as_array().unwrap().is_empty());
    // The tree as far as it reached the data file (the table may be only in the redo log).
    let (code, r) = minnow_json(dir.path(), &["tree", s(dir.path()), "t"]);
    assert!((0..=2).contains(&code), "{r}");
}

// ---- tree ----

/// A closed database whose table `b` holds 40 BLOB values of 20 000 bytes: each is off-page,
/// its leaf record keeping a 20-byte reference to a chain of overflow pages.
fn make_blob_db(dir: &Path) {
    let db = Database::create(dir, Config::default()).unwrap();
    let def = TableDef::new("b")
        .column(ColumnDef::new("id", ColumnType::U32))
        .column(ColumnDef::new("doc", ColumnType::Blob))
        .primary_key(&["id"]);
    let t = db.create_table(def).unwrap();
    for id in 0..40u32 {
        let doc: Vec<u8> = (0..BLOB_LEN as u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13 ^ id) as u8)
            .collect();
        t.insert(&[Value::UInt(u64::from(id)), Value::Bytes(doc)])
            .unwrap();
    }
    drop(t);
    db.close().unwrap();
}

const BLOB_LEN: usize = 20_000;

#[test]
fn tree_of_a_table_with_off_page_blobs_reports_no_problem() {
    let dir = tempfile::tempdir().unwrap();
    make_blob_db(dir.path());
    let (code, r) = minnow_json(dir.path(), &["tree", s(dir.path()), "b"]);
    assert_eq!(code, 0, "off-page BLOBs are normal: {r}");
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["problems"], serde_json::json!([]), "{r}");
    let leaf = r["levels"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(leaf["records"], 40, "{r}");
    assert_eq!(
        (leaf["min_key"].clone(), leaf["max_key"].clone()),
        ("id=0".into(), "id=39".into())
    );
    let (code, text) = minnow_text(&["tree", s(dir.path()), "b"]);
    assert_eq!(code, 0, "{text}");
    assert!(!text.contains("PROBLEM"), "{text}");
    assert_eq!(text.lines().last(), Some("ok"), "{text}");

    // A reference whose first overflow page lies past the end of the file is still a problem.
    // References end with the BLOB header offset (38) and the length (20 000, big-endian u64).
    let data = dir.path().join(minnow::inspect::SYSTEM_TABLESPACE);
    let mut bytes = std::fs::read(&data).unwrap();
    let mut tail = 38u32.to_be_bytes().to_vec();
    tail.extend_from_slice(&(BLOB_LEN as u64).to_be_bytes());
    let at = bytes
        .windows(tail.len())
        .position(|w| w == tail.as_slice())
        .expect("an off-page reference in the data file");
    bytes[at - 4..at].copy_from_slice(&0x00AB_CDEFu32.to_be_bytes());
    let psz = 16384;
    let page = &mut bytes[at / psz * psz..(at / psz + 1) * psz];
    minnow_page::checksum::stamp(page, minnow_page::checksum::ChecksumAlgorithm::Crc32).unwrap();
    std::fs::write(&data, &bytes).unwrap();
    let (code, r) = minnow_json(dir.path(), &["tree", s(dir.path()), "b"]);
    assert_eq!(code, 1, "{r}");
    let problems = r["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{r}");
    let p = problems[0].as_str().unwrap();
    assert!(
        p.contains("points at page 11259375") && p.contains("outside"),
        "{p}"
    );
}

#[test]
fn tree_of_the_primary_key_and_a_secondary_index() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    let (code, r) = minnow_json(dir.path(), &["tree", s(dir.path()), "t"]);
    assert_eq!(code, 0, "{r}");
    assert_eq!(r["index"], "PRIMARY");
    let levels = r["levels"].as_array().unwrap();
    assert!(levels.len() >= 2, "expected a two-level tree: {r}");
    assert_eq!(levels[0]["pages"], 1, "one root");
    let leaf = levels.last().unwrap();
    assert_eq!(leaf["level"], 0);
    assert_eq!(leaf["records"], 2000);
    assert_eq!(leaf["min_key"], "id=0");
    assert_eq!(leaf["max_key"], "id=1999");
    let fill = leaf["avg_fill"].as_f64().unwrap();
    assert!(fill > 0.3 && fill <= 1.0, "{fill}");
    // The root's children are exactly the next level's pages, in order.
    let pages = r["pages"].as_array().unwrap();
    let root_children: Vec<u64> = pages[0]["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .collect();
    let second: Vec<u64> = pages
        .iter()
        .filter(|p| p["level"] == levels[1]["level"])
        .map(|p| p["page"].as_u64().unwrap())
        .collect();
    assert_eq!(root_children, second);

    let (code, r) = minnow_json(dir.path(), &["tree", s(dir.path()), "t", "--index", "by_k"]);
    assert_eq!(code, 0, "{r}");
    assert_eq!(r["key_columns"], serde_json::json!(["k", "id"]));
    let leaf = r["levels"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(leaf["records"], 2000);
    assert_eq!(leaf["min_key"], "k=0,id=0");
    assert_eq!(leaf["max_key"], "k=36,id=1997");

    let (code, text) = minnow_text(&["tree", s(dir.path()), "t"]);
    assert_eq!(code, 0);
    assert!(text.contains("level  0"), "{text}");
}

#[test]
fn inspect_names_the_indexes_from_the_dictionary_beside_the_file() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    let ibdata = dir.path().join(minnow::inspect::SYSTEM_TABLESPACE);
    let (code, r) = minnow_json(dir.path(), &["inspect", s(&ibdata)]);
    assert_eq!(code, 0, "{r}");
    let names: Vec<&str> = r["indexes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(names, ["(dictionary)", "t.PRIMARY", "t.by_k"], "{r}");
    let (code, text) = minnow_text(&["inspect", s(&ibdata)]);
    assert_eq!(code, 0);
    assert!(text.contains(" t.by_k "), "{text}");

    // A copy of the file away from its directory has no dictionary beside it: ids only.
    let away = tempfile::tempdir().unwrap();
    let copy = away.path().join("copy.ibd");
    std::fs::copy(&ibdata, &copy).unwrap();
    let (code, r) = minnow_json(away.path(), &["inspect", s(&copy)]);
    assert_eq!(code, 0, "{r}");
    assert!(
        r["indexes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["name"].is_null()),
        "{r}"
    );
}

#[test]
fn page_decodes_minnow_records_with_the_schema_from_the_dictionary() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    let ibdata = dir.path().join(minnow::inspect::SYSTEM_TABLESPACE);
    let (_, tree) = minnow_json(dir.path(), &["tree", s(dir.path()), "t"]);
    let root = tree["root"].as_u64().unwrap().to_string();
    let pages = tree["pages"].as_array().unwrap();
    let leaf = pages.iter().find(|p| p["level"] == 0).unwrap()["page"]
        .as_u64()
        .unwrap()
        .to_string();

    let (code, r) = minnow_json(dir.path(), &["page", s(&ibdata), &leaf]);
    assert_eq!(code, 0, "{r}");
    let recs = &r["minnow_records"];
    assert_eq!(recs["index"], "t.PRIMARY", "{r}");
    assert_eq!(
        recs["fields"],
        serde_json::json!(["id", "DB_TRX_ID", "DB_ROLL_PTR", "k", "c"])
    );
    let first = &recs["records"][0]["values"];
    let id: u64 = first[0].as_str().unwrap().parse().unwrap();
    assert_eq!(first[3], (id % 37).to_string(), "k of row {id}: {r}");
    assert!(
        first[4]
            .as_str()
            .unwrap()
            .starts_with(&format!("\"row-{id:06}-")),
        "{r}"
    );
    assert!(recs["problems"].as_array().unwrap().is_empty(), "{r}");

    // The root holds node pointers: the key and the child page.
    let (code, r) = minnow_json(dir.path(), &["page", s(&ibdata), &root]);
    assert_eq!(code, 0, "{r}");
    assert_eq!(
        r["minnow_records"]["fields"],
        serde_json::json!(["id", "child page"])
    );
    // Its first pointer stands for every key below the second: InnoDB's MIN_REC flag.
    assert_eq!(r["minnow_records"]["records"][0]["min_rec"], true, "{r}");
    assert_eq!(r["minnow_records"]["records"][1]["min_rec"], false, "{r}");
    let (code, text) = minnow_text(&["page", s(&ibdata), &root]);
    assert_eq!(code, 0);
    assert!(text.contains("records of t.PRIMARY"), "{text}");
    assert!(text.contains("id=0 child page="), "{text}");

    // The dictionary's own root: one record, the table's name and its encoded definition.
    let dict_root = minnow::inspect::DICT_ROOT.to_string();
    let (code, r) = minnow_json(dir.path(), &["page", s(&ibdata), &dict_root]);
    assert_eq!(code, 0, "{r}");
    assert_eq!(r["minnow_records"]["index"], "(dictionary)", "{r}");
    assert_eq!(
        r["minnow_records"]["records"][0]["values"][0], "\"t\"",
        "{r}"
    );
}

#[test]
fn tree_draws_dot_and_svg() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    let out = tempfile::tempdir().unwrap();
    let dot = out.path().join("t.dot");
    let svg = out.path().join("t.svg");
    let (code, r) = minnow_json(
        dir.path(),
        &[
            "tree",
            s(dir.path()),
            "t",
            "--dot",
            s(&dot),
            "--svg",
            s(&svg),
        ],
    );
    assert_eq!(code, 0, "{r}");
    let dot = std::fs::read_to_string(dot).unwrap();
    assert!(dot.starts_with("digraph"), "{dot}");
    assert!(dot.contains("style=dashed"), "sibling links: {dot}");
    let root = r["root"].as_u64().unwrap();
    let child = r["pages"][0]["children"][0].as_u64().unwrap();
    assert!(dot.contains(&format!("p{root} -> p{child};")), "{dot}");
    let svg = std::fs::read_to_string(svg).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(
        svg.matches("<rect").count(),
        2 * r["pages"].as_array().unwrap().len()
    );
}

#[test]
fn tree_refuses_unknown_names_and_large_svgs() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), Config::default()).unwrap();
    let t = db.create_table(def()).unwrap();
    t.insert_many((0..40_000u64).map(|id| row(id).to_vec()))
        .unwrap();
    drop(t);
    db.close().unwrap();
    let (code, r) = minnow_json(dir.path(), &["tree", s(dir.path()), "nope"]);
    assert_eq!(code, 2, "{r}");
    assert!(r["error"].as_str().unwrap().contains("tables: t"), "{r}");
    let (code, r) = minnow_json(dir.path(), &["tree", s(dir.path()), "t", "--index", "zz"]);
    assert_eq!(code, 2, "{r}");
    let svg = dir.path().join("big.svg");
    let out = Command::new(env!("CARGO_BIN_EXE_minnow"))
        .args(["tree", s(dir.path()), "t", "--svg", s(&svg)])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!svg.exists());
}

#[test]
fn tree_reports_a_damaged_page() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    let (_, r) = minnow_json(dir.path(), &["tree", s(dir.path()), "t"]);
    let leaf = r["pages"].as_array().unwrap().last().unwrap()["page"]
        .as_u64()
        .unwrap();
    let data = dir.path().join(minnow::inspect::SYSTEM_TABLESPACE);
    let mut bytes = std::fs::read(&data).unwrap();
    bytes[(leaf * 16384 + 5000) as usize] ^= 0x10;
    std::fs::write(&data, &bytes).unwrap();
    let (code, r) = minnow_json(dir.path(), &["tree", s(dir.path()), "t"]);
    assert_eq!(code, 1, "{r}");
    assert!(
        r["problems"][0]
            .as_str()
            .unwrap()
            .contains(&leaf.to_string()),
        "{r}"
    );
    // Random bytes for a tablespace: an error, not a panic.
    std::fs::write(&data, vec![0xA5u8; 100_000]).unwrap();
    let (code, _) = minnow_json(dir.path(), &["tree", s(dir.path()), "t"]);
    assert!(code == 1 || code == 2);
}

// ---- a live database ----

#[test]
fn every_command_reads_a_live_database_without_disturbing_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), Config::default()).unwrap();
    let t = db.create_table(def()).unwrap();
    for id in 0..1500u64 {
        t.insert(&row(id)).unwrap();
    }
    // What the commands read is what reached the data file: flush, but keep the database open.
    db.buffer_pool().unwrap().flush_all().unwrap();
    for args in [
        vec!["--json", "log", s(dir.path())],
        vec!["--json", "dblwr", s(dir.path())],
        vec!["--json", "tree", s(dir.path()), "t"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_minnow"))
            .args(&args)
            .output()
            .unwrap();
        let code = out.status.code().unwrap_or(-1);
        // Pages in flight may look torn to a reader that takes no latch: 0 or 1, never 2.
        assert!(code == 0 || code == 1, "{args:?}: exit {code}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{stderr}");
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap();
    }
    // The database goes on as if nothing happened.
    for id in 1500..2000u64 {
        t.insert(&row(id)).unwrap();
    }
    drop(t);
    db.close().unwrap();
    let db = Database::open(dir.path(), Config::default()).unwrap();
    assert_eq!(db.open_report().redo_groups, 0);
    assert_eq!(db.check().unwrap().rows["t"], 2000);
    db.close().unwrap();
}
