//! `goodput k8s pod` and `goodput k8s cat`, which goodput-k8s carries out
//! ([`goodput_k8s::supervise`], [`goodput_k8s::cat`]): here, the runtime,
//! goodput's own executable, and the child's code as this process's.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use anyhow::{anyhow, Context};

use crate::cli::{CatArgs, PodArgs};
use crate::exit::{internal, Code, Exit};

pub fn main(args: PodArgs) -> Result<Code, Exit> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
        .map_err(internal)?;
    // /proc/self/exe, else the path this process was started by (a
    // container's entrypoint is absolute: /goodput).
    let exe = std::env::current_exe()
        .ok()
        .or_else(|| std::env::args_os().next().map(std::path::PathBuf::from))
        .context("finding goodput's own executable")
        .map_err(internal)?;
    let mut say = |line: String| eprintln!("goodput k8s pod: {line}");
    let status = rt.block_on(goodput_k8s::supervise(
        &exe,
        &args.command,
        args.keep_alive,
        &mut say,
    ))?;
    code_of(status)
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
    Err(internal(anyhow!(
        "goodput {}{hint}",
        goodput_k8s::describe(status)
    )))
}

/// `goodput k8s cat FILE...`: the files, in order, on stdout.
pub fn cat(args: CatArgs) -> Result<Code, Exit> {
    let stdout = std::io::stdout();
    goodput_k8s::cat(&args.files, &mut stdout.lock())?;
    Ok(Code::Ok)
}
