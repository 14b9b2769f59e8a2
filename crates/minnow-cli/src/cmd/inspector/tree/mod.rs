//! `minnow tree DIR TABLE [--index NAME]`: the shape of one index's B-tree.
//!
//! Reads `DIR/ibdata1` read-only, page by page, without opening the database (which would run
//! recovery and write). First the dictionary (FORMAT.md §8: the B-tree rooted at page
//! [`minnow::inspect::DICT_ROOT`]) is walked to find TABLE's record, which gives the table's columns,
//! its compression and each index's id, tablespace and root page
//! ([`minnow::inspect::decode_table_indexes`]). A compressed table's trees live in its shared
//! compressed tablespace (`DIR/zip8k_zlib-6.ibd` for `KEY_BLOCK_SIZE=8` zlib level 6, named by
//! [`minnow::Compression::file_name`]), whose blocks are inflated as they are read; the report
//! says so ([`CompressionReport`]). Then the chosen index
//! (`PRIMARY` by default) is walked breadth first from its root along the node pointers. Per
//! level: how many pages, their average fill, the records, and the smallest and largest key,
//! decoded with the table's schema (hex for bytes that are not text).
//!
//! `--dot FILE` writes the tree as Graphviz (one node per page labelled with its key range,
//! solid edges to children, dashed edges along the sibling links); `--svg FILE` draws it
//! directly as SVG, one row of boxes per level, for trees of at most [`SVG_MAX_PAGES`] pages
//! (larger trees are a usage error: use `--dot` and Graphviz).
//!
//! Exit 1 when a page of the tree fails its checksum, carries another index's id or the wrong
//! level, is reached twice, or its sibling links disagree with the order of its level, or
//! when an off-page column's reference is malformed or misplaced. Off-page columns themselves
//! (long BLOB/TEXT values on a clustered leaf) are normal; a reference is a problem when it is
//! in a node pointer or a field that cannot be off-page, or when it names another tablespace,
//! page 0 or a page past the end of the file, a BLOB header offset other than 38, or a length
//! of 0 or longer than the file. The chains themselves are not read (`minnow check` walks them).

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use minnow::inspect::IndexInfo;
use minnow::{Compression, TableDef, Value};
use minnow_btree::node;
use minnow_btree::record::{Field, RecordError, RecordLayout};
use minnow_page::PageId;
use minnow_page::checksum;
use minnow_page::fil::{FIL_NULL, FilHeader};
use serde::Serialize;

use crate::cli::Status;
use crate::dict::{Lookup, find_table, missing_table};
use crate::output::CliError;
use crate::reader::Reader;
use crate::report::{self, Outcome};

/// The largest tree `--svg` draws.
pub const SVG_MAX_PAGES: usize = 200;

/// Deepest tree walked (a B-tree of 16 KiB pages never gets near it).
const MAX_LEVELS: usize = 64;

mod draw;
mod off_page;

use draw::{dot, svg};

/// Options of `minnow tree`.
#[derive(Debug)]
pub struct TreeOpts {
    /// The database directory.
    pub dir: PathBuf,
    /// The table.
    pub table: String,
    /// The index (default `PRIMARY`).
    pub index: Option<String>,
    /// Where to write Graphviz.
    pub dot: Option<PathBuf>,
    /// Where to write SVG.
    pub svg: Option<PathBuf>,
}

/// One page of the tree.
#[derive(Debug, Serialize)]
pub struct PageReport {
    /// Page number.
    pub page: u32,
    /// B-tree level (0: leaf).
    pub level: u16,
    /// User records.
    pub records: usize,
    /// Share of the record space in use, 0..1.
    pub fill: f64,
    /// The first record's key.
    pub min_key: Option<String>,
    /// The last record's key.
    pub max_key: Option<String>,
    /// Child pages (node-pointer pages only).
    pub children: Vec<u32>,
    /// Left sibling (None: FIL_NULL).
    pub prev: Option<u32>,
    /// Right sibling.
    pub next: Option<u32>,
}

