//! The groups of flags the measuring commands flatten: where requests go,
//! the load, the bounds, the workload, the SLO, the cost and the outputs.

use std::path::PathBuf;

use clap::Args;

use super::parse::{
    arrival, at_least_one, burstiness, duration, header, listen_addr, model_list, pem_certs,
    pem_key, percentiles, positive, positive_duration, rate, server_metrics_url, share, sim_preset,
    speed, temperature, threshold, token_range, tokenizer, url, warmup, Percentiles, SimPreset,
};

/// Where requests go.
#[derive(Args, Debug, Clone)]
pub struct TargetArgs {
    /// Base URL of the server, e.g. http://localhost:8000 or https://host/v1 (the endpoint path
    /// is appended; /v1 is not doubled). Without it, the built-in simulator is started and benchmarked.
    #[arg(long, alias = "base-url", value_parser = url, help_heading = "Target")]
    pub url: Option<String>,
    /// API to call: chat (/v1/chat/completions), completions (/v1/completions), responses
    /// (OpenAI's Responses API, /v1/responses), messages (Anthropic's Messages API,
    /// /v1/messages: the key is sent as x-api-key, with anthropic-version: 2023-06-01),
    /// embeddings (/v1/embeddings), rerank (/v1/rerank) or score (vLLM's /v1/score); the last
    /// three send --batch-size inputs per request and are answered whole.
    #[arg(long, default_value = "chat", help_heading = "Target")]
    pub endpoint: goodput_core::request::Endpoint,
    /// Model name to send [default: the first model /v1/models lists]; or a mix of models or
    /// LoRA adapters: weighted, base:0.5,adapter-a:0.3,adapter-b:0.2 (drawn per request from
    /// --seed), or a plain list a,b,c (taken in turn). Figures per model in the result.
    #[arg(long, value_parser = model_list, help_heading = "Target")]
    pub model: Option<String>,
    /// Classes of requests with their share and how each is sent: priority=P puts "priority": P
    /// in the body (vLLM serves lower values first, SGLang by default higher), header=NAME:VALUE
    /// sends a header.
    /// E.g. 'interactive:0.2:priority=0,batch:0.8:priority=10'. Figures and SLO verdicts per class.
    #[arg(
        long,
        value_name = "NAME:SHARE:priority=P,...",
        help_heading = "Target"
    )]
    pub priority_mix: Option<goodput_core::load::PriorityMix>,
    /// Environment variable holding the API key, sent as a Bearer token (never printed or written).
    #[arg(long, default_value = "OPENAI_API_KEY", help_heading = "Target")]
    pub api_key_env: String,
    /// Extra request header 'Name: value' (repeatable).
    #[arg(long = "header", value_name = "'NAME: VALUE'", value_parser = header, help_heading = "Target")]
    pub headers: Vec<String>,
    /// Total time allowed per request, e.g. 600s, 10m.
    #[arg(long, default_value = "600s", value_parser = positive_duration, help_heading = "Target")]
    pub timeout: std::time::Duration,
    /// No bytes for this long ends a request as a timeout.
    #[arg(long, default_value = "60s", value_parser = positive_duration, help_heading = "Target")]
    pub idle_timeout: std::time::Duration,
    /// Time allowed to open a connection (TCP and TLS).
    #[arg(long, default_value = "10s", value_parser = positive_duration, help_heading = "Target")]
    pub connect_timeout: std::time::Duration,
    /// Threads that send and read requests. One is the cheapest and the most exact (measured at
    /// 256 and 1,024 streams: less CPU an event and a tighter TTFT tail than two, also with a
    /// busy core); more only when one thread is saturated (the run warns of it).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256), help_heading = "Target")]
    pub client_threads: u16,
    /// Accept any TLS certificate (explicit only; never the default; a warning says so).
    #[arg(long, conflicts_with = "ca_cert", help_heading = "Target")]
    pub insecure: bool,
    /// Ignore the proxy variables (http_proxy, https_proxy, ALL_PROXY, NO_PROXY), which are
    /// otherwise honoured as curl does.
    #[arg(long, help_heading = "Target")]
    pub no_proxy: bool,
    /// Trust the CA certificates in this PEM file (an internal CA) beside the system's.
    #[arg(long, value_name = "FILE", value_parser = pem_certs, help_heading = "Target")]
    pub ca_cert: Option<PathBuf>,
    /// Present this PEM certificate (chain) to the server: mutual TLS at a gateway.
    #[arg(long, value_name = "FILE", value_parser = pem_certs, requires = "client_key", help_heading = "Target")]
    pub client_cert: Option<PathBuf>,
    /// The private key (PEM) of --client-cert.
    #[arg(long, value_name = "FILE", value_parser = pem_key, requires = "client_cert", help_heading = "Target")]
    pub client_key: Option<PathBuf>,
    /// Scrape the server's Prometheus metrics from this URL during every run (vLLM, SGLang, TGI
    /// and llama.cpp names understood) [default: the target's /metrics, when it answers].
    #[arg(long, value_name = "URL", value_parser = server_metrics_url, conflicts_with = "no_server_metrics", help_heading = "Target")]
    pub server_metrics: Option<String>,
    /// Scrape a DCGM exporter (repeatable: one per node) for the GPUs' measured power and energy over every run, at --server-metrics-interval [default: the simulator's own].
    #[arg(long, value_name = "URL", value_parser = server_metrics_url, help_heading = "Target")]
    pub gpu_metrics: Vec<String>,
    /// Read this machine's GPUs through NVML (loaded at run time) for their power and energy.
    #[arg(long, help_heading = "Target")]
    pub nvml: bool,
    /// Do not scrape the server's metrics.
    #[arg(long, help_heading = "Target")]
    pub no_server_metrics: bool,
    /// How often to scrape --server-metrics.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = positive_duration, help_heading = "Target")]
    pub server_metrics_interval: std::time::Duration,
    /// Sampling temperature sent with every request (not sent unless given: the server's default).
    #[arg(long, value_name = "T", value_parser = temperature, help_heading = "Target")]
    pub temperature: Option<f64>,
    /// Send non-streaming requests (TTFT then equals E2EL and is labelled so).
    #[arg(long, help_heading = "Target")]
    pub no_stream: bool,
    /// The built-in simulator to benchmark when no --url is given: a model, a hardware
    /// preset and options, comma-separated, e.g. llama-3.1-70b,h100-sxm,tp=4
    /// (also time-scale=X, max-num-seqs=N, max-num-batched-tokens=N, seed=S and
    /// every other `goodput sim` option without its dashes, each with its own type)
    /// [default: llama-3.1-8b,h100-sxm,tp=1].
    #[arg(long, value_name = "PRESET", value_parser = sim_preset, conflicts_with = "url", help_heading = "Target")]
    pub sim: Option<SimPreset>,
    /// Send these tools with every request: a JSON array of OpenAI tool definitions
    /// {"type":"function","function":{"name","description","parameters"}} (sent in each API's
    /// own shape). Tool calls are timed (time to first tool call) and their arguments checked
    /// against the tool's parameters schema.
    #[arg(long, value_name = "FILE", value_parser = super::parse::tools_file, help_heading = "Target")]
    pub tools: Option<super::parse::ToolsFile>,
    /// Which tool the model may call: auto, required, none or a tool's name [default: auto].
    #[arg(
        long,
        value_name = "CHOICE",
        requires = "tools",
        help_heading = "Target"
    )]
    pub tool_choice: Option<String>,
    /// Ask for structured output: json_object, or json_schema:FILE (a JSON schema, or
    /// OpenAI's {"name","schema"}); each answer is checked against it.
    #[arg(long, value_name = "FORMAT", value_parser = super::parse::response_format, help_heading = "Target")]
    pub response_format: Option<goodput_core::request::ResponseFormat>,
}

