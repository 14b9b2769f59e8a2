//! The inspector against real InnoDB and MariaDB tablespaces (fixtures/innodb*/README.md).

mod common;

use common::{mariadb, minnow, mysql, mysql_fixtures};
use serde_json::Value;

fn index(report: &Value, id: u64) -> &Value {
    report["indexes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["index_id"] == id)
        .unwrap_or_else(|| panic!("no index {id} in {report:#}"))
}

#[test]
fn every_mysql_fixture_verifies_with_the_algorithm_that_wrote_it() {
    for (path, algo) in mysql_fixtures() {
        let run = minnow(["--json".as_ref(), "verify".as_ref(), path.as_os_str()]);
        assert_eq!(
            run.code,
            0,
            "{}: {}{}",
            path.display(),
            run.stdout,
            run.stderr
        );
        let file = &run.json()["files"][0];
        assert_eq!(file["status"], "ok");
        let summary = &file["summary"];
        assert_eq!(summary["corrupt"], 0);
        let by = summary["by_algorithm"].as_object().unwrap();
        assert_eq!(by.len(), 1, "{}: {by:?}", path.display());
        assert_eq!(by[algo], summary["valid"], "{}", path.display());
        assert!(summary["valid"].as_u64().unwrap() > 0);
    }
}

#[test]
fn mysql_5_0_files_need_the_legacy_checksum() {
    let actor = mysql("5.0/actor.ibd");
    let run = minnow([
        "--json",
        "verify",
        "--checksum",
        "innodb",
        actor.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0);
    assert_eq!(
        run.json()["files"][0]["summary"]["by_algorithm"]["innodb"],
        5
    );
    // MariaDB's strict_crc32 accepts only crc32: every written 5.0 page fails.
    let run = minnow([
        "verify",
        "--checksum",
        "strict_crc32",
        actor.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.contains("5 corrupt"), "{}", run.stdout);
    // And the other way round for a crc32 file.
    let run = minnow([
        "verify",
        "--checksum",
        "strict_innodb",
        mysql("5.7/actor.ibd").to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1, "{}", run.stdout);
}

#[test]
fn mariadb_fixtures_verify_with_crc32_and_full_crc32() {
    let dir = tempfile::tempdir().unwrap();
    let nc = mariadb(dir.path(), "normal_compact");
    let sb = mariadb(dir.path(), "sbtest1");
    let run = minnow([
        "--json".as_ref(),
        "verify".as_ref(),
        nc.as_os_str(),
        sb.as_os_str(),
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let report = run.json();
    assert_eq!(report["ok"], true);
    let nc = &report["files"][0];
    assert_eq!(nc["fsp_flags"], 0);
    assert_eq!(nc["policy"], "crc32");
    assert_eq!(nc["summary"]["pages"], 832);
    assert_eq!(nc["summary"]["valid"], 288);
    assert_eq!(nc["summary"]["empty"], 544);
    assert_eq!(nc["summary"]["by_algorithm"]["crc32"], 288);
    let sb = &report["files"][1];
    assert_eq!(sb["fsp_flags"], 0x15);
    // The default crc32 setting meets a full_crc32 tablespace with full_crc32 rules.
    assert_eq!(sb["policy"], "full_crc32");
    assert_eq!(sb["summary"]["pages"], 640);
    assert_eq!(sb["summary"]["valid"], 152);
    assert_eq!(sb["summary"]["by_algorithm"]["full_crc32"], 152);

    let run = minnow(["verify", dir.path().join("sbtest1.ibd").to_str().unwrap()]);
    assert_eq!(run.code, 0);
    assert!(
        run.stdout
            .contains("OK: 640 pages: 152 valid (full_crc32 152), 488 empty, 0 corrupt"),
        "{}",
        run.stdout
    );
}

#[test]
fn inspect_normal_compact_matches_the_readme() {
    let dir = tempfile::tempdir().unwrap();
    let nc = mariadb(dir.path(), "normal_compact");
    let run = minnow(["--json".as_ref(), "inspect".as_ref(), nc.as_os_str()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["page_size"], 16384);
    assert_eq!(r["file_pages"], 832);
    assert_eq!(r["fsp"]["size_pages"], 832);
    assert_eq!(r["fsp"]["space_id"], 5);
    assert_eq!(r["fsp"]["flags"]["raw"], 0);
    assert_eq!(r["checksums"]["valid"], 288);
    assert_eq!(r["checksums"]["empty"], 544);
    assert_eq!(r["checksums"]["corrupt"], 0);
    let lsn = &r["lsn"];
    assert!(lsn["min"].as_u64().unwrap() > 0);
    assert!(lsn["min"].as_u64().unwrap() <= lsn["max"].as_u64().unwrap());
    // PRIMARY (23, root 3), email (24, root 4), country_id (25, root 5); pages / leaves
    // 188/187, 64/63, 33/32; every tree has height 2.
    for (id, pages, leaves, root) in [(23, 188, 187, 3), (24, 64, 63, 4), (25, 33, 32, 5)] {
        let i = index(&r, id);
        assert_eq!(i["pages"], pages, "index {id}");
        assert_eq!(i["leaves"], leaves, "index {id}");
        assert_eq!(i["non_leaf"], pages - leaves, "index {id}");
        assert_eq!(i["height"], 2, "index {id}");
        assert_eq!(i["root_page"], root, "index {id}");
        assert_eq!(i["leaf_records"], 20000, "index {id}");
    }
    assert_eq!(r["indexes"].as_array().unwrap().len(), 3);
    let types: Vec<(String, u64)> = r["page_types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                t["pages"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(types.contains(&("INDEX".to_string(), 285)), "{types:?}");
    assert!(types.contains(&("FSP_HDR".to_string(), 1)), "{types:?}");
    // The map: 13 lines of 64 pages; page 0 FSP_HDR, 1 IBUF_BITMAP, 2 INODE, 3.. INDEX.
    let lines = r["map"]["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 13);
    assert!(lines[0].as_str().unwrap().starts_with("FBNIII"));
    assert!(lines.iter().all(|l| l.as_str().unwrap().len() == 64));

    let text = minnow(["inspect".as_ref(), nc.as_os_str()]);
    assert_eq!(text.code, 0);
    for needle in [
        "space id:      5",
        "832 pages in FSP header",
        "INDEX",
        "legend:",
        "FBNIII",
    ] {
        assert!(
            text.stdout.contains(needle),
            "{needle:?} not in\n{}",
            text.stdout
        );
    }
}

#[test]
fn inspect_sbtest1_matches_the_readme() {
    let dir = tempfile::tempdir().unwrap();
    let sb = mariadb(dir.path(), "sbtest1");
    let run = minnow(["--json".as_ref(), "inspect".as_ref(), sb.as_os_str()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["file_pages"], 640);
    assert_eq!(r["fsp"]["space_id"], 9);
    assert_eq!(r["fsp"]["flags"]["raw"], 0x15);
    assert_eq!(r["fsp"]["flags"]["layout"], "full_crc32");
    assert_eq!(r["checksums"]["valid"], 152);
    assert_eq!(r["checksums"]["by_algorithm"]["full_crc32"], 152);
    for (id, pages, leaves, root) in [(35, 139, 138, 3), (36, 10, 9, 36)] {
        let i = index(&r, id);
        assert_eq!(i["pages"], pages, "index {id}");
        assert_eq!(i["leaves"], leaves, "index {id}");
        assert_eq!(i["root_page"], root, "index {id}");
        assert_eq!(i["leaf_records"], 10000, "index {id}");
    }
}

#[test]
fn inspect_mysql_8_0_shows_the_sdi_page_before_the_clustered_root() {
    let run = minnow([
        "--json",
        "inspect",
        mysql("8.0/actor.ibd").to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0);
    let r = run.json();
    assert_eq!(r["fsp"]["flags"]["raw"], 0x4021);
    let map = r["map"]["lines"][0].as_str().unwrap();
    assert!(map.starts_with("FBNSI"), "{map}");
    // The clustered index's root is page 4 in 8.0 files.
    assert!(
        r["indexes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["root_page"] == 4)
    );
    // 5.0 files leave the type of page 0 and 1 unset: shown as written-but-ALLOCATED.
    let run = minnow([
        "--json",
        "inspect",
        mysql("5.0/actor.ibd").to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0);
    let map = run.json()["map"]["lines"][0].as_str().unwrap().to_string();
    assert!(map.starts_with("aaNI"), "{map}");
}

#[test]
fn page_3_of_normal_compact_is_the_primary_key_root() {
    let dir = tempfile::tempdir().unwrap();
    let nc = mariadb(dir.path(), "normal_compact");
    let nc = nc.to_str().unwrap();
    let run = minnow(["--json", "page", nc, "3"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["fil"]["page_no"], 3);
    assert_eq!(r["fil"]["page_type_name"], "INDEX");
    assert_eq!(r["fil"]["space_id"], 5);
    let ix = &r["index"];
    assert_eq!(ix["index_id"], 23);
    assert_eq!(ix["level"], 1);
    // The root of a height-2 tree points at its 187 leaves.
    assert_eq!(ix["n_recs"], 187);
    assert_eq!(ix["format"], "compact");
    let dir_slots = ix["directory"].as_array().unwrap();
    assert_eq!(dir_slots.len() as u64, ix["n_dir_slots"].as_u64().unwrap());
    assert_eq!(dir_slots[0], 99); // infimum
    assert_eq!(dir_slots[dir_slots.len() - 1], 112); // supremum
    assert_eq!(r["checksum"]["verdict"], "crc32");
    assert_eq!(r["checksum"]["computed"]["crc32"], r["fil"]["checksum"]);
    assert!(r["fsp"].is_null());
    assert!(r["hex"].is_null());

    let text = minnow(["page", nc, "3"]);
    assert_eq!(text.code, 0);
    for needle in [
        "page type     @24  INDEX (17855)",
        "index id      23",
        "level         1 (non-leaf)",
        "checksum (policy crc32): CRC32",
    ] {
        assert!(
            text.stdout.contains(needle),
            "{needle:?} not in\n{}",
            text.stdout
        );
    }
}

#[test]
fn page_0_shows_the_fsp_header_and_hex() {
    let dir = tempfile::tempdir().unwrap();
    let sb = mariadb(dir.path(), "sbtest1");
    let sb = sb.to_str().unwrap();
    let run = minnow(["--json", "page", sb, "0", "--hex"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["fil"]["page_type_name"], "FSP_HDR");
    assert_eq!(r["fsp"]["space_id"], 9);
    assert_eq!(r["fsp"]["size"], 640);
    assert_eq!(r["fsp"]["flags"]["layout"], "full_crc32");
    assert_eq!(r["fsp"]["flags"]["page_size"], 16384);
    assert_eq!(r["checksum"]["verdict"], "full_crc32");
    let hex = r["hex"].as_array().unwrap();
    assert!(hex[0].as_str().unwrap().starts_with("00000000: "));
    assert!(
        hex.last()
            .unwrap()
            .as_str()
            .unwrap()
            .starts_with("00003ff0: ")
    );

    let text = minnow(["page", sb, "0", "--hex"]);
    assert_eq!(text.code, 0);
    assert!(text.stdout.contains("FSP header"), "{}", text.stdout);
    assert!(
        text.stdout
            .contains("0x15: full_crc32 layout, 16 KiB pages")
    );
    assert!(text.stdout.contains("hex dump:"));
    assert!(text.stdout.contains("\n00000000: "));
}

#[test]
fn a_flipped_byte_names_the_page_and_both_checksums() {
    let dir = tempfile::tempdir().unwrap();
    for (name, page_no, offset) in [("normal_compact", 17u64, 5000usize), ("sbtest1", 40, 9000)] {
        let path = mariadb(dir.path(), name);
        let mut bytes = std::fs::read(&path).unwrap();
        let at = page_no as usize * 16384 + offset;
        bytes[at] ^= 0x40;
        std::fs::write(&path, &bytes).unwrap();
        let p = path.to_str().unwrap();

        let run = minnow(["--json", "verify", p]);
        assert_eq!(run.code, 1, "{}", run.stdout);
        let r = run.json();
        assert_eq!(r["ok"], false);
        assert_eq!(r["exit_code"], 1);
        let file = &r["files"][0];
        assert_eq!(file["status"], "corrupt");
        assert_eq!(file["summary"]["corrupt"], 1);
        let bad = &file["corrupt_pages"][0];
        assert_eq!(bad["page"], page_no);
        assert_eq!(bad["kind"], "checksum");
        let stored = bad["stored_first"].as_u64().unwrap() as u32;
        let computed = bad["computed_first"].as_u64().unwrap() as u32;
        assert_ne!(stored, computed);
        let page = &bytes[page_no as usize * 16384..][..16384];
        let expected_stored = if name == "sbtest1" {
            u32::from_be_bytes(page[16380..].try_into().unwrap())
        } else {
            u32::from_be_bytes(page[..4].try_into().unwrap())
        };
        assert_eq!(stored, expected_stored);
        assert_eq!(bad["lsn_match"], true);

        let text = minnow(["verify", p]);
        assert_eq!(text.code, 1);
        assert!(
            text.stdout.contains(&format!("page {page_no}: CORRUPT")),
            "{}",
            text.stdout
        );
        assert!(
            text.stdout.contains(&format!("{stored:#010x}")),
            "{}",
            text.stdout
        );
        assert!(
            text.stdout.contains(&format!("{computed:#010x}")),
            "{}",
            text.stdout
        );
        assert!(text.stdout.contains("1 corrupt"), "{}", text.stdout);

        // The same page through `page` and `inspect`.
        let run = minnow(["page", p, &page_no.to_string()]);
        assert_eq!(run.code, 1, "{}", run.stdout);
        assert!(run.stdout.contains("CORRUPT"), "{}", run.stdout);
        let run = minnow(["--json", "inspect", p]);
        assert_eq!(run.code, 1);
        assert_eq!(run.json()["corrupt_pages"][0], page_no);
    }
}

#[test]
fn a_torn_page_reports_the_lsn_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    let path = mariadb(dir.path(), "normal_compact");
    let mut bytes = std::fs::read(&path).unwrap();
    // Page 5's trailer LSN word no longer matches its header: a torn write.
    bytes[6 * 16384 - 1] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let run = minnow(["--json", "verify", path.to_str().unwrap()]);
    assert_eq!(run.code, 1);
    let bad = &run.json()["files"][0]["corrupt_pages"][0];
    assert_eq!(bad["page"], 5);
    assert_eq!(bad["kind"], "lsn_mismatch");
    assert_eq!(bad["lsn_match"], false);
    let run = minnow(["verify", path.to_str().unwrap()]);
    assert!(run.stdout.contains("LSN MISMATCH"), "{}", run.stdout);
}

#[test]
fn a_truncated_file_reports_its_partial_page() {
    let dir = tempfile::tempdir().unwrap();
    let path = mariadb(dir.path(), "normal_compact");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..6 * 16384 + 1000]).unwrap();
    let p = path.to_str().unwrap();

    let run = minnow(["--json", "verify", p]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let file = &run.json()["files"][0];
    assert_eq!(file["trailing_bytes"], 1000);
    assert_eq!(file["summary"]["pages"], 7);
    assert_eq!(file["summary"]["valid"], 6);
    assert_eq!(file["corrupt_pages"][0]["page"], 6);
    assert_eq!(file["corrupt_pages"][0]["kind"], "partial_page");
    let run = minnow(["verify", p]);
    assert!(
        run.stdout.contains("partial page: 1000 of 16384 bytes"),
        "{}",
        run.stdout
    );

    let run = minnow(["--json", "inspect", p]);
    assert_eq!(run.code, 1);
    assert_eq!(run.json()["trailing_bytes"], 1000);
    // The FSP header still says 832 pages: the file is shorter than the tablespace.
    assert_eq!(run.json()["fsp"]["size_pages"], 832);

    let run = minnow(["page", p, "6"]);
    assert_eq!(run.code, 1);
    let run = minnow(["page", p, "7"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("beyond the end"), "{}", run.stderr);
}
