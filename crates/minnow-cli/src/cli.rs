//! Command-line parsing, dispatch and exit codes.
//!
//! The exit code is the contract scripts rely on: **0** all good, **1** the file has corrupt pages,
//! **2** usage or IO error. clap's own usage errors (an unknown flag, a missing argument) also exit
//! 2; `--help` and `--version` exit 0.

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use minnow_page::PageSize;
use minnow_page::checksum::ChecksumPolicy;

use crate::cmd;
use crate::output::CliError;
use crate::report;

/// Reads and checks minnow and InnoDB tablespace files (read-only).
#[derive(Debug, Parser)]
#[command(name = "minnow", version, about, long_about = None)]
pub struct Cli {
    /// Print machine-readable JSON on stdout instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the engine end to end on real files: write a tablespace, commit to the redo log from
    /// several threads, read everything back verified, catch a damaged page, load and query
    /// sysbench's sbtest table through the embedded API, inspect.
    Demo {
        /// Directory for the files (default: a temporary directory, removed afterwards).
        #[arg(long, value_name = "DIR")]
        dir: Option<std::path::PathBuf>,
        /// Pages in the demo tablespace.
        #[arg(long, default_value_t = cmd::demo::DEFAULT_PAGES)]
        pages: u32,
        /// Page size: 4k, 8k, 16k, 32k or 64k.
        #[arg(long, default_value = "16k")]
        page_size: PageSize,
        /// Checksum algorithm to write with: crc32, innodb, none or full_crc32.
        #[arg(long, default_value = "crc32")]
        checksum: ChecksumPolicy,
        /// IO backend: sync (pread/pwrite) or io_uring.
        #[arg(long, default_value = "sync")]
        backend: String,
        /// Flush method: fsync, O_DIRECT or O_DSYNC.
        #[arg(long, default_value = "fsync")]
        flush_method: minnow_io::FlushMethod,
        /// Threads committing to the redo log.
        #[arg(long, default_value_t = 8)]
        commit_threads: usize,
        /// Durable commits per thread.
        #[arg(long, default_value_t = 250)]
        commits: usize,
        /// Rows in the demo's sbtest table.
        #[arg(long, default_value_t = 20_000)]
        rows: u64,
    },
    /// Open a stopped minnow database (recovering it if needed) and verify every index
    /// against its table and every B-tree invariant.
    Check {
        /// The database.
        #[command(flatten)]
        db: DirOpts,
    },
    /// Check the checksum of every page of each file, like innochecksum.
    Verify {
        /// How to read the files.
        #[command(flatten)]
        read: ReadOpts,
        /// Tablespace files (.ibd or minnow files).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<std::path::PathBuf>,
    },
    /// Summarise a tablespace: page types, LSNs, checksums, indexes and a page map.
    Inspect {
        /// How to read the file.
        #[command(flatten)]
        read: ReadOpts,
        /// Print the page map only for files of at most this many pages (0: never).
        #[arg(long, value_name = "PAGES", default_value_t = cmd::inspector::inspect::DEFAULT_MAP_MAX)]
        map_max: u64,
        /// For a compressed tablespace, list every page's compressed payload length.
        #[arg(long)]
        zip_pages: bool,
        /// The tablespace file.
        #[arg(value_name = "FILE")]
        file: std::path::PathBuf,
    },
    /// Run a benchmark workload on a fresh database (`minnow bench oltp --help`).
    Bench {
        /// The workload.
        #[command(subcommand)]
        workload: cmd::experiment::bench::Workload,
    },
    /// Draw a chart (SVG) from a CSV result file (`minnow plot --help`).
    Plot(cmd::experiment::plot::PlotArgs),
    /// Decode one page: FIL header and trailer, FSP or INDEX header, checksum verdict.
    Page {
        /// How to read the file.
        #[command(flatten)]
        read: ReadOpts,
        /// Add a hex dump of the page (offset, hex, ASCII, like xxd).
        #[arg(long)]
        hex: bool,
        /// The tablespace file.
        #[arg(value_name = "FILE")]
        file: std::path::PathBuf,
        /// The page number (0 is the first page).
        #[arg(value_name = "N")]
        page: u64,
        /// Decode an InnoDB INDEX page's COMPACT/DYNAMIC records with these columns, in table
        /// order: "id:int unsigned,name:varchar(64),d:date not null" (lengths in bytes).
        #[arg(long, value_name = "COLS", conflicts_with = "schema")]
        columns: Option<String>,
        /// Read the --columns list from FILE (commas or one per line, # comments).
        #[arg(long, value_name = "FILE")]
        schema: Option<std::path::PathBuf>,
        /// The primary key's columns (default: the first column).
        #[arg(long, value_name = "COLS")]
        pk: Option<String>,
        /// The page is a secondary index's on these columns (default: the clustered index).
        #[arg(long, value_name = "COLS")]
        key: Option<String>,
    },
    /// Show the redo log: header, checkpoint slots, the records from the checkpoint to the end
    /// (group, type, page, offset, length, LSN) and a summary; reports a torn tail.
    Log {
        /// The database (its `ib_logfile0`).
        #[command(flatten)]
        db: DirOpts,
        /// List at most this many records (0: all); the summary always counts every record.
        #[arg(long, value_name = "N", default_value_t = cmd::inspector::log::DEFAULT_LIMIT)]
        limit: usize,
    },
    /// Show the doublewrite segments: each header, each slot's page id and LSN, whether the
    /// copy verifies, and how it compares with the data file's page.
    Dblwr {
        /// How to read the pages.
        #[command(flatten)]
        read: ReadOpts,
        /// The database (its `dblwr.<n>` and `ibdata1`).
        #[command(flatten)]
        db: DirOpts,
    },
    /// Show the engine's counters (buffer pool, redo, doublewrite, rows): live from the status
    /// file a running database writes (Config::status_file), else from the files at rest.
    Status {
        /// The database.
        #[command(flatten)]
        db: DirOpts,
    },
    /// Follow a running database's counters as rates, one line per interval (needs the
    /// status file, Config::status_file).
    Watch {
        /// The database.
        #[command(flatten)]
        db: DirOpts,
        /// Milliseconds between lines (at least the engine's refresh interval in effect).
        #[arg(long, value_name = "N", default_value_t = cmd::inspector::watch::DEFAULT_INTERVAL_MS)]
        interval_ms: u64,
        /// Stop after N lines (default: run until interrupted).
        #[arg(long, value_name = "N")]
        count: Option<u64>,
    },
    /// Show one index's B-tree: pages, fill and key range per level; draw it with --dot or
    /// --svg.
    Tree {
        /// The database and the table.
        #[command(flatten)]
        at: TableOpts,
        /// The index (default: the clustered index, PRIMARY).
        #[arg(long, value_name = "NAME")]
        index: Option<String>,
        /// Write the tree as Graphviz to FILE.
        #[arg(long, value_name = "FILE")]
        dot: Option<std::path::PathBuf>,
        /// Draw the tree as SVG to FILE (trees of at most 200 pages).
        #[arg(long, value_name = "FILE")]
        svg: Option<std::path::PathBuf>,
    },
    /// Show one row's version chain, newest first: the transaction that wrote each version
    /// (committed or active), its roll pointer, the undo record kind, the delete mark and the
    /// values, and why the chain ends.
    History {
        /// The database and the table.
        #[command(flatten)]
        at: TableOpts,
        /// The primary key's values, comma-separated for a composite key (`7` or `7,2024-01-31`).
        #[arg(value_name = "KEY", allow_hyphen_values = true)]
        key: String,
    },
}

