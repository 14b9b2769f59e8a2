//! The records of one of minnow's own INDEX pages, decoded with the table's schema from the
//! dictionary (`minnow page DIR/ibdata1 N`).
//!
//! A page says which index it belongs to (`PAGE_INDEX_ID` in its header), not what its
//! records hold: the columns, their types and their order are in the dictionary. When the
//! file lies in a minnow data directory, [`crate::dict::beside`] reads that dictionary from the
//! directory's `ibdata1`; the index with the page's id gives the record layout, so the records
//! decode with no `--columns` typed by hand. A leaf of a clustered index holds the key, the two
//! hidden fields (`DB_TRX_ID`, `DB_ROLL_PTR`) and the other columns; a leaf of a secondary
//! index holds its own columns and then the primary key's; a page above the leaves holds node
//! pointers: a key prefix and the child page number.

use std::io::Write;

use minnow::Value;
use minnow::inspect::DICT_INDEX_ID;
use minnow_btree::node;
use minnow_btree::record::{Field, INFO_MIN_REC, RecordHeader};
use serde::Serialize;

use crate::dict::Tables;
use crate::innodb_rec::be;

/// The decoded records of a minnow INDEX page.
#[derive(Debug, Serialize)]
pub struct MinnowRecords {
    /// `table.index`, from the dictionary.
    pub index: String,
    /// The field names, in record order.
    pub fields: Vec<String>,
    /// The records, in key order (the page's record list, infimum and supremum excluded).
    pub records: Vec<MinnowRecord>,
    /// Why the walk stopped early or a record did not decode.
    pub problems: Vec<String>,
}

/// One record.
#[derive(Debug, Serialize)]
pub struct MinnowRecord {
    /// The record's origin (its offset in the page).
    pub offset: usize,
    /// Delete-marked (purge has not removed it yet).
    pub deleted: bool,
    /// The leftmost node pointer of its level (`MIN_REC`): it compares below every key,
    /// whatever key it holds.
    pub min_rec: bool,
    /// The field values, as `Value`'s `Display` shows them; an off-page column as `<off-page>`.
    pub values: Vec<String>,
}

/// Decodes `page` (an INDEX page of index `index_id`, at `level`) with the dictionary; `None`
/// when the dictionary has no such index. The dictionary's own tree decodes too: its records
/// are a table's name and its encoded definition (docs/FORMAT.md §8).
pub fn decode(tables: &Tables, page: &[u8], index_id: u64, level: u16) -> Option<MinnowRecords> {
    let leaf = level == 0;
    // (index name, leaf layout, key field names, the names of the columns after the key)
    let (index, leaf_layout, key, rest) = if index_id == DICT_INDEX_ID {
        let layout = minnow::inspect::dict_layout().ok()?;
        let key = vec!["table".to_string()];
        (
            "(dictionary)".to_string(),
            layout,
            key,
            vec!["definition".into()],
        )
    } else {
        let (def, ix) = tables.index(index_id)?;
        let key = ix.key_columns.clone();
        let rest = def
            .columns
            .iter()
            .filter(|c| !key.contains(&c.name))
            .map(|c| c.name.clone())
            .collect();
        let name = format!("{}.{}", def.name, ix.name);
        (name, ix.layout.clone(), key, rest)
    };
    let mut fields = key;
    if leaf_layout.trx_id_field().is_some() {
        fields.push("DB_TRX_ID".into());
        fields.push("DB_ROLL_PTR".into());
        fields.extend(rest);
    }
    let layout = if leaf {
        leaf_layout
    } else {
        leaf_layout.node_ptr()
    };
    if !leaf {
        fields.truncate(layout.n_key());
        fields.push("child page".into());
    }
    let mut records = Vec::new();
    let mut problems = Vec::new();
    for cursor in node::records(page) {
        let origin = match cursor {
            Ok(c) => c.origin(),
            Err(e) => {
                problems.push(format!("record list: {e}"));
                break;
            }
        };
        let header = RecordHeader::read(page, origin).ok();
        let deleted = header.is_some_and(|h| h.deleted());
        let min_rec = header.is_some_and(|h| h.info_bits & INFO_MIN_REC != 0);
        let hidden = if leaf { layout.trx_id_field() } else { None };
        let n = layout.fields().len();
        match layout.decode_fields(page, origin) {
            Ok(decoded) => records.push(MinnowRecord {
                offset: origin,
                deleted,
                min_rec,
                values: decoded
                    .into_iter()
                    .enumerate()
                    .map(|(i, f)| match f {
                        // The hidden fields are big-endian numbers: a trx id, a roll pointer.
                        Field::Value(Value::Bytes(b)) if hidden == Some(i) => be(&b).to_string(),
                        Field::Value(Value::Bytes(b)) if hidden.map(|t| t + 1) == Some(i) => {
                            format!("{:#x}", be(&b))
                        }
                        // The dictionary's definition is binary: its length and first bytes.
                        Field::Value(Value::Bytes(b))
                            if index_id == DICT_INDEX_ID && leaf && i + 1 == n =>
                        {
                            let head: String =
                                b.iter().take(12).map(|x| format!("{x:02x}")).collect();
                            format!("0x{head}… ({} bytes)", b.len())
                        }
                        Field::Value(v) => v.to_string(),
                        Field::External(_) => "<off-page>".to_string(),
                    })
                    .collect(),
            }),
            Err(e) => problems.push(format!("record at offset {origin}: {e}")),
        }
    }
    Some(MinnowRecords {
        index,
        fields,
        records,
        problems,
    })
}

/// Prints the records, one per line: `@offset name=value ...`.
pub fn print(r: &MinnowRecords, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "records of {} ({} in key order, schema from the dictionary):",
        r.index,
        r.records.len()
    )?;
    for rec in &r.records {
        let fields: Vec<String> = r
            .fields
            .iter()
            .map(String::as_str)
            .chain(std::iter::repeat("?"))
            .zip(&rec.values)
            .map(|(name, v)| format!("{name}={v}"))
            .collect();
        let mut flags = String::new();
        if rec.deleted {
            flags.push_str(" DELETED");
        }
        if rec.min_rec {
            flags.push_str(" MIN_REC");
        }
        writeln!(out, "  @{:<5}{flags} {}", rec.offset, fields.join(" "))?;
    }
    for p in &r.problems {
        writeln!(out, "  problem: {p}")?;
    }
    Ok(())
}
