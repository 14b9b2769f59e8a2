//! `sbtest` on SQLite: `id INTEGER PRIMARY KEY` (the rowid, so the table is clustered by
//! id) and `CREATE INDEX k_1`.

use rusqlite::Connection;

use super::{SbEngine, SbRow};
use crate::Result;

/// SQLite's `sbtest`: WAL mode, `synchronous=FULL`, autocommit statements.
pub struct SqliteSb {
    c: Connection,
}

impl SqliteSb {
    /// Creates `sbtest.sqlite` in `dir` with a page cache of `cache` bytes.
    pub fn create(dir: &std::path::Path, cache: usize) -> Result<SqliteSb> {
        let c = crate::kv::sqlite::connect(&dir.join("sbtest.sqlite"), (cache / 1024) as i64)?;
        c.execute_batch(
            "CREATE TABLE sbtest (id INTEGER PRIMARY KEY, k INTEGER NOT NULL DEFAULT 0,
                                  c BLOB NOT NULL, pad BLOB NOT NULL);
             CREATE INDEX k_1 ON sbtest (k);",
        )?;
        Ok(SqliteSb { c })
    }

    fn visit(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        visit: &mut dyn FnMut(u32, &[u8]),
    ) -> Result<usize> {
        let mut st = self.c.prepare_cached(sql)?;
        let mut rows = st.query(params)?;
        let mut n = 0;
        while let Some(row) = rows.next()? {
            visit(row.get(0)?, row.get_ref(1)?.as_blob()?);
            n += 1;
        }
        Ok(n)
    }
}

impl SbEngine for SqliteSb {
    fn name(&self) -> &'static str {
        "SQLite"
    }

    fn notes(&self) -> String {
        "SQLite sbtest: autocommit statements, WAL + synchronous=FULL; load in one transaction"
            .into()
    }

    fn load(&mut self, rows: &[SbRow]) -> Result<()> {
        let tx = self.c.transaction()?;
        {
            let mut st =
                tx.prepare_cached("INSERT INTO sbtest (id, k, c, pad) VALUES (?1, ?2, ?3, ?4)")?;
            for r in rows {
                st.execute((r.id, r.k, &r.c[..], &r.pad[..]))?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    fn point(&mut self, id: u32, out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        let mut st = self
            .c
            .prepare_cached("SELECT c FROM sbtest WHERE id = ?1")?;
        let mut rows = st.query([id])?;
        match rows.next()? {
            Some(row) => {
                out.extend_from_slice(row.get_ref(0)?.as_blob()?);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn range(&mut self, lo: u32, hi: u32, visit: &mut dyn FnMut(u32, &[u8])) -> Result<usize> {
        self.visit(
            "SELECT id, c FROM sbtest WHERE id BETWEEN ?1 AND ?2 ORDER BY id",
            (lo, hi),
            visit,
        )
    }

    fn by_k(&mut self, k: u32, visit: &mut dyn FnMut(u32, &[u8])) -> Result<usize> {
        self.visit(
            "SELECT id, c FROM sbtest INDEXED BY k_1 WHERE k = ?1 ORDER BY id",
            [k],
            visit,
        )
    }

    fn update_k(&mut self, id: u32) -> Result<bool> {
        let mut st = self
            .c
            .prepare_cached("UPDATE sbtest SET k = k + 1 WHERE id = ?1")?;
        Ok(st.execute([id])? == 1)
    }

    fn insert(&mut self, r: &SbRow) -> Result<()> {
        let mut st = self
            .c
            .prepare_cached("INSERT INTO sbtest (id, k, c, pad) VALUES (?1, ?2, ?3, ?4)")?;
        st.execute((r.id, r.k, &r.c[..], &r.pad[..]))?;
        Ok(())
    }
}
