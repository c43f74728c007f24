//! The experiments: each starts a fresh reference server in this process,
//! runs one client as a child process, measures the child, and joins what the
//! client recorded with what the server logged.
//!
//! The client always runs alone in its own process, so its CPU and memory are
//! its own; the server's CPU (this process) is reported beside it because the
//! two share the machine's cores.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;

use crate::child::{self, ChildCommand, ChildUsage};
use crate::clients::ClientSummary;
use crate::join::{self, Accuracy, OpenLoop};
use crate::machine;
use crate::server::{ReferenceServer, RequestLog, ServerConfig};
use crate::stats::Spread;

/// Everything the experiments share.
#[derive(Debug, Clone)]
pub struct BenchEnv {
    /// This bench binary, run again as `bench bytes-client` or `bench
    /// hyper-client`.
    pub bench_exe: PathBuf,
    /// The goodput binary under test.
    pub goodput: PathBuf,
    /// What `goodput --version` printed, when the binary is there.
    pub goodput_version: Option<String>,
    /// Where records, results and child output go.
    pub work_dir: PathBuf,
    /// How the reference server answers.
    pub server: ServerConfig,
    /// Longest any one child may run.
    pub time_limit: Duration,
    /// Longest to wait, before each run, for the machine to be idle.
    pub idle_wait: Duration,
    /// The vllm-bench binary, when found ([`crate::vllm_bench::locate`]).
    pub vllm_bench: Option<PathBuf>,
    /// Which endpoint vllm-bench is pointed at.
    pub vllm_bench_api: crate::vllm_bench::Api,
    /// Keep one core busy with `bench spin` during every measured run.
    pub busy_core: bool,
    /// Arguments added to every `goodput run` (`bench startup`: `--warmup 0`).
    pub goodput_args: Vec<String>,
}

/// Share of the cores other processes may use before a run counts as quiet.
pub const IDLE_THRESHOLD: f64 = 0.10;

/// Which client a run measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientKind {
    /// `bench bytes-client`: reads and counts, nothing else.
    BytesOnly,
    /// `bench hyper-client`: the bytes-only client's requests through
    /// hyper's HTTP/1.1 client connection, reading frame by frame.
    Hyper,
    /// The goodput binary.
    Goodput,
    /// The goodput binary sending 1 request of 1 token: its fixed cost.
    GoodputStartup,
    /// vLLM's Rust client `vllm-bench` ([`crate::vllm_bench`]).
    VllmBench,
}

impl ClientKind {
    /// Name used in tables and file names.
    pub fn name(self) -> &'static str {
        match self {
            ClientKind::BytesOnly => "bytes-only",
            ClientKind::Hyper => "hyper",
            ClientKind::Goodput => "goodput",
            ClientKind::GoodputStartup => "goodput-startup",
            ClientKind::VllmBench => "vllm-bench",
        }
    }
}

/// One client run against a fresh server.
#[derive(Debug, Clone)]
pub struct ClientRun {
    /// Which client.
    pub client: ClientKind,
    /// Concurrent streams (closed loop) or 0 for open loop.
    pub streams: usize,
    /// Which repetition of this load and client (0 for the first).
    pub repetition: usize,
    /// Requests the client was asked to send.
    pub requests: usize,
    /// Completion requests the server received (probe and warm-up included).
    pub server_requests: usize,
    /// Content-bearing token events the server wrote during the run.
    pub tokens: u64,
    /// The child's cost.
    pub usage: ChildUsage,
    /// CPU of this process (the server) during the run.
    pub server_cpu: Duration,
    /// CPU used on the machine during the run by anything other than the
    /// client and this process (other builds, the kernel's own threads).
    pub other_cpu: Option<Duration>,
    /// Share of the cores busy just before the run started (0..1).
    pub busy_before: Option<f64>,
    /// How late the server wrote tokens against its schedule, ms.
    pub server_slip: Spread,
    /// Anything odd about the run, for the notes under the tables.
    pub notes: Vec<String>,
    /// Closed loop (goodput, and the bytes-only and hyper clients' TTFT): accuracy
    /// against the server log.
    pub accuracy: Option<Accuracy>,
    /// goodput only, open loop: arrival figures.
    pub open_loop: Option<OpenLoopFigures>,
    /// Tails after the first wave, TPOT error, busy core, first requests.
    pub extras: crate::tails::RunExtras,
}

