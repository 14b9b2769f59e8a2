//! The dictionary as written to the data file, read from raw pages.
//!
//! Table definitions live in a B-tree of the system tablespace rooted at page
//! [`minnow::inspect::DICT_ROOT`] (FORMAT.md §8): one record per table, key the name, value the
//! encoded definition with each index's id, tablespace and root page. The inspection commands
//! find a table there by walking that tree with the shared [`Reader`] and decode its record
//! with [`minnow::inspect::decode_table_indexes`]; what a live or crashed database holds only
//! in memory or in the redo log is not seen.

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

/// Finds `table` in the dictionary (the B-tree rooted at [`minnow::inspect::DICT_ROOT`]), reading
/// raw pages.
pub(crate) fn find_table(r: &Reader, table: &str) -> Result<Lookup, CliError> {
    let dict = minnow::inspect::dict_layout().map_err(|e| CliError::Database(e.to_string()))?;
    let mut problems = Vec::new();
    let mut found: Option<Result<(minnow::TableDef, Vec<IndexInfo>), String>> = None;
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
                if name == table {
                    found = Some(
                        minnow::inspect::decode_table_indexes(&name, value)
                            .map_err(|e| e.to_string()),
                    );
                }
                tables.push(name);
            }
        },
    )?;
    match found {
        Some(Ok((def, ix))) => Ok(Lookup::Found(def, ix)),
        Some(Err(e)) => Err(CliError::Database(format!("table `{table}`: {e}"))),
        None => Ok(Lookup::Missing { tables, problems }),
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
