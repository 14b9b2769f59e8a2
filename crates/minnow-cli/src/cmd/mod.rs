//! The subcommands, grouped by the tool they belong to: the `minnow` binary is two tools in
//! one, a read-only inspector and an experiment runner, plus two commands that open a database
//! through the embedded API.
//!
//! | group | what it does | commands |
//! |---|---|---|
//! | [`inspector`] | reads tablespace files and database directories, **never writes**, takes no lock (safe on a live database) | `verify`, `inspect`, `page`, `tree`, `log`, `dblwr`, `history`, `status`, `watch` |
//! | [`experiment`] | runs the experiments of `docs/EXPERIMENTS.md` on fresh databases and draws their results | `bench ...`, `plot` |
//! | [`demo`] | the README's first command: every layer end to end on real files | `demo` |
//! | [`check`] | opens a stopped database (running recovery, which writes) and verifies it | `check` |
//!
//! Each command has a `run` function that reads the file(s) or runs the workload, builds a
//! serde-serialisable report, prints it as text or JSON, and returns the exit status. What the
//! commands share lives beside `cmd`, not inside one of them: [`crate::reader`] (checked pages
//! of a database directory), [`crate::dict`] (a table found in the dictionary's raw pages),
//! [`crate::report`] (the report envelope) and [`crate::cli`] (the common options).

pub mod check;
pub mod demo;
pub mod experiment;
pub mod inspector;
