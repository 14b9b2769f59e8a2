//! Exit codes, usage errors, minnow-written files of every page size, and fuzzing: whatever the
//! bytes, every command exits 0, 1 or 2 and never panics.

mod common;

use std::path::{Path, PathBuf};

use common::{Rng, mariadb, minnow, mysql};
use minnow_page::checksum::{self, ChecksumAlgorithm};
use minnow_page::fil::FilHeader;
use minnow_page::fsp::{FspFlags, FspHeader};
use minnow_page::{PageSize, PageType};

/// Writes a 4-page tablespace the way minnow lays one out: FSP_HDR, IBUF_BITMAP, INODE, then an
/// INDEX root with index id 42.
fn minnow_file(dir: &Path, size: PageSize, algo: ChecksumAlgorithm) -> PathBuf {
    let n = size.bytes();
    let full_crc32 = algo == ChecksumAlgorithm::FullCrc32;
    let mut file = Vec::new();
    let types = [
        PageType::FspHdr,
        PageType::IbufBitmap,
        PageType::Inode,
        PageType::Index,
    ];
    for (no, ty) in types.into_iter().enumerate() {
        let mut page = vec![0u8; n];
        let mut h = FilHeader::new(7, no as u32, ty);
        h.lsn = 1000 + no as u64;
        h.write(&mut page).unwrap();
        if no == 0 {
            FspHeader {
                space_id: 7,
                size: 4,
                free_limit: 4,
                flags: FspFlags::new(size, full_crc32),
                frag_n_used: 4,
                next_seg_id: 3,
            }
            .write(&mut page)
            .unwrap();
        }
        if ty == PageType::Index {
            page[38..40].copy_from_slice(&2u16.to_be_bytes()); // N_DIR_SLOTS
            page[40..42].copy_from_slice(&120u16.to_be_bytes()); // HEAP_TOP
            page[42..44].copy_from_slice(&0x8002u16.to_be_bytes()); // N_HEAP, compact
            page[50..52].copy_from_slice(&5u16.to_be_bytes()); // DIRECTION none
            page[66..74].copy_from_slice(&42u64.to_be_bytes()); // INDEX_ID
            page[n - 10..n - 8].copy_from_slice(&99u16.to_be_bytes());
            page[n - 12..n - 10].copy_from_slice(&112u16.to_be_bytes());
        }
        checksum::stamp(&mut page, algo).unwrap();
        file.extend_from_slice(&page);
    }
    let path = dir.join(format!("minnow-{}k-{}.ibd", n / 1024, algo.name()));
    std::fs::write(&path, file).unwrap();
    path
}

#[test]
fn minnow_files_of_every_page_size_verify_and_inspect() {
    let dir = tempfile::tempdir().unwrap();
    for size in PageSize::ALL {
        for algo in ChecksumAlgorithm::ALL {
            let path = minnow_file(dir.path(), size, algo);
            let p = path.to_str().unwrap();
            // `none` pages are only accepted when the policy says none or a non-strict one
            // falls back to it; the default crc32 policy does.
            let run = minnow(["--json", "verify", p]);
            assert_eq!(run.code, 0, "{size} {algo}: {}{}", run.stdout, run.stderr);
            let file = &run.json()["files"][0];
            assert_eq!(file["page_size"], size.bytes());
            let matched = match algo {
                ChecksumAlgorithm::Crc32 => "crc32",
                ChecksumAlgorithm::Innodb => "innodb",
                ChecksumAlgorithm::None => "none",
                ChecksumAlgorithm::FullCrc32 => "full_crc32",
            };
            assert_eq!(file["summary"]["by_algorithm"][matched], 4, "{size} {algo}");

            let run = minnow(["--json", "inspect", p]);
            assert_eq!(run.code, 0, "{size} {algo}: {}", run.stderr);
            let r = run.json();
            assert_eq!(r["page_size"], size.bytes());
            assert_eq!(r["fsp"]["space_id"], 7);
            assert_eq!(r["indexes"][0]["index_id"], 42);
            assert_eq!(r["indexes"][0]["root_page"], 3);
            assert_eq!(r["map"]["lines"][0], "FBNI");
            assert_eq!(r["lsn"]["min"], 1000);
            assert_eq!(r["lsn"]["max"], 1003);

            let run = minnow(["--json", "page", p, "3"]);
            assert_eq!(run.code, 0, "{size} {algo}: {}", run.stderr);
            let r = run.json();
            assert_eq!(r["index"]["directory"], serde_json::json!([99, 112]));
            assert_eq!(r["checksum"]["verdict"], matched);
        }
    }
}

