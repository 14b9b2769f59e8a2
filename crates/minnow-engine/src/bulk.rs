//! Bulk operations: [`Engine::create_index`] on a populated table and [`Engine::load`] of an
//! empty one (the `minnow` crate's `Database::create_index` and `Table::load`), both built
//! bottom-up with [`minnow_btree::tree::BulkBuilder`] instead of one insert per row.
//!
//! **`create_index`** scans the table once, encodes each row's entry for the new index, sorts
//! the entries, checks a unique index for duplicates (failing with
//! [`Error::DuplicateKey`] before anything is published), builds the tree bottom-up and then
//! rewrites the table's dictionary record to name the new index. That dictionary update is
//! the **commit point**: a crash before it leaves the build's pages allocated and unreachable
//! and the table as it was; after it the index exists whole (its pages' redo precedes the
//! dictionary record's in the log, so a durable dictionary record implies a durable tree).
//!
//! **`load`** takes rows in ascending primary key order into an empty table. The clustered
//! index is built bottom-up as the rows stream in; each secondary index's entries are
//! collected, sorted and built after. Unsorted rows, a duplicate primary key or a duplicate
//! unique key fail before anything is visible. Long columns go to overflow pages as an
//! insert's do (the same choice of columns, so a row that `insert` takes `load` takes too),
//! each row's chains written in a mini-transaction of their own from the new clustered
//! tree's leaf segment ([`minnow_btree::tree::BulkBuilder::push_values`]), before the leaf
//! that points at them. Each index is built as a new tree (with its
//! own segments, [`minnow_btree::tree::BulkBuilder::new`]); then one dictionary update names
//! all the new roots at once: that update is the statement's **commit point**, so after a
//! crash either every index holds the rows or none does. The table's old, empty trees are
//! freed after it. A crash before the commit point leaves the new trees' segments named by
//! no dictionary record, and one after it, before the freeing, the old trees' segments:
//! `open` frees such orphan segments. Handles taken before the load read through the
//! table's new entry.

use std::sync::Arc;

use minnow_btree::record::{RecordBuf, RecordLayout, SearchKey, Value};
use minnow_btree::tree::{BulkBuilder, BulkOptions};
use minnow_btree::{BTree, ScanRange, TreeError};
use minnow_buf::BufferPool;
use minnow_redo::Durability;

use crate::claim::refuse_claimed;
use crate::config::AutoIncLockMode;
use crate::engine::Engine;
use crate::entry::TableEntry;
use crate::error::{Error, Result, from_tree};
use crate::schema::{IndexDef, PRIMARY, SecMeta, TableMeta};

/// One secondary entry, encoded, with its key for sorting.
struct SortEntry {
    /// The key as one word, when the index's key is fixed-width and at most 8 bytes (0
    /// otherwise): sorting compares these instead of field lists.
    word: u64,
    key: SearchKey,
    rec: RecordBuf,
}

/// Encodes, sorts and checks the entries of index `s` for `rows`; a unique index with two
/// equal non-NULL keys is [`Error::DuplicateKey`] naming the index and the key.
fn sorted_entries<'r>(
    meta: &TableMeta,
    s: &SecMeta,
    layout: &RecordLayout,
    rows: impl Iterator<Item = &'r [Value]>,
) -> Result<Vec<SortEntry>> {
    let bad = |e: minnow_btree::record::RecordError| {
        from_tree(TreeError::Record(e), meta.name(), &s.name)
    };
    let mut entries = Vec::with_capacity(rows.size_hint().0);
    let mut all_words = true;
    for row in rows {
        let rec = layout.encode(&meta.secondary_values(s, row)).map_err(bad)?;
        let key = layout.key_of(rec.as_bytes(), rec.extra()).map_err(bad)?;
        let word = layout.flat_key(&key).and_then(|f| f.word());
        all_words &= word.is_some();
        entries.push(SortEntry {
            word: word.unwrap_or(0),
            key,
            rec,
        });
    }
    if all_words {
        entries.sort_unstable_by_key(|e| e.word);
    } else {
        entries.sort_unstable_by(|a, b| a.key.cmp(&b.key));
    }
    if s.unique {
        let n = s.cols.len();
        for w in entries.windows(2) {
            let (Some(a), Some(b)) = (w.first(), w.get(1)) else {
                continue;
            };
            let (ka, kb) = (a.key.fields(), b.key.fields());
            let (pa, pb) = (ka.get(..n), kb.get(..n));
            if pa == pb && pa.is_some_and(|p| p.iter().all(Option::is_some)) {
                let values = layout
                    .decode(b.rec.as_bytes(), b.rec.extra())
                    .map_err(bad)?;
                return Err(Error::DuplicateKey {
                    table: meta.name().to_owned(),
                    index: s.name.clone(),
                    key: values.into_iter().take(n).collect(),
                });
            }
        }
    }
    Ok(entries)
}

