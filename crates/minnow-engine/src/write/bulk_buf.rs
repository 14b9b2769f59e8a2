//! The bulk insert buffer (the `bulk` module's "The buffer"): a transaction's buffered rows
//! as encoded clustered records in one growing arena, sorted once, at commit or spill.
//!
//! A map of owned records (one tree node, one record and one search key allocation per
//! row) spends most of a 1M-row load on cache misses and malloc: each insert walks a tree
//! of a million nodes in random order. Here a row costs two appends to two byte arenas
//! (its record, and its key in a memcomparable form) and one 48-byte entry:
//!
//! ```text
//!  recs:  [rec 0 .......][rec 1 ......][rec 2 .........] ...   the records, as encoded
//!  keys:  [key 0][key 1][key 2] ...                            their keys, flattened
//!  rows:  {prefix, key, rec, extra, next}  one per row, in arrival order
//!  index: hash(key) -> newest row with that hash               duplicate check
//! ```
//!
//! **Flat keys.** A record's key fields (as [`RecordLayout::walk`] reads them, the bytes a
//! tree compares) are joined so that comparing the joined bytes orders rows as the tree's
//! field-by-field comparison does: each field is a tag (0 NULL, 1 a value) and its bytes; a
//! field that is not the last has each 0 byte written as 0 0xFF and ends with 0 0. The
//! first 8 bytes, big-endian, are kept in the entry as its `prefix`: sorting compares those
//! first and reads the arena only on a tie.
//!
//! **Duplicates** are found at the insert, as the map found them. While rows arrive in
//! ascending key order (a load in key order) each key is only compared with the last one.
//! From the first row out of order on, every key's hash goes into `index`, which maps a
//! hash to the newest row with it; rows with equal hashes are chained through `next`, and a
//! key is a duplicate only if its bytes equal a chained row's key, so hash collisions cost
//! time, never correctness.

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher, RandomState};

use minnow_btree::record::{RecordError, RecordLayout};

/// No row: the end of a hash chain.
const NONE: u32 = u32::MAX;

/// One buffered row: where its key and record lie in the arenas (an entry of the
/// `bulk_sec` module's buffers too).
#[derive(Clone, Copy)]
pub(super) struct Row {
    /// The key's first 8 bytes, big-endian, zero-padded.
    pub(super) prefix: u64,
    pub(super) key_at: usize,
    pub(super) key_len: u32,
    /// The record's start in `recs`, its length and its origin's offset from the start.
    pub(super) rec_at: usize,
    pub(super) rec_len: u32,
    pub(super) extra: u32,
    /// The previous row with the same key hash ([`NONE`] if none).
    pub(super) next: u32,
}

/// A hasher for keys that are already hashes: the map's key passes through (the
/// `bulk_sec` module's unique keys use it too).
#[derive(Default)]
pub(super) struct Passthrough(u64);

impl Hasher for Passthrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// What [`RowBuffer::add`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Added {
    /// Buffered; the bytes it takes in the arenas.
    Row(usize),
    /// Not buffered: a row with the same key is.
    Duplicate,
    /// Not buffered: the buffer counts rows and offsets in 32 bits and has no room left.
    Full,
}

/// Buffered rows of one table, as encoded clustered records (see the module docs).
pub(crate) struct RowBuffer {
    recs: Vec<u8>,
    keys: Vec<u8>,
    rows: Vec<Row>,
    /// Key hash to the newest row with it; empty while `ordered`.
    index: HashMap<u64, u32, BuildHasherDefault<Passthrough>>,
    hasher: RandomState,
    /// True while `rows` is in strictly ascending key order: as the rows came, or since
    /// [`RowBuffer::sort`].
    ordered: bool,
    /// The flat key of the row being added.
    scratch: Vec<u8>,
}

impl RowBuffer {
    /// An empty buffer.
    pub(crate) fn new() -> RowBuffer {
        RowBuffer {
            recs: Vec::new(),
            keys: Vec::new(),
            rows: Vec::new(),
            index: HashMap::default(),
            hasher: RandomState::new(),
            ordered: true,
            scratch: Vec::new(),
        }
    }

