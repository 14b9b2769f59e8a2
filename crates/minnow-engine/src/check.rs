//! `check`: every index, every allocator, the undo segment and the auto-increment counters
//! verified against each other ([`Engine::check`], `Database::check`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use minnow_btree::record::Value;
use minnow_btree::space;
use minnow_btree::{BTree, ScanRange};
use minnow_page::PageId;

use crate::ddl::{decode_segs, is_drop_marker, live_segments, seg_key, table_spaces};
use crate::dict::SYSTEM_SPACE_ID;
use crate::engine::Engine;
use crate::entry::TableEntry;
use crate::error::{Error, Result, from_tree};
use crate::schema::{self, PRIMARY};

/// Secondary-index entries (index columns, then primary key columns).
type Entries = Vec<Vec<Value>>;

/// What a check found ([`Engine::check`], `Database::check`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Tables checked.
    pub tables: usize,
    /// Indexes checked (clustered and secondary, plus the dictionary).
    pub indexes: usize,
    /// Rows per table.
    pub rows: BTreeMap<String, u64>,
    /// Overflow pages holding off-page columns, in all tables.
    pub overflow_pages: u64,
    /// Undo pages in the undo streams of all rollback segments, every one read and checked.
    pub undo_pages: u64,
    /// Logs in the history list (walked and checked against its length).
    pub history_len: u64,
    /// Delete-marked clustered records and secondary entries in all tables: old versions
    /// kept for readers until purge removes them.
    pub delete_marked: u64,
}

impl Engine {
    /// Verifies every index: the dictionary's and each table's B-trees
    /// ([`minnow_btree::BTree::check`]: page invariants, key order, levels, sibling links),
    /// and that every secondary index holds exactly one entry per row of its table, built
    /// from that row; then the page allocator of the system tablespace and of every compressed
    /// tablespace ([`minnow_btree::space::check_space`]):
    /// every tree page is allocated to its tree's segment, every segment belongs to a live
    /// tree, and no page is in use without an owner; and every auto-increment counter is
    /// above its column's largest value. The first problem is an error naming the table
    /// and index.
    pub fn check(&self) -> Result<CheckReport> {
        let inner = self;
        let _ddl = inner.ddl().lock();
        let _q = inner.quiesce().write();
        inner.check_open()?;
        let dict = inner
            .dict()
            .check(inner.pool())
            .map_err(|e| from_tree(e, "SYS_TABLES", PRIMARY))?;
        let mut report = CheckReport {
            indexes: 1,
            ..CheckReport::default()
        };
        // Overflow page (space, page number) -> the table that owns it: no page may serve
        // two trees. Compressed tables' pages live in other spaces, where page numbers
        // start again at 0.
        let mut owners: HashMap<PageId, String> = HashMap::new();
        let mut own = |space: u32, pages: &[u32], name: &str| -> Result<()> {
            for &p in pages {
                let page = PageId::new(space, p);
                if let Some(other) = owners.insert(page, name.to_owned()) {
                    return Err(Error::Corrupt {
                        what: format!(
                            "overflow page {page} belongs to a record of `{other}` and one of `{name}`"
                        ),
                    });
                }
            }
            Ok(())
        };
        own(SYSTEM_SPACE_ID, &dict.overflow_pages, "SYS_TABLES")?;
        for (name, t) in inner.tables().read().iter() {
            let stats = t
                .clustered
                .check(inner.pool())
                .map_err(|e| from_tree(e, name, PRIMARY))?;
            own(t.clustered.space(), &stats.overflow_pages, name)?;
            report.overflow_pages += stats.overflow_pages.len() as u64;
            report.indexes += 1;
            for (s, tree) in t.meta.secondary.iter().zip(&t.secondary) {
                tree.check(inner.pool())
                    .map_err(|e| from_tree(e, name, &s.name))?;
                report.indexes += 1;
                let (missing, extra) = differences(inner, t, tree, s)?;
                if !missing.is_empty() || !extra.is_empty() {
                    return Err(Error::Corrupt {
                        what: format!(
                            "table `{name}`, index `{}`: {} entries missing (e.g. {:?}), {} extra (e.g. {:?})",
                            s.name,
                            missing.len(),
                            missing.first(),
                            extra.len(),
                            extra.first()
                        ),
                    });
                }
            }
            t.check_auto_increment(inner.pool())?;
            let (live, marked) = live_rows(inner, t)?;
            report.rows.insert(name.clone(), live);
            report.delete_marked += marked;
            report.tables += 1;
        }
        let space = check_allocation(inner, &inner.tables().read())?;
        let undo = inner.trx_sys().check(inner.pool())?;
        report.undo_pages = undo.pages.len() as u64;
        report.history_len = undo.history_len;
        // The undo segment holds exactly the TRX_SYS page, the rollback segment header pages
        // and the streams' pages: a page freed by purge is in no chain, and every chain page
        // is in use by the segment.
        let mut want: std::collections::BTreeSet<u32> = undo.pages.iter().copied().collect();
        want.insert(inner.trx_sys().page().page_no);
        want.extend(undo.rseg_pages.iter().copied());
        let have = space
            .segments
            .get(&inner.undo_segment().id)
            .map(|s| s.pages.clone())
            .unwrap_or_default();
        if want != have {
            return Err(Error::Corrupt {
                what: format!(
                    "undo segment: pages in use but in no undo chain {:?}, chain pages not in use \
                     {:?}",
                    have.difference(&want).take(8).collect::<Vec<_>>(),
                    want.difference(&have).take(8).collect::<Vec<_>>()
                ),
            });
        }
        // Every overflow page lies in its tree's leaf segment and is on one of that tree's
        // chains (`check_allocation` through `BTree::check_space`), and every page in use
        // belongs to some segment: so no BLOB page is on no record's chain.
        Ok(report)
    }
}

