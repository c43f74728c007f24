//! `bench long-context`: long contexts in both directions, goodput against
//! the reference server (issue 22; vLLM #39963, where a Python client with a
//! 64 KB read buffer reported a TTFT of 134 s against 1.3 s at 50K-token
//! contexts).
//!
//! **Requests out.** goodput at `--streams` concurrent streams (64) of
//! `--input-tokens` prompts (128,000 o200k tokens, about 0.65 MB of JSON
//! each), `--output-tokens` answers (4,000), beside the same load with
//! 1,000-token prompts. Per run, on the shared `CLOCK_MONOTONIC`:
//! - scheduled send → last byte received = the kernel's receive time of the
//!   request's last segment (the server's `SO_TIMESTAMPNS`, `kernel_rx_ns`)
//!   − goodput's intended send (`sched_s`): how long a whole prompt takes to
//!   leave the client and cross loopback, queueing behind the other 63
//!   included;
//! - send delay = that receive time − goodput's `send_s` (taken right
//!   before the first `write` of the request): [`crate::join`]'s
//!   decomposition, here for requests of 0.65 MB;
//! - schedule lag (`send_s` − `sched_s`), the server's own read lateness
//!   (user-space read − kernel receive), the TTFT and ITL error against the
//!   server's log ([`join::accuracy`]), the client's CPU per request and
//!   peak RSS from `wait4`, and when the first request left (the run's
//!   clock origin is before the workload is built: a run of up to 1,024
//!   requests is built whole before its first send).
//!
//! **Events in.** The reference server's token events carry `--event-sizes`
//! bytes of text each (" the the …"; one event of 4 MB when the event is
//! as large as the answer), paced at `--stream-bytes-per-s` per stream (an
//! interval of at least 1 ms), read by goodput and by the bytes-only floor
//! (64 KB reads, no parsing) at the same load. CPU per MB of event text
//! should stay flat as events grow from 1 KB to megabytes (falling at
//! first, as the cost per event is spread over more bytes); a reader that
//! rescans or recopies what it holds would rise with the event size. The
//! TTFT and ITL error against the server's log come with it.
//!
//! Every run is bounded in requests and time and talks to 127.0.0.1 only.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;

use crate::experiments::{self as exp, BenchEnv, ClientKind, ClientRun};
use crate::join::{self, Accuracy, ClientRecord};
use crate::server::RequestLog;
use crate::stats::Spread;

/// The largest event text the server may be asked for: goodput ends a
/// request whose SSE line passes 8 MiB (`client::sse::MAX_EVENT`), and the
/// line holds the JSON around the text too.
pub const MAX_EVENT_BYTES: u64 = 8_000_000;

/// The loads of both parts.
#[derive(Debug, Clone, Args)]
pub struct LongContextArgs {
    /// Concurrent streams of the long-prompt runs.
    #[arg(long, default_value_t = 64)]
    pub streams: usize,
    /// Requests each stream sends one after another (long-prompt runs).
    #[arg(long, default_value_t = 2)]
    pub requests_per_stream: usize,
    /// Prompt lengths compared, in o200k tokens, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1000,128000")]
    pub input_tokens: Vec<u32>,
    /// Answer length of the long-prompt runs, in tokens.
    #[arg(long, default_value_t = 4000)]
    pub output_tokens: u64,
    /// Bytes of text in each token event of the large-event runs,
    /// comma-separated (1 to 8,000,000).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1024,16384,262144,1048576,4194304",
        value_parser = clap::value_parser!(u64).range(1..=MAX_EVENT_BYTES)
    )]
    pub event_sizes: Vec<u64>,
    /// Bytes of event text in each answer of the large-event runs (at
    /// least one event, however large).
    #[arg(long, default_value_t = 2 << 20)]
    pub answer_bytes: u64,
    /// Concurrent streams of the large-event runs.
    #[arg(long, default_value_t = 4)]
    pub event_streams: usize,
    /// Requests each stream sends one after another (large-event runs).
    #[arg(long, default_value_t = 4)]
    pub event_requests_per_stream: usize,
    /// Event text each stream is sent per second in the large-event runs:
    /// the server's interval between events is the event's bytes over this
    /// (at least 1 ms), so the clients are never asked for more than they
    /// can read.
    #[arg(long, default_value_t = 16_000_000)]
    pub stream_bytes_per_s: u64,
    /// Leave out the long-prompt runs.
    #[arg(long)]
    pub no_prompts: bool,
    /// Leave out the large-event runs.
    #[arg(long)]
    pub no_events: bool,
    /// Runs of each configuration, interleaved.
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
    /// Also write the figures to this file as JSON.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// One long-prompt run of goodput.
