//! The flags of the two commands about a server's model: `calibrate` (fit
//! the simulator's step-time model to a server) and `predict` (forecast a
//! deployment's goodput from the fitted profile, in virtual time).

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::groups::{TargetArgs, TraceArgs};
use super::parse::{at_least_one, finite_rate, percent, share};

/// `goodput calibrate`: the target (or the built-in simulator), the design
/// of the experiment and where the profile goes.
#[derive(Args, Debug, Clone)]
pub struct CalibrateArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Fit from results already saved (`goodput run --out`, `goodput sweep --out`) instead of
    /// measuring a server. Used: closed-loop points of fixed prompt and output lengths
    /// (concurrency 1: the median TTFT as a prefill, the median ITL as a batch-1 decode;
    /// concurrency c: the median ITL as a decode of c sequences, weighed lower). Skipped, with
    /// the reason: open-loop points, distributed lengths, shared prefixes, sessions. The
    /// experiment's flags do not apply.
    #[arg(long, value_name = "FILE", num_args = 1.., conflicts_with_all = ["url", "sim"], help_heading = "Calibration")]
    pub from: Vec<PathBuf>,
    /// Where to write the profile (TOML): `goodput predict --profile`, `goodput sim --profile`
    /// and `--sim FILE` read it.
    #[arg(long, default_value = "profile.toml", help_heading = "Calibration")]
    pub out: PathBuf,
    /// Prompt lengths of the batch-1 prefill series, tokens, comma-separated (each capped by
    /// the server's context).
    #[arg(long, value_delimiter = ',', value_parser = at_least_one, default_value = "64,256,512,1024,2048,4096,8192", help_heading = "Calibration")]
    pub prompt_lengths: Vec<usize>,
    /// Requests at each prefill length (the first warms the server up and is not used).
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u64).range(3..=100), help_heading = "Calibration")]
    pub prefill_requests: u64,
    /// Concurrencies of the decode series, comma-separated [default: 1, 4, 16, 64, ... up to
    /// the largest batch the server runs, found by the burst].
    #[arg(long, value_delimiter = ',', value_parser = at_least_one, help_heading = "Calibration")]
    pub batches: Vec<usize>,
    /// Prompt lengths of the decode series, tokens, comma-separated (a short and a long
    /// context separate the per-sequence cost from the KV read).
    #[arg(long, value_delimiter = ',', value_parser = at_least_one, default_value = "128,2048", help_heading = "Calibration")]
    pub contexts: Vec<usize>,
    /// Output tokens of each decode-series request.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(8..=4096), help_heading = "Calibration")]
    pub decode_tokens: u32,
    /// Requests sent at once to find the largest batch the server runs.
    #[arg(long, default_value_t = 512, value_parser = at_least_one, help_heading = "Calibration")]
    pub burst: usize,
    /// The held-queue point's deep loop runs twice the largest batch plus this many at a time; it reads
    /// whether the server slows as requests wait on it (0: skip it).
    #[arg(long, default_value_t = 32, help_heading = "Calibration")]
    pub held_queue: usize,
    /// The server's token budget per step when it does not say (vLLM's
    /// --max-num-batched-tokens; llama.cpp's --batch-size is read from /props).
    #[arg(long, value_name = "TOKENS", value_parser = at_least_one, help_heading = "Calibration")]
    pub max_num_batched_tokens: Option<usize>,
    /// Seed of the prompts.
    #[arg(long, default_value_t = 0, help_heading = "Calibration")]
    pub seed: u64,
    /// Print only the fit, not each step of the experiment.
    #[arg(long, short, help_heading = "Calibration")]
    pub quiet: bool,
}

/// How `predict` sends requests to replicas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RoutingArg {
    /// Each request (each session) to the next replica in turn.
    RoundRobin,
    /// Each request (each session) to the replica with the fewest requests in flight.
    LeastOutstanding,
}

