//! Version chains: every version of one row that the undo store still describes, newest
//! first, and the steps that walk them.
//!
//! A clustered record holds a row's newest version; its `DB_ROLL_PTR` names the undo record
//! holding the version before it, with that version's own roll pointer, and so on back to
//! the insert (the `minnow` crate's `history` module draws a chain). Everything that goes
//! back in time takes its steps here: a consistent read rebuilding the version its read view
//! sees (the statement machinery's visibility check calls [`older`] until a version is
//! visible), rollback and purge walking one undo log's `prev` chain ([`older_in_log`]),
//! rollback's secondary-index repair ([`version_of`]), and [`RowHistory`], the whole chain
//! with each version's writer and how the chain ends ([`walk`], [`chain_from_record`]).
//!
//! Every walk is bounded: a corrupt undo record whose roll pointer leads back to a record
//! already read is [`Error::Corrupt`] ([`VersionWalk`]), never a loop.
//!
//! Reading a chain writes nothing and takes no lock: `Table::history` (in `minnow`) reads through
//! the buffer pool of an open database, and [`chain_from_record`] reads through any
//! [`PageSource`], which is how `minnow history` reads the files of a stopped or running
//! database without opening it.

use std::collections::BTreeSet;

use minnow_btree::record::{RecordLayout, Value, decode_value};
use minnow_mvcc::undo;
use minnow_mvcc::{MvccError, PageSource, ReadView, UndoAddr, UndoRecord, trx_id_from_field};
/// The undo log's types a [`RowVersion`] names (from `minnow-mvcc`).
pub use minnow_mvcc::{RollPtr, UndoKind};
use minnow_page::walk::CycleGuard;

use crate::error::{Error, Result};
use crate::schema::{IndexInfo, TableDef, TableMeta};

/// Whether the transaction that wrote a version had committed when the chain was read.
/// More states may come (`#[non_exhaustive]`); [`Writer::name`] names each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Writer {
    /// Committed (or transaction id 0: a row written without a transaction, by a bulk load).
    Committed,
    /// Still running: only its own transaction sees this version, and a rollback (or the
    /// rollback at the next open, after a crash) removes it.
    Active,
}

impl Writer {
    /// The state in one lowercase word: `committed` or `active`.
    pub fn name(self) -> &'static str {
        match self {
            Writer::Committed => "committed",
            Writer::Active => "active",
        }
    }
}

/// One version of a row.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RowVersion {
    /// `DB_TRX_ID`: the transaction that wrote this version (0: none, a bulk-loaded row).
    pub trx_id: u64,
    /// Whether that transaction had committed.
    pub writer: Writer,
    /// `DB_ROLL_PTR`, decoded: where the undo record that leads to the older version is.
    pub roll_ptr: RollPtr,
    /// The kind of that undo record: `Update` or `DeleteMark` (it holds the older version),
    /// `Insert` (this version was inserted: nothing older), `None` if there is no undo
    /// record (a bulk-loaded row, or undo that is gone).
    pub undo: Option<UndoKind>,
    /// True if this version is delete-marked (the row was deleted by `trx_id`).
    pub deleted: bool,
    /// The column values of this version, in table order.
    pub values: Vec<Value>,
}

/// Why a chain ends where it does. More reasons may come (`#[non_exhaustive]`):
/// [`ChainEnd::reason`] names each, [`ChainEnd::trx_id`] gives the transaction where there is
/// one, and `Display` says it in a sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChainEnd {
    /// The oldest version's undo record is an insert: the row did not exist before it.
    Inserted {
        /// The transaction that inserted the row.
        trx_id: u64,
    },
    /// The oldest version has no undo record: bulk-loaded (or, once purge exists, a row whose
    /// history was purged).
    NoUndo,
    /// The oldest version's roll pointer names undo that is no longer there.
    UndoGone {
        /// Where the roll pointer points.
        roll_ptr: RollPtr,
        /// What is found there instead.
        why: String,
    },
}

impl ChainEnd {
    /// The reason in one snake_case word: `inserted`, `no_undo` or `undo_gone`.
    pub fn reason(&self) -> &'static str {
        match self {
            ChainEnd::Inserted { .. } => "inserted",
            ChainEnd::NoUndo => "no_undo",
            ChainEnd::UndoGone { .. } => "undo_gone",
        }
    }

    /// The transaction that inserted the row, for [`ChainEnd::Inserted`].
    pub fn trx_id(&self) -> Option<u64> {
        match self {
            ChainEnd::Inserted { trx_id } => Some(*trx_id),
            _ => None,
        }
    }
}