#[derive(Debug, Clone)]
pub struct PromptRun {
    /// Prompt length, o200k tokens.
    pub input_tokens: u32,
    /// The child's cost, the server's, and the notes.
    pub run: ClientRun,
    /// How the requests went out.
    pub upload: Upload,
    /// TTFT and ITL error against the server's log.
    pub accuracy: Accuracy,
}

/// One large-event run of one client.
#[derive(Debug, Clone)]
pub struct EventRun {
    /// Bytes of text per event.
    pub event_bytes: u64,
    /// The server's interval between events.
    pub interval: Duration,
    /// goodput's `--tokenizer` when not its default (`none`: no client-side
    /// counting of the answer's tokens).
    pub tokenizer: Option<&'static str>,
    /// The client's run (its accuracy inside).
    pub run: ClientRun,
}

impl EventRun {
    /// Event text the server wrote during the run, MB (10^6 bytes).
    pub fn text_mb(&self) -> f64 {
        self.run.tokens as f64 * self.event_bytes as f64 / 1e6
    }

    /// Client CPU per MB of event text, ms; `startup` (the client's fixed
    /// cost) is taken off first.
    pub fn cpu_per_mb_ms(&self, startup: Duration) -> f64 {
        let cpu = self.run.usage.cpu().saturating_sub(startup);
        cpu.as_secs_f64() * 1e3 / self.text_mb()
    }
}

/// Everything `bench long-context` measured.
#[derive(Debug, Clone, Default)]
pub struct LongContext {
    /// The long-prompt runs, interleaved as they ran.
    pub prompts: Vec<PromptRun>,
    /// goodput's fixed cost (1 request of 1 token), for the large-event runs.
    pub startup: Option<ClientRun>,
    /// The large-event runs, the floor then goodput at each size.
    pub events: Vec<EventRun>,
}

/// How the requests of one run went out, on the shared `CLOCK_MONOTONIC`
/// (all in ms but `first_sched_s`).
#[derive(Debug, Clone)]
pub struct Upload {
    /// Measured records.
    pub measured: usize,
    /// Successful measured records found in the server's log with a kernel
    /// receive time (the figures below are of these).
    pub timed: usize,
    /// Earliest intended send, s after goodput's clock origin: its
    /// start-up and the workload built before the first send.
    pub first_sched_s: f64,
    /// Kernel receive time of the request's last bytes − intended send.
    pub sched_to_last_byte: Spread,
    /// The same, of the first wave: the first `first_wave` requests by
    /// intended send (a closed loop sends every stream's first request at
    /// once, and their uploads queue behind each other).
    pub first_wave: Spread,
    /// The same, of the requests after the first wave.
    pub after_first_wave: Spread,
    /// Kernel receive time − actual send.
    pub send_delay: Spread,
    /// Actual send − intended send.
    pub schedule_lag: Spread,
    /// The server's user-space read of the whole request − kernel receive.
    pub read_lateness: Spread,
}

