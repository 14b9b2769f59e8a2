//! minnow through its public API, as an application writes it: one table `kv (key BINARY(24)
//! PRIMARY KEY, value BINARY(150))`, every write batch one [`Transaction`], every commit
//! synced (`flush_log_at_trx_commit=1`, the default).

use std::ops::Bound;
use std::path::{Path, PathBuf};

use minnow::{
    ColumnDef, ColumnType, Config, Database, Durability, Scan, Table, TableDef, Transaction, Value,
};

use super::{KEY_LEN, KvEngine, KvReader, VALUE_LEN};
use crate::{Result, mismatch};

const TABLE: &str = "kv";

/// minnow with its default durability: a write batch is one transaction (`db.begin()`, the
/// statements, `commit()`), and `commit` returns once the redo log is synced
/// (`flush_log_at_trx_commit=1`). Reads run in one REPEATABLE READ transaction per reader.
pub struct Minnow {
    db: Option<Database>,
    dir: PathBuf,
    config: Config,
}

/// The config every minnow of the comparison runs with: the defaults (16 KiB pages,
/// doublewrite on, crc32 checksums, `flush_log_at_trx_commit=1`, the default redo log size),
/// with a buffer pool of `cache` bytes and a slow shutdown (`innodb_fast_shutdown=0`: a
/// close purges fully first), so that the size measured after a close is that of the rows
/// left, as the other engines', which free a removed row's space in the removal itself.
pub(crate) fn config(cache: usize) -> Config {
    Config {
        buffer_pool_size: cache,
        fast_shutdown: 0,
        ..Config::default()
    }
}

/// Commits `tx` and checks that the commit is synced, as the default durability promises:
/// a comparison of durable engines must not count a commit that is not.
pub(crate) fn commit(tx: Transaction) -> Result<()> {
    match tx.commit()? {
        Durability::Synced => Ok(()),
        other => Err(mismatch(format!(
            "minnow: a commit returned {other:?}, not Synced"
        ))),
    }
}

impl Minnow {
    /// Creates the database in `dir` with the default config and a buffer pool of `cache`
    /// bytes.
    pub fn create(dir: &Path, cache: usize) -> Result<Minnow> {
        let config = config(cache);
        let db = Database::create(dir, config.clone())?;
        db.create_table(
            TableDef::new(TABLE)
                .column(ColumnDef::new("key", ColumnType::Fixed(KEY_LEN as u16)))
                .column(ColumnDef::new("value", ColumnType::Fixed(VALUE_LEN as u16)))
                .primary_key(&["key"]),
        )?;
        Ok(Minnow {
            db: Some(db),
            dir: dir.to_path_buf(),
            config,
        })
    }

    fn db(&self) -> Result<&Database> {
        self.db
            .as_ref()
            .ok_or_else(|| mismatch("minnow: the database is closed"))
    }

    /// Runs `f` in one transaction on the table and commits it (synced).
    fn write(&self, f: impl FnOnce(&mut Transaction, &Table) -> Result<u64>) -> Result<u64> {
        let db = self.db()?;
        let t = db.table(TABLE)?;
        let mut tx = db.begin()?;
        let n = f(&mut tx, &t)?;
        commit(tx)?;
        Ok(n)
    }
}

