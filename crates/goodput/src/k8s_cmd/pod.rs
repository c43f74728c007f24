//! What runs inside a pod of a sharded run besides goodput's own commands:
//! `goodput k8s pod` and `goodput k8s cat`. The image is `FROM scratch`:
//! no shell to wrap goodput in `sh -c '...; sleep'`, no `tar` for
//! `kubectl cp`, no `cat`. These two stand in for them.
//!
//! `goodput k8s pod --keep-alive D -- run ...` runs the command as a child
//! process of the same executable, passes SIGTERM and SIGINT on to it (as
//! PID 1 of the container it is the one Kubernetes signals), waits for it,
//! then stays up for D so the files it wrote to the pod's emptyDir can be
//! fetched with `kubectl exec POD -- /goodput k8s cat FILE`, and exits
//! with the command's exit code: a shard whose gate failed (exit 1) still
//! fails its pod, and so the Job. A signal, at any time, ends the wait: a
//! pod being deleted has no reader left.

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use anyhow::{anyhow, Context};
use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::cli::{CatArgs, PodArgs};
use crate::exit::{internal, usage, Code, Exit};

pub fn main(args: PodArgs) -> Result<Code, Exit> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
        .map_err(internal)?;
    rt.block_on(run(args))
}

async fn run(args: PodArgs) -> Result<Code, Exit> {
    // The handlers are installed before the child exists, so no signal
    // falls between its start and the watch (the child starts with the
    // default handlers again: exec resets them).
    let watch = |kind: SignalKind| signal(kind).context("watching signals").map_err(internal);
    let (mut term, mut int) = (
        watch(SignalKind::terminate())?,
        watch(SignalKind::interrupt())?,
    );
    // /proc/self/exe, else the path this process was started by (a
    // container's entrypoint is absolute: /goodput).
    let exe = std::env::current_exe()
        .ok()
        .or_else(|| std::env::args_os().next().map(std::path::PathBuf::from))
        .context("finding goodput's own executable")
        .map_err(internal)?;
    let mut child = std::process::Command::new(&exe)
        .args(&args.command)
        .spawn()
        .with_context(|| format!("starting {}", exe.display()))
        .map_err(internal)?;
    let pid = libc::pid_t::try_from(child.id()).map_err(internal)?;
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
        .map_err(internal)?
        .context("waiting for goodput")
        .map_err(internal)?;
    if !signalled && !args.keep_alive.is_zero() {
        eprintln!(
            "goodput k8s pod: goodput ended ({}); staying up {:?} so its files can be fetched (kubectl exec POD -- /goodput k8s cat FILE > FILE); SIGTERM ends the wait",
            describe(status),
            args.keep_alive
        );
        tokio::select! {
            () = tokio::time::sleep(args.keep_alive) => {}
            _ = next(&mut term) => {}
            _ = next(&mut int) => {}
        }
    }
    code_of(status)
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

fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        (None, None) => "for an unknown reason".to_string(),
    }
}

/// The child's exit code, as this process's own: every code goodput
/// documents passes through; a death by signal is not one of them.
fn code_of(status: ExitStatus) -> Result<Code, Exit> {
    let codes = [
        Code::Ok,
        Code::GateFailed,
        Code::Usage,
        Code::NothingCompleted,
        Code::Internal,
        Code::TimeLimit,
        Code::Interrupted,
    ];
    if let Some(code) = status
        .code()
        .and_then(|n| codes.into_iter().find(|c| c.number() == n))
    {
        return Ok(code);
    }
    let hint = if status.signal() == Some(libc::SIGKILL) {
        " (SIGKILL: out of memory? give the pods more with goodput k8s --memory)"
    } else {
        ""
    };
    Err(internal(anyhow!("goodput {}{hint}", describe(status))))
}

/// `goodput k8s cat FILE...`: the files, in order, on stdout.
pub fn cat(args: CatArgs) -> Result<Code, Exit> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for path in &args.files {
        let mut file = std::fs::File::open(path)
            .with_context(|| format!("opening {}", path.display()))
            .map_err(usage)?;
        std::io::copy(&mut file, &mut out)
            .with_context(|| format!("copying {} to stdout", path.display()))
            .map_err(usage)?;
    }
    out.flush().context("writing stdout").map_err(usage)?;
    Ok(Code::Ok)
}
