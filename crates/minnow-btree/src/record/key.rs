//! Search keys: the stored bytes of a key's leading fields, how they compare with records,
//! and how a point lookup reuses one key's buffers instead of allocating per search.
//!
//! A [`SearchKey`] holds one byte string per key field, encoded exactly as the record stores
//! it, so a search compares bytes with bytes ([`RecordLayout::compare`]). Where every key
//! field is fixed-width and NOT NULL the fields sit at fixed offsets from the origin, and
//! [`RecordLayout::flat_key`] turns the key into one byte string (or one integer, up to 8
//! bytes) compared in one pass, eight bytes at a time as big-endian words, which gives the
//! order and the first differing byte (hence the matched fields) together. A single-field key is borrowed, not copied, so a
//! descent that flattens the key on every level allocates nothing for it.
//!
//! [`SearchKey::set`] re-encodes a key into the buffers of an existing one: a point lookup
//! keeps one key per thread and encodes each search into it, so after the first lookup no
//! key costs a heap allocation.

use std::borrow::Cow;
use std::cmp::Ordering;

use minnow_buf::RacyPage;
use minnow_page::bytes;

use super::{RecordError, RecordLayout, Value};

/// Up to 8 bytes as a big-endian integer, left-aligned (the first byte is the most
/// significant), so integer order is `memcmp` order for byte strings of one length.
fn be_word(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    for (d, s) in w.iter_mut().zip(b) {
        *d = *s;
    }
    u64::from_be_bytes(w)
}

/// The order of `a` against `b` and the index of their first differing byte (the shorter
/// length if one is a prefix of the other): `a.cmp(b)` and the position, found in one pass
/// eight bytes at a time. Each 8-byte chunk is read as a big-endian word, so word order is
/// byte order, and the leading zero bits of the two words' XOR count the equal bytes before
/// the first difference; a tail of under 8 bytes is compared as left-aligned words.
#[inline]
pub(crate) fn first_diff(a: &[u8], b: &[u8]) -> (Ordering, usize) {
    let n = a.len().min(b.len());
    let (a8, b8) = (a.get(..n).unwrap_or(&[]), b.get(..n).unwrap_or(&[]));
    let (mut ca, mut cb) = (a8.chunks_exact(8), b8.chunks_exact(8));
    let mut at = 0;
    for (x, y) in ca.by_ref().zip(cb.by_ref()) {
        let x = u64::from_be_bytes(x.try_into().unwrap_or([0; 8]));
        let y = u64::from_be_bytes(y.try_into().unwrap_or([0; 8]));
        if x != y {
            return (x.cmp(&y), at + ((x ^ y).leading_zeros() / 8) as usize);
        }
        at += 8;
    }
    let (x, y) = (be_word(ca.remainder()), be_word(cb.remainder()));
    if x != y {
        return (x.cmp(&y), at + ((x ^ y).leading_zeros() / 8) as usize);
    }
    (a.len().cmp(&b.len()), n)
}

/// A search key made of fixed-width fields, flattened for fast comparison
/// ([`RecordLayout::flat_key`]).
#[derive(Debug, Clone)]
pub struct FlatKey<'l> {
    /// Bytes in the key.
    len: usize,
    /// The key as a left-aligned big-endian word, when it has at most 8 bytes.
    word: Option<u64>,
    /// The key's bytes, when it has more than 8 (else empty): borrowed from a one-field key,
    /// concatenated for a longer one.
    bytes: Cow<'l, [u8]>,
    /// Where each key field ends, relative to the record origin.
    ends: &'l [usize],
}

