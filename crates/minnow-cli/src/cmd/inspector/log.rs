//! `minnow log DIR`: the redo log's header, checkpoints and records.
//!
//! Reads `DIR/ib_logfile0` (FORMAT.md §6) read-only, the way recovery would but without writing
//! anything: the file header block, both checkpoint slots (which is valid, which is newest), then
//! the data blocks forward from the newest checkpoint until the first block that fails its CRC,
//! carries another lap's LSN, or is not full. The blocks and groups are read with
//! [`minnow_redo::scan::LogScan`], the same walk recovery makes. The bytes read are cut into groups (one per
//! mini-transaction) and each group's records are listed: type, space and page, offset and
//! length within the page, LSN. `--limit N` bounds how many records are listed (the summary
//! always covers all of them).
//!
//! After the end, the blocks that are still valid at their position are counted: leftovers of a
//! torn last write (recovery erases them), or, if one of them recorded a durable LSN beyond the
//! end, proof of damage in the middle of the log. An incomplete last group (a torn tail) is
//! reported with its size; it is normal after a crash and not a problem.
//!
//! Exit 1 when the header or both checkpoints are unreadable, the file is shorter than its
//! data area, a complete group does not decode, or the log is corrupt before its durable end.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;

use minnow_io::{Backend, FlushMethod, OpenOptions, SyncBackend};
use minnow_redo::block::BLOCK_SIZE;
use minnow_redo::format::{Checkpoint, DATA_AREA, FileHeader, checkpoint_offset};
use minnow_redo::record::{GROUP_HEADER, Record};
use minnow_redo::scan::{LogScan, ScanError};
use serde::Serialize;

use crate::cli::Status;
use crate::output::CliError;
use crate::report::{self, Outcome};
use crate::space::SpaceError;

/// Records listed when `--limit` is not given.
pub const DEFAULT_LIMIT: usize = 1000;

/// The file header.
#[derive(Debug, Serialize)]
pub struct HeaderReport {
    /// Bytes in the circular data area.
    pub capacity: u64,
    /// The LSN the log started at.
    pub start_lsn: u64,
    /// Who created the file.
    pub creator: String,
}

/// One checkpoint slot.
#[derive(Debug, Serialize)]
pub struct SlotReport {
    /// 0 or 1.
    pub slot: usize,
    /// The checkpoint number as stored (meaningful only when valid).
    pub number: u64,
    /// The checkpoint LSN as stored.
    pub lsn: u64,
    /// CRC holds, LSN non-zero and at a data position.
    pub valid: bool,
    /// This is the slot recovery would start from.
    pub newest: bool,
}

/// One redo record.
#[derive(Debug, Serialize)]
pub struct RecordReport {
    /// LSN of the record's first byte.
    pub lsn: u64,
    /// LSN of the first byte of its group.
    pub group_lsn: u64,
    /// `write`, `memset` or `init_page`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Space id.
    pub space: u32,
    /// Page number.
    pub page: u32,
    /// Offset within the page (0 for `init_page`).
    pub offset: u16,
    /// Bytes of the page changed (the page size is unknown here: 0 for `init_page`).
    pub len: usize,
    /// Encoded length of the record in the log.
    pub encoded_len: usize,
}

/// Totals over every record from the checkpoint to the end.
#[derive(Debug, Default, Serialize)]
pub struct Summary {
    /// Complete groups (mini-transactions).
    pub groups: u64,
    /// Records in them.
    pub records: u64,
    /// Records by type.
    pub by_type: BTreeMap<&'static str, u64>,
    /// Distinct pages the records touch.
    pub pages_touched: usize,
    /// Records listed (bounded by `--limit`).
    pub listed: usize,
}

/// The whole report.
#[derive(Debug, Serialize)]
pub struct LogReport {
    /// The log file.
    pub file: String,
    /// Its length in bytes.
    pub file_len: u64,
    /// The outcome: true when nothing is wrong (a torn tail is not wrong).
    #[serde(flatten)]
    pub outcome: Outcome,
    /// The header, if it decodes.
    pub header: Option<HeaderReport>,
    /// Both checkpoint slots (absent if the file is too short to hold them).
    pub checkpoints: Vec<SlotReport>,
    /// Where the scan started (the newest checkpoint's LSN).
    pub scan_from: Option<u64>,
    /// Where the valid log ends (the end of the last valid data byte).
    pub valid_end: Option<u64>,
    /// The end of the last complete group: where new appends would continue.
    pub end: Option<u64>,
    /// Why the scan stopped.
    pub end_reason: Option<String>,
    /// Data bytes of an incomplete last group (a torn tail, dropped by recovery).
    pub torn_tail_bytes: u64,
    /// Valid blocks after the end (leftovers of a torn write; recovery zeroes them).
    pub leftover_blocks: u64,
    /// The records, in LSN order, at most `--limit`.
    pub records: Vec<RecordReport>,
    /// Totals.
    pub summary: Summary,
    /// What is wrong, one sentence each.
    pub problems: Vec<String>,
}

