//! LMDB through heed: one unnamed database of bytes, default environment flags.

use std::fs::File;
use std::ops::Bound;
use std::path::{Path, PathBuf};

use heed::types::Bytes;
use heed::{CompactionOption, Database, Env, EnvOpenOptions, RoTxn, WithTls};

use super::{KvEngine, KvReader};
use crate::{Result, mismatch};

/// LMDB with its default flags: a commit writes the pages and syncs the data file, then
/// writes and syncs the meta page.
pub struct Lmdb {
    env: Option<Env<WithTls>>,
    db: Database<Bytes, Bytes>,
    dir: PathBuf,
    map_size: usize,
}

fn open(dir: &Path, map_size: usize) -> Result<Env<WithTls>> {
    // SAFETY: heed makes `open` unsafe because opening one environment twice in a process,
    // or while another process changes it unsafely, is undefined behaviour. Each engine
    // instance owns a fresh directory of its own, and it reopens the environment only after
    // closing it (`close`, then `reopen`).
    let env = unsafe {
        EnvOpenOptions::new()
            .map_size(map_size)
            .max_readers(256)
            .open(dir)?
    };
    Ok(env)
}

impl Lmdb {
    /// Creates the environment in `dir` with a map of `map_size` bytes (address space only:
    /// the file grows as pages are written).
    pub fn create(dir: &Path, map_size: usize) -> Result<Lmdb> {
        let env = open(dir, map_size)?;
        let mut tx = env.write_txn()?;
        let db = env.create_database(&mut tx, None)?;
        tx.commit()?;
        Ok(Lmdb {
            env: Some(env),
            db,
            dir: dir.to_path_buf(),
            map_size,
        })
    }

    fn env(&self) -> Result<&Env<WithTls>> {
        self.env
            .as_ref()
            .ok_or_else(|| mismatch("lmdb: environment closed"))
    }
}

impl KvEngine for Lmdb {
    fn name(&self) -> &'static str {
        "LMDB"
    }

    fn notes(&self) -> Vec<String> {
        vec![format!(
            "{} (heed 0.22): default flags (a commit syncs the data pages, then the meta page), \
             reads through mmap, no cache of its own; batch = one write transaction; \
             compaction = copy with MDB_CP_COMPACT",
            heed::lmdb_version()
                .string
                .split(':')
                .next()
                .unwrap_or("LMDB")
        )]
    }

    fn insert(&mut self, pairs: &mut dyn Iterator<Item = (&[u8], &[u8])>) -> Result<u64> {
        let env = self.env()?;
        let mut tx = env.write_txn()?;
        let mut n = 0;
        for (k, v) in pairs {
            self.db.put(&mut tx, k, v)?;
            n += 1;
        }
        tx.commit()?;
        Ok(n)
    }

    fn remove(&mut self, keys: &mut dyn Iterator<Item = &[u8]>) -> Result<u64> {
        let env = self.env()?;
        let mut tx = env.write_txn()?;
        let mut n = 0;
        for k in keys {
            if self.db.delete(&mut tx, k)? {
                n += 1;
            }
        }
        tx.commit()?;
        Ok(n)
    }

    fn reader(&self) -> Result<Box<dyn KvReader + '_>> {
        Ok(Box::new(LmdbReader {
            tx: self.env()?.read_txn()?,
            db: self.db,
        }))
    }

    fn close(&mut self) -> Result<()> {
        if let Some(env) = self.env.take() {
            env.prepare_for_closing().wait();
        }
        Ok(())
    }

    fn reopen(&mut self) -> Result<()> {
        if self.env.is_some() {
            return Ok(());
        }
        let env = open(&self.dir, self.map_size)?;
        let tx = env.read_txn()?;
        self.db = env
            .open_database(&tx, None)?
            .ok_or_else(|| mismatch("lmdb: database gone after reopening"))?;
        drop(tx);
        self.env = Some(env);
        Ok(())
    }

    fn compact(&mut self) -> Result<bool> {
        // LMDB compacts by copying: write a compacted copy, close, swap the files, reopen.
        let env = self.env()?;
        let copy = self.dir.join("data.compact.mdb");
        let mut f = File::create_new(&copy)?;
        env.copy_to_file(&mut f, CompactionOption::Enabled)?;
        f.sync_all()?;
        drop(f);
        self.close()?;
        std::fs::rename(&copy, self.dir.join("data.mdb"))?;
        self.reopen()?;
        Ok(true)
    }

    fn dir(&self) -> &Path {
        &self.dir
    }
}

struct LmdbReader<'e> {
    tx: RoTxn<'e, WithTls>,
    db: Database<Bytes, Bytes>,
}

impl KvReader for LmdbReader<'_> {
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        match self.db.get(&self.tx, key)? {
            Some(v) => {
                out.extend_from_slice(v);
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
        let bounds: (Bound<&[u8]>, Bound<&[u8]>) = (Bound::Included(start), Bound::Unbounded);
        let mut seen = 0;
        for e in self.db.range(&self.tx, &bounds)?.take(n) {
            let (k, v) = e?;
            visit(k, v);
            seen += 1;
        }
        Ok(seen)
    }

    fn count(&mut self) -> Result<u64> {
        Ok(self.db.len(&self.tx)?)
    }
}
