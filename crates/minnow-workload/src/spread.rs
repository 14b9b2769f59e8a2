//! The median and range of repeated measurements.
//!
//! A timing taken once on a shared machine can be off by 2x: another process ran, the CPU
//! changed frequency, a page was cold. The experiments therefore repeat each measurement
//! (rotating the order of the configurations they compare) and report the median, which one
//! outlier cannot move, beside the lowest and highest value, which show how far to trust it.
//! A comparison whose range contains 1.0 says "no difference measured".

use std::fmt;

/// The median, lowest and highest of a set of measurements.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Spread {
    /// The middle value (the mean of the two middle ones for an even count).
    pub median: f64,
    /// The lowest value.
    pub min: f64,
    /// The highest value.
    pub max: f64,
}

impl Spread {
    /// The spread of `values`; `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Spread> {
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let (&min, &max) = (v.first()?, v.last()?);
        let upper = v.get(v.len() / 2).copied()?;
        let median = if v.len() % 2 == 1 {
            upper
        } else {
            let lower = v.get(v.len() / 2 - 1).copied()?;
            (lower + upper) / 2.0
        };
        Some(Spread { median, min, max })
    }

    /// Whether `x` lies within the range.
    pub fn contains(&self, x: f64) -> bool {
        self.min <= x && x <= self.max
    }
}

impl fmt::Display for Spread {
    /// `median [min-max]`, the median to three decimals and the range to two.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3} [{:.2}-{:.2}]", self.median, self.min, self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::Spread;

    #[test]
    fn median_and_range() {
        let s = Spread::of(&[1.2, 0.8, 1.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (1.0, 0.8, 1.2));
        assert!(s.contains(1.0));
        let even = Spread::of(&[0.9, 1.3]).unwrap();
        assert!((even.median - 1.1).abs() < 1e-12);
        assert!(!Spread::of(&[1.1, 1.2]).unwrap().contains(1.0));
        assert!(Spread::of(&[]).is_none());
        assert_eq!(s.to_string(), "1.000 [0.80-1.20]");
        assert_eq!(Spread::of(&[2.0]).unwrap().median, 2.0);
    }
}
