//! `tree`, `history` and `status` on a database with a compressed table: the table's trees
//! are read from its shared compressed tablespace (`zip4k_zlib-6.ibd`), not from `ibdata1`,
//! and the reports say so; an uncompressed table beside it is still read from `ibdata1`.
//! Every run must leave the files byte-identical.

mod common;

use common::{json_in as json_of, minnow_in as minnow};

use std::path::Path;

use minnow::{
    ColumnDef, ColumnType, Compression, Database, IndexDef, KeyBlockSize, TableDef, Value,
};

/// Rows in each table.
const ROWS: u64 = 600;

fn compression() -> Compression {
    Compression::zlib(KeyBlockSize::K4, 6).unwrap()
}

fn def(name: &str, compressed: bool) -> TableDef {
    let d = TableDef::new(name)
        .column(ColumnDef::new("id", ColumnType::U64))
        .column(ColumnDef::new("tag", ColumnType::Var(20)))
        .column(ColumnDef::new("note", ColumnType::Var(300)))
        .column(ColumnDef::new("balance", ColumnType::I64))
        .primary_key(&["id"])
        .index(IndexDef::new("by_tag", &["tag"]));
    if compressed {
        d.compressed(compression())
    } else {
        d
    }
}

fn row(id: u64, note: &str, balance: i64) -> Vec<Value> {
    vec![
        Value::UInt(id),
        Value::text(&format!("tag{}", id % 17)),
        Value::text(note),
        Value::Int(balance),
    ]
}

/// `zipped` (compressed, KEY_BLOCK_SIZE=4 zlib-6) and `plain`, [`ROWS`] rows each (trees of
/// more than one level); row 7 of `zipped` updated twice; closed cleanly.
fn make_db(dir: &Path) {
    let db = Database::create(dir, common::config_without_purge()).unwrap();
    let zipped = db.create_table(def("zipped", true)).unwrap();
    let plain = db.create_table(def("plain", false)).unwrap();
    for id in 0..ROWS {
        let note = format!("{id:04} the quick brown fox jumps over the lazy dog {id}");
        zipped.insert(&row(id, &note, 100)).unwrap();
        plain.insert(&row(id, &note, 100)).unwrap();
    }
    zipped.update(&row(7, "second", 90)).unwrap();
    zipped.update(&row(7, "third", 80)).unwrap();
    drop((zipped, plain));
    db.close().unwrap();
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Records on the leaf level of a `tree --json` report.
fn leaf_records(j: &serde_json::Value) -> u64 {
    let levels = j["levels"].as_array().unwrap();
    let leaf = levels.last().unwrap();
    assert_eq!(leaf["level"], 0, "{j}");
    leaf["records"].as_u64().unwrap()
}

#[test]
fn tree_reads_a_compressed_tables_indexes_from_its_zip_file() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    let d = s(dir.path());
    assert!(dir.path().join("zip4k_zlib-6.ibd").exists());

    for index in ["PRIMARY", "by_tag"] {
        let (code, j) = json_of(dir.path(), &["tree", d, "zipped", "--index", index]);
        assert_eq!(code, 0, "{j}");
        assert_eq!(j["ok"], true, "{j}");
        assert_eq!(j["compression"]["file"], "zip4k_zlib-6.ibd", "{j}");
        assert_eq!(j["compression"]["key_block_size"], 4);
        assert_eq!(j["compression"]["algorithm"], "zlib-6");
        assert_eq!(
            j["compression"]["space_id"].as_u64(),
            Some(u64::from(compression().space_id()))
        );
        assert_eq!(leaf_records(&j), ROWS, "{index}: {j}");
        if index == "PRIMARY" {
            assert!(j["levels"].as_array().unwrap().len() >= 2, "{j}");
        }
    }

    let (code, text) = minnow(dir.path(), false, &["tree", d, "zipped"]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("compressed: KEY_BLOCK_SIZE=4, zlib-6, in zip4k_zlib-6.ibd"),
        "{text}"
    );
    assert!(text.contains(&format!("{ROWS} records")), "{text}");
    assert!(text.trim_end().ends_with("ok"), "{text}");

    // The uncompressed table beside it is still read from ibdata1.
    let (code, j) = json_of(dir.path(), &["tree", d, "plain"]);
    assert_eq!(code, 0, "{j}");
    assert!(j["compression"].is_null(), "{j}");
    assert_eq!(leaf_records(&j), ROWS);
    let (_, text) = minnow(dir.path(), false, &["tree", d, "plain"]);
    assert!(!text.contains("compressed"), "{text}");
}