impl std::fmt::Display for ChainEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChainEnd::Inserted { trx_id } => write!(
                f,
                "end of chain: transaction {trx_id} inserted the row (insert undo: nothing older)"
            ),
            ChainEnd::NoUndo => f.write_str(
                "end of chain: the oldest version has no undo record (a bulk-loaded row)",
            ),
            ChainEnd::UndoGone { roll_ptr, why } => {
                write!(f, "end of chain: the undo at {roll_ptr} is gone ({why})")
            }
        }
    }
}

/// The version chain of one row, newest first.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RowHistory {
    /// The table.
    pub table: String,
    /// The primary key.
    pub key: Vec<Value>,
    /// The versions, newest (the clustered record itself) first; never empty.
    pub versions: Vec<RowVersion>,
    /// Why the chain ends after the last version.
    pub end: ChainEnd,
}

impl RowHistory {
    /// The position in [`RowHistory::versions`] of the version a reader with `view` sees:
    /// the newest one whose writer the view sees. `None` if the view sees none of them (the
    /// row was inserted after the view was taken, or the chain ends too early). A version
    /// that is delete-marked means the reader finds no row.
    pub fn seen_by(&self, view: &ReadView) -> Option<usize> {
        self.versions
            .iter()
            .position(|v| view.changes_visible(v.trx_id))
    }
}

/// The name an undo kind goes by in output: `insert`, `update`, `delete_mark`.
pub fn kind_name(k: UndoKind) -> &'static str {
    match k {
        UndoKind::Insert => "insert",
        UndoKind::Update => "update",
        UndoKind::DeleteMark => "delete_mark",
    }
}

// ---- The pieces consistent reads and rollback share ----

/// `DB_TRX_ID` and `DB_ROLL_PTR` of a clustered record's values.
pub fn sys_of(meta: &TableMeta, values: &[Value]) -> Result<(u64, RollPtr)> {
    let n = meta.pk.len();
    let bad = || Error::Corrupt {
        what: format!(
            "table `{}`: a clustered record without DB_TRX_ID and DB_ROLL_PTR",
            meta.name()
        ),
    };
    match (values.get(n), values.get(n + 1)) {
        (Some(Value::Bytes(a)), Some(Value::Bytes(b))) => {
            match (trx_id_from_field(a), RollPtr::from_field(b)) {
                (Some(id), Some(ptr)) => Ok((id, ptr)),
                _ => Err(bad()),
            }
        }
        _ => Err(bad()),
    }
}

/// The clustered values (system columns included) of the version an update or delete-mark
/// undo record holds. `layout` is the table's clustered record layout.
pub fn version_of(meta: &TableMeta, layout: &RecordLayout, rec: &UndoRecord) -> Result<Vec<Value>> {
    // lab 5 begin: version_of
    // lab 5 starter: let _ = (meta, layout, rec); Err(minnow_mvcc::MvccError::NotWritten(minnow_page::lab::NotWritten::new(5, "version_of")).into())
    let fields = layout.fields();
    let n = meta.pk.len();
    if rec.fields.len() + 2 != fields.len() {
        return Err(undo_mismatch(meta, rec, fields.len().saturating_sub(2)));
    }
    let mut out = Vec::with_capacity(fields.len());
    let mut it = rec.fields.iter();
    for (i, col) in fields.iter().enumerate() {
        if i == n {
            out.push(Value::trx_id(rec.old_trx_id));
            continue;
        }
        if i == n + 1 {
            out.push(Value::roll_ptr(rec.old_roll_ptr.to_u64()));
            continue;
        }
        out.push(match it.next() {
            Some(Some(b)) => decode_value(col.ty, b).map_err(|why| Error::Corrupt {
                what: format!("table `{}`: undo record field {i}: {why}", meta.name()),
            })?,
            _ => Value::Null,
        });
    }
    Ok(out)
    // lab 5 end
}

/// The clustered values of the version before `newer` that the update or delete-mark undo
/// record `rec` describes, `newer` being the version whose roll pointer names `rec` (its
/// values, system columns included).
///
/// A delete-mark changes no field of the record, only its mark and system columns, so a
/// delete-mark record holds the primary key alone (InnoDB's keeps the ordering columns and
/// the old system columns): the older version is `newer`'s fields with `rec`'s system
/// columns. A record holding every field (an update, or a delete-mark written before the
/// records were cut to the key) is read by [`version_of`] alone, whatever `newer` is.
pub fn version_before(
    meta: &TableMeta,
    layout: &RecordLayout,
    rec: &UndoRecord,
    newer: &[Value],
) -> Result<Vec<Value>> {
    let (all, n) = (layout.fields().len(), meta.pk.len());
    if rec.kind != UndoKind::DeleteMark || holds_whole(layout, rec) {
        return version_of(meta, layout, rec);
    }
    if rec.fields.len() != n || newer.len() != all {
        return Err(undo_mismatch(meta, rec, n));
    }
    // The key comes from the record, so a record of another row gives another key (which
    // the walks check), as with a whole record.
    let mut out = newer.to_vec();
    for ((x, f), col) in out.iter_mut().zip(&rec.fields).zip(layout.fields()) {
        *x = match f {
            Some(b) => decode_value(col.ty, b).map_err(|why| Error::Corrupt {
                what: format!("table `{}`: undo record key: {why}", meta.name()),
            })?,
            None => Value::Null,
        };
    }
    if let Some(x) = out.get_mut(n) {
        *x = Value::trx_id(rec.old_trx_id);
    }
    if let Some(x) = out.get_mut(n + 1) {
        *x = Value::roll_ptr(rec.old_roll_ptr.to_u64());
    }
    Ok(out)
}

