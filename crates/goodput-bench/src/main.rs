//! `bench`: measures goodput itself on this machine and prints markdown tables
//! for BENCHMARKS.md, with the exact commands it ran.
//!
//! A reference server with a known schedule runs inside this process and logs
//! when it really wrote each token; each client (goodput, the bytes-only
//! floor, or the hyper client beside it) runs as a child process whose CPU and peak memory are read with
//! `wait4`. The goodput binary is expected at `target/release/goodput` of the
//! workspace (`cargo build --release -p goodput`), or wherever `--goodput` says.
//!
//! Every run is bounded in requests and time, and talks to 127.0.0.1 only.

mod bytes_client;
mod child;
mod clients;
mod clock;
mod experiments;
mod http;
mod hyper_client;
mod join;
mod long_context;
mod long_context_report;
mod machine;
mod merge;
mod open_floor;
mod report;
mod server;
mod shards;
mod side_by_side;
mod spin;
mod startup;
mod stats;
mod tails;
mod vllm_bench;

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};

use experiments::{BenchEnv, ClientKind, ClientRun};
use server::{ReferenceServer, ServerConfig};

/// Benchmarks of goodput itself: CPU per token, memory, TTFT/ITL accuracy
/// against a reference server's log, and open-loop schedule lag.
///
/// Markdown goes to stdout, progress to stderr.
#[derive(Debug, Parser)]
#[command(name = "bench", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the reference server alone and print its address; stops on Ctrl-C
    /// or after --duration-s.
    Serve(ServeArgs),
    /// The bytes-only client: streams and counts events, nothing else
    /// (prints a JSON summary). The other subcommands run it as a child.
    BytesClient(ClientArgs),
    /// The hyper client: the bytes-only client's connections and requests
    /// through hyper's HTTP/1.1 client connection, the body read frame by
    /// frame, events counted (prints the same JSON summary).
    HyperClient(ClientArgs),
    /// Client CPU per token and peak RSS, goodput and the hyper client
    /// against the bytes-only floor at the same load; goodput's accuracy
    /// comes with it.
    ClientCost(ClientCostArgs),
    /// TTFT and ITL error of goodput against the server's log (goodput only).
    Accuracy(StreamsArgs),
    /// Achieved request rate and schedule lag of goodput in open loop.
    OpenLoop(OpenLoopArgs),
    /// One open-loop load sent by goodput as one process, then by N shard
    /// processes (`--shards N`, the index in JOB_COMPLETION_INDEX): rate,
    /// schedule lag, CPU and memory per shard, start skew, TTFT error of the
    /// merged records against the server's log.
    Shards(ShardsCmd),
    /// `goodput merge` of synthetic part files (1,000,000 records over 4
    /// shards): wall time, CPU, peak RSS, records/s.
    Merge(MergeCmd),
    /// Long contexts both ways: goodput at 64 streams of 128,000-token
    /// prompts beside 1,000-token ones (scheduled send to the last byte at
    /// the server, send delay, CPU per request, TTFT error), then token
    /// events of 1 KB to 4 MB read by goodput and the bytes-only floor (CPU
    /// per MB, TTFT and ITL error). The server's interval defaults to 2 ms here.
    #[command(mut_arg("interval_ms", |a| a.default_value("2")))]
    LongContext(LongContextCmd),
    /// Everything with defaults: client-cost of the three clients (and
    /// vllm-bench when --vllm-bench, $VLLM_BENCH or the default path finds
    /// it) at 256 and 1,024 streams (3 requests per stream, 200 tokens, each
    /// set of runs repeated), then
    /// open-loop at 2,000 req/s for 10 s with 4-token outputs.
    All(AllArgs),
    /// (Internal) run a command and print its cost from wait4 as JSON; the
    /// other subcommands start every client through it.
    #[command(hide = true)]
    MeasureChild(MeasureChildArgs),
    /// Start-up to the first request sent, and peak RSS of a 1-request run:
    /// goodput, vllm-bench and the bytes-only floor, medians of --runs.
    Startup(StartupCmd),
    /// (Internal) spin on one thread until killed: the second process of
    /// `client-cost --busy-core`.
    #[command(hide = true)]
    Spin {
        /// Stop after this many seconds even if nobody kills it.
        #[arg(long, default_value_t = 3600)]
        limit_s: u64,
    },
}

