//! `minnow dblwr DIR`: the doublewrite segments, slot by slot, against the data file.
//!
//! Every `DIR/dblwr.<n>` file (FORMAT.md §7) is read read-only. For each: the header (format,
//! page size, capacity, whether page copies follow, sequence number of the last batch, page
//! count) and whether it is valid; then each used slot: the page id, LSN and slot checksum the
//! header recorded, whether the copy matches its slot checksum (a CRC-32C over all of its bytes,
//! which catches damage the page's own checksum does not cover), whether the copy verifies
//! (slot checksum, page checksum, not all zero, its own FIL header naming that page and LSN),
//! and how it compares with the page in the data file (`ibdata1`, space 0):
//!
//! - `same_lsn`: the batch reached the data file (the normal state after a completed flush);
//! - `data_newer`: the page was flushed again later through another batch;
//! - `data_older`: the in-place write never happened (the crash came between the doublewrite
//!   sync and the in-place write);
//! - `data_torn`: the data page fails its checksum; `data_empty`/`data_missing`: all zero or past
//!   the end of the file; `unknown_space`: a space id other than 0.
//!
//! and what recovery would do with it (`restore`, `keep`, `left_for_redo`, `unrepairable`),
//! following `minnow_dblwr::recover`'s rules for that slot alone (recovery also merges slots
//! that name the same page across segments, keeping the newest copy).
//!
//! Exit 1 when a header does not decode (after a crash this may be a batch that never finished
//! its sync, which recovery ignores; it is still reported), a copy in a valid batch fails to
//! verify, or a torn data page has no valid copy.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;

use minnow_dblwr::format::{self, SegmentHeader};
use minnow_page::checksum::{self, Verdict};
use minnow_page::fil::FilHeader;
use serde::Serialize;

use crate::cli::{ReadOpts, Status};
use crate::output::CliError;
use crate::report::{self, Outcome};
use crate::space::{Space, SpaceError};

/// One used slot.
#[derive(Debug, Serialize)]
pub struct SlotReport {
    /// The slot number.
    pub slot: usize,
    /// Space id recorded in the header.
    pub space: u32,
    /// Page number recorded in the header.
    pub page: u32,
    /// Page LSN recorded in the header.
    pub lsn: u64,
    /// The slot checksum recorded in the header: CRC-32C of the whole stamped page.
    pub slot_checksum: u32,
    /// Whether the copy's bytes match the slot checksum (absent in detect_only segments, which
    /// hold no copies, and when the slot lies beyond the end of the file).
    pub slot_checksum_ok: Option<bool>,
    /// Whether the copy verifies (absent in detect_only segments, which hold no copies).
    pub copy_valid: Option<bool>,
    /// Why the copy does not verify.
    pub copy_problem: Option<String>,
    /// The data page's LSN, when it could be read and verifies.
    pub data_lsn: Option<u64>,
    /// `same_lsn`, `data_newer`, `data_older`, `data_torn`, `data_empty`, `data_missing` or
    /// `unknown_space`.
    pub data: &'static str,
    /// Why the data page is torn.
    pub data_problem: Option<String>,
    /// What recovery would do: `restore`, `keep`, `left_for_redo` or `unrepairable`.
    pub recovery: &'static str,
}

/// One segment file.
#[derive(Debug, Serialize)]
pub struct SegmentReport {
    /// The file.
    pub file: String,
    /// The segment index from the file name.
    pub segment: usize,
    /// The file's length.
    pub file_len: u64,
    /// Whether the header decodes and checks out.
    pub valid: bool,
    /// Why not.
    pub header_problem: Option<String>,
    /// For an invalid header: whether recovery would silently ignore it (a batch that never
    /// completed its sync) rather than stop.
    pub ignored_by_recovery: Option<bool>,
    /// Page size of the copies.
    pub page_size: Option<usize>,
    /// Slots in the file.
    pub capacity: Option<usize>,
    /// Whether copies follow the header (false in detect_only).
    pub copies: Option<bool>,
    /// The segment index recorded in the header.
    pub header_segment: Option<u32>,
    /// The batch sequence number (0: no batch yet).
    pub sequence: Option<u64>,
    /// Pages in the last batch.
    pub page_count: Option<usize>,
    /// The used slots.
    pub slots: Vec<SlotReport>,
}

