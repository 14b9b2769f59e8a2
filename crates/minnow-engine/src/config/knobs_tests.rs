//! Tests of the knob registry: every `Config` field has a knob, the docs table is rendered
//! from it, and the knobs reach the lower crates' configurations.

use std::path::Path;
use std::time::Duration;

use minnow_dblwr::DoublewriteMode;

use super::*;
use crate::config::{IoBackend, ahi_config, buf_config, dblwr_config};

/// `Config::default()` with every knob that text can set changed to its example value.
fn every_knob_changed() -> Config {
    let mut c = Config::default();
    for k in KNOBS {
        if let Some(example) = k.example {
            c.set(k.name, example)
                .unwrap_or_else(|e| panic!("{}={example}: {e}", k.name));
        }
    }
    c
}

#[test]
fn every_config_field_is_a_knob() {
    let c = every_knob_changed();
    let d = Config::default();
    // No `..`: a field added to `Config` fails to compile here until it is listed, and the
    // assertion then fails until the registry has a knob whose example changes it.
    let Config {
        buffer_pool_size,
        buffer_pool_instances,
        page_size,
        flush_log_at_trx_commit,
        flush_log_at_timeout,
        log_file_size,
        doublewrite,
        doublewrite_pages,
        flush_method,
        io_backend,
        write_io_threads,
        page_cleaners,
        checksum_algorithm,
        old_blocks_pct,
        old_blocks_time,
        io_capacity,
        flush_neighbors,
        max_dirty_pages_pct,
        max_dirty_pages_pct_lwm,
        read_ahead_threshold,
        buffer_pool_dump_at_shutdown,
        buffer_pool_dump_pct,
        autoinc_lock_mode,
        lock_wait_timeout,
        bulk_insert_buffer_size,
        purge_threads,
        fast_shutdown,
        rollback_segments,
        status_file,
        adaptive_hash_index,
        adaptive_hash_index_parts,
        adaptive_hash_index_max_memory,
        thread_concurrency,
        concurrency_tickets,
        parallel_read_threads,
        compression_failure_threshold_pct,
        compression_pad_pct_max,
        merge_threshold,
        recovery_progress,
    } = &c;
    assert_ne!(*buffer_pool_size, d.buffer_pool_size);
    assert_ne!(*buffer_pool_instances, d.buffer_pool_instances);
    assert_ne!(*page_size, d.page_size);
    assert_ne!(*flush_log_at_trx_commit, d.flush_log_at_trx_commit);
    assert_ne!(*flush_log_at_timeout, d.flush_log_at_timeout);
    assert_ne!(*log_file_size, d.log_file_size);
    assert_ne!(*doublewrite, d.doublewrite);
    assert_ne!(*doublewrite_pages, d.doublewrite_pages);
    assert_ne!(*flush_method, d.flush_method);
    assert!(matches!(
        (io_backend, &d.io_backend),
        (IoBackend::IoUring, IoBackend::Sync)
    ));
    assert_ne!(*write_io_threads, d.write_io_threads);
    assert_ne!(*page_cleaners, d.page_cleaners);
    assert_ne!(*checksum_algorithm, d.checksum_algorithm);
    assert_ne!(*old_blocks_pct, d.old_blocks_pct);
    assert_ne!(*old_blocks_time, d.old_blocks_time);
    assert_ne!(*io_capacity, d.io_capacity);
    assert_ne!(*flush_neighbors, d.flush_neighbors);
    assert_ne!(*max_dirty_pages_pct, d.max_dirty_pages_pct);
    assert_ne!(*max_dirty_pages_pct_lwm, d.max_dirty_pages_pct_lwm);
    assert_ne!(*read_ahead_threshold, d.read_ahead_threshold);
    assert_ne!(
        *buffer_pool_dump_at_shutdown,
        d.buffer_pool_dump_at_shutdown
    );
    assert_ne!(*buffer_pool_dump_pct, d.buffer_pool_dump_pct);
    assert_ne!(*autoinc_lock_mode, d.autoinc_lock_mode);
    assert_ne!(*lock_wait_timeout, d.lock_wait_timeout);
    assert_ne!(*bulk_insert_buffer_size, d.bulk_insert_buffer_size);
    assert_ne!(*purge_threads, d.purge_threads);
    assert_ne!(*fast_shutdown, d.fast_shutdown);
    assert_ne!(*rollback_segments, d.rollback_segments);
    assert_ne!(*status_file, d.status_file);
    assert_ne!(*adaptive_hash_index, d.adaptive_hash_index);
    assert_ne!(*adaptive_hash_index_parts, d.adaptive_hash_index_parts);
    assert_ne!(
        *adaptive_hash_index_max_memory,
        d.adaptive_hash_index_max_memory
    );
    assert_ne!(*thread_concurrency, d.thread_concurrency);
    assert_ne!(*concurrency_tickets, d.concurrency_tickets);
    assert_ne!(*merge_threshold, d.merge_threshold);
    assert_ne!(*parallel_read_threads, d.parallel_read_threads);
    assert_ne!(
        *compression_failure_threshold_pct,
        d.compression_failure_threshold_pct
    );
    assert_ne!(*compression_pad_pct_max, d.compression_pad_pct_max);
    // A function cannot come from text: its knob is listed and refuses any value.
    assert!(recovery_progress.is_none());
    let hook = Knob::find("recovery_progress").unwrap();
    assert!(hook.example.is_none());
    assert!(Config::default().set("recovery_progress", "x").is_err());
    // Exactly one knob per field: 39 fields above.
    assert_eq!(KNOBS.len(), 39);
}

