//! The envelope every report shares, and how reports reach stdout.
//!
//! Each command builds one serde-serialisable report and prints it either as text or, with
//! `--json`, as one pretty-printed JSON object. The checking commands (`verify`, `log`,
//! `dblwr`, `tree`, `history`, `status`) put their outcome first, in the same two fields,
//! so a script reads every report the same way:
//!
//! ```text
//! { "ok": false, "exit_code": 1, ...the command's own fields..., "problems": [...] }
//! ```
//!
//! [`Outcome`] is those two fields (flattened into each report by serde), and a fatal error
//! becomes an [`ErrorReport`] (`{"error": ..., "exit_code": 2}`) so that stdout is JSON even
//! then.

use std::io::{self, Write};

use serde::Serialize;

use crate::cli::Status;
use crate::output::CliError;

/// A report's outcome: whether everything checked is fine, and the exit code that says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Outcome {
    /// True when nothing is wrong.
    pub ok: bool,
    /// The exit code (0 clean, 1 problems found).
    pub exit_code: u8,
}

impl Outcome {
    /// The outcome of `status`.
    pub fn of(status: Status) -> Outcome {
        Outcome {
            ok: status == Status::Clean,
            exit_code: status as u8,
        }
    }
}

impl Default for Outcome {
    /// Clean, until a problem is found.
    fn default() -> Outcome {
        Outcome::of(Status::Clean)
    }
}

/// The JSON printed on stdout for a fatal error.
#[derive(Debug, Serialize)]
pub struct ErrorReport {
    /// The message, naming the file.
    pub error: String,
    /// The exit code (always 2).
    pub exit_code: u8,
}

impl ErrorReport {
    /// The report for `err`.
    pub fn new(err: &CliError) -> ErrorReport {
        ErrorReport {
            error: err.to_string(),
            exit_code: Status::Error as u8,
        }
    }
}

/// Writes `value` as pretty-printed JSON followed by a newline.
pub fn emit_json<T: Serialize>(out: &mut dyn Write, value: &T) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, value).map_err(io::Error::other)?;
    writeln!(out)
}

/// Prints `report` as JSON when `json` is set, else as text with `text`.
pub fn emit<T: Serialize, E>(
    out: &mut dyn Write,
    json: bool,
    report: &T,
    text: impl FnOnce(&T, &mut dyn Write) -> Result<(), E>,
) -> Result<(), CliError>
where
    CliError: From<E>,
{
    if json {
        emit_json(out, report)?;
    } else {
        text(report, out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Sample {
        file: &'static str,
        #[serde(flatten)]
        outcome: Outcome,
        problems: Vec<String>,
    }

    #[test]
    fn the_outcome_is_flattened_into_the_report_in_place() {
        let r = Sample {
            file: "f",
            outcome: Outcome::of(Status::Corrupt),
            problems: vec!["p".into()],
        };
        let v = serde_json::to_string(&r).unwrap();
        assert_eq!(
            v,
            r#"{"file":"f","ok":false,"exit_code":1,"problems":["p"]}"#
        );
        assert_eq!(
            Outcome::default(),
            Outcome {
                ok: true,
                exit_code: 0
            }
        );
    }

    #[test]
    fn a_fatal_error_reports_exit_code_2() {
        let e = ErrorReport::new(&CliError::Usage("no such file".into()));
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            serde_json::json!({"error": "no such file", "exit_code": 2})
        );
    }
}