/// Runs `minnow log`.
pub fn run(dir: &Path, limit: usize, json: bool, out: &mut dyn Write) -> Result<Status, CliError> {
    let (report, status) = read(dir, limit)?;
    report::emit(out, json, &report, print_text)?;
    Ok(status)
}

/// Reads `DIR/ib_logfile0` into a report (listing at most `limit` records) and its verdict;
/// `minnow status` uses it for a stopped database's LSNs.
pub fn read(dir: &Path, limit: usize) -> Result<(LogReport, Status), CliError> {
    let path = dir.join(minnow::inspect::REDO_LOG);
    let name = path.display().to_string();
    let open_err = |source| SpaceError::Open {
        path: name.clone(),
        source,
    };
    let file = File::open(&path).map_err(open_err)?;
    let meta = file.metadata().map_err(open_err)?;
    if meta.is_dir() {
        return Err(open_err(std::io::Error::other("is a directory")).into());
    }
    let mut report = LogReport {
        file: name.clone(),
        file_len: meta.len(),
        outcome: Outcome::default(),
        header: None,
        checkpoints: Vec::new(),
        scan_from: None,
        valid_end: None,
        end: None,
        end_reason: None,
        torn_tail_bytes: 0,
        leftover_blocks: 0,
        records: Vec::new(),
        summary: Summary::default(),
        problems: Vec::new(),
    };
    scan(&path, &file, &name, limit, &mut report)?;
    let status = if report.problems.is_empty() {
        Status::Clean
    } else {
        Status::Corrupt
    };
    report.outcome = Outcome::of(status);
    Ok((report, status))
}

/// Reads one block at `offset`; `None` if the file ends before it.
fn read_block(
    file: &File,
    name: &str,
    offset: u64,
    len: u64,
) -> Result<Option<[u8; BLOCK_SIZE]>, SpaceError> {
    if offset.saturating_add(BLOCK_SIZE as u64) > len {
        return Ok(None);
    }
    let mut b = [0u8; BLOCK_SIZE];
    file.read_exact_at(&mut b, offset)
        .map_err(|source| SpaceError::Read {
            path: name.to_string(),
            offset,
            len: BLOCK_SIZE,
            source,
        })?;
    Ok(Some(b))
}

