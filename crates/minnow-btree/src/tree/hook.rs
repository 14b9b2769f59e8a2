//! The search hook: how an adaptive hash index plugs into the tree's point lookups (and
//! where a forward range scan from a full key starts: `BTree::guessed_leaf`).
//!
//! A point lookup normally **descends**: root, inner pages, leaf, one binary search per page.
//! An adaptive hash index (`minnow-ahi`) remembers, for keys searched often, *where* the
//! record was: a leaf page, the record's offset on it, and the buffer-pool frame that held
//! the page with that frame's layout counter at the time ([`PageReadGuard::layout`]). The
//! tree does not know how such a hash is built; it only asks a [`SearchHook`] for a
//! [`Guess`] before descending, and tells it what every descent found ([`Descent`]) so that
//! it can learn.
//!
//! ```text
//!   get(key) ── hook.guess(key) ──► Some(page, offset, layout) ── latch page (shared) ──┐
//!      │                                │                                            │
//!      │                               None                   same frame and layout, index,
//!      │                                │                     leaf, user record, key equal?
//!      ▼                                ▼                              │yes        │no
//!   descent ◄───────────────────────────┴──────────────────────────────┼───────────┘
//!      │                                                               ▼
//!      └── hook.descended(key, leaf, search result) ──► answer    answer (no descent)
//! ```
//!
//! **Where the page is.** A guess also names the buffer-pool frame its page was in when the
//! entry was made ([`Guess::frame`]). The page is fixed through that frame
//! ([`BufferPool::get_read_hinted`]), which skips the pool's page-hash lookup and checks under
//! the latch that the frame still holds the page (otherwise it fixes the page the normal
//! way). And since the guess names the frame and the record's offset, every cache line the
//! lookup will touch is known before it touches any: the frame's control block, the page's
//! headers, the record. They are all prefetched at once ([`BufferPool::prefetch_hinted`]),
//! so that on a large pool their misses overlap instead of queueing behind each other (the
//! pin's and the latch's atomic instructions stop the processor from starting later loads
//! early on its own).
//!
//! **A guess is never trusted.** The tree checks it against the page itself, under the
//! page's latch: the page must still be in the frame the guess names with the same layout
//! counter (the frame's counter moves at every exclusive latch except one whose holder
//! changes bytes only in place, and at every read-in and eviction: an unchanged counter means
//! no record was inserted, removed or moved, so the offset still holds the record that was
//! hashed), be an INDEX leaf of this index, hold a user record at the offset, and that
//! record's key must equal the key searched. Anything else (the page changed, split, merged,
//! was freed and reused, or the entry is simply wrong) makes the tree fall back to the
//! descent, so a stale or corrupt hash entry costs time, never a wrong answer. The tree calls
//! [`SearchHook::verified`] with the outcome, and the descent's [`Descent::failed_guess`] lets
//! the hook repair or drop the entry; [`Descent::guess_page_changed`] tells it whether the
//! page moved on since the entry was made (then every entry made at that layout is stale and
//! can go at once) or the entry alone was wrong.
//!
//! **Guesses for writers.** InnoDB's writers use the hash too (`btr_cur_search_to_nth_level`
//! tries `btr_search_guess_on_hash` for a leaf change). So does minnow's change of a record in
//! place ([`BTree::change_leaf_record`], a row delete's delete mark): it latches the guessed
//! leaf exclusively *in place* ([`minnow_buf::Mtr::get_write_in_place_hinted`]), checks the
//! guess as a reader does, and changes the record where it lies; since nothing moved, the
//! layout counter stays and every entry on the leaf stays good for the next reader or
//! writer. Before the counter, the page LSN was the check, and the first delete mark on a
//! leaf ended every entry on it.

use std::fmt::Debug;

use minnow_buf::{BufferPool, Mtr, PageHandle, PageReadGuard};

use super::{BTree, TreeError, page};
use crate::node::{self, Cursor, SearchResult};
use crate::record::{INFO_MIN_REC, SearchKey};

/// Bytes before a guessed record's origin loaded ahead of its check (its header and the
/// field lengths of a record of a few columns).
const RECORD_BEFORE: usize = 16;
/// Bytes from a guessed record's origin loaded ahead of its check: the key, the system
/// columns and a short row; a longer row's tail is loaded when it is read.
const RECORD_AFTER: usize = 192;

/// Where a hash index believes the record with some key is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Guess {
    /// The leaf page number (in the tree's tablespace).
    pub page_no: u32,
    /// The record's origin on that page.
    pub origin: usize,
    /// The frame's layout counter when the entry was made ([`Descent::layout`]).
    pub layout: u64,
    /// The buffer-pool frame that held the page then ([`Descent::frame`]): the lookup fixes
    /// the page through it ([`BufferPool::get_read_hinted`]), skipping the page hash; the
    /// guess holds only while the same frame holds the page with the same layout.
    pub frame: u32,
    /// An opaque value the hook gets back in [`SearchHook::verified`] (for example the
    /// key's hash, to find its partition again).
    pub token: u64,
}

