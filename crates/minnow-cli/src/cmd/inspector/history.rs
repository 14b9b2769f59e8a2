//! `minnow history DIR TABLE KEY`: the version chain of one row, newest first.
//!
//! A row's clustered record holds its newest version; its `DB_ROLL_PTR` names the undo
//! record that holds the version before, which names the one before that, and so on (the
//! `minnow::history` module docs draw it). This command follows that chain in the files of a
//! stopped or running database **without opening it** (opening runs recovery, which
//! writes), as `minnow tree` does:
//!
//! 1. the dictionary (the B-tree at [`minnow::inspect::DICT_ROOT`]) gives TABLE's columns and its
//!    clustered index's id, tablespace and root page: `ibdata1`, or for a compressed table its
//!    shared compressed tablespace (`zip8k_zlib-6.ibd`, ...), whose blocks are inflated as
//!    they are read (the undo log stays in `ibdata1`);
//! 2. KEY, the primary key's values separated by commas, is parsed by the key columns' types
//!    (integers, DOUBLE, `YYYY-MM-DD` dates, `YYYY-MM-DD HH:MM:SS[.ffffff]` datetimes, text
//!    for the byte types; a value cannot contain a comma);
//! 3. the clustered tree is descended from its root to the leaf that holds KEY, page by page
//!    (each page's checksum verified), and the record is decoded (off-page columns read from
//!    their overflow pages);
//! 4. the TRX_SYS page's undo slots say which transactions were still active;
//! 5. the chain is walked through the undo pages by `minnow::history::chain_from_record`,
//!    the same code the engine's consistent reads use to rebuild old versions.
//!
//! Every page is read with `pread` from files opened read-only; nothing is locked or written,
//! so a running database is never blocked or damaged. What the command sees is what has
//! reached the data file: on a running database, or after a crash, newer changes may still
//! be only in the buffer pool or the redo log (flushed pages of a transaction that had not
//! committed show it as **active**: the next open rolls it back).
//!
//! Exit 0 when the row is found and its chain read to its end, 1 when the table or the key
//! does not exist or a page on the way is damaged (problems found), 2 on a usage or IO error
//! (no database in DIR, a KEY that does not parse).

use std::collections::BTreeSet;
use std::io::Write;
use std::path::PathBuf;

use minnow::inspect::IndexInfo;
use minnow::{RowHistory, TableDef, Value};
use minnow_btree::node;
use minnow_btree::record::{ColumnType, Field, RecordLayout};
use minnow_btree::tree::overflow::{BLOB_DATA, BLOB_NEXT, BLOB_PART_LEN, ExternRef};
use minnow_mvcc::{MvccError, PageSource, RollPtr};
use minnow_page::PageId;
use serde::Serialize;
use serde_json::json;

use crate::cli::Status;
use crate::cmd::inspector::tree::CompressionReport;
use crate::dict::{Lookup, find_table, missing_table};
use crate::output::CliError;
use crate::reader::Reader;
use crate::report::{self, Outcome};

/// Deepest tree descended (a B-tree of 16 KiB pages never gets near it).
const MAX_LEVELS: usize = 64;

/// Options of `minnow history`.
#[derive(Debug)]
pub struct HistoryOpts {
    /// The database directory.
    pub dir: PathBuf,
    /// The table.
    pub table: String,
    /// The primary key's values, comma-separated.
    pub key: String,
}

/// A decoded roll pointer.
#[derive(Debug, Serialize)]
pub struct RollPtrReport {
    /// The insert flag (bit 55).
    pub insert: bool,
    /// The rollback segment (always 0 in minnow).
    pub rseg: u8,
    /// The undo page.
    pub page: u32,
    /// The byte offset in the undo page.
    pub offset: u16,
    /// The 56-bit value in hex.
    pub hex: String,
}

impl From<RollPtr> for RollPtrReport {
    fn from(p: RollPtr) -> RollPtrReport {
        RollPtrReport {
            insert: p.insert,
            rseg: p.rseg,
            page: p.page,
            offset: p.offset,
            hex: format!("{:#016x}", p.to_u64()),
        }
    }
}

/// One version.
#[derive(Debug, Serialize)]
pub struct VersionReport {
    /// The transaction that wrote it (0: none, a bulk-loaded row).
    pub trx_id: u64,
    /// `committed` or `active`.
    pub writer: &'static str,
    /// Its roll pointer.
    pub roll_ptr: RollPtrReport,
    /// The kind of undo record the roll pointer names: `update`, `delete_mark` (it holds the
    /// older version), `insert` (nothing older), or null (no undo record).
    pub undo: Option<&'static str>,
    /// True if this version is delete-marked.
    pub deleted: bool,
    /// The column values, by column name.
    pub values: serde_json::Map<String, serde_json::Value>,
}