/// `goodput predict`: a profile, an SLO, a workload and the what-ifs.
#[derive(Args, Debug, Clone)]
pub struct PredictArgs {
    /// The profile `goodput calibrate` wrote (or any simulator config file).
    #[arg(long, value_name = "FILE.toml", help_heading = "Model")]
    pub profile: Option<PathBuf>,
    /// A built-in deployment instead of a profile, as `--sim` takes it (e.g. llama-3.1-70b,h100-sxm,tp=4).
    #[arg(
        long,
        value_name = "SPEC",
        conflicts_with = "profile",
        help_heading = "Model"
    )]
    pub sim: Option<String>,
    /// Model replicas behind one endpoint.
    #[arg(long, default_value_t = 1, value_parser = at_least_one, help_heading = "Model")]
    pub replicas: usize,
    /// How requests are spread over the replicas.
    #[arg(
        long,
        value_enum,
        default_value = "round-robin",
        help_heading = "Model"
    )]
    pub routing: RoutingArg,
    /// An SLO term METRIC:pQ:THRESHOLD or 'METRIC:pQ<=THRESHOLD' (repeatable, or
    /// comma-separated), e.g. ttft:p99:200ms,tpot:p99:50ms; metrics ttft, tpot, itl, e2el.
    #[arg(long, value_name = "TERM", value_parser = goodput_core::measure::request_terms, required = true, help_heading = "SLO")]
    pub slo: Vec<Vec<goodput_core::measure::SloTerm>>,
    /// Largest share of failed requests (0 to 1) a passing rate may have.
    #[arg(long, default_value_t = 0.01, value_parser = share, help_heading = "SLO")]
    pub max_error_rate: f64,
    /// Prompt length in tokens: 512, uniform:256,1024, normal:512,128 or lognormal:512,0.5.
    #[arg(
        long,
        default_value = "1024",
        conflicts_with = "trace",
        help_heading = "Workload"
    )]
    pub input_tokens: goodput_core::load::LengthSpec,
    /// Output length in tokens (the model generates exactly this many).
    #[arg(
        long,
        default_value = "128",
        conflicts_with = "trace",
        help_heading = "Workload"
    )]
    pub output_tokens: goodput_core::load::LengthSpec,
    /// Shared prefix: every prompt starts with one of --prefix-groups prefixes of N tokens
    /// (counted in --input-tokens).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1_000_000), help_heading = "Workload")]
    pub prefix_tokens: Option<u32>,
    /// Number of distinct shared prefixes.
    #[arg(long, value_name = "G", default_value = "1", requires = "prefix_tokens", value_parser = clap::value_parser!(u32).range(1..=1_000_000), help_heading = "Workload")]
    pub prefix_groups: u32,
    /// Multi-turn sessions: turns per session (3, uniform:2,6); each turn resends the
    /// conversation plus a new message of --input-tokens; sessions arrive at the rate.
    #[arg(long, value_name = "SPEC", help_heading = "Workload")]
    pub turns: Option<goodput_core::load::LengthSpec>,
    /// Time between a turn's response and the session's next turn: 2s or exponential:2s.
    #[arg(
        long,
        value_name = "SPEC",
        default_value = "0s",
        requires = "turns",
        help_heading = "Workload"
    )]
    pub think_time: goodput_core::units::DurationSpec,
    /// A trace instead of the synthetic workload: its arrivals scaled to each rate (rate =
    /// speed x the trace's mean rate), its lengths and its hash_ids' shared blocks; the curve
    /// also holds the replay at --trace-speed.
    #[command(flatten)]
    pub replay: TraceArgs,
    /// Also draw the latency-throughput curve at these rates, req/s, comma-separated
    /// [default: 10 rates up to 1.5x the goodput].
    #[arg(long, value_delimiter = ',', value_parser = finite_rate, help_heading = "Forecast")]
    pub rates: Vec<f64>,
    /// Measured requests per Poisson schedule at each rate, per replica (sessions count every
    /// turn; a trace is replayed whole).
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(100..), conflicts_with = "trace", help_heading = "Forecast")]
    pub requests: u64,
    /// Poisson schedules pooled at each rate [default: 4; a trace is one schedule].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100), help_heading = "Forecast")]
    pub schedules: Option<u64>,
    /// Draws from the calibration's uncertainty for the interval (0: none).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(0..=1000), help_heading = "Forecast")]
    pub draws: u64,
    /// Relative precision of the rate search, e.g. 2%.
    #[arg(long, default_value = "2%", value_parser = percent, help_heading = "Forecast")]
    pub precision: f64,
    /// Seed of the schedules, the lengths and the draws.
    #[arg(long, default_value_t = 0, help_heading = "Forecast")]
    pub seed: u64,
    /// Also forecast the deployment frontier: closed loops from concurrency 1 until flat, as sweep --frontier runs them.
    #[arg(long, help_heading = "Forecast")]
    pub frontier: bool,
    /// Write the forecast as JSON to this file.
    #[arg(long, value_name = "PATH", help_heading = "Output")]
    pub out: Option<PathBuf>,
}
