//! Reading what a `cargo test` run printed: libtest's `test NAME ... ok|FAILED|ignored` lines,
//! and `cargo test -- --list`'s `NAME: test` lines.

use std::collections::BTreeMap;

/// How one test ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// `ok`.
    Passed,
    /// `FAILED`.
    Failed,
    /// `ignored`.
    Ignored,
}

/// What a run printed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Run {
    /// Each reported test and how it ended.
    pub tests: BTreeMap<String, Outcome>,
    /// Whether any test binary started (`running N tests`): false when the build failed.
    pub started: bool,
}

/// Reads libtest's pretty output (the default format).
pub fn parse(stdout: &str) -> Run {
    let mut run = Run::default();
    for line in stdout.lines() {
        if line.starts_with("running ") && line.ends_with(" tests") || line == "running 1 test" {
            run.started = true;
            continue;
        }
        let Some(rest) = line.strip_prefix("test ") else {
            continue;
        };
        let Some((name, result)) = rest.rsplit_once(" ... ") else {
            continue;
        };
        // `#[should_panic]` tests read `test NAME - should panic ... ok`.
        let name = name.strip_suffix(" - should panic").unwrap_or(name);
        let outcome = match result.trim_end() {
            "ok" => Outcome::Passed,
            "FAILED" => Outcome::Failed,
            r if r.starts_with("ignored") => Outcome::Ignored,
            _ => continue,
        };
        run.tests.insert(name.to_string(), outcome);
    }
    run
}

/// The test names in `cargo test -- --list` output.
pub fn parse_list(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_outcomes_and_ignores_everything_else() {
        let out = "
running 4 tests
test crc32_matches_the_test_vector ... ok
test checksum::tests::zero_page ... FAILED
test slow ... ignored, needs a campaign
test panics - should panic ... ok
test result: FAILED. 2 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out

failures:

---- checksum::tests::zero_page stdout ----
test something inside a message ... that is no outcome
";
        let run = parse(out);
        assert!(run.started);
        assert_eq!(run.tests.len(), 4);
        assert_eq!(run.tests["crc32_matches_the_test_vector"], Outcome::Passed);
        assert_eq!(run.tests["checksum::tests::zero_page"], Outcome::Failed);
        assert_eq!(run.tests["slow"], Outcome::Ignored);
        assert_eq!(run.tests["panics"], Outcome::Passed);
    }

    #[test]
    fn a_build_failure_starts_nothing() {
        let run = parse("error[E0308]: mismatched types\n");
        assert!(!run.started);
        assert!(run.tests.is_empty());
        assert!(parse("running 1 test\ntest a ... ok\n").started);
        assert!(parse("running 0 tests\n").started);
    }

    #[test]
    fn reads_a_list() {
        let out = "a::b: test\nc: test\nbench_x: benchmark\n\n2 tests, 1 benchmark\n";
        assert_eq!(parse_list(out), vec!["a::b".to_string(), "c".to_string()]);
    }
}
