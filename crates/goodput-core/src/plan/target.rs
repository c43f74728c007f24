//! The target: prepared once, run many times.
//!
//! [`PreparedTarget::prepare`] builds the client and its connection pool,
//! discovers the model, and probes once whether the server accepts
//! `min_tokens`/`ignore_eos`; every stage ends at once when the user stops
//! (a signal). [`PreparedTarget::run`] then runs one plan — a run, or one
//! point of a sweep — with no repeated discovery, probe or tokenizer build:
//! it starts the aggregator, drives the [`executor`], and
//! returns a [`RunResult`]. Each run has its own id (in every record and
//! `x-request-id`) and its own salt nonce, so no run's prompts share a prefix
//! with an earlier run's.

use std::sync::Arc;

use tokio::sync::mpsc;

use crate::load::executor::{self, Executor, Msg, Progress, RunControl, RunPlan};
use crate::load::schedule::Load;
use crate::load::timer::PreciseTimer;
use crate::load::workload::Prefetch;
use crate::measure::aggregate::{self, LineContext, RecordsSink};
use crate::measure::cost::Cost;
use crate::measure::gpu::{GpuMetrics, GpuScraper};
use crate::measure::metrics::{Collector, EarlyStop, RunMetrics};
use crate::measure::server_metrics::{ScrapeOptions, Scraper, ServerMetrics};
use crate::measure::slo::Slo;
use crate::output::config::RunConfig;
use crate::output::result::{now_rfc3339, RunResult};
use crate::request::client::{Client, ClientError, ConnectionStats};
use crate::request::clock::RunClock;
use crate::request::protocol::RequestParams;
use crate::request::transport::Transport;
use crate::tokenizer::Tokenizer;

/// User plus system CPU seconds of this process so far.
fn process_cpu_s() -> Option<f64> {
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage fills the struct it is given.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return None;
    }
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    Some(t(u.ru_utime) + t(u.ru_stime))
}

mod keep;
mod probe;
mod sharded;
mod spec;

use probe::{discover_model, probe_pinning, slot_context, token_notes};

pub use sharded::{Role, Sharding};
pub use spec::{RunError, RunSpec, ServerMetricsChoice, TargetOptions};

/// A target ready to run plans against.
pub struct PreparedTarget {
    client: Arc<Client>,
    clock: RunClock,
    model: String,
    params: RequestParams,
    tokenizer: Tokenizer,
    /// What preparing found that every run should say (dropped fields...).
    notes: Vec<String>,
    options: TargetOptions,
    /// The live exposition, when `--metrics-listen` serves one.
    live: Option<Arc<crate::measure::live::LiveMetrics>>,
    /// The server's metrics, scraped during each run.
    scraper: Option<Scraper>,
    /// The GPUs' telemetry, scraped during each run.
    gpu: Option<GpuScraper>,
    /// This process's place in a sharded run.
    sharding: Option<sharded::Sharding>,
}

impl PreparedTarget {
    /// Connect, discover the model and probe; stops when `control` does.
    pub async fn prepare(opts: TargetOptions, control: &RunControl) -> Result<Self, RunError> {
        tokio::select! {
            biased;
            _ = control.stopped() => Err(RunError::Interrupted),
            r = Self::prepare_inner(opts) => r,
        }
    }

