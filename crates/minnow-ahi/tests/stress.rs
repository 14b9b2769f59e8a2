//! Concurrency stress with the hash on: writers insert, update and delete keys around a set
//! of stable keys (splitting and merging the hashed pages under the readers), while readers
//! look keys up through the hash. A reader must always find every stable key, and any record
//! it finds must be the record of the key it asked for. Afterwards `check()` passes and every
//! key holds exactly what the writers' own models say.
//!
//! `MINNOW_STRESS_OPS` sets the operations per writer (default 3000; readers do four times as
//! many lookups).

mod common;

use std::collections::BTreeMap;

use common::{Rng, get, row, setup, tagged, warm};
use minnow_ahi::AhiConfig;
use minnow_btree::TreeError;
use minnow_btree::record::Value;

const KEYS: u64 = 6000;
const WRITERS: u64 = 2;
const READERS: u64 = 2;

#[test]
fn readers_through_the_hash_while_writers_split_and_merge() {
    let ops: u64 = std::env::var("MINNOW_STRESS_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    let s = setup(AhiConfig::default());
    // Stable keys: multiples of 3. Writer w owns keys k % 3 == w + 1.
    for k in (0..KEYS).step_by(3) {
        s.tree.insert(&s.pool, &row(k, &tagged(k, 0))).unwrap();
    }
    warm(&s, (0..KEYS).step_by(3), 3, |k| Some(tagged(k, 0)));
    let warmed = s.ahi.stats();
    assert!(warmed.pages_hashed > 0);

    let models: Vec<BTreeMap<u64, Vec<u8>>> = std::thread::scope(|sc| {
        let s = &s;
        let mut writers = Vec::new();
        for w in 0..WRITERS {
            writers.push(sc.spawn(move || {
                let mut rng = Rng(w + 1);
                let mut model = BTreeMap::new();
                for i in 0..ops {
                    let k = rng.below(KEYS / 3) * 3 + w + 1;
                    let present = model.contains_key(&k);
                    match (present, rng.below(4)) {
                        (false, _) => {
                            s.tree.insert(&s.pool, &row(k, &tagged(k, i))).unwrap();
                            model.insert(k, tagged(k, i));
                        }
                        (true, 0) => {
                            s.tree.update(&s.pool, &row(k, &tagged(k, i))).unwrap();
                            model.insert(k, tagged(k, i));
                        }
                        (true, _) => {
                            s.tree.delete(&s.pool, &[Value::UInt(k)]).unwrap();
                            model.remove(&k);
                        }
                    }
                    // A stable key updated in place now and then: its page's LSN moves.
                    if i % 7 == 0 {
                        let st = rng.below(KEYS / 3) * 3;
                        s.tree.update(&s.pool, &row(st, &tagged(st, 0))).unwrap();
                    }
                }
                model
            }));
        }
        for r in 0..READERS {
            sc.spawn(move || {
                let mut rng = Rng(100 + r);
                for _ in 0..4 * ops {
                    let k = rng.below(KEYS);
                    let got = match s.tree.get(&s.pool, &[Value::UInt(k)]) {
                        Ok(e) => e,
                        Err(e @ TreeError::Corrupt { .. }) => panic!("{e}"),
                        Err(e) => panic!("lookup of {k}: {e}"),
                    };
                    match got {
                        Some(e) => match &e.values[3] {
                            Value::Bytes(b) => assert_eq!(&b[..8], &k.to_be_bytes(), "key {k}"),
                            other => panic!("value {other:?}"),
                        },
                        None => assert_ne!(k % 3, 0, "stable key {k} not found"),
                    }
                }
            });
        }
        writers.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let during = s.ahi.stats();
    assert!(
        during.hits > warmed.hits,
        "readers used the hash: {during:?}"
    );
    s.tree.check(&s.pool).unwrap();
    for k in 0..KEYS {
        let want = if k % 3 == 0 {
            Some(tagged(k, 0))
        } else {
            models[(k % 3 - 1) as usize].get(&k).cloned()
        };
        assert_eq!(get(&s, k), want, "key {k}");
    }
}