#[test]
fn names_are_unique_and_found_by_every_spelling() {
    for (i, k) in KNOBS.iter().enumerate() {
        for other in &KNOBS[i + 1..] {
            assert_ne!(k.name, other.name);
            for v in k.innodb {
                assert!(!other.innodb.contains(v), "{v} names two knobs");
            }
        }
        assert!(std::ptr::eq(Knob::find(k.name).unwrap(), k));
        assert!(std::ptr::eq(
            Knob::find(&k.name.to_uppercase().replace('_', "-")).unwrap(),
            k
        ));
        for v in k.innodb {
            assert!(v.starts_with("innodb_"), "{v}");
            assert!(std::ptr::eq(Knob::find(v).unwrap(), k), "{v}");
        }
    }
    assert_eq!(
        Knob::find("innodb_redo_log_capacity").unwrap().name,
        "log_file_size"
    );
    assert!(Knob::find("change_buffering").is_none());
}

#[test]
fn shown_values_read_back() {
    for c in [Config::default(), every_knob_changed()] {
        for k in KNOBS.iter().filter(|k| k.example.is_some()) {
            let shown = k.show(&c);
            let mut again = Config::default();
            k.set(&mut again, &shown)
                .unwrap_or_else(|e| panic!("{}={shown}: {e}", k.name));
            assert_eq!(k.show(&again), shown, "{}", k.name);
        }
    }
    // Every example differs from the default, and the defaults validate.
    for k in KNOBS {
        if let Some(e) = k.example {
            let mut c = Config::default();
            k.set(&mut c, e).unwrap();
            assert_ne!(k.show(&c), k.default_value(), "{}", k.name);
        }
    }
    Config::default().validate().unwrap();
}

#[test]
fn values_parse_with_their_units() {
    let mut c = Config::default();
    c.apply("lock_wait_timeout=5").unwrap();
    assert_eq!(c.lock_wait_timeout, Duration::from_secs(5));
    c.apply("lock_wait_timeout=1500ms").unwrap();
    assert_eq!(c.lock_wait_timeout, Duration::from_millis(1500));
    c.apply("old_blocks_time=250").unwrap();
    assert_eq!(c.old_blocks_time, Duration::from_millis(250));
    c.apply("innodb_flush_log_at_timeout=2s").unwrap();
    assert_eq!(c.flush_log_at_timeout, Duration::from_secs(2));
    c.apply("status_file=1000").unwrap();
    assert_eq!(c.status_file, Some(Duration::from_secs(1)));
    c.apply("status_file=0").unwrap();
    assert_eq!(c.status_file, None);
    c.apply("buffer_pool_size=64K").unwrap();
    assert_eq!(c.buffer_pool_size, 64 << 10);
    c.apply("doublewrite=0").unwrap();
    assert_eq!(c.doublewrite, DoublewriteMode::Off);
    c.apply("innodb_buffer_pool_load_at_startup=off").unwrap();
    assert!(!c.buffer_pool_dump_at_shutdown);
    assert_eq!(c.parallel_read_threads, 4, "InnoDB's default");
    c.apply("innodb_parallel_read_threads=1").unwrap();
    assert_eq!(c.parallel_read_threads, 1);
    c.apply("parallel-read-threads=256").unwrap();
    assert_eq!(c.parallel_read_threads, 256);
    let mut most = Config::default();
    most.apply("parallel_read_threads=256").unwrap();
    most.validate().unwrap();
}