    async fn prepare_inner(mut opts: TargetOptions) -> Result<Self, RunError> {
        let clock = RunClock::start();
        let client = Client::new(opts.client.clone(), clock).await?;
        // The server's metrics are checked first: a --server-metrics URL
        // that does not answer is an error before any request is sent.
        // (where, whether it must answer)
        let scrape = match &opts.server_metrics {
            ServerMetricsChoice::Off => None,
            ServerMetricsChoice::Auto { interval } => {
                crate::measure::server_metrics::default_url(&opts.client.url).map(|url| {
                    let o = ScrapeOptions {
                        url,
                        interval: *interval,
                    };
                    (o, false)
                })
            }
            ServerMetricsChoice::Url(o) => Some((o.clone(), true)),
        };
        let mut scraper = match scrape {
            None => None,
            Some((o, required)) => match Scraper::connect(&o, &opts.client, clock).await {
                Ok(s) => Some(s),
                Err(_) if !required => None,
                Err(e) => return Err(RunError::ServerMetrics(e.to_string())),
            },
        };
        let model = match &opts.model {
            Some(m) => m.clone(),
            None => {
                let (model, simulated) = discover_model(&client).await?;
                // A `goodput sim` behind --url: its results must not pass
                // for a real server's.
                if simulated && opts.target == crate::output::config::Target::Server {
                    opts.target = crate::output::config::Target::Simulated {
                        preset: None,
                        settings: None,
                    };
                }
                model
            }
        };
        let mut params = RequestParams {
            endpoint: opts.client.endpoint,
            model: model.clone(),
            stream: opts.stream,
            min_tokens: opts.pin_output,
            ignore_eos: opts.pin_output,
            temperature: opts.temperature,
            output: opts.output.clone(),
        };
        if let Some(s) = scraper.as_mut() {
            s.set_model(model.clone());
        }
        let mut notes = Vec::new();
        if opts.pin_output {
            probe_pinning(&client, &mut params, &mut notes).await;
        }
        if let Some(c) = slot_context(&client).await {
            client.set_sequence_context(c);
        }
        let gpu = gpu_scraper(&opts, clock).await?;
        Ok(PreparedTarget {
            client: Arc::new(client),
            clock,
            model,
            params,
            tokenizer: opts.tokenizer.clone(),
            notes,
            options: opts,
            live: None,
            scraper,
            gpu,
            sharding: None,
        })
    }

    /// Feed every run's figures to this live exposition.
    pub fn set_live(&mut self, live: Arc<crate::measure::live::LiveMetrics>) {
        self.live = Some(live);
    }

    /// The model every request names: `--model`, or the first one the
    /// server's `/v1/models` lists.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The clock every run's records are on.
    pub fn clock(&self) -> RunClock {
        self.clock
    }

    /// A plain GET of a path on the target's host (`/metrics`, `/v1/models`,
    /// llama.cpp's `/props`): its status and body.
    pub async fn get(&self, path: &str) -> Result<(u16, bytes::Bytes), ClientError> {
        self.client.get_path(path, "get").await
    }

    /// What every request body sends (after the probe).
    pub fn params(&self) -> &RequestParams {
        &self.params
    }

    /// Run one plan: begin it on the client, start its request source, its
    /// aggregator and the server's scrape, drive the executor to the end,
    /// then gather what was measured into its result. Records (warm-up
    /// included, marked) are appended to `sink` as they finish.
    pub async fn run(
        &self,
        spec: &RunSpec,
        sink: &mut RecordsSink,
        control: &RunControl,
        progress: Arc<Progress>,
    ) -> Result<RunResult, RunError> {
        if control.is_stopping() {
            return Err(RunError::Interrupted);
        }
        if let Some(s) = &self.sharding {
            return self.run_coordinated(s, spec, sink, control, progress).await;
        }
        let started = Started::now(self.clock);
        let nonce = self.begin(spec, control, rand::random()).await?;
        let run_id = format!("{nonce:016x}");
        let source = self.start_source(spec, nonce)?;
        let line_ctx = LineContext {
            run_id: run_id.clone(),
            origin_ns: started.origin_ns,
            sharded: false,
        };
        let (tx, aggregator) = self.start_aggregator(spec, sink, line_ctx, control, &progress)?;
        if let Some(live) = &self.live {
            live.begin_run(&spec.plan.load, progress.clone());
        }
        let connections_before = self.client.connection_stats();
        let scrape = self.start_scrape(spec, &progress);
        let exec = self
            .execute(spec, source, control, tx, progress, None)
            .await;
        let (server_metrics, gpu_metrics) = stop_scrape(scrape).await;
        let (collector, returned_sink) =
            join_aggregator(aggregator, exec.sent_warmup + exec.sent_measured).await?;
        *sink = returned_sink;
        let ran = Ran {
            run_id,
            exec,
            connections: self.client.connection_stats().since(connections_before),
            server_metrics,
            gpu_metrics,
            shards: None,
        };
        self.result(spec, collector, sink, ran, started)
    }

    /// Drive the executor through `spec`'s plan on `source`, records to
    /// `records`; a sharded run's part starts at its `gate`.
    async fn execute(
        &self,
        spec: &RunSpec,
        source: Prefetch,
        control: &RunControl,
        records: mpsc::UnboundedSender<Msg>,
        progress: Arc<Progress>,
        gate: Option<executor::StartGate>,
    ) -> executor::ExecSummary {
        let timer = PreciseTimer::new();
        Executor {
            plan: &spec.plan,
            transport: self.client.clone(),
            clock: self.clock,
            timer: &timer,
            control,
            records,
            progress,
            start_gate: gate,
        }
        .run(source)
        .await
    }

