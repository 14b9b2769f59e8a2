//! Charts of benchmark results as SVG, with no dependencies: what `minnow plot` draws for
//! docs/EXPERIMENTS.md.
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
//! `y` starts at zero unless `log_y` is set. Values are drawn as read; rows whose `y` is not a
//! number are an error naming the row, so a chart never silently drops data.

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

/// Splits one CSV line into fields (double quotes around a field allowed, `""` inside).
fn fields(line: &str, n: usize) -> Result<Vec<String>, PlotError> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            (c, _) => cur.push(c),
        }
    }
    if quoted {
        return Err(PlotError::Csv {
            line: n,
            reason: "an unterminated quote".into(),
        });
    }
    out.push(cur);
    Ok(out.into_iter().map(|f| f.trim().to_owned()).collect())
}

impl Csv {
    /// Parses CSV text: the first non-empty line is the header; blank lines end the table
    /// (what follows, like `minnow bench oltp --csv`'s summary, is ignored).
    pub fn parse(text: &str) -> Result<Csv, PlotError> {
        let mut lines = text
            .lines()
            .enumerate()
            .skip_while(|(_, l)| l.trim().is_empty());
        let (hn, h) = lines.next().ok_or(PlotError::Empty)?;
        let header = fields(h, hn + 1)?;
        let mut rows = Vec::new();
        for (i, l) in lines {
            if l.trim().is_empty() {
                break;
            }
            let r = fields(l, i + 1)?;
            if r.len() != header.len() {
                return Err(PlotError::Csv {
                    line: i + 1,
                    reason: format!("{} fields, the header has {}", r.len(), header.len()),
                });
            }
            rows.push(r);
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
            r#"<rect x="{lx}" y="{ly}" width="12" height="12" fill="{c}"/><text x="{}" y="{}">{}</text>"#,
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
        draw_panel(&mut svg, spec, name, data, &series, &cats, ox, oy, pw, ph);
    }
    svg.push_str("</svg>\n");
    Ok(svg)
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
    let ymax = ys.iter().copied().fold(f64::MIN, f64::max);
    let ymin = ys.iter().copied().fold(f64::MAX, f64::min);
    let (ylo, yhi) = if spec.log_y {
        (ymin, ymax.max(ymin * 1.0001))
    } else {
        (0.0, if ymax > 0.0 { ymax * 1.05 } else { 1.0 })
    };
    let yt = ticks(ylo, yhi, spec.log_y);
    let (ylo, yhi) = if spec.log_y {
        (
            yt.first().copied().unwrap_or(ylo).min(ylo),
            yt.last().copied().unwrap_or(yhi).max(yhi),
        )
    } else {
        (0.0, yt.last().copied().unwrap_or(yhi).max(yhi))
    };
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
            r##"<line x1="{l}" y1="{y:.1}" x2="{r}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            l - 4.0,
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
                let _ = writeln!(
                    svg,
                    r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
                    fx(v),
                    b + 14.0,
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
                    r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
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
mod tests {
    use super::*;

    const E2: &str = "organisation,query,threads,qps\nclustered,A,1,100\nheap,A,1,80\nclustered,A,4,180\nheap,A,4,90\nclustered,B,1,5\nheap,B,1,\"7\"\n\nmetric,value\n";

    #[test]
    fn parses_and_stops_at_a_blank_line() {
        let c = Csv::parse(E2).unwrap();
        assert_eq!(c.header, ["organisation", "query", "threads", "qps"]);
        assert_eq!(c.rows.len(), 6);
        assert_eq!(c.rows[5][3], "7");
        assert!(matches!(
            Csv::parse("a,b\n1\n"),
            Err(PlotError::Csv { line: 2, .. })
        ));
        assert_eq!(Csv::parse(""), Err(PlotError::Empty));
        assert!(Csv::parse("a\n\"x\n").is_err());
    }

    #[test]
    fn line_chart_with_facets_and_series() {
        let c = Csv::parse(E2).unwrap();
        let mut s = ChartSpec::new(Kind::Line, "threads", "qps");
        s.series = Some("organisation".into());
        s.facet = Some("query".into());
        s.log_x = true;
        s.title = "E2 <test>".into();
        let svg = render(&c, &s).unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("E2 &lt;test&gt;"));
        // Two panels, two series each: four polylines plus two axes.
        assert_eq!(svg.matches("stroke-width=\"2\"").count(), 4);
        assert_eq!(svg.matches("<circle").count(), 6);
        assert!(svg.contains(">clustered<") && svg.contains(">heap<"));
    }

    #[test]
    fn bar_chart_and_filters() {
        let c = Csv::parse(E2).unwrap();
        let mut s = ChartSpec::new(Kind::Bar, "query", "qps");
        s.series = Some("organisation".into());
        s.filter = vec![("threads".into(), "1".into())];
        let svg = render(&c, &s).unwrap();
        assert_eq!(
            svg.matches("<rect x=").count(),
            4 + 2,
            "4 bars and 2 legend keys"
        );
        s.filter = vec![("threads".into(), "99".into())];
        assert_eq!(render(&c, &s), Err(PlotError::Empty));
    }

    #[test]
    fn bad_requests_are_named() {
        let c = Csv::parse("x,y\n1,abc\n").unwrap();
        let s = ChartSpec::new(Kind::Line, "x", "y");
        assert!(matches!(
            render(&c, &s),
            Err(PlotError::NotNumber { row: 1, .. })
        ));
        let s = ChartSpec::new(Kind::Line, "x", "nope");
        assert_eq!(render(&c, &s), Err(PlotError::NoColumn("nope".into())));
        let c = Csv::parse("x,y\n1,0\n").unwrap();
        let mut s = ChartSpec::new(Kind::Line, "x", "y");
        s.log_y = true;
        assert!(matches!(render(&c, &s), Err(PlotError::NotNumber { .. })));
    }

    #[test]
    fn a_long_legend_wraps_and_a_long_title_widens_the_chart() {
        let names: Vec<String> = (0..6).map(|i| format!("series number {i}, long")).collect();
        let keys = legend(&names, 400.0);
        assert_eq!(keys[0], (20.0, 32.0));
        assert!(
            keys.iter()
                .all(|&(x, _)| x + 30.0 + 7.0 * 22.0 <= 390.0 || x == 20.0)
        );
        let rows = keys.iter().filter(|k| k.0 == 20.0).count();
        assert!(rows >= 3, "{keys:?}");
        assert_eq!(keys.last().unwrap().1, 32.0 + 16.0 * (rows - 1) as f64);
        // Short legends stay on one row.
        assert_eq!(legend(&["a".into(), "b".into()], 400.0)[1], (57.0, 32.0));

        let mut text = String::from("who,x,y\n");
        for n in &names {
            text.push_str(&format!("\"{n}\",1,2\n"));
        }
        let c = Csv::parse(&text).unwrap();
        let mut s = ChartSpec::new(Kind::Line, "x", "y");
        s.series = Some("who".into());
        s.title = "t".repeat(100);
        let svg = render(&c, &s).unwrap();
        // 100 title characters need 890 px; one line panel alone is 360.
        assert!(svg.starts_with(r#"<svg xmlns="http://www.w3.org/2000/svg" width="890""#));
        // Six 184 px keys in 890 px: two rows, so the panel (its title 14 px below its top)
        // starts one row lower than the usual 56.
        assert_eq!(legend(&names, 890.0).last().unwrap().1, 48.0);
        assert!(svg.contains(r#"y="86" font-size="12""#), "{svg}");
    }

    #[test]
    fn ticks_are_round() {
        assert_eq!(
            ticks(0.0, 100.0, false),
            [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
        );
        assert_eq!(
            ticks(1.0, 1000.0, true),
            [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0]
        );
        assert_eq!(label(12_500.0), "12.5k");
        assert_eq!(label(0.25), "0.25");
    }
}
