//! Fuzz-style tests: random and mutated page bytes must produce errors, never panics, and a
//! page that `check` accepts must stay usable.

use minnow_btree::node::{self, Cursor};
use minnow_btree::record::{Column, ColumnType, RecordLayout, Value};
use proptest::prelude::*;

fn layout() -> RecordLayout {
    RecordLayout::clustered(
        vec![
            Column::new(ColumnType::I64),
            Column::nullable(ColumnType::Var(40)),
        ],
        vec![
            Column::nullable(ColumnType::Var(300)),
            Column::new(ColumnType::Fixed(2)),
        ],
    )
    .unwrap()
}

/// A small deterministic generator (xorshift64*), so cases are cheap to build.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn row(l: &RecordLayout, rng: &mut Rng) -> minnow_btree::record::RecordBuf {
    let k = rng.below(2000) as i64 - 1000;
    let sub = if rng.below(4) == 0 {
        Value::Null
    } else {
        Value::Bytes(vec![b'a'; rng.below(40)])
    };
    let val = if rng.below(5) == 0 {
        Value::Null
    } else {
        Value::Bytes(vec![7; rng.below(300)])
    };
    l.encode(&[
        Value::Int(k),
        sub,
        Value::trx_id(rng.next()),
        Value::roll_ptr(rng.next()),
        val,
        Value::Bytes(vec![1, 2]),
    ])
    .unwrap()
}

/// A valid page with random records, some deleted and delete-marked.
fn valid_page(size: usize, rng: &mut Rng) -> Vec<u8> {
    let l = layout();
    let mut page = vec![0u8; size];
    node::init(&mut page, 9, 0).unwrap();
    for _ in 0..rng.below(120) {
        let _ = node::insert(&mut page, &l, &row(&l, rng));
        if rng.below(4) == 0
            && let Some(Ok(c)) = node::records(&page).nth(rng.below(20))
        {
            if rng.below(2) == 0 {
                node::delete(&mut page, &l, c).unwrap();
            } else {
                node::set_delete_mark(&mut page, c, true).unwrap();
            }
        }
    }
    node::check(&page, &l).unwrap();
    page
}

/// Runs every reader and writer on `page`; none may panic. Returns whether `check` passed.
fn exercise(page: &[u8], rng: &mut Rng) -> bool {
    let l = layout();
    let ok = node::check(page, &l).is_ok();
    let key = l
        .search_key(&[Value::Int(rng.below(2000) as i64 - 1000)])
        .unwrap();
    let found = node::search(page, &l, &key);
    let cursors: Vec<_> = node::records(page).take(200).collect();
    for c in cursors.iter().flatten() {
        let _ = l.decode(page, c.origin());
        let _ = node::next(page, *c);
    }
    for origin in [0, 1, 5, 99, 112, 120, rng.below(page.len() + 10)] {
        let _ = l.decode(page, origin);
        let _ = l.size_of(page, origin);
        let _ = node::header_at(page, Cursor::at(origin));
    }
    let _ = (
        node::free_space(page),
        node::fill_factor(page),
        node::used_bytes(page),
    );
    let _ = node::fits(page, &l, 100);
    let _ = node::fits_after_reorganize(page, 100);
    if let Ok(f) = &found {
        let _ = node::split_point(page, &l, f.cursor, 80);
    }
    // Writers on copies.
    let mut a = page.to_vec();
    let inserted = node::insert(&mut a, &l, &row(&l, rng));
    if let Some(Ok(c)) = cursors.first() {
        let mut b = page.to_vec();
        let _ = node::delete(&mut b, &l, *c);
        let _ = node::set_delete_mark(&mut b, *c, true);
        let mut other = vec![0u8; page.len()];
        node::init(&mut other, 9, 0).unwrap();
        let _ = node::move_records_to(&mut b, &mut other, &l, *c);
    }
    let mut d = page.to_vec();
    let reorganized = node::reorganize(&mut d, &l);
    if ok {
        // A page that passes check must stay valid under every operation.
        assert!(found.is_ok());
        assert!(cursors.iter().all(Result::is_ok));
        reorganized.unwrap();
        node::check(&d, &l).unwrap();
        if inserted.is_ok() {
            node::check(&a, &l).unwrap();
        }
    }
    ok
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_bytes_never_panic(seed in any::<u64>(), size_pick in 0usize..3, header in any::<bool>()) {
        let size = [4096, 8192, 16384][size_pick];
        let mut rng = Rng(seed | 1);
        let mut page: Vec<u8> = (0..size).map(|_| rng.next() as u8).collect();
        if header {
            // Plausible header and infimum/supremum, garbage elsewhere: gets past the first checks.
            let mut fresh = vec![0u8; size];
            node::init(&mut fresh, 1, 0).unwrap();
            page[38..120].copy_from_slice(&fresh[38..120]);
            page[38..40].copy_from_slice(&((rng.below(40) + 2) as u16).to_be_bytes());
            page[40..42].copy_from_slice(&((rng.below(size)) as u16).to_be_bytes());
        }
        prop_assert!(!exercise(&page, &mut rng));
    }

    #[test]
    fn mutated_valid_pages_never_panic(seed in any::<u64>(), flips in 1usize..8, size_pick in 0usize..2) {
        let size = [4096, 16384][size_pick];
        let mut rng = Rng(seed | 1);
        let mut page = valid_page(size, &mut rng);
        prop_assert!(exercise(&page, &mut rng));
        for _ in 0..flips {
            // Mostly hit the interesting part: header, heap and directory.
            let at = match rng.below(3) {
                0 => 38 + rng.below(82),
                1 => size - 8 - rng.below(64),
                _ => rng.below(size),
            };
            page[at] ^= 1 << rng.below(8);
        }
        exercise(&page, &mut rng);
    }
}

#[test]
fn truncated_and_odd_sized_buffers_are_errors() {
    let l = layout();
    let mut rng = Rng(42);
    let page = valid_page(4096, &mut rng);
    for len in [0, 10, 100, 4095, 5000] {
        let mut buf = page.clone();
        buf.resize(len, 0);
        assert!(node::check(&buf, &l).is_err());
        assert!(node::search(&buf, &l, &l.search_key(&[Value::Int(1)]).unwrap()).is_err());
        assert!(node::init(&mut buf, 1, 0).is_err());
    }
}