    /// Rows buffered.
    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }

    /// True if no row is buffered.
    pub(crate) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Adds the record `bytes` (its origin `extra` bytes in) of `layout`, or says why not
    /// (the buffer then is as it was).
    pub(crate) fn add(
        &mut self,
        layout: &RecordLayout,
        bytes: &[u8],
        extra: usize,
    ) -> Result<Added, RecordError> {
        let mut key = std::mem::take(&mut self.scratch);
        key.clear();
        let r = self.add_with(layout, bytes, extra, &mut key);
        self.scratch = key;
        r
    }

    fn add_with(
        &mut self,
        layout: &RecordLayout,
        bytes: &[u8],
        extra: usize,
        key: &mut Vec<u8>,
    ) -> Result<Added, RecordError> {
        flat_key(layout, bytes, extra, key)?;
        let (Ok(n), Ok(key_len), Ok(rec_len), Ok(extra32)) = (
            u32::try_from(self.rows.len()),
            u32::try_from(key.len()),
            u32::try_from(bytes.len()),
            u32::try_from(extra),
        ) else {
            return Ok(Added::Full);
        };
        if n == NONE {
            return Ok(Added::Full);
        }
        let mut next = NONE;
        let mut hash = 0;
        if self.ordered {
            match self.rows.last().map(|r| self.key(r).cmp(key)) {
                None | Some(std::cmp::Ordering::Less) => {}
                Some(std::cmp::Ordering::Equal) => return Ok(Added::Duplicate),
                Some(std::cmp::Ordering::Greater) => self.start_index(),
            }
        }
        if !self.ordered {
            hash = self.hasher.hash_one(key.as_slice());
            next = self.index.get(&hash).copied().unwrap_or(NONE);
            let mut at = next;
            while let Some(r) = self.rows.get(at as usize) {
                if self.key(r) == key.as_slice() {
                    return Ok(Added::Duplicate);
                }
                at = r.next;
            }
        }
        let row = Row {
            prefix: prefix(key),
            key_at: self.keys.len(),
            key_len,
            rec_at: self.recs.len(),
            rec_len,
            extra: extra32,
            next,
        };
        if !self.ordered {
            self.index.insert(hash, n);
        }
        self.keys.extend_from_slice(key);
        self.recs.extend_from_slice(bytes);
        self.rows.push(row);
        Ok(Added::Row(key.len() + bytes.len()))
    }

    /// Leaves the in-order mode: indexes every row buffered so far (all distinct).
    fn start_index(&mut self) {
        self.ordered = false;
        self.index.reserve(self.rows.len());
        for i in 0..self.rows.len() {
            let Some(r) = self.rows.get(i) else { break };
            let hash = self.hasher.hash_one(self.key(r));
            let prev = self.index.insert(hash, i as u32).unwrap_or(NONE);
            if let Some(r) = self.rows.get_mut(i) {
                r.next = prev;
            }
        }
    }

    /// Takes the row added last back out (a statement that fails after its row was
    /// buffered); nothing if the buffer is empty.
    pub(crate) fn remove_last(&mut self) {
        let Some(r) = self.rows.pop() else { return };
        if !self.ordered {
            let hash = self.hasher.hash_one(self.key(&r));
            if r.next == NONE {
                self.index.remove(&hash);
            } else {
                self.index.insert(hash, r.next);
            }
        }
        self.keys.truncate(r.key_at);
        self.recs.truncate(r.rec_at);
    }

    fn key(&self, r: &Row) -> &[u8] {
        self.keys
            .get(r.key_at..r.key_at + r.key_len as usize)
            .unwrap_or_default()
    }

    /// Sorts the rows by key. The buffer is then in order again: a row added later is
    /// compared with the last one, and the first out of order indexes them all anew.
    pub(crate) fn sort(&mut self) {
        if self.ordered {
            return;
        }
        // Sorted as (prefix, row number) pairs, 16 bytes each, compared as two words; only
        // runs of equal prefixes then compare whole keys.
        let mut order: Vec<(u64, u32)> = (0u32..)
            .zip(&self.rows)
            .map(|(i, r)| (r.prefix, i))
            .collect();
        order.sort_unstable();
        let key = |i: u32| self.rows.get(i as usize).map_or(&[][..], |r| self.key(r));
        for run in order.chunk_by_mut(|a, b| a.0 == b.0) {
            if run.len() > 1 {
                run.sort_unstable_by(|a, b| key(a.1).cmp(key(b.1)));
            }
        }
        let rows = order
            .iter()
            .filter_map(|&(_, i)| self.rows.get(i as usize).copied())
            .collect();
        self.rows = rows;
        self.index = HashMap::default();
        self.ordered = true;
    }

    /// The records (bytes and origin offset) in key order; call [`RowBuffer::sort`] first,
    /// else they come in arrival order.
    pub(crate) fn records(&self) -> impl Iterator<Item = (&[u8], usize)> + '_ {
        self.rows.iter().map(|r| {
            let bytes = self
                .recs
                .get(r.rec_at..r.rec_at + r.rec_len as usize)
                .unwrap_or_default();
            (bytes, r.extra as usize)
        })
    }
}

/// The key's first 8 bytes as a big-endian number, zero-padded.
pub(super) fn prefix(key: &[u8]) -> u64 {
    let mut p = [0u8; 8];
    let n = key.len().min(8);
    if let (Some(d), Some(s)) = (p.get_mut(..n), key.get(..n)) {
        d.copy_from_slice(s);
    }
    u64::from_be_bytes(p)
}

