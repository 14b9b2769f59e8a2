//! # minnow-heap: a MyISAM-like heap table, for comparing table organisations
//!
//! InnoDB stores a table **clustered**: the rows themselves are the leaves of the primary key's
//! B+tree, so a primary key lookup that reaches the leaf has the row, and a secondary index
//! entry carries the primary key, not a row address. MyISAM, the engine InnoDB was measured
//! against for a decade, stores a table as a **heap**: rows sit in a data file (`.MYD`) in
//! insertion order, addressed by their position, and *every* index, the primary key
//! included, is a separate B-tree (`.MYI`) mapping a key to that position.
//!
//! ```text
//!   clustered (minnow::Table)                heap (HeapTable)
//!
//!   PRIMARY tree: key -> whole row           PRIMARY tree: key -> row id ─┐
//!   index tree:   key -> primary key         index tree:   key -> row id ─┤
//!                                                                         ▼
//!                                            heap file: rows in insertion order,
//!                                            read with pread (OS page cache)
//! ```
//!
//! The 2007 micro-benchmark (seed 001, experiment E2) found the two organisations differ less
//! in their trees than in *where the row is read from*: MyISAM caches only index blocks in its
//! key cache and reads each row with a `pread` system call into the OS page cache, which
//! scaled badly with threads, while InnoDB's buffer pool caches the rows themselves.
//! [`HeapTable`] rebuilds that organisation on minnow's own parts so the experiment compares
//! organisations on one code base:
//!
//! - **The indexes** are ordinary minnow tables (B+trees in the buffer pool, which plays the
//!   key cache): `{table}#PRIMARY` with the primary key columns and a `__rowid` column, and
//!   `{table}#{index}` per secondary index (key columns, then `__rowid`; a unique index's key
//!   is its columns, a non-unique one's its columns and the row id). As in MyISAM a secondary
//!   entry holds no primary key, so `SELECT id ... WHERE country_id = ?` is not covering.
//! - **The rows** live in a heap file of 16 KiB pages ([`page`]: FIL header and trailer with
//!   a `crc32` checksum, rows packed from the front, each with its own CRC-32C). A row id is
//!   the row's byte offset in the file. A point read is one `pread` of the row's longest
//!   possible size; a full scan reads the file sequentially, 128 KiB at a time (MyISAM's
//!   `read_buffer_size`), checking each page. There is no cache of rows in the process: that
//!   is the point.
//! - **Locking** is MyISAM's table lock: a statement that reads takes the table's lock shared
//!   for its whole duration (a scan for as long as its iterator lives), a statement that
//!   writes takes it exclusively. No MVCC, no transactions, no row locks.
//!
//! ## Limits (read before using it for anything but E2)
//!
//! - **Crash safety: none beyond MyISAM's.** Index changes are minnow statements (redo-logged,
//!   atomic and durable per `flush_log_at_trx_commit`), but the heap file is written with
//!   plain `pwrite` into the OS page cache and synced only by [`HeapTable::sync`]. A process
//!   crash between a row's write and its index entries, or a power cut that loses unsynced
//!   heap pages, leaves index entries pointing at missing rows or rows no index reaches;
//!   reads of such an entry return [`HeapError::Corrupt`] (never wrong data: every row carries
//!   its own checksum), and [`HeapTable::check`] lists every disagreement. There is no redo
//!   for the heap, no doublewrite and no repair (MyISAM needed `REPAIR TABLE`).
//! - Deleted rows are only marked; their space is never reused (no `OPTIMIZE TABLE`). An
//!   update is a delete and an insert (the row moves, every index entry is rewritten).
//! - No AUTO_INCREMENT, no BLOB/TEXT, no NULL in indexed columns, at most one writer at a
//!   time and no reader while it writes.
//!
//! ```
//! use minnow::{ColumnDef, ColumnType, Config, Database, IndexDef, Scan, TableDef, Value};
//! use minnow_heap::HeapTable;
//!
//! let dir = tempfile::tempdir()?;
//! let db = Database::create(dir.path(), Config::default())?;
//! let def = TableDef::new("users")
//!     .column(ColumnDef::new("id", ColumnType::U32))
//!     .column(ColumnDef::new("email", ColumnType::Var(40)))
//!     .primary_key(&["id"])
//!     .index(IndexDef::unique("email", &["email"]));
//! let t = HeapTable::create(&db, dir.path().join("users.MYD"), def)?;
//! t.insert(&[Value::UInt(1), Value::text("ada@example.com")])?;
//! assert_eq!(t.get(&[Value::UInt(1)])?, Some(vec![Value::UInt(1), Value::text("ada@example.com")]));
//! let email = vec![Value::text("ada@example.com")];
//! let ids: Vec<_> = t
//!     .scan_index("email", Scan::range(std::ops::Bound::Included(email.clone()), std::ops::Bound::Included(email)).columns(&["id"]))?
//!     .collect::<Result<_, _>>()?;
//! assert_eq!(ids, [vec![Value::UInt(1)]]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]
#![deny(unsafe_code)]

