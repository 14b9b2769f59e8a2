//! The secondary indexes of a bulk insert (the `bulk` module): while a transaction buffers
//! its inserts into an empty table, each secondary index's entries are buffered beside the
//! clustered records, and at commit each index is sorted and built bottom-up as the
//! clustered one is, as MariaDB 10.11's bulk insert into an empty table buffers and sorts
//! every index.
//!
//! ## An entry
//!
//! A row's entry in index `s` is the secondary record the index stores (`s`'s columns, then
//! the primary key's: [`crate::schema::TableMeta::secondary_layout`]), cut from the row's
//! clustered record as it was encoded for the buffer: its fields are the clustered record's
//! fields at `s`'s positions, so no value is encoded twice. Each index keeps its entries as
//! the `bulk_buf` module keeps rows: the records in one arena, their flat keys (the same
//! memcomparable form) in another, one small entry per row with the key's first 8 bytes for
//! sorting. Secondary keys end with the primary key, so two rows' entries never have equal
//! keys: no duplicate check on the whole key, no hash of it.
//!
//! ## Unique indexes
//!
//! A UNIQUE index's entries are checked at the insert, as a row-by-row insert checks them:
//! two rows whose indexed columns are equal and none NULL are [`Error::DuplicateKey`] from the
//! second insert call, naming the index and the indexed values (the error a row-by-row
//! insert gives). The check hashes the flat key's leading fields (the indexed columns, each
//! written with its terminator, so the bytes of one field never run into the next) and
//! compares the bytes of the earlier entries with the same hash.
//!
//! ## A row's entries, all or none
//!
//! [`SecBuffers::add`] first **stages** every index's entry at the end of its arenas and
//! checks it: unique keys in index order, then each entry's size (a record over half a page
//! is [`Error::RowTooLarge`], as [`super::rows`] says for a row-by-row insert); any failure
//! truncates every arena back and the row leaves no trace (the caller takes its clustered
//! record back out too). Only then are the entries kept. So the checks run in the order an
//! ordinary insert runs them: the primary key (by the caller's buffer), unique secondary keys,
//! sizes.
//!
//! ## Commit
//!
//! [`SecBuffers::build`] sorts each index's entries by their flat keys and pushes the
//! records, in order, into a [`BulkBuilder`] for a new tree with the index's id, its leaves'
//! `PAGE_MAX_TRX_ID` the transaction's id. A read view that does not see the transaction
//! therefore checks every entry against the clustered record (the `write` module's
//! "Consistent reads"), whose `DB_TRX_ID` it does not see and whose roll pointer says
//! "inserted, no history": no version, no row. The built trees are named by the commit's
//! own dictionary rewrite together with the clustered root (the `bulk` module's "Commit").

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, RandomState};

use minnow_btree::BTree;
use minnow_btree::record::{RecordError, RecordLayout, Value};
use minnow_btree::tree::{BulkBuilder, BulkOptions};
use minnow_buf::BufferPool;
use minnow_redo::Lsn;

use crate::entry::TableEntry;
use crate::error::{Error, Result, from_tree};
use crate::schema::PRIMARY;

use super::bulk_buf::{flat_key, prefix};

/// No entry: the end of a hash chain.
const END: u32 = u32::MAX;

/// One buffered entry: where its flat key and record lie in the index's vectors, as the
/// `bulk_buf` module places a row; `next` is the earlier entry with the same hash of the
/// indexed columns (unique indexes), [`END`] if none.
#[derive(Clone, Copy)]
struct Entry {
    /// The key's first 8 bytes, big-endian, zero-padded.
    prefix: u64,
    key_at: usize,
    key_len: u32,
    /// The record's start in `recs`, its length and its origin's offset from the start.
    rec_at: usize,
    rec_len: u32,
    extra: u32,
    next: u32,
}

/// A hasher for keys that are already hashes (the unique keys' map): the key passes through.
#[derive(Default)]
struct Passthrough(u64);

