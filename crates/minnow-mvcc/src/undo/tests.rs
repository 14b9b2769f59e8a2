//! The undo store on a real buffer pool: appends, spanning records, commit, history,
//! reopening with active logs, the persisted id mark, and garbage pages.

use minnow_buf::{BufConfig, BufferPool};
use minnow_page::{PageId, PageSize};

use crate::error::MvccError;
use crate::roll_ptr::RollPtr;
use crate::trx_sys::{NewRecord, TRX_ID_MARGIN, TrxSys};
use crate::undo::record::{LogState, UndoFields, UndoKind};

const SPACE: u32 = 1;

fn pool(dir: &std::path::Path) -> BufferPool {
    BufferPool::create_scratch(dir, BufConfig::with_frames(256, PageSize::K4), 1).unwrap()
}

pub(crate) fn rec(kind: UndoKind, key: u8, payload: usize) -> NewRecord<'static> {
    NewRecord {
        kind,
        old_deleted: false,
        index_id: 9,
        old_trx_id: 3,
        old_roll_ptr: RollPtr::NONE,
        fields: std::borrow::Cow::Owned(UndoFields::from_fields(&[
            Some(vec![key]),
            None,
            Some(vec![key; payload]),
        ])),
    }
}

#[test]
fn records_append_read_back_and_span_pages() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path());
    let (sys, _) = TrxSys::create(&pool, SPACE, 1).unwrap();
    let id = sys.assign_id(&pool).unwrap();
    assert!(sys.is_active(id));
    let mut log = sys.begin_log(&pool, id).unwrap();
    let a = sys
        .append(&pool, &mut log, rec(UndoKind::Insert, 1, 10))
        .unwrap();
    assert!(a.insert);
    // 10 000 bytes: spans three 4 KiB undo pages.
    let b = sys
        .append(&pool, &mut log, rec(UndoKind::Update, 2, 10_000))
        .unwrap();
    assert!(!b.insert);
    let c = sys
        .append(&pool, &mut log, rec(UndoKind::DeleteMark, 3, 5))
        .unwrap();
    assert_ne!(b.page, c.page, "the big record moved the tail");
    let rb = sys.read(&pool, b).unwrap();
    assert_eq!((rb.kind, rb.undo_no, rb.index_id), (UndoKind::Update, 1, 9));
    assert_eq!(rb.fields[2].as_deref(), Some(&[2u8; 10_000][..]));
    let rc = sys.read(&pool, c).unwrap();
    assert_eq!(
        rc.prev.map(|p| (p.page, p.offset)),
        Some((b.page, b.offset))
    );
    // The header as b left it, the record that made the log an update log: c's append did
    // not write it (`undo::chain`); open would walk from b to c.
    let h = sys.header(&pool, &log).unwrap();
    assert_eq!(
        (h.state, h.update, h.n_recs, h.trx_id),
        (LogState::Active, true, 2, id)
    );
    assert_eq!(h.last.map(|l| (l.page, l.offset)), Some((b.page, b.offset)));

    // Rollback to savepoint 1 pops the two newest records.
    let mut seen = Vec::new();
    while let Some((ptr, r)) = sys.last_record(&pool, &log, 1).unwrap() {
        seen.push(ptr);
        sys.pop(&pool, &mut log, &r).unwrap();
    }
    assert_eq!(seen, [c, b]);
    assert_eq!(sys.last_record(&pool, &log, 0).unwrap().unwrap().0, a);

    sys.commit(&pool, &log).unwrap();
    assert!(!sys.is_active(id));
    let h = sys.header(&pool, &log).unwrap();
    assert_eq!(h.state, LogState::Committed);
    assert!(h.trx_no > id);
    // Exact from the commit on (purge reads it).
    assert_eq!(
        (h.last.map(|l| (l.page, l.offset)), h.n_recs),
        (Some((a.page, a.offset)), 3)
    );
    let hist = sys.history(&pool).unwrap();
    assert_eq!(hist.len(), 1);
    assert_eq!(sys.status().history_len, 1);
}

#[test]
fn insert_only_logs_stay_out_of_the_history() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path());
    let (sys, _) = TrxSys::create(&pool, SPACE, 1).unwrap();
    for i in 0..3u8 {
        let id = sys.assign_id(&pool).unwrap();
        let mut log = sys.begin_log(&pool, id).unwrap();
        sys.append(&pool, &mut log, rec(UndoKind::Insert, i, 1))
            .unwrap();
        sys.commit(&pool, &log).unwrap();
    }
    assert_eq!(sys.history(&pool).unwrap().len(), 0);
    // Two update logs join in commit order.
    let mut ids = Vec::new();
    for i in 0..2u8 {
        let id = sys.assign_id(&pool).unwrap();
        let mut log = sys.begin_log(&pool, id).unwrap();
        sys.append(&pool, &mut log, rec(UndoKind::Update, i, 1))
            .unwrap();
        sys.commit(&pool, &log).unwrap();
        ids.push(id);
    }
    let hist: Vec<u64> = sys
        .history(&pool)
        .unwrap()
        .iter()
        .map(|(_, h)| h.trx_id)
        .collect();
    assert_eq!(hist, ids);
}

