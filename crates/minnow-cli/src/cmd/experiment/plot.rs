//! `minnow plot`: draws a chart (SVG) from a CSV result file.
//!
//! ```text
//! minnow plot results.csv --out docs/plots/e2.svg --kind line --x threads --y qps \
//!     --series organisation --facet query --log-x --title "E2: queries per second"
//! ```
//!
//! The CSV is what the benches and `minnow bench ... --csv` write (a header row, then one row
//! per measurement). `--series` draws one line (or bar colour) per value of a column,
//! `--facet` one panel per value of a column, `--where col=value` keeps matching rows only.
//! The chart writer is [`minnow_workload::plot`]: plain SVG a browser or GitHub shows.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use minnow_workload::plot::{ChartSpec, Csv, Kind, render};

use crate::cli::Status;
use crate::output::CliError;

/// The flags of `minnow plot`.
#[derive(Debug, Args)]
pub struct PlotArgs {
    /// The CSV file to draw from.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Where to write the SVG (default: stdout).
    #[arg(long, value_name = "SVG")]
    pub out: Option<PathBuf>,
    /// line (numeric x) or bar (categorical x).
    #[arg(long, default_value = "line")]
    pub kind: String,
    /// The x column.
    #[arg(long)]
    pub x: String,
    /// The y column.
    #[arg(long)]
    pub y: String,
    /// One series per value of this column.
    #[arg(long)]
    pub series: Option<String>,
    /// One panel per value of this column.
    #[arg(long)]
    pub facet: Option<String>,
    /// Keep only rows with column=value (repeatable).
    #[arg(long = "where", value_name = "COLUMN=VALUE")]
    pub filter: Vec<String>,
    /// The title.
    #[arg(long, default_value = "")]
    pub title: String,
    /// The y axis label (default: the y column).
    #[arg(long)]
    pub y_label: Option<String>,
    /// Logarithmic x axis.
    #[arg(long)]
    pub log_x: bool,
    /// Logarithmic y axis.
    #[arg(long)]
    pub log_y: bool,
}

/// Runs `minnow plot`.
pub fn run(a: &PlotArgs, out: &mut dyn Write) -> Result<Status, CliError> {
    let kind = match a.kind.as_str() {
        "line" => Kind::Line,
        "bar" | "bars" => Kind::Bar,
        other => return Err(CliError::Usage(format!("--kind {other}: not line or bar"))),
    };
    let filter = a
        .filter
        .iter()
        .map(|f| {
            f.split_once('=')
                .map(|(c, v)| (c.trim().to_owned(), v.trim().to_owned()))
                .ok_or_else(|| CliError::Usage(format!("--where {f}: not COLUMN=VALUE")))
        })
        .collect::<Result<_, _>>()?;
    let text = std::fs::read_to_string(&a.file)
        .map_err(|e| CliError::Usage(format!("{}: {e}", a.file.display())))?;
    let csv =
        Csv::parse(&text).map_err(|e| CliError::Usage(format!("{}: {e}", a.file.display())))?;
    let spec = ChartSpec {
        series: a.series.clone(),
        facet: a.facet.clone(),
        filter,
        title: a.title.clone(),
        y_label: a.y_label.clone(),
        log_x: a.log_x,
        log_y: a.log_y,
        ..ChartSpec::new(kind, &a.x, &a.y)
    };
    let svg =
        render(&csv, &spec).map_err(|e| CliError::Usage(format!("{}: {e}", a.file.display())))?;
    match &a.out {
        Some(p) => {
            std::fs::write(p, svg).map_err(|e| CliError::Usage(format!("{}: {e}", p.display())))?
        }
        None => out.write_all(svg.as_bytes())?,
    }
    Ok(Status::Clean)
}