/// Passes `result` through; if it is an error, first frees the trees a failed bulk operation
/// created (unpublished, so nothing else refers to them; were the freeing cut by a crash,
/// `open` would free them as orphan segments).
pub fn abandon_on_error<T>(pool: &BufferPool, result: Result<T>, created: &[BTree]) -> Result<T> {
    if result.is_err() {
        for tree in created {
            // The operation's own error is the one to report.
            let _ = tree.free_all(pool);
        }
    }
    result
}

/// The `PAGE_MAX_TRX_ID` of a bulk-built secondary index's leaves: the newest transaction
/// id handed out so far (0 if none). The build holds the table's metadata lock, so every change
/// its rows hold was made by a transaction with at most this id; a view that sees all of
/// them (its up limit is above it) may trust the entries as they are, any older one checks
/// each entry against the row's version it sees (see the module docs).
fn build_max_trx_id(db: &Engine) -> u64 {
    db.trx_sys().status().next_id.saturating_sub(1)
}

/// A builder for secondary index `index_id` filled with sorted `entries`, its leaves
/// stamped with `max_trx_id` ([`build_max_trx_id`]); its tree is added to `created`.
#[allow(clippy::too_many_arguments)]
fn build<'p>(
    pool: &'p BufferPool,
    meta: &TableMeta,
    name: &str,
    index_id: u64,
    layout: RecordLayout,
    entries: &[SortEntry],
    max_trx_id: u64,
    created: &mut Vec<BTree>,
) -> Result<BulkBuilder<'p>> {
    let mut b = BulkBuilder::new(
        pool,
        meta.space_id(),
        index_id,
        layout,
        BulkOptions::default().max_trx_id(max_trx_id),
    )
    .map_err(|e| from_tree(e, meta.name(), name))?;
    created.push(b.tree().clone());
    for e in entries {
        b.push(&e.rec)
            .map_err(|e| from_tree(e, meta.name(), name))?;
    }
    Ok(b)
}

impl Engine {
    /// Creates secondary index `index` on table `table` from the rows it holds, built
    /// bottom-up from sorted entries (see the module docs: the dictionary update is the
    /// commit point). A unique index over rows with equal keys fails with
    /// [`Error::DuplicateKey`] naming the index and the key, and leaves nothing behind. Every
    /// handle on the table maintains the new index from then on. Durable as
    /// `flush_log_at_trx_commit` says.
    pub fn create_index(&self, table: &str, index: IndexDef) -> Result<Durability> {
        let inner = self;
        // No statement changes the table while the index is built from it.
        self.with_table_exclusive(table, |t| {
            let mut def = t.meta.def.clone();
            def.indexes.push(index);
            let mut meta = TableMeta::resolve(def)?;
            meta.index_id = t.meta.index_id;
            meta.root = t.meta.root;
            for (new, old) in meta.secondary.iter_mut().zip(&t.meta.secondary) {
                new.index_id = old.index_id;
                new.root = old.root;
            }
            let Some(s) = meta.secondary.last().cloned() else {
                return Err(Error::Corrupt {
                    what: format!("table `{table}`: the new index is missing"),
                });
            };
            // The dictionary record must fit before anything is built.
            inner.check_dict_record_fits(&meta)?;
            let layout = meta.secondary_layout(&s)?;
            let mut rows = Vec::new();
            for e in t
                .clustered
                .scan(inner.pool(), ScanRange::all())
                .map_err(|e| from_tree(e, table, PRIMARY))?
            {
                let e = e.map_err(|e| from_tree(e, table, PRIMARY))?;
                // A delete-marked row is deleted in the latest state: no entry for it.
                if e.deleted {
                    continue;
                }
                rows.push(meta.row_of(e.values)?);
            }
            let entries = sorted_entries(&meta, &s, &layout, rows.iter().map(Vec::as_slice))?;
            drop(rows);
            let mut ids = inner.next_index_id().lock();
            let index_id = *ids;
            let mut created = Vec::new();
            let built = build(
                inner.pool(),
                &meta,
                &s.name,
                index_id,
                layout,
                &entries,
                build_max_trx_id(inner),
                &mut created,
            )
            .and_then(|b| b.finish().map_err(|e| from_tree(e, table, &s.name)));
            let (tree, _) = abandon_on_error(inner.pool(), built, &created)?;
            *ids += 1;
            drop(ids);
            if let Some(last) = meta.secondary.last_mut() {
                last.index_id = index_id;
                last.root = tree.root();
            }
            // The commit point: the dictionary names the new index.
            let end = inner.store_definition(&meta)?;
            let mut secondary = t.secondary.clone();
            secondary.push(crate::entry::hook_tree(inner.ahi(), tree));
            // Configured for the new index's sake (the others are already).
            let entry = Arc::new(
                t.successor(meta, t.clustered.clone(), secondary)
                    .configured(inner.config()),
            );
            inner.tables().write().insert(table.to_owned(), entry);
            // Handles on the old entry read through the new one from now on: a later drop marks
            // only the new entry, and must reach readers of the trees both share (the `ddl`
            // module docs, "Reads racing a drop").
            t.superseded
                .store(true, std::sync::atomic::Ordering::Release);
            self.durable(end)
        })
    }