impl ClientRun {
    /// Client CPU per completion request the server received, µs.
    pub fn cpu_per_request_us(&self) -> f64 {
        if self.server_requests == 0 {
            return f64::NAN;
        }
        self.usage.cpu().as_secs_f64() * 1e6 / self.server_requests as f64
    }

    /// Client CPU per streamed token, µs.
    pub fn cpu_per_token_us(&self) -> f64 {
        if self.tokens == 0 {
            return f64::NAN;
        }
        self.usage.cpu().as_secs_f64() * 1e6 / self.tokens as f64
    }
}

/// Open-loop figures: from the joined records and from goodput's own results.
#[derive(Debug, Clone)]
pub struct OpenLoopFigures {
    /// Target rate, req/s.
    pub target_rate: f64,
    /// Computed from records and the server log.
    pub joined: OpenLoop,
    /// goodput's `achieved_request_rate`, when its results have it.
    pub reported_achieved_rate: Option<f64>,
    /// goodput's `request_throughput`, when its results have it.
    pub reported_throughput: Option<f64>,
    /// goodput's `schedule_lag.p99_ms`, when its results have it.
    pub reported_lag_p99: Option<f64>,
}

/// A closed-loop run: `streams` concurrent streams, `requests_per_stream`
/// requests each, `tokens` output tokens per request; `repetition` numbers
/// repeated runs of the same load (0 for the first).
pub fn closed_loop(
    env: &BenchEnv,
    client: ClientKind,
    streams: usize,
    requests_per_stream: usize,
    tokens: u64,
    repetition: usize,
) -> anyhow::Result<ClientRun> {
    let requests = streams * requests_per_stream;
    let label = match repetition {
        0 => format!("{}-{streams}", client.name()),
        r => format!("{}-{streams}-r{r}", client.name()),
    };
    let server = ReferenceServer::start(env.server.clone(), 0)?;
    let addr = server.addr();
    let command = match client {
        ClientKind::BytesOnly | ClientKind::Hyper => bench_client_command(
            env,
            if client == ClientKind::Hyper {
                "hyper-client"
            } else {
                "bytes-client"
            },
            addr,
            ("--concurrency", &streams.to_string()),
            (requests, tokens),
            &label,
        ),
        ClientKind::Goodput | ClientKind::GoodputStartup => goodput_command(
            env,
            &label,
            &format!("http://{addr}"),
            &[
                "--concurrency",
                &streams.to_string(),
                "--num-prompts",
                &requests.to_string(),
                "--input-tokens",
                "32",
                "--output-tokens",
                &tokens.to_string(),
            ],
        )?,
        ClientKind::VllmBench => crate::vllm_bench::command(
            env.vllm_bench.as_deref(),
            &env.work_dir,
            &label,
            &format!("http://{addr}"),
            crate::vllm_bench::Load {
                streams,
                requests,
                tokens,
                api: env.vllm_bench_api,
            },
        )?,
    };
    let spec = RunSpec {
        client,
        streams,
        requests,
        repetition,
        label: &label,
    };
    let (mut run, log) = measure(env, server, &command, spec)?;
    if run.server_requests < requests {
        run.notes.push(format!(
            "{label}: the server received {} completion requests of the {requests} asked for",
            run.server_requests
        ));
    }
    join_with_log(env, &mut run, &log, &label)?;
    Ok(run)
}

