//! The writers of a heap table (insert, delete, update, load) and [`HeapTable::check`]. Each
//! holds the table's lock exclusively for the whole statement.
//!
//! A row is appended to the last page (kept in memory), the page is written with one `pwrite`,
//! and then the index entries are inserted, primary key first. Uniqueness is checked before
//! anything is written, so a duplicate key changes nothing; an engine failure part-way
//! removes the entries already inserted and marks the row deleted.

use std::collections::HashSet;
use std::os::unix::fs::FileExt;

use minnow::Value;
use minnow_btree::record::RecordLayout;

use crate::page::{self, Damage, PAGE_SIZE};
use crate::{HeapCheck, HeapError, HeapIndex, HeapTable, Result, RowId, Tail, rowid_of};

/// Pages a load writes per `pwrite` (1 MiB).
const LOAD_BATCH: usize = 64;

/// One index's entries during a load: each entry's sort key (its fields' order-preserving
/// bytes, then the row id) and the index table's row.
type Entries = Vec<(Vec<Vec<u8>>, Vec<Value>)>;

impl HeapTable<'_> {
    fn encode(&self, row: &[Value]) -> Result<Vec<u8>> {
        self.format
            .encode(row)
            .map_err(|(i, reason)| HeapError::BadValue {
                table: self.def.name.clone(),
                column: self
                    .def
                    .columns
                    .get(i)
                    .map_or_else(|| format!("#{i}"), |c| format!("`{}`", c.name)),
                reason,
            })
    }

    /// Writes `bytes` (whole pages) at page `page_no`.
    fn write_pages(&self, page_no: u32, bytes: &[u8]) -> Result<()> {
        let offset = u64::from(page_no) * PAGE_SIZE as u64;
        self.file
            .write_all_at(bytes, offset)
            .map_err(|source| self.io_err("write", offset, source))
    }

    /// Appends a row payload to the tail page (starting a new page when it is full) and writes
    /// the page. Returns the row id.
    fn append(&self, tail: &mut Tail, payload: &[u8]) -> Result<RowId> {
        let err = |e: minnow_page::PageError| self.corrupt(0, Damage::from(e));
        if let Some((no, p)) = &mut tail.page
            && let Some(off) = page::append(p, payload).map_err(err)?
        {
            let no = *no;
            let mut out = p.clone();
            page::stamp(&mut out).map_err(err)?;
            self.write_pages(no, &out)?;
            return Ok(u64::from(no) * PAGE_SIZE as u64 + off as u64);
        }
        let no = tail.n_pages;
        let mut p = page::new_page(no).map_err(err)?;
        let Some(off) = page::append(&mut p, payload).map_err(err)? else {
            return Err(HeapError::BadValue {
                table: self.def.name.clone(),
                column: "(row)".into(),
                reason: "a row larger than a page".into(),
            });
        };
        let mut out = p.clone();
        page::stamp(&mut out).map_err(err)?;
        self.write_pages(no, &out)?;
        tail.n_pages = no + 1;
        tail.page = Some((no, p));
        Ok(u64::from(no) * PAGE_SIZE as u64 + off as u64)
    }

    /// Marks the row at `rowid` deleted, in the tail's copy or by rewriting its page.
    fn mark_deleted(&self, tail: &mut Tail, rowid: RowId) -> Result<()> {
        let no = u32::try_from(rowid / PAGE_SIZE as u64).unwrap_or(u32::MAX);
        let off = (rowid % PAGE_SIZE as u64) as usize;
        let corrupt = |d| self.corrupt(rowid, d);
        let mut p = match &mut tail.page {
            Some((t, p)) if *t == no => {
                page::mark_deleted(p, off).map_err(corrupt)?;
                p.clone()
            }
            _ => {
                let mut p = crate::read_page(&self.file, &self.path, no)?;
                page::verify(&p, no, page::HEAP_PAGE_TYPE).map_err(corrupt)?;
                page::mark_deleted(&mut p, off).map_err(corrupt)?;
                p
            }
        };
        page::stamp(&mut p).map_err(|e| corrupt(Damage::from(e)))?;
        self.write_pages(no, &p)
    }

    /// The row id an index holds for `key` (its index table's primary key), if any.
    fn lookup(&self, ix: &HeapIndex, row: &[Value]) -> Result<Option<RowId>> {
        let key: Vec<Value> = ix.cols.iter().map(|&c| row[c].clone()).collect();
        Ok(ix.table.get(&key)?.map(|e| rowid_of(&e)))
    }

    /// A duplicate-key error if a unique index (the primary key included) already holds
    /// `row`'s key for a row other than `own`.
    fn check_unique(&self, row: &[Value], own: Option<RowId>) -> Result<()> {
        for ix in self.indexes.iter().filter(|i| i.unique) {
            if let Some(r) = self.lookup(ix, row)?
                && Some(r) != own
            {
                return Err(HeapError::DuplicateKey {
                    table: self.def.name.clone(),
                    index: ix.name.clone(),
                    key: ix.cols.iter().map(|&c| row[c].clone()).collect(),
                });
            }
        }
        Ok(())
    }

    fn insert_locked(&self, tail: &mut Tail, row: &[Value]) -> Result<RowId> {
        let payload = self.encode(row)?;
        self.check_unique(row, None)?;
        let rowid = self.append(tail, &payload)?;
        let mut done = 0;
        let mut failure = None;
        for ix in &self.indexes {
            if let Err(e) = ix.table.insert(&ix.entry(row, rowid)) {
                failure = Some(e);
                break;
            }
            done += 1;
        }
        if let Some(e) = failure {
            for ix in self.indexes.iter().take(done) {
                let _ = ix.table.delete(ix.entry_key(row, rowid));
            }
            let _ = self.mark_deleted(tail, rowid);
            return Err(e.into());
        }
        Ok(rowid)
    }

    /// Inserts a row (one value per column, in table order); returns its row id. A key that
    /// a unique index (or the primary key) already holds is [`HeapError::DuplicateKey`].
    pub fn insert(&self, row: &[Value]) -> Result<RowId> {
        let mut tail = self.lock.write();
        self.insert_locked(&mut tail, row)
    }

    /// The row at `rowid` (all columns) and the id, for the primary key `key`.
    fn find(&self, key: &[Value]) -> Result<Option<(RowId, Vec<Value>)>> {
        let Some(e) = self.indexes[0].table.get(key)? else {
            return Ok(None);
        };
        let rowid = rowid_of(&e);
        let all: Vec<usize> = (0..self.def.columns.len()).collect();
        Ok(Some((rowid, self.fetch(rowid, &all)?)))
    }

    fn delete_locked(&self, tail: &mut Tail, rowid: RowId, row: &[Value]) -> Result<()> {
        for ix in self.indexes.iter().rev() {
            ix.table.delete(ix.entry_key(row, rowid))?;
        }
        self.mark_deleted(tail, rowid)
    }

    /// Deletes the row with primary key `key`; false if there is none.
    pub fn delete(&self, key: &[Value]) -> Result<bool> {
        let mut tail = self.lock.write();
        let Some((rowid, row)) = self.find(key)? else {
            return Ok(false);
        };
        self.delete_locked(&mut tail, rowid, &row)?;
        Ok(true)
    }

    /// Replaces the row whose primary key `row` carries (every column given, in table order);
    /// false if there is no such row. The row moves: it is written anew at the end of the
    /// heap and every index entry is rewritten.
    pub fn update(&self, row: &[Value]) -> Result<bool> {
        let mut tail = self.lock.write();
        self.encode(row)?;
        let key: Vec<Value> = self.indexes[0]
            .cols
            .iter()
            .map(|&c| row[c].clone())
            .collect();
        let Some((rowid, old)) = self.find(&key)? else {
            return Ok(false);
        };
        self.check_unique(row, Some(rowid))?;
        self.delete_locked(&mut tail, rowid, &old)?;
        self.insert_locked(&mut tail, row)?;
        Ok(true)
    }

    /// Loads `rows` (in any order; the heap keeps it) into an empty table: the heap written
    /// sequentially a megabyte at a time, every index's entries sorted in memory and built
    /// bottom-up with [`minnow::Table::load`]. Returns the rows loaded. On an error the heap
    /// file is cut back to empty.
    pub fn load<I, R>(&self, rows: I) -> Result<u64>
    where
        I: IntoIterator<Item = R>,
        R: AsRef<[Value]>,
    {
        let mut tail = self.lock.write();
        if tail.n_pages > 1
            || self.indexes[0]
                .table
                .scan(minnow::Scan::all().limit(1))?
                .next()
                .is_some()
        {
            return Err(HeapError::NotEmpty {
                table: self.def.name.clone(),
            });
        }
        let r = self.load_locked(&mut tail, rows);
        if r.is_err() {
            tail.n_pages = 1;
            tail.page = None;
            let _ = self.file.set_len(PAGE_SIZE as u64);
        }
        r
    }

    fn load_locked<I, R>(&self, tail: &mut Tail, rows: I) -> Result<u64>
    where
        I: IntoIterator<Item = R>,
        R: AsRef<[Value]>,
    {
        let err = |e: minnow_page::PageError| self.corrupt(0, Damage::from(e));
        // Entries per index: sort keys (each field's order-preserving bytes), then the row.
        let layouts: Vec<RecordLayout> = self
            .indexes
            .iter()
            .map(|ix| {
                let cols = ix.cols.iter().map(|&c| self.format.columns()[c]).collect();
                RecordLayout::secondary(cols)
            })
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| {
                self.corrupt(
                    0,
                    Damage {
                        expected: "an index layout".into(),
                        actual: e.to_string(),
                    },
                )
            })?;
        let mut entries: Vec<Entries> = vec![Vec::new(); self.indexes.len()];
        let mut batch: Vec<u8> = Vec::with_capacity(LOAD_BATCH * PAGE_SIZE);
        let mut batch_first = 1u32;
        let mut page_no = 1u32;
        let mut page = page::new_page(page_no).map_err(err)?;
        let mut n = 0u64;
        for row in rows {
            let row = row.as_ref();
            let payload = self.encode(row)?;
            let off = match page::append(&mut page, &payload).map_err(err)? {
                Some(off) => off,
                None => {
                    page::stamp(&mut page).map_err(err)?;
                    batch.extend_from_slice(&page);
                    if batch.len() >= LOAD_BATCH * PAGE_SIZE {
                        self.write_pages(batch_first, &batch)?;
                        batch.clear();
                        batch_first = page_no + 1;
                    }
                    page_no += 1;
                    page = page::new_page(page_no).map_err(err)?;
                    page::append(&mut page, &payload)
                        .map_err(err)?
                        .unwrap_or(page::DATA_START)
                }
            };
            let rowid = u64::from(page_no) * PAGE_SIZE as u64 + off as u64;
            for ((ix, layout), out) in self.indexes.iter().zip(&layouts).zip(&mut entries) {
                let mut sort = Vec::with_capacity(ix.cols.len() + 1);
                for (i, &c) in ix.cols.iter().enumerate() {
                    let b = layout
                        .encode_field(i, &row[c])
                        .map_err(|e| HeapError::BadValue {
                            table: self.def.name.clone(),
                            column: format!("`{}`", self.def.columns[c].name),
                            reason: e.to_string(),
                        })?;
                    sort.push(b.unwrap_or_default());
                }
                sort.push(rowid.to_be_bytes().to_vec());
                out.push((sort, ix.entry(row, rowid)));
            }
            n += 1;
        }
        if n == 0 {
            return Ok(0);
        }
        let mut last = page.clone();
        page::stamp(&mut last).map_err(err)?;
        batch.extend_from_slice(&last);
        self.write_pages(batch_first, &batch)?;
        tail.n_pages = page_no + 1;
        tail.page = Some((page_no, page));
        for (ix, mut e) in self.indexes.iter().zip(entries) {
            e.sort_by(|a, b| a.0.cmp(&b.0));
            if ix.unique
                && let Some(w) = e
                    .windows(2)
                    .find(|w| w[0].0[..ix.cols.len()] == w[1].0[..ix.cols.len()])
            {
                return Err(HeapError::DuplicateKey {
                    table: self.def.name.clone(),
                    index: ix.name.clone(),
                    key: w[1].1[..ix.cols.len()].to_vec(),
                });
            }
            ix.table.load(e.into_iter().map(|(_, row)| row))?;
        }
        Ok(n)
    }

    /// Reads the whole heap and every index and lists where they disagree: an index entry
    /// whose row is missing, deleted, damaged or holds another key; a live row some index
    /// does not reach. Damage to a page is a problem listed, not an error.
    pub fn check(&self) -> Result<HeapCheck> {
        let tail = self.lock.read();
        let mut report = HeapCheck::default();
        let mut live: HashSet<RowId> = HashSet::new();
        for no in 1..tail.n_pages {
            report.pages += 1;
            let p = crate::read_page(&self.file, &self.path, no)?;
            let top = match page::verify(&p, no, page::HEAP_PAGE_TYPE) {
                Ok(top) => top,
                Err(d) => {
                    report.problems.push(format!(
                        "page {no}: expected {}, found {}",
                        d.expected, d.actual
                    ));
                    continue;
                }
            };
            for r in page::rows(&p, top) {
                match r {
                    Ok((off, status, _)) if status == page::LIVE => {
                        report.rows += 1;
                        live.insert(u64::from(no) * PAGE_SIZE as u64 + off as u64);
                    }
                    Ok(_) => report.deleted += 1,
                    Err(d) => report.problems.push(format!(
                        "page {no}: expected {}, found {}",
                        d.expected, d.actual
                    )),
                }
            }
        }
        let all: Vec<usize> = (0..self.def.columns.len()).collect();
        for ix in &self.indexes {
            let mut reached = 0u64;
            for e in ix.table.scan(minnow::Scan::all())? {
                let e = e?;
                let rowid = rowid_of(&e);
                let key = e.get(..ix.cols.len()).unwrap_or_default();
                match self.fetch(rowid, &all) {
                    Ok(row) => {
                        let row_key: Vec<Value> = ix.cols.iter().map(|&c| row[c].clone()).collect();
                        if row_key != key {
                            report.problems.push(format!("index {}: entry {key:?} points at row {rowid} whose key is {row_key:?}", ix.name));
                        } else if live.contains(&rowid) {
                            reached += 1;
                        }
                    }
                    Err(err) => report
                        .problems
                        .push(format!("index {}: entry {key:?}: {err}", ix.name)),
                }
            }
            if reached != report.rows {
                report.problems.push(format!(
                    "index {}: reaches {reached} of {} live rows",
                    ix.name, report.rows
                ));
            }
        }
        drop(tail);
        Ok(report)
    }
}