impl KvEngine for Minnow {
    fn name(&self) -> &'static str {
        "minnow"
    }

    fn notes(&self) -> Vec<String> {
        vec![format!(
            "minnow: public API only, `Config::default()` but a {} MiB buffer pool and a \
             slow shutdown (fast_shutdown=0: a close purges fully, then cuts the free \
             extents off the end of `ibdata1`) (flush_log_at_trx_commit=1: every commit syncs the redo log; doublewrite on, \
             16 KiB pages, a {} MiB redo capacity: the default, the buffer pool's size); batch = one transaction (`db.begin()` .. \
             `commit()`, checked to return `Durability::Synced`); readers = one REPEATABLE \
             READ transaction each, reading in place as the peers' borrowed reads do \
             (`Transaction::get_bytes_with`, the key borrowed, / `Transaction::scan_with`: the value is copied once, \
             from the latched page into the caller's buffer); count = \
             `Transaction::count` in that transaction (a walk of the leaves the first time, \
             which is the one timed); compaction = `Database::compact_into` a new directory \
             (every table reloaded in key order with `Table::load`), then close, swap the \
             directories, reopen",
            self.config.buffer_pool_size >> 20,
            self.config.redo_capacity() >> 20,
        )]
    }

    fn insert(&mut self, pairs: &mut dyn Iterator<Item = (&[u8], &[u8])>) -> Result<u64> {
        self.write(|tx, t| {
            let mut n = 0;
            for (k, v) in pairs {
                tx.insert(t, &[Value::Bytes(k.to_vec()), Value::Bytes(v.to_vec())])?;
                n += 1;
            }
            Ok(n)
        })
    }

    fn remove(&mut self, keys: &mut dyn Iterator<Item = &[u8]>) -> Result<u64> {
        self.write(|tx, t| {
            let mut n = 0;
            for k in keys {
                if tx.delete(t, &[Value::Bytes(k.to_vec())])? {
                    n += 1;
                }
            }
            Ok(n)
        })
    }

    fn reader(&self) -> Result<Box<dyn KvReader + '_>> {
        let db = self.db()?;
        Ok(Box::new(MinnowReader {
            t: db.table(TABLE)?,
            tx: db.begin()?,
        }))
    }

    fn close(&mut self) -> Result<()> {
        if let Some(db) = self.db.take() {
            db.close()?;
        }
        Ok(())
    }

    fn reopen(&mut self) -> Result<()> {
        if self.db.is_none() {
            self.db = Some(Database::open(&self.dir, self.config.clone())?);
        }
        Ok(())
    }

    fn compact(&mut self) -> Result<bool> {
        // minnow compacts by copying, as LMDB: write a compacted copy (`compact_into`, every
        // table reloaded in key order), close, swap the directories, reopen.
        let mut name = self.dir.file_name().unwrap_or_default().to_os_string();
        name.push(".compact");
        let copy = self.dir.with_file_name(name);
        self.db()?.compact_into(&copy)?;
        self.close()?;
        std::fs::remove_dir_all(&self.dir)?;
        std::fs::rename(&copy, &self.dir)?;
        self.reopen()?;
        Ok(true)
    }

    fn dir(&self) -> &Path {
        &self.dir
    }
}

struct MinnowReader {
    t: Table,
    tx: Transaction,
}

impl KvReader for MinnowReader {
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        // In place, as `range`: the value is a slice of the latched page, copied once, into
        // `out` (as every peer's reader copies from its borrowed value).
        let found = self.tx.get_bytes_with(&self.t, key, |row| {
            Ok(match row.bytes(1)? {
                Some(v) => {
                    out.extend_from_slice(&v);
                    true
                }
                None => false,
            })
        })?;
        match found {
            Some(true) => Ok(true),
            Some(false) => Err(mismatch("minnow: a point read met a NULL value")),
            None => Ok(false),
        }
    }

    fn range(
        &mut self,
        start: &[u8],
        n: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        let scan = Scan::range(
            Bound::Included(vec![Value::Bytes(start.to_vec())]),
            Bound::Unbounded,
        )
        .limit(n);
        // In place: each row's key and value are slices of the latched page, handed on
        // without a copy.
        let mut null = false;
        let seen = self.tx.scan_with(&self.t, scan, |row| {
            match (row.bytes(0)?, row.bytes(1)?) {
                (Some(k), Some(v)) => visit(&k, &v),
                _ => null = true,
            }
            Ok(!null)
        })?;
        if null {
            return Err(mismatch("minnow: a range read met a NULL key or value"));
        }
        Ok(seen as usize)
    }

    fn count(&mut self) -> Result<u64> {
        Ok(self.tx.count(&self.t)?)
    }
}
