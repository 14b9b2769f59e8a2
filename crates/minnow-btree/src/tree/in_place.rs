//! A change of one leaf record in place, in a mini-transaction the caller adds its own pages
//! to: InnoDB's `btr_cur_del_mark_set_clust_rec`, which writes the undo record while the
//! clustered leaf is latched, so that the undo record and the delete mark it describes are
//! one redo group.
//!
//! ```text
//!   change_leaf_record(key, f)
//!     │  the hash's guess, verified on the leaf latched exclusively *in place* in a fresh
//!     │  mtr; else one descent, the leaf latched the same way
//!     ├── no record with the key ─────────────────────────────► None, nothing changed
//!     └── f(mtr, slot): reads the record (slot.record), latches its own pages after the
//!         leaf (an undo append), stamps the record (BTree::stamp_in) ──► mtr committed
//! ```
//!
//! The closure may also change nothing (a record it must not touch): the mtr then commits
//! empty, which writes no redo. An error from the closure drops the mtr, which puts back
//! every byte it changed, the leaf's and the closure's own pages alike.
//!
//! **In place.** The leaf is latched with [`minnow_buf::Mtr::get_write_in_place`]: nothing
//! here moves a record (the closure stamps system columns and the delete mark, and latches
//! its own pages), so the frame's layout counter stays and the adaptive hash index's
//! entries for the leaf stay good (the module docs of [`super::hook`]). A row delete after
//! reads is then one hash probe, not a descent, for every record of a leaf, not only the
//! first one marked.
//!
//! No split and no merge happens here: the record keeps its length. On a compressed tree a
//! page that no longer compresses fails the commit ([`minnow_buf::BufError::CompressionFailure`],
//! everything rolled back); callers there take [`BTree::stamp_marked_at`], whose retry
//! reorganizes or splits the page.

use minnow_buf::{BufferPool, Mtr, PageHandle};
use minnow_redo::Lsn;

use super::get::LeafRecord;
use super::{BTree, TreeError};
use crate::node::{self, Cursor};
use crate::record::{ROLL_PTR_LEN, SearchKey, TRX_ID_LEN, Value};

/// The record a [`BTree::change_leaf_record`] closure is given: where it lies on the leaf
/// the closure's mtr holds exclusively.
#[derive(Debug, Clone, Copy)]
pub struct LeafSlot {
    h: PageHandle,
    cursor: Cursor,
    page_no: u32,
    /// Where the record's `DB_TRX_ID` starts (`DB_ROLL_PTR` follows), found once for both
    /// [`LeafSlot::sys`] and [`BTree::stamp_in`]; `None` for a layout without them.
    sys_at: Option<usize>,
}

/// A record's delete mark and system columns, as [`LeafSlot::sys`] reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SysFields {
    /// True if the record is delete-marked.
    pub deleted: bool,
    /// `DB_TRX_ID`.
    pub trx_id: u64,
    /// `DB_ROLL_PTR`.
    pub roll_ptr: u64,
}

impl LeafSlot {
    /// The record's delete mark, `DB_TRX_ID` and `DB_ROLL_PTR`, read where they lie (the
    /// record is not walked again); `None` for a layout without system columns.
    pub fn sys(&self, tree: &BTree, mtr: &Mtr<'_>) -> Result<Option<SysFields>, TreeError> {
        let Some(at) = self.sys_at else {
            return Ok(None);
        };
        let page = mtr.page(self.h);
        let deleted = node::header_at(page, self.cursor)?.deleted();
        let num = |from: usize, len: usize| {
            page.get(from..from + len)
                .map(|b| b.iter().fold(0u64, |n, &x| n << 8 | u64::from(x)))
                .ok_or_else(|| {
                    tree.corrupt(
                        self.page_no,
                        format!("system columns at {at} past the page"),
                    )
                })
        };
        Ok(Some(SysFields {
            deleted,
            trx_id: num(at, TRX_ID_LEN)?,
            roll_ptr: num(at + TRX_ID_LEN, ROLL_PTR_LEN)?,
        }))
    }

    /// The record, read in place on the latched leaf (off-page fields are fetched from their
    /// overflow pages, latched after the leaf, when asked for).
    pub fn record<'a>(
        &self,
        tree: &'a BTree,
        pool: &'a BufferPool,
        mtr: &'a Mtr<'_>,
    ) -> Result<LeafRecord<'a>, TreeError> {
        LeafRecord::read(
            tree,
            pool,
            mtr.page(self.h),
            self.page_no,
            self.cursor.origin(),
        )
    }
}

