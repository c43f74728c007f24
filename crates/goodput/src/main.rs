//! `goodput`: honest benchmarks of LLM inference servers.
//!
//! `main` parses the command line, runs the command, prints any error with
//! its whole chain, and exits with the documented code ([`exit::Code`]: 0
//! ok, 1 a gate failed, 2 usage or input error, 3 no request completed, 4 an
//! internal fault of goodput, 5 a sweep's `--max-time` ended its search, 130
//! interrupted before any measured request was sent).
//!
//! The modules in layers, each importing only from the layers below it:
//!
//! 1. `exit` (exit codes, the `Exit` error, `usage`), importing nothing of
//!    this crate; `cli` (every clap struct in `cli/mod.rs`, the groups of
//!    flags in `cli/groups.rs`, every flag's parser in `cli/parse.rs`),
//!    importing no module of this crate outside `cli/`.
//! 2. `setup` (open-file limit, runtime, signals), `exposition`
//!    (`--metrics-listen`), `progress` (the progress display).
//! 3. `spec`: the specs built from the flags (target options, run, sweep).
//! 4. `session`: what a measuring command holds while it runs.
//! 5. `sharding`: this process's place in a sharded run (`--shards`),
//!    between the session and the commands that measure.
//! 6. The commands: `run_cmd`, `sweep_cmd`, `compare_cmd`, `report_cmd`,
//!    `sim_cmd`, `calibrate_cmd`, `predict_cmd`, `merge_cmd`, `k8s_cmd`;
//!    `main` dispatches to them.

mod calibrate_cmd;
mod cli;
mod compare_cmd;
mod exit;
mod exposition;
mod k8s_cmd;
mod merge_cmd;
mod predict_cmd;
mod progress;
mod report_cmd;
mod run_cmd;
mod session;
mod setup;
mod sharding;
mod sim_cmd;
mod spec;
mod sweep_cmd;

use clap::Parser;

use exit::{Code, Exit};

/// mimalloc: measured with goodput-bench, glibc's malloc spent noticeable
/// time consolidating free lists when records cross from request tasks to the
/// aggregator thread.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        // clap's own exits: --help and --version print and end with 0, a
        // bad flag or value with 2 (a usage error), as `Cli::parse` would.
        Err(e) => {
            let _ = e.print();
            let code = if e.use_stderr() {
                Code::Usage
            } else {
                Code::Ok
            };
            std::process::exit(code.number());
        }
    };
    let code = match cli.command {
        cli::Command::Run(args) => run_cmd::main(*args),
        cli::Command::Sweep(args) => sweep_cmd::main(*args),
        cli::Command::Sim(args) => sim_cmd::main(*args),
        cli::Command::Report(args) => report_cmd::main(*args),
        cli::Command::Compare(args) => compare_cmd::main(*args),
        cli::Command::Calibrate(args) => calibrate_cmd::main(*args),
        cli::Command::Predict(args) => predict_cmd::main(*args),
        cli::Command::Merge(args) => merge_cmd::main(*args),
        cli::Command::K8s(args) => k8s_cmd::main(*args),
    };
    match code {
        Ok(c) => std::process::exit(c.number()),
        Err(Exit(c, e)) => {
            eprintln!("goodput: error: {e:#}");
            std::process::exit(c.number());
        }
    }
}