/// Why the chain ends.
#[derive(Debug, Serialize)]
pub struct EndReport {
    /// `inserted`, `no_undo` or `undo_gone`.
    pub reason: &'static str,
    /// The inserting transaction (`inserted` only).
    pub trx_id: Option<u64>,
    /// The same in a sentence.
    pub detail: String,
}

/// The whole report.
#[derive(Debug, Serialize)]
pub struct HistoryReport {
    /// The outcome: true when the row was found and its chain read.
    #[serde(flatten)]
    pub outcome: Outcome,
    /// The table.
    pub table: String,
    /// The key as given.
    pub key: String,
    /// True if the table has a record with that key.
    pub found: bool,
    /// The table's columns, in order.
    pub columns: Vec<String>,
    /// The table's compression and the file its clustered index is in; null for an
    /// uncompressed table (in `ibdata1`) or a table not found.
    pub compression: Option<CompressionReport>,
    /// Transactions the TRX_SYS page lists as active.
    pub active_transactions: Vec<u64>,
    /// The versions, newest first.
    pub versions: Vec<VersionReport>,
    /// Why the chain ends (absent when there is no chain).
    pub end: Option<EndReport>,
    /// What is wrong: a missing table or key, a damaged page.
    pub problems: Vec<String>,
}

/// Runs `minnow history`.
pub fn run(opts: &HistoryOpts, json: bool, out: &mut dyn Write) -> Result<Status, CliError> {
    let mut reader = Reader::open(&opts.dir)?;
    let mut report = HistoryReport {
        outcome: Outcome::of(Status::Corrupt),
        table: opts.table.clone(),
        key: opts.key.clone(),
        found: false,
        columns: Vec::new(),
        compression: None,
        active_transactions: Vec::new(),
        versions: Vec::new(),
        end: None,
        problems: Vec::new(),
    };
    match find_table(&reader, &opts.table)? {
        Lookup::Missing { tables, problems } => {
            report
                .problems
                .push(missing_table(&opts.table, &tables, &problems));
        }
        Lookup::Found(def, indexes) => {
            report.columns = def.columns.iter().map(|c| c.name.clone()).collect();
            report.compression = def.compression.map(CompressionReport::new);
            let clustered = indexes
                .into_iter()
                .next()
                .ok_or_else(|| CliError::Database(format!("table `{}`: no index", def.name)))?;
            reader.follow(&opts.dir, &def, &clustered)?;
            let key = parse_key(&def, &clustered, &opts.key)?;
            if let Err(p) = chain(&reader, &def, &clustered, key, &mut report) {
                report.problems.push(p);
            }
        }
    }
    let status = if report.found && report.problems.is_empty() {
        Status::Clean
    } else {
        Status::Corrupt
    };
    report.outcome = Outcome::of(status);
    report::emit(out, json, &report, print_text)?;
    Ok(status)
}

