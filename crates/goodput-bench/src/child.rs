//! Running a client as a child process and measuring exactly that process:
//! CPU time (user + system) and peak RSS from `wait4`'s rusage, wall time
//! from spawn to exit. Start-up and shut-down are included: that is what a
//! user pays.
//!
//! Also raises `RLIMIT_NOFILE`, which children inherit: 1,024 streams need
//! more than 1,024 descriptors on each side.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context as _;

/// A command to run, kept as words so it can be printed exactly.
#[derive(Debug, Clone)]
pub struct ChildCommand {
    /// Program path.
    pub program: PathBuf,
    /// Arguments.
    pub args: Vec<String>,
}

impl ChildCommand {
    /// The command as one shell-quoted line.
    pub fn display(&self) -> String {
        std::iter::once(self.program.display().to_string())
            .chain(self.args.iter().cloned())
            .map(|word| shell_quote(&word))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn shell_quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=,@%+".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// What one child process cost.
#[derive(Debug, Clone)]
pub struct ChildUsage {
    /// The command that ran.
    pub command: String,
    /// Wall time from spawn to exit.
    pub wall: Duration,
    /// User CPU time of the child.
    pub user: Duration,
    /// System CPU time of the child.
    pub sys: Duration,
    /// Peak resident set size of the child, in KiB.
    pub max_rss_kib: u64,
    /// Exit code (None when killed by a signal).
    pub exit_code: Option<i32>,
    /// Everything the child wrote to stdout.
    pub stdout: String,
    /// Everything the child wrote to stderr.
    pub stderr: String,
}

impl ChildUsage {
    /// User plus system CPU time.
    pub fn cpu(&self) -> Duration {
        self.user + self.sys
    }
}

/// Runs `command` to its end (killing it after `time_limit`), with stdout and
/// stderr sent to files under `work_dir` named after `label`.
pub fn run_measured(
    command: &ChildCommand,
    work_dir: &Path,
    label: &str,
    time_limit: Duration,
) -> anyhow::Result<ChildUsage> {
    let stdout_path = work_dir.join(format!("{label}.stdout"));
    let stderr_path = work_dir.join(format!("{label}.stderr"));
    let stdout = std::fs::File::create(&stdout_path)
        .with_context(|| format!("creating {}", stdout_path.display()))?;
    let stderr = std::fs::File::create(&stderr_path)
        .with_context(|| format!("creating {}", stderr_path.display()))?;
    let start = Instant::now();
    let mut child = Command::new(&command.program)
        .args(&command.args)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .with_context(|| format!("starting {}", command.program.display()))?;
    let pid = child.id() as libc::pid_t;
    let deadline = start + time_limit;
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain old data; zeroed is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let mut timed_out = false;
    loop {
        // Polling (not a blocking wait) so the time limit can be enforced
        // without a second thread racing to kill a reaped pid.
        // SAFETY: valid pointers to locals; pid is our own unreaped child.
        let reaped = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if reaped == pid {
            break;
        }
        if reaped < 0 {
            let err = std::io::Error::last_os_error();
            if err.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err).context("wait4 on the client process");
        }
        if !timed_out && Instant::now() >= deadline {
            timed_out = true;
            // Not yet reaped, so the pid is still ours: safe to kill.
            let _ = child.kill();
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let wall = start.elapsed();
    let read = |path: &Path| std::fs::read_to_string(path).unwrap_or_default();
    let result = ChildUsage {
        command: command.display(),
        wall,
        user: timeval(usage.ru_utime),
        sys: timeval(usage.ru_stime),
        max_rss_kib: usage.ru_maxrss.max(0) as u64,
        exit_code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        stdout: read(&stdout_path),
        stderr: read(&stderr_path),
    };
    if timed_out {
        anyhow::bail!(
            "{label} exceeded its time limit of {:?} and was killed: {}\nstderr (last lines):\n{}",
            time_limit,
            result.command,
            tail(&result.stderr, 20)
        );
    }
    Ok(result)
}

fn timeval(tv: libc::timeval) -> Duration {
    Duration::from_secs(tv.tv_sec.max(0) as u64) + Duration::from_micros(tv.tv_usec.max(0) as u64)
}

/// The last `n` lines of `text`.
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// CPU time (user + system) used so far by this process, all threads.
pub fn own_cpu() -> Duration {
    // SAFETY: rusage is plain old data; getrusage fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a local.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    timeval(usage.ru_utime) + timeval(usage.ru_stime)
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

/// Waits up to `max_wait` for a half second in which the machine's cores
/// were at most `threshold` busy (0..1); returns the share of the last sample.
pub fn wait_for_idle(max_wait: Duration, threshold: f64) -> Option<f64> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let window = Duration::from_millis(500);
    let deadline = Instant::now() + max_wait;
    loop {
        let before = machine_cpu()?;
        std::thread::sleep(window);
        let busy =
            machine_cpu()?.saturating_sub(before).as_secs_f64() / (window.as_secs_f64() * cores);
        if busy <= threshold || Instant::now() >= deadline {
            return Some(busy);
        }
    }
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit; returns the new soft limit.
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
    fn display_quotes_only_what_needs_it() {
        let cmd = ChildCommand {
            program: PathBuf::from("/x/goodput"),
            args: vec![
                "run".into(),
                "--url".into(),
                "http://127.0.0.1:80".into(),
                "a b".into(),
                "it's".into(),
            ],
        };
        assert_eq!(
            cmd.display(),
            r"/x/goodput run --url http://127.0.0.1:80 'a b' 'it'\''s'"
        );
    }

    #[test]
    fn measures_a_child_that_burns_cpu() {
        let dir = std::env::temp_dir().join(format!("goodput-bench-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cmd = ChildCommand {
            program: PathBuf::from("sh"),
            args: vec![
                "-c".into(),
                "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; echo done".into(),
            ],
        };
        let usage = run_measured(&cmd, &dir, "burn", Duration::from_secs(60)).unwrap();
        assert_eq!(usage.exit_code, Some(0));
        assert_eq!(usage.stdout.trim(), "done");
        assert!(
            usage.cpu() > Duration::ZERO,
            "a busy loop must show CPU time"
        );
        assert!(usage.max_rss_kib > 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn machine_cpu_only_grows() {
        let before = machine_cpu().expect("/proc/stat on Linux");
        let spin = Instant::now();
        while spin.elapsed() < Duration::from_millis(50) {}
        assert!(machine_cpu().unwrap() >= before);
    }

    #[test]
    fn kills_a_child_past_its_time_limit() {
        let dir =
            std::env::temp_dir().join(format!("goodput-bench-test-kill-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cmd = ChildCommand {
            program: PathBuf::from("sleep"),
            args: vec!["30".into()],
        };
        let started = Instant::now();
        let err = run_measured(&cmd, &dir, "sleep", Duration::from_millis(100)).unwrap_err();
        assert!(format!("{err}").contains("time limit"));
        assert!(started.elapsed() < Duration::from_secs(20));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