    /// Gather what a run measured into its result: its figures from the
    /// collector, the early verdict, cost, notes, the client's CPU and the
    /// traps it fell into.
    fn result(
        &self,
        spec: &RunSpec,
        mut collector: Collector,
        sink: &RecordsSink,
        ran: Ran,
        started: Started,
    ) -> Result<RunResult, RunError> {
        let Ran {
            run_id,
            mut exec,
            connections,
            server_metrics,
            gpu_metrics,
            shards,
        } = ran;
        if exec.records_lost > 0 {
            return Err(RunError::Internal(format!(
                "{} request records were lost before they were counted",
                exec.records_lost
            )));
        }
        let percentiles = spec.reported_percentiles();
        let metrics = collector.summarize(
            &percentiles,
            exec.ramp_end_ns,
            spec.plan.seed,
            spec.slo.as_ref(),
        );
        let early_stop = collector.early_verdict();
        let output_hashes = collector.take_output_hashes();
        if early_stop.is_some() {
            // Ended because its verdict was settled, not by a signal.
            exec.interrupted = false;
        }
        let sessions_completed = metrics.sessions.as_ref().map(|s| s.sessions_completed);
        let gpu_metrics =
            gpu_metrics.map(|g| g.with_run(metrics.total_output_tokens, metrics.completed));
        let energy_j = gpu_metrics.as_ref().and_then(GpuMetrics::energy_j);
        let cost = (spec.cost).map(|c| Cost::of(c, &metrics, sessions_completed, energy_j));
        let mut notes = self.run_notes(sink, &metrics, &collector, &connections);
        notes.extend(
            shards
                .as_ref()
                .map(crate::plan::shard::merge::notes)
                .unwrap_or_default(),
        );
        let wall = started.wall.elapsed().as_secs_f64();
        let client_cpu_cores = (!self.options.server_in_process && wall > 1.0 && shards.is_none())
            .then(|| {
                process_cpu_s()
                    .zip(started.cpu)
                    .map(|(a, b)| (a - b) / wall)
            })
            .flatten();
        let warnings = self.warnings(spec, &metrics, &percentiles, client_cpu_cores);
        let server_metrics = server_metrics.map(|s| with_client_figures(s, &metrics));
        let config = self.config(spec);
        Ok(RunResult {
            run_id,
            config,
            metrics,
            exec,
            connections,
            early_stop,
            cost,
            notes,
            warnings,
            started_at: started.at,
            clock_origin_monotonic_ns: self
                .clock
                .origin_monotonic_ns()
                .map(|o| o + started.origin_ns),
            output_hashes,
            server_metrics,
            gpu_metrics,
            shards,
        })
    }

    /// Begin a run on the client: its run id and prompt salt (`nonce`,
    /// returned) and, in closed loop, its connections opened before
    /// any request is timed. Ends at once when `control` stops.
    async fn begin(
        &self,
        spec: &RunSpec,
        control: &RunControl,
        nonce: u64,
    ) -> Result<u64, RunError> {
        self.client.begin_run(nonce);
        if let Load::Closed { concurrency } = spec.plan.load {
            tokio::select! {
                biased;
                _ = control.stopped() => return Err(RunError::Interrupted),
                _ = self.client.prewarm(concurrency) => {}
            }
        }
        Ok(nonce)
    }

    /// Start scraping the server's own metrics through the run, where a
    /// scraper was set up.
    fn start_scrape(&self, spec: &RunSpec, progress: &Arc<Progress>) -> Scrape {
        let warmup = !matches!(spec.plan.warmup, executor::Warmup::None);
        let mut stop = Vec::new();
        let mut stopper = || {
            let (tx, rx) = tokio::sync::oneshot::channel();
            stop.push(tx);
            rx
        };
        let server = (self.scraper.as_ref()).map(|s| s.spawn(progress.clone(), warmup, stopper()));
        let gpu = (self.gpu.as_ref()).map(|s| s.spawn(progress.clone(), warmup, stopper()));
        Scrape { stop, server, gpu }
    }