/// Finds the record and walks its chain into `report`; the error is a problem to report.
fn chain(
    reader: &Reader,
    def: &TableDef,
    clustered: &IndexInfo,
    key: Vec<Value>,
    report: &mut HistoryReport,
) -> Result<(), String> {
    let Some((record, deleted)) = find_record(reader, clustered, &key)? else {
        report.problems.push(format!(
            "table `{}` has no row with primary key ({}) = ({}) in the data file",
            def.name,
            clustered.key_columns.join(", "),
            key.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
        return Ok(());
    };
    report.found = true;
    let trx_sys = PageId::new(
        minnow::inspect::SYSTEM_SPACE_ID,
        minnow::inspect::TRX_SYS_PAGE,
    );
    let active: BTreeSet<u64> = minnow_mvcc::active_logs(reader, trx_sys)
        .map_err(|e| format!("the TRX_SYS page: {e}"))?
        .into_iter()
        .map(|(_, h)| h.trx_id)
        .collect();
    report.active_transactions = active.iter().copied().collect();
    let history =
        minnow::history::chain_from_record(reader, def, clustered, record, deleted, &|id| {
            active.contains(&id)
        })
        .map_err(|e| format!("the version chain: {e}"))?;
    fill(report, def, &history);
    Ok(())
}

fn fill(report: &mut HistoryReport, def: &TableDef, h: &RowHistory) {
    for v in &h.versions {
        let values = def
            .columns
            .iter()
            .zip(&v.values)
            .map(|(c, x)| (c.name.clone(), json_value(x)))
            .collect();
        report.versions.push(VersionReport {
            trx_id: v.trx_id,
            writer: v.writer.name(),
            roll_ptr: v.roll_ptr.into(),
            undo: v.undo.map(minnow::history::kind_name),
            deleted: v.deleted,
            values,
        });
    }
    report.end = Some(EndReport {
        reason: h.end.reason(),
        trx_id: h.end.trx_id(),
        detail: h.end.to_string(),
    });
}

/// A value as JSON: numbers as numbers, UTF-8 text as strings, other bytes as `0x` hex.
fn json_value(v: &Value) -> serde_json::Value {
    match v {
        Value::Null => serde_json::Value::Null,
        Value::Int(x) => json!(x),
        Value::UInt(x) => json!(x),
        Value::Double(x) => json!(x),
        Value::Bytes(b) => match std::str::from_utf8(b) {
            Ok(s) => json!(s),
            Err(_) => json!(format!(
                "0x{}",
                b.iter().map(|x| format!("{x:02x}")).collect::<String>()
            )),
        },
        Value::Date(d) => json!(d.to_string()),
        Value::DateTime(d) => json!(d.to_string()),
    }
}

// ---- The key ----

/// Parses KEY by the primary key columns' types.
fn parse_key(def: &TableDef, clustered: &IndexInfo, text: &str) -> Result<Vec<Value>, CliError> {
    let parts: Vec<&str> = text.split(',').collect();
    let cols = &clustered.key_columns;
    if parts.len() != cols.len() {
        return Err(CliError::Usage(format!(
            "table `{}` has a primary key of {} column(s) ({}); KEY `{text}` gives {}",
            def.name,
            cols.len(),
            cols.join(", "),
            parts.len()
        )));
    }
    cols.iter()
        .zip(parts)
        .map(|(name, part)| {
            let ty = def
                .columns
                .iter()
                .find(|c| &c.name == name)
                .map(|c| c.ty)
                .ok_or_else(|| {
                    CliError::Database(format!("table `{}`: no column `{name}`", def.name))
                })?;
            parse_value(ty, part.trim()).map_err(|why| {
                CliError::Usage(format!(
                    "KEY: `{part}` is not a value of column `{name}` ({ty:?}): {why}"
                ))
            })
        })
        .collect()
}

fn parse_value(ty: ColumnType, s: &str) -> Result<Value, String> {
    let int = |min: i64, max: i64| -> Result<Value, String> {
        let v: i64 = s.parse().map_err(|e| format!("{e}"))?;
        if v < min || v > max {
            return Err(format!("out of range {min}..={max}"));
        }
        Ok(Value::Int(v))
    };
    let uint = |max: u64| -> Result<Value, String> {
        let v: u64 = s.parse().map_err(|e| format!("{e}"))?;
        if v > max {
            return Err(format!("out of range 0..={max}"));
        }
        Ok(Value::UInt(v))
    };
    match ty {
        ColumnType::I8 => int(i8::MIN.into(), i8::MAX.into()),
        ColumnType::I16 => int(i16::MIN.into(), i16::MAX.into()),
        ColumnType::I32 => int(i32::MIN.into(), i32::MAX.into()),
        ColumnType::I64 => int(i64::MIN, i64::MAX),
        ColumnType::U8 => uint(u8::MAX.into()),
        ColumnType::U16 => uint(u16::MAX.into()),
        ColumnType::U32 => uint(u32::MAX.into()),
        ColumnType::U64 => uint(u64::MAX),
        ColumnType::Double => match s.parse::<f64>() {
            Ok(x) if x.is_finite() => Ok(Value::Double(if x == 0.0 { 0.0 } else { x })),
            Ok(_) => Err("not a finite number".into()),
            Err(e) => Err(e.to_string()),
        },
        ColumnType::Date => {
            let (y, m, d) = parse_date(s)?;
            Value::date(y, m, d).map_err(|e| e.to_string())
        }
        ColumnType::DateTime => {
            let (date, time) = s
                .split_once([' ', 'T'])
                .ok_or("expected YYYY-MM-DD HH:MM:SS[.ffffff]")?;
            let (time, micro) = match time.split_once('.') {
                Some((t, f)) => {
                    if f.is_empty() || f.len() > 6 || !f.bytes().all(|b| b.is_ascii_digit()) {
                        return Err("the fraction must be 1 to 6 digits".into());
                    }
                    let digits: u32 = f.parse().map_err(|e| format!("{e}"))?;
                    (t, digits * 10u32.pow(6 - f.len() as u32))
                }
                None => (time, 0),
            };
            let hms: Vec<&str> = time.split(':').collect();
            let [h, mi, se] = hms.as_slice() else {
                return Err("expected HH:MM:SS".into());
            };
            let num = |x: &str| x.parse::<u8>().map_err(|e| format!("`{x}`: {e}"));
            Value::datetime(parse_date(date)?, (num(h)?, num(mi)?, num(se)?), micro)
                .map_err(|e| e.to_string())
        }
        ColumnType::Fixed(n) if s.len() != usize::from(n) => Err(format!(
            "a Fixed({n}) column holds exactly {n} bytes; `{s}` has {}",
            s.len()
        )),
        ColumnType::Fixed(_) | ColumnType::Var(_) | ColumnType::Blob | ColumnType::Text => {
            Ok(Value::text(s))
        }
    }
}

fn parse_date(s: &str) -> Result<(u16, u8, u8), String> {
    let parts: Vec<&str> = s.split('-').collect();
    let [y, m, d] = parts.as_slice() else {
        return Err("expected YYYY-MM-DD".into());
    };
    let bad = |x: &str, e: std::num::ParseIntError| format!("`{x}`: {e}");
    Ok((
        y.parse().map_err(|e| bad(y, e))?,
        m.parse().map_err(|e| bad(m, e))?,
        d.parse().map_err(|e| bad(d, e))?,
    ))
}

// ---- Reading the record from raw pages ----

/// The tool's pages, as the undo reader wants them: read and checksum-verified.
impl PageSource for Reader {
    fn page_len(&self) -> usize {
        Reader::page_len(self)
    }

    fn with_page<T>(&self, id: PageId, f: impl FnOnce(&[u8]) -> T) -> minnow_mvcc::Result<T> {
        let mut buf = vec![0u8; Reader::page_len(self)];
        self.checked_page(id.space, id.page_no, &mut buf)
            .map_err(|what| MvccError::Unreadable { page: id, what })?;
        Ok(f(&buf))
    }
}

/// Descends the clustered tree to `key`'s leaf: the record's values (system columns
/// included, off-page columns fetched) and its delete mark, or `None` if there is no record
/// with that key.
fn find_record(
    r: &Reader,
    ix: &IndexInfo,
    key: &[Value],
) -> Result<Option<(Vec<Value>, bool)>, String> {
    let leaf_key = ix.layout.search_key(key).map_err(|e| format!("KEY: {e}"))?;
    let ptr_layout = ix.layout.node_ptr();
    let ptr_key = ptr_layout
        .search_key(key)
        .map_err(|e| format!("KEY: {e}"))?;
    let mut buf = vec![0u8; r.page_len()];
    let mut page_no = ix.root;
    let mut want_level: Option<u16> = None;
    for _ in 0..MAX_LEVELS {
        r.checked_page(ix.space_id, page_no, &mut buf)?;
        let bad = |e: &dyn std::fmt::Display| format!("page {page_no}: {e}");
        let id = node::index_id(&buf).map_err(|e| bad(&e))?;
        if id != ix.index_id {
            return Err(format!(
                "page {page_no} belongs to index {id}, not {}",
                ix.index_id
            ));
        }
        let level = node::level(&buf).map_err(|e| bad(&e))?;
        if want_level.is_some_and(|w| w != level) {
            return Err(format!(
                "page {page_no} is at level {level}, its parent expects {}",
                want_level.unwrap_or_default()
            ));
        }
        if level == 0 {
            let found = node::search(&buf, &ix.layout, &leaf_key).map_err(|e| bad(&e))?;
            if !found.exact {
                return Ok(None);
            }
            let deleted = node::header_at(&buf, found.cursor)
                .map_err(|e| bad(&e))?
                .deleted();
            let values = decode_record(r, ix.space_id, &ix.layout, &buf, found.cursor.origin())
                .map_err(|e| format!("page {page_no}: {e}"))?;
            return Ok(Some((values, deleted)));
        }
        let at = node::search(&buf, &ptr_layout, &ptr_key).map_err(|e| bad(&e))?;
        if !at.cursor.is_user() {
            return Err(format!("page {page_no}: no node pointer for the key"));
        }
        let child = match ptr_layout
            .decode(&buf, at.cursor.origin())
            .map_err(|e| bad(&e))?
            .last()
        {
            Some(Value::UInt(c)) => u32::try_from(*c).map_err(|e| bad(&e))?,
            _ => return Err(format!("page {page_no}: a node pointer without a child")),
        };
        page_no = child;
        want_level = Some(level - 1);
    }
    Err(format!("the tree is deeper than {MAX_LEVELS} levels"))
}

/// Decodes the record at `origin`, reading off-page columns from their overflow pages.
fn decode_record(
    r: &Reader,
    space_id: u32,
    layout: &RecordLayout,
    page: &[u8],
    origin: usize,
) -> Result<Vec<Value>, String> {
    layout
        .decode_fields(page, origin)
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|f| match f {
            Field::Value(v) => Ok(v),
            Field::External(b) => {
                let ext = ExternRef::decode(b).ok_or("an off-page reference of the wrong size")?;
                Ok(Value::Bytes(read_external(r, space_id, ext)?))
            }
        })
        .collect()
}

/// Reads an off-page value: the chain of overflow pages from `ext.page`, in tablespace
/// `space_id` (the overflow pages come from the index's own segments).
fn read_external(r: &Reader, space_id: u32, ext: ExternRef) -> Result<Vec<u8>, String> {
    let len = usize::try_from(ext.len).map_err(|e| e.to_string())?;
    let page_len = r.page_len();
    // Every page but the last is full: a bound on the walk, so a cycle ends.
    let max_pages = len / page_len.saturating_sub(BLOB_DATA + 8).max(1) + 2;
    let mut out = Vec::with_capacity(len.min(1 << 24));
    let mut buf = vec![0u8; page_len];
    let mut page_no = ext.page;
    for _ in 0..max_pages {
        if out.len() >= len {
            break;
        }
        r.checked_page(space_id, page_no, &mut buf)?;
        let field = |at: usize| {
            buf.get(at..at + 4)
                .and_then(|b| b.try_into().ok())
                .map(u32::from_be_bytes)
                .ok_or(format!("overflow page {page_no}: header outside the page"))
        };
        let part = field(BLOB_PART_LEN)? as usize;
        let next = field(BLOB_NEXT)?;
        let bytes = buf
            .get(BLOB_DATA..BLOB_DATA + part)
            .ok_or(format!("overflow page {page_no}: part of {part} bytes"))?;
        out.extend_from_slice(bytes);
        page_no = next;
    }
    if out.len() != len {
        return Err(format!(
            "an off-page value of {len} bytes whose overflow pages hold {}",
            out.len()
        ));
    }
    Ok(out)
}

// ---- Text ----

fn print_text(r: &HistoryReport, out: &mut dyn Write) -> Result<(), CliError> {
    writeln!(out, "{} key ({}):", r.table, r.key)?;
    if let Some(c) = &r.compression {
        writeln!(out, "  {}", c.text())?;
    }
    if !r.active_transactions.is_empty() {
        let ids: Vec<String> = r.active_transactions.iter().map(u64::to_string).collect();
        writeln!(out, "  active transactions: {}", ids.join(", "))?;
    }
    for (i, v) in r.versions.iter().enumerate() {
        let undo = v.undo.unwrap_or("none");
        writeln!(
            out,
            "  #{i} trx {} ({}){}  roll ptr {} (insert={}, page {}, offset {})  undo {undo}",
            v.trx_id,
            v.writer,
            if v.deleted { " DELETE-MARKED" } else { "" },
            v.roll_ptr.hex,
            u8::from(v.roll_ptr.insert),
            v.roll_ptr.page,
            v.roll_ptr.offset,
        )?;
        let values: Vec<String> = r
            .columns
            .iter()
            .map(|c| {
                let shown = match v.values.get(c) {
                    Some(serde_json::Value::String(s)) => format!("{s:?}"),
                    Some(x) => x.to_string(),
                    None => "?".to_string(),
                };
                format!("{c}={shown}")
            })
            .collect();
        writeln!(out, "      {}", values.join(" "))?;
    }
    if let Some(end) = &r.end {
        writeln!(out, "  {}", end.detail)?;
    }
    for p in &r.problems {
        writeln!(out, "PROBLEM: {p}")?;
    }
    writeln!(
        out,
        "{}",
        if r.outcome.ok {
            format!("{} version(s)", r.versions.len())
        } else {
            "problems found".to_string()
        }
    )?;
    Ok(())
}
