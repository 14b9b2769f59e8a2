//! [`Database`]: the data directory, startup and recovery, the dictionary, shutdown.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use minnow_btree::record::Value;
use minnow_btree::{BTree, ScanRange};
use minnow_buf::{BufferPool, DirectWriter, DoublewriteRecovery, PageWriter, SpaceMap};
use minnow_dblwr::{Doublewrite, DoublewriteMode};
use minnow_io::{Backend, DirLock, OpenOptions, Tablespace};
use minnow_mvcc::TrxSys;
use minnow_page::PageId;
use minnow_page::checksum::ChecksumPolicy;
use minnow_redo::{Durability, Log, Lsn};

use crate::compression;
use crate::config::{self, Config};
use crate::dict::{
    DICT_INDEX_ID, DICT_ROOT, REDO_LOG, SYSTEM_SPACE_ID, SYSTEM_TABLESPACE, TRX_SYS_PAGE,
    dict_layout, dict_row,
};
use crate::error::{Error, Result, from_tree};
use crate::schema::{self, PRIMARY, TableDef, TableMeta};
use crate::status::RowOp;
use crate::table::Table;
use minnow_engine::autoinc::{self, AutoInc};
use minnow_engine::{Engine, TableEntry};

/// Secondary-index entries (index columns, then primary key columns).
type Entries = Vec<Vec<Value>>;

/// What [`Database::check`] found.
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

/// What `open` did to bring the database back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenReport {
    /// Redo groups replayed (0 after a clean shutdown).
    pub redo_groups: u64,
    /// Bytes of redo between the checkpoint and the end of the log, replayed (block
    /// framing included: the LSN distance).
    pub redo_bytes: u64,
    /// Batches the redo was applied in (see `minnow_buf`'s recovery: parsed redo is applied
    /// page by page whenever it fills a quarter of the buffer pool).
    pub redo_batches: u64,
    /// The most memory parsed redo waiting to be applied took, in bytes.
    pub redo_peak_batch_bytes: u64,
    /// Pages read from disk while applying redo.
    pub redo_pages_read: u64,
    /// How long recovery took (doublewrite repair, redo apply, the flush of recovered pages
    /// and the rollback of cut transactions).
    pub recovery_time: std::time::Duration,
    /// Pages changed by redo apply.
    pub pages_applied: u64,
    /// Pages restored from the doublewrite buffer.
    pub pages_repaired: usize,
    /// Transactions that were active when the database stopped and were rolled back.
    pub rolled_back: u64,
    /// Undo records applied by those rollbacks.
    pub undo_records_applied: u64,
    /// What `open` noticed and mended on the way, one line each: a compressed tablespace
    /// file whose creation a crash cut short, removed (see the crate docs, "Compressed
    /// tables").
    pub notes: Vec<String>,
}

/// A database: a data directory holding one system tablespace (`ibdata1`, the dictionary
/// and every uncompressed table's indexes), a shared compressed tablespace per compression
/// setting in use (`zip8k_zlib-6.ibd`, ...), the redo log (`ib_logfile0`), the doublewrite segments
/// (`dblwr.N`) and the buffer pool dump (`ib_buffer_pool`).
///
/// ```
/// use minnow::{ColumnDef, ColumnType, Config, Database, TableDef, Value};
///
/// let dir = tempfile::tempdir()?;
/// let db = Database::create(dir.path(), Config::default())?;
/// let users = db.create_table(
///     TableDef::new("users")
///         .column(ColumnDef::new("id", ColumnType::U64))
///         .column(ColumnDef::new("name", ColumnType::Var(40)))
///         .primary_key(&["id"]),
/// )?;
/// users.insert(&[Value::UInt(1), Value::Bytes(b"ada".to_vec())])?;
/// db.close()?;
///
/// let db = Database::open(dir.path(), Config::default())?;
/// let row = db.table("users")?.get(&[Value::UInt(1)])?;
/// assert_eq!(row, Some(vec![Value::UInt(1), Value::Bytes(b"ada".to_vec())]));
/// db.check()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// A `Database` is a handle: cloning it is cheap (one `Arc`), every clone is the same open
/// database, and it is `Send + Sync`, so threads may each own one. [`Table`] and
/// [`crate::Transaction`] handles own a clone too, so one struct can own the database, its
/// tables and a transaction, with no lifetime to thread through. See the crate docs,
/// "Handles and lifetime", for what `close` and drop mean while other handles live.
#[derive(Clone)]
pub struct Database {
    pub(crate) handle: Arc<crate::handle::Handle>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("dir", &self.handle.inner.dir())
            .field("closed", &self.handle.inner.is_closed())
            .finish()
    }
}

