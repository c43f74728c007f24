//! Command-line interface: the flags of every command, with their help text.
//!
//! Names follow `vllm bench serve` where the concept is the same; vLLM's
//! spellings are accepted as aliases (`--base-url`, `--burstiness`,
//! `--metric-percentiles`).
//!
//! Every clap struct lives here, in a layer that imports no command: this
//! file holds the commands' structs, `groups.rs` the groups of flags they
//! flatten, `parse.rs` the parser of every flag's grammar.

mod groups;
mod k8s;
mod model;
mod parse;
mod shard;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use goodput_core::load::Arrival;
use goodput_core::output::compare::FailOn;

pub use groups::{BoundsArgs, CostArgs, LoadArgs, OutputArgs, SloArgs, TargetArgs, WorkloadArgs};
pub use k8s::{CatArgs, K8sArgs, K8sHelper, ManifestArgs, PodArgs};
pub use model::{CalibrateArgs, PredictArgs, RoutingArg};
use parse::{
    arrival, at_least_one, fail_on, finite_rate, percent, positive_duration, search_time,
    SearchTime,
};
pub use shard::{MergeArgs, ShardArgs};
// `goodput bench serve`'s flags are vLLM's, kept with their translation in
// goodput-vllm.
pub use goodput_vllm::{as_vllm_reads_it, with_config, BenchArgs, BenchCommand, VllmServeArgs};

// The whole command line. (Plain comments on `Cli` and `Command`: clap
// would take a doc comment for help text.)
#[derive(Parser, Debug)]
#[command(
    name = "goodput",
    version,
    about = "Honest benchmarks of LLM inference servers: TTFT, TPOT, ITL, E2EL and throughput, with confidence intervals.",
    long_about = None,
    after_help = "Without --url, `goodput run` and `goodput sweep` benchmark the built-in simulated engine over real HTTP on a loopback port.\nThe main job: goodput sweep --slo ttft:p99:200ms,tpot:p99:50ms --search goodput"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// The subcommands, each dispatched by `main` to its `*_cmd` module.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// One benchmark at one load point.
    Run(Box<RunArgs>),
    /// Many load points: the latency-throughput curve, its knees, and goodput under an SLO.
    Sweep(Box<SweepArgs>),
    /// Serve the built-in simulated LLM engine over an OpenAI-compatible HTTP API.
    Sim(Box<goodput_sim::SimArgs>),
    /// Turn saved results (runs and sweeps) into a console table, CSV or HTML.
    Report(Box<ReportArgs>),
    /// Two saved results side by side, with the significance of every change, and a pass/fail exit code for CI.
    Compare(Box<CompareArgs>),
    /// Fit the simulator's step-time model to a server seen only over HTTP, and write a profile.
    Calibrate(Box<CalibrateArgs>),
    /// Forecast a deployment's sustained goodput and latency-throughput curve from a profile, in virtual time.
    Predict(Box<PredictArgs>),
    /// Merge the part files of a sharded run (`--shards N --part FILE`) into one exact result.
    Merge(Box<MergeArgs>),
    /// vLLM's `vllm bench serve` command line, run by goodput: `goodput bench serve --model M ...` writes vLLM's result file.
    Bench(Box<BenchArgs>),
    /// Print the Kubernetes manifests of a run sharded over N pods (an Indexed Job and a headless Service).
    K8s(Box<K8sArgs>),
    /// Run a server command over a grid of configurations, sweep each, rank them: --serve 'CMD --max-num-seqs {64,128} --port {port}'.
    Tune(Box<goodput_tune::TuneArgs>),
    /// Print a shell completion script: goodput completions bash > ~/.local/share/bash-completion/completions/goodput
    Completions(CompletionsArgs),
    /// Print the manual page (roff): goodput man > goodput.1; man -l goodput.1
    Man,
}

/// `goodput completions SHELL`.
#[derive(Args, Debug, Clone)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `goodput run`: the shared groups with a run's load, and `--repeat`.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub common: CommonArgs<LoadArgs>,
    /// Run the same plan (same seed, same prompts) K times and report each headline figure's
    /// mean with a Student-t 95% interval across the repeats and its coefficient of variation;
    /// with --temperature 0, the share of prompts answered identically in every repeat.
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000), help_heading = "SLO")]
    pub repeat: u32,
}

/// `goodput sweep`: the shared groups with a sweep's points.
#[derive(Args, Debug, Clone)]
pub struct SweepArgs {
    #[command(flatten)]
    pub common: CommonArgs<SweepPlanArgs>,
}

/// The groups of flags `run` and `sweep` share (target, bounds, workload,
/// SLO, cost, output), declared once, and in `load` the command's own load
/// flags: [`LoadArgs`] for a run, [`SweepPlanArgs`] for a sweep. The load
/// sits between the target and the bounds because clap lists headings and
/// flags in the order they are declared: each `--help` keeps its order
/// (Target, then Load or Sweep, then the rest).
#[derive(Args, Debug, Clone)]
pub struct CommonArgs<L: Args> {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub load: L,
    #[command(flatten)]
    pub bounds: BoundsArgs,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub slo: SloArgs,
    #[command(flatten)]
    pub cost: CostArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub shards: ShardArgs,
}

