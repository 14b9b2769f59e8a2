//! Data-driven MVCC scripts, in the style of toydb's goldenscript tests
//! (`src/storage/testscripts/mvcc`): each file in `tests/scripts/mvcc/` is a scenario of
//! interleaved transactions with the output every step must print, written down beside it.
//! The runner executes every script against a fresh database and fails, with the script, the
//! commands and both outputs, if anything printed differs. It proves, one anomaly per
//! script and at both isolation levels, what minnow's transactions prevent and what they allow:
//! dirty writes and reads never happen, REPEATABLE READ reads one snapshot (no fuzzy reads,
//! read skew or phantoms), a writer that waits for a row lock acts on the latest committed
//! row (lost updates happen without locking reads, as in InnoDB, and not with
//! `get_for_update`), write skew happens (snapshot isolation allows it) unless the reads are
//! locking reads, and a locking range read under REPEATABLE READ keeps inserts out of its
//! range (next-key locks: no phantom) while one under READ COMMITTED does not. Other scripts
//! cover rollback, a failed statement inside a transaction, lock wait timeouts and deadlocks
//! (two inserts into one locked gap among them). Every snapshot read goes through the primary
//! key and through the secondary index, covering and not, which must agree.
//!
//! `UPDATE_GOLDENFILES=1 cargo test -p minnow --test mvcc_scripts` rewrites the expected
//! outputs from what minnow prints (review the diff: a changed output is a changed behaviour).
//!
//! ## The table
//!
//! `kv(k U64 PRIMARY KEY, v I64, w I64)` with a non-unique secondary index `by_v(v)`. `w` is a
//! copy of `v` outside the index, so a secondary scan that asks for it must fetch each row
//! from the clustered index, while one asking for `k, v` is answered by the index alone.
//!
//! ## The script format
//!
//! Blocks of command lines, then `---`, then the output they print (`ok` when nothing), then a
//! blank line. Lines starting with `#` are comments; `#` after a command starts a comment too.
//!
//! ```text
//! config lock_wait_timeout=50     # first block only: milliseconds (default 10 s)
//! insert 1 10                     # autocommit statements: insert, set, delete, get, scan, scan_index
//! t1: begin [repeatable_read|read_committed]   # default repeatable_read
//! t1: get 1 [2 ...]               # prints `t1: get 1 => 10` (or `=> None`) per key
//! t1: get_for_update 1 [2 ...]    # a locking read of each key, printed as get's
//! t1: scan [2..5]                 # primary key scan over k: `t1: scan => [1=10, 2=20]`
//! t1: scan_for_update [2..5]      # a locking read of the range, printed as scan's
//! t1: scan_index [10..=50]        # by_v scan over v, in index order, rows as k=v
//! t1: set 1 100                   # update k=1 to v=100
//! t1: insert 3 30
//! t1: delete 1                    # prints `t1: delete 1 => not found` if there was no row
//! t1: commit
//! t1: rollback
//! t2: set 1 5 &                   # in the background: prints `t2: waiting` if it waits for a lock,
//!                                 # else its output at once
//! t2: await                       # waits for the background statement, prints its output
//! check                           # Database::check
//! ```
//!
//! Ranges are Rust's: `a..b`, `a..=b`, `a..`, `..b`, `..`. Errors print as `Error: ` and their
//! Display, except the two lock errors, whose Display holds a measured wait time and raw
//! transaction ids: they print the transactions' script names instead (`#id` for a
//! transaction the script does not name).
//!
//! At the end of each script every open transaction is dropped (rolled back), and then no
//! lock may be held and `check()` must pass.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

use minnow::{
    ColumnDef, ColumnType, Config, Database, Error, IndexDef, Isolation, Scan, Table, TableDef,
    Transaction, Value,
};

// ---- The script file ----

/// A piece of a script: text kept as it is (comments, blank lines), or a block of commands
/// with the output expected from them.
#[derive(Debug)]
enum Item {
    Text(String),
    Block {
        /// 1-based line of the first command.
        line: usize,
        commands: Vec<String>,
        expected: Option<Vec<String>>,
    },
}

fn parse(text: &str) -> Vec<Item> {
    let lines: Vec<&str> = text.lines().collect();
    let mut items = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        if l.trim().is_empty() || l.starts_with('#') {
            items.push(Item::Text(l.to_owned()));
            i += 1;
            continue;
        }
        let line = i + 1;
        let mut commands = Vec::new();
        while i < lines.len() && !lines[i].trim().is_empty() && lines[i] != "---" {
            commands.push(lines[i].to_owned());
            i += 1;
        }
        let mut expected = None;
        if i < lines.len() && lines[i] == "---" {
            i += 1;
            let mut out = Vec::new();
            while i < lines.len() && !lines[i].trim().is_empty() {
                out.push(lines[i].to_owned());
                i += 1;
            }
            expected = Some(out);
        }
        items.push(Item::Block {
            line,
            commands,
            expected,
        });
    }
    items
}