#[test]
fn bad_input_is_an_error() {
    let mut c = Config::default();
    assert!(matches!(c.apply("doublewrite"), Err(KnobError::Syntax(_))));
    let unknown = c.apply("innodb_change_buffering=all").unwrap_err();
    assert!(matches!(unknown, KnobError::Unknown { .. }));
    assert!(unknown.to_string().contains("purge_threads"), "{unknown}");
    for (n, v) in [
        ("flush_log_at_trx_commit", "3"),
        ("doublewrite", "maybe"),
        ("buffer_pool_size", "12X"),
        ("buffer_pool_size", "99999999999G"),
        ("buffer_pool_size", ""),
        ("buffer_pool_size", "M"),
        ("page_cleaners", "-1"),
        ("checksum_algorithm", "strict_crc32"),
        ("lock_wait_timeout", "5h"),
        ("io_backend", "custom"),
        ("autoinc_lock_mode", "300"),
        ("write_io_threads", "0"),
        ("write_io_threads", "65"),
        ("parallel_read_threads", "0"),
        ("parallel_read_threads", "257"),
        ("parallel_read_threads", "four"),
    ] {
        let e = c.set(n, v).unwrap_err();
        assert!(matches!(e, KnobError::Value { .. }), "{n}={v}: {e:?}");
    }
    assert_eq!(c.buffer_pool_size, Config::default().buffer_pool_size);
    // A value set in code is checked at open.
    let zero = Config {
        parallel_read_threads: 0,
        ..Config::default()
    };
    assert!(zero.validate().is_err());
}

/// The knobs that `buf_config`, `dblwr_config`, `ahi_config` and `zip_pad` must carry: a
/// knob of these parts that does not change what they return was forgotten there.
#[test]
fn knobs_reach_the_lower_crates() {
    let base = Config::default();
    let dir = Path::new("dump-dir");
    let lower = |c: &Config| {
        (
            format!("{:?}", buf_config(c, Some(dir))),
            dblwr_config(c),
            ahi_config(c),
            c.zip_pad(),
        )
    };
    let (buf0, dblwr0, ahi0, zip0) = lower(&base);
    for k in KNOBS {
        let Some(example) = k.example else { continue };
        let mut c = base.clone();
        k.set(&mut c, example).unwrap();
        let (buf, dblwr, ahi, zip) = lower(&c);
        match k.acts {
            Acts::BufferPool | Acts::PageCleaners => assert_ne!(buf, buf0, "{}", k.name),
            Acts::Doublewrite => assert_ne!(dblwr, dblwr0, "{}", k.name),
            Acts::Ahi => assert_ne!(ahi, ahi0, "{}", k.name),
            Acts::Compression => assert_ne!(zip, zip0, "{}", k.name),
            _ => {}
        }
    }
}

/// Where the docs table lives, for the message and for regenerating it.
const DOCS_FILE: &str = "crates/minnow-engine/src/config/mod.rs";
const MARKER: &str = "//! <!-- knobs table: rendered by config::knobs::Knob::docs_table -->";

/// The docs source with the table between the marker and the next non-table line
/// replaced by `table`.
fn with_table(source: &str, table: &str) -> Option<String> {
    let at = source.find(MARKER)? + MARKER.len() + 1;
    let rest = source.get(at..)?;
    let table_len: usize = rest
        .lines()
        .take_while(|l| l.starts_with("//! |"))
        .map(|l| l.len() + 1)
        .sum();
    let rendered: String = table.lines().map(|l| format!("//! {l}\n")).collect();
    Some(format!(
        "{}{rendered}{}",
        source.get(..at)?,
        rest.get(table_len..)?
    ))
}

#[test]
fn docs_table_is_rendered_from_the_registry() {
    let source = include_str!("mod.rs");
    let expected = with_table(source, &Knob::docs_table()).expect("the marker line is in mod.rs");
    if expected == source {
        return;
    }
    if std::env::var_os("MINNOW_BLESS_KNOBS").is_some() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/config/mod.rs");
        std::fs::write(&path, &expected).unwrap();
        return;
    }
    let old: Vec<&str> = source.lines().collect();
    let new: Vec<&str> = expected.lines().collect();
    let mut diff = String::new();
    for l in old.iter().filter(|l| !new.contains(l)) {
        diff.push_str(&format!("- {l}\n"));
    }
    for l in new.iter().filter(|l| !old.contains(l)) {
        diff.push_str(&format!("+ {l}\n"));
    }
    panic!(
        "the knobs table in {DOCS_FILE} is not what the registry renders:\n{diff}\n\
         regenerate it with: MINNOW_BLESS_KNOBS=1 cargo test -p minnow-engine --lib \
         config::knobs::tests::docs_table"
    );
}

#[test]
fn help_lists_every_knob_with_its_default() {
    let h = Knob::help();
    for k in KNOBS {
        assert!(
            h.contains(&format!("{} [", k.name)),
            "{} missing from help",
            k.name
        );
    }
    assert!(h.contains("buffer_pool_size [innodb_buffer_pool_size] default 64M"));
    assert!(h.contains("purge_threads [innodb_purge_threads] default 1"));
}