/// True if undo record `rec` holds every field of a clustered record of `layout` but the
/// system columns (an update record; a delete-mark record written before they held the key
/// alone): [`version_of`] rebuilds the older version from it without the newer one.
pub fn holds_whole(layout: &RecordLayout, rec: &UndoRecord) -> bool {
    rec.fields.len() + 2 == layout.fields().len()
}

/// [`Error::Corrupt`] for undo record `rec` of `meta` holding another number of fields
/// than the `want` its layout has.
pub fn undo_mismatch(meta: &TableMeta, rec: &UndoRecord, want: usize) -> Error {
    Error::Corrupt {
        what: format!(
            "table `{}`: undo record {} of index {} has {} fields, expected {want}",
            meta.name(),
            rec.undo_no,
            rec.index_id,
            rec.fields.len()
        ),
    }
}

/// One step back along a chain, from a version whose roll pointer is `ptr`.
#[derive(Debug)]
pub enum Older {
    /// The older version, rebuilt from the update or delete-mark undo record `rec`.
    Version {
        /// The undo record.
        rec: UndoRecord,
        /// The older version's clustered values (with its own trx id and roll pointer).
        values: Vec<Value>,
    },
    /// `ptr` names an insert undo record: the version was inserted, nothing is older.
    Inserted,
    /// `ptr` names no undo record (a bulk-loaded row).
    NoUndo,
    /// The undo record at `ptr` belongs to another table's clustered index (undo that was
    /// freed and reused, or damage).
    Foreign {
        /// The index the record names.
        index_id: u64,
    },
}

/// The version before `newer` (clustered values, system columns included), whose roll
/// pointer is `ptr`, read from the undo store in `space` through `pages`
/// ([`version_before`]): the one step that consistent reads, rollback's secondary-index
/// repair and [`RowHistory`] all take.
pub fn older<S: PageSource + ?Sized>(
    pages: &S,
    space: u32,
    meta: &TableMeta,
    layout: &RecordLayout,
    ptr: RollPtr,
    newer: &[Value],
) -> Result<Older> {
    if !ptr.has_undo() {
        return Ok(Older::NoUndo);
    }
    if ptr.insert {
        return Ok(Older::Inserted);
    }
    let rec = undo::read_record(
        pages,
        space,
        UndoAddr {
            page: ptr.page,
            offset: ptr.offset,
        },
    )?;
    if rec.index_id != meta.index_id {
        return Ok(Older::Foreign {
            index_id: rec.index_id,
        });
    }
    let values = version_before(meta, layout, &rec, newer)?;
    Ok(Older::Version { rec, values })
}

// ---- Bounding the walks (see `minnow_page::walk`) ----

/// A walk back through the versions of one row, roll pointer to roll pointer, as consistent
/// reads and purge take it. A corrupt undo record can hold a roll pointer that leads back to
/// a record the walk already read; [`VersionWalk::step`] turns that into [`Error::Corrupt`]
/// after a few times the cycle's length, at the cost of one comparison per version (a
/// [`CycleGuard`]; [`walk`], which keeps every version anyway, keeps a set instead).
#[derive(Debug, Default)]
pub struct VersionWalk(CycleGuard<RollPtr>);

impl VersionWalk {
    /// Records that the walk is about to follow `ptr` to an older version of a row of `meta`.
    pub fn step(&mut self, meta: &TableMeta, ptr: RollPtr) -> Result<()> {
        if self.0.step(ptr) {
            return Ok(());
        }
        Err(Error::Corrupt {
            what: format!(
                "table `{}`: a version chain comes back to roll pointer {ptr} (the undo \
                 records' roll pointers form a cycle)",
                meta.name()
            ),
        })
    }
}

