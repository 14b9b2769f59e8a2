//! The repository's files, and `lab list` and `lab start`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::manifest::{self, Manifest};
use crate::{Error, Result, markers};

/// The repository (or started workspace) root: the nearest directory at or above the current
/// one that holds labs/labs.toml.
pub fn root() -> Result<PathBuf> {
    let here = std::env::current_dir()?;
    here.ancestors()
        .find(|d| d.join(manifest::PATH).is_file() && d.join("Cargo.toml").is_file())
        .map(Path::to_path_buf)
        .ok_or_else(|| {
            Error(format!(
                "no {} in {} or above: run cargo xtask inside the repository",
                manifest::PATH,
                here.display()
            ))
        })
}

/// The files that make up the workspace, relative to `root`: `git ls-files` in a clone; in a
/// started workspace (no .git), every file except `target/` and `.git/` directories.
pub fn files(root: &Path) -> Result<Vec<PathBuf>> {
    if root.join(".git").exists() {
        let out = Command::new("git")
            .arg("-C")
            .arg(root)
            .args(["ls-files", "-z"])
            .output()
            .map_err(|e| Error(format!("running git ls-files: {e}")))?;
        if !out.status.success() {
            return Err(Error(format!(
                "git ls-files failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        return Ok(out
            .stdout
            .split(|&b| b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| PathBuf::from(String::from_utf8_lossy(p).into_owned()))
            // A tracked file deleted in the working tree is not part of it.
            .filter(|p| root.join(p).is_file())
            .collect());
    }
    let mut out = Vec::new();
    walk(root, Path::new(""), &mut out)?;
    out.sort();
    Ok(out)
}

fn walk(root: &Path, rel: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(root.join(rel))? {
        let entry = entry?;
        let name = entry.file_name();
        let path = rel.join(&name);
        let kind = entry.file_type()?;
        if kind.is_dir() {
            if name != "target" && name != ".git" {
                walk(root, &path, out)?;
            }
        } else if kind.is_file() {
            out.push(path);
        }
    }
    Ok(())
}

/// Every region of every Rust file under `root`, with the file's path and text.
pub fn regions(root: &Path) -> Result<Vec<(PathBuf, String, Vec<markers::Region>)>> {
    let mut out = Vec::new();
    for rel in files(root)? {
        if rel.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(root.join(&rel))
            .map_err(|e| Error(format!("{}: {e}", rel.display())))?;
        let found = markers::parse(&rel.display().to_string(), &text)?;
        out.push((rel, text, found));
    }
    Ok(out)
}

/// `cargo xtask lab list`.
pub fn list(root: &Path) -> Result<()> {
    let m = Manifest::load(root)?;
    let all = regions(root)?;
    println!(
        "{:>3}  {:<12} {:<28} {:>5} {:>6} {:>7}  handout",
        "lab", "name", "title", "tests", "engine", "regions"
    );
    for lab in &m.lab {
        let own = lab.test.iter().filter(|t| t.lab_specific).count();
        let regions: usize = all
            .iter()
            .map(|(_, _, r)| r.iter().filter(|r| r.lab == lab.number).count())
            .sum();
        println!(
            "{:>3}  {:<12} {:<28} {:>5} {:>6} {:>7}  {}",
            lab.number,
            lab.name,
            lab.title,
            own,
            lab.test.len() - own,
            regions,
            lab.handout
        );
    }
    println!("\nstart one with: cargo xtask lab start N DIR");
    Ok(())
}

/// `cargo xtask lab start N DIR [--over]`.
pub fn start(root: &Path, n: u32, dir: &Path, over: bool) -> Result<()> {
    let m = Manifest::load(root)?;
    let lab = m.lab(n)?;
    // Parse everything first: a malformed marker anywhere stops the start before a write.
    let mut plan = Vec::new();
    let mut rewritten = Vec::new();
    for rel in files(root)? {
        let is_rust = rel.extension().is_some_and(|e| e == "rs");
        let new = if is_rust {
            let text = std::fs::read_to_string(root.join(&rel))
                .map_err(|e| Error(format!("{}: {e}", rel.display())))?;
            let name = rel.display().to_string();
            markers::parse(&name, &text)?;
            let out = markers::start(&name, &text, n, &lab.handout)?;
            if out.is_some() {
                rewritten.push(name);
            }
            out
        } else {
            None
        };
        plan.push((rel, new));
    }
    if rewritten.is_empty() {
        return Err(Error(format!("lab {n} has no marked region in the source")));
    }
    if dir.exists() && std::fs::read_dir(dir)?.next().is_some() && !over {
        return Err(Error(format!(
            "{} is not empty (a lab starts in a new or empty directory)",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir)?;
    let (root_abs, dir_abs) = (root.canonicalize()?, dir.canonicalize()?);
    if dir_abs.starts_with(&root_abs) {
        return Err(Error(format!(
            "{} is inside the repository: start the lab somewhere else",
            dir.display()
        )));
    }
    let mut written = 0;
    for (rel, new) in &plan {
        let from = root.join(rel);
        let to = dir.join(rel);
        let content = match new {
            Some(text) => text.clone().into_bytes(),
            None => std::fs::read(&from)?,
        };
        let existed = match std::fs::read(&to) {
            Ok(old) if old == content => continue,
            Ok(_) => true,
            Err(_) => false,
        };
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&to, &content)?;
        let source = std::fs::metadata(&from)?;
        std::fs::set_permissions(&to, source.permissions())?;
        if new.is_none() && !existed {
            // A new copy of an unchanged file keeps the source's time, so that a build in a
            // target dir the repository already built (CI's) takes the copy as built and
            // compiles only what the lab changed. A file that replaces another copy (a
            // starter from the lab before, with --over) gets the current time: an artifact
            // built from what it replaces is older than it and must be rebuilt.
            std::fs::File::options()
                .write(true)
                .open(&to)?
                .set_modified(source.modified()?)?;
        }
        written += 1;
    }
    println!(
        "lab {n} ({}) started in {}: {} files written, starters in {}",
        lab.title,
        dir.display(),
        written,
        rewritten.join(", ")
    );
    println!("next:");
    println!("  cd {}", dir.display());
    println!("  read {} (and the tour chapter {})", lab.handout, lab.tour);
    println!("  cargo xtask lab grade {n}    # fails until the functions are written");
    Ok(())
}
