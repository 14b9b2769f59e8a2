//! Page-level glue between the node layer and the buffer pool: the [`PageMut`] adapter for a
//! page held by a mini-transaction, staging for two-page moves, FIL sibling links, and the
//! checks every page met during a descent must pass.

use minnow_buf::{BufError, Mtr, PageHandle};
use minnow_page::{PageError, PageId, PageType, bytes, fil};

use super::TreeError;
use crate::PageMut;
use crate::node::{self, Cursor};
use crate::record::{RecordBuf, RecordLayout};

/// `FIL_NULL`: no sibling.
pub(crate) const NIL: u32 = fil::FIL_NULL;

fn page_err(e: BufError, page_len: usize) -> PageError {
    match e {
        BufError::OutOfPage {
            offset,
            len,
            page_size,
        } => PageError::OutOfBounds {
            offset,
            len,
            available: page_size,
        },
        _ => PageError::OutOfBounds {
            offset: 0,
            len: 0,
            available: page_len,
        },
    }
}

/// A page held by a mini-transaction, as the node layer's [`PageMut`]: every `write` becomes a
/// redo WRITE record and every `memset` a MEMSET record ([`Mtr::write`], [`Mtr::memset`]). This
/// is the only way the tree changes page bytes: node code is called as
/// `node::insert(&mut (&mut mtr, handle), &layout, &rec)`.
impl PageMut for (&mut Mtr<'_>, PageHandle) {
    fn bytes(&self) -> &[u8] {
        self.0.page(self.1)
    }

    fn write(&mut self, offset: usize, data: &[u8]) -> Result<(), PageError> {
        let n = self.0.page(self.1).len();
        self.0
            .write(self.1, offset, data)
            .map_err(|e| page_err(e, n))
    }

    fn memset(&mut self, offset: usize, len: usize, value: u8) -> Result<(), PageError> {
        let n = self.0.page(self.1).len();
        self.0
            .memset(self.1, offset, len, value)
            .map_err(|e| page_err(e, n))
    }
}

/// One change recorded by [`Staged`].
#[derive(Debug, Clone)]
enum Op {
    Write(usize, Vec<u8>),
    Memset(usize, usize, u8),
}

/// A copy of a held page that records its changes, to be replayed on the mtr afterwards. The
/// node layer's two-page operations ([`node::move_records_to`]) need two `&mut PageMut` at
/// once, which one `&mut Mtr` cannot give; staging both pages and replaying the recorded
/// writes produces exactly the same redo records.
#[derive(Debug)]
pub(crate) struct Staged {
    page: Vec<u8>,
    ops: Vec<Op>,
}

impl Staged {
    pub(crate) fn of(mtr: &Mtr<'_>, h: PageHandle) -> Staged {
        Staged {
            page: mtr.page(h).to_vec(),
            ops: Vec::new(),
        }
    }

    /// Replays the recorded changes on the held page.
    pub(crate) fn apply(self, mtr: &mut Mtr<'_>, h: PageHandle) -> Result<(), TreeError> {
        for op in self.ops {
            match op {
                Op::Write(at, data) => mtr.write(h, at, &data)?,
                Op::Memset(at, len, v) => mtr.memset(h, at, len, v)?,
            }
        }
        Ok(())
    }
}

impl PageMut for Staged {
    fn bytes(&self) -> &[u8] {
        &self.page
    }

    fn write(&mut self, offset: usize, data: &[u8]) -> Result<(), PageError> {
        self.page.write(offset, data)?;
        self.ops.push(Op::Write(offset, data.to_vec()));
        Ok(())
    }

    fn memset(&mut self, offset: usize, len: usize, value: u8) -> Result<(), PageError> {
        self.page.memset(offset, len, value)?;
        self.ops.push(Op::Memset(offset, len, value));
        Ok(())
    }
}

/// Moves the records of `src` from `from` on into `dst` ([`node::move_records_to`]), both
/// pages held by `mtr`. `dst`'s `PAGE_MAX_TRX_ID` is raised to `src`'s, as InnoDB copies it
/// on splits and merges: the records that arrive carry the changes it stands for, so a page
/// never looks older than the changes on it (splits, merges, root raise and root lower all
/// move records through here). On a clustered leaf, where 0 means "unknown", an unknown side
/// makes `dst`'s bound computed from its records instead ([`node::carry_trx_id`]).
pub(crate) fn move_records(
    mtr: &mut Mtr<'_>,
    src: PageHandle,
    dst: PageHandle,
    layout: &RecordLayout,
    from: Cursor,
) -> Result<(), TreeError> {
    let max = node::max_trx_id(mtr.page(src))?;
    let dst_max = node::max_trx_id(mtr.page(dst))?;
    let dst_had_records = node::n_recs(mtr.page(dst))? > 0;
    let mut s = Staged::of(mtr, src);
    let mut d = Staged::of(mtr, dst);
    node::move_records_to(&mut s, &mut d, layout, from)?;
    if layout.trx_id_field().is_some() {
        // A clustered leaf's bound is about its records only, and 0 there means unknown.
        node::carry_trx_id(&mut d, layout, max, dst_max, dst_had_records)?;
    } else {
        node::raise_max_trx_id(&mut d, max)?;
    }
    d.apply(mtr, dst)?;
    s.apply(mtr, src)
}

