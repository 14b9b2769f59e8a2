//! The lab markers in the engine's source, and the rewrite that turns a region into its starter.
//!
//! A region sits inside a function body, each marker on a line of its own:
//!
//! ```text
//!     // lab 1 begin: verify
//!     // lab 1 starter: Err(NotWritten::new(1, "verify").into())
//!     ... the reference code ...
//!     // lab 1 end
//! ```
//!
//! Starting lab 1 replaces the whole region (begin to end, inclusive) by two lines at the begin
//! line's indentation: `// lab 1: write verify here (HANDOUT)` and the starter, uncommented.
//! Regions never nest; every begin is followed at once by its starter line; a malformed marker
//! is an error naming the file and line, found before anything is written.

use crate::Error;

/// One marked region of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    /// The lab's number.
    pub lab: u32,
    /// The function the student writes (as the handout names it).
    pub name: String,
    /// The starter code (one line of Rust).
    pub starter: String,
    /// The begin line's index (0-based).
    pub begin: usize,
    /// The end line's index (0-based).
    pub end: usize,
    /// The begin line's indentation.
    pub indent: String,
}

/// What a line that starts with `// lab N` says.
enum Marker<'a> {
    Begin(u32, &'a str),
    Starter(u32, &'a str),
    End(u32),
    /// `// lab N: ...`, the line a started workspace has in place of a region.
    Placeholder,
}

/// Reads a marker line; `Ok(None)` for a line that is not one.
fn marker(line: &str) -> Result<Option<Marker<'_>>, String> {
    let Some(rest) = line.trim_start().strip_prefix("// lab ") else {
        return Ok(None);
    };
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return Ok(None);
    }
    let (number, rest) = rest.split_at(digits);
    let lab: u32 = number
        .parse()
        .map_err(|_| format!("lab number {number:?} is too large"))?;
    if let Some(name) = rest.strip_prefix(" begin:") {
        let name = name.trim();
        if name.is_empty() {
            return Err(format!("`// lab {lab} begin:` names no function"));
        }
        Ok(Some(Marker::Begin(lab, name)))
    } else if let Some(code) = rest.strip_prefix(" starter:") {
        let code = code.trim();
        if code.is_empty() {
            return Err(format!("`// lab {lab} starter:` has no code"));
        }
        Ok(Some(Marker::Starter(lab, code)))
    } else if rest.trim_end() == " end" {
        Ok(Some(Marker::End(lab)))
    } else if rest.starts_with(": ") {
        Ok(Some(Marker::Placeholder))
    } else {
        Err(format!(
            "malformed lab marker (expected `// lab {lab} begin: NAME`, `// lab {lab} starter: CODE` \
             or `// lab {lab} end`)"
        ))
    }
}

/// Every region of `text` (the file `path`), in order, or the first malformed marker.
pub fn parse(path: &str, text: &str) -> Result<Vec<Region>, Error> {
    let at = |i: usize, msg: String| Error(format!("{path}:{}: {msg}", i + 1));
    let lines: Vec<&str> = text.lines().collect();
    let mut regions = Vec::new();
    let mut open: Option<Region> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        match marker(line).map_err(|m| at(i, m))? {
            None | Some(Marker::Placeholder) => {}
            Some(Marker::Begin(lab, name)) => {
                if let Some(r) = &open {
                    return Err(at(
                        i,
                        format!(
                            "lab {lab} region `{name}` begins inside lab {} region `{}` \
                             (begun at line {}): regions never nest",
                            r.lab,
                            r.name,
                            r.begin + 1
                        ),
                    ));
                }
                let starter = match lines.get(i + 1).map(|l| marker(l)) {
                    Some(Ok(Some(Marker::Starter(n, code)))) if n == lab => code.to_string(),
                    Some(Err(m)) => return Err(at(i + 1, m)),
                    _ => {
                        return Err(at(
                            i,
                            format!(
                                "lab {lab} region `{name}` has no `// lab {lab} starter: CODE` \
                                 line right after its begin line"
                            ),
                        ));
                    }
                };
                let indent = line[..line.len() - line.trim_start().len()].to_string();
                open = Some(Region {
                    lab,
                    name: name.to_string(),
                    starter,
                    begin: i,
                    end: i,
                    indent,
                });
                i += 1; // the starter line
            }
            Some(Marker::Starter(lab, _)) => {
                return Err(at(
                    i,
                    format!("`// lab {lab} starter:` outside the line after a begin marker"),
                ));
            }
            Some(Marker::End(lab)) => match open.take() {
                Some(mut r) if r.lab == lab => {
                    r.end = i;
                    regions.push(r);
                }
                Some(r) => {
                    return Err(at(
                        i,
                        format!(
                            "`// lab {lab} end` closes lab {} region `{}` (begun at line {})",
                            r.lab,
                            r.name,
                            r.begin + 1
                        ),
                    ));
                }
                None => return Err(at(i, format!("`// lab {lab} end` without a begin"))),
            },
        }
        i += 1;
    }
    if let Some(r) = open {
        return Err(at(
            r.begin,
            format!(
                "lab {} region `{}` is never closed (no `// lab {} end`)",
                r.lab, r.name, r.lab
            ),
        ));
    }
    Ok(regions)
}

