//! Flags and parsing the `minnow bench` subcommands share: `--set name=value` knobs, the
//! `--flush-log-at-trx-commit` shorthand and comma-separated thread counts.
//!
//! Every bench builds its [`Config`] the same way: a base (the engine's defaults, or the
//! bench's own, such as a larger buffer pool), then each `--set` applied in order by its
//! field or InnoDB name ([`Config::apply`], from the engine's registry [`minnow::KNOBS`]),
//! then [`Config::validate`]. A bad name or value is a usage error naming the flag
//! ([`knob_config`]); `--set help` is a usage error that lists every knob with its default,
//! values and what it does ([`Knob::help`]).

use clap::Args;
use minnow::{Config, Knob};

use super::usage;
use crate::output::CliError;

/// `--set` and `--flush-log-at-trx-commit`, for benches that take nothing else knob-like.
#[derive(Debug, Args)]
pub struct KnobArgs {
    /// A Config knob as name=value, by its field or InnoDB name (repeatable); `--set help`
    /// lists them with their defaults.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// innodb_flush_log_at_trx_commit: 1 syncs the redo log at every commit (the default,
    /// the durable contract), 2 writes it at commit and syncs about once a second, 0 leaves
    /// both to the background flusher (a CPU-bound run). The same as `--set
    /// flush_log_at_trx_commit=N`, applied after the `--set`s.
    #[arg(long, value_name = "0|1|2")]
    pub flush_log_at_trx_commit: Option<u8>,
}

impl KnobArgs {
    /// `base` with every `--set` and then `--flush-log-at-trx-commit` applied, validated.
    pub fn config(&self, base: Config) -> Result<Config, CliError> {
        let mut set = self.set.clone();
        if let Some(v) = self.flush_log_at_trx_commit {
            set.push(format!("flush_log_at_trx_commit={v}"));
        }
        knob_config(base, &set)
    }

    /// The knobs as `name=value` strings, for reports.
    pub fn describe(&self) -> Vec<String> {
        let mut set = self.set.clone();
        if let Some(v) = self.flush_log_at_trx_commit {
            set.push(format!("flush_log_at_trx_commit={v}"));
        }
        set
    }
}

/// `base` with each `name=value` of `set` applied in order, validated; an unknown name or a
/// bad value is a usage error naming it, and `help` one that lists the knobs.
pub fn knob_config(mut base: Config, set: &[String]) -> Result<Config, CliError> {
    for s in set {
        if s.trim() == "help" {
            return Err(usage(format!(
                "--set help: the knobs (name [InnoDB names] default):\n{}",
                Knob::help()
            )));
        }
        base.apply(s)
            .map_err(|e| usage(format!("--set {s}: {e}")))?;
    }
    base.validate().map_err(|e| usage(format!("--set: {e}")))?;
    Ok(base)
}

/// Parses `--threads 1,2,4,8`: thread counts in 1..=1024, at least one.
pub fn thread_list(s: &str) -> Result<Vec<usize>, CliError> {
    s.split(',')
        .map(|t| {
            t.trim()
                .parse::<usize>()
                .ok()
                .filter(|&n| (1..=1024).contains(&n))
                .ok_or_else(|| usage(format!("--threads: `{t}` is not a count in 1..=1024")))
        })
        .collect()
}

/// `now / base`, or 0 when `base` is 0 (a ratio to the first run of a sweep).
pub fn ratio(now: f64, base: f64) -> f64 {
    if base > 0.0 { now / base } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knobs_apply_in_order_and_the_shorthand_last() {
        let k = KnobArgs {
            set: vec!["flush_log_at_trx_commit=2".into(), "doublewrite=off".into()],
            flush_log_at_trx_commit: Some(0),
        };
        let c = k.config(Config::default()).unwrap();
        assert_eq!(c.flush_log_at_trx_commit, minnow::FlushAtCommit::Lazy);
        assert_ne!(c.doublewrite, Config::default().doublewrite);
        assert_eq!(k.describe().last().unwrap(), "flush_log_at_trx_commit=0");
        let bad = KnobArgs {
            set: vec!["no_such_knob=1".into()],
            flush_log_at_trx_commit: None,
        };
        assert!(bad.config(Config::default()).is_err());
        let help = KnobArgs {
            set: vec!["help".into()],
            flush_log_at_trx_commit: None,
        };
        let listing = help.config(Config::default()).unwrap_err().to_string();
        assert!(listing.contains("purge_threads [innodb_purge_threads] default 1"));
        assert!(listing.contains("buffer_pool_size [innodb_buffer_pool_size] default 64M"));
    }

    #[test]
    fn thread_lists_parse_and_refuse_zero() {
        assert_eq!(thread_list("1, 2,4,8").unwrap(), vec![1, 2, 4, 8]);
        assert!(thread_list("1,0").is_err());
        assert!(thread_list("two").is_err());
        assert_eq!(ratio(3.0, 2.0), 1.5);
        assert_eq!(ratio(3.0, 0.0), 0.0);
    }
}
