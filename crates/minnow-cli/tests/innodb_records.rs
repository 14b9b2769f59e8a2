//! `minnow page --columns` on the MariaDB fixtures: every row of every leaf of the clustered
//! index decodes, and the rows give the server's own content checksum
//! (`SUM(CRC32(CONCAT_WS('|', ...)))`, fixtures/innodb/README.md).

mod common;

use std::path::Path;

use common::{mariadb, minnow};
use serde_json::Value;

const NORMAL: &str = "id:int unsigned,name:varchar(64),email:varchar(64),password:varchar(64),\
    dob:date,address:varchar(128),city:varchar(64),state_id:tinyint unsigned,zip:varchar(8),\
    country_id:smallint unsigned";
const SBTEST: &str = "id:int not null, k:int not null, c:char(120) not null, pad:char(60) not null";

fn page(file: &Path, n: u64, extra: &[&str]) -> Value {
    let n = n.to_string();
    let mut args = vec!["page", file.to_str().unwrap(), n.as_str(), "--json"];
    args.extend_from_slice(extra);
    let run = minnow(&args);
    assert_eq!(run.code, 0, "page {n}: {}{}", run.stdout, run.stderr);
    run.json()
}

/// Every user record of one index level, walking from `root` down the leftmost child pointers
/// and then along the leaf level's next pointers.
fn leaf_records(file: &Path, root: u64, extra: &[&str]) -> Vec<Value> {
    let mut n = root;
    loop {
        let p = page(file, n, extra);
        if p["index"]["level"] == 0 {
            break;
        }
        let first = &p["records"]["records"][0];
        assert_eq!(
            first["min_rec"], true,
            "the leftmost node pointer is MIN_REC"
        );
        let child = first["fields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == "child_page")
            .unwrap();
        n = child["value"].as_str().unwrap().parse().unwrap();
    }
    let mut out = Vec::new();
    loop {
        let p = page(file, n, extra);
        assert!(
            p["records"]["problems"].as_array().unwrap().is_empty(),
            "{p}"
        );
        out.extend(p["records"]["records"].as_array().unwrap().iter().cloned());
        let next = p["fil"]["next"].as_u64().unwrap();
        if next == 0xFFFF_FFFF {
            return out;
        }
        n = next;
    }
}

fn field<'a>(rec: &'a Value, name: &str) -> &'a str {
    rec["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("{name} in {rec}"))["value"]
        .as_str()
        .unwrap()
}

/// MySQL's `SUM(CRC32(CONCAT_WS('|', cols...)))` over decoded rows (CHAR values lose their
/// trailing spaces, as MySQL returns them).
fn content_sum(rows: &[Value], cols: &[&str]) -> u64 {
    rows.iter()
        .map(|r| {
            let line: Vec<&str> = cols
                .iter()
                .map(|c| field(r, c).trim_end_matches(' '))
                .collect();
            u64::from(crc32fast::hash(line.join("|").as_bytes()))
        })
        .sum()
}

#[test]
fn normal_compact_rows_match_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let file = mariadb(dir.path(), "normal_compact");
    let rows = leaf_records(&file, 3, &["--columns", NORMAL]);
    assert_eq!(rows.len(), 20000);
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(field(r, "id"), (i + 1).to_string());
        assert_eq!(r["deleted"], false);
        assert_eq!(r["status"], "leaf");
        assert!(r["trx_id"].as_u64().unwrap() > 0, "{r}");
        assert_eq!(r["roll_ptr"]["insert"], true, "{r}");
    }
    let r1 = &rows[0];
    assert_eq!(field(r1, "email"), "user1@example.com");
    assert_eq!(field(r1, "dob"), "1961-09-06");
    assert_eq!(field(r1, "city"), "City013");
    let cols = [
        "id",
        "name",
        "email",
        "password",
        "dob",
        "address",
        "city",
        "state_id",
        "zip",
        "country_id",
    ];
    assert_eq!(content_sum(&rows, &cols), 42_935_618_492_927);
}

#[test]
fn sbtest1_dynamic_rows_and_secondary_index() {
    let dir = tempfile::tempdir().unwrap();
    let file = mariadb(dir.path(), "sbtest1");
    let rows = leaf_records(&file, 3, &["--columns", SBTEST]);
    assert_eq!(rows.len(), 10000);
    assert_eq!(
        content_sum(&rows, &["id", "k", "c", "pad"]),
        21_633_753_697_785
    );
    // k_1 (root 36): entries (k, id), in key order, one per row, agreeing with the rows.
    let entries = leaf_records(&file, 36, &["--columns", SBTEST, "--key", "k"]);
    assert_eq!(entries.len(), 10000);
    let keys: Vec<(i64, i64)> = entries
        .iter()
        .map(|e| {
            (
                field(e, "k").parse().unwrap(),
                field(e, "id").parse().unwrap(),
            )
        })
        .collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "sorted by (k, id)");
    assert!(
        entries.iter().all(|e| e["trx_id"].is_null()),
        "no system columns"
    );
    let mut from_rows: Vec<(i64, i64)> = rows
        .iter()
        .map(|r| {
            (
                field(r, "k").parse().unwrap(),
                field(r, "id").parse().unwrap(),
            )
        })
        .collect();
    from_rows.sort();
    assert_eq!(keys, from_rows);
}

#[test]
fn bad_schemas_and_pages() {
    let dir = tempfile::tempdir().unwrap();
    let file = mariadb(dir.path(), "sbtest1");
    let f = file.to_str().unwrap();
    // An unsupported type is a usage error.
    let run = minnow(["page", f, "3", "--columns", "id:decimal(5)"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("unsupported type"), "{}", run.stderr);
    // Not an INDEX page: a problem, exit 1.
    let run = minnow(["page", f, "0", "--json", "--columns", SBTEST]);
    assert_eq!(run.code, 1);
    assert!(
        run.json()["records"]["problems"][0]
            .as_str()
            .unwrap()
            .contains("not an INDEX page")
    );
    // A wrong schema (too many fixed bytes) never panics: the record is reported, exit 1.
    let run = minnow([
        "page",
        f,
        "4",
        "--json",
        "--columns",
        "id:int not null, c:char(200), d:char(200), e:char(200), g:char(200)",
    ]);
    assert!(run.code == 0 || run.code == 1, "{}", run.stderr);
    let j = run.json();
    assert!(j["records"].is_object(), "{j}");
    // The schema from a file, with comments and one column per line.
    let schema = dir.path().join("sbtest1.schema");
    std::fs::write(
        &schema,
        "# sysbench's sbtest1\nid:int not null\nk:int not null\nc:char(120) not null\npad:char(60) not null\n",
    )
    .unwrap();
    let j = page(&file, 4, &["--schema", schema.to_str().unwrap()]);
    assert_eq!(field(&j["records"]["records"][0], "id"), "1");
    // MySQL 5.0 already wrote COMPACT records: sakila's actor table decodes.
    let old = common::mysql("5.0/actor.ibd");
    let j = page(
        &old,
        3,
        &[
            "--columns",
            "actor_id:smallint unsigned,first_name:varchar(45) not null,\
             last_name:varchar(45) not null,last_update:binary(4) not null",
        ],
    );
    let first = &j["records"]["records"][0];
    assert_eq!(field(first, "first_name"), "PENELOPE");
    assert_eq!(field(first, "last_name"), "GUINESS");
    assert_eq!(j["records"]["records"].as_array().unwrap().len(), 200);
}
