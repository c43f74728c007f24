//! One configuration's server: started in a process group of its own
//! (`sh -c COMMAND`, its output to a log file), waited for until it
//! answers, and stopped with its whole group: SIGTERM, then SIGKILL after
//! the grace period.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A server process group.
pub struct Server {
    child: Child,
}

/// Why a server is not ready.
#[derive(Debug)]
pub enum NotReady {
    /// It exited before it answered, with this status.
    Exited(String),
    /// It did not answer within the time given.
    Timeout(Duration),
    /// The wait was interrupted.
    Interrupted,
}

impl std::fmt::Display for NotReady {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotReady::Exited(s) => write!(f, "the server exited before it answered ({s})"),
            NotReady::Timeout(t) => write!(
                f,
                "the server did not answer /v1/models within {} s",
                t.as_secs()
            ),
            NotReady::Interrupted => write!(f, "interrupted while the server started"),
        }
    }
}

/// A free loopback port (bound, then released for the server to take).
pub fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

impl Server {
    /// Start `command` under `sh -c` in a new process group, its stdout
    /// and stderr appended to `log`.
    pub fn start(command: &str, log: &Path) -> std::io::Result<Server> {
        let out = std::fs::File::create(log)?;
        let err = out.try_clone()?;
        let child = Command::new("sh")
            .arg("-c")
            .arg(command)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .spawn()?;
        Ok(Server { child })
    }

    /// Wait until the server answers: its `/health` (where it has one: any
    /// status but 404 must be 200) and `/v1/models` with 200.
    pub fn wait_ready(
        &mut self,
        port: u16,
        within: Duration,
        stop: &dyn Fn() -> bool,
    ) -> Result<(), NotReady> {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let start = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(NotReady::Exited(status.to_string()));
            }
            if stop() {
                return Err(NotReady::Interrupted);
            }
            let health = status_of(addr, "/health");
            if matches!(health, Some(200 | 404)) && status_of(addr, "/v1/models") == Some(200) {
                return Ok(());
            }
            if start.elapsed() > within {
                return Err(NotReady::Timeout(within));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Whether the server is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Stop the whole process group: SIGTERM, then SIGKILL once `grace`
    /// has passed; reap the shell.
    pub fn stop(mut self, grace: Duration) {
        let group = self.child.id() as libc::pid_t;
        // SAFETY: kill(2) on the group this struct started.
        unsafe { libc::kill(-group, libc::SIGTERM) };
        let start = Instant::now();
        while start.elapsed() < grace && group_alive(group) {
            let _ = self.child.try_wait();
            std::thread::sleep(Duration::from_millis(50));
        }
        if group_alive(group) {
            // SAFETY: as above.
            unsafe { libc::kill(-group, libc::SIGKILL) };
        }
        let _ = self.child.wait();
        // The group's last members, killed, are reaped by init once their
        // parent (the shell) is gone; wait until none is left.
        let start = Instant::now();
        while group_alive(group) && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Whether any process of group `group` is left (zombies aside).
fn group_alive(group: libc::pid_t) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        // SAFETY: signal 0 only checks.
        return unsafe { libc::kill(-group, 0) } == 0;
    };
    dir.flatten().any(|e| {
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        // pid (comm) state ppid pgrp ...: after the last ')'.
        let Some(after) = stat.rsplit_once(')').map(|x| x.1) else {
            return false;
        };
        let fields: Vec<&str> = after.split_whitespace().collect();
        fields.first() != Some(&"Z") && fields.get(2) == Some(&group.to_string().as_str())
    })
}

/// The HTTP status of `GET path`, or None when nothing answered.
fn status_of(addr: SocketAddr, path: &str) -> Option<u16> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut head = [0u8; 16];
    let n = s.read(&mut head).ok()?;
    let line = std::str::from_utf8(&head[..n]).ok()?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The last `lines` lines of a log file.
pub fn tail(log: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
