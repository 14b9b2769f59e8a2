use super::*;
use crate::CountingPage;
use crate::record::{Column, ColumnType, INFO_MIN_REC, RecordBuf, Value};

fn layout() -> RecordLayout {
    RecordLayout::secondary(vec![
        Column::new(ColumnType::U32),
        Column::nullable(ColumnType::Var(200)),
    ])
    .unwrap()
}

fn rec(l: &RecordLayout, k: u32, len: usize) -> RecordBuf {
    l.encode(&[Value::UInt(u64::from(k)), Value::Bytes(vec![b'v'; len])])
        .unwrap()
}

fn key(l: &RecordLayout, k: u32) -> SearchKey {
    l.search_key(&[Value::UInt(u64::from(k))]).unwrap()
}

fn keys(page: &[u8], l: &RecordLayout) -> Vec<u32> {
    records(page)
        .map(|c| match l.decode(page, c.unwrap().origin()).unwrap()[0] {
            Value::UInt(k) => k as u32,
            ref v => panic!("unexpected {v:?}"),
        })
        .collect()
}

fn fresh(size: usize) -> Vec<u8> {
    let mut page = vec![0u8; size];
    init(&mut page, 7, 0).unwrap();
    page
}

#[test]
fn init_writes_innodb_compact_infimum_and_supremum() {
    let page = fresh(16384);
    let mut want = vec![0x01, 0x00, 0x02, 0x00, 0x0d];
    want.extend_from_slice(b"infimum\0");
    want.extend_from_slice(&[0x01, 0x00, 0x0b, 0x00, 0x00]);
    want.extend_from_slice(b"supremum");
    assert_eq!(&page[94..120], &want[..]);
    let h = minnow_page::index::IndexHeader::read(&page).unwrap();
    assert_eq!(
        (h.n_dir_slots, h.heap_top, h.n_heap, h.compact),
        (2, 120, 2, true)
    );
    assert_eq!(h.direction, minnow_page::index::Direction::NoDirection);
    assert_eq!((h.index_id, h.level, h.n_recs), (7, 0, 0));
    assert_eq!(h.directory(&page).unwrap(), vec![99, 112]);
    check(&page, &layout()).unwrap();
}

#[test]
fn four_records_give_innodbs_verified_bytes() {
    // A record with 7 extra bytes (one length byte, one null byte, the header), inserted
    // four times ascending: the infimum points at +0x1c and the supremum owns 5, exactly the
    // bytes innodb-facts.md found in real files.
    let l = layout();
    let mut page = fresh(16384);
    for k in 1..=4 {
        let r = rec(&l, k, 3);
        assert_eq!(r.extra(), 7);
        insert(&mut page, &l, &r).unwrap();
    }
    let mut want = vec![0x01, 0x00, 0x02, 0x00, 0x1c];
    want.extend_from_slice(b"infimum\0");
    want.extend_from_slice(&[0x05, 0x00, 0x0b, 0x00, 0x00]);
    want.extend_from_slice(b"supremum");
    assert_eq!(&page[94..120], &want[..]);
    let h = minnow_page::index::IndexHeader::read(&page).unwrap();
    assert_eq!(h.direction, minnow_page::index::Direction::Right);
    assert_eq!((h.n_direction, h.n_recs, h.n_heap), (3, 4, 6));
    check(&page, &l).unwrap();
}

/// `n_recs` and `heap_top` read their one field where the whole header says it is, and a
/// page too short for the header is an error, not a panic.
#[test]
fn single_header_fields_agree_with_the_header() {
    let l = layout();
    let mut page = fresh(16384);
    for k in 0..50 {
        let h = Hdr::read(&page).unwrap();
        assert_eq!(n_recs(&page).unwrap(), usize::from(h.n_recs));
        assert_eq!(heap_top(&page).unwrap(), usize::from(h.heap_top));
        insert(&mut page, &l, &rec(&l, k * 7 % 50, 10 + k as usize)).unwrap();
    }
    assert_eq!(n_recs(&page).unwrap(), 50);
    assert!(n_recs(&page[..PAGE_HEADER + 17]).is_err());
    assert!(heap_top(&page[..PAGE_HEADER + 3]).is_err());
}

