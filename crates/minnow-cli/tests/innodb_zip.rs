//! InnoDB's own ROW_FORMAT=COMPRESSED tablespaces, as MariaDB 10.11 writes them
//! (fixtures/innodb-zip/README.md): `verify`, `inspect` and `page` read them in their physical
//! pages and check the compressed-page checksum, for every KEY_BLOCK_SIZE and for the `crc32`,
//! `innodb` and `none` checksums. MariaDB's `innochecksum` must agree where it can judge.

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{fixtures, minnow};
use serde_json::Value;

const SIZES: [usize; 5] = [1, 2, 4, 8, 16];
const ALGORITHMS: [&str; 3] = ["crc32", "innodb", "none"];

/// Gunzips `zip{kbs}k_{algo}.ibd.gz` into `dir`.
fn fixture(dir: &Path, kbs: usize, algo: &str) -> PathBuf {
    let name = format!("zip{kbs}k_{algo}.ibd");
    let gz = fixtures().join("innodb-zip").join(format!("{name}.gz"));
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&gz).expect("open fixture"))
        .read_to_end(&mut bytes)
        .expect("gunzip fixture");
    let out = dir.join(name);
    std::fs::write(&out, bytes).expect("write fixture");
    out
}

/// Rows in each table (fixtures/innodb-zip/contents.txt, from the server).
fn rows(kbs: usize) -> u64 {
    if kbs <= 4 { 300 } else { 600 }
}

fn verify_json(path: &Path, checksum: &str) -> (i32, Value) {
    let run = minnow([
        "--json",
        "verify",
        "--checksum",
        checksum,
        path.to_str().unwrap(),
    ]);
    let json = run.json();
    (run.code, json)
}

#[test]
fn verify_accepts_every_key_block_size_and_checksum_algorithm() {
    let dir = tempfile::tempdir().unwrap();
    for kbs in SIZES {
        for algo in ALGORITHMS {
            let path = fixture(dir.path(), kbs, algo);
            for policy in ["crc32".to_string(), format!("strict_{algo}")] {
                let (code, json) = verify_json(&path, &policy);
                let file = &json["files"][0];
                assert_eq!(code, 0, "{} under {policy}: {json:#}", path.display());
                assert_eq!(file["zip_size"], kbs * 1024);
                assert_eq!(file["page_size"], 16384);
                let summary = &file["summary"];
                assert_eq!(summary["corrupt"], 0);
                let by = summary["by_algorithm"].as_object().unwrap();
                assert_eq!(by.len(), 1, "{}: {by:?}", path.display());
                assert_eq!(by[algo], summary["valid"]);
                // FSP_HDR, IBUF_BITMAP, INODE, two index roots at least, and ZBLOB pages.
                assert!(summary["valid"].as_u64().unwrap() > 5);
            }
            if algo != "crc32" {
                // MariaDB's strict_crc32 (and its innochecksum) accept only crc32.
                let (code, json) = verify_json(&path, "strict_crc32");
                assert_eq!(code, 1, "{json:#}");
                // Every written page is refused; only the all-zero ones pass.
                let summary = &json["files"][0]["summary"];
                let pages = summary["pages"].as_u64().unwrap();
                let empty = summary["empty"].as_u64().unwrap();
                assert_eq!(summary["corrupt"], pages - empty, "{summary:#}");
            }
        }
    }
}

