//! Page fill after loads: split at the insert point for sequential runs, in the middle for
//! random keys.

mod common;

use common::{Env, SPACE, layout, row};
use minnow_btree::BTree;

const N: i64 = 20_000;

fn load(order: impl Iterator<Item = i64>) -> Vec<f64> {
    let env = Env::new(64);
    let pool = env.create();
    let (tree, _) = BTree::create(&pool, SPACE, 3, layout()).unwrap();
    for k in order {
        tree.insert(&pool, &row(k, &[b'v'; 30])).unwrap();
    }
    let stats = tree.check(&pool).unwrap();
    assert_eq!(stats.records, N as u64);
    assert!(stats.height >= 2);
    pool.shutdown().unwrap();
    stats.leaf_fill
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

#[test]
fn ascending_load_fills_leaves() {
    let fill = load(0..N);
    // Every leaf but the last (still being filled) is over 90 % full.
    let (last, full) = fill.split_last().unwrap();
    assert!(*last > 0.0);
    let min = full.iter().cloned().fold(1.0, f64::min);
    eprintln!(
        "ascending: {} leaves, min fill {min:.3}, mean {:.3}",
        fill.len(),
        mean(&fill)
    );
    assert!(min > 0.90, "min fill {min}");
}

#[test]
fn descending_load_fills_leaves() {
    let fill = load((0..N).rev());
    let (first, full) = fill.split_first().unwrap();
    assert!(*first > 0.0);
    let avg = mean(full);
    eprintln!("descending: {} leaves, mean fill {avg:.3}", fill.len());
    assert!(avg > 0.85, "mean fill {avg}");
}

#[test]
fn random_load_fills_leaves_above_60_percent() {
    // A Fisher-Yates shuffle driven by splitmix64.
    let mut keys: Vec<i64> = (0..N).collect();
    let mut state = 0x5EED_u64;
    for i in (1..keys.len()).rev() {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        keys.swap(i, ((z ^ (z >> 31)) % (i as u64 + 1)) as usize);
    }
    let fill = load(keys.into_iter());
    let avg = mean(&fill);
    eprintln!("random: {} leaves, mean fill {avg:.3}", fill.len());
    assert!(avg > 0.60, "mean fill {avg}");
}
