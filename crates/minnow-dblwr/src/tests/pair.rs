//! Two batches in flight through a pair of segments: the order rules, and power cuts that
//! land while both batches are out (both segments' pages must be repaired).

use super::*;

/// The two batches: the first and the last four pages of `BATCH`, one to each segment.
fn halves_of_batch() -> [Vec<PageId>; 2] {
    let ids = batch_ids();
    [ids[..4].to_vec(), ids[4..].to_vec()]
}

fn pages_at(ids: &[PageId], lsn: u64) -> Vec<(PageId, AlignedBuf)> {
    ids.iter().map(|&id| (id, make_page(id, lsn))).collect()
}

fn refs(pages: &[(PageId, AlignedBuf)]) -> Vec<(PageId, &[u8])> {
    pages.iter().map(|(id, p)| (*id, &p[..])).collect()
}

#[test]
fn a_pair_is_two_segments_and_a_half_takes_one_batch_at_a_time() {
    let fx = Fixture::new(Arc::new(SyncBackend::new()), FlushMethod::Fsync);
    assert!(fx.open(DoublewriteMode::On, 1, 4).pair(0).is_none());
    let dblwr = fx.open(DoublewriteMode::On, 4, 4);
    assert_eq!(
        dblwr.pair(3).map(|mut p| p.halves().map(|h| h.segment())),
        Some([2, 3])
    );
    let [a, b] = halves_of_batch();
    let (old_a, old_b) = (pages_at(&a, OLD_LSN), pages_at(&b, OLD_LSN));
    let none = [None; 4];
    let mut pair = dblwr.pair(0).unwrap();
    let [mut h0, mut h1] = pair.halves();
    let copied_a = h0.write_copies(&refs(&old_a), &none, &fx.spaces).unwrap();
    // The segment holds copies whose pages are not yet in place: it takes no other batch.
    let refused = h0.write_copies(&refs(&old_b), &none, &fx.spaces);
    assert!(
        matches!(refused, Err(DblwrError::Poisoned { segment: 0, .. })),
        "{refused:?}"
    );
    // A batch goes in place only through the segment that holds its copies.
    let copied_b = h1.write_copies(&refs(&old_b), &none, &fx.spaces).unwrap();
    let wrong = h1.write_in_place(copied_a);
    assert!(matches!(wrong, Err(DblwrError::Config { .. })), "{wrong:?}");
    h1.write_in_place(copied_b).unwrap();
    // More pages than a batch holds are refused, not split.
    let all = pages_at(&batch_ids(), NEW_LSN);
    assert!(matches!(
        h1.write_copies(&refs(&all), &[None; 8], &fx.spaces),
        Err(DblwrError::Config { .. })
    ));
    for &id in &b {
        assert_eq!(fx.raw(id)[..], stamped(id, OLD_LSN)[..]);
    }
}

/// One power cut with two batches in flight. Both batches are first written completely at
/// OLD_LSN; then again at NEW_LSN through the pair in the order the pool's pipelined flush
/// can produce (seed-chosen: batch 2's copies before batch 1's in-place writes, or in
/// between them), the device dying after a seed-chosen number of writes and syncs.
fn crash_in_flight(seed: u64) -> (Fixture, String) {
    let (sim, mut fx) = crash_fixture(seed);
    let dblwr = fx.open(DoublewriteMode::On, 2, 4);
    let [a, b] = halves_of_batch();
    let none = [None; 4];
    {
        let mut pair = dblwr.pair(0).unwrap();
        let [mut h0, mut h1] = pair.halves();
        for (h, ids) in [(&mut h0, &a), (&mut h1, &b)] {
            let old = pages_at(ids, OLD_LSN);
            let c = h.write_copies(&refs(&old), &none, &fx.spaces).unwrap();
            h.write_in_place(c).unwrap();
        }
    }
    // Per batch: segment write + sync, 4 in-place writes, a sync per tablespace (2).
    let ops = 2 * (2 + 4 + 2);
    let die_after = mix(seed) % (ops + 2);
    let copies_first = (seed / 2).is_multiple_of(2);
    sim.arm(die_after);
    let (new_a, new_b) = (pages_at(&a, NEW_LSN), pages_at(&b, NEW_LSN));
    let result = (|| {
        let mut pair = dblwr.pair(0).unwrap();
        let [mut h0, mut h1] = pair.halves();
        let copied_a = h0.write_copies(&refs(&new_a), &none, &fx.spaces)?;
        if copies_first {
            let copied_b = h1.write_copies(&refs(&new_b), &none, &fx.spaces)?;
            h0.write_in_place(copied_a)?;
            h1.write_in_place(copied_b)
        } else {
            h0.write_in_place(copied_a)?;
            let copied_b = h1.write_copies(&refs(&new_b), &none, &fx.spaces)?;
            h1.write_in_place(copied_b)
        }
    })();
    let report = sim.power_cut(seed).unwrap();
    drop(dblwr);
    fx.reopen();
    let context = format!(
        "seed {seed}, die after {die_after} ops, copies first {copies_first} ({result:?}): {report}"
    );
    (fx, context)
}

#[test]
fn a_power_cut_with_two_batches_in_flight_repairs_both_segments_pages() {
    let mut repaired_per_segment = [0usize; 2];
    let [a, _] = halves_of_batch();
    for seed in minnow_io::campaign_seeds(50) {
        let (fx, context) = crash_in_flight(seed);
        let report = fx
            .recover(DoublewriteMode::On)
            .unwrap_or_else(|e| panic!("{context}: recovery failed: {e}"));
        for id in batch_ids() {
            assert_ne!(
                look(&fx, id, &context),
                Seen::Torn,
                "{context}: page {id} torn after recovery: {report:?}"
            );
        }
        for p in report.restored() {
            if matches!(p.data, DataState::Torn { .. }) {
                repaired_per_segment[usize::from(!a.contains(&p.page))] += 1;
            }
        }
    }
    eprintln!(
        "two batches in flight: torn pages repaired from segment 0 {}, from segment 1 {}",
        repaired_per_segment[0], repaired_per_segment[1]
    );
    if minnow_io::campaign_seeds(50).count() >= 40 {
        assert!(
            repaired_per_segment.iter().all(|&n| n > 0),
            "the campaign never tore a page of both batches: {repaired_per_segment:?}"
        );
    }
}
