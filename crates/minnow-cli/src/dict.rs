//! The dictionary as written to the data file, read from raw pages.
//!
//! Table definitions live in a B-tree of the system tablespace rooted at page
//! [`minnow::inspect::DICT_ROOT`] (FORMAT.md §8): one record per table, key the name, value the
//! encoded definition with each index's id, tablespace and root page. The inspection commands
//! find a table there by walking that tree with the shared [`Reader`] and decode its record
//! with [`minnow::inspect::decode_table_indexes`]; what a live or crashed database holds only
//! in memory or in the redo log is not seen.

use std::collections::BTreeMap;
use std::path::Path;

use minnow::Value;
use minnow::inspect::IndexInfo;
use minnow_btree::node;
use minnow_page::PageId;

use crate::output::CliError;
use crate::reader::Reader;

/// What the dictionary says about a table.
pub(crate) enum Lookup {
    /// The table's definition and its indexes, the clustered one first.
    Found(minnow::TableDef, Vec<IndexInfo>),
    /// No such table: the tables there are, and any damage met on the way.
    Missing {
        /// The tables the dictionary holds.
        tables: Vec<String>,
        /// Problems met while walking the dictionary's tree.
        problems: Vec<String>,
    },
}

/// A table's definition and its indexes (the clustered one first), or why its dictionary
/// record does not decode.
pub(crate) type Decoded = Result<(minnow::TableDef, Vec<IndexInfo>), String>;

/// Every table the dictionary holds, as written to the data file.
pub(crate) struct Tables {
    /// By name.
    pub tables: Vec<(String, Decoded)>,
    /// Problems met while walking the dictionary's tree.
    pub problems: Vec<String>,
}

impl Tables {
    /// `table.index` for every index id of a table that decodes, and `(dictionary)` for the
    /// dictionary's own tree.
    pub fn index_names(&self) -> BTreeMap<u64, String> {
        let mut names = BTreeMap::new();
        names.insert(minnow::inspect::DICT_INDEX_ID, "(dictionary)".to_string());
        for (table, decoded) in &self.tables {
            for ix in decoded.iter().flat_map(|(_, ix)| ix) {
                names.insert(ix.index_id, format!("{table}.{}", ix.name));
            }
        }
        names
    }

    /// The index whose pages carry `index_id`, with its table's definition.
    pub fn index(&self, index_id: u64) -> Option<(&minnow::TableDef, &IndexInfo)> {
        self.tables.iter().find_map(|(_, decoded)| {
            let (def, ix) = decoded.as_ref().ok()?;
            Some((def, ix.iter().find(|i| i.index_id == index_id)?))
        })
    }
}

/// Reads every table of the dictionary (the B-tree rooted at
/// [`minnow::inspect::DICT_ROOT`]) from raw pages.
pub(crate) fn read_tables(r: &Reader) -> Result<Tables, CliError> {
    let dict = minnow::inspect::dict_layout().map_err(|e| CliError::Database(e.to_string()))?;
    let mut problems = Vec::new();
    let mut tables = Vec::new();
    r.walk(
        PageId::new(minnow::inspect::SYSTEM_SPACE_ID, minnow::inspect::DICT_ROOT),
        minnow::inspect::DICT_INDEX_ID,
        &dict,
        &[],
        &mut problems,
        |page, layout| {
            for origin in node::records(page)
                .map_while(Result::ok)
                .map(|c| c.origin())
            {
                let Ok(values) = layout.decode(page, origin) else {
                    continue;
                };
                let (Some(Value::Bytes(key)), Some(Value::Bytes(value))) =
                    (values.first(), values.last())
                else {
                    continue;
                };
                if key.first().is_none_or(|&b| b == 0) {
                    continue; // the repair marker, pending drops, auto-increment records
                }
                let name = String::from_utf8_lossy(key).into_owned();
                let decoded =
                    minnow::inspect::decode_table_indexes(&name, value).map_err(|e| e.to_string());
                tables.push((name, decoded));
            }
        },
    )?;
    Ok(Tables { tables, problems })
}

/// The dictionary of the minnow data directory that holds `file` (its `ibdata1`), when there
/// is one and it reads without a problem: the inspection commands name indexes and decode
/// records with it. `None` for a file elsewhere (an InnoDB tablespace, a copy), and for a
/// directory whose `ibdata1` is not minnow's (InnoDB's own system tablespace has no minnow
/// dictionary at page 2, and its `SYS_TABLES` index has minnow's dictionary index id).
pub(crate) fn beside(file: &Path) -> Option<Tables> {
    let dir = file.parent()?;
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    if !dir.join(minnow::inspect::SYSTEM_TABLESPACE).is_file() {
        return None;
    }
    let reader = Reader::open(dir).ok()?;
    read_tables(&reader).ok().filter(|t| t.problems.is_empty())
}

/// Finds `table` in the dictionary (the B-tree rooted at [`minnow::inspect::DICT_ROOT`]), reading
/// raw pages.
pub(crate) fn find_table(r: &Reader, table: &str) -> Result<Lookup, CliError> {
    let Tables { tables, problems } = read_tables(r)?;
    let names = tables.iter().map(|(n, _)| n.clone()).collect();
    match tables.into_iter().find(|(n, _)| n == table) {
        Some((_, Ok((def, ix)))) => Ok(Lookup::Found(def, ix)),
        Some((_, Err(e))) => Err(CliError::Database(format!("table `{table}`: {e}"))),
        None => Ok(Lookup::Missing {
            tables: names,
            problems,
        }),
    }
}

/// The message for a table the dictionary does not have.
pub(crate) fn missing_table(table: &str, tables: &[String], problems: &[String]) -> String {
    let why = if problems.is_empty() {
        String::new()
    } else {
        format!(" (the dictionary is damaged: {})", problems.join("; "))
    };
    format!(
        "no table `{table}` in the dictionary as written to the data file (a live or crashed \
         database may have it only in memory or in the redo log); tables: {}{why}",
        if tables.is_empty() {
            "none".to_string()
        } else {
            tables.join(", ")
        }
    )
}
