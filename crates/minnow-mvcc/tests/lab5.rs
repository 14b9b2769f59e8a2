//! Lab 5: MVCC visibility (docs/labs/05-mvcc.md).
//!
//! First the read view's decision on its own (`ReadView::visible`), then the view the
//! transaction system hands out, then the undo store a reader follows when the newest
//! version is not visible: an undo record read back through its roll pointer (`read_record`,
//! `gather`), a record that spans undo pages, a roll pointer chain walked to its end, and the
//! typed errors of undo that is not where a roll pointer says.

use minnow_buf::{BufConfig, BufferPool};
use minnow_mvcc::undo::{self, record::UndoAddr};
use minnow_mvcc::{
    MvccError, NewRecord, ReadView, RollPtr, TrxSys, UndoFields, UndoKind, UndoLog, UndoRecord,
};
use minnow_page::PageSize;

/// The view of the module docs' picture: next id 48, ids 42 and 45 active.
fn picture(creator: u64) -> ReadView {
    ReadView::new(48, creator, vec![42, 45])
}

fn visible(v: &ReadView, id: u64) -> bool {
    v.visible(id).expect("the visibility check is written")
}

#[test]
fn ids_below_the_up_limit_are_visible() {
    let v = picture(0);
    assert_eq!(v.up_limit(), 42);
    for id in [1, 2, 40, 41] {
        assert!(visible(&v, id), "{id} committed before the view");
    }
}

#[test]
fn ids_at_or_above_the_low_limit_are_invisible() {
    let v = picture(0);
    for id in [48, 49, 1000, u64::MAX >> 16] {
        assert!(!visible(&v, id), "{id} started after the view");
    }
}

#[test]
fn between_the_limits_only_the_active_ids_are_invisible() {
    let v = picture(0);
    for id in [43, 44, 46, 47] {
        assert!(visible(&v, id), "{id} committed before the view");
    }
    for id in [42, 45] {
        assert!(!visible(&v, id), "{id} was active when the view was taken");
    }
}

#[test]
fn the_creators_own_changes_are_visible() {
    // An active creator is in the list of active ids, yet sees its own changes.
    let mine = picture(45);
    assert!(visible(&mine, 45));
    assert!(!visible(&mine, 42));
    // A transaction that writes after taking its view gets an id at or above the low limit:
    // its own changes are still visible, so the creator is checked before the low limit.
    let mut late = picture(0);
    late.set_creator(50);
    assert!(visible(&late, 50));
    assert!(!visible(&late, 49));
}

#[test]
fn with_no_active_ids_the_up_limit_is_the_low_limit() {
    let v = ReadView::new(10, 0, vec![]);
    assert_eq!(v.up_limit(), 10);
    assert!(visible(&v, 9));
    assert!(visible(&v, 0), "id 0: a bulk-loaded row");
    assert!(!visible(&v, 10));
}

#[test]
fn a_long_active_list_agrees_with_the_rule() {
    // Every third id of 1000..4000 active, next id 4000, creator 2002 (active).
    let ids: Vec<u64> = (1000..4000).step_by(3).collect();
    let v = ReadView::new(4000, 2002, ids.clone());
    for id in 900..4100 {
        let want = id < 1000 || id == 2002 || (id < 4000 && !ids.contains(&id));
        assert_eq!(visible(&v, id), want, "id {id}");
        assert_eq!(v.changes_visible(id), want, "changes_visible({id})");
    }
}

fn pool(dir: &std::path::Path) -> BufferPool {
    BufferPool::create_scratch(dir, BufConfig::with_frames(256, PageSize::K4), 1).unwrap()
}

#[test]
fn views_of_the_transaction_system_see_what_had_committed() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path());
    let (sys, _) = TrxSys::create(&pool, 1, 1).unwrap();
    let a = sys.assign_id(&pool).unwrap();
    let b = sys.assign_id(&pool).unwrap();
    sys.forget(a);
    let v = sys.open_view(b);
    let later = sys.assign_id(&pool).unwrap();
    assert!(visible(v.view(), a), "a had ended");
    assert!(visible(v.view(), b), "b's own view");
    assert!(!visible(v.view(), later), "started after the view");
    let other = sys.open_view(0);
    assert!(!visible(other.view(), b), "b is still active");
    assert!(!visible(other.view(), later), "so is the later one");
}

/// A transaction system on a scratch pool, with one transaction's undo log begun.
struct Undo {
    pool: BufferPool,
    sys: TrxSys,
    log: UndoLog,
    _dir: tempfile::TempDir,
}

