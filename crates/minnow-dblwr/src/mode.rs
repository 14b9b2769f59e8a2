//! The doublewrite mode, as `innodb_doublewrite`.

use std::fmt;
use std::str::FromStr;

/// Whether and how pages go through the doublewrite buffer (`innodb_doublewrite`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum DoublewriteMode {
    /// Header and page copies are written and synced before the pages go in place; recovery
    /// repairs torn pages. (MySQL's `ON` and `DETECT_AND_RECOVER`.)
    #[default]
    On,
    /// No doublewrite: pages are written in place directly. A torn page cannot be repaired.
    Off,
    /// Only the header (space id, page number, LSN per page) is written and synced: recovery can
    /// name torn pages but not repair them (MySQL 8.0.30's `DETECT_ONLY`).
    DetectOnly,
}

impl DoublewriteMode {
    /// Every mode.
    pub const ALL: [DoublewriteMode; 3] = [
        DoublewriteMode::On,
        DoublewriteMode::Off,
        DoublewriteMode::DetectOnly,
    ];

    /// The configuration name: `on`, `off` or `detect_only`.
    pub const fn name(self) -> &'static str {
        match self {
            DoublewriteMode::On => "on",
            DoublewriteMode::Off => "off",
            DoublewriteMode::DetectOnly => "detect_only",
        }
    }

    /// True when batches write segment files (`on` and `detect_only`).
    pub const fn uses_files(self) -> bool {
        !matches!(self, DoublewriteMode::Off)
    }

    /// True when segment files hold page copies (`on`).
    pub const fn writes_copies(self) -> bool {
        matches!(self, DoublewriteMode::On)
    }
}

impl fmt::Display for DoublewriteMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown doublewrite mode name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown doublewrite mode {0:?} (expected on, off or detect_only)")]
pub struct ParseModeError(pub String);

impl FromStr for DoublewriteMode {
    type Err = ParseModeError;

    /// Parses `on`, `off` or `detect_only`, ignoring case and surrounding blanks; MySQL's
    /// `detect_and_recover` is accepted as `on`, and `detect-only` as `detect_only`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let name = s.trim().to_ascii_lowercase().replace('-', "_");
        match name.as_str() {
            "on" | "detect_and_recover" => Ok(DoublewriteMode::On),
            "off" => Ok(DoublewriteMode::Off),
            "detect_only" => Ok(DoublewriteMode::DetectOnly),
            _ => Err(ParseModeError(s.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for mode in DoublewriteMode::ALL {
            assert_eq!(mode.to_string().parse::<DoublewriteMode>().unwrap(), mode);
        }
        assert_eq!(DoublewriteMode::DetectOnly.to_string(), "detect_only");
        assert_eq!(
            " ON ".parse::<DoublewriteMode>().unwrap(),
            DoublewriteMode::On
        );
        assert_eq!(
            "DETECT_AND_RECOVER".parse::<DoublewriteMode>().unwrap(),
            DoublewriteMode::On
        );
        assert_eq!(
            "detect-only".parse::<DoublewriteMode>().unwrap(),
            DoublewriteMode::DetectOnly
        );
        let err = "maybe".parse::<DoublewriteMode>().unwrap_err();
        assert!(err.to_string().contains("maybe"), "{err}");
        assert_eq!(DoublewriteMode::default(), DoublewriteMode::On);
        assert!(DoublewriteMode::DetectOnly.uses_files());
        assert!(!DoublewriteMode::DetectOnly.writes_copies());
        assert!(!DoublewriteMode::Off.uses_files());
    }
}