#[test]
fn ascending_inserts_split_directory_slots_4_and_5() {
    let l = layout();
    let mut page = fresh(16384);
    for k in 0..200 {
        insert(&mut page, &l, &rec(&l, k, 10)).unwrap();
        check(&page, &l).unwrap();
    }
    let h = minnow_page::index::IndexHeader::read(&page).unwrap();
    // Like the file innodb-facts.md describes: 200 records, 51 slots, N_DIRECTION 199.
    assert_eq!((h.n_recs, h.n_dir_slots, h.n_direction), (200, 51, 199));
    let dir = h.directory(&page).unwrap();
    let owned: Vec<u8> = dir
        .iter()
        .map(|&s| {
            header_at(&page, Cursor::at(usize::from(s)))
                .unwrap()
                .n_owned
        })
        .collect();
    assert_eq!(owned[0], 1);
    assert!(owned[1..50].iter().all(|&n| n == 4));
    assert_eq!(owned[50], 5);
    assert_eq!(keys(&page, &l), (0..200).collect::<Vec<_>>());
}

#[test]
fn search_finds_positions_and_match_counts() {
    let l = layout();
    let mut page = fresh(4096);
    for k in (0..100).map(|k| k * 2) {
        insert(&mut page, &l, &rec(&l, k, 5)).unwrap();
    }
    let r = search(&page, &l, &key(&l, 50)).unwrap();
    assert!(r.exact);
    assert_eq!((r.low_match, r.up_match), (1, 0));
    assert_eq!(
        l.decode(&page, r.cursor.origin()).unwrap()[0],
        Value::UInt(50)
    );
    let r = search(&page, &l, &key(&l, 51)).unwrap();
    assert!(!r.exact);
    assert_eq!(
        l.decode(&page, r.cursor.origin()).unwrap()[0],
        Value::UInt(50)
    );
    assert_eq!(l.decode(&page, r.up.origin()).unwrap()[0], Value::UInt(52));
    let r = search(&page, &l, &key(&l, 1000)).unwrap();
    assert!(r.up.is_supremum());
    // The empty key matches every record: the cursor ends on the last one.
    let r = search(&page, &l, &l.search_key(&[]).unwrap()).unwrap();
    assert!(r.up.is_supremum() && r.low_match == 0);
    let full = l
        .search_key(&[Value::UInt(50), Value::Bytes(vec![b'v'; 5])])
        .unwrap();
    let r = search(&page, &l, &full).unwrap();
    assert!(r.exact && r.low_match == 2);
}

#[test]
fn an_insert_is_a_handful_of_small_writes() {
    let l = layout();
    let mut p = CountingPage::new(fresh(16384));
    for k in 0..6 {
        insert(&mut p, &l, &rec(&l, k * 10, 20)).unwrap();
    }
    let r = rec(&l, 35, 20);
    let (calls, written) = (p.calls, p.bytes_written);
    insert(&mut p, &l, &r).unwrap();
    assert!(p.calls - calls <= 4, "{} writes", p.calls - calls);
    assert!(p.bytes_written - written <= r.len() + 2 + 1 + 18);
    // The 9th record in the supremum's group splits the slot: two more small writes.
    let (calls, written) = (p.calls, p.bytes_written);
    insert(&mut p, &l, &rec(&l, 36, 20)).unwrap();
    assert!(p.calls - calls <= 6, "{} writes", p.calls - calls);
    assert!(p.bytes_written - written <= r.len() + 40);
    check(&p.page, &l).unwrap();
}

