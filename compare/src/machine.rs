//! Where a run happened: CPU, cores, memory, kernel, and the file system under the data
//! directory (from `/proc`; fields it cannot read say "unknown").

use std::path::{Path, PathBuf};

/// The machine and the data directory's file system.
#[derive(Debug, Clone)]
pub struct Machine {
    /// CPU model name.
    pub cpu: String,
    /// Logical CPUs this process may use.
    pub cores: usize,
    /// Total memory.
    pub memory: String,
    /// Kernel release.
    pub kernel: String,
    /// The file system holding the data directory.
    pub fs: Mount,
}

/// One mount: the longest mount point that contains a path.
#[derive(Debug, Clone, Default)]
pub struct Mount {
    /// The device (or source) mounted.
    pub device: String,
    /// Where it is mounted.
    pub point: PathBuf,
    /// Its type (`ext4`, `xfs`, `tmpfs`, ...).
    pub fstype: String,
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// `/proc/mounts` escapes spaces and a few other bytes as `\ooo`.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(u8::is_ascii_digit) {
            let o = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(o);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The mount that holds `dir` (which must exist).
pub fn mount_of(dir: &Path) -> Mount {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let mut best = Mount::default();
    for line in read("/proc/self/mounts").lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 3 {
            continue;
        }
        let point = PathBuf::from(unescape(f[1]));
        if dir.starts_with(&point) && point.as_os_str().len() >= best.point.as_os_str().len() {
            best = Mount {
                device: unescape(f[0]),
                point,
                fstype: f[2].to_owned(),
            };
        }
    }
    if best.fstype.is_empty() {
        best.fstype = "unknown".into();
    }
    best
}

/// Describes this machine, with the file system of `dir`.
pub fn describe(dir: &Path) -> Machine {
    let cpuinfo = read("/proc/cpuinfo");
    let cpu = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned())
        .unwrap_or_else(|| "unknown".into());
    let memory = read("/proc/meminfo")
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kib| kib.parse::<u64>().ok())
        .map(|kib| format!("{:.1} GiB", kib as f64 / (1024.0 * 1024.0)))
        .unwrap_or_else(|| "unknown".into());
    let kernel = read("/proc/sys/kernel/osrelease").trim().to_owned();
    Machine {
        cpu,
        cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
        memory,
        kernel: if kernel.is_empty() {
            "unknown".into()
        } else {
            kernel
        },
        fs: mount_of(dir),
    }
}

impl std::fmt::Display for Machine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}, {} logical CPUs, {} RAM, Linux {}; data on {} ({} mounted at {})",
            self.cpu,
            self.cores,
            self.memory,
            self.kernel,
            self.fs.fstype,
            self.fs.device,
            self.fs.point.display()
        )
    }
}
