//! `CREATE TABLE`, `DROP TABLE` and `DROP INDEX` ([`Engine::create_table`],
//! [`Engine::drop_table`], [`Engine::drop_index`]), and the drops `open` finishes after a
//! crash.
//!
//! ## Dropping, crash-safely
//!
//! A table's indexes are B-trees, and each tree owns two segments of the system tablespace
//! (leaves and non-leaf pages, see `minnow_btree::space`). Dropping an index means two
//! changes that cannot be one mini-transaction: the dictionary must stop naming the tree, and
//! the tree's segments must go back to the space (one mtr per 64 extents of each segment).
//! So a drop runs in four steps, after InnoDB's "drop a table in the background" idea:
//!
//! 1. insert a **pending-drop marker** into the dictionary: the key `"\0drop "` plus the
//!    first segment's id (no table name contains NUL; for a compressed table's segments the
//!    id is preceded by the space id and a dot, as segment ids count from 1 in every
//!    space), the value the segments to free, each as space (4), inode page (4), inode
//!    offset (2) and segment id (8);
//! 2. change the dictionary (delete the table's record, or rewrite it without the index):
//!    this is the **commit point**, made durable before the call returns;
//! 3. free the segments ([`minnow_btree::BTree::free_all`]);
//! 4. delete the marker.
//!
//! `create_table` needs no marker: its trees are created first and its dictionary record is
//! its commit point, so a crash in between leaves segments no record names; `open` after a
//! crash frees such **orphan segments**.
//!
//! A segment is known by its space and its id together: each tablespace numbers its own
//! segments, so a compressed table's segment 3 and one of `ibdata1` are different segments.
//! Every tablespace a table can live in (`ibdata1` and each shared compressed tablespace) is
//! searched for orphans and checked.
//!
//! `open` finishes what a crash interrupted: for each marker, if a live tree still uses one
//! of its segments, the crash came before the commit point and the marker is simply removed;
//! otherwise the segments are freed (a segment whose inode no longer holds the recorded id
//! is already free: segment ids are never reused) and the marker removed. Either way the
//! steps can run again any number of times.
//!
//! ## Reads racing a drop
//!
//! Readers take no lock (see the `minnow` crate docs, "Concurrency"), so a `get` or a scan may still
//! be walking a tree while `drop_table` or `drop_index` frees its segments, and the freed
//! pages may already serve another index, an overflow chain or the undo log. Such a reader
//! would meet "page belongs to index 8, not 5" or a BLOB page where it expected an index
//! page, and, worse, a freed page that a later tree of the same index id took (as
//! `Table::load` reuses its empty trees' ids) would read as valid. Holding the pages for
//! every read (a shared lock the drop waits for) would block drops behind long streaming
//! scans, and a thread that scans and then drops would wait for itself.
//!
//! minnow instead **validates each read after it is done**, as a seqlock reader does. A drop
//! sets the old table entry's `dropped` flag (a `load`, its `superseded` flag) *after* its
//! commit point and *before* it frees a page. (`create_index` frees nothing, but it sets the
//! old entry's `superseded` flag too: a later drop marks only the newest entry, so readers
//! of an older one must go through it.) A reader that reached a page changed by the
//! freeing or by a later reuse did so under that page's latch, after the change: it is
//! ordered after the flag was set, so the flag load that follows its read sees it
//! ([`TableEntry::state`], an acquire load). So when a reader finds its entry still
//! [`EntryState::Live`](crate::entry::EntryState::Live) after the read, every page it read
//! was still the table's, and the answer stands; when it finds the entry dropped, it throws the answer or the error away
//! and reports [`crate::Error::TableChanged`]; when superseded by a load, a read that has
//! returned nothing yet (a `get`, the start of a scan) runs again on the table's new entry
//! (every read runs through [`crate::read::validated`], which does both).
//! Streaming scans check after every row and at their end, so a row or an end that came
//! from a freed page is never returned (a scan whose table changed under it ends with
//! `TableChanged`). The cost is one or two
//! flag loads per row, from a cache line that only DDL writes.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use minnow_btree::BTree;
use minnow_btree::record::Value;
use minnow_btree::space::{self, FsegHeader, Segment};