#[derive(Debug, Args)]
struct StartupCmd {
    #[command(flatten)]
    startup: startup::StartupArgs,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Debug, Args)]
struct AllArgs {
    /// Runs of each client at each stream count, interleaved; medians follow.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Debug, Args)]
struct MeasureChildArgs {
    /// Kill the command after this many ms.
    #[arg(long)]
    time_limit_ms: u64,
    /// File for the command's stdout.
    #[arg(long)]
    stdout: PathBuf,
    /// File for the command's stderr.
    #[arg(long)]
    stderr: PathBuf,
    /// The command and its arguments.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

#[derive(Debug, Clone, Args)]
struct ServerArgs {
    /// Time to first token, in ms after the whole request was read.
    #[arg(long, default_value_t = 100)]
    ttft_ms: u64,
    /// Time between tokens, in ms.
    #[arg(long, default_value_t = 10)]
    interval_ms: u64,
    /// Worker threads of the reference server's tokio runtime.
    #[arg(long, default_value_t = 1)]
    server_threads: usize,
    /// Bytes of text in every token event (" the the …", at most
    /// 8,000,000) [default: " the", 4 bytes].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=long_context::MAX_EVENT_BYTES))]
    event_bytes: Option<u64>,
}

impl ServerArgs {
    fn config(&self, tokens_override: Option<u64>) -> ServerConfig {
        ServerConfig {
            ttft: Duration::from_millis(self.ttft_ms),
            interval: Duration::from_millis(self.interval_ms),
            tokens_override,
            threads: self.server_threads,
            token_text: self.event_bytes.map_or_else(
                || ServerConfig::default().token_text,
                |n| long_context::event_text(n as usize).into(),
            ),
            ..ServerConfig::default()
        }
    }
}

#[derive(Debug, Clone, Args)]
struct CommonArgs {
    /// The goodput binary [default: target/release/goodput of this workspace].
    #[arg(long)]
    goodput: Option<PathBuf>,
    /// Directory for records, results and the clients' output
    /// [default: $TMPDIR/goodput-bench].
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// Longest any one client run may take, in seconds; it is killed then.
    #[arg(long, default_value_t = 300)]
    time_limit_s: u64,
    /// Before each run, wait up to this many seconds for the machine to be
    /// idle (at most 10% of the cores busy); a run that starts busy is noted.
    #[arg(long, default_value_t = 60)]
    idle_wait_s: u64,
    /// The vllm-bench binary [default: $VLLM_BENCH, else
    /// /work/tgt-vllmbench/release/vllm-bench when it exists].
    #[arg(long)]
    vllm_bench: Option<PathBuf>,
    /// The endpoint vllm-bench is pointed at: completions (`--backend vllm`,
    /// as goodput) or chat (`--backend openai-chat`: its TTFT then counts the
    /// server's role-only first chunk).
    #[arg(long, value_enum, default_value_t = vllm_bench::Api::Completions)]
    vllm_bench_backend: vllm_bench::Api,
    #[command(flatten)]
    server: ServerArgs,
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// Port on 127.0.0.1 (0 = any free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Answer every request with this many tokens, whatever its max_tokens.
    #[arg(long)]
    tokens: Option<u64>,
    /// Stop after this many seconds.
    #[arg(long, default_value_t = 3600)]
    duration_s: u64,
    /// Write the server's log here as JSONL when stopping (request_id,
    /// recv_ns, kernel_rx_ns, token_ns: absolute CLOCK_MONOTONIC ns).
    #[arg(long)]
    log: Option<PathBuf>,
    #[command(flatten)]
    server: ServerArgs,
}

/// The flags of the bench's own clients (`bytes-client`, `hyper-client`).
#[derive(Debug, Args)]
struct ClientArgs {
    /// Server address, e.g. 127.0.0.1:8000.
    #[arg(long)]
    addr: SocketAddr,
    /// Connections, each with one request in flight at a time.
    #[arg(long, default_value_t = 256)]
    concurrency: usize,
    /// Requests in total, shared out over the connections.
    #[arg(long, default_value_t = 768)]
    requests: usize,
    /// max_tokens of each request.
    #[arg(long, default_value_t = 200)]
    max_tokens: u64,
    /// Words in each prompt.
    #[arg(long, default_value_t = 32)]
    input_words: usize,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 600)]
    time_limit_s: u64,
    /// Write per-request send and first-token times here (JSONL, in the
    /// shape of goodput's records; request ids are the suffix of
    /// `x-request-id: bytes-<id>` or `hyper-<id>`).
    #[arg(long)]
    timings: Option<PathBuf>,
    /// Open loop (the bytes-only client only): Poisson arrivals at this
    /// many requests a second, goodput's schedule and timer, pooled
    /// connections; --concurrency is then unused.
    #[arg(long)]
    rate: Option<f64>,
}

