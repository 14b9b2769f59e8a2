//! The knob registry: every [`Config`] field once, with its names, a one-line doc, the values
//! it takes, where it acts, and a parser that sets it from text.
//!
//! Everything that lists knobs comes from [`KNOBS`]: [`Config::set`] (and through it the
//! CLI's `--set name=value` for `minnow bench`), the listing `--set help` prints
//! ([`help`]), and the table in the [`Config`] module docs, which a test renders from the
//! registry ([`Knob::docs_table`]) and compares with the doc text. A knob's default is never written
//! here: the table shows [`Knob::show`] of [`Config::default`], so the default lives in one
//! place, `impl Default for Config`.
//!
//! A knob is found by its field name or by its InnoDB name, with or without the `innodb_`
//! prefix, with `-` accepted for `_` and in any case: `buffer_pool_size`,
//! `innodb_buffer_pool_size` and `Innodb-Buffer-Pool-Size` are the same knob.
//!
//! ```
//! # mod minnow { // the items as the `minnow` crate (which depends on this one) re-exports them
//! #     pub use minnow_btree::record::ColumnType;
//! #     pub use minnow_engine::Compression;
//! #     pub use minnow_zip::KeyBlockSize;
//! #     pub use minnow_engine::config::{Config, KnobError};
//! #     pub use minnow_engine::{ColumnDef, Error, IndexDef, TableDef};
//! #     pub use minnow_redo::FlushAtCommit;
//! # }
//! use minnow::{Config, FlushAtCommit};
//!
//! let mut config = Config::default();
//! config.set("innodb_flush_log_at_trx_commit", "0")?;
//! config.set("buffer_pool_size", "256M")?;
//! config.apply("adaptive_hash_index=off")?;
//! assert_eq!(config.flush_log_at_trx_commit, FlushAtCommit::Lazy);
//! assert_eq!(config.buffer_pool_size, 256 << 20);
//! assert!(!config.adaptive_hash_index);
//! assert!(config.set("change_buffering", "all").is_err());
//! # Ok::<(), minnow::KnobError>(())
//! ```
//!
//! Ranges are checked by [`Config::validate`] when the database opens, as InnoDB checks its
//! variables at startup; a parser refuses only what does not parse.

use std::fmt;

use super::Config;

mod list;

pub use list::KNOBS;

/// The part of the engine a knob acts on (the "acts in" column of the table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acts {
    /// The buffer pool's frames, lists and flushing (`minnow-buf`, via `buf_config`).
    BufferPool,
    /// The page cleaner threads (`minnow-buf`).
    PageCleaners,
    /// The redo log and commits (`minnow-redo`).
    Redo,
    /// The background log flusher thread (`minnow-redo`).
    LogFlusher,
    /// The doublewrite buffer (`minnow-dblwr`).
    Doublewrite,
    /// Every file's IO (`minnow-io`).
    Files,
    /// The format of the files made at create (`minnow-page`).
    Format,
    /// Row statements (`minnow`).
    Rows,
    /// The purge thread (`minnow`).
    Purge,
    /// The rollback segments (`minnow-mvcc`).
    Undo,
    /// The status file thread (`minnow`).
    StatusFile,
    /// The adaptive hash index (`minnow-ahi`).
    Ahi,
    /// Admission of threads into the engine (the `admission` module).
    Admission,
    /// Compressed indexes (`minnow-btree`).
    Compression,
    /// Crash recovery at open (`minnow-buf`).
    Recovery,
    /// The B-trees' merges of under-full pages (`minnow-btree`).
    Merges,
}

impl fmt::Display for Acts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Acts::BufferPool => "buffer pool (minnow-buf)",
            Acts::PageCleaners => "page cleaner threads (minnow-buf)",
            Acts::Redo => "redo log (minnow-redo)",
            Acts::LogFlusher => "log flusher thread (minnow-redo)",
            Acts::Doublewrite => "doublewrite buffer (minnow-dblwr)",
            Acts::Files => "file IO (minnow-io)",
            Acts::Format => "file format (minnow-page)",
            Acts::Rows => "row statements (minnow)",
            Acts::Purge => "purge thread (minnow)",
            Acts::Undo => "rollback segments (minnow-mvcc)",
            Acts::StatusFile => "status file thread (minnow)",
            Acts::Ahi => "adaptive hash index (minnow-ahi)",
            Acts::Admission => "admission (minnow)",
            Acts::Compression => "compressed indexes (minnow-btree)",
            Acts::Recovery => "crash recovery (minnow-buf)",
            Acts::Merges => "B-tree merges (minnow-btree)",
        })
    }
}

/// One knob of [`Config`]: see the module docs.
#[derive(Clone, Copy)]
pub struct Knob {
    /// The [`Config`] field's name.
    pub name: &'static str,
    /// The InnoDB variables it mirrors (empty for minnow's own knobs).
    pub innodb: &'static [&'static str],
    /// What it does, in one line.
    pub doc: &'static str,
    /// The values its parser takes.
    pub values: &'static str,
    /// The part of the engine it acts on.
    pub acts: Acts,
    /// When it is read: `create`, `every open`, ...
    pub when: &'static str,
    /// A value other than the default, for `--set help` and the registry's tests; `None`
    /// for a knob that cannot be set from text.
    pub example: Option<&'static str>,
    set: fn(&mut Config, &str) -> Result<(), String>,
    show: fn(&Config) -> String,
}

