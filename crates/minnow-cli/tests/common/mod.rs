//! Helpers shared by the integration tests: running the built `minnow` binary and locating the
//! real InnoDB fixtures.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What one run of the binary produced.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// stdout parsed as JSON (panics with the output if it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }
}

/// Runs `minnow` with `args`.
pub fn minnow<I, S>(args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let out = Command::new(env!("CARGO_BIN_EXE_minnow"))
        .args(args)
        .output()
        .expect("run minnow");
    Run {
        // A process killed by a signal has no code; report it as -1 so the tests fail.
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The repository's fixtures directory.
pub fn fixtures() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures"))
}

/// A MySQL fixture, e.g. `5.0/actor.ibd`.
pub fn mysql(rel: &str) -> PathBuf {
    fixtures().join("innodb-mysql").join(rel)
}

/// Every MySQL fixture with the checksum algorithm its pages carry.
pub fn mysql_fixtures() -> Vec<(PathBuf, &'static str)> {
    let mut all = Vec::new();
    for version in ["5.0", "5.7", "8.0"] {
        let algo = if version == "5.0" { "innodb" } else { "crc32" };
        for table in ["actor", "city", "film_category"] {
            all.push((mysql(&format!("{version}/{table}.ibd")), algo));
        }
    }
    // The two small innodb_ruby test tables were written with the legacy checksum too.
    all.push((mysql("hello_world.ibd"), "innodb"));
    all.push((mysql("t_numeric_types.ibd"), "innodb"));
    all
}

/// Gunzips the MariaDB fixture `name` (`normal_compact` or `sbtest1`) into `dir`.
pub fn mariadb(dir: &Path, name: &str) -> PathBuf {
    let gz = fixtures().join("innodb").join(format!("{name}.ibd.gz"));
    let file = std::fs::File::open(&gz).expect("open fixture");
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(file)
        .read_to_end(&mut bytes)
        .expect("gunzip fixture");
    let out = dir.join(format!("{name}.ibd"));
    std::fs::write(&out, bytes).expect("write fixture");
    out
}

/// A tiny deterministic PRNG (xorshift64*), so fuzz failures reproduce.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }

    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
}

/// Every file of the directory, by name: compared before and after a command to prove it
/// wrote nothing.
pub fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

/// Runs `minnow ARGS` (`--json` first if `json`); checks that nothing panicked and, when
/// `dir` exists, that its files are unchanged. Returns (exit code, stdout).
pub fn minnow_in(dir: &Path, json: bool, args: &[&str]) -> (i32, String) {
    let before = dir.is_dir().then(|| snapshot(dir));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_minnow"));
    if json {
        cmd.arg("--json");
    }
    let out = cmd.args(args).output().unwrap();
    if let Some(before) = before {
        assert!(snapshot(dir) == before, "minnow {args:?} changed the files");
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "minnow {args:?}: {stderr}");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// [`minnow_in`] with `--json`: the exit code and stdout parsed as JSON (panics with the
/// output if it is not JSON).
pub fn json_in(dir: &Path, args: &[&str]) -> (i32, serde_json::Value) {
    let (code, out) = minnow_in(dir, true, args);
    let json = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("minnow {args:?}: not JSON ({e}): {out}"));
    (code, json)
}

/// A database configuration without background purge, for tests that make a database and then
/// read old versions (undo) from its files: purge could remove them before the close.
pub fn config_without_purge() -> minnow::Config {
    minnow::Config {
        purge_threads: 0,
        ..minnow::Config::default()
    }
}