impl ClientArgs {
    fn config(self) -> clients::ClientConfig {
        clients::ClientConfig {
            addr: self.addr,
            concurrency: self.concurrency,
            requests: self.requests,
            max_tokens: self.max_tokens,
            input_words: self.input_words,
            time_limit: Duration::from_secs(self.time_limit_s),
            timings: self.timings,
        }
    }
}

#[derive(Debug, Args)]
struct StreamsArgs {
    /// Concurrent streams of each run, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "256,1024")]
    streams: Vec<usize>,
    /// Requests each stream sends one after another.
    #[arg(long, default_value_t = 3)]
    requests_per_stream: usize,
    /// Output tokens per request.
    #[arg(long, default_value_t = 200)]
    tokens: u64,
    /// Runs of each client at each load, interleaved; with more than one,
    /// a table of medians follows.
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Debug, Args)]
struct ClientCostArgs {
    #[command(flatten)]
    streams: StreamsArgs,
    /// Clients to measure, comma-separated: bytes, hyper, goodput, vllm-bench.
    #[arg(long, value_delimiter = ',', default_value = "bytes,hyper,goodput")]
    clients: Vec<ClientName>,
    /// During each measured run, keep one core busy with a second process
    /// (`bench spin`, its CPU reported apart, not charged to the client).
    #[arg(long)]
    busy_core: bool,
    /// An argument added to every `goodput run` of the comparison (repeat
    /// for more), e.g. `--goodput-arg=--ramp-up=150ms` to spread goodput's
    /// first wave as vllm-bench's connection storm spreads its own.
    #[arg(long = "goodput-arg", allow_hyphen_values = true)]
    goodput_args: Vec<String>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ClientName {
    /// The bytes-only floor.
    Bytes,
    /// The bytes-only client's requests through hyper's client.
    Hyper,
    /// The goodput binary.
    Goodput,
    /// vLLM's Rust client `vllm-bench` (see --vllm-bench).
    VllmBench,
}

impl ClientName {
    /// The client an experiment runs for this name.
    fn kind(self) -> ClientKind {
        match self {
            ClientName::Bytes => ClientKind::BytesOnly,
            ClientName::Hyper => ClientKind::Hyper,
            ClientName::Goodput => ClientKind::Goodput,
            ClientName::VllmBench => ClientKind::VllmBench,
        }
    }
}

#[derive(Debug, Args)]
struct OpenLoopArgs {
    /// Target request rate, req/s (Poisson arrivals).
    #[arg(long, default_value_t = 2000.0)]
    rate: f64,
    /// Seconds of arrivals: rate × duration requests are sent.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Output tokens per request.
    #[arg(long, default_value_t = 4)]
    tokens: u64,
    /// Also run the bytes-only floor in open loop at the same rate
    /// (goodput's schedule, timer and warm-up; no prompt building, no
    /// records): the schedule lag the machine allows.
    #[arg(long)]
    floor: bool,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Debug, Args)]
struct ShardsCmd {
    #[command(flatten)]
    load: shards::ShardsArgs,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Debug, Args)]
struct LongContextCmd {
    #[command(flatten)]
    load: long_context::LongContextArgs,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Debug, Args)]