fn writer(
    backend: &dyn Backend,
    dir: &Path,
    config: &Config,
) -> Result<Arc<dyn PageWriter>, minnow_buf::BufError> {
    Ok(match config.doublewrite {
        DoublewriteMode::Off => Arc::new(DirectWriter),
        _ => Arc::new(Doublewrite::open(
            backend,
            dir,
            config::dblwr_config(config),
        )?),
    })
}

impl Database {
    /// Creates a database in `dir` (created if missing; it must not hold a database):
    /// the system tablespace, the redo log, the doublewrite segments and the dictionary.
    /// Creating is not crash-atomic: if it fails or the machine dies during `create`, remove
    /// the directory and create again.
    pub fn create(dir: impl AsRef<Path>, config: Config) -> Result<Database> {
        config.validate()?;
        let dir = dir.as_ref();
        let dir_err = |reason: String| Error::Directory {
            path: dir.to_path_buf(),
            reason,
        };
        std::fs::create_dir_all(dir).map_err(|e| dir_err(e.to_string()))?;
        let lock = DirLock::acquire(dir)?;
        if dir.join(SYSTEM_TABLESPACE).exists() {
            return Err(dir_err("already holds a database".into()));
        }
        let backend = config::backend(&config.io_backend)?;
        let space = Tablespace::create(
            &*backend,
            &dir.join(SYSTEM_TABLESPACE),
            SYSTEM_SPACE_ID,
            config.page_size,
            config.checksum_algorithm,
            config.flush_method,
            4,
        )?;
        let spaces = Arc::new(SpaceMap::new());
        spaces.insert(Arc::new(space));
        let log_file = backend.open(
            &dir.join(REDO_LOG),
            &OpenOptions::new(config.flush_method).create(true),
        )?;
        let log = Arc::new(Log::create(log_file, config.redo_capacity())?);
        let w = writer(&*backend, dir, &config)?;
        let pool = BufferPool::open(config::buf_config(&config, Some(dir)), spaces, log, w)?;
        let (dict, _) = BTree::create(&pool, SYSTEM_SPACE_ID, DICT_INDEX_ID, dict_layout()?)
            .map_err(|e| from_tree(e, "SYS_TABLES", PRIMARY))?;
        if dict.root() != DICT_ROOT {
            return Err(Error::Corrupt {
                what: format!("dictionary root landed on page {}", dict.root()),
            });
        }
        let (trx_sys, end) = TrxSys::create(&pool, SYSTEM_SPACE_ID, config.rollback_segments)?;
        if trx_sys.page().page_no != TRX_SYS_PAGE {
            return Err(Error::Corrupt {
                what: format!("the TRX_SYS page landed on page {}", trx_sys.page()),
            });
        }
        let undo_segment = minnow_btree::space::segment_at(&pool, trx_sys.segment())
            .map_err(|e| from_tree(e, "TRX_SYS", "undo segment"))?;
        pool.commit_durable(end, minnow_redo::FlushAtCommit::Sync)?;
        pool.flush_all()?;
        let ahi = minnow_ahi::Ahi::new(config::ahi_config(&config));
        let inner = Arc::new(Engine::new(
            pool,
            config,
            dict,
            (BTreeMap::new(), ahi, Arc::default()),
            DICT_INDEX_ID + 1,
            dir,
            (trx_sys, undo_segment),
        ));
        let db = Database::from_parts(Arc::clone(&inner), lock);
        db.handle.report.get_or_init(OpenReport::default);
        inner.start_threads()?;
        crate::purge::start(&inner)?;
        Ok(db)
    }