    /// Loads `rows` (one value per column, in table order, in ascending primary key order)
    /// into table `table`, which must be empty ([`Error::TableNotEmpty`]), building every
    /// index bottom-up (see the module docs). Rows out of order are [`Error::Unsorted`]; a
    /// repeated primary key or unique key is [`Error::DuplicateKey`]; either leaves the
    /// table empty. Returns the durability reached, as a statement does.
    ///
    /// On a table with an AUTO_INCREMENT column, rows with NULL or 0 there get the next
    /// values in row order and explicit values move the counter, as an insert statement's
    /// do; a load counts as a "bulk insert", so in modes 0 and 1 it holds the AUTO-INC lock
    /// to its end (see the `autoinc` module docs). Values taken by a load that fails are not
    /// given back.
    pub fn load<I, R>(&self, table: &str, rows: I) -> Result<Durability>
    where
        I: IntoIterator<Item = R>,
        R: AsRef<[Value]>,
    {
        let inner = self;
        // The AUTO-INC lock comes before the metadata lock (the `autoinc` lock order).
        let autoinc = self.table(table)?.autoinc.clone();
        let _auto_inc_lock = match (&autoinc, inner.config().autoinc_lock_mode) {
            (Some(a), AutoIncLockMode::Traditional | AutoIncLockMode::Consecutive) => {
                Some(a.lock_table())
            }
            _ => None,
        };
        // The load replaces the table's trees: no statement runs on it meanwhile.
        self.with_table_exclusive(table, |t| {
            let meta = &t.meta;
            let name = meta.name();
            let pool = inner.pool();
            let mut probe = t
                .clustered
                .scan(pool, ScanRange::all().limit(1))
                .map_err(|e| from_tree(e, name, PRIMARY))?;
            if probe.next().is_some() {
                return Err(Error::TableNotEmpty {
                    table: name.to_owned(),
                });
            }
            drop(probe);
            let mut created = Vec::new();
            let mut generated = Vec::new();
            let prepared = rows
                .into_iter()
                .map(|r| t.prepare_row(inner, r.as_ref(), &mut (0..0), &mut generated));
            let built = load_build(pool, t, prepared, build_max_trx_id(inner), &mut created);
            let (new_clustered, new_secondary, mut end) = abandon_on_error(pool, built, &created)?;
            // The commit point: the dictionary record names the built trees' roots.
            let mut new_meta = meta.clone();
            new_meta.root = new_clustered.root();
            for (s, tree) in new_meta.secondary.iter_mut().zip(&new_secondary) {
                s.root = tree.root();
            }
            let published = inner.store_definition(&new_meta);
            end = end.max(abandon_on_error(pool, published, &created)?);
            let durability = self.durable(end)?;
            // The new trees reuse the old (empty) trees' index ids: start their hash afresh.
            for tree in std::iter::once(&t.clustered).chain(&t.secondary) {
                inner.ahi().drop_index(tree.index_id());
            }
            let entry = Arc::new(
                t.successor(new_meta, new_clustered, new_secondary)
                    .hooked(inner.ahi())
                    .configured(inner.config()),
            );
            inner.tables().write().insert(name.to_owned(), entry);
            t.superseded
                .store(true, std::sync::atomic::Ordering::Release);
            // The empty trees the table had are now named by nothing: give their pages back (a
            // crash before this leaves orphan segments, which `open` frees).
            for tree in std::iter::once(&t.clustered).chain(&t.secondary) {
                tree.free_all(pool)
                    .map_err(|e| from_tree(e, name, "SYS_TABLES"))?;
            }
            Ok(durability)
        })
    }