fn scan(
    path: &Path,
    file: &File,
    name: &str,
    limit: usize,
    r: &mut LogReport,
) -> Result<(), CliError> {
    let len = r.file_len;
    let Some(head) = read_block(file, name, 0, len)? else {
        r.problems.push(format!(
            "the file is {len} bytes, shorter than the {BLOCK_SIZE}-byte header block"
        ));
        return Ok(());
    };
    let header = match FileHeader::decode(&head) {
        Ok(h) => h,
        Err(e) => {
            r.problems.push(format!("header block: {e}"));
            return Ok(());
        }
    };
    let capacity = header.capacity;
    r.header = Some(HeaderReport {
        capacity,
        start_lsn: header.start_lsn.0,
        creator: header.creator.clone(),
    });
    let mut valid = Vec::new();
    for slot in 0..2 {
        let Some(b) = read_block(file, name, checkpoint_offset(slot), len)? else {
            r.problems
                .push(format!("the file ends before checkpoint slot {slot}"));
            continue;
        };
        let decoded = Checkpoint::decode(&b);
        let raw = |at: usize| {
            let mut w = [0u8; 8];
            if let Some(s) = b.get(at..at + 8) {
                w.copy_from_slice(s);
            }
            u64::from_be_bytes(w)
        };
        r.checkpoints.push(SlotReport {
            slot,
            number: raw(0),
            lsn: raw(8),
            valid: decoded.is_some(),
            newest: false,
        });
        valid.extend(decoded.map(|c| (slot, c)));
    }
    let Some((newest_slot, checkpoint)) = valid.into_iter().max_by_key(|(_, c)| c.no) else {
        r.problems
            .push("neither checkpoint slot is valid: recovery cannot start".to_string());
        return Ok(());
    };
    for s in &mut r.checkpoints {
        s.newest = s.slot == newest_slot;
    }
    // A file shorter than its data area is normal: the log grows as redo reaches it (FORMAT.md
    // §6), a step at a time, and the scan below ends at the end of the file, as recovery's
    // does. A length between steps means the file was cut.
    if !minnow_redo::format::is_grown_length(capacity, len) {
        r.problems.push(format!(
            "the file is {len} bytes: the log grows to 4096 bytes plus a multiple of {} (at \
             most {}), so it was cut short",
            minnow_redo::format::growth_step(capacity),
            DATA_AREA.saturating_add(capacity)
        ));
    }
    // The blocks and groups from the checkpoint on, read as recovery reads them
    // (`minnow_redo::scan`), without writing anything.
    let io = SyncBackend::new()
        .open(path, &OpenOptions::new(FlushMethod::Fsync).read_only(true))
        .map_err(|e| ScanError::Log(e.into()))?;
    let scan = match LogScan::new(io.as_ref(), &header, checkpoint.lsn) {
        Ok(scan) => scan,
        Err(e @ ScanError::Implausible { .. }) => {
            r.problems.push(e.to_string());
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    r.scan_from = Some(checkpoint.lsn.0);
    let found = scan.find_end()?;
    let valid_end = found.valid_end;
    r.valid_end = Some(valid_end.0);
    r.end_reason = Some(found.stop.to_string());
    // Blocks after the end: leftovers of a torn write, or proof of damage.
    for d in &found.damage {
        r.problems.push(format!(
            "the log is corrupt at LSN {valid_end}: the block at LSN {} was written after LSN \
             {} was durable, so the damage is not a torn tail",
            d.later, d.durable
        ));
    }
    r.leftover_blocks = found.leftover_blocks;

    // The complete groups and their records.
    let mut pages = BTreeSet::new();
    let mut groups = scan.groups(&found);
    let mut bad_at = None;
    for group in groups.by_ref() {
        let group = match group {
            Ok(g) => g,
            Err(ScanError::BadGroup { at, source, .. }) => {
                r.problems
                    .push(format!("the group at LSN {at} does not decode: {source}"));
                bad_at = Some(at);
                break;
            }
            Err(e) => return Err(e.into()),
        };
        let at = group.start;
        r.summary.groups += 1;
        let mut off = GROUP_HEADER;
        for rec in &group.records {
            let mut enc = Vec::new();
            rec.encode(&mut enc);
            let (kind, offset, changed) = match rec {
                Record::Write { offset, data, .. } => ("write", *offset, data.len()),
                Record::Memset { offset, len: n, .. } => ("memset", *offset, usize::from(*n)),
                Record::InitPage { .. } => ("init_page", 0, 0),
            };
            let page = rec.page();
            pages.insert((page.space, page.page_no));
            r.summary.records += 1;
            *r.summary.by_type.entry(kind).or_insert(0) += 1;
            if r.records.len() < limit {
                r.records.push(RecordReport {
                    lsn: at.advance(off as u64).0,
                    group_lsn: at.0,
                    kind,
                    space: page.space,
                    page: page.page_no,
                    offset,
                    len: changed,
                    encoded_len: enc.len(),
                });
            }
            off += enc.len();
        }
    }
    let at = bad_at.unwrap_or(groups.end());
    r.end = Some(at.0);
    r.torn_tail_bytes = at.data_bytes_until(valid_end.max(at));
    r.summary.pages_touched = pages.len();
    r.summary.listed = r.records.len();
    Ok(())
}

fn print_text(r: &LogReport, out: &mut dyn Write) -> Result<(), CliError> {
    writeln!(out, "{}: {} bytes", r.file, r.file_len)?;
    if let Some(h) = &r.header {
        writeln!(
            out,
            "header: capacity {} bytes, start LSN {}, creator {:?}",
            h.capacity, h.start_lsn, h.creator
        )?;
    }
    for s in &r.checkpoints {
        writeln!(
            out,
            "checkpoint slot {}: number {}, LSN {}, {}{}",
            s.slot,
            s.number,
            s.lsn,
            if s.valid { "valid" } else { "INVALID" },
            if s.newest {
                " (newest: recovery starts here)"
            } else {
                ""
            }
        )?;
    }
    if let (Some(from), Some(end)) = (r.scan_from, r.end) {
        writeln!(out, "records from LSN {from} to LSN {end}:")?;
        let mut group = None;
        for rec in &r.records {
            if group != Some(rec.group_lsn) {
                writeln!(out, "  group at LSN {}", rec.group_lsn)?;
                group = Some(rec.group_lsn);
            }
            writeln!(
                out,
                "    LSN {:>10}  {:<9}  space {} page {:<6} offset {:<5} len {:<5} ({} bytes)",
                rec.lsn, rec.kind, rec.space, rec.page, rec.offset, rec.len, rec.encoded_len
            )?;
        }
        if r.summary.records > r.records.len() as u64 {
            writeln!(
                out,
                "  ... {} more records (raise --limit)",
                r.summary.records - r.records.len() as u64
            )?;
        }
        let types: Vec<String> = r
            .summary
            .by_type
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        writeln!(
            out,
            "summary: {} groups, {} records ({}), {} pages touched",
            r.summary.groups,
            r.summary.records,
            if types.is_empty() {
                "none".to_string()
            } else {
                types.join(", ")
            },
            r.summary.pages_touched
        )?;
        if let Some(reason) = &r.end_reason {
            writeln!(out, "end: {reason}")?;
        }
        if r.torn_tail_bytes > 0 || r.leftover_blocks > 0 {
            writeln!(
                out,
                "torn tail: {} bytes of an incomplete last group, {} leftover blocks \
                 (recovery drops and erases them)",
                r.torn_tail_bytes, r.leftover_blocks
            )?;
        }
    }
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
