//! `sbtest` on minnow: a table with a clustered primary key and a secondary index.

use std::ops::Bound;

use minnow::{ColumnDef, ColumnType, Database, IndexDef, Scan, Table, TableDef, Value};

use super::{C_LEN, PAD_LEN, SbEngine, SbRow};
use crate::kv::minnow::{commit, config};
use crate::{Result, mismatch};

/// minnow's `sbtest` with the default durability, as [`crate::kv::Minnow`]: every write is a
/// transaction whose commit syncs the redo log.
pub struct MinnowSb {
    db: Database,
}

impl MinnowSb {
    /// Creates the database in `dir` with a buffer pool of `cache` bytes.
    pub fn create(dir: &std::path::Path, cache: usize) -> Result<MinnowSb> {
        let db = Database::create(dir, config(cache))?;
        db.create_table(
            TableDef::new("sbtest")
                .column(ColumnDef::new("id", ColumnType::U32))
                .column(ColumnDef::new("k", ColumnType::U32))
                .column(ColumnDef::new("c", ColumnType::Fixed(C_LEN as u16)))
                .column(ColumnDef::new("pad", ColumnType::Fixed(PAD_LEN as u16)))
                .primary_key(&["id"])
                .index(IndexDef::new("k_1", &["k"])),
        )?;
        Ok(MinnowSb { db })
    }

    fn t(&self) -> Result<Table> {
        Ok(self.db.table("sbtest")?)
    }
}

fn row_values(r: &SbRow) -> [Value; 4] {
    [
        Value::UInt(r.id as u64),
        Value::UInt(r.k as u64),
        Value::Bytes(r.c.to_vec()),
        Value::Bytes(r.pad.to_vec()),
    ]
}

fn uint(v: &Value) -> Result<u32> {
    match v {
        Value::UInt(x) => Ok(*x as u32),
        Value::Int(x) => Ok(*x as u32),
        other => Err(mismatch(format!(
            "minnow: expected an integer, got {other:?}"
        ))),
    }
}

fn bytes(v: &Value) -> Result<&[u8]> {
    match v {
        Value::Bytes(b) => Ok(b),
        other => Err(mismatch(format!("minnow: expected bytes, got {other:?}"))),
    }
}

/// Visits `(id, c)` of every row of `rows`, whose columns are `[id, c]`.
fn visit_rows(rows: minnow::Rows, visit: &mut dyn FnMut(u32, &[u8])) -> Result<usize> {
    let mut n = 0;
    for row in rows {
        let row = row?;
        visit(uint(&row[0])?, bytes(&row[1])?);
        n += 1;
    }
    Ok(n)
}

impl SbEngine for MinnowSb {
    fn name(&self) -> &'static str {
        "minnow"
    }

    fn notes(&self) -> String {
        "minnow sbtest: default durability (flush_log_at_trx_commit=1); load in one transaction; \
         each update and insert its own transaction (the update is `get_for_update` + `update` \
         of the whole row: the API has no `SET k = k + 1`); reads are autocommit `Table` reads"
            .into()
    }

    fn load(&mut self, rows: &[SbRow]) -> Result<()> {
        let t = self.t()?;
        let mut tx = self.db.begin()?;
        for r in rows {
            tx.insert(&t, &row_values(r))?;
        }
        commit(tx)
    }

    fn point(&mut self, id: u32, out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        match self.t()?.get(&[Value::UInt(id as u64)])? {
            Some(row) => {
                out.extend_from_slice(bytes(&row[2])?);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn range(&mut self, lo: u32, hi: u32, visit: &mut dyn FnMut(u32, &[u8])) -> Result<usize> {
        let scan = Scan::range(
            Bound::Included(vec![Value::UInt(lo as u64)]),
            Bound::Included(vec![Value::UInt(hi as u64)]),
        )
        .columns(&["id", "c"]);
        visit_rows(self.t()?.scan(scan)?, visit)
    }

    fn by_k(&mut self, k: u32, visit: &mut dyn FnMut(u32, &[u8])) -> Result<usize> {
        let key = vec![Value::UInt(k as u64)];
        let scan =
            Scan::range(Bound::Included(key.clone()), Bound::Included(key)).columns(&["id", "c"]);
        visit_rows(self.t()?.scan_index("k_1", scan)?, visit)
    }

    fn update_k(&mut self, id: u32) -> Result<bool> {
        let t = self.t()?;
        let mut tx = self.db.begin()?;
        let Some(mut row) = tx.get_for_update(&t, &[Value::UInt(id as u64)])? else {
            return Ok(false);
        };
        let k = row
            .get_mut(1)
            .ok_or_else(|| mismatch("minnow: sbtest row without k"))?;
        *k = Value::UInt(uint(k)? as u64 + 1);
        tx.update(&t, &row)?;
        commit(tx)?;
        Ok(true)
    }

    fn insert(&mut self, row: &SbRow) -> Result<()> {
        let t = self.t()?;
        let mut tx = self.db.begin()?;
        tx.insert(&t, &row_values(row))?;
        commit(tx)
    }
}