#[test]
fn deleted_space_is_reused_from_the_free_list() {
    let l = layout();
    let mut page = fresh(4096);
    for k in 0..20 {
        insert(&mut page, &l, &rec(&l, k, 30)).unwrap();
    }
    let found = search(&page, &l, &key(&l, 7)).unwrap();
    let heap_no = header_at(&page, found.cursor).unwrap().heap_no;
    let prev = delete(&mut page, &l, found.cursor).unwrap();
    assert_eq!(l.decode(&page, prev.origin()).unwrap()[0], Value::UInt(6));
    check(&page, &l).unwrap();
    let h = Hdr::read(&page).unwrap();
    assert_eq!(usize::from(h.free), found.cursor.origin());
    assert_eq!(usize::from(h.garbage), rec(&l, 7, 30).len());
    let top = h.heap_top;
    // A shorter record reuses the space and the heap number; the leftover stays garbage.
    let c = insert(&mut page, &l, &rec(&l, 100, 20)).unwrap();
    check(&page, &l).unwrap();
    let h = Hdr::read(&page).unwrap();
    assert_eq!((h.heap_top, h.free, h.garbage), (top, 0, 10));
    assert_eq!(header_at(&page, c).unwrap().heap_no, heap_no);
    reorganize(&mut page, &l).unwrap();
    check(&page, &l).unwrap();
    let h = Hdr::read(&page).unwrap();
    assert_eq!((h.garbage, h.last_insert, h.heap_top), (0, 0, top - 10));
    assert_eq!(keys(&page, &l).len(), 20);
}

#[test]
fn deletes_merge_and_borrow_directory_groups() {
    let l = layout();
    let mut page = fresh(16384);
    for k in 0..60 {
        insert(&mut page, &l, &rec(&l, k, 4)).unwrap();
    }
    // Delete every record, from both ends and the middle, checking all along.
    let order: Vec<u32> = (0..60).map(|i| (i * 37) % 60).collect();
    for (n, k) in order.iter().enumerate() {
        let f = search(&page, &l, &key(&l, *k)).unwrap();
        assert!(f.exact);
        delete(&mut page, &l, f.cursor).unwrap();
        check(&page, &l).unwrap();
        assert_eq!(n_recs(&page).unwrap(), 59 - n);
    }
    assert_eq!(Hdr::read(&page).unwrap().n_slots, 2);
    assert!(delete(&mut page, &l, Cursor::SUPREMUM).is_err());
}

#[test]
fn delete_mark_and_unmark_touch_one_byte() {
    let l = layout();
    let mut p = CountingPage::new(fresh(4096));
    let c = insert(&mut p, &l, &rec(&l, 1, 4)).unwrap();
    let c2 = insert(&mut p, &l, &rec(&l, 2, 4)).unwrap();
    let before = p.calls;
    set_delete_mark(&mut p, c, true).unwrap();
    assert!(header_at(&p.page, c).unwrap().deleted());
    // The page's first mark also clears its NO_DELETE_MARKS flag: two one-byte writes.
    assert_eq!(p.calls - before, 2);
    let before = p.calls;
    set_delete_mark(&mut p, c2, true).unwrap();
    assert_eq!(p.calls - before, 1);
    set_delete_mark(&mut p, c, false).unwrap();
    assert!(!header_at(&p.page, c).unwrap().deleted());
    assert!(set_delete_mark(&mut p, Cursor::INFIMUM, true).is_err());
    check(&p.page, &l).unwrap();
}