impl FlatKey<'_> {
    /// Number of key fields.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// The key as a left-aligned big-endian word, if it has at most 8 bytes: two such keys of
    /// one layout and one field count order as their words do (a cheap sort key).
    pub fn word(&self) -> Option<u64> {
        self.word
    }

    /// True for a key with no fields.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Compares the key with the record at `origin` (which must be a record of the layout the
    /// key was made for): the order of the key relative to the record and the number of
    /// leading fields that matched, as [`RecordLayout::compare`].
    #[inline]
    pub fn compare(&self, page: &[u8], origin: usize) -> Result<(Ordering, usize), RecordError> {
        let n = self.len;
        let (ord, diff_at) = match self.word {
            Some(k) => {
                // The key's `n` bytes against the record's first `n`, as left-aligned words;
                // eight bytes are read at once where the page has them.
                let mask = if n == 0 { 0 } else { u64::MAX << (64 - 8 * n) };
                let r = match page.get(origin..origin + 8) {
                    Some(eight) => u64::from_be_bytes(eight.try_into().unwrap_or([0; 8])),
                    None => be_word(bytes::slice(page, origin, n)?),
                } & mask;
                (k.cmp(&r), ((k ^ r).leading_zeros() / 8) as usize)
            }
            None => first_diff(&self.bytes, bytes::slice(page, origin, n)?),
        };
        if ord == Ordering::Equal {
            return Ok((ord, self.ends.len()));
        }
        Ok((ord, self.ends.iter().take_while(|&&e| e <= diff_at).count()))
    }

    /// [`FlatKey::compare`]'s order (not its match count) against the record at `origin` of
    /// a page read without a latch: `None` if the key's bytes would lie outside the page.
    /// The answer is only as good as the caller's version check (`minnow_buf::racy`).
    #[inline]
    pub fn compare_racy(&self, page: &RacyPage<'_>, origin: usize) -> Option<Ordering> {
        let word;
        let key: &[u8] = match self.word {
            Some(w) => {
                word = w.to_be_bytes();
                word.get(..self.len)?
            }
            None => &self.bytes,
        };
        page.compare(origin, key)
    }
}

impl RecordLayout {
    /// Encodes a search key from up to [`RecordLayout::n_key`] leading key values.
    pub fn search_key(&self, values: &[Value]) -> Result<SearchKey, RecordError> {
        let mut key = SearchKey::default();
        key.set(self, values)?;
        Ok(key)
    }

    /// The key of the record at `origin` as a search key.
    pub fn key_of(&self, page: &[u8], origin: usize) -> Result<SearchKey, RecordError> {
        let fields = self
            .walk(page, origin)
            .take(self.n_key())
            .map(|f| f.map(|o| o.map(<[u8]>::to_vec)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SearchKey { fields })
    }

    /// Compares `key` with the record at `origin`, skipping the first `skip` fields (already
    /// known to match). Returns the order of the key relative to the record and the number of
    /// leading fields that matched (InnoDB's `low_match`/`up_match`).
    pub fn compare(
        &self,
        key: &SearchKey,
        page: &[u8],
        origin: usize,
        skip: usize,
    ) -> Result<(Ordering, usize), RecordError> {
        for (i, field) in self.walk(page, origin).take(key.fields.len()).enumerate() {
            let field = field?;
            if i < skip {
                continue;
            }
            let ord = match (key.fields.get(i).and_then(Option::as_deref), field) {
                (None, None) => Ordering::Equal,
                (None, Some(_)) => Ordering::Less,
                (Some(_), None) => Ordering::Greater,
                (Some(a), Some(b)) => a.cmp(b),
            };
            if ord != Ordering::Equal {
                return Ok((ord, i));
            }
        }
        Ok((Ordering::Equal, key.fields.len()))
    }

    /// `key` prepared for fast comparison, if each of its fields is non-NULL and its column
    /// fixed-width and NOT NULL: such fields lie at fixed offsets from the origin, so the key
    /// compares with one pass over its concatenated bytes (one integer comparison for keys of
    /// up to 8 bytes) instead of a walk through the record's extra bytes. A key of one field
    /// is borrowed, not copied.
    pub fn flat_key<'l>(&'l self, key: &'l SearchKey) -> Option<FlatKey<'l>> {
        let ends = self.fixed_key_ends().get(..key.fields.len())?;
        let mut len = 0;
        for (f, &end) in key.fields.iter().zip(ends) {
            len += f.as_deref()?.len();
            if len != end {
                return None;
            }
        }
        let (word, bytes) = match key.fields.as_slice() {
            _ if len <= 8 => {
                let mut w = [0u8; 8];
                let all = key.fields.iter().flatten().flatten();
                for (d, b) in w.iter_mut().zip(all) {
                    *d = *b;
                }
                (Some(u64::from_be_bytes(w)), Cow::Borrowed(&[][..]))
            }
            [Some(one)] => (None, Cow::Borrowed(one.as_slice())),
            more => (
                None,
                Cow::Owned(more.iter().flatten().flatten().copied().collect()),
            ),
        };
        Some(FlatKey {
            len,
            word,
            bytes,
            ends,
        })
    }
}

/// A key to search for: stored bytes of the leading key fields. `Debug` shows each field's
/// bytes as text when they are printable UTF-8, as hex otherwise (`[0x8000000000000007,
/// "ada", NULL]`).
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SearchKey {
    fields: Vec<Option<Vec<u8>>>,
}

impl std::fmt::Debug for SearchKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[")?;
        for (i, field) in self.fields.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            match field {
                None => f.write_str("NULL")?,
                Some(b) => super::value::write_stored(f, b)?,
            }
        }
        f.write_str("]")
    }
}

