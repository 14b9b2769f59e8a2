//! Lock keys: an index id and encoded key bytes, stored inline when short, hashed once.

use std::cell::Cell;
use std::fmt;
use std::hash::{BuildHasherDefault, Hash, Hasher};

use minnow_btree::record::{RecordError, RecordLayout, Value};

thread_local! {
    /// The buffer each thread encodes a key's fields into before the key copies them (inline
    /// when short): reused, so making a row's lock key allocates nothing.
    static FIELDS: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// The field encoding of a key: each field length-prefixed (`1`, u32 length, bytes), NULL as
/// one zero byte.
fn put_field(out: &mut Vec<u8>, field: Option<&[u8]>) {
    match field {
        None => out.push(0),
        Some(f) => {
            out.push(1);
            out.extend_from_slice(&(f.len() as u32).to_be_bytes());
            out.extend_from_slice(f);
        }
    }
}

/// Keys up to this many bytes are kept inline in a [`LockKey`] (no allocation): primary keys of
/// integers, dates and short strings all fit.
const INLINE_KEY: usize = 30;

/// The bytes of a lock key: inline when short, on the heap when long; none for the supremum.
#[derive(Clone)]
enum KeyBytes {
    Inline { len: u8, buf: [u8; INLINE_KEY] },
    Heap(Box<[u8]>),
    Supremum,
}

impl KeyBytes {
    fn as_slice(&self) -> &[u8] {
        match self {
            KeyBytes::Inline { len, buf } => buf.get(..usize::from(*len)).unwrap_or(buf),
            KeyBytes::Heap(b) => b,
            KeyBytes::Supremum => &[],
        }
    }
}

/// What a lock names: an index and a key in it (encoded bytes, as the index compares them), or
/// the index's supremum, which stands for the gap after its last record. Keys of up to 30
/// bytes are stored inline, so making, copying and dropping one allocates nothing.
#[derive(Clone)]
pub struct LockKey {
    index: u64,
    /// The key's hash, computed once: the table is probed with it twice per lock.
    pub(super) hash: u64,
    bytes: KeyBytes,
}

impl LockKey {
    /// The key `key` of index `index`.
    pub fn new(index: u64, key: &[u8]) -> LockKey {
        let bytes = match u8::try_from(key.len()) {
            Ok(len) if key.len() <= INLINE_KEY => {
                let mut buf = [0u8; INLINE_KEY];
                buf.iter_mut().zip(key).for_each(|(d, s)| *d = *s);
                KeyBytes::Inline { len, buf }
            }
            _ => KeyBytes::Heap(key.into()),
        };
        let mut h = FoldHasher::default();
        h.write_u64(index);
        h.write(key);
        LockKey {
            index,
            hash: h.finish(),
            bytes,
        }
    }

    /// The key of index `index` whose fields are `fields`, as the index stores them (`None`
    /// for NULL; what a B-tree search key holds): each field length-prefixed, NULL as one
    /// zero byte. The same bytes as [`LockKey::of_values`] of the values.
    pub fn of_stored(index: u64, fields: &[Option<Vec<u8>>]) -> LockKey {
        LockKey::encoded(index, |out| {
            for f in fields {
                put_field(out, f.as_deref());
            }
            Ok(())
        })
        .unwrap_or_else(|never: std::convert::Infallible| match never {})
    }

    /// The key of index `index` for the leading key values `values` of its record layout
    /// `layout`: each value encoded as the index stores it, then as [`LockKey::of_stored`],
    /// in a buffer the thread reuses (no allocation for a key that fits inline).
    pub fn of_values(
        index: u64,
        layout: &RecordLayout,
        values: &[Value],
    ) -> Result<LockKey, RecordError> {
        LockKey::encoded(index, |out| {
            for (i, v) in values.iter().enumerate() {
                let at = out.len();
                out.push(1);
                out.extend_from_slice(&[0; 4]);
                if layout.encode_field_into(i, v, out)? {
                    let len = (out.len() - at - 5) as u32;
                    if let Some(slot) = out.get_mut(at + 1..at + 5) {
                        slot.copy_from_slice(&len.to_be_bytes());
                    }
                } else {
                    out.truncate(at);
                    out.push(0);
                }
            }
            Ok(())
        })
    }

    /// The key of index `index` whose bytes `fill` appends to this thread's buffer.
    fn encoded<E>(
        index: u64,
        fill: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
    ) -> Result<LockKey, E> {
        let mut buf = FIELDS.try_with(Cell::take).unwrap_or_default();
        buf.clear();
        let key = fill(&mut buf).map(|()| LockKey::new(index, &buf));
        if buf.capacity() <= 4096 {
            let _ = FIELDS.try_with(|c| c.set(buf));
        }
        key
    }

    /// The supremum of index `index`: greater than every key, so its gap is the one after the
    /// last record. Locks on it are gap locks whatever their type (InnoDB's page supremum).
    pub fn supremum(index: u64) -> LockKey {
        let mut h = FoldHasher::default();
        h.write_u64(index);
        h.write_u64(u64::MAX);
        LockKey {
            index,
            hash: h.finish(),
            bytes: KeyBytes::Supremum,
        }
    }

    /// True for an index's [`LockKey::supremum`].
    pub fn is_supremum(&self) -> bool {
        matches!(self.bytes, KeyBytes::Supremum)
    }

    /// The index id.
    pub fn index(&self) -> u64 {
        self.index
    }

    /// The key's encoded bytes (none for the supremum).
    pub fn key(&self) -> &[u8] {
        self.bytes.as_slice()
    }

    /// The key's fields as the index stores them (`None` for NULL), read back from its
    /// bytes: what a writer that made the key from values copies into its undo record
    /// instead of encoding the values again. Ends early at bytes that are not the field
    /// encoding (never for a key made by [`LockKey::of_values`] or [`LockKey::of_stored`]),
    /// so a caller compares the count with what it expects. None for the supremum.
    pub fn stored_fields(&self) -> StoredFields<'_> {
        StoredFields { rest: self.key() }
    }

    /// The hash computed once at construction (what the lock table shards by): callers that
    /// spread their own structures by key (the `minnow-engine` crate's gap latch stripes) use it
    /// instead of hashing the key again.
    pub fn hash_value(&self) -> u64 {
        self.hash
    }
}

