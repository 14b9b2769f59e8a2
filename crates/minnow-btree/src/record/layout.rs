//! [`RecordLayout`]: encoding, checked decoding and comparison of records.

use minnow_page::bytes;

use super::types::{self, Date, DateTime};
use super::{
    Column, ColumnType, EXTERN_REF_LEN, HEADER_SIZE, LEN_EXTERN, MAX_VAR_LEN, ROLL_PTR_LEN,
    RecStatus, RecordBuf, RecordError, RecordHeader, TRX_ID_LEN, Value,
};

/// One field of a record as [`RecordLayout::decode_fields`] finds it: a value, or the
/// 20-byte reference of a field stored off-page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Field<'p> {
    /// The value (NULL included).
    Value(Value),
    /// A field stored off-page: its reference, to resolve with the overflow pages.
    External(&'p [u8]),
}

/// The stored fields of one kind of record and which of them form the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordLayout {
    fields: Vec<Column>,
    n_key: usize,
    status: RecStatus,
    n_nullable: usize,
    trx_id_field: Option<usize>,
    /// Where each leading key field ends, relative to the origin, for as long as the key
    /// fields are fixed-width and NOT NULL: such fields sit at fixed offsets, so
    /// [`RecordLayout::compare`] reads them directly instead of walking the extra bytes.
    fixed_key_ends: Vec<usize>,
    /// The same for the leading fixed-width NOT NULL fields of the whole record, key or not:
    /// what [`RecordLayout::walk_after_fixed`] steps over (every field, for a record of
    /// fixed-width NOT NULL columns).
    fixed_ends: Vec<usize>,
}

/// The end offsets of the leading fixed-width, NOT NULL fields among the first `n_key`.
fn fixed_key_ends(fields: &[Column], n_key: usize) -> Vec<usize> {
    let mut end = 0;
    fields
        .iter()
        .take(n_key)
        .map_while(|c| {
            let n = c.ty.fixed_len().filter(|_| !c.nullable)?;
            end += n;
            Some(end)
        })
        .collect()
}

impl RecordLayout {
    fn build(
        fields: Vec<Column>,
        n_key: usize,
        status: RecStatus,
        trx_id_field: Option<usize>,
    ) -> Result<RecordLayout, RecordError> {
        if n_key == 0 || n_key > fields.len() {
            return Err(RecordError::BadLayout("the key needs 1..=fields columns"));
        }
        if fields.len() > 1000 {
            return Err(RecordError::BadLayout("more than 1000 fields"));
        }
        if fields
            .iter()
            .any(|c| !c.ty.is_lob() && c.ty.max_len() > MAX_VAR_LEN)
        {
            return Err(RecordError::BadLayout(
                "a column is longer than 16383 bytes",
            ));
        }
        if fields.iter().take(n_key).any(|c| c.ty.is_lob()) {
            return Err(RecordError::BadLayout(
                "a BLOB or TEXT column cannot be a key",
            ));
        }
        let n_nullable = fields.iter().filter(|c| c.nullable).count();
        Ok(RecordLayout {
            fixed_key_ends: fixed_key_ends(&fields, n_key),
            fixed_ends: fixed_key_ends(&fields, fields.len()),
            fields,
            n_key,
            status,
            n_nullable,
            trx_id_field,
        })
    }

    /// A clustered-index leaf: `key` columns, `DB_TRX_ID`, `DB_ROLL_PTR`, then `rest`.
    pub fn clustered(key: Vec<Column>, rest: Vec<Column>) -> Result<RecordLayout, RecordError> {
        let n_key = key.len();
        let mut fields = key;
        fields.push(Column::new(ColumnType::Fixed(TRX_ID_LEN as u16)));
        fields.push(Column::new(ColumnType::Fixed(ROLL_PTR_LEN as u16)));
        fields.extend(rest);
        RecordLayout::build(fields, n_key, RecStatus::Ordinary, Some(n_key))
    }

    /// A secondary-index leaf: the secondary key columns followed by the primary key columns,
    /// all of them part of the (unique) key.
    pub fn secondary(key: Vec<Column>) -> Result<RecordLayout, RecordError> {
        let n = key.len();
        RecordLayout::build(key, n, RecStatus::Ordinary, None)
    }

