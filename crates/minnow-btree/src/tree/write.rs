//! The tree's row-level write API: insert, delete, update, the delete mark and the system
//! columns stamped in place. Each call is one change to one leaf record, made in one
//! mini-transaction: the optimistic path latches only the leaf (see "Writers: optimistic
//! first, pessimistic when the structure changes" in the module docs of `tree`), and a change
//! that splits or merges pages goes the pessimistic way (`split.rs`, `merge.rs`). The `_trx`
//! variants raise the leaf's `PAGE_MAX_TRX_ID` in the same mini-transaction.

use super::*;

impl BTree {
    /// Inserts a record (one value per stored field of the leaf layout); fails with
    /// [`TreeError::Duplicate`] if its key exists (delete-marked records included). Long
    /// columns of a record too big for half a page go to overflow pages, in the same mtr
    /// (see [`overflow`]). Returns the end LSN of the mtr that made the change.
    pub fn insert(&self, pool: &BufferPool, values: &[Value]) -> Result<Lsn, TreeError> {
        self.insert_trx(pool, values, 0)
    }

    /// [`BTree::insert`] on behalf of transaction `trx_id`: the leaf the record lands on
    /// gets its `PAGE_MAX_TRX_ID` raised to `trx_id` in the same mini-transaction (InnoDB's
    /// `page_update_max_trx_id`, done for every change of a secondary-index leaf; a split
    /// carries the value to the new page). `trx_id` 0 raises nothing: plain
    /// [`BTree::insert`].
    pub fn insert_trx(
        &self,
        pool: &BufferPool,
        values: &[Value],
        trx_id: u64,
    ) -> Result<Lsn, TreeError> {
        let p = self.prepare(pool, values)?;
        self.zip_retry(pool, || self.insert_prepared(pool, &p, trx_id, None))
    }

    /// [`BTree::insert`] of an encoded leaf record (stored as given: no field moves
    /// off-page).
    pub fn insert_rec(&self, pool: &BufferPool, rec: &RecordBuf) -> Result<Lsn, TreeError> {
        let p = overflow::Prepared::inline(rec.clone());
        self.zip_retry(pool, || self.insert_prepared(pool, &p, 0, None))
    }

    pub(super) fn insert_prepared(
        &self,
        pool: &BufferPool,
        p: &overflow::Prepared,
        trx_id: u64,
        hint: Option<&probe::LeafHint>,
    ) -> Result<Lsn, TreeError> {
        let key = self.leaf.key_of(p.rec.as_bytes(), p.rec.extra())?;
        if let Some(end) = self.insert_optimistic(pool, p, &key, trx_id, hint)? {
            return Ok(end);
        }
        self.insert_pessimistic(pool, p, &key, trx_id)
    }

    /// Deletes the record with key `key` (removing it from its page; see
    /// [`BTree::set_delete_mark`] for the logical delete MVCC uses). Merges pages that fall
    /// below [`MERGE_FILL`].
    pub fn delete(&self, pool: &BufferPool, key: &[Value]) -> Result<Lsn, TreeError> {
        self.delete_trx(pool, key, 0)
    }

    /// [`BTree::delete`] on behalf of transaction `trx_id` (a rollback removing an entry
    /// its transaction inserted): the leaf's `PAGE_MAX_TRX_ID` is raised to `trx_id` in the
    /// same mini-transaction, and a merge carries it to the page that takes the records.
    /// `trx_id` 0 raises nothing.
    pub fn delete_trx(
        &self,
        pool: &BufferPool,
        key: &[Value],
        trx_id: u64,
    ) -> Result<Lsn, TreeError> {
        let k = self.key(key)?;
        self.zip_retry(pool, || {
            if let Some(end) = self.delete_optimistic(pool, &k, trx_id)? {
                return Ok(end);
            }
            match self.delete_pessimistic(pool, &k, trx_id, true) {
                // The merged page does not compress: delete without merging.
                Err(TreeError::Buf(BufError::CompressionFailure { .. })) if self.zip.is_some() => {
                    self.delete_pessimistic(pool, &k, trx_id, false)
                }
                other => other,
            }
        })
    }

    /// Replaces the record with the same key as `values`: in place when the new record has
    /// the same size, else by delete and insert on the same page, else with a split. The old
    /// record's overflow chains are freed and the new one's written in the same mtr.
    pub fn update(&self, pool: &BufferPool, values: &[Value]) -> Result<Lsn, TreeError> {
        self.update_marked(pool, values, None)
    }

