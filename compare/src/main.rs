//! The command: runs the comparison and prints the markdown report on stdout (progress on
//! stderr).
//!
//! ```text
//! cargo run --release --manifest-path compare/Cargo.toml -- [--keys 1000000] [--runs 3] [--dir PATH]
//! ```

use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use minnow_compare::kv::{self, Sizes, Workload};
use minnow_compare::report::{Table, today};
use minnow_compare::sbtest::{self, SbSizes};
use minnow_compare::{Result, machine, mismatch};

/// minnow next to SQLite, redb and LMDB: redb's benchmark phases (1M 24-byte keys, 150-byte
/// values) and sysbench's sbtest table with its secondary index, each engine through its
/// public API at its default, durable setting (every commit synced). Prints markdown tables
/// (median of --runs runs per cell, lower is better, best in bold): time per phase, bytes
/// written to disk per phase, and the machine.
///
/// Run it as:
///   cargo run --release --manifest-path compare/Cargo.toml -- [OPTIONS] > report.md
#[derive(Parser, Debug)]
#[command(version, verbatim_doc_comment)]
struct Args {
    /// Directory under which the databases are made (a fresh subdirectory, removed at the
    /// end). Must be a real file system: tmpfs is refused unless --allow-tmpfs.
    #[arg(long, default_value_os_t = std::env::temp_dir())]
    dir: PathBuf,
    /// Runs per engine; every cell is the median of the runs.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Keys in the bulk load (redb's benchmark: 1M); as many point reads, half as many range
    /// reads.
    #[arg(long, default_value_t = 1_000_000)]
    keys: usize,
    /// Thread counts of the multi-threaded read phases.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    threads: Vec<usize>,
    /// Cache per engine in MiB (minnow's buffer pool, SQLite's cache_size per connection,
    /// redb's cache; LMDB uses the OS page cache).
    #[arg(long, default_value_t = 1024)]
    cache_mib: usize,
    /// Engines of the key-value workload, in column order.
    #[arg(long, value_delimiter = ',', default_value = "minnow,sqlite,redb,lmdb")]
    engines: Vec<String>,
    /// Rows of the sbtest table (overrides the size's default).
    #[arg(long)]
    sb_rows: Option<usize>,
    /// Skip the sbtest workload.
    #[arg(long)]
    no_sbtest: bool,
    /// Skip the key-value workload.
    #[arg(long)]
    no_kv: bool,
    /// Seed of the keys, values and operation order.
    #[arg(long, default_value_t = 3)]
    seed: u64,
    /// Allow a tmpfs data directory (numbers then say nothing about durable writes).
    #[arg(long)]
    allow_tmpfs: bool,
    /// Keep the databases after the run.
    #[arg(long)]
    keep: bool,
}