    /// The node-pointer layout for the levels above this one: the key columns and the 4-byte
    /// child page number.
    pub fn node_ptr(&self) -> RecordLayout {
        let mut fields: Vec<Column> = self.fields.iter().take(self.n_key).copied().collect();
        fields.push(Column::new(ColumnType::U32));
        RecordLayout {
            n_nullable: fields.iter().filter(|c| c.nullable).count(),
            fixed_key_ends: fixed_key_ends(&fields, self.n_key),
            fixed_ends: fixed_key_ends(&fields, fields.len()),
            fields,
            n_key: self.n_key,
            status: RecStatus::NodePtr,
            trx_id_field: None,
        }
    }

    /// The stored fields, in order.
    pub fn fields(&self) -> &[Column] {
        &self.fields
    }

    /// How many leading fields form the key.
    pub fn n_key(&self) -> usize {
        self.n_key
    }

    /// The status bits of this layout's records.
    pub fn status(&self) -> RecStatus {
        self.status
    }

    /// True for node-pointer records.
    pub fn is_node_ptr(&self) -> bool {
        self.status == RecStatus::NodePtr
    }

    /// Index of the `DB_TRX_ID` field (`DB_ROLL_PTR` follows it), for clustered leaves.
    pub fn trx_id_field(&self) -> Option<usize> {
        self.trx_id_field
    }

    /// True if field `i` may be stored off-page: a variable-length, non-key field of a
    /// clustered leaf (after `DB_TRX_ID` and `DB_ROLL_PTR`).
    pub fn may_be_external(&self, i: usize) -> bool {
        self.trx_id_field.is_some_and(|t| i >= t + 2)
            && self
                .fields
                .get(i)
                .is_some_and(|c| c.ty.fixed_len().is_none())
    }

    fn null_bytes(&self) -> usize {
        self.n_nullable.div_ceil(8)
    }

    /// The longest record of this layout, in bytes (header and extra bytes included): every
    /// field present at its maximum length and stored inline (a variable-length field at
    /// most [`MAX_VAR_LEN`] bytes). A page with room for this many bytes takes any record of
    /// the layout: the B-tree asks it of the node-pointer layout to know whether a page can
    /// take whatever separator a split below it pushes up.
    pub fn max_record_len(&self) -> usize {
        let (lens, data) = self.fields.iter().fold((0, 0), |(lens, data), c| {
            let len = c.ty.max_len().min(MAX_VAR_LEN);
            match c.ty.fixed_len() {
                Some(_) => (lens, data + len),
                None => (lens + if len < 128 { 1 } else { 2 }, data + len),
            }
        });
        HEADER_SIZE + self.null_bytes() + lens + data
    }

    /// Encodes one value for field `i` into its stored bytes (`None` for NULL).
    pub fn encode_field(&self, i: usize, v: &Value) -> Result<Option<Vec<u8>>, RecordError> {
        let col = self.fields.get(i).ok_or(RecordError::ValueCount {
            expected: self.fields.len(),
            got: i + 1,
        })?;
        encode_value(i, *col, v)
    }

