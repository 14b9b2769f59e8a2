//! Charts of benchmark results as SVG: what `minnow plot` draws for docs/EXPERIMENTS.md.
//!
//! The SVG is written here rather than through a plotting crate: the work of a chart is in
//! choosing its ticks, panels and legend (below), and `plotters`, tried on E2's sweep, drew
//! log axes with ticks at 1, 10, 100 instead of the thread counts, no label at all on a
//! panel whose values span less than a factor of ten, legends over the lines, and has
//! neither facets nor grouped bars; the few lines that emit SVG elements are the easy part.
//! The CSV is read with the `csv` crate.
//!
//! A result file is a CSV table with a header row (what the benches and `minnow bench ...
//! --csv` write). A [`ChartSpec`] names the columns to draw: `x` and `y`, optionally a
//! `series` column (one line or one bar colour per distinct value, e.g. `organisation`) and a
//! `facet` column (one small panel per distinct value, e.g. `query`: the article's one graph
//! per query). Two kinds:
//!
//! - [`Kind::Line`]: numeric `x` (for example threads; `log_x` spaces 1, 4, 16, 64 evenly),
//!   one polyline with markers per series.
//! - [`Kind::Bar`]: `x` is a category (kept in first-seen order), one bar per series in each
//!   group.
//!
//! What every chart gets: x ticks at the data's own x values (1, 2, 4, 8, 16 threads, or
//! every category; round steps only past ten distinct values), a legend even for a single
//! series (named by the series value, or by the y column when there is no series column),
//! and y labels in every panel: `y` starts at zero unless `log_y` is set; a log axis is
//! labelled at 1, 2, 5 times powers of ten, or at round linear steps where its range is too
//! narrow for three of those, and reaches a little below the smallest value so that its bar
//! still shows. Values are drawn as read; rows whose `y` is not a number are an error naming
//! the row, so a chart never silently drops data.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Colours of the series, in order (colour-blind-safe Okabe-Ito palette).
const COLOURS: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442",
];

/// A parsed CSV file: a header and rows of fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Csv {
    /// Column names.
    pub header: Vec<String>,
    /// Rows (each as long as the header).
    pub rows: Vec<Vec<String>>,
}

/// What can be wrong with a result file or a chart request.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlotError {
    /// The CSV cannot be read (names the line).
    #[error("line {line}: {reason}")]
    Csv {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A column the chart needs is not in the header.
    #[error("no column `{0}` in the file")]
    NoColumn(String),
    /// A value that must be a number is not (names the row and column).
    #[error("row {row}, column `{column}`: `{value}` is not a number{extra}")]
    NotNumber {
        /// 1-based data row.
        row: usize,
        /// The column.
        column: String,
        /// The value found.
        value: String,
        /// More context (for example "(log scale needs > 0)").
        extra: &'static str,
    },
    /// Nothing to draw.
    #[error("the file has no data rows")]
    Empty,
}

/// The table of a result file: from its first non-empty line up to the next blank line, with
/// the 1-based line number it starts on.
fn table_part(text: &str) -> (usize, &str) {
    let mut start = None;
    let mut offset = 0;
    for (n, line) in text.split_inclusive('\n').enumerate() {
        let blank = line.trim().is_empty();
        match start {
            None if !blank => start = Some((n + 1, offset)),
            Some((first, from)) if blank => return (first, text.get(from..offset).unwrap_or("")),
            _ => {}
        }
        offset += line.len();
    }
    start.map_or((1, ""), |(first, from)| {
        (first, text.get(from..).unwrap_or(""))
    })
}

/// A `csv` crate error as a [`PlotError::Csv`] on `line`.
fn csv_error(e: &csv::Error, line: usize) -> PlotError {
    let reason = match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("{len} fields, the header has {expected_len}"),
        _ => e.to_string(),
    };
    PlotError::Csv { line, reason }
}

