//! `goodput`: honest benchmarks of LLM inference servers.
//!
//! `main` parses the command line, runs the command, prints any error with
//! its whole chain, and exits with the documented code ([`exit::Code`]: 0
//! ok, 1 a gate failed, 2 usage or input error, 3 no request completed, 4 an
//! internal fault of goodput, 5 a sweep's `--max-time` ended its search, 6
//! a shard missing, 7 an output not written after the load, 130
//! interrupted).
//!
//! The modules in layers, each importing only from the layers below it:
//!
//! 1. `exit` (exit codes, the `Exit` error, `usage`), importing nothing of
//!    this crate; `cli` (every clap struct in `cli/mod.rs`, the groups of
//!    flags in `cli/groups.rs`, every flag's parser in `cli/parse.rs`),
//!    importing no module of this crate outside `cli/`.
//! 2. `setup` (open-file limit, runtime, signals), `progress` (the
//!    progress display).
//! 3. `spec`: the specs built from the flags (target options, run, sweep).
//! 4. `session`: what a measuring command holds while it runs.
//! 5. `sharding`: this process's place in a sharded run (`--shards`),
//!    between the session and the commands that measure.
//! 6. The commands: `run_cmd`, `sweep_cmd`, `compare_cmd`, `report_cmd`,
//!    `sim_cmd`, `calibrate_cmd`, `predict_cmd`, `merge_cmd`, `k8s_cmd`;
//!    `main` dispatches to them. `calibrate_cmd` and `predict_cmd` hand
//!    their flags to goodput-calibrate, which holds the experiment's
//!    design, the fit from saved results and the forecast.
//! 7. `bench_cmd`: vLLM's `bench serve` command line, translated into a
//!    `goodput run` by goodput-vllm and run by `run_cmd`.
//!    `goodput tune` is goodput-tune's, whose sweeps are this program's.

mod bench_cmd;
mod calibrate_cmd;
mod cli;
mod compare_cmd;
mod exit;
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
    // `bench serve --config FILE.yaml`: the file's flags, as vLLM reads them.
    let argv = match cli::with_config(std::env::args_os().collect()) {
        Ok(argv) => argv,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(Code::Usage.number());
        }
    };
    let cli = match cli::Cli::try_parse_from(cli::as_vllm_reads_it(argv)) {
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
        cli::Command::Bench(args) => bench_cmd::main(*args),
        cli::Command::Tune(args) => std::process::exit(goodput_tune::main(*args)),
        cli::Command::Completions(args) => print_completions(args.shell),
        cli::Command::Man => print_man(),
    };
    match code {
        Ok(c) => std::process::exit(c.number()),
        Err(Exit(c, e)) => {
            eprintln!("goodput: error: {e:#}");
            std::process::exit(c.number());
        }
    }
}

/// `goodput completions SHELL`: the completion script, from the same clap
/// definitions as `--help`.
fn print_completions(shell: clap_complete::Shell) -> Result<Code, Exit> {
    use clap::CommandFactory;
    let mut cmd = cli::Cli::command();
    clap_complete::generate(shell, &mut cmd, "goodput", &mut std::io::stdout());
    Ok(Code::Ok)
}

/// `goodput man`: the manual page in roff, the top-level command with a
/// section per subcommand and its flags.
fn print_man() -> Result<Code, Exit> {
    use clap::CommandFactory;
    use std::io::Write;
    let cmd = cli::Cli::command();
    let mut page = Vec::new();
    let man = clap_mangen::Man::new(cmd.clone());
    let rendered = (|| -> std::io::Result<()> {
        man.render_title(&mut page)?;
        man.render_name_section(&mut page)?;
        man.render_synopsis_section(&mut page)?;
        man.render_description_section(&mut page)?;
        man.render_subcommands_section(&mut page)?;
        // Each subcommand's flags, under its own heading.
        for sub in cmd.get_subcommands() {
            writeln!(page, ".SH \"GOODPUT {}\"", sub.get_name().to_uppercase())?;
            let sub_man = clap_mangen::Man::new(sub.clone());
            sub_man.render_description_section(&mut page)?;
            sub_man.render_options_section(&mut page)?;
        }
        man.render_version_section(&mut page)?;
        std::io::stdout().write_all(&page)
    })();
    rendered
        .map(|()| Code::Ok)
        .map_err(|e| exit::output_failed(anyhow::Error::new(e).context("writing the manual page")))
}
