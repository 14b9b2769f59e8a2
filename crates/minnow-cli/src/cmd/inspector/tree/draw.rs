//! `--dot` and `--svg`: the walked tree drawn as Graphviz or as SVG (see the parent module).

use std::fmt::Write as _;

use super::{PageReport, TreeReport};

fn range(p: &PageReport) -> String {
    format!(
        "{} .. {}",
        p.min_key.as_deref().unwrap_or("(empty)"),
        p.max_key.as_deref().unwrap_or("(empty)")
    )
}

fn escape_dot(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The tree as Graphviz: pages as boxes, child pointers solid, sibling links dashed.
pub(super) fn dot(r: &TreeReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "digraph \"{}\" {{\n  label=\"{}.{} (index {}, root page {})\";\n  node [shape=box, fontname=\"monospace\", fontsize=10];",
        escape_dot(&r.table),
        escape_dot(&r.table),
        escape_dot(&r.index),
        r.index_id,
        r.root
    );
    for lvl in &r.levels {
        let _ = write!(s, "  {{ rank=same;");
        for p in r.pages.iter().filter(|p| p.level == lvl.level) {
            let _ = write!(s, " p{};", p.page);
        }
        let _ = writeln!(s, " }}");
    }
    for p in &r.pages {
        let _ = writeln!(
            s,
            "  p{} [label=\"page {} (level {}, {} recs, {:.0}% full)\\n{}\"];",
            p.page,
            p.page,
            p.level,
            p.records,
            p.fill * 100.0,
            escape_dot(&range(p))
        );
        for c in &p.children {
            let _ = writeln!(s, "  p{} -> p{};", p.page, c);
        }
        if let Some(n) = p.next {
            let _ = writeln!(
                s,
                "  p{} -> p{} [style=dashed, constraint=false];",
                p.page, n
            );
        }
    }
    s.push_str("}\n");
    s
}

fn escape_xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The tree as SVG: one row of boxes per level, lines to children, dashed sibling arrows.
pub(super) fn svg(r: &TreeReport) -> String {
    const W: usize = 170;
    const H: usize = 54;
    const GAP_X: usize = 14;
    const GAP_Y: usize = 60;
    let widest = r.levels.iter().map(|l| l.pages).max().unwrap_or(1).max(1);
    let width = widest * (W + GAP_X) + GAP_X;
    let height = r.levels.len() * (H + GAP_Y) + GAP_Y;
    // Box positions: each level centred.
    let mut pos = std::collections::BTreeMap::new();
    for (row, lvl) in r.levels.iter().enumerate() {
        let on_level: Vec<&PageReport> = r.pages.iter().filter(|p| p.level == lvl.level).collect();
        let span = on_level.len() * (W + GAP_X) - GAP_X;
        let left = width.saturating_sub(span) / 2;
        for (i, p) in on_level.iter().enumerate() {
            pos.insert(
                p.page,
                (left + i * (W + GAP_X), GAP_Y / 2 + row * (H + GAP_Y)),
            );
        }
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         font-family=\"monospace\" font-size=\"10\">"
    );
    let _ = writeln!(
        s,
        "  <title>{}.{} (index {}, root page {})</title>",
        escape_xml(&r.table),
        escape_xml(&r.index),
        r.index_id,
        r.root
    );
    for p in &r.pages {
        let Some(&(x, y)) = pos.get(&p.page) else {
            continue;
        };
        for c in &p.children {
            if let Some(&(cx, cy)) = pos.get(c) {
                let _ = writeln!(
                    s,
                    "  <line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#888\"/>",
                    x + W / 2,
                    y + H,
                    cx + W / 2,
                    cy
                );
            }
        }
        if let Some(n) = p.next
            && let Some(&(nx, ny)) = pos.get(&n)
        {
            let _ = writeln!(
                s,
                "  <line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#36c\" \
                 stroke-dasharray=\"4 3\"/>",
                x + W,
                y + H / 2,
                nx,
                ny + H / 2
            );
        }
    }
    for p in &r.pages {
        let Some(&(x, y)) = pos.get(&p.page) else {
            continue;
        };
        let fill = (p.fill.clamp(0.0, 1.0) * (W - 2) as f64) as usize;
        let _ = writeln!(
            s,
            "  <g><rect x=\"{x}\" y=\"{y}\" width=\"{W}\" height=\"{H}\" fill=\"#fff\" \
             stroke=\"#333\"/><rect x=\"{}\" y=\"{}\" width=\"{fill}\" height=\"4\" \
             fill=\"#6a6\"/>",
            x + 1,
            y + H - 5
        );
        let lines = [
            format!(
                "page {} L{} {} recs {:.0}%",
                p.page,
                p.level,
                p.records,
                p.fill * 100.0
            ),
            format!("min {}", p.min_key.as_deref().unwrap_or("-")),
            format!("max {}", p.max_key.as_deref().unwrap_or("-")),
        ];
        for (i, line) in lines.iter().enumerate() {
            let short: String = line.chars().take(27).collect();
            let _ = writeln!(
                s,
                "    <text x=\"{}\" y=\"{}\">{}</text>",
                x + 4,
                y + 13 + i * 13,
                escape_xml(&short)
            );
        }
        s.push_str("  </g>\n");
    }
    s.push_str("</svg>\n");
    s
}
