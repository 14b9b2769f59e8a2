//! The table cache: every table's entry by name, and by its clustered index's id.
//!
//! Statements find a table by name; rollback and purge find it by the index id an undo
//! record names (InnoDB looks a table up by id in `dict_sys` the same way). A walk of every
//! entry for each undo record cost a purge or rollback step time in proportion to the number
//! of tables (100,000 entries for each row purged in a database of 100,000 tables), so the
//! cache keeps a second map, index id to name, which its only two ways of changing (insert
//! and remove) keep in step with the first. Reads go through `Deref` to the map by name.

use std::collections::{BTreeMap, HashMap};
use std::ops::Deref;
use std::sync::Arc;

use crate::entry::TableEntry;

/// Every table's entry by name, with an index from clustered index id to name.
#[derive(Debug, Default)]
pub struct TableCache {
    by_name: BTreeMap<String, Arc<TableEntry>>,
    by_index: HashMap<u64, String>,
}

impl TableCache {
    /// A cache holding `tables`.
    pub fn new(tables: BTreeMap<String, Arc<TableEntry>>) -> TableCache {
        let by_index = tables
            .iter()
            .map(|(name, t)| (t.meta.index_id, name.clone()))
            .collect();
        TableCache {
            by_name: tables,
            by_index,
        }
    }

    /// Makes `entry` table `name`'s, replacing any entry it had.
    pub fn insert(&mut self, name: String, entry: Arc<TableEntry>) {
        let id = entry.meta.index_id;
        if let Some(old) = self.by_name.insert(name.clone(), entry)
            && old.meta.index_id != id
        {
            self.by_index.remove(&old.meta.index_id);
        }
        self.by_index.insert(id, name);
    }

    /// Removes table `name`'s entry.
    pub fn remove(&mut self, name: &str) -> Option<Arc<TableEntry>> {
        let old = self.by_name.remove(name)?;
        self.by_index.remove(&old.meta.index_id);
        // After many drops the hash gives its room back (it shrinks only once under a quarter
        // full, so the rehash costs O(1) per drop over time): a dropped table leaves nothing.
        if self.by_index.len() * 4 < self.by_index.capacity() {
            self.by_index.shrink_to_fit();
        }
        Some(old)
    }

    /// The entry of the table whose clustered index is `index_id`.
    pub fn by_index(&self, index_id: u64) -> Option<&Arc<TableEntry>> {
        self.by_index
            .get(&index_id)
            .and_then(|name| self.by_name.get(name))
            .filter(|t| t.meta.index_id == index_id)
    }
}

impl Deref for TableCache {
    type Target = BTreeMap<String, Arc<TableEntry>>;

    fn deref(&self) -> &Self::Target {
        &self.by_name
    }
}
