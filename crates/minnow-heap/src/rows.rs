//! The iterators of a heap table: index scans ([`HeapRows`]) and the table scan
//! ([`FullScan`]). Both hold the table's lock shared for as long as they live.

use std::os::unix::fs::FileExt;

use minnow::{Rows, Value};
use parking_lot::RwLockReadGuard;

use crate::page::{self, Damage, PAGE_SIZE};
use crate::{HeapError, HeapTable, Result, Tail, rowid_of};

/// Pages a table scan reads per `pread` (128 KiB, MyISAM's default `read_buffer_size`).
pub const SCAN_PAGES: u32 = 8;

/// Rows found through an index ([`HeapTable::scan`], [`HeapTable::scan_index`]).
pub struct HeapRows<'t, 'db> {
    table: &'t HeapTable<'db>,
    _shared: RwLockReadGuard<'t, Tail>,
    inner: Rows,
    covering: bool,
    want: Vec<usize>,
    done: bool,
}

impl std::fmt::Debug for HeapRows<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeapRows")
            .field("table", &self.table.def.name)
            .field("covering", &self.covering)
            .finish()
    }
}

impl<'t, 'db> HeapRows<'t, 'db> {
    pub(crate) fn new(
        table: &'t HeapTable<'db>,
        shared: RwLockReadGuard<'t, Tail>,
        inner: Rows,
        covering: bool,
        want: Vec<usize>,
    ) -> HeapRows<'t, 'db> {
        HeapRows {
            table,
            _shared: shared,
            inner,
            covering,
            want,
            done: false,
        }
    }

    /// True if the scan answers from the index alone, without reading rows.
    pub fn is_covering(&self) -> bool {
        self.covering
    }
}

impl Iterator for HeapRows<'_, '_> {
    type Item = Result<Vec<Value>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let r = match self.inner.next()? {
            Err(e) => Err(HeapError::from(e)),
            Ok(entry) if self.covering => Ok(entry),
            Ok(entry) => self.table.fetch(rowid_of(&entry), &self.want),
        };
        if r.is_err() {
            self.done = true;
        }
        Some(r)
    }
}

/// Every live row in heap order ([`HeapTable::full_scan`]).
pub struct FullScan<'t, 'db> {
    table: &'t HeapTable<'db>,
    _shared: RwLockReadGuard<'t, Tail>,
    want: Vec<usize>,
    n_pages: u32,
    /// The next page to read from the file.
    next_page: u32,
    /// Pages read and not yet decoded, and which page the first of them is.
    buf: Vec<u8>,
    buf_first: u32,
    buf_pages: u32,
    /// The page being decoded and the next row offset in it.
    cur: u32,
    at: usize,
    top: usize,
    done: bool,
}

impl std::fmt::Debug for FullScan<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FullScan")
            .field("table", &self.table.def.name)
            .field("page", &self.cur)
            .finish()
    }
}

impl<'t, 'db> FullScan<'t, 'db> {
    pub(crate) fn new(
        table: &'t HeapTable<'db>,
        shared: RwLockReadGuard<'t, Tail>,
        want: Vec<usize>,
        n_pages: u32,
    ) -> FullScan<'t, 'db> {
        FullScan {
            table,
            _shared: shared,
            want,
            n_pages,
            next_page: 1,
            buf: Vec::new(),
            buf_first: 1,
            buf_pages: 0,
            cur: 1,
            at: 0,
            top: 0,
            done: false,
        }
    }

    /// Moves to page `self.cur`, reading the next chunk of the file if needed, and checks
    /// it. Returns false at the end of the file.
    fn enter_page(&mut self) -> Result<bool> {
        if self.cur >= self.n_pages {
            return Ok(false);
        }
        if self.cur >= self.buf_first + self.buf_pages {
            let n = SCAN_PAGES.min(self.n_pages - self.next_page);
            let offset = u64::from(self.next_page) * PAGE_SIZE as u64;
            self.buf.resize(n as usize * PAGE_SIZE, 0);
            self.table
                .file
                .read_exact_at(&mut self.buf, offset)
                .map_err(|source| self.table.io_err("read", offset, source))?;
            self.buf_first = self.next_page;
            self.buf_pages = n;
            self.next_page += n;
        }
        let off = (self.cur - self.buf_first) as usize * PAGE_SIZE;
        let page = self.buf.get(off..off + PAGE_SIZE).unwrap_or_default();
        let page_offset = u64::from(self.cur) * PAGE_SIZE as u64;
        self.top = page::verify(page, self.cur, page::HEAP_PAGE_TYPE)
            .map_err(|d| self.table.corrupt(page_offset, d))?;
        self.at = page::DATA_START;
        Ok(true)
    }

    fn step(&mut self) -> Result<Option<Vec<Value>>> {
        loop {
            if self.at == 0 || self.at >= self.top {
                if self.at != 0 {
                    self.cur += 1;
                }
                if !self.enter_page()? {
                    return Ok(None);
                }
                continue;
            }
            let off = (self.cur - self.buf_first) as usize * PAGE_SIZE;
            let at = self.at;
            let rowid = u64::from(self.cur) * PAGE_SIZE as u64 + at as u64;
            let bytes = self
                .buf
                .get(off + at..off + self.top)
                .ok_or_else(|| Damage {
                    expected: "a row below heap_top".into(),
                    actual: format!("offset {at}"),
                })
                .map_err(|d| self.table.corrupt(rowid, d))?;
            let (status, payload) =
                page::row_at(bytes).map_err(|d| self.table.corrupt(rowid, d))?;
            self.at = at + page::ROW_HEADER + payload.len();
            if status == page::LIVE {
                return self
                    .table
                    .format
                    .decode(payload, &self.want)
                    .map(Some)
                    .map_err(|d| self.table.corrupt(rowid, d));
            }
        }
    }
}

impl Iterator for FullScan<'_, '_> {
    type Item = Result<Vec<Value>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.step() {
            Ok(Some(row)) => Some(Ok(row)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}