/// The [`Upload`] figures from goodput's records and the server's log;
/// `origin_ns` is the records' clock origin (`run.clock_origin_monotonic_ns`),
/// `first_wave` the number of streams. Without the origin, only the counts,
/// the first send and the schedule lag.
pub fn upload(
    records: &[ClientRecord],
    log: &[RequestLog],
    origin_ns: Option<u64>,
    first_wave: usize,
) -> Upload {
    let by_id = join::index_log(log);
    let measured: Vec<&ClientRecord> = records.iter().filter(|r| r.is_measured()).collect();
    let (mut to_last, mut send_delay, mut late) = (Vec::new(), Vec::new(), Vec::new());
    // (intended send, scheduled send → last byte), to split off the first wave.
    let mut by_sched: Vec<(f64, f64)> = Vec::new();
    for record in measured.iter().filter(|r| r.ok) {
        let Some(entry) = by_id.get(&record.request_id) else {
            continue;
        };
        let (Some(kernel), Some(origin)) = (entry.kernel_rx_ns, origin_ns) else {
            continue;
        };
        // Server times relative to the client's origin, ms.
        let kernel_ms = (kernel as i128 - origin as i128) as f64 / 1e6;
        if let Some(sched) = record.sched_s {
            to_last.push(kernel_ms - sched * 1e3);
            by_sched.push((sched, kernel_ms - sched * 1e3));
        }
        if let Some(send) = record.send_s {
            send_delay.push(kernel_ms - send * 1e3);
        }
        late.extend(entry.read_lateness_ms());
    }
    let lags: Vec<f64> = measured.iter().filter_map(|r| r.schedule_lag_ms).collect();
    by_sched.sort_by(|a, b| a.0.total_cmp(&b.0));
    let wave: Vec<f64> = by_sched.iter().map(|&(_, t)| t).collect();
    let (first, after) = wave.split_at(first_wave.min(wave.len()));
    Upload {
        measured: measured.len(),
        timed: to_last.len(),
        first_sched_s: measured
            .iter()
            .filter_map(|r| r.sched_s)
            .fold(f64::NAN, f64::min),
        sched_to_last_byte: Spread::of(&to_last),
        first_wave: Spread::of(first),
        after_first_wave: Spread::of(after),
        send_delay: Spread::of(&send_delay),
        schedule_lag: Spread::of(&lags),
        read_lateness: Spread::of(&late),
    }
}

/// Event text of exactly `bytes` bytes: " the" repeated (one o200k token
/// each, JSON-safe), the last copy cut to fit.
pub fn event_text(bytes: usize) -> String {
    " the".repeat(bytes.div_ceil(4))[..bytes].to_string()
}

/// The server's interval between events of `event_bytes` at
/// `bytes_per_s` per stream: at least 1 ms (the reference server's timers
/// are tokio's, of 1 ms resolution).
pub fn event_interval(event_bytes: u64, bytes_per_s: u64) -> Duration {
    let secs = event_bytes as f64 / bytes_per_s.max(1) as f64;
    Duration::from_secs_f64(secs).max(Duration::from_millis(1))
}

/// Runs both parts, each configuration `args.repeat` times, interleaved.
pub fn run(env: &BenchEnv, args: &LongContextArgs) -> anyhow::Result<LongContext> {
    let mut out = LongContext::default();
    for repetition in 0..args.repeat.max(1) {
        if !args.no_prompts {
            for &tokens in &args.input_tokens {
                out.prompts.push(prompt_run(env, args, tokens, repetition)?);
            }
        }
        if !args.no_events && !args.event_sizes.is_empty() {
            if out.startup.is_none() {
                let startup = ClientKind::GoodputStartup;
                out.startup = Some(exp::closed_loop(env, startup, 1, 1, 1, 0)?);
            }
            for &bytes in &args.event_sizes {
                out.events.extend(event_runs(env, args, bytes, repetition)?);
            }
        }
    }
    Ok(out)
}

/// One goodput run of `input_tokens` prompts against a fresh server.
fn prompt_run(
    env: &BenchEnv,
    args: &LongContextArgs,
    input_tokens: u32,
    repetition: usize,
) -> anyhow::Result<PromptRun> {
    let label = format!("long-prompt-{input_tokens}-r{repetition}");
    let load = Load {
        streams: args.streams,
        requests: args.streams * args.requests_per_stream,
        input_tokens,
        output_tokens: args.output_tokens,
        tokenizer: None,
    };
    let Joined {
        mut run,
        records,
        log,
        origin,
    } = goodput_run(env, &load, &label, repetition)?;
    let upload = upload(&records, &log, origin, args.streams);
    if upload.timed < upload.measured {
        run.notes.push(format!(
            "{label}: {} of {} requests have no upload figures (failed, not in the server's log, \
             no kernel receive time or no clock origin)",
            upload.measured - upload.timed,
            upload.measured
        ));
    }
    let accuracy = run.accuracy.clone().context("goodput_run always joins")?;
    Ok(PromptRun {
        input_tokens,
        run,
        upload,
        accuracy,
    })
}

/// What one goodput run sends.
struct Load {
    streams: usize,
    requests: usize,
    input_tokens: u32,
    output_tokens: u64,
    /// goodput's `--tokenizer`, when not its default (o200k).
    tokenizer: Option<&'static str>,
}