/// The script with `outputs` (one per block, in order) as the expected outputs.
fn render(items: &[Item], outputs: &[Vec<String>]) -> String {
    let mut s = String::new();
    let mut outs = outputs.iter();
    for item in items {
        match item {
            Item::Text(t) => {
                s.push_str(t);
                s.push('\n');
            }
            Item::Block { commands, .. } => {
                for c in commands {
                    s.push_str(c);
                    s.push('\n');
                }
                s.push_str("---\n");
                for o in outs.next().into_iter().flatten() {
                    s.push_str(o);
                    s.push('\n');
                }
            }
        }
    }
    s
}

// ---- Running a script ----

fn kv_def() -> TableDef {
    TableDef::new("kv")
        .column(ColumnDef::new("k", ColumnType::U64))
        .column(ColumnDef::new("v", ColumnType::I64))
        .column(ColumnDef::new("w", ColumnType::I64))
        .primary_key(&["k"])
        .index(IndexDef::new("by_v", &["v"]))
}

/// One line of output, rendered once the names of all transaction ids are known.
enum Line {
    Text(String),
    Err(String, Error),
}

type Output = Vec<Line>;

/// What a background statement gives back: its transaction (unless it ended) and output.
type Background<'db> = (Option<Transaction>, Output);

struct Runner<'s, 'db> {
    scope: &'s Scope<'s, 'db>,
    db: &'db Database,
    t: &'s Table,
    txs: HashMap<String, Transaction>,
    pending: HashMap<String, ScopedJoinHandle<'s, Background<'db>>>,
    /// Transaction ids by script name, for lock errors.
    names: HashMap<u64, String>,
}

fn int(s: &str, what: &str) -> i64 {
    s.parse()
        .unwrap_or_else(|_| panic!("{what}: `{s}` is not a number"))
}

fn key(s: &str) -> Value {
    Value::UInt(int(s, "key") as u64)
}

/// `a..b`, `a..=b`, `a..`, `..b`, `..` as bounds over one column made by `v`.
fn range(s: Option<&str>, v: fn(i64) -> Value) -> (Bound<Vec<Value>>, Bound<Vec<Value>>) {
    let Some(s) = s else {
        return (Bound::Unbounded, Bound::Unbounded);
    };
    let (lo, hi) = s
        .split_once("..")
        .unwrap_or_else(|| panic!("bad range `{s}`"));
    let start = match lo {
        "" => Bound::Unbounded,
        lo => Bound::Included(vec![v(int(lo, "range"))]),
    };
    let end = match hi.strip_prefix('=') {
        Some(hi) => Bound::Included(vec![v(int(hi, "range"))]),
        None if hi.is_empty() => Bound::Unbounded,
        None => Bound::Excluded(vec![v(int(hi, "range"))]),
    };
    (start, end)
}

fn show(v: &Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        other => format!("{other:?}"),
    }
}

/// `k=v` for rows `[k, v, w]`, checking that `w` mirrors `v`.
fn kv_pairs(rows: &[Vec<Value>]) -> String {
    let pairs: Vec<String> = rows
        .iter()
        .map(|r| {
            assert!(r.len() == 2 || r[1] == r[2], "w does not mirror v in {r:?}");
            format!("{}={}", show(&r[0]), show(&r[1]))
        })
        .collect();
    format!("[{}]", pairs.join(", "))
}

/// A reader: a transaction's, or the autocommit one (the latest committed state).
enum Reader<'a> {
    Tx(&'a mut Transaction),
    Auto,
}

