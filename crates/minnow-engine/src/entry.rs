//! One open table: [`TableEntry`], what the table cache holds for it (its resolved
//! definition, its trees, the flags that tell a reader whether a drop or a load replaced
//! it, its auto-increment counter, metadata lock and count cache), how it is opened from
//! its dictionary record, and the adaptive hash index's hooks on its trees.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use minnow_ahi::Ahi;
use minnow_btree::BTree;
use minnow_buf::{BufferPool, SpreadLatch};

use crate::autoinc::AutoInc;
use crate::claim::BulkClaim;
use crate::engine::GapLatch;
use crate::error::{Error, Result, from_tree};
use crate::schema::{PRIMARY, TableMeta};

/// One open table: its resolved definition and its trees.
#[derive(Debug)]
pub struct TableEntry {
    /// The table's resolved definition, with its indexes' ids and roots.
    pub meta: TableMeta,
    /// The clustered index.
    pub clustered: BTree,
    /// The secondary indexes, in the order of `meta.secondary`.
    pub secondary: Vec<BTree>,
    /// Set by `drop_table` / `drop_index` when this entry stops being the table's: handles
    /// still holding it get [`Error::TableChanged`].
    pub dropped: std::sync::atomic::AtomicBool,
    /// Set by `Table::load` (replacing this entry's empty trees) and `create_index`:
    /// handles still holding it read through the table's current entry.
    pub superseded: std::sync::atomic::AtomicBool,
    /// The auto-increment counter and AUTO-INC lock, if the table has an AUTO_INCREMENT
    /// column: one per table, carried from entry to entry when DDL replaces the entry.
    pub autoinc: Option<Arc<AutoInc>>,
    /// The table's metadata lock (MySQL's MDL): every write statement on the table holds it
    /// shared, DDL and bulk load exclusively. One per table, carried from entry to entry
    /// when DDL replaces the entry (see [`crate::write::WriteGuard`]). Writers of
    /// different rows hold it together (shared); only DDL on this table waits. Latch order: row 5 of
    /// ARCHITECTURE.md's table, after the quiesce latch, never held across a row lock wait.
    /// A [`SpreadLatch`]: every statement takes it, so its shared holds write only the
    /// statement's thread's own counter, not one line all writers of the table share.
    pub mdl: Arc<SpreadLatch>,
    /// The table's bulk insert claim ([`BulkClaim`]): one per table, carried from entry to
    /// entry as `mdl` is.
    pub claim: Arc<BulkClaim>,
    /// The gap latch: a stripe of it is held across finding a clustered record's neighbour
    /// and locking by it (see the `write` gaps module). One per database
    /// (the engine's), shared by every entry.
    pub gaps: Arc<GapLatch>,
    /// The change counter and last reusable `count()` (see [`CountCache`]); new with every
    /// entry.
    pub counted: CountCache,
}

/// What became of a table entry since a reader took it (see the `minnow` crate's `ddl`
/// module, "Reads racing a drop").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryState {
    /// Still the table's: reads through it stand.
    Live,
    /// `Table::load` replaced its (empty) trees: read through the table's current entry.
    Superseded,
    /// `drop_table` or `drop_index` replaced or removed it: its trees may be gone.
    Dropped,
}

impl TableEntry {
    /// The entry's state now. Called after a read, it says whether the read stands (see
    /// "Reads racing a drop"): the flags are set before any page is freed.
    pub fn state(&self) -> EntryState {
        if self.dropped.load(Ordering::Acquire) {
            EntryState::Dropped
        } else if self.superseded.load(Ordering::Acquire) {
            EntryState::Superseded
        } else {
            EntryState::Live
        }
    }
}

impl TableEntry {
    /// Opens the trees of `meta`'s table; `mark` is its counter record's value, which a table
    /// with an AUTO_INCREMENT column must have; `gaps` the database's gap latch.
    pub fn open(
        pool: &BufferPool,
        meta: TableMeta,
        mark: Option<u128>,
        gaps: &Arc<GapLatch>,
    ) -> Result<TableEntry> {
        let name = meta.name().to_owned();
        let autoinc = match (meta.auto_increment_column(), mark) {
            (None, _) => None,
            (Some(_), Some(mark)) => AutoInc::new(&meta, mark).map(Arc::new),
            (Some(_), None) => {
                return Err(Error::Corrupt {
                    what: format!(
                        "table `{name}` has an AUTO_INCREMENT column but the dictionary holds \
                         no counter record for it"
                    ),
                });
            }
        };
        let space = meta.space_id();
        if let Some(c) = meta.def.compression
            && pool.spaces().get(space).is_none()
        {
            return Err(Error::Corrupt {
                what: format!(
                    "table `{name}` is compressed ({c}) but its tablespace {} is missing",
                    c.file_name()
                ),
            });
        }
        let clustered = BTree::open(pool, space, meta.root, meta.clustered_layout()?)
            .map_err(|e| from_tree(e, &name, PRIMARY))?;
        let mut secondary = Vec::new();
        for s in &meta.secondary {
            secondary.push(
                BTree::open(pool, space, s.root, meta.secondary_layout(s)?)
                    .map_err(|e| from_tree(e, &name, &s.name))?,
            );
        }
        Ok(TableEntry::new(meta, (clustered, secondary), autoinc, gaps))
    }

