//! `minnow page` on a page of one of minnow's own compressed tablespaces (docs/FORMAT.md §12):
//! the block as stored and its zip header (block size, algorithm and level, logical page size,
//! payload length and its share of the block, the stored CRC-32C and whether it matches), and
//! the report printed when a block does not restore.

use std::io::Write;

use serde::Serialize;

use crate::check::CorruptPage;
use crate::output::hex32;
use crate::report;
use crate::space::BlockState;

/// A compressed page's block and zip header.
#[derive(Debug, Serialize)]
pub struct ZipBlockInfo {
    /// `intact` (restored), `empty` (all zero, never written) or `damaged`.
    pub state: &'static str,
    /// The block size in bytes (from the file's layout).
    pub block_size: usize,
    /// `KEY_BLOCK_SIZE` in KiB.
    pub key_block_size: usize,
    /// The zip header's fields, if it decodes.
    pub header: Option<ZipHeaderInfo>,
    /// What is wrong with a damaged block.
    pub error: Option<String>,
}

/// The zip header of one block, decoded.
#[derive(Debug, Serialize)]
pub struct ZipHeaderInfo {
    /// `zlib` or `lz4`.
    pub algorithm: &'static str,
    /// The zlib level; absent for LZ4.
    pub level: Option<u8>,
    /// The block size the header records, in bytes.
    pub block_size: usize,
    /// The logical page size the header records, in bytes.
    pub logical_page_size: usize,
    /// The compressed payload's length in bytes.
    pub payload_len: usize,
    /// The payload as a share of the block (0 to 1).
    pub share_of_block: f64,
    /// The stored CRC-32C (of the FIL header, zip header, payload and trailer).
    pub crc: u32,
    /// Whether the block restored, so its CRC matched.
    pub crc_ok: bool,
}

impl ZipBlockInfo {
    pub(super) fn new(block_size: usize, state: &BlockState) -> ZipBlockInfo {
        let header = |h: &minnow_zip::ZipHeader, crc_ok: bool| {
            let (algorithm, level) = match h.algorithm {
                minnow_zip::Algorithm::Zlib(l) => ("zlib", Some(l.get())),
                minnow_zip::Algorithm::Lz4 => ("lz4", None),
            };
            ZipHeaderInfo {
                algorithm,
                level,
                block_size: h.block_size.bytes(),
                logical_page_size: h.logical_size.bytes(),
                payload_len: h.payload_len,
                share_of_block: h.payload_len as f64 / h.block_size.bytes() as f64,
                crc: h.crc,
                crc_ok,
            }
        };
        let (state, header, error) = match state {
            BlockState::Empty => ("empty", None, None),
            BlockState::Intact(h) => ("intact", Some(header(h, true)), None),
            BlockState::Damaged { header: h, error } => {
                let crc_ok = !matches!(error, minnow_zip::ZipError::Checksum { .. });
                (
                    "damaged",
                    h.as_ref().map(|h| header(h, crc_ok)),
                    Some(error.to_string()),
                )
            }
        };
        ZipBlockInfo {
            state,
            block_size,
            key_block_size: block_size / 1024,
            header,
            error,
        }
    }

    pub(super) fn print(&self, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(
            out,
            "compressed block: {} bytes (KEY_BLOCK_SIZE={}), {}",
            self.block_size,
            self.key_block_size,
            self.state.to_uppercase()
        )?;
        if let Some(h) = &self.header {
            let algo = match h.level {
                Some(level) => format!("{} level {level}", h.algorithm),
                None => h.algorithm.to_string(),
            };
            writeln!(out, "zip header (@38 of the block):")?;
            writeln!(out, "  block size    {} bytes", h.block_size)?;
            writeln!(out, "  algorithm     {algo}")?;
            writeln!(out, "  logical size  {} bytes", h.logical_page_size)?;
            writeln!(
                out,
                "  payload       {} bytes ({:.1}% of the block, {:.1}% of the page)",
                h.payload_len,
                h.share_of_block * 100.0,
                h.payload_len as f64 * 100.0 / h.logical_page_size.max(1) as f64
            )?;
            let verdict = if h.crc_ok { "matches" } else { "MISMATCH" };
            writeln!(out, "  CRC-32C       {} ({verdict})", hex32(h.crc))?;
        }
        if let Some(why) = &self.error {
            writeln!(out, "  damaged: {why}")?;
        }
        Ok(())
    }
}

/// The JSON printed for a compressed page whose block does not restore.
#[derive(Debug, Serialize)]
pub(super) struct DamagedReport {
    pub(super) file: String,
    pub(super) page: u64,
    pub(super) page_size: usize,
    pub(super) zip: ZipBlockInfo,
    pub(super) corruption: CorruptPage,
    pub(super) hex: Option<Vec<String>>,
}

pub(super) fn print_damaged(
    r: &DamagedReport,
    json: bool,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    if json {
        return report::emit_json(out, r);
    }
    writeln!(
        out,
        "{}: page {} ({} bytes, compressed)",
        r.file, r.page, r.page_size
    )?;
    r.zip.print(out)?;
    writeln!(out, "{}", r.corruption.text())?;
    if let Some(lines) = &r.hex {
        writeln!(out, "hex dump of the block:")?;
        for line in lines {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}
