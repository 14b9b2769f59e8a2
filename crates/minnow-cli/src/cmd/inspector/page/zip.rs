//! What `minnow page` adds for a page of an InnoDB ROW_FORMAT=COMPRESSED tablespace.
//!
//! Such a page is read as stored, `KEY_BLOCK_SIZE` bytes, and not inflated into its logical
//! page. What InnoDB keeps uncompressed is decoded ([`minnow_page::zip_page`] draws the
//! layout): the FIL header (there is no trailer), the INDEX page header, which describes the
//! logical page, and the **dense page directory** at the end, one 2-byte entry per record
//! with its owned and deleted flags. Between them lies the zlib stream that starts at byte 94;
//! its length is found by running it through an inflater and counting the bytes consumed up
//! to its end marker (the inflated bytes, index field information and record data, are
//! discarded). After the stream comes the modification log, records appended since the page
//! was last compressed. The checksum is the compressed-page one
//! ([`minnow_page::checksum::zip`]): one field at offset 0.

use std::io::Write;

use miniz_oxide::inflate::stream::{InflateState, inflate};
use miniz_oxide::{DataFormat, MZFlush, MZStatus};
use minnow_page::checksum::ChecksumPolicy;
use minnow_page::index::IndexHeader;
use minnow_page::zip_page::{self, DenseDirectory};
use serde::Serialize;

use crate::cli::Status;
use crate::innodb_rec::Records;
use crate::output::CliError;
use crate::report;
use crate::space::Space;

/// Inflated bytes after which the stream is given up on: a compressed page inflates to about
/// one logical page, so 1 MiB means the stream is not what InnoDB wrote.
const INFLATE_LIMIT: usize = 1 << 20;

/// The compressed parts of one page of an InnoDB compressed tablespace.
#[derive(Debug, Serialize)]
pub struct ZipPageInfo {
    /// The physical page size in bytes (`KEY_BLOCK_SIZE`).
    pub zip_size: usize,
    /// The logical page size (from the FSP flags), which the INDEX header's offsets refer to.
    pub logical_page_size: usize,
    /// The zlib stream (INDEX pages only).
    pub stream: Option<StreamInfo>,
    /// The dense page directory (INDEX pages only), absent when the header's counts do not
    /// fit the page (`problems` says why): its fields as [`DenseDirectory`] names them.
    #[serde(serialize_with = "dense_json")]
    pub dense_directory: Option<DenseDirectory>,
    /// What does not add up.
    pub problems: Vec<String>,
}

/// Where the compressed stream lies.
#[derive(Debug, Serialize)]
pub struct StreamInfo {
    /// Its first byte (94, right after the page header).
    pub start: usize,
    /// Its length up to and including the zlib end marker, if it inflates.
    pub length: Option<usize>,
    /// The bytes it inflates to (index field information and record data).
    pub inflated_bytes: Option<usize>,
}

/// Writes the dense directory as a JSON object of its fields.
fn dense_json<S: serde::Serializer>(
    dir: &Option<DenseDirectory>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeStruct;
    let Some(d) = dir else {
        return serializer.serialize_none();
    };
    let mut s = serializer.serialize_struct("DenseDirectory", 6)?;
    s.serialize_field("slots", &d.slots)?;
    s.serialize_field("user_slots", &d.user_slots)?;
    s.serialize_field("owned", &d.owned)?;
    s.serialize_field("deleted", &d.deleted)?;
    s.serialize_field("start", &d.start)?;
    s.serialize_field("offsets", &d.offsets)?;
    s.end()
}

/// `minnow page` for page `page_no` of an InnoDB compressed tablespace: prints the report
/// (`columns`: whether `--columns` asked for records, which are not decoded here).
pub fn run(
    space: &Space,
    page_no: u64,
    policy: ChecksumPolicy,
    hex: bool,
    columns: bool,
    json: bool,
    out: &mut dyn Write,
) -> Result<Status, CliError> {
    let page = space.read_block(page_no)?;
    let mut report = super::decode(space, page_no, &page, policy, hex);
    report.records = columns.then(|| Records {
        records: Vec::new(),
        problems: vec!["--columns: the records of a compressed page are not decoded".into()],
    });
    let problems = report
        .zip_page
        .as_ref()
        .is_some_and(|z| !z.problems.is_empty());
    report::emit(out, json, &report, super::print_text)?;
    Ok(if report.checksum.corruption.is_some() || problems {
        Status::Corrupt
    } else {
        Status::Clean
    })
}

