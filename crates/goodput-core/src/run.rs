//! Run: one benchmark at one load point, from options to metrics.
//!
//! Resolves the model, probes whether the server accepts `min_tokens` and
//! `ignore_eos`, opens the closed-loop pool ahead of time, starts the
//! aggregator thread (which derives per-request metrics, appends each record
//! to the records file as it arrives, and accumulates the measured phase),
//! drives the [`executor`](crate::executor), and returns a [`RunResult`].

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde::Serialize;
use tokio::sync::mpsc;

use crate::client::{Client, ClientError, ClientOptions};
use crate::clock::RunClock;
use crate::executor::{self, ExecSummary, Progress, RunControl, RunPlan};
use crate::metrics::{Collector, RequestMetrics, RunMetrics};
use crate::record::RequestRecord;
use crate::report::records::record_line;
use crate::schedule::Load;
use crate::timer::PreciseTimer;
use crate::tokenizer::{Tokenizer, TokenizerError};
use crate::workload::{LengthSpec, Workload, WorkloadSpec};

/// Everything that shapes a run (the API key lives only in `client`).
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub client: ClientOptions,
    pub model: Option<String>,
    pub input_tokens: LengthSpec,
    pub output_tokens: LengthSpec,
    pub stream: bool,
    /// Ask for pinned output lengths (`min_tokens`, `ignore_eos`); the probe may drop them.
    pub pin_output: bool,
    pub tokenizer: String,
    pub plan: RunPlan,
    pub percentiles: Vec<f64>,
    /// Write per-event arrival offsets into each record line.
    pub records_itl: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(transparent)]
    Tokenizer(#[from] TokenizerError),
    #[error("could not list models at {url}: {why} (pass --model NAME to skip the lookup)")]
    Models { url: String, why: String },
    #[error("writing records: {0}")]
    Records(#[from] std::io::Error),
}

impl RunError {
    /// The target could not be reached at all (exit code 3 territory).
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self,
            RunError::Models { .. } | RunError::Client(ClientError::Resolve { .. })
        )
    }
}

/// The result of one run.
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    /// Everything needed to rerun, minus secrets.
    pub config: serde_json::Value,
    pub model: String,
    pub tokenizer: String,
    pub load: Load,
    pub metrics: RunMetrics,
    pub exec: ExecSummary,
    /// Things the user should know (dropped fields, flags, warnings).
    pub notes: Vec<String>,
    pub percentiles: Vec<f64>,
    pub warmup_requests: u64,
    /// Wall-clock start of the run (RFC 3339, UTC).
    pub started_at: String,
    /// The run clock's origin on `CLOCK_MONOTONIC` (ns): `sched_s`/`send_s`
    /// in the records are seconds after it.
    pub clock_origin_monotonic_ns: Option<u64>,
}

/// Run one benchmark. Records (warm-up included, marked) are appended to
/// `records` as they finish.
pub async fn run(
    opts: RunOptions,
    control: RunControl,
    records: Option<Box<dyn Write + Send>>,
    progress: Arc<Progress>,
) -> Result<RunResult, RunError> {
    let started_at = now_rfc3339();
    let clock = RunClock::start();
    let run_tag = format!("{:08x}", rand::random::<u32>());
    let client = Client::new(opts.client.clone(), clock, run_tag).await?;
    let model = match &opts.model {
        Some(m) => m.clone(),
        None => discover_model(&client).await?,
    };
    let tokenizer = Tokenizer::from_spec(&opts.tokenizer)?;
    let mut notes = Vec::new();
    let mut spec = WorkloadSpec {
        endpoint: opts.client.endpoint,
        model: model.clone(),
        input_tokens: opts.input_tokens,
        output_tokens: opts.output_tokens,
        stream: opts.stream,
        min_tokens: opts.pin_output,
        ignore_eos: opts.pin_output,
        seed: opts.plan.seed,
    };
    if opts.pin_output {
        probe_pinning(&client, &mut spec, &mut notes).await;
    }
    if let Load::Closed { concurrency } = opts.plan.load {
        client.prewarm(concurrency).await;
    }
    let workload = Workload::new(spec.clone(), tokenizer.clone());

    let (tx, rx) = mpsc::unbounded_channel::<RequestRecord>();
    let aggregator = {
        let tokenizer = tokenizer.clone();
        let itl = opts.records_itl;
        std::thread::Builder::new()
            .name("goodput-aggregator".into())
            .spawn(move || aggregate(rx, records, tokenizer, itl))?
    };
    let exec = executor::execute(
        &opts.plan,
        client,
        workload,
        clock,
        PreciseTimer::new(),
        control,
        tx,
        progress,
    )
    .await;
    let (collector, warmup_requests, write_error) =
        tokio::task::spawn_blocking(move || aggregator.join())
            .await
            .ok()
            .and_then(|r| r.ok())
            .unwrap_or_default();
    if let Some(e) = write_error {
        notes.push(format!("records file: {e}"));
    }
    let metrics = collector.summarize(&opts.percentiles, exec.ramp_end_ns, opts.plan.seed);
    if let (Some(offered), Some(achieved)) =
        (opts.plan.load.offered_rate(), metrics.achieved_request_rate)
    {
        if offered.is_finite() && achieved < 0.95 * offered {
            notes.push(format!(
                "achieved request rate {achieved:.2}/s is below 95% of the offered {offered:.2}/s: the client or the connection limit could not keep up (see schedule lag)"
            ));
        }
    }
    if let Some(share) = metrics.length_mismatch_share {
        if share > 0.0 && opts.pin_output {
            notes.push(format!(
                "{:.1}% of completed requests returned a different number of output tokens than requested",
                share * 100.0
            ));
        }
    }
    let config = serde_json::json!({
        "url": opts.client.url,
        "endpoint": opts.client.endpoint,
        "model": model,
        "headers": opts.client.headers.iter().map(|h| redact_header(h)).collect::<Vec<_>>(),
        "timeout_s": opts.client.timeout.as_secs_f64(),
        "idle_timeout_s": opts.client.idle_timeout.as_secs_f64(),
        "load": opts.plan.load,
        "num_prompts": opts.plan.num_prompts,
        "duration_s": opts.plan.duration.map(|d| d.as_secs_f64()),
        "warmup": opts.plan.warmup,
        "drain_timeout_s": opts.plan.drain_timeout.as_secs_f64(),
        "seed": opts.plan.seed,
        "input_tokens": opts.input_tokens,
        "output_tokens": opts.output_tokens,
        "stream": opts.stream,
        "min_tokens_sent": spec.min_tokens,
        "ignore_eos_sent": spec.ignore_eos,
        "tokenizer": tokenizer.spec(),
        "percentiles": opts.percentiles,
        "cache_bust": true,
    });
    Ok(RunResult {
        config,
        model,
        tokenizer: tokenizer.spec().to_string(),
        load: opts.plan.load,
        metrics,
        exec,
        notes,
        percentiles: opts.percentiles,
        warmup_requests,
        started_at,
        clock_origin_monotonic_ns: clock.origin_monotonic_ns(),
    })
}

