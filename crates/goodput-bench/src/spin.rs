//! A second process that keeps one core busy while a client is measured
//! (`client-cost --busy-core`): issue 22 asks for the CPU per event against
//! the floor "also when a second process keeps one core busy".
//!
//! The busy process is `bench spin`, one thread spinning until it is killed
//! (or its parent dies, or an hour has passed). It is started by the bench
//! itself, not through the measuring helper, so its CPU is never charged to
//! the client; it is reaped with `wait4` and its own CPU reported beside the
//! run (and left out of the run's "other CPU").

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context as _;

use crate::machine::timeval;

/// The body of `bench spin`: spins on one thread until killed, until the
/// parent process goes away, or for at most `limit`.
pub fn spin(limit: Duration) {
    // SAFETY: prctl with PR_SET_PDEATHSIG and a signal number has no memory
    // effects; if the bench dies, the kernel kills this process.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
    }
    let start = Instant::now();
    let mut x: u64 = 0;
    while start.elapsed() < limit {
        for _ in 0..1_000_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
}

/// A running `bench spin` process.
pub struct BusyCore {
    child: Child,
}

impl BusyCore {
    /// Starts `bench_exe spin`.
    pub fn start(bench_exe: &Path) -> anyhow::Result<Self> {
        let child = Command::new(bench_exe)
            .arg("spin")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting {} spin", bench_exe.display()))?;
        Ok(Self { child })
    }

    /// Kills it and returns the CPU (user + system) it used.
    pub fn stop(mut self) -> anyhow::Result<Duration> {
        // Not reaped yet, so the pid is still ours.
        self.child.kill().context("killing the busy-core process")?;
        let pid = self.child.id() as libc::pid_t;
        let mut status: libc::c_int = 0;
        // SAFETY: rusage is plain old data; zeroed is a valid value.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        loop {
            // SAFETY: valid pointers to locals; pid is our own unreaped child.
            let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
            if reaped == pid {
                break;
            }
            let err = std::io::Error::last_os_error();
            if err.kind() != std::io::ErrorKind::Interrupted {
                return Err(err).context("wait4 on the busy-core process");
            }
        }
        Ok(timeval(usage.ru_utime) + timeval(usage.ru_stime))
    }
}