/// Appends to `out` the flat key of the record `bytes` with its origin `extra` bytes in
/// (see the module docs).
pub(super) fn flat_key(
    layout: &RecordLayout,
    bytes: &[u8],
    extra: usize,
    out: &mut Vec<u8>,
) -> Result<(), RecordError> {
    let n = layout.n_key();
    for (i, f) in layout.walk(bytes, extra).take(n).enumerate() {
        match f? {
            None => out.push(0),
            Some(v) if i + 1 == n => {
                out.push(1);
                out.extend_from_slice(v);
            }
            Some(v) => {
                out.push(1);
                for &b in v {
                    out.push(b);
                    if b == 0 {
                        out.push(0xFF);
                    }
                }
                out.extend_from_slice(&[0, 0]);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use minnow_btree::record::{Column, ColumnType, Value};

    fn layout() -> RecordLayout {
        RecordLayout::clustered(
            vec![
                Column::nullable(ColumnType::Var(8)),
                Column::new(ColumnType::Var(8)),
            ],
            vec![Column::new(ColumnType::Var(8))],
        )
        .unwrap()
    }

    fn rec(l: &RecordLayout, a: Option<&[u8]>, b: &[u8]) -> minnow_btree::record::RecordBuf {
        l.encode(&[
            a.map_or(Value::Null, |a| Value::Bytes(a.to_vec())),
            Value::Bytes(b.to_vec()),
            Value::trx_id(1),
            Value::roll_ptr(1 << 55),
            Value::Bytes(b"v".to_vec()),
        ])
        .unwrap()
    }

    fn added_len(a: &Added) -> usize {
        match a {
            Added::Row(n) => *n,
            _ => 0,
        }
    }

    /// The buffer sorts as the tree compares keys (field by field, NULL first) and finds
    /// every duplicate, in order and out of order; fixed cases plus a seeded random run.
    #[test]
    fn orders_as_the_tree_and_finds_duplicates() {
        let l = layout();
        let mut cases: Vec<(Option<Vec<u8>>, Vec<u8>)> = vec![
            (None, b"b".to_vec()),
            (Some(b"a".to_vec()), b"".to_vec()),
            (Some(b"a\0".to_vec()), b"".to_vec()),
            (Some(b"".to_vec()), b"z".to_vec()),
            (Some(b"a".to_vec()), b"\0".to_vec()),
            (Some(b"ab".to_vec()), b"a".to_vec()),
        ];
        let mut s = 7u64;
        for _ in 0..3000 {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let a = (s >> 60 != 0).then(|| vec![(s >> 8) as u8 % 3; (s >> 16) as usize % 3]);
            cases.push((a, vec![(s >> 24) as u8 % 4; (s >> 32) as usize % 3]));
        }
        for ordered_start in [false, true] {
            let mut want = cases.clone();
            want.sort();
            want.dedup();
            let mut input = cases.clone();
            if ordered_start {
                input = want.iter().take(50).cloned().chain(cases.clone()).collect();
            }
            let mut b = RowBuffer::new();
            let mut seen = std::collections::BTreeSet::new();
            for (a, k) in &input {
                let r = rec(&l, a.as_deref(), k);
                let added = b.add(&l, r.as_bytes(), r.extra()).unwrap();
                let new = seen.insert((a.clone(), k.clone()));
                assert_eq!(
                    added,
                    if new {
                        Added::Row(added_len(&added))
                    } else {
                        Added::Duplicate
                    }
                );
            }
            assert_eq!(b.len(), want.len());
            b.sort();
            let got: Vec<(Option<Vec<u8>>, Vec<u8>)> = b
                .records()
                .map(|(bytes, extra)| {
                    let v = l.decode(bytes, extra).unwrap();
                    let a = match &v[0] {
                        Value::Bytes(x) => Some(x.clone()),
                        _ => None,
                    };
                    let Value::Bytes(k) = &v[1] else {
                        panic!("not bytes")
                    };
                    (a, k.clone())
                })
                .collect();
            assert_eq!(got, want);
            // Sorted, the buffer still finds every duplicate (a spill that failed keeps it).
            for (a, k) in cases.iter().rev().take(100) {
                let r = rec(&l, a.as_deref(), k);
                assert_eq!(
                    b.add(&l, r.as_bytes(), r.extra()).unwrap(),
                    Added::Duplicate
                );
            }
            let r = rec(&l, Some(b"new"), b"row");
            assert!(matches!(
                b.add(&l, r.as_bytes(), r.extra()).unwrap(),
                Added::Row(_)
            ));
            assert_eq!(b.len(), want.len() + 1);
        }
    }
}
