//! The dictionary's place in the system tablespace: the file names, the fixed pages and ids,
//! and the layout of the dictionary's records (InnoDB's `SYS_TABLES`, reduced to one record
//! per table: key the table name, value its definition as `schema::encode` writes it).
//!
//! ```text
//! ibdata1 (space 0):  page 0  FSP header, page allocator
//!                     page 1  first INODE page (the dictionary's two segments)
//!                     page 2  DICT_ROOT: root of the dictionary B-tree (index id 1)
//!                     page 3  TRX_SYS_PAGE: first page of the undo segment
//!                     ...     undo pages, every uncompressed table's indexes
//! ```

use minnow_btree::record::{Column, ColumnType, RecordLayout, Value};

use crate::error::{Error, Result};
use crate::schema;

/// The system tablespace's file name (InnoDB's `ibdata1`): the dictionary, the undo log and
/// every uncompressed table.
pub const SYSTEM_TABLESPACE: &str = "ibdata1";
/// The redo log's file name.
pub const REDO_LOG: &str = "ib_logfile0";
/// The system tablespace's space id (as InnoDB's).
pub const SYSTEM_SPACE_ID: u32 = 0;
/// The dictionary B-tree's root page: the first page the allocator hands out after page 1,
/// the first INODE page (which holds the dictionary's two segments).
pub const DICT_ROOT: u32 = 2;
/// The dictionary's index id.
pub const DICT_INDEX_ID: u64 = 1;
/// The TRX_SYS page (the first page of the undo segment, made right after the dictionary).
pub const TRX_SYS_PAGE: u32 = 3;

/// The layout of the dictionary's records (FORMAT.md §8): key the table name, one value
/// column. For read-only tools that read the dictionary from raw pages.
pub fn dict_layout() -> Result<RecordLayout> {
    RecordLayout::clustered(
        vec![Column::new(ColumnType::Var(schema::MAX_NAME_LEN as u16))],
        vec![Column::new(ColumnType::Var(
            minnow_btree::record::MAX_VAR_LEN as u16,
        ))],
    )
    .map_err(|e| Error::Corrupt {
        what: format!("dictionary layout: {e}"),
    })
}

/// A dictionary record: `name` as key, the hidden system columns (transaction id 0, a roll
/// pointer with only the insert flag set: the dictionary is not versioned) and `value`.
pub fn dict_row(name: &[u8], value: Vec<u8>) -> Vec<Value> {
    vec![
        Value::Bytes(name.to_vec()),
        Value::trx_id(0),
        Value::roll_ptr(1 << 55),
        Value::Bytes(value),
    ]
}