    /// [`BTree::update`] that also sets (`Some(true)`) or clears (`Some(false)`) the
    /// record's delete mark in the same mini-transaction (`None` keeps it). MVCC needs the
    /// two together: a delete stamps the deleting transaction's id and roll pointer and
    /// sets the mark atomically, a rollback restores the old values and the old mark.
    pub fn update_marked(
        &self,
        pool: &BufferPool,
        values: &[Value],
        mark: Option<bool>,
    ) -> Result<Lsn, TreeError> {
        let p = self.prepare(pool, values)?;
        let key = self.leaf.key_of(p.rec.as_bytes(), p.rec.extra())?;
        self.zip_retry(pool, || {
            if let Some(end) = self.update_optimistic(pool, &p, &key, mark)? {
                return Ok(end);
            }
            self.update_pessimistic(pool, &p, &key, mark)
        })
    }

    /// The record an insert of `values` would store, if it stores every field inline (the
    /// same choice of off-page columns as [`BTree::insert`]); `None` if some field would go
    /// off-page. A record too long even so is the error the insert would give.
    pub fn encode_inline(
        &self,
        pool: &BufferPool,
        values: &[Value],
    ) -> Result<Option<RecordBuf>, TreeError> {
        // Most records stay whole: encoded once, with no buffer per field (`prepare` would
        // choose nothing off-page for a record that fits `inline_max` either).
        if let Some(rec) = self.whole(pool, self.leaf.encode(values)) {
            return Ok(Some(rec));
        }
        let p = self.prepare(pool, values)?;
        Ok(p.is_inline().then_some(p.rec))
    }

    /// [`BTree::encode_inline`] from borrowed values (one per stored field), for the common
    /// record that stays whole: `None` where the values do not encode or the record would
    /// not stay inline, and the caller takes [`BTree::encode_inline`], which says what is
    /// wrong or moves columns off-page.
    pub fn try_encode_inline_refs(
        &self,
        pool: &BufferPool,
        values: &[&crate::record::Value],
    ) -> Option<RecordBuf> {
        self.whole(pool, self.leaf.encode_refs(values))
    }

    /// The encoded record if it encoded and stays whole on its page (no field off-page).
    fn whole(
        &self,
        pool: &BufferPool,
        rec: Result<RecordBuf, crate::record::RecordError>,
    ) -> Option<RecordBuf> {
        rec.ok()
            .filter(|rec| rec.len() <= self.inline_max(pool.config().page_size.bytes()))
    }

    /// Overwrites the record with the same key as `values` in place, inside the caller's
    /// mini-transaction `mtr`, when the new record has exactly the old one's shape (same
    /// header and data lengths, every field inline, as a dictionary record whose only change
    /// is a fixed-width root page number): so the change commits with whatever else `mtr`
    /// does. Returns false, having changed nothing, when it cannot (another shape, a field
    /// that would go off-page, or a root that stopped being a leaf between the descent's
    /// latches); the caller then does it another way. No record with the key is
    /// [`TreeError::NotFound`].
    pub fn overwrite_in(
        &self,
        pool: &BufferPool,
        mtr: &mut Mtr<'_>,
        values: &[Value],
    ) -> Result<bool, TreeError> {
        let p = self.prepare(pool, values)?;
        if !p.is_inline() || self.zip.is_some() {
            return Ok(false);
        }
        let key = self.leaf.key_of(p.rec.as_bytes(), p.rec.extra())?;
        let Some(h) = self.leaf_for_write(pool, mtr, &key)? else {
            return Ok(false);
        };
        let found = node::search(mtr.page(h), &self.leaf, &key)?;
        if !found.exact {
            return Err(self.not_found(key));
        }
        let origin = found.cursor.origin();
        let (x, d) = self.leaf.size_of(mtr.page(h), origin)?;
        let rec = &p.rec;
        if x != rec.extra()
            || x + d != rec.len()
            || !self.leaf.externals(mtr.page(h), origin)?.is_empty()
        {
            return Ok(false);
        }
        self.cover_rec(mtr, h, rec)?;
        let bytes = rec.as_bytes();
        let head = bytes.get(..x.saturating_sub(5)).unwrap_or_default();
        let data = bytes.get(x..).unwrap_or_default();
        if !head.is_empty() {
            (&mut *mtr, h)
                .write_changed(origin - x, head)
                .map_err(NodeError::from)?;
        }
        (&mut *mtr, h)
            .write_changed(origin, data)
            .map_err(NodeError::from)?;
        Ok(true)
    }