impl Csv {
    /// Parses CSV text with the `csv` crate (RFC 4180 quoting, fields trimmed): the first
    /// non-empty line is the header; a blank line ends the table (what follows, like `minnow
    /// bench oltp --csv`'s `metric,value` summary, is ignored). A row with another number of
    /// fields than the header is an error naming its line; an unterminated quote runs to the
    /// end of the table, so it shows as such a short row (or as a value that is not a number).
    pub fn parse(text: &str) -> Result<Csv, PlotError> {
        let (first_line, table) = table_part(text);
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .trim(csv::Trim::All)
            .from_reader(table.as_bytes());
        let mut records = reader.records();
        let line_of = |e: &csv::Error| {
            let at = e.position().map_or(1, |p| p.line()) as usize;
            first_line + at.saturating_sub(1)
        };
        let header: Vec<String> = match records.next() {
            None => return Err(PlotError::Empty),
            Some(Err(e)) => return Err(csv_error(&e, line_of(&e))),
            Some(Ok(r)) => r.iter().map(str::to_owned).collect(),
        };
        let mut rows = Vec::new();
        for r in records {
            let r = r.map_err(|e| csv_error(&e, line_of(&e)))?;
            rows.push(r.iter().map(str::to_owned).collect());
        }
        if rows.is_empty() {
            return Err(PlotError::Empty);
        }
        Ok(Csv { header, rows })
    }

    fn column(&self, name: &str) -> Result<usize, PlotError> {
        self.header
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| PlotError::NoColumn(name.to_owned()))
    }
}

/// Line or grouped bars.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Numeric x, one line per series.
    Line,
    /// Categorical x, one bar per series in each group.
    Bar,
}

/// What to draw from a [`Csv`].
#[derive(Debug, Clone)]
pub struct ChartSpec {
    /// Line or bars.
    pub kind: Kind,
    /// The x column.
    pub x: String,
    /// The y column.
    pub y: String,
    /// The column whose values are the series (`None`: one series).
    pub series: Option<String>,
    /// The column whose values are the panels (`None`: one panel).
    pub facet: Option<String>,
    /// Keep only rows where these columns have these values.
    pub filter: Vec<(String, String)>,
    /// The chart's title.
    pub title: String,
    /// The y axis label (default: the y column).
    pub y_label: Option<String>,
    /// Logarithmic x (line charts).
    pub log_x: bool,
    /// Logarithmic y.
    pub log_y: bool,
}

impl ChartSpec {
    /// A chart of `y` against `x`, everything else default.
    pub fn new(kind: Kind, x: &str, y: &str) -> ChartSpec {
        ChartSpec {
            kind,
            x: x.to_owned(),
            y: y.to_owned(),
            series: None,
            facet: None,
            filter: Vec::new(),
            title: String::new(),
            y_label: None,
            log_x: false,
            log_y: false,
        }
    }
}

/// One panel's data: per series, its (x, y) points in file order.
type Panel = Vec<(String, Vec<(String, f64)>)>;

fn push_unique(v: &mut Vec<String>, s: &str) -> usize {
    match v.iter().position(|x| x == s) {
        Some(i) => i,
        None => {
            v.push(s.to_owned());
            v.len() - 1
        }
    }
}

fn number(s: &str, row: usize, column: &str, log: bool) -> Result<f64, PlotError> {
    let bad = |extra| PlotError::NotNumber {
        row,
        column: column.to_owned(),
        value: s.to_owned(),
        extra,
    };
    let v: f64 = s.replace('_', "").parse().map_err(|_| bad(""))?;
    if !v.is_finite() {
        return Err(bad(""));
    }
    if log && v <= 0.0 {
        return Err(bad(" (a log scale needs values > 0)"));
    }
    Ok(v)
}

/// Axis ticks: "nice" steps on a linear axis, powers of ten (and 2, 5 between) on a log one.
fn ticks(lo: f64, hi: f64, log: bool) -> Vec<f64> {
    if log {
        let (a, b) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
        let mut t = Vec::new();
        for e in a..=b {
            let p = 10f64.powi(e);
            for m in [1.0, 2.0, 5.0] {
                let v = m * p;
                if v >= lo * 0.999 && v <= hi * 1.001 && (b - a <= 3 || m == 1.0) {
                    t.push(v);
                }
            }
        }
        return t;
    }
    let span = (hi - lo).max(f64::MIN_POSITIVE);
    let raw = span / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| span / s <= 6.0)
        .unwrap_or(mag * 10.0);
    let mut t = Vec::new();
    let mut v = (lo / step).ceil() * step;
    while v <= hi + step * 1e-9 {
        t.push(v);
        v += step;
    }
    t
}

