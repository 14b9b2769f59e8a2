//! [`RecordView`]: one record read in place, without copying it out of its page.
//!
//! Decoding a whole record ([`RecordLayout::decode`]) allocates a `Vec` for the row and one
//! for every byte column, even when the caller wants two columns of twenty. A point lookup
//! that holds the leaf's latch can do better: walk the record's extra bytes **once** (the
//! header, the null bitmap and the length bytes, read backwards from the origin, as the
//! module docs of [`crate::record`] draw them), note where each field's bytes lie, and hand
//! out slices of the page for the fields the caller asks for.
//!
//! ```text
//!   RecordView::new(layout, page, origin)        one walk of the extra bytes
//!        │
//!        ├── field(i)   -> FieldRef::Null | Inline(&page[..]) | External(&ref)   no copy
//!        ├── value(i)   -> Value                   decoded only when asked for
//!        └── trx_id()   -> u64                     DB_TRX_ID read as a number
//! ```
//!
//! The leading fields that are fixed-width and NOT NULL (a clustered record's integer or
//! `BINARY(n)` key, `DB_TRX_ID`, `DB_ROLL_PTR`, and any such columns after them) take no
//! length byte or null bit and lie at the same offsets in every record: their positions come
//! from the layout with one bounds check, and the walk starts after them. A table of such
//! columns only (redb's benchmark shape: `BINARY(24)` key, `BINARY(150)` value) is viewed
//! without reading its extra bytes beyond the header.
//!
//! The positions of up to [`INLINE_FIELDS`] fields are kept inside the view itself (on the
//! stack), so viewing a record of a table of that many columns allocates nothing; wider
//! records keep them in one `Vec`.
//!
//! Every position is checked against the page while the walk runs: a record whose lengths
//! run past the end of the page, or whose origin leaves no room for its header, is a
//! [`RecordError`] from [`RecordView::new`], never a panic, and a field index past the
//! layout's is [`RecordError::NoField`].

use super::{ColumnType, RecordError, RecordHeader, RecordLayout, TRX_ID_LEN, Value, decode_value};

/// Records with at most this many fields are viewed without a heap allocation.
pub const INLINE_FIELDS: usize = 16;

/// One field of a viewed record, borrowed from the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldRef<'p> {
    /// SQL NULL.
    Null,
    /// The field's stored bytes, on the page (integers in their order-preserving encoding:
    /// [`decode_value`] or [`RecordView::value`] turn them into numbers).
    Inline(&'p [u8]),
    /// A field stored off-page: its 20-byte reference ([`crate::tree::overflow`]).
    External(&'p [u8]),
}

/// Where one field's bytes lie on the page.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Span {
    start: u32,
    len: u32,
    kind: Kind,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Kind {
    #[default]
    Null,
    Inline,
    External,
}

/// The positions of the fields after the fixed prefix: in the view up to [`INLINE_FIELDS`],
/// else on the heap (none at all, and no allocation, when every field is in the prefix).
#[derive(Debug, Clone)]
enum Spans {
    Inline(u16, [Span; INLINE_FIELDS]),
    Heap(Vec<Span>),
}

impl Spans {
    fn as_slice(&self) -> &[Span] {
        match self {
            Spans::Inline(n, a) => a.get(..usize::from(*n)).unwrap_or_default(),
            Spans::Heap(v) => v,
        }
    }
}

/// A record read in place: its header, and where each of its fields lies on the page, found
/// with one walk of its extra bytes. Borrows the page: it lives no longer than the latch the
/// caller holds on it. See the module docs.
#[derive(Debug, Clone)]
pub struct RecordView<'p> {
    layout: &'p RecordLayout,
    page: &'p [u8],
    origin: usize,
    header: RecordHeader,
    extra: usize,
    end: usize,
    /// The fields after the leading fixed-width NOT NULL ones, whose places the layout
    /// knows ([`RecordLayout::fixed_ends`]), checked to lie on the page.
    spans: Spans,
}

