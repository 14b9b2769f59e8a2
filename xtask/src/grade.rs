//! `lab grade` (run a lab's tests once, print a score) and `lab check` (the markers parse,
//! every listed test and handout exists).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::libtest::{self, Outcome};
use crate::manifest::{Manifest, Test};
use crate::{Error, Result, workspace};

/// `cargo test` for one package and target (`lib` or an integration test), with libtest's
/// arguments after `--`; returns stdout, stderr and whether it succeeded.
fn cargo_test(root: &Path, package: &str, target: &str, args: &[&str]) -> Result<(String, String)> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root).args(["test", "-p", package]);
    if target == "lib" {
        cmd.arg("--lib");
    } else {
        cmd.args(["--test", target]);
    }
    cmd.arg("--").args(args);
    let out = cmd
        .output()
        .map_err(|e| Error(format!("running cargo test: {e}")))?;
    Ok((
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// The test executables of the whole workspace, built as `cargo test --workspace` builds them
/// (so in CI, after that step, nothing compiles; `cargo test -p` of one package at a time would
/// build each with that package's features alone, a second build of every lab's crates):
/// (package, target) to the executable, `target` "lib" for a library's unit tests. A lab's
/// package is the directory it lives in under `crates/` (labs/labs.toml says so).
fn workspace_tests(root: &Path) -> Result<BTreeMap<(String, String), PathBuf>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let out = Command::new(cargo)
        .current_dir(root)
        .args(["test", "--workspace", "--no-run", "--message-format=json"])
        .output()
        .map_err(|e| Error(format!("running cargo test: {e}")))?;
    if !out.status.success() {
        return Err(Error(format!(
            "cargo test --workspace --no-run failed:\n{}",
            tail(&String::from_utf8_lossy(&out.stderr), 20)
        )));
    }
    let mut found = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let (Some(exe), Some(manifest)) = (v["executable"].as_str(), v["manifest_path"].as_str())
        else {
            continue;
        };
        if v["reason"] != "compiler-artifact" || v["profile"]["test"] != true {
            continue;
        }
        let Some(package) = Path::new(manifest)
            .parent()
            .and_then(|d| d.file_name())
            .and_then(|n| n.to_str())
        else {
            continue;
        };
        let kinds: Vec<&str> = v["target"]["kind"]
            .as_array()
            .map(|k| k.iter().filter_map(|x| x.as_str()).collect())
            .unwrap_or_default();
        let target = if kinds.contains(&"lib") {
            "lib".to_string()
        } else if kinds.contains(&"test") {
            v["target"]["name"].as_str().unwrap_or_default().to_string()
        } else {
            continue;
        };
        found.insert((package.to_string(), target), PathBuf::from(exe));
    }
    Ok(found)
}

/// The last `n` lines of `text`.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The tests grouped by (package, target), in manifest order within each group.
fn groups<'t>(
    tests: impl IntoIterator<Item = &'t Test>,
) -> BTreeMap<(&'t str, &'t str), Vec<&'t Test>> {
    let mut g: BTreeMap<(&str, &str), Vec<&Test>> = BTreeMap::new();
    for t in tests {
        g.entry((t.package.as_str(), t.target.as_str()))
            .or_default()
            .push(t);
    }
    g
}