impl fmt::Debug for Knob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Knob")
            .field("name", &self.name)
            .field("innodb", &self.innodb)
            .field("acts", &self.acts)
            .finish_non_exhaustive()
    }
}

impl Knob {
    /// Parses `value` and sets this knob's field of `config`; the error says what was
    /// expected.
    pub fn set(&self, config: &mut Config, value: &str) -> Result<(), String> {
        (self.set)(config, value.trim())
    }

    /// This knob's value in `config`, written so that [`Knob::set`] reads it back.
    pub fn show(&self, config: &Config) -> String {
        (self.show)(config)
    }

    /// The default: [`Knob::show`] of [`Config::default`].
    pub fn default_value(&self) -> String {
        self.show(&Config::default())
    }

    /// True if `name` (normalised: lower case, `_` for `-`, no `innodb_` prefix) names this
    /// knob.
    fn is(&self, name: &str) -> bool {
        self.name == name
            || self
                .innodb
                .iter()
                .any(|v| v.strip_prefix("innodb_").unwrap_or(v) == name)
    }
}

/// A `name=value` setting that cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KnobError {
    /// The text has no `=`.
    Syntax(String),
    /// No knob has this name.
    Unknown {
        /// The name given.
        name: String,
    },
    /// The value does not parse for this knob.
    Value {
        /// The knob's field name.
        name: &'static str,
        /// The value given.
        value: String,
        /// What was expected.
        reason: String,
    },
}

impl fmt::Display for KnobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KnobError::Syntax(s) => write!(f, "`{s}` is not name=value"),
            KnobError::Unknown { name } => {
                let known: Vec<&str> = KNOBS.iter().map(|k| k.name).collect();
                write!(f, "unknown knob `{name}` (known: {})", known.join(", "))
            }
            KnobError::Value {
                name,
                value,
                reason,
            } => write!(f, "bad value `{value}` for {name}: {reason}"),
        }
    }
}

impl std::error::Error for KnobError {}

impl Knob {
    /// The knob `name` stands for: its field name or an InnoDB name, the `innodb_` prefix
    /// optional, any case, `-` for `_`.
    pub fn find(name: &str) -> Option<&'static Knob> {
        let lower = name.trim().to_ascii_lowercase().replace('-', "_");
        let key = lower.strip_prefix("innodb_").unwrap_or(&lower);
        KNOBS.iter().find(|k| k.is(key))
    }
}

impl Config {
    /// Sets the knob `name` (see [`Knob::find`] for the names accepted) from `value`, as
    /// `--set name=value` does; ranges are checked later by [`Config::validate`].
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), KnobError> {
        let k = Knob::find(name).ok_or_else(|| KnobError::Unknown {
            name: name.to_owned(),
        })?;
        k.set(self, value).map_err(|reason| KnobError::Value {
            name: k.name,
            value: value.trim().to_owned(),
            reason,
        })
    }

    /// Applies one `name=value` text, as given to `--set`.
    pub fn apply(&mut self, setting: &str) -> Result<(), KnobError> {
        let (name, value) = setting
            .split_once('=')
            .ok_or_else(|| KnobError::Syntax(setting.to_owned()))?;
        self.set(name, value)
    }
}

impl Knob {
    /// The listing `--set help` prints: one paragraph per knob with its names, default, values,
    /// an example and what it does.
    pub fn help() -> String {
        let mut out = String::new();
        for k in KNOBS {
            let innodb = if k.innodb.is_empty() {
                "(minnow)".to_owned()
            } else {
                k.innodb.join(", ")
            };
            out.push_str(&format!(
                "{} [{innodb}] default {}\n    {}\n    values: {}{}\n    acts in: {}, {}\n",
                k.name,
                k.default_value(),
                k.doc,
                k.values,
                k.example.map_or(String::new(), |e| format!(" (e.g. {e})")),
                k.acts,
                k.when,
            ));
        }
        out
    }

    /// The table of the [`Config`] module docs, rendered from [`KNOBS`] (the lines of a Markdown
    /// table, without the `//! ` prefix).
    pub fn docs_table() -> String {
        let mut out = String::from(
            "| knob | InnoDB variable | default | values | what it does | acts in, when |\n\
         |---|---|---|---|---|---|\n",
        );
        for k in KNOBS {
            let innodb = if k.innodb.is_empty() {
                "(minnow)".to_owned()
            } else {
                k.innodb
                    .iter()
                    .map(|v| format!("`{v}`"))
                    .collect::<Vec<_>>()
                    .join(" / ")
            };
            out.push_str(&format!(
                "| `{}` | {innodb} | `{}` | {} | {} | {}: {} |\n",
                k.name,
                k.default_value(),
                k.values,
                k.doc,
                k.acts,
                k.when
            ));
        }
        out
    }
}

#[cfg(test)]
#[path = "knobs_tests.rs"]
mod tests;
