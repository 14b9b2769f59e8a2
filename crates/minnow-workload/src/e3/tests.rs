//! E3's tests: preparing both layouts small, and runs of each workload on them.

use super::*;

fn small() -> E3Config {
    E3Config {
        rows: 3_000,
        threads: 2,
        duration: Duration::from_secs(5),
        max_queries: Some(40),
        filesort_rows: 100,
        ..E3Config::default()
    }
}

#[test]
fn names_round_trip() {
    for l in Layout::ALL {
        assert_eq!(Layout::parse(l.name()), Some(l));
    }
    for w in Workload::ALL {
        assert_eq!(Workload::parse(w.name()), Some(w));
    }
    assert_eq!(Workload::parse("key-order"), Some(Workload::KeyOrder));
    assert_eq!(Layout::parse("gzip"), None);
}

#[test]
fn filesort_ids_are_one_stretch_in_two_orders() {
    let cfg = small();
    let hashed = filesort_ids(&cfg, 11, true);
    let mut sorted = filesort_ids(&cfg, 11, false);
    assert_eq!(sorted.len(), 100);
    assert_eq!(sorted[..3], [11, 15, 19]);
    assert_ne!(hashed, sorted);
    let mut h = hashed.clone();
    h.sort_unstable();
    sorted.sort_unstable();
    assert_eq!(h, sorted);
    assert_eq!(E3Config::default().filesort_len(), 300_000 / 16);
}

#[test]
fn compressed_and_plain_tables_answer_every_workload() {
    let parent = tempfile::tempdir().unwrap();
    let cfg = E3Config {
        base: Config {
            // The test checks behaviour, not IO: the page cache is fine.
            flush_method: FlushMethod::Fsync,
            ..E3Config::default().base
        },
        ..small()
    };
    let plain = prepare(&parent.path().join("p"), Layout::Uncompressed, &cfg).unwrap();
    let zip = prepare(&parent.path().join("z"), Layout::Zlib6, &cfg).unwrap();
    assert_eq!(zip.table_file, "zip8k_zlib-6.ibd");
    assert!(zip.compress_ops > 0);
    assert!(zip.table_bytes < plain.table_bytes, "{zip:?} {plain:?}");
    let pool = cfg.pool_bytes(plain.table_bytes);
    for w in Workload::ALL {
        let r = run(&parent.path().join("z"), Layout::Zlib6, w, &cfg, pool).unwrap();
        assert!(r.queries >= 1 && r.rows >= r.queries, "{r:?}");
        assert!(r.decompress_ops > 0 || r.pool_misses == 0, "{r:?}");
        let p = run(
            &parent.path().join("p"),
            Layout::Uncompressed,
            w,
            &cfg,
            pool,
        )
        .unwrap();
        assert!(p.queries >= 1, "{p:?}");
        assert_eq!(p.decompress_ops, 0);
    }
    // The wrong layout for a directory is refused.
    assert!(
        run(
            &parent.path().join("p"),
            Layout::Zlib6,
            Workload::Point,
            &cfg,
            pool
        )
        .is_err()
    );
    assert!(
        prepare(
            &parent.path().join("x"),
            Layout::Lz4,
            &E3Config {
                rows: 1,
                ..cfg.clone()
            }
        )
        .is_err()
    );
}