/// What one descent for a point lookup found, given to [`SearchHook::descended`] while the
/// leaf is still shared-latched.
#[derive(Debug)]
pub struct Descent<'a> {
    /// The key searched (all key fields).
    pub key: &'a SearchKey,
    /// The leaf page number.
    pub page_no: u32,
    /// The leaf's bytes (shared-latched for the duration of the call).
    pub page: &'a [u8],
    /// The layout counter of the frame holding the leaf ([`PageReadGuard::layout`]): while
    /// it stays, the leaf's records lie where they lie now.
    pub layout: u64,
    /// The buffer-pool frame holding the leaf ([`minnow_buf::PageReadGuard::frame`]): a
    /// hint to keep in a [`Guess`].
    pub frame: u32,
    /// The leaf search's result: cursor, neighbours and matched fields
    /// ([`SearchResult::low_match`], [`SearchResult::up_match`]).
    pub found: &'a SearchResult,
    /// The guess tried before this descent, if one was tried and failed verification.
    pub failed_guess: Option<&'a Guess>,
    /// Whether the failed guess's page was no longer in the guess's frame with its layout
    /// (or could not be read): the page changed since the entry was made, so every entry
    /// made with that layout is stale, not just this one. `false` when the page was unchanged and the
    /// entry itself was wrong, and when no guess failed.
    pub guess_page_changed: bool,
}

/// A hash index over one tree's leaf records, consulted by [`BTree::get`],
/// [`BTree::get_fields`] and [`BTree::get_projected`] (and by a forward range scan that
/// starts at a full key, for its first leaf). Installed with
/// [`BTree::with_search_hook`]; see the module docs for the protocol.
///
/// Implementations must be cheap when they have nothing to say (a lookup path calls
/// [`SearchHook::guess`] every time) and must not latch pages: the tree calls them while
/// holding a leaf latch.
pub trait SearchHook: Send + Sync + Debug {
    /// A guess for the leaf record whose key equals `key` (a full key), or `None` to descend.
    fn guess(&self, key: &SearchKey) -> Option<Guess>;
    /// The outcome of verifying `guess`: `true` if the record was found where it said.
    fn verified(&self, guess: &Guess, hit: bool);
    /// A point-lookup descent ended on a leaf (see [`Descent`]).
    fn descended(&self, descent: &Descent<'_>);
    /// Page `page_no` of the tree was freed (a merge or a root lower): its entries can go.
    fn page_freed(&self, page_no: u32);
}

/// Starts loading everything a guess's check and the caller's read of the record touch, all
/// named by the guess, together and before the fix (see the module docs).
fn prefetch_guess(pool: &BufferPool, guess: &Guess) {
    pool.prefetch_hinted(
        guess.frame,
        guess.origin.saturating_sub(RECORD_BEFORE),
        guess.origin.saturating_add(RECORD_AFTER),
    );
}

impl BTree {
    /// This tree with `hook` consulted by its point lookups (see [`SearchHook`]).
    pub fn with_search_hook(mut self, hook: std::sync::Arc<dyn SearchHook>) -> BTree {
        self.hook = Some(hook);
        self
    }

    /// The search hook installed, if any.
    pub fn search_hook(&self) -> Option<&std::sync::Arc<dyn SearchHook>> {
        self.hook.as_ref()
    }

    /// The leaf holding the record whose key equals the full key `k`, shared-latched, and
    /// the record's cursor; `None` if there is no such record. Tries the search hook's
    /// guess first (verified: see the module docs), else descends and tells the hook.
    pub(crate) fn find_exact<'p>(
        &self,
        pool: &'p BufferPool,
        k: &SearchKey,
    ) -> Result<Option<(PageReadGuard<'p>, Cursor)>, TreeError> {
        let Some(hook) = &self.hook else {
            let g = self.leaf_for_read(pool, Some(k))?;
            let found = node::search(&g, &self.leaf, k)?;
            return Ok(found.exact.then_some((g, found.cursor)));
        };
        let guess = hook.guess(k);
        let mut guess_page_changed = false;
        if let Some(guess) = &guess {
            let verified = self.verify_guess(pool, k, guess);
            hook.verified(guess, verified.is_ok());
            match verified {
                Ok(hit) => return Ok(Some(hit)),
                Err(changed) => guess_page_changed = changed,
            }
        }
        let g = self.leaf_for_read(pool, Some(k))?;
        let found = node::search(&g, &self.leaf, k)?;
        hook.descended(&Descent {
            key: k,
            page_no: g.page_id().page_no,
            page: &g,
            layout: g.layout(),
            frame: g.frame(),
            found: &found,
            failed_guess: guess.as_ref(),
            guess_page_changed,
        });
        Ok(found.exact.then_some((g, found.cursor)))
    }

