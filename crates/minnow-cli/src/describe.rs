//! Explaining raw values: FSP flags bit by bit, and xxd-style hex dumps.
//!
//! The FSP flags word comes in two layouts (see [`minnow_page::fsp`]): MySQL's, where bit 0 is
//! POST_ANTELOPE, bits 1-4 the compressed page size, bit 5 ATOMIC_BLOBS, bits 6-9 the page size
//! and bits 10-14 DATA_DIR, SHARED, TEMPORARY, ENCRYPTION and SDI; and MariaDB's full_crc32
//! layout, marked by bit 4, with the page size in bits 0-3 and the page compression algorithm in
//! bits 5-7. [`FlagsInfo`] names every bit that is set.

use minnow_page::fsp::FspFlags;
use serde::Serialize;

/// The FSP flags word, decoded.
#[derive(Debug, Clone, Serialize)]
pub struct FlagsInfo {
    /// The raw word.
    pub raw: u32,
    /// `mysql` or `full_crc32`.
    pub layout: &'static str,
    /// The logical page size in bytes, if the flags encode a valid one.
    pub page_size: Option<usize>,
    /// The compressed page size in bytes (ROW_FORMAT=COMPRESSED), if any.
    pub zip_size: Option<usize>,
    /// Names of the flag bits that are set (`POST_ANTELOPE`, `ATOMIC_BLOBS`, `SDI`, ...).
    pub bits: Vec<String>,
    /// MariaDB page compression algorithm (full_crc32 layout only).
    pub page_compression: Option<&'static str>,
    /// Why the flags are invalid, if they are.
    pub invalid: Option<String>,
    /// A one-line human summary.
    pub summary: String,
}

impl FlagsInfo {
    /// Decodes `flags`.
    pub fn new(flags: FspFlags) -> FlagsInfo {
        let raw = flags.0;
        let page_size = flags.page_size().ok().map(|s| s.bytes());
        let invalid = flags.validate().err().map(|e| e.to_string());
        let mut bits = Vec::new();
        let (layout, page_compression) = if flags.is_full_crc32() {
            bits.push(format!("PAGE_SSIZE={}", raw & 0xF));
            bits.push("FULL_CRC32".to_string());
            let algo = match (raw >> 5) & 0x7 {
                0 => "none",
                1 => "zlib",
                2 => "lz4",
                3 => "lzo",
                4 => "lzma",
                5 => "bzip2",
                6 => "snappy",
                _ => "unknown",
            };
            if raw >> 8 != 0 {
                bits.push(format!("unknown bits {:#x}", raw & !0xFF));
            }
            ("full_crc32", Some(algo))
        } else {
            const NAMES: [(u32, &str); 8] = [
                (0, "POST_ANTELOPE"),
                (5, "ATOMIC_BLOBS"),
                (10, "DATA_DIR"),
                (11, "SHARED"),
                (12, "TEMPORARY"),
                (13, "ENCRYPTION"),
                (14, "SDI"),
                (16, "PAGE_COMPRESSION(MariaDB)"),
            ];
            for (bit, name) in NAMES {
                if raw & (1 << bit) != 0 {
                    bits.push(name.to_string());
                }
            }
            let zip = (raw >> 1) & 0xF;
            if zip != 0 {
                bits.push(format!("ZIP_SSIZE={zip}"));
            }
            let ssize = (raw >> 6) & 0xF;
            if ssize != 0 {
                bits.push(format!("PAGE_SSIZE={ssize}"));
            }
            let known: u32 = 0x7FFF | (1 << 16);
            if raw & !known != 0 {
                bits.push(format!("other bits {:#x}", raw & !known));
            }
            ("mysql", None)
        };
        let mut summary = format!("{raw:#x}: {layout} layout");
        match page_size {
            Some(bytes) => summary.push_str(&format!(", {} KiB pages", bytes / 1024)),
            None => summary.push_str(", invalid page size"),
        }
        if layout == "mysql" && (raw >> 6) & 0xF == 0 {
            summary.push_str(" (PAGE_SSIZE 0 = default 16 KiB)");
        }
        if let Some(zip) = flags.zip_size() {
            summary.push_str(&format!(", ROW_FORMAT=COMPRESSED {zip}-byte pages"));
        }
        if let Some(algo) = page_compression {
            summary.push_str(&format!(", page compression {algo}"));
        }
        if layout == "mysql" {
            let bits_text: Vec<&str> = bits
                .iter()
                .map(String::as_str)
                .filter(|b| !b.starts_with("PAGE_SSIZE"))
                .collect();
            if bits_text.is_empty() {
                summary.push_str(", no flag bits (Antelope: REDUNDANT or COMPACT rows)");
            } else {
                summary.push_str(&format!(", {}", bits_text.join(" | ")));
            }
        }
        if let Some(why) = &invalid {
            summary.push_str(&format!(" [INVALID: {why}]"));
        }
        FlagsInfo {
            raw,
            layout,
            page_size,
            zip_size: flags.zip_size(),
            bits,
            page_compression,
            invalid,
            summary,
        }
    }
}

/// Bytes per hex dump line.
const HEX_LINE: usize = 16;

/// An xxd-style hex dump of `bytes`: `offset: hex pairs  ascii`. Runs of all-zero lines are
/// collapsed into a single `*` line (like `xxd -a`), so a mostly empty page stays readable.
pub fn hex_dump(bytes: &[u8]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut in_zero_run = false;
    let last = bytes.len().saturating_sub(1) / HEX_LINE;
    for (i, chunk) in bytes.chunks(HEX_LINE).enumerate() {
        let zero = chunk.iter().all(|&b| b == 0);
        // Always show the first and last line so the dump's extent is visible.
        if zero && i != 0 && i != last {
            if !in_zero_run {
                lines.push("*".to_string());
                in_zero_run = true;
            }
            continue;
        }
        in_zero_run = false;
        let mut hex = String::with_capacity(40);
        for (j, b) in chunk.iter().enumerate() {
            if j > 0 && j % 2 == 0 {
                hex.push(' ');
            }
            hex.push_str(&format!("{b:02x}"));
        }
        let ascii: String = chunk
            .iter()
            .map(|&b| {
                if b.is_ascii_graphic() || b == b' ' {
                    char::from(b)
                } else {
                    '.'
                }
            })
            .collect();
        lines.push(format!("{:08x}: {hex:<39}  {ascii}", i * HEX_LINE));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_observed_in_real_files() {
        let f = FlagsInfo::new(FspFlags(0x15));
        assert_eq!(f.layout, "full_crc32");
        assert_eq!(f.page_size, Some(16384));
        assert_eq!(f.page_compression, Some("none"));
        let f = FlagsInfo::new(FspFlags(0x4021));
        assert_eq!(f.layout, "mysql");
        assert!(f.bits.contains(&"SDI".to_string()));
        assert!(f.bits.contains(&"ATOMIC_BLOBS".to_string()));
        let f = FlagsInfo::new(FspFlags(0));
        assert!(f.bits.is_empty());
        assert!(f.invalid.is_none());
        assert!(FlagsInfo::new(FspFlags(2 << 6)).invalid.is_some());
    }

    #[test]
    fn hex_dump_collapses_zero_runs() {
        let mut page = vec![0u8; 128];
        page[0] = b'A';
        page[127] = 1;
        let lines = hex_dump(&page);
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("00000000: 4100 0000"));
        assert!(lines[0].ends_with("A..............."));
        assert_eq!(lines[1], "*");
        assert!(lines[2].starts_with("00000070: "));
    }
}