use crate::autoinc::{self, AutoInc};
use crate::claim::refuse_claimed;
use crate::compression;
use crate::dict::{SYSTEM_SPACE_ID, dict_row};
use crate::engine::Engine;
use crate::entry::TableEntry;
use crate::error::{Error, Result, from_tree};
use crate::schema::{self, PRIMARY, TableDef, TableMeta};

/// The prefix of pending-drop marker keys in the dictionary.
const DROP_MARK: &[u8] = b"\0drop ";
/// Bytes of one segment in a marker's value.
const SEG_LEN: usize = 18;

/// True for a dictionary key that is a pending-drop marker.
pub(crate) fn is_drop_marker(key: &[u8]) -> bool {
    key.starts_with(DROP_MARK)
}

fn marker_key(segs: &[Segment]) -> Vec<u8> {
    let id = segs.first().map_or(0, |s| s.id);
    match segs.first().map_or(SYSTEM_SPACE_ID, |s| s.header.space) {
        SYSTEM_SPACE_ID => [DROP_MARK, format!("{id:016x}").as_bytes()].concat(),
        space => [DROP_MARK, format!("{space:x}.{id:016x}").as_bytes()].concat(),
    }
}

/// A segment's identity across tablespaces: its space and its id.
pub(crate) fn seg_key(s: &Segment) -> (u32, u64) {
    (s.header.space, s.id)
}

/// The tablespaces a table's trees can live in: the system tablespace, then every
/// compressed tablespace registered, by id.
pub(crate) fn table_spaces(inner: &Engine) -> Vec<u32> {
    let mut ids = vec![SYSTEM_SPACE_ID];
    ids.extend(
        inner
            .pool()
            .spaces()
            .compressed()
            .iter()
            .map(|s| s.space_id()),
    );
    ids
}

fn encode_segs(segs: &[Segment]) -> Vec<u8> {
    let mut out = Vec::with_capacity(segs.len() * SEG_LEN);
    for s in segs {
        out.extend_from_slice(&s.header.to_bytes());
        out.extend_from_slice(&s.id.to_be_bytes());
    }
    out
}

pub(crate) fn decode_segs(key: &[u8], b: &[u8]) -> Result<Vec<Segment>> {
    let bad = || Error::Corrupt {
        what: format!(
            "pending-drop record {:?} has {} bytes, not a multiple of {SEG_LEN}",
            String::from_utf8_lossy(key),
            b.len()
        ),
    };
    if !b.len().is_multiple_of(SEG_LEN) {
        return Err(bad());
    }
    b.chunks(SEG_LEN)
        .map(|c| {
            let header = FsegHeader::read(c, 0).map_err(|_| bad())?;
            let id = c
                .get(10..18)
                .and_then(|x| <[u8; 8]>::try_from(x).ok())
                .map(u64::from_be_bytes)
                .ok_or_else(bad)?;
            Ok(Segment { header, id })
        })
        .collect()
}

fn segments_of<'a>(trees: impl IntoIterator<Item = &'a BTree>) -> Vec<Segment> {
    trees
        .into_iter()
        .flat_map(|t| [t.segments().leaf, t.segments().top])
        .collect()
}

