//! Interoperability: tablespaces written by minnow pass MariaDB's own `innochecksum`.
//!
//! `innochecksum` (from Debian's `mariadb-server-core`, installed by `.ci/deps`) reads the FSP
//! flags from page 0 to learn the page size and checksum format, then checks every page with
//! the server's own code. If minnow's FIL framing, FSP flags or checksums were off by one byte,
//! it would say so. The test is never skipped: a machine without `innochecksum` fails it, with
//! a message saying how to install it.

use minnow_io::{SyncBackend, Tablespace};
use minnow_page::checksum::ChecksumAlgorithm;
use minnow_page::fil::FilHeader;
use minnow_page::{PageSize, PageType};
use std::path::Path;
use std::process::Command;

/// Writes a tablespace of `pages` pages: page 0 from `Tablespace::create`, then pages of several
/// types filled with deterministic, non-trivial bytes, LSNs all different.
fn write_space(path: &Path, size: PageSize, algorithm: ChecksumAlgorithm, pages: u32) {
    let space = Tablespace::create(
        &SyncBackend::new(),
        path,
        42,
        size,
        algorithm,
        minnow_io::FlushMethod::Fsync,
        pages,
    )
    .unwrap_or_else(|e| panic!("create {}: {e}", path.display()));
    let types = [
        PageType::Index,
        PageType::UndoLog,
        PageType::Blob,
        PageType::Inode,
    ];
    for page_no in 1..pages {
        let mut page = minnow_io::AlignedBuf::page(size);
        let mut h = FilHeader::new(42, page_no, types[page_no as usize % types.len()]);
        h.lsn = 0x1_0000_0000 + u64::from(page_no) * 977;
        h.write(&mut page).unwrap();
        let body_end = size.bytes() - 8;
        for (i, b) in page[38..body_end].iter_mut().enumerate() {
            *b = ((i as u32).wrapping_mul(2_654_435_761).wrapping_add(page_no) >> 13) as u8;
        }
        space.write_page(page_no, &mut page).unwrap();
    }
    space.sync().unwrap();
}

fn innochecksum(path: &Path) -> std::process::Output {
    Command::new("innochecksum")
        .arg(path)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run MariaDB's innochecksum ({e}); install it with .ci/deps \
                 (apt-get install mariadb-server-core)"
            )
        })
}

#[test]
fn minnow_tablespaces_pass_innochecksum() {
    let dir = tempfile::tempdir().unwrap();
    for size in PageSize::ALL {
        for algorithm in [ChecksumAlgorithm::Crc32, ChecksumAlgorithm::FullCrc32] {
            let path = dir
                .path()
                .join(format!("t_{}_{}.ibd", size.bytes(), algorithm));
            write_space(&path, size, algorithm, 12);
            let out = innochecksum(&path);
            assert!(
                out.status.success(),
                "innochecksum rejected {} ({algorithm}, {size}):\n{}{}",
                path.display(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

#[test]
fn innochecksum_catches_a_damaged_minnow_page() {
    // The control experiment: the same check fails when a page is damaged, so the test above
    // cannot pass by accident.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("damaged.ibd");
    write_space(&path, PageSize::K16, ChecksumAlgorithm::Crc32, 8);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[5 * 16384 + 1000] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();
    let out = innochecksum(&path);
    assert!(
        !out.status.success(),
        "innochecksum accepted a damaged page:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