impl<'p> RecordView<'p> {
    /// Views the record of `layout` at `origin` of `page`: reads its header and walks its
    /// extra bytes once. Fails with a typed error if the header, a length or a field lies
    /// outside the page, or a length is longer than its column allows.
    pub fn new(
        layout: &'p RecordLayout,
        page: &'p [u8],
        origin: usize,
    ) -> Result<RecordView<'p>, RecordError> {
        let header = RecordHeader::read(page, origin)?;
        // The leading fixed-width NOT NULL fields lie at fixed offsets: one bounds check
        // for all of them, no walk.
        let fixed = layout.fixed_ends();
        let mut end = origin + fixed.last().copied().unwrap_or(0);
        minnow_page::bytes::slice(page, origin, end - origin)?;
        let n = layout.fields().len() - fixed.len();
        let mut spans = if n == 0 {
            Spans::Heap(Vec::new())
        } else if n <= INLINE_FIELDS {
            Spans::Inline(0, [Span::default(); INLINE_FIELDS])
        } else {
            Spans::Heap(Vec::with_capacity(n))
        };
        let mut walk = layout.walk_after_fixed(page, origin);
        while let Some(f) = walk.next_pos() {
            let span = match f? {
                None => Span::default(),
                Some((start, len)) => {
                    end = start + len;
                    Span {
                        start: start as u32,
                        len: len as u32,
                        kind: if walk.is_external() {
                            Kind::External
                        } else {
                            Kind::Inline
                        },
                    }
                }
            };
            match &mut spans {
                Spans::Inline(k, a) => {
                    if let Some(s) = a.get_mut(usize::from(*k)) {
                        *s = span;
                        *k += 1;
                    }
                }
                Spans::Heap(v) => v.push(span),
            }
        }
        let extra = walk.extra_size()?;
        Ok(RecordView {
            layout,
            page,
            origin,
            header,
            extra,
            end,
            spans,
        })
    }

    /// The layout the record was read with.
    pub fn layout(&self) -> &'p RecordLayout {
        self.layout
    }

    /// The record's origin on the page.
    pub fn origin(&self) -> usize {
        self.origin
    }

    /// The record's 5-byte header.
    pub fn header(&self) -> RecordHeader {
        self.header
    }

    /// True if the record is delete-marked.
    pub fn deleted(&self) -> bool {
        self.header.deleted()
    }

    /// Number of fields (the layout's).
    pub fn len(&self) -> usize {
        self.layout.fixed_ends().len() + self.spans.as_slice().len()
    }

    /// True for a record with no fields (no layout has none).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes before the origin (lengths, null bitmap, header) and from the origin to the end
    /// of the last non-NULL field: the record occupies `[origin - extra, origin + data)`.
    pub fn size(&self) -> (usize, usize) {
        (self.extra, self.end - self.origin)
    }

    /// Field `i`, borrowed from the page.
    pub fn field(&self, i: usize) -> Result<FieldRef<'p>, RecordError> {
        let fixed = self.layout.fixed_ends();
        let s =
            match fixed.get(i) {
                Some(&e) => {
                    let from = i
                        .checked_sub(1)
                        .and_then(|p| fixed.get(p))
                        .map_or(0, |&p| p);
                    Span {
                        start: (self.origin + from) as u32,
                        len: (e - from) as u32,
                        kind: Kind::Inline,
                    }
                }
                None => self.spans.as_slice().get(i - fixed.len()).copied().ok_or(
                    RecordError::NoField {
                        field: i,
                        fields: self.len(),
                    },
                )?,
            };
        let b = || minnow_page::bytes::slice(self.page, s.start as usize, s.len as usize);
        Ok(match s.kind {
            Kind::Null => FieldRef::Null,
            Kind::Inline => FieldRef::Inline(b()?),
            Kind::External => FieldRef::External(b()?),
        })
    }

    /// The stored bytes of field `i` (`None` for NULL); [`RecordError::External`] if it is
    /// stored off-page (the tree fetches those).
    pub fn bytes(&self, i: usize) -> Result<Option<&'p [u8]>, RecordError> {
        match self.field(i)? {
            FieldRef::Null => Ok(None),
            FieldRef::Inline(b) => Ok(Some(b)),
            FieldRef::External(_) => Err(RecordError::External {
                origin: self.origin,
                field: i,
            }),
        }
    }

    /// Field `i` decoded with its column's type (NULL as [`Value::Null`]);
    /// [`RecordError::External`] if it is stored off-page.
    pub fn value(&self, i: usize) -> Result<Value, RecordError> {
        let Some(b) = self.bytes(i)? else {
            return Ok(Value::Null);
        };
        let ty = self
            .layout
            .fields()
            .get(i)
            .map_or(ColumnType::Blob, |c| c.ty);
        decode_value(ty, b).map_err(|reason| RecordError::BadStored {
            origin: self.origin,
            field: i,
            ty,
            reason,
        })
    }

    /// `DB_TRX_ID` as a number, read from its 6 bytes in place; `None` for a layout without
    /// one (a secondary index or a node pointer).
    pub fn trx_id(&self) -> Result<Option<u64>, RecordError> {
        self.sys_field(self.layout.trx_id_field())
    }

    /// `DB_ROLL_PTR` as a number; `None` for a layout without one.
    pub fn roll_ptr(&self) -> Result<Option<u64>, RecordError> {
        self.sys_field(self.layout.trx_id_field().map(|t| t + 1))
    }

    fn sys_field(&self, i: Option<usize>) -> Result<Option<u64>, RecordError> {
        let Some(i) = i else { return Ok(None) };
        let b = self.bytes(i)?.unwrap_or_default();
        if b.is_empty() || b.len() > 8 {
            return Err(RecordError::BadStored {
                origin: self.origin,
                field: i,
                ty: ColumnType::Fixed(TRX_ID_LEN as u16),
                reason: "a system column that is not 1 to 8 bytes",
            });
        }
        Ok(Some(
            b.iter().fold(0u64, |x, &byte| (x << 8) | u64::from(byte)),
        ))
    }
}

#[cfg(test)]
mod tests;