/// The offered load of one run.
#[derive(Args, Debug, Clone)]
pub struct LoadArgs {
    // ---- Load ----
    /// Closed loop: keep N requests in flight at all times [default: 8 when --request-rate is not given].
    #[arg(long, conflicts_with = "request_rate", value_parser = at_least_one, help_heading = "Load")]
    pub concurrency: Option<usize>,
    /// Open loop: arrivals per second ('inf' sends everything at once).
    #[arg(long, value_parser = rate, help_heading = "Load")]
    pub request_rate: Option<f64>,
    /// Inter-arrival process of the open loop: poisson, constant or gamma:SHAPE.
    #[arg(long, default_value = "poisson", value_parser = arrival, help_heading = "Load")]
    pub arrival: goodput_core::load::Arrival,
    /// vLLM's spelling of --arrival gamma:X (X < 1 burstier than Poisson, X > 1 smoother).
    #[arg(long, conflicts_with = "arrival", value_parser = burstiness, help_heading = "Load")]
    pub burstiness: Option<f64>,
    /// Open loop: cap on requests in flight (the wait shows as schedule lag, not hidden).
    #[arg(long, value_parser = at_least_one, help_heading = "Load")]
    pub max_concurrency: Option<usize>,
}

/// How long a run (or each sweep point) lasts, and its warm-up.
#[derive(Args, Debug, Clone)]
pub struct BoundsArgs {
    /// Measured requests to send [default for run: 1000, or unbounded when only --duration is
    /// given; sweep points are bounded by --point-time unless this is given].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), help_heading = "Load")]
    pub num_prompts: Option<u64>,
    /// Sending window of the measured phase, e.g. 60s (with --num-prompts, whichever ends first).
    #[arg(long, value_parser = positive_duration, help_heading = "Load")]
    pub duration: Option<std::time::Duration>,
    /// Warm-up before the measured phase, excluded from every figure: a request count (20),
    /// a duration (10s), 0 for none, or auto: one request per slot in closed loop (at least 4),
    /// 2 s of arrivals in open loop (8 to 500 requests), so a cold server cannot distort the run.
    #[arg(long, default_value = "auto", value_parser = warmup, help_heading = "Load")]
    pub warmup: goodput_core::load::WarmupPolicy,
    /// How long in-flight requests may finish after sending ends [default: --timeout].
    #[arg(long, value_parser = duration, help_heading = "Load")]
    pub drain_timeout: Option<std::time::Duration>,
    /// The rate or concurrency rises to its target over this time (warm-up then defaults to
    /// none); the steady-state window starts when the target is reached.
    #[arg(long, value_name = "DURATION", value_parser = positive_duration, help_heading = "Load")]
    pub ramp_up: Option<std::time::Duration>,
    /// Shape of --ramp-up: linear, or exponential (rate from 1% of the target; vLLM's spelling).
    #[arg(
        long,
        value_name = "STRATEGY",
        default_value = "linear",
        requires = "ramp_up",
        help_heading = "Load"
    )]
    pub ramp_up_strategy: goodput_core::load::RampStrategy,
    /// Seed of the workload and the schedule (same seed, same prompts and arrival times).
    #[arg(long, default_value_t = 0, help_heading = "Load")]
    pub seed: u64,
}

