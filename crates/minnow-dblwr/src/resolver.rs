//! Finding the open tablespace of a space id.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use minnow_io::Tablespace;

/// Maps a space id to its open tablespace. The buffer pool (or whoever owns the open files)
/// implements it; maps, slices and closures `Fn(u32) -> Option<Arc<Tablespace>>` already do.
pub trait SpaceResolver {
    /// The open tablespace with id `space_id`, or `None` if there is none.
    fn tablespace(&self, space_id: u32) -> Option<Arc<Tablespace>>;
}

impl<F> SpaceResolver for F
where
    F: Fn(u32) -> Option<Arc<Tablespace>>,
{
    fn tablespace(&self, space_id: u32) -> Option<Arc<Tablespace>> {
        self(space_id)
    }
}

impl<S: std::hash::BuildHasher> SpaceResolver for HashMap<u32, Arc<Tablespace>, S> {
    fn tablespace(&self, space_id: u32) -> Option<Arc<Tablespace>> {
        self.get(&space_id).cloned()
    }
}

impl SpaceResolver for BTreeMap<u32, Arc<Tablespace>> {
    fn tablespace(&self, space_id: u32) -> Option<Arc<Tablespace>> {
        self.get(&space_id).cloned()
    }
}

impl SpaceResolver for [Arc<Tablespace>] {
    fn tablespace(&self, space_id: u32) -> Option<Arc<Tablespace>> {
        self.iter().find(|s| s.space_id() == space_id).cloned()
    }
}

impl SpaceResolver for Vec<Arc<Tablespace>> {
    fn tablespace(&self, space_id: u32) -> Option<Arc<Tablespace>> {
        self.as_slice().tablespace(space_id)
    }
}