    /// Runs `f` on table `table`'s entry with the table to itself, as both bulk builds need
    /// it: the DDL mutex, the quiesce latch shared, the table's metadata lock exclusively (no
    /// statement runs on the table meanwhile), then the entry looked up again under that lock
    /// and refused if a transaction's bulk insert claims the table.
    fn with_table_exclusive<R>(
        &self,
        table: &str,
        f: impl FnOnce(&Arc<TableEntry>) -> Result<R>,
    ) -> Result<R> {
        let _ddl = self.ddl().lock();
        let _q = self.write_latch()?;
        let mdl = Arc::clone(&self.table(table)?.mdl);
        let _x = mdl.write();
        let t = self.table(table)?;
        refuse_claimed(&t)?;
        f(&t)
    }
}

/// Builds every index of `t` from `rows` (see [`Engine::load`]), adding each new tree to
/// `created` as soon as it exists. Returns the built trees, not yet published.
fn load_build(
    pool: &BufferPool,
    t: &TableEntry,
    rows: impl Iterator<Item = Result<Vec<Value>>>,
    max_trx_id: u64,
    created: &mut Vec<BTree>,
) -> Result<(BTree, Vec<BTree>, minnow_redo::Lsn)> {
    let meta = &t.meta;
    let name = meta.name();
    let mut clustered = BulkBuilder::new(
        pool,
        meta.space_id(),
        t.clustered.index_id(),
        meta.clustered_layout()?,
        BulkOptions::default(),
    )
    .map_err(|e| from_tree(e, name, PRIMARY))?;
    created.push(clustered.tree().clone());
    // Rows are kept only if a secondary index needs them.
    let mut kept: Vec<Vec<Value>> = Vec::new();
    let mut previous: Option<Vec<Value>> = None;
    for row in rows {
        // Checked, normalised and given its auto-increment value (`prepare_row`).
        let row = row?;
        match clustered.push_values(&meta.clustered_values(&row)) {
            Ok(()) => {}
            Err(TreeError::Duplicate { .. }) => {
                return Err(Error::DuplicateKey {
                    table: name.to_owned(),
                    index: PRIMARY.to_owned(),
                    key: meta.pk_of(&row),
                });
            }
            Err(TreeError::OutOfOrder { .. }) => {
                return Err(Error::Unsorted {
                    table: name.to_owned(),
                    key: meta.pk_of(&row),
                    previous: previous.unwrap_or_default(),
                });
            }
            Err(e) => return Err(from_tree(e, name, PRIMARY)),
        }
        if meta.secondary.is_empty() {
            previous = Some(meta.pk_of(&row));
        } else {
            previous = Some(meta.pk_of(&row));
            kept.push(row);
        }
    }
    let mut builders = Vec::new();
    for (s, tree) in meta.secondary.iter().zip(&t.secondary) {
        let layout = meta.secondary_layout(s)?;
        let entries = sorted_entries(meta, s, &layout, kept.iter().map(Vec::as_slice))?;
        builders.push(build(
            pool,
            meta,
            &s.name,
            tree.index_id(),
            layout,
            &entries,
            max_trx_id,
            created,
        )?);
    }
    drop(kept);
    let (new_clustered, mut end) = clustered
        .finish()
        .map_err(|e| from_tree(e, name, PRIMARY))?;
    let mut new_secondary = Vec::new();
    for (b, s) in builders.into_iter().zip(&meta.secondary) {
        let (tree, e) = b.finish().map_err(|e| from_tree(e, name, &s.name))?;
        end = end.max(e);
        new_secondary.push(tree);
    }
    Ok((new_clustered, new_secondary, end))
}