/// One level.
#[derive(Debug, Serialize)]
pub struct LevelReport {
    /// The level (0: leaf).
    pub level: u16,
    /// Pages on it.
    pub pages: usize,
    /// Records on it.
    pub records: usize,
    /// Average fill of its pages.
    pub avg_fill: f64,
    /// The smallest key (first record of the leftmost page).
    pub min_key: Option<String>,
    /// The largest key (last record of the rightmost page).
    pub max_key: Option<String>,
}

/// Where a compressed table's trees are: its `ROW_FORMAT=COMPRESSED` setting and the shared
/// compressed tablespace holding them.
#[derive(Debug, Clone, Serialize)]
pub struct CompressionReport {
    /// `KEY_BLOCK_SIZE` in KiB.
    pub key_block_size: usize,
    /// The algorithm as the engine names it: `zlib-6`, `lz4`.
    pub algorithm: String,
    /// The tablespace file's name in the database directory (`zip8k_zlib-6.ibd`).
    pub file: String,
    /// The tablespace's id ([`Compression::space_id`]).
    pub space_id: u32,
}

impl CompressionReport {
    /// The report for a table compressed with `c`.
    pub fn new(c: Compression) -> CompressionReport {
        CompressionReport {
            key_block_size: c.block_size.kib(),
            algorithm: c.algorithm.to_string(),
            file: c.file_name(),
            space_id: c.space_id(),
        }
    }

    /// `compressed: KEY_BLOCK_SIZE=8, zlib-6, in zip8k_zlib-6.ibd (space 70)`.
    pub fn text(&self) -> String {
        format!(
            "compressed: KEY_BLOCK_SIZE={}, {}, in {} (space {})",
            self.key_block_size, self.algorithm, self.file, self.space_id
        )
    }
}

/// The whole report.
#[derive(Debug, Serialize)]
pub struct TreeReport {
    /// The outcome: true when nothing is wrong.
    #[serde(flatten)]
    pub outcome: Outcome,
    /// The table.
    pub table: String,
    /// The index.
    pub index: String,
    /// Its id.
    pub index_id: u64,
    /// Its root page.
    pub root: u32,
    /// The table's compression and the file its trees are in; null for an uncompressed table
    /// (its trees are in `ibdata1`).
    pub compression: Option<CompressionReport>,
    /// Its key fields.
    pub key_columns: Vec<String>,
    /// Levels, root first.
    pub levels: Vec<LevelReport>,
    /// Every page, level by level, root first, left to right.
    pub pages: Vec<PageReport>,
    /// What is wrong.
    pub problems: Vec<String>,
}