impl std::hash::Hasher for Passthrough {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// Bytes a buffered entry is counted at beyond its record and key (its entry; a unique
/// index's hash slot).
const ENTRY_OVERHEAD: usize = 48;

/// A staged entry (see the module docs): at the arenas' ends, not yet an [`Entry`].
#[derive(Clone, Copy)]
struct Staged {
    entry: Entry,
    /// Unique indexes with no NULL in the indexed columns: the hash of their flat bytes.
    hash: Option<u64>,
}

/// The buffered entries of one secondary index.
struct SecBuffer {
    /// The index's record layout.
    layout: RecordLayout,
    /// The positions, in the clustered record, of the entry's fields.
    from: Vec<usize>,
    /// A UNIQUE index: how many leading fields are its columns.
    unique: Option<usize>,
    recs: Vec<u8>,
    keys: Vec<u8>,
    entries: Vec<Entry>,
    /// Unique indexes: hash of the indexed columns' flat bytes to the newest entry with it.
    index: HashMap<u64, u32, BuildHasherDefault<Passthrough>>,
    hasher: RandomState,
    staged: Option<Staged>,
}

/// The buffered entries of every secondary index of a claimed table, in the order of the
/// table's `meta.secondary` (see the module docs).
pub(super) struct SecBuffers {
    indexes: Vec<SecBuffer>,
}

impl SecBuffers {
    /// Empty buffers for every secondary index of `t`.
    pub(super) fn new(t: &TableEntry) -> Result<SecBuffers> {
        let meta = &t.meta;
        let mut indexes = Vec::with_capacity(meta.secondary.len());
        for s in &meta.secondary {
            let layout = meta.secondary_layout(s)?;
            let cols: Vec<usize> = s.cols.iter().chain(&meta.pk).copied().collect();
            let from = meta.stored_fields(&cols);
            if from.len() != layout.fields().len() {
                return Err(Error::Corrupt {
                    what: format!(
                        "table `{}`: index `{}` names a column the table lacks",
                        meta.name(),
                        s.name
                    ),
                });
            }
            // A key that is only the indexed columns would repeat the primary key's
            // uniqueness; every secondary key ends with the primary key, so this holds.
            let unique = (s.unique && s.cols.len() < layout.n_key()).then_some(s.cols.len());
            indexes.push(SecBuffer {
                layout,
                from,
                unique,
                recs: Vec::new(),
                keys: Vec::new(),
                entries: Vec::new(),
                index: HashMap::default(),
                hasher: RandomState::new(),
                staged: None,
            });
        }
        Ok(SecBuffers { indexes })
    }

    /// Adds the entries of the row whose clustered record (of `clustered`, the layout of
    /// `t`'s clustered index) is `rec` with its origin `extra` bytes in, all or none (see the
    /// module docs); returns the bytes they are counted at. `max` is the largest record a
    /// page takes.
    pub(super) fn add(
        &mut self,
        t: &TableEntry,
        clustered: &RecordLayout,
        (rec, extra): (&[u8], usize),
        max: usize,
    ) -> Result<usize> {
        if self.indexes.is_empty() {
            return Ok(0);
        }
        let fields: Vec<Option<&[u8]>> = clustered
            .walk(rec, extra)
            .collect::<std::result::Result<_, RecordError>>()
            .map_err(|e| from_tree(e.into(), t.meta.name(), PRIMARY))?;
        let staged = self.stage_all(t, &fields, max);
        let mut bytes = 0;
        for s in &mut self.indexes {
            match (&staged, s.staged.take()) {
                (Ok(()), Some(st)) => bytes += s.keep(st),
                (_, Some(st)) => s.drop_staged(st),
                (_, None) => {}
            }
        }
        staged.map(|()| bytes)
    }

    /// Stages every index's entry for the row of clustered `fields` and checks them (unique
    /// keys in index order, then sizes); the staged entries stay in place either way.
    fn stage_all(&mut self, t: &TableEntry, fields: &[Option<&[u8]>], max: usize) -> Result<()> {
        let meta = &t.meta;
        for (s, m) in self.indexes.iter_mut().zip(&meta.secondary) {
            let bad = |e: RecordError| from_tree(e.into(), meta.name(), &m.name);
            let st = s.stage(fields).map_err(bad)?;
            s.staged = Some(st);
            if let Some(key) = s.duplicate_of(&st).map_err(bad)? {
                return Err(Error::DuplicateKey {
                    table: meta.name().to_owned(),
                    index: m.name.clone(),
                    key,
                });
            }
        }
        for (s, m) in self.indexes.iter().zip(&meta.secondary) {
            let len = s.staged.map_or(0, |st| st.entry.rec_len as usize);
            if len > max {
                return Err(Error::RowTooLarge {
                    table: meta.name().to_owned(),
                    index: m.name.clone(),
                    len,
                    max,
                    reason: String::new(),
                });
            }
        }
        Ok(())
    }