#[test]
fn the_zip_size_comes_from_the_flags_and_a_matching_page_size_option_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture(dir.path(), 8, "crc32");
    // The symptom: with --page-size 8k every page was reported corrupt.
    let run = minnow(["verify", "--page-size", "8k", path.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .contains("stored as 8 KiB ROW_FORMAT=COMPRESSED pages, from --page-size"),
        "{}",
        run.stdout
    );
    let run = minnow(["verify", path.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("OK: "), "{}", run.stdout);
}

#[test]
fn a_flipped_byte_is_reported_with_page_field_and_both_checksums() {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture(dir.path(), 4, "crc32");
    let mut bytes = std::fs::read(&path).unwrap();
    let page = 3usize;
    let at = page * 4096 + 1000;
    let stored = u32::from_be_bytes(bytes[page * 4096..page * 4096 + 4].try_into().unwrap());
    bytes[at] ^= 0x20;
    std::fs::write(&path, &bytes).unwrap();
    let (code, json) = verify_json(&path, "crc32");
    assert_eq!(code, 1, "{json:#}");
    let bad = &json["files"][0]["corrupt_pages"];
    assert_eq!(bad.as_array().unwrap().len(), 1, "{bad:#}");
    let bad = &bad[0];
    assert_eq!(bad["page"], page);
    assert_eq!(bad["kind"], "checksum");
    assert_eq!(bad["zip_size"], 4096);
    assert_eq!(bad["algorithm"], "crc32");
    assert_eq!(bad["stored_first"], stored);
    assert_ne!(bad["computed_first"], stored);
    let text = minnow(["verify", path.to_str().unwrap()]);
    assert_eq!(text.code, 1);
    let line = format!(
        "{}: page 3: CORRUPT (checksum): checksum mismatch\n    compressed page (4096 bytes): \
         checksum field at offset 0 stored {:#010x}",
        path.display(),
        stored
    );
    assert!(text.stdout.contains(&line), "{}", text.stdout);

    // The LSN (bytes 16..24) is not covered: a change there is not a checksum failure.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[at] ^= 0x20;
    bytes[page * 4096 + 18] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let (code, json) = verify_json(&path, "strict_crc32");
    assert_eq!(code, 0, "{json:#}");
}

#[test]
fn a_truncated_file_is_reported_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture(dir.path(), 2, "crc32");
    let bytes = std::fs::read(&path).unwrap();
    // Cut inside page 5: the partial page is a corrupt page of its own kind.
    std::fs::write(&path, &bytes[..5 * 2048 + 700]).unwrap();
    let (code, json) = verify_json(&path, "crc32");
    assert_eq!(code, 1, "{json:#}");
    let file = &json["files"][0];
    assert_eq!(file["trailing_bytes"], 700);
    let bad = &file["corrupt_pages"][0];
    assert_eq!(bad["kind"], "partial_page");
    assert_eq!(bad["page"], 5);
    assert!(
        bad["reason"]
            .as_str()
            .unwrap()
            .contains("700 of 2048 bytes")
    );
    // Too short for the flags: a typed error naming the file, exit 2.
    std::fs::write(&path, &bytes[..40]).unwrap();
    let run = minnow(["verify", path.to_str().unwrap()]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("too short to hold page 0's FSP flags"),
        "{}",
        run.stderr
    );
    // Asking `page` for a logical page of a compressed file is refused with the reason.
    std::fs::write(&path, &bytes).unwrap();
    let run = minnow(["page", path.to_str().unwrap(), "999999"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("beyond the end of the file"),
        "{}",
        run.stderr
    );
}

#[test]
fn inspect_counts_every_row_in_both_indexes() {
    let dir = tempfile::tempdir().unwrap();
    for kbs in SIZES {
        let path = fixture(dir.path(), kbs, "innodb");
        let run = minnow(["--json", "inspect", path.to_str().unwrap()]);
        assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
        let r = run.json();
        assert_eq!(r["zip_size"], kbs * 1024);
        assert_eq!(r["page_size"], 16384);
        assert_eq!(r["checksums"]["corrupt"], 0);
        let indexes = r["indexes"].as_array().unwrap();
        assert_eq!(indexes.len(), 2, "{indexes:#?}");
        for ix in indexes {
            assert_eq!(ix["leaf_records"], rows(kbs), "zip{kbs}k: {ix:#}");
        }
        // The primary key's tree is taller than one page for every block size.
        assert!(
            indexes[0]["height"].as_u64().unwrap() >= 2,
            "{:#}",
            indexes[0]
        );
        let types: Vec<&str> = r["page_types"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert!(types.contains(&"ZBLOB"), "zip{kbs}k: {types:?}");
        let text = minnow(["inspect", path.to_str().unwrap()]);
        assert!(
            text.stdout.contains(&format!("KEY_BLOCK_SIZE={kbs})")),
            "{}",
            text.stdout
        );
    }
}

#[test]
fn page_decodes_the_compressed_page_header() {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture(dir.path(), 8, "crc32");
    let run = minnow(["--json", "page", path.to_str().unwrap(), "3"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let r = run.json();
    assert_eq!(r["page_size"], 8192);
    assert_eq!(r["fil"]["page_type_name"], "INDEX");
    assert_eq!(r["checksum"]["verdict"], "crc32");
    assert_eq!(r["checksum"]["computed"]["crc32"], r["fil"]["checksum"]);
    let z = &r["zip_page"];
    assert_eq!(z["zip_size"], 8192);
    assert_eq!(z["logical_page_size"], 16384);
    assert_eq!(z["problems"].as_array().unwrap().len(), 0, "{z:#}");
    let d = &z["dense_directory"];
    assert_eq!(d["user_slots"], r["index"]["n_recs"]);
    assert_eq!(d["slots"], r["index"]["n_heap"].as_u64().unwrap() - 2);
    assert_eq!(d["owned"], r["index"]["n_dir_slots"].as_u64().unwrap() - 2);
    let stream = &z["stream"];
    assert_eq!(stream["start"], 94);
    let len = stream["length"].as_u64().unwrap();
    assert!(
        len > 10 && 94 + len <= d["start"].as_u64().unwrap(),
        "{z:#}"
    );

    let text = minnow(["page", path.to_str().unwrap(), "3"]);
    for want in [
        "ROW_FORMAT=COMPRESSED: 8192 bytes as stored (logical pages of 16384 bytes)",
        "zlib stream   @94",
        "dense directory @",
        "INDEX header (@38):",
        "checksum (policy crc32): CRC32",
    ] {
        assert!(text.stdout.contains(want), "{want:?} in\n{}", text.stdout);
    }
    assert!(!text.stdout.contains("FIL trailer ("), "{}", text.stdout);

    // Page 0 of a compressed tablespace is not an INDEX page: no stream, same checksum rule.
    let run = minnow(["--json", "page", path.to_str().unwrap(), "0"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let r = run.json();
    assert_eq!(r["fil"]["page_type_name"], "FSP_HDR");
    assert!(r["zip_page"]["stream"].is_null());
    assert_eq!(r["fsp"]["flags"]["zip_size"], 8192);
}

/// MariaDB's `innochecksum`, or `None` outside CI when it is not installed.
fn innochecksum(path: &Path) -> Option<bool> {
    match Command::new("innochecksum").arg(path).output() {
        Ok(out) => Some(out.status.success()),
        Err(e) if std::env::var_os("CI").is_none() => {
            eprintln!("note: innochecksum not run ({e}); install mariadb-server-core");
            None
        }
        Err(e) => panic!("CI is set but innochecksum cannot run ({e}); see .ci/deps"),
    }
}

#[test]
fn innochecksum_agrees_with_strict_crc32_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    for kbs in SIZES {
        for algo in ALGORITHMS {
            let path = fixture(dir.path(), kbs, algo);
            let Some(theirs) = innochecksum(&path) else {
                return;
            };
            // innochecksum 10.11 checks compressed pages against crc32 alone.
            let (code, _) = verify_json(&path, "strict_crc32");
            assert_eq!(theirs, code == 0, "{}", path.display());
            assert_eq!(theirs, algo == "crc32", "{}", path.display());
        }
        // A flipped body byte: both refuse it.
        let path = fixture(dir.path(), kbs, "crc32");
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[2 * kbs * 1024 + 200] ^= 0x01;
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(innochecksum(&path), Some(false), "{}", path.display());
        let (code, _) = verify_json(&path, "strict_crc32");
        assert_eq!(code, 1);
    }
}

#[test]
fn garbage_in_compressed_pages_is_reported_never_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture(dir.path(), 2, "crc32");
    let p = path.to_str().unwrap();
    let size = 2048;
    let mut bytes = std::fs::read(&path).unwrap();
    // Page 3: record counts that cannot fit (PAGE_N_HEAP 0x7FFF, PAGE_N_RECS 0xFFFF).
    bytes[3 * size + 42..3 * size + 44].copy_from_slice(&0xFFFFu16.to_be_bytes());
    bytes[3 * size + 54..3 * size + 56].copy_from_slice(&0xFFFFu16.to_be_bytes());
    // Pages 4 to 11: random bytes after the FIL header (fixed seed).
    let mut rng = common::Rng(0x5EED_2026);
    for page in 4..12 {
        for b in &mut bytes[page * size + 38..(page + 1) * size] {
            *b = rng.next() as u8;
        }
    }
    std::fs::write(&path, &bytes).unwrap();
    let run = minnow(["--json", "page", p, "3"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let problems = run.json()["zip_page"]["problems"].to_string();
    assert!(problems.contains("PAGE_N_HEAP 32767"), "{problems}");
    for page in 0..16 {
        let run = minnow(["--json", "page", p, &page.to_string()]);
        assert!(
            run.code == 0 || run.code == 1,
            "page {page}: {}",
            run.stderr
        );
        run.json();
    }
    let (code, json) = verify_json(&path, "crc32");
    assert_eq!(code, 1);
    let bad: Vec<u64> = json["files"][0]["corrupt_pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["page"].as_u64().unwrap())
        .collect();
    assert_eq!(bad, (3..12).collect::<Vec<u64>>());
    let run = minnow(["--json", "inspect", p]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.json()["checksums"]["corrupt"], 9);
}