impl SearchKey {
    /// Number of fields in the key.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// True for a key with no fields (it compares equal to every record).
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The stored bytes of each field (`None` for NULL).
    pub fn fields(&self) -> &[Option<Vec<u8>>] {
        &self.fields
    }

    /// Makes this the search key of `values` (up to [`RecordLayout::n_key`] leading key
    /// values of `layout`), reusing this key's buffers: encoding a key of the same shape
    /// again allocates nothing. On an error the key is left empty.
    pub fn set(&mut self, layout: &RecordLayout, values: &[Value]) -> Result<(), RecordError> {
        let r = self.fill(layout, values);
        if r.is_err() {
            self.fields.clear();
        }
        r
    }

    /// Sets this key to a full key of one byte column (`Fixed`, `Var`, `Blob`, `Text`) given
    /// as its bytes `b`, borrowed, without a [`Value`]: the stored form of such a field is the
    /// bytes themselves, checked as [`SearchKey::set`] checks a [`Value::Bytes`]. Reuses this
    /// key's buffer. [`RecordError::ValueCount`] if the layout's key has more than one field.
    pub fn set_bytes(&mut self, layout: &RecordLayout, b: &[u8]) -> Result<(), RecordError> {
        let r = self.fill_bytes(layout, b);
        if r.is_err() {
            self.fields.clear();
        }
        r
    }

    /// Makes this the search key of fields given as an index stores them (`None` for NULL):
    /// bytes encoded once elsewhere (a row lock key's fields, which a delete searches with
    /// instead of encoding its key again), copied into this key's reused buffers. The bytes
    /// are not checked against a layout: the caller vouches that they are the index's
    /// encoding of a key.
    pub fn set_stored<'a>(&mut self, fields: impl IntoIterator<Item = Option<&'a [u8]>>) {
        let mut n = 0;
        for f in fields {
            if n == self.fields.len() {
                self.fields.push(None);
            }
            if let Some(slot) = self.fields.get_mut(n) {
                *slot = f.map(|b| {
                    let mut buf = slot.take().unwrap_or_default();
                    buf.clear();
                    buf.extend_from_slice(b);
                    buf
                });
            }
            n += 1;
        }
        self.fields.truncate(n);
    }

    fn fill_bytes(&mut self, layout: &RecordLayout, b: &[u8]) -> Result<(), RecordError> {
        let col = match layout.fields().first() {
            Some(&col) if layout.n_key() == 1 => col,
            _ => {
                return Err(RecordError::ValueCount {
                    expected: layout.n_key(),
                    got: 1,
                });
            }
        };
        let b = super::layout::stored_bytes(0, col, b)?;
        self.fields.truncate(1);
        self.fields.resize(1, None);
        if let Some(slot) = self.fields.first_mut() {
            let mut buf = slot.take().unwrap_or_default();
            buf.clear();
            buf.extend_from_slice(b);
            *slot = Some(buf);
        }
        Ok(())
    }

    fn fill(&mut self, layout: &RecordLayout, values: &[Value]) -> Result<(), RecordError> {
        if values.len() > layout.n_key() {
            return Err(RecordError::ValueCount {
                expected: layout.n_key(),
                got: values.len(),
            });
        }
        self.fields.truncate(values.len());
        self.fields.resize(values.len(), None);
        for (i, (v, slot)) in values.iter().zip(&mut self.fields).enumerate() {
            let mut buf = slot.take().unwrap_or_default();
            buf.clear();
            if layout.encode_field_into(i, v, &mut buf)? {
                *slot = Some(buf);
            }
        }
        Ok(())
    }
}
