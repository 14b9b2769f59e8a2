//! SQLite (rusqlite with its bundled library): `kv (key BLOB PRIMARY KEY, value BLOB)
//! WITHOUT ROWID`, WAL mode, `synchronous=FULL`.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::Connection;

use super::{KvEngine, KvReader};
use crate::{Result, mismatch};

/// SQLite with a pool of connections: a connection serves one writer or one reader at a time
/// (a `Connection` is not `Sync`), and goes back to the pool after, with its page cache warm.
pub struct Sqlite {
    path: PathBuf,
    dir: PathBuf,
    cache_kib: i64,
    pool: Mutex<Vec<Connection>>,
}

/// Opens a connection with the settings every connection of the run uses.
pub(crate) fn connect(path: &Path, cache_kib: i64) -> Result<Connection> {
    let c = Connection::open(path)?;
    let mode: String = c.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(mismatch(format!("sqlite: journal_mode is {mode}, not wal")));
    }
    c.pragma_update(None, "synchronous", "FULL")?;
    // A negative cache_size is in KiB.
    c.pragma_update(None, "cache_size", -cache_kib)?;
    c.busy_timeout(std::time::Duration::from_secs(10))?;
    Ok(c)
}

impl Sqlite {
    /// Creates `kv.sqlite` in `dir`; every connection gets a page cache of `cache` bytes.
    pub fn create(dir: &Path, cache: usize) -> Result<Sqlite> {
        let path = dir.join("kv.sqlite");
        let cache_kib = (cache / 1024) as i64;
        let c = connect(&path, cache_kib)?;
        c.execute_batch(
            "CREATE TABLE kv (key BLOB PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID",
        )?;
        Ok(Sqlite {
            path,
            dir: dir.to_path_buf(),
            cache_kib,
            pool: Mutex::new(vec![c]),
        })
    }

    fn take(&self) -> Result<Connection> {
        let pooled = self
            .pool
            .lock()
            .map_err(|_| mismatch("sqlite: pool lock poisoned"))?
            .pop();
        match pooled {
            Some(c) => Ok(c),
            None => connect(&self.path, self.cache_kib),
        }
    }

    fn give(&self, c: Connection) {
        if let Ok(mut p) = self.pool.lock() {
            p.push(c);
        }
    }

    /// Runs `f` in one transaction on a pooled connection and commits it.
    fn write(&self, f: impl FnOnce(&rusqlite::Transaction) -> Result<u64>) -> Result<u64> {
        let mut c = self.take()?;
        let r = (|| -> Result<u64> {
            let tx = c.transaction()?;
            let n = f(&tx)?;
            tx.commit()?;
            Ok(n)
        })();
        self.give(c);
        r
    }
}

impl KvEngine for Sqlite {
    fn name(&self) -> &'static str {
        "SQLite"
    }

    fn notes(&self) -> Vec<String> {
        vec![format!(
            "SQLite {}: WAL mode, synchronous=FULL (each commit syncs the WAL), \
             WITHOUT ROWID table, cache_size {} MiB per connection; batch = one \
             transaction; compaction = VACUUM",
            rusqlite::version(),
            self.cache_kib / 1024
        )]
    }

    fn insert(&mut self, pairs: &mut dyn Iterator<Item = (&[u8], &[u8])>) -> Result<u64> {
        self.write(|tx| {
            let mut st = tx.prepare_cached("INSERT INTO kv (key, value) VALUES (?1, ?2)")?;
            let mut n = 0;
            for (k, v) in pairs {
                n += st.execute((k, v))? as u64;
            }
            Ok(n)
        })
    }

    fn remove(&mut self, keys: &mut dyn Iterator<Item = &[u8]>) -> Result<u64> {
        self.write(|tx| {
            let mut st = tx.prepare_cached("DELETE FROM kv WHERE key = ?1")?;
            let mut n = 0;
            for k in keys {
                n += st.execute([k])? as u64;
            }
            Ok(n)
        })
    }

    fn reader(&self) -> Result<Box<dyn KvReader + '_>> {
        let c = self.take()?;
        // One read transaction for the reader's life, as the other engines have.
        if let Err(e) = c.execute_batch("BEGIN") {
            self.give(c);
            return Err(e.into());
        }
        Ok(Box::new(SqliteReader {
            c: Some(c),
            engine: self,
        }))
    }

    fn close(&mut self) -> Result<()> {
        // Every reader has given its connection back by now; closing the last connection
        // checkpoints the WAL into the database and deletes it (SQLite's clean close).
        let conns = std::mem::take(
            &mut *self
                .pool
                .lock()
                .map_err(|_| mismatch("sqlite: pool lock poisoned"))?,
        );
        for c in conns {
            c.close().map_err(|(_, e)| e)?;
        }
        Ok(())
    }

    fn reopen(&mut self) -> Result<()> {
        let c = connect(&self.path, self.cache_kib)?;
        self.give(c);
        Ok(())
    }

    fn compact(&mut self) -> Result<bool> {
        let c = self.take()?;
        let r = c.execute_batch("VACUUM");
        self.give(c);
        r?;
        Ok(true)
    }

    fn dir(&self) -> &Path {
        &self.dir
    }
}

struct SqliteReader<'e> {
    c: Option<Connection>,
    engine: &'e Sqlite,
}

impl SqliteReader<'_> {
    fn c(&self) -> Result<&Connection> {
        self.c
            .as_ref()
            .ok_or_else(|| mismatch("sqlite: reader without a connection"))
    }
}

impl Drop for SqliteReader<'_> {
    fn drop(&mut self) {
        if let Some(c) = self.c.take() {
            let _ = c.execute_batch("COMMIT");
            self.engine.give(c);
        }
    }
}

impl KvReader for SqliteReader<'_> {
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        let mut st = self
            .c()?
            .prepare_cached("SELECT value FROM kv WHERE key = ?1")?;
        let mut rows = st.query([key])?;
        match rows.next()? {
            Some(row) => {
                out.extend_from_slice(row.get_ref(0)?.as_blob()?);
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
        let mut st = self
            .c()?
            .prepare_cached("SELECT key, value FROM kv WHERE key >= ?1 ORDER BY key LIMIT ?2")?;
        let mut rows = st.query((start, n as i64))?;
        let mut seen = 0;
        while let Some(row) = rows.next()? {
            visit(row.get_ref(0)?.as_blob()?, row.get_ref(1)?.as_blob()?);
            seen += 1;
        }
        Ok(seen)
    }

    fn count(&mut self) -> Result<u64> {
        let n: i64 = self
            .c()?
            .query_row("SELECT COUNT(*) FROM kv", [], |r| r.get(0))?;
        Ok(n as u64)
    }
}