/// What each request asks for.
#[derive(Args, Debug, Clone)]
pub struct WorkloadArgs {
    /// Multi-turn sessions: turns per session, a count or a distribution (3, uniform:2,6);
    /// each turn resends the conversation (previous prompts and the actual responses) plus a
    /// new user message of --input-tokens. Closed loop: --concurrency users going through
    /// sessions; open loop: sessions arrive at --request-rate.
    #[arg(long, value_name = "SPEC", help_heading = "Workload")]
    pub turns: Option<goodput_core::load::LengthSpec>,
    /// Time between a turn's response and the session's next turn: 2s, uniform:1s,3s,
    /// exponential:2s (mean) or lognormal:2s,0.5.
    #[arg(
        long,
        value_name = "SPEC",
        default_value = "0s",
        requires = "turns",
        help_heading = "Workload"
    )]
    pub think_time: goodput_core::units::DurationSpec,
    /// Shared prefix: every prompt starts with one of --prefix-groups prefixes of N tokens
    /// (counted in --input-tokens); the cache-busting salt follows it.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1_000_000), help_heading = "Workload")]
    pub prefix_tokens: Option<u32>,
    /// Number of distinct shared prefixes.
    #[arg(long, value_name = "G", default_value = "1", requires = "prefix_tokens", value_parser = clap::value_parser!(u32).range(1..=1_000_000), help_heading = "Workload")]
    pub prefix_groups: u32,
    /// How each prompt's prefix group is chosen: uniform, zipf:S (a few hot prefixes) or
    /// round-robin (exactly num-prompts/groups per group, SGLang's generated-shared-prefix layout).
    #[arg(
        long,
        value_name = "CHOICE",
        default_value = "uniform",
        requires = "prefix_tokens",
        help_heading = "Workload"
    )]
    pub prefix_choice: goodput_core::load::GroupChoice,
    /// Give every prompt a unique salt after its shared prefix, so no prefix cache can hit beyond
    /// it (the default for synthetic prompts).
    #[arg(long, overrides_with = "no_cache_bust", help_heading = "Workload")]
    pub cache_bust: bool,
    /// No salt: identical text may hit a prefix cache, also across runs with the same --seed.
    #[arg(long, help_heading = "Workload")]
    pub no_cache_bust: bool,
    /// Prompt length in tokens: 512, uniform:256,1024, normal:512,128 or lognormal:512,0.5.
    #[arg(long, default_value = "1024", help_heading = "Workload")]
    pub input_tokens: goodput_core::load::LengthSpec,
    /// Output length in tokens (sent as max_tokens, and min_tokens + ignore_eos where accepted)
    /// [default: 128; with --dataset or --trace, each row's own length unless this is given].
    #[arg(long, value_name = "SPEC", help_heading = "Workload")]
    pub output_tokens: Option<goodput_core::load::LengthSpec>,
    /// Prompts from a dataset: ShareGPT JSON, JSONL (prompt or messages, optional
    /// output_tokens and reference) or CSV with a header.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["trace", "turns", "prefix_tokens"], help_heading = "Dataset")]
    pub dataset: Option<std::path::PathBuf>,
    /// Format of --dataset when its extension does not say: sharegpt, jsonl or csv.
    #[arg(
        long,
        value_name = "FORMAT",
        requires = "dataset",
        help_heading = "Dataset"
    )]
    pub dataset_format: Option<goodput_core::load::DatasetFormat>,
    /// The CSV column holding the prompt.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "prompt",
        requires = "dataset",
        help_heading = "Dataset"
    )]
    pub dataset_prompt_column: String,
    /// Which rows are sent: random (without replacement, from --seed), sequential (file order)
    /// or replacement (random, with replacement).
    #[arg(
        long,
        value_name = "HOW",
        default_value = "random",
        requires = "dataset",
        help_heading = "Dataset"
    )]
    pub dataset_sampling: goodput_core::load::Sampling,
    /// When --num-prompts exceeds the usable rows: error, cycle (send rows again) or truncate
    /// (send each once, then stop).
    #[arg(
        long,
        value_name = "WHAT",
        default_value = "error",
        requires = "dataset",
        help_heading = "Dataset"
    )]
    pub dataset_exhausted: goodput_core::load::Exhausted,
    /// Keep only rows whose prompt has MIN to MAX tokens (dropped rows are counted and reported).
    #[arg(long, value_name = "MIN,MAX", value_parser = token_range, requires = "dataset", help_heading = "Dataset")]
    pub dataset_input_filter: Option<(u32, u32)>,
    /// Keep only rows whose output length is MIN to MAX tokens.
    #[arg(long, value_name = "MIN,MAX", value_parser = token_range, requires = "dataset", help_heading = "Dataset")]
    pub dataset_output_filter: Option<(u32, u32)>,
    #[command(flatten)]
    pub replay: TraceArgs,
    /// Do not send min_tokens/ignore_eos (outputs may then end early at EOS).
    #[arg(long, help_heading = "Workload")]
    pub no_pin_output: bool,
    /// Inputs per request of --endpoint embeddings (texts), rerank and score (documents beside
    /// one query), each a prompt of --input-tokens.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096), help_heading = "Workload")]
    pub batch_size: Option<u32>,
    /// N synthetic PNG images of WIDTHxHEIGHT pixels in every chat request (data URLs, distinct
    /// per request), e.g. 1:448x448; or a mix, LO-HI:WxH@P,WxH@P (then :jpeg for JPEG), e.g.
    /// 1:256x256@0.5,1280x720@0.5:jpeg (vLLM's random-mm).
    #[arg(long, value_name = "N:WIDTHxHEIGHT", help_heading = "Workload")]
    pub images: Option<goodput_core::load::ImageSpec>,
    /// Client-side tokenizer: tiktoken:o200k_base, tiktoken:cl100k_base, a path to the model's
    /// tokenizer.json, or none. One tokenizer does all client-side counting in a run.
    #[arg(long, default_value = goodput_core::tokenizer::DEFAULT_TOKENIZER, value_parser = tokenizer, help_heading = "Workload")]
    pub tokenizer: goodput_core::tokenizer::Tokenizer,
}