    /// Opens the database in `dir` and brings it back to a consistent state, in InnoDB's
    /// order: doublewrite repair of torn pages, redo apply from the last checkpoint, flush
    /// and checkpoint (all in [`minnow_buf::BufferPool::recover`]); then the dictionary is
    /// read, and every transaction that had not committed is rolled back from its undo log.
    pub fn open(dir: impl AsRef<Path>, config: Config) -> Result<Database> {
        config.validate()?;
        let dir = dir.as_ref();
        if !dir.join(SYSTEM_TABLESPACE).exists() {
            return Err(Error::Directory {
                path: dir.to_path_buf(),
                reason: format!("no {SYSTEM_TABLESPACE}: not a minnow database"),
            });
        }
        // Before anything is read: a second opener must not even run recovery.
        let lock = DirLock::acquire(dir)?;
        let opened = Instant::now();
        let backend = config::backend(&config.io_backend)?;
        let opts = OpenOptions::new(config.flush_method);
        // Page 0 is verified only after recovery: a tear of it is repaired by the
        // doublewrite buffer like any other page's.
        let space = Tablespace::open_for_recovery(
            &*backend,
            &dir.join(SYSTEM_TABLESPACE),
            &opts,
            ChecksumPolicy::new(config.checksum_algorithm),
        )?;
        if space.page_size() != config.page_size {
            return Err(Error::Config {
                knob: "innodb_page_size",
                reason: format!(
                    "the database has {} pages, the configuration asks for {}",
                    space.page_size(),
                    config.page_size
                ),
            });
        }
        let spaces = Arc::new(SpaceMap::new());
        spaces.insert(Arc::new(space));
        // Compressed tablespaces too, before recovery: redo and the doublewrite buffer may
        // name their pages.
        let zip = crate::compression::register_files(
            &*backend,
            dir,
            &opts,
            (config.checksum_algorithm, config.page_size),
            &spaces,
        )?;
        let log_file = backend.open(&dir.join(REDO_LOG), &opts)?;
        let dblwr = (config.doublewrite != DoublewriteMode::Off).then_some(DoublewriteRecovery {
            backend: &*backend,
            dir,
            mode: config.doublewrite,
        });
        let (pool, _log, rec) = BufferPool::recover(
            config::buf_config(&config, Some(dir)),
            spaces,
            dblwr,
            || writer(&*backend, dir, &config),
            log_file,
        )?;
        // The first verified read of page 0 (opened unverified for recovery, above).
        drop(pool.get_read(PageId::new(SYSTEM_SPACE_ID, 0))?);
        crate::compression::verify_page0(&pool, &zip.ids)?;
        let mut report = OpenReport {
            redo_groups: rec.log.groups,
            redo_bytes: rec.log.end.0.saturating_sub(rec.log.checkpoint.lsn.0),
            redo_batches: rec.batches,
            redo_peak_batch_bytes: rec.peak_batch_bytes,
            redo_pages_read: rec.pages_read,
            recovery_time: std::time::Duration::ZERO,
            pages_applied: rec.pages_applied,
            pages_repaired: rec.doublewrite.as_ref().map_or(0, |d| d.restored().count()),
            rolled_back: 0,
            undo_records_applied: 0,
            notes: zip.notes,
        };
        let (trx_sys, active) = TrxSys::open(&pool, PageId::new(SYSTEM_SPACE_ID, TRX_SYS_PAGE))?;
        let undo_segment = minnow_btree::space::segment_at(&pool, trx_sys.segment())
            .map_err(|e| from_tree(e, "TRX_SYS", "undo segment"))?;
        let dict = BTree::open(&pool, SYSTEM_SPACE_ID, DICT_ROOT, dict_layout()?)
            .map_err(|e| from_tree(e, "SYS_TABLES", PRIMARY))?;
        let mut tables = BTreeMap::new();
        let mut next = DICT_INDEX_ID + 1;
        let mut drops = Vec::new();
        let mut counters = HashMap::new();
        for e in dict
            .scan(&pool, ScanRange::all())
            .map_err(|e| from_tree(e, "SYS_TABLES", PRIMARY))?
        {
            let e = e.map_err(|e| from_tree(e, "SYS_TABLES", PRIMARY))?;
            let (Some(Value::Bytes(name)), Some(Value::Bytes(value))) =
                (e.values.first(), e.values.get(3))
            else {
                return Err(Error::Corrupt {
                    what: "dictionary record without name or value".into(),
                });
            };
            if crate::ddl::is_drop_marker(name) {
                drops.push((name.clone(), value.clone()));
                continue;
            }
            if let Some(table) = autoinc::counter_table(name) {
                let mark = autoinc::decode_counter(&table, value)?;
                counters.insert(table, mark);
                continue;
            }
            let name = String::from_utf8_lossy(name).into_owned();
            let meta = schema::decode(&name, value)?;
            next = next.max(meta.index_id + 1).max(
                meta.secondary
                    .iter()
                    .map(|s| s.index_id + 1)
                    .max()
                    .unwrap_or(0),
            );
            tables.insert(name, meta);
        }
        let ahi = minnow_ahi::Ahi::new(config::ahi_config(&config));
        let gaps = Arc::default();
        let mut entries = BTreeMap::new();
        for (name, meta) in tables {
            let mark = counters.remove(&name);
            let entry = TableEntry::open(&pool, meta, mark, &gaps)?
                .hooked(&ahi)
                .configured(&config);
            entries.insert(name, Arc::new(entry));
        }
        let tables = entries;
        let inner = Arc::new(Engine::new(
            pool,
            config,
            dict,
            (tables, ahi, gaps),
            next,
            dir,
            (trx_sys, undo_segment),
        ));
        let db = Database::from_parts(Arc::clone(&inner), lock);
        // Roll back every transaction that had not committed, newest record first, before
        // anything else changes a page: its undo still describes the pages as they are.
        for log in active {
            report.undo_records_applied += crate::trx::recover_rollback(db.inner()?, log)?;
            report.rolled_back += 1;
        }
        db.finish_ddl(drops, rec.log.groups > 0)?;
        db.remove_orphan_counters(counters.into_keys())?;
        report.recovery_time = opened.elapsed();
        db.handle.report.get_or_init(|| report);
        inner.start_threads()?;
        crate::purge::start(&inner)?;
        Ok(db)
    }

