//! The registry of open tablespaces.
//!
//! The buffer pool addresses pages by [`minnow_page::PageId`]; to read or write one it needs
//! the file. [`SpaceMap`] maps space ids to open [`Tablespace`]s. The doublewrite buffer needs
//! the same lookup when it repairs pages at recovery (its `SpaceResolver`).

use std::collections::HashMap;
use std::sync::Arc;

use minnow_io::Tablespace;
use parking_lot::RwLock;

/// Space id → open tablespace.
#[derive(Debug, Default)]
pub struct SpaceMap {
    spaces: RwLock<HashMap<u32, Arc<Tablespace>>>,
}

impl SpaceMap {
    /// An empty registry.
    pub fn new() -> SpaceMap {
        SpaceMap::default()
    }

    /// Registers `space` under its own id (replacing an earlier one with that id).
    pub fn insert(&self, space: Arc<Tablespace>) {
        self.spaces.write().insert(space.space_id(), space);
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