/// Runs `minnow tree`.
pub fn run(opts: &TreeOpts, json: bool, out: &mut dyn Write) -> Result<Status, CliError> {
    let mut reader = Reader::open(&opts.dir)?;
    let (def, index) = find_index(&reader, &opts.table, opts.index.as_deref())?;
    reader.follow(&opts.dir, &def, &index)?;
    let mut report = TreeReport {
        outcome: Outcome::default(),
        table: opts.table.clone(),
        index: index.name.clone(),
        index_id: index.index_id,
        root: index.root,
        compression: def.compression.map(CompressionReport::new),
        key_columns: index.key_columns.clone(),
        levels: Vec::new(),
        pages: Vec::new(),
        problems: Vec::new(),
    };
    let levels = reader.walk(
        PageId::new(index.space_id, index.root),
        index.index_id,
        &index.layout,
        &index.key_columns,
        &mut report.problems,
        |_, _| {},
    )?;
    for level in levels {
        let n = level.len();
        let (Some(first), Some(last)) = (level.first(), level.last()) else {
            continue;
        };
        report.levels.push(LevelReport {
            level: first.level,
            pages: n,
            records: level.iter().map(|p| p.records).sum(),
            avg_fill: level.iter().map(|p| p.fill).sum::<f64>() / n as f64,
            min_key: first.min_key.clone(),
            max_key: last.max_key.clone(),
        });
        report.pages.extend(level);
    }
    if opts.svg.is_some() && report.pages.len() > SVG_MAX_PAGES {
        return Err(CliError::Usage(format!(
            "--svg draws trees of at most {SVG_MAX_PAGES} pages; this one has {}: use --dot",
            report.pages.len()
        )));
    }
    if let Some(path) = &opts.dot {
        write_file(path, &dot(&report))?;
    }
    if let Some(path) = &opts.svg {
        write_file(path, &svg(&report))?;
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

fn write_file(path: &Path, text: &str) -> Result<(), CliError> {
    std::fs::write(path, text)
        .map_err(|e| CliError::Usage(format!("{}: cannot write: {e}", path.display())))
}

/// The tree walk: a method of the shared [`Reader`], since the dictionary lookup walks the
/// dictionary's tree the same way.
impl Reader {
    /// Walks the tree rooted at page `root` (of its tablespace) breadth first; returns its
    /// pages level by level (root first). `visit_leaf(page, layout)` sees every leaf page's
    /// bytes.
    pub(crate) fn walk(
        &self,
        root: PageId,
        index_id: u64,
        layout: &RecordLayout,
        key_names: &[String],
        problems: &mut Vec<String>,
        mut visit_leaf: impl FnMut(&[u8], &RecordLayout),
    ) -> Result<Vec<Vec<PageReport>>, CliError> {
        let ptr_layout = layout.node_ptr();
        let file = self.file(root.space).map_err(CliError::Database)?;
        let space = &file.space;
        let mut buf = vec![0u8; space.page_size().bytes()];
        let mut seen = BTreeSet::new();
        let mut levels: Vec<Vec<PageReport>> = Vec::new();
        let mut frontier = vec![root.page_no];
        let mut expected_level: Option<u16> = None;
        while !frontier.is_empty() && levels.len() < MAX_LEVELS {
            let mut level = Vec::new();
            let mut next_frontier = Vec::new();
            for page_no in frontier {
                if !seen.insert(page_no) {
                    problems.push(format!("page {page_no} is reached twice"));
                    continue;
                }
                if u64::from(page_no) >= space.pages() {
                    problems.push(format!(
                        "page {page_no} is past the end of {} ({} pages)",
                        space.name(),
                        space.pages()
                    ));
                    continue;
                }
                space.read_page(u64::from(page_no), &mut buf)?;
                if let Err(e) = checksum::verify(&buf, file.policy) {
                    problems.push(format!("page {page_no} is corrupt: {e}"));
                    continue;
                }
                let (Ok(fil), Ok(lvl), Ok(id)) = (
                    FilHeader::read(&buf),
                    node::level(&buf),
                    node::index_id(&buf),
                ) else {
                    problems.push(format!("page {page_no}: unreadable headers"));
                    continue;
                };
                if id != index_id {
                    problems.push(format!(
                        "page {page_no} belongs to index {id}, not {index_id}"
                    ));
                    continue;
                }
                if let Some(want) = expected_level
                    && lvl != want
                {
                    problems.push(format!(
                        "page {page_no} is at level {lvl}, its parent expects {want}"
                    ));
                    continue;
                }
                let this_layout = if lvl == 0 { layout } else { &ptr_layout };
                let mut first = None;
                let mut last = None;
                let mut children = Vec::new();
                let mut records = 0;
                for rec in node::records(&buf) {
                    let origin = match rec {
                        Ok(c) => c.origin(),
                        Err(e) => {
                            problems.push(format!("page {page_no}: record list: {e}"));
                            break;
                        }
                    };
                    records += 1;
                    let site = off_page::Site {
                        space_id: root.space,
                        pages: space.pages(),
                        page_len: buf.len(),
                        page_no,
                        level: lvl,
                        origin,
                    };
                    match decode_keeping_refs(this_layout, &buf, &site, problems) {
                        Ok(values) => {
                            let key = show_key(&values, this_layout.n_key(), key_names);
                            if first.is_none() {
                                first = Some(key.clone());
                            }
                            last = Some(key);
                            if lvl > 0
                                && let Some(Value::UInt(child)) = values.last()
                            {
                                children.push(u32::try_from(*child).unwrap_or(FIL_NULL));
                            }
                        }
                        Err(e) => problems.push(format!(
                            "page {page_no}: record at {origin} does not decode: {e}"
                        )),
                    }
                }
                if lvl == 0 {
                    visit_leaf(&buf, layout);
                }
                next_frontier.extend(children.iter().copied());
                let ptr = |v: u32| (v != FIL_NULL).then_some(v);
                level.push(PageReport {
                    page: page_no,
                    level: lvl,
                    records,
                    fill: node::fill_factor(&buf).unwrap_or(0.0),
                    min_key: first,
                    max_key: last,
                    children,
                    prev: ptr(fil.prev),
                    next: ptr(fil.next),
                });
            }
            // The sibling links must follow the level's order.
            for pair in level.windows(2) {
                if let [a, b] = pair
                    && (a.next != Some(b.page) || b.prev != Some(a.page))
                {
                    problems.push(format!(
                        "level {}: pages {} and {} are adjacent but not linked as siblings",
                        a.level, a.page, b.page
                    ));
                }
            }
            if let (Some(a), Some(b)) = (level.first(), level.last())
                && (a.prev.is_some() || b.next.is_some())
            {
                problems.push(format!(
                    "level {}: the ends of the level link beyond it",
                    a.level
                ));
            }
            expected_level = level
                .first()
                .and_then(|p| p.level.checked_sub(1))
                .or(Some(u16::MAX));
            let at_leaf = level.first().is_some_and(|p| p.level == 0);
            levels.push(level);
            if at_leaf {
                break;
            }
            frontier = next_frontier;
        }
        Ok(levels)
    }
}

/// Decodes the record at `site.origin` of `page` for its key and child pointer. An off-page
/// field comes back as NULL (it is never a key field nor the child pointer); its reference is
/// checked ([`off_page::problem`]) and what is wrong with it goes to `problems`.
fn decode_keeping_refs(
    layout: &RecordLayout,
    page: &[u8],
    site: &off_page::Site,
    problems: &mut Vec<String>,
) -> Result<Vec<Value>, RecordError> {
    let fields = layout.decode_fields(page, site.origin)?;
    let mut values = Vec::with_capacity(fields.len());
    for (i, field) in fields.into_iter().enumerate() {
        values.push(match field {
            Field::Value(v) => v,
            Field::External(stored) => {
                problems.extend(off_page::problem(layout, i, stored, site));
                Value::Null
            }
        });
    }
    Ok(values)
}

/// Finds `table`'s index `index` (default the clustered one) in the dictionary: the table's
/// definition and the index.
fn find_index(
    r: &Reader,
    table: &str,
    index: Option<&str>,
) -> Result<(TableDef, IndexInfo), CliError> {
    let (def, indexes) = match find_table(r, table)? {
        Lookup::Found(def, ix) => (def, ix),
        Lookup::Missing { tables, problems } => {
            return Err(CliError::Usage(missing_table(table, &tables, &problems)));
        }
    };
    let want = index.unwrap_or(minnow::PRIMARY);
    let names: Vec<String> = indexes.iter().map(|i| i.name.clone()).collect();
    let found = indexes
        .into_iter()
        .find(|i| i.name == want)
        .ok_or_else(|| {
            CliError::Usage(format!(
                "table `{table}` has no index `{want}`; indexes: {}",
                names.join(", ")
            ))
        })?;
    Ok((def, found))
}

/// A key for humans: `name=value` per key field, each value as `Value`'s `Display` shows it
/// (numbers as they are, text quoted, other bytes in hex, long ones cut short).
fn show_key(values: &[Value], n_key: usize, names: &[String]) -> String {
    values
        .iter()
        .take(n_key)
        .enumerate()
        .map(|(i, v)| match names.get(i) {
            Some(n) => format!("{n}={v}"),
            None => v.to_string(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn print_text(r: &TreeReport, out: &mut dyn Write) -> Result<(), CliError> {
    writeln!(
        out,
        "{}.{}: index id {}, root page {}, key ({}), {} levels, {} pages",
        r.table,
        r.index,
        r.index_id,
        r.root,
        r.key_columns.join(", "),
        r.levels.len(),
        r.pages.len()
    )?;
    if let Some(c) = &r.compression {
        writeln!(out, "  {}", c.text())?;
    }
    for l in &r.levels {
        writeln!(
            out,
            "  level {:>2}: {:>6} pages {:>8} records  fill {:>5.1}%  keys {} .. {}",
            l.level,
            l.pages,
            l.records,
            l.avg_fill * 100.0,
            l.min_key.as_deref().unwrap_or("(empty)"),
            l.max_key.as_deref().unwrap_or("(empty)")
        )?;
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