    /// The run's requests, built on their own thread ahead of the sends
    /// (enough for the whole plan, warm-up included), salted with `nonce`.
    fn start_source(&self, spec: &RunSpec, nonce: u64) -> Result<Prefetch, RunError> {
        let warmup = match spec.plan.warmup {
            executor::Warmup::Requests(n) => n,
            _ => 0,
        };
        // A shard builds the whole plan's source (the others' requests are
        // built and dropped), so its warm-up is the whole plan's.
        let shard = spec.plan.shard;
        let source_warmup = shard.and_then(|s| s.warmup_requests).unwrap_or(warmup);
        let source = spec
            .workload
            .source(&self.params, &self.tokenizer, nonce, source_warmup);
        let ahead = planned_requests(&spec.plan).saturating_add(warmup);
        Prefetch::start_shard(source, ahead.min(usize::MAX as u64) as usize, shard)
            .map_err(|e| RunError::Internal(format!("starting the workload thread: {e}")))
    }

    /// Start the run's aggregator thread: its collector (the SLO's
    /// thresholds; an early stop when the run may end on its verdict;
    /// output hashes; the SLO percentiles adjusted for the run's schedule),
    /// the records file (taken from `sink` until the thread is joined) and
    /// what watches it. Returns the channel the executor sends records on.
    fn start_aggregator(
        &self,
        spec: &RunSpec,
        sink: &mut RecordsSink,
        line_ctx: LineContext,
        control: &RunControl,
        progress: &Arc<Progress>,
    ) -> Result<(mpsc::UnboundedSender<Msg>, Aggregator), RunError> {
        let (tx, rx) = mpsc::unbounded_channel();
        let early = spec
            .slo
            .as_ref()
            // An agent's tasks are judged whole: a verdict on the calls
            // so far would cut the tasks under way.
            .filter(|_| spec.early_stop && !spec.workload.source.is_agents())
            .and_then(|s| EarlyStop::new(s.terms.clone(), planned_requests(&spec.plan), 0.05));
        let hook = early.as_ref().map(|_| aggregate::EarlyHook {
            control: control.clone(),
            progress: progress.clone(),
        });
        let collector = collector_for(spec).with_early_stop(early);
        let aggregator = aggregate::spawn(
            rx,
            std::mem::take(sink),
            self.tokenizer.clone(),
            line_ctx,
            collector,
            aggregate::Watchers {
                progress: progress.clone(),
                early: hook,
                live: self.live.clone(),
            },
        )
        .map_err(|e| RunError::Internal(format!("starting the aggregator thread: {e}")))?;
        Ok((tx, aggregator))
    }

    /// What the run says in words: what preparing found, a records file
    /// that could not be written, what the token counts and the server's
    /// connections showed, and which figures were kept as histograms.
    fn run_notes(
        &self,
        sink: &RecordsSink,
        metrics: &RunMetrics,
        collector: &Collector,
        connections: &ConnectionStats,
    ) -> Vec<String> {
        let mut notes = self.notes.clone();
        if let Some(e) = sink.error() {
            notes.push(format!("records file: {e}"));
        }
        notes.extend(token_notes(&metrics.tokens, &self.params));
        notes.extend(connections.note());
        if collector.values_bounded() {
            notes.push(format!(
                "past {} requests, per-request figures were kept as histograms with 0.1% bins (memory stays flat): percentiles and their intervals within 0.1% of exact, means exact",
                crate::measure::metrics::samples::EXACT_LIMIT
            ));
        }
        if collector.itl_bounded() {
            notes.push(format!(
                "ITL and ICL past {} values were kept as histograms with 0.1% bins (memory stays flat): their percentiles are within 0.1% of exact, the mean exact, the intervals from a reservoir of whole requests",
                crate::measure::metrics::pooled::EXACT_LIMIT
            ));
        }
        notes
    }

    /// The traps the run's figures show ([`crate::measure::traps`]), given the
    /// client's CPU use (cores, when it could be measured apart from the
    /// server's).
    fn warnings(
        &self,
        spec: &RunSpec,
        metrics: &RunMetrics,
        percentiles: &[f64],
        client_cpu_cores: Option<f64>,
    ) -> Vec<crate::measure::traps::Warning> {
        crate::measure::traps::check(
            metrics,
            &crate::measure::traps::RunFacts {
                load: spec.plan.load,
                pinned: self.params.min_tokens || self.params.ignore_eos,
                client_cpu_cores,
                cores: client_cores(),
            },
            percentiles,
        )
    }