    /// Stamps the clustered record with key `key` in place with `trx_id` and `roll_ptr`
    /// (`DB_TRX_ID`, `DB_ROLL_PTR`) and sets or clears its delete mark as `mark` says
    /// ([`node::stamp_sys`]), in one mini-transaction on one leaf: [`BTree::update_marked`]
    /// for a change that leaves every other field as it is (a delete), without encoding the
    /// record again. Off-page fields stay where they are.
    pub fn stamp_marked(
        &self,
        pool: &BufferPool,
        key: &[Value],
        trx_id: u64,
        roll_ptr: u64,
        mark: Option<bool>,
    ) -> Result<Lsn, TreeError> {
        self.stamp_marked_at(pool, key, trx_id, roll_ptr, mark, None)
    }

    /// [`BTree::stamp_marked`] that first tries the leaf `at` (where a lookup just read the
    /// record, [`LeafRecord::position`]): latched exclusively by its number, used if its LSN
    /// is unchanged (no descent; and the record is where the lookup found it, checked
    /// against the key, so the leaf is not searched either), else let go for the ordinary
    /// descent. The result is the same either way. A delete reads the record, appends its
    /// undo (which may not happen under a leaf latch) and stamps it: with the position, one
    /// descent instead of two.
    pub fn stamp_marked_at(
        &self,
        pool: &BufferPool,
        key: &[Value],
        trx_id: u64,
        roll_ptr: u64,
        mark: Option<bool>,
        at: Option<LeafPos>,
    ) -> Result<Lsn, TreeError> {
        self.in_place(pool, key, at, |p, cursor| {
            node::cover_trx_id(p, &self.leaf, trx_id)?;
            node::stamp_sys(p, &self.leaf, cursor, trx_id, roll_ptr, mark)
        })
    }

    /// Changes the leaf record with key `key` in place with `change` (given the latched leaf
    /// and the record's cursor), in one mini-transaction: no split, no merge, one leaf. The
    /// leaf `at`, if given and unchanged, is taken without a descent.
    fn in_place(
        &self,
        pool: &BufferPool,
        key: &[Value],
        at: Option<LeafPos>,
        change: impl Fn(&mut (&mut Mtr<'_>, PageHandle), Cursor) -> Result<(), NodeError>,
    ) -> Result<Lsn, TreeError> {
        let k = self.key(key)?;
        self.zip_retry(pool, || {
            loop {
                let mut mtr = pool.mtr()?;
                // The remembered leaf, if unchanged and still holding the key's record where
                // the lookup found it (no descent, no search of the leaf).
                let mut hinted = None;
                if let Some(at) = at
                    && let Some(h) = self.latch_at(&mut mtr, at.at)?
                {
                    let ours = matches!(
                        self.leaf.compare(&k, mtr.page(h), at.origin, 0),
                        Ok((std::cmp::Ordering::Equal, _))
                    );
                    match ours {
                        true => hinted = Some((h, Cursor::at(at.origin))),
                        false => mtr.release(h)?,
                    }
                }
                let (h, cursor) = match hinted {
                    Some(found) => found,
                    None => {
                        let Some(h) = self.leaf_for_write(pool, &mut mtr, &k)? else {
                            continue;
                        };
                        let found = node::search(mtr.page(h), &self.leaf, &k)?;
                        if !found.exact {
                            return Err(self.not_found(k.clone()));
                        }
                        (h, found.cursor)
                    }
                };
                change(&mut (&mut mtr, h), cursor)?;
                return Ok(mtr.commit()?);
            }
        })
    }

    /// Sets or clears the delete mark of the record with key `key` (one byte, one page).
    pub fn set_delete_mark(
        &self,
        pool: &BufferPool,
        key: &[Value],
        deleted: bool,
    ) -> Result<Lsn, TreeError> {
        self.set_delete_mark_trx(pool, key, deleted, 0)
    }

    /// [`BTree::set_delete_mark`] on behalf of transaction `trx_id`: the leaf's
    /// `PAGE_MAX_TRX_ID` is raised to `trx_id` in the same mini-transaction (`trx_id` 0
    /// raises nothing).
    pub fn set_delete_mark_trx(
        &self,
        pool: &BufferPool,
        key: &[Value],
        deleted: bool,
        trx_id: u64,
    ) -> Result<Lsn, TreeError> {
        self.in_place(pool, key, None, |p, cursor| {
            node::raise_max_trx_id(p, trx_id)?;
            node::set_delete_mark(p, cursor, deleted)
        })
    }
}
