//! Reading a range as owned entries: [`RangeCursor::next_in`] (and the [`RangeScan`]
//! iterator over it) copies the records of the range out of their leaf into [`Entry`]s of
//! decoded values, a leaf's worth (or a batch's, or what the limit leaves) at a time, and
//! hands them out one by one with no latch held. [`RangeCursor::visit_in`] (the `visit`
//! module) reads them in place instead. Both walk the leaves by the parent module's rules.

use minnow_buf::BufferPool;

use super::{RangeCursor, RangeScan};
use crate::node::{self, Cursor};
use crate::record::Value;
use crate::tree::{Entry, TreeError};

impl RangeCursor {
    /// Buffers the record at `c`; true once the buffer holds `cap`.
    fn take(
        &mut self,
        pool: &BufferPool,
        page: &[u8],
        c: Cursor,
        cap: usize,
    ) -> Result<bool, TreeError> {
        let e = self.entry(pool, page, c)?;
        self.buf.push_back(e);
        Ok(self.buf.len() >= cap)
    }

    fn entry(&mut self, pool: &BufferPool, page: &[u8], c: Cursor) -> Result<Entry, TreeError> {
        self.decoded += 1;
        let values = match &self.fields {
            None => self
                .tree
                .decode_leaf(pool, page, c.origin(), self.fetch.as_deref())?,
            Some(mask) => self.decode_fields(pool, page, c.origin(), mask)?,
        };
        Ok(Entry {
            values,
            deleted: node::header_at(page, c)?.deleted(),
            page_max_trx_id: node::max_trx_id(page)?,
        })
    }

    /// The record at `origin` with only the fields `mask` marks decoded (off-page ones
    /// fetched if `fetch` allows), the others [`Value::Null`]: one walk over the header.
    fn decode_fields(
        &self,
        pool: &BufferPool,
        page: &[u8],
        origin: usize,
        mask: &[bool],
    ) -> Result<Vec<Value>, TreeError> {
        let leaf = minnow_page::bytes::read_u32(page, minnow_page::fil::PAGE_NO).unwrap_or(0);
        let mut out = Vec::with_capacity(mask.len());
        let mut walk = self.tree.leaf.walk(page, origin);
        while let Some(f) = walk.next() {
            let i = out.len();
            if !mask.get(i).copied().unwrap_or(false) {
                f?;
                out.push(Value::Null);
                continue;
            }
            let stored = f?.map(|b| (b, walk.is_external()));
            let wanted = self.fetch.as_ref().is_none_or(|w| w.contains(&i));
            out.push(
                self.tree
                    .decode_stored(pool, leaf, origin, i, stored, wanted)?,
            );
        }
        Ok(out)
    }

    /// Copies the records to return from the next leaf into the buffer: at most as many as
    /// the limit still allows and the batch asks for, starting at the position the leaf was
    /// reached with.
    fn fill(&mut self, pool: &BufferPool) -> Result<(), TreeError> {
        let Some((g, at)) = self.next_leaf(pool)? else {
            self.done = true;
            return Ok(());
        };
        let limit = self.remaining.unwrap_or(usize::MAX);
        if self.budget == 0 {
            // The caller used up a whole batch and wants more (it skipped records): the next
            // one is twice as big, so what it costs grows with what was skipped, not with
            // what the leaf holds.
            self.batch = self.batch.saturating_mul(2);
            self.budget = self.batch;
        }
        let cap = limit.min(self.budget);
        let (last, full) = self.walk_leaf(&g, at, |s, page, c| s.take(pool, page, c, cap))?;
        if full && cap >= limit {
            self.done = true;
        }
        self.budget = self.budget.saturating_sub(self.buf.len());
        self.leave(&g, last, full)
    }
}

impl RangeCursor {
    /// The next record of the range, read through `pool` (the pool of the tree the cursor
    /// was opened on); `None` at the end. After an error the cursor ends.
    pub fn next_in(&mut self, pool: &BufferPool) -> Option<Result<Entry, TreeError>> {
        loop {
            if self.remaining == Some(0) {
                return None;
            }
            if let Some(e) = self.buf.pop_front() {
                if let Some(r) = self.remaining.as_mut() {
                    *r -= 1;
                }
                return Some(Ok(e));
            }
            if self.done {
                return None;
            }
            if let Err(e) = self.fill(pool) {
                self.done = true;
                return Some(Err(e));
            }
        }
    }
}

impl Iterator for RangeScan<'_> {
    type Item = Result<Entry, TreeError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.cursor.next_in(self.pool)
    }
}
