//! `sbtest` on redb: a row table `id -> k ‖ c ‖ pad` and a hand-maintained index table
//! `(k, id) -> ()`, both changed in the same write transaction.

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};

use super::{C_LEN, SbEngine, SbRow};
use crate::{Result, mismatch};

const ROWS: TableDefinition<u32, &[u8]> = TableDefinition::new("sbtest");
const K_1: TableDefinition<(u32, u32), ()> = TableDefinition::new("k_1");

/// redb's `sbtest`, with the index kept by hand.
pub struct RedbSb {
    db: Database,
}

fn encode(r: &SbRow) -> Vec<u8> {
    let mut v = Vec::with_capacity(4 + r.c.len() + r.pad.len());
    v.extend_from_slice(&r.k.to_be_bytes());
    v.extend_from_slice(&r.c);
    v.extend_from_slice(&r.pad);
    v
}

fn k_of(row: &[u8]) -> Result<u32> {
    let b: [u8; 4] = row
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| mismatch("redb: short row"))?;
    Ok(u32::from_be_bytes(b))
}

fn c_of(row: &[u8]) -> Result<&[u8]> {
    row.get(4..4 + C_LEN)
        .ok_or_else(|| mismatch("redb: short row"))
}

impl RedbSb {
    /// Creates `sbtest.redb` in `dir` with a cache of `cache` bytes.
    pub fn create(dir: &std::path::Path, cache: usize) -> Result<RedbSb> {
        let db = Database::builder()
            .set_cache_size(cache)
            .create(dir.join("sbtest.redb"))?;
        let tx = db.begin_write()?;
        tx.open_table(ROWS)?;
        tx.open_table(K_1)?;
        tx.commit()?;
        Ok(RedbSb { db })
    }

    fn write(&self, rows: &[SbRow]) -> Result<()> {
        let tx = self.db.begin_write()?;
        {
            let mut t = tx.open_table(ROWS)?;
            let mut i = tx.open_table(K_1)?;
            for r in rows {
                if t.insert(r.id, encode(r).as_slice())?.is_some() {
                    return Err(mismatch(format!("redb: duplicate id {}", r.id)));
                }
                i.insert((r.k, r.id), ())?;
            }
        }
        tx.commit()?;
        Ok(())
    }
}

impl SbEngine for RedbSb {
    fn name(&self) -> &'static str {
        "redb"
    }

    fn notes(&self) -> String {
        "redb sbtest: row table + hand-kept index table (k, id), both in one write transaction \
         (Durability::Immediate); each read opens its own read transaction"
            .into()
    }

    fn load(&mut self, rows: &[SbRow]) -> Result<()> {
        self.write(rows)
    }

    fn point(&mut self, id: u32, out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        let t = self.db.begin_read()?.open_table(ROWS)?;
        match t.get(id)? {
            Some(row) => {
                out.extend_from_slice(c_of(row.value())?);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn range(&mut self, lo: u32, hi: u32, visit: &mut dyn FnMut(u32, &[u8])) -> Result<usize> {
        let t = self.db.begin_read()?.open_table(ROWS)?;
        let mut n = 0;
        for e in t.range(lo..=hi)? {
            let (id, row) = e?;
            visit(id.value(), c_of(row.value())?);
            n += 1;
        }
        Ok(n)
    }

    fn by_k(&mut self, k: u32, visit: &mut dyn FnMut(u32, &[u8])) -> Result<usize> {
        let tx = self.db.begin_read()?;
        let index = tx.open_table(K_1)?;
        let rows = tx.open_table(ROWS)?;
        let mut n = 0;
        for e in index.range((k, 0)..=(k, u32::MAX))? {
            let (key, _) = e?;
            let id = key.value().1;
            let row = rows
                .get(id)?
                .ok_or_else(|| mismatch(format!("redb: k_1 points at missing row {id}")))?;
            visit(id, c_of(row.value())?);
            n += 1;
        }
        Ok(n)
    }

    fn update_k(&mut self, id: u32) -> Result<bool> {
        let tx = self.db.begin_write()?;
        {
            let mut t = tx.open_table(ROWS)?;
            let mut i = tx.open_table(K_1)?;
            let Some(mut row) = t.get(id)?.map(|r| r.value().to_vec()) else {
                return Ok(false);
            };
            let k = k_of(&row)?;
            row[..4].copy_from_slice(&(k + 1).to_be_bytes());
            t.insert(id, row.as_slice())?;
            i.remove((k, id))?;
            i.insert((k + 1, id), ())?;
        }
        tx.commit()?;
        Ok(true)
    }

    fn insert(&mut self, row: &SbRow) -> Result<()> {
        self.write(std::slice::from_ref(row))
    }
}