impl Reader<'_> {
    fn get(&mut self, t: &Table, k: Value, locking: bool) -> minnow::Result<Option<Vec<Value>>> {
        match (self, locking) {
            (Reader::Tx(tx), false) => tx.get(t, &[k]),
            (Reader::Tx(tx), true) => tx.get_for_update(t, &[k]),
            (Reader::Auto, false) => t.get(&[k]),
            (Reader::Auto, true) => panic!("a locking read needs a transaction"),
        }
    }

    fn rows(
        &mut self,
        t: &Table,
        index: bool,
        locking: bool,
        scan: Scan,
    ) -> minnow::Result<Vec<Vec<Value>>> {
        let covering = scan.columns.as_ref().is_some_and(|c| c.len() == 2);
        let rows = match (self, index) {
            (Reader::Tx(tx), false) if locking => return tx.scan_for_update(t, scan),
            (Reader::Auto, false) if locking => panic!("a locking read needs a transaction"),
            (Reader::Tx(tx), false) => tx.scan(t, scan)?,
            (Reader::Tx(tx), true) => tx.scan_index(t, "by_v", scan)?,
            (Reader::Auto, false) => t.scan(scan)?,
            (Reader::Auto, true) => t.scan_index("by_v", scan)?,
        };
        if index {
            assert_eq!(rows.is_covering(), covering, "covering");
        }
        rows.collect()
    }
}

/// Runs one statement of `who` (`None`: autocommit). Returns the output.
fn statement(t: &Table, who: Option<&str>, mut reader: Reader<'_>, words: &[&str]) -> Output {
    let p = who.map_or(String::new(), |w| format!("{w}: "));
    let mut out = Vec::new();
    let arg = |i: usize| {
        *words
            .get(i)
            .unwrap_or_else(|| panic!("`{}` needs more arguments", words.join(" ")))
    };
    let err = |out: &mut Output, e: Error| out.push(Line::Err(p.clone(), e));
    match words[0] {
        "get" | "get_for_update" => {
            for k in &words[1..] {
                match reader.get(t, key(k), words[0] == "get_for_update") {
                    Ok(Some(r)) => {
                        assert_eq!(r[1], r[2], "w does not mirror v in {r:?}");
                        out.push(Line::Text(format!(
                            "{p}{} {k} => {}",
                            words[0],
                            show(&r[1])
                        )));
                    }
                    Ok(None) => out.push(Line::Text(format!("{p}{} {k} => None", words[0]))),
                    Err(e) => err(&mut out, e),
                }
            }
        }
        "scan" | "scan_for_update" => {
            let (lo, hi) = range(words.get(1).copied(), |k| Value::UInt(k as u64));
            let locking = words[0] == "scan_for_update";
            match reader.rows(t, false, locking, Scan::range(lo, hi)) {
                Ok(rows) => out.push(Line::Text(format!(
                    "{p}{} => {}",
                    words.join(" "),
                    kv_pairs(&rows)
                ))),
                Err(e) => err(&mut out, e),
            }
        }
        "scan_index" => {
            let (lo, hi) = range(words.get(1).copied(), Value::Int);
            let scan = Scan::range(lo, hi);
            let covering = reader.rows(t, true, false, scan.clone().columns(&["k", "v"]));
            let fetching = reader.rows(t, true, false, scan.columns(&["k", "v", "w"]));
            match (covering, fetching) {
                (Ok(a), Ok(b)) => {
                    let (a, b) = (kv_pairs(&a), kv_pairs(&b));
                    if a == b {
                        out.push(Line::Text(format!("{p}{} => {a}", words.join(" "))));
                    } else {
                        out.push(Line::Text(format!(
                            "{p}{} => covering {a} but fetching {b}",
                            words.join(" ")
                        )));
                    }
                }
                (Err(e), _) | (_, Err(e)) => err(&mut out, e),
            }
        }
        "set" | "insert" => {
            let row = [
                key(arg(1)),
                Value::Int(int(arg(2), "v")),
                Value::Int(int(arg(2), "v")),
            ];
            let r = match (&mut reader, words[0]) {
                (Reader::Tx(tx), "set") => tx.update(t, &row),
                (Reader::Tx(tx), _) => tx.insert(t, &row),
                (Reader::Auto, "set") => t.update(&row).map(|_| ()),
                (Reader::Auto, _) => t.insert(&row).map(|_| ()),
            };
            if let Err(e) = r {
                err(&mut out, e);
            }
        }
        "delete" => {
            let k = key(arg(1));
            let r = match &mut reader {
                Reader::Tx(tx) => tx.delete(t, &[k]),
                Reader::Auto => t.delete(&[k]),
            };
            match r {
                Ok(true) => {}
                Ok(false) => out.push(Line::Text(format!("{p}delete {} => not found", arg(1)))),
                Err(e) => err(&mut out, e),
            }
        }
        other => panic!("unknown statement `{other}`"),
    }
    out
}

