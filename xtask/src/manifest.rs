//! labs/labs.toml: the labs, their handouts, and each lab's graded tests.

use std::path::Path;

use serde::Deserialize;

use crate::{Error, Result};

/// The manifest's path, relative to the repository root.
pub const PATH: &str = "labs/labs.toml";

/// The whole manifest.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The labs, in course order.
    pub lab: Vec<Lab>,
}

/// One lab.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lab {
    /// Its number.
    pub number: u32,
    /// A short name (`checksums`).
    pub name: String,
    /// Its title.
    pub title: String,
    /// The handout, relative to the root.
    pub handout: String,
    /// The tour chapter it builds on.
    pub tour: String,
    /// Its tests.
    #[serde(default)]
    pub test: Vec<Test>,
}

/// One graded test.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Test {
    /// The package (`minnow-page`).
    pub package: String,
    /// An integration test target (`lab1`) or `lib`.
    pub target: String,
    /// The test's path within the target.
    pub name: String,
    /// Its points.
    pub points: u32,
    /// What it checks.
    pub checks: String,
    /// A hint for when it fails.
    pub hint: String,
    /// True for the lab's own tests (which must fail on a fresh starter), false for the
    /// engine's tests of that module, listed for completeness.
    pub lab_specific: bool,
}

impl Manifest {
    /// Reads the manifest under `root`.
    pub fn load(root: &Path) -> Result<Manifest> {
        let path = root.join(PATH);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| Error(format!("{}: {e}", path.display())))?;
        let m: Manifest = toml::from_str(&text).map_err(|e| Error(format!("{PATH}: {e}")))?;
        for (i, lab) in m.lab.iter().enumerate() {
            if m.lab[..i].iter().any(|l| l.number == lab.number) {
                return Err(Error(format!("{PATH}: lab {} is listed twice", lab.number)));
            }
        }
        Ok(m)
    }

    /// Lab `n`.
    pub fn lab(&self, n: u32) -> Result<&Lab> {
        self.lab.iter().find(|l| l.number == n).ok_or_else(|| {
            let known: Vec<String> = self.lab.iter().map(|l| l.number.to_string()).collect();
            Error(format!("no lab {n} (labs: {})", known.join(", ")))
        })
    }
}
