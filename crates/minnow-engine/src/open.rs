//! Creating and opening a database directory: what builds an [`Engine`] from a directory
//! (the system tablespace, the redo log, the doublewrite segments, the dictionary), with
//! recovery in InnoDB's order, and what tears it down ([`Engine::close`]).
//!
//! `open` brings the database back in this order: doublewrite repair of torn pages, redo
//! apply from the last checkpoint, flush and checkpoint (all in
//! [`minnow_buf::BufferPool::recover`]); then the dictionary is read (tables, pending-drop
//! markers, auto-increment counters), every transaction that had not committed is rolled
//! back from its undo log (`rollback::recover_rollback`), the drops a crash cut
//! short are finished ([`crate::ddl`]), and the background threads start. The result,
//! [`Opened`], is what the `minnow` crate's `Database` holds.

use std::collections::{BTreeMap, HashMap};
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
use minnow_redo::Log;

use crate::autoinc;
use crate::config::{self, Config};
use crate::dict::{
    DICT_INDEX_ID, DICT_ROOT, REDO_LOG, SYSTEM_SPACE_ID, SYSTEM_TABLESPACE, TRX_SYS_PAGE,
    dict_layout,
};
use crate::engine::Engine;
use crate::entry::TableEntry;
use crate::error::{Error, Result, from_tree};
use crate::schema::{self, PRIMARY};

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
    /// file whose creation a crash cut short, removed (see the `minnow` crate docs,
    /// "Compressed tables").
    pub notes: Vec<String>,
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

/// A started engine, as [`Engine::create`] and [`Engine::open`] return it: the engine with
/// its threads running, the directory's `LOCK` (to be let go only after
/// [`Engine::close`]) and what `open` did.
#[derive(Debug)]
pub struct Opened {
    /// The engine.
    pub engine: Arc<Engine>,
    /// The data directory's `LOCK`, held for as long as the engine is open.
    pub lock: DirLock,
    /// What `open` did (all zero after `create`).
    pub report: OpenReport,
}

/// Finishes starting `engine`: runs `rest` (recovery's last steps, the threads); if it
/// fails, closes the engine again (as dropping an open database would) before the lock goes
/// and the error returns.
fn started(
    engine: Arc<Engine>,
    lock: DirLock,
    rest: impl FnOnce(&Arc<Engine>) -> Result<OpenReport>,
) -> Result<Opened> {
    match rest(&engine) {
        Ok(report) => Ok(Opened {
            engine,
            lock,
            report,
        }),
        Err(e) => {
            let _ = engine.close();
            drop(lock);
            Err(e)
        }
    }
}

impl Engine {
    /// Creates a database in `dir` (created if missing; it must not hold a database): the
    /// system tablespace, the redo log, the doublewrite segments and the dictionary (see
    /// `Database::create`).
    pub fn create(dir: &Path, config: Config) -> Result<Opened> {
        config.validate()?;
        let dir_err = |reason: String| Error::Directory {
            path: dir.to_path_buf(),
            reason,
        };
        std::fs::create_dir_all(dir).map_err(|e| dir_err(e.to_string()))?;
        let lock = DirLock::acquire(dir)?;
        if dir.join(SYSTEM_TABLESPACE).exists() {
            return Err(dir_err("already holds a database".into()));
        }
        let backend = config::backend(&config.io_backend, config.write_io_threads)?;
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
        started(inner, lock, |inner| {
            inner.start_threads()?;
            crate::purge::start(inner)?;
            Ok(OpenReport::default())
        })
    }

    /// Opens the database in `dir` and brings it back to a consistent state (see the module
    /// docs for the order, and `Database::open`).
    pub fn open(dir: &Path, config: Config) -> Result<Opened> {
        config.validate()?;
        if !dir.join(SYSTEM_TABLESPACE).exists() {
            return Err(Error::Directory {
                path: dir.to_path_buf(),
                reason: format!("no {SYSTEM_TABLESPACE}: not a minnow database"),
            });
        }
        // Before anything is read: a second opener must not even run recovery.
        let lock = DirLock::acquire(dir)?;
        let opened = Instant::now();
        let backend = config::backend(&config.io_backend, config.write_io_threads)?;
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
        started(inner, lock, |inner| {
            // Roll back every transaction that had not committed, newest record first,
            // before anything else changes a page: its undo still describes the pages as
            // they are.
            for log in active {
                report.undo_records_applied += crate::rollback::recover_rollback(inner, log)?;
                report.rolled_back += 1;
            }
            crate::ddl::finish_ddl(inner, drops, rec.log.groups > 0)?;
            remove_orphan_counters(inner, counters.into_keys())?;
            report.recovery_time = opened.elapsed();
            inner.start_threads()?;
            crate::purge::start(inner)?;
            Ok(report)
        })
    }

    /// Closes the engine: under a slow shutdown (`fast_shutdown = 0`) a full purge first,
    /// then `Engine::shutdown` (its order is there). Called once (the `minnow` crate's handle sees to it); the
    /// caller lets go of the directory's `LOCK` after it, even if it failed.
    pub fn close(&self) -> Result<()> {
        // A slow shutdown purges everything before purge stops.
        let slow = (self.config().fast_shutdown == 0).then(|| crate::purge::all(self).map(drop));
        self.shutdown(slow)
    }
}

/// Removes counter records whose table is gone (a crash inside `drop_table`, after its
/// commit point and before the counter record went).
fn remove_orphan_counters(inner: &Engine, orphans: impl Iterator<Item = String>) -> Result<()> {
    for table in orphans {
        if let Some(end) = autoinc::delete_counter(inner, &table)? {
            inner
                .pool()
                .commit_durable(end, minnow_redo::FlushAtCommit::Sync)?;
        }
    }
    Ok(())
}