/// A trace to replay: the file and how to read and slice it (`run` and
/// `predict` share these flags, their grammar and their loader).
#[derive(Args, Debug, Clone)]
pub struct TraceArgs {
    /// Replay a trace's arrival times and lengths: Azure's LLM inference trace CSV, Mooncake
    /// JSONL (hash_ids replayed as shared blocks), or JSONL/CSV with a timestamp column; or agent
    /// trajectories (Weka traces: a .json file, a directory of them, or JSON lines), each call
    /// sent when the calls it waits for have completed.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["turns", "prefix_tokens"], help_heading = "Trace")]
    pub trace: Option<std::path::PathBuf>,
    /// Format of --trace when detection would guess: azure, mooncake, jsonl, csv or weka.
    #[arg(
        long,
        value_name = "FORMAT",
        requires = "trace",
        help_heading = "Trace"
    )]
    pub trace_format: Option<goodput_core::load::TraceFormat>,
    /// Unit of a generic trace's timestamp column: s, ms or us (Mooncake: ms unless given).
    #[arg(long, value_name = "UNIT", requires = "trace", help_heading = "Trace")]
    pub trace_time_unit: Option<goodput_core::load::TimeUnit>,
    /// Replay speed: 2 sends the trace twice as fast.
    #[arg(long, value_name = "X", default_value = "1", value_parser = speed, requires = "trace", help_heading = "Trace")]
    pub trace_speed: f64,
    /// Start the replay this far into the trace.
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = duration, requires = "trace", help_heading = "Trace")]
    pub trace_start: std::time::Duration,
    /// Replay only this much of the trace (from --trace-start).
    #[arg(long, value_name = "DURATION", value_parser = positive_duration, requires = "trace", help_heading = "Trace")]
    pub trace_window: Option<std::time::Duration>,
    /// Tokens per Mooncake hash block.
    #[arg(long, value_name = "N", default_value = "512", value_parser = clap::value_parser!(u32).range(1..=1_000_000), requires = "trace", help_heading = "Trace")]
    pub trace_block_tokens: u32,
    /// Agent trajectories: send a call when its parents have completed plus its recorded gap
    /// (gaps), or at its recorded time but never before its parents complete (recorded).
    #[arg(
        long,
        value_name = "MODE",
        default_value = "gaps",
        requires = "trace",
        help_heading = "Trace"
    )]
    pub trace_timing: goodput_core::load::AgentTiming,
    /// Agent trajectories: the longest recorded gap a call waits after its parents (before --trace-speed).
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = duration, requires = "trace", help_heading = "Trace")]
    pub trace_gap_cap: std::time::Duration,
}