    /// The entry that replaces this one when DDL, a load or a bulk insert's commit gives the
    /// table new trees (or a new definition): `meta` over `clustered` and `secondary`, with
    /// the table's auto-increment counter, metadata lock, bulk claim and the database's gap
    /// latch carried over (one of each per table, whatever its entry), and a count cache of its
    /// own. Not dropped or superseded. Hook and configure the trees it did not have as the
    /// caller needs ([`TableEntry::hooked`], [`TableEntry::configured`]).
    pub fn successor(
        &self,
        meta: TableMeta,
        clustered: BTree,
        secondary: Vec<BTree>,
    ) -> TableEntry {
        TableEntry {
            mdl: Arc::clone(&self.mdl),
            claim: Arc::clone(&self.claim),
            ..TableEntry::new(
                meta,
                (clustered, secondary),
                self.autoinc.clone(),
                &self.gaps,
            )
        }
    }

    /// A new table's entry over its trees (clustered, then secondary in the order of
    /// `meta.secondary`): not dropped or superseded, its own metadata lock and count cache,
    /// the database's gap latch `gaps`.
    pub fn new(
        meta: TableMeta,
        (clustered, secondary): (BTree, Vec<BTree>),
        autoinc: Option<Arc<AutoInc>>,
        gaps: &Arc<GapLatch>,
    ) -> TableEntry {
        TableEntry {
            meta,
            clustered,
            secondary,
            dropped: Default::default(),
            superseded: Default::default(),
            autoinc,
            mdl: Arc::default(),
            claim: Arc::default(),
            gaps: Arc::clone(gaps),
            counted: Default::default(),
        }
    }
}

/// `tree` with the hash's hook for its index installed (unchanged if it has one).
pub fn hook_tree(ahi: &Ahi, tree: BTree) -> BTree {
    if tree.search_hook().is_some() {
        return tree;
    }
    rehook_tree(ahi, tree)
}

/// `tree` with a new hook into `ahi`, replacing the one it has: for a tree whose index's
/// hash was dropped ([`Ahi::drop_index`] kills every hook on the index id) and that is to be
/// hashed again.
pub fn rehook_tree(ahi: &Ahi, tree: BTree) -> BTree {
    let hook = ahi.hook(tree.space(), tree.index_id(), tree.layout().clone());
    tree.with_search_hook(hook)
}

impl TableEntry {
    /// This entry with the padding rule `pad` on every tree (a no-op for an uncompressed
    /// table).
    pub fn zip_padded(self, pad: minnow_btree::tree::ZipPadConfig) -> TableEntry {
        self.clustered.set_zip_pad(pad);
        for t in &self.secondary {
            t.set_zip_pad(pad);
        }
        self
    }

    /// This entry with the settings `config` gives every tree: the compression padding
    /// ([`TableEntry::zip_padded`]) and the merge threshold (`Config::merge_threshold`).
    pub fn configured(mut self, config: &crate::Config) -> TableEntry {
        let pct = config.merge_threshold;
        self.clustered = self.clustered.with_merge_threshold(pct);
        self.secondary = self
            .secondary
            .into_iter()
            .map(|t| t.with_merge_threshold(pct))
            .collect();
        self.zip_padded(config.zip_pad())
    }

    /// This entry with every tree hooked to `ahi`.
    pub fn hooked(mut self, ahi: &Ahi) -> TableEntry {
        self.clustered = hook_tree(ahi, self.clustered);
        self.secondary = self
            .secondary
            .into_iter()
            .map(|t| hook_tree(ahi, t))
            .collect();
        self
    }
}

/// A table's change counter and its last reusable count (see the [`crate::read::count`]
/// module docs, "Counting twice costs nothing"). One per table entry: DDL
/// that replaces the entry starts a new one.
#[derive(Debug, Default)]
pub struct CountCache {
    /// Write statements ended on the table.
    changes: AtomicU64,
    /// The last count that any view seeing `max_trx_id` may reuse while `changes` is the same.
    last: Mutex<Option<Cached>>,
}

/// A count that may be reused: taken at `changes`, of `rows`, by writers up to `max_trx_id`.
#[derive(Debug, Clone, Copy)]
pub struct Cached {
    /// The table's change counter when the count was taken.
    pub changes: u64,
    /// The rows counted.
    pub rows: u64,
    /// The largest writer id behind the count.
    pub max_trx_id: u64,
}

impl CountCache {
    /// The change counter now (an acquire load).
    pub fn changes(&self) -> u64 {
        self.changes.load(Ordering::Acquire)
    }

    /// Called when a write statement on the table ends, before its transaction can commit.
    pub fn changed(&self) {
        self.changes.fetch_add(1, Ordering::AcqRel);
    }

    /// The last reusable count, if any.
    pub fn last(&self) -> Option<Cached> {
        *self.last.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Forgets the last count: the next count walks the index.
    pub fn forget(&self) {
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// Keeps `c` as the last reusable count.
    pub fn keep(&self, c: Cached) {
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) = Some(c);
    }
}
