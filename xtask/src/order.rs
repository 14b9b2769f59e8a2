//! `lab order`: the labs in the order that rebuilds least when they are started one after
//! another in one directory, as CI checks every starter.
//!
//! Starting lab N rewrites the files that hold its marked regions; starting the next lab in the
//! same directory writes them back. Cargo rebuilds a rewritten crate, and every crate above it,
//! whenever the next lab's tests use it. In course order that is costly: lab 1 stubs
//! `minnow-page`, the bottom of the graph, so lab 2 rebuilds the page crate and everything
//! between it and the buffer pool. Taking the labs whose crates sit highest first avoids it: a
//! crate written back afterwards sits above every later lab's crates, so no later test uses it
//! and nothing rebuilds it. Each lab then rebuilds only the crates it stubs (and the crates
//! between them and its tests).
//!
//! A crate's height is the number of workspace crates it depends on, directly or not (normal
//! dependencies, from each `crates/*/Cargo.toml`): a crate always sits higher than anything it
//! depends on. A lab's height is that of its highest package; ties go in course order.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::manifest::Manifest;
use crate::{Error, Result};

/// Each workspace crate under `root/crates` with the workspace crates it depends on directly.
fn crate_graph(root: &Path) -> Result<BTreeMap<String, Vec<String>>> {
    let mut raw: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for entry in std::fs::read_dir(root.join("crates"))? {
        let manifest = entry?.path().join("Cargo.toml");
        if !manifest.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&manifest)
            .map_err(|e| Error(format!("{}: {e}", manifest.display())))?;
        let doc: toml::Table =
            toml::from_str(&text).map_err(|e| Error(format!("{}: {e}", manifest.display())))?;
        let name = doc
            .get("package")
            .and_then(|p| p.get("name"))
            .and_then(|n| n.as_str())
            .ok_or_else(|| Error(format!("{}: no package name", manifest.display())))?;
        let deps = doc
            .get("dependencies")
            .and_then(|d| d.as_table())
            .map(|t| t.keys().cloned().collect())
            .unwrap_or_default();
        raw.insert(name.to_string(), deps);
    }
    // Only the workspace's own crates matter: registry crates never change.
    let names: BTreeSet<String> = raw.keys().cloned().collect();
    Ok(raw
        .into_iter()
        .map(|(name, deps)| {
            let own = deps.into_iter().filter(|d| names.contains(d)).collect();
            (name, own)
        })
        .collect())
}

/// The number of crates `name` depends on, directly or not. A dependency cycle (cargo refuses
/// one, but the walk must end on any input) counts each crate once.
fn height(graph: &BTreeMap<String, Vec<String>>, name: &str) -> usize {
    let mut seen = BTreeSet::new();
    let mut todo = vec![name];
    while let Some(n) = todo.pop() {
        for d in graph.get(n).into_iter().flatten() {
            if d != name && seen.insert(d.as_str()) {
                todo.push(d);
            }
        }
    }
    seen.len()
}

/// `labs` (number, its packages) ordered highest first, ties in course order.
fn order(labs: &[(u32, Vec<String>)], graph: &BTreeMap<String, Vec<String>>) -> Vec<u32> {
    let mut keyed: Vec<(usize, u32)> = labs
        .iter()
        .map(|(n, packages)| {
            let h = packages.iter().map(|p| height(graph, p)).max().unwrap_or(0);
            (h, *n)
        })
        .collect();
    keyed.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    keyed.into_iter().map(|(_, n)| n).collect()
}

/// `cargo xtask lab order`: every lab's number, one a line, in the order that rebuilds least.
pub fn print(root: &Path) -> Result<()> {
    let m = Manifest::load(root)?;
    let graph = crate_graph(root)?;
    let labs: Vec<(u32, Vec<String>)> = m
        .lab
        .iter()
        .map(|l| {
            let packages: BTreeSet<String> = l.test.iter().map(|t| t.package.clone()).collect();
            (l.number, packages.into_iter().collect())
        })
        .collect();
    for n in order(&labs, &graph) {
        println!("{n}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(edges: &[(&str, &[&str])]) -> BTreeMap<String, Vec<String>> {
        edges
            .iter()
            .map(|(n, d)| (n.to_string(), d.iter().map(|s| s.to_string()).collect()))
            .collect()
    }

    #[test]
    fn labs_in_higher_crates_come_first() {
        let g = graph(&[
            ("page", &[]),
            ("io", &["page"]),
            ("redo", &["page", "io"]),
            ("buf", &["page", "io", "redo"]),
            ("btree", &["buf", "page"]),
            ("engine", &["btree", "buf"]),
        ]);
        assert_eq!(height(&g, "page"), 0);
        assert_eq!(height(&g, "buf"), 3);
        assert_eq!(height(&g, "engine"), 5);
        let labs = vec![
            (1, vec!["page".to_string()]),
            (2, vec!["buf".to_string()]),
            (3, vec!["redo".to_string(), "buf".to_string()]),
            (4, vec!["btree".to_string()]),
            (5, vec!["engine".to_string()]),
        ];
        // 2 and 3 tie on `buf`: course order between them.
        assert_eq!(order(&labs, &g), vec![5, 4, 2, 3, 1]);
    }

    #[test]
    fn a_dependency_cycle_ends() {
        let g = graph(&[("a", &["b"]), ("b", &["a", "c"]), ("c", &[])]);
        assert_eq!(height(&g, "a"), 2);
        assert_eq!(height(&g, "c"), 0);
    }

    #[test]
    fn the_workspace_graph_puts_the_engine_above_the_page() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let g = crate_graph(&root).expect("the workspace's manifests parse");
        assert!(height(&g, "minnow-engine") > height(&g, "minnow-btree"));
        assert!(height(&g, "minnow-btree") > height(&g, "minnow-page"));
        assert_eq!(height(&g, "minnow-page"), 0);
    }
}