    /// Requests the server holds right now (its running + waiting gauges),
    /// where it exposes them.
    pub async fn server_queue(&self) -> Option<f64> {
        self.scraper.as_ref()?.queue_now().await
    }

    /// Everything needed to rerun, minus secrets.
    fn config(&self, spec: &RunSpec) -> RunConfig {
        let mut config = RunConfig::new(
            &self.options.client,
            &self.params,
            &spec.plan,
            &spec.workload,
            &self.tokenizer,
            spec.reported_percentiles(),
            spec.slo.clone(),
        );
        config.target = Some(self.options.target.clone());
        config
    }

    /// The result of a run a signal stopped before it sent a request (while
    /// its connections opened): see [`unstarted`].
    pub fn unstarted(&self, spec: &RunSpec) -> RunResult {
        let mut r = unstarted(&self.options, spec);
        r.config = self.config(spec);
        r.config.model = self.model.clone();
        r.notes.splice(0..0, self.notes.iter().cloned());
        r
    }
}

/// The result of a run a signal stopped before it sent any request (during
/// model discovery, the probe, or while connections opened): every count 0
/// and `run.interrupted` set. Nothing was measured, but the results file
/// still holds a valid document that says so, never an empty file.
pub fn unstarted(opts: &TargetOptions, spec: &RunSpec) -> RunResult {
    let params = RequestParams {
        endpoint: opts.client.endpoint,
        model: opts.model.clone().unwrap_or_default(),
        stream: opts.stream,
        min_tokens: opts.pin_output,
        ignore_eos: opts.pin_output,
        temperature: opts.temperature,
        output: opts.output.clone(),
    };
    let percentiles = spec.reported_percentiles();
    let mut config = RunConfig::new(
        &opts.client,
        &params,
        &spec.plan,
        &spec.workload,
        &opts.tokenizer,
        spec.reported_percentiles(),
        spec.slo.clone(),
    );
    config.target = Some(opts.target.clone());
    let metrics = Collector::new(
        spec.slo
            .as_ref()
            .map(Slo::request_thresholds)
            .unwrap_or_default(),
        spec.plan.load.is_open(),
    )
    .summarize(&percentiles, None, spec.plan.seed, spec.slo.as_ref());
    RunResult {
        run_id: format!("{:016x}", rand::random::<u64>()),
        config,
        metrics,
        exec: executor::ExecSummary {
            interrupted: true,
            ..Default::default()
        },
        connections: Default::default(),
        early_stop: None,
        cost: None,
        notes: vec!["interrupted before any request was sent: nothing was measured".into()],
        warnings: Vec::new(),
        started_at: now_rfc3339(),
        clock_origin_monotonic_ns: None,
        output_hashes: Vec::new(),
        server_metrics: None,
        gpu_metrics: None,
        shards: None,
    }
}

/// The collector of a run's measured phase: the SLO's thresholds, judged
/// from the schedule in open loop; output hashes when kept; the SLO
/// percentiles adjusted for the run's schedule when asked.
fn collector_for(spec: &RunSpec) -> Collector {
    Collector::new(
        spec.slo
            .as_ref()
            .map(Slo::request_thresholds)
            .unwrap_or_default(),
        spec.plan.load.is_open(),
    )
    .with_arrivals(&spec.plan.load)
    .with_output_hashes(spec.keep_outputs)
    .with_schedule_control(
        spec.schedule_control,
        spec.plan.load,
        spec.slo.as_ref().map_or(&[][..], |s| &s.terms[..]),
    )
}

/// When and from where a run started: its wall-clock time, its origin on
/// the run clock, the process's CPU so far.
struct Started {
    at: String,
    origin_ns: u64,
    cpu: Option<f64>,
    wall: std::time::Instant,
}

impl Started {
    fn now(clock: RunClock) -> Started {
        Started {
            at: now_rfc3339(),
            origin_ns: clock.now_ns(),
            cpu: process_cpu_s(),
            wall: std::time::Instant::now(),
        }
    }
}

/// What running a plan left, beside its collector.
struct Ran {
    run_id: String,
    exec: executor::ExecSummary,
    connections: ConnectionStats,
    server_metrics: Option<ServerMetrics>,
    gpu_metrics: Option<GpuMetrics>,
    /// A sharded run's shards.
    shards: Option<crate::plan::shard::merge::ShardsReport>,
}