/// A number as a short label: 1.2k, 35M, 0.25.
fn label(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{}G", trim(v / 1e9))
    } else if a >= 1e6 {
        format!("{}M", trim(v / 1e6))
    } else if a >= 1e4 {
        format!("{}k", trim(v / 1e3))
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_owned()
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Draws the chart as an SVG document.
pub fn render(csv: &Csv, spec: &ChartSpec) -> Result<String, PlotError> {
    let xi = csv.column(&spec.x)?;
    let yi = csv.column(&spec.y)?;
    let si = spec.series.as_deref().map(|s| csv.column(s)).transpose()?;
    let fi = spec.facet.as_deref().map(|s| csv.column(s)).transpose()?;
    let filters = spec
        .filter
        .iter()
        .map(|(c, v)| Ok((csv.column(c)?, v.as_str())))
        .collect::<Result<Vec<_>, PlotError>>()?;
    let mut facets: Vec<String> = Vec::new();
    let mut series: Vec<String> = Vec::new();
    let mut cats: Vec<String> = Vec::new();
    let mut panels: BTreeMap<usize, BTreeMap<usize, Vec<(String, f64)>>> = BTreeMap::new();
    for (r, row) in csv.rows.iter().enumerate() {
        let get = |i: usize| row.get(i).map_or("", String::as_str);
        if filters.iter().any(|&(c, v)| get(c) != v) {
            continue;
        }
        let f = push_unique(&mut facets, fi.map_or("", get));
        let s = push_unique(&mut series, si.map_or(&spec.y, get));
        let x = get(xi).to_owned();
        if spec.kind == Kind::Line {
            number(&x, r + 1, &spec.x, spec.log_x)?;
        } else {
            push_unique(&mut cats, &x);
        }
        let y = number(get(yi), r + 1, &spec.y, spec.log_y)?;
        panels
            .entry(f)
            .or_default()
            .entry(s)
            .or_default()
            .push((x, y));
    }
    if panels.is_empty() {
        return Err(PlotError::Empty);
    }
    let panels: Vec<(String, Panel)> = panels
        .into_iter()
        .map(|(f, m)| {
            let name = facets.get(f).cloned().unwrap_or_default();
            let p = m
                .into_iter()
                .map(|(s, pts)| (series.get(s).cloned().unwrap_or_default(), pts))
                .collect();
            (name, p)
        })
        .collect();

    // Layout: a grid of panels under a title and a legend.
    // Bar panels widen so that category labels (about 6.5 px a character) do not overlap.
    let longest = cats.iter().map(|c| c.chars().count()).max().unwrap_or(0) as f64;
    let pw = match spec.kind {
        Kind::Line => 340.0,
        Kind::Bar => (cats.len() as f64 * (6.5 * longest + 14.0).max(40.0) + 70.0).max(340.0),
    };
    let ph = 240.0;
    let ncol = panels.len().min(if panels.len() == 4 { 2 } else { 3 });
    let nrow = panels.len().div_ceil(ncol);
    // Wide enough for the title (about 8.5 px a character at 15 px); the legend wraps onto
    // as many rows as it needs (about 7 px a character), and the panels start below it.
    let w = (ncol as f64 * pw + 20.0).max(8.5 * spec.title.chars().count() as f64 + 40.0);
    let keys = legend(&series, w);
    let top = 56.0 + keys.last().map_or(0.0, |k| k.1 - 32.0);
    let h = top + nrow as f64 * ph + 10.0;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="20" font-size="15" text-anchor="middle">{}</text>"#,
        w / 2.0,
        esc(&spec.title)
    );
    for (i, (s, &(lx, ly))) in series.iter().zip(&keys).enumerate() {
        let c = COLOURS[i % COLOURS.len()];
        let _ = writeln!(
            svg,
            r#"<rect x="{lx}" y="{ly}" width="12" height="12" fill="{c}"/><text class="key" x="{}" y="{}">{}</text>"#,
            lx + 16.0,
            ly + 10.0,
            esc(s)
        );
    }
    // Panels centred when the title made the chart wider than they need.
    let shift = (w - (ncol as f64 * pw + 20.0)) / 2.0;
    for (k, (name, data)) in panels.iter().enumerate() {
        let ox = 10.0 + shift + (k % ncol) as f64 * pw;
        let oy = top + (k / ncol) as f64 * ph;
        svg.push_str("<g class=\"panel\">\n");
        draw_panel(&mut svg, spec, name, data, &series, &cats, ox, oy, pw, ph);
        svg.push_str("</g>\n");
    }
    svg.push_str("</svg>\n");
    Ok(svg)
}

