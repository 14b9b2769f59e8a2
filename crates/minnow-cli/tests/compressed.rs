//! `verify`, `inspect` and `page` on minnow's compressed tablespaces (a file of KEY_BLOCK_SIZE
//! blocks, page n at n * block): the block size, the page count and the per-page payload sizes
//! printed, damaged blocks reported like corrupt pages, a truncated file refused with a typed
//! error, and no panic whatever the bytes.

mod common;

use std::path::{Path, PathBuf};

use common::{Rng, minnow};
use minnow_io::{FlushMethod, SyncBackend, Tablespace};
use minnow_page::checksum::ChecksumAlgorithm;
use minnow_page::fil::FilHeader;
use minnow_page::{PageSize, PageType};
use minnow_zip::{Algorithm, KeyBlockSize, ZipConfig, ZipHeader};

const SPACE: u32 = 9;
const INDEX_ID: u64 = 42;
/// Blocks in the test files: page 0 (FSP_HDR), pages 1-4 INDEX, page 5 never written.
const BLOCKS: u64 = 6;

/// A 16 KiB INDEX-like leaf page of index 42 whose body is `text_len` bytes of words picked by
/// a PRNG, so that pages compress to different sizes.
fn index_page(page_no: u32, text_len: usize) -> Vec<u8> {
    let n = PageSize::K16.bytes();
    let mut page = vec![0u8; n];
    let mut h = FilHeader::new(SPACE, page_no, PageType::Index);
    h.lsn = 5000 + u64::from(page_no);
    h.write(&mut page).unwrap();
    page[38..40].copy_from_slice(&2u16.to_be_bytes()); // N_DIR_SLOTS
    page[40..42].copy_from_slice(&120u16.to_be_bytes()); // HEAP_TOP
    page[42..44].copy_from_slice(&0x8002u16.to_be_bytes()); // N_HEAP, compact
    page[50..52].copy_from_slice(&5u16.to_be_bytes()); // DIRECTION none
    page[66..74].copy_from_slice(&INDEX_ID.to_be_bytes()); // INDEX_ID
    page[n - 10..n - 8].copy_from_slice(&99u16.to_be_bytes());
    page[n - 12..n - 10].copy_from_slice(&112u16.to_be_bytes());
    let words: [&[u8]; 8] = [
        b"alpha ",
        b"bravo ",
        b"charlie ",
        b"delta ",
        b"echo ",
        b"foxtrot ",
        b"golf ",
        b"hotel ",
    ];
    let mut rng = Rng(u64::from(page_no) * 7919 + 1);
    let mut text = Vec::new();
    while text.len() < text_len {
        text.extend_from_slice(words[rng.below(8) as usize]);
    }
    page[200..200 + text_len].copy_from_slice(&text[..text_len]);
    page
}

/// Writes a compressed tablespace `zip{KIB}k_{ALG}.ibd` of [`BLOCKS`] blocks in `dir`.
fn zip_file(dir: &Path, block: KeyBlockSize, algorithm: Algorithm) -> PathBuf {
    let path = dir.join(format!("zip{}k_{algorithm}.ibd", block.kib()));
    let space = Tablespace::create_compressed(
        &SyncBackend::new(),
        &path,
        SPACE,
        PageSize::K16,
        ZipConfig::new(block, algorithm),
        ChecksumAlgorithm::Crc32,
        FlushMethod::Fsync,
        BLOCKS as u32,
    )
    .unwrap();
    for n in 1..=4u32 {
        let mut page = index_page(n, 1500 * n as usize);
        space.write_page(n, &mut page).unwrap();
    }
    space.sync().unwrap();
    path
}

/// The payload length each block's zip header records (`None` for an all-zero block), read
/// straight from the file.
fn payloads(path: &Path, block: KeyBlockSize) -> Vec<Option<usize>> {
    std::fs::read(path)
        .unwrap()
        .chunks(block.bytes())
        .map(|b| {
            if b.iter().all(|&x| x == 0) {
                None
            } else {
                Some(ZipHeader::read(b).unwrap().payload_len)
            }
        })
        .collect()
}

