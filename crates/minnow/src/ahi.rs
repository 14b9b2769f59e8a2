//! Wiring of the adaptive hash index (`minnow-ahi`) into the database: every table's trees
//! get a search hook from the database's one [`minnow_ahi::Ahi`], dropped indexes leave it,
//! and [`Database::ahi_stats`] / [`Database::set_adaptive_hash_index`] expose it. What the
//! hash does and why it is always verified: see the `minnow_ahi` crate docs.

use minnow_ahi::{Ahi, AhiStats};
use minnow_btree::BTree;

use crate::db::{Database, TableEntry};
use crate::error::Result;

/// `tree` with the hash's hook for its index installed (unchanged if it has one).
pub(crate) fn hook_tree(ahi: &Ahi, tree: BTree) -> BTree {
    if tree.search_hook().is_some() {
        return tree;
    }
    let hook = ahi.hook(tree.space(), tree.index_id(), tree.layout().clone());
    tree.with_search_hook(hook)
}

impl TableEntry {
    /// This entry with the padding rule `pad` on every tree (a no-op for an uncompressed
    /// table).
    pub(crate) fn zip_padded(self, pad: minnow_btree::tree::ZipPadConfig) -> TableEntry {
        self.clustered.set_zip_pad(pad);
        for t in &self.secondary {
            t.set_zip_pad(pad);
        }
        self
    }

    /// This entry with every tree hooked to `ahi`.
    pub(crate) fn hooked(mut self, ahi: &Ahi) -> TableEntry {
        self.clustered = hook_tree(ahi, self.clustered);
        self.secondary = self
            .secondary
            .into_iter()
            .map(|t| hook_tree(ahi, t))
            .collect();
        self
    }
}

impl Database {
    /// The adaptive hash index's counters and sizes: probes, hits, misses, descents avoided,
    /// pages hashed, entries, memory (see [`AhiStats`]).
    pub fn ahi_stats(&self) -> Result<AhiStats> {
        Ok(self.inner()?.ahi.stats())
    }

    /// Switches the adaptive hash index on or off at runtime (`SET GLOBAL
    /// innodb_adaptive_hash_index`). Off empties it, one partition at a time; on, it
    /// learns again from nothing.
    pub fn set_adaptive_hash_index(&self, on: bool) -> Result<()> {
        self.inner()?.ahi.set_enabled(on);
        Ok(())
    }
}
