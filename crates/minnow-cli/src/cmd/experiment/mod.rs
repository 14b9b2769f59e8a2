//! The experiment runner: commands that create fresh databases, run workloads on them and
//! chart the results, for the experiments of `docs/EXPERIMENTS.md`.
//!
//! - [`bench`](mod@bench): `minnow bench WORKLOAD`, one experiment on a fresh database (in `--dir`, or a
//!   temporary directory under the current one): sysbench-style `oltp`, `reads2007`, `ahi`,
//!   `covering`, `parallel-load`, `warmup`, `compression`, `recovery`, `writers`,
//!   `hot-rows`; each workload is a module of its own under [`bench`](mod@bench), and every one takes the
//!   engine's knobs as `--set name=value` ([`bench::args`]) and prints text, `--json` or
//!   `--csv` ([`bench::csv_out`]);
//! - [`plot`]: `minnow plot FILE.csv`, a chart (SVG) drawn from what `--csv` wrote.
//!
//! Unlike the [inspector](super::inspector) these commands write: their own scratch
//! databases, never one they were pointed at (`--dir` must not hold a database).

pub mod bench;
pub mod plot;