/// The NO_DELETE_MARKS flag in PAGE_MAX_TRX_ID's top byte: set on a fresh page, kept by the
/// bound's raises, cleared by a delete-marked insert or a mark, set exactly by a rebuild and
/// when the last record goes; `check` refuses a page that claims it falsely.
#[test]
fn the_no_delete_marks_flag_follows_the_records() {
    let l = layout();
    let mut page = fresh(4096);
    assert!(no_delete_marks(&page).unwrap());
    assert!(raise_max_trx_id(&mut page, 5).unwrap());
    assert_eq!(max_trx_id(&page).unwrap(), 5);
    assert!(no_delete_marks(&page).unwrap());
    for k in 0..10 {
        insert(&mut page, &l, &rec(&l, k, 30)).unwrap();
    }
    assert!(no_delete_marks(&page).unwrap());
    let mut marked = rec(&l, 50, 30);
    marked.set_info_bits(crate::record::INFO_DELETED);
    let c = insert(&mut page, &l, &marked).unwrap();
    assert!(!no_delete_marks(&page).unwrap());
    check(&page, &l).unwrap();
    reorganize(&mut page, &l).unwrap();
    assert!(
        !no_delete_marks(&page).unwrap(),
        "a rebuild keeps a marked record"
    );
    let c = search(&page, &l, &key(&l, 50))
        .map(|f| f.cursor)
        .unwrap_or(c);
    set_delete_mark(&mut page, c, false).unwrap();
    assert!(
        !no_delete_marks(&page).unwrap(),
        "unmarking does not know the others"
    );
    reorganize(&mut page, &l).unwrap();
    assert!(
        no_delete_marks(&page).unwrap(),
        "a rebuild without marks sets it"
    );
    assert_eq!(max_trx_id(&page).unwrap(), 5);
    check(&page, &l).unwrap();
    // A false claim is corruption.
    let c = search(&page, &l, &key(&l, 3)).unwrap().cursor;
    let at = c.origin() - 5;
    page[at] |= crate::record::INFO_DELETED;
    assert!(check(&page, &l).is_err());
    page[at] &= !crate::record::INFO_DELETED;
    set_delete_mark(&mut page, c, true).unwrap();
    check(&page, &l).unwrap();
    // The last record gone: no mark left.
    while let Some(c) = records(&page).next() {
        delete(&mut page, &l, c.unwrap()).unwrap();
    }
    assert!(no_delete_marks(&page).unwrap());
    check(&page, &l).unwrap();
}

#[test]
fn duplicates_and_wrong_kinds_are_refused() {
    let l = layout();
    let mut page = fresh(4096);
    insert(&mut page, &l, &rec(&l, 1, 4)).unwrap();
    assert!(matches!(
        insert(&mut page, &l, &rec(&l, 1, 4)),
        Err(NodeError::Duplicate { .. })
    ));
    let np = l.node_ptr();
    assert!(matches!(
        insert(
            &mut page,
            &np,
            &np.encode(&[Value::UInt(3), Value::Null, Value::UInt(9)])
                .unwrap()
        ),
        Err(NodeError::WrongKind { .. })
    ));
}

#[test]
fn node_pointer_pages_with_min_rec() {
    let l = layout().node_ptr();
    let mut page = vec![0u8; 8192];
    init(&mut page, 7, 1).unwrap();
    let mut first = l
        .encode(&[Value::UInt(50), Value::Null, Value::UInt(10)])
        .unwrap();
    first.set_info_bits(INFO_MIN_REC);
    insert(&mut page, &l, &first).unwrap();
    for (k, child) in [(60u64, 11u64), (70, 12)] {
        let r = l
            .encode(&[Value::UInt(k), Value::Null, Value::UInt(child)])
            .unwrap();
        insert(&mut page, &l, &r).unwrap();
    }
    check(&page, &l).unwrap();
    // A key below the MIN_REC record still lands on it: its child covers everything left.
    let child = |k: u64| {
        let f = search(&page, &l, &l.search_key(&[Value::UInt(k)]).unwrap()).unwrap();
        l.decode(&page, f.cursor.origin()).unwrap()[2].clone()
    };
    assert_eq!(child(1), Value::UInt(10));
    assert_eq!(child(65), Value::UInt(11));
    assert_eq!(child(99), Value::UInt(12));
}

