//! redb: one table `&[u8] -> &[u8]`, the default `Durability::Immediate`.

use std::path::{Path, PathBuf};

use redb::{Database, ReadOnlyTable, ReadableDatabase, ReadableTableMetadata, TableDefinition};

use super::{KvEngine, KvReader};
use crate::{Result, mismatch};

const KV: TableDefinition<&[u8], &[u8]> = TableDefinition::new("kv");

/// redb with its default durability: every commit is durable when it returns.
pub struct Redb {
    db: Option<Database>,
    dir: PathBuf,
    cache: usize,
}

impl Redb {
    /// Creates `kv.redb` in `dir` with a cache of `cache` bytes.
    pub fn create(dir: &Path, cache: usize) -> Result<Redb> {
        let db = Database::builder()
            .set_cache_size(cache)
            .create(dir.join("kv.redb"))?;
        let tx = db.begin_write()?;
        tx.open_table(KV)?;
        tx.commit()?;
        Ok(Redb {
            db: Some(db),
            dir: dir.to_path_buf(),
            cache,
        })
    }
}

impl Redb {
    fn db(&self) -> Result<&Database> {
        self.db
            .as_ref()
            .ok_or_else(|| mismatch("redb: the database is closed"))
    }
}

impl KvEngine for Redb {
    fn name(&self) -> &'static str {
        "redb"
    }

    fn notes(&self) -> Vec<String> {
        vec![format!(
            "redb: Durability::Immediate (the default; one fsync per commit with its \
             checksummed commit), cache {} MiB; batch = one write transaction; \
             compaction = Database::compact",
            self.cache >> 20
        )]
    }

    fn insert(&mut self, pairs: &mut dyn Iterator<Item = (&[u8], &[u8])>) -> Result<u64> {
        let tx = self.db()?.begin_write()?;
        let mut n = 0;
        {
            let mut t = tx.open_table(KV)?;
            for (k, v) in pairs {
                t.insert(k, v)?;
                n += 1;
            }
        }
        tx.commit()?;
        Ok(n)
    }

    fn remove(&mut self, keys: &mut dyn Iterator<Item = &[u8]>) -> Result<u64> {
        let tx = self.db()?.begin_write()?;
        let mut n = 0;
        {
            let mut t = tx.open_table(KV)?;
            for k in keys {
                if t.remove(k)?.is_some() {
                    n += 1;
                }
            }
        }
        tx.commit()?;
        Ok(n)
    }

    fn reader(&self) -> Result<Box<dyn KvReader + '_>> {
        let t = self.db()?.begin_read()?.open_table(KV)?;
        Ok(Box::new(RedbReader { t }))
    }

    fn close(&mut self) -> Result<()> {
        // Dropping the last handle closes the file (redb has no explicit close).
        self.db = None;
        Ok(())
    }

    fn reopen(&mut self) -> Result<()> {
        if self.db.is_none() {
            self.db = Some(
                Database::builder()
                    .set_cache_size(self.cache)
                    .open(self.dir.join("kv.redb"))?,
            );
        }
        Ok(())
    }

    fn compact(&mut self) -> Result<bool> {
        self.db
            .as_mut()
            .ok_or_else(|| mismatch("redb: the database is closed"))?
            .compact()?;
        Ok(true)
    }

    fn dir(&self) -> &Path {
        &self.dir
    }
}

struct RedbReader {
    t: ReadOnlyTable<&'static [u8], &'static [u8]>,
}

impl KvReader for RedbReader {
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        match self.t.get(key)? {
            Some(v) => {
                out.extend_from_slice(v.value());
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
        let mut seen = 0;
        for e in self.t.range::<&[u8]>(start..)?.take(n) {
            let (k, v) = e?;
            visit(k.value(), v.value());
            seen += 1;
        }
        Ok(seen)
    }

    fn count(&mut self) -> Result<u64> {
        Ok(self.t.len()?)
    }
}
