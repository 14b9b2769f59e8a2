//! Lock keys: an index id and encoded key bytes, stored inline when short, hashed once.

use std::fmt;
use std::hash::{BuildHasherDefault, Hash, Hasher};

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

    /// The hash computed once at construction (what the lock table shards by): callers that
    /// spread their own structures by key (the `minnow` crate's gap latch stripes) use it
    /// instead of hashing the key again.
    pub fn hash_value(&self) -> u64 {
        self.hash
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