fn redact_header(h: &str) -> String {
    match h.split_once(':') {
        Some((name, _)) if is_secret_header(name.trim()) => format!("{}: <redacted>", name.trim()),
        _ => h.to_string(),
    }
}

fn is_secret_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n == "authorization"
        || n.contains("key")
        || n.contains("token")
        || n.contains("secret")
        || n == "cookie"
}

/// The aggregator: derives metrics per record, writes the records file, and
/// accumulates the measured phase. Runs on its own thread, off the request path.
fn aggregate(
    mut rx: mpsc::UnboundedReceiver<RequestRecord>,
    mut records: Option<Box<dyn Write + Send>>,
    tokenizer: Tokenizer,
    itl: bool,
) -> (Collector, u64, Option<String>) {
    lower_thread_priority();
    let mut collector = Collector::default();
    let mut warmup = 0u64;
    let mut write_error = None;
    let mut line = Vec::with_capacity(1024);
    while let Some(first) = rx.blocking_recv() {
        let mut next = Some(first);
        while let Some(rec) = next.take() {
            let m = RequestMetrics::derive(&rec, &tokenizer);
            if rec.warmup {
                warmup += 1;
            }
            collector.add(&rec, &m);
            if let Some(w) = records.as_mut() {
                line.clear();
                record_line(&mut line, &rec, &m, itl);
                if let Err(e) = w.write_all(&line) {
                    write_error = Some(e.to_string());
                    records = None;
                }
            }
            next = rx.try_recv().ok();
        }
        // Flush once per batch: a crash or Ctrl-C loses nothing already finished.
        if let Some(w) = records.as_mut() {
            if let Err(e) = w.flush() {
                write_error = Some(e.to_string());
                records = None;
            }
        }
    }
    (collector, warmup, write_error)
}

/// Ask the kernel to prefer the request path over this thread: aggregation
/// comes in bursts as responses end, exactly when new requests are written
/// and first events arrive, and it can wait. Lowering one's own priority
/// needs no privilege.
fn lower_thread_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid has no arguments; setpriority on our own thread id only
    // changes this thread's nice value.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, 10);
    }
}

async fn discover_model(client: &Client) -> Result<String, RunError> {
    let url = format!(
        "{}{}",
        client.base().authority(),
        client.base().path("/models")
    );
    let fail = |why: String| RunError::Models {
        url: url.clone(),
        why,
    };
    let (status, body) = client
        .simple("GET", "/models", None, "models")
        .await
        .map_err(|e| fail(e.to_string()))?;
    if !(200..300).contains(&status) {
        return Err(fail(format!(
            "HTTP {status}: {}",
            crate::client::snippet(&body)
        )));
    }
    let v: serde_json::Value =
        serde_json::from_slice(&body).map_err(|e| fail(format!("not JSON: {e}")))?;
    v["data"][0]["id"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| fail("the list is empty".into()))
}

/// One request with `min_tokens` and `ignore_eos`: a 400/422 answer means the
/// server rejects them, so they are dropped for the run (and said so).
async fn probe_pinning(client: &Client, spec: &mut WorkloadSpec, notes: &mut Vec<String>) {
    let body: Bytes = crate::workload::request_body(spec, "Say hello.", 1);
    match client
        .simple("POST", spec.endpoint.path(), Some(body), "probe")
        .await
    {
        Ok((s, _)) if (200..300).contains(&s) => {}
        Ok((s @ (400 | 422), body)) => {
            spec.min_tokens = false;
            spec.ignore_eos = false;
            notes.push(format!(
                "the server rejected min_tokens/ignore_eos (HTTP {s}: {}); they are not sent in this run, so output lengths may fall short of --output-tokens",
                crate::client::snippet(&body)
            ));
        }
        Ok((s, body)) => notes.push(format!(
            "the probe request answered HTTP {s} ({}); min_tokens/ignore_eos are kept",
            crate::client::snippet(&body)
        )),
        Err(e) => notes.push(format!(
            "the probe request failed ({e}); min_tokens/ignore_eos are kept"
        )),
    }
}

/// Current UTC time as RFC 3339, without a date crate.
pub fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}