fn load(size: usize, keys: impl Iterator<Item = u32>, len: usize) -> (Vec<u8>, usize) {
    let l = layout();
    let mut page = fresh(size);
    let mut n = 0;
    for k in keys {
        let r = rec(&l, k, len);
        if !fits(&page, &l, r.len()).unwrap() {
            break;
        }
        insert(&mut page, &l, &r).unwrap();
        n += 1;
    }
    (page, n)
}

#[test]
fn ascending_load_fills_the_page_and_splits_at_the_insert_point() {
    let l = layout();
    for size in [4096, 16384, 65536] {
        let (page, n) = load(size, 0.., 60);
        let fill = fill_factor(&page).unwrap();
        assert!(fill > 0.9, "{size}: fill {fill}");
        check(&page, &l).unwrap();
        let last = search(&page, &l, &key(&l, n as u32)).unwrap().cursor;
        let sp = split_point(&page, &l, last, 70).unwrap();
        assert_eq!(
            sp,
            SplitPoint {
                at: SplitAt::NewRecord,
                kind: SplitKind::Ascending
            }
        );
    }
}

#[test]
fn descending_load_splits_at_the_insert_point() {
    let l = layout();
    let (page, n) = load(4096, (0..1000).rev(), 60);
    assert!(fill_factor(&page).unwrap() > 0.9);
    let low = 1000 - n as u32;
    let at = search(&page, &l, &key(&l, low - 1)).unwrap().cursor;
    assert!(at.is_infimum());
    let sp = split_point(&page, &l, at, 70).unwrap();
    assert_eq!(sp.kind, SplitKind::Descending);
    let first = next(&page, Cursor::INFIMUM).unwrap();
    assert_eq!(sp.at, SplitAt::Record(first));
}

#[test]
fn random_inserts_split_in_the_middle_and_records_move() {
    let l = layout();
    let ks = (0..1000u32).map(|i| i.wrapping_mul(2_654_435_761) % 100_000);
    let (mut page, n) = load(4096, ks.clone(), 60);
    let all = keys(&page, &l);
    let at = search(&page, &l, &key(&l, 50_001)).unwrap().cursor;
    let sp = split_point(&page, &l, at, 70).unwrap();
    assert_eq!(sp.kind, SplitKind::Middle);
    let SplitAt::Record(first_right) = sp.at else {
        panic!("expected a record split point, got {sp:?}");
    };
    let mut right = fresh(4096);
    move_records_to(&mut page, &mut right, &l, first_right).unwrap();
    check(&page, &l).unwrap();
    check(&right, &l).unwrap();
    let (left_keys, right_keys) = (keys(&page, &l), keys(&right, &l));
    assert!(left_keys.len().abs_diff(right_keys.len()) <= 2, "{n}");
    assert_eq!([left_keys.clone(), right_keys.clone()].concat(), all);
    // Merge back: the right page's records move to the end of the left page.
    move_records_to(&mut right, &mut page, &l, Cursor::INFIMUM).unwrap();
    assert_eq!(keys(&page, &l), all);
    assert!(keys(&right, &l).is_empty());
    // And the head of a page moves to another with move_records_before_to.
    let mid = search(&page, &l, &key(&l, right_keys[0])).unwrap().cursor;
    move_records_before_to(&mut page, &mut right, &l, mid).unwrap();
    assert_eq!(keys(&right, &l), left_keys);
    assert_eq!(keys(&page, &l), right_keys);
    check(&page, &l).unwrap();
    check(&right, &l).unwrap();
}

#[test]
fn moves_that_do_not_fit_change_nothing() {
    let l = layout();
    let (mut a, _) = load(4096, 0.., 60);
    let (mut b, _) = load(4096, 10_000.., 60);
    let (a0, b0) = (a.clone(), b.clone());
    assert!(matches!(
        move_records_to(&mut a, &mut b, &l, Cursor::INFIMUM),
        Err(NodeError::PageFull { .. })
    ));
    assert_eq!((a, b), (a0, b0));
}