/// How many measured requests a plan will send, for planning early looks.
fn planned_requests(plan: &RunPlan) -> u64 {
    let by_time = match (plan.duration, plan.load) {
        (Some(d), Load::Open { rate, .. }) if rate.is_finite() => {
            Some((rate * d.as_secs_f64()).ceil() as u64)
        }
        (Some(_), _) => None,
        (None, _) => None,
    };
    match (plan.num_prompts, by_time) {
        (Some(n), Some(t)) => n.min(t),
        (Some(n), None) => n,
        (None, Some(t)) => t,
        (None, None) => 10_000,
    }
}

/// A run's scrapes of the server's metrics and the GPUs': what stops
/// them, and their tasks.
struct Scrape {
    stop: Vec<tokio::sync::oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<ServerMetrics>>,
    gpu: Option<tokio::task::JoinHandle<GpuMetrics>>,
}

/// Stop the run's scrapes and take what they saw.
async fn stop_scrape(scrape: Scrape) -> (Option<ServerMetrics>, Option<GpuMetrics>) {
    for stop in scrape.stop {
        let _ = stop.send(());
    }
    let server = match scrape.server {
        Some(t) => t.await.ok(),
        None => None,
    };
    let gpu = match scrape.gpu {
        Some(t) => t.await.ok(),
        None => None,
    };
    (server, gpu)
}

/// The GPUs' telemetry: the `--gpu-metrics` exporters (each must answer
/// with DCGM's series), else a simulated target's own, when it serves one.
async fn gpu_scraper(
    opts: &TargetOptions,
    clock: RunClock,
) -> Result<Option<GpuScraper>, RunError> {
    let interval = match &opts.server_metrics {
        ServerMetricsChoice::Auto { interval } => *interval,
        ServerMetricsChoice::Url(o) => o.interval,
        ServerMetricsChoice::Off => std::time::Duration::from_secs(1),
    };
    if !opts.gpu_metrics.is_empty() || opts.nvml {
        let (urls, nvml) = (&opts.gpu_metrics, opts.nvml);
        return GpuScraper::connect(urls, nvml, interval, &opts.client, clock)
            .await
            .map(Some)
            .map_err(|e| RunError::GpuMetrics(e.to_string()));
    }
    if opts.target == crate::output::config::Target::Server {
        return Ok(None);
    }
    let Some(url) = crate::measure::server_metrics::default_url(&opts.client.url) else {
        return Ok(None);
    };
    let url = url.replace("/metrics", crate::measure::gpu::SIM_PATH);
    Ok(
        GpuScraper::connect(&[url], false, interval, &opts.client, clock)
            .await
            .ok(),
    )
}

/// The aggregator thread of a run; it returns its collector and the records sink.
type Aggregator = std::thread::JoinHandle<(Collector, RecordsSink)>;

/// Wait for the aggregator to count the last record and hand back its
/// collector and the records sink. A panicked aggregator is goodput's own
/// fault, said with the `sent` records it could not count.
async fn join_aggregator(
    aggregator: Aggregator,
    sent: u64,
) -> Result<(Collector, RecordsSink), RunError> {
    match tokio::task::spawn_blocking(move || aggregator.join()).await {
        Ok(Ok(x)) => Ok(x),
        Ok(Err(panic)) => {
            let why = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(RunError::Internal(format!(
                "the aggregator thread panicked ({why}); {sent} records could not be counted"
            )))
        }
        Err(e) => Err(RunError::Internal(format!("joining the aggregator: {e}"))),
    }
}

/// The server's own metrics with the client's figures beside them (its
/// mean TTFT and completed requests, its output tokens), for comparison.
fn with_client_figures(mut s: ServerMetrics, metrics: &RunMetrics) -> ServerMetrics {
    s.set_client_ttft(
        metrics
            .get(crate::measure::metrics::Metric::Ttft)
            .map(|d| d.mean.value),
        metrics.completed,
    );
    s.set_client_output_tokens(metrics.total_output_tokens);
    s
}

/// The cores the client's requests can run on: the machine's, or fewer when
/// the runtime has fewer threads (one by default: `--client-threads`).
fn client_cores() -> usize {
    let machine = std::thread::available_parallelism().map_or(1, |n| n.get());
    tokio::runtime::Handle::try_current()
        .map_or(machine, |h| h.metrics().num_workers().min(machine))
        .max(1)
}