    /// Appends the stored bytes of value `v` for field `i` to `out`; false (nothing appended)
    /// for NULL. What [`RecordLayout::encode_field`] returns, without a buffer of its own.
    pub fn encode_field_into(
        &self,
        i: usize,
        v: &Value,
        out: &mut Vec<u8>,
    ) -> Result<bool, RecordError> {
        let col = self.fields.get(i).ok_or(RecordError::ValueCount {
            expected: self.fields.len(),
            got: i + 1,
        })?;
        match encode_stored(i, *col, v)?.as_slice() {
            Some(b) => {
                out.extend_from_slice(b);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Encodes a record from one value per stored field.
    pub fn encode(&self, values: &[Value]) -> Result<RecordBuf, RecordError> {
        self.encode_each(values.len(), values.iter())
    }

    /// [`RecordLayout::encode`] from borrowed values, one per stored field: a caller that
    /// holds a row's values and a few values of its own (a clustered record's system
    /// columns) encodes them without copying the row into a vector of owned values.
    pub fn encode_refs(&self, values: &[&Value]) -> Result<RecordBuf, RecordError> {
        self.encode_each(values.len(), values.iter().copied())
    }

    fn encode_each<'v>(
        &self,
        n: usize,
        values: impl Iterator<Item = &'v Value>,
    ) -> Result<RecordBuf, RecordError> {
        if n != self.fields.len() {
            return Err(RecordError::ValueCount {
                expected: self.fields.len(),
                got: n,
            });
        }
        // Each value's bytes borrowed or inline (no allocation per field), then one record.
        let mut stored = Vec::with_capacity(n);
        for (i, (v, col)) in values.zip(&self.fields).enumerate() {
            stored.push(encode_stored(i, *col, v)?);
        }
        let refs: Vec<Option<&[u8]>> = stored.iter().map(Stored::as_slice).collect();
        self.encode_raw(&refs)
    }

    /// Encodes a record from stored field bytes (`None` for NULL), as returned by
    /// [`RecordLayout::fields_of`].
    pub fn encode_raw(&self, values: &[Option<&[u8]>]) -> Result<RecordBuf, RecordError> {
        self.encode_raw_ext(values, &[])
    }

    /// [`RecordLayout::encode_raw`] where the fields whose `external` flag is set are stored
    /// off-page: their bytes are the 20-byte reference, and their length carries
    /// [`LEN_EXTERN`]. Missing flags are false.
    pub fn encode_raw_ext(
        &self,
        values: &[Option<&[u8]>],
        external: &[bool],
    ) -> Result<RecordBuf, RecordError> {
        if values.len() != self.fields.len() {
            return Err(RecordError::ValueCount {
                expected: self.fields.len(),
                got: values.len(),
            });
        }
        // One buffer, sized up front (a record is encoded for every insert): the lengths
        // are written backwards from the end of their area, the data appended after the
        // header, so that no field's bytes go through a vector of their own.
        let mut n_lens = 0;
        let mut data_len = 0;
        for (i, (col, v)) in self.fields.iter().zip(values).enumerate() {
            let Some(v) = v else { continue };
            data_len += v.len();
            if col.ty.fixed_len().is_none() {
                let ext = external.get(i).copied().unwrap_or(false);
                n_lens += if ext || v.len() >= 128 { 2 } else { 1 };
            }
        }
        let n_nulls = self.null_bytes();
        let extra = n_lens + n_nulls + HEADER_SIZE;
        let mut bytes = Vec::with_capacity(extra + data_len);
        bytes.resize(extra, 0);
        // The next length byte goes just below `lens_at` (reading order is decreasing
        // addresses, from the null bitmap down).
        let mut lens_at = n_lens;
        let mut push_len = |bytes: &mut Vec<u8>, b: u8| {
            lens_at = lens_at.saturating_sub(1);
            if let Some(d) = bytes.get_mut(lens_at) {
                *d = b;
            }
        };
        let mut j = 0;
        for (i, (col, v)) in self.fields.iter().zip(values).enumerate() {
            if col.nullable {
                if v.is_none() {
                    // bit j of the bitmap; bitmap byte 0 is the highest address
                    let at = n_lens + n_nulls - 1 - j / 8;
                    if let Some(b) = bytes.get_mut(at) {
                        *b |= 1 << (j % 8);
                    }
                }
                j += 1;
            }
            let Some(v) = v else {
                if !col.nullable {
                    return Err(RecordError::BadValue {
                        field: i,
                        reason: "NULL in a NOT NULL column",
                    });
                }
                continue;
            };
            match col.ty.fixed_len() {
                Some(n) if v.len() != n => {
                    return Err(RecordError::BadValue {
                        field: i,
                        reason: "wrong length for a fixed-width column",
                    });
                }
                Some(_) => {}
                None if external.get(i).copied().unwrap_or(false) => {
                    if !self.may_be_external(i) || v.len() != EXTERN_REF_LEN {
                        return Err(RecordError::BadValue {
                            field: i,
                            reason: "this field cannot be stored off-page",
                        });
                    }
                    push_len(&mut bytes, 0x80 | LEN_EXTERN);
                    push_len(&mut bytes, EXTERN_REF_LEN as u8);
                }
                None => {
                    if v.len() > col.ty.max_len() {
                        return Err(RecordError::BadValue {
                            field: i,
                            reason: "longer than the column's maximum",
                        });
                    }
                    if v.len() > MAX_VAR_LEN {
                        return Err(RecordError::BadValue {
                            field: i,
                            reason: "longer than 16383 bytes: must be stored off-page",
                        });
                    }
                    if v.len() < 128 {
                        push_len(&mut bytes, v.len() as u8);
                    } else {
                        push_len(&mut bytes, 0x80 | (v.len() >> 8) as u8);
                        push_len(&mut bytes, (v.len() & 0xFF) as u8);
                    }
                }
            }
            bytes.extend_from_slice(v);
        }
        let h = RecordHeader {
            info_bits: 0,
            n_owned: 0,
            heap_no: 0,
            status: self.status,
            next_rel: 0,
        };
        if let Some(d) = bytes.get_mut(n_lens + n_nulls..extra) {
            d.copy_from_slice(&h.to_bytes());
        }
        Ok(RecordBuf { bytes, extra })
    }

    /// Walks the fields of the record at `origin` in `page`.
    pub fn walk<'p>(&'p self, page: &'p [u8], origin: usize) -> FieldWalk<'p> {
        let base = origin.checked_sub(HEADER_SIZE + self.null_bytes());
        FieldWalk {
            layout: self,
            page,
            origin,
            field: 0,
            nullable_seen: 0,
            len_pos: base,
            data_pos: origin,
            external: false,
        }
    }

    /// Where each leading fixed-width NOT NULL field ends, relative to the origin (see
    /// [`RecordLayout::walk_after_fixed`]).
    pub(crate) fn fixed_ends(&self) -> &[usize] {
        &self.fixed_ends
    }

    /// [`RecordLayout::walk`] from the first field after the leading fixed-width NOT NULL
    /// ones ([`RecordLayout::fixed_ends`]), which lie at fixed offsets from the origin and
    /// take no length byte or null bit, so the walk's state after them is known without
    /// reading the record.
    pub(crate) fn walk_after_fixed<'p>(&'p self, page: &'p [u8], origin: usize) -> FieldWalk<'p> {
        let mut w = self.walk(page, origin);
        w.field = self.fixed_ends.len();
        w.data_pos = origin + self.fixed_ends.last().copied().unwrap_or(0);
        w
    }

    /// The off-page fields of the record at `origin`: `(field index, 20-byte reference)`.
    pub fn externals<'p>(
        &'p self,
        page: &'p [u8],
        origin: usize,
    ) -> Result<Vec<(usize, &'p [u8])>, RecordError> {
        let mut out = Vec::new();
        let mut w = self.walk(page, origin);
        let mut i = 0;
        while let Some(f) = w.next() {
            if let (Some(b), true) = (f?, w.is_external()) {
                out.push((i, b));
            }
            i += 1;
        }
        Ok(out)
    }

    /// Decodes the record at `origin`, leaving off-page fields as their references.
    pub fn decode_fields<'p>(
        &'p self,
        page: &'p [u8],
        origin: usize,
    ) -> Result<Vec<Field<'p>>, RecordError> {
        let mut out = Vec::with_capacity(self.fields.len());
        let mut w = self.walk(page, origin);
        let mut i = 0;
        while let Some(f) = w.next() {
            let col = self
                .fields
                .get(i)
                .copied()
                .unwrap_or(Column::new(ColumnType::U8));
            out.push(match f? {
                Some(b) if w.is_external() => Field::External(b),
                Some(b) => Field::Value(decode_value(col.ty, b).map_err(|reason| {
                    RecordError::BadStored {
                        origin,
                        field: i,
                        ty: col.ty,
                        reason,
                    }
                })?),
                None => Field::Value(Value::Null),
            });
            i += 1;
        }
        Ok(out)
    }

    /// The stored bytes of every field of the record at `origin` (`None` for NULL).
    pub fn fields_of<'p>(
        &'p self,
        page: &'p [u8],
        origin: usize,
    ) -> Result<Vec<Option<&'p [u8]>>, RecordError> {
        self.walk(page, origin).collect()
    }

    /// Extra bytes and data bytes of the record at `origin`: the record occupies
    /// `[origin - extra, origin + data)`.
    pub fn size_of(&self, page: &[u8], origin: usize) -> Result<(usize, usize), RecordError> {
        let mut w = self.walk(page, origin);
        for f in w.by_ref() {
            f?;
        }
        let extra = w.extra_size()?;
        Ok((extra, w.data_pos - origin))
    }

    /// Decodes the record at `origin` into typed values; a field stored off-page is
    /// [`RecordError::External`] (the tree resolves those: [`crate::BTree::get`]).
    pub fn decode(&self, page: &[u8], origin: usize) -> Result<Vec<Value>, RecordError> {
        self.decode_fields(page, origin)?
            .into_iter()
            .enumerate()
            .map(|(field, f)| match f {
                Field::Value(v) => Ok(v),
                Field::External(_) => Err(RecordError::External { origin, field }),
            })
            .collect()
    }

    /// Where `DB_TRX_ID` of the record at `origin` starts on the page, `DB_ROLL_PTR` following
    /// it at once: the 13 bytes a stamp in place ([`crate::BTree::stamp_marked`]) rewrites.
    /// `None` for a layout without them (a secondary index or a node pointer); an error if the
    /// record stores them with other lengths than 6 and 7 bytes.
    pub(crate) fn sys_fields_at(
        &self,
        page: &[u8],
        origin: usize,
    ) -> Result<Option<usize>, RecordError> {
        let Some(t) = self.trx_id_field else {
            return Ok(None);
        };
        let mut w = self.walk(page, origin);
        let mut start = None;
        for i in 0..=t + 1 {
            let pos = w.next_pos().unwrap_or(Ok(None))?;
            let want = if i == t { TRX_ID_LEN } else { ROLL_PTR_LEN };
            if i < t {
                continue;
            }
            match pos {
                Some((at, len))
                    if len == want && (i == t || Some(at) == start.map(|s| s + TRX_ID_LEN)) =>
                {
                    start = start.or(Some(at));
                }
                _ => {
                    return Err(RecordError::BadStored {
                        origin,
                        field: i,
                        ty: ColumnType::Fixed(want as u16),
                        reason: "a system column missing, of the wrong length or not in place",
                    });
                }
            }
        }
        Ok(start)
    }

    /// The offset of field `i` from the record origin, if every field before it is a
    /// fixed-width NOT NULL key field (so the offset is the same in every record): for
    /// example the child page number of a node pointer with an integer key.
    pub fn fixed_offset(&self, i: usize) -> Option<usize> {
        match i.checked_sub(1) {
            None => Some(0),
            Some(prev) => self.fixed_key_ends.get(prev).copied(),
        }
    }

    /// Where each leading fixed-width NOT NULL key field ends, relative to the origin: field
    /// `i` of such a prefix is the bytes `origin + ends[i - 1] .. origin + ends[i]` (from the
    /// origin for the first), readable without walking the record's extra bytes. Empty when
    /// the first key field is variable-length or nullable.
    pub fn fixed_key_ends(&self) -> &[usize] {
        &self.fixed_key_ends
    }
}