/// The database directory a command works on (every command but `check` reads its files
/// without opening the database, so nothing is written).
#[derive(Debug, Clone, Args)]
pub struct DirOpts {
    /// The database directory (`ibdata1`, `ib_logfile0`, `dblwr.<n>`, the `zip*.ibd` files of
    /// compressed tables).
    #[arg(value_name = "DIR")]
    pub dir: std::path::PathBuf,
}

/// A table of a database directory, read from the dictionary in the data file.
#[derive(Debug, Clone, Args)]
pub struct TableOpts {
    /// The database.
    #[command(flatten)]
    pub db: DirOpts,
    /// The table.
    #[arg(value_name = "TABLE")]
    pub table: String,
}

/// Options shared by the commands that read pages: how pages are found and checked.
#[derive(Debug, Clone, Args)]
pub struct ReadOpts {
    /// Page size to use instead of the one in page 0's FSP flags (4k, 8k, 16k, 32k, 64k or bytes).
    #[arg(long, value_name = "SIZE")]
    pub page_size: Option<PageSize>,
    /// Checksum policy: crc32, strict_crc32, innodb, strict_innodb, none, strict_none,
    /// full_crc32 or strict_full_crc32. Tablespaces whose flags say full_crc32 are always checked
    /// with full_crc32, as MariaDB does.
    #[arg(long, value_name = "ALGORITHM", default_value = "crc32")]
    pub checksum: ChecksumPolicy,
}

/// What a command found, in exit-code order: the worst of several results wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    /// Everything checked is fine (exit 0).
    Clean = 0,
    /// At least one page is corrupt, or the file ends in a partial page (exit 1).
    Corrupt = 1,
    /// A usage or IO error (exit 2).
    Error = 2,
}