/// What a closed-loop run's client recorded, checked and joined with the
/// server's `log`: the accuracy figures (TTFT only for the bench's own
/// clients), the tails after the first wave, and the notes about what they
/// left out.
fn join_with_log(
    env: &BenchEnv,
    run: &mut ClientRun,
    log: &[RequestLog],
    label: &str,
) -> anyhow::Result<()> {
    let records = match run.client {
        ClientKind::BytesOnly | ClientKind::Hyper => {
            let summary = check_client_summary(run)?;
            match join::read_records(&timings_path(env, label)) {
                Ok(records) => {
                    let origin = summary.clock_origin_monotonic_ns;
                    let accuracy = join::accuracy(&records, log, origin);
                    note_accuracy(&mut run.notes, &accuracy, label, false);
                    run.accuracy = Some(accuracy);
                    Some(records)
                }
                Err(e) => {
                    run.notes
                        .push(format!("{label}: no per-request timings ({e:#})"));
                    None
                }
            }
        }
        ClientKind::GoodputStartup => {
            check_goodput_exit(&run.usage)?;
            None
        }
        ClientKind::Goodput => {
            check_goodput_exit(&run.usage)?;
            let records = join::read_records(&records_path(env, label))?;
            let origin = read_results(&results_path(env, label))
                .as_ref()
                .and_then(join::clock_origin);
            if origin.is_none() {
                run.notes.push(format!(
                    "{label}: goodput's results have no `run.clock_origin_monotonic_ns` \
                     (an older goodput?): the client-side parts of the TTFT error decomposition \
                     are missing"
                ));
            }
            let accuracy = join::accuracy(&records, log, origin);
            note_accuracy(&mut run.notes, &accuracy, label, true);
            run.accuracy = Some(accuracy);
            Some(records)
        }
        ClientKind::VllmBench => {
            anyhow::ensure!(
                run.usage.exit_code == Some(0),
                "vllm-bench exited with {:?}: {}\nstderr (last lines):\n{}",
                run.usage.exit_code,
                run.usage.command,
                child::tail(&run.usage.stderr, 20)
            );
            let records = crate::vllm_bench::read_records(&crate::vllm_bench::result_path(
                &env.work_dir,
                label,
            ))?;
            // It never prints its clock origin: no client-side decomposition.
            let accuracy = join::accuracy(&records, log, None);
            note_accuracy(&mut run.notes, &accuracy, label, true);
            run.accuracy = Some(accuracy);
            Some(records)
        }
    };
    if let Some(records) = records {
        run.extras.tails = Some(crate::tails::of(&records, log, run.streams));
    }
    Ok(())
}

/// An open-loop goodput run: Poisson arrivals at `rate` req/s for
/// `duration_s` seconds' worth of requests, `tokens` output tokens each.
pub fn open_loop(
    env: &BenchEnv,
    rate: f64,
    duration_s: f64,
    tokens: u64,
) -> anyhow::Result<ClientRun> {
    let requests = (rate * duration_s).round().max(1.0) as usize;
    let label = format!("goodput-open-{rate}");
    let server = ReferenceServer::start(env.server.clone(), 0)?;
    let command = goodput_command(
        env,
        &label,
        &format!("http://{}", server.addr()),
        &[
            "--request-rate",
            &rate.to_string(),
            "--arrival",
            "poisson",
            "--num-prompts",
            &requests.to_string(),
            "--input-tokens",
            "32",
            "--output-tokens",
            &tokens.to_string(),
        ],
    )?;
    let spec = RunSpec {
        client: ClientKind::Goodput,
        streams: 0,
        requests,
        repetition: 0,
        label: &label,
    };
    let (mut run, log) = measure(env, server, &command, spec)?;
    check_goodput_exit(&run.usage)?;
    let records = join::read_records(&records_path(env, &label))?;
    let results = read_results(&results_path(env, &label));
    let joined = join::open_loop(&records, &log);
    let reported = |path: &[&str]| results.as_ref().and_then(|r| join::result_number(r, path));
    if joined.failed > 0 {
        run.notes.push(format!(
            "{label}: {} of {} requests failed ({})",
            joined.failed,
            joined.measured,
            kinds(&joined.error_kinds)
        ));
    }
    run.open_loop = Some(OpenLoopFigures {
        target_rate: rate,
        joined,
        reported_achieved_rate: reported(&["achieved_request_rate"]),
        reported_throughput: reported(&["request_throughput"]),
        reported_lag_p99: reported(&["schedule_lag", "p99_ms"]),
    });
    Ok(run)
}