/// Iterator over the stored fields of one record: `Ok(None)` is NULL. Built by
/// [`RecordLayout::walk`]; after the last field, [`FieldWalk::extra_size`] is known.
#[derive(Debug)]
pub struct FieldWalk<'p> {
    layout: &'p RecordLayout,
    page: &'p [u8],
    origin: usize,
    field: usize,
    nullable_seen: usize,
    /// One past the address of the next length byte (lengths are read downwards); `None` if
    /// the origin is too small to hold the header and null bitmap.
    len_pos: Option<usize>,
    data_pos: usize,
    /// Whether the field returned last is stored off-page.
    external: bool,
}

impl FieldWalk<'_> {
    /// True if the field returned last is stored off-page (its bytes are the reference).
    pub fn is_external(&self) -> bool {
        self.external
    }

    /// Extra bytes of the record (valid once every field has been walked).
    pub fn extra_size(&self) -> Result<usize, RecordError> {
        let pos = self.len_pos.ok_or(RecordError::ExtraUnderflow {
            origin: self.origin,
            extra: self.origin + 1,
        })?;
        Ok(self.origin - pos)
    }

    fn byte_below(&mut self) -> Result<u8, RecordError> {
        let pos = self.len_pos.ok_or(RecordError::ExtraUnderflow {
            origin: self.origin,
            extra: self.origin + 1,
        })?;
        let pos = pos.checked_sub(1).ok_or(RecordError::ExtraUnderflow {
            origin: self.origin,
            extra: self.origin + 1,
        })?;
        let b = bytes::slice(self.page, pos, 1)?;
        self.len_pos = Some(pos);
        Ok(b.first().copied().unwrap_or(0))
    }

    /// The next field's position on the page, checked to lie on it: `(start, len)`, or
    /// `None` for NULL; `None` (no item) after the last field or an error.
    pub(super) fn next_pos(&mut self) -> Option<Result<Option<(usize, usize)>, RecordError>> {
        let col = *self.layout.fields.get(self.field)?;
        let r = self.next_field(col);
        self.field = if r.is_err() {
            usize::MAX // stop after an error
        } else {
            self.field + 1
        };
        Some(r)
    }

    /// Decodes the next field's position: `(start, len)`, or `None` for NULL.
    fn next_field(&mut self, col: Column) -> Result<Option<(usize, usize)>, RecordError> {
        let i = self.field;
        self.external = false;
        if col.nullable {
            let j = self.nullable_seen;
            self.nullable_seen += 1;
            let at = self.origin.checked_sub(HEADER_SIZE + 1 + j / 8).ok_or(
                RecordError::ExtraUnderflow {
                    origin: self.origin,
                    extra: HEADER_SIZE + 1 + j / 8,
                },
            )?;
            let b = bytes::slice(self.page, at, 1)?
                .first()
                .copied()
                .unwrap_or(0);
            if b & (1 << (j % 8)) != 0 {
                return Ok(None);
            }
        }
        let len = match col.ty.fixed_len() {
            Some(n) => n,
            None => {
                let first = self.byte_below()?;
                let len = if first & 0x80 != 0 {
                    let len = (usize::from(first & 0x3F) << 8) | usize::from(self.byte_below()?);
                    if first & LEN_EXTERN != 0 {
                        if !self.layout.may_be_external(i) || len != EXTERN_REF_LEN {
                            return Err(RecordError::External {
                                origin: self.origin,
                                field: i,
                            });
                        }
                        self.external = true;
                    }
                    len
                } else {
                    usize::from(first)
                };
                if len > col.ty.max_len().min(MAX_VAR_LEN) && !self.external {
                    return Err(RecordError::FieldTooLong {
                        origin: self.origin,
                        field: i,
                        len,
                        max: col.ty.max_len(),
                    });
                }
                len
            }
        };
        let start = self.data_pos;
        bytes::slice(self.page, start, len)?;
        self.data_pos += len;
        Ok(Some((start, len)))
    }
}