#[test]
fn page_size_option_overrides_the_flags() {
    let dir = tempfile::tempdir().unwrap();
    let path = minnow_file(dir.path(), PageSize::K4, ChecksumAlgorithm::Crc32);
    let p = path.to_str().unwrap();
    // Read as 16 KiB pages, the 16 KiB file is one page whose checksum cannot match.
    let run = minnow(["--json", "verify", "--page-size", "16k", p]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert_eq!(run.json()["files"][0]["page_size_source"], "option");
    let run = minnow(["verify", "--page-size", "4096", p]);
    assert_eq!(run.code, 0, "{}", run.stdout);

    // With page 0's flags destroyed, only --page-size gets the file read.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[54..58].copy_from_slice(&0xFFFF_FFFFu32.to_be_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let run = minnow(["verify", p]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains(p), "{}", run.stderr);
    assert!(run.stderr.contains("FSP flags"), "{}", run.stderr);
    let run = minnow(["verify", "--page-size", "4k", p]);
    assert_eq!(run.code, 1, "{}", run.stdout); // page 0's checksum no longer matches
    assert!(run.stdout.contains("page 0: CORRUPT"), "{}", run.stdout);
    assert!(run.stdout.contains("4 pages: 3 valid"), "{}", run.stdout);
}

#[test]
fn unreadable_files_exit_2_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.ibd");
    std::fs::write(&empty, b"").unwrap();
    let short = dir.path().join("short.ibd");
    std::fs::write(&short, [0u8; 40]).unwrap();
    let missing = dir.path().join("missing.ibd");
    let folder = dir.path().to_path_buf();
    for path in [&empty, &short, &missing, &folder] {
        let p = path.to_str().unwrap();
        for args in [vec!["verify", p], vec!["inspect", p], vec!["page", p, "0"]] {
            let run = minnow(&args);
            assert_eq!(run.code, 2, "{args:?}: {}{}", run.stdout, run.stderr);
            assert!(run.stderr.contains(p), "{args:?}: {}", run.stderr);
            let mut json_args = vec!["--json"];
            json_args.extend(&args);
            let run = minnow(&json_args);
            assert_eq!(run.code, 2);
            let v = run.json();
            let error = if args[0] == "verify" {
                v["files"][0]["error"].clone()
            } else {
                v["error"].clone()
            };
            assert!(error.as_str().unwrap().contains(p), "{v:#}");
        }
    }
}

#[test]
fn one_bad_file_among_good_ones_exits_2_and_still_reports_the_others() {
    let good = mysql("5.7/city.ibd");
    let run = minnow([
        "--json",
        "verify",
        good.to_str().unwrap(),
        "/nonexistent/x.ibd",
    ]);
    assert_eq!(run.code, 2);
    let v = run.json();
    assert_eq!(v["files"][0]["status"], "ok");
    assert_eq!(v["files"][1]["status"], "error");
}