    /// Builds a new tree for every index of `t` from its buffered entries, sorted (see the
    /// module docs), its leaves stamped with `max_trx_id`; each tree is added to `created`
    /// as soon as it exists, and each index's buffer is freed once built. Returns the trees
    /// in index order and the redo end of their pages.
    pub(super) fn build(
        &mut self,
        pool: &BufferPool,
        t: &TableEntry,
        max_trx_id: u64,
        created: &mut Vec<BTree>,
    ) -> Result<(Vec<BTree>, Lsn)> {
        let meta = &t.meta;
        let mut trees = Vec::with_capacity(self.indexes.len());
        let mut end = Lsn::default();
        for ((s, m), old) in self
            .indexes
            .iter_mut()
            .zip(&meta.secondary)
            .zip(&t.secondary)
        {
            let name = meta.name();
            s.sort();
            let mut b = BulkBuilder::new(
                pool,
                meta.space_id(),
                old.index_id(),
                s.layout.clone(),
                BulkOptions::default().max_trx_id(max_trx_id),
            )
            .map_err(|e| from_tree(e, name, &m.name))?;
            created.push(b.tree().clone());
            for (rec, extra) in s.records() {
                b.push_bytes(rec, extra)
                    .map_err(|e| from_tree(e, name, &m.name))?;
            }
            let (tree, e) = b.finish().map_err(|e| from_tree(e, name, &m.name))?;
            end = end.max(e);
            trees.push(tree);
            s.clear();
        }
        if trees.len() != meta.secondary.len() {
            return Err(Error::Corrupt {
                what: format!("table `{}`: an index has no tree", meta.name()),
            });
        }
        Ok((trees, end))
    }
}

impl SecBuffer {
    /// Encodes the entry for the row of clustered `fields` at the arenas' ends.
    fn stage(&mut self, fields: &[Option<&[u8]>]) -> std::result::Result<Staged, RecordError> {
        let values: Vec<Option<&[u8]>> = self
            .from
            .iter()
            .map(|&i| fields.get(i).copied().flatten())
            .collect();
        let rec = self.layout.encode_raw(&values)?;
        let (key_at, rec_at) = (self.keys.len(), self.recs.len());
        if let Err(e) = flat_key(&self.layout, rec.as_bytes(), rec.extra(), &mut self.keys) {
            self.keys.truncate(key_at);
            return Err(e);
        }
        self.recs.extend_from_slice(rec.as_bytes());
        let key = self.keys.get(key_at..).unwrap_or_default();
        // Lengths are at most a page (records) or twice that (keys) once the size check
        // passed; one past u32 fails that check.
        let len32 = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let hash = self
            .unique
            .and_then(|n| unique_len(key, n))
            .and_then(|n| key.get(..n))
            .map(|k| self.hasher.hash_one(k));
        Ok(Staged {
            entry: Entry {
                prefix: prefix(key),
                key_at,
                key_len: len32(key.len()),
                rec_at,
                rec_len: len32(rec.as_bytes().len()),
                extra: len32(rec.extra()),
                next: hash
                    .and_then(|h| self.index.get(&h).copied())
                    .unwrap_or(END),
            },
            hash,
        })
    }

    /// The indexed values, if an entry kept earlier has the same indexed columns as staged
    /// entry `st` (none NULL) in a unique index.
    fn duplicate_of(&self, st: &Staged) -> std::result::Result<Option<Vec<Value>>, RecordError> {
        let (Some(n), Some(_)) = (self.unique, st.hash) else {
            return Ok(None);
        };
        let mine = self.key(&st.entry);
        // Whole fields, so an earlier key with these leading bytes has these leading fields.
        let Some(want) = unique_len(mine, n).and_then(|l| mine.get(..l)) else {
            return Ok(None);
        };
        let mut at = st.entry.next;
        while let Some(e) = self.entries.get(at as usize) {
            if self.key(e).get(..want.len()) == Some(want) {
                let (rec, extra) = self.record(&st.entry);
                let values = self.layout.decode(rec, extra)?;
                return Ok(Some(values.into_iter().take(n).collect()));
            }
            at = e.next;
        }
        Ok(None)
    }