impl<'p> Iterator for FieldWalk<'p> {
    type Item = Result<Option<&'p [u8]>, RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        let page: &'p [u8] = self.page;
        Some(self.next_pos()?.and_then(|o| match o {
            None => Ok(None),
            Some((start, len)) => Ok(Some(bytes::slice(page, start, len)?)),
        }))
    }
}

/// One value's stored bytes, without a heap allocation: byte values are borrowed from the
/// [`Value`], numbers and dates (at most 8 bytes) are held inline.
#[derive(Debug, Clone, Copy)]
enum Stored<'v> {
    /// SQL NULL: no bytes.
    Null,
    /// The value's own bytes.
    Borrowed(&'v [u8]),
    /// Up to 8 encoded bytes: the first `len` of the array.
    Inline([u8; 8], u8),
}

impl<'v> Stored<'v> {
    fn inline(b: &[u8]) -> Stored<'v> {
        let mut a = [0u8; 8];
        for (d, s) in a.iter_mut().zip(b) {
            *d = *s;
        }
        Stored::Inline(a, b.len().min(8) as u8)
    }

    fn as_slice(&self) -> Option<&[u8]> {
        match self {
            Stored::Null => None,
            Stored::Borrowed(b) => Some(b),
            Stored::Inline(a, n) => a.get(..usize::from(*n)),
        }
    }
}

