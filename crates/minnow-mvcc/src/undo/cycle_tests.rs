//! Walks over the undo store's on-disk links end on a corrupt file: an undo page chain whose
//! NEXT loops back (trimming the stream, walking it to a page), a history list that loops (listing it, and purge
//! taking logs off its head). Each case writes the bad link through a mini-transaction and
//! runs the walk in a thread with a time limit, so a walk that loops fails the test instead
//! of hanging it.

use std::sync::Arc;
use std::time::Duration;

use minnow_buf::{BufConfig, BufferPool};
use minnow_page::{PageId, PageSize, bytes, walk};

use super::tests::rec;
use crate::error::MvccError;
use crate::trx_sys::TrxSys;
use crate::trx_sys::page::rseg;
use crate::undo::record::{UndoAddr, UndoKind, hdr};
use crate::undo::{UNDO_DATA, UNDO_FREE, UNDO_NEXT};

const SPACE: u32 = 1;

/// Runs `f` in a thread; fails the test if it has not returned within 60 seconds.
fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    walk::within(Duration::from_secs(60), f)
        .unwrap_or_else(|| panic!("{what} did not end within 60 s: it loops"))
}

fn setup() -> (tempfile::TempDir, Arc<BufferPool>, TrxSys) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = BufConfig::with_frames(256, PageSize::K4);
    let pool = Arc::new(BufferPool::create_scratch(dir.path(), cfg, SPACE).unwrap());
    let (sys, _) = TrxSys::create(&pool, SPACE, 1).unwrap();
    (dir, pool, sys)
}

/// Commits one transaction with one record of `kind`; returns its log header's address.
fn commit_one(pool: &BufferPool, sys: &TrxSys, kind: UndoKind, payload: usize) -> UndoAddr {
    let id = sys.assign_id(pool).unwrap();
    let mut log = sys.begin_log(pool, id).unwrap();
    sys.append(pool, &mut log, rec(kind, 1, payload)).unwrap();
    sys.commit(pool, &log).unwrap();
    log.header
}

/// Writes `data` at `at` of page `no` in one mini-transaction.
fn poke(pool: &BufferPool, no: u32, at: usize, data: &[u8]) {
    let mut mtr = pool.mtr().unwrap();
    let h = mtr.get_write(PageId::new(SPACE, no)).unwrap();
    mtr.write(h, at, data).unwrap();
    mtr.commit().unwrap();
}

fn addr_bytes(a: UndoAddr) -> Vec<u8> {
    [&a.page.to_be_bytes()[..], &a.offset.to_be_bytes()].concat()
}

/// An undo chain whose second page holds no bytes and is its own NEXT; returns that page.
fn looped_chain() -> (tempfile::TempDir, Arc<BufferPool>, Arc<TrxSys>, u32) {
    let (d, pool, sys) = setup();
    // An insert-only log (dead once committed) whose record spans three pages, and a log
    // after it so that the record's pages are not the stream's last.
    let first = commit_one(&pool, &sys, UndoKind::Insert, 10_000);
    commit_one(&pool, &sys, UndoKind::Insert, 3_000);
    let p1 = first.page;
    let p2 = bytes::read_u32(&pool.get_read(PageId::new(SPACE, p1)).unwrap(), UNDO_NEXT).unwrap();
    // The second page holds no bytes and is its own NEXT: stepping over the record from the
    // first page never runs out of pages and never gets a byte further.
    poke(&pool, p2, UNDO_FREE, &(UNDO_DATA as u16).to_be_bytes());
    poke(&pool, p2, UNDO_NEXT, &p2.to_be_bytes());
    (d, pool, Arc::new(sys), p2)
}

#[test]
fn trimming_an_undo_chain_that_loops_through_an_empty_page_ends() {
    let (_d, pool, sys, p2) = looped_chain();
    let (p, s) = (pool.clone(), sys.clone());
    match within("the trim", move || s.trim(&p)) {
        Err(MvccError::CorruptUndo { page, offset, .. }) => {
            assert_eq!((page, offset), (PageId::new(SPACE, p2), UNDO_NEXT));
        }
        other => panic!("expected CorruptUndo, got {other:?}"),
    }
}

#[test]
fn walking_to_an_undo_page_through_a_chain_that_loops_ends() {
    let (_d, pool, sys, p2) = looped_chain();
    // PAGES, which would end the walk too, now claims every page number there is.
    let page = sys.page();
    let header = sys.rseg_pages()[0].page_no;
    poke(&pool, header, rseg::PAGES, &u32::MAX.to_be_bytes());
    let p = pool.clone();
    let walk = within("the walk", move || {
        super::walk::walk_page(&*p, page, u32::MAX - 1).unwrap()
    });
    match walk.error {
        Some(MvccError::CorruptUndo { page, offset, .. }) => {
            assert_eq!((page, offset), (PageId::new(SPACE, p2), UNDO_NEXT));
        }
        other => panic!("expected CorruptUndo, got {other:?}"),
    }
}

/// Two committed update logs, the newer one's history link back to the older one, and a
/// history length far above the logs there are (so the length alone does not end a walk);
/// the transaction system reopened on that.
fn looped_history() -> (tempfile::TempDir, Arc<BufferPool>, Arc<TrxSys>) {
    let (d, pool, sys) = setup();
    let a = commit_one(&pool, &sys, UndoKind::Update, 10);
    let b = commit_one(&pool, &sys, UndoKind::Update, 10);
    assert_eq!(sys.history(&pool).unwrap().len(), 2);
    poke(
        &pool,
        b.page,
        usize::from(b.offset) + hdr::HISTORY_NEXT,
        &addr_bytes(a),
    );
    let page = sys.page();
    poke(
        &pool,
        sys.rseg_pages()[0].page_no,
        rseg::HIST_LEN,
        &(u64::MAX / 2).to_be_bytes(),
    );
    let (sys, _) = TrxSys::open(&pool, page).unwrap();
    (d, pool, Arc::new(sys))
}

#[test]
fn listing_a_history_list_that_loops_ends() {
    let (_d, pool, sys) = looped_history();
    let page = sys.rseg_pages()[0];
    let (p, s) = (pool.clone(), sys.clone());
    match within("listing the history", move || s.history(&p)) {
        Err(MvccError::CorruptTrxSys { page: at, what }) => {
            assert_eq!(at, page);
            assert!(what.contains("cycle"), "{what}");
        }
        other => panic!("expected CorruptTrxSys, got {other:?}"),
    }
}

#[test]
fn purging_a_history_list_that_loops_ends() {
    let (_d, pool, sys) = looped_history();
    // Purge takes logs off the head, one by one, until the head is a log it purged already.
    let (p, s) = (pool.clone(), sys.clone());
    let (taken, e) = within("purging the history", move || {
        let mut taken = 0;
        loop {
            match s.history_head(&p) {
                Ok(Some((at, _))) => {
                    s.finish_purge(&p, at).unwrap();
                    taken += 1;
                }
                Ok(None) => panic!("the history ended after {taken} logs"),
                Err(e) => return (taken, e),
            }
        }
    });
    assert_eq!(taken, 2);
    match e {
        MvccError::CorruptTrxSys { what, .. } => assert!(what.contains("Purged"), "{what}"),
        other => panic!("expected CorruptTrxSys, got {other}"),
    }
}
