//! `minnow page` on minnow's TRX_SYS page, rollback segment header pages and undo pages: a
//! database (one rollback segment, so that every log is on one stream) with committed
//! transactions, purged and unpurged history, a record that spans undo pages and a
//! transaction left open; then garbage. Every run must leave the files byte-identical and
//! nothing may panic.

mod common;

use std::path::Path;

use common::{Rng, minnow, mysql, snapshot};
use minnow::inspect::Internals;
use minnow::{ColumnDef, ColumnType, Config, Database, TableDef, Value};
use minnow_page::checksum::{ChecksumAlgorithm, stamp};
use serde_json::Value as Json;

fn config() -> Config {
    Config {
        // Nothing is purged behind the test's back.
        purge_threads: 0,
        rollback_segments: 1,
        buffer_pool_dump_at_shutdown: false,
        ..Config::default()
    }
}

fn def() -> TableDef {
    TableDef::new("t")
        .column(ColumnDef::new("id", ColumnType::U32))
        .column(ColumnDef::new("doc", ColumnType::Blob))
        .primary_key(&["id"])
}

fn row(id: u64, doc: &[u8]) -> Vec<Value> {
    vec![Value::UInt(id), Value::Bytes(doc.to_vec())]
}

/// Rows 1..=3 committed; row 1 updated with a 40 000-byte document (whose next update's undo
/// record spans undo pages); row 2 deleted; then a transaction updating row 3 left open after
/// its pages were written. Returns the open transaction's id.
fn make_db(dir: &Path) -> u64 {
    let db = Database::create(dir, config()).unwrap();
    let t = db.create_table(def()).unwrap();
    for id in 1..=3 {
        t.insert(&row(id, b"small")).unwrap();
    }
    t.update(&row(1, &[b'x'; 40_000])).unwrap();
    t.update(&row(1, b"short again")).unwrap();
    t.delete(&[Value::UInt(2)]).unwrap();
    let mut tx = db.begin().unwrap();
    tx.update(&t, &row(3, b"pending")).unwrap();
    let writer = tx.id();
    db.buffer_pool().unwrap().flush_all().unwrap();
    std::mem::forget(tx);
    drop(t);
    db.close().unwrap();
    writer
}

/// `minnow --json page FILE N`: (exit code, report); checks nothing panicked.
fn page(file: &Path, n: u32) -> (i32, Json) {
    let run = minnow(["--json", "page", file.to_str().unwrap(), &n.to_string()]);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    (run.code, run.json())
}

/// The page number of rollback segment 0's header, as `minnow page` shows the TRX_SYS page.
fn rseg0(file: &Path) -> u32 {
    let (code, j) = page(file, 3);
    assert_eq!(code, 0, "{j}");
    let rsegs = j["trx_sys"]["rseg_pages"].as_array().unwrap();
    assert_eq!(rsegs.len(), 1, "{j}");
    rsegs[0].as_u64().unwrap() as u32
}