pub mod def;
mod error;
pub mod page;
mod rows;
mod write;

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use minnow::{ColumnDef, ColumnType, Database, Scan, Table, TableDef, Value};
use minnow_btree::record::Column;
use parking_lot::RwLock;

pub use error::{HeapError, Result};
pub use rows::{FullScan, HeapRows};

use page::{Damage, RowFormat};

/// The name of the row id column in every index table.
pub const ROWID: &str = "__rowid";
/// The name the primary key's index table gets: `{table}#PRIMARY`.
pub const PRIMARY: &str = "PRIMARY";

/// A row's address: its byte offset in the heap file (page `id / 16384`, offset in the page
/// `id % 16384`).
pub type RowId = u64;

/// One index of a heap table: its columns and the minnow table that holds its entries.
#[derive(Debug)]
struct HeapIndex {
    name: String,
    unique: bool,
    /// Positions of the key columns in the heap row.
    cols: Vec<usize>,
    table: Table,
}

impl HeapIndex {
    /// The index table's primary key for `row` stored at `rowid`.
    fn entry_key(&self, row: &[Value], rowid: RowId) -> Vec<Value> {
        let mut k: Vec<Value> = self.cols.iter().map(|&c| row[c].clone()).collect();
        if !self.unique {
            k.push(Value::UInt(rowid));
        }
        k
    }

    /// The index table's row for `row` stored at `rowid`.
    fn entry(&self, row: &[Value], rowid: RowId) -> Vec<Value> {
        let mut e: Vec<Value> = self.cols.iter().map(|&c| row[c].clone()).collect();
        e.push(Value::UInt(rowid));
        e
    }
}

/// The state only a writer touches: the last page, kept in memory while rows are appended.
#[derive(Debug)]
struct Tail {
    /// Pages in the file (page 0 included).
    n_pages: u32,
    /// The last row page and its bytes, if the file has one.
    page: Option<(u32, Vec<u8>)>,
}

/// A heap table: rows in a heap file read with `pread`, every index a minnow B+tree mapping
/// a key to a row id. See the crate docs for the organisation and its limits.
#[derive(Debug)]
pub struct HeapTable<'db> {
    db: &'db Database,
    def: TableDef,
    path: PathBuf,
    file: File,
    format: RowFormat,
    /// The primary key (index 0) and the secondary indexes, in definition order.
    indexes: Vec<HeapIndex>,
    /// MyISAM's table lock: shared for readers, exclusive for a writer.
    lock: RwLock<Tail>,
    /// Bytes a point read asks for: a row header and the longest payload.
    max_row: usize,
}

/// What [`HeapTable::check`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeapCheck {
    /// Row pages in the heap file.
    pub pages: u64,
    /// Live rows.
    pub rows: u64,
    /// Rows marked deleted.
    pub deleted: u64,
    /// Every disagreement between the heap and an index, in words (empty when consistent).
    pub problems: Vec<String>,
}

fn index_table_name(table: &str, index: &str) -> String {
    format!("{table}#{index}")
}