    /// Keeps staged entry `st`; the bytes it is counted at.
    fn keep(&mut self, st: Staged) -> usize {
        let n = u32::try_from(self.entries.len()).unwrap_or(END);
        if let Some(h) = st.hash {
            self.index.insert(h, n);
        }
        self.entries.push(st.entry);
        st.entry.key_len as usize + st.entry.rec_len as usize + ENTRY_OVERHEAD
    }

    /// Takes staged entry `st` back off the arenas.
    fn drop_staged(&mut self, st: Staged) {
        self.keys.truncate(st.entry.key_at);
        self.recs.truncate(st.entry.rec_at);
    }

    fn key(&self, e: &Entry) -> &[u8] {
        self.keys
            .get(e.key_at..e.key_at + e.key_len as usize)
            .unwrap_or_default()
    }

    fn record(&self, e: &Entry) -> (&[u8], usize) {
        let bytes = self
            .recs
            .get(e.rec_at..e.rec_at + e.rec_len as usize)
            .unwrap_or_default();
        (bytes, e.extra as usize)
    }

    /// Sorts the entries by key: by their 8-byte prefixes, the keys' bytes on a tie.
    fn sort(&mut self) {
        let mut entries = std::mem::take(&mut self.entries);
        entries.sort_unstable_by(|a, b| {
            a.prefix
                .cmp(&b.prefix)
                .then_with(|| self.key(a).cmp(self.key(b)))
        });
        self.entries = entries;
    }

    /// The records, in the entries' order.
    fn records(&self) -> impl Iterator<Item = (&[u8], usize)> + '_ {
        self.entries.iter().map(|e| self.record(e))
    }

    /// Frees the buffer's memory, once its index is built (the hash chains, naming entries
    /// by their arrival numbers, no longer hold after the sort).
    fn clear(&mut self) {
        self.recs = Vec::new();
        self.keys = Vec::new();
        self.entries = Vec::new();
        self.index = HashMap::default();
    }
}

/// The length of the first `n` fields of flat key `key` (`bulk_buf`'s form: a NULL is the
/// tag 0; a value is the tag 1, its bytes with each 0 written as 0 0xFF, and 0 0), or `None`
/// if one of them is NULL: such a key is never a duplicate. Only fields followed by another
/// have the terminator: `n` must be below the key's field count.
fn unique_len(key: &[u8], n: usize) -> Option<usize> {
    let mut at = 0;
    for _ in 0..n {
        match key.get(at) {
            Some(1) => at += 1,
            _ => return None,
        }
        loop {
            match key.get(at..at + 2) {
                Some([0, 0]) => {
                    at += 2;
                    break;
                }
                Some([0, _]) => at += 2,
                Some(_) => at += 1,
                None => return None,
            }
        }
    }
    Some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `unique_len` reads back exactly the fields `flat_key` wrote, zero bytes included,
    /// and refuses a NULL field or a key cut short.
    #[test]
    fn unique_len_reads_the_leading_fields() {
        use minnow_btree::record::{Column, ColumnType};
        let layout = RecordLayout::secondary(vec![
            Column::nullable(ColumnType::Var(8)),
            Column::new(ColumnType::U32),
            Column::new(ColumnType::U32),
        ])
        .unwrap();
        let flat = |a: Option<&[u8]>, b: u64| {
            let rec = layout
                .encode(&[
                    a.map_or(Value::Null, |a| Value::Bytes(a.to_vec())),
                    Value::UInt(b),
                    Value::UInt(7),
                ])
                .unwrap();
            let mut k = Vec::new();
            flat_key(&layout, rec.as_bytes(), rec.extra(), &mut k).unwrap();
            k
        };
        for a in [&b""[..], b"\0", b"a\0\0b", b"\0\xff"] {
            let k = flat(Some(a), 0);
            // Tag, the bytes with each 0 doubled, the terminator.
            let one = 1 + a.len() + a.iter().filter(|&&b| b == 0).count() + 2;
            assert_eq!(unique_len(&k, 1), Some(one), "{a:?}");
            // U32 0 is four 0 bytes: 1 + 8 + 2.
            assert_eq!(unique_len(&k, 2), Some(one + 11), "{a:?}");
            // Keys that differ in the leading fields differ in their cut bytes.
            let other = flat(Some(&[a, b"x"].concat()), 0);
            assert_ne!(k.get(..one), other.get(..unique_len(&other, 1).unwrap()));
        }
        assert_eq!(unique_len(&flat(None, 1), 1), None);
        assert_eq!(unique_len(&flat(Some(b"ab"), 1)[..3], 1), None);
    }
}
