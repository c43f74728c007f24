//! `goodput sim`: serve the simulated engine until Ctrl-C.

use anyhow::Context;

use crate::exit::{usage, Code, Exit};

pub fn main(args: goodput_sim::SimArgs) -> Result<Code, Exit> {
    let config = args.to_config().map_err(usage)?;
    let addr = args.listen_addr().map_err(usage)?;
    // Accepting thousands of connections must not wait in the kernel's
    // descriptor table growth (see `reserve_fd_table`).
    crate::setup::raise_fd_limit();
    crate::setup::reserve_fd_table(None, false);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("tokio runtime")
        .map_err(usage)?;
    // Installed before the address is printed: whoever reads it may signal at once.
    let mut interrupt = rt
        .block_on(async {
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        })
        .context("watching Ctrl-C")
        .map_err(usage)?;
    let server = goodput_sim::SimServer::spawn(config, addr)
        .context("starting the simulator")
        .map_err(usage)?;
    eprintln!(
        "goodput sim: serving model '{}' at http://{} (OpenAI-compatible; /v1/models, /v1/chat/completions, /v1/completions, /metrics, and its GPUs as a DCGM exporter would at /dcgm/metrics). Ctrl-C to stop.",
        server.model_name(),
        server.local_addr()
    );
    eprintln!(
        "goodput sim: engine thread scheduling: {}",
        server.engine_priority()
    );
    rt.block_on(interrupt.recv());
    server.shutdown();
    Ok(Code::Ok)
}