impl From<Status> for ExitCode {
    fn from(status: Status) -> ExitCode {
        ExitCode::from(status as u8)
    }
}

/// Parses `args` (program name first), runs the command and returns the exit code.
pub fn run<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(err) => {
            // Help and version go to stdout and exit 0; real usage errors exit 2.
            let _ = err.print();
            return if err.use_stderr() {
                Status::Error.into()
            } else {
                Status::Clean.into()
            };
        }
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let result = dispatch(&cli, &mut out);
    let status = match result {
        Ok(status) => status,
        Err(err) => {
            report_error(&err, cli.json, &mut out);
            Status::Error
        }
    };
    match out.flush() {
        Ok(()) => status.into(),
        Err(_) => Status::Error.into(),
    }
}

fn dispatch(cli: &Cli, out: &mut dyn Write) -> Result<Status, CliError> {
    match &cli.command {
        Command::Demo {
            dir,
            pages,
            page_size,
            checksum,
            backend,
            flush_method,
            commit_threads,
            commits,
            rows,
        } => {
            let opts = cmd::demo::DemoOpts {
                dir: dir.clone(),
                pages: *pages,
                page_size: *page_size,
                checksum: checksum.algorithm,
                backend: backend.clone(),
                flush_method: *flush_method,
                commit_threads: (*commit_threads).max(1),
                commits: *commits,
                rows: (*rows).max(1),
            };
            cmd::demo::run(&opts, cli.json, out)
        }
        Command::Bench { workload } => cmd::experiment::bench::run(workload, cli.json, out),
        Command::Plot(args) => cmd::experiment::plot::run(args, out),
        Command::Check { db } => cmd::check::run(&db.dir, cli.json, out),
        Command::Verify { read, files } => cmd::inspector::verify::run(files, read, cli.json, out),
        Command::Inspect {
            read,
            map_max,
            zip_pages,
            file,
        } => cmd::inspector::inspect::run(file, read, *map_max, *zip_pages, cli.json, out),
        Command::Page {
            read,
            hex,
            file,
            page,
            columns,
            schema,
            pk,
            key,
        } => {
            let columns = match (columns, schema) {
                (Some(c), _) => Some(c.clone()),
                (None, Some(f)) => Some(
                    std::fs::read_to_string(f)
                        .map_err(|e| CliError::Usage(format!("--schema {}: {e}", f.display())))?,
                ),
                (None, None) => None,
            };
            let schema = columns
                .map(|c| crate::innodb_rec::Schema::parse(&c, pk.as_deref(), key.as_deref()))
                .transpose()
                .map_err(|e| CliError::Usage(format!("--columns: {e}")))?;
            cmd::inspector::page::run(file, *page, read, *hex, schema.as_ref(), cli.json, out)
        }
        Command::Log { db, limit } => {
            let limit = if *limit == 0 { usize::MAX } else { *limit };
            cmd::inspector::log::run(&db.dir, limit, cli.json, out)
        }
        Command::Dblwr { read, db } => cmd::inspector::dblwr::run(&db.dir, read, cli.json, out),
        Command::Status { db } => cmd::inspector::status::run(&db.dir, cli.json, out),
        Command::Watch {
            db,
            interval_ms,
            count,
        } => cmd::inspector::watch::run(&db.dir, *interval_ms, *count, cli.json, out),
        Command::Tree {
            at,
            index,
            dot,
            svg,
        } => {
            let opts = cmd::inspector::tree::TreeOpts {
                dir: at.db.dir.clone(),
                table: at.table.clone(),
                index: index.clone(),
                dot: dot.clone(),
                svg: svg.clone(),
            };
            cmd::inspector::tree::run(&opts, cli.json, out)
        }
        Command::History { at, key } => {
            let opts = cmd::inspector::history::HistoryOpts {
                dir: at.db.dir.clone(),
                table: at.table.clone(),
                key: key.clone(),
            };
            cmd::inspector::history::run(&opts, cli.json, out)
        }
    }
}

/// Prints a fatal error: always a line on stderr, and in JSON mode an `{"error": ...}` object on
/// stdout too, so that a script reading stdout always gets JSON.
fn report_error(err: &CliError, json: bool, out: &mut dyn Write) {
    if matches!(err, CliError::Stdout(_)) {
        // Writing to stdout failed (a closed pipe, typically): nothing more to say there.
        return;
    }
    let _ = writeln!(std::io::stderr(), "minnow: {err}");
    if json {
        let _ = report::emit_json(out, &report::ErrorReport::new(err));
    }
}