/// `cargo xtask lab grade N [--expect-fail]`: true when the run is what was asked for (every
/// lab-specific test passes; with `expect_fail`, every one fails after a successful build).
pub fn grade(root: &Path, n: u32, expect_fail: bool) -> Result<bool> {
    let m = Manifest::load(root)?;
    let lab = m.lab(n)?;
    if lab.test.is_empty() {
        return Err(Error(format!("lab {n} lists no tests")));
    }
    // With --expect-fail only the lab's own tests matter (the engine's may pass or fail on a
    // starter), so only they are built and run: CI pays for no engine test binary here.
    let run: Vec<&Test> = lab
        .test
        .iter()
        .filter(|t| t.lab_specific || !expect_fail)
        .collect();
    let mut results: BTreeMap<(&str, &str, &str), Outcome> = BTreeMap::new();
    for ((package, target), tests) in groups(run.iter().copied()) {
        eprintln!("running {} test(s) of {package} ({target})...", tests.len());
        let mut args = vec!["--exact"];
        args.extend(tests.iter().map(|t| t.name.as_str()));
        let (stdout, stderr) = cargo_test(root, package, target, &args)?;
        let run = libtest::parse(&stdout);
        if !run.started {
            return Err(Error(format!(
                "{package} ({target}) did not build:\n{}",
                tail(&stderr, 40)
            )));
        }
        let missing: Vec<&str> = tests
            .iter()
            .map(|t| t.name.as_str())
            .filter(|name| !run.tests.contains_key(*name))
            .collect();
        if !missing.is_empty() {
            return Err(Error(format!(
                "labs/labs.toml is stale: {package} ({target}) has no test {}",
                missing.join(", ")
            )));
        }
        for t in tests {
            results.insert((package, target, t.name.as_str()), run.tests[&t.name]);
        }
    }

    println!("\nlab {n}: {}\n", lab.title);
    println!("{:<4} {:>3}  {:<52} checks", "", "pts", "test");
    let (mut score, mut total) = (0, 0);
    let mut failed = Vec::new();
    let mut vacuous = Vec::new();
    for t in &run {
        let outcome = results[&(t.package.as_str(), t.target.as_str(), t.name.as_str())];
        total += t.points;
        let mark = match outcome {
            Outcome::Passed => {
                score += t.points;
                if t.lab_specific {
                    vacuous.push(t);
                }
                "pass"
            }
            Outcome::Failed => {
                if t.lab_specific {
                    failed.push(t);
                }
                "FAIL"
            }
            Outcome::Ignored => "skip",
        };
        let kind = if t.lab_specific { "" } else { " (engine)" };
        println!(
            "{mark:<4} {:>3}  {:<52} {}{kind}",
            t.points, t.name, t.checks
        );
        if outcome == Outcome::Failed {
            println!("{:<10}hint: {}", "", t.hint);
        }
    }
    println!("\nscore: {score}/{total}");
    if run.len() < lab.test.len() {
        println!(
            "({} engine tests not run: with --expect-fail only the lab's own tests count)",
            lab.test.len() - run.len()
        );
    }
    let own = lab.test.iter().filter(|t| t.lab_specific).count();
    if expect_fail {
        if vacuous.is_empty() {
            println!(
                "expect-fail: all {own} lab-specific tests fail on this workspace, as they must"
            );
            return Ok(true);
        }
        for t in &vacuous {
            println!(
                "expect-fail: {} ({} {}) passes without the lab's code: a vacuous test",
                t.name, t.package, t.target
            );
        }
        return Ok(false);
    }
    if failed.is_empty() {
        println!("lab {n}: every lab test passes");
    }
    Ok(failed.is_empty())
}

/// `cargo xtask lab check`.
pub fn check(root: &Path) -> Result<()> {
    let m = Manifest::load(root)?;
    let mut problems = Vec::new();
    let all = workspace::regions(root)?;
    let labs: BTreeSet<u32> = m.lab.iter().map(|l| l.number).collect();
    for (path, _, regions) in &all {
        for r in regions {
            if !labs.contains(&r.lab) {
                problems.push(format!(
                    "{}:{}: region `{}` of lab {}, which labs/labs.toml does not list",
                    path.display(),
                    r.begin + 1,
                    r.name,
                    r.lab
                ));
            }
        }
    }
    for lab in &m.lab {
        let count: usize = all
            .iter()
            .map(|(_, _, r)| r.iter().filter(|r| r.lab == lab.number).count())
            .sum();
        if count == 0 {
            problems.push(format!(
                "lab {}: no marked region in the source",
                lab.number
            ));
        }
        for file in [&lab.handout, &lab.tour] {
            if !root.join(file).is_file() {
                problems.push(format!("lab {}: {file} does not exist", lab.number));
            }
        }
        if !lab.test.iter().any(|t| t.lab_specific) {
            problems.push(format!("lab {}: no lab-specific test", lab.number));
        }
    }
    let every: Vec<Test> = m.lab.into_iter().flat_map(|l| l.test).collect();
    let built = workspace_tests(root)?;
    for ((package, target), tests) in groups(&every) {
        eprintln!("listing the tests of {package} ({target})...");
        let Some(exe) = built.get(&(package.to_string(), target.to_string())) else {
            problems.push(format!(
                "{package} ({target}): no such test target in the workspace"
            ));
            continue;
        };
        let out = Command::new(exe)
            .current_dir(root.join("crates").join(package))
            .arg("--list")
            .output()
            .map_err(|e| Error(format!("running {}: {e}", exe.display())))?;
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        let names: BTreeSet<String> = libtest::parse_list(&stdout).into_iter().collect();
        if names.is_empty() {
            problems.push(format!(
                "{package} ({target}): no tests listed:\n{}",
                tail(&stderr, 20)
            ));
            continue;
        }
        for t in tests {
            if !names.contains(&t.name) {
                problems.push(format!("{package} ({target}) has no test {}", t.name));
            }
        }
    }
    if problems.is_empty() {
        let regions: usize = all.iter().map(|(_, _, r)| r.len()).sum();
        println!(
            "lab check: {} labs, {regions} regions, {} tests: all there",
            labs.len(),
            every.len()
        );
        Ok(())
    } else {
        Err(Error(format!("lab check:\n  {}", problems.join("\n  "))))
    }
}