/// Runs a transaction's command; returns the transaction unless it ended.
fn tx_command<'db>(t: &Table, name: &str, mut tx: Transaction, words: &[&str]) -> Background<'db> {
    let p = format!("{name}: ");
    match words[0] {
        "commit" => match tx.commit() {
            Ok(_) => (None, Vec::new()),
            Err(e) => (None, vec![Line::Err(p, e)]),
        },
        "rollback" => match tx.rollback() {
            Ok(()) => (None, Vec::new()),
            Err(e) => (None, vec![Line::Err(p, e)]),
        },
        _ => {
            let out = statement(t, Some(name), Reader::Tx(&mut tx), words);
            (Some(tx), out)
        }
    }
}

impl<'s, 'db> Runner<'s, 'db> {
    fn note(&mut self, name: &str, tx: &Transaction) {
        if tx.id() != 0 {
            self.names.insert(tx.id(), name.to_owned());
        }
    }

    fn name(&self, id: u64) -> String {
        self.names
            .get(&id)
            .cloned()
            .unwrap_or_else(|| format!("#{id}"))
    }

    fn text(&self, out: Output) -> Vec<String> {
        out.into_iter()
            .map(|l| match l {
                Line::Text(s) => s,
                Line::Err(p, Error::Deadlock { trx, cycle, .. }) => {
                    let mut c: Vec<String> = cycle.iter().map(|&i| self.name(i)).collect();
                    c.sort();
                    format!(
                        "{p}Error: deadlock: {} rolled back (cycle {})",
                        self.name(trx),
                        c.join(", ")
                    )
                }
                Line::Err(p, Error::LockWaitTimeout { holders, .. }) => {
                    let h: Vec<String> = holders.iter().map(|&i| self.name(i)).collect();
                    format!(
                        "{p}Error: lock wait timeout: waited for a lock held by {}",
                        h.join(", ")
                    )
                }
                Line::Err(p, e) => format!("{p}Error: {e}"),
            })
            .collect()
    }