/// `CREATE TABLE`, `DROP TABLE` and `DROP INDEX` (`Database::create_table`,
/// `Database::drop_table`, `Database::drop_index`); each holds the dictionary latch, then
/// the quiesce latch shared, then (a drop) the table's metadata lock exclusively.
impl Engine {
    /// Refuses, as [`Error::BadDefinition`], a definition whose dictionary record would not
    /// fit a page: checked by table creation and index creation before any tree is made or
    /// built, so a definition that cannot be stored leaves nothing behind.
    pub(crate) fn check_dict_record_fits(&self, meta: &TableMeta) -> Result<()> {
        let rec = self
            .dict()
            .layout()
            .encode(&dict_row(meta.name().as_bytes(), schema::encode(meta)))
            .map_err(|e| Error::BadDefinition {
                table: meta.name().to_owned(),
                reason: e.to_string(),
            })?;
        let max = minnow_btree::node::max_record_len(self.config().page_size.bytes());
        if rec.len() > max {
            return Err(Error::BadDefinition {
                table: meta.name().to_owned(),
                reason: format!(
                    "its dictionary record of {} bytes exceeds the {max}-byte maximum",
                    rec.len()
                ),
            });
        }
        Ok(())
    }

    /// Creates a table and its indexes; returns its entry, in the table cache. The trees
    /// are created first (one mtr each); the dictionary record, inserted in one more mtr, is
    /// the commit point: after a crash the table either exists whole or not at all (a crash
    /// before that record leaves segments no record names, which `open` frees). Durable as
    /// `flush_log_at_trx_commit` says.
    pub fn create_table(&self, def: TableDef) -> Result<Arc<TableEntry>> {
        let inner = self;
        let _ddl = inner.ddl().lock();
        let _q = inner.write_latch()?;
        let mut meta = TableMeta::resolve(def)?;
        if inner.tables().read().contains_key(meta.name()) {
            return Err(Error::TableExists {
                table: meta.name().to_owned(),
            });
        }
        if let Some(c) = meta.def.compression {
            compression::check_config(&c, meta.name(), inner.config())?;
        }
        let name = meta.name().to_owned();
        // The dictionary record must fit before any tree is created.
        inner.check_dict_record_fits(&meta)?;
        // A compressed table's shared tablespace exists (durably) before any tree is made
        // in it.
        let space = match meta.def.compression {
            Some(c) => {
                compression::ensure_space(inner.dir(), inner.config(), inner.pool().spaces(), c)?
            }
            None => SYSTEM_SPACE_ID,
        };
        let mut ids = inner.next_index_id().lock();
        let (clustered, _) = BTree::create(inner.pool(), space, *ids, meta.clustered_layout()?)
            .map_err(|e| from_tree(e, &name, PRIMARY))?;
        meta.index_id = *ids;
        meta.root = clustered.root();
        *ids += 1;
        let mut secondary = Vec::new();
        for i in 0..meta.secondary.len() {
            let layout = meta.secondary_layout(&meta.secondary[i])?;
            let (t, _) = BTree::create(inner.pool(), space, *ids, layout)
                .map_err(|e| from_tree(e, &name, &meta.secondary[i].name))?;
            meta.secondary[i].index_id = *ids;
            meta.secondary[i].root = t.root();
            *ids += 1;
            secondary.push(t);
        }
        drop(ids);
        // The counter record goes first (its value 1: nothing handed out yet), so that a
        // table record always has one; it overwrites any a crash left behind by a dropped
        // table of the same name.
        let autoinc = AutoInc::new(&meta, 1).map(Arc::new);
        if autoinc.is_some() {
            autoinc::write_counter(inner, &name, 1)?;
        }
        let end = inner
            .dict()
            .insert(
                inner.pool(),
                &dict_row(name.as_bytes(), schema::encode(&meta)),
            )
            .map_err(|e| from_tree(e, &name, "SYS_TABLES"))?;
        inner.durable(end)?;
        let entry = Arc::new(
            TableEntry::new(meta, (clustered, secondary), autoinc, inner.gaps())
                .hooked(inner.ahi())
                .configured(inner.config()),
        );
        inner.tables().write().insert(name, Arc::clone(&entry));
        Ok(entry)
    }