    /// The leaf holding the record whose key equals the full key `k`, shared-latched, if the
    /// search hook guesses it and the guess verifies (see the module docs); `None` (a key of
    /// fewer fields, no hook, no guess or a wrong one): descend. What a forward range scan
    /// from an existing key starts with, as InnoDB positions a cursor through its adaptive
    /// hash: the leaf that holds the key is the leaf its range starts on. A failed guess is
    /// only counted ([`SearchHook::verified`]); the point lookups' descents repair the hash.
    /// Comes with the cursor on the record: the scan starts there, with no search of the leaf.
    pub(crate) fn guessed_leaf<'p>(
        &self,
        pool: &'p BufferPool,
        k: &SearchKey,
    ) -> Option<(PageReadGuard<'p>, Cursor)> {
        let hook = self.hook.as_ref()?;
        if k.len() != self.leaf.n_key() {
            return None;
        }
        let guess = hook.guess(k)?;
        let verified = self.verify_guess(pool, k, &guess);
        hook.verified(&guess, verified.is_ok());
        verified.ok()
    }

    /// The leaf holding the record whose key equals the full key `k`, latched exclusively in
    /// place in `mtr` ([`Mtr::get_write_in_place_hinted`]), and the record's cursor, if the
    /// search hook guesses it and the guess verifies; `None` otherwise (nothing is left
    /// latched: the caller descends). For a change of the record in place alone: the
    /// frame's layout counter stays, and with it every hash entry on the leaf.
    pub(crate) fn guessed_leaf_in_place(
        &self,
        pool: &BufferPool,
        mtr: &mut Mtr<'_>,
        k: &SearchKey,
    ) -> Result<Option<(PageHandle, Cursor)>, TreeError> {
        let Some(hook) = &self.hook else {
            return Ok(None);
        };
        if k.len() != self.leaf.n_key() || self.zip.is_some() {
            return Ok(None);
        }
        let Some(guess) = hook.guess(k) else {
            return Ok(None);
        };
        let id = self.id(guess.page_no);
        prefetch_guess(pool, &guess);
        let h = match mtr.get_write_in_place_hinted(id, guess.frame) {
            Ok(h) => h,
            Err(_) => {
                hook.verified(&guess, false);
                return Ok(None);
            }
        };
        let hit = match (mtr.frame(h), mtr.layout(h)) {
            (Some(frame), Some(layout)) => self
                .check_guess(frame, layout, mtr.page(h), k, &guess)
                .is_ok(),
            _ => false,
        };
        hook.verified(&guess, hit);
        if hit {
            return Ok(Some((h, Cursor::at(guess.origin))));
        }
        mtr.release(h)?;
        Ok(None)
    }

    /// Checks `guess` against the page (see the module docs). Any error reading or decoding
    /// the page counts as a failed guess: the descent that follows reports real damage. A
    /// failure says whether the page changed (or could not be read) since the guess's frame
    /// and layout.
    fn verify_guess<'p>(
        &self,
        pool: &'p BufferPool,
        k: &SearchKey,
        guess: &Guess,
    ) -> Result<(PageReadGuard<'p>, Cursor), bool> {
        if k.len() != self.leaf.n_key() {
            return Err(false);
        }
        let id = self.id(guess.page_no);
        prefetch_guess(pool, guess);
        let g = pool.get_read_hinted(id, guess.frame).map_err(|_| true)?;
        self.check_guess(g.frame(), g.layout(), &g, k, guess)?;
        Ok((g, Cursor::at(guess.origin)))
    }

    /// Checks `guess` against page `g`, latched in `frame` whose layout counter is `layout`:
    /// `Err(true)` if the page is not where the guess saw it or its records may have moved
    /// since (another frame, another layout), `Err(false)` if it is unchanged but the record
    /// at the guess's origin is not a user record of this index's leaf whose key equals `k`.
    fn check_guess(
        &self,
        frame: u32,
        layout: u64,
        g: &[u8],
        k: &SearchKey,
        guess: &Guess,
    ) -> Result<(), bool> {
        if frame != guess.frame || layout != guess.layout {
            return Err(true);
        }
        self.check_record(g, k, guess).ok_or(false)
    }

    /// Whether the record at the guess's origin on page `g` is a user record of this index's
    /// leaf whose key equals `k`.
    fn check_record(&self, g: &[u8], k: &SearchKey, guess: &Guess) -> Option<()> {
        let id = self.id(guess.page_no);
        page::validate(g, id, self.index_id, Some(0)).ok()?;
        let c = Cursor::at(guess.origin);
        let heap_top = node::heap_top(g).ok()?;
        if !c.is_user() || guess.origin < node::SUPREMUM_END || guess.origin >= heap_top {
            return None;
        }
        let h = node::header_at(g, c).ok()?;
        if h.status != self.leaf.status() || h.info_bits & INFO_MIN_REC != 0 {
            return None;
        }
        // A fixed-width key compares flattened (its bytes at fixed offsets, no walk of the
        // record's extra bytes), as the page search does.
        let cmp = match self.leaf.flat_key(k) {
            Some(flat) => flat.compare(g, guess.origin),
            None => self.leaf.compare(k, g, guess.origin, 0),
        };
        match cmp {
            Ok((std::cmp::Ordering::Equal, m)) if m == k.len() => Some(()),
            _ => None,
        }
    }
}
