//! Read views: which transactions' changes a consistent read sees.
//!
//! A read view is a photograph of the transaction system taken when a consistent read
//! starts, exactly InnoDB's `ReadView` (`read0types.h`):
//!
//! - `low_limit`: the next transaction id at that moment. Ids at or above it started later:
//!   their changes are **invisible**.
//! - `up_limit`: the smallest id that was active then (`low_limit` if none). Ids below it had
//!   committed: their changes are **visible**.
//! - `ids`: the ids active then, sorted. Between the two limits, an id is visible unless it is
//!   in this list.
//! - `creator`: the transaction that owns the view: its own changes are always visible.
//! - `low_limit_no`: the smallest commit number (`trx_no`) of a transaction that was still
//!   committing when the view was taken (`low_limit` if none), InnoDB's `m_low_limit_no`.
//!   Every transaction whose commit number is below it had finished committing, so the view
//!   sees its changes: purge uses it to decide which committed undo logs no view needs.
//!
//! ```text
//!   ids:   1 ... 41  42  43  44  45  46  47 | 48 ...
//!          committed |  active: {42, 45}    | low_limit = 48: not started yet
//!          up_limit = 42
//!   visible: < 42, 43, 44, 46, 47 (and the creator's own)      invisible: 42, 45, >= 48
//! ```

use std::sync::Arc;

use crate::error::MvccError;

/// A read view. Cloning one shares its list of active ids rather than copying it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadView {
    low_limit: u64,
    low_limit_no: u64,
    up_limit: u64,
    creator: u64,
    ids: Arc<[u64]>,
}

impl ReadView {
    /// A view with next id `low_limit`, owned by `creator` (0: none), with the active ids
    /// `ids` (sorted ascending).
    pub fn new(low_limit: u64, creator: u64, ids: Vec<u64>) -> ReadView {
        let up_limit = ids.first().copied().unwrap_or(low_limit);
        ReadView {
            low_limit,
            low_limit_no: low_limit,
            up_limit,
            creator,
            ids: ids.into(),
        }
    }

    /// InnoDB's `changes_visible`: true if a record written by transaction `id` is visible.
    /// It is [`ReadView::visible`]; an error (which only a course lab's starter code returns)
    /// reads as not visible.
    #[inline]
    pub fn changes_visible(&self, id: u64) -> bool {
        matches!(self.visible(id), Ok(true))
    }

    /// Whether a record written by transaction `id` is visible to this view: the creator's own
    /// changes and those of transactions below the up limit are; those of transactions at or
    /// above the low limit are not; in between, those of the transactions that were active
    /// are not. Never an error here: the `Result` is for course lab 5, whose starter code
    /// returns [`MvccError::NotWritten`]; inlined, the `Ok` folds away and
    /// [`ReadView::changes_visible`] is the comparisons alone.
    #[inline]
    pub fn visible(&self, id: u64) -> Result<bool, MvccError> {
        // lab 5 begin: visible
        // lab 5 starter: let _ = id; Err(minnow_page::lab::NotWritten::new(5, "visible").into())
        if id < self.up_limit || id == self.creator {
            return Ok(true);
        }
        if id >= self.low_limit {
            return Ok(false);
        }
        Ok(self.ids.binary_search(&id).is_err())
        // lab 5 end
    }

    /// The secondary-index shortcut (`lock_sec_rec_cons_read_sees`): true if every change on
    /// a page whose `PAGE_MAX_TRX_ID` is `max_trx_id` is visible.
    pub fn sees_page(&self, max_trx_id: u64) -> bool {
        max_trx_id < self.up_limit
    }

    /// The same view with a list of active ids of its own (a clone shares the list, and with
    /// it the list's reference count).
    pub fn detached(&self) -> ReadView {
        ReadView {
            ids: self.ids.iter().copied().collect(),
            ..self.clone()
        }
    }

    /// Makes `creator` the owner (a transaction that writes after its view was taken).
    pub fn set_creator(&mut self, creator: u64) {
        self.creator = creator;
    }

    /// The same view with low limit number `no` (at most the low limit): the smallest commit
    /// number of a transaction still committing when the view was taken.
    pub fn with_low_limit_no(mut self, no: u64) -> ReadView {
        self.low_limit_no = no.min(self.low_limit);
        self
    }

    /// The low limit number: a committed undo log whose commit number is below it holds
    /// nothing this view needs.
    pub fn low_limit_no(&self) -> u64 {
        self.low_limit_no
    }

    /// The low limit.
    pub fn low_limit(&self) -> u64 {
        self.low_limit
    }

    /// The up limit.
    pub fn up_limit(&self) -> u64 {
        self.up_limit
    }

    /// The owner (0: none).
    pub fn creator(&self) -> u64 {
        self.creator
    }

    /// The ids active when the view was taken.
    pub fn active_ids(&self) -> &[u64] {
        &self.ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_picture_in_the_module_docs() {
        let v = ReadView::new(48, 0, vec![42, 45]);
        for id in [1, 41, 43, 44, 46, 47] {
            assert!(v.changes_visible(id), "{id}");
        }
        for id in [42, 45, 48, 100] {
            assert!(!v.changes_visible(id), "{id}");
        }
        assert_eq!(v.up_limit(), 42);
        assert!(v.sees_page(41));
        assert!(!v.sees_page(42));
        let mut mine = v.clone();
        mine.set_creator(45);
        assert!(mine.changes_visible(45));
        let empty = ReadView::new(10, 0, vec![]);
        assert!(empty.changes_visible(9));
        assert!(!empty.changes_visible(10));
        assert_eq!(empty.up_limit(), 10);
        assert_eq!(empty.low_limit_no(), 10);
        assert_eq!(empty.clone().with_low_limit_no(7).low_limit_no(), 7);
        assert_eq!(empty.with_low_limit_no(70).low_limit_no(), 10);
    }
}