fn main() {
    if let Err(e) = run(Args::parse()) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> Result<()> {
    if args.keys == 0 {
        return Err(mismatch("--keys must be at least 1"));
    }
    let mut sizes = Sizes::with_keys(args.keys);
    sizes.threads = args.threads.clone();
    let mut sb = SbSizes::default();
    if let Some(r) = args.sb_rows {
        sb.rows = r;
    }
    let cache = args.cache_mib << 20;
    if args.runs == 0 {
        return Err(mismatch("--runs must be at least 1"));
    }
    let engines: Vec<(&str, &str)> = args
        .engines
        .iter()
        .map(|n| {
            kv::ENGINES
                .iter()
                .find(|(id, _)| id.eq_ignore_ascii_case(n))
                .copied()
                .ok_or_else(|| mismatch(format!("unknown engine {n}")))
        })
        .collect::<Result<_>>()?;

    let root = args
        .dir
        .join(format!("minnow-compare-{}", std::process::id()));
    std::fs::create_dir_all(&root)?;
    let machine = machine::describe(&root);
    if machine.fs.fstype == "tmpfs" && !args.allow_tmpfs {
        let _ = std::fs::remove_dir_all(&root);
        return Err(mismatch(format!(
            "{} is on tmpfs: durable writes would be free; pass --dir on a real file system \
             (or --allow-tmpfs)",
            args.dir.display()
        )));
    }
    eprintln!("machine: {machine}");
    eprintln!("data in {}", root.display());

    let command = format!(
        "cargo run --release --manifest-path compare/Cargo.toml --{}",
        std::env::args()
            .skip(1)
            .map(|a| format!(" {a}"))
            .collect::<String>()
    );
    let mut out = format!(
        "## minnow next to SQLite, redb and LMDB ({})\n\n\
         Command: `{command}`\n\n\
         Machine: {machine}\n\n\
         Every cell is the median of {} runs (a fresh database per engine and run); lower is \
         better, the best of each row in bold. Every engine runs through its public API at its \
         default durability: every commit is synced to disk before it returns.\n",
        today(),
        args.runs
    );

    if !args.no_kv {
        let t = Instant::now();
        let w = Workload::new(sizes.total(), args.seed)?;
        eprintln!(
            "kv workload: {} pairs made in {:.1} s",
            sizes.total(),
            t.elapsed().as_secs_f64()
        );
        let mut table = Table::new(
            engines.iter().map(|(_, h)| h.to_string()).collect(),
            kv::phase_names(&sizes),
        );
        let mut written = Table::new(
            engines.iter().map(|(_, h)| h.to_string()).collect(),
            kv::written_names(&sizes),
        );
        let mut notes = vec![Vec::new(); engines.len()];
        for r in 0..args.runs {
            let mut first_digest = None;
            // Rotate the order per run, so no engine always runs first (cold machine) or last.
            for j in 0..engines.len() {
                let i = (j + r) % engines.len();
                let (id, header) = engines[i];
                let dir = kv::fresh_dir(&root, &format!("run{r}-{id}"))?;
                let t = Instant::now();
                let mut e = kv::open(id, &dir, cache)?;
                let res = kv::run(&mut *e, &w, &sizes, args.seed)?;
                let digest = res.digest;
                notes[i] = e.notes();
                drop(e);
                eprintln!(
                    "run {}/{} {header}: {:.1} s",
                    r + 1,
                    args.runs,
                    t.elapsed().as_secs_f64()
                );
                match &first_digest {
                    None => first_digest = Some((header, digest)),
                    Some((h, d)) if *d != digest => {
                        return Err(mismatch(format!(
                            "{header} and {h} disagree: {digest:?} vs {d:?}"
                        )));
                    }
                    Some(_) => {}
                }
                table.add(
                    i,
                    &res.figs
                        .iter()
                        .map(|f| f.map(|f| f.value))
                        .collect::<Vec<_>>(),
                );
                written.add(i, &res.written);
                if !args.keep {
                    std::fs::remove_dir_all(&dir)?;
                }
            }
        }
        out.push_str(&format!(
            "\n### Key-value: redb's benchmark phases ({}-byte keys, {}-byte values)\n\n",
            kv::KEY_LEN,
            kv::VALUE_LEN
        ));
        out.push_str(&table.markdown());
        out.push_str(
            "\n#### Bytes written to disk per phase (`write_bytes` of /proc/self/io)\n\n\
             Read before and after each phase; writes an engine's background threads make after \
             a phase returns are counted in the phases after it, and the clean close writes \
             what is still dirty.\n\n",
        );
        out.push_str(&written.markdown());
        out.push_str("\nSettings:\n\n");
        for n in notes.iter().flatten() {
            out.push_str(&format!("- {n}\n"));
        }
    }

    if !args.no_sbtest {
        let rows = sbtest::make_rows(&sb, args.seed);
        let names = ["minnow", "SQLite", "redb"];
        let mut table = Table::new(
            names.iter().map(|s| s.to_string()).collect(),
            sbtest::phase_names(&sb),
        );
        let mut notes = vec![String::new(); names.len()];
        for r in 0..args.runs {
            let mut first_digest = None;
            let mut engines = sbtest::engines(&root, r, cache)?;
            for (i, e) in engines.iter_mut().enumerate() {
                let t = Instant::now();
                let (figs, digest) = sbtest::run(&mut **e, &rows, &sb, args.seed)?;
                eprintln!(
                    "run {}/{} sbtest {}: {:.1} s",
                    r + 1,
                    args.runs,
                    e.name(),
                    t.elapsed().as_secs_f64()
                );
                match first_digest {
                    None => first_digest = Some(digest),
                    Some(d) if d != digest => {
                        return Err(mismatch(format!("sbtest: {} disagrees", e.name())));
                    }
                    Some(_) => {}
                }
                notes[i] = e.notes();
                table.add(i, &figs.into_iter().map(Some).collect::<Vec<_>>());
            }
            drop(engines);
            if !args.keep {
                for n in ["minnow", "sqlite", "redb"] {
                    std::fs::remove_dir_all(root.join(format!("run{r}-sbtest-{n}")))?;
                }
            }
        }
        out.push_str(&format!(
            "\n### sbtest: a table with a secondary index ({} rows)\n\n",
            sb.rows
        ));
        out.push_str(&table.markdown());
        out.push_str("\nSettings:\n\n");
        for n in &notes {
            out.push_str(&format!("- {n}\n"));
        }
    }

    if !args.keep {
        std::fs::remove_dir_all(&root)?;
    }
    print!("{out}");
    Ok(())
}