/// Rows of a table that are not delete-marked (the latest state, committed or not), and
/// delete-marked records in all its indexes.
fn live_rows(inner: &Engine, t: &TableEntry) -> Result<(u64, u64)> {
    let pool = inner.pool();
    let name = t.meta.name();
    let (mut n, mut marked) = (0, 0);
    for e in t
        .clustered
        .scan(pool, ScanRange::all().fetch(Vec::new()))
        .map_err(|e| from_tree(e, name, PRIMARY))?
    {
        let deleted = e.map_err(|e| from_tree(e, name, PRIMARY))?.deleted;
        n += u64::from(!deleted);
        marked += u64::from(deleted);
    }
    for (s, tree) in t.meta.secondary.iter().zip(&t.secondary) {
        for e in tree
            .scan(pool, ScanRange::all())
            .map_err(|e| from_tree(e, name, &s.name))?
        {
            marked += u64::from(e.map_err(|e| from_tree(e, name, &s.name))?.deleted);
        }
    }
    Ok((n, marked))
}

/// The secondary entries the table's rows call for that the index lacks, and the
/// entries the index has that no row calls for.
fn differences(
    inner: &Engine,
    t: &TableEntry,
    tree: &BTree,
    s: &schema::SecMeta,
) -> Result<(Entries, Entries)> {
    let pool = inner.pool();
    let name = t.meta.name();
    let mut want = HashSet::new();
    for e in t
        .clustered
        .scan(pool, ScanRange::all())
        .map_err(|e| from_tree(e, name, PRIMARY))?
    {
        let e = e.map_err(|e| from_tree(e, name, PRIMARY))?;
        if e.deleted {
            continue;
        }
        let row = t.meta.row_of(e.values)?;
        want.insert(t.meta.secondary_values(s, &row));
    }
    let mut extra = Vec::new();
    for e in tree
        .scan(pool, ScanRange::all())
        .map_err(|e| from_tree(e, name, &s.name))?
    {
        let e = e.map_err(|e| from_tree(e, name, &s.name))?;
        // Delete-marked entries belong to old versions (kept for readers until purge).
        if e.deleted {
            continue;
        }
        if !want.remove(&e.values) {
            extra.push(e.values);
        }
    }
    Ok((want.into_iter().collect(), extra))
}

/// The allocator half of [`Engine::check`], for every tablespace a table can live in
/// ([`table_spaces`]): the space's structures ([`space::check_space`]), every tree's pages
/// in its own segments ([`BTree::check_space`]), every segment owned by a live tree or a
/// pending drop, and no used page without an owner. Returns the system tablespace's
/// report.
fn check_allocation(
    inner: &Engine,
    tables: &BTreeMap<String, Arc<TableEntry>>,
) -> Result<space::SpaceReport> {
    let mut reports = BTreeMap::new();
    for space_id in table_spaces(inner) {
        let report = space::check_space(inner.pool(), space_id)
            .map_err(|e| from_tree(e, "SYS_TABLES", "page allocator"))?;
        reports.insert(space_id, report);
    }
    let report_of = |tree: &BTree, table: &str, index: &str| {
        reports.get(&tree.space()).ok_or_else(|| Error::Corrupt {
            what: format!(
                "table `{table}`, index `{index}`: its tablespace {} is not open",
                tree.space()
            ),
        })
    };
    inner
        .dict()
        .check_space(
            inner.pool(),
            report_of(inner.dict(), "SYS_TABLES", PRIMARY)?,
        )
        .map_err(|e| from_tree(e, "SYS_TABLES", PRIMARY))?;
    for (name, t) in tables {
        t.clustered
            .check_space(inner.pool(), report_of(&t.clustered, name, PRIMARY)?)
            .map_err(|e| from_tree(e, name, PRIMARY))?;
        for (s, tree) in t.meta.secondary.iter().zip(&t.secondary) {
            tree.check_space(inner.pool(), report_of(tree, name, &s.name)?)
                .map_err(|e| from_tree(e, name, &s.name))?;
        }
    }
    let mut owned: HashSet<(u32, u64)> =
        live_segments(inner, tables)?.iter().map(seg_key).collect();
    for e in inner
        .dict()
        .scan(inner.pool(), ScanRange::all())
        .map_err(|e| from_tree(e, "SYS_TABLES", PRIMARY))?
    {
        let e = e.map_err(|e| from_tree(e, "SYS_TABLES", PRIMARY))?;
        if let (Some(Value::Bytes(k)), Some(Value::Bytes(v))) = (e.values.first(), e.values.get(3))
            && is_drop_marker(k)
        {
            owned.extend(decode_segs(k, v)?.iter().map(seg_key));
        }
    }
    for (&space_id, report) in &reports {
        if let Some(id) = report
            .segments
            .keys()
            .find(|&&id| !owned.contains(&(space_id, id)))
        {
            return Err(Error::Corrupt {
                what: format!(
                    "page allocator of space {space_id}: segment {id} belongs to no table or \
                         index (pages {:?})",
                    report
                        .segments
                        .get(id)
                        .map(|s| s.pages.iter().take(8).collect::<Vec<_>>())
                ),
            });
        }
        if !report.loose_pages.is_empty() {
            return Err(Error::Corrupt {
                what: format!(
                    "page allocator of space {space_id}: pages in use by no segment: {:?}",
                    report.loose_pages.iter().take(8).collect::<Vec<_>>()
                ),
            });
        }
    }
    reports
        .remove(&SYSTEM_SPACE_ID)
        .ok_or_else(|| Error::Corrupt {
            what: "page allocator: the system tablespace is not open".into(),
        })
}