/// A goodput run joined with the server's log.
struct Joined {
    /// The run, its accuracy filled in.
    run: ClientRun,
    /// goodput's records.
    records: Vec<ClientRecord>,
    /// The server's log.
    log: Vec<RequestLog>,
    /// The records' clock origin on `CLOCK_MONOTONIC`, ns.
    origin: Option<u64>,
}

/// goodput in closed loop against a fresh server, without warm-up (every
/// request is measured, and the first wave sends every stream's prompt at
/// once, the hardest case for the upload), joined with the server's log.
fn goodput_run(
    env: &BenchEnv,
    load: &Load,
    label: &str,
    repetition: usize,
) -> anyhow::Result<Joined> {
    let server = crate::server::ReferenceServer::start(env.server.clone(), 0)?;
    let mut flags = exp::words(&[
        "--concurrency",
        &load.streams.to_string(),
        "--num-prompts",
        &load.requests.to_string(),
        "--warmup",
        "0",
        "--input-tokens",
        &load.input_tokens.to_string(),
        "--output-tokens",
        &load.output_tokens.to_string(),
    ]);
    if let Some(tokenizer) = load.tokenizer {
        flags.extend(exp::words(&["--tokenizer", tokenizer]));
    }
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let url = format!("http://{}", server.addr());
    let command = exp::goodput_command(env, label, &url, &flags)?;
    let spec = exp::RunSpec {
        client: ClientKind::Goodput,
        streams: load.streams,
        requests: load.requests,
        repetition,
        label,
    };
    let (mut run, log) = exp::measure(env, server, &command, spec)?;
    exp::check_goodput_exit(&run.usage)?;
    let records = join::read_records(&exp::records_path(env, label))?;
    let origin = exp::read_results(&exp::results_path(env, label))
        .as_ref()
        .and_then(join::clock_origin);
    let accuracy = join::accuracy(&records, &log, origin);
    if accuracy.failed > 0 {
        run.notes.push(format!(
            "{label}: {} of {} requests failed ({})",
            accuracy.failed,
            accuracy.measured,
            exp::kinds(&accuracy.error_kinds)
        ));
    }
    if accuracy.event_count_mismatch > 0 {
        run.notes.push(format!(
            "{label}: {} requests had a client event count different from the server's \
             (left out of ITL error)",
            accuracy.event_count_mismatch
        ));
    }
    run.accuracy = Some(accuracy);
    Ok(Joined {
        run,
        records,
        log,
        origin,
    })
}