/// The bytes-only floor in open loop ([`crate::open_floor`]) at `rate`,
/// the same requests and warm-up as [`open_loop`] sends goodput.
pub fn open_loop_floor(
    env: &BenchEnv,
    rate: f64,
    duration_s: f64,
    tokens: u64,
) -> anyhow::Result<ClientRun> {
    let requests = (rate * duration_s).round().max(1.0) as usize;
    let load = goodput_core::load::Load::Open {
        rate,
        arrival: goodput_core::load::Arrival::Poisson,
        max_concurrency: None,
    };
    let warmup = match goodput_core::load::WarmupPolicy::Auto.resolve(&load) {
        goodput_core::load::Warmup::Requests(n) => n as usize,
        _ => 0,
    };
    let label = format!("bytes-open-{rate}");
    let server = ReferenceServer::start(env.server.clone(), 0)?;
    let command = bench_client_command(
        env,
        "bytes-client",
        server.addr(),
        ("--rate", &rate.to_string()),
        (requests + warmup, tokens),
        &label,
    );
    let spec = RunSpec {
        client: ClientKind::BytesOnly,
        streams: 0,
        requests,
        repetition: 0,
        label: &label,
    };
    let (mut run, log) = measure(env, server, &command, spec)?;
    let records = join::read_records(&timings_path(env, &label))?;
    let joined = join::open_loop(&records, &log);
    if joined.failed > 0 {
        run.notes.push(format!(
            "{label}: {} of {} requests failed",
            joined.failed, joined.measured
        ));
    }
    run.open_loop = Some(OpenLoopFigures {
        target_rate: rate,
        joined,
        reported_achieved_rate: None,
        reported_throughput: None,
        reported_lag_p99: None,
    });
    Ok(run)
}

/// One of the bench's own clients (`subcommand`) as a child: its load flag
/// (`--concurrency N` or `--rate R`), `(requests, max_tokens)`, its timings
/// file named after `label`.
fn bench_client_command(
    env: &BenchEnv,
    subcommand: &str,
    addr: std::net::SocketAddr,
    load: (&str, &str),
    (requests, tokens): (usize, u64),
    label: &str,
) -> ChildCommand {
    ChildCommand {
        program: env.bench_exe.clone(),
        args: words(&[
            subcommand,
            "--addr",
            &addr.to_string(),
            load.0,
            load.1,
            "--requests",
            &requests.to_string(),
            "--max-tokens",
            &tokens.to_string(),
            "--time-limit-s",
            &env.time_limit.as_secs().to_string(),
            "--timings",
            &timings_path(env, label).display().to_string(),
        ]),
        env: Vec::new(),
    }
}

/// What a run is, for [`measure`].
pub struct RunSpec<'a> {
    pub client: ClientKind,
    pub streams: usize,
    pub requests: usize,
    pub repetition: usize,
    pub label: &'a str,
}

