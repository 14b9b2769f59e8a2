//! Real crashes: a child process runs transactions and is killed with `SIGKILL`.
//!
//! Each round creates a database (small buffer pool, so pages are flushed and evicted; small
//! redo log, so it wraps), starts this test binary again as a child that runs
//! [`minnow_workload::killer`]'s bank-and-journal workload with several writer threads, and
//! kills it:
//!
//! - at a random moment a few hundred milliseconds into the run, or
//! - (every third round) with no page cleaner, once the checkpoint age has passed 70 % of the
//!   log's capacity, so the kill lands while the log is nearly full;
//!
//! and in every fourth round a second child then starts recovery and is killed during it. The
//! test itself then opens the database (recovery) and checks every acknowledged commit is
//! there, nothing uncommitted is visible, the balances add up and `check()` passes
//! ([`minnow_workload::killer::verify`]).
//!
//! `MINNOW_KILL_ROUNDS=N` runs N rounds (default 20), `MINNOW_KILL_SEED_START=S` starts at
//! seed S. A seed fixes the kill mode and delay; where the kill lands is up to the machine,
//! so a failure prints the seed and the child's last lines.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use minnow::{Config, Database};
use minnow_workload::killer::{self, Shape};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const CHILD_DIR: &str = "MINNOW_KILL_CHILD_DIR";
const CHILD_MODE: &str = "MINNOW_KILL_CHILD_MODE";
const CHILD_CLEANERS: &str = "MINNOW_KILL_CHILD_CLEANERS";

fn shape() -> Shape {
    Shape {
        accounts: 64,
        threads: 3,
        keep: 20,
        pad: 200,
    }
}

fn config(page_cleaners: usize) -> Config {
    killer::config(Config {
        buffer_pool_size: 1 << 20,
        log_file_size: 512 << 10,
        page_cleaners,
        ..Config::default()
    })
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The child's half: does nothing unless started by [`spawn`].
#[test]
#[ignore = "the child process's half; run by the test that spawns it"]
fn kill_child() {
    let Some(dir) = std::env::var_os(CHILD_DIR) else {
        return;
    };
    let cleaners = env_u64(CHILD_CLEANERS, 1) as usize;
    let db = Database::open(&dir, config(cleaners)).expect("child: open");
    println!("OPENED");
    if std::env::var(CHILD_MODE).as_deref() == Ok("recover") {
        db.close().expect("child: close");
        return;
    }
    let stop = AtomicBool::new(false);
    let seed = env_u64("MINNOW_KILL_CHILD_SEED", 0);
    let report = |line: String| println!("{line}");
    // Runs until killed; an error ends the child with a panic the parent sees.
    killer::run(&db, &shape(), seed, &stop, &report).expect("child: workload failed");
    panic!("child: the workload stopped by itself");
}

/// A running child and the lines it has printed so far.
struct Running {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    reader: std::thread::JoinHandle<()>,
}

fn spawn(dir: &Path, mode: &str, cleaners: usize, seed: u64) -> Running {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "kill_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DIR, dir)
        .env(CHILD_MODE, mode)
        .env(CHILD_CLEANERS, cleaners.to_string())
        .env("MINNOW_KILL_CHILD_SEED", seed.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&lines);
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            sink.lock().unwrap().push(line);
        }
    });
    Running {
        child,
        lines,
        reader,
    }
}