    /// Drops table `name` with all its indexes: the dictionary record goes (the commit
    /// point, durable when this returns), then every index's segments go back to the
    /// tablespace. Entries of the table taken before read as dropped. Crash-safe: see the
    /// module docs.
    pub fn drop_table(&self, name: &str) -> Result<()> {
        let inner = self;
        let _ddl = inner.ddl().lock();
        let _q = inner.write_latch()?;
        let entry = inner.table(name)?;
        // Statements on the table finish first; later ones find it gone.
        let _x = entry.mdl.write();
        // A bulk insert's claim holds the table: the DDL must not run under it.
        refuse_claimed(&entry)?;
        let segs = segments_of(std::iter::once(&entry.clustered).chain(&entry.secondary));
        let key = mark_drop(inner, &segs, name)?;
        let end = inner
            .dict()
            .delete(inner.pool(), &[Value::Bytes(name.as_bytes().to_vec())])
            .map_err(|e| from_tree(e, name, "SYS_TABLES"))?;
        inner
            .pool()
            .commit_durable(end, minnow_redo::FlushAtCommit::Sync)?;
        entry.dropped.store(true, Ordering::Release);
        inner.tables().write().remove(name);
        for tree in std::iter::once(&entry.clustered).chain(&entry.secondary) {
            inner.ahi().drop_index(tree.index_id());
        }
        // The counter record goes after the commit point; a crash before this leaves it
        // without a table, and `open` removes it.
        if entry.autoinc.is_some() {
            autoinc::delete_counter(inner, name)?;
        }
        free_segments(inner, &key, &segs)
    }

    /// Drops secondary index `index` of table `table`: the table's dictionary record is
    /// rewritten without it (the commit point, durable when this returns), then the index's
    /// segments go back to the tablespace. The primary key cannot be dropped
    /// ([`Error::DropPrimary`]); entries of the table taken before read as superseded.
    /// Crash-safe: see the module docs.
    pub fn drop_index(&self, table: &str, index: &str) -> Result<()> {
        let inner = self;
        let _ddl = inner.ddl().lock();
        let _q = inner.write_latch()?;
        let entry = inner.table(table)?;
        let _x = entry.mdl.write();
        // A bulk insert's claim holds the table: the DDL must not run under it.
        refuse_claimed(&entry)?;
        if index == PRIMARY {
            return Err(Error::DropPrimary {
                table: table.to_owned(),
            });
        }
        let i = entry
            .meta
            .secondary
            .iter()
            .position(|s| s.name == index)
            .ok_or_else(|| Error::NoSuchIndex {
                table: table.to_owned(),
                index: index.to_owned(),
            })?;
        let mut meta = entry.meta.clone();
        meta.secondary.remove(i);
        meta.def.indexes.retain(|d| d.name != index);
        // The AUTO_INCREMENT column must stay the first column of some index.
        meta.check_auto_increment()?;
        let mut secondary = entry.secondary.clone();
        let tree = secondary.remove(i);
        let segs = segments_of([&tree]);
        let key = mark_drop(inner, &segs, table)?;
        let end = inner.store_definition(&meta)?;
        inner
            .pool()
            .commit_durable(end, minnow_redo::FlushAtCommit::Sync)?;
        let new = Arc::new(entry.successor(meta, entry.clustered.clone(), secondary));
        entry.dropped.store(true, Ordering::Release);
        inner.tables().write().insert(table.to_owned(), new);
        inner.ahi().drop_index(tree.index_id());
        free_segments(inner, &key, &segs)
    }
}

/// Step 1 of a drop: the pending-drop marker. Returns its key.
fn mark_drop(inner: &Engine, segs: &[Segment], table: &str) -> Result<Vec<u8>> {
    let key = marker_key(segs);
    inner
        .dict()
        .insert(inner.pool(), &dict_row(&key, encode_segs(segs)))
        .map_err(|e| from_tree(e, table, "SYS_TABLES"))?;
    Ok(key)
}