/// Waits for a quiet machine, runs `command` as a measured child while
/// `server` serves it, stops the server, and returns the run's cost (notes,
/// accuracy and open-loop figures still empty) with the server's log.
pub fn measure(
    env: &BenchEnv,
    server: ReferenceServer,
    command: &ChildCommand,
    spec: RunSpec<'_>,
) -> anyhow::Result<(ClientRun, Vec<RequestLog>)> {
    let label = spec.label;
    let busy_before = machine::wait_for_idle(env.idle_wait, IDLE_THRESHOLD);
    if let Some(busy) = busy_before.filter(|&b| b > IDLE_THRESHOLD) {
        eprintln!(
            "bench: the machine is still {:.0}% busy after waiting {:?}; running {label} anyway",
            busy * 100.0,
            env.idle_wait
        );
    }
    eprintln!("bench: running {label}: {}", command.display());
    let busy_core = if env.busy_core {
        Some(crate::spin::BusyCore::start(&env.bench_exe)?)
    } else {
        None
    };
    let machine_before = machine::machine_cpu();
    let cpu_before = machine::own_cpu();
    let usage = child::run_measured(
        &env.bench_exe,
        command,
        &env.work_dir,
        label,
        env.time_limit,
    );
    let server_cpu = machine::own_cpu().saturating_sub(cpu_before);
    let busy_core_cpu = busy_core.map(crate::spin::BusyCore::stop).transpose()?;
    let usage = usage?;
    let other_cpu = machine_before
        .zip(machine::machine_cpu())
        .map(|(before, after)| {
            after
                .saturating_sub(before)
                .saturating_sub(server_cpu + usage.cpu() + busy_core_cpu.unwrap_or_default())
        });
    // Let the last writes land in the log: the client exits once it has read
    // the end of its last response, which the server wrote before logging.
    std::thread::sleep(Duration::from_millis(50));
    let log = server.log().take();
    let kernel_timestamps = server.log().kernel_timestamps();
    drop(server);
    let log_path = env.work_dir.join(format!("{label}.server.jsonl"));
    if let Err(e) = crate::server::write_log(&log_path, &log) {
        eprintln!("bench: could not keep the server log: {e:#}");
    }
    eprintln!(
        "bench: {label} done in {:.1} s, CPU {:.2} s, peak RSS {:.1} MiB",
        usage.wall.as_secs_f64(),
        usage.cpu().as_secs_f64(),
        usage.max_rss_kib as f64 / 1024.0
    );
    let mut notes = timestamp_notes(label, &log, kernel_timestamps);
    let cores = machine::cores() as f64;
    if let Some(other) =
        other_cpu.filter(|o| o.as_secs_f64() > 0.05 * cores * usage.wall.as_secs_f64())
    {
        notes.push(format!(
            "{label}: other processes used {:.2} s of CPU during the run ({:.0}% of the cores): \
             its figures were disturbed",
            other.as_secs_f64(),
            100.0 * other.as_secs_f64() / (cores * usage.wall.as_secs_f64())
        ));
    }
    let first_requests = usage
        .spawn_monotonic_ns
        .map(|spawn| crate::tails::FirstRequests::of(spawn, &log));
    let run = ClientRun {
        client: spec.client,
        streams: spec.streams,
        repetition: spec.repetition,
        requests: spec.requests,
        server_requests: log.len(),
        tokens: content_tokens(&log),
        usage,
        server_cpu,
        other_cpu,
        busy_before,
        server_slip: server_slip(&log, &env.server),
        notes,
        accuracy: None,
        open_loop: None,
        extras: crate::tails::RunExtras {
            busy_core_cpu,
            first_requests,
            ..Default::default()
        },
    };
    Ok((run, log))
}

/// Notes about the kernel receive timestamps of a run's `log`.
fn timestamp_notes(label: &str, log: &[RequestLog], kernel_timestamps: bool) -> Vec<String> {
    if !kernel_timestamps {
        return vec![format!(
            "{label}: SO_TIMESTAMPNS could not be enabled: no kernel receive times, so no \
             send delay, server read lateness or TTFT error without it"
        )];
    }
    let stamped = log.iter().filter(|e| e.kernel_rx_ns.is_some()).count();
    if stamped < log.len() {
        return vec![format!(
            "{label}: {} of {} requests had no kernel receive timestamp",
            log.len() - stamped,
            log.len()
        )];
    }
    Vec::new()
}

