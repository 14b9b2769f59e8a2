//! The bulk insert buffer (the `bulk` module's "The buffer"): a transaction's buffered rows
//! as encoded clustered records in an append-only arena, sorted once, at commit or spill.
//!
//! A map of owned records (one tree node, one record and one search key allocation per
//! row) spends most of a 1M-row load on cache misses and malloc: each insert walks a tree
//! of a million nodes in random order. Here a row costs two appends to two byte arenas
//! (its record, and its key in a memcomparable form; each arena a few chunks of memory
//! that ask for huge pages, see [`Arena`]) and one 40-byte entry:
//!
//! ```text
//!  recs:  [rec 0 .......][rec 1 ......][rec 2 .........] ...   the records, as encoded
//!  keys:  [key 0][key 1][key 2] ...                            their keys, flattened
//!  rows:  {prefix, key, rec, extra}  one per row, in arrival order
//!  index: [tag | row] slots, open addressing on hash(key)     duplicate check
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
//! From the first row out of order on, every row goes into `index`, a table of 8-byte slots
//! (open addressing, linear probing, at most half full): a slot holds a row number and the
//! high 32 bits of its key's hash, the **tag**, whose bits also choose the slot. A new key
//! probes from its slot until an empty one, where it goes: one random cache line for most
//! rows, where a general hash map touches its control bytes and then its bucket. A key is a
//! duplicate only if its bytes equal those of a probed row with the same tag, so hash
//! collisions cost time, never correctness, and growing the table needs no key: each slot's
//! tag says where it goes.
//!
//! **Reading them back in key order** visits the records at random: [`RowBuffer::records`]
//! asks for the record a few rows ahead while the caller builds pages from this one.

use std::hash::{BuildHasher, RandomState};

use minnow_btree::record::{RecordError, RecordLayout};

/// The row count the buffer stops at (row numbers and their slots are 32-bit).
const MAX_ROWS: u32 = u32::MAX - 1;

/// How many rows ahead [`RowBuffer::records`] prefetches a record: enough for a memory
/// access (~100 ns) to finish while the bulk builder adds the records in between.
const PREFETCH_AHEAD: usize = 8;

/// One buffered row: where its key and record lie in the arenas.
#[derive(Clone, Copy)]
struct Row {
    /// The key's first 8 bytes, big-endian, zero-padded.
    prefix: u64,
    key_at: u64,
    key_len: u32,
    /// The record's start in `recs`, its length and its origin's offset from the start.
    rec_at: u64,
    rec_len: u32,
    extra: u32,
}

/// The first chunk of an [`Arena`]; each next one is twice the last, up to [`MAX_CHUNK`].
const FIRST_CHUNK: usize = 64 << 10;

/// The largest chunk of an [`Arena`].
const MAX_CHUNK: usize = 32 << 20;

/// The size from which a chunk asks for transparent huge pages (x86-64's 2 MiB).
const HUGE_CHUNK: usize = 2 << 20;

/// An append-only byte arena (the records, the flat keys) in chunks of anonymous memory;
/// a position is `chunk << 32 | offset`, and no entry straddles two chunks.
///
/// The chunks of 2 MiB and more ask the kernel for transparent huge pages, as the buffer
/// pool's frames do: a 1M-row load's records take some 190 MiB, read back at commit in key
/// order, that is at random; with 4 KiB pages nearly every record costs a TLB miss and a
/// page-table walk on top of its cache miss, and filling the arena one page fault per
/// 4 KiB. The first chunks are small, so a transaction that buffers a few rows maps and
/// touches little.
#[derive(Default)]
struct Arena {
    chunks: Vec<Chunk>,
}

struct Chunk {
    map: memmap2::MmapMut,
    len: usize,
}

