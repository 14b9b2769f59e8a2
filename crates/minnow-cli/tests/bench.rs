//! `minnow bench`: short runs of each workload in JSON, CSV and text, and usage errors.

mod common;

use common::minnow;

#[test]
fn oltp_json_run_reports_consistent_counts() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("db");
    let run = minnow([
        "bench",
        "oltp",
        "--events",
        "50",
        "--table-size",
        "500",
        "--threads",
        "2",
        "--json",
        "--check",
        "--dir",
        data.to_str().unwrap(),
        "--set",
        "flush_log_at_trx_commit=0",
        "--set",
        "innodb_doublewrite=off",
    ]);
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let j = run.json();
    let s = &j["summary"];
    assert_eq!(s["events"], 50);
    assert_eq!(s["mode"], "read_write");
    let (reads, writes, other) = (
        s["reads"].as_u64().unwrap(),
        s["writes"].as_u64().unwrap(),
        s["other"].as_u64().unwrap(),
    );
    // sysbench's read_write: 14 reads and 4 writes per event, BEGIN and COMMIT; a deadlock
    // adds a BEGIN (and its attempt's statements), a lock wait timeout a BEGIN and ROLLBACK.
    let deadlocks = s["ignored"]["deadlocks"].as_u64().unwrap();
    let timeouts = s["ignored"]["lock_wait_timeouts"].as_u64().unwrap();
    assert_eq!(other, 50 * 2 + deadlocks + 2 * timeouts);
    assert!(reads >= 50 * 14 && writes >= 50 * 4);
    if deadlocks + timeouts == 0 {
        assert_eq!((reads, writes), (50 * 14, 50 * 4));
    }
    assert_eq!(s["queries"].as_u64().unwrap(), reads + writes + other);
    let per_thread: u64 = s["events_per_thread"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(per_thread, 50);
    assert_eq!(s["skip_trx"], false);
    assert_eq!(s["interrupted"], false);
    assert_eq!(j["prepare"]["rows"], 500);
    assert_eq!(j["data_dir_kept"], true);
    assert!(j["check"].as_str().unwrap().starts_with("ok"));
    assert!(data.join("ibdata1").exists());
}

/// Each interval reports the redo log beside it: the checkpoint age (bytes and share of the
/// capacity) and the writers' waits for log space; the summary totals the waits.
#[test]
fn oltp_intervals_report_the_checkpoint_age() {
    let dir = tempfile::tempdir().unwrap();
    let run = minnow([
        "bench",
        "oltp",
        "--mode",
        "write_only",
        "--time",
        "2",
        "--report-interval",
        "1",
        "--table-size",
        "500",
        "--threads",
        "2",
        "--json",
        "--dir",
        dir.path().join("db").to_str().unwrap(),
        "--set",
        "flush_log_at_trx_commit=0",
        "--set",
        "log_file_size=256K",
    ]);
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let j = run.json();
    let intervals = j["intervals"].as_array().unwrap();
    let log = j["interval_log"].as_array().unwrap();
    assert!(!intervals.is_empty());
    assert_eq!(log.len(), intervals.len());
    let capacity = 256 * 1024;
    for l in log {
        let age = l["checkpoint_age"].as_u64().unwrap();
        let pct = l["checkpoint_age_pct"].as_f64().unwrap();
        assert!(age <= capacity, "{l}");
        assert!(
            (pct - age as f64 * 100.0 / capacity as f64).abs() < 1.0,
            "{l}"
        );
        assert!(l["log_waits"].as_u64().is_some() && l["log_wait_ms"].as_f64().unwrap() >= 0.0);
    }
    let csv = minnow([
        "bench",
        "oltp",
        "--mode",
        "write_only",
        "--time",
        "1",
        "--table-size",
        "200",
        "--csv",
        "--dir",
        dir.path().join("c").to_str().unwrap(),
    ]);
    assert_eq!(csv.code, 0, "stderr: {}", csv.stderr);
    let header = csv.stdout.lines().next().unwrap();
    assert!(
        header.ends_with(
            ",pages_flushed_per_s,checkpoint_age_bytes,checkpoint_age_pct,log_waits,log_wait_ms"
        ),
        "{header}"
    );
    assert!(csv.stdout.contains("\nlog_space_waits,"));
    assert!(csv.stdout.contains("\nlog_space_wait_s,"));
}