#[test]
fn open_finds_active_logs_and_never_reuses_ids() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path());
    let (sys, _) = TrxSys::create(&pool, SPACE, 1).unwrap();
    let mut last = 0;
    for _ in 0..TRX_ID_MARGIN + 10 {
        last = sys.assign_id(&pool).unwrap();
        sys.forget(last);
    }
    let id = sys.assign_id(&pool).unwrap();
    let mut open_log = sys.begin_log(&pool, id).unwrap();
    sys.append(&pool, &mut open_log, rec(UndoKind::Insert, 7, 3))
        .unwrap();
    let done = sys.assign_id(&pool).unwrap();
    let log = sys.begin_log(&pool, done).unwrap();
    sys.commit(&pool, &log).unwrap();

    let (again, active) = TrxSys::open(&pool, sys.page()).unwrap();
    assert_eq!(active.len(), 1);
    assert_eq!(active[0].trx_id, id);
    assert_eq!(active[0].n_recs, 1);
    assert!(again.is_active(id));
    let fresh = again.assign_id(&pool).unwrap();
    assert!(
        fresh > last && fresh > done,
        "{fresh} must be above {last} and {done}"
    );
    assert_eq!(again.slots(), sys.slots());
}

#[test]
fn a_garbage_undo_page_is_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path());
    let (sys, _) = TrxSys::create(&pool, SPACE, 1).unwrap();
    let id = sys.assign_id(&pool).unwrap();
    let mut log = sys.begin_log(&pool, id).unwrap();
    let p = sys
        .append(&pool, &mut log, rec(UndoKind::Update, 1, 20))
        .unwrap();
    // Scribble over the record's length and kind.
    let mut mtr = pool.mtr().unwrap();
    let h = mtr.get_write(PageId::new(SPACE, p.page)).unwrap();
    mtr.write(h, usize::from(p.offset), &[0xFF, 0xFF, 0xFF, 0xF0, 0x77])
        .unwrap();
    mtr.commit().unwrap();
    match sys.read(&pool, p) {
        Err(MvccError::CorruptUndo { page, .. }) => assert_eq!(page.page_no, p.page),
        other => panic!("expected a corrupt-undo error, got {other:?}"),
    }
    // A roll pointer into a page that is not an undo page (the TRX_SYS page).
    let wrong = RollPtr {
        page: sys.page().page_no,
        ..p
    };
    assert!(matches!(
        sys.read(&pool, wrong),
        Err(MvccError::CorruptUndo { .. })
    ));
    // An offset outside the used bytes.
    let past = RollPtr { offset: 4000, ..p };
    assert!(matches!(
        sys.read(&pool, past),
        Err(MvccError::CorruptUndo { .. })
    ));
    // Random bytes over a whole undo page never panic.
    for seed in 0..50u32 {
        let mut mtr = pool.mtr().unwrap();
        let h = mtr.get_write(PageId::new(SPACE, p.page)).unwrap();
        let junk: Vec<u8> = (0..4000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761).wrapping_add(seed * 97) >> 13) as u8)
            .collect();
        mtr.write(h, 40, &junk[..4000]).unwrap();
        mtr.commit().unwrap();
        let _ = sys.read(&pool, p);
        let _ = sys.header(&pool, &log);
    }
}

#[test]
fn a_page_that_is_not_trx_sys_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path());
    let (sys, _) = TrxSys::create(&pool, SPACE, 1).unwrap();
    let undo_page = PageId::new(SPACE, sys.page().page_no + 1);
    assert!(matches!(
        TrxSys::open(&pool, undo_page),
        Err(MvccError::CorruptTrxSys { .. })
    ));
}

#[test]
fn walking_each_undo_page_accounts_for_every_byte() {
    use crate::undo::record::UndoAddr;
    use crate::undo::walk::{Content, walk_page};
    let addr = |p: RollPtr| UndoAddr {
        page: p.page,
        offset: p.offset,
    };
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path());
    let (sys, _) = TrxSys::create(&pool, SPACE, 1).unwrap();
    let id = sys.assign_id(&pool).unwrap();
    let mut log = sys.begin_log(&pool, id).unwrap();
    let a = sys
        .append(&pool, &mut log, rec(UndoKind::Insert, 1, 10))
        .unwrap();
    // 10 000 bytes: starts on the first page and ends two pages later.
    let b = sys
        .append(&pool, &mut log, rec(UndoKind::Update, 2, 10_000))
        .unwrap();
    let c = sys
        .append(&pool, &mut log, rec(UndoKind::DeleteMark, 3, 5))
        .unwrap();
    let check = sys.check(&pool).unwrap();
    assert_eq!(check.pages.len(), 3);
    let (mut headers, mut records, mut rests) = (0, Vec::new(), 0);
    for (i, &page) in check.pages.iter().enumerate() {
        let w = walk_page(&pool, sys.page(), page).unwrap();
        assert!(w.error.is_none(), "{:?}", w.error);
        assert_eq!(w.position, Some(i as u32));
        // The stretches tile 44..FREE without gaps.
        let mut at = 44;
        for e in &w.entries {
            assert_eq!(e.start, at);
            at = e.end;
            match &e.content {
                Content::Header(h) => {
                    headers += 1;
                    // As b's append left it (c's did not write it: `undo::chain`).
                    assert_eq!((h.trx_id, h.n_recs), (id, 2));
                }
                Content::Record(r) => records.push((e.entry, r.undo_no, e.continues.is_some())),
                Content::Rest { kind } => {
                    rests += 1;
                    assert_eq!((*kind, e.entry), (2, addr(b)));
                }
                other => panic!("{other:?}"),
            }
        }
        let g = pool.get_read(PageId::new(SPACE, page)).unwrap();
        let free = u16::from_be_bytes([g[42], g[43]]);
        assert_eq!(at, free, "page {page}");
    }
    assert_eq!(headers, 1);
    assert_eq!(rests, 2);
    assert_eq!(
        records,
        [(addr(a), 0, false), (addr(b), 1, true), (addr(c), 2, false)]
    );
    // A page that is not on the stream is not walked.
    let w = walk_page(&pool, sys.page(), 2).unwrap();
    assert_eq!(w.position, None);
    assert!(w.entries.is_empty());
}