/// Which points, and how long each may take.
#[derive(Args, Debug, Clone)]
pub struct SweepPlanArgs {
    /// Open-loop rates to run, req/s, comma-separated (e.g. 1,2,4,8).
    #[arg(long, value_delimiter = ',', value_parser = finite_rate, conflicts_with_all = ["concurrencies", "search"], help_heading = "Sweep")]
    pub rates: Vec<f64>,
    /// Closed-loop concurrencies to run, comma-separated (e.g. 1,8,64).
    #[arg(long, value_delimiter = ',', value_parser = at_least_one, conflicts_with = "search", help_heading = "Sweep")]
    pub concurrencies: Vec<usize>,
    /// Search the highest rate that meets the SLO (needs --slo or --slo-attainment).
    #[arg(long, value_enum, help_heading = "Sweep")]
    pub search: Option<SearchKind>,
    /// The deployment frontier over MLPerf Endpoints' plan of concurrencies (or --concurrencies).
    #[arg(long, conflicts_with_all = ["rates", "search"], help_heading = "Sweep")]
    pub frontier: bool,
    /// Highest concurrency the frontier's plan may run.
    #[arg(long, value_parser = at_least_one, requires = "frontier", help_heading = "Sweep")]
    pub frontier_max: Option<usize>,
    /// Relative precision of the goodput search, e.g. 5%.
    #[arg(long, default_value = "5%", value_parser = percent, help_heading = "Sweep")]
    pub precision: f64,
    /// Sending window of each point (a shorter --duration wins); for a
    /// goodput search, of each point that locates the edge (at least 3x the
    /// floor's median E2EL).
    #[arg(long, default_value = "8s", value_parser = positive_duration, help_heading = "Sweep")]
    pub point_time: Duration,
    /// Load time a goodput search may spend after its concurrency-1 run:
    /// more time, more requests near the edge, a narrower interval. `auto`:
    /// what a settled answer takes — exploring, then four measuring points
    /// sized for the SLO's percentiles at the edge (said before they run;
    /// --max-time bounds it).
    #[arg(long, default_value = "auto", value_parser = search_time, help_heading = "Sweep")]
    pub search_time: SearchTime,
    /// Least sending window of a goodput search's measuring points (at least
    /// 6x the floor's median E2EL; each also holds enough requests to bound
    /// the SLO's percentile: 368 for p99).
    #[arg(long, default_value = "40s", value_parser = positive_duration, help_heading = "Sweep")]
    pub measure_time: Duration,
    /// Sending window of the floor run and of each capacity-probe point.
    #[arg(long, default_value = "3s", value_parser = positive_duration, help_heading = "Sweep")]
    pub probe_time: Duration,
    /// Bound on the whole sweep, e.g. 10m.
    #[arg(long, value_parser = positive_duration, help_heading = "Sweep")]
    pub max_time: Option<Duration>,
    /// Inter-arrival process of open-loop points: poisson, constant or gamma:SHAPE.
    #[arg(long, default_value = "poisson", value_parser = arrival, help_heading = "Sweep")]
    pub arrival: Arrival,
    /// Cap on requests in flight at open-loop points (the wait shows as schedule lag).
    #[arg(long, value_parser = at_least_one, help_heading = "Sweep")]
    pub max_concurrency: Option<usize>,
}

/// What `sweep --search` looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SearchKind {
    // The highest rate meeting the SLO (docs/metrics.md, goodput); a plain
    // comment, as a doc comment would describe each value in `--help`.
    Goodput,
}

/// `goodput compare`.
#[derive(Args, Debug, Clone)]
#[command(
    after_help = "Figures take vLLM's flat key names: request_throughput, output_throughput, total_token_throughput, request_goodput, error_rate, and mean_X_ms, median_X_ms, pNN_X_ms for X in ttft, tpot, itl, e2el; goodput for two sweeps.\nExample: goodput compare main.json pr.json --base-records main.jsonl --new-records pr.jsonl --fail-on 'p99_ttft_ms>+10%' --fail-on 'output_throughput<-5%' --format markdown"
)]
pub struct CompareArgs {
    /// The baseline: a results file written by `run --out` or `sweep --out`.
    #[arg(value_name = "BASE")]
    pub base: PathBuf,
    /// The results to compare with it (a run with a run, a sweep with a sweep).
    #[arg(value_name = "NEW")]
    pub new: PathBuf,
    /// BASE's per-request records (`--records` JSONL). With --new-records, the mean TTFT, TPOT
    /// and E2EL are judged on every measured request (batch means, in the order requests
    /// finished) instead of on the saved 95 % intervals.
    #[arg(long, value_name = "FILE")]
    pub base_records: Option<PathBuf>,
    /// NEW's per-request records (`--records` JSONL).
    #[arg(long, value_name = "FILE")]
    pub new_records: Option<PathBuf>,
    /// Exit 1 when a figure moves past a bound (repeatable): 'p99_ttft_ms>+10%' (NEW more than
    /// 10 % above BASE), 'output_throughput<-5%' (more than 5 % below), 'p99_ttft_ms>+20'
    /// (more than 20 ms above: an absolute change, in the figure's unit). A change past the
    /// bound fails unless it is judged not significant (within the runs' noise, after the
    /// correction over every figure); where significance is not known the point change decides.
    #[arg(long = "fail-on", value_name = "EXPR", value_parser = fail_on)]
    pub fail_on: Vec<FailOn>,
    /// Output on stdout: text (a table), markdown (for a pull-request comment) or json.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// How the comparison is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Markdown,
    Json,
}

