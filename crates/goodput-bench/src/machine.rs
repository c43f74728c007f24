//! What the rest of the machine is doing: CPU used by this process, by the
//! whole machine, waiting for a quiet machine, and the file-descriptor limit.
//! Linux only (`/proc/stat`, `getrusage`, `setrlimit`).

use std::time::{Duration, Instant};

use anyhow::Context as _;

/// A `timeval` as a `Duration` (negative fields count as 0).
pub fn timeval(tv: libc::timeval) -> Duration {
    Duration::from_secs(tv.tv_sec.max(0) as u64) + Duration::from_micros(tv.tv_usec.max(0) as u64)
}

/// CPU time (user + system) used so far by this process, all threads.
pub fn own_cpu() -> Duration {
    // SAFETY: rusage is plain old data; getrusage fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a local.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    timeval(usage.ru_utime) + timeval(usage.ru_stime)
}

/// This process's peak RSS so far (`VmHWM`), KiB.
pub fn own_peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// CPU time used by the whole machine so far (every process, from
/// `/proc/stat`: user, nice, system, irq, softirq and steal), or `None` where
/// there is no `/proc/stat`.
pub fn machine_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal ...
    let busy: u64 = [0, 1, 2, 5, 6, 7]
        .iter()
        .filter_map(|&i| fields.get(i))
        .sum();
    // SAFETY: sysconf has no preconditions.
    let ticks_per_s = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (ticks_per_s > 0).then(|| Duration::from_secs_f64(busy as f64 / ticks_per_s as f64))
}

/// Number of cores this process may run on.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Waits up to `max_wait` for a half second in which the machine's cores
/// were at most `threshold` busy (0..1); returns the share of the last sample.
pub fn wait_for_idle(max_wait: Duration, threshold: f64) -> Option<f64> {
    let window = Duration::from_millis(500);
    let deadline = Instant::now() + max_wait;
    loop {
        let before = machine_cpu()?;
        std::thread::sleep(window);
        let busy = machine_cpu()?.saturating_sub(before).as_secs_f64()
            / (window.as_secs_f64() * cores() as f64);
        if busy <= threshold || Instant::now() >= deadline {
            return Some(busy);
        }
    }
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit; returns the new soft
/// limit. Children inherit it: 1,024 streams need more than 1,024
/// descriptors on each side.
pub fn raise_fd_limit() -> anyhow::Result<u64> {
    // SAFETY: rlimit is plain old data; the calls only read and write it.
    unsafe {
        let mut limit: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return Err(std::io::Error::last_os_error()).context("getrlimit(RLIMIT_NOFILE)");
        }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error()).context("setrlimit(RLIMIT_NOFILE)");
            }
        }
        Ok(limit.rlim_cur as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_cpu_only_grows() {
        let before = machine_cpu().expect("/proc/stat on Linux");
        let spin = Instant::now();
        while spin.elapsed() < Duration::from_millis(50) {}
        assert!(machine_cpu().unwrap() >= before);
    }

    #[test]
    fn own_figures_are_readable() {
        assert!(own_peak_rss_kib().expect("VmHWM on Linux") > 0);
        let spin = Instant::now();
        while spin.elapsed() < Duration::from_millis(20) {}
        assert!(own_cpu() > Duration::ZERO);
    }
}