impl TraceArgs {
    /// Whether --trace holds agent trajectories (detected, or `--trace-format weka`).
    pub fn is_agents(&self) -> bool {
        self.trace
            .as_deref()
            .is_some_and(|p| goodput_core::load::AgentTraces::detect(p, self.trace_format))
    }

    /// How agent trajectories are replayed.
    pub fn agent_replay(&self) -> goodput_core::load::AgentReplay {
        goodput_core::load::AgentReplay {
            timing: self.trace_timing,
            speed: self.trace_speed,
            gap_cap: self.trace_gap_cap,
        }
    }

    /// How goodput-core's loader reads and slices the trace.
    pub fn options(&self) -> goodput_core::load::TraceOptions {
        goodput_core::load::TraceOptions {
            format: self.trace_format,
            time_unit: self.trace_time_unit,
            start: self.trace_start,
            window: self.trace_window,
            block_tokens: self.trace_block_tokens,
        }
    }
}

/// What a run is held to.
#[derive(Args, Debug, Clone)]
pub struct SloArgs {
    /// An SLO term METRIC:pQ:THRESHOLD or 'METRIC:pQ<=THRESHOLD' (repeatable, or
    /// comma-separated), e.g. ttft:p99:200ms,tpot:p99:50ms (no quotes needed); metrics ttft,
    /// tpot, itl, e2el; task:pQ:DURATION holds an agent trace's task durations. A run that misses
    /// it exits 1.
    #[arg(long, value_name = "TERM", value_parser = goodput_core::measure::any_terms, help_heading = "SLO")]
    pub slo: Vec<Vec<goodput_core::measure::AnyTerm>>,
    /// vLLM's per-request thresholds in ms for request goodput, e.g. --goodput ttft:200 tpot:50
    /// (decides the exit code only together with --slo or --slo-attainment).
    #[arg(long, value_name = "METRIC:MS", num_args = 1.., value_parser = threshold, help_heading = "SLO")]
    pub goodput: Vec<goodput_core::measure::Threshold>,
    /// DistServe's joint form: at least this share (0 to 1) of requests must meet every
    /// per-request threshold at once.
    #[arg(long, value_name = "SHARE", value_parser = share, help_heading = "SLO")]
    pub slo_attainment: Option<f64>,
    /// Exit 1 when the error rate is above this share of finished requests (0 to 1).
    #[arg(long, default_value_t = 0.01, value_parser = share, help_heading = "SLO")]
    pub max_error_rate: f64,
}