#[test]
fn a_full_page_reports_page_full() {
    let l = layout();
    let (mut page, n) = load(4096, 0.., 60);
    let err = insert(&mut page, &l, &rec(&l, n as u32 + 5, 60)).unwrap_err();
    assert!(matches!(err, NodeError::PageFull { .. }));
    check(&page, &l).unwrap();
    assert!(max_record_len(4096) > 1900 && max_record_len(4096) < 2000);
    let big = RecordLayout::secondary(vec![Column::new(ColumnType::Var(3000))]).unwrap();
    let mut empty = fresh(4096);
    let r = big.encode(&[Value::Bytes(vec![0; 2500])]).unwrap();
    assert!(matches!(
        insert_at(&mut empty, &big, Cursor::INFIMUM, &r),
        Err(NodeError::RecordTooBig { .. })
    ));
}

/// A clustered leaf layout with a key of `key_len` bytes.
fn clustered(key_len: u16) -> RecordLayout {
    RecordLayout::clustered(
        vec![Column::new(ColumnType::Var(key_len))],
        vec![Column::nullable(ColumnType::Var(200))],
    )
    .unwrap()
}

/// A clustered record of key `k` repeated `key_len` times, trx id 1, no roll pointer.
fn clustered_rec(l: &RecordLayout, k: u8, key_len: usize) -> RecordBuf {
    l.encode(&[
        Value::Bytes(vec![k; key_len]),
        Value::trx_id(1),
        Value::roll_ptr(0),
        Value::Bytes(vec![b'v'; 20]),
    ])
    .unwrap()
}

/// A delete-mark stamp writes the mark and the system columns as one write where the key
/// between them is short, as two where it is long; both leave the same record, and the
/// stamp without a mark change is the system columns alone.
#[test]
fn a_short_keys_mark_and_system_columns_are_one_write() {
    for (key_len, writes) in [(24usize, 1usize), (60, 2)] {
        let l = clustered(key_len as u16);
        let mut p = CountingPage::new(fresh(16384));
        for k in 1..=5u8 {
            insert(&mut p, &l, &clustered_rec(&l, k, key_len)).unwrap();
        }
        let k = l.search_key(&[Value::Bytes(vec![3; key_len])]).unwrap();
        let at = search(&p.page, &l, &k).unwrap().cursor;
        // The page's "no delete marks" flag goes at the first mark: mark once to clear it.
        let other = l.search_key(&[Value::Bytes(vec![4; key_len])]).unwrap();
        let other = search(&p.page, &l, &other).unwrap().cursor;
        stamp_sys(&mut p, &l, other, 9, 1 << 40, Some(true)).unwrap();

        let calls = p.calls;
        stamp_sys(&mut p, &l, at, 9, 1 << 41, Some(true)).unwrap();
        assert_eq!(p.calls - calls, writes, "key of {key_len} bytes");
        let v = l.decode(&p.page, at.origin()).unwrap();
        assert!(header_at(&p.page, at).unwrap().deleted());
        assert_eq!(v[0], Value::Bytes(vec![3; key_len]));
        assert_eq!(v[1], Value::trx_id(9));
        assert_eq!(v[2], Value::roll_ptr(1 << 41));
        assert_eq!(v[3], Value::Bytes(vec![b'v'; 20]));

        // Cleared again (a rollback's stamp), then a stamp that keeps the mark.
        stamp_sys(&mut p, &l, at, 1, 0, Some(false)).unwrap();
        assert!(!header_at(&p.page, at).unwrap().deleted());
        let calls = p.calls;
        stamp_sys(&mut p, &l, at, 10, 1 << 42, None).unwrap();
        assert_eq!(p.calls - calls, 1);
        assert!(!header_at(&p.page, at).unwrap().deleted());
        assert_eq!(
            l.decode(&p.page, at.origin()).unwrap()[1],
            Value::trx_id(10)
        );
        check(&p.page, &l).unwrap();
    }
}