/// The whole report.
#[derive(Debug, Serialize)]
pub struct DblwrReport {
    /// The outcome: true when nothing is wrong.
    #[serde(flatten)]
    pub outcome: Outcome,
    /// The data file the pages are compared with.
    pub data_file: String,
    /// Why the data file could not be read (every comparison is then `unknown_space`).
    pub data_file_error: Option<String>,
    /// The segments, by index.
    pub segments: Vec<SegmentReport>,
    /// Slots whose page recovery would restore from the copy.
    pub would_restore: usize,
    /// What is wrong, one sentence each.
    pub problems: Vec<String>,
}

/// Runs `minnow dblwr`.
pub fn run(
    dir: &Path,
    read: &ReadOpts,
    json: bool,
    out: &mut dyn Write,
) -> Result<Status, CliError> {
    let files = segment_files(dir)?;
    let data_path = dir.join(minnow::inspect::SYSTEM_TABLESPACE);
    let (data, data_file_error) = match Space::open(&data_path, read.page_size) {
        Ok(s) => (Some(s), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let mut report = DblwrReport {
        outcome: Outcome::default(),
        data_file: data_path.display().to_string(),
        data_file_error,
        segments: Vec::new(),
        would_restore: 0,
        problems: Vec::new(),
    };
    if let Some(e) = &report.data_file_error {
        report
            .problems
            .push(format!("the data file cannot be read: {e}"));
    }
    if files.is_empty() {
        report.problems.push(format!(
            "{}: no dblwr.<n> segment files (doublewrite off, or not a minnow directory)",
            dir.display()
        ));
    }
    for (segment, path) in files {
        let seg = segment_report(&path, segment, data.as_ref(), read, &mut report.problems)?;
        report.would_restore += seg.slots.iter().filter(|s| s.recovery == "restore").count();
        report.segments.push(seg);
    }
    let status = if report.problems.is_empty() {
        Status::Clean
    } else {
        Status::Corrupt
    };
    report.outcome = Outcome::of(status);
    report::emit(out, json, &report, print_text)?;
    Ok(status)
}

/// The `dblwr.<n>` files of `dir`, by index.
fn segment_files(dir: &Path) -> Result<Vec<(usize, std::path::PathBuf)>, CliError> {
    let open_err = |source| SpaceError::Open {
        path: dir.display().to_string(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(open_err)? {
        let entry = entry.map_err(open_err)?;
        let name = entry.file_name();
        let Some(digits) = name.to_str().and_then(|n| n.strip_prefix("dblwr.")) else {
            continue;
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(n) = digits.parse::<usize>() {
            files.push((n, entry.path()));
        }
    }
    files.sort();
    Ok(files)
}

fn read_at(file: &File, name: &str, buf: &mut [u8], offset: u64) -> Result<(), SpaceError> {
    file.read_exact_at(buf, offset)
        .map_err(|source| SpaceError::Read {
            path: name.to_string(),
            offset,
            len: buf.len(),
            source,
        })
}

fn segment_report(
    path: &Path,
    segment: usize,
    data: Option<&Space>,
    read: &ReadOpts,
    problems: &mut Vec<String>,
) -> Result<SegmentReport, CliError> {
    let name = path.display().to_string();
    let open_err = |source| SpaceError::Open {
        path: name.clone(),
        source,
    };
    let file = File::open(path).map_err(open_err)?;
    let len = file.metadata().map_err(open_err)?.len();
    let want = format::header_len(format::MAX_CAPACITY) as u64;
    let mut head = vec![0u8; usize::try_from(len.min(want)).unwrap_or(0)];
    read_at(&file, &name, &mut head, 0)?;
    let mut rep = SegmentReport {
        file: name.clone(),
        segment,
        file_len: len,
        valid: false,
        header_problem: None,
        ignored_by_recovery: None,
        page_size: None,
        capacity: None,
        copies: None,
        header_segment: None,
        sequence: None,
        page_count: None,
        slots: Vec::new(),
    };
    let header = match SegmentHeader::decode(&head) {
        Ok(h) => h,
        Err(e) => {
            problems.push(format!("{name}: header: {e}"));
            rep.header_problem = Some(e.to_string());
            rep.ignored_by_recovery = Some(e.is_incomplete_batch());
            return Ok(rep);
        }
    };
    rep.valid = true;
    rep.page_size = Some(header.page_size.bytes());
    rep.capacity = Some(header.capacity);
    rep.copies = Some(header.copies);
    rep.header_segment = Some(header.segment);
    rep.sequence = Some(header.sequence);
    rep.page_count = Some(header.entries.len());
    let psz = header.page_size.bytes();
    let mut copy = vec![0u8; psz];
    let mut data_buf = vec![0u8; psz];
    for (slot, entry) in header.entries.iter().enumerate() {
        // The copy.
        let (copy_valid, copy_problem, slot_checksum_ok) = if header.copies {
            let off = format::slot_offset(header.page_size, header.capacity, slot);
            if off.saturating_add(psz as u64) > len {
                let problem = "the slot lies beyond the end of the segment file".to_string();
                (Some(false), Some(problem), None)
            } else {
                read_at(&file, &name, &mut copy, off)?;
                let slot_ok = entry.check_copy(&copy);
                let problem = match slot_ok {
                    Err(e) => Some(format!("the copy is damaged: {e}")),
                    Ok(()) => check_copy(&copy, entry, data, read),
                };
                (Some(problem.is_none()), problem, Some(slot_ok.is_ok()))
            }
        } else {
            (None, None, None)
        };
        if let Some(p) = &copy_problem {
            problems.push(format!(
                "{name}: slot {slot} (page {}): the copy does not verify: {p}",
                entry.page
            ));
        }
        // The data page.
        let (state, data_lsn, data_problem) = match data {
            Some(space) if entry.page.space == minnow::inspect::SYSTEM_SPACE_ID => {
                classify_data(space, entry.page.page_no, read, &mut data_buf)?
            }
            _ => ("unknown_space", None, None),
        };
        let copy_ok = copy_valid == Some(true);
        let data_label = match (state, data_lsn) {
            ("intact", Some(l)) if l == entry.lsn => "same_lsn",
            ("intact", Some(l)) if l > entry.lsn => "data_newer",
            ("intact", _) => "data_older",
            (other, _) => other,
        };
        let recovery = match data_label {
            "data_torn" if copy_ok => "restore",
            "data_torn" => "unrepairable",
            "data_empty" | "data_missing" if copy_ok => "restore",
            "data_empty" | "data_missing" => "left_for_redo",
            "same_lsn" if copy_ok && copy != data_buf => "restore",
            "data_older" if copy_ok => "restore",
            "data_older" => "left_for_redo",
            "unknown_space" => "unknown_space",
            _ => "keep",
        };
        if recovery == "unrepairable" {
            problems.push(format!(
                "{name}: slot {slot}: data page {} is torn and has no valid copy",
                entry.page
            ));
        }
        rep.slots.push(SlotReport {
            slot,
            space: entry.page.space,
            page: entry.page.page_no,
            lsn: entry.lsn,
            slot_checksum: entry.crc,
            slot_checksum_ok,
            copy_valid,
            copy_problem,
            data_lsn,
            data: data_label,
            data_problem,
            recovery,
        });
    }
    Ok(rep)
}

/// Checks a copy that matched its slot checksum against its slot entry: page checksum, not all
/// zero, FIL header names the page.
fn check_copy(
    copy: &[u8],
    entry: &format::SlotEntry,
    data: Option<&Space>,
    read: &ReadOpts,
) -> Option<String> {
    let policy = data.map_or(read.checksum, |s| s.policy(read.checksum));
    match checksum::verify(copy, policy) {
        Ok(Verdict::Valid(_) | Verdict::NotChecked) => {}
        Ok(Verdict::Empty) => return Some("the copy is all zeros".to_string()),
        Err(e) => return Some(format!("checksum: {e}")),
    }
    match FilHeader::read(copy) {
        Ok(h) if h.space_id == entry.page.space && h.page_no == entry.page.page_no => (h.lsn
            != entry.lsn)
            .then(|| format!("the copy is at LSN {}, the entry says {}", h.lsn, entry.lsn)),
        Ok(h) => Some(format!(
            "the copy is page {}:{}, the entry says {}",
            h.space_id, h.page_no, entry.page
        )),
        Err(e) => Some(e.to_string()),
    }
}

/// Reads data page `page_no` and classifies it: (`intact`/`data_torn`/`data_empty`/
/// `data_missing`, its LSN if intact, why torn).
fn classify_data(
    space: &Space,
    page_no: u32,
    read: &ReadOpts,
    buf: &mut Vec<u8>,
) -> Result<(&'static str, Option<u64>, Option<String>), CliError> {
    let psz = space.page_size().bytes();
    buf.resize(psz, 0);
    if u64::from(page_no) >= space.pages() {
        buf.fill(0);
        return Ok(("data_missing", None, None));
    }
    space.read_page(u64::from(page_no), buf)?;
    if buf.iter().all(|&b| b == 0) {
        return Ok(("data_empty", None, None));
    }
    match checksum::verify(buf, space.policy(read.checksum)) {
        Ok(Verdict::Empty) => Ok(("data_empty", None, None)),
        Ok(_) => match FilHeader::read(buf) {
            Ok(h) if h.page_no == page_no && h.space_id == minnow::inspect::SYSTEM_SPACE_ID => {
                Ok(("intact", Some(h.lsn), None))
            }
            Ok(h) => Ok((
                "data_torn",
                None,
                Some(format!(
                    "it carries page id {}:{} (misdirected write)",
                    h.space_id, h.page_no
                )),
            )),
            Err(e) => Ok(("data_torn", None, Some(e.to_string()))),
        },
        Err(e) => Ok(("data_torn", None, Some(e.to_string()))),
    }
}

fn print_text(r: &DblwrReport, out: &mut dyn Write) -> Result<(), CliError> {
    writeln!(out, "data file: {}", r.data_file)?;
    if let Some(e) = &r.data_file_error {
        writeln!(out, "  cannot read it: {e}")?;
    }
    for s in &r.segments {
        write!(out, "{} ({} bytes): ", s.file, s.file_len)?;
        if !s.valid {
            writeln!(
                out,
                "INVALID header: {}{}",
                s.header_problem.as_deref().unwrap_or("?"),
                if s.ignored_by_recovery == Some(true) {
                    " (recovery ignores it: a batch that never finished its sync)"
                } else {
                    ""
                }
            )?;
            continue;
        }
        writeln!(
            out,
            "valid, segment {}, sequence {}, {} of {} slots used, {}-byte pages, {}",
            s.header_segment.unwrap_or(0),
            s.sequence.unwrap_or(0),
            s.page_count.unwrap_or(0),
            s.capacity.unwrap_or(0),
            s.page_size.unwrap_or(0),
            if s.copies == Some(true) {
                "with page copies"
            } else {
                "no copies (detect_only)"
            }
        )?;
        for slot in &s.slots {
            let copy = match slot.copy_valid {
                Some(true) => "copy ok",
                Some(false) => "COPY BAD",
                None => "no copy",
            };
            let crc = match slot.slot_checksum_ok {
                Some(true) => "ok",
                Some(false) => "BAD",
                None => "--",
            };
            writeln!(
                out,
                "  slot {:>4}: page {}:{:<6} LSN {:>10}  slot crc {:08x} {:<3}  {:<8}  \
                 data {:<12} {}-> {}",
                slot.slot,
                slot.space,
                slot.page,
                slot.lsn,
                slot.slot_checksum,
                crc,
                copy,
                slot.data,
                slot.data_lsn
                    .map(|l| format!("(LSN {l}) "))
                    .unwrap_or_default(),
                slot.recovery
            )?;
        }
    }
    writeln!(out, "pages recovery would restore: {}", r.would_restore)?;
    for p in &r.problems {
        writeln!(out, "PROBLEM: {p}")?;
    }
    writeln!(
        out,
        "{}",
        if r.outcome.ok { "ok" } else { "problems found" }
    )?;
    Ok(())
}