impl Arena {
    /// Appends `bytes`; their position, or `None` if no memory could be mapped for them.
    fn push(&mut self, bytes: &[u8]) -> Option<u64> {
        let fits = |c: &Chunk| c.map.len() - c.len >= bytes.len();
        if !self.chunks.last().is_some_and(fits) {
            let next = self
                .chunks
                .last()
                .map_or(FIRST_CHUNK, |c| (c.map.len() * 2).min(MAX_CHUNK))
                .max(bytes.len());
            let map = memmap2::MmapMut::map_anon(next).ok()?;
            #[cfg(target_os = "linux")]
            if next >= HUGE_CHUNK {
                // Only advice: where the kernel has no huge pages, the map stays as it is.
                let _ = map.advise(memmap2::Advice::HugePage);
            }
            self.chunks.push(Chunk { map, len: 0 });
        }
        let n = self.chunks.len() - 1;
        let c = self.chunks.last_mut()?;
        let at = c.len;
        c.map.get_mut(at..at + bytes.len())?.copy_from_slice(bytes);
        c.len += bytes.len();
        Some((n as u64) << 32 | at as u64)
    }

    /// Drops everything from position `at` on (a position [`Arena::push`] returned): the
    /// arena is as it was before that push, but for a chunk mapped for it, which stays empty.
    fn truncate(&mut self, at: u64) {
        let (chunk, off) = ((at >> 32) as usize, (at & u64::from(u32::MAX)) as usize);
        self.chunks.truncate(chunk + 1);
        if let Some(c) = self.chunks.get_mut(chunk) {
            c.len = c.len.min(off);
        }
    }

    /// The `len` bytes at position `at` (empty if there are none).
    fn get(&self, at: u64, len: u32) -> &[u8] {
        let off = (at & u64::from(u32::MAX)) as usize;
        self.chunks
            .get((at >> 32) as usize)
            .and_then(|c| c.map.get(off..off + len as usize))
            .unwrap_or_default()
    }
}

/// The duplicate check's table (see the module docs): slots of `tag << 32 | row + 1`, 0 for
/// an empty one, a power of two of them.
#[derive(Default)]
struct KeyIndex {
    slots: Vec<u64>,
    len: usize,
}

/// What [`KeyIndex::probe`] found.
enum Probe {
    /// A row whose key the caller said is the one probed for.
    Found,
    /// No such row; the empty slot where it goes.
    Vacant(usize),
}

impl KeyIndex {
    /// The tag of a key's 64-bit hash.
    fn tag(hash: u64) -> u32 {
        (hash >> 32) as u32
    }

    /// Looks for a row with `tag` for which `same` holds, from the tag's home slot on.
    fn probe(&self, tag: u32, mut same: impl FnMut(u32) -> bool) -> Probe {
        let mask = self.slots.len().wrapping_sub(1);
        let mut at = tag as usize & mask;
        while let Some(&slot) = self.slots.get(at) {
            if slot == 0 {
                return Probe::Vacant(at);
            }
            if (slot >> 32) as u32 == tag && same((slot as u32).wrapping_sub(1)) {
                return Probe::Found;
            }
            at = (at + 1) & mask;
        }
        // Only an empty table has no slot at all.
        Probe::Vacant(usize::MAX)
    }