/// `goodput report`: re-render saved results.
#[derive(Args, Debug, Clone)]
pub struct ReportArgs {
    /// Results files written by `run --out` or `sweep --out`.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Write one HTML report of every file here (several files overlay their curves).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Write the CSV summary (one row per run or sweep point) here.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// No console summary (files are still written).
    #[arg(long, short)]
    pub quiet: bool,
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::*;

    /// clap's own consistency checks: every `conflicts_with`, `requires`
    /// and default names a flag that exists in the command where it is
    /// flattened, and no two flags share a name.
    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn run_and_sweep_read_the_shared_flags_into_common() {
        let cli = Cli::try_parse_from([
            "goodput",
            "run",
            "--url",
            "http://h:1",
            "--request-rate",
            "4",
            "--slo",
            "ttft:p99<=200ms",
            "--repeat",
            "3",
        ])
        .unwrap();
        let Command::Run(run) = cli.command else {
            panic!("not run")
        };
        assert_eq!(run.common.target.url.as_deref(), Some("http://h:1"));
        assert_eq!(run.common.load.request_rate, Some(4.0));
        assert_eq!(run.common.slo.slo.len(), 1);
        assert_eq!(run.repeat, 3);

        let cli = Cli::try_parse_from([
            "goodput",
            "sweep",
            "--search",
            "goodput",
            "--slo",
            "ttft:p99<=200ms",
        ])
        .unwrap();
        let Command::Sweep(sweep) = cli.command else {
            panic!("not sweep")
        };
        assert_eq!(sweep.common.load.search, Some(SearchKind::Goodput));
        assert_eq!(sweep.common.slo.slo.len(), 1);
    }

    /// docs/cli.md and `--help` name the same flags: every long flag of
    /// every subcommand is in docs/cli.md, and every `--flag` docs/cli.md
    /// names is one some subcommand accepts.
    #[test]
    fn docs_cli_md_and_help_name_the_same_flags() {
        use std::collections::BTreeSet;
        let doc =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/cli.md"))
                .expect("docs/cli.md");
        let mut accepted = BTreeSet::new();
        let mut undocumented = Vec::new();
        let mut stack = vec![(String::from("goodput"), Cli::command())];
        while let Some((path, cmd)) = stack.pop() {
            for arg in cmd.get_arguments() {
                let names = arg
                    .get_long()
                    .into_iter()
                    .chain(arg.get_all_aliases().unwrap_or_default());
                for long in names {
                    let flag = format!("--{long}");
                    if !["--help", "--version"].contains(&flag.as_str())
                        && !doc.contains(&format!("`{flag}"))
                    {
                        undocumented.push(format!("{path} {flag}"));
                    }
                    accepted.insert(flag);
                }
            }
            for sub in cmd.get_subcommands() {
                stack.push((format!("{path} {}", sub.get_name()), sub.clone()));
            }
        }
        undocumented.sort();
        undocumented.dedup();
        assert!(
            undocumented.is_empty(),
            "flags in --help that docs/cli.md does not name: {undocumented:#?}"
        );
        // Every `--flag` the doc names (in backticks, up to a space, `=`,
        // a backtick or a closing bracket) is accepted somewhere.
        let mut unknown = BTreeSet::new();
        for (i, _) in doc.match_indices("`--") {
            let rest = &doc[i + 1..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
                .unwrap_or(rest.len());
            let flag = &rest[..end];
            // The servers' own flags the page names (SGLang's, beside
            // --priority-mix) are not goodput's.
            const SERVERS: [&str; 2] = [
                "--enable-priority-scheduling",
                "--schedule-low-priority-values-first",
            ];
            if flag.len() > 2
                && !accepted.contains(flag)
                && !["--help", "--version"].contains(&flag)
                && !SERVERS.contains(&flag)
            {
                unknown.insert(flag.to_string());
            }
        }
        assert!(
            unknown.is_empty(),
            "flags docs/cli.md names that no subcommand accepts: {unknown:#?}"
        );
    }

    #[test]
    fn search_takes_only_goodput() {
        let e = Cli::try_parse_from(["goodput", "sweep", "--search", "other"]).unwrap_err();
        assert!(e.to_string().contains("[possible values: goodput]"), "{e}");
    }
}
