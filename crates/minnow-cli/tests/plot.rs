//! `minnow plot`: an SVG from a bench's CSV, and its usage errors.

mod common;

use common::minnow;

#[test]
fn plot_writes_an_svg_and_names_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("r.csv");
    std::fs::write(
        &csv,
        "organisation,query,threads,qps\nclustered,A,1,10\nheap,A,1,8\nclustered,A,4,30\nheap,A,4,12\n",
    )
    .unwrap();
    let out = dir.path().join("r.svg");
    let run = minnow([
        "plot",
        csv.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--x",
        "threads",
        "--y",
        "qps",
        "--series",
        "organisation",
        "--facet",
        "query",
        "--log-x",
        "--title",
        "t",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let svg = std::fs::read_to_string(&out).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains(">clustered<") && svg.contains(">heap<"));
    // To stdout, as bars, filtered.
    let bars = minnow([
        "plot",
        csv.to_str().unwrap(),
        "--kind",
        "bar",
        "--x",
        "query",
        "--y",
        "qps",
        "--series",
        "organisation",
        "--where",
        "threads=4",
    ]);
    assert_eq!(bars.code, 0, "{}", bars.stderr);
    assert!(
        bars.stdout.contains("<title>clustered: 30</title>"),
        "{}",
        bars.stdout
    );
    let bad = minnow([
        "plot",
        csv.to_str().unwrap(),
        "--x",
        "threads",
        "--y",
        "nope",
    ]);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("nope"), "{}", bad.stderr);
    let bad = minnow(["plot", "/nonexistent.csv", "--x", "a", "--y", "b"]);
    assert_eq!(bad.code, 2);
}
