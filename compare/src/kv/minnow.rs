//! minnow through its public API: one table `kv (key BINARY(24) PRIMARY KEY, value
//! BINARY(150))`.

use std::ops::Bound;
use std::path::{Path, PathBuf};

use minnow::redo::FlushAtCommit;
use minnow::{ColumnDef, ColumnType, Config, Database, Scan, Table, TableDef, Value};

use super::{KEY_LEN, KvEngine, KvReader, VALUE_LEN};
use crate::{Result, mismatch};

const TABLE: &str = "kv";

/// minnow with `flush_log_at_trx_commit=0` and an explicit redo sync at every commit point.
///
/// minnow has no multi-statement transactions yet and `flush_log_at_trx_commit` is fixed per
/// database, so a write batch is a run of single-statement inserts whose redo stays in the
/// log buffer, then one [`commit`]: the same `Log::commit(lsn, Sync)` call that
/// `flush_log_at_trx_commit=1` makes after every statement, here made once per batch. An
/// individual write is one statement and one such commit, which is exactly
/// `flush_log_at_trx_commit=1`. A batch is durable as a whole when `commit` returns, but not
/// atomic: a crash in the middle keeps the statements before it.
pub struct Minnow {
    db: Database,
    dir: PathBuf,
}

/// Makes every statement so far durable: one write and sync of the redo log up to its
/// current end, through the public buffer pool handle.
pub(crate) fn commit(db: &Database) -> Result<()> {
    let pool = db.buffer_pool()?;
    let log = pool
        .log()
        .ok_or_else(|| mismatch("minnow: the buffer pool has no redo log"))?;
    pool.commit_durable(log.current_lsn(), FlushAtCommit::Sync)?;
    Ok(())
}

impl Minnow {
    /// Creates the database in `dir` with a buffer pool of `cache` bytes (every other knob at
    /// its default: 16 KiB pages, doublewrite on, crc32 page checksums, a 48 MiB redo log).
    pub fn create(dir: &Path, cache: usize) -> Result<Minnow> {
        let config = Config {
            buffer_pool_size: cache,
            flush_log_at_trx_commit: FlushAtCommit::Lazy,
            ..Config::default()
        };
        let db = Database::create(dir, config)?;
        db.create_table(
            TableDef::new(TABLE)
                .column(ColumnDef::new("key", ColumnType::Fixed(KEY_LEN as u16)))
                .column(ColumnDef::new("value", ColumnType::Fixed(VALUE_LEN as u16)))
                .primary_key(&["key"]),
        )?;
        commit(&db)?;
        Ok(Minnow {
            db,
            dir: dir.to_path_buf(),
        })
    }

    fn table(&self) -> Result<Table<'_>> {
        Ok(self.db.table(TABLE)?)
    }
}

impl KvEngine for Minnow {
    fn name(&self) -> &'static str {
        "minnow"
    }

    fn notes(&self) -> Vec<String> {
        vec![
            "minnow: every commit point syncs the redo log (`Log::commit(lsn, Sync)`, what \
             `flush_log_at_trx_commit=1` does per statement); doublewrite on, 16 KiB pages"
                .into(),
            "minnow batch: N single-statement inserts (or deletes) with \
             `flush_log_at_trx_commit=0`, then one redo sync: durable as a whole, not atomic \
             (no multi-statement transactions yet); no compaction"
                .into(),
        ]
    }

    fn insert(&mut self, pairs: &mut dyn Iterator<Item = (&[u8], &[u8])>) -> Result<u64> {
        let t = self.table()?;
        let mut n = 0;
        for (k, v) in pairs {
            t.insert(&[Value::Bytes(k.to_vec()), Value::Bytes(v.to_vec())])?;
            n += 1;
        }
        commit(&self.db)?;
        Ok(n)
    }

    fn remove(&mut self, keys: &mut dyn Iterator<Item = &[u8]>) -> Result<u64> {
        let t = self.table()?;
        let mut n = 0;
        for k in keys {
            if t.delete(&[Value::Bytes(k.to_vec())])?.is_some() {
                n += 1;
            }
        }
        commit(&self.db)?;
        Ok(n)
    }

    fn reader(&self) -> Result<Box<dyn KvReader + '_>> {
        Ok(Box::new(MinnowReader { t: self.table()? }))
    }

    fn quiesce(&mut self) -> Result<()> {
        self.db.buffer_pool()?.flush_all()?;
        Ok(())
    }

    fn compact(&mut self) -> Result<bool> {
        Ok(false)
    }

    fn dir(&self) -> &Path {
        &self.dir
    }
}

struct MinnowReader<'db> {
    t: Table<'db>,
}

fn bytes(v: &Value) -> Result<&[u8]> {
    match v {
        Value::Bytes(b) => Ok(b),
        other => Err(mismatch(format!("minnow: expected bytes, got {other:?}"))),
    }
}

impl KvReader for MinnowReader<'_> {
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        match self.t.get(&[Value::Bytes(key.to_vec())])? {
            Some(row) => {
                out.extend_from_slice(bytes(&row[1])?);
                Ok(true)
            }
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
        let mut seen = 0;
        for row in self.t.scan(scan)? {
            let row = row?;
            visit(bytes(&row[0])?, bytes(&row[1])?);
            seen += 1;
        }
        Ok(seen)
    }

    fn count(&mut self) -> Result<u64> {
        let mut n = 0;
        for row in self.t.scan(Scan::all().columns(&["key"]))? {
            row?;
            n += 1;
        }
        Ok(n)
    }
}