impl<'db> HeapTable<'db> {
    /// Creates a heap table: the heap file at `path` (which must not exist) and one minnow
    /// table per index in `db`.
    pub fn create(
        db: &'db Database,
        path: impl AsRef<Path>,
        def: TableDef,
    ) -> Result<HeapTable<'db>> {
        let path = path.as_ref().to_path_buf();
        let bad = |reason: String| HeapError::BadDefinition {
            table: def.name.clone(),
            reason,
        };
        let (format, key_sets) = resolve(&def).map_err(bad)?;
        let mut page0 = def::encode_page(&def).map_err(bad)?;
        for (name, cols, unique) in &key_sets {
            db.create_table(index_def(&def, name, cols, *unique))?;
        }
        let io = |op: &'static str| {
            let path = path.clone();
            move |source| HeapError::Io {
                file: path,
                op,
                offset: 0,
                source,
            }
        };
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(io("create"))?;
        page::stamp(&mut page0).map_err(|e| bad(e.to_string()))?;
        file.write_all_at(&page0, 0).map_err(io("write"))?;
        file.sync_all().map_err(io("sync"))?;
        HeapTable::assemble(db, path, file, def, format, 1, None)
    }

    /// Opens the heap table whose heap file is `path`; its index tables must be in `db`.
    pub fn open(db: &'db Database, path: impl AsRef<Path>) -> Result<HeapTable<'db>> {
        let path = path.as_ref().to_path_buf();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|source| HeapError::Io {
                file: path.clone(),
                op: "open",
                offset: 0,
                source,
            })?;
        let len = file
            .metadata()
            .map_err(|source| HeapError::Io {
                file: path.clone(),
                op: "open",
                offset: 0,
                source,
            })?
            .len();
        let corrupt = |page: u32, d: Damage| HeapError::Corrupt {
            file: path.clone(),
            page,
            offset: u64::from(page) * page::PAGE_SIZE as u64,
            expected: d.expected,
            actual: d.actual,
        };
        if len == 0 || len % page::PAGE_SIZE as u64 != 0 {
            return Err(corrupt(
                0,
                Damage {
                    expected: format!(
                        "a length that is a positive multiple of {}",
                        page::PAGE_SIZE
                    ),
                    actual: format!("{len} bytes"),
                },
            ));
        }
        let n_pages = u32::try_from(len / page::PAGE_SIZE as u64).unwrap_or(u32::MAX);
        let page0 = read_page(&file, &path, 0)?;
        page::verify(&page0, 0, page::HEAP_HEADER_TYPE).map_err(|d| corrupt(0, d))?;
        let def = def::decode_page(&page0).map_err(|actual| {
            corrupt(
                0,
                Damage {
                    expected: "a table definition".into(),
                    actual,
                },
            )
        })?;
        let (format, _) = resolve(&def).map_err(|reason| HeapError::BadDefinition {
            table: def.name.clone(),
            reason,
        })?;
        let tail = if n_pages > 1 {
            let last = n_pages - 1;
            let p = read_page(&file, &path, last)?;
            page::verify(&p, last, page::HEAP_PAGE_TYPE).map_err(|d| corrupt(last, d))?;
            Some((last, p))
        } else {
            None
        };
        HeapTable::assemble(db, path, file, def, format, n_pages, tail)
    }

    fn assemble(
        db: &'db Database,
        path: PathBuf,
        file: File,
        def: TableDef,
        format: RowFormat,
        n_pages: u32,
        page: Option<(u32, Vec<u8>)>,
    ) -> Result<HeapTable<'db>> {
        let (_, key_sets) = resolve(&def).map_err(|reason| HeapError::BadDefinition {
            table: def.name.clone(),
            reason,
        })?;
        let mut indexes = Vec::new();
        for (name, cols, unique) in key_sets {
            let table = db.table(&index_table_name(&def.name, &name))?;
            indexes.push(HeapIndex {
                name,
                unique,
                cols,
                table,
            });
        }
        let max_row = page::ROW_HEADER + format.max_payload();
        Ok(HeapTable {
            db,
            def,
            path,
            file,
            format,
            indexes,
            lock: RwLock::new(Tail { n_pages, page }),
            max_row,
        })
    }

    /// The table's definition.
    pub fn def(&self) -> &TableDef {
        &self.def
    }

    /// The heap file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The database whose buffer pool holds the indexes.
    pub fn database(&self) -> &'db Database {
        self.db
    }

    /// Syncs the heap file (`fdatasync`): rows written before this call survive a power cut.
    pub fn sync(&self) -> Result<()> {
        let _r = self.lock.read();
        self.file
            .sync_data()
            .map_err(|source| self.io_err("sync", 0, source))
    }

    fn io_err(&self, op: &'static str, offset: u64, source: std::io::Error) -> HeapError {
        HeapError::Io {
            file: self.path.clone(),
            op,
            offset,
            source,
        }
    }

    fn corrupt(&self, offset: u64, d: Damage) -> HeapError {
        HeapError::Corrupt {
            file: self.path.clone(),
            page: u32::try_from(offset / page::PAGE_SIZE as u64).unwrap_or(u32::MAX),
            offset,
            expected: d.expected,
            actual: d.actual,
        }
    }

    /// Column positions for a projection (`None`: every column in table order).
    fn projection(&self, cols: &Option<Vec<String>>) -> Result<Vec<usize>> {
        match cols {
            None => Ok((0..self.def.columns.len()).collect()),
            Some(names) => names
                .iter()
                .map(|n| {
                    self.def.column_index(n).ok_or_else(|| HeapError::NoSuch {
                        table: self.def.name.clone(),
                        what: "column",
                        name: n.clone(),
                    })
                })
                .collect(),
        }
    }

    /// Reads the live row at `rowid` and decodes the columns `want`: one `pread`.
    fn fetch(&self, rowid: RowId, want: &[usize]) -> Result<Vec<Value>> {
        let in_page = (rowid % page::PAGE_SIZE as u64) as usize;
        if rowid < page::PAGE_SIZE as u64 || !(page::DATA_START..page::DATA_END).contains(&in_page)
        {
            return Err(self.corrupt(
                rowid,
                Damage {
                    expected: "a row id inside a row page's data area".into(),
                    actual: format!("row id {rowid}"),
                },
            ));
        }
        let len = self.max_row.min(page::DATA_END - in_page);
        let mut buf = vec![0u8; len];
        self.file.read_exact_at(&mut buf, rowid).map_err(|source| {
            if source.kind() == std::io::ErrorKind::UnexpectedEof {
                self.corrupt(
                    rowid,
                    Damage {
                        expected: "a row".into(),
                        actual: "the end of the heap file (a row lost in a crash?)".into(),
                    },
                )
            } else {
                self.io_err("read", rowid, source)
            }
        })?;
        let (status, payload) = page::row_at(&buf).map_err(|d| self.corrupt(rowid, d))?;
        if status != page::LIVE {
            return Err(self.corrupt(
                rowid,
                Damage {
                    expected: "a live row (an index entry points here)".into(),
                    actual: "a deleted row".into(),
                },
            ));
        }
        self.format
            .decode(payload, want)
            .map_err(|d| self.corrupt(rowid, d))
    }

    /// The row with primary key `key`, every column in table order.
    pub fn get(&self, key: &[Value]) -> Result<Option<Vec<Value>>> {
        let all: Vec<usize> = (0..self.def.columns.len()).collect();
        self.get_projected(key, &all)
    }

    /// Columns `cols` (by name, in this order) of the row with primary key `key`: answered
    /// from the primary key's index alone when every column is a key column, else with one
    /// `pread` of the row.
    pub fn get_columns(&self, key: &[Value], cols: &[&str]) -> Result<Option<Vec<Value>>> {
        let names = Some(cols.iter().map(|c| (*c).to_owned()).collect());
        let want = self.projection(&names)?;
        self.get_projected(key, &want)
    }

    fn get_projected(&self, key: &[Value], want: &[usize]) -> Result<Option<Vec<Value>>> {
        let _shared = self.lock.read();
        let pk = &self.indexes[0];
        let Some(entry) = pk.table.get(key)? else {
            return Ok(None);
        };
        if want.iter().all(|c| pk.cols.contains(c)) {
            let at = |c: &usize| {
                pk.cols
                    .iter()
                    .position(|x| x == c)
                    .and_then(|p| entry.get(p).cloned())
                    .unwrap_or(Value::Null)
            };
            return Ok(Some(want.iter().map(at).collect()));
        }
        let rowid = rowid_of(&entry);
        self.fetch(rowid, want).map(Some)
    }

    fn index(&self, name: &str) -> Result<&HeapIndex> {
        self.indexes
            .iter()
            .skip(1)
            .find(|i| i.name == name)
            .ok_or_else(|| HeapError::NoSuch {
                table: self.def.name.clone(),
                what: "index",
                name: name.to_owned(),
            })
    }

    /// A scan in primary key order (bounds are primary key prefixes, as for
    /// [`minnow::Table::scan`]): each row found through the primary key's index, then read
    /// with a `pread` unless every requested column is a primary key column.
    pub fn scan(&self, scan: Scan) -> Result<HeapRows<'_, 'db>> {
        self.scan_through(&self.indexes[0], scan)
    }

    /// A scan of secondary index `index` in index order (bounds are prefixes of the index
    /// columns). Covering only when every requested column is an index column: as in MyISAM
    /// an entry holds the key and the row id, not the primary key.
    pub fn scan_index(&self, index: &str, scan: Scan) -> Result<HeapRows<'_, 'db>> {
        self.scan_through(self.index(index)?, scan)
    }

    fn scan_through(&self, ix: &HeapIndex, scan: Scan) -> Result<HeapRows<'_, 'db>> {
        let want = self.projection(&scan.columns)?;
        let covering = want.iter().all(|c| ix.cols.contains(c));
        let guard = self.lock.read();
        let names: Vec<&str> = if covering {
            want.iter()
                .map(|&c| self.def.columns[c].name.as_str())
                .collect()
        } else {
            vec![ROWID]
        };
        let inner = ix.table.scan(Scan {
            columns: Some(names.iter().map(|n| (*n).to_owned()).collect()),
            ..scan
        })?;
        Ok(HeapRows::new(self, guard, inner, covering, want))
    }

    /// Every live row in heap (insertion) order, columns `cols` (`None`: all), reading the
    /// file sequentially 128 KiB at a time and checking every page: MyISAM's table scan.
    pub fn full_scan(&self, cols: Option<&[&str]>) -> Result<FullScan<'_, 'db>> {
        let names = cols.map(|c| c.iter().map(|n| (*n).to_owned()).collect());
        let want = self.projection(&names)?;
        let guard = self.lock.read();
        let n_pages = guard.n_pages;
        Ok(FullScan::new(self, guard, want, n_pages))
    }
}