#[test]
fn trx_sys_and_every_undo_page_of_a_database_with_an_open_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let writer = make_db(dir.path());
    let before = snapshot(dir.path());
    let ibdata = dir.path().join("ibdata1");

    let (code, j) = page(&ibdata, 3);
    assert_eq!(code, 0, "{j}");
    assert_eq!(j["trx_sys"]["format"], 3);
    assert!(j["trx_sys"]["trx_id_mark"].as_u64().unwrap() > writer);
    assert_eq!(j["problems"], serde_json::json!([]));
    // The stream, history list and slots are on the rollback segment's header page.
    let header = rseg0(&ibdata);
    let (code, j) = page(&ibdata, header);
    assert_eq!(code, 0, "{j}");
    let sys = &j["rseg"];
    assert_eq!(sys["id"], 0);
    assert_eq!(j["problems"], serde_json::json!([]));
    // One used slot: the open transaction's log, active.
    let slots = sys["slots"].as_array().unwrap();
    assert_eq!(slots.len(), 1, "{sys}");
    assert_eq!(slots[0]["header"]["state"], "active");
    assert_eq!(slots[0]["header"]["trx_id"].as_u64(), Some(writer));
    assert_eq!(slots[0]["header"]["log_type"], "update");

    // Walk the chain FIRST..LAST page by page through the command's own output.
    let mut next = sys["first_page"].as_u64().unwrap() as u32;
    let mut pages = Vec::new();
    let mut headers = Vec::new();
    let mut records = Vec::new();
    let mut spanning = 0;
    while next != 0 {
        let (code, p) = page(&ibdata, next);
        assert_eq!(code, 0, "{p}");
        let u = &p["undo"];
        assert_eq!(u["position"].as_u64(), Some(pages.len() as u64), "{u}");
        // The stretches tile the page's used bytes.
        let mut at = if pages.is_empty() {
            sys["head"].as_u64().unwrap()
        } else {
            44
        };
        for e in u["entries"].as_array().unwrap() {
            if e["kind"] == "dead" {
                continue;
            }
            assert_eq!(e["start"].as_u64(), Some(at), "{e}");
            at = e["end"].as_u64().unwrap();
            match e["kind"].as_str().unwrap() {
                "header" => headers.push((e["entry"].clone(), e["header"].clone())),
                "record" => {
                    if !e["continues"].is_null() {
                        spanning += 1;
                        assert_eq!(e["continues"], u["next"]);
                    }
                    records.push(e["record"].clone());
                }
                "rest" => assert_eq!(e["rest_of"], "record"),
                other => panic!("unexpected entry {other}: {e}"),
            }
        }
        assert_eq!(Some(at), u["free"].as_u64(), "page {next}");
        pages.push(next);
        next = u["next"].as_u64().unwrap() as u32;
    }
    assert_eq!(
        pages.last().map(|&p| u64::from(p)),
        sys["last_page"].as_u64()
    );
    assert_eq!(pages.len() as u64, sys["n_pages"].as_u64().unwrap());
    assert_eq!(spanning, 1, "the 40 000-byte old version spans pages");
    // The slot's header is where the walk found the active log.
    let active: Vec<_> = headers
        .iter()
        .filter(|(_, h)| h["state"] == "active")
        .collect();
    assert_eq!(active.len(), 1);
    assert_eq!(active[0].0, slots[0]["header_at"]);
    // The history list: committed update logs, chained from TRX_SYS's first to its last.
    let hist: Vec<_> = headers
        .iter()
        .filter(|(_, h)| h["state"] == "committed" && h["log_type"] == "update")
        .collect();
    assert_eq!(hist.len() as u64, sys["history_len"].as_u64().unwrap());
    assert_eq!(hist.len(), 3, "two updates and a delete");
    assert_eq!(hist[0].0, sys["history_first"]);
    assert_eq!(hist[2].0, sys["history_last"]);
    assert_eq!(hist[0].1["history_next"], hist[1].0);
    // Records: three inserts, two updates and a delete-mark committed, one open update.
    let kinds: Vec<&str> = records
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "insert",
            "insert",
            "insert",
            "update",
            "update",
            "delete_mark",
            "update"
        ]
    );
    // The spanning record holds row 1's 40 000-byte version: key 1, then the document.
    let big = &records[4];
    assert_eq!(big["fields"][0]["hex"], "00000001");
    assert_eq!(big["fields"][1]["len"], 40_000);
    assert_eq!(big["fields"][1]["truncated"], true);
    assert!(records[6]["old_trx_id"].as_u64().unwrap() < writer);

    // Text output says the same.
    let run = minnow(["page", ibdata.to_str().unwrap(), "3"]);
    assert_eq!(run.code, 0);
    assert!(
        run.stdout.contains("TRX_SYS (minnow format 3"),
        "{}",
        run.stdout
    );
    let run = minnow(["page", ibdata.to_str().unwrap(), &header.to_string()]);
    assert_eq!(run.code, 0);
    assert!(
        run.stdout
            .contains(&format!("trx {writer} active, update log, 1 record")),
        "{}",
        run.stdout
    );
    let run = minnow(["page", ibdata.to_str().unwrap(), &pages[1].to_string()]);
    assert_eq!(run.code, 0);
    assert!(
        run.stdout.contains("the rest of the record at"),
        "{}",
        run.stdout
    );

    assert!(
        snapshot(dir.path()) == before,
        "minnow page changed the files"
    );
}