impl Undo {
    fn new() -> Undo {
        let dir = tempfile::tempdir().unwrap();
        let pool = pool(dir.path());
        let (sys, _) = TrxSys::create(&pool, 1, 1).unwrap();
        let id = sys.assign_id(&pool).unwrap();
        let log = sys.begin_log(&pool, id).unwrap();
        Undo {
            pool,
            sys,
            log,
            _dir: dir,
        }
    }

    /// Appends `r` to the log: the roll pointer of the version it describes.
    fn append(&mut self, r: NewRecord<'_>) -> RollPtr {
        self.sys.append(&self.pool, &mut self.log, r).unwrap()
    }

    /// The undo record `ptr` names.
    fn read(&self, ptr: RollPtr) -> Result<UndoRecord, MvccError> {
        self.sys.read(&self.pool, ptr)
    }
}

fn rec(
    kind: UndoKind,
    old_trx_id: u64,
    old_roll_ptr: RollPtr,
    payload: usize,
) -> NewRecord<'static> {
    NewRecord {
        kind,
        old_deleted: false,
        index_id: 9,
        old_trx_id,
        old_roll_ptr,
        fields: std::borrow::Cow::Owned(UndoFields::from_fields(&[
            Some(vec![7]),
            None,
            Some(vec![b'x'; payload]),
        ])),
    }
}

#[test]
fn an_undo_record_reads_back_through_its_roll_pointer() {
    let mut u = Undo::new();
    let before = RollPtr::from_u64(0x0000_0123_0045);
    let ptr = u.append(rec(UndoKind::Update, 31, before, 20));
    let r = u.read(ptr).unwrap();
    assert_eq!(
        (r.kind, r.index_id, r.old_trx_id),
        (UndoKind::Update, 9, 31)
    );
    assert_eq!(r.old_roll_ptr, before, "the older version's roll pointer");
    assert_eq!(
        r.fields,
        vec![Some(vec![7]), None, Some(vec![b'x'; 20])],
        "the older version's fields, NULL included"
    );
}

#[test]
fn an_undo_record_that_spans_pages_is_gathered_whole() {
    let mut u = Undo::new();
    // 10 000 bytes on 4 KiB pages: the record continues on two more undo pages.
    let big = u.append(rec(UndoKind::Update, 5, RollPtr::NONE, 10_000));
    let after = u.append(rec(UndoKind::Update, 6, RollPtr::NONE, 3));
    assert_ne!(big.page, after.page, "the big record spans pages");
    let r = u.read(big).unwrap();
    assert_eq!(r.fields[2].as_deref(), Some(&[b'x'; 10_000][..]));
    let next = u.read(after).unwrap();
    assert_eq!(
        next.prev.map(|p| (p.page, p.offset)),
        Some((big.page, big.offset))
    );
}

#[test]
fn a_roll_pointer_chain_is_walked_to_its_insert() {
    let mut u = Undo::new();
    // The row's history: inserted, then updated three times; each update's undo record
    // holds the roll pointer of the version before it.
    let mut ptr = u.append(rec(UndoKind::Insert, 0, RollPtr::NONE, 1));
    for n in 1..=3u64 {
        ptr = u.append(rec(UndoKind::Update, 100 + n, ptr, 40));
    }
    let mut writers = Vec::new();
    let mut steps = 0;
    while !ptr.insert {
        steps += 1;
        assert!(steps <= 10, "the chain must end");
        let r = u.read(ptr).unwrap();
        writers.push(r.old_trx_id);
        ptr = r.old_roll_ptr;
    }
    assert_eq!(writers, [103, 102, 101]);
}

#[test]
fn a_roll_pointer_past_the_used_bytes_is_a_typed_error() {
    let mut u = Undo::new();
    let ptr = u.append(rec(UndoKind::Update, 5, RollPtr::NONE, 10));
    let past = RollPtr {
        offset: 4000,
        ..ptr
    };
    match u.read(past) {
        Err(MvccError::CorruptUndo { page, offset, .. }) => {
            assert_eq!((page.page_no, offset), (ptr.page, 4000));
        }
        other => panic!("expected CorruptUndo at {}:4000, got {other:?}", ptr.page),
    }
}

#[test]
fn gathering_past_the_end_of_the_page_chain_is_a_typed_error() {
    let mut u = Undo::new();
    let ptr = u.append(rec(UndoKind::Update, 5, RollPtr::NONE, 10));
    let at = UndoAddr {
        page: ptr.page,
        offset: ptr.offset,
    };
    let space = u.sys.page().space;
    let head = undo::gather(&u.pool, space, at, 4).unwrap();
    assert_eq!(head.len(), 4, "the record's length field");
    match undo::gather(&u.pool, space, at, 100_000) {
        Err(MvccError::CorruptUndo { found, .. }) => {
            assert_eq!(found, "the end of the undo page chain");
        }
        other => panic!("expected CorruptUndo, got {other:?}"),
    }
}