#[test]
fn oltp_csv_and_text_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let csv = minnow([
        "bench",
        "oltp",
        "--mode",
        "oltp_point_select",
        "--events",
        "30",
        "--table-size",
        "200",
        "--csv",
        "--dir",
        dir.path().join("a").to_str().unwrap(),
    ]);
    assert_eq!(csv.code, 0, "stderr: {}", csv.stderr);
    assert!(csv.stdout.starts_with("time_s,threads,tps,"));
    assert!(csv.stdout.contains("\nmetric,value\n"));
    assert!(csv.stdout.contains("\nevents,30\n"));
    let text = minnow([
        "bench",
        "oltp",
        "--mode",
        "write_only",
        "--events",
        "20",
        "--table-size",
        "200",
        "--skip-trx",
        "on",
        "--dir",
        dir.path().join("b").to_str().unwrap(),
    ]);
    assert_eq!(text.code, 0, "stderr: {}", text.stderr);
    assert!(text.stdout.contains("no BEGIN/COMMIT"));
    assert!(text.stdout.contains("other:                           0 "));
    assert!(text.stdout.contains("95th percentile"));
}

#[test]
fn oltp_load_only_reports_the_load() {
    let dir = tempfile::tempdir().unwrap();
    let run = minnow([
        "bench",
        "oltp",
        "--load-only",
        "--table-size",
        "3000",
        "--json",
        "--set",
        "checksum_algorithm=innodb",
        "--dir",
        dir.path().join("db").to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let j = run.json();
    assert_eq!(j["checksum_algorithm"], "innodb");
    assert_eq!(j["rows"], 3000);
    assert!(j["pages_flushed"].as_u64().unwrap() > 0);
    assert!(j["rows_per_sec"].as_f64().unwrap() > 0.0);
}

#[test]
fn oltp_usage_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("db");
    let d = d.to_str().unwrap();
    for args in [
        vec!["--set", "innodb_change_buffering=all"],
        vec!["--set", "doublewrite"],
        vec!["--set", "flush_log_at_trx_commit=7"],
        vec!["--set", "help"],
        vec!["--mode", "oltp_insert"],
        vec!["--skip-trx", "maybe"],
        vec!["--threads", "0"],
        vec!["--time", "0"],
        vec!["--csv", "--json"],
    ] {
        let mut full = vec!["bench", "oltp", "--table-size", "50", "--dir", d];
        full.extend(&args);
        let run = minnow(&full);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stdout);
        assert!(!run.stderr.is_empty(), "{args:?}");
        assert!(
            !std::path::Path::new(d).join("ibdata1").exists(),
            "{args:?} created files"
        );
    }
}