#[test]
fn an_undo_page_off_the_stream_is_not_walked_and_innodb_layouts_are_not_guessed() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    // Purge everything and trim: the head pages go back to the undo segment.
    let db = Database::open(dir.path(), config()).unwrap();
    let report = db.purge().unwrap();
    assert!(report.undo_pages_freed > 0, "{report:?}");
    db.close().unwrap();
    let ibdata = dir.path().join("ibdata1");
    let header = rseg0(&ibdata);
    let (_, sys) = page(&ibdata, header);
    let mut chain = Vec::new();
    let mut next = sys["rseg"]["first_page"].as_u64().unwrap() as u32;
    while next != 0 {
        chain.push(next);
        next = page(&ibdata, next).1["undo"]["next"].as_u64().unwrap() as u32;
    }
    // Freeing an undo page retypes it, so make one look like a stale undo page: an empty
    // UNDO_LOG page that is not on the chain.
    let n_pages = (std::fs::metadata(&ibdata).unwrap().len() / 16384) as usize;
    let stale = (4..n_pages)
        .find(|&n| {
            n as u32 != header
                && !chain.contains(&(n as u32))
                && page(&ibdata, n as u32).1["fil"]["page_type"] != 17855
        })
        .expect("a page off the chain");
    let mut bytes = std::fs::read(&ibdata).unwrap();
    let p = &mut bytes[stale * 16384..(stale + 1) * 16384];
    p[24..26].copy_from_slice(&2u16.to_be_bytes());
    p[38..44].copy_from_slice(&[0, 0, 0, 0, 0, 44]);
    stamp(p, ChecksumAlgorithm::Crc32).unwrap();
    std::fs::write(&ibdata, &bytes).unwrap();
    let (code, j) = page(&ibdata, stale as u32);
    assert_eq!(code, 0, "{j}");
    assert!(j["undo"]["position"].is_null(), "{j}");
    assert_eq!(j["undo"]["entries"], serde_json::json!([]));
    let run = minnow(["page", ibdata.to_str().unwrap(), &stale.to_string()]);
    assert!(
        run.stdout
            .contains("undo stream: on no rollback segment's stream"),
        "{}",
        run.stdout
    );

    // An InnoDB page retyped as TRX_SYS and as UNDO_LOG: said to be not decoded, exit 0.
    let mut bytes = std::fs::read(mysql("5.7/actor.ibd")).unwrap();
    for ty in [7u16, 2] {
        bytes[3 * 16384 + 24..3 * 16384 + 26].copy_from_slice(&ty.to_be_bytes());
        stamp(&mut bytes[3 * 16384..4 * 16384], ChecksumAlgorithm::Crc32).unwrap();
        let f = dir.path().join("retyped.ibd");
        std::fs::write(&f, &bytes).unwrap();
        let (code, j) = page(&f, 3);
        assert_eq!(code, 0, "{j}");
        assert!(j["trx_sys"].is_null() && j["undo"].is_null());
        assert!(
            j["not_decoded"].as_str().unwrap().contains("not decoded"),
            "{j}"
        );
    }
}

#[test]
fn garbage_in_trx_sys_and_undo_pages_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    let ibdata = dir.path().join("ibdata1");
    let clean = std::fs::read(&ibdata).unwrap();
    let header = rseg0(&ibdata) as usize;
    let (_, sys) = page(&ibdata, header as u32);
    let first = sys["rseg"]["first_page"].as_u64().unwrap() as usize;
    let last = sys["rseg"]["last_page"].as_u64().unwrap() as usize;
    let size = 16384;
    let f = dir.path().join("damaged");
    std::fs::create_dir(&f).unwrap();
    let f = f.join("ibdata1");
    let mut rng = Rng(0x0005_EED0_F0DD_u64);
    let mut found = 0;
    for round in 0..40 {
        let mut bytes = clean.clone();
        // Damage TRX_SYS's fields, the rollback segment header's, or an undo page's header
        // and entries, checksums restamped so the decoders see the garbage.
        let target = [3, header, first, last][round % 4];
        let region = if target == 3 || target == header {
            38..140
        } else {
            38..800
        };
        for _ in 0..1 + rng.below(4) {
            let at = target * size + region.start + rng.below(region.len() as u64) as usize;
            bytes[at] ^= 1 << rng.below(8);
        }
        stamp(
            &mut bytes[target * size..(target + 1) * size],
            ChecksumAlgorithm::Crc32,
        )
        .unwrap();
        std::fs::write(&f, &bytes).unwrap();
        for n in [3, header, first, last] {
            let run = minnow(["--json", "page", f.to_str().unwrap(), &n.to_string()]);
            assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
            assert!(run.code == 0 || run.code == 1, "{}", run.stderr);
            let j = run.json();
            // A problem found is exit 1; none, exit 0.
            let problems = !j["problems"].as_array().unwrap().is_empty();
            assert_eq!(run.code == 1, problems, "{j}");
            found += usize::from(problems);
            let run = minnow(["page", f.to_str().unwrap(), &n.to_string()]);
            assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
        }
    }
    assert!(found > 10, "only {found} damaged pages reported");
    // A precise one: HEAD past the page's data area, named with the header page.
    let mut bytes = clean.clone();
    let h = header * size;
    bytes[h + 68..h + 70].copy_from_slice(&0xFFFFu16.to_be_bytes());
    stamp(&mut bytes[h..h + size], ChecksumAlgorithm::Crc32).unwrap();
    std::fs::write(&f, &bytes).unwrap();
    let (code, j) = page(&f, header as u32);
    assert_eq!(code, 1, "{j}");
    let p = j["problems"][0].as_str().unwrap();
    assert!(p.contains(&format!("page 0:{header} ")), "{p}");
    assert!(p.contains("HEAD @68 is 65535"), "{p}");
}
