//! The progress bars of `minnow bench` on stderr, drawn by `indicatif`.
//!
//! A bench that loads a table first (sbtest for `oltp`, the "normal" table for `reads2007`)
//! shows a bar while it loads: rows so far of rows in all, the percentage and the rate;
//! `reads2007` then shows one over its measurement points with the last point's result.
//! indicatif draws a bar only when stderr is a terminal and hides it otherwise, so a run
//! whose stderr is a file, a pipe, a test or CI gets no bar and no carriage returns; the
//! line the caller prints when the load ends ("loaded N rows in S s") is there either way.

use indicatif::{ProgressBar, ProgressStyle};

/// A bar over `len` things (rows, points), redrawn at most a few times a second.
pub(crate) struct Bar(ProgressBar);

impl Bar {
    /// A bar over `len` things called `unit` ("rows").
    pub(crate) fn new(len: u64, unit: &str) -> Bar {
        let bar = ProgressBar::new(len);
        let template =
            format!("{{prefix}} [{{bar:30}}] {{percent:>3}}% {{pos}} of {{len}} {unit}, {{msg}}");
        // The template is fixed and valid; should indicatif reject it, its plain bar is
        // still a bar.
        let style = ProgressStyle::with_template(&template).map_or_else(
            |_| ProgressStyle::default_bar(),
            |s| s.progress_chars("#> "),
        );
        bar.set_style(style);
        Bar(bar)
    }

    /// Moves the bar to `pos`, naming what runs (`prefix`) and the latest result (`msg`).
    pub(crate) fn set(&self, prefix: String, pos: u64, msg: String) {
        self.0.set_prefix(prefix);
        self.0.set_message(msg);
        self.0.set_position(pos);
    }

    /// Removes the bar from the terminal (the caller then prints what was done).
    pub(crate) fn finish(&self) {
        self.0.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bar_follows_the_rows_and_stays_hidden_off_a_terminal() {
        let bar = Bar::new(1_000, "rows");
        bar.set("loading sbtest1/1".into(), 400, "1234 rows/s".into());
        assert_eq!(bar.0.position(), 400);
        assert_eq!(bar.0.length(), Some(1_000));
        assert_eq!(bar.0.prefix(), "loading sbtest1/1");
        assert_eq!(bar.0.message(), "1234 rows/s");
        // Tests run with stderr captured or redirected: indicatif draws nothing there.
        if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            assert!(bar.0.is_hidden());
        }
        bar.finish();
        assert!(bar.0.is_finished());
    }
}
