//! Tests of the chart writer: they parse the SVG and check its ticks, legend keys and bars.

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
    // An unterminated quote swallows the rest of the table: a short row, named.
    assert!(matches!(
        Csv::parse("\n\na,b\n1,2\n\"x,1\n3,4\n"),
        Err(PlotError::Csv { line: 5, .. })
    ));
    // Quoted commas and doubled quotes are one field; fields are trimmed.
    let c = Csv::parse("m, v\n\"a, \"\"b\"\"\", 2 \n").unwrap();
    assert_eq!(c.header, ["m", "v"]);
    assert_eq!(c.rows, [["a, \"b\"", "2"]]);
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

/// The text of every `<text class="{class}" ...>` element, per panel (`<g class="panel">`),
/// or of the whole document when `class` is `key` (the legend sits above the panels).
fn texts(svg: &str, class: &str) -> Vec<Vec<String>> {
    let grab = |part: &str| {
        let open = format!("<text class=\"{class}\"");
        part.split(open.as_str())
            .skip(1)
            .map(|t| {
                let body = t.split_once('>').map_or("", |x| x.1);
                body.split_once("</text>").map_or("", |x| x.0).to_owned()
            })
            .collect::<Vec<_>>()
    };
    if class == "key" {
        return vec![grab(svg.split("<g class=\"panel\">").next().unwrap_or(""))];
    }
    svg.split("<g class=\"panel\">").skip(1).map(grab).collect()
}

#[test]
fn x_ticks_sit_at_the_data_values() {
    let c = Csv::parse("threads,qps\n1,10\n2,19\n4,35\n8,60\n16,90\n").unwrap();
    for log_x in [false, true] {
        let mut s = ChartSpec::new(Kind::Line, "threads", "qps");
        s.log_x = log_x;
        let svg = render(&c, &s).unwrap();
        assert_eq!(texts(&svg, "xtick"), [["1", "2", "4", "8", "16"]], "{svg}");
    }
    // More than ten distinct values: round steps instead.
    let mut text = String::from("x,y\n");
    for x in 0..=20 {
        text.push_str(&format!("{x},1\n"));
    }
    let svg = render(
        &Csv::parse(&text).unwrap(),
        &ChartSpec::new(Kind::Line, "x", "y"),
    )
    .unwrap();
    assert_eq!(texts(&svg, "xtick"), [["0", "5", "10", "15", "20"]]);
}

#[test]
fn a_single_series_still_has_a_legend() {
    let c = Csv::parse("run,threads,qps\na,1,10\na,4,30\n").unwrap();
    let s = ChartSpec::new(Kind::Line, "threads", "qps");
    assert_eq!(texts(&render(&c, &s).unwrap(), "key"), [["qps"]]);
    let mut s = ChartSpec::new(Kind::Bar, "threads", "qps");
    s.series = Some("run".into());
    assert_eq!(texts(&render(&c, &s).unwrap(), "key"), [["a"]]);
}

#[test]
fn every_panel_has_y_labels_even_on_a_narrow_log_range() {
    // E2's READ_PK_POINT: 180k..200k on a log axis held no power-of-ten tick at all.
    let c = Csv::parse(
        "query,threads,qps\nP,1,181000\nP,4,195000\nP,16,188000\nK,1,3\nK,4,3000\nK,16,90\n",
    )
    .unwrap();
    let mut s = ChartSpec::new(Kind::Line, "threads", "qps");
    s.facet = Some("query".into());
    s.log_x = true;
    s.log_y = true;
    let svg = render(&c, &s).unwrap();
    let y = texts(&svg, "ytick");
    assert_eq!(y.len(), 2, "{svg}");
    assert!(
        y[0].len() >= 3 && y[0].iter().all(|t| t.ends_with('k')),
        "{y:?}"
    );
    // Three decades and more: powers of ten only.
    assert_eq!(y[1], ["10", "100", "1000"]);
    assert_eq!(texts(&svg, "xtick"), [["1", "4", "16"], ["1", "4", "16"]]);
    for v in &y[0] {
        let n: f64 = v.trim_end_matches('k').parse().unwrap();
        assert!((175.0..=205.0).contains(&n), "{v} outside the data's range");
    }
}

#[test]
fn the_smallest_bar_on_a_log_axis_still_shows() {
    let c = Csv::parse("plan,value\nnon-covering,4353\ncovering,83\n").unwrap();
    let mut s = ChartSpec::new(Kind::Bar, "plan", "value");
    s.log_y = true;
    let svg = render(&c, &s).unwrap();
    let heights: Vec<f64> = svg
        .split("<rect x=")
        .skip(2)
        .filter_map(|r| r.split("height=\"").nth(1)?.split('"').next()?.parse().ok())
        .collect();
    assert_eq!(heights.len(), 2, "{svg}");
    assert!(heights[1] > 20.0, "{heights:?}");
    assert!(heights[0] > heights[1]);
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
