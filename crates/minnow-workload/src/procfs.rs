//! What Linux counts for a process, read from `/proc`: the experiments' CPU and IO figures.
//!
//! An experiment that says where its time went needs more than wall clock: the process's user
//! and system CPU time (`utime`/`stime` of `/proc/self/stat`, in clock ticks of
//! [`USER_HZ`]), the bytes it read and wrote to storage (`read_bytes`/`write_bytes` of
//! `/proc/self/io`, which count what reached the block layer, not what the page cache served),
//! the whole machine's split between user, kernel, idle and IO wait (`/proc/stat`'s `cpu`
//! line), and each thread's time on a CPU and waiting for one (`schedstat`). Every reader
//! returns `None` where the file is missing or unreadable (another kernel, a sandbox), so a
//! report prints "unknown" instead of failing the run.

/// The kernel's clock tick for `/proc` times (`USER_HZ`, 100 on every Linux ABI minnow runs on).
pub const USER_HZ: f64 = 100.0;

/// `utime` and `stime` of `/proc/self/stat`, in ticks of [`USER_HZ`].
pub fn process_ticks() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces and parentheses: fields after it start after
    // the last ')'; utime and stime are fields 14 and 15, so 11 and 12 after the name.
    let rest = text.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some((f.get(11)?.parse().ok()?, f.get(12)?.parse().ok()?))
}

/// The process's CPU time so far (user + system), in seconds.
pub fn cpu_seconds() -> Option<f64> {
    let (user, sys) = process_ticks()?;
    Some((user + sys) as f64 / USER_HZ)
}

/// One counter of `/proc/self/io` by name (`"read_bytes"`, `"write_bytes"`, ...).
pub fn io_counter(name: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/io").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|v| v.trim().parse().ok())
}

/// `/proc/stat`'s first line as user (+nice), system (+irq +softirq), idle, iowait, all
/// (ticks).
pub fn system_ticks() -> Option<[u64; 5]> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().next()?.strip_prefix("cpu ")?;
    let v: Vec<u64> = line
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    // user nice system idle iowait irq softirq steal (guest counts inside user).
    let all = (0..8).map(at).sum();
    Some([at(0) + at(1), at(2) + at(5) + at(6), at(3), at(4), all])
}

/// A thread's (ns on a CPU, ns waiting for one) from its `schedstat`; `tid` as
/// [`thread_id`] gives it.
pub fn schedstat(tid: &str) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
    let mut f = text.split_whitespace();
    Some((f.next()?.parse().ok()?, f.next()?.parse().ok()?))
}

/// The calling thread's id, as `/proc/thread-self` names it (`<pid>/task/<tid>`).
pub fn thread_id() -> Option<String> {
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    Some(link.file_name()?.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_linux_process_reads_its_own_counters() {
        // Only where /proc exists (every Linux CI machine); elsewhere each reader is None.
        if !std::path::Path::new("/proc/self/stat").exists() {
            return;
        }
        let (user, sys) = process_ticks().expect("utime and stime parse");
        assert!(cpu_seconds().expect("cpu seconds") >= (user + sys) as f64 / USER_HZ);
        let tid = thread_id().expect("this thread's id");
        assert!(tid.parse::<u64>().is_ok(), "{tid}");
        assert!(schedstat(&tid).is_some());
        let ticks = system_ticks().expect("/proc/stat's cpu line");
        assert!(ticks[4] >= ticks[0] + ticks[1] + ticks[2] + ticks[3]);
        assert_eq!(io_counter("no_such_counter"), None);
    }
}