impl BTree {
    /// Finds the leaf record with key `key` (a full key) and runs `change` on it in one
    /// mini-transaction that holds the leaf exclusively: the closure reads the record
    /// ([`LeafSlot::record`]), may latch and change pages of its own after the leaf, and
    /// changes the record with [`BTree::stamp_in`]; then the mtr commits. Returns `Ok(None)`
    /// if no record has the key (the closure is not run), the closure's value and the
    /// commit's end LSN otherwise; the closure's own error comes back inside (`Ok(Err(e))`,
    /// the mtr dropped and everything it changed put back). See the module docs.
    pub fn change_leaf_record<R, E>(
        &self,
        pool: &BufferPool,
        key: &[Value],
        change: impl FnOnce(&mut Mtr<'_>, &LeafSlot) -> Result<R, E>,
    ) -> Result<Result<Option<(R, Lsn)>, E>, TreeError> {
        self.with_key(key, |k| self.change_leaf_record_at(pool, k, change))
    }

    /// [`BTree::change_leaf_record`] for a key given as its stored fields (`None` for NULL),
    /// as the index stores them: for a caller that holds the key encoded already (a row lock
    /// key's fields), which it vouches are this index's encoding of a full key
    /// ([`TreeError::BadKey`] for another number of fields).
    pub fn change_leaf_record_stored<'a, R, E>(
        &self,
        pool: &BufferPool,
        key: impl IntoIterator<Item = Option<&'a [u8]>>,
        change: impl FnOnce(&mut Mtr<'_>, &LeafSlot) -> Result<R, E>,
    ) -> Result<Result<Option<(R, Lsn)>, E>, TreeError> {
        self.with_stored_key(key, |k| self.change_leaf_record_at(pool, k, change))
    }

    /// [`BTree::change_leaf_record`] for the search key `k`.
    fn change_leaf_record_at<R, E>(
        &self,
        pool: &BufferPool,
        k: &SearchKey,
        change: impl FnOnce(&mut Mtr<'_>, &LeafSlot) -> Result<R, E>,
    ) -> Result<Result<Option<(R, Lsn)>, E>, TreeError> {
        // The hash's guess first: the leaf latched in place, no descent, no search.
        let mut mtr = pool.mtr()?;
        let (h, cursor) = match self.guessed_leaf_in_place(pool, &mut mtr, k)? {
            Some(at) => at,
            // The guess left nothing latched: the first descent uses the same mtr.
            None => loop {
                // In place too, but for a compressed tree, which keeps the ordinary latch
                // and gets no guess: its commit may fail to recompress and be undone, a
                // path the in-place promise was not checked against.
                let in_place = self.zip.is_none();
                if let Some(h) = self.leaf_for_write_as(pool, &mut mtr, k, in_place)? {
                    let found = node::search(mtr.page(h), &self.leaf, k)?;
                    if !found.exact {
                        return Ok(Ok(None));
                    }
                    break (h, found.cursor);
                }
                // The tree changed under the descent (`None`), which may have left a page
                // latched in this mtr: a fresh one for the next try.
                drop(mtr);
                mtr = pool.mtr()?;
            },
        };
        let slot = LeafSlot {
            h,
            cursor,
            page_no: mtr.page_id(h).map_or(0, |id| id.page_no),
            sys_at: self.leaf.sys_fields_at(mtr.page(h), cursor.origin())?,
        };
        let r = match change(&mut mtr, &slot) {
            Ok(r) => r,
            Err(e) => return Ok(Err(e)),
        };
        Ok(Ok(Some((r, mtr.commit()?))))
    }

    /// Inside a [`BTree::change_leaf_record`] closure: writes `DB_TRX_ID` and `DB_ROLL_PTR`
    /// of the record at `slot` and sets or clears its delete mark (`mark`; `None` keeps it),
    /// raising the leaf's `PAGE_MAX_TRX_ID` to `trx_id`: what [`BTree::stamp_marked`] does in
    /// its own mtr.
    pub fn stamp_in(
        &self,
        mtr: &mut Mtr<'_>,
        slot: &LeafSlot,
        trx_id: u64,
        roll_ptr: u64,
        mark: Option<bool>,
    ) -> Result<(), TreeError> {
        let mut p = (mtr, slot.h);
        node::cover_trx_id(&mut p, &self.leaf, trx_id)?;
        match slot.sys_at {
            Some(at) => node::stamp_sys_at(&mut p, slot.cursor, at, trx_id, roll_ptr, mark)?,
            // No system columns: refused, as `stamp_sys` refuses it.
            None => node::stamp_sys(&mut p, &self.leaf, slot.cursor, trx_id, roll_ptr, mark)?,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use minnow_buf::BufferPool;
    use minnow_page::PageId;

    use super::super::probe::tests::{row, tree};
    use super::super::{BTree, descents};
    use crate::record::Value;

    /// The probe tests' tree of even keys 0, 2, .. 2 * (n - 1), and a page outside it that
    /// stands for the caller's own page (an undo page).
    fn setup(dir: &std::path::Path, n: u64) -> (BufferPool, BTree, PageId) {
        let (pool, tree) = tree(dir, n);
        let mut mtr = pool.mtr().unwrap();
        let h = crate::space::allocate(&mut mtr, 1).unwrap();
        let other = mtr.page_id(h).unwrap();
        mtr.commit().unwrap();
        (pool, tree, other)
    }

    /// One descent; the closure reads the record in place, changes a page of its own after
    /// the leaf and stamps the record, and both reach the pages at one commit; a missing key
    /// runs no closure; a failing closure puts back everything it changed.
    #[test]
    fn a_change_and_the_callers_own_page_commit_together() {
        let dir = tempfile::tempdir().unwrap();
        let (pool, tree, other) = setup(dir.path(), 400);
        let before = descents();
        let done = tree
            .change_leaf_record(&pool, &[Value::UInt(84)], |mtr, slot| {
                let rec = slot.record(&tree, &pool, mtr)?;
                let (deleted, trx) = (rec.deleted(), rec.trx_id()?);
                let h = mtr.get_write(other)?;
                mtr.write(h, 100, b"undo")?;
                tree.stamp_in(mtr, slot, 7, 1 << 50, Some(true))?;
                Ok::<_, super::TreeError>((deleted, trx))
            })
            .unwrap()
            .unwrap();
        assert_eq!(descents() - before, 1);
        let ((deleted, trx), _) = done.expect("key 84 is there");
        assert_eq!((deleted, trx), (false, Some(1)));
        let e = tree.get(&pool, &[Value::UInt(84)]).unwrap().unwrap();
        assert!(e.deleted);
        assert_eq!(e.values.get(1), Some(&Value::trx_id(7)));
        assert_eq!(e.values.get(2), Some(&Value::roll_ptr(1 << 50)));
        assert_eq!(
            pool.get_read(other).unwrap().get(100..104),
            Some(&b"undo"[..])
        );

        let missing = tree
            .change_leaf_record(
                &pool,
                &[Value::UInt(85)],
                |_, _| -> Result<(), super::TreeError> { panic!("no record has key 85") },
            )
            .unwrap()
            .unwrap();
        assert!(missing.is_none());

        let failed = tree
            .change_leaf_record(&pool, &[Value::UInt(86)], |mtr, slot| {
                let h = mtr.get_write(other).unwrap();
                mtr.write(h, 100, b"lost").unwrap();
                tree.stamp_in(mtr, slot, 8, 1 << 51, Some(true)).unwrap();
                Err::<(), _>("refused")
            })
            .unwrap();
        assert_eq!(failed.unwrap_err(), "refused");
        let e = tree.get(&pool, &[Value::UInt(86)]).unwrap().unwrap();
        assert_eq!((e.values, e.deleted), (row(86), false));
        assert_eq!(
            pool.get_read(other).unwrap().get(100..104),
            Some(&b"undo"[..])
        );
        tree.check(&pool).unwrap();
    }

    /// The key given as its stored fields finds the record the values find; a key with
    /// another number of fields is refused before any descent.
    #[test]
    fn a_key_given_as_stored_fields_finds_the_same_record() {
        let dir = tempfile::tempdir().unwrap();
        let (pool, tree, _) = setup(dir.path(), 400);
        let stored = tree.layout().encode_field(0, &Value::UInt(90)).unwrap();
        let at = |slot: &super::LeafSlot| slot.cursor;
        let by_values = tree
            .change_leaf_record(&pool, &[Value::UInt(90)], |_, slot| {
                Ok::<_, super::TreeError>(at(slot))
            })
            .unwrap()
            .unwrap()
            .expect("key 90 is there");
        let by_stored = tree
            .change_leaf_record_stored(&pool, [stored.as_deref()], |_, slot| {
                Ok::<_, super::TreeError>(at(slot))
            })
            .unwrap()
            .unwrap()
            .expect("key 90 is there");
        assert_eq!(by_values.0, by_stored.0);
        let odd = tree.layout().encode_field(0, &Value::UInt(91)).unwrap();
        let none =
            tree.change_leaf_record_stored(&pool, [odd.as_deref()], |_, _| {
                Ok::<_, super::TreeError>(())
            })
            .unwrap()
            .unwrap();
        assert!(none.is_none(), "no record has key 91");
        let before = descents();
        for wrong in [vec![], vec![stored.as_deref(), stored.as_deref()]] {
            let e = tree
                .change_leaf_record_stored(&pool, wrong, |_, _| Ok::<_, super::TreeError>(()))
                .unwrap_err();
            assert!(matches!(e, super::TreeError::BadKey { .. }), "{e:?}");
        }
        assert_eq!(descents(), before);
    }
}