fn encode_value(i: usize, col: Column, v: &Value) -> Result<Option<Vec<u8>>, RecordError> {
    Ok(encode_stored(i, col, v)?.as_slice().map(<[u8]>::to_vec))
}

fn encode_stored(i: usize, col: Column, v: &Value) -> Result<Stored<'_>, RecordError> {
    let bad = |reason| RecordError::BadValue { field: i, reason };
    let with_field = |e: RecordError| match e {
        RecordError::BadValue { reason, .. } => bad(reason),
        other => other,
    };
    let int = |x: i128| -> Result<Stored<'_>, RecordError> {
        let n = col.ty.fixed_len().unwrap_or(0);
        let bits = 8 * n as u32;
        let (lo, hi) = if col.ty.signed() {
            (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
        } else {
            (0, (1i128 << bits) - 1)
        };
        if x < lo || x > hi {
            return Err(bad("integer out of range for the column"));
        }
        let stored = if col.ty.signed() {
            (x - lo) as u128
        } else {
            x as u128
        };
        let be = stored.to_be_bytes();
        Ok(Stored::inline(be.get(16 - n..).unwrap_or_default()))
    };
    match (v, col.ty) {
        (Value::Null, _) if col.nullable => Ok(Stored::Null),
        (Value::Null, _) => Err(bad("NULL in a NOT NULL column")),
        (Value::Int(x), t) if t.is_int() => int(i128::from(*x)),
        (Value::UInt(x), t) if t.is_int() => int(i128::from(*x)),
        (Value::Double(x), ColumnType::Double) => Ok(Stored::inline(
            &types::encode_double(*x).map_err(with_field)?,
        )),
        (Value::Date(d), ColumnType::Date) => Ok(Stored::inline(&d.encode())),
        (Value::DateTime(d), ColumnType::DateTime) => Ok(Stored::inline(&d.packed().to_be_bytes())),
        (Value::Bytes(b), _) => stored_bytes(i, col, b).map(Stored::Borrowed),
        _ => Err(bad("value kind does not match the column type")),
    }
}