    /// The engine, for a statement about to start; [`Error::Closed`] once the database is
    /// closed (one load of a flag nobody writes while it is open).
    #[inline]
    pub(crate) fn inner(&self) -> Result<&Engine> {
        let inner = &*self.handle.inner;
        inner.check_open()?;
        Ok(inner)
    }

    /// What `open` did (all zero after `create`).
    pub fn open_report(&self) -> &OpenReport {
        self.handle.report.get_or_init(OpenReport::default)
    }

    /// The configuration the database runs with.
    pub fn config(&self) -> Result<&Config> {
        Ok(self.inner()?.config())
    }

    /// The buffer pool; tools reach it through [`crate::inspect::Internals`].
    pub(crate) fn pool(&self) -> Result<&BufferPool> {
        Ok(self.inner()?.pool())
    }

    /// Counts `n` row operations of kind `op` for [`Database::status`] (this thread's stripe:
    /// no shared cache line written).
    #[inline]
    pub(crate) fn count_rows(&self, op: RowOp, n: u64) {
        self.handle.inner.rows().bump(op, n);
    }

    /// Makes an acknowledged change as durable as `flush_log_at_trx_commit` asks.
    pub(crate) fn durable(&self, end: Lsn) -> Result<Durability> {
        self.durable_at(end, None)
    }