/// The row id in an index table's row (its last column).
fn rowid_of(entry: &[Value]) -> RowId {
    match entry.last() {
        Some(Value::UInt(r)) => *r,
        _ => 0,
    }
}

/// Reads page `n` of a heap file.
fn read_page(file: &File, path: &Path, n: u32) -> Result<Vec<u8>> {
    let mut p = vec![0u8; page::PAGE_SIZE];
    let offset = u64::from(n) * page::PAGE_SIZE as u64;
    file.read_exact_at(&mut p, offset)
        .map_err(|source| HeapError::Io {
            file: path.to_path_buf(),
            op: "read",
            offset,
            source,
        })?;
    Ok(p)
}

/// Index definitions resolved to (name, column positions, unique), the primary key first.
type KeySets = Vec<(String, Vec<usize>, bool)>;

/// Checks a definition for what a heap table supports; its row format and key sets.
fn resolve(def: &TableDef) -> std::result::Result<(RowFormat, KeySets), String> {
    if def.columns.is_empty() || def.primary_key.is_empty() {
        return Err("needs at least one column and a primary key".into());
    }
    if let Some(c) = def.columns.iter().find(|c| c.auto_increment) {
        return Err(format!(
            "AUTO_INCREMENT (column `{}`) is not supported",
            c.name
        ));
    }
    if def.column_index(ROWID).is_some() {
        return Err(format!("the column name `{ROWID}` is reserved"));
    }
    let positions = |names: &[String]| -> std::result::Result<Vec<usize>, String> {
        names
            .iter()
            .map(|n| {
                let i = def
                    .column_index(n)
                    .ok_or_else(|| format!("no column `{n}`"))?;
                if def.columns[i].nullable {
                    return Err(format!(
                        "indexed column `{n}` may not be NULL in a heap table"
                    ));
                }
                Ok(i)
            })
            .collect()
    };
    let mut sets = vec![(PRIMARY.to_owned(), positions(&def.primary_key)?, true)];
    for i in &def.indexes {
        if i.name == PRIMARY {
            return Err("`PRIMARY` is reserved".into());
        }
        sets.push((i.name.clone(), positions(&i.columns)?, i.unique));
    }
    let cols = def
        .columns
        .iter()
        .map(|c| Column {
            ty: c.ty,
            nullable: c.nullable,
        })
        .collect();
    Ok((RowFormat::new(cols)?, sets))
}

/// The minnow table that holds an index's entries.
fn index_def(def: &TableDef, index: &str, cols: &[usize], unique: bool) -> TableDef {
    let mut t = TableDef::new(index_table_name(&def.name, index));
    let mut key: Vec<&str> = Vec::new();
    for &c in cols {
        let col = &def.columns[c];
        t = t.column(ColumnDef::new(col.name.clone(), col.ty));
        key.push(&col.name);
    }
    t = t.column(ColumnDef::new(ROWID, ColumnType::U64));
    if !unique {
        key.push(ROWID);
    }
    t.primary_key(&key)
}