/// A panel's y axis from its values: the range drawn and the values that get a label.
///
/// Linear: from zero (or a negative minimum) to a round value above the maximum. Logarithmic:
/// the values' range widened a little on both sides (bars more below, so the smallest bar
/// still shows), labelled at 1, 2, 5 times powers of ten, or at round linear steps where fewer
/// than three of those fall inside (a range narrower than a factor of 2.5 would otherwise get
/// one label or none).
fn y_axis(ys: &[f64], log: bool, bars: bool) -> (f64, f64, Vec<f64>) {
    let max = ys.iter().copied().fold(f64::MIN, f64::max);
    let min = ys.iter().copied().fold(f64::MAX, f64::min);
    if log {
        let decades = (max / min).log10();
        let (share, least) = if bars { (0.25, 0.15) } else { (0.06, 0.02) };
        let pad = 10f64.powf((decades * share).max(least));
        let (lo, hi) = (min / pad, max * pad);
        let mut t = ticks(lo, hi, true);
        if t.len() < 3 {
            t = ticks(lo, hi, false);
            t.retain(|&v| v > 0.0);
        }
        return (lo, hi, t);
    }
    let lo = if min < 0.0 { min * 1.05 } else { 0.0 };
    let hi = if max > 0.0 { max * 1.05 } else { 1.0 };
    let t = ticks(lo, hi, false);
    let lo = t.first().copied().unwrap_or(lo).min(lo);
    let hi = t.last().copied().unwrap_or(hi).max(hi);
    (lo, hi, t)
}

/// Where each legend key goes (x, y of its colour box): left to right from x = 20, y = 32,
/// onto a new row 16 px lower when the next key would pass the chart's width `w`.
fn legend(series: &[String], w: f64) -> Vec<(f64, f64)> {
    let (mut x, mut y) = (20.0, 32.0);
    let mut keys = Vec::with_capacity(series.len());
    for s in series {
        let kw = 30.0 + 7.0 * s.chars().count() as f64;
        if x > 20.0 && x + kw > w - 10.0 {
            (x, y) = (20.0, y + 16.0);
        }
        keys.push((x, y));
        x += kw;
    }
    keys
}