/// The stored form of the bytes `b` as field `i` of column `col`: `b` itself, once checked
/// to suit a byte column (`Fixed`, `Var`, `Blob`, `Text`): its length, and UTF-8 for TEXT.
pub(crate) fn stored_bytes(i: usize, col: Column, b: &[u8]) -> Result<&[u8], RecordError> {
    let bad = |reason| RecordError::BadValue { field: i, reason };
    if !matches!(
        col.ty,
        ColumnType::Fixed(_) | ColumnType::Var(_) | ColumnType::Blob | ColumnType::Text
    ) {
        return Err(bad("value kind does not match the column type"));
    }
    match col.ty.fixed_len() {
        Some(n) if b.len() != n => return Err(bad("wrong length for a fixed column")),
        None if b.len() > col.ty.max_len() => return Err(bad("longer than the maximum")),
        _ => {}
    }
    if col.ty == ColumnType::Text && std::str::from_utf8(b).is_err() {
        return Err(bad("TEXT value is not UTF-8"));
    }
    Ok(b)
}

/// Decodes the stored bytes `b` of a field of type `ty` (on-page bytes, or an off-page
/// field's bytes once fetched).
pub fn decode_value(ty: ColumnType, b: &[u8]) -> Result<Value, &'static str> {
    match ty {
        ColumnType::Fixed(_) | ColumnType::Var(_) | ColumnType::Blob | ColumnType::Text => {
            return Ok(Value::Bytes(b.to_vec()));
        }
        ColumnType::Double => {
            let a: [u8; 8] = b.try_into().map_err(|_| "not 8 bytes")?;
            return Ok(Value::Double(types::decode_double(a)));
        }
        ColumnType::Date => {
            let a: [u8; 3] = b.try_into().map_err(|_| "not 3 bytes")?;
            return Date::decode(a)
                .map(Value::Date)
                .map_err(|_| "not a valid date");
        }
        ColumnType::DateTime => {
            let a: [u8; 8] = b.try_into().map_err(|_| "not 8 bytes")?;
            return DateTime::from_packed(u64::from_be_bytes(a))
                .map(Value::DateTime)
                .map_err(|_| "not a valid date and time");
        }
        _ => {}
    }
    // An integer's stored width is its type's: a shorter or longer field (a torn or foreign
    // record) must not decode as some other number.
    if ty.fixed_len() != Some(b.len()) || b.is_empty() || b.len() > 8 {
        return Err("not the integer type's width");
    }
    let mut x: u64 = 0;
    for &byte in b {
        x = (x << 8) | u64::from(byte);
    }
    if ty.signed() {
        let bits = 8 * b.len() as u32;
        let bias = 1u64 << (bits - 1);
        Ok(Value::Int((i128::from(x) - i128::from(bias)) as i64))
    } else {
        Ok(Value::UInt(x))
    }
}