#[test]
fn history_follows_a_compressed_rows_chain() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    let d = s(dir.path());
    let (code, j) = json_of(dir.path(), &["history", d, "zipped", "7"]);
    assert_eq!(code, 0, "{j}");
    assert_eq!(j["found"], true);
    assert_eq!(j["compression"]["file"], "zip4k_zlib-6.ibd", "{j}");
    let versions = j["versions"].as_array().unwrap();
    let shape: Vec<(i64, &str)> = versions
        .iter()
        .map(|v| {
            (
                v["values"]["balance"].as_i64().unwrap(),
                v["undo"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(shape, [(80, "update"), (90, "update"), (100, "insert")]);
    assert_eq!(versions[0]["values"]["note"], "third");
    assert_eq!(versions[1]["values"]["note"], "second");
    assert_eq!(j["end"]["reason"], "inserted");

    let (code, text) = minnow(dir.path(), false, &["history", d, "zipped", "7"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("in zip4k_zlib-6.ibd"), "{text}");
    assert!(text.contains("3 version(s)"), "{text}");

    // A row of the compressed table that was never updated, and one that does not exist.
    let (code, j) = json_of(dir.path(), &["history", d, "zipped", "599"]);
    assert_eq!(code, 0, "{j}");
    assert_eq!(j["versions"].as_array().unwrap().len(), 1);
    let (code, j) = json_of(dir.path(), &["history", d, "zipped", "600"]);
    assert_eq!(code, 1, "{j}");
    assert_eq!(j["found"], false);

    // The uncompressed table: no compression in the report.
    let (code, j) = json_of(dir.path(), &["history", d, "plain", "7"]);
    assert_eq!(code, 0, "{j}");
    assert!(j["compression"].is_null(), "{j}");
}

#[test]
fn status_at_rest_lists_the_compressed_tablespace() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    let d = s(dir.path());
    let (code, j) = json_of(dir.path(), &["status", d]);
    assert_eq!(code, 0, "{j}");
    let zips = j["stopped"]["compressed_tablespaces"].as_array().unwrap();
    assert_eq!(zips.len(), 1, "{j}");
    let z = &zips[0];
    assert!(
        z["file"].as_str().unwrap().ends_with("zip4k_zlib-6.ibd"),
        "{z}"
    );
    assert_eq!(z["key_block_size"], 4);
    assert_eq!(z["algorithm"], "zlib-6");
    assert_eq!(z["page_size"], 16384);
    let len = std::fs::metadata(dir.path().join("zip4k_zlib-6.ibd"))
        .unwrap()
        .len();
    assert_eq!(z["bytes"].as_u64(), Some(len));
    assert_eq!(z["pages"].as_u64(), Some(len / 4096));
    let (code, text) = minnow(dir.path(), false, &["status", d]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("zip4k_zlib-6.ibd"), "{text}");
    assert!(text.contains("KEY_BLOCK_SIZE=4, zlib-6"), "{text}");
}

#[test]
fn a_missing_or_damaged_zip_file_is_a_typed_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    let d = s(dir.path());
    let zip = dir.path().join("zip4k_zlib-6.ibd");
    let saved = std::fs::read(&zip).unwrap();

    // Not a compressed tablespace: an error naming the table and the file, exit 2.
    std::fs::write(&zip, vec![0u8; saved.len()]).unwrap();
    for args in [vec!["tree", d, "zipped"], vec!["history", d, "zipped", "7"]] {
        let (code, j) = json_of(dir.path(), &args);
        assert_eq!(code, 2, "{args:?}: {j}");
        let e = j["error"].as_str().unwrap();
        assert!(
            e.contains("zipped") && e.contains("zip4k_zlib-6.ibd"),
            "{e}"
        );
    }
    // Gone: the same.
    std::fs::remove_file(&zip).unwrap();
    let (code, j) = json_of(dir.path(), &["tree", d, "zipped"]);
    assert_eq!(code, 2, "{j}");
    assert!(
        j["error"].as_str().unwrap().contains("zip4k_zlib-6.ibd"),
        "{j}"
    );
    // The uncompressed table still reads.
    let (code, _) = json_of(dir.path(), &["tree", d, "plain"]);
    assert_eq!(code, 0);
}
