//! What runs inside a pod of a sharded run besides goodput's own commands:
//! `goodput k8s pod` and `goodput k8s cat`. The image is `FROM scratch`:
//! no shell to wrap goodput in `sh -c '...; sleep'`, no `tar` for
//! `kubectl cp`, no `cat`. These two stand in for them.
//!
//! `goodput k8s pod --keep-alive D -- run ...` runs the command as a child
//! process of the same executable ([`supervise`]), passes SIGTERM and
//! SIGINT on to it (as PID 1 of the container it is the one Kubernetes
//! signals), waits for it, then stays up for D so the files it wrote to the
//! pod's emptyDir can be fetched with `kubectl exec POD -- /goodput k8s cat
//! FILE` ([`cat`]), and exits with the command's exit code: a shard whose
//! gate failed (exit 1) still fails its pod, and so the Job. A signal, at
//! any time, ends the wait: a pod being deleted has no reader left.

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::plan::Error;

/// Run `exe` with `command` as a child, pass SIGTERM and SIGINT on to it,
/// wait for it, then, unless a signal came, stay up `keep_alive` (a signal
/// ends the wait); `say` hears why the pod stays up. The child's status.
pub async fn supervise(
    exe: &Path,
    command: &[String],
    keep_alive: Duration,
    say: &mut dyn FnMut(String),
) -> Result<ExitStatus, Error> {
    let internal = |what: &str, e: &dyn std::fmt::Display| Error::Internal(format!("{what}: {e}"));
    // The handlers are installed before the child exists, so no signal
    // falls between its start and the watch (the child starts with the
    // default handlers again: exec resets them).
    let watch = |kind: SignalKind| signal(kind).map_err(|e| internal("watching signals", &e));
    let (mut term, mut int) = (
        watch(SignalKind::terminate())?,
        watch(SignalKind::interrupt())?,
    );
    let mut child = std::process::Command::new(exe)
        .args(command)
        .spawn()
        .map_err(|e| internal(&format!("starting {}", exe.display()), &e))?;
    let pid = libc::pid_t::try_from(child.id()).map_err(|e| Error::Internal(e.to_string()))?;
    let mut waiter = tokio::task::spawn_blocking(move || child.wait());
    let mut signalled = false;
    let status = loop {
        tokio::select! {
            r = &mut waiter => break r,
            Some(()) = term.recv() => { signalled = true; forward(pid, libc::SIGTERM) }
            Some(()) = int.recv() => { signalled = true; forward(pid, libc::SIGINT) }
        }
    };
    let status = status
        .map_err(|e| Error::Internal(e.to_string()))?
        .map_err(|e| internal("waiting for goodput", &e))?;
    if !signalled && !keep_alive.is_zero() {
        say(format!(
            "goodput ended ({}); staying up {keep_alive:?} so its files can be fetched (kubectl exec POD -- /goodput k8s cat FILE > FILE); SIGTERM ends the wait",
            describe(status),
        ));
        tokio::select! {
            () = tokio::time::sleep(keep_alive) => {}
            _ = next(&mut term) => {}
            _ = next(&mut int) => {}
        }
    }
    Ok(status)
}

/// The next delivery of a watched signal.
async fn next(s: &mut Signal) -> Option<()> {
    s.recv().await
}

fn forward(pid: libc::pid_t, sig: libc::c_int) {
    // SAFETY: kill(2) with the pid of our own child, not yet reaped: the
    // waiter reaps it only when it has ended, and then this loop is over.
    unsafe {
        libc::kill(pid, sig);
    }
}

/// How a process ended, in words: `exit 1`, `killed by signal 9`.
pub fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        (None, None) => "for an unknown reason".to_string(),
    }
}

/// `goodput k8s cat FILE...`: the files, in order, on `out`.
pub fn cat(files: &[PathBuf], out: &mut dyn Write) -> Result<(), Error> {
    let usage = |what: String, e: std::io::Error| Error::Usage(format!("{what}: {e}"));
    for path in files {
        let mut file = std::fs::File::open(path)
            .map_err(|e| usage(format!("opening {}", path.display()), e))?;
        std::io::copy(&mut file, out)
            .map_err(|e| usage(format!("copying {} to stdout", path.display()), e))?;
    }
    out.flush().map_err(|e| usage("writing stdout".into(), e))
}