#[test]
fn reads2007_runs_both_organisations() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("db");
    let run = minnow([
        "bench",
        "reads2007",
        "--rows",
        "2000",
        "--threads",
        "1,2",
        "--queries",
        "READ_PK_POINT,key_range_no_data,READ_FTS",
        "--time",
        "0.05",
        "--warmup",
        "0",
        "--json",
        "--dir",
        data.to_str().unwrap(),
        "--set",
        "buffer_pool_size=32M",
    ]);
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let j = run.json();
    assert_eq!(j["loads"].as_array().unwrap().len(), 2);
    let points = j["points"].as_array().unwrap();
    // 3 queries x 2 thread counts x 2 organisations.
    assert_eq!(points.len(), 12);
    for p in points {
        assert!(p["queries"].as_u64().unwrap() > 0, "{p}");
    }
    assert!(
        points
            .iter()
            .any(|p| p["organisation"] == "heap" && p["query"] == "READ_FTS")
    );
    assert!(data.join("normal.MYD").exists());

    let csv = minnow([
        "bench",
        "reads2007",
        "--organisation",
        "heap",
        "--rows",
        "500",
        "--threads",
        "1",
        "--queries",
        "READ_PK_POINT",
        "--time",
        "0.05",
        "--csv",
    ]);
    assert_eq!(csv.code, 0, "stderr: {}", csv.stderr);
    let lines: Vec<&str> = csv.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "organisation,query,threads,queries,rows,seconds,qps"
    );
    assert!(
        lines[1].starts_with("heap,READ_PK_POINT,1,"),
        "{}",
        lines[1]
    );

    let bad = minnow(["bench", "reads2007", "--threads", "0"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    let bad = minnow(["bench", "reads2007", "--organisation", "falcon"]);
    assert_ne!(bad.code, 0);
}

#[test]
fn covering_runs_both_plans_cold() {
    let run = minnow([
        "bench",
        "covering",
        "--rows",
        "3000",
        "--user-revisions",
        "30",
        "--rounds",
        "1",
        "--json",
        "--set",
        "flush_method=fsync",
    ]);
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let j = run.json();
    let runs = j["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for r in runs {
        assert_eq!(r["rows"], 30);
    }
    assert_eq!(runs[0]["plan"], "non_covering");
    assert_eq!(runs[0]["covering"], false);
    assert_eq!(runs[1]["covering"], true);
}

#[test]
fn parallel_load_reports_each_mode() {
    let run = minnow([
        "bench",
        "parallel-load",
        "--rows",
        "300",
        "--threads",
        "1,2",
        "--rows-per-statement",
        "20",
        "--csv",
        "--set",
        "flush_log_at_trx_commit=0",
    ]);
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 1 + 2 * 4, "{}", run.stdout);
    assert!(lines[0].ends_with(",scaling,vs_first_run"), "{}", lines[0]);
    assert!(lines[1].starts_with("autoinc0,1,300,"), "{}", lines[1]);
    // The first load is the reference of both ratios.
    assert!(lines[1].ends_with(",1.000,1.000"), "{}", lines[1]);
    assert!(lines[8].starts_with("explicit,2,300,"), "{}", lines[8]);
    let bad = minnow(["bench", "parallel-load", "--keys", "autoinc9"]);
    assert_ne!(bad.code, 0);
    // The text table ends with the article's numbers; --flush-log-at-trx-commit is accepted.
    let text = minnow([
        "bench",
        "parallel-load",
        "--rows",
        "100",
        "--threads",
        "1",
        "--keys",
        "explicit",
        "--flush-log-at-trx-commit",
        "0",
    ]);
    assert_eq!(text.code, 0, "stderr: {}", text.stderr);
    assert!(text.stdout.lines().next().unwrap().contains("x mode 1st"));
    assert!(text.stdout.contains("7,200") && text.stdout.contains("21,500"));
}