    /// Puts `row` (with `tag`) into the empty slot `at` that [`KeyIndex::probe`] gave,
    /// growing the table first if that leaves it over half full.
    fn insert(&mut self, at: usize, tag: u32, row: u32) {
        let slot = u64::from(tag) << 32 | u64::from(row + 1);
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
            self.put(slot);
        } else if let Some(s) = self.slots.get_mut(at) {
            *s = slot;
            self.len += 1;
        }
    }

    /// Adds `slot` at the first empty slot from its tag's home (no key is compared).
    fn put(&mut self, slot: u64) {
        if let Probe::Vacant(at) = self.probe((slot >> 32) as u32, |_| false)
            && let Some(s) = self.slots.get_mut(at)
        {
            *s = slot;
            self.len += 1;
        }
    }

    /// Takes row `row` (with `tag`) out, if it is there: its slot is emptied and the slots
    /// after it, up to the next empty one, are put again, so that no probe stops early.
    fn remove(&mut self, tag: u32, row: u32) {
        let want = u64::from(tag) << 32 | u64::from(row + 1);
        let mask = self.slots.len().wrapping_sub(1);
        let mut at = tag as usize & mask;
        while let Some(&slot) = self.slots.get(at) {
            if slot == 0 {
                return;
            }
            if slot == want {
                break;
            }
            at = (at + 1) & mask;
        }
        let Some(s) = self.slots.get_mut(at) else {
            return;
        };
        *s = 0;
        self.len -= 1;
        let mut next = (at + 1) & mask;
        while let Some(&slot) = self.slots.get(next) {
            if slot == 0 {
                break;
            }
            if let Some(s) = self.slots.get_mut(next) {
                *s = 0;
            }
            self.len -= 1;
            self.put(slot);
            next = (next + 1) & mask;
        }
    }

    /// Doubles the table (16 slots at first), each slot moved to its place in the new one.
    fn grow(&mut self) {
        let n = (self.slots.len() * 2).max(16);
        let old = std::mem::replace(&mut self.slots, vec![0; n]);
        self.len = 0;
        for slot in old.into_iter().filter(|&s| s != 0) {
            self.put(slot);
        }
    }

    /// Room for `rows` rows without growing.
    fn reserve(&mut self, rows: usize) {
        while (self.len + rows) * 2 > self.slots.len() {
            self.grow();
        }
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
    recs: Arena,
    keys: Arena,
    rows: Vec<Row>,
    /// The rows by key hash; empty while `ordered`.
    index: KeyIndex,
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
            recs: Arena::default(),
            keys: Arena::default(),
            rows: Vec::new(),
            index: KeyIndex::default(),
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
        if n >= MAX_ROWS {
            return Ok(Added::Full);
        }
        let mut vacant = None;
        if self.ordered {
            match self.rows.last().map(|r| self.key(r).cmp(key)) {
                None | Some(std::cmp::Ordering::Less) => {}
                Some(std::cmp::Ordering::Equal) => return Ok(Added::Duplicate),
                Some(std::cmp::Ordering::Greater) => self.start_index(),
            }
        }
        if !self.ordered {
            let tag = KeyIndex::tag(self.hasher.hash_one(key.as_slice()));
            let found = self.index.probe(tag, |i| {
                self.rows
                    .get(i as usize)
                    .is_some_and(|r| self.key(r) == key.as_slice())
            });
            match found {
                Probe::Found => return Ok(Added::Duplicate),
                Probe::Vacant(at) => vacant = Some((at, tag)),
            }
        }
        // Out of memory for the arenas: full (a key already appended is left unused).
        let (Some(key_at), Some(rec_at)) = (self.keys.push(key), self.recs.push(bytes)) else {
            return Ok(Added::Full);
        };
        let row = Row {
            prefix: prefix(key),
            key_at,
            key_len,
            rec_at,
            rec_len,
            extra: extra32,
        };
        if let Some((at, tag)) = vacant {
            self.index.insert(at, tag, n);
        }
        self.rows.push(row);
        Ok(Added::Row(key.len() + bytes.len()))
    }

    /// Leaves the in-order mode: indexes every row buffered so far (all distinct).
    fn start_index(&mut self) {
        self.ordered = false;
        self.index.reserve(self.rows.len() + 1);
        for (i, r) in (0u32..).zip(&self.rows) {
            let tag = KeyIndex::tag(self.hasher.hash_one(self.key(r)));
            self.index.put(u64::from(tag) << 32 | u64::from(i + 1));
        }
    }

    /// Takes the row added last back out (a statement that fails after its row was
    /// buffered); nothing if the buffer is empty.
    pub(crate) fn remove_last(&mut self) {
        let Some(r) = self.rows.last().copied() else {
            return;
        };
        if !self.ordered {
            let tag = KeyIndex::tag(self.hasher.hash_one(self.key(&r)));
            let row = u32::try_from(self.rows.len() - 1).unwrap_or(u32::MAX);
            self.index.remove(tag, row);
        }
        self.rows.pop();
        self.keys.truncate(r.key_at);
        self.recs.truncate(r.rec_at);
    }

    fn key(&self, r: &Row) -> &[u8] {
        self.keys.get(r.key_at, r.key_len)
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
        self.index = KeyIndex::default();
        self.ordered = true;
    }

    /// The records (bytes and origin offset) in key order; call [`RowBuffer::sort`] first,
    /// else they come in arrival order.
    ///
    /// Sorted, the records lie in the arena in arrival order, so each is a cache miss: the
    /// record [`PREFETCH_AHEAD`] rows on is asked for while the caller works on this one.
    pub(crate) fn records(&self) -> impl Iterator<Item = (&[u8], usize)> + '_ {
        self.rows.iter().enumerate().map(|(i, r)| {
            if let Some(ahead) = self.rows.get(i + PREFETCH_AHEAD) {
                minnow_buf::prefetch_bytes(self.rec(ahead));
            }
            (self.rec(r), r.extra as usize)
        })
    }

    fn rec(&self, r: &Row) -> &[u8] {
        self.recs.get(r.rec_at, r.rec_len)
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

    /// The duplicate check's table finds every row among colliding tags (one tag for all,
    /// a few tags that share a home slot) through its growths, and never a row the caller
    /// says is another key.
    #[test]
    fn key_index_probes_past_equal_tags() {
        let mut ix = KeyIndex::default();
        let tag = |i: u32| {
            if i.is_multiple_of(3) {
                7
            } else {
                7 + (i % 5) * (1 << 20)
            }
        };
        for i in 0..500u32 {
            match ix.probe(tag(i), |r| r == i) {
                Probe::Vacant(at) => ix.insert(at, tag(i), i),
                Probe::Found => panic!("row {i} found before it was added"),
            }
            assert!(ix.slots.len() >= 2 * ix.len);
        }
        assert_eq!(ix.len, 500);
        for i in 0..500u32 {
            assert!(matches!(ix.probe(tag(i), |r| r == i), Probe::Found), "{i}");
            assert!(matches!(ix.probe(tag(i), |_| false), Probe::Vacant(_)));
        }
        let mut big = KeyIndex::default();
        big.reserve(1000);
        assert!(big.slots.len() >= 2000 && big.slots.len().is_power_of_two());
    }

    /// A row taken out of the duplicate check's table is no longer found, and every other
    /// row still is, with the tags crowded onto a few home slots (the slots after a removed
    /// one move up).
    #[test]
    fn key_index_removes_without_breaking_probes() {
        let mut ix = KeyIndex::default();
        let tag = |i: u32| 3 + (i % 4) * (1 << 20);
        for i in 0..300u32 {
            if let Probe::Vacant(at) = ix.probe(tag(i), |r| r == i) {
                ix.insert(at, tag(i), i);
            }
        }
        for gone in [299u32, 150, 0, 7] {
            ix.remove(tag(gone), gone);
            assert!(matches!(
                ix.probe(tag(gone), |r| r == gone),
                Probe::Vacant(_)
            ));
        }
        assert_eq!(ix.len, 296);
        for i in (0..300u32).filter(|i| ![299, 150, 0, 7].contains(i)) {
            assert!(matches!(ix.probe(tag(i), |r| r == i), Probe::Found), "{i}");
        }
        // A row that is not there: nothing changes.
        ix.remove(tag(7), 7);
        assert_eq!(ix.len, 296);
    }

    /// `remove_last` leaves the buffer as it was before the last add, in order and in the
    /// hash mode: the key may be added again, the others are still duplicates, and the
    /// records read back are the others'.
    #[test]
    fn remove_last_takes_the_last_row_back() {
        let l = layout();
        for keys in [&[1u8, 2, 3, 4][..], &[4, 1, 3, 2]] {
            let mut b = RowBuffer::new();
            for &k in keys {
                let r = rec(&l, Some(&[k]), b"k");
                assert!(matches!(
                    b.add(&l, r.as_bytes(), r.extra()),
                    Ok(Added::Row(_))
                ));
            }
            b.remove_last();
            assert_eq!(b.len(), 3);
            let last = keys[3];
            for &k in &keys[..3] {
                let r = rec(&l, Some(&[k]), b"k");
                assert_eq!(
                    b.add(&l, r.as_bytes(), r.extra()).unwrap(),
                    Added::Duplicate
                );
            }
            let r = rec(&l, Some(&[last]), b"k");
            assert!(matches!(
                b.add(&l, r.as_bytes(), r.extra()),
                Ok(Added::Row(_))
            ));
            b.remove_last();
            b.sort();
            let mut want: Vec<u8> = keys[..3].to_vec();
            want.sort();
            let got: Vec<u8> = b
                .records()
                .map(|(bytes, extra)| match &l.decode(bytes, extra).unwrap()[0] {
                    Value::Bytes(x) => x[0],
                    other => panic!("{other:?}"),
                })
                .collect();
            assert_eq!(got, want);
        }
        let mut empty = RowBuffer::new();
        empty.remove_last();
        assert!(empty.is_empty());
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
