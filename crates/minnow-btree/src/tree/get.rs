//! Point lookups: one key, one descent (or one verified hash guess), one record read in place.
//!
//! A point read is the hottest path of a key-value workload, so it avoids the heap where it
//! can:
//!
//! - **The search key is encoded once, into a buffer the thread keeps.** The key's values
//!   become their stored bytes ([`SearchKey::set`]) in a per-thread [`SearchKey`] whose
//!   buffers survive from one lookup to the next; the descent compares every level against
//!   it (a one-field fixed-width key is borrowed by the flattened comparison, not copied).
//!   A lookup nested inside another on the same thread (a [`BTree::get_with`] closure that
//!   reads again) takes a fresh key instead of the one in use. A key of one byte column
//!   can come as borrowed bytes ([`BTree::get_bytes_with`], [`SearchKey::set_bytes`]): no
//!   [`Value`] is built for it.
//! - **The record is read where it lies.** Under the leaf's shared latch a [`RecordView`]
//!   walks the record's extra bytes once; [`BTree::get_projected`] decodes only the fields
//!   asked for, and [`BTree::get_with`] hands the view to a closure that reads what it
//!   wants as slices of the page, `DB_TRX_ID` as a number.
//!
//! ```text
//!   get_with(key, f) ── KEY (per thread) ◄── key values encoded in place
//!        │
//!        ├── find_exact: hash guess, or descent (shared latch coupling)
//!        │
//!        └── leaf latched ── LeafRecord { RecordView } ── f(&record) ── latch released
//! ```
//!
//! Off-page (BLOB) fields are the exception: their bytes are on overflow pages, read and
//! copied out while the leaf is latched ([`LeafRecord::value`], [`LeafRecord::bytes`]), as
//! every read of such a field does.

use std::borrow::Cow;
use std::cell::Cell;

use minnow_buf::BufferPool;

use super::probe::{LeafPos, PageAt};
use super::{BTree, Entry, TreeError};
use crate::node;
use crate::record::{FieldRef, RecordView, SearchKey, Value};

thread_local! {
    /// The search key each thread's point lookups encode into (see the module docs).
    static KEY: Cell<SearchKey> = Cell::new(SearchKey::default());
}

/// One leaf record found by a point lookup, read in place while its page is shared-latched:
/// what [`BTree::get_with`] gives its closure. Field indexes are those of the leaf layout
/// ([`BTree::layout`]).
#[derive(Debug)]
pub struct LeafRecord<'a> {
    view: RecordView<'a>,
    tree: &'a BTree,
    pool: &'a BufferPool,
    leaf: u32,
    /// The record's origin on the leaf.
    origin: usize,
    /// The leaf's LSN (`None` if its header cannot be read).
    lsn: Option<u64>,
}

impl<'a> LeafRecord<'a> {
    /// The record at `origin` of the latched leaf `page` (page number `leaf`) of `tree`.
    pub(super) fn read(
        tree: &'a BTree,
        pool: &'a BufferPool,
        page: &'a [u8],
        leaf: u32,
        origin: usize,
    ) -> Result<LeafRecord<'a>, TreeError> {
        Ok(LeafRecord {
            view: RecordView::new(&tree.leaf, page, origin)?,
            tree,
            pool,
            leaf,
            origin,
            lsn: minnow_page::fil::page_lsn(page).ok(),
        })
    }

    /// The leaf as it is now (page number and LSN) and the record's place on it, for a change
    /// of this record right after
    /// ([`BTree::stamp_marked_at`]) without a second descent: good while the leaf's LSN
    /// has not moved (see the `probe` module). `None` if the LSN could not be read.
    pub fn position(&self) -> Option<LeafPos> {
        self.lsn.map(|lsn| LeafPos {
            at: PageAt {
                page_no: self.leaf,
                lsn,
            },
            origin: self.origin,
        })
    }

    /// The record's view: its header and fields as slices of the page.
    pub fn view(&self) -> &RecordView<'a> {
        &self.view
    }

    /// True if the record is delete-marked.
    pub fn deleted(&self) -> bool {
        self.view.deleted()
    }

    /// The page number of the leaf the record lies on.
    pub fn page_no(&self) -> u32 {
        self.leaf
    }

    /// `DB_TRX_ID` as a number (`None` for a secondary index).
    pub fn trx_id(&self) -> Result<Option<u64>, TreeError> {
        Ok(self.view.trx_id()?)
    }

    /// Field `i` decoded with its column's type; an off-page field is read from its overflow
    /// pages (allocating), as [`BTree::get`] does.
    pub fn value(&self, i: usize) -> Result<Value, TreeError> {
        match self.view.field(i)? {
            FieldRef::External(r) => self.tree.fetch_external(self.pool, self.leaf, i, r),
            _ => Ok(self.view.value(i)?),
        }
    }

    /// The stored bytes of field `i` (`None` for NULL): borrowed from the page when the field
    /// is on it, read from its overflow pages into an owned buffer when it is off-page.
    /// Integers come in their stored encoding (big-endian, sign bit flipped): use
    /// [`LeafRecord::value`] for numbers.
    pub fn bytes(&self, i: usize) -> Result<Option<Cow<'a, [u8]>>, TreeError> {
        match self.view.field(i)? {
            FieldRef::Null => Ok(None),
            FieldRef::Inline(b) => Ok(Some(Cow::Borrowed(b))),
            FieldRef::External(r) => match self.tree.fetch_external(self.pool, self.leaf, i, r)? {
                Value::Bytes(b) => Ok(Some(Cow::Owned(b))),
                _ => Err(self.tree.corrupt(
                    self.leaf,
                    format!("off-page field {i} is not a byte column"),
                )),
            },
        }
    }
}