/// The floor, goodput, and goodput without its tokenizer, reading events
/// of `event_bytes` against a fresh server each; their files go to a
/// folder of the work directory named after the size.
fn event_runs(
    env: &BenchEnv,
    args: &LongContextArgs,
    event_bytes: u64,
    repetition: usize,
) -> anyhow::Result<Vec<EventRun>> {
    let tokens = (args.answer_bytes / event_bytes).max(1);
    let interval = event_interval(event_bytes, args.stream_bytes_per_s);
    let mut env = env.clone();
    env.server.token_text = event_text(event_bytes as usize).into();
    env.server.interval = interval;
    env.work_dir = env.work_dir.join(format!("events-{event_bytes}"));
    std::fs::create_dir_all(&env.work_dir)
        .with_context(|| format!("creating {}", env.work_dir.display()))?;
    let (streams, per_stream) = (args.event_streams, args.event_requests_per_stream);
    let floor = exp::closed_loop(
        &env,
        ClientKind::BytesOnly,
        streams,
        per_stream,
        tokens,
        repetition,
    )?;
    let mut runs = vec![EventRun {
        event_bytes,
        interval,
        tokenizer: None,
        run: floor,
    }];
    for tokenizer in [None, Some("none")] {
        let load = Load {
            streams,
            requests: streams * per_stream,
            input_tokens: 32,
            output_tokens: tokens,
            tokenizer,
        };
        let label = format!(
            "goodput-{}-r{repetition}",
            if tokenizer.is_some() {
                "no-tokenizer"
            } else {
                "o200k"
            }
        );
        let run = goodput_run(&env, &load, &label, repetition)?.run;
        runs.push(EventRun {
            event_bytes,
            interval,
            tokenizer,
            run,
        });
    }
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::Endpoint;

    fn entry(id: &str, recv_ns: u64, kernel_rx_ns: Option<u64>) -> RequestLog {
        RequestLog {
            request_id: Some(id.to_string()),
            endpoint: Endpoint::Completions,
            streamed: true,
            recv_ns,
            kernel_rx_ns,
            token_ns: vec![recv_ns + 100_000_000],
            complete: true,
        }
    }

    fn record(line: &str) -> ClientRecord {
        serde_json::from_str(line).unwrap()
    }

    #[test]
    fn upload_figures_come_from_the_kernel_receive_time_on_the_shared_clock() {
        // Client origin at 10 s of CLOCK_MONOTONIC. Request 0 is due at
        // 1 s (11 s absolute), sent 0.5 ms late, its last byte received by
        // the kernel 4 ms after it was due and read by the server 0.25 ms
        // later. Request 1 is due at 1.002 s, sent on time, received 20 ms
        // later. Request 2 failed, request 3 has no kernel time, request 4
        // is a warm-up: none of them counts, but 3 is measured.
        let ms = 1_000_000u64;
        let origin = 10_000 * ms;
        let log = vec![
            entry(
                "run-0",
                origin + 1_004 * ms + ms / 4,
                Some(origin + 1_004 * ms),
            ),
            entry("run-1", origin + 1_023 * ms, Some(origin + 1_022 * ms)),
            entry("run-3", origin + 1_500 * ms, None),
            entry("run-4", origin + 900 * ms, Some(origin + 899 * ms)),
        ];
        let records = vec![
            record(
                r#"{"request_id":0,"ok":true,"phase":"measure","sched_s":1.0,"send_s":1.0005,"schedule_lag_ms":0.5}"#,
            ),
            record(
                r#"{"request_id":1,"ok":true,"phase":"measure","sched_s":1.002,"send_s":1.002,"schedule_lag_ms":0.0}"#,
            ),
            record(r#"{"request_id":2,"ok":false,"phase":"measure","sched_s":1.003}"#),
            record(r#"{"request_id":3,"ok":true,"phase":"measure","sched_s":1.4,"send_s":1.4}"#),
            record(r#"{"request_id":4,"ok":true,"phase":"warmup","sched_s":0.5,"send_s":0.5}"#),
        ];
        let u = upload(&records, &log, Some(origin), 1);
        let close = |x: f64, y: f64| (x - y).abs() < 1e-6;
        assert_eq!((u.measured, u.timed), (4, 2));
        assert!(close(u.first_sched_s, 1.0), "{u:?}");
        assert!(close(u.sched_to_last_byte.p50, 12.0), "{u:?}");
        assert!(close(u.sched_to_last_byte.max, 20.0), "{u:?}");
        // The first wave is the first request by intended send.
        assert_eq!((u.first_wave.n, u.after_first_wave.n), (1, 1));
        assert!(close(u.first_wave.max, 4.0), "{u:?}");
        assert!(close(u.after_first_wave.p50, 20.0), "{u:?}");
        assert!(close(u.send_delay.p50, (3.5 + 20.0) / 2.0), "{u:?}");
        assert!(close(u.send_delay.max, 20.0), "{u:?}");
        assert!(close(u.read_lateness.max, 1.0), "{u:?}");
        assert!(close(u.read_lateness.p50, 0.625), "{u:?}");
        assert_eq!(u.schedule_lag.n, 2);
        assert!(close(u.schedule_lag.max, 0.5), "{u:?}");
        // Without the client's origin, nothing can be put on the server's clock.
        let u = upload(&records, &log, None, 1);
        assert_eq!((u.measured, u.timed, u.send_delay.n), (4, 0, 0));
    }

    #[test]
    fn event_text_is_exact_and_json_safe() {
        for n in [1, 3, 4, 5, 1024, 1_000_001] {
            let text = event_text(n);
            assert_eq!(text.len(), n);
            assert!(text.starts_with(' ') && !text.contains(['"', '\\', '\n']));
        }
        assert_eq!(event_text(6), " the t");
    }

    #[test]
    fn events_are_paced_by_bytes_with_a_floor_of_one_ms() {
        assert_eq!(event_interval(1024, 16_000_000), Duration::from_millis(1));
        assert_eq!(
            event_interval(1_600_000, 16_000_000),
            Duration::from_millis(100)
        );
        assert_eq!(event_interval(1, 0), Duration::from_secs(1));
    }
}
