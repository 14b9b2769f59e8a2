//! The registry of open tablespaces.
//!
//! The buffer pool addresses pages by [`minnow_page::PageId`]; to read or write one it needs
//! the file. [`SpaceMap`] maps space ids to open [`Tablespace`]s. The doublewrite buffer needs
//! the same lookup when it repairs pages at recovery (its `SpaceResolver`).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use minnow_io::Tablespace;
use parking_lot::RwLock;

/// Space id → open tablespace.
#[derive(Debug, Default)]
pub struct SpaceMap {
    spaces: RwLock<HashMap<u32, Arc<Tablespace>>>,
    /// Set once a compressed tablespace is registered: until then a mini-transaction's
    /// commit does not even look up the spaces of the pages it changed.
    compressed: AtomicBool,
}

impl SpaceMap {
    /// An empty registry.
    pub fn new() -> SpaceMap {
        SpaceMap::default()
    }

    /// Registers `space` under its own id (replacing an earlier one with that id).
    pub fn insert(&self, space: Arc<Tablespace>) {
        if space.zip().is_some() {
            self.compressed.store(true, Ordering::Release);
        }
        self.spaces.write().insert(space.space_id(), space);
    }

    /// True if a compressed tablespace was ever registered.
    pub fn has_compressed(&self) -> bool {
        self.compressed.load(Ordering::Acquire)
    }

    /// The compressed tablespaces registered now, by space id.
    pub fn compressed(&self) -> Vec<Arc<Tablespace>> {
        let mut v: Vec<Arc<Tablespace>> = self
            .spaces
            .read()
            .values()
            .filter(|s| s.zip().is_some())
            .cloned()
            .collect();
        v.sort_unstable_by_key(|s| s.space_id());
        v
    }

    /// Forgets the tablespace `space_id`, returning it.
    pub fn remove(&self, space_id: u32) -> Option<Arc<Tablespace>> {
        self.spaces.write().remove(&space_id)
    }

    /// The tablespace `space_id`, if registered.
    pub fn get(&self, space_id: u32) -> Option<Arc<Tablespace>> {
        self.spaces.read().get(&space_id).cloned()
    }

    /// Registered space ids, sorted.
    pub fn ids(&self) -> Vec<u32> {
        let mut ids: Vec<u32> = self.spaces.read().keys().copied().collect();
        ids.sort_unstable();
        ids
    }
}

impl minnow_dblwr::SpaceResolver for SpaceMap {
    fn tablespace(&self, space_id: u32) -> Option<Arc<Tablespace>> {
        self.get(space_id)
    }
}