#[allow(clippy::too_many_arguments)]
fn draw_panel(
    svg: &mut String,
    spec: &ChartSpec,
    name: &str,
    data: &Panel,
    series: &[String],
    cats: &[String],
    ox: f64,
    oy: f64,
    pw: f64,
    ph: f64,
) {
    // The plot area inside the panel.
    let (l, r, t, b) = (ox + 58.0, ox + pw - 12.0, oy + 22.0, oy + ph - 36.0);
    let ys: Vec<f64> = data
        .iter()
        .flat_map(|(_, p)| p.iter().map(|q| q.1))
        .collect();
    let (ylo, yhi, yt) = y_axis(&ys, spec.log_y, spec.kind == Kind::Bar);
    let fy = |v: f64| {
        let f = if spec.log_y {
            (v.log10() - ylo.log10()) / (yhi.log10() - ylo.log10()).max(1e-12)
        } else {
            (v - ylo) / (yhi - ylo).max(1e-12)
        };
        b - f * (b - t)
    };
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="{}" font-size="12" text-anchor="middle" font-weight="bold">{}</text>"#,
        (l + r) / 2.0,
        oy + 14.0,
        esc(name)
    );
    for v in &yt {
        let y = fy(*v);
        let _ = writeln!(
            svg,
            r##"<line x1="{}" y1="{y:.1}" x2="{r}" y2="{y:.1}" stroke="#ddd"/><text class="ytick" x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            l - 3.0,
            l - 5.0,
            y + 4.0,
            label(*v)
        );
    }
    let _ = writeln!(
        svg,
        r#"<text transform="translate({},{}) rotate(-90)" text-anchor="middle">{}</text>"#,
        ox + 12.0,
        (t + b) / 2.0,
        esc(spec.y_label.as_deref().unwrap_or(&spec.y))
    );
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        (l + r) / 2.0,
        b + 30.0,
        esc(&spec.x)
    );
    let _ = writeln!(
        svg,
        r##"<polyline points="{l},{t} {l},{b} {r},{b}" fill="none" stroke="#333"/>"##
    );
    let colour = |s: &str| {
        let i = series.iter().position(|x| x == s).unwrap_or(0);
        COLOURS[i % COLOURS.len()]
    };
    match spec.kind {
        Kind::Line => {
            let xs: Vec<f64> = data
                .iter()
                .flat_map(|(_, p)| p.iter().filter_map(|q| q.0.parse::<f64>().ok()))
                .collect();
            let xmin = xs.iter().copied().fold(f64::MAX, f64::min);
            let xmax = xs.iter().copied().fold(f64::MIN, f64::max);
            let tf = |v: f64| if spec.log_x { v.log10() } else { v };
            let fx = |v: f64| {
                let span = (tf(xmax) - tf(xmin)).max(1e-12);
                l + 8.0 + (tf(v) - tf(xmin)) / span * (r - l - 16.0)
            };
            let mut xt: Vec<f64> = xs.clone();
            xt.sort_by(f64::total_cmp);
            xt.dedup();
            if xt.len() > 10 {
                xt = ticks(xmin, xmax, spec.log_x);
            }
            for v in xt {
                let x = fx(v);
                let _ = writeln!(
                    svg,
                    r##"<line x1="{x:.1}" y1="{b}" x2="{x:.1}" y2="{}" stroke="#333"/><text class="xtick" x="{x:.1}" y="{}" text-anchor="middle">{}</text>"##,
                    b + 4.0,
                    b + 15.0,
                    label(v)
                );
            }
            for (s, pts) in data {
                let c = colour(s);
                let coords: Vec<String> = pts
                    .iter()
                    .filter_map(|(x, y)| x.parse::<f64>().ok().map(|x| (x, *y)))
                    .map(|(x, y)| format!("{:.1},{:.1}", fx(x), fy(y)))
                    .collect();
                let _ = writeln!(
                    svg,
                    r#"<polyline points="{}" fill="none" stroke="{c}" stroke-width="2"/>"#,
                    coords.join(" ")
                );
                for p in &coords {
                    let (x, y) = p.split_once(',').unwrap_or(("0", "0"));
                    let _ = writeln!(svg, r#"<circle cx="{x}" cy="{y}" r="3" fill="{c}"/>"#);
                }
            }
        }
        Kind::Bar => {
            let n = cats.len().max(1) as f64;
            let gw = (r - l) / n;
            let present: Vec<&String> = series
                .iter()
                .filter(|s| data.iter().any(|(d, _)| d == *s))
                .collect();
            let bw = gw * 0.8 / present.len().max(1) as f64;
            for (ci, c) in cats.iter().enumerate() {
                let gx = l + ci as f64 * gw;
                let _ = writeln!(
                    svg,
                    r#"<text class="xtick" x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
                    gx + gw / 2.0,
                    b + 14.0,
                    esc(c)
                );
                for (si, s) in present.iter().enumerate() {
                    let Some(y) = data
                        .iter()
                        .find(|(d, _)| d == *s)
                        .and_then(|(_, p)| p.iter().find(|q| &q.0 == c))
                        .map(|q| q.1)
                    else {
                        continue;
                    };
                    let x = gx + gw * 0.1 + si as f64 * bw;
                    let top = fy(y);
                    let base = if spec.log_y { b } else { fy(0.0) };
                    let _ = writeln!(
                        svg,
                        r#"<rect x="{x:.1}" y="{top:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{}: {}</title></rect>"#,
                        bw.max(1.0),
                        (base - top).max(0.5),
                        colour(s),
                        esc(s),
                        label(y)
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