/// The fields of a [`LockKey`], from [`LockKey::stored_fields`].
#[derive(Debug, Clone)]
pub struct StoredFields<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for StoredFields<'a> {
    type Item = Option<&'a [u8]>;

    fn next(&mut self) -> Option<Option<&'a [u8]>> {
        let (&flag, after) = self.rest.split_first()?;
        let field = match flag {
            0 => {
                self.rest = after;
                return Some(None);
            }
            1 => after
                .get(..4)
                .and_then(|l| <[u8; 4]>::try_from(l).ok())
                .map(|l| u32::from_be_bytes(l) as usize)
                .and_then(|len| Some((after.get(4..4 + len)?, after.get(4 + len..)?))),
            _ => None,
        };
        match field {
            Some((f, rest)) => {
                self.rest = rest;
                Some(Some(f))
            }
            None => {
                self.rest = &[];
                None
            }
        }
    }
}

impl PartialEq for LockKey {
    fn eq(&self, other: &LockKey) -> bool {
        self.hash == other.hash
            && self.index == other.index
            && self.is_supremum() == other.is_supremum()
            && self.key() == other.key()
    }
}

impl Eq for LockKey {}

impl Hash for LockKey {
    fn hash<H: Hasher>(&self, h: &mut H) {
        h.write_u64(self.hash);
    }
}

impl fmt::Debug for LockKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LockKey({self})")
    }
}

impl fmt::Display for LockKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_supremum() {
            return write!(f, "index {} supremum", self.index);
        }
        write!(f, "index {} key 0x", self.index)?;
        for b in self.key() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// A fast hasher for lock keys (FxHash's multiply-rotate): the keys are short and not chosen
/// by an attacker who could see the hash, so SipHash's protection buys nothing here.
#[derive(Default, Clone, Copy)]
pub(super) struct FoldHasher(u64);

impl Hasher for FoldHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(w));
        }
        for &b in chunks.remainder() {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
}

pub(super) type Fold = BuildHasherDefault<FoldHasher>;

#[cfg(test)]
mod tests {
    use minnow_btree::record::{Column, ColumnType, RecordLayout, Value};

    use super::LockKey;

    #[test]
    fn a_key_of_values_has_the_bytes_of_its_stored_fields() {
        let layout = RecordLayout::secondary(vec![
            Column::nullable(ColumnType::I64),
            Column::new(ColumnType::Var(40)),
            Column::nullable(ColumnType::Var(200)),
        ])
        .unwrap();
        let short = [Value::Int(-7), Value::text("ada"), Value::Null];
        let long = [Value::Null, Value::text("b"), Value::Bytes(vec![5; 100])];
        for values in [&short[..], &long[..], &short[..1]] {
            let stored: Vec<Option<Vec<u8>>> = values
                .iter()
                .enumerate()
                .map(|(i, v)| layout.encode_field(i, v).unwrap())
                .collect();
            let key = LockKey::of_values(3, &layout, values).unwrap();
            assert_eq!(key, LockKey::of_stored(3, &stored));
            assert_eq!(key.index(), 3);
            // And the fields read back from the key are the stored ones.
            let back: Vec<Option<Vec<u8>>> =
                key.stored_fields().map(|f| f.map(<[u8]>::to_vec)).collect();
            assert_eq!(back, stored);
        }
        assert_eq!(LockKey::supremum(3).stored_fields().count(), 0);
        // Bytes that are not the field encoding end the fields, never panic.
        let cut = LockKey::new(3, &[0, 1, 0, 0, 0, 9, 1]);
        assert_eq!(cut.stored_fields().collect::<Vec<_>>(), [None]);
        assert_eq!(LockKey::new(3, &[0, 7, 0]).stored_fields().count(), 1);
        assert_eq!(LockKey::new(3, &[1, 0, 0]).stored_fields().count(), 0);
        // Field by field: marker, big-endian length, bytes; NULL one zero byte.
        let key = LockKey::of_values(3, &layout, &short).unwrap();
        let mut want = vec![1, 0, 0, 0, 8];
        want.extend_from_slice(&layout.encode_field(0, &Value::Int(-7)).unwrap().unwrap());
        want.extend_from_slice(&[1, 0, 0, 0, 3, b'a', b'd', b'a', 0]);
        assert_eq!(key.key(), want.as_slice());
        assert!(LockKey::of_values(3, &layout, &[Value::text("not an int")]).is_err());
    }
}