/// Steps 3 and 4 of a drop: free the segments, then remove the marker.
fn free_segments(inner: &Engine, key: &[u8], segs: &[Segment]) -> Result<()> {
    let mut last = None;
    for &s in segs {
        last = Some(
            space::free_segment(inner.pool(), s)
                .map_err(|e| from_tree(e, "SYS_TABLES", "pending drop"))?,
        );
    }
    let _ = last;
    let end = inner
        .dict()
        .delete(inner.pool(), &[Value::Bytes(key.to_vec())])
        .map_err(|e| from_tree(e, "SYS_TABLES", PRIMARY))?;
    inner.durable(end)?;
    Ok(())
}

/// The segments every live tree uses: the dictionary's and each table's.
pub(crate) fn live_segments(
    inner: &Engine,
    tables: &BTreeMap<String, Arc<TableEntry>>,
) -> Result<Vec<Segment>> {
    let mut trees = vec![inner.dict()];
    for t in tables.values() {
        trees.push(&t.clustered);
        trees.extend(&t.secondary);
    }
    let mut segs = segments_of(trees);
    // The undo segment (TRX_SYS page and undo pages) belongs to no tree.
    segs.push(*inner.undo_segment());
    Ok(segs)
}

/// Finishes the drops a crash interrupted (called by `open` with the markers it found):
/// see the module docs. After a crash (`crashed`), also frees **orphan segments**: a
/// crash inside `create_table`, after its trees were created and before the dictionary
/// record that is its commit point, leaves segments that no dictionary record names.
pub(crate) fn finish_ddl(
    inner: &Engine,
    markers: Vec<(Vec<u8>, Vec<u8>)>,
    crashed: bool,
) -> Result<()> {
    finish_drops(inner, markers)?;
    if !crashed {
        return Ok(());
    }
    let live: HashSet<(u32, u64)> = live_segments(inner, &inner.tables().read())?
        .iter()
        .map(seg_key)
        .collect();
    let mut last = None;
    for space_id in table_spaces(inner) {
        let report = space::check_space(inner.pool(), space_id)
            .map_err(|e| from_tree(e, "SYS_TABLES", "page allocator"))?;
        for (&id, seg) in &report.segments {
            if !live.contains(&(space_id, id)) {
                let s = Segment {
                    header: seg.header,
                    id,
                };
                last = Some(
                    space::free_segment(inner.pool(), s)
                        .map_err(|e| from_tree(e, "SYS_TABLES", "orphan segment"))?,
                );
            }
        }
    }
    if let Some(end) = last {
        inner
            .pool()
            .commit_durable(end, minnow_redo::FlushAtCommit::Sync)?;
    }
    Ok(())
}

fn finish_drops(inner: &Engine, markers: Vec<(Vec<u8>, Vec<u8>)>) -> Result<()> {
    if markers.is_empty() {
        return Ok(());
    }
    let live: HashSet<(u32, u64)> = live_segments(inner, &inner.tables().read())?
        .iter()
        .map(seg_key)
        .collect();
    for (key, value) in markers {
        let segs = decode_segs(&key, &value)?;
        if segs.iter().any(|s| live.contains(&seg_key(s))) {
            // The crash came before the commit point: the index is still there.
            let end = inner
                .dict()
                .delete(inner.pool(), &[Value::Bytes(key.clone())])
                .map_err(|e| from_tree(e, "SYS_TABLES", PRIMARY))?;
            inner
                .pool()
                .commit_durable(end, minnow_redo::FlushAtCommit::Sync)?;
        } else {
            free_segments(inner, &key, &segs)?;
        }
    }
    Ok(())
}

impl Engine {
    /// Rewrites the dictionary record of `meta`'s table (its `SYS_TABLES` row) with `meta`'s
    /// definition: the commit point of every change to an existing table's definition (an
    /// index created or dropped, a load's new roots). Returns the end LSN of its mtr.
    pub(crate) fn store_definition(&self, meta: &TableMeta) -> Result<minnow_redo::Lsn> {
        let name = meta.name();
        self.dict()
            .update(
                self.pool(),
                &dict_row(name.as_bytes(), schema::encode(meta)),
            )
            .map_err(|e| from_tree(e, name, "SYS_TABLES"))
    }
}