impl super::BTree {
    /// Keeps the leaf `h`'s `PAGE_MAX_TRX_ID` a bound on its records' writers before `rec` is
    /// put on it (or written over a record there): [`node::cover_trx_id`] with `rec`'s
    /// `DB_TRX_ID`. Nothing on a secondary tree, whose callers raise the field themselves.
    pub(crate) fn cover_rec(
        &self,
        mtr: &mut Mtr<'_>,
        h: PageHandle,
        rec: &RecordBuf,
    ) -> Result<(), TreeError> {
        if let Some(t) = node::record_trx_id(rec.as_bytes(), &self.leaf, rec.extra())? {
            node::cover_trx_id(&mut (&mut *mtr, h), &self.leaf, t)?;
        }
        Ok(())
    }
}

/// The left sibling (`FIL_PAGE_PREV`).
pub(crate) fn prev(page: &[u8]) -> Result<u32, PageError> {
    bytes::read_u32(page, fil::PREV)
}

/// The right sibling (`FIL_PAGE_NEXT`).
pub(crate) fn next(page: &[u8]) -> Result<u32, PageError> {
    bytes::read_u32(page, fil::NEXT)
}

pub(crate) fn set_prev(mtr: &mut Mtr<'_>, h: PageHandle, no: u32) -> Result<(), TreeError> {
    Ok(mtr.write(h, fil::PREV, &no.to_be_bytes())?)
}

pub(crate) fn set_next(mtr: &mut Mtr<'_>, h: PageHandle, no: u32) -> Result<(), TreeError> {
    Ok(mtr.write(h, fil::NEXT, &no.to_be_bytes())?)
}

/// Formats a held page as an empty INDEX page: FIL type INDEX, no siblings, page header,
/// infimum and supremum ([`node::init`]).
pub(crate) fn init_index_page(
    mtr: &mut Mtr<'_>,
    h: PageHandle,
    index_id: u64,
    level: u16,
) -> Result<(), TreeError> {
    mtr.write(h, fil::PAGE_TYPE, &PageType::Index.to_u16().to_be_bytes())?;
    mtr.memset(h, fil::PREV, 8, 0xFF)?;
    node::init(&mut (&mut *mtr, h), index_id, level)?;
    Ok(())
}

/// The child page number stored in the node pointer at `origin` (its last field).
pub(crate) fn child_of(
    node_layout: &RecordLayout,
    page: &[u8],
    origin: usize,
) -> Result<u32, TreeError> {
    let child = node_layout.fields().len().saturating_sub(1);
    if let Some(off) = node_layout.fixed_offset(child) {
        return Ok(minnow_page::bytes::read_u32(page, origin + off)
            .map_err(crate::record::RecordError::from)?);
    }
    let fields = node_layout.fields_of(page, origin)?;
    let raw = fields.last().copied().flatten().unwrap_or_default();
    let b: [u8; 4] = raw.try_into().map_err(|_| {
        TreeError::Node(node::NodeError::Corrupt {
            at: origin,
            what: "node pointer without a 4-byte child page number",
        })
    })?;
    Ok(u32::from_be_bytes(b))
}

/// A node pointer to `child` whose key is the key of the record at `origin` of `page` (a
/// record of `layout`, leaf or node pointer).
pub(crate) fn node_ptr(
    layout: &RecordLayout,
    node_layout: &RecordLayout,
    page: &[u8],
    origin: usize,
    child: u32,
) -> Result<RecordBuf, TreeError> {
    let fields = layout.fields_of(page, origin)?;
    let child = child.to_be_bytes();
    let mut vals: Vec<Option<&[u8]>> = fields.into_iter().take(layout.n_key()).collect();
    vals.push(Some(&child));
    Ok(node_layout.encode_raw(&vals)?)
}

/// Checks that `page` (page `id`) is an INDEX page of `index_id`, at `level` if given, and
/// returns its level.
pub(crate) fn validate(
    page: &[u8],
    id: PageId,
    index_id: u64,
    level: Option<u16>,
) -> Result<u16, TreeError> {
    let corrupt = |what: String| TreeError::Corrupt { page: id, what };
    let ty = fil::page_type(page).map_err(|e| corrupt(e.to_string()))?;
    if ty != PageType::Index {
        return Err(corrupt(format!("page type {}, not INDEX", ty.name())));
    }
    let got = node::index_id(page).map_err(|e| corrupt(e.to_string()))?;
    if got != index_id {
        return Err(corrupt(format!(
            "page belongs to index {got}, not {index_id}"
        )));
    }
    let lvl = node::level(page).map_err(|e| corrupt(e.to_string()))?;
    match level {
        Some(want) if want != lvl => {
            Err(corrupt(format!("page is at level {lvl}, expected {want}")))
        }
        _ => Ok(lvl),
    }
}

/// Bytes a page of `page_len` needs to hold `count` records of `bytes` bytes in all after a
/// reorganization, with room for the directory (conservatively one slot per 8 records plus
/// three) and the new record's slot.
pub(crate) fn fits_records(page_len: usize, bytes: usize, count: usize) -> bool {
    node::SUPREMUM_END + bytes + 2 * (3 + count / 8) + 2 + 8 <= page_len
}

/// The record space of a page: what [`node::fill_factor`] divides by.
pub(crate) fn capacity(page_len: usize) -> usize {
    page_len.saturating_sub(node::SUPREMUM_END + 8 + 4)
}
