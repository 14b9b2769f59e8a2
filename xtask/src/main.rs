//! `cargo xtask`: the repository's own tasks. For now, the course labs (docs/labs/README.md):
//!
//! - `cargo xtask lab list`: the labs, their handouts and graded tests;
//! - `cargo xtask lab start N DIR`: a student workspace in which lab N's functions are starters;
//! - `cargo xtask lab grade N [--expect-fail]`: runs lab N's tests once and prints the score;
//! - `cargo xtask lab check`: the markers parse, every listed test and handout exists;
//! - `cargo xtask lab order`: the labs in the order CI starts them (see [`order`]).
//!
//! The engine's code is the reference solution: lab N's function bodies are marked in place
//! (see [`markers`]) and labs/labs.toml lists each lab's tests ([`manifest`]).

mod grade;
mod libtest;
mod manifest;
mod markers;
mod order;
mod workspace;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// What went wrong, as a message for the terminal.
#[derive(Debug)]
pub struct Error(pub String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error(e.to_string())
    }
}

/// Shorthand for this crate's results.
pub type Result<T> = std::result::Result<T, Error>;

#[derive(Parser)]
#[command(name = "cargo xtask", about = "The repository's tasks")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// The course labs (docs/labs/README.md).
    Lab {
        #[command(subcommand)]
        command: LabCommand,
    },
}

#[derive(Subcommand)]
enum LabCommand {
    /// Lists the labs, their handouts and their tests.
    List,
    /// Writes a student workspace for lab N into DIR (which must not exist or be empty).
    Start {
        /// The lab's number.
        n: u32,
        /// Where the workspace goes.
        dir: PathBuf,
        /// DIR may hold a workspace started earlier: it is updated in place, and files whose
        /// content does not change are not touched (so cargo keeps what it built from them).
        #[arg(long)]
        over: bool,
    },
    /// Runs lab N's tests once and prints what passed, what each checks, and the score.
    Grade {
        /// The lab's number.
        n: u32,
        /// Succeed only if every lab-specific test fails (CI's check on a fresh starter); the
        /// engine's tests listed for the lab are not run then.
        #[arg(long)]
        expect_fail: bool,
    },
    /// Checks that every marker parses and every listed test and handout exists.
    Check,
    /// Prints every lab's number, one a line, in the order that rebuilds least when the labs
    /// are started one after another in one directory (highest crates first).
    Order,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let Task::Lab { command } = cli.task;
    let result = workspace::root().and_then(|root| match command {
        LabCommand::List => workspace::list(&root).map(|()| true),
        LabCommand::Start { n, dir, over } => workspace::start(&root, n, &dir, over).map(|()| true),
        LabCommand::Grade { n, expect_fail } => grade::grade(&root, n, expect_fail),
        LabCommand::Check => grade::check(&root).map(|()| true),
        LabCommand::Order => order::print(&root).map(|()| true),
    });
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