impl Running {
    /// Waits until `pred` holds for a line printed, the child exits, or `limit` passes.
    fn wait_for(&mut self, limit: Duration, pred: impl Fn(&str) -> bool) -> bool {
        let start = Instant::now();
        let mut seen = 0;
        while start.elapsed() < limit {
            {
                let lines = self.lines.lock().unwrap();
                if lines[seen..].iter().any(|l| pred(l)) {
                    return true;
                }
                seen = lines.len();
            }
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        false
    }

    /// SIGKILLs the child (if it still runs) and returns its output and whether it was still
    /// running when killed.
    fn kill(mut self) -> (Vec<String>, String, bool) {
        let running = matches!(self.child.try_wait(), Ok(None));
        self.child.kill().unwrap(); // SIGKILL on Unix
        let out = self.child.wait_with_output().unwrap();
        self.reader.join().unwrap();
        let lines = std::mem::take(&mut *self.lines.lock().unwrap());
        (
            lines,
            String::from_utf8_lossy(&out.stderr).into_owned(),
            running,
        )
    }
}

#[derive(Debug, Default)]
struct Totals {
    rounds: u64,
    acknowledged: u64,
    in_flight_kept: u64,
    near_full_kills: u64,
    recovery_kills: u64,
}

fn round(seed: u64, totals: &mut Totals) {
    let mut rng = SmallRng::seed_from_u64(seed ^ 0xC0FFEE);
    let near_full = seed % 3 == 2;
    let cleaners = if near_full { 0 } else { 1 };
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::create(dir.path(), config(cleaners)).unwrap();
        killer::prepare(&db, &shape()).unwrap();
        db.close().unwrap();
    }
    let mut w = spawn(dir.path(), "write", cleaners, seed);
    assert!(
        w.wait_for(Duration::from_secs(60), |l| l.starts_with("ACK")),
        "seed {seed}: the child never committed"
    );
    let mut reached = false;
    if near_full {
        reached = w.wait_for(Duration::from_secs(30), |l| {
            let mut it = l.split_whitespace();
            match (it.next(), it.next(), it.next()) {
                (Some("AGE"), Some(age), Some(cap)) => {
                    let (age, cap) = (age.parse::<u64>(), cap.parse::<u64>());
                    matches!((age, cap), (Ok(a), Ok(c)) if a * 10 >= c * 7)
                }
                _ => false,
            }
        });
    } else {
        std::thread::sleep(Duration::from_millis(rng.random_range(20..400)));
    }
    let (lines, stderr, running) = w.kill();
    assert!(
        running,
        "seed {seed}: the child stopped before it was killed:\n{stderr}"
    );
    totals.near_full_kills += u64::from(reached);
    let acked: BTreeMap<u64, u64> = killer::acknowledged(lines.iter().map(String::as_str));

    if seed % 4 == 3 {
        // Kill the next opener during its recovery, at a random moment.
        let r = spawn(dir.path(), "recover", cleaners, seed);
        std::thread::sleep(Duration::from_millis(rng.random_range(0..40)));
        let opened = r.lines.lock().unwrap().iter().any(|l| l == "OPENED");
        let (_, _, running) = r.kill();
        totals.recovery_kills += u64::from(running && !opened);
    }

    let db = Database::open(dir.path(), config(cleaners))
        .unwrap_or_else(|e| panic!("seed {seed}: open after the kill failed: {e}"));
    let v = killer::verify(&db, &shape(), &acked).unwrap_or_else(|e| {
        let tail = lines.len().saturating_sub(10);
        panic!(
            "seed {seed}: {e}\nacknowledged: {acked:?}\nlast lines: {:?}",
            &lines[tail..]
        )
    });
    db.close().unwrap();
    totals.rounds += 1;
    totals.acknowledged += v.acknowledged;
    totals.in_flight_kept += v.in_flight_kept;
}

#[test]
fn acknowledged_commits_survive_sigkill() {
    let start = env_u64("MINNOW_KILL_SEED_START", 0);
    let rounds = env_u64("MINNOW_KILL_ROUNDS", 20);
    let mut totals = Totals::default();
    for seed in start..start + rounds {
        round(seed, &mut totals);
    }
    eprintln!("{totals:?}");
    assert_eq!(totals.rounds, rounds);
    assert!(totals.acknowledged >= rounds, "{totals:?}");
    if rounds >= 6 {
        assert!(
            totals.near_full_kills > 0,
            "no round was killed with the log nearly full: {totals:?}"
        );
    }
}