#[test]
fn oltp_sweeps_modes_and_thread_counts() {
    let run = minnow([
        "bench",
        "oltp",
        "--mode",
        "write_only,oltp_read_write",
        "--threads",
        "1,2",
        "--events",
        "20",
        "--table-size",
        "300",
        "--csv",
        "--set",
        "flush_log_at_trx_commit=0",
    ]);
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let rows: Vec<Vec<&str>> = run.stdout.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 1 + 4, "{}", run.stdout);
    assert_eq!(rows[0][..4], ["mode", "threads", "seconds", "events"]);
    let runs: Vec<(&str, &str, &str)> = rows[1..].iter().map(|r| (r[0], r[1], r[3])).collect();
    assert_eq!(
        runs,
        [
            ("write_only", "1", "20"),
            ("write_only", "2", "20"),
            ("read_write", "1", "20"),
            ("read_write", "2", "20")
        ]
    );
    // Each script's first thread count is its own scaling reference.
    assert_eq!(rows[1].last(), Some(&"1.000"));
    assert_eq!(rows[3].last(), Some(&"1.000"));

    let dir = tempfile::tempdir().unwrap();
    let json = minnow([
        "--json",
        "bench",
        "oltp",
        "--threads",
        "1,2",
        "--events",
        "10",
        "--table-size",
        "200",
        "--check",
        "--dir",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(json.code, 0, "stderr: {}", json.stderr);
    let j = json.json();
    assert_eq!(j["workload"], "oltp sweep");
    let runs = j["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1]["summary"]["threads"], 2);
    assert_eq!(runs[1]["summary"]["events"], 10);
    assert!(runs[0]["check"].as_str().unwrap().starts_with("ok"));
    // With --dir each run keeps its own database.
    assert!(dir.path().join("read_write-2t").join("ibdata1").exists());
    let bad = minnow(["bench", "oltp", "--threads", "1,2", "--load-only"]);
    assert_eq!(bad.code, 2, "{}", bad.stdout);
}

#[test]
fn writers_report_each_thread_count_against_the_first() {
    let run = minnow([
        "bench",
        "writers",
        "--threads",
        "1,2",
        "--secs",
        "1",
        "--rows-per-trx",
        "2",
        "--keys-per-thread",
        "100",
        "--flush-log-at-trx-commit",
        "0",
        "--csv",
    ]);
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let rows: Vec<Vec<&str>> = run.stdout.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 3, "{}", run.stdout);
    let col = |name: &str| rows[0].iter().position(|c| *c == name).unwrap();
    for (row, threads) in rows[1..].iter().zip(["1", "2"]) {
        assert_eq!(row.len(), rows[0].len());
        assert_eq!((row[0], row[1], row[2]), (threads, "update", "2"));
        let tx: u64 = row[col("transactions")].parse().unwrap();
        assert!(tx > 0, "{row:?}");
        assert_eq!(row[col("rows")].parse::<u64>().unwrap(), 2 * tx);
        // Disjoint keys: no writer waits for another, so no deadlock (purge may still
        // make a writer wait on a row it cleans, so lock_waits is only reported).
        assert_eq!(row[col("deadlocks")], "0");
        assert!(row[col("lock_waits")].parse::<u64>().is_ok());
    }
    assert_eq!(rows[1][col("scaling")], "1.000");

    let json = minnow([
        "--json",
        "bench",
        "writers",
        "--threads",
        "2",
        "--secs",
        "1",
        "--op",
        "insert",
    ]);
    assert_eq!(json.code, 0, "stderr: {}", json.stderr);
    let j = json.json();
    assert_eq!(j["workload"], "writers");
    assert_eq!(j["knobs"].as_array().unwrap().len(), 0);
    let r = &j["runs"][0];
    assert_eq!(
        (r["threads"].as_u64(), r["op"].as_str()),
        (Some(2), Some("insert"))
    );
    let per_thread: u64 = r["per_thread"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(per_thread, r["transactions"].as_u64().unwrap());
    assert!(r["latency"]["p95_ms"].as_f64().unwrap() > 0.0);

    for args in [["--op", "upsert"], ["--secs", "0"], ["--threads", "0"]] {
        let mut full = vec!["bench", "writers"];
        full.extend(args);
        assert_eq!(minnow(&full).code, 2, "{args:?}");
    }
}

#[test]
fn hot_rows_count_commits_deadlocks_and_waits() {
    let run = minnow([
        "--json",
        "bench",
        "hot-rows",
        "--threads",
        "4",
        "--hot",
        "2",
        "--rows-per-trx",
        "2",
        "--secs",
        "1",
        "--flush-log-at-trx-commit",
        "0",
    ]);
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let j = run.json();
    assert_eq!(j["workload"], "hot-rows");
    assert_eq!(j["knobs"][0], "flush_log_at_trx_commit=0");
    let r = &j["runs"][0];
    assert_eq!(r["threads"], 4);
    assert!(r["commits"].as_u64().unwrap() > 0, "{r}");
    // Every victim a worker retried is a deadlock the lock manager found.
    assert_eq!(r["deadlocks"], r["engine_deadlocks"]);
    for k in ["avg_ms", "p95_ms", "p99_ms"] {
        assert!(r["lock_latency"][k].as_f64().is_some(), "{k}");
    }

    let text = minnow([
        "bench",
        "hot-rows",
        "--threads",
        "2",
        "--hot",
        "3",
        "--secs",
        "1",
    ]);
    assert_eq!(text.code, 0, "stderr: {}", text.stderr);
    let lines: Vec<&str> = text.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", text.stdout);
    assert!(lines[1].contains("commits/s") && lines[1].contains("lock p95 ms"));
    assert_eq!(lines[2].split_whitespace().next(), Some("2"));
    let bad = minnow(["bench", "hot-rows", "--hot", "1", "--rows-per-trx", "2"]);
    assert_eq!(bad.code, 2);
}

#[test]
fn warmup_reports_both_restarts() {
    let run = minnow([
        "bench",
        "warmup",
        "--rows",
        "20000",
        "--hot-rows",
        "100",
        "--threads",
        "2",
        "--interval-ms",
        "100",
        "--warm-secs",
        "1",
        "--measure-secs",
        "1",
        "--json",
        "--set",
        "buffer_pool_size=2097152",
        "--set",
        "flush_method=fsync",
    ]);
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let j = run.json();
    assert_eq!(j["workload"], "warmup");
    assert_eq!(j["rows"], 20000);
    assert_eq!(j["first_run"].as_array().unwrap().len(), 10);
    assert_eq!(j["cold"]["load"], false);
    assert_eq!(j["cold"]["pages_loaded"], 0);
    assert_eq!(j["warm"]["load"], true);
    assert!(j["disk"].is_null(), "no emulated disk without --hdd");
    assert!(j["dumped_pages"].as_u64().unwrap() > 0);
    assert!(j["steady_reads_per_sec"].as_f64().unwrap() > 0.0);
    let csv = minnow([
        "bench",
        "warmup",
        "--rows",
        "5000",
        "--hot-rows",
        "50",
        "--threads",
        "1",
        "--warm-secs",
        "1",
        "--measure-secs",
        "1",
        "--interval-ms",
        "250",
        "--csv",
        "--set",
        "flush_method=fsync",
    ]);
    assert_eq!(csv.code, 0, "stderr: {}", csv.stderr);
    let lines: Vec<&str> = csv.stdout.lines().collect();
    assert_eq!(lines[0], "phase,t,reads_per_sec,misses,pages_read");
    assert_eq!(lines.len(), 1 + 4 + 4 + 4, "{}", csv.stdout);
    assert!(lines[5].starts_with("cold,") && lines[12].starts_with("warm,"));
    let bad = minnow(["bench", "warmup", "--hot-pct", "101"]);
    assert_eq!(bad.code, 2, "stderr: {}", bad.stderr);
    // Emulated numbers must keep their label: CSV has no place for it.
    let bad = minnow(["bench", "warmup", "--hdd", "--csv"]);
    assert_eq!(bad.code, 2, "stderr: {}", bad.stderr);
    assert!(bad.stderr.contains("--hdd"), "stderr: {}", bad.stderr);
}

#[test]
fn compression_compares_layouts_cold() {
    let run = minnow([
        "bench",
        "compression",
        "--rows",
        "3000",
        "--layouts",
        "uncompressed,zlib6_8k",
        "--workloads",
        "point,filesort",
        "--secs",
        "5",
        "--max-queries",
        "20",
        "--filesort-rows",
        "50",
        "--threads",
        "2",
        "--json",
        "--set",
        "flush_method=fsync",
    ]);
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let j = run.json();
    assert_eq!(j["workload"], "compression");
    let loads = j["loads"].as_array().unwrap();
    assert_eq!(loads.len(), 2);
    assert_eq!(loads[0]["layout"], "uncompressed");
    assert_eq!(loads[1]["table_file"], "zip8k_zlib-6.ibd");
    let (plain, zip) = (
        loads[0]["table_bytes"].as_u64().unwrap(),
        loads[1]["table_bytes"].as_u64().unwrap(),
    );
    assert!(zip > 0 && zip < plain, "{zip} vs {plain}");
    let runs = j["runs"].as_array().unwrap();
    // 2 workloads x 2 layouts, layouts back to back.
    assert_eq!(runs.len(), 4);
    assert_eq!(runs[0]["workload"], "point");
    assert_eq!(runs[1]["layout"], "zlib6_8k");
    for r in runs {
        assert!(r["queries"].as_u64().unwrap() >= 1, "{r}");
    }
    // The compressed table's reads inflate blocks; the plain one's never do.
    assert!(
        runs[1]["decompress_ops"].as_u64().unwrap() > 0,
        "{}",
        runs[1]
    );
    assert_eq!(runs[0]["decompress_ops"], 0);

    // Only the compressed layout: the plain table is still loaded, to size the pool.
    let csv = minnow([
        "bench",
        "compression",
        "--rows",
        "2000",
        "--layouts",
        "lz4",
        "--workloads",
        "range",
        "--secs",
        "5",
        "--max-queries",
        "10",
        "--csv",
        "--set",
        "flush_method=fsync",
    ]);
    assert_eq!(csv.code, 0, "stderr: {}", csv.stderr);
    let lines: Vec<&str> = csv.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", csv.stdout);
    assert!(lines[1].starts_with("0,lz4_8k,range,4,"), "{}", lines[1]);

    let bad = minnow(["bench", "compression", "--layouts", "gzip"]);
    assert_ne!(bad.code, 0);
}