/// Checks a step of a walk along one undo log's `prev` chain, newest record first (rollback,
/// purge): undo numbers fall strictly along it, so `rec`, read at `at`, must have a number
/// below `below`, the number of the record read before it (`u64::MAX` at the start); `below`
/// then becomes `rec`'s. A chain that loops is [`Error::Corrupt`] at the first record it
/// meets again, before anything is undone or purged twice.
pub fn older_in_log(trx_id: u64, at: UndoAddr, rec: &UndoRecord, below: &mut u64) -> Result<()> {
    if rec.undo_no < *below {
        *below = rec.undo_no;
        return Ok(());
    }
    Err(Error::Corrupt {
        what: format!(
            "the undo log of transaction {trx_id} leads from undo number {} back to the record \
             at {}:{} with undo number {}: its records must be chained newest to oldest \
             (a cycle?)",
            *below, at.page, at.offset, rec.undo_no
        ),
    })
}

// ---- Reading a whole chain ----

/// Walks the chain of the row whose clustered record holds `record` (its values, system
/// columns included, as the record layout decodes them) and `deleted` (its delete mark).
/// `is_active(trx_id)` says whether a writer is still running.
pub fn walk<S: PageSource + ?Sized>(
    pages: &S,
    space: u32,
    meta: &TableMeta,
    layout: &RecordLayout,
    record: Vec<Value>,
    deleted: bool,
    is_active: &dyn Fn(u64) -> bool,
) -> Result<RowHistory> {
    let n = meta.pk.len();
    let key: Vec<Value> = record.iter().take(n).cloned().collect();
    let mut versions = Vec::new();
    let mut seen = BTreeSet::new();
    let (mut values, mut deleted) = (record, deleted);
    loop {
        let (trx_id, roll_ptr) = sys_of(meta, &values)?;
        let writer = if trx_id != 0 && is_active(trx_id) {
            Writer::Active
        } else {
            Writer::Committed
        };
        let step = if seen.insert(roll_ptr) {
            match older(pages, space, meta, layout, roll_ptr, &values) {
                Ok(s) => Ok(s),
                Err(Error::Undo(e @ MvccError::CorruptUndo { .. })) => Err(e.to_string()),
                Err(e) => return Err(e),
            }
        } else {
            return Err(Error::Corrupt {
                what: format!(
                    "table `{}`: the version chain of key {key:?} loops back to roll pointer {roll_ptr}",
                    meta.name()
                ),
            });
        };
        // What comes after this version: the older one (Ok) or the chain's end (Err).
        let gone = |why: String| ChainEnd::UndoGone { roll_ptr, why };
        let (undo, next) = match step {
            Ok(Older::Version { rec, values: v }) if v.get(..n) == Some(&key[..]) => {
                (Some(rec.kind), Ok((v, rec.old_deleted)))
            }
            Ok(Older::Version { .. }) => (
                None,
                Err(gone("the undo record there describes another row".into())),
            ),
            Ok(Older::Foreign { index_id }) => (
                None,
                Err(gone(format!(
                    "the undo record there belongs to index {index_id}, not to this table's \
                     index {}",
                    meta.index_id
                ))),
            ),
            Ok(Older::Inserted) => (Some(UndoKind::Insert), Err(ChainEnd::Inserted { trx_id })),
            Ok(Older::NoUndo) => (None, Err(ChainEnd::NoUndo)),
            Err(why) => (None, Err(gone(why))),
        };
        versions.push(RowVersion {
            trx_id,
            writer,
            roll_ptr,
            undo,
            deleted,
            values: meta.row_of(values)?,
        });
        match next {
            Ok((v, d)) => (values, deleted) = (v, d),
            Err(end) => {
                return Ok(RowHistory {
                    table: meta.name().to_owned(),
                    key,
                    versions,
                    end,
                });
            }
        }
    }
}

/// The version chain of a clustered record that a tool read itself (from the data file,
/// without opening the database): `def` and `clustered` are the table's definition and its
/// clustered index as the dictionary record describes them ([`crate::schema::decode_table_indexes`]),
/// `record` the record's values as `clustered.layout` decodes them (off-page columns
/// fetched), `deleted` its delete mark, and `is_active` says which writers had not committed
/// ([`minnow_mvcc::active_logs`] reads that from the TRX_SYS page). The undo is read from the
/// system tablespace through `pages`.
pub fn chain_from_record<S: PageSource + ?Sized>(
    pages: &S,
    def: &TableDef,
    clustered: &IndexInfo,
    record: Vec<Value>,
    deleted: bool,
    is_active: &dyn Fn(u64) -> bool,
) -> Result<RowHistory> {
    let mut meta = TableMeta::resolve(def.clone())?;
    meta.index_id = clustered.index_id;
    meta.root = clustered.root;
    if record.len() != clustered.layout.fields().len() {
        return Err(Error::Corrupt {
            what: format!(
                "table `{}`: a clustered record of {} fields, the layout has {}",
                def.name,
                record.len(),
                clustered.layout.fields().len()
            ),
        });
    }
    walk(
        pages,
        crate::dict::SYSTEM_SPACE_ID,
        &meta,
        &clustered.layout,
        record,
        deleted,
        is_active,
    )
}