#[test]
fn usage_errors_exit_2_and_help_exits_0() {
    let f = mysql("5.7/city.ibd");
    let f = f.to_str().unwrap();
    for args in [
        vec![],
        vec!["verify"],
        vec!["frobnicate"],
        vec!["verify", "--checksum", "md5", f],
        vec!["verify", "--page-size", "3k", f],
        vec!["page", f],
        vec!["page", f, "three"],
        vec!["page", f, "-1"],
        vec!["inspect", f, f],
        vec!["--bogus", "verify", f],
    ] {
        let run = minnow(&args);
        assert_eq!(run.code, 2, "{args:?}: {}{}", run.stdout, run.stderr);
        assert!(!run.stderr.is_empty(), "{args:?}");
    }
    for args in [vec!["--help"], vec!["verify", "--help"], vec!["--version"]] {
        let run = minnow(&args);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        assert!(!run.stdout.is_empty());
    }
    // Page past the end: an error, not corruption.
    let run = minnow(["page", f, "1000000"]);
    assert_eq!(run.code, 2);
}

/// Runs every command over `path` and checks the contract: exit 0/1/2, no panic, JSON parses.
fn run_all(path: &Path, rng: &mut Rng) {
    let p = path.to_str().unwrap();
    let n = rng.below(12).to_string();
    let commands: Vec<Vec<&str>> = vec![
        vec!["verify", p],
        vec!["verify", "--checksum", "strict_innodb", p],
        vec!["verify", "--page-size", "4k", p],
        vec!["inspect", p],
        vec!["inspect", "--page-size", "8k", "--checksum", "none", p],
        vec!["page", p, "0", "--hex"],
        vec!["page", p, &n],
        vec!["page", "--page-size", "4k", p, &n, "--hex"],
    ];
    for args in commands {
        for json in [false, true] {
            let mut full = if json { vec!["--json"] } else { vec![] };
            full.extend(&args);
            let run = minnow(&full);
            assert!(
                (0..=2).contains(&run.code),
                "{full:?} exited {}:\n{}\n{}",
                run.code,
                run.stdout,
                run.stderr
            );
            assert!(!run.stderr.contains("panicked"), "{full:?}: {}", run.stderr);
            if json {
                run.json();
            }
        }
    }
}

#[test]
fn fuzz_random_bytes_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let path = dir.path().join("random.ibd");
    for round in 0..64 {
        let len = match round % 4 {
            0 => rng.below(100) as usize,
            1 => rng.below(3 * 16384) as usize,
            2 => 4096 * (1 + rng.below(8) as usize),
            _ => 16384 * (1 + rng.below(3) as usize),
        };
        let mut bytes = rng.bytes(len);
        // Half the time, plausible flags so the pages get decoded rather than refused.
        if round % 2 == 0 && bytes.len() >= 58 {
            let flags: u32 = [0, 0x21, 0x4021, 0x15, 0x13, 0xE1][rng.below(6) as usize];
            bytes[54..58].copy_from_slice(&flags.to_be_bytes());
            if rng.below(2) == 0 {
                // An INDEX page type on page 0, so the INDEX decoder sees garbage too.
                bytes[24..26].copy_from_slice(&0x45BFu16.to_be_bytes());
            }
        }
        std::fs::write(&path, &bytes).unwrap();
        run_all(&path, &mut rng);
    }
}

#[test]
fn fuzz_truncated_and_damaged_fixtures_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    let sources = [
        std::fs::read(mysql("5.0/film_category.ibd")).unwrap(),
        std::fs::read(mysql("8.0/actor.ibd")).unwrap(),
        std::fs::read(mariadb(dir.path(), "sbtest1")).unwrap()[..20 * 16384].to_vec(),
    ];
    let path = dir.path().join("damaged.ibd");
    for round in 0..48 {
        let src = &sources[round % sources.len()];
        let mut bytes = src[..rng.below(src.len() as u64 + 1) as usize].to_vec();
        // Flip a few bytes, sometimes in the headers the decoders trust most.
        for _ in 0..rng.below(6) {
            if bytes.is_empty() {
                break;
            }
            let at = if rng.below(2) == 0 {
                rng.below(bytes.len().min(200) as u64) as usize
            } else {
                rng.below(bytes.len() as u64) as usize
            };
            bytes[at] ^= 1 << rng.below(8);
        }
        std::fs::write(&path, &bytes).unwrap();
        run_all(&path, &mut rng);
    }
}