fn flip(path: &Path, offset: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[offset] ^= 0x20;
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn inspect_shows_block_size_page_count_and_payload_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let block = KeyBlockSize::K8;
    let path = zip_file(dir.path(), block, Algorithm::default());
    let p = path.to_str().unwrap();
    let want = payloads(&path, block);
    assert_eq!(want.len(), BLOCKS as usize);
    let mut sizes: Vec<usize> = want.iter().flatten().copied().collect();
    sizes.sort_unstable();
    assert_eq!(sizes.len(), 5, "page 0 and four INDEX pages are written");
    // The text grows with the page number, so the payloads differ.
    assert!(want[4] > want[1], "{want:?}");

    let run = minnow(["--json", "inspect", "--zip-pages", p]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let r = run.json();
    assert_eq!(r["page_size"], 16384);
    assert_eq!(r["page_size_source"], "zip_header");
    assert_eq!(r["file_pages"], BLOCKS);
    assert_eq!(r["file_bytes"], BLOCKS * 8192);
    let z = &r["compression"];
    assert_eq!(z["key_block_size"], 8);
    assert_eq!(z["block_size"], 8192);
    assert_eq!(z["algorithm"], "zlib");
    assert_eq!(z["level"], 6);
    assert_eq!(z["codec"], "zlib-6");
    assert_eq!(z["logical_page_size"], 16384);
    assert_eq!(z["payload_capacity"], 8192 - 58 - 8);
    assert_eq!(z["compressed_pages"], 5);
    assert_eq!(z["empty_blocks"], 1);
    assert_eq!(z["damaged_blocks"], 0);
    assert_eq!(z["payload"]["min"], sizes[0]);
    assert_eq!(z["payload"]["median"], sizes[2]);
    assert_eq!(z["payload"]["max"], sizes[4]);
    let total: usize = sizes.iter().sum();
    assert_eq!(z["payload"]["total"], total);
    let ratio = z["ratio"].as_f64().unwrap();
    assert!(
        (ratio - total as f64 / (5.0 * 16384.0)).abs() < 1e-9,
        "{ratio}"
    );
    // Ten 10 % buckets holding every compressed page, each in the bucket of its share.
    let buckets = z["share_of_block"].as_array().unwrap();
    assert_eq!(buckets.len(), 10);
    assert_eq!(
        buckets
            .iter()
            .map(|b| b["pages"].as_u64().unwrap())
            .sum::<u64>(),
        5
    );
    for &size in &sizes {
        let i = size * 10 / 8192;
        assert!(
            buckets[i]["pages"].as_u64().unwrap() >= 1,
            "{size}: {buckets:?}"
        );
    }
    // --zip-pages: one entry per non-empty block, with the header's payload length.
    let pages = z["pages"].as_array().unwrap();
    assert_eq!(pages.len(), 5);
    for e in pages {
        let n = e["page"].as_u64().unwrap() as usize;
        assert_eq!(e["payload_len"], want[n].unwrap(), "page {n}");
        assert_eq!(e["state"], "intact");
    }
    assert_eq!(pages[0]["page_type"], "FSP_HDR");
    assert_eq!(pages[1]["page_type"], "INDEX");
    // The rest of the report comes from the inflated pages.
    assert_eq!(r["fsp"]["space_id"], SPACE);
    assert_eq!(r["fsp"]["flags"]["zip_size"], 8192);
    assert_eq!(r["indexes"][0]["index_id"], INDEX_ID);
    assert_eq!(r["indexes"][0]["pages"], 4);
    assert_eq!(r["map"]["lines"][0], "FIIII.");

    // The text report says the same.
    let run = minnow(["inspect", "--zip-pages", p]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let t = &run.stdout;
    assert!(
        t.contains("KEY_BLOCK_SIZE=8 (8192-byte blocks), zlib level 6, 16384-byte logical pages"),
        "{t}"
    );
    assert!(
        t.contains("6 compressed pages in file (49152 bytes)"),
        "{t}"
    );
    assert!(t.contains("5 compressed pages, 1 empty, 0 damaged"), "{t}");
    assert!(
        t.contains(&format!(
            "min {} median {} max {} bytes",
            sizes[0], sizes[2], sizes[4]
        )),
        "{t}"
    );
    for (n, size) in want.iter().enumerate() {
        if let Some(size) = size {
            let line = t
                .lines()
                .find(|l| l.split_whitespace().next() == Some(&n.to_string()))
                .unwrap_or_else(|| panic!("no line for page {n}:\n{t}"));
            assert!(line.contains(&size.to_string()), "{line}");
        }
    }
    // Without --zip-pages, the summary only.
    let run = minnow(["--json", "inspect", p]);
    assert!(run.json()["compression"]["pages"].is_null());
}

#[test]
fn verify_checks_blocks_and_restored_pages() {
    let dir = tempfile::tempdir().unwrap();
    let path = zip_file(dir.path(), KeyBlockSize::K8, Algorithm::default());
    let p = path.to_str().unwrap();
    let run = minnow(["--json", "verify", p]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let f = &run.json()["files"][0];
    assert_eq!(f["status"], "ok");
    assert_eq!(f["page_size"], 16384);
    assert_eq!(f["compression"]["block_size"], 8192);
    assert_eq!(f["summary"]["pages"], BLOCKS);
    assert_eq!(f["summary"]["by_algorithm"]["crc32"], 5);
    assert_eq!(f["summary"]["empty"], 1);
    let run = minnow(["verify", p]);
    assert!(
        run.stdout
            .contains("OK: 6 pages: 5 valid (crc32 5), 1 empty, 0 corrupt"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("16 KiB pages in 8 KiB zlib-6 blocks"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_flipped_byte_in_a_block_is_reported_by_verify_inspect_and_page() {
    let dir = tempfile::tempdir().unwrap();
    let block = KeyBlockSize::K8;
    let path = zip_file(dir.path(), block, Algorithm::default());
    let p = path.to_str().unwrap();
    // A byte of page 3's compressed payload.
    flip(&path, 3 * block.bytes() + 100);

    let run = minnow(["--json", "verify", p]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let f = &run.json()["files"][0];
    assert_eq!(f["status"], "corrupt");
    assert_eq!(f["summary"]["corrupt"], 1);
    assert_eq!(f["summary"]["damaged_blocks"], 1);
    let bad = &f["corrupt_pages"][0];
    assert_eq!(bad["page"], 3);
    assert_eq!(bad["kind"], "zip_block");
    assert!(
        bad["reason"]
            .as_str()
            .unwrap()
            .contains("checksum mismatch"),
        "{bad}"
    );
    let run = minnow(["verify", p]);
    assert_eq!(run.code, 1);
    assert!(
        run.stdout
            .contains(&format!("{p}: page 3: CORRUPT (zip_block)")),
        "{}",
        run.stdout
    );

    let run = minnow(["--json", "inspect", p]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["corrupt_pages"], serde_json::json!([3]));
    assert_eq!(r["compression"]["damaged_blocks"], 1);
    assert_eq!(r["compression"]["compressed_pages"], 4);
    assert_eq!(r["map"]["lines"][0], "FII!I.");

    let run = minnow(["--json", "page", p, "3"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["zip"]["state"], "damaged");
    assert_eq!(r["zip"]["header"]["crc_ok"], false);
    assert_eq!(r["corruption"]["kind"], "zip_block");
    // Other pages still read.
    let run = minnow(["--json", "page", p, "2"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn page_prints_the_zip_header_before_the_decoded_page() {
    let dir = tempfile::tempdir().unwrap();
    let block = KeyBlockSize::K4;
    let path = zip_file(dir.path(), block, Algorithm::Lz4);
    let p = path.to_str().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let header = ZipHeader::read(&bytes[2 * 4096..3 * 4096]).unwrap();

    let run = minnow(["--json", "page", p, "2"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let r = run.json();
    let z = &r["zip"];
    assert_eq!(z["state"], "intact");
    assert_eq!(z["block_size"], 4096);
    assert_eq!(z["key_block_size"], 4);
    assert_eq!(z["header"]["algorithm"], "lz4");
    assert!(z["header"]["level"].is_null());
    assert_eq!(z["header"]["logical_page_size"], 16384);
    assert_eq!(z["header"]["payload_len"], header.payload_len);
    assert_eq!(z["header"]["crc"], header.crc);
    assert_eq!(z["header"]["crc_ok"], true);
    // The inflated page, decoded as usual.
    assert_eq!(r["page_size"], 16384);
    assert_eq!(r["fil"]["page_no"], 2);
    assert_eq!(r["index"]["index_id"], INDEX_ID);
    assert_eq!(r["checksum"]["verdict"], "crc32");

    let run = minnow(["page", p, "2"]);
    assert_eq!(run.code, 0);
    let t = &run.stdout;
    let zip_at = t.find("zip header").unwrap_or_else(|| panic!("{t}"));
    let fil_at = t.find("FIL header").unwrap_or_else(|| panic!("{t}"));
    assert!(zip_at < fil_at, "{t}");
    assert!(t.contains("algorithm     lz4"), "{t}");
    assert!(
        t.contains(&format!("payload       {} bytes", header.payload_len)),
        "{t}"
    );
    assert!(t.contains("(matches)"), "{t}");

    // The never-written block is an empty page.
    let run = minnow(["--json", "page", p, "5"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["zip"]["state"], "empty");
    assert_eq!(r["checksum"]["verdict"], "empty");

    let run = minnow(["--json", "inspect", p]);
    let z = &run.json()["compression"];
    assert_eq!(z["block_size"], 4096);
    assert_eq!(z["algorithm"], "lz4");
    assert!(z["level"].is_null());
}

#[test]
fn a_truncated_compressed_file_is_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = zip_file(dir.path(), KeyBlockSize::K8, Algorithm::default());
    let p = path.to_str().unwrap();
    let bytes = std::fs::read(&path).unwrap();

    // Cut inside block 0: nothing can be read.
    std::fs::write(&path, &bytes[..5000]).unwrap();
    for args in [vec!["verify", p], vec!["inspect", p], vec!["page", p, "0"]] {
        let run = minnow(&args);
        assert_eq!(run.code, 2, "{args:?}: {}{}", run.stdout, run.stderr);
        assert!(run.stderr.contains(p), "{}", run.stderr);
        assert!(
            run.stderr.contains("compressed tablespace truncated")
                && run.stderr.contains("5000 bytes")
                && run.stderr.contains("8192-byte block"),
            "{}",
            run.stderr
        );
    }
    // Cut inside the last block: a partial page, reported as corrupt.
    std::fs::write(&path, &bytes[..bytes.len() - 100]).unwrap();
    let run = minnow(["--json", "verify", p]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let f = &run.json()["files"][0];
    assert_eq!(f["trailing_bytes"], 8192 - 100);
    let last = f["corrupt_pages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["kind"], "partial_page");
    assert_eq!(last["page"], BLOCKS - 1);
}

#[test]
fn a_damaged_block_0_header_is_read_past() {
    let dir = tempfile::tempdir().unwrap();
    let path = zip_file(dir.path(), KeyBlockSize::K8, Algorithm::default());
    let p = path.to_str().unwrap();
    // Byte 42 is the format version: block 0's header no longer decodes, but block 1's does.
    flip(&path, 42);
    let run = minnow(["--json", "verify", p]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let f = &run.json()["files"][0];
    assert_eq!(f["compression"]["block_size"], 8192);
    assert_eq!(f["corrupt_pages"][0]["page"], 0);
    assert_eq!(f["corrupt_pages"][0]["kind"], "zip_block");
    assert!(
        f["corrupt_pages"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("version"),
        "{f}"
    );
    assert_eq!(f["summary"]["by_algorithm"]["crc32"], 4);

    // A block shift size that is not 1-5 cannot be read past.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[42] ^= 0x20;
    bytes[45] = 9;
    std::fs::write(&path, &bytes).unwrap();
    let run = minnow(["verify", p]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("block shift size at byte 45 is 9"),
        "{}",
        run.stderr
    );
}

#[test]
fn random_damage_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    let path = zip_file(dir.path(), KeyBlockSize::K4, Algorithm::default());
    let p = path.to_str().unwrap();
    let clean = std::fs::read(&path).unwrap();
    let mut rng = Rng(0x5EED_2117);
    for round in 0..12 {
        let mut bytes = clean.clone();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(bytes.len() as u64) as usize;
            bytes[at] = rng.next() as u8;
        }
        if round % 4 == 3 {
            bytes.truncate(rng.below(bytes.len() as u64) as usize);
        }
        std::fs::write(&path, &bytes).unwrap();
        for args in [
            vec!["verify", p],
            vec!["inspect", "--zip-pages", p],
            vec!["page", p, "1"],
        ] {
            let run = minnow(&args);
            assert!(
                (0..=2).contains(&run.code),
                "round {round} {args:?}: exit {}\n{}",
                run.code,
                run.stderr
            );
            assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
        }
    }
}
