//! The README's first command: `minnow demo` runs end to end and reports what it checked.

use std::process::Command;

#[test]
fn demo_runs_and_checks_itself() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_minnow"))
        .args([
            "--json",
            "demo",
            "--pages",
            "96",
            "--commit-threads",
            "3",
            "--commits",
            "20",
            "--rows",
            "700",
        ])
        .arg("--dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["pages"], 96);
    assert_eq!(report["read_back_failures"], 0);
    assert_eq!(report["commits"], 60);
    assert_eq!(report["recovered_groups"], 60);
    assert_eq!(report["damaged_page"], 48);
    assert_eq!(report["damage_detected"], true);
    assert!(report["log_syncs"].as_u64().unwrap() <= 60);
    let t = &report["tables"];
    assert_eq!(t["rows"], 700);
    assert_eq!(t["covering"], true);
    assert_eq!(t["covering_rows"], 100);
    assert_eq!(t["fetching_rows"], 100);
    assert_eq!(t["checked_indexes"], 3);
    assert_eq!(t["reopen_redo_groups"], 0);
    assert!(dir.path().join("db").join("ibdata1").exists());
    assert!(dir.path().join("demo.ibd").exists());
}

#[test]
fn demo_text_output_ends_with_the_inspector() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_minnow"))
        .args([
            "demo",
            "--pages",
            "32",
            "--commits",
            "5",
            "--page-size",
            "4k",
            "--rows",
            "300",
        ])
        .args(["--backend", "io_uring", "--flush-method", "O_DIRECT"])
        .arg("--dir")
        .arg(dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("backend io_uring, flush method O_DIRECT, 4 KiB pages"),
        "{text}"
    );
    assert!(text.contains("damage found"), "{text}");
    assert!(text.contains("loaded 300 rows in key order"), "{text}");
    assert!(
        text.contains("INDEX"),
        "the inspector shows the table's B-tree pages: {text}"
    );
}