struct MergeCmd {
    #[command(flatten)]
    merge: merge::MergeArgs,
    #[command(flatten)]
    common: CommonArgs,
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        eprintln!("bench: error: {e:#}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    machine::raise_fd_limit()?;
    match cli.command {
        Command::MeasureChild(args) => {
            let (program, rest) = args.command.split_first().context("no command given")?;
            let usage = child::measure_here(
                std::path::Path::new(program),
                rest,
                &args.stdout,
                &args.stderr,
                Duration::from_millis(args.time_limit_ms),
            )?;
            println!("{}", serde_json::to_string(&usage)?);
            Ok(())
        }
        Command::Serve(args) => serve(args),
        Command::Spin { limit_s } => {
            spin::spin(Duration::from_secs(limit_s));
            Ok(())
        }
        Command::Startup(args) => startup_cmd(&args),
        Command::BytesClient(args) => {
            let summary = match args.rate {
                Some(rate) => open_floor::run(&args.config(), rate)?,
                None => bytes_client::run(&args.config())?,
            };
            println!("{}", serde_json::to_string(&summary)?);
            Ok(())
        }
        Command::HyperClient(args) => {
            let summary = hyper_client::run(&args.config())?;
            println!("{}", serde_json::to_string(&summary)?);
            Ok(())
        }
        Command::ClientCost(args) => {
            let mut env = bench_env(&args.streams.common)?;
            env.busy_core = args.busy_core;
            env.goodput_args = args.goodput_args.clone();
            let kinds: Vec<ClientKind> = args.clients.iter().map(|c| c.kind()).collect();
            if kinds.contains(&ClientKind::VllmBench) {
                vllm_bench::require(env.vllm_bench.as_deref())?;
            }
            let runs = closed_loop_runs(&env, &args.streams, &kinds)?;
            print_report(&env, &runs);
            Ok(())
        }
        Command::Accuracy(args) => {
            let env = bench_env(&args.common)?;
            let runs = closed_loop_runs(&env, &args, &[ClientKind::Goodput])?;
            print_report(&env, &runs);
            Ok(())
        }
        Command::OpenLoop(args) => open_loop_cmd(&args),
        Command::Shards(args) => {
            let env = bench_env(&args.common)?;
            let runs = shards::run(&env, &args.load)?;
            print!("{}{}", report::setup(&env), shards::report(&runs));
            Ok(())
        }
        Command::Merge(args) => {
            let env = bench_env(&args.common)?;
            let runs = merge::run(&env, &args.merge)?;
            print!("{}", merge::report(&runs));
            Ok(())
        }
        Command::LongContext(args) => long_context_cmd(&args),
        Command::All(AllArgs { repeat, common }) => {
            let env = bench_env(&common)?;
            let streams = StreamsArgs {
                streams: vec![256, 1024],
                requests_per_stream: 3,
                tokens: 200,
                repeat,
                common,
            };
            let mut kinds = vec![
                ClientKind::BytesOnly,
                ClientKind::Hyper,
                ClientKind::Goodput,
            ];
            // vLLM's Rust client beside them when it is here (it is built
            // from its public source, never fetched by the bench).
            if env.vllm_bench.is_some() {
                kinds.push(ClientKind::VllmBench);
            }
            let mut runs = closed_loop_runs(&env, &streams, &kinds)?;
            runs.push(experiments::open_loop(&env, 2000.0, 10.0, 4)?);
            print_report(&env, &runs);
            Ok(())
        }
    }
}

/// `bench open-loop`: goodput in open loop, after the floor with `--floor`.
fn open_loop_cmd(args: &OpenLoopArgs) -> anyhow::Result<()> {
    let env = bench_env(&args.common)?;
    let mut runs = Vec::new();
    if args.floor {
        runs.push(experiments::open_loop_floor(
            &env,
            args.rate,
            args.duration,
            args.tokens,
        )?);
    }
    runs.push(experiments::open_loop(
        &env,
        args.rate,
        args.duration,
        args.tokens,
    )?);
    print_report(&env, &runs);
    Ok(())
}

/// `bench startup`: runs, then its tables and the commands.
fn startup_cmd(args: &StartupCmd) -> anyhow::Result<()> {
    let env = bench_env(&args.common)?;
    let runs = startup::run(&env, &args.startup)?;
    let mut out = report::setup(&env);
    out.push_str(&startup::report(&runs));
    if args.startup.same_tokenizer {
        out.push_str(
            "goodput ran with vllm-bench's word-level tokenizer.json (`--same-tokenizer`), not \
             its default o200k.\n\n",
        );
    }
    out.push_str(&report::commands(&runs));
    print!("{out}");
    Ok(())
}

/// `bench long-context`: the runs, the JSON when asked for, the markdown.
fn long_context_cmd(args: &LongContextCmd) -> anyhow::Result<()> {
    let env = bench_env(&args.common)?;
    let measured = long_context::run(&env, &args.load)?;
    if let Some(path) = &args.load.json {
        let json = long_context_report::json(&measured);
        std::fs::write(path, format!("{json:#}\n"))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    print!(
        "{}{}",
        report::setup(&env),
        long_context_report::markdown(&measured)
    );
    Ok(())
}

fn bench_env(common: &CommonArgs) -> anyhow::Result<BenchEnv> {
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let goodput = common
        .goodput
        .clone()
        .unwrap_or_else(|| workspace.join("target/release/goodput"));
    let goodput = goodput.canonicalize().unwrap_or(goodput);
    let goodput_version = std::process::Command::new(&goodput)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let work_dir = common
        .work_dir
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join("goodput-bench"));
    std::fs::create_dir_all(&work_dir)
        .with_context(|| format!("creating {}", work_dir.display()))?;
    Ok(BenchEnv {
        bench_exe: std::env::current_exe().context("locating the bench binary")?,
        goodput,
        goodput_version,
        work_dir,
        server: common.server.config(None),
        time_limit: Duration::from_secs(common.time_limit_s),
        idle_wait: Duration::from_secs(common.idle_wait_s),
        vllm_bench: vllm_bench::locate(common.vllm_bench.as_deref()),
        vllm_bench_api: common.vllm_bench_backend,
        busy_core: false,
        goodput_args: Vec::new(),
    })
}

/// goodput's fixed cost first (when goodput is measured), then for each
/// stream count and repetition each client in turn (in `kinds`' order), so
/// the clients being compared run at nearly the same time.
fn closed_loop_runs(
    env: &BenchEnv,
    args: &StreamsArgs,
    kinds: &[ClientKind],
) -> anyhow::Result<Vec<ClientRun>> {
    let mut runs = Vec::new();
    if kinds.contains(&ClientKind::Goodput) {
        let startup = ClientKind::GoodputStartup;
        runs.push(experiments::closed_loop(env, startup, 1, 1, 1, 0)?);
    }
    for &streams in &args.streams {
        for repetition in 0..args.repeat.max(1) {
            for &kind in kinds {
                runs.push(experiments::closed_loop(
                    env,
                    kind,
                    streams,
                    args.requests_per_stream,
                    args.tokens,
                    repetition,
                )?);
            }
        }
    }
    Ok(runs)
}

fn print_report(env: &BenchEnv, runs: &[ClientRun]) {
    let mut out = report::setup(env);
    if runs.iter().any(|r| r.open_loop.is_none()) {
        out.push_str(&report::cost(runs));
    }
    if runs.iter().any(|r| r.accuracy.is_some()) {
        out.push_str(&report::accuracy(runs));
    }
    if runs.iter().any(|r| r.extras.tails.is_some()) {
        out.push_str(&side_by_side::report(runs));
    }
    if runs.iter().any(|r| r.open_loop.is_some()) {
        out.push_str(&report::open_loop(runs));
    }
    out.push_str(&report::commands(runs));
    print!("{out}");
}

fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let server = ReferenceServer::start(args.server.config(args.tokens), args.port)?;
    if !server.log().kernel_timestamps() {
        eprintln!("bench serve: SO_TIMESTAMPNS unavailable: no kernel receive times in the log");
    }
    println!("listening on {}", server.addr());
    std::io::stdout().flush()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = tokio::time::sleep(Duration::from_secs(args.duration_s)) => {}
        }
    });
    let log = server.log().take();
    eprintln!(
        "bench serve: stopping after {} completion requests",
        log.len()
    );
    if let Some(path) = args.log {
        server::write_log(&path, &log)?;
    }
    Ok(())
}