/// Decodes the compressed parts of `page` (the physical page); `index` is its INDEX header,
/// if it is an INDEX page.
pub fn decode(page: &[u8], logical_page_size: usize, index: Option<&IndexHeader>) -> ZipPageInfo {
    let mut info = ZipPageInfo {
        zip_size: page.len(),
        logical_page_size,
        stream: None,
        dense_directory: None,
        problems: Vec::new(),
    };
    let Some(ih) = index else {
        return info;
    };
    let mut end = page.len();
    match zip_page::dense_directory(page, ih) {
        Ok(d) => {
            end = d.start;
            if d.owned + 2 != usize::from(ih.n_dir_slots) {
                info.problems.push(format!(
                    "{} dense-directory entries are owned, but PAGE_N_DIR_SLOTS {} means {}",
                    d.owned,
                    ih.n_dir_slots,
                    usize::from(ih.n_dir_slots).saturating_sub(2)
                ));
            }
            info.dense_directory = Some(d);
        }
        Err(e) => info.problems.push(format!("dense directory: {e}")),
    }
    let stream = page.get(zip_page::STREAM_START..end).unwrap_or_default();
    let (length, inflated_bytes) = match stream_length(stream) {
        Ok((len, out)) => (Some(len), Some(out)),
        Err(why) => {
            info.problems.push(format!(
                "the stream at byte {}: {why}",
                zip_page::STREAM_START
            ));
            (None, None)
        }
    };
    info.stream = Some(StreamInfo {
        start: zip_page::STREAM_START,
        length,
        inflated_bytes,
    });
    info
}

/// Inflates the zlib stream at the start of `bytes` and returns how many bytes it takes up to
/// its end marker and how many it inflates to.
fn stream_length(bytes: &[u8]) -> Result<(usize, usize), String> {
    let mut state = InflateState::new_boxed(DataFormat::Zlib);
    let mut scratch = vec![0u8; 32 * 1024];
    let (mut consumed, mut produced) = (0usize, 0usize);
    loop {
        let input = bytes.get(consumed..).unwrap_or_default();
        let r = inflate(&mut state, input, &mut scratch, MZFlush::None);
        consumed += r.bytes_consumed;
        produced += r.bytes_written;
        match r.status {
            Ok(MZStatus::StreamEnd) => return Ok((consumed, produced)),
            Ok(_) if r.bytes_consumed == 0 && r.bytes_written == 0 => {
                return Err(format!(
                    "no end marker in the {} bytes before the dense directory",
                    bytes.len()
                ));
            }
            Ok(_) => {}
            Err(e) => return Err(format!("does not inflate ({e:?}) after {consumed} bytes")),
        }
        if produced > INFLATE_LIMIT {
            return Err(format!("inflates past {INFLATE_LIMIT} bytes"));
        }
    }
}

/// The text lines of the report.
pub fn print(info: &ZipPageInfo, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "ROW_FORMAT=COMPRESSED: {} bytes as stored (logical pages of {} bytes); no FIL trailer",
        info.zip_size, info.logical_page_size
    )?;
    if let Some(s) = &info.stream {
        match (s.length, s.inflated_bytes) {
            (Some(len), Some(out_bytes)) => writeln!(
                out,
                "  zlib stream   @{}  {len} bytes (to byte {}), inflating to {out_bytes} bytes; \
                 the modification log follows",
                s.start,
                s.start + len
            )?,
            _ => writeln!(out, "  zlib stream   @{}  does not inflate", s.start)?,
        }
    }
    if let Some(d) = &info.dense_directory {
        writeln!(
            out,
            "  dense directory @{}  {} entries ({} records, {} free), {} owned, {} deleted",
            d.start,
            d.slots,
            d.user_slots,
            d.slots - d.user_slots,
            d.owned,
            d.deleted
        )?;
        for chunk in d.offsets.chunks(12) {
            let slots: Vec<String> = chunk.iter().map(|s| format!("{s:>5}")).collect();
            writeln!(out, "   {}", slots.join(" "))?;
        }
    }
    for p in &info.problems {
        writeln!(out, "  PROBLEM: {p}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_end_of_a_zlib_stream_followed_by_other_bytes() {
        let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(6));
        enc.write_all(&[7u8; 3000]).unwrap();
        let mut bytes = enc.finish().unwrap();
        let len = bytes.len();
        bytes.extend_from_slice(&[0x55; 100]);
        assert_eq!(stream_length(&bytes), Ok((len, 3000)));
        assert!(stream_length(&bytes[..len - 3]).is_err());
        assert!(stream_length(&[0xFF; 64]).is_err());
    }
}