impl BTree {
    /// Runs `f` with the full key `key` encoded into this thread's reusable search key
    /// ([`TreeError::BadKey`] for a wrong number of values).
    pub(super) fn with_key<R>(
        &self,
        key: &[Value],
        f: impl FnOnce(&SearchKey) -> Result<R, TreeError>,
    ) -> Result<R, TreeError> {
        self.with_key_of(key.len(), |k| k.set(&self.leaf, key), f)
    }

    /// Runs `f` with the full key whose stored fields are `fields` (see
    /// [`SearchKey::set_stored`]) in this thread's reusable search key
    /// ([`TreeError::BadKey`] for a wrong number of fields).
    pub(super) fn with_stored_key<'a, R>(
        &self,
        fields: impl IntoIterator<Item = Option<&'a [u8]>>,
        f: impl FnOnce(&SearchKey) -> Result<R, TreeError>,
    ) -> Result<R, TreeError> {
        let fill = |k: &mut SearchKey| {
            k.set_stored(fields);
            match k.len() == self.leaf.n_key() {
                true => Ok(()),
                false => Err(self.bad_key(k.len())),
            }
        };
        self.with_thread_key(fill, f)
    }

    /// Runs `f` with the search key that `fill` encodes (a full key of `n` fields) into this
    /// thread's reusable search key ([`TreeError::BadKey`] for another number of fields).
    fn with_key_of<R>(
        &self,
        n: usize,
        fill: impl FnOnce(&mut SearchKey) -> Result<(), crate::record::RecordError>,
        f: impl FnOnce(&SearchKey) -> Result<R, TreeError>,
    ) -> Result<R, TreeError> {
        if n != self.leaf.n_key() {
            return Err(self.bad_key(n));
        }
        self.with_thread_key(|k| fill(k).map_err(TreeError::from), f)
    }

    /// Runs `f` with this thread's reusable search key once `fill` made it the key wanted.
    fn with_thread_key<R>(
        &self,
        fill: impl FnOnce(&mut SearchKey) -> Result<(), TreeError>,
        f: impl FnOnce(&SearchKey) -> Result<R, TreeError>,
    ) -> Result<R, TreeError> {
        // Taken out while in use: a nested lookup finds an empty key and allocates its own.
        let mut k = KEY.try_with(Cell::take).unwrap_or_default();
        let r = fill(&mut k).and_then(|()| f(&k));
        let _ = KEY.try_with(|c| c.set(k));
        r
    }

    /// A key of `got` fields where this tree's full key has another number.
    fn bad_key(&self, got: usize) -> TreeError {
        TreeError::BadKey {
            index_id: self.index_id,
            need: self.leaf.n_key(),
            got,
        }
    }

    /// The record with key `key` (a full key), read in place: `f` gets it while its leaf is
    /// shared-latched and returns what it wants from it; `None` if there is no record with
    /// that key (a delete-marked record is found: see [`LeafRecord::deleted`]).
    ///
    /// `f` cannot keep the record (the borrow ends with the call), and it runs under the
    /// leaf's latch: it must be short and must not latch pages, wait for locks, or do
    /// anything else that could wait for a thread that needs this leaf (a writer of it).
    /// Reading off-page fields ([`LeafRecord::value`]) is allowed: overflow pages come
    /// after the leaf in the latch order.
    pub fn get_with<R>(
        &self,
        pool: &BufferPool,
        key: &[Value],
        f: impl FnOnce(&LeafRecord<'_>) -> R,
    ) -> Result<Option<R>, TreeError> {
        self.with_key(key, |k| self.read_exact(pool, k, f))
    }

    /// [`BTree::get_with`] for an index whose key is one byte column (`Fixed`, `Var`, `Blob`,
    /// `Text`), the key given as its bytes, borrowed: no [`Value`] is built for it, and the
    /// bytes are copied once, into this thread's reusable search key. The bytes are checked
    /// as a [`Value::Bytes`] key's are ([`TreeError::BadKey`] for an index whose key has
    /// more than one field, [`TreeError::Record`] for bytes the column cannot hold).
    pub fn get_bytes_with<R>(
        &self,
        pool: &BufferPool,
        key: &[u8],
        f: impl FnOnce(&LeafRecord<'_>) -> R,
    ) -> Result<Option<R>, TreeError> {
        self.with_key_of(
            1,
            |k| k.set_bytes(&self.leaf, key),
            |k| self.read_exact(pool, k, f),
        )
    }

    /// The record whose key equals the full search key `k`, handed to `f` in place.
    fn read_exact<R>(
        &self,
        pool: &BufferPool,
        k: &SearchKey,
        f: impl FnOnce(&LeafRecord<'_>) -> R,
    ) -> Result<Option<R>, TreeError> {
        let Some((g, cursor)) = self.find_exact(pool, k)? else {
            return Ok(None);
        };
        let rec = LeafRecord::read(self, pool, &g, g.page_id().page_no, cursor.origin())?;
        Ok(Some(f(&rec)))
    }

    /// The record with key `key`, delete-marked or not, off-page fields fetched.
    pub fn get(&self, pool: &BufferPool, key: &[Value]) -> Result<Option<Entry>, TreeError> {
        self.with_key(key, |k| self.get_key(pool, k, None))
    }

    /// The stored fields `fields` (indexes into the leaf layout, in the order wanted; the
    /// same field may appear twice) of the record with key `key`, off-page ones fetched, and
    /// whether it is delete-marked; `None` if there is no such record. Only the requested
    /// fields are decoded: a table's row read skips `DB_TRX_ID` and `DB_ROLL_PTR` and comes
    /// back in column order without a second copy.
    pub fn get_projected(
        &self,
        pool: &BufferPool,
        key: &[Value],
        fields: &[usize],
    ) -> Result<Option<(Vec<Value>, bool)>, TreeError> {
        let found = self.get_with(pool, key, |rec| {
            let out = fields
                .iter()
                .map(|&i| rec.value(i))
                .collect::<Result<Vec<_>, _>>()?;
            Ok::<_, TreeError>((out, rec.deleted()))
        })?;
        found.transpose()
    }

    /// [`BTree::get`] fetching only the off-page fields in `fetch` (indexes of stored
    /// fields of the leaf layout); other off-page fields come back as [`Value::Null`].
    /// Fields stored on the page always come back.
    pub fn get_fields(
        &self,
        pool: &BufferPool,
        key: &[Value],
        fetch: &[usize],
    ) -> Result<Option<Entry>, TreeError> {
        self.with_key(key, |k| self.get_key(pool, k, Some(fetch)))
    }

    /// The record with the full search key `k`, decoded ([`BTree::decode_leaf`]).
    pub(crate) fn get_key(
        &self,
        pool: &BufferPool,
        k: &SearchKey,
        fetch: Option<&[usize]>,
    ) -> Result<Option<Entry>, TreeError> {
        let Some((g, cursor)) = self.find_exact(pool, k)? else {
            return Ok(None);
        };
        Ok(Some(Entry {
            values: self.decode_leaf(pool, &g, cursor.origin(), fetch)?,
            deleted: node::header_at(&g, cursor)?.deleted(),
            page_max_trx_id: node::max_trx_id(&g)?,
        }))
    }
}