    /// Runs one command line; returns its output.
    fn command(&mut self, line: &str) -> Vec<String> {
        let cmd = line.split('#').next().unwrap_or_default().trim();
        let (cmd, background) = match cmd.strip_suffix('&') {
            Some(c) => (c.trim(), true),
            None => (cmd, false),
        };
        let (who, rest) = match cmd.split_once(':') {
            Some((w, r)) => (Some(w.trim()), r.trim()),
            None => (None, cmd),
        };
        let words: Vec<&str> = rest.split_whitespace().collect();
        assert!(!words.is_empty(), "empty command");
        let Some(name) = who else {
            assert!(
                !background,
                "only a transaction's statement can run in the background"
            );
            return match words[0] {
                "config" => panic!("config must be the first command of a script"),
                "check" => match self.db.check() {
                    Ok(_) => Vec::new(),
                    Err(e) => vec![format!("Error: {e}")],
                },
                _ => {
                    let out = statement(self.t, None, Reader::Auto, &words);
                    self.text(out)
                }
            };
        };
        let name = name.to_owned();
        assert!(
            !self.pending.contains_key(&name) || words[0] == "await",
            "{name} has a statement in the background: await it first"
        );
        match words[0] {
            "begin" => {
                let iso = match words.get(1).copied() {
                    None | Some("repeatable_read") => Isolation::RepeatableRead,
                    Some("read_committed") => Isolation::ReadCommitted,
                    Some(other) => panic!("unknown isolation level `{other}`"),
                };
                assert!(!self.txs.contains_key(&name), "{name} is already open");
                self.txs.insert(name, self.db.begin_with(iso).unwrap());
                Vec::new()
            }
            "await" => {
                let h = self
                    .pending
                    .remove(&name)
                    .unwrap_or_else(|| panic!("{name} has nothing to await"));
                let (tx, out) = h.join().unwrap();
                self.put_back(&name, tx);
                self.text(out)
            }
            _ => {
                let tx = self
                    .txs
                    .remove(&name)
                    .unwrap_or_else(|| panic!("no open transaction {name}"));
                self.note(&name, &tx);
                let words: Vec<String> = words.iter().map(|w| (*w).to_owned()).collect();
                if !background {
                    let w: Vec<&str> = words.iter().map(String::as_str).collect();
                    let (tx, out) = tx_command(self.t, &name, tx, &w);
                    self.put_back(&name, tx);
                    return self.text(out);
                }
                let waiting = self.db.lock_stats().unwrap().waiting;
                let t = self.t;
                let n = name.clone();
                let h = self.scope.spawn(move || {
                    let w: Vec<&str> = words.iter().map(String::as_str).collect();
                    tx_command(t, &n, tx, &w)
                });
                let start = Instant::now();
                loop {
                    if h.is_finished() {
                        let (tx, out) = h.join().unwrap();
                        self.put_back(&name, tx);
                        return self.text(out);
                    }
                    if self.db.lock_stats().unwrap().waiting > waiting {
                        self.pending.insert(name.clone(), h);
                        return vec![format!("{name}: waiting")];
                    }
                    assert!(
                        start.elapsed() < Duration::from_secs(30),
                        "{name}'s background statement neither finished nor waited"
                    );
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
    }

    fn put_back(&mut self, name: &str, tx: Option<Transaction>) {
        if let Some(tx) = tx {
            self.note(name, &tx);
            self.txs.insert(name.to_owned(), tx);
        }
    }
}

/// Runs a script; returns one output per block.
fn run(items: &[Item]) -> Vec<Vec<String>> {
    let mut config = Config {
        lock_wait_timeout: Duration::from_secs(10),
        ..Config::default()
    };
    let mut blocks = items.iter().filter_map(|i| match i {
        Item::Block { commands, .. } => Some(commands),
        Item::Text(_) => None,
    });
    let mut skip_first = false;
    if let Some(first) = blocks.next() {
        for c in first {
            let c = c.split('#').next().unwrap_or_default().trim();
            if let Some(ms) = c.strip_prefix("config lock_wait_timeout=") {
                config.lock_wait_timeout =
                    Duration::from_millis(int(ms, "lock_wait_timeout") as u64);
                skip_first = true;
            } else {
                assert!(!skip_first, "the config block holds only config commands");
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), config).unwrap();
    let t = db.create_table(kv_def()).unwrap();
    let mut outputs = Vec::new();
    std::thread::scope(|scope| {
        let mut r = Runner {
            scope,
            db: &db,
            t: &t,
            txs: HashMap::new(),
            pending: HashMap::new(),
            names: HashMap::new(),
        };
        for item in items {
            let Item::Block { commands, .. } = item else {
                continue;
            };
            if skip_first {
                skip_first = false;
                outputs.push(vec!["ok".to_owned()]);
                continue;
            }
            let mut out = Vec::new();
            for c in commands {
                out.extend(r.command(c));
            }
            if out.is_empty() {
                out.push("ok".to_owned());
            }
            outputs.push(out);
        }
        for (_, h) in r.pending.drain() {
            drop(h.join().unwrap());
        }
        r.txs.clear();
    });
    // Purge waits for row locks too, as a background locker: one granted by a script's last
    // commit counts as waiting until its thread has woken, so the counters are read until
    // they settle (bounded).
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut stats = db.lock_stats().unwrap();
    while (stats.held, stats.waiting) != (0, 0) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
        stats = db.lock_stats().unwrap();
    }
    assert_eq!(
        (stats.held, stats.waiting),
        (0, 0),
        "locks left after the script"
    );
    db.check().unwrap();
    outputs
}

fn scripts() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts/mvcc");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    v.sort();
    v
}

#[test]
fn mvcc_scripts() {
    let update = std::env::var_os("UPDATE_GOLDENFILES").is_some_and(|v| v == "1");
    let mut failures = String::new();
    let paths = scripts();
    assert!(paths.len() >= 10, "scripts missing: {paths:?}");
    for path in &paths {
        let text = std::fs::read_to_string(path).unwrap();
        let items = parse(&text);
        let outputs = run(&items);
        let actual = render(&items, &outputs);
        if actual == text {
            continue;
        }
        if update {
            std::fs::write(path, &actual).unwrap();
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy();
        let mut outs = outputs.iter();
        for item in &items {
            let Item::Block {
                line,
                commands,
                expected,
            } = item
            else {
                continue;
            };
            let got = outs.next().unwrap();
            if expected.as_ref() == Some(got) {
                continue;
            }
            let _ = writeln!(failures, "\n{name}:{line}:");
            for c in commands {
                let _ = writeln!(failures, "    {c}");
            }
            let _ = writeln!(failures, "  expected:");
            for l in expected.iter().flatten() {
                let _ = writeln!(failures, "-   {l}");
            }
            let _ = writeln!(failures, "  got:");
            for l in got {
                let _ = writeln!(failures, "+   {l}");
            }
        }
        if !failures.contains(&*name) {
            let _ = writeln!(
                failures,
                "\n{name}: the file's layout differs from its rendering"
            );
        }
    }
    assert!(
        failures.is_empty(),
        "scripts printed something else than expected \
         (UPDATE_GOLDENFILES=1 rewrites them):\n{failures}"
    );
}
