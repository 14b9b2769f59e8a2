//! Medians over runs and the markdown table.

/// The median of `v` (the mean of the two middle values for an even count); `None` if empty.
pub fn median(v: &[f64]) -> Option<f64> {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// Three significant figures, without exponent notation.
pub fn fmt(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// A table of figures where lower is better: rows are phases, columns engines. Every cell
/// holds the samples of all runs; the table shows their median.
#[derive(Debug, Clone)]
pub struct Table {
    /// Column headers.
    pub engines: Vec<String>,
    /// Row labels.
    pub phases: Vec<String>,
    /// `cells[phase][engine]`: the samples, one per run (empty: not applicable).
    pub cells: Vec<Vec<Vec<f64>>>,
}

impl Table {
    /// An empty table.
    pub fn new(engines: Vec<String>, phases: Vec<String>) -> Table {
        let cells = vec![vec![Vec::new(); engines.len()]; phases.len()];
        Table {
            engines,
            phases,
            cells,
        }
    }

    /// Adds one run's figures of engine `e` (`None`: the engine cannot do that phase).
    pub fn add(&mut self, e: usize, figures: &[Option<f64>]) {
        for (row, f) in self.cells.iter_mut().zip(figures) {
            if let Some(v) = f {
                row[e].push(*v);
            }
        }
    }

    /// The median of a cell.
    pub fn median(&self, phase: usize, engine: usize) -> Option<f64> {
        median(&self.cells[phase][engine])
    }

    /// The markdown table, the lowest median of each row in bold, "n/a" where an engine
    /// cannot do the phase.
    pub fn markdown(&self) -> String {
        let mut s = String::from("| |");
        for e in &self.engines {
            s.push_str(&format!(" {e} |"));
        }
        s.push_str("\n|---|");
        for _ in &self.engines {
            s.push_str("---:|");
        }
        s.push('\n');
        for (p, name) in self.phases.iter().enumerate() {
            let meds: Vec<Option<f64>> =
                (0..self.engines.len()).map(|e| self.median(p, e)).collect();
            let best = meds.iter().flatten().copied().min_by(f64::total_cmp);
            s.push_str(&format!("| {name} |"));
            for m in &meds {
                match m {
                    Some(v) if meds.iter().flatten().count() > 1 && Some(*v) == best => {
                        s.push_str(&format!(" **{}** |", fmt(*v)))
                    }
                    Some(v) => s.push_str(&format!(" {} |", fmt(*v))),
                    None => s.push_str(" n/a |"),
                }
            }
            s.push('\n');
        }
        s
    }
}

/// Today's date (UTC) as `YYYY-MM-DD`, from the system clock.
pub fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = secs.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_bold() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        let mut t = Table::new(vec!["a".into(), "b".into()], vec!["x".into()]);
        t.add(0, &[Some(2.0)]);
        t.add(1, &[Some(1.0)]);
        t.add(1, &[Some(3.0)]);
        t.add(1, &[Some(1.5)]);
        assert!(t.markdown().contains("| x | 2.00 | **1.50** |"));
        assert_eq!(today().len(), 10);
    }
}