pub fn words(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

pub fn records_path(env: &BenchEnv, label: &str) -> PathBuf {
    env.work_dir.join(format!("{label}.records.jsonl"))
}

fn timings_path(env: &BenchEnv, label: &str) -> PathBuf {
    env.work_dir.join(format!("{label}.timings.jsonl"))
}

pub fn results_path(env: &BenchEnv, label: &str) -> PathBuf {
    env.work_dir.join(format!("{label}.results.json"))
}

/// `goodput run` against `url` with the given load flags, writing records
/// (with per-event times) and results into the work directory.
pub fn goodput_command(
    env: &BenchEnv,
    label: &str,
    url: &str,
    load: &[&str],
) -> anyhow::Result<ChildCommand> {
    anyhow::ensure!(
        env.goodput.is_file(),
        "the goodput binary is not at {}: build it first with `cargo build --release -p goodput` \
         (from the workspace root), or pass --goodput PATH",
        env.goodput.display()
    );
    let records = records_path(env, label);
    let results = results_path(env, label);
    // goodput appends records: start from an empty file.
    for path in [&records, &results] {
        if path.exists() {
            std::fs::remove_file(path)
                .with_context(|| format!("removing old {}", path.display()))?;
        }
    }
    let mut args = words(&[
        "run",
        "--url",
        url,
        "--endpoint",
        "completions",
        "--model",
        "ref",
    ]);
    args.extend(words(load));
    args.extend(env.goodput_args.iter().cloned());
    args.extend(words(&[
        "--records",
        &records.display().to_string(),
        "--records-itl",
        "--out",
        &results.display().to_string(),
        "--quiet",
    ]));
    Ok(ChildCommand {
        program: env.goodput.clone(),
        args,
        env: Vec::new(),
    })
}

pub fn read_results(path: &Path) -> Option<serde_json::Value> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// Lateness of every streamed token write against its deadline, ms.
pub fn server_slip(log: &[RequestLog], config: &ServerConfig) -> Spread {
    let slips: Vec<f64> = log
        .iter()
        .filter(|e| e.streamed)
        .flat_map(|e| e.slips_ms(config.ttft, config.interval))
        .collect();
    Spread::of(&slips)
}

/// Token events the server wrote (streamed answers only).
pub fn content_tokens(log: &[RequestLog]) -> u64 {
    log.iter()
        .filter(|e| e.streamed)
        .map(|e| e.token_ns.len() as u64)
        .sum()
}

/// goodput exits 0, or 1 when a gate failed (e.g. error rate): both ran.
pub fn check_goodput_exit(usage: &ChildUsage) -> anyhow::Result<()> {
    match usage.exit_code {
        Some(0) | Some(1) => Ok(()),
        code => anyhow::bail!(
            "goodput exited with {code:?}: {}\nstderr (last lines):\n{}",
            usage.command,
            child::tail(&usage.stderr, 20)
        ),
    }
}

/// Checks the summary of one of the bench's own clients (bytes-only,
/// hyper) against the server's count and returns the summary.
fn check_client_summary(run: &mut ClientRun) -> anyhow::Result<ClientSummary> {
    let name = run.client.name();
    anyhow::ensure!(
        run.usage.exit_code == Some(0),
        "{name} client exited with {:?}: {}\n{}",
        run.usage.exit_code,
        run.usage.command,
        child::tail(&run.usage.stderr, 20)
    );
    let summary: ClientSummary = serde_json::from_str(run.usage.stdout.trim())
        .with_context(|| format!("{name} client printed no summary: {:?}", run.usage.stdout))?;
    if summary.failed > 0 {
        run.notes.push(format!(
            "{name} at {} streams: {} of {} requests failed (first error: {})",
            run.streams,
            summary.failed,
            summary.requests,
            summary.first_error.as_deref().unwrap_or("?")
        ));
    }
    // Each response carries its tokens plus a usage event and [DONE].
    let expected = run.tokens + 2 * summary.ok;
    if summary.data_events != expected {
        run.notes.push(format!(
            "{name} at {} streams: counted {} data events, server wrote {} (tokens + usage + [DONE])",
            run.streams, summary.data_events, expected
        ));
    }
    Ok(summary)
}

/// Notes about what an accuracy figure left out; `itl` when the client
/// records per-event times (goodput) and their absence is worth a note.
fn note_accuracy(notes: &mut Vec<String>, accuracy: &Accuracy, label: &str, itl: bool) {
    if accuracy.failed > 0 {
        notes.push(format!(
            "{label}: {} of {} requests failed ({})",
            accuracy.failed,
            accuracy.measured,
            kinds(&accuracy.error_kinds)
        ));
    }
    if accuracy.unmatched > 0 {
        notes.push(format!(
            "{label}: {} successful records had no server log entry (x-request-id not `<tag>-<request_id>`?)",
            accuracy.unmatched
        ));
    }
    if itl && accuracy.missing_event_times > 0 {
        notes.push(format!(
            "{label}: {} records had no `event_times_ms` (left out of ITL error)",
            accuracy.missing_event_times
        ));
    }
    if accuracy.event_count_mismatch > 0 {
        notes.push(format!(
            "{label}: {} requests had a client event count different from the server's token count \
             (left out of ITL error)",
            accuracy.event_count_mismatch
        ));
    }
}

/// `kind × count, ...` for a note.
pub fn kinds(counts: &[(String, usize)]) -> String {
    counts
        .iter()
        .map(|(kind, n)| format!("{kind} × {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}