/// What the deployment costs.
#[derive(Args, Debug, Clone)]
pub struct CostArgs {
    /// Cost of the deployment under test per hour (any currency), for cost per request and per 1M tokens.
    #[arg(long, value_name = "C", value_parser = positive, help_heading = "Cost")]
    pub cost_per_hour: Option<f64>,
    /// Power the deployment draws in watts: an assumption, for output tokens per joule where
    /// no GPU was measured (--gpu-metrics, --nvml, the simulator's exporter).
    #[arg(long, value_name = "W", value_parser = positive, help_heading = "Cost")]
    pub power_watts: Option<f64>,
    /// What a kWh costs (any currency), for the energy's cost per 1M output tokens.
    #[arg(long, value_name = "P", value_parser = positive, help_heading = "Cost")]
    pub energy_price: Option<f64>,
    /// GPUs in the deployment (normalises per-GPU figures).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..), help_heading = "Cost")]
    pub gpus: u32,
}

/// Files and the terminal.
#[derive(Args, Debug, Clone)]
pub struct OutputArgs {
    /// Write the results JSON (vLLM's keys plus config, ci, errors...) to this file; `-`
    /// writes it to stdout (the summary then goes to stderr).
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub out: Option<PathBuf>,
    /// Append one JSON line per request to this file as each finishes.
    #[arg(long, help_heading = "Output")]
    pub records: Option<PathBuf>,
    /// Write a self-contained HTML report (charts as inline SVG, no script, opens offline).
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub html: Option<PathBuf>,
    /// Write a CSV summary: one row per run or sweep point, every scalar figure a column
    /// with its unit in the header.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub csv: Option<PathBuf>,
    /// Include each event's arrival offset (ms since send) in the records.
    #[arg(long, help_heading = "Output")]
    pub records_itl: bool,
    /// Include each request's generated text in the records (`output_text`).
    #[arg(long, help_heading = "Output")]
    pub records_text: bool,
    /// Percentiles to report, comma-separated.
    #[arg(long, alias = "metric-percentiles", default_value = "50,90,95,99", value_parser = percentiles, help_heading = "Output")]
    pub percentiles: Percentiles,
    /// Serve the client's live figures (requests by outcome and kind, TTFT/TPOT/E2EL/ITL
    /// histograms, in-flight, tokens, schedule lag) in Prometheus' format at
    /// http://ADDR/metrics while the command runs (port 0: any free port, printed on stderr).
    #[arg(long, value_name = "ADDR", value_parser = listen_addr, help_heading = "Output")]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// Keep serving --metrics-listen this long after the end, so a scraper sees the final counts.
    #[arg(long, value_name = "DURATION", value_parser = duration, default_value = "0s", requires = "metrics_listen", help_heading = "Output")]
    pub metrics_linger: std::time::Duration,
    /// No summary table and no progress display (files are still written).
    #[arg(long, short, help_heading = "Output")]
    pub quiet: bool,
    /// No progress display; the summary is still printed.
    #[arg(long, help_heading = "Output")]
    pub no_progress: bool,
    /// Print each figure of the summary alone on its line, as vLLM does (a script that reads
    /// vLLM's summary with grep and awk reads goodput's), and the 95 % intervals in a block of
    /// their own after it.
    #[arg(long, help_heading = "Output")]
    pub intervals_apart: bool,
}
