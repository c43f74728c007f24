//! Running a client as a child process and measuring exactly that process:
//! CPU time (user + system) and peak RSS from `wait4`'s rusage, wall time
//! from spawn to exit. Start-up and shut-down are included: that is what a
//! user pays.
//!
//! The client is started by a small helper process (`bench measure-child`),
//! never by the bench itself: on Linux a program's `ru_maxrss` starts at the
//! peak RSS of the process image it was exec'd from, and a spawned child is
//! exec'd from a (v)fork of its parent. Spawned straight from the bench, every
//! client would be charged with the bench's own peak (server logs, parsed
//! records). The helper is a fresh exec of the bench binary that has done
//! nothing yet; the floor it adds (a few MiB) is reported.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use crate::machine::{own_peak_rss_kib, timeval};

/// A command to run, kept as words so it can be printed exactly.
#[derive(Debug, Clone)]
pub struct ChildCommand {
    /// Program path.
    pub program: PathBuf,
    /// Arguments.
    pub args: Vec<String>,
    /// Variables set in its environment besides the bench's own (a shard's
    /// `JOB_COMPLETION_INDEX`).
    pub env: Vec<(String, String)>,
}

impl ChildCommand {
    /// The command as one shell-quoted line, its variables first.
    pub fn display(&self) -> String {
        self.env
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .chain(std::iter::once(self.program.display().to_string()))
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
    /// The least peak RSS the measurement can report, in KiB: the helper's
    /// own peak RSS when it started the child.
    pub rss_floor_kib: u64,
    /// Exit code (None when killed by a signal).
    pub exit_code: Option<i32>,
    /// `CLOCK_MONOTONIC` right before the helper called `spawn` for the
    /// command, ns (None from an older helper).
    pub spawn_monotonic_ns: Option<u64>,
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

/// The cost of one process as `bench measure-child` reports it (one JSON line).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawUsage {
    /// Spawn to exit, ns.
    pub wall_ns: u64,
    /// User CPU, ns.
    pub user_ns: u64,
    /// System CPU, ns.
    pub sys_ns: u64,
    /// `ru_maxrss`, KiB.
    pub max_rss_kib: u64,
    /// The helper's own peak RSS when it started the child, KiB.
    pub floor_rss_kib: u64,
    /// Exit code (None when killed by a signal).
    pub exit_code: Option<i32>,
    /// Whether the child was killed at the time limit.
    pub timed_out: bool,
    /// `CLOCK_MONOTONIC` right before `spawn`, ns: the start of the
    /// child's start-up (fork and exec included).
    #[serde(default)]
    pub spawn_monotonic_ns: Option<u64>,
}

/// Runs `command` to its end (killing it after `time_limit`) through the
/// helper `bench_exe measure-child`, with the command's stdout and stderr in
/// files under `work_dir` named after `label`.
pub fn run_measured(
    bench_exe: &Path,
    command: &ChildCommand,
    work_dir: &Path,
    label: &str,
    time_limit: Duration,
) -> anyhow::Result<ChildUsage> {
    let stdout_path = work_dir.join(format!("{label}.stdout"));
    let stderr_path = work_dir.join(format!("{label}.stderr"));
    let output = Command::new(bench_exe)
        .arg("measure-child")
        .arg("--time-limit-ms")
        .arg(time_limit.as_millis().to_string())
        .arg("--stdout")
        .arg(&stdout_path)
        .arg("--stderr")
        .arg(&stderr_path)
        .arg("--")
        .arg(&command.program)
        .args(&command.args)
        .envs(command.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("starting the measuring helper {}", bench_exe.display()))?;
    let raw: RawUsage = serde_json::from_slice(&output.stdout).with_context(|| {
        format!(
            "the measuring helper for {label} printed no usage ({}): {:?}",
            output.status,
            String::from_utf8_lossy(&output.stdout)
        )
    })?;
    let read = |path: &Path| std::fs::read_to_string(path).unwrap_or_default();
    let usage = ChildUsage {
        command: command.display(),
        wall: Duration::from_nanos(raw.wall_ns),
        user: Duration::from_nanos(raw.user_ns),
        sys: Duration::from_nanos(raw.sys_ns),
        max_rss_kib: raw.max_rss_kib,
        rss_floor_kib: raw.floor_rss_kib,
        exit_code: raw.exit_code,
        spawn_monotonic_ns: raw.spawn_monotonic_ns,
        stdout: read(&stdout_path),
        stderr: read(&stderr_path),
    };
    if raw.timed_out {
        anyhow::bail!(
            "{label} exceeded its time limit of {:?} and was killed: {}\nstderr (last lines):\n{}",
            time_limit,
            usage.command,
            tail(&usage.stderr, 20)
        );
    }
    Ok(usage)
}

/// The body of `bench measure-child`: runs `program args` with stdout and
/// stderr sent to the given files, kills it after `time_limit`, and returns
/// its cost from `wait4`.
pub fn measure_here(
    program: &Path,
    args: &[String],
    stdout_path: &Path,
    stderr_path: &Path,
    time_limit: Duration,
) -> anyhow::Result<RawUsage> {
    let stdout = std::fs::File::create(stdout_path)
        .with_context(|| format!("creating {}", stdout_path.display()))?;
    let stderr = std::fs::File::create(stderr_path)
        .with_context(|| format!("creating {}", stderr_path.display()))?;
    let floor_rss_kib = own_peak_rss_kib().unwrap_or(0);
    let spawn_monotonic_ns = crate::clock::monotonic_ns();
    let start = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .with_context(|| format!("starting {}", program.display()))?;
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
    Ok(RawUsage {
        wall_ns: start.elapsed().as_nanos() as u64,
        user_ns: timeval(usage.ru_utime).as_nanos() as u64,
        sys_ns: timeval(usage.ru_stime).as_nanos() as u64,
        max_rss_kib: usage.ru_maxrss.max(0) as u64,
        floor_rss_kib,
        exit_code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        timed_out,
        spawn_monotonic_ns: Some(spawn_monotonic_ns),
    })
}

/// The last `n` lines of `text`.
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("goodput-bench-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

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
            env: Vec::new(),
        };
        assert_eq!(
            cmd.display(),
            r"/x/goodput run --url http://127.0.0.1:80 'a b' 'it'\''s'"
        );
        let shard = ChildCommand {
            env: vec![("JOB_COMPLETION_INDEX".into(), "2".into())],
            ..cmd
        };
        assert!(shard
            .display()
            .starts_with("JOB_COMPLETION_INDEX=2 /x/goodput run "));
    }

    #[test]
    fn measures_a_child_that_burns_cpu() {
        let dir = temp_dir("burn");
        let script = "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; echo done".to_string();
        let usage = measure_here(
            Path::new("sh"),
            &["-c".to_string(), script],
            &dir.join("out"),
            &dir.join("err"),
            Duration::from_secs(60),
        )
        .unwrap();
        assert_eq!(usage.exit_code, Some(0));
        assert!(!usage.timed_out);
        let out = std::fs::read_to_string(dir.join("out")).unwrap();
        assert_eq!(out.trim(), "done");
        assert!(
            usage.user_ns + usage.sys_ns > 0,
            "a busy loop must show CPU time"
        );
        assert!(usage.max_rss_kib > 0);
        assert!(usage.floor_rss_kib > 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn kills_a_child_past_its_time_limit() {
        let dir = temp_dir("kill");
        let started = Instant::now();
        let usage = measure_here(
            Path::new("sleep"),
            &["30".to_string()],
            &dir.join("out"),
            &dir.join("err"),
            Duration::from_millis(100),
        )
        .unwrap();
        assert!(usage.timed_out);
        assert_eq!(usage.exit_code, None, "killed by a signal");
        assert!(started.elapsed() < Duration::from_secs(20));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