    /// Creates a table and its indexes. The trees are created first (one mtr each); the
    /// dictionary record, inserted in one more mtr, is the commit point: after a crash the
    /// table either exists whole or not at all (a crash before that record leaves segments
    /// no record names, which `open` frees; never a half-created table). Durable as
    /// `flush_log_at_trx_commit` says.
    pub fn create_table(&self, def: TableDef) -> Result<Table> {
        let inner = self.inner()?;
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
        let rec = inner
            .dict()
            .layout()
            .encode(&dict_row(name.as_bytes(), schema::encode(&meta)))
            .map_err(|e| Error::BadDefinition {
                table: name.clone(),
                reason: e.to_string(),
            })?;
        let max = minnow_btree::node::max_record_len(inner.config().page_size.bytes());
        if rec.len() > max {
            return Err(Error::BadDefinition {
                table: name,
                reason: format!(
                    "its dictionary record of {} bytes exceeds the {max}-byte maximum",
                    rec.len()
                ),
            });
        }
        // A compressed table's shared tablespace exists (durably) before any tree is made
        // in it.
        let space = match meta.def.compression {
            Some(c) => crate::compression::ensure_space(
                inner.dir(),
                inner.config(),
                inner.pool().spaces(),
                c,
            )?,
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
        self.durable(end)?;
        let entry = Arc::new(
            TableEntry::new(meta, (clustered, secondary), autoinc, inner.gaps())
                .hooked(inner.ahi())
                .configured(inner.config()),
        );
        inner.tables().write().insert(name, Arc::clone(&entry));
        Ok(Table::new(self.clone(), entry))
    }

    /// The table named `name`.
    pub fn table(&self, name: &str) -> Result<Table> {
        let entry = self
            .inner()?
            .tables()
            .read()
            .get(name)
            .cloned()
            .ok_or_else(|| Error::NoSuchTable {
                table: name.to_owned(),
            })?;
        Ok(Table::new(self.clone(), entry))
    }

    /// The names of every table, in order.
    pub fn tables(&self) -> Result<Vec<String>> {
        Ok(self.inner()?.tables().read().keys().cloned().collect())
    }

    /// The definition of table `name`, as the dictionary holds it.
    pub fn table_def(&self, name: &str) -> Result<TableDef> {
        Ok(self.table(name)?.def().clone())
    }

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
        let inner = self.inner()?;
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
                let (missing, extra) = self.differences(t, tree, s)?;
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
            let (live, marked) = self.live_rows(t)?;
            report.rows.insert(name.clone(), live);
            report.delete_marked += marked;
            report.tables += 1;
        }
        let space = self.check_allocation(&inner.tables().read())?;
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

    /// Rows of a table that are not delete-marked (the latest state, committed or not), and
    /// delete-marked records in all its indexes.
    fn live_rows(&self, t: &TableEntry) -> Result<(u64, u64)> {
        let pool = self.inner()?.pool();
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
        &self,
        t: &TableEntry,
        tree: &BTree,
        s: &schema::SecMeta,
    ) -> Result<(Entries, Entries)> {
        let pool = self.inner()?.pool();
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

    /// Removes counter records whose table is gone (a crash inside `drop_table`, after its
    /// commit point and before the counter record went).
    fn remove_orphan_counters(&self, orphans: impl Iterator<Item = String>) -> Result<()> {
        let inner = self.inner()?;
        for table in orphans {
            if let Some(end) = autoinc::delete_counter(inner, &table)? {
                inner
                    .pool()
                    .commit_durable(end, minnow_redo::FlushAtCommit::Sync)?;
            }
        }
        Ok(())
    }
}