/// `text` with each of lab `lab`'s regions replaced by its placeholder line and starter, at
/// the region's indentation; other labs' regions are kept as they are. `None` when the file
/// has no region of that lab. Line endings are `\n`; a final newline is kept as it was.
pub fn start(path: &str, text: &str, lab: u32, handout: &str) -> Result<Option<String>, Error> {
    let regions: Vec<Region> = parse(path, text)?
        .into_iter()
        .filter(|r| r.lab == lab)
        .collect();
    if regions.is_empty() {
        return Ok(None);
    }
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::with_capacity(text.len());
    let mut next = 0;
    for r in &regions {
        for line in &lines[next..r.begin] {
            out.push_str(line);
            out.push('\n');
        }
        out.push_str(&format!(
            "{}// lab {}: write {} here ({handout})\n{}{}\n",
            r.indent, r.lab, r.name, r.indent, r.starter
        ));
        next = r.end + 1;
    }
    for line in &lines[next..] {
        out.push_str(line);
        out.push('\n');
    }
    if !text.ends_with('\n') {
        out.pop();
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file with two regions. Its marker lines are spelled `%% lab` here, and turned into
    /// comments by [`file`], so that this source file holds no markers itself (`lab start`
    /// would otherwise rewrite it).
    const FILE: &str = "fn a() -> Result<u32, E> {
    let x = 1;
    %% lab 2 begin: a
    %% lab 2 starter: Err(NotWritten::new(2, \"a\").into())
    let y = x + 1;
    Ok(y)
    %% lab 2 end
}

fn b() -> Result<(), E> {
        %% lab 3 begin: b
        %% lab 3 starter: let _ = 1; Err(E)
        Ok(())
        %% lab 3 end
}
";

    fn file() -> String {
        unmark(FILE)
    }

    fn unmark(text: &str) -> String {
        text.replace("%% lab", "// lab")
    }

    #[test]
    fn parses_regions_with_their_lines_and_indentation() {
        let r = parse("f.rs", &file()).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].lab, r[0].name.as_str()), (2, "a"));
        assert_eq!(r[0].starter, "Err(NotWritten::new(2, \"a\").into())");
        assert_eq!((r[0].begin, r[0].end, r[0].indent.as_str()), (2, 6, "    "));
        assert_eq!((r[1].lab, r[1].begin, r[1].end), (3, 10, 13));
        assert_eq!(r[1].indent, "        ");
    }

    #[test]
    fn start_rewrites_only_that_labs_region_keeping_indentation() {
        let out = start("f.rs", &file(), 2, "docs/labs/02-lru.md")
            .unwrap()
            .unwrap();
        assert_eq!(
            out,
            unmark(
                "fn a() -> Result<u32, E> {
    let x = 1;
    %% lab 2: write a here (docs/labs/02-lru.md)
    Err(NotWritten::new(2, \"a\").into())
}

fn b() -> Result<(), E> {
        %% lab 3 begin: b
        %% lab 3 starter: let _ = 1; Err(E)
        Ok(())
        %% lab 3 end
}
"
            )
        );
        // The started file still parses: lab 3's region is intact, the placeholder is no marker.
        let left = parse("f.rs", &out).unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].lab, 3);
        let out3 = start("f.rs", &file(), 3, "h.md").unwrap().unwrap();
        assert!(
            out3.contains("\n        // lab 3: write b here (h.md)\n        let _ = 1; Err(E)\n}")
        );
        assert!(out3.contains("// lab 2 begin: a"));
    }

    #[test]
    fn a_file_without_the_lab_is_left_alone() {
        assert_eq!(start("f.rs", &file(), 5, "h.md").unwrap(), None);
        assert_eq!(start("g.rs", "fn main() {}", 1, "h.md").unwrap(), None);
    }

    #[test]
    fn a_missing_final_newline_stays_missing() {
        let text = "x\n// lab 1 begin: f\n// lab 1 starter: s\ny\n// lab 1 end\nz";
        assert_eq!(
            start("f.rs", text, 1, "h").unwrap().unwrap(),
            "x\n// lab 1: write f here (h)\ns\nz"
        );
    }

    fn err(text: &str) -> String {
        parse("src/x.rs", text).unwrap_err().0
    }

    #[test]
    fn a_missing_starter_line_is_an_error_naming_file_and_line() {
        let e = err("fn f() {\n    // lab 1 begin: f\n    Ok(())\n    // lab 1 end\n}\n");
        assert!(e.starts_with("src/x.rs:2: "), "{e}");
        assert!(e.contains("no `// lab 1 starter: CODE`"), "{e}");
        // A starter of another lab does not count either.
        let e = err("// lab 1 begin: f\n// lab 2 starter: x\n// lab 1 end\n");
        assert!(e.starts_with("src/x.rs:1: "), "{e}");
    }

    #[test]
    fn an_empty_starter_or_name_is_an_error() {
        let e = err("// lab 1 begin: f\n// lab 1 starter:   \n// lab 1 end\n");
        assert!(e.starts_with("src/x.rs:2: "), "{e}");
        assert!(e.contains("has no code"), "{e}");
        let e = err("// lab 1 begin:\n// lab 1 starter: x\n// lab 1 end\n");
        assert!(e.starts_with("src/x.rs:1: "), "{e}");
    }

    #[test]
    fn nested_and_unclosed_regions_are_errors() {
        let e = err(
            "// lab 1 begin: f\n// lab 1 starter: x\n// lab 2 begin: g\n// lab 2 starter: y\n// lab 2 end\n// lab 1 end\n",
        );
        assert!(e.starts_with("src/x.rs:3: "), "{e}");
        assert!(e.contains("never nest"), "{e}");
        let e = err("a\n// lab 4 begin: f\n// lab 4 starter: x\nb\n");
        assert!(e.starts_with("src/x.rs:2: "), "{e}");
        assert!(e.contains("never closed"), "{e}");
        let e = err("// lab 1 begin: f\n// lab 1 starter: x\n// lab 2 end\n");
        assert!(e.starts_with("src/x.rs:3: "), "{e}");
        let e = err("x\n// lab 1 end\n");
        assert!(e.starts_with("src/x.rs:2: "), "{e}");
        assert!(e.contains("without a begin"), "{e}");
    }

    #[test]
    fn stray_and_malformed_markers_are_errors_but_prose_is_not() {
        let e = err("// lab 1 starter: x\n");
        assert!(e.starts_with("src/x.rs:1: "), "{e}");
        let e = err("    // lab 1 beginning: f\n");
        assert!(e.contains("malformed lab marker"), "{e}");
        // Comments that merely mention a lab, and doc comments, are not markers.
        let ok = "// lab work is fun\n//! `// lab N begin: NAME`\n/// // lab 1 end\n";
        assert_eq!(parse("src/x.rs", ok).unwrap(), Vec::new());
    }
}
